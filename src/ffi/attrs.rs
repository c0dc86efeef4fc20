//! C ABI: attributes, as JSON text and as typed values (`Reader::typed_attributes`,
//! `typed::AttrValue`).

use std::ffi::{CString, c_char, c_void};

use super::handles::{self, Handle, Lent};
use super::handles::{reader as handle, zt_reader};
use super::{guard, guard_value, need_out, need_str, put, zt_status};
use crate::error::{Result, err};
use crate::value::typed::{AttrScalar, AttrValue, Node, ValueType};

/// An attribute value: a scalar, a string, bytes, an array or a map. Opaque and
/// immutable, usable from many threads at once. A reader's values (`const zt_value *`)
/// are borrowed: valid until `zt_close` of that reader, never freed by the caller. A value
/// made to write (`zt_value_create_*`, a `zt_value *`) is the caller's: valid until
/// `zt_value_free`. Every `zt_value_get_*` call reads both kinds.
pub struct zt_value {
    _opaque: [u8; 0],
}

/// The type of an attribute value; values are stable. Integers keep the width the file
/// used (GGUF's u8 ... i64); formats without widths (zTensor's and Tensogram's CBOR,
/// safetensors' strings) give `ZT_VALUE_U64` for non-negative integers, `ZT_VALUE_I64`
/// for negative ones and `ZT_VALUE_F64` for floats. Functions give them as `uint32_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zt_value_type {
    /// null (CBOR null or undefined).
    ZT_VALUE_NULL = 0,
    /// False or true.
    ZT_VALUE_BOOL = 1,
    /// A signed 8-bit integer.
    ZT_VALUE_I8 = 2,
    /// A signed 16-bit integer.
    ZT_VALUE_I16 = 3,
    /// A signed 32-bit integer.
    ZT_VALUE_I32 = 4,
    /// A signed 64-bit integer; a negative integer of a format without widths.
    ZT_VALUE_I64 = 5,
    /// An unsigned 8-bit integer.
    ZT_VALUE_U8 = 6,
    /// An unsigned 16-bit integer.
    ZT_VALUE_U16 = 7,
    /// An unsigned 32-bit integer.
    ZT_VALUE_U32 = 8,
    /// An unsigned 64-bit integer; a non-negative integer of a format without widths.
    ZT_VALUE_U64 = 9,
    /// A 32-bit float.
    ZT_VALUE_F32 = 10,
    /// A 64-bit float; any float of a format without widths.
    ZT_VALUE_F64 = 11,
    /// UTF-8 text (a GGUF string that is not UTF-8 keeps its bytes as stored).
    ZT_VALUE_STRING = 12,
    /// A byte string.
    ZT_VALUE_BYTES = 13,
    /// An array (`zt_value_get_array_type` gives its elements' type).
    ZT_VALUE_ARRAY = 14,
    /// A map of keys to values, in their stored order.
    ZT_VALUE_MAP = 15,
    /// No typed equivalent: a CBOR simple value other than false, true, null and
    /// undefined, or an integer below -2^63 (`zt_file_get_attributes_json` renders it).
    ZT_VALUE_OTHER = 16,
    /// Only from `zt_value_get_array_type`: elements of more than one type, or an empty array
    /// whose format declares no element type.
    ZT_VALUE_MIXED = 255,
}

/// A value is a node of a typed tree its reader keeps until `zt_close`, or that
/// `values.rs` keeps until `zt_value_free`.
impl Handle for zt_value {
    const NAME: &'static str = "value";
    type Owned = Lent;
    type Target = Node;
}

pub(super) fn value<'a>(v: *const zt_value) -> Result<AttrValue<'a>> {
    let node: &Node = handles::get(v)?;
    // SAFETY: a value handle is an `AttrValue::as_ptr` of a tree its reader keeps until
    // zt_close (or the registry until zt_value_free), per the API contract.
    Ok(unsafe { AttrValue::from_ptr(node) })
}

pub(super) fn handle_of(v: AttrValue<'_>) -> *const zt_value {
    v.as_ptr().cast()
}

/// The file's attributes as JSON text (CBOR bytes as {"$bytes":"<hex>"}, tags as
/// {"$tag":n,"value":v}, map keys that are not text as their JSON text, or as
/// "$cbor:<hex>" when they hold such keys themselves), borrowed until `zt_close`;
/// rendered once on first request; "{}" when there are none. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_get_attributes_json(
    reader: *const zt_reader,
    out_json: *mut *const c_char,
) -> zt_status {
    guard(|| attributes_json(handle(reader)?, None, out_json))
}

