//! The frame index of a zstd stream: where each frame's stored bytes and decoded bytes lie,
//! so a range read fetches and decodes only the frames it needs. It comes from the
//! stream's seek table (`seek_table`) or, for streams without one, from a walk of the
//! frame and block headers that reads a few bytes per block and decodes nothing.
//!
//! Memory is bounded: an index keeps at most `MAX_INDEX_ENTRIES` entries. A stream with
//! more frames gets entries that each cover a run of consecutive frames (2, 4, 8 ... of
//! them), which still decode independently; only the range reads get coarser.

use std::ops::Range;

use crate::error::{Result, bail};

/// The most entries one index keeps (16 bytes each: 1 MiB). This library's frames hold
/// 4 MiB, so every component up to 256 GiB gets one entry per frame.
pub(crate) const MAX_INDEX_ENTRIES: usize = 1 << 16;

/// Header reads one walk may make before it gives up placing frames (each read is a few
/// bytes; the rest of the stream then counts as one run decoded from its start).
const MAX_WALK_READS: u64 = 1 << 20;

/// Reads the stream's bytes at an offset of the stream, exactly filling the buffer.
pub(crate) type ReadAt<'a> = dyn FnMut(u64, &mut [u8]) -> Result<()> + 'a;

/// Reads many small pieces of the stream at once: (offset, length) pairs in increasing
/// order, their bytes one after the other into the buffer (exactly their total length).
/// Lets a remote source fetch them concurrently.
pub(crate) type ReadMany<'a> = dyn FnMut(&[(u64, usize)], &mut [u8]) -> Result<()> + 'a;

/// One entry of a `FrameIndex`: a frame (or a run of consecutive frames), its stored bytes
/// as offsets into the component's stored bytes, and its decoded bytes as offsets into the
/// component's decoded bytes. The stored bytes decode on their own (any zstd decoder's
/// one-shot call, e.g. `ZSTD_decompress`) to exactly the decoded length, when the file
/// is sound.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameSpan {
    /// Offsets into the component's stored (compressed) bytes.
    pub stored: Range<u64>,
    /// Offsets into the component's decoded bytes.
    pub decoded: Range<u64>,
}

/// Where the frames of a zstd component lie, in order. Built once per component by the
/// reader (`Reader::frame_index`), from the seek table this library writes at the end of
/// every multi-frame component, or from the frame headers of streams without one. Entries
/// cover the component's stored bytes up to the seek table (if any) without gaps, and its
/// decoded bytes without gaps. A frame whose decoded size the headers don't state (the
/// reference implementation writes such frames) ends the walk: it and everything after it
/// form the last entry, decoded from its start.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameIndex {
    /// (stored, decoded) start of each entry.
    starts: Vec<(u64, u64)>,
    stored_end: u64,
    decoded_end: u64,
    /// The low 32 bits of the XXH64 of each entry's decoded bytes, from a table with the
    /// checksum flag while each entry is one frame.
    checksums: Option<Vec<u32>>,
    frames_per_entry: u64,
    has_table: bool,
}

impl FrameIndex {
    /// Number of entries.
    pub fn len(&self) -> usize {
        self.starts.len()
    }

    /// True when there are no entries (an empty stream).
    pub fn is_empty(&self) -> bool {
        self.starts.is_empty()
    }

    /// Entry `i`, or None past the end.
    pub fn get(&self, i: usize) -> Option<FrameSpan> {
        let &(stored, decoded) = self.starts.get(i)?;
        let (stored_end, decoded_end) = self
            .starts
            .get(i + 1)
            .copied()
            .unwrap_or((self.stored_end, self.decoded_end));
        Some(FrameSpan {
            stored: stored..stored_end,
            decoded: decoded..decoded_end,
        })
    }

