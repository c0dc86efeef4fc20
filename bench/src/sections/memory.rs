//! (8) memory, each case in a child process (`__child`, see child.rs): peak RSS of a streaming
//! write of one big component, raw and zstd-3; RSS beyond the buffer of `read_into` of the zstd
//! component, with mmap and with pread.

use std::collections::HashMap;
use std::fs;
use std::path::Path;
use std::process::Command;

use super::{Ctx, Runs, Section};
use crate::report::Row;
use crate::{MIB, Res};

pub const SECTION: Section = Section {
    name: "memory",
    runs: Runs::Alone(run),
};

/// The budget of the memory targets.
const RSS_BUDGET_MIB: f64 = 64.0;

/// Runs `__child ARGS` and returns the key=value pairs of its `RESULT` line.
pub fn run_child(args: &[&str]) -> Res<HashMap<String, f64>> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe).arg("__child").args(args).output()?;
    if !out.status.success() {
        return Err(format!(
            "child {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .ok_or("child printed no RESULT line")?;
    let mut m = HashMap::new();
    for kv in line["RESULT ".len()..].split_whitespace() {
        if let Some((k, v)) = kv.split_once('=') {
            m.insert(k.to_owned(), v.parse::<f64>()?);
        }
    }
    Ok(m)
}

fn path_str(p: &Path) -> Res<&str> {
    Ok(p.to_str().ok_or("path")?)
}

fn run(ctx: &Ctx, rows: &mut Vec<Row>) -> Res<()> {
    let a = ctx.args;
    let size: u64 = if a.quick { 256 << 20 } else { 4 << 30 };
    let raw_path = a.dir.join("mem.raw.zt");
    let zstd_path = a.dir.join("mem.zstd.zt");
    let size_s = size.to_string();
    let label = if a.quick { "256 MiB" } else { "4 GiB" };

    eprintln!("memory: streaming raw write of {label}");
    let raw = run_child(&["stream-write", "raw", path_str(&raw_path)?, &size_s])?;
    let _ = fs::remove_file(&raw_path);
    eprintln!("memory: streaming zstd write of {label}");
    let z = run_child(&["stream-write", "zstd", path_str(&zstd_path)?, &size_s])?;
    eprintln!("memory: zstd read of {label} into a caller buffer (mmap, then pread)");
    let rd_mmap = run_child(&["zstd-read", path_str(&zstd_path)?, "mmap"])?;
    let rd_pread = run_child(&["zstd-read", path_str(&zstd_path)?, "pread"])?;
    if !a.keep {
        let _ = fs::remove_file(&zstd_path);
    }
    for (kind, m) in [("raw", &raw), ("zstd-3", &z)] {
        rows.push(write_row(label, kind, m));
    }
    for (mode, rd) in [("mmap", &rd_mmap), ("pread", &rd_pread)] {
        rows.push(read_row(label, mode, rd));
    }
    Ok(())
}

fn write_row(label: &str, kind: &str, m: &HashMap<String, f64>) -> Row {
    let peak = m["hwm_kib"] / 1024.0;
    let row = Row::new(
        &format!("peak RSS: stream {kind} write"),
        label,
        "MiB",
        peak,
    )
    .limit("budget", RSS_BUDGET_MIB)
    .cpu(m["cpu"])
    .note(format!(
        "VmHWM of the whole process; before writing {:.1} MiB; {:.2} s, {:.0} MiB stored",
        m["hwm_before_kib"] / 1024.0,
        m["secs"],
        m["stored"] / MIB
    ));
    let met = peak < RSS_BUDGET_MIB;
    row.target("< 64 MiB peak RSS", met)
}

fn read_row(label: &str, mode: &str, rd: &HashMap<String, f64>) -> Row {
    let extra = rd["extra_kib"] / 1024.0;
    let row = Row::new(
        &format!("RSS beyond buf: zstd read ({mode})"),
        label,
        "MiB",
        extra,
    )
    .limit("budget", RSS_BUDGET_MIB)
    .cpu(rd["cpu"])
    .note(format!(
        "VmHWM after minus VmRSS with the buffer resident; sampled peaks over that baseline: \
         anonymous {:.1} MiB, file-backed (mapped stored bytes) {:.1} MiB; stored {:.0} MiB; {:.2} s",
        rd["anon_peak_kib"] / 1024.0,
        rd["file_peak_kib"] / 1024.0,
        rd["stored"] / MIB,
        rd["secs"]
    ));
    let met = extra < RSS_BUDGET_MIB;
    row.target("< 64 MiB beyond the buffer", met)
}
