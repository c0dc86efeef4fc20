//! C ABI: the files of a set (an `*.index.json` or a GGUF split set opened as one
//! reader): how many, where each is, which one holds a component, a shard's mapping and
//! its layout.

use std::ffi::{c_char, c_void};

use super::read::{reader, zt_reader};
use super::{guard, need_out, put, zt_status};
use crate::error::err;

/// Where a component's stored bytes are (`zt_component_location`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zt_location {
    /// The file holding them: an index for `zt_shard_path` (0 for a single file).
    pub shard: u32,
    /// Absolute offset of the stored bytes in that file.
    pub offset: u64,
    /// Stored (possibly compressed) bytes.
    pub length: u64,
}

/// How many files the reader reads: the shards of a set, 1 for a single file; 0 for
/// NULL. O(1).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_shard_count(reader: *const zt_reader) -> usize {
    // SAFETY: NULL or a reader from zt_open.
    super::guard_value(0, || {
        unsafe { reader.as_ref() }.map_or(0, |r| r.inner().shard_count())
    })
}

/// The path of file `index` (< `zt_shard_count`): a set's shard as the reader opens it
/// (the index's directory joined with the name in `weight_map`, or the split's path next
/// to the one opened); for a single file, the path it was opened from. Borrowed until
/// `zt_close`. `ZT_ERR_NOT_FOUND` for an index out of range, or a single file opened
/// from memory or a descriptor.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_shard_path(
    reader: *const zt_reader,
    index: usize,
    path: *mut *const c_char,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(path, "path")?;
        r.inner().shard_path(index)?;
        let p = r.paths.get(index).and_then(Option::as_ref).ok_or_else(|| {
            err!(
                NotFound,
                "file {index} has no path: the reader was opened from memory or a descriptor"
            )
        })?;
        put(path, p.as_ptr());
        Ok(())
    })
}

/// Which file holds component `component` of object `object`, and where in it: the
/// shard index (for `zt_shard_path` / `zt_shard_mapping`) and the absolute offset and
/// length of the stored bytes there. O(1), opens nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_location(
    reader: *const zt_reader,
    object: usize,
    component: usize,
    out: *mut zt_location,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out, "out")?;
        let o = r.inner().object(object)?;
        let c = o.components().get(component).ok_or_else(|| {
            err!(
                NotFound,
                "object '{}' has no component at index {component}",
                o.name()
            )
        })?;
        put(
            out,
            zt_location {
                shard: c.file(),
                offset: c.offset(),
                length: c.length(),
            },
        );
        Ok(())
    })
}

/// File `index`'s mapping, as `zt_mapping` gives a single file's (which, for a set, is
/// `ZT_ERR_NOT_FOUND`): `*base` is the file's byte 0, `*size` its length; a component
/// `zt_component_location` places in this file is at `base + offset`. A shard not open
/// yet is opened and mapped now. Borrowed until `zt_close`. `ZT_ERR_NOT_FOUND` for an
/// index out of range or a reader opened with `ZT_OPEN_NO_MMAP`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_shard_mapping(
    reader: *const zt_reader,
    index: usize,
    base: *mut *const c_void,
    size: *mut u64,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(base, "base")?;
        need_out(size, "size")?;
        let map = r.inner().shard_mapping(index)?.ok_or_else(|| {
            err!(
                NotFound,
                "the reader has no mapping: it was opened with ZT_OPEN_NO_MMAP"
            )
        })?;
        put(base, map.as_ptr().cast());
        put(size, map.len() as u64);
        Ok(())
    })
}

/// File `shard`'s data-section offset and alignment (`zt_file_layout_get` of a single
/// file, whose shard 0 this is): for a set each shard is a file of its own, with its own
/// data section. A component's `offset - data_offset` (ggml's tensor offset for a GGUF
/// split) uses the layout of the shard `zt_component_location` names. O(1), opens
/// nothing. `ZT_ERR_NOT_FOUND` for a shard out of range. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_shard_get_layout(
    reader: *const zt_reader,
    shard: usize,
    out: *mut super::zt_file_layout,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out, "out")?;
        let l = r.inner().shard_layout(shard)?;
        put(
            out,
            super::zt_file_layout {
                data_offset: l.data_offset,
                alignment: l.alignment,
            },
        );
        Ok(())
    })
}
