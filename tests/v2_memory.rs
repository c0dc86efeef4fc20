//! A zTensor v2 file larger than the memory it is written with: components streamed in
//! pieces (one raw, one zstd), added out of canonical order so that `finish` copies the
//! blobs into it, and a streamed duplicate taken back. The process's peak resident set
//! grows by a small fraction of the data. Its own test binary, so that no other test's
//! allocations count.

mod common;

use ztensor::{CreateOptions, DType, FileVersion, Reader, WriteOptions, Writer};

/// VmHWM (peak resident set) in MiB.
fn peak_mib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|n| n.parse::<u64>().ok())
        .unwrap()
        / 1024
}

#[test]
fn streamed_v2_writes_keep_their_memory_bounded() {
    const PIECE: usize = 1 << 20;
    const RAW: usize = 160 << 20;
    const PACKED: usize = 64 << 20;
    let dir = common::temp_dir("v2_memory");
    let path = dir.join("big.zt");
    let piece: Vec<u8> = common::bytes(5, PIECE);
    let before = peak_mib();
    let options = CreateOptions {
        durable: false,
        version: FileVersion::V2,
        ..CreateOptions::default()
    };
    let mut w = Writer::create_with(&path, &options).unwrap();
    // Out of name order ("z" first), and "a" repeats "z": both move at finish.
    for (name, size, opts) in [
        ("z", RAW, WriteOptions::default()),
        ("packed", PACKED, WriteOptions::zstd(1)),
        ("a", RAW, WriteOptions::default()),
    ] {
        w.begin_object(name, "dense", &[size as u64]).unwrap();
        w.begin_component("data", DType::U8, None, &opts).unwrap();
        for _ in 0..size / PIECE {
            w.write(&piece).unwrap();
        }
        w.end_component().unwrap();
        w.end_object().unwrap();
    }
    w.finish().unwrap();
    let grown = peak_mib() - before;
    let r = Reader::open(&path).unwrap();
    let offset = |n: &str| r.objects()[r.find(n).unwrap()].components()[0].offset();
    assert_eq!(offset("a"), offset("z"), "one blob for the two");
    assert!(offset("a") < offset("packed"), "canonical order");
    r.verify().unwrap();
    eprintln!(
        "wrote {} MiB streamed; peak resident set grew {grown} MiB",
        (2 * RAW + PACKED) >> 20
    );
    let total = (2 * RAW + PACKED) >> 20;
    assert!(
        grown < 48,
        "peak resident set grew {grown} MiB writing {total} MiB"
    );
    drop(r);
    std::fs::remove_file(&path).unwrap();
}
