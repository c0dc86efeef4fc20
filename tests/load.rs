//! The staged loader (`ztensor::load`) against a host "device": copies complete on a
//! thread of their own after random delays, some fail on purpose, and the device checks
//! that no staging byte changes while a copy out of it is pending. Every byte of every
//! request, every completion (once, after its bytes landed), cancellation, errors,
//! digests, slices of every dtype width and quantized rows, and the memory the options
//! bound.

mod common;

use std::collections::VecDeque;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};

use ztensor::load::{Destination, Device, Event, LoadEvents, Request, Slice};
use ztensor::{
    DType, DigestAlgorithm, ErrorKind, Loader, LoaderOptions, Reader, WriteOptions, Writer,
};

// --- the host device ------------------------------------------------------------------

/// How often the device fails on purpose, per 1000 calls.
#[derive(Clone, Copy, Default)]
struct Faults {
    copy: u32,
    query: u32,
    max_delay_us: u64,
}

struct Op {
    dst: usize,
    src: usize,
    len: usize,
    hash: u64,
}

#[derive(Default)]
struct Queue {
    ops: VecDeque<Op>,
    issued: u64,
    completed: u64,
    stop: bool,
    /// Bytes of staging read by copies not completed, and the most at once.
    pending_bytes: usize,
    peak_pending_bytes: usize,
}

/// A "device" whose memory is a host buffer and whose copies a worker thread carries out.
struct HostDevice {
    memory: Mutex<Vec<u8>>,
    base: usize,
    size: usize,
    queue: Arc<(Mutex<Queue>, Condvar)>,
    events: Mutex<Vec<u64>>,
    faults: Faults,
    rng: AtomicU64,
    violations: Arc<Mutex<Vec<String>>>,
    allocated: AtomicUsize,
    freed: AtomicUsize,
    registered: AtomicUsize,
    unregistered: AtomicUsize,
    direct: bool,
    direct_calls: AtomicUsize,
    worker: Mutex<Option<std::thread::JoinHandle<()>>>,
}

/// A device of `size` bytes whose copies complete after up to `max_delay_us`, failing
/// nothing; `direct`: with a direct-read hook.
fn delayed(size: usize, max_delay_us: u64, direct: bool) -> Arc<HostDevice> {
    HostDevice::new(
        size,
        Faults {
            max_delay_us,
            ..Faults::default()
        },
        direct,
    )
}

fn hash(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x100_0000_01b3)
    })
}

impl HostDevice {
    fn new(size: usize, faults: Faults, direct: bool) -> Arc<HostDevice> {
        let mut memory = vec![0xEEu8; size];
        let base = memory.as_mut_ptr() as usize;
        let queue = Arc::new((Mutex::new(Queue::default()), Condvar::new()));
        let violations = Arc::new(Mutex::new(Vec::new()));
        let d = Arc::new(HostDevice {
            memory: Mutex::new(memory),
            base,
            size,
            queue: queue.clone(),
            events: Mutex::new(Vec::new()),
            faults,
            rng: AtomicU64::new(0x1234_5678_9abc_def1),
            violations: violations.clone(),
            allocated: AtomicUsize::new(0),
            freed: AtomicUsize::new(0),
            registered: AtomicUsize::new(0),
            unregistered: AtomicUsize::new(0),
            direct,
            direct_calls: AtomicUsize::new(0),
            worker: Mutex::new(None),
        });
        let max_delay = faults.max_delay_us;
        let worker = std::thread::spawn(move || {
            let mut x = 0x9e37_79b9_7f4a_7c15u64;
            loop {
                let op = {
                    let (lock, cv) = &*queue;
                    let mut q = lock.lock().unwrap();
                    while q.ops.is_empty() && !q.stop {
                        q = cv.wait(q).unwrap();
                    }
                    match q.ops.pop_front() {
                        Some(op) => op,
                        None => return,
                    }
                };
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                if max_delay > 0 {
                    std::thread::sleep(std::time::Duration::from_micros(x % max_delay));
                }
                // SAFETY: the loader keeps the staging bytes alive and unchanged until the
                // event after this copy completes; the destination is inside `memory`.
                unsafe {
                    let src = std::slice::from_raw_parts(op.src as *const u8, op.len);
                    if hash(src) != op.hash {
                        violations
                            .lock()
                            .unwrap()
                            .push("staging bytes changed before their copy completed".into());
                    }
                    std::ptr::copy_nonoverlapping(op.src as *const u8, op.dst as *mut u8, op.len);
                }
                let (lock, cv) = &*queue;
                let mut q = lock.lock().unwrap();
                q.completed += 1;
                q.pending_bytes -= op.len;
                cv.notify_all();
            }
        });
        *d.worker.lock().unwrap() = Some(worker);
        d
    }

    fn roll(&self, per_thousand: u32) -> bool {
        if per_thousand == 0 {
            return false;
        }
        let mut x = self.rng.load(Ordering::Relaxed);
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.rng.store(x, Ordering::Relaxed);
        (x % 1000) < per_thousand as u64
    }

    /// The device memory at `address` (a real pointer into `memory`).
    fn at(&self, address: u64, len: usize) -> Vec<u8> {
        let m = self.memory.lock().unwrap();
        let start = address as usize - self.base;
        m[start..start + len].to_vec()
    }

    fn idle(&self) -> bool {
        let q = self.queue.0.lock().unwrap();
        q.ops.is_empty() && q.completed == q.issued
    }

    fn violations(&self) -> Vec<String> {
        self.violations.lock().unwrap().clone()
    }

