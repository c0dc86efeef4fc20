//! Storage dtypes, logical types, their names in every spelling we read, and byte widths.

use crate::error::{Result, bail};

/// Declares `DType` and its properties from one table: each row is the variant, its
/// `zt_dtype` value, the v1.x spelling, the legacy v0.1 spelling and the byte width. The
/// C enum `zt_dtype` in `ffi` is checked against this table by a test that reads the
/// header.
macro_rules! dtypes {
    ($( $variant:ident = $value:literal, $name:literal, $legacy:literal, $size:literal; )*) => {
        /// The 13 storage types of the format. The numeric values are the C ABI's `zt_dtype`.
        #[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
        #[repr(u32)]
        pub enum DType {
            $(
                #[doc = concat!("`", $name, "`: ", $size, " byte(s) an element.")]
                $variant = $value,
            )*
        }

        /// Every storage dtype, in `zt_dtype` order.
        pub const ALL_DTYPES: [DType; [$($value),*].len()] = [$(DType::$variant),*];

        impl DType {
            /// Bytes per element.
            pub const fn size(self) -> usize {
                match self { $( DType::$variant => $size, )* }
            }

            /// The v1.x manifest spelling: "f32", "bf16", "bool" ...
            pub const fn name(self) -> &'static str {
                match self { $( DType::$variant => $name, )* }
            }

            /// The legacy v0.1 spelling: "float32", "bfloat16", "uint8" ...
            pub const fn legacy_name(self) -> &'static str {
                match self { $( DType::$variant => $legacy, )* }
            }
        }
    };
}

dtypes! {
    F64 = 0, "f64", "float64", 8;
    F32 = 1, "f32", "float32", 4;
    F16 = 2, "f16", "float16", 2;
    BF16 = 3, "bf16", "bfloat16", 2;
    I64 = 4, "i64", "int64", 8;
    I32 = 5, "i32", "int32", 4;
    I16 = 6, "i16", "int16", 2;
    I8 = 7, "i8", "int8", 1;
    U64 = 8, "u64", "uint64", 8;
    U32 = 9, "u32", "uint32", 4;
    U16 = 10, "u16", "uint16", 2;
    U8 = 11, "u8", "uint8", 1;
    Bool = 12, "bool", "bool", 1;
}

impl DType {
    /// Parses a v1.x storage dtype name.
    pub fn from_name(name: &str) -> Option<DType> {
        ALL_DTYPES.iter().copied().find(|d| d.name() == name)
    }

    /// Parses a legacy v0.1 dtype name (the long spellings; the short ones are accepted too).
    pub fn from_legacy_name(name: &str) -> Option<DType> {
        ALL_DTYPES
            .iter()
            .copied()
            .find(|d| d.legacy_name() == name)
            .or_else(|| DType::from_name(name))
    }

    /// From the C enum value, range-checked.
    pub fn from_u32(value: u32) -> Option<DType> {
        ALL_DTYPES.get(value as usize).copied()
    }

    /// True for f64, f32, f16 and bf16.
    pub const fn is_float(self) -> bool {
        matches!(self, DType::F64 | DType::F32 | DType::F16 | DType::BF16)
    }
}

