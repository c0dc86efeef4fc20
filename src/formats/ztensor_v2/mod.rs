//! zTensor v2 (`spec/ztensor-v2-spec.md`, Draft 4, as `ztensor` 2.1.2 writes it): the
//! container (magic `89 5A 54 32 0D 0A 1A 0A`, 4096-aligned blobs, a 40-byte footer with
//! the XXH3-64 of the manifest), the manifest in deterministic CBOR (`manifest`), the
//! layout profiles and logical types read into our objects and components (`profiles`),
//! shard tables (`shards`), and what the writer shares: the footer, the manifest encoding
//! and the content digest (`encode`).
//!
//! Every MUST of the specification is enforced at open (§2, §3.6, §8.1); a refusal is a
//! `Format` error (`Unsupported` for a footer version this library doesn't read) whose
//! message names the rule as the v2 conformance corpus does ("blob-alignment",
//! "cbor-duplicate-key" ...), the section, and where. The footer at EOF defines the file
//! (append generations leave older manifests as unreferenced blobs, which is all a reader
//! needs to know about them); reserved footer bytes are ignored.

use xxhash_rust::xxh3::xxh3_64;

use crate::codec::digest::Kind;
use crate::error::{Error, ErrorKind, Result, bail};
use crate::limits::Limits;
use crate::model::{Container, Model, Traits};
use crate::value::cbor::deterministic::{self, DetRule};

use super::ReadAt;

pub(crate) mod encode;
mod manifest;
pub(crate) use manifest::check_name;
pub(crate) mod profiles;
pub(crate) mod shards;

/// The magic at offset 0 and at the end of the footer.
pub(crate) const MAGIC_V2: [u8; 8] = [0x89, b'Z', b'T', b'2', 0x0d, 0x0a, 0x1a, 0x0a];
/// The footer version integer this library reads and writes.
pub(crate) const VERSION: u32 = 2;
/// The version text readers report for v2 files.
pub(crate) const VERSION_TEXT: &str = "2";
/// Bytes of the footer.
pub(crate) const FOOTER_LEN: u64 = 40;
/// Every blob offset is a multiple of this, and at least this.
pub(crate) const ALIGN_FLOOR: u64 = 4096;
/// Canonical placement (§6.3).
pub(crate) const ALIGN_CANONICAL: u64 = 65536;
/// The largest manifest a reader accepts (§3.1).
pub(crate) const MAX_MANIFEST: u64 = 1 << 30;
/// Names (§3.5).
pub(crate) const MAX_NAME: usize = 1024;
/// Shard names (§7.1).
pub(crate) const MAX_SHARD_NAME: usize = 64;
/// Shape rank (§3.3).
pub(crate) const MAX_RANK: usize = 64;
/// CBOR nesting, measured from the manifest root (§3.1).
pub(crate) const MAX_DEPTH: usize = 32;

/// The digest algorithms v2 registers.
pub(crate) const DIGEST_KINDS: &[Kind] = &[Kind::Xxh3, Kind::Sha256];

/// What v2 files guarantee: 4096-aligned blobs (views are at least 64-byte aligned), xxh3
/// and sha256 digests over decoded bytes, and value rules (bool bytes, the odd f4 nibble)
/// checked by verification.
pub(crate) const TRAITS: Traits = Traits {
    blob_alignment: ALIGN_FLOOR,
    view_alignment: 64,
    digest_kinds: DIGEST_KINDS,
    decoded_digests: true,
    value_rules: true,
    shared_blobs: false,
};

/// The rules a v2 file can break, named as the v2 conformance corpus names them.
#[allow(clippy::enum_variant_names)] // `LayoutRule`: the corpus's name
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Rule {
    FileTooSmall,
    HeaderMagic,
    FooterMagic,
    Version,
    ManifestBounds,
    ManifestTooLarge,
    ManifestHash,
    CborSyntax,
    CborDeterminism,
    CborDuplicateKey,
    CborDepth,
    Schema,
    Name,
    Shape,
    BlobAlignment,
    BlobBounds,
    BlobOverlap,
    ShardRef,
    ShardName,
    LayoutRule,
    LayoutData,
    DenseSize,
}

