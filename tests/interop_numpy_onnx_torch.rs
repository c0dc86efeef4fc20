//! NumPy `.npy`/`.npz` files written by numpy itself, ONNX models written by the `onnx`
//! package and PyTorch checkpoints written by `torch.save` are read exactly: every dtype
//! and byte order, Fortran order, stored and deflated npz members, raw_data and typed
//! fields of every ONNX type, external data; every torch dtype, views into shared
//! storages, nested dicts, a sharded checkpoint with its index.
//!
//! torch is not installed where the tests run (PyPI's torch pulls gigabytes of CUDA
//! libraries): `tests/vectors/torch/` holds checkpoints made once by
//! `tests/interop/make_torch_fixtures.py` with its expected.json, checked without torch;
//! `fresh_fixtures_from_torch` remakes them where a python with torch is found
//! (`ZT_TORCH_PYTHON`, else `python3`) and says why it skips otherwise.
//!
//! `tests/vectors/{numpy,onnx}/` hold files made by
//! `tests/interop/make_numpy_onnx_vectors.py` with `expected.json` (what the generator
//! handed to the writer: names, shapes, dtypes, sha256 of the row-major little-endian
//! bytes). `committed_vectors_read_exactly` checks them (no Python needed);
//! `fresh_vectors_from_the_pinned_packages` regenerates them in a venv pinned by
//! `tests/interop/numpy-onnx-requirements.txt` (under the cargo target directory, reused
//! while the pins are unchanged; ZT_PYTHON chooses the interpreter) and checks the fresh
//! files the same way.

mod common;

use std::path::Path;
use std::process::Command;

use common::same;
use sha2::{Digest, Sha256};
use ztensor::cbor::Value;
use ztensor::json::from_json;
use ztensor::{OpenOptions, Reader, hex_lower};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Checks one reader against a file's expectation.
fn check(r: &Reader<'_>, want: &Value, ctx: &str, mapped: bool) {
    assert_eq!(
        Some(r.container().name()),
        want.get("format").and_then(Value::as_text),
        "{ctx}: format"
    );
    assert_eq!(
        Some(r.version()),
        want.get("version").and_then(Value::as_text),
        "{ctx}: version"
    );
    match want.get("attributes") {
        None | Some(Value::Null) => assert!(r.attributes().is_none(), "{ctx}: attributes"),
        Some(a) => {
            let ours = r
                .attributes()
                .unwrap_or_else(|| panic!("{ctx}: no attributes"));
            assert!(same(&ours, a), "{ctx}: attributes {ours:?}, expected {a:?}");
        }
    }
    let objects = want.get("objects").unwrap().as_array().unwrap();
    assert_eq!(r.objects().len(), objects.len(), "{ctx}: object count");
    for (i, w) in objects.iter().enumerate() {
        let name = w.get("name").unwrap().as_text().unwrap();
        let octx = format!("{ctx}: '{name}'");
        let oi = r.find(name).unwrap_or_else(|| panic!("{octx}: missing"));
        assert_eq!(oi, i, "{octx}: order");
        let o = &r.objects()[oi];
        assert_eq!(o.format(), "dense", "{octx}");
        let shape: Vec<u64> = (w.get("shape").unwrap().as_array().unwrap())
            .iter()
            .map(|d| d.as_u64().unwrap())
            .collect();
        assert_eq!(o.shape(), &shape[..], "{octx}: shape");
        match w.get("attributes") {
            None | Some(Value::Null) => assert!(o.attributes().is_none(), "{octx}: attributes"),
            Some(a) => assert!(same(&o.attributes().unwrap(), a), "{octx}: attributes"),
        }
        let c = &o.components()[0];
        assert_eq!(
            Some(c.dtype().name()),
            w.get("dtype").unwrap().as_text(),
            "{octx}"
        );
        assert_eq!(
            c.logical_type(),
            w.get("type").unwrap().as_text(),
            "{octx}: type"
        );
        assert_eq!(
            Some(c.decoded_length()),
            w.get("nbytes").unwrap().as_u64(),
            "{octx}"
        );
        let sha = w.get("sha256").unwrap().as_text();
        let read = r
            .read_to_vec(oi, 0)
            .unwrap_or_else(|e| panic!("{octx}: {e}"));
        assert_eq!(
            Some(hex_lower(&Sha256::digest(&read)).as_str()),
            sha,
            "{octx}: read bytes"
        );
        let view = r.view(oi, 0).unwrap();
        assert_eq!(view.data, &read[..], "{octx}: view");
        // A plain component of a mapped file is zero-copy where its offset is aligned to
        // its element size (the mapping is page-aligned); anything else is a copy.
        let aligned = c.offset() % c.dtype().size() as u64 == 0;
        assert_eq!(
            view.zero_copy,
            mapped && c.is_plain() && (aligned || c.decoded_length() == 0),
            "{octx}: zero_copy"
        );
    }
}

