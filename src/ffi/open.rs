//! C ABI: opening a reader (a path, memory, a descriptor, a URL) and closing it.

use std::collections::HashMap;
use std::ffi::{CString, c_char, c_void};
use std::os::fd::FromRawFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;

use super::handles::{free, give, zt_reader};
use super::remote::{remote_options, zt_remote_options};
use super::{guard, need_bytes, need_out, need_str, put, zt_status};
use crate::error::{Result, bail};
use crate::limits::Limits;
use crate::reader::{OpenOptions, Reader};

/// Do not map the file: every access is a `pread`. Nothing is zero-copy, but a file
/// truncated or rewritten by another process while open can't crash the program (with a
/// mapping, touching vanished pages raises SIGBUS).
pub const ZT_OPEN_NO_MMAP: u32 = 1;

/// Verify every digest while opening; a mismatch fails the open with `ZT_ERR_CHECKSUM`.
pub const ZT_OPEN_VERIFY: u32 = 2;

/// Read every page of the mapped file in while opening (`MAP_POPULATE`), so later
/// accesses never wait for the disk. No effect with `ZT_OPEN_NO_MMAP`.
pub const ZT_OPEN_POPULATE: u32 = 64;

/// `zt_open_fd_with` only: the reader takes over the descriptor: it stays open while the
/// reader is open and is closed by `zt_close` (without the flag, the reader works on its
/// own duplicate and the caller keeps, and may close, theirs). When the open fails, the
/// caller still owns the descriptor and closes it.
pub const ZT_OPEN_TAKE_FD: u32 = 128;

/// For a set (an `*.index.json`, or one split of a GGUF split set): open (and map) every
/// shard while opening and keep them open until `zt_close`. By default each shard is
/// parsed and closed again at open, and reopened when one of its tensors is first read.
pub const ZT_OPEN_ALL_SHARDS: u32 = 256;

/// Open only the file named, even when it is one split of a GGUF split set (by default
/// `zt_open` of any split opens the whole set).
pub const ZT_OPEN_ONE_FILE: u32 = 512;

/// Map files private and writable (`MAP_PRIVATE`, `PROT_READ | PROT_WRITE`): the memory
/// of a zero-copy view (`zt_component_view`, `zt_shard_get_mapping`) may then be written
/// through a cast of its pointer. A write changes this process's copy of that page only,
/// never the file nor another reader's view; later views of the same bytes from this
/// reader see it (and `zt_file_verify` reports it as a mismatch). Unwritten pages stay the
/// page cache's, as with the default read-only mapping, and no swap is reserved for them.
/// For bindings whose arrays are writable (PyTorch ignores NumPy's read-only flag). No
/// effect with `ZT_OPEN_NO_MMAP`; without it, writing to a view's memory faults.
pub const ZT_OPEN_COPY_ON_WRITE: u32 = 1024;

/// Every `ZT_OPEN_*` flag.
const OPEN_FLAGS: u32 = ZT_OPEN_NO_MMAP
    | ZT_OPEN_VERIFY
    | ZT_OPEN_POPULATE
    | ZT_OPEN_TAKE_FD
    | ZT_OPEN_ALL_SHARDS
    | ZT_OPEN_ONE_FILE
    | ZT_OPEN_COPY_ON_WRITE;

/// Options for `zt_open_with` / `zt_open_memory_with`. A zero-filled struct (or a NULL
/// pointer) means the defaults; a 0 limit means that limit's default.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zt_open_options {
    /// `ZT_OPEN_*` flags, or-ed.
    pub flags: u32,
    /// Largest CBOR nesting depth of the manifest. Default 128; at most 256 (larger values
    /// act as 256, so the decoder's stack use stays bounded).
    pub max_cbor_depth: u32,
    /// Largest shape rank. Default 64.
    pub max_rank: u32,
    /// Longest object or role name in bytes. Default 65536.
    pub max_name_length: u32,
    /// Largest manifest in bytes. Default 1 GiB.
    pub max_manifest_size: u64,
    /// Largest decoded size of one component in bytes. Default 64 GiB.
    pub max_decoded_size: u64,
    /// Largest total of decoded bytes the reader caches for views of encoded components.
    /// Default unlimited.
    pub max_total_cached: u64,
}

