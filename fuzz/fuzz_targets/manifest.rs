//! Fuzz target: the zTensor v1 manifest. The input is a 4-byte little-endian length n, n
//! bytes of data, then the CBOR manifest. The target frames them as a v1 file: "ZTEN1000"
//! and zeros to offset 64, the data, the manifest, its 8-byte size and "ZTEN1000", so
//! every input reaches the manifest parser (objects, components, shapes, encodings,
//! digests, attributes) with consistent framing, and blobs at offset 64 can be real.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: &[u8]| {
    let Some((len, rest)) = input.split_first_chunk::<4>() else {
        return;
    };
    let n = (u32::from_le_bytes(*len) as usize).min(rest.len());
    let (data, manifest) = rest.split_at(n);
    let mut file = b"ZTEN1000".to_vec();
    file.resize(64, 0);
    file.extend_from_slice(data);
    file.extend_from_slice(manifest);
    file.extend_from_slice(&(manifest.len() as u64).to_le_bytes());
    file.extend_from_slice(b"ZTEN1000");
    ztensor_fuzz::open_and_walk(&file)
});
