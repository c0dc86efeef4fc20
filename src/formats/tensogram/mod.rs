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

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use crate::cbor::{self, Value};
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result, bail, err};
use crate::formats::ReadAt;
use crate::limits::{Limits, MAX_CBOR_DEPTH};
use crate::model::{
    Attributes, Blob, CText, Component, Container, Decoder, Encoding, Model, Object, Transform,
    check_name,
};

/// The first bytes of every message.
const MAGIC: &[u8; 8] = b"TENSOGRM";
/// The last bytes of every message.
const END_MAGIC: &[u8; 8] = b"39277777";
/// Preamble: magic, version, flags, reserved, total_length.
const PREAMBLE: u64 = 24;
/// Postamble: first_footer_offset, total_length, end magic.
const POSTAMBLE: u64 = 24;
/// Frame header: "FR", type, version, flags, length.
const FRAME_HEADER: u64 = 16;
/// `[hash u64][ENDF]`, the tail of every frame.
const COMMON_FOOTER: u64 = 12;
/// `[cbor_offset u64][hash u64][ENDF]`, the tail of a data-object frame.
const DATA_FOOTER: u64 = 20;
/// Preamble flag: every frame's inline hash slot holds an xxh3-64 digest.
const HASHES_PRESENT: u16 = 1 << 7;
/// Data-object frame flag: the CBOR descriptor follows the payload.
const CBOR_AFTER_PAYLOAD: u16 = 1;
/// Most zero bytes of padding accepted between two frames (encoders align to 8).
const MAX_PADDING: u64 = 7;

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
    let several = messages.len() > 1;
    let mut objects = Vec::new();
    let mut decoders: Vec<Arc<dyn Decoder>> = Vec::new();
    let mut regions = Vec::new();
    let mut taken: HashSet<String> = HashSet::new();
    for msg in &messages {
        let ctx = |e: Error| e.context(format!("Tensogram message {}", msg.index));
        let base = msg.base().map_err(ctx)?;
        for (k, frame) in msg.objects.iter().enumerate() {
            let octx = |e: Error| {
                e.context(format!(
                    "Tensogram message {} object {k} (frame at offset {})",
                    msg.index, frame.offset
                ))
            };
            let meta = merged_metadata(base.get(k), frame.preceder.as_ref());
            let (obj, region) = build_object(
                msg,
                k,
                frame,
                &meta,
                several,
                &mut taken,
                &mut decoders,
                limits,
            )
            .map_err(octx)?;
            if let Some(region) = region {
                regions.push((objects.len(), region));
            }
            objects.push(obj);
        }
    }
    let attributes = if several {
        let list = messages.iter().map(|m| m.metadata().clone()).collect();
        Some(Value::Map(vec![(
            Value::Text("messages".into()),
            Value::Array(list),
        )]))
    } else {
        messages.first().map(|m| m.metadata().clone())
    };
    let attributes = attributes.map(|v| attributes_of(&v)).transpose()?;
    let mut model = Model::foreign(Container::Tensogram, "3", attributes, objects, decoders)?;
    for (object, region) in regions {
        model.digest_regions.insert((object, 0), region);
    }
    Ok((model, size))
}

/// Encodes an attribute map, checking it decodes back within the attribute depth bound.
fn attributes_of(v: &Value) -> Result<Attributes> {
    let bytes = cbor::to_vec(v);
    cbor::decode(&bytes, MAX_CBOR_DEPTH).map_err(|e| {
        err!(
            Limit,
            "metadata nests too deeply to keep as attributes: {e}"
        )
    })?;
    Ok(Attributes::from_cbor(&bytes))
}

/// One data-object frame as found in the message.
struct DataFrame {
    /// Absolute offset of the frame's `FR`.
    offset: u64,
    /// Frame length, header to `ENDF`.
    length: u64,
    flags: u16,
    /// The inline hash slot.
    hash: u64,
    /// Absolute start and end of the CBOR descriptor.
    cbor: (u64, u64),
    desc: Value,
    /// The single `base` entry of a preceder metadata frame, if one came before.
    preceder: Option<Value>,
}

impl DataFrame {
    /// Absolute start of the frame body (after the 16-byte header).
    fn body_start(&self) -> u64 {
        self.offset + FRAME_HEADER
    }
    /// Absolute end of the frame body (where the 20-byte footer starts).
    fn body_end(&self) -> u64 {
        self.offset + self.length - DATA_FOOTER
    }
}

/// One message: where it is and what its frames hold.
struct Message {
    index: usize,
    /// Absolute offset of the preamble.
    start: u64,
    /// Absolute end (after the postamble).
    end: u64,
    flags: u16,
    header_meta: Option<Value>,
    footer_meta: Option<Value>,
    objects: Vec<DataFrame>,
}

impl Message {
    /// The global metadata map: the footer frame's (written last) or the header's.
    fn metadata(&self) -> &Value {
        self.footer_meta
            .as_ref()
            .or(self.header_meta.as_ref())
            .expect("a message has a metadata frame (checked by walk_message)")
    }
    /// The `base` entries (maps), at most one per object.
    fn base(&self) -> Result<Vec<Value>> {
        let Some(base) = self.metadata().get("base") else {
            return Ok(Vec::new());
        };
        let Some(items) = base.as_array() else {
            bail!(
                Format,
                "metadata 'base' is {}, expected an array of maps",
                base.type_name()
            );
        };
        if items.len() > self.objects.len() {
            bail!(
                Format,
                "metadata base has {} entries but the message holds {} objects",
                items.len(),
                self.objects.len()
            );
        }
        for (i, item) in items.iter().enumerate() {
            if !item.is_map() {
                bail!(
                    Format,
                    "metadata base[{i}] is {}, expected a map",
                    item.type_name()
                );
            }
        }
        Ok(items.to_vec())
    }
}

/// Where the walk of a message's frames is: frame order is header, data, footer.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum Phase {
    Header,
    Data,
    Footer,
}

/// A big-endian u16 from the first 2 bytes.
fn be16(b: &[u8]) -> u16 {
    u16::from_be_bytes([b[0], b[1]])
}

/// A big-endian u64 from the first 8 bytes.
fn be64(b: &[u8]) -> u64 {
    u64::from_be_bytes(b[..8].try_into().expect("8 bytes"))
}

/// Decodes one CBOR item spanning `bytes` (read from file offset `at`).
fn decode_cbor(bytes: &[u8], at: u64, depth: usize, what: &str) -> Result<Value> {
    cbor::decode(bytes, depth).map_err(|e| crate::manifest::cbor_error_in(what, e, at))
}

