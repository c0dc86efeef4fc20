//! The writer's zstd compression as a pipeline: input is cut into frames of
//! `ZSTD_FRAME_SIZE` bytes, each compressed on the pool as soon as it is full while the
//! caller goes on writing, and the compressed frames come back out in input order,
//! between the markers the caller put in the stream (where a component begins and ends),
//! so that one component's frames and the next one's compress side by side.
//!
//! Memory is bounded: at most `window` frames are in flight (handed to the pool and not
//! yet taken out), each holding its input until it is compressed and its output until it
//! is taken out, plus the frame being filled; the input buffers are reused. With
//! `window` = 2 x the pool's threads (at least 4, at most 64) that is about 2 x window x
//! 4 MiB at worst (incompressible data).
//!
//! No wait can deadlock, whichever thread the caller is (a pool thread included): a frame
//! the caller needs that no pool thread has started yet is compressed by the caller
//! itself; it only waits for a frame another thread is compressing now.

use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Condvar, Mutex};

use super::frames::ZSTD_FRAME_SIZE;
use crate::error::{Result, err};

/// A compressed frame, or a marker, in the order they were put in.
pub(crate) enum Out<'a, M> {
    /// A compressed frame and the input bytes it holds.
    Frame {
        bytes: &'a [u8],
        decoded: usize,
    },
    Mark(M),
}

/// Where one frame is.
enum State {
    /// Waiting for a thread: its input.
    Queued(Vec<u8>),
    /// Being compressed.
    Running,
    /// Compressed (or failed), with its input buffer back for reuse.
    Done(Result<Vec<u8>>, Vec<u8>),
    /// Taken out.
    Taken,
}

/// One frame handed to the pool.
struct Job {
    level: i32,
    state: Mutex<State>,
    done: Condvar,
}

/// What the pool's threads share with the pipeline: compression contexts to reuse (one
/// per frame compressed at once, at most), and whether every frame carries its content
/// checksum (zTensor v2's `zt.zstd-seekable/1`).
struct Shared {
    contexts: Mutex<Vec<(i32, zstd::bulk::Compressor<'static>)>>,
    checksums: bool,
}

impl Shared {
    /// Compresses `input` at `level` with a context of the stash (or a new one).
    fn compress(&self, level: i32, input: &[u8]) -> Result<Vec<u8>> {
        let stashed = {
            let mut c = self.contexts.lock().unwrap_or_else(|p| p.into_inner());
            let at = c.iter().rposition(|(l, _)| *l == level);
            at.map(|i| c.swap_remove(i).1)
        };
        let mut cctx = match stashed {
            Some(c) => c,
            None => {
                let mut c = zstd::bulk::Compressor::new(level)
                    .map_err(|e| err!(InvalidArgument, "zstd level {level}: {e}"))?;
                if self.checksums {
                    c.include_checksum(true)
                        .map_err(|e| err!(Internal, "zstd checksum flag: {e}"))?;
                }
                c
            }
        };
        let out = cctx
            .compress(input)
            .map_err(|e| err!(Internal, "zstd compression: {e}"));
        (self.contexts.lock().unwrap_or_else(|p| p.into_inner())).push((level, cctx));
        out
    }
}

impl Job {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Compresses the frame if nobody has started it; returns at once otherwise.
    fn run(&self, shared: &Shared) {
        let mut state = self.lock();
        let input = match std::mem::replace(&mut *state, State::Running) {
            State::Queued(input) => input,
            other => {
                *state = other;
                return;
            }
        };
        drop(state);
        let result = catch_unwind(AssertUnwindSafe(|| shared.compress(self.level, &input)))
            .unwrap_or_else(|_| Err(err!(Internal, "zstd compression panicked")));
        *self.lock() = State::Done(result, input);
        self.done.notify_all();
    }

    /// The compressed frame and its input buffer: compressed here when no thread has
    /// started it, else waited for (the thread compressing it is running).
    fn take(&self, shared: &Shared) -> (Result<Vec<u8>>, Vec<u8>) {
        let mut state = self.lock();
        loop {
            match std::mem::replace(&mut *state, State::Taken) {
                State::Queued(input) => {
                    *state = State::Running;
                    drop(state);
                    let r = shared.compress(self.level, &input);
                    return (r, input);
                }
                State::Running => {
                    *state = State::Running;
                    state = self.done.wait(state).unwrap_or_else(|p| p.into_inner());
                }
                State::Done(r, input) => return (r, input),
                State::Taken => unreachable!("a frame is taken once"),
            }
        }
    }

