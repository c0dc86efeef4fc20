//! llama.cpp's GGUF split sets (`name-00001-of-00003.gguf`): each file says where it
//! sits with `split.no`, `split.count` and `split.tensors.count`.

use std::path::{Path, PathBuf};

use crate::error::{Result, bail};
use crate::limits::Limits;
use crate::model::Model;
use crate::source::Source;

use super::parse_shards::{parse_listed, parse_shard};
use super::{Held, SetOptions, Shard, Shards, merge};

/// The parts of a llama.cpp split file name: `<prefix>-<no>-of-<count>.gguf`, with
/// `no` counting from 1.
pub(super) fn split_name(path: &Path) -> Option<(&str, u64, u64)> {
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
pub(super) fn split_path(path: &Path, prefix: &str, no: u64, count: u64) -> PathBuf {
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
    let files: Vec<PathBuf> = (0..split.count)
        .map(|no| split_path(path, prefix, no, split.count))
        .collect();
    let names: Vec<String> = files
        .iter()
        .map(|f| {
            let name = f.file_name().and_then(|n| n.to_str());
            name.expect("made from a UTF-8 name").to_owned()
        })
        .collect();
    // The other splits, parsed in parallel.
    let others: Vec<&str> = (0..split.count as usize)
        .filter(|&no| no as u64 != split.no)
        .map(|no| names[no].as_str())
        .collect();
    let dir = path.parent().unwrap_or(Path::new(""));
    let mut parsed = parse_listed(dir, &others, options, limits).into_iter();
    for no in 0..split.count {
        let (file, name) = (&files[no as usize], &names[no as usize]);
        let (part, shard) = if no == split.no {
            let (source, model) = given.take().expect("the given split once");
            let size = source.size();
            (
                model,
                Shard::new(
                    name,
                    file.clone(),
                    size,
                    options.mapping,
                    Held::Open(source),
                ),
            )
        } else {
            match parsed.next().expect("one result per other split") {
                Some(result) => result?,
                None => parse_shard(name, file.clone(), options, limits)?,
            }
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
