//! Scaling with the cores (issue 28): batch load (W1), zstd batch load and zstd-3 write
//! (W3), verify (W1) and dequantization (Q4_K, 4Kx4K) with the library's pool at 1, 2, 4,
//! 8, 16 threads (`--scaling`; default: those up to the cores), each against its
//! one-thread limit and its peers, all contenders of a metric interleaved in the same
//! rounds. One row per metric and thread count (`threads` in results.json); the chart
//! `docs/bench/scaling.svg` plots ours' speed-up over the one-thread limit.

use std::cell::RefCell;
use std::fs::{self, File};
use std::io::Read;

use super::batch::{batch_into, order_of};
use super::{Ctx, Runs, Section};
use crate::Res;
use crate::files::{Files, stored_ranges};
use crate::formats::{
    read_all_ref, safetensors_copy, sha2_ranges, write_ours, write_ref, zstd_compress_all,
    zstd_decode_all,
};
use crate::harness::{Case, Timing, caller_buffers, case, filled_right, measure};
use crate::report::Row;
use crate::workloads::Workload;

pub const SECTION: Section = Section {
    name: "scaling",
    runs: Runs::On(&["W1", "W3"], run),
};

fn run(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    let result = match w.id {
        "W1" => batch_load(ctx, w, f, rows)
            .and_then(|()| verify(ctx, w, f, rows))
            .and_then(|()| dequant(ctx, rows)),
        _ => zstd_load(ctx, w, f, rows).and_then(|()| zstd_write(ctx, w, rows)),
    };
    // Whatever happened, the pool gets the run's size back.
    ztensor::pool::set_threads(ctx.args.threads)?;
    result
}

/// One case of ours per thread count, the pool resized (untimed) before each call.
fn ours_cases<'a>(ctx: &Ctx, mut make: impl FnMut(usize) -> Case<'a>) -> Vec<Case<'a>> {
    ctx.args
        .scaling
        .iter()
        .map(|&n| {
            make(n).setup(move || {
                ztensor::pool::set_threads(n)?;
                Ok(())
            })
        })
        .collect()
}

/// Ours: one `load_batch` of every tensor into `bufs` per pool size, checked.
fn batch_cases<'a>(
    ctx: &Ctx,
    w: &'a Workload,
    r: &'a ztensor::Reader<'_>,
    bufs: &'a RefCell<Vec<Vec<u8>>>,
    order: &'a [usize],
) -> Vec<Case<'a>> {
    ours_cases(ctx, |_| {
        case("ours load_batch", move || {
            batch_into(r, &mut bufs.borrow_mut(), order)
        })
        .check(filled_right(w, bufs, "batch"))
    })
}

/// The rows of one metric (name, workload, bytes): `t` holds the limit, then the peers
/// (`against`: the limit's and the peers' names), then ours per pool size. `target`: (at
/// this many threads or more, the least speed-up over the limit).
fn push_rows(
    ctx: &Ctx,
    rows: &mut Vec<Row>,
    t: &[Timing],
    (metric, wl, bytes): (&str, &str, u64),
    (limit, peers): (&str, &[&str]),
    target: Option<(usize, f64)>,
) {
    for (k, &threads) in ctx.args.scaling.iter().enumerate() {
        let ours = t[1 + peers.len() + k];
        let mut row = Row::new(&format!("scaling: {metric}"), wl, "s", ours.secs)
            .cpu(ours.cpu)
            .bytes(bytes)
            .threads(threads);
        for (i, p) in peers.iter().enumerate() {
            row = row.peer(p, t[1 + i].secs);
        }
        let row = row.limit(limit, t[0].secs).note(format!(
            "pool of {threads} threads; ours used {:.2} CPUs on {} cores{}",
            ours.cpu,
            ctx.cores,
            if threads > ctx.cores {
                " (more threads than cores: oversubscribed)"
            } else {
                ""
            }
        ));
        let row = match target {
            Some((from, want)) if threads >= from => {
                let met = row.vs_limit().is_some_and(|r| r >= want);
                row.target(&format!(">= {want}x the 1-thread limit"), met)
            }
            _ => row,
        };
        rows.push(row);
    }
}

fn batch_load(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    eprintln!("W1: scaling of the batch load");
    let r = ztensor::Reader::open(&f.ours)?;
    let order = order_of(&r, w)?;
    let bufs = RefCell::new(caller_buffers(w));
    let whole = RefCell::new(vec![0x55u8; fs::metadata(&f.ours)?.len() as usize]);
    let st = f.safetensors.as_ref().ok_or("no safetensors file")?;
    let mut cases = vec![
        case("read() whole file, 1 thread", || {
            File::open(&f.ours)?.read_exact(&mut whole.borrow_mut())?;
            Ok(())
        }),
        case("safetensors mmap+copy (with open)", || {
            safetensors_copy(w, st, &mut bufs.borrow_mut())
        }),
    ];
    cases.extend(batch_cases(ctx, w, &r, &bufs, &order));
    let t = measure(ctx.args.runs, cases)?;
    let peers = ["safetensors mmap+copy (with open)"];
    let limit = "read() whole file, 1 thread";
    push_rows(
        ctx,
        rows,
        &t,
        ("batch load", w.id, w.total()),
        (limit, &peers),
        None,
    );
    Ok(())
}

