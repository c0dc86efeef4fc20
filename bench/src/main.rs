//! ztensor benchmark (issue 6): ours against the peers and the machine's limits, side by side
//! in one run on the same data.
//!
//! Run: `cargo run --release --manifest-path bench/Cargo.toml -- [--quick] [--dir DIR]`
//! (see bench/README.md). Prints a table and writes bench/results.json (bench/results-quick.json
//! with --quick), and after a full run the charts in docs/bench/ (`-- charts` redraws them
//! from results.json alone).
//!
//! Peers: the reference crate `ztensor` 1.2.3 (its own .zt files, and its GGUF reader on GGUF
//! files written here), and the `safetensors` crate. Limits: `read()` of a whole file into one
//! buffer, `write()` of the same bytes, the `zstd` crate single-threaded, `sha2` single-threaded.
//!
//! A section is one module of `sections/`; adding one is that module plus a line in
//! `SECTIONS` below.

mod args;
mod charts;
mod child;
mod counts;
mod datagen;
mod files;
mod formats;
mod harness;
mod records;
mod report;
mod scaling_chart;
mod sections;
mod workloads;

use std::fs;

use files::{files_for, warm};
use report::{Env, loadavg, revision};
use sections::{Ctx, Section};

type Res<T> = Result<T, Box<dyn std::error::Error>>;

const MIB: f64 = 1024.0 * 1024.0;

/// Every section, in the order in which they run on a workload (and their rows appear).
const SECTIONS: &[Section] = &[
    sections::list::SECTION,
    sections::v2::SECTION,
    sections::shards::SECTION,
    sections::views::SECTION,
    sections::load::SECTION,
    sections::batch::SECTION,
    sections::host_cold::SECTION,
    sections::zstd::SECTION,
    sections::range::SECTION,
    sections::seek::SECTION,
    sections::write::SECTION,
    sections::verify::SECTION,
    sections::memory::SECTION,
    sections::dequant::SECTION,
    sections::attrs::SECTION,
    sections::remote::SECTION,
    sections::scaling::SECTION,
];

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("__child") {
        let code = match child::main(&argv[2..]) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("child {:?}: {e}", &argv[2..]);
                1
            }
        };
        std::process::exit(code);
    }
    if argv.get(1).map(String::as_str) == Some("charts") {
        if let Err(e) = charts::main(&argv[2..]) {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
        return;
    }
    let names: Vec<&str> = SECTIONS.iter().map(|s| s.name).collect();
    let result = args::parse_args(&argv[1..], &names).and_then(|a| run(&a));
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

fn run(a: &args::Args) -> Res<()> {
    fs::create_dir_all(&a.dir)?;
    // The library's pool: --threads, else one thread per core.
    ztensor::pool::set_threads(a.threads)?;
    let loadavg_start = loadavg();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    eprintln!(
        "ztensor bench: {} mode, {} runs per case (median), {} cores, a pool of {} threads, load average {}, data in {}",
        if a.quick { "quick" } else { "full" },
        a.runs,
        cores,
        ztensor::pool::threads(),
        loadavg_start,
        a.dir.display()
    );
    let unix_time = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let ctx = Ctx { args: a, cores };
    let wanted: Vec<&Section> = SECTIONS.iter().filter(|s| a.wants(s.name)).collect();
    let mut rows = Vec::new();
    // Each workload that a wanted section measures: generated, its files made and warmed, then
    // measured by those sections.
    for (id, generate) in workloads::ALL {
        let on_it: Vec<_> = wanted.iter().filter_map(|s| s.on(id)).collect();
        if on_it.is_empty() {
            continue;
        }
        eprintln!("{id}: generating");
        let w = generate(a.quick);
        let f = files_for(&w, &a.dir, a.quick)?;
        for p in f.all() {
            warm(p)?;
        }
        for section in on_it {
            section(&ctx, &w, &f, &mut rows)?;
        }
    }
    for section in wanted.iter().filter_map(|s| s.alone()) {
        section(&ctx, &mut rows)?;
    }
    let env = Env {
        quick: a.quick,
        runs: a.runs,
        cores,
        pool_threads: ztensor::pool::threads(),
        loadavg_start,
        loadavg_end: loadavg(),
        revision: revision(),
        unix_time,
    };
    report::finish(&rows, &env, &a.out)?;
    // A full run of every section redraws the charts the README shows.
    if !a.quick && a.only.is_none() {
        let written = charts::write_all(&charts::read(&a.out)?, &charts::default_dir())?;
        println!("wrote {} chart files into docs/bench/", written.len());
    }
    Ok(())
}
