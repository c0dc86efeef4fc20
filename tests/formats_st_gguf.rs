//! safetensors and GGUF files built by hand, read through the same model as zTensor files:
//! every dtype and ggml type, attributes, shapes (scalar, zero-size, GGUF's reversed
//! dims), object order, zero-copy views (aligned and deliberately misaligned data), and
//! every validation rule with its exact `ErrorKind`. Each file is opened three ways
//! (caller memory, mmap, pread) and all three must agree.

mod common;

use std::sync::atomic::{AtomicUsize, Ordering};

use ErrorKind::{Format, Limit, Unsupported};
use common::f32s;
use common::gguf::{Gguf, gstr};
use ztensor::cbor::Value;
use ztensor::{DType, Error, ErrorKind, Limits, OpenOptions, Reader};

// ---------------------------------------------------------------------------------------
// Opening three ways
// ---------------------------------------------------------------------------------------

/// 64-byte aligned copy of `bytes`, so memory views can be zero-copy.
struct Aligned {
    storage: Vec<u128>,
    skip: usize,
    len: usize,
}

impl Aligned {
    fn new(bytes: &[u8]) -> Aligned {
        let mut storage = vec![0u128; bytes.len().div_ceil(16) + 4];
        let skip = (64 - storage.as_ptr() as usize % 64) % 64;
        // SAFETY: the u128 buffer viewed as bytes; skip + len fits in the 4 spare u128.
        let raw = unsafe {
            std::slice::from_raw_parts_mut(storage.as_mut_ptr().cast::<u8>(), storage.len() * 16)
        };
        raw[skip..skip + bytes.len()].copy_from_slice(bytes);
        Aligned {
            storage,
            skip,
            len: bytes.len(),
        }
    }
    fn bytes(&self) -> &[u8] {
        // SAFETY: as in new.
        let raw = unsafe {
            std::slice::from_raw_parts(self.storage.as_ptr().cast::<u8>(), self.storage.len() * 16)
        };
        &raw[self.skip..self.skip + self.len]
    }
}

static FILES: AtomicUsize = AtomicUsize::new(0);

/// Writes `bytes` to a fresh file under the target dir.
fn file_of(bytes: &[u8]) -> std::path::PathBuf {
    let dir = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("formats_st_gguf");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join(format!(
        "f{}-{}.bin",
        std::process::id(),
        FILES.fetch_add(1, Ordering::SeqCst)
    ));
    std::fs::write(&path, bytes).unwrap();
    path
}

fn with_limits(limits: Limits, use_mmap: bool) -> OpenOptions {
    OpenOptions {
        use_mmap,
        limits,
        ..OpenOptions::default()
    }
}

