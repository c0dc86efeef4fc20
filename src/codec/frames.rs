//! zstd as this library uses it: components written as independent frames of
//! `ZSTD_FRAME_SIZE` input bytes with recorded sizes (compressed on the pool by
//! `compress::FramePipeline`), and streams
//! of any writer decoded exactly into their destination, frames in parallel where their
//! sizes are known. Pure functions of bytes; reading them from a file is `source`'s job.

use crate::error::{Result, bail, err};
use crate::pool::threads;

/// Input bytes per zstd frame the writer emits. Each frame is independent and records its
/// content size, so readers can decode frames in parallel and range reads can skip frames.
pub const ZSTD_FRAME_SIZE: usize = 4 << 20;

/// One frame of a concatenated zstd stream: where its bytes are, and where its decoded
/// bytes go.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Frame {
    pub(crate) src: std::ops::Range<usize>,
    pub(crate) dst: std::ops::Range<usize>,
}

/// The frames of `src` when every frame states its content size and they add up to
/// `total`; None otherwise (then decode as one stream, which reports the precise fault).
pub(crate) fn frame_index(src: &[u8], total: usize) -> Option<Vec<Frame>> {
    if src.is_empty() {
        return (total == 0).then(Vec::new);
    }
    let (frames, used, end) = sized_frames(src, src.len(), 0, total)?;
    (used == src.len() && end == total).then_some(frames)
}

/// The whole zstd frames at the start of `src` that begin within its first `budget`
/// bytes, placed after the `out` bytes of a `total`-byte output already decoded: the
/// frames (their `dst` relative to `out`), the stored bytes they take and the output end.
/// Stops at a frame not wholly in `src`; None when there is no whole frame, or a frame
/// records no decoded size or overruns `total` (the stream doesn't suit window decoding).
pub(crate) fn sized_frames(
    src: &[u8],
    budget: usize,
    out: usize,
    total: usize,
) -> Option<(Vec<Frame>, usize, usize)> {
    let (mut used, mut end) = (0usize, out);
    let mut frames = Vec::new();
    while used < src.len() && used < budget {
        let Ok(size) = zstd::zstd_safe::find_frame_compressed_size(&src[used..]) else {
            break;
        };
        if size == 0 {
            return None; // never a frame; refusing it keeps the walk from stalling
        }
        let content = zstd::zstd_safe::get_frame_content_size(&src[used..used + size]).ok()??;
        let next = end
            .checked_add(usize::try_from(content).ok()?)
            .filter(|&n| n <= total)?;
        frames.push(Frame {
            src: used..used + size,
            dst: end - out..next - out,
        });
        used += size;
        end = next;
    }
    (!frames.is_empty()).then_some((frames, used, end))
}

/// Decodes zstd frames into `dst`, which must come out exactly full. Streams of several
/// frames with recorded sizes are decoded in parallel on the pool, each frame straight
/// into its place.
pub(crate) fn zstd_decode_into(src: &[u8], dst: &mut [u8]) -> Result<()> {
    if dst.len() > ZSTD_FRAME_SIZE
        && threads() > 1
        && let Some(frames) = frame_index(src, dst.len()).filter(|f| f.len() > 1)
    {
        return decode_frames_parallel(src, dst, &frames, threads());
    }
    decode_exact(src, dst)
}

/// Decodes indexed frames (`dst` ranges relative to `dst`) in parallel on the pool when
/// there are several, else on this thread.
pub(crate) fn decode_frames(src: &[u8], dst: &mut [u8], frames: &[Frame]) -> Result<()> {
    if frames.len() > 1 && threads() > 1 {
        decode_frames_parallel(src, dst, frames, threads())
    } else {
        frames
            .iter()
            .try_for_each(|f| decode_exact(&src[f.src.clone()], &mut dst[f.dst.clone()]))
    }
}

/// Single-threaded decode of a whole stream into exactly `dst`.
fn decode_exact(src: &[u8], dst: &mut [u8]) -> Result<()> {
    let mut dctx =
        zstd::bulk::Decompressor::new().map_err(|e| err!(Internal, "zstd context: {e}"))?;
    let expected = dst.len();
    match dctx.decompress_to_buffer(src, dst) {
        Ok(n) if n == expected => Ok(()),
        Ok(n) => bail!(
            Format,
            "zstd data decodes to {n} bytes, the manifest says {expected}"
        ),
        Err(e) if e.to_string().contains("too small") => {
            bail!(
                Format,
                "zstd data decodes to more than the {expected} bytes the manifest says"
            )
        }
        Err(e) => bail!(Format, "corrupt zstd data: {e}"),
    }
}

/// Decodes indexed frames on up to `workers` threads of the pool, each taking a contiguous
/// run of frames of about equal decoded size, straight into `dst`.
fn decode_frames_parallel(
    src: &[u8],
    dst: &mut [u8],
    frames: &[Frame],
    workers: usize,
) -> Result<()> {
    let share = dst.len().div_ceil(workers);
    let mut groups: Vec<(&[Frame], &mut [u8])> = Vec::with_capacity(workers);
    let (mut rest, mut first, mut taken) = (dst, 0usize, 0usize);
    while first < frames.len() {
        let mut last = first;
        while last < frames.len()
            && frames[last].dst.end - taken <= share.max(frames[first].dst.len())
        {
            last += 1;
        }
        let last = last.max(first + 1);
        let len = frames[last - 1].dst.end - taken;
        let (mine, tail) = rest.split_at_mut(len);
        groups.push((&frames[first..last], mine));
        rest = tail;
        taken += len;
        first = last;
    }
    let decode_group = |(group, out): (&[Frame], &mut [u8])| -> Result<()> {
        let base = group[0].dst.start;
        for f in group {
            decode_exact(
                &src[f.src.clone()],
                &mut out[f.dst.start - base..f.dst.end - base],
            )?;
        }
        Ok(())
    };
    crate::pool::map(groups, workers, decode_group)
        .into_iter()
        .collect()
}

#[cfg(test)]
pub(crate) fn zstd_compress(data: &[u8], level: i32) -> Result<Vec<u8>> {
    zstd::bulk::compress(data, level).map_err(|e| err!(Internal, "zstd compression: {e}"))
}

/// The zstd compression levels accepted (0 means the library default).
pub fn zstd_level_range() -> std::ops::RangeInclusive<i32> {
    zstd::compression_level_range()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn zstd_decode_checks_the_exact_length() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 7) as u8).collect();
        let z = zstd_compress(&data, 3).unwrap();
        let mut out = vec![0u8; data.len()];
        zstd_decode_into(&z, &mut out).unwrap();
        assert_eq!(out, data);
        let mut short = vec![0u8; data.len() - 1];
        assert_eq!(
            zstd_decode_into(&z, &mut short).unwrap_err().kind(),
            ErrorKind::Format
        );
        let mut long = vec![0u8; data.len() + 1];
        assert_eq!(
            zstd_decode_into(&z, &mut long).unwrap_err().kind(),
            ErrorKind::Format
        );
        let mut two = z.clone();
        two.extend_from_slice(&z);
        let mut out2 = vec![0u8; 2 * data.len()];
        zstd_decode_into(&two, &mut out2).unwrap();
        assert_eq!(&out2[data.len()..], &data[..]);
        assert_eq!(
            zstd_decode_into(&z[..z.len() / 2], &mut out)
                .unwrap_err()
                .kind(),
            ErrorKind::Format
        );
    }
}
