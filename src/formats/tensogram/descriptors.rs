//! A data-object frame's CBOR descriptor: its required fields, and what it says about
//! the decoded array (object type, shape, dtype, byte order). The pipeline stages and the
//! masks it describes are read by `decode` and `masks`.

use crate::dtype::DType;
use crate::error::{Result, bail, err};
use crate::limits::Limits;
use crate::value::cbor::Value;

/// The element kinds, for NaN/Inf restoration and byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Kind {
    F16,
    BF16,
    F32,
    F64,
    /// Pairs of f32.
    C64,
    /// Pairs of f64.
    C128,
    Int,
    Bitmask,
}

/// A Tensogram dtype: storage dtype, logical type, element kind, bytes per element.
fn dtype_of(name: &str) -> Option<(DType, Option<&'static str>, Kind, u64)> {
    Some(match name {
        "float16" => (DType::F16, None, Kind::F16, 2),
        "bfloat16" => (DType::BF16, None, Kind::BF16, 2),
        "float32" => (DType::F32, None, Kind::F32, 4),
        "float64" => (DType::F64, None, Kind::F64, 8),
        "complex64" => (DType::F32, Some("complex64"), Kind::C64, 8),
        "complex128" => (DType::F64, Some("complex128"), Kind::C128, 16),
        "int8" => (DType::I8, None, Kind::Int, 1),
        "int16" => (DType::I16, None, Kind::Int, 2),
        "int32" => (DType::I32, None, Kind::Int, 4),
        "int64" => (DType::I64, None, Kind::Int, 8),
        "uint8" => (DType::U8, None, Kind::Int, 1),
        "uint16" => (DType::U16, None, Kind::Int, 2),
        "uint32" => (DType::U32, None, Kind::Int, 4),
        "uint64" => (DType::U64, None, Kind::Int, 8),
        "bitmask" => (DType::Bool, None, Kind::Bitmask, 1),
        _ => return None,
    })
}

/// A required field of a descriptor (or mask entry), converted by `get`; a value `get`
/// refuses is a `Format` error saying it was not `expected`.
fn field<'v, T>(
    desc: &'v Value,
    key: &str,
    expected: &str,
    get: impl FnOnce(&'v Value) -> Option<T>,
) -> Result<T> {
    let Some(v) = desc.get(key) else {
        bail!(Format, "descriptor has no '{key}'");
    };
    get(v).ok_or_else(|| {
        err!(
            Format,
            "descriptor '{key}' is {}, expected {expected}",
            v.type_name()
        )
    })
}

/// A required text field of a descriptor (or mask entry).
pub(super) fn text_field<'v>(desc: &'v Value, key: &str) -> Result<&'v str> {
    field(desc, key, "text", Value::as_text)
}

/// A required unsigned integer field.
pub(super) fn uint_field(desc: &Value, key: &str) -> Result<u64> {
    field(desc, key, "an unsigned integer", Value::as_u64)
}

/// A required signed integer field that fits in i64.
pub(super) fn int_field(desc: &Value, key: &str) -> Result<i64> {
    field(desc, key, "a 64-bit integer", |v| match v {
        Value::Unsigned(n) if *n <= i64::MAX as u64 => Some(*n as i64),
        Value::Negative(n) if *n < i64::MAX as u64 => Some(-1 - *n as i64),
        _ => None,
    })
}

/// A required number field (float or integer), as f64.
pub(super) fn float_field(desc: &Value, key: &str) -> Result<f64> {
    field(desc, key, "a number", |v| match v {
        Value::Float(f) => Some(*f),
        Value::Unsigned(n) => Some(*n as f64),
        Value::Negative(n) => Some(-1.0 - *n as f64),
        _ => None,
    })
}

/// A required array of unsigned integers (allocates one u64 per item).
fn uint_list(desc: &Value, key: &str) -> Result<Vec<u64>> {
    let items = field(desc, key, "an array", Value::as_array)?;
    items
        .iter()
        .map(|v| {
            v.as_u64().ok_or_else(|| {
                err!(
                    Format,
                    "descriptor '{key}' holds {}, expected unsigned integers",
                    v.type_name()
                )
            })
        })
        .collect()
}

/// What a descriptor says about the decoded array.
pub(super) struct Layout<'d> {
    pub(super) shape: Vec<u64>,
    /// The descriptor's dtype name, for messages.
    pub(super) dtype_name: &'d str,
    pub(super) dtype: DType,
    pub(super) logical: Option<&'static str>,
    pub(super) kind: Kind,
    /// Bytes per element.
    pub(super) width: u64,
    pub(super) numel: u64,
    /// `numel * width`, within `limits.max_decoded_size`.
    pub(super) decoded_length: u64,
    /// Whether the payload's elements are big-endian.
    pub(super) big: bool,
}

impl<'d> Layout<'d> {
    /// Reads the object type (only `ntensor`), shape, dtype and byte order of a
    /// descriptor, bounded by the rank and decoded-size limits.
    pub(super) fn read(desc: &'d Value, limits: &Limits) -> Result<Self> {
        let obj_type = text_field(desc, "type")?;
        if obj_type != "ntensor" {
            bail!(
                Unsupported,
                "object type '{obj_type}' is not supported (only 'ntensor')"
            );
        }
        let shape = shape_of(desc, limits.max_rank)?;
        let dtype_name = text_field(desc, "dtype")?;
        let Some((dtype, logical, kind, width)) = dtype_of(dtype_name) else {
            bail!(Unsupported, "dtype '{dtype_name}' is not supported");
        };
        let numel = shape
            .iter()
            .try_fold(1u64, |a, &d| a.checked_mul(d))
            .ok_or_else(|| err!(Format, "shape {shape:?} overflows u64"))?;
        let decoded_length = numel
            .checked_mul(width)
            .ok_or_else(|| err!(Format, "the byte size of shape {shape:?} overflows u64"))?;
        if decoded_length > limits.max_decoded_size {
            bail!(
                Limit,
                "decoded length {decoded_length} is over the decode limit {}",
                limits.max_decoded_size
            );
        }
        let big = match text_field(desc, "byte_order")? {
            "little" => false,
            "big" => true,
            other => bail!(Format, "byte_order '{other}' is not 'big' or 'little'"),
        };
        Ok(Layout {
            shape,
            dtype_name,
            dtype,
            logical,
            kind,
            width,
            numel,
            decoded_length,
            big,
        })
    }
}

/// A descriptor's shape, checked against `ndim`, `strides` (length only) and the rank
/// limit.
fn shape_of(desc: &Value, max_rank: usize) -> Result<Vec<u64>> {
    let shape = uint_list(desc, "shape")?;
    if shape.len() > max_rank {
        bail!(
            Limit,
            "rank {} is over the limit of {}",
            shape.len(),
            max_rank
        );
    }
    let ndim = uint_field(desc, "ndim")?;
    if ndim != shape.len() as u64 {
        bail!(
            Format,
            "ndim {ndim} but the shape {shape:?} has {} dimensions",
            shape.len()
        );
    }
    if let Some(strides) = desc.get("strides") {
        let n = strides.as_array().map(<[Value]>::len);
        if n != Some(shape.len()) {
            bail!(
                Format,
                "strides must be an array of {} integers",
                shape.len()
            );
        }
    }
    Ok(shape)
}
