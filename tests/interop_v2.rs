//! zTensor v2 against its reference implementation, PyPI `ztensor==2.1.2`, in both
//! directions, on a dozen models (every storage dtype and registered logical type,
//! scalars, empty tensors, sparse, quantized, attributes, tied weights, many small
//! tensors, names whose bytewise and CBOR orders differ, an unregistered layout):
//!
//! - our canonical file is byte-identical to the one `ztensor.Writer` writes for the same
//!   tensors and attributes (ours added in a shuffled order, theirs sorted);
//! - every file it writes reads bit-exactly through our reader, and verifies;
//! - every file we write (canonical, at the default 4 KiB placement, and zstd-encoded)
//!   reads bit-exactly with it and passes its `verify`.
//!
//! The test makes its own venv (pinned by tests/interop/v2-requirements.txt) under the
//! cargo target directory and reuses it while the pins are unchanged; ZT_PYTHON chooses
//! the interpreter.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use ztensor::cbor::Value;
use ztensor::json::{from_json, to_json};
use ztensor::{
    CreateOptions, DType, DigestAlgorithm, FileVersion, Placement, Reader, WriteOptions, Writer,
};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn python() -> PathBuf {
    common::pinned_python("tests/interop/v2-requirements.txt", "v2-venv")
}

/// One part of a model: its v2 storage type name, logical type and bytes.
struct P {
    role: String,
    dtype: &'static str,
    logical: Option<&'static str>,
    bytes: Vec<u8>,
}

struct Obj {
    name: String,
    shape: Vec<u64>,
    layout: &'static str,
    attributes: Option<Value>,
    parts: Vec<P>,
}

struct Case {
    name: &'static str,
    file_attributes: Option<Value>,
    objects: Vec<Obj>,
}

fn t(s: &str) -> Value {
    Value::Text(s.into())
}

fn map(pairs: Vec<(&str, Value)>) -> Value {
    Value::Map(pairs.into_iter().map(|(k, v)| (t(k), v)).collect())
}

fn part(role: &str, dtype: &'static str, logical: Option<&'static str>, bytes: Vec<u8>) -> P {
    P {
        role: role.into(),
        dtype,
        logical,
        bytes,
    }
}

fn obj(name: &str, shape: &[u64], layout: &'static str, parts: Vec<P>) -> Obj {
    Obj {
        name: name.into(),
        shape: shape.to_vec(),
        layout,
        attributes: None,
        parts,
    }
}

fn dense(
    name: &str,
    shape: &[u64],
    dtype: &'static str,
    logical: Option<&'static str>,
    bytes: Vec<u8>,
) -> Obj {
    obj(
        name,
        shape,
        "dense",
        vec![part("data", dtype, logical, bytes)],
    )
}

fn width(dtype: &str) -> usize {
    DType::from_name(dtype).unwrap().size()
}

