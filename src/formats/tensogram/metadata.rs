//! Metadata, preceder, index and hash frames as their CBOR bytes, never as trees: opening
//! a file with a large metadata frame costs the frame's bytes and the attributes made from
//! them (issue 14: at most 3 times the frame), however small its items are.
//!
//! A frame's bytes are validated once (well-formed, within the depth limit, one map, no
//! trailing bytes). Metadata kept as attributes is in the deterministic encoding
//! (`cbor::encode`: definite lengths, shortest heads and floats), which Tensogram writers
//! produce already (the wire format asks for RFC 8949 deterministic encoding); a frame
//! that is not is decoded (within the tree budget) and encoded again, once, so the
//! attributes are exactly the bytes a tree would have encoded to. The rest reads the bytes
//! with `cbor::Cursor`: a map's value by key, an array's items, a map's entries.

use std::borrow::Cow;

use ciborium_ll::{Encoder, Header};

use crate::cbor::{self, Cursor, DecodeError, Len};
use crate::error::{Result, bail};

/// Why a frame's CBOR is refused, positioned at file offset `at`.
fn positioned(e: DecodeError, what: &str, at: u64) -> crate::Error {
    e.positioned(what, at)
}

/// Validates `bytes` as exactly one CBOR item nested at most `depth` deep (read from file
/// offset `at`; `what` names it in errors): the checks a decode makes, without a tree.
pub(super) fn validate(bytes: &[u8], at: u64, depth: usize, what: &str) -> Result<()> {
    let used = cbor::validate_prefix(bytes, depth).map_err(|e| positioned(e, what, at))?;
    if used != bytes.len() {
        return Err(positioned(
            DecodeError {
                offset: used,
                message: "trailing bytes after the item".into(),
                too_deep: false,
            },
            what,
            at,
        ));
    }
    Ok(())
}

/// The CBOR type name of the (valid) item `bytes` starts with, as `Value::type_name`.
pub(super) fn type_name(bytes: &[u8]) -> &'static str {
    Cursor::new(bytes, usize::MAX).peek_type()
}

/// Whether the valid item `bytes` is already in the deterministic encoding `cbor::encode`
/// writes: every head as ciborium-ll writes it again (shortest argument, shortest exact
/// float, NaN as f97e00), every length definite. One pass, no allocation.
pub(super) fn is_deterministic(bytes: &[u8]) -> bool {
    let mut c = Cursor::new(bytes, usize::MAX);
    let mut scratch = Vec::with_capacity(9);
    let mut left: u64 = 1;
    while left > 0 {
        left -= 1;
        let start = c.position();
        let Ok(header) = c.head() else {
            return false;
        };
        let header = match header {
            Header::Float(f) if f.is_nan() => Header::Float(f64::NAN),
            h => h,
        };
        scratch.clear();
        if Encoder::from(&mut scratch).push(header).is_err()
            || scratch[..] != bytes[start..c.position()]
        {
            return false;
        }
        match header {
            Header::Bytes(Some(len)) | Header::Text(Some(len)) => {
                if c.string(matches!(header, Header::Text(_)), Some(len))
                    .is_err()
                {
                    return false;
                }
            }
            Header::Array(Some(n)) => left += n as u64,
            Header::Map(Some(n)) => left += 2 * n as u64,
            Header::Tag(_) => left += 1,
            Header::Positive(_) | Header::Negative(_) | Header::Float(_) | Header::Simple(_) => {}
            // Indefinite lengths, breaks.
            _ => return false,
        }
    }
    c.position() == bytes.len()
}

/// A validated CBOR map of a metadata or preceder frame in the deterministic encoding:
/// `bytes` as they are when they already are, else decoded (within the tree budget) and
/// encoded again.
pub(super) fn deterministic<'s>(
    bytes: Cow<'s, [u8]>,
    at: u64,
    depth: usize,
    what: &str,
) -> Result<Cow<'s, [u8]>> {
    if is_deterministic(&bytes) {
        return Ok(bytes);
    }
    let budget = super::frames::tree_budget(bytes.len());
    let (value, _) =
        cbor::decode_within(&bytes, depth, budget).map_err(|e| positioned(e, what, at))?;
    drop(bytes);
    Ok(Cow::Owned(cbor::to_vec(&value)))
}

/// Reads the map `bytes` (valid CBOR) entry by entry: key and value bytes.
pub(super) struct Entries<'a> {
    cursor: Cursor<'a>,
    len: Len,
}

