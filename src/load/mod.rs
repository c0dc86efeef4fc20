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

mod budget;
mod core;
pub mod cuda;
mod device;
mod fill;
mod io;
mod plan;
mod run;
mod staging;
mod sync;

use std::cell::RefCell;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use crate::dtype::DType;
use crate::error::{Result, bail, err};
use crate::reader::Reader;

pub use device::{Device, Event};
pub use plan::dst_size;
pub(crate) use run::Spare;

/// Which part of a component a request loads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Slice {
    /// All of it.
    Whole,
    /// Rows `[first, first + count)` of the first dimension (for a tensor of shape
    /// `[d0, d1, ...]`, each row is `d1 * ...` values): one contiguous range; with
    /// `[out, in]` weights, a column-parallel layer's shard (q/k/v, gate/up).
    Rows {
        /// The first row loaded.
        first: u64,
        /// How many rows are loaded.
        count: u64,
    },
    /// Columns `[first, first + count)` of the last dimension of every row (a strided
    /// read; with `[out, in]` weights, a row-parallel layer's shard: o, down); the
    /// destination holds them packed, a tensor of shape `[..., count]`.
    Columns {
        /// The first column loaded.
        first: u64,
        /// How many columns of each row are loaded.
        count: u64,
    },
    /// A range of the component in storage order, `[first, first + count)`: decoded bytes
    /// without a conversion (as `Reader::read_range`), values with one (as
    /// `Reader::read_as_range`; ggml blocks: whole blocks).
    Range {
        /// The first byte (raw) or value (converted) loaded.
        first: u64,
        /// How many bytes or values are loaded.
        count: u64,
    },
}

/// Where a request's bytes go.
#[derive(Debug)]
pub enum Destination<'d> {
    /// Host memory: filled in place, no staging.
    Host(&'d mut [u8]),
    /// Device memory of `len` bytes at `address` (a device pointer, or a handle the
    /// `Device` understands) from byte `offset` on.
    Device {
        /// The device pointer or handle.
        address: u64,
        /// Where in that memory the bytes begin.
        offset: u64,
        /// The bytes available from `offset` on.
        len: u64,
    },
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

impl<'d> Request<'d> {
    /// Component `component` of object `object`, whole, into host memory `dst` (exactly
    /// its decoded size), unconverted, unchecked.
    pub fn host(object: usize, component: usize, dst: &'d mut [u8]) -> Request<'d> {
        Request {
            object,
            component,
            slice: Slice::Whole,
            convert: None,
            verify: false,
            dst: Destination::Host(dst),
        }
    }

    /// As `host`, into `len` bytes of device memory at `address` from byte `offset` on.
    pub fn device(
        object: usize,
        component: usize,
        address: u64,
        offset: u64,
        len: u64,
    ) -> Request<'d> {
        Request {
            object,
            component,
            slice: Slice::Whole,
            convert: None,
            verify: false,
            dst: Destination::Device {
                address,
                offset,
                len,
            },
        }
    }

    /// This part of the component instead of all of it.
    pub fn slice(mut self, slice: Slice) -> Request<'d> {
        self.slice = slice;
        self
    }

    /// Every value converted into `dtype`.
    pub fn convert(mut self, dtype: DType) -> Request<'d> {
        self.convert = Some(dtype);
        self
    }

    /// The component's digest checked.
    pub fn verified(mut self) -> Request<'d> {
        self.verify = true;
        self
    }

    /// The destination's size in bytes.
    pub fn dst_len(&self) -> u64 {
        match &self.dst {
            Destination::Host(b) => b.len() as u64,
            Destination::Device { len, .. } => *len,
        }
    }
}

