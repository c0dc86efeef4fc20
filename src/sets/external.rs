//! The files a model keeps some of its blobs in (ONNX external data), opened beside it.

use std::path::Path;

use crate::error::{Result, bail};
use crate::formats::check_relative;
use crate::model::Model;
use crate::source::Source;

use super::{Held, SetOptions, Shard, Shards};

/// Opens the files a model keeps some of its blobs in (ONNX external data) beside the
/// file at `path` (parsed into `model` through `source`): each named relative to that
/// file's directory and opened beneath it, once (`SetOptions::open_part`: a name or link
/// leading out of the directory is refused, but for a link beneath the directory the
/// model really is in), and every blob checked to lie inside the file so opened. The model's own file is shard 0.
pub(crate) fn open_external(
    path: &Path,
    source: Source<'static>,
    model: Model,
    options: SetOptions,
) -> Result<(Model, Shards)> {
    let dir = path.parent().unwrap_or(Path::new(""));
    let own = path.file_name().and_then(|n| n.to_str()).unwrap_or("model");
    let mut shards = vec![Shard::new(
        own,
        path.to_path_buf(),
        source.size(),
        options.mapping,
        Held::Open(source),
    )];
    for name in model.external.iter() {
        if let Err(why) = check_relative(name) {
            bail!(Format, "external data file {name:?} is {why}");
        }
        let file = dir.join(&**name);
        let opened = (options.open_part(name, &file))
            .map_err(|e| e.context(format_args!("external data file {name}")))?;
        shards.push(options.shard(name, file, opened));
    }
    for o in &model.objects {
        for c in o.components.iter() {
            let b = &c.blob;
            if b.file == 0 {
                continue;
            }
            let shard = &shards[b.file as usize];
            if b.offset
                .checked_add(b.length)
                .is_none_or(|end| end > shard.size())
            {
                bail!(
                    Format,
                    "tensor '{}': bytes [{}, {} + {}) of external data file {} reach past its end ({} bytes)",
                    o.name(),
                    b.offset,
                    b.offset,
                    b.length,
                    shard.name,
                    shard.size()
                );
            }
        }
    }
    Ok((model, Shards::new(shards)))
}

/// Refuses a model with external files where no directory is known to find them in.
pub(crate) fn refuse_external(model: &Model) -> Result<()> {
    if let Some(name) = model.external.first() {
        bail!(
            Unsupported,
            "the model keeps tensors in the external file {name:?}: open it by path, so \
             that the files beside it can be found"
        );
    }
    Ok(())
}
