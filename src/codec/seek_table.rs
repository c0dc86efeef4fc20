//! zstd's seekable format (`contrib/seekable_format` in the zstd sources): a skippable frame
//! at the very end of a stream that lists each frame's compressed and decompressed size,
//! so a reader finds any frame from the stream's last bytes. Every zstd decoder skips
//! skippable frames, so a stream with a table still decodes as before.
//!
//! Layout (all little-endian): skippable magic `0x184D2A5E`, frame size (u32: the bytes
//! after these 8), one entry per frame (compressed size u32, decompressed size u32, and a
//! u32 checksum when the descriptor's top bit is set), then the 9-byte footer: frame count
//! (u32), descriptor (u8), seekable magic `0x8F92EAB1`.

use super::frame_index::{
    FrameHead, FrameIndex, IndexBuilder, MAX_FRAME_HEADER, ReadAt, ReadMany, frame_head,
};
use crate::error::{Error, Result, bail, err};

/// The last four bytes of a stream with a seek table.
const SEEKABLE_MAGIC: u32 = 0x8F92_EAB1;
/// The skippable-frame magic the table frame starts with.
const TABLE_FRAME_MAGIC: u32 = 0x184D_2A5E;
/// Frame count, descriptor, seekable magic.
const FOOTER_LEN: u64 = 9;
/// Skippable magic and frame size.
const HEADER_LEN: u64 = 8;
/// Descriptor bit 7: each entry carries the low 32 bits of the XXH64 of its frame's
/// decoded bytes.
const CHECKSUM_FLAG: u8 = 0x80;
/// Descriptor bits 6-2: reserved for incompatible changes; must be 0.
const RESERVED_BITS: u8 = 0x7C;
/// Table bytes read at a time while parsing.
const READ_CHUNK: usize = 64 << 10;

/// The seek table of frames of (compressed, decompressed) sizes, without checksums; None
/// when the counts don't fit the format's 32-bit fields (the table is optional).
pub(crate) fn encode(frames: &[(u32, u32)]) -> Option<Vec<u8>> {
    let count = u32::try_from(frames.len()).ok()?;
    let size = u32::try_from(frames.len() as u64 * 8 + FOOTER_LEN).ok()?;
    let mut out = Vec::with_capacity(HEADER_LEN as usize + size as usize);
    out.extend_from_slice(&TABLE_FRAME_MAGIC.to_le_bytes());
    out.extend_from_slice(&size.to_le_bytes());
    for &(compressed, decompressed) in frames {
        out.extend_from_slice(&compressed.to_le_bytes());
        out.extend_from_slice(&decompressed.to_le_bytes());
    }
    out.extend_from_slice(&count.to_le_bytes());
    out.push(0);
    out.extend_from_slice(&SEEKABLE_MAGIC.to_le_bytes());
    Some(out)
}

fn le32(b: &[u8]) -> u32 {
    u32::from_le_bytes(b[..4].try_into().expect("4 bytes"))
}

