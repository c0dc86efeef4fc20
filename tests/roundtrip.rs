//! Round trips through the Rust API: everything the writer can write, the reader reads back
//! byte for byte, from memory, from a mapped file and through pread.

mod common;

use common::*;
use ztensor::cbor::Value;
use ztensor::dtype::ALL_DTYPES;
use ztensor::{
    DType, DigestAlgorithm, Encoding, ErrorKind, OpenOptions, Reader, WriteOptions, Writer,
};

fn all_options() -> Vec<WriteOptions> {
    let mut v = Vec::new();
    for encoding in [Encoding::Raw, Encoding::Zstd] {
        for digest in [
            DigestAlgorithm::None,
            DigestAlgorithm::Sha256,
            DigestAlgorithm::Crc32c,
        ] {
            v.push(WriteOptions {
                encoding,
                level: 0,
                digest,
            });
        }
    }
    v
}

/// Opens the same bytes three ways (slice, mmap, pread) and runs `check` on each.
fn check_everywhere(bytes: &[u8], test: &str, check: impl Fn(&Reader<'_>)) {
    check(&Reader::from_slice(bytes).unwrap());
    let path = temp_dir(test).join("f.zt");
    std::fs::write(&path, bytes).unwrap();
    check(&Reader::open(&path).unwrap());
    let opts = OpenOptions {
        use_mmap: false,
        ..Default::default()
    };
    check(&Reader::open_with(&path, &opts).unwrap());
}

#[test]
fn every_dtype_encoding_and_digest_round_trips() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    let mut expected = Vec::new();
    for (di, &dtype) in ALL_DTYPES.iter().enumerate() {
        for (oi, opts) in all_options().iter().enumerate() {
            let name = format!("{}_{oi}", dtype.name());
            let data = data_for(dtype, 3 * 5, (di * 10 + oi) as u64);
            w.add(&name, dtype, &[3, 5], &data, opts).unwrap();
            expected.push((name, dtype, *opts, data));
        }
    }
    let bytes = w.finish().unwrap();
    check_everywhere(&bytes, "every_dtype", |r| {
        assert_eq!(r.version(), "1.2.0");
        assert_eq!(r.objects().len(), expected.len());
        for (i, (name, dtype, opts, data)) in expected.iter().enumerate() {
            let obj = &r.objects()[i];
            assert_eq!(obj.name(), name);
            assert_eq!(r.find(name), Some(i));
            assert_eq!(obj.format(), "dense");
            assert_eq!(obj.shape(), &[3, 5]);
            let c = &obj.components()[0];
            assert_eq!(
                (c.role(), c.dtype(), c.encoding()),
                ("data", *dtype, opts.encoding)
            );
            assert_eq!(c.decoded_length(), data.len() as u64);
            assert_eq!(c.offset() % 64, 0);
            match opts.digest {
                DigestAlgorithm::None => assert_eq!(c.digest(), None),
                DigestAlgorithm::Sha256 => assert!(c.digest().unwrap().starts_with("sha256:")),
                DigestAlgorithm::Crc32c => assert!(c.digest().unwrap().starts_with("crc32c:0x")),
                DigestAlgorithm::Xxh3 => unreachable!("a v2 digest"),
            }
            assert_eq!(&r.read_to_vec(i, 0).unwrap(), data);
            let view = r.view(i, 0).unwrap();
            assert_eq!(view.data, &data[..]);
            assert_eq!(view.dtype, *dtype);
            assert_eq!(view.data.as_ptr() as usize % 64, 0);
            if opts.digest != DigestAlgorithm::None {
                r.verify_component(i, 0).unwrap();
            } else {
                assert_eq!(
                    r.verify_component(i, 0).unwrap_err().kind(),
                    ErrorKind::NotFound
                );
            }
        }
        r.verify().unwrap();
    });
}

#[test]
fn views_are_zero_copy_only_for_mapped_raw_data() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    w.add(
        "raw",
        DType::U8,
        &[100],
        &bytes(1, 100),
        &WriteOptions::default(),
    )
    .unwrap();
    w.add(
        "z",
        DType::U8,
        &[100],
        &bytes(1, 100),
        &WriteOptions::zstd(3),
    )
    .unwrap();
    let file = w.finish().unwrap();
    let path = temp_dir("zero_copy").join("f.zt");
    std::fs::write(&path, &file).unwrap();
    let mapped = Reader::open(&path).unwrap();
    assert!(mapped.view(0, 0).unwrap().zero_copy);
    assert!(!mapped.view(1, 0).unwrap().zero_copy);
    // A decoded view is cached: the same pointer on every call.
    assert_eq!(
        mapped.view(1, 0).unwrap().data.as_ptr(),
        mapped.view(1, 0).unwrap().data.as_ptr()
    );
    let pread = Reader::open_with(
        &path,
        &OpenOptions {
            use_mmap: false,
            ..Default::default()
        },
    )
    .unwrap();
    assert!(!pread.view(0, 0).unwrap().zero_copy);
    assert_eq!(pread.view(0, 0).unwrap().data, &bytes(1, 100)[..]);

    // Caller memory that is not 64-byte aligned: views are aligned copies.
    let mut shifted = vec![0u8; file.len() + 1];
    shifted[1..].copy_from_slice(&file);
    let r = Reader::from_slice(&shifted[1..]).unwrap();
    let v = r.view(0, 0).unwrap();
    assert!(!v.zero_copy);
    assert_eq!(v.data.as_ptr() as usize % 64, 0);
    assert_eq!(v.data, &bytes(1, 100)[..]);
}

