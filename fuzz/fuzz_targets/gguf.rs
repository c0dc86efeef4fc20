//! Fuzz target: GGUF. The input is a GGUF file without its "GGUF" magic (the target puts
//! it back), so every input reaches the GGUF parser: version, counts, key/values (nested
//! arrays, strings), tensor infos, alignment, then the walk of what opens.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    ztensor_fuzz::open_and_walk(&ztensor_fuzz::after_magic(b"GGUF", data))
});
