//! Streaming zstd decoding: the stored bytes arrive in pieces and the decoded bytes leave in
//! pieces, so memory is one input piece, one output piece and the decoder's window, however
//! large the stream; and the caller can stop as soon as it has what it needs. For streams
//! whose frames can't be placed without decoding (one large frame, as the reference
//! implementation writes), and for handing a component out piece by piece.

use zstd::zstd_safe::{DCtx, DParameter, InBuffer, OutBuffer, get_error_name};

use crate::error::{Result, bail, err};

/// Decoded bytes handed out at a time (zstd's recommended output size, one block).
const OUT_PIECE: usize = 128 << 10;

/// Stored bytes in order, in pieces.
pub(crate) trait Chunks {
    /// The next piece; empty at the end.
    fn next_chunk(&mut self) -> Result<&[u8]>;
}

/// The largest window the streaming decoder accepts for a stream that decodes to `len`
/// bytes: the smallest power of two holding `len` (at least 1 KiB). A frame can't refer
/// back further than the bytes it decodes, so a larger window only makes the decoder
/// allocate more (a 64-byte frame may declare a 2 GiB window); such frames are refused
/// here, and the caller decodes them one-shot instead, into exactly `len` bytes.
pub(crate) fn window_log_for(len: u64) -> u32 {
    (u64::BITS - len.saturating_sub(1).leading_zeros()).clamp(10, 31)
}

/// Decodes the zstd stream `input` hands out and passes the decoded bytes to `sink` in
/// order, in pieces of at most 128 KiB, until `sink` returns false (then it returns at
/// once) or the input ends. Returns the number of decoded bytes handed to `sink`. Memory:
/// one output piece and the decoder's window, which is at most `1 << window_log_max`
/// (frames asking for more are refused). Corrupt data, a frame whose window is too large,
/// or input that ends inside a frame, is a `Format` error. libzstd's streaming decoder is
/// stricter than its one-shot decoder (it refuses blocks larger than the window, which the
/// one-shot decoder tolerates), so a caller that must accept what one-shot reads accept
/// retries a `Format` failure one-shot.
pub(crate) fn decode_stream(
    input: &mut dyn Chunks,
    window_log_max: u32,
    sink: &mut dyn FnMut(&[u8]) -> Result<bool>,
) -> Result<u64> {
    let mut dctx = DCtx::try_create().ok_or_else(|| err!(Limit, "no memory for a zstd context"))?;
    dctx.set_parameter(DParameter::WindowLogMax(window_log_max))
        .map_err(|code| err!(Internal, "zstd window limit: {}", get_error_name(code)))?;
    let mut out = vec![0u8; OUT_PIECE];
    let (mut given, mut frame_done) = (0u64, true);
    loop {
        let chunk = input.next_chunk()?;
        if chunk.is_empty() {
            break;
        }
        let mut inb = InBuffer::around(chunk);
        loop {
            let mut outb = OutBuffer::around(&mut out[..]);
            let hint = dctx
                .decompress_stream(&mut outb, &mut inb)
                .map_err(|code| err!(Format, "corrupt zstd data: {}", get_error_name(code)))?;
            frame_done = hint == 0;
            let n = outb.pos();
            if n > 0 {
                given += n as u64;
                if !sink(&out[..n])? {
                    return Ok(given);
                }
            }
            // Input used up and the output not full: the decoder holds nothing more.
            if inb.pos() == chunk.len() && n < OUT_PIECE {
                break;
            }
        }
    }
    if !frame_done {
        bail!(Format, "zstd data ends in the middle of a frame");
    }
    Ok(given)
}

/// `Chunks` over bytes in memory, in pieces of `piece` bytes.
#[cfg(test)]
pub(crate) struct SliceChunks<'a> {
    pub(crate) rest: &'a [u8],
    pub(crate) piece: usize,
}

#[cfg(test)]
impl Chunks for SliceChunks<'_> {
    fn next_chunk(&mut self) -> Result<&[u8]> {
        let n = self.piece.min(self.rest.len());
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn collect(stream: &[u8], piece: usize, stop_after: u64) -> Result<(Vec<u8>, u64)> {
        let mut got = Vec::new();
        let mut input = SliceChunks {
            rest: stream,
            piece,
        };
        let n = decode_stream(&mut input, window_log_for(2_000_000), &mut |b| {
            got.extend_from_slice(b);
            Ok((got.len() as u64) < stop_after)
        })?;
        Ok((got, n))
    }

    #[test]
    fn streams_decode_in_pieces_and_stop_when_asked() {
        let data: Vec<u8> = (0..1_000_000u32).map(|i| (i % 251) as u8).collect();
        let one = zstd::stream::encode_all(&data[..], 3).unwrap();
        let two = [one.clone(), one.clone()].concat();
        for piece in [1, 1000, 1 << 20] {
            let (got, n) = collect(&two, piece, u64::MAX).unwrap();
            assert_eq!(n, 2_000_000);
            assert!(got[..1_000_000] == data[..] && got[1_000_000..] == data[..]);
        }
        // Stopping early hands out one piece past the point, no more.
        let (got, n) = collect(&one, 4096, 10).unwrap();
        assert_eq!(n, got.len() as u64);
        assert!(n <= OUT_PIECE as u64 && got[..] == data[..got.len()]);
        // Truncated: refused; corrupt: refused.
        let e = collect(&one[..one.len() - 1], 4096, u64::MAX).unwrap_err();
        assert_eq!(
            (e.kind(), e.message()),
            (ErrorKind::Format, "zstd data ends in the middle of a frame")
        );
        let mut bad = one.clone();
        bad[4] = 0xFF;
        let e = collect(&bad, 4096, u64::MAX).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format);
        assert!(e.message().starts_with("corrupt zstd data: "), "{e}");
        // Nothing at all is an empty stream.
        assert_eq!(collect(&[], 10, u64::MAX).unwrap().1, 0);
    }

    #[test]
    fn the_window_limit_follows_the_decoded_size() {
        assert_eq!(window_log_for(0), 10);
        assert_eq!(window_log_for(1024), 10);
        assert_eq!(window_log_for(1025), 11);
        assert_eq!(window_log_for(4 << 20), 22);
        assert_eq!(window_log_for((4 << 20) + 1), 23);
        assert_eq!(window_log_for(u64::MAX), 31);
        // A frame asking for a larger window than the limit is refused, not allocated.
        let data = vec![5u8; 100_000];
        let mut e = zstd::stream::Encoder::new(Vec::new(), 3).unwrap();
        e.window_log(24).unwrap();
        e.include_contentsize(false).unwrap();
        std::io::Write::write_all(&mut e, &data).unwrap();
        let z = e.finish().unwrap();
        let mut input = SliceChunks {
            rest: &z,
            piece: 64,
        };
        let e = decode_stream(&mut input, 17, &mut |_| Ok(true)).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Format);
        assert!(e.message().contains("too much memory"), "{e}");
        let mut input = SliceChunks {
            rest: &z,
            piece: 64,
        };
        assert_eq!(
            decode_stream(&mut input, 24, &mut |_| Ok(true)).unwrap(),
            100_000
        );
    }
}
