//! C ABI: the staged loader (`zt_loader`): many requests, whole components or
//! tensor-parallel slices, into host memory or through pinned staging into device memory,
//! pipelined, with per-request completion, progress and cancellation.

use std::ffi::{c_char, c_void};
use std::ptr::NonNull;
use std::sync::Arc;

use super::device::{CDevice, own_cuda, read_options, zt_device};
use super::handles::{self, Boxed, Handle, reader, zt_reader};
use super::objects::find_component;
use super::{guard, need_dtype, need_out, put, zt_status};
use crate::dtype::DType;
use crate::error::{Error, Result, bail};
use crate::load::{
    Destination, Device, LoadEvents, Loader, LoaderOptions, ReadMode, Request, Slice,
};

/// The loader: staging buffers (pinned), their events and the device's callbacks, kept
/// between loads. Opaque; free with `zt_loader_free`.
pub struct zt_loader {
    /// Shared with the loads running on it, so that a free from inside one (a callback)
    /// frees it only when that load returns.
    shared: Arc<Shared>,
}

struct Shared {
    loader: Loader,
    on_complete: Option<
        unsafe extern "C" fn(user: *mut c_void, request: usize, status: zt_status, bytes: u64),
    >,
    on_progress: Option<unsafe extern "C" fn(user: *mut c_void, done: u64, total: u64)>,
    user: *mut c_void,
}

impl Handle for zt_loader {
    const NAME: &'static str = "loader";
    type Owned = Boxed;
    type Target = zt_loader;
}

impl Drop for zt_loader {
    fn drop(&mut self) {
        // Outside its loads, a free waits for the loads running (or queued) on it; from
        // inside one (a callback on this thread), that load's own reference keeps the
        // loader until it returns.
        if !self.shared.loader.inside_on_this_thread() {
            self.shared.loader.wait_idle();
        }
    }
}

// SAFETY: `user` is the caller's, passed back to its callbacks on the loader's threads, as
// the contract of `zt_loader_options` says.
unsafe impl Send for Shared {}
// SAFETY: as above.
unsafe impl Sync for Shared {}

/// `zt_loader_options.flags`: check every request's digest (as `ZT_LOAD_VERIFY` does for
/// one).
pub const ZT_LOADER_VERIFY: u32 = 1;
/// `zt_loader_options.flags`: register the caller's `staging` buffers with the device
/// (`host_register`: pinned) at creation, and unregister them at `zt_loader_free`.
pub const ZT_LOADER_REGISTER_STAGING: u32 = 2;
/// `zt_loader_options.flags`: refuse a load while another runs on the loader
/// (`ZT_ERR_STATE`) instead of waiting for it (the default: loads from several threads run
/// one after the other, in the order they were called).
pub const ZT_LOADER_NO_QUEUE: u32 = 4;

/// `zt_loader_options.io`: how a load reads raw bytes from local files.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zt_io_mode {
    /// Chosen per file: through the page cache when the file is mostly in it (`mincore` on
    /// a sample) or under 64 MiB; `O_DIRECT` when it is cold, which leaves it out of the
    /// page cache (the next load of it is cold again: `ZT_IO_PREAD` keeps it cached).
    ZT_IO_AUTO = 0,
    /// Copied from the reader's mapping (`pread` when the reader has none).
    ZT_IO_MMAP = 1,
    /// `pread` through the page cache, even from a mapped file.
    ZT_IO_PREAD = 2,
    /// `O_DIRECT` reads into aligned buffers, several in flight (`pread` where the
    /// filesystem refuses `O_DIRECT`, as tmpfs does).
    ZT_IO_DIRECT = 3,
}

