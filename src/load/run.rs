//! One load: the requests resolved and cut into chunks, the tasks that claim and run them,
//! the drain of what is still in flight at the end, and every request's end reported once.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::error::{Error, Result, err};
use crate::reader::Reader;

use super::core::{Landing, Queue, Taken, Tally};
use super::device::Device;
use super::io::{Io, Scratch};
use super::plan::{self, Dst, Job};
use super::{LoadEvents, Loader, Request};

mod chunks;

/// Destination units `[u0, u1)` of request `request`: one chunk, or for a request run in
/// order, the whole request.
struct Item {
    request: usize,
    u0: u64,
    u1: u64,
}

/// Staging offsets of chunks that don't continue the previous one's destination.
const ALIGN: u64 = 256;

/// The bookkeeping vectors of a load, emptied, kept between loads for their capacity: a
/// load of many small requests then doesn't map, fault in and unmap megabytes of fresh
/// memory every time (a third of the time of a batch of 50,000 small tensors went there).
/// At most `SPARE_MAX` bytes are kept.
#[derive(Default)]
pub(crate) struct Spare {
    jobs: Vec<Option<Job<'static>>>,
    tallies: Vec<Tally<Error>>,
    chunks: Vec<usize>,
    items: Vec<Item>,
}

/// The most bytes of bookkeeping a loader keeps between loads (a load of about 120,000
/// requests).
const SPARE_MAX: usize = 32 << 20;

