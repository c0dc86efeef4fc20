//! Building zTensor v1.x manifests and files by hand, for tests that change one thing of
//! a valid file and check the refusal (tests/validation.rs), and the checks they share:
//! open a file three ways (caller memory, mmap, pread), refused with a kind and a message.

use std::fmt::Debug;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{f32s, u64s};
use ztensor::cbor::{self, Value};
use ztensor::{Error, ErrorKind, Limits, OpenOptions, Reader};

pub fn t(s: &str) -> Value {
    Value::Text(s.to_owned())
}

pub fn u(n: u64) -> Value {
    Value::Unsigned(n)
}

pub fn m(entries: &[(&str, Value)]) -> Value {
    Value::Map(entries.iter().map(|(k, v)| (t(k), v.clone())).collect())
}

pub fn dims(d: &[u64]) -> Value {
    Value::Array(d.iter().map(|&n| u(n)).collect())
}

pub fn comp(dtype: &str, offset: u64, length: u64) -> Value {
    m(&[
        ("dtype", t(dtype)),
        ("offset", u(offset)),
        ("length", u(length)),
    ])
}

pub fn zcomp(dtype: &str, offset: u64, length: u64, uncompressed: u64) -> Value {
    m(&[
        ("dtype", t(dtype)),
        ("offset", u(offset)),
        ("length", u(length)),
        ("uncompressed_length", u(uncompressed)),
        ("encoding", t("zstd")),
    ])
}

pub fn object(shape: &[u64], format: &str, components: &[(&str, Value)]) -> Value {
    m(&[
        ("shape", dims(shape)),
        ("format", t(format)),
        ("components", m(components)),
    ])
}

pub fn root(version: &str, objects: &[(&str, Value)]) -> Value {
    m(&[("version", t(version)), ("objects", m(objects))])
}

pub fn u32s(values: &[u32]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

/// A file under construction: a manifest, and blobs placed at absolute offsets.
#[derive(Clone, Debug)]
pub struct Fixture {
    pub manifest: Value,
    pub blobs: Vec<(u64, Vec<u8>)>,
    pub legacy: bool,
}

/// Finds the value at `path` (map keys, or array indices for legacy manifests).
pub fn at<'v>(mut v: &'v mut Value, path: &[&str]) -> &'v mut Value {
    for key in path {
        v = match v {
            Value::Map(pairs) => {
                &mut pairs
                    .iter_mut()
                    .find(|(k, _)| k.as_text() == Some(key))
                    .unwrap_or_else(|| panic!("no key {key}"))
                    .1
            }
            Value::Array(items) => &mut items[key.parse::<usize>().expect("an index")],
            other => panic!("cannot index {other:?} with {key}"),
        };
    }
    v
}

pub fn entries(v: &mut Value) -> &mut Vec<(Value, Value)> {
    match v {
        Value::Map(pairs) => pairs,
        other => panic!("not a map: {other:?}"),
    }
}

impl Fixture {
    pub fn v1(manifest: Value, blobs: &[(u64, Vec<u8>)]) -> Fixture {
        Fixture {
            manifest,
            blobs: blobs.to_vec(),
            legacy: false,
        }
    }

    pub fn legacy(manifest: Value, blobs: &[(u64, Vec<u8>)]) -> Fixture {
        Fixture {
            manifest,
            blobs: blobs.to_vec(),
            legacy: true,
        }
    }

    /// Header, blobs at their offsets (gaps zero-filled), manifest, size, footer.
    pub fn bytes(&self) -> Vec<u8> {
        assemble(self.legacy, &self.blobs, &cbor::to_vec(&self.manifest))
    }

    /// A copy with the value at `path` replaced, or added when the last key is absent.
    pub fn with(&self, path: &[&str], value: Value) -> Fixture {
        let mut f = self.clone();
        let (last, parent) = path.split_last().expect("a path");
        let pairs = entries(at(&mut f.manifest, parent));
        match pairs.iter_mut().find(|(k, _)| k.as_text() == Some(last)) {
            Some(entry) => entry.1 = value,
            None => pairs.push((t(last), value)),
        }
        f
    }

    /// A copy without the key at `path`.
    pub fn without(&self, path: &[&str]) -> Fixture {
        let mut f = self.clone();
        let (last, parent) = path.split_last().expect("a path");
        let pairs = entries(at(&mut f.manifest, parent));
        let before = pairs.len();
        pairs.retain(|(k, _)| k.as_text() != Some(last));
        assert_eq!(pairs.len(), before - 1, "no key {last}");
        f
    }

    /// A copy where the key `old` of the map at `path` is replaced by `new`.
    pub fn renamed(&self, path: &[&str], old: &str, new: Value) -> Fixture {
        let mut f = self.clone();
        let pairs = entries(at(&mut f.manifest, path));
        pairs
            .iter_mut()
            .find(|(k, _)| k.as_text() == Some(old))
            .expect("the key")
            .0 = new;
        f
    }

