//! Writing a sharded set: zTensor files `<base>-0000k-of-0000n.zt` of at most about
//! `max_shard_bytes` each, and the index `<base>.zt.index.json` in Hugging Face's shape
//! (`metadata` with `total_size`, `weight_map` from object name to file), which the
//! reader opens as one set. Durable as the single writer is: every shard is written to
//! a hidden temporary file, synced, and named only at `finish`, the index last.

use std::collections::{BTreeMap, HashSet};
use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;

use super::{CopyOptions, CreateOptions, TEMP_COUNTER, WriteOptions, Writer, temp_name};
use crate::cbor::Value;
use crate::dtype::DType;
use crate::error::{Error, Result, bail, err};
use crate::model::Attributes;
use crate::reader::Reader;
use crate::typed::TypedValue;

/// A set being written. Objects go to the current shard until adding one would take it
/// past `max_shard_bytes` (then the shard is finished and a new one begun); an object
/// larger than that gets a shard of its own. Names are unique across the set. Used by
/// one thread at a time.
pub struct ShardedWriter {
    dir: PathBuf,
    stem: String,
    max_shard_bytes: u64,
    options: CreateOptions,
    /// The shard being written; None once finishing began or a shard failed to finish.
    current: Option<Writer>,
    /// Finished shards under their temporary names, and the objects each holds.
    done: Vec<(PathBuf, Vec<String>)>,
    /// The objects of the current shard, and every name in the set.
    names: Vec<String>,
    all: HashSet<String>,
    attributes: Option<Value>,
    /// Decoded bytes of every object added (the index's `total_size`).
    total: u64,
    /// Every temporary shard was renamed: nothing to clean up.
    named: bool,
}

impl std::fmt::Debug for ShardedWriter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ShardedWriter")
            .field("base", &self.dir.join(&self.stem))
            .field("shards", &(self.done.len() + 1))
            .finish()
    }
}

impl ShardedWriter {
    /// A set at `base` (a path without extension, or ending in `.zt`, which is dropped):
    /// shards `<base>-0000k-of-0000n.zt` and the index `<base>.zt.index.json`, written at
    /// `finish`. Durable (see `CreateOptions`).
    pub fn create(base: impl AsRef<Path>, max_shard_bytes: u64) -> Result<ShardedWriter> {
        Self::create_with(base, max_shard_bytes, &CreateOptions::default())
    }

