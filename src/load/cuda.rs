//! The CUDA backend: a `Device` over the CUDA driver API, loaded at run time with
//! `dlopen` (`libcuda.so.1`, installed with the NVIDIA driver), so the library builds
//! without the CUDA toolkit and runs where there is no GPU (opening the backend then says
//! so, `Unsupported`). Uses the device's primary context, the one the CUDA runtime (and so
//! PyTorch) uses: device pointers of either work here. Every call pushes that context on
//! the calling thread and pops it again, so a caller's own current context is left alone.

use std::ffi::{CStr, CString, c_char, c_int, c_uint, c_void};
use std::ptr::NonNull;

use crate::error::{Error, Result, bail, err};

use super::device::{Device, Event};

type CuResult = c_int;
type CuDevice = c_int;
type CuContext = *mut c_void;
type CuStream = *mut c_void;
type CuEvent = *mut c_void;
type CuDevicePtr = u64;

const CUDA_SUCCESS: CuResult = 0;
const CUDA_ERROR_NOT_READY: CuResult = 600;
const CU_MEMHOSTALLOC_PORTABLE: c_uint = 0x01;
const CU_MEMHOSTREGISTER_PORTABLE: c_uint = 0x01;
const CU_STREAM_NON_BLOCKING: c_uint = 0x01;
const CU_EVENT_DISABLE_TIMING: c_uint = 0x02;

/// Declares the driver functions the backend uses: the struct of pointers and the code
/// that resolves each by its exported name (the `_v2` names the header maps to).
macro_rules! driver_api {
    ($( $field:ident = $symbol:literal : fn($($arg:ty),*); )*) => {
        #[allow(non_snake_case)]
        struct Api {
            $( $field: unsafe extern "C" fn($($arg),*) -> CuResult, )*
        }

        impl Api {
            /// Resolves every function in `lib` (a `dlopen` handle).
            fn resolve(lib: *mut c_void, path: &str) -> Result<Api> {
                Ok(Api {
                    $( $field: {
                        // SAFETY: `lib` is a live handle; the name is NUL-terminated.
                        let p = unsafe { libc::dlsym(lib, concat!($symbol, "\0").as_ptr().cast()) };
                        if p.is_null() {
                            bail!(
                                Unsupported,
                                "{path} has no {}: the CUDA driver is too old (CUDA 11 or later is needed)",
                                $symbol
                            );
                        }
                        // SAFETY: the driver exports this symbol with this signature
                        // (cuda.h of CUDA 11 and 12).
                        unsafe { std::mem::transmute::<*mut c_void, unsafe extern "C" fn($($arg),*) -> CuResult>(p) }
                    }, )*
                })
            }
        }
    };
}

driver_api! {
    cuInit = "cuInit": fn(c_uint);
    cuDriverGetVersion = "cuDriverGetVersion": fn(*mut c_int);
    cuDeviceGetCount = "cuDeviceGetCount": fn(*mut c_int);
    cuDeviceGet = "cuDeviceGet": fn(*mut CuDevice, c_int);
    cuDevicePrimaryCtxRetain = "cuDevicePrimaryCtxRetain": fn(*mut CuContext, CuDevice);
    cuDevicePrimaryCtxRelease = "cuDevicePrimaryCtxRelease_v2": fn(CuDevice);
    cuCtxPushCurrent = "cuCtxPushCurrent_v2": fn(CuContext);
    cuCtxPopCurrent = "cuCtxPopCurrent_v2": fn(*mut CuContext);
    cuMemHostAlloc = "cuMemHostAlloc": fn(*mut *mut c_void, usize, c_uint);
    cuMemFreeHost = "cuMemFreeHost": fn(*mut c_void);
    cuMemHostRegister = "cuMemHostRegister_v2": fn(*mut c_void, usize, c_uint);
    cuMemHostUnregister = "cuMemHostUnregister": fn(*mut c_void);
    cuMemAlloc = "cuMemAlloc_v2": fn(*mut CuDevicePtr, usize);
    cuMemFree = "cuMemFree_v2": fn(CuDevicePtr);
    cuMemcpyHtoDAsync = "cuMemcpyHtoDAsync_v2": fn(CuDevicePtr, *const c_void, usize, CuStream);
    cuMemcpyDtoH = "cuMemcpyDtoH_v2": fn(*mut c_void, CuDevicePtr, usize);
    cuStreamCreate = "cuStreamCreate": fn(*mut CuStream, c_uint);
    cuStreamDestroy = "cuStreamDestroy_v2": fn(CuStream);
    cuStreamSynchronize = "cuStreamSynchronize": fn(CuStream);
    cuEventCreate = "cuEventCreate": fn(*mut CuEvent, c_uint);
    cuEventDestroy = "cuEventDestroy_v2": fn(CuEvent);
    cuEventRecord = "cuEventRecord": fn(CuEvent, CuStream);
    cuEventQuery = "cuEventQuery": fn(CuEvent);
    cuEventSynchronize = "cuEventSynchronize": fn(CuEvent);
    cuGetErrorName = "cuGetErrorName": fn(CuResult, *mut *const c_char);
}

