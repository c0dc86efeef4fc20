//! C ABI: the device side of the loader (`zt_device`, a versioned struct of callbacks that
//! any runtime fills), and the CUDA backend the library provides (`zt_cuda`), which fills
//! one from the CUDA driver loaded at run time.

use std::ffi::{CStr, c_char, c_int, c_void};
use std::ptr::NonNull;
use std::sync::Arc;

use super::handles::{self, Boxed, Handle};
use super::{guard, need_out, put, zt_status};
use crate::error::{Error, Result, bail, err};
use crate::load::cuda::{Cuda, CudaOptions};
use crate::load::{Device, Event};

/// `zt_device.flags`: destinations are handles, not addresses (Vulkan buffers): the loader
/// merges copies only to the same `dst` at adjacent offsets, never by adding offsets to
/// `dst`. Without it (CUDA, HIP device pointers) `dst + offset` is an address.
pub const ZT_DEVICE_HANDLES: u32 = 1;

/// What the loader needs from device memory, as callbacks of the caller's runtime (CUDA,
/// HIP, Vulkan, Metal, or a CPU "device"); the library links none of them.
/// `zt_cuda_get_device` fills one for CUDA.
///
/// Every callback gets `context` first and returns 0 on success, anything else on failure
/// (the runtime's error code: the request concerned fails with `ZT_ERR_IO` and a message
/// naming the callback, the code and `error_string`'s text). Required: `copy_async`,
/// `event_create`, `event_destroy`, `event_record`, `event_query`; the others may be NULL.
///
/// Threads: the loader calls these from its reader tasks, several threads, but never two
/// at once, except `event_wait` and `read_direct`, which it calls without that lock
/// (one thread may block in them while another issues copies). It never calls
/// `event_record` or `event_query` on an event while `event_wait` waits for it.
///
/// Growth: set `struct_size` to `sizeof(zt_device)` (0 means the size of this header's
/// struct); a smaller size from an older header is fine (the callbacks it lacks are NULL),
/// a larger one must have zeros past the fields this library knows.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_device {
    /// `sizeof(zt_device)`.
    pub struct_size: u32,
    /// `ZT_DEVICE_*` flags, or-ed.
    pub flags: u32,
    /// Passed to every callback; the runtime's state (and the stream copies go on).
    pub context: *mut c_void,
    /// Optional: `*out` = `size` bytes of pinned (page-locked) host memory for a staging
    /// buffer. Without it, the loader allocates and offers its memory to `host_register`.
    pub host_alloc: Option<
        unsafe extern "C" fn(context: *mut c_void, size: usize, out: *mut *mut c_void) -> c_int,
    >,
    /// Optional (required with `host_alloc`): frees what `host_alloc` returned.
    pub host_free:
        Option<unsafe extern "C" fn(context: *mut c_void, ptr: *mut c_void, size: usize) -> c_int>,
    /// Optional: pins `size` bytes of host memory at `ptr`.
    pub host_register:
        Option<unsafe extern "C" fn(context: *mut c_void, ptr: *mut c_void, size: usize) -> c_int>,
    /// Optional (required with `host_register`): undoes `host_register`.
    pub host_unregister:
        Option<unsafe extern "C" fn(context: *mut c_void, ptr: *mut c_void) -> c_int>,
    /// Starts copying `size` bytes from host memory `src` to `dst` at byte `offset`
    /// (an address: `(char *)dst + offset`; a handle with `ZT_DEVICE_HANDLES`), on the
    /// stream the context names, and returns. `src` stays valid and unchanged until an
    /// event recorded after this call is done.
    pub copy_async: Option<
        unsafe extern "C" fn(
            context: *mut c_void,
            dst: *mut c_void,
            offset: u64,
            src: *const c_void,
            size: usize,
        ) -> c_int,
    >,
    /// `*out` = a new event (one per staging buffer, made when the loader is).
    pub event_create:
        Option<unsafe extern "C" fn(context: *mut c_void, out: *mut *mut c_void) -> c_int>,
    /// Destroys an event (when the loader is freed).
    pub event_destroy:
        Option<unsafe extern "C" fn(context: *mut c_void, event: *mut c_void) -> c_int>,
    /// Records `event` after the copies issued so far (on the same stream).
    pub event_record:
        Option<unsafe extern "C" fn(context: *mut c_void, event: *mut c_void) -> c_int>,
    /// `*done` = 1 when everything before the event's last record is done, else 0.
    pub event_query: Option<
        unsafe extern "C" fn(context: *mut c_void, event: *mut c_void, done: *mut c_int) -> c_int,
    >,
    /// Optional: blocks until `event` is done (else the loader polls `event_query`).
    pub event_wait: Option<unsafe extern "C" fn(context: *mut c_void, event: *mut c_void) -> c_int>,
    /// Optional: reads `size` bytes at `file_offset` of the open file `fd` straight into
    /// `dst` at `offset` (GPUDirect Storage through cuFile, hipFile): done when it returns,
    /// or queued on the stream so that an event recorded after it covers it. `*handled` = 0
    /// declines (the loader then reads through staging). Only for raw bytes loaded as they
    /// are, unchecked; called from several threads at once.
    pub read_direct: Option<
        unsafe extern "C" fn(
            context: *mut c_void,
            fd: c_int,
            file_offset: u64,
            dst: *mut c_void,
            offset: u64,
            size: usize,
            handled: *mut c_int,
        ) -> c_int,
    >,
    /// Optional: a message for an error code of the callbacks (static or the context's).
    pub error_string:
        Option<unsafe extern "C" fn(context: *mut c_void, code: c_int) -> *const c_char>,
}

