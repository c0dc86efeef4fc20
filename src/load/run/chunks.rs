//! Running the chunks a task claimed: into host memory in place, packed into a staging
//! buffer and sent to the device, read by the device itself, or a whole request in order
//! (hashed on the way, or decoded as one stream).

use std::sync::atomic::Ordering;

use crate::codec::digest::Hasher;
use crate::error::{Error, Result, err};

use super::super::core::Landing;
use super::super::fill::{self, From};
use super::super::io::{Scratch, Way};
use super::super::plan::{Check, Conv, Cut, Dst, Job};
use super::{CopyOut, Flight, Item, Run};

impl Run<'_, '_, '_> {
    /// Reads (and decodes, converts, gathers) chunk `item` from the reader into `out`.
    fn fill_item(&self, item: &Item, out: &mut [u8], scratch: &mut Scratch<'_>) -> Result<()> {
        let job = self.job(item.request);
        fill::chunk(
            self.reader,
            &self.io,
            job,
            (item.u0, item.u1),
            From::Reader,
            out,
            scratch,
            None,
        )
    }

    /// Where chunk `item`'s bytes lie when they are a raw component's, read as they are:
    /// the way its file is read and the file offset of its first byte.
    fn raw_bytes(&self, item: &Item) -> Option<(&Way<'_>, u64)> {
        let job = self.job(item.request);
        if !matches!(job.conv, Conv::Copy) || self.tallies[item.request].failed() {
            return None;
        }
        let Cut::Contiguous { .. } = job.cut else {
            return None;
        };
        let (file, base, source) = job.raw?;
        let (s0, _) = job.span(item.u0, item.u1);
        Some((self.io.way(file, source)?, base + s0 * job.in_unit))
    }

    /// How many chunks of `items` from the first on are raw bytes that follow each other
    /// in one file (one read fills them all); 0 when the first isn't raw.
    fn neighbours(&self, items: &[Item]) -> usize {
        let Some((way, mut end)) = self.raw_bytes(&items[0]) else {
            return 0;
        };
        end += self
            .job(items[0].request)
            .out_bytes(items[0].u0, items[0].u1);
        let mut n = 1;
        for item in &items[1..] {
            match self.raw_bytes(item) {
                Some((w, at)) if std::ptr::eq(w, way) && at == end => {
                    end += self.job(item.request).out_bytes(item.u0, item.u1);
                    n += 1;
                }
                _ => break,
            }
        }
        n
    }

    /// Host chunks claimed together: each read straight into its destination, those whose
    /// bytes follow each other in a file read with one read.
    /// The bytes landed are counted for progress once per run (the load's shared count
    /// is touched once, not once per chunk: a run of small tensors is many chunks).
    pub(super) fn host_run(&self, range: std::ops::Range<usize>, scratch: &mut Scratch<'_>) {
        let items = &self.items[range];
        let mut landed = 0u64;
        let mut k = 0;
        while k < items.len() {
            let n = self.neighbours(&items[k..]);
            if n > 1 {
                landed += self.host_neighbours(&items[k..k + n], scratch);
                k += n;
            } else {
                landed += self.host(&items[k], scratch);
                k += 1;
            }
        }
        self.count_landed(landed);
        self.report(false);
    }

    /// Raw host chunks that follow each other in one file: one read into all of their
    /// destinations. The bytes landed (not yet counted for progress).
    fn host_neighbours(&self, items: &[Item], scratch: &mut Scratch<'_>) -> u64 {
        let (way, offset) = self.raw_bytes(&items[0]).expect("raw chunks");
        let mut outs: Vec<&mut [u8]> = items
            .iter()
            .map(|it| self.host_out(self.job(it.request), it.u0, it.u1))
            .collect();
        match self.io.read(way, offset, &mut outs, scratch) {
            Ok(()) => items
                .iter()
                .map(|it| {
                    self.settle_landing(Landing {
                        request: it.request,
                        bytes: self.job(it.request).out_bytes(it.u0, it.u1),
                    })
                })
                .sum(),
            Err(e) => {
                for it in items {
                    self.fail(
                        it.request,
                        self.chunk_context(self.job(it.request), e.clone()),
                    );
                }
                0
            }
        }
    }

    /// A host chunk, read straight into its destination. The bytes landed (not yet
    /// counted for progress).
    fn host(&self, item: &Item, scratch: &mut Scratch<'_>) -> u64 {
        let job = self.job(item.request);
        if self.tallies[item.request].failed() {
            self.skip(item.request);
            return 0;
        }
        let out = self.host_out(job, item.u0, item.u1);
        match self.fill_item(item, out, scratch) {
            Ok(()) => self.settle_landing(Landing {
                request: item.request,
                bytes: job.out_bytes(item.u0, item.u1),
            }),
            Err(e) => {
                self.fail(item.request, e);
                0
            }
        }
    }

    /// Destination units `[u0, u1)` of a host job.
    #[allow(clippy::mut_from_ref)]
    fn host_out(&self, job: &Job<'_>, u0: u64, u1: u64) -> &mut [u8] {
        let Dst::Host(ptr) = job.dst else {
            unreachable!("a host job")
        };
        // SAFETY: the request's destination is borrowed mutably for the whole load and is
        // `units * out_unit` bytes (checked); each chunk is written by one task only.
        unsafe {
            std::slice::from_raw_parts_mut(
                ptr.add(job.out_bytes(0, u0) as usize),
                job.out_bytes(u0, u1) as usize,
            )
        }
    }

    /// A run of device chunks packed into one staging buffer; chunks whose bytes follow
    /// each other in a file are read with one read into their places.
    pub(super) fn device_run(&self, range: std::ops::Range<usize>, scratch: &mut Scratch<'_>) {
        let Some(slot) = self.take_slot() else {
            return self.no_buffer(&self.items[range]);
        };
        // SAFETY: this task holds `slot` (taken above) until `issue`.
        let buf = unsafe { self.loader.staging.buffer(slot) };
        let items = &self.items[range];
        // The placements the claim computed, whatever is skipped.
        let mut starts = Vec::with_capacity(items.len());
        let mut at = 0u64;
        for (k, item) in items.iter().enumerate() {
            let start = if k == 0 {
                0
            } else {
                self.place(&items[k - 1], at, item)
            };
            at = start + self.job(item.request).out_bytes(item.u0, item.u1);
            starts.push(start);
        }
        let mut flight = Flight::default();
        let mut k = 0;
        while k < items.len() {
            let item = &items[k];
            let job = self.job(item.request);
            let len = job.out_bytes(item.u0, item.u1);
            if self.tallies[item.request].failed() {
                self.skip(item.request);
                k += 1;
                continue;
            }
            let n = self.neighbours(&items[k..]);
            if n > 1 {
                let (way, offset) = self.raw_bytes(item).expect("raw chunks");
                let group = &items[k..k + n];
                let mut outs = split_places(buf, group, &starts[k..k + n], |it| {
                    self.job(it.request).out_bytes(it.u0, it.u1)
                });
                match self.io.read(way, offset, &mut outs, scratch) {
                    Ok(()) => {
                        for (it, &start) in group.iter().zip(&starts[k..k + n]) {
                            self.add(&mut flight, it, start);
                        }
                    }
                    Err(e) => {
                        for it in group {
                            self.fail(
                                it.request,
                                self.chunk_context(self.job(it.request), e.clone()),
                            );
                        }
                    }
                }
                k += n;
                continue;
            }
            let start = starts[k];
            let out = &mut buf[start as usize..(start + len) as usize];
            match self.fill_item(item, out, scratch) {
                Ok(()) => self.add(&mut flight, item, start),
                Err(e) => self.fail(item.request, e),
            }
            k += 1;
        }
        self.issue(slot, flight);
    }

    /// Adds a filled chunk at staging offset `start` to a flight, merged into the last
    /// copy when both its destination and its staging bytes continue that copy's.
    fn add(&self, flight: &mut Flight, item: &Item, start: u64) {
        let (address, offset, end) = self.dst_range(item);
        let len = end - offset;
        flight.landings.push(Landing {
            request: item.request,
            bytes: len,
        });
        let index = flight.landings.len() - 1;
        if let Some(last) = flight.copies.last_mut()
            && last.src + last.len == start
            && self.adjacent(
                (last.address, last.offset, last.offset + last.len),
                (address, offset, end),
            )
        {
            last.len += len;
            last.landings.end = index + 1;
            return;
        }
        flight.copies.push(CopyOut {
            address,
            offset,
            src: start,
            len,
            landings: index..index + 1,
        });
    }

    /// Claimed chunks that found no usable staging buffer (the device failed on others).
    fn no_buffer(&self, items: &[Item]) {
        for item in items {
            self.fail(
                item.request,
                err!(
                    Io,
                    "no staging buffer is usable: the device failed to record or finish \
                     copies out of the others"
                ),
            );
        }
    }

    /// A chunk the device reads from the file itself; through staging when it declines.
    pub(super) fn direct_chunk(&self, item: &Item, scratch: &mut Scratch<'_>) {
        let job = self.job(item.request);
        if self.tallies[item.request].failed() {
            return self.skip(item.request);
        }
        let Some(slot) = self.take_slot() else {
            return self.no_buffer(std::slice::from_ref(item));
        };
        let (_, base, source) = job.raw.expect("a direct job is raw");
        let fd = source.fd().expect("a direct job has a descriptor");
        let (s0, _) = job.span(item.u0, item.u1);
        let (address, offset, end) = self.dst_range(item);
        let device = self.device();
        let read = device
            .read_direct(
                fd,
                base + s0 * job.in_unit,
                address,
                offset,
                (end - offset) as usize,
            )
            .map_err(|e| e.context("reading straight into device memory"));
        match read {
            Ok(true) => {
                self.direct_reads.fetch_add(1, Ordering::Relaxed);
                let recorded = {
                    let _lock = self.device_lock();
                    device.event_record(self.loader.staging.event(slot))
                };
                let landing = Landing {
                    request: item.request,
                    bytes: end - offset,
                };
                match recorded {
                    Ok(()) => self.loader.ring.fly(slot, vec![landing]),
                    Err(e) => {
                        self.loader.ring.retire(slot);
                        self.fail(item.request, e);
                    }
                }
            }
            Ok(false) => {
                // SAFETY: this task holds `slot` until `issue`.
                let buf = unsafe { self.loader.staging.buffer(slot) };
                let out = &mut buf[..(end - offset) as usize];
                let mut flight = Flight::default();
                match self.fill_item(item, out, scratch) {
                    Ok(()) => self.add(&mut flight, item, 0),
                    Err(e) => self.fail(item.request, e),
                }
                self.issue(slot, flight);
            }
            Err(e) => {
                self.loader.ring.put_back(slot);
                self.fail(item.request, e);
            }
        }
    }

    /// A request run in order by this task: its digest checked before or hashed on the
    /// way, or its component decoded once as a stream.
    pub(super) fn sequential(&self, request: usize, scratch: &mut Scratch<'_>) {
        let job = self.job(request);
        let count = self.chunks[request];
        let mut settled = 0usize;
        let mut hasher = match &job.check {
            Check::Staged(expected) => Some(expected.hasher()),
            _ => None,
        };
        if let Check::Before = job.check
            && let Err(e) = self.reader.verify_component(job.object, job.component)
        {
            return self.fail_rest(request, e, count, 0);
        }
        let mut step = |u: (u64, u64), from: From<'_>, scratch: &mut Scratch<'_>| -> Result<()> {
            if self.queue.cancelled() {
                return Err(err!(Canceled, "cancelled"));
            }
            if self.tallies[request].failed() {
                return Err(err!(Internal, "an earlier chunk failed"));
            }
            let r = self.sequential_chunk(request, u, from, scratch, &mut hasher);
            settled += 1;
            r
        };
        let outcome = if job.into_place {
            // Decoded straight into the destination, holding nothing besides.
            let out = self.host_out(job, 0, job.units);
            match self.reader.read_into(job.object, job.component, out) {
                Ok(()) => {
                    settled += 1;
                    self.land(Landing {
                        request,
                        bytes: job.out_bytes(0, job.units),
                    });
                    self.report(false);
                    Ok(())
                }
                Err(e) => Err(e),
            }
        } else if job.stream {
            let mut none = Scratch::new(&self.loader.budget);
            // A component that can only be decoded whole (another format's pipeline) is
            // held whole while it streams: its decoded and stored bytes are taken from the
            // budget, with the stream's chunk buffer, in one piece (a task waits for
            // memory only while it holds none).
            let whole = (!crate::decode::has_frames(job.c))
                .then(|| job.c.decoded_length.saturating_add(job.c.blob.length));
            let held = match whole {
                Some(bytes) => {
                    let what = format!(
                        "a component decoded whole ({} bytes, {} stored)",
                        job.c.decoded_length, job.c.blob.length
                    );
                    scratch
                        .hold_with(self.limit as usize, bytes, &what)
                        .map(Some)
                }
                None => Ok(None),
            };
            match held {
                Err(e) => Err(self.chunk_context(job, e)),
                Ok(_held) => fill::stream(self.reader, job, self.limit, scratch, |u, bytes| {
                    step(u, From::Bytes(bytes), &mut none)
                }),
            }
        } else {
            let mut u = 0;
            let mut r = Ok(());
            while u < job.units && r.is_ok() {
                let end = job.chunk_end(u, self.limit);
                r = step((u, end), From::Reader, scratch);
                u = end;
            }
            r
        };
        if let Err(e) = outcome {
            match e.kind() {
                // Chunks never run: a cancel leaves them unsettled (the request ends as
                // cancelled at the end of the load).
                crate::error::ErrorKind::Canceled => {}
                _ => self.fail_rest(request, e, count, settled),
            }
        }
    }

    /// Ends a request whose chunks from `settled` on won't run: the first of them fails
    /// with `e` (unless the request had failed already), the others are skipped.
    fn fail_rest(&self, request: usize, e: Error, count: usize, settled: usize) {
        let tally = &self.tallies[request];
        let already = tally.failed();
        for k in settled..count {
            let last = if k == settled && !already {
                tally.fail(e.clone())
            } else {
                tally.skip()
            };
            if last {
                self.finish(request);
            }
        }
        if settled >= count && !already {
            tally.record(e);
        }
    }

    /// One chunk of a request run in order; on the last, its digest is checked before the
    /// bytes are sent. An error settles the chunk (it failed) and stops the request.
    fn sequential_chunk(
        &self,
        request: usize,
        (u0, u1): (u64, u64),
        from: From<'_>,
        scratch: &mut Scratch<'_>,
        hasher: &mut Option<Hasher>,
    ) -> Result<()> {
        let job = self.job(request);
        let last = u1 == job.units;
        let len = job.out_bytes(u0, u1);
        let item = Item { request, u0, u1 };
        let check_digest = |hasher: &mut Option<Hasher>| -> Result<()> {
            match (&job.check, hasher.take()) {
                (Check::Staged(expected), Some(h)) if last => {
                    expected.check(h).map_err(|e| self.chunk_context(job, e))
                }
                (_, h) => {
                    *hasher = h;
                    Ok(())
                }
            }
        };
        let failed = |e: Error| {
            // This chunk settles as failed; the caller skips the rest.
            self.fail(request, e.clone());
            Err(e)
        };
        // Fills `out` with the chunk and, on the last, checks the digest.
        let fill_into = |out: &mut [u8], scratch: &mut Scratch<'_>, hasher: &mut Option<Hasher>| {
            fill::chunk(
                self.reader,
                &self.io,
                job,
                (u0, u1),
                from,
                out,
                scratch,
                hasher.as_mut(),
            )
            .and_then(|()| check_digest(hasher))
        };
        if matches!(job.dst, Dst::Host(_)) {
            if let Err(e) = fill_into(self.host_out(job, u0, u1), scratch, hasher) {
                return failed(e);
            }
            self.land(Landing {
                request,
                bytes: len,
            });
            self.report(false);
            return Ok(());
        }
        let Some(slot) = self.take_slot() else {
            return failed(err!(
                Io,
                "no staging buffer is usable: the device failed to record or finish copies \
                 out of the others"
            ));
        };
        // SAFETY: this task holds `slot` until `issue` or `put_back`.
        let buf = unsafe { self.loader.staging.buffer(slot) };
        if let Err(e) = fill_into(&mut buf[..len as usize], scratch, hasher) {
            self.loader.ring.put_back(slot);
            return failed(e);
        }
        let mut flight = Flight::default();
        self.add(&mut flight, &item, 0);
        self.issue(slot, flight);
        Ok(())
    }

    fn chunk_context(&self, job: &Job<'_>, e: Error) -> Error {
        match self.reader.component(job.object, job.component) {
            Ok((obj, c)) => self.reader.ctx(obj, c)(e),
            Err(_) => e,
        }
    }
}

/// The places `starts` (offsets in `buf`) of `items`, each as long as `len` says, as
/// separate slices of the staging buffer (increasing and disjoint: the claim placed them).
fn split_places<'b>(
    buf: &'b mut [u8],
    items: &[Item],
    starts: &[u64],
    len: impl Fn(&Item) -> u64,
) -> Vec<&'b mut [u8]> {
    let mut outs = Vec::with_capacity(items.len());
    let mut rest = buf;
    let mut at = 0u64;
    for (item, &start) in items.iter().zip(starts) {
        let (_, tail) = std::mem::take(&mut rest).split_at_mut((start - at) as usize);
        let (out, tail) = tail.split_at_mut(len(item) as usize);
        outs.push(out);
        rest = tail;
        at = start + len(item);
    }
    outs
}
