//! JSON for attributes over the C ABI, through serde_json: CBOR values (or CBOR bytes,
//! streamed without building a tree) rendered as compact JSON, and JSON parsed into CBOR
//! values, strictly and with bounded depth.
//!
//! What serde_json doesn't decide stays here: the mapping of CBOR's extra kinds (see
//! [`write_json`]); finite floats printed as Rust's `{:?}` prints them (shortest
//! round-tripping form that keeps ".0" or an exponent on integral values, as documented);
//! the depth limit and the refusal of duplicate keys; and the integers serde_json hands
//! over as floats (-0, and -2^64 ..= -2^63-1, which CBOR holds exactly) read back from
//! their text.

use std::borrow::Cow;
use std::cell::{Cell, RefCell};
use std::collections::HashSet;
use std::fmt;

use ciborium_ll::Header;
use serde::de::{self, DeserializeSeed, MapAccess, SeqAccess, Visitor};
use serde::ser::{self, Serialize, SerializeMap, SerializeSeq, Serializer};

use crate::value::cbor::{Cursor, DecodeError, Len, Value};

/// Renders a value as compact JSON (see [`write_json`] for the mapping).
pub fn to_json(value: &Value) -> String {
    let mut out = String::new();
    write_json(value, &mut out);
    out
}

/// A value as a serde_json tree (the mapping of [`write_json`]), for documents built
/// around it, such as a sharded set's index. Only a negative integer below i64's range,
/// which the tree can't hold as an integer, goes through the text: parsed, it becomes
/// the nearest float.
pub(crate) fn to_json_value(value: &Value) -> serde_json::Result<serde_json::Value> {
    serde_json::to_value(Json(value)).or_else(|_| serde_json::from_str(&to_json(value)))
}

/// Appends compact JSON: bytes as `{"$bytes":hex}`, tags as `{"$tag":n,"value":v}`, simple values as
/// `{"$simple":n}`, undefined and non-finite floats as null, non-text map keys as their JSON text.
///
/// A non-text key that holds a map with a non-text key of its own is written as
/// `"$cbor:<hex>"`, the hex of its CBOR encoding, instead: a key's JSON text is escaped
/// once more for every key it sits in, so keys nested in keys would double the output at
/// each level (an 838-byte file rendered to gigabytes). This way every byte of input
/// costs a bounded number of bytes of output.
pub fn write_json(value: &Value, out: &mut String) {
    let mut bytes = std::mem::take(out).into_bytes();
    let start = bytes.len();
    // Serializing a value into memory can't fail.
    let _ = render(&Json(value), &mut bytes);
    debug_assert!(std::str::from_utf8(&bytes[start..]).is_ok());
    // SAFETY: `out` was a String, and serde_json writes only UTF-8 (its own `to_string`
    // relies on the same).
    *out = unsafe { String::from_utf8_unchecked(bytes) };
}

/// Renders one CBOR item as compact JSON (the mapping of [`write_json`]), streamed from
/// its bytes: no tree is built, so memory is the output's. The bytes are checked as they
/// are read (nesting at most `crate::limits::MAX_CBOR_DEPTH`).
pub fn cbor_to_json(bytes: &[u8]) -> Result<String, DecodeError> {
    Ok(stream_json(bytes, false)?.expect("only a key's rendering stops at a key in it"))
}

/// `cbor_to_json`; for the CBOR of a map key (`in_key`), None when a map in it has a key
/// that is not text (the key is then written as `$cbor:<hex>`, see [`write_json`]).
fn stream_json(bytes: &[u8], in_key: bool) -> Result<Option<String>, DecodeError> {
    let cursor = RefCell::new(Cursor::new(bytes, crate::limits::MAX_CBOR_DEPTH));
    let failure = Cell::new(None);
    let key_in_key = Cell::new(false);
    let mut out = Vec::new();
    let stream = Stream {
        cursor: &cursor,
        failure: &failure,
        in_key: in_key.then_some(&key_in_key),
        depth: 0,
    };
    if let Err(e) = render(&stream, &mut out) {
        if key_in_key.get() {
            return Ok(None);
        }
        // Only decoding fails (writing into memory can't); keep its error.
        return Err(failure.take().unwrap_or(DecodeError {
            offset: 0,
            message: e.to_string(),
            too_deep: false,
        }));
    }
    cursor.borrow().finish()?;
    // SAFETY: serde_json writes only UTF-8.
    Ok(Some(unsafe { String::from_utf8_unchecked(out) }))
}

