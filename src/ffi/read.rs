//! C ABI: opening files and reading objects.

use std::collections::HashMap;
use std::ffi::{CString, c_char, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::Mutex;

use super::{
    guard, guard_value, need, need_bytes, need_bytes_mut, need_cstr, need_dtype, need_out,
    need_str, put, zt_status,
};
use crate::error::{Error, Result, bail, err};
use crate::limits::Limits;
use crate::reader::{OpenOptions, Reader};

/// An open file. Opaque; immutable after `zt_open`, so every function taking a
/// `const zt_reader *` may be called from many threads at once.
pub struct zt_reader {
    reader: Reader<'static>,
    /// Attribute JSON rendered on first request, by object index (the file's after the
    /// objects'): kept until `zt_close`, and only for what was asked.
    json: Mutex<HashMap<usize, CString>>,
    /// The path of each file the reader reads (`zt_shard_path`); None when unknown.
    pub(super) paths: Box<[Option<CString>]>,
    /// Content digests computed on first request, by `zt_digest` value.
    content_digests: Mutex<Vec<(u32, CString)>>,
}

impl zt_reader {
    /// Prefixes "<path>: " to a message made here about this file, as the reader does
    /// for its own; unchanged for a file opened from memory.
    fn in_file(&self, e: Error) -> Error {
        match self.reader.origin() {
            Some(path) => e.context(path),
            None => e,
        }
    }
}

/// Do not map the file: every access is a `pread`. Nothing is zero-copy, but a file
/// truncated or rewritten by another process while open can't crash the program (with a
/// mapping, touching vanished pages raises SIGBUS).
pub const ZT_OPEN_NO_MMAP: u32 = 1;
/// Verify every digest while opening; a mismatch fails the open with `ZT_ERR_CHECKSUM`.
pub const ZT_OPEN_VERIFY: u32 = 2;
/// Read every page of the mapped file in while opening (`MAP_POPULATE`), so later
/// accesses never wait for the disk. No effect with `ZT_OPEN_NO_MMAP`.
pub const ZT_OPEN_POPULATE: u32 = 64;
/// `zt_open_fd` only: the reader takes over the descriptor and closes it at `zt_close`
/// (without it, the reader works on its own duplicate and the caller keeps, and may
/// close, theirs).
pub const ZT_OPEN_TAKE_FD: u32 = 128;
/// For a set (an `*.index.json`, or one split of a GGUF split set): open (and map) every
/// shard while opening and keep them open until `zt_close`. By default each shard is
/// parsed and closed again at open, and reopened when one of its tensors is first read.
pub const ZT_OPEN_ALL_SHARDS: u32 = 256;
/// Open only the file named, even when it is one split of a GGUF split set (by default
/// `zt_open` of any split opens the whole set).
pub const ZT_OPEN_ONE_FILE: u32 = 512;

/// Every `ZT_OPEN_*` flag.
const OPEN_FLAGS: u32 = ZT_OPEN_NO_MMAP
    | ZT_OPEN_VERIFY
    | ZT_OPEN_POPULATE
    | ZT_OPEN_TAKE_FD
    | ZT_OPEN_ALL_SHARDS
    | ZT_OPEN_ONE_FILE;

/// Options for `zt_open_with` / `zt_open_memory_with`. A zero-filled struct (or a NULL
/// pointer) means the defaults; a 0 limit means that limit's default.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zt_open_options {
    /// `ZT_OPEN_*` flags, or-ed.
    pub flags: u32,
    /// Largest CBOR nesting depth of the manifest. Default 128; at most 256 (larger values
    /// act as 256, so the decoder's stack use stays bounded).
    pub max_cbor_depth: u32,
    /// Largest shape rank. Default 64.
    pub max_rank: u32,
    /// Longest object or role name in bytes. Default 65536.
    pub max_name_length: u32,
    /// Largest manifest in bytes. Default 1 GiB.
    pub max_manifest_size: u64,
    /// Largest decoded size of one component in bytes. Default 64 GiB.
    pub max_decoded_size: u64,
    /// Largest total of decoded bytes the reader caches for views of encoded components.
    /// Default unlimited.
    pub max_total_cached: u64,
}

