//! The byte-level codecs shared by the decoder (`decode`) and the masks: zstd and lz4 block
//! decompression to a known size, bits read most significant first, fallible buffers.

use std::borrow::Cow;

use crate::error::{Result, bail, err};

/// The compression stage (of a payload, or of a packed mask).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Compression {
    None,
    Zstd,
    /// An LZ4 block after a 4-byte little-endian decompressed size.
    Lz4,
}

/// Decompresses `src` to `len` bytes (borrowed when there is no compression, which does
/// not check the length; else allocates `len` bytes and checks them all written).
pub(super) fn decompress<'a>(
    compression: &Compression,
    src: &'a [u8],
    len: usize,
) -> Result<Cow<'a, [u8]>> {
    Ok(match compression {
        Compression::None => Cow::Borrowed(src),
        Compression::Zstd => {
            let mut out = buffer(len)?;
            crate::codec::zstd_decode_into(src, &mut out)?;
            Cow::Owned(out)
        }
        Compression::Lz4 => Cow::Owned(lz4_block(src, len)?),
    })
}

/// Decompresses an LZ4 block with a 4-byte little-endian size prefix to exactly `len` bytes.
fn lz4_block(src: &[u8], len: usize) -> Result<Vec<u8>> {
    if src.len() < 4 {
        bail!(Format, "lz4 data of {} bytes has no size prefix", src.len());
    }
    let declared = u32::from_le_bytes(src[..4].try_into().expect("4 bytes")) as u64;
    if declared != len as u64 {
        bail!(
            Format,
            "lz4 data declares {declared} decompressed bytes, the descriptor implies {len}"
        );
    }
    let mut out = buffer(len)?;
    match lz4_flex::block::decompress_into(&src[4..], &mut out) {
        Ok(n) if n == len => Ok(out),
        Ok(n) => bail!(Format, "lz4 data decodes to {n} bytes, expected {len}"),
        Err(e) => bail!(Format, "corrupt lz4 data: {e}"),
    }
}

/// Allocates `n` zero bytes without aborting on failure.
pub(super) fn buffer(n: usize) -> Result<Vec<u8>> {
    crate::buffer::zeroed_vec(n as u64)
}

/// A byte count as `usize`, or a `Limit` error when it does not fit in memory.
pub(super) fn to_usize(v: u64) -> Result<usize> {
    usize::try_from(v).map_err(|_| err!(Limit, "{v} bytes do not fit in memory"))
}

/// Bit `i` of packed bits, most significant bit of each byte first.
pub(super) fn bit(packed: &[u8], i: usize) -> u8 {
    (packed[i / 8] >> (7 - i % 8)) & 1
}

/// Reads `bits` (1..=64) bits starting at bit `pos`, most significant bit first.
pub(super) fn read_bits(src: &[u8], mut pos: u64, bits: u32) -> u64 {
    let mut value = 0u64;
    let mut left = bits;
    while left > 0 {
        let byte = src[(pos / 8) as usize];
        let offset = (pos % 8) as u32;
        let avail = 8 - offset;
        let take = avail.min(left);
        let chunk = (byte >> (avail - take)) & (((1u16 << take) - 1) as u8);
        value = (value << take) | chunk as u64;
        pos += take as u64;
        left -= take;
    }
    value
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_read_most_significant_first() {
        let src = [0b1010_1100, 0b0101_0000];
        assert_eq!(read_bits(&src, 0, 1), 1);
        assert_eq!(read_bits(&src, 1, 3), 0b010);
        assert_eq!(read_bits(&src, 4, 8), 0b1100_0101);
        let all = [0xFFu8; 8];
        assert_eq!(read_bits(&all, 0, 64), u64::MAX);
        let got: Vec<u8> = (0..16).map(|i| bit(&src, i)).collect();
        assert_eq!(got, [1, 0, 1, 0, 1, 1, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0]);
    }
}
