//! Dequantization gives the values of `gguf.quants.dequantize` (gguf-py 0.19.0) bit for
//! bit, for every ggml type gguf-py dequantizes, to f32, f16 and bf16, whole and by rows.
//!
//! `tests/vectors/dequant/` holds a GGUF file written by gguf-py's GGUFWriter and the
//! values gguf-py computes for it, made by `tests/interop/make_dequant_vectors.py` (see
//! its header). `committed_vectors_dequantize_exactly` reads them with no Python;
//! `fresh_vectors_from_the_pinned_gguf` regenerates them in a venv pinned by
//! `tests/interop/dequant-requirements.txt` (under the cargo target directory, reused
//! while the pins are unchanged; ZT_PYTHON chooses the interpreter), checks the fresh
//! files the same way and checks that the committed ones are current. Values are compared
//! by their bits; where both sides are NaN the payloads may differ (they are the CPU's
//! choice in each product), so NaN matches NaN.

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use ztensor::cbor::Value;
use ztensor::json::from_json;
use ztensor::{DType, OpenOptions, Reader, Writer};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// One tensor of the vectors, and where its values are in the value files.
struct Expected {
    name: String,
    ggml_type: u64,
    type_name: String,
    shape: Vec<u64>,
    first: usize,
    values: usize,
}

fn index(dir: &Path) -> Vec<Expected> {
    let text = std::fs::read_to_string(dir.join("dequant.json")).unwrap();
    let doc = from_json(&text, 16).unwrap();
    let mut first = 0;
    doc.as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let text = |k: &str| e.get(k).and_then(Value::as_text).unwrap().to_owned();
            let int = |k: &str| e.get(k).and_then(Value::as_u64).unwrap();
            let values = int("values") as usize;
            let shape = e.get("shape").unwrap().as_array().unwrap();
            let x = Expected {
                name: text("name"),
                ggml_type: int("ggml_type"),
                type_name: text("type"),
                shape: shape.iter().map(|d| d.as_u64().unwrap()).collect(),
                first,
                values,
            };
            first += values;
            x
        })
        .collect()
}

/// Equal bits, or both NaN (`width` bytes per value, little-endian).
fn same_values(ours: &[u8], theirs: &[u8], dtype: DType) -> Result<(), String> {
    let w = dtype.size();
    for (i, (a, b)) in ours.chunks(w).zip(theirs.chunks(w)).enumerate() {
        if a == b {
            continue;
        }
        let nan = |v: &[u8]| match dtype {
            DType::F32 => f32::from_le_bytes(v.try_into().unwrap()).is_nan(),
            DType::F16 => half::f16::from_le_bytes([v[0], v[1]]).is_nan(),
            _ => half::bf16::from_le_bytes([v[0], v[1]]).is_nan(),
        };
        if !(nan(a) && nan(b)) {
            return Err(format!("value {i}: ours {a:02x?}, gguf-py {b:02x?}"));
        }
    }
    Ok(())
}