/// The JSON text of a map key that is not text, from its CBOR (see [`write_json`]).
fn key_json(key: &[u8]) -> Result<String, DecodeError> {
    Ok(match stream_json(key, true)? {
        Some(text) => text,
        None => format!("$cbor:{}", Hex(key)),
    })
}

fn render(value: &impl Serialize, out: &mut Vec<u8>) -> serde_json::Result<()> {
    value.serialize(&mut serde_json::Serializer::with_formatter(out, Compact))
}

/// serde_json's compact output, with floats as documented.
struct Compact;

impl serde_json::ser::Formatter for Compact {
    fn write_f64<W: ?Sized + std::io::Write>(&mut self, w: &mut W, f: f64) -> std::io::Result<()> {
        // Only finite floats get here: serde_json writes the others as null.
        write!(w, "{f:?}")
    }
}

/// A value as JSON.
struct Json<'v>(&'v Value);

impl Serialize for Json<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Value::Unsigned(n) => s.serialize_u64(*n),
            Value::Negative(n) => s.serialize_i128(-1 - i128::from(*n)),
            Value::Float(f) => s.serialize_f64(*f),
            Value::Null | Value::Undefined => s.serialize_unit(),
            Value::Bool(b) => s.serialize_bool(*b),
            Value::Text(t) => s.serialize_str(t),
            Value::Bytes(b) => one_entry(s, "$bytes", &Hex(b)),
            Value::Simple(n) => one_entry(s, "$simple", n),
            Value::Tag(tag, inner) => tagged(s, *tag, &Json(inner)),
            Value::Array(items) => s.collect_seq(items.iter().map(Json)),
            Value::Map(pairs) => {
                let mut map = s.serialize_map(Some(pairs.len()))?;
                for (key, val) in pairs {
                    match key {
                        Value::Text(t) => map.serialize_key(t)?,
                        other => map.serialize_key(&key_text(other))?,
                    }
                    map.serialize_value(&Json(val))?;
                }
                map.end()
            }
        }
    }
}

/// A map key that is not text, as the key's JSON text: its JSON, or `$cbor:<hex>` when a
/// map inside it has a key that is not text (see [`write_json`]).
fn key_text(key: &Value) -> String {
    if holds_non_text_key(key) {
        format!("$cbor:{}", Hex(&crate::value::cbor::to_vec(key)))
    } else {
        to_json(key)
    }
}

/// Whether a map in `v` (or `v` itself) has a key that is not text.
fn holds_non_text_key(v: &Value) -> bool {
    match v {
        Value::Map(pairs) => pairs
            .iter()
            .any(|(k, v)| !matches!(k, Value::Text(_)) || holds_non_text_key(v)),
        Value::Array(items) => items.iter().any(holds_non_text_key),
        Value::Tag(_, inner) => holds_non_text_key(inner),
        _ => false,
    }
}

/// `{"<key>":value}`.
fn one_entry<S: Serializer>(s: S, key: &str, value: &impl Serialize) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(1))?;
    map.serialize_entry(key, value)?;
    map.end()
}

/// `{"$tag":n,"value":v}`.
fn tagged<S: Serializer>(s: S, tag: u64, value: &impl Serialize) -> Result<S::Ok, S::Error> {
    let mut map = s.serialize_map(Some(2))?;
    map.serialize_entry("$tag", &tag)?;
    map.serialize_entry("value", value)?;
    map.end()
}

/// Bytes as a string of lowercase hex, written in pieces (no copy of the whole): the
/// library's one hex encoder (`$bytes` values, `$cbor:` keys, digests).
pub(crate) struct Hex<'b>(pub(crate) &'b [u8]);

impl Serialize for Hex<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let mut buf = [0u8; 512];
        for piece in self.0.chunks(buf.len() / 2) {
            for (i, b) in piece.iter().enumerate() {
                buf[2 * i] = DIGITS[usize::from(b >> 4)];
                buf[2 * i + 1] = DIGITS[usize::from(b & 15)];
            }
            // Hex digits are ASCII.
            f.write_str(std::str::from_utf8(&buf[..2 * piece.len()]).map_err(|_| fmt::Error)?)?;
        }
        Ok(())
    }
}

