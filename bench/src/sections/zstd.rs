//! (4) zstd load (W3): ours `read_into` against the `zstd` crate decoding the same stored frames
//! (from our file) single-threaded into the same buffers, and the reference crate's `read()`.

use std::cell::RefCell;

use super::{Ctx, Runs, Section};
use crate::files::{Files, stored_ranges, zstd_frames};
use crate::formats::map;
use crate::formats::{read_all_ours, read_all_ref};
use crate::harness::{
    caller_buffers, case, filled_right, measure, names_of, parallel_note, row_from,
};
use crate::report::Row;
use crate::workloads::Workload;
use crate::{MIB, Res};

pub const SECTION: Section = Section {
    name: "zstd",
    runs: Runs::On(&["W3"], run),
};

fn run(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    let wl = w.id;
    let names = w.names();
    // Stored ranges of our file's components (the frames the limit decodes).
    let stored = stored_ranges(&f.ours)?;
    let frame_note = frame_note(w, f, &stored)?;
    eprintln!("W3: zstd load");
    let bufs = RefCell::new(caller_buffers(w));
    let check = |who| filled_right(w, &bufs, who);
    let cases = vec![
        case("ours", || {
            read_all_ours(&f.ours, &Default::default(), &mut bufs.borrow_mut())
        })
        .check(check("ours zstd")),
        case("ztensor-1.2.3 read() (allocates)", || {
            read_all_ref(&f.reference, &names)
        }),
        case("zstd 1-thread decode, same frames", || {
            let m = map(&f.ours)?;
            let mut d = zstd::bulk::Decompressor::new()?;
            for (i, b) in bufs.borrow_mut().iter_mut().enumerate() {
                let (off, len) = stored[i];
                let got = d.decompress_to_buffer(&m[off..off + len], &mut b[..])?;
                if got != b.len() {
                    return Err("short zstd decode".into());
                }
            }
            Ok(())
        })
        .check(check("zstd limit")),
    ];
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    let row = row_from("zstd load into caller buffers", wl, &labels, &t, true)
        .bytes(w.total())
        .note(format!(
            "{frame_note}; {}",
            parallel_note(t[0], t[2], ctx.cores)
        ));
    let met = row.vs_limit().is_some_and(|r| r >= 1.7);
    rows.push(row.target(">= 1.7x 1-thread decode", met));
    Ok(())
}

/// How much our file stores and how many zstd frames each component has.
fn frame_note(w: &Workload, f: &Files, stored: &[(usize, usize)]) -> Res<String> {
    let m = map(&f.ours)?;
    let frames_per_component = stored
        .iter()
        .map(|&(off, len)| Ok(zstd_frames(&m[off..off + len])?.len()))
        .collect::<Res<Vec<usize>>>()?;
    let stored_total: usize = stored.iter().map(|s| s.1).sum();
    Ok(format!(
        "our file: {:.1} MiB stored for {:.1} MiB, zstd frames per component: {:?}",
        stored_total as f64 / MIB,
        w.total() as f64 / MIB,
        frames_per_component
    ))
}
