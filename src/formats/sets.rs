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
use std::sync::{Mutex, OnceLock};

use crate::error::{Result, bail, err};
use crate::limits::Limits;
use crate::model::{Attributes, DigestRegions, Model, NameIndex, Object};
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
    // UTF-8 checked once for the whole text (a string at a time costs more: an index
    // holds tens of thousands of short strings).
    let Ok(text) = std::str::from_utf8(&bytes) else {
        bail!(Format, "the index is not UTF-8 text");
    };
    let dir = index.parent().unwrap_or(Path::new("."));
    // The common index is scanned while its shards are parsed; any other goes through
    // serde_json first (which says what is wrong with a broken one).
    let run = match pipelined(dir, options, limits, |entry| scan_index(text, entry)) {
        Some(run) => run?,
        None => {
            let (metadata, weight_map) = parse_index(text)?;
            let read = |entry: &mut dyn FnMut(&str, &str)| {
                for (name, file) in &weight_map {
                    entry(name, file);
                }
                Some((metadata, weight_map))
            };
            pipelined(dir, options, limits, read).expect("a parsed index is read")?
        }
    };
    let attributes = metadata_attributes(run.metadata, limits)?;
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

/// Work handed to a thread.
type Job<'p> = Box<dyn FnOnce() + Send + 'p>;

/// Runs `body` with a way to start work on threads of its own (for work that waits on
/// the network, not on cores); returns when all have ended.
fn own_threads<'p, R>(body: impl FnOnce(&mut dyn FnMut(Job<'p>)) -> R) -> R {
    std::thread::scope(|scope| {
        body(&mut |job: Job<'p>| {
            scope.spawn(job);
        })
    })
}

/// Runs `read` (see `pipelined`), starting a worker (`spawn`) for each shard found while
/// fewer than `most.0` run, then up to `most.1` once the index is read, then (with
/// `help`) parses shards on this thread too: the last shards left to one worker would
/// leave a core idle. Workers end when no shard is left to take, so none ever waits.
fn read_while_parsing<'p, 't>(
    pipe: &'p Pipeline<'_, 't>,
    found: &mut Found,
    read: impl FnOnce(&mut dyn FnMut(&str, &str)) -> Option<(Option<&'t str>, WeightMap<'t>)>,
    most: (usize, usize),
    help: bool,
    spawn: &mut dyn FnMut(Job<'p>),
) -> Option<Option<&'t str>> {
    let read = read(&mut |name, file| {
        if found.entry(pipe, name, file) && pipe.want_worker(most.0.max(1)) {
            spawn(Box::new(|| pipe.work()));
        }
    });
    pipe.start_workers(most.1, spawn);
    let metadata = match read {
        Some((metadata, weight_map)) if found.refused.is_none() => {
            let grouped = Grouped::new(weight_map, &found.of_entry, found.files.len());
            let _ = pipe.read.set(grouped);
            Some(metadata)
        }
        read => {
            pipe.update(|s| s.failed = true);
            read.map(|(metadata, _)| metadata)
        }
    };
    if help && pipe.want_worker(usize::MAX) {
        pipe.work();
    }
    metadata
}

/// A shard parsed by a worker: its model, the shard, and whether it agreed with the
/// index's entries for it (None when the index was not read yet when it was parsed).
type Parsed = (Model, Shard, Option<bool>);

/// What `pipelined` gives: the index's metadata text, the shards found, their parsed
/// models (by number as found) and the weight map.
struct Run<'t> {
    metadata: Option<&'t str>,
    found: Found,
    results: Vec<Option<Result<Parsed>>>,
    grouped: Grouped<'t>,
}