pub(super) fn open_options(options: *const zt_open_options) -> Result<OpenOptions> {
    let d = Limits::default();
    // SAFETY: NULL or a valid struct, per the API contract.
    let Some(o) = (unsafe { options.as_ref() }) else {
        return Ok(OpenOptions::default());
    };
    if o.flags & !OPEN_FLAGS != 0 {
        bail!(
            InvalidArgument,
            "unknown open flags 0x{:x}",
            o.flags & !OPEN_FLAGS
        );
    }
    let or = |v: u64, default: u64| if v == 0 { default } else { v };
    Ok(OpenOptions {
        use_mmap: o.flags & ZT_OPEN_NO_MMAP == 0,
        verify_on_open: o.flags & ZT_OPEN_VERIFY != 0,
        populate: o.flags & ZT_OPEN_POPULATE != 0,
        open_all_shards: o.flags & ZT_OPEN_ALL_SHARDS != 0,
        one_file: o.flags & ZT_OPEN_ONE_FILE != 0,
        copy_on_write: o.flags & ZT_OPEN_COPY_ON_WRITE != 0,
        limits: Limits {
            max_manifest_size: or(o.max_manifest_size, d.max_manifest_size),
            max_decoded_size: or(o.max_decoded_size, d.max_decoded_size),
            max_total_cached: or(o.max_total_cached, d.max_total_cached),
            max_rank: or(o.max_rank as u64, d.max_rank as u64) as usize,
            max_name_length: or(o.max_name_length as u64, d.max_name_length as u64) as usize,
            max_cbor_depth: or(o.max_cbor_depth as u64, d.max_cbor_depth as u64) as usize,
        },
    })
}

pub(super) fn finish_open(reader: Reader<'static>, out: *mut *mut zt_reader) {
    finish_open_taking(reader, None, out)
}

/// `finish_open` of a reader that also keeps `taken` (a descriptor handed over with
/// `ZT_OPEN_TAKE_FD`) until `zt_close`.
fn finish_open_taking(
    reader: Reader<'static>,
    taken: Option<std::os::fd::OwnedFd>,
    out: *mut *mut zt_reader,
) {
    let json = Mutex::new(HashMap::new());
    let paths = (0..reader.shard_count())
        .map(|i| {
            let path = reader.shard_path(i).ok().flatten()?;
            CString::new(path.as_os_str().as_bytes()).ok()
        })
        .collect();
    put(
        out,
        give(zt_reader {
            reader,
            json,
            paths,
            names: Default::default(),
            content_digests: Mutex::default(),
            _taken_fd: taken,
        }),
    );
}

/// Opens a tensor file read-only with the default options: zTensor (v1.2, v1.1 or legacy
/// v0.1), safetensors, GGUF v2/v3, Tensogram v3, a PyTorch checkpoint (`torch.save`'s zip
/// format; its pickle is read, never run), NumPy `.npy`/`.npz` or an ONNX model's
/// initializers, recognised by its first bytes (see `zt_file_format`). Maps it, decodes
/// and validates the manifest or header; reads no tensor data. An ONNX model with external
/// data opens the files it names beside it (only by path: `zt_open_memory` refuses it with
/// ZT_ERR_UNSUPPORTED). `*out` is set only on success; free it with `zt_close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_open(path: *const c_char, out: *mut *mut zt_reader) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { zt_open_with(path, std::ptr::null(), out) }
}

/// `zt_open` with options (NULL = defaults): pread instead of mmap, verify on open, limits.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_open_with(
    path: *const c_char,
    options: *const zt_open_options,
    out: *mut *mut zt_reader,
) -> zt_status {
    guard(|| {
        need_out(out, "out")?;
        if path.is_null() {
            bail!(InvalidArgument, "path is NULL");
        }
        // SAFETY: NUL-terminated path bytes, per the API contract.
        let bytes = unsafe { std::ffi::CStr::from_ptr(path) }.to_bytes();
        let path = Path::new(std::ffi::OsStr::from_bytes(bytes));
        let reader = Reader::open_with(path, &open_options(options)?)?;
        finish_open(reader, out);
        Ok(())
    })
}

/// Opens a file held in memory. The bytes are borrowed, not copied: the caller keeps them
/// alive and unchanged until `zt_close`. Views are zero-copy when `data` is 64-byte aligned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_open_memory(
    data: *const c_void,
    size: usize,
    out: *mut *mut zt_reader,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { zt_open_memory_with(data, size, std::ptr::null(), out) }
}

