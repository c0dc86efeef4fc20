//! Sets of files read as one: a Hugging Face style index (`*.index.json`: `weight_map`
//! from tensor name to file, `metadata` for the whole set), which serves safetensors and
//! zTensor shards alike, and llama.cpp's GGUF splits (`name-00001-of-00003.gguf`, each
//! file saying where it sits with `split.no`, `split.count` and `split.tensors.count`).
//!
//! Every shard is parsed here, through the format that recognises it, and its model
//! validated against its own file; the merged model lists every shard's objects under
//! their own names, each blob saying which shard holds it (`Blob::file`). Shards are
//! closed again after parsing unless the caller keeps them open (`Shards` reopens them
//! when first read). Whatever the index says is checked against the shards: a tensor it
//! maps to a shard that lacks it, a shard holding a tensor the index doesn't map there,
//! a name in two shards, a file outside the index's directory, a missing file, splits
//! that disagree on their count are all errors naming the file.

use std::collections::HashMap;
use std::path::{Component as PathPart, Path, PathBuf};

use crate::error::{Result, bail, err};
use crate::limits::Limits;
use crate::model::{Attributes, Model, NameIndex, Object};
use crate::source::{Mapping, Shard, Shards, Source};

/// How a set's shards are opened.
#[derive(Clone, Copy, Debug)]
pub(crate) struct SetOptions {
    /// How each shard is mapped when it is read.
    pub(crate) mapping: Mapping,
    /// Keep every shard open (and mapped) from the open on, instead of reopening it when
    /// first read.
    pub(crate) eager: bool,
}

/// True for a path that names a set's index: a file name ending in `.index.json`.
pub(crate) fn is_index(path: &Path) -> bool {
    path.file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.ends_with(".index.json"))
}

/// The largest index file read: far more than any real `weight_map` needs.
const MAX_INDEX: u64 = 256 << 20;

/// Opens the set an index describes: parses every shard it names (relative to the
/// index's directory) and merges them.
pub(crate) fn open_index(
    index: &Path,
    options: SetOptions,
    limits: &Limits,
) -> Result<(Model, Shards)> {
    let source = Source::open(index, Mapping::None)?;
    let max = MAX_INDEX.min(limits.max_manifest_size);
    if source.size() > max {
        bail!(Limit, "the index is {} bytes, over the limit of {max}", source.size());
    }
    let (attributes, weight_map) = parse_index(&source.region(0, source.size())?, limits)?;
    drop(source);
    // The shards in name order (transformers numbers them, so that is their order), each
    // with the tensors the index maps to it.
    let mut files: Vec<&str> = weight_map.values().map(String::as_str).collect();
    files.sort_unstable();
    files.dedup();
    if files.len() > u32::MAX as usize {
        bail!(Limit, "the index names {} files", files.len());
    }
    let mut listed: HashMap<&str, usize> = HashMap::with_capacity(files.len());
    for file in weight_map.values() {
        *listed.entry(file.as_str()).or_default() += 1;
    }
    let dir = index.parent().unwrap_or(Path::new("."));
    let mut parts = Vec::with_capacity(files.len());
    let mut shards = Vec::with_capacity(files.len());
    for (i, file) in files.iter().enumerate() {
        let (model, shard) = parse_shard(file, dir.join(file), options, limits, None)?;
        let mut held = 0usize;
        for o in &model.objects {
            match weight_map.get(o.name()) {
                Some(mapped) if mapped == file => held += 1,
                Some(mapped) => bail!(
                    Format,
                    "shard {file} holds tensor '{}', which the index maps to {mapped}",
                    o.name()
                ),
                None => bail!(
                    Format,
                    "shard {file} holds tensor '{}', which the index doesn't list",
                    o.name()
                ),
            }
        }
        if held != listed[file] {
            let missing = weight_map
                .iter()
                .filter(|(_, f)| f == file)
                .map(|(name, _)| name.as_str())
                .filter(|name| model.by_name.find(&model.objects, name).is_none())
                .min()
                .expect("a listed tensor the shard lacks");
            bail!(
                Format,
                "the index maps tensor '{missing}' to shard {file}, which doesn't hold it"
            );
        }
        debug_assert!(i == parts.len());
        parts.push(model);
        shards.push(shard);
    }
    let model = merge(parts, &files, attributes)?;
    Ok((model, Shards::new(shards)))
}

