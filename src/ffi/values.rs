//! C ABI: attribute values to write (`zt_value_create_*`, `zt_value_free`). A value made
//! here is a `zt_value` like a reader's: every `zt_value_get_*` call reads it, and the
//! writer's attribute calls take either kind. Each holds its own typed tree (CBOR and
//! the width record of `TypedValue::encode`, built as a reader builds a file's), kept in
//! a registry until `zt_value_free`, so a pointer that was not made here is refused
//! rather than freed.

use std::collections::HashMap;
use std::ffi::{c_char, c_void};
use std::sync::{LazyLock, Mutex};

use super::attrs::{handle_of, value, zt_value};
use super::{guard, guard_value, need_bytes, need_out, need_str, put, zt_status};
use crate::error::{Result, bail, err};
use crate::limits::MAX_CBOR_DEPTH;
use crate::value::typed::{Doc, TypedValue, ValueType};

/// A value made by `zt_value_create_*`: its CBOR and the tree over it.
struct Owned {
    // Kept for the handle, which points into it; declared first, dropped first: the tree
    // points into the CBOR.
    _doc: Doc,
    _cbor: Box<[u8]>,
}

/// Every value made and not yet freed, by handle address.
static OWNED: LazyLock<Mutex<HashMap<usize, Owned>>> = LazyLock::new(Default::default);

fn registry() -> std::sync::MutexGuard<'static, HashMap<usize, Owned>> {
    OWNED.lock().unwrap_or_else(|p| p.into_inner())
}

/// Makes the value and hands out its handle.
fn create(v: TypedValue, out: *mut *mut zt_value) -> Result<()> {
    need_out(out, "out")?;
    let (cbor, desc) = v.encode();
    let cbor = crate::value::cbor::to_vec(&cbor).into_boxed_slice();
    let doc = match &desc {
        Some(d) => Doc::build_with_record(&cbor, d, MAX_CBOR_DEPTH)?,
        None => Doc::build(&cbor, None, MAX_CBOR_DEPTH)?,
    };
    let handle = handle_of(doc.root()).cast_mut();
    registry().insert(
        handle as usize,
        Owned {
            _doc: doc,
            _cbor: cbor,
        },
    );
    put(out, handle);
    Ok(())
}

/// A value given to a writer or a container: a reader's or one made here, copied with
/// its types.
pub(super) fn typed(v: *const zt_value) -> Result<TypedValue> {
    TypedValue::from_attr(value(v)?)
}

/// An array `items` of `count` pointers (NULL when `count` is 0).
fn pointers<'p, T>(items: *const *const T, count: usize, what: &str) -> Result<&'p [*const T]> {
    if count == 0 {
        return Ok(&[]);
    }
    if items.is_null() {
        bail!(InvalidArgument, "{what} is NULL but count is {count}");
    }
    // SAFETY: the caller passes `count` pointers, per the API contract.
    Ok(unsafe { std::slice::from_raw_parts(items, count) })
}

/// A null value, to write (free with `zt_value_free`). Every `zt_value_create_*` call
/// makes a value that `zt_value_get_*` reads as any other and that the writer's
/// attribute calls take (`zt_writer_set_file_attribute` ...), owned by the caller until
/// `zt_value_free`; values are immutable, so one may be used from many threads and put
/// into many containers and files. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_null(out: *mut *mut zt_value) -> zt_status {
    guard(|| create(TypedValue::Null, out))
}

/// A bool value (see `zt_value_create_null`).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_bool(value: bool, out: *mut *mut zt_value) -> zt_status {
    guard(|| create(TypedValue::Bool(value), out))
}

/// An i8 value: written so that a typed read gives back `ZT_VALUE_I8`, as each of these
/// calls keeps its type (CBOR, which attributes are, only knows u64, i64 and f64; the
/// file records the rest beside the values, docs/format.md).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_i8(value: i8, out: *mut *mut zt_value) -> zt_status {
    guard(|| create(TypedValue::I8(value), out))
}

/// An i16 value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_i16(value: i16, out: *mut *mut zt_value) -> zt_status {
    guard(|| create(TypedValue::I16(value), out))
}

/// An i32 value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_i32(value: i32, out: *mut *mut zt_value) -> zt_status {
    guard(|| create(TypedValue::I32(value), out))
}

/// An i64 value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_i64(value: i64, out: *mut *mut zt_value) -> zt_status {
    guard(|| create(TypedValue::I64(value), out))
}

/// A u8 value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_u8(value: u8, out: *mut *mut zt_value) -> zt_status {
    guard(|| create(TypedValue::U8(value), out))
}

/// A u16 value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_u16(value: u16, out: *mut *mut zt_value) -> zt_status {
    guard(|| create(TypedValue::U16(value), out))
}

/// A u32 value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_u32(value: u32, out: *mut *mut zt_value) -> zt_status {
    guard(|| create(TypedValue::U32(value), out))
}

/// A u64 value.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_u64(value: u64, out: *mut *mut zt_value) -> zt_status {
    guard(|| create(TypedValue::U64(value), out))
}

/// An f32 value (NaN keeps no payload).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_f32(value: f32, out: *mut *mut zt_value) -> zt_status {
    guard(|| create(TypedValue::F32(value), out))
}

/// An f64 value (NaN keeps no payload).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_f64(value: f64, out: *mut *mut zt_value) -> zt_status {
    guard(|| create(TypedValue::F64(value), out))
}

/// A string of `len` bytes at `data` (NULL when `len` is 0), copied. UTF-8 is expected
/// but not required: bytes that are not UTF-8 (as GGUF allows) are kept as they are and
/// still read back as a string.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_string(
    data: *const c_char,
    len: usize,
    out: *mut *mut zt_value,
) -> zt_status {
    guard(|| {
        let bytes = need_bytes(data.cast(), len, "data")?;
        create(TypedValue::String(bytes.to_vec()), out)
    })
}