#[test]
fn logical_types_round_trip_with_their_storage() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    for (i, t) in ["f8_e4m3fn", "f8_e5m2", "f8_e4m3fnuz", "f8_e5m2fnuz"]
        .iter()
        .enumerate()
    {
        w.add_typed(
            t,
            DType::U8,
            Some(t),
            &[2, 4],
            &bytes(i as u64, 8),
            &WriteOptions::default(),
        )
        .unwrap();
    }
    let c64 = f32s(&[1.0, -1.0, 2.5, 0.0, 3.0, 4.0]);
    w.add_typed(
        "c64",
        DType::F32,
        Some("complex64"),
        &[3],
        &c64,
        &WriteOptions::zstd(1),
    )
    .unwrap();
    let c128: Vec<u8> = [1.0f64, 2.0].iter().flat_map(|v| v.to_le_bytes()).collect();
    w.add_typed(
        "c128",
        DType::F64,
        Some("complex128"),
        &[1],
        &c128,
        &WriteOptions::default(),
    )
    .unwrap();
    w.add_typed(
        "custom",
        DType::U8,
        Some("mx_fp4_e2m1"),
        &[7],
        &bytes(9, 4),
        &WriteOptions::default(),
    )
    .unwrap();
    // complex64 needs 2 * numel * 4 bytes: 12 bytes for 3 elements is refused.
    let e = w
        .add_typed(
            "bad",
            DType::F32,
            Some("complex64"),
            &[3],
            &c64[..12],
            &WriteOptions::default(),
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let e = w
        .add_typed(
            "bad",
            DType::F32,
            Some("f8_e4m3fn"),
            &[3],
            &c64[..12],
            &WriteOptions::default(),
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let bytes_out = w.finish().unwrap();
    let r = Reader::from_slice(&bytes_out).unwrap();
    for t in ["f8_e4m3fn", "f8_e5m2", "f8_e4m3fnuz", "f8_e5m2fnuz"] {
        let c = &r.objects()[r.find(t).unwrap()].components()[0];
        assert_eq!((c.dtype(), c.logical_type()), (DType::U8, Some(t)));
    }
    let o = r.find("c64").unwrap();
    assert_eq!(
        r.objects()[o].components()[0].logical_type(),
        Some("complex64")
    );
    assert_eq!(read(&r, "c64", "data"), c64);
    assert_eq!(read(&r, "c128", "data"), c128);
    assert_eq!(read(&r, "custom", "data"), bytes(9, 4));
    assert_eq!(r.find("bad"), None);
}

#[test]
fn composite_formats_round_trip() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    // 3x4 CSR with 4 values.
    let values = f32s(&[1.0, 2.0, 3.0, 4.0]);
    w.begin_object("csr", "sparse_csr", &[3, 4]).unwrap();
    w.add_component(
        "values",
        DType::F32,
        None,
        &values,
        &WriteOptions::default(),
    )
    .unwrap();
    w.add_component(
        "indices",
        DType::U64,
        None,
        &u64s(&[0, 3, 1, 2]),
        &WriteOptions::zstd(5),
    )
    .unwrap();
    w.add_component(
        "indptr",
        DType::U64,
        None,
        &u64s(&[0, 2, 2, 4]),
        &WriteOptions::default().with_digest(DigestAlgorithm::Crc32c),
    )
    .unwrap();
    w.end_object().unwrap();
    // 2x3x4 COO with 2 values, coords in SoA order.
    w.begin_object("coo", "sparse_coo", &[2, 3, 4]).unwrap();
    w.add_component(
        "values",
        DType::I16,
        None,
        &[7, 0, 9, 0],
        &WriteOptions::default(),
    )
    .unwrap();
    w.add_component(
        "coords",
        DType::U64,
        None,
        &u64s(&[0, 1, 2, 0, 3, 1]),
        &WriteOptions::default(),
    )
    .unwrap();
    w.end_object().unwrap();
    // GPTQ-like quantized group.
    w.begin_object("q", "quantized_group", &[8, 16]).unwrap();
    w.add_component(
        "packed_weight",
        DType::I32,
        None,
        &bytes(3, 64),
        &WriteOptions::default(),
    )
    .unwrap();
    w.add_component(
        "scales",
        DType::F16,
        None,
        &bytes(4, 16),
        &WriteOptions::zstd(0),
    )
    .unwrap();
    w.add_component(
        "zeros",
        DType::F16,
        None,
        &bytes(5, 16),
        &WriteOptions::default(),
    )
    .unwrap();
    w.end_object().unwrap();
    let attrs = Value::Map(vec![
        (Value::Text("bits".into()), Value::Unsigned(4)),
        (Value::Text("group_size".into()), Value::Unsigned(128)),
        (
            Value::Text("packing".into()),
            Value::Text("8_per_i32".into()),
        ),
    ]);
    w.set_object_attributes("q", attrs.clone()).unwrap();
    // A format we don't know, with any roles.
    w.begin_object("odd", "my_layout", &[5]).unwrap();
    w.add_component(
        "alpha",
        DType::U8,
        None,
        &[1, 2, 3],
        &WriteOptions::default(),
    )
    .unwrap();
    w.add_component("empty", DType::F64, None, &[], &WriteOptions::zstd(0))
        .unwrap();
    w.end_object().unwrap();
    let out = w.finish().unwrap();
    check_everywhere(&out, "composite", |r| {
        let csr = &r.objects()[r.find("csr").unwrap()];
        assert_eq!(csr.format(), "sparse_csr");
        assert_eq!(
            csr.components()
                .iter()
                .map(|c| c.role())
                .collect::<Vec<_>>(),
            ["values", "indices", "indptr"]
        );
        assert_eq!(read(r, "csr", "indices"), u64s(&[0, 3, 1, 2]));
        assert_eq!(read(r, "csr", "indptr"), u64s(&[0, 2, 2, 4]));
        assert_eq!(read(r, "coo", "coords"), u64s(&[0, 1, 2, 0, 3, 1]));
        assert_eq!(read(r, "coo", "values"), [7, 0, 9, 0]);
        assert_eq!(read(r, "q", "scales"), bytes(4, 16));
        assert_eq!(
            r.objects()[r.find("q").unwrap()].attributes(),
            Some(attrs.clone())
        );
        assert_eq!(read(r, "odd", "alpha"), [1, 2, 3]);
        assert_eq!(read(r, "odd", "empty"), Vec::<u8>::new());
        for i in 0..r.objects().len() {
            r.validate_values(i).unwrap();
        }
        r.verify().unwrap();
    });
}