    fn shutdown(&self) {
        self.queue.0.lock().unwrap().stop = true;
        self.queue.1.notify_all();
        if let Some(w) = self.worker.lock().unwrap().take() {
            w.join().unwrap();
        }
    }
}

impl Device for HostDevice {
    fn host_alloc(&self, size: usize) -> ztensor::Result<Option<NonNull<u8>>> {
        self.allocated.fetch_add(size, Ordering::Relaxed);
        let b = vec![0u8; size].into_boxed_slice();
        Ok(NonNull::new(Box::into_raw(b).cast::<u8>()))
    }

    fn host_free(&self, ptr: NonNull<u8>, size: usize) {
        self.freed.fetch_add(size, Ordering::Relaxed);
        // SAFETY: made by `host_alloc` from a boxed slice of `size` bytes.
        drop(unsafe { Box::from_raw(std::ptr::slice_from_raw_parts_mut(ptr.as_ptr(), size)) });
    }

    fn host_register(&self, _ptr: NonNull<u8>, size: usize) -> ztensor::Result<bool> {
        self.registered.fetch_add(size, Ordering::Relaxed);
        Ok(true)
    }

    fn host_unregister(&self, _ptr: NonNull<u8>) {
        self.unregistered.fetch_add(1, Ordering::Relaxed);
    }

    unsafe fn copy_async(
        &self,
        dst: u64,
        offset: u64,
        src: *const u8,
        len: usize,
    ) -> ztensor::Result<()> {
        if self.roll(self.faults.copy) {
            return Err(ztensor::Error::new(ErrorKind::Io, "injected copy failure"));
        }
        let start = (dst + offset) as usize;
        if start < self.base || start + len > self.base + self.size {
            self.violations
                .lock()
                .unwrap()
                .push(format!("a copy outside device memory: {start:#x} + {len}"));
            return Ok(());
        }
        // SAFETY: the loader promises `len` readable bytes at `src`.
        let h = hash(unsafe { std::slice::from_raw_parts(src, len) });
        let (lock, cv) = &*self.queue;
        let mut q = lock.lock().unwrap();
        q.ops.push_back(Op {
            dst: start,
            src: src as usize,
            len,
            hash: h,
        });
        q.issued += 1;
        q.pending_bytes += len;
        q.peak_pending_bytes = q.peak_pending_bytes.max(q.pending_bytes);
        cv.notify_all();
        Ok(())
    }

    fn event_create(&self) -> ztensor::Result<Event> {
        let mut e = self.events.lock().unwrap();
        e.push(0);
        Ok(Event(e.len() as u64 - 1))
    }

    fn event_destroy(&self, _event: Event) {}

    fn event_record(&self, event: Event) -> ztensor::Result<()> {
        let issued = self.queue.0.lock().unwrap().issued;
        self.events.lock().unwrap()[event.0 as usize] = issued;
        Ok(())
    }

    fn event_query(&self, event: Event) -> ztensor::Result<bool> {
        let target = self.events.lock().unwrap()[event.0 as usize];
        let done = self.queue.0.lock().unwrap().completed >= target;
        if done && self.roll(self.faults.query) {
            return Err(ztensor::Error::new(ErrorKind::Io, "injected event failure"));
        }
        Ok(done)
    }

    fn has_direct_read(&self) -> bool {
        self.direct
    }

    fn read_direct(
        &self,
        fd: i32,
        file_offset: u64,
        dst: u64,
        offset: u64,
        len: usize,
    ) -> ztensor::Result<bool> {
        let n = self.direct_calls.fetch_add(1, Ordering::Relaxed);
        if n % 3 == 2 {
            return Ok(false); // declined: staged instead
        }
        let start = (dst + offset) as usize - self.base;
        let mut m = self.memory.lock().unwrap();
        let out = &mut m[start..start + len];
        // SAFETY: pread into a buffer we own.
        let got = unsafe { libc::pread(fd, out.as_mut_ptr().cast(), len, file_offset as i64) };
        assert_eq!(got as usize, len);
        Ok(true)
    }
}

// --- what the tests load ----------------------------------------------------------------

/// Records every callback: completions per request (checked against the destination's
/// bytes at the time of the call), progress.
struct Recorder<'a> {
    device: Option<&'a HostDevice>,
    expected: Vec<(u64, Vec<u8>)>,
    calls: Vec<AtomicUsize>,
    early: AtomicUsize,
    last_progress: AtomicU64,
    backwards: AtomicBool,
    cancel_after: Option<(u64, &'a Loader)>,
}

impl<'a> Recorder<'a> {
    fn new(device: Option<&'a HostDevice>, expected: Vec<(u64, Vec<u8>)>) -> Self {
        Recorder {
            device,
            calls: expected.iter().map(|_| AtomicUsize::new(0)).collect(),
            expected,
            early: AtomicUsize::new(0),
            last_progress: AtomicU64::new(0),
            backwards: AtomicBool::new(false),
            cancel_after: None,
        }
    }

    fn assert_each_once(&self) {
        for (i, c) in self.calls.iter().enumerate() {
            assert_eq!(
                c.load(Ordering::SeqCst),
                1,
                "request {i} completed {c:?} times"
            );
        }
        assert_eq!(
            self.early.load(Ordering::SeqCst),
            0,
            "completions before the bytes landed"
        );
        assert!(
            !self.backwards.load(Ordering::SeqCst),
            "progress went backwards"
        );
    }
}

