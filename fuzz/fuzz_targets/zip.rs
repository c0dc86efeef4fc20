//! Fuzz target: zip archives as they are (`.npz` files, stored and deflated, and PyTorch
//! checkpoints): the end record, zip64, the central directory, local headers, inflating
//! and CRC-32 checks, then the npz members or the checkpoint in them.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ztensor_fuzz::open_and_walk(data));
