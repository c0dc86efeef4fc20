//! The pipeline's synchronisation, apart from everything it moves: which staging buffer
//! is free, filling or in flight (`Ring`), which work is claimed (`Queue`), and when a
//! request is finished (`Tally`). Kept free of the reader, the device and the error type so
//! that the model checker (`tests/loom/`, loom) can run it with every interleaving; the
//! rules it checks are the ones the loader's promises rest on:
//!
//! - a buffer is in exactly one place: the free list, the flight queue (copies issued
//!   from it, their event recorded), or the hands of the one task that took it;
//! - a buffer taken from the flight queue is reused only after its taker has waited for
//!   its event and settled what landed from it;
//! - every request is finished exactly once, after every chunk of it was settled (landed,
//!   failed or skipped), or by `Tally::finish` at the end of a load for what was never run.
//!
//! Nothing here blocks: a task that finds no buffer in either place gets `Taken::None`
//! (the loader runs at most one task fewer than it has buffers, so that never happens while
//! the buffers are healthy: see `Loader`).

use std::collections::VecDeque;

use super::sync::{AtomicBool, AtomicU64, AtomicUsize, Mutex, MutexGuard, Ordering};

/// What landed from a staging buffer once its copies complete: `bytes` of request
/// `request`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Landing {
    pub(crate) request: usize,
    pub(crate) bytes: u64,
}

/// What `Ring::take` hands out.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Taken {
    /// A free buffer: fill it.
    Free(usize),
    /// The buffer whose copies were issued longest ago: wait for its event, settle its
    /// landings, then fill it.
    Flying(usize, Vec<Landing>),
    /// Every buffer is being filled by another task (or was retired).
    None,
}

struct RingState {
    free: Vec<usize>,
    flying: VecDeque<(usize, Vec<Landing>)>,
    /// Buffers taken out of use for good (their device failed to record an event, so
    /// nobody can know when it stops reading them).
    retired: Vec<usize>,
    /// The most buffers held or in flight at once.
    peak_busy: usize,
}

/// The staging buffers' states (the buffers themselves live with the loader).
pub(crate) struct Ring {
    count: usize,
    state: Mutex<RingState>,
}

impl Ring {
    /// `count` buffers, all free.
    pub(crate) fn new(count: usize) -> Ring {
        Ring {
            count,
            state: Mutex::new(RingState {
                free: (0..count).rev().collect(),
                flying: VecDeque::with_capacity(count),
                retired: Vec::new(),
                peak_busy: 0,
            }),
        }
    }

    fn lock(&self) -> MutexGuard<'_, RingState> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A buffer to fill: a free one, else the oldest in flight (which the taker must wait
    /// for), else none.
    pub(crate) fn take(&self) -> Taken {
        let mut s = self.lock();
        let taken = match s.free.pop() {
            Some(i) => Taken::Free(i),
            None => match s.flying.pop_front() {
                Some((i, landings)) => Taken::Flying(i, landings),
                None => Taken::None,
            },
        };
        let busy = self.count - s.free.len() - s.retired.len();
        s.peak_busy = s.peak_busy.max(busy);
        taken
    }

    /// The copies out of buffer `slot` are issued and its event recorded after them.
    pub(crate) fn fly(&self, slot: usize, landings: Vec<Landing>) {
        self.lock().flying.push_back((slot, landings));
    }

    /// Buffer `slot` holds nothing in flight: free again.
    pub(crate) fn put_back(&self, slot: usize) {
        self.lock().free.push(slot);
    }

    /// Buffer `slot` can't be used again (its copies may still be reading it).
    pub(crate) fn retire(&self, slot: usize) {
        self.lock().retired.push(slot);
    }

    /// The oldest buffer in flight, for the drain at the end of a load (the caller waits
    /// for it and settles its landings, then puts it back).
    pub(crate) fn oldest_flying(&self) -> Option<(usize, Vec<Landing>)> {
        self.lock().flying.pop_front()
    }

    /// Buffers that can still be used.
    pub(crate) fn usable(&self) -> usize {
        self.count - self.lock().retired.len()
    }

    /// The most buffers held or in flight at once since the ring was made.
    pub(crate) fn peak_busy(&self) -> usize {
        self.lock().peak_busy
    }

    /// True when every usable buffer is free (nothing held, nothing in flight).
    pub(crate) fn all_free(&self) -> bool {
        let s = self.lock();
        s.free.len() + s.retired.len() == self.count
    }
}

/// One request's progress: chunks not settled yet, bytes landed, its first error, and
/// whether its end was reported.
pub(crate) struct Tally<E> {
    remaining: AtomicUsize,
    landed: AtomicU64,
    error: Mutex<Option<E>>,
    failed: AtomicBool,
    finished: AtomicBool,
}