impl Spare {
    fn keep(
        mut jobs: Vec<Option<Job<'_>>>,
        mut tallies: Vec<Tally<Error>>,
        mut chunks: Vec<usize>,
        mut items: Vec<Item>,
    ) -> Spare {
        jobs.clear();
        tallies.clear();
        chunks.clear();
        items.clear();
        let bytes = jobs.capacity() * std::mem::size_of::<Option<Job<'_>>>()
            + tallies.capacity() * std::mem::size_of::<Tally<Error>>()
            + chunks.capacity() * std::mem::size_of::<usize>()
            + items.capacity() * std::mem::size_of::<Item>();
        if bytes > SPARE_MAX {
            return Spare::default();
        }
        // The jobs' vector is empty: no job of the load outlives it, only its allocation,
        // which is the same for jobs of any lifetime.
        let mut jobs = std::mem::ManuallyDrop::new(jobs);
        let (ptr, capacity) = (jobs.as_mut_ptr(), jobs.capacity());
        // SAFETY: `ptr` and `capacity` are those of a vector of `Option<Job<'_>>`, which
        // has the layout of `Option<Job<'static>>` (lifetimes don't change layouts), with
        // no element; the vector is not used or dropped again (ManuallyDrop).
        let jobs = unsafe { Vec::from_raw_parts(ptr.cast::<Option<Job<'static>>>(), 0, capacity) };
        Spare {
            jobs,
            tallies,
            chunks,
            items,
        }
    }
}

/// The end of a request a cancelled load never finished.
fn canceled() -> Error {
    err!(
        Canceled,
        "the load was cancelled before the request was done"
    )
}

/// Reads in flight from a file that waits on storage (cold, or read with `O_DIRECT`): a
/// depth at which NVMe and virtual disks alike give their speed, with each task's copy
/// out of its 1 MiB buffer hidden behind the others' reads. Measured with the benchmark's
/// `cold` section, back to back on the 2-core machine: 16 tasks 0.92x-1.11x of the best
/// raw read, 8 tasks 0.82x-0.91x.
const STORAGE_READS: usize = 16;

/// The smallest chunk of a remote object's raw bytes: a request's worth.
const REMOTE_CHUNK: u64 = 8 << 20;

/// A copy out of a staging buffer: `len` bytes from `src` in the buffer to `address` at
/// `offset`, carrying the landings `landings` (indices into the flight's list).
struct CopyOut {
    address: u64,
    offset: u64,
    src: u64,
    len: u64,
    landings: std::ops::Range<usize>,
}

/// What one staging buffer sends: its copies (adjacent chunks merged) and what lands.
#[derive(Default)]
struct Flight {
    copies: Vec<CopyOut>,
    landings: Vec<Landing>,
}

pub(crate) struct Run<'l, 'r, 'a> {
    loader: &'l Loader,
    reader: &'r Reader<'a>,
    events: &'l dyn LoadEvents,
    jobs: Vec<Option<Job<'r>>>,
    tallies: Vec<Tally<Error>>,
    chunks: Vec<usize>,
    items: Vec<Item>,
    queue: Queue<'l>,
    io: Io<'r>,
    /// The chunk size of raw bytes (cut for progress), and of everything else.
    limit: u64,
    staging: u64,
    total: u64,
    done: AtomicU64,
    reported: Mutex<u64>,
    copies: AtomicU64,
    direct_reads: AtomicU64,
    peak_scratch: AtomicUsize,
}

impl<'l, 'r, 'a> Run<'l, 'r, 'a> {
    /// Resolves every request (a request that can't be resolved fails alone) and cuts
    /// them into chunks: of at most a staging buffer, and small enough that a load reports
    /// its progress at least `PROGRESS_STEPS` times.
    pub(crate) fn new(
        loader: &'l Loader,
        reader: &'r Reader<'a>,
        requests: &mut [Request<'_>],
        events: &'l dyn LoadEvents,
        spare: Spare,
    ) -> Self {
        let Spare {
            jobs,
            mut tallies,
            mut chunks,
            mut items,
        } = spare;
        // An empty vector of jobs of any lifetime is one of jobs of this load's.
        let mut jobs: Vec<Option<Job<'r>>> = jobs;
        jobs.reserve(requests.len());
        tallies.reserve(requests.len());
        chunks.reserve(requests.len());
        let (failed, total) = resolve_jobs(loader, reader, requests, &mut jobs);
        // Raw bytes are cut for progress; anything decoded in chunks (zstd frames, a
        // stream) keeps whole staging buffers, so a frame is decoded about once; a remote
        // object's reads keep requests of a useful size.
        let staging = loader.options.staging_size as u64;
        let least = match reader.parallel_reads() {
            Some(_) => REMOTE_CHUNK,
            None => super::MIN_STAGING_SIZE as u64,
        };
        let limit = staging.min((total / super::PROGRESS_STEPS).max(least));
        cut_items(
            &jobs,
            failed,
            limit,
            staging,
            &mut tallies,
            &mut chunks,
            &mut items,
        );
        Run {
            loader,
            reader,
            events,
            queue: Queue::new(items.len(), &loader.cancel),
            jobs,
            tallies,
            chunks,
            items,
            io: Io::new(reader, loader.options.io),
            limit,
            staging,
            total,
            done: AtomicU64::new(0),
            reported: Mutex::new(0),
            copies: AtomicU64::new(0),
            direct_reads: AtomicU64::new(0),
            peak_scratch: AtomicUsize::new(0),
        }
    }

    /// Runs the load to its end and returns every request's result, and the bookkeeping
    /// emptied (its capacity, for the next load).
    pub(crate) fn execute(self) -> (Vec<(Result<()>, u64)>, Spare) {
        // Requests that failed to resolve, and empty ones, end at once.
        for (i, job) in self.jobs.iter().enumerate() {
            if job.as_ref().is_none_or(|j| j.units == 0) {
                self.finish(i);
            }
        }
        let device_work = self
            .items
            .iter()
            .any(|it| matches!(self.job(it.request).dst, Dst::Device { .. }));
        let mut tasks = self.loader.options.readers.max(1);
        if device_work {
            // One buffer more than tasks: a task never waits for another's buffer.
            tasks = tasks
                .min(self.loader.ring.usable().saturating_sub(1))
                .max(1);
        }
        // Reads that wait on storage (a cold local file, O_DIRECT) reach its speed only
        // with several in flight, more than the pool has threads: like a remote object's,
        // they run on the I/O helper's threads.
        let waiting = self.reader.parallel_reads().or_else(|| {
            let waits = self.jobs.iter().flatten().any(|j| {
                j.raw.is_some_and(|(file, _, source)| {
                    self.io
                        .way(file, source)
                        .is_some_and(|w| w.waits_on_storage())
                })
            });
            waits.then_some(STORAGE_READS)
        });
        if let Some(n) = waiting {
            tasks = tasks.max(n.min(self.loader.options.readers.max(n)));
            if device_work {
                tasks = tasks
                    .min(self.loader.ring.usable().saturating_sub(1))
                    .max(1);
            }
        }
        tasks = tasks.min(self.items.len()).max(1);
        if !self.items.is_empty() {
            let work = |_: usize| self.task();
            match waiting {
                // Reads that wait on the network or on storage: the I/O helper's threads.
                Some(_) => {
                    crate::pool::io_map((0..tasks).collect(), tasks, work);
                }
                None => {
                    crate::pool::map((0..tasks).collect(), tasks, work);
                }
            }
        }
        self.drain();
        debug_assert!(
            self.loader.ring.all_free(),
            "a buffer held or in flight after the drain"
        );
        for i in 0..self.tallies.len() {
            self.finish(i);
        }
        self.report(true);
        self.record_stats(tasks);
        // Every request finished (above): each one's end, as reported to `completed`.
        let results = self.tallies.iter().map(|t| t.outcome(canceled)).collect();
        (
            results,
            Spare::keep(self.jobs, self.tallies, self.chunks, self.items),
        )
    }

    /// The chunk size of `job`: raw bytes cut for progress, anything decoded in whole
    /// staging buffers.
    pub(super) fn limit_of(&self, job: &Job<'_>) -> u64 {
        match job.raw {
            Some(_) => self.limit,
            None => self.staging,
        }
    }

    fn job(&self, request: usize) -> &Job<'r> {
        self.jobs[request]
            .as_ref()
            .expect("items are of resolved requests")
    }

