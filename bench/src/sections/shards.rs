//! (12) open + list of a sharded set: the W2 file split into 4 zTensor shards with an index
//! (`ShardedWriter`), opened as one reader through the index, against opening the 4 shards
//! one by one (each with `one_file`), reading every name, shape, dtype and offset both ways.

use std::hint::black_box;
use std::path::{Path, PathBuf};

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::files::{Files, warm};
use crate::harness::{case, listing, measure, names_of, row_from};
use crate::report::Row;
use crate::workloads::Workload;

pub const SECTION: Section = Section {
    name: "shards",
    runs: Runs::On(&["W2"], run),
};

/// The set of `f.ours` in 4 shards, made once: the index and the shards, in order.
fn make_set(f: &Files, dir: &Path) -> Res<(PathBuf, Vec<PathBuf>)> {
    let r = ztensor::Reader::open(&f.ours)?;
    let size = std::fs::metadata(&f.ours)?.len();
    let base = dir.join("w2_set");
    let index = dir.join("w2_set.zt.index.json");
    let shards: Vec<PathBuf> = (1..=4)
        .map(|k| dir.join(format!("w2_set-{k:05}-of-00004.zt")))
        .collect();
    let fresh = |p: &Path| {
        let (Ok(a), Ok(b)) = (std::fs::metadata(p), std::fs::metadata(&f.ours)) else {
            return false;
        };
        matches!((a.modified(), b.modified()), (Ok(x), Ok(y)) if x >= y)
    };
    if !(fresh(&index) && shards.iter().all(|s| fresh(s))) {
        // v1.2 shards, as the single file they are cut from (v2 pads each tensor to 4 KiB).
        let options = ztensor::CreateOptions {
            durable: false,
            ..crate::formats::v1_2()
        };
        let mut w = ztensor::ShardedWriter::create_with(&base, size / 4 + 1, &options)?;
        for o in 0..r.objects().len() {
            w.copy_object(&r, o, &Default::default())?;
        }
        w.finish()?;
    }
    let set = ztensor::Reader::open(&index)?;
    if set.shard_count() != 4 || set.objects().len() != r.objects().len() {
        return Err(format!(
            "the set has {} shards and {} objects, not 4 and {}",
            set.shard_count(),
            set.objects().len(),
            r.objects().len()
        )
        .into());
    }
    Ok((index, shards))
}

fn run(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    let wl = w.id;
    eprintln!("{wl}: open + list of a 4-shard set");
    let (index, shards) = make_set(f, &ctx.args.dir)?;
    warm(&index)?;
    for s in &shards {
        warm(s)?;
    }
    let cases = vec![
        case("ours: the set, one reader", || list_set(&index)),
        case("the 4 shards one by one", || list_each(&shards)),
    ];
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    let mut row = row_from("open + list, 4-shard set", wl, &labels, &t, false).note(format!(
        "{} tensors; the set also parses its index.json",
        w.tensors.len()
    ));
    let met = row.vs_best_peer().is_some_and(|r| r >= 1.0);
    row = row.target("<= the shards one by one", met);
    rows.push(row);
    Ok(())
}

fn list_set(index: &Path) -> Res<()> {
    let r = ztensor::Reader::open(index)?;
    black_box(listing(&r));
    Ok(())
}

fn list_each(shards: &[PathBuf]) -> Res<()> {
    let options = ztensor::OpenOptions {
        one_file: true,
        ..Default::default()
    };
    let mut acc = 0u64;
    for s in shards {
        let r = ztensor::Reader::open_with(s, &options)?;
        acc ^= listing(&r);
    }
    black_box(acc);
    Ok(())
}