    /// A copy where the entry `key` of the map at `path` appears twice.
    pub fn duplicated(&self, path: &[&str], key: &str) -> Fixture {
        let mut f = self.clone();
        let pairs = entries(at(&mut f.manifest, path));
        let entry = pairs
            .iter()
            .find(|(k, _)| k.as_text() == Some(key))
            .expect("the key")
            .clone();
        pairs.push(entry);
        f
    }

    /// A copy with the bytes of blob `i` replaced.
    pub fn with_blob(&self, i: usize, bytes: Vec<u8>) -> Fixture {
        let mut f = self.clone();
        f.blobs[i].1 = bytes;
        f
    }
}

pub fn assemble(legacy: bool, blobs: &[(u64, Vec<u8>)], manifest: &[u8]) -> Vec<u8> {
    let mut out = if legacy {
        b"ZTEN0001".to_vec()
    } else {
        b"ZTEN1000".to_vec()
    };
    for (offset, bytes) in blobs {
        let (start, end) = (*offset as usize, *offset as usize + bytes.len());
        if out.len() < end {
            out.resize(end, 0);
        }
        out[start..end].copy_from_slice(bytes);
    }
    out.extend_from_slice(manifest);
    out.extend((manifest.len() as u64).to_le_bytes());
    if !legacy {
        out.extend_from_slice(b"ZTEN1000");
    }
    out
}

/// `hay` with its only occurrence of `from` replaced by `to`.
pub fn replace_once(hay: &[u8], from: &[u8], to: &[u8]) -> Vec<u8> {
    let hits: Vec<usize> = (0..=hay.len() - from.len())
        .filter(|&i| &hay[i..i + from.len()] == from)
        .collect();
    assert_eq!(hits.len(), 1, "{from:?} must occur exactly once");
    [&hay[..hits[0]], to, &hay[hits[0] + from.len()..]].concat()
}

/// Nesting depth of containers (arrays, maps, tags), as the decoder counts it.
pub fn depth(v: &Value) -> usize {
    match v {
        Value::Array(items) => 1 + items.iter().map(depth).max().unwrap_or(0),
        Value::Map(pairs) => {
            1 + pairs
                .iter()
                .map(|(k, v)| depth(k).max(depth(v)))
                .max()
                .unwrap_or(0)
        }
        Value::Tag(_, inner) => 1 + depth(inner),
        _ => 0,
    }
}

pub fn nested_arrays(levels: usize) -> Value {
    (0..levels).fold(u(0), |inner, _| Value::Array(vec![inner]))
}

/// One zstd frame without a content size in its header, like the reference writer's.
pub fn zstd_frame(data: &[u8]) -> Vec<u8> {
    let mut c = zstd::bulk::Compressor::new(3).unwrap();
    c.set_parameter(zstd::zstd_safe::CParameter::ContentSizeFlag(false))
        .unwrap();
    let frame = c.compress(data).unwrap();
    assert_eq!(
        frame[4] & 0xe0,
        0,
        "the frame header must not carry a content size"
    );
    frame
}

/// A hand-made zstd frame of `blocks` RLE blocks of 128 KiB each: 4 stored bytes per
/// 128 KiB decoded, no content size in the header.
pub fn zstd_rle_bomb(blocks: usize) -> Vec<u8> {
    // Magic, frame header descriptor (no content size, not single segment), window 128 KiB.
    let mut f = vec![0x28, 0xb5, 0x2f, 0xfd, 0x00, 0x38];
    for i in 0..blocks {
        let last = u32::from(i + 1 == blocks);
        let header = (128 * 1024) << 3 | 1 << 1 | last; // size, type RLE, last-block bit
        f.extend_from_slice(&header.to_le_bytes()[..3]);
        f.push(0xab);
    }
    f
}

// ---------------------------------------------------------------------------------------
// Opening and asserting
// ---------------------------------------------------------------------------------------

pub fn limits(change: impl FnOnce(&mut Limits)) -> OpenOptions {
    let mut options = OpenOptions::default();
    change(&mut options.limits);
    options
}

