//! C ABI: what is in the file: objects (by index or name, their shape and format, how a
//! block-quantized one is laid out) and their components (by index or role, where each
//! one's bytes are).

use std::ffi::c_char;

use super::handles::{reader, zt_reader};
use super::{guard, guard_value, need_cstr, need_out, need_str, put, zt_status};
use crate::error::{Result, bail, err};

/// Number of objects; 0 for NULL. O(1).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_count(reader: *const zt_reader) -> usize {
    guard_value(0, || {
        // SAFETY: NULL or a reader from zt_open (the API contract); as_ref checks NULL.
        unsafe { reader.as_ref() }.map_or(0, |r| r.reader.objects().len())
    })
}

/// Finds an object by name; O(1). `ZT_ERR_NOT_FOUND` when absent.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_find(
    reader: *const zt_reader,
    name: *const c_char,
    out_index: *mut usize,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        let bytes = need_cstr(name, "name")?.to_bytes();
        need_out(out_index, "out_index")?;
        // Looked up by its bytes: UTF-8 is checked only to tell why nothing matched.
        let Some(i) = r.reader.find_bytes(bytes) else {
            let name = need_str(name, "name")?;
            return Err(r.in_file(err!(NotFound, "no object named '{name}'")));
        };
        put(out_index, i);
        Ok(())
    })
}

/// Describes one object: name, format and shape (all borrowed until `zt_close`),
/// component count. `ZT_ERR_NOT_FOUND` for an index past the end.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_object_info {
    /// Borrowed.
    pub name: *const c_char,
    /// "dense", "sparse_csr", "sparse_coo", "quantized_group", or as stored; borrowed.
    pub format: *const c_char,
    /// `ndim` entries, borrowed; NULL when `ndim` is 0.
    pub shape: *const u64,
    /// Number of dimensions; 0 for a scalar.
    pub ndim: usize,
    /// Number of components.
    pub component_count: usize,
}

/// Describes object `index`. O(1), no allocation.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_get_info(
    reader: *const zt_reader,
    index: usize,
    out: *mut zt_object_info,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out, "out")?;
        put(out, object_info(r.reader.object(index)?));
        Ok(())
    })
}

/// What `zt_object_get_info` says of an object (and `zt_file_get_objects`, of many).
pub(super) fn object_info(o: &crate::model::Object) -> zt_object_info {
    zt_object_info {
        name: o.name_c().as_ptr(),
        format: o.format_c().as_ptr(),
        shape: if o.shape().is_empty() {
            std::ptr::null()
        } else {
            o.shape().as_ptr()
        },
        ndim: o.shape().len(),
        component_count: o.components().len(),
    }
}

/// How a block-quantized object is laid out (every GGUF tensor of a quantized ggml type,
/// and zTensor objects converted from them): fixed-size blocks of values, whole blocks
/// per row. Strings are static (`name`) or borrowed until `zt_close` (`role`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_quant_info {
    /// The ggml type id, as in ggml.h's `enum ggml_type` (`GGML_TYPE_Q4_0` = 2 ...).
    pub ggml_type: u32,
    /// The name after `GGML_TYPE_`: "Q4_0", "Q4_K", "IQ2_XXS", "MXFP4" ...; static.
    pub name: *const c_char,
    /// The role of the component holding the blocks ("data" in GGUF files); borrowed.
    pub role: *const c_char,
    /// Values per block.
    pub block_size: u64,
    /// Bytes per block.
    pub type_size: u64,
    /// Bytes of one row: the last dimension of the shape (ggml's ne[0]) / `block_size`
    /// x `type_size`.
    pub row_size: u64,
    /// Rows: the element count / the last dimension (ne[1] x ne[2] x ne[3] in ggml).
    /// The blocks component holds `row_count` x `row_size` bytes.
    pub row_count: u64,
    /// true when `zt_component_read_as` dequantizes it to `ZT_F32`, `ZT_F16` or
    /// `ZT_BF16`; false for the few ggml types without a dequantizer (Q8_1, the removed
    /// interleaved Q4_0_4_4 family), which read only as bytes.
    pub dequantizable: bool,
}