/// The next CBOR item of a cursor as JSON, pulled as the serializer asks for it.
struct Stream<'c, 'a> {
    cursor: &'c RefCell<Cursor<'a>>,
    /// The decoding error that stopped the output, for `cbor_to_json` to return.
    failure: &'c Cell<Option<DecodeError>>,
    /// Inside a map key: set when a map in it has a key that is not text, which stops
    /// the output (the key is written as hex instead).
    in_key: Option<&'c Cell<bool>>,
    depth: usize,
}

impl<'a> Stream<'_, 'a> {
    fn step<T, E: ser::Error>(
        &self,
        f: impl FnOnce(&mut Cursor<'a>) -> Result<T, DecodeError>,
    ) -> Result<T, E> {
        f(&mut self.cursor.borrow_mut()).map_err(|e| {
            let message = e.to_string();
            self.failure.set(Some(e));
            E::custom(message)
        })
    }

    fn nested(&self) -> Stream<'_, 'a> {
        Stream {
            cursor: self.cursor,
            failure: self.failure,
            in_key: self.in_key,
            depth: self.depth + 1,
        }
    }

    /// A container's length after its head at `start`, counting a nesting level.
    fn open<E: ser::Error>(&self, start: usize, len: Option<usize>, per: u64) -> Result<Len, E> {
        self.step(|c| {
            c.enter(self.depth, start)?;
            c.declared(len, per)
        })
    }

    fn more<E: ser::Error>(&self, len: &mut Len) -> Result<bool, E> {
        self.step(|c| c.more(len))
    }

    /// The next item if it is text (a key or a value), else None with nothing consumed.
    fn text<E: ser::Error>(&self) -> Result<Option<Cow<'a, str>>, E> {
        self.step(Cursor::text)
    }
}

impl Serialize for Stream<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        if let Some(text) = self.text()? {
            return s.serialize_str(&text);
        }
        let start = self.step(|c| Ok(c.position()))?;
        match self.step(Cursor::head)? {
            Header::Positive(n) => Json(&Value::Unsigned(n)).serialize(s),
            Header::Negative(n) => Json(&Value::Negative(n)).serialize(s),
            Header::Float(f) => Json(&Value::Float(f)).serialize(s),
            Header::Simple(n) => Json(&crate::value::cbor::simple(n)).serialize(s),
            Header::Bytes(len) => {
                let bytes = self.step(|c| c.string(false, len))?;
                one_entry(s, "$bytes", &Hex(&bytes))
            }
            Header::Array(len) => {
                let mut len = self.open(start, len, 1)?;
                let mut seq = s.serialize_seq(None)?;
                while self.more(&mut len)? {
                    seq.serialize_element(&self.nested())?;
                }
                seq.end()
            }
            Header::Map(len) => {
                let mut len = self.open(start, len, 2)?;
                let mut map = s.serialize_map(None)?;
                while self.more(&mut len)? {
                    match self.text()? {
                        Some(key) => map.serialize_key(&key)?,
                        None => {
                            if let Some(stop) = self.in_key {
                                stop.set(true);
                                return Err(ser::Error::custom("a key in a key"));
                            }
                            let depth = self.depth + 1;
                            let key = self.step(|c| c.capture(depth))?;
                            map.serialize_key(&self.step(|_| key_json(key))?)?;
                        }
                    }
                    map.serialize_value(&self.nested())?;
                }
                map.end()
            }
            Header::Tag(tag) => {
                self.step(|c| c.enter(self.depth, start))?;
                tagged(s, tag, &self.nested())
            }
            Header::Text(_) | Header::Break => Err(self.step(|_| {
                Err(DecodeError {
                    offset: start,
                    message: "unexpected break".into(),
                    too_deep: false,
                })
            })?),
        }
    }
}

/// A parse failure and the byte offset in the JSON text where it was detected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonError {
    /// Byte offset in the text where parsing went wrong.
    pub offset: usize,
    /// Description of the problem.
    pub message: String,
}

impl fmt::Display for JsonError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "JSON error at byte {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for JsonError {}

/// Parses exactly one JSON value (RFC 8259) into a Value, with nesting limited to `max_depth`.
///
/// Integers map to `Unsigned`/`Negative` when in range, other numbers to `Float`; an object that is exactly
/// `{"$bytes":"<even-length hex>"}` becomes `Bytes`; duplicate keys and lone surrogates are errors.
pub fn from_json(text: &str, max_depth: usize) -> Result<Value, JsonError> {
    stream(text, max_depth, |top, de| top.deserialize(de))
}