/// The dozen models.
fn cases() -> Vec<Case> {
    let b = common::bytes;
    let mut all = Vec::new();

    // Every storage type, and every registered logical type.
    let mut objects: Vec<Obj> = [
        "f64", "f32", "f16", "bf16", "i64", "i32", "i16", "i8", "u64", "u32", "u16", "u8",
    ]
    .iter()
    .enumerate()
    .map(|(i, &d)| {
        dense(
            &format!("dense.{d}"),
            &[3, 4],
            d,
            None,
            b(i as u64, 12 * width(d)),
        )
    })
    .collect();
    for (i, lt) in [
        "f8_e4m3fn",
        "f8_e5m2",
        "f8_e4m3fnuz",
        "f8_e5m2fnuz",
        "f8_e8m0",
    ]
    .iter()
    .enumerate()
    {
        objects.push(dense(
            &format!("fp8.{lt}"),
            &[2, 5],
            "u8",
            Some(lt),
            b(40 + i as u64, 10),
        ));
    }
    objects.push(dense(
        "complex.64",
        &[3],
        "f32",
        Some("complex64"),
        b(50, 24),
    ));
    objects.push(dense(
        "complex.128",
        &[2],
        "f64",
        Some("complex128"),
        b(51, 32),
    ));
    objects.push(dense(
        "mask",
        &[7],
        "u8",
        Some("bool"),
        vec![1, 0, 0, 1, 1, 0, 1],
    ));
    // Five packed fp4 values: three bytes, the unused high nibble zero.
    objects.push(dense(
        "fp4.odd",
        &[5],
        "u8",
        Some("f4_e2m1"),
        vec![0x21, 0x43, 0x05],
    ));
    objects.push(dense("fp4.even", &[2, 4], "u8", Some("f4_e2m1"), b(52, 4)));
    all.push(Case {
        name: "dtypes",
        file_attributes: None,
        objects,
    });

    all.push(Case {
        name: "scalars",
        file_attributes: None,
        objects: vec![
            dense("s.f32", &[], "f32", None, 3.5f32.to_le_bytes().to_vec()),
            dense("s.i64", &[], "i64", None, (-7i64).to_le_bytes().to_vec()),
            dense("s.bool", &[], "u8", Some("bool"), vec![1]),
        ],
    });

    all.push(Case {
        name: "empty",
        file_attributes: None,
        objects: vec![
            dense("a.empty", &[0], "f32", None, vec![]),
            dense("b.full", &[3], "u16", None, b(60, 6)),
            dense("c.empty", &[0, 4], "f64", None, vec![]),
            dense("d.full", &[2], "u8", None, vec![9, 9]),
            dense("e.empty", &[3, 0, 2], "bf16", None, vec![]),
        ],
    });

    let mut with_attrs = dense("w", &[2], "f32", None, b(61, 8));
    with_attrs.attributes = Some(map(vec![
        ("unit", t("m/s")),
        ("scale", Value::Float(0.125)),
        (
            "offsets",
            Value::Array(vec![Value::Unsigned(1), Value::Negative(4)]),
        ),
    ]));
    all.push(Case {
        name: "attributes",
        file_attributes: Some(map(vec![
            ("name", t("tiny \u{00e9}t\u{00e9} model")),
            ("layers", Value::Unsigned(12)),
            ("big", Value::Unsigned(u64::MAX)),
            ("neg", Value::Negative(41)),
            ("lr", Value::Float(0.1)),
            ("half", Value::Float(1.5)),
            ("single", Value::Float(100000.0)),
            ("huge", Value::Float(1.0e300)),
            (
                "flags",
                Value::Array(vec![Value::Bool(true), Value::Bool(false), Value::Null]),
            ),
            (
                "nested",
                map(vec![
                    (
                        "z",
                        Value::Array(vec![map(vec![("deep", Value::Unsigned(3))])]),
                    ),
                    ("a", t("")),
                ]),
            ),
        ])),
        objects: vec![with_attrs, dense("v", &[1], "u8", None, vec![7])],
    });

    all.push(Case {
        name: "sparse",
        file_attributes: None,
        objects: vec![
            obj(
                "csr.u64",
                &[3, 4],
                "zt.sparse_csr/1",
                vec![
                    part("values", "f32", None, b(70, 16)),
                    part("indices", "u64", None, common::u64s(&[0, 3, 1, 2])),
                    part("indptr", "u64", None, common::u64s(&[0, 2, 2, 4])),
                ],
            ),
            obj(
                "csr.u32",
                &[2, 3],
                "zt.sparse_csr/1",
                vec![
                    part("values", "f16", None, b(71, 4)),
                    part(
                        "indices",
                        "u32",
                        None,
                        [1u32, 2].iter().flat_map(|v| v.to_le_bytes()).collect(),
                    ),
                    part(
                        "indptr",
                        "u32",
                        None,
                        [0u32, 1, 2].iter().flat_map(|v| v.to_le_bytes()).collect(),
                    ),
                ],
            ),
            obj(
                "coo",
                &[4, 5, 6],
                "zt.sparse_coo/1",
                vec![
                    part("values", "f64", None, b(72, 16)),
                    part("coords", "u64", None, common::u64s(&[0, 3, 4, 1, 5, 0])),
                ],
            ),
        ],
    });

    let mut q8 = obj(
        "blk.0.q8",
        &[2, 64],
        "gguf.q8_0/1",
        vec![part("data", "u8", None, b(80, 4 * 34))],
    );
    q8.attributes = Some(map(vec![
        ("elems_per_block", Value::Unsigned(32)),
        ("block_bytes", Value::Unsigned(34)),
    ]));
    let mut q4k = obj(
        "blk.0.q4k",
        &[1, 256],
        "gguf.q4_k/1",
        vec![part("data", "u8", None, b(81, 144))],
    );
    q4k.attributes = Some(map(vec![
        ("elems_per_block", Value::Unsigned(256)),
        ("block_bytes", Value::Unsigned(144)),
    ]));
    let mut awq = obj(
        "awq",
        &[8, 32],
        "zt.quant_group/1",
        vec![
            part("data", "u32", None, b(82, 32 * 4)),
            part("scales", "f16", None, b(83, 2 * 32 * 2)),
            part("zeros", "u32", None, b(84, 2 * 32 / 8 * 4)),
        ],
    );
    awq.attributes = Some(map(vec![
        ("bits", Value::Unsigned(4)),
        ("group_size", Value::Unsigned(4)),
        ("axis", Value::Unsigned(0)),
        (
            "packing",
            map(vec![
                ("word", t("u32")),
                ("order", t("lsb_first")),
                ("per_word", Value::Unsigned(8)),
            ]),
        ),
        ("scale_form", t("f16_factors")),
        (
            "zero_point",
            map(vec![("form", t("tensor")), ("packing", t("same_as_data"))]),
        ),
    ]));
    let mut mx = obj(
        "mxfp4",
        &[2, 64],
        "zt.mx/1",
        vec![
            part("data", "u8", Some("f4_e2m1"), b(85, 64)),
            part("scales", "u8", Some("f8_e8m0"), b(86, 4)),
        ],
    );
    mx.attributes = Some(map(vec![
        ("block_size", Value::Unsigned(32)),
        ("scale_form", t("e8m0_exponent")),
    ]));
    all.push(Case {
        name: "quantized",
        file_attributes: None,
        objects: vec![q8, q4k, awq, mx],
    });

    all.push(Case {
        name: "many-small",
        file_attributes: Some(map(vec![("count", Value::Unsigned(300))])),
        objects: (0..300)
            .map(|i| {
                dense(
                    &format!("layers.{i}.norm"),
                    &[3],
                    "f16",
                    None,
                    b(1000 + i, 6),
                )
            })
            .collect(),
    });

    let shared = b(90, 4096 + 10);
    all.push(Case {
        name: "tied",
        file_attributes: None,
        objects: vec![
            dense("embed", &[4106], "u8", None, shared.clone()),
            dense("head", &[4106], "u8", None, shared.clone()),
            dense("other", &[4106], "u8", None, b(91, 4106)),
            dense("tail", &[4106], "u8", None, shared),
        ],
    });

    all.push(Case {
        name: "unicode-names",
        file_attributes: None,
        objects: vec![
            dense("gewicht.\u{00fc}ber", &[2], "f32", None, b(100, 8)),
            dense("\u{03b8}", &[1], "f64", None, b(101, 8)),
            dense("z", &[1], "u8", None, vec![1]),
        ],
    });

    all.push(Case {
        name: "large",
        file_attributes: None,
        objects: vec![
            dense("big.a", &[50_000], "f32", None, b(110, 200_000)),
            dense("big.b", &[70_000], "u16", None, b(111, 140_000)),
            dense("small", &[1], "u8", None, vec![3]),
        ],
    });

    // Bytewise order differs from CBOR's (shorter first): "aa" < "b" bytewise.
    all.push(Case {
        name: "orders",
        file_attributes: None,
        objects: vec![
            dense("b", &[1], "u8", None, vec![1]),
            dense("aa", &[1], "u8", None, vec![2]),
            dense("a.b.c", &[1], "u8", None, vec![3]),
            dense("Z", &[1], "u8", None, vec![4]),
            dense("a", &[1], "u8", None, vec![5]),
        ],
    });

    let mut custom = obj(
        "custom",
        &[64],
        "acme.paged_kv/1",
        vec![
            part("pages", "u8", None, b(120, 32)),
            part("index", "u32", None, b(121, 16)),
        ],
    );
    custom.attributes = Some(map(vec![("page", Value::Unsigned(16))]));
    all.push(Case {
        name: "unregistered-layout",
        file_attributes: None,
        objects: vec![custom],
    });
    all
}

