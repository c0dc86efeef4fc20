//! C ABI: writing files (zTensor v1.2.0 or v2, `zt_writer_options.version`).

use std::ffi::{CStr, c_char, c_void};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use super::handles::{self, Boxed, Handle, zt_reader};
use super::{guard, need_bytes, need_dtype, need_out, need_str, put, zt_status};
use crate::codec::DigestAlgorithm;
use crate::dtype::DType;
use crate::error::{Result, bail, err};
use crate::model::Encoding;
use crate::writer::{
    CopyOptions, CreateOptions, FileVersion, OutputFormat, Placement, WriteOptions, Writer,
};

/// A file being written. Opaque; used by one thread at a time.
pub struct zt_writer {
    /// None once `zt_writer_finish` has run (successfully or not). A single file or a
    /// set: the same writer.
    inner: Option<Writer>,
}

impl Handle for zt_writer {
    const NAME: &'static str = "writer";
    type Owned = Boxed;
    type Target = zt_writer;
}

/// How a component is stored. A zero-filled struct (or a NULL pointer) means raw, no
/// digest.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zt_write_options {
    /// A `zt_encoding` value; default `ZT_ENCODING_RAW`.
    pub encoding: u32,
    /// zstd level; 0 = library default (3). Negative levels are zstd's fast modes.
    pub level: i32,
    /// A `zt_digest` value; default `ZT_DIGEST_NONE`.
    pub digest: u32,
}

fn write_options(options: *const zt_write_options) -> Result<WriteOptions> {
    // SAFETY: NULL or a valid struct, per the API contract.
    let Some(o) = (unsafe { options.as_ref() }) else {
        return Ok(WriteOptions::default());
    };
    Ok(WriteOptions {
        encoding: Encoding::from_u32(o.encoding)
            .ok_or_else(|| err!(InvalidArgument, "unknown encoding value {}", o.encoding))?,
        level: o.level,
        digest: DigestAlgorithm::from_u32(o.digest)
            .ok_or_else(|| err!(InvalidArgument, "unknown digest value {}", o.digest))?,
    })
}

fn shape<'p>(shape: *const u64, ndim: usize) -> Result<&'p [u64]> {
    if ndim == 0 {
        return Ok(&[]);
    }
    if shape.is_null() {
        bail!(InvalidArgument, "shape is NULL but ndim is {ndim}");
    }
    // SAFETY: the caller passes ndim readable entries, per the API contract.
    Ok(unsafe { std::slice::from_raw_parts(shape, ndim) })
}

fn optional_str<'p>(ptr: *const c_char, what: &str) -> Result<Option<&'p str>> {
    if ptr.is_null() {
        Ok(None)
    } else {
        need_str(ptr, what).map(Some)
    }
}

fn writer<'w>(w: *mut zt_writer) -> Result<&'w mut Writer> {
    handles::get_mut(w)?
        .inner
        .as_mut()
        .ok_or_else(|| err!(State, "the writer has already finished"))
}

/// Creates a writer for `path`. The bytes go to a temporary file in the same directory;
/// nothing appears at `path` until `zt_writer_finish` succeeds, and an existing file there
/// stays intact until then. Free with `zt_writer_free` in every case.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_create(
    path: *const c_char,
    out: *mut *mut zt_writer,
) -> zt_status {
    // SAFETY: forwarded contract.
    unsafe { zt_writer_create_with(path, std::ptr::null(), out) }
}

/// `zt_writer_options.flags`: don't make the file durable. `zt_writer_finish` then
/// neither fsyncs the file nor its directory and returns as soon as the file is renamed
/// into place (still atomically: readers never see half a file). After a crash or power
/// loss soon after, the file may be missing, empty or partly written. For scratch files,
/// caches and tests; the default is durable.
pub const ZT_WRITER_NO_SYNC: u32 = 1;

