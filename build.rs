//! Link arguments only: the shared library gets a SONAME so that programs record
//! `libztensor.so.<major>` and a future incompatible release can live beside it.
//! Never writes into the source tree.

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
    }
    println!("cargo:rerun-if-changed=build.rs");
}
