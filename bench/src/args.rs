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
}

fn usage(sections: &[&str]) -> String {
    format!(
        "usage: ztensor-bench [--quick] [--dir DIR] [--runs N] [--out FILE] [--only LIST] [--keep]\n\
         \n  --quick      scale every workload down ~16x (3 runs)\n\
         \x20 --dir DIR    scratch directory for the data (default bench/data)\n\
         \x20 --runs N     runs per case, the median is reported (default 5, quick 3)\n\
         \x20 --out FILE   results file (default bench/results.json, quick bench/results-quick.json)\n\
         \x20 --only LIST  comma-separated sections: {}\n\
         \x20 --keep       keep the multi-GiB files of the memory cases",
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
    })
}

impl Args {
    pub fn wants(&self, section: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|l| l.iter().any(|s| s == section))
    }
}