/// How a load reads raw bytes from a local file (see `LoaderOptions::io`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ReadMode {
    /// Chosen per file: through the page cache when the file is mostly in it (or under
    /// 64 MiB); `O_DIRECT` when it is cold, which leaves it out of the cache (the next
    /// load of it is cold again: `Pread` keeps it).
    #[default]
    Auto,
    /// Copied from the reader's mapping (`pread` where the reader has none).
    Mmap,
    /// `pread` through the page cache, even from a mapped file.
    Pread,
    /// `O_DIRECT` reads into aligned buffers, around the page cache (`pread` where the
    /// filesystem refuses `O_DIRECT`).
    Direct,
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
    /// Reader tasks at once (0: the pool's size, `pool::threads`); on threads of their own
    /// and at least 16 when the load's reads wait on storage (a cold file, `O_DIRECT`; a
    /// remote object's: its concurrency). With a device, at most one fewer than the
    /// staging buffers, so a task never waits for another task's buffer, only for the
    /// device.
    pub readers: usize,
    /// Staging buffers (0: readers + 2, at least 3). Only with a device.
    pub staging_count: usize,
    /// Bytes of each staging buffer, and the most bytes of a chunk (0: 16 MiB; at least
    /// 64 KiB). Host destinations are read in chunks of this size too.
    pub staging_size: usize,
    /// Check every request's digest, as `Request::verify` does for one.
    pub verify: bool,
    /// The most bytes a load holds besides its destinations (0: `DEFAULT_BUDGET` plus the
    /// staging buffers): the staging buffers, the tasks' scratch, the aligned buffers of
    /// direct reads and components that can only be decoded whole. A task that needs more
    /// waits for others to give memory back; a need larger than the whole budget fails its
    /// request with `Limit`. When it is set and the staging size isn't, the staging size is
    /// chosen to fit (at most `DEFAULT_STAGING_SIZE`); sizes given that don't fit are
    /// refused (`InvalidArgument`).
    pub max_bytes_in_flight: u64,
    /// How raw bytes are read from local files.
    pub io: ReadMode,
    /// Refuse a second load while one runs (`State`) instead of queuing it.
    pub no_queue: bool,
}

/// Default staging buffer size: large enough that a copy's fixed cost is small, small
/// enough that several fly while others fill.
pub const DEFAULT_STAGING_SIZE: usize = 16 << 20;
/// The smallest staging buffer (a ggml block dequantized to f32 is at most 1 KiB).
pub const MIN_STAGING_SIZE: usize = 64 << 10;

/// Slack a reader's scratch needs beyond its data: O_DIRECT alignment at both ends.
const DIRECT_PAD: usize = 2 * io::DIRECT_ALIGN as usize;
/// The default of `max_bytes_in_flight`, besides the staging buffers: 1 GiB.
pub const DEFAULT_BUDGET: u64 = 1 << 30;
/// Progress is reported at least this many times a load (chunks are cut small enough),
/// so that a small model still moves a progress bar.
pub const PROGRESS_STEPS: u64 = 64;

/// What a loader has done and holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LoaderStats {
    /// Staging buffers (0 without a device).
    pub staging_count: usize,
    /// The bytes of each staging buffer (0 without a device).
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
    /// Copies issued (after merging adjacent ones).
    pub copies: u64,
    /// Direct reads done (into the destination, without staging).
    pub direct_reads: u64,
    /// Loads run.
    pub loads: u64,
    /// Destination bytes landed, over every load.
    pub bytes: u64,
    /// The budget (`max_bytes_in_flight`, the default resolved).
    pub max_bytes_in_flight: u64,
    /// The most bytes held at once besides destinations (staging, scratch, direct reads'
    /// buffers, components decoded whole), over every load: at most the budget.
    pub peak_bytes_in_flight: u64,
    /// File reads (or range requests) issued for raw bytes, neighbours merged into one.
    pub reads: u64,
    /// How many of `reads` were `O_DIRECT` reads.
    pub direct_io_reads: u64,
}

/// Loads requests into host or device memory (see the module's description). Holds the
/// staging buffers and their events for its lifetime, so loads after the first allocate
/// nothing but their bookkeeping. One load at a time: a second one, from another thread,
/// waits for its turn (or is refused, `LoaderOptions::no_queue`); `cancel` from any thread.
pub struct Loader {
    device: Option<Arc<dyn Device>>,
    staging: staging::Staging,
    ring: core::Ring,
    options: LoaderOptions,
    budget: budget::Budget,
    /// Serializes calls into the device (but `event_wait` and `read_direct`).
    device_lock: Mutex<()>,
    cancel: AtomicBool,
    /// Whose turn it is: loads take tickets and run in the order they took them.
    turn: Mutex<Turn>,
    turn_changed: Condvar,
    /// Names the loader on the threads that run its loads (see `INSIDE`).
    id: u64,
    /// The last load's bookkeeping, for the next (see `run::Spare`).
    spare: Mutex<run::Spare>,
    stats: Mutex<LoaderStats>,
}