/// The largest `struct_size` a caller's struct may claim: bytes past the fields this
/// library knows must be zeros up to it; a larger size is refused without reading past
/// what the library knows (a garbage size such as 0xFFFFFFFF must not make it read
/// beyond the caller's struct).
pub const ZT_STRUCT_SIZE_MAX: u32 = 1024;

/// Reads a caller's versioned struct (`struct_size` first, a `u32`): as many bytes as it
/// says (0: all of ours) into a zero-filled `T`; bytes past ours must be zero, and a size
/// over `ZT_STRUCT_SIZE_MAX` is `InvalidArgument`.
/// `read_options` is the same for an optional struct (NULL: None).
///
/// # Safety
/// `ptr` points to at least `struct_size` readable bytes (or `size_of::<T>()` when 0), and
/// every field of `T` is valid when zero (integers, pointers, optional functions).
pub(super) unsafe fn read_options<T: Copy>(ptr: *const T, what: &str) -> Result<Option<T>> {
    if ptr.is_null() {
        return Ok(None);
    }
    // SAFETY: forwarded contract.
    unsafe { read_versioned(ptr, what) }.map(Some)
}

/// `read_options` of a struct that must be there (`ptr` not NULL).
pub(super) unsafe fn read_versioned<T: Copy>(ptr: *const T, what: &str) -> Result<T> {
    let ours = std::mem::size_of::<T>();
    // SAFETY: the struct starts with its u32 size, per the contract.
    let size = match unsafe { ptr.cast::<u32>().read_unaligned() } as usize {
        0 => ours,
        n if n < 4 => bail!(
            InvalidArgument,
            "{what}.struct_size is {n}, smaller than itself"
        ),
        n if n > ZT_STRUCT_SIZE_MAX as usize => bail!(
            InvalidArgument,
            "{what}.struct_size is {n}, more than any version of the struct may be \
             ({ZT_STRUCT_SIZE_MAX}; this library's is {ours})"
        ),
        n => n,
    };
    // SAFETY: every field of T is valid when zero (the caller's promise).
    let mut out: T = unsafe { std::mem::zeroed() };
    let n = size.min(ours);
    // SAFETY: `n` readable bytes at `ptr`, and `out` has `ours >= n` bytes.
    unsafe { std::ptr::copy_nonoverlapping(ptr.cast::<u8>(), (&raw mut out).cast::<u8>(), n) };
    if size > ours {
        // SAFETY: the caller's struct has `size` readable bytes.
        let extra = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>().add(ours), size - ours) };
        if extra.iter().any(|&b| b != 0) {
            bail!(
                Unsupported,
                "{what} has fields this library ({} bytes of it) doesn't know, set: a newer \
                 header than the library",
                ours
            );
        }
    }
    // The size this library read, whatever the caller wrote.
    // SAFETY: T starts with its u32 size (the caller's promise).
    unsafe { (&raw mut out).cast::<u32>().write_unaligned(n as u32) };
    Ok(out)
}

