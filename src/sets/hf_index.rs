//! Sets an index describes: a Hugging Face style `*.index.json` (`weight_map` from tensor
//! name to file, `metadata` for the whole set), which serves safetensors, zTensor and
//! PyTorch (`pytorch_model.bin.index.json`) shards alike.

use std::borrow::Cow;
use std::path::Path;

use crate::error::{Result, bail};
use crate::limits::Limits;
use crate::model::{Attributes, Model};
use crate::source::Mapping;

use super::hf_index_json::{metadata_value, parse_index};
use super::parse_shards::{Piped, Run, parse_shard, pipelined};
use super::{SetOptions, Shards, merge};

/// True for a path that names a set's index: a file name ending in `.index.json`.
pub(crate) fn is_index(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".index.json"))
}

/// The largest index file read: far more than any real `weight_map` needs (a model of
/// 100,000 tensors has an index of about 10 MiB).
const MAX_INDEX: u64 = 64 << 20;

/// Opens the set an index describes: parses every shard it names (relative to the
/// index's directory) and merges them.
pub(crate) fn open_index(
    index: &Path,
    options: SetOptions,
    limits: &Limits,
) -> Result<(Model, Shards)> {
    let source = options.place.open(index, Mapping::None)?;
    // Its shards are opened beneath its directory, held from now on.
    let dir = super::set_dir(index, &source, options.place)?;
    let options = options.beneath(dir.as_ref());
    let max = MAX_INDEX.min(limits.max_manifest_size);
    if source.size() > max {
        bail!(
            Limit,
            "the index is {} bytes, over the limit of {max}",
            source.size()
        );
    }
    // Read with pread into a buffer of its own (the source maps nothing).
    let bytes = source.region(0, source.size())?.into_owned();
    drop(source);
    // UTF-8 checked once for the whole text (a string at a time costs more: an index
    // holds tens of thousands of short strings).
    let Ok(text) = std::str::from_utf8(&bytes) else {
        bail!(Format, "the index is not UTF-8 text");
    };
    let dir = index.parent().unwrap_or(Path::new("."));
    // The index is read once, its shards parsed as they are found. Should its weight_map
    // key be repeated, the last map is the index's: its shards are found again from it.
    let run = match pipelined(dir, options, limits, |entry| parse_index(text, entry))? {
        Piped::Run(run) => *run,
        Piped::Again(mut index) => {
            let read = move |entry: &mut dyn FnMut(&str, &str)| {
                for (name, file) in &index.weight_map {
                    entry(name, file);
                }
                index.streamed = true;
                Ok(index)
            };
            match pipelined(dir, options, limits, read)? {
                Piped::Run(run) => *run,
                Piped::Again(_) => unreachable!("a map read whole is streamed"),
            }
        }
    };
    let attributes =
        metadata_value(run.metadata, limits.max_cbor_depth)?.map(|v| Attributes::from_value(&v));
    let Run {
        found,
        mut results,
        grouped,
        ..
    } = run;
    // The shards in name order (transformers numbers them, so that is their order). After
    // a failure the workers stop: a shard they left is parsed here, so that the set's
    // error is the first in that order, as if they were parsed one by one.
    let mut order: Vec<usize> = (0..found.files.len()).collect();
    order.sort_unstable_by_key(|&i| &found.files[i]);
    results.resize_with(found.files.len(), || None);
    let mut parts = Vec::with_capacity(order.len());
    let mut shards = Vec::with_capacity(order.len());
    let mut all_agree = true;
    for &i in &order {
        let (model, shard, agrees) = match results[i].take() {
            Some(result) => result?,
            None => {
                let file = &found.files[i];
                let (model, shard) = parse_shard(file, dir.join(file), options, limits)?;
                (model, shard, None)
            }
        };
        all_agree &= agrees.unwrap_or_else(|| grouped.agrees(i, &model));
        parts.push(model);
        shards.push(shard);
    }
    let files: Vec<&str> = order.iter().map(|&i| found.files[i].as_str()).collect();
    let model = merge(parts, &files, attributes)?;
    if !all_agree {
        check_weight_map(&model, &grouped.weight_map, &files)?;
    }
    Ok((model, Shards::new(shards)))
}

/// True when `names` (`count` of them) are the names of `model`'s objects, each once.
pub(super) fn lists_every_object_once<'n>(
    model: &Model,
    count: usize,
    names: impl Iterator<Item = &'n [u8]>,
) -> bool {
    if count != model.objects.len() {
        return false;
    }
    let mut listed = vec![false; count];
    for name in names {
        match model.by_name.find(&model.objects, name) {
            Some(at) if !std::mem::replace(&mut listed[at], true) => {}
            _ => return false,
        }
    }
    true
}

/// Every entry of the weight map names an object of the set held by the file it says,
/// and every object of the set is listed once.
fn check_weight_map(
    model: &Model,
    weight_map: &[(Cow<'_, str>, Cow<'_, str>)],
    files: &[&str],
) -> Result<()> {
    let mut listed = vec![false; model.objects.len()];
    for (name, file) in weight_map {
        let Some(at) = model.by_name.find(&model.objects, name.as_bytes()) else {
            bail!(
                Format,
                "the index maps tensor '{name}' to shard {file}, which doesn't hold it"
            );
        };
        let holder = files[model.objects[at]
            .components
            .first()
            .map_or(0, |c| c.blob.file) as usize];
        if holder != &**file {
            bail!(
                Format,
                "shard {holder} holds tensor '{name}', which the index maps to {file}"
            );
        }
        if std::mem::replace(&mut listed[at], true) {
            bail!(Format, "the index lists tensor '{name}' twice");
        }
    }
    if let Some(at) = listed.iter().position(|l| !l) {
        let o = &model.objects[at];
        let holder = files[o.components.first().map_or(0, |c| c.blob.file) as usize];
        bail!(
            Format,
            "shard {holder} holds tensor '{}', which the index doesn't list",
            o.name()
        );
    }
    Ok(())
}