    fn is_done(&self) -> bool {
        matches!(*self.lock(), State::Done(..))
    }
}

enum Item<M> {
    Frame(Arc<Job>, usize),
    Mark(M),
}

/// Frames compressed on the pool and handed out in order, between markers of type `M`.
pub(crate) struct FramePipeline<M> {
    shared: Arc<Shared>,
    items: VecDeque<Item<M>>,
    /// Frames in `items`.
    in_flight: usize,
    window: usize,
    /// The frame being filled.
    current: Vec<u8>,
    /// Frames started since the last `end_frames` (whether the next `end_frames` owes
    /// an empty frame).
    frames: usize,
    /// Input buffers to reuse.
    spare: Vec<Vec<u8>>,
}

impl<M> FramePipeline<M> {
    /// A pipeline of at most `window` frames in flight (0: 2 x the pool's threads, at
    /// least 4, at most 64), every frame carrying its content checksum when `checksums`.
    pub(crate) fn new(window: usize, checksums: bool) -> Self {
        let window = match window {
            0 => (2 * crate::pool::threads()).clamp(4, 64),
            n => n,
        };
        FramePipeline {
            shared: Arc::new(Shared {
                contexts: Mutex::new(Vec::new()),
                checksums,
            }),
            items: VecDeque::new(),
            in_flight: 0,
            window,
            current: Vec::new(),
            frames: 0,
            spare: Vec::new(),
        }
    }

    /// Whether anything is waiting to be handed out.
    pub(crate) fn is_empty(&self) -> bool {
        self.items.is_empty() && self.current.is_empty()
    }

    /// Feeds input at zstd `level`; full frames go to the pool, and frames done by now
    /// (and markers between them) are handed to `out` in order. Blocks only while
    /// `window` frames are in flight.
    pub(crate) fn write(
        &mut self,
        level: i32,
        mut input: &[u8],
        out: &mut dyn FnMut(Out<'_, M>) -> Result<()>,
    ) -> Result<()> {
        while !input.is_empty() {
            if self.current.capacity() == 0 {
                self.current = self
                    .spare
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(ZSTD_FRAME_SIZE));
            }
            let take = (ZSTD_FRAME_SIZE - self.current.len()).min(input.len());
            self.current.extend_from_slice(&input[..take]);
            input = &input[take..];
            if self.current.len() == ZSTD_FRAME_SIZE {
                self.submit(level, out)?;
            }
        }
        self.hand_out(false, out)
    }

