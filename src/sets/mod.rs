//! Sets of files read as one, and the one place a reader's files are opened from: a
//! `Place` (local paths, or a remote directory) and what the file named there is. A Hugging
//! Face style index (`*.index.json`: `weight_map` from tensor name to file, `metadata` for
//! the whole set; `hf_index.rs`, its JSON read by `hf_index_json.rs`), which serves safetensors, zTensor and PyTorch shards alike;
//! llama.cpp's GGUF splits (`name-00001-of-00003.gguf`, each file saying where it sits
//! with `split.no`, `split.count` and `split.tensors.count`; `split.rs`); the files an ONNX
//! model keeps external data in (`external.rs`); a zTensor v2 root's shard table
//! (`v2.rs`); or one file alone. `open` decides which.
//!
//! Every shard is parsed here, through the format that recognises it, and its model
//! validated against its own file (in parallel: `parse_shards.rs`); the merged model
//! (`merge.rs`) lists every shard's objects under their own names, each blob saying which
//! shard holds it (`Blob::file`). A local set's files are opened beneath the directory of
//! the file opened (or, through links, beneath the directory that file really is in,
//! when it was opened through a link: a Hugging Face cache snapshot), once each, and read
//! only through those descriptors (`dir.rs`: the rule, links included); a shard parsed at open stays open, mapped when first read
//! unless the caller maps every shard at open (`files.rs`). Whatever the index says is
//! checked against the shards: a tensor it maps to a shard that lacks it, a shard
//! holding a tensor the index doesn't map there, a name in two shards, a file outside the
//! index's directory, a missing file, splits that disagree on their count are all errors
//! naming the file.

use std::path::Path;
use std::sync::Arc;

use crate::error::Result;
use crate::limits::Limits;
use crate::model::Model;
use crate::source::{Mapping, Source};

mod dir;
mod external;
mod files;
mod hf_index;
mod hf_index_json;
mod merge;
mod parse_shards;
mod place;
mod split;
mod v2;

pub(crate) use external::refuse_external;
pub(crate) use files::{Files, Held, Shard, Shards};
pub(crate) use place::Place;

use crate::formats::check_relative;
use dir::Dir;
use hf_index::{is_index, lists_every_object_once};
use merge::merge;

/// How a reader's files are opened.
#[derive(Clone, Copy)]
pub(crate) struct SetOptions<'p> {
    /// Where its files are opened (local paths, or URLs in one remote directory).
    pub(crate) place: &'p Place,
    /// How each file is mapped when it is read.
    pub(crate) mapping: Mapping,
    /// Keep every shard a set's open parses open (and mapped) from the open on, instead
    /// of reopening it when first read.
    pub(crate) eager: bool,
    /// Open every shard of a zTensor v2 root at open, instead of on first read.
    pub(crate) open_all: bool,
    /// Open only the file named, even when it is an index or one split of a GGUF split
    /// set.
    pub(crate) one_file: bool,
    /// The directory a local set's files are opened beneath (set by `open` once the
    /// file named is open); None for a remote place.
    pub(crate) dir: Option<&'p Arc<Dir>>,
}

impl<'p> SetOptions<'p> {
    /// Opens the file `name` of the set (at `path`: `name` relative to the set's
    /// directory) to read its header: beneath the directory for a local set, at the
    /// place for a remote one; mapped only when it is mapped at open.
    fn open_part(&self, name: &str, path: &Path) -> Result<Source<'static>> {
        let mapping = if self.eager {
            self.mapping
        } else {
            Mapping::None
        };
        match self.dir {
            Some(dir) => dir.open(name, mapping),
            None => self.place.open(path, mapping),
        }
    }

    /// The shard of a file opened by `open_part`: its source kept as it is when it was
    /// mapped at open or is never mapped, else its descriptor, mapped when first read.
    fn shard(&self, name: &str, path: std::path::PathBuf, source: Source<'static>) -> Shard {
        let size = source.size();
        let held = if self.eager || self.mapping == Mapping::None {
            Held::Open(source)
        } else {
            match source.into_file() {
                Ok(file) => Held::File(file),
                Err(source) => Held::Open(source),
            }
        };
        Shard::new(name, path, size, self.mapping, held)
    }

    /// These options with `dir` as the set's directory.
    fn beneath<'d>(self, dir: Option<&'d Arc<Dir>>) -> SetOptions<'d>
    where
        'p: 'd,
    {
        SetOptions { dir, ..self }
    }
}

/// The directory of the local file at `path` (open as `source`) that its set's files are
/// opened beneath; None for a remote place.
fn set_dir(path: &Path, source: &Source<'_>, place: &Place) -> Result<Option<Arc<Dir>>> {
    match place {
        Place::Local => Ok(Some(Arc::new(Dir::of(path, source)?))),
        #[cfg(feature = "remote")]
        Place::Remote(_) => Ok(None),
    }
}

/// Opens what `path` names in `options.place`: the set an index describes, the whole
/// split set one GGUF split belongs to, a model with its external data files, a zTensor
/// v2 root with its shards, or the one file. `shown` names it in messages.
pub(crate) fn open(
    path: &Path,
    shown: &str,
    options: SetOptions,
    limits: &Limits,
) -> Result<(Model, Files<'static>)> {
    let set = |(model, shards)| (model, Files::Set(Box::new(shards)));
    if is_index(path) && !options.one_file {
        let opened = hf_index::open_index(path, options, limits).map_err(|e| e.context(shown))?;
        return Ok(set(opened));
    }
    let source = options.place.open_named(path, options.mapping)?;
    let model = parse(&source, limits)
        .map_err(|e| json_by_path(e, &source))
        .map_err(|e| e.context(shown))?;
    let split = model.split.is_some_and(|s| s.count > 1) && !options.one_file;
    if model.external.is_empty() && !split && model.v2_shards.is_empty() {
        return Ok((model, Files::One(source)));
    }
    let dir = set_dir(path, &source, options.place).map_err(|e| e.context(shown))?;
    let options = options.beneath(dir.as_ref());
    Ok(if !model.external.is_empty() {
        set(external::open_external(path, source, model, options).map_err(|e| e.context(shown))?)
    } else if split {
        set(split::open_split(path, source, model, options, limits)?)
    } else {
        let shards = v2::open_set(path, source, &model, options).map_err(|e| e.context(shown))?;
        (model, Files::Set(Box::new(shards)))
    })
}

/// A JSON file opened by path that is no set's index (`config.json`, `tokenizer.json`, an
/// index under another name): says what to open by path instead of `read_model`'s note on
/// descriptors and memory, which this open used neither of.
fn json_by_path(e: crate::error::Error, source: &Source<'_>) -> crate::error::Error {
    if e.kind() != crate::error::ErrorKind::Format {
        return e;
    }
    let Ok(head) = source.parse_region(0, source.size().min(16)) else {
        return e;
    };
    if !head.trim_ascii_start().starts_with(b"{") {
        return e;
    }
    crate::error::err!(
        Format,
        "a JSON file, not a tensor file (it starts {}): a model's configuration \
         (config.json, tokenizer.json ...) holds no tensors; open its weights \
         (*.safetensors, *.gguf, *.bin ...) by their paths, or a sharded set by the path \
         of its *.index.json",
        crate::formats::printable(&head[..head.len().min(8)])
    )
}

/// Parses a file's model through the format that recognises it.
pub(crate) fn parse(source: &Source<'_>, limits: &Limits) -> Result<Model> {
    let read = |offset: u64, len: u64| source.parse_region(offset, len);
    crate::formats::read_model(&read, source.size(), limits)
}

#[cfg(test)]
mod tests;
