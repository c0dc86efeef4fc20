//! The hidden `__child` subcommand: operations that must run alone in a fresh process, for the
//! memory section (`stream-write`, `zstd-read`: they print `/proc/self/status` figures) and for
//! profiling ours (`loop`).

use std::fs;
use std::hint::black_box;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::Res;
use crate::datagen::{Fill, fill};
use crate::harness::{cpu_seconds, status_kib};

/// Runs `__child ARGS...` and prints one `RESULT key=value ...` line (see `sections::memory`).
pub fn main(args: &[String]) -> Res<()> {
    match args {
        [cmd, kind, path, size] if cmd == "stream-write" => {
            stream_write(kind, Path::new(path), size.parse()?)
        }
        [cmd, path, mode] if cmd == "zstd-read" => zstd_read(path, mode == "mmap"),
        [cmd, what, path, iters] if cmd == "loop" => profile_loop(what, path, iters.parse()?),
        [cmd, what, who, path, iters] if cmd == "count" => {
            crate::counts::run(what, who, Path::new(path), iters.parse()?)
        }
        [cmd, path, mode, offset, later] if cmd == "seek-range" => {
            crate::sections::seek::child(path, mode == "mmap", offset.parse()?, later.parse()?)
        }
        _ => Err(
            "usage: __child stream-write raw|zstd PATH SIZE | __child zstd-read PATH mmap|pread \
                  | __child loop open|load|verify PATH ITERS \
                  | __child count views|list ours|safetensors PATH.zt ITERS \
                  | __child seek-range PATH mmap|pread OFFSET LATER"
                .into(),
        ),
    }
}

/// Writes one component of `size` bytes through `begin_component`/`write`/`end_component`,
/// generated in 4 MiB chunks; reports the peak RSS.
fn stream_write(kind: &str, path: &Path, size: u64) -> Res<()> {
    let opts = match kind {
        "raw" => ztensor::WriteOptions::default(),
        "zstd" => ztensor::WriteOptions::zstd(3),
        other => return Err(format!("unknown kind {other}").into()),
    };
    let chunk_len = 4usize << 20;
    let mut chunk = vec![0u8; chunk_len];
    let hwm_before = status_kib("VmHWM:");
    let c0 = cpu_seconds();
    let t = Instant::now();
    let mut w = ztensor::Writer::create(path)?;
    w.begin_object("big", "dense", &[size])?;
    w.begin_component("data", ztensor::DType::I8, None, &opts)?;
    let mut done = 0u64;
    let mut k = 0u64;
    while done < size {
        let n = (size - done).min(chunk_len as u64) as usize;
        fill(Fill::QuantI8, 0x3e3 ^ k, &mut chunk[..n]);
        w.write(&chunk[..n])?;
        done += n as u64;
        k += 1;
    }
    w.end_component()?;
    w.end_object()?;
    w.finish()?;
    let secs = t.elapsed().as_secs_f64();
    let stored = fs::metadata(path)?.len();
    println!(
        "RESULT hwm_kib={} hwm_before_kib={hwm_before} secs={secs} stored={stored} cpu={}",
        status_kib("VmHWM:"),
        (cpu_seconds() - c0) / secs
    );
    Ok(())
}

/// `read_into` of the file's one component into a resident buffer; reports the RSS beyond it.
fn zstd_read(path: &str, use_mmap: bool) -> Res<()> {
    let opts = ztensor::OpenOptions {
        use_mmap,
        ..Default::default()
    };
    let r = ztensor::Reader::open_with(path, &opts)?;
    let c = &r.object(0)?.components()[0];
    let len = c.decoded_length() as usize;
    let stored = c.length();
    let mut buf = vec![0u8; len];
    // Make every page of the buffer resident before the baseline.
    for p in buf.chunks_mut(4096) {
        p[0] = 1;
    }
    let base_rss = status_kib("VmRSS:");
    let base_anon = status_kib("RssAnon:");
    let base_file = status_kib("RssFile:");
    let sampler = Sampler::start();
    let c0 = cpu_seconds();
    let t = Instant::now();
    r.read_into(0, 0, &mut buf)?;
    let secs = t.elapsed().as_secs_f64();
    let cpu = (cpu_seconds() - c0) / secs;
    let (anon, file) = sampler.finish();
    let hwm = status_kib("VmHWM:");
    // A spot check that the data arrived: the generator's first chunk.
    let mut first = vec![0u8; (4usize << 20).min(len)];
    fill(Fill::QuantI8, 0x3e3, &mut first);
    if buf[..first.len()] != first[..] {
        return Err("zstd read returned wrong bytes".into());
    }
    println!(
        "RESULT extra_kib={} anon_peak_kib={} file_peak_kib={} secs={secs} stored={stored} cpu={cpu}",
        hwm.saturating_sub(base_rss),
        anon.saturating_sub(base_anon),
        file.saturating_sub(base_file)
    );
    Ok(())
}

/// A profiling aid: one of ours' operations in a loop, nothing else in the profile.
fn profile_loop(what: &str, path: &str, iters: u64) -> Res<()> {
    let t = Instant::now();
    for _ in 0..iters {
        let r = ztensor::Reader::open(path)?;
        match what {
            "open" => {
                let mut acc = 0u64;
                for o in r.objects() {
                    let c = &o.components()[0];
                    acc = acc.wrapping_add(o.name().len() as u64 + c.offset());
                }
                black_box(acc);
            }
            "load" => {
                for i in 0..r.objects().len() {
                    let mut b = vec![0u8; r.objects()[i].components()[0].decoded_length() as usize];
                    r.read_into(i, 0, &mut b)?;
                    black_box(&b);
                }
            }
            "batch" => {
                let mut bufs: Vec<Vec<u8>> = r
                    .objects()
                    .iter()
                    .map(|o| vec![0u8; o.components()[0].decoded_length() as usize])
                    .collect();
                let mut q: Vec<ztensor::load::Request<'_>> = bufs
                    .iter_mut()
                    .enumerate()
                    .map(|(i, b)| ztensor::load::Request::host(i, 0, b))
                    .collect();
                for result in r.load_batch(&mut q, 0) {
                    result?;
                }
                drop(q);
                black_box(&bufs);
            }
            "verify" => r.verify()?,
            other => return Err(format!("unknown loop '{other}'").into()),
        }
    }
    println!(
        "RESULT secs_per_iter={}",
        t.elapsed().as_secs_f64() / iters.max(1) as f64
    );
    Ok(())
}

/// Samples RssAnon and RssFile every millisecond until stopped; returns their maxima.
struct Sampler {
    stop: Arc<AtomicBool>,
    anon: Arc<AtomicU64>,
    file: Arc<AtomicU64>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start() -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let anon = Arc::new(AtomicU64::new(0));
        let file = Arc::new(AtomicU64::new(0));
        let (s, an, fi) = (stop.clone(), anon.clone(), file.clone());
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                an.fetch_max(status_kib("RssAnon:"), Ordering::Relaxed);
                fi.fetch_max(status_kib("RssFile:"), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        Sampler {
            stop,
            anon,
            file,
            handle: Some(handle),
        }
    }
    fn finish(mut self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        (
            self.anon.load(Ordering::Relaxed),
            self.file.load(Ordering::Relaxed),
        )
    }
}
