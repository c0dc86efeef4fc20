//! Typed attribute writing (issue 23 item 3): values of every type written with the
//! writer's typed calls, and GGUF key/values copied by `zt convert` and the copy calls,
//! read back with the same types and values, element types of arrays included; what the
//! manifest keeps for that (`attribute_types`), and records that lie or are malformed.

mod common;

use std::path::Path;
use std::process::Command;

use common::gguf::types::*;
use common::gguf::{Gguf, garr as arr, gstr};
use ztensor::cbor::Value;
use ztensor::{CopyOptions, DType, ErrorKind, Reader, TypedValue, ValueType, WriteOptions, Writer};

/// A model the size of a 128k-vocabulary tokenizer, with a key/value of every GGUF type
/// and every array shape GGUF has.
fn gguf_model() -> Vec<u8> {
    const VOCAB: usize = 128_256;
    let mut tokens = Vec::new();
    let mut scores = Vec::new();
    let mut types = Vec::new();
    for i in 0..VOCAB {
        tokens.extend(gstr(format!("tok{i}").as_bytes()));
        scores.extend((-(i as f32) * 0.25 + 0.1).to_le_bytes());
        types.extend(((i % 6) as i32 + 1).to_le_bytes());
    }
    // An array of arrays of u32, and one of strings.
    let mut nested = Vec::new();
    for n in [2u32, 0, 3] {
        nested.extend(T_U32.to_le_bytes());
        nested.extend(u64::from(n).to_le_bytes());
        for k in 0..n {
            nested.extend((k * 1000 + 7).to_le_bytes());
        }
    }
    let mut nested_strings = T_STRING.to_le_bytes().to_vec();
    nested_strings.extend(2u64.to_le_bytes());
    nested_strings.extend(gstr(b"a"));
    nested_strings.extend(gstr(b"bc"));
    Gguf::new()
        .kv("general.architecture", T_STRING, &gstr(b"llama"))
        .kv("llama.context_length", T_U32, &4096u32.to_le_bytes())
        .kv("llama.block_count", T_U32, &32u32.to_le_bytes())
        .kv("llama.rope.freq_base", T_F32, &500000.0f32.to_le_bytes())
        .kv(
            "llama.attention.layer_norm_rms_epsilon",
            T_F32,
            &1e-5f32.to_le_bytes(),
        )
        .kv("k.u8", T_U8, &[200])
        .kv("k.i8", T_I8, &(-100i8).to_le_bytes())
        .kv("k.u16", T_U16, &60000u16.to_le_bytes())
        .kv("k.i16", T_I16, &(-30000i16).to_le_bytes())
        .kv("k.i32.positive", T_I32, &7i32.to_le_bytes())
        .kv("k.i32", T_I32, &(-7i32).to_le_bytes())
        .kv("k.u64", T_U64, &u64::MAX.to_le_bytes())
        .kv("k.i64.positive", T_I64, &5i64.to_le_bytes())
        .kv("k.i64", T_I64, &i64::MIN.to_le_bytes())
        .kv("k.f64", T_F64, &0.1f64.to_le_bytes())
        .kv("k.bool", T_BOOL, &[1])
        .kv("k.not_utf8", T_STRING, &gstr(&[0xff, 0xfe, b'x']))
        .kv(
            "tokenizer.ggml.tokens",
            T_ARRAY,
            &arr(T_STRING, VOCAB, &tokens),
        )
        .kv(
            "tokenizer.ggml.scores",
            T_ARRAY,
            &arr(T_F32, VOCAB, &scores),
        )
        .kv(
            "tokenizer.ggml.token_type",
            T_ARRAY,
            &arr(T_I32, VOCAB, &types),
        )
        .kv("a.u8", T_ARRAY, &arr(T_U8, 3, &[1, 2, 255]))
        .kv("a.i16", T_ARRAY, &arr(T_I16, 2, &[0xff, 0xff, 2, 0]))
        .kv("a.u64", T_ARRAY, &arr(T_U64, 1, &9u64.to_le_bytes()))
        .kv("a.f64", T_ARRAY, &arr(T_F64, 1, &2.5f64.to_le_bytes()))
        .kv("a.bool", T_ARRAY, &arr(T_BOOL, 3, &[1, 0, 1]))
        .kv("a.empty_u32", T_ARRAY, &arr(T_U32, 0, &[]))
        .kv("a.empty_strings", T_ARRAY, &arr(T_STRING, 0, &[]))
        .kv("a.nested", T_ARRAY, &arr(T_ARRAY, 3, &nested))
        .kv(
            "a.nested_strings",
            T_ARRAY,
            &arr(T_ARRAY, 1, &nested_strings),
        )
        .tensor("blk.0.attn_q.weight", &[4, 2], 0, &[0u8; 32])
        .build()
}