impl<'a> Entries<'a> {
    /// The entries of `bytes`, None when it is not a map.
    pub(super) fn of(bytes: &'a [u8]) -> Option<Entries<'a>> {
        let mut cursor = Cursor::new(bytes, usize::MAX);
        let len = cursor.map(0).ok()??;
        Some(Entries { cursor, len })
    }
}

impl<'a> Iterator for Entries<'a> {
    type Item = (&'a [u8], &'a [u8]);
    fn next(&mut self) -> Option<Self::Item> {
        if !self.cursor.more(&mut self.len).ok()? {
            return None;
        }
        let key = self.cursor.capture(1).ok()?;
        let value = self.cursor.capture(1).ok()?;
        Some((key, value))
    }
}

/// Reads the array `bytes` (valid CBOR) item by item.
pub(super) struct Items<'a> {
    cursor: Cursor<'a>,
    len: Len,
}

impl<'a> Items<'a> {
    /// The items of `bytes`, None when it is not an array.
    pub(super) fn of(bytes: &'a [u8]) -> Option<Items<'a>> {
        let mut cursor = Cursor::new(bytes, usize::MAX);
        let len = cursor.array(0).ok()??;
        Some(Items { cursor, len })
    }
}

impl<'a> Iterator for Items<'a> {
    type Item = &'a [u8];
    fn next(&mut self) -> Option<&'a [u8]> {
        if !self.cursor.more(&mut self.len).ok()? {
            return None;
        }
        self.cursor.capture(1).ok()
    }
}

/// The text of the valid item `bytes`, if it is a text string.
pub(super) fn text(bytes: &[u8]) -> Option<Cow<'_, str>> {
    Cursor::new(bytes, usize::MAX).text().ok()?
}

/// The unsigned integer `bytes` holds, if it is one.
pub(super) fn unsigned(bytes: &[u8]) -> Option<u64> {
    Cursor::new(bytes, usize::MAX).unsigned().ok()?
}

/// The value of the first entry of the map `bytes` whose key is the text `key` (as
/// `Value::get`); None when there is none or `bytes` is not a map.
pub(super) fn get<'a>(bytes: &'a [u8], key: &str) -> Option<&'a [u8]> {
    Entries::of(bytes)?
        .find(|(k, _)| text(k).is_some_and(|t| t == key))
        .map(|(_, v)| v)
}

/// Refuses a frame's CBOR that is not a map.
pub(super) fn expect_map(bytes: &[u8], what: &str) -> Result<()> {
    if bytes.first().is_none_or(|b| b >> 5 != 5) {
        bail!(
            Format,
            "the {what}'s CBOR is {}, expected a map",
            type_name(bytes)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cbor::Value;

    #[test]
    fn deterministic_bytes_are_what_a_tree_encodes_to() {
        let t = |s: &str| Value::Text(s.into());
        let v = Value::Map(vec![
            (
                t("a"),
                Value::Array(vec![Value::Unsigned(1), Value::Float(1.5)]),
            ),
            (t("b"), Value::Tag(1, Box::new(Value::Negative(300)))),
            (t("c"), Value::Float(f64::NAN)),
            (t("d"), Value::Bytes(vec![1, 2])),
            (t("e"), Value::Null),
            (t("f"), Value::Float(0.1)),
        ]);
        let bytes = cbor::to_vec(&v);
        assert!(is_deterministic(&bytes));
        // Not shortest: an integer in two bytes, a float in eight, indefinite lengths.
        for other in [
            &[0x18, 0x05][..],
            &[0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0],
            &[0x9f, 0x01, 0xff],
            &[0x7f, 0x61, b'a', 0xff],
            &[0xfa, 0x7f, 0xc0, 0, 0], // NaN as f32
        ] {
            assert!(!is_deterministic(other), "{other:x?}");
            let d = deterministic(Cow::Borrowed(other), 0, 8, "x").unwrap();
            let again = cbor::to_vec(&cbor::decode(other, 8).unwrap());
            assert_eq!(&d[..], &again[..]);
            assert!(is_deterministic(&d));
        }
        assert_eq!(get(&bytes, "b"), Some(&bytes[10..14]));
        assert_eq!(Entries::of(&bytes).unwrap().count(), 6);
        let a = get(&bytes, "a").unwrap();
        assert_eq!(
            Items::of(a).unwrap().collect::<Vec<_>>(),
            [&[1][..], &[0xf9, 0x3e, 0]]
        );
        assert_eq!(unsigned(&[0x18, 0x05]), Some(5));
        assert_eq!(text(&[0x7f, 0x61, b'a', 0xff]).as_deref(), Some("a"));
        assert_eq!(type_name(&[0xf9, 0, 0]), "float");
        assert!(expect_map(&bytes, "frame").is_ok());
        assert!(expect_map(&[0x80], "frame").is_err());
    }
}
