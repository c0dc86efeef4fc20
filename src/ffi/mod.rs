//! The C ABI: argument checks, the panic boundary, the thread-local last error, and the
//! handles. No format logic lives here; every function forwards to the Rust API.
#![allow(non_camel_case_types)]
#![allow(clippy::missing_safety_doc)]

// cbindgen declares the functions in the order of these modules (and of the items in each),
// so the header reads by task. One declaration per group, so that rustfmt, which sorts a
// group of `mod` lines, keeps this order.

// The handles: how each opaque type is owned, and the reader handle (no functions).
mod handles;

// Opening and closing: by path, memory, descriptor or URL.
mod open;

// The settings of a remote open.
mod remote;

// The file or set as a whole.
mod file;

// What is in it: objects and components.
mod objects;

// Every name and object in one call.
mod listing;

// Where each zstd frame is.
mod frames;

// Reading and checking.
mod read;

// Batches and page advice.
mod load;

// The staged loader (zt_loader) and its devices (zt_device, the CUDA backend zt_cuda).
mod device;
mod staged;

// Attributes: JSON and typed values.
mod attrs;

// Values to write.
mod values;

// Writing.
mod write;

// Dtypes.
mod dtype;

// The library: status names, errors, versions.
mod library;

// The library's thread pool.
mod pool;

// Last: the old names of renamed functions.

use std::cell::{Cell, RefCell};
use std::ffi::{CStr, CString, c_char};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result, bail, err};

pub use attrs::*;
pub use device::*;
pub use dtype::*;
pub use file::*;
pub use frames::*;
pub use handles::zt_reader;
pub use library::*;
pub use listing::*;
pub use load::*;
pub use objects::*;
pub use open::*;
pub use pool::*;
pub use read::*;
pub use remote::*;
pub use staged::*;
pub use values::*;
pub use write::*;

// The version is Cargo.toml's, in one place: these come from cargo's environment, and
// build.rs writes the header's ZT_VERSION_MAJOR/MINOR/PATCH from the same values (cbindgen
// can't translate these expressions, and cbindgen.toml excludes them).
/// Major version of this header. Compare with `zt_version()` at run time to catch a
/// header/library mismatch.
pub const ZT_VERSION_MAJOR: u32 = version_part(env!("CARGO_PKG_VERSION_MAJOR"));
/// Minor version of this header.
pub const ZT_VERSION_MINOR: u32 = version_part(env!("CARGO_PKG_VERSION_MINOR"));
/// Patch version of this header.
pub const ZT_VERSION_PATCH: u32 = version_part(env!("CARGO_PKG_VERSION_PATCH"));

/// A part of cargo's version ("12"), at compile time.
const fn version_part(text: &str) -> u32 {
    let bytes = text.as_bytes();
    let mut value = 0u32;
    let mut i = 0;
    while i < bytes.len() {
        assert!(bytes[i].is_ascii_digit(), "a version part is decimal");
        value = value * 10 + (bytes[i] - b'0') as u32;
        i += 1;
    }
    value
}
/// This header's version as one number, MAJOR * 10000 + MINOR * 100 + PATCH (1.2.3 is
/// 10203), for `#if ZT_VERSION_NUMBER >= ...` tests. Compare with `zt_version_number()` at
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
    /// 64-bit IEEE 754 float.
    ZT_F64 = 0,
    /// 32-bit IEEE 754 float.
    ZT_F32 = 1,
    /// 16-bit IEEE 754 float.
    ZT_F16 = 2,
    /// A bfloat16: a float32's upper 16 bits.
    ZT_BF16 = 3,
    /// Signed 64-bit integer.
    ZT_I64 = 4,
    /// Signed 32-bit integer.
    ZT_I32 = 5,
    /// Signed 16-bit integer.
    ZT_I16 = 6,
    /// Signed 8-bit integer.
    ZT_I8 = 7,
    /// Unsigned 64-bit integer.
    ZT_U64 = 8,
    /// Unsigned 32-bit integer.
    ZT_U32 = 9,
    /// Unsigned 16-bit integer.
    ZT_U16 = 10,
    /// Unsigned 8-bit integer.
    ZT_U8 = 11,
    /// A bool, one byte: 0 or 1.
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
    /// "crc32c:0x<8 hex>" (zTensor v1.2 only).
    ZT_DIGEST_CRC32C = 2,
    /// "xxh3:<16 hex>": XXH3-64 (zTensor v2 only, where it is the default).
    ZT_DIGEST_XXH3 = 3,
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
    /// The OS error number of the last failure (`zt_last_os_error`), 0 when none.
    static LAST_OS_ERROR: Cell<i32> = const { Cell::new(0) };
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
    set_last_error_os(message, None)
}

