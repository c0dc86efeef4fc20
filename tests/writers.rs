//! The writer's other output formats: safetensors and GGUF, byte for byte what the formats'
//! own writers make of the same tensors (`safetensors`' serialize_file, gguf-py's
//! GGUFWriter, in a venv pinned by tests/interop/writers-requirements.txt), read back by
//! them and by us; what they can't hold refused with a message that says so.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use ztensor::typed::{TypedValue, ValueType};
use ztensor::{CreateOptions, DType, OutputFormat, Reader, WriteOptions, Writer};

fn peer() -> PathBuf {
    common::pinned_python("tests/interop/writers-requirements.txt", "writers-venv")
}

fn run_peer(args: &[&dyn AsRef<std::ffi::OsStr>]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/writers_peer.py");
    let mut cmd = Command::new(peer());
    cmd.arg(script);
    for a in args {
        cmd.arg(a);
    }
    let out = cmd.output().unwrap();
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

fn quick() -> CreateOptions {
    CreateOptions {
        durable: false,
        ..CreateOptions::default()
    }
}

/// (name, storage dtype, logical type, shape): every dtype safetensors has, added out of
/// its order.
fn st_tensors() -> Vec<(&'static str, DType, Option<&'static str>, Vec<u64>)> {
    vec![
        ("z.f32", DType::F32, None, vec![3, 5]),
        ("a.bool", DType::Bool, None, vec![7]),
        ("b.u8", DType::U8, None, vec![2, 3]),
        ("c.i8", DType::I8, None, vec![5]),
        ("d.i16", DType::I16, None, vec![3]),
        ("e.u16", DType::U16, None, vec![1, 3]),
        ("f.f16", DType::F16, None, vec![4]),
        ("g.bf16", DType::BF16, None, vec![2, 2]),
        ("h.i32", DType::I32, None, vec![3]),
        ("i.u32", DType::U32, None, vec![2]),
        ("j.c64", DType::F32, Some("complex64"), vec![3]),
        ("k.f64", DType::F64, None, vec![2]),
        ("l.i64", DType::I64, None, vec![]),
        ("m.u64", DType::U64, None, vec![2]),
        ("n.e4m3", DType::U8, Some("f8_e4m3fn"), vec![4]),
        ("o.e5m2", DType::U8, Some("f8_e5m2"), vec![3]),
        ("p.e4m3fnuz", DType::U8, Some("f8_e4m3fnuz"), vec![2]),
        ("q.e5m2fnuz", DType::U8, Some("f8_e5m2fnuz"), vec![2]),
        ("r.e8m0", DType::U8, Some("f8_e8m0fnu"), vec![5]),
        ("s.f4", DType::U8, Some("f4_e2m1fn_x2"), vec![2, 4]),
        ("Z.f32", DType::F32, None, vec![0, 3]),
        ("a.f32", DType::F32, None, vec![1]),
        ("\u{e9}t\u{e9}\n\"q\"", DType::F32, None, vec![2]),
    ]
}

fn write_st(path: &Path, metadata: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
    let mut w = Writer::create_with(path, &quick()).unwrap();
    assert_eq!(w.format(), OutputFormat::Safetensors);
    for (k, v) in metadata {
        w.set_file_attribute(k, &TypedValue::text(v)).unwrap();
    }
    let mut written = Vec::new();
    for (i, (name, dtype, logical, shape)) in st_tensors().into_iter().enumerate() {
        let n = ztensor::dtype::dense_byte_size(&shape, dtype, logical).unwrap() as usize;
        let data = common::data_for(dtype, n / dtype.size(), i as u64 + 1);
        w.add_typed(
            name,
            dtype,
            logical,
            &shape,
            &data,
            &WriteOptions::default(),
        )
        .unwrap();
        written.push((name.to_owned(), data));
    }
    w.finish().unwrap();
    written
}

#[test]
fn safetensors_reads_back_every_dtype() {
    let dir = common::temp_dir("writers_st_read");
    let path = dir.join("m.safetensors");
    let written = write_st(&path, &[("format", "pt"), ("note", "ours")]);
    let r = Reader::open(&path).unwrap();
    assert_eq!(r.container().name(), "safetensors");
    assert_eq!(r.objects().len(), written.len());
    for (name, data) in &written {
        let oi = r.find(name).unwrap();
        assert_eq!(&r.read_to_vec(oi, 0).unwrap(), data, "{name}");
    }
    let attrs = r.attributes().unwrap();
    assert_eq!(
        attrs.get("format").and_then(|v| v.as_text()),
        Some("pt"),
        "{attrs:?}"
    );
    // The header: __metadata__ first in the order set, then by safetensors' dtype order
    // (largest first), then name; padded with spaces to 8 bytes.
    let bytes = std::fs::read(&path).unwrap();
    let n = u64::from_le_bytes(bytes[..8].try_into().unwrap()) as usize;
    assert_eq!(n % 8, 0);
    let header = std::str::from_utf8(&bytes[8..8 + n]).unwrap();
    assert!(
        header.starts_with(r#"{"__metadata__":{"format":"pt","note":"ours"},"m.u64":{"dtype":"U64","shape":[2],"data_offsets":[0,16]},"l.i64":{"dtype":"I64","shape":[],"data_offsets":[16,24]}"#),
        "{header}"
    );
    assert!(
        header
            .trim_end()
            .ends_with(r#""a.bool":{"dtype":"BOOL","shape":[7],"data_offsets":[215,222]}}"#),
        "{header}"
    );
}

#[test]
fn safetensors_is_what_safetensors_writes() {
    let dir = common::temp_dir("writers_st_identity");
    let ours = dir.join("ours.safetensors");
    // One metadata key: safetensors' own order of several is a hash map's.
    write_st(&ours, &[("format", "pt")]);
    let theirs = dir.join("theirs.safetensors");
    run_peer(&[&"st-resave", &ours, &theirs]);
    let (a, b) = (
        std::fs::read(&ours).unwrap(),
        std::fs::read(&theirs).unwrap(),
    );
    assert!(
        a == b,
        "ours ({} bytes) differs from safetensors' ({} bytes)",
        a.len(),
        b.len()
    );
    // Added in safetensors' own order, the spool is the data section (copied in one
    // piece): the same bytes.
    let sorted = dir.join("sorted.safetensors");
    let r = Reader::open(&ours).unwrap();
    let mut w = Writer::create_with(&sorted, &quick()).unwrap();
    w.set_file_attribute("format", &TypedValue::text("pt"))
        .unwrap();
    for i in 0..r.objects().len() {
        w.copy_object(&r, i, &Default::default()).unwrap();
    }
    w.finish().unwrap();
    assert!(std::fs::read(&sorted).unwrap() == a, "added in order");
}

/// The key/values of the GGUF tests: every type, in an order of our choosing.
fn gguf_kvs(alignment: Option<u32>) -> Vec<(&'static str, TypedValue)> {
    let mut kvs = vec![
        ("general.architecture", TypedValue::text("llama")),
        ("a.u8", TypedValue::U8(200)),
        ("a.i8", TypedValue::I8(-100)),
        ("a.u16", TypedValue::U16(60000)),
        ("a.i16", TypedValue::I16(-30000)),
        ("a.u32", TypedValue::U32(4_000_000_000)),
        ("a.i32", TypedValue::I32(-2_000_000_000)),
        ("a.f32", TypedValue::F32(1.5)),
        ("a.bool", TypedValue::Bool(true)),
        ("a.string", TypedValue::text("h\u{e9}llo")),
        ("a.u64", TypedValue::U64(u64::MAX)),
        ("a.i64", TypedValue::I64(i64::MIN)),
        ("a.f64", TypedValue::F64(-2.25)),
        (
            "a.u32s",
            TypedValue::numbers(
                ValueType::U32,
                [1u32, 2, 3].iter().flat_map(|v| v.to_ne_bytes()).collect(),
            )
            .unwrap(),
        ),
        (
            "a.f32s",
            TypedValue::numbers(
                ValueType::F32,
                [0.5f32, -1.0]
                    .iter()
                    .flat_map(|v| v.to_ne_bytes())
                    .collect(),
            )
            .unwrap(),
        ),
        (
            "a.strings",
            TypedValue::Array {
                elem: None,
                items: vec![TypedValue::text("x"), TypedValue::text("yz")],
            },
        ),
    ];
    if let Some(a) = alignment {
        kvs.insert(3, ("general.alignment", TypedValue::U32(a)));
    }
    kvs
}

/// (name, object format, shape, dtype): plain types and ggml blocks, in file order.
fn gguf_tensors() -> Vec<(&'static str, &'static str, Vec<u64>, DType)> {
    vec![
        ("tok.weight", "dense", vec![3, 5], DType::F32),
        ("b.f16", "dense", vec![7], DType::F16),
        ("c.bf16", "dense", vec![2, 2, 3], DType::BF16),
        ("d.f64", "dense", vec![1, 2, 1, 2], DType::F64),
        ("e.i8", "dense", vec![9], DType::I8),
        ("f.i16", "dense", vec![3], DType::I16),
        ("g.i32", "dense", vec![2], DType::I32),
        ("h.i64", "dense", vec![1], DType::I64),
        ("q4_0", "ggml_q4_0", vec![2, 64], DType::U8),
        ("q4_k", "ggml_q4_k", vec![256], DType::U8),
    ]
}

fn write_gguf(path: &Path, alignment: Option<u32>) -> Vec<(String, Vec<u8>)> {
    write_gguf_kvs(path, alignment, false)
}

/// `kvs_last`: the key/values (the alignment among them) set after the tensors, which
/// were then spooled with the default alignment.
fn write_gguf_kvs(path: &Path, alignment: Option<u32>, kvs_last: bool) -> Vec<(String, Vec<u8>)> {
    let mut w = Writer::create_with(path, &quick()).unwrap();
    assert_eq!(w.format(), OutputFormat::Gguf);
    if !kvs_last {
        for (k, v) in gguf_kvs(alignment) {
            w.set_file_attribute(k, &v).unwrap();
        }
    }
    let mut written = Vec::new();
    for (i, (name, format, shape, dtype)) in gguf_tensors().into_iter().enumerate() {
        let numel: u64 = shape.iter().product();
        let data = if format == "dense" {
            common::data_for(dtype, numel as usize, i as u64 + 7)
        } else {
            let (block, size) = if format == "ggml_q4_0" {
                (32, 18)
            } else {
                (256, 144)
            };
            common::bytes(i as u64 + 7, (numel / block * size) as usize)
        };
        if format == "dense" {
            w.add(name, dtype, &shape, &data, &WriteOptions::default())
                .unwrap();
        } else {
            w.begin_object(name, format, &shape).unwrap();
            w.add_component(
                "data",
                DType::U8,
                Some(format),
                &data,
                &WriteOptions::default(),
            )
            .unwrap();
            w.end_object().unwrap();
        }
        written.push((name.to_owned(), data));
    }
    if kvs_last {
        for (k, v) in gguf_kvs(alignment) {
            w.set_file_attribute(k, &v).unwrap();
        }
    }
    w.finish().unwrap();
    written
}

#[test]
fn gguf_reads_back_with_types_and_order() {
    let dir = common::temp_dir("writers_gguf_read");
    let path = dir.join("m.gguf");
    let written = write_gguf(&path, Some(64));
    let r = Reader::open(&path).unwrap();
    assert_eq!(r.container().name(), "gguf");
    assert_eq!(r.version(), "3");
    assert_eq!(r.layout().alignment, 64);
    for (i, (name, data)) in written.iter().enumerate() {
        assert_eq!(r.objects()[i].name(), name);
        assert_eq!(&r.read_to_vec(i, 0).unwrap(), data, "{name}");
        assert_eq!(r.objects()[i].components()[0].offset() % 64, 0, "{name}");
    }
    assert_eq!(r.objects()[8].format(), "ggml_q4_0");
    assert_eq!(r.objects()[8].shape(), &[2, 64]);
    let typed = TypedValue::from_attr(r.typed_attributes(None).unwrap()).unwrap();
    let TypedValue::Map(pairs) = typed else {
        panic!()
    };
    let want = gguf_kvs(Some(64));
    assert_eq!(pairs.len(), want.len());
    for ((k, v), (wk, wv)) in pairs.iter().zip(&want) {
        assert_eq!(k, &TypedValue::text(wk));
        assert_eq!(v, wv, "{wk}");
    }
}

#[test]
fn gguf_is_what_gguf_py_writes() {
    let dir = common::temp_dir("writers_gguf_identity");
    for alignment in [None, Some(64)] {
        let ours = dir.join(format!("ours{alignment:?}.gguf"));
        write_gguf(&ours, alignment);
        let theirs = dir.join(format!("theirs{alignment:?}.gguf"));
        run_peer(&[&"gguf-resave", &ours, &theirs]);
        let (a, b) = (
            std::fs::read(&ours).unwrap(),
            std::fs::read(&theirs).unwrap(),
        );
        assert!(
            a == b,
            "alignment {alignment:?}: ours ({} bytes) differs from gguf-py's ({} bytes)",
            a.len(),
            b.len()
        );
        // The key/values set last (the tensors spooled before the alignment was known,
        // then placed one by one): the same bytes.
        let late = dir.join(format!("late{alignment:?}.gguf"));
        write_gguf_kvs(&late, alignment, true);
        assert!(
            std::fs::read(&late).unwrap() == a,
            "alignment {alignment:?}: set last"
        );
    }
}

#[test]
fn safetensors_set_with_transformers_index() {
    let dir = common::temp_dir("writers_st_set");
    let mut w =
        ztensor::ShardedWriter::create_with(dir.join("model.safetensors"), 100, &quick()).unwrap();
    w.set_file_attribute("format", &TypedValue::text("pt"))
        .unwrap();
    // 60 + 60 > 100: a new shard; 150 alone; 8 + 8 together.
    for (name, n) in [("b", 15u64), ("a", 15), ("c", 40), ("e", 2), ("d", 2)] {
        let data = common::bytes(n, n as usize * 4);
        w.add(name, DType::F32, &[n], &data, &WriteOptions::default())
            .unwrap();
    }
    let index = w.finish().unwrap();
    assert_eq!(index, dir.join("model.safetensors.index.json"));
    let text = std::fs::read_to_string(&index).unwrap();
    assert_eq!(
        text,
        "{\n  \"metadata\": {\n    \"total_size\": 296\n  },\n  \"weight_map\": {\n    \
         \"a\": \"model-00002-of-00004.safetensors\",\n    \
         \"b\": \"model-00001-of-00004.safetensors\",\n    \
         \"c\": \"model-00003-of-00004.safetensors\",\n    \
         \"d\": \"model-00004-of-00004.safetensors\",\n    \
         \"e\": \"model-00004-of-00004.safetensors\"\n  }\n}\n"
    );
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "model-00001-of-00004.safetensors",
            "model-00002-of-00004.safetensors",
            "model-00003-of-00004.safetensors",
            "model-00004-of-00004.safetensors",
            "model.safetensors.index.json"
        ]
    );
    let r = Reader::open(&index).unwrap();
    assert_eq!(r.objects().len(), 5);
    for name in ["a", "b", "c", "d", "e"] {
        let oi = r.find(name).unwrap();
        let n = r.objects()[oi].shape()[0];
        assert_eq!(
            r.read_to_vec(oi, 0).unwrap(),
            common::bytes(n, n as usize * 4)
        );
    }
    // Every shard is a file of its own that safetensors reads, with the metadata.
    let shard = dir.join("model-00004-of-00004.safetensors");
    let read = run_peer(&[&"st-read", &shard]);
    assert!(read.contains(r#""metadata": {"format": "pt"}"#), "{read}");
    assert!(
        read.contains(r#""d": {"dtype": "float32", "sha256""#),
        "{read}"
    );

    // One shard: the file under the set's name, no index (as save_pretrained writes).
    let one = common::temp_dir("writers_st_set_one");
    let mut w =
        ztensor::ShardedWriter::create_with(one.join("model.safetensors"), 1 << 20, &quick())
            .unwrap();
    w.add("x", DType::F32, &[1], &[0; 4], &WriteOptions::default())
        .unwrap();
    assert_eq!(w.finish().unwrap(), one.join("model.safetensors"));
    assert_eq!(std::fs::read_dir(&one).unwrap().count(), 1);
}

#[test]
fn gguf_split_is_what_gguf_py_writes() {
    let dir = common::temp_dir("writers_gguf_split");
    let ours = dir.join("ours");
    std::fs::create_dir(&ours).unwrap();
    let mut w = ztensor::ShardedWriter::create_with(ours.join("m.gguf"), 200, &quick()).unwrap();
    for (k, v) in gguf_kvs(None) {
        w.set_file_attribute(k, &v).unwrap();
    }
    for (i, n) in [30u64, 20, 50, 10, 10, 5].into_iter().enumerate() {
        let data = common::bytes(i as u64, n as usize * 4);
        w.add(
            &format!("t{i}"),
            DType::F32,
            &[n],
            &data,
            &WriteOptions::default(),
        )
        .unwrap();
    }
    let first = w.finish().unwrap();
    assert_eq!(first, ours.join("m-00001-of-00003.gguf"));
    let r = Reader::open(&first).unwrap();
    assert_eq!(r.objects().len(), 6, "the split set opens as one");
    let theirs = dir.join("theirs");
    std::fs::create_dir(&theirs).unwrap();
    run_peer(&[
        &"gguf-resave-split",
        &theirs.join("m.gguf"),
        &"200",
        &first,
        &ours.join("m-00002-of-00003.gguf"),
        &ours.join("m-00003-of-00003.gguf"),
    ]);
    for k in 1..=3 {
        let name = format!("m-{k:05}-of-00003.gguf");
        let (a, b) = (
            std::fs::read(ours.join(&name)).unwrap(),
            std::fs::read(theirs.join(&name)).unwrap(),
        );
        assert!(
            a == b,
            "{name}: ours ({} bytes) differs from gguf-py's ({} bytes)",
            a.len(),
            b.len()
        );
    }
}

/// The message of a refused call, checked to be InvalidArgument (or Limit) and to say
/// `what`.
fn refused<T: std::fmt::Debug>(r: ztensor::Result<T>, what: &str) {
    let e = r.expect_err(what);
    assert!(
        matches!(
            e.kind(),
            ztensor::ErrorKind::InvalidArgument | ztensor::ErrorKind::Limit
        ),
        "{e}"
    );
    assert!(e.message().contains(what), "'{e}' does not say '{what}'");
}

#[test]
fn what_safetensors_cant_hold_is_refused() {
    let dir = common::temp_dir("writers_st_refused");
    let path = dir.join("m.safetensors");
    let mut w = Writer::create_with(&path, &quick()).unwrap();
    let raw = WriteOptions::default();
    w.begin_object("s", "sparse_csr", &[2, 2])
        .map(drop)
        .expect_err("sparse");
    refused(
        w.begin_object("s", "sparse_csr", &[2, 2]),
        "dense tensors only",
    );
    refused(
        w.add("x", DType::F32, &[1], &[0; 4], &WriteOptions::zstd(0)),
        "raw bytes only",
    );
    refused(
        w.add(
            "x",
            DType::F32,
            &[1],
            &[0; 4],
            &raw.with_digest(ztensor::DigestAlgorithm::Sha256),
        ),
        "records no digests",
    );
    refused(
        w.add_typed("x", DType::F64, Some("complex128"), &[1], &[0; 16], &raw),
        "safetensors has no dtype",
    );
    refused(
        w.add("__metadata__", DType::F32, &[1], &[0; 4], &raw),
        "'__metadata__'",
    );
    refused(w.add("a\0b", DType::F32, &[1], &[0; 4], &raw), "NUL");
    refused(
        w.add(&"n".repeat(70_000), DType::F32, &[1], &[0; 4], &raw),
        "65536",
    );
    refused(
        w.add_typed("f4", DType::U8, Some("f4_e2m1"), &[3], &[0; 2], &raw),
        "odd count of f4",
    );
    refused(
        w.add("big", DType::F32, &[u64::MAX, 2], &[], &raw),
        "more elements than u64",
    );
    refused(
        w.set_file_attribute("n", &TypedValue::U32(3)),
        "strings only: 'n' is u32",
    );
    w.begin_object("t", "dense", &[1]).unwrap();
    refused(
        w.add_component("scale", DType::F32, None, &[0; 4], &raw),
        "one 'data' component",
    );
    w.add_component("data", DType::F32, None, &[0; 4], &raw)
        .unwrap();
    refused(
        w.set_object_attribute("t", "k", &TypedValue::text("v")),
        "no per-tensor attributes",
    );
    w.end_object().unwrap();
    // The writer is still usable after every refusal, and the file has the one tensor.
    w.finish().unwrap();
    let r = Reader::open(&path).unwrap();
    assert_eq!(r.objects().len(), 1);
    assert_eq!(r.objects()[0].name(), "t");
    // Into a stream: the header can't come first.
    let opts = CreateOptions {
        format: OutputFormat::Safetensors,
        ..quick()
    };
    refused(Writer::new_with(Vec::new(), &opts), "written to a path");
}

#[test]
fn what_gguf_cant_hold_is_refused() {
    let dir = common::temp_dir("writers_gguf_refused");
    let path = dir.join("m.gguf");
    let mut w = Writer::create_with(&path, &quick()).unwrap();
    let raw = WriteOptions::default();
    refused(
        w.add("u", DType::U8, &[1], &[0], &raw),
        "GGUF has no u8 tensors",
    );
    refused(
        w.add_typed("e", DType::U8, Some("f8_e4m3fn"), &[1], &[0], &raw),
        "logical type 'f8_e4m3fn'",
    );
    refused(
        w.add(&"n".repeat(64), DType::F32, &[1], &[0; 4], &raw),
        "64 bytes or more",
    );
    refused(w.add("r", DType::F32, &[1; 5], &[0; 4], &raw), "at most 4");
    refused(w.begin_object("o", "dense", &[1 << 62, 2]), "int64_t");
    refused(
        w.begin_object("q", "ggml_q4_k", &[2, 100]),
        "whole Q4_K blocks",
    );
    refused(
        w.begin_object("s", "sparse_coo", &[2]),
        "dense tensors and ggml block",
    );
    refused(
        w.set_file_attribute("n", &TypedValue::Null),
        "no null values",
    );
    refused(
        w.set_file_attribute("b", &TypedValue::Bytes(vec![1])),
        "no bytes values",
    );
    refused(
        w.set_file_attribute("m", &TypedValue::Map(vec![])),
        "no map values",
    );
    refused(
        w.set_file_attribute("general.alignment", &TypedValue::U32(48)),
        "not a power of two",
    );
    refused(
        w.set_file_attribute("general.alignment", &TypedValue::U64(64)),
        "must be a u32",
    );
    refused(
        w.set_file_attribute(
            "e",
            &TypedValue::Array {
                elem: None,
                items: vec![],
            },
        ),
        "no element type",
    );
    refused(
        w.set_file_attribute(
            "x",
            &TypedValue::Array {
                elem: None,
                items: vec![TypedValue::text("a"), TypedValue::U8(1)],
            },
        ),
        "mixes string and u8",
    );
    w.begin_object("q", "ggml_q4_0", &[32]).unwrap();
    refused(
        w.add_component("data", DType::U8, Some("ggml_q8_0"), &[0; 18], &raw),
        "logical type 'ggml_q4_0'",
    );
    w.add_component("data", DType::U8, Some("ggml_q4_0"), &[0; 18], &raw)
        .unwrap();
    w.end_object().unwrap();
    w.finish().unwrap();
    let r = Reader::open(&path).unwrap();
    assert_eq!(r.objects().len(), 1);
    assert_eq!(r.objects()[0].format(), "ggml_q4_0");
}

/// The child of `sigkill_mid_write_leaves_no_file`: writes `ZT_CRASH_PATH` step by step,
/// printing each step and waiting for a line on stdin before the next, so the parent
/// kills it at a known point. Does nothing in a normal test run.
#[test]
fn crash_child() {
    use std::io::{BufRead, Write};
    let Ok(path) = std::env::var("ZT_CRASH_PATH") else {
        return;
    };
    let stdin = std::io::stdin();
    let mut lines = stdin.lock().lines();
    // Straight to descriptor 1: the test harness captures `println!` even so.
    use std::os::fd::FromRawFd;
    // SAFETY: descriptor 1 is open for the process's life; never closed here.
    let mut stdout = std::mem::ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(1) });
    let mut say = move |what: &str| {
        stdout
            .write_all(format!("STEP {what}\n").as_bytes())
            .unwrap();
    };
    let mut step = |what: &str| {
        say(what);
        let _ = lines.next();
    };
    let mut w = Writer::create_with(&path, &quick()).unwrap();
    if std::env::var_os("ZT_CRASH_DECLARED").is_some() {
        // Written in one pass, to the file itself (no spool): the header comes with the
        // first tensor.
        for i in 0..3 {
            w.declare(&format!("t{i}"), DType::F32, None, &[1 << 20])
                .unwrap();
        }
    }
    step("created");
    let big = common::bytes(1, 4 << 20);
    for i in 0..3 {
        w.add(
            &format!("t{i}"),
            DType::F32,
            &[(1 << 20) as u64],
            &big,
            &WriteOptions::default(),
        )
        .unwrap();
        step("tensor");
    }
    step("finishing");
    w.finish().unwrap();
}

#[test]
fn sigkill_mid_write_leaves_no_file() {
    use std::io::{BufRead, BufReader, Write};
    use std::process::Stdio;
    let dir = common::temp_dir("writers_crash");
    // Spooled, and declared (written in one pass).
    for (ext, declared) in [
        ("safetensors", false),
        ("gguf", false),
        ("safetensors", true),
        ("gguf", true),
    ] {
        let declared = |c: &mut Command| {
            if declared {
                c.env("ZT_CRASH_DECLARED", "1");
            }
        };
        // Killed after each step in turn (4: while finish is waiting to begin).
        for at in 0..5 {
            let path = dir.join(format!("m{at}.{ext}"));
            let mut child = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
                .env("ZT_CRASH_PATH", &path)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .tap(declared)
                .spawn()
                .unwrap();
            let mut out = BufReader::new(child.stdout.take().unwrap());
            let mut input = child.stdin.take().unwrap();
            let mut seen = 0;
            let mut line = String::new();
            while seen <= at {
                line.clear();
                if out.read_line(&mut line).unwrap() == 0 {
                    break;
                }
                // The harness writes "test crash_child ... " before the first step.
                if line.contains("STEP ") {
                    seen += 1;
                    if seen <= at {
                        writeln!(input).unwrap();
                    }
                }
            }
            child.kill().unwrap();
            child.wait().unwrap();
            assert!(
                !path.exists(),
                "{ext}: killed after step {at}, yet {} exists",
                path.display()
            );
            // Only hidden temporary files are left, never a file under the final name.
            for e in std::fs::read_dir(&dir).unwrap() {
                let name = e.unwrap().file_name().into_string().unwrap();
                assert!(name.starts_with('.'), "{ext} step {at}: {name} left behind");
            }
        }
        // Killed while finishing (after 0 to 40 ms): the file is whole or absent.
        for delay_ms in [0u64, 2, 10, 40] {
            let path = dir.join(format!("f{delay_ms}.{ext}"));
            let mut child = Command::new(std::env::current_exe().unwrap())
                .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
                .env("ZT_CRASH_PATH", &path)
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .tap(declared)
                .spawn()
                .unwrap();
            let mut out = BufReader::new(child.stdout.take().unwrap());
            let mut input = child.stdin.take().unwrap();
            let mut line = String::new();
            loop {
                line.clear();
                assert!(
                    out.read_line(&mut line).unwrap() > 0,
                    "the child stopped early"
                );
                if line.contains("STEP ") {
                    writeln!(input).unwrap();
                }
                if line.contains("STEP finishing") {
                    break;
                }
            }
            std::thread::sleep(std::time::Duration::from_millis(delay_ms));
            child.kill().unwrap();
            child.wait().unwrap();
            if path.exists() {
                let r = Reader::open(&path).unwrap();
                assert_eq!(r.objects().len(), 3, "{ext}: a whole file or none");
                for i in 0..3 {
                    assert_eq!(r.read_to_vec(i, 0).unwrap().len(), 4 << 20);
                }
            }
        }
        // Unkilled, the same child writes the whole file.
        let path = dir.join(format!("whole.{ext}"));
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--exact", "crash_child", "--nocapture", "--test-threads=1"])
            .env("ZT_CRASH_PATH", &path)
            .stdin(Stdio::piped())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .tap(declared)
            .spawn()
            .unwrap();
        child
            .stdin
            .take()
            .unwrap()
            .write_all(b"\n\n\n\n\n\n")
            .unwrap();
        assert!(child.wait().unwrap().success());
        let r = Reader::open(&path).unwrap();
        assert_eq!(r.objects().len(), 3);
        std::fs::remove_file(&path).unwrap();
        for e in std::fs::read_dir(&dir).unwrap() {
            let _ = std::fs::remove_file(e.unwrap().path());
        }
    }
}

/// Writer options for one of the four formats.
/// A closure applied to a command being built.
trait Tap {
    fn tap(&mut self, f: impl Fn(&mut Self)) -> &mut Self;
}

impl Tap for Command {
    fn tap(&mut self, f: impl Fn(&mut Self)) -> &mut Self {
        f(self);
        self
    }
}

fn format_options(name: &str) -> CreateOptions {
    let (format, version) = match name {
        "v1.2" => (OutputFormat::Ztensor, ztensor::FileVersion::V1_2),
        "v2" => (OutputFormat::Ztensor, ztensor::FileVersion::V2),
        "safetensors" => (OutputFormat::Safetensors, ztensor::FileVersion::V2),
        _ => (OutputFormat::Gguf, ztensor::FileVersion::V2),
    };
    CreateOptions {
        format,
        version,
        ..quick()
    }
}

#[test]
fn round_trips_through_every_pair_of_formats() {
    let dir = common::temp_dir("writers_pairs");
    // What all four hold: the dtypes GGUF and safetensors share, string attributes.
    let tensors: Vec<(&str, DType, Vec<u64>)> = vec![
        ("a.f32", DType::F32, vec![2, 3]),
        ("b.f16", DType::F16, vec![5]),
        ("c.bf16", DType::BF16, vec![1, 4]),
        ("d.f64", DType::F64, vec![]),
        ("e.i8", DType::I8, vec![7]),
        ("f.i16", DType::I16, vec![2]),
        ("g.i32", DType::I32, vec![3, 1]),
        ("h.i64", DType::I64, vec![2]),
    ];
    let formats = ["v1.2", "v2", "safetensors", "gguf"];
    for from in formats {
        let src = dir.join(format!("src.{from}"));
        let mut w = Writer::create_with(&src, &format_options(from)).unwrap();
        w.set_file_attribute("note", &TypedValue::text("pairs"))
            .unwrap();
        for (i, (name, dtype, shape)) in tensors.iter().enumerate() {
            let n = shape.iter().product::<u64>() as usize;
            w.add(
                name,
                *dtype,
                shape,
                &common::data_for(*dtype, n, i as u64),
                &WriteOptions::default(),
            )
            .unwrap();
        }
        w.finish().unwrap();
        let a = Reader::open(&src).unwrap();
        for to in formats {
            let ctx = format!("{from} -> {to}");
            let dst = dir.join(format!("{from}-to.{to}"));
            let mut w = Writer::create_with(&dst, &format_options(to)).unwrap();
            w.set_file_attributes_from(a.raw_attributes().unwrap())
                .unwrap_or_else(|e| panic!("{ctx}: attributes: {e}"));
            for i in 0..a.objects().len() {
                w.copy_object(&a, i, &Default::default())
                    .unwrap_or_else(|e| panic!("{ctx}: {e}"));
            }
            w.finish().unwrap();
            let b = Reader::open(&dst).unwrap();
            assert_eq!(b.objects().len(), tensors.len(), "{ctx}");
            let note = b
                .attributes()
                .and_then(|v| v.get("note").and_then(|n| n.as_text().map(str::to_owned)));
            assert_eq!(note.as_deref(), Some("pairs"), "{ctx}");
            for (i, (name, dtype, shape)) in tensors.iter().enumerate() {
                let oi = b.find(name).unwrap_or_else(|| panic!("{ctx}: no {name}"));
                let o = &b.objects()[oi];
                assert_eq!(
                    (o.format(), o.shape()),
                    ("dense", &shape[..]),
                    "{ctx}: {name}"
                );
                assert_eq!(o.components()[0].dtype(), *dtype, "{ctx}: {name}");
                let n = shape.iter().product::<u64>() as usize;
                assert_eq!(
                    b.read_to_vec(oi, 0).unwrap(),
                    common::data_for(*dtype, n, i as u64),
                    "{ctx}: {name}"
                );
            }
        }
    }
}

/// ggml's own gguf.h, built from the ggml sources that ggml-python's sdist (pinned)
/// vendors, downloaded with the test venv's pip and compiled once under the target dir;
/// None (the test then says why it skips) when that can't be done.
fn ggml_peer() -> Result<PathBuf, String> {
    let python = peer();
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("ggml-peer");
    let exe = dir.join("gguf_peer");
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/ggml_gguf_peer.cpp");
    let stamp = dir.join("stamp");
    let wanted = std::fs::read(&source).unwrap();
    if exe.exists() && std::fs::read(&stamp).ok() == Some(wanted.clone()) {
        return Ok(exe);
    }
    // Built in a directory of this process's own, renamed into place when complete.
    let (done, dir) = (
        dir.clone(),
        dir.with_extension(std::process::id().to_string()),
    );
    let exe = dir.join("gguf_peer");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let run = |cmd: &mut Command| -> Result<(), String> {
        let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
        match out.status.success() {
            true => Ok(()),
            false => Err(format!("{cmd:?}: {}", String::from_utf8_lossy(&out.stderr))),
        }
    };
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "download",
            "--quiet",
            "--no-deps",
            "--no-binary",
            ":all:",
        ])
        .args(["--no-build-isolation", "ggml-python==0.0.45", "-d"])
        .arg(&dir))?;
    run(Command::new("tar")
        .arg("xzf")
        .arg(dir.join("ggml_python-0.0.45.tar.gz"))
        .arg("-C")
        .arg(&dir))?;
    let g = dir.join("ggml_python-0.0.45/vendor/ggml");
    let (inc, src) = (g.join("include"), g.join("src"));
    let mut objects = Vec::new();
    for (compiler, file, extra) in [
        (
            "cc",
            "ggml.c",
            &["-DGGML_VERSION=\"0\"", "-DGGML_COMMIT=\"0\""][..],
        ),
        ("cc", "ggml-quants.c", &[][..]),
        ("c++", "gguf.cpp", &["-std=c++17"][..]),
        ("c++", "ggml-threading.cpp", &["-std=c++17"][..]),
    ] {
        let obj = dir.join(format!("{file}.o"));
        run(Command::new(compiler)
            .args(["-O1", "-c"])
            .args(extra)
            .arg("-I")
            .arg(&inc)
            .arg("-I")
            .arg(&src)
            .arg(src.join(file))
            .arg("-o")
            .arg(&obj))?;
        objects.push(obj);
    }
    run(Command::new("c++")
        .args(["-O1", "-std=c++17", "-I"])
        .arg(&inc)
        .arg(&source)
        .args(&objects)
        .arg("-o")
        .arg(&exe)
        .args(["-lpthread", "-lm"]))?;
    std::fs::write(dir.join("stamp"), wanted).unwrap();
    let _ = std::fs::remove_dir_all(&done);
    std::fs::rename(&dir, &done).map_err(|e| format!("renaming {}: {e}", dir.display()))?;
    Ok(done.join("gguf_peer"))
}