/// Object `object`'s attributes as JSON text, as `zt_file_get_attributes_json` gives the
/// file's; "{}" when there are none. `ZT_ERR_NOT_FOUND` for an object index out of range.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_get_attributes_json(
    reader: *const zt_reader,
    object: usize,
    out_json: *mut *const c_char,
) -> zt_status {
    guard(|| attributes_json(handle(reader)?, Some(object), out_json))
}

/// The attributes of `object` (None: the file's) as JSON, rendered once and kept until
/// `zt_close`.
pub(super) fn attributes_json(
    r: &zt_reader,
    object: Option<usize>,
    out_json: *mut *const c_char,
) -> Result<()> {
    need_out(out_json, "out_json")?;
    let (slot, attrs) = match object {
        None => (r.reader.objects().len(), r.reader.raw_attributes()),
        Some(object) => (object, r.reader.object(object)?.raw_attributes()),
    };
    let rendered = || r.json.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(text) = rendered().get(&slot) {
        put(out_json, text.as_ptr());
        return Ok(());
    }
    // Rendered without the lock; a thread that rendered the same first wins.
    let json = attrs.map_or_else(|| Ok("{}".to_owned()), |a| a.to_json())?;
    // JSON escapes every control character, so there is no NUL inside.
    let json = CString::new(json).unwrap_or_else(|_| c"{}".to_owned());
    // The text stays where it is (a CString owns its bytes) until zt_close.
    put(out_json, rendered().entry(slot).or_insert(json).as_ptr());
    Ok(())
}

/// The file's typed attribute map: an empty map when there are none. The first call for
/// a map builds its values (16 bytes per item; strings are not copied); every later call
/// and every `zt_value_*` call allocates nothing. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_get_attributes(
    reader: *const super::zt_reader,
    out: *mut *const zt_value,
) -> zt_status {
    guard(|| attributes(reader, None, out))
}

/// Object `object`'s typed attribute map, as `zt_file_get_attributes` gives the file's.
/// `ZT_ERR_NOT_FOUND` for an object index out of range. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_get_attributes(
    reader: *const super::zt_reader,
    object: usize,
    out: *mut *const zt_value,
) -> zt_status {
    guard(|| attributes(reader, Some(object), out))
}

/// The typed attribute map of `object` (None: the file's).
pub(super) fn attributes(
    reader: *const super::zt_reader,
    object: Option<usize>,
    out: *mut *const zt_value,
) -> Result<()> {
    let r = handle(reader)?;
    need_out(out, "out")?;
    put(out, handle_of(r.inner().typed_attributes(object)?));
    Ok(())
}

/// One file attribute by key, e.g. "llama.block_count", "general.alignment" (GGUF
/// key/values), a safetensors `__metadata__` entry, a zTensor or Tensogram file
/// attribute. `ZT_ERR_NOT_FOUND` naming the key when absent. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_find_attribute(
    reader: *const super::zt_reader,
    key: *const c_char,
    out: *mut *const zt_value,
) -> zt_status {
    guard(|| {
        let r = handle(reader)?;
        let key = need_str(key, "key")?;
        need_out(out, "out")?;
        put(out, handle_of(r.inner().typed_attribute(None, key)?));
        Ok(())
    })
}

/// One attribute of an object by key. `ZT_ERR_NOT_FOUND` naming the key when absent, or
/// for an object index out of range. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_find_attribute(
    reader: *const super::zt_reader,
    object: usize,
    key: *const c_char,
    out: *mut *const zt_value,
) -> zt_status {
    guard(|| {
        let r = handle(reader)?;
        let key = need_str(key, "key")?;
        need_out(out, "out")?;
        put(
            out,
            handle_of(r.inner().typed_attribute(Some(object), key)?),
        );
        Ok(())
    })
}

/// The type of a value (a `zt_value_type`). Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_type(v: *const zt_value, out_type: *mut u32) -> zt_status {
    guard(|| {
        let v = value(v)?;
        need_out(out_type, "out_type")?;
        put(out_type, v.value_type() as u32);
        Ok(())
    })
}

