//! Digest verification and value checks of a reader's objects and shards.

use crate::error::{Error, ErrorKind, Result};
use crate::formats::ztensor_v2;
use crate::verify;

use super::Reader;

impl Reader<'_> {
    /// Checks one component's stored digest. `NotFound` when it has none, `Unsupported`
    /// for an algorithm this build doesn't know, `Checksum` on mismatch. Reads every stored
    /// byte of the component once.
    pub fn verify_component(&self, object: usize, component: usize) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        verify::component(self.source(obj, c)?, &self.model, object, component)
            .map_err(self.ctx(obj, c))
    }

    /// Checks every stored digest in the file (each stored blob once, in parallel) and
    /// returns the first failure in file order. A file without digests verifies as Ok.
    pub fn verify(&self) -> Result<()> {
        verify::all(&self.model, &|oi, ci| {
            match self.verify_component(oi, ci) {
                // Checked for its values only (a v2 bool or fp4 component without a digest).
                Err(e)
                    if e.kind() == ErrorKind::NotFound
                        && self.model.objects[oi].components[ci].digest().is_none() =>
                {
                    Ok(())
                }
                r => r,
            }
        })?;
        self.verify_shards()
    }

    /// A zTensor v2 set's shards against the identities its root's table records: their
    /// whole-file digests (§7.3; sizes were checked when each was opened). Opens any
    /// shard not open yet and reads it whole.
    fn verify_shards(&self) -> Result<()> {
        for file in 1..=self.model.v2_shards.len() {
            self.verify_shard(file)?;
        }
        Ok(())
    }

    /// Checks file `index` of a set against the identity its root records for it: a
    /// zTensor v2 shard's size and whole-file digest (§7.3; opens it and reads it whole).
    /// `Ok(false)` when the set records no identity for that file (the root itself, the
    /// files of an index or a GGUF split set); `Checksum` on a mismatch.
    pub fn verify_shard(&self, index: usize) -> Result<bool> {
        if index >= self.shard_count() {
            self.shard_path(index)?;
        }
        let Some(entry) = index
            .checked_sub(1)
            .and_then(|i| self.model.v2_shards.get(i))
        else {
            return Ok(false);
        };
        let in_file = |e: Error| match self.files.path(index as u32) {
            Some(p) => e.context(p),
            None => e,
        };
        let source = self.files.part(index as u32).map_err(in_file)?;
        ztensor_v2::shards::verify_shard(source, entry).map_err(in_file)?;
        Ok(true)
    }

    /// The content digest of a zTensor v2 file (its §6.4 identity of the model, whatever
    /// its layout, sharding or encodings): `"xxh3:<hex>"` or `"sha256:<hex>"`, computed
    /// from the manifest alone. `Unsupported` for other files and for a v2 file with a
    /// part without a digest (the content digest is then undefined).
    pub fn content_digest(&self, algorithm: crate::codec::DigestAlgorithm) -> Result<String> {
        ztensor_v2::encode::content_digest(&self.model, algorithm)
    }

    /// Checks an object's values beyond what the manifest shows: sparse structure (indptr
    /// starts at 0, never decreases and ends at nnz; indices and coordinates in range) and
    /// bool bytes (0 or 1). Decodes the components it checks.
    pub fn validate_values(&self, object: usize) -> Result<()> {
        let obj = self.object(object)?;
        crate::model::schema::check_values(obj, &mut |ci| self.read_to_vec(object, ci)).map_err(
            |e| {
                // A v2 file's value rules are its layouts' data rules and Appendix A's.
                let e = match self.model.traits.value_rules && e.kind() == ErrorKind::Format {
                    true => ztensor_v2::reject(ztensor_v2::Rule::LayoutData, e.message()),
                    false => e,
                };
                e.context(format!("object '{}'", obj.name()))
            },
        )
    }
}
