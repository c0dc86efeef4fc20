//! Messages and frames: the preamble, every frame (`FR` ... `ENDF`, up to 7 zero bytes of
//! padding between them) and the postamble, in buffered and streamed layouts. Reads frame
//! headers and tails, the CBOR of metadata, index and hash frames and the descriptors of
//! data-object frames (each CBOR region bounded by `limits.max_manifest_size`); never a
//! payload.

use std::borrow::Cow;

use crate::error::{Error, Result, bail, err};
use crate::formats::ReadAt;
use crate::limits::Limits;
use crate::value::cbor::{self, Value};

use super::metadata::{self as meta, Items};

/// The first bytes of every message.
pub(super) const MAGIC: &[u8; 8] = b"TENSOGRM";
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
/// The frame type of a data object (`NTensorFrame`).
const DATA_OBJECT: u16 = 9;

/// One data-object frame as found in the message: where it and its descriptor are. The
/// descriptor was validated by the walk and is read again when its object is built, so
/// that a message of many small objects never holds every descriptor at once.
pub(super) struct DataFrame {
    /// Absolute offset of the frame's `FR`.
    pub(super) offset: u64,
    /// Frame length, header to `ENDF`.
    pub(super) length: u64,
    /// The inline hash slot.
    pub(super) hash: u64,
    /// Absolute start and end of the CBOR descriptor.
    cbor: (u64, u64),
    flags: u16,
}

impl DataFrame {
    /// The descriptor's tree (within the tree budget of its bytes), read again: one at a
    /// time, for the object being built.
    pub(super) fn descriptor(&self, read: &ReadAt<'_>, depth: usize) -> Result<Value> {
        let (start, end) = self.cbor;
        let bytes = read(start, end - start)?;
        if bytes.len() as u64 != end - start {
            bail!(Format, "the descriptor at offset {start} is truncated");
        }
        decode_cbor(&bytes, start, depth, "descriptor")
    }
    /// Absolute start of the frame body (after the 16-byte header).
    pub(super) fn body_start(&self) -> u64 {
        self.offset + FRAME_HEADER
    }
    /// Absolute end of the frame body (where the 20-byte footer starts).
    pub(super) fn body_end(&self) -> u64 {
        self.offset + self.length - DATA_FOOTER
    }
    /// Absolute start and end of the payload and its masks: the body before the
    /// descriptor, or after it.
    pub(super) fn data_region(&self) -> (u64, u64) {
        if self.flags & CBOR_AFTER_PAYLOAD != 0 {
            (self.body_start(), self.cbor.0)
        } else {
            (self.cbor.1, self.body_end())
        }
    }
}

/// A message's data-object frames in order, in chunks that are freed one by one as the
/// objects are built (`into_iter`): the records and the objects made of them are never
/// all held at once.
#[derive(Default)]
pub(super) struct Frames {
    chunks: Vec<Vec<DataFrame>>,
}

impl Frames {
    /// Frames per chunk (96 KiB).
    const CHUNK: usize = 2048;

    fn push(&mut self, frame: DataFrame) {
        match self.chunks.last_mut() {
            Some(last) if last.len() < Self::CHUNK => last.push(frame),
            _ => {
                let mut chunk = Vec::with_capacity(Self::CHUNK);
                chunk.push(frame);
                self.chunks.push(chunk);
            }
        }
    }
    /// How many frames there are (every chunk but the last is full).
    pub(super) fn len(&self) -> usize {
        self.chunks
            .last()
            .map_or(0, |last| (self.chunks.len() - 1) * Self::CHUNK + last.len())
    }
    fn iter(&self) -> impl Iterator<Item = &DataFrame> {
        self.chunks.iter().flatten()
    }
}

impl IntoIterator for Frames {
    type Item = DataFrame;
    type IntoIter = std::iter::Flatten<std::vec::IntoIter<Vec<DataFrame>>>;
    /// The frames in order; each chunk is freed once its last frame is taken.
    fn into_iter(self) -> Self::IntoIter {
        self.chunks.into_iter().flatten()
    }
}