/// Every file attribute of `r` as typed values, in file order.
fn typed_file_attributes(r: &Reader<'_>) -> Vec<(String, TypedValue)> {
    let map = r.typed_attributes(None).unwrap();
    (0..map.len().unwrap())
        .map(|i| {
            let (k, v) = map.entry(i).unwrap();
            (
                k.as_str().unwrap().to_owned(),
                TypedValue::from_attr(v).unwrap(),
            )
        })
        .collect()
}

/// `out` is `input` copied: file attributes and every object, as `zt convert` does.
fn convert(input: &Path, out: &Path) {
    let r = Reader::open(input).unwrap();
    let mut w = Writer::create_with(out, &common::v12()).unwrap();
    if let Some(a) = r.raw_attributes() {
        w.set_file_attributes_from(a).unwrap();
    }
    for i in 0..r.objects().len() {
        w.copy_object(&r, i, &CopyOptions::default()).unwrap();
    }
    w.finish().unwrap();
}

fn temp(name: &str) -> std::path::PathBuf {
    common::temp_dir(&format!("typed_attributes_{name}"))
}

#[test]
fn gguf_key_values_keep_every_type_through_a_copy() {
    let dir = temp("gguf_copy");
    let gguf = dir.join("model.gguf");
    std::fs::write(&gguf, gguf_model()).unwrap();
    let copied = dir.join("copied.zt");
    convert(&gguf, &copied);
    check_copy(&gguf, &copied);
}

/// The path of the `zt` tool cargo built for these tests (None without the `cli`
/// feature, which the test that runs it then says it needs).
const ZT: Option<&str> = option_env!("CARGO_BIN_EXE_zt");

#[test]
#[cfg_attr(
    not(feature = "cli"),
    ignore = "runs the zt tool, which needs the cli feature: cargo test --features cli"
)]
fn gguf_key_values_keep_every_type_through_zt_convert() {
    let zt = ZT.expect("the zt tool (built with the cli feature)");
    let dir = temp("gguf_convert");
    let gguf = dir.join("model.gguf");
    std::fs::write(&gguf, gguf_model()).unwrap();
    let converted = dir.join("converted.zt");
    let out = Command::new(zt)
        .args(["convert", "--to", "v1.2"])
        .arg(&gguf)
        .arg(&converted)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check_copy(&gguf, &converted);
}