/// The case as the JSON spec `v2_reference.py write` reads.
fn spec_json(case: &Case) -> String {
    let objects = case
        .objects
        .iter()
        .map(|o| {
            let parts = o
                .parts
                .iter()
                .map(|p| {
                    (
                        t(&p.role),
                        map(vec![
                            ("dtype", t(p.dtype)),
                            ("logical", p.logical.map_or(Value::Null, t)),
                            ("hex", t(&ztensor::hex_lower(&p.bytes))),
                        ]),
                    )
                })
                .collect();
            map(vec![
                ("name", t(&o.name)),
                (
                    "shape",
                    Value::Array(o.shape.iter().map(|&d| Value::Unsigned(d)).collect()),
                ),
                ("layout", t(o.layout)),
                ("attributes", o.attributes.clone().unwrap_or(Value::Null)),
                ("parts", Value::Map(parts)),
            ])
        })
        .collect();
    to_json(&map(vec![
        (
            "file_attributes",
            case.file_attributes.clone().unwrap_or(Value::Null),
        ),
        ("objects", Value::Array(objects)),
    ]))
}

/// A deterministic shuffle (so our writer sees objects and parts out of canonical order).
fn shuffled<T>(items: &[T], seed: u64) -> Vec<&T> {
    let mut v: Vec<&T> = items.iter().collect();
    let mut x = seed | 1;
    for i in (1..v.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        v.swap(i, (x % (i as u64 + 1)) as usize);
    }
    v
}