#[test]
fn ggml_gguf_h_reads_what_we_write() {
    let exe = match ggml_peer() {
        Ok(exe) => exe,
        Err(why) => {
            eprintln!("skipped: ggml's gguf.h could not be built from ggml-python's sdist: {why}");
            return;
        }
    };
    let dir = common::temp_dir("writers_ggml");
    for alignment in [None, Some(64)] {
        let path = dir.join(format!("m{alignment:?}.gguf"));
        write_gguf(&path, alignment);
        let out = Command::new(&exe).arg(&path).output().unwrap();
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(out.status.success(), "ggml refused our file: {text}");
        let r = Reader::open(&path).unwrap();
        let mut want = format!(
            "version 3 alignment {} data_offset {}\n",
            r.layout().alignment,
            r.layout().data_offset
        );
        let types: Vec<u32> = vec![8, 0, 1, 2, 3, 4, 5, 6, 7, 8, 10, 11, 12, 9, 9, 9];
        for (i, (k, _)) in gguf_kvs(alignment).iter().enumerate() {
            let t = match (alignment, i) {
                (Some(_), 3) => 4, // general.alignment, a u32
                (Some(_), i) if i > 3 => types[i - 1],
                _ => types[i],
            };
            want.push_str(&format!("kv {k} {t}\n"));
        }
        let ids = [0, 1, 30, 28, 24, 25, 26, 27, 2, 12];
        for (i, o) in r.objects().iter().enumerate() {
            let c = &o.components()[0];
            want.push_str(&format!(
                "tensor {} {} {} {}\n",
                o.name(),
                ids[i],
                c.offset() - r.layout().data_offset,
                c.length()
            ));
        }
        assert_eq!(text, want, "alignment {alignment:?}");
    }
    // A split set's files each open in ggml, with the split keys after the others.
    let ours = dir.join("split");
    std::fs::create_dir(&ours).unwrap();
    let mut w = ztensor::ShardedWriter::create_with(ours.join("m.gguf"), 100, &quick()).unwrap();
    w.set_file_attribute("general.architecture", &TypedValue::text("llama"))
        .unwrap();
    for i in 0..3u64 {
        w.add(
            &format!("t{i}"),
            DType::F32,
            &[20],
            &[0; 80],
            &WriteOptions::default(),
        )
        .unwrap();
    }
    w.finish().unwrap();
    for k in 1..=3 {
        let path = ours.join(format!("m-{k:05}-of-00003.gguf"));
        let text =
            String::from_utf8(Command::new(&exe).arg(&path).output().unwrap().stdout).unwrap();
        let split = "kv split.no 2\nkv split.count 2\nkv split.tensors.count 5\n";
        assert!(text.contains(split), "{}: {text}", path.display());
        assert_eq!(text.contains("kv general.architecture 8"), k == 1, "{text}");
    }
}