/// One message: where it is and what its frames hold. Metadata maps are their CBOR
/// bytes in the deterministic encoding (`metadata::deterministic`).
pub(super) struct Message<'s> {
    pub(super) index: usize,
    /// Absolute offset of the preamble.
    start: u64,
    /// Absolute end (after the postamble).
    pub(super) end: u64,
    flags: u16,
    header_meta: Option<Cow<'s, [u8]>>,
    footer_meta: Option<Cow<'s, [u8]>>,
    /// The data-object frames (taken out when their objects are built).
    pub(super) objects: Frames,
    /// The single `base` entry of each preceder metadata frame (a CBOR map in the
    /// deterministic encoding), with the index of the data-object frame it precedes.
    pub(super) preceders: Vec<(usize, Cow<'s, [u8]>)>,
}

impl<'s> Message<'s> {
    /// Whether the preamble says every frame's inline hash slot holds a digest.
    pub(super) fn hashed(&self) -> bool {
        self.flags & HASHES_PRESENT != 0
    }
    /// The global metadata map: the footer frame's (written last) or the header's.
    pub(super) fn metadata(&self) -> &[u8] {
        self.footer_meta
            .as_ref()
            .or(self.header_meta.as_ref())
            .expect("a message has a metadata frame (checked by walk_message)")
    }
    /// The global metadata map, taken out of the message.
    pub(super) fn into_metadata(self) -> Cow<'s, [u8]> {
        self.footer_meta
            .or(self.header_meta)
            .expect("a message has a metadata frame (checked by walk_message)")
    }
    /// Checks that the metadata's `base` (when there is one) is an array of maps, at most
    /// one per data object.
    pub(super) fn check_base(&self) -> Result<()> {
        let Some(base) = meta::get(self.metadata(), "base") else {
            return Ok(());
        };
        let Some(items) = Items::of(base) else {
            bail!(
                Format,
                "metadata 'base' is {}, expected an array of maps",
                meta::type_name(base)
            );
        };
        let mut count = 0;
        for (i, item) in items.enumerate() {
            if meta::expect_map(item, "").is_err() {
                bail!(
                    Format,
                    "metadata base[{i}] is {}, expected a map",
                    meta::type_name(item)
                );
            }
            count += 1;
        }
        if count > self.objects.len() {
            bail!(
                Format,
                "metadata base has {count} entries but the message holds {} objects",
                self.objects.len()
            );
        }
        Ok(())
    }
    /// The `base` entries (maps, as their bytes), one per object from the first, once
    /// `check_base` has checked them.
    pub(super) fn entries(&self) -> Items<'_> {
        meta::get(self.metadata(), "base")
            .and_then(Items::of)
            .unwrap_or_else(|| Items::of(&[0x80]).expect("an empty array"))
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

/// The memory a decoded CBOR region's tree may take: 16 times its bytes, plus 16 MiB.
/// Metadata as writers produce it (maps of short texts and numbers, index arrays) takes
/// about 4 to 10 times its bytes; a region of one-byte items would take 32 times, and is
/// a `Limit` error at the budget instead.
pub(super) fn tree_budget(bytes: usize) -> usize {
    bytes.saturating_mul(16).saturating_add(16 << 20)
}

/// Decodes one CBOR item spanning `bytes` (read from file offset `at`).
fn decode_cbor(bytes: &[u8], at: u64, depth: usize, what: &str) -> Result<Value> {
    let (value, used) = cbor::decode_within(bytes, depth, tree_budget(bytes.len()))
        .map_err(|e| e.positioned(what, at))?;
    if used != bytes.len() {
        return Err(cbor::DecodeError {
            offset: used,
            message: "trailing bytes after the item".into(),
            too_deep: false,
        }
        .positioned(what, at));
    }
    Ok(value)
}

/// Walks the message starting at `start`: preamble, every frame, postamble. Reads the
/// 16-byte header of each frame, the CBOR of metadata, index and hash frames and the
/// descriptor and footer of data-object frames (each CBOR region bounded by
/// `limits.max_manifest_size`).
pub(super) fn walk_message<'s>(
    read: &ReadAt<'s>,
    size: u64,
    start: u64,
    index: usize,
    limits: &Limits,
    depth: usize,
) -> Result<Message<'s>> {
    let (flags, total) = preamble(read, size, start)?;
    let mut walk = Walk {
        read,
        limits,
        depth,
        // Where the postamble must end: known for buffered messages, else the file end.
        limit: if total != 0 { start + total } else { size },
        msg: Message {
            index,
            start,
            end: 0,
            flags,
            header_meta: None,
            footer_meta: None,
            objects: Frames::default(),
            preceders: Vec::new(),
        },
        phase: Phase::Header,
        preceder: None,
        first_footer: None,
        index_frame: None,
        hash_frame: None,
    };
    let mut pos = start + PREAMBLE;
    let postamble_at = loop {
        let (at, is_postamble) = next_item(read, pos, walk.limit)?;
        if is_postamble {
            break at;
        }
        pos = walk.frame(at)?;
    };
    walk.finish(postamble_at, total)
}

