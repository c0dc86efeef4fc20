//! C ABI: every object's name, or description, in one call, for bindings where each
//! call costs (Python's cffi and ctypes, cgo, JNI).

use std::ffi::c_char;

use super::handles::{reader, zt_reader};
use super::{guard, need_out, put, zt_status};
use crate::error::{Result, bail, err};
use crate::model::Object;

/// The names block of a reader (`zt_reader::names`): every name followed by a NUL, in
/// file order. Made on the first `zt_file_get_names` and kept until `zt_close`.
fn names(r: &zt_reader) -> Result<&[u8]> {
    if let Some(block) = r.names.get() {
        return Ok(block);
    }
    let block = names_block(r.inner().objects())?;
    // A racing thread may have set it first: both blocks are the same bytes.
    Ok(r.names.get_or_init(|| block))
}

/// Every name and a NUL after it. Names hold no NUL (the reader refuses them at open),
/// so the block splits back into exactly the names.
fn names_block(objects: &[Object]) -> Result<Box<[u8]>> {
    let size = objects.iter().map(|o| o.name().len() + 1).sum::<usize>();
    let mut block = Vec::new();
    block.try_reserve_exact(size).map_err(|_| {
        err!(
            Limit,
            "can't allocate {size} bytes for the names of {} objects",
            objects.len()
        )
    })?;
    for o in objects {
        block.extend_from_slice(o.name().as_bytes());
        block.push(0);
    }
    Ok(block.into_boxed_slice())
}

/// Every object's name in file order, in one block the reader keeps: name 0, a NUL byte,
/// name 1, a NUL, ... (names never contain a NUL). `*out_size` is the block's length,
/// every NUL included; for a file without objects it is 0 and `*out_names` points to an
/// empty string. The block is made on the first call (one allocation, the size of the
/// names) and every later call returns the same pointer; borrowed until `zt_close`.
///
/// For bindings that pay for each call (Python's cffi and ctypes, cgo, JNI): the names of
/// 50,000 objects in one call instead of 50,000 `zt_object_get_info` calls. Thread-safe.
/// `ZT_ERR_LIMIT` when the block can't be allocated.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_get_names(
    reader: *const zt_reader,
    out_names: *mut *const c_char,
    out_size: *mut usize,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out_names, "out_names")?;
        need_out(out_size, "out_size")?;
        let block = names(r)?;
        let start: *const c_char = if block.is_empty() {
            c"".as_ptr()
        } else {
            block.as_ptr().cast()
        };
        put(out_names, start);
        put(out_size, block.len());
        Ok(())
    })
}

/// One object as `zt_file_get_objects` describes it: what `zt_object_get_info` gives, and
/// what `zt_component_get_info` gives of its first component (the `data` of a dense
/// object). Strings and the shape are borrowed until `zt_close`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_object_entry {
    /// The object's name.
    pub name: *const c_char,
    /// "dense", "sparse_csr", ... as `zt_object_info.format`.
    pub format: *const c_char,
    /// `ndim` entries; NULL when `ndim` is 0.
    pub shape: *const u64,
    /// Number of dimensions; 0 for a scalar.
    pub ndim: usize,
    /// Number of components; the fields below are 0 / NULL when it is 0.
    pub component_count: usize,
    /// Component 0: a `zt_dtype` value.
    pub dtype: u32,
    /// Component 0: a `zt_encoding` value.
    pub encoding: u32,
    /// Component 0: the logical type, or NULL.
    pub r#type: *const c_char,
    /// Component 0: the absolute offset of its stored bytes in its file.
    pub offset: u64,
    /// Component 0: stored bytes.
    pub length: u64,
    /// Component 0: decoded bytes.
    pub decoded_length: u64,
    /// Component 0: the file holding it (`zt_component_get_location`'s `shard`; 0 for a
    /// single file).
    pub shard: u32,
}