/// Walks the message starting at `start`: preamble, every frame, postamble. Reads the
/// 16-byte header of each frame, the CBOR of metadata, index and hash frames and the
/// descriptor and footer of data-object frames (each CBOR region bounded by
/// `limits.max_manifest_size`).
fn walk_message(
    read: &ReadAt<'_>,
    size: u64,
    start: u64,
    index: usize,
    limits: &Limits,
    depth: usize,
) -> Result<Message> {
    if size - start < PREAMBLE + POSTAMBLE {
        bail!(
            Format,
            "{} bytes remain, too few for a message (preamble and postamble take 48)",
            size - start
        );
    }
    let pre = read(start, PREAMBLE)?;
    if &pre[..8] != MAGIC {
        bail!(
            Format,
            "expected the magic \"TENSOGRM\", found {:?}",
            String::from_utf8_lossy(&pre[..8])
        );
    }
    let version = be16(&pre[8..]);
    if version != 3 {
        bail!(
            Unsupported,
            "wire-format version {version} is not supported (only version 3 is)"
        );
    }
    let flags = be16(&pre[10..]);
    let total = be64(&pre[16..]);
    drop(pre);
    // Where the postamble must end: known for buffered messages, else the file end.
    let limit = if total != 0 {
        if total < PREAMBLE + POSTAMBLE || total > size - start {
            bail!(
                Format,
                "total_length {total} does not fit: {} bytes remain in the file",
                size - start
            );
        }
        start + total
    } else {
        size
    };
    let mut msg = Message {
        index,
        start,
        end: 0,
        flags,
        header_meta: None,
        footer_meta: None,
        objects: Vec::new(),
    };
    let mut phase = Phase::Header;
    let mut preceder: Option<(u64, Value)> = None;
    let mut first_footer: Option<u64> = None;
    let mut index_frame: Option<(u64, Value)> = None;
    let mut hash_frame: Option<(u64, Value)> = None;
    let mut pos = start + PREAMBLE;
    let postamble_at = loop {
        // Padding, then a frame ("FR") or the postamble (end magic 16 bytes further).
        let window_len = (MAX_PADDING + POSTAMBLE).min(limit - pos);
        let window = read(pos, window_len)?;
        let mut found = None;
        for k in 0..=MAX_PADDING as usize {
            // "FR" first: a payload may begin with the end magic's bytes, while a
            // postamble can't begin with "FR" (its first_footer_offset would be huge).
            if window.len() >= k + 2 && &window[k..k + 2] == b"FR" {
                found = Some((k, false));
                break;
            }
            if window.len() >= k + POSTAMBLE as usize && &window[k + 16..k + 24] == END_MAGIC {
                found = Some((k, true));
                break;
            }
            if window.get(k) != Some(&0) {
                break;
            }
        }
        let Some((skip, is_postamble)) = found else {
            bail!(
                Format,
                "expected a frame (\"FR\") or the postamble at offset {pos}, found neither"
            );
        };
        let at = pos + skip as u64;
        if is_postamble {
            break at;
        }
        let header = read(at, FRAME_HEADER.min(limit - at))?;
        if header.len() < FRAME_HEADER as usize {
            bail!(Format, "frame at offset {at} is truncated");
        }
        let ftype = be16(&header[2..]);
        let fflags = be16(&header[6..]);
        let flen = be64(&header[8..]);
        drop(header);
        let fctx = |e: Error| e.context(format!("frame of type {ftype} at offset {at}"));
        let min = if ftype == 9 {
            FRAME_HEADER + DATA_FOOTER
        } else {
            FRAME_HEADER + COMMON_FOOTER
        };
        // The postamble must still fit after the frame.
        let room = limit - at;
        if flen < min || flen > room.saturating_sub(POSTAMBLE) {
            return Err(fctx(err!(
                Format,
                "frame length {flen} is impossible: at least {min}, and the frame and the \
                 postamble must fit in the {room} bytes left of the message"
            )));
        }
        let end = at + flen;
        let tail = read(end - DATA_FOOTER.min(flen), DATA_FOOTER.min(flen))?;
        let tail = &tail[tail.len() - DATA_FOOTER as usize..];
        if &tail[16..20] != b"ENDF" {
            return Err(fctx(err!(
                Format,
                "no \"ENDF\" end marker at offset {}",
                end - 4
            )));
        }
        let hash = be64(&tail[8..16]);
        let cbor_offset = be64(&tail[..8]);
        let frame_phase = match ftype {
            1..=3 => Phase::Header,
            8 | 9 => Phase::Data,
            5..=7 => Phase::Footer,
            4 => {
                return Err(fctx(err!(
                    Format,
                    "frame type 4 is the obsolete v2 data-object frame, invalid in v3"
                )));
            }
            other => {
                return Err(fctx(err!(
                    Unsupported,
                    "frame type {other} is not known to this reader"
                )));
            }
        };
        if frame_phase < phase {
            return Err(fctx(err!(
                Format,
                "frames are out of order: a {frame_phase:?} frame after a {phase:?} frame"
            )));
        }
        phase = frame_phase;
        if phase == Phase::Footer && first_footer.is_none() {
            first_footer = Some(at);
        }
        if preceder.is_some() && ftype != 9 {
            return Err(fctx(err!(
                Format,
                "a preceder metadata frame must be followed by a data-object frame"
            )));
        }
        if ftype == 9 {
            let frame = data_frame(read, at, flen, fflags, hash, cbor_offset, limits, depth)
                .map_err(fctx)?;
            let preceder = preceder.take().map(|(_, v)| v);
            msg.objects.push(DataFrame { preceder, ..frame });
        } else {
            let body = flen - FRAME_HEADER - COMMON_FOOTER;
            if body > limits.max_manifest_size {
                return Err(fctx(err!(
                    Limit,
                    "{body} bytes of CBOR are over the limit of {}",
                    limits.max_manifest_size
                )));
            }
            let bytes = read(at + FRAME_HEADER, body)?;
            let value = decode_cbor(&bytes, at + FRAME_HEADER, depth, "frame").map_err(fctx)?;
            if !value.is_map() {
                return Err(fctx(err!(
                    Format,
                    "the frame's CBOR is {}, expected a map",
                    value.type_name()
                )));
            }
            let slot = match ftype {
                1 => &mut msg.header_meta,
                7 => &mut msg.footer_meta,
                2 | 6 => {
                    if index_frame.replace((at, value)).is_some() {
                        return Err(fctx(err!(Format, "a second index frame")));
                    }
                    pos = end;
                    continue;
                }
                3 | 5 => {
                    if hash_frame.replace((at, value)).is_some() {
                        return Err(fctx(err!(Format, "a second hash frame")));
                    }
                    pos = end;
                    continue;
                }
                _ => {
                    let entry = preceder_entry(&value).map_err(fctx)?;
                    preceder = Some((at, entry));
                    pos = end;
                    continue;
                }
            };
            if slot.replace(value).is_some() {
                return Err(fctx(err!(Format, "a second metadata frame of this type")));
            }
        }
        pos = end;
    };
    if let Some((at, _)) = preceder {
        bail!(
            Format,
            "the preceder metadata frame at offset {at} is not followed by a data-object frame"
        );
    }
    if msg.header_meta.is_none() && msg.footer_meta.is_none() {
        bail!(Format, "the message has no metadata frame");
    }
    let post = read(postamble_at, POSTAMBLE)?;
    let first_footer_offset = be64(&post[..8]);
    let post_total = be64(&post[8..16]);
    drop(post);
    msg.end = postamble_at + POSTAMBLE;
    let length = msg.end - start;
    if total != 0 && msg.end != limit {
        bail!(
            Format,
            "the postamble is at offset {postamble_at}, but total_length {total} puts it at {}",
            limit - POSTAMBLE
        );
    }
    if post_total != 0 && post_total != length {
        bail!(
            Format,
            "the postamble's total_length {post_total} disagrees with the message's {length} bytes"
        );
    }
    let expected_ffo = first_footer.unwrap_or(postamble_at) - start;
    if first_footer_offset != expected_ffo {
        bail!(
            Format,
            "the postamble's first_footer_offset {first_footer_offset} should be {expected_ffo}"
        );
    }
    if let Some((at, idx)) = index_frame {
        check_index(&msg, &idx).map_err(|e| e.context(format!("index frame at offset {at}")))?;
    }
    if let Some((at, hashes)) = hash_frame {
        check_hashes(&msg, &hashes).map_err(|e| e.context(format!("hash frame at offset {at}")))?;
    }
    Ok(msg)
}