pub(super) fn open_options(options: *const zt_open_options) -> Result<OpenOptions> {
    let d = Limits::default();
    // SAFETY: NULL or a valid struct, per the API contract.
    let Some(o) = (unsafe { options.as_ref() }) else {
        return Ok(OpenOptions::default());
    };
    if o.flags & !OPEN_FLAGS != 0 {
        bail!(
            InvalidArgument,
            "unknown open flags 0x{:x}",
            o.flags & !OPEN_FLAGS
        );
    }
    let or = |v: u64, default: u64| if v == 0 { default } else { v };
    Ok(OpenOptions {
        use_mmap: o.flags & ZT_OPEN_NO_MMAP == 0,
        verify_on_open: o.flags & ZT_OPEN_VERIFY != 0,
        populate: o.flags & ZT_OPEN_POPULATE != 0,
        open_all_shards: o.flags & ZT_OPEN_ALL_SHARDS != 0,
        one_file: o.flags & ZT_OPEN_ONE_FILE != 0,
        limits: Limits {
            max_manifest_size: or(o.max_manifest_size, d.max_manifest_size),
            max_decoded_size: or(o.max_decoded_size, d.max_decoded_size),
            max_total_cached: or(o.max_total_cached, d.max_total_cached),
            max_rank: or(o.max_rank as u64, d.max_rank as u64) as usize,
            max_name_length: or(o.max_name_length as u64, d.max_name_length as u64) as usize,
            max_cbor_depth: or(o.max_cbor_depth as u64, d.max_cbor_depth as u64) as usize,
        },
    })
}

pub(super) fn finish_open(reader: Reader<'static>, out: *mut *mut zt_reader) {
    let json = Mutex::new(HashMap::new());
    let paths = (0..reader.shard_count())
        .map(|i| {
            let path = reader.shard_path(i).ok().flatten()?;
            CString::new(path.as_os_str().as_bytes()).ok()
        })
        .collect();
    put(
        out,
        Box::into_raw(Box::new(zt_reader {
            reader,
            json,
            paths,
            content_digests: Mutex::default(),
        })),
    );
}

/// Opens a tensor file read-only with the default options: zTensor (v1.2, v1.1 or legacy
/// v0.1), safetensors, GGUF v2/v3 or Tensogram v3, recognised by its first bytes (see
/// `zt_file_format`). Maps it, decodes and validates the manifest or header; reads no
/// tensor data. `*out` is set only on success; free it with `zt_close`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_open(path: *const c_char, out: *mut *mut zt_reader) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { zt_open_with(path, std::ptr::null(), out) }
}

/// `zt_open` with options (NULL = defaults): pread instead of mmap, verify on open, limits.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_open_with(
    path: *const c_char,
    options: *const zt_open_options,
    out: *mut *mut zt_reader,
) -> zt_status {
    guard(|| {
        need_out(out, "out")?;
        if path.is_null() {
            bail!(InvalidArgument, "path is NULL");
        }
        // SAFETY: NUL-terminated path bytes, per the API contract.
        let bytes = unsafe { std::ffi::CStr::from_ptr(path) }.to_bytes();
        let path = Path::new(std::ffi::OsStr::from_bytes(bytes));
        let reader = Reader::open_with(path, &open_options(options)?)?;
        finish_open(reader, out);
        Ok(())
    })
}

/// Opens a file held in memory. The bytes are borrowed, not copied: the caller keeps them
/// alive and unchanged until `zt_close`. Views are zero-copy when `data` is 64-byte aligned.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_open_memory(
    data: *const c_void,
    size: usize,
    out: *mut *mut zt_reader,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { zt_open_memory_with(data, size, std::ptr::null(), out) }
}

/// `zt_open_memory` with options (NULL = defaults; `ZT_OPEN_NO_MMAP` has no effect).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_open_memory_with(
    data: *const c_void,
    size: usize,
    options: *const zt_open_options,
    out: *mut *mut zt_reader,
) -> zt_status {
    guard(|| {
        need_out(out, "out")?;
        let bytes: &'static [u8] = need_bytes(data, size, "data")?;
        let reader = Reader::from_slice_with(bytes, &open_options(options)?)?;
        finish_open(reader, out);
        Ok(())
    })
}

/// Closes a reader and frees everything it lent out. NULL is a no-op. Not thread-safe
/// with other calls on the same reader.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_close(reader: *mut zt_reader) {
    guard_value((), || {
        if !reader.is_null() {
            // SAFETY: created by Box::into_raw in finish_open, closed once per the contract.
            drop(unsafe { Box::from_raw(reader) });
        }
    })
}

impl zt_reader {
    /// The Rust reader behind the handle.
    pub(crate) fn inner(&self) -> &Reader<'static> {
        &self.reader
    }
}

pub(super) fn reader<'r>(reader: *const zt_reader) -> Result<&'r zt_reader> {
    need(reader, "reader")
}

