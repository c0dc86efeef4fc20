//! zTensor v2 beyond the reference's own files (tests/interop_v2.rs and the corpus test
//! cover those): tied weights zero-copy, range reads of zt.zstd-seekable/1 parts, GGUF
//! blocks through gguf.<type>/1, shard tables opened as sets, append generations, data
//! shards, the content digest, and the writer's canonical placement (streamed
//! duplicates, reordering, kept order, crash safety, bounded memory) and conversions
//! between v1.2 and v2 both ways.

mod common;

use std::path::Path;

use ztensor::cbor::Value;
use ztensor::{
    CopyOptions, CreateOptions, DType, DigestAlgorithm, Encoding, ErrorKind, FileVersion,
    OpenOptions, Placement, Reader, WriteOptions, Writer,
};

const MAGIC: [u8; 8] = [0x89, b'Z', b'T', b'2', 0x0d, 0x0a, 0x1a, 0x0a];

/// v2 in canonical form (64 KiB placement), what most tests here check byte for byte.
fn v2() -> CreateOptions {
    CreateOptions {
        durable: false,
        version: FileVersion::V2,
        placement: Placement::Canonical,
        ..CreateOptions::default()
    }
}

/// Adds `data` as a 1-D `u8` tensor, default options.
fn add_u8<W: std::io::Write>(w: &mut Writer<W>, name: &str, data: &[u8]) {
    w.add(
        name,
        DType::U8,
        &[data.len() as u64],
        data,
        &WriteOptions::default(),
    )
    .unwrap();
}

fn t(s: &str) -> Value {
    Value::Text(s.into())
}

/// Deterministic CBOR of a value (map keys sorted by their encodings), for manifests
/// written by hand.
fn det(v: &Value) -> Vec<u8> {
    match v {
        Value::Map(pairs) => {
            let mut entries: Vec<(Vec<u8>, Vec<u8>)> =
                pairs.iter().map(|(k, v)| (det(k), det(v))).collect();
            entries.sort();
            let mut out = Vec::new();
            common::cbor_head(&mut out, 5, entries.len() as u64);
            for (k, v) in entries {
                out.extend(k);
                out.extend(v);
            }
            out
        }
        Value::Array(items) => {
            let mut out = Vec::new();
            common::cbor_head(&mut out, 4, items.len() as u64);
            items.iter().for_each(|i| out.extend(det(i)));
            out
        }
        other => ztensor::cbor::to_vec(other),
    }
}

fn footer(at: u64, manifest: &[u8]) -> [u8; 40] {
    let mut f = [0u8; 40];
    f[0..8].copy_from_slice(&at.to_le_bytes());
    f[8..16].copy_from_slice(&(manifest.len() as u64).to_le_bytes());
    f[16..24].copy_from_slice(&xxhash_rust::xxh3::xxh3_64(manifest).to_le_bytes());
    f[24..28].copy_from_slice(&2u32.to_le_bytes());
    f[32..40].copy_from_slice(&MAGIC);
    f
}

/// Appends a manifest at the next 4096 boundary and a footer to `file`.
fn seal(mut file: Vec<u8>, manifest: &Value) -> Vec<u8> {
    let bytes = det(manifest);
    file.resize(file.len().div_ceil(4096) * 4096, 0);
    let at = file.len() as u64;
    file.extend_from_slice(&bytes);
    file.extend_from_slice(&footer(at, &bytes));
    file
}

fn xxh3(bytes: &[u8]) -> String {
    format!("xxh3:{:016x}", xxhash_rust::xxh3::xxh3_64(bytes))
}

fn part(dtype: &str, offset: u64, len: u64, shard: Option<&str>) -> Value {
    let mut m = vec![
        (t("dtype"), t(dtype)),
        (
            t("blob"),
            Value::Array(vec![Value::Unsigned(offset), Value::Unsigned(len)]),
        ),
    ];
    if let Some(s) = shard {
        m.push((t("shard"), t(s)));
    }
    Value::Map(m)
}

fn dense(shape: &[u64], data: Value) -> Value {
    Value::Map(vec![
        (
            t("shape"),
            Value::Array(shape.iter().map(|&d| Value::Unsigned(d)).collect()),
        ),
        (t("layout"), t("dense")),
        (t("parts"), Value::Map(vec![(t("data"), data)])),
    ])
}

#[test]
fn tied_weights_are_one_blob_viewed_twice_zero_copy() {
    let dir = common::temp_dir("v2_tied");
    let path = dir.join("tied.zt");
    let data = common::bytes(1, 4096 * 3 + 100);
    let mut w = Writer::create_with(&path, &v2()).unwrap();
    for name in ["wte", "lm_head", "other"] {
        let bytes = if name == "other" {
            common::bytes(2, data.len())
        } else {
            data.clone()
        };
        w.add(
            name,
            DType::U8,
            &[data.len() as u64],
            &bytes,
            &WriteOptions::default(),
        )
        .unwrap();
    }
    w.finish().unwrap();
    let r = Reader::open(&path).unwrap();
    let (a, b) = (
        r.view(r.find("wte").unwrap(), 0).unwrap(),
        r.view(r.find("lm_head").unwrap(), 0).unwrap(),
    );
    assert!(a.zero_copy && b.zero_copy);
    assert_eq!(a.data.as_ptr(), b.data.as_ptr());
    assert_eq!(a.data, &data[..]);
    assert_eq!((a.data.as_ptr() as usize) % 4096, 0);
    let c = |n: &str| r.objects()[r.find(n).unwrap()].components()[0].offset();
    assert_eq!(c("wte"), c("lm_head"));
    assert_ne!(c("wte"), c("other"));
    // Canonical: every blob offset a multiple of 64 KiB.
    for o in r.objects() {
        assert_eq!(o.components()[0].offset() % 65536, 0);
    }
}

