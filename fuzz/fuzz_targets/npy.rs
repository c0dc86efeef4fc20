//! Fuzz target: NumPy `.npy` headers. The input is the header's dict text, a 0 byte, then
//! the array's bytes (a header numpy writes holds no 0 byte); the target writes the magic,
//! version 1.0 and the header length, so every input reaches the literal parser, the
//! descr table, byte swaps and the Fortran-order gather.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (header, rest) = data.split_at(split);
    ztensor_fuzz::open_and_walk(&ztensor_fuzz::npy(header, rest.get(1..).unwrap_or(&[])))
});