/// The index's `metadata` (as attributes) and its `weight_map` (tensor name to file),
/// checked: an object of strings, each a relative path inside the index's directory.
fn parse_index(bytes: &[u8], limits: &Limits) -> Result<(Option<Attributes>, HashMap<String, String>)> {
    use crate::cbor::Value;
    let text = std::str::from_utf8(bytes)
        .map_err(|e| err!(Format, "the index is not UTF-8 text: {e}"))?;
    let Value::Map(entries) = crate::json::from_json(text, limits.max_cbor_depth)
        .map_err(|e| err!(Format, "the index is not JSON: {e}"))?
    else {
        bail!(Format, "the index is not a JSON object");
    };
    let (mut attributes, mut weight_map) = (None, None);
    for (key, value) in entries {
        match (key, value) {
            (Value::Text(k), Value::Map(m)) if k == "metadata" => {
                attributes = Some(Attributes::from_value(&Value::Map(m)));
            }
            (Value::Text(k), Value::Null) if k == "metadata" => {}
            (Value::Text(k), _) if k == "metadata" => {
                bail!(Format, "the index's metadata is not a JSON object")
            }
            (Value::Text(k), Value::Map(m)) if k == "weight_map" => weight_map = Some(m),
            (Value::Text(k), _) if k == "weight_map" => {
                bail!(Format, "the index's weight_map is not a JSON object")
            }
            _ => {}
        }
    }
    let Some(entries) = weight_map else {
        bail!(Format, "the index has no weight_map");
    };
    let mut map = HashMap::with_capacity(entries.len());
    for (name, file) in entries {
        let (Value::Text(name), Value::Text(file)) = (name, file) else {
            bail!(Format, "the index's weight_map maps a tensor to something not a file name");
        };
        check_relative(&file)
            .map_err(|why| err!(Format, "the index maps tensor '{name}' to '{file}', {why}"))?;
        map.insert(name, file);
    }
    Ok((attributes, map))
}

/// Why a file name from an index may not be opened: empty, absolute, or reaching out of
/// the index's directory.
fn check_relative(file: &str) -> std::result::Result<(), &'static str> {
    let path = Path::new(file);
    if file.is_empty() || file.contains('\0') {
        return Err("not a file name");
    }
    if path.is_absolute() {
        return Err("an absolute path (shards are named relative to the index)");
    }
    if path
        .components()
        .any(|p| !matches!(p, PathPart::Normal(_) | PathPart::CurDir))
    {
        return Err("a path outside the index's directory");
    }
    Ok(())
}

/// Opens one shard and parses it: closed again unless the set keeps its shards open.
/// `opened` is a source the caller already has for it.
fn parse_shard(
    name: &str,
    path: PathBuf,
    options: SetOptions,
    limits: &Limits,
    opened: Option<Source<'static>>,
) -> Result<(Model, Shard)> {
    let source = match opened {
        Some(source) => source,
        // Parsing reads the header only: without a mapping unless the shard stays open.
        None => {
            let mapping = if options.eager { options.mapping } else { Mapping::None };
            Source::open(&path, mapping).map_err(|e| e.context(format_args!("shard {name}")))?
        }
    };
    let read = |offset: u64, len: u64| source.region_checked(offset, len);
    let model = super::read_model(&read, source.size(), limits)
        .map_err(|e| e.context(path.display()))?;
    let size = source.size();
    let keep = options.eager.then_some(source);
    Ok((model, Shard::new(name, path, size, options.mapping, keep)))
}

/// The parts of a llama.cpp split file name: `<prefix>-<no>-of-<count>.gguf`, with
/// `no` counting from 1.
fn split_name(path: &Path) -> Option<(&str, u64, u64)> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_suffix(".gguf")?;
    let (rest, count) = stem.rsplit_once("-of-")?;
    let (prefix, no) = rest.rsplit_once('-')?;
    let digits = |s: &str| s.len() == 5 && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(no) || !digits(count) || prefix.is_empty() {
        return None;
    }
    Some((prefix, no.parse().ok()?, count.parse().ok()?))
}

/// The file of split `no` (from 0) of `count` next to `path`.
fn split_path(path: &Path, prefix: &str, no: u64, count: u64) -> PathBuf {
    path.with_file_name(format!("{prefix}-{:05}-of-{count:05}.gguf", no + 1))
}

