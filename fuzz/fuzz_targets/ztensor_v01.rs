//! Fuzz target: legacy zTensor v0.1. The input is a v0.1 file without its "ZTEN0001"
//! magic (the target puts it back): blobs, the CBOR array of tensor maps, the 8-byte
//! manifest size at the end; then the walk (big-endian swaps, sparse slices and gathers).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ztensor_fuzz::open_and_walk(&ztensor_fuzz::after_magic(b"ZTEN0001", data))
});