/// A tensor of the one-pass tests: (name, object format, shape, dtype, logical type,
/// bytes).
type Tensor = (
    String,
    String,
    Vec<u64>,
    DType,
    Option<&'static str>,
    Vec<u8>,
);

/// How the one-pass tests add their tensors.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Adding {
    /// Not declared: spooled and assembled at `finish`.
    Spooled,
    /// Declared, then added in the order declared.
    Declared,
    /// Declared, then added in `declared_order` (the file front to back).
    InFileOrder,
    /// Declared, then added in the reverse of `declared_order` (every one away from the
    /// cursor).
    Reversed,
    /// Declared, then added in an order of pairs swapped, each tensor streamed in chunks
    /// of 1000 bytes.
    Streamed,
    /// Declared with their bytes (`declare_data`), written by `finish`.
    WithData,
}

/// Writes `tensors` (file attributes `kvs` set first) as `adding` says.
fn write_tensors(
    path: &Path,
    options: &CreateOptions,
    kvs: &[(&str, TypedValue)],
    tensors: &[Tensor],
    adding: Adding,
) {
    let mut w = Writer::create_with(path, options).unwrap();
    for (k, v) in kvs {
        w.set_file_attribute(k, v).unwrap();
    }
    if adding == Adding::WithData {
        for (name, format, shape, dtype, logical, data) in tensors {
            // SAFETY: `tensors` outlives `finish` below and is not changed.
            unsafe { w.declare_data(name, format, shape, *dtype, *logical, data) }.unwrap();
        }
        w.finish().unwrap();
        return;
    }
    if adding != Adding::Spooled {
        for (name, format, shape, dtype, logical, _) in tensors {
            w.declare_object(name, format, shape, *dtype, *logical)
                .unwrap();
        }
        assert_eq!(w.declared_count(), tensors.len());
    }
    let mut order: Vec<usize> = match adding {
        Adding::InFileOrder | Adding::Reversed => w.declared_order(),
        _ => (0..tensors.len()).collect(),
    };
    match adding {
        Adding::Reversed => order.reverse(),
        Adding::Streamed => order.chunks_mut(2).for_each(|c| c.reverse()),
        _ => {}
    }
    for i in order {
        let (name, format, shape, dtype, logical, data) = &tensors[i];
        w.begin_object(name, format, shape).unwrap();
        let logical = logical.or((format != "dense").then_some(format.as_str()));
        if adding == Adding::Streamed {
            w.begin_component("data", *dtype, logical, &WriteOptions::default())
                .unwrap();
            for piece in data.chunks(1000) {
                w.write(piece).unwrap();
            }
            w.end_component().unwrap();
        } else {
            w.add_component("data", *dtype, logical, data, &WriteOptions::default())
                .unwrap();
        }
        w.end_object().unwrap();
    }
    w.finish().unwrap();
}