/// Describes objects `first` .. `first + count - 1` into `out[0 .. count]`, one
/// `zt_object_entry` each, in one call: the object and its first component, as
/// `zt_object_get_info` and `zt_component_get_info` describe them. For bindings that pay
/// for each call: the 50,000 objects of a large file in one call instead of 100,000.
/// O(count), no allocation, thread-safe. `ZT_ERR_INVALID_ARGUMENT` for a range past the
/// last object (`out` is then untouched); `count` 0 is a no-op (`out` may be NULL).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_get_objects(
    reader: *const zt_reader,
    first: usize,
    out: *mut zt_object_entry,
    count: usize,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        let objects = objects_in(r.inner().objects(), first, count)?;
        if count == 0 {
            return Ok(());
        }
        need_out(out, "out")?;
        let opt = |t: Option<&crate::model::CText>| t.map_or(std::ptr::null(), |t| t.as_ptr());
        for (k, o) in objects.iter().enumerate() {
            let c = o.components().first();
            let info = super::objects::object_info(o);
            let entry = zt_object_entry {
                name: info.name,
                format: info.format,
                shape: info.shape,
                ndim: info.ndim,
                component_count: info.component_count,
                dtype: c.map_or(0, |c| c.dtype() as u32),
                encoding: c.map_or(0, |c| c.encoding() as u32),
                r#type: c.map_or(std::ptr::null(), |c| opt(c.logical_type_c())),
                offset: c.map_or(0, |c| c.offset()),
                length: c.map_or(0, |c| c.length()),
                decoded_length: c.map_or(0, |c| c.decoded_length()),
                shard: c.map_or(0, |c| c.file()),
            };
            // SAFETY: `out` holds `count` entries, per the API contract; k < count.
            unsafe { out.add(k).write(entry) };
        }
        Ok(())
    })
}

/// `zt_object_columns.flags`: the object is `dense` and has exactly one component.
pub const ZT_OBJECT_DENSE: u32 = 1;
/// `zt_object_columns.flags`: component 0's stored bytes are its values, as they are
/// (raw encoding, no decoding step): at the shard's mapping + `offset` for a mapped file.
pub const ZT_OBJECT_PLAIN: u32 = 2;
/// `zt_object_columns.flags`: component 0 has a logical type (`zt_component_info.type`).
pub const ZT_OBJECT_TYPED: u32 = 4;

/// Caller arrays `zt_file_get_columns` fills, one element per object asked for (`count`),
/// about the object and its first component. Any column may be NULL: it is not filled.
/// A column-wise `zt_file_get_objects`, for bindings that turn each column into a list
/// or array in one step (Python's `ffi.unpack`, NumPy, cgo slices).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_object_columns {
    /// Component 0: the absolute offset of its stored bytes in its file (0 without one).
    pub offset: *mut u64,
    /// Component 0: decoded bytes.
    pub decoded_length: *mut u64,
    /// Component 0: a `zt_dtype` value.
    pub dtype: *mut u32,
    /// Component 0: the file holding it (`zt_component_get_location`'s `shard`).
    pub shard: *mut u32,
    /// `ZT_OBJECT_DENSE`, `ZT_OBJECT_PLAIN`, `ZT_OBJECT_TYPED`, or'ed.
    pub flags: *mut u32,
    /// Number of dimensions.
    pub ndim: *mut u32,
    /// Every object's dimensions, one object after another in object order (an object of
    /// `ndim` n takes the next n): `dims_capacity` elements.
    pub dims: *mut u64,
    /// How many elements `dims` holds.
    pub dims_capacity: usize,
    /// Set by every successful call, and by a `ZT_ERR_BUFFER_TOO_SMALL` one: how many
    /// dimensions the objects asked for have in all (what `dims` needs).
    pub dims_count: usize,
}

/// Describes objects `first` .. `first + count - 1` into the caller's columns (see
/// `zt_object_columns`), in one call. The shapes of objects of `ZT_OBJECT_DENSE` without
/// `ZT_OBJECT_TYPED` hold exactly `decoded_length / zt_dtype_get_size(dtype)` elements
/// (the reader checked it at open), so a binding can use them as they are.
///
/// `columns->dims_count` is set to the dimensions in all; when `dims` is not NULL and
/// `dims_capacity` is less, the call is `ZT_ERR_BUFFER_TOO_SMALL` and writes nothing else
/// (call again with a `dims` of `dims_count` elements). `ZT_ERR_INVALID_ARGUMENT` for a
/// range past the last object or a NULL `columns`. O(count), no allocation, thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_get_columns(
    reader: *const zt_reader,
    first: usize,
    count: usize,
    columns: *mut zt_object_columns,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(columns, "columns")?;
        // SAFETY: non-NULL, and the caller's per the API contract.
        let cols = unsafe { &mut *columns };
        let range = objects_in(r.inner().objects(), first, count)?;
        // Ranks are bounded by the open limits, so the sum fits.
        let dims_count: usize = range.iter().map(|o| o.shape().len()).sum();
        cols.dims_count = dims_count;
        if !cols.dims.is_null() && cols.dims_capacity < dims_count {
            bail!(
                BufferTooSmall,
                "dims holds {} elements; the objects have {dims_count} dimensions",
                cols.dims_capacity
            );
        }
        let mut at = 0;
        for (k, o) in range.iter().enumerate() {
            let c = o.components().first();
            let mut flags = 0;
            if o.single_dense().is_some() {
                flags |= ZT_OBJECT_DENSE;
            }
            if c.is_some_and(|c| c.is_plain()) {
                flags |= ZT_OBJECT_PLAIN;
            }
            if c.is_some_and(|c| c.logical_type().is_some()) {
                flags |= ZT_OBJECT_TYPED;
            }
            // SAFETY: each write is in bounds: a non-NULL column holds `count` elements per the API
            // contract, k < count; `dims` holds `dims_count` elements, checked above.
            unsafe {
                column(cols.offset, k, c.map_or(0, |c| c.offset()));
                column(cols.decoded_length, k, c.map_or(0, |c| c.decoded_length()));
                column(cols.dtype, k, c.map_or(0, |c| c.dtype() as u32));
                column(cols.shard, k, c.map_or(0, |c| c.file()));
                column(cols.flags, k, flags);
                column(cols.ndim, k, o.shape().len() as u32);
                if !cols.dims.is_null() {
                    let shape = o.shape();
                    std::ptr::copy_nonoverlapping(shape.as_ptr(), cols.dims.add(at), shape.len());
                }
            }
            at += o.shape().len();
        }
        Ok(())
    })
}