impl LoadEvents for Recorder<'_> {
    fn completed(&self, request: usize, result: &ztensor::Result<()>, bytes: u64) {
        self.calls[request].fetch_add(1, Ordering::SeqCst);
        if let (Ok(()), Some(d)) = (result, self.device) {
            let (address, want) = &self.expected[request];
            if *address != 0 && d.at(*address, want.len()) != *want {
                self.early.fetch_add(1, Ordering::SeqCst);
            }
            assert_eq!(bytes, want.len() as u64);
        }
    }

    fn progress(&self, done: u64, _total: u64) {
        let before = self.last_progress.swap(done, Ordering::SeqCst);
        if done < before {
            self.backwards.store(true, Ordering::SeqCst);
        }
        if let Some((after, loader)) = self.cancel_after
            && done >= after
        {
            loader.cancel();
        }
    }
}

/// A test file: 2-D tensors of every dtype width, raw and zstd, odd shapes.
fn model(digest: bool) -> Vec<u8> {
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    let dtypes = [
        DType::F64,
        DType::F32,
        DType::BF16,
        DType::F16,
        DType::I16,
        DType::U8,
        DType::I64,
        DType::I32,
    ];
    for (i, &dtype) in dtypes.iter().enumerate() {
        for (k, zstd) in [false, true].into_iter().enumerate() {
            let (rows, cols) = (61 + 17 * i as u64, 173 + 31 * k as u64);
            let data = common::data_for(dtype, (rows * cols) as usize, (i * 2 + k) as u64);
            let mut opts = if zstd {
                WriteOptions::zstd(1)
            } else {
                WriteOptions::default()
            };
            if digest {
                opts = opts.with_digest(DigestAlgorithm::Sha256);
            }
            w.add(&format!("t{i}{k}"), dtype, &[rows, cols], &data, &opts)
                .unwrap();
        }
    }
    // A large one: many chunks of a small staging buffer (1.5 MiB, f32).
    let big = common::data_for(DType::F32, 512 * 768, 99);
    let opts = if digest {
        WriteOptions::default().with_digest(DigestAlgorithm::Sha256)
    } else {
        WriteOptions::default()
    };
    w.add("big", DType::F32, &[512, 768], &big, &opts).unwrap();
    w.add(
        "bigz",
        DType::F32,
        &[512, 768],
        &big,
        &WriteOptions::zstd(1),
    )
    .unwrap();
    w.finish().unwrap()
}

/// What a request should land: the whole component, its rows, or its columns.
fn expected(r: &Reader<'_>, object: usize, slice: Slice, convert: Option<DType>) -> Vec<u8> {
    let obj = &r.objects()[object];
    let c = &obj.components()[0];
    let to = convert.unwrap_or(c.dtype());
    let numel: u64 = obj.shape().iter().product();
    let mut all = vec![0u8; (numel as usize) * to.size()];
    r.read_as(object, 0, to, &mut all).unwrap();
    let w = to.size();
    match slice {
        Slice::Whole => all,
        Slice::Rows { first, count } => {
            let inner = (numel / obj.shape()[0]) as usize * w;
            all[first as usize * inner..(first + count) as usize * inner].to_vec()
        }
        Slice::Columns { first, count } => {
            let cols = *obj.shape().last().unwrap() as usize;
            let rows = numel as usize / cols;
            let mut out = Vec::new();
            for row in 0..rows {
                let at = (row * cols + first as usize) * w;
                out.extend_from_slice(&all[at..at + count as usize * w]);
            }
            out
        }
        // Decoded bytes without a conversion, values with one.
        Slice::Range { first, count } => {
            let unit = if convert.is_some() { w } else { 1 };
            all[first as usize * unit..(first + count) as usize * unit].to_vec()
        }
    }
}

/// The requests of one test load: for each object whole, rows and columns, packed into
/// device memory one after the other (adjacent destinations, so copies merge).
fn plan(
    r: &Reader<'_>,
    converts: &[(usize, DType)],
) -> Vec<(usize, Slice, Option<DType>, Vec<u8>)> {
    let mut out = Vec::new();
    for object in 0..r.objects().len() {
        let shape = r.objects()[object].shape();
        let (rows, cols) = (shape[0], shape[1]);
        for slice in [
            Slice::Whole,
            Slice::Rows {
                first: rows / 3,
                count: rows / 2,
            },
            Slice::Columns {
                first: cols / 5,
                count: cols / 3,
            },
            // Bytes from an odd place: not whole values of the wider dtypes.
            Slice::Range {
                first: 3,
                count: rows * cols / 2 + 1,
            },
        ] {
            out.push((object, slice, None, expected(r, object, slice, None)));
        }
    }
    for &(object, to) in converts {
        let cols = r.objects()[object].shape()[1];
        for slice in [
            Slice::Whole,
            Slice::Columns {
                first: 3,
                count: cols - 7,
            },
            Slice::Range {
                first: 5,
                count: cols * 2 + 3,
            },
        ] {
            out.push((
                object,
                slice,
                Some(to),
                expected(r, object, slice, Some(to)),
            ));
        }
    }
    out
}

fn device_requests<'d>(
    device: &HostDevice,
    planned: &[(usize, Slice, Option<DType>, Vec<u8>)],
    gap: usize,
) -> (Vec<Request<'d>>, Vec<(u64, Vec<u8>)>) {
    let mut at = device.base as u64 + 64;
    let mut requests = Vec::new();
    let mut expected = Vec::new();
    for (object, slice, convert, want) in planned {
        requests.push(Request {
            object: *object,
            component: 0,
            slice: *slice,
            convert: *convert,
            verify: false,
            dst: Destination::Device {
                address: at,
                offset: 0,
                len: want.len() as u64,
            },
        });
        expected.push((at, want.clone()));
        at += want.len() as u64 + gap as u64;
    }
    assert!((at - device.base as u64) as usize <= device.size);
    (requests, expected)
}

