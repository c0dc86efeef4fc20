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

use std::borrow::Cow;
use std::collections::HashMap;
use std::path::{Component as PathPart, Path, PathBuf};

use crate::error::{Result, bail, err};
use crate::limits::Limits;
use crate::model::{Attributes, Model, NameIndex, Object};
use crate::source::{Mapping, Place, Shard, Shards, Source};

/// How a set's shards are opened.
#[derive(Clone, Copy)]
pub(crate) struct SetOptions<'p> {
    /// Where its files are opened (local paths, or URLs in one remote directory).
    pub(crate) place: &'p Place,
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
    let (attributes, weight_map) = parse_index(&bytes, limits)?;
    // The shards in name order (transformers numbers them, so that is their order).
    // Entries of one file come in runs: a set lookup only where the file changes,
    // instead of sorting every entry's file name.
    let mut seen = std::collections::HashSet::new();
    let mut files: Vec<&str> = Vec::new();
    let mut last: Option<&str> = None;
    for (_, f) in &weight_map {
        if last != Some(&**f) {
            if seen.insert(&**f) {
                files.push(f);
            }
            last = Some(f);
        }
    }
    drop(seen);
    files.sort_unstable();
    if files.len() > u32::MAX as usize {
        bail!(Limit, "the index names {} files", files.len());
    }
    for file in &files {
        if let Err(why) = check_relative(file) {
            let name = &weight_map
                .iter()
                .find(|(_, f)| f == file)
                .expect("listed")
                .0;
            bail!(Format, "the index maps tensor '{name}' to '{file}', {why}");
        }
    }
    let dir = index.parent().unwrap_or(Path::new("."));
    let jobs: Vec<(&str, PathBuf)> = files.iter().map(|f| (*f, dir.join(f))).collect();
    let parsed = parse_shards(&jobs, options, limits);
    let mut parts = Vec::with_capacity(files.len());
    let mut shards = Vec::with_capacity(files.len());
    for result in parsed {
        let (model, shard) = result?;
        parts.push(model);
        shards.push(shard);
    }
    let model = merge(parts, &files, attributes)?;
    check_weight_map(&model, &weight_map, &files)?;
    Ok((model, Shards::new(shards)))
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

/// A weight map as parsed: (tensor name, file) in the index's order, borrowed from the
/// index's text unless escaped.
type WeightMap<'t> = Vec<(Cow<'t, str>, Cow<'t, str>)>;

/// The index's `metadata` (as attributes) and its `weight_map`, checked: an object of
/// strings, each a relative path inside the index's directory. Parsed straight from the
/// text, without a tree of the weight map.
fn parse_index<'t>(
    bytes: &'t [u8],
    limits: &Limits,
) -> Result<(Option<Attributes>, WeightMap<'t>)> {
    // UTF-8 checked once for the whole text (a string at a time costs more: an index
    // holds tens of thousands of short strings).
    let Ok(text) = std::str::from_utf8(bytes) else {
        bail!(Format, "the index is not UTF-8 text");
    };
    let mut de = serde_json::Deserializer::from_str(text);
    let index = serde::Deserialize::deserialize(&mut de)
        .and_then(|i: Index<'t>| de.end().map(|()| i))
        .map_err(|e| err!(Format, "the index is not JSON of the expected shape: {e}"))?;
    let Some(weight_map) = index.weight_map else {
        bail!(Format, "the index has no weight_map");
    };
    // The metadata's own text, parsed as attributes are (key order kept).
    let attributes = match index.metadata.map(serde_json::value::RawValue::get) {
        None | Some("null") => None,
        Some(text) => match crate::json::from_json(text, limits.max_cbor_depth) {
            Ok(value @ crate::cbor::Value::Map(_)) => Some(Attributes::from_value(&value)),
            Ok(_) => bail!(Format, "the index's metadata is not a JSON object"),
            Err(e) => bail!(Format, "the index's metadata: {e}"),
        },
    };
    Ok((attributes, weight_map))
}

/// The index's top-level object: `metadata` as a JSON value, `weight_map` as pairs, other
/// keys skipped.
struct Index<'t> {
    metadata: Option<&'t serde_json::value::RawValue>,
    weight_map: Option<WeightMap<'t>>,
}

/// A JSON string, borrowed from the text when it has no escapes.
struct Text<'t>(Cow<'t, str>);

/// The weight map's pairs.
struct Pairs<'t>(WeightMap<'t>);

impl<'de> serde::Deserialize<'de> for Text<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Text<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_borrowed_str<E>(self, v: &'de str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(v)))
            }
            fn visit_str<E>(self, v: &str) -> std::result::Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(v.to_owned())))
            }
        }
        d.deserialize_str(V)
    }
}

