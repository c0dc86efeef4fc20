//! Attribute values to write, with their types: `TypedValue`, made by a caller or copied
//! from a reader's `AttrValue` as it is, and written as plain CBOR plus the width record
//! (`Desc`) that makes a reader give back the same types.

use crate::error::{Result, bail};
use crate::value::cbor::Value;

use super::{AttrValue, Desc, ValueType};

/// An attribute value with the type the typed API reads back: every integer width,
/// f32 and f64, strings, bytes, arrays (of numbers, contiguous) and maps; what GGUF
/// key/values hold and more.
#[derive(Clone, Debug, PartialEq)]
pub enum TypedValue {
    /// No value (null).
    Null,
    /// false or true.
    Bool(bool),
    /// A signed 8-bit integer.
    I8(i8),
    /// A signed 16-bit integer.
    I16(i16),
    /// A signed 32-bit integer.
    I32(i32),
    /// A signed 64-bit integer.
    I64(i64),
    /// An unsigned 8-bit integer.
    U8(u8),
    /// An unsigned 16-bit integer.
    U16(u16),
    /// An unsigned 32-bit integer.
    U32(u32),
    /// An unsigned 64-bit integer.
    U64(u64),
    /// A 32-bit float.
    F32(f32),
    /// A 64-bit float.
    F64(f64),
    /// A string's bytes: UTF-8, except where a format allowed otherwise (GGUF); either
    /// way it reads back as a string.
    String(Vec<u8>),
    /// A byte string.
    Bytes(Vec<u8>),
    /// An array of one numeric type or of bools, contiguous: `data` holds the elements
    /// in this machine's byte order (bools as bytes 0 and 1). Empty, it still declares
    /// its element type.
    Numbers {
        /// The element type: a numeric type or `Bool`.
        elem: ValueType,
        /// The elements' bytes, back to back.
        data: Vec<u8>,
    },
    /// An array of any values. `elem` is the element type it declares when empty (GGUF
    /// declares one for every array); None otherwise.
    Array {
        /// The element type an empty array declares; None otherwise.
        elem: Option<ValueType>,
        /// The elements, in order.
        items: Vec<TypedValue>,
    },
    /// Entries in order; keys are text in every format but CBOR allows others.
    Map(Vec<(TypedValue, TypedValue)>),
}

impl TypedValue {
    /// A numeric (or bool) array from its elements' bytes in this machine's byte order;
    /// `InvalidArgument` for another element type, bytes that are not whole elements, or
    /// a bool byte other than 0 and 1.
    pub fn numbers(elem: ValueType, data: Vec<u8>) -> Result<TypedValue> {
        let Some(w) = elem.packed_width() else {
            bail!(
                InvalidArgument,
                "an array of contiguous numbers holds bools, integers or floats, not {elem}"
            );
        };
        if !data.len().is_multiple_of(w) {
            bail!(
                InvalidArgument,
                "{} bytes are not a whole number of {elem} elements",
                data.len()
            );
        }
        if elem == ValueType::Bool
            && let Some(i) = data.iter().position(|&b| b > 1)
        {
            bail!(
                InvalidArgument,
                "bool element {i} is {}, neither 0 nor 1",
                data[i]
            );
        }
        Ok(TypedValue::Numbers { elem, data })
    }

    /// A text string.
    pub fn text(s: &str) -> TypedValue {
        TypedValue::String(s.as_bytes().to_vec())
    }

    /// The type the typed API gives this value.
    pub fn value_type(&self) -> ValueType {
        use TypedValue as T;
        match self {
            T::Null => ValueType::Null,
            T::Bool(_) => ValueType::Bool,
            T::I8(_) => ValueType::I8,
            T::I16(_) => ValueType::I16,
            T::I32(_) => ValueType::I32,
            T::I64(_) => ValueType::I64,
            T::U8(_) => ValueType::U8,
            T::U16(_) => ValueType::U16,
            T::U32(_) => ValueType::U32,
            T::U64(_) => ValueType::U64,
            T::F32(_) => ValueType::F32,
            T::F64(_) => ValueType::F64,
            T::String(_) => ValueType::String,
            T::Bytes(_) => ValueType::Bytes,
            T::Numbers { .. } | T::Array { .. } => ValueType::Array,
            T::Map(_) => ValueType::Map,
        }
    }