    /// `create` with options.
    pub fn create_with(
        base: impl AsRef<Path>,
        max_shard_bytes: u64,
        options: &CreateOptions,
    ) -> Result<ShardedWriter> {
        let base = base.as_ref();
        if max_shard_bytes == 0 {
            bail!(InvalidArgument, "max_shard_bytes is 0");
        }
        let name = base
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| err!(InvalidArgument, "'{}' does not name a set", base.display()))?;
        let stem = name.strip_suffix(".zt").unwrap_or(name);
        if stem.is_empty() || base.to_string_lossy().ends_with('/') {
            bail!(InvalidArgument, "'{}' does not name a set", base.display());
        }
        let dir = match base.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let mut w = ShardedWriter {
            dir,
            stem: stem.to_owned(),
            max_shard_bytes,
            options: *options,
            current: None,
            done: Vec::new(),
            names: Vec::new(),
            all: HashSet::new(),
            attributes: None,
            total: 0,
            named: false,
        };
        w.current = Some(w.new_shard()?);
        Ok(w)
    }

    /// The writer of a new shard, under a temporary name of its own.
    fn new_shard(&self) -> Result<Writer> {
        let name = format!(
            "{}-{:05}.{}.{}.zt-shard",
            self.stem,
            self.done.len() + 1,
            std::process::id(),
            TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
        );
        Writer::create_with(
            self.dir.join(temp_name(std::ffi::OsStr::new(&name))),
            &self.options,
        )
    }

    fn current(&mut self) -> Result<&mut Writer> {
        self.current
            .as_mut()
            .ok_or_else(|| err!(State, "the set's writer failed or has finished"))
    }

    /// The writer for a new object `name` of about `size` bytes: the current shard, or a
    /// new one when the object would take the current one past the limit.
    fn shard_for(&mut self, name: &str, size: u64) -> Result<&mut Writer> {
        if self.all.contains(name) {
            bail!(
                InvalidArgument,
                "an object named '{name}' was already added to the set"
            );
        }
        let max = self.max_shard_bytes;
        let w = self.current()?;
        // zstd frames still being compressed count too.
        w.settle()?;
        let full = w.position().saturating_add(size) > max || w.position() >= max;
        if !w.open_object && !w.objects.is_empty() && full {
            let w = self.current.take().expect("checked");
            let path = w.target.as_ref().expect("a path writer").path.clone();
            w.finish()?;
            self.done.push((path, std::mem::take(&mut self.names)));
            self.current = Some(self.new_shard()?);
        }
        self.current()
    }

    /// Records an object added to the current shard.
    fn added(&mut self, name: &str) {
        let w = self.current.as_ref().expect("just added");
        if let Some(o) = w.objects.last() {
            self.total += o
                .components()
                .iter()
                .map(|c| c.decoded_length())
                .sum::<u64>();
        }
        self.names.push(name.to_owned());
        self.all.insert(name.to_owned());
    }

    /// `Writer::add` into the set.
    pub fn add(
        &mut self,
        name: &str,
        dtype: DType,
        shape: &[u64],
        data: &[u8],
        options: &WriteOptions,
    ) -> Result<()> {
        self.add_typed(name, dtype, None, shape, data, options)
    }

    /// `Writer::add_typed` into the set.
    pub fn add_typed(
        &mut self,
        name: &str,
        dtype: DType,
        logical_type: Option<&str>,
        shape: &[u64],
        data: &[u8],
        options: &WriteOptions,
    ) -> Result<()> {
        self.shard_for(name, data.len() as u64)?.add_typed(
            name,
            dtype,
            logical_type,
            shape,
            data,
            options,
        )?;
        self.added(name);
        Ok(())
    }

    /// `Writer::begin_object` in the set. The object's size is not known yet: it goes to
    /// the current shard unless that is already at the limit.
    pub fn begin_object(&mut self, name: &str, format: &str, shape: &[u64]) -> Result<()> {
        self.shard_for(name, 0)?.begin_object(name, format, shape)?;
        self.names.push(name.to_owned());
        self.all.insert(name.to_owned());
        Ok(())
    }

    /// `Writer::add_component` to the open object.
    pub fn add_component(
        &mut self,
        role: &str,
        dtype: DType,
        logical_type: Option<&str>,
        data: &[u8],
        options: &WriteOptions,
    ) -> Result<()> {
        self.current()?
            .add_component(role, dtype, logical_type, data, options)?;
        self.total += data.len() as u64;
        Ok(())
    }

    /// `Writer::begin_component` of the open object.
    pub fn begin_component(
        &mut self,
        role: &str,
        dtype: DType,
        logical_type: Option<&str>,
        options: &WriteOptions,
    ) -> Result<()> {
        self.current()?
            .begin_component(role, dtype, logical_type, options)
    }

    /// `Writer::write` to the open component.
    pub fn write(&mut self, data: &[u8]) -> Result<()> {
        self.current()?.write(data)?;
        self.total += data.len() as u64;
        Ok(())
    }

    /// `Writer::end_component`.
    pub fn end_component(&mut self) -> Result<()> {
        self.current()?.end_component()
    }

    /// `Writer::end_object`.
    pub fn end_object(&mut self) -> Result<()> {
        self.current()?.end_object()
    }

    /// The set's attributes: the index's `metadata` (with `total_size` added unless
    /// given). Must be a map; a second call replaces.
    pub fn set_file_attributes(&mut self, attributes: Value) -> Result<()> {
        if !matches!(attributes, Value::Map(_)) {
            bail!(InvalidArgument, "the set's attributes must be a map");
        }
        self.attributes = Some(attributes);
        Ok(())
    }

    /// `Writer::set_object_attributes` of an object of the shard being written.
    pub fn set_object_attributes(&mut self, name: &str, attributes: Value) -> Result<()> {
        self.shard_of(name)?.set_object_attributes(name, attributes)
    }

    /// The shard being written, which must hold `name`.
    fn shard_of(&mut self, name: &str) -> Result<&mut Writer> {
        if self.all.contains(name) && !self.names.iter().any(|n| n == name) {
            bail!(
                State,
                "object '{name}' is in a shard already finished: set its attributes before \
                 adding objects that start another shard"
            );
        }
        self.current()
    }

    /// The set's attributes from a typed map. They become the index's `metadata`, JSON,
    /// which has no widths: each value is written as its plain JSON value.
    pub fn set_file_attributes_typed(&mut self, attributes: &TypedValue) -> Result<()> {
        let (_, value) = Attributes::from_typed(attributes)?;
        self.set_file_attributes(value)
    }

    /// One of the set's attributes, typed (written as in `set_file_attributes_typed`).
    pub fn set_file_attribute(&mut self, key: &str, value: &TypedValue) -> Result<()> {
        let (_, map) = Attributes::from_typed(&super::attrs::with_entry(
            self.typed_file_attributes()?,
            key,
            value,
        ))?;
        self.set_file_attributes(map)
    }

    /// The set's attributes so far, as typed values.
    fn typed_file_attributes(&self) -> Result<TypedValue> {
        let attrs = self
            .attributes
            .as_ref()
            .map(|a| Attributes::from_cbor(&crate::cbor::to_vec(a)));
        super::attrs::typed_map(attrs.as_ref())
    }

    /// The set's attributes as another file's model holds them (see
    /// `set_file_attributes_typed` for what survives in the index).
    pub fn set_file_attributes_from(&mut self, attributes: &Attributes) -> Result<()> {
        self.set_file_attributes(attributes.value())
    }

    /// `Writer::set_object_attributes_typed` of an object of the shard being written.
    pub fn set_object_attributes_typed(
        &mut self,
        name: &str,
        attributes: &TypedValue,
    ) -> Result<()> {
        self.shard_of(name)?
            .set_object_attributes_typed(name, attributes)
    }

    /// `Writer::set_object_attribute` of an object of the shard being written.
    pub fn set_object_attribute(
        &mut self,
        name: &str,
        key: &str,
        value: &TypedValue,
    ) -> Result<()> {
        self.shard_of(name)?.set_object_attribute(name, key, value)
    }

    /// `Writer::set_object_attributes_from` of an object of the shard being written.
    pub fn set_object_attributes_from(
        &mut self,
        name: &str,
        attributes: &Attributes,
    ) -> Result<()> {
        self.shard_of(name)?
            .set_object_attributes_from(name, attributes)
    }

    /// `Writer::copy_object` into the set.
    pub fn copy_object(
        &mut self,
        reader: &Reader<'_>,
        object: usize,
        options: &CopyOptions,
    ) -> Result<()> {
        let name = reader.object(object)?.name().to_owned();
        self.copy_object_as(reader, object, &name, options)
    }

    /// `Writer::copy_object_as` into the set; the object's size counts as its decoded
    /// bytes.
    pub fn copy_object_as(
        &mut self,
        reader: &Reader<'_>,
        object: usize,
        name: &str,
        options: &CopyOptions,
    ) -> Result<()> {
        self.copy_object_reporting(reader, object, name, options, &mut |_| {})
    }

    /// `Writer::copy_object_reporting` into the set (progress for a progress bar).
    pub fn copy_object_reporting(
        &mut self,
        reader: &Reader<'_>,
        object: usize,
        name: &str,
        options: &CopyOptions,
        progress: &mut dyn FnMut(u64),
    ) -> Result<()> {
        let size = reader
            .object(object)?
            .components()
            .iter()
            .map(|c| c.decoded_length())
            .sum();
        self.shard_for(name, size)?
            .copy_object_reporting(reader, object, name, options, progress)?;
        self.added(name);
        Ok(())
    }

    /// Ok when `finish` may be called now.
    pub fn check_finishable(&self) -> Result<()> {
        match &self.current {
            Some(w) => w.check_finishable(),
            None => bail!(State, "the set's writer failed or has finished"),
        }
    }

    /// Finishes the last shard, names every shard `<base>-0000k-of-0000n.zt`, then
    /// writes the index (the set's entry point) last, each durably unless the options
    /// say otherwise. Returns the index's path.
    pub fn finish(mut self) -> Result<PathBuf> {
        self.check_finishable()?;
        if self.all.is_empty() {
            bail!(State, "a set needs at least one object");
        }
        let w = self.current.take().expect("checked");
        let path = w.target.as_ref().expect("a path writer").path.clone();
        w.finish()?;
        self.done.push((path, std::mem::take(&mut self.names)));
        let n = self.done.len();
        let mut weight_map = BTreeMap::new();
        for (k, (temp, names)) in self.done.iter().enumerate() {
            let file = format!("{}-{:05}-of-{n:05}.zt", self.stem, k + 1);
            let path = self.dir.join(&file);
            std::fs::rename(temp, &path).map_err(|e| {
                Error::io(
                    format_args!("renaming {} to {}", temp.display(), path.display()),
                    e,
                )
            })?;
            for name in names {
                weight_map.insert(name.clone(), serde_json::Value::String(file.clone()));
            }
        }
        self.named = true;
        let index = self.index_json(weight_map)?;
        let path = self.dir.join(format!("{}.zt.index.json", self.stem));
        let temp = self.dir.join(temp_name(path.file_name().expect("a name")));
        let written = (|| {
            let mut f = File::create(&temp)?;
            f.write_all(index.as_bytes())?;
            if self.options.durable {
                f.sync_all()?;
            }
            std::fs::rename(&temp, &path)
        })();
        if let Err(e) = written {
            let _ = std::fs::remove_file(&temp);
            return Err(Error::io(format_args!("writing {}", path.display()), e));
        }
        if self.options.durable
            && let Ok(d) = File::open(&self.dir)
        {
            let _ = d.sync_all();
        }
        Ok(path)
    }

    /// The index as transformers writes it: two-space indents, keys sorted, a newline.
    fn index_json(&self, weight_map: BTreeMap<String, serde_json::Value>) -> Result<String> {
        let mut metadata = match &self.attributes {
            Some(v) => serde_json::from_str(&crate::json::to_json(v))
                .map_err(|e| err!(Internal, "the set's attributes as JSON: {e}"))?,
            None => serde_json::Map::new(),
        };
        metadata
            .entry("total_size")
            .or_insert(serde_json::Value::from(self.total));
        let mut doc = serde_json::Map::new();
        doc.insert("metadata".into(), serde_json::Value::Object(metadata));
        doc.insert(
            "weight_map".into(),
            serde_json::Value::Object(weight_map.into_iter().collect()),
        );
        let mut text = serde_json::to_string_pretty(&serde_json::Value::Object(doc))
            .map_err(|e| err!(Internal, "writing the index: {e}"))?;
        text.push('\n');
        Ok(text)
    }
}

