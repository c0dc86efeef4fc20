//! SVG bar charts of results.json (issue 19): one chart per row (ours, each peer and the
//! limit, one bar each) and an overview of every row's ratios, written as SVG text by hand
//! (no plotting dependency) into `docs/bench/`, with an index page listing them.
//!
//! `ztensor-bench charts [--in FILE] [--dir DIR]` (defaults: bench/results.json,
//! docs/bench/); a full run writes them too, from the results it just wrote.

use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

use crate::Res;
use crate::records::{Rec, esc};
use crate::report::fmt_val;

/// One bar: who, value, kind.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Ours,
    Peer,
    Limit,
}

const OURS: &str = "#2563eb";
const PEER: &str = "#9ca3af";
const LIMIT: &str = "#f59e0b";

const WIDTH: f64 = 760.0;
/// Where bars start (labels to the left of it), and their longest length.
const LEFT: f64 = 300.0;
const BAR_MAX: f64 = 330.0;
const BAR: f64 = 18.0;
const GAP: f64 = 6.0;
const TOP: f64 = 52.0;

/// A number for an SVG attribute: at most 1 decimal, no trailing ".0".
fn n(v: f64) -> String {
    let r = (v * 10.0).round() / 10.0;
    if r == r.trunc() {
        format!("{}", r as i64)
    } else {
        format!("{r:.1}")
    }
}

/// The bars of a row: ours, the peers (fastest first), the limit; values that are not
/// finite are left out.
fn bars(r: &Rec) -> Vec<(String, f64, Kind)> {
    let mut out = Vec::new();
    if let Some(v) = r.ours.filter(|v| v.is_finite()) {
        out.push(("ours".to_owned(), v, Kind::Ours));
    }
    let mut peers: Vec<(String, f64)> = r
        .peers
        .iter()
        .filter_map(|(k, v)| v.as_f64().filter(|v| v.is_finite()).map(|v| (k.clone(), v)))
        .collect();
    peers.sort_by(|a, b| a.1.total_cmp(&b.1));
    out.extend(peers.into_iter().map(|(k, v)| (k, v, Kind::Peer)));
    if let Some(l) = &r.limit
        && let Some(v) = l.value.filter(|v| v.is_finite())
    {
        out.push((format!("limit: {}", l.name), v, Kind::Limit));
    }
    out
}

/// Best peer / ours and limit / ours (above 1: ours is ahead; every unit is lower-better).
fn ratios(r: &Rec) -> (Option<f64>, Option<f64>) {
    let ours = r.ours.filter(|v| v.is_finite() && *v > 0.0);
    let best = bars(r)
        .into_iter()
        .filter(|b| b.2 == Kind::Peer)
        .map(|b| b.1)
        .reduce(f64::min);
    let limit = r.limit.as_ref().and_then(|l| l.value);
    let div = |o: Option<f64>| ours.and_then(|u| o.filter(|v| v.is_finite()).map(|v| v / u));
    (div(best), div(limit))
}

fn ratio_text(r: &Rec) -> String {
    let (peer, limit) = ratios(r);
    let mut parts = Vec::new();
    if let Some(p) = peer {
        parts.push(format!("{p:.2}x the best peer"));
    }
    if let Some(l) = limit {
        parts.push(format!("{l:.2}x the limit"));
    }
    let mut s = if parts.is_empty() {
        "lower is better".to_owned()
    } else {
        format!("lower is better; ours is {}", parts.join(", "))
    };
    if let Some(t) = &r.target {
        let _ = write!(
            s,
            " (target {}: {})",
            t.text,
            if t.met { "met" } else { "not met" }
        );
    }
    s
}

/// The start of a chart `height` high: the SVG element, a white background, the title.
fn svg_start(height: f64, title: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#,
        w = n(WIDTH),
        h = n(height)
    );
    let _ = writeln!(
        s,
        r#"<rect width="{}" height="{}" fill="white"/>"#,
        n(WIDTH),
        n(height)
    );
    let _ = writeln!(
        s,
        r#"<text x="10" y="20" font-size="14" font-weight="bold">{}</text>"#,
        esc(title)
    );
    s
}

