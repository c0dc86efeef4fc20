//! The shards of a set parsed in parallel: while an index is read (each shard started as
//! its first entry is met, checked against its entries once the whole index is read), or
//! all known at once (a GGUF split set). Local shards are parsed on the library's pool;
//! remote ones, which wait on the network rather than on cores, on the I/O helper's threads
//! (`pool::io_scope`), as many as the place's requests in flight.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

use crate::error::{Result, err};
use crate::limits::Limits;
use crate::model::Model;

use super::hf_index_json::{Index, WeightMap};
use super::{SetOptions, Shard, check_relative, lists_every_object_once};

/// Work handed to a thread.
type Job<'p> = Box<dyn FnOnce() + Send + 'p>;

/// Runs `read` (see `pipelined`), starting a worker (`spawn`) for each shard found while
/// fewer than `most.0` run, then up to `most.1` once the index is read, then (with
/// `help`) parses shards on this thread too: the last shards left to one worker would
/// leave a core idle. Workers end when no shard is left to take, so none ever waits.
fn read_while_parsing<'p, 't>(
    pipe: &'p Pipeline<'_, 't>,
    found: &mut Found,
    read: impl FnOnce(&mut dyn FnMut(&str, &str)) -> Result<Index<'t>>,
    most: (usize, usize),
    help: bool,
    spawn: &mut dyn FnMut(Job<'p>),
) -> Result<std::result::Result<Option<&'t str>, Index<'t>>> {
    let read = read(&mut |name, file| {
        if found.entry(pipe, name, file) && pipe.want_worker(most.0.max(1)) {
            spawn(Box::new(|| pipe.work()));
        }
    });
    pipe.start_workers(most.1, spawn);
    let metadata = match read {
        Ok(index) if index.streamed && found.refused.is_none() => {
            let grouped = Grouped::new(index.weight_map, &found.of_entry, found.files.len());
            let _ = pipe.read.set(grouped);
            Ok(Ok(index.metadata))
        }
        read => {
            pipe.update(|s| s.failed = true);
            read.map(|index| match index.streamed {
                true => Ok(index.metadata),
                false => Err(index),
            })
        }
    };
    if help && pipe.want_worker(usize::MAX) {
        pipe.work();
    }
    metadata
}

/// A shard parsed by a worker: its model, the shard, and whether it agreed with the
/// index's entries for it (None when the index was not read yet when it was parsed).
pub(super) type Parsed = (Model, Shard, Option<bool>);

/// What `pipelined` gives: the index's metadata text, the shards found, their parsed
/// models (by number as found) and the weight map.
pub(super) struct Run<'t> {
    pub(super) metadata: Option<&'t str>,
    pub(super) found: Found,
    pub(super) results: Vec<Option<Result<Parsed>>>,
    pub(super) grouped: Grouped<'t>,
}

/// How an index's reading ended.
pub(super) enum Piped<'t> {
    /// Its shards found and parsed (or left after a failure).
    Run(Box<Run<'t>>),
    /// Its `weight_map` key was repeated: the map is the last one, not the one whose
    /// shards were found; it is to be read again (`Index::streamed`).
    Again(Index<'t>),
}

/// Reads an index with `read` (which reports every entry of the weight map in order,
/// then gives the index) while the shards it names are parsed by workers as they are
/// found, each checked against its entries once the whole index is read. An index that
/// can't be read is the error (once the parsing stopped).
pub(super) fn pipelined<'t>(
    dir: &Path,
    options: SetOptions,
    limits: &Limits,
    read: impl FnOnce(&mut dyn FnMut(&str, &str)) -> Result<Index<'t>>,
) -> Result<Piped<'t>> {
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
        Some(n) => crate::pool::io_scope(|spawn| {
            read_while_parsing(&pipe, &mut found, read, (n, n), false, spawn)
        }),
        None => crate::pool::scope(|spawn| {
            // While this thread reads the index, up to one fewer than the pool's threads
            // (a thread more would slow the reading that finds the shards), then all.
            let cores = crate::pool::threads();
            read_while_parsing(&pipe, &mut found, read, (cores - 1, cores), true, spawn)
        }),
    }?;
    let metadata = match metadata {
        Ok(metadata) => metadata,
        Err(index) => return Ok(Piped::Again(index)),
    };
    if let Some((name, file, why)) = found.refused {
        return Err(err!(
            Format,
            "the index maps tensor '{name}' to '{file}', {why}"
        ));
    }
    let Pipeline { state, read, .. } = pipe;
    let state = state.into_inner().unwrap_or_else(|p| p.into_inner());
    Ok(Piped::Run(Box::new(Run {
        metadata,
        found,
        results: state.results,
        grouped: read.into_inner().expect("set when nothing was refused"),
    })))
}

/// The shards an index names, as its entries are read: numbered as first met (entries
/// of one file come in runs, so a map lookup only where the file changes), each handed
/// to the pipeline once; the first file that may not be opened is kept for the error.
#[derive(Default)]
pub(super) struct Found {
    ids: HashMap<String, u32>,
    pub(super) files: Vec<String>,
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
pub(super) struct Grouped<'t> {
    pub(super) weight_map: WeightMap<'t>,
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
    pub(super) fn agrees(&self, i: usize, model: &Model) -> bool {
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

/// Parses the shards `names` (relative to `dir`) on the workers `open_index` uses, all
/// known at once: each result in `names`' order, `None` for a shard left after a failure
/// (the caller parses it when it gets there, so that its error is the first in order).
pub(super) fn parse_listed(
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
        Some(n) => crate::pool::io_scope(|spawn| pipe.start_workers(n, spawn)),
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
pub(super) fn parse_shard(
    name: &str,
    path: PathBuf,
    options: SetOptions,
    limits: &Limits,
) -> Result<(Model, Shard)> {
    // Parsing reads the header only: without a mapping unless the shard stays open.
    let source =
        (options.open_part(name, &path)).map_err(|e| e.context(format_args!("shard {name}")))?;
    let model = super::parse(&source, limits).map_err(|e| e.context(path.display()))?;
    Ok((model, options.shard(name, path, source)))
}
