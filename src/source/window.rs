//! Large zstd streams of a file decoded through a bounded window of stored bytes.

use crate::codec::{decode_frames, sized_frames};
use crate::error::Result;

use super::{Map, ZSTD_WINDOW, advise_pages};

/// Decodes a large zstd stream from a file through a bounded window of compressed bytes
/// (read with `pread`, so neither a copy of the whole stream nor its mapped pages add to
/// the process's memory), each batch of whole frames decoded in parallel straight into
/// `dst`. Returns false when the stream doesn't suit (a frame without a recorded size, or
/// larger than the window): the caller then decodes it whole.
pub(super) fn decode_windowed(
    fill: &dyn Fn(u64, &mut [u8]) -> Result<()>,
    offset: u64,
    len: u64,
    dst: &mut [u8],
) -> Result<bool> {
    let mut buf: Vec<u8> = Vec::with_capacity(ZSTD_WINDOW);
    let (mut read, mut out) = (0u64, 0usize);
    loop {
        let want = (ZSTD_WINDOW - buf.len()).min((len - read) as usize);
        let old = buf.len();
        buf.resize(old + want, 0);
        fill(offset + read, &mut buf[old..])?;
        read += want as u64;
        let Some((frames, used, end)) = sized_frames(&buf, buf.len(), out, dst.len()) else {
            return Ok(false);
        };
        decode_frames(&buf[..used], &mut dst[out..end], &frames)?;
        out = end;
        buf.drain(..used);
        if read == len {
            // Trailing bytes that are no whole frame, or a short total: the one-shot
            // decoder reports the precise fault.
            return Ok(buf.is_empty() && out == dst.len());
        }
    }
}

/// Decodes a large zstd stream of a mapped file window by window: the frames in each
/// `ZSTD_WINDOW` of stored bytes are decoded in parallel straight from the mapping into
/// `dst`, then the window's pages are dropped from the process (`release_pages`). So the
/// stored stream never becomes resident as a whole, and no thread waits for a copy.
/// Returns false when the stream doesn't suit (a frame without a recorded size): the
/// caller then decodes it whole.
pub(super) fn decode_mapped_windows(
    map: &Map,
    offset: u64,
    len: u64,
    dst: &mut [u8],
) -> Result<bool> {
    let base = offset as usize;
    let stored = &map[base..base + len as usize];
    let (mut used, mut out) = (0usize, 0usize);
    while used < stored.len() {
        let Some((frames, took, end)) = sized_frames(&stored[used..], ZSTD_WINDOW, out, dst.len())
        else {
            return Ok(false);
        };
        decode_frames(&stored[used..used + took], &mut dst[out..end], &frames)?;
        advise_pages(map, base + used, took, libc::MADV_DONTNEED);
        used += took;
        out = end;
    }
    Ok(out == dst.len())
}