/// Identical raw parts share one blob whatever digest they carry: xxh3 (the share hash read
/// off the digest's own state) and sha256 (a hash state of its own), written part by part
/// or copied from another file, in a compact (default) file.
#[test]
fn identical_parts_share_a_blob_whatever_their_digest() {
    let dir = common::temp_dir("v2_share_digests");
    let data = common::bytes(3, 4096 + 17);
    let other = common::bytes(4, data.len());
    let sha = WriteOptions::default().with_digest(DigestAlgorithm::Sha256);
    let xxh3 = WriteOptions::default();
    let quick = CreateOptions {
        durable: false,
        ..CreateOptions::default()
    };
    let path = dir.join("shared.zt");
    let mut w = Writer::create_with(&path, &quick).unwrap();
    for (name, bytes, opts) in [
        ("s1", &data, &sha),
        ("s2", &data, &sha),
        ("s3", &other, &sha),
        ("x1", &other, &xxh3),
        ("x2", &other, &xxh3),
    ] {
        w.add(name, DType::U8, &[data.len() as u64], bytes, opts)
            .unwrap();
    }
    w.finish().unwrap();
    let offsets = |r: &Reader| -> Vec<u64> {
        ["s1", "s2", "s3", "x1", "x2"]
            .iter()
            .map(|n| r.objects()[r.find(n).unwrap()].components()[0].offset())
            .collect()
    };
    let r = Reader::open(&path).unwrap();
    let o = offsets(&r);
    assert_eq!(
        o[0], o[1],
        "sha256-digested equal parts share a blob: {o:?}"
    );
    assert_ne!(o[0], o[2], "{o:?}");
    // Equal bytes under another digest are the same blob too (one copy in the file).
    assert_eq!(o[2], o[3], "{o:?}");
    assert_eq!(o[3], o[4], "xxh3-digested equal parts share a blob: {o:?}");
    r.verify().unwrap();
    assert!(common::read(&r, "s2", "data") == data && common::read(&r, "x2", "data") == other);
    // Copied into another file: shared again.
    let copy = dir.join("copy.zt");
    let mut w = Writer::create_with(&copy, &quick).unwrap();
    for i in 0..r.objects().len() {
        w.copy_object(&r, i, &CopyOptions::default()).unwrap();
    }
    w.finish().unwrap();
    let rc = Reader::open(&copy).unwrap();
    assert_eq!(offsets(&rc), o);
    rc.verify().unwrap();
}

#[test]
fn zstd_seekable_parts_read_by_range_through_their_seek_table() {
    let dir = common::temp_dir("v2_zstd");
    let path = dir.join("z.zt");
    let data = common::bytes(3, 10 * (4 << 20) + 12345);
    let mut w = Writer::create_with(&path, &v2()).unwrap();
    w.add(
        "z",
        DType::U8,
        &[data.len() as u64],
        &data,
        &WriteOptions::zstd(1),
    )
    .unwrap();
    w.add(
        "small",
        DType::U8,
        &[10],
        &data[..10],
        &WriteOptions::zstd(1),
    )
    .unwrap();
    w.finish().unwrap();
    let r = Reader::open(&path).unwrap();
    let z = r.find("z").unwrap();
    let c = &r.objects()[z].components()[0];
    assert_eq!(c.encoding(), Encoding::Zstd);
    assert!(c.digest().unwrap().starts_with("xxh3:"));
    assert_eq!(
        c.digest().unwrap(),
        xxh3(&data),
        "digests cover the decoded bytes"
    );
    let index = r.frame_index(z, 0).unwrap();
    assert!(index.has_seek_table());
    assert_eq!(index.len(), 11);
    assert!(r.range_reads_are_cheap(z, 0).unwrap());
    let mut piece = vec![0u8; 1000];
    let at = 7 * (4 << 20) as u64 - 500; // across two frames
    r.read_range(z, 0, at, &mut piece).unwrap();
    assert_eq!(piece, data[at as usize..at as usize + 1000]);
    // A single frame still has its table (zt.zstd-seekable/1).
    let small = r.find("small").unwrap();
    assert!(r.frame_index(small, 0).unwrap().has_seek_table());
    r.verify().unwrap();
    let view = r.view(small, 0).unwrap();
    assert!(!view.zero_copy);
    assert_eq!(view.data, &data[..10]);
}

