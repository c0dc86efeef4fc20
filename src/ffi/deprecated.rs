//! C ABI: the old names of renamed functions, kept through the whole 0.x series as
//! exported functions (not macros), so that programs and bindings calling the old symbols
//! (ctypes, cgo, dlsym) still link and run. Each is declared `ZT_DEPRECATED` in the header,
//! so compilers warn where one is called, and calls its new name (docs/c-api.md has the
//! table). They are the last functions of the header; tests/c/test_deprecated_names.c
//! calls each once.

use std::ffi::{c_char, c_void};

use super::*;
use crate::error::bail;

/// Deprecated: the old name of `zt_open_fd_with`, which it calls.
#[deprecated(note = "renamed zt_open_fd_with")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_open_fd(
    fd: i32,
    options: *const zt_open_options,
    out: *mut *mut zt_reader,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_open_fd_with(fd, options, out) }
}

/// Deprecated: the old name of `zt_open_url_with`, which it calls.
#[deprecated(note = "renamed zt_open_url_with")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_open_url(
    url: *const c_char,
    options: *const zt_open_options,
    remote: *const zt_remote_options,
    out: *mut *mut zt_reader,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_open_url_with(url, options, remote, out) }
}

/// Deprecated: the old name of `zt_file_get_layout`, which it calls.
#[deprecated(note = "renamed zt_file_get_layout")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_layout_get(
    reader: *const zt_reader,
    out: *mut zt_file_layout,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_file_get_layout(reader, out) }
}

/// Deprecated: the old name of `zt_file_get_remote_stats`, which it calls.
#[deprecated(note = "renamed zt_file_get_remote_stats")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_remote_stats(
    reader: *const zt_reader,
    requests: *mut u64,
    bytes: *mut u64,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_file_get_remote_stats(reader, requests, bytes) }
}

/// Deprecated: the old name of `zt_shard_get_path`, which it calls.
#[deprecated(note = "renamed zt_shard_get_path")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_shard_path(
    reader: *const zt_reader,
    index: usize,
    path: *mut *const c_char,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_shard_get_path(reader, index, path) }
}

/// Deprecated: the old name of `zt_shard_get_mapping`, which it calls.
#[deprecated(note = "renamed zt_shard_get_mapping")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_shard_mapping(
    reader: *const zt_reader,
    index: usize,
    base: *mut *const c_void,
    size: *mut u64,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_shard_get_mapping(reader, index, base, size) }
}

/// Deprecated: the mapping of a single file, as `zt_shard_get_mapping(reader, 0, base,
/// size)` gives it; unlike that call, `ZT_ERR_NOT_FOUND` for a set.
#[deprecated(note = "use zt_shard_get_mapping of file 0")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_mapping(
    reader: *const zt_reader,
    base: *mut *const c_void,
    size: *mut u64,
) -> zt_status {
    let refused = guard(|| {
        let r = super::handles::reader(reader)?;
        need_out(base, "base")?;
        need_out(size, "size")?;
        if r.inner().is_set() {
            bail!(
                NotFound,
                "the reader reads a set of {} files, each mapped on its own: see \
                 zt_shard_get_mapping",
                r.inner().shard_count()
            );
        }
        Ok(())
    });
    if refused != zt_status::ZT_OK {
        return refused;
    }
    // SAFETY: forwarded contract; a single file's file 0 is the file itself.
    unsafe { super::zt_shard_get_mapping(reader, 0, base, size) }
}

/// Deprecated: the old name of `zt_object_get_info`, which it calls.
#[deprecated(note = "renamed zt_object_get_info")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_info_get(
    reader: *const zt_reader,
    index: usize,
    out: *mut zt_object_info,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_object_get_info(reader, index, out) }
}

/// Deprecated: the old name of `zt_object_get_quant_info`, which it calls.
#[deprecated(note = "renamed zt_object_get_quant_info")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_quant_info_get(
    reader: *const zt_reader,
    object: usize,
    out: *mut zt_quant_info,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_object_get_quant_info(reader, object, out) }
}

/// Deprecated: the old name of `zt_component_get_info`, which it calls.
#[deprecated(note = "renamed zt_component_get_info")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_info_get(
    reader: *const zt_reader,
    object: usize,
    component: usize,
    out: *mut zt_component_info,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_component_get_info(reader, object, component, out) }
}

/// Deprecated: the old name of `zt_component_get_location`, which it calls.
#[deprecated(note = "renamed zt_component_get_location")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_location(
    reader: *const zt_reader,
    object: usize,
    component: usize,
    out: *mut zt_location,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_component_get_location(reader, object, component, out) }
}

/// Deprecated: the old name of `zt_component_get_frame_count`, which it calls.
#[deprecated(note = "renamed zt_component_get_frame_count")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_frame_count(
    reader: *const zt_reader,
    object: usize,
    role: *const c_char,
    out_count: *mut usize,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_component_get_frame_count(reader, object, role, out_count) }
}

/// Deprecated: the old name of `zt_component_get_frame`, which it calls.
#[deprecated(note = "renamed zt_component_get_frame")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_frame_get(
    reader: *const zt_reader,
    object: usize,
    role: *const c_char,
    frame: usize,
    out: *mut zt_frame_info,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_component_get_frame(reader, object, role, frame, out) }
}

/// Deprecated: the old name of `zt_batch_load`, which it calls.
#[deprecated(note = "renamed zt_batch_load")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_load_batch(
    reader: *const zt_reader,
    requests: *mut zt_load_request,
    count: usize,
    options: *const zt_batch_options,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_batch_load(reader, requests, count, options) }
}

