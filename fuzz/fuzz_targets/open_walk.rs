//! Fuzz target: open arbitrary bytes as a tensor file of any format (zTensor, v0.1,
//! safetensors, GGUF, Tensogram) and, when that works, walk it (see `ztensor_fuzz::walk`:
//! range reads, read, view, verify per component; validate and attribute JSON per
//! object; verify; a converting read).
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| ztensor_fuzz::open_and_walk(data));