    /// Every entry, in order.
    pub fn iter(&self) -> impl Iterator<Item = FrameSpan> + '_ {
        (0..self.len()).map(|i| self.get(i).expect("in range"))
    }

    /// True when the index came from a seek table at the end of the stored bytes.
    pub fn has_seek_table(&self) -> bool {
        self.has_table
    }

    /// Frames per entry: 1, or a power of two when the stream has more frames than an
    /// index keeps (then each entry is a run of that many frames, the last one fewer).
    pub fn frames_per_entry(&self) -> u64 {
        self.frames_per_entry
    }

    /// The checksum a seek table records for entry `i` (a single frame), if any.
    pub(crate) fn checksum(&self, i: usize) -> Option<u32> {
        self.checksums.as_ref().and_then(|c| c.get(i).copied())
    }

    /// The first entry whose decoded bytes end after `offset` (`len()` when none does).
    pub(crate) fn first_after(&self, offset: u64) -> usize {
        if self.starts.is_empty() {
            return 0;
        }
        self.starts[1..].partition_point(|&(_, decoded)| decoded <= offset)
    }

    /// The largest decoded length of an entry.
    pub(crate) fn largest_decoded(&self) -> u64 {
        self.iter()
            .map(|f| f.decoded.end - f.decoded.start)
            .max()
            .unwrap_or(0)
    }

    /// Makes entry `entry` the last one, reaching to the end of the stream: for a stream
    /// whose frames from there on can't be placed (see `seek_table::read`). Its checksum,
    /// which was of one frame, goes.
    pub(crate) fn end_at(&mut self, entry: usize) {
        self.starts.truncate(entry + 1);
        if let Some(c) = self.checksums.as_mut() {
            c.truncate(entry);
        }
    }

    /// The memory the index holds, in bytes.
    pub(crate) fn heap_bytes(&self) -> u64 {
        let checksums = self.checksums.as_ref().map_or(0, |c| c.capacity() * 4);
        (self.starts.capacity() * 16 + checksums + std::mem::size_of::<Self>()) as u64
    }
}

/// Builds an index frame by frame, keeping at most `max_entries` entries: when a new frame
/// would make one more, neighbouring entries are merged pairwise (so each entry then
/// covers twice as many frames) and checksums, which belong to single frames, are dropped.
pub(crate) struct IndexBuilder {
    starts: Vec<(u64, u64)>,
    checksums: Option<Vec<u32>>,
    max_entries: usize,
    frames_per_entry: u64,
    in_last: u64,
}

impl IndexBuilder {
    /// `max_entries` is rounded up to an even number of at least 2.
    pub(crate) fn new(max_entries: usize, checksums: bool) -> IndexBuilder {
        IndexBuilder {
            starts: Vec::new(),
            checksums: checksums.then(Vec::new),
            max_entries: max_entries.max(2).next_multiple_of(2),
            frames_per_entry: 1,
            in_last: 0,
        }
    }

    /// The next frame starts at these stored and decoded offsets.
    pub(crate) fn push(&mut self, stored: u64, decoded: u64, checksum: Option<u32>) {
        if self.in_last != 0 && self.in_last < self.frames_per_entry {
            self.in_last += 1;
            return;
        }
        if self.starts.len() == self.max_entries {
            // Every entry is full: merge pairs.
            let mut i = 0;
            self.starts.retain(|_| {
                i += 1;
                i % 2 == 1
            });
            self.frames_per_entry *= 2;
            self.checksums = None;
        }
        self.starts.push((stored, decoded));
        if let Some(c) = self.checksums.as_mut() {
            c.push(checksum.unwrap_or(0));
        }
        self.in_last = 1;
    }

    /// Frames per entry so far.
    pub(crate) fn frames_per_entry(&self) -> u64 {
        self.frames_per_entry
    }

    /// The index of the frames pushed, whose last entry ends at `stored_end` and
    /// `decoded_end`.
    pub(crate) fn finish(self, stored_end: u64, decoded_end: u64, has_table: bool) -> FrameIndex {
        let mut starts = self.starts;
        starts.shrink_to_fit();
        FrameIndex {
            starts,
            stored_end,
            decoded_end,
            checksums: self.checksums,
            frames_per_entry: self.frames_per_entry,
            has_table,
        }
    }
}

const ZSTD_MAGIC: u32 = 0xFD2F_B528;
const SKIPPABLE_MAGIC_MASK: u32 = 0xFFFF_FFF0;
const SKIPPABLE_MAGIC: u32 = 0x184D_2A50;

