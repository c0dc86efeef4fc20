//! The library's one bounded thread pool. Every parallel piece of work (batch loads, zstd
//! frames compressed and decoded, digests verified, blocks dequantized, shards parsed)
//! runs on it, and work started from a pool thread (a batch request that decodes frames
//! in parallel, which dequantizes in parallel) runs on the same threads: however deep
//! the nesting, the library never has more threads than the pool's size.
//!
//! Built on `rayon-core`: a `ThreadPool` of our own (never rayon's global pool, so a
//! host program's rayon work is neither slowed nor sized by ours), work-stealing, so
//! that a pool thread waiting for nested work runs pending work instead of idling.
//!
//! The rule that keeps it deadlock-free: code that may run on a pool thread never waits
//! for work that needs a pool thread to start, except through this module (whose waits
//! run pending work themselves); and it never holds a lock across a call into this
//! module that other pool work may want too (a waiting thread may run that work, on the
//! same thread, and find the lock taken). `spawn`ed work that someone waits for is
//! claimed by the waiter when no thread started it yet (see `codec::compress`).
//!
//! Beside the pool, one I/O helper (`io_map`, `io_scope`): work that waits on the network
//! (a remote object's reads, a remote set's shards) runs on threads of its own, as many as
//! the requests worth having in flight, started for the call and joined before it
//! returns; what that work computes in parallel still runs on the pool.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use rayon_core::{ThreadPool, ThreadPoolBuilder};

use crate::error::{Result, bail, err};

/// The pool in use, built on first use (`None` until then, and after a failed build). On
/// a cache line of its own: every parallel call takes this lock, and the values read on
/// every call of other paths (`SIZE`, the C API's error count) must not share its line.
static POOL: CacheLine<Mutex<Option<Arc<Pool>>>> = CacheLine(Mutex::new(None));

/// The pools of a parent process, in a child it forked: their threads don't exist here
/// (fork copies only the calling thread), so they are never used again, only kept
/// reachable (a leak checker then sees what they hold as still in use, not as lost).
static FORKED_AWAY: Mutex<Vec<Arc<Pool>>> = Mutex::new(Vec::new());

/// A pool, the process that started its threads, and their handles (kept, so that what
/// each thread owns is reachable from here, and so that a replaced pool's threads can be
/// waited for).
struct Pool {
    /// None once dropped (`Drop`).
    pool: Option<ThreadPool>,
    pid: u32,
    threads: Arc<Mutex<Vec<std::thread::JoinHandle<()>>>>,
}

impl Pool {
    fn pool(&self) -> &ThreadPool {
        self.pool.as_ref().expect("a pool is dropped only once")
    }
}

/// The longest a replaced pool's end is waited for (`Pool::drop`): its threads end as soon
/// as they have finished the work they have, which is at most some detached pieces (a zstd
/// frame being compressed); the bound only keeps a pathological wait from becoming a hang.
const END_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