    /// A copy of a value a reader gives, types as they are. `InvalidArgument` for a value
    /// with no typed equivalent (`ValueType::Other`: a CBOR simple value, an integer below
    /// -2^63), which can't be written back as it was.
    pub fn from_attr(v: AttrValue<'_>) -> Result<TypedValue> {
        use TypedValue as T;
        Ok(match v.value_type() {
            ValueType::Null => T::Null,
            ValueType::Bool => T::Bool(v.get()?),
            ValueType::I8 => T::I8(v.get()?),
            ValueType::I16 => T::I16(v.get()?),
            ValueType::I32 => T::I32(v.get()?),
            ValueType::I64 => T::I64(v.get()?),
            ValueType::U8 => T::U8(v.get()?),
            ValueType::U16 => T::U16(v.get()?),
            ValueType::U32 => T::U32(v.get()?),
            ValueType::U64 => T::U64(v.get()?),
            ValueType::F32 => T::F32(v.get()?),
            ValueType::F64 => T::F64(v.get()?),
            ValueType::String => T::String(v.string_bytes()?.to_vec()),
            ValueType::Bytes => T::Bytes(v.as_bytes()?.to_vec()),
            ValueType::Array => match v.array_data() {
                Ok((elem, data, count)) => {
                    let w = elem.packed_width().expect("packed types have a width");
                    let bytes = if count == 0 {
                        Vec::new()
                    } else {
                        // SAFETY: `count` elements of `w` bytes, owned by the tree.
                        unsafe { std::slice::from_raw_parts(data, count * w) }.to_vec()
                    };
                    T::Numbers { elem, data: bytes }
                }
                Err(_) => T::Array {
                    // Only an empty array's element type is declared; a full one's is its
                    // elements'.
                    elem: if v.is_empty()? { v.elem_type()? } else { None },
                    items: v
                        .elements()
                        .map(|e| e.and_then(TypedValue::from_attr))
                        .collect::<Result<_>>()?,
                },
            },
            ValueType::Map => T::Map(
                (0..v.len()?)
                    .map(|i| {
                        let (k, val) = v.entry(i)?;
                        Ok((TypedValue::from_attr(k)?, TypedValue::from_attr(val)?))
                    })
                    .collect::<Result<_>>()?,
            ),
            ValueType::Other => bail!(
                InvalidArgument,
                "attribute value of type other (a CBOR simple value or an integer below \
                 -2^63) has no typed equivalent to write"
            ),
        })
    }

