//! Durable writes of every output format: the assembled safetensors and GGUF files, and
//! a zTensor v2 file copied into canonical order at `finish`, go to disk by the zTensor
//! writer's mechanism (writeback as the copy goes, waited for some way
//! behind, the file preallocated whole); what matters here is that the bytes are exactly
//! those added, whichever path (staged small pieces or kernel copies) carried them, and
//! that preallocation reserved no more than the file.

mod common;

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use ztensor::{CreateOptions, DType, OutputFormat, Reader, WriteOptions, Writer};

/// Tensors of mixed dtypes and sizes, added in an order neither format keeps: small ones
/// (gathered into the staging buffer) between large ones (copied in the kernel), about
/// 60 MiB in all, so several writeback chunks are started and waited for.
fn tensors() -> Vec<(String, DType, Vec<u64>)> {
    let mut v = Vec::new();
    for i in 0..40u64 {
        let (dtype, shape) = match i % 4 {
            0 => (DType::F32, vec![6 << 20 >> 2]),
            1 => (DType::I8, vec![1000 + i]),
            2 => (DType::F16, vec![64, 777]),
            _ => (DType::I32, vec![25_000 + i]),
        };
        v.push((format!("t{:02}.{}", 39 - i, i % 4), dtype, shape));
    }
    v
}

fn write(path: &Path, format: OutputFormat) -> Vec<(String, Vec<u8>)> {
    let options = CreateOptions {
        durable: true,
        ..CreateOptions::default()
    };
    let mut w = Writer::create_with(path, &options).unwrap();
    assert_eq!(w.format(), format);
    let mut written = Vec::new();
    for (i, (name, dtype, shape)) in tensors().into_iter().enumerate() {
        let n: u64 = shape.iter().product();
        let data = common::data_for(dtype, n as usize, i as u64 + 3);
        w.add(&name, dtype, &shape, &data, &WriteOptions::default())
            .unwrap();
        written.push((name, data));
    }
    w.finish().unwrap();
    written
}

fn check(path: &Path, written: &[(String, Vec<u8>)]) {
    let r = Reader::open(path).unwrap();
    assert_eq!(r.objects().len(), written.len());
    for (name, data) in written {
        let oi = r.find(name).unwrap();
        assert!(r.read_to_vec(oi, 0).unwrap() == *data, "{name}");
    }
    // Preallocated exactly the file (KEEP_SIZE): no block past its end stays reserved
    // (beyond the filesystem's own blocks for a file with holes: under 1 MiB; a write
    // preallocated past the end would be 4 MiB or more).
    let meta = std::fs::metadata(path).unwrap();
    assert!(
        meta.blocks() * 512 <= meta.len() + (1 << 20),
        "{} bytes allocated for a file of {}",
        meta.blocks() * 512,
        meta.len()
    );
    // Nothing but the file is left in its directory (no spool, no temporary).
    let names: Vec<_> = std::fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, [path.file_name().unwrap()], "{names:?}");
}

#[test]
fn durable_safetensors_is_exact() {
    let dir = common::temp_dir("durable_st");
    let path = dir.join("m.safetensors");
    let written = write(&path, OutputFormat::Safetensors);
    check(&path, &written);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn durable_gguf_is_exact() {
    let dir = common::temp_dir("durable_gguf");
    let path = dir.join("m.gguf");
    let written = write(&path, OutputFormat::Gguf);
    check(&path, &written);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn durable_v2_placed_again_is_exact() {
    // Added out of name order: `finish` copies every blob into a new file in canonical
    // order (the first one is thrown away, its writeback dropped).
    let dir = common::temp_dir("durable_v2");
    let path = dir.join("m.zt");
    let written = write(&path, OutputFormat::Ztensor);
    check(&path, &written);
    let r = Reader::open(&path).unwrap();
    assert_eq!(r.version().chars().next(), Some('2'), "{}", r.version());
    let names: Vec<&str> = r.objects().iter().map(|o| o.name()).collect();
    let mut sorted = names.clone();
    sorted.sort_unstable();
    assert_eq!(names, sorted);
    std::fs::remove_dir_all(&dir).unwrap();
}