impl Drop for Pool {
    /// A pool no one uses any more (replaced by `set_threads`, and no work of anyone's
    /// running on it) ends with its threads: they finish the work they have, then exit,
    /// and this waits for that, so that nothing of the old pool is left once it is gone
    /// (a child forked after a resize has none of it: its memory would be held by threads
    /// that the child doesn't have). Not on one of its own threads (the last user may be
    /// nested work on it), and not in a child the pool's process forked (its threads
    /// aren't there: the pool is left as it is, see FORKED_AWAY).
    fn drop(&mut self) {
        let Some(pool) = self.pool.take() else {
            return;
        };
        if self.pid != std::process::id() {
            std::mem::forget(pool);
            return;
        }
        drop(pool);
        let mut threads = self.threads.lock().unwrap_or_else(|p| p.into_inner());
        let me = std::thread::current().id();
        if threads.iter().any(|t| t.thread().id() == me) {
            return;
        }
        let deadline = std::time::Instant::now() + END_WAIT;
        while !threads.iter().all(|t| t.is_finished()) {
            if std::time::Instant::now() > deadline {
                return;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        for t in threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// A value alone on its cache line (128 bytes: x86 prefetches 64-byte lines in pairs).
#[repr(align(128))]
struct CacheLine<T>(T);

/// The size asked for with `set_threads` (0: one thread per core).
static ASKED: AtomicUsize = AtomicUsize::new(0);

/// The size of the pool in use, or the size it will have (read on hot paths: written
/// only when the pool is built or resized, so it stays in every core's cache).
static SIZE: AtomicUsize = AtomicUsize::new(0);

/// One thread per core (the CPUs this process may run on).
fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The number of threads the pool has (or will have when first used): the size given to
/// `set_threads`, or one per core (the CPUs this process may run on). Cheap.
pub fn threads() -> usize {
    match SIZE.load(Ordering::Relaxed) {
        0 => {
            let n = match ASKED.load(Ordering::Relaxed) {
                0 => cores(),
                n => n,
            };
            SIZE.store(n, Ordering::Relaxed);
            n
        }
        n => n,
    }
}

fn build(threads: usize) -> Result<Pool> {
    let handles = Arc::new(Mutex::new(Vec::with_capacity(threads)));
    let kept = handles.clone();
    // Threads that have started running (see below).
    let started = Arc::new((Mutex::new(0usize), Condvar::new()));
    let starting = started.clone();
    let pool = ThreadPoolBuilder::new()
        .num_threads(threads)
        .start_handler(move |_| {
            let (count, cv) = &*starting;
            *count.lock().unwrap_or_else(|p| p.into_inner()) += 1;
            cv.notify_all();
        })
        .spawn_handler(move |t| {
            let h = std::thread::Builder::new()
                .name(format!("ztensor-{}", t.index()))
                .spawn(|| t.run())?;
            kept.lock().unwrap_or_else(|p| p.into_inner()).push(h);
            Ok(())
        })
        // A panic in detached work is reported by that work (it catches it); one that
        // still reaches the pool must not abort the host process.
        .panic_handler(|_| {})
        .build()
        .map_err(|e| err!(Io, "starting {threads} threads: {e}"))?;
    // Every thread running before the pool is handed out: until a thread starts, its
    // start-up state is owned by a thread that doesn't run yet, so a fork in that window
    // (a resize, then at once a fork, as tests/c/test_pool.c does) leaves the child
    // holding memory no one can free.
    let (count, cv) = &*started;
    let mut n = count.lock().unwrap_or_else(|p| p.into_inner());
    while *n < threads {
        n = cv.wait(n).unwrap_or_else(|p| p.into_inner());
    }
    drop(n);
    Ok(Pool {
        pool: Some(pool),
        pid: std::process::id(),
        threads: handles,
    })
}

/// Sets the number of threads of the library's pool: `threads` (at most 1024), or 0 for
/// one per core (the default). Takes effect at once: a pool already running is replaced
/// (its threads finish the work they have, then exit; an idle pool's exit is waited for
/// here), so work started after this call runs on the new pool. Work running on the old
/// pool when it is replaced keeps its threads until it ends (the old pool's end is waited
/// for where that work ends), so the library may briefly have both pools' threads.
/// `InvalidArgument` above 1024; `Io` when the threads can't be started (the old pool
/// then stays). Thread-safe.
pub fn set_threads(threads: usize) -> Result<()> {
    if threads > 1024 {
        bail!(
            InvalidArgument,
            "{threads} threads asked for the pool, more than 1024"
        );
    }
    let size = if threads == 0 { cores() } else { threads };
    let mut pool = POOL.0.lock().unwrap_or_else(|p| p.into_inner());
    let mut old = None;
    if pool.is_some() {
        let new = build(size)?;
        old = pool.replace(Arc::new(new));
    }
    ASKED.store(threads, Ordering::Relaxed);
    SIZE.store(size, Ordering::Relaxed);
    drop(pool);
    // Dropped without the lock: its end is waited for, and the work it is finishing may
    // want the (new) pool.
    if let Some(old) = old {
        forked_away(old);
    }
    Ok(())
}

/// The pool, built on first use, and again in a child process that a fork made after it
/// was built (the parent's threads aren't in the child: work handed to them would wait
/// forever); `None` when its threads can't be started (callers then run their work on
/// the calling thread).
fn pool() -> Option<Arc<Pool>> {
    let mut pool = POOL.0.lock().unwrap_or_else(|p| p.into_inner());
    if pool.as_ref().is_some_and(|p| p.pid != std::process::id()) {
        forked_away(pool.take().expect("checked"));
    }
    if pool.is_none() {
        *pool = build(threads()).ok().map(Arc::new);
    }
    pool.clone()
}

/// Drops a replaced pool, or keeps a parent's pool in a forked child (see FORKED_AWAY):
/// dropping it there would signal threads that don't exist.
fn forked_away(old: Arc<Pool>) {
    if old.pid != std::process::id() {
        FORKED_AWAY
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(old);
    }
}

/// How many items run at once when at most `width` are asked for (0: the pool's size):
/// never more than the pool's threads plus the calling thread.
fn width_for(width: usize, items: usize) -> usize {
    let size = threads();
    let width = if width == 0 { size } else { width };
    width.min(size + 1).min(items)
}

/// Runs `work` on every item and returns the results in the items' order. Items are
/// taken in order, each by the next free thread: this one and up to `width - 1` of the
/// pool's (`width` 0: the pool's size). Runs on this thread alone for one item or a
/// width of 1. Blocks until every item is done; a panic in `work` is raised here after
/// the others ended. From a pool thread, the nested items run on the same pool.
pub(crate) fn map<T, R, F>(items: Vec<T>, width: usize, work: F) -> Vec<R>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    let width = width_for(width, items.len());
    let pool = if width > 1 { pool() } else { None };
    let Some(pool) = pool else {
        return items.into_iter().map(work).collect();
    };
    let n = items.len();
    // Each slot is claimed once (by the counter), so its lock is never contended.
    let slots: Vec<Mutex<(Option<T>, Option<R>)>> = items
        .into_iter()
        .map(|t| Mutex::new((Some(t), None)))
        .collect();
    let next = AtomicUsize::new(0);
    let take = || {
        while let Some(slot) = slots.get(next.fetch_add(1, Ordering::Relaxed)) {
            let mut s = slot.lock().unwrap_or_else(|p| p.into_inner());
            let item = s.0.take().expect("each slot is claimed once");
            drop(s);
            let r = work(item);
            slot.lock().unwrap_or_else(|p| p.into_inner()).1 = Some(r);
        }
    };
    pool.pool().in_place_scope(|scope| {
        for _ in 1..width {
            scope.spawn(|_| take());
        }
        take();
    });
    let results: Vec<R> = slots
        .into_iter()
        .filter_map(|s| s.into_inner().unwrap_or_else(|p| p.into_inner()).1)
        .collect();
    assert_eq!(results.len(), n, "every item ran");
    results
}

/// Runs `body` on this thread with a way to start work on the pool (the function it is
/// given), and returns once the body and all the work it started have ended. For work
/// found as it goes (shards named while an index is read). Without a pool, started
/// work runs at once, on this thread.
pub(crate) fn scope<'s, R>(
    body: impl FnOnce(&mut dyn FnMut(Box<dyn FnOnce() + Send + 's>)) -> R,
) -> R {
    match pool() {
        Some(pool) => (pool.pool()).in_place_scope(|s| body(&mut |job| s.spawn(move |_| job()))),
        None => body(&mut |job| job()),
    }
}

/// Runs `work` on a pool thread, detached: this returns at once. Whoever needs its
/// result must be able to do the work itself when no thread has started it (so that a
/// waiter on a pool thread never waits for a pool thread), and `work` must catch its own
/// panics. Without a pool (its threads couldn't start), runs `work` here.
pub(crate) fn spawn(work: impl FnOnce() + Send + 'static) {
    match pool() {
        Some(pool) => pool.pool().spawn(work),
        None => work(),
    }
}

// --- the I/O helper ------------------------------------------------------------------------

/// Runs `work` on every item on threads of their own, at most `threads` at once (at least
/// one), and returns the results in the items' order; items are taken in order, each by
/// the next free thread. For work that waits on the network rather than on cores (a
/// remote object's range requests, a remote set's shards parsed as they arrive): on the
/// CPU pool such work would keep its threads idle while they wait, and the pool's size
/// (one thread per core) is not the number of requests worth having in flight. The
/// threads start for the call and are joined before it returns, so nothing outlives it;
/// work they run that is parallel itself (decoding, dequantizing) still runs on the CPU
/// pool. A panic in `work` is raised here after the others ended.
pub(crate) fn io_map<T, R, F>(items: Vec<T>, threads: usize, work: F) -> Vec<R>
where
    T: Send,
    R: Send,
    F: Fn(T) -> R + Sync,
{
    let n = items.len();
    let threads = threads.max(1).min(n);
    if threads <= 1 {
        return items.into_iter().map(work).collect();
    }
    let queue = Mutex::new(items.into_iter().enumerate());
    let done: Mutex<Vec<(usize, R)>> = Mutex::new(Vec::with_capacity(n));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut mine = Vec::new();
                loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some((i, item)) = next else { break };
                    mine.push((i, work(item)));
                }
                done.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .append(&mut mine);
            });
        }
    });
    let mut done = done.into_inner().unwrap_or_else(|p| p.into_inner());
    done.sort_unstable_by_key(|&(i, _)| i);
    assert_eq!(done.len(), n, "every item ran");
    done.into_iter().map(|(_, r)| r).collect()
}

