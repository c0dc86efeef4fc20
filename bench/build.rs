//! Fingerprints the library's sources so that the benchmark rewrites the files *our* writer
//! made whenever the library changed (peer files are kept while their spec is unchanged).

use std::fs;
use std::path::{Path, PathBuf};

fn collect(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect(&p, out);
        } else {
            out.push(p);
        }
    }
}

fn main() {
    let here = PathBuf::from(std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let root = here.join("..");
    let mut files = Vec::new();
    collect(&root.join("src"), &mut files);
    files.push(root.join("Cargo.toml"));
    files.push(root.join("build.rs"));
    files.sort();
    // FNV-1a 64 over each path and its contents.
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |b: u8| {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    };
    for f in &files {
        let rel = f
            .strip_prefix(&root)
            .unwrap_or(f)
            .to_string_lossy()
            .into_owned();
        rel.bytes().for_each(&mut eat);
        fs::read(f)
            .unwrap_or_default()
            .into_iter()
            .for_each(&mut eat);
        println!("cargo:rerun-if-changed={}", f.display());
    }
    println!("cargo:rerun-if-changed={}", root.join("src").display());
    println!("cargo:rustc-env=ZT_BENCH_LIB_HASH={h:016x}");
}