/// Describes a block-quantized object: its ggml type (id and name), block size, type
/// size, row size and row count, without parsing attributes. `ZT_ERR_NOT_FOUND` for an
/// object that is not block-quantized (dense, sparse ... objects, and GGUF tensors of
/// F32, F16, BF16, F64 or integer types, which are dense objects of that dtype);
/// `ZT_ERR_UNSUPPORTED` naming the id for a ggml type this build doesn't know;
/// `ZT_ERR_FORMAT` when the bytes are not the shape in whole blocks. O(components), no
/// allocation. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_get_quant_info(
    reader: *const zt_reader,
    object: usize,
    out: *mut zt_quant_info,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out, "out")?;
        let q = r.inner().quant_info(object)?;
        let role = r.inner().objects()[object].components()[q.component].role_c();
        put(
            out,
            zt_quant_info {
                ggml_type: q.block_type.id(),
                name: q.block_type.c_name().as_ptr(),
                role: role.as_ptr(),
                block_size: q.block_type.block_size(),
                type_size: q.block_type.type_size(),
                row_size: q.row_size,
                row_count: q.rows,
                dequantizable: q.block_type.can_dequantize(),
            },
        );
        Ok(())
    })
}

/// The ggml type of a plain storage dtype (ggml.h's `enum ggml_type` id, and the name after
/// `GGML_TYPE_`): the types `quant::ggml_type` maps to dense objects, the other way round.
fn plain_ggml_type(d: crate::dtype::DType) -> Option<(u32, &'static std::ffi::CStr)> {
    use crate::dtype::DType;
    Some(match d {
        DType::F32 => (0, c"F32"),
        DType::F16 => (1, c"F16"),
        DType::I8 => (24, c"I8"),
        DType::I16 => (25, c"I16"),
        DType::I32 => (26, c"I32"),
        DType::I64 => (27, c"I64"),
        DType::F64 => (28, c"F64"),
        DType::BF16 => (30, c"BF16"),
        _ => return None,
    })
}

/// The ggml type of an object, as `gguf_get_tensor_type` gives it for a GGUF tensor:
/// `*out_type` = its `enum ggml_type` id (`GGML_TYPE_F32` = 0, `F16` = 1, `Q4_0` = 2 ...
/// `BF16` = 30), `*out_name` (optional: NULL skips it) = the name after `GGML_TYPE_`
/// ("F32", "Q4_K"; static), or NULL for an id this build doesn't know. Dense tensors too:
/// a dense object of one `f32`, `f16`, `bf16`, `f64`, `i8`, `i16`, `i32` or `i64`
/// component without a logical type has that type, whatever its file's format; a
/// block-quantized object (see `zt_object_get_quant_info`) its block type, including an
/// id this build doesn't know. `ZT_ERR_NOT_FOUND` for an object ggml has no type for
/// (other dtypes, logical types such as fp8 or complex, sparse and other composite
/// objects). O(components), no allocation. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_get_ggml_type(
    reader: *const zt_reader,
    object: usize,
    out_type: *mut u32,
    out_name: *mut *const c_char,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out_type, "out_type")?;
        let obj = r.inner().object(object)?;
        let (id, name) = if let Some((_, blocks)) = obj.block_component() {
            match blocks {
                crate::quant::Blocks::Known(t) => (t.id(), t.c_name().as_ptr()),
                crate::quant::Blocks::Unknown(id) => (id, std::ptr::null()),
            }
        } else if let Some((id, name)) = obj
            .single_dense()
            .filter(|c| c.logical_type().is_none())
            .and_then(|c| plain_ggml_type(c.dtype()))
        {
            (id, name.as_ptr())
        } else {
            let what = match obj.single_dense() {
                Some(c) => match c.logical_type() {
                    Some(logical) => {
                        format!("dense {} of logical type {logical}", c.dtype().name())
                    }
                    None => format!("dense {}", c.dtype().name()),
                },
                None => obj.format().to_owned(),
            };
            return Err(r.in_file(err!(
                NotFound,
                "object '{}' ({what}) has no ggml type: ggml holds f32, f16, bf16, f64, i8, \
                 i16, i32, i64 and its block types",
                obj.name()
            )));
        };
        put(out_type, id);
        if !out_name.is_null() {
            put(out_name, name);
        }
        Ok(())
    })
}

/// Finds a component of an object by role. `ZT_ERR_NOT_FOUND` when absent.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_find(
    reader: *const zt_reader,
    object: usize,
    role: *const c_char,
    out_component: *mut usize,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out_component, "out_component")?;
        put(out_component, find_component(r, object, role)?);
        Ok(())
    })
}

/// One component of an object. Strings are borrowed until `zt_close`.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_component_info {
    /// "data", "values", "indices", ...
    pub role: *const c_char,
    /// A `zt_dtype` value.
    pub dtype: u32,
    /// Logical type ("f8_e4m3fn", "complex64" ...), or NULL when absent.
    pub r#type: *const c_char,
    /// A `zt_encoding` value.
    pub encoding: u32,
    /// Absolute file offset of the stored bytes.
    pub offset: u64,
    /// Stored (possibly compressed) bytes.
    pub length: u64,
    /// Bytes after decoding.
    pub decoded_length: u64,
    /// "sha256:...", "crc32c:0x...", "xxh3:<16 hex>" (a Tensogram frame hash), or NULL.
    pub digest: *const c_char,
}

