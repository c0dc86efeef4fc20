//! Hugging Face safetensors: an 8-byte little-endian header length, a JSON header
//! (`{"name": {"dtype", "shape", "data_offsets"}, "__metadata__": {..}}`), then the data
//! section. Every tensor becomes a "dense" object with one raw "data" component pointing
//! into the data section, so views are zero-copy wherever the file aligns the tensor to
//! its element size (files written by the reference library always do).
//!
//! Choices where the format leaves room:
//! - Version: safetensors has no version field and one layout since its first release;
//!   the model reports "1".
//! - Object order: by data offset (the order of the bytes in the file), ties in header
//!   order. JSON key order carries no meaning in safetensors.
//! - `__metadata__` (a string-to-string map) becomes the file attributes, in header order;
//!   `null` means none.
//! - Unknown keys in a tensor entry are ignored; gaps between tensors and trailing bytes
//!   after the last one are accepted (the reference library refuses them, but they harm
//!   nobody); overlapping tensors are refused.
//! - dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL as themselves; F8_E4M3,
//!   F8_E5M2, F8_E4M3FNUZ, F8_E5M2FNUZ, F8_E8M0 as u8 + the matching fp8 logical type
//!   (`f8_e8m0fnu` for the MX scales); F4, F6_E2M3 and F6_E3M2, whose values are packed
//!   (a little-endian bit stream, see `quant::subbyte`), as u8 + `f4_e2m1fn_x2`,
//!   `f6_e2m3fn_x4`, `f6_e3m2fn_x4`; C64 as f32 + "complex64". Unknown names are
//!   `Unsupported`, naming the dtype and the tensor.

use crate::cbor::Value;
use crate::dtype::{DType, dense_byte_size};
use crate::error::{ErrorKind, Result, bail, err};
use crate::formats::ReadAt;
use crate::json::from_json;
use crate::limits::{Limits, MAX_CBOR_DEPTH};
use crate::model::{Attributes, CText, Component, Container, Model, Object, Shape, check_name};

/// The version string a safetensors model reports (the format has none of its own).
pub(crate) const VERSION: &str = "1";

/// The storage dtype and logical type of a safetensors dtype name. `Unsupported` for a
/// name this build can't represent.
fn dtype_of(name: &str) -> Result<(DType, Option<&'static str>)> {
    Ok(match name {
        "F64" => (DType::F64, None),
        "F32" => (DType::F32, None),
        "F16" => (DType::F16, None),
        "BF16" => (DType::BF16, None),
        "I64" => (DType::I64, None),
        "I32" => (DType::I32, None),
        "I16" => (DType::I16, None),
        "I8" => (DType::I8, None),
        "U64" => (DType::U64, None),
        "U32" => (DType::U32, None),
        "U16" => (DType::U16, None),
        "U8" => (DType::U8, None),
        "BOOL" => (DType::Bool, None),
        "F8_E4M3" => (DType::U8, Some("f8_e4m3fn")),
        "F8_E5M2" => (DType::U8, Some("f8_e5m2")),
        "F8_E4M3FNUZ" => (DType::U8, Some("f8_e4m3fnuz")),
        "F8_E5M2FNUZ" => (DType::U8, Some("f8_e5m2fnuz")),
        "C64" => (DType::F32, Some("complex64")),
        "F8_E8M0" => (DType::U8, Some("f8_e8m0fnu")),
        "F4" => (DType::U8, Some("f4_e2m1fn_x2")),
        "F6_E2M3" => (DType::U8, Some("f6_e2m3fn_x4")),
        "F6_E3M2" => (DType::U8, Some("f6_e3m2fn_x4")),
        other => bail!(
            Unsupported,
            "unknown safetensors dtype {other:?} (known: F64 F32 F16 BF16 I64 I32 I16 I8 \
             U64 U32 U16 U8 BOOL F8_E4M3 F8_E5M2 F8_E4M3FNUZ F8_E5M2FNUZ F8_E8M0 F6_E2M3 \
             F6_E3M2 F4 C64)"
        ),
    })
}

/// Parses a safetensors file into a model. Reads (and, without a mapping, allocates) the
/// JSON header once and builds its JSON tree, both bounded by `limits.max_manifest_size`;
/// touches no tensor data. Returns the model and the end of the data region (the file).
/// True for the first bytes of a safetensors file: a u64 little-endian header length,
/// then a JSON object, which may begin with JSON whitespace (writers pad headers so the
/// data is page-aligned; safetensors itself accepts it). When all the bytes shown are
/// whitespace, the parser decides. A length past the end still says safetensors: the
/// parser reports the truncation.
pub(crate) fn detect(head: &[u8]) -> bool {
    if head.len() < 9 {
        return false;
    }
    let n = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
    let json = &head[8..];
    let first = json
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    n >= 2 && first.is_none_or(|&b| b == b'{')
}