/// `zt_open_memory` with options (NULL = defaults; `ZT_OPEN_NO_MMAP` has no effect).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_open_memory_with(
    data: *const c_void,
    size: usize,
    options: *const zt_open_options,
    out: *mut *mut zt_reader,
) -> zt_status {
    guard(|| {
        need_out(out, "out")?;
        let bytes: &'static [u8] = need_bytes(data, size, "data")?;
        let reader = Reader::from_slice_with(bytes, &open_options(options)?)?;
        finish_open(reader, out);
        Ok(())
    })
}

/// Opens a file from a descriptor the caller opened (read access, a regular file; its
/// offset doesn't matter). By default the reader works on its own duplicate (`dup`), so
/// the caller keeps `fd` and may close it as soon as this returns; with
/// `ZT_OPEN_TAKE_FD` in `options->flags` the reader takes `fd` over: it stays open until
/// `zt_close` closes it (on failure the caller still owns it and closes it). Otherwise
/// as `zt_open_with`, for one file: a set can't be opened from one descriptor (an
/// `*.index.json` is `ZT_ERR_FORMAT` saying to open the index by path; one split of a
/// GGUF split set opens as that file alone, as `ZT_OPEN_ONE_FILE` would).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_open_fd_with(
    fd: i32,
    options: *const super::zt_open_options,
    out: *mut *mut zt_reader,
) -> zt_status {
    guard(|| {
        need_out(out, "out")?;
        if fd < 0 {
            bail!(InvalidArgument, "fd {fd} is not a file descriptor");
        }
        let opts = open_options(options)?;
        // SAFETY: NULL or a valid struct, per the API contract.
        let take = unsafe { options.as_ref() }.is_some_and(|o| o.flags & ZT_OPEN_TAKE_FD != 0);
        let name = format!("fd {fd}");
        // The reader always works on a duplicate, so a failed open leaves `fd` as it was;
        // a handed-over `fd` is kept by the handle and closed at zt_close.
        // SAFETY: duplicating a descriptor has no memory effects; failure is checked.
        let copy = unsafe { libc::fcntl(fd, libc::F_DUPFD_CLOEXEC, 0) };
        if copy < 0 {
            return Err(crate::error::Error::io(
                format_args!("duplicating {name}"),
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: `copy` is a fresh descriptor that this File now owns alone.
        let file = unsafe { std::fs::File::from_raw_fd(copy) };
        let r = Reader::from_file(file, &name, &opts)?;
        // SAFETY: the caller handed `fd` over (ZT_OPEN_TAKE_FD): from here on only the
        // handle closes it, at zt_close.
        let taken = take.then(|| unsafe { std::os::fd::OwnedFd::from_raw_fd(fd) });
        finish_open_taking(r, taken, out);
        Ok(())
    })
}

/// Opens a remote object by URL: `s3://bucket/key`, `gs://bucket/key`,
/// `az://container/blob` (also `abfs://`, `azure://`), `http://` or `https://`; any
/// format `zt_open` reads. `zt_open` and `zt_open_with` take the same URLs with the
/// environment's settings only. Opening costs a few range requests (the size and last
/// 64 KiB, then the header or manifest), never the whole object; reads fetch only their
/// bytes; views are copies the reader keeps (under `max_total_cached`); `zt_shard_get_mapping` is
/// `ZT_ERR_NOT_FOUND`. A network failure, a refused request (401/403/404) or an answer of
/// the wrong range or length is `ZT_ERR_IO` naming the URL; an object that changed after
/// the open is `ZT_ERR_FORMAT`. `ZT_ERR_UNSUPPORTED` in a build without remote support.
/// The URL of a set's index, or of one GGUF split, opens the whole set, its shards at the
/// same location (unless `ZT_OPEN_ONE_FILE`); `zt_file_get_remote_stats` then counts every file.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_open_url_with(
    url: *const c_char,
    options: *const zt_open_options,
    remote: *const zt_remote_options,
    out: *mut *mut zt_reader,
) -> zt_status {
    guard(|| {
        need_out(out, "out")?;
        let url = need_str(url, "url")?;
        let reader = Reader::open_url(url, &open_options(options)?, &remote_options(remote)?)?;
        finish_open(reader, out);
        Ok(())
    })
}

/// Closes a reader and frees everything it lent out. NULL is a no-op. Not thread-safe
/// with other calls on the same reader.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_close(reader: *mut zt_reader) {
    // SAFETY: made by finish_open, closed once, per the contract.
    unsafe { free(reader) }
}
