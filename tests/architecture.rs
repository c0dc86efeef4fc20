//! The layering of docs/architecture.md, checked: every `crate::<module>` a file of the
//! library names must be in its own layer or one below, so no import circle can come
//! back. Unit tests (`mod tests`) and the CLI (which uses the public API) are exempt.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The library's top-level modules, bottom to top.
const LAYERS: &[&[&str]] = &[
    &[
        "error", "limits", "dtype", "buffer", "cbor", "json", "typed",
    ],
    &["pool"],
    &["quant", "convert"],
    &["codec"],
    &["source"],
    &["model"],
    &["decode"],
    &["formats"],
    &["verify"],
    &["reader"],
    &["batch", "load"],
    &["writer"],
    &["ffi"],
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// The text of a source file without its unit tests.
fn without_tests(text: &str) -> &str {
    match text.find("#[cfg(test)]\nmod tests") {
        Some(i) => &text[..i],
        None => text,
    }
}

/// Every module named as `crate::name` or inside `crate::{a, b::c}`.
fn crate_references(text: &str) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find("};").unwrap_or(group.len());
            for item in group[..end].split(',') {
                let head = item.trim().split("::").next().unwrap_or("");
                let head = head.trim_matches(|c: char| c == '{' || c.is_whitespace());
                if head.starts_with(|c: char| c.is_ascii_lowercase()) {
                    names.insert(head.to_owned());
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_')
                .collect();
            if !name.is_empty() && rest[name.len()..].starts_with("::") {
                names.insert(name);
            }
        }
    }
    names
}

fn walk(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            walk(&path, files);
        } else if path.extension().is_some_and(|e| e == "rs") {
            files.push(path);
        }
    }
}

#[test]
fn imports_point_down_the_layers() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    walk(&src, &mut files);
    let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut wrong = Vec::new();
    for path in files {
        let rel = path.strip_prefix(&src).unwrap();
        let top = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_str()
            .unwrap();
        let top = top.trim_end_matches(".rs").to_owned();
        if top == "bin" || top == "lib" {
            continue;
        }
        let from = layer_of(&top)
            .unwrap_or_else(|| panic!("src/{top} is in no layer of tests/architecture.rs"));
        let text = std::fs::read_to_string(&path).unwrap();
        for name in crate_references(without_tests(&text)) {
            if name == top {
                continue;
            }
            let to = layer_of(&name)
                .unwrap_or_else(|| panic!("{} names crate::{name}, in no layer", rel.display()));
            if to > from {
                wrong.push(format!("{} ({top}) imports {name}", rel.display()));
            }
            edges.entry(top.clone()).or_default().insert(name);
        }
    }
    assert!(wrong.is_empty(), "imports pointing up: {wrong:#?}");
    // Within a layer, no two modules may name each other (directly or through others).
    for (from, targets) in &edges {
        let mut seen = BTreeSet::new();
        let mut todo: Vec<&String> = targets.iter().collect();
        while let Some(m) = todo.pop() {
            assert_ne!(m, from, "an import circle through {from}");
            if seen.insert(m.clone())
                && let Some(next) = edges.get(m)
            {
                todo.extend(next);
            }
        }
    }
}

#[test]
fn references_are_found() {
    let text = "use crate::codec::{a, b};\nuse crate::{model::X, source::Source};\n\
                let x = crate::buffer::zeroed(1); crate::Error::new();";
    let found: Vec<String> = crate_references(text).into_iter().collect();
    assert_eq!(found, ["buffer", "codec", "model", "source"]);
}
