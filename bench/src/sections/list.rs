//! (1) open + list: open the file and read every name, shape, dtype and offset.

use std::collections::BTreeMap;
use std::hint::black_box;
use std::path::Path;

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::files::Files;
use crate::formats::map;
use crate::harness::{case, listing, measure, names_of, row_from};
use crate::report::Row;
use crate::workloads::Workload;

pub const SECTION: Section = Section {
    name: "list",
    runs: Runs::On(&["W2", "W1"], run),
};

fn run(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    let wl = w.id;
    let (st, gg) = f.raw_peers();
    eprintln!("{wl}: open + list");
    // Ours on every format's file, interleaved with the peers; the first five cases are
    // the `open + list` row, the last two ours on the peers' own files.
    let cases = vec![
        case("ours", || list_ours(&f.ours)),
        case("ztensor-1.2.3", || list_ref(&f.reference)),
        case("safetensors deserialize", || list_st_deserialize(st)),
        case("safetensors read_metadata", || list_st_metadata(st)),
        case("gguf (ztensor-1.2.3)", || list_gguf(gg)),
        case("ours on the .safetensors", || list_ours(st)),
        case("ours on the .gguf", || list_ours(gg)),
    ];
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    let mut row = row_from("open + list", wl, &labels[..5], &t[..5], false)
        .note(format!("{} tensors", w.tensors.len()));
    if wl == "W2" {
        let met = row.vs_best_peer().is_some_and(|r| r >= 2.0);
        row = row.target(">= 2x fastest peer", met);
    }
    rows.push(row);
    // Every format's open: ours reading the safetensors and GGUF files against the readers
    // of those formats.
    for (metric, ours, peers) in [
        ("open + list, safetensors file", 5, &[2usize, 3][..]),
        ("open + list, GGUF file", 6, &[4][..]),
    ] {
        let mut row = Row::new(metric, wl, "s", t[ours].secs).cpu(t[ours].cpu);
        for &i in peers {
            row = row.peer(labels[i], t[i].secs);
        }
        let met = row.vs_best_peer().is_some_and(|r| r >= 1.0);
        rows.push(
            row.note(format!(
                "{} tensors; ours reads the peer's own file",
                w.tensors.len()
            ))
            .target(">= 1x the format's own reader", met),
        );
    }
    Ok(())
}

fn list_ours(path: &Path) -> Res<()> {
    black_box(listing(&ztensor::Reader::open(path)?));
    Ok(())
}

fn list_ref(path: &Path) -> Res<()> {
    let r = ztensor_ref::Reader::open(path)?;
    black_box(ref_listing(r.tensors()));
    Ok(())
}

fn list_gguf(path: &Path) -> Res<()> {
    let r = ztensor_ref::GgufReader::open(path)?;
    black_box(ref_listing(&r.manifest.objects));
    Ok(())
}

/// Reads every name, shape, dtype and offset of the reference crate's listing.
fn ref_listing(objects: &BTreeMap<String, ztensor_ref::Object>) -> u64 {
    let mut acc = 0u64;
    for (name, o) in objects {
        acc = acc.wrapping_add(name.len() as u64);
        for &d in &o.shape {
            acc ^= d;
        }
        let c = &o.components["data"];
        acc = acc.wrapping_add(c.dtype.byte_size() as u64 + c.offset);
    }
    acc
}

fn list_st_deserialize(path: &Path) -> Res<()> {
    let m = map(path)?;
    let s = safetensors::SafeTensors::deserialize(&m)?;
    let base = m.as_ptr() as usize;
    let mut acc = 0u64;
    for (name, v) in s.iter() {
        acc = acc.wrapping_add(name.len() as u64);
        for &d in v.shape() {
            acc ^= d as u64;
        }
        acc = acc.wrapping_add(
            (v.dtype().bitsize() / 8) as u64 + (v.data().as_ptr() as usize - base) as u64,
        );
    }
    black_box(acc);
    Ok(())
}

fn list_st_metadata(path: &Path) -> Res<()> {
    let m = map(path)?;
    let (hlen, meta) = safetensors::SafeTensors::read_metadata(&m)?;
    let mut acc = 0u64;
    for (name, info) in meta.tensors() {
        acc = acc.wrapping_add(name.len() as u64);
        for &d in &info.shape {
            acc ^= d as u64;
        }
        acc = acc.wrapping_add(
            (info.dtype.bitsize() / 8) as u64 + (8 + hlen + info.data_offsets.0) as u64,
        );
    }
    black_box(acc);
    Ok(())
}