pub(crate) fn parse(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<(Model, u64)> {
    let head = read(0, 8)?;
    let header_len = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
    if header_len > size - 8 {
        bail!(
            Format,
            "safetensors header of {header_len} bytes reaches past the end of the {size}-byte file"
        );
    }
    if header_len > limits.max_manifest_size {
        bail!(
            Limit,
            "safetensors header of {header_len} bytes is over the manifest limit of {}",
            limits.max_manifest_size
        );
    }
    let data_start = 8 + header_len;
    let header = read(8, header_len)?;
    let text = std::str::from_utf8(&header).map_err(|e| {
        err!(
            Format,
            "safetensors header is not UTF-8 (bad byte at file offset {})",
            8 + e.valid_up_to()
        )
    })?;
    // Headers as writers make them are read without a JSON tree; anything else, and every
    // error, goes through the general parse below.
    if let Some(model) = plain::parse(text, data_start, size, limits) {
        return Ok((model, size));
    }
    let depth = limits.max_cbor_depth.min(MAX_CBOR_DEPTH);
    let root = from_json(text, depth).map_err(|e| {
        let kind = if e.message.starts_with("nesting deeper") {
            ErrorKind::Limit
        } else {
            ErrorKind::Format
        };
        crate::error::Error::new(
            kind,
            format!(
                "safetensors header: JSON error at file offset {}: {}",
                8 + e.offset,
                e.message
            ),
        )
    })?;
    drop(header);
    let Value::Map(entries) = root else {
        bail!(
            Format,
            "the safetensors header must be a JSON object, not {}",
            root.type_name()
        );
    };
    let mut names = Names::default();
    let mut attributes = None;
    // (begin, end, object) per tensor, in header order.
    let mut tensors: Vec<(u64, u64, Object)> = Vec::with_capacity(entries.len());
    for (key, value) in entries {
        let Value::Text(name) = key else {
            bail!(Internal, "a JSON object key is not text");
        };
        if name == "__metadata__" {
            attributes = metadata(value)?;
            continue;
        }
        let tensor = tensor(&name, &value, data_start, size, limits, &mut names)
            .map_err(|e| e.context(format!("safetensors tensor '{name}'")))?;
        tensors.push(tensor);
    }
    finish(tensors, attributes, data_start)
        .map(|model| (model, size))
}

/// Orders the tensors by data offset, refuses overlaps and builds the model.
fn finish(
    mut tensors: Vec<(u64, u64, Object)>,
    attributes: Option<Attributes>,
    data_start: u64,
) -> Result<Model> {
    // Stable: ties (zero-length tensors) keep header order.
    tensors.sort_by_key(|t| t.0);
    let mut last: Option<(u64, &str)> = None;
    for (begin, end, obj) in &tensors {
        if begin == end {
            continue;
        }
        if let Some((prev_end, prev)) = last
            && *begin < prev_end
        {
            bail!(
                Format,
                "safetensors tensors '{prev}' and '{}' overlap: '{}' starts at data offset \
                 {begin}, before '{prev}' ends at {prev_end}",
                obj.name(),
                obj.name()
            );
        }
        last = Some((*end, obj.name()));
    }
    let objects = tensors.into_iter().map(|t| t.2).collect();
    let mut model = Model::new(
        Container::Safetensors,
        super::UNALIGNED,
        VERSION,
        attributes,
        objects,
    )?;
    model.data_offset = data_start;
    Ok(model)
}

/// Texts shared by every object, allocated once.
#[derive(Default)]
struct Names {
    dense: Option<CText>,
    data: Option<CText>,
    logical: Vec<CText>,
}

impl Names {
    fn get(slot: &mut Option<CText>, s: &str) -> Result<CText> {
        match slot {
            Some(t) => Ok(t.clone()),
            None => Ok(slot.insert(CText::new(s)?).clone()),
        }
    }
    fn logical(&mut self, s: &str) -> Result<CText> {
        if let Some(t) = self.logical.iter().find(|t| t.as_str() == s) {
            return Ok(t.clone());
        }
        let t = CText::new(s)?;
        self.logical.push(t.clone());
        Ok(t)
    }
}

/// `__metadata__`: a JSON object of strings, kept as a CBOR map of text in header order.
fn metadata(value: Value) -> Result<Option<Attributes>> {
    match value {
        Value::Null => Ok(None),
        // Our JSON parser reads an object that is exactly {"$bytes": "<hex>"} as bytes;
        // here it is a one-key metadata map (the hex is kept, in lower case).
        Value::Bytes(b) => Ok(Some(Attributes::from_value(&Value::Map(vec![(
            Value::Text("$bytes".to_owned()),
            Value::Text(crate::codec::hex_lower(&b)),
        )])))),
        Value::Map(pairs) => {
            for (k, v) in &pairs {
                if !matches!(v, Value::Text(_)) {
                    bail!(
                        Format,
                        "safetensors __metadata__ value of {:?} must be a string, not {}",
                        k.as_text().unwrap_or(""),
                        v.type_name()
                    );
                }
            }
            Ok(Some(Attributes::from_value(&Value::Map(pairs))))
        }
        other => bail!(
            Format,
            "safetensors __metadata__ must be an object of strings, not {}",
            other.type_name()
        ),
    }
}

/// One tensor entry: checks its fields and builds its object. Returns the data offsets
/// (relative to the data section) with the object.
fn tensor(
    name: &str,
    value: &Value,
    data_start: u64,
    size: u64,
    limits: &Limits,
    names: &mut Names,
) -> Result<(u64, u64, Object)> {
    let name_c = check_name("tensor", name, limits.max_name_length)?;
    let Value::Map(fields) = value else {
        bail!(
            Format,
            "the entry must be a JSON object, not {}",
            value.type_name()
        );
    };
    let field = |key: &str| {
        fields
            .iter()
            .find(|(k, _)| k.as_text() == Some(key))
            .map(|(_, v)| v)
            .ok_or_else(|| err!(Format, "the entry lacks the required key '{key}'"))
    };
    let dtype = field("dtype")?;
    let dtype = dtype.as_text().ok_or_else(|| {
        err!(
            Format,
            "'dtype' must be a string, not {}",
            dtype.type_name()
        )
    })?;
    let (storage, logical) = dtype_of(dtype)?;
    let shape = field("shape")?;
    let dims = shape.as_array().ok_or_else(|| {
        err!(
            Format,
            "'shape' must be an array, not {}",
            shape.type_name()
        )
    })?;
    if dims.len() > limits.max_rank {
        bail!(
            Limit,
            "shape has {} dimensions, over the limit of {}",
            dims.len(),
            limits.max_rank
        );
    }
    let shape = dims
        .iter()
        .map(|d| {
            d.as_u64().ok_or_else(|| {
                err!(
                    Format,
                    "a shape dimension must be a non-negative integer, not {}",
                    d.type_name()
                )
            })
        })
        .collect::<Result<Vec<u64>>>()?;
    let offsets = field("data_offsets")?;
    let (begin, end) = match offsets.as_array() {
        Some([b, e]) => match (b.as_u64(), e.as_u64()) {
            (Some(b), Some(e)) => (b, e),
            _ => bail!(Format, "'data_offsets' must be two non-negative integers"),
        },
        _ => bail!(
            Format,
            "'data_offsets' must be an array of two integers [begin, end]"
        ),
    };
    let entry = Entry {
        dtype,
        storage,
        logical,
        shape: &shape,
        begin,
        end,
    };
    tensor_of(name_c, &entry, data_start, size, names)
}

/// A tensor entry's fields, read from the header.
struct Entry<'a> {
    dtype: &'a str,
    storage: DType,
    logical: Option<&'static str>,
    shape: &'a [u64],
    begin: u64,
    end: u64,
}

