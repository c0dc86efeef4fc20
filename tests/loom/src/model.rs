//! The pipeline core (src/load/core.rs) under loom: reader tasks claim chunks, fill a
//! staging buffer, hand it to a device thread that copies it later, and take buffers back
//! (waiting for their copy first); a request is finished when its last chunk landed. Staging
//! buffers and destinations are loom cells, so a buffer written while a copy may still read
//! it is a data race loom reports; the tests also check that every request finishes exactly
//! once, after its bytes landed, whatever the interleaving, with and without a cancel.

use std::collections::VecDeque;

use crate::core::{Landing, Queue, Ring, Taken, Tally};
use loom::cell::UnsafeCell;
use loom::sync::Arc;
use loom::sync::Mutex;
use loom::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// A chunk: its request and the value it writes.
#[derive(Clone, Copy)]
struct Chunk {
    request: usize,
    value: u64,
}

struct World {
    ring: Ring,
    queue_len: usize,
    chunks: Vec<Chunk>,
    tallies: Vec<Tally<&'static str>>,
    staging: Vec<UnsafeCell<u64>>,
    /// Per slot: its copy is done (the event).
    done: Vec<AtomicBool>,
    /// The device's queue of copies: (slot, request).
    device: Mutex<VecDeque<(usize, usize)>>,
    /// Per request: the sum of the values landed (the destination).
    dst: Vec<UnsafeCell<u64>>,
    finished: Vec<AtomicUsize>,
    /// Per request: the value its destination must hold when it finishes Ok.
    want: Vec<u64>,
    cancelled: AtomicBool,
}

impl World {
    fn new(slots: usize, chunks: Vec<Chunk>, requests: usize) -> Arc<World> {
        let mut want = vec![0; requests];
        let mut count = vec![0; requests];
        for c in &chunks {
            want[c.request] += c.value;
            count[c.request] += 1;
        }
        Arc::new(World {
            ring: Ring::new(slots),
            queue_len: chunks.len(),
            tallies: count.iter().map(|&n| Tally::new(n)).collect(),
            chunks,
            staging: (0..slots).map(|_| UnsafeCell::new(0)).collect(),
            done: (0..slots).map(|_| AtomicBool::new(true)).collect(),
            device: Mutex::new(VecDeque::new()),
            dst: (0..requests).map(|_| UnsafeCell::new(0)).collect(),
            finished: (0..requests).map(|_| AtomicUsize::new(0)).collect(),
            want,
            cancelled: AtomicBool::new(false),
        })
    }

    fn finish(&self, request: usize) {
        if let Some((result, _)) = self.tallies[request].finish(|| "cancelled") {
            self.finished[request].fetch_add(1, Ordering::SeqCst);
            if result.is_ok() {
                // The bytes landed before the end was reported: reading them here must
                // not race with the device's write.
                let got = self.dst[request].with(|p| unsafe { *p });
                assert_eq!(got, self.want[request], "request {request} finished early");
            }
        }
    }

    fn settle(&self, landings: Vec<Landing>) {
        for l in landings {
            if self.tallies[l.request].land(l.bytes) {
                self.finish(l.request);
            }
        }
    }

    fn wait(&self, slot: usize) {
        while !self.done[slot].load(Ordering::Acquire) {
            loom::thread::yield_now();
        }
    }

    /// A slot to fill (waiting for a flying one's copy, as `Run::take_slot` does).
    fn take(&self) -> usize {
        loop {
            match self.ring.take() {
                Taken::Free(slot) => return slot,
                Taken::Flying(slot, landings) => {
                    self.wait(slot);
                    self.settle(landings);
                    return slot;
                }
                Taken::None => loom::thread::yield_now(),
            }
        }
    }

    /// A reader task: claims one chunk at a time, fills a buffer, issues its copy.
    fn task(&self, queue: &Queue<'_>) {
        loop {
            let claimed = queue.claim(|_, _| false);
            if claimed.is_empty() {
                return;
            }
            let c = self.chunks[claimed.start];
            let slot = self.take();
            // Filling the buffer: a race with a pending copy out of it is a loom error.
            self.staging[slot].with_mut(|p| unsafe { *p = c.value });
            self.done[slot].store(false, Ordering::Release);
            self.device.lock().unwrap().push_back((slot, c.request));
            self.ring.fly(
                slot,
                vec![Landing {
                    request: c.request,
                    bytes: 1,
                }],
            );
        }
    }

    /// The device: carries out `n` copies in order.
    fn device(&self, n: usize) {
        let mut left = n;
        while left > 0 {
            let next = self.device.lock().unwrap().pop_front();
            match next {
                Some((slot, request)) => {
                    let v = self.staging[slot].with(|p| unsafe { *p });
                    self.dst[request].with_mut(|p| unsafe { *p += v });
                    self.done[slot].store(true, Ordering::Release);
                    left -= 1;
                }
                None => loom::thread::yield_now(),
            }
        }
    }