/// `st_tensors`' tensors with their bytes.
fn st_tensor_data() -> Vec<Tensor> {
    (st_tensors().into_iter().enumerate())
        .map(|(i, (name, dtype, logical, shape))| {
            let n = ztensor::dtype::dense_byte_size(&shape, dtype, logical).unwrap() as usize;
            let data = common::data_for(dtype, n / dtype.size(), i as u64 + 1);
            (
                name.to_owned(),
                "dense".to_owned(),
                shape,
                dtype,
                logical,
                data,
            )
        })
        .collect()
}

/// `gguf_tensors`' tensors with their bytes.
fn gguf_tensor_data() -> Vec<Tensor> {
    (gguf_tensors().into_iter().enumerate())
        .map(|(i, (name, format, shape, dtype))| {
            let numel: u64 = shape.iter().product();
            let data = if format == "dense" {
                common::data_for(dtype, numel as usize, i as u64 + 7)
            } else {
                let (block, size) = if format == "ggml_q4_0" {
                    (32, 18)
                } else {
                    (256, 144)
                };
                common::bytes(i as u64 + 7, (numel / block * size) as usize)
            };
            (name.to_owned(), format.to_owned(), shape, dtype, None, data)
        })
        .collect()
}

/// Many small tensors of four dtypes (a W2 in little: added in an order far from
/// safetensors', so the gathered bytes are written several times) and a few large ones
/// (written to their place at once when away from the cursor).
fn many_tensors(gguf: bool) -> Vec<Tensor> {
    let dtypes = [DType::F32, DType::F16, DType::I32, DType::I8];
    let mut out: Vec<Tensor> = (0..3000)
        .map(|i| {
            let dtype = dtypes[i % 4];
            let n = (1024 + (i * 769) % 3072) / dtype.size();
            let name = format!("t.{i:05}");
            (
                name,
                "dense".into(),
                vec![n as u64],
                dtype,
                None,
                common::data_for(dtype, n, i as u64),
            )
        })
        .collect();
    for (k, at) in [(0u64, 10usize), (1, 1500), (2, 2999)] {
        let n = (3 << 19) + 8 * k as usize;
        let t = (
            format!("big.{k}"),
            "dense".into(),
            vec![n as u64],
            DType::F16,
            None,
            common::bytes(k + 99, n * 2),
        );
        out.insert(at, t);
    }
    if gguf {
        // GGUF: i8 tensors of odd sizes leave padding between tensors.
        out.push((
            "odd".into(),
            "dense".into(),
            vec![7],
            DType::I8,
            None,
            common::bytes(5, 7),
        ));
    }
    out
}