/// Reads a data-object frame's descriptor (bounded by `limits.max_manifest_size`).
#[allow(clippy::too_many_arguments)]
fn data_frame(
    read: &ReadAt<'_>,
    at: u64,
    flen: u64,
    flags: u16,
    hash: u64,
    cbor_offset: u64,
    limits: &Limits,
    depth: usize,
) -> Result<DataFrame> {
    let body_end = flen - DATA_FOOTER;
    if cbor_offset < FRAME_HEADER || cbor_offset > body_end {
        bail!(
            Format,
            "cbor_offset {cbor_offset} is outside the frame body [{FRAME_HEADER}, {body_end}]"
        );
    }
    let after = flags & CBOR_AFTER_PAYLOAD != 0;
    let region = body_end - cbor_offset;
    let cap = limits.max_manifest_size;
    let (desc, cbor_end) = if after {
        if region > cap {
            bail!(
                Limit,
                "descriptor of {region} bytes is over the limit of {cap}"
            );
        }
        let bytes = read(at + cbor_offset, region)?;
        let v = decode_cbor(&bytes, at + cbor_offset, depth, "descriptor")?;
        (v, at + body_end)
    } else {
        // Descriptor first: its length is what one CBOR item takes.
        let bytes = read(at + cbor_offset, region.min(cap))?;
        let (v, used) = cbor::decode_prefix(&bytes, depth).map_err(|e| {
            let kind = if e.too_deep {
                ErrorKind::Limit
            } else {
                ErrorKind::Format
            };
            Error::new(
                kind,
                format!(
                    "descriptor: CBOR error at file offset {}: {}",
                    at + cbor_offset + e.offset as u64,
                    e.message
                ),
            )
        })?;
        (v, at + cbor_offset + used as u64)
    };
    if !desc.is_map() {
        bail!(
            Format,
            "the descriptor is {}, expected a map",
            desc.type_name()
        );
    }
    Ok(DataFrame {
        offset: at,
        length: flen,
        flags,
        hash,
        cbor: (at + cbor_offset, cbor_end),
        desc,
        preceder: None,
    })
}

/// The single `base` entry of a preceder metadata frame.
fn preceder_entry(v: &Value) -> Result<Value> {
    match v.get("base").and_then(Value::as_array) {
        Some([entry]) if entry.is_map() => Ok(entry.clone()),
        Some(items) if items.len() != 1 => bail!(
            Format,
            "a preceder's base must have exactly 1 entry, not {}",
            items.len()
        ),
        _ => bail!(
            Format,
            "a preceder's CBOR must be a map with a 'base' array of one map"
        ),
    }
}

/// Checks an index frame against the data-object frames found.
fn check_index(msg: &Message, idx: &Value) -> Result<()> {
    let list = |key: &str| -> Result<Vec<u64>> {
        let items = idx
            .get(key)
            .and_then(Value::as_array)
            .ok_or_else(|| err!(Format, "'{key}' is missing or not an array"))?;
        items
            .iter()
            .map(|v| {
                v.as_u64().ok_or_else(|| {
                    err!(Format, "'{key}' holds {}, expected integers", v.type_name())
                })
            })
            .collect()
    };
    let offsets = list("offsets")?;
    let lengths = list("lengths")?;
    if offsets.len() != msg.objects.len() || lengths.len() != msg.objects.len() {
        bail!(
            Format,
            "it lists {} offsets and {} lengths, but the message holds {} data objects",
            offsets.len(),
            lengths.len(),
            msg.objects.len()
        );
    }
    for (k, f) in msg.objects.iter().enumerate() {
        if offsets[k] != f.offset - msg.start || lengths[k] != f.length {
            bail!(
                Format,
                "object {k} is listed at offset {} length {}, but its frame is at {} length {}",
                offsets[k],
                lengths[k],
                f.offset - msg.start,
                f.length
            );
        }
    }
    Ok(())
}

/// Checks a hash frame's shape: one hash per data object. The inline hash slots are
/// authoritative (`Reader::verify` checks them), so a hash frame that disagrees with them
/// is not refused here: a flipped bit in a hash must be a `Checksum` error on
/// verification, not a file that no longer opens.
fn check_hashes(msg: &Message, frame: &Value) -> Result<()> {
    let hashes = frame
        .get("hashes")
        .and_then(Value::as_array)
        .ok_or_else(|| err!(Format, "'hashes' is missing or not an array"))?;
    if hashes.len() != msg.objects.len() {
        bail!(
            Format,
            "it lists {} hashes for {} data objects",
            hashes.len(),
            msg.objects.len()
        );
    }
    Ok(())
}