/// The name of a value type: "null", "bool", "i8", "i16", "i32", "i64", "u8", "u16",
/// "u32", "u64", "f32", "f64", "string", "bytes", "array", "map", "other", "mixed";
/// "unknown" for other values. Never NULL; static storage. Thread-safe.
#[unsafe(no_mangle)]
pub extern "C" fn zt_value_type_name(value_type: u32) -> *const c_char {
    guard_value(c"unknown".as_ptr(), || {
        if value_type == zt_value_type::ZT_VALUE_MIXED as u32 {
            return c"mixed".as_ptr();
        }
        ValueType::from_u32(value_type).map_or(c"unknown".as_ptr(), |t| t.c_name().as_ptr())
    })
}

fn get<T: AttrScalar>(v: *const zt_value, out: *mut T) -> zt_status {
    guard(|| {
        let v = value(v)?;
        need_out(out, "out")?;
        put(out, v.get::<T>()?);
        Ok(())
    })
}

/// A bool value. Scalar getters (`zt_value_get_*`) convert only without loss: an
/// integer of any type reads as any integer type its value fits (a u8 as u32, a u64 of
/// 300 as u16; -1 never as unsigned), f32 and f64 as f64, f64 as f32 when exactly
/// representable; bool only as bool. Anything else is `ZT_ERR_INVALID_ARGUMENT` naming
/// both types, e.g. "attribute value is u64 (300), not u8"; check `zt_value_get_type`
/// first for llama.cpp's exact-type rule. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_bool(v: *const zt_value, out: *mut bool) -> zt_status {
    get(v, out)
}

/// An integer that fits int8_t (the rules: `zt_value_get_bool`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_i8(v: *const zt_value, out: *mut i8) -> zt_status {
    get(v, out)
}

/// An integer that fits int16_t.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_i16(v: *const zt_value, out: *mut i16) -> zt_status {
    get(v, out)
}

/// An integer that fits int32_t.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_i32(v: *const zt_value, out: *mut i32) -> zt_status {
    get(v, out)
}

/// An integer that fits int64_t.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_i64(v: *const zt_value, out: *mut i64) -> zt_status {
    get(v, out)
}

/// An integer that fits uint8_t.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_u8(v: *const zt_value, out: *mut u8) -> zt_status {
    get(v, out)
}

/// An integer that fits uint16_t.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_u16(v: *const zt_value, out: *mut u16) -> zt_status {
    get(v, out)
}

/// An integer that fits uint32_t.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_u32(v: *const zt_value, out: *mut u32) -> zt_status {
    get(v, out)
}

/// An integer that fits uint64_t.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_u64(v: *const zt_value, out: *mut u64) -> zt_status {
    get(v, out)
}

/// An f32, or an f64 exactly representable as f32.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_f32(v: *const zt_value, out: *mut f32) -> zt_status {
    get(v, out)
}

/// An f32 or f64.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_f64(v: *const zt_value, out: *mut f64) -> zt_status {
    get(v, out)
}

/// A string: its bytes and length, borrowed until `zt_close`. Not NUL-terminated (a
/// string may contain NUL); UTF-8 except a GGUF string that was not. The pointer is
/// non-NULL even for "". `ZT_ERR_INVALID_ARGUMENT` for another type. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_string(
    v: *const zt_value,
    out_data: *mut *const c_char,
    out_len: *mut usize,
) -> zt_status {
    guard(|| {
        let v = value(v)?;
        need_out(out_data, "out_data")?;
        need_out(out_len, "out_len")?;
        let s = v.string_bytes()?;
        put(out_data, nonnull(s).cast());
        put(out_len, s.len());
        Ok(())
    })
}

/// A pointer that is never NULL, for empty strings and arrays too.
fn nonnull(s: &[u8]) -> *const u8 {
    if s.is_empty() {
        c"".as_ptr().cast()
    } else {
        s.as_ptr()
    }
}

/// A byte string: its bytes and length, borrowed until `zt_close`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_bytes(
    v: *const zt_value,
    out_data: *mut *const u8,
    out_len: *mut usize,
) -> zt_status {
    guard(|| {
        let v = value(v)?;
        need_out(out_data, "out_data")?;
        need_out(out_len, "out_len")?;
        let b = v.as_bytes()?;
        put(out_data, nonnull(b));
        put(out_len, b.len());
        Ok(())
    })
}