impl Rule {
    /// The rule's name and the section of the specification that states it.
    pub(crate) fn names(self) -> (&'static str, &'static str) {
        match self {
            Rule::FileTooSmall => ("file-too-small", "2.1"),
            Rule::HeaderMagic => ("header-magic", "2.2"),
            Rule::FooterMagic => ("footer-magic", "2.3"),
            Rule::Version => ("version", "2.3"),
            Rule::ManifestBounds => ("manifest-bounds", "2.3"),
            Rule::ManifestTooLarge => ("manifest-too-large", "3.1"),
            Rule::ManifestHash => ("manifest-hash", "2.3"),
            Rule::CborSyntax => ("cbor-syntax", "3.1"),
            Rule::CborDeterminism => ("cbor-determinism", "3.1"),
            Rule::CborDuplicateKey => ("cbor-duplicate-key", "3.1"),
            Rule::CborDepth => ("cbor-depth", "3.1"),
            Rule::Schema => ("schema", "3.2-3.4"),
            Rule::Name => ("name", "3.5"),
            Rule::Shape => ("shape", "3.3"),
            Rule::BlobAlignment => ("blob-alignment", "2.4"),
            Rule::BlobBounds => ("blob-bounds", "2.4"),
            Rule::BlobOverlap => ("blob-overlap", "2.4"),
            Rule::ShardRef => ("shard-ref", "7.1"),
            Rule::ShardName => ("shard-name", "7.1"),
            Rule::LayoutRule => ("layout-rule", "5"),
            Rule::LayoutData => ("layout-data", "5, App. A"),
            Rule::DenseSize => ("dense-size", "5.1"),
        }
    }

    /// The status a refusal under this rule has: a footer version this library doesn't
    /// read is `Unsupported`, every other rule `Format`.
    fn kind(self) -> ErrorKind {
        match self {
            Rule::Version => ErrorKind::Unsupported,
            _ => ErrorKind::Format,
        }
    }
}

/// The error for a file that breaks `rule`: "zTensor v2 rule 'blob-alignment' (§2.4): ...".
pub(crate) fn reject(rule: Rule, detail: impl std::fmt::Display) -> Error {
    let (name, section) = rule.names();
    Error::new(
        rule.kind(),
        format!("zTensor v2 rule '{name}' (§{section}): {detail}"),
    )
}

/// `reject` as an early return.
macro_rules! refuse {
    ($rule:ident, $($arg:tt)*) => {
        return Err($crate::formats::ztensor_v2::reject(
            $crate::formats::ztensor_v2::Rule::$rule,
            format_args!($($arg)*),
        ))
    };
}
pub(crate) use refuse;

/// What the footer points at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Footer {
    pub(crate) manifest_offset: u64,
    pub(crate) manifest_length: u64,
    pub(crate) manifest_hash: u64,
}

impl Footer {
    /// The footer of a file whose manifest is `manifest`, at `offset`.
    pub(crate) fn of(offset: u64, manifest: &[u8]) -> Footer {
        Footer {
            manifest_offset: offset,
            manifest_length: manifest.len() as u64,
            manifest_hash: xxh3_64(manifest),
        }
    }

    /// The 40 bytes: offset, length, hash (u64 LE), version (u32 LE), reserved 0, magic.
    pub(crate) fn to_bytes(self) -> [u8; FOOTER_LEN as usize] {
        let mut f = [0u8; FOOTER_LEN as usize];
        f[0..8].copy_from_slice(&self.manifest_offset.to_le_bytes());
        f[8..16].copy_from_slice(&self.manifest_length.to_le_bytes());
        f[16..24].copy_from_slice(&self.manifest_hash.to_le_bytes());
        f[24..28].copy_from_slice(&VERSION.to_le_bytes());
        f[32..40].copy_from_slice(&MAGIC_V2);
        f
    }
}

/// True for the first bytes of a v2 file.
pub(crate) fn detect(head: &[u8]) -> bool {
    head.starts_with(&MAGIC_V2)
}

