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
        scratch.clear();
        put(&mut scratch, header);
        if scratch[..] != bytes[start..c.position()] {
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
/// `bytes` as they are when they already are, else written again (`transcode`).
pub(super) fn deterministic<'s>(bytes: Cow<'s, [u8]>, at: u64) -> Result<Cow<'s, [u8]>> {
    if is_deterministic(&bytes) {
        return Ok(bytes);
    }
    transcode(&bytes)
        .map(Cow::Owned)
        .map_err(|e| positioned(e, "frame", at))
}

/// Appends `header` as `cbor::encode` writes it (NaN as f97e00).
fn put(out: &mut Vec<u8>, header: Header) {
    let header = match header {
        Header::Float(f) if f.is_nan() => Header::Float(f64::NAN),
        h => h,
    };
    // Writing into a Vec cannot fail.
    let _ = Encoder::from(out).push(header);
}

/// A container being written again: what is left of it, and for an indefinite one, where
/// its head goes once its items are counted.
struct Open {
    len: Len,
    head_at: Option<usize>,
    major: u8,
    items: u64,
}

/// The valid item `bytes` in the deterministic encoding, written item by item as
/// `cbor::encode` writes the tree `cbor::decode` makes of it, without the tree: heads
/// shortest, indefinite strings joined, an indefinite container's head put in front of
/// its items once they are counted (moving the bytes written since: at most the input
/// times its nesting, for the rare file that is not deterministic already). Memory: the
/// output, about the input's size.
pub(super) fn transcode(bytes: &[u8]) -> std::result::Result<Vec<u8>, DecodeError> {
    let mut c = Cursor::new(bytes, usize::MAX);
    let mut out = Vec::new();
    out.try_reserve(bytes.len()).map_err(|_| DecodeError {
        offset: 0,
        message: format!("could not allocate {} bytes", bytes.len()),
        too_deep: true,
    })?;
    let mut stack = vec![Open {
        len: Len::Definite(1),
        head_at: None,
        major: 4,
        items: 0,
    }];
    while let Some(top) = stack.last_mut() {
        if !c.more(&mut top.len)? {
            let done = stack.pop().expect("a container");
            if let Some(at) = done.head_at {
                let count = if done.major == 5 {
                    done.items / 2
                } else {
                    done.items
                };
                let mut head = Vec::with_capacity(9);
                cbor::encode_head(&mut head, done.major, count);
                out.splice(at..at, head);
            }
            continue;
        }
        top.items += 1;
        let start = c.position();
        let header = c.head()?;
        let definite = |n: usize, per: u64| Open {
            len: Len::Definite(n as u64 * per),
            head_at: None,
            major: 4,
            items: 0,
        };
        match header {
            Header::Bytes(len) | Header::Text(len) => {
                let text = matches!(header, Header::Text(_));
                let body = c.string(text, len)?;
                cbor::encode_head(&mut out, if text { 3 } else { 2 }, body.len() as u64);
                out.extend_from_slice(&body);
            }
            Header::Array(Some(n)) => {
                put(&mut out, header);
                stack.push(definite(n, 1));
            }
            Header::Map(Some(n)) => {
                put(&mut out, header);
                stack.push(definite(n, 2));
            }
            Header::Array(None) | Header::Map(None) => stack.push(Open {
                len: Len::Indefinite,
                head_at: Some(out.len()),
                major: bytes[start] >> 5,
                items: 0,
            }),
            Header::Tag(_) => {
                put(&mut out, header);
                stack.push(definite(1, 1));
            }
            Header::Break => {
                return Err(DecodeError {
                    offset: start,
                    message: "unexpected break".into(),
                    too_deep: false,
                });
            }
            h => put(&mut out, h),
        }
    }
    Ok(out)
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
            let d = deterministic(Cow::Borrowed(other), 0).unwrap();
            let again = cbor::to_vec(&cbor::decode(other, 8).unwrap());
            assert_eq!(&d[..], &again[..]);
            assert!(is_deterministic(&d));
        }
        // Nested indefinite containers and strings, and the heads in front of them.
        let nested = [
            0xbf, 0x7f, 0x61, b'k', 0x60, 0xff, 0x9f, 0x9f, 0xff, 0xbf, 0x01, 0x5f, 0x41, 9, 0x42,
            8, 7, 0xff, 0xff, 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
        ];
        let again = cbor::to_vec(&cbor::decode(&nested, 8).unwrap());
        assert_eq!(transcode(&nested).unwrap(), again);
        assert_eq!(
            again,
            [
                0xa1, 0x61, b'k', 0x83, 0x80, 0xa1, 0x01, 0x43, 9, 8, 7, 0xf9, 0x3e, 0
            ]
        );
        let many: Vec<u8> = [0x9f]
            .into_iter()
            .chain([0x18, 0x18].repeat(300))
            .chain([0xff])
            .collect();
        let again = cbor::to_vec(&cbor::decode(&many, 8).unwrap());
        assert_eq!(transcode(&many).unwrap(), again);
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

    /// Random mutations of a few items: every input that decodes is written again as its
    /// tree encodes, and is deterministic exactly when it is those bytes.
    #[test]
    fn mutations_write_again_as_trees_do() {
        let seeds: [&[u8]; 3] = [
            &[
                0xbf, 0x7f, 0x61, b'k', 0x60, 0xff, 0x9f, 0x9f, 0xff, 0xbf, 0x01, 0x5f, 0x41, 9,
                0x42, 8, 7, 0xff, 0xff, 0xfb, 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0xff, 0xff,
            ],
            &[
                0xa3, 0x61, b'a', 0x82, 0x18, 0x20, 0xf9, 0x3e, 0, 0x61, b'b', 0xc1, 0x39, 1, 0x2b,
                0x61, b'c', 0x9f, 0xf6, 0xf7, 0xf4, 0xfa, 0x7f, 0xc0, 0, 0, 0xff,
            ],
            &[0xa1, 0x61, b'x', 0x5f, 0x42, 1, 2, 0x40, 0xff],
        ];
        let mut x = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        let mut decoded = 0;
        for round in 0..20_000 {
            let mut b = seeds[round % seeds.len()].to_vec();
            for _ in 0..1 + next() % 3 {
                let at = next() as usize % b.len();
                b[at] = next() as u8;
            }
            let Ok(v) = cbor::decode(&b, 16) else {
                continue;
            };
            decoded += 1;
            let again = cbor::to_vec(&v);
            assert_eq!(transcode(&b).unwrap(), again, "{b:x?}");
            assert_eq!(is_deterministic(&b), b == again, "{b:x?}");
        }
        assert!(decoded > 1000, "{decoded}");
    }
}