/// The number of elements of an array or entries of a map. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_count(
    v: *const zt_value,
    out_count: *mut usize,
) -> zt_status {
    guard(|| {
        let v = value(v)?;
        need_out(out_count, "out_count")?;
        put(out_count, v.len()?);
        Ok(())
    })
}

/// The element type of an array (GGUF's declared one, or the type all elements share);
/// `ZT_VALUE_MIXED` when they differ, or for an empty array with no declared type.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_array_type(
    v: *const zt_value,
    out_type: *mut u32,
) -> zt_status {
    guard(|| {
        let v = value(v)?;
        need_out(out_type, "out_type")?;
        let t = v.elem_type()?;
        put(
            out_type,
            t.map_or(zt_value_type::ZT_VALUE_MIXED as u32, |t| t as u32),
        );
        Ok(())
    })
}

/// The elements of an array of one numeric type or of bools, contiguous in memory and
/// aligned for their type: cast `*out_data` to `const uint32_t *` for `ZT_VALUE_U32`
/// (`zt_value_get_array_type`), `const bool *` for `ZT_VALUE_BOOL`, and so on. Borrowed until
/// `zt_close`; never NULL. `ZT_ERR_INVALID_ARGUMENT` for arrays of strings, arrays, maps
/// or mixed types (read those by index) and for non-arrays. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_array_data(
    v: *const zt_value,
    out_data: *mut *const c_void,
    out_count: *mut usize,
) -> zt_status {
    guard(|| {
        let v = value(v)?;
        need_out(out_data, "out_data")?;
        need_out(out_count, "out_count")?;
        let (_, data, count) = v.array_data()?;
        let data = if count == 0 {
            c"".as_ptr().cast()
        } else {
            data
        };
        put(out_data, data.cast());
        put(out_count, count);
        Ok(())
    })
}

/// Element `index` of an array as a value. `ZT_ERR_INVALID_ARGUMENT` for an index out of
/// range or a non-array. (An array of numbers keeps its numbers, not values: the first
/// call for an element makes the values of the 1024 around it, 16 bytes each, kept until
/// `zt_close`, within the attribute tree's budget (8 bytes per byte of the attributes'
/// encoding, plus 1 MiB); past it, or when memory runs out, `ZT_ERR_LIMIT`.
/// `zt_value_get_array_data` reads the numbers themselves and needs none.) Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_element(
    v: *const zt_value,
    index: usize,
    out: *mut *const zt_value,
) -> zt_status {
    guard(|| {
        let v = value(v)?;
        need_out(out, "out")?;
        put(out, handle_of(v.at(index)?));
        Ok(())
    })
}

/// Element `index` of an array of strings (e.g. GGUF's tokenizer.ggml.tokens), as
/// `zt_value_get_string` gives it, in one call, making no value. An array of numbers is
/// `ZT_ERR_INVALID_ARGUMENT` at once, whatever the index. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_element_string(
    v: *const zt_value,
    index: usize,
    out_data: *mut *const c_char,
    out_len: *mut usize,
) -> zt_status {
    guard(|| {
        let v = value(v)?;
        need_out(out_data, "out_data")?;
        need_out(out_len, "out_len")?;
        let s = v.string_at(index)?;
        put(out_data, nonnull(s).cast());
        put(out_len, s.len());
        Ok(())
    })
}

/// Entry `index` of a map, in the file's order: its key and value (either out pointer
/// may be NULL when not wanted). Keys are strings in every format but CBOR maps may have
/// others. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_get_entry(
    v: *const zt_value,
    index: usize,
    out_key: *mut *const zt_value,
    out_value: *mut *const zt_value,
) -> zt_status {
    guard(|| {
        let v = value(v)?;
        let (key, val) = v.entry(index)?;
        if !out_key.is_null() {
            put(out_key, handle_of(key));
        }
        if !out_value.is_null() {
            put(out_value, handle_of(val));
        }
        Ok(())
    })
}

/// The value of a map's first entry whose key is the string `key`; `ZT_ERR_NOT_FOUND`
/// naming it when absent. Linear in the map's size. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_find(
    v: *const zt_value,
    key: *const c_char,
    out: *mut *const zt_value,
) -> zt_status {
    guard(|| {
        let v = value(v)?;
        let key = need_str(key, "key")?;
        need_out(out, "out")?;
        let found = v
            .find(key)?
            .ok_or_else(|| err!(NotFound, "the map has no key '{key}'"))?;
        put(out, handle_of(found));
        Ok(())
    })
}
