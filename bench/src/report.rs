//! The results: one `Row` per comparison, printed as a table and written as results.json
//! (an array with one object per row, one row per line; see bench/README.md).

use std::fs;
use std::io;
use std::path::Path;
use std::process::Command;

use serde::{Serialize, Serializer};

use crate::Res;

pub struct Row {
    pub metric: String,
    pub workload: String,
    /// "s", "MiB" or "faults": lower is better for all of them.
    pub unit: &'static str,
    pub ours: f64,
    pub peers: Vec<(String, f64)>,
    pub limit: Option<Limit>,
    /// Bytes processed, for a throughput column.
    pub bytes: Option<u64>,
    pub target: Option<Target>,
    pub note: String,
    /// CPU seconds per wall second while ours ran.
    pub cpu: Option<f64>,
    /// The library pool's size for this row, when the row is one of a scaling series.
    pub threads: Option<usize>,
}

#[derive(Serialize)]
pub struct Limit {
    pub name: String,
    pub value: f64,
}

/// An issue-6 target and whether this run met it.
#[derive(Serialize)]
pub struct Target {
    pub text: String,
    pub met: bool,
}

impl Row {
    pub fn new(metric: &str, workload: &str, unit: &'static str, ours: f64) -> Row {
        Row {
            metric: metric.to_owned(),
            workload: workload.to_owned(),
            unit,
            ours,
            peers: Vec::new(),
            limit: None,
            bytes: None,
            target: None,
            note: String::new(),
            cpu: None,
            threads: None,
        }
    }
    pub fn threads(mut self, n: usize) -> Row {
        self.threads = Some(n);
        self
    }
    pub fn peer(mut self, name: &str, v: f64) -> Row {
        self.peers.push((name.to_owned(), v));
        self
    }
    pub fn limit(mut self, name: &str, v: f64) -> Row {
        self.limit = Some(Limit {
            name: name.to_owned(),
            value: v,
        });
        self
    }
    pub fn bytes(mut self, b: u64) -> Row {
        self.bytes = Some(b);
        self
    }
    pub fn note(mut self, n: impl Into<String>) -> Row {
        self.note = n.into();
        self
    }
    pub fn cpu(mut self, c: f64) -> Row {
        self.cpu = c.is_finite().then_some(c);
        self
    }
    pub fn best_peer(&self) -> Option<&(String, f64)> {
        self.peers.iter().min_by(|a, b| a.1.total_cmp(&b.1))
    }
    /// Best peer's value over ours: above 1 means ours is better (every unit is lower-better).
    pub fn vs_best_peer(&self) -> Option<f64> {
        self.best_peer().and_then(|p| ratio(p.1, self.ours))
    }
    pub fn vs_limit(&self) -> Option<f64> {
        self.limit.as_ref().and_then(|l| ratio(l.value, self.ours))
    }
    pub fn target(mut self, text: &str, met: bool) -> Row {
        self.target = Some(Target {
            text: text.to_owned(),
            met,
        });
        self
    }
}

fn ratio(other: f64, ours: f64) -> Option<f64> {
    (ours > 0.0 && other.is_finite()).then(|| other / ours)
}

/// The run every row belongs to (the `run` object of each row in results.json).
#[derive(Serialize)]
pub struct Env {
    pub quick: bool,
    pub runs: usize,
    pub cores: usize,
    /// The library pool's threads (`--threads`, else one per core).
    pub pool_threads: usize,
    pub loadavg_start: String,
    pub loadavg_end: String,
    /// The library's git revision, `+dirty-src` when its sources have uncommitted changes.
    pub revision: String,
    /// When the run started.
    pub unix_time: u64,
}

pub fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

pub fn revision() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let rev = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty =
        git(&["status", "--porcelain", "--", "src", "Cargo.toml"]).is_some_and(|s| !s.is_empty());
    format!("{rev}{}", if dirty { "+dirty-src" } else { "" })
}

pub fn fmt_val(unit: &str, v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    match unit {
        "s" if v >= 1.0 => format!("{v:.2} s"),
        "s" if v >= 1e-3 => format!("{:.2} ms", v * 1e3),
        "s" => format!("{:.1} us", v * 1e6),
        "MiB" => format!("{v:.1} MiB"),
        "faults" => format!("{v:.0} flt"),
        _ => format!("{v:.3} {unit}"),
    }
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |x| format!("{x:.2}x"))
}

