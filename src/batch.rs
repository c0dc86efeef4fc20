//! Loading many components in one call: a load of host requests (`load::Request`, the
//! loader's one request type) by a loader made for the call, without a device: the same
//! engine as `Loader::load`, run on the library's pool (a remote object's requests on the
//! I/O helper's threads), each request with its own result. What a runtime loading a whole
//! model calls once instead of once per tensor.

use std::sync::Mutex;

use crate::error::Result;
use crate::load::{Loader, LoaderOptions, NoEvents, Request, Spare};
use crate::reader::Reader;

/// The bookkeeping of the last batch load, for the next one (see `load::Spare`: a batch
/// of many small requests would otherwise fault in megabytes of fresh memory each time).
/// Batch loads running at once each take it or start without.
static SPARE: Mutex<Option<Spare>> = Mutex::new(None);

/// Total bytes below which a batch runs on the calling thread: threads would cost more
/// than they save.
const PARALLEL_FROM: u64 = 1 << 20;

impl Reader<'_> {
    /// Carries out every request (host destinations; see `load::Request`), in parallel on
    /// at most `threads` of the pool's threads (this one included; 0: the pool's size,
    /// `pool::threads`; a request that decodes or dequantizes in parallel uses the same
    /// threads, never more; for a remote object, as many threads of the I/O helper as its
    /// requests in flight, `RemoteOptions::max_concurrency`), in chunks claimed in request
    /// order, neighbours read together, and returns each request's result in request
    /// order. The memory it holds besides the destinations is bounded as a loader's with
    /// the default `LoaderOptions::max_bytes_in_flight` (use a `Loader` to set it). A
    /// failed request leaves its buffer in an unspecified state and doesn't stop the
    /// others. A device destination fails its request (`InvalidArgument`). Blocks until
    /// all are done.
    pub fn load_batch(&self, requests: &mut [Request<'_>], threads: usize) -> Vec<Result<()>> {
        let bytes: u64 = requests.iter().map(Request::dst_len).sum();
        let readers = match self.parallel_reads() {
            None if bytes < PARALLEL_FROM => 1,
            _ => threads,
        };
        let options = LoaderOptions {
            readers,
            ..LoaderOptions::default()
        };
        let loader = match Loader::new(None, &options) {
            Ok(l) => l,
            Err(e) => return requests.iter().map(|_| Err(e.clone())).collect(),
        };
        let kept = SPARE.lock().unwrap_or_else(|p| p.into_inner()).take();
        loader.swap_spare(kept.unwrap_or_default());
        let results = loader.load(self, requests, &NoEvents);
        let spare = loader.swap_spare(Spare::default());
        *SPARE.lock().unwrap_or_else(|p| p.into_inner()) = Some(spare);
        results.into_iter().map(|(r, _)| r).collect()
    }
}