#[derive(Default)]
struct Turn {
    /// The next ticket to hand out, and the ticket whose load may run.
    next: u64,
    serving: u64,
}

thread_local! {
    /// Loaders whose load this thread is running (its calling thread, its tasks, and so
    /// the callbacks they call): a load or a free of one of these from here would wait
    /// for itself.
    static INSIDE: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// Marks this thread as running a load of loader `id` until dropped.
pub(crate) struct Inside(u64);

impl Inside {
    pub(crate) fn enter(id: u64) -> Inside {
        INSIDE.with(|v| v.borrow_mut().push(id));
        Inside(id)
    }
}

impl Drop for Inside {
    fn drop(&mut self) {
        INSIDE.with(|v| {
            let mut v = v.borrow_mut();
            if let Some(at) = v.iter().rposition(|&i| i == self.0) {
                v.remove(at);
            }
        });
    }
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

    /// The caller's options with every zero filled in (readers, staging count and size)
    /// and checked: the staging buffers a device needs, no smaller than the least.
    fn sized_options(
        options: &LoaderOptions,
        has_device: bool,
        source: &staging::Source,
    ) -> Result<LoaderOptions> {
        let mut options = options.clone();
        if options.readers == 0 {
            options.readers = crate::pool::threads();
        }
        if let staging::Source::Caller { buffers, .. } = source {
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
        let count = if has_device { options.staging_count } else { 0 };
        if options.staging_size == 0 {
            options.staging_size = match options.max_bytes_in_flight {
                0 => DEFAULT_STAGING_SIZE,
                // Every buffer and every task's scratch within the budget.
                budget => {
                    let per = budget.saturating_sub((options.readers * DIRECT_PAD) as u64)
                        / (count + options.readers) as u64;
                    let per = usize::try_from(per).unwrap_or(usize::MAX);
                    (per / MIN_STAGING_SIZE * MIN_STAGING_SIZE)
                        .clamp(MIN_STAGING_SIZE, DEFAULT_STAGING_SIZE)
                }
            };
        }
        if options.staging_size < MIN_STAGING_SIZE {
            bail!(
                InvalidArgument,
                "staging buffers of {} bytes are smaller than the least, {MIN_STAGING_SIZE}",
                options.staging_size
            );
        }
        if has_device && options.staging_count < 2 {
            bail!(
                InvalidArgument,
                "a device loader needs at least 2 staging buffers (one filling while one \
                 flies), not {}",
                options.staging_count
            );
        }
        Ok(options)
    }

    /// The bytes `count` staging buffers hold for good and the budget of bytes in flight
    /// (the caller's, or those buffers plus the default); refused when it can't hold the
    /// buffers and one reader's scratch.
    fn budget_limit(options: &LoaderOptions, count: usize) -> Result<(u64, u64)> {
        let fixed = (count as u64)
            .checked_mul(options.staging_size as u64)
            .ok_or_else(|| err!(InvalidArgument, "the staging buffers' size overflows"))?;
        let limit = match options.max_bytes_in_flight {
            0 => fixed.saturating_add(DEFAULT_BUDGET),
            n => n,
        };
        // At least the staging buffers and one task's scratch.
        let least = fixed.saturating_add((options.staging_size + DIRECT_PAD) as u64);
        if limit < least {
            bail!(
                InvalidArgument,
                "max_bytes_in_flight of {limit} bytes can't hold {count} staging buffers of \
                 {} bytes and one reader's scratch ({least} bytes in all)",
                options.staging_size
            );
        }
        Ok((fixed, limit))
    }

    fn build(
        device: Option<Arc<dyn Device>>,
        options: &LoaderOptions,
        source: staging::Source,
    ) -> Result<Loader> {
        let options = Self::sized_options(options, device.is_some(), &source)?;
        // Staging buffers exist only with a device.
        let count = if device.is_some() {
            options.staging_count
        } else {
            0
        };
        let (fixed, limit) = Self::budget_limit(&options, count)?;
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
                max_bytes_in_flight: limit,
                ..LoaderStats::default()
            }),
            device,
            staging,
            ring: core::Ring::new(count),
            budget: budget::Budget::new(limit, fixed),
            options,
            device_lock: Mutex::new(()),
            cancel: AtomicBool::new(false),
            turn: Mutex::new(Turn::default()),
            turn_changed: Condvar::new(),
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            spare: Mutex::new(run::Spare::default()),
        })
    }

    /// Loads every request from `reader`, in parallel, reporting through `events`, and
    /// returns each request's result and the bytes that landed, in request order, once
    /// every request ended and nothing is in flight (every destination of an Ok request
    /// holds its bytes). A failed request doesn't stop the others; after `cancel`,
    /// requests not done end with `Canceled`. While another load runs on this loader, waits
    /// for it to end (loads run one after the other, in the order they were called), or
    /// with `no_queue` fails every request with `State`; a load started from inside a load
    /// of this loader (a callback) is `State`. `InvalidArgument` for a device destination
    /// without a device.
    pub fn load(
        &self,
        reader: &Reader<'_>,
        requests: &mut [Request<'_>],
        events: &dyn LoadEvents,
    ) -> Vec<(Result<()>, u64)> {
        // Refused: every request ends at once, reported as any other end.
        let refuse = |e: crate::error::Error| {
            (0..requests.len())
                .map(|i| {
                    let r = Err(e.clone());
                    events.completed(i, &r, 0);
                    (r, 0)
                })
                .collect()
        };
        if self.inside_on_this_thread() {
            return refuse(err!(
                State,
                "a load on this loader from inside one of its loads (a callback) would wait \
                 for itself"
            ));
        }
        let Some(_turn) = self.wait_turn() else {
            return refuse(err!(
                State,
                "another load is running on this loader (one load at a time; this loader \
                 doesn't queue)"
            ));
        };
        let _inside = Inside::enter(self.id);
        let spare = std::mem::take(&mut *self.spare.lock().unwrap_or_else(|p| p.into_inner()));
        let (results, spare) = run::Run::new(self, reader, requests, events, spare).execute();
        *self.spare.lock().unwrap_or_else(|p| p.into_inner()) = spare;
        // A cancel that came during this load was for it; later ones are for the next.
        self.cancel.store(false, Ordering::Release);
        results
    }

    /// Waits for this load's turn (None at once with `no_queue` when a load runs); the
    /// next load's turn comes when the value returned is dropped.
    fn wait_turn(&self) -> Option<TurnGuard<'_>> {
        let mut t = self.turn.lock().unwrap_or_else(|p| p.into_inner());
        if self.options.no_queue && t.next != t.serving {
            return None;
        }
        let ticket = t.next;
        t.next += 1;
        while t.serving != ticket {
            t = self.turn_changed.wait(t).unwrap_or_else(|p| p.into_inner());
        }
        Some(TurnGuard(self))
    }

    /// True when this thread runs a load of this loader (its callbacks do).
    pub(crate) fn inside_on_this_thread(&self) -> bool {
        INSIDE.with(|v| v.borrow().contains(&self.id))
    }

    /// Puts `spare` in place of the loader's kept bookkeeping, and returns that.
    pub(crate) fn swap_spare(&self, spare: run::Spare) -> run::Spare {
        std::mem::replace(
            &mut *self.spare.lock().unwrap_or_else(|p| p.into_inner()),
            spare,
        )
    }

    /// The mark this loader's load sets on the threads that run it.
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    /// Waits until no load runs or waits on this loader.
    pub fn wait_idle(&self) {
        let mut t = self.turn.lock().unwrap_or_else(|p| p.into_inner());
        while t.serving != t.next {
            t = self.turn_changed.wait(t).unwrap_or_else(|p| p.into_inner());
        }
    }

    /// Stops the running load, or the next one if none runs: no new chunk starts, chunks
    /// in flight finish, and requests not done end with `Canceled`. Loads waiting for
    /// their turn are not cancelled. Thread-safe; may be called from a callback.
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

/// A load's turn: the next one's comes when it is dropped.
struct TurnGuard<'l>(&'l Loader);

impl Drop for TurnGuard<'_> {
    fn drop(&mut self) {
        let mut t = self.0.turn.lock().unwrap_or_else(|p| p.into_inner());
        t.serving += 1;
        drop(t);
        self.0.turn_changed.notify_all();
    }
}

impl Drop for Loader {
    fn drop(&mut self) {
        if let Some(d) = &self.device {
            self.staging.release(d.as_ref());
        }
    }
}