/// Streams one JSON document through `parse`, which gets the top level (depth 0) and
/// the deserializer, for callers that read a large document without building its tree
/// (the safetensors header). Errors are positioned as `from_json` positions them, and the
/// depth limit and duplicate-key rule are the caller's to apply through `Level`.
pub(crate) fn stream<'t, T>(
    text: &'t str,
    max_depth: usize,
    parse: impl for<'c> FnOnce(
        Level<'c, 't>,
        &mut serde_json::Deserializer<serde_json::de::StrRead<'t>>,
    ) -> Result<T, serde_json::Error>,
) -> Result<T, JsonError> {
    let context = Context {
        text,
        max_depth,
        numbers_seen: Cell::new(0),
        scanner: Cell::new((0, 0)),
        broken: Cell::new(None),
    };
    let mut de = serde_json::Deserializer::from_str(text);
    // The depth is bounded by `max_depth` (`Seed`), which is what keeps the stack bounded.
    de.disable_recursion_limit();
    let level = Seed {
        context: &context,
        depth: 0,
    };
    parse(level, &mut de)
        .and_then(|value| de.end().map(|()| value))
        .map_err(|e| context.error(&e))
}

/// One level of a streamed parse (see [`stream`]).
pub(crate) type Level<'c, 't> = Seed<'c, 't>;

/// A value skimmed by [`Skim`]: an unsigned integer, a text (kept only when asked), or
/// the type name of anything else (as `Value::type_name` spells it).
pub(crate) enum Item<'de> {
    Unsigned(u64),
    Text(Cow<'de, str>),
    Other(&'static str),
}

impl Item<'_> {
    pub(crate) fn type_name(&self) -> &'static str {
        match self {
            Item::Unsigned(_) => "unsigned integer",
            Item::Text(_) => "text",
            Item::Other(name) => name,
        }
    }
}

/// Reads one value without building it: containers are walked (depth-limited, nothing
/// allocated) and reported by type name; texts are kept when `keep_text`.
#[derive(Clone, Copy)]
pub(crate) struct Skim<'c, 't> {
    pub(crate) level: Seed<'c, 't>,
    pub(crate) keep_text: bool,
}

impl<'de> DeserializeSeed<'de> for Skim<'_, '_> {
    type Value = Item<'de>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Item<'de>, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Skim<'_, '_> {
    type Value = Item<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, _: bool) -> Result<Item<'de>, E> {
        Ok(Item::Other("bool"))
    }
    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Item<'de>, E> {
        self.level.context.number();
        Ok(Item::Unsigned(n))
    }
    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Item<'de>, E> {
        self.level.context.number();
        Ok(if n >= 0 {
            Item::Unsigned(n as u64)
        } else {
            Item::Other("negative integer")
        })
    }
    fn visit_f64<E: de::Error>(self, _: f64) -> Result<Item<'de>, E> {
        self.level.context.number();
        Ok(Item::Other("float"))
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Item<'de>, E> {
        Ok(Item::Text(if self.keep_text {
            Cow::Borrowed(s)
        } else {
            Cow::Borrowed("")
        }))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Item<'de>, E> {
        Ok(Item::Text(if self.keep_text {
            Cow::Owned(s.to_owned())
        } else {
            Cow::Borrowed("")
        }))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Item<'de>, E> {
        Ok(Item::Other("null"))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Item<'de>, A::Error> {
        let inner = Skim {
            level: self.level.enter()?,
            keep_text: false,
        };
        while seq.next_element_seed(inner)?.is_some() {}
        Ok(Item::Other("array"))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Item<'de>, A::Error> {
        let inner = Skim {
            level: self.level.enter()?,
            keep_text: false,
        };
        while map.next_key_seed(inner)?.is_some() {
            map.next_value_seed(inner)?;
        }
        Ok(Item::Other("map"))
    }
}

/// A map key as serde_json hands it over: borrowed from the text unless it had escapes.
pub(crate) struct Key;

impl<'de> DeserializeSeed<'de> for Key {
    type Value = Cow<'de, str>;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Cow<'de, str>, D::Error> {
        d.deserialize_str(self)
    }
}

impl<'de> Visitor<'de> for Key {
    type Value = Cow<'de, str>;
    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }
    fn visit_borrowed_str<E: de::Error>(self, s: &'de str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Borrowed(s))
    }
    fn visit_str<E: de::Error>(self, s: &str) -> Result<Cow<'de, str>, E> {
        Ok(Cow::Owned(s.to_owned()))
    }
}

