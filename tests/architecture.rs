//! The layering of docs/architecture.md, checked: every `crate::<module>` a file of the
//! library names must be in its own layer or one below, so no import circle can come
//! back. Unit tests (`mod tests`) and the CLI (which uses the public API) are exempt.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The library's top-level modules, bottom to top.
const LAYERS: &[&[&str]] = &[
    &["error", "limits", "dtype", "buffer", "value"],
    &["pool"],
    &["quant", "convert"],
    &["codec"],
    &["source"],
    &["model"],
    &["decode"],
    &["formats"],
    &["sets"],
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

/// What `src/lib.rs` re-exports at the crate root (`pub use module::...::Name;`): each
/// name, to the module it comes from, so `crate::Error` counts as naming `error`.
fn root_reexports(lib: &str) -> BTreeMap<String, String> {
    let mut names = BTreeMap::new();
    for statement in lib.split(';') {
        let Some(path) = statement.trim().strip_prefix("pub use ") else {
            continue;
        };
        let Some((module, rest)) = path.split_once("::") else {
            continue;
        };
        // The last identifier of each item (`a::B`, `{C, D}`) is the exported name.
        for item in rest.split(',') {
            let name = item
                .rsplit("::")
                .next()
                .unwrap_or("")
                .trim_matches(|c: char| c == '{' || c == '}' || c.is_whitespace());
            if !name.is_empty() {
                names.insert(name.to_owned(), module.trim().to_owned());
            }
        }
    }
    names
}

/// Every module named as `crate::name`, inside `crate::{a, b::c}`, or through a name
/// the crate root re-exports (`crate::Error`, `crate::{Result, bail}`).
fn crate_references(text: &str, reexports: &BTreeMap<String, String>) -> BTreeSet<String> {
    let mut names = BTreeSet::new();
    let mut rest = text;
    while let Some(i) = rest.find("crate::") {
        rest = &rest[i + "crate::".len()..];
        if let Some(group) = rest.strip_prefix('{') {
            let end = group.find("};").unwrap_or(group.len());
            for item in group[..end].split(',') {
                let head = item.trim().split("::").next().unwrap_or("");
                let head = head.trim_matches(|c: char| c == '{' || c.is_whitespace());
                if let Some(module) = reexports.get(head) {
                    names.insert(module.clone());
                } else if head.starts_with(|c: char| c.is_ascii_lowercase()) {
                    names.insert(head.to_owned());
                }
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if let Some(module) = reexports.get(&name) {
                names.insert(module.clone());
            } else if name.starts_with(|c: char| c.is_ascii_lowercase())
                && rest[name.len()..].starts_with("::")
            {
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
    let reexports = root_reexports(&std::fs::read_to_string(src.join("lib.rs")).unwrap());
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
        // Unit tests kept in a file of their own (`mod tests;`) are exempt as inline ones are.
        if top == "bin" || top == "lib" || path.file_name().is_some_and(|n| n == "tests.rs") {
            continue;
        }
        let from = layer_of(&top)
            .unwrap_or_else(|| panic!("src/{top} is in no layer of tests/architecture.rs"));
        let text = std::fs::read_to_string(&path).unwrap();
        for name in crate_references(without_tests(&text), &reexports) {
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
    let reexports = root_reexports(
        "pub use error::{Error, ErrorKind, Result};\npub use reader::Reader;\n\
         pub use codec::{\n    FrameIndex, hex_lower,\n};\nmod x;",
    );
    assert_eq!(reexports["Error"], "error");
    assert_eq!(reexports["hex_lower"], "codec");
    assert_eq!(reexports.len(), 6);
    let text = "use crate::codec::{a, b};\nuse crate::{model::X, source::Source};\n\
                let x = crate::buffer::zeroed(1); crate::Error::new();";
    let found: Vec<String> = crate_references(text, &reexports).into_iter().collect();
    assert_eq!(found, ["buffer", "codec", "error", "model", "source"]);
    // A root re-export inside a group, and a lone name: both lead to their module.
    let text = "use crate::{Reader, dtype::DType};\nfn f() -> crate::Result<()> {}";
    let found: Vec<String> = crate_references(text, &reexports).into_iter().collect();
    assert_eq!(found, ["dtype", "error", "reader"]);
}

/// `src/lib.rs`'s comment and docs/architecture.md's table give the layers in the order
/// `LAYERS` does.
#[test]
fn the_layer_order_is_written_once() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let lib = std::fs::read_to_string(root.join("src/lib.rs")).unwrap();
    let start = lib
        .find("// The layers, bottom to top")
        .expect("lib.rs names the layers");
    let comment: String = lib[start..]
        .lines()
        .skip(1)
        .take_while(|l| l.starts_with("//"))
        .map(|l| l.trim_start_matches("//").trim())
        .collect::<Vec<_>>()
        .join(" ");
    let from_lib: Vec<Vec<String>> = comment
        .trim_end_matches('.')
        .split(';')
        .map(|l| l.split(',').map(|m| m.trim().to_owned()).collect())
        .collect();
    let expected: Vec<Vec<String>> = LAYERS
        .iter()
        .map(|l| l.iter().map(|m| m.to_string()).collect())
        .collect();
    assert_eq!(from_lib, expected, "src/lib.rs's layer comment");
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let mut from_doc: Vec<Vec<String>> = Vec::new();
    for line in doc.lines() {
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        let (Some(layer), Some(files)) = (cells.get(1), cells.get(2)) else {
            continue;
        };
        let Ok(layer) = layer.parse::<usize>() else {
            continue;
        };
        for file in files.split(',') {
            let module = file
                .trim()
                .trim_matches('`')
                .trim_end_matches('/')
                .trim_end_matches(".rs")
                .to_owned();
            if from_doc.len() <= layer {
                from_doc.resize(layer + 1, Vec::new());
            }
            from_doc[layer].push(module);
        }
    }
    for l in &mut from_doc {
        l.sort();
    }
    let mut expected = expected;
    for l in &mut expected {
        l.sort();
    }
    assert_eq!(from_doc, expected, "docs/architecture.md's layer table");
}

/// Issue 36: the zip reader knows archives, not what is in them. `.npz` files (`npy`) and
/// PyTorch checkpoints (`pytorch`, `pickle`) are rows above it that use it; the zip reader
/// names none of them (`formats::parse_zip` tells them apart), so no circle comes back.
#[test]
fn the_zip_reader_names_no_format_that_uses_it() {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/formats/zip.rs");
    let text = std::fs::read_to_string(path).unwrap();
    for user in ["pytorch", "npy", "pickle"] {
        assert!(
            !without_tests(&text).contains(&format!("{user}::")),
            "src/formats/zip.rs names {user}"
        );
    }
}
