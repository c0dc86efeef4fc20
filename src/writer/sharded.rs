//! Writing a sharded set: zTensor files `<base>-0000k-of-0000n.zt` of at most about
//! `max_shard_bytes` each, and the index `<base>.zt.index.json` in Hugging Face's shape
//! (`metadata` with `total_size`, `weight_map` from object name to file), which the
//! reader opens as one set. The writer is the one that writes a single file; only its
//! destination differs (`Shards`): before an object that would take the current shard
//! past the limit, the shard is finished as a file is and the writer goes on in a new
//! one. Durable as a single file is: every shard is written to a hidden temporary file,
//! synced, and named only at `finish`, the index last.

use std::collections::{BTreeMap, HashMap};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::ops::{Deref, DerefMut};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::foreign::{self, SplitKeys};
use super::output::TEMP_COUNTER;
use super::{CreateOptions, OutputFormat, Writer, temp_name};
use crate::error::{Error, Result, bail, err};
use crate::model::Attributes;

/// Where a set's files go: the shards finished so far (under temporary names until the
/// set is finished), and how the next one begins. Held by the writer of the current
/// shard (`Writer::set`).
pub(super) struct Shards<W: Write> {
    dir: PathBuf,
    stem: String,
    max_shard_bytes: u64,
    options: CreateOptions,
    /// Creates the writer of the next shard at a path.
    open: fn(&Path, &CreateOptions) -> Result<Writer<W>>,
    /// Finished shards under their temporary names.
    done: Vec<PathBuf>,
    /// The objects of the finished shards, each with the number of its shard in `done`.
    finished: HashMap<String, usize>,
    /// Decoded bytes of the objects of the finished shards (the index's `total_size`).
    total: u64,
    /// Every temporary shard was renamed: nothing to clean up.
    named: bool,
    /// The container the shards are (safetensors and GGUF shards are assembled at
    /// `finish`, when their count is known).
    format: OutputFormat,
    /// safetensors and GGUF: each finished shard's spool, assembled at `finish`.
    spooled: Vec<Spool>,
}

/// A safetensors or GGUF shard whose tensors are written, waiting for `finish` (its
/// header names the set's size).
pub(super) struct Spool {
    /// The temporary file the tensors are in.
    pub(super) temp: PathBuf,
    pub(super) file: File,
    pub(super) objects: Vec<crate::model::Object>,
    /// What its tensors were padded to.
    pub(super) align: u64,
}

impl<W: Write> Writer<W> {
    /// A finished shard of a safetensors or GGUF set: its spool kept (not removed) for
    /// the set's `finish`, with its objects; and the writer's output.
    pub(super) fn into_spool(mut self) -> Result<(Spool, W)> {
        self.settle()?;
        let label = &self.output.label;
        self.output
            .out
            .flush()
            .map_err(|e| Error::io(format_args!("{label}: flushing"), e))?;
        let mut target = self.target.take().expect("a path writer");
        target.done = true;
        let spool = Spool {
            temp: std::mem::take(&mut target.temp),
            file: self.spool.take().expect("a spool"),
            objects: std::mem::take(&mut self.objects),
            align: self.spool_align,
        };
        Ok((spool, self.output.out))
    }
}

impl Writer<BufWriter<File>> {
    /// A writer of a set at `base` (a path without extension, or ending in `.zt`, which is
    /// dropped): shards `<base>-0000k-of-0000n.zt` and the index `<base>.zt.index.json`,
    /// written at `finish`. Objects go to the current shard until adding one would take
    /// it past `max_shard_bytes` (then the shard is finished and a new one begun); an
    /// object larger than that gets a shard of its own. Names are unique across the set.
    /// Every method works as on a single file, except that the file's attributes become
    /// the index's `metadata` (JSON: values, not their widths), and an object's
    /// attributes can be set only while its shard is being written. `ShardedWriter` is
    /// the same writer with a `finish` that returns the index's path.
    pub fn create_sharded_with(
        base: impl AsRef<Path>,
        max_shard_bytes: u64,
        options: &CreateOptions,
    ) -> Result<Self> {
        let base = base.as_ref();
        if max_shard_bytes == 0 {
            bail!(InvalidArgument, "max_shard_bytes is 0");
        }
        let name = base
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| err!(InvalidArgument, "'{}' does not name a set", base.display()))?;
        let format = options.format.resolve(Some(base));
        let options = &CreateOptions { format, ..*options };
        let stem = name
            .strip_suffix(&format!(".{}", format.extension()))
            .unwrap_or(name);
        if stem.is_empty() || base.to_string_lossy().ends_with('/') {
            bail!(InvalidArgument, "'{}' does not name a set", base.display());
        }
        let dir = match base.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let set = Shards {
            dir,
            stem: stem.to_owned(),
            max_shard_bytes,
            options: *options,
            open: |path, options| Writer::create_with(path, options),
            done: Vec::new(),
            finished: HashMap::new(),
            total: 0,
            named: false,
            format,
            spooled: Vec::new(),
        };
        let mut w = set.open_next()?;
        w.set = Some(Box::new(set));
        Ok(w)
    }
}

