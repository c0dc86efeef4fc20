//! Fuzz target: the zTensor v2 container and manifest. The input is a 4-byte
//! little-endian length n, n bytes of data, then the manifest. The target frames them as
//! a v2 file: the magic and zeros to offset 4096, the data, zeros to the next multiple of
//! 4096, the manifest, and a footer that points at it with its right XXH3-64 and version
//! 2, so every input reaches the deterministic-CBOR check and the manifest's rules
//! (schema, names, shapes, blobs against the file, overlap, layout profiles, shard
//! tables) with consistent framing, and blobs at offset 4096 can be real. The first byte
//! of the length also picks a footer fault half the time (a bad magic, version, offset,
//! length or hash, a data shard's footer), so the footer checks are reached too. The
//! open file is then walked (`open_and_walk`), and its content digest computed.
#![no_main]

use libfuzzer_sys::fuzz_target;

const MAGIC: [u8; 8] = [0x89, b'Z', b'T', b'2', 0x0d, 0x0a, 0x1a, 0x0a];

fuzz_target!(|input: &[u8]| {
    let Some((len, rest)) = input.split_first_chunk::<4>() else {
        return;
    };
    let fault = len[3];
    let n = (u32::from_le_bytes([len[0], len[1], len[2], 0]) as usize).min(rest.len());
    let (data, manifest) = rest.split_at(n);
    let mut file = MAGIC.to_vec();
    file.resize(4096, 0);
    file.extend_from_slice(data);
    file.resize(file.len().div_ceil(4096) * 4096, 0);
    let at = file.len() as u64;
    file.extend_from_slice(manifest);
    let mut footer = [0u8; 40];
    footer[0..8].copy_from_slice(&at.to_le_bytes());
    footer[8..16].copy_from_slice(&(manifest.len() as u64).to_le_bytes());
    footer[16..24].copy_from_slice(&xxhash_rust::xxh3::xxh3_64(manifest).to_le_bytes());
    footer[24..28].copy_from_slice(&2u32.to_le_bytes());
    footer[32..40].copy_from_slice(&MAGIC);
    match fault {
        0x80 => footer[39] ^= 1,
        0x81 => footer[24] = 3,
        0x82 => footer[0] ^= 0x10,
        0x83 => footer[8] ^= 1,
        0x84 => footer[16] ^= 1,
        0x85 => footer[..24].fill(0),
        0x86 => footer[28] = 7,
        _ => {}
    }
    file.extend_from_slice(&footer);
    ztensor_fuzz::open_and_walk(&file);
    if let Ok(r) = ztensor::Reader::from_slice(&file) {
        for algo in [ztensor::DigestAlgorithm::Xxh3, ztensor::DigestAlgorithm::Sha256] {
            ztensor_fuzz::ok_or_expected(&r.content_digest(algo), "content_digest");
        }
    }
});