/// The chart of one row: a horizontal bar per contender, lengths proportional to the value.
pub fn row_svg(r: &Rec) -> String {
    let bars = bars(r);
    let max = bars.iter().map(|b| b.1).fold(0.0f64, f64::max);
    let height = TOP + bars.len() as f64 * (BAR + GAP) + 26.0;
    let mut s = svg_start(height, &format!("{} ({})", r.metric, r.workload));
    let _ = writeln!(
        s,
        r##"<text x="10" y="38" fill="#4b5563">{}</text>"##,
        esc(&ratio_text(r))
    );
    for (i, (label, v, kind)) in bars.iter().enumerate() {
        let y = TOP + i as f64 * (BAR + GAP);
        let len = if max > 0.0 { v / max * BAR_MAX } else { 0.0 };
        let (fill, weight) = match kind {
            Kind::Ours => (OURS, r#" font-weight="bold""#),
            Kind::Peer => (PEER, ""),
            Kind::Limit => (LIMIT, ""),
        };
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end"{weight}>{}</text>"#,
            n(LEFT - 8.0),
            n(y + 13.0),
            esc(label)
        );
        let _ = writeln!(
            s,
            r#"<rect x="{}" y="{}" width="{}" height="{}" fill="{fill}"/>"#,
            n(LEFT),
            n(y),
            n(len),
            n(BAR)
        );
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}">{}</text>"#,
            n(LEFT + len + 6.0),
            n(y + 13.0),
            esc(&fmt_val(&r.unit, *v))
        );
    }
    if let Some(run) = &r.run {
        let _ = writeln!(
            s,
            r##"<text x="10" y="{}" font-size="10" fill="#6b7280">revision {}{}</text>"##,
            n(height - 8.0),
            esc(&run.revision),
            if run.quick { ", quick run" } else { "" }
        );
    }
    s.push_str("</svg>\n");
    s
}

/// Ratios are drawn up to this (longer bars are cut, their labels say the value).
const OVERVIEW_CAP: f64 = 4.0;

/// Every row with a ratio: ours against the best peer (blue) and the limit (orange), a line
/// at 1x (even; right of it ours is ahead).
pub fn overview_svg(rows: &[Rec]) -> String {
    let rows: Vec<(&Rec, Option<f64>, Option<f64>)> = rows
        .iter()
        .filter(|r| r.threads.is_none())
        .map(|r| {
            let (p, l) = ratios(r);
            (r, p, l)
        })
        .filter(|(_, p, l)| p.is_some() || l.is_some())
        .collect();
    let per_row = 2.0 * 12.0 + 10.0;
    let height = TOP + rows.len() as f64 * per_row + 30.0;
    let scale = BAR_MAX / OVERVIEW_CAP;
    let mut s = svg_start(height, "ztensor against the best peer and the limit");
    let _ = writeln!(
        s,
        r##"<text x="10" y="38" fill="#4b5563">other / ours: right of the 1x line ours is ahead; <tspan fill="{OURS}">vs best peer</tspan>, <tspan fill="{LIMIT}">vs limit</tspan></text>"##
    );
    for (i, (r, p, l)) in rows.iter().enumerate() {
        let y = TOP + i as f64 * per_row;
        let _ = writeln!(
            s,
            r#"<text x="{}" y="{}" text-anchor="end">{} ({})</text>"#,
            n(LEFT - 8.0),
            n(y + 17.0),
            esc(&r.metric),
            esc(&r.workload)
        );
        for (k, (ratio, fill)) in [(p, OURS), (l, LIMIT)].into_iter().enumerate() {
            let Some(v) = ratio else { continue };
            let by = y + k as f64 * 12.0;
            let len = v.clamp(0.0, OVERVIEW_CAP) * scale;
            let _ = writeln!(
                s,
                r#"<rect x="{}" y="{}" width="{}" height="11" fill="{fill}"/>"#,
                n(LEFT),
                n(by),
                n(len)
            );
            let _ = writeln!(
                s,
                r#"<text x="{}" y="{}" font-size="10">{v:.2}x</text>"#,
                n(LEFT + len + 4.0),
                n(by + 9.0)
            );
        }
    }
    let even = LEFT + scale;
    let bottom = TOP + rows.len() as f64 * per_row;
    let _ = writeln!(
        s,
        r##"<line x1="{x}" y1="{}" x2="{x}" y2="{}" stroke="#111827" stroke-dasharray="4 3"/>"##,
        n(TOP - 4.0),
        n(bottom),
        x = n(even)
    );
    let _ = writeln!(
        s,
        r#"<text x="{}" y="{}" text-anchor="middle" font-size="10">1x</text>"#,
        n(even),
        n(bottom + 12.0)
    );
    s.push_str("</svg>\n");
    s
}