impl std::fmt::Display for DType {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a known logical type (`type` in the manifest) requires of its component.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LogicalTypeInfo {
    /// The storage dtype the type must be stored as.
    pub storage: DType,
    /// Storage elements per unit: `values` logical values are stored in `ratio` storage
    /// elements (complex: 1 in 2; fp8: 1 in 1; packed fp4: 2 in 1 byte; packed fp6: 4 in
    /// 3 bytes).
    pub ratio: u64,
    /// Logical values per unit.
    pub values: u64,
    /// The last unit may be partly filled (zTensor v2's `f4_e2m1`: ⌈n/2⌉ bytes for n
    /// values, the unused nibble zero; ONNX's packed `int4_x2` and `int2_x4`, the last
    /// byte padded); otherwise the values fill whole units.
    pub partial: bool,
}

/// The requirements of a known logical type; None for types this library does not know
/// (those are accepted and read as their raw storage elements).
pub fn logical_type_info(name: &str) -> Option<LogicalTypeInfo> {
    let (storage, ratio, values) = match name {
        "f8_e4m3fn" | "f8_e5m2" | "f8_e4m3fnuz" | "f8_e5m2fnuz" | "f8_e8m0fnu" | "f8_e8m0" => {
            (DType::U8, 1, 1)
        }
        "f4_e2m1fn_x2" | "f4_e2m1" => (DType::U8, 1, 2),
        "f6_e2m3fn_x4" | "f6_e3m2fn_x4" => (DType::U8, 3, 4),
        "complex32" => (DType::F16, 2, 1),
        "complex64" => (DType::F32, 2, 1),
        "complex128" => (DType::F64, 2, 1),
        // ONNX's packed integers, low bits first, the last byte padded.
        "int4_x2" | "uint4_x2" => (DType::U8, 1, 2),
        "int2_x4" | "uint2_x4" => (DType::U8, 1, 4),
        _ => return None,
    };
    Some(LogicalTypeInfo {
        storage,
        ratio,
        values,
        partial: matches!(
            name,
            "f4_e2m1" | "int4_x2" | "uint4_x2" | "int2_x4" | "uint2_x4"
        ),
    })
}

/// Checks that a logical type agrees with its storage dtype. Unknown types pass.
pub fn check_logical_type(dtype: DType, logical: Option<&str>) -> Result<()> {
    if let Some(name) = logical {
        if name.is_empty() {
            bail!(Format, "empty logical type");
        }
        if let Some(info) = logical_type_info(name)
            && info.storage != dtype
        {
            bail!(
                Format,
                "logical type '{name}' must be stored as {}, not {dtype}",
                info.storage
            );
        }
    }
    Ok(())
}

/// Maps a v1.1 dtype spelling (`f8_e4m3`, `f8_e5m2`, `complex64`, `complex128`) or a v1.2
/// dtype to (storage dtype, logical type).
pub fn parse_v11_dtype(name: &str) -> Option<(DType, Option<&'static str>)> {
    match name {
        "f8_e4m3" => Some((DType::U8, Some("f8_e4m3fn"))),
        "f8_e5m2" => Some((DType::U8, Some("f8_e5m2"))),
        "complex64" => Some((DType::F32, Some("complex64"))),
        "complex128" => Some((DType::F64, Some("complex128"))),
        _ => DType::from_name(name).map(|d| (d, None)),
    }
}

/// Product of the dimensions; None on u64 overflow. The empty shape has one element.
/// A shape with a zero dimension has no elements, whatever its other dimensions.
pub fn numel(shape: &[u64]) -> Option<u64> {
    if shape.contains(&0) {
        return Some(0);
    }
    shape.iter().try_fold(1u64, |acc, &d| acc.checked_mul(d))
}

/// Bytes a component with this shape, dtype and logical type must decode to; None on
/// overflow, for an unknown logical type (whose ratio we can't know), or for a packed
/// type whose values don't fill whole units (an odd count of `f4_e2m1fn_x2` values; v2's
/// `f4_e2m1` takes ⌈n/2⌉ bytes).
pub fn dense_byte_size(shape: &[u64], dtype: DType, logical: Option<&str>) -> Option<u64> {
    let (ratio, values, partial) = match logical {
        None => (1, 1, false),
        Some(t) => logical_type_info(t).map(|i| (i.ratio, i.values, i.partial))?,
    };
    let n = numel(shape)?;
    let units = if partial {
        n.div_ceil(values)
    } else if n.is_multiple_of(values) {
        n / values
    } else {
        return None;
    };
    units.checked_mul(ratio)?.checked_mul(dtype.size() as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_values_are_stable() {
        for (i, d) in ALL_DTYPES.iter().enumerate() {
            assert_eq!(*d as u32, i as u32);
            assert_eq!(DType::from_u32(i as u32), Some(*d));
            assert_eq!(DType::from_name(d.name()), Some(*d));
            assert_eq!(DType::from_legacy_name(d.legacy_name()), Some(*d));
        }
        assert_eq!(DType::from_u32(13), None);
        assert_eq!(DType::from_name("float32"), None);
        assert_eq!(DType::from_legacy_name("bfloat16"), Some(DType::BF16));
    }

    #[test]
    fn v11_spellings_map_to_storage_plus_type() {
        assert_eq!(
            parse_v11_dtype("f8_e4m3"),
            Some((DType::U8, Some("f8_e4m3fn")))
        );
        assert_eq!(
            parse_v11_dtype("complex128"),
            Some((DType::F64, Some("complex128")))
        );
        assert_eq!(parse_v11_dtype("i16"), Some((DType::I16, None)));
        assert_eq!(parse_v11_dtype("f8"), None);
    }

    #[test]
    fn sizes_include_the_compound_ratio() {
        assert_eq!(dense_byte_size(&[3, 4], DType::F32, None), Some(48));
        assert_eq!(
            dense_byte_size(&[3], DType::F32, Some("complex64")),
            Some(24)
        );
        assert_eq!(dense_byte_size(&[], DType::F64, None), Some(8));
        assert_eq!(dense_byte_size(&[5, 0], DType::F64, None), Some(0));
        assert_eq!(dense_byte_size(&[u64::MAX, 2], DType::U8, None), None);
        assert_eq!(numel(&[1 << 63, 1 << 63, 0]), Some(0));
        assert_eq!(numel(&[1 << 63, 2]), None);
        assert_eq!(dense_byte_size(&[u64::MAX], DType::U16, None), None);
        assert_eq!(dense_byte_size(&[4], DType::U8, Some("mx_fp4")), None);
        assert_eq!(dense_byte_size(&[5], DType::U8, Some("f4_e2m1fn_x2")), None);
        assert_eq!(dense_byte_size(&[5], DType::U8, Some("f4_e2m1")), Some(3));
        assert_eq!(dense_byte_size(&[6], DType::U8, Some("f4_e2m1")), Some(3));
        assert!(check_logical_type(DType::F32, Some("f8_e5m2")).is_err());
        assert!(check_logical_type(DType::U8, Some("f8_e5m2")).is_ok());
        assert!(check_logical_type(DType::U8, Some("my_type")).is_ok());
    }
}