fn options(readers: usize, count: usize, size: usize) -> LoaderOptions {
    LoaderOptions {
        readers,
        staging_count: count,
        staging_size: size,
        ..LoaderOptions::default()
    }
}

// --- the tests --------------------------------------------------------------------------

#[test]
fn every_byte_of_every_slice_lands_and_completes_once() {
    let file = model(false);
    let r = Reader::from_slice(&file).unwrap();
    let planned = plan(
        &r,
        &[
            (4, DType::F32),
            (3, DType::F64),
            (9, DType::I32),
            (11, DType::F16),
        ],
    );
    for (readers, count, gap) in [(1, 2, 0), (3, 4, 0), (4, 5, 40), (0, 0, 8)] {
        let device = delayed(24 << 20, 300, false);
        let loader = Loader::new(Some(device.clone()), &options(readers, count, 64 << 10)).unwrap();
        let (mut requests, expected) = device_requests(&device, &planned, gap);
        let events = Recorder::new(Some(&device), expected.clone());
        let results = loader.load(&r, &mut requests, &events);
        assert!(
            device.idle(),
            "copies still pending after the load returned"
        );
        for (i, ((result, bytes), (address, want))) in results.iter().zip(&expected).enumerate() {
            assert!(result.is_ok(), "request {i}: {result:?}");
            assert_eq!(*bytes, want.len() as u64);
            assert!(
                device.at(*address, want.len()) == *want,
                "request {i}: wrong bytes"
            );
        }
        events.assert_each_once();
        assert_eq!(
            events.last_progress.load(Ordering::SeqCst),
            expected.iter().map(|e| e.1.len() as u64).sum::<u64>()
        );
        assert_eq!(device.violations(), Vec::<String>::new());
        let stats = loader.stats();
        assert!(stats.pinned);
        assert!(stats.peak_busy <= stats.staging_count);
        assert!(stats.peak_scratch <= 64 << 10, "{stats:?}");
        assert!(stats.readers < stats.staging_count, "{stats:?}");
        // Adjacent destinations: chunks packed into a buffer go out in one copy, so there
        // are about as many copies as buffers' worth of bytes; apart, one per chunk at least.
        let total: u64 = expected.iter().map(|e| e.1.len() as u64).sum();
        let buffers = total.div_ceil(64 << 10);
        if gap == 0 {
            assert!(
                stats.copies * 10 <= buffers * 13,
                "{stats:?}, {buffers} buffers"
            );
        } else {
            assert!(stats.copies >= planned.len() as u64, "{stats:?}");
        }
        // Memory: the staging buffers asked for, no more, and copies never hold more.
        assert_eq!(
            device.allocated.load(Ordering::SeqCst),
            stats.staging_count * (64 << 10)
        );
        let peak = device.queue.0.lock().unwrap().peak_pending_bytes;
        assert!(peak <= stats.staging_count * (64 << 10), "{peak}");
        drop(loader);
        assert_eq!(
            device.freed.load(Ordering::SeqCst),
            device.allocated.load(Ordering::SeqCst)
        );
        device.shutdown();
    }
}

#[test]
fn host_destinations_are_read_in_place_and_match_load_batch() {
    let file = model(false);
    let r = Reader::from_slice(&file).unwrap();
    let planned = plan(&r, &[(2, DType::F32)]);
    let loader = Loader::new(None, &options(3, 0, 64 << 10)).unwrap();
    let mut bufs: Vec<Vec<u8>> = planned.iter().map(|p| vec![0xAB; p.3.len()]).collect();
    let mut requests: Vec<Request<'_>> = planned
        .iter()
        .zip(bufs.iter_mut())
        .map(|((object, slice, convert, _), dst)| Request {
            object: *object,
            component: 0,
            slice: *slice,
            convert: *convert,
            verify: false,
            dst: Destination::Host(dst),
        })
        .collect();
    let events = Recorder::new(None, planned.iter().map(|p| (0, p.3.clone())).collect());
    let results = loader.load(&r, &mut requests, &events);
    drop(requests);
    for (i, (result, _)) in results.iter().enumerate() {
        assert!(result.is_ok(), "{i}: {result:?}");
        assert!(bufs[i] == planned[i].3, "request {i}: wrong bytes");
    }
    events.assert_each_once();
    assert_eq!(loader.stats().staging_count, 0);
    // The whole requests equal a batch load's.
    let mut batch: Vec<Vec<u8>> = (0..r.objects().len())
        .map(|o| vec![0; r.objects()[o].components()[0].decoded_length() as usize])
        .collect();
    let mut reqs = common::whole_loads(&mut batch, None);
    assert!(r.load_batch(&mut reqs, 0).iter().all(|r| r.is_ok()));
    drop(reqs);
    for (o, b) in batch.iter().enumerate() {
        assert!(*b == bufs[o * 4], "object {o}");
    }
}