/// The file name of a row's chart: metric and workload in lower case, other characters
/// folded into single dashes ("open + list", "W2" -> "open-list-w2.svg").
pub fn file_name(r: &Rec) -> String {
    let mut out = String::new();
    for ch in format!("{} {}", r.metric, r.workload).chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    let trimmed = out.trim_end_matches('-');
    format!("{trimmed}.svg")
}

/// Writes `overview.svg`, one chart per row that has anything to compare, and `README.md`
/// listing them, into `dir`; returns the files written.
pub fn write_all(rows: &[Rec], dir: &Path) -> Res<Vec<PathBuf>> {
    fs::create_dir_all(dir)?;
    // Charts of rows that are gone (a renamed metric) would linger: the directory holds
    // only what this writes, so every SVG in it is redrawn or removed.
    for e in fs::read_dir(dir)? {
        let path = e?.path();
        if path.extension().is_some_and(|x| x == "svg") {
            fs::remove_file(&path)?;
        }
    }
    let mut written = Vec::new();
    let mut index = String::from(
        "# Benchmark charts\n\nMade from `bench/results.json` by \
         `cargo run --release --manifest-path bench/Cargo.toml -- charts` (a full run writes \
         them too); see `bench/README.md` for what each row measures. Every unit is \
         lower-is-better: the shortest bar wins.\n\n![overview](overview.svg)\n\n",
    );
    let overview = dir.join("overview.svg");
    fs::write(&overview, overview_svg(rows))?;
    written.push(overview);
    if let Some(svg) = crate::scaling_chart::svg(rows) {
        let path = dir.join("scaling.svg");
        fs::write(&path, svg)?;
        index.push_str("![scaling with the threads](scaling.svg)\n\n");
        written.push(path);
    }
    for r in rows {
        // A scaling row is a point of scaling.svg.
        if bars(r).len() < 2 || r.threads.is_some() {
            continue;
        }
        let name = file_name(r);
        let path = dir.join(&name);
        fs::write(&path, row_svg(r))?;
        let _ = writeln!(index, "![{} ({})]({name})\n", r.metric, r.workload);
        written.push(path);
    }
    let readme = dir.join("README.md");
    fs::write(&readme, index)?;
    written.push(readme);
    Ok(written)
}

/// Reads a results file.
pub fn read(path: &Path) -> Res<Vec<Rec>> {
    let text = fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(serde_json::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?)
}

/// The default chart directory: docs/bench/ of the repository.
pub fn default_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/bench")
}