#[test]
fn declared_tensors_are_written_in_one_pass_with_the_same_bytes() {
    let dir = common::temp_dir("writers_declared");
    let st_kvs = [("format", TypedValue::text("pt"))];
    let cases: Vec<(&str, Vec<(&str, TypedValue)>, Vec<Tensor>)> = vec![
        ("safetensors", st_kvs.to_vec(), st_tensor_data()),
        ("gguf", gguf_kvs(None), gguf_tensor_data()),
        ("gguf", gguf_kvs(Some(64)), gguf_tensor_data()),
        ("safetensors", vec![], many_tensors(false)),
        ("gguf", vec![], many_tensors(true)),
    ];
    for (k, (ext, kvs, tensors)) in cases.iter().enumerate() {
        let spooled = dir.join(format!("{k}.spooled.{ext}"));
        write_tensors(&spooled, &quick(), kvs, tensors, Adding::Spooled);
        let want = std::fs::read(&spooled).unwrap();
        let all = [
            Adding::Declared,
            Adding::InFileOrder,
            Adding::Reversed,
            Adding::Streamed,
            Adding::WithData,
        ];
        for adding in all {
            for durable in [false, true] {
                if durable && !matches!(adding, Adding::InFileOrder | Adding::WithData) {
                    continue;
                }
                let path = dir.join(format!("{k}.{adding:?}.{durable}.{ext}"));
                let options = CreateOptions { durable, ..quick() };
                write_tensors(&path, &options, kvs, tensors, adding);
                let got = std::fs::read(&path).unwrap();
                assert!(
                    got == want,
                    "case {k} ({ext}), {adding:?}: {} bytes, the spooled file {} (first \
                     difference at {:?})",
                    got.len(),
                    want.len(),
                    got.iter().zip(&want).position(|(a, b)| a != b)
                );
                std::fs::remove_file(&path).unwrap();
            }
        }
        if k < 3 {
            // And byte for byte the formats' own writers' (the spooled file is, by
            // `safetensors_is_what_safetensors_writes` and `gguf_is_what_gguf_py_writes`).
            let path = dir.join(format!("{k}.declared.{ext}"));
            write_tensors(&path, &quick(), kvs, tensors, Adding::Reversed);
            let theirs = dir.join(format!("{k}.theirs.{ext}"));
            let how = if *ext == "gguf" {
                "gguf-resave"
            } else {
                "st-resave"
            };
            run_peer(&[&how, &path, &theirs]);
            assert!(
                std::fs::read(&theirs).unwrap() == want,
                "case {k}: the peer's bytes"
            );
        }
    }
}