/// Indexes a `stored`-byte zstd stream that decodes to `total` bytes by walking its frame
/// and block headers (`read` reads a few bytes at a time; nothing is decoded). Frames that
/// state their decoded size get an entry each; the walk stops at a frame it can't place
/// (no decoded size in its header, the frame holding the last decoded bytes, a header it
/// doesn't understand, or after `MAX_WALK_READS` reads): that frame and everything after
/// it become the last entry, to be decoded from its start. Decoded sizes stated in frame
/// headers that can't add up to `total` (more than the bytes left, or all frames placed
/// and the sum short) are a `Format` error: zstd decoders enforce those sizes, so no read
/// of the component can succeed. Any other damage is left for decoding to report.
pub(crate) fn walk(
    read: &mut ReadAt<'_>,
    stored: u64,
    total: u64,
    max_entries: usize,
) -> Result<FrameIndex> {
    let mut builder = IndexBuilder::new(max_entries, false);
    let (mut pos, mut out, mut reads) = (0u64, 0u64, 0u64);
    while pos < stored {
        builder.push(pos, out, None);
        match sized_frame_at(read, pos, stored, total - out, &mut reads)? {
            Sized::Placed(len, decoded) => {
                pos += len;
                out += decoded;
            }
            Sized::TooLarge(decoded) => bail!(
                Format,
                "the zstd frame at stored byte {pos} records {decoded} decoded bytes, but \
                 only {} of the component's {total} are left",
                total - out
            ),
            Sized::Rest => return Ok(builder.finish(stored, total, false)),
        }
    }
    if out != total {
        bail!(
            Format,
            "the zstd frames record {out} decoded bytes in all, but the component has {total}"
        );
    }
    Ok(builder.finish(stored, total, false))
}

/// What the headers say about a frame.
enum Sized {
    /// Its stored and decoded lengths, the decoded one less than what is left to place.
    Placed(u64, u64),
    /// It records more decoded bytes than are left.
    TooLarge(u64),
    /// It can't be placed cheaply (see `walk`): it starts the last entry.
    Rest,
}

/// The most bytes a frame header takes: magic (4), descriptor (1), window (1), dictionary
/// id (up to 4), content size (up to 8).
pub(crate) const MAX_FRAME_HEADER: usize = 18;

/// What the first bytes of a frame say about it (`frame_head`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FrameHead {
    /// A skippable frame of this many bytes in all (its 8-byte header included).
    Skippable(u64),
    /// A zstd frame: the length of its header, the decoded size the header states (None:
    /// not stated), and whether a 4-byte content checksum follows its last block.
    Zstd {
        header_len: usize,
        content_size: Option<u64>,
        checksum: bool,
    },
    /// No frame this reader understands: another magic, a reserved bit, or fewer bytes
    /// than the header needs.
    Unknown,
}

/// Parses the header at the start of `head` (at most `MAX_FRAME_HEADER` bytes are looked
/// at; fewer may be given when the frame's stored bytes end sooner).
pub(crate) fn frame_head(head: &[u8]) -> FrameHead {
    if head.len() < 5 {
        return FrameHead::Unknown;
    }
    let magic = u32::from_le_bytes(head[..4].try_into().expect("4 bytes"));
    if magic & SKIPPABLE_MAGIC_MASK == SKIPPABLE_MAGIC {
        return match head.get(4..8) {
            Some(len) => FrameHead::Skippable(
                8 + u64::from(u32::from_le_bytes(len.try_into().expect("4 bytes"))),
            ),
            None => FrameHead::Unknown,
        };
    }
    let descriptor = head[4];
    if magic != ZSTD_MAGIC || descriptor & 0x08 != 0 {
        return FrameHead::Unknown; // another magic, or the reserved bit
    }
    let single_segment = descriptor & 0x20 != 0;
    let size_bytes = match descriptor >> 6 {
        0 => usize::from(single_segment),
        1 => 2,
        2 => 4,
        _ => 8,
    };
    let dict_bytes = [0usize, 1, 2, 4][usize::from(descriptor & 3)];
    let at = 5 + usize::from(!single_segment) + dict_bytes;
    let header_len = at + size_bytes;
    if header_len > head.len() {
        return FrameHead::Unknown; // a truncated header
    }
    let content_size = (size_bytes > 0).then(|| {
        let mut size = [0u8; 8];
        size[..size_bytes].copy_from_slice(&head[at..header_len]);
        u64::from_le_bytes(size) + if size_bytes == 2 { 256 } else { 0 }
    });
    FrameHead::Zstd {
        header_len,
        content_size,
        checksum: descriptor & 0x04 != 0,
    }
}