impl<'de> serde::Deserialize<'de> for Pairs<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Pairs<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object of tensor names to file names")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Pairs<'de>, A::Error> {
                let mut pairs: WeightMap<'de> = Vec::new();
                while let Some((Text(k), Text(v))) = map.next_entry::<Text<'de>, Text<'de>>()? {
                    // Grown fallibly: the index's size bounds the entries, not memory.
                    if pairs.len() == pairs.capacity()
                        && pairs.try_reserve(pairs.len().max(64)).is_err()
                    {
                        return Err(serde::de::Error::custom("out of memory for the weight map"));
                    }
                    pairs.push((k, v));
                }
                Ok(Pairs(pairs))
            }
        }
        d.deserialize_map(V)
    }
}

impl<'de> serde::Deserialize<'de> for Index<'de> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Index<'de>;
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a JSON object (the index)")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(
                self,
                mut map: A,
            ) -> std::result::Result<Index<'de>, A::Error> {
                let mut index = Index {
                    metadata: None,
                    weight_map: None,
                };
                while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
                    match &*key {
                        "metadata" => {
                            index.metadata =
                                Some(map.next_value::<&'de serde_json::value::RawValue>()?)
                        }
                        "weight_map" => index.weight_map = Some(map.next_value::<Pairs<'de>>()?.0),
                        _ => {
                            map.next_value::<serde::de::IgnoredAny>()?;
                        }
                    }
                }
                Ok(index)
            }
        }
        d.deserialize_map(V)
    }
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

/// Parses every shard of `jobs` (name, path), on up to as many threads as there are
/// cores: the results in the jobs' order, up to the first failure (shards after it may
/// be left out).
fn parse_shards(
    jobs: &[(&str, PathBuf)],
    options: SetOptions,
    limits: &Limits,
) -> Vec<Result<(Model, Shard)>> {
    use std::sync::Mutex;
    use std::sync::atomic::{AtomicUsize, Ordering};
    // Remote shards wait on the network, not on cores: as many as requests in flight.
    let threads = (options.place.parallel_opens())
        .unwrap_or_else(crate::codec::threads)
        .min(jobs.len());
    if threads <= 1 {
        return jobs
            .iter()
            .map(|(name, path)| parse_shard(name, path.clone(), options, limits, None))
            .collect();
    }
    type Slot = Mutex<Option<Result<(Model, Shard)>>>;
    let results: Vec<Slot> = jobs.iter().map(|_| Mutex::new(None)).collect();
    let next = AtomicUsize::new(0);
    // After a failure no new shard is started: every shard before the failed one was
    // started (they are taken in order) and finishes, so a caller taking the results in
    // order meets an error before any shard left out.
    let failed = std::sync::atomic::AtomicBool::new(false);
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while !failed.load(Ordering::Relaxed) {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some((name, path)) = jobs.get(i) else {
                        break;
                    };
                    let r = parse_shard(name, path.clone(), options, limits, None);
                    if r.is_err() {
                        failed.store(true, Ordering::Relaxed);
                    }
                    *results[i].lock().unwrap_or_else(|p| p.into_inner()) = Some(r);
                }
            });
        }
    });
    results
        .into_iter()
        .map(|r| {
            r.into_inner()
                .unwrap_or_else(|p| p.into_inner())
                .unwrap_or_else(|| Err(err!(Internal, "a shard after a failed one was not parsed")))
        })
        .collect()
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
            let mapping = if options.eager {
                options.mapping
            } else {
                Mapping::None
            };
            (options.place.open(&path, mapping))
                .map_err(|e| e.context(format_args!("shard {name}")))?
        }
    };
    let read = |offset: u64, len: u64| source.region_checked(offset, len);
    let model =
        super::read_model(&read, source.size(), limits).map_err(|e| e.context(path.display()))?;
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
    let jobs: Vec<(&str, PathBuf)> = (0..split.count as usize)
        .filter(|&no| no as u64 != split.no)
        .map(|no| (names[no].as_str(), files[no].clone()))
        .collect();
    let mut parsed = parse_shards(&jobs, options, limits).into_iter();
    for no in 0..split.count {
        let (file, name) = (&files[no as usize], &names[no as usize]);
        let (part, shard) = if no == split.no {
            let (source, model) = given.take().expect("the given split once");
            let size = source.size();
            (
                model,
                Shard::new(name, file.clone(), size, options.mapping, Some(source)),
            )
        } else {
            parsed.next().expect("one result per job")?
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

/// One model of the parts' objects, in shard order, each blob marked with its shard.
/// The parts must be one container; a name in two shards is refused, naming both.
fn merge(parts: Vec<Model>, names: &[&str], attributes: Option<Attributes>) -> Result<Model> {
    let Some(first) = parts.first() else {
        bail!(Format, "the set has no files");
    };
    let (container, traits, data_offset) = (first.container, first.traits, first.data_offset);
    let version = first.version.clone();
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
    // The name index is built once; only a refused set pays for finding which shards
    // the duplicate is in.
    let by_name = match NameIndex::build(&objects) {
        Ok(index) => index,
        Err(e) => {
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
            return Err(e);
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
    })
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
