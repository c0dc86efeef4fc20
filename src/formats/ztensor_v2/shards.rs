//! Multi-file v2 models (§7): a root whose manifest has a shard table opens as one set of
//! files (`sets/v2.rs` opens them). File 0 is the root itself; file `i + 1` is the shard at position `i` of the
//! table (sorted by name). A shard name is a label, resolved here by the positional
//! convention of Appendix B: the root `<stem>.zt` names its shard `n` as the sibling file
//! `<stem>-<n>.zt` (locally, or beside a remote root through the same store). The table's
//! name rules (checked at open) make that a single path component, never a path.
//!
//! Shards are opened on first read, unless the caller asks for every file at open.
//! Opening one climbs the first two rungs of the §7.3 ladder: its size must be the
//! table's, its magic and footer those of a v2 file. The third rung, the whole-file
//! digest, is `verify_shard` (what `Reader::verify` runs for every shard).

use std::path::{Path, PathBuf};

use crate::codec::digest;
use crate::error::{Result, err};
use crate::limits::Limits;
use crate::model::{Model, ShardEntry};
use crate::source::Source;

use super::DIGEST_KINDS;

/// Where the shard named `name` of the root at `root` is: `<stem>-<name>.zt` beside it.
pub(crate) fn shard_path(root: &Path, name: &str) -> PathBuf {
    let stem = root
        .file_name()
        .and_then(|n| n.to_str())
        .map(|n| n.strip_suffix(".zt").unwrap_or(n))
        .unwrap_or("model");
    root.with_file_name(format!("{stem}-{name}.zt"))
}

/// What a file must be to serve as a v2 shard (§7.3 rungs 1 and 2 besides the size): a v2
/// container, with or without a manifest of its own (§7.2).
pub(crate) fn check_shard(source: &Source<'static>) -> Result<()> {
    let read = |offset: u64, len: u64| source.parse_region(offset, len);
    let limits = Limits::default();
    super::read_footer(&read, source.size(), &limits)?;
    Ok(())
}

/// The third rung (§7.3): the shard's whole-file digest is the table's. Reads the file.
pub(crate) fn verify_shard(source: &Source<'_>, entry: &ShardEntry) -> Result<()> {
    let expected = digest::expected(&entry.digest, DIGEST_KINDS)?;
    let mut hasher = expected.hasher();
    source.for_each_piece(0, source.size(), |piece| hasher.update(piece))?;
    expected.check(hasher).map_err(|_| {
        err!(
            Checksum,
            "shard '{}' does not hash to the root's digest {}: it is not the file the root \
             was written with",
            entry.name,
            entry.digest
        )
    })
}

/// The error for a part in a shard when the root was opened without a path (from memory
/// or a descriptor): there is nothing to resolve the shard's name against.
pub(crate) fn unresolvable(model: &Model, file: u32) -> crate::error::Error {
    let name = model
        .v2_shards
        .get(file as usize - 1)
        .map_or("?", |s| &*s.name);
    err!(
        NotFound,
        "the bytes are in shard '{name}' of the file's shard table, which can't be found \
         for a file opened from memory or a descriptor (open the root by its path)"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shard_names_resolve_beside_the_root() {
        assert_eq!(
            shard_path(Path::new("/m/model.zt"), "00001-of-00002"),
            Path::new("/m/model-00001-of-00002.zt")
        );
        assert_eq!(
            shard_path(Path::new("llama"), "base"),
            Path::new("llama-base.zt")
        );
    }
}
