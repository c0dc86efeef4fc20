//! The one reader of CBOR items: heads (through `ciborium-ll`), string bodies, and
//! the walk over nested items under the depth limit and the allocation budget.

use std::borrow::Cow;

use ciborium_ll::{Decoder, Header};

use super::{DecodeError, Value};

const BREAK: u8 = 0xff;

/// Containers reserve at most this many items up front, whatever count they declare;
/// beyond it they grow by the items actually read.
const RESERVE_AT_MOST: usize = 64;

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

pub(super) fn fail<T>(offset: usize, message: impl Into<String>) -> Result<T, DecodeError> {
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
pub(super) struct Pull<'a> {
    pub(super) input: &'a [u8],
    pub(super) pos: usize,
    pub(super) max_depth: usize,
    /// Bytes the tree being built may still take (`item` only).
    pub(super) budget: usize,
    pub(super) budget_total: usize,
}

impl<'a> Pull<'a> {
    pub(super) fn new(input: &'a [u8], max_depth: usize) -> Self {
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
    pub(super) fn charge(&mut self, n: usize, at: usize) -> Result<(), DecodeError> {
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

    pub(super) fn remaining(&self) -> usize {
        self.input.len() - self.pos
    }

    /// Errors unless at least `count * per_item` bytes remain.
    #[inline]
    pub(super) fn check_room(&self, count: u64, per_item: u64) -> Result<(), DecodeError> {
        let (needed, left) = (count.saturating_mul(per_item), self.remaining());
        if needed > left as u64 {
            return Err(self.too_short(needed));
        }
        Ok(())
    }

    #[cold]
    pub(super) fn too_short(&self, needed: u64) -> DecodeError {
        let left = self.remaining();
        DecodeError {
            offset: self.pos,
            message: format!("unexpected end of input: need at least {needed} bytes, {left} left"),
            too_deep: false,
        }
    }

    #[inline(always)]
    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], DecodeError> {
        self.check_room(n as u64, 1)?;
        let bytes = &self.input[self.pos..self.pos + n];
        self.pos += n;
        Ok(bytes)
    }

    /// Consumes a break byte if one is next; errors at end of input.
    pub(super) fn at_break(&mut self) -> Result<bool, DecodeError> {
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
    pub(super) fn head(&mut self) -> Result<Header, DecodeError> {
        match short_head(self.input, self.pos) {
            Some((header, used)) => {
                self.pos += used;
                Ok(header)
            }
            None => self.head_general(),
        }
    }

    /// A float, a simple value, a break, an indefinite length, a truncated or an invalid
    /// head, through ciborium-ll.
    #[inline(never)]
    pub(super) fn head_general(&mut self) -> Result<Header, DecodeError> {
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
    pub(super) fn invalid_head(&self, at: usize) -> DecodeError {
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

    pub(super) fn enter(&self, depth: usize, at: usize) -> Result<usize, DecodeError> {
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
    pub(super) fn chunk(&mut self, text: bool, len: usize) -> Result<&'a [u8], DecodeError> {
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
    pub(super) fn string(
        &mut self,
        text: bool,
        len: Option<usize>,
    ) -> Result<Cow<'a, [u8]>, DecodeError> {
        if let Some(len) = len {
            return self.chunk(text, len).map(Cow::Borrowed);
        }
        let mut out = Vec::new();
        self.chunks(text, |chunk| out.extend_from_slice(chunk))?;
        Ok(Cow::Owned(out))
    }

    /// The chunks of an indefinite string, up to its break: each must be a definite
    /// string of the same type (RFC 8949 3.2.3), each valid UTF-8 on its own for text.
    pub(super) fn chunks(
        &mut self,
        text: bool,
        mut each: impl FnMut(&'a [u8]),
    ) -> Result<(), DecodeError> {
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
    pub(super) fn declared(&self, len: Option<usize>, per_item: u64) -> Result<Len, DecodeError> {
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
    pub(super) fn more(&mut self, len: &mut Len) -> Result<bool, DecodeError> {
        match len {
            Len::Definite(0) => Ok(false),
            Len::Definite(n) => {
                *n -= 1;
                Ok(true)
            }
            Len::Indefinite => Ok(!self.at_break()?),
        }
    }

    pub(super) fn item(&mut self, depth: usize) -> Result<Value, DecodeError> {
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
    pub(super) fn skip(&mut self, depth: usize) -> Result<(), DecodeError> {
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

/// The head at `pos` when it is one of the common forms, and the bytes it takes: integers,
/// string and container lengths and tags with their argument in the initial byte or in
/// the 1, 2, 4 or 8 bytes after it, and single and double floats; decoded as
/// `ciborium-ll` decodes them. None (for `Pull::head`: ask `ciborium-ll`) for half floats,
/// simple values, breaks, indefinite lengths, reserved and truncated heads.
///
/// The one decoder of heads (the cursor's fast paths and the deterministic check read
/// theirs here too), written out because the profile of opening many-object manifests
/// asks for it: `ciborium-ll` costs ~100 instructions a head, against ~10 here.
#[inline(always)]
pub(super) fn short_head(input: &[u8], pos: usize) -> Option<(Header, usize)> {
    let Some((major, arg, used)) = argument(input, pos) else {
        let rest = input.get(pos..)?;
        return match *rest.first()? {
            0xfa => Some((
                Header::Float(f64::from(f32::from_be_bytes(
                    rest.get(1..5)?.try_into().ok()?,
                ))),
                5,
            )),
            0xfb => Some((
                Header::Float(f64::from_be_bytes(rest.get(1..9)?.try_into().ok()?)),
                9,
            )),
            _ => None,
        };
    };
    let len = Some(arg as usize);
    Some((
        match major {
            0 => Header::Positive(arg),
            1 => Header::Negative(arg),
            2 => Header::Bytes(len),
            3 => Header::Text(len),
            4 => Header::Array(len),
            5 => Header::Map(len),
            _ => Header::Tag(arg),
        },
        used,
    ))
}

/// The major type (0 to 6), argument and bytes taken of the head at `pos`, when its
/// argument is in the initial byte or in the 1, 2, 4 or 8 bytes after it (and all of
/// them are in the input): the integer heads of `short_head`, for callers that want one
/// major type and no `Header`.
#[inline(always)]
pub(super) fn argument(input: &[u8], pos: usize) -> Option<(u8, u64, usize)> {
    let byte = *input.get(pos)?;
    let (major, info) = (byte >> 5, byte & 0x1f);
    if major == 7 {
        return None;
    }
    match info {
        0..24 => Some((major, u64::from(info), 1)),
        24 => Some((major, u64::from(*input.get(pos + 1)?), 2)),
        25..28 => {
            let n = 1usize << (info - 24);
            let arg = input.get(pos + 1..pos + 1 + n)?;
            Some((
                major,
                arg.iter().fold(0u64, |a, &b| (a << 8) | u64::from(b)),
                1 + n,
            ))
        }
        _ => None,
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
