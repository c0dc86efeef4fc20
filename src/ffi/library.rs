//! C ABI: the library itself: status names, the thread's last error message, versions.

use std::ffi::c_char;
use std::os::unix::ffi::OsStrExt;

use super::{HAS_ERROR, LAST_ERROR, LAST_OS_ERROR, ZT_VERSION_NUMBER};
use crate::error::ErrorKind;

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

/// The operating system's error number (`errno`: ENOENT, EACCES, ENOSPC ...) behind the
/// last failing `zt_` call on this thread when the system refused it (a `ZT_ERR_IO` from
/// opening, reading, mapping or writing a file); 0 after a successful call and for every
/// other failure (a remote server's refusal has none). For bindings that raise their
/// language's OS errors (Python's `FileNotFoundError`). Thread-safe (each thread has its
/// own); does not change `zt_last_error()`.
#[unsafe(no_mangle)]
pub extern "C" fn zt_last_os_error() -> std::ffi::c_int {
    if !HAS_ERROR.get() {
        return 0;
    }
    LAST_OS_ERROR.get()
}

/// Whether `zt_open` opens `path` as a remote object by URL rather than as a local file:
/// it starts with one of the schemes the library knows (`s3://`, `s3a://`, `gs://`,
/// `az://`, `azure://`, `abfs://`, `abfss://`, `adl://`, `http://`, `https://`, ignoring
/// case), whether or not this build has remote support (without it, opening one is
/// `ZT_ERR_UNSUPPORTED`). Decided by the text alone: nothing is opened. False for NULL.
/// Thread-safe; does not change `zt_last_error()`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_path_is_url(path: *const c_char) -> bool {
    if path.is_null() {
        return false;
    }
    // SAFETY: a NUL-terminated string, per the API contract.
    let bytes = unsafe { std::ffi::CStr::from_ptr(path) }.to_bytes();
    crate::source::is_url(std::path::Path::new(std::ffi::OsStr::from_bytes(bytes)))
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