#[test]
fn writer_refuses_inconsistent_objects() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    let kind = |r: ztensor::Result<()>| r.unwrap_err().kind();
    assert_eq!(
        kind(w.add("a", DType::F32, &[2, 2], &[0; 15], &WriteOptions::default())),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        kind(w.add("a", DType::F32, &[2, 2], &[0; 17], &WriteOptions::default())),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        kind(w.add("", DType::U8, &[1], &[0], &WriteOptions::default())),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        kind(w.add("n\0ul", DType::U8, &[1], &[0], &WriteOptions::default())),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        kind(w.add("b", DType::Bool, &[2], &[1, 2], &WriteOptions::default())),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        kind(w.add(
            "big",
            DType::U8,
            &[u64::MAX, 2],
            &[],
            &WriteOptions::default()
        )),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        kind(w.add("z", DType::U8, &[1], &[0], &WriteOptions::zstd(99))),
        ErrorKind::InvalidArgument
    );
    w.add("a", DType::U8, &[1], &[0], &WriteOptions::default())
        .unwrap();
    assert_eq!(
        kind(w.add("a", DType::U8, &[1], &[0], &WriteOptions::default())),
        ErrorKind::InvalidArgument
    );
    // CSR whose indptr has the wrong length, and one with u32 indices.
    w.begin_object("csr", "sparse_csr", &[2, 2]).unwrap();
    w.add_component(
        "values",
        DType::F32,
        None,
        &f32s(&[1.0]),
        &WriteOptions::default(),
    )
    .unwrap();
    w.add_component(
        "indices",
        DType::U64,
        None,
        &u64s(&[1]),
        &WriteOptions::default(),
    )
    .unwrap();
    w.add_component(
        "indptr",
        DType::U64,
        None,
        &u64s(&[0, 1]),
        &WriteOptions::default(),
    )
    .unwrap();
    assert_eq!(kind(w.end_object()), ErrorKind::InvalidArgument);
    w.begin_object("csr", "sparse_csr", &[2, 2]).unwrap();
    w.add_component(
        "values",
        DType::F32,
        None,
        &f32s(&[1.0]),
        &WriteOptions::default(),
    )
    .unwrap();
    w.add_component(
        "indices",
        DType::U32,
        None,
        &[1, 0, 0, 0],
        &WriteOptions::default(),
    )
    .unwrap();
    w.add_component(
        "indptr",
        DType::U64,
        None,
        &u64s(&[0, 1, 1]),
        &WriteOptions::default(),
    )
    .unwrap();
    assert_eq!(kind(w.end_object()), ErrorKind::InvalidArgument);
    // COO coords must be ndim * nnz.
    w.begin_object("coo", "sparse_coo", &[4, 4]).unwrap();
    w.add_component(
        "values",
        DType::F32,
        None,
        &f32s(&[1.0, 2.0]),
        &WriteOptions::default(),
    )
    .unwrap();
    w.add_component(
        "coords",
        DType::U64,
        None,
        &u64s(&[0, 1, 2]),
        &WriteOptions::default(),
    )
    .unwrap();
    assert_eq!(kind(w.end_object()), ErrorKind::InvalidArgument);
    // State errors.
    assert_eq!(kind(w.end_object()), ErrorKind::State);
    assert_eq!(
        kind(w.add_component("x", DType::U8, None, &[], &WriteOptions::default())),
        ErrorKind::State
    );
    assert_eq!(kind(w.write(&[1])), ErrorKind::State);
    assert_eq!(
        kind(w.set_object_attributes("nope", Value::Map(vec![]))),
        ErrorKind::NotFound
    );
    assert_eq!(
        kind(w.set_file_attributes(Value::Unsigned(1))),
        ErrorKind::InvalidArgument
    );
    w.begin_object("d", "dense", &[2]).unwrap();
    assert_eq!(kind(w.begin_object("e", "dense", &[2])), ErrorKind::State);
    w.add_component("data", DType::U8, None, &[1, 2], &WriteOptions::default())
        .unwrap();
    assert_eq!(
        kind(w.add_component("data", DType::U8, None, &[1, 2], &WriteOptions::default())),
        ErrorKind::InvalidArgument
    );
    w.end_object().unwrap();
    let out = w.finish().unwrap();
    let r = Reader::from_slice(&out).unwrap();
    let names: Vec<_> = r.objects().iter().map(|o| o.name()).collect();
    assert_eq!(names, ["a", "d"]);
}