/// Writes a case with our writer (v2), objects and parts in a shuffled order.
fn write_ours(case: &Case, path: &Path, options: &WriteOptions, placement: Placement) {
    let create = CreateOptions {
        durable: false,
        version: FileVersion::V2,
        placement,
        ..CreateOptions::default()
    };
    let mut w = Writer::create_with(path, &create).unwrap();
    if let Some(a) = &case.file_attributes {
        w.set_file_attributes(a.clone()).unwrap();
    }
    for o in shuffled(&case.objects, 7) {
        w.begin_object(&o.name, o.layout, &o.shape).unwrap();
        for p in shuffled(&o.parts, 3) {
            // Our spelling of a v2 u8 bool part is our bool dtype.
            let (dtype, logical) = match (p.dtype, p.logical) {
                ("u8", Some("bool")) => (DType::Bool, None),
                (d, l) => (DType::from_name(d).unwrap(), l),
            };
            w.add_component(&p.role, dtype, logical, &p.bytes, options)
                .unwrap();
        }
        if let Some(a) = &o.attributes {
            w.set_object_attributes(&o.name, a.clone()).unwrap();
        }
        w.end_object().unwrap_or_else(|e| panic!("{}: {e}", o.name));
    }
    w.finish().unwrap();
}

/// Writes a case with the reference writer.
fn write_reference(python: &Path, case: &Case, dir: &Path) -> PathBuf {
    let spec = dir.join(format!("{}.json", case.name));
    std::fs::write(&spec, spec_json(case)).unwrap();
    let out = dir.join(format!("{}.ref.zt", case.name));
    common::run_ok(
        Command::new(python)
            .arg(repo().join("tests/interop/v2_reference.py"))
            .arg("write")
            .arg(&spec)
            .arg(&out),
    );
    out
}

/// What the reference reads from a file (or its error).
fn reference_dump(python: &Path, file: &Path) -> Value {
    let out = Command::new(python)
        .arg(repo().join("tests/interop/v2_reference.py"))
        .arg("dump")
        .arg(file)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    from_json(stdout.trim(), 64).unwrap_or_else(|e| {
        panic!(
            "bad dump ({e}): {stdout}\n{}",
            String::from_utf8_lossy(&out.stderr)
        )
    })
}

/// The reference's dump of a file matches the case exactly (bytes, shapes, layouts, types,
/// file attributes), and its verify found a digest on every part.
fn check_reference_reads(python: &Path, case: &Case, file: &Path) {
    let dump = reference_dump(python, file);
    assert!(dump.get("error").is_none(), "{}: {dump:?}", file.display());
    let objects = dump.get("objects").unwrap();
    assert_eq!(
        objects.as_map().unwrap().len(),
        case.objects.len(),
        "{}",
        case.name
    );
    let mut parts_total = 0;
    for o in &case.objects {
        let d = objects
            .get(&o.name)
            .unwrap_or_else(|| panic!("{}: no {}", case.name, o.name));
        let shape: Vec<u64> = d
            .get("shape")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(shape, o.shape, "{}", o.name);
        assert_eq!(
            d.get("layout").unwrap().as_text(),
            Some(o.layout),
            "{}",
            o.name
        );
        for p in &o.parts {
            let dp = d.get("parts").unwrap().get(&p.role).unwrap();
            assert_eq!(
                dp.get("dtype").unwrap().as_text(),
                Some(p.dtype),
                "{}/{}",
                o.name,
                p.role
            );
            assert_eq!(
                dp.get("logical").unwrap().as_text(),
                p.logical,
                "{}/{}",
                o.name,
                p.role
            );
            assert_eq!(
                dp.get("hex").unwrap().as_text().unwrap(),
                ztensor::hex_lower(&p.bytes),
                "{}/{}",
                o.name,
                p.role
            );
            parts_total += 1;
        }
    }
    let attrs = dump.get("attributes").unwrap();
    match &case.file_attributes {
        None => assert_eq!(attrs, &Value::Null),
        Some(a) => assert!(common::same(attrs, a), "{}: {attrs:?} vs {a:?}", case.name),
    }
    let verify = dump.get("verify").unwrap();
    assert_eq!(
        verify.get("checked").and_then(Value::as_u64),
        Some(parts_total),
        "{}: {verify:?}",
        case.name
    );
    assert_eq!(verify.get("undigested").and_then(Value::as_u64), Some(0));
}

