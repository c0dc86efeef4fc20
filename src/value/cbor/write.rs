//! The one writer of CBOR items: every head the library writes (manifests of both
//! versions, attributes, GGUF key/values, Tensogram metadata, the safetensors metadata) is
//! a typed `Header` that `ciborium-ll` encodes, in its shortest form, into a byte vector.

use ciborium_ll::{Encoder, Header};

use super::Value;

/// Appends CBOR items to a byte vector: heads by their type (never a raw major number),
/// string bodies, and items already encoded (attribute maps kept as bytes).
#[derive(Debug, Default)]
pub(crate) struct Writer {
    out: Vec<u8>,
}

impl Writer {
    pub(crate) fn new() -> Writer {
        Writer::default()
    }

    /// A writer appending to `out` (what it holds stays in front).
    pub(crate) fn over(out: Vec<u8>) -> Writer {
        Writer { out }
    }

    pub(crate) fn with_capacity(n: usize) -> Writer {
        Writer::over(Vec::with_capacity(n))
    }

    /// The bytes written.
    pub(crate) fn into_bytes(self) -> Vec<u8> {
        self.out
    }

    /// The bytes written so far.
    pub(crate) fn as_slice(&self) -> &[u8] {
        &self.out
    }

    pub(crate) fn len(&self) -> usize {
        self.out.len()
    }

    /// Forgets what was written, keeping the allocation (a scratch writer reused).
    pub(crate) fn clear(&mut self) {
        self.out.clear();
    }

    /// Makes room for `n` more bytes; Err (not an abort) when the system refuses.
    pub(crate) fn try_reserve(
        &mut self,
        n: usize,
    ) -> Result<(), std::collections::TryReserveError> {
        self.out.try_reserve(n)
    }

    /// One head, shortest form. A float is written in the shortest width that holds it
    /// exactly, every NaN as `f9 7e00`.
    #[inline]
    pub(crate) fn head(&mut self, header: Header) {
        let header = match header {
            Header::Float(f) if f.is_nan() => Header::Float(f64::NAN),
            h => h,
        };
        // Writing into a Vec cannot fail.
        let _ = Encoder::from(&mut self.out).push(header);
    }

    /// A non-negative integer.
    #[inline]
    pub(crate) fn uint(&mut self, n: u64) {
        self.head(Header::Positive(n));
    }

    /// A signed integer (major type 0 or 1).
    pub(crate) fn int(&mut self, v: i64) {
        self.head(if v >= 0 {
            Header::Positive(v as u64)
        } else {
            Header::Negative(!(v as u64))
        });
    }

    pub(crate) fn float(&mut self, f: f64) {
        self.head(Header::Float(f));
    }

    pub(crate) fn bool(&mut self, b: bool) {
        self.head(Header::Simple(if b { 21 } else { 20 }));
    }

    /// A definite text string.
    #[inline]
    pub(crate) fn text(&mut self, s: &str) {
        self.head(Header::Text(Some(s.len())));
        self.out.extend_from_slice(s.as_bytes());
    }