/// An object's metadata: `base[i]` with a preceder's keys overriding (shallow merge).
fn merged_metadata(base: Option<&Value>, preceder: Option<&Value>) -> Vec<(Value, Value)> {
    let mut out: Vec<(Value, Value)> = base.and_then(Value::as_map).unwrap_or(&[]).to_vec();
    if let Some(entries) = preceder.and_then(Value::as_map) {
        for (k, v) in entries {
            match out.iter_mut().find(|(ok, _)| ok == k) {
                Some(slot) => slot.1 = v.clone(),
                None => out.push((k.clone(), v.clone())),
            }
        }
    }
    out
}

/// The element kinds, for NaN/Inf restoration and byte order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    F16,
    BF16,
    F32,
    F64,
    /// Pairs of f32.
    C64,
    /// Pairs of f64.
    C128,
    Int,
    Bitmask,
}

/// A Tensogram dtype: storage dtype, logical type, element kind, bytes per element.
fn dtype_of(name: &str) -> Option<(DType, Option<&'static str>, Kind, u64)> {
    Some(match name {
        "float16" => (DType::F16, None, Kind::F16, 2),
        "bfloat16" => (DType::BF16, None, Kind::BF16, 2),
        "float32" => (DType::F32, None, Kind::F32, 4),
        "float64" => (DType::F64, None, Kind::F64, 8),
        "complex64" => (DType::F32, Some("complex64"), Kind::C64, 8),
        "complex128" => (DType::F64, Some("complex128"), Kind::C128, 16),
        "int8" => (DType::I8, None, Kind::Int, 1),
        "int16" => (DType::I16, None, Kind::Int, 2),
        "int32" => (DType::I32, None, Kind::Int, 4),
        "int64" => (DType::I64, None, Kind::Int, 8),
        "uint8" => (DType::U8, None, Kind::Int, 1),
        "uint16" => (DType::U16, None, Kind::Int, 2),
        "uint32" => (DType::U32, None, Kind::Int, 4),
        "uint64" => (DType::U64, None, Kind::Int, 8),
        "bitmask" => (DType::Bool, None, Kind::Bitmask, 1),
        _ => return None,
    })
}

/// A required text field of a descriptor (or mask entry).
fn text_field<'v>(desc: &'v Value, key: &str) -> Result<&'v str> {
    match desc.get(key) {
        Some(Value::Text(s)) => Ok(s),
        Some(v) => bail!(
            Format,
            "descriptor '{key}' is {}, expected text",
            v.type_name()
        ),
        None => bail!(Format, "descriptor has no '{key}'"),
    }
}

/// A required unsigned integer field.
fn uint_field(desc: &Value, key: &str) -> Result<u64> {
    match desc.get(key) {
        Some(Value::Unsigned(n)) => Ok(*n),
        Some(v) => bail!(
            Format,
            "descriptor '{key}' is {}, expected an unsigned integer",
            v.type_name()
        ),
        None => bail!(Format, "descriptor has no '{key}'"),
    }
}

/// A required signed integer field that fits in i64.
fn int_field(desc: &Value, key: &str) -> Result<i64> {
    match desc.get(key) {
        Some(Value::Unsigned(n)) if *n <= i64::MAX as u64 => Ok(*n as i64),
        Some(Value::Negative(n)) if *n < i64::MAX as u64 => Ok(-1 - *n as i64),
        Some(v) => bail!(
            Format,
            "descriptor '{key}' is {}, expected a 64-bit integer",
            v.type_name()
        ),
        None => bail!(Format, "descriptor has no '{key}'"),
    }
}

/// A required number field (float or integer), as f64.
fn float_field(desc: &Value, key: &str) -> Result<f64> {
    match desc.get(key) {
        Some(Value::Float(f)) => Ok(*f),
        Some(Value::Unsigned(n)) => Ok(*n as f64),
        Some(Value::Negative(n)) => Ok(-1.0 - *n as f64),
        Some(v) => bail!(
            Format,
            "descriptor '{key}' is {}, expected a number",
            v.type_name()
        ),
        None => bail!(Format, "descriptor has no '{key}'"),
    }
}

/// A required array of unsigned integers (allocates one u64 per item).
fn uint_list(desc: &Value, key: &str) -> Result<Vec<u64>> {
    let items = match desc.get(key) {
        Some(Value::Array(items)) => items,
        Some(v) => bail!(
            Format,
            "descriptor '{key}' is {}, expected an array",
            v.type_name()
        ),
        None => bail!(Format, "descriptor has no '{key}'"),
    };
    items
        .iter()
        .map(|v| {
            v.as_u64().ok_or_else(|| {
                err!(
                    Format,
                    "descriptor '{key}' holds {}, expected unsigned integers",
                    v.type_name()
                )
            })
        })
        .collect()
}

/// The compression stage.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Compression {
    None,
    Zstd,
    /// An LZ4 block after a 4-byte little-endian decompressed size.
    Lz4,
}

/// simple_packing parameters and the float width it decodes to.
#[derive(Debug, Clone, Copy)]
struct Packing {
    reference: f64,
    binary_scale: i32,
    decimal_scale: i32,
    bits: u32,
    /// 8 for float64 output, 4 for float32.
    out_width: usize,
}

/// Which non-finite value a mask marks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MaskKind {
    Nan,
    PosInf,
    NegInf,
}

/// A mask blob, relative to the component's blob.
#[derive(Debug, Clone)]
struct Mask {
    kind: MaskKind,
    method: String,
    start: usize,
    len: usize,
}

/// The decoding pipeline of one Tensogram data object, run backwards on its stored bytes
/// (payload, then mask blobs). Immutable; shared between threads. A decode allocates the
/// decompressed and the unshuffled stage when there are such stages (each about the
/// decoded size) and one flag per element for each mask.
#[derive(Debug)]
struct TgmPipeline {
    /// The first stage this build can't run, as the error message to give.
    unsupported: Option<String>,
    numel: u64,
    kind: Kind,
    /// Stored payload bytes at the start of the blob.
    payload_len: usize,
    /// Bytes after decompression (and after unshuffling).
    pre_len: usize,
    compression: Compression,
    shuffle: Option<usize>,
    packing: Option<Packing>,
    /// Width of the elements to byte-swap (big-endian payloads), 0 for none.
    swap: u8,
    masks: Vec<Mask>,
}