    /// The value as plain CBOR, and the width record that gives its types back (None when
    /// CBOR's own types already are its types).
    pub(crate) fn encode(&self) -> (Value, Option<Desc>) {
        use TypedValue as T;
        let int = |v: i64| {
            if v < 0 {
                Value::Negative(!(v as u64))
            } else {
                Value::Unsigned(v as u64)
            }
        };
        let scalar = |t: ValueType| Some(Desc::Scalar(t));
        match self {
            T::Null => (Value::Null, None),
            T::Bool(b) => (Value::Bool(*b), None),
            T::I8(v) => (int(i64::from(*v)), scalar(ValueType::I8)),
            T::I16(v) => (int(i64::from(*v)), scalar(ValueType::I16)),
            T::I32(v) => (int(i64::from(*v)), scalar(ValueType::I32)),
            // CBOR reads a negative integer as i64 already.
            T::I64(v) => (int(*v), (*v >= 0).then_some(Desc::Scalar(ValueType::I64))),
            T::U8(v) => (Value::Unsigned(u64::from(*v)), scalar(ValueType::U8)),
            T::U16(v) => (Value::Unsigned(u64::from(*v)), scalar(ValueType::U16)),
            T::U32(v) => (Value::Unsigned(u64::from(*v)), scalar(ValueType::U32)),
            T::U64(v) => (Value::Unsigned(*v), None),
            T::F32(f) => (Value::Float(f64::from(*f)), scalar(ValueType::F32)),
            T::F64(f) => (Value::Float(*f), None),
            T::String(bytes) => match std::str::from_utf8(bytes) {
                Ok(s) => (Value::Text(s.to_owned()), None),
                // CBOR text must be UTF-8: kept as bytes, recorded as a string.
                Err(_) => (Value::Bytes(bytes.clone()), scalar(ValueType::String)),
            },
            T::Bytes(b) => (Value::Bytes(b.clone()), None),
            T::Numbers { elem, data } => {
                let w = elem.packed_width().expect("checked by TypedValue::numbers");
                let items: Vec<Value> = data
                    .chunks_exact(w)
                    .map(|b| number(*elem, b, int))
                    .collect();
                // A non-empty array reads back as its type without a record when CBOR's
                // types are its type: u64, f64, bool, or i64 when every element is
                // negative.
                let plain = !items.is_empty()
                    && match elem {
                        ValueType::U64 | ValueType::F64 | ValueType::Bool => true,
                        ValueType::I64 => items.iter().all(|v| matches!(v, Value::Negative(_))),
                        _ => false,
                    };
                let desc = (!plain).then(|| Desc::Elements(Box::new(Desc::Scalar(*elem))));
                (Value::Array(items), desc)
            }
            T::Array { elem, items } => {
                let (values, descs): (Vec<Value>, Vec<Option<Desc>>) =
                    items.iter().map(TypedValue::encode).unzip();
                let first = items.first().map(TypedValue::value_type);
                let desc = if items.is_empty() {
                    elem.map(|e| Desc::Elements(Box::new(declared_record(e))))
                } else if descs.iter().all(Option::is_none) {
                    None
                } else if let Some(t) = first.filter(|t| {
                    !matches!(t, ValueType::Array | ValueType::Map)
                        && items.iter().all(|i| i.value_type() == *t)
                }) {
                    // Scalars of one type: one record for all (on an element CBOR reads
                    // as that type anyway, such as a negative i64, it changes nothing).
                    Some(Desc::Elements(Box::new(Desc::Scalar(t))))
                } else if descs[0].as_ref().is_some_and(Desc::is_text)
                    && descs.iter().all(|d| *d == descs[0])
                {
                    descs[0].clone().map(|d| Desc::Elements(Box::new(d)))
                } else {
                    Some(Desc::Items(descs))
                };
                (Value::Array(values), desc)
            }
            T::Map(pairs) => {
                let mut keys = Vec::new();
                let entries = pairs
                    .iter()
                    .map(|(k, v)| {
                        let (key, _) = k.encode();
                        let (value, desc) = v.encode();
                        if let (Some(d), Value::Text(t)) = (desc, &key) {
                            keys.push((t.as_bytes().to_vec(), d));
                        }
                        (key, value)
                    })
                    .collect();
                keys.sort_by(|a, b| a.0.cmp(&b.0));
                keys.dedup_by(|b, a| a.0 == b.0);
                (
                    Value::Map(entries),
                    (!keys.is_empty()).then_some(Desc::Keys(keys)),
                )
            }
        }
    }
}

/// One element of a contiguous array as CBOR.
fn number(elem: ValueType, b: &[u8], int: impl Fn(i64) -> Value) -> Value {
    let arr = |n: usize| -> [u8; 8] {
        let mut a = [0u8; 8];
        a[..n].copy_from_slice(&b[..n]);
        a
    };
    match elem {
        ValueType::Bool => Value::Bool(b[0] != 0),
        ValueType::I8 => int(i64::from(b[0] as i8)),
        ValueType::I16 => int(i64::from(i16::from_ne_bytes([b[0], b[1]]))),
        ValueType::I32 => int(i64::from(i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))),
        ValueType::I64 => int(i64::from_ne_bytes(arr(8))),
        ValueType::U8 => Value::Unsigned(u64::from(b[0])),
        ValueType::U16 => Value::Unsigned(u64::from(u16::from_ne_bytes([b[0], b[1]]))),
        ValueType::U32 => Value::Unsigned(u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))),
        ValueType::U64 => Value::Unsigned(u64::from_ne_bytes(arr(8))),
        ValueType::F32 => Value::Float(f64::from(f32::from_ne_bytes([b[0], b[1], b[2], b[3]]))),
        _ => Value::Float(f64::from_ne_bytes(arr(8))),
    }
}

/// The record of an element type an empty array declares ("array" and "map" too).
fn declared_record(e: ValueType) -> Desc {
    Desc::Scalar(e)
}