/// `copy` (of `gguf`, by the copy calls or `zt convert`) has every key/value of the GGUF
/// with its type, its objects' attributes, and is about as small.
fn check_copy(gguf: &Path, copy: &Path) {
    let source = Reader::open(gguf).unwrap();
    let want = typed_file_attributes(&source);
    assert_eq!(want.len(), 29);
    let r = Reader::open(copy).unwrap();
    assert_eq!(r.container().name(), "zt");
    let got = typed_file_attributes(&r);
    assert_eq!(got.len(), want.len());
    for ((wk, wv), (gk, gv)) in want.iter().zip(&got) {
        assert_eq!(wk, gk);
        assert_eq!(wv, gv, "{wk} in {}", copy.display());
    }
    // The same JSON as the GGUF's (the values are the same plain CBOR).
    assert_eq!(
        r.raw_attributes().unwrap().to_json().unwrap(),
        source.raw_attributes().unwrap().to_json().unwrap()
    );
    // Object attributes, and the tensor's bytes.
    let q = r.find("blk.0.attn_q.weight").unwrap();
    let sq = source.find("blk.0.attn_q.weight").unwrap();
    assert_eq!(
        TypedValue::from_attr(r.typed_attributes(Some(q)).unwrap()).unwrap(),
        TypedValue::from_attr(source.typed_attributes(Some(sq)).unwrap()).unwrap()
    );

    // Spot checks, as a loader reads them: the exact types, and contiguous arrays.
    let attr = |k: &str| r.typed_attribute(None, k).unwrap();
    assert_eq!(attr("llama.context_length").value_type(), ValueType::U32);
    assert_eq!(attr("llama.context_length").get::<u32>().unwrap(), 4096);
    assert_eq!(attr("llama.rope.freq_base").value_type(), ValueType::F32);
    assert_eq!(
        attr("llama.attention.layer_norm_rms_epsilon")
            .get::<f32>()
            .unwrap(),
        1e-5
    );
    assert_eq!(attr("k.i64.positive").value_type(), ValueType::I64);
    assert_eq!(attr("k.i64").get::<i64>().unwrap(), i64::MIN);
    assert_eq!(attr("k.u64").value_type(), ValueType::U64);
    assert_eq!(
        attr("k.not_utf8").string_bytes().unwrap(),
        &[0xff, 0xfe, b'x']
    );
    let scores = attr("tokenizer.ggml.scores");
    assert_eq!(scores.elem_type().unwrap(), Some(ValueType::F32));
    let s = scores.as_slice::<f32>().unwrap();
    assert_eq!((s.len(), s[3]), (128_256, -0.75 + 0.1));
    let types = attr("tokenizer.ggml.token_type");
    assert_eq!(types.as_slice::<i32>().unwrap()[7], 2);
    assert_eq!(
        attr("a.empty_u32").elem_type().unwrap(),
        Some(ValueType::U32)
    );
    assert_eq!(
        attr("a.empty_strings").elem_type().unwrap(),
        Some(ValueType::String)
    );
    let nested = attr("a.nested");
    assert_eq!(nested.elem_type().unwrap(), Some(ValueType::Array));
    assert_eq!(
        nested.at(1).unwrap().elem_type().unwrap(),
        Some(ValueType::U32)
    );
    assert_eq!(
        nested.at(2).unwrap().as_slice::<u32>().unwrap(),
        &[7, 1007, 2007]
    );

    // The scores array is as small as the GGUF's: a CBOR single float each, not a double.
    let zt_size = std::fs::metadata(copy).unwrap().len();
    let gguf_size = std::fs::metadata(gguf).unwrap().len();
    assert!(
        zt_size < gguf_size * 13 / 10,
        "{zt_size} bytes converted from {gguf_size}"
    );
}