#[test]
fn quantized_rows_dequantize_and_copy_as_blocks() {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/dequant/dequant.gguf");
    let r = Reader::open(&path).unwrap();
    let device = delayed(4 << 20, 50, false);
    let loader = Loader::new(Some(device.clone()), &options(2, 3, 64 << 10)).unwrap();
    let mut planned = Vec::new();
    for (o, obj) in r.objects().iter().enumerate() {
        let Ok(q) = r.quant_info(o) else { continue };
        if !q.block_type.can_dequantize() {
            continue;
        }
        let shape = obj.shape();
        let per_row = shape[1] as usize;
        // Row 1, dequantized to f32 and to bf16, and as its blocks.
        for to in [DType::F32, DType::BF16] {
            let mut want = vec![0u8; per_row * to.size()];
            r.read_as_range(o, 0, to, per_row as u64, &mut want)
                .unwrap();
            planned.push((o, Slice::Rows { first: 1, count: 1 }, Some(to), want));
        }
        let all = r.read_to_vec(o, 0).unwrap();
        let row = all.len() / shape[0] as usize;
        planned.push((
            o,
            Slice::Rows { first: 1, count: 1 },
            None,
            all[row..].to_vec(),
        ));
        // Whole, dequantized.
        let mut want = vec![0u8; (shape[0] * shape[1]) as usize * 4];
        r.read_as(o, 0, DType::F32, &mut want).unwrap();
        planned.push((o, Slice::Whole, Some(DType::F32), want));
    }
    assert!(planned.len() > 40, "{}", planned.len());
    let (mut requests, expected) = device_requests(&device, &planned, 0);
    let events = Recorder::new(Some(&device), expected.clone());
    let results = loader.load(&r, &mut requests, &events);
    for (i, ((result, _), (address, want))) in results.iter().zip(&expected).enumerate() {
        assert!(result.is_ok(), "request {i}: {result:?}");
        assert!(
            device.at(*address, want.len()) == *want,
            "request {i}: wrong bytes"
        );
    }
    events.assert_each_once();
    // A slice that splits a block is refused, alone.
    let (o, _) = r
        .objects()
        .iter()
        .enumerate()
        .find(|(o, _)| {
            r.quant_info(*o)
                .is_ok_and(|q| q.block_type.block_size() == 32)
        })
        .unwrap();
    let mut requests = vec![Request {
        object: o,
        component: 0,
        slice: Slice::Columns {
            first: 16,
            count: 32,
        },
        convert: Some(DType::F32),
        verify: false,
        dst: Destination::Device {
            address: device.base as u64,
            offset: 0,
            len: 2 * 32 * 4,
        },
    }];
    let results = loader.load(&r, &mut requests, &ztensor::load::NoEvents);
    let e = results[0].0.as_ref().unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
    assert!(e.message().contains("not a multiple"), "{e}");
    assert_eq!(device.violations(), Vec::<String>::new());
    device.shutdown();
}

#[test]
fn injected_failures_fail_only_their_requests() {
    let file = model(false);
    let r = Reader::from_slice(&file).unwrap();
    let planned = plan(&r, &[]);
    let mut failed_some = false;
    for seed in 0..4u64 {
        let device = HostDevice::new(
            24 << 20,
            Faults {
                copy: 30,
                query: 5,
                max_delay_us: 100,
            },
            false,
        );
        device.rng.store(seed * 7919 + 1, Ordering::Relaxed);
        let loader = Loader::new(Some(device.clone()), &options(3, 5, 64 << 10)).unwrap();
        let (mut requests, expected) = device_requests(&device, &planned, 16);
        let events = Recorder::new(Some(&device), expected.clone());
        let results = loader.load(&r, &mut requests, &events);
        assert!(device.idle());
        for (i, ((result, bytes), (address, want))) in results.iter().zip(&expected).enumerate() {
            match result {
                Ok(()) => {
                    assert_eq!(*bytes, want.len() as u64);
                    assert!(
                        device.at(*address, want.len()) == *want,
                        "request {i}: wrong bytes"
                    );
                }
                Err(e) => {
                    failed_some = true;
                    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
                    // A buffer whose event failed is retired (nobody knows whether its
                    // copy still reads it): once all are, the rest fail for want of one.
                    assert!(
                        e.message().contains("injected")
                            || e.message().contains("no staging buffer"),
                        "{e}"
                    );
                    assert!(*bytes < want.len() as u64);
                }
            }
        }
        assert!(results.iter().filter(|r| r.0.is_ok()).count() > results.len() / 4);
        events.assert_each_once();
        assert_eq!(device.violations(), Vec::<String>::new());
        // The loader is still usable after failures (buffers whose wait failed are
        // retired, the others serve the next load).
        device.shutdown();
    }
    assert!(failed_some, "no injected failure happened");
}

#[test]
fn cancel_stops_between_chunks_and_leaves_nothing_in_flight() {
    let file = model(false);
    let r = Reader::from_slice(&file).unwrap();
    let planned = plan(&r, &[]);
    let total: u64 = planned.iter().map(|p| p.3.len() as u64).sum();
    let device = delayed(24 << 20, 200, false);
    let loader = Loader::new(Some(device.clone()), &options(2, 3, 64 << 10)).unwrap();
    let (mut requests, expected) = device_requests(&device, &planned, 0);
    let mut events = Recorder::new(Some(&device), expected.clone());
    events.cancel_after = Some((total / 4, &loader));
    let results = loader.load(&r, &mut requests, &events);
    assert!(
        device.idle(),
        "a copy still pending after a cancelled load returned"
    );
    let mut cancelled = 0;
    for (i, ((result, bytes), (address, want))) in results.iter().zip(&expected).enumerate() {
        match result {
            Ok(()) => assert!(device.at(*address, want.len()) == *want, "request {i}"),
            Err(e) => {
                assert_eq!(e.kind(), ErrorKind::Canceled, "{e}");
                assert!(*bytes < want.len() as u64);
                cancelled += 1;
            }
        }
    }
    assert!(cancelled > 0 && cancelled < results.len(), "{cancelled}");
    events.assert_each_once();
    assert!(events.last_progress.load(Ordering::SeqCst) < total);
    assert_eq!(device.violations(), Vec::<String>::new());
    // The cancel was for that load: the next one runs whole.
    let (mut requests, expected) = device_requests(&device, &planned, 0);
    let events = Recorder::new(Some(&device), expected.clone());
    assert!(
        loader
            .load(&r, &mut requests, &events)
            .iter()
            .all(|r| r.0.is_ok())
    );
    // A cancel before a load cancels that load: every request ends cancelled.
    loader.cancel();
    let (mut requests, _) = device_requests(&device, &planned, 0);
    let results = loader.load(&r, &mut requests, &ztensor::load::NoEvents);
    assert!(
        results
            .iter()
            .all(|r| r.0.as_ref().is_err_and(|e| e.kind() == ErrorKind::Canceled))
    );
    device.shutdown();
}

