//! (6) writes, each writer as a user gets it: raw W1 (ours durable and not, the peers' writers
//! as they come, `write()` of the same bytes); zstd-3 W3 (ours durable) against
//! `zstd::bulk::compress` single-threaded.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::files::Files;
use crate::formats::{
    v1_2, write_ours, write_ours_with, write_ref, write_safetensors, zstd_compress_all,
};
use crate::harness::{Case, case, measure, names_of, parallel_note, row_from};
use crate::report::Row;
use crate::workloads::Workload;

pub const SECTION: Section = Section {
    name: "write",
    runs: Runs::On(&["W1", "W3"], run),
};

fn run(ctx: &Ctx, w: &Workload, _: &Files, rows: &mut Vec<Row>) -> Res<()> {
    if w.id == "W3" {
        zstd_write(ctx, w, rows)
    } else {
        raw_writes(ctx, w, rows)
    }
}

fn remove(p: &Path) {
    let _ = fs::remove_file(p);
}

/// The output files of the raw writes: ours (zTensor and safetensors), the reference's,
/// safetensors', the limit's.
struct Outputs {
    ours: PathBuf,
    /// Ours as safetensors (`Writer::create` picks the format by the extension).
    ours_st: PathBuf,
    reference: PathBuf,
    safetensors: PathBuf,
    raw: PathBuf,
}

impl Outputs {
    fn clean(&self) {
        for p in [
            &self.ours,
            &self.ours_st,
            &self.reference,
            &self.safetensors,
            &self.raw,
        ] {
            remove(p);
        }
    }
}

/// Raw writes of W1, each writer as a user gets it: ours durable (the default: temporary
/// file, early writeback, fdatasync, rename, directory fsync), ours with `durable: false`,
/// the peers' writers as they come (neither syncs), and `write()` of the same bytes; and
/// two raw durable writes of the same bytes, for what the disk allows: `write()` +
/// `fdatasync`, and `O_DIRECT` writes (4 MiB pieces copied into aligned buffers, 4 in
/// flight) + `fdatasync`.
fn raw_writes(ctx: &Ctx, w: &Workload, rows: &mut Vec<Row>) -> Res<()> {
    let out = ctx.args.dir.join("out");
    fs::create_dir_all(&out)?;
    let p = Outputs {
        ours: out.join("w1.out.zt"),
        ours_st: out.join("w1.out.ours.safetensors"),
        reference: out.join("w1.out.ref.zt"),
        safetensors: out.join("w1.out.safetensors"),
        raw: out.join("w1.out.bin"),
    };
    eprintln!("W1: raw write, each writer as it comes");
    let cases = raw_write_cases(w, &p);
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    p.clean();
    // Four rows from one run: ours durable, ours non-durable, ours durable as a one-pass
    // v1.2 file and as safetensors, against the same peers.
    let peers = &t[4..6];
    let (limit, synced) = (6, 7);
    let direct = t.get(8).map(|x| x.secs);
    let fastest = peers.iter().map(|x| x.secs).fold(f64::INFINITY, f64::min);
    let gbps = |s: f64| w.total() as f64 / s / 1e9;
    for (label, ours, target) in [
        (
            "raw write, durable (default)",
            0usize,
            "<= 1.25x the fastest peer's (non-durable) write",
        ),
        (
            "raw write, durable: false",
            1,
            ">= 1x every peer and >= 0.9x write()",
        ),
        (
            "raw write, durable, v1.2 (one pass)",
            2,
            "<= 1.25x the fastest peer's (non-durable) write",
        ),
        (
            "raw write, durable, as safetensors",
            3,
            "<= 1.25x the fastest peer's (non-durable) write",
        ),
    ] {
        let mut row = Row::new(label, "W1", "s", t[ours].secs).cpu(t[ours].cpu);
        for (i, x) in peers.iter().enumerate() {
            row = row.peer(labels[i + 4], x.secs);
        }
        if ours != 1 {
            row = row.peer(labels[synced], t[synced].secs);
            if let Some(d) = direct {
                row = row.peer(labels[8], d);
            }
        }
        let row = row
            .limit(labels[limit], t[limit].secs)
            .bytes(w.total())
            .note(format!(
                "peers as they come: neither fsyncs; sync() runs untimed before each case; \
                 durable raw writes of the same bytes: write() + fdatasync {:.2} GB/s, \
                 O_DIRECT (4 in flight) + fdatasync {}; ours durable {:.2} GB/s (the default, \
                 zTensor v2: tensors not added in name order are placed again at the end), \
                 ours durable as v1.2 (written once, in the order added) {:.2} GB/s, as \
                 safetensors (spooled, then assembled after its header) {:.2} GB/s",
                gbps(t[synced].secs),
                direct.map_or("refused here".to_owned(), |d| format!(
                    "{:.2} GB/s",
                    gbps(d)
                )),
                gbps(t[0].secs),
                gbps(t[2].secs),
                gbps(t[3].secs)
            ));
        let met = if ours != 1 {
            t[ours].secs <= 1.25 * fastest
        } else {
            t[1].secs <= fastest && row.vs_limit().is_some_and(|r| r >= 0.9)
        };
        rows.push(row.target(target, met));
    }
    Ok(())
}

