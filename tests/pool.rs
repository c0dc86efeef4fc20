//! The library's one thread pool, counted: a batch of dequantizing loads of multi-frame
//! zstd components (batch requests in parallel, each decoding its frames in parallel,
//! then dequantizing in parallel) runs on the pool's threads and starts no others; the
//! pool's size is what `pool::set_threads` says; the zstd writer works from a pool
//! thread. One test in this file: the process's thread count must not see other tests.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

mod common;

use ztensor::{DType, Reader, WriteOptions, Writer, pool};

/// Threads of this process now.
fn tasks() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

/// `count` Q8_0 blocks (f16 scale, 32 signed bytes): scale 2^-4, values cycling with
/// `seed`, so that zstd compresses them a little and each value is known exactly.
fn q8_0_blocks(count: usize, seed: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(count * 34);
    for b in 0..count {
        out.extend(half::f16::from_f32(0.0625).to_le_bytes());
        out.extend((0..32).map(|j| ((b * 7 + j * 3 + seed) % 251) as u8));
    }
    out
}

fn q8_0_value(b: usize, j: usize, seed: usize) -> f32 {
    f32::from(((b * 7 + j * 3 + seed) % 251) as u8 as i8) * 0.0625
}

#[test]
fn nested_work_runs_on_the_pool_alone() {
    let base = tasks();
    // The size asked for, before the pool exists; it is built on first use.
    pool::set_threads(3).unwrap();
    assert_eq!(pool::threads(), 3);
    assert_eq!(tasks(), base, "setting the size starts no thread");

    // Six tensors of 5 MiB of blocks each (two zstd frames), written by the pipelined
    // writer on the pool.
    let dir = std::env::temp_dir().join(format!("ztensor_pool_{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("q8.zt");
    let blocks = (5 << 20) / 34;
    let values = blocks * 32;
    let mut w = Writer::create(&path).unwrap();
    for t in 0..6 {
        w.begin_object(&format!("t{t}"), "dense", &[values as u64])
            .unwrap();
        w.add_component(
            "data",
            DType::U8,
            Some("ggml_q8_0"),
            &q8_0_blocks(blocks, t),
            &WriteOptions::zstd(1),
        )
        .unwrap();
        w.end_object().unwrap();
    }
    w.finish().unwrap();
    assert_eq!(tasks(), base + 3, "the pool's threads, no more");

    // Count the threads every 0.2 ms while a batch dequantizes all six.
    let r = Reader::open(&path).unwrap();
    assert!(
        r.frame_index(0, 0).unwrap().len() >= 2,
        "multi-frame components"
    );
    let stop = Arc::new(AtomicBool::new(false));
    let most = Arc::new(AtomicUsize::new(0));
    let sampler = {
        let (stop, most) = (stop.clone(), most.clone());
        std::thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                most.fetch_max(tasks(), Ordering::Relaxed);
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        })
    };
    let mut outs: Vec<Vec<u8>> = (0..6).map(|_| vec![0u8; values * 4]).collect();
    let mut requests = common::whole_loads(&mut outs, Some(DType::F32));
    for _ in 0..3 {
        for result in r.load_batch(&mut requests, 0) {
            result.unwrap();
        }
    }
    drop(requests);
    stop.store(true, Ordering::Relaxed);
    sampler.join().unwrap();
    let peak = most.load(Ordering::Relaxed);
    eprintln!(
        "threads: {base} before, peak {peak} during the batch (the sampler and 3 pool threads on top)"
    );
    assert!(
        peak <= base + 1 + 3,
        "{} threads beyond the {base} there were and the sampler: the pool has 3",
        peak - base - 1
    );
    for (t, out) in outs.iter().enumerate() {
        for (i, v) in out.chunks_exact(4).enumerate().step_by(997) {
            let got = f32::from_le_bytes(v.try_into().unwrap());
            assert_eq!(got, q8_0_value(i / 32, i % 32, t), "tensor {t} value {i}");
        }
    }

    // A new size replaces the pool: its threads end, the new ones start.
    pool::set_threads(1).unwrap();
    let mut one = vec![0u8; values * 4];
    r.read_as(2, 0, DType::F32, &mut one).unwrap();
    assert!(one == outs[2], "one thread reads the same values");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while tasks() > base + 1 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert_eq!(tasks(), base + 1, "the old pool's threads ended");
    assert_eq!(pool::threads(), 1);
    assert_eq!(
        pool::set_threads(5000).unwrap_err().kind(),
        ztensor::ErrorKind::InvalidArgument
    );
    assert_eq!(pool::threads(), 1, "a refused size changes nothing");
    let _ = std::fs::remove_dir_all(&dir);
}
