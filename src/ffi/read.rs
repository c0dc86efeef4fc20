//! C ABI: reading a component's bytes (a view, a copy, converted, a range, converted
//! values of a range) and checking them (digests, values).

use std::ffi::{c_char, c_void};

use super::handles::{reader, zt_reader};
use super::objects::find_component;
use super::{guard, need_bytes_mut, need_dtype, need_out, put, zt_status};

/// A view of a component's decoded bytes.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_view {
    /// Borrowed until `zt_close`. May be non-NULL for size 0. 64-byte aligned for zTensor
    /// files and for every decoded copy; a zero-copy view into a file of another format
    /// (safetensors, GGUF) is aligned to at least its dtype's size (data the file leaves
    /// misaligned is copied into an aligned buffer, and `zero_copy` is false).
    pub data: *const c_void,
    /// Bytes.
    pub size: u64,
    /// A `zt_dtype` value.
    pub dtype: u32,
    /// true: points into the mapped file (or the caller's memory); false: a decoded copy
    /// owned by the reader.
    pub zero_copy: bool,
}

/// A view of a component's bytes. Raw little-endian components of a mapped file are
/// zero-copy (no page is touched by this call). Anything else (zstd, legacy big-endian or
/// sparse, pread mode) is decoded once into 64-byte aligned memory owned by the reader,
/// kept until `zt_close`; concurrent first calls decode once. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_view(
    reader: *const zt_reader,
    object: usize,
    role: *const c_char,
    out: *mut zt_view,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out, "out")?;
        let ci = find_component(r, object, role)?;
        let v = r.reader.view(object, ci)?;
        put(
            out,
            zt_view {
                data: v.data.as_ptr().cast(),
                size: v.data.len() as u64,
                dtype: v.dtype as u32,
                zero_copy: v.zero_copy,
            },
        );
        Ok(())
    })
}

/// Copies or decodes a component into caller memory (e.g. pinned or device-staging
/// buffers). `dst_size` must equal `decoded_length`: smaller is
/// `ZT_ERR_BUFFER_TOO_SMALL`, larger `ZT_ERR_INVALID_ARGUMENT`, and a refused call leaves
/// `dst` untouched. zstd decodes straight into `dst`. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_read(
    reader: *const zt_reader,
    object: usize,
    role: *const c_char,
    dst: *mut c_void,
    dst_size: usize,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        let dst = need_bytes_mut(dst, dst_size, "dst")?;
        let ci = find_component(r, object, role)?;
        r.reader.read_into(object, ci, dst)
    })
}

/// Decodes a component converting each element to `dtype`: floats among f64/f32/f16/bf16
/// (fp8 logical types read as their values), integers and bools widened to integer types
/// that hold every value, small integers to floats that hold them exactly. Block-quantized
/// components (ggml types, see `zt_object_get_quant_info`) are dequantized to `ZT_F32`,
/// `ZT_F16` or `ZT_BF16` (exactly as ggml and gguf-py do, on several threads when large),
/// or read as their `ZT_U8` bytes; never converted byte by byte. A lossy or meaningless
/// conversion, a ggml type without a dequantizer, or bytes of a logical type this build
/// doesn't know read as anything but their storage dtype is `ZT_ERR_UNSUPPORTED`.
/// `dst_size` must be the value count x size of `dtype` (for blocks, the object's element
/// count). Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_read_as(
    reader: *const zt_reader,
    object: usize,
    role: *const c_char,
    dtype: u32,
    dst: *mut c_void,
    dst_size: usize,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        let to = need_dtype(dtype)?;
        let dst = need_bytes_mut(dst, dst_size, "dst")?;
        let ci = find_component(r, object, role)?;
        r.reader.read_as(object, ci, to, dst)
    })
}

/// Reads the decoded bytes `[offset, offset + size)` of a component into `dst`. A range
/// outside the component is `ZT_ERR_INVALID_ARGUMENT`. zstd components are read through
/// their frame index (see `zt_component_get_frame_count`, built on the first call): only the
/// frames overlapping the range are read and decoded (this library writes frames of
/// 4 MiB and a seek table), a frame the range covers in part is decoded only up to the
/// end of the range, and a component of one large frame (as the reference implementation
/// writes) is decoded from its start up to the end of the range, streaming, without a
/// buffer of the whole. A seek table that disagrees with the component is
/// `ZT_ERR_FORMAT`. Legacy byte-swapped data and other formats' pipelines are decoded
/// whole into a temporary buffer. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_read_range(
    reader: *const zt_reader,
    object: usize,
    role: *const c_char,
    offset: u64,
    dst: *mut c_void,
    size: usize,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        let dst = need_bytes_mut(dst, size, "dst")?;
        let ci = find_component(r, object, role)?;
        r.reader.read_range(object, ci, offset, dst)
    })
}

/// `zt_component_read_as` of the values `[first_element, first_element + dst_size /
/// size of dtype)`: e.g. the rows of a weight one tensor-parallel rank needs (its shard
/// of a column-parallel layer's `[out, in]` weight), dequantized or converted. Values are counted as `zt_component_read_as` counts them
/// (a block-quantized object's elements; a plain component's storage elements). For
/// block-quantized components the range must start and end on block boundaries
/// (multiples of `block_size`; whole rows always are). Only the bytes the range needs
/// are read (for zstd, only the frames that hold them). `dst_size` must be whole values;
/// a range outside the component, not block-aligned, or a `dst_size` that is not whole
/// values is `ZT_ERR_INVALID_ARGUMENT`, and a refused call leaves `dst` untouched.
/// Large dequantizations run on several threads. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_read_as_range(
    reader: *const zt_reader,
    object: usize,
    role: *const c_char,
    dtype: u32,
    first_element: u64,
    dst: *mut c_void,
    dst_size: usize,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        let to = need_dtype(dtype)?;
        let dst = need_bytes_mut(dst, dst_size, "dst")?;
        let ci = find_component(r, object, role)?;
        r.inner().read_as_range(object, ci, to, first_element, dst)
    })
}

/// Checks one component's stored digest: `ZT_ERR_CHECKSUM` on mismatch,
/// `ZT_ERR_UNSUPPORTED` for an algorithm this build doesn't know, `ZT_ERR_NOT_FOUND`
/// when it has none. Reads every stored byte once. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_component_verify(
    reader: *const zt_reader,
    object: usize,
    role: *const c_char,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        let ci = find_component(r, object, role)?;
        r.reader.verify_component(object, ci)
    })
}

/// Checks every component that has a digest; returns the first failure, `ZT_OK` when all
/// match or none has a digest. For zTensor v2 files digests cover decoded bytes, bool and
/// packed fp4 values are checked too (`ZT_ERR_FORMAT`), and the shards of a set are checked
/// against their root's table (size, whole-file digest: `ZT_ERR_CHECKSUM`). Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_verify(reader: *const zt_reader) -> zt_status {
    guard(|| self::reader(reader)?.reader.verify())
}

/// Checks an object's values beyond the manifest: sparse structure (indptr starts at 0,
/// never decreases, ends at nnz; indices and coordinates in range) and bool bytes (0 or 1).
/// `ZT_ERR_FORMAT` names the first fault. Decodes the components it checks. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_validate(reader: *const zt_reader, object: usize) -> zt_status {
    guard(|| self::reader(reader)?.reader.validate_values(object))
}
