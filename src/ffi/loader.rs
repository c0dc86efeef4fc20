//! C ABI: what a model loader adds to reading one tensor at a time: opening a file
//! descriptor, the mapping itself, prefetching and releasing an object's pages, and batch
//! loads.

use std::ffi::{c_char, c_void};
use std::os::fd::FromRawFd;

use super::read::{
    ZT_OPEN_TAKE_FD, find_component, finish_open_taking, open_options, reader, zt_reader,
};
use super::{guard, need_bytes_mut, need_out, put, zt_status};
use crate::batch::LoadRequest;
use crate::dtype::DType;
use crate::error::{Result, bail, err};
use crate::reader::Reader;

/// Opens a file from a descriptor the caller opened (read access, a regular file; its
/// offset doesn't matter). By default the reader works on its own duplicate (`dup`), so
/// the caller keeps `fd` and may close it as soon as this returns; with
/// `ZT_OPEN_TAKE_FD` in `options->flags` the reader takes `fd` over: it stays open until
/// `zt_close` closes it (on failure the caller still owns it and closes it). Otherwise
/// as `zt_open_with`, for one file: a set can't be opened from one descriptor (an
/// `*.index.json` is `ZT_ERR_FORMAT` saying to open the index by path; one split of a
/// GGUF split set opens as that file alone, as `ZT_OPEN_ONE_FILE` would).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_open_fd(
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
            return Err(crate::Error::io(
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

/// The whole file as the reader sees it: `*base` is the file's byte 0 in the mapping (or
/// the caller's memory for `zt_open_memory`), `*size` its length; a component's stored
/// bytes are at `base + offset` (`zt_component_info`). Borrowed until `zt_close`.
/// `ZT_ERR_NOT_FOUND` for a reader opened with `ZT_OPEN_NO_MMAP` or of a remote object (it
/// has no mapping), and for a set (each shard has its own: `zt_shard_mapping`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_mapping(
    reader: *const zt_reader,
    base: *mut *const c_void,
    size: *mut u64,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(base, "base")?;
        need_out(size, "size")?;
        if r.inner().is_set() {
            bail!(
                NotFound,
                "the reader reads a set of {} files, each mapped on its own: see \
                 zt_shard_mapping",
                r.inner().shard_count()
            );
        }
        let map = r.inner().mapping().ok_or_else(|| {
            err!(
                NotFound,
                "the reader has no mapping: it was opened with ZT_OPEN_NO_MMAP, or is of a remote object"
            )
        })?;
        put(base, map.as_ptr().cast());
        put(size, map.len() as u64);
        Ok(())
    })
}

/// Starts reading object `object`'s stored bytes in, in the background (`MADV_WILLNEED`;
/// `POSIX_FADV_WILLNEED` with `ZT_OPEN_NO_MMAP`), e.g. the next layers while this one
/// computes. Returns at once. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_prefetch(reader: *const zt_reader, object: usize) -> zt_status {
    guard(|| self::reader(reader)?.inner().prefetch(object))
}

/// Drops object `object`'s stored bytes from the process's memory (`MADV_DONTNEED` on
/// the shared read-only mapping), e.g. once it is uploaded to a GPU. Views stay valid:
/// touching them again reads the pages back from the file. Decoded copies the reader
/// owns are not affected. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_release(reader: *const zt_reader, object: usize) -> zt_status {
    guard(|| self::reader(reader)?.inner().release(object))
}

/// `zt_load_request.flags`: read the decoded bytes from `offset` on (a range the size of
/// `dst_size`) instead of the whole component.
pub const ZT_LOAD_RANGE: u32 = 1;
/// `zt_load_request.flags`: convert each element into `dtype` (as `zt_component_read_as`).
pub const ZT_LOAD_CONVERT: u32 = 2;