/// `zt_writer_options.flags`, zTensor v2 with `ZT_WRITER_CANONICAL`: keep the blobs in
/// the order they were written. By default a canonical writer whose objects were added
/// out of ascending name order (or components out of ascending role order) copies the
/// blobs into canonical order at `zt_writer_finish` (one more read and write of the data,
/// in bounded memory), so that the file is canonical: byte for byte what any canonical
/// writer makes of the same tensors. With this flag the file stays as written, valid but
/// canonical only if it was written in that order. A compact file (4 KiB placement, the
/// default) is never canonical and always keeps the written order: one pass.
pub const ZT_WRITER_KEEP_ORDER: u32 = 2;

/// `zt_writer_options.flags`: write zTensor v2 (an xxh3 digest of every part, blobs at
/// 4 KiB boundaries in the order written, or with `ZT_WRITER_CANONICAL` at 64 KiB in name
/// order), what
/// `ztensor` 2.x reads. Without it or `ZT_WRITER_V1_2`
/// the library's default is written: zTensor v2 since this release (v1.2.0 before).
pub const ZT_WRITER_V2: u32 = 4;

/// `zt_writer_options.flags`: write zTensor v1.2.0 (64-byte aligned blobs, read by
/// `ztensor` 1.x) whatever a later release's default is. Not with `ZT_WRITER_V2`.
pub const ZT_WRITER_V1_2: u32 = 8;

/// `zt_writer_options.flags`, zTensor v2: blobs at 4 KiB boundaries (the spec's floor),
/// the library's default placement since this release (64 KiB before): a valid v2 file,
/// much smaller for many small tensors, but not in canonical form (docs/format.md,
/// "Placement", has the measurement). Set it to keep 4 KiB whatever a later default.
pub const ZT_WRITER_COMPACT: u32 = 32;

/// `zt_writer_options.flags`, zTensor v2: blobs at 64 KiB boundaries, canonical form
/// (byte for byte what `ztensor` 2.x writes for the same tensors), instead of the
/// default 4 KiB. Not with `ZT_WRITER_COMPACT`.
pub const ZT_WRITER_CANONICAL: u32 = 64;

/// `zt_writer_options.flags`: the struct has its `format` field (this header's struct).
/// A program built against an earlier header passes a struct of `flags` alone and never
/// sets this flag (that library refused unknown flags), so the field is read only when it
/// is there. Set it whenever you set `format`: without it `format` is not read and the
/// format goes by the path's extension (`ZT_WRITER_FORMAT_AUTO`).
pub const ZT_WRITER_HAS_FORMAT: u32 = 16;

/// The container a writer writes (`zt_writer_options.format`); values are stable.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum zt_writer_format {
    /// By the path's extension: `.safetensors` is safetensors, `.gguf` GGUF, anything
    /// else zTensor (of the version the flags say). The default.
    ZT_WRITER_FORMAT_AUTO = 0,
    /// zTensor: v2 unless `ZT_WRITER_V1_2`.
    ZT_WRITER_FORMAT_ZTENSOR = 1,
    /// Hugging Face safetensors: dense tensors of its dtypes, one raw "data" component
    /// each; the file's attributes, strings only, are its `__metadata__`. Byte for byte
    /// what `safetensors`' own `save_file` writes for the same tensors (docs/c-api.md).
    ZT_WRITER_FORMAT_SAFETENSORS = 2,
    /// ggml's GGUF v3: dense f32 f16 bf16 f64 i8..i64 tensors and ggml block objects
    /// (`ggml_q4_k` ...) as they are; the file's attributes are its typed key/values.
    ZT_WRITER_FORMAT_GGUF = 3,
}

/// How `zt_writer_create_with` writes a file; zero-filled or NULL for the defaults
/// (durable, zTensor v2 unless the path ends in `.safetensors` or `.gguf`). The struct
/// grows only at its end: `format` is read only with `ZT_WRITER_HAS_FORMAT` set, so a
/// program built against the earlier header (a struct of `flags` alone) keeps working.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct zt_writer_options {
    /// `ZT_WRITER_*` flags, or-ed.
    pub flags: u32,
    /// With `ZT_WRITER_HAS_FORMAT`: a `zt_writer_format` value (0: by the extension).
    pub format: u32,
}