#[test]
fn gguf_blocks_dequantize_as_they_do_from_the_gguf_file() {
    let dir = common::temp_dir("v2_gguf");
    let gguf = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/gguf/quant_v3.gguf");
    let src = Reader::open(&gguf).unwrap();
    let out = dir.join("quant.zt");
    let mut w = Writer::create_with(&out, &v2()).unwrap();
    let mut order: Vec<usize> = (0..src.objects().len()).collect();
    order.sort_by_key(|&i| src.objects()[i].name().to_owned());
    for &i in &order {
        w.copy_object(&src, i, &CopyOptions::default()).unwrap();
    }
    w.finish().unwrap();
    let r = Reader::open(&out).unwrap();
    let mut quantized = 0;
    for (i, o) in src.objects().iter().enumerate() {
        let j = r.find(o.name()).unwrap();
        let ours = &r.objects()[j];
        if let Ok(q) = src.quant_info(i) {
            quantized += 1;
            let layout = format!("gguf.{}/1", q.block_type.name().to_ascii_lowercase());
            assert_eq!(ours.format(), layout);
            let a = ours.attributes().unwrap();
            assert_eq!(
                a.get("elems_per_block").and_then(Value::as_u64),
                Some(q.block_type.block_size())
            );
            assert_eq!(
                a.get("block_bytes").and_then(Value::as_u64),
                Some(q.block_type.type_size())
            );
            let qi = r.quant_info(j).unwrap();
            assert_eq!(
                (qi.block_type.id(), qi.rows, qi.row_size),
                (q.block_type.id(), q.rows, q.row_size)
            );
            let n: u64 = o.shape().iter().product();
            if q.block_type.can_dequantize() {
                let mut x = vec![0u8; n as usize * 4];
                let mut y = vec![0u8; n as usize * 4];
                src.read_as(i, 0, DType::F32, &mut x).unwrap();
                r.read_as(j, 0, DType::F32, &mut y).unwrap();
                assert!(x == y, "{}", o.name());
            }
        } else {
            assert_eq!(ours.format(), o.format());
        }
        assert_eq!(
            common::read(&r, o.name(), "data"),
            common::read(&src, o.name(), "data")
        );
    }
    assert!(quantized > 0);
    r.verify().unwrap();
    // And back to v1.2: the GGUF object as our GGUF reader gives it.
    let back = dir.join("back.zt");
    let mut w = Writer::create_with(
        &back,
        &CreateOptions {
            version: FileVersion::V1_2,
            ..v2()
        },
    )
    .unwrap();
    for i in 0..r.objects().len() {
        w.copy_object(&r, i, &CopyOptions::default()).unwrap();
    }
    w.finish().unwrap();
    let b = Reader::open(&back).unwrap();
    assert_eq!(b.version(), "1.2.0");
    for (i, o) in src.objects().iter().enumerate() {
        let j = b.find(o.name()).unwrap();
        assert_eq!(b.objects()[j].format(), o.format(), "{}", o.name());
        assert_eq!(b.objects()[j].attributes(), o.attributes(), "{}", o.name());
        assert_eq!(
            common::read(&b, o.name(), "data"),
            common::read(&src, o.name(), "data")
        );
        let _ = i;
    }
}

/// Two shard files (ordinary v2 files) and a root that references their blobs.
fn write_set(dir: &Path) -> (Vec<u8>, Vec<u8>) {
    let (a, b) = (common::bytes(10, 100), common::bytes(11, 300));
    for (name, data) in [("model-00001.zt", &a), ("model-00002.zt", &b)] {
        let mut w = Writer::create_with(dir.join(name), &v2()).unwrap();
        add_u8(&mut w, "x", data);
        w.finish().unwrap();
    }
    let entry = |name: &str| {
        let bytes = std::fs::read(dir.join(name)).unwrap();
        Value::Map(vec![
            (t("size"), Value::Unsigned(bytes.len() as u64)),
            (t("digest"), t(&xxh3(&bytes))),
        ])
    };
    let local = common::bytes(12, 40);
    let mut file = MAGIC.to_vec();
    file.resize(4096, 0);
    file.extend_from_slice(&local);
    let with_digest = |mut p: Value, d: &[u8]| {
        if let Value::Map(m) = &mut p {
            m.push((t("digest"), t(&xxh3(d))));
        }
        p
    };
    let manifest = Value::Map(vec![
        (
            t("objects"),
            Value::Map(vec![
                (
                    t("a"),
                    dense(
                        &[100],
                        with_digest(part("u8", 65536, 100, Some("00001")), &a),
                    ),
                ),
                (
                    t("b"),
                    dense(
                        &[300],
                        with_digest(part("u8", 65536, 300, Some("00002")), &b),
                    ),
                ),
                (
                    t("here"),
                    dense(&[40], with_digest(part("u8", 4096, 40, None), &local)),
                ),
            ]),
        ),
        (
            t("shards"),
            Value::Map(vec![
                (t("00001"), entry("model-00001.zt")),
                (t("00002"), entry("model-00002.zt")),
            ]),
        ),
    ]);
    std::fs::write(dir.join("model.zt"), seal(file, &manifest)).unwrap();
    (a, b)
}