/// What every level of a parse shares.
struct Context<'t> {
    text: &'t str,
    max_depth: usize,
    /// Numbers serde_json has handed over so far.
    numbers_seen: Cell<usize>,
    /// (byte offset, numbers passed) of the scan for number tokens, which runs only when
    /// a number's exact text is needed.
    scanner: Cell<(usize, usize)>,
    /// Which of our own rules the error being raised breaks, if any: serde_json positions
    /// such errors where it stands when the container ends, so they are placed here.
    broken: Cell<Option<Rule>>,
}

#[derive(Clone, Copy)]
enum Rule {
    /// Positioned at the container that nests too deep.
    Depth,
    /// Positioned at the repeated key.
    DuplicateKey,
}

impl<'t> Context<'t> {
    /// Counts a number serde_json handed over.
    fn number(&self) {
        self.numbers_seen.set(self.numbers_seen.get() + 1);
    }

    /// The text of the number serde_json handed over last. Numbers arrive in document
    /// order, and everything before the current one is valid JSON, so scanning on from
    /// the previous stop (past strings) finds it.
    fn last_number_text(&self) -> &'t str {
        let (at, mut passed) = self.scanner.get();
        for token in Scan::new(self.text.as_bytes(), at) {
            if let Token::Number(start, end) = token {
                passed += 1;
                if passed == self.numbers_seen.get() {
                    self.scanner.set((end, passed));
                    return &self.text[start..end];
                }
            }
        }
        ""
    }

    /// A float serde_json produced, as CBOR holds it: integers it could not fit in i64
    /// or u64 and -0 come back exact from their text when CBOR has them.
    fn float(&self, f: f64) -> Value {
        let integral = f == f.trunc();
        let ambiguous = integral
            && (f == 0.0 || (-18446744073709551616.0..=-9223372036854775808.0).contains(&f));
        if ambiguous {
            let text = self.last_number_text();
            if let Some(digits) = text.strip_prefix('-')
                && digits.bytes().all(|b| b.is_ascii_digit())
            {
                return match digits.parse::<u128>() {
                    Ok(0) => Value::Unsigned(0),
                    Ok(n) => u64::try_from(n - 1).map_or(Value::Float(f), Value::Negative),
                    Err(_) => Value::Float(f),
                };
            }
        }
        Value::Float(f)
    }

    /// A serde_json error as a positioned `JsonError`.
    fn error(&self, e: &serde_json::Error) -> JsonError {
        let message = e.to_string();
        let message = match message.rfind(" at line ") {
            Some(i) => message[..i].to_owned(),
            None => message,
        };
        let offset = if e.is_eof() {
            self.text.len()
        } else {
            // serde_json counts lines from 1 and columns from 1 (0: the line's newline).
            let line_start: usize = self
                .text
                .split_inclusive('\n')
                .take(e.line().saturating_sub(1))
                .map(str::len)
                .sum();
            (line_start + e.column())
                .saturating_sub(1)
                .min(self.text.len())
        };
        let offset = match self.broken.get() {
            None => offset,
            Some(Rule::Depth) => too_deep_at(self.text.as_bytes(), self.max_depth),
            Some(Rule::DuplicateKey) => key_start(self.text.as_bytes(), offset),
        };
        JsonError { offset, message }
    }
}