/// A `zt_device` as a `Device`.
pub(super) struct CDevice(zt_device);

// SAFETY: the callbacks' contract: the loader serializes all but `event_wait` and
// `read_direct`, which the runtime allows from any thread.
unsafe impl Send for CDevice {}
// SAFETY: as above.
unsafe impl Sync for CDevice {}

impl CDevice {
    /// Checks a caller's struct: its size, flags and the required callbacks.
    pub(super) fn new(device: *const zt_device) -> Result<CDevice> {
        // SAFETY: NULL was checked by the caller; a valid struct per the contract, whose
        // fields are integers, a pointer and optional functions.
        let d = unsafe { read_versioned(device, "the zt_device") }?;
        if d.flags & !ZT_DEVICE_HANDLES != 0 {
            bail!(
                InvalidArgument,
                "unknown zt_device flags 0x{:x}",
                d.flags & !ZT_DEVICE_HANDLES
            );
        }
        let required = [
            ("copy_async", d.copy_async.is_some()),
            ("event_create", d.event_create.is_some()),
            ("event_destroy", d.event_destroy.is_some()),
            ("event_record", d.event_record.is_some()),
            ("event_query", d.event_query.is_some()),
            (
                "host_free (with host_alloc)",
                d.host_alloc.is_none() || d.host_free.is_some(),
            ),
            (
                "host_unregister (with host_register)",
                d.host_register.is_none() || d.host_unregister.is_some(),
            ),
        ];
        if let Some((name, _)) = required.iter().find(|(_, ok)| !ok) {
            bail!(InvalidArgument, "the zt_device has no {name} callback");
        }
        Ok(CDevice(d))
    }

    /// An error for a callback's failure code.
    fn fail(&self, callback: &str, code: c_int) -> Error {
        let text = self
            .0
            .error_string
            // SAFETY: the runtime's callback, with its own context.
            .map(|f| unsafe { f(self.0.context, code) })
            .filter(|p| !p.is_null())
            // SAFETY: a NUL-terminated string, per the callback's contract.
            .map(|p| unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned());
        match text {
            Some(t) => err!(Io, "the device's {callback} failed: {t} (code {code})"),
            None => err!(Io, "the device's {callback} failed with code {code}"),
        }
    }

    fn check(&self, callback: &str, code: c_int) -> Result<()> {
        match code {
            0 => Ok(()),
            c => Err(self.fail(callback, c)),
        }
    }

    /// The struct, as checked.
    pub(super) fn callbacks(&self) -> &zt_device {
        &self.0
    }
}

/// The library's CUDA backend behind `d`, when `d` is exactly what `zt_cuda_get_device`
/// filled (the same callbacks and flags): a loader then uses the backend itself, not its
/// callbacks (no round trip through C). A struct with any callback replaced is the
/// caller's device.
pub(super) fn own_cuda(d: &zt_device) -> Option<Arc<dyn Device>> {
    let ours = cuda_callbacks(d.context);
    let same = d.flags == ours.flags
        && same_fn(d.host_alloc, ours.host_alloc)
        && same_fn(d.host_free, ours.host_free)
        && same_fn(d.host_register, ours.host_register)
        && same_fn(d.host_unregister, ours.host_unregister)
        && same_fn(d.copy_async, ours.copy_async)
        && same_fn(d.event_create, ours.event_create)
        && same_fn(d.event_destroy, ours.event_destroy)
        && same_fn(d.event_record, ours.event_record)
        && same_fn(d.event_query, ours.event_query)
        && same_fn(d.event_wait, ours.event_wait)
        && d.read_direct.is_none()
        && same_fn(d.error_string, ours.error_string);
    if !same || d.context.is_null() {
        return None;
    }
    // SAFETY: the context of our own callbacks is a live zt_cuda (the caller's promise:
    // it outlives the loader; the loader now shares its backend besides).
    let handle = unsafe { &*d.context.cast::<zt_cuda>() };
    Some(handle.cuda.clone())
}

