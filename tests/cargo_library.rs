//! The shared library a plain cargo build makes is usable where it lies: its SONAME is
//! its file name (`libztensor.so`, see build.rs), so a C program linked against
//! `target/<profile>/libztensor.so` with that directory on its run path starts. (It was
//! `libztensor.so.0.1`, a file cargo never makes: such a program couldn't start.) The
//! CMake build passes the versioned SONAME of the soname policy instead, and installs the
//! symlink it names (tests/install checks that one).
//!
//! Needs a C compiler (`$CC`, else `cc`) and `readelf`; skips, saying so, without them.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The cdylib cargo built for this test run: `deps/libztensor.so` beside this test.
fn cargo_library() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    exe.parent().unwrap().join("libztensor.so")
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn have(tool: &str) -> bool {
    Command::new(tool).arg("--version").output().is_ok()
}

/// The DT_SONAME of an ELF shared library, as readelf prints it.
fn soname(library: &Path) -> Option<String> {
    let out = Command::new("readelf")
        .arg("-d")
        .arg(library)
        .output()
        .ok()?;
    assert!(out.status.success(), "readelf -d {}", library.display());
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().find(|l| l.contains("(SONAME)"))?;
    let start = line.find('[')? + 1;
    let end = line.rfind(']')?;
    Some(line[start..end].to_owned())
}

#[test]
fn a_program_linked_against_the_cargo_library_starts() {
    if !cfg!(target_os = "linux") {
        eprintln!("skipped: the SONAME is Linux's");
        return;
    }
    let library = cargo_library();
    assert!(
        library.exists(),
        "{} (cargo builds the cdylib for tests)",
        library.display()
    );
    let cc = std::env::var("CC").unwrap_or_else(|_| "cc".to_owned());
    if !have("readelf") || !have(&cc) {
        eprintln!("skipped: no readelf or no C compiler ({cc})");
        return;
    }
    // The CMake build sets ZTENSOR_SONAME for its own cargo runs; a plain build doesn't.
    let expected = option_env!("ZTENSOR_SONAME")
        .filter(|s| !s.is_empty())
        .unwrap_or("libztensor.so");
    assert_eq!(soname(&library).as_deref(), Some(expected));
    if expected != "libztensor.so" {
        eprintln!("skipped running a program: this build's SONAME is {expected}");
        return;
    }

    let dir = std::env::temp_dir().join(format!("zt_cargo_library_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let source = dir.join("version.c");
    std::fs::write(
        &source,
        "#include <stdio.h>\n#include \"ztensor.h\"\n\
         int main(void) { printf(\"%s %u\\n\", zt_version(), zt_version_number()); return 0; }\n",
    )
    .unwrap();
    let program = dir.join("version");
    let libdir = library.parent().unwrap();
    let built = Command::new(&cc)
        .arg(&source)
        .arg("-o")
        .arg(&program)
        .arg(format!("-I{}", repo().join("include").display()))
        .arg(format!("-L{}", libdir.display()))
        .arg("-lztensor")
        .arg(format!("-Wl,-rpath,{}", libdir.display()))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "{}",
        String::from_utf8_lossy(&built.stderr)
    );
    let ran = Command::new(&program)
        .env_remove("LD_LIBRARY_PATH")
        .output()
        .unwrap();
    assert!(
        ran.status.success(),
        "{}",
        String::from_utf8_lossy(&ran.stderr)
    );
    let number = env!("CARGO_PKG_VERSION_MAJOR").parse::<u32>().unwrap() * 10000
        + env!("CARGO_PKG_VERSION_MINOR").parse::<u32>().unwrap() * 100
        + env!("CARGO_PKG_VERSION_PATCH").parse::<u32>().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&ran.stdout),
        format!("{} {number}\n", env!("CARGO_PKG_VERSION"))
    );
    let _ = std::fs::remove_dir_all(&dir);
}