#[test]
fn scalars_zero_size_rank_8_and_empty_files() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    w.add(
        "scalar",
        DType::F64,
        &[],
        &2.5f64.to_le_bytes(),
        &WriteOptions::default(),
    )
    .unwrap();
    w.add("zero", DType::F32, &[0, 7], &[], &WriteOptions::default())
        .unwrap();
    w.add(
        "zero_z",
        DType::F32,
        &[3, 0],
        &[],
        &WriteOptions::zstd(0).with_digest(DigestAlgorithm::Sha256),
    )
    .unwrap();
    let shape8 = [2u64, 1, 2, 1, 2, 1, 2, 3];
    w.add(
        "rank8",
        DType::I8,
        &shape8,
        &bytes(8, 48),
        &WriteOptions::default(),
    )
    .unwrap();
    w.add("after", DType::U8, &[1], &[42], &WriteOptions::default())
        .unwrap();
    let out = w.finish().unwrap();
    check_everywhere(&out, "scalars", |r| {
        let s = &r.objects()[0];
        assert_eq!(s.shape(), &[] as &[u64]);
        assert_eq!(read(r, "scalar", "data"), 2.5f64.to_le_bytes());
        assert_eq!(read(r, "zero", "data"), Vec::<u8>::new());
        assert!(r.view(1, 0).unwrap().data.is_empty());
        assert_eq!(read(r, "zero_z", "data"), Vec::<u8>::new());
        r.verify_component(2, 0).unwrap();
        assert_eq!(r.objects()[3].shape(), &shape8);
        assert_eq!(read(r, "rank8", "data"), bytes(8, 48));
        assert_eq!(read(r, "after", "data"), [42]);
    });

    // Empty file: header, manifest, size, footer.
    let empty = Writer::new_with(Vec::new(), &common::v12())
        .unwrap()
        .finish()
        .unwrap();
    assert_eq!(&empty[..8], b"ZTEN1000");
    assert_eq!(&empty[empty.len() - 8..], b"ZTEN1000");
    let msize = u64::from_le_bytes(empty[empty.len() - 16..empty.len() - 8].try_into().unwrap());
    assert_eq!(empty.len() as u64, 8 + msize + 16);
    let r = Reader::from_slice(&empty).unwrap();
    assert_eq!(r.objects().len(), 0);
    assert_eq!(r.attributes(), None);
    r.verify().unwrap();
}

