//! Loading many components in one call: each request is a read, a range read or a
//! converted read into the caller's buffer, and the requests run on a bounded pool of
//! threads, largest first, each with its own result. What a runtime loading a whole model
//! calls once instead of once per tensor.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

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

impl Reader<'_> {
    /// Carries out every request, in parallel on at most `threads` threads (0: as many
    /// as the machine has cores, at most 16; for a remote object, as many as its requests
    /// in flight, `RemoteOptions::max_concurrency`), the largest first, and returns each
    /// request's result in request order. A failed request leaves its buffer in an
    /// unspecified state and doesn't stop the others. Blocks until all are done.
    pub fn load_batch(&self, requests: &mut [LoadRequest<'_>], threads: usize) -> Vec<Result<()>> {
        let bytes: u64 = requests.iter().map(|r| r.dst.len() as u64).sum();
        // A remote reader waits on the network, not on cores: as many threads as it
        // keeps requests in flight, whatever the size.
        let remote = self.parallel_reads();
        let threads = match (threads, remote) {
            (0, Some(n)) => n,
            (0, None) => crate::codec::threads(),
            (n, _) => n,
        }
        .min(requests.len());
        if threads <= 1 || (bytes < PARALLEL_FROM && remote.is_none()) {
            return requests.iter_mut().map(|r| self.load_one(r)).collect();
        }
        // Largest first, so a big request doesn't start last and leave the other
        // threads idle at the end.
        let mut order: Vec<usize> = (0..requests.len()).collect();
        order.sort_unstable_by_key(|&i| std::cmp::Reverse(requests[i].dst.len()));
        let slots: Vec<Mutex<&mut LoadRequest<'_>>> = requests.iter_mut().map(Mutex::new).collect();
        let results: Vec<Mutex<Option<Result<()>>>> =
            (0..slots.len()).map(|_| Mutex::new(None)).collect();
        let next = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..threads {
                scope.spawn(|| {
                    while let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) {
                        let mut request = slots[i].lock().unwrap_or_else(|p| p.into_inner());
                        let r = self.load_one(&mut request);
                        *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                    }
                });
            }
        });
        results
            .into_iter()
            .map(|r| {
                r.into_inner()
                    .unwrap_or_else(|p| p.into_inner())
                    .expect("every request ran")
            })
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