/// Reads and checks a message's preamble. Returns its flags and total_length (0 for a
/// streamed message; else checked to fit in the file).
fn preamble(read: &ReadAt<'_>, size: u64, start: u64) -> Result<(u16, u64)> {
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
    if total != 0 && (total < PREAMBLE + POSTAMBLE || total > size - start) {
        bail!(
            Format,
            "total_length {total} does not fit: {} bytes remain in the file",
            size - start
        );
    }
    Ok((flags, total))
}

/// Skips the padding at `pos` and finds a frame ("FR") or the postamble (end magic 16
/// bytes further). Returns its offset and whether it is the postamble.
fn next_item(read: &ReadAt<'_>, pos: u64, limit: u64) -> Result<(u64, bool)> {
    let window = read(pos, (MAX_PADDING + POSTAMBLE).min(limit - pos))?;
    for k in 0..=MAX_PADDING as usize {
        // "FR" first: a payload may begin with the end magic's bytes, while a
        // postamble can't begin with "FR" (its first_footer_offset would be huge).
        if window.len() >= k + 2 && &window[k..k + 2] == b"FR" {
            return Ok((pos + k as u64, false));
        }
        if window.len() >= k + POSTAMBLE as usize && &window[k + 16..k + 24] == END_MAGIC {
            return Ok((pos + k as u64, true));
        }
        if window.get(k) != Some(&0) {
            break;
        }
    }
    bail!(
        Format,
        "expected a frame (\"FR\") or the postamble at offset {pos}, found neither"
    )
}

/// A frame's header and tail fields.
struct FrameHead {
    /// Absolute offset of the `FR`.
    at: u64,
    ftype: u16,
    flags: u16,
    /// Frame length, header to `ENDF` (checked to leave room for the postamble).
    length: u64,
    /// The inline hash slot.
    hash: u64,
    /// The tail's cbor_offset slot (meaningful in data-object frames only).
    cbor_offset: u64,
}

impl FrameHead {
    /// Says which frame an error is about.
    fn context(&self, e: Error) -> Error {
        e.context(format!(
            "frame of type {} at offset {}",
            self.ftype, self.at
        ))
    }
}

/// Reads the header and tail of the frame at `at`, which must end with its "ENDF" and
/// leave room for the postamble before `limit`.
fn frame_head(read: &ReadAt<'_>, at: u64, limit: u64) -> Result<FrameHead> {
    let header = read(at, FRAME_HEADER.min(limit - at))?;
    if header.len() < FRAME_HEADER as usize {
        bail!(Format, "frame at offset {at} is truncated");
    }
    let mut head = FrameHead {
        at,
        ftype: be16(&header[2..]),
        flags: be16(&header[6..]),
        length: be64(&header[8..]),
        hash: 0,
        cbor_offset: 0,
    };
    drop(header);
    let min = if head.ftype == DATA_OBJECT {
        FRAME_HEADER + DATA_FOOTER
    } else {
        FRAME_HEADER + COMMON_FOOTER
    };
    // The postamble must still fit after the frame.
    let (flen, room) = (head.length, limit - at);
    if flen < min || flen > room.saturating_sub(POSTAMBLE) {
        return Err(head.context(err!(
            Format,
            "frame length {flen} is impossible: at least {min}, and the frame and the \
             postamble must fit in the {room} bytes left of the message"
        )));
    }
    // Every frame is at least as long as a data-object footer (28 >= 20 bytes).
    let end = at + flen;
    let tail = read(end - DATA_FOOTER, DATA_FOOTER)?;
    if &tail[16..20] != b"ENDF" {
        return Err(head.context(err!(Format, "no \"ENDF\" end marker at offset {}", end - 4)));
    }
    head.hash = be64(&tail[8..16]);
    head.cbor_offset = be64(&tail[..8]);
    Ok(head)
}

