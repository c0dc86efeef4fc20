//! The staged loader: a list of requests (whole components, or tensor-parallel slices:
//! ranges of rows or of columns) loaded from any reader, through the decoding each needs
//! (zstd frames, dequantization, dtype conversion), into caller-owned memory, host or
//! device, pipelined.
//!
//! Reader tasks on the library's pool (`pool::map`) claim chunks of the requests in
//! order. A chunk for the device is read and converted into one of a bounded ring of
//! pinned staging buffers, its copy is issued asynchronously on the device's stream with
//! an event recorded after it, and the task moves on to the next chunk while the copy
//! flies; a buffer is reused only once its event says the copy is done (`core::Ring`).
//! A chunk for host memory is read straight into its destination. Each request's
//! completion is reported once, after its last byte landed (`core::Tally`); a progress
//! callback counts the bytes; `Loader::cancel` stops a load between chunks.
//!
//! What never happens, whatever fails: a staging buffer written while a copy may still
//! read it; a request reported done before all its bytes landed, or reported twice; a
//! load returning while a copy into a destination may still run; a pool thread waiting
//! for work that needs a pool thread (a task only ever waits for the device).

mod core;
pub mod cuda;
mod device;
mod fill;
mod plan;
mod run;
mod staging;
mod sync;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

use crate::dtype::DType;
use crate::error::{Result, bail};
use crate::reader::Reader;

pub use device::{Device, Event};

/// Which part of a component a request loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slice {
    /// All of it.
    Whole,
    /// Rows `[first, first + count)` of the first dimension (for a tensor of shape
    /// `[d0, d1, ...]`, each row is `d1 * ...` values): one contiguous range; with
    /// `[out, in]` weights, a column-parallel layer's shard (q/k/v, gate/up).
    Rows { first: u64, count: u64 },
    /// Columns `[first, first + count)` of the last dimension of every row (a strided
    /// read; with `[out, in]` weights, a row-parallel layer's shard: o, down); the
    /// destination holds them packed, a tensor of shape `[..., count]`.
    Columns { first: u64, count: u64 },
}

/// Where a request's bytes go.
#[derive(Debug)]
pub enum Destination<'d> {
    /// Host memory: filled in place, no staging.
    Host(&'d mut [u8]),
    /// Device memory of `len` bytes at `address` (a device pointer, or a handle the
    /// `Device` understands) from byte `offset` on.
    Device { address: u64, offset: u64, len: u64 },
}

/// One request of a load.
#[derive(Debug)]
pub struct Request<'d> {
    /// The object's index.
    pub object: usize,
    /// The component's index in the object.
    pub component: usize,
    /// The part of the component to load.
    pub slice: Slice,
    /// Convert each value into this dtype (as `Reader::read_as`: float conversions,
    /// integer widening, ggml blocks dequantized to f32, f16 or bf16).
    pub convert: Option<DType>,
    /// Check the component's digest (if it has one); see `LoaderOptions::verify`.
    pub verify: bool,
    /// Where the bytes go; exactly the size the request fills.
    pub dst: Destination<'d>,
}

/// What a load reports while it runs. Called from the load's tasks (pool threads and the
/// calling thread), possibly several at once, never under a lock of the loader's; a
/// callback may call any reader function and `Loader::cancel`, but not start another load
/// on the same loader.
pub trait LoadEvents: Sync {
    /// Request `request` ended: Ok once every byte landed (its destination may be read),
    /// or why it failed or was cancelled. `bytes` landed in its destination (all of them
    /// on success). Called exactly once per request; after a failure the loader writes
    /// nothing more to that destination.
    fn completed(&self, _request: usize, _result: &Result<()>, _bytes: u64) {}

    /// `done` of `total` destination bytes landed. Increasing; the last call of a load
    /// that completed every request has `done == total`.
    fn progress(&self, _done: u64, _total: u64) {}
}

/// No callbacks.
pub struct NoEvents;
impl LoadEvents for NoEvents {}

/// How a loader stages and reads.
#[derive(Clone, Debug, Default)]
pub struct LoaderOptions {
    /// Reader tasks at once (0: the pool's size, `pool::threads`). With a device, at most
    /// one fewer than the staging buffers, so a task never waits for another task's
    /// buffer, only for the device.
    pub readers: usize,
    /// Staging buffers (0: readers + 2, at least 3). Only with a device.
    pub staging_count: usize,
    /// Bytes of each staging buffer, and the most bytes of a chunk (0: 16 MiB; at least
    /// 64 KiB). Host destinations are read in chunks of this size too.
    pub staging_size: usize,
    /// Check every request's digest, as `LoadRequest::verify` does for one.
    pub verify: bool,
}

/// Default staging buffer size: large enough that a copy's fixed cost is small, small
/// enough that several fly while others fill.
pub const DEFAULT_STAGING_SIZE: usize = 16 << 20;
/// The smallest staging buffer (a ggml block dequantized to f32 is at most 1 KiB).
pub const MIN_STAGING_SIZE: usize = 64 << 10;

/// What a loader has done and holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoaderStats {
    /// Staging buffers, and the bytes of each (0 without a device).
    pub staging_count: usize,
    pub staging_size: usize,
    /// Whether the staging buffers are pinned (allocated or registered by the device).
    pub pinned: bool,
    /// The most staging buffers filling or in flight at once.
    pub peak_busy: usize,
    /// The most bytes of scratch memory one task held (source bytes of chunks that need
    /// converting or gathering): at most the staging size.
    pub peak_scratch: usize,
    /// Reader tasks of the last load.
    pub readers: usize,
    /// Copies issued (after merging adjacent ones), and direct reads done.
    pub copies: u64,
    pub direct_reads: u64,
    /// Loads run, and destination bytes landed.
    pub loads: u64,
    pub bytes: u64,
}

