//! Reading a known schema (a manifest of either zTensor version, a legacy v0.1 manifest)
//! over the cursor: maps, arrays, texts, unsigned integers and keys, each named in the
//! error its format reports when the item is of another type or malformed. One layer for
//! every manifest; what the errors say and which status they carry is the format's
//! (`Report`).
//!
//! Each read tries the cursor's fast path first (the items of a canonical manifest) and
//! only then the general call, kept out of line (issue 19: a 50,000-object manifest reads
//! each of its items through here).

use std::borrow::Cow;
use std::collections::HashSet;

use super::{Cursor, DecodeError, Len};
use crate::error::{Error, Result, bail};

/// How a format reports what is wrong with its CBOR.
pub(crate) trait Report {
    /// Whether the bytes were checked as well-formed before (the v2 deterministic check):
    /// a type mismatch is then reported as one without looking further.
    const CHECKED: bool = false;
    /// Malformed CBOR, `e.offset` into the bytes.
    fn malformed(&self, e: DecodeError) -> Error;
    /// An item of the wrong type at `at` (an offset into the bytes): `what` must be
    /// `expected`, not `found`.
    fn mismatch(&self, what: &str, expected: &str, found: &str, at: usize) -> Error;
}

/// A schema reader: the cursor, and how errors are reported.
pub(crate) struct Schema<'a, R: Report> {
    pub(crate) c: Cursor<'a>,
    pub(crate) report: R,
}

impl<'a, R: Report> Schema<'a, R> {
    pub(crate) fn new(bytes: &'a [u8], max_depth: usize, report: R) -> Self {
        Schema {
            c: Cursor::new(bytes, max_depth),
            report,
        }
    }

    /// A cursor result, its error reported as malformed CBOR.
    pub(crate) fn cbor<T>(&self, r: std::result::Result<T, DecodeError>) -> Result<T> {
        r.map_err(|e| self.report.malformed(e))
    }

    /// The error for the next item being of the wrong type: malformed CBOR is reported as
    /// such (it explains more than the type it happens to start with), else the type
    /// mismatch.
    #[cold]
    pub(crate) fn mismatch(&mut self, what: &str, expected: &str) -> Error {
        let (start, found) = (self.c.position(), self.c.peek_type());
        if !R::CHECKED
            && let Err(e) = self.c.skip(0)
        {
            return self.report.malformed(e);
        }
        self.report.mismatch(what, expected, found, start)
    }

    /// A map's length, or the mismatch naming `what`. `depth`: the map's parent's.
    #[inline]
    pub(crate) fn map(&mut self, depth: usize, what: &str) -> Result<Len> {
        match self.c.take_short_container(5, depth) {
            Some(len) => Ok(len),
            None => self.container_general(5, depth, what),
        }
    }

    /// An array's length, or the mismatch naming `what`.
    #[inline]
    pub(crate) fn array(&mut self, depth: usize, what: &str) -> Result<Len> {
        match self.c.take_short_container(4, depth) {
            Some(len) => Ok(len),
            None => self.container_general(4, depth, what),
        }
    }

    #[inline(never)]
    fn container_general(&mut self, major: u8, depth: usize, what: &str) -> Result<Len> {
        let r = if major == 5 {
            self.c.map(depth)
        } else {
            self.c.array(depth)
        };
        match self.cbor(r)? {
            Some(len) => Ok(len),
            None => Err(self.mismatch(what, if major == 5 { "a map" } else { "an array" })),
        }
    }

    /// Whether another element of a container follows (see `Cursor::more`).
    #[inline]
    pub(crate) fn more(&mut self, len: &mut Len) -> Result<bool> {
        match len {
            Len::Definite(0) => Ok(false),
            Len::Definite(n) => {
                *n -= 1;
                Ok(true)
            }
            Len::Indefinite => {
                let r = self.c.more(len);
                self.cbor(r)
            }
        }
    }

    /// Validates and skips the next item, nested at `depth`.
    pub(crate) fn skip(&mut self, depth: usize) -> Result<()> {
        let r = self.c.skip(depth);
        self.cbor(r)
    }