fn verify(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    eprintln!("W1: scaling of verify");
    let path = f.ours_sha.as_ref().expect("W1 has a sha256 copy");
    let ranges = stored_ranges(path)?;
    let mut cases = vec![case("sha2 1 thread", || sha2_ranges(path, &ranges))];
    cases.extend(ours_cases(ctx, |_| {
        case("ours verify", || {
            ztensor::Reader::open(path)?.verify()?;
            Ok(())
        })
    }));
    let t = measure(ctx.args.runs, cases)?;
    let target = Some((16, 12.0));
    push_rows(
        ctx,
        rows,
        &t,
        ("verify sha256", w.id, w.total()),
        ("sha2 1 thread", &[]),
        target,
    );
    Ok(())
}

fn dequant(ctx: &Ctx, rows: &mut Vec<Row>) -> Res<()> {
    eprintln!("scaling of dequantization (Q4_K 4Kx4K)");
    let nrows = if ctx.args.quick { 1024 } else { 4096 };
    let file = super::dequant::gguf_file(12, 256, 144, &[0, 2], nrows);
    let r = ztensor::Reader::from_slice(&file)?;
    let values = nrows * 4096;
    let out = RefCell::new(vec![0x55u8; values * 4]);
    let mut cases = vec![
        case("ours, 1 thread", || {
            r.read_as(0, 0, ztensor::DType::F32, &mut out.borrow_mut())?;
            Ok(())
        })
        .setup(|| {
            ztensor::pool::set_threads(1)?;
            Ok(())
        }),
    ];
    cases.extend(ours_cases(ctx, |_| {
        case("ours read_as f32", || {
            r.read_as(0, 0, ztensor::DType::F32, &mut out.borrow_mut())?;
            Ok(())
        })
    }));
    let t = measure(ctx.args.runs, cases)?;
    let wl = if ctx.args.quick { "1Kx4K" } else { "4Kx4K" };
    let bytes = (values * 4) as u64;
    let what = ("dequantize Q4_K", wl, bytes);
    push_rows(ctx, rows, &t, what, ("ours, 1 thread", &[]), None);
    Ok(())
}

fn zstd_load(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    eprintln!("W3: scaling of the zstd batch load");
    let r = ztensor::Reader::open(&f.ours)?;
    let order = order_of(&r, w)?;
    let stored = stored_ranges(&f.ours)?;
    let bufs = RefCell::new(caller_buffers(w));
    let names = w.names();
    let mut cases = vec![
        case("zstd 1-thread decode, same frames", || {
            zstd_decode_all(&f.ours, &stored, &order, &mut bufs.borrow_mut())
        }),
        case("ztensor-1.2.3 read() (allocates)", || {
            read_all_ref(&f.reference, &names)
        }),
    ];
    cases.extend(batch_cases(ctx, w, &r, &bufs, &order));
    let t = measure(ctx.args.runs, cases)?;
    let peers = ["ztensor-1.2.3 read() (allocates)"];
    let limit = "zstd 1-thread decode, same frames";
    let what = ("zstd load (batch, ours-written)", w.id, w.total());
    push_rows(ctx, rows, &t, what, (limit, &peers), None);
    Ok(())
}

fn zstd_write(ctx: &Ctx, w: &Workload, rows: &mut Vec<Row>) -> Res<()> {
    eprintln!("W3: scaling of the zstd-3 write");
    let out = ctx.args.dir.join("out");
    fs::create_dir_all(&out)?;
    let (p_ours, p_ref) = (out.join("w3.scaling.zt"), out.join("w3.scaling.ref.zt"));
    let clean = || {
        let _ = fs::remove_file(&p_ours);
        let _ = fs::remove_file(&p_ref);
    };
    let opts = ztensor::WriteOptions::zstd(3);
    let mut cases = vec![
        case("zstd::bulk::compress 1 thread (memory only)", || {
            zstd_compress_all(w, 3)
        }),
        // Each writes over its last output (ours renames its new file over it).
        case("ztensor-1.2.3 Writer zstd(3)", || {
            write_ref(w, &p_ref, ztensor_ref::Compression::Zstd(3))
        }),
    ];
    cases.extend(ours_cases(ctx, |_| {
        case("ours durable", || write_ours(w, &p_ours, &opts, true))
    }));
    let t = measure(ctx.args.runs, cases)?;
    clean();
    let peers = ["ztensor-1.2.3 Writer zstd(3)"];
    let limit = "zstd::bulk::compress 1 thread (memory only)";
    let target = Some((16, 8.0));
    push_rows(
        ctx,
        rows,
        &t,
        ("zstd-3 write (durable)", w.id, w.total()),
        (limit, &peers),
        target,
    );
    Ok(())
}