#[test]
fn declarations_are_kept_or_refused() {
    let dir = common::temp_dir("writers_declared_refused");
    let raw = WriteOptions::default();
    let f32s = |n: usize| common::data_for(DType::F32, n, n as u64);
    for ext in ["safetensors", "gguf"] {
        let path = dir.join(format!("m.{ext}"));
        let mut w = Writer::create_with(&path, &quick()).unwrap();
        w.set_file_attribute("general.name", &TypedValue::text("t"))
            .unwrap();
        // What the format can't hold is refused when declared, as when added.
        refused(w.declare("a\0b", DType::F32, None, &[1]), "NUL");
        refused(
            w.declare(&"n".repeat(70_000), DType::F32, None, &[1]),
            "65536",
        );
        refused(
            w.declare("big", DType::F32, None, &[u64::MAX, 2]),
            "more elements than",
        );
        refused(
            w.declare_object("s", "sparse_csr", &[2, 2], DType::F32, None),
            "sparse_csr",
        );
        if ext == "safetensors" {
            refused(
                w.declare("c", DType::F64, Some("complex128"), &[1]),
                "safetensors has no dtype",
            );
            refused(
                w.declare("f4", DType::U8, Some("f4_e2m1"), &[3]),
                "odd count of f4",
            );
            refused(
                w.declare("__metadata__", DType::F32, None, &[1]),
                "'__metadata__'",
            );
        } else {
            refused(
                w.declare("u", DType::U8, None, &[1]),
                "GGUF has no u8 tensors",
            );
            refused(
                w.declare(&"n".repeat(64), DType::F32, None, &[1]),
                "64 bytes or more",
            );
            refused(
                w.declare_object("q", "ggml_q4_k", &[100], DType::U8, None),
                "whole Q4_K blocks",
            );
            refused(
                w.declare_object("q", "ggml_q4_0", &[32], DType::U8, Some("ggml_q8_0")),
                "logical type 'ggml_q4_0'",
            );
        }
        w.declare("a", DType::F32, None, &[2, 3]).unwrap();
        w.declare("b", DType::F32, None, &[4]).unwrap();
        w.declare("c", DType::F32, None, &[5]).unwrap();
        refused(w.declare("a", DType::F32, None, &[1]), "already declared");
        // Added as declared, or refused with the writer still usable.
        refused(
            w.add("x", DType::F32, &[1], &f32s(1), &raw),
            "'x' was not declared",
        );
        refused(
            w.add("a", DType::F32, &[6], &f32s(6), &raw),
            "declared dense of shape [2, 3]",
        );
        refused(
            w.add("a", DType::I32, &[2, 3], &f32s(6), &raw),
            "declared f32, not i32",
        );
        // The header is written now: the key/values and the declarations are fixed.
        w.add("b", DType::F32, &[4], &f32s(4), &raw).unwrap();
        let e = w
            .set_file_attribute("late", &TypedValue::text("x"))
            .unwrap_err();
        assert_eq!(e.kind(), ztensor::ErrorKind::State, "{e}");
        assert!(
            e.message().contains("before the first tensor's data"),
            "{e}"
        );
        let e = w.declare("d", DType::F32, None, &[1]).unwrap_err();
        assert_eq!(e.kind(), ztensor::ErrorKind::State, "{e}");
        refused(
            w.add("b", DType::F32, &[4], &f32s(4), &raw),
            "already added",
        );
        // More bytes than declared are refused before they are written (they would
        // reach the next tensor's place), fewer when the component ends; the object is
        // then left out, to be added again.
        w.begin_object("a", "dense", &[2, 3]).unwrap();
        w.begin_component("data", DType::F32, None, &raw).unwrap();
        w.write(&[7; 20]).unwrap();
        refused(w.write(&[7; 8]), "declared 24 bytes");
        refused(w.end_component(), "declared 24 bytes, but 20 were written");
        w.end_object().map(drop).unwrap_err();
        w.begin_object("c", "dense", &[5]).unwrap();
        refused(
            w.add_component("data", DType::F32, None, &f32s(4), &raw),
            "declared 20 bytes",
        );
        let _ = w.end_object();
        // finish refuses a file with a declared tensor missing (check_finishable says so
        // first, the writer usable), and leaves no file.
        let e = w.check_finishable().unwrap_err();
        assert_eq!(e.kind(), ztensor::ErrorKind::State, "{e}");
        assert!(
            e.message()
                .contains("'a' was declared but not written (1 of 3"),
            "{e}"
        );
        w.add("c", DType::F32, &[5], &f32s(5), &raw).unwrap();
        let e = w.finish().unwrap_err();
        assert_eq!(e.kind(), ztensor::ErrorKind::State, "{e}");
        assert!(
            e.message()
                .contains("'a' was declared but not written (2 of 3"),
            "{e}"
        );
        assert!(!path.exists());
        // Written in full after the failures: the file the spool makes.
        let mut w = Writer::create_with(&path, &quick()).unwrap();
        w.set_file_attribute("general.name", &TypedValue::text("t"))
            .unwrap();
        for (name, n) in [("a", 6u64), ("b", 4), ("c", 5)] {
            let shape = if name == "a" { vec![2, 3] } else { vec![n] };
            w.declare(name, DType::F32, None, &shape).unwrap();
        }
        // "c" first, a failed "a" at the cursor, "b", then "a" again.
        w.add("c", DType::F32, &[5], &f32s(5), &raw).unwrap();
        w.begin_object("a", "dense", &[2, 3]).unwrap();
        w.begin_component("data", DType::F32, None, &raw).unwrap();
        w.write(&[0xee; 12]).unwrap();
        w.end_component().unwrap_err();
        w.end_object().unwrap_err();
        w.add("b", DType::F32, &[4], &f32s(4), &raw).unwrap();
        w.add("a", DType::F32, &[2, 3], &f32s(6), &raw).unwrap();
        w.finish().unwrap();
        let spooled = dir.join(format!("spooled.{ext}"));
        let mut w = Writer::create_with(&spooled, &quick()).unwrap();
        w.set_file_attribute("general.name", &TypedValue::text("t"))
            .unwrap();
        w.add("a", DType::F32, &[2, 3], &f32s(6), &raw).unwrap();
        w.add("b", DType::F32, &[4], &f32s(4), &raw).unwrap();
        w.add("c", DType::F32, &[5], &f32s(5), &raw).unwrap();
        w.finish().unwrap();
        assert!(
            std::fs::read(&path).unwrap() == std::fs::read(&spooled).unwrap(),
            "{ext}"
        );
        // Declarations come first, and not for sets.
        let late = dir.join(format!("late.{ext}"));
        let mut w = Writer::create_with(&late, &quick()).unwrap();
        w.add("a", DType::F32, &[1], &f32s(1), &raw).unwrap();
        let e = w.declare("b", DType::F32, None, &[1]).unwrap_err();
        assert!(e.message().contains("before the first one's data"), "{e}");
        let mut set =
            ztensor::ShardedWriter::create_with(dir.join(format!("set.{ext}")), 100, &quick())
                .unwrap();
        let e = set.declare("b", DType::F32, None, &[1]).unwrap_err();
        assert!(
            e.message().contains("declarations are for single files"),
            "{e}"
        );
    }
    // No tensors declared: the header alone, as spooled.
    for ext in ["safetensors", "gguf"] {
        let (a, b) = (dir.join(format!("e1.{ext}")), dir.join(format!("e2.{ext}")));
        Writer::create_with(&a, &quick()).unwrap().finish().unwrap();
        let mut w = Writer::create_with(&b, &quick()).unwrap();
        w.declare("z", DType::F32, None, &[0]).unwrap();
        w.add("z", DType::F32, &[0], &[], &raw).unwrap();
        w.finish().unwrap();
        let mut w = Writer::create_with(&a, &quick()).unwrap();
        w.add("z", DType::F32, &[0], &[], &raw).unwrap();
        w.finish().unwrap();
        assert!(
            std::fs::read(&a).unwrap() == std::fs::read(&b).unwrap(),
            "{ext}"
        );
    }
    // zTensor: declarations checked the same way; v2's order is by name.
    let path = dir.join("m.zt");
    let mut w = Writer::create_with(&path, &quick()).unwrap();
    for name in ["b", "c", "a"] {
        w.declare(name, DType::F32, None, &[1]).unwrap();
    }
    assert_eq!(w.declared_order(), [2, 0, 1]);
    refused(
        w.add("x", DType::F32, &[1], &f32s(1), &raw),
        "'x' was not declared",
    );
    refused(
        w.add("a", DType::I32, &[1], &f32s(1), &raw),
        "declared f32, not i32",
    );
    for name in ["a", "b"] {
        w.add(name, DType::F32, &[1], &f32s(1), &raw).unwrap();
    }
    assert_eq!(w.finish().unwrap_err().kind(), ztensor::ErrorKind::State);
}