#[test]
fn typed_values_of_every_kind_read_back_as_written() {
    let dir = temp("kinds");
    let path = dir.join("kinds.zt");
    let text = TypedValue::text;
    let numbers = |elem: ValueType, bytes: Vec<u8>| TypedValue::numbers(elem, bytes).unwrap();
    let values = vec![
        ("null", TypedValue::Null),
        ("bool", TypedValue::Bool(false)),
        ("i8", TypedValue::I8(-3)),
        ("i8+", TypedValue::I8(3)),
        ("i16", TypedValue::I16(i16::MIN)),
        ("i32", TypedValue::I32(1 << 20)),
        ("i64+", TypedValue::I64(0)),
        ("i64", TypedValue::I64(-1)),
        ("u8", TypedValue::U8(0)),
        ("u16", TypedValue::U16(u16::MAX)),
        ("u32", TypedValue::U32(7)),
        ("u64", TypedValue::U64(1 << 40)),
        ("f32", TypedValue::F32(0.5)),
        ("f32 nan", TypedValue::F32(f32::NAN)),
        ("f32 -0", TypedValue::F32(-0.0)),
        ("f64", TypedValue::F64(0.5)),
        ("string", text("héllo")),
        ("not utf8", TypedValue::String(vec![0xc3])),
        ("bytes", TypedValue::Bytes(vec![0, 1, 2])),
        (
            "u16s",
            numbers(
                ValueType::U16,
                [1u16, 65535].iter().flat_map(|v| v.to_ne_bytes()).collect(),
            ),
        ),
        (
            "i64s",
            numbers(
                ValueType::I64,
                [-1i64, 5].iter().flat_map(|v| v.to_ne_bytes()).collect(),
            ),
        ),
        (
            "i64s negative",
            numbers(ValueType::I64, (-3i64).to_ne_bytes().to_vec()),
        ),
        (
            "f32s",
            numbers(
                ValueType::F32,
                [0.1f32, 2.0].iter().flat_map(|v| v.to_ne_bytes()).collect(),
            ),
        ),
        (
            "f64s",
            numbers(ValueType::F64, 0.1f64.to_ne_bytes().to_vec()),
        ),
        ("bools", numbers(ValueType::Bool, vec![1, 0])),
        ("empty i8s", numbers(ValueType::I8, Vec::new())),
        ("empty f64s", numbers(ValueType::F64, Vec::new())),
        (
            "mixed",
            TypedValue::Array {
                elem: None,
                items: vec![
                    TypedValue::U8(1),
                    text("x"),
                    TypedValue::F32(1.5),
                    TypedValue::Null,
                ],
            },
        ),
        (
            "empty declared maps",
            TypedValue::Array {
                elem: Some(ValueType::Map),
                items: Vec::new(),
            },
        ),
        (
            "map",
            TypedValue::Map(vec![
                (text("u32"), TypedValue::U32(9)),
                (text("plain"), TypedValue::U64(9)),
                (TypedValue::U64(3), TypedValue::U64(4)),
                (
                    text("inner"),
                    TypedValue::Map(vec![(text("f32"), TypedValue::F32(0.25))]),
                ),
            ]),
        ),
    ];
    let mut w = Writer::create_with(&path, &common::v12()).unwrap();
    for (k, v) in &values {
        w.set_file_attribute(k, v).unwrap();
    }
    // A second set replaces a key's value in place.
    w.set_file_attribute("u32", &TypedValue::U32(8)).unwrap();
    w.add("t", DType::F32, &[1], &[0; 4], &WriteOptions::default())
        .unwrap();
    w.set_object_attribute("t", "ggml_type_id", &TypedValue::U32(2))
        .unwrap();
    w.set_object_attribute("t", "scale", &TypedValue::F32(0.125))
        .unwrap();
    assert_eq!(
        w.set_object_attribute("nope", "k", &TypedValue::U8(1))
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    assert_eq!(
        w.set_file_attributes_typed(&TypedValue::U8(1))
            .unwrap_err()
            .kind(),
        ErrorKind::InvalidArgument
    );
    w.finish().unwrap();

    let r = Reader::open(&path).unwrap();
    let got = typed_file_attributes(&r);
    assert_eq!(got.len(), values.len());
    for ((wk, wv), (gk, gv)) in values.iter().zip(&got) {
        assert_eq!(*wk, gk);
        let wv = if *wk == "u32" {
            &TypedValue::U32(8)
        } else {
            wv
        };
        match (wv, gv) {
            (TypedValue::F32(a), TypedValue::F32(b)) => {
                assert_eq!(
                    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan()),
                    true,
                    "{wk}"
                )
            }
            _ => assert_eq!(wv, gv, "{wk}"),
        }
    }
    let t = TypedValue::from_attr(r.typed_attributes(Some(0)).unwrap()).unwrap();
    assert_eq!(
        t,
        TypedValue::Map(vec![
            (text("ggml_type_id"), TypedValue::U32(2)),
            (text("scale"), TypedValue::F32(0.125)),
        ])
    );
    // Copied into another file (as stored: attributes and record), the same again.
    let copy = dir.join("copy.zt");
    convert(&path, &copy);
    let c = Reader::open(&copy).unwrap();
    assert_eq!(typed_file_attributes(&c).len(), values.len());
    assert_eq!(
        TypedValue::from_attr(c.typed_attributes(Some(0)).unwrap()).unwrap(),
        t
    );
    assert_eq!(
        TypedValue::from_attr(c.typed_attribute(None, "map").unwrap()).unwrap(),
        values.iter().find(|(k, _)| *k == "map").unwrap().1
    );
}

