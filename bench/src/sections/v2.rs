//! zTensor v2 against its reference implementation: the Rust crate `ztensor` 2.1.1 from
//! crates.io, whose sources are the ones PyPI's `ztensor` 2.1.2 is built from (the
//! Python package embeds this crate), reading the same canonical v2 file (ours; the
//! reference writes the same bytes, tests/interop_v2.rs). Three rows: open + list (every
//! name, shape, dtype and offset), views by name (a zero-copy view of every tensor of an
//! open file), and load into caller buffers (open, then copy every tensor into
//! pre-allocated resident buffers).

use std::cell::RefCell;
use std::hint::black_box;
use std::path::Path;

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::files::Files;
use crate::harness::{caller_buffers, case, filled_right, listing, measure, names_of, row_from};
use crate::report::Row;
use crate::workloads::Workload;

pub const SECTION: Section = Section {
    name: "v2",
    runs: Runs::On(&["W2", "W1"], run),
};

/// The reference's label in the rows.
const REF: &str = "ztensor-2.1.1 (PyPI 2.1.2's crate)";

fn run(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    let wl = w.id;
    let path = f.v2.as_ref().ok_or("no v2 file")?;
    let names = w.names();
    let note = format!("{} tensors, canonical v2 file", w.tensors.len());

    eprintln!("{wl}: zTensor v2 open + list");
    let cases = vec![
        case("ours", || {
            black_box(listing(&ztensor::Reader::open(path)?));
            Ok(())
        }),
        case(REF, || {
            black_box(ref_listing(&ztensor_v2ref::Source::open(path)?)?);
            Ok(())
        }),
    ];
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    let mut row = row_from("open + list, zTensor v2", wl, &labels, &t, false).note(note.clone());
    if wl == "W2" {
        let met = row.vs_best_peer().is_some_and(|r| r >= 2.0);
        row = row.target(">= 2x the reference", met);
    }
    rows.push(row);

    eprintln!("{wl}: zTensor v2 views");
    let ours = ztensor::Reader::open(path)?;
    let theirs = ztensor_v2ref::Source::open(path)?;
    let cases = vec![
        case("ours", || {
            for name in &names {
                let v = ours.view(ours.find(name).ok_or("missing tensor")?, 0)?;
                if !v.zero_copy {
                    return Err("a copy, not a view".into());
                }
                black_box((v.data.as_ptr(), v.data.len()));
            }
            Ok(())
        }),
        case(REF, || {
            for name in &names {
                black_box(theirs.tensor(name)?.data()?.map()?.as_ptr());
            }
            Ok(())
        }),
    ];
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    rows.push(row_from("views by name, zTensor v2", wl, &labels, &t, false).note(note.clone()));

    eprintln!("{wl}: zTensor v2 load into caller buffers");
    let bufs = RefCell::new(caller_buffers(w));
    let cases = vec![
        case("ours", || load_ours(path, &names, &mut bufs.borrow_mut()))
            .check(filled_right(w, &bufs, "ours")),
        case(REF, || load_ref(path, &names, &mut bufs.borrow_mut())).check(filled_right(
            w,
            &bufs,
            "ztensor-2.1.1",
        )),
    ];
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    let row = row_from(
        "load into caller buffers, zTensor v2",
        wl,
        &labels,
        &t,
        false,
    )
    .note(note)
    .bytes(w.total());
    let met = row.vs_best_peer().is_some_and(|r| r >= 1.0);
    rows.push(row.target(">= 1x the reference", met));
    Ok(())
}

/// Open, then copy every tensor (found by name: a v2 file lists them in name order) into
/// its buffer.
fn load_ours(path: &Path, names: &[&str], bufs: &mut [Vec<u8>]) -> Res<()> {
    let r = ztensor::Reader::open(path)?;
    for (name, b) in names.iter().zip(bufs.iter_mut()) {
        r.read_into(r.find(name).ok_or("missing tensor")?, 0, b)?;
    }
    Ok(())
}

/// What `listing` reads of ours: every name, shape, dtype and offset.
fn ref_listing(src: &ztensor_v2ref::Source) -> Res<u64> {
    let mut acc = 0u64;
    for t in src.tensors() {
        acc = acc.wrapping_add(t.name().len() as u64);
        for &d in t.shape() {
            acc ^= d;
        }
        let p = t.data()?;
        acc = acc.wrapping_add(p.dtype().width() + p.locate()?.offset);
    }
    Ok(acc)
}

/// Open, then copy every tensor into its buffer (the best the reference offers: a borrowed
/// mapping, then the copy).
fn load_ref(path: &Path, names: &[&str], bufs: &mut [Vec<u8>]) -> Res<()> {
    let src = ztensor_v2ref::Source::open(path)?;
    for (name, b) in names.iter().zip(bufs.iter_mut()) {
        b.copy_from_slice(&src.tensor(name)?.data()?.bytes()?);
    }
    Ok(())
}
