//! zstd and digests: the byte transformations between stored and decoded bytes.

use sha2::{Digest as _, Sha256};

use crate::error::{Result, bail, err};

/// The digest algorithms this library computes. Values are the C ABI's `zt_digest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum DigestAlgorithm {
    /// No digest.
    None = 0,
    /// SHA-256, written as "sha256:<64 lower-case hex>".
    Sha256 = 1,
    /// CRC-32C (Castagnoli), written as "crc32c:0x<8 upper-case hex>".
    Crc32c = 2,
}

impl DigestAlgorithm {
    /// From the C enum value, range-checked.
    pub fn from_u32(v: u32) -> Option<DigestAlgorithm> {
        match v {
            0 => Some(DigestAlgorithm::None),
            1 => Some(DigestAlgorithm::Sha256),
            2 => Some(DigestAlgorithm::Crc32c),
            _ => None,
        }
    }
}

/// An incremental digest over stored bytes.
pub(crate) enum Hasher {
    None,
    Sha256(Box<Sha256>),
    Crc32c(u32),
}

impl Hasher {
    pub(crate) fn new(algo: DigestAlgorithm) -> Hasher {
        match algo {
            DigestAlgorithm::None => Hasher::None,
            DigestAlgorithm::Sha256 => Hasher::Sha256(Box::new(Sha256::new())),
            DigestAlgorithm::Crc32c => Hasher::Crc32c(0),
        }
    }
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::None => {}
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Crc32c(c) => *c = crc32c::crc32c_append(*c, bytes),
        }
    }
    /// The digest string as the reference writer spells it; None for `None`.
    pub(crate) fn finish(self) -> Option<String> {
        match self {
            Hasher::None => None,
            Hasher::Sha256(h) => Some(format!("sha256:{}", hex_lower(&h.finalize()))),
            Hasher::Crc32c(c) => Some(format!("crc32c:0x{c:08X}")),
        }
    }
}

/// Lower-case hex of bytes.
pub fn hex_lower(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut s = String::with_capacity(bytes.len() * 2);
    for &b in bytes {
        s.push(DIGITS[(b >> 4) as usize] as char);
        s.push(DIGITS[(b & 15) as usize] as char);
    }
    s
}

/// A stored digest, parsed for verification.
pub(crate) enum Expected {
    Sha256(String),
    Crc32c(u32),
}

/// Parses a stored digest string. An algorithm we don't know is `Unsupported`, so it is
/// never counted as verified.
pub(crate) fn parse_digest(digest: &str) -> Result<Expected> {
    let (algo, hex) = digest
        .split_once(':')
        .ok_or_else(|| err!(Format, "malformed digest '{digest}'"))?;
    match algo {
        "sha256" => Ok(Expected::Sha256(hex.to_ascii_lowercase())),
        "crc32c" => {
            let digits = hex
                .strip_prefix("0x")
                .or_else(|| hex.strip_prefix("0X"))
                .unwrap_or(hex);
            u32::from_str_radix(digits, 16)
                .map(Expected::Crc32c)
                .map_err(|_| err!(Format, "malformed digest '{digest}'"))
        }
        other => bail!(
            Unsupported,
            "digest algorithm '{other}' is not supported, so it was not verified"
        ),
    }
}

impl Expected {
    pub(crate) fn hasher(&self) -> Hasher {
        match self {
            Expected::Sha256(_) => Hasher::new(DigestAlgorithm::Sha256),
            Expected::Crc32c(_) => Hasher::new(DigestAlgorithm::Crc32c),
        }
    }
    /// Compares a finished hasher with the expectation.
    pub(crate) fn check(&self, hasher: Hasher) -> Result<()> {
        let ok = match (self, hasher) {
            (Expected::Sha256(want), Hasher::Sha256(h)) => hex_lower(&h.finalize()) == *want,
            (Expected::Crc32c(want), Hasher::Crc32c(got)) => got == *want,
            _ => false,
        };
        if !ok {
            bail!(Checksum, "stored digest does not match the stored bytes");
        }
        Ok(())
    }
}

/// Decodes zstd frames into `dst`, which must come out exactly full.
pub(crate) fn zstd_decode_into(src: &[u8], dst: &mut [u8]) -> Result<()> {
    let mut dctx =
        zstd::bulk::Decompressor::new().map_err(|e| err!(Internal, "zstd context: {e}"))?;
    let expected = dst.len();
    match dctx.decompress_to_buffer(src, dst) {
        Ok(n) if n == expected => Ok(()),
        Ok(n) => bail!(
            Format,
            "zstd data decodes to {n} bytes, the manifest says {expected}"
        ),
        Err(e) if e.to_string().contains("too small") => {
            bail!(
                Format,
                "zstd data decodes to more than the {expected} bytes the manifest says"
            )
        }
        Err(e) => bail!(Format, "corrupt zstd data: {e}"),
    }
}

/// A streaming zstd decoder that hands out decoded bytes in order; used for range reads
/// and for data whose stored bytes are read piecewise.
pub(crate) struct StreamDecoder {
    inner: zstd::stream::raw::Decoder<'static>,
}