/// Every file of a vector directory, opened with mmap, pread and from memory.
fn check_dir(dir: &Path) -> usize {
    let text = std::fs::read_to_string(dir.join("expected.json")).unwrap();
    let doc = from_json(&text, 64).unwrap();
    let no_mmap = OpenOptions {
        use_mmap: false,
        ..OpenOptions::default()
    };
    let mut n = 0;
    for (file, want) in doc.as_map().unwrap() {
        let file = dir.join(file.as_text().unwrap());
        let ctx = file.display().to_string();
        let bytes = std::fs::read(&file).unwrap();
        let index = file.to_str().unwrap().ends_with(".index.json");
        let external = std::fs::read_dir(dir).unwrap().any(|e| {
            let p = e.unwrap().path();
            p.file_stem() == file.file_stem() && p.extension().is_some_and(|x| x == "weights")
        });
        let mut opened = vec![
            ("mmap", Reader::open(&file), true),
            ("pread", Reader::open_with(&file, &no_mmap), false),
        ];
        if index {
            // A set's index opens its shards by path only.
        } else if !external {
            opened.push(("memory", Reader::from_slice(&bytes), true));
        } else {
            // Without a path there is no directory to find the external file in.
            let e = Reader::from_slice(&bytes).unwrap_err();
            assert_eq!(e.kind().status_name(), "ZT_ERR_UNSUPPORTED", "{ctx}: {e}");
        }
        for (how, result, mapped) in opened {
            let ctx = format!("{ctx} ({how})");
            match want.get("error") {
                Some(status) => {
                    let e = result.expect_err(&ctx);
                    assert_eq!(Some(e.kind().status_name()), status.as_text(), "{ctx}: {e}");
                }
                None => check(
                    &result.unwrap_or_else(|e| panic!("{ctx}: {e}")),
                    want,
                    &ctx,
                    mapped,
                ),
            }
        }
        n += 1;
    }
    n
}

#[test]
fn committed_vectors_read_exactly() {
    let n = check_dir(&repo().join("tests/vectors/numpy"));
    assert!(n >= 40, "only {n} numpy vectors");
    let n = check_dir(&repo().join("tests/vectors/onnx"));
    assert!(n >= 5, "only {n} onnx vectors");
    let n = check_dir(&repo().join("tests/vectors/torch"));
    assert!(n >= 11, "only {n} torch vectors");
}

/// A python that imports torch, or why there is none.
fn torch_python() -> Result<String, String> {
    let python = std::env::var("ZT_TORCH_PYTHON").unwrap_or_else(|_| "python3".into());
    match Command::new(&python).args(["-c", "import torch"]).output() {
        Ok(out) if out.status.success() => Ok(python),
        Ok(out) => Err(format!(
            "{python} can't import torch ({})",
            String::from_utf8_lossy(&out.stderr)
                .lines()
                .last()
                .unwrap_or("")
        )),
        Err(e) => Err(format!("{python}: {e}")),
    }
}

#[test]
fn fresh_fixtures_from_torch() {
    let python = match torch_python() {
        Ok(p) => p,
        Err(why) => {
            eprintln!(
                "fresh_fixtures_from_torch: skipped: {why}; set ZT_TORCH_PYTHON to a python \
                 with torch (the committed tests/vectors/torch/ are checked regardless)"
            );
            return;
        }
    };
    let out = common::temp_dir("interop_torch");
    common::run_ok(
        Command::new(&python)
            .arg(repo().join("tests/interop/make_torch_fixtures.py"))
            .arg(&out),
    );
    let n = check_dir(&out);
    assert!(n >= 11, "only {n} fresh torch checkpoints");
    std::fs::remove_dir_all(&out).unwrap();
}

#[test]
fn fresh_vectors_from_the_pinned_packages() {
    let python = common::pinned_python(
        "tests/interop/numpy-onnx-requirements.txt",
        "numpy-onnx-venv",
    );
    let out = common::temp_dir("interop_numpy_onnx");
    common::run_ok(
        Command::new(&python)
            .arg(repo().join("tests/interop/make_numpy_onnx_vectors.py"))
            .arg(&out),
    );
    for sub in ["numpy", "onnx"] {
        check_dir(&out.join(sub));
        let fresh = std::fs::read(out.join(sub).join("expected.json")).unwrap();
        let committed =
            std::fs::read(repo().join("tests/vectors").join(sub).join("expected.json")).unwrap();
        assert!(
            fresh == committed,
            "tests/vectors/{sub}/expected.json differs from the generator's: rerun it and commit"
        );
    }
    std::fs::remove_dir_all(&out).unwrap();
}
