//! Digests of stored bytes: the algorithms, their one text syntax, and incremental hashing.
//! Which algorithms a file may use is its format's choice (`Model::digest_kinds`); the
//! same parser checks the syntax at open and reads the value at verification.

use sha2::{Digest as _, Sha256};

use crate::error::{Result, bail, err};

/// The digest algorithms the writer can record. Values are the C ABI's `zt_digest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum DigestAlgorithm {
    /// No digest.
    None = 0,
    /// SHA-256, written as "sha256:<64 lower-case hex>".
    Sha256 = 1,
    /// CRC-32C (Castagnoli), written as "crc32c:0x<8 upper-case hex>".
    Crc32c = 2,
    /// XXH3-64 (seed 0), written as "xxh3:<16 lower-case hex>": zTensor v2's digest.
    Xxh3 = 3,
}

impl DigestAlgorithm {
    /// From the C enum value, range-checked.
    pub fn from_u32(v: u32) -> Option<DigestAlgorithm> {
        match v {
            0 => Some(DigestAlgorithm::None),
            1 => Some(DigestAlgorithm::Sha256),
            2 => Some(DigestAlgorithm::Crc32c),
            3 => Some(DigestAlgorithm::Xxh3),
            _ => None,
        }
    }
}

/// An algorithm this library can check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Sha256,
    Crc32c,
    /// xxh3-64 (seed 0): Tensogram's frame hashes; never written.
    Xxh3,
}

impl Kind {
    fn name(self) -> &'static str {
        match self {
            Kind::Sha256 => "sha256",
            Kind::Crc32c => "crc32c",
            Kind::Xxh3 => "xxh3",
        }
    }
}

/// The algorithms a zTensor manifest defines.
pub(crate) const ZTENSOR_KINDS: &[Kind] = &[Kind::Sha256, Kind::Crc32c];

/// A stored digest's expected value.
pub(crate) enum Expected {
    Sha256([u8; 32]),
    Crc32c(u32),
    /// The value as Tensogram writes it (big-endian hex).
    Xxh3(u64),
}

fn hex_value(hex: &str) -> Option<u64> {
    (!hex.is_empty() && hex.len() <= 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u64::from_str_radix(hex, 16).ok())
        .flatten()
}

/// Parses a stored digest "algorithm:value". An algorithm among `kinds` must have its
/// exact syntax ("sha256:<64 hex>", "crc32c:0x<8 hex>", "xxh3:<16 hex>", hex of either
/// case), else it is a `Format` error; any other algorithm gives `None` (reported as
/// unsupported when verified, never as verified).
pub(crate) fn parse(digest: &str, kinds: &[Kind]) -> Result<Option<Expected>> {
    let Some((algo, value)) = digest.split_once(':') else {
        bail!(
            Format,
            "malformed digest '{digest}': expected 'algorithm:hex'"
        );
    };
    let malformed = || err!(Format, "malformed digest '{digest}'");
    let Some(kind) = kinds.iter().copied().find(|k| k.name() == algo) else {
        if algo.is_empty() || value.is_empty() {
            return Err(malformed());
        }
        return Ok(None);
    };
    // Hex is ASCII; checked first, so that the slices below (by byte) can't split a
    // character (a fuzzed "sha256:" followed by 64 bytes of two-byte characters panicked).
    if !value.is_ascii() {
        return Err(malformed());
    }
    let expected = match kind {
        Kind::Sha256 if value.len() == 64 => {
            let mut bytes = [0u8; 32];
            for (i, b) in bytes.iter_mut().enumerate() {
                *b = hex_value(&value[2 * i..2 * i + 2]).ok_or_else(malformed)? as u8;
            }
            Expected::Sha256(bytes)
        }
        Kind::Crc32c if value.len() == 10 && value[..2].eq_ignore_ascii_case("0x") => {
            Expected::Crc32c(hex_value(&value[2..]).ok_or_else(malformed)? as u32)
        }
        Kind::Xxh3 if value.len() == 16 => Expected::Xxh3(hex_value(value).ok_or_else(malformed)?),
        _ => return Err(malformed()),
    };
    Ok(Some(expected))
}

/// Checks a stored digest's syntax (see `parse`).
pub(crate) fn check_syntax(digest: &str, kinds: &[Kind]) -> Result<()> {
    parse(digest, kinds).map(drop)
}

/// The expected value of a digest to verify: `Unsupported` for an algorithm the file's
/// format doesn't define, so it is never counted as verified.
pub(crate) fn expected(digest: &str, kinds: &[Kind]) -> Result<Expected> {
    parse(digest, kinds)?.ok_or_else(|| {
        let algo = digest.split_once(':').map_or(digest, |(a, _)| a);
        err!(
            Unsupported,
            "digest algorithm '{algo}' is not supported, so it was not verified"
        )
    })
}

/// An incremental digest over stored bytes.
pub(crate) enum Hasher {
    None,
    Sha256(Box<Sha256>),
    Crc32c(u32),
    Xxh3(Box<xxhash_rust::xxh3::Xxh3>),
}

