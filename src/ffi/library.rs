//! C ABI: the library itself: status names, the thread's last error message, versions.

use std::ffi::c_char;

use super::{HAS_ERROR, LAST_ERROR, ZT_VERSION_NUMBER};
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