/// The manifest keeps a record beside the attributes: plain CBOR values for every other
/// reader, and `attribute_types` naming the types CBOR doesn't carry.
#[test]
fn the_manifest_keeps_plain_values_and_a_record() {
    let dir = temp("manifest");
    let path = dir.join("record.zt");
    let mut w = Writer::create_with(&path, &common::v12()).unwrap();
    w.set_file_attribute("n", &TypedValue::U32(4096)).unwrap();
    w.set_file_attribute("plain", &TypedValue::U64(1)).unwrap();
    w.set_file_attribute("f", &TypedValue::F32(0.5)).unwrap();
    w.finish().unwrap();
    let bytes = std::fs::read(&path).unwrap();
    let manifest = common::manifest_of(&bytes);
    let attrs = manifest.get("attributes").unwrap();
    assert_eq!(attrs.get("n"), Some(&Value::Unsigned(4096)));
    assert_eq!(attrs.get("f"), Some(&Value::Float(0.5)));
    let record = manifest.get("attribute_types").unwrap();
    assert_eq!(
        record,
        &Value::Map(vec![
            (Value::Text("f".into()), Value::Text("f32".into())),
            (Value::Text("n".into()), Value::Text("u32".into())),
        ])
    );
    // Without typed calls, no record at all.
    let untyped = dir.join("untyped.zt");
    let mut w = Writer::create_with(&untyped, &common::v12()).unwrap();
    w.set_file_attribute("plain", &TypedValue::U64(1)).unwrap();
    w.finish().unwrap();
    let manifest = common::manifest_of(&std::fs::read(&untyped).unwrap());
    assert_eq!(manifest.get("attribute_types"), None);
}

/// A record is a hint: one that doesn't fit its value is ignored, and one that isn't a
/// map is a malformed file.
#[test]
fn records_that_lie_change_nothing_and_malformed_ones_fail_the_open() {
    let dir = temp("lies");
    let path = dir.join("lies.zt");
    let mut w = Writer::create_with(&path, &common::v12()).unwrap();
    w.set_file_attribute("a", &TypedValue::U16(300)).unwrap();
    w.set_file_attribute("b", &TypedValue::F64(0.1)).unwrap();
    w.set_file_attribute("c", &TypedValue::text("s")).unwrap();
    w.set_file_attribute("d", &TypedValue::U8(1)).unwrap();
    w.finish().unwrap();
    let good = std::fs::read(&path).unwrap();
    // Rewrite the record: "u8" on 300, "f32" on 0.1, "u32[]" on a string, "i8" on "d".
    let lies = common::replace_manifest_value(
        &good,
        "attribute_types",
        &Value::Map(vec![
            (Value::Text("a".into()), Value::Text("u8".into())),
            (Value::Text("b".into()), Value::Text("f32".into())),
            (Value::Text("c".into()), Value::Text("u32[]".into())),
            (Value::Text("d".into()), Value::Text("i8".into())),
            (Value::Text("zz".into()), Value::Text("f128".into())),
        ]),
    );
    let r = Reader::from_slice(&lies).unwrap();
    let t = |k: &str| r.typed_attribute(None, k).unwrap().value_type();
    assert_eq!(t("a"), ValueType::U64);
    assert_eq!(t("b"), ValueType::F64);
    assert_eq!(t("c"), ValueType::String);
    assert_eq!(t("d"), ValueType::I8);
    // Not a map: the file is malformed.
    let bad = common::replace_manifest_value(&good, "attribute_types", &Value::Array(vec![]));
    let e = Reader::from_slice(&bad).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Format, "{e}");
    assert!(e.to_string().contains("attribute_types"), "{e}");
}
