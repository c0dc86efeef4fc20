//! safetensors and GGUF files written by the formats' own Python packages are read exactly.
//!
//! `tests/vectors/{safetensors,gguf}/` hold small files made by
//! `tests/interop/make_format_vectors.py` (safetensors' numpy API with ml_dtypes, gguf-py's
//! GGUFWriter), each with an expectation `NAME.json` built from what was handed to the
//! writer: names, formats, shapes, dtypes, logical types, attributes, sha256 of the bytes.
//! `committed_vectors_read_exactly` checks them (no Python needed);
//! `fresh_vectors_from_the_pinned_packages` regenerates them in a venv pinned by
//! `tests/interop/formats-requirements.txt` (under the cargo target directory, reused while
//! the pins are unchanged; ZT_PYTHON chooses the interpreter), checks the fresh files the
//! same way, and checks that the committed expectations and GGUF files are current
//! (safetensors files are not compared byte for byte: the package writes `__metadata__` in
//! hash-map order, which changes from run to run).

mod common;

use std::path::{Path, PathBuf};
use std::process::Command;

use common::same;
use sha2::{Digest, Sha256};
use ztensor::cbor::Value;
use ztensor::json::from_json;
use ztensor::{OpenOptions, Reader, hex_lower};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The expectation files (NAME.json) of a vector directory, sorted.
fn expectations(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    v.sort();
    v
}

/// The file an expectation describes: same stem, the directory's extension.
fn vector_of(json: &Path) -> PathBuf {
    let ext = match json
        .parent()
        .unwrap()
        .file_name()
        .unwrap()
        .to_str()
        .unwrap()
    {
        "safetensors" => "safetensors",
        "gguf" => "gguf",
        other => panic!("unexpected vector directory {other}"),
    };
    json.with_extension(ext)
}

/// Bytes copied into 64-byte aligned memory (so `from_slice` views can be zero-copy).
fn aligned_copy(bytes: &[u8]) -> Vec<u128> {
    let mut v = vec![0u128; bytes.len().div_ceil(16) + 4];
    let base = v.as_ptr() as usize;
    let skip = (64 - base % 64) % 64;
    // SAFETY: u128 storage viewed as bytes, in bounds (4 spare u128 cover the skip).
    let raw = unsafe { std::slice::from_raw_parts_mut(v.as_mut_ptr().cast::<u8>(), v.len() * 16) };
    raw[skip..skip + bytes.len()].copy_from_slice(bytes);
    v
}

fn aligned_slice(v: &[u128], len: usize) -> &[u8] {
    let base = v.as_ptr() as usize;
    let skip = (64 - base % 64) % 64;
    // SAFETY: as in aligned_copy.
    let raw = unsafe { std::slice::from_raw_parts(v.as_ptr().cast::<u8>(), v.len() * 16) };
    &raw[skip..skip + len]
}

/// Checks one reader against an expectation document.
fn check(r: &Reader<'_>, doc: &Value, ctx: &str, mapped: bool) {
    assert_eq!(
        Some(r.container().name()),
        doc.get("format").and_then(Value::as_text),
        "{ctx}: format"
    );
    assert_eq!(
        Some(r.version()),
        doc.get("version").and_then(Value::as_text),
        "{ctx}: version"
    );
    match doc.get("attributes").unwrap() {
        Value::Null => assert!(r.attributes().is_none(), "{ctx}: unexpected attributes"),
        want => {
            let ours = r
                .attributes()
                .unwrap_or_else(|| panic!("{ctx}: no attributes"));
            assert!(
                same(&ours, want),
                "{ctx}: attributes {ours:?}, expected {want:?}"
            );
            // GGUF keeps key order.
            if r.container().name() == "gguf" {
                let keys = |v: &Value| -> Vec<Value> {
                    v.as_map().unwrap().iter().map(|(k, _)| k.clone()).collect()
                };
                assert_eq!(keys(&ours), keys(want), "{ctx}: key order");
            }
        }
    }
    let objects = doc.get("objects").unwrap().as_array().unwrap();
    assert_eq!(r.objects().len(), objects.len(), "{ctx}: object count");
    let ordered = doc.get("ordered") == Some(&Value::Bool(true));
    for (i, want) in objects.iter().enumerate() {
        let name = want.get("name").unwrap().as_text().unwrap();
        let oi = r
            .find(name)
            .unwrap_or_else(|| panic!("{ctx}: no object {name}"));
        if ordered {
            assert_eq!(oi, i, "{ctx}: '{name}' out of order");
        }
        let o = &r.objects()[oi];
        let octx = format!("{ctx}: object '{name}'");
        assert_eq!(
            Some(o.format()),
            want.get("format").unwrap().as_text(),
            "{octx}"
        );
        let shape: Vec<u64> = want
            .get("shape")
            .unwrap()
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        assert_eq!(o.shape(), &shape[..], "{octx}: shape");
        match want.get("attributes").unwrap() {
            Value::Null => assert!(o.attributes().is_none(), "{octx}: attributes"),
            a => assert!(
                same(&o.attributes().unwrap(), a),
                "{octx}: attributes {:?}",
                o.attributes()
            ),
        }
        assert_eq!(o.components().len(), 1, "{octx}");
        let c = &o.components()[0];
        assert_eq!(c.role(), "data", "{octx}");
        assert_eq!(
            Some(c.dtype().name()),
            want.get("dtype").unwrap().as_text(),
            "{octx}"
        );
        assert_eq!(
            c.logical_type(),
            want.get("type").unwrap().as_text(),
            "{octx}: type"
        );
        assert_eq!(
            Some(c.decoded_length()),
            want.get("nbytes").unwrap().as_u64(),
            "{octx}"
        );
        let view = r.view(oi, 0).unwrap();
        let digest = hex_lower(&Sha256::digest(view.data));
        assert_eq!(
            Some(digest.as_str()),
            want.get("sha256").unwrap().as_text(),
            "{octx}: bytes"
        );
        assert_eq!(view.zero_copy, mapped, "{octx}: zero_copy");
        assert_eq!(r.read_to_vec(oi, 0).unwrap(), view.data, "{octx}: read");
        check_values(r, oi, want, &octx);
    }
    // Objects come in the order of their bytes in the file (GGUF: as the writer placed them).
    let offsets: Vec<u64> = r
        .objects()
        .iter()
        .map(|o| o.components()[0].offset())
        .collect();
    assert!(
        offsets.is_sorted(),
        "{ctx}: objects not in data order: {offsets:?}"
    );
}

