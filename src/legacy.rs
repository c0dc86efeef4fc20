//! Legacy v0.1.0 files: a CBOR array of per-tensor maps after the blobs, an 8-byte size,
//! no footer magic. Read into the same model as v1.x files: long dtype names map to the
//! short ones, big-endian data is swapped on read, and the single-blob sparse layouts
//! (`sparsecoo`, `sparsecsr`) are presented as `sparse_coo` / `sparse_csr` objects.

use crate::cbor::Value;
use crate::dtype::{DType, dense_byte_size};
use crate::error::{Result, bail, err};
use crate::limits::Limits;
use crate::manifest::parse_shape;
use crate::model::{
    Blob, CText, Component, Encoding, Model, Object, Transform, check_digest_syntax, check_name, check_unique_keys,
};

/// Keys of a legacy tensor map that are not carried into the object's attributes.
const KNOWN_KEYS: [&str; 10] =
    ["name", "offset", "size", "dtype", "layout", "shape", "encoding", "data_endianness", "checksum", "sparse_format"];

fn field<'v>(m: &'v Value, key: &str) -> Result<&'v Value> {
    m.get(key).ok_or_else(|| err!(Format, "legacy tensor lacks the required key '{key}'"))
}

fn text_field<'v>(m: &'v Value, key: &str) -> Result<&'v str> {
    let v = field(m, key)?;
    v.as_text().ok_or_else(|| err!(Format, "'{key}' must be text, not {}", v.type_name()))
}

fn uint_field(m: &Value, key: &str) -> Result<u64> {
    let v = field(m, key)?;
    v.as_u64().ok_or_else(|| err!(Format, "'{key}' must be an unsigned integer, not {}", v.type_name()))
}

fn optional_text<'v>(m: &'v Value, key: &str) -> Result<Option<&'v str>> {
    match m.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_text().map(Some).ok_or_else(|| err!(Format, "'{key}' must be text, not {}", v.type_name())),
    }
}

/// Turns a decoded legacy manifest (an array of tensor maps) into a model.
pub(crate) fn parse(root: &Value, limits: &Limits) -> Result<Model> {
    let entries = root
        .as_array()
        .ok_or_else(|| err!(Format, "legacy manifest must be an array, not {}", root.type_name()))?;
    let mut objects = Vec::with_capacity(entries.len());
    for (i, entry) in entries.iter().enumerate() {
        let object = parse_tensor(entry, limits).map_err(|e| {
            let name = entry.get("name").and_then(Value::as_text).unwrap_or("?");
            e.context(format!("legacy tensor #{i} '{name}'"))
        })?;
        objects.push(object);
    }
    Model::new("0.1.0", None, objects)
}

