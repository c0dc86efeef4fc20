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

use std::borrow::Cow;
use std::fmt;

use ciborium_ll::{Decoder, Encoder, Header};

pub(crate) mod deterministic;

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
    pub(crate) fn positioned(self, what: &str, base: u64) -> crate::Error {
        let kind = if self.too_deep {
            crate::ErrorKind::Limit
        } else {
            crate::ErrorKind::Format
        };
        crate::Error::new(
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

const BREAK: u8 = 0xff;

/// Containers reserve at most this many items up front, whatever count they declare;
/// beyond it they grow by the items actually read.
const RESERVE_AT_MOST: usize = 64;

fn fail<T>(offset: usize, message: impl Into<String>) -> Result<T, DecodeError> {
    Err(DecodeError {
        offset,
        message: message.into(),
        too_deep: false,
    })
}

/// The bytes `ciborium-ll` reads a head from: a slice, read without a call to `memcpy`
/// for the 1 to 9 bytes of a head (what `std::io::Read` for a slice would cost).
struct Input<'a>(&'a [u8]);

/// The input ended inside a head.
struct EndOfInput;

impl ciborium_io::Read for Input<'_> {
    type Error = EndOfInput;

    #[inline(always)]
    fn read_exact(&mut self, data: &mut [u8]) -> Result<(), EndOfInput> {
        let Some((head, rest)) = self.0.split_at_checked(data.len()) else {
            return Err(EndOfInput);
        };
        for (d, s) in data.iter_mut().zip(head) {
            *d = *s;
        }
        self.0 = rest;
        Ok(())
    }
}

/// Items read one at a time from a byte slice; heads through `ciborium-ll`.
struct Pull<'a> {
    input: &'a [u8],
    pos: usize,
    max_depth: usize,
    /// Bytes the tree being built may still take (`item` only).
    budget: usize,
    budget_total: usize,
}

impl<'a> Pull<'a> {
    fn new(input: &'a [u8], max_depth: usize) -> Self {
        Pull {
            input,
            pos: 0,
            max_depth,
            budget: usize::MAX,
            budget_total: usize::MAX,
        }
    }

    /// Takes `n` bytes of the tree budget for the item at `at`.
    #[inline]
    fn charge(&mut self, n: usize, at: usize) -> Result<(), DecodeError> {
        match self.budget.checked_sub(n) {
            Some(left) => {
                self.budget = left;
                Ok(())
            }
            None => Err(DecodeError {
                offset: at,
                message: format!(
                    "the decoded tree would take more than {} bytes of memory",
                    self.budget_total
                ),
                too_deep: true,
            }),
        }
    }

    fn remaining(&self) -> usize {
        self.input.len() - self.pos
    }

    /// Errors unless at least `count * per_item` bytes remain.
    #[inline]
    fn check_room(&self, count: u64, per_item: u64) -> Result<(), DecodeError> {
        let (needed, left) = (count.saturating_mul(per_item), self.remaining());
        if needed > left as u64 {
            return Err(self.too_short(needed));
        }
        Ok(())
    }

    #[cold]
    fn too_short(&self, needed: u64) -> DecodeError {
        let left = self.remaining();
        DecodeError {
            offset: self.pos,
            message: format!("unexpected end of input: need at least {needed} bytes, {left} left"),
            too_deep: false,
        }
    }