/// Reads every tensor of the vectors in `r` as f32, f16 and bf16, whole and row by row,
/// and compares with the value files of `dir`.
fn check_reader(r: &Reader<'_>, dir: &Path, ctx: &str) {
    let expected = index(dir);
    let files = [
        (DType::F32, std::fs::read(dir.join("dequant.f32")).unwrap()),
        (DType::F16, std::fs::read(dir.join("dequant.f16")).unwrap()),
        (
            DType::BF16,
            std::fs::read(dir.join("dequant.bf16")).unwrap(),
        ),
    ];
    assert_eq!(r.objects().len(), expected.len(), "{ctx}");
    let mut kinds = std::collections::BTreeSet::new();
    for e in &expected {
        let ctx = format!("{ctx}: {}", e.name);
        let oi = r.find(&e.name).unwrap_or_else(|| panic!("{ctx}: missing"));
        let o = &r.objects()[oi];
        assert_eq!(o.shape(), &e.shape[..], "{ctx}: shape");
        match r.quant_info(oi) {
            Ok(q) => {
                assert_eq!(u64::from(q.block_type.id()), e.ggml_type, "{ctx}");
                assert_eq!(q.block_type.name(), e.type_name, "{ctx}");
                assert_eq!(q.rows, e.shape[0], "{ctx}");
            }
            Err(err) => {
                // F16 and BF16 tensors are dense objects of that dtype.
                assert_eq!(err.kind(), ztensor::ErrorKind::NotFound, "{ctx}: {err}");
                assert_eq!(o.format(), "dense", "{ctx}");
            }
        }
        kinds.insert(e.type_name.clone());
        let row = (e.shape[1]) as usize;
        for (dtype, all) in &files {
            let w = dtype.size();
            let theirs = &all[e.first * w..(e.first + e.values) * w];
            let mut ours = vec![0u8; e.values * w];
            r.read_as(oi, 0, *dtype, &mut ours)
                .unwrap_or_else(|err| panic!("{ctx} as {dtype}: {err}"));
            same_values(&ours, theirs, *dtype).unwrap_or_else(|m| panic!("{ctx} as {dtype}: {m}"));
            // Row by row, and the second row alone, through range reads.
            for first_row in 0..e.shape[0] as usize {
                let mut one = vec![0u8; row * w];
                r.read_as_range(oi, 0, *dtype, (first_row * row) as u64, &mut one)
                    .unwrap_or_else(|err| panic!("{ctx} row {first_row} as {dtype}: {err}"));
                same_values(
                    &one,
                    &theirs[first_row * row * w..(first_row + 1) * row * w],
                    *dtype,
                )
                .unwrap_or_else(|m| panic!("{ctx} row {first_row} as {dtype}: {m}"));
            }
        }
    }
    // Every type gguf-py dequantizes, F16 and BF16 included.
    assert_eq!(kinds.len(), 25, "{ctx}: {kinds:?}");
}

/// Checks a vector directory: the GGUF opened three ways, and a zstd zTensor copy of it
/// (the logical types travel with the copy, so it dequantizes the same).
fn check(dir: &Path) {
    let gguf = dir.join("dequant.gguf");
    let ctx = gguf.display().to_string();
    check_reader(&Reader::open(&gguf).unwrap(), dir, &format!("{ctx} (mmap)"));
    let no_mmap = OpenOptions {
        use_mmap: false,
        ..OpenOptions::default()
    };
    check_reader(
        &Reader::open_with(&gguf, &no_mmap).unwrap(),
        dir,
        &format!("{ctx} (pread)"),
    );
    let bytes = std::fs::read(&gguf).unwrap();
    check_reader(
        &Reader::from_slice(&bytes).unwrap(),
        dir,
        &format!("{ctx} (memory)"),
    );

    let r = Reader::from_slice(&bytes).unwrap();
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    let opts = ztensor::CopyOptions {
        encoding: Some(ztensor::Encoding::Zstd),
        ..Default::default()
    };
    for i in 0..r.objects().len() {
        w.copy_object(&r, i, &opts).unwrap();
    }
    let zt = w.finish().unwrap();
    let copy = Reader::from_slice(&zt).unwrap();
    assert_eq!(
        copy.objects()[2].components()[0].logical_type(),
        Some("ggml_q4_0")
    );
    check_reader(&copy, dir, &format!("{ctx} (zstd zTensor copy)"));
}

#[test]
fn committed_vectors_dequantize_exactly() {
    check(&repo().join("tests/vectors/dequant"));
}

#[test]
fn fresh_vectors_from_the_pinned_gguf() {
    let python = common::pinned_python("tests/interop/dequant-requirements.txt", "dequant-venv");
    let out: PathBuf = common::temp_dir("interop_dequant");
    common::run_ok(
        Command::new(&python)
            .arg(repo().join("tests/interop/make_dequant_vectors.py"))
            .arg(&out),
    );
    check(&out);
    for name in [
        "dequant.gguf",
        "dequant.json",
        "dequant.f32",
        "dequant.f16",
        "dequant.bf16",
    ] {
        let committed = repo().join("tests/vectors/dequant").join(name);
        assert!(
            std::fs::read(out.join(name)).unwrap() == std::fs::read(&committed).unwrap(),
            "{} differs from the generator's: rerun tests/interop/make_dequant_vectors.py \
             tests/vectors/dequant and commit the result",
            committed.display()
        );
    }
    std::fs::remove_dir_all(&out).unwrap();
}

