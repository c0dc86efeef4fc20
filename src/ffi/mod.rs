//! The C ABI: argument checks, the panic boundary, the thread-local last error, and the
//! handles. No format logic lives here; every function forwards to the Rust API.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

mod dtype;
mod listing;
mod loader;
mod pool;
mod quant;
mod read;
mod sets;
mod write;

// After the reading calls in the header.
mod frames;
mod remote;

// Typed attributes, after the frame calls.
mod attrs;

// The staged loader and its devices, last.
mod device;
mod staged;

use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result, bail, err};

pub use dtype::*;
pub use listing::*;
pub use loader::*;
pub use pool::*;
pub use quant::*;
pub use read::*;
pub use sets::*;
pub use write::*;

pub use frames::*;
pub use remote::*;

pub use attrs::*;

pub use device::*;
pub use staged::*;

/// Major version of this header. Compare with `zt_version()` at run time to catch a
/// header/library mismatch.
pub const ZT_VERSION_MAJOR: u32 = 0;
/// Minor version of this header.
pub const ZT_VERSION_MINOR: u32 = 1;
/// Patch version of this header.
pub const ZT_VERSION_PATCH: u32 = 0;
/// This header's version as one number, MAJOR * 10000 + MINOR * 100 + PATCH (0.1.0 is
/// 100), for `#if ZT_VERSION_NUMBER >= ...` tests. Compare with `zt_version_number()` at
/// run time.
pub const ZT_VERSION_NUMBER: u32 =
    ZT_VERSION_MAJOR * 10000 + ZT_VERSION_MINOR * 100 + ZT_VERSION_PATCH;

/// Status of every fallible call. `ZT_OK` is 0; the values are stable.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zt_status {
    /// Success.
    ZT_OK = 0,
    /// NULL where not allowed, bad enum value, bad shape, wrong size ...
    ZT_ERR_INVALID_ARGUMENT = 1,
    /// The operating system said no.
    ZT_ERR_IO = 2,
    /// Malformed, truncated or inconsistent file.
    ZT_ERR_FORMAT = 3,
    /// Well-formed, but a feature this build can't decode.
    ZT_ERR_UNSUPPORTED = 4,
    /// No such object, component or attribute.
    ZT_ERR_NOT_FOUND = 5,
    /// A stored digest does not match the bytes.
    ZT_ERR_CHECKSUM = 6,
    /// A safety limit was hit (manifest size, decoded size ...).
    ZT_ERR_LIMIT = 7,
    /// The destination buffer is smaller than the data.
    ZT_ERR_BUFFER_TOO_SMALL = 8,
    /// The call is not valid now, e.g. add after finish.
    ZT_ERR_STATE = 9,
    /// A bug: a caught panic.
    ZT_ERR_INTERNAL = 10,
    /// The work was cancelled (`zt_loader_cancel`) before it was done.
    ZT_ERR_CANCELED = 11,
}

/// Storage dtypes; values are stable. Functions take them as `uint32_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zt_dtype {
    ZT_F64 = 0,
    ZT_F32 = 1,
    ZT_F16 = 2,
    ZT_BF16 = 3,
    ZT_I64 = 4,
    ZT_I32 = 5,
    ZT_I16 = 6,
    ZT_I8 = 7,
    ZT_U64 = 8,
    ZT_U32 = 9,
    ZT_U16 = 10,
    ZT_U8 = 11,
    ZT_BOOL = 12,
}

/// Component encodings; values are stable. Functions take them as `uint32_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zt_encoding {
    /// Stored as is.
    ZT_ENCODING_RAW = 0,
    /// zstd frames.
    ZT_ENCODING_ZSTD = 1,
    /// Read only: a pipeline of another file format (Tensogram's packing, shuffle and
    /// compression stages), decoded on access. Never accepted by the writer.
    ZT_ENCODING_PIPELINE = 2,
}

/// Digest algorithms the writer can record; values are stable.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zt_digest {
    /// No digest.
    ZT_DIGEST_NONE = 0,
    /// "sha256:<64 hex>".
    ZT_DIGEST_SHA256 = 1,
    /// "crc32c:0x<8 hex>".
    ZT_DIGEST_CRC32C = 2,
}

impl From<ErrorKind> for zt_status {
    fn from(kind: ErrorKind) -> Self {
        const { assert!(zt_status::ZT_ERR_CANCELED as u32 == ErrorKind::Canceled as u32) };
        // SAFETY: both enums are 32-bit with the values of one table (`error_kinds!`),
        // which `ffi::tests::c_enums_match_the_tables` checks against the header; every
        // ErrorKind value is a zt_status value.
        unsafe { std::mem::transmute::<u32, zt_status>(kind.code()) }
    }
}

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
    /// Whether LAST_ERROR holds a message: checked by every call (a constant-initialized
    /// flag without a destructor costs one thread-local access and no lazy-init check), so
    /// that a successful call never touches the message.
    static HAS_ERROR: Cell<bool> = const { Cell::new(false) };
}

