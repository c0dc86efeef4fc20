//! Applies the decode pipeline that formats declare (`model::steps`): a component's
//! bytes are its blob's stored bytes, decoded by the blob's encoding (raw, or zstd
//! frames, read through the source), then passed through the component's steps in order.
//! The one place decoding happens; range reads of raw and zstd components too.

use std::borrow::Cow;

use xxhash_rust::xxh64::{Xxh64, xxh64};

use crate::buffer::zeroed_vec;
use crate::codec::frame_index::{self, MAX_INDEX_ENTRIES};
use crate::codec::stream::{decode_stream, window_log_for};
use crate::codec::{
    Frame, FrameIndex, FrameSpan, decode_frames, seek_table, swap_in_place, zstd_decode_into,
};
use crate::error::{Error, ErrorKind, Result, bail};
use crate::model::{Blob, Component, Encoding, Step};
use crate::source::{Source, ZSTD_WINDOW};

/// Decodes a component into `dst` (exactly its decoded length), straight into `dst` where
/// its steps allow.
pub(crate) fn component_into(source: &Source<'_>, c: &Component, dst: &mut [u8]) -> Result<()> {
    if c.steps.is_empty() {
        return blob_into(source, &c.blob, dst);
    }
    let mut buf: Cow<'_, [u8]> = match c.blob.encoding {
        Encoding::Zstd => {
            let mut v = zeroed_vec(c.blob.decoded_length)?;
            blob_into(source, &c.blob, &mut v)?;
            Cow::Owned(v)
        }
        Encoding::Raw | Encoding::Pipeline => source.region(c.blob.offset, c.blob.length)?,
    };
    let mut range = 0..buf.len();
    let last = c.steps.len() - 1;
    for (i, step) in c.steps.iter().enumerate() {
        let input = &buf[range.clone()];
        let out: Vec<u8> = match step {
            Step::Slice { start, len } => {
                let from = range.start + *start as usize;
                range = from..from + *len as usize;
                if i == last {
                    dst.copy_from_slice(&buf[range.clone()]);
                }
                continue;
            }
            Step::SwapBytes(w) if i == last => {
                dst.copy_from_slice(input);
                swap_in_place(dst, *w);
                continue;
            }
            Step::SwapBytes(w) => {
                let mut v = input.to_vec();
                swap_in_place(&mut v, *w);
                v
            }
            Step::Format(f) if i == last => {
                f.apply(input, dst)?;
                continue;
            }
            Step::Format(f) => {
                let mut v = zeroed_vec(f.output_len())?;
                f.apply(input, &mut v)?;
                v
            }
        };
        range = 0..out.len();
        buf = Cow::Owned(out);
    }
    Ok(())
}

/// Decodes a blob into `dst` (exactly its decoded length).
fn blob_into(source: &Source<'_>, blob: &Blob, dst: &mut [u8]) -> Result<()> {
    debug_assert_eq!(dst.len() as u64, blob.decoded_length);
    match blob.encoding {
        Encoding::Raw => source.read_at(blob.offset, dst),
        Encoding::Zstd => source.decode_zstd(blob.offset, blob.length, dst),
        Encoding::Pipeline => bail!(Internal, "a pipeline blob without its step"),
    }
}

/// Reads the decoded bytes `[offset, offset + dst.len())` of a component whose range
/// reads cost about the range: raw components (read in place) and plain zstd ones, through
/// their frame `index` (see `zstd_range`; the caller passes it for every component
/// `has_frames` accepts). Returns false, having touched nothing, for components with
/// steps: the caller decodes those whole. The range is within the component (checked by
/// the caller).
pub(crate) fn component_range(
    source: &Source<'_>,
    c: &Component,
    index: Option<&FrameIndex>,
    offset: u64,
    dst: &mut [u8],
) -> Result<bool> {
    if !c.steps.is_empty() {
        return Ok(false);
    }
    match (c.blob.encoding, index) {
        (Encoding::Raw, _) => source.read_at(c.blob.offset + offset, dst)?,
        (Encoding::Zstd, Some(index)) => zstd_range(source, &c.blob, index, offset, dst)?,
        _ => return Ok(false),
    }
    Ok(true)
}

/// True for components whose stored bytes are zstd frames that decode to the component's
/// bytes (zstd, no steps): those that have a frame index.
pub(crate) fn has_frames(c: &Component) -> bool {
    c.blob.encoding == Encoding::Zstd && c.steps.is_empty()
}