impl StreamDecoder {
    pub(crate) fn new() -> Result<StreamDecoder> {
        let inner =
            zstd::stream::raw::Decoder::new().map_err(|e| err!(Internal, "zstd context: {e}"))?;
        Ok(StreamDecoder { inner })
    }
    /// Feeds `input`; returns (input bytes consumed, output bytes written).
    pub(crate) fn run(&mut self, input: &[u8], output: &mut [u8]) -> Result<(usize, usize)> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        let mut inb = InBuffer::around(input);
        let mut outb = OutBuffer::around(output);
        self.inner
            .run(&mut inb, &mut outb)
            .map_err(|e| err!(Format, "corrupt zstd data: {e}"))?;
        Ok((inb.pos(), outb.pos()))
    }
}

/// zstd-compresses `data` at `level` (0 = library default).
#[cfg(test)]
pub(crate) fn zstd_compress(data: &[u8], level: i32) -> Result<Vec<u8>> {
    zstd::bulk::compress(data, level).map_err(|e| err!(Internal, "zstd compression: {e}"))
}

/// A streaming zstd compressor producing one frame, fed in chunks of any size.
pub(crate) struct StreamEncoder {
    inner: zstd::stream::raw::Encoder<'static>,
    out: Vec<u8>,
}

impl StreamEncoder {
    /// A new frame at `level` (0 = library default).
    pub(crate) fn new(level: i32) -> Result<StreamEncoder> {
        let inner = zstd::stream::raw::Encoder::new(level)
            .map_err(|e| err!(Internal, "zstd context: {e}"))?;
        Ok(StreamEncoder {
            inner,
            out: vec![0u8; zstd::zstd_safe::CCtx::out_size()],
        })
    }

    /// Compresses `input`, handing every produced piece to `sink`.
    pub(crate) fn write(
        &mut self,
        mut input: &[u8],
        sink: &mut dyn FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        use zstd::stream::raw::{InBuffer, Operation, OutBuffer};
        while !input.is_empty() {
            let mut inb = InBuffer::around(input);
            let mut outb = OutBuffer::around(&mut self.out[..]);
            self.inner
                .run(&mut inb, &mut outb)
                .map_err(|e| err!(Internal, "zstd compression: {e}"))?;
            let (used, produced) = (inb.pos(), outb.pos());
            input = &input[used..];
            if produced > 0 {
                sink(&self.out[..produced])?;
            }
        }
        Ok(())
    }

    /// Ends the frame, handing the remaining bytes to `sink`.
    pub(crate) fn finish(&mut self, sink: &mut dyn FnMut(&[u8]) -> Result<()>) -> Result<()> {
        use zstd::stream::raw::{Operation, OutBuffer};
        loop {
            let mut outb = OutBuffer::around(&mut self.out[..]);
            let remaining = self
                .inner
                .finish(&mut outb, true)
                .map_err(|e| err!(Internal, "zstd compression: {e}"))?;
            let produced = outb.pos();
            if produced > 0 {
                sink(&self.out[..produced])?;
            }
            if remaining == 0 {
                return Ok(());
            }
        }
    }
}

/// The zstd compression levels accepted (0 means the library default).
pub fn zstd_level_range() -> std::ops::RangeInclusive<i32> {
    zstd::compression_level_range()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    #[test]
    fn digests_match_known_values() {
        let mut h = Hasher::new(DigestAlgorithm::Sha256);
        h.update(b"abc");
        assert_eq!(
            h.finish().unwrap(),
            "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let mut h = Hasher::new(DigestAlgorithm::Crc32c);
        h.update(b"123456789");
        assert_eq!(h.finish().unwrap(), "crc32c:0xE3069283");
        assert!(Hasher::new(DigestAlgorithm::None).finish().is_none());
    }

    #[test]
    fn parse_digest_accepts_either_case_and_reports_unknown() {
        let e = parse_digest("crc32c:0xe3069283").unwrap();
        let mut h = e.hasher();
        h.update(b"123456789");
        e.check(h).unwrap();
        let e =
            parse_digest("sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD")
                .unwrap();
        let mut h = e.hasher();
        h.update(b"abc");
        e.check(h).unwrap();
        let mut h = e.hasher();
        h.update(b"abd");
        assert_eq!(e.check(h).unwrap_err().kind(), ErrorKind::Checksum);
        assert_eq!(
            parse_digest("md5:00").err().unwrap().kind(),
            ErrorKind::Unsupported
        );
    }

    #[test]
    fn zstd_decode_checks_the_exact_length() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i % 7) as u8).collect();
        let z = zstd_compress(&data, 3).unwrap();
        let mut out = vec![0u8; data.len()];
        zstd_decode_into(&z, &mut out).unwrap();
        assert_eq!(out, data);
        let mut short = vec![0u8; data.len() - 1];
        assert_eq!(
            zstd_decode_into(&z, &mut short).unwrap_err().kind(),
            ErrorKind::Format
        );
        let mut long = vec![0u8; data.len() + 1];
        assert_eq!(
            zstd_decode_into(&z, &mut long).unwrap_err().kind(),
            ErrorKind::Format
        );
        let mut two = z.clone();
        two.extend_from_slice(&z);
        let mut out2 = vec![0u8; 2 * data.len()];
        zstd_decode_into(&two, &mut out2).unwrap();
        assert_eq!(&out2[data.len()..], &data[..]);
        assert_eq!(
            zstd_decode_into(&z[..z.len() / 2], &mut out)
                .unwrap_err()
                .kind(),
            ErrorKind::Format
        );
    }
}