impl<E: Clone> Tally<E> {
    /// A request of `chunks` chunks (0: finished as soon as asked).
    pub(crate) fn new(chunks: usize) -> Tally<E> {
        Tally {
            remaining: AtomicUsize::new(chunks),
            landed: AtomicU64::new(0),
            error: Mutex::new(None),
            failed: AtomicBool::new(false),
            finished: AtomicBool::new(false),
        }
    }

    /// Counts one chunk settled; true when it was the last.
    fn settle(&self) -> bool {
        // AcqRel: whoever settles the last chunk sees every other settler's bytes and error.
        self.remaining.fetch_sub(1, Ordering::AcqRel) == 1
    }

    /// A chunk's `bytes` landed in the destination. True when it was the request's last
    /// chunk (then call `finish`).
    pub(crate) fn land(&self, bytes: u64) -> bool {
        self.landed.fetch_add(bytes, Ordering::Relaxed);
        self.settle()
    }

    /// A chunk failed with `e` (the request keeps its first error). True when it was the
    /// request's last chunk.
    pub(crate) fn fail(&self, e: E) -> bool {
        self.record(e);
        self.settle()
    }

    /// Records `e` as the request's error (the first one stays) without settling a chunk.
    pub(crate) fn record(&self, e: E) {
        let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
        if slot.is_none() {
            *slot = Some(e);
        }
        self.failed.store(true, Ordering::Release);
    }

    /// A chunk that was not run because the request had already failed. True when it was
    /// the request's last chunk.
    pub(crate) fn skip(&self) -> bool {
        self.settle()
    }

    /// True once any chunk failed: the request's other chunks may be skipped.
    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::Acquire)
    }

    /// Bytes landed so far.
    pub(crate) fn landed(&self) -> u64 {
        self.landed.load(Ordering::Relaxed)
    }

    /// The request's end, the first time it is asked for (None afterwards): its error, or
    /// `unfinished` when chunks were never settled (a cancelled load), or Ok with the bytes
    /// landed. Call when `land`/`fail`/`skip` said last, and for every request at the end
    /// of a load.
    pub(crate) fn finish(&self, unfinished: impl FnOnce() -> E) -> Option<(Result<(), E>, u64)> {
        // A plain load first: at the end of a load every request is asked again, and
        // nearly all have finished.
        if self.finished.load(Ordering::Acquire) || self.finished.swap(true, Ordering::AcqRel) {
            return None;
        }
        Some(self.outcome(unfinished))
    }

    /// The request's end as `finish` computes it, whether or not it was asked for already:
    /// for the results of a load once every request finished (nothing changes then).
    pub(crate) fn outcome(&self, unfinished: impl FnOnce() -> E) -> (Result<(), E>, u64) {
        let landed = self.landed();
        // `record` sets the error before `failed` (Release): no failure seen, no error.
        let error = match self.failed.load(Ordering::Acquire) {
            true => self.error.lock().unwrap_or_else(|p| p.into_inner()).clone(),
            false => None,
        };
        let result = match error {
            Some(e) => Err(e),
            None if self.remaining.load(Ordering::Acquire) != 0 => Err(unfinished()),
            None => Ok(()),
        };
        (result, landed)
    }
}

/// The work of a load, claimed in order by the tasks, and the cancel flag they check (the
/// loader's: `cancel` may come from any thread, before or during the load).
pub(crate) struct Queue<'c> {
    next: Mutex<usize>,
    len: usize,
    cancelled: &'c AtomicBool,
}

impl<'c> Queue<'c> {
    /// `len` items, none claimed, stopped by `cancelled`.
    pub(crate) fn new(len: usize, cancelled: &'c AtomicBool) -> Queue<'c> {
        Queue {
            next: Mutex::new(0),
            len,
            cancelled,
        }
    }

    /// Claims the next items: the first unclaimed one, and after it each next one for
    /// which `more(first, candidate)` says yes. Empty when all are claimed or the load
    /// was cancelled.
    pub(crate) fn claim(
        &self,
        mut more: impl FnMut(usize, usize) -> bool,
    ) -> std::ops::Range<usize> {
        if self.cancelled() {
            return 0..0;
        }
        let mut next = self.next.lock().unwrap_or_else(|p| p.into_inner());
        let first = *next;
        if first >= self.len {
            return 0..0;
        }
        let mut end = first + 1;
        while end < self.len && more(first, end) {
            end += 1;
        }
        *next = end;
        first..end
    }

    /// True once `cancel` was called.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancelled.load(Ordering::Acquire)
    }
}
