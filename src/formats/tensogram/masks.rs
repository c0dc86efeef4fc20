//! NaN/Inf masks: the descriptor's `masks` entries, their decoding (packed bitmaps stored
//! raw, zstd or lz4; run-length; roaring) and the restoring of the canonical NaN, +Inf
//! or -Inf at every masked position.

use crate::error::{Result, bail, err};
use crate::value::cbor::Value;

use super::codecs::{Compression, bit, decompress, to_usize};
use super::descriptors::{Kind, Layout, text_field, uint_field};

/// Which non-finite value a mask marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MaskKind {
    Nan,
    PosInf,
    NegInf,
}

/// The mask methods a descriptor may name (the ones this build can't decode fail on
/// access, naming the method).
const MASK_METHODS: [&str; 6] = ["none", "rle", "roaring", "zstd", "lz4", "blosc2"];

/// A mask as the descriptor places it: absolute file offsets.
pub(super) struct MaskEntry {
    kind: MaskKind,
    method: String,
    /// Absolute start and end of the mask blob.
    pub(super) start: u64,
    pub(super) end: u64,
}

impl MaskEntry {
    /// The mask relative to a component blob starting at `origin` (at most `start`).
    pub(super) fn relative_to(self, origin: u64) -> Result<Mask> {
        Ok(Mask {
            kind: self.kind,
            method: self.method,
            start: to_usize(self.start - origin)?,
            len: to_usize(self.end - self.start)?,
        })
    }
}

/// Reads a descriptor's `masks` map (none is no masks). Every mask blob must lie in the
/// frame's data region `[data_start, data_end)`; their offsets count from `body_start`.
pub(super) fn mask_entries(
    desc: &Value,
    layout: &Layout<'_>,
    body_start: u64,
    (data_start, data_end): (u64, u64),
) -> Result<Vec<MaskEntry>> {
    let Some(m) = desc.get("masks") else {
        return Ok(Vec::new());
    };
    let entries = m.as_map().ok_or_else(|| {
        err!(
            Format,
            "descriptor 'masks' is {}, expected a map",
            m.type_name()
        )
    })?;
    let mut masks = Vec::new();
    for (key, entry) in entries {
        let kind = match key.as_text() {
            Some("nan") => MaskKind::Nan,
            Some("inf+") => MaskKind::PosInf,
            Some("inf-") => MaskKind::NegInf,
            _ => bail!(Format, "unknown mask kind {key:?}"),
        };
        if !matches!(
            layout.kind,
            Kind::F16 | Kind::BF16 | Kind::F32 | Kind::F64 | Kind::C64 | Kind::C128
        ) {
            bail!(Format, "NaN/Inf masks on dtype '{}'", layout.dtype_name);
        }
        let method = text_field(entry, "method")?.to_owned();
        if !MASK_METHODS.contains(&method.as_str()) {
            bail!(Format, "unknown mask method '{method}'");
        }
        let offset = uint_field(entry, "offset")?;
        let len = uint_field(entry, "length")?;
        let start = body_start.checked_add(offset);
        match (start, start.and_then(|s| s.checked_add(len))) {
            (Some(start), Some(end)) if start >= data_start && end <= data_end => {
                masks.push(MaskEntry {
                    kind,
                    method,
                    start,
                    end,
                });
            }
            _ => bail!(
                Format,
                "{key:?} mask at offset {offset} length {len} lies outside the frame's \
                 data region [{}, {}) (offsets count from the frame body)",
                data_start - body_start,
                data_end - body_start
            ),
        }
    }
    Ok(masks)
}

/// A mask blob, relative to the component's blob.
#[derive(Debug, Clone)]
pub(super) struct Mask {
    kind: MaskKind,
    method: String,
    start: usize,
    len: usize,
}

impl Mask {
    /// Decodes this mask from the component's `stored` bytes and writes its non-finite
    /// value, as elements of `kind`, at every masked one of the `n` elements of `dst`.
    /// Allocates one flag per element.
    pub(super) fn apply(&self, stored: &[u8], dst: &mut [u8], n: usize, kind: Kind) -> Result<()> {
        let blob = self
            .start
            .checked_add(self.len)
            .and_then(|end| stored.get(self.start..end))
            .ok_or_else(|| {
                err!(
                    Internal,
                    "mask blob [{}, +{}) outside the stored bytes",
                    self.start,
                    self.len
                )
            })?;
        let bits = decode_mask(&self.method, blob, n)
            .map_err(|e| e.context(format!("{:?} mask", self.kind)))?;
        restore(dst, &bits, kind, self.kind);
        Ok(())
    }
}