/// Two optional function pointers, compared by address.
fn same_fn<F: Copy>(a: Option<F>, b: Option<F>) -> bool {
    match (a, b) {
        (None, None) => true,
        // SAFETY: both are function pointers of the same type (`F`), read as addresses.
        (Some(a), Some(b)) => unsafe {
            std::mem::transmute_copy::<F, usize>(&a) == std::mem::transmute_copy::<F, usize>(&b)
        },
        _ => false,
    }
}

fn event_ptr(e: Event) -> *mut c_void {
    e.0 as usize as *mut c_void
}

impl Device for CDevice {
    fn linear_addresses(&self) -> bool {
        self.0.flags & ZT_DEVICE_HANDLES == 0
    }

    fn host_alloc(&self, size: usize) -> Result<Option<NonNull<u8>>> {
        let Some(f) = self.0.host_alloc else {
            return Ok(None);
        };
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: the runtime's callback with a valid out-pointer.
        self.check("host_alloc", unsafe { f(self.0.context, size, &mut out) })?;
        NonNull::new(out.cast())
            .map(Some)
            .ok_or_else(|| err!(Io, "the device's host_alloc returned NULL for {size} bytes"))
    }

    fn host_free(&self, ptr: NonNull<u8>, size: usize) {
        if let Some(f) = self.0.host_free {
            // SAFETY: memory of its host_alloc.
            unsafe { f(self.0.context, ptr.as_ptr().cast(), size) };
        }
    }

    fn host_register(&self, ptr: NonNull<u8>, size: usize) -> Result<bool> {
        let Some(f) = self.0.host_register else {
            return Ok(false);
        };
        // SAFETY: `size` bytes of the loader's (or the caller's staging) at `ptr`.
        self.check("host_register", unsafe {
            f(self.0.context, ptr.as_ptr().cast(), size)
        })?;
        Ok(true)
    }

    fn host_unregister(&self, ptr: NonNull<u8>) {
        if let Some(f) = self.0.host_unregister {
            // SAFETY: memory registered by host_register.
            unsafe { f(self.0.context, ptr.as_ptr().cast()) };
        }
    }

    unsafe fn copy_async(&self, dst: u64, offset: u64, src: *const u8, len: usize) -> Result<()> {
        let f = self.0.copy_async.expect("checked at creation");
        // SAFETY: the trait's contract, passed on.
        let code = unsafe {
            f(
                self.0.context,
                dst as usize as *mut c_void,
                offset,
                src.cast(),
                len,
            )
        };
        self.check("copy_async", code)
    }

    fn event_create(&self) -> Result<Event> {
        let f = self.0.event_create.expect("checked at creation");
        let mut out: *mut c_void = std::ptr::null_mut();
        // SAFETY: the runtime's callback with a valid out-pointer.
        self.check("event_create", unsafe { f(self.0.context, &mut out) })?;
        Ok(Event(out as usize as u64))
    }

    fn event_destroy(&self, event: Event) {
        let f = self.0.event_destroy.expect("checked at creation");
        // SAFETY: an event of event_create.
        unsafe { f(self.0.context, event_ptr(event)) };
    }

    fn event_record(&self, event: Event) -> Result<()> {
        let f = self.0.event_record.expect("checked at creation");
        // SAFETY: an event of event_create.
        self.check("event_record", unsafe {
            f(self.0.context, event_ptr(event))
        })
    }

    fn event_query(&self, event: Event) -> Result<bool> {
        let f = self.0.event_query.expect("checked at creation");
        let mut done: c_int = 0;
        // SAFETY: an event of event_create, a valid out-pointer.
        self.check("event_query", unsafe {
            f(self.0.context, event_ptr(event), &mut done)
        })?;
        Ok(done != 0)
    }