/// `ztensor-bench charts [--in FILE] [--dir DIR]`.
pub fn main(args: &[String]) -> Res<()> {
    let mut input = Path::new(env!("CARGO_MANIFEST_DIR")).join("results.json");
    let mut dir = default_dir();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let value = it.next().ok_or_else(|| format!("{a} needs a value"));
        match a.as_str() {
            "--in" => input = PathBuf::from(value?),
            "--dir" => dir = PathBuf::from(value?),
            other => return Err(format!("charts: unknown option {other}").into()),
        }
    }
    let rows = read(&input)?;
    let written = write_all(&rows, &dir)?;
    eprintln!(
        "charts: {} files from {} into {}",
        written.len(),
        input.display(),
        dir.display()
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny() -> Rec {
        serde_json::from_str(
            r#"{"metric": "open & list", "workload": "W2", "unit": "s", "ours": 0.002,
                "peers": {"peer <b>": 0.004}, "limit": {"name": "read()", "value": 0.001},
                "target": {"text": ">= 2x", "met": true},
                "run": {"quick": false, "revision": "abc1234"}}"#,
        )
        .unwrap()
    }

    #[test]
    fn a_row_chart_has_one_bar_per_contender() {
        let expected = r##"<svg xmlns="http://www.w3.org/2000/svg" width="760" height="150" viewBox="0 0 760 150" font-family="sans-serif" font-size="12">
<rect width="760" height="150" fill="white"/>
<text x="10" y="20" font-size="14" font-weight="bold">open &amp; list (W2)</text>
<text x="10" y="38" fill="#4b5563">lower is better; ours is 2.00x the best peer, 0.50x the limit (target &gt;= 2x: met)</text>
<text x="292" y="65" text-anchor="end" font-weight="bold">ours</text>
<rect x="300" y="52" width="165" height="18" fill="#2563eb"/>
<text x="471" y="65">2.00 ms</text>
<text x="292" y="89" text-anchor="end">peer &lt;b&gt;</text>
<rect x="300" y="76" width="330" height="18" fill="#9ca3af"/>
<text x="636" y="89">4.00 ms</text>
<text x="292" y="113" text-anchor="end">limit: read()</text>
<rect x="300" y="100" width="82.5" height="18" fill="#f59e0b"/>
<text x="388.5" y="113">1.00 ms</text>
<text x="10" y="142" font-size="10" fill="#6b7280">revision abc1234</text>
</svg>
"##;
        assert_eq!(row_svg(&tiny()), expected);
    }

    #[test]
    fn the_overview_has_a_bar_per_ratio_and_the_even_line() {
        let mut no_limit = tiny();
        no_limit.limit = None;
        no_limit.ours = Some(0.016);
        let mut nothing = tiny();
        nothing.peers.clear();
        nothing.limit = None;
        let svg = overview_svg(&[tiny(), no_limit, nothing]);
        let lines: Vec<&str> = svg.lines().collect();
        // Header (svg, background, title, legend), then per row a label and per ratio a bar
        // and its value, then the 1x line, its label and the end: the row without a
        // comparison is left out.
        assert_eq!(lines.len(), 4 + (1 + 4) + (1 + 2) + 3);
        assert_eq!(
            lines[4],
            r#"<text x="292" y="69" text-anchor="end">open &amp; list (W2)</text>"#
        );
        assert_eq!(
            lines[5],
            r##"<rect x="300" y="52" width="165" height="11" fill="#2563eb"/>"##
        );
        assert_eq!(
            lines[6],
            r#"<text x="469" y="61" font-size="10">2.00x</text>"#
        );
        assert_eq!(
            lines[7],
            r##"<rect x="300" y="64" width="41.3" height="11" fill="#f59e0b"/>"##
        );
        assert_eq!(
            lines[8],
            r#"<text x="345.3" y="73" font-size="10">0.50x</text>"#
        );
        // 0.004 / 0.016 = 0.25x.
        assert_eq!(
            lines[10],
            r##"<rect x="300" y="86" width="20.6" height="11" fill="#2563eb"/>"##
        );
        assert_eq!(
            lines[12],
            r##"<line x1="382.5" y1="48" x2="382.5" y2="120" stroke="#111827" stroke-dasharray="4 3"/>"##
        );
        assert_eq!(lines[14], "</svg>");
    }

    #[test]
    fn file_names_and_what_gets_a_chart() {
        assert_eq!(file_name(&tiny()), "open-list-w2.svg");
        let mut r = tiny();
        r.metric = "raw write (ours non-durable)".into();
        r.workload = "W1".into();
        assert_eq!(file_name(&r), "raw-write-ours-non-durable-w1.svg");
        let dir = std::env::temp_dir().join(format!("zt-charts-{}", std::process::id()));
        fs::create_dir_all(&dir).unwrap();
        fs::write(dir.join("stale.svg"), "<svg/>").unwrap();
        fs::write(dir.join("keep.txt"), "").unwrap();
        let mut alone = tiny();
        alone.peers.clear();
        alone.limit = None;
        let written = write_all(&[tiny(), alone], &dir).unwrap();
        let names: Vec<String> = written
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["overview.svg", "open-list-w2.svg", "README.md"]);
        assert!(!dir.join("stale.svg").exists());
        assert!(dir.join("keep.txt").exists());
        let index = fs::read_to_string(dir.join("README.md")).unwrap();
        assert!(
            index.ends_with(
                "![overview](overview.svg)\n\n![open & list (W2)](open-list-w2.svg)\n\n"
            )
        );
        fs::remove_dir_all(&dir).unwrap();
    }
}