    /// The end of a load: drain what flies, finish every request.
    fn end(&self) {
        while let Some((slot, landings)) = self.ring.oldest_flying() {
            self.wait(slot);
            self.settle(landings);
            self.ring.put_back(slot);
        }
        for r in 0..self.tallies.len() {
            self.finish(r);
        }
        for (r, f) in self.finished.iter().enumerate() {
            assert_eq!(
                f.load(Ordering::SeqCst),
                1,
                "request {r} finished {f:?} times"
            );
        }
    }
}

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut b = loom::model::Builder::new();
    b.preemption_bound = Some(3);
    b.check(f);
}

#[test]
fn buffers_are_reused_only_after_their_copy_and_requests_finish_once() {
    model(|| {
        // Two tasks, three buffers (one more than tasks, as the loader runs them), three
        // chunks of two requests.
        let chunks = vec![
            Chunk {
                request: 0,
                value: 1,
            },
            Chunk {
                request: 1,
                value: 10,
            },
            Chunk {
                request: 0,
                value: 100,
            },
        ];
        let world = World::new(3, chunks, 2);
        let flag: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        let queue = Arc::new(Queue::new(world.queue_len, flag));
        let device = {
            let w = world.clone();
            loom::thread::spawn(move || w.device(3))
        };
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let (w, q) = (world.clone(), queue.clone());
                loom::thread::spawn(move || w.task(&q))
            })
            .collect();
        for t in tasks {
            t.join().unwrap();
        }
        device.join().unwrap();
        world.end();
        for r in 0..2 {
            let got = world.dst[r].with(|p| unsafe { *p });
            assert_eq!(got, world.want[r]);
        }
    });
}

#[test]
fn a_buffer_shared_by_more_chunks_than_buffers_waits_for_each_copy() {
    model(|| {
        // One task and two buffers, four chunks: every buffer is reused while the device
        // may still be copying out of the other.
        let chunks = (0..4)
            .map(|i| Chunk {
                request: i % 2,
                value: 1 << i,
            })
            .collect();
        let world = World::new(2, chunks, 2);
        let flag: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        let queue = Arc::new(Queue::new(world.queue_len, flag));
        let device = {
            let w = world.clone();
            loom::thread::spawn(move || w.device(4))
        };
        world.task(&queue);
        device.join().unwrap();
        world.end();
    });
}

#[test]
fn a_cancel_from_another_thread_ends_every_request_once() {
    model(|| {
        let chunks = vec![
            Chunk {
                request: 0,
                value: 1,
            },
            Chunk {
                request: 0,
                value: 2,
            },
            Chunk {
                request: 1,
                value: 4,
            },
        ];
        let world = World::new(2, chunks, 2);
        // The loader's cancel flag (Queue borrows it): another thread sets it, and the
        // task's next claim finds nothing.
        let flag: &'static AtomicBool = Box::leak(Box::new(AtomicBool::new(false)));
        let queue = Arc::new(Queue::new(world.queue_len, flag));
        let issued = Arc::new(AtomicUsize::new(0));
        let canceller = {
            let w = world.clone();
            loom::thread::spawn(move || {
                w.cancelled.store(true, Ordering::SeqCst);
                flag.store(true, Ordering::SeqCst);
            })
        };
        {
            // One task; count what it issued so the device knows how many copies come.
            let (w, q, n) = (world.clone(), queue.clone(), issued.clone());
            loop {
                let claimed = q.claim(|_, _| false);
                if claimed.is_empty() {
                    break;
                }
                let c = w.chunks[claimed.start];
                let slot = w.take();
                w.staging[slot].with_mut(|p| unsafe { *p = c.value });
                w.done[slot].store(false, Ordering::Release);
                w.device.lock().unwrap().push_back((slot, c.request));
                w.ring.fly(
                    slot,
                    vec![Landing {
                        request: c.request,
                        bytes: 1,
                    }],
                );
                n.fetch_add(1, Ordering::SeqCst);
                // Copies run as they are issued (the device is this thread here).
                w.device(1);
            }
        }
        canceller.join().unwrap();
        world.end();
        let done = issued.load(Ordering::SeqCst);
        // Requests whose chunks all landed are Ok with their bytes; the others ended as
        // cancelled (checked in `finish`: exactly once, never early).
        if done == 3 {
            for r in 0..2 {
                assert_eq!(world.dst[r].with(|p| unsafe { *p }), world.want[r]);
            }
        }
    });
}

#[test]
fn concurrent_landings_and_failures_finish_a_request_once_with_its_first_error() {
    model(|| {
        let tally = Arc::new(Tally::<&'static str>::new(3));
        let ends = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..3)
            .map(|i| {
                let (t, e) = (tally.clone(), ends.clone());
                loom::thread::spawn(move || {
                    let last = match i {
                        0 => t.fail("first"),
                        _ => t.land(5),
                    };
                    if last && t.finish(|| "unfinished").is_some() {
                        e.fetch_add(1, Ordering::SeqCst);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        assert_eq!(ends.load(Ordering::SeqCst), 1);
        assert!(tally.finish(|| "unfinished").is_none());
        assert!(tally.failed());
        assert_eq!(tally.landed(), 10);
    });
}
