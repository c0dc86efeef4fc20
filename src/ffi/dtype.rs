//! C ABI: the storage dtypes' sizes and names, from the one table in `crate::dtype`.

use std::ffi::c_char;

use super::{guard, need_dtype, need_out, need_str, put, zt_status};
use crate::dtype::{ALL_DTYPES, DType};
use crate::error::err;

/// Longest dtype name plus its NUL, with room to spare; checked at compile time.
const NAME_CAPACITY: usize = 8;

/// `DType::name()` of every dtype, NUL-padded, in `zt_dtype` order: built at compile time
/// from the dtype table, so C gets static strings without a second table or an allocation.
static C_NAMES: [[u8; NAME_CAPACITY]; ALL_DTYPES.len()] = {
    let mut table = [[0u8; NAME_CAPACITY]; ALL_DTYPES.len()];
    let mut i = 0;
    while i < ALL_DTYPES.len() {
        let name = ALL_DTYPES[i].name().as_bytes();
        assert!(
            name.len() < NAME_CAPACITY,
            "a dtype name outgrew NAME_CAPACITY"
        );
        let mut j = 0;
        while j < name.len() {
            table[i][j] = name[j];
            j += 1;
        }
        i += 1;
    }
    table
};

/// The size of one element of a storage dtype in bytes (`ZT_F32`: 4, `ZT_BOOL`: 1) into
/// `*out_size`. `ZT_ERR_INVALID_ARGUMENT` for a value outside `zt_dtype` (the size is never
/// 0, so there is no "unknown" size to return instead). No allocation; thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_dtype_get_size(dtype: u32, out_size: *mut usize) -> zt_status {
    guard(|| {
        need_out(out_size, "out_size")?;
        put(out_size, need_dtype(dtype)?.size());
        Ok(())
    })
}

/// The name of a storage dtype as the format spells it: "f64", "f32", "f16", "bf16",
/// "i64" ... "u8", "bool"; "unknown" for a value outside `zt_dtype` (no dtype has that
/// name). Never NULL; static storage. Thread-safe; does not change `zt_last_error()`, so
/// it can be called while reporting an error.
#[unsafe(no_mangle)]
pub extern "C" fn zt_dtype_name(dtype: u32) -> *const c_char {
    match C_NAMES.get(dtype as usize) {
        Some(name) => name.as_ptr().cast(),
        None => c"unknown".as_ptr(),
    }
}

/// The `zt_dtype` value of a dtype name as `zt_dtype_name` gives it ("bf16" is
/// `ZT_BF16`) into `*out`. Names are exact and lower case; anything else (including the
/// legacy spellings such as "float32") is `ZT_ERR_INVALID_ARGUMENT`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_dtype_find(name: *const c_char, out: *mut u32) -> zt_status {
    guard(|| {
        let name = need_str(name, "name")?;
        need_out(out, "out")?;
        let dtype = DType::from_name(name).ok_or_else(|| {
            let known: Vec<&str> = ALL_DTYPES.iter().map(|d| d.name()).collect();
            err!(
                InvalidArgument,
                "unknown dtype name '{name}' (the names are {})",
                known.join(", ")
            )
        })?;
        put(out, dtype as u32);
        Ok(())
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn name(value: u32) -> &'static str {
        // SAFETY: static NUL-terminated strings.
        unsafe { CStr::from_ptr(zt_dtype_name(value)) }
            .to_str()
            .unwrap()
    }

    #[test]
    fn names_sizes_and_values_come_from_the_dtype_table() {
        for d in ALL_DTYPES {
            assert_eq!(name(d as u32), d.name());
            let mut size = 0usize;
            assert_eq!(
                // SAFETY: a valid out-pointer.
                unsafe { zt_dtype_get_size(d as u32, &mut size) },
                zt_status::ZT_OK
            );
            assert_eq!(size, d.size());
            let mut value = u32::MAX;
            let c_name = zt_dtype_name(d as u32);
            assert_eq!(
                // SAFETY: a static name and a valid out-pointer.
                unsafe { zt_dtype_find(c_name, &mut value) },
                zt_status::ZT_OK
            );
            assert_eq!(value, d as u32);
        }
        assert_eq!(name(13), "unknown");
        assert_eq!(name(u32::MAX), "unknown");
        let mut value = 7u32;
        assert_eq!(
            // SAFETY: a NUL-terminated literal and a valid out-pointer.
            unsafe { zt_dtype_find(c"unknown".as_ptr(), &mut value) },
            zt_status::ZT_ERR_INVALID_ARGUMENT
        );
        assert_eq!(value, 7);
    }
}