/// The walk through one message's frames: what was found so far.
struct Walk<'r, 's> {
    read: &'r ReadAt<'s>,
    limits: &'r Limits,
    depth: usize,
    /// Where the postamble must end.
    limit: u64,
    msg: Message<'s>,
    phase: Phase,
    /// A preceder metadata frame's offset and entry, until its data-object frame.
    preceder: Option<(u64, Cow<'s, [u8]>)>,
    /// Absolute offset of the first footer frame.
    first_footer: Option<u64>,
    /// Index and hash frames: offsets and CBOR maps.
    index_frame: Option<(u64, Cow<'s, [u8]>)>,
    hash_frame: Option<(u64, Cow<'s, [u8]>)>,
}

impl<'s> Walk<'_, 's> {
    /// Reads the frame at `at` into the message. Returns where it ends.
    fn frame(&mut self, at: u64) -> Result<u64> {
        let head = frame_head(self.read, at, self.limit)?;
        let ctx = |e: Error| head.context(e);
        self.enter(&head).map_err(ctx)?;
        if head.ftype == DATA_OBJECT {
            let frame = data_frame(self.read, &head, self.limits, self.depth).map_err(ctx)?;
            if let Some((_, entry)) = self.preceder.take() {
                self.msg.preceders.push((self.msg.objects.len(), entry));
            }
            self.msg.objects.push(frame);
        } else {
            let body = head.length - FRAME_HEADER - COMMON_FOOTER;
            if body > self.limits.max_manifest_size {
                return Err(ctx(err!(
                    Limit,
                    "{body} bytes of CBOR are over the limit of {}",
                    self.limits.max_manifest_size
                )));
            }
            let bytes = read_kept(self.read, at + FRAME_HEADER, body)?;
            let cbor_at = at + FRAME_HEADER;
            meta::validate(&bytes, cbor_at, self.depth, "frame").map_err(ctx)?;
            meta::expect_map(&bytes, "frame").map_err(ctx)?;
            self.keep(&head, bytes).map_err(ctx)?;
        }
        Ok(at + head.length)
    }

    /// Checks that a frame of this type may come next: its type is known, frames are in
    /// header, data, footer order and a preceder is followed by a data-object frame.
    fn enter(&mut self, head: &FrameHead) -> Result<()> {
        let phase = match head.ftype {
            1..=3 => Phase::Header,
            8 | DATA_OBJECT => Phase::Data,
            5..=7 => Phase::Footer,
            4 => bail!(
                Format,
                "frame type 4 is the obsolete v2 data-object frame, invalid in v3"
            ),
            other => bail!(
                Unsupported,
                "frame type {other} is not known to this reader"
            ),
        };
        if phase < self.phase {
            bail!(
                Format,
                "frames are out of order: a {phase:?} frame after a {:?} frame",
                self.phase
            );
        }
        self.phase = phase;
        if phase == Phase::Footer && self.first_footer.is_none() {
            self.first_footer = Some(head.at);
        }
        if self.preceder.is_some() && head.ftype != DATA_OBJECT {
            bail!(
                Format,
                "a preceder metadata frame must be followed by a data-object frame"
            );
        }
        Ok(())
    }

    /// Keeps the CBOR map of a metadata, index, hash or preceder frame (validated);
    /// metadata in the deterministic encoding.
    fn keep(&mut self, head: &FrameHead, bytes: Cow<'s, [u8]>) -> Result<()> {
        let at = head.at;
        let value = match head.ftype {
            1 | 7 | 8 => meta::deterministic(bytes, at + FRAME_HEADER)?,
            _ => bytes,
        };
        match head.ftype {
            1 => set_once(
                &mut self.msg.header_meta,
                value,
                "metadata frame of this type",
            ),
            7 => set_once(
                &mut self.msg.footer_meta,
                value,
                "metadata frame of this type",
            ),
            2 | 6 => set_once(&mut self.index_frame, (at, value), "index frame"),
            3 | 5 => set_once(&mut self.hash_frame, (at, value), "hash frame"),
            _ => {
                self.preceder = Some((at, preceder_entry(value)?));
                Ok(())
            }
        }
    }

    /// Checks the end of the walk and the postamble at `postamble_at`, then the index and
    /// hash frames against the data-object frames found.
    fn finish(mut self, postamble_at: u64, total: u64) -> Result<Message<'s>> {
        if let Some((at, _)) = self.preceder {
            bail!(
                Format,
                "the preceder metadata frame at offset {at} is not followed by a data-object frame"
            );
        }
        if self.msg.header_meta.is_none() && self.msg.footer_meta.is_none() {
            bail!(Format, "the message has no metadata frame");
        }
        self.msg.end = postamble_at + POSTAMBLE;
        self.check_postamble(postamble_at, total)?;
        let msg = self.msg;
        if let Some((at, idx)) = self.index_frame {
            check_index(&msg, &idx)
                .map_err(|e| e.context(format!("index frame at offset {at}")))?;
        }
        if let Some((at, hashes)) = self.hash_frame {
            check_hashes(&msg, &hashes)
                .map_err(|e| e.context(format!("hash frame at offset {at}")))?;
        }
        Ok(msg)
    }

    /// Checks the postamble against where it is and the first footer frame found.
    fn check_postamble(&self, postamble_at: u64, total: u64) -> Result<()> {
        let post = (self.read)(postamble_at, POSTAMBLE)?;
        let first_footer_offset = be64(&post[..8]);
        let post_total = be64(&post[8..16]);
        drop(post);
        let start = self.msg.start;
        let length = self.msg.end - start;
        if total != 0 && self.msg.end != self.limit {
            bail!(
                Format,
                "the postamble is at offset {postamble_at}, but total_length {total} puts it at {}",
                self.limit - POSTAMBLE
            );
        }
        if post_total != 0 && post_total != length {
            bail!(
                Format,
                "the postamble's total_length {post_total} disagrees with the message's {length} bytes"
            );
        }
        let expected_ffo = self.first_footer.unwrap_or(postamble_at) - start;
        if first_footer_offset != expected_ffo {
            bail!(
                Format,
                "the postamble's first_footer_offset {first_footer_offset} should be {expected_ffo}"
            );
        }
        Ok(())
    }
}

/// Reads `len` bytes at `offset` that the model will keep (a metadata frame becomes the
/// file attributes): into memory of their own, a piece at a time, rather than borrowed
/// from a mapping and copied, which would hold the file's pages and the copy at once.
fn read_kept<'s>(read: &ReadAt<'s>, offset: u64, len: u64) -> Result<Cow<'s, [u8]>> {
    const PIECE: u64 = 1 << 20;
    if len <= PIECE {
        return read(offset, len);
    }
    let mut out = Vec::new();
    let mut done = 0;
    while done < len {
        let piece = read(offset + done, PIECE.min(len - done))?;
        if piece.is_empty() {
            bail!(Format, "the frame at offset {offset} is truncated");
        }
        out.try_reserve(piece.len())
            .map_err(|_| err!(Limit, "no memory for a frame of {len} bytes"))?;
        out.extend_from_slice(&piece);
        done += piece.len() as u64;
    }
    Ok(Cow::Owned(out))
}