fn print_table(rows: &[Row]) {
    println!();
    println!(
        "{:<34} {:<7} {:>11} {:>9} {:>11} {:>8} {:>11} {:>8}  target",
        "metric", "wl", "ours", "GB/s", "best peer", "vs peer", "limit", "vs lim"
    );
    println!("{}", "-".repeat(123));
    for r in rows {
        let gbs = match (r.unit, r.bytes) {
            ("s", Some(b)) if r.ours > 0.0 => format!("{:.2}", b as f64 / r.ours / 1e9),
            _ => "".into(),
        };
        let target = r.target.as_ref().map_or(String::new(), |t| {
            format!("{} {}", if t.met { "MET    " } else { "NOT MET" }, t.text)
        });
        println!(
            "{:<34} {:<7} {:>11} {:>9} {:>11} {:>8} {:>11} {:>8}  {}",
            r.metric,
            r.workload,
            fmt_val(r.unit, r.ours),
            gbs,
            r.best_peer().map_or("-".into(), |p| fmt_val(r.unit, p.1)),
            fmt_ratio(r.vs_best_peer()),
            r.limit
                .as_ref()
                .map_or("-".into(), |l| fmt_val(r.unit, l.value)),
            fmt_ratio(r.vs_limit()),
            target
        );
        let mut detail = Vec::new();
        if let Some(c) = r.cpu {
            detail.push(format!("ours used {c:.2} CPUs"));
        }
        for (n, v) in &r.peers {
            detail.push(format!("{n} {}", fmt_val(r.unit, *v)));
        }
        if let Some(l) = &r.limit {
            detail.push(format!("limit: {} {}", l.name, fmt_val(r.unit, l.value)));
        }
        if !detail.is_empty() {
            println!("{:>43}{}", "", detail.join(" | "));
        }
        if !r.note.is_empty() {
            println!("{:>43}note: {}", "", r.note);
        }
    }
    println!("{}", "-".repeat(123));
    println!(
        "ratios = other / ours (every unit is lower-is-better), so above 1.00x means ours is ahead."
    );
}

/// Prints the table and the summary line, and writes results.json to `out`.
pub fn finish(rows: &[Row], env: &Env, out: &Path) -> Res<()> {
    print_table(rows);
    let met = rows
        .iter()
        .filter(|r| r.target.as_ref().is_some_and(|t| t.met))
        .count();
    let judged = rows.iter().filter(|r| r.target.is_some()).count();
    println!(
        "targets met: {met} of {judged}; load average {} at start, {} at end; {} cores; revision {}",
        env.loadavg_start, env.loadavg_end, env.cores, env.revision
    );
    fs::write(out, to_json(rows, env)?)?;
    println!("wrote {}", out.display());
    Ok(())
}

/// One row of results.json, in its key order. serde_json writes a non-finite number as null.
#[derive(Serialize)]
struct Record<'a> {
    metric: &'a str,
    workload: &'a str,
    unit: &'a str,
    ours: f64,
    /// An object, in the row's order of the peers.
    #[serde(serialize_with = "in_order")]
    peers: &'a [(String, f64)],
    limit: &'a Option<Limit>,
    ratios: Ratios,
    target: &'a Option<Target>,
    bytes: Option<u64>,
    ours_cpu_per_wall: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    threads: Option<usize>,
    note: &'a str,
    run: &'a Env,
}

#[derive(Serialize)]
struct Ratios {
    vs_best_peer: Option<f64>,
    vs_limit: Option<f64>,
}

fn in_order<S: Serializer>(peers: &&[(String, f64)], s: S) -> Result<S::Ok, S::Error> {
    s.collect_map(peers.iter().map(|(name, v)| (name, v)))
}

/// serde_json's compact layout with a space after every ':' and ',', so that each row of
/// results.json reads as one line.
struct Spaced;

impl serde_json::ser::Formatter for Spaced {
    fn begin_array_value<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        comma(w, first)
    }
    fn begin_object_key<W: ?Sized + io::Write>(
        &mut self,
        w: &mut W,
        first: bool,
    ) -> io::Result<()> {
        comma(w, first)
    }
    fn begin_object_value<W: ?Sized + io::Write>(&mut self, w: &mut W) -> io::Result<()> {
        w.write_all(b": ")
    }
}

fn comma<W: ?Sized + io::Write>(w: &mut W, first: bool) -> io::Result<()> {
    if first { Ok(()) } else { w.write_all(b", ") }
}

/// results.json: an array with one row object per line.
fn to_json(rows: &[Row], env: &Env) -> Res<Vec<u8>> {
    let mut out = b"[\n".to_vec();
    for (k, r) in rows.iter().enumerate() {
        out.extend_from_slice(if k == 0 { b"  " } else { b",\n  " });
        let record = Record {
            metric: &r.metric,
            workload: &r.workload,
            unit: r.unit,
            ours: r.ours,
            peers: &r.peers,
            limit: &r.limit,
            ratios: Ratios {
                vs_best_peer: r.vs_best_peer(),
                vs_limit: r.vs_limit(),
            },
            target: &r.target,
            bytes: r.bytes,
            ours_cpu_per_wall: r.cpu,
            threads: r.threads,
            note: &r.note,
            run: env,
        };
        record.serialize(&mut serde_json::Serializer::with_formatter(
            &mut out, Spaced,
        ))?;
    }
    out.extend_from_slice(if rows.is_empty() { b"]\n" } else { b"\n]\n" });
    Ok(out)
}