/// The typed attributes and dequantized values of `llama_tiny.gguf` (what
/// c_examples/gguf_loader.c loads, made by tests/interop/make_loader_vector.py).
fn check_loader_vector(dir: &Path) {
    use ztensor::ValueType;
    let r = Reader::open(dir.join("llama_tiny.gguf")).unwrap();
    let get = |key: &str| r.typed_attribute(None, key).unwrap();
    for (key, value) in [
        ("llama.block_count", 2),
        ("llama.context_length", 256),
        ("llama.embedding_length", 64),
        ("llama.attention.head_count", 4),
        ("general.file_type", 2),
        ("tokenizer.ggml.bos_token_id", 1),
    ] {
        assert_eq!(get(key).value_type(), ValueType::U32, "{key}");
        assert_eq!(get(key).get::<u32>().unwrap(), value, "{key}");
    }
    let eps = get("llama.attention.layer_norm_rms_epsilon");
    assert_eq!(eps.value_type(), ValueType::F32);
    assert_eq!(eps.get::<f32>().unwrap(), 1e-5f32);
    assert_eq!(get("general.architecture").as_str().unwrap(), "llama");
    let tokens = get("tokenizer.ggml.tokens");
    assert_eq!(tokens.elem_type().unwrap(), Some(ValueType::String));
    assert_eq!(tokens.len().unwrap(), 100);
    assert_eq!(tokens.string_at(0).unwrap(), b"<unk>");
    assert_eq!(tokens.string_at(99).unwrap(), b"tok99");
    let scores = get("tokenizer.ggml.scores").as_slice::<f32>().unwrap();
    assert_eq!(scores.len(), 100);
    assert_eq!(scores[7], -7.0);
    let types = get("tokenizer.ggml.token_type").as_slice::<i32>().unwrap();
    assert_eq!(&types[..4], &[2, 3, 3, 1]);

    let expected = std::fs::read(dir.join("llama_tiny.f32")).unwrap();
    let mut at = 0;
    for name in [
        "token_embd.weight",
        "blk.0.attn_q.weight",
        "blk.0.ffn_down.weight",
    ] {
        let i = r.find(name).unwrap();
        let numel: u64 = r.objects()[i].shape().iter().product();
        let mut values = vec![0u8; numel as usize * 4];
        r.read_as(i, 0, DType::F32, &mut values).unwrap();
        assert_eq!(&values[..], &expected[at..at + values.len()], "{name}");
        at += values.len();
    }
    assert_eq!(at, expected.len());
}

#[test]
fn committed_loader_vector_reads_typed() {
    check_loader_vector(&repo().join("tests/vectors/gguf"));
}

#[test]
fn fresh_loader_vector_from_the_pinned_gguf() {
    let python = common::pinned_python("tests/interop/dequant-requirements.txt", "dequant-venv");
    let out: PathBuf = common::temp_dir("interop_loader");
    common::run_ok(
        Command::new(&python)
            .arg(repo().join("tests/interop/make_loader_vector.py"))
            .arg(&out),
    );
    check_loader_vector(&out);
    for name in ["llama_tiny.gguf", "llama_tiny.f32"] {
        let committed = repo().join("tests/vectors/gguf").join(name);
        assert!(
            std::fs::read(out.join(name)).unwrap() == std::fs::read(&committed).unwrap(),
            "{} differs from the generator's: rerun tests/interop/make_loader_vector.py \
             tests/vectors/gguf and commit the result",
            committed.display()
        );
    }
    std::fs::remove_dir_all(&out).unwrap();
}