/// Reads an index with `read` (which reports every entry of the weight map in order,
/// then gives the metadata's text and the weight map, or `None` when it can't read this
/// index) while the shards it names are parsed by workers as they are found, each
/// checked against its entries once the whole index is read. `None` when `read` gave up (after the parsing stopped).
fn pipelined<'t>(
    dir: &Path,
    options: SetOptions,
    limits: &Limits,
    read: impl FnOnce(&mut dyn FnMut(&str, &str)) -> Option<(Option<&'t str>, WeightMap<'t>)>,
) -> Option<Result<Run<'t>>> {
    let pipe = Pipeline {
        dir,
        options,
        limits,
        state: Mutex::new(PipeState::default()),
        read: OnceLock::new(),
    };
    let mut found = Found::default();
    // Remote shards wait on the network, not on cores: they are parsed on threads of
    // their own, as many as requests in flight; local ones on the library's pool.
    let remote = options.place.parallel_opens();
    let metadata = match remote {
        Some(n) => {
            own_threads(|spawn| read_while_parsing(&pipe, &mut found, read, (n, n), false, spawn))
        }
        None => crate::pool::scope(|spawn| {
            // While this thread reads the index, up to one fewer than the pool's threads
            // (a thread more would slow the reading that finds the shards), then all.
            let cores = crate::pool::threads();
            read_while_parsing(&pipe, &mut found, read, (cores - 1, cores), true, spawn)
        }),
    }?;
    if let Some((name, file, why)) = found.refused {
        return Some(Err(err!(
            Format,
            "the index maps tensor '{name}' to '{file}', {why}"
        )));
    }
    let Pipeline { state, read, .. } = pipe;
    let state = state.into_inner().unwrap_or_else(|p| p.into_inner());
    Some(Ok(Run {
        metadata,
        found,
        results: state.results,
        grouped: read.into_inner().expect("set when nothing was refused"),
    }))
}

/// The shards an index names, as its entries are read: numbered as first met (entries
/// of one file come in runs, so a map lookup only where the file changes), each handed
/// to the pipeline once; the first file that may not be opened is kept for the error.
#[derive(Default)]
struct Found {
    ids: HashMap<String, u32>,
    files: Vec<String>,
    of_entry: Vec<u32>,
    last: Option<u32>,
    refused: Option<(String, String, &'static str)>,
}

impl Found {
    /// Notes an entry; true when its file is new (and handed to the pipeline).
    fn entry(&mut self, pipe: &Pipeline<'_, '_>, name: &str, file: &str) -> bool {
        let mut new = false;
        let id = match self.last {
            Some(id) if self.files[id as usize] == file => id,
            _ => {
                let id = match self.ids.get(file) {
                    Some(&id) => id,
                    None => {
                        new = true;
                        self.found(pipe, name, file)
                    }
                };
                self.last = Some(id);
                id
            }
        };
        self.of_entry.push(id);
        new
    }

    /// A file not met before: handed to the pipeline, or kept as the error.
    fn found(&mut self, pipe: &Pipeline<'_, '_>, name: &str, file: &str) -> u32 {
        let id = self.files.len() as u32;
        self.ids.insert(file.to_owned(), id);
        self.files.push(file.to_owned());
        match check_relative(file) {
            Ok(()) => pipe.update(|s| s.files.push(Some(file.to_owned()))),
            Err(why) => {
                self.refused
                    .get_or_insert_with(|| (name.to_owned(), file.to_owned(), why));
                pipe.update(|s| {
                    s.files.push(None);
                    s.failed = true;
                });
            }
        }
        id
    }
}

/// The weight map with its entries grouped by shard (numbered as first met): the entries
/// of shard `i` are `entries[starts[i]..starts[i + 1]]`.
struct Grouped<'t> {
    weight_map: WeightMap<'t>,
    starts: Vec<usize>,
    entries: Vec<u32>,
}

impl<'t> Grouped<'t> {
    fn new(weight_map: WeightMap<'t>, of_entry: &[u32], files: usize) -> Grouped<'t> {
        let mut starts = vec![0usize; files + 1];
        for &id in of_entry {
            starts[id as usize + 1] += 1;
        }
        for i in 0..files {
            starts[i + 1] += starts[i];
        }
        let mut entries = vec![0u32; of_entry.len()];
        let mut fill = starts.clone();
        for (e, &id) in of_entry.iter().enumerate() {
            entries[fill[id as usize]] = e as u32;
            fill[id as usize] += 1;
        }
        Grouped {
            weight_map,
            starts,
            entries,
        }
    }

    /// Whether shard `i`'s model holds exactly the objects its entries name.
    fn agrees(&self, i: usize, model: &Model) -> bool {
        let mine = &self.entries[self.starts[i]..self.starts[i + 1]];
        let names = mine
            .iter()
            .map(|&e| self.weight_map[e as usize].0.as_bytes());
        lists_every_object_once(model, mine.len(), names)
    }
}

/// Shards parsed while the index that names them is read (see `open_index`).
struct Pipeline<'a, 't> {
    dir: &'a Path,
    options: SetOptions<'a>,
    limits: &'a Limits,
    state: Mutex<PipeState>,
    /// The index's entries by shard, once it is read.
    read: OnceLock<Grouped<'t>>,
}

#[derive(Default)]
struct PipeState {
    /// Shards as found (`None`: one that may not be opened).
    files: Vec<Option<String>>,
    /// The next of `files` to parse.
    next: usize,
    /// Workers running.
    workers: usize,
    /// A shard or the index failed: no new shard is started.
    failed: bool,
    results: Vec<Option<Result<Parsed>>>,
}

impl<'t> Pipeline<'_, 't> {
    fn update(&self, f: impl FnOnce(&mut PipeState)) {
        f(&mut self.state.lock().unwrap_or_else(|p| p.into_inner()));
    }

