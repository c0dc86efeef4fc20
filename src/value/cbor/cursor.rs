//! The pull cursor schema parsers (manifests, attribute trees, Tensogram metadata) walk
//! CBOR with, on the one reader of `pull`.

use std::borrow::Cow;

use ciborium_ll::Header;

use super::DecodeError;
use super::pull::{Len, Pull, argument, fail, short_head};

/// A pull reader for parsing a known schema straight from CBOR bytes, so that no tree of
/// the whole document is ever built: memory stays proportional to what the caller keeps.
/// Subtrees the caller doesn't interpret are validated and skipped, or captured as bytes.
pub(crate) struct Cursor<'a> {
    pull: Pull<'a>,
}

impl<'a> Cursor<'a> {
    pub(crate) fn new(input: &'a [u8], max_depth: usize) -> Self {
        Cursor {
            pull: Pull::new(input, max_depth),
        }
    }

    /// Byte offset of the next item.
    pub(crate) fn position(&self) -> usize {
        self.pull.pos
    }

    /// Bytes left after the next item's start.
    pub(crate) fn remaining(&self) -> usize {
        self.pull.remaining()
    }

    /// Fast paths for the items of a canonical manifest (issue 19: through the general
    /// calls, each item of a 50,000-object manifest paid for moving results that carry a
    /// `DecodeError`). Each consumes its item and returns it, or returns None having
    /// consumed nothing: the general call then reads the item or reports what is wrong.
    ///
    /// An unsigned integer whose argument is in its head or the 1, 2, 4 or 8 bytes after.
    #[inline]
    pub(crate) fn take_unsigned(&mut self) -> Option<u64> {
        match argument(self.pull.input, self.pull.pos)? {
            (0, n, used) => {
                self.pull.pos += used;
                Some(n)
            }
            _ => None,
        }
    }