#[test]
fn a_shard_table_opens_as_a_set_whose_shards_open_when_read() {
    let dir = common::temp_dir("v2_set");
    let (a, b) = write_set(&dir);
    let root = dir.join("model.zt");
    let r = Reader::open(&root).unwrap();
    assert_eq!(r.shard_count(), 3);
    assert_eq!(
        r.shard_path(1).unwrap().unwrap(),
        dir.join("model-00001.zt")
    );
    assert_eq!(
        r.shard_path(2).unwrap().unwrap(),
        dir.join("model-00002.zt")
    );
    assert_eq!(common::read(&r, "a", "data"), a);
    assert_eq!(common::read(&r, "b", "data"), b);
    assert_eq!(r.objects()[r.find("b").unwrap()].components()[0].file(), 2);
    // Each shard is laid out as the root is (absolute offsets, 4096-aligned blobs).
    for shard in 0..3 {
        assert_eq!(r.shard_layout(shard).unwrap(), r.layout(), "shard {shard}");
    }
    assert_eq!(r.layout().alignment, 4096);
    assert_eq!(r.shard_layout(3).unwrap_err().kind(), ErrorKind::NotFound);
    let view = r.view(r.find("a").unwrap(), 0).unwrap();
    assert!(view.zero_copy);
    r.verify().unwrap();
    assert!(r.verify_shard(1).unwrap());
    assert!(!r.verify_shard(0).unwrap());
    assert!(r.content_digest(DigestAlgorithm::Xxh3).is_ok());
    // Opened eagerly too; from memory, a shard can't be found.
    let eager = Reader::open_with(
        &root,
        &OpenOptions {
            open_all_shards: true,
            ..OpenOptions::default()
        },
    )
    .unwrap();
    assert_eq!(common::read(&eager, "b", "data"), b);
    let bytes = std::fs::read(&root).unwrap();
    let mem = Reader::from_slice(&bytes).unwrap();
    assert_eq!(common::read(&mem, "here", "data").len(), 40);
    let a = mem.find("a").unwrap();
    let e = mem.read_to_vec(a, 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    assert!(e.message().contains("shard '00001'"), "{e}");
    // Every other path too (a view once took the shard's offsets into the root's bytes).
    assert_eq!(mem.view(a, 0).unwrap_err().kind(), ErrorKind::NotFound);
    let mut one = [0u8; 1];
    assert_eq!(
        mem.read_range(a, 0, 0, &mut one).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    assert_eq!(mem.prefetch(a).unwrap_err().kind(), ErrorKind::NotFound);
    mem.release(a).unwrap();
    // A shard that is not the file the root recorded: a different size fails the read;
    // the same size with other bytes fails verification.
    let shard2 = dir.join("model-00002.zt");
    let original = std::fs::read(&shard2).unwrap();
    let mut changed = original.clone();
    changed[65536] ^= 1;
    std::fs::write(&shard2, &changed).unwrap();
    let r = Reader::open(&root).unwrap();
    assert_eq!(r.verify_shard(2).unwrap_err().kind(), ErrorKind::Checksum);
    assert_eq!(r.verify().unwrap_err().kind(), ErrorKind::Checksum);
    std::fs::write(&shard2, &original[..original.len() - 1]).unwrap();
    let r = Reader::open(&root).unwrap();
    let e = r.read_to_vec(r.find("b").unwrap(), 0).unwrap_err();
    assert!(e.message().contains("bytes now"), "{e}");
    // A file in a shard's place that is not a v2 file is refused when it is opened.
    let mut not_v2 = original.clone();
    let last = not_v2.len() - 1;
    not_v2[last] = 0;
    std::fs::write(&shard2, &not_v2).unwrap();
    let r = Reader::open(&root).unwrap();
    let e = r.read_to_vec(r.find("b").unwrap(), 0).unwrap_err();
    assert!(e.message().contains("footer-magic"), "{e}");
}

#[test]
fn the_footer_at_eof_defines_the_file_and_data_shards_open_empty() {
    let dir = common::temp_dir("v2_generations");
    let path = dir.join("g.zt");
    let mut w = Writer::create_with(
        &path,
        &CreateOptions {
            keep_order: true,
            ..v2()
        },
    )
    .unwrap();
    w.add(
        "old",
        DType::U8,
        &[4],
        &[1, 2, 3, 4],
        &WriteOptions::default(),
    )
    .unwrap();
    w.finish().unwrap();
    // A second generation: a new blob, a new manifest naming both, a new footer.
    let mut file = std::fs::read(&path).unwrap();
    file.resize(file.len().div_ceil(4096) * 4096, 0);
    let at = file.len() as u64;
    file.extend_from_slice(&[9, 9]);
    let manifest = Value::Map(vec![(
        t("objects"),
        Value::Map(vec![
            (t("old"), dense(&[4], part("u8", 65536, 4, None))),
            (t("new"), dense(&[2], part("u8", at, 2, None))),
        ]),
    )]);
    std::fs::write(&path, seal(file, &manifest)).unwrap();
    let r = Reader::open(&path).unwrap();
    assert_eq!(r.objects().len(), 2);
    assert_eq!(common::read(&r, "new", "data"), [9, 9]);
    assert_eq!(common::read(&r, "old", "data"), [1, 2, 3, 4]);
    // A data shard: magic and a footer without a manifest.
    let mut shard = MAGIC.to_vec();
    shard.extend_from_slice(&footer(0, &[])[..]);
    shard[8 + 16..8 + 24].fill(0);
    let r = Reader::from_slice(&shard).unwrap();
    assert_eq!((r.version(), r.objects().len()), ("2", 0));
}

#[test]
fn the_content_digest_ignores_layout_and_is_the_specs_value() {
    let dir = common::temp_dir("v2_content");
    let data = common::f32s(&[1.0, 2.0, 3.0]);
    let write = |name: &str, options: &CreateOptions, how: &WriteOptions| {
        let path = dir.join(name);
        let mut w = Writer::create_with(&path, options).unwrap();
        w.add("w", DType::F32, &[3], &data, how).unwrap();
        w.add("b", DType::U8, &[1], &[7], how).unwrap();
        w.set_object_attributes("w", Value::Map(vec![(t("k"), Value::Unsigned(1))]))
            .unwrap();
        w.finish().unwrap();
        Reader::open(&path).unwrap()
    };
    let canonical = write("c.zt", &v2(), &WriteOptions::default());
    let zstd = write(
        "z.zt",
        &CreateOptions {
            keep_order: true,
            ..v2()
        },
        &WriteOptions::zstd(5),
    );
    let x = canonical.content_digest(DigestAlgorithm::Xxh3).unwrap();
    assert_eq!(zstd.content_digest(DigestAlgorithm::Xxh3).unwrap(), x);
    // The spec's value, computed here from its definition.
    let value = Value::Array(vec![
        t("zt.content/1"),
        Value::Map(vec![
            (
                t("w"),
                Value::Map(vec![
                    (t("shape"), Value::Array(vec![Value::Unsigned(3)])),
                    (t("layout"), t("dense")),
                    (
                        t("attributes"),
                        Value::Map(vec![(t("k"), Value::Unsigned(1))]),
                    ),
                    (
                        t("parts"),
                        Value::Map(vec![(
                            t("data"),
                            Value::Map(vec![
                                (t("dtype"), t("f32")),
                                (t("digest"), t(&xxh3(&data))),
                            ]),
                        )]),
                    ),
                ]),
            ),
            (
                t("b"),
                Value::Map(vec![
                    (t("shape"), Value::Array(vec![Value::Unsigned(1)])),
                    (t("layout"), t("dense")),
                    (
                        t("parts"),
                        Value::Map(vec![(
                            t("data"),
                            Value::Map(vec![(t("dtype"), t("u8")), (t("digest"), t(&xxh3(&[7])))]),
                        )]),
                    ),
                ]),
            ),
        ]),
    ]);
    assert_eq!(x, xxh3(&det(&value)));
    let sha = canonical.content_digest(DigestAlgorithm::Sha256).unwrap();
    assert_eq!(sha.len(), 7 + 64);
    // Undefined without digests, and for v1.2 files.
    let v1 = Reader::open(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/gguf/plain_v3.gguf"),
    )
    .unwrap();
    assert_eq!(
        v1.content_digest(DigestAlgorithm::Xxh3).unwrap_err().kind(),
        ErrorKind::Unsupported
    );
    let mut file = MAGIC.to_vec();
    file.resize(4096, 0);
    file.push(1);
    let undigested = seal(
        file,
        &Value::Map(vec![(
            t("objects"),
            Value::Map(vec![(t("x"), dense(&[1], part("u8", 4096, 1, None)))]),
        )]),
    );
    let r = Reader::from_slice(&undigested).unwrap();
    let e = r.content_digest(DigestAlgorithm::Xxh3).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Unsupported);
    assert!(e.message().contains("no digest"), "{e}");
    assert_eq!(
        r.content_digest(DigestAlgorithm::Crc32c)
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
}

/// Writes the same model three ways: bytes in hand in canonical order, streamed out of
/// order with a duplicate, and with the written order kept.
#[test]
fn canonical_placement_whatever_the_order_and_the_way_bytes_arrive() {
    let dir = common::temp_dir("v2_placement");
    let big = common::bytes(20, 100_000);
    let small = common::bytes(21, 10);
    let canonical = dir.join("canonical.zt");
    let mut w = Writer::create_with(&canonical, &v2()).unwrap();
    for (name, data) in [("a", &big), ("b", &small), ("c", &big)] {
        add_u8(&mut w, name, data);
    }
    w.finish().unwrap();
    let streamed = dir.join("streamed.zt");
    let mut w = Writer::create_with(&streamed, &v2()).unwrap();
    for (name, data) in [("c", &big), ("b", &small), ("a", &big)] {
        w.begin_object(name, "dense", &[data.len() as u64]).unwrap();
        w.begin_component("data", DType::U8, None, &WriteOptions::default())
            .unwrap();
        for piece in data.chunks(7777) {
            w.write(piece).unwrap();
        }
        w.end_component().unwrap();
        w.end_object().unwrap();
    }
    // The duplicate was taken back as soon as it ended.
    // c at 65536, b at 196608; a began at 262144 and was cut off there.
    assert_eq!(w.position(), 4 * 65536);
    w.finish().unwrap();
    let (x, y) = (
        std::fs::read(&canonical).unwrap(),
        std::fs::read(&streamed).unwrap(),
    );
    assert!(
        x == y,
        "reordered streamed file differs from the canonical one"
    );
    let kept = dir.join("kept.zt");
    let mut w = Writer::create_with(
        &kept,
        &CreateOptions {
            keep_order: true,
            ..v2()
        },
    )
    .unwrap();
    for (name, data) in [("b", &small), ("c", &big), ("a", &big)] {
        add_u8(&mut w, name, data);
    }
    w.finish().unwrap();
    let k = std::fs::read(&kept).unwrap();
    assert!(k != x, "kept order gave the canonical file");
    let r = Reader::open(&kept).unwrap();
    let at = |n: &str| r.objects()[r.find(n).unwrap()].components()[0].offset();
    assert_eq!((at("b"), at("c"), at("a")), (65536, 131072, 131072));
    assert_eq!(common::read(&r, "a", "data"), big);
    assert_eq!(
        r.content_digest(DigestAlgorithm::Xxh3).unwrap(),
        Reader::open(&canonical)
            .unwrap()
            .content_digest(DigestAlgorithm::Xxh3)
            .unwrap()
    );
    // Into a Vec (no file to read back from): valid, in the order written, duplicates
    // stored twice.
    let mut w = Writer::new_with(Vec::new(), &v2()).unwrap();
    for (name, data) in [("c", &big), ("a", &big)] {
        add_u8(&mut w, name, data);
    }
    let bytes = w.finish().unwrap();
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(common::read(&r, "a", "data"), big);
    r.verify().unwrap();
    // Nothing is left beside the files: no temporary file survives a finish or a drop.
    let mut w = Writer::create_with(dir.join("dropped.zt"), &v2()).unwrap();
    w.add("z", DType::U8, &[3], &[1, 2, 3], &WriteOptions::default())
        .unwrap();
    w.add("a", DType::U8, &[3], &[1, 2, 4], &WriteOptions::default())
        .unwrap();
    drop(w);
    let mut names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["canonical.zt", "kept.zt", "streamed.zt"]);
}

#[test]
fn v1_2_files_convert_to_v2_and_back_keeping_what_objects_are() {
    let dir = common::temp_dir("v2_convert");
    let v1 = dir.join("v1.zt");
    let mut w = Writer::create_with(
        &v1,
        &CreateOptions {
            durable: false,
            version: FileVersion::V1_2,
            ..CreateOptions::default()
        },
    )
    .unwrap();
    w.add_typed(
        "fp8",
        DType::U8,
        Some("f8_e8m0fnu"),
        &[4],
        &[1, 2, 3, 4],
        &WriteOptions::default(),
    )
    .unwrap();
    w.add_typed(
        "fp4",
        DType::U8,
        Some("f4_e2m1fn_x2"),
        &[4],
        &[0x21, 0x43],
        // A sha256 of the stored bytes in v1.2, of the decoded ones in v2, and back.
        &WriteOptions::zstd(3).with_digest(DigestAlgorithm::Sha256),
    )
    .unwrap();
    w.add(
        "mask",
        DType::Bool,
        &[3],
        &[1, 0, 1],
        &WriteOptions::default().with_digest(DigestAlgorithm::Crc32c),
    )
    .unwrap();
    common::add_csr(&mut w, "csr", &[2, 3], &[1.0, 2.0], &[0, 2], &[0, 1, 2]);
    w.set_file_attributes(Value::Map(vec![(t("note"), t("v1"))]))
        .unwrap();
    w.finish().unwrap();
    let src = Reader::open(&v1).unwrap();
    let to = |from: &Reader<'_>, path: &Path, version: FileVersion| {
        let mut w = Writer::create_with(path, &CreateOptions { version, ..v2() }).unwrap();
        if let Some(a) = from.attributes() {
            w.set_file_attributes(a).unwrap();
        }
        for i in 0..from.objects().len() {
            w.copy_object(from, i, &CopyOptions::default()).unwrap();
        }
        w.finish().unwrap();
        Reader::open(path).unwrap()
    };
    let two = to(&src, &dir.join("two.zt"), FileVersion::V2);
    assert_eq!(two.version(), "2");
    let lt = |r: &Reader<'_>, n: &str| {
        r.objects()[r.find(n).unwrap()].components()[0]
            .logical_type()
            .map(str::to_owned)
    };
    assert_eq!(lt(&two, "fp8").as_deref(), Some("f8_e8m0"));
    assert_eq!(lt(&two, "fp4").as_deref(), Some("f4_e2m1"));
    assert_eq!(
        two.objects()[two.find("csr").unwrap()].format(),
        "zt.sparse_csr/1"
    );
    assert_eq!(
        two.objects()[two.find("mask").unwrap()].components()[0].dtype(),
        DType::Bool
    );
    two.verify().unwrap();
    two.validate_values(two.find("csr").unwrap()).unwrap();
    let back = to(&two, &dir.join("back.zt"), FileVersion::V1_2);
    assert_eq!(back.version(), "1.2.0");
    back.verify().unwrap();
    assert_eq!(lt(&back, "fp8").as_deref(), Some("f8_e8m0fnu"));
    assert_eq!(lt(&back, "fp4").as_deref(), Some("f4_e2m1fn_x2"));
    assert_eq!(
        back.objects()[back.find("csr").unwrap()].format(),
        "sparse_csr"
    );
    assert_eq!(back.attributes(), src.attributes());
    for o in src.objects() {
        for c in o.components() {
            assert_eq!(
                common::read(&back, o.name(), c.role()),
                common::read(&src, o.name(), c.role())
            );
            assert_eq!(
                common::read(&two, o.name(), c.role()),
                common::read(&src, o.name(), c.role())
            );
        }
    }
}