/// `zt_writer_create` with options (NULL = defaults): `ZT_WRITER_NO_SYNC` for a file that
/// need not survive a crash.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_create_with(
    path: *const c_char,
    options: *const zt_writer_options,
    out: *mut *mut zt_writer,
) -> zt_status {
    guard(|| {
        create(path, "path", options, out, |path, options| {
            Writer::create_with(path, options)
        })
    })
}

/// Creates a writer with `make` at the C path `path` (named `what` in errors) and hands
/// it to `out`: what `zt_writer_create_with` and `zt_writer_create_sharded_with` share.
fn create(
    path: *const c_char,
    what: &str,
    options: *const zt_writer_options,
    out: *mut *mut zt_writer,
    make: impl FnOnce(&Path, &CreateOptions) -> Result<Writer>,
) -> Result<()> {
    need_out(out, "out")?;
    if path.is_null() {
        bail!(InvalidArgument, "{what} is NULL");
    }
    let options = create_options(options)?;
    // SAFETY: NUL-terminated path bytes, per the API contract.
    let bytes = unsafe { CStr::from_ptr(path) }.to_bytes();
    let w = make(Path::new(std::ffi::OsStr::from_bytes(bytes)), &options)?;
    put(out, handles::give(zt_writer { inner: Some(w) }));
    Ok(())
}

fn create_options(options: *const zt_writer_options) -> Result<CreateOptions> {
    let o = match options.is_null() {
        true => zt_writer_options::default(),
        false => {
            // SAFETY: a valid struct, per the API contract: `flags` always, `format` when
            // the flag says the caller's struct has it (an earlier header's has not).
            let flags = unsafe { std::ptr::addr_of!((*options).flags).read() };
            let format = match flags & ZT_WRITER_HAS_FORMAT != 0 {
                // SAFETY: as above.
                true => unsafe { std::ptr::addr_of!((*options).format).read() },
                false => 0,
            };
            zt_writer_options { flags, format }
        }
    };
    let known = ZT_WRITER_NO_SYNC
        | ZT_WRITER_KEEP_ORDER
        | ZT_WRITER_V2
        | ZT_WRITER_V1_2
        | ZT_WRITER_HAS_FORMAT
        | ZT_WRITER_COMPACT
        | ZT_WRITER_CANONICAL;
    if o.flags & !known != 0 {
        bail!(
            InvalidArgument,
            "unknown writer flags 0x{:x}",
            o.flags & !known
        );
    }
    let version = match (o.flags & ZT_WRITER_V2 != 0, o.flags & ZT_WRITER_V1_2 != 0) {
        (false, false) => FileVersion::default(),
        (false, true) => FileVersion::V1_2,
        (true, false) => FileVersion::V2,
        (true, true) => bail!(
            InvalidArgument,
            "ZT_WRITER_V2 and ZT_WRITER_V1_2 together: a file has one version"
        ),
    };
    let format = match o.format {
        0 => OutputFormat::Auto,
        1 => OutputFormat::Ztensor,
        2 => OutputFormat::Safetensors,
        3 => OutputFormat::Gguf,
        other => bail!(InvalidArgument, "unknown writer format value {other}"),
    };
    let placement = match (
        o.flags & ZT_WRITER_COMPACT != 0,
        o.flags & ZT_WRITER_CANONICAL != 0,
    ) {
        (false, false) => Placement::default(),
        (true, false) => Placement::Compact,
        (false, true) => Placement::Canonical,
        (true, true) => bail!(
            InvalidArgument,
            "ZT_WRITER_COMPACT and ZT_WRITER_CANONICAL together: blobs have one placement"
        ),
    };
    Ok(CreateOptions {
        durable: o.flags & ZT_WRITER_NO_SYNC == 0,
        version,
        keep_order: o.flags & ZT_WRITER_KEEP_ORDER != 0,
        placement,
        format,
    })
}