#[test]
fn layout_matches_the_reference_writer() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    w.add("a", DType::U8, &[3], &[1, 2, 3], &WriteOptions::default())
        .unwrap();
    w.add("e", DType::U8, &[0], &[], &WriteOptions::default())
        .unwrap();
    w.add("b", DType::U8, &[2], &[4, 5], &WriteOptions::default())
        .unwrap();
    let out = w.finish().unwrap();
    // First blob at 64, zero padding before it and between blobs, the empty component at
    // the next aligned offset which the following blob shares.
    assert_eq!(&out[8..64], &[0u8; 56][..]);
    assert_eq!(&out[64..67], &[1, 2, 3]);
    assert_eq!(&out[67..128], &[0u8; 61][..]);
    assert_eq!(&out[128..130], &[4, 5]);
    let r = Reader::from_slice(&out).unwrap();
    let offsets: Vec<u64> = r
        .objects()
        .iter()
        .map(|o| o.components()[0].offset())
        .collect();
    assert_eq!(offsets, [64, 128, 128]);
    // The manifest starts right after the last blob.
    let msize = u64::from_le_bytes(out[out.len() - 16..out.len() - 8].try_into().unwrap()) as usize;
    assert_eq!(out.len() - 16 - msize, 130);
    // Keys in the reference order, defaults omitted.
    let m = ztensor::cbor::decode(&out[130..130 + msize], 64).unwrap();
    let keys = |v: &Value| {
        v.as_map()
            .unwrap()
            .iter()
            .map(|(k, _)| k.as_text().unwrap().to_owned())
            .collect::<Vec<_>>()
    };
    assert_eq!(keys(&m), ["version", "objects"]);
    let a = m.get("objects").unwrap().get("a").unwrap();
    assert_eq!(keys(a), ["shape", "format", "components"]);
    assert_eq!(
        keys(a.get("components").unwrap().get("data").unwrap()),
        ["dtype", "offset", "length"]
    );
}

#[test]
fn zstd_manifest_entries_carry_uncompressed_length_and_digest() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    let data = vec![7u8; 4096];
    w.add(
        "z",
        DType::U8,
        &[4096],
        &data,
        &WriteOptions::zstd(3).with_digest(DigestAlgorithm::Crc32c),
    )
    .unwrap();
    let out = w.finish().unwrap();
    let r = Reader::from_slice(&out).unwrap();
    let c = &r.objects()[0].components()[0];
    assert!(
        c.length() < 100,
        "4096 equal bytes compress well, got {}",
        c.length()
    );
    assert_eq!(c.decoded_length(), 4096);
    let stored = &out[c.offset() as usize..(c.offset() + c.length()) as usize];
    assert_eq!(
        c.digest().unwrap(),
        format!("crc32c:0x{:08X}", crc32c_of(stored))
    );
    assert_eq!(zstd::decode_all(stored).unwrap(), data);
}

fn crc32c_of(b: &[u8]) -> u32 {
    // Bitwise CRC-32C, independent of the library's implementation.
    let mut crc = !0u32;
    for &byte in b {
        crc ^= byte as u32;
        for _ in 0..8 {
            crc = if crc & 1 != 0 {
                (crc >> 1) ^ 0x82F6_3B78
            } else {
                crc >> 1
            };
        }
    }
    !crc
}

#[test]
fn streaming_writes_components_in_chunks() {
    let total = 3 << 20;
    let data = bytes(11, total);
    for opts in all_options() {
        let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
        w.begin_object("big", "dense", &[total as u64]).unwrap();
        w.begin_component("data", DType::U8, None, &opts).unwrap();
        for chunk in data.chunks(100_003) {
            w.write(chunk).unwrap();
        }
        w.write(&[]).unwrap();
        w.end_component().unwrap();
        w.end_object().unwrap();
        let out = w.finish().unwrap();
        let r = Reader::from_slice(&out).unwrap();
        assert_eq!(r.read_to_vec(0, 0).unwrap(), data);
        if opts.digest != DigestAlgorithm::None {
            r.verify().unwrap();
        }
        // Streamed size that disagrees with the shape is refused at end_object.
        let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
        w.begin_object("big", "dense", &[10]).unwrap();
        w.begin_component("data", DType::U8, None, &opts).unwrap();
        w.write(&[0; 9]).unwrap();
        w.end_component().unwrap();
        assert_eq!(
            w.end_object().unwrap_err().kind(),
            ErrorKind::InvalidArgument
        );
    }
}

