//! The protobuf wire format, only as far as reading ONNX's initializers needs: a message
//! is a run of fields, each a varint key (field number << 3 | wire type) and a value
//! (varint, 8 bytes, length-delimited, 4 bytes). Groups (wire types 3 and 4) are refused.
//! Fields are read one at a time through `ReadAt`, so a length-delimited field (a
//! tensor's `raw_data`, a graph's nodes) is stepped over without being read.

use crate::error::{Result, bail, err};
use crate::formats::ReadAt;

/// A field's value: scalars as read, length-delimited ones as where they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Wire {
    Varint(u64),
    Fixed64(u64),
    Fixed32(u32),
    /// `len` bytes at file offset `at`.
    Bytes {
        at: u64,
        len: u64,
    },
}

/// The fields of the message in file bytes `[at, end)`.
pub(crate) struct Fields<'a, 'r> {
    read: &'a ReadAt<'r>,
    at: u64,
    end: u64,
}

impl<'a, 'r> Fields<'a, 'r> {
    pub(crate) fn new(read: &'a ReadAt<'r>, at: u64, end: u64) -> Fields<'a, 'r> {
        Fields { read, at, end }
    }

    /// The next field (its number and value), or None at the message's end.
    pub(crate) fn next_field(&mut self) -> Result<Option<(u32, Wire)>> {
        if self.at >= self.end {
            return Ok(None);
        }
        let head = (self.read)(self.at, (self.end - self.at).min(20))?;
        let (key, n) = varint(&head).ok_or_else(|| self.bad("a field key"))?;
        let mut used = n;
        let number = key >> 3;
        if number == 0 || number > u64::from(u32::MAX >> 3) {
            return Err(self.bad("a field number"));
        }
        let wire = match key & 7 {
            0 => {
                let (v, m) = varint(&head[used..]).ok_or_else(|| self.bad("a varint"))?;
                used += m;
                Wire::Varint(v)
            }
            1 => {
                let b = head
                    .get(used..used + 8)
                    .ok_or_else(|| self.bad("8 bytes"))?;
                used += 8;
                Wire::Fixed64(u64::from_le_bytes(b.try_into().expect("8")))
            }
            5 => {
                let b = head
                    .get(used..used + 4)
                    .ok_or_else(|| self.bad("4 bytes"))?;
                used += 4;
                Wire::Fixed32(u32::from_le_bytes(b.try_into().expect("4")))
            }
            2 => {
                let (len, m) = varint(&head[used..]).ok_or_else(|| self.bad("a length"))?;
                used += m;
                let at = self.at + used as u64;
                if len > self.end - at {
                    bail!(
                        Format,
                        "protobuf field {number} at offset {} holds {len} bytes, past its message's end at {}",
                        self.at,
                        self.end
                    );
                }
                used += len as usize;
                Wire::Bytes { at, len }
            }
            t => bail!(
                Format,
                "protobuf field {number} at offset {} has wire type {t} (groups and unknown types are not read)",
                self.at
            ),
        };
        self.at += used as u64;
        Ok(Some((number as u32, wire)))
    }

    fn bad(&self, what: &str) -> crate::error::Error {
        err!(
            Format,
            "protobuf message cut short or malformed: {what} at offset {}",
            self.at
        )
    }
}

/// A varint at the start of `b`: its value and length; None when cut short or longer
/// than 10 bytes.
pub(crate) fn varint(b: &[u8]) -> Option<(u64, usize)> {
    let mut v = 0u64;
    for (i, &byte) in b.iter().take(10).enumerate() {
        v |= u64::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            return Some((v, i + 1));
        }
    }
    None
}

/// The fields of a message already in memory: (number, value) with `Bytes` offsets
/// relative to `b`.
pub(crate) fn each_field(b: &[u8], mut f: impl FnMut(u32, Wire) -> Result<()>) -> Result<()> {
    let read = |at: u64, len: u64| -> Result<std::borrow::Cow<'_, [u8]>> {
        Ok(std::borrow::Cow::Borrowed(
            &b[at as usize..(at + len) as usize],
        ))
    };
    let mut fields = Fields::new(&read, 0, b.len() as u64);
    while let Some((n, w)) = fields.next_field()? {
        f(n, w)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_and_varints() {
        assert_eq!(varint(&[0x96, 0x01]), Some((150, 2)));
        assert_eq!(varint(&[0xff; 11]), None);
        assert_eq!(varint(&[0x80]), None);
        // field 1 varint 150, field 2 bytes "ab", field 5 fixed32.
        let msg = [0x08, 0x96, 0x01, 0x12, 0x02, b'a', b'b', 0x2d, 1, 0, 0, 0];
        let mut got = Vec::new();
        each_field(&msg, |n, w| {
            got.push((n, w));
            Ok(())
        })
        .unwrap();
        assert_eq!(
            got,
            [
                (1, Wire::Varint(150)),
                (2, Wire::Bytes { at: 5, len: 2 }),
                (5, Wire::Fixed32(1))
            ]
        );
        assert!(each_field(&[0x12, 0x05, b'a'], |_, _| Ok(())).is_err());
        assert!(each_field(&[0x0b], |_, _| Ok(())).is_err());
    }
}