/// Reads and checks the footer of a file of `size` bytes whose header magic was seen:
/// magic, version, and the manifest's placement. None for a data shard (no manifest).
pub(crate) fn read_footer(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<Option<Footer>> {
    if size < MAGIC_V2.len() as u64 + FOOTER_LEN {
        refuse!(
            FileTooSmall,
            "the file is {size} bytes, less than a header and a footer (48)"
        );
    }
    let head = read(0, 8)?;
    if head[..] != MAGIC_V2 {
        refuse!(
            HeaderMagic,
            "the first 8 bytes are {}",
            super::printable(&head)
        );
    }
    let tail = read(size - FOOTER_LEN, FOOTER_LEN)?;
    let u64_at = |at: usize| u64::from_le_bytes(tail[at..at + 8].try_into().expect("8 bytes"));
    if tail[32..40] != MAGIC_V2 {
        refuse!(
            FooterMagic,
            "the last 8 bytes are {}: the file is truncated, or an append did not finish",
            super::printable(&tail[32..40])
        );
    }
    let version = u32::from_le_bytes(tail[24..28].try_into().expect("4 bytes"));
    if version != VERSION {
        refuse!(
            Version,
            "the footer says version {version}; this library reads version {VERSION}"
        );
    }
    let footer = Footer {
        manifest_offset: u64_at(0),
        manifest_length: u64_at(8),
        manifest_hash: u64_at(16),
    };
    if footer.manifest_length == 0 {
        if footer.manifest_offset != 0 || footer.manifest_hash != 0 {
            refuse!(
                ManifestBounds,
                "a footer without a manifest (a data shard) must zero its offset ({}) and \
                 hash ({:#x})",
                footer.manifest_offset,
                footer.manifest_hash
            );
        }
        return Ok(None);
    }
    check_manifest_placement(&footer, size, limits)?;
    Ok(Some(footer))
}

/// A footer's manifest (of a file of `size` bytes): no larger than the limits, aligned,
/// inside the data region.
fn check_manifest_placement(footer: &Footer, size: u64, limits: &Limits) -> Result<()> {
    if footer.manifest_length > MAX_MANIFEST {
        refuse!(
            ManifestTooLarge,
            "the manifest is {} bytes, over the 1 GiB every reader may refuse",
            footer.manifest_length
        );
    }
    if footer.manifest_length > limits.max_manifest_size {
        bail!(
            Limit,
            "the manifest is {} bytes, over the limit of {}",
            footer.manifest_length,
            limits.max_manifest_size
        );
    }
    let at = footer.manifest_offset;
    if !at.is_multiple_of(ALIGN_FLOOR) || at < ALIGN_FLOOR {
        refuse!(
            BlobAlignment,
            "the manifest blob is at offset {at}, not a multiple of {ALIGN_FLOOR} from {ALIGN_FLOOR} on"
        );
    }
    let data_end = size - FOOTER_LEN;
    if at
        .checked_add(footer.manifest_length)
        .is_none_or(|end| end > data_end)
    {
        refuse!(
            ManifestBounds,
            "the manifest [{at}, +{}) is not inside the data region, which ends at {data_end}",
            footer.manifest_length
        );
    }
    Ok(())
}

/// Reads a v2 file: footer, manifest (hash, deterministic encoding, schema, every rule of
/// §3.6), into a model whose blobs are checked against the file and its shard table.
/// Returns the model and where the data region ends.
pub(crate) fn parse(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<(Model, u64)> {
    let data_end = size - FOOTER_LEN.min(size);
    let Some(footer) = read_footer(read, size, limits)? else {
        // A data shard: a heap of blobs that only a root describes (§7.2).
        let model = Model::new(Container::ZTensor, TRAITS, VERSION_TEXT, None, Vec::new())?;
        return Ok((model, data_end));
    };
    let bytes = read(footer.manifest_offset, footer.manifest_length)?;
    let hash = xxh3_64(&bytes);
    if hash != footer.manifest_hash {
        refuse!(
            ManifestHash,
            "the manifest hashes to {hash:#018x}, the footer says {:#018x}",
            footer.manifest_hash
        );
    }
    deterministic::check(&bytes, MAX_DEPTH).map_err(|e| {
        let rule = match e.rule {
            DetRule::Syntax => Rule::CborSyntax,
            DetRule::Determinism => Rule::CborDeterminism,
            DetRule::DuplicateKey => Rule::CborDuplicateKey,
            DetRule::Depth => Rule::CborDepth,
        };
        reject(
            rule,
            format_args!(
                "{} (manifest byte {}, file offset {})",
                e.message,
                e.offset,
                footer.manifest_offset + e.offset as u64
            ),
        )
    })?;
    let model = manifest::parse(&bytes, &footer, data_end, limits)?;
    Ok((model, data_end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn footer_round_trips_and_rules_are_named() {
        let f = Footer::of(65536, b"\xa0");
        let bytes = f.to_bytes();
        assert_eq!(&bytes[32..], &MAGIC_V2);
        assert_eq!(u32::from_le_bytes(bytes[24..28].try_into().unwrap()), 2);
        assert_eq!(bytes[28..32], [0; 4]);
        let e = reject(Rule::BlobAlignment, "offset 4100");
        assert_eq!(e.kind(), ErrorKind::Format);
        assert_eq!(
            e.message(),
            "zTensor v2 rule 'blob-alignment' (§2.4): offset 4100"
        );
        assert_eq!(reject(Rule::Version, "3").kind(), ErrorKind::Unsupported);
    }
}