impl<W: Write> Writer<W> {
    /// Before object `name` of about `size` bytes begins: in a set, the name must be new
    /// to the set, and when the object would take the current shard past the limit (or
    /// the shard is already there), the shard is finished and the writer goes on in a
    /// new one. A shard holds at least one object. Nothing to do for a single file.
    pub(super) fn make_room(&mut self, name: &str, size: u64) -> Result<()> {
        let Some(set) = &self.set else {
            return Ok(());
        };
        if set.holds(name) || self.by_name.contains_key(name) {
            bail!(
                InvalidArgument,
                "an object named '{name}' was already added to the set"
            );
        }
        let max = set.max_shard_bytes;
        // zstd frames still being compressed count too.
        self.settle()?;
        let pos = match self.format.spools() {
            true => self.spool_data,
            false => self.output.pos,
        };
        if self.objects.is_empty() || (pos.saturating_add(size) <= max && pos < max) {
            return Ok(());
        }
        let mut set = self.set.take().expect("a set");
        let next = match set.open_next() {
            Ok(next) => next,
            Err(e) => {
                self.set = Some(set);
                return Err(e);
            }
        };
        let mut full = std::mem::replace(self, next);
        self.file_attributes = full.file_attributes.take();
        let closed = set.close(full);
        self.set = Some(set);
        if let Err(e) = &closed {
            // A shard is lost: the set can't be finished.
            self.output.failed = Some(format!("finishing a shard: {}", e.message()));
            if let Some(target) = &mut self.target {
                target.discard();
            }
        }
        closed.map(drop)
    }
}