/// Reads the seek table at the end of a `stored`-byte zstd stream that decodes to `total`
/// bytes (`read` reads the stream at an offset): None when the stream does not end with
/// one. A table that claims to be one but disagrees with itself or with the stream is a
/// `Format` error: a count or size that runs past the stream, reserved descriptor bits,
/// a zero-sized frame, compressed sizes that don't add up to the bytes before the table,
/// decompressed sizes that don't add up to `total`, or a frame whose own header
/// disagrees with its entry (see `check_heads`; `heads` reads the first bytes of many
/// frames at once). From the first frame whose header does not state its decoded size,
/// the table's sizes can't be checked without decoding: that frame and everything after
/// it become the index's last entry, decoded from its start (as a walk of the headers
/// would make it), so a table never places bytes that the frames don't hold. Reads the
/// table in 64 KiB pieces and keeps at most `max_entries` entries (see `IndexBuilder`),
/// whatever the count says.
pub(crate) fn read(
    read: &mut ReadAt<'_>,
    heads: &mut ReadMany<'_>,
    stored: u64,
    total: u64,
    max_entries: usize,
) -> Result<Option<FrameIndex>> {
    let Some(Table {
        start,
        count,
        checksums,
    }) = table(read, stored)?
    else {
        return Ok(None);
    };
    let entry_len: u64 = if checksums { 12 } else { 8 };
    let mut builder = IndexBuilder::new(max_entries, checksums);
    let mut frames = Frames {
        compressed: 0,
        decompressed: 0,
        table_start: start,
        lie: None,
        first_unsized: None,
        entries: Vec::new(),
    };
    let mut buf = vec![0u8; READ_CHUNK.min((count * entry_len) as usize)];
    let per_read = (buf.len() as u64 / entry_len).max(1);
    let mut frame = 0u64;
    while frame < count {
        let n = per_read.min(count - frame);
        let bytes = &mut buf[..(n * entry_len) as usize];
        read(start + HEADER_LEN + frame * entry_len, bytes)?;
        frames.entries.clear();
        for entry in bytes.chunks_exact(entry_len as usize) {
            let (c, d) = (u64::from(le32(entry)), u64::from(le32(&entry[4..])));
            if c == 0 {
                bail!(
                    Format,
                    "zstd seek table: frame {frame} has a compressed size of 0"
                );
            }
            let checksum = checksums.then(|| le32(&entry[8..]));
            builder.push(frames.compressed, frames.decompressed, checksum);
            frames.entries.push((frame, frames.compressed, c, d));
            frames.compressed += c;
            frames.decompressed += d;
            frame += 1;
        }
        frames.check_heads(heads)?;
    }
    if frames.compressed != start {
        bail!(
            Format,
            "zstd seek table: its {count} frames take {} bytes, but {start} bytes \
             precede the table",
            frames.compressed
        );
    }
    if frames.decompressed != total {
        bail!(
            Format,
            "zstd seek table: its {count} frames decode to {} bytes, but the \
             component has {total}",
            frames.decompressed
        );
    }
    if let Some(e) = frames.lie {
        return Err(e);
    }
    let frames_per_entry = builder.frames_per_entry();
    let mut index = builder.finish(start, total, true);
    if let Some(k) = frames.first_unsized {
        index.end_at((k / frames_per_entry) as usize);
    }
    Ok(Some(index))
}

/// Where a seek table starts in a stream, how many frames it lists, and whether its
/// entries carry checksums.
struct Table {
    start: u64,
    count: u64,
    checksums: bool,
}

/// The seek table at the end of a stream of `stored` bytes, from its footer and its
/// frame's header: None when the stream does not end with one, `Format` when the two
/// disagree or the table can't fit.
fn table(read: &mut ReadAt<'_>, stored: u64) -> Result<Option<Table>> {
    if stored < HEADER_LEN + FOOTER_LEN {
        return Ok(None);
    }
    let mut footer = [0u8; FOOTER_LEN as usize];
    read(stored - FOOTER_LEN, &mut footer)?;
    if le32(&footer[5..]) != SEEKABLE_MAGIC {
        return Ok(None);
    }
    let count = u64::from(le32(&footer));
    let descriptor = footer[4];
    if descriptor & RESERVED_BITS != 0 {
        bail!(
            Format,
            "zstd seek table: descriptor 0x{descriptor:02x} sets reserved bits"
        );
    }
    let checksums = descriptor & CHECKSUM_FLAG != 0;
    let entry_len: u64 = if checksums { 12 } else { 8 };
    let table_len = HEADER_LEN + count * entry_len + FOOTER_LEN;
    if table_len > stored {
        bail!(
            Format,
            "zstd seek table: {count} frames need a {table_len}-byte table, but the stream \
             has {stored} bytes"
        );
    }
    let start = stored - table_len;
    let mut header = [0u8; HEADER_LEN as usize];
    read(start, &mut header)?;
    let (magic, size) = (le32(&header), u64::from(le32(&header[4..])));
    if magic != TABLE_FRAME_MAGIC || size != table_len - HEADER_LEN {
        bail!(
            Format,
            "zstd seek table: {count} frames, but the table frame at byte {start} has magic \
             0x{magic:08x} and size {size} (expected 0x{TABLE_FRAME_MAGIC:08x} and {})",
            table_len - HEADER_LEN
        );
    }
    Ok(Some(Table {
        start,
        count,
        checksums,
    }))
}

