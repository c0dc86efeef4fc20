//! A device loader's staging buffers and their events: allocated (pinned by the device
//! when it can), registered, or the caller's; released when the loader is dropped.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::Arc;

use crate::error::{Result, err};

use super::LoaderOptions;
use super::device::{Device, Event};

/// Where the buffers come from.
pub(crate) enum Source {
    /// The loader allocates them.
    Allocate,
    /// The caller's, registered with the device first when `register`.
    Caller {
        buffers: Vec<NonNull<u8>>,
        register: bool,
    },
}

/// Who frees a buffer.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Owner {
    /// The device (`host_free`).
    Device,
    /// The loader (the global allocator, with this layout).
    Loader(Layout),
    /// The caller.
    Caller,
}

struct Buffer {
    ptr: NonNull<u8>,
    owner: Owner,
    registered: bool,
}

/// The staging buffers, each `size` bytes, and one event per buffer.
#[derive(Default)]
pub(crate) struct Staging {
    buffers: Vec<Buffer>,
    events: Vec<Event>,
    size: usize,
}

// SAFETY: the buffers are plain memory the loader hands to one task at a time (the ring).
unsafe impl Send for Staging {}
// SAFETY: as above.
unsafe impl Sync for Staging {}

/// Page alignment for buffers the loader allocates (what pinning works in).
const PAGE: usize = 4096;

impl Staging {
    /// `options.staging_count` buffers of `options.staging_size` bytes and their events.
    /// On failure, what was made is released.
    pub(crate) fn new(
        device: &Arc<dyn Device>,
        options: &LoaderOptions,
        source: Source,
    ) -> Result<Staging> {
        let size = options.staging_size;
        let mut s = Staging {
            size,
            ..Staging::default()
        };
        let made = s.fill(device.as_ref(), options.staging_count, source);
        if let Err(e) = made {
            s.release(device.as_ref());
            return Err(e);
        }
        Ok(s)
    }

    fn fill(&mut self, device: &dyn Device, count: usize, source: Source) -> Result<()> {
        let size = self.size;
        match source {
            Source::Caller { buffers, register } => {
                for ptr in buffers {
                    self.buffers.push(Buffer {
                        ptr,
                        owner: Owner::Caller,
                        registered: false,
                    });
                    if register {
                        let registered = device.host_register(ptr, size)?;
                        self.buffers.last_mut().expect("pushed").registered = registered;
                    }
                }
            }
            Source::Allocate => {
                for _ in 0..count {
                    if let Some(ptr) = device.host_alloc(size)? {
                        self.buffers.push(Buffer {
                            ptr,
                            owner: Owner::Device,
                            registered: false,
                        });
                        continue;
                    }
                    let layout = Layout::from_size_align(size, PAGE)
                        .map_err(|_| err!(InvalidArgument, "a staging size of {size} bytes"))?;
                    // SAFETY: the layout has a non-zero size (at least MIN_STAGING_SIZE).
                    let raw = unsafe { std::alloc::alloc_zeroed(layout) };
                    let ptr = NonNull::new(raw).ok_or_else(|| {
                        err!(Limit, "can't allocate a staging buffer of {size} bytes")
                    })?;
                    self.buffers.push(Buffer {
                        ptr,
                        owner: Owner::Loader(layout),
                        registered: false,
                    });
                    let registered = device.host_register(ptr, size)?;
                    self.buffers.last_mut().expect("pushed").registered = registered;
                }
            }
        }
        for _ in 0..self.buffers.len() {
            let e = device.event_create()?;
            self.events.push(e);
        }
        Ok(())
    }

    /// How many buffers.
    pub(crate) fn len(&self) -> usize {
        self.buffers.len()
    }

    /// Whether every buffer is pinned (the device's, or registered with it).
    pub(crate) fn pinned(&self) -> bool {
        !self.buffers.is_empty()
            && self
                .buffers
                .iter()
                .all(|b| b.owner == Owner::Device || b.registered)
    }

    /// Buffer `slot`'s memory, for the one task that holds it (the ring says who).
    ///
    /// # Safety
    /// The caller holds `slot` (taken from the ring, not yet flown or put back).
    #[allow(clippy::mut_from_ref)]
    pub(crate) unsafe fn buffer(&self, slot: usize) -> &mut [u8] {
        // SAFETY: `size` bytes at `ptr` are ours (allocated, or the caller's per
        // `with_buffers`), and the caller holds the slot alone.
        unsafe { std::slice::from_raw_parts_mut(self.buffers[slot].ptr.as_ptr(), self.size) }
    }

    /// Buffer `slot`'s event.
    pub(crate) fn event(&self, slot: usize) -> Event {
        self.events[slot]
    }

    /// Destroys the events and frees or unregisters the buffers, those retired after a
    /// failed event too: the loader is freed after the device finished what it accepted
    /// (the caller's promise, docs/c-api.md), so no copy reads them any more.
    pub(crate) fn release(&mut self, device: &dyn Device) {
        for e in self.events.drain(..) {
            device.event_destroy(e);
        }
        for b in self.buffers.drain(..) {
            if b.registered {
                device.host_unregister(b.ptr);
            }
            match b.owner {
                Owner::Device => device.host_free(b.ptr, self.size),
                // SAFETY: allocated above with this layout, freed once.
                Owner::Loader(layout) => unsafe { std::alloc::dealloc(b.ptr.as_ptr(), layout) },
                Owner::Caller => {}
            }
        }
    }
}
