//! Fuzz target: Tensogram. The input is a `.tgm` file without the first message's
//! "TENSOGRM" magic (the target puts it back): preamble, frames, CBOR metadata and
//! descriptors, index and hash frames, postamble, further messages; then the walk, which
//! runs the decode pipelines (zstd, lz4, shuffle, simple packing, masks).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ztensor_fuzz::open_and_walk(&ztensor_fuzz::after_magic(b"TENSOGRM", data))
});