impl Hasher {
    /// A hasher for what the writer records.
    pub(crate) fn new(algo: DigestAlgorithm) -> Hasher {
        match algo {
            DigestAlgorithm::None => Hasher::None,
            DigestAlgorithm::Sha256 => Hasher::Sha256(Box::new(Sha256::new())),
            DigestAlgorithm::Crc32c => Hasher::Crc32c(0),
            DigestAlgorithm::Xxh3 => Hasher::Xxh3(Box::default()),
        }
    }
    pub(crate) fn update(&mut self, bytes: &[u8]) {
        match self {
            Hasher::None => {}
            Hasher::Sha256(h) => h.update(bytes),
            Hasher::Crc32c(c) => *c = crc32c::crc32c_append(*c, bytes),
            Hasher::Xxh3(h) => h.update(bytes),
        }
    }
    /// The digest string as the reference writer spells it; None for `None`.
    pub(crate) fn finish(self) -> Option<String> {
        match self {
            Hasher::None => None,
            Hasher::Sha256(h) => Some(format!("sha256:{}", hex_lower(&h.finalize()))),
            Hasher::Crc32c(c) => Some(format!("crc32c:0x{c:08X}")),
            Hasher::Xxh3(h) => Some(format!("xxh3:{:016x}", h.digest())),
        }
    }
}

/// Lower-case hex of bytes.
pub fn hex_lower(bytes: &[u8]) -> String {
    crate::value::json::Hex(bytes).to_string()
}

impl Expected {
    /// A hasher of this expectation's algorithm.
    pub(crate) fn hasher(&self) -> Hasher {
        match self {
            Expected::Sha256(_) => Hasher::new(DigestAlgorithm::Sha256),
            Expected::Crc32c(_) => Hasher::new(DigestAlgorithm::Crc32c),
            Expected::Xxh3(_) => Hasher::Xxh3(Box::default()),
        }
    }
    /// Compares a finished hasher with the expectation: `Checksum` when they differ.
    pub(crate) fn check(&self, hasher: Hasher) -> Result<()> {
        let ok = match (self, hasher) {
            (Expected::Sha256(want), Hasher::Sha256(h)) => h.finalize()[..] == want[..],
            (Expected::Crc32c(want), Hasher::Crc32c(got)) => got == *want,
            (Expected::Xxh3(want), Hasher::Xxh3(h)) => h.digest() == *want,
            _ => false,
        };
        if !ok {
            bail!(Checksum, "stored digest does not match the stored bytes");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::ErrorKind;

    fn check(digest: &str, kinds: &[Kind], bytes: &[u8]) -> Result<()> {
        let e = expected(digest, kinds)?;
        let mut h = e.hasher();
        h.update(bytes);
        e.check(h)
    }

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
    fn either_case_verifies_and_unknown_algorithms_are_unsupported() {
        check("crc32c:0xe3069283", ZTENSOR_KINDS, b"123456789").unwrap();
        check("crc32c:0XE3069283", ZTENSOR_KINDS, b"123456789").unwrap();
        let sha = "sha256:BA7816BF8F01CFEA414140DE5DAE2223B00361A396177A9CB410FF61F20015AD";
        check(sha, ZTENSOR_KINDS, b"abc").unwrap();
        assert_eq!(
            check(sha, ZTENSOR_KINDS, b"abd").unwrap_err().kind(),
            ErrorKind::Checksum
        );
        let e = check("md5:00", ZTENSOR_KINDS, b"").unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Unsupported);
        assert_eq!(
            e.message(),
            "digest algorithm 'md5' is not supported, so it was not verified"
        );
    }

    #[test]
    fn syntax_is_exact_for_the_formats_algorithms() {
        for bad in [
            "sha256",
            "sha256:abc",
            "crc32c:E3069283",
            "crc32c:0xE306928",
            "crc32c:0xE30692833",
            "crc32c:0xG3069283",
            ":abc",
            "md5:",
        ] {
            let e = check_syntax(bad, ZTENSOR_KINDS).unwrap_err();
            assert_eq!(e.kind(), ErrorKind::Format, "{bad}");
        }
        assert_eq!(
            check_syntax("sha256", ZTENSOR_KINDS).unwrap_err().message(),
            "malformed digest 'sha256': expected 'algorithm:hex'"
        );
        check_syntax("md5:00", ZTENSOR_KINDS).unwrap();
        // xxh3 is an unknown algorithm of zTensor manifests, whatever its value.
        check_syntax("xxh3:zz", ZTENSOR_KINDS).unwrap();
    }

    #[test]
    fn xxh3_digests_are_known_only_where_the_format_defines_them() {
        // The value Tensogram documents for compute_hash(b"hello world").
        let kinds = &[Kind::Xxh3];
        check("xxh3:d447b1ea40e6988b", kinds, b"hello world").unwrap();
        assert_eq!(
            check("xxh3:d447b1ea40e6988b", kinds, b"hello world!")
                .unwrap_err()
                .kind(),
            ErrorKind::Checksum
        );
        assert_eq!(
            check_syntax("xxh3:d447b1ea40e6988", kinds)
                .unwrap_err()
                .kind(),
            ErrorKind::Format
        );
        assert_eq!(
            check("xxh3:d447b1ea40e6988b", ZTENSOR_KINDS, b"hello world")
                .unwrap_err()
                .kind(),
            ErrorKind::Unsupported
        );
    }
}
