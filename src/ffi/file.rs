//! C ABI: the file as a whole: its format and version, data-section layout, the files of a
//! set (how many, where each is, each one's mapping), and what a remote reader moved.

use std::ffi::{CString, c_char, c_void};

use super::handles::{reader, zt_reader};
use super::{guard, guard_value, need_out, put, zt_status};
use crate::error::{bail, err};

/// The container format the file was read from: "zt", "safetensors", "gguf",
/// "tensogram", "pytorch", "numpy" or "onnx"; static. "" for NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_format(reader: *const zt_reader) -> *const c_char {
    // SAFETY: NULL or a reader from zt_open (the API contract); as_ref checks NULL.
    guard_value(c"".as_ptr(), || match unsafe { reader.as_ref() } {
        Some(r) => r.reader.container().c_name().as_ptr(),
        None => c"".as_ptr(),
    })
}

/// The file's format version ("2" for zTensor v2, "1.2.0", "1.1.0", "0.1.0" for zTensor
/// v1 and legacy files; the container's own version for other formats, e.g. "3" for
/// GGUF v3); borrowed. "" for NULL.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_version(reader: *const zt_reader) -> *const c_char {
    // SAFETY: NULL or a reader from zt_open (the API contract); as_ref checks NULL.
    guard_value(c"".as_ptr(), || match unsafe { reader.as_ref() } {
        Some(r) => r.reader.model().version.as_ptr(),
        None => c"".as_ptr(),
    })
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
pub unsafe extern "C" fn zt_file_get_layout(
    reader: *const zt_reader,
    out: *mut zt_file_layout,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out, "out")?;
        put(out, c_layout(r.inner().layout()));
        Ok(())
    })
}

/// How many files the reader reads: the shards of a set, 1 for a single file; 0 for
/// NULL. O(1).
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_shard_count(reader: *const zt_reader) -> usize {
    super::guard_value(0, || {
        // SAFETY: NULL or a reader from zt_open (the API contract); as_ref checks NULL.
        unsafe { reader.as_ref() }.map_or(0, |r| r.inner().shard_count())
    })
}

/// The path of file `index` (< `zt_shard_count`): a set's shard as the reader opens it
/// (the index's directory joined with the name in `weight_map`, or the split's path next
/// to the one opened); for a single file, the path it was opened from. Borrowed until
/// `zt_close`. `ZT_ERR_NOT_FOUND` for an index out of range, or a single file opened
/// from memory or a descriptor.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_shard_get_path(
    reader: *const zt_reader,
    index: usize,
    path: *mut *const c_char,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(path, "path")?;
        r.inner().shard_path(index)?;
        let p = r.paths.get(index).and_then(Option::as_ref).ok_or_else(|| {
            err!(
                NotFound,
                "file {index} has no path: the reader was opened from memory or a descriptor"
            )
        })?;
        put(path, p.as_ptr());
        Ok(())
    })
}

/// File `index`'s mapping: `*base` is the file's byte 0 in the mapping (or the caller's
/// memory for `zt_open_memory`), `*size` its length; a component's stored bytes are at
/// `base + offset` in the file `zt_component_get_location` names (for a single file,
/// file 0 is the file itself, and `zt_component_info`'s offset is enough). A shard not
/// open yet is opened and mapped now. Borrowed until `zt_close`. `ZT_ERR_NOT_FOUND` for
/// an index out of range, and for a reader opened with `ZT_OPEN_NO_MMAP` or of a remote
/// object (it has no mapping). Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_shard_get_mapping(
    reader: *const zt_reader,
    index: usize,
    base: *mut *const c_void,
    size: *mut u64,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(base, "base")?;
        need_out(size, "size")?;
        let map = r.inner().shard_mapping(index)?.ok_or_else(|| {
            err!(
                NotFound,
                "the reader has no mapping: it was opened with ZT_OPEN_NO_MMAP, or is of a remote object"
            )
        })?;
        put(base, map.as_ptr().cast());
        put(size, map.len() as u64);
        Ok(())
    })
}

/// File `shard`'s data-section offset and alignment (`zt_file_get_layout` of a single
/// file, whose shard 0 this is): for a set each shard is a file of its own, with its own
/// data section. A component's `offset - data_offset` (ggml's tensor offset for a GGUF
/// split) uses the layout of the shard `zt_component_get_location` names. O(1), opens
/// nothing. `ZT_ERR_NOT_FOUND` for a shard out of range. Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_shard_get_layout(
    reader: *const zt_reader,
    shard: usize,
    out: *mut zt_file_layout,
) -> zt_status {
    guard(|| {
        let r = self::reader(reader)?;
        need_out(out, "out")?;
        put(out, c_layout(r.inner().shard_layout(shard)?));
        Ok(())
    })
}

/// What a reader of a remote object has transferred so far: GET requests answered and
/// body bytes received. `ZT_ERR_NOT_FOUND` for a reader of a local file or memory.
/// Thread-safe.
#[unsafe(no_mangle)]
pub unsafe extern "C" fn zt_file_get_remote_stats(
    reader_: *const zt_reader,
    requests: *mut u64,
    bytes: *mut u64,
) -> zt_status {
    guard(|| {
        let r = reader(reader_)?;
        need_out(requests, "requests")?;
        need_out(bytes, "bytes")?;
        #[cfg(feature = "remote")]
        if let Some(s) = r.inner().transfer_stats() {
            super::put(requests, s.requests);
            super::put(bytes, s.bytes);
            return Ok(());
        }
        let _ = r;
        bail!(NotFound, "the reader is not of a remote object")
    })
}

/// A layout as the C API gives it.
fn c_layout(l: crate::reader::Layout) -> zt_file_layout {
    zt_file_layout {
        data_offset: l.data_offset,
        alignment: l.alignment,
    }
}