/// Deprecated: the old name of `zt_file_verify`, which it calls.
#[deprecated(note = "renamed zt_file_verify")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_verify(reader: *const zt_reader) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_file_verify(reader) }
}

/// Deprecated: `zt_file_get_attributes_json` when `object` is `SIZE_MAX`, else
/// `zt_object_get_attributes_json`.
#[deprecated(note = "use zt_file_get_attributes_json or zt_object_get_attributes_json")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_attributes_json(
    reader: *const zt_reader,
    object: usize,
    out_json: *mut *const c_char,
) -> zt_status {
    guard(|| {
        let object = (object != usize::MAX).then_some(object);
        super::attrs::attributes_json(super::handles::reader(reader)?, object, out_json)
    })
}

/// Deprecated: `zt_file_get_attributes` when `object` is `SIZE_MAX`, else
/// `zt_object_get_attributes`.
#[deprecated(note = "use zt_file_get_attributes or zt_object_get_attributes")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_attributes(
    reader: *const zt_reader,
    object: usize,
    out: *mut *const zt_value,
) -> zt_status {
    guard(|| super::attrs::attributes(reader, (object != usize::MAX).then_some(object), out))
}

/// Deprecated: the old name of `zt_file_get_attribute`, which it calls.
#[deprecated(note = "renamed zt_file_get_attribute")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_attribute(
    reader: *const zt_reader,
    key: *const c_char,
    out: *mut *const zt_value,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_file_get_attribute(reader, key, out) }
}

/// Deprecated: the old name of `zt_object_get_attribute`, which it calls.
#[deprecated(note = "renamed zt_object_get_attribute")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_attribute(
    reader: *const zt_reader,
    object: usize,
    key: *const c_char,
    out: *mut *const zt_value,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_object_get_attribute(reader, object, key, out) }
}

/// Deprecated: the old name of `zt_value_get_string`, which it calls.
#[deprecated(note = "renamed zt_value_get_string")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_string(
    v: *const zt_value,
    out_data: *mut *const c_char,
    out_len: *mut usize,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_value_get_string(v, out_data, out_len) }
}

/// Deprecated: the old name of `zt_value_get_bytes`, which it calls.
#[deprecated(note = "renamed zt_value_get_bytes")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_bytes(
    v: *const zt_value,
    out_data: *mut *const u8,
    out_len: *mut usize,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_value_get_bytes(v, out_data, out_len) }
}

/// Deprecated: the old name of `zt_value_get_count`, which it calls.
#[deprecated(note = "renamed zt_value_get_count")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_count(v: *const zt_value, out_count: *mut usize) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_value_get_count(v, out_count) }
}

/// Deprecated: the old name of `zt_value_get_array_type`, which it calls.
#[deprecated(note = "renamed zt_value_get_array_type")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_array_type(v: *const zt_value, out_type: *mut u32) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_value_get_array_type(v, out_type) }
}

/// Deprecated: the old name of `zt_value_get_array_data`, which it calls.
#[deprecated(note = "renamed zt_value_get_array_data")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_array_data(
    v: *const zt_value,
    out_data: *mut *const c_void,
    out_count: *mut usize,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_value_get_array_data(v, out_data, out_count) }
}

/// Deprecated: the old name of `zt_value_get_element`, which it calls.
#[deprecated(note = "renamed zt_value_get_element")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_array_get(
    v: *const zt_value,
    index: usize,
    out: *mut *const zt_value,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_value_get_element(v, index, out) }
}

/// Deprecated: the old name of `zt_value_get_element_string`, which it calls.
#[deprecated(note = "renamed zt_value_get_element_string")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_array_string(
    v: *const zt_value,
    index: usize,
    out_data: *mut *const c_char,
    out_len: *mut usize,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_value_get_element_string(v, index, out_data, out_len) }
}

/// Deprecated: the old name of `zt_value_get_entry`, which it calls.
#[deprecated(note = "renamed zt_value_get_entry")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_map_entry(
    v: *const zt_value,
    index: usize,
    out_key: *mut *const zt_value,
    out_value: *mut *const zt_value,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_value_get_entry(v, index, out_key, out_value) }
}

/// Deprecated: the old name of `zt_value_find`, which it calls.
#[deprecated(note = "renamed zt_value_find")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_map_find(
    v: *const zt_value,
    key: *const c_char,
    out: *mut *const zt_value,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_value_find(v, key, out) }
}

/// Deprecated: the old name of `zt_writer_create_sharded_with`, which it calls.
#[deprecated(note = "renamed zt_writer_create_sharded_with")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_create_sharded(
    base: *const c_char,
    max_shard_bytes: u64,
    options: *const zt_writer_options,
    out: *mut *mut zt_writer,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_writer_create_sharded_with(base, max_shard_bytes, options, out) }
}

/// Deprecated: the old name of `zt_dtype_get_size`, which it calls.
#[deprecated(note = "renamed zt_dtype_get_size")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_dtype_size(dtype: u32, out_size: *mut usize) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_dtype_get_size(dtype, out_size) }
}

/// Deprecated: the old name of `zt_dtype_find`, which it calls.
#[deprecated(note = "renamed zt_dtype_find")]
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_dtype_from_name(name: *const c_char, out: *mut u32) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { super::zt_dtype_find(name, out) }
}