#[test]
fn digests_are_checked_before_a_request_is_reported_done() {
    let mut file = model(true);
    let r = Reader::from_slice(&file).unwrap();
    let planned: Vec<_> = (0..r.objects().len())
        .map(|o| (o, Slice::Whole, None, expected(&r, o, Slice::Whole, None)))
        .collect();
    // Corrupt one raw component (t10: raw bf16) and the large raw one.
    let corrupt = [r.find("t10").unwrap(), r.find("big").unwrap()];
    let offsets: Vec<u64> = corrupt
        .iter()
        .map(|&o| r.objects()[o].components()[0].offset() + 100)
        .collect();
    drop(r);
    for at in offsets {
        file[at as usize] ^= 0x40;
    }
    let r = Reader::from_slice(&file).unwrap();
    let device = delayed(24 << 20, 50, false);
    let mut opts = options(3, 4, 64 << 10);
    opts.verify = true;
    let loader = Loader::new(Some(device.clone()), &opts).unwrap();
    let (mut requests, expected) = device_requests(&device, &planned, 0);
    let events = Recorder::new(Some(&device), expected.clone());
    let results = loader.load(&r, &mut requests, &events);
    for (i, ((result, _), (address, want))) in results.iter().zip(&expected).enumerate() {
        if corrupt.contains(&planned[i].0) {
            let e = result.as_ref().unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Checksum, "{e}");
            if planned[i].0 == corrupt[0] {
                // One chunk: checked before its copy, so nothing landed.
                assert!(device.at(*address, want.len()).iter().all(|&b| b == 0xEE));
            }
        } else {
            assert!(result.is_ok(), "request {i}: {result:?}");
            assert!(device.at(*address, want.len()) == *want, "request {i}");
        }
    }
    events.assert_each_once();
    device.shutdown();
}

#[test]
fn direct_reads_go_straight_to_the_device_or_fall_back_to_staging() {
    let dir = common::temp_dir("load_direct");
    let path = dir.join("m.zt");
    std::fs::write(&path, model(false)).unwrap();
    let r = Reader::open(&path).unwrap();
    let planned = plan(&r, &[(1, DType::F64)]);
    let device = delayed(24 << 20, 20, true);
    let loader = Loader::new(Some(device.clone()), &options(3, 4, 64 << 10)).unwrap();
    let (mut requests, expected) = device_requests(&device, &planned, 0);
    let events = Recorder::new(Some(&device), expected.clone());
    let results = loader.load(&r, &mut requests, &events);
    for (i, ((result, _), (address, want))) in results.iter().zip(&expected).enumerate() {
        assert!(result.is_ok(), "request {i}: {result:?}");
        assert!(device.at(*address, want.len()) == *want, "request {i}");
    }
    events.assert_each_once();
    let s = loader.stats();
    assert!(s.direct_reads > 0 && s.copies > 0, "{s:?}");
    device.shutdown();
}

#[test]
fn caller_buffers_are_registered_and_misuse_is_refused() {
    let file = model(false);
    let r = Reader::from_slice(&file).unwrap();
    let device = HostDevice::new(8 << 20, Faults::default(), false);
    let mut mine: Vec<Vec<u8>> = (0..3).map(|_| vec![0u8; 128 << 10]).collect();
    let ptrs: Vec<NonNull<u8>> = mine
        .iter_mut()
        .map(|b| NonNull::new(b.as_mut_ptr()).unwrap())
        .collect();
    // SAFETY: the buffers outlive the loader and nothing else touches them.
    let loader =
        unsafe { Loader::with_buffers(device.clone(), &options(0, 0, 128 << 10), ptrs, true) }
            .unwrap();
    assert_eq!(device.registered.load(Ordering::SeqCst), 3 * (128 << 10));
    assert_eq!(device.allocated.load(Ordering::SeqCst), 0);
    let planned = plan(&r, &[]);
    let (mut requests, expected) = device_requests(&device, &planned[..12], 0);
    let results = loader.load(&r, &mut requests, &ztensor::load::NoEvents);
    for (i, ((result, _), (address, want))) in results.iter().zip(&expected).enumerate() {
        assert!(result.is_ok(), "{i}: {result:?}");
        assert!(device.at(*address, want.len()) == *want);
    }
    assert_eq!(loader.stats().readers, 2);
    drop(loader);
    assert_eq!(device.unregistered.load(Ordering::SeqCst), 3);

    // A device destination without a device; a destination of the wrong size; a slice
    // outside the tensor: each refused alone.
    let host = Loader::new(None, &LoaderOptions::default()).unwrap();
    let mut small = vec![0u8; 10];
    let mut requests = vec![
        Request {
            object: 0,
            component: 0,
            slice: Slice::Whole,
            convert: None,
            verify: false,
            dst: Destination::Device {
                address: 4096,
                offset: 0,
                len: 8,
            },
        },
        Request {
            object: 0,
            component: 0,
            slice: Slice::Whole,
            convert: None,
            verify: false,
            dst: Destination::Host(&mut small),
        },
    ];
    let results = host.load(&r, &mut requests, &ztensor::load::NoEvents);
    assert_eq!(
        results[0].0.as_ref().unwrap_err().kind(),
        ErrorKind::InvalidArgument
    );
    assert_eq!(
        results[1].0.as_ref().unwrap_err().kind(),
        ErrorKind::BufferTooSmall
    );
    let e = Loader::new(None, &options(0, 0, 1000)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument);
    device.shutdown();
    drop(mine.pop());
}