/// Allocates `n` zero bytes without aborting on failure.
fn buffer(n: usize) -> Result<Vec<u8>> {
    crate::buffer::zeroed_vec(n as u64)
}

impl Decoder for TgmPipeline {
    fn decode(&self, stored: &[u8], dst: &mut [u8]) -> Result<()> {
        if let Some(msg) = &self.unsupported {
            return Err(Error::new(ErrorKind::Unsupported, msg.clone()));
        }
        if stored.len() < self.payload_len {
            bail!(
                Internal,
                "{} stored bytes, fewer than the payload's {}",
                stored.len(),
                self.payload_len
            );
        }
        let payload = &stored[..self.payload_len];
        let decompressed;
        let stage: &[u8] = match self.compression {
            Compression::None => payload,
            Compression::Zstd => {
                let mut out = buffer(self.pre_len)?;
                crate::codec::zstd_decode_into(payload, &mut out)?;
                decompressed = out;
                &decompressed
            }
            Compression::Lz4 => {
                decompressed = lz4_block(payload, self.pre_len)?;
                &decompressed
            }
        };
        if stage.len() != self.pre_len {
            bail!(
                Format,
                "the payload holds {} bytes, the descriptor implies {}",
                stage.len(),
                self.pre_len
            );
        }
        let unshuffled;
        let stage: &[u8] = match self.shuffle {
            Some(width) if width > 1 => {
                let mut out = buffer(stage.len())?;
                let n = stage.len() / width;
                for (b, plane) in stage.chunks_exact(n.max(1)).enumerate().take(width) {
                    for (i, &byte) in plane.iter().enumerate() {
                        out[i * width + b] = byte;
                    }
                }
                unshuffled = out;
                &unshuffled
            }
            _ => stage,
        };
        if let Some(p) = self.packing {
            unpack(stage, self.numel as usize, &p, dst);
        } else if self.kind == Kind::Bitmask {
            for (i, d) in dst.iter_mut().enumerate() {
                *d = (stage[i / 8] >> (7 - i % 8)) & 1;
            }
        } else {
            dst.copy_from_slice(stage);
            crate::reader::swap_in_place(dst, self.swap);
        }
        for m in &self.masks {
            let blob = stored.get(m.start..m.start + m.len).ok_or_else(|| {
                err!(
                    Internal,
                    "mask blob [{}, +{}) outside the stored bytes",
                    m.start,
                    m.len
                )
            })?;
            let bits = decode_mask(&m.method, blob, self.numel as usize)
                .map_err(|e| e.context(format!("{:?} mask", m.kind)))?;
            let out_kind = match self.packing {
                Some(p) if p.out_width == 8 => Kind::F64,
                Some(_) => Kind::F32,
                None => self.kind,
            };
            restore(dst, &bits, out_kind, m.kind);
        }
        Ok(())
    }
}

/// Decompresses an LZ4 block with a 4-byte little-endian size prefix to exactly `len` bytes.
fn lz4_block(src: &[u8], len: usize) -> Result<Vec<u8>> {
    if src.len() < 4 {
        bail!(Format, "lz4 data of {} bytes has no size prefix", src.len());
    }
    let declared = u32::from_le_bytes(src[..4].try_into().expect("4 bytes")) as u64;
    if declared != len as u64 {
        bail!(
            Format,
            "lz4 data declares {declared} decompressed bytes, the descriptor implies {len}"
        );
    }
    let mut out = buffer(len)?;
    match lz4_flex::block::decompress_into(&src[4..], &mut out) {
        Ok(n) if n == len => Ok(out),
        Ok(n) => bail!(Format, "lz4 data decodes to {n} bytes, expected {len}"),
        Err(e) => bail!(Format, "corrupt lz4 data: {e}"),
    }
}

/// Unpacks `n` simple_packing values (MSB-first, `p.bits` each) into `dst` as
/// little-endian float64 or float32: value = reference + q x 2^E x 10^-D.
fn unpack(src: &[u8], n: usize, p: &Packing, dst: &mut [u8]) {
    let scale = 2f64.powi(p.binary_scale) * 10f64.powi(-p.decimal_scale);
    let bits = p.bits as u64;
    for i in 0..n {
        let v = if bits == 0 {
            p.reference
        } else {
            p.reference + read_bits(src, i as u64 * bits, p.bits) as f64 * scale
        };
        if p.out_width == 8 {
            dst[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        } else {
            dst[i * 4..i * 4 + 4].copy_from_slice(&(v as f32).to_le_bytes());
        }
    }
}

/// Reads `bits` (1..=64) bits starting at bit `pos`, most significant bit first.
fn read_bits(src: &[u8], mut pos: u64, bits: u32) -> u64 {
    let mut value = 0u64;
    let mut left = bits;
    while left > 0 {
        let byte = src[(pos / 8) as usize];
        let offset = (pos % 8) as u32;
        let avail = 8 - offset;
        let take = avail.min(left);
        let chunk = (byte >> (avail - take)) & (((1u16 << take) - 1) as u8);
        value = (value << take) | chunk as u64;
        pos += take as u64;
        left -= take;
    }
    value
}

/// Writes the canonical non-finite value of `mask` at every set position of `bits`.
fn restore(dst: &mut [u8], bits: &[bool], kind: Kind, mask: MaskKind) {
    let (pattern, width): (u64, usize) = match (kind, mask) {
        (Kind::F16, MaskKind::Nan) => (0x7E00, 2),
        (Kind::F16, MaskKind::PosInf) => (0x7C00, 2),
        (Kind::F16, MaskKind::NegInf) => (0xFC00, 2),
        (Kind::BF16, MaskKind::Nan) => (0x7FC0, 2),
        (Kind::BF16, MaskKind::PosInf) => (0x7F80, 2),
        (Kind::BF16, MaskKind::NegInf) => (0xFF80, 2),
        (Kind::F32 | Kind::C64, MaskKind::Nan) => (0x7FC0_0000, 4),
        (Kind::F32 | Kind::C64, MaskKind::PosInf) => (0x7F80_0000, 4),
        (Kind::F32 | Kind::C64, MaskKind::NegInf) => (0xFF80_0000, 4),
        (Kind::F64 | Kind::C128, MaskKind::Nan) => (0x7FF8_0000_0000_0000, 8),
        (Kind::F64 | Kind::C128, MaskKind::PosInf) => (0x7FF0_0000_0000_0000, 8),
        (Kind::F64 | Kind::C128, MaskKind::NegInf) => (0xFFF0_0000_0000_0000, 8),
        // Masks on other kinds are refused at open.
        (Kind::Int | Kind::Bitmask, _) => return,
    };
    let per = if matches!(kind, Kind::C64 | Kind::C128) {
        2
    } else {
        1
    };
    let bytes = &pattern.to_le_bytes()[..width];
    for (i, _) in bits.iter().enumerate().filter(|(_, b)| **b) {
        for c in 0..per {
            let at = (i * per + c) * width;
            dst[at..at + width].copy_from_slice(bytes);
        }
    }
}

/// Decodes a NaN/Inf mask blob to `n` flags.
fn decode_mask(method: &str, blob: &[u8], n: usize) -> Result<Vec<bool>> {
    let packed_len = n.div_ceil(8);
    let packed: Cow<'_, [u8]> = match method {
        "none" => Cow::Borrowed(blob),
        "zstd" => {
            let mut out = buffer(packed_len)?;
            crate::codec::zstd_decode_into(blob, &mut out)?;
            Cow::Owned(out)
        }
        "lz4" => Cow::Owned(lz4_block(blob, packed_len)?),
        "rle" => return rle_mask(blob, n),
        "roaring" => return roaring_mask(blob, n),
        other => bail!(
            Unsupported,
            "mask method '{other}' is not supported by this build"
        ),
    };
    if packed.len() != packed_len {
        bail!(
            Format,
            "packed mask of {} bytes for {n} elements, expected {packed_len}",
            packed.len()
        );
    }
    Ok((0..n)
        .map(|i| packed[i / 8] >> (7 - i % 8) & 1 == 1)
        .collect())
}