/// Opens `bytes` from aligned memory, by mmap and by pread, runs `f` on each reader
/// (with whether views should be zero-copy when aligned), and returns the first error
/// after checking all three agree.
fn open3(bytes: &[u8], limits: Limits, f: impl Fn(&Reader<'_>, bool)) -> Result<(), Error> {
    let mem = Aligned::new(bytes);
    let path = file_of(bytes);
    let results = [
        Reader::from_slice_with(mem.bytes(), &with_limits(limits, true)).map(|r| {
            f(&r, true);
        }),
        Reader::open_with(&path, &with_limits(limits, true)).map(|r| f(&r, true)),
        Reader::open_with(&path, &with_limits(limits, false)).map(|r| f(&r, false)),
    ];
    std::fs::remove_file(&path).unwrap();
    let kinds: Vec<Option<ErrorKind>> = results
        .iter()
        .map(|r| r.as_ref().err().map(Error::kind))
        .collect();
    assert!(
        kinds.iter().all(|k| *k == kinds[0]),
        "memory, mmap and pread disagree: {results:?}"
    );
    results.into_iter().next().unwrap()
}

/// The file must open (all three ways) and pass `f`.
fn opens(bytes: &[u8], f: impl Fn(&Reader<'_>, bool)) {
    open3(bytes, Limits::default(), f).unwrap_or_else(|e| panic!("refused: {e}"));
}

/// The file must be refused with `kind` and a message containing `needle`.
#[track_caller]
fn refused(bytes: &[u8], kind: ErrorKind, needle: &str) {
    refused_with(bytes, Limits::default(), kind, needle)
}

#[track_caller]
fn refused_with(bytes: &[u8], limits: Limits, kind: ErrorKind, needle: &str) {
    match open3(bytes, limits, |_, _| {}) {
        Ok(()) => panic!("opened, expected {kind:?} mentioning {needle:?}"),
        Err(e) => {
            assert_eq!(e.kind(), kind, "{e}");
            assert!(
                e.message().contains(needle),
                "{e} does not mention {needle:?}"
            );
        }
    }
}

fn t(s: &str) -> Value {
    Value::Text(s.to_owned())
}

// ---------------------------------------------------------------------------------------
// safetensors
// ---------------------------------------------------------------------------------------

/// A safetensors file from a header (padded with spaces to `pad_to`-byte multiples, as
/// the reference writer pads to 8) and the data section.
fn st_raw(header: &str, data: &[u8], pad_to: usize) -> Vec<u8> {
    let mut h = header.as_bytes().to_vec();
    while !h.len().is_multiple_of(pad_to) {
        h.push(b' ');
    }
    let mut out = (h.len() as u64).to_le_bytes().to_vec();
    out.extend(&h);
    out.extend(data);
    out
}

/// One tensor entry's JSON.
fn st_entry(dtype: &str, shape: &[u64], begin: usize, end: usize) -> String {
    format!(r#"{{"dtype":"{dtype}","shape":{shape:?},"data_offsets":[{begin},{end}]}}"#)
}

/// A file of tensors laid out back to back in the given order, header in the same order.
fn st(tensors: &[(&str, &str, &[u64], &[u8])], metadata: Option<&str>) -> Vec<u8> {
    let mut parts = Vec::new();
    if let Some(m) = metadata {
        parts.push(format!(r#""__metadata__":{m}"#));
    }
    let mut data = Vec::new();
    for (name, dtype, shape, bytes) in tensors {
        let begin = data.len();
        data.extend(*bytes);
        parts.push(format!(
            "\"{name}\":{}",
            st_entry(dtype, shape, begin, data.len())
        ));
    }
    st_raw(&format!("{{{}}}", parts.join(",")), &data, 8)
}

fn w4() -> Vec<u8> {
    f32s(&[1.0, 2.0, 3.0, 4.0])
}

#[test]
fn safetensors_every_dtype() {
    let cases: &[(&str, DType, Option<&str>, usize)] = &[
        ("F64", DType::F64, None, 8),
        ("F32", DType::F32, None, 4),
        ("F16", DType::F16, None, 2),
        ("BF16", DType::BF16, None, 2),
        ("I64", DType::I64, None, 8),
        ("I32", DType::I32, None, 4),
        ("I16", DType::I16, None, 2),
        ("I8", DType::I8, None, 1),
        ("U64", DType::U64, None, 8),
        ("U32", DType::U32, None, 4),
        ("U16", DType::U16, None, 2),
        ("U8", DType::U8, None, 1),
        ("BOOL", DType::Bool, None, 1),
        ("F8_E4M3", DType::U8, Some("f8_e4m3fn"), 1),
        ("F8_E5M2", DType::U8, Some("f8_e5m2"), 1),
        ("F8_E4M3FNUZ", DType::U8, Some("f8_e4m3fnuz"), 1),
        ("F8_E5M2FNUZ", DType::U8, Some("f8_e5m2fnuz"), 1),
        ("C64", DType::F32, Some("complex64"), 8),
    ];
    // Largest elements first so that every tensor is aligned to its element size.
    let mut sorted: Vec<_> = cases.to_vec();
    sorted.sort_by_key(|c| std::cmp::Reverse(c.3));
    let datas: Vec<Vec<u8>> = sorted
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut b = common::bytes(i as u64, 6 * c.3);
            if c.1 == DType::Bool {
                b.iter_mut().for_each(|x| *x &= 1);
            }
            b
        })
        .collect();
    let names: Vec<String> = sorted.iter().map(|c| format!("t_{}", c.0)).collect();
    let tensors: Vec<(&str, &str, &[u64], &[u8])> = sorted
        .iter()
        .zip(&datas)
        .zip(&names)
        .map(|((c, d), n)| (n.as_str(), c.0, &[2u64, 3][..], &d[..]))
        .collect();
    let file = st(&tensors, None);
    opens(&file, |r, mapped| {
        assert_eq!(r.container().name(), "safetensors");
        assert_eq!(r.version(), "1");
        assert!(r.attributes().is_none());
        assert_eq!(r.objects().len(), cases.len());
        for (i, (c, d)) in sorted.iter().zip(&datas).enumerate() {
            let o = &r.objects()[i];
            assert_eq!(o.name(), names[i]);
            assert_eq!(o.format(), "dense");
            assert_eq!(o.shape(), &[2, 3]);
            let comp = &o.components()[0];
            assert_eq!(
                (comp.role(), comp.dtype(), comp.logical_type()),
                ("data", c.1, c.2)
            );
            let v = r.view(i, 0).unwrap();
            assert_eq!(v.data, &d[..], "{}", c.0);
            assert_eq!(v.zero_copy, mapped, "{}", c.0);
        }
        assert!(r.validate_values(r.find("t_BOOL").unwrap()).is_ok());
    });
}

#[test]
fn safetensors_scalar_empty_and_metadata() {
    let meta = r#"{"format":"pt","note":"ünï\u0000x","empty":""}"#;
    let file = st(
        &[
            ("s", "F32", &[], &f32s(&[3.5])),
            ("e", "F32", &[0, 3], &[]),
            ("z", "I64", &[4, 0], &[]),
        ],
        Some(meta),
    );
    opens(&file, |r, mapped| {
        let attrs = r.attributes().unwrap();
        assert_eq!(
            attrs,
            Value::Map(vec![
                (t("format"), t("pt")),
                (t("note"), t("ünï\0x")),
                (t("empty"), t("")),
            ])
        );
        let s = r.find("s").unwrap();
        assert_eq!(r.objects()[s].shape(), &[] as &[u64]);
        assert_eq!(r.view(s, 0).unwrap().data, &f32s(&[3.5])[..]);
        for name in ["e", "z"] {
            let i = r.find(name).unwrap();
            let v = r.view(i, 0).unwrap();
            assert!(v.data.is_empty());
            assert_eq!(v.zero_copy, mapped);
        }
        assert_eq!(r.objects()[r.find("z").unwrap()].shape(), &[4, 0]);
    });
    // null metadata is none; an empty object is an empty map.
    opens(
        &st(&[("s", "F32", &[1], &w4()[..4])], Some("null")),
        |r, _| assert!(r.attributes().is_none()),
    );
    opens(
        &st(&[("s", "F32", &[1], &w4()[..4])], Some("{}")),
        |r, _| assert_eq!(r.attributes(), Some(Value::Map(vec![]))),
    );
    // A one-key map that looks like our JSON spelling of bytes is still metadata.
    opens(&st(&[], Some(r#"{"$bytes":"AB"}"#)), |r, _| {
        assert_eq!(
            r.attributes(),
            Some(Value::Map(vec![(t("$bytes"), t("ab"))]))
        )
    });
    // A file of metadata only, and the smallest file: "{}".
    opens(&st(&[], Some(r#"{"a":"b"}"#)), |r, _| {
        assert_eq!(r.objects().len(), 0)
    });
    opens(&st_raw("{}", &[], 1), |r, _| {
        assert_eq!(r.objects().len(), 0)
    });
}

#[test]
fn safetensors_headers_may_begin_with_whitespace() {
    // As safetensors' own tests have it: JSON whitespace before the '{', even more of it
    // than the first bytes show.
    for pad in ["\n", " \t\r\n", "                  "] {
        let header = format!(r#"{pad}{{"w":{}}}"#, st_entry("F32", &[4], 0, 16));
        opens(&st_raw(&header, &w4(), 8), |r, _| {
            assert_eq!(r.container(), ztensor::Container::Safetensors);
            assert_eq!(r.objects()[0].name(), "w");
            assert_eq!(r.read_to_vec(0, 0).unwrap(), w4());
        });
    }
    // Whitespace, then no JSON object: refused by the parser, with a message.
    refused(
        &st_raw("          [1]", &[], 8),
        ErrorKind::Format,
        "safetensors header",
    );
    // Neither whitespace nor '{': not a tensor file, and the message shows the bytes
    // as C users can read them.
    let mut junk = 16u64.to_le_bytes().to_vec();
    junk.extend(b"\x06xxxxxxxxxxxxxxx");
    let e = Reader::from_slice(&junk).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Format);
    assert_eq!(
        e.message(),
        "not a zTensor, safetensors, GGUF, Tensogram, PyTorch, NumPy or ONNX file: the header magic is \"\\x10\\x00\\x00\\x00\\x00\\x00\\x00\\x00\""
    );
}

#[test]
fn safetensors_objects_come_in_data_order() {
    let a = w4();
    let header = format!(
        "{{\"late\":{},\"early\":{},\"empty\":{},\"mid\":{}}}",
        st_entry("F32", &[2], 8, 16),
        st_entry("F32", &[2], 0, 8),
        st_entry("F32", &[0], 16, 16),
        st_entry("U8", &[0], 8, 8),
    );
    opens(&st_raw(&header, &a, 8), |r, _| {
        let names: Vec<&str> = r.objects().iter().map(|o| o.name()).collect();
        assert_eq!(names, ["early", "late", "mid", "empty"]);
        assert_eq!(r.view(1, 0).unwrap().data, &a[8..16]);
    });
    // Unknown keys in an entry are ignored; gaps and trailing bytes are accepted.
    let header = r#"{"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8],"extra":[1,{"y":null}]}}"#;
    opens(
        &st_raw(header, &[0, 0, 0, 0, 1, 2, 3, 4, 9, 9], 8),
        |r, _| {
            assert_eq!(r.view(0, 0).unwrap().data, &[1, 2, 3, 4]);
        },
    );
}

#[test]
fn safetensors_misaligned_data_is_copied_aligned() {
    // Header padded to 8: the f32 at data offset 0 is 4-aligned and lent out; at data
    // offset 1 (a u8 first) it is not, and the view is an aligned copy.
    let aligned = st(&[("w", "F32", &[4], &w4())], None);
    opens(&aligned, |r, mapped| {
        let v = r.view(0, 0).unwrap();
        assert_eq!(v.data, &w4()[..]);
        assert_eq!(v.zero_copy, mapped);
    });
    let mut data = vec![7u8];
    data.extend(w4());
    let header = format!(
        "{{\"b\":{},\"w\":{}}}",
        st_entry("U8", &[1], 0, 1),
        st_entry("F32", &[4], 1, 17)
    );
    let misaligned = st_raw(&header, &data, 8);
    opens(&misaligned, |r, mapped| {
        let w = r.find("w").unwrap();
        assert_eq!(r.objects()[w].components()[0].offset() % 4, 1);
        let v = r.view(w, 0).unwrap();
        assert_eq!(v.data, &w4()[..]);
        assert!(!v.zero_copy);
        assert_eq!(v.data.as_ptr() as usize % 64, 0);
        // The u8 before it is lent out whatever its offset.
        assert_eq!(r.view(r.find("b").unwrap(), 0).unwrap().zero_copy, mapped);
    });
    // An unpadded header (odd length) misaligns everything wider than a byte.
    let odd = st_raw(
        r#"{"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}}"#,
        &w4(),
        1,
    );
    assert_eq!(odd.len() % 2, 1);
    opens(&odd, |r, _| {
        let v = r.view(0, 0).unwrap();
        assert_eq!(v.data, &w4()[..]);
        assert!(!v.zero_copy);
    });
}

#[test]
fn safetensors_validation() {
    let d = w4();
    let one = |entry: &str| st_raw(&format!("{{\"w\":{entry}}}"), &d, 8);
    let good = one(&st_entry("F32", &[4], 0, 16));
    opens(&good, |_, _| {});

    // Header length and encoding.
    let limits = Limits {
        max_manifest_size: 16,
        ..Limits::default()
    };
    refused_with(&good, limits, Limit, "over the manifest limit of 16");
    let mut past = good.clone();
    past[..8].copy_from_slice(&(good.len() as u64).to_le_bytes());
    refused(&past, Format, "reaches past the end of the");
    let mut not_utf8 = good.clone();
    not_utf8[10] = 0xff;
    refused(&not_utf8, Format, "not UTF-8 (bad byte at file offset 10)");
    refused(
        &st_raw(r#"{"w":1,}"#, &[], 8),
        Format,
        "JSON error at file offset",
    );
    refused(
        &st_raw(
            &format!("{{\"w\":{0},\"w\":{0}}}", st_entry("F32", &[4], 0, 16)),
            &d,
            8,
        ),
        Format,
        "safetensors header: duplicate object name 'w'",
    );
    let deep = format!("{{\"w\":{}{}}}", "[".repeat(200), "]".repeat(200));
    refused(&st_raw(&deep, &[], 8), Limit, "nesting deeper than 128");
    // A header that looks like our JSON spelling of bytes is a tensor named "$bytes".
    refused(
        &st_raw(r#"{"$bytes":"00"}"#, &[], 8),
        Format,
        "safetensors tensor '$bytes': the entry must be a JSON object, not text",
    );
    refused(&st_raw("{} x", &[], 8), Format, "trailing characters");

    // Metadata.
    refused(
        &st(&[], Some(r#"{"a":1}"#)),
        Format,
        "__metadata__ value of \"a\" must be a string",
    );
    refused(
        &st(&[], Some(r#"["a"]"#)),
        Format,
        "__metadata__ must be an object",
    );

    // Entries.
    refused(
        &one("[1]"),
        Format,
        "tensor 'w': the entry must be a JSON object, not array",
    );
    for key in ["dtype", "shape", "data_offsets"] {
        let entry = st_entry("F32", &[4], 0, 16).replace(&format!("\"{key}\""), "\"other\"");
        refused(
            &one(&entry),
            Format,
            &format!("lacks the required key '{key}'"),
        );
    }
    refused(
        &one(r#"{"dtype":4,"shape":[4],"data_offsets":[0,16]}"#),
        Format,
        "'dtype' must be a string",
    );
    refused(
        &one(&st_entry("Q4", &[4], 0, 16)),
        Unsupported,
        "unknown safetensors dtype \"Q4\"",
    );
    // The sub-byte floats open; their sizes are whole bytes of packed values.
    for (dtype, n) in [
        ("F8_E8M0", 16),
        ("F4", 32),
        ("F6_E2M3", 20),
        ("F6_E3M2", 20),
    ] {
        let bytes = if dtype.starts_with("F6") { 15 } else { 16 };
        let mut file = st_raw(
            &format!("{{\"w\":{}}}", st_entry(dtype, &[n], 0, bytes)),
            &w4(),
            8,
        );
        if bytes == 15 {
            file.truncate(file.len() - 1);
        }
        opens(&file, |r, _| {
            assert_eq!(r.objects()[0].components()[0].length(), bytes as u64)
        });
    }
    refused(
        &one(&st_entry("F4", &[31], 0, 16)),
        Format,
        "shape [31] of F4 is not a whole number of bytes (f4_e2m1fn_x2 packs several values per byte)",
    );
    refused(
        &one(r#"{"dtype":"F32","shape":[-4],"data_offsets":[0,16]}"#),
        Format,
        "must be a non-negative integer, not negative integer",
    );
    refused(
        &one(r#"{"dtype":"F32","shape":[4.0],"data_offsets":[0,16]}"#),
        Format,
        "not float",
    );
    refused(
        &one(r#"{"dtype":"F32","shape":4,"data_offsets":[0,16]}"#),
        Format,
        "'shape' must be an array",
    );
    let rank65 = vec![1u64; 65];
    refused(
        &one(&st_entry("F32", &rank65, 0, 4)),
        Limit,
        "65 dimensions, over the limit of 64",
    );
    refused(
        &one(r#"{"dtype":"F32","shape":[4],"data_offsets":[0]}"#),
        Format,
        "array of two integers",
    );
    refused(
        &one(r#"{"dtype":"F32","shape":[4],"data_offsets":[0,18446744073709551616]}"#),
        Format,
        "two non-negative integers",
    );
    refused(
        &one(&st_entry("F32", &[4], 16, 0)),
        Format,
        "[16, 0) begin after they end",
    );
    refused(
        &one(&st_entry("F32", &[3], 0, 16)),
        Format,
        "[0, 16) hold 16 bytes but shape [3] of F32 needs 12",
    );
    refused(
        &one(&st_entry("F32", &[1 << 62, 4], 0, 16)),
        Format,
        "byte size of shape [4611686018427387904, 4] of F32 overflows",
    );
    refused(
        &one(&st_entry("F32", &[1 << 62], 0, 16)),
        Format,
        "overflows",
    );
    refused(
        &one(&st_entry("F32", &[8], 0, 32)),
        Format,
        "[0, 32) reach past the end of the data section, which holds 16 bytes",
    );
    refused(
        &one(&st_entry("C64", &[3], 0, 16)),
        Format,
        "shape [3] of C64 needs 24",
    );
    let overlap = format!(
        "{{\"a\":{},\"b\":{}}}",
        st_entry("F32", &[3], 0, 12),
        st_entry("F32", &[2], 8, 16)
    );
    refused(
        &st_raw(&overlap, &d, 8),
        Format,
        "tensors 'a' and 'b' overlap",
    );

    // Names.
    refused(
        &st_raw(&format!("{{\"\":{}}}", st_entry("F32", &[4], 0, 16)), &d, 8),
        Format,
        "name is empty",
    );
    refused(
        &st_raw(
            &format!("{{\"a\\u0000b\":{}}}", st_entry("F32", &[4], 0, 16)),
            &d,
            8,
        ),
        Format,
        "NUL",
    );
    let long = "n".repeat(65537);
    refused(
        &st_raw(
            &format!("{{\"{long}\":{}}}", st_entry("F32", &[4], 0, 16)),
            &d,
            8,
        ),
        Limit,
        "65537 bytes, over the limit",
    );

    // Bool bytes are checked on request, as for zTensor files.
    opens(&st(&[("b", "BOOL", &[2], &[1, 2])], None), |r, _| {
        let e = r.validate_values(0).unwrap_err();
        assert_eq!(e.kind(), Format, "{e}");
    });
}

#[test]
fn safetensors_every_prefix_is_refused() {
    let file = st(
        &[("a", "F32", &[4], &w4()), ("b", "I8", &[3], &[1, 2, 3])],
        Some(r#"{"k":"v"}"#),
    );
    for cut in 0..file.len() {
        let e = Reader::from_slice(&file[..cut]).expect_err(&format!("prefix {cut} opened"));
        assert_eq!(e.kind(), Format, "prefix {cut}: {e}");
    }
}

// ---------------------------------------------------------------------------------------
// GGUF
// ---------------------------------------------------------------------------------------

/// GGUF value type ids.
const U8: u32 = 0;
const I8: u32 = 1;
const U16: u32 = 2;
const I16: u32 = 3;
const U32: u32 = 4;
const I32: u32 = 5;
const F32: u32 = 6;
const BOOL: u32 = 7;
const STRING: u32 = 8;
const ARRAY: u32 = 9;
const U64: u32 = 10;
const I64: u32 = 11;
const F64: u32 = 12;

fn arr(elem: u32, count: u64, items: &[u8]) -> Vec<u8> {
    let mut v = elem.to_le_bytes().to_vec();
    v.extend(count.to_le_bytes());
    v.extend(items);
    v
}

#[test]
fn gguf_plain_types_with_reversed_dims() {
    // (ggml type id, dtype)
    let types = [
        (0u32, DType::F32),
        (1, DType::F16),
        (30, DType::BF16),
        (28, DType::F64),
        (24, DType::I8),
        (25, DType::I16),
        (26, DType::I32),
        (27, DType::I64),
    ];
    let mut g = Gguf::new();
    let mut datas = Vec::new();
    for (i, (id, dtype)) in types.iter().enumerate() {
        // ne = [4, 3, 2]: 4 fastest-varying, so the row-major shape is [2, 3, 4].
        let d = common::bytes(i as u64, 24 * dtype.size());
        g = g.tensor(&format!("t{id}"), &[4, 3, 2], *id, &d);
        datas.push(d);
    }
    g = g
        .tensor("vec", &[5], 0, &f32s(&[1.0, 2.0, 3.0, 4.0, 5.0]))
        .tensor("scalar", &[], 0, &f32s(&[9.0]))
        .tensor("empty", &[4, 0], 0, &[]);
    let file = g.build();
    opens(&file, |r, mapped| {
        assert_eq!(r.container().name(), "gguf");
        assert_eq!(r.version(), "3");
        assert_eq!(r.attributes(), Some(Value::Map(vec![])));
        for (i, (id, dtype)) in types.iter().enumerate() {
            let o = &r.objects()[i];
            assert_eq!(o.name(), format!("t{id}"));
            assert_eq!(o.format(), "dense");
            assert_eq!(o.shape(), &[2, 3, 4]);
            assert!(o.attributes().is_none());
            let c = &o.components()[0];
            assert_eq!(
                (c.role(), c.dtype(), c.logical_type()),
                ("data", *dtype, None)
            );
            let v = r.view(i, 0).unwrap();
            assert_eq!(v.data, &datas[i][..]);
            assert_eq!(v.zero_copy, mapped);
            assert_eq!(c.offset() % 32, 0);
        }
        assert_eq!(r.objects()[8].shape(), &[5]);
        assert_eq!(r.objects()[9].shape(), &[] as &[u64]);
        assert_eq!(r.view(9, 0).unwrap().data, &f32s(&[9.0])[..]);
        assert_eq!(r.objects()[10].shape(), &[0, 4]);
        assert!(r.view(10, 0).unwrap().data.is_empty());
    });
}

#[test]
fn gguf_metadata_of_every_type_in_order() {
    let mut nested = arr(ARRAY, 2, &arr(I16, 2, &[1, 0, 0xfe, 0xff]));
    nested.extend(arr(STRING, 1, &gstr(b"x")));
    let g = Gguf::new()
        .kv("general.architecture", STRING, &gstr(b"llama"))
        .kv("u8", U8, &[200])
        .kv("i8", I8, &[0x9c])
        .kv("u16", U16, &60000u16.to_le_bytes())
        .kv("i16", I16, &(-30000i16).to_le_bytes())
        .kv("u32", U32, &4_000_000_000u32.to_le_bytes())
        .kv("i32", I32, &(-2_000_000_000i32).to_le_bytes())
        .kv("u64", U64, &u64::MAX.to_le_bytes())
        .kv("i64", I64, &i64::MIN.to_le_bytes())
        .kv("f32", F32, &0.1f32.to_le_bytes())
        .kv("f64", F64, &(-2.5f64).to_le_bytes())
        .kv("true", BOOL, &[1])
        .kv("false", BOOL, &[0])
        .kv("bytes", STRING, &gstr(b"a\xffb"))
        .kv("empty", ARRAY, &arr(U32, 0, &[]))
        .kv("nested", ARRAY, &nested)
        .kv("a.first", U8, &[1]);
    opens(&g.build(), |r, _| {
        let want = Value::Map(vec![
            (t("general.architecture"), t("llama")),
            (t("u8"), Value::Unsigned(200)),
            (t("i8"), Value::Negative(99)),
            (t("u16"), Value::Unsigned(60000)),
            (t("i16"), Value::Negative(29999)),
            (t("u32"), Value::Unsigned(4_000_000_000)),
            (t("i32"), Value::Negative(1_999_999_999)),
            (t("u64"), Value::Unsigned(u64::MAX)),
            (t("i64"), Value::Negative(i64::MAX as u64)),
            (t("f32"), Value::Float(f64::from(0.1f32))),
            (t("f64"), Value::Float(-2.5)),
            (t("true"), Value::Bool(true)),
            (t("false"), Value::Bool(false)),
            (t("bytes"), Value::Bytes(b"a\xffb".to_vec())),
            (t("empty"), Value::Array(vec![])),
            (
                t("nested"),
                Value::Array(vec![
                    Value::Array(vec![Value::Unsigned(1), Value::Negative(1)]),
                    Value::Array(vec![t("x")]),
                ]),
            ),
            (t("a.first"), Value::Unsigned(1)),
        ]);
        assert_eq!(r.attributes().unwrap(), want);
        assert_eq!(r.objects().len(), 0);
    });
}

#[test]
fn gguf_quantized_tensors_keep_their_blocks() {
    // Q4_0: 32 elements in 18 bytes; ne = [64, 3] is 3 rows of 2 blocks.
    let q4 = common::bytes(1, 3 * 2 * 18);
    // Q4_K: 256 elements in 144 bytes.
    let qk = common::bytes(2, 144);
    let g = Gguf::new()
        .tensor("q4", &[64, 3], 2, &q4)
        .tensor("qk", &[256], 12, &qk)
        .tensor("mx", &[32, 0], 39, &[]);
    opens(&g.build(), |r, mapped| {
        let o = &r.objects()[0];
        assert_eq!(
            (o.name(), o.format(), o.shape()),
            ("q4", "ggml_q4_0", &[3u64, 64][..])
        );
        let c = &o.components()[0];
        assert_eq!(
            (c.role(), c.dtype(), c.decoded_length()),
            ("data", DType::U8, 108)
        );
        assert_eq!(
            o.attributes().unwrap(),
            Value::Map(vec![
                (t("ggml_type"), t("Q4_0")),
                (t("ggml_type_id"), Value::Unsigned(2)),
                (t("block_size"), Value::Unsigned(32)),
                (t("type_size"), Value::Unsigned(18)),
            ])
        );
        let v = r.view(0, 0).unwrap();
        assert_eq!(v.data, &q4[..]);
        assert_eq!(v.zero_copy, mapped);
        assert!(r.validate_values(0).is_ok());
        let o = &r.objects()[1];
        assert_eq!((o.format(), o.shape()), ("ggml_q4_k", &[256u64][..]));
        assert_eq!(r.view(1, 0).unwrap().data, &qk[..]);
        let o = &r.objects()[2];
        assert_eq!((o.format(), o.shape()), ("ggml_mxfp4", &[0u64, 32][..]));
        assert_eq!(o.components()[0].decoded_length(), 0);
    });
    refused(
        &Gguf::new().tensor("q", &[48, 2], 8, &[0; 102]).build(),
        Format,
        "GGUF tensor 'q': ne[0] = 48 is not a multiple of the Q8_0 block size 32",
    );
    refused(
        &Gguf::new().tensor("q", &[], 2, &[0; 18]).build(),
        Format,
        "ne[0] = 1 is not a multiple",
    );
    // Ids this build can't size open too; only their tensors are refused (tests/dequant.rs).
    for unknown in [4u32, 5, 37, 43, 1000] {
        opens(
            &Gguf::new().tensor("q", &[32], unknown, &[0; 32]).build(),
            |r, _| {
                let o = &r.objects()[0];
                assert_eq!(o.format(), format!("ggml_type_{unknown}"));
                let e = r.read_to_vec(0, 0).unwrap_err();
                assert_eq!(e.kind(), Unsupported, "{e}");
            },
        );
    }
}

#[test]
fn gguf_alignment_and_versions() {
    let a = f32s(&[1.0, 2.0]);
    let g = Gguf::new()
        .alignment(64)
        .tensor("a", &[2], 0, &a)
        .tensor("b", &[2], 0, &a);
    opens(&g.build(), |r, _| {
        let offsets: Vec<u64> = r
            .objects()
            .iter()
            .map(|o| o.components()[0].offset())
            .collect();
        assert_eq!(offsets[0] % 64, 0);
        assert_eq!(offsets[1], offsets[0] + 64);
        assert_eq!(
            r.attributes().unwrap().get("general.alignment"),
            Some(&Value::Unsigned(64))
        );
    });
    let mut v2 = g.clone();
    v2.version = 2;
    opens(&v2.build(), |r, _| assert_eq!(r.version(), "2"));
    for bad in [0u32, 48] {
        refused(
            &Gguf::new().alignment(bad).build(),
            Format,
            &format!("general.alignment is {bad}, not a power of two"),
        );
    }
    refused(
        &Gguf::new()
            .kv("general.alignment", U64, &64u64.to_le_bytes())
            .build(),
        Format,
        "general.alignment must be of type uint32",
    );
    refused(
        &Gguf::new().tensor_at("a", &[2], 0, &a, 8).build(),
        Format,
        "GGUF tensor 'a': data offset 8 is not a multiple of the alignment 32",
    );
    let mut v1 = Gguf::new();
    v1.version = 1;
    refused(&v1.build(), Unsupported, "GGUF v1 files");
    let mut v4 = Gguf::new();
    v4.version = 4;
    refused(&v4.build(), Unsupported, "GGUF version 4 is not supported");
    let mut be = Gguf::new().build();
    be[4..8].copy_from_slice(&3u32.to_be_bytes());
    refused(&be, Unsupported, "big-endian GGUF v3");
}

#[test]
fn gguf_validation() {
    let a = f32s(&[1.0, 2.0, 3.0, 4.0]);
    let good = Gguf::new()
        .kv("k", STRING, &gstr(b"v"))
        .tensor("a", &[4], 0, &a);
    opens(&good.build(), |_, _| {});

    // Counts bounded by the file.
    let mut g = good.clone();
    g.tensor_count = u64::MAX / 2;
    refused(
        &g.build(),
        Format,
        "tensor count 9223372036854775807 is more than",
    );
    let mut g = good.clone();
    g.kv_count = 1 << 40;
    refused(
        &g.build(),
        Format,
        "key/value count 1099511627776 is more than",
    );
    let mut g = good.clone();
    g.kv_count = 2;
    refused(&g.build(), Format, "");
    // Strings and arrays bounded by the bytes left.
    refused(
        &Gguf::new()
            .kv("k", STRING, &(1u64 << 60).to_le_bytes())
            .build(),
        Format,
        "GGUF value of 'k' at offset",
    );
    refused(
        &Gguf::new().kv("k", ARRAY, &arr(U64, 1 << 61, &[])).build(),
        Format,
        "declares 2305843009213693952 elements, more than",
    );
    refused(
        &Gguf::new().kv("k", ARRAY, &arr(13, 1, &[0])).build(),
        Format,
        "unknown GGUF value type 13",
    );
    refused(
        &Gguf::new().kv("k", 13, &[0]).build(),
        Format,
        "has unknown value type 13",
    );
    refused(
        &Gguf::new().kv("k", BOOL, &[2]).build(),
        Format,
        "bool value of 'k' at offset",
    );
    refused(
        &Gguf::new().kv("k", U8, &[1]).kv("k", U8, &[2]).build(),
        Format,
        "GGUF key 'k' at offset",
    );
    // A key is attribute text, not a name: a NUL in it is kept (JSON escapes it).
    opens(&Gguf::new().kv("k\u{0}", U8, &[1]).build(), |r, _| {
        assert_eq!(
            r.attributes().unwrap().get("k\0"),
            Some(&Value::Unsigned(1))
        );
    });
    let mut bad_key = Gguf::new().kv("k", U8, &[1]).build();
    bad_key[24 + 8] = 0xff;
    refused(&bad_key, Format, "key 0 at offset 24 is not UTF-8");
    // Nesting depth: 126 nested arrays (the map is level 1, 127 levels in all) open; one
    // more level is over the limit of 128.
    let nest = |levels: usize| {
        let mut v = arr(U8, 0, &[]);
        for _ in 1..levels {
            v = arr(ARRAY, 1, &v);
        }
        Gguf::new().kv("deep", ARRAY, &v).build()
    };
    opens(&nest(127), |r, _| assert!(r.attributes().is_some()));
    refused(&nest(128), Limit, "nests deeper than 128 levels");
    refused(&nest(10_000), Limit, "nests deeper");
    let limits = Limits {
        max_cbor_depth: 8,
        ..Limits::default()
    };
    refused_with(&nest(8), limits, Limit, "deeper than 8");
    // The header is bounded by the manifest limit.
    let limits = Limits {
        max_manifest_size: 32,
        ..Limits::default()
    };
    refused_with(
        &good.build(),
        limits,
        Limit,
        "over the manifest limit of 32 bytes",
    );

    // Tensor infos.
    refused(
        &Gguf::new().tensor("", &[4], 0, &a).build(),
        Format,
        "name is empty",
    );
    refused(
        &Gguf::new().tensor("a\0", &[4], 0, &a).build(),
        Format,
        "NUL",
    );
    refused(
        &Gguf::new()
            .tensor("a", &[4], 0, &a)
            .tensor("a", &[4], 0, &a)
            .build(),
        Format,
        "duplicate object name 'a'",
    );
    refused(
        &Gguf::new().tensor("a", &[1; 65], 0, &a).build(),
        Limit,
        "65 dimensions, over the limit of 64",
    );
    refused(
        &Gguf::new()
            .tensor("a", &[1 << 32, 1 << 32, 2], 0, &a)
            .build(),
        Format,
        "GGUF tensor 'a': dims [4294967296, 4294967296, 2] overflow u64 elements",
    );
    refused(
        &Gguf::new().tensor("a", &[1 << 62], 0, &a).build(),
        Format,
        "byte size of dims [4611686018427387904] overflows",
    );
    refused(
        &Gguf::new().tensor("a", &[16], 0, &a).build(),
        Format,
        "GGUF tensor 'a': 64 bytes at file offset",
    );
    let mut far = Gguf::new()
        .tensor_at("a", &[4], 0, &[], u64::MAX - 31)
        .build();
    far.extend(&a);
    refused(
        &far,
        Format,
        "GGUF tensor 'a': data offset 18446744073709551584 overflows u64",
    );
    let overlap = Gguf::new()
        .tensor_at("a", &[16], 0, &[0; 64], 0)
        .tensor_at("b", &[4], 0, &a, 32);
    refused(&overlap.build(), Format, "GGUF tensors 'a' (bytes [");
    // Two zero-size tensors at one offset overlap nothing.
    opens(
        &Gguf::new()
            .tensor_at("a", &[0], 0, &[], 0)
            .tensor_at("b", &[0, 3], 0, &[], 0)
            .tensor_at("c", &[4], 0, &a, 0)
            .build(),
        |r, _| assert_eq!(r.objects().len(), 3),
    );
}

#[test]
fn gguf_every_prefix_is_refused() {
    let g = Gguf::new()
        .kv("general.architecture", STRING, &gstr(b"x"))
        .kv(
            "arr",
            ARRAY,
            &arr(STRING, 2, &[gstr(b"ab"), gstr(b"c")].concat()),
        )
        .tensor("q", &[32], 2, &[5; 18])
        .tensor("a", &[8], 0, &f32s(&[1.0; 8]));
    let file = g.build();
    assert_eq!(
        file.len() % 32,
        0,
        "no trailing padding: every prefix cuts data"
    );
    opens(&file, |_, _| {});
    for cut in 0..file.len() {
        let e = Reader::from_slice(&file[..cut]).expect_err(&format!("prefix {cut} opened"));
        assert_eq!(e.kind(), Format, "prefix {cut}: {e}");
    }
}

#[test]
fn gguf_large_header_read_in_pieces_without_mmap() {
    // A header well over the 64 KiB read size: 20000 strings, then a tensor.
    let mut items = Vec::new();
    for i in 0..20000u32 {
        items.extend(gstr(format!("token-{i}").as_bytes()));
    }
    let a = f32s(&[1.5, 2.5]);
    let g = Gguf::new()
        .kv("tokens", ARRAY, &arr(STRING, 20000, &items))
        .kv("after", U32, &7u32.to_le_bytes())
        .tensor("a", &[2], 0, &a);
    let file = g.build();
    assert!(file.len() > 200_000);
    opens(&file, |r, _| {
        let attrs = r.attributes().unwrap();
        let tokens = attrs.get("tokens").unwrap().as_array().unwrap();
        assert_eq!(tokens.len(), 20000);
        assert_eq!(tokens[19999], t("token-19999"));
        assert_eq!(attrs.get("after"), Some(&Value::Unsigned(7)));
        assert_eq!(r.view(0, 0).unwrap().data, &a[..]);
    });
}