    /// A definite text string shorter than 256 bytes, borrowed, if it is UTF-8.
    #[inline]
    pub(crate) fn take_short_text(&mut self) -> Option<&'a str> {
        let (input, pos) = (self.pull.input, self.pull.pos);
        // Only heads 0x60 to 0x78 qualify: filtered first, which lets `argument` fold away.
        if !(0x60..=0x78).contains(input.get(pos)?) {
            return None;
        }
        let (_, len, used) = argument(input, pos)?;
        let len = len as usize;
        // At most 255 bytes (a head of 1 or 2 bytes): no overflow.
        let start = pos + used;
        let bytes = input.get(start..start + len)?;
        // ASCII first: `from_utf8` costs more to set up than a short name takes to scan.
        let text = if bytes.is_ascii() {
            // SAFETY: ASCII is UTF-8.
            unsafe { std::str::from_utf8_unchecked(bytes) }
        } else {
            std::str::from_utf8(bytes).ok()?
        };
        self.pull.pos = start + len;
        Some(text)
    }

    /// An array (major 4) or map (major 5) of fewer than 24 items, counted against the
    /// depth limit (`depth`: its parent's) and its length against the bytes left.
    #[inline]
    pub(crate) fn take_short_container(&mut self, major: u8, depth: usize) -> Option<Len> {
        // Only heads with the count in the initial byte qualify: filtered first, which lets
        // `argument` fold away.
        let first = *self.pull.input.get(self.pull.pos)?;
        if first >> 5 != major || first & 0x1f >= 24 {
            return None;
        }
        let (_, n, used) = argument(self.pull.input, self.pull.pos)?;
        // The checks of `enter` and `declared`, without building their errors.
        let left = (self.pull.remaining() - used) as u64;
        if depth >= self.pull.max_depth || n.saturating_mul(u64::from(major - 3)) > left {
            return None;
        }
        self.pull.pos += used;
        Some(Len::Definite(n))
    }

    /// The schema key the next item spells, if it is a definite text string of fewer than
    /// 24 bytes equal to one of `schema` (looked for from `from` on, then before it):
    /// consumed, and its index returned. Nothing consumed otherwise. A cheap match for the
    /// keys of a known schema, compared on their bytes without decoding them.
    #[inline(always)]
    pub(crate) fn take_schema_key(&mut self, schema: &[&str], from: usize) -> Option<usize> {
        let rest = &self.pull.input[self.pull.pos..];
        let head = *rest.first()?;
        if !(0x60..0x78).contains(&head) {
            return None;
        }
        let n = usize::from(head & 0x1f);
        let body = rest.get(1..=n)?;
        let from = from.min(schema.len());
        for slot in (from..schema.len()).chain(0..from) {
            let k = schema[slot].as_bytes();
            if k.len() == n && short_eq(body, k) {
                self.pull.pos += 1 + n;
                return Some(slot);
            }
        }
        None
    }

    /// The next byte, if any.
    #[inline]
    pub(crate) fn peek_byte(&self) -> Option<u8> {
        self.pull.input.get(self.pull.pos).copied()
    }

    /// The whole input.
    pub(crate) fn bytes(&self) -> &'a [u8] {
        self.pull.input
    }

    /// Errors unless every byte was consumed.
    pub(crate) fn finish(&self) -> Result<(), DecodeError> {
        if self.pull.pos != self.pull.input.len() {
            return fail(self.pull.pos, "trailing bytes after the item");
        }
        Ok(())
    }

    fn peek_major(&self) -> Result<u8, DecodeError> {
        match self.peek_byte() {
            Some(b) => Ok(b >> 5),
            None => fail(self.pull.pos, "unexpected end of input"),
        }
    }

    /// The CBOR type name of the next item, for error messages.
    pub(crate) fn peek_type(&self) -> &'static str {
        match self.peek_byte() {
            None => "end of input",
            Some(b) => match b >> 5 {
                0 => "unsigned integer",
                1 => "negative integer",
                2 => "bytes",
                3 => "text",
                4 => "array",
                5 => "map",
                6 => "tag",
                _ => match b {
                    0xf4 | 0xf5 => "bool",
                    0xf6 => "null",
                    0xf7 => "undefined",
                    0xf9..=0xfb => "float",
                    _ => "simple value",
                },
            },
        }
    }

    /// True (and consumed) when the next item is null or undefined.
    pub(crate) fn take_null(&mut self) -> bool {
        if matches!(self.peek_byte(), Some(0xf6 | 0xf7)) {
            self.pull.pos += 1;
            return true;
        }
        false
    }

    /// Starts a container of major type 4 (array) or 5 (map); None if the next item is
    /// something else (nothing consumed then). Counts against the depth limit via `depth`.
    fn open(&mut self, major: u8, depth: usize) -> Result<Option<Len>, DecodeError> {
        if self.peek_major()? != major {
            return Ok(None);
        }
        let start = self.pull.pos;
        self.pull.enter(depth, start)?;
        match self.pull.head()? {
            Header::Array(len) | Header::Map(len) => {
                self.pull.declared(len, u64::from(major - 3)).map(Some)
            }
            _ => unreachable!("the major type was checked"),
        }
    }

    /// Starts an array at nesting `depth` (0 for the root).
    pub(crate) fn array(&mut self, depth: usize) -> Result<Option<Len>, DecodeError> {
        self.open(4, depth)
    }

    /// Starts a map at nesting `depth` (0 for the root).
    pub(crate) fn map(&mut self, depth: usize) -> Result<Option<Len>, DecodeError> {
        self.open(5, depth)
    }

    /// Whether another element of a container follows; consumes the break of an indefinite
    /// one. `remaining` counts down definite containers.
    pub(crate) fn more(&mut self, len: &mut Len) -> Result<bool, DecodeError> {
        self.pull.more(len)
    }

    /// An unsigned integer, or None (nothing consumed) if the next item is not one.
    pub(crate) fn unsigned(&mut self) -> Result<Option<u64>, DecodeError> {
        if self.peek_major()? != 0 {
            return Ok(None);
        }
        match self.pull.head()? {
            Header::Positive(n) => Ok(Some(n)),
            _ => unreachable!("the major type was checked"),
        }
    }

    /// A text string (definite strings are borrowed), or None (nothing consumed).
    pub(crate) fn text(&mut self) -> Result<Option<Cow<'a, str>>, DecodeError> {
        if self.peek_major()? != 3 {
            return Ok(None);
        }
        let start = self.pull.pos;
        let Header::Text(len) = self.pull.head()? else {
            unreachable!("the major type was checked")
        };
        if let Some(len) = len {
            let bytes = self.pull.chunk(true, len)?;
            // SAFETY: `chunk` checked that the bytes are UTF-8.
            return Ok(Some(Cow::Borrowed(unsafe {
                std::str::from_utf8_unchecked(bytes)
            })));
        }
        let bytes = self.pull.string(true, None)?.into_owned();
        String::from_utf8(bytes)
            .map(|s| Some(Cow::Owned(s)))
            .or_else(|_| fail(start, "invalid UTF-8 in text string"))
    }

    /// A single or double precision float (the typed attribute tree reads arrays of
    /// them), or None with nothing consumed.
    #[inline]
    pub(crate) fn float(&mut self) -> Option<f64> {
        match short_head(self.pull.input, self.pull.pos)? {
            (Header::Float(f), used) => {
                self.pull.pos += used;
                Some(f)
            }
            _ => None,
        }
    }

    /// Validates and skips the next item, nested at `depth`.
    pub(crate) fn skip(&mut self, depth: usize) -> Result<(), DecodeError> {
        self.pull.skip(depth)
    }

    /// Validates the next item (nested at `depth`) and returns its encoded bytes.
    pub(crate) fn capture(&mut self, depth: usize) -> Result<&'a [u8], DecodeError> {
        let start = self.pull.pos;
        self.pull.skip(depth)?;
        Ok(&self.pull.input[start..self.pull.pos])
    }

    /// Counts a container starting at `at` against the depth limit (`depth`: its parent's).
    pub(crate) fn enter(&self, depth: usize, at: usize) -> Result<usize, DecodeError> {
        self.pull.enter(depth, at)
    }

    /// Reads the next item's head for a caller that walks items itself (`Header::Bytes`
    /// and `Header::Text` must be followed by `string`).
    pub(crate) fn head(&mut self) -> Result<Header, DecodeError> {
        self.pull.head()
    }

    /// The body of a string whose head `head` just returned.
    pub(crate) fn string(
        &mut self,
        text: bool,
        len: Option<usize>,
    ) -> Result<Cow<'a, [u8]>, DecodeError> {
        self.pull.string(text, len)
    }

    /// A container's length from its head, checked against the input.
    pub(crate) fn declared(&self, len: Option<usize>, per_item: u64) -> Result<Len, DecodeError> {
        self.pull.declared(len, per_item)
    }
}

/// `a == b` for two short slices of the same length (schema keys, up to 23 bytes): compared
/// in overlapping words, fewer instructions than a byte loop or a call to memcmp.
#[inline(always)]
pub(super) fn short_eq(a: &[u8], b: &[u8]) -> bool {
    let n = a.len();
    debug_assert_eq!(n, b.len());
    let word = |s: &[u8], at: usize| u64::from_le_bytes(s[at..at + 8].try_into().expect("8"));
    let half = |s: &[u8], at: usize| u32::from_le_bytes(s[at..at + 4].try_into().expect("4"));
    match n {
        0..4 => a == b,
        4..8 => half(a, 0) == half(b, 0) && half(a, n - 4) == half(b, n - 4),
        _ => {
            let mut at = 0;
            while at + 8 < n {
                if word(a, at) != word(b, at) {
                    return false;
                }
                at += 8;
            }
            word(a, n - 8) == word(b, n - 8)
        }
    }
}