/// Puts `value` in an empty `slot`; a full one means a second frame of that `kind`.
fn set_once<T>(slot: &mut Option<T>, value: T, kind: &str) -> Result<()> {
    if slot.replace(value).is_some() {
        bail!(Format, "a second {kind}");
    }
    Ok(())
}

/// Reads and validates a data-object frame's descriptor (bounded by
/// `limits.max_manifest_size`), and finds where it ends.
fn data_frame(
    read: &ReadAt<'_>,
    head: &FrameHead,
    limits: &Limits,
    depth: usize,
) -> Result<DataFrame> {
    let (at, cbor_offset) = (head.at, head.cbor_offset);
    let body_end = head.length - DATA_FOOTER;
    if cbor_offset < FRAME_HEADER || cbor_offset > body_end {
        bail!(
            Format,
            "cbor_offset {cbor_offset} is outside the frame body [{FRAME_HEADER}, {body_end}]"
        );
    }
    let region = body_end - cbor_offset;
    let cap = limits.max_manifest_size;
    let (desc, used) = if head.flags & CBOR_AFTER_PAYLOAD != 0 {
        if region > cap {
            bail!(
                Limit,
                "descriptor of {region} bytes is over the limit of {cap}"
            );
        }
        let bytes = read(at + cbor_offset, region)?;
        meta::validate(&bytes, at + cbor_offset, depth, "descriptor")?;
        let used = bytes.len();
        (bytes, used)
    } else {
        // Descriptor first: its length is what one CBOR item takes, found by a
        // validation pass (no allocation); the payload after it is not part of it (nor
        // does it widen the tree budget).
        let bytes = read(at + cbor_offset, region.min(cap))?;
        let used = cbor::validate_prefix(&bytes, depth)
            .map_err(|e| e.positioned("descriptor", at + cbor_offset))?;
        (bytes, used)
    };
    if meta::expect_map(&desc[..used], "").is_err() {
        bail!(
            Format,
            "the descriptor is {}, expected a map",
            meta::type_name(&desc[..used])
        );
    }
    let start = at + cbor_offset;
    Ok(DataFrame {
        offset: at,
        length: head.length,
        hash: head.hash,
        cbor: (start, start + used as u64),
        flags: head.flags,
    })
}

