//! Link arguments, the C header, and the version macros.
//!
//! - The shared library's SONAME is what the CMake build passes in `ZTENSOR_SONAME`
//!   (`libztensor.so.<major>.<minor>` while the version is 0.x, `libztensor.so.<major>`
//!   from 1.0: the soname policy, kept in CMakeLists.txt). CMake installs the library under
//!   its real name with that SONAME as a symlink beside it. A plain `cargo build` has no
//!   such symlink in `target/`, and build scripts can't make one after the link, so its
//!   library is named `libztensor.so` inside too: a program linked against
//!   `target/<profile>/libztensor.so` records that name and starts with that directory on
//!   its run path (a versioned SONAME there named a file that didn't exist).
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
    // The SONAME: the CMake build's, else the library's file name (see above).
    let soname = std::env::var("ZTENSOR_SONAME")
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| "libztensor.so".to_owned());
    assert!(
        soname.starts_with("libztensor.so") && !soname.contains(char::is_whitespace),
        "ZTENSOR_SONAME={soname:?}: expected libztensor.so[.<version>]"
    );
    if std::env::var("CARGO_CFG_TARGET_OS").as_deref() == Ok("linux") {
        println!("cargo:rustc-cdylib-link-arg=-Wl,-soname,{soname}");
        // Dependencies may define C symbols of their own (crc-fast, under object_store,
        // exports crc_fast_*): keep every symbol of a linked archive out of the dynamic
        // symbol table, so the library exports only its zt_ functions.
        if std::env::var_os("CARGO_ZIGBUILD_TARGET").is_some() {
            // zig's linker (the Python wheel's manylinux build, maturin --zig) takes no
            // --exclude-libs: a version script says the same, exporting zt_* only.
            let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
            let script = out.join("exports.map");
            write_if_changed(&script, b"{ global: zt_*; local: *; };\n");
            println!(
                "cargo:rustc-cdylib-link-arg=-Wl,--version-script={}",
                script.display()
            );
        } else {
            println!("cargo:rustc-cdylib-link-arg=-Wl,--exclude-libs,ALL");
        }
        println!("cargo:rerun-if-env-changed=CARGO_ZIGBUILD_TARGET");
    }

    generate_header();
    generate_cffi_declarations();
    println!("cargo:rerun-if-changed=build.rs");
    println!("cargo:rerun-if-changed=cbindgen.toml");
    println!("cargo:rerun-if-changed=src");
    println!("cargo:rerun-if-env-changed=ZTENSOR_HEADER_OUT");
    println!("cargo:rerun-if-env-changed=ZTENSOR_CFFI_OUT");
    println!("cargo:rerun-if-env-changed=ZTENSOR_SONAME");
}

/// Runs cbindgen as `cbindgen --config cbindgen.toml --crate ztensor` does, but from
/// src/lib.rs directly: the same items in the same order, without running `cargo metadata`
/// inside the build.
fn generate_header() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    let mut config = cbindgen::Config::from_file(root.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("cbindgen.toml: {e}"));
    config
        .after_includes
        .get_or_insert_with(String::new)
        .push_str(&version_macros());
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

/// The C declarations the Python package's cffi module is compiled from (cffi's parser
/// takes plain declarations: no preprocessor conditionals, no macros but `#define NAME
/// <integer>`): the same items as the header from a second configuration of the same
/// cbindgen run: C only, no comments, no includes, no ZT_API or ZT_DEPRECATED markers,
/// without the one constant that is an expression (ZT_VERSION_NUMBER; Python calls
/// zt_version_number()). Written to `$OUT_DIR/ztensor_cffi.h` and to the path in
/// `ZTENSOR_CFFI_OUT` when set; the committed python/build_backend/ztensor_cffi.h is this
/// output (the Rust test `ffi::tests::cffi_declarations_are_current` checks it).
fn generate_cffi_declarations() {
    let root = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let out_dir = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets it"));
    let mut config = cbindgen::Config::from_file(root.join("cbindgen.toml"))
        .unwrap_or_else(|e| panic!("cbindgen.toml: {e}"));
    config.cpp_compat = false;
    config.documentation = false;
    config.header = Some(
        "/* The C API's declarations for cffi, generated by build.rs from the Rust sources \
         (a second\n   cbindgen configuration); do not edit. */"
            .into(),
    );
    // the version macros as plain integers (cffi takes `#define NAME <integer>`)
    let [major, minor, patch] = version_parts();
    config.after_includes = Some(format!(
        "\n#define ZT_VERSION_MAJOR {major}\n\n#define ZT_VERSION_MINOR {minor}\n\n#define ZT_VERSION_PATCH {patch}\n"
    ));
    config.include_guard = None;
    config.sys_includes.clear();
    config.includes.clear();
    config.no_includes = true;
    config.function.prefix = None;
    config.function.deprecated_with_note = None;
    config.export.exclude.push("ZT_VERSION_NUMBER".into());
    let bindings = cbindgen::Builder::new()
        .with_config(config)
        .with_src(root.join("src").join("lib.rs"))
        .generate()
        .unwrap_or_else(|e| panic!("generating the cffi declarations with cbindgen: {e}"));
    let mut text = Vec::new();
    bindings.write(&mut text);
    write_if_changed(&out_dir.join("ztensor_cffi.h"), &text);
    if let Some(path) = std::env::var_os("ZTENSOR_CFFI_OUT").filter(|p| !p.is_empty()) {
        write_if_changed(&root.join(path), &text);
    }
}

/// The header's version macros, from Cargo.toml's version (the one place it is written):
/// what cbindgen would write for src/ffi/mod.rs's ZT_VERSION_* constants if it could
/// evaluate them.
fn version_macros() -> String {
    let [major, minor, patch] = version_parts();
    format!(
        "

/**
 * Major version of this header. Compare with `zt_version()` at run time to catch a
 * header/library mismatch.
 */
#define ZT_VERSION_MAJOR {major}

/**
 * Minor version of this header.
 */
#define ZT_VERSION_MINOR {minor}

/**
 * Patch version of this header.
 */
#define ZT_VERSION_PATCH {patch}"
    )
}

/// Cargo.toml's version as its three numbers.
fn version_parts() -> [String; 3] {
    ["MAJOR", "MINOR", "PATCH"].map(|part| {
        let name = format!("CARGO_PKG_VERSION_{part}");
        let text = std::env::var(&name).expect("cargo sets it");
        assert!(
            !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()),
            "{name}={text:?}: not a number"
        );
        text
    })
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
