//! ECMWF Tensogram v3 (`.tgm`) files, read into the common model.
//!
//! A file is one or more messages back to back (`TENSOGRM` ... `39277777`). Each message
//! is walked frame by frame (`FR` ... `ENDF`, padding of up to 7 zero bytes between
//! frames), in both layouts: buffered (metadata, index and hash frames in the header,
//! `total_length` set) and streamed (`total_length` 0, those frames in the footer). Bytes
//! after the last message that are not another message are a `Format` error; so is every
//! inconsistency between the preamble, the frames, the index frame and the postamble.
//! Frame order (header, data, footer), preceder rules, at least one metadata frame, the
//! index frame's offsets and lengths and the postamble's first_footer_offset and
//! total_length are checked at open; the preamble's frame-presence flags are not compared
//! with the frames found (only HASHES_PRESENT is used).
//!
//! How the model is built (the choices this reader makes):
//! - Every data-object frame (`NTensorFrame`, type 9) becomes one `dense` object with one
//!   `data` component, its shape the descriptor's `shape` (row-major, as numpy gives it;
//!   `strides` are checked for length only and otherwise ignored).
//! - Names: the object's `name` metadata (a non-empty text in `base[i]`, after merging a
//!   preceder frame's entry), else `object_<i>` (i = the object's index in its message).
//!   In a file of several messages every name is prefixed `message_<m>/`. A name already
//!   taken gets `_1`, `_2` ... appended (as Tensogram's own Zarr layer does).
//! - Object attributes: the object's metadata map (`base[i]`, preceder keys overriding,
//!   `_reserved_` kept) plus `_tensogram_descriptor` (the CBOR descriptor as written) and
//!   `_tensogram_message` (the message index). File attributes: the message's global
//!   metadata map (the footer metadata frame when there is one, it is written last, else
//!   the header one) for a single message; `{"messages": [map, ...]}` for several.
//! - Dtypes: float16/bfloat16/float32/float64 and the integers map to their storage
//!   dtype; complex64/complex128 to f32/f64 with the logical type of the same name;
//!   `bitmask` (packed bits, most significant first) is unpacked to `bool`, one byte per
//!   element. Any other dtype is `Unsupported` at open, naming it.
//! - Data: a payload with encoding, filter and compression all `none`, no NaN/Inf masks
//!   and little-endian (or 1-byte) elements is a raw blob, zero-copy. Big-endian raw
//!   payloads are byte-swapped on read. Everything else is a `pipeline` component whose
//!   blob is the payload plus its mask blobs, decoded by a `TgmPipeline`: decompress
//!   (zstd; lz4 blocks with a 4-byte little-endian size prefix), unshuffle, unpack
//!   simple_packing (to float64; a float32 object is rounded to float32), byte-swap, unpack
//!   bitmask, then restore NaN/+Inf/-Inf at the masked positions (masks: none, rle,
//!   roaring, zstd, lz4). Compressors, encodings, filters or mask methods this build
//!   lacks (szip, blosc2, zfp, sz3 ...) open fine and fail on access with `Unsupported`
//!   naming the codec.
//! - Integrity: with the message's HASHES_PRESENT flag, each data component's digest is
//!   `xxh3:<16 hex>`, the frame's inline xxh3-64 hash, over the frame body (payload,
//!   masks and descriptor). That region is wider than the component's blob, so it is
//!   recorded in `Model::digest_regions` and `Reader::verify` hashes exactly it. Hashes of
//!   metadata, index and hash frames are not checked; a hash frame must list one hash per
//!   object but is not compared with the inline slots (those are authoritative).
//! - Version string: "3".

//!
//! The module, by job (each file depends only on the ones listed before it):
//! - `metadata`: CBOR frames kept as bytes: validation without a tree, the deterministic
//!   encoding (kept as is, or written again item by item), reading maps and arrays.
//! - `frames`: messages and frames (preamble, frames, postamble; buffered and streamed
//!   layouts; index and hash frames), read into `Message`s holding `DataFrame`s.
//! - `descriptors`: a descriptor's required fields, its dtype, shape and byte order.
//! - `codecs`: zstd and lz4 decompression, MSB-first bit reading, fallible buffers.
//! - `masks`: NaN/Inf masks: the descriptor's entries, rle, roaring and packed bitmaps,
//!   restoring the non-finite values.
//! - `decode`: the descriptor's encoding, filter and compression stages and the
//!   `TgmPipeline` decoder that runs them.
//! - `objects`: frames and their metadata into model objects, components, names and
//!   attributes.

mod codecs;
mod decode;
mod descriptors;
mod frames;
mod masks;
mod metadata;
mod objects;

use crate::codec::digest::Kind as DigestKind;
use crate::error::Result;
use crate::formats::ReadAt;
use crate::limits::{Limits, MAX_CBOR_DEPTH};
use crate::model::{Model, Traits};

use frames::walk_message;
use objects::{Objects, file_attributes};

/// Blobs anywhere, views aligned to their element size, xxh3-64 frame hashes.
const TRAITS: Traits = Traits {
    digest_kinds: &[DigestKind::Xxh3],
    decoded_digests: false,
    value_rules: false,
    shared_blobs: false,
    ..super::UNALIGNED
};

/// True for the first bytes of a Tensogram file.
pub(crate) fn detect(head: &[u8]) -> bool {
    head.starts_with(frames::MAGIC)
}

/// Parses every message of a Tensogram file into a model. Reads the frame headers and
/// every CBOR frame (each bounded by `limits.max_manifest_size`), never a payload.
/// Returns the model and the file size (the end of the region blobs may occupy).
pub(crate) fn parse(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<(Model, u64)> {
    let depth = limits.max_cbor_depth.min(MAX_CBOR_DEPTH - 2);
    let mut messages = Vec::new();
    let mut pos = 0u64;
    while pos < size {
        let index = messages.len();
        let msg = walk_message(read, size, pos, index, limits, depth)
            .map_err(|e| e.context(format!("Tensogram message {index} at offset {pos}")))?;
        pos = msg.end;
        messages.push(msg);
    }
    let mut objects = Objects::new(messages.len() > 1, limits)?;
    for msg in &mut messages {
        objects.add_message(msg, read, depth)?;
    }
    let model = objects.into_model(file_attributes(messages)?)?;
    Ok((model, size))
}