/// The frame index of a component `has_frames` accepts: from its seek table when it ends
/// with one (a table that disagrees with the component, or with the headers of its
/// frames, is a `Format` error), else from a walk of its frame and block headers. Reads
/// only the table and the frame headers, with `pread` even from a mapped file, so no page
/// of the mapping is touched (a remote object fetches the headers concurrently).
pub(crate) fn frame_index(source: &Source<'_>, c: &Component) -> Result<FrameIndex> {
    if !has_frames(c) {
        bail!(
            InvalidArgument,
            "the component is not stored as zstd frames of its bytes (encoding {}{})",
            c.blob.encoding.name(),
            if c.steps.is_empty() {
                ""
            } else {
                ", decoded further after zstd"
            }
        );
    }
    let blob = &c.blob;
    let mut read = |offset: u64, dst: &mut [u8]| source.peek(blob.offset + offset, dst);
    let mut heads = |pieces: &[(u64, usize)], out: &mut [u8]| {
        let at: Vec<(u64, usize)> = pieces.iter().map(|&(o, n)| (blob.offset + o, n)).collect();
        source.peek_many(&at, out)
    };
    let (stored, total) = (blob.length, blob.decoded_length);
    match seek_table::read(&mut read, &mut heads, stored, total, MAX_INDEX_ENTRIES)? {
        Some(index) => Ok(index),
        None => frame_index::walk(&mut read, stored, total, MAX_INDEX_ENTRIES),
    }
}

/// Reads decoded bytes `[offset, offset + dst.len())` of a zstd blob through its frame
/// index: only the entries overlapping the range are read and decoded. Entries wholly
/// inside the range are read (with `pread` from a file, mapped or not: see
/// `Source::fetch`) in runs of up to `ZSTD_WINDOW` stored bytes and decoded in
/// parallel straight into `dst`, each to exactly its indexed length; an entry the range
/// covers in part (or a very large one) is streamed from its start, decoding only as far
/// as the range needs. A seek table's per-frame checksums are checked on the frames decoded
/// whole.
fn zstd_range(
    source: &Source<'_>,
    blob: &Blob,
    index: &FrameIndex,
    offset: u64,
    dst: &mut [u8],
) -> Result<()> {
    let end = offset + dst.len() as u64;
    let mut i = index.first_after(offset);
    // Entries cover the decoded bytes without gaps (both ways of building an index
    // guarantee it); checked, so a broken index can't leave part of `dst` unwritten.
    let covered = index.get(i).map(|f| f.decoded.start);
    let reaches = |j: usize| index.get(j.wrapping_sub(1)).map_or(0, |f| f.decoded.end);
    if covered.is_none_or(|start| start > offset) {
        bail!(Internal, "the frame index does not cover byte {offset}");
    }
    while let Some(f) = index.get(i).filter(|f| f.decoded.start < end) {
        let inside = |f: &FrameSpan| {
            f.decoded.start >= offset
                && f.decoded.end <= end
                && f.stored.end - f.stored.start <= ZSTD_WINDOW as u64
        };
        if !inside(&f) {
            decode_part(source, blob, index, i, offset, dst)?;
            i += 1;
            continue;
        }
        let mut j = i + 1;
        while let Some(g) = index.get(j).filter(|g| {
            g.decoded.start < end
                && inside(g)
                && g.stored.end - f.stored.start <= ZSTD_WINDOW as u64
        }) {
            debug_assert!(g.stored.start >= f.stored.start);
            j += 1;
        }
        decode_run(source, blob, index, i..j, offset, dst)?;
        i = j;
    }
    if reaches(i) < end {
        bail!(Internal, "the frame index ends before byte {end}");
    }
    Ok(())
}

/// Adds to an error which frames of the seek table it is about (a table may lie about
/// them); errors of streams indexed from their own headers read as those of a full read.
fn entries_context(
    index: &FrameIndex,
    entries: std::ops::Range<usize>,
) -> impl Fn(Error) -> Error + '_ {
    move |e| {
        if index.has_seek_table() {
            e.context(format_args!(
                "zstd frames {}..{} of {} (per the seek table)",
                entries.start,
                entries.end,
                index.len()
            ))
        } else {
            e
        }
    }
}

/// Decodes the consecutive entries `run`, each wholly inside the range, straight into
/// their place in `dst` (which starts at decoded offset `offset`).
fn decode_run(
    source: &Source<'_>,
    blob: &Blob,
    index: &FrameIndex,
    run: std::ops::Range<usize>,
    offset: u64,
    dst: &mut [u8],
) -> Result<()> {
    let first = index.get(run.start).expect("in range");
    let last = index.get(run.end - 1).expect("in range");
    let (s0, d0) = (first.stored.start, first.decoded.start);
    let stored = source.fetch(blob.offset + s0, last.stored.end - s0)?;
    let frames: Vec<Frame> = run
        .clone()
        .map(|k| {
            let f = index.get(k).expect("in range");
            Frame {
                src: (f.stored.start - s0) as usize..(f.stored.end - s0) as usize,
                dst: (f.decoded.start - d0) as usize..(f.decoded.end - d0) as usize,
            }
        })
        .collect();
    let out = &mut dst[(d0 - offset) as usize..(last.decoded.end - offset) as usize];
    let ctx = entries_context(index, run.clone());
    decode_frames(&stored, out, &frames).map_err(&ctx)?;
    for (k, f) in run.clone().zip(&frames) {
        if let Some(sum) = index.checksum(k) {
            check_sum(sum, xxh64(&out[f.dst.clone()], 0)).map_err(&ctx)?;
        }
    }
    Ok(())
}

