//! (9) seek (issue 16): a 4 KiB range read from the middle of a 1 GiB zstd component (quick:
//! 64 MiB), mapped and with pread, each in a fresh child process (`__child seek-range`): the
//! time (CPU seconds of the calling thread; wall times in the note) of the first call and of
//! later calls, the stored bytes the call brought into the
//! process (`rchar` of /proc/self/io, plus the mapped pages it touched), and the RSS growth.
//! Two components of the same f32 values (half of them zero, so zstd-3 stores about half): one our writer made (frames of 4 MiB and, since
//! issue 16, a seek table) and one the reference writer made (one frame without a content
//! size). Limits: a 1-thread decode of the frame that holds the range (ours); a 1-thread
//! streaming decode from the start up to the end of the range (the reference's one frame).
//! Only the public API of `main` before issue 16 is used, so the section also measures the
//! library as it was.

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::memory::run_child;
use super::{Ctx, Runs, Section};
use crate::datagen::{Fill, fill};
use crate::files::{warm, zstd_frames};
use crate::formats::map;
use crate::harness::status_kib;
use crate::report::Row;
use crate::{MIB, Res};

pub const SECTION: Section = Section {
    name: "seek",
    runs: Runs::Alone(run),
};

/// Bytes of the range read.
const RANGE: usize = 4096;
/// Values are generated (and checked) in chunks of this size.
const CHUNK: usize = 4 << 20;
/// Later calls per child: each one of the reference's single frame decodes half the
/// component, so it gets fewer.
const LATER_OURS: usize = 10;
const LATER_SINGLE_FRAME: usize = 2;
const RSS_BUDGET_MIB: f64 = 16.0;

fn run(ctx: &Ctx, rows: &mut Vec<Row>) -> Res<()> {
    let a = ctx.args;
    let size: usize = if a.quick { 64 << 20 } else { 1 << 30 };
    let label = if a.quick { "64 MiB" } else { "1 GiB" };
    let ours = ensure(&a.dir.join("seek.ours.zt"), size, true)?;
    let theirs = ensure(&a.dir.join("seek.ref.zt"), size, false)?;
    for (who, path) in [("ours", &ours), ("ztensor-1.2.3", &theirs)] {
        warm(path)?;
        eprintln!("seek: {who}-written component, reference points");
        let plan = plan(path, a.runs)?;
        for mode in ["mmap", "pread"] {
            eprintln!("seek: {who}-written component, {mode}");
            let mut runs = Vec::new();
            for _ in 0..a.runs {
                runs.push(run_child(&[
                    "seek-range",
                    path.to_str().ok_or("path")?,
                    mode,
                    &plan.offset.to_string(),
                    &plan.later.to_string(),
                ])?);
            }
            let med = |k: &str| median(runs.iter().map(|m| m[k]).collect());
            // Mapped pages the call touched count as read too (pread mode maps nothing).
            let mapped = if mode == "mmap" { med("file_kib") } else { 0.0 };
            let m = Measured {
                first: (med("first_cpu"), med("first_s")),
                later: (med("later_cpu"), med("later_s")),
                read: med("rchar") + mapped * 1024.0,
                rss: med("rss_kib") / 1024.0,
                file_rss: med("file_kib") / 1024.0,
            };
            rows.extend(rows_for(who, mode, label, &plan, &m));
        }
    }
    Ok(())
}

/// Medians over the child runs of one writer and mode; times as (CPU, wall) seconds.
struct Measured {
    first: (f64, f64),
    later: (f64, f64),
    /// Stored bytes brought into the process: read with read/pread, or mapped and touched.
    read: f64,
    rss: f64,
    file_rss: f64,
}

/// What a component's reads are compared with.
struct Plan {
    offset: u64,
    later: usize,
    frames: usize,
    /// Time of the limit, (CPU, wall) seconds: decode the frame holding the range, or
    /// decode up to the range.
    limit_s: (f64, f64),
    limit_name: &'static str,
    /// Stored bytes a read should need at most.
    limit_bytes: f64,
    limit_bytes_name: String,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// CPU seconds this thread has used.
fn thread_cpu() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 * 1e-9
}

