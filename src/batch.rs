//! Loading many components in one call: each request is a read, a range read or a
//! converted read into the caller's buffer, and the requests run on the library's pool,
//! large ones first and small neighbours together, each with its own result.
//! What a runtime loading a whole model calls once instead of once per tensor.

use std::sync::Mutex;

use crate::dtype::DType;
use crate::error::Result;
use crate::reader::Reader;

/// One request of a batch load.
#[derive(Debug)]
pub struct LoadRequest<'d> {
    /// The object's index.
    pub object: usize,
    /// The component's index in the object.
    pub component: usize,
    /// Where the bytes go; exactly the size the read fills.
    pub dst: &'d mut [u8],
    /// Read a range instead of the whole component: from this decoded byte
    /// (`Reader::read_range`), or with `convert`, from this element
    /// (`Reader::read_as_range`).
    pub offset: Option<u64>,
    /// Convert each element into this dtype (`Reader::read_as`).
    pub convert: Option<DType>,
}

/// Total bytes below which a batch runs on the calling thread: threads would cost more
/// than they save.
const PARALLEL_FROM: u64 = 1 << 20;

/// The most requests a thread takes at once.
const RUN: usize = 256;

impl Reader<'_> {
    /// Carries out every request, in parallel on at most `threads` of the pool's threads
    /// (this one included; 0: the pool's size, `pool::threads`; a request that decodes or
    /// dequantizes in parallel uses the same threads, never more; for a remote object, as
    /// many threads of their own as its requests in flight,
    /// `RemoteOptions::max_concurrency`), large requests first and small
    /// neighbouring ones together in request order, and returns each request's result in
    /// request order. A failed request leaves its buffer in an
    /// unspecified state and doesn't stop the others. Blocks until all are done.
    pub fn load_batch(&self, requests: &mut [LoadRequest<'_>], threads: usize) -> Vec<Result<()>> {
        let bytes: u64 = requests.iter().map(|r| r.dst.len() as u64).sum();
        // A remote reader waits on the network, not on cores: as many threads as it
        // keeps requests in flight, whatever the size.
        let remote = self.parallel_reads();
        let threads = match (threads, remote) {
            (0, Some(n)) => n,
            (0, None) => crate::pool::threads(),
            (n, _) => n,
        }
        .min(requests.len());
        if threads <= 1 || (bytes < PARALLEL_FROM && remote.is_none()) {
            return requests.iter_mut().map(|r| self.load_one(r)).collect();
        }
        // Runs of neighbouring requests (at most `RUN`, and about an eighth of a thread's
        // share of the bytes; a larger request is a run of its own), taken largest run
        // first so a big request doesn't start last and leave the other threads idle at
        // the end. Neighbours stay together (requests are usually in file order, which
        // the memory system streams), and threads share one claim per run instead of one
        // per request: 50,000 tiny requests, sorted by size, cost twice the one-by-one loop.
        let share = (bytes / (threads as u64 * 8)).max(1);
        let mut runs: Vec<(usize, u64, &mut [LoadRequest<'_>])> = Vec::new();
        let (mut rest, mut first) = (&mut requests[..], 0usize);
        while !rest.is_empty() {
            let mut n = 0;
            let mut run_bytes = 0u64;
            while n < rest.len()
                && n < RUN
                && (n == 0 || run_bytes + rest[n].dst.len() as u64 <= share)
            {
                run_bytes += rest[n].dst.len() as u64;
                n += 1;
            }
            let (run, tail) = std::mem::take(&mut rest).split_at_mut(n);
            runs.push((first, run_bytes, run));
            first += n;
            rest = tail;
        }
        // The largest first, runs of equal size in request order.
        runs.sort_unstable_by_key(|&(first, run_bytes, _)| (std::cmp::Reverse(run_bytes), first));
        let total = first;
        let load_run = |(first, _, run): (usize, u64, &mut [LoadRequest<'_>])| {
            let results: Vec<Result<()>> = run.iter_mut().map(|r| self.load_one(r)).collect();
            (first, results)
        };
        // Local files on the library's pool (decoding and dequantizing inside a request
        // run there too); a remote object's requests wait on the network, not on cores,
        // so they wait on threads of their own, as many as its requests in flight.
        let done = match remote {
            None => crate::pool::map(runs, threads, load_run),
            Some(_) => on_own_threads(runs, threads, load_run),
        };
        let mut results: Vec<Option<Result<()>>> = (0..total).map(|_| None).collect();
        for (first, run) in done {
            for (k, r) in run.into_iter().enumerate() {
                results[first + k] = Some(r);
            }
        }
        results
            .into_iter()
            .map(|r| r.expect("every request ran"))
            .collect()
    }

    fn load_one(&self, r: &mut LoadRequest<'_>) -> Result<()> {
        match (r.offset, r.convert) {
            (None, None) => self.read_into(r.object, r.component, r.dst),
            (Some(offset), None) => self.read_range(r.object, r.component, offset, r.dst),
            (None, Some(dtype)) => self.read_as(r.object, r.component, dtype, r.dst),
            (Some(first), Some(dtype)) => {
                self.read_as_range(r.object, r.component, dtype, first, r.dst)
            }
        }
    }
}

/// Runs `work` on every item on `threads` threads of their own (for work that waits on
/// the network rather than on cores), items taken in order; results in any order.
pub(crate) fn on_own_threads<T: Send, R: Send>(
    items: Vec<T>,
    threads: usize,
    work: impl Fn(T) -> R + Sync,
) -> Vec<R> {
    let queue = Mutex::new(items.into_iter());
    let done = Mutex::new(Vec::new());
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                let mut mine = Vec::new();
                loop {
                    let next = queue.lock().unwrap_or_else(|p| p.into_inner()).next();
                    let Some(item) = next else { break };
                    mine.push(work(item));
                }
                done.lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .append(&mut mine);
            });
        }
    });
    done.into_inner().unwrap_or_else(|p| p.into_inner())
}