/// Options of `zt_loader_create_with`; zero-filled or NULL for the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_loader_options {
    /// `sizeof(zt_loader_options)` (0: this header's size).
    pub struct_size: u32,
    /// `ZT_LOADER_*` flags, or-ed.
    pub flags: u32,
    /// Reader tasks at once (0: the library pool's size, `zt_pool_thread_count`); on
    /// threads of their own and at least 16 when the load reads a cold file or with
    /// `O_DIRECT` (a remote object's: its concurrency); with a device, at most
    /// `staging_count - 1`.
    pub readers: u32,
    /// Staging buffers (0: readers + 2, at least 3); with `staging`, how many it points
    /// to.
    pub staging_count: u32,
    /// Bytes of each staging buffer, and the most bytes of one chunk (0: 16 MiB; at least
    /// 64 KiB).
    pub staging_size: u64,
    /// Optional: `staging_count` buffers of `staging_size` bytes of yours to stage in
    /// (pinned already, or with `ZT_LOADER_REGISTER_STAGING`), valid and untouched by
    /// anything else until `zt_loader_free`. NULL: the loader allocates them (the device's
    /// `host_alloc`, else memory it registers).
    pub staging: *const *mut c_void,
    /// Optional: called once per request when it ends: `status` `ZT_OK` once every byte
    /// landed (its destination may be read), or why it failed or was cancelled; `bytes`
    /// that landed. From the loader's threads, possibly several at once.
    pub on_complete: Option<
        unsafe extern "C" fn(user: *mut c_void, request: usize, status: zt_status, bytes: u64),
    >,
    /// Optional: `done` of `total` destination bytes landed; increasing, never two calls at
    /// once.
    pub on_progress: Option<unsafe extern "C" fn(user: *mut c_void, done: u64, total: u64)>,
    /// Passed to the callbacks.
    pub user: *mut c_void,
    /// The most bytes a load holds besides its destinations: the staging buffers, the
    /// reader tasks' scratch (chunks converted or gathered), the aligned buffers of direct
    /// reads, and components that can only be decoded whole (0: the staging buffers plus
    /// 1 GiB). A task that needs more waits until others give memory back; a request that
    /// needs more than the whole budget at once fails with `ZT_ERR_LIMIT`. Set with
    /// `staging_size` 0, the staging size is chosen to fit; sizes that don't fit are
    /// `ZT_ERR_INVALID_ARGUMENT`. `zt_loader_get_stats` reports the peak.
    pub max_bytes_in_flight: u64,
    /// A `zt_io_mode` value: how raw bytes are read from local files (0: automatic).
    pub io: u32,
}

/// `zt_loader_request.flags`: `dst` is host memory, filled in place (no staging, no
/// device).
pub const ZT_LOAD_HOST: u32 = 4;
/// `zt_loader_request.flags`: check the component's digest (if it has one) before the
/// request is reported done.
pub const ZT_LOAD_VERIFY: u32 = 8;

/// `zt_loader_request.slice`: which part of the component a request loads.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zt_slice {
    /// All of it.
    ZT_SLICE_WHOLE = 0,
    /// Rows `[first, first + count)` of the first dimension: one contiguous range. With
    /// weights stored `[out, in]` (PyTorch, Hugging Face, and GGUF as this library shows
    /// it), a rank's shard of a column-parallel layer (q/k/v, gate/up: a slice of the
    /// outputs).
    ZT_SLICE_ROWS = 1,
    /// Columns `[first, first + count)` of the last dimension of every row, packed in the
    /// destination: a strided read. With `[out, in]` weights, a rank's shard of a
    /// row-parallel layer (o, down: a slice of the inputs; the ranks' outputs are summed).
    ZT_SLICE_COLUMNS = 2,
    /// `[first, first + count)` of the component in storage order: decoded bytes, or
    /// values with `ZT_LOAD_CONVERT` (ggml blocks: whole blocks), as
    /// `zt_component_read_range` / `zt_component_read_as_range` read them.
    ZT_SLICE_RANGE = 3,
}

