//! Tensogram files written by the real `tensogram` package (PyPI tensogram==0.24.0) are
//! read exactly as the package itself decodes them. The test makes its own Python venv
//! (pinned by tests/interop/tensogram-requirements.txt) under the cargo target directory,
//! reuses it while the pins are unchanged, regenerates the vectors of
//! tests/vectors/tensogram with tests/interop/make_tensogram_vectors.py into a fresh
//! directory and checks every file against its expectation. Set ZT_PYTHON to choose the
//! interpreter.

mod common;
mod tensogram_check;

use std::path::{Path, PathBuf};
use std::process::Command;

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn run(cmd: &mut Command) {
    common::run_ok(cmd)
}

/// The venv's python, created on first use.
fn tensogram_python() -> PathBuf {
    common::pinned_python("tests/interop/tensogram-requirements.txt", "tensogram-venv")
}

#[test]
fn vectors_regenerated_by_tensogram_read_exactly() {
    let python = tensogram_python();
    let dir = common::temp_dir("interop_tensogram");
    run(Command::new(&python)
        .arg(repo().join("tests/interop/make_tensogram_vectors.py"))
        .arg(&dir));
    let mut files = 0;
    let mut objects = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "tgm") {
            objects += tensogram_check::check_vector(&path, &path.with_extension("json"));
            files += 1;
        }
    }
    assert!(
        files >= 5 && objects >= 30,
        "{files} files, {objects} objects"
    );
}