/// The libraries tried, in order, when no path is given.
const LIBRARIES: &[&str] = &["libcuda.so.1", "libcuda.so"];

/// How to open the CUDA backend.
#[derive(Clone, Debug, Default)]
pub struct CudaOptions {
    /// The device's ordinal (0: the first GPU).
    pub device: i32,
    /// The stream copies are issued on (a `CUstream` / `cudaStream_t`, as an integer);
    /// 0: a non-blocking stream the backend makes and owns.
    pub stream: u64,
    /// The driver library to load instead of `libcuda.so.1` (a path or a file name).
    pub library: Option<String>,
}

/// A CUDA device through the driver API, loaded at run time.
pub struct Cuda {
    api: Api,
    library: String,
    device: CuDevice,
    context: CuContext,
    stream: CuStream,
    owns_stream: bool,
    driver_version: i32,
}

// SAFETY: the driver API is thread-safe; the context and stream are handles any thread may
// use (each call makes the context current on its own thread).
unsafe impl Send for Cuda {}
// SAFETY: as above.
unsafe impl Sync for Cuda {}

impl std::fmt::Debug for Cuda {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cuda")
            .field("library", &self.library)
            .field("device", &self.device)
            .field("driver_version", &self.driver_version)
            .finish()
    }
}

/// Pops the context pushed by `Cuda::current` when dropped.
struct Current<'c>(&'c Cuda);

impl Drop for Current<'_> {
    fn drop(&mut self) {
        let mut popped: CuContext = std::ptr::null_mut();
        // SAFETY: pops what `current` pushed on this thread.
        unsafe { (self.0.api.cuCtxPopCurrent)(&mut popped) };
    }
}

impl Cuda {
    /// Loads the driver, initializes it and retains device `options.device`'s primary
    /// context. `Unsupported` when no driver library can be loaded or it finds no GPU;
    /// `InvalidArgument` for a device ordinal out of range.
    pub fn open(options: &CudaOptions) -> Result<Cuda> {
        let (lib, library) = load_library(options.library.as_deref())?;
        let api = Api::resolve(lib, &library)?;
        let mut cuda = Cuda {
            api,
            library,
            device: 0,
            context: std::ptr::null_mut(),
            stream: options.stream as usize as CuStream,
            owns_stream: false,
            driver_version: 0,
        };
        // SAFETY: the driver's documented calls, each with valid out-pointers.
        let init = unsafe { (cuda.api.cuInit)(0) };
        if init != CUDA_SUCCESS {
            bail!(
                Unsupported,
                "the CUDA driver ({}) found no usable GPU: cuInit failed with {}",
                cuda.library,
                cuda.name(init)
            );
        }
        // SAFETY: as above.
        unsafe { (cuda.api.cuDriverGetVersion)(&mut cuda.driver_version) };
        let mut count = 0;
        cuda.check(
            // SAFETY: as above.
            unsafe { (cuda.api.cuDeviceGetCount)(&mut count) },
            "cuDeviceGetCount",
        )?;
        if options.device < 0 || options.device >= count {
            bail!(
                InvalidArgument,
                "CUDA device {} asked for, but the driver sees {count}",
                options.device
            );
        }
        // SAFETY: as above.
        let got = unsafe { (cuda.api.cuDeviceGet)(&mut cuda.device, options.device) };
        cuda.check(got, "cuDeviceGet")?;
        // SAFETY: as above.
        let retained =
            unsafe { (cuda.api.cuDevicePrimaryCtxRetain)(&mut cuda.context, cuda.device) };
        cuda.check(retained, "cuDevicePrimaryCtxRetain")?;
        if cuda.stream.is_null() {
            let mut stream: CuStream = std::ptr::null_mut();
            let made = {
                let _current = cuda.current()?;
                // SAFETY: as above, with the context current.
                unsafe { (cuda.api.cuStreamCreate)(&mut stream, CU_STREAM_NON_BLOCKING) }
            };
            cuda.check(made, "cuStreamCreate")?;
            cuda.stream = stream;
            cuda.owns_stream = true;
        }
        Ok(cuda)
    }