    /// Starts workers (`spawn`) while fewer than `most` run and shards wait.
    fn start_workers<'p>(&'p self, most: usize, spawn: &mut dyn FnMut(Job<'p>)) {
        while self.want_worker(most) {
            spawn(Box::new(|| self.work()));
        }
    }

    /// Whether a new worker should start (then counted as running): fewer than `most`
    /// run, and a shard waits that none of them has taken.
    fn want_worker(&self, most: usize) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|p| p.into_inner());
        let want = s.workers < most && s.next < s.files.len() && !s.failed;
        s.workers += usize::from(want);
        want
    }

    /// A worker (counted by `want_worker`): parses the shards found so far until none is
    /// left to take, then ends (a shard found later starts a worker of its own); each is
    /// checked against its entries when the index is read by then. After a failure no
    /// new shard is started.
    fn work(&self) {
        loop {
            let mut state = self.state.lock().unwrap_or_else(|p| p.into_inner());
            if state.failed || state.next == state.files.len() {
                state.workers -= 1;
                return;
            }
            let i = state.next;
            state.next += 1;
            let file = state.files[i]
                .clone()
                .expect("openable shards only, before a failure");
            drop(state);
            let path = self.dir.join(&file);
            let parsed = parse_shard(&file, path, self.options, self.limits);
            let result = parsed.map(|(model, shard)| {
                let agrees = self.agrees(i, &model);
                (model, shard, agrees)
            });
            self.update(|s| {
                s.failed |= result.is_err();
                if s.results.len() <= i {
                    s.results.resize_with(i + 1, || None);
                }
                s.results[i] = Some(result);
            });
        }
    }

    /// Whether shard `i` holds exactly the objects its entries name, when the index is
    /// read by now (`None` otherwise: the worker goes on to the next shard, and the
    /// check is left for after).
    fn agrees(&self, i: usize, model: &Model) -> Option<bool> {
        self.read.get().map(|g| g.agrees(i, model))
    }
}

/// True when `names` (`count` of them) are the names of `model`'s objects, each once.
fn lists_every_object_once<'n>(
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

/// A weight map as parsed: (tensor name, file) in the index's order, borrowed from the
/// index's text unless escaped.
type WeightMap<'t> = Vec<(Cow<'t, str>, Cow<'t, str>)>;

/// The index's `metadata` (its text) and its `weight_map` (an object of strings), parsed
/// by serde_json straight from the text, without a tree of the weight map.
fn parse_index(text: &str) -> Result<(Option<&str>, WeightMap<'_>)> {
    let mut de = serde_json::Deserializer::from_str(text);
    let index = serde::Deserialize::deserialize(&mut de)
        .and_then(|i: Index<'_>| de.end().map(|()| i))
        .map_err(|e| err!(Format, "the index is not JSON of the expected shape: {e}"))?;
    let Some(weight_map) = index.weight_map else {
        bail!(Format, "the index has no weight_map");
    };
    Ok((
        index.metadata.map(serde_json::value::RawValue::get),
        weight_map,
    ))
}

/// The index's `metadata` text, parsed as attributes are (key order kept).
fn metadata_attributes(metadata: Option<&str>, limits: &Limits) -> Result<Option<Attributes>> {
    Ok(match metadata {
        None | Some("null") => None,
        Some(text) => match crate::json::from_json(text, limits.max_cbor_depth) {
            Ok(value @ crate::cbor::Value::Map(_)) => Some(Attributes::from_value(&value)),
            Ok(_) => bail!(Format, "the index's metadata is not a JSON object"),
            Err(e) => bail!(Format, "the index's metadata: {e}"),
        },
    })
}

/// The common index, read without a parser's per-token work: a top-level object whose
/// `weight_map` is an object of strings without escapes or control characters, as every
/// writer of indexes writes it. Other values (the metadata, keys it doesn't know) are
/// delimited by serde_json. Anything else (an escape, a repeated key, a value of
/// another type, malformed text) is `None`, and the index is parsed by serde_json alone,
/// which says what is wrong: this path reads a subset of what that one reads, the same
/// way.
fn scan_index<'t>(
    text: &'t str,
    entry: &mut dyn FnMut(&str, &str),
) -> Option<(Option<&'t str>, WeightMap<'t>)> {
    let mut s = Scan { text, at: 0 };
    let (mut metadata, mut weight_map) = (None, None);
    s.byte(b'{')?;
    if s.byte(b'}').is_none() {
        loop {
            let key = s.string()?;
            s.byte(b':')?;
            if key == "weight_map" && weight_map.is_none() {
                weight_map = Some(s.pairs(entry)?);
            } else if key == "weight_map" || (key == "metadata" && metadata.is_some()) {
                return None;
            } else {
                let value = s.value()?;
                if key == "metadata" {
                    metadata = Some(value);
                }
            }
            if s.byte(b'}').is_some() {
                break;
            }
            s.byte(b',')?;
        }
    }
    s.ws();
    (s.at == text.len()).then_some((metadata, weight_map?))
}