fn check_sum(recorded: u32, hash: u64) -> Result<()> {
    if hash as u32 != recorded {
        bail!(
            Format,
            "the decoded bytes have XXH64 low bits 0x{:08x}, the seek table says 0x{recorded:08x}",
            hash as u32
        );
    }
    Ok(())
}

/// Decodes the part of entry `k` that overlaps the range into `dst` (which starts at
/// decoded offset `offset`), streaming the entry from its start and stopping once the part
/// is filled (or at the entry's end when a checksum is to be checked). Memory: 1 MiB of
/// stored bytes at a time and the decoder's window, at most the entry's decoded size. A
/// stream the streaming decoder refuses is decoded one-shot into a buffer of the entry's
/// decoded size, so range reads accept and refuse exactly what reads do.
fn decode_part(
    source: &Source<'_>,
    blob: &Blob,
    index: &FrameIndex,
    k: usize,
    offset: u64,
    dst: &mut [u8],
) -> Result<()> {
    let f = index.get(k).expect("in range");
    let end = offset + dst.len() as u64;
    let (from, to) = (f.decoded.start.max(offset), f.decoded.end.min(end));
    let out = &mut dst[(from - offset) as usize..(to - offset) as usize];
    // Offsets relative to the entry's decoded start.
    let (skip, want, full) = (
        from - f.decoded.start,
        to - f.decoded.start,
        f.decoded.end - f.decoded.start,
    );
    let checksum = index.checksum(k);
    let ctx = entries_context(index, k..k + 1);
    let stored = (blob.offset + f.stored.start, f.stored.end - f.stored.start);
    if stream_part(source, stored, (skip, want, full), checksum, out).map_err(&ctx)? {
        return Ok(());
    }
    // Short, corrupt, or beyond the streaming decoder: decode it as a read would.
    let mut whole = zeroed_vec(full).map_err(&ctx)?;
    let bytes = source.fetch(stored.0, stored.1)?;
    zstd_decode_into(&bytes, &mut whole).map_err(&ctx)?;
    if let Some(sum) = checksum {
        check_sum(sum, xxh64(&whole, 0)).map_err(&ctx)?;
    }
    out.copy_from_slice(&whole[skip as usize..want as usize]);
    Ok(())
}

/// Streams the stored bytes `stored` (file offset, length) of an entry decoding to `full`
/// bytes, and copies its decoded bytes `[skip, want)` into `out`; with a `checksum`, decodes
/// the entry to its end and checks it. True when done; false when the streaming decoder
/// could not deliver (refused the stream, found it corrupt or short): the caller then
/// decodes the entry one-shot. A checksum mismatch and I/O failures are errors.
fn stream_part(
    source: &Source<'_>,
    stored: (u64, u64),
    (skip, want, full): (u64, u64, u64),
    checksum: Option<u32>,
    out: &mut [u8],
) -> Result<bool> {
    let mut hasher = checksum.map(|_| Xxh64::new(0));
    let mut seen = 0u64;
    let mut input = source.chunks(stored.0, stored.1);
    let streamed = decode_stream(&mut input, window_log_for(full), &mut |piece| {
        let (p0, p1) = (seen, seen + piece.len() as u64);
        if p1 > full {
            bail!(
                Format,
                "zstd data decodes to more than the {full} bytes expected"
            );
        }
        let (lo, hi) = (p0.max(skip), p1.min(want));
        if lo < hi {
            out[(lo - skip) as usize..(hi - skip) as usize]
                .copy_from_slice(&piece[(lo - p0) as usize..(hi - p0) as usize]);
        }
        if let Some(h) = hasher.as_mut() {
            h.update(piece);
        }
        seen = p1;
        Ok(hasher.is_some() || seen < want)
    });
    let complete = seen >= want && (hasher.is_none() || seen == full);
    match streamed {
        Ok(_) if complete => match (checksum, hasher) {
            (Some(sum), Some(h)) => check_sum(sum, h.digest()).map(|()| true),
            _ => Ok(true),
        },
        Err(e) if e.kind() != ErrorKind::Format => Err(e),
        _ => Ok(false),
    }
}