/// One request of `zt_loader_load`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_loader_request {
    /// The object's index.
    pub object: usize,
    /// The component's role; NULL means "data".
    pub role: *const c_char,
    /// Where the bytes go: a device address (or handle, `ZT_DEVICE_HANDLES`), or host
    /// memory with `ZT_LOAD_HOST`.
    pub dst: *mut c_void,
    /// Bytes into `dst` where the request's bytes start (what handle-based devices need;
    /// 0 with pointers).
    pub dst_offset: u64,
    /// Bytes the request fills: exactly the size of what it loads.
    pub dst_size: u64,
    /// `ZT_LOAD_HOST`, `ZT_LOAD_CONVERT`, `ZT_LOAD_VERIFY`, or-ed.
    pub flags: u32,
    /// With `ZT_LOAD_CONVERT`: the `zt_dtype` to convert every value into (or to
    /// dequantize ggml blocks into: f32, f16, bf16).
    pub dtype: u32,
    /// A `zt_slice` value.
    pub slice: u32,
    /// Out: the request's result, a `zt_status` value.
    pub status: u32,
    /// With `ZT_SLICE_ROWS` / `ZT_SLICE_COLUMNS`: the first row or column.
    pub first: u64,
    /// With `ZT_SLICE_ROWS` / `ZT_SLICE_COLUMNS`: how many rows or columns.
    pub count: u64,
    /// Out: bytes that landed in `dst` (`dst_size` on success).
    pub bytes: u64,
}

/// What a loader holds and has done (`zt_loader_get_stats`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zt_loader_stats {
    /// Staging buffers (0 without a device).
    pub staging_count: u64,
    /// The bytes of each staging buffer (0 without a device).
    pub staging_size: u64,
    /// 1 when the staging buffers are pinned (the device's, or registered with it).
    pub pinned: u32,
    /// Reader tasks of the last load.
    pub readers: u32,
    /// The most staging buffers filling or in flight at once.
    pub peak_busy: u64,
    /// The most scratch bytes one task held (at most `staging_size`).
    pub peak_scratch: u64,
    /// Copies issued (adjacent chunks merged into one).
    pub copies: u64,
    /// Direct reads (into the destination, without staging).
    pub direct_reads: u64,
    /// Loads run.
    pub loads: u64,
    /// Bytes landed in all of them.
    pub bytes: u64,
    /// The budget (`max_bytes_in_flight`, the default resolved).
    pub max_bytes_in_flight: u64,
    /// The most bytes held at once besides destinations over every load (staging,
    /// scratch, direct reads' buffers, components decoded whole): at most the budget.
    pub peak_bytes_in_flight: u64,
    /// File reads (or range requests) issued for raw bytes (neighbours merged into one).
    pub reads: u64,
    /// How many of `reads` were `O_DIRECT` reads.
    pub direct_io_reads: u64,
}

/// A host-only loader with the defaults. See `zt_loader_create_with`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_loader_create(out: *mut *mut zt_loader) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { zt_loader_create_with(std::ptr::null(), std::ptr::null(), out) }
}