/// Runs `f` and returns its result with the (CPU, wall) seconds it took on this thread.
fn timed<T>(f: impl FnOnce() -> Res<T>) -> Res<(T, (f64, f64))> {
    let (c, t) = (thread_cpu(), Instant::now());
    let out = f()?;
    Ok((out, (thread_cpu() - c, t.elapsed().as_secs_f64())))
}

/// Medians of (CPU, wall) pairs, each on its own.
fn medians(v: &[(f64, f64)]) -> (f64, f64) {
    (
        median(v.iter().map(|t| t.0).collect()),
        median(v.iter().map(|t| t.1).collect()),
    )
}

/// The offset of the range: the middle of the component, moved half a frame on so that a
/// read starting there needs the middle of a 4 MiB frame.
fn middle(size: usize) -> u64 {
    (size / 2 + CHUNK / 2 + 1234) as u64
}

/// Generated values, chunk `k`.
fn chunk(k: usize, out: &mut [u8]) {
    fill(Fill::HalfZeroF32, 0x5eec ^ k as u64, out);
}

/// The file at `path`, written unless its stamp says it is current: one f32 component of
/// `size` bytes, zstd level 3, by our writer (streamed in 4 MiB chunks) or the reference's.
fn ensure(path: &Path, size: usize, ours: bool) -> Res<PathBuf> {
    let stamp_path = path.with_extension("zt.stamp");
    let stamp = format!(
        "seek v2 size={size}{}",
        if ours {
            format!(" lib={}", env!("ZT_BENCH_LIB_HASH"))
        } else {
            String::new()
        }
    );
    let current = fs::read_to_string(&stamp_path).ok();
    if let (Some(s), Ok(meta)) = (current, fs::metadata(path))
        && s == format!("{stamp} len={}", meta.len())
    {
        return Ok(path.to_owned());
    }
    let t = Instant::now();
    let shape = [(size / 4) as u64];
    if ours {
        let mut w = ztensor::Writer::create(path)?;
        w.begin_object("w", "dense", &shape)?;
        w.begin_component(
            "data",
            ztensor::DType::F32,
            None,
            &ztensor::WriteOptions::zstd(3),
        )?;
        let mut buf = vec![0u8; CHUNK];
        for k in 0..size / CHUNK {
            chunk(k, &mut buf);
            w.write(&buf)?;
        }
        w.end_component()?;
        w.end_object()?;
        w.finish()?;
    } else {
        let mut all = vec![0u8; size];
        for (k, c) in all.chunks_mut(CHUNK).enumerate() {
            chunk(k, c);
        }
        let mut w = ztensor_ref::Writer::create(path)?;
        w.add_bytes(
            "w",
            shape.to_vec(),
            ztensor_ref::DType::F32,
            ztensor_ref::Compression::Zstd(3),
            &all,
            ztensor_ref::Checksum::None,
        )?;
        w.finish()?;
    }
    let len = fs::metadata(path)?.len();
    fs::write(&stamp_path, format!("{stamp} len={len}"))?;
    eprintln!(
        "  wrote {} ({:.1} MiB) in {:.1} s",
        path.display(),
        len as f64 / MIB,
        t.elapsed().as_secs_f64()
    );
    Ok(path.to_owned())
}

