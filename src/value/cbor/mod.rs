//! CBOR (RFC 8949) for manifests and attributes: the value type, a strict and bounded
//! decoder, a pull cursor that parses a known schema in one pass, and a deterministic
//! encoder.
//!
//! Item heads (integer and length arguments of every width, half/single/double floats,
//! simple values, tags, breaks, reserved and invalid encodings) are decoded and encoded
//! by `ciborium-ll`. What stays here is what that crate leaves to its caller: the walk
//! over nested items under a depth limit, string bodies (borrowed from the input, UTF-8
//! checked), and the well-formedness rules `ciborium-ll` does not check: a simple value
//! below 32 in the two-byte form, and chunks of an indefinite string that are not
//! definite strings of the same type.
//!
//! The decoder never panics on hostile input: nesting is limited by `max_depth`, every
//! declared length is checked against the remaining input, and no declared count sizes
//! an allocation: containers grow by the items actually read.
//!
//! `ciborium::Value` is not used as the value type: it has no variant for `undefined` or
//! for simple values other than false, true and null, which files may contain.

use std::fmt;

mod cursor;
pub(crate) mod deterministic;
pub(crate) mod item;
mod pull;
pub(crate) mod schema;
mod write;

pub(crate) use cursor::Cursor;
pub(crate) use pull::{Len, simple};
use pull::{Pull, fail};
pub(crate) use write::Writer;

/// A CBOR data item.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    /// Major type 0: a non-negative integer.
    Unsigned(u64),
    /// Major type 1: the integer `-1 - n`, so `Negative(u64::MAX)` is -2^64.
    Negative(u64),
    /// Half, single and double precision floats all decode to this.
    Float(f64),
    /// Major type 3: a UTF-8 text string.
    Text(String),
    /// Major type 2: a byte string.
    Bytes(Vec<u8>),
    /// Simple values 20 (false) and 21 (true).
    Bool(bool),
    /// Simple value 22.
    Null,
    /// Simple value 23.
    Undefined,
    /// Any other simple value (0..=19 or 32..=255).
    Simple(u8),
    /// Major type 4.
    Array(Vec<Value>),
    /// Major type 5, entries in wire order.
    Map(Vec<(Value, Value)>),
    /// Major type 6: a tag number and the tagged item.
    Tag(u64, Box<Value>),
}

/// A decoding failure and the input offset where it was detected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// Byte offset in the input where decoding went wrong.
    pub offset: usize,
    /// Description of the problem.
    pub message: String,
    /// True when the input exceeds a limit rather than being malformed: it nests deeper
    /// than the depth limit, or its tree would take more memory than the decoder's budget.
    pub too_deep: bool,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "CBOR error at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for DecodeError {}

impl DecodeError {
    /// The library error for this failure in `what` (whose bytes start at file offset
    /// `base`), positioned in the file: too deep is a `Limit`, anything else `Format`.
    pub(crate) fn positioned(self, what: &str, base: u64) -> crate::error::Error {
        let kind = if self.too_deep {
            crate::error::ErrorKind::Limit
        } else {
            crate::error::ErrorKind::Format
        };
        crate::error::Error::new(
            kind,
            format!(
                "{what}: CBOR error at file offset {}: {}",
                base + self.offset as u64,
                self.message
            ),
        )
    }
}

/// Default nesting limit; arrays, maps and tags each count as one level.
pub const DEFAULT_MAX_DEPTH: usize = 128;

/// Decodes exactly one CBOR item that must span the whole input (trailing bytes are an error).
pub fn decode(input: &[u8], max_depth: usize) -> Result<Value, DecodeError> {
    let (value, used) = decode_prefix(input, max_depth)?;
    if used != input.len() {
        return fail(used, "trailing bytes after the item");
    }
    Ok(value)
}

/// Decodes one item from the front, returns it and the number of bytes consumed.
pub fn decode_prefix(input: &[u8], max_depth: usize) -> Result<(Value, usize), DecodeError> {
    decode_within(input, max_depth, usize::MAX)
}

/// `decode_prefix` whose tree may take at most `budget` bytes (each item counts
/// `size_of::<Value>()`, texts and byte strings their length too): a tree of a million
/// one-byte items takes 32 times the input, so callers decoding what a file holds pass a
/// budget proportional to its bytes. Past it, a `too_deep` (limit) error.
pub(crate) fn decode_within(
    input: &[u8],
    max_depth: usize,
    budget: usize,
) -> Result<(Value, usize), DecodeError> {
    let mut pull = Pull::new(input, max_depth);
    pull.budget = budget;
    pull.budget_total = budget;
    let value = pull.item(0)?;
    Ok((value, pull.pos))
}

/// Validates one item (heads, UTF-8, breaks, depth) without building it; returns the
/// bytes it takes.
pub(crate) fn validate_prefix(input: &[u8], max_depth: usize) -> Result<usize, DecodeError> {
    let mut pull = Pull::new(input, max_depth);
    pull.skip(0)?;
    Ok(pull.pos)
}

/// Appends the deterministic encoding: definite lengths, shortest heads and floats (NaN
/// as f97e00), maps in stored order.
///
/// `Simple(n)` is only meaningful for n in 0..=19 or 32..=255; other values produce other items or invalid bytes.
pub fn encode(value: &Value, out: &mut Vec<u8>) {
    let mut w = Writer::over(std::mem::take(out));
    w.value(value);
    *out = w.into_bytes();
}

/// Encodes a value into a new buffer (see [`encode`]).
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut w = Writer::new();
    w.value(value);
    w.into_bytes()
}

impl Value {
    /// The string if this is `Text`.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Value::Text(s) => Some(s),
            _ => None,
        }
    }

    /// The integer if this is `Unsigned`.
    pub fn as_u64(&self) -> Option<u64> {
        match self {
            Value::Unsigned(n) => Some(*n),
            _ => None,
        }
    }

    /// The items if this is an `Array`.
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(items) => Some(items),
            _ => None,
        }
    }

    /// The entries if this is a `Map`.
    pub fn as_map(&self) -> Option<&[(Value, Value)]> {
        match self {
            Value::Map(pairs) => Some(pairs),
            _ => None,
        }
    }

    /// Map lookup by text key (first match); None if self is not a map or the key is absent.
    pub fn get(&self, key: &str) -> Option<&Value> {
        self.as_map()?
            .iter()
            .find(|(k, _)| k.as_text() == Some(key))
            .map(|(_, v)| v)
    }

    /// Whether this is a `Map`.
    pub fn is_map(&self) -> bool {
        matches!(self, Value::Map(_))
    }

    /// A short name of the variant for error messages.
    pub fn type_name(&self) -> &'static str {
        match self {
            Value::Unsigned(_) => "unsigned integer",
            Value::Negative(_) => "negative integer",
            Value::Float(_) => "float",
            Value::Text(_) => "text",
            Value::Bytes(_) => "bytes",
            Value::Bool(_) => "bool",
            Value::Null => "null",
            Value::Undefined => "undefined",
            Value::Simple(_) => "simple value",
            Value::Array(_) => "array",
            Value::Map(_) => "map",
            Value::Tag(..) => "tag",
        }
    }
}

#[cfg(test)]
mod tests;