/// Run-length mask: a start bit (0 or 1), then ULEB128 run lengths (each at least 1)
/// of alternating values, summing to `n`.
fn rle_mask(blob: &[u8], n: usize) -> Result<Vec<bool>> {
    if blob.is_empty() {
        if n == 0 {
            return Ok(Vec::new());
        }
        bail!(Format, "empty rle mask for {n} elements");
    }
    let mut value = match blob[0] {
        0 => false,
        1 => true,
        b => bail!(Format, "rle mask start byte is {b:#04x}, expected 0 or 1"),
    };
    let mut out = Vec::new();
    out.try_reserve_exact(n)
        .map_err(|_| err!(Limit, "could not allocate a mask of {n} elements"))?;
    let mut pos = 1;
    while pos < blob.len() {
        let mut run = 0u64;
        let mut shift = 0u32;
        loop {
            let Some(&b) = blob.get(pos) else {
                bail!(Format, "rle mask ends inside a run length");
            };
            pos += 1;
            if shift > 63 || (shift == 63 && b & 0x7E != 0) {
                bail!(Format, "rle run length overflows 64 bits");
            }
            run |= ((b & 0x7F) as u64) << shift;
            shift += 7;
            if b & 0x80 == 0 {
                break;
            }
        }
        if run == 0 || run > (n - out.len()) as u64 {
            bail!(
                Format,
                "rle run of {run} at element {} is empty or passes the {n} elements",
                out.len()
            );
        }
        out.resize(out.len() + run as usize, value);
        value = !value;
    }
    if out.len() != n {
        bail!(Format, "rle mask covers {} of {n} elements", out.len());
    }
    Ok(out)
}

/// Roaring bitmap, portable serialization format (cookies 12346 and 12347; array,
/// bitmap and run containers). Every set position must be below `n`.
fn roaring_mask(blob: &[u8], n: usize) -> Result<Vec<bool>> {
    let mut at = 0usize;
    let mut take = |len: usize| -> Result<&[u8]> {
        let s = blob
            .get(at..at.saturating_add(len))
            .ok_or_else(|| err!(Format, "roaring mask truncated at byte {at}"))?;
        at += len;
        Ok(s)
    };
    let le16 = |b: &[u8], i: usize| u16::from_le_bytes([b[2 * i], b[2 * i + 1]]) as usize;
    let cookie = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes"));
    let (count, runs): (usize, Option<Vec<u8>>) = if cookie & 0xFFFF == 12347 {
        let count = (cookie >> 16) as usize + 1;
        (count, Some(take(count.div_ceil(8))?.to_vec()))
    } else if cookie == 12346 {
        let count = u32::from_le_bytes(take(4)?.try_into().expect("4 bytes")) as usize;
        if count > 65536 {
            bail!(Format, "roaring mask declares {count} containers");
        }
        (count, None)
    } else {
        bail!(
            Format,
            "roaring mask cookie {cookie:#x} is not 12346 or 12347"
        );
    };
    let header = take(count * 4)?.to_vec();
    if runs.is_none() || count >= 4 {
        take(count * 4)?; // container offsets: the containers follow in order anyway
    }
    let mut out = Vec::new();
    out.try_reserve_exact(n)
        .map_err(|_| err!(Limit, "could not allocate a mask of {n} elements"))?;
    out.resize(n, false);
    let mut set = |v: usize| -> Result<()> {
        match out.get_mut(v) {
            Some(slot) => {
                *slot = true;
                Ok(())
            }
            None => bail!(Format, "roaring mask sets position {v} of {n} elements"),
        }
    };
    // Keys must increase and runs must not overlap, so the work is bounded by `n` plus
    // the blob's size whatever the blob says.
    let mut next_key = 0usize;
    for i in 0..count {
        let key = le16(&header, 2 * i) << 16;
        if key < next_key {
            bail!(
                Format,
                "roaring mask containers are not in increasing key order"
            );
        }
        next_key = key + (1 << 16);
        let card = le16(&header, 2 * i + 1) + 1;
        let is_run = runs.as_ref().is_some_and(|r| r[i / 8] >> (i % 8) & 1 == 1);
        if is_run {
            let nruns = u16::from_le_bytes(take(2)?.try_into().expect("2 bytes")) as usize;
            let pairs = take(nruns * 4)?;
            let mut next = 0usize;
            for r in 0..nruns {
                let start = le16(pairs, 2 * r);
                let len = le16(pairs, 2 * r + 1);
                if start < next {
                    bail!(Format, "roaring mask runs overlap or are out of order");
                }
                next = start + len + 1;
                for v in start..=start + len {
                    set(key + v)?;
                }
            }
        } else if card > 4096 {
            let words = take(8192)?;
            for (w, chunk) in words.chunks_exact(8).enumerate() {
                let mut word = u64::from_le_bytes(chunk.try_into().expect("8 bytes"));
                while word != 0 {
                    let b = word.trailing_zeros() as usize;
                    set(key + w * 64 + b)?;
                    word &= word - 1;
                }
            }
        } else {
            let values = take(card * 2)?;
            for j in 0..card {
                set(key + le16(values, j))?;
            }
        }
    }
    Ok(out)
}

