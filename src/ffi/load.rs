//! C ABI: what a model loader adds to reading one tensor at a time: prefetching and
//! releasing an object's pages, and batch loads.

use std::ffi::{c_char, c_void};

use super::handles::{reader, zt_reader};
use super::objects::find_component;
use super::{guard, need_bytes_mut, zt_status};
use crate::dtype::DType;
use crate::error::{Result, bail, err};
use crate::load::{Request, Slice};

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
pub unsafe extern "C" fn zt_object_evict(reader: *const zt_reader, object: usize) -> zt_status {
    guard(|| self::reader(reader)?.inner().release(object))
}

/// `zt_load_request.flags`: read the decoded bytes from `offset` on (a range the size of
/// `dst_size`) instead of the whole component.
pub const ZT_LOAD_RANGE: u32 = 1;
/// `zt_load_request.flags`: convert each element into `dtype` (as `zt_component_read_as`).
pub const ZT_LOAD_CONVERT: u32 = 2;

/// One read of a batch (`zt_batch_load`). A zero-filled request (with object, dst and
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

/// Options of `zt_batch_load`; zero-filled or NULL for the defaults.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zt_batch_options {
    /// Most threads to use, this one included; 0 = the library's pool size
    /// (`zt_pool_thread_count`). Nested work (decoding, dequantizing) runs on the same
    /// threads.
    pub threads: u32,
}

/// The library request of a C one, resolved: role looked up, flags checked.
fn request<'d>(r: &zt_reader, q: &zt_load_request) -> Result<Request<'d>> {
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
    let dst = need_bytes_mut(q.dst, q.dst_size, "dst")?;
    let slice = match (q.flags & ZT_LOAD_RANGE != 0, convert) {
        (false, _) => Slice::Whole,
        // Decoded bytes from `offset` on, as many as `dst` holds.
        (true, None) => Slice::Range {
            first: q.offset,
            count: q.dst_size as u64,
        },
        // Values from `offset` on, as many as `dst` holds.
        (true, Some(dtype)) => {
            if !q.dst_size.is_multiple_of(dtype.size()) {
                bail!(
                    InvalidArgument,
                    "a buffer of {} bytes is not whole {dtype} values",
                    q.dst_size
                );
            }
            Slice::Range {
                first: q.offset,
                count: (q.dst_size / dtype.size()) as u64,
            }
        }
    };
    let mut r = Request::host(q.object, component, dst).slice(slice);
    r.convert = convert;
    Ok(r)
}

/// Carries out `count` reads at once: a host load of the staged loader's engine
/// (`zt_loader_load` with `ZT_LOAD_HOST` requests, without a device), in parallel on a
/// bounded pool of threads (`options->threads`), in chunks claimed in request order,
/// neighbours in the file read with one read (file order reads fastest): each a whole
/// read, a range read (`ZT_LOAD_RANGE`) or a converted read (`ZT_LOAD_CONVERT`) into its
/// own buffer, with the same rules and results as the single calls. The memory it holds
/// besides the buffers is a loader's default budget (`zt_loader_options`, whose
/// `max_bytes_in_flight` a host loader sets). Every request's `status` is set, and
/// a failed request doesn't stop the others. Returns `ZT_OK` when all succeeded, else the
/// status of the first failed request in array order, whose message `zt_last_error()`
/// gives (prefixed "request <i>: "). Blocks until every request is done. Thread-safe
/// (the requests' buffers must not overlap).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_batch_load(
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
        let mut errors: Vec<(usize, crate::error::Error)> = Vec::new();
        for (i, q) in requests.iter().enumerate() {
            match request(r, q) {
                Ok(req) => resolved.push((i, req)),
                Err(e) => errors.push((i, e)),
            }
        }
        let (index, mut loads): (Vec<usize>, Vec<Request<'_>>) = resolved.into_iter().unzip();
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