/// Creates a writer of a sharded set at `base` (a path without extension, or ending in
/// ".zt", which is dropped): zTensor shards `<base>-0000k-of-0000n.zt` and the index
/// `<base>.zt.index.json` in Hugging Face's shape (`metadata` with `total_size`,
/// `weight_map` from object name to file), which `zt_open` opens as one reader. Objects
/// go to the current shard until adding one would take it past `max_shard_bytes` (a
/// streamed object, whose size is unknown when it begins, goes to the current shard
/// unless that is already at the limit); an object larger than the limit gets a shard of
/// its own. Every `zt_writer_*` call works on it as on a single file; the file's
/// attributes become the index's `metadata`; an object's attributes can only be set
/// while its shard is being written. Nothing appears under a final name until
/// `zt_writer_finish`, which names every shard and writes the index last (durably, unless
/// `ZT_WRITER_NO_SYNC`). `ZT_ERR_INVALID_ARGUMENT` for a `max_shard_bytes` of 0 or a
/// `base` that names no file. Free with `zt_writer_free`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_create_sharded_with(
    base: *const c_char,
    max_shard_bytes: u64,
    options: *const zt_writer_options,
    out: *mut *mut zt_writer,
) -> zt_status {
    guard(|| {
        create(base, "base", options, out, |base, options| {
            Writer::create_sharded_with(base, max_shard_bytes, options)
        })
    })
}