    fn device(&self) -> &'l dyn Device {
        self.loader
            .device
            .as_deref()
            .expect("device work has a device")
    }

    /// One task: claims runs of chunks until none is left (or the load is cancelled).
    fn task(&self) {
        // Callbacks this thread calls are inside the load (see `Loader::load`).
        let _inside = super::Inside::enter(self.loader.id());
        let mut scratch = Scratch::new(&self.loader.budget);
        loop {
            let mut at = 0u64;
            let range = self
                .queue
                .claim(|first, next| self.packs(first, next, &mut at));
            if range.is_empty() {
                break;
            }
            let first = &self.items[range.start];
            let job = self.job(first.request);
            if job.sequential || job.into_place {
                self.sequential(first.request, &mut scratch);
            } else if matches!(job.dst, Dst::Host(_)) {
                self.host_run(range, &mut scratch);
            } else if self.direct(job) {
                self.direct_chunk(first, &mut scratch);
            } else {
                self.device_run(range, &mut scratch);
            }
        }
        self.peak_scratch
            .fetch_max(scratch.peak(), Ordering::Relaxed);
    }

    /// Whether the device reads this job's bytes itself.
    fn direct(&self, job: &Job<'_>) -> bool {
        job.direct
            && self
                .loader
                .device
                .as_ref()
                .is_some_and(|d| d.has_direct_read())
    }

