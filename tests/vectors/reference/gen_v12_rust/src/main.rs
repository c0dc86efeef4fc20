//! Writes v1.2.0 vectors with file-level attributes. The Python API of
//! ztensor 1.2.3 has no way to set them; the Rust crate has
//! `Writer::set_attributes`.
//!
//! Usage: cargo run --release -- OUTDIR
//!
//! The values written here are mirrored in make_vectors.py (RUST_V12 table),
//! which writes the matching X.json expectations. Keep the two in sync.

use std::collections::BTreeMap;
use std::path::Path;

use ciborium::Value;
use ztensor::Writer;

type Res = Result<(), Box<dyn std::error::Error>>;

fn text(s: &str) -> Value {
    Value::Text(s.to_string())
}

fn main() -> Res {
    let out = std::env::args().nth(1).expect("usage: gen_v12_rust OUTDIR");
    let dir = Path::new(&out);
    std::fs::create_dir_all(dir)?;

    // File attributes of every CBOR kind the API can carry.
    let mut attrs = BTreeMap::new();
    attrs.insert("framework".to_string(), text("zt-vectors"));
    attrs.insert("license".to_string(), text("MIT"));
    attrs.insert("epoch".to_string(), Value::Integer(3.into()));
    attrs.insert("neg".to_string(), Value::Integer((-12i64).into()));
    attrs.insert("u64max".to_string(), Value::Integer(u64::MAX.into()));
    attrs.insert("half".to_string(), Value::Float(0.5));
    attrs.insert("beta".to_string(), Value::Float(0.9));
    attrs.insert("flag".to_string(), Value::Bool(false));
    attrs.insert("none".to_string(), Value::Null);
    attrs.insert(
        "tags".to_string(),
        Value::Array(vec![text("x"), text("y"), Value::Integer(1.into())]),
    );
    attrs.insert(
        "nested".to_string(),
        Value::Map(vec![(
            text("depth"),
            Value::Map(vec![(text("k"), Value::Integer(1.into()))]),
        )]),
    );
    attrs.insert("raw".to_string(), Value::Bytes(vec![0x00, 0x01, 0x02, 0xFF]));
    attrs.insert("名前".to_string(), text("ü ß"));

    let path = dir.join("v12_rust_file_attributes.zt");
    let mut w = Writer::create(&path)?;
    w.set_attributes(attrs);
    w.add("a", &[2, 2], &[1.0f32, -2.0, 0.25, 8.0])?;
    let n = w.finish()?;
    println!("wrote {} ({} bytes)", path.display(), n);

    // An empty attribute map and no objects at all.
    let path = dir.join("v12_rust_file_attributes_empty.zt");
    let mut w = Writer::create(&path)?;
    w.set_attributes(BTreeMap::new());
    let n = w.finish()?;
    println!("wrote {} ({} bytes)", path.display(), n);
    Ok(())
}