    /// A definite byte string.
    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.head(Header::Bytes(Some(b.len())));
        self.out.extend_from_slice(b);
    }

    /// A definite text (`text`) or byte string of `body`, which for text must be UTF-8.
    pub(crate) fn string(&mut self, text: bool, body: &[u8]) {
        let len = Some(body.len());
        self.head(if text {
            Header::Text(len)
        } else {
            Header::Bytes(len)
        });
        self.out.extend_from_slice(body);
    }

    /// The head of an array of `n` items.
    #[inline]
    pub(crate) fn array(&mut self, n: usize) {
        self.head(Header::Array(Some(n)));
    }

    /// The head of a map of `n` entries.
    #[inline]
    pub(crate) fn map(&mut self, n: usize) {
        self.head(Header::Map(Some(n)));
    }

    /// Bytes that already are CBOR items (an attribute map kept as bytes).
    #[inline]
    pub(crate) fn raw(&mut self, bytes: &[u8]) {
        self.out.extend_from_slice(bytes);
    }

    /// Puts the head of a container whose items were written from `at` on in front of
    /// them, once they are counted (`header`: `Array(Some(n))` or `Map(Some(n))`).
    pub(crate) fn insert_head(&mut self, at: usize, header: Header) {
        let mut head = Writer::with_capacity(9);
        head.head(header);
        self.out.splice(at..at, head.out);
    }

    /// `value` in the deterministic encoding: definite lengths, shortest heads and
    /// floats (NaN as f97e00), maps in stored order.
    ///
    /// `Simple(n)` is only meaningful for n in 0..=19 or 32..=255; other values produce
    /// other items or invalid bytes.
    pub(crate) fn value(&mut self, value: &Value) {
        match value {
            Value::Unsigned(n) => self.uint(*n),
            Value::Negative(n) => self.head(Header::Negative(*n)),
            Value::Float(f) => self.float(*f),
            Value::Bytes(b) => self.bytes(b),
            Value::Text(s) => self.text(s),
            Value::Array(items) => {
                self.array(items.len());
                items.iter().for_each(|item| self.value(item));
            }
            Value::Map(pairs) => {
                self.map(pairs.len());
                for (key, val) in pairs {
                    self.value(key);
                    self.value(val);
                }
            }
            Value::Tag(tag, inner) => {
                self.head(Header::Tag(*tag));
                self.value(inner);
            }
            Value::Bool(b) => self.bool(*b),
            Value::Null => self.head(Header::Simple(22)),
            Value::Undefined => self.head(Header::Simple(23)),
            Value::Simple(n) => self.head(Header::Simple(*n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(f: impl FnOnce(&mut Writer)) -> Vec<u8> {
        let mut w = Writer::new();
        f(&mut w);
        w.into_bytes()
    }

    #[test]
    fn heads_are_shortest_and_typed() {
        assert_eq!(written(|w| w.uint(23)), [0x17]);
        assert_eq!(written(|w| w.uint(24)), [0x18, 24]);
        assert_eq!(written(|w| w.uint(1 << 32)), [0x1b, 0, 0, 0, 1, 0, 0, 0, 0]);
        assert_eq!(written(|w| w.int(-1)), [0x20]);
        assert_eq!(written(|w| w.int(-500)), [0x39, 0x01, 0xf3]);
        assert_eq!(
            written(|w| w.int(i64::MIN)),
            [0x3b, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]
        );
        assert_eq!(written(|w| w.text("ab")), [0x62, b'a', b'b']);
        assert_eq!(written(|w| w.bytes(&[7])), [0x41, 7]);
        assert_eq!(written(|w| w.string(true, b"x")), [0x61, b'x']);
        assert_eq!(written(|w| w.string(false, b"x")), [0x41, b'x']);
        assert_eq!(written(|w| w.array(300)), [0x99, 0x01, 0x2c]);
        assert_eq!(written(|w| w.map(2)), [0xa2]);
        assert_eq!(written(|w| w.bool(true)), [0xf5]);
        assert_eq!(written(|w| w.float(1.5)), [0xf9, 0x3e, 0x00]);
        // Every NaN as f9 7e00, whatever its sign and payload.
        let odd_nan = f64::from_bits(0xfff8_0000_0000_0001);
        assert_eq!(written(|w| w.float(odd_nan)), [0xf9, 0x7e, 0x00]);
        assert_eq!(written(|w| w.head(Header::Tag(1))), [0xc1]);
    }

    #[test]
    fn a_head_goes_in_front_of_counted_items() {
        let mut w = Writer::over(vec![0xaa]);
        w.uint(1);
        w.uint(2);
        w.insert_head(1, Header::Array(Some(2)));
        assert_eq!(w.into_bytes(), [0xaa, 0x82, 1, 2]);
    }
}