/// How many threads have HAS_ERROR set (a thread that ends with a message keeps counting).
/// While it is 0, no thread has a message to clear, so a call needn't look at its own
/// thread-local state at all: most programs' calls succeed, and a thread-local access from
/// a shared library is a function call (`__tls_get_addr`).
/// On a cache line of its own: every call reads it, and a neighbour that another thread
/// writes (the pool's lock, a writer's counter) would turn each read into a cache miss on
/// a machine of many cores.
static THREADS_WITH_ERROR: CacheLine<AtomicUsize> = CacheLine(AtomicUsize::new(0));

/// A value alone on its cache line (128 bytes: two 64-byte lines, which x86 prefetches in
/// pairs).
#[repr(align(128))]
struct CacheLine<T>(T);

fn set_last_error(message: &str) {
    let text = CString::new(message.replace('\0', "?")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
    if !HAS_ERROR.replace(true) {
        THREADS_WITH_ERROR.0.fetch_add(1, Ordering::Relaxed);
    }
}

#[inline]
fn clear_last_error() {
    // Relaxed: a thread's own increment is always visible to itself, so a 0 here means
    // this thread has no message; other threads' counts only make this look further.
    if THREADS_WITH_ERROR.0.load(Ordering::Relaxed) != 0 {
        clear_own_error();
    }
}

/// Out of line, so that the thread-local address isn't computed (hoisted) on the path that
/// doesn't need it.
#[inline(never)]
fn clear_own_error() {
    if HAS_ERROR.get() {
        HAS_ERROR.set(false);
        THREADS_WITH_ERROR.0.fetch_sub(1, Ordering::Relaxed);
        LAST_ERROR.with(|e| *e.borrow_mut() = CString::default());
    }
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".to_owned())
}

/// The panic boundary and error bookkeeping of every fallible entry point. Inline, so that
/// each entry point is one function (errors and panics leave through cold paths).
#[inline]
pub(crate) fn guard(f: impl FnOnce() -> Result<()>) -> zt_status {
    clear_last_error();
    match catch_unwind(AssertUnwindSafe(f)) {
        Ok(Ok(())) => zt_status::ZT_OK,
        Ok(Err(e)) => {
            set_last_error(e.message());
            e.kind().into()
        }
        Err(p) => {
            set_last_error(&format!(
                "internal error (a bug, please report it): {}",
                panic_message(&*p)
            ));
            zt_status::ZT_ERR_INTERNAL
        }
    }
}

/// The panic boundary of infallible getters: `fallback` if anything panics.
pub(crate) fn guard_value<T>(fallback: T, f: impl FnOnce() -> T) -> T {
    clear_last_error();
    catch_unwind(AssertUnwindSafe(f)).unwrap_or_else(|p| {
        set_last_error(&format!(
            "internal error (a bug, please report it): {}",
            panic_message(&*p)
        ));
        fallback
    })
}

/// A required pointer argument.
pub(crate) fn need<'p, T>(ptr: *const T, what: &str) -> Result<&'p T> {
    // SAFETY: the caller passes a valid pointer or NULL, per the API contract.
    unsafe { ptr.as_ref() }
        .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, format!("{what} is NULL")))
}

/// A required mutable pointer argument.
pub(crate) fn need_mut<'p, T>(ptr: *mut T, what: &str) -> Result<&'p mut T> {
    // SAFETY: as `need`.
    unsafe { ptr.as_mut() }
        .ok_or_else(|| Error::new(ErrorKind::InvalidArgument, format!("{what} is NULL")))
}

/// A required NUL-terminated string argument whose bytes are compared, not decoded:
/// `need_str` checks it is UTF-8 when that decides the error to report.
#[inline]
pub(crate) fn need_cstr<'p>(ptr: *const c_char, what: &str) -> Result<&'p CStr> {
    if ptr.is_null() {
        bail!(InvalidArgument, "{what} is NULL");
    }
    // SAFETY: the caller passes a NUL-terminated string, per the API contract.
    Ok(unsafe { CStr::from_ptr(ptr) })
}

/// A required NUL-terminated UTF-8 string argument.
pub(crate) fn need_str<'p>(ptr: *const c_char, what: &str) -> Result<&'p str> {
    if ptr.is_null() {
        bail!(InvalidArgument, "{what} is NULL");
    }
    // SAFETY: the caller passes a NUL-terminated string, per the API contract.
    let s = unsafe { CStr::from_ptr(ptr) };
    s.to_str().map_err(|_| {
        Error::new(
            ErrorKind::InvalidArgument,
            format!("{what} is not valid UTF-8"),
        )
    })
}

