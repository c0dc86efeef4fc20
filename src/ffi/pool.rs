//! C ABI: the size of the library's one thread pool (`crate::pool`).

use super::{guard, zt_status};

/// Sets the number of threads of the library's thread pool: `threads`, or 0 for one per
/// core (the default). Every parallel piece of work runs on this one pool (batch loads,
/// zstd compression and decoding, digest checks, dequantization, the shards of a set
/// parsed at open), and work nested inside it (a batch request decoding its frames in
/// parallel) runs on the same threads, so the library never runs more threads than this
/// (plus the threads calling it, which work too; a remote object's requests wait on
/// threads of their own, as many as its requests in flight). Takes effect at once: a
/// pool already running is replaced, its threads ending once the work they have is done.
/// Optional: without it the pool starts, one thread per core, on first use.
///
/// @return `ZT_OK`; `ZT_ERR_INVALID_ARGUMENT` for more than 1024 threads; `ZT_ERR_IO`
/// when the threads can't be started (the pool in use then stays). Thread-safe.
#[unsafe(no_mangle)]
pub extern "C" fn zt_pool_set_threads(threads: usize) -> zt_status {
    guard(|| crate::pool::set_threads(threads))
}

/// The number of threads of the library's thread pool: what `zt_pool_set_threads` set,
/// else one per core (the CPUs this process may run on). Starts nothing. Thread-safe.
#[unsafe(no_mangle)]
pub extern "C" fn zt_pool_thread_count() -> usize {
    super::guard_value(0, crate::pool::threads)
}