    /// Validates the next item (nested at `depth`) and returns its bytes.
    pub(crate) fn capture(&mut self, depth: usize) -> Result<&'a [u8]> {
        let r = self.c.capture(depth);
        self.cbor(r)
    }

    /// A text string, or the mismatch naming `what`.
    #[inline]
    pub(crate) fn text(&mut self, what: &str) -> Result<Cow<'a, str>> {
        match self.c.take_short_text() {
            Some(t) => Ok(Cow::Borrowed(t)),
            None => self.text_general(what),
        }
    }

    #[inline(never)]
    fn text_general(&mut self, what: &str) -> Result<Cow<'a, str>> {
        let r = self.c.text();
        match self.cbor(r)? {
            Some(t) => Ok(t),
            None => Err(self.mismatch(what, "text")),
        }
    }

    /// An unsigned integer, or the mismatch naming `what`.
    #[inline]
    pub(crate) fn uint(&mut self, what: &str) -> Result<u64> {
        match self.c.take_unsigned() {
            Some(n) => Ok(n),
            None => self.uint_general(what),
        }
    }

    #[inline(never)]
    fn uint_general(&mut self, what: &str) -> Result<u64> {
        let r = self.c.unsigned();
        match self.cbor(r)? {
            Some(n) => Ok(n),
            None => Err(self.mismatch(what, "an unsigned integer")),
        }
    }

    /// Text, or None for null / undefined.
    pub(crate) fn optional_text(&mut self, what: &str) -> Result<Option<Cow<'a, str>>> {
        if self.c.take_null() {
            Ok(None)
        } else {
            self.text(what).map(Some)
        }
    }

    /// The next map key if it is text; a key of another type is skipped with its value
    /// (`depth`: theirs), and None returned.
    #[inline]
    pub(crate) fn key(&mut self, depth: usize) -> Result<Option<Cow<'a, str>>> {
        if let Some(t) = self.c.take_short_text() {
            return Ok(Some(Cow::Borrowed(t)));
        }
        self.key_general(depth)
    }

    #[inline(never)]
    fn key_general(&mut self, depth: usize) -> Result<Option<Cow<'a, str>>> {
        let r = self.c.text();
        let Some(key) = self.cbor(r)? else {
            self.skip(depth)?;
            self.skip(depth)?;
            return Ok(None);
        };
        Ok(Some(key))
    }

    /// The next key of a map with the keys `schema`, checked against the keys before it
    /// (`keys`; `what` names the map): Some(slot) (None for a key outside the schema), or
    /// None for a non-text key (skipped with its value, nested at `depth`). Only the slot
    /// is returned (callers match on it; a small value is cheap to return for the keys of
    /// every object of a large manifest).
    #[inline(always)]
    pub(crate) fn schema_key(
        &mut self,
        depth: usize,
        schema: &[&'static str],
        keys: &mut Keys<'a>,
        what: &str,
    ) -> Result<Option<Option<usize>>> {
        // Fast path: a short definite text key spelling one of the schema's keys, matched
        // on its bytes without decoding it (every key of a canonical manifest). Keys
        // usually come in schema order: looked for from after the last one first.
        if let Some(slot) = self.c.take_schema_key(schema, keys.next) {
            if keys.known & (1 << slot) != 0 {
                bail!(
                    Format,
                    "{what} has the key '{}' more than once",
                    schema[slot]
                );
            }
            keys.known |= 1 << slot;
            keys.next = slot + 1;
            return Ok(Some(Some(slot)));
        }
        self.schema_key_decoded(depth, schema, keys, what)
    }

    /// `schema_key` for a key the fast path didn't match: decoded, then looked up.
    #[inline(never)]
    fn schema_key_decoded(
        &mut self,
        depth: usize,
        schema: &[&'static str],
        keys: &mut Keys<'a>,
        what: &str,
    ) -> Result<Option<Option<usize>>> {
        let Some(key) = self.key_general(depth)? else {
            return Ok(None);
        };
        let slot = schema.iter().position(|k| *k == key);
        keys.note(&key, slot, what)?;
        Ok(Some(slot))
    }

    /// Errors unless every byte was consumed.
    pub(crate) fn finish(&self) -> Result<()> {
        let r = self.c.finish();
        self.cbor(r)
    }
}

/// Duplicate-key detection for one map of a schema (at most 32 keys): a bit per schema
/// key, a set only for the rare unknown ones (so a map of a million unknown keys stays
/// linear).
#[derive(Default)]
pub(crate) struct Keys<'a> {
    known: u32,
    /// The schema slot after the last key seen: where the next key most likely is.
    next: usize,
    unknown: Option<HashSet<Cow<'a, str>>>,
}