/// The frames of a table being read, checked against their own headers piece by piece.
struct Frames {
    /// Sums of the sizes so far.
    compressed: u64,
    decompressed: u64,
    table_start: u64,
    /// The first disagreement found (reported after the sums, which say more).
    lie: Option<Error>,
    /// The first frame whose header states no decoded size.
    first_unsized: Option<u64>,
    /// (frame, stored offset, compressed, decompressed) of the piece being read.
    entries: Vec<(u64, u64, u64, u64)>,
}

impl Frames {
    /// Reads the header of each frame of the piece (up to the first frame that states no
    /// decoded size, and not past the table's start, which the sums then report) and
    /// compares it with the frame's entry: a frame that states its decoded size must state
    /// the entry's, a skippable frame must decode to nothing and take exactly the entry's
    /// bytes, and anything else at an entry's offset is no frame.
    fn check_heads(&mut self, heads: &mut ReadMany<'_>) -> Result<()> {
        if self.lie.is_some() || self.first_unsized.is_some() {
            return Ok(());
        }
        let wanted: Vec<(u64, usize)> = self
            .entries
            .iter()
            .map(|&(_, at, c, _)| (at, c.min(MAX_FRAME_HEADER as u64) as usize))
            .take_while(|&(at, len)| at + len as u64 <= self.table_start)
            .collect();
        let mut bytes = vec![0u8; wanted.iter().map(|w| w.1).sum()];
        heads(&wanted, &mut bytes)?;
        let mut pos = 0;
        for (&(frame, at, c, d), &(_, len)) in self.entries.iter().zip(&wanted) {
            let head = frame_head(&bytes[pos..pos + len]);
            pos += len;
            let said = match head {
                FrameHead::Zstd {
                    content_size: None, ..
                } => {
                    self.first_unsized = Some(frame);
                    return Ok(());
                }
                FrameHead::Zstd {
                    content_size: Some(n),
                    ..
                } if n == d => continue,
                FrameHead::Skippable(n) if d == 0 && n == c => continue,
                FrameHead::Zstd {
                    content_size: Some(n),
                    ..
                } => format!("its header says it decodes to {n} bytes"),
                FrameHead::Skippable(n) => format!("it is a skippable frame of {n} bytes"),
                FrameHead::Unknown => "no zstd frame starts there".to_owned(),
            };
            self.lie = Some(err!(
                Format,
                "zstd seek table: frame {frame} (stored bytes {at}..{}) decodes to {d} bytes \
                 per the table, but {said}",
                at + c
            ));
            return Ok(());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn parse(stream: &[u8], total: u64) -> Result<Option<FrameIndex>> {
        let mut read = |offset: u64, dst: &mut [u8]| {
            let at = offset as usize;
            dst.copy_from_slice(&stream[at..at + dst.len()]);
            Ok(())
        };
        let mut heads = |pieces: &[(u64, usize)], out: &mut [u8]| {
            let mut at = 0;
            for &(offset, len) in pieces {
                out[at..at + len].copy_from_slice(&stream[offset as usize..offset as usize + len]);
                at += len;
            }
            Ok(())
        };
        read_table(&mut read, &mut heads, stream.len() as u64, total)
    }

    fn read_table(
        read: &mut ReadAt<'_>,
        heads: &mut ReadMany<'_>,
        stored: u64,
        total: u64,
    ) -> Result<Option<FrameIndex>> {
        super::read(read, heads, stored, total, 1 << 16)
    }

    /// A fake frame of `c` bytes (never decoded here) whose header states `d` decoded
    /// bytes: magic, a single-segment descriptor with a 4-byte content size, the size.
    fn fake(c: u32, d: u32) -> Vec<u8> {
        let mut f = if c >= 9 {
            [&0xFD2F_B528u32.to_le_bytes()[..], &[0xA0], &d.to_le_bytes()].concat()
        } else {
            Vec::new()
        };
        f.resize(c as usize, 0xAA);
        f
    }

    /// A fake frame of `c` bytes whose header states no decoded size (as the reference
    /// writer's): magic, descriptor 0, a window byte.
    fn unsized_fake(c: u32) -> Vec<u8> {
        let mut f = [&0xFD2F_B528u32.to_le_bytes()[..], &[0, 0x58]].concat();
        f.resize(c as usize, 0xAA);
        f
    }

    /// A stream of fake frames of these sizes and its table.
    fn stream(frames: &[(u32, u32)]) -> Vec<u8> {
        let mut s: Vec<u8> = frames.iter().flat_map(|&(c, d)| fake(c, d)).collect();
        s.extend_from_slice(&encode(frames).unwrap());
        s
    }

    #[test]
    fn the_table_has_the_layout_of_the_seekable_format() {
        let t = encode(&[(0x0102, 0x0304), (5, 6)]).unwrap();
        let want: Vec<u8> = [
            &[0x5E, 0x2A, 0x4D, 0x18][..],
            &[25, 0, 0, 0],
            &[0x02, 0x01, 0, 0, 0x04, 0x03, 0, 0],
            &[5, 0, 0, 0, 6, 0, 0, 0],
            &[2, 0, 0, 0, 0],
            &[0xB1, 0xEA, 0x92, 0x8F],
        ]
        .concat();
        assert_eq!(t, want);
    }

    fn spans(index: &FrameIndex) -> Vec<(std::ops::Range<u64>, std::ops::Range<u64>)> {
        index.iter().map(|f| (f.stored, f.decoded)).collect()
    }

    #[test]
    fn a_true_table_gives_every_frame() {
        let s = stream(&[(10, 100), (9, 50), (9, 0)]);
        let index = parse(&s, 150).unwrap().unwrap();
        assert!(index.has_seek_table());
        assert_eq!(
            spans(&index),
            [(0..10, 0..100), (10..19, 100..150), (19..28, 150..150)]
        );
        // No table: the last bytes are no seekable magic.
        assert_eq!(parse(&[0u8; 40], 5).unwrap(), None);
        assert_eq!(parse(&[0u8; 3], 5).unwrap(), None);
    }

    fn refused(s: &[u8], total: u64) -> String {
        let e = parse(s, total).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format, "{e}");
        e.message().to_owned()
    }

    #[test]
    fn tables_that_lie_are_format_errors() {
        let good = stream(&[(10, 100), (9, 50)]);
        let n = good.len();
        // Decompressed sizes that don't add up to the component.
        assert_eq!(
            refused(&good, 151),
            "zstd seek table: its 2 frames decode to 150 bytes, but the component has 151"
        );
        // Compressed sizes that don't add up to the bytes before the table.
        let mut s = good.clone();
        s[8 + 19] = 11; // frame 0 compressed 11
        assert_eq!(
            refused(&s, 150),
            "zstd seek table: its 2 frames take 20 bytes, but 19 bytes precede the table"
        );
        // A count whose table runs past the start of the stream.
        let mut s = good.clone();
        s[n - 9..n - 5].copy_from_slice(&u32::MAX.to_le_bytes());
        assert_eq!(
            refused(&s, 150),
            format!(
                "zstd seek table: 4294967295 frames need a 34359738377-byte table, but the \
                 stream has {n} bytes"
            )
        );
        // A count that fits but disagrees with the table frame's own size.
        let mut s = good.clone();
        s[n - 9] = 1;
        assert!(
            refused(&s, 150)
                .ends_with("has magic 0x0000000a and size 100 (expected 0x184d2a5e and 17)")
        );
        let mut s = good.clone();
        s[19 + 4] = 26; // the frame size field
        assert!(refused(&s, 150).contains("size 26 (expected 0x184d2a5e and 25)"));
        // Reserved descriptor bits.
        let mut s = good.clone();
        s[n - 5] = 0x04;
        assert_eq!(
            refused(&s, 150),
            "zstd seek table: descriptor 0x04 sets reserved bits"
        );
        // A zero compressed size.
        let s = stream(&[(0, 0), (17, 150)]);
        assert_eq!(
            refused(&s, 150),
            "zstd seek table: frame 0 has a compressed size of 0"
        );
        // The unused bits (1-0) are ignored, as the format asks.
        let mut s = good.clone();
        s[n - 5] = 0x03;
        assert_eq!(parse(&s, 150).unwrap().unwrap().len(), 2);
    }

    /// The table and the frames' own headers: decoded sizes that add up but are not the
    /// frames' are refused, naming the frame, whatever range would be read.
    #[test]
    fn entries_that_disagree_with_their_frames_are_format_errors() {
        // Frames of 100, 50 and 30 bytes; the table says 0, 0 and 180 (the sums agree).
        let frames = [fake(10, 100), fake(9, 50), fake(12, 30)].concat();
        let lying = [&frames[..], &encode(&[(10, 0), (9, 0), (12, 180)]).unwrap()].concat();
        assert_eq!(
            refused(&lying, 180),
            "zstd seek table: frame 0 (stored bytes 0..10) decodes to 0 bytes per the table, \
             but its header says it decodes to 100 bytes"
        );
        // A shift past the frame read: 100, 60, 20 for 100, 50, 30.
        let shifted = [
            &frames[..],
            &encode(&[(10, 100), (9, 60), (12, 20)]).unwrap(),
        ]
        .concat();
        assert_eq!(
            refused(&shifted, 180),
            "zstd seek table: frame 1 (stored bytes 10..19) decodes to 60 bytes per the \
             table, but its header says it decodes to 50 bytes"
        );
        // Compressed sizes that put a frame where none starts.
        let moved = [
            &frames[..],
            &encode(&[(11, 100), (8, 50), (12, 30)]).unwrap(),
        ]
        .concat();
        assert!(
            refused(&moved, 180)
                .ends_with("frame 1 (stored bytes 11..19) decodes to 50 bytes per the table, but no zstd frame starts there"),
            "{}",
            refused(&moved, 180)
        );
        // A skippable frame listed as one: it decodes to nothing and takes its own bytes.
        let skip = [0x50, 0x2A, 0x4D, 0x18, 2, 0, 0, 0, 7, 7];
        let with_skip = [&fake(10, 100)[..], &skip, &fake(9, 50)].concat();
        let ok = [
            &with_skip[..],
            &encode(&[(10, 100), (10, 0), (9, 50)]).unwrap(),
        ]
        .concat();
        assert_eq!(parse(&ok, 150).unwrap().unwrap().len(), 3);
        let bad = [
            &with_skip[..],
            &encode(&[(10, 100), (10, 5), (9, 45)]).unwrap(),
        ]
        .concat();
        assert!(refused(&bad, 150).ends_with("but it is a skippable frame of 10 bytes"));
        // A frame of fewer bytes than its header.
        let short = [&fake(10, 100)[..], &[0x28, 0xB5, 0x2F]].concat();
        let short = [&short[..], &encode(&[(10, 100), (3, 0)]).unwrap()].concat();
        assert!(refused(&short, 100).ends_with("no zstd frame starts there"));
    }

    /// Frames whose headers don't state their decoded size can't be checked against the
    /// table without decoding them: from the first one on, the index has one last entry,
    /// decoded from its start, whatever the table says about them.
    #[test]
    fn from_a_frame_without_a_stated_size_the_rest_is_one_entry() {
        let frames = [
            fake(10, 100),
            unsized_fake(9),
            fake(12, 30),
            unsized_fake(7),
        ]
        .concat();
        for table in [
            [(10, 100), (9, 50), (12, 30), (7, 20)],
            // The same frames, the table lying about the ones after the first unsized.
            [(10, 100), (9, 0), (12, 0), (7, 100)],
        ] {
            let s = [&frames[..], &encode(&table).unwrap()].concat();
            let index = parse(&s, 200).unwrap().unwrap();
            assert!(index.has_seek_table());
            assert_eq!(spans(&index), [(0..10, 0..100), (10..38, 100..200)]);
        }
        // The first frame unsized: one entry.
        let s = [
            &unsized_fake(9)[..],
            &fake(10, 5),
            &encode(&[(9, 1), (10, 5)]).unwrap(),
        ]
        .concat();
        assert_eq!(spans(&parse(&s, 6).unwrap().unwrap()), [(0..19, 0..6)]);
    }

    #[test]
    fn checksummed_tables_keep_their_checksums() {
        let mut s = [fake(10, 100), fake(9, 50), unsized_fake(9)].concat();
        s.extend_from_slice(&TABLE_FRAME_MAGIC.to_le_bytes());
        s.extend_from_slice(&(3u32 * 12 + 9).to_le_bytes());
        for (c, d, x) in [(10u32, 100u32, 0xDEAD_BEEFu32), (9, 50, 7), (9, 5, 9)] {
            for v in [c, d, x] {
                s.extend_from_slice(&v.to_le_bytes());
            }
        }
        s.extend_from_slice(&3u32.to_le_bytes());
        s.push(CHECKSUM_FLAG);
        s.extend_from_slice(&SEEKABLE_MAGIC.to_le_bytes());
        let index = parse(&s, 155).unwrap().unwrap();
        assert_eq!(index.checksum(0), Some(0xDEAD_BEEF));
        assert_eq!(index.checksum(1), Some(7));
        assert_eq!(index.get(1).unwrap().decoded, 100..150);
        // The unsized frame's entry: last, without the checksum of one frame.
        assert_eq!(index.checksum(2), None);
        assert_eq!(index.get(2).unwrap().decoded, 150..155);
    }

    /// Headers are read in pieces of the table (one call per 64 KiB of entries), never
    /// past the table's start, and not after the first frame without a stated size.
    #[test]
    fn headers_are_read_in_pieces() {
        let n = 10_000u32;
        let frames: Vec<u8> = (0..n).flat_map(|_| fake(9, 3)).collect();
        let sizes: Vec<(u32, u32)> = (0..n).map(|_| (9, 3)).collect();
        let s = [&frames[..], &encode(&sizes).unwrap()].concat();
        let mut read = |offset: u64, dst: &mut [u8]| {
            dst.copy_from_slice(&s[offset as usize..offset as usize + dst.len()]);
            Ok(())
        };
        let mut calls = Vec::new();
        let mut heads = |pieces: &[(u64, usize)], out: &mut [u8]| {
            calls.push(pieces.len());
            let mut at = 0;
            for &(offset, len) in pieces {
                assert!(offset + len as u64 <= 9 * u64::from(n));
                out[at..at + len].copy_from_slice(&s[offset as usize..offset as usize + len]);
                at += len;
            }
            Ok(())
        };
        let index = read_table(&mut read, &mut heads, s.len() as u64, 3 * u64::from(n))
            .unwrap()
            .unwrap();
        assert_eq!(index.len(), n as usize);
        assert_eq!(calls, [8192, 1808]);
    }
}