impl<W: Write> Shards<W> {
    /// The writer of the next shard, under a temporary name of its own.
    fn open_next(&self) -> Result<Writer<W>> {
        let name = format!(
            "{}-{:05}.{}.{}.zt-shard",
            self.stem,
            self.done.len() + 1,
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        let path = self.dir.join(temp_name(std::ffi::OsStr::new(&name)));
        (self.open)(&path, &self.options)
    }

    /// Finishes shard `w` (a file of its own, named at the set's `finish`) and records
    /// its objects.
    fn close(&mut self, w: Writer<W>) -> Result<W> {
        if self.format.spools() {
            let shard = self.spooled.len();
            let (spool, out) = w.into_spool()?;
            for o in &spool.objects {
                self.finished.insert(o.name().to_owned(), shard);
                self.total += o.components()[0].decoded_length();
            }
            self.spooled.push(spool);
            return Ok(out);
        }
        let path = w.target.as_ref().expect("a path writer").path.clone();
        let shard = self.done.len();
        let names: Vec<(String, usize)> = w
            .objects
            .iter()
            .map(|o| (o.name().to_owned(), shard))
            .collect();
        let size: u64 = (w.objects.iter().flat_map(|o| o.components()))
            .map(|c| c.decoded_length())
            .sum();
        let out = w.finish_file()?;
        self.finished.extend(names);
        self.total += size;
        self.done.push(path);
        Ok(out)
    }

    /// Whether `name` is an object of a finished shard.
    pub(super) fn holds(&self, name: &str) -> bool {
        self.finished.contains_key(name)
    }

    /// The index's path.
    fn index_path(&self) -> PathBuf {
        self.dir.join(format!("{}.zt.index.json", self.stem))
    }

    /// `Writer::finish` of a set whose last shard is `w`: finishes it, names every shard
    /// `<base>-0000k-of-0000n.zt`, then writes the index (the set's entry point) last,
    /// each durably unless the options say otherwise.
    pub(super) fn finish(mut self, mut w: Writer<W>) -> Result<(W, PathBuf)> {
        if self.done.is_empty() && self.spooled.is_empty() && w.objects.is_empty() {
            bail!(State, "a set needs at least one object");
        }
        let attributes = w.file_attributes.take();
        let out = self.close(w)?;
        if self.format.spools() {
            let path = self.finish_spooled(attributes.as_ref())?;
            return Ok((out, path));
        }
        let n = self.done.len();
        let mut files = Vec::with_capacity(n);
        for (k, temp) in self.done.iter().enumerate() {
            let file = format!("{}-{:05}-of-{n:05}.zt", self.stem, k + 1);
            let path = self.dir.join(&file);
            std::fs::rename(temp, &path).map_err(|e| {
                Error::io(
                    format_args!("renaming {} to {}", temp.display(), path.display()),
                    e,
                )
            })?;
            files.push(file);
        }
        self.named = true;
        // serde_json's map keeps its keys sorted: the order objects were added doesn't show
        let weight_map = (self.finished.iter())
            .map(|(name, &k)| (name.clone(), serde_json::Value::String(files[k].clone())))
            .collect();
        let index = self.index_json(attributes.as_ref(), weight_map)?;
        let path = self.index_path();
        let temp = self.dir.join(temp_name(path.file_name().expect("a name")));
        publish_index(&temp, &path, &index, self.options.durable)?;
        if self.options.durable
            && let Ok(d) = File::open(&self.dir)
        {
            let _ = d.sync_all();
        }
        Ok((out, path))
    }

    /// `finish` of a safetensors or GGUF set: each shard assembled from its spool (its
    /// header knows the set's size now), named `<base>-0000k-of-0000n.<ext>` (or
    /// `<base>.<ext>` when there is one), and for safetensors the index
    /// `<base>.safetensors.index.json` last, as transformers writes it. A GGUF set's
    /// key/values go to its first file with llama.cpp's `split.*` keys in every file;
    /// a safetensors set's `__metadata__` to every file. Returns the set's entry point:
    /// the index, or the first file.
    fn finish_spooled(&mut self, attributes: Option<&Attributes>) -> Result<PathBuf> {
        let n = self.spooled.len();
        let ext = self.format.extension();
        let gguf = self.format == OutputFormat::Gguf;
        let count = u16::try_from(n)
            .ok()
            .filter(|_| !gguf || n <= usize::from(u16::MAX));
        let tensors: usize = self.spooled.iter().map(|s| s.objects.len()).sum();
        let (Some(count), Ok(tensors)) = (count.or((!gguf).then_some(0)), i32::try_from(tensors))
        else {
            bail!(
                InvalidArgument,
                "a GGUF split set holds at most 65535 files and 2^31 - 1 tensors ({n} files, \
                 {tensors} tensors)"
            );
        };
        let mut files = Vec::with_capacity(n);
        let mut made = Vec::with_capacity(n);
        let result = (|| {
            for (k, spool) in self.spooled.iter().enumerate() {
                let file = match n {
                    1 => format!("{}.{ext}", self.stem),
                    _ => format!("{}-{:05}-of-{n:05}.{ext}", self.stem, k + 1),
                };
                let path = self.dir.join(&file);
                let dest = foreign::beside(&path);
                made.push(dest.clone());
                let split = (gguf && n > 1).then_some(SplitKeys {
                    no: k as u16,
                    count,
                    tensors,
                });
                let spooled = foreign::Spooled {
                    format: self.format,
                    spool: &spool.file,
                    objects: &spool.objects,
                    attributes: attributes.filter(|_| !gguf || k == 0),
                    split,
                    spool_align: spool.align,
                };
                foreign::assemble(&spooled, &dest, self.options.durable)?;
                if self.options.durable {
                    File::open(&dest)
                        .and_then(|f| f.sync_all())
                        .map_err(|e| Error::io(format_args!("syncing {}", dest.display()), e))?;
                }
                let _ = std::fs::remove_file(&spool.temp);
                files.push((dest, path, file));
            }
            Ok(())
        })();
        if let Err(e) = result {
            for temp in &made {
                let _ = std::fs::remove_file(temp);
            }
            return Err(e);
        }
        for (temp, path, _) in &files {
            std::fs::rename(temp, path).map_err(|e| {
                Error::io(
                    format_args!("renaming {} to {}", temp.display(), path.display()),
                    e,
                )
            })?;
        }
        self.named = true;
        let entry = if n > 1 && !gguf {
            let weight_map = (self.finished.iter())
                .map(|(name, &k)| (name.clone(), serde_json::Value::String(files[k].2.clone())))
                .collect();
            let index = self.index_json(None, weight_map)?;
            let path = self
                .dir
                .join(format!("{}.safetensors.index.json", self.stem));
            publish_index(&foreign::beside(&path), &path, &index, self.options.durable)?;
            path
        } else {
            files[0].1.clone()
        };
        if self.options.durable
            && let Ok(d) = File::open(&self.dir)
        {
            let _ = d.sync_all();
        }
        Ok(entry)
    }

    /// The index as transformers writes it: two-space indents, keys sorted, a newline.
    /// The set's attributes (`metadata`) keep their values, with `total_size` added unless
    /// given.
    fn index_json(
        &self,
        attributes: Option<&Attributes>,
        weight_map: serde_json::Map<String, serde_json::Value>,
    ) -> Result<String> {
        let metadata = attributes
            .map(|a| crate::value::json::to_json_value(&a.value()))
            .transpose()
            .map_err(|e| err!(Internal, "the set's attributes as JSON: {e}"))?;
        let mut metadata = match metadata {
            Some(serde_json::Value::Object(map)) => map,
            _ => serde_json::Map::new(),
        };
        metadata
            .entry("total_size")
            .or_insert(serde_json::Value::from(self.total));
        let doc: BTreeMap<&str, serde_json::Value> = BTreeMap::from([
            ("metadata", serde_json::Value::Object(metadata)),
            ("weight_map", serde_json::Value::Object(weight_map)),
        ]);
        let mut text = serde_json::to_string_pretty(&doc)
            .map_err(|e| err!(Internal, "writing the index: {e}"))?;
        text.push('\n');
        Ok(text)
    }
}

impl<W: Write> Drop for Shards<W> {
    /// An unfinished set leaves nothing behind: finished shards under their temporary
    /// names are removed (the current shard's writer removes its own).
    fn drop(&mut self) {
        if !self.named {
            for temp in &self.done {
                let _ = std::fs::remove_file(temp);
            }
            for spool in &self.spooled {
                let _ = std::fs::remove_file(&spool.temp);
            }
        }
    }
}

/// A set being written: the `Writer` of `Writer::create_sharded_with` (every method of
/// `Writer` works on it), whose `finish` returns the index's path.
#[derive(Debug)]
pub struct ShardedWriter(Writer);

impl ShardedWriter {
    /// A set at `base` (see `Writer::create_sharded_with`), durable (see
    /// `CreateOptions`).
    pub fn create(base: impl AsRef<Path>, max_shard_bytes: u64) -> Result<ShardedWriter> {
        Self::create_with(base, max_shard_bytes, &CreateOptions::default())
    }