    /// The library loaded, and the driver's version (e.g. 12040 for 12.4).
    pub fn driver(&self) -> (&str, i32) {
        (&self.library, self.driver_version)
    }

    /// The stream copies are issued on.
    pub fn stream(&self) -> u64 {
        self.stream as usize as u64
    }

    /// The driver's name of a result code.
    fn name(&self, code: CuResult) -> String {
        let mut name: *const c_char = std::ptr::null();
        // SAFETY: the driver writes a pointer to a static string, or leaves it NULL.
        let r = unsafe { (self.api.cuGetErrorName)(code, &mut name) };
        if r != CUDA_SUCCESS || name.is_null() {
            return format!("CUDA error {code}");
        }
        // SAFETY: a NUL-terminated static string of the driver's.
        let text = unsafe { CStr::from_ptr(name) }.to_string_lossy();
        format!("{text} ({code})")
    }

    fn check(&self, code: CuResult, call: &str) -> Result<()> {
        if code == CUDA_SUCCESS {
            return Ok(());
        }
        Err(err!(Io, "{call} failed: {}", self.name(code)))
    }

    /// Makes the backend's context current on this thread until the guard drops.
    fn current(&self) -> Result<Current<'_>> {
        // SAFETY: a context retained in `open`.
        let pushed = unsafe { (self.api.cuCtxPushCurrent)(self.context) };
        self.check(pushed, "cuCtxPushCurrent")?;
        Ok(Current(self))
    }

    /// `size` bytes of device memory (`cuMemAlloc`), for programs without CUDA headers.
    pub fn alloc(&self, size: usize) -> Result<u64> {
        let _c = self.current()?;
        let mut ptr: CuDevicePtr = 0;
        self.check(
            // SAFETY: a valid out-pointer, the context current.
            unsafe { (self.api.cuMemAlloc)(&mut ptr, size.max(1)) },
            "cuMemAlloc",
        )?;
        Ok(ptr)
    }

    /// Frees memory of `alloc`.
    pub fn free(&self, ptr: u64) -> Result<()> {
        let _c = self.current()?;
        // SAFETY: the caller passes what `alloc` returned.
        self.check(unsafe { (self.api.cuMemFree)(ptr) }, "cuMemFree")
    }

    /// Copies `dst.len()` bytes of device memory at `src` into `dst`, after the stream's
    /// work so far.
    pub fn copy_to_host(&self, dst: &mut [u8], src: u64) -> Result<()> {
        let _c = self.current()?;
        self.check(
            // SAFETY: the stream is the backend's or the caller's.
            unsafe { (self.api.cuStreamSynchronize)(self.stream) },
            "cuStreamSynchronize",
        )?;
        // SAFETY: `dst` is writable for its length; `src` is the caller's device memory.
        let r = unsafe { (self.api.cuMemcpyDtoH)(dst.as_mut_ptr().cast(), src, dst.len()) };
        self.check(r, "cuMemcpyDtoH")
    }

    /// Waits for everything issued on the stream.
    pub fn synchronize(&self) -> Result<()> {
        let _c = self.current()?;
        // SAFETY: as above.
        self.check(
            unsafe { (self.api.cuStreamSynchronize)(self.stream) },
            "cuStreamSynchronize",
        )
    }
}

impl Drop for Cuda {
    fn drop(&mut self) {
        if self.owns_stream
            && let Ok(_c) = self.current()
        {
            // SAFETY: the stream this backend made.
            unsafe { (self.api.cuStreamDestroy)(self.stream) };
        }
        if !self.context.is_null() {
            // SAFETY: releases the retain of `open`. The library stays loaded: the driver
            // is never unloaded from a process.
            unsafe { (self.api.cuDevicePrimaryCtxRelease)(self.device) };
        }
    }
}

/// `dlopen`s the driver: `path`, or the first of `LIBRARIES` that loads.
fn load_library(path: Option<&str>) -> Result<(*mut c_void, String)> {
    let names: Vec<&str> = match path {
        Some(p) => vec![p],
        None => LIBRARIES.to_vec(),
    };
    let mut why = Vec::new();
    for name in &names {
        let c = CString::new(*name)
            .map_err(|_| err!(InvalidArgument, "a library path with a NUL byte"))?;
        // SAFETY: a NUL-terminated path; dlopen has no other precondition.
        let lib = unsafe { libc::dlopen(c.as_ptr(), libc::RTLD_NOW | libc::RTLD_LOCAL) };
        if !lib.is_null() {
            return Ok((lib, (*name).to_owned()));
        }
        // SAFETY: dlerror returns the thread's last dlopen message or NULL.
        let msg = unsafe { libc::dlerror() };
        let text = match msg.is_null() {
            true => "unknown error".to_owned(),
            // SAFETY: a NUL-terminated string of the loader's.
            false => unsafe { CStr::from_ptr(msg) }
                .to_string_lossy()
                .into_owned(),
        };
        why.push(text);
    }
    Err(Error::new(
        crate::error::ErrorKind::Unsupported,
        format!(
            "no CUDA driver found (is the NVIDIA driver installed?): {}",
            why.join("; ")
        ),
    ))
}

