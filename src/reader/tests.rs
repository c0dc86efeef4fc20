//! Unit tests of `reader` (kept beside it so the module itself stays readable).

use super::*;
use crate::formats::ztensor::{ALIGNMENT, MAGIC_V1, manifest};
use crate::model::{Blob, CText, Encoding};
use crate::writer::{WriteOptions, Writer};

#[test]
fn range_reads_are_cheap_for_raw_and_our_frames_only() {
    let data: Vec<u8> = (0..crate::codec::ZSTD_FRAME_SIZE + 100)
        .map(|i| (i % 251) as u8)
        .collect();
    let mut w = Writer::new(Vec::new()).unwrap();
    let shape = [data.len() as u64];
    w.add("raw", DType::U8, &shape, &data, &WriteOptions::default())
        .unwrap();
    w.add("ours", DType::U8, &shape, &data, &WriteOptions::zstd(1))
        .unwrap();
    let bytes = w.finish().unwrap();
    let r = Reader::from_slice(&bytes).unwrap();
    assert!(r.range_reads_are_cheap(0, 0).unwrap());
    assert!(r.range_reads_are_cheap(1, 0).unwrap());
    assert!(r.range_reads_are_cheap(2, 0).is_err());
    assert!(r.range_reads_are_cheap(0, 1).is_err());

    // One frame larger than ZSTD_FRAME_SIZE (as other writers make): not cheap.
    let single = crate::codec::zstd_compress(&data, 1).unwrap();
    let len = data.len() as u64;
    let object = Object {
        name: CText::new("single").unwrap(),
        format: CText::new("dense").unwrap(),
        shape: vec![len].into(),
        attributes: None,
        components: crate::model::Components::One(Component {
            role: CText::new("data").unwrap(),
            dtype: DType::U8,
            logical_type: None,
            blob: Blob {
                file: 0,
                offset: ALIGNMENT,
                length: single.len() as u64,
                encoding: Encoding::Zstd,
                decoded_length: len,
            },
            decoded_length: len,
            digest: None,
            steps: Default::default(),
        }),
    };
    let mut file = MAGIC_V1.to_vec();
    file.resize(ALIGNMENT as usize, 0);
    file.extend_from_slice(&single);
    let manifest = manifest::encode(None, &[object]);
    file.extend_from_slice(&manifest);
    file.extend_from_slice(&(manifest.len() as u64).to_le_bytes());
    file.extend_from_slice(MAGIC_V1);
    let r = Reader::from_slice(&file).unwrap();
    assert!(!r.range_reads_are_cheap(0, 0).unwrap());
    let mut piece = [0u8; 3];
    r.read_range(0, 0, 7, &mut piece).unwrap();
    assert_eq!(piece, data[7..10]);

    // Legacy big-endian data is swapped on read: every range read decodes it whole.
    let legacy = std::fs::read(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/vectors/hostile/v01_ok_zstd_big_endian.zt"),
    )
    .unwrap();
    let r = Reader::from_slice(&legacy).unwrap();
    assert!(!r.range_reads_are_cheap(0, 0).unwrap());
}