/// Creates a loader. With `device` (its struct is copied; its `context` must stay valid
/// until `zt_loader_free`), device destinations go through `staging_count` staging
/// buffers of `staging_size` bytes, allocated here (pinned by the device's `host_alloc`,
/// or registered) with one event each; without (NULL), only host destinations
/// (`ZT_LOAD_HOST`) are loaded and nothing is allocated. `ZT_ERR_INVALID_ARGUMENT` for a
/// device struct without a required callback, unknown flags, a staging size under 64
/// KiB, fewer than 2 buffers; a failing allocation or event is the device's error.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_loader_create_with(
    device: *const zt_device,
    options: *const zt_loader_options,
    out: *mut *mut zt_loader,
) -> zt_status {
    guard(|| {
        need_out(out, "out")?;
        // SAFETY: NULL or a valid struct per the contract: integers, pointers, functions.
        let o = unsafe { read_options(options, "zt_loader_options") }?;
        let flags = o.map_or(0, |o| o.flags);
        let known = ZT_LOADER_VERIFY | ZT_LOADER_REGISTER_STAGING | ZT_LOADER_NO_QUEUE;
        if flags & !known != 0 {
            bail!(
                InvalidArgument,
                "unknown loader flags 0x{:x}",
                flags & !known
            );
        }
        let opts = LoaderOptions {
            readers: o.map_or(0, |o| o.readers as usize),
            staging_count: o.map_or(0, |o| o.staging_count as usize),
            staging_size: usize::try_from(o.map_or(0, |o| o.staging_size))
                .map_err(|_| crate::error::err!(InvalidArgument, "staging_size is too large"))?,
            verify: flags & ZT_LOADER_VERIFY != 0,
            max_bytes_in_flight: o.map_or(0, |o| o.max_bytes_in_flight),
            io: match o.map_or(0, |o| o.io) {
                0 => ReadMode::Auto,
                1 => ReadMode::Mmap,
                2 => ReadMode::Pread,
                3 => ReadMode::Direct,
                n => bail!(InvalidArgument, "unknown zt_io_mode value {n}"),
            },
            no_queue: flags & ZT_LOADER_NO_QUEUE != 0,
        };
        let staging = o.map_or(std::ptr::null(), |o| o.staging);
        let loader = match (device.is_null(), staging.is_null()) {
            (true, false) => bail!(InvalidArgument, "staging buffers given but no device"),
            (true, true) => Loader::new(None, &opts)?,
            (false, true) => Loader::new(Some(device_of(device)?), &opts)?,
            (false, false) => {
                let count = opts.staging_count;
                if count == 0 {
                    bail!(
                        InvalidArgument,
                        "staging buffers given but staging_count is 0"
                    );
                }
                // SAFETY: `count` pointers, per the contract.
                let given = unsafe { std::slice::from_raw_parts(staging, count) };
                let buffers = given
                    .iter()
                    .enumerate()
                    .map(|(i, &p)| {
                        NonNull::new(p.cast::<u8>()).ok_or_else(|| {
                            crate::error::err!(InvalidArgument, "staging buffer {i} is NULL")
                        })
                    })
                    .collect::<Result<Vec<_>>>()?;
                let register = flags & ZT_LOADER_REGISTER_STAGING != 0;
                // SAFETY: the caller's buffers of `staging_size` bytes, valid and theirs
                // alone until zt_loader_free, per the contract.
                unsafe { Loader::with_buffers(device_of(device)?, &opts, buffers, register)? }
            }
        };
        put(
            out,
            handles::give(zt_loader {
                shared: Arc::new(Shared {
                    loader,
                    on_complete: o.and_then(|o| o.on_complete),
                    on_progress: o.and_then(|o| o.on_progress),
                    user: o.map_or(std::ptr::null_mut(), |o| o.user),
                }),
            }),
        );
        Ok(())
    })
}

/// The device a `zt_device` stands for: the library's own CUDA backend used directly when
/// the struct is the one `zt_cuda_get_device` filled (nothing changed), else the caller's
/// callbacks.
fn device_of(device: *const zt_device) -> Result<Arc<dyn Device>> {
    let d = CDevice::new(device)?;
    Ok(match own_cuda(d.callbacks()) {
        Some(cuda) => cuda,
        None => Arc::new(d),
    })
}

/// Frees a loader: its staging buffers (yours are unregistered, not freed; those retired
/// after a failed event too: free the loader once the device finished the copies it
/// accepted, e.g. after synchronizing your stream) and events. NULL is fine. While a load
/// runs on it (or waits for its turn) on another thread, waits for those loads to end
/// first; from inside one of its loads (a callback), the loader is freed when that load
/// returns.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_loader_free(loader: *mut zt_loader) {
    // SAFETY: a handle of zt_loader_create*, freed once, per the contract; `Drop for
    // zt_loader` waits for the loads that still run on it.
    unsafe { handles::free(loader) }
}

fn loader_of<'l>(loader: *const zt_loader) -> Result<&'l zt_loader> {
    handles::get(loader)
}

/// The C callbacks as `LoadEvents`, with request indices mapped back to the caller's.
struct Callbacks<'a> {
    loader: &'a Shared,
    index: &'a [usize],
}

impl LoadEvents for Callbacks<'_> {
    fn completed(&self, request: usize, result: &Result<()>, bytes: u64) {
        if let Some(f) = self.loader.on_complete {
            let status = match result {
                Ok(()) => zt_status::ZT_OK,
                Err(e) => e.kind().into(),
            };
            // SAFETY: the caller's callback and its user pointer.
            unsafe { f(self.loader.user, self.index[request], status, bytes) };
        }
    }

    fn progress(&self, done: u64, total: u64) {
        if let Some(f) = self.loader.on_progress {
            // SAFETY: the caller's callback and its user pointer.
            unsafe { f(self.loader.user, done, total) };
        }
    }
}