    /// `create` with options.
    pub fn create_with(
        base: impl AsRef<Path>,
        max_shard_bytes: u64,
        options: &CreateOptions,
    ) -> Result<ShardedWriter> {
        Writer::create_sharded_with(base, max_shard_bytes, options).map(ShardedWriter)
    }

    /// `Writer::finish`: finishes the last shard, names every shard, writes the index
    /// last. Returns the index's path.
    pub fn finish(mut self) -> Result<PathBuf> {
        self.0.check_finishable()?;
        let set = self.0.set.take().expect("a set");
        (*set).finish(self.0).map(|(_, path)| path)
    }

    /// The writer itself.
    pub fn into_writer(self) -> Writer {
        self.0
    }
}

impl Deref for ShardedWriter {
    type Target = Writer;
    fn deref(&self) -> &Writer {
        &self.0
    }
}

impl DerefMut for ShardedWriter {
    fn deref_mut(&mut self) -> &mut Writer {
        &mut self.0
    }
}

/// Writes a set's index (`text`) to `temp`, synced when `durable`, and renames it to
/// `path`; on failure the temporary file is removed and nothing is at `path`.
fn publish_index(temp: &Path, path: &Path, text: &str, durable: bool) -> Result<()> {
    let written = (|| {
        let mut f = File::create(temp)?;
        f.write_all(text.as_bytes())?;
        if durable {
            f.sync_all()?;
        }
        std::fs::rename(temp, path)
    })();
    written.map_err(|e| {
        let _ = std::fs::remove_file(temp);
        Error::io(format_args!("writing {}", path.display()), e)
    })
}