/// What the headers of the frame at `pos` say, with `rest` decoded bytes still to place.
fn sized_frame_at(
    read: &mut ReadAt<'_>,
    pos: u64,
    stored: u64,
    rest: u64,
    reads: &mut u64,
) -> Result<Sized> {
    let mut head = [0u8; MAX_FRAME_HEADER];
    let n = (stored - pos).min(head.len() as u64) as usize;
    if n < 8 {
        return Ok(Sized::Rest);
    }
    read(pos, &mut head[..n])?;
    *reads += 1;
    let (header_len, decoded, checksum) = match frame_head(&head[..n]) {
        FrameHead::Skippable(len) => return Ok(placed(pos + len <= stored, len, 0)),
        FrameHead::Zstd {
            header_len,
            content_size: Some(decoded),
            checksum,
        } => (header_len, decoded, checksum),
        // No decoded size, or no frame understood here.
        FrameHead::Zstd { .. } | FrameHead::Unknown => return Ok(Sized::Rest),
    };
    if decoded > rest {
        return Ok(Sized::TooLarge(decoded));
    }
    if decoded == rest {
        return Ok(Sized::Rest); // the frame with the last decoded bytes: no need to find its end
    }
    // The blocks: 3-byte headers (last flag, type, size), raw and compressed blocks store
    // `size` bytes, RLE blocks one.
    let mut block = pos + header_len as u64;
    loop {
        if *reads >= MAX_WALK_READS || block + 3 > stored {
            return Ok(Sized::Rest);
        }
        let mut h = [0u8; 4];
        read(block, &mut h[..3])?;
        *reads += 1;
        let h = u32::from_le_bytes(h);
        let (last, kind, size) = (h & 1 == 1, (h >> 1) & 3, u64::from(h >> 3));
        block += 3 + match kind {
            0 | 2 => size,
            1 => 1,
            _ => return Ok(Sized::Rest),
        };
        if last {
            break;
        }
    }
    if checksum {
        block += 4; // content checksum
    }
    Ok(placed(block <= stored, block - pos, decoded))
}