#[test]
fn one_load_at_a_time_per_loader() {
    struct Nested<'a> {
        loader: &'a Loader,
        reader: &'a Reader<'a>,
        inner: Mutex<Option<ErrorKind>>,
    }
    impl LoadEvents for Nested<'_> {
        fn completed(&self, _: usize, _: &ztensor::Result<()>, _: u64) {
            let mut buf = vec![0u8; 8];
            let mut reqs = vec![Request {
                object: 0,
                component: 0,
                slice: Slice::Whole,
                convert: None,
                verify: false,
                dst: Destination::Host(&mut buf),
            }];
            let r = self
                .loader
                .load(self.reader, &mut reqs, &ztensor::load::NoEvents);
            *self.inner.lock().unwrap() = r[0].0.as_ref().err().map(|e| e.kind());
        }
    }
    let mut w = Writer::new_with(Vec::new(), &common::v12()).unwrap();
    w.add("a", DType::U8, &[8], &[1; 8], &WriteOptions::default())
        .unwrap();
    let file = w.finish().unwrap();
    let r = Reader::from_slice(&file).unwrap();
    let loader = Loader::new(None, &LoaderOptions::default()).unwrap();
    let events = Nested {
        loader: &loader,
        reader: &r,
        inner: Mutex::new(None),
    };
    let mut buf = vec![0u8; 8];
    let mut reqs = vec![Request {
        object: 0,
        component: 0,
        slice: Slice::Whole,
        convert: None,
        verify: false,
        dst: Destination::Host(&mut buf),
    }];
    assert!(loader.load(&r, &mut reqs, &events)[0].0.is_ok());
    assert_eq!(*events.inner.lock().unwrap(), Some(ErrorKind::State));
    drop(reqs);
    assert_eq!(buf, [1; 8]);
}

#[test]
fn a_small_model_moves_a_progress_bar() {
    // 40 tensors of 16 KiB (640 KiB): two staging buffers' worth, loaded in chunks small
    // enough that progress is reported many times, in order, ending at the total.
    struct Bar {
        calls: Mutex<Vec<(u64, u64)>>,
    }
    impl LoadEvents for Bar {
        fn progress(&self, done: u64, total: u64) {
            self.calls.lock().unwrap().push((done, total));
        }
    }
    let mut w = Writer::new(Vec::new()).unwrap();
    let data = common::data_for(DType::F32, 4096, 5);
    for i in 0..40 {
        w.add(
            &format!("t{i}"),
            DType::F32,
            &[64, 64],
            &data,
            &WriteOptions::default(),
        )
        .unwrap();
    }
    let file = w.finish().unwrap();
    let r = Reader::from_slice(&file).unwrap();
    for device in [false, true] {
        let dev = delayed(1 << 20, 50, false);
        let loader = match device {
            true => Loader::new(Some(dev.clone()), &options(2, 4, 256 << 10)).unwrap(),
            false => Loader::new(None, &options(2, 0, 256 << 10)).unwrap(),
        };
        let mut bufs: Vec<Vec<u8>> = (0..40).map(|_| vec![0u8; data.len()]).collect();
        let mut requests: Vec<Request<'_>> = bufs
            .iter_mut()
            .enumerate()
            .map(|(i, dst)| match device {
                true => Request::device(
                    i,
                    0,
                    dev.base as u64 + (i * data.len()) as u64,
                    0,
                    data.len() as u64,
                ),
                false => Request::host(i, 0, dst),
            })
            .collect();
        let bar = Bar {
            calls: Mutex::new(Vec::new()),
        };
        assert!(
            loader
                .load(&r, &mut requests, &bar)
                .iter()
                .all(|(r, _)| r.is_ok())
        );
        let calls = bar.calls.into_inner().unwrap();
        let total = 40 * data.len() as u64;
        assert!(
            calls.len() >= 10,
            "device {device}: {} progress calls",
            calls.len()
        );
        assert!(calls.windows(2).all(|w| w[0].0 < w[1].0), "{calls:?}");
        assert!(calls.iter().all(|c| c.1 == total));
        assert_eq!(calls.last().unwrap().0, total);
        dev.shutdown();
    }
}

/// Writes `count` raw u8 tensors `t00`, `t01`, ... of `size` bytes each to `path` and
/// returns their bytes.
fn write_tensors(path: &std::path::Path, count: usize, size: usize) -> Vec<Vec<u8>> {
    let tensors: Vec<Vec<u8>> = (0..count as u64).map(|i| common::bytes(i, size)).collect();
    let mut w = Writer::create(path).unwrap();
    for (i, t) in tensors.iter().enumerate() {
        w.add(
            &format!("t{i:02}"),
            DType::U8,
            &[t.len() as u64],
            t,
            &WriteOptions::default(),
        )
        .unwrap();
    }
    w.finish().unwrap();
    tensors
}

