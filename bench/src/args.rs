//! The command line.

use std::path::PathBuf;

use crate::Res;

pub struct Args {
    pub quick: bool,
    /// Scratch directory for the generated files.
    pub dir: PathBuf,
    /// Runs per case; the median is reported.
    pub runs: usize,
    /// The results file.
    pub out: PathBuf,
    /// The sections to run (all when `None`).
    pub only: Option<Vec<String>>,
    /// Keep the multi-GiB file of the memory cases.
    pub keep: bool,
    /// The library pool's size (0: one thread per core).
    pub threads: usize,
    /// The pool sizes of the scaling section.
    pub scaling: Vec<usize>,
}

fn usage(sections: &[&str]) -> String {
    format!(
        "usage: ztensor-bench [--quick] [--dir DIR] [--runs N] [--out FILE] [--only LIST] [--keep]\n\
         \x20                    [--threads N] [--scaling LIST]\n\
         \n  --quick      scale every workload down ~16x (3 runs)\n\
         \x20 --dir DIR    scratch directory for the data (default bench/data)\n\
         \x20 --runs N     runs per case, the median is reported (default 5, quick 3)\n\
         \x20 --out FILE   results file (default bench/results.json, quick bench/results-quick.json)\n\
         \x20 --only LIST  comma-separated sections: {}\n\
         \x20 --keep       keep the multi-GiB files of the memory cases\n\
         \x20 --threads N  the library's thread pool: N threads (default 0: one per core)\n\
         \x20 --scaling LIST  pool sizes of the scaling section (default: 1,2,4,8,16 up to the cores)",
        sections.join(",")
    )
}

/// Parses the arguments after the program name; `sections`: the names `--only` accepts.
pub fn parse_args(argv: &[String], sections: &[&str]) -> Res<Args> {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut quick = false;
    let mut dir = None;
    let mut runs = None;
    let mut out = None;
    let mut only = None;
    let mut keep = false;
    let mut threads = 0usize;
    let mut scaling = None;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value\n{}", usage(sections)))
        };
        match a.as_str() {
            "--quick" => quick = true,
            "--dir" => dir = Some(PathBuf::from(value("--dir")?)),
            "--runs" => runs = Some(value("--runs")?.parse::<usize>()?.max(1)),
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--only" => {
                let list: Vec<String> = value("--only")?
                    .split(',')
                    .map(|s| s.trim().to_owned())
                    .collect();
                for s in &list {
                    if !sections.contains(&s.as_str()) {
                        return Err(format!("unknown section '{s}'\n{}", usage(sections)).into());
                    }
                }
                only = Some(list);
            }
            "--keep" => keep = true,
            "--threads" => threads = value("--threads")?.parse()?,
            "--scaling" => {
                let list = value("--scaling")?
                    .split(',')
                    .map(|s| s.trim().parse::<usize>().map(|n| n.max(1)))
                    .collect::<Result<Vec<_>, _>>()?;
                scaling = Some(list);
            }
            "-h" | "--help" => {
                println!("{}", usage(sections));
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument '{other}'\n{}", usage(sections)).into()),
        }
    }
    Ok(Args {
        quick,
        dir: dir.unwrap_or_else(|| here.join("data")),
        runs: runs.unwrap_or(if quick { 3 } else { 5 }),
        out: out.unwrap_or_else(|| {
            here.join(if quick {
                "results-quick.json"
            } else {
                "results.json"
            })
        }),
        only,
        keep,
        threads,
        scaling: scaling.unwrap_or_else(default_scaling),
    })
}

/// 1, 2, 4, 8, 16 up to the CPUs this process may use (and those CPUs when between).
fn default_scaling() -> Vec<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let mut list: Vec<usize> = [1, 2, 4, 8, 16]
        .into_iter()
        .filter(|&n| n <= cores)
        .collect();
    if cores < 16 && !list.contains(&cores) {
        list.push(cores);
    }
    list
}

impl Args {
    pub fn wants(&self, section: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|l| l.iter().any(|s| s == section))
    }
}