    /// Whether item `next` joins the run that starts at item `first` (whose placement so
    /// far ends at `at`, 0 before the first): both chunks of the same kind, neither run in
    /// order nor read directly, and all of it within one staging buffer's size.
    fn packs(&self, first: usize, next: usize, at: &mut u64) -> bool {
        let (a, b) = (&self.items[first], &self.items[next]);
        let (ja, jb) = (self.job(a.request), self.job(b.request));
        if *at == 0 {
            *at = ja.out_bytes(a.u0, a.u1);
        }
        let plain = |j: &Job<'_>| !j.sequential && !j.into_place && !self.direct(j);
        if !plain(ja) || !plain(jb) {
            return false;
        }
        let len = jb.out_bytes(b.u0, b.u1);
        match (ja.dst, jb.dst) {
            (Dst::Host(_), Dst::Host(_)) => {
                if *at + len > self.limit {
                    return false;
                }
                *at += len;
                true
            }
            (Dst::Device { .. }, Dst::Device { .. }) => {
                let start = self.place(&self.items[next - 1], *at, b);
                if start + len > self.limit.max(self.limit_of(ja)) {
                    return false;
                }
                *at = start + len;
                true
            }
            _ => false,
        }
    }

    /// Where in a staging buffer chunk `item` goes when the previous chunk ends at `at`:
    /// right after it when their destinations are adjacent (one copy for both), else at
    /// the next multiple of `ALIGN`.
    fn place(&self, prev: &Item, at: u64, item: &Item) -> u64 {
        if self.adjacent(self.dst_range(prev), self.dst_range(item)) {
            at
        } else {
            at.next_multiple_of(ALIGN)
        }
    }

    /// A device chunk's destination: (address, offset, end offset).
    fn dst_range(&self, item: &Item) -> (u64, u64, u64) {
        let job = self.job(item.request);
        match job.dst {
            Dst::Device { address, offset } => (
                address,
                offset + job.out_bytes(0, item.u0),
                offset + job.out_bytes(0, item.u1),
            ),
            Dst::Host(_) => (0, 0, 0),
        }
    }

    /// Whether destination `b` starts where `a` ends.
    fn adjacent(&self, a: (u64, u64, u64), b: (u64, u64, u64)) -> bool {
        let linear = self
            .loader
            .device
            .as_ref()
            .is_some_and(|d| d.linear_addresses());
        if linear {
            a.0.wrapping_add(a.2) == b.0.wrapping_add(b.1)
        } else {
            a.0 == b.0 && a.2 == b.1
        }
    }

    // --- ends of chunks and requests ------------------------------------------------------

    fn finish(&self, request: usize) {
        if let Some((result, bytes)) = self.tallies[request].finish(canceled) {
            self.events.completed(request, &result, bytes);
        }
    }

    fn land(&self, l: Landing) {
        self.count_landed(self.settle_landing(l));
    }

    /// A chunk landed: its request's tally (finished when it was the last chunk), without
    /// counting the bytes for progress yet (`count_landed`); returns them.
    fn settle_landing(&self, l: Landing) -> u64 {
        if self.tallies[l.request].land(l.bytes) {
            self.finish(l.request);
        }
        l.bytes
    }

    /// Counts landed bytes for progress (before the bytes' requests are reported done or
    /// after: progress and completion are separate reports).
    fn count_landed(&self, bytes: u64) {
        if bytes > 0 {
            self.done.fetch_add(bytes, Ordering::AcqRel);
        }
    }

    fn fail(&self, request: usize, e: Error) {
        if self.tallies[request].fail(e) {
            self.finish(request);
        }
    }

    fn skip(&self, request: usize) {
        if self.tallies[request].skip() {
            self.finish(request);
        }
    }

    /// Reports progress: always at the end (`last`), else unless another thread is
    /// reporting, which then reports this thread's bytes too (it looks again after its
    /// callback returned): the callback runs under the lock, so counts arrive in order,
    /// and no landing goes unreported for longer than one callback.
    fn report(&self, last: bool) {
        loop {
            let guard = match last {
                true => Some(self.reported.lock().unwrap_or_else(|p| p.into_inner())),
                false => self.reported.try_lock().ok(),
            };
            let Some(mut reported) = guard else { return };
            let done = self.done.load(Ordering::Acquire);
            if done <= *reported {
                return;
            }
            *reported = done;
            self.events.progress(done, self.total);
            drop(reported);
            if self.done.load(Ordering::Acquire) == done {
                return;
            }
        }
    }