/// Writes the canonical non-finite value of `mask` at every set position of `bits`.
fn restore(dst: &mut [u8], bits: &[bool], kind: Kind, mask: MaskKind) {
    let (pattern, width): (u64, usize) = match (kind, mask) {
        (Kind::F16, MaskKind::Nan) => (0x7E00, 2),
        (Kind::F16, MaskKind::PosInf) => (0x7C00, 2),
        (Kind::F16, MaskKind::NegInf) => (0xFC00, 2),
        (Kind::BF16, MaskKind::Nan) => (0x7FC0, 2),
        (Kind::BF16, MaskKind::PosInf) => (0x7F80, 2),
        (Kind::BF16, MaskKind::NegInf) => (0xFF80, 2),
        (Kind::F32 | Kind::C64, MaskKind::Nan) => (0x7FC0_0000, 4),
        (Kind::F32 | Kind::C64, MaskKind::PosInf) => (0x7F80_0000, 4),
        (Kind::F32 | Kind::C64, MaskKind::NegInf) => (0xFF80_0000, 4),
        (Kind::F64 | Kind::C128, MaskKind::Nan) => (0x7FF8_0000_0000_0000, 8),
        (Kind::F64 | Kind::C128, MaskKind::PosInf) => (0x7FF0_0000_0000_0000, 8),
        (Kind::F64 | Kind::C128, MaskKind::NegInf) => (0xFFF0_0000_0000_0000, 8),
        // Masks on other kinds are refused at open.
        (Kind::Int | Kind::Bitmask, _) => return,
    };
    let per = if matches!(kind, Kind::C64 | Kind::C128) {
        2
    } else {
        1
    };
    let bytes = &pattern.to_le_bytes()[..width];
    for (i, _) in bits.iter().enumerate().filter(|(_, b)| **b) {
        for c in 0..per {
            let at = (i * per + c) * width;
            dst[at..at + width].copy_from_slice(bytes);
        }
    }
}

/// Decodes a NaN/Inf mask blob to `n` flags.
fn decode_mask(method: &str, blob: &[u8], n: usize) -> Result<Vec<bool>> {
    let packed_len = n.div_ceil(8);
    let compression = match method {
        "none" => Compression::None,
        "zstd" => Compression::Zstd,
        "lz4" => Compression::Lz4,
        "rle" => return rle_mask(blob, n),
        "roaring" => return roaring_mask(blob, n),
        other => bail!(
            Unsupported,
            "mask method '{other}' is not supported by this build"
        ),
    };
    let packed = decompress(&compression, blob, packed_len)?;
    if packed.len() != packed_len {
        bail!(
            Format,
            "packed mask of {} bytes for {n} elements, expected {packed_len}",
            packed.len()
        );
    }
    Ok((0..n).map(|i| bit(&packed, i) == 1).collect())
}

/// An empty vector with room for `n` flags, or a `Limit` error.
fn flags_for(n: usize) -> Result<Vec<bool>> {
    let mut out = Vec::new();
    out.try_reserve_exact(n)
        .map_err(|_| err!(Limit, "could not allocate a mask of {n} elements"))?;
    Ok(out)
}

/// Run-length mask: a start bit (0 or 1), then ULEB128 run lengths (each at least 1)
/// of alternating values, summing to `n`.
fn rle_mask(blob: &[u8], n: usize) -> Result<Vec<bool>> {
    if blob.is_empty() {
        if n == 0 {
            return Ok(Vec::new());
        }
        bail!(Format, "empty rle mask for {n} elements");
    }
    let mut value = match blob[0] {
        0 => false,
        1 => true,
        b => bail!(Format, "rle mask start byte is {b:#04x}, expected 0 or 1"),
    };
    let mut out = flags_for(n)?;
    let mut pos = 1;
    while pos < blob.len() {
        let run = uleb128(blob, &mut pos)?;
        if run == 0 || run > (n - out.len()) as u64 {
            bail!(
                Format,
                "rle run of {run} at element {} is empty or passes the {n} elements",
                out.len()
            );
        }
        out.resize(out.len() + run as usize, value);
        value = !value;
    }
    if out.len() != n {
        bail!(Format, "rle mask covers {} of {n} elements", out.len());
    }
    Ok(out)
}

/// Reads one ULEB128 run length of an rle mask at `*pos`, moving past it.
fn uleb128(blob: &[u8], pos: &mut usize) -> Result<u64> {
    let mut run = 0u64;
    let mut shift = 0u32;
    loop {
        let Some(&b) = blob.get(*pos) else {
            bail!(Format, "rle mask ends inside a run length");
        };
        *pos += 1;
        if shift > 63 || (shift == 63 && b & 0x7E != 0) {
            bail!(Format, "rle run length overflows 64 bits");
        }
        run |= ((b & 0x7F) as u64) << shift;
        shift += 7;
        if b & 0x80 == 0 {
            return Ok(run);
        }
    }
}

/// The little-endian u16 at index `i` of `b`, as usize.
fn le16(b: &[u8], i: usize) -> usize {
    u16::from_le_bytes([b[2 * i], b[2 * i + 1]]) as usize
}

/// A cursor over a roaring blob: reading past its end is a `Format` error.
struct Cursor<'b> {
    blob: &'b [u8],
    at: usize,
}