/// `scope` for work that waits on the network (see `io_map`): runs `body` on this thread
/// with a way to start work on a thread of its own each, and returns once the body and
/// all the work it started have ended. The caller bounds how much it starts (a remote
/// place's requests in flight).
pub(crate) fn io_scope<'s, R>(
    body: impl FnOnce(&mut dyn FnMut(Box<dyn FnOnce() + Send + 's>)) -> R,
) -> R {
    std::thread::scope(|scope| {
        body(&mut |job: Box<dyn FnOnce() + Send + 's>| {
            scope.spawn(job);
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn map_keeps_the_order_and_nests_on_the_same_threads() {
        let names = Mutex::new(std::collections::BTreeSet::new());
        let out = map((0..64u64).collect(), 0, |i| {
            let inner = map((0..8u64).collect(), 0, |j| {
                let name = std::thread::current().name().map(str::to_owned);
                names.lock().unwrap().insert(name);
                i * 8 + j
            });
            inner.iter().sum::<u64>()
        });
        let expect: Vec<u64> = (0..64u64)
            .map(|i| (0..8).map(|j| i * 8 + j).sum())
            .collect();
        assert_eq!(out, expect);
        // Only pool threads and this test's thread ran the work.
        let me = std::thread::current().name().map(str::to_owned);
        for name in names.into_inner().unwrap() {
            assert!(
                name == me || name.as_deref().is_some_and(|n| n.starts_with("ztensor-")),
                "{name:?}"
            );
        }
    }

    #[test]
    fn a_panic_in_work_reaches_the_caller() {
        let r = std::panic::catch_unwind(|| {
            map(vec![1, 2, 3, 4], 4, |i| {
                if i == 3 {
                    panic!("item three");
                }
                i
            })
        });
        assert!(r.is_err());
    }

    #[test]
    fn io_map_keeps_the_order_on_threads_of_its_own() {
        let names = Mutex::new(std::collections::BTreeSet::new());
        let out = io_map((0..32u64).collect(), 4, |i| {
            names
                .lock()
                .unwrap()
                .insert(std::thread::current().name().map(str::to_owned));
            i * 3
        });
        assert_eq!(out, (0..32u64).map(|i| i * 3).collect::<Vec<_>>());
        // Not the CPU pool's threads (named ztensor-N): threads of the call's own.
        for name in names.into_inner().unwrap() {
            assert!(
                !name.as_deref().is_some_and(|n| n.starts_with("ztensor-")),
                "{name:?}"
            );
        }
        let ran = AtomicUsize::new(0);
        io_scope(|spawn| {
            for _ in 0..3 {
                spawn(Box::new(|| {
                    ran.fetch_add(1, Ordering::Relaxed);
                }));
            }
        });
        assert_eq!(ran.load(Ordering::Relaxed), 3);
    }

    #[test]
    fn widths_are_bounded_by_the_pool_and_the_items() {
        assert_eq!(width_for(1, 10), 1);
        assert_eq!(width_for(5, 3), 3);
        assert!(width_for(0, usize::MAX) <= threads());
        assert!(width_for(100_000, usize::MAX) <= threads() + 1);
        let e = set_threads(1025).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArgument);
    }
}