    fn record_stats(&self, tasks: usize) {
        let mut s = self.loader.stats.lock().unwrap_or_else(|p| p.into_inner());
        s.readers = tasks;
        s.loads += 1;
        s.bytes += self.done.load(Ordering::Relaxed);
        s.copies += self.copies.load(Ordering::Relaxed);
        s.direct_reads += self.direct_reads.load(Ordering::Relaxed);
        s.peak_scratch = s
            .peak_scratch
            .max(self.peak_scratch.load(Ordering::Relaxed));
        s.peak_bytes_in_flight = s.peak_bytes_in_flight.max(self.loader.budget.take_peak());
        s.reads += self.io.reads.load(Ordering::Relaxed);
        s.direct_io_reads += self.io.direct.load(Ordering::Relaxed);
    }

    // --- staging buffers and the device -------------------------------------------------

    /// A staging buffer to fill: free, or the oldest in flight once its copies are done
    /// (settling what landed from it). None when every usable buffer is held by another
    /// task (only after buffers were retired).
    fn take_slot(&self) -> Option<usize> {
        loop {
            match self.loader.ring.take() {
                Taken::Free(slot) => return Some(slot),
                Taken::Flying(slot, landings) => match self.wait(slot) {
                    Ok(()) => {
                        landings.into_iter().for_each(|l| self.land(l));
                        self.report(false);
                        return Some(slot);
                    }
                    Err(e) => {
                        // Nobody knows when the device stops reading it.
                        self.loader.ring.retire(slot);
                        for l in landings {
                            self.fail(l.request, e.clone());
                        }
                    }
                },
                Taken::None => return None,
            }
        }
    }

    /// Waits for buffer `slot`'s event: the device blocks if it can (without the device
    /// lock), else its event is polled.
    fn wait(&self, slot: usize) -> Result<()> {
        let device = self.device();
        let event = self.loader.staging.event(slot);
        if let Some(r) = device.event_wait(event) {
            return r.map_err(|e| e.context("waiting for a copy"));
        }
        let mut pause = 0u32;
        loop {
            let done = {
                let _lock = self.device_lock();
                device.event_query(event)
            }
            .map_err(|e| e.context("asking whether a copy is done"))?;
            if done {
                return Ok(());
            }
            pause += 1;
            match pause {
                0..64 => std::hint::spin_loop(),
                64..128 => std::thread::yield_now(),
                _ => std::thread::sleep(std::time::Duration::from_micros(
                    (20u64 << ((pause - 128) / 16).min(5)).min(500),
                )),
            }
        }
    }