/// Our reader reads a file of the case exactly.
fn check_we_read(case: &Case, file: &Path) {
    let r = Reader::open(file).unwrap_or_else(|e| panic!("{}: {e}", file.display()));
    assert_eq!(r.version(), "2");
    assert_eq!(r.objects().len(), case.objects.len());
    for o in &case.objects {
        let i = r.find(&o.name).unwrap_or_else(|| panic!("no {}", o.name));
        let ours = &r.objects()[i];
        assert_eq!(ours.shape(), &o.shape[..], "{}", o.name);
        assert_eq!(ours.format(), o.layout, "{}", o.name);
        let got_attrs = ours.attributes();
        assert_eq!(
            got_attrs.as_ref(),
            o.attributes.as_ref().map(canonical).as_ref(),
            "{}",
            o.name
        );
        assert_eq!(ours.components().len(), o.parts.len());
        for p in &o.parts {
            let ci = ours.find_component(&p.role).unwrap();
            let c = &ours.components()[ci];
            match (p.dtype, p.logical) {
                ("u8", Some("bool")) => {
                    assert_eq!((c.dtype(), c.logical_type()), (DType::Bool, None));
                }
                (d, l) if o.layout.starts_with("gguf.") => {
                    assert_eq!(c.dtype().name(), d);
                    assert!(l.is_none());
                    assert!(
                        c.logical_type().unwrap().starts_with("ggml_"),
                        "{:?}",
                        c.logical_type()
                    );
                }
                (d, l) => assert_eq!(
                    (c.dtype().name(), c.logical_type()),
                    (d, l),
                    "{}/{}",
                    o.name,
                    p.role
                ),
            }
            assert_eq!(
                r.read_to_vec(i, ci).unwrap(),
                p.bytes,
                "{}/{}",
                o.name,
                p.role
            );
            assert!(c.digest().unwrap().starts_with("xxh3:"));
            r.verify_component(i, ci).unwrap();
        }
        r.validate_values(i).unwrap();
    }
    let attrs = r.attributes();
    assert_eq!(
        attrs.as_ref(),
        case.file_attributes.as_ref().map(canonical).as_ref()
    );
    r.verify().unwrap();
}

/// An attribute value as a v2 file holds it: map keys in deterministic order.
fn canonical(v: &Value) -> Value {
    match v {
        Value::Map(pairs) => {
            let mut pairs: Vec<(Value, Value)> = pairs
                .iter()
                .map(|(k, v)| (k.clone(), canonical(v)))
                .collect();
            pairs.sort_by_key(|p| ztensor::cbor::to_vec(&p.0));
            Value::Map(pairs)
        }
        Value::Array(items) => Value::Array(items.iter().map(canonical).collect()),
        other => other.clone(),
    }
}

/// Where two files first differ, with context, for a failure message.
fn first_difference(a: &[u8], b: &[u8]) -> String {
    let at = a
        .iter()
        .zip(b)
        .position(|(x, y)| x != y)
        .unwrap_or(a.len().min(b.len()));
    format!(
        "sizes {} and {}, first difference at {at}: {:02x?} vs {:02x?}",
        a.len(),
        b.len(),
        &a[at.min(a.len())..(at + 16).min(a.len())],
        &b[at.min(b.len())..(at + 16).min(b.len())]
    )
}

