//! Fuzz target: safetensors. The input is the JSON header, a 0 byte, then the data
//! section (a JSON text holds no raw 0 byte); the target writes the 8-byte header length
//! in front, so every input reaches the JSON header parser with a consistent length. An
//! input without a 0 byte is all header.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let split = data.iter().position(|&b| b == 0).unwrap_or(data.len());
    let (header, rest) = data.split_at(split);
    let body = rest.get(1..).unwrap_or(&[]);
    let mut file = (header.len() as u64).to_le_bytes().to_vec();
    file.extend_from_slice(header);
    file.extend_from_slice(body);
    ztensor_fuzz::open_and_walk(&file)
});