    fn event_wait(&self, event: Event) -> Option<Result<()>> {
        let f = self.0.event_wait?;
        // SAFETY: an event of event_create.
        Some(self.check("event_wait", unsafe { f(self.0.context, event_ptr(event)) }))
    }

    fn has_direct_read(&self) -> bool {
        self.0.read_direct.is_some()
    }

    fn read_direct(
        &self,
        fd: i32,
        file_offset: u64,
        dst: u64,
        offset: u64,
        len: usize,
    ) -> Result<bool> {
        let Some(f) = self.0.read_direct else {
            return Ok(false);
        };
        let mut handled: c_int = 0;
        // SAFETY: the runtime's callback; the destination range is the caller's.
        let code = unsafe {
            f(
                self.0.context,
                fd,
                file_offset,
                dst as usize as *mut c_void,
                offset,
                len,
                &mut handled,
            )
        };
        self.check("read_direct", code)?;
        Ok(handled != 0)
    }
}

// --- the CUDA backend -----------------------------------------------------------------------

/// The CUDA backend: the CUDA driver (`libcuda.so.1`) loaded at run time, a device's
/// primary context and a stream. Opaque; free with `zt_cuda_free`.
pub struct zt_cuda {
    cuda: Arc<Cuda>,
}

impl Handle for zt_cuda {
    const NAME: &'static str = "cuda";
    type Owned = Boxed;
    type Target = zt_cuda;
}

/// Options of `zt_cuda_create_with`; zero-filled or NULL for the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_cuda_options {
    /// `sizeof(zt_cuda_options)` (0: this header's size).
    pub struct_size: u32,
    /// The GPU's ordinal (0: the first).
    pub device: i32,
    /// The stream copies are issued on (a `cudaStream_t` / `CUstream`), e.g. the one your
    /// kernels run on; NULL: a non-blocking stream the backend makes and owns.
    pub stream: *mut c_void,
    /// The driver library to load instead of `libcuda.so.1` (a path or a file name), or
    /// NULL.
    pub library: *const c_char,
}

/// Opens the CUDA backend with the defaults: device 0, a stream of its own. See
/// `zt_cuda_create_with`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_cuda_create(out: *mut *mut zt_cuda) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { zt_cuda_create_with(std::ptr::null(), out) }
}

/// Opens the CUDA backend: loads the CUDA driver with `dlopen` (no CUDA toolkit is needed
/// to build or link the library), initializes it, and retains the device's primary
/// context (the one the CUDA runtime and PyTorch use, so their device pointers work as
/// destinations). `ZT_ERR_UNSUPPORTED` when no driver library loads or it finds no GPU,
/// with a message saying which; `ZT_ERR_INVALID_ARGUMENT` for a device ordinal the driver
/// doesn't have. Free with `zt_cuda_free` after every loader made with its device.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_cuda_create_with(
    options: *const zt_cuda_options,
    out: *mut *mut zt_cuda,
) -> zt_status {
    guard(|| {
        need_out(out, "out")?;
        // SAFETY: NULL or a valid struct per the contract; integers and pointers.
        let o = unsafe { read_options(options, "zt_cuda_options") }?;
        let library = o.map(|o| o.library).filter(|p| !p.is_null()).map(|p| {
            // SAFETY: NUL-terminated, per the contract.
            unsafe { CStr::from_ptr(p) }.to_string_lossy().into_owned()
        });
        let cuda = Cuda::open(&CudaOptions {
            device: o.map_or(0, |o| o.device),
            stream: o.map_or(0, |o| o.stream as usize as u64),
            library,
        })?;
        put(
            out,
            handles::give(zt_cuda {
                cuda: Arc::new(cuda),
            }),
        );
        Ok(())
    })
}

/// Closes the CUDA backend (destroys its own stream, releases the context). NULL is fine.
/// Every loader made with its device must be freed first.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_cuda_free(cuda: *mut zt_cuda) {
    // SAFETY: a handle of zt_cuda_create*, freed once, per the contract.
    unsafe { handles::free(cuda) }
}