/// What a C request asks for: the component (role looked up), the slice and the
/// conversion (flags, slice and dtype checked).
fn what(r: &zt_reader, q: &zt_loader_request) -> Result<(usize, Slice, Option<DType>)> {
    let component = if q.role.is_null() {
        find_component(r, q.object, c"data".as_ptr())?
    } else {
        find_component(r, q.object, q.role)?
    };
    let known = ZT_LOAD_HOST | super::ZT_LOAD_CONVERT | ZT_LOAD_VERIFY;
    if q.flags & !known != 0 {
        bail!(
            InvalidArgument,
            "unknown load flags 0x{:x}",
            q.flags & !known
        );
    }
    let (first, count) = (q.first, q.count);
    let slice = match q.slice {
        s if s == zt_slice::ZT_SLICE_WHOLE as u32 => Slice::Whole,
        s if s == zt_slice::ZT_SLICE_ROWS as u32 => Slice::Rows { first, count },
        s if s == zt_slice::ZT_SLICE_COLUMNS as u32 => Slice::Columns { first, count },
        s if s == zt_slice::ZT_SLICE_RANGE as u32 => Slice::Range { first, count },
        s => bail!(InvalidArgument, "unknown slice value {s}"),
    };
    let convert = match q.flags & super::ZT_LOAD_CONVERT {
        0 => None,
        _ => Some(need_dtype(q.dtype)?),
    };
    Ok((component, slice, convert))
}

/// The library request of a C one: role looked up, flags, slice, dtype and destination
/// checked.
fn request<'d>(r: &zt_reader, q: &zt_loader_request) -> Result<Request<'d>> {
    let (component, slice, convert) = what(r, q)?;
    let dst = if q.flags & ZT_LOAD_HOST != 0 {
        let size = usize::try_from(q.dst_size)
            .map_err(|_| crate::error::err!(InvalidArgument, "dst_size is too large"))?;
        let bytes = super::need_bytes_mut(q.dst, size, "dst")?;
        // The offset moves the start inside the caller's memory.
        if q.dst_offset != 0 {
            bail!(
                InvalidArgument,
                "dst_offset is for device destinations; point dst at the place"
            );
        }
        Destination::Host(bytes)
    } else {
        if q.dst.is_null() && q.dst_size > 0 {
            bail!(
                InvalidArgument,
                "dst is NULL but dst_size is {}",
                q.dst_size
            );
        }
        if q.dst_offset.checked_add(q.dst_size).is_none() {
            bail!(
                InvalidArgument,
                "dst_offset {} + dst_size {} overflows 64 bits",
                q.dst_offset,
                q.dst_size
            );
        }
        Destination::Device {
            address: q.dst as usize as u64,
            offset: q.dst_offset,
            len: q.dst_size,
        }
    };
    Ok(Request {
        object: q.object,
        component,
        slice,
        convert,
        verify: q.flags & ZT_LOAD_VERIFY != 0,
        dst,
    })
}