    fn device_lock(&self) -> std::sync::MutexGuard<'_, ()> {
        self.loader
            .device_lock
            .lock()
            .unwrap_or_else(|p| p.into_inner())
    }

    /// Issues a staging buffer's copies and records its event after them; the buffer then
    /// flies (or is free again when nothing was issued; or is retired when the event
    /// couldn't be recorded after copies that were).
    fn issue(&self, slot: usize, flight: Flight) {
        if flight.landings.is_empty() {
            self.loader.ring.put_back(slot);
            return;
        }
        let device = self.device();
        // SAFETY: this task holds `slot`; the copies read it until its event completes,
        // and the ring lends it to nobody before that.
        let base = unsafe { self.loader.staging.buffer(slot) }.as_ptr();
        let mut flying = Vec::with_capacity(flight.landings.len());
        let mut failed = Vec::new();
        let recorded = {
            let _lock = self.device_lock();
            for c in &flight.copies {
                // SAFETY: `[src, src + len)` is inside the buffer, which stays unchanged
                // until the event recorded below completes (the ring's rule).
                let issued = unsafe {
                    device.copy_async(
                        c.address,
                        c.offset,
                        base.add(c.src as usize),
                        c.len as usize,
                    )
                };
                match issued {
                    Ok(()) => {
                        flying.extend_from_slice(&flight.landings[c.landings.clone()]);
                        self.copies.fetch_add(1, Ordering::Relaxed);
                    }
                    Err(e) => failed.push((c.landings.clone(), e)),
                }
            }
            match flying.is_empty() {
                true => Ok(()),
                false => device.event_record(self.loader.staging.event(slot)),
            }
        };
        for (range, e) in failed {
            for l in &flight.landings[range] {
                self.fail(l.request, e.clone().context("copying to the device"));
            }
        }
        if flying.is_empty() {
            self.loader.ring.put_back(slot);
            return;
        }
        match recorded {
            Ok(()) => self.loader.ring.fly(slot, flying),
            Err(e) => {
                self.loader.ring.retire(slot);
                for l in flying {
                    self.fail(l.request, e.clone().context("recording a copy's event"));
                }
            }
        }
    }

    /// At the end: waits for every buffer still in flight and settles what landed.
    fn drain(&self) {
        if self.loader.device.is_none() {
            return;
        }
        while let Some((slot, landings)) = self.loader.ring.oldest_flying() {
            match self.wait(slot) {
                Ok(()) => {
                    landings.into_iter().for_each(|l| self.land(l));
                    self.loader.ring.put_back(slot);
                    self.report(false);
                }
                Err(e) => {
                    self.loader.ring.retire(slot);
                    for l in landings {
                        self.fail(l.request, e.clone());
                    }
                }
            }
        }
    }
}

/// Resolves every request into `jobs` (`None` for one that can't be resolved: it fails
/// alone) and returns those failures, in request order, and the bytes the load lands.
fn resolve_jobs<'r>(
    loader: &Loader,
    reader: &'r Reader<'_>,
    requests: &mut [Request<'_>],
    jobs: &mut Vec<Option<Job<'r>>>,
) -> (Vec<(usize, Error)>, u64) {
    let mut failed = Vec::new();
    let mut total = 0u64;
    for (i, r) in requests.iter_mut().enumerate() {
        let job = match r.dst {
            super::Destination::Device { .. } if loader.device.is_none() => Err(err!(
                InvalidArgument,
                "a device destination, but the loader was made without a device"
            )),
            _ => plan::job(reader, r, loader.options.verify),
        };
        match job {
            Ok(j) => {
                total = total.saturating_add(j.out_bytes(0, j.units));
                jobs.push(Some(j));
            }
            Err(e) => {
                failed.push((i, e));
                jobs.push(None);
            }
        }
    }
    (failed, total)
}

/// Cuts every job into the items the tasks take (raw bytes in chunks of at most `limit`,
/// anything decoded in whole staging buffers, a sequential or in-place job whole) and
/// gives each request its tally of chunks; a request that failed to resolve gets a tally
/// of one chunk, failed with its error.
fn cut_items(
    jobs: &[Option<Job<'_>>],
    failed: Vec<(usize, Error)>,
    limit: u64,
    staging: u64,
    tallies: &mut Vec<Tally<Error>>,
    chunks: &mut Vec<usize>,
    items: &mut Vec<Item>,
) {
    let mut failed = failed.into_iter();
    for (i, job) in jobs.iter().enumerate() {
        let Some(job) = job else {
            let (_, e) = failed.next().expect("a failure for each job missing");
            let tally = Tally::new(1);
            tally.fail(e);
            tallies.push(tally);
            chunks.push(1);
            continue;
        };
        let limit = match job.raw {
            Some(_) => limit,
            None => staging,
        };
        let n = job.chunk_count(limit);
        if (job.sequential || job.into_place) && job.units > 0 {
            items.push(Item {
                request: i,
                u0: 0,
                u1: job.units,
            });
        } else {
            let mut u = 0;
            while u < job.units {
                let end = job.chunk_end(u, limit);
                items.push(Item {
                    request: i,
                    u0: u,
                    u1: end,
                });
                u = end;
            }
        }
        tallies.push(Tally::new(n));
        chunks.push(n);
    }
}
