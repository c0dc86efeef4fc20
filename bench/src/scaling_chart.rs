//! The scaling chart (issue 28): for each metric of the scaling section, ours' speed-up
//! over its one-thread limit (limit time / ours) against the pool's threads, on a log2
//! axis, with the ideal (speed-up = threads) dashed. Written by hand as SVG, as the other
//! charts are (`charts.rs`).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::records::{Rec, esc};

const W: f64 = 900.0;
const H: f64 = 420.0;
const LEFT: f64 = 60.0;
const RIGHT: f64 = 330.0;
const TOP: f64 = 50.0;
const BOTTOM: f64 = 50.0;
const COLORS: [&str; 6] = [
    "#2563eb", "#dc2626", "#16a34a", "#9333ea", "#f59e0b", "#0891b2",
];

/// The series: metric (without "scaling: ") and workload -> (threads, speed-up), sorted.
pub fn series(rows: &[Rec]) -> BTreeMap<String, Vec<(usize, f64)>> {
    let mut out: BTreeMap<String, Vec<(usize, f64)>> = BTreeMap::new();
    for r in rows {
        let Some(metric) = r.metric.strip_prefix("scaling: ") else {
            continue;
        };
        let (Some(threads), Some(ours), Some(limit)) =
            (r.threads, r.ours, r.limit.as_ref().and_then(|l| l.value))
        else {
            continue;
        };
        if ours > 0.0 && limit.is_finite() {
            let key = format!("{metric} ({})", r.workload);
            out.entry(key).or_default().push((threads, limit / ours));
        }
    }
    for v in out.values_mut() {
        v.sort_by_key(|p| p.0);
    }
    out
}

/// The chart, or None without scaling rows.
pub fn svg(rows: &[Rec]) -> Option<String> {
    let series = series(rows);
    if series.is_empty() {
        return None;
    }
    let most_threads = series
        .values()
        .flatten()
        .map(|p| p.0)
        .max()
        .unwrap_or(1)
        .max(2);
    let top = series
        .values()
        .flatten()
        .map(|p| p.1)
        .fold(most_threads as f64, f64::max)
        .ceil();
    let (pw, ph) = (W - LEFT - RIGHT, H - TOP - BOTTOM);
    let x = |t: usize| LEFT + pw * (t as f64).log2() / (most_threads as f64).log2();
    let y = |v: f64| TOP + ph * (1.0 - v / top);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{W}" height="{H}" viewBox="0 0 {W} {H}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(s, r#"<rect width="{W}" height="{H}" fill="white"/>"#);
    let cores = rows.iter().find_map(|r| r.run.as_ref().map(|r| r.cores));
    let _ = writeln!(
        s,
        r#"<text x="10" y="20" font-size="14" font-weight="bold">Scaling with the pool's threads: speed-up over the 1-thread limit{}</text>"#,
        cores.map_or(String::new(), |c| format!(" ({c} cores)"))
    );
    // Axes, grid, ticks.
    let mut t = 1;
    while t <= most_threads {
        let _ = writeln!(
            s,
            r##"<line x1="{0:.1}" y1="{TOP}" x2="{0:.1}" y2="{1:.1}" stroke="#e5e7eb"/><text x="{0:.1}" y="{2:.1}" text-anchor="middle">{t}</text>"##,
            x(t),
            TOP + ph,
            TOP + ph + 16.0
        );
        t *= 2;
    }
    let step = (top / 8.0).ceil().max(1.0);
    let mut v = 0.0;
    while v <= top {
        let _ = writeln!(
            s,
            r##"<line x1="{LEFT}" y1="{0:.1}" x2="{1:.1}" y2="{0:.1}" stroke="#e5e7eb"/><text x="{2:.1}" y="{3:.1}" text-anchor="end">{v}x</text>"##,
            y(v),
            LEFT + pw,
            LEFT - 6.0,
            y(v) + 4.0
        );
        v += step;
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">threads in the library's pool</text>"#,
        LEFT + pw / 2.0,
        H - 12.0
    );
    // The ideal: speed-up = threads.
    let _ = writeln!(
        s,
        r##"<line x1="{:.1}" y1="{:.1}" x2="{:.1}" y2="{:.1}" stroke="#9ca3af" stroke-dasharray="5,4"/>"##,
        x(1),
        y(1.0),
        x(most_threads),
        y(most_threads as f64)
    );
    for (k, (name, points)) in series.iter().enumerate() {
        let color = COLORS[k % COLORS.len()];
        let path: Vec<String> = points
            .iter()
            .map(|&(t, v)| format!("{:.1},{:.1}", x(t), y(v)))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2"/>"#,
            path.join(" ")
        );
        for &(t, v) in points {
            let _ = writeln!(
                s,
                r#"<circle cx="{:.1}" cy="{:.1}" r="3" fill="{color}"><title>{t} threads: {v:.2}x</title></circle>"#,
                x(t),
                y(v)
            );
        }
        let ly = TOP + 10.0 + 20.0 * k as f64;
        let last = points.last().map_or(0.0, |p| p.1);
        let _ = writeln!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="12" height="12" fill="{color}"/><text x="{:.1}" y="{:.1}">{} {last:.1}x</text>"#,
            W - RIGHT + 20.0,
            ly - 10.0,
            W - RIGHT + 38.0,
            ly,
            esc(name)
        );
    }
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" fill="#6b7280">dashed: the ideal</text>"##,
        W - RIGHT + 20.0,
        TOP + 10.0 + 20.0 * series.len() as f64
    );
    s.push_str("</svg>\n");
    Some(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rec(metric: &str, threads: usize, ours: f64) -> Rec {
        let json = format!(
            r#"{{"metric": "{metric}", "workload": "W3", "unit": "s", "ours": {ours},
               "limit": {{"name": "one", "value": 8.0}}, "threads": {threads}}}"#
        );
        serde_json::from_str(&json).unwrap()
    }

    #[test]
    fn one_line_per_metric_with_its_speed_ups() {
        let rows = vec![
            rec("scaling: zstd write", 2, 4.0),
            rec("scaling: zstd write", 1, 8.0),
            rec("zstd write", 1, 8.0),
        ];
        let s = series(&rows);
        assert_eq!(s.len(), 1);
        assert_eq!(s["zstd write (W3)"], vec![(1, 1.0), (2, 2.0)]);
        let text = svg(&rows).unwrap();
        assert_eq!(text.matches("<polyline").count(), 1);
        assert!(text.contains("2 threads: 2.00x"));
        assert!(svg(&rows[2..]).is_none());
    }
}