#[test]
fn refusals_name_what_v2_requires() {
    let mut w = Writer::new_with(Vec::new(), &v2()).unwrap();
    // crc32c is a v1.2 digest.
    let e = w
        .add(
            "x",
            DType::U8,
            &[1],
            &[1],
            &WriteOptions::default().with_digest(DigestAlgorithm::Crc32c),
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    // A layout v2 doesn't register must be namespaced and versioned.
    w.begin_object("q", "my_layout", &[1]).unwrap();
    w.add_component("data", DType::U8, None, &[1], &WriteOptions::default())
        .unwrap();
    let e = w.end_object().unwrap_err();
    assert!(e.message().contains("namespaced"), "{e}");
    // Profiles are checked as a reader checks them.
    w.begin_object("s", "sparse_csr", &[2, 2]).unwrap();
    w.add_component(
        "values",
        DType::F32,
        None,
        &common::f32s(&[1.0]),
        &WriteOptions::default(),
    )
    .unwrap();
    w.add_component(
        "indices",
        DType::U64,
        None,
        &common::u64s(&[0]),
        &WriteOptions::default(),
    )
    .unwrap();
    let e = w.end_object().unwrap_err();
    assert!(
        e.message()
            .contains("zt.sparse_csr/1 needs exactly the parts"),
        "{e}"
    );
    // Attributes v2 can't hold.
    let e = w
        .set_file_attributes(Value::Map(vec![(t("u"), Value::Undefined)]))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    let mut deep = Value::Unsigned(1);
    for _ in 0..40 {
        deep = Value::Array(vec![deep]);
    }
    let e = w
        .set_file_attributes(Value::Map(vec![(t("d"), deep)]))
        .unwrap_err();
    assert!(e.message().contains("nest deeper"), "{e}");
    // Attribute keys are text under the name rules (§3.1, §3.5), for the file and for
    // each object, plain and typed: the reader refuses anything else.
    let bad_keys = [
        (t(""), "an attribute name is empty"),
        (t("a\0b"), "holds a NUL at byte 1"),
        (t(&"k".repeat(1025)), "longer than 1024"),
        (Value::Unsigned(7), "keys are text, not"),
    ];
    for (key, says) in bad_keys {
        let map = Value::Map(vec![(key.clone(), Value::Unsigned(1))]);
        let e = w.set_file_attributes(map.clone()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::InvalidArgument);
        assert!(e.message().contains(says), "{e}");
        let e = w.set_object_attributes("q", map).unwrap_err();
        assert!(e.message().contains(says), "{e}");
    }
    let e = w
        .set_file_attribute("", &ztensor::TypedValue::U32(1))
        .unwrap_err();
    assert!(e.message().contains("name is empty"), "{e}");
    // A shape whose product overflows as it is accumulated, though a later dimension is
    // 0: the reader refuses it (§3.3), so the writer does.
    let e = w
        .add(
            "z",
            DType::U8,
            &[1 << 40, 1 << 40, 0],
            &[],
            &WriteOptions::default(),
        )
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    assert!(e.message().contains("overflows u64"), "{e}");
    // An odd count of fp4 values keeps its unused nibble zero.
    let e = w
        .add_typed(
            "f",
            DType::U8,
            Some("f4_e2m1"),
            &[3],
            &[0x21, 0xf3],
            &WriteOptions::default(),
        )
        .unwrap_err();
    assert!(e.message().contains("nibble"), "{e}");
    // Also when zstd: the refused part's input goes, and is not in the next part's frame.
    let zstd = WriteOptions {
        encoding: Encoding::Zstd,
        ..WriteOptions::default()
    };
    w.begin_object("g", "dense", &[3]).unwrap();
    for (bytes, ok) in [([0x21, 0xf3], false), ([0x21, 0x03], true)] {
        w.begin_component("data", DType::U8, Some("f4_e2m1"), &zstd)
            .unwrap();
        w.write(&bytes).unwrap();
        assert_eq!(w.end_component().is_ok(), ok);
    }
    w.end_object().unwrap();
    let bytes = w.finish().unwrap();
    let r = Reader::from_slice(&bytes).unwrap();
    assert_eq!(r.objects().len(), 1);
    assert_eq!(common::read(&r, "g", "data"), [0x21, 0x03]);
    r.verify().unwrap();
}

/// The committed v2 vectors (tests/vectors/v2/: seeds of the fuzzers, and files any
/// reader of this repository can try) are what the writer makes of these models today.
/// `ZT_WRITE_V2_VECTORS=1` rewrites them.
#[test]
fn committed_vectors_are_what_the_writer_makes() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/v2");
    let scratch = common::temp_dir("v2_vectors");
    let write = |name: &str, build: &dyn Fn(&mut Writer)| {
        let path = scratch.join(name);
        let mut w = Writer::create_with(&path, &v2()).unwrap();
        w.set_file_attributes(Value::Map(vec![
            (t("model"), t(name)),
            (t("layers"), Value::Unsigned(2)),
            (t("lr"), Value::Float(0.001)),
        ]))
        .unwrap();
        build(&mut w);
        w.finish().unwrap();
        std::fs::read(&path).unwrap()
    };
    let kinds = write("kinds.zt", &|w| {
        let raw = WriteOptions::default();
        w.add(
            "dense.f32",
            DType::F32,
            &[2, 3],
            &common::f32s(&[1.0, -2.0, 3.5, 0.0, 5.0, 6.25]),
            &raw,
        )
        .unwrap();
        w.add("dense.bf16", DType::BF16, &[4], &common::bytes(1, 8), &raw)
            .unwrap();
        w.add("mask", DType::Bool, &[4], &[1, 0, 0, 1], &raw)
            .unwrap();
        w.add_typed(
            "fp8",
            DType::U8,
            Some("f8_e4m3fn"),
            &[3],
            &[0x38, 0x40, 0xb8],
            &raw,
        )
        .unwrap();
        w.add_typed("fp4", DType::U8, Some("f4_e2m1"), &[3], &[0x21, 0x03], &raw)
            .unwrap();
        w.add_typed(
            "c64",
            DType::F32,
            Some("complex64"),
            &[1],
            &common::f32s(&[1.0, -1.0]),
            &raw,
        )
        .unwrap();
        w.add("scalar", DType::I64, &[], &7i64.to_le_bytes(), &raw)
            .unwrap();
        w.add("empty", DType::F16, &[0, 2], &[], &raw).unwrap();
        w.add(
            "tied",
            DType::F32,
            &[2, 3],
            &common::f32s(&[1.0, -2.0, 3.5, 0.0, 5.0, 6.25]),
            &raw,
        )
        .unwrap();
        w.begin_object("csr", "sparse_csr", &[2, 3]).unwrap();
        w.add_component("values", DType::F32, None, &common::f32s(&[1.0, 2.0]), &raw)
            .unwrap();
        w.add_component("indices", DType::U64, None, &common::u64s(&[0, 2]), &raw)
            .unwrap();
        w.add_component("indptr", DType::U64, None, &common::u64s(&[0, 1, 2]), &raw)
            .unwrap();
        w.end_object().unwrap();
        w.begin_object("coo", "sparse_coo", &[3, 3]).unwrap();
        w.add_component("values", DType::F32, None, &common::f32s(&[4.0]), &raw)
            .unwrap();
        w.add_component("coords", DType::U64, None, &common::u64s(&[1, 2]), &raw)
            .unwrap();
        w.end_object().unwrap();
        w.begin_object("q8", "gguf.q8_0/1", &[1, 32]).unwrap();
        w.add_component("data", DType::U8, None, &common::bytes(2, 34), &raw)
            .unwrap();
        w.set_object_attributes(
            "q8",
            Value::Map(vec![
                (t("elems_per_block"), Value::Unsigned(32)),
                (t("block_bytes"), Value::Unsigned(34)),
            ]),
        )
        .unwrap();
        w.end_object().unwrap();
        w.begin_object("mx", "zt.mx/1", &[1, 32]).unwrap();
        w.add_component(
            "data",
            DType::U8,
            Some("f4_e2m1"),
            &common::bytes(3, 16),
            &raw,
        )
        .unwrap();
        w.add_component("scales", DType::U8, Some("f8_e8m0"), &[127], &raw)
            .unwrap();
        w.set_object_attributes(
            "mx",
            Value::Map(vec![
                (t("block_size"), Value::Unsigned(32)),
                (t("scale_form"), t("e8m0_exponent")),
            ]),
        )
        .unwrap();
        w.end_object().unwrap();
    });
    let zstd = write("zstd.zt", &|w| {
        let z = WriteOptions::zstd(3);
        w.add("a", DType::F32, &[1000], &common::f32s(&[0.5; 1000]), &z)
            .unwrap();
        w.add(
            "b",
            DType::U8,
            &[10],
            &common::bytes(4, 10),
            &z.with_digest(DigestAlgorithm::Sha256),
        )
        .unwrap();
    });
    for (name, bytes) in [("kinds.zt", kinds), ("zstd.zt", zstd)] {
        let committed = dir.join(name);
        if std::env::var_os("ZT_WRITE_V2_VECTORS").is_some() {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(&committed, &bytes).unwrap();
        }
        let on_disk = std::fs::read(&committed).unwrap_or_default();
        assert!(
            on_disk == bytes,
            "{} is not what the writer makes now; rewrite it with ZT_WRITE_V2_VECTORS=1 \
             cargo test --test v2 committed_vectors",
            committed.display()
        );
        let r = Reader::from_slice(&on_disk).unwrap();
        r.verify().unwrap();
        for i in 0..r.objects().len() {
            r.validate_values(i).unwrap();
        }
        assert!(r.content_digest(DigestAlgorithm::Sha256).is_ok());
    }
}