    #[inline(always)]
    fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        self.check_room(n as u64, 1)?;
        let bytes = &self.input[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    /// Consumes a break byte if one is next; errors at end of input.
    fn at_break(&mut self) -> Result<bool, DecodeError> {
        match self.input.get(self.pos) {
            None => fail(self.pos, "unexpected end of input: missing break"),
            Some(&b) => {
                self.pos += usize::from(b == BREAK);
                Ok(b == BREAK)
            }
        }
    }

    /// The next item's head.
    #[inline(always)]
    fn head(&mut self) -> Result<Header, DecodeError> {
        // Fast path, which the profile of opening many-object manifests asks for (ciborium-ll
        // costs ~100 instructions a head, against ~10 here): integers, string and container
        // lengths and tags with their argument in the initial byte or in the 1, 2, 4 or 8
        // bytes after it, decoded as ciborium-ll decodes them. Floats, simple values,
        // breaks, indefinite lengths and reserved encodings go through ciborium-ll.
        if let Some(&byte) = self.input.get(self.pos)
            && byte < 0xe0
            && byte & 0x1f < 28
        {
            let info = byte & 0x1f;
            let (arg, used) = if info < 24 {
                (u64::from(info), 1)
            } else {
                let n = 1usize << (info - 24);
                match self.input.get(self.pos + 1..self.pos + 1 + n) {
                    Some(arg) => (
                        arg.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b)),
                        1 + n,
                    ),
                    None => return self.head_general(),
                }
            };
            self.pos += used;
            let len = Some(arg as usize);
            return Ok(match byte >> 5 {
                0 => Header::Positive(arg),
                1 => Header::Negative(arg),
                2 => Header::Bytes(len),
                3 => Header::Text(len),
                4 => Header::Array(len),
                5 => Header::Map(len),
                _ => Header::Tag(arg),
            });
        }
        self.head_general()
    }

    /// A float, a simple value, a break, an indefinite length, a truncated or an invalid
    /// head, through ciborium-ll.
    #[inline(never)]
    fn head_general(&mut self) -> Result<Header, DecodeError> {
        let mut decoder = Decoder::from(Input(&self.input[self.pos..]));
        match decoder.pull() {
            Ok(header) => {
                let used = decoder.offset();
                // RFC 8949 3.3: simple values below 32 have only the one-byte form.
                if let Header::Simple(n) = header
                    && n < 32
                    && used == 2
                {
                    return fail(
                        self.pos,
                        format!("simple value {n} must not use the two-byte form"),
                    );
                }
                self.pos += used;
                Ok(header)
            }
            Err(ciborium_ll::Error::Io(_)) => fail(
                self.pos + decoder.offset(),
                "unexpected end of input in an item head",
            ),
            Err(ciborium_ll::Error::Syntax(at)) => Err(self.invalid_head(self.pos + at)),
        }
    }

    /// Why `ciborium-ll` refused the head at `at`.
    #[cold]
    fn invalid_head(&self, at: usize) -> DecodeError {
        let byte = self.input[at];
        let (major, info) = (byte >> 5, byte & 0x1f);
        let message = if (28..=30).contains(&info) {
            format!("reserved additional information {info}")
        } else {
            format!("indefinite length is invalid for major type {major}")
        };
        DecodeError {
            offset: at,
            message,
            too_deep: false,
        }
    }

    fn enter(&self, depth: usize, at: usize) -> Result<usize, DecodeError> {
        if depth >= self.max_depth {
            return Err(DecodeError {
                offset: at,
                message: format!("nesting deeper than {} levels", self.max_depth),
                too_deep: true,
            });
        }
        Ok(depth + 1)
    }

    /// The body of a definite string chunk, checking UTF-8 for text.
    #[inline(always)]
    fn chunk(&mut self, text: bool, len: usize) -> Result<&'a [u8], DecodeError> {
        let at = self.pos;
        let bytes = self.take(len)?;
        if text
            && !bytes.is_ascii()
            && let Err(e) = std::str::from_utf8(bytes)
        {
            return fail(at + e.valid_up_to(), "invalid UTF-8 in text string");
        }
        Ok(bytes)
    }

    /// A string's body after its head (`len` None: indefinite), borrowed when definite.
    fn string(&mut self, text: bool, len: Option<usize>) -> Result<Cow<'a, [u8]>, DecodeError> {
        if let Some(len) = len {
            return self.chunk(text, len).map(Cow::Borrowed);
        }
        let mut out = Vec::new();
        self.chunks(text, |chunk| out.extend_from_slice(chunk))?;
        Ok(Cow::Owned(out))
    }

    /// The chunks of an indefinite string, up to its break: each must be a definite
    /// string of the same type (RFC 8949 3.2.3), each valid UTF-8 on its own for text.
    fn chunks(&mut self, text: bool, mut each: impl FnMut(&'a [u8])) -> Result<(), DecodeError> {
        loop {
            let at = self.pos;
            if self.at_break()? {
                return Ok(());
            }
            let len = match (text, self.head()?) {
                (false, Header::Bytes(Some(len))) | (true, Header::Text(Some(len))) => len,
                _ => {
                    return fail(
                        at,
                        "chunk of an indefinite-length string must be a definite string of the same type",
                    );
                }
            };
            each(self.chunk(text, len)?);
        }
    }

    /// A container's declared length, checked against the input: every item needs at
    /// least `per_item` bytes.
    fn declared(&self, len: Option<usize>, per_item: u64) -> Result<Len, DecodeError> {
        match len {
            None => Ok(Len::Indefinite),
            Some(n) => {
                self.check_room(n as u64, per_item)?;
                Ok(Len::Definite(n as u64))
            }
        }
    }

    /// Whether another element of a container follows; consumes the break of an
    /// indefinite one and counts down a definite one.
    fn more(&mut self, len: &mut Len) -> Result<bool, DecodeError> {
        match len {
            Len::Definite(0) => Ok(false),
            Len::Definite(n) => {
                *n -= 1;
                Ok(true)
            }
            Len::Indefinite => Ok(!self.at_break()?),
        }
    }

    fn item(&mut self, depth: usize) -> Result<Value, DecodeError> {
        let start = self.pos;
        self.charge(std::mem::size_of::<Value>(), start)?;
        Ok(match self.head()? {
            Header::Positive(n) => Value::Unsigned(n),
            Header::Negative(n) => Value::Negative(n),
            Header::Float(f) => Value::Float(f),
            Header::Simple(n) => simple(n),
            Header::Break => return fail(start, "unexpected break"),
            Header::Bytes(len) => {
                let bytes = self.string(false, len)?;
                self.charge(bytes.len(), start)?;
                Value::Bytes(bytes.into_owned())
            }
            Header::Text(len) => {
                let bytes = self.string(true, len)?;
                self.charge(bytes.len(), start)?;
                let bytes = bytes.into_owned();
                // Every chunk was validated, and chunks end on character boundaries.
                Value::Text(
                    String::from_utf8(bytes)
                        .or_else(|_| fail(start, "invalid UTF-8 in text string"))?,
                )
            }
            Header::Array(len) => {
                let depth = self.enter(depth, start)?;
                let mut len = self.declared(len, 1)?;
                let mut items = Vec::with_capacity(len.reserve());
                while self.more(&mut len)? {
                    let item = self.item(depth)?;
                    grow(&mut items, start)?;
                    items.push(item);
                }
                Value::Array(items)
            }
            Header::Map(len) => {
                let depth = self.enter(depth, start)?;
                let mut len = self.declared(len, 2)?;
                let mut pairs = Vec::with_capacity(len.reserve());
                while self.more(&mut len)? {
                    let key = self.item(depth)?;
                    let value = self.item(depth)?;
                    grow(&mut pairs, start)?;
                    pairs.push((key, value));
                }
                Value::Map(pairs)
            }
            Header::Tag(tag) => {
                let depth = self.enter(depth, start)?;
                Value::Tag(tag, Box::new(self.item(depth)?))
            }
        })
    }

    /// Validates one item exactly as `item` would (UTF-8, heads, breaks, depth) without
    /// building it: no allocation at all.
    fn skip(&mut self, depth: usize) -> Result<(), DecodeError> {
        let start = self.pos;
        match self.head()? {
            Header::Positive(_) | Header::Negative(_) | Header::Float(_) | Header::Simple(_) => {
                Ok(())
            }
            Header::Break => fail(start, "unexpected break"),
            Header::Bytes(Some(len)) => self.chunk(false, len).map(drop),
            Header::Text(Some(len)) => self.chunk(true, len).map(drop),
            Header::Bytes(None) => self.chunks(false, drop),
            Header::Text(None) => self.chunks(true, drop),
            Header::Array(len) | Header::Map(len) => {
                let depth = self.enter(depth, start)?;
                let per = if self.input[start] >> 5 == 4 { 1 } else { 2 };
                let mut len = self.declared(len, per)?;
                while self.more(&mut len)? {
                    for _ in 0..per {
                        self.skip(depth)?;
                    }
                }
                Ok(())
            }
            Header::Tag(_) => {
                let depth = self.enter(depth, start)?;
                self.skip(depth)
            }
        }
    }
}