/// Loads every tensor `write_tensors` wrote into host buffers with a fresh loader of
/// read mode `io`, checks the bytes, and returns the loader's stats.
fn load_tensors(
    r: &Reader<'_>,
    tensors: &[Vec<u8>],
    io: ztensor::ReadMode,
) -> ztensor::load::LoaderStats {
    let loader = Loader::new(
        None,
        &LoaderOptions {
            io,
            ..LoaderOptions::default()
        },
    )
    .unwrap();
    let mut bufs: Vec<Vec<u8>> = tensors.iter().map(|t| vec![0; t.len()]).collect();
    let mut q: Vec<Request<'_>> = bufs
        .iter_mut()
        .enumerate()
        .map(|(i, dst)| Request::host(r.find(&format!("t{i:02}")).unwrap(), 0, dst))
        .collect();
    for (result, _) in loader.load(r, &mut q, &ztensor::load::NoEvents) {
        result.unwrap();
    }
    drop(q);
    assert!(bufs == tensors, "{io:?}: wrong bytes");
    loader.stats()
}

/// Reads that wait on storage (`O_DIRECT`, or a cold file through the cache) keep at least
/// 16 in flight, on threads of their own, whatever the pool's size; reads of a file in the
/// page cache run one task per reader (the pool's size by default). Same bytes either way.
#[test]
fn reads_that_wait_on_storage_keep_sixteen_in_flight() {
    let dir = common::temp_dir("load_storage_reads");
    let path = dir.join("m.zt");
    let tensors = write_tensors(&path, 24, 1 << 20);
    let r = Reader::open(&path).unwrap();
    let readers = |io: ztensor::ReadMode| load_tensors(&r, &tensors, io).readers;
    // O_DIRECT (or, where the filesystem refuses it, its fallback): at least 16 tasks (the
    // pool's size where that is more), at most one per request.
    assert_eq!(
        readers(ztensor::ReadMode::Direct),
        ztensor::pool::threads().max(16).min(24)
    );
    // Through the page cache, forced: the pool's size.
    assert_eq!(
        readers(ztensor::ReadMode::Pread),
        ztensor::pool::threads().min(24)
    );
}

/// The share of a file's pages in the page cache (by `mincore`).
fn resident(path: &std::path::Path) -> f64 {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    let len = f.metadata().unwrap().len() as usize;
    let pages = len.div_ceil(4096);
    let mut vec = vec![0u8; pages];
    // SAFETY: a mapping of a descriptor we hold, only asked about (never read), unmapped
    // before returning; `vec` has a byte per page.
    unsafe {
        let map = libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            f.as_raw_fd(),
            0,
        );
        assert_ne!(map, libc::MAP_FAILED);
        assert_eq!(libc::mincore(map, len, vec.as_mut_ptr()), 0);
        libc::munmap(map, len);
    }
    vec.iter().filter(|&&b| b & 1 != 0).count() as f64 / pages as f64
}

/// Drops a file's pages from the page cache (`fdatasync`, then `POSIX_FADV_DONTNEED`) and
/// returns the share still resident.
fn drop_pages(path: &std::path::Path) -> f64 {
    use std::os::fd::AsRawFd;
    let f = std::fs::File::open(path).unwrap();
    // SAFETY: calls on a descriptor we hold.
    unsafe {
        libc::fdatasync(f.as_raw_fd());
        libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED);
    }
    resident(path)
}

/// Whether the filesystem of `path` takes `O_DIRECT` reads (tmpfs refuses them).
fn direct_io_works(path: &std::path::Path) -> bool {
    use std::os::unix::fs::{FileExt, OpenOptionsExt};
    let Ok(f) = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    else {
        return false;
    };
    let layout = std::alloc::Layout::from_size_align(4096, 4096).unwrap();
    // SAFETY: a non-zero size; freed below with the same layout.
    let ptr = unsafe { std::alloc::alloc_zeroed(layout) };
    assert!(!ptr.is_null());
    // SAFETY: 4096 bytes of ours.
    let ok = f
        .read_at(unsafe { std::slice::from_raw_parts_mut(ptr, 4096) }, 0)
        .is_ok();
    // SAFETY: allocated above with this layout.
    unsafe { std::alloc::dealloc(ptr, layout) };
    ok
}

/// `ReadMode::Auto` reads a cold file with `O_DIRECT` (1 MiB at a time, at least 16 tasks)
/// and leaves it out of the page cache; a file in the cache is read through it.
#[test]
fn auto_reads_a_cold_file_with_o_direct_and_a_cached_one_through_the_cache() {
    let dir = common::temp_dir("load_auto_cold");
    let path = dir.join("m.zt");
    // 80 MiB (Auto leaves files under 64 MiB to the cache), in 20 tensors of 4 MiB.
    let tensors = write_tensors(&path, 20, 4 << 20);
    let left = drop_pages(&path);
    if left > 0.01 {
        eprintln!(
            "skipped: {:.0}% of the file stayed in the page cache after POSIX_FADV_DONTNEED \
             (tmpfs?): no cold file to read here",
            left * 100.0
        );
        return;
    }
    let load = || {
        let r = Reader::open(&path).unwrap();
        load_tensors(&r, &tensors, ztensor::ReadMode::Auto)
    };
    let cold = load();
    let direct_ok = direct_io_works(&path);
    if direct_ok {
        // Every byte with O_DIRECT, in reads of at most 1 MiB: at least 80 of them.
        assert!(cold.direct_io_reads >= 80, "{cold:?}");
        assert_eq!(cold.direct_io_reads, cold.reads, "{cold:?}");
        assert!(cold.readers >= 16, "{cold:?}");
        // The price, documented: the file is still out of the cache.
        assert!(resident(&path) < 0.05, "{}", resident(&path));
    } else {
        assert_eq!(cold.direct_io_reads, 0, "{cold:?}");
    }
    // Read once through the cache, the same file is cached: no O_DIRECT.
    std::fs::read(&path).unwrap();
    let warm = load();
    assert_eq!(warm.direct_io_reads, 0, "{warm:?}");
    assert!(warm.reads > 0, "{warm:?}");
}
