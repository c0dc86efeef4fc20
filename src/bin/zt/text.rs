//! Formatting shared by the commands: sizes, shapes, JSON pieces, error messages, tables.

use std::fmt::Write as _;
use std::path::Path;

use comfy_table::{CellAlignment, LineStyle, Table, TableStyle};
use ztensor::cbor::Value;
use ztensor::json::write_json;
use ztensor::{Component, Error, Reader};

use crate::{CliResult, Failure};

/// "512 B", "1.5 KiB", "3.0 GiB": binary units, one decimal from KiB on.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut value = bytes as f64 / 1024.0;
    let mut unit = 0;
    // Moves up while the value would print as "1024.0" or more.
    while value >= 1023.95 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    format!("{value:.1} {}", UNITS[unit])
}

/// "[2, 3]"; "[]" for a scalar.
pub fn shape(dims: &[u64]) -> String {
    let inner: Vec<String> = dims.iter().map(u64::to_string).collect();
    format!("[{}]", inner.join(", "))
}

/// "f32", or "u8 (f8_e4m3fn)" with a logical type.
pub fn dtype(c: &Component) -> String {
    match c.logical_type() {
        Some(t) => format!("{} ({t})", c.dtype()),
        None => c.dtype().to_string(),
    }
}

/// "1 object", "2 objects".
pub fn count(n: usize, noun: &str) -> String {
    format!("{n} {noun}{}", plural(n))
}

/// "s" unless there is one.
pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Appends a JSON string.
pub fn json_str(out: &mut String, s: &str) {
    write_json(&Value::Text(s.to_owned()), out);
}

/// Appends a JSON string or null.
pub fn json_opt_str(out: &mut String, s: Option<&str>) {
    match s {
        Some(s) => json_str(out, s),
        None => out.push_str("null"),
    }
}

/// Appends a JSON array of integers.
pub fn json_u64s(out: &mut String, values: &[u64]) {
    out.push('[');
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{v}");
    }
    out.push(']');
}

/// Appends attributes as JSON (the crate's mapping), or null when absent.
pub fn json_attributes(out: &mut String, attributes: Option<&Value>) {
    match attributes {
        Some(v) => write_json(v, out),
        None => out.push_str("null"),
    }
}

/// A path as shown in messages and output.
pub fn display(path: &Path) -> String {
    path.display().to_string()
}

/// A library error as "ZT_ERR_X: message", without the context the message repeats:
/// any of `known` prefixes (a path, "object 'w'" ...), "opening PATH: ", and the " (os
/// error N)" suffix of OS errors.
pub fn describe(e: &Error, known: &[String]) -> String {
    format!("{}: {}", e.kind().status_name(), strip(e.message(), known))
}

/// The message of `describe`, without the status name.
pub fn strip<'m>(message: &'m str, known: &[String]) -> &'m str {
    let mut m = message;
    loop {
        let before = m.len();
        for prefix in known {
            for candidate in [format!("{prefix}: "), format!("opening {prefix}: ")] {
                if let Some(rest) = m.strip_prefix(candidate.as_str()) {
                    m = rest;
                }
            }
        }
        if m.len() == before {
            break;
        }
    }
    if let Some(at) = m.rfind(" (os error ")
        && m.ends_with(')')
        && m[at + 11..m.len() - 1].bytes().all(|b| b.is_ascii_digit())
    {
        m = &m[..at];
    }
    m
}

/// Opens a file for reading, with the CLI's message on failure.
pub fn open(path: &Path) -> CliResult<Reader<'static>> {
    Reader::open(path).map_err(|e| {
        Failure::Failed(format!(
            "cannot open '{}': {}",
            display(path),
            describe(&e, &[display(path)])
        ))
    })
}

/// Column alignment in a table.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// Tables: no borders, a rule of dashes under the header (ASCII, so a pipe or a log
/// shows it as a terminal does), no colours.
const TABLE_STYLE: TableStyle = TableStyle::new().header_separator(LineStyle::none().fill('-'));

/// Renders rows under a header and a rule, columns two spaces apart, each as wide as its
/// widest cell (in terminal columns); no line ends in spaces. Never wrapped: the layout
/// is the same in a terminal of any width and in a pipe.
pub fn table(header: &[&str], align: &[Align], rows: &[Vec<String>]) -> String {
    let mut t = Table::new();
    t.load_style(TABLE_STYLE)
        .set_header(header.to_vec())
        .add_rows(rows.iter().cloned());
    let last = header.len().saturating_sub(1);
    for (i, column) in t.column_iter_mut().enumerate() {
        column.set_padding((0, if i == last { 0 } else { 2 }));
        column.set_cell_alignment(match align[i] {
            Align::Left => CellAlignment::Left,
            Align::Right => CellAlignment::Right,
        });
    }
    let mut out = String::new();
    for line in t.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_are_binary_with_one_decimal() {
        assert_eq!(human_size(0), "0 B");
        assert_eq!(human_size(1023), "1023 B");
        assert_eq!(human_size(1024), "1.0 KiB");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(1024 * 1024 - 1), "1.0 MiB");
        assert_eq!(human_size(5 << 30), "5.0 GiB");
        assert_eq!(human_size(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn messages_lose_repeated_context() {
        let known = ["a.zt".to_owned(), "object 'w' component 'data'".to_owned()];
        assert_eq!(
            strip(
                "opening a.zt: No such file or directory (os error 2)",
                &known
            ),
            "No such file or directory"
        );
        assert_eq!(
            strip("a.zt: object 'w' component 'data': bad", &known),
            "bad"
        );
        assert_eq!(strip("kept (os error x)", &known), "kept (os error x)");
    }

    #[test]
    fn tables_align_and_never_end_in_spaces() {
        let t = table(
            &["name", "size", "x"],
            &[Align::Left, Align::Right, Align::Left],
            &[
                vec!["a".into(), "1 B".into(), "".into()],
                vec!["long".into(), "10 B".into(), "z".into()],
                // Wide characters count as two terminal columns.
                vec!["重み".into(), "0 B".into(), "é".into()],
            ],
        );
        assert_eq!(
            t,
            "name  size  x\n-------------\na      1 B\nlong  10 B  z\n重み   0 B  é\n"
        );
    }
}
