//! Opening a reader: by path, by URL (through `sets::open`), from a descriptor or memory.

use std::path::Path;
use std::sync::atomic::AtomicU64;

use crate::error::Result;
use crate::model::Model;
use crate::sets::{self, Files, Place, SetOptions};
use crate::source::{Mapping, RemoteOptions, Source, is_url};
use crate::value::typed::DocCache;

use super::{Caches, OpenOptions, Reader};

impl Reader<'static> {
    /// Opens a file by path with the default options (read-only mmap).
    /// Costs: one mmap, the manifest is decoded and validated once; no data is read.
    pub fn open(path: impl AsRef<Path>) -> Result<Reader<'static>> {
        Self::open_with(path, &OpenOptions::default())
    }

    /// Opens a file by path with options. Only regular files are opened (a directory,
    /// FIFO or device is an `Io` error, given without blocking). A path starting with
    /// `s3://`, `gs://`, `az://`, `abfs://`, `http://` or `https://` is opened as a URL
    /// (`open_url` with the environment's settings only).
    pub fn open_with(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Reader<'static>> {
        let path = path.as_ref();
        if is_url(path) {
            let url = path.to_str().expect("a URL is text");
            return Self::open_url(url, options, &RemoteOptions::default());
        }
        let shown = path.display().to_string();
        let set = SetOptions {
            place: &Place::Local,
            mapping: options.mapping(),
            eager: options.open_all_shards,
            open_all: options.open_all_shards,
            one_file: options.one_file,
            dir: None,
        };
        let mut reader = Reader::open_in(path, &shown, set, options)?;
        reader.origin = Some(path.display().to_string().into());
        reader.by_path = true;
        Ok(reader)
    }

    /// Opens a remote object by URL: `s3://bucket/key`, `gs://bucket/key`,
    /// `az://container/blob` (and `abfs://`, `azure://`), `http(s)://host/path`.
    /// Credentials and endpoints come from the environment (`AWS_*`, `GOOGLE_*`,
    /// `AZURE_*`) and `remote`. Opening costs a few requests (one for the size and last
    /// bytes, one per header or manifest region the format reads); nothing is mapped, so
    /// views are copies the reader keeps (under `limits.max_total_cached`). `Unsupported`
    /// in a build without the feature `remote`.
    ///
    /// A URL of an index (`*.index.json`) opens the set it describes, its shards at the
    /// same location (next to the index, through the same store and settings); a URL of
    /// one GGUF split opens every split of its set (unless `one_file`). Every shard's
    /// header is read at open; its data when read.
    pub fn open_url(
        url: &str,
        options: &OpenOptions,
        remote: &RemoteOptions,
    ) -> Result<Reader<'static>> {
        let (place, name) = Place::of_url(url, remote)?;
        // A remote shard stays open once parsed: opening it again would cost a request.
        let set = SetOptions {
            place: &place,
            mapping: Mapping::None,
            eager: true,
            open_all: options.open_all_shards,
            one_file: options.one_file,
            dir: None,
        };
        let mut reader = Reader::open_in(Path::new(&name), &name, set, options)?;
        reader.origin = Some(name.into());
        Ok(reader)
    }

    /// Opens what `path` names in `set.place` (`sets::open`); `shown` names it in messages.
    fn open_in(
        path: &Path,
        shown: &str,
        set: SetOptions,
        options: &OpenOptions,
    ) -> Result<Reader<'static>> {
        let (model, files) = sets::open(path, shown, set, &options.limits)?;
        let one = files.single().is_some();
        Reader::new(files, model, options).map_err(|e| if one { e.context(shown) } else { e })
    }

    /// Opens an already open file (for a file descriptor a loader opened itself, e.g. with
    /// `O_DIRECT` siblings or from a sandbox). The reader owns `file` from now on. `name`
    /// stands for the file in messages. The file must be a regular file open for reading;
    /// its current offset doesn't matter (every read is positioned).
    pub fn from_file(
        file: std::fs::File,
        name: &str,
        options: &OpenOptions,
    ) -> Result<Reader<'static>> {
        let source = Source::from_file(file, name, options.mapping())?;
        let mut reader = Reader::from_source(source, options).map_err(|e| e.context(name))?;
        reader.origin = Some(name.into());
        Ok(reader)
    }
}

impl OpenOptions {
    fn mapping(&self) -> Mapping {
        match (self.use_mmap, self.populate) {
            (false, _) => Mapping::None,
            (true, populate) if self.copy_on_write => Mapping::CopyOnWrite { populate },
            (true, false) => Mapping::Lazy,
            (true, true) => Mapping::Populated,
        }
    }
}

impl<'a> Reader<'a> {
    /// Opens a file held in memory; the bytes are borrowed, never copied.
    pub fn from_slice(bytes: &'a [u8]) -> Result<Reader<'a>> {
        Self::from_slice_with(bytes, &OpenOptions::default())
    }

    /// Opens a file held in memory, with options (`use_mmap` is ignored).
    pub fn from_slice_with(bytes: &'a [u8], options: &OpenOptions) -> Result<Reader<'a>> {
        Reader::from_source(Source::memory(bytes), options)
    }

    fn from_source(source: Source<'a>, options: &OpenOptions) -> Result<Reader<'a>> {
        let model = sets::parse(&source, &options.limits)?;
        sets::refuse_external(&model)?;
        Reader::new(Files::One(source), model, options)
    }

    fn new(files: Files<'a>, model: Model, options: &OpenOptions) -> Result<Reader<'a>> {
        let limits = options.limits;
        let reader = Reader {
            files,
            caches: Caches::new(model.objects.len()),
            model,
            limits,
            origin: None,
            by_path: false,
            cached_total: AtomicU64::new(0),
            index_total: AtomicU64::new(0),
            typed: DocCache::default(),
        };
        if options.verify_on_open {
            reader.verify()?;
        }
        Ok(reader)
    }
}