fn placed(fits: bool, len: u64, decoded: u64) -> Sized {
    if fits {
        Sized::Placed(len, decoded)
    } else {
        Sized::Rest
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn walk_bytes(stream: &[u8], total: u64, max: usize) -> (FrameIndex, usize) {
        let mut reads = 0usize;
        let mut read = |offset: u64, dst: &mut [u8]| {
            reads += 1;
            let at = offset as usize;
            dst.copy_from_slice(&stream[at..at + dst.len()]);
            Ok(())
        };
        let index = walk(&mut read, stream.len() as u64, total, max).unwrap();
        (index, reads)
    }

    fn spans(index: &FrameIndex) -> Vec<(Range<u64>, Range<u64>)> {
        index.iter().map(|f| (f.stored, f.decoded)).collect()
    }

    /// A frame that records its content size, compressed with small blocks.
    fn sized(data: &[u8]) -> Vec<u8> {
        zstd::bulk::compress(data, 1).unwrap()
    }

    /// A frame without a content size (as the reference writer makes them).
    fn without_size(data: &[u8]) -> Vec<u8> {
        let mut e = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
        e.include_contentsize(false).unwrap();
        e.include_checksum(true).unwrap();
        std::io::Write::write_all(&mut e, data).unwrap();
        e.finish().unwrap()
    }

    fn data(n: usize, seed: u32) -> Vec<u8> {
        let mut x = seed.wrapping_mul(2_654_435_761).max(1);
        (0..n)
            .map(|i| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                if i % 3 == 0 { (x >> 24) as u8 } else { 7 }
            })
            .collect()
    }

    #[test]
    fn the_walk_places_every_sized_frame_from_headers_alone() {
        let parts = [data(300_000, 1), data(5, 2), data(0, 3), data(200_000, 4)];
        let frames: Vec<Vec<u8>> = parts.iter().map(|p| sized(p)).collect();
        let mut stream = frames.concat();
        // A skippable frame in the middle, like any writer may put there.
        let skippable = [&[0x53, 0x2A, 0x4D, 0x18, 3, 0, 0, 0][..], &[9, 9, 9]].concat();
        stream.splice(frames[0].len()..frames[0].len(), skippable.iter().copied());
        let total: u64 = parts.iter().map(|p| p.len() as u64).sum();
        let (index, reads) = walk_bytes(&stream, total, 1 << 16);
        let (a, s) = (frames[0].len() as u64, skippable.len() as u64);
        let (b, c) = (frames[1].len() as u64, frames[2].len() as u64);
        assert_eq!(
            spans(&index),
            [
                (0..a, 0..300_000),
                (a..a + s, 300_000..300_000),
                (a + s..a + s + b, 300_000..300_005),
                (a + s + b..a + s + b + c, 300_005..300_005),
                // The frame with the last bytes: not walked, it ends the stream.
                (a + s + b + c..stream.len() as u64, 300_005..500_005),
            ]
        );
        assert!(!index.has_seek_table());
        // Frame headers and block headers only: a handful of small reads.
        assert!(reads < 20, "{reads} reads");
        assert_eq!(index.first_after(0), 0);
        assert_eq!(index.first_after(299_999), 0);
        assert_eq!(index.first_after(300_000), 2);
        assert_eq!(index.first_after(300_005), 4);
        assert_eq!(index.largest_decoded(), 300_000);
    }

    #[test]
    fn the_walk_stops_at_a_frame_without_a_size() {
        let (p, q) = (data(70_000, 5), data(90_000, 6));
        let (fp, fq) = (sized(&p), without_size(&q));
        let stream = [fp.clone(), fq, sized(&p)].concat();
        let (index, _) = walk_bytes(&stream, 230_000, 1 << 16);
        let a = fp.len() as u64;
        assert_eq!(
            spans(&index),
            [(0..a, 0..70_000), (a..stream.len() as u64, 70_000..230_000)]
        );
        // Garbage where a frame should start, or a stream too short for a header: the same.
        let junk = [fp.clone(), vec![1, 2, 3, 4, 5, 6, 7, 8, 9]].concat();
        let (index, _) = walk_bytes(&junk, 80_000, 1 << 16);
        assert_eq!(
            spans(&index),
            [(0..a, 0..70_000), (a..a + 9, 70_000..80_000)]
        );
        let (index, _) = walk_bytes(&fp[..5], 70_000, 1 << 16);
        assert_eq!(spans(&index), [(0..5, 0..70_000)]);
        // A block running past the end of the stream: placed as the last entry.
        let cut = [fp.clone(), sized(&q)[..100].to_vec(), fp.clone()].concat();
        let (index, _) = walk_bytes(&cut[..a as usize + 100], 250_000, 1 << 16);
        assert_eq!(index.len(), 2);
    }

    #[test]
    fn recorded_sizes_that_cannot_add_up_are_format_errors() {
        let p = data(70_000, 7);
        let f = sized(&p);
        let mut read = |offset: u64, dst: &mut [u8]| {
            let s = [f.clone(), f.clone()].concat();
            dst.copy_from_slice(&s[offset as usize..offset as usize + dst.len()]);
            Ok(())
        };
        let two = 2 * f.len() as u64;
        // Two frames of 70,000 bytes, every frame placed, for a component of 150,000.
        let e = walk(&mut read, two, 150_000, 1 << 16).unwrap_err();
        assert_eq!(
            (e.kind(), e.message()),
            (
                crate::error::ErrorKind::Format,
                "the zstd frames record 140000 decoded bytes in all, but the component has 150000"
            )
        );
        // The second frame records more than is left.
        let e = walk(&mut read, two, 100_000, 1 << 16).unwrap_err();
        assert_eq!(
            e.message(),
            format!(
                "the zstd frame at stored byte {} records 70000 decoded bytes, but only 30000 \
                 of the component's 100000 are left",
                f.len()
            )
        );
        // Exactly right: the last frame is not walked.
        assert_eq!(walk(&mut read, two, 140_000, 1 << 16).unwrap().len(), 2);
    }

    #[test]
    fn the_builder_merges_entries_past_its_bound() {
        let mut b = IndexBuilder::new(4, true);
        for i in 0..9u64 {
            b.push(i * 10, i * 100, Some(i as u32));
        }
        let index = b.finish(90, 900, true);
        assert_eq!(index.frames_per_entry(), 4);
        assert_eq!(
            spans(&index),
            [(0..40, 0..400), (40..80, 400..800), (80..90, 800..900)]
        );
        assert_eq!(index.checksum(0), None);
        let mut b = IndexBuilder::new(4, true);
        for i in 0..4u64 {
            b.push(i * 10, i * 100, Some(i as u32 + 7));
        }
        let index = b.finish(40, 400, true);
        assert_eq!((index.frames_per_entry(), index.checksum(3)), (1, Some(10)));
    }
}