/// A byte buffer argument: NULL is allowed only when `size` is 0.
pub(crate) fn need_bytes<'p>(
    ptr: *const std::ffi::c_void,
    size: usize,
    what: &str,
) -> Result<&'p [u8]> {
    if size == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        bail!(InvalidArgument, "{what} is NULL but its size is {size}");
    }
    // SAFETY: the caller passes `size` readable bytes, per the API contract.
    Ok(unsafe { std::slice::from_raw_parts(ptr.cast(), size) })
}

/// A writable byte buffer argument: NULL is allowed only when `size` is 0.
pub(crate) fn need_bytes_mut<'p>(
    ptr: *mut std::ffi::c_void,
    size: usize,
    what: &str,
) -> Result<&'p mut [u8]> {
    if size == 0 {
        return Ok(&mut []);
    }
    if ptr.is_null() {
        bail!(InvalidArgument, "{what} is NULL but its size is {size}");
    }
    // SAFETY: the caller passes `size` writable bytes, per the API contract.
    Ok(unsafe { std::slice::from_raw_parts_mut(ptr.cast(), size) })
}

/// A `zt_dtype` value coming in, range-checked.
pub(crate) fn need_dtype(value: u32) -> Result<DType> {
    DType::from_u32(value).ok_or_else(|| err!(InvalidArgument, "unknown dtype value {value}"))
}

/// Writes a result through an out-pointer (checked non-NULL before any work).
pub(crate) fn put<T>(out: *mut T, value: T) {
    // SAFETY: checked non-NULL by the caller before doing the work.
    unsafe { out.write(value) }
}

/// Checks an out-pointer up front.
pub(crate) fn need_out<T>(out: *mut T, what: &str) -> Result<()> {
    if out.is_null() {
        bail!(InvalidArgument, "{what} is NULL");
    }
    Ok(())
}

/// The library version, "MAJOR.MINOR.PATCH". Never NULL; static storage.
#[unsafe(no_mangle)]
pub extern "C" fn zt_version() -> *const c_char {
    concat!(env!("CARGO_PKG_VERSION"), "\0").as_ptr().cast()
}

/// The library's version as one number, MAJOR * 10000 + MINOR * 100 + PATCH, the run-time
/// counterpart of `ZT_VERSION_NUMBER`. Thread-safe; does not change `zt_last_error()`.
#[unsafe(no_mangle)]
pub extern "C" fn zt_version_number() -> std::ffi::c_uint {
    ZT_VERSION_NUMBER
}

/// The name of a status value, e.g. "ZT_ERR_FORMAT"; "ZT_UNKNOWN_STATUS" for values
/// outside the enum. Never NULL; static storage. Thread-safe.
#[unsafe(no_mangle)]
pub extern "C" fn zt_status_name(status: u32) -> *const c_char {
    match ErrorKind::from_code(status) {
        Some(kind) => kind.c_name(),
        None if status == 0 => crate::error::OK_NAME,
        None => c"ZT_UNKNOWN_STATUS",
    }
    .as_ptr()
}