fn cuda_of<'c>(cuda: *const zt_cuda) -> Result<&'c Cuda> {
    handles::get(cuda).map(|c| c.cuda.as_ref())
}

/// Fills `*out` with the backend's callbacks (pinned memory, copies on its stream,
/// events; no direct reads), for `zt_loader_create_with`, which recognizes them and uses
/// the backend directly (a struct with a callback replaced is used through its
/// callbacks). Valid while `cuda` lives.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_cuda_get_device(
    cuda: *const zt_cuda,
    out: *mut zt_device,
) -> zt_status {
    guard(|| {
        handles::get(cuda)?;
        need_out(out, "out")?;
        put(out, cuda_callbacks(cuda.cast_mut().cast()));
        Ok(())
    })
}

/// The callbacks of the CUDA backend whose handle is `context`.
fn cuda_callbacks(context: *mut c_void) -> zt_device {
    zt_device {
        struct_size: std::mem::size_of::<zt_device>() as u32,
        flags: 0,
        context,
        host_alloc: Some(cuda_host_alloc),
        host_free: Some(cuda_host_free),
        host_register: Some(cuda_host_register),
        host_unregister: Some(cuda_host_unregister),
        copy_async: Some(cuda_copy_async),
        event_create: Some(cuda_event_create),
        event_destroy: Some(cuda_event_destroy),
        event_record: Some(cuda_event_record),
        event_query: Some(cuda_event_query),
        event_wait: Some(cuda_event_wait),
        read_direct: None,
        error_string: Some(cuda_error_string),
    }
}

/// `size` bytes of device memory (`cuMemAlloc`) into `*out`, for programs without the
/// CUDA headers (the docs' walkthrough, tests). Free with `zt_cuda_free_memory`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_cuda_alloc_memory(
    cuda: *const zt_cuda,
    size: usize,
    out: *mut *mut c_void,
) -> zt_status {
    guard(|| {
        let c = cuda_of(cuda)?;
        need_out(out, "out")?;
        put(out, c.alloc(size)? as usize as *mut c_void);
        Ok(())
    })
}

/// Frees device memory of `zt_cuda_alloc_memory`. NULL is fine.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_cuda_free_memory(cuda: *const zt_cuda, ptr: *mut c_void) -> zt_status {
    guard(|| {
        let c = cuda_of(cuda)?;
        if ptr.is_null() {
            return Ok(());
        }
        c.free(ptr as usize as u64)
    })
}

/// Copies `size` bytes of device memory at `src` into host memory `dst`, after the work
/// issued on the backend's stream so far (blocks): for checking what a load wrote.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_cuda_copy_to_host(
    cuda: *const zt_cuda,
    dst: *mut c_void,
    src: *const c_void,
    size: usize,
) -> zt_status {
    guard(|| {
        let c = cuda_of(cuda)?;
        let dst = super::need_bytes_mut(dst, size, "dst")?;
        if size > 0 && src.is_null() {
            bail!(InvalidArgument, "src is NULL but size is {size}");
        }
        c.copy_to_host(dst, src as usize as u64)
    })
}

/// Waits for everything issued on the backend's stream.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_cuda_synchronize(cuda: *const zt_cuda) -> zt_status {
    guard(|| cuda_of(cuda)?.synchronize())
}

// The callbacks zt_cuda_get_device hands out: `context` is the zt_cuda handle (whose
// `Cuda` they call). Each returns 0, or 1 with the message kept for
// `error_string` (errors are rare and the loader asks right away, on the same thread).

thread_local! {
    static CUDA_ERROR: std::cell::RefCell<std::ffi::CString> = std::cell::RefCell::new(std::ffi::CString::default());
}

fn cuda_result(r: Result<()>) -> c_int {
    match r {
        Ok(()) => 0,
        Err(e) => {
            let text = std::ffi::CString::new(e.message().replace('\0', "?")).unwrap_or_default();
            CUDA_ERROR.with(|m| *m.borrow_mut() = text);
            1
        }
    }
}

