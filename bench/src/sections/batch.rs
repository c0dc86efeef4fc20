//! Batch loads (issue 17): every tensor of a file into caller buffers with one
//! `Reader::load_batch` call, on an open reader.
//! - W2 (50,000 small tensors) against `read()` of the whole file (target ≥ 0.5x), with the
//!   per-tensor loop of the same reader and safetensors' mmap+copy (which includes its
//!   open) for reference.
//! - W3 as the reference crate writes it (each component one zstd frame, so no component
//!   decodes in parallel by itself) against decoding the same frames on one thread
//!   (target ≥ 1.7x on 2 cores: the batch runs components side by side).

use std::cell::RefCell;
use std::fs::{self, File};
use std::io::Read;

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::files::{Files, stored_ranges};
use crate::formats::{safetensors_copy, zstd_decode_all};
use crate::harness::{
    caller_buffers, case, filled_right, measure, names_of, parallel_note, row_from,
};
use crate::report::Row;
use crate::workloads::Workload;

pub const SECTION: Section = Section {
    name: "batch",
    runs: Runs::On(&["W2", "W3"], run),
};

fn run(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    match w.id {
        "W2" => small_tensors(ctx, w, f, rows),
        _ => single_frames(ctx, w, f, rows),
    }
}

/// The reader's object index of each workload tensor, by name (a writer may order its
/// manifest otherwise: the reference's is not in the order tensors were added).
pub(super) fn order_of(r: &ztensor::Reader<'_>, w: &Workload) -> Res<Vec<usize>> {
    w.tensors
        .iter()
        .map(|t| {
            r.find(&t.name)
                .ok_or_else(|| format!("no tensor '{}' in the file", t.name).into())
        })
        .collect()
}

/// One `load_batch` of every tensor's data component into `bufs` (`order[i]`: the object
/// of buffer i).
pub(super) fn batch_into(
    r: &ztensor::Reader<'_>,
    bufs: &mut [Vec<u8>],
    order: &[usize],
) -> Res<()> {
    let mut requests: Vec<ztensor::load::Request<'_>> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, dst)| ztensor::load::Request::host(order[i], 0, dst))
        .collect();
    for result in r.load_batch(&mut requests, 0) {
        result?;
    }
    Ok(())
}

fn small_tensors(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    eprintln!("W2: batch load");
    let r = ztensor::Reader::open(&f.ours)?;
    let order = order_of(&r, w)?;
    let bufs = RefCell::new(caller_buffers(w));
    let whole = RefCell::new(vec![0x55u8; fs::metadata(&f.ours)?.len() as usize]);
    let check = |who| filled_right(w, &bufs, who);
    let st = f.safetensors.as_ref().ok_or("no safetensors file")?;
    let cases = vec![
        case("ours load_batch", || {
            batch_into(&r, &mut bufs.borrow_mut(), &order)
        })
        .check(check("batch")),
        case("ours read_into, one by one", || {
            for (i, b) in bufs.borrow_mut().iter_mut().enumerate() {
                r.read_into(order[i], 0, b)?;
            }
            Ok(())
        })
        .check(check("one by one")),
        case("safetensors mmap+copy (with open)", || {
            safetensors_copy(w, st, &mut bufs.borrow_mut())
        })
        .check(check("safetensors")),
        case("read() whole file, 1 buffer", || {
            File::open(&f.ours)?.read_exact(&mut whole.borrow_mut())?;
            Ok(())
        }),
    ];
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    let row = row_from("batch load (reader open)", w.id, &labels, &t, true)
        .bytes(w.total())
        .note(parallel_note(t[0], t[t.len() - 1], ctx.cores));
    let met = row.vs_limit().is_some_and(|r| r >= 0.5);
    rows.push(row.target(">= 0.5x read()", met));
    Ok(())
}

fn single_frames(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    eprintln!("W3: batch load of the reference's single-frame file");
    let r = ztensor::Reader::open(&f.reference)?;
    let order = order_of(&r, w)?;
    let stored = stored_ranges(&f.reference)?;
    let bufs = RefCell::new(caller_buffers(w));
    let check = |who| filled_right(w, &bufs, who);
    let cases = vec![
        case("ours load_batch", || {
            batch_into(&r, &mut bufs.borrow_mut(), &order)
        })
        .check(check("batch")),
        case("ours read_into, one by one", || {
            for (i, b) in bufs.borrow_mut().iter_mut().enumerate() {
                r.read_into(order[i], 0, b)?;
            }
            Ok(())
        })
        .check(check("one by one")),
        case("zstd 1-thread decode, same frames", || {
            zstd_decode_all(&f.reference, &stored, &order, &mut bufs.borrow_mut())
        })
        .check(check("zstd limit")),
    ];
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    let row = row_from(
        "batch load, reference-written zstd (1 frame per component)",
        w.id,
        &labels,
        &t,
        true,
    )
    .bytes(w.total())
    .note(parallel_note(t[0], t[t.len() - 1], ctx.cores));
    let met = row.vs_limit().is_some_and(|r| r >= 1.7);
    rows.push(row.target(">= 1.7x 1-thread decode", met));
    Ok(())
}
