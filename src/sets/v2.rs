//! A zTensor v2 root with a shard table (§7): the root and the files its table names.

use std::path::Path;

use crate::error::Result;
use crate::formats::ztensor_v2;
use crate::model::Model;
use crate::source::Source;

use super::{SetOptions, Shard, Shards};

/// The files of a v2 root with a shard table: the root (already open) and each shard,
/// opened now when `open_all`, else on first read.
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
    files.push(
        Shard::new(
            &root_name,
            root.to_path_buf(),
            source.size(),
            mapping,
            Some(source),
        )
        .at(place),
    );
    for entry in &model.v2_shards {
        let shard = Shard::new(
            &entry.name,
            ztensor_v2::shards::shard_path(root, &entry.name),
            entry.size,
            mapping,
            None,
        )
        .at(place)
        .checked_by(ztensor_v2::shards::check_shard);
        files.push(shard);
    }
    let shards = Shards::new(files);
    if options.open_all {
        shards.open_all()?;
    }
    Ok(shards)
}