#[test]
fn range_reads_return_exact_slices() {
    let data = bytes(21, 1 << 20);
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    w.add(
        "raw",
        DType::U8,
        &[1 << 20],
        &data,
        &WriteOptions::default(),
    )
    .unwrap();
    w.add("z", DType::U8, &[1 << 20], &data, &WriteOptions::zstd(1))
        .unwrap();
    let out = w.finish().unwrap();
    check_everywhere(&out, "range", |r| {
        for o in 0..2 {
            for (off, len) in [
                (0usize, 10usize),
                (1000, 300_000),
                ((1 << 20) - 5, 5),
                (500_000, 0),
                (0, 1 << 20),
            ] {
                let mut dst = vec![0u8; len];
                r.read_range(o, 0, off as u64, &mut dst).unwrap();
                assert_eq!(dst, &data[off..off + len], "object {o} range {off}+{len}");
            }
            let mut dst = vec![0u8; 6];
            assert_eq!(
                r.read_range(o, 0, (1 << 20) - 5, &mut dst)
                    .unwrap_err()
                    .kind(),
                ErrorKind::InvalidArgument
            );
            assert_eq!(
                r.read_range(o, 0, u64::MAX, &mut dst).unwrap_err().kind(),
                ErrorKind::InvalidArgument
            );
        }
    });
}

#[test]
fn destination_must_be_exactly_sized() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    w.add("a", DType::U16, &[4], &[1; 8], &WriteOptions::zstd(0))
        .unwrap();
    let out = w.finish().unwrap();
    let r = Reader::from_slice(&out).unwrap();
    let mut small = [9u8; 7];
    assert_eq!(
        r.read_into(0, 0, &mut small).unwrap_err().kind(),
        ErrorKind::BufferTooSmall
    );
    assert_eq!(small, [9; 7], "a refused call leaves the buffer untouched");
    let mut big = [9u8; 9];
    assert_eq!(
        r.read_into(0, 0, &mut big).unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(big, [9; 9]);
    assert_eq!(
        r.read_into(1, 0, &mut big).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        r.read_into(0, 1, &mut big).unwrap_err().kind(),
        ErrorKind::NotFound
    );
}

#[test]
fn a_thousand_objects_and_attributes_of_every_cbor_type() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    for i in 0..1000u32 {
        w.add(
            &format!("layers.{i}.weight"),
            DType::U32,
            &[1],
            &i.to_le_bytes(),
            &WriteOptions::default(),
        )
        .unwrap();
    }
    let t = |s: &str| Value::Text(s.into());
    let attrs = Value::Map(vec![
        (t("u"), Value::Unsigned(u64::MAX)),
        (t("neg"), Value::Negative(u64::MAX)),
        (t("small_neg"), Value::Negative(0)),
        (t("half"), Value::Float(0.5)),
        (t("single"), Value::Float(100000.0)),
        (t("double"), Value::Float(1.1)),
        (t("text"), t("héllo")),
        (t("bytes"), Value::Bytes(vec![0, 255, 16])),
        (t("yes"), Value::Bool(true)),
        (t("nothing"), Value::Null),
        (
            t("list"),
            Value::Array(vec![Value::Unsigned(1), t("two"), Value::Array(vec![])]),
        ),
        (
            t("nested"),
            Value::Map(vec![(Value::Unsigned(7), Value::Bool(false))]),
        ),
        (
            t("tagged"),
            Value::Tag(1, Box::new(Value::Unsigned(1_363_896_240))),
        ),
    ]);
    w.set_file_attributes(attrs.clone()).unwrap();
    w.set_object_attributes("layers.999.weight", Value::Map(vec![(t("k"), t("v"))]))
        .unwrap();
    let out = w.finish().unwrap();
    let r = Reader::from_slice(&out).unwrap();
    assert_eq!(r.objects().len(), 1000);
    assert_eq!(r.attributes(), Some(attrs.clone()));
    for i in (0..1000u32).step_by(37) {
        let o = r.find(&format!("layers.{i}.weight")).unwrap();
        assert_eq!(o, i as usize);
        assert_eq!(r.read_to_vec(o, 0).unwrap(), i.to_le_bytes());
    }
    assert_eq!(
        ztensor::json::to_json(&r.objects()[999].attributes().unwrap()),
        r#"{"k":"v"}"#
    );
}

#[test]
fn one_reader_shared_by_threads() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    let mut expected = Vec::new();
    for i in 0..16u64 {
        let data = bytes(i, 50_000);
        let opts = if i % 2 == 0 {
            WriteOptions::zstd(1)
        } else {
            WriteOptions::default()
        };
        w.add(
            &format!("t{i}"),
            DType::U8,
            &[50_000],
            &data,
            &opts.with_digest(DigestAlgorithm::Sha256),
        )
        .unwrap();
        expected.push(data);
    }
    let out = w.finish().unwrap();
    let r = Reader::from_slice(&out).unwrap();
    std::thread::scope(|s| {
        for t in 0..8 {
            let (r, expected) = (&r, &expected);
            s.spawn(move || {
                for round in 0..20 {
                    let i = (t + round) % 16;
                    let v = r.view(i, 0).unwrap();
                    assert_eq!(v.data, &expected[i][..]);
                    let mut dst = vec![0u8; 50_000];
                    r.read_into(i, 0, &mut dst).unwrap();
                    assert_eq!(dst, expected[i]);
                    r.verify_component(i, 0).unwrap();
                }
            });
        }
    });
    // Every zstd view was decoded once and is shared.
    let p = r.view(0, 0).unwrap().data.as_ptr();
    assert_eq!(p, r.view(0, 0).unwrap().data.as_ptr());
}