/// Builds the object of one data-object frame and, when the message has hashes, the
/// region its digest covers.
#[allow(clippy::too_many_arguments)]
fn build_object(
    msg: &Message,
    k: usize,
    frame: &DataFrame,
    meta: &[(Value, Value)],
    several: bool,
    taken: &mut HashSet<String>,
    decoders: &mut Vec<Arc<dyn Decoder>>,
    limits: &Limits,
) -> Result<(Object, Option<(u64, u64)>)> {
    let desc = &frame.desc;
    let obj_type = text_field(desc, "type")?;
    if obj_type != "ntensor" {
        bail!(
            Unsupported,
            "object type '{obj_type}' is not supported (only 'ntensor')"
        );
    }
    let shape = uint_list(desc, "shape")?;
    if shape.len() > limits.max_rank {
        bail!(
            Limit,
            "rank {} is over the limit of {}",
            shape.len(),
            limits.max_rank
        );
    }
    let ndim = uint_field(desc, "ndim")?;
    if ndim != shape.len() as u64 {
        bail!(
            Format,
            "ndim {ndim} but the shape {shape:?} has {} dimensions",
            shape.len()
        );
    }
    if let Some(strides) = desc.get("strides") {
        let n = strides.as_array().map(<[Value]>::len);
        if n != Some(shape.len()) {
            bail!(
                Format,
                "strides must be an array of {} integers",
                shape.len()
            );
        }
    }
    let dtype_name = text_field(desc, "dtype")?;
    let Some((dtype, logical, kind, width)) = dtype_of(dtype_name) else {
        bail!(Unsupported, "dtype '{dtype_name}' is not supported");
    };
    let numel = shape
        .iter()
        .try_fold(1u64, |a, &d| a.checked_mul(d))
        .ok_or_else(|| err!(Format, "shape {shape:?} overflows u64"))?;
    let decoded_length = numel
        .checked_mul(width)
        .ok_or_else(|| err!(Format, "the byte size of shape {shape:?} overflows u64"))?;
    if decoded_length > limits.max_decoded_size {
        bail!(
            Limit,
            "decoded length {decoded_length} is over the decode limit {}",
            limits.max_decoded_size
        );
    }
    let byte_order = text_field(desc, "byte_order")?;
    let big = match byte_order {
        "little" => false,
        "big" => true,
        other => bail!(Format, "byte_order '{other}' is not 'big' or 'little'"),
    };
    let encoding = text_field(desc, "encoding")?;
    let filter = text_field(desc, "filter")?;
    let compression = text_field(desc, "compression")?;
    let mut unsupported = None;

    // Stage 1: encoding, and the byte count it produces.
    let mut packing = None;
    let pre_len = match encoding {
        "none" if kind == Kind::Bitmask => numel.div_ceil(8),
        "none" => decoded_length,
        "simple_packing" => {
            let bits = uint_field(desc, "sp_bits_per_value")?;
            if bits > 64 {
                bail!(Format, "sp_bits_per_value {bits} is over 64");
            }
            let reference = float_field(desc, "sp_reference_value")?;
            if !reference.is_finite() {
                bail!(Format, "sp_reference_value {reference} is not finite");
            }
            let scale = |key: &str| -> Result<i32> {
                let v = int_field(desc, key)?;
                i32::try_from(v).map_err(|_| err!(Format, "{key} {v} is out of range"))
            };
            let out_width = match kind {
                Kind::F64 => 8,
                Kind::F32 => 4,
                _ => bail!(
                    Unsupported,
                    "simple_packing of dtype '{dtype_name}' is not supported (float64 or float32)"
                ),
            };
            packing = Some(Packing {
                reference,
                binary_scale: scale("sp_binary_scale_factor")?,
                decimal_scale: scale("sp_decimal_scale_factor")?,
                bits: bits as u32,
                out_width,
            });
            (numel as u128 * bits as u128).div_ceil(8) as u64
        }
        other => {
            unsupported = Some(format!("encoding '{other}' is not supported by this build"));
            0
        }
    };
    if pre_len > limits.max_decoded_size {
        bail!(
            Limit,
            "{pre_len} packed bytes are over the decode limit {}",
            limits.max_decoded_size
        );
    }
    // Stage 2: filter.
    let shuffle = match filter {
        "none" => None,
        "shuffle" => {
            let w = uint_field(desc, "shuffle_element_size")?;
            if w == 0 || w > 1 << 16 {
                bail!(Format, "shuffle_element_size {w} is out of range");
            }
            if unsupported.is_none() && pre_len % w != 0 {
                bail!(
                    Format,
                    "shuffle_element_size {w} does not divide the {pre_len} bytes to unshuffle"
                );
            }
            Some(w as usize)
        }
        other => {
            unsupported.get_or_insert(format!("filter '{other}' is not supported by this build"));
            None
        }
    };
    // Stage 3: compression.
    let compression = match compression {
        "none" => Compression::None,
        "zstd" => Compression::Zstd,
        "lz4" => Compression::Lz4,
        other => {
            unsupported.get_or_insert(format!(
                "compression '{other}' is not supported by this build"
            ));
            Compression::None
        }
    };

    // Regions: payload, masks, descriptor.
    let (body_start, body_end) = (frame.body_start(), frame.body_end());
    let after = frame.flags & CBOR_AFTER_PAYLOAD != 0;
    let (payload_start, data_end) = if after {
        (body_start, frame.cbor.0)
    } else {
        (frame.cbor.1, body_end)
    };
    let mut masks = Vec::new();
    if let Some(m) = desc.get("masks") {
        let entries = m.as_map().ok_or_else(|| {
            err!(
                Format,
                "descriptor 'masks' is {}, expected a map",
                m.type_name()
            )
        })?;
        for (key, entry) in entries {
            let mkind = match key.as_text() {
                Some("nan") => MaskKind::Nan,
                Some("inf+") => MaskKind::PosInf,
                Some("inf-") => MaskKind::NegInf,
                _ => bail!(Format, "unknown mask kind {key:?}"),
            };
            if !matches!(
                kind,
                Kind::F16 | Kind::BF16 | Kind::F32 | Kind::F64 | Kind::C64 | Kind::C128
            ) {
                bail!(Format, "NaN/Inf masks on dtype '{dtype_name}'");
            }
            let method = text_field(entry, "method")?.to_owned();
            if !["none", "rle", "roaring", "zstd", "lz4", "blosc2"].contains(&method.as_str()) {
                bail!(Format, "unknown mask method '{method}'");
            }
            let offset = uint_field(entry, "offset")?;
            let len = uint_field(entry, "length")?;
            let start = body_start.checked_add(offset);
            let end = start.and_then(|s| s.checked_add(len));
            match (start, end) {
                (Some(s), Some(e)) if s >= payload_start && e <= data_end => {
                    masks.push((mkind, method, s, e));
                }
                _ => bail!(
                    Format,
                    "{key:?} mask at offset {offset} length {len} lies outside the frame's \
                     data region [{}, {}) (offsets count from the frame body)",
                    payload_start - body_start,
                    data_end - body_start
                ),
            }
        }
    }
    let payload_end = masks.iter().map(|m| m.2).min().unwrap_or(data_end);
    let stored_end = masks.iter().map(|m| m.3).max().unwrap_or(payload_end);
    let payload_len = payload_end - payload_start;
    if unsupported.is_none() && compression == Compression::None && payload_len != pre_len {
        bail!(
            Format,
            "the payload holds {payload_len} bytes but the descriptor implies {pre_len}"
        );
    }

    let swap = if big && kind != Kind::Bitmask && packing.is_none() {
        (width / if logical.is_some() { 2 } else { 1 }) as u8
    } else {
        0
    };
    let plain = unsupported.is_none()
        && packing.is_none()
        && shuffle.is_none()
        && compression == Compression::None
        && masks.is_empty()
        && kind != Kind::Bitmask;
    let (blob, transform) = if plain {
        let blob = Blob {
            offset: payload_start,
            length: payload_len,
            encoding: Encoding::Raw,
            decoded_length: payload_len,
        };
        let t = if swap > 1 {
            Transform::SwapBytes(swap)
        } else {
            Transform::None
        };
        (blob, t)
    } else {
        let to_usize =
            |v: u64| usize::try_from(v).map_err(|_| err!(Limit, "{v} bytes do not fit in memory"));
        let pipeline = TgmPipeline {
            unsupported,
            numel,
            kind,
            payload_len: to_usize(payload_len)?,
            pre_len: to_usize(pre_len)?,
            compression,
            shuffle,
            packing,
            swap,
            masks: masks
                .into_iter()
                .map(|(kind, method, s, e)| {
                    Ok(Mask {
                        kind,
                        method,
                        start: to_usize(s - payload_start)?,
                        len: to_usize(e - s)?,
                    })
                })
                .collect::<Result<_>>()?,
        };
        let index = u32::try_from(decoders.len()).map_err(|_| err!(Limit, "too many objects"))?;
        decoders.push(Arc::new(pipeline));
        let blob = Blob {
            offset: payload_start,
            length: stored_end - payload_start,
            encoding: Encoding::Pipeline,
            decoded_length,
        };
        (blob, Transform::External(index))
    };
    let hashed = msg.flags & HASHES_PRESENT != 0;
    let digest = if hashed {
        Some(CText::new(&format!("xxh3:{:016x}", frame.hash))?)
    } else {
        None
    };
    let component = Component {
        role: CText::new("data")?,
        dtype,
        logical_type: logical.map(CText::new).transpose()?,
        blob,
        decoded_length,
        digest,
        transform,
    };

    // Name and attributes.
    let given = meta
        .iter()
        .find(|(key, _)| key.as_text() == Some("name"))
        .and_then(|(_, v)| v.as_text())
        .filter(|s| !s.is_empty())
        .map(str::to_owned);
    let local = given.unwrap_or_else(|| format!("object_{k}"));
    let base_name = if several {
        format!("message_{}/{local}", msg.index)
    } else {
        local
    };
    let mut name = base_name.clone();
    let mut n = 0u64;
    while taken.contains(&name) {
        n += 1;
        name = format!("{base_name}_{n}");
    }
    let name_c = check_name("object", &name, limits.max_name_length)?;
    taken.insert(name);
    let mut attrs: Vec<(Value, Value)> = meta
        .iter()
        .filter(|(key, _)| {
            !matches!(
                key.as_text(),
                Some("_tensogram_descriptor" | "_tensogram_message")
            )
        })
        .cloned()
        .collect();
    attrs.push((Value::Text("_tensogram_descriptor".into()), desc.clone()));
    attrs.push((
        Value::Text("_tensogram_message".into()),
        Value::Unsigned(msg.index as u64),
    ));
    let attributes = attributes_of(&Value::Map(attrs))?;
    let object = Object {
        name: name_c,
        format: CText::new("dense")?,
        shape: shape.into(),
        attributes: Some(attributes),
        components: vec![component].into(),
    };
    let region = hashed.then_some((body_start, body_end - body_start));
    Ok((object, region))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bits_are_read_most_significant_first() {
        let src = [0b1010_1100, 0b0101_0000];
        assert_eq!(read_bits(&src, 0, 1), 1);
        assert_eq!(read_bits(&src, 1, 3), 0b010);
        assert_eq!(read_bits(&src, 4, 8), 0b1100_0101);
        let all = [0xFFu8; 8];
        assert_eq!(read_bits(&all, 0, 64), u64::MAX);
    }

    #[test]
    fn rle_and_roaring_masks_decode() {
        assert_eq!(
            rle_mask(&[0, 1, 2, 1], 4).unwrap(),
            [false, true, true, false]
        );
        assert_eq!(rle_mask(&[0, 5], 4).unwrap_err().kind(), ErrorKind::Format);
        assert_eq!(rle_mask(&[2, 1], 1).unwrap_err().kind(), ErrorKind::Format);
        // One array container {1, 3}, no-run cookie.
        let blob = [
            0x3a, 0x30, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 16, 0, 0, 0, 1, 0, 3, 0,
        ];
        assert_eq!(roaring_mask(&blob, 4).unwrap(), [false, true, false, true]);
        assert_eq!(
            roaring_mask(&blob, 3).unwrap_err().kind(),
            ErrorKind::Format
        );
        assert_eq!(
            roaring_mask(&blob[..15], 4).unwrap_err().kind(),
            ErrorKind::Format
        );
    }
}