#[test]
fn tensors_declared_with_their_data_are_checked_and_written_at_finish() {
    let dir = common::temp_dir("writers_declared_data");
    let raw = WriteOptions::default();
    let f32s = |n: usize| common::data_for(DType::F32, n, n as u64);
    let (a, b, c) = (f32s(6), f32s(4), f32s(5));
    for ext in ["safetensors", "gguf", "zt"] {
        let path = dir.join(format!("m.{ext}"));
        let mut w = Writer::create_with(&path, &quick()).unwrap();
        // SAFETY: (every declare_data below) the bytes outlive `finish` and are unchanged.
        unsafe {
            refused(
                w.declare_data("a", "dense", &[2, 3], DType::F32, None, &a[..20]),
                "20 bytes given",
            );
            refused(
                w.declare_data(
                    "a",
                    "dense",
                    &[2, 3],
                    DType::F32,
                    None,
                    &[a.as_slice(), &[0; 4]].concat(),
                ),
                "needs 24",
            );
            let bool_refusal = if ext == "gguf" {
                "GGUF has no bool tensors"
            } else {
                "bool byte 2 at index 1"
            };
            refused(
                w.declare_data("t", "dense", &[3], DType::Bool, None, &[0, 2, 1]),
                bool_refusal,
            );
            refused(
                w.declare_data("a\0", "dense", &[2, 3], DType::F32, None, &a),
                "NUL",
            );
            w.declare_data("a", "dense", &[2, 3], DType::F32, None, &a)
                .unwrap();
            refused(
                w.declare_data("a", "dense", &[2, 3], DType::F32, None, &a),
                "already declared",
            );
        }
        w.declare("b", DType::F32, None, &[4]).unwrap();
        // SAFETY: as above.
        unsafe { w.declare_data("c", "dense", &[5], DType::F32, None, &c) }.unwrap();
        // What finish writes is not added again; the ones declared without data are.
        refused(
            w.add("a", DType::F32, &[2, 3], &a, &raw),
            "declared with its data",
        );
        let e = w.check_finishable().unwrap_err();
        assert_eq!(e.kind(), ztensor::ErrorKind::State, "{e}");
        assert!(
            e.message()
                .contains("'b' was declared but not written (2 of 3"),
            "{e}"
        );
        w.add("b", DType::F32, &[4], &b, &raw).unwrap();
        w.finish().unwrap();
        // The file the same tensors added make: safetensors and GGUF in declared order;
        // a compact zTensor v2 file keeps the order blobs were written in, and finish
        // wrote a and c after b.
        let added = dir.join(format!("added.{ext}"));
        let mut w = Writer::create_with(&added, &quick()).unwrap();
        let order: [(&str, &[u64], &Vec<u8>); 3] = if ext == "zt" {
            [("b", &[4], &b), ("a", &[2, 3], &a), ("c", &[5], &c)]
        } else {
            [("a", &[2, 3], &a), ("b", &[4], &b), ("c", &[5], &c)]
        };
        for (name, shape, data) in order {
            w.add(name, DType::F32, shape, data, &raw).unwrap();
        }
        w.finish().unwrap();
        assert!(
            std::fs::read(&path).unwrap() == std::fs::read(&added).unwrap(),
            "{ext}"
        );
        // A missing one still leaves no file.
        let gone = dir.join(format!("gone.{ext}"));
        let mut w = Writer::create_with(&gone, &quick()).unwrap();
        // SAFETY: as above.
        unsafe { w.declare_data("a", "dense", &[2, 3], DType::F32, None, &a) }.unwrap();
        w.declare("b", DType::F32, None, &[4]).unwrap();
        assert_eq!(w.finish().unwrap_err().kind(), ztensor::ErrorKind::State);
        assert!(!gone.exists());
    }
}