/// The single `base` entry of a preceder metadata frame (a deterministic CBOR map).
fn preceder_entry(v: Cow<'_, [u8]>) -> Result<Cow<'_, [u8]>> {
    let entry = |v: &[u8]| -> Result<std::ops::Range<usize>> {
        let Some(items) = meta::get(v, "base").and_then(Items::of) else {
            bail!(
                Format,
                "a preceder's CBOR must be a map with a 'base' array of one map"
            );
        };
        let items: Vec<&[u8]> = items.take(2).collect();
        match items[..] {
            [entry] if meta::expect_map(entry, "").is_ok() => {
                let start = entry.as_ptr() as usize - v.as_ptr() as usize;
                Ok(start..start + entry.len())
            }
            [_] => bail!(
                Format,
                "a preceder's CBOR must be a map with a 'base' array of one map"
            ),
            _ => bail!(
                Format,
                "a preceder's base must have exactly 1 entry, not {}",
                meta::get(v, "base")
                    .and_then(Items::of)
                    .map_or(0, Iterator::count)
            ),
        }
    };
    let range = entry(&v)?;
    Ok(match v {
        Cow::Borrowed(b) => Cow::Borrowed(&b[range]),
        Cow::Owned(b) => Cow::Owned(b[range].to_vec()),
    })
}

/// Checks an index frame (a CBOR map) against the data-object frames found.
fn check_index(msg: &Message<'_>, idx: &[u8]) -> Result<()> {
    // Each list is checked to hold integers and counted, then the two are read side by
    // side: no list is held.
    let list = |key: &str| -> Result<(&[u8], usize)> {
        let array = meta::get(idx, key)
            .filter(|a| Items::of(a).is_some())
            .ok_or_else(|| err!(Format, "'{key}' is missing or not an array"))?;
        let mut count = 0;
        for v in Items::of(array).expect("an array") {
            if meta::unsigned(v).is_none() {
                bail!(
                    Format,
                    "'{key}' holds {}, expected integers",
                    meta::type_name(v)
                );
            }
            count += 1;
        }
        Ok((array, count))
    };
    let (offsets, n_offsets) = list("offsets")?;
    let (lengths, n_lengths) = list("lengths")?;
    if n_offsets != msg.objects.len() || n_lengths != msg.objects.len() {
        bail!(
            Format,
            "it lists {n_offsets} offsets and {n_lengths} lengths, but the message holds {} \
             data objects",
            msg.objects.len()
        );
    }
    let values = |array| {
        Items::of(array)
            .expect("an array")
            .map(|v| meta::unsigned(v).expect("checked"))
    };
    let listed = values(offsets).zip(values(lengths));
    for (k, (f, (offset, length))) in msg.objects.iter().zip(listed).enumerate() {
        if offset != f.offset - msg.start || length != f.length {
            bail!(
                Format,
                "object {k} is listed at offset {offset} length {length}, but its frame is at \
                 {} length {}",
                f.offset - msg.start,
                f.length
            );
        }
    }
    Ok(())
}

/// Checks a hash frame's shape (a CBOR map): one hash per data object. The inline hash
/// slots are authoritative (`Reader::verify` checks them), so a hash frame that disagrees
/// with them is not refused here: a flipped bit in a hash must be a `Checksum` error on
/// verification, not a file that no longer opens.
fn check_hashes(msg: &Message<'_>, frame: &[u8]) -> Result<()> {
    let hashes = meta::get(frame, "hashes")
        .and_then(Items::of)
        .ok_or_else(|| err!(Format, "'hashes' is missing or not an array"))?
        .count();
    if hashes != msg.objects.len() {
        bail!(
            Format,
            "it lists {hashes} hashes for {} data objects",
            msg.objects.len()
        );
    }
    Ok(())
}