/// Describes component `component` of object `object`. O(1), no allocation.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_get_info(
    reader: *const zt_reader,
    object: usize,
    component: usize,
    out: *mut zt_component_info,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out, "out")?;
        let o = r.reader.object(object)?;
        let c = o.components().get(component).ok_or_else(|| {
            r.in_file(err!(
                NotFound,
                "object '{}' has no component at index {component}",
                o.name()
            ))
        })?;
        let opt = |t: Option<&crate::model::CText>| t.map_or(std::ptr::null(), |t| t.as_ptr());
        put(
            out,
            zt_component_info {
                role: c.role_c().as_ptr(),
                dtype: c.dtype() as u32,
                r#type: opt(c.logical_type_c()),
                encoding: c.encoding() as u32,
                offset: c.offset(),
                length: c.length(),
                decoded_length: c.decoded_length(),
                digest: opt(c.digest_c()),
            },
        );
        Ok(())
    })
}

/// Where a component's stored bytes are (`zt_component_get_location`).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zt_location {
    /// The file holding them: an index for `zt_shard_get_path` (0 for a single file).
    pub shard: u32,
    /// Absolute offset of the stored bytes in that file.
    pub offset: u64,
    /// Stored (possibly compressed) bytes.
    pub length: u64,
}

/// Which file holds component `component` of object `object`, and where in it: the
/// shard index (for `zt_shard_get_path` / `zt_shard_get_mapping`) and the absolute offset and
/// length of the stored bytes there. O(1), opens nothing.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_get_location(
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

/// The component of `object` whose role is the C string `role`: compared byte by byte with
/// each role (most objects have one), neither measured nor decoded first; UTF-8 is checked
/// only when nothing matched, to report the right error.
#[inline]
pub(super) fn find_component(r: &zt_reader, object: usize, role: *const c_char) -> Result<usize> {
    if !role.is_null()
        && let Some(o) = r.reader.objects().get(object)
        && let Some(i) = o
            .components()
            .iter()
            // SAFETY: `role` is NUL-terminated, per the API contract.
            .position(|c| unsafe { equals(role, c.role_c()) })
    {
        return Ok(i);
    }
    component_not_found(r, object, role)
}

/// Why `find_component` found nothing (out of line: the found case is the one that is
/// called in loops).
#[cold]
#[inline(never)]
fn component_not_found(r: &zt_reader, object: usize, role: *const c_char) -> Result<usize> {
    if role.is_null() {
        bail!(InvalidArgument, "role is NULL");
    }
    let o = match r.reader.object(object) {
        Ok(o) => o,
        Err(e) => {
            need_str(role, "role")?;
            return Err(e);
        }
    };
    let role = need_str(role, "role")?;
    Err(r.in_file(err!(
        NotFound,
        "object '{}' has no '{role}' component",
        o.name()
    )))
}

/// Whether the NUL-terminated string at `s` is `text`, reading no byte of `s` past its NUL.
///
/// # Safety
/// `s` is NUL-terminated.
#[inline]
unsafe fn equals(s: *const c_char, text: &crate::model::CText) -> bool {
    let t = text.as_bytes();
    for (i, &b) in t.iter().enumerate() {
        // SAFETY: bytes 0..i of `s` equal `t`'s, none of which is NUL (a CText holds
        // none), so byte i is within `s`.
        if unsafe { *s.add(i) } as u8 != b {
            return false;
        }
    }
    // SAFETY: as above, byte t.len() is within `s`.
    unsafe { *s.add(t.len()) == 0 }
}

#[cfg(test)]
mod tests {
    use super::plain_ggml_type;
    use crate::dtype::ALL_DTYPES;
    use crate::quant::{GgmlType, ggml_type};

    /// Every dtype `plain_ggml_type` names is the one `ggml_type` maps that id to, and every
    /// plain id `ggml_type` knows has its dtype here: the two tables can't drift apart.
    #[test]
    fn plain_ggml_types_are_the_inverse_of_ggml_type() {
        for d in ALL_DTYPES {
            if let Some((id, name)) = plain_ggml_type(d) {
                assert!(
                    matches!(ggml_type(id), GgmlType::Plain(p) if p == d),
                    "{d:?}"
                );
                assert_eq!(name.to_str().unwrap(), d.name().to_uppercase());
            }
        }
        for id in 0..64 {
            if let GgmlType::Plain(d) = ggml_type(id) {
                assert_eq!(plain_ggml_type(d).map(|(i, _)| i), Some(id));
            }
        }
    }
}