/// The default placement is 4 KiB (docs/format.md, "Placement"): the first blob at 4096,
/// every blob on a 4 KiB boundary, the same tensors and content digest as the canonical
/// file in far fewer bytes; 64 KiB is one option away.
#[test]
fn the_default_placement_is_4_kib() {
    let dir = common::temp_dir("v2_default_placement");
    assert_eq!(CreateOptions::default().placement, Placement::Compact);
    let tensors: Vec<(String, Vec<u8>)> = (0..40)
        .map(|i| {
            (
                format!("t.{i:02}"),
                common::bytes(i, 100 + 1000 * i as usize),
            )
        })
        .collect();
    let write = |name: &str, options: &CreateOptions| {
        let path = dir.join(name);
        let mut w = Writer::create_with(&path, options).unwrap();
        for (name, data) in &tensors {
            add_u8(&mut w, name, data);
        }
        w.finish().unwrap();
        path
    };
    let quick = CreateOptions {
        durable: false,
        ..CreateOptions::default()
    };
    let compact = write("default.zt", &quick);
    let canonical = write("canonical.zt", &v2());
    let (rc, rk) = (
        Reader::open(&compact).unwrap(),
        Reader::open(&canonical).unwrap(),
    );
    assert_eq!(rc.version(), "2");
    let offsets = |r: &Reader| -> Vec<u64> {
        r.objects()
            .iter()
            .map(|o| o.components()[0].offset())
            .collect()
    };
    let (oc, ok) = (offsets(&rc), offsets(&rk));
    assert_eq!(oc[0], 4096);
    assert!(oc.iter().all(|o| o % 4096 == 0), "{oc:?}");
    assert!(oc.iter().any(|o| o % 65536 != 0), "{oc:?}");
    assert_eq!(ok[0], 65536);
    assert!(ok.iter().all(|o| o % 65536 == 0), "{ok:?}");
    // 40 blobs of at most 40 KiB: under half the bytes of 64 KiB each.
    let (sc, sk) = (
        std::fs::metadata(&compact).unwrap().len(),
        std::fs::metadata(&canonical).unwrap().len(),
    );
    assert!(sk > 40 * 65536 && sc < sk / 2, "{sc} {sk}");
    for (i, (name, data)) in tensors.iter().enumerate() {
        assert_eq!(rc.find(name), Some(i));
        assert_eq!(&rc.read_to_vec(i, 0).unwrap(), data);
    }
    rc.verify().unwrap();
    assert_eq!(
        rc.content_digest(DigestAlgorithm::Xxh3).unwrap(),
        rk.content_digest(DigestAlgorithm::Xxh3).unwrap()
    );
}

