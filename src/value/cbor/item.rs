//! One encoded item read as bytes, never as a tree: its type, a map's entries, an
//! array's items, a map's value by key, a text or an unsigned integer. For items already
//! validated (Tensogram's frames, the attributes the library wrote itself): a malformed
//! one reads as absent, never as an error or a panic.

use std::borrow::Cow;

use super::pull::{Len, argument};
use super::{Cursor, DecodeError};

/// The CBOR type name of the item `bytes` starts with, as `Value::type_name`.
pub(crate) fn type_name(bytes: &[u8]) -> &'static str {
    Cursor::new(bytes, usize::MAX).peek_type()
}

/// Checks that `bytes` is exactly one well-formed item nested at most `depth` deep: the
/// checks a decode makes, without a tree.
pub(crate) fn validate(bytes: &[u8], depth: usize) -> Result<(), DecodeError> {
    let used = super::validate_prefix(bytes, depth)?;
    if used != bytes.len() {
        return super::fail(used, "trailing bytes after the item");
    }
    Ok(())
}

/// Reads the map `bytes` entry by entry: key and value bytes.
pub(crate) struct Entries<'a> {
    cursor: Cursor<'a>,
    len: Len,
}

impl<'a> Entries<'a> {
    /// The entries of `bytes`, None when it is not a map.
    pub(crate) fn of(bytes: &'a [u8]) -> Option<Entries<'a>> {
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

/// Reads the array `bytes` item by item.
pub(crate) struct Items<'a> {
    cursor: Cursor<'a>,
    len: Len,
}

impl<'a> Items<'a> {
    /// The items of `bytes`, None when it is not an array.
    pub(crate) fn of(bytes: &'a [u8]) -> Option<Items<'a>> {
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

/// The text of the item `bytes`, if it is a text string.
pub(crate) fn text(bytes: &[u8]) -> Option<Cow<'_, str>> {
    Cursor::new(bytes, usize::MAX).text().ok()?
}

/// The unsigned integer `bytes` holds, if it is one.
pub(crate) fn unsigned(bytes: &[u8]) -> Option<u64> {
    Cursor::new(bytes, usize::MAX).unsigned().ok()?
}

/// The value of the first entry of the map `bytes` whose key is the text `key` (as
/// `Value::get`); None when there is none or `bytes` is not a map.
pub(crate) fn get<'a>(bytes: &'a [u8], key: &str) -> Option<&'a [u8]> {
    Entries::of(bytes)?
        .find(|(k, _)| text(k).is_some_and(|t| t == key))
        .map(|(_, v)| v)
}

/// The body of the definite text or byte string whose head starts `bytes` (as `Writer`
/// writes one), unchecked; None for any other item or a body past the end.
pub(crate) fn string_body(bytes: &[u8]) -> Option<&[u8]> {
    match argument(bytes, 0)? {
        (2 | 3, len, used) => bytes.get(used..used.checked_add(usize::try_from(len).ok()?)?),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::cbor::{Value, to_vec};

    #[test]
    fn items_are_read_from_their_bytes() {
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
        let bytes = to_vec(&v);
        assert_eq!(get(&bytes, "b"), Some(&bytes[10..14]));
        assert_eq!(get(&bytes, "z"), None);
        assert_eq!(Entries::of(&bytes).unwrap().count(), 6);
        let a = get(&bytes, "a").unwrap();
        assert_eq!(
            Items::of(a).unwrap().collect::<Vec<_>>(),
            [&[1][..], &[0xf9, 0x3e, 0]]
        );
        assert!(Items::of(&bytes).is_none());
        assert!(Entries::of(a).is_none());
        assert_eq!(unsigned(&[0x18, 0x05]), Some(5));
        assert_eq!(unsigned(&[0x20]), None);
        assert_eq!(text(&[0x7f, 0x61, b'a', 0xff]).as_deref(), Some("a"));
        assert_eq!(type_name(&[0xf9, 0, 0]), "float");
        assert_eq!(string_body(&[0x62, b'h', b'i', 0]), Some(&b"hi"[..]));
        assert_eq!(string_body(&[0x78, 2, b'h', b'i']), Some(&b"hi"[..]));
        assert_eq!(string_body(&[0x42, 1]), None);
        assert_eq!(string_body(&[0x01]), None);
        assert!(validate(&bytes, 2).is_ok());
        assert_eq!(validate(&[0x01, 0x02], 2).unwrap_err().offset, 1);
        assert!(validate(&[0x81, 0x81, 0x00], 1).unwrap_err().too_deep);
    }
}
