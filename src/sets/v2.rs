//! A zTensor v2 root with a shard table (§7): the root and the files its table names.

use std::path::Path;

use crate::error::{Result, bail};
use crate::formats::ztensor_v2;
use crate::model::Model;
use crate::source::Source;

use super::{Held, SetOptions, Shard, Shards};

/// The files of a v2 root with a shard table: the root (already open) and each shard,
/// opened now when `open_all`, else on first read: beneath the root's directory for a
/// local root (`options.dir`), at its place for a remote one.
pub(super) fn open_set(
    root: &Path,
    source: Source<'static>,
    model: &Model,
    options: SetOptions,
) -> Result<Shards> {
    let (place, mapping) = (options.place, options.mapping);
    let mut files = Vec::with_capacity(model.v2_shards.len() + 1);
    let root_name = root.file_name().map_or_else(
        || root.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    files.push(Shard::new(
        &root_name,
        root.to_path_buf(),
        source.size(),
        mapping,
        Held::Open(source),
    ));
    for entry in &model.v2_shards {
        let path = ztensor_v2::shards::shard_path(root, &entry.name);
        let held = match (options.dir, path.file_name().and_then(|n| n.to_str())) {
            (Some(dir), Some(name)) => Held::Beneath(dir.clone(), name.into()),
            (Some(_), None) => bail!(
                Internal,
                "shard '{}' has no file name ({})",
                entry.name,
                path.display()
            ),
            (None, _) => Held::At(place.clone()),
        };
        let shard = Shard::new(&entry.name, path, entry.size, mapping, held)
            .checked_by(ztensor_v2::shards::check_shard);
        files.push(shard);
    }
    let shards = Shards::new(files);
    if options.open_all {
        shards.open_all()?;
    }
    Ok(shards)
}