/// The values the expectation gives as bits ("f32", "f16", "bf16", from ml_dtypes) equal
/// `read_as` of the object, bit for bit.
fn check_values(r: &Reader<'_>, oi: usize, want: &Value, ctx: &str) {
    use ztensor::DType;
    for (key, dtype) in [
        ("f32", DType::F32),
        ("f16", DType::F16),
        ("bf16", DType::BF16),
    ] {
        let Some(bits) = want.get(key).and_then(Value::as_array) else {
            continue;
        };
        let mut got = vec![0u8; bits.len() * dtype.size()];
        r.read_as(oi, 0, dtype, &mut got).unwrap();
        let got: Vec<u64> = got
            .chunks_exact(dtype.size())
            .map(|b| b.iter().rev().fold(0u64, |acc, &x| acc << 8 | u64::from(x)))
            .collect();
        let want: Vec<u64> = bits.iter().map(|b| b.as_u64().unwrap()).collect();
        assert_eq!(got, want, "{ctx}: values as {key}");
    }
}

/// Opens one vector three ways (mmap, pread, aligned memory) and checks each.
fn check_vector(json: &Path) {
    let doc = from_json(&std::fs::read_to_string(json).unwrap(), 64).unwrap();
    let file = vector_of(json);
    let ctx = file.display().to_string();
    let bytes = std::fs::read(&file).unwrap();
    let storage = aligned_copy(&bytes);
    let memory = aligned_slice(&storage, bytes.len());
    let no_mmap = OpenOptions {
        use_mmap: false,
        ..OpenOptions::default()
    };
    let opened = [
        ("mmap", Reader::open(&file), true),
        ("pread", Reader::open_with(&file, &no_mmap), false),
        ("memory", Reader::from_slice(memory), true),
    ];
    for (how, result, zero_copy) in opened {
        let ctx = format!("{ctx} ({how})");
        match doc.get("error") {
            Some(status) => {
                let e = result.expect_err(&ctx);
                assert_eq!(Some(e.kind().status_name()), status.as_text(), "{ctx}: {e}");
            }
            None => check(
                &result.unwrap_or_else(|e| panic!("{ctx}: {e}")),
                &doc,
                &ctx,
                zero_copy,
            ),
        }
    }
}

#[test]
fn committed_vectors_read_exactly() {
    let mut n = 0;
    for sub in ["safetensors", "gguf"] {
        for json in expectations(&repo().join("tests/vectors").join(sub)) {
            check_vector(&json);
            n += 1;
        }
    }
    assert!(n >= 7, "only {n} vectors");
}

/// The venv's python, created on first use.
fn formats_python() -> PathBuf {
    common::pinned_python("tests/interop/formats-requirements.txt", "formats-venv")
}

#[test]
fn fresh_vectors_from_the_pinned_packages() {
    let python = formats_python();
    let out = common::temp_dir("interop_formats");
    let run = Command::new(&python)
        .arg(repo().join("tests/interop/make_format_vectors.py"))
        .arg(&out)
        .output()
        .unwrap();
    assert!(
        run.status.success(),
        "make_format_vectors.py failed:\n{}{}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    for sub in ["safetensors", "gguf"] {
        let fresh = expectations(&out.join(sub));
        let committed = expectations(&repo().join("tests/vectors").join(sub));
        let names = |v: &[PathBuf]| -> Vec<String> {
            v.iter()
                .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(names(&fresh), names(&committed), "{sub}: vector set");
        for json in &fresh {
            check_vector(json);
            let name = json.file_name().unwrap();
            let committed_dir = repo().join("tests/vectors").join(sub);
            assert!(
                std::fs::read(json).unwrap() == std::fs::read(committed_dir.join(name)).unwrap(),
                "{sub}/{name:?} differs from the generator's: rerun it and commit the result"
            );
            if sub == "gguf" {
                let file = vector_of(json);
                let committed = committed_dir.join(file.file_name().unwrap());
                assert!(
                    std::fs::read(&file).unwrap() == std::fs::read(&committed).unwrap(),
                    "{} differs from the generator's: rerun it and commit the result",
                    committed.display()
                );
            }
        }
    }
    std::fs::remove_dir_all(&out).unwrap();
}