fn set_last_error_os(message: &str, os: Option<i32>) {
    let text = CString::new(message.replace('\0', "?")).unwrap_or_default();
    LAST_ERROR.with(|e| *e.borrow_mut() = text);
    LAST_OS_ERROR.set(os.unwrap_or(0));
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
        LAST_OS_ERROR.set(0);
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
            set_last_error_os(e.message(), e.os_error());
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_error_belongs_to_its_thread_until_its_next_call() {
        let last = || {
            // SAFETY: zt_last_error gives a NUL-terminated string valid until this
            // thread's next call, and it is copied before one.
            unsafe { CStr::from_ptr(zt_last_error()) }
                .to_str()
                .unwrap()
                .to_owned()
        };
        let mut size = 0usize;
        // SAFETY: `size` is a valid out-pointer.
        let fail = |size: &mut usize| unsafe { zt_dtype_get_size(13, size) };
        // SAFETY: `size` is a valid out-pointer.
        let succeed = |size: &mut usize| unsafe { zt_dtype_get_size(DType::F32 as u32, size) };
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
        let name = |v| {
            // SAFETY: zt_status_name gives static NUL-terminated strings.
            unsafe { CStr::from_ptr(zt_status_name(v)) }
                .to_str()
                .unwrap()
        };
        assert_eq!(name(0), "ZT_OK");
        assert_eq!(name(11), "ZT_ERR_CANCELED");
        assert_eq!(name(12), "ZT_UNKNOWN_STATUS");
        assert_eq!(name(u32::MAX), "ZT_UNKNOWN_STATUS");

        let dtypes = header_enum("zt_dtype");
        assert_eq!(dtypes.len(), crate::dtype::ALL_DTYPES.len());
        for (d, (name, value)) in crate::dtype::ALL_DTYPES.iter().zip(&dtypes) {
            assert_eq!(
                (format!("ZT_{}", d.name().to_ascii_uppercase()), *d as u32),
                (name.clone(), *value)
            );
            assert_eq!(need_dtype(*value).ok(), Some(*d));
        }
        assert!(need_dtype(dtypes.len() as u32).is_err());

        // Encodings: every variant of the model's, spelled as its manifest name. The match
        // stops compiling when a variant is added, so this list can't fall behind.
        use crate::model::Encoding;
        let encodings = [Encoding::Raw, Encoding::Zstd, Encoding::Pipeline];
        for e in encodings {
            match e {
                Encoding::Raw | Encoding::Zstd | Encoding::Pipeline => {}
            }
        }
        let expected: Vec<(String, u32)> = encodings
            .iter()
            .map(|e| {
                let name = format!("ZT_ENCODING_{}", e.name().to_ascii_uppercase());
                (name, *e as u32)
            })
            .collect();
        assert_eq!(header_enum("zt_encoding"), expected);
        // The writer takes the ones it writes, and only those.
        assert_eq!(Encoding::from_u32(0), Some(Encoding::Raw));
        assert_eq!(Encoding::from_u32(1), Some(Encoding::Zstd));
        assert_eq!(Encoding::from_u32(2), None);

        // Digests: every algorithm the writer records, by the C value from_u32 takes.
        use crate::codec::DigestAlgorithm as D;
        let digest_name = |d: D| match d {
            D::None => "NONE",
            D::Sha256 => "SHA256",
            D::Crc32c => "CRC32C",
            D::Xxh3 => "XXH3",
        };
        let digests = header_enum("zt_digest");
        assert_eq!(digests.len(), 4);
        for (name, value) in &digests {
            let d = D::from_u32(*value).unwrap_or_else(|| panic!("{name} = {value} is no digest"));
            assert_eq!(
                (format!("ZT_DIGEST_{}", digest_name(d)), d as u32),
                (name.clone(), *value)
            );
        }
        assert_eq!(D::from_u32(digests.len() as u32), None);

        // Value types: every typed::ValueType by its name, then ZT_VALUE_MIXED (255), which
        // only zt_value_get_array_type gives.
        use crate::value::typed::ValueType;
        let types = header_enum("zt_value_type");
        let all: Vec<ValueType> = (0..).map_while(ValueType::from_u32).collect();
        assert_eq!(types.len(), all.len() + 1);
        for (t, (name, value)) in all.iter().zip(&types) {
            assert_eq!(
                (
                    format!("ZT_VALUE_{}", t.name().to_ascii_uppercase()),
                    *t as u32
                ),
                (name.clone(), *value)
            );
            // SAFETY: static NUL-terminated strings.
            let c = unsafe { CStr::from_ptr(zt_value_type_name(*value)) };
            assert_eq!(c.to_str().unwrap(), t.name());
        }
        assert_eq!(types.last().unwrap(), &("ZT_VALUE_MIXED".to_owned(), 255));
        assert_eq!(ValueType::from_u32(255), None);
        // SAFETY: as above.
        let mixed = unsafe { CStr::from_ptr(zt_value_type_name(255)) };
        assert_eq!(mixed.to_str().unwrap(), "mixed");
    }

    /// The header declares functions by task (the order of this module's `mod` lines,
    /// which a formatter's sorting would undo): open, the file, objects, reading,
    /// loading, attributes, writing, dtypes, the library; the deprecated old names last.
    #[test]
    fn header_is_ordered_by_task() {
        let header =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/include/ztensor.h"))
                .unwrap();
        // (name, deprecated) of every function declaration, in order.
        let mut functions = Vec::new();
        let mut deprecated = false;
        for line in header.lines() {
            if line.starts_with("ZT_DEPRECATED(") {
                deprecated = true;
            }
            let decl = line.starts_with("ZT_API ") || line.starts_with("enum zt_status zt_");
            // The name is the word before the first '(' of a declaration's first line.
            if let Some((head, _)) = line.split_once('(').filter(|_| decl)
                && let Some(name) = head.rsplit([' ', '*']).next()
                && name.starts_with("zt_")
            {
                functions.push((name.to_owned(), deprecated));
                deprecated = false;
            }
        }
        let at = |name: &str| {
            functions
                .iter()
                .position(|(n, _)| n == name)
                .unwrap_or_else(|| panic!("{name} is not declared"))
        };
        let sections = [
            "zt_open",
            "zt_close",
            "zt_file_format",
            "zt_object_count",
            "zt_component_get_frame",
            "zt_component_view",
            "zt_file_verify",
            "zt_batch_load",
            "zt_file_get_attributes_json",
            "zt_value_get_type",
            "zt_writer_create",
            "zt_writer_free",
            "zt_dtype_get_size",
            "zt_status_name",
            "zt_version_number",
            "zt_pool_set_threads",
            "zt_pool_thread_count",
        ];
        for pair in sections.windows(2) {
            assert!(at(pair[0]) < at(pair[1]), "{} after {}", pair[0], pair[1]);
        }
        assert_eq!(at("zt_open"), 0);
        // Deprecated old names (none in 0.2.0) come after every current function.
        let first_old = functions
            .iter()
            .position(|(_, d)| *d)
            .unwrap_or(functions.len());
        assert!(
            functions[first_old..].iter().all(|(_, d)| *d),
            "a current function among the deprecated ones"
        );
        assert_eq!(functions[first_old - 1].0, "zt_pool_thread_count");
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

    /// The same for the cffi declarations the Python package compiles (build.rs,
    /// `generate_cffi_declarations`).
    #[test]
    fn cffi_declarations_are_current() {
        let generated = include_str!(concat!(env!("OUT_DIR"), "/ztensor_cffi.h"));
        let committed = include_str!("../../python/build_backend/ztensor_cffi.h");
        assert!(
            generated == committed,
            "python/build_backend/ztensor_cffi.h is out of date: update it with \
             `cmake --build build --target update_header`, or \
             `cp {}/ztensor_cffi.h python/build_backend/ztensor_cffi.h`",
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
