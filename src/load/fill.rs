//! Filling one chunk: destination units `[u0, u1)` of a request, read (and decoded) from
//! the file and converted into the chunk's bytes, which are a staging buffer's or, for a
//! host destination, the destination's own.

use crate::codec::digest::Hasher;
use crate::error::{Error, Result, err};
use crate::reader::Reader;

use super::io::{Io, Scratch};
use super::plan::{Conv, Cut, Job};

/// Where a chunk's source bytes come from.
pub(crate) enum From<'s> {
    /// Read them from the reader (the chunk's span; range reads are cheap).
    Reader,
    /// The chunk's span, already read (a component streamed in order).
    Bytes(&'s [u8]),
}

/// Fills `out` with destination units `[u0, u1)` of `job`; hashes the source bytes into
/// `hasher` (a digest checked on the staged bytes: the request is raw and whole, so its
/// source bytes are its stored bytes). A raw component's bytes are read the way `io`
/// chose for its file; anything else through the reader.
#[allow(clippy::too_many_arguments)]
pub(crate) fn chunk<'r>(
    reader: &Reader<'_>,
    io: &Io<'r>,
    job: &Job<'r>,
    (u0, u1): (u64, u64),
    from: From<'_>,
    out: &mut [u8],
    scratch: &mut Scratch<'_>,
    hasher: Option<&mut Hasher>,
) -> Result<()> {
    debug_assert_eq!(out.len() as u64, job.out_bytes(u0, u1));
    let (s0, s1) = job.span(u0, u1);
    let (b0, b1) = (s0 * job.in_unit, s1 * job.in_unit);
    let way = job.raw.and_then(|(file, _, source)| io.way(file, source));
    let base = job.raw.map_or(0, |(_, base, _)| base);
    let bytes: &[u8] = match from {
        From::Bytes(b) => b,
        // The bytes themselves, contiguous: read (pread, O_DIRECT, or zstd frames decoded)
        // straight into the destination.
        From::Reader
            if matches!(job.conv, Conv::Copy) && matches!(job.cut, Cut::Contiguous { .. }) =>
        {
            match way {
                Some(way) => io
                    .read(way, base + b0, &mut [&mut *out], scratch)
                    .map_err(|e| context(reader, job, e))?,
                None => reader.read_range(job.object, job.component, b0, out)?,
            }
            if let Some(h) = hasher {
                h.update(out);
            }
            return Ok(());
        }
        From::Reader => match way {
            Some(way) => {
                let pieces = strided_pieces(job, u0, u1, b0);
                io.span(
                    way,
                    base + b0,
                    (b1 - b0) as usize,
                    pieces.as_deref(),
                    scratch,
                )
                .map_err(|e| context(reader, job, e))?
            }
            None => match reader.borrowed(job.object, job.component, job.c) {
                Some(all) => &all[b0 as usize..b1 as usize],
                None => {
                    let buf = scratch.get((b1 - b0) as usize)?;
                    reader.read_range(job.object, job.component, b0, buf)?;
                    buf
                }
            },
        },
    };
    if let Some(h) = hasher {
        h.update(bytes);
    }
    emit(job, (u0, u1), s0, bytes, out).map_err(|e| context(reader, job, e))
}

/// The pieces (start, length in bytes, from the span's first byte `b0`) of the source
/// span of columns `[u0, u1)` that the columns need: one per row (what a remote object
/// fetches instead of the whole span). None for a contiguous cut.
fn strided_pieces(job: &Job<'_>, u0: u64, u1: u64, b0: u64) -> Option<Vec<(u64, u64)>> {
    let Cut::Strided { row, first, width } = job.cut else {
        return None;
    };
    let iu = job.in_unit;
    let mut pieces = Vec::new();
    let mut u = u0;
    while u < u1 {
        let (r, col) = (u / width, u % width);
        let n = (width - col).min(u1 - u);
        pieces.push(((r * row + first + col) * iu - b0, n * iu));
        u += n;
    }
    Some(pieces)
}

fn context(reader: &Reader<'_>, job: &Job<'_>, e: Error) -> Error {
    match reader.component(job.object, job.component) {
        Ok((obj, c)) => reader.ctx(obj, c)(e),
        Err(_) => e,
    }
}

