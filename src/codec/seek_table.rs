//! zstd's seekable format (`contrib/seekable_format` in the zstd sources): a skippable frame
//! at the very end of a stream that lists each frame's compressed and decompressed size,
//! so a reader finds any frame from the stream's last bytes. Every zstd decoder skips
//! skippable frames, so a stream with a table still decodes as before.
//!
//! Layout (all little-endian): skippable magic `0x184D2A5E`, frame size (u32: the bytes
//! after these 8), one entry per frame (compressed size u32, decompressed size u32, and a
//! u32 checksum when the descriptor's top bit is set), then the 9-byte footer: frame count
//! (u32), descriptor (u8), seekable magic `0x8F92EAB1`.

use super::index::{FrameIndex, IndexBuilder, ReadAt};
use crate::error::{Result, bail};

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
/// or decompressed sizes that don't add up to `total`. Reads the table in 64 KiB pieces
/// and keeps at most `max_entries` entries (see `IndexBuilder`), whatever the count says.
pub(crate) fn read(
    read: &mut ReadAt<'_>,
    stored: u64,
    total: u64,
    max_entries: usize,
) -> Result<Option<FrameIndex>> {
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
    let mut builder = IndexBuilder::new(max_entries, checksums);
    let (mut compressed, mut decompressed) = (0u64, 0u64);
    let mut buf = vec![0u8; READ_CHUNK.min((count * entry_len) as usize)];
    let per_read = (buf.len() as u64 / entry_len).max(1);
    let mut frame = 0u64;
    while frame < count {
        let n = per_read.min(count - frame);
        let bytes = &mut buf[..(n * entry_len) as usize];
        read(start + HEADER_LEN + frame * entry_len, bytes)?;
        for entry in bytes.chunks_exact(entry_len as usize) {
            let (c, d) = (u64::from(le32(entry)), u64::from(le32(&entry[4..])));
            if c == 0 {
                bail!(
                    Format,
                    "zstd seek table: frame {frame} has a compressed size of 0"
                );
            }
            let checksum = checksums.then(|| le32(&entry[8..]));
            builder.push(compressed, decompressed, checksum);
            compressed += c;
            decompressed += d;
            frame += 1;
        }
    }
    if compressed != start {
        bail!(
            Format,
            "zstd seek table: its {count} frames take {compressed} bytes, but {start} bytes \
             precede the table"
        );
    }
    if decompressed != total {
        bail!(
            Format,
            "zstd seek table: its {count} frames decode to {decompressed} bytes, but the \
             component has {total}"
        );
    }
    Ok(Some(builder.finish(start, total, true)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn reader(bytes: &[u8]) -> impl FnMut(u64, &mut [u8]) -> Result<()> + '_ {
        move |offset, dst| {
            let at = offset as usize;
            dst.copy_from_slice(&bytes[at..at + dst.len()]);
            Ok(())
        }
    }

    fn parse(stream: &[u8], total: u64) -> Result<Option<FrameIndex>> {
        read(&mut reader(stream), stream.len() as u64, total, 1 << 16)
    }

    /// A stream of `frames` fake frames (their bytes are never decoded here) and its table.
    fn stream(frames: &[(u32, u32)]) -> Vec<u8> {
        let mut s: Vec<u8> = frames
            .iter()
            .flat_map(|&(c, _)| vec![0xAA; c as usize])
            .collect();
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

    #[test]
    fn a_true_table_gives_every_frame() {
        let s = stream(&[(10, 100), (7, 50), (3, 0)]);
        let index = parse(&s, 150).unwrap().unwrap();
        assert!(index.has_seek_table());
        let spans: Vec<_> = index.iter().map(|f| (f.stored, f.decoded)).collect();
        assert_eq!(
            spans,
            [(0..10, 0..100), (10..17, 100..150), (17..20, 150..150)]
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
        let good = stream(&[(10, 100), (7, 50)]);
        let n = good.len();
        // Decompressed sizes that don't add up to the component.
        assert_eq!(
            refused(&good, 151),
            "zstd seek table: its 2 frames decode to 150 bytes, but the component has 151"
        );
        // Compressed sizes that don't add up to the bytes before the table.
        let mut s = good.clone();
        s[8 + 17] = 11; // frame 0 compressed 11
        assert_eq!(
            refused(&s, 150),
            "zstd seek table: its 2 frames take 18 bytes, but 17 bytes precede the table"
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
        s[17 + 4] = 26; // the frame size field
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

    #[test]
    fn checksummed_tables_keep_their_checksums() {
        let mut s = vec![0xAA; 17];
        s.extend_from_slice(&TABLE_FRAME_MAGIC.to_le_bytes());
        s.extend_from_slice(&(2u32 * 12 + 9).to_le_bytes());
        for (c, d, x) in [(10u32, 100u32, 0xDEAD_BEEFu32), (7, 50, 7)] {
            for v in [c, d, x] {
                s.extend_from_slice(&v.to_le_bytes());
            }
        }
        s.extend_from_slice(&2u32.to_le_bytes());
        s.push(CHECKSUM_FLAG);
        s.extend_from_slice(&SEEKABLE_MAGIC.to_le_bytes());
        let index = parse(&s, 150).unwrap().unwrap();
        assert_eq!(index.checksum(0), Some(0xDEAD_BEEF));
        assert_eq!(index.checksum(1), Some(7));
        assert_eq!(index.get(1).unwrap().decoded, 100..150);
    }
}
