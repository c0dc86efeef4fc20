//! `zt info FILE [--json]`: the manifest as a table, or as JSON.

use std::fmt::Write as _;
use std::path::Path;

use ztensor::cbor::Value;
use ztensor::{AttrValue, Reader, ValueType};

use crate::args::InfoArgs;
use crate::text::{self, Align};
use crate::{CliResult, emit};

/// Longest list of attribute names on the header line (then "... (N more)" follows).
const ATTRIBUTE_NAMES_WIDTH: usize = 60;

/// Longest rendering of an attribute value in the key/value table (then "...").
const VALUE_WIDTH: usize = 60;

/// Digests longer than this are shortened in the table (sha256 to 16 hex digits).
const DIGEST_WIDTH: usize = 23;

pub fn run(args: &InfoArgs) -> CliResult {
    let reader = text::open(&args.file)?;
    if args.json {
        emit(&json(&args.file, &reader))
    } else {
        emit(&table(&args.file, &reader))
    }
}

/// "a, b, c" or "a, b, ... (5 more)"; the names of a map's keys (non-text keys as JSON).
fn attribute_names(attributes: Option<&Value>) -> Option<String> {
    let pairs = attributes
        .and_then(Value::as_map)
        .filter(|p| !p.is_empty())?;
    let mut out = String::new();
    for (i, (key, _)) in pairs.iter().enumerate() {
        let name = match key {
            Value::Text(s) => s.clone(),
            other => ztensor::json::to_json(other),
        };
        if i > 0 && out.len() + 2 + name.len() > ATTRIBUTE_NAMES_WIDTH {
            let _ = write!(out, ", ... ({} more)", pairs.len() - i);
            break;
        }
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&name);
    }
    Some(out)
}

/// "u32", "string[100]", "f32[100]", "array[3]" (mixed), "map[2]": the type the file
/// declared (GGUF's widths; u64/i64/f64 for CBOR integers and floats).
fn type_label(v: AttrValue<'_>) -> String {
    match v.value_type() {
        ValueType::Array => {
            let n = v.len().unwrap_or(0);
            match v.elem_type().ok().flatten() {
                Some(t) => format!("{t}[{n}]"),
                None => format!("array[{n}]"),
            }
        }
        ValueType::Map => format!("map[{}]", v.len().unwrap_or(0)),
        t => t.name().to_owned(),
    }
}

/// Appends a short rendering of `v`; returns false once `out` is past `VALUE_WIDTH`
/// (the caller stops and appends "...").
fn render(v: AttrValue<'_>, out: &mut String) -> bool {
    match v.value_type() {
        ValueType::Null | ValueType::Other => out.push_str(v.value_type().name()),
        ValueType::Bool => out.push_str(if v.get::<bool>().unwrap_or(false) {
            "true"
        } else {
            "false"
        }),
        ValueType::F32 => {
            let _ = write!(out, "{:?}", v.get::<f32>().unwrap_or(f32::NAN));
        }
        ValueType::F64 => {
            let _ = write!(out, "{:?}", v.get::<f64>().unwrap_or(f64::NAN));
        }
        ValueType::I8 | ValueType::I16 | ValueType::I32 | ValueType::I64 => {
            let _ = write!(out, "{}", v.get::<i64>().unwrap_or(0));
        }
        ValueType::U8 | ValueType::U16 | ValueType::U32 | ValueType::U64 => {
            let _ = write!(out, "{}", v.get::<u64>().unwrap_or(0));
        }
        ValueType::String => {
            let bytes = v.string_bytes().unwrap_or(&[]);
            let cut = &bytes[..bytes.len().min(VALUE_WIDTH)];
            text::json_str(out, &String::from_utf8_lossy(cut));
        }
        ValueType::Bytes => {
            let _ = write!(out, "<{} bytes>", v.as_bytes().map_or(0, <[u8]>::len));
        }
        ValueType::Array => {
            out.push('[');
            for (i, e) in v.elements().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                let Ok(e) = e else { return false };
                if out.len() > VALUE_WIDTH || !render(e, out) {
                    return false;
                }
            }
            out.push(']');
        }
        ValueType::Map => {
            out.push('{');
            for i in 0..v.len().unwrap_or(0) {
                let Ok((k, e)) = v.entry(i) else { break };
                if i > 0 {
                    out.push_str(", ");
                }
                if out.len() > VALUE_WIDTH || !render(k, out) {
                    return false;
                }
                out.push_str(": ");
                if !render(e, out) {
                    return false;
                }
            }
            out.push('}');
        }
    }
    out.len() <= VALUE_WIDTH
}

/// The file attributes as a table: key, type, value (cut after about 60 characters).
fn attribute_table(reader: &Reader<'_>) -> Option<String> {
    let map = reader.typed_attributes(None).ok()?;
    let n = map.len().ok()?;
    if n == 0 {
        return None;
    }
    let mut rows = Vec::with_capacity(n);
    for i in 0..n {
        let (k, v) = map.entry(i).ok()?;
        let key = match k.as_str() {
            Ok(s) => s.to_owned(),
            Err(_) => {
                let mut s = String::new();
                render(k, &mut s);
                s
            }
        };
        let mut value = String::new();
        if !render(v, &mut value) {
            let cut = value
                .char_indices()
                .nth(VALUE_WIDTH)
                .map_or(value.len(), |(i, _)| i);
            value.truncate(cut);
            value.push_str("...");
        }
        rows.push(vec![key, type_label(v), value]);
    }
    use Align::Left;
    Some(text::table(
        &["key", "type", "value"],
        &[Left, Left, Left],
        &rows,
    ))
}