/// Walks the component's frames (untimed) and times the limit.
fn plan(path: &Path, runs: usize) -> Res<Plan> {
    let r = ztensor::Reader::open(path)?;
    let c = &r.object(0)?.components()[0];
    let (start, len) = (c.offset() as usize, c.length() as usize);
    let size = c.decoded_length() as usize;
    let offset = middle(size);
    let end = offset + RANGE as u64;
    let m = map(path)?;
    let stored = &m[start..start + len];
    let frames = zstd_frames(stored)?;
    // A trailing frame that decodes to nothing is the seek table.
    let table = frames.last().filter(|f| f.3 == 0).map_or(0, |f| f.1);
    let data_frames: Vec<_> = frames.iter().filter(|f| f.3 > 0).copied().collect();
    let mut times = Vec::new();
    if data_frames.len() > 1 {
        let &(cs, cl, _, dl) = data_frames
            .iter()
            .find(|f| f.2 <= offset && offset < f.2 + f.3)
            .ok_or("no frame holds the range")?;
        let mut out = vec![0u8; dl as usize];
        let mut d = zstd::bulk::Decompressor::new()?;
        for _ in 0..runs.max(3) {
            let (_, t) = timed(|| Ok(d.decompress_to_buffer(&stored[cs..cs + cl], &mut out)?))?;
            times.push(t);
        }
        let biggest = data_frames.iter().map(|f| f.1).max().unwrap_or(0);
        return Ok(Plan {
            offset,
            later: LATER_OURS,
            frames: data_frames.len(),
            limit_s: medians(&times),
            limit_name: "1-thread decode of the frame holding the range",
            limit_bytes: (2 * biggest + table) as f64,
            limit_bytes_name: format!("2 frames + seek table ({table} bytes)"),
        });
    }
    let mut needed = 0;
    for _ in 0..runs.clamp(1, 3) {
        let (n, t) = timed(|| decode_up_to(stored, end))?;
        needed = n;
        times.push(t);
    }
    Ok(Plan {
        offset,
        later: LATER_SINGLE_FRAME,
        frames: data_frames.len(),
        limit_s: medians(&times),
        limit_name: "1-thread streaming decode from the start to the range's end",
        limit_bytes: (needed + (1 << 20)) as f64,
        limit_bytes_name: "stored bytes up to the range's end + 1 MiB".to_owned(),
    })
}

/// Decodes `stored` as a stream until `end` decoded bytes are out; returns the stored bytes
/// the decoder consumed.
fn decode_up_to(stored: &[u8], end: u64) -> Res<usize> {
    use zstd::zstd_safe::{DCtx, InBuffer, OutBuffer};
    let mut dctx = DCtx::create();
    let mut out = vec![0u8; 128 << 10];
    let (mut used, mut produced) = (0usize, 0u64);
    while produced < end && used < stored.len() {
        let piece = &stored[used..(used + (128 << 10)).min(stored.len())];
        let mut inb = InBuffer::around(piece);
        while produced < end && inb.pos() < piece.len() {
            let mut outb = OutBuffer::around(&mut out[..]);
            dctx.decompress_stream(&mut outb, &mut inb)
                .map_err(|c| format!("zstd error {c}"))?;
            produced += outb.pos() as u64;
        }
        used += inb.pos();
    }
    Ok(used)
}

fn rows_for(who: &str, mode: &str, label: &str, p: &Plan, m: &Measured) -> Vec<Row> {
    let workload = format!("{label}, {who}-written, {mode}");
    let frames = format!("{} frame(s); range at byte {}", p.frames, p.offset);
    // CPU seconds of the calling thread, for ours and the limit alike: both are one
    // thread's work, and on a shared machine wall times mostly measure the queue.
    let time_row = |metric: &str, (cpu, wall): (f64, f64), calls: &str| {
        let row = Row::new(metric, &workload, "s", cpu)
            .limit(p.limit_name, p.limit_s.0)
            .bytes(RANGE as u64)
            .note(format!(
                "{frames}; {calls}; CPU seconds of the calling thread; wall: ours {:.2} ms, \
                 limit {:.2} ms",
                wall * 1e3,
                p.limit_s.1 * 1e3
            ));
        let met = row.vs_limit().is_some_and(|x| x >= 0.5);
        row.target("<= 2x the limit", met)
    };
    let first = time_row(
        "4 KiB range: first call, CPU",
        m.first,
        "median of the first call of a fresh reader in each child (builds the frame index)",
    );
    let later = time_row(
        "4 KiB range: later calls, CPU",
        m.later,
        &format!("median of {} later calls at other offsets nearby", p.later),
    );
    let read = Row::new(
        "4 KiB range: stored bytes read",
        &workload,
        "MiB",
        m.read / MIB,
    )
    .limit(&p.limit_bytes_name, p.limit_bytes / MIB)
    .note(format!(
        "first call: bytes read with read/pread (rchar), plus with mmap the file-backed pages \
         it touched (RssFile growth {:.1} MiB)",
        m.file_rss
    ));
    let read_met = m.read <= p.limit_bytes;
    let read = read.target("<= the limit", read_met);
    let rss = Row::new("4 KiB range: RSS growth", &workload, "MiB", m.rss)
        .limit("budget", RSS_BUDGET_MIB)
        .note("first call: VmHWM after (reset before) minus VmRSS before");
    let rss_met = m.rss < RSS_BUDGET_MIB;
    vec![first, later, read, rss.target("< 16 MiB", rss_met)]
}