/// True when `bytes` hold a control character (below 0x20), which JSON strings may not
/// hold raw: eight bytes at a time (a byte below 0x20 is one whose subtraction of 0x20
/// borrows while its top bit was clear).
fn has_control(bytes: &[u8]) -> bool {
    const LOW: u64 = 0x2020_2020_2020_2020;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut words = bytes.chunks_exact(8);
    for word in &mut words {
        let x = u64::from_le_bytes(word.try_into().expect("8 bytes"));
        if x.wrapping_sub(LOW) & !x & HIGH != 0 {
            return true;
        }
    }
    words.remainder().iter().any(|&b| b < 0x20)
}

/// A position in an index's text (see `scan_index`).
struct Scan<'t> {
    text: &'t str,
    at: usize,
}

impl<'t> Scan<'t> {
    fn ws(&mut self) {
        let bytes = self.text.as_bytes();
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = bytes.get(self.at) {
            self.at += 1;
        }
    }

    /// Past `b` after whitespace, or `None`.
    fn byte(&mut self, b: u8) -> Option<()> {
        self.ws();
        (self.text.as_bytes().get(self.at) == Some(&b)).then(|| self.at += 1)
    }

    /// A string without escapes or control characters, after whitespace.
    fn string(&mut self) -> Option<&'t str> {
        self.byte(b'"')?;
        let bytes = &self.text.as_bytes()[self.at..];
        let len = memchr::memchr2(b'"', b'\\', bytes)?;
        if bytes[len] != b'"' || has_control(&bytes[..len]) {
            return None;
        }
        // Quotes are ASCII: both ends are character boundaries of the text.
        let body = &self.text[self.at..self.at + len];
        self.at += len + 1;
        Some(body)
    }

    /// An object of such strings, as pairs in order.
    fn pairs(&mut self, entry: &mut dyn FnMut(&str, &str)) -> Option<WeightMap<'t>> {
        let mut pairs: WeightMap<'t> = Vec::new();
        self.byte(b'{')?;
        if self.byte(b'}').is_some() {
            return Some(pairs);
        }
        loop {
            let name = self.string()?;
            self.byte(b':')?;
            let file = self.string()?;
            // Grown fallibly: the index's size bounds the entries, not memory.
            if pairs.len() == pairs.capacity() && pairs.try_reserve(pairs.len().max(64)).is_err() {
                return None;
            }
            pairs.push((Cow::Borrowed(name), Cow::Borrowed(file)));
            entry(name, file);
            if self.byte(b'}').is_some() {
                return Some(pairs);
            }
            self.byte(b',')?;
        }
    }

    /// Any JSON value's text, delimited by serde_json.
    fn value(&mut self) -> Option<&'t str> {
        let mut de = serde_json::Deserializer::from_str(&self.text[self.at..]);
        let raw: &'t serde_json::value::RawValue = serde::Deserialize::deserialize(&mut de).ok()?;
        let value = raw.get();
        self.at = value.as_ptr() as usize - self.text.as_ptr() as usize + value.len();
        Some(value)
    }
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
pub(crate) fn check_relative(file: &str) -> std::result::Result<(), &'static str> {
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

