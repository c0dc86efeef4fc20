//! Reading a component front to back in bounded pieces.

use ztensor::{Reader, Result, ZSTD_FRAME_SIZE};

/// Decoded bytes per piece: one zstd frame as this library writes them, so each range
/// read decodes exactly one frame. A multiple of every element size.
pub const PIECE: usize = ZSTD_FRAME_SIZE;

/// Hands `sink` the decoded bytes of a component in order, in pieces of at most `PIECE`
/// bytes. Memory: one piece when range reads are cheap (raw components, zstd written as
/// independent frames); otherwise the component is decoded whole once (what the library
/// needs for such streams anyway) and handed out from memory.
pub fn for_each_piece(
    reader: &Reader<'_>,
    object: usize,
    component: usize,
    mut sink: impl FnMut(&[u8]) -> Result<()>,
) -> Result<()> {
    let length = reader.objects()[object].components()[component].decoded_length();
    if length == 0 {
        // Nothing to hand out, but an encoded empty component is still decoded (checked).
        return reader.read_into(object, component, &mut []);
    }
    if reader.range_reads_are_cheap(object, component)? {
        let mut buf = vec![0u8; PIECE.min(usize::try_from(length).unwrap_or(PIECE))];
        let mut offset = 0u64;
        while offset < length {
            let n = (length - offset).min(buf.len() as u64) as usize;
            reader.read_range(object, component, offset, &mut buf[..n])?;
            sink(&buf[..n])?;
            offset += n as u64;
        }
        Ok(())
    } else {
        let all = reader.read_to_vec(object, component)?;
        all.chunks(PIECE).try_for_each(sink)
    }
}