/// The backend behind a callback's context.
///
/// # Safety
/// `context` is what `zt_cuda_get_device` put in the struct, and its zt_cuda lives.
unsafe fn backend<'c>(context: *mut c_void) -> &'c Cuda {
    // SAFETY: per the function's contract.
    unsafe { &(*context.cast::<zt_cuda>()).cuda }
}

unsafe extern "C" fn cuda_host_alloc(
    context: *mut c_void,
    size: usize,
    out: *mut *mut c_void,
) -> c_int {
    // SAFETY: the context of zt_cuda_get_device.
    let c = unsafe { backend(context) };
    cuda_result(c.host_alloc(size).map(|p| {
        // SAFETY: the loader's valid out-pointer.
        unsafe { *out = p.map_or(std::ptr::null_mut(), |p| p.as_ptr().cast()) };
    }))
}

unsafe extern "C" fn cuda_host_free(context: *mut c_void, ptr: *mut c_void, size: usize) -> c_int {
    if let Some(p) = NonNull::new(ptr.cast()) {
        // SAFETY: the context of zt_cuda_get_device.
        unsafe { backend(context) }.host_free(p, size);
    }
    0
}

unsafe extern "C" fn cuda_host_register(
    context: *mut c_void,
    ptr: *mut c_void,
    size: usize,
) -> c_int {
    let Some(p) = NonNull::new(ptr.cast()) else {
        return cuda_result(Err(err!(InvalidArgument, "host_register of NULL")));
    };
    // SAFETY: the context of zt_cuda_get_device.
    cuda_result(
        unsafe { backend(context) }
            .host_register(p, size)
            .map(|_| ()),
    )
}

unsafe extern "C" fn cuda_host_unregister(context: *mut c_void, ptr: *mut c_void) -> c_int {
    if let Some(p) = NonNull::new(ptr.cast()) {
        // SAFETY: the context of zt_cuda_get_device.
        unsafe { backend(context) }.host_unregister(p);
    }
    0
}

unsafe extern "C" fn cuda_copy_async(
    context: *mut c_void,
    dst: *mut c_void,
    offset: u64,
    src: *const c_void,
    size: usize,
) -> c_int {
    // SAFETY: the context of zt_cuda_get_device; the loader's promise about `src`.
    cuda_result(unsafe {
        backend(context).copy_async(dst as usize as u64, offset, src.cast(), size)
    })
}

unsafe extern "C" fn cuda_event_create(context: *mut c_void, out: *mut *mut c_void) -> c_int {
    // SAFETY: the context of zt_cuda_get_device.
    cuda_result(unsafe { backend(context) }.event_create().map(|e| {
        // SAFETY: the loader's valid out-pointer.
        unsafe { *out = event_ptr(e) };
    }))
}

unsafe extern "C" fn cuda_event_destroy(context: *mut c_void, event: *mut c_void) -> c_int {
    // SAFETY: the context of zt_cuda_get_device.
    unsafe { backend(context) }.event_destroy(Event(event as usize as u64));
    0
}

unsafe extern "C" fn cuda_event_record(context: *mut c_void, event: *mut c_void) -> c_int {
    // SAFETY: the context of zt_cuda_get_device.
    cuda_result(unsafe { backend(context) }.event_record(Event(event as usize as u64)))
}

unsafe extern "C" fn cuda_event_query(
    context: *mut c_void,
    event: *mut c_void,
    done: *mut c_int,
) -> c_int {
    // SAFETY: the context of zt_cuda_get_device.
    cuda_result(
        unsafe { backend(context) }
            .event_query(Event(event as usize as u64))
            .map(|d| {
                // SAFETY: the loader's valid out-pointer.
                unsafe { *done = d as c_int };
            }),
    )
}

unsafe extern "C" fn cuda_event_wait(context: *mut c_void, event: *mut c_void) -> c_int {
    // SAFETY: the context of zt_cuda_get_device.
    let r = unsafe { backend(context) }.event_wait(Event(event as usize as u64));
    cuda_result(r.unwrap_or(Ok(())))
}

unsafe extern "C" fn cuda_error_string(_context: *mut c_void, _code: c_int) -> *const c_char {
    CUDA_ERROR.with(|m| m.borrow().as_ptr())
}
