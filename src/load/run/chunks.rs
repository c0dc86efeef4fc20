//! Running the chunks a task claimed: into host memory in place, packed into a staging
//! buffer and sent to the device, read by the device itself, or a whole request in order
//! (hashed on the way, or decoded as one stream).

use std::sync::atomic::Ordering;

use crate::codec::digest::Hasher;
use crate::error::{Error, Result, err};

use super::super::core::Landing;
use super::super::fill::{self, From, Scratch};
use super::super::plan::{Check, Dst, Job};
use super::{CopyOut, Flight, Item, Run};

impl Run<'_, '_, '_> {
    /// Reads (and decodes, converts, gathers) chunk `item` from the reader into `out`.
    fn fill_item(&self, item: &Item, out: &mut [u8], scratch: &mut Scratch) -> Result<()> {
        let job = self.job(item.request);
        fill::chunk(
            self.reader,
            job,
            (item.u0, item.u1),
            From::Reader,
            out,
            scratch,
            None,
        )
    }

    /// A host chunk, read straight into its destination.
    pub(super) fn host(&self, item: &Item, scratch: &mut Scratch) {
        let job = self.job(item.request);
        if self.tallies[item.request].failed() {
            return self.skip(item.request);
        }
        let out = self.host_out(job, item.u0, item.u1);
        match self.fill_item(item, out, scratch) {
            Ok(()) => self.land(Landing {
                request: item.request,
                bytes: job.out_bytes(item.u0, item.u1),
            }),
            Err(e) => self.fail(item.request, e),
        }
        self.report(false);
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

    /// A run of device chunks packed into one staging buffer.
    pub(super) fn device_run(&self, range: std::ops::Range<usize>, scratch: &mut Scratch) {
        let Some(slot) = self.take_slot() else {
            return self.no_buffer(&self.items[range]);
        };
        // SAFETY: this task holds `slot` (taken above) until `issue`.
        let buf = unsafe { self.loader.staging.buffer(slot) };
        let mut flight = Flight::default();
        let mut at = 0u64;
        let mut prev: Option<&Item> = None;
        for item in &self.items[range] {
            let job = self.job(item.request);
            // The placement the claim computed, whatever is skipped.
            let start = prev.map_or(0, |p| self.place(p, at, item));
            let len = job.out_bytes(item.u0, item.u1);
            at = start + len;
            prev = Some(item);
            if self.tallies[item.request].failed() {
                self.skip(item.request);
                continue;
            }
            let out = &mut buf[start as usize..(start + len) as usize];
            match self.fill_item(item, out, scratch) {
                Ok(()) => self.add(&mut flight, item, start),
                Err(e) => self.fail(item.request, e),
            }
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
    pub(super) fn direct_chunk(&self, item: &Item, scratch: &mut Scratch) {
        let job = self.job(item.request);
        if self.tallies[item.request].failed() {
            return self.skip(item.request);
        }
        let Some(slot) = self.take_slot() else {
            return self.no_buffer(std::slice::from_ref(item));
        };
        let (fd, base) = job.direct.expect("a direct job");
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
    pub(super) fn sequential(&self, request: usize, scratch: &mut Scratch) {
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
        let mut step = |u: (u64, u64), from: From<'_>, scratch: &mut Scratch| -> Result<()> {
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
        let outcome = if job.stream {
            let mut none = Scratch::default();
            fill::stream(self.reader, job, self.limit, scratch, |u, bytes| {
                step(u, From::Bytes(bytes), &mut none)
            })
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
        scratch: &mut Scratch,
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
        let fill_into = |out: &mut [u8], scratch: &mut Scratch, hasher: &mut Option<Hasher>| {
            fill::chunk(
                self.reader,
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