/// The arguments `zt_writer_declare` and `zt_writer_declare_data` share, checked: the
/// name, the object format ("dense" for NULL), the storage dtype and the logical type.
fn declared<'p>(
    name: *const c_char,
    format: *const c_char,
    dtype: u32,
    r#type: *const c_char,
) -> Result<(&'p str, &'p str, DType, Option<&'p str>)> {
    Ok((
        need_str(name, "name")?,
        optional_str(format, "format")?.unwrap_or("dense"),
        need_dtype(dtype)?,
        optional_str(r#type, "type")?,
    ))
}

/// Declares a tensor before any data, so that a safetensors or GGUF file is written in
/// one pass: its header when the first tensor's data comes, then each tensor's bytes
/// straight to their place in the file (without declarations those formats are spooled
/// to a temporary file and copied into place at `zt_writer_finish`: every byte written
/// twice). `format` is "dense" (or NULL) or a ggml block format ("ggml_q4_k", or v2's
/// "gguf.q4_k/1"), whose data is `ZT_DTYPE_U8` of its logical type (`type` NULL says
/// so); `type` is the data's logical type or NULL; `shape` may be NULL when `ndim` is 0.
///
/// Declare every tensor before the first object begins, and set a GGUF's key/values or a
/// safetensors file's metadata before the first tensor's data (the header holds them;
/// later calls are `ZT_ERR_STATE`). Then add exactly the tensors declared, with any of
/// the adding calls (`zt_writer_add`, `zt_writer_begin_object` ..., streamed or whole,
/// `zt_writer_copy_object`), in any order: `zt_writer_declared_order` gives the one that
/// writes the file front to back (the cheapest; others write the bytes of a tensor that
/// is not next with `pwrite`, small ones gathered). A tensor not declared, or of another
/// format, shape, dtype or type, is `ZT_ERR_INVALID_ARGUMENT`, as are data bytes beyond
/// the declared size (refused before they are written) or short of it (at
/// `zt_writer_end_component`); the object is left out and may be added again.
/// `zt_writer_finish` is `ZT_ERR_STATE` while a declared tensor is missing (the writer
/// stays usable). The file is byte for byte what an undeclared writer makes of the same
/// calls.
///
/// What the format can't hold is refused here as when added (`ZT_ERR_INVALID_ARGUMENT`):
/// names (empty, NUL bytes, too long), shapes (overflow), dtypes, sizes that are not
/// whole elements or blocks; a name declared twice. `ZT_ERR_STATE` after an object has
/// begun, and for a set (`zt_writer_create_sharded_with`), whose shards are planned as
/// tensors come. A zTensor writer takes declarations too and holds its objects to them
/// the same way (its manifest comes last, so its bytes don't change): one program can
/// write every format alike.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_declare(
    w: *mut zt_writer,
    name: *const c_char,
    format: *const c_char,
    dtype: u32,
    r#type: *const c_char,
    shape: *const u64,
    ndim: usize,
) -> zt_status {
    guard(|| {
        let w = writer(w)?;
        let (name, format, dtype, logical) = declared(name, format, dtype, r#type)?;
        w.declare_object(name, format, self::shape(shape, ndim)?, dtype, logical)
    })
}

/// `zt_writer_declare` with the tensor's bytes, `size` of them at `data` (NULL when
/// `size` is 0), which the writer does not copy: `zt_writer_finish` writes them, in the
/// file's order, after any tensors added with the adding calls, so the whole file is
/// written by `zt_writer_finish` in one pass. The tensor is then not added otherwise
/// (`ZT_ERR_INVALID_ARGUMENT`). For tensors already in memory (a `save_file` of a dict of
/// tensors): one call per tensor, then `zt_writer_finish`. `size` must be the declared
/// size and bool bytes 0 or 1 (`ZT_ERR_INVALID_ARGUMENT`, nothing declared).
///
/// `data` must stay valid and unchanged until `zt_writer_finish` returns `ZT_OK` or the
/// writer is freed: the writer keeps its address, not a copy (a finish refused with the
/// writer still usable, such as a declared tensor missing, reads them again later).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_declare_data(
    w: *mut zt_writer,
    name: *const c_char,
    format: *const c_char,
    dtype: u32,
    r#type: *const c_char,
    shape: *const u64,
    ndim: usize,
    data: *const c_void,
    size: usize,
) -> zt_status {
    guard(|| {
        let w = writer(w)?;
        let (name, format, dtype, logical) = declared(name, format, dtype, r#type)?;
        let data = need_bytes(data, size, "data")?;
        // SAFETY: the caller keeps `data` valid and unchanged until zt_writer_finish
        // returns or the writer is freed, per the API contract above.
        unsafe {
            w.declare_data(
                name,
                format,
                self::shape(shape, ndim)?,
                dtype,
                logical,
                data,
            )
        }
    })
}

/// The declared tensors in the order the file holds them: `order[k]` is the index (0 for
/// the first declared, in the order of the `zt_writer_declare` calls) of the file's
/// k-th tensor. safetensors' order is its dtypes' (largest first) then the names';
/// GGUF's and zTensor v1.2's the order declared; zTensor v2's by name. Adding the
/// tensors in this order writes the file front to back. `*out_count` is set to the
/// number declared; when `order` holds fewer (`capacity`), `ZT_ERR_BUFFER_TOO_SMALL` and
/// nothing else is written (`order` may be NULL with `capacity` 0 to ask).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_declared_order(
    w: *mut zt_writer,
    order: *mut usize,
    capacity: usize,
    out_count: *mut usize,
) -> zt_status {
    guard(|| {
        let w = writer(w)?;
        need_out(out_count, "out_count")?;
        let found = w.declared_order();
        put(out_count, found.len());
        if capacity < found.len() {
            bail!(
                BufferTooSmall,
                "order holds {capacity} entries; {} tensors were declared",
                found.len()
            );
        }
        if !found.is_empty() {
            need_out(order, "order")?;
            // SAFETY: `order` holds `capacity` >= found.len() entries per the API contract.
            unsafe { std::ptr::copy_nonoverlapping(found.as_ptr(), order, found.len()) };
        }
        Ok(())
    })
}

/// Adds a dense object with one "data" component. `size` must be the element count of
/// `shape` times the dtype size; `shape` may be NULL when `ndim` is 0 (a scalar), `data`
/// NULL when `size` is 0; `options` NULL means raw, no digest. Writes the bytes now.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_add(
    w: *mut zt_writer,
    name: *const c_char,
    dtype: u32,
    shape: *const u64,
    ndim: usize,
    data: *const c_void,
    size: usize,
    options: *const zt_write_options,
) -> zt_status {
    guard(|| {
        let w = writer(w)?;
        let name = need_str(name, "name")?;
        let (dtype, shape) = (need_dtype(dtype)?, self::shape(shape, ndim)?);
        let data = need_bytes(data, size, "data")?;
        w.add(name, dtype, shape, data, &write_options(options)?)
    })
}