/// Loads requests into host or device memory (see the module's description). Holds the
/// staging buffers and their events for its lifetime, so loads after the first allocate
/// nothing but their bookkeeping. One load at a time; `cancel` from any thread.
pub struct Loader {
    device: Option<Arc<dyn Device>>,
    staging: staging::Staging,
    ring: core::Ring,
    options: LoaderOptions,
    /// Serializes calls into the device (but `event_wait` and `read_direct`).
    device_lock: Mutex<()>,
    cancel: AtomicBool,
    busy: AtomicBool,
    stats: Mutex<LoaderStats>,
}

impl std::fmt::Debug for Loader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Loader")
            .field("device", &self.device.is_some())
            .field("options", &self.options)
            .finish()
    }
}

impl Loader {
    /// A loader for host destinations only, or with `device` for device ones too: with a
    /// device, allocates its staging buffers (the device's pinned memory when it allocates,
    /// else memory of ours it registers, else pageable memory) and one event per buffer.
    pub fn new(device: Option<Arc<dyn Device>>, options: &LoaderOptions) -> Result<Loader> {
        Self::build(device, options, staging::Source::Allocate)
    }

    /// As `new`, staging in the caller's `buffers` (`options.staging_size` bytes each),
    /// registered with the device first when `register` (unregistered when the loader is
    /// dropped).
    ///
    /// # Safety
    /// Each buffer must be valid for reads and writes of `staging_size` bytes, not used by
    /// anything else, and outlive the loader.
    pub unsafe fn with_buffers(
        device: Arc<dyn Device>,
        options: &LoaderOptions,
        buffers: Vec<std::ptr::NonNull<u8>>,
        register: bool,
    ) -> Result<Loader> {
        Self::build(
            Some(device),
            options,
            staging::Source::Caller { buffers, register },
        )
    }

    fn build(
        device: Option<Arc<dyn Device>>,
        options: &LoaderOptions,
        source: staging::Source,
    ) -> Result<Loader> {
        let mut options = options.clone();
        if options.staging_size == 0 {
            options.staging_size = DEFAULT_STAGING_SIZE;
        }
        if options.staging_size < MIN_STAGING_SIZE {
            bail!(
                InvalidArgument,
                "staging buffers of {} bytes are smaller than the least, {MIN_STAGING_SIZE}",
                options.staging_size
            );
        }
        if options.readers == 0 {
            options.readers = crate::pool::threads();
        }
        if let staging::Source::Caller { buffers, .. } = &source {
            if options.staging_count != 0 && options.staging_count != buffers.len() {
                bail!(
                    InvalidArgument,
                    "{} staging buffers given but staging_count says {}",
                    buffers.len(),
                    options.staging_count
                );
            }
            options.staging_count = buffers.len();
        }
        if options.staging_count == 0 {
            options.staging_count = (options.readers + 2).max(3);
        }
        if device.is_some() && options.staging_count < 2 {
            bail!(
                InvalidArgument,
                "a device loader needs at least 2 staging buffers (one filling while one \
                 flies), not {}",
                options.staging_count
            );
        }
        let staging = match &device {
            Some(d) => staging::Staging::new(d, &options, source)?,
            None => staging::Staging::default(),
        };
        let count = staging.len();
        Ok(Loader {
            stats: Mutex::new(LoaderStats {
                staging_count: count,
                staging_size: if count > 0 { options.staging_size } else { 0 },
                pinned: staging.pinned(),
                ..LoaderStats::default()
            }),
            device,
            staging,
            ring: core::Ring::new(count),
            options,
            device_lock: Mutex::new(()),
            cancel: AtomicBool::new(false),
            busy: AtomicBool::new(false),
        })
    }

    /// Loads every request from `reader`, in parallel, reporting through `events`, and
    /// returns each request's result and the bytes that landed, in request order, once
    /// every request ended and nothing is in flight (every destination of an Ok request
    /// holds its bytes). A failed request doesn't stop the others; after `cancel`,
    /// requests not done end with `Canceled`. `State` for every request when another load
    /// is running on this loader; `InvalidArgument` for a device destination without a
    /// device.
    pub fn load(
        &self,
        reader: &Reader<'_>,
        requests: &mut [Request<'_>],
        events: &dyn LoadEvents,
    ) -> Vec<(Result<()>, u64)> {
        if self.busy.swap(true, Ordering::AcqRel) {
            let e = crate::error::err!(
                State,
                "another load is running on this loader (one load at a time)"
            );
            return requests.iter().map(|_| (Err(e.clone()), 0)).collect();
        }
        let results = run::Run::new(self, reader, requests, events).execute();
        // A cancel that came during this load was for it; later ones are for the next.
        self.cancel.store(false, Ordering::Release);
        self.busy.store(false, Ordering::Release);
        results
    }

    /// Stops the running load, or the next one if none runs: no new chunk starts, chunks
    /// in flight finish, and requests not done end with `Canceled`. Thread-safe; may be
    /// called from a callback.
    pub fn cancel(&self) {
        self.cancel.store(true, Ordering::Release);
    }

    /// What the loader holds and has done.
    pub fn stats(&self) -> LoaderStats {
        let mut s = *self.stats.lock().unwrap_or_else(|p| p.into_inner());
        s.peak_busy = self.ring.peak_busy();
        s
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        if let Some(d) = &self.device {
            self.staging.release(d.as_ref(), &self.ring);
        }
    }
}
