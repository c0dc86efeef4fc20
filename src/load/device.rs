//! What the loader needs from the memory it copies into: a GPU runtime (CUDA, HIP,
//! Vulkan, Metal) or anything else the host copies into asynchronously. The library links
//! none of them: a runtime plugs in by implementing `Device` (in C, by filling the
//! callbacks of `zt_device`; the CUDA backend, `cuda.rs`, is one such implementation).

use std::ptr::NonNull;

use crate::error::Result;

/// A device event, as the device hands it out (a `CUevent`, a fence, an index): opaque
/// to the library, which only records, queries, waits for and destroys it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event(pub u64);

/// The device side of a `Loader`. The loader calls these from its reader tasks (several
/// threads), but never two at once, except `event_wait` and `read_direct`, which it calls
/// without holding its lock (so one thread may wait while another issues copies). Errors
/// fail the requests they concern (copy, record, query, wait, direct read) or the
/// loader's creation (allocation, registration, events).
pub trait Device: Send + Sync {
    /// Whether destinations are addresses, so that `dst + offset + len` of one copy equal
    /// to the next copy's `dst + offset` means the two are adjacent (CUDA and HIP device
    /// pointers): the loader then merges such copies into one. Without it (handles, as
    /// Vulkan buffers are) only copies to the same `dst` at adjacent offsets are merged.
    fn linear_addresses(&self) -> bool {
        true
    }

    /// `size` bytes of pinned host memory for a staging buffer, or `Ok(None)` when the
    /// device doesn't allocate host memory (the loader then allocates it and offers it to
    /// `host_register`).
    fn host_alloc(&self, _size: usize) -> Result<Option<NonNull<u8>>> {
        Ok(None)
    }

    /// Frees what `host_alloc` returned (`size` is what was asked for).
    fn host_free(&self, _ptr: NonNull<u8>, _size: usize) {}

    /// Pins (page-locks) `size` bytes of host memory at `ptr` for fast copies; `Ok(false)`
    /// when the device can't (the copies then come from pageable memory).
    fn host_register(&self, _ptr: NonNull<u8>, _size: usize) -> Result<bool> {
        Ok(false)
    }

    /// Undoes `host_register`.
    fn host_unregister(&self, _ptr: NonNull<u8>) {}

    /// Starts copying `len` bytes from host memory `src` to device destination `dst` at
    /// byte `offset`, asynchronously (on the stream the device was made for), and returns.
    ///
    /// # Safety
    /// The loader keeps `src` valid and unchanged until an event recorded after this call
    /// completes; the destination range is the caller's, as the request said.
    unsafe fn copy_async(&self, dst: u64, offset: u64, src: *const u8, len: usize) -> Result<()>;

    /// A new event (one per staging buffer, made when the loader is).
    fn event_create(&self) -> Result<Event>;

    /// Destroys an event of `event_create` (when the loader is dropped).
    fn event_destroy(&self, event: Event);

    /// Records `event` after the copies issued so far (on the same stream).
    fn event_record(&self, event: Event) -> Result<()>;

    /// True when everything before `event`'s last record is done.
    fn event_query(&self, event: Event) -> Result<bool>;

    /// Blocks until `event` is done. `None` when the device can't block (the loader then
    /// polls `event_query`).
    fn event_wait(&self, _event: Event) -> Option<Result<()>> {
        None
    }

    /// Whether `read_direct` may be called: storage straight into device memory
    /// (GPUDirect Storage through cuFile, hipFile).
    fn has_direct_read(&self) -> bool {
        false
    }

    /// Reads `len` bytes at `file_offset` of the open file `fd` into `dst` at `offset`:
    /// done when it returns, or queued on the device's stream so that an event recorded
    /// after it covers it. `Ok(false)` declines (the loader then reads through staging).
    /// Called only for raw bytes that need no decoding, from several threads at once.
    fn read_direct(
        &self,
        _fd: i32,
        _file_offset: u64,
        _dst: u64,
        _offset: u64,
        _len: usize,
    ) -> Result<bool> {
        Ok(false)
    }
}
