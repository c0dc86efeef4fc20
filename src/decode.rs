//! Applies the decode pipeline that formats declare (`model::steps`): a component's
//! bytes are its blob's stored bytes, decoded by the blob's encoding (raw, or zstd
//! frames, read through the source), then passed through the component's steps in order.
//! The one place decoding happens; range reads of raw and zstd components too.

use std::borrow::Cow;

use crate::buffer::zeroed_vec;
use crate::codec::{Frame, frame_index, swap_in_place, zstd_decode_into};
use crate::error::{Result, bail, err};
use crate::model::{Blob, Component, Encoding, Step};
use crate::source::Source;

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
/// reads cost about the range: raw components (read in place) and zstd ones (only the
/// frames overlapping the range are decoded, when the frames record their sizes). Returns
/// false, having touched nothing, for components with steps: the caller decodes those
/// whole. The range is within the component (checked by the caller).
pub(crate) fn component_range(
    source: &Source<'_>,
    c: &Component,
    offset: u64,
    dst: &mut [u8],
) -> Result<bool> {
    if !c.steps.is_empty() {
        return Ok(false);
    }
    match c.blob.encoding {
        Encoding::Raw => source.read_at(c.blob.offset + offset, dst)?,
        Encoding::Zstd => zstd_range(source, &c.blob, offset, dst)?,
        Encoding::Pipeline => return Ok(false),
    }
    Ok(true)
}

fn zstd_range(source: &Source<'_>, blob: &Blob, offset: u64, dst: &mut [u8]) -> Result<()> {
    let stored = source.region(blob.offset, blob.length)?;
    let total = usize::try_from(blob.decoded_length)
        .map_err(|_| err!(Limit, "component too large for memory"))?;
    // Frames with recorded sizes (what this library writes): decode only those needed.
    // Otherwise decode the whole stream into a temporary buffer, exactly as a read
    // would, so that range reads accept and refuse exactly what reads do.
    let frames = frame_index(&stored, total).unwrap_or_else(|| {
        vec![Frame {
            src: 0..stored.len(),
            dst: 0..total,
        }]
    });
    decode_range_of_frames(&stored, &frames, offset as usize, dst)
}

/// Decodes only the frames overlapping `[offset, offset + dst.len())`: frames inside the
/// range straight into `dst`, the partial ones at either end through a scratch buffer.
fn decode_range_of_frames(
    stored: &[u8],
    frames: &[Frame],
    offset: usize,
    dst: &mut [u8],
) -> Result<()> {
    let end = offset + dst.len();
    let first = frames.partition_point(|f| f.dst.end <= offset);
    for f in frames[first..].iter().take_while(|f| f.dst.start < end) {
        let src = &stored[f.src.clone()];
        let (from, to) = (f.dst.start.max(offset), f.dst.end.min(end));
        let out = &mut dst[from - offset..to - offset];
        if from == f.dst.start && to == f.dst.end {
            zstd_decode_into(src, out)?;
        } else {
            let mut scratch = zeroed_vec(f.dst.len() as u64)?;
            zstd_decode_into(src, &mut scratch)?;
            out.copy_from_slice(&scratch[from - f.dst.start..to - f.dst.start]);
        }
    }
    Ok(())
}

/// True when a range read of a piece of this component costs about the piece: raw
/// components, and zstd streams of independent frames with recorded sizes of at most
/// `ZSTD_FRAME_SIZE` decoded bytes each (what this library writes) in a mapped file or
/// caller memory. Reads only the zstd frame headers.
pub(crate) fn range_reads_are_cheap(source: &Source<'_>, c: &Component) -> bool {
    if !c.steps.is_empty() {
        return false;
    }
    match c.blob.encoding {
        Encoding::Raw => true,
        Encoding::Zstd => match (
            source.stored(c.blob.offset, c.blob.length),
            usize::try_from(c.decoded_length),
        ) {
            (Some(stored), Ok(total)) => frame_index(stored, total).is_some_and(|f| {
                f.iter()
                    .all(|frame| frame.dst.len() <= crate::codec::ZSTD_FRAME_SIZE)
            }),
            _ => false,
        },
        Encoding::Pipeline => false,
    }
}