    /// Ends a stream of frames: the partial frame goes to the pool (an empty stream
    /// still gets one empty frame).
    pub(crate) fn end_frames(
        &mut self,
        level: i32,
        out: &mut dyn FnMut(Out<'_, M>) -> Result<()>,
    ) -> Result<()> {
        if !self.current.is_empty() || self.frames == 0 {
            self.submit(level, out)?;
        }
        self.frames = 0;
        Ok(())
    }

    /// Drops the input not yet in a frame (a stream given up half-way); frames already
    /// handed to the pool still come out.
    pub(crate) fn discard_input(&mut self) {
        self.current.clear();
        self.frames = 0;
    }

    /// Puts a marker in the stream, handed out after every frame before it.
    pub(crate) fn mark(
        &mut self,
        m: M,
        out: &mut dyn FnMut(Out<'_, M>) -> Result<()>,
    ) -> Result<()> {
        self.items.push_back(Item::Mark(m));
        self.hand_out(false, out)
    }

    /// Hands everything out, waiting for (or doing) the frames still in flight.
    pub(crate) fn drain(&mut self, out: &mut dyn FnMut(Out<'_, M>) -> Result<()>) -> Result<()> {
        self.hand_out(true, out)
    }

    /// Hands the current frame to the pool, first making room in the window.
    fn submit(&mut self, level: i32, out: &mut dyn FnMut(Out<'_, M>) -> Result<()>) -> Result<()> {
        while self.in_flight >= self.window {
            self.hand_out_one(out)?;
        }
        let input = std::mem::take(&mut self.current);
        let len = input.len();
        let job = Arc::new(Job {
            level,
            state: Mutex::new(State::Queued(input)),
            done: Condvar::new(),
        });
        let (j, shared) = (job.clone(), self.shared.clone());
        crate::pool::spawn(move || j.run(&shared));
        self.items.push_back(Item::Frame(job, len));
        self.in_flight += 1;
        self.frames += 1;
        Ok(())
    }

    /// Hands out the items at the head: all of them (`wait`), or those ready now.
    fn hand_out(
        &mut self,
        wait: bool,
        out: &mut dyn FnMut(Out<'_, M>) -> Result<()>,
    ) -> Result<()> {
        while let Some(head) = self.items.front() {
            if !wait && matches!(head, Item::Frame(job, _) if !job.is_done()) {
                break;
            }
            self.hand_out_one(out)?;
        }
        Ok(())
    }

    /// Hands out the item at the head, waiting for (or compressing) its frame.
    fn hand_out_one(&mut self, out: &mut dyn FnMut(Out<'_, M>) -> Result<()>) -> Result<()> {
        match self.items.pop_front() {
            Some(Item::Mark(m)) => out(Out::Mark(m)),
            Some(Item::Frame(job, decoded)) => {
                self.in_flight -= 1;
                let (frame, mut input) = job.take(&self.shared);
                input.clear();
                if self.spare.len() < 2 {
                    self.spare.push(input);
                }
                out(Out::Frame {
                    bytes: &frame?,
                    decoded,
                })
            }
            None => Ok(()),
        }
    }
}

impl<M> Drop for FramePipeline<M> {
    /// Frames still queued are not compressed: their jobs find them taken.
    fn drop(&mut self) {
        for item in &self.items {
            if let Item::Frame(job, _) = item {
                let mut state = job.lock();
                if matches!(*state, State::Queued(_)) {
                    *state = State::Taken;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn noise(n: usize, seed: u64) -> Vec<u8> {
        let mut s = seed;
        (0..n)
            .map(|i| {
                if (i / ZSTD_FRAME_SIZE) % 2 == 0 {
                    (i % 7) as u8
                } else {
                    s = s.wrapping_mul(6364136223846793005).wrapping_add(1);
                    (s >> 56) as u8
                }
            })
            .collect()
    }

    /// Frames come out in input order between the markers, each decoding to its input,
    /// whatever the window and however the input is cut into writes.
    #[test]
    fn frames_and_markers_come_out_in_order() {
        let a = noise(3 * ZSTD_FRAME_SIZE + 1000, 1);
        let b = noise(ZSTD_FRAME_SIZE / 2, 2);
        for (window, piece) in [(1, 1 << 20), (2, 3_000_001), (4, 10 << 20), (0, 4096)] {
            let mut p = FramePipeline::new(window, false);
            let mut got: Vec<(Option<&str>, Vec<u8>, usize)> = Vec::new();
            let mut out = |o: Out<'_, &'static str>| {
                match o {
                    Out::Frame { bytes, decoded } => got.push((None, bytes.to_vec(), decoded)),
                    Out::Mark(m) => got.push((Some(m), Vec::new(), 0)),
                }
                Ok(())
            };
            p.mark("a", &mut out).unwrap();
            for chunk in a.chunks(piece) {
                p.write(3, chunk, &mut out).unwrap();
            }
            p.end_frames(3, &mut out).unwrap();
            p.mark("/a", &mut out).unwrap();
            p.mark("empty", &mut out).unwrap();
            p.end_frames(3, &mut out).unwrap();
            p.mark("b", &mut out).unwrap();
            p.write(19, &b, &mut out).unwrap();
            p.end_frames(19, &mut out).unwrap();
            p.mark("/b", &mut out).unwrap();
            p.drain(&mut out).unwrap();
            assert!(p.is_empty());
            let marks: Vec<_> = got.iter().map(|g| g.0.unwrap_or("frame")).collect();
            assert_eq!(
                marks,
                [
                    "a", "frame", "frame", "frame", "frame", "/a", "empty", "frame", "b", "frame",
                    "/b"
                ],
                "window {window}"
            );
            let mut decoded = Vec::new();
            for (_, frame, n) in got.iter().filter(|g| g.0.is_none()) {
                let mut d = vec![0u8; *n];
                crate::codec::zstd_decode_into(frame, &mut d).unwrap();
                decoded.extend_from_slice(&d);
            }
            let mut expect = a.clone();
            expect.extend_from_slice(&b);
            assert!(decoded == expect, "window {window}");
        }
    }

    /// A failing consumer stops the pipeline with its error; dropping it with frames in
    /// flight is fine.
    #[test]
    fn a_failing_consumer_stops_it() {
        let a = noise(6 * ZSTD_FRAME_SIZE, 3);
        let mut p = FramePipeline::<()>::new(2, false);
        let mut n = 0;
        let mut out = |_: Out<'_, ()>| {
            n += 1;
            if n == 2 {
                Err(err!(Io, "disk full"))
            } else {
                Ok(())
            }
        };
        let e = p.write(1, &a, &mut out).unwrap_err();
        assert_eq!((e.kind(), e.message()), (ErrorKind::Io, "disk full"));
        drop(p);
    }

    /// Pipelines whose callers are the pool's own threads, every one of them busy
    /// writing, with a window of one frame: each caller compresses the frames no thread
    /// has started, so none waits for a thread that is itself waiting.
    #[test]
    fn writers_on_every_pool_thread_finish() {
        let a = noise(5 * ZSTD_FRAME_SIZE / 2, 4);
        let writers = crate::pool::threads() + 1;
        let sizes = crate::pool::map((0..writers).collect(), writers, |_| {
            let mut p = FramePipeline::<()>::new(1, false);
            let mut total = 0;
            let mut out = |o: Out<'_, ()>| {
                if let Out::Frame { decoded, .. } = o {
                    total += decoded;
                }
                Ok(())
            };
            p.write(1, &a, &mut out).unwrap();
            p.end_frames(1, &mut out).unwrap();
            p.drain(&mut out).unwrap();
            total
        });
        assert_eq!(sizes, vec![a.len(); writers]);
    }
}
