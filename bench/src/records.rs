//! The rows of results.json as the charts read them back, and the text escaping of the
//! SVG they are drawn in (shared by `charts` and `scaling_chart`).

use serde::Deserialize;

/// A row of results.json: the fields a chart shows.
#[derive(Deserialize, Clone, Debug)]
pub struct Rec {
    pub metric: String,
    pub workload: String,
    pub unit: String,
    pub ours: Option<f64>,
    #[serde(default)]
    pub peers: serde_json::Map<String, serde_json::Value>,
    pub limit: Option<RecLimit>,
    #[serde(default)]
    pub target: Option<RecTarget>,
    #[serde(default)]
    pub run: Option<RecRun>,
    /// The pool's size, for a row of the scaling section.
    #[serde(default)]
    pub threads: Option<usize>,
}

#[derive(Deserialize, Clone, Debug)]
pub struct RecLimit {
    pub name: String,
    pub value: Option<f64>,
}

#[derive(Deserialize, Clone, Debug)]
pub struct RecTarget {
    pub text: String,
    pub met: bool,
}

#[derive(Deserialize, Clone, Debug)]
pub struct RecRun {
    pub quick: bool,
    pub revision: String,
    #[serde(default)]
    pub cores: usize,
}

/// Text for SVG: the five characters XML reserves, escaped.
pub fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for ch in s.chars() {
        match ch {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(ch),
        }
    }
    out
}