/// Opens the split set `path` (already parsed into `model` through `source`) is one file
/// of: every split of it, named as llama.cpp names them, checked to agree on the count
/// and on their own numbers, their tensors adding up to `split.tensors.count`. The set's
/// attributes are the first split's key/values.
pub(crate) fn open_split(
    path: &Path,
    source: Source<'static>,
    model: Model,
    options: SetOptions,
    limits: &Limits,
) -> Result<(Model, Shards)> {
    let split = model.split.expect("a split file");
    let shown = path.display();
    let Some((prefix, name_no, name_count)) = split_name(path) else {
        bail!(
            Format,
            "{shown} is split {} of {} (split.no {}), but its name is not \
             <name>-<NNNNN>-of-<NNNNN>.gguf, so the other splits can't be found",
            split.no + 1,
            split.count,
            split.no
        );
    };
    if split.no >= split.count || name_count != split.count || name_no != split.no + 1 {
        bail!(
            Format,
            "{shown} says it is split {} of {} (split.no {}, split.count {}), which its \
             name contradicts",
            split.no + 1,
            split.count,
            split.no,
            split.count
        );
    }
    let mut given = Some((source, model));
    let mut parts = Vec::with_capacity(split.count as usize);
    let mut shards = Vec::with_capacity(split.count as usize);
    let mut names = Vec::with_capacity(split.count as usize);
    for no in 0..split.count {
        let file = split_path(path, prefix, no, split.count);
        let name = file
            .file_name()
            .and_then(|n| n.to_str())
            .expect("made from a UTF-8 name")
            .to_owned();
        let (part, shard) = if no == split.no {
            let (source, model) = given.take().expect("the given split once");
            let size = source.size();
            (model, Shard::new(&name, file.clone(), size, options.mapping, Some(source)))
        } else {
            parse_shard(&name, file.clone(), options, limits, None)?
        };
        match part.split {
            Some(s) if s.no == no && s.count == split.count && s.tensors == split.tensors => {}
            Some(s) => bail!(
                Format,
                "{}: split.no {}, split.count {}, split.tensors.count {}, where the set \
                 of {shown} needs split.no {no}, split.count {}, split.tensors.count {}",
                file.display(),
                s.no,
                s.count,
                shown_count(s.tensors),
                split.count,
                shown_count(split.tensors)
            ),
            None => bail!(
                Format,
                "{}: has no split.no / split.count keys, so it is not split {} of the set \
                 of {shown}",
                file.display(),
                no + 1
            ),
        }
        parts.push(part);
        shards.push(shard);
        names.push(name);
    }
    let total: u64 = parts.iter().map(|p| p.objects.len() as u64).sum();
    if let Some(declared) = split.tensors
        && declared != total
    {
        bail!(
            Format,
            "{shown}: split.tensors.count is {declared}, but the {} splits hold {total} tensors",
            split.count
        );
    }
    let attributes = parts[0].attributes.clone();
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    let model = merge(parts, &names, attributes)?;
    Ok((model, Shards::new(shards)))
}

fn shown_count(n: Option<u64>) -> String {
    n.map_or_else(|| "absent".to_owned(), |n| n.to_string())
}

/// One model of the parts' objects, in shard order, each blob marked with its shard.
/// The parts must be one container; a name in two shards is refused, naming both.
fn merge(parts: Vec<Model>, names: &[&str], attributes: Option<Attributes>) -> Result<Model> {
    let Some(first) = parts.first() else {
        bail!(Format, "the set has no files");
    };
    let (container, traits, data_offset) = (first.container, first.traits, first.data_offset);
    let version = first.version.as_str().to_owned();
    let total: usize = parts.iter().map(|p| p.objects.len()).sum();
    let mut objects: Vec<Object> = Vec::with_capacity(total);
    let mut regions = HashMap::new();
    let mut starts = Vec::with_capacity(parts.len());
    for (i, part) in parts.into_iter().enumerate() {
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
        let base = objects.len();
        starts.push(base);
        for ((o, c), region) in part.digest_regions {
            regions.insert((base + o, c), region);
        }
        for mut o in part.objects {
            for c in o.components.iter_mut() {
                c.blob.file = i as u32;
            }
            objects.push(o);
        }
    }
    if NameIndex::build(&objects).is_err() {
        let shard_of = |at: usize| names[starts.partition_point(|&s| s <= at) - 1];
        let mut seen: HashMap<&str, usize> = HashMap::with_capacity(objects.len());
        for (at, o) in objects.iter().enumerate() {
            if let Some(before) = seen.insert(o.name(), at) {
                bail!(
                    Format,
                    "tensor '{}' is in both {} and {}",
                    o.name(),
                    shard_of(before),
                    shard_of(at)
                );
            }
        }
    }
    let mut model = Model::new(container, traits, &version, attributes, objects)?;
    model.digest_regions = regions;
    model.data_offset = data_offset;
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_names_are_llama_cpps() {
        let p = Path::new("/m/llama-7b-00002-of-00003.gguf");
        assert_eq!(split_name(p), Some(("llama-7b", 2, 3)));
        assert_eq!(
            split_path(p, "llama-7b", 0, 3),
            Path::new("/m/llama-7b-00001-of-00003.gguf")
        );
        for bad in [
            "x-2-of-3.gguf",
            "x-00002-of-00003.safetensors",
            "-00002-of-00003.gguf",
            "x-0000a-of-00003.gguf",
        ] {
            assert_eq!(split_name(Path::new(bad)), None, "{bad}");
        }
    }

    #[test]
    fn index_paths_stay_inside_the_directory() {
        assert_eq!(check_relative("model-00001-of-00002.safetensors"), Ok(()));
        assert_eq!(check_relative("./sub/a.zt"), Ok(()));
        for bad in ["", "../x", "a/../../x", "/etc/passwd", "a\0b"] {
            assert!(check_relative(bad).is_err(), "{bad:?}");
        }
    }
}