/// One read of a batch (`zt_load_batch`). A zero-filled request (with object, dst and
/// dst_size set) reads the whole "data" component.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_load_request {
    /// The object's index.
    pub object: usize,
    /// The component's role; NULL means "data".
    pub role: *const c_char,
    /// Destination; exactly the size the read fills (as for the single calls).
    pub dst: *mut c_void,
    /// Bytes at `dst`.
    pub dst_size: usize,
    /// `ZT_LOAD_*` flags, or-ed.
    pub flags: u32,
    /// With `ZT_LOAD_CONVERT`: a `zt_dtype` value.
    pub dtype: u32,
    /// With `ZT_LOAD_RANGE`: the first decoded byte to read, or with `ZT_LOAD_CONVERT`
    /// too, the first element (as `zt_component_read_as_range`).
    pub offset: u64,
    /// Out: this request's result, a `zt_status` value (`ZT_OK` or why it failed). An
    /// integer rather than the enum, so whatever the caller left in it is a valid value.
    pub status: u32,
}

/// Options of `zt_load_batch`; zero-filled or NULL for the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zt_batch_options {
    /// Most threads to use; 0 = one per core (at most 16).
    pub threads: u32,
}

/// The library request of a C one, resolved: role looked up, flags checked.
fn request<'d>(r: &zt_reader, q: &zt_load_request) -> Result<LoadRequest<'d>> {
    let component = if q.role.is_null() {
        find_component(r, q.object, c"data".as_ptr())?
    } else {
        find_component(r, q.object, q.role)?
    };
    let unknown = q.flags & !(ZT_LOAD_RANGE | ZT_LOAD_CONVERT);
    if unknown != 0 {
        bail!(InvalidArgument, "unknown load flags 0x{unknown:x}");
    }
    let convert = if q.flags & ZT_LOAD_CONVERT != 0 {
        Some(
            DType::from_u32(q.dtype)
                .ok_or_else(|| err!(InvalidArgument, "unknown dtype value {}", q.dtype))?,
        )
    } else {
        None
    };
    Ok(LoadRequest {
        object: q.object,
        component,
        dst: need_bytes_mut(q.dst, q.dst_size, "dst")?,
        offset: (q.flags & ZT_LOAD_RANGE != 0).then_some(q.offset),
        convert,
    })
}

/// Carries out `count` reads at once, in parallel across components on a bounded pool of
/// threads (`options->threads`), large requests first and small neighbouring ones
/// together, in request order (file order reads fastest): each a whole read, a range read
/// (`ZT_LOAD_RANGE`) or a converted read (`ZT_LOAD_CONVERT`) into its own buffer, with
/// the same rules and results as the single calls. Every request's `status` is set, and
/// a failed request doesn't stop the others. Returns `ZT_OK` when all succeeded, else the
/// status of the first failed request in array order, whose message `zt_last_error()`
/// gives (prefixed "request <i>: "). Blocks until every request is done. Thread-safe
/// (the requests' buffers must not overlap).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_load_batch(
    reader: *const zt_reader,
    requests: *mut zt_load_request,
    count: usize,
    options: *const zt_batch_options,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        if count == 0 {
            return Ok(());
        }
        if requests.is_null() {
            bail!(InvalidArgument, "requests is NULL but count is {count}");
        }
        // SAFETY: `count` requests, per the API contract.
        let requests = unsafe { std::slice::from_raw_parts_mut(requests, count) };
        // SAFETY: NULL or a valid struct.
        let threads = unsafe { options.as_ref() }.map_or(0, |o| o.threads as usize);
        let mut resolved = Vec::with_capacity(count);
        let mut errors: Vec<(usize, crate::Error)> = Vec::new();
        for (i, q) in requests.iter().enumerate() {
            match request(r, q) {
                Ok(req) => resolved.push((i, req)),
                Err(e) => errors.push((i, e)),
            }
        }
        let (index, mut loads): (Vec<usize>, Vec<LoadRequest<'_>>) = resolved.into_iter().unzip();
        let results = r.inner().load_batch(&mut loads, threads);
        for (i, result) in index.into_iter().zip(results) {
            if let Err(e) = result {
                errors.push((i, e));
            }
        }
        for q in requests.iter_mut() {
            q.status = zt_status::ZT_OK as u32;
        }
        let first = errors.iter().map(|(i, _)| *i).min();
        for (i, e) in &errors {
            requests[*i].status = e.kind().code();
        }
        match first {
            None => Ok(()),
            Some(i) => {
                let e = &errors.iter().find(|(j, _)| *j == i).expect("present").1;
                Err(e.clone().context(format_args!("request {i}")))
            }
        }
    })
}