/// Begins an object of any format ("dense", "sparse_csr", "sparse_coo",
/// "quantized_group", or your own); add components, then `zt_writer_end_object`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_begin_object(
    w: *mut zt_writer,
    name: *const c_char,
    format: *const c_char,
    shape: *const u64,
    ndim: usize,
) -> zt_status {
    guard(|| {
        let w = writer(w)?;
        let name = need_str(name, "name")?;
        let format = need_str(format, "format")?;
        w.begin_object(name, format, self::shape(shape, ndim)?)
    })
}

/// Adds a whole component to the open object. `type` is the logical type or NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_add_component(
    w: *mut zt_writer,
    role: *const c_char,
    dtype: u32,
    r#type: *const c_char,
    data: *const c_void,
    size: usize,
    options: *const zt_write_options,
) -> zt_status {
    guard(|| {
        let w = writer(w)?;
        let role = need_str(role, "role")?;
        let dtype = need_dtype(dtype)?;
        let logical = optional_str(r#type, "type")?;
        let data = need_bytes(data, size, "data")?;
        w.add_component(role, dtype, logical, data, &write_options(options)?)
    })
}

/// Ends the open object after checking its components against its shape and format
/// (dense data size, sparse index counts, u64 indices). A refused object is left out of
/// the file (`ZT_ERR_INVALID_ARGUMENT`); the writer stays usable.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_end_object(w: *mut zt_writer) -> zt_status {
    guard(|| writer(w)?.end_object())
}

/// Begins streaming one component of the open object; send its bytes with
/// `zt_writer_write` in chunks of any size, then `zt_writer_end_component`. Memory use
/// stays bounded whatever the component's size, so tensors larger than memory can be
/// written.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_begin_component(
    w: *mut zt_writer,
    role: *const c_char,
    dtype: u32,
    r#type: *const c_char,
    options: *const zt_write_options,
) -> zt_status {
    guard(|| {
        let w = writer(w)?;
        let role = need_str(role, "role")?;
        let dtype = need_dtype(dtype)?;
        let logical = optional_str(r#type, "type")?;
        w.begin_component(role, dtype, logical, &write_options(options)?)
    })
}

/// Appends a chunk to the component being streamed (`data` may be NULL when `size` is 0).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_write(
    w: *mut zt_writer,
    data: *const c_void,
    size: usize,
) -> zt_status {
    guard(|| {
        let w = writer(w)?;
        w.write(need_bytes(data, size, "data")?)
    })
}

/// Ends the streamed component; the object's sizes are checked at `zt_writer_end_object`.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_end_component(w: *mut zt_writer) -> zt_status {
    guard(|| writer(w)?.end_component())
}

/// Sets the file's attributes from JSON text, which must be an object
/// ({"$bytes":"<hex>"} becomes a CBOR byte string). Any time before finish; a second
/// call replaces. Attributes nested deeper than a reader with the default limits accepts
/// (127 levels, the attribute object itself counted) are `ZT_ERR_INVALID_ARGUMENT`, as is
/// malformed JSON.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_set_file_attributes_json(
    w: *mut zt_writer,
    json: *const c_char,
) -> zt_status {
    guard(|| {
        let w = writer(w)?;
        let value = attributes_json(json)?;
        w.set_file_attributes(value)
    })
}

/// `zt_writer_set_file_attributes_json` for object `object` (its name), already begun
/// (open or ended); NULL is `ZT_ERR_INVALID_ARGUMENT`. An object's attributes may nest
/// 125 levels (the attribute object itself counted).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_set_object_attributes_json(
    w: *mut zt_writer,
    object: *const c_char,
    json: *const c_char,
) -> zt_status {
    guard(|| {
        let w = writer(w)?;
        let name = need_str(object, "object")?;
        let value = attributes_json(json)?;
        w.set_object_attributes(name, value)
    })
}

