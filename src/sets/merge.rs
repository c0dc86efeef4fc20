//! One model of a set's parts.

use crate::error::{Result, bail};
use crate::model::{Attributes, DigestRegions, Model, NameIndex, Object};

/// One model of the parts' objects, in shard order, each blob marked with its shard.
/// The parts must be one container; a name in two shards is refused, naming both.
pub(super) fn merge(
    parts: Vec<Model>,
    names: &[&str],
    attributes: Option<Attributes>,
) -> Result<Model> {
    let Some(first) = parts.first() else {
        bail!(Format, "the set has no files");
    };
    let (container, traits, data_offset) = (first.container, first.traits, first.data_offset);
    let version = first.version.clone();
    let total: usize = parts.iter().map(|p| p.objects.len()).sum();
    // The objects go after the first shard's, in its own vector: grown in place where the
    // allocator can (fresh pages cost more than the copy into them).
    let mut parts = parts;
    let mut objects: Vec<Object> = std::mem::take(&mut parts[0].objects);
    objects.reserve_exact(total - objects.len());
    let mut regions = DigestRegions::default();
    let mut starts = Vec::with_capacity(parts.len());
    let shard_layouts: Box<[(u64, u64)]> = parts
        .iter()
        .map(|p| (p.data_offset, p.traits.blob_alignment))
        .collect();
    for (i, part) in parts.into_iter().enumerate() {
        if !part.external.is_empty() {
            bail!(
                Unsupported,
                "shard {} keeps its data in other files ({}): a set of such files is not read",
                names[i],
                part.external[0]
            );
        }
        if part.container != container {
            bail!(
                Format,
                "shard {} is a {} file, shard {} a {} file: a set is one format",
                names[i],
                part.container.title(),
                names[0],
                container.title()
            );
        }
        // The first shard's objects are in place already (its blobs say file 0).
        let base = if i == 0 { 0 } else { objects.len() };
        starts.push(base);
        for ((o, c), region) in part.digest_regions.iter() {
            regions.push(base + o, c, region);
        }
        for mut o in part.objects {
            for c in o.components.iter_mut() {
                c.blob.file = i as u32;
            }
            objects.push(o);
        }
    }
    // The name index is built once; a repeated name says which shards hold it.
    let by_name = match NameIndex::try_build(&objects)? {
        Ok(index) => index,
        Err((before, at)) => {
            let shard_of = |at: usize| names[starts.partition_point(|&s| s <= at) - 1];
            bail!(
                Format,
                "tensor '{}' is in both {} and {}",
                objects[at].name(),
                shard_of(before),
                shard_of(at)
            );
        }
    };
    Ok(Model {
        container,
        traits,
        version,
        attributes,
        objects,
        by_name,
        digest_regions: regions,
        data_offset,
        split: None,
        v2_shards: Box::default(),
        shard_layouts,
        external: Box::default(),
    })
}