fn parse_tensor(m: &Value, limits: &Limits) -> Result<Object> {
    let Some(entries) = m.as_map() else {
        bail!(Format, "legacy tensor entry must be a map, not {}", m.type_name());
    };
    check_unique_keys(entries, "the legacy tensor")?;
    let name = check_name("object", text_field(m, "name")?, limits.max_name_length)?;
    let offset = uint_field(m, "offset")?;
    let length = uint_field(m, "size")?;
    let dtype_name = text_field(m, "dtype")?;
    let dtype = DType::from_legacy_name(dtype_name).ok_or_else(|| err!(Format, "unknown dtype '{dtype_name}'"))?;
    let shape = parse_shape(field(m, "shape")?, limits)?;
    let encoding = match optional_text(m, "encoding")?.unwrap_or("raw") {
        "raw" => Encoding::Raw,
        "zstd" => Encoding::Zstd,
        other => bail!(Unsupported, "encoding '{other}' is not supported"),
    };
    let big_endian = match optional_text(m, "data_endianness")?.unwrap_or("little") {
        "little" => false,
        "big" => true,
        other => bail!(Format, "data_endianness '{other}' is neither 'little' nor 'big'"),
    };
    let digest = match optional_text(m, "checksum")? {
        Some(d) => {
            check_digest_syntax(d)?;
            Some(CText::new(d)?)
        }
        None => None,
    };
    let layout = match optional_text(m, "layout")?.unwrap_or("dense") {
        "sparse" => match optional_text(m, "sparse_format")? {
            Some("coo") => "sparsecoo",
            Some("csr") => "sparsecsr",
            other => bail!(Unsupported, "sparse_format {other:?} is not supported"),
        },
        l => l,
    };
    let width = dtype.size() as u8;
    let swap = if big_endian { width } else { 1 };
    let decoded_blob = |derived: Option<u64>| -> Result<u64> {
        match encoding {
            Encoding::Raw => Ok(length),
            Encoding::Zstd => derived.ok_or_else(|| err!(Unsupported, "a zstd-encoded legacy {layout} tensor has no recorded decoded size")),
        }
    };
    let part = |role: &str, dtype: DType, decoded_length: u64, blob: Blob, transform: Transform| -> Result<Component> {
        Ok(Component {
            role: CText::new(role)?,
            dtype,
            logical_type: None,
            blob,
            decoded_length,
            digest: digest.clone(),
            transform,
        })
    };
    let (format, components) = match layout {
        "dense" => {
            let decoded = decoded_blob(dense_byte_size(&shape, dtype, None))?;
            let blob = Blob { offset, length, encoding, decoded_length: decoded };
            let transform = if swap > 1 { Transform::SwapBytes(swap) } else { Transform::None };
            ("dense", vec![part("data", dtype, decoded, blob, transform)?])
        }
        "sparsecoo" => {
            let decoded = decoded_blob(None)?;
            let blob = Blob { offset, length, encoding, decoded_length: decoded };
            let ndim = shape.len() as u64;
            let record = ndim * 8 + width as u64;
            if decoded % record != 0 {
                bail!(Format, "COO blob of {decoded} bytes is not a whole number of {record}-byte records");
            }
            let nnz = decoded / record;
            let big = big_endian;
            let values = Transform::CooValues { ndim, nnz, value_size: width, swap: big };
            let coords = Transform::CooCoords { ndim, nnz, value_size: width, swap: big };
            (
                "sparse_coo",
                vec![
                    part("values", dtype, nnz * width as u64, blob, values)?,
                    part("coords", DType::U64, nnz * ndim * 8, blob, coords)?,
                ],
            )
        }
        "sparsecsr" => {
            if shape.len() != 2 {
                bail!(Format, "a CSR tensor needs a 2-d shape, not {shape:?}");
            }
            let decoded = decoded_blob(None)?;
            let blob = Blob { offset, length, encoding, decoded_length: decoded };
            let indptr_len = shape[0]
                .checked_add(1)
                .and_then(|r| r.checked_mul(8))
                .filter(|&n| n <= decoded)
                .ok_or_else(|| err!(Format, "CSR blob of {decoded} bytes cannot hold {} row pointers", shape[0] as u128 + 1))?;
            let rest = decoded - indptr_len;
            let per_value = 8 + width as u64;
            if rest % per_value != 0 {
                bail!(Format, "CSR blob of {decoded} bytes does not split into row pointers, indices and values");
            }
            let nnz = rest / per_value;
            let sw = if big_endian { 8 } else { 1 };
            (
                "sparse_csr",
                vec![
                    part("values", dtype, nnz * width as u64, blob, Transform::Slice {
                        start: indptr_len + nnz * 8,
                        len: nnz * width as u64,
                        swap,
                    })?,
                    part("indices", DType::U64, nnz * 8, blob, Transform::Slice { start: indptr_len, len: nnz * 8, swap: sw })?,
                    part("indptr", DType::U64, indptr_len, blob, Transform::Slice { start: 0, len: indptr_len, swap: sw })?,
                ],
            )
        }
        other => bail!(Unsupported, "legacy layout '{other}' is not supported"),
    };
    let custom: Vec<(Value, Value)> = m
        .as_map()
        .unwrap_or(&[])
        .iter()
        .filter(|(k, _)| k.as_text().is_none_or(|k| !KNOWN_KEYS.contains(&k)))
        .cloned()
        .collect();
    Ok(Object {
        name,
        format: CText::new(format)?,
        shape,
        attributes: (!custom.is_empty()).then_some(Value::Map(custom)),
        components,
    })
}

/// Builds a derived component's bytes from its decoded blob.
pub(crate) fn gather(transform: Transform, blob: &[u8], dst: &mut [u8]) -> Result<()> {
    match transform {
        Transform::None => dst.copy_from_slice(blob),
        Transform::SwapBytes(w) => {
            dst.copy_from_slice(blob);
            crate::reader::swap_in_place(dst, w);
        }
        Transform::Slice { start, len, swap } => {
            dst.copy_from_slice(&blob[start as usize..(start + len) as usize]);
            crate::reader::swap_in_place(dst, swap);
        }
        Transform::CooValues { ndim, nnz, value_size, swap } => {
            let record = (ndim * 8) as usize + value_size as usize;
            let vs = value_size as usize;
            for i in 0..nnz as usize {
                let src = i * record + ndim as usize * 8;
                dst[i * vs..(i + 1) * vs].copy_from_slice(&blob[src..src + vs]);
            }
            if swap {
                crate::reader::swap_in_place(dst, value_size);
            }
        }
        Transform::CooCoords { ndim, nnz, value_size, swap } => {
            let record = (ndim * 8) as usize + value_size as usize;
            let (ndim, nnz) = (ndim as usize, nnz as usize);
            for i in 0..nnz {
                for d in 0..ndim {
                    let src = i * record + d * 8;
                    let out = (d * nnz + i) * 8;
                    dst[out..out + 8].copy_from_slice(&blob[src..src + 8]);
                }
            }
            if swap {
                crate::reader::swap_in_place(dst, 8);
            }
        }
    }
    Ok(())
}
