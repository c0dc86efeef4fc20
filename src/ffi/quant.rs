//! C ABI: block-quantized objects (ggml types), the file's data-section layout, and
//! converted range reads.

use std::ffi::{c_char, c_void};

use super::read::{find_component, reader as handle};
use super::{guard, need_bytes_mut, need_out, put, zt_status};
use crate::dtype::DType;
use crate::error::err;

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
pub unsafe extern "C" fn zt_object_quant_info_get(
    reader: *const super::zt_reader,
    object: usize,
    out: *mut zt_quant_info,
) -> zt_status {
    guard(|| {
        let r = handle(reader)?;
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

/// Where a file's data section is, for loaders that map or read the file themselves.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_file_layout {
    /// The file offset the format's own tensor offsets count from: GGUF's data section
    /// (`gguf_get_data_offset`), safetensors' byte buffer (8 + header length); 0 for
    /// zTensor and Tensogram files, whose offsets are absolute. `zt_component_info`'s
    /// `offset` is always absolute.
    pub data_offset: u64,
    /// Every component's `offset - data_offset` is a multiple of this: GGUF's
    /// `general.alignment` (`gguf_get_alignment`, 32 by default), 64 for zTensor, 1 where
    /// the format promises nothing (safetensors, Tensogram).
    pub alignment: u64,
}

/// The file's data-section offset and alignment, for any format. For a set, the first
/// shard's: each shard has its own (`zt_shard_get_layout`). O(1). Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_layout_get(
    reader: *const super::zt_reader,
    out: *mut zt_file_layout,
) -> zt_status {
    guard(|| {
        let r = handle(reader)?;
        need_out(out, "out")?;
        let l = r.inner().layout();
        put(
            out,
            zt_file_layout {
                data_offset: l.data_offset,
                alignment: l.alignment,
            },
        );
        Ok(())
    })
}

/// `zt_component_read_as` of the values `[first_element, first_element + dst_size /
/// size of dtype)`: e.g. the rows of a weight one tensor-parallel rank needs,
/// dequantized or converted. Values are counted as `zt_component_read_as` counts them
/// (a block-quantized object's elements; a plain component's storage elements). For
/// block-quantized components the range must start and end on block boundaries
/// (multiples of `block_size`; whole rows always are). Only the bytes the range needs
/// are read (for zstd, only the frames that hold them). `dst_size` must be whole values;
/// a range outside the component, not block-aligned, or a `dst_size` that is not whole
/// values is `ZT_ERR_INVALID_ARGUMENT`, and a refused call leaves `dst` untouched.
/// Large dequantizations run on several threads. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_read_as_range(
    reader: *const super::zt_reader,
    object: usize,
    role: *const c_char,
    dtype: u32,
    first_element: u64,
    dst: *mut c_void,
    dst_size: usize,
) -> zt_status {
    guard(|| {
        let r = handle(reader)?;
        let to = DType::from_u32(dtype)
            .ok_or_else(|| err!(InvalidArgument, "unknown dtype value {dtype}"))?;
        let dst = need_bytes_mut(dst, dst_size, "dst")?;
        let ci = find_component(r, object, role)?;
        r.inner().read_as_range(object, ci, to, first_element, dst)
    })
}