/// Loads `count` requests from `reader`, pipelined: reader tasks on the library's pool
/// read (and decode, convert, dequantize, gather columns) chunks of at most `staging_size`
/// bytes, into a staging buffer whose copy to the device is issued asynchronously while
/// the next chunks are read, or straight into host memory (`ZT_LOAD_HOST`). Returns once
/// every request ended and no copy is in flight: each `status` and `bytes` is set, and
/// `on_complete` was called once for each. `ZT_OK` when all succeeded, else the status of
/// the first failed request in array order (`ZT_ERR_CANCELED` after `zt_loader_cancel`),
/// whose message `zt_last_error()` gives, prefixed "request <i>: ". A failed request
/// doesn't stop the others. `ZT_ERR_STATE` when a load already runs on this loader (from a
/// callback, or another thread). The destinations must not overlap.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_loader_load(
    loader: *mut zt_loader,
    reader: *const zt_reader,
    requests: *mut zt_loader_request,
    count: usize,
) -> zt_status {
    guard(|| {
        // The load's own reference: a free from inside it (a callback) leaves the loader
        // to it until it returns.
        let l = loader_of(loader)?.shared.clone();
        let l = &*l;
        let r = self::reader(reader)?;
        if count == 0 {
            return Ok(());
        }
        if requests.is_null() {
            bail!(InvalidArgument, "requests is NULL but count is {count}");
        }
        // SAFETY: `count` requests, per the contract.
        let requests = unsafe { std::slice::from_raw_parts_mut(requests, count) };
        let mut errors: Vec<(usize, Error)> = Vec::new();
        let mut index = Vec::with_capacity(count);
        let mut resolved = Vec::with_capacity(count);
        for (i, q) in requests.iter_mut().enumerate() {
            q.status = zt_status::ZT_OK as u32;
            q.bytes = 0;
            match request(r, q) {
                Ok(req) => {
                    index.push(i);
                    resolved.push(req);
                }
                Err(e) => {
                    let e = e.context(format_args!("request {i}"));
                    if let Some(f) = l.on_complete {
                        // SAFETY: the caller's callback and its user pointer.
                        unsafe { f(l.user, i, e.kind().into(), 0) };
                    }
                    errors.push((i, e));
                }
            }
        }
        let events = Callbacks {
            loader: l,
            index: &index,
        };
        let results = l.loader.load(r.inner(), &mut resolved, &events);
        drop(resolved);
        for (k, (result, bytes)) in results.into_iter().enumerate() {
            let i = index[k];
            requests[i].bytes = bytes;
            if let Err(e) = result {
                errors.push((i, e.context(format_args!("request {i}"))));
            }
        }
        for (i, e) in &errors {
            requests[*i].status = e.kind().code();
        }
        match errors.into_iter().min_by_key(|(i, _)| *i) {
            None => Ok(()),
            Some((_, e)) => Err(e),
        }
    })
}

/// Stops the load running on `loader`, or the next one if none runs: no new chunk starts,
/// copies in flight finish, and requests not done end with `ZT_ERR_CANCELED`. Thread-safe:
/// the one call that may run at the same time as `zt_loader_load` on the same loader, e.g.
/// from another thread or from a callback.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_loader_cancel(loader: *mut zt_loader) -> zt_status {
    guard(|| {
        loader_of(loader)?.shared.loader.cancel();
        Ok(())
    })
}

/// What the loader holds and has done, into `*out`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_loader_get_stats(
    loader: *const zt_loader,
    out: *mut zt_loader_stats,
) -> zt_status {
    guard(|| {
        let l = loader_of(loader)?;
        need_out(out, "out")?;
        let s = l.shared.loader.stats();
        put(
            out,
            zt_loader_stats {
                staging_count: s.staging_count as u64,
                staging_size: s.staging_size as u64,
                pinned: s.pinned as u32,
                readers: s.readers as u32,
                peak_busy: s.peak_busy as u64,
                peak_scratch: s.peak_scratch as u64,
                copies: s.copies,
                direct_reads: s.direct_reads,
                loads: s.loads,
                bytes: s.bytes,
                max_bytes_in_flight: s.max_bytes_in_flight,
                peak_bytes_in_flight: s.peak_bytes_in_flight,
                reads: s.reads,
                direct_io_reads: s.direct_io_reads,
            },
        );
        Ok(())
    })
}

/// The exact `dst_size` of `request` (its object, role, `slice`, `first`, `count`, flags and
/// `dtype`; `dst`, `dst_offset` and `dst_size` are not read) into `*size`: what a slice of
/// rows or columns, a range, or a conversion (ggml blocks dequantized included) fills.
/// The same checks as a load's, so a request this accepts fails a load only for its
/// destination or its bytes. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_loader_get_request_size(
    reader: *const zt_reader,
    request: *const zt_loader_request,
    size: *mut u64,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(size, "size")?;
        // SAFETY: NULL or a valid request, per the contract.
        let q = unsafe { request.as_ref() }
            .ok_or_else(|| crate::error::err!(InvalidArgument, "request is NULL"))?;
        let (component, slice, convert) = what(r, q)?;
        put(
            size,
            crate::load::dst_size(r.inner(), q.object, component, slice, convert)?,
        );
        Ok(())
    })
}