/// The opening bracket or brace that nests deeper than `max_depth`.
fn too_deep_at(text: &[u8], max_depth: usize) -> usize {
    let mut depth = 0usize;
    for token in Scan::new(text, 0) {
        match token {
            Token::Open(at) if depth == max_depth => return at,
            Token::Open(_) => depth += 1,
            Token::Close => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    text.len()
}

/// The opening quote of the key that ends at `end` or just before it (serde_json stands
/// after the key and any whitespace that follows it): the last string whose closing
/// quote is at or before `end`.
fn key_start(text: &[u8], end: usize) -> usize {
    let end = end.min(text.len().saturating_sub(1));
    let mut found = 0;
    for token in Scan::new(text, 0) {
        match token {
            Token::String(start, after) if after <= end + 1 => found = start,
            Token::String(..) => break,
            _ => {}
        }
    }
    found
}

/// What the scan of JSON text that serde_json has already accepted (up to an error)
/// sees: the one scanner errors and numbers are positioned with.
enum Token {
    /// A string: its opening quote and the byte after its closing one.
    String(usize, usize),
    /// A number's text.
    Number(usize, usize),
    /// `[` or `{`, at.
    Open(usize),
    /// `]` or `}`.
    Close,
    /// Anything else (punctuation, literals, whitespace), a byte at a time.
    Other,
}

/// The tokens of JSON text from a byte offset outside any string.
struct Scan<'t> {
    text: &'t [u8],
    at: usize,
}

impl<'t> Scan<'t> {
    fn new(text: &'t [u8], at: usize) -> Self {
        Scan { text, at }
    }
}

impl Iterator for Scan<'_> {
    type Item = Token;

    fn next(&mut self) -> Option<Token> {
        let (text, start) = (self.text, self.at);
        let b = *text.get(start)?;
        self.at += 1;
        Some(match b {
            b'"' => {
                while let Some(&c) = text.get(self.at)
                    && c != b'"'
                {
                    self.at += if c == b'\\' { 2 } else { 1 };
                }
                self.at += 1;
                Token::String(start, self.at)
            }
            b'-' | b'0'..=b'9' => {
                while text
                    .get(self.at)
                    .is_some_and(|c| matches!(c, b'-' | b'+' | b'.' | b'e' | b'E' | b'0'..=b'9'))
                {
                    self.at += 1;
                }
                Token::Number(start, self.at)
            }
            b'[' | b'{' => Token::Open(start),
            b']' | b'}' => Token::Close,
            _ => Token::Other,
        })
    }
}

/// One level of a parse: the depth of the value it reads.
#[derive(Clone, Copy)]
pub(crate) struct Seed<'c, 't> {
    context: &'c Context<'t>,
    depth: usize,
}

impl Seed<'_, '_> {
    /// An error for a key met twice in one object, positioned at the repeated key.
    pub(crate) fn duplicate_key<E: de::Error>(self, key: &str) -> E {
        self.context.broken.set(Some(Rule::DuplicateKey));
        E::custom(format!("duplicate key {key:?}"))
    }

    /// The level of a container's items: a `Limit`-worthy error past `max_depth`.
    pub(crate) fn enter<E: de::Error>(self) -> Result<Self, E> {
        if self.depth >= self.context.max_depth {
            self.context.broken.set(Some(Rule::Depth));
            return Err(E::custom(format!(
                "nesting deeper than {} levels",
                self.context.max_depth
            )));
        }
        Ok(Seed {
            depth: self.depth + 1,
            ..self
        })
    }
}

impl<'de> DeserializeSeed<'de> for Seed<'_, '_> {
    type Value = Value;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Seed<'_, '_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E: de::Error>(self, b: bool) -> Result<Value, E> {
        Ok(Value::Bool(b))
    }

    fn visit_u64<E: de::Error>(self, n: u64) -> Result<Value, E> {
        self.context.number();
        Ok(Value::Unsigned(n))
    }

    fn visit_i64<E: de::Error>(self, n: i64) -> Result<Value, E> {
        self.context.number();
        Ok(if n >= 0 {
            Value::Unsigned(n as u64)
        } else {
            Value::Negative(!(n as u64))
        })
    }

    fn visit_f64<E: de::Error>(self, f: f64) -> Result<Value, E> {
        self.context.number();
        Ok(self.context.float(f))
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<Value, E> {
        Ok(Value::Text(s.to_owned()))
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<Value, E> {
        Ok(Value::Text(s))
    }

    fn visit_unit<E: de::Error>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(inner)? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let inner = self.enter()?;
        let mut pairs = Vec::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            if !seen.insert(key.clone()) {
                self.context.broken.set(Some(Rule::DuplicateKey));
                return Err(de::Error::custom(format!("duplicate key {key:?}")));
            }
            let value = map.next_value_seed(inner)?;
            pairs.push((Value::Text(key), value));
        }
        let bytes = match pairs.as_slice() {
            [(Value::Text(key), Value::Text(hex))] if key == "$bytes" => decode_hex(hex),
            _ => None,
        };
        Ok(bytes.map_or(Value::Map(pairs), Value::Bytes))
    }
}

/// Decodes even-length hex of either case; None if malformed.
fn decode_hex(hex: &str) -> Option<Vec<u8>> {
    if !hex.len().is_multiple_of(2) {
        return None;
    }
    let nibble = |b: u8| char::from(b).to_digit(16);
    hex.as_bytes()
        .chunks(2)
        .map(|pair| Some((nibble(pair[0])? * 16 + nibble(pair[1])?) as u8))
        .collect()
}

#[cfg(test)]
mod tests;