/// `data` written to `path` with `O_DIRECT`: 4 MiB pieces copied into 4 aligned buffers,
/// each written by a thread of its own (4 writes in flight), the tail block padded and
/// the file cut to its length; then `fdatasync`.
fn direct_write(path: &Path, data: &[u8]) -> Res<()> {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    const PIECE: usize = 4 << 20;
    const DEPTH: usize = 4;
    let f = fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)?;
    let layout = std::alloc::Layout::from_size_align(PIECE, 4096)?;
    let next = std::sync::atomic::AtomicUsize::new(0);
    let failed = std::sync::Mutex::new(None::<String>);
    std::thread::scope(|s| {
        for _ in 0..DEPTH {
            s.spawn(|| {
                // SAFETY: a non-zero size; freed below with the same layout.
                let ptr = unsafe { std::alloc::alloc(layout) };
                // SAFETY: PIECE bytes just allocated, this thread's alone.
                let buf = unsafe { std::slice::from_raw_parts_mut(ptr, PIECE) };
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    let at = i * PIECE;
                    if at >= data.len() {
                        break;
                    }
                    let piece = &data[at..(at + PIECE).min(data.len())];
                    buf[..piece.len()].copy_from_slice(piece);
                    let len = piece.len().next_multiple_of(4096);
                    buf[piece.len()..len].fill(0);
                    if let Err(e) = f.write_all_at(&buf[..len], at as u64) {
                        *failed.lock().unwrap() = Some(e.to_string());
                        break;
                    }
                }
                // SAFETY: allocated above with `layout`.
                unsafe { std::alloc::dealloc(ptr, layout) };
            });
        }
    });
    if let Some(e) = failed.into_inner().unwrap() {
        return Err(format!("O_DIRECT write of {}: {e}", path.display()).into());
    }
    f.set_len(data.len() as u64)?;
    f.sync_data()?;
    Ok(())
}

fn raw_write_cases<'a>(w: &'a Workload, p: &'a Outputs) -> Vec<Case<'a>> {
    let raw = ztensor::WriteOptions::default();
    // Before each timed call: remove the outputs and flush what is dirty, untimed.
    let setup = move || -> Res<()> {
        p.clean();
        // SAFETY: sync() takes no arguments and cannot fail.
        unsafe { libc::sync() };
        Ok(())
    };
    [
        case("ours durable", move || write_ours(w, &p.ours, &raw, true)).setup(setup),
        case("ours durable: false", move || {
            write_ours(w, &p.ours, &raw, false)
        })
        .setup(setup),
        case("ours durable, v1.2", move || {
            write_ours_with(w, &p.ours, &raw, &v1_2())
        })
        .setup(setup),
        case("ours durable, safetensors", move || {
            write_ours(w, &p.ours_st, &raw, true)
        })
        .setup(setup),
        case("ztensor-1.2.3 Writer", move || {
            write_ref(w, &p.reference, ztensor_ref::Compression::Raw)
        })
        .setup(setup),
        case("safetensors serialize_to_file", move || {
            write_safetensors(w, &p.safetensors)
        })
        .setup(setup),
        case("write() same bytes", move || {
            File::create(&p.raw)?.write_all(&w.data)?;
            Ok(())
        })
        .setup(setup),
        case("raw durable: write() + fdatasync", move || {
            let mut f = File::create(&p.raw)?;
            f.write_all(&w.data)?;
            f.sync_data()?;
            Ok(())
        })
        .setup(setup),
    ]
    .into_iter()
    .chain(direct_ok(&p.raw).then(|| {
        case(
            "raw durable: O_DIRECT, 4 in flight + fdatasync",
            move || direct_write(&p.raw, &w.data),
        )
        .setup(setup)
    }))
    .collect()
}

/// Whether the filesystem of `path` takes `O_DIRECT` writes (tmpfs refuses them).
fn direct_ok(path: &Path) -> bool {
    let ok = direct_write(path, &[7u8; 8192]).is_ok();
    remove(path);
    if !ok {
        eprintln!("write: O_DIRECT is refused here: no O_DIRECT durable write");
    }
    ok
}

/// zstd-3 write of W3.
fn zstd_write(ctx: &Ctx, w: &Workload, rows: &mut Vec<Row>) -> Res<()> {
    eprintln!("W3: zstd write");
    let out = ctx.args.dir.join("out");
    fs::create_dir_all(&out)?;
    let p_ours = out.join("w3.out.zt");
    let p_ref = out.join("w3.out.ref.zt");
    let setup = || -> Res<()> {
        remove(&p_ours);
        remove(&p_ref);
        Ok(())
    };
    let opts = ztensor::WriteOptions::zstd(3);
    let cases = vec![
        case("ours durable", || write_ours(w, &p_ours, &opts, true)).setup(setup),
        case("ztensor-1.2.3 Writer zstd(3)", || {
            write_ref(w, &p_ref, ztensor_ref::Compression::Zstd(3))
        })
        .setup(setup),
        case("zstd::bulk::compress 1-thread (memory only)", || {
            zstd_compress_all(w, 3)
        }),
    ];
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    setup()?;
    let row = row_from("zstd-3 write (ours durable)", w.id, &labels, &t, true)
        .bytes(w.total())
        .note(format!(
            "ours: Writer::create, durable; the reference doesn't sync; the limit writes nothing; {}",
            parallel_note(t[0], t[2], ctx.cores)
        ));
    let met = row.vs_limit().is_some_and(|r| r >= 1.7);
    rows.push(row.target(">= 1.7x 1-thread compress", met));
    Ok(())
}