#[test]
fn path_writer_publishes_only_on_finish() {
    let dir = temp_dir("atomic");
    let path = dir.join("model.zt");
    std::fs::write(&path, b"previous contents").unwrap();
    {
        let mut w = Writer::create_with(&path, &common::v12()).unwrap();
        w.add("a", DType::U8, &[3], &[1, 2, 3], &WriteOptions::default())
            .unwrap();
        // Dropped unfinished: the old file stays, the temporary file is gone.
    }
    assert_eq!(std::fs::read(&path).unwrap(), b"previous contents");
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    let mut w = Writer::create_with(&path, &common::v12()).unwrap();
    w.add("a", DType::U8, &[3], &[1, 2, 3], &WriteOptions::default())
        .unwrap();
    assert_eq!(std::fs::read(&path).unwrap(), b"previous contents");
    w.finish().unwrap();
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
    let r = Reader::open(&path).unwrap();
    assert_eq!(read(&r, "a", "data"), [1, 2, 3]);
    let e = Writer::create_with(dir.join("no/such/dir/x.zt"), &common::v12()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
}

#[test]
fn verify_reports_corruption_and_unknown_algorithms() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    w.add(
        "s",
        DType::U8,
        &[64],
        &bytes(1, 64),
        &WriteOptions::default().with_digest(DigestAlgorithm::Sha256),
    )
    .unwrap();
    w.add(
        "c",
        DType::U8,
        &[64],
        &bytes(2, 64),
        &WriteOptions::zstd(0).with_digest(DigestAlgorithm::Crc32c),
    )
    .unwrap();
    let mut out = w.finish().unwrap();
    Reader::from_slice(&out).unwrap().verify().unwrap();
    out[64] ^= 1; // first byte of "s"
    let r = Reader::from_slice(&out).unwrap();
    assert_eq!(
        r.verify_component(0, 0).unwrap_err().kind(),
        ErrorKind::Checksum
    );
    r.verify_component(1, 0).unwrap();
    assert_eq!(r.verify().unwrap_err().kind(), ErrorKind::Checksum);
    let opts = OpenOptions {
        verify_on_open: true,
        ..Default::default()
    };
    assert_eq!(
        Reader::from_slice_with(&out, &opts).unwrap_err().kind(),
        ErrorKind::Checksum
    );
}

#[test]
fn large_zstd_components_are_independent_frames_decoded_in_parallel() {
    let frame = ztensor::ZSTD_FRAME_SIZE;
    let len = 2 * frame + frame / 2 + 3; // three frames, the last one partial
    let data: Vec<u8> = bytes(5, len).iter().map(|b| b & 0x0f).collect();
    for streamed in [false, true] {
        let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
        let opts = WriteOptions::zstd(1).with_digest(DigestAlgorithm::Crc32c);
        if streamed {
            w.begin_object("z", "dense", &[len as u64]).unwrap();
            w.begin_component("data", DType::U8, None, &opts).unwrap();
            for chunk in data.chunks(1_000_003) {
                w.write(chunk).unwrap();
            }
            w.end_component().unwrap();
            w.end_object().unwrap();
        } else {
            w.add("z", DType::U8, &[len as u64], &data, &opts).unwrap();
        }
        let out = w.finish().unwrap();
        let r = Reader::from_slice(&out).unwrap();
        let c = &r.objects()[0].components()[0];
        let stored = &out[c.offset() as usize..(c.offset() + c.length()) as usize];
        // Three frames, each recording its content size, then the seek table (a skippable
        // frame, content size 0); one stream for any zstd decoder.
        let mut frames = Vec::new();
        let mut rest = stored;
        while !rest.is_empty() {
            let n = zstd::zstd_safe::find_frame_compressed_size(rest).unwrap();
            let content = zstd::zstd_safe::get_frame_content_size(&rest[..n])
                .unwrap()
                .unwrap();
            frames.push((n as u32, content as u32));
            rest = &rest[n..];
        }
        let (table, data_frames) = frames.split_last().unwrap();
        assert_eq!(
            data_frames.iter().map(|f| f.1).collect::<Vec<_>>(),
            [frame as u32, frame as u32, (frame / 2 + 3) as u32],
            "streamed: {streamed}"
        );
        // The table, in zstd's seekable format: skippable magic, size, (compressed,
        // decompressed) per frame, frame count, descriptor 0, seekable magic.
        let mut want = vec![0x5E, 0x2A, 0x4D, 0x18, 33, 0, 0, 0];
        for (c, d) in data_frames {
            want.extend_from_slice(&c.to_le_bytes());
            want.extend_from_slice(&d.to_le_bytes());
        }
        want.extend_from_slice(&[3, 0, 0, 0, 0, 0xB1, 0xEA, 0x92, 0x8F]);
        assert_eq!(*table, (want.len() as u32, 0));
        assert_eq!(&stored[stored.len() - want.len()..], &want[..]);
        let index = r.frame_index(0, 0).unwrap();
        assert!(index.has_seek_table());
        let mut at = (0u64, 0u64);
        for (span, (c, d)) in index.iter().zip(data_frames) {
            let next = (at.0 + u64::from(*c), at.1 + u64::from(*d));
            assert_eq!((span.stored, span.decoded), (at.0..next.0, at.1..next.1));
            at = next;
        }
        assert_eq!(index.len(), 3);
        assert_eq!(zstd::decode_all(stored).unwrap(), data);
        assert_eq!(r.read_to_vec(0, 0).unwrap(), data);
        assert_eq!(r.view(0, 0).unwrap().data, &data[..]);
        r.verify().unwrap();
        // Ranges inside one frame, across a boundary, and spanning a whole frame.
        for (off, n) in [
            (10, 100),
            (frame - 50, 100),
            (frame / 2, 2 * frame),
            (len - 7, 7),
        ] {
            let mut dst = vec![0u8; n];
            r.read_range(0, 0, off as u64, &mut dst).unwrap();
            assert_eq!(dst, &data[off..off + n]);
        }
    }
}