/// `__child seek-range PATH mmap|pread OFFSET LATER`: the first 4 KiB range read of a fresh
/// reader at OFFSET measured alone, then LATER calls at other offsets near it; checks the
/// bytes. Another reader of the file reads its first 4 KiB before, so that the library's
/// code is paged in (not counted as bytes read) and the first call measures the reader.
pub fn child(path: &str, use_mmap: bool, offset: u64, later: usize) -> Res<()> {
    let opts = ztensor::OpenOptions {
        use_mmap,
        ..Default::default()
    };
    let mut buf = vec![1u8; RANGE];
    let mut expected = vec![0u8; CHUNK];
    ztensor::Reader::open_with(path, &opts)?.read_range(0, 0, 0, &mut buf)?;
    check(&buf, 0, &mut expected)?;
    let r = ztensor::Reader::open_with(path, &opts)?;
    // Reset the peak RSS (Linux >= 4.0) so that VmHWM afterwards is this call's peak.
    fs::write("/proc/self/clear_refs", "5")?;
    let (rss0, file0) = (status_kib("VmRSS:"), status_kib("RssFile:"));
    // Reading /proc/self/io counts itself: measure how much, to take it off.
    let calibrate = rchar()?;
    let io0 = rchar()?;
    let io_overhead = io0 - calibrate;
    let ((), first) = timed(|| Ok(r.read_range(0, 0, offset, &mut buf)?))?;
    let io1 = rchar()?;
    let (hwm, file1) = (status_kib("VmHWM:"), status_kib("RssFile:"));
    check(&buf, offset, &mut expected)?;
    let mut times = Vec::new();
    for k in 1..=later as u64 {
        let at = offset + k * 40_961 - 200_000;
        let ((), t) = timed(|| Ok(r.read_range(0, 0, at, &mut buf)?))?;
        times.push(t);
        check(&buf, at, &mut expected)?;
    }
    let later = medians(&times);
    println!(
        "RESULT first_cpu={} first_s={} later_cpu={} later_s={} rchar={} rss_kib={} file_kib={}",
        first.0,
        first.1,
        later.0,
        later.1,
        io1.saturating_sub(io0).saturating_sub(io_overhead),
        hwm.saturating_sub(rss0),
        file1.saturating_sub(file0)
    );
    Ok(())
}

/// The range read at `at` holds the generated values.
fn check(got: &[u8], at: u64, scratch: &mut [u8]) -> Res<()> {
    let (k, within) = ((at as usize) / CHUNK, (at as usize) % CHUNK);
    if within + got.len() > CHUNK {
        return Err("the checked range crosses a chunk".into());
    }
    chunk(k, scratch);
    if got != &scratch[within..within + got.len()] {
        return Err(format!("wrong bytes at {at}").into());
    }
    Ok(())
}

/// Bytes this process has read through read-like system calls.
fn rchar() -> Res<u64> {
    let io = fs::read_to_string("/proc/self/io")?;
    io.lines()
        .find_map(|l| l.strip_prefix("rchar: "))
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| "no rchar in /proc/self/io".into())
}
