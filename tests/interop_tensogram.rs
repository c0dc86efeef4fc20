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
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The venv's python, created on first use.
fn tensogram_python() -> PathBuf {
    let requirements = repo().join("tests/interop/tensogram-requirements.txt");
    let wanted = std::fs::read_to_string(&requirements).unwrap();
    let venv = Path::new(env!("CARGO_TARGET_TMPDIR")).join("tensogram-venv");
    let python = venv.join("bin/python");
    let marker = venv.join("requirements.installed");
    if std::fs::read_to_string(&marker).ok().as_deref() == Some(wanted.as_str()) && python.exists()
    {
        return python;
    }
    let _ = std::fs::remove_dir_all(&venv);
    let base = std::env::var("ZT_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    run(Command::new(&base).args(["-m", "venv"]).arg(&venv));
    run(Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&requirements));
    std::fs::write(&marker, wanted).unwrap();
    python
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