/// The attribute object of a `_json` setter, parsed to the reader's default depth.
fn attributes_json(json: *const c_char) -> Result<crate::value::cbor::Value> {
    let text = need_str(json, "json")?;
    crate::value::json::from_json(text, crate::limits::Limits::default().max_cbor_depth)
        .map_err(|e| err!(InvalidArgument, "attributes: {e}"))
}

/// Sets one file attribute: `key` (NUL-terminated UTF-8) to `value`, a reader's value
/// (copied as it is, e.g. a GGUF's `llama.context_length`) or one made by
/// `zt_value_create_*` (still the caller's to free). The value keeps its type: a typed
/// read of the file gives back `ZT_VALUE_U32` for a u32, an array of `ZT_VALUE_F32` for
/// f32s (docs/format.md says how). A key set before gets the new value in its place;
/// the other attributes stay (each call copies the map so far: for many keys at once,
/// `zt_writer_set_file_attributes` with a map is cheaper). Any time before finish. For
/// a set (`zt_writer_create_sharded_with`), the file's attributes go into the index's
/// JSON `metadata`, which keeps values but not their widths. `ZT_ERR_INVALID_ARGUMENT`
/// for a value of type `ZT_VALUE_OTHER`, which has no typed equivalent to write.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_set_file_attribute(
    w: *mut zt_writer,
    key: *const c_char,
    value: *const super::zt_value,
) -> zt_status {
    guard(|| set_typed(w, None, Some(key), value))
}

/// `zt_writer_set_file_attribute` for object `object` (its name), already begun (open or
/// ended; in a set, before a later object starts another shard).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_set_object_attribute(
    w: *mut zt_writer,
    object: *const c_char,
    key: *const c_char,
    value: *const super::zt_value,
) -> zt_status {
    guard(|| set_typed(w, Some(object), Some(key), value))
}

/// Sets all of the file's attributes from `map`, a map value (a reader's, e.g. every
/// key/value of a GGUF from `zt_file_get_attributes`, copied with their types, or one
/// made by `zt_value_create_map`); replaces them. `ZT_ERR_INVALID_ARGUMENT` for a value
/// that is not a map, or that nests deeper than a reader with the default limits
/// accepts.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_set_file_attributes(
    w: *mut zt_writer,
    map: *const super::zt_value,
) -> zt_status {
    guard(|| set_typed(w, None, None, map))
}

/// `zt_writer_set_file_attributes` for object `object` (its name), already begun.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_set_object_attributes(
    w: *mut zt_writer,
    object: *const c_char,
    map: *const super::zt_value,
) -> zt_status {
    guard(|| set_typed(w, Some(object), None, map))
}

/// What the `zt_value` attribute setters share: the attributes of the file (`object`
/// None) or of the object named by `object`, set to the map at `value`, or with `key`,
/// one entry of them. The arguments are checked in order.
fn set_typed(
    w: *mut zt_writer,
    object: Option<*const c_char>,
    key: Option<*const c_char>,
    value: *const super::zt_value,
) -> Result<()> {
    let w = writer(w)?;
    let object = object.map(|o| need_str(o, "object")).transpose()?;
    let key = key.map(|k| need_str(k, "key")).transpose()?;
    let value = super::values::typed(value)?;
    match (object, key) {
        (None, None) => w.set_file_attributes_typed(&value),
        (Some(object), None) => w.set_object_attributes_typed(object, &value),
        (None, Some(key)) => w.set_file_attribute(key, &value),
        (Some(object), Some(key)) => w.set_object_attribute(object, key, &value),
    }
}

/// `zt_copy_options.flags`: re-encode every component with `encoding` and `level`.
pub const ZT_COPY_ENCODING: u32 = 1;
/// `zt_copy_options.flags`: record `digest` on every component instead of keeping each
/// one's algorithm.
pub const ZT_COPY_DIGEST: u32 = 2;

