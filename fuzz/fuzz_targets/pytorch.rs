//! Fuzz target: PyTorch checkpoints' pickles. The input is `data.pkl`; the target puts it
//! in a stored zip archive beside four 64-byte storages (`ztensor_fuzz::checkpoint`), so
//! every input reaches the pickle reader (opcodes, memo, marks, the allowed globals,
//! persistent ids), then the walk of the state dict and the views into the storages.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ztensor_fuzz::open_and_walk(&ztensor_fuzz::checkpoint(data))
});