/// Writes destination units `[u0, u1)` into `out` from `src`, the source units from `s0`
/// on: converted, and for columns gathered row by row.
fn emit(job: &Job<'_>, (u0, u1): (u64, u64), s0: u64, src: &[u8], out: &mut [u8]) -> Result<()> {
    let (iu, ou) = (job.in_unit as usize, job.out_unit as usize);
    match job.cut {
        Cut::Contiguous { .. } => convert(&job.conv, src, out),
        Cut::Strided { row, first, width } => {
            let mut u = u0;
            while u < u1 {
                let (r, col) = (u / width, u % width);
                let n = (width - col).min(u1 - u);
                let from = (r * row + first + col - s0) as usize;
                let to = (u - u0) as usize;
                let n = n as usize;
                convert(
                    &job.conv,
                    &src[from * iu..(from + n) * iu],
                    &mut out[to * ou..(to + n) * ou],
                )?;
                u += n as u64;
            }
            Ok(())
        }
    }
}

/// `src` (whole source units) into `out` (as many destination units).
fn convert(conv: &Conv<'_>, src: &[u8], out: &mut [u8]) -> Result<()> {
    match *conv {
        Conv::Copy => out.copy_from_slice(src),
        Conv::Elements { from, logical, to } => {
            crate::convert::convert(from, logical, src, to, out);
        }
        // One thread: the loader's tasks are the parallelism.
        Conv::Dequantize { t, to } => crate::quant::dequantize(t, src, to, out, || 1)?,
    }
    Ok(())
}

/// Hands `chunk` the source bytes of each chunk of `job` in order, decoding the component
/// once from its start (`Reader::for_each_piece`): for components whose range reads would
/// decode from the start again for every chunk (one large zstd frame, other formats'
/// pipelines). Chunks are cut as `Job::chunk_end` cuts them with `limit`; their source
/// bytes are gathered in `scratch`. Stops at the first error `chunk` returns, and once the
/// last chunk is handed out.
pub(crate) fn stream(
    reader: &Reader<'_>,
    job: &Job<'_>,
    limit: u64,
    scratch: &mut Scratch<'_>,
    mut chunk: impl FnMut((u64, u64), &[u8]) -> Result<()>,
) -> Result<()> {
    if job.units == 0 {
        return Ok(());
    }
    let bytes_of = |u0: u64, u1: u64| {
        let (s0, s1) = job.span(u0, u1);
        (s0 * job.in_unit, s1 * job.in_unit)
    };
    let mut units = (0, job.chunk_end(0, limit));
    let (mut b0, mut b1) = bytes_of(units.0, units.1);
    let mut have = 0u64;
    let mut at = 0u64;
    let mut done = false;
    let mut failure: Option<Error> = None;
    let stop = || err!(Internal, "the loader stopped streaming");
    // Reserve the largest span up front: the sink can't return a partial borrow.
    let buf = scratch.get(limit.min(u64::MAX / 2) as usize)?;
    let streamed = reader.for_each_piece(job.object, job.component, |piece| {
        let (p0, p1) = (at, at + piece.len() as u64);
        at = p1;
        loop {
            let (lo, hi) = (p0.max(b0 + have), p1.min(b1));
            if lo < hi {
                let n = hi - lo;
                buf[have as usize..(have + n) as usize]
                    .copy_from_slice(&piece[(lo - p0) as usize..(hi - p0) as usize]);
                have += n;
            }
            if b0 + have < b1 {
                return Ok(());
            }
            if let Err(e) = chunk(units, &buf[..(b1 - b0) as usize]) {
                failure = Some(e);
                return Err(stop());
            }
            if units.1 == job.units {
                done = true;
                return Err(stop());
            }
            units = (units.1, job.chunk_end(units.1, limit));
            (b0, b1) = bytes_of(units.0, units.1);
            have = 0;
        }
    });
    match (failure, streamed) {
        (Some(e), _) => Err(e),
        (None, Err(_)) if done => Ok(()),
        (None, Err(e)) => Err(e),
        (None, Ok(())) if done => Ok(()),
        (None, Ok(())) => Err(err!(
            Internal,
            "the component ended before the loader's last chunk"
        )),
    }
}
