//! zstd as this library uses it: components written as independent frames of
//! `ZSTD_FRAME_SIZE` input bytes with recorded sizes (compressed in parallel), and streams
//! of any writer decoded exactly into their destination, frames in parallel where their
//! sizes are known. Pure functions of bytes; reading them from a file is `source`'s job.

use std::sync::{Condvar, Mutex};

use super::threads;
use crate::error::{Result, bail, err};

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
/// frames with recorded sizes are decoded in parallel, each frame straight into its place.
pub(crate) fn zstd_decode_into(src: &[u8], dst: &mut [u8]) -> Result<()> {
    let workers = threads();
    if workers > 1
        && dst.len() > ZSTD_FRAME_SIZE
        && let Some(frames) = frame_index(src, dst.len()).filter(|f| f.len() > 1)
    {
        return decode_frames_parallel(src, dst, &frames, workers);
    }
    decode_exact(src, dst)
}

/// Decodes indexed frames (`dst` ranges relative to `dst`) in parallel when there are
/// several, else on this thread.
pub(crate) fn decode_frames(src: &[u8], dst: &mut [u8], frames: &[Frame]) -> Result<()> {
    let workers = threads();
    if workers > 1 && frames.len() > 1 {
        decode_frames_parallel(src, dst, frames, workers)
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

/// Decodes indexed frames on `workers` threads, each taking a contiguous run of frames of
/// about equal decoded size, straight into `dst`.
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
    std::thread::scope(|scope| {
        let mut groups = groups.into_iter();
        let mine = groups.next();
        let handles: Vec<_> = groups
            .map(|g| scope.spawn(move || decode_group(g)))
            .collect();
        let mut result = mine.map_or(Ok(()), decode_group);
        for h in handles {
            let r = h
                .join()
                .unwrap_or_else(|_| Err(err!(Internal, "a zstd worker panicked")));
            result = result.and(r);
        }
        result
    })
}

/// The frames of one `FrameEncoder::compress` call: the next to take, how many are sunk,
/// whether to stop (a failure), and each frame once compressed until it is sunk.
struct Compressing {
    next: usize,
    sunk: usize,
    stop: bool,
    done: Vec<Option<Result<Vec<u8>>>>,
}

/// Compresses a component as independent frames of `ZSTD_FRAME_SIZE` input bytes, several
/// at a time on worker threads, handing the compressed frames out in order, and after the
/// last of several frames a seek table (`seek_table`) listing their sizes. Memory use is
/// bounded by about three times `workers x ZSTD_FRAME_SIZE` (the input batch, frames being
/// compressed, and up to `2 x workers` compressed frames waiting their turn), plus 8 bytes
/// per frame.
pub(crate) struct FrameEncoder {
    level: i32,
    workers: usize,
    pending: Vec<u8>,
    /// (compressed, decompressed) size of each frame handed out.
    sizes: Vec<(u32, u32)>,
    /// zTensor v2's `zt.zstd-seekable/1`: every frame carries its content checksum, and
    /// the seek table follows even a single frame.
    seekable: bool,
}

impl FrameEncoder {
    /// A new component at `level` (0 = library default).
    pub(crate) fn new(level: i32) -> FrameEncoder {
        FrameEncoder {
            level,
            workers: threads(),
            pending: Vec::new(),
            sizes: Vec::new(),
            seekable: false,
        }
    }

    /// A new component as `zt.zstd-seekable/1` requires it (see `seekable`).
    pub(crate) fn seekable(level: i32) -> FrameEncoder {
        FrameEncoder {
            seekable: true,
            ..FrameEncoder::new(level)
        }
    }

    fn batch_bytes(&self) -> usize {
        self.workers * ZSTD_FRAME_SIZE
    }

    /// Compresses whole frames of `input` in parallel and sinks them in order: workers
    /// (one compression context each) take frames as they come free, at most
    /// `2 x workers` ahead of the last frame sunk, while this thread sinks each frame as
    /// soon as it and every frame before it are done; no worker waits for another's frame.
    fn compress(&mut self, input: &[u8], sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        let (level, checksums) = (self.level, self.seekable);
        let chunks: Vec<&[u8]> = if input.is_empty() {
            vec![input]
        } else {
            input.chunks(ZSTD_FRAME_SIZE).collect()
        };
        let context = || {
            let mut c = zstd::bulk::Compressor::new(level)
                .map_err(|e| err!(InvalidArgument, "zstd level {level}: {e}"))?;
            if checksums {
                c.include_checksum(true)
                    .map_err(|e| err!(Internal, "zstd checksum flag: {e}"))?;
            }
            Ok::<_, crate::error::Error>(c)
        };
        let compress = |cctx: &mut zstd::bulk::Compressor<'_>, chunk: &[u8]| {
            cctx.compress(chunk)
                .map_err(|e| err!(Internal, "zstd compression: {e}"))
        };
        let workers = self.workers.min(chunks.len());
        if workers <= 1 {
            let mut cctx = context()?;
            for chunk in &chunks {
                let frame = compress(&mut cctx, chunk)?;
                self.sink_frame(&frame, chunk.len(), sink)?;
            }
            return Ok(());
        }
        let window = 2 * workers;
        let state = Mutex::new(Compressing {
            next: 0,
            sunk: 0,
            stop: false,
            done: chunks.iter().map(|_| None).collect(),
        });
        let wake = Condvar::new();
        let lock = || state.lock().unwrap_or_else(|p| p.into_inner());
        let wait = |g| wake.wait(g).unwrap_or_else(|p| p.into_inner());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    let mut cctx = None;
                    loop {
                        let mut s = lock();
                        while !s.stop && s.next < chunks.len() && s.next >= s.sunk + window {
                            s = wait(s);
                        }
                        if s.stop || s.next == chunks.len() {
                            return;
                        }
                        let k = s.next;
                        s.next += 1;
                        drop(s);
                        let frame = match &mut cctx {
                            Some(c) => compress(c, chunks[k]),
                            None => context().and_then(|c| compress(cctx.insert(c), chunks[k])),
                        };
                        lock().done[k] = Some(frame);
                        wake.notify_all();
                    }
                });
            }
            let mut result = Ok(());
            for (k, chunk) in chunks.iter().enumerate() {
                let mut s = lock();
                let frame = loop {
                    match s.done[k].take() {
                        Some(frame) => break frame,
                        None => s = wait(s),
                    }
                };
                drop(s);
                result = frame.and_then(|f| self.sink_frame(&f, chunk.len(), sink));
                let mut s = lock();
                s.sunk = k + 1;
                s.stop = result.is_err();
                drop(s);
                wake.notify_all();
                if result.is_err() {
                    break;
                }
            }
            result
        })
    }

    /// Hands one compressed frame out and records its sizes.
    fn sink_frame(
        &mut self,
        frame: &[u8],
        decompressed: usize,
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        // A frame of at most ZSTD_FRAME_SIZE input is far below 4 GiB.
        let sizes = (u32::try_from(frame.len()), u32::try_from(decompressed));
        let (Ok(compressed), Ok(decompressed)) = sizes else {
            bail!(Internal, "a zstd frame of {} bytes", frame.len());
        };
        sink(frame)?;
        self.sizes.push((compressed, decompressed));
        Ok(())
    }

    /// Feeds input; whole batches are compressed as soon as they are complete.
    pub(crate) fn write(
        &mut self,
        mut input: &[u8],
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        let batch = self.batch_bytes();
        if !self.pending.is_empty() {
            let take = (batch - self.pending.len()).min(input.len());
            self.pending.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.pending.len() == batch {
                let pending = std::mem::take(&mut self.pending);
                self.compress(&pending, sink)?;
                self.pending = pending;
                self.pending.clear();
            }
        }
        if input.len() >= batch {
            let whole = input.len() / ZSTD_FRAME_SIZE * ZSTD_FRAME_SIZE;
            self.compress(&input[..whole], sink)?;
            input = &input[whole..];
        }
        self.pending.extend_from_slice(input);
        Ok(())
    }

    /// Compresses what is left (an empty component still gets one empty frame), then
    /// appends the seek table when there are several frames.
    pub(crate) fn finish(&mut self, sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        if !self.pending.is_empty() || self.sizes.is_empty() {
            let pending = std::mem::take(&mut self.pending);
            self.compress(&pending, sink)?;
        }
        if self.sizes.len() > 1 || self.seekable {
            match super::seek_table::encode(&self.sizes) {
                Some(table) => sink(&table)?,
                None if self.seekable => {
                    bail!(
                        Limit,
                        "{} zstd frames are more than a seek table can list",
                        self.sizes.len()
                    )
                }
                None => {}
            }
        }
        Ok(())
    }
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

    /// Frames come out in input order with their sizes whatever order the workers finish
    /// in, and a sink that fails stops the compression with its error.
    #[test]
    fn frames_are_sunk_in_order_and_a_failing_sink_stops_them() {
        // Seven frames, the odd ones far slower to compress than the even ones.
        let n = 7 * ZSTD_FRAME_SIZE - 1000;
        let mut seed = 1u64;
        let input: Vec<u8> = (0..n)
            .map(|i| {
                if (i / ZSTD_FRAME_SIZE) % 2 == 0 {
                    0
                } else {
                    seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (seed >> 56) as u8
                }
            })
            .collect();
        for workers in [1, 2, 3, 8] {
            let mut enc = FrameEncoder::new(1);
            enc.workers = workers;
            let mut frames: Vec<Vec<u8>> = Vec::new();
            enc.compress(&input, &mut |f| {
                frames.push(f.to_vec());
                Ok(())
            })
            .unwrap();
            assert_eq!(frames.len(), 7);
            for (k, frame) in frames.iter().enumerate() {
                let chunk = &input[k * ZSTD_FRAME_SIZE..((k + 1) * ZSTD_FRAME_SIZE).min(n)];
                let mut out = vec![0u8; chunk.len()];
                zstd_decode_into(frame, &mut out).unwrap();
                assert!(out == chunk, "frame {k} with {workers} workers");
                assert_eq!(
                    enc.sizes[k],
                    (frame.len() as u32, chunk.len() as u32),
                    "frame {k}"
                );
            }

            let mut enc = FrameEncoder::new(1);
            enc.workers = workers;
            let mut sunk = 0;
            let e = enc
                .compress(&input, &mut |_| {
                    sunk += 1;
                    if sunk == 3 {
                        Err(err!(Io, "disk full"))
                    } else {
                        Ok(())
                    }
                })
                .unwrap_err();
            assert_eq!((e.kind(), e.message()), (ErrorKind::Io, "disk full"));
            assert_eq!((sunk, enc.sizes.len()), (3, 2), "{workers} workers");
        }
    }

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