impl<'a> Keys<'a> {
    /// Records `key` (whose index in the schema's key list is `slot`, if any).
    #[allow(clippy::ptr_arg)] // the Cow is cloned into the set, staying borrowed when it is
    fn note(&mut self, key: &Cow<'a, str>, slot: Option<usize>, what: &str) -> Result<()> {
        let fresh = match slot {
            Some(bit) => {
                let fresh = self.known & (1 << bit) == 0;
                self.known |= 1 << bit;
                fresh
            }
            None => self
                .unknown
                .get_or_insert_with(HashSet::new)
                .insert(key.clone()),
        };
        if !fresh {
            bail!(Format, "{what} has the key '{key}' more than once");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ErrorKind, err};

    /// Errors as a format would word them: offsets from 1000.
    struct Plain;

    impl Report for Plain {
        fn malformed(&self, e: DecodeError) -> Error {
            e.positioned("test", 1000)
        }
        fn mismatch(&self, what: &str, expected: &str, found: &str, at: usize) -> Error {
            err!(
                Format,
                "{what} must be {expected}, not {found} at {}",
                1000 + at
            )
        }
    }

    fn schema(bytes: &[u8]) -> Schema<'_, Plain> {
        Schema::new(bytes, 8, Plain)
    }

    #[test]
    fn items_of_a_schema_are_read_or_named_in_the_error() {
        // {"a": 1, "b": "x", 7: 8, "a": 2}
        let bytes = [
            0xa4, 0x61, b'a', 1, 0x61, b'b', 0x61, b'x', 7, 8, 0x61, b'a', 2,
        ];
        let mut s = schema(&bytes);
        let mut len = s.map(0, "the map").unwrap();
        let mut keys = Keys::default();
        const SCHEMA: [&str; 2] = ["a", "b"];
        assert!(s.more(&mut len).unwrap());
        assert_eq!(
            s.schema_key(1, &SCHEMA, &mut keys, "m").unwrap(),
            Some(Some(0))
        );
        assert_eq!(s.uint("a").unwrap(), 1);
        assert!(s.more(&mut len).unwrap());
        assert_eq!(
            s.schema_key(1, &SCHEMA, &mut keys, "m").unwrap(),
            Some(Some(1))
        );
        assert_eq!(s.text("b").unwrap(), "x");
        assert!(s.more(&mut len).unwrap());
        // A key that is not text is skipped with its value.
        assert_eq!(s.schema_key(1, &SCHEMA, &mut keys, "m").unwrap(), None);
        assert!(s.more(&mut len).unwrap());
        let e = s.schema_key(1, &SCHEMA, &mut keys, "m").unwrap_err();
        assert_eq!(e.message(), "m has the key 'a' more than once");
        // The wrong type, named; malformed bytes reported as such.
        let mut s = schema(&[0x01]);
        let e = s.text("the name").unwrap_err();
        assert_eq!(
            e.message(),
            "the name must be text, not unsigned integer at 1000"
        );
        let mut s = schema(&[0x82, 0x01]);
        let e = s.map(0, "the map").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format);
        assert!(
            e.message().starts_with("test: CBOR error at file offset"),
            "{e}"
        );
        // Keys read as text, or skipped (with their values) when they are not.
        let mut s = schema(&[0xa2, 0x01, 0x02, 0x61, b'k', 0x03]);
        let mut len = s.map(0, "m").unwrap();
        assert!(s.more(&mut len).unwrap());
        assert_eq!(s.key(1).unwrap(), None);
        assert!(s.more(&mut len).unwrap());
        assert_eq!(s.key(1).unwrap().as_deref(), Some("k"));
        assert_eq!(s.uint("v").unwrap(), 3);
        assert!(!s.more(&mut len).unwrap());
        assert!(s.finish().is_ok());
        assert_eq!(schema(&[0xf6]).optional_text("t").unwrap(), None);
    }
}