/// An identical blob is taken back by cutting the file where it began; what the writer
/// still buffered (the magic, the padding before it) goes out first. Before that fix an
/// empty duplicate less than 4 KiB after the last write left a file without its magic.
#[test]
fn a_duplicate_taken_back_keeps_what_was_buffered() {
    let dir = common::temp_dir("v2_duplicate_cut");
    let big = common::bytes(3, 65530);
    for (k, placement) in [Placement::Compact, Placement::Canonical]
        .into_iter()
        .enumerate()
    {
        for first in [None, Some(&big)] {
            let path = dir.join(format!("{k}.{}.zt", first.is_some()));
            let options = CreateOptions { placement, ..v2() };
            let mut w = Writer::create_with(&path, &options).unwrap();
            if let Some(data) = first {
                add_u8(&mut w, "a", data);
            }
            add_u8(&mut w, "b", &[]);
            add_u8(&mut w, "c", &[]);
            w.finish().unwrap();
            assert_eq!(std::fs::read(&path).unwrap()[..8], MAGIC, "{placement:?}");
            let r = Reader::open(&path).unwrap();
            r.verify().unwrap();
            if let Some(data) = first {
                assert_eq!(&r.read_to_vec(r.find("a").unwrap(), 0).unwrap(), data);
            }
            assert_eq!(
                r.read_to_vec(r.find("c").unwrap(), 0).unwrap(),
                Vec::<u8>::new()
            );
        }
    }
}

/// The caller's `max_rank` holds for v2 as for v1.2: a rank-3 tensor under a limit of 2
/// is `Limit`, naming the limit (v2 read only the format's own 64 before).
#[test]
fn the_callers_rank_limit_holds() {
    let dir = common::temp_dir("v2_max_rank");
    let path = dir.join("rank3.zt");
    let mut w = Writer::create_with(&path, &v2()).unwrap();
    w.add(
        "t",
        DType::U8,
        &[1, 2, 3],
        &[0u8; 6],
        &WriteOptions::default(),
    )
    .unwrap();
    w.finish().unwrap();
    let mut options = OpenOptions::default();
    options.limits.max_rank = 3;
    assert_eq!(
        Reader::open_with(&path, &options).unwrap().objects().len(),
        1
    );
    options.limits.max_rank = 2;
    let e = Reader::open_with(&path, &options).err().expect("refused");
    assert_eq!(e.kind(), ErrorKind::Limit, "{e}");
    assert!(e.to_string().contains("over the limit of 2"), "{e}");
}