/// A byte string of `len` bytes at `data` (NULL when `len` is 0), copied.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_bytes(
    data: *const c_void,
    len: usize,
    out: *mut *mut zt_value,
) -> zt_status {
    guard(|| {
        create(
            TypedValue::Bytes(need_bytes(data, len, "data")?.to_vec()),
            out,
        )
    })
}

/// An array of `count` numbers (or bools) of `element_type` (a `zt_value_type`:
/// `ZT_VALUE_BOOL`, `_I8` ... `_U64`, `_F32`, `_F64`) at `data`, as
/// `zt_value_get_array_data` gives them back (`const float *` for `ZT_VALUE_F32`, `const
/// bool *` holding 0 or 1 ...), copied; `data` may be NULL when `count` is 0, and the
/// empty array still has its element type. `ZT_ERR_INVALID_ARGUMENT` for another type or
/// a bool byte other than 0 and 1.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_array_data(
    element_type: u32,
    data: *const c_void,
    count: usize,
    out: *mut *mut zt_value,
) -> zt_status {
    guard(|| {
        let elem = ValueType::from_u32(element_type)
            .filter(|t| t.packed_width().is_some())
            .ok_or_else(|| {
                err!(
                    InvalidArgument,
                    "element type {element_type} is not bool, an integer or a float type"
                )
            })?;
        let width = elem.packed_width().expect("checked");
        let size = count
            .checked_mul(width)
            .ok_or_else(|| err!(InvalidArgument, "{count} {elem} elements overflow size_t"))?;
        let bytes = need_bytes(data, size, "data")?;
        create(TypedValue::numbers(elem, bytes.to_vec())?, out)
    })
}

/// An array of `count` strings: `strings[i]` of `lengths[i]` bytes, or NUL-terminated
/// when `lengths` is NULL (e.g. a tokenizer's vocabulary, in one call). Copied.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_string_array(
    strings: *const *const c_char,
    lengths: *const usize,
    count: usize,
    out: *mut *mut zt_value,
) -> zt_status {
    guard(|| {
        let ptrs = pointers(strings, count, "strings")?;
        let lens = if lengths.is_null() || count == 0 {
            None
        } else {
            // SAFETY: `count` lengths, per the API contract.
            Some(unsafe { std::slice::from_raw_parts(lengths, count) })
        };
        let mut items = Vec::new();
        items
            .try_reserve_exact(count)
            .map_err(|_| err!(Limit, "no memory for {count} strings"))?;
        for (i, &p) in ptrs.iter().enumerate() {
            let bytes = match lens {
                Some(l) => need_bytes(p.cast(), l[i], "a string")?.to_vec(),
                None => super::need_cstr(p, "a string")?.to_bytes().to_vec(),
            };
            items.push(TypedValue::String(bytes));
        }
        create(
            TypedValue::Array {
                elem: Some(ValueType::String),
                items,
            },
            out,
        )
    })
}

/// An array of `count` values, each a reader's or one made here, copied with its type
/// (`items` may be NULL when `count` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_array(
    items: *const *const zt_value,
    count: usize,
    out: *mut *mut zt_value,
) -> zt_status {
    guard(|| {
        let items = pointers(items, count, "items")?
            .iter()
            .map(|&v| typed(v))
            .collect::<Result<Vec<_>>>()?;
        create(TypedValue::Array { elem: None, items }, out)
    })
}

/// A map of `count` entries: text key `keys[i]` (NUL-terminated UTF-8) to `values[i]`,
/// each value a reader's or one made here, copied with its type. A key given twice is
/// `ZT_ERR_INVALID_ARGUMENT`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_create_map(
    keys: *const *const c_char,
    values: *const *const zt_value,
    count: usize,
    out: *mut *mut zt_value,
) -> zt_status {
    guard(|| {
        let keys = pointers(keys, count, "keys")?;
        let values = pointers(values, count, "values")?;
        let mut seen = std::collections::HashSet::new();
        let mut pairs = Vec::new();
        for (&k, &v) in keys.iter().zip(values) {
            let key = need_str(k, "a key")?;
            if !seen.insert(key) {
                bail!(InvalidArgument, "the key '{key}' is given twice");
            }
            pairs.push((TypedValue::text(key), typed(v)?));
        }
        create(TypedValue::Map(pairs), out)
    })
}

/// Frees a value made by `zt_value_create_*`; NULL is a no-op, and so is a pointer no
/// such call made (a reader's value, or one already freed), which is never freed. A
/// container made of a value keeps its own copy.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_value_free(v: *mut zt_value) {
    guard_value((), || {
        let owned = registry().remove(&(v as usize));
        drop(owned);
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_made_here_are_freed_once_and_others_never() {
        let mut v: *mut zt_value = std::ptr::null_mut();
        // SAFETY: valid out-pointer.
        assert_eq!(unsafe { zt_value_create_u32(7, &mut v) }, zt_status::ZT_OK);
        assert!(registry().contains_key(&(v as usize)));
        // SAFETY: a value made above.
        unsafe { zt_value_free(v) };
        assert!(!registry().contains_key(&(v as usize)));
        // Again, and a pointer never made: nothing happens.
        // SAFETY: zt_value_free looks the pointer up before touching anything.
        unsafe { zt_value_free(v) };
        let mut local = 0u64;
        // SAFETY: as above.
        unsafe { zt_value_free((&mut local as *mut u64).cast()) };
        // SAFETY: NULL is a no-op.
        unsafe { zt_value_free(std::ptr::null_mut()) };
    }
}