impl<'b> Cursor<'b> {
    /// The next `len` bytes.
    fn take(&mut self, len: usize) -> Result<&'b [u8]> {
        let at = self.at;
        let s = self
            .blob
            .get(at..at.saturating_add(len))
            .ok_or_else(|| err!(Format, "roaring mask truncated at byte {at}"))?;
        self.at += len;
        Ok(s)
    }
    /// The next little-endian u32.
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(
            self.take(4)?.try_into().expect("4 bytes"),
        ))
    }
}

/// The flags a roaring bitmap sets; a position at or past their count is a `Format` error.
struct Positions(Vec<bool>);

impl Positions {
    fn set(&mut self, v: usize) -> Result<()> {
        let n = self.0.len();
        match self.0.get_mut(v) {
            Some(slot) => {
                *slot = true;
                Ok(())
            }
            None => bail!(Format, "roaring mask sets position {v} of {n} elements"),
        }
    }
}

/// Roaring bitmap, portable serialization format (cookies 12346 and 12347; array,
/// bitmap and run containers). Every set position must be below `n`.
fn roaring_mask(blob: &[u8], n: usize) -> Result<Vec<bool>> {
    let mut cur = Cursor { blob, at: 0 };
    let (count, runs) = roaring_cookie(&mut cur)?;
    let header = cur.take(count * 4)?;
    if runs.is_none() || count >= 4 {
        cur.take(count * 4)?; // container offsets: the containers follow in order anyway
    }
    let mut out = flags_for(n)?;
    out.resize(n, false);
    let mut positions = Positions(out);
    // Keys must increase and runs must not overlap, so the work is bounded by `n` plus
    // the blob's size whatever the blob says.
    let mut next_key = 0usize;
    for i in 0..count {
        let key = le16(header, 2 * i) << 16;
        if key < next_key {
            bail!(
                Format,
                "roaring mask containers are not in increasing key order"
            );
        }
        next_key = key + (1 << 16);
        let card = le16(header, 2 * i + 1) + 1;
        let is_run = runs.is_some_and(|r| r[i / 8] >> (i % 8) & 1 == 1);
        roaring_container(&mut cur, &mut positions, key, card, is_run)?;
    }
    Ok(positions.0)
}

/// Reads a roaring bitmap's cookie. Returns the container count and, for the run cookie,
/// the bitset saying which containers are run containers.
fn roaring_cookie<'b>(cur: &mut Cursor<'b>) -> Result<(usize, Option<&'b [u8]>)> {
    let cookie = cur.u32()?;
    if cookie & 0xFFFF == 12347 {
        let count = (cookie >> 16) as usize + 1;
        Ok((count, Some(cur.take(count.div_ceil(8))?)))
    } else if cookie == 12346 {
        let count = cur.u32()? as usize;
        if count > 65536 {
            bail!(Format, "roaring mask declares {count} containers");
        }
        Ok((count, None))
    } else {
        bail!(
            Format,
            "roaring mask cookie {cookie:#x} is not 12346 or 12347"
        );
    }
}

/// Reads one container (`card` values, or a run container) and sets its positions
/// (`key` plus each 16-bit value).
fn roaring_container(
    cur: &mut Cursor<'_>,
    positions: &mut Positions,
    key: usize,
    card: usize,
    is_run: bool,
) -> Result<()> {
    if is_run {
        let nruns = le16(cur.take(2)?, 0);
        let pairs = cur.take(nruns * 4)?;
        let mut next = 0usize;
        for r in 0..nruns {
            let start = le16(pairs, 2 * r);
            let len = le16(pairs, 2 * r + 1);
            if start < next {
                bail!(Format, "roaring mask runs overlap or are out of order");
            }
            next = start + len + 1;
            for v in start..=start + len {
                positions.set(key + v)?;
            }
        }
    } else if card > 4096 {
        let words = cur.take(8192)?;
        for (w, chunk) in words.chunks_exact(8).enumerate() {
            let mut word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
            while word != 0 {
                let b = word.trailing_zeros() as usize;
                positions.set(key + w * 64 + b)?;
                word &= word - 1;
            }
        }
    } else {
        let values = cur.take(card * 2)?;
        for j in 0..card {
            positions.set(key + le16(values, j))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn rle_and_roaring_masks_decode() {
        assert_eq!(
            rle_mask(&[0, 1, 2, 1], 4).unwrap(),
            [false, true, true, false]
        );
        assert_eq!(rle_mask(&[0, 5], 4).unwrap_err().kind(), ErrorKind::Format);
        assert_eq!(rle_mask(&[2, 1], 1).unwrap_err().kind(), ErrorKind::Format);
        // One array container {1, 3}, no-run cookie.
        let blob = [
            0x3a, 0x30, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 16, 0, 0, 0, 1, 0, 3, 0,
        ];
        assert_eq!(roaring_mask(&blob, 4).unwrap(), [false, true, false, true]);
        assert_eq!(
            roaring_mask(&blob, 3).unwrap_err().kind(),
            ErrorKind::Format
        );
        assert_eq!(
            roaring_mask(&blob[..15], 4).unwrap_err().kind(),
            ErrorKind::Format
        );
    }
}