/// Makes room for one more item, failing with a limit error (not an abort) when the
/// system refuses the memory.
#[inline]
fn grow<T>(list: &mut Vec<T>, at: usize) -> Result<(), DecodeError> {
    if list.len() == list.capacity() && list.try_reserve(1).is_err() {
        return Err(DecodeError {
            offset: at,
            message: format!(
                "could not allocate room for more than {} items of a container",
                list.len()
            ),
            too_deep: true,
        });
    }
    Ok(())
}

/// The value of a simple head (floats and breaks are decoded apart).
pub(crate) fn simple(n: u8) -> Value {
    match n {
        20 => Value::Bool(false),
        21 => Value::Bool(true),
        22 => Value::Null,
        23 => Value::Undefined,
        n => Value::Simple(n),
    }
}

/// A pull reader for parsing a known schema straight from CBOR bytes, so that no tree of
/// the whole document is ever built: memory stays proportional to what the caller keeps.
/// Subtrees the caller doesn't interpret are validated and skipped, or captured as bytes.
pub(crate) struct Cursor<'a> {
    pull: Pull<'a>,
}

/// The length of a container being read: a count, or "until a break".
#[derive(Clone, Copy, Debug)]
pub(crate) enum Len {
    Definite(u64),
    Indefinite,
}

impl Len {
    /// How many items to reserve room for before reading any: a declared count is a
    /// claim, so only a few (the count was checked against the input's length already).
    pub(crate) fn reserve(self) -> usize {
        match self {
            Len::Definite(n) => (n as usize).min(RESERVE_AT_MOST),
            Len::Indefinite => 0,
        }
    }
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

    /// Consumes the next item if it is the one-byte head `head` followed by `body` (a short
    /// definite string the caller knows is valid): a cheap match for a schema's keys.
    #[inline]
    pub(crate) fn take_exact_after_head(&mut self, head: u8, body: &[u8]) -> bool {
        let rest = &self.pull.input[self.pull.pos..];
        if rest.len() > body.len() && rest[0] == head && short_eq(&rest[1..=body.len()], body) {
            self.pull.pos += 1 + body.len();
            return true;
        }
        false
    }