fn short_digest(digest: Option<&str>) -> String {
    match digest {
        None => "-".to_owned(),
        Some(d) if d.chars().count() > DIGEST_WIDTH + 3 => {
            let cut: String = d.chars().take(DIGEST_WIDTH).collect();
            format!("{cut}...")
        }
        Some(d) => d.to_owned(),
    }
}

/// The header line, the component table and a totals line.
pub fn table(path: &Path, reader: &Reader<'_>) -> String {
    let objects = reader.objects();
    let mut out = format!(
        "{}: version {}, {}, ",
        text::display(path),
        reader.version(),
        text::count(objects.len(), "object")
    );
    match attribute_names(reader.attributes().as_ref()) {
        Some(names) => {
            let n = reader
                .attributes()
                .as_ref()
                .and_then(Value::as_map)
                .map_or(0, <[_]>::len);
            let _ = writeln!(out, "{}: {names}", text::count(n, "file attribute"));
        }
        None => out.push_str("no file attributes\n"),
    }
    if reader.is_set() {
        let names: Vec<String> = (0..reader.shard_count())
            .filter_map(|i| reader.shard_path(i).ok().flatten())
            .map(|p| {
                p.file_name()
                    .map_or_else(|| text::display(p), |n| n.to_string_lossy().into_owned())
            })
            .collect();
        let _ = writeln!(
            out,
            "a set of {}: {}",
            text::count(names.len(), "file"),
            names.join(", ")
        );
    }
    if let Some(table) = attribute_table(reader) {
        out.push('\n');
        out.push_str(&table);
    }
    if objects.is_empty() {
        return out;
    }
    let mut rows = Vec::new();
    let (mut stored, mut decoded, mut components) = (0u64, 0u64, 0usize);
    for obj in objects {
        let lead = [
            obj.name().to_owned(),
            obj.format().to_owned(),
            text::shape(obj.shape()),
        ];
        if obj.components().is_empty() {
            let mut row = lead.to_vec();
            row.extend(["-", "-", "-", "", "", "-"].map(String::from));
            rows.push(row);
        }
        for c in obj.components() {
            let mut row = lead.to_vec();
            row.extend([
                c.role().to_owned(),
                text::dtype(c),
                c.encoding().name().to_owned(),
                text::human_size(c.length()),
                text::human_size(c.decoded_length()),
                short_digest(c.digest()),
            ]);
            rows.push(row);
            stored = stored.saturating_add(c.length());
            decoded = decoded.saturating_add(c.decoded_length());
            components += 1;
        }
    }
    use Align::{Left, Right};
    out.push('\n');
    out.push_str(&text::table(
        &[
            "name", "format", "shape", "role", "dtype", "encoding", "stored", "decoded", "digest",
        ],
        &[Left, Left, Left, Left, Left, Left, Right, Right, Left],
        &rows,
    ));
    let _ = writeln!(
        out,
        "\n{}: {} stored, {} decoded",
        text::count(components, "component"),
        text::human_size(stored),
        text::human_size(decoded)
    );
    out
}

/// The manifest as one line of JSON; the schema is in docs/cli.md.
pub fn json(path: &Path, reader: &Reader<'_>) -> String {
    let mut out = String::from("{\"file\":");
    text::json_str(&mut out, &text::display(path));
    out.push_str(",\"version\":");
    text::json_str(&mut out, reader.version());
    out.push_str(",\"attributes\":");
    text::json_attributes(&mut out, reader.attributes().as_ref());
    out.push_str(",\"objects\":[");
    for (i, obj) in reader.objects().iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"name\":");
        text::json_str(&mut out, obj.name());
        out.push_str(",\"format\":");
        text::json_str(&mut out, obj.format());
        out.push_str(",\"shape\":");
        text::json_u64s(&mut out, obj.shape());
        out.push_str(",\"attributes\":");
        text::json_attributes(&mut out, obj.attributes().as_ref());
        out.push_str(",\"components\":[");
        for (j, c) in obj.components().iter().enumerate() {
            if j > 0 {
                out.push(',');
            }
            out.push_str("{\"role\":");
            text::json_str(&mut out, c.role());
            out.push_str(",\"dtype\":");
            text::json_str(&mut out, c.dtype().name());
            out.push_str(",\"type\":");
            text::json_opt_str(&mut out, c.logical_type());
            out.push_str(",\"encoding\":");
            text::json_str(&mut out, c.encoding().name());
            let _ = write!(
                out,
                ",\"offset\":{},\"stored_size\":{},\"decoded_size\":{},\"digest\":",
                c.offset(),
                c.length(),
                c.decoded_length()
            );
            text::json_opt_str(&mut out, c.digest());
            out.push('}');
        }
        out.push_str("]}");
    }
    out.push_str("]}\n");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_attribute_lists_are_cut() {
        let map = Value::Map(
            (0..20)
                .map(|i| (Value::Text(format!("key{i:02}")), Value::Null))
                .collect(),
        );
        assert_eq!(
            attribute_names(Some(&map)).unwrap(),
            "key00, key01, key02, key03, key04, key05, key06, key07, ... (12 more)"
        );
        assert_eq!(attribute_names(Some(&Value::Map(vec![]))), None);
        let odd = Value::Map(vec![(Value::Unsigned(7), Value::Null)]);
        assert_eq!(attribute_names(Some(&odd)).unwrap(), "7");
    }

    #[test]
    fn sha256_digests_are_shortened() {
        assert_eq!(short_digest(None), "-");
        assert_eq!(short_digest(Some("crc32c:0x0BA369ED")), "crc32c:0x0BA369ED");
        assert_eq!(
            short_digest(Some(
                "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
            )),
            "sha256:ba7816bf8f01cfea..."
        );
    }
}