/// Opens `bytes` from caller memory, from a mapped file and through pread.
pub fn open_three_ways(bytes: &[u8], options: &OpenOptions) -> Vec<Result<(), Error>> {
    static COUNTER: AtomicUsize = AtomicUsize::new(0);
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("validation");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!(
        "{}-{}.zt",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::write(&path, bytes).unwrap();
    let results = vec![
        Reader::from_slice_with(bytes, options).map(drop),
        Reader::open_with(
            &path,
            &OpenOptions {
                use_mmap: true,
                ..*options
            },
        )
        .map(drop),
        Reader::open_with(
            &path,
            &OpenOptions {
                use_mmap: false,
                ..*options
            },
        )
        .map(drop),
    ];
    std::fs::remove_file(&path).unwrap();
    results
}

#[track_caller]
pub fn assert_err<T: Debug>(result: Result<T, Error>, kind: ErrorKind, needle: &str) {
    let e = result.expect_err("must be refused");
    assert_eq!(e.kind(), kind, "wrong kind for: {e}");
    assert!(
        e.message().contains(needle),
        "message {:?} lacks {needle:?}",
        e.message()
    );
}

/// Versions a v1.2 fixture is also tried as: the manifest rules are the same for v1.1.
pub fn versions(f: &Fixture) -> Vec<Fixture> {
    let is_v12 =
        matches!(&f.manifest, Value::Map(_)) && f.manifest.get("version") == Some(&t("1.2.0"));
    let mut all = vec![f.clone()];
    if is_v12 {
        all.push(f.with(&["version"], t("1.1.0")));
    }
    all
}

#[track_caller]
pub fn opens_with(good: &Fixture, options: &OpenOptions) {
    for f in versions(good) {
        for r in open_three_ways(&f.bytes(), options) {
            r.unwrap_or_else(|e| panic!("the unmutated file must open: {e}"));
        }
    }
}

#[track_caller]
pub fn opens(good: &Fixture) {
    opens_with(good, &OpenOptions::default())
}

/// `good` opens and `bad` is refused with `kind` and a message containing `needle`.
#[track_caller]
pub fn refused_with(
    good: &Fixture,
    bad: &Fixture,
    options: &OpenOptions,
    kind: ErrorKind,
    needle: &str,
) {
    opens_with(good, options);
    for f in versions(bad) {
        refused_bytes(&f.bytes(), options, kind, needle);
    }
}

#[track_caller]
pub fn refused(good: &Fixture, bad: &Fixture, kind: ErrorKind, needle: &str) {
    refused_with(good, bad, &OpenOptions::default(), kind, needle)
}

/// `f` (and its v1.1 twin) is refused under `options` with `kind` and `needle`.
#[track_caller]
pub fn refused_under(f: &Fixture, options: &OpenOptions, kind: ErrorKind, needle: &str) {
    for v in versions(f) {
        refused_bytes(&v.bytes(), options, kind, needle);
    }
}

#[track_caller]
pub fn refused_bytes(bytes: &[u8], options: &OpenOptions, kind: ErrorKind, needle: &str) {
    for r in open_three_ways(bytes, options) {
        assert_err(r, kind, needle);
    }
}

#[track_caller]
pub fn open_ok(f: &Fixture) -> Vec<u8> {
    let bytes = f.bytes();
    Reader::from_slice(&bytes).unwrap_or_else(|e| panic!("must open: {e}"));
    bytes
}

// ---------------------------------------------------------------------------------------
// Valid base files
// ---------------------------------------------------------------------------------------

/// Path of a key of the data component of object "w".
pub fn d(key: &'static str) -> [&'static str; 5] {
    ["objects", "w", "components", "data", key]
}

/// Path of a key of object "w".
pub fn w(key: &'static str) -> [&'static str; 3] {
    ["objects", "w", key]
}

/// One dense f32 [2, 2] object "w", its 16 bytes at offset 64, manifest right after.
pub fn dense() -> Fixture {
    let manifest = root(
        "1.2.0",
        &[(
            "w",
            object(&[2, 2], "dense", &[("data", comp("f32", 64, 16))]),
        )],
    );
    Fixture::v1(manifest, &[(64, f32s(&[1.0, 2.0, 3.0, 4.0]))])
}

pub fn dense_values() -> Vec<u8> {
    f32s(&(0..16).map(|i| i as f32).collect::<Vec<_>>())
}

/// A dense f32 [4, 4] object "w" whose data is the given zstd frame, said to decode to
/// `uncompressed` bytes.
pub fn zstd_dense(frame: Vec<u8>, uncompressed: u64) -> Fixture {
    let c = zcomp("f32", 64, frame.len() as u64, uncompressed);
    Fixture::v1(
        root("1.2.0", &[("w", object(&[4, 4], "dense", &[("data", c)]))]),
        &[(64, frame)],
    )
}

pub fn zstd_ok() -> Fixture {
    zstd_dense(zstd_frame(&dense_values()), 64)
}

/// Two non-empty objects: "a" f32 [32] at [64, 192) and "b" f32 [16] at [192, 256).
pub fn two_blobs() -> Fixture {
    let manifest = root(
        "1.2.0",
        &[
            (
                "a",
                object(&[32], "dense", &[("data", comp("f32", 64, 128))]),
            ),
            (
                "b",
                object(&[16], "dense", &[("data", comp("f32", 192, 64))]),
            ),
        ],
    );
    Fixture::v1(
        manifest,
        &[(64, super::bytes(1, 128)), (192, super::bytes(2, 64))],
    )
}

/// A complex64 object "w": shape [2], f32 storage, 2 * 2 * 4 = 16 bytes.
pub fn complex() -> Fixture {
    let c = m(&[
        ("dtype", t("f32")),
        ("type", t("complex64")),
        ("offset", u(64)),
        ("length", u(16)),
    ]);
    Fixture::v1(
        root("1.2.0", &[("w", object(&[2], "dense", &[("data", c)]))]),
        &[(64, f32s(&[1.0, -1.0, 0.5, 2.0]))],
    )
}

/// An fp8 object "w": shape [4], u8 storage with type f8_e4m3fn.
pub fn fp8() -> Fixture {
    let c = m(&[
        ("dtype", t("u8")),
        ("type", t("f8_e4m3fn")),
        ("offset", u(64)),
        ("length", u(4)),
    ]);
    Fixture::v1(
        root("1.2.0", &[("w", object(&[4], "dense", &[("data", c)]))]),
        &[(64, vec![0x38, 0x40, 0xb8, 0])],
    )
}

/// A 2 x 3 CSR matrix "s" [[1, 0, 2], [0, 3, 0]]: values @64, indices @128, indptr @192.
pub fn csr() -> Fixture {
    let manifest = root(
        "1.2.0",
        &[(
            "s",
            object(
                &[2, 3],
                "sparse_csr",
                &[
                    ("values", comp("f32", 64, 12)),
                    ("indices", comp("u64", 128, 24)),
                    ("indptr", comp("u64", 192, 24)),
                ],
            ),
        )],
    );
    Fixture::v1(
        manifest,
        &[
            (64, f32s(&[1.0, 2.0, 3.0])),
            (128, u64s(&[0, 2, 1])),
            (192, u64s(&[0, 2, 3])),
        ],
    )
}

pub fn sparse_path(role: &'static str, key: &'static str) -> [&'static str; 5] {
    ["objects", "s", "components", role, key]
}

/// A 2 x 3 COO matrix "s" with values at (0, 2) and (1, 0): coords in SoA order.
pub fn coo() -> Fixture {
    let manifest = root(
        "1.2.0",
        &[(
            "s",
            object(
                &[2, 3],
                "sparse_coo",
                &[
                    ("values", comp("f32", 64, 8)),
                    ("coords", comp("u64", 128, 32)),
                ],
            ),
        )],
    );
    Fixture::v1(
        manifest,
        &[(64, f32s(&[5.0, 6.0])), (128, u64s(&[0, 1, 2, 0]))],
    )
}

/// A bool [4] object "w".
pub fn bools() -> Fixture {
    Fixture::v1(
        root(
            "1.2.0",
            &[("w", object(&[4], "dense", &[("data", comp("bool", 64, 4))]))],
        ),
        &[(64, vec![0, 1, 1, 0])],
    )
}

/// A v1.2 file with no objects: header, manifest, size, footer.
pub fn empty() -> Fixture {
    Fixture::v1(root("1.2.0", &[]), &[])
}

/// A legacy v0.1 file with one dense float32 [2, 2] tensor "w" at offset 64.
pub fn legacy_dense() -> Fixture {
    let tensor = m(&[
        ("name", t("w")),
        ("offset", u(64)),
        ("size", u(16)),
        ("dtype", t("float32")),
        ("shape", dims(&[2, 2])),
        ("encoding", t("raw")),
        ("layout", t("dense")),
        ("data_endianness", t("little")),
    ]);
    Fixture::legacy(
        Value::Array(vec![tensor]),
        &[(64, f32s(&[1.0, 2.0, 3.0, 4.0]))],
    )
}

pub fn legacy_sparse(layout: &str, blob: Vec<u8>) -> Fixture {
    let f = legacy_dense()
        .with(&["0", "layout"], t(layout))
        .with(&["0", "shape"], dims(&[2, 3]));
    let f = f.with(&["0", "size"], u(blob.len() as u64));
    Fixture {
        blobs: vec![(64, blob)],
        ..f
    }
}

/// Legacy COO records [row u64][col u64][value f32]: (0, 1) = 1.5 and (1, 2) = -2.
pub fn legacy_coo() -> Fixture {
    let blob = [u64s(&[0, 1]), f32s(&[1.5]), u64s(&[1, 2]), f32s(&[-2.0])].concat();
    legacy_sparse("sparsecoo", blob)
}

/// Legacy CSR blob [indptr u64 x 3][indices u64 x 2][values f32 x 2].
pub fn legacy_csr() -> Fixture {
    legacy_sparse(
        "sparsecsr",
        [u64s(&[0, 1, 2]), u64s(&[2, 0]), f32s(&[1.5, -2.0])].concat(),
    )
}
