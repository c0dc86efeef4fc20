//! (7) verify (W1): ours `verify()` on the sha256 copy against `sha2::Sha256` over the same
//! stored bytes, one thread.

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::files::{Files, stored_ranges};
use crate::formats::sha2_ranges;
use crate::harness::{case, measure, names_of, parallel_note, row_from};
use crate::report::Row;
use crate::workloads::Workload;

pub const SECTION: Section = Section {
    name: "verify",
    runs: Runs::On(&["W1"], run),
};

fn run(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    let (wl, cores) = (w.id, ctx.cores);
    eprintln!("{wl}: verify");
    let path = f.ours_sha.as_ref().expect("W1 has a sha256 copy");
    // The limit hashes the same stored bytes, found through our reader's listing.
    let ranges = stored_ranges(path)?;
    let cases = vec![
        case("ours", || {
            ztensor::Reader::open(path)?.verify()?;
            Ok(())
        }),
        case("sha2 single-threaded", || sha2_ranges(path, &ranges)),
    ];
    let labels = names_of(&cases);
    let t = measure(ctx.args.runs, cases)?;
    let row = row_from("verify sha256 digests", wl, &labels, &t, true).bytes(w.total());
    let per_core = row.vs_limit().map_or(0.0, |r| r / cores as f64);
    let row = row.note(format!(
        "per core: {per_core:.2}x of sha2 ({cores} cores; the target needs {:.2}x overall); {}",
        0.95 * cores as f64,
        parallel_note(t[0], t[1], cores)
    ));
    rows.push(row.target(">= 0.95x sha2 per core", per_core >= 0.95));
    Ok(())
}