/// How `zt_writer_copy_object` stores an object's components. A zero-filled struct (or a
/// NULL pointer) keeps what the input has: raw and zstd components are copied as stored,
/// without re-encoding, and each keeps its digest algorithm (sha256 or crc32c; others are
/// dropped); another format's pipeline becomes zstd.
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_copy_options {
    /// `ZT_COPY_*` flags, or-ed.
    pub flags: u32,
    /// With `ZT_COPY_ENCODING`: a `zt_encoding` value (raw or zstd).
    pub encoding: u32,
    /// With `ZT_COPY_ENCODING` and zstd: the level; 0 = library default.
    pub level: i32,
    /// With `ZT_COPY_DIGEST`: a `zt_digest` value (`ZT_DIGEST_NONE` records none).
    pub digest: u32,
    /// The copy's name; NULL keeps the object's own.
    pub name: *const c_char,
}

fn copy_options(options: *const zt_copy_options) -> Result<(CopyOptions, Option<&'static str>)> {
    // SAFETY: NULL or a valid struct, per the API contract.
    let Some(o) = (unsafe { options.as_ref() }) else {
        return Ok((CopyOptions::default(), None));
    };
    let unknown = o.flags & !(ZT_COPY_ENCODING | ZT_COPY_DIGEST);
    if unknown != 0 {
        bail!(InvalidArgument, "unknown copy flags 0x{unknown:x}");
    }
    let mut copy = CopyOptions::default();
    if o.flags & ZT_COPY_ENCODING != 0 {
        copy.encoding = Some(
            Encoding::from_u32(o.encoding)
                .ok_or_else(|| err!(InvalidArgument, "unknown encoding value {}", o.encoding))?,
        );
        copy.level = o.level;
    }
    if o.flags & ZT_COPY_DIGEST != 0 {
        copy.digest = Some(
            DigestAlgorithm::from_u32(o.digest)
                .ok_or_else(|| err!(InvalidArgument, "unknown digest value {}", o.digest))?,
        );
    }
    Ok((copy, optional_str(o.name, "name")?))
}

/// Copies object `object` of `reader` (a file of any format the reader opens) into the
/// file being written: format, shape, attributes and every component, under its own name
/// or `options->name`. With the default options raw and zstd components are copied as
/// stored, in 4 MiB pieces, without re-encoding (a zstd stream is decoded once, to check
/// it: a corrupt one is `ZT_ERR_FORMAT`), and a digest kept is checked against the
/// bytes copied (`ZT_ERR_CHECKSUM` on a mismatch); other components are decoded and
/// written as the options say; u32 sparse indices are widened to u64. On failure the
/// object is left out and the writer stays usable (unless the output failed: then
/// `ZT_ERR_IO`, as for every call). No object may be open.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_copy_object(
    w: *mut zt_writer,
    reader: *const zt_reader,
    object: usize,
    options: *const zt_copy_options,
) -> zt_status {
    guard(|| {
        let w = writer(w)?;
        let r = handles::reader(reader)?.inner();
        let (copy, name) = copy_options(options)?;
        match name {
            Some(name) => w.copy_object_as(r, object, name, &copy),
            None => w.copy_object(r, object, &copy),
        }
    })
}

/// Writes the manifest and footer, flushes, syncs, and renames the temporary file into
/// place. With an object still open, or a declared tensor not yet written
/// (`zt_writer_declare`), it returns `ZT_ERR_STATE` and the writer stays usable.
/// Otherwise, after this call (whatever its result) the writer only accepts
/// `zt_writer_free`; other calls return
/// `ZT_ERR_STATE`. On failure nothing appears at the path.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_finish(w: *mut zt_writer) -> zt_status {
    guard(|| {
        writer(w)?.check_finishable()?;
        let handle = handles::get_mut(w)?;
        let inner = handle
            .inner
            .take()
            .ok_or_else(|| err!(State, "the writer has already finished"))?;
        inner.finish().map(drop)
    })
}

/// Frees a writer, finished or not; an unfinished file is discarded (its temporary file
/// removed). NULL is a no-op.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_writer_free(w: *mut zt_writer) {
    // SAFETY: made by zt_writer_create*, freed once, per the contract.
    unsafe { handles::free(w) }
}