    /// Fast paths for the items of a canonical manifest (issue 19: through the general
    /// calls, each item of a 50,000-object manifest paid for moving results that carry a
    /// `DecodeError`). Each consumes its item and returns it, or returns None having
    /// consumed nothing: the general call then reads the item or reports what is wrong.
    ///
    /// An unsigned integer whose argument is in its head or the 1, 2, 4 or 8 bytes after.
    #[inline]
    pub(crate) fn take_unsigned(&mut self) -> Option<u64> {
        let (input, pos) = (self.pull.input, self.pull.pos);
        let b = *input.get(pos)?;
        if b < 24 {
            self.pull.pos = pos + 1;
            return Some(u64::from(b));
        }
        if !(24..28).contains(&b) {
            return None;
        }
        let n = 1usize << (b - 24);
        let arg = input.get(pos + 1..pos + 1 + n)?;
        self.pull.pos = pos + 1 + n;
        Some(arg.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x)))
    }

    /// A definite text string shorter than 256 bytes, borrowed, if it is UTF-8.
    #[inline]
    pub(crate) fn take_short_text(&mut self) -> Option<&'a str> {
        let (input, pos) = (self.pull.input, self.pull.pos);
        let (len, start) = match *input.get(pos)? {
            b @ 0x60..=0x77 => (usize::from(b & 0x1f), pos + 1),
            0x78 => (usize::from(*input.get(pos + 1)?), pos + 2),
            _ => return None,
        };
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
        let pos = self.pull.pos;
        let b = *self.pull.input.get(pos)?;
        // The checks of `enter` and `declared`, without building their errors.
        let n = usize::from(b & 0x1f);
        let per_item = usize::from(major) - 3;
        if b >> 5 != major
            || n >= 24
            || depth >= self.pull.max_depth
            || n * per_item > self.pull.input.len() - (pos + 1)
        {
            return None;
        }
        self.pull.pos = pos + 1;
        Some(Len::Definite(n as u64))
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

    /// A single or double precision float, read without `ciborium-ll` (the typed
    /// attribute tree reads arrays of them), or None with nothing consumed.
    #[inline]
    pub(crate) fn float(&mut self) -> Option<f64> {
        let rest = &self.pull.input[self.pull.pos..];
        let (value, used) = match *rest.first()? {
            0xfa => (
                f64::from(f32::from_be_bytes(rest.get(1..5)?.try_into().ok()?)),
                5,
            ),
            0xfb => (f64::from_be_bytes(rest.get(1..9)?.try_into().ok()?), 9),
            _ => return None,
        };
        self.pull.pos += used;
        Some(value)
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

/// Appends one head. Writing into a `Vec` cannot fail.
fn put(out: &mut Vec<u8>, header: Header) {
    let _ = Encoder::from(out).push(header);
}

/// Appends the head of major type `major` (0..=6) with argument `n`, shortest form.
pub(crate) fn encode_head(out: &mut Vec<u8>, major: u8, n: u64) {
    let len = Some(n as usize);
    put(
        out,
        match major {
            0 => Header::Positive(n),
            1 => Header::Negative(n),
            2 => Header::Bytes(len),
            3 => Header::Text(len),
            4 => Header::Array(len),
            5 => Header::Map(len),
            _ => Header::Tag(n),
        },
    );
}

/// Appends the deterministic encoding: definite lengths, shortest heads and floats (NaN
/// as f97e00), maps in stored order.
///
/// `Simple(n)` is only meaningful for n in 0..=19 or 32..=255; other values produce other items or invalid bytes.
pub fn encode(value: &Value, out: &mut Vec<u8>) {
    match value {
        Value::Unsigned(n) => put(out, Header::Positive(*n)),
        Value::Negative(n) => put(out, Header::Negative(*n)),
        Value::Float(f) => put(out, Header::Float(if f.is_nan() { f64::NAN } else { *f })),
        Value::Bytes(b) => {
            put(out, Header::Bytes(Some(b.len())));
            out.extend_from_slice(b);
        }
        Value::Text(s) => {
            put(out, Header::Text(Some(s.len())));
            out.extend_from_slice(s.as_bytes());
        }
        Value::Array(items) => {
            put(out, Header::Array(Some(items.len())));
            items.iter().for_each(|item| encode(item, out));
        }
        Value::Map(pairs) => {
            put(out, Header::Map(Some(pairs.len())));
            for (key, val) in pairs {
                encode(key, out);
                encode(val, out);
            }
        }
        Value::Tag(tag, inner) => {
            put(out, Header::Tag(*tag));
            encode(inner, out);
        }
        Value::Bool(b) => put(out, Header::Simple(if *b { 21 } else { 20 })),
        Value::Null => put(out, Header::Simple(22)),
        Value::Undefined => put(out, Header::Simple(23)),
        Value::Simple(n) => put(out, Header::Simple(*n)),
    }
}

/// Encodes a value into a new buffer (see [`encode`]).
pub fn to_vec(value: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode(value, &mut out);
    out
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

/// `a == b` for two short slices of the same length (schema keys, up to 23 bytes): compared
/// in overlapping words, fewer instructions than a byte loop or a call to memcmp.
#[inline]
fn short_eq(a: &[u8], b: &[u8]) -> bool {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Bytes from hex text (shared with `deterministic`'s tests).
    pub(crate) fn hex(s: &str) -> Vec<u8> {
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn dec(s: &str) -> Result<Value, DecodeError> {
        decode(&hex(s), DEFAULT_MAX_DEPTH)
    }

    fn err_at(s: &str) -> usize {
        dec(s).expect_err(s).offset
    }

    fn text(s: &str) -> Value {
        Value::Text(s.into())
    }

    /// Runs `f` on a thread with a 2 MiB stack, like a default spawned thread.
    fn on_small_stack<F: FnOnce() + Send + 'static>(f: F) {
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(f)
            .unwrap()
            .join()
            .unwrap();
    }

    #[test]
    fn rfc_8949_encodings() {
        use Value::*;
        let cases = [
            (Unsigned(0), "00"),
            (Unsigned(23), "17"),
            (Unsigned(24), "1818"),
            (Unsigned(1000), "1903e8"),
            (Unsigned(1000000), "1a000f4240"),
            (Unsigned(1000000000000), "1b000000e8d4a51000"),
            (Unsigned(u64::MAX), "1bffffffffffffffff"),
            (Negative(u64::MAX), "3bffffffffffffffff"),
            (Negative(0), "20"),
            (Negative(999), "3903e7"),
            (Float(0.0), "f90000"),
            (Float(-0.0), "f98000"),
            (Float(0.5), "f93800"),
            (Float(1.5), "f93e00"),
            (Float(65504.0), "f97bff"),
            (Float(100000.0), "fa47c35000"),
            (Float(3.4028234663852886e38), "fa7f7fffff"),
            (Float(1.1), "fb3ff199999999999a"),
            (Float(1.0e300), "fb7e37e43c8800759c"),
            (Float(5.960464477539063e-8), "f90001"),
            (Float(0.00006103515625), "f90400"),
            (Float(-4.0), "f9c400"),
            (Float(f64::INFINITY), "f97c00"),
            (Float(f64::NEG_INFINITY), "f9fc00"),
            (Float(f64::NAN), "f97e00"),
            (text(""), "60"),
            (text("a"), "6161"),
            (text("\u{00fc}"), "62c3bc"),
            (Bytes(vec![]), "40"),
            (Bytes(vec![1, 2]), "420102"),
            (Array(vec![]), "80"),
            (
                Array(vec![Unsigned(1), Array(vec![Unsigned(2), Unsigned(3)])]),
                "8201820203",
            ),
            (
                Array((1..=25).map(Unsigned).collect()),
                "98190102030405060708090a0b0c0d0e0f101112131415161718181819",
            ),
            (Map(vec![]), "a0"),
            (Map(vec![(text("a"), Unsigned(1))]), "a1616101"),
            (
                Map(vec![(Unsigned(1), Unsigned(2)), (Unsigned(3), Unsigned(4))]),
                "a201020304",
            ),
            (Tag(1, Box::new(Unsigned(1363896240))), "c11a514b67b0"),
            (Tag(0, Box::new(text("a"))), "c06161"),
            (Bool(false), "f4"),
            (Bool(true), "f5"),
            (Null, "f6"),
            (Undefined, "f7"),
            (Simple(16), "f0"),
            (Simple(255), "f8ff"),
        ];
        for (value, expected) in cases {
            assert_eq!(to_vec(&value), hex(expected), "{value:?}");
            let back = dec(expected).unwrap();
            match value {
                Float(f) if f.is_nan() => assert!(matches!(back, Float(g) if g.is_nan())),
                _ => assert_eq!(back, value, "{expected}"),
            }
        }
    }

    #[test]
    fn heads_with_non_shortest_arguments() {
        assert_eq!(dec("17").unwrap(), Value::Unsigned(23));
        assert_eq!(dec("1800").unwrap(), Value::Unsigned(0));
        assert_eq!(dec("190001").unwrap(), Value::Unsigned(1));
        assert_eq!(dec("1a00000001").unwrap(), Value::Unsigned(1));
        assert_eq!(dec("1b0000000000000001").unwrap(), Value::Unsigned(1));
        assert_eq!(dec("3800").unwrap(), Value::Negative(0));
        assert_eq!(dec("5800").unwrap(), Value::Bytes(vec![]));
        assert_eq!(err_at("790001"), 3); // one byte declared, none left
        assert_eq!(dec("79000161").unwrap(), text("a"));
        assert_eq!(
            dec("9a0000000101").unwrap(),
            Value::Array(vec![Value::Unsigned(1)])
        );
        assert_eq!(
            dec("bb00000000000000010102").unwrap(),
            Value::Map(vec![(Value::Unsigned(1), Value::Unsigned(2))])
        );
        assert_eq!(
            dec("d81801").unwrap(),
            Value::Tag(24, Box::new(Value::Unsigned(1)))
        );
        assert_eq!(
            dec("db000000000000000101").unwrap(),
            Value::Tag(1, Box::new(Value::Unsigned(1)))
        );
    }

    #[test]
    fn reserved_additional_info_is_rejected() {
        for major in 0u8..8 {
            for info in 28u8..=30 {
                let byte = (major << 5) | info;
                assert_eq!(
                    decode(&[byte, 0, 0, 0, 0, 0, 0, 0, 0], 8)
                        .unwrap_err()
                        .offset,
                    0,
                    "{byte:#x}"
                );
            }
        }
        assert_eq!(err_at("811c"), 1);
    }

    #[test]
    fn indefinite_lengths() {
        assert_eq!(
            dec("5f42010243030405ff").unwrap(),
            Value::Bytes(vec![1, 2, 3, 4, 5])
        );
        assert_eq!(dec("5fff").unwrap(), Value::Bytes(vec![]));
        assert_eq!(
            dec("7f657374726561646d696e67ff").unwrap(),
            text("streaming")
        );
        assert_eq!(dec("9fff").unwrap(), Value::Array(vec![]));
        let nested = dec("9f018202039f0405ffff").unwrap();
        assert_eq!(to_vec(&nested), hex("8301820203820405"));
        let map = dec("bf61610161629f0203ffff").unwrap();
        assert_eq!(to_vec(&map), hex("a26161016162820203"));
        assert_eq!(
            dec("a26161bf61620361630461647f616561ffffff")
                .unwrap_err()
                .offset,
            16
        ); // 0xff is not UTF-8
        // Chunks must be definite strings of the same major type.
        assert_eq!(err_at("5f6161ff"), 1);
        assert_eq!(err_at("7f4161ff"), 1);
        assert_eq!(err_at("5f5f4101ffff"), 1);
        assert_eq!(err_at("7f617801ff"), 3);
        // Break missing, or an odd number of items in a map.
        assert_eq!(err_at("5f4101"), 3);
        assert_eq!(err_at("9f0102"), 3);
        assert_eq!(err_at("bf01ff"), 2);
        // Indefinite length on integers and tags.
        assert_eq!(err_at("1f"), 0);
        assert_eq!(err_at("3f"), 0);
        assert_eq!(err_at("df01"), 0);
    }

    #[test]
    fn stray_break_is_rejected() {
        assert_eq!(err_at("ff"), 0);
        assert_eq!(err_at("81ff"), 1);
        assert_eq!(err_at("a1ff01"), 1);
        assert_eq!(err_at("a101ff"), 2);
        assert_eq!(err_at("c1ff"), 1);
        assert_eq!(err_at("9f01c1ffff"), 3);
    }

    #[test]
    fn floats_decode_exactly() {
        let cases: [(&str, f64); 12] = [
            ("f90000", 0.0),
            ("f93c00", 1.0),
            ("f9c000", -2.0),
            ("f97bff", 65504.0),
            ("f90001", 5.960464477539063e-8),
            ("f903ff", 0.00006097555160522461),
            ("f90400", 0.00006103515625),
            ("f97c00", f64::INFINITY),
            ("f9fc00", f64::NEG_INFINITY),
            ("fa47c35000", 100000.0),
            ("fb3ff199999999999a", 1.1),
            ("fa00000001", f64::from(f32::from_bits(1))),
        ];
        for (h, expected) in cases {
            assert_eq!(dec(h).unwrap(), Value::Float(expected), "{h}");
        }
        assert!(
            matches!(dec("f98000").unwrap(), Value::Float(f) if f == 0.0 && f.is_sign_negative())
        );
        for h in [
            "f97e00",
            "f97c01",
            "f9fe00",
            "fa7fc00000",
            "fb7ff8000000000000",
        ] {
            assert!(
                matches!(dec(h).unwrap(), Value::Float(f) if f.is_nan()),
                "{h}"
            );
        }
    }

    #[test]
    fn every_half_float_round_trips_through_f64() {
        for bits in 0..=u16::MAX {
            let wire = [0xf9, (bits >> 8) as u8, bits as u8];
            let Value::Float(f) = decode(&wire, 0).unwrap() else {
                panic!("not a float")
            };
            if f.is_nan() {
                assert_eq!((bits >> 10) & 0x1f, 0x1f);
                continue;
            }
            assert_eq!(to_vec(&Value::Float(f)), wire, "{bits:#06x}");
        }
    }

    #[test]
    fn floats_use_the_shortest_exact_width() {
        let width = |f: f64| to_vec(&Value::Float(f)).len();
        assert_eq!(width(65504.0), 3);
        assert_eq!(width(65505.0), 5);
        assert_eq!(width(2f64.powi(-24)), 3);
        assert_eq!(width(2f64.powi(-25)), 5);
        assert_eq!(width(3.0 * 2f64.powi(-24)), 3);
        assert_eq!(width(1.0 + 2f64.powi(-10)), 3);
        assert_eq!(width(1.0 + 2f64.powi(-11)), 5);
        assert_eq!(width(f64::from(f32::MAX)), 5);
        assert_eq!(width(f64::from(f32::from_bits(1))), 5);
        assert_eq!(width(f64::MAX), 9);
        assert_eq!(width(f64::MIN_POSITIVE), 9);
        assert_eq!(width(0.1), 9);
    }

    #[test]
    fn simple_values() {
        assert_eq!(dec("f4").unwrap(), Value::Bool(false));
        assert_eq!(dec("f5").unwrap(), Value::Bool(true));
        assert_eq!(dec("f6").unwrap(), Value::Null);
        assert_eq!(dec("f7").unwrap(), Value::Undefined);
        assert_eq!(dec("e0").unwrap(), Value::Simple(0));
        assert_eq!(dec("f3").unwrap(), Value::Simple(19));
        assert_eq!(dec("f820").unwrap(), Value::Simple(32));
        assert_eq!(dec("f8ff").unwrap(), Value::Simple(255));
        for h in ["f800", "f814", "f818", "f81f"] {
            assert_eq!(err_at(h), 0, "{h}");
        }
        assert_eq!(err_at("f8"), 1);
    }

    #[test]
    fn text_must_be_utf8() {
        assert_eq!(dec("62c3bc").unwrap(), text("ü"));
        assert_eq!(err_at("62c328"), 1);
        assert_eq!(err_at("6361ed"), 1); // truncated before the check
        assert_eq!(err_at("63616180"), 3);
        assert_eq!(err_at("63eda080"), 1); // encoded surrogate
        // A code point split across chunks is invalid.
        assert_eq!(err_at("7f61c361bcff"), 2);
        // Byte strings carry any bytes.
        assert_eq!(dec("42c328").unwrap(), Value::Bytes(vec![0xc3, 0x28]));
    }

    #[test]
    fn depth_is_bounded() {
        let nest = |prefix: u8, n: usize| {
            let mut v = vec![prefix; n];
            v.push(0x00);
            v
        };
        on_small_stack(move || {
            let bomb = vec![0x81u8; 10_000];
            assert_eq!(decode(&bomb, DEFAULT_MAX_DEPTH).unwrap_err().offset, 128);
            for byte in [0x81, 0x9f, 0xc1] {
                let ok = if byte == 0x9f {
                    let mut v = vec![0x9f; 128];
                    v.push(0);
                    v.extend([0xff; 128]);
                    v
                } else {
                    nest(byte, 128)
                };
                let value = decode(&ok, DEFAULT_MAX_DEPTH).unwrap();
                assert_eq!(
                    to_vec(&value).len(),
                    if byte == 0x9f { 129 } else { ok.len() }
                );
                assert!(decode(&ok, 127).is_err());
            }
            let mut maps = Vec::new();
            for _ in 0..129 {
                maps.extend([0xa1, 0x00]);
            }
            maps.push(0x00);
            assert_eq!(decode(&maps, DEFAULT_MAX_DEPTH).unwrap_err().offset, 256);
            assert!(decode(&maps[2..], DEFAULT_MAX_DEPTH).is_ok());
        });
        assert_eq!(decode(&[0x00], 0).unwrap(), Value::Unsigned(0));
        assert_eq!(decode(&[0x80], 0).unwrap_err().offset, 0);
        assert_eq!(decode(&[0x80], 1).unwrap(), Value::Array(vec![]));
    }

    #[test]
    fn declared_lengths_are_checked_before_allocating() {
        // Byte and text strings of length 2^60 in a 10-byte input.
        assert_eq!(err_at("5b1000000000000000"), 9);
        assert_eq!(err_at("7b100000000000000000"), 9);
        assert_eq!(err_at("5bffffffffffffffff00"), 9);
        // Arrays need one byte per item, maps two.
        assert_eq!(err_at("9bffffffffffffffff00"), 9);
        assert_eq!(err_at("9a7fffffff00"), 5);
        assert_eq!(err_at("bb800000000000000000"), 9);
        assert!(dec("83010203").is_ok());
        assert_eq!(err_at("830102"), 1);
        assert_eq!(err_at("a2010201"), 1);
        assert_eq!(dec("a201020304").unwrap().as_map().unwrap().len(), 2);
        // Inside an indefinite string chunk.
        assert_eq!(err_at("5f5bffffffffffffffff00ff"), 10);
    }

    fn sample() -> Value {
        use Value::*;
        Map(vec![
            (text("name"), text("weight \u{1F600} ü")),
            (
                text("shape"),
                Array(vec![
                    Unsigned(3),
                    Unsigned(300),
                    Unsigned(70000),
                    Unsigned(5_000_000_000),
                ]),
            ),
            (
                text("neg"),
                Array(vec![
                    Negative(0),
                    Negative(23),
                    Negative(24),
                    Negative(u64::MAX),
                ]),
            ),
            (
                text("floats"),
                Array(vec![
                    Float(0.5),
                    Float(-1.0e-300),
                    Float(3.25e10),
                    Float(f64::INFINITY),
                    Float(0.1),
                ]),
            ),
            (Unsigned(7), Bytes((0..=255).collect())),
            (
                Negative(3),
                Map(vec![
                    (Bool(true), Null),
                    (Undefined, Simple(5)),
                    (Simple(200), Bool(false)),
                ]),
            ),
            (
                Array(vec![]),
                Tag(42, Box::new(Tag(u64::MAX, Box::new(Map(vec![]))))),
            ),
            (Bytes(vec![]), Array(vec![text(""), text(&"x".repeat(300))])),
        ])
    }

    #[test]
    fn fast_paths_take_their_item_or_nothing() {
        let unsigned = |b: &[u8]| {
            let mut c = Cursor::new(b, 4);
            (c.take_unsigned(), c.position())
        };
        assert_eq!(unsigned(&[0x17]), (Some(23), 1));
        assert_eq!(unsigned(&[0x18, 0x05]), (Some(5), 2));
        assert_eq!(unsigned(&[0x19, 1, 2]), (Some(0x102), 3));
        assert_eq!(
            unsigned(&[0x1b, 1, 2, 3, 4, 5, 6, 7, 8]),
            (Some(0x0102_0304_0506_0708), 9)
        );
        for nothing in [
            &[0x18][..],
            &[0x1a, 1, 2, 3],
            &[0x1c],
            &[0x20],
            &[0x60],
            &[],
        ] {
            assert_eq!(unsigned(nothing), (None, 0), "{nothing:?}");
        }
        let text = |b: &[u8]| {
            let mut c = Cursor::new(b, 4);
            (c.take_short_text().map(str::to_owned), c.position())
        };
        assert_eq!(text(b"\x63abc"), (Some("abc".into()), 4));
        assert_eq!(text(b"\x60"), (Some(String::new()), 1));
        assert_eq!(text(b"\x78\x03xyz!"), (Some("xyz".into()), 5));
        assert_eq!(text(&[0x62, 0xc3, 0xa9]), (Some("\u{e9}".into()), 3));
        for nothing in [
            &[0x62, 0xff, 0xfe][..],
            &[0x64, b'a'],
            &[0x79, 0, 1, b'a'],
            &[0x7f],
            &[0x40],
        ] {
            assert_eq!(text(nothing), (None, 0), "{nothing:?}");
        }
        let container = |b: &[u8], major: u8, depth: usize| {
            let mut c = Cursor::new(b, 4);
            let len = c.take_short_container(major, depth).map(|l| match l {
                Len::Definite(n) => n,
                Len::Indefinite => u64::MAX,
            });
            (len, c.position())
        };
        assert_eq!(container(&[0xa1, 0x01, 0x02], 5, 0), (Some(1), 1));
        assert_eq!(container(&[0x82, 0x01, 0x02], 4, 0), (Some(2), 1));
        assert_eq!(container(&[0x80], 4, 3), (Some(0), 1));
        // Wrong major, long or indefinite lengths, more items than bytes, too deep.
        assert_eq!(container(&[0x82, 0x01, 0x02], 5, 0), (None, 0));
        assert_eq!(container(&[0x98, 0x01, 0x00], 4, 0), (None, 0));
        assert_eq!(container(&[0x9f, 0xff], 4, 0), (None, 0));
        assert_eq!(container(&[0xa5, 0x00], 5, 0), (None, 0));
        assert_eq!(container(&[0x80], 4, 4), (None, 0));
    }

    #[test]
    fn short_eq_finds_a_difference_at_every_position() {
        let a: Vec<u8> = (1..=24).collect();
        for n in 0..=24 {
            assert!(short_eq(&a[..n], &a[..n]), "{n}");
            for at in 0..n {
                let mut b = a[..n].to_vec();
                b[at] ^= 0x40;
                assert!(!short_eq(&a[..n], &b), "{n} {at}");
            }
        }
    }

    #[test]
    fn encode_decode_round_trip() {
        let value = sample();
        let bytes = to_vec(&value);
        assert_eq!(decode(&bytes, DEFAULT_MAX_DEPTH).unwrap(), value);
        let mut appended = vec![0xaa];
        encode(&value, &mut appended);
        assert_eq!(&appended[1..], &bytes[..]);
        let nan = decode(&to_vec(&Value::Float(f64::NAN)), 0).unwrap();
        assert!(matches!(nan, Value::Float(f) if f.is_nan()));
    }

    #[test]
    fn truncated_input_errors_everywhere() {
        let bytes = to_vec(&sample());
        for len in 0..bytes.len() {
            let err = decode(&bytes[..len], DEFAULT_MAX_DEPTH).unwrap_err();
            assert!(err.offset <= len, "prefix {len}: {err}");
            assert!(err.message.contains("end of input"), "prefix {len}: {err}");
        }
        assert_eq!(err_at(""), 0);
        assert_eq!(err_at("19"), 1);
        assert_eq!(err_at("1b000000"), 1);
        assert_eq!(err_at("fb3ff1"), 1);
        assert_eq!(err_at("826161"), 3);
    }

    #[test]
    fn trailing_bytes_and_prefix_decoding() {
        assert_eq!(err_at("0000"), 1);
        assert_eq!(
            decode_prefix(&hex("820102ff"), 4).unwrap(),
            (
                Value::Array(vec![Value::Unsigned(1), Value::Unsigned(2)]),
                3
            )
        );
        let err = dec("0000").unwrap_err();
        assert_eq!(
            err.to_string(),
            "CBOR error at byte 1: trailing bytes after the item"
        );
    }

    #[test]
    fn integer_extremes() {
        assert_eq!(
            dec("3bffffffffffffffff").unwrap(),
            Value::Negative(u64::MAX)
        );
        assert_eq!(dec("1bffffffffffffffff").unwrap().as_u64(), Some(u64::MAX));
        assert_eq!(dec("3bffffffffffffffff").unwrap().as_u64(), None);
    }

    #[test]
    fn accessors() {
        let value = sample();
        assert!(value.is_map());
        assert_eq!(
            value.get("name").and_then(Value::as_text),
            Some("weight \u{1F600} ü")
        );
        assert_eq!(
            value
                .get("shape")
                .and_then(Value::as_array)
                .map(<[Value]>::len),
            Some(4)
        );
        assert_eq!(
            value.get("shape").unwrap().as_array().unwrap()[1].as_u64(),
            Some(300)
        );
        assert_eq!(value.get("missing"), None);
        assert_eq!(Value::Null.get("name"), None);
        assert_eq!(
            Value::Map(vec![
                (text("k"), Value::Unsigned(1)),
                (text("k"), Value::Unsigned(2))
            ])
            .get("k"),
            Some(&Value::Unsigned(1))
        );
        assert_eq!(value.as_map().unwrap().len(), 8);
        assert!(
            value.as_array().is_none() && value.as_text().is_none() && value.as_u64().is_none()
        );
        assert!(!Value::Array(vec![]).is_map());
        let names: Vec<_> = [
            Value::Unsigned(0),
            Value::Negative(0),
            Value::Float(0.0),
            text(""),
            Value::Bytes(vec![]),
            Value::Bool(true),
            Value::Null,
            Value::Undefined,
            Value::Simple(0),
            Value::Array(vec![]),
            Value::Map(vec![]),
            Value::Tag(0, Box::new(Value::Null)),
        ]
        .iter()
        .map(Value::type_name)
        .collect();
        assert_eq!(
            names,
            [
                "unsigned integer",
                "negative integer",
                "float",
                "text",
                "bytes",
                "bool",
                "null",
                "undefined",
                "simple value",
                "array",
                "map",
                "tag"
            ]
        );
    }
}