impl Drop for ShardedWriter {
    /// An unfinished set leaves nothing behind: finished shards under their temporary
    /// names are removed (the current shard's writer removes its own).
    fn drop(&mut self) {
        if !self.named {
            for (temp, _) in &self.done {
                let _ = std::fs::remove_file(temp);
            }
        }
    }
}

/// A single file or a set being written, behind one handle (the C API's `zt_writer`).
pub(crate) enum AnyWriter {
    One(Writer),
    Set(ShardedWriter),
}

/// Forwards each method to whichever writer it is.
macro_rules! forward {
    ($(fn $name:ident(&mut self $(, $arg:ident: $ty:ty)*) -> $ret:ty;)*) => {
        impl AnyWriter {
            $(pub(crate) fn $name(&mut self $(, $arg: $ty)*) -> $ret {
                match self {
                    AnyWriter::One(w) => w.$name($($arg),*),
                    AnyWriter::Set(w) => w.$name($($arg),*),
                }
            })*
        }
    };
}

forward! {
    fn add(&mut self, name: &str, dtype: DType, shape: &[u64], data: &[u8], options: &WriteOptions) -> Result<()>;
    fn begin_object(&mut self, name: &str, format: &str, shape: &[u64]) -> Result<()>;
    fn add_component(&mut self, role: &str, dtype: DType, logical_type: Option<&str>, data: &[u8], options: &WriteOptions) -> Result<()>;
    fn end_object(&mut self) -> Result<()>;
    fn begin_component(&mut self, role: &str, dtype: DType, logical_type: Option<&str>, options: &WriteOptions) -> Result<()>;
    fn write(&mut self, data: &[u8]) -> Result<()>;
    fn end_component(&mut self) -> Result<()>;
    fn set_file_attributes(&mut self, attributes: Value) -> Result<()>;
    fn set_object_attributes(&mut self, name: &str, attributes: Value) -> Result<()>;
    fn set_file_attributes_typed(&mut self, attributes: &TypedValue) -> Result<()>;
    fn set_object_attributes_typed(&mut self, name: &str, attributes: &TypedValue) -> Result<()>;
    fn set_file_attribute(&mut self, key: &str, value: &TypedValue) -> Result<()>;
    fn set_object_attribute(&mut self, name: &str, key: &str, value: &TypedValue) -> Result<()>;
    fn copy_object(&mut self, reader: &Reader<'_>, object: usize, options: &CopyOptions) -> Result<()>;
    fn copy_object_as(&mut self, reader: &Reader<'_>, object: usize, name: &str, options: &CopyOptions) -> Result<()>;
}

impl AnyWriter {
    pub(crate) fn check_finishable(&self) -> Result<()> {
        match self {
            AnyWriter::One(w) => w.check_finishable(),
            AnyWriter::Set(w) => w.check_finishable(),
        }
    }

    pub(crate) fn finish(self) -> Result<()> {
        match self {
            AnyWriter::One(w) => w.finish().map(drop),
            AnyWriter::Set(w) => w.finish().map(drop),
        }
    }
}