/// A human-readable message for the last failing `zt_` call on this thread, with context
/// (file, object, component, offset). Never NULL; "" after a successful call. Valid until
/// the next `zt_` call on this thread. Thread-safe (each thread has its own).
#[unsafe(no_mangle)]
pub extern "C" fn zt_last_error() -> *const c_char {
    if !HAS_ERROR.get() {
        return c"".as_ptr();
    }
    LAST_ERROR.with(|e| e.borrow().as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_error_belongs_to_its_thread_until_its_next_call() {
        let last = || {
            unsafe { CStr::from_ptr(zt_last_error()) }
                .to_str()
                .unwrap()
                .to_owned()
        };
        let mut size = 0usize;
        let fail = |size: &mut usize| unsafe { zt_dtype_size(13, size) };
        let succeed = |size: &mut usize| unsafe { zt_dtype_size(DType::F32 as u32, size) };
        assert_eq!(fail(&mut size), zt_status::ZT_ERR_INVALID_ARGUMENT);
        assert_eq!(last(), "unknown dtype value 13");
        // Another thread: its own calls, its own message, none of ours.
        std::thread::spawn(move || {
            let mut size = 0usize;
            assert_eq!(last(), "");
            assert_eq!(succeed(&mut size), zt_status::ZT_OK);
            assert_eq!(last(), "");
            assert_eq!(fail(&mut size), zt_status::ZT_ERR_INVALID_ARGUMENT);
            assert_eq!(last(), "unknown dtype value 13");
            assert_eq!(succeed(&mut size), zt_status::ZT_OK);
            assert_eq!(last(), "");
        })
        .join()
        .unwrap();
        assert_eq!(last(), "unknown dtype value 13");
        assert_eq!(succeed(&mut size), zt_status::ZT_OK);
        assert_eq!((last(), size), (String::new(), 4));
        assert_eq!(fail(&mut size), zt_status::ZT_ERR_INVALID_ARGUMENT);
        assert_eq!(succeed(&mut size), zt_status::ZT_OK);
        assert_eq!(last(), "");
    }

    #[test]
    fn header_version_macros_match_cargo() {
        assert_eq!(
            ZT_VERSION_MAJOR.to_string(),
            env!("CARGO_PKG_VERSION_MAJOR")
        );
        assert_eq!(
            ZT_VERSION_MINOR.to_string(),
            env!("CARGO_PKG_VERSION_MINOR")
        );
        assert_eq!(
            ZT_VERSION_PATCH.to_string(),
            env!("CARGO_PKG_VERSION_PATCH")
        );
        // SAFETY: static NUL-terminated string.
        let v = unsafe { CStr::from_ptr(zt_version()) }.to_str().unwrap();
        assert_eq!(v, env!("CARGO_PKG_VERSION"));
        let part = |p: &str| p.parse::<u32>().unwrap();
        assert_eq!(
            zt_version_number(),
            part(env!("CARGO_PKG_VERSION_MAJOR")) * 10000
                + part(env!("CARGO_PKG_VERSION_MINOR")) * 100
                + part(env!("CARGO_PKG_VERSION_PATCH"))
        );
        assert_eq!(zt_version_number(), ZT_VERSION_NUMBER);
    }

    /// `NAME = value` pairs of one enum of the generated header.
    fn header_enum(name: &str) -> Vec<(String, u32)> {
        let header =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/ztensor.h"))
                .unwrap();
        let start = header
            .find(&format!("typedef enum {name} {{"))
            .unwrap_or_else(|| panic!("no enum {name} in the header"));
        let body = &header[start..start + header[start..].find('}').unwrap()];
        body.lines()
            .filter_map(|l| l.trim().trim_end_matches(',').split_once(" = "))
            .map(|(n, v)| (n.to_owned(), v.parse().unwrap()))
            .collect()
    }

    #[test]
    fn c_enums_match_the_tables() {
        let statuses = header_enum("zt_status");
        assert_eq!(statuses[0], ("ZT_OK".to_owned(), 0));
        assert_eq!(statuses.len(), ErrorKind::ALL.len() + 1);
        for (kind, (name, value)) in ErrorKind::ALL.iter().zip(&statuses[1..]) {
            assert_eq!((kind.status_name(), kind.code()), (name.as_str(), *value));
            assert_eq!(zt_status::from(*kind) as u32, *value);
            // SAFETY: static NUL-terminated string.
            let c = unsafe { CStr::from_ptr(zt_status_name(*value)) };
            assert_eq!(c.to_str().unwrap(), name);
        }
        // SAFETY: static NUL-terminated strings.
        let name = |v| {
            unsafe { CStr::from_ptr(zt_status_name(v)) }
                .to_str()
                .unwrap()
        };
        assert_eq!(name(0), "ZT_OK");
        assert_eq!(name(11), "ZT_UNKNOWN_STATUS");
        assert_eq!(name(u32::MAX), "ZT_UNKNOWN_STATUS");

        let dtypes = header_enum("zt_dtype");
        assert_eq!(dtypes.len(), crate::dtype::ALL_DTYPES.len());
        for (d, (name, value)) in crate::dtype::ALL_DTYPES.iter().zip(&dtypes) {
            assert_eq!(
                (format!("ZT_{}", d.name().to_ascii_uppercase()), *d as u32),
                (name.clone(), *value)
            );
        }
    }

    /// build.rs generates the header into OUT_DIR on every build that changes src/; the
    /// committed one must be that output (the ctest header_up_to_date checks the same).
    #[test]
    fn header_is_current() {
        let generated = include_str!(concat!(env!("OUT_DIR"), "/ztensor.h"));
        let committed = include_str!("../../include/ztensor.h");
        assert!(
            generated == committed,
            "include/ztensor.h is out of date: update it with \
             `cmake --build build --target update_header`, or \
             `cp {}/ztensor.h include/ztensor.h`",
            env!("OUT_DIR")
        );
    }

    #[test]
    fn panics_become_internal_errors() {
        assert_eq!(guard(|| panic!("boom")), zt_status::ZT_ERR_INTERNAL);
        // SAFETY: thread-local NUL-terminated string.
        let msg = unsafe { CStr::from_ptr(zt_last_error()) }
            .to_str()
            .unwrap()
            .to_owned();
        assert!(msg.contains("boom"), "{msg}");
        assert_eq!(guard(|| Ok(())), zt_status::ZT_OK);
        // SAFETY: as above.
        assert_eq!(unsafe { CStr::from_ptr(zt_last_error()) }.to_bytes(), b"");
    }
}