/// Checks an entry's offsets against its shape and the data section and builds its object.
fn tensor_of(
    name_c: CText,
    e: &Entry<'_>,
    data_start: u64,
    size: u64,
    names: &mut Names,
) -> Result<(u64, u64, Object)> {
    let Entry {
        dtype,
        storage,
        logical,
        shape,
        begin,
        end,
    } = *e;
    if begin > end {
        bail!(Format, "data_offsets [{begin}, {end}) begin after they end");
    }
    let length = end - begin;
    let expected = dense_byte_size(shape, storage, logical).ok_or_else(|| match logical {
        Some(t) if crate::dtype::numel(shape).is_some() => err!(
            Format,
            "shape {shape:?} of {dtype} is not a whole number of bytes ({t} packs several values per byte)"
        ),
        _ => err!(
            Format,
            "the byte size of shape {shape:?} of {dtype} overflows u64"
        ),
    })?;
    if length != expected {
        bail!(
            Format,
            "data_offsets [{begin}, {end}) hold {length} bytes but shape {shape:?} of {dtype} \
             needs {expected}"
        );
    }
    let data_len = size - data_start;
    if end > data_len {
        bail!(
            Format,
            "data_offsets [{begin}, {end}) reach past the end of the data section, which \
             holds {data_len} bytes (file offset {data_start} to {size})"
        );
    }
    let offset = data_start + begin;
    let component = Component::raw(
        Names::get(&mut names.data, "data")?,
        storage,
        logical.map(|t| names.logical(t)).transpose()?,
        offset,
        length,
    );
    let object = Object {
        name: name_c,
        format: Names::get(&mut names.dense, "dense")?,
        shape: Shape::from(shape),
        attributes: None,
        components: vec![component].into(),
    };
    Ok((begin, end, object))
}

mod plain;