/// Parses the shards `names` (relative to `dir`) on the workers `open_index` uses, all
/// known at once: each result in `names`' order, `None` for a shard left after a failure
/// (the caller parses it when it gets there, so that its error is the first in order).
fn parse_listed(
    dir: &Path,
    names: &[&str],
    options: SetOptions<'_>,
    limits: &Limits,
) -> Vec<Option<Result<(Model, Shard)>>> {
    let pipe = Pipeline {
        dir,
        options,
        limits,
        state: Mutex::new(PipeState {
            files: names.iter().map(|n| Some((*n).to_owned())).collect(),
            ..PipeState::default()
        }),
        read: OnceLock::new(),
    };
    match options.place.parallel_opens() {
        Some(n) => own_threads(|spawn| pipe.start_workers(n, spawn)),
        None => crate::pool::scope(|spawn| {
            pipe.start_workers(crate::pool::threads().saturating_sub(1), spawn);
            if pipe.want_worker(usize::MAX) {
                pipe.work();
            }
        }),
    }
    let mut results = pipe
        .state
        .into_inner()
        .unwrap_or_else(|p| p.into_inner())
        .results;
    results.resize_with(names.len(), || None);
    results
        .into_iter()
        .map(|r| r.map(|r| r.map(|(model, shard, _)| (model, shard))))
        .collect()
}

/// Opens one shard and parses it: closed again unless the set keeps its shards open.
fn parse_shard(
    name: &str,
    path: PathBuf,
    options: SetOptions,
    limits: &Limits,
) -> Result<(Model, Shard)> {
    // Parsing reads the header only: without a mapping unless the shard stays open.
    let mapping = if options.eager {
        options.mapping
    } else {
        Mapping::None
    };
    let source = (options.place.open(&path, mapping))
        .map_err(|e| e.context(format_args!("shard {name}")))?;
    let read = |offset: u64, len: u64| source.parse_region(offset, len);
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
                Shard::new(name, file.clone(), size, options.mapping, Some(source)),
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

/// Opens the files a model keeps some of its blobs in (ONNX external data) beside the
/// file at `path` (parsed into `model` through `source`): each named relative to that
/// file's directory, refused if it resolves (links followed) outside it, and every blob
/// checked to lie inside its file. The model's own file is shard 0.
pub(crate) fn open_external(
    path: &Path,
    source: Source<'static>,
    model: Model,
    options: SetOptions,
) -> Result<(Model, Shards)> {
    let dir = path.parent().unwrap_or(Path::new(""));
    let local = options.place.parallel_opens().is_none();
    let real_dir = if local {
        let shown = if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        };
        Some(
            shown
                .canonicalize()
                .map_err(|e| crate::error::Error::io(shown.display(), e))?,
        )
    } else {
        None
    };
    let own = path.file_name().and_then(|n| n.to_str()).unwrap_or("model");
    let mut shards = vec![Shard::new(
        own,
        path.to_path_buf(),
        source.size(),
        options.mapping,
        Some(source),
    )];
    for name in model.external.iter() {
        if let Err(why) = check_relative(name) {
            bail!(Format, "external data file {name:?} is {why}");
        }
        let file = dir.join(&**name);
        if let Some(real_dir) = &real_dir {
            let real = file.canonicalize().map_err(|e| {
                crate::error::Error::io(format_args!("external data file {}", file.display()), e)
            })?;
            if !real.starts_with(real_dir) {
                bail!(
                    Format,
                    "external data file {name:?} leads to {}, outside the model's directory {}",
                    real.display(),
                    real_dir.display()
                );
            }
        }
        let mapping = if options.eager {
            options.mapping
        } else {
            Mapping::None
        };
        let opened = (options.place.open(&file, mapping))
            .map_err(|e| e.context(format_args!("external data file {name}")))?;
        let size = opened.size();
        let keep = options.eager.then_some(opened);
        shards.push(Shard::new(name, file, size, options.mapping, keep));
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_found_in_any_position() {
        let plain: Vec<u8> = (0x20..=0xffu8).collect();
        assert!(!has_control(&plain));
        for len in 0..20 {
            for at in 0..len {
                for c in [0u8, 0x01, 0x0a, 0x1f] {
                    let mut bytes = vec![b'a'; len];
                    bytes[at] = c;
                    assert!(has_control(&bytes), "{c:#x} at {at} of {len}");
                }
                let mut bytes = vec![0x20u8; len];
                bytes[at] = 0xff;
                assert!(!has_control(&bytes));
            }
        }
    }

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