/// Hands `sink` a zstd blob's decoded bytes in order, in pieces of `piece` bytes (the last
/// one shorter), decoding the stream once from its start: memory is one piece, the
/// decoder's window and 1 MiB of stored bytes, whatever the stream's frames. The stream
/// must decode to exactly the blob's decoded length. A stream the streaming decoder
/// refuses is decoded whole, one-shot, as a read would (and handed out from where the
/// streaming stopped), so this accepts and refuses exactly what reads do.
pub(crate) fn zstd_pieces(
    source: &Source<'_>,
    blob: &Blob,
    piece: usize,
    sink: &mut dyn FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let total = blob.decoded_length;
    let mut buf = zeroed_vec(total.min(piece as u64))?;
    let (mut filled, mut seen, mut handed) = (0usize, 0u64, 0usize);
    let mut input = source.chunks(blob.offset, blob.length);
    let mut sink_failed = None;
    let streamed = decode_stream(&mut input, window_log_for(total), &mut |mut bytes| {
        seen += bytes.len() as u64;
        if seen > total {
            bail!(
                Format,
                "zstd data decodes to more than the {total} bytes the manifest says"
            );
        }
        while !bytes.is_empty() {
            let take = (buf.len() - filled).min(bytes.len());
            buf[filled..filled + take].copy_from_slice(&bytes[..take]);
            filled += take;
            bytes = &bytes[take..];
            if filled == buf.len() {
                if let Err(e) = sink(&buf) {
                    sink_failed = Some(e);
                    return Ok(false);
                }
                handed += filled;
                filled = 0;
            }
        }
        Ok(true)
    });
    if let Some(e) = sink_failed {
        return Err(e);
    }
    match streamed {
        Ok(_) if seen == total => {
            if filled > 0 {
                sink(&buf[..filled])?;
            }
            return Ok(());
        }
        Err(e) if e.kind() != ErrorKind::Format => return Err(e),
        _ => {}
    }
    drop(buf);
    let mut whole = zeroed_vec(total)?;
    source.decode_zstd(blob.offset, blob.length, &mut whole)?;
    whole[handed..].chunks(piece).try_for_each(sink)
}

/// True when a range read of a piece of this component costs about the piece: raw
/// components, and zstd ones whose frame index has entries of at most `ZSTD_FRAME_SIZE`
/// decoded bytes each (this library's frames; the index comes from the caller).
pub(crate) fn range_reads_are_cheap(c: &Component, index: Option<&FrameIndex>) -> bool {
    if !c.steps.is_empty() {
        return false;
    }
    match (c.blob.encoding, index) {
        (Encoding::Raw, _) => true,
        (Encoding::Zstd, Some(index)) => {
            index.largest_decoded() <= crate::codec::ZSTD_FRAME_SIZE as u64
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One frame without a content size (the reference writer's kind).
    fn frame_without_size(data: &[u8], window_log: u32) -> Vec<u8> {
        let mut e = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        e.include_contentsize(false).unwrap();
        e.window_log(window_log).unwrap();
        std::io::Write::write_all(&mut e, data).unwrap();
        e.finish().unwrap()
    }

    fn stream(z: &[u8], part: (u64, u64, u64), sum: Option<u32>, out: &mut [u8]) -> Result<bool> {
        stream_part(&Source::memory(z), (0, z.len() as u64), part, sum, out)
    }

    #[test]
    fn parts_stream_from_the_frame_start_and_fall_back_only_when_they_must() {
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i * 7 / 5) as u8).collect();
        let full = data.len() as u64;
        let z = frame_without_size(&data, 20);
        let mut out = vec![0u8; 4096];
        assert!(stream(&z, (500_000, 504_096, full), None, &mut out).unwrap());
        assert!(out == data[500_000..504_096]);
        // With a checksum: decoded to the end and checked.
        let sum = xxh64(&data, 0) as u32;
        assert!(stream(&z, (0, 4096, full), Some(sum), &mut out).unwrap());
        assert!(out == data[..4096]);
        let e = stream(&z, (0, 4096, full), Some(sum ^ 1), &mut out).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format);
        assert!(
            e.message()
                .ends_with(&format!("the seek table says 0x{:08x}", sum ^ 1))
        );
        // A frame that decodes to more than its entry: not delivered (the one-shot decode
        // then reports it), never written past `out`.
        assert!(!stream(&z, (0, 4096, 4096), Some(sum), &mut out).unwrap());
        // A window larger than the entry's bytes: refused before anything is allocated.
        let small = frame_without_size(&data[..64], 27);
        let mut out = [0u8; 64];
        assert!(!stream(&small, (0, 64, 64), None, &mut out).unwrap());
        // A short stream: not delivered.
        assert!(!stream(&z[..z.len() / 2], (900_000, 900_064, full), None, &mut out).unwrap());
    }
}