impl Device for Cuda {
    fn host_alloc(&self, size: usize) -> Result<Option<NonNull<u8>>> {
        let _c = self.current()?;
        let mut ptr: *mut c_void = std::ptr::null_mut();
        // SAFETY: a valid out-pointer, the context current.
        let r = unsafe { (self.api.cuMemHostAlloc)(&mut ptr, size, CU_MEMHOSTALLOC_PORTABLE) };
        self.check(r, "cuMemHostAlloc")?;
        Ok(Some(
            NonNull::new(ptr.cast()).ok_or_else(|| err!(Io, "cuMemHostAlloc returned NULL"))?,
        ))
    }

    fn host_free(&self, ptr: NonNull<u8>, _size: usize) {
        if let Ok(_c) = self.current() {
            // SAFETY: memory of `host_alloc`.
            unsafe { (self.api.cuMemFreeHost)(ptr.as_ptr().cast()) };
        }
    }

    fn host_register(&self, ptr: NonNull<u8>, size: usize) -> Result<bool> {
        let _c = self.current()?;
        // SAFETY: `size` bytes at `ptr` are the loader's (the trait's contract).
        let r = unsafe {
            (self.api.cuMemHostRegister)(ptr.as_ptr().cast(), size, CU_MEMHOSTREGISTER_PORTABLE)
        };
        self.check(r, "cuMemHostRegister")?;
        Ok(true)
    }

    fn host_unregister(&self, ptr: NonNull<u8>) {
        if let Ok(_c) = self.current() {
            // SAFETY: memory registered by `host_register`.
            unsafe { (self.api.cuMemHostUnregister)(ptr.as_ptr().cast()) };
        }
    }

    unsafe fn copy_async(&self, dst: u64, offset: u64, src: *const u8, len: usize) -> Result<()> {
        let _c = self.current()?;
        // SAFETY: the loader keeps `src` alive until the event after this copy completes;
        // the destination is the caller's device memory.
        let r = unsafe {
            (self.api.cuMemcpyHtoDAsync)(dst.wrapping_add(offset), src.cast(), len, self.stream)
        };
        self.check(r, "cuMemcpyHtoDAsync")
    }

    fn event_create(&self) -> Result<Event> {
        let _c = self.current()?;
        let mut e: CuEvent = std::ptr::null_mut();
        // SAFETY: a valid out-pointer.
        let r = unsafe { (self.api.cuEventCreate)(&mut e, CU_EVENT_DISABLE_TIMING) };
        self.check(r, "cuEventCreate")?;
        Ok(Event(e as usize as u64))
    }

    fn event_destroy(&self, event: Event) {
        if let Ok(_c) = self.current() {
            // SAFETY: an event of `event_create`.
            unsafe { (self.api.cuEventDestroy)(event.0 as usize as CuEvent) };
        }
    }

    fn event_record(&self, event: Event) -> Result<()> {
        let _c = self.current()?;
        // SAFETY: an event of `event_create`, the backend's stream.
        let r = unsafe { (self.api.cuEventRecord)(event.0 as usize as CuEvent, self.stream) };
        self.check(r, "cuEventRecord")
    }

    fn event_query(&self, event: Event) -> Result<bool> {
        let _c = self.current()?;
        // SAFETY: an event of `event_create`.
        match unsafe { (self.api.cuEventQuery)(event.0 as usize as CuEvent) } {
            CUDA_SUCCESS => Ok(true),
            CUDA_ERROR_NOT_READY => Ok(false),
            code => Err(err!(Io, "cuEventQuery failed: {}", self.name(code))),
        }
    }

    fn event_wait(&self, event: Event) -> Option<Result<()>> {
        let current = match self.current() {
            Ok(c) => c,
            Err(e) => return Some(Err(e)),
        };
        // SAFETY: an event of `event_create`.
        let r = unsafe { (self.api.cuEventSynchronize)(event.0 as usize as CuEvent) };
        drop(current);
        Some(self.check(r, "cuEventSynchronize"))
    }
}
