//! (6) writes, each writer as a user gets it: raw W1 (ours durable and not, the peers' writers
//! as they come, `write()` of the same bytes); zstd-3 W3 (ours durable) against
//! `zstd::bulk::compress` single-threaded.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::files::Files;
use crate::formats::{write_ours, write_ref, write_safetensors, zstd_compress_all};
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

/// The output files of the raw writes: ours, the reference's, safetensors', the limit's.
struct Outputs {
    ours: PathBuf,
    reference: PathBuf,
    safetensors: PathBuf,
    raw: PathBuf,
}

impl Outputs {
    fn clean(&self) {
        for p in [&self.ours, &self.reference, &self.safetensors, &self.raw] {
            remove(p);
        }
    }
}

/// Raw writes of W1, each writer as a user gets it: ours durable (the default: temporary
/// file, early writeback, fsync, rename, directory fsync), ours with `durable: false`, the
/// peers' writers as they come (neither syncs), and `write()` of the same bytes.
fn raw_writes(ctx: &Ctx, w: &Workload, rows: &mut Vec<Row>) -> Res<()> {
    let out = ctx.args.dir.join("out");
    fs::create_dir_all(&out)?;
    let p = Outputs {
        ours: out.join("w1.out.zt"),
        reference: out.join("w1.out.ref.zt"),
        safetensors: out.join("w1.out.safetensors"),
        raw: out.join("w1.out.bin"),
    };
    eprintln!("W1: raw write, each writer as it comes");
    let cases = raw_write_cases(w, &p);
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    p.clean();
    // Two rows from one run: ours durable, then ours non-durable, against the same peers.
    let peers = &t[2..t.len() - 1];
    let fastest = peers.iter().map(|x| x.secs).fold(f64::INFINITY, f64::min);
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
    ] {
        let mut row = Row::new(label, "W1", "s", t[ours].secs).cpu(t[ours].cpu);
        for (i, x) in peers.iter().enumerate() {
            row = row.peer(labels[i + 2], x.secs);
        }
        let row = row
            .limit(labels[t.len() - 1], t[t.len() - 1].secs)
            .bytes(w.total())
            .note("peers as they come: neither fsyncs; sync() runs untimed before each case");
        let met = if ours == 0 {
            t[0].secs <= 1.25 * fastest
        } else {
            t[1].secs <= fastest && row.vs_limit().is_some_and(|r| r >= 0.9)
        };
        rows.push(row.target(target, met));
    }
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
    vec![
        case("ours durable", move || write_ours(w, &p.ours, &raw, true)).setup(setup),
        case("ours durable: false", move || {
            write_ours(w, &p.ours, &raw, false)
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
    ]
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
