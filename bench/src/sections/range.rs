//! (5) range read (W3): 1 MiB from the middle of each big zstd component with `read_range`,
//! against decoding, single-threaded, only the frames that overlap the range.

use std::cell::RefCell;

use super::{Ctx, Runs, Section};
use crate::files::{Files, Frame, stored_ranges, zstd_frames};
use crate::formats::map;
use crate::harness::{case, measure, names_of, same_bytes};
use crate::report::{Row, fmt_val};
use crate::workloads::Workload;
use crate::{MIB, Res};

pub const SECTION: Section = Section {
    name: "range",
    runs: Runs::On(&["W3"], run),
};

/// The big components whose middle is read.
const BIG: [&str; 2] = ["quant.big.weight", "sparse.big.weight"];

/// What a range case sees: our reader, our file's mapping and stored ranges, the reference
/// reader.
struct Readers<'a> {
    r: ztensor::Reader<'static>,
    m: memmap2::Mmap,
    stored: Vec<(usize, usize)>,
    refr: ztensor_ref::Reader<std::io::BufReader<std::fs::File>>,
    w: &'a Workload,
}

fn run(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    eprintln!("W3: range reads");
    let rd = Readers {
        stored: stored_ranges(&f.ours)?,
        r: ztensor::Reader::open(&f.ours)?,
        m: map(&f.ours)?,
        refr: ztensor_ref::Reader::open(&f.reference)?,
        w,
    };
    for big in BIG {
        rows.push(range_row(ctx, &rd, big)?);
    }
    Ok(())
}

/// Decodes the frames `needed` of `src` one by one into `scratch`, and copies their part in
/// `offset..end` into `dst`.
fn decode_needed(
    d: &mut zstd::bulk::Decompressor<'_>,
    src: &[u8],
    needed: &[Frame],
    scratch: &mut [u8],
    (offset, end): (u64, u64),
    dst: &mut [u8],
) -> Res<()> {
    let mut filled = 0usize;
    for &(cs, cl, ds, dl) in needed {
        let got = d.decompress_to_buffer(&src[cs..cs + cl], &mut scratch[..dl as usize])?;
        let lo = offset.max(ds);
        let hi = end.min(ds + got as u64);
        let part = (hi - lo) as usize;
        dst[filled..filled + part]
            .copy_from_slice(&scratch[(lo - ds) as usize..(hi - ds) as usize]);
        filled += part;
    }
    Ok(())
}

fn range_row(ctx: &Ctx, rd: &Readers, big: &str) -> Res<Row> {
    let (r, w) = (&rd.r, rd.w);
    let i = r.find(big).ok_or("missing big tensor")?;
    let ti = w.by_name[big];
    let full_len = w.tensors[ti].len as u64;
    let want = (1u64 << 20).min(full_len / 4) as usize;
    let offset = (full_len / 2) & !4095;
    let end = offset + want as u64;
    let expect = &w.bytes(ti)[offset as usize..end as usize];
    // The limit decodes exactly the frames that overlap the range, single-threaded.
    let (off, len) = rd.stored[i];
    let src = &rd.m[off..off + len];
    let frames = zstd_frames(src)?;
    let needed: Vec<_> = frames
        .iter()
        .filter(|fr| fr.2 < end && fr.2 + fr.3 > offset)
        .copied()
        .collect();
    let needed_bytes: u64 = needed.iter().map(|fr| fr.3).sum();
    let dst_ours = RefCell::new(vec![0u8; want]);
    let dst_limit = RefCell::new(vec![0u8; want]);
    let dst_ref = RefCell::new(vec![0u8; want]);
    let full = RefCell::new(vec![0u8; full_len as usize]);
    let mut scratch = vec![0u8; needed.iter().map(|fr| fr.3).max().unwrap_or(0) as usize];
    let mut d = zstd::bulk::Decompressor::new()?;
    let same = |dst, who| same_bytes(dst, expect, who);
    let cases = vec![
        case("ours", || {
            r.read_range(i, 0, offset, &mut dst_ours.borrow_mut())?;
            Ok(())
        })
        .check(same(&dst_ours, "ours read_range")),
        case("ztensor-1.2.3 full read + slice", || {
            let v = rd.refr.read(big, false)?;
            dst_ref
                .borrow_mut()
                .copy_from_slice(&v[offset as usize..end as usize]);
            Ok(())
        })
        .check(same(&dst_ref, "ztensor-1.2.3")),
        case("ours full read_into (reference point)", || {
            r.read_into(i, 0, &mut full.borrow_mut())?;
            Ok(())
        }),
        case("zstd 1-thread, only the needed frames", || {
            let range = (offset, end);
            decode_needed(
                &mut d,
                src,
                &needed,
                &mut scratch,
                range,
                &mut dst_limit.borrow_mut(),
            )
        })
        .check(same(&dst_limit, "range limit")),
    ];
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    let (ours, full_time) = (t[0].secs, t[2].secs);
    let kind = big.split('.').next().unwrap_or(big);
    let row = Row::new(&format!("range read 1 MiB ({kind})"), w.id, "s", ours)
        .cpu(t[0].cpu)
        .peer(labels[1], t[1].secs)
        .limit(labels[3], t[3].secs)
        .bytes(want as u64)
        .note(note(full_len, frames.len(), needed_bytes, ours, full_time));
    let met = frames.len() > 1 && row.vs_limit().is_some_and(|x| x >= 1.0 / 1.5);
    Ok(row.target(
        "decodes only the needed frames (<= 1.5x their 1-thread decode, >1 frame)",
        met,
    ))
}

/// `ours` and `full_time`: the range read and the full read of the component.
fn note(full_len: u64, frames: usize, needed_bytes: u64, ours: f64, full_time: f64) -> String {
    let est = (ours / full_time * full_len as f64).min(full_len as f64);
    format!(
        "component {:.1} MiB in {frames} frame(s); needed frames hold {:.2} MiB; ours full read_into {}; \
         bytes ours decodes, estimated from time: {:.1} MiB",
        full_len as f64 / MIB,
        needed_bytes as f64 / MIB,
        fmt_val("s", full_time),
        est / MIB
    )
}