/// The file's format version ("2" for zTensor v2, "1.2.0", "1.1.0", "0.1.0" for zTensor
/// v1 and legacy files; the container's own version for other formats, e.g. "3" for
/// GGUF v3); borrowed. "" for NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_version(reader: *const zt_reader) -> *const c_char {
    guard_value(c"".as_ptr(), || match unsafe { reader.as_ref() } {
        Some(r) => r.reader.model().version.as_ptr(),
        None => c"".as_ptr(),
    })
}

/// The container format the file was read from: "zt", "safetensors", "gguf" or
/// "tensogram"; static. "" for NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_format(reader: *const zt_reader) -> *const c_char {
    guard_value(c"".as_ptr(), || match unsafe { reader.as_ref() } {
        Some(r) => r.reader.container().c_name().as_ptr(),
        None => c"".as_ptr(),
    })
}

/// Number of objects; 0 for NULL. O(1).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_count(reader: *const zt_reader) -> usize {
    // SAFETY: NULL or a reader from zt_open.
    guard_value(0, || {
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
pub unsafe extern "C" fn zt_object_info_get(
    reader: *const zt_reader,
    index: usize,
    out: *mut zt_object_info,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out, "out")?;
        let o = r.reader.object(index)?;
        put(
            out,
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
            },
        );
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
pub unsafe extern "C" fn zt_component_info_get(
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
/// components (ggml types, see `zt_object_quant_info_get`) are dequantized to `ZT_F32`,
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
/// their frame index (see `zt_component_frame_count`, built on the first call): only the
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
pub unsafe extern "C" fn zt_verify(reader: *const zt_reader) -> zt_status {
    guard(|| self::reader(reader)?.reader.verify())
}

/// The content digest of a zTensor v2 file (spec §6.4): the identity of the model, the
/// same however its tensors are laid out, aligned, encoded or split into shards, computed
/// from the manifest alone (no tensor byte is read; nothing is stored in the file).
/// `algorithm` is `ZT_DIGEST_XXH3` or `ZT_DIGEST_SHA256`; `*out_digest` is
/// `"xxh3:<16 hex>"` or `"sha256:<64 hex>"`, borrowed until `zt_close`.
/// `ZT_ERR_UNSUPPORTED` for a file that is not v2, and for a v2 file with a part that
/// carries no digest (its content digest is then undefined); `ZT_ERR_INVALID_ARGUMENT`
/// for another algorithm. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_get_content_digest(
    file: *const zt_reader,
    algorithm: u32,
    out_digest: *mut *const c_char,
) -> zt_status {
    guard(|| {
        let r = self::reader(file)?;
        need_out(out_digest, "out_digest")?;
        let algo = crate::codec::DigestAlgorithm::from_u32(algorithm)
            .ok_or_else(|| err!(InvalidArgument, "unknown zt_digest value {algorithm}"))?;
        let cached = || r.content_digests.lock().unwrap_or_else(|p| p.into_inner());
        if let Some((_, text)) = cached().iter().find(|(a, _)| *a == algorithm) {
            put(out_digest, text.as_ptr());
            return Ok(());
        }
        let digest = r.reader.content_digest(algo).map_err(|e| r.in_file(e))?;
        let text = CString::new(digest).expect("hex has no NUL");
        let mut list = cached();
        let at = match list.iter().position(|(a, _)| *a == algorithm) {
            Some(i) => i,
            None => {
                list.push((algorithm, text));
                list.len() - 1
            }
        };
        // The CString's bytes stay where they are until zt_close.
        put(out_digest, list[at].1.as_ptr());
        Ok(())
    })
}

/// Checks an object's values beyond the manifest: sparse structure (indptr starts at 0,
/// never decreases, ends at nnz; indices and coordinates in range) and bool bytes (0 or 1).
/// `ZT_ERR_FORMAT` names the first fault. Decodes the components it checks. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_object_validate(reader: *const zt_reader, object: usize) -> zt_status {
    guard(|| self::reader(reader)?.reader.validate_values(object))
}

/// Attributes as JSON text (CBOR bytes as {"$bytes":"<hex>"}, tags as
/// {"$tag":n,"value":v}, map keys that are not text as their JSON text, or as
/// "$cbor:<hex>" when they hold such keys themselves), borrowed until `zt_close`;
/// rendered once on first request. `object == SIZE_MAX` gives the file-level attributes;
/// "{}" when there are none. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_attributes_json(
    reader: *const zt_reader,
    object: usize,
    out_json: *mut *const c_char,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out_json, "out_json")?;
        let (slot, attrs) = if object == usize::MAX {
            (r.reader.objects().len(), r.reader.raw_attributes())
        } else {
            (object, r.reader.object(object)?.raw_attributes())
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
    })
}
