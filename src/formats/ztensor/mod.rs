//! zTensor v1.2 and v1.1 files: the container framing (header magic, 64-byte aligned
//! blobs, the CBOR manifest, its size and the footer magic) that the writer shares, and
//! the manifest (`manifest`). Legacy v0.1 files are their own format (`ztensor_v01`).
//!
//! Choices where the spec leaves room: the manifest may be aligned or not; zero-length
//! components may share an offset with the next blob; two objects may point at the same
//! blob; keys come in any order, unknown keys anywhere are skipped; v1.1 zstd components
//! without `uncompressed_length` take their size from a dense shape.

use crate::codec::digest::ZTENSOR_KINDS;
use crate::error::{Result, bail};
use crate::limits::Limits;
use crate::model::{Model, Traits};

use super::ReadAt;

pub(crate) mod manifest;

/// Magic bytes of v1.x files, at both ends.
pub const MAGIC_V1: &[u8; 8] = b"ZTEN1000";

/// Alignment of every blob in a zTensor file, in bytes.
pub const ALIGNMENT: u64 = 64;

/// What zTensor files guarantee: 64-byte aligned blobs, so views are 64-byte aligned;
/// sha256 and crc32c digests.
pub(crate) const TRAITS: Traits = Traits {
    blob_alignment: ALIGNMENT,
    view_alignment: ALIGNMENT as usize,
    digest_kinds: ZTENSOR_KINDS,
    decoded_digests: false,
    value_rules: false,
    shared_blobs: false,
};

/// True for the first bytes of a v1.x file.
pub(crate) fn detect(head: &[u8]) -> bool {
    head.starts_with(MAGIC_V1)
}

/// Reads a v1.x file: the footer, then the manifest it points to. Returns the model and
/// where the data region ends (the manifest's start).
pub(crate) fn parse(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<(Model, u64)> {
    let (start, bytes) = manifest_region(read, size, 16, limits, |tail| {
        if &tail[8..16] != MAGIC_V1 {
            bail!(
                Format,
                "the footer magic is {}, not \"ZTEN1000\": the file is truncated or corrupt",
                super::printable(&tail[8..16])
            );
        }
        Ok(())
    })?;
    let model = manifest::parse(&bytes, start, limits)?;
    Ok((model, start))
}

/// Finds the manifest of a file whose last `tail_len` bytes start with its size (u64
/// little-endian) and whose first 8 bytes are the header: checks the tail with
/// `check_tail`, bounds the size, and reads the manifest. Returns its offset and bytes.
pub(crate) fn manifest_region<'s>(
    read: &ReadAt<'s>,
    size: u64,
    tail_len: u64,
    limits: &Limits,
    check_tail: impl FnOnce(&[u8]) -> Result<()>,
) -> Result<(u64, std::borrow::Cow<'s, [u8]>)> {
    if size < 8 + tail_len + 1 {
        bail!(
            Format,
            "file is {size} bytes, too short to hold a header, a manifest and a footer"
        );
    }
    let tail = read(size - tail_len, tail_len)?;
    check_tail(&tail)?;
    let manifest_size = u64::from_le_bytes(tail[..8].try_into().expect("8 bytes"));
    if manifest_size == 0 {
        bail!(Format, "manifest size is 0");
    }
    if manifest_size > limits.max_manifest_size {
        bail!(
            Limit,
            "manifest size {manifest_size} is over the limit of {}",
            limits.max_manifest_size
        );
    }
    if manifest_size > size - 8 - tail_len {
        bail!(
            Format,
            "manifest size {manifest_size} does not fit between the header and the footer of a {size}-byte file"
        );
    }
    let start = size - tail_len - manifest_size;
    Ok((start, read(start, manifest_size)?))
}