#[test]
fn large_zstd_components_decode_through_a_bounded_window() {
    // Over 16 MiB of compressed bytes (incompressible data), read from a file both mapped
    // and with pread: decoded in windows of whole frames, exactly.
    let frame = ztensor::ZSTD_FRAME_SIZE;
    let len = 5 * frame + 12_345;
    let data = bytes(77, len);
    let path = temp_dir("zstd_window").join("big.zt");
    let mut w = Writer::create_with(&path, &common::v12()).unwrap();
    w.add(
        "z",
        DType::U8,
        &[len as u64],
        &data,
        &WriteOptions::zstd(1).with_digest(DigestAlgorithm::Sha256),
    )
    .unwrap();
    w.finish().unwrap();
    for use_mmap in [true, false] {
        let r = Reader::open_with(
            &path,
            &OpenOptions {
                use_mmap,
                ..Default::default()
            },
        )
        .unwrap();
        assert!(r.objects()[0].components()[0].length() > 16 << 20);
        let mut dst = vec![0u8; len];
        r.read_into(0, 0, &mut dst).unwrap();
        assert!(dst == data, "mmap: {use_mmap}");
        r.verify().unwrap();
    }
}

#[test]
fn writer_refuses_a_directory_up_front() {
    let dir = temp_dir("writer_dir");
    for p in [dir.clone(), dir.join("sub/")] {
        assert_eq!(
            Writer::create_with(&p, &common::v12()).unwrap_err().kind(),
            ErrorKind::InvalidArgument,
            "{}",
            p.display()
        );
    }
    assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 0);
}

/// `verify` hashes the largest components first on several threads, yet reports the
/// failure a pass in file order would meet first.
#[test]
fn verify_reports_the_first_failure_in_file_order() {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    let sha = WriteOptions::default().with_digest(DigestAlgorithm::Sha256);
    for (name, mib) in [("a", 4usize), ("b", 4), ("c", 12)] {
        let data: Vec<u8> = (0..mib << 20).map(|i| (i % 251) as u8).collect();
        w.add(name, DType::U8, &[data.len() as u64], &data, &sha)
            .unwrap();
    }
    let mut bytes = w.finish().unwrap();
    let r = Reader::from_slice(&bytes).unwrap();
    let at = |name: &str| {
        let o = r.object(r.find(name).unwrap()).unwrap();
        o.components()[0].offset() as usize
    };
    let (a, c) = (at("a"), at("c"));
    drop(r);
    bytes[c + 5] ^= 1;
    let r = Reader::from_slice(&bytes).unwrap();
    let e = r.verify().unwrap_err();
    assert!(e.message().contains("'c'"), "{e}");
    drop(r);
    bytes[a + 7] ^= 1;
    let r = Reader::from_slice(&bytes).unwrap();
    for _ in 0..5 {
        let e = r.verify().unwrap_err();
        assert!(
            e.message().contains("'a'") && !e.message().contains("'c'"),
            "{e}"
        );
    }
}