#[test]
fn canonical_files_are_the_references_bytes_and_read_both_ways() {
    let python = python();
    let dir = common::temp_dir("interop_v2_canonical");
    for case in cases() {
        let reference = write_reference(&python, &case, &dir);
        let ours = dir.join(format!("{}.ours.zt", case.name));
        write_ours(&case, &ours, &WriteOptions::default(), Placement::Canonical);
        let (a, b) = (
            std::fs::read(&ours).unwrap(),
            std::fs::read(&reference).unwrap(),
        );
        assert!(a == b, "{}: {}", case.name, first_difference(&a, &b));
        check_we_read(&case, &reference);
        check_reference_reads(&python, &case, &ours);
        // The default placement, 4 KiB: not the reference's bytes, but read by it as they
        // are (every blob on a 4 KiB boundary, the first at 4096).
        let compact = dir.join(format!("{}.compact.zt", case.name));
        write_ours(
            &case,
            &compact,
            &WriteOptions::default(),
            Placement::default(),
        );
        let r = Reader::open(&compact).unwrap();
        for o in r.objects() {
            for c in o.components() {
                assert_eq!(c.offset() % 4096, 0, "{}: {}", case.name, o.name());
            }
        }
        check_we_read(&case, &compact);
        check_reference_reads(&python, &case, &compact);
    }
}

#[test]
fn zstd_files_we_write_read_exactly_with_the_reference() {
    let python = python();
    let dir = common::temp_dir("interop_v2_zstd");
    let zstd = WriteOptions::zstd(3);
    for case in cases() {
        let ours = dir.join(format!("{}.zstd.zt", case.name));
        write_ours(&case, &ours, &zstd, Placement::default());
        check_reference_reads(&python, &case, &ours);
        check_we_read(&case, &ours);
        // sha256 part digests are v2 too.
        let sha = dir.join(format!("{}.sha.zt", case.name));
        write_ours(
            &case,
            &sha,
            &WriteOptions::default().with_digest(DigestAlgorithm::Sha256),
            Placement::default(),
        );
        let r = Reader::open(&sha).unwrap();
        assert!(
            r.objects()[0].components()[0]
                .digest()
                .unwrap()
                .starts_with("sha256:")
        );
        r.verify().unwrap();
        check_reference_reads(&python, &case, &sha);
    }
}

/// A safetensors file converted to v2 by `ztensor.convert` and by ours (what `zt convert
/// --to v2 --placement canonical` does: every object copied, in name order, into a
/// canonical v2 writer): the same bytes. (The reference can't convert the other safetensors vectors: it has no
/// projection of C64 or F4; ours does, and reads them back.)
#[test]
fn safetensors_converts_to_the_references_bytes() {
    let python = python();
    let dir = common::temp_dir("interop_v2_convert");
    let vectors = repo().join("tests/vectors/safetensors");
    for name in ["small", "dtypes", "subbyte"] {
        let src = vectors.join(format!("{name}.safetensors"));
        let r = Reader::open(&src).unwrap();
        let ours = dir.join(format!("{name}.ours.zt"));
        let create = CreateOptions {
            durable: false,
            version: FileVersion::V2,
            placement: Placement::Canonical,
            ..CreateOptions::default()
        };
        let mut w = Writer::create_with(&ours, &create).unwrap();
        if let Some(a) = r.attributes() {
            w.set_file_attributes(a).unwrap();
        }
        let mut order: Vec<usize> = (0..r.objects().len()).collect();
        order.sort_by(|&a, &b| r.objects()[a].name().cmp(r.objects()[b].name()));
        for i in order {
            w.copy_object(&r, i, &ztensor::CopyOptions::default())
                .unwrap();
        }
        w.finish().unwrap();
        let back = Reader::open(&ours).unwrap();
        for (i, o) in r.objects().iter().enumerate() {
            let j = back.find(o.name()).unwrap();
            assert_eq!(
                back.read_to_vec(j, 0).unwrap(),
                r.read_to_vec(i, 0).unwrap(),
                "{name}: {}",
                o.name()
            );
        }
        back.verify().unwrap();
        let theirs = dir.join(format!("{name}.ref.zt"));
        let out = Command::new(&python)
            .arg(repo().join("tests/interop/v2_reference.py"))
            .arg("convert")
            .arg(&src)
            .arg(&theirs)
            .output()
            .unwrap();
        if name != "small" {
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                err.contains("has no registered projection"),
                "{name}: {err}"
            );
            continue;
        }
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let (a, b) = (
            std::fs::read(&ours).unwrap(),
            std::fs::read(&theirs).unwrap(),
        );
        assert!(a == b, "{name}: {}", first_difference(&a, &b));
    }
}
