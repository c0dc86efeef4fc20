//! (6) writes: raw W1 without fsync and with fsync for everyone, against the peers' writers and
//! `write()` of the same bytes; zstd-3 W3 against `zstd::bulk::compress` single-threaded.

use std::fs::{self, File};
use std::hint::black_box;
use std::io::Write;
use std::path::{Path, PathBuf};

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::files::Files;
use crate::formats::{write_ours, write_ours_nosync, write_ref, write_safetensors};
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

fn sync_all_path(p: &Path) -> Res<()> {
    File::open(p)?.sync_all()?;
    Ok(())
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

/// Raw writes of W1, without fsync and with fsync.
fn raw_writes(ctx: &Ctx, w: &Workload, rows: &mut Vec<Row>) -> Res<()> {
    let out = ctx.args.dir.join("out");
    fs::create_dir_all(&out)?;
    let p = Outputs {
        ours: out.join("w1.out.zt"),
        reference: out.join("w1.out.ref.zt"),
        safetensors: out.join("w1.out.safetensors"),
        raw: out.join("w1.out.bin"),
    };
    for fsync in [false, true] {
        eprintln!("W1: raw write{}", if fsync { " + fsync" } else { "" });
        let cases = raw_write_cases(w, &p, fsync);
        let labels = names_of(&cases);
        let t = measure(ctx.args.runs, cases)?;
        p.clean();
        let label = if fsync {
            "raw write (+fsync, all)"
        } else {
            "raw write (no fsync)"
        };
        let row = row_from(label, "W1", &labels, &t, true)
            .bytes(w.total())
            .note(if fsync {
                "ours: Writer::create (temp file, fsync, rename); the others fsync the file after writing"
            } else {
                "ours: Writer::new over a BufWriter<File>; nobody fsyncs"
            });
        let ahead = row.peers.iter().all(|p| p.1 > row.ours);
        let met = row.vs_limit().is_some_and(|r| r >= 0.9) && ahead;
        rows.push(row.target(">= 0.9x write() and ahead of both peers", met));
    }
    Ok(())
}

fn raw_write_cases<'a>(w: &'a Workload, p: &'a Outputs, fsync: bool) -> Vec<Case<'a>> {
    let raw = ztensor::WriteOptions::default();
    // Before each timed call: remove the outputs and flush what is dirty, untimed.
    let setup = move || -> Res<()> {
        p.clean();
        if fsync {
            // SAFETY: sync() takes no arguments and cannot fail.
            unsafe { libc::sync() };
        }
        Ok(())
    };
    vec![
        case("ours", move || {
            if fsync {
                write_ours(w, &p.ours, &raw) // create: temp file, fsync, rename, fsync dir
            } else {
                write_ours_nosync(w, &p.ours, &raw)
            }
        })
        .setup(setup),
        case("ztensor-1.2.3 Writer", move || {
            write_ref(w, &p.reference, ztensor_ref::Compression::Raw)?;
            if fsync {
                sync_all_path(&p.reference)?;
            }
            Ok(())
        })
        .setup(setup),
        case("safetensors serialize_to_file", move || {
            write_safetensors(w, &p.safetensors)?;
            if fsync {
                sync_all_path(&p.safetensors)?;
            }
            Ok(())
        })
        .setup(setup),
        case("write() same bytes", move || {
            let mut file = File::create(&p.raw)?;
            file.write_all(&w.data)?;
            if fsync {
                file.sync_all()?;
            }
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
        case("ours", || write_ours_nosync(w, &p_ours, &opts)).setup(setup),
        case("ztensor-1.2.3 Writer zstd(3)", || {
            write_ref(w, &p_ref, ztensor_ref::Compression::Zstd(3))
        })
        .setup(setup),
        case("zstd::bulk::compress 1-thread (memory only)", || {
            let mut acc = 0usize;
            for i in 0..w.tensors.len() {
                acc += zstd::bulk::compress(w.bytes(i), 3)?.len();
            }
            black_box(acc);
            Ok(())
        }),
    ];
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    setup()?;
    let row = row_from("zstd-3 write (no fsync)", w.id, &labels, &t, true)
        .bytes(w.total())
        .note(format!(
            "ours: Writer::new over a BufWriter<File>; the limit writes nothing; {}",
            parallel_note(t[0], t[2], ctx.cores)
        ));
    let met = row.vs_limit().is_some_and(|r| r >= 1.7);
    rows.push(row.target(">= 1.7x 1-thread compress", met));
    Ok(())
}
