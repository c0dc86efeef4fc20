//! Link arguments, and the C header.
//!
//! - The shared library gets a SONAME so that programs record `libztensor.so.<major>` and a
//!   future incompatible release can live beside it.
//! - The C header is generated from the sources with the cbindgen crate (the version is
//!   pinned in Cargo.toml; the committed `include/ztensor.h` is its output) into
//!   `$OUT_DIR/ztensor.h`, and also to the path in `ZTENSOR_HEADER_OUT` when that is set
//!   (the CMake build sets it to `build/generated/ztensor.h`, which its header_up_to_date
//!   test compares with the committed header). The Rust test `ffi::tests::header_is_current`
//!   compares the OUT_DIR copy.
//!
//! Never writes into the source tree (unless `ZTENSOR_HEADER_OUT` points there).

use std::path::{Path, PathBuf};

fn main() {
    let major = std::env::var("CARGO_PKG_VERSION_MAJOR").expect("cargo sets it");
    let minor = std::env::var("CARGO_PKG_VERSION_MINOR").expect("cargo sets it");
    // Before 1.0 every minor release may break the ABI, so it is part of the SONAME.
    let soname = if major == "0" {
        format!("libztensor.so.0.{minor}")
    } else {
        format!("libztensor.so.{major}")
    };
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
        // Dependencies may define C symbols of their own (crc-fast, under object_store,
        // exports crc_fast_*): keep every symbol of a linked archive out of the dynamic
        // symbol table, so the library exports only its zt_ functions.
        println!("cargo:rustc-cdylib-link-arg=-Wl,--exclude-libs,ALL");
    }

    generate_header();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-env-changed=ZTENSOR_HEADER_OUT");
}

/// Runs cbindgen as `cbindgen --config cbindgen.toml --crate ztensor` does, but from
/// src/lib.rs directly: the same items in the same order, without running `cargo metadata`
/// inside the build.
fn generate_header() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    let config = cbindgen::Config::from_file(root.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("cbindgen.toml: {e}"));
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src").join("lib.rs"))
        .generate()
        .unwrap_or_else(|e| panic!("generating the C header with cbindgen: {e}"));
    let mut text = Vec::new();
    bindings.write(&mut text);
    write_if_changed(&out_dir.join("ztensor.h"), &text);
    if let Some(path) = std::env::var_os("ZTENSOR_HEADER_OUT").filter(|p| !p.is_empty()) {
        // Relative to the package root, where cargo runs this script.
        write_if_changed(&root.join(path), &text);
    }
}

/// Leaves an identical file untouched, so nothing that depends on it rebuilds.
fn write_if_changed(path: &Path, text: &[u8]) {
    if std::fs::read(path).is_ok_and(|old| old == text) {
        return;
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).unwrap_or_else(|e| panic!("creating {}: {e}", dir.display()));
    }
    std::fs::write(path, text).unwrap_or_else(|e| panic!("writing {}: {e}", path.display()));
}