/// Objects `first` .. `first + count - 1` of `objects`; `InvalidArgument` for a range past
/// the last one.
fn objects_in(objects: &[Object], first: usize, count: usize) -> Result<&[Object]> {
    match first.checked_add(count).filter(|&e| e <= objects.len()) {
        Some(end) => Ok(&objects[first..end]),
        None => bail!(
            InvalidArgument,
            "objects {first} .. {first} + {count} are past the {} objects of the file",
            objects.len()
        ),
    }
}

/// Writes `value` at `out[k]` unless `out` is NULL.
///
/// # Safety
/// A non-NULL `out` must hold more than `k` elements.
unsafe fn column<T>(out: *mut T, k: usize, value: T) {
    if !out.is_null() {
        // SAFETY: per this function's contract.
        unsafe { out.add(k).write(value) };
    }
}

/// One run of objects as `zt_file_get_runs` reports it: objects `first` ..
/// `first + period * repeats - 1`, one repeat of `period` objects after another.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_object_run {
    /// The index of the run's first object.
    pub first: usize,
    /// Objects in one repeat (at least 1).
    pub period: usize,
    /// Repeats (at least 1). Above 1: object `first + j * period + i` (`i < period`,
    /// `j < repeats`) is like object `first + i` (both `ZT_OBJECT_DENSE` and
    /// `ZT_OBJECT_PLAIN`, the same dtype, logical type, shape, decoded length and shard),
    /// its stored bytes `j * stride` after those of `first + i`.
    pub repeats: usize,
    /// Bytes from one repeat's objects to the next's; 0 when `repeats` is 1.
    pub stride: u64,
}

/// Splits objects `first` .. `first + count - 1` into runs, in order, each object in one:
/// repeats (a model's layers: the same tensors laid out again `stride` bytes on) and, between
/// them, runs of one repeat of the objects that don't repeat. For bindings that pay for each
/// view: one strided view per object of a run's first repeat, `repeats` long, cut into
/// `repeats` views in one call (PyTorch's `unbind`), instead of a view per object.
///
/// What a run claims is exact (every object checked); the search is greedy and bounded
/// (periods up to 64 objects, at most 64 x `count` checks in all), so a binding must not
/// count on every repeat being found. `*out_count` is set to the runs (at most `count`);
/// when `runs` holds fewer (`capacity`), `ZT_ERR_BUFFER_TOO_SMALL` and nothing else is
/// written (`runs` may be NULL with `capacity` 0 to ask). `ZT_ERR_INVALID_ARGUMENT` for a
/// range past the last object. O(count) time and temporary memory, thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_get_runs(
    reader: *const zt_reader,
    first: usize,
    count: usize,
    runs: *mut zt_object_run,
    capacity: usize,
    out_count: *mut usize,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out_count, "out_count")?;
        let range = objects_in(r.inner().objects(), first, count)?;
        let found = crate::model::runs::runs(range);
        put(out_count, found.len());
        if capacity < found.len() {
            bail!(
                BufferTooSmall,
                "runs holds {capacity} entries; objects {first} .. {first} + {count} make {} runs",
                found.len()
            );
        }
        if !found.is_empty() {
            need_out(runs, "runs")?;
        }
        for (k, run) in found.iter().enumerate() {
            let entry = zt_object_run {
                first: first + run.start,
                period: run.period,
                repeats: run.repeats,
                stride: run.stride,
            };
            // SAFETY: `runs` holds `capacity` >= found.len() entries per the API contract.
            unsafe { runs.add(k).write(entry) };
        }
        Ok(())
    })
}
