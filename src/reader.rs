//! Opening files (mmap, caller memory, or pread), looking objects up, and getting their
//! bytes: zero-copy views, decoded views cached once, copies into caller buffers, range
//! reads and digest verification. A `Reader` is immutable after open and `Send + Sync`.

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::buffer::{AlignedBuf, zeroed_vec};
use crate::cbor::Value;
use crate::codec::FrameIndex;
use crate::convert::Plan;
use crate::dtype::DType;
use crate::error::{Error, ErrorKind, Result, bail, err};
use crate::formats::ztensor_v2;
use crate::limits::Limits;
use crate::model::{Attributes, Component, Container, Model, Object};
use crate::sets::{self, Files, Place, SetOptions};
use crate::source::{Advice, Mapping, RemoteOptions, Source, is_url};
use crate::typed::{self, AttrValue, DocCache};
use crate::{decode, verify};

/// How to open a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    /// Map the file (default). When false, every access is a `pread` into memory: nothing
    /// is zero-copy, but a file truncated by someone else can't raise SIGBUS.
    pub use_mmap: bool,
    /// Verify every digest while opening (reads every stored byte once).
    pub verify_on_open: bool,
    /// With `use_mmap`: read every page of the file in while opening (`MAP_POPULATE`),
    /// so no access faults later. Costs the whole file's read at open.
    pub populate: bool,
    /// For a set (an `*.index.json`, or one split of a GGUF split set): open and map
    /// every shard at open and keep them open, instead of opening each when it is first
    /// read (parsing closes them again).
    pub open_all_shards: bool,
    /// Open only the file named, even when it is one split of a GGUF split set (by
    /// default the whole set is opened).
    pub one_file: bool,
    /// Safety limits.
    pub limits: Limits,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            use_mmap: true,
            verify_on_open: false,
            populate: false,
            open_all_shards: false,
            one_file: false,
            limits: Limits::default(),
        }
    }
}

/// What the reader keeps per component: the decoded bytes of a view, and the frame index
/// of a zstd component; both built once, under `lock`.
struct Cache {
    cell: OnceLock<AlignedBuf>,
    index: OnceLock<Arc<FrameIndex>>,
    lock: Mutex<()>,
}

/// The memory the frame indexes one reader caches may take in total. An index is at most
/// 1 MiB (`FrameIndex`), and this library's frames need 16 bytes per 4 MiB, so only files
/// of very many small frames reach it; past it, each call that needs an index builds its
/// own and drops it after (reading the seek table or the frame headers again).
const INDEX_CACHE_BUDGET: u64 = 64 << 20;

/// Objects per group of `Caches`.
const CACHE_GROUP: usize = 64;

/// The decoded copies views keep, one cell per component, made for a group of
/// `CACHE_GROUP` objects when one of them first needs one: a file of millions of objects
/// whose views are zero-copy pays a few bytes per group, not per component.
struct Caches {
    groups: Box<[OnceLock<CacheGroup>]>,
}

/// Per object of a group, per component.
type CacheGroup = Box<[Box<[Cache]>]>;

impl Caches {
    fn new(objects: usize) -> Caches {
        Caches {
            groups: (0..objects.div_ceil(CACHE_GROUP))
                .map(|_| OnceLock::new())
                .collect(),
        }
    }

    /// The cell of a component, if its group was made.
    fn get(&self, object: usize, component: usize) -> Option<&Cache> {
        self.groups[object / CACHE_GROUP].get()?[object % CACHE_GROUP].get(component)
    }

    /// The cell of a component, making its group if needed.
    fn cell(&self, objects: &[Object], object: usize, component: usize) -> &Cache {
        let first = object / CACHE_GROUP * CACHE_GROUP;
        let group = self.groups[object / CACHE_GROUP].get_or_init(|| {
            objects[first..objects.len().min(first + CACHE_GROUP)]
                .iter()
                .map(|o| {
                    (0..o.components.len())
                        .map(|_| Cache {
                            cell: OnceLock::new(),
                            index: OnceLock::new(),
                            lock: Mutex::new(()),
                        })
                        .collect()
                })
                .collect()
        });
        &group[object - first][component]
    }
}

/// A borrowed view of a component's decoded bytes.
#[derive(Clone, Copy, Debug)]
pub struct View<'r> {
    /// The bytes; 64-byte aligned.
    pub data: &'r [u8],
    /// The storage dtype of the elements.
    pub dtype: DType,
    /// True when `data` points into the mapped file or the caller's memory, false when it
    /// is a decoded copy owned by the reader.
    pub zero_copy: bool,
}

impl<'r> View<'r> {
    fn cached(buf: &'r AlignedBuf, dtype: DType) -> View<'r> {
        View {
            data: buf.as_slice(),
            dtype,
            zero_copy: false,
        }
    }
}

/// Where a file's data section begins and the alignment its format guarantees there.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The file offset the format's own tensor offsets count from: the start of GGUF's
    /// data section (after the header and its padding) and of safetensors' byte buffer
    /// (8 + header length); 0 for formats whose offsets are absolute (zTensor,
    /// Tensogram).
    pub data_offset: u64,
    /// Every component's offset minus `data_offset` is a multiple of this: GGUF's
    /// `general.alignment` (32 by default), 64 for zTensor, 1 where the format promises
    /// nothing (safetensors, Tensogram).
    pub alignment: u64,
}

/// How a block-quantized object is laid out (`Reader::quant_info`).
#[derive(Clone, Copy, Debug)]
pub struct QuantInfo {
    /// The ggml block type: id, name, block size, type size.
    pub block_type: &'static crate::quant::BlockType,
    /// The index of the component holding the blocks.
    pub component: usize,
    /// Rows: the element count over the last dimension (ggml's ne[1] x ne[2] x ne[3]).
    pub rows: u64,
    /// Bytes of one row (the last dimension, ne[0], in whole blocks).
    pub row_size: u64,
}

/// An open file. Immutable after open; every method may be called from many threads.
pub struct Reader<'a> {
    files: Files<'a>,
    model: Model,
    limits: Limits,
    caches: Caches,
    /// The path, for error messages, when opened from one.
    origin: Option<Box<str>>,
    /// True when `origin` is a path the reader opened (not a descriptor's name).
    by_path: bool,
    cached_total: AtomicU64,
    /// Bytes of the frame indexes cached, at most `INDEX_CACHE_BUDGET`.
    index_total: AtomicU64,
    /// Typed attribute trees, each built on first request.
    typed: DocCache,
}

impl std::fmt::Debug for Reader<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("version", &self.version())
            .field("objects", &self.model.objects.len())
            .finish()
    }
}

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

    /// The file's format version: "1.2.0", "1.1.0", "0.1.0" for zTensor files; the
    /// container's own version for other formats ("3" for GGUF v3 ...).
    pub fn version(&self) -> &str {
        self.model.version.as_str()
    }

    /// The container format the file was read from.
    pub fn container(&self) -> Container {
        self.model.container
    }

    /// The path the file was opened from, if it was opened by path.
    pub fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    /// File-level attributes (a CBOR map), decoded on each call; None when absent.
    pub fn attributes(&self) -> Option<Value> {
        self.model.attributes.as_ref().map(Attributes::value)
    }

    /// File-level attributes as stored (CBOR bytes), without decoding.
    pub fn raw_attributes(&self) -> Option<&Attributes> {
        self.model.attributes.as_ref()
    }

    /// The typed map of the file's attributes (`object` None) or an object's; an empty
    /// map when there are none. Built on the first call (16 bytes per item, strings not
    /// copied), then shared: values live as long as the reader. Thread-safe.
    pub fn typed_attributes(&self, object: Option<usize>) -> Result<AttrValue<'_>> {
        let attrs = match object {
            None => self.model.attributes.as_ref(),
            Some(i) => self.object(i)?.raw_attributes(),
        };
        let Some(attrs) = attrs else {
            return Ok(typed::empty_map().root());
        };
        let doc = self
            .typed
            .get(object, self.model.objects.len(), || attrs.doc())?;
        Ok(doc.root())
    }

    /// One attribute of the file (`object` None) or of an object, typed; `NotFound`
    /// naming the key when absent.
    pub fn typed_attribute(&self, object: Option<usize>, key: &str) -> Result<AttrValue<'_>> {
        self.typed_attributes(object)?
            .find(key)?
            .ok_or_else(|| match object {
                None => err!(NotFound, "the file has no attribute '{key}'"),
                Some(i) => err!(
                    NotFound,
                    "object '{}' has no attribute '{key}'",
                    self.model.objects[i].name()
                ),
            })
    }

    /// All objects, in manifest order.
    pub fn objects(&self) -> &[Object] {
        &self.model.objects
    }

    /// The object at `index`.
    pub fn object(&self, index: usize) -> Result<&Object> {
        self.model.objects.get(index).ok_or_else(|| {
            err!(
                NotFound,
                "no object at index {index} (the file has {})",
                self.model.objects.len()
            )
        })
    }

    /// The index of the object called `name`; O(1).
    #[inline]
    pub fn find(&self, name: &str) -> Option<usize> {
        self.find_bytes(name.as_bytes())
    }

    /// `find` by the name's bytes (bytes that aren't UTF-8 name no object).
    #[inline]
    pub(crate) fn find_bytes(&self, name: &[u8]) -> Option<usize> {
        self.model.by_name.find(&self.model.objects, name)
    }

    /// The whole file as mapped (or the caller's memory for `from_slice`): byte 0 of the
    /// file is its first byte, and a component's bytes are at its `offset()`. None when
    /// the file is read with `pread` (`use_mmap: false`), and for a set (each shard has
    /// its own: `shard_mapping`).
    pub fn mapping(&self) -> Option<&[u8]> {
        self.files.single()?.base()
    }

    /// Starts reading an object's stored bytes in, in the background
    /// (`MADV_WILLNEED` on the mapping, `POSIX_FADV_WILLNEED` without one), so that a
    /// later view or read doesn't wait for the disk. Returns at once; only a hint.
    pub fn prefetch(&self, object: usize) -> Result<()> {
        self.advise(object, Advice::WillNeed)
    }

    /// Drops an object's stored bytes from this process's memory (`MADV_DONTNEED` on the
    /// shared read-only mapping; `POSIX_FADV_DONTNEED` without one), e.g. after uploading
    /// a tensor to a GPU. Views stay valid: touching them again reads the pages back from
    /// the file. Decoded copies the reader keeps are not affected. Only a hint.
    pub fn release(&self, object: usize) -> Result<()> {
        self.advise(object, Advice::DontNeed)
    }

    fn advise(&self, object: usize, advice: Advice) -> Result<()> {
        let obj = self.object(object)?;
        for c in obj.components() {
            // Releasing bytes of a shard not open yet has nothing to drop.
            let source = match advice {
                Advice::WillNeed => Some(self.source(obj, c)?),
                Advice::DontNeed => self.files.opened(c.blob.file),
            };
            if let Some(source) = source {
                source.advise(c.blob.offset, c.blob.length, advice);
            }
        }
        Ok(())
    }

    /// What a reader of a remote object has transferred so far, every file of a set
    /// counted (None for a local file).
    #[cfg(feature = "remote")]
    pub fn transfer_stats(&self) -> Option<crate::source::TransferStats> {
        self.files.remote().map(|r| r.stats())
    }

    /// Reads that may usefully run at once (a remote object's request concurrency).
    pub(crate) fn parallel_reads(&self) -> Option<usize> {
        self.files.parallel_reads()
    }

    /// The limits this reader was opened with.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Where the file's data section is and what alignment its format guarantees there
    /// (GGUF's `gguf_get_data_offset` and `gguf_get_alignment`). O(1). For a set, the
    /// first file's: each shard has its own data section (`shard_layout`), and a
    /// component's offset counts in its own shard (`Component::file`).
    pub fn layout(&self) -> Layout {
        Layout {
            data_offset: self.model.data_offset,
            alignment: self.model.traits.blob_alignment,
        }
    }

    /// `layout` of file `shard` (0 for a single file; for a set, the shard
    /// `Component::file` names): a component's `offset() - data_offset` is the format's
    /// own offset of its tensor (ggml's for a GGUF split) with the layout of the
    /// component's shard. O(1), opens nothing. `NotFound` for a shard out of range.
    pub fn shard_layout(&self, shard: usize) -> Result<Layout> {
        if self.model.shard_layouts.is_empty() && shard < self.shard_count() {
            // A single file, or a set whose files share the root's layout (a zTensor v2
            // root's shards, ONNX external data: absolute offsets, the same alignment).
            return Ok(self.layout());
        }
        match self.model.shard_layouts.get(shard) {
            Some(&(data_offset, alignment)) => Ok(Layout {
                data_offset,
                alignment,
            }),
            None => bail!(
                NotFound,
                "no file at index {shard} (the reader reads {})",
                self.shard_count()
            ),
        }
    }

    /// How a block-quantized object (one with a component of ggml blocks, e.g. every GGUF
    /// tensor of a quantized type) is laid out: its ggml type, the component holding the
    /// blocks, its rows and the bytes of one row. `NotFound` for an object without blocks,
    /// `Unsupported` for a ggml type id this build doesn't know, `Format` when the bytes
    /// don't make the shape in whole blocks. O(components), no allocation.
    pub fn quant_info(&self, object: usize) -> Result<QuantInfo> {
        let obj = self.object(object)?;
        let Some((component, blocks)) = obj.block_component() else {
            bail!(
                NotFound,
                "object '{}' ({}) is not block-quantized: none of its components holds ggml \
                 blocks",
                obj.name(),
                obj.format()
            );
        };
        let c = &obj.components[component];
        let ctx = self.ctx(obj, c);
        let block_type = blocks.known().map_err(&ctx)?;
        let (rows, row_size) =
            crate::quant::rows(block_type, obj.shape(), c.decoded_length).map_err(&ctx)?;
        Ok(QuantInfo {
            block_type,
            component,
            rows,
            row_size,
        })
    }

    pub(crate) fn model(&self) -> &Model {
        &self.model
    }

    pub(crate) fn component(
        &self,
        object: usize,
        component: usize,
    ) -> Result<(&Object, &Component)> {
        let obj = self.object(object)?;
        let c = obj.components.get(component).ok_or_else(|| {
            err!(
                NotFound,
                "object '{}' has no component at index {component}",
                obj.name()
            )
        })?;
        Ok((obj, c))
    }

    /// Adds "<file>: object '..' component '..'" to an error's message (formatted only
    /// when there is an error: this sits on every read's path).
    pub(crate) fn ctx<'s>(
        &'s self,
        obj: &'s Object,
        c: &'s Component,
    ) -> impl Fn(Error) -> Error + 's {
        move |e| match self.files.path(c.blob.file).or(self.origin.as_deref()) {
            Some(path) => e.context(format_args!(
                "{path}: object '{}' component '{}'",
                obj.name(),
                c.role()
            )),
            None => e.context(format_args!(
                "object '{}' component '{}'",
                obj.name(),
                c.role()
            )),
        }
    }

    /// The source of the file holding a component: a set's shard is opened on first use.
    pub(crate) fn source(&self, obj: &Object, c: &Component) -> Result<&Source<'a>> {
        if c.blob.file != 0 && self.files.single().is_some() {
            return Err(self.ctx(obj, c)(ztensor_v2::shards::unresolvable(
                &self.model,
                c.blob.file,
            )));
        }
        self.files.part(c.blob.file).map_err(self.ctx(obj, c))
    }

    /// True when the reader reads a set of files (an index, or a GGUF split set).
    pub fn is_set(&self) -> bool {
        self.files.single().is_none()
    }

    /// How many files the reader reads: 1, or the shards of a set.
    pub fn shard_count(&self) -> usize {
        self.files.shards().len().max(1)
    }

    /// The path of file `index` of a set (0 for a single file: where it was opened from;
    /// None when opened from memory or a descriptor).
    pub fn shard_path(&self, index: usize) -> Result<Option<&std::path::Path>> {
        let shards = self.files.shards();
        match (shards.get(index), index) {
            (Some(s), _) => Ok(Some(s.path())),
            (None, 0) if shards.is_empty() => Ok(self
                .origin
                .as_deref()
                .filter(|_| self.by_path)
                .map(std::path::Path::new)),
            _ => bail!(
                NotFound,
                "no file at index {index} (the reader reads {})",
                self.shard_count()
            ),
        }
    }

    /// File `index`'s mapping, as `mapping` gives a single file's: for a set, the shard is
    /// opened (and mapped) if it isn't yet. None without a mapping (`use_mmap: false`).
    pub fn shard_mapping(&self, index: usize) -> Result<Option<&[u8]>> {
        if index >= self.shard_count() {
            self.shard_path(index)?;
        }
        Ok(self.files.part(index as u32)?.base())
    }

    /// The decoded bytes a view already cached, if any.
    fn cached(&self, object: usize, component: usize) -> Option<&AlignedBuf> {
        self.caches.get(object, component)?.cell.get()
    }

    /// A view of a component's decoded bytes. Raw components are zero-copy (a slice of the
    /// mapping or the caller's memory) when that has the alignment the file's format
    /// promises (64 bytes in zTensor files; the element size in formats that don't align
    /// their data to 64). Anything else is decoded (or copied) once into 64-byte aligned
    /// memory the reader owns and keeps until it is dropped; concurrent first calls
    /// decode once.
    #[inline]
    pub fn view(&self, object: usize, component: usize) -> Result<View<'_>> {
        // The zero-copy case inline (a lookup and a view by name cost less than safetensors'
        // `tensor()`); errors, caches and decoding out of line.
        if let Some(c) = self
            .model
            .objects
            .get(object)
            .and_then(|o| o.components.get(component))
            && let Some(v) = self.view_in_place(c)
        {
            return Ok(v);
        }
        self.view_decoded(object, component)
    }

    /// The zero-copy view of a plain component whose stored bytes are in memory and
    /// aligned as the format promises.
    #[inline]
    fn view_in_place(&self, c: &Component) -> Option<View<'_>> {
        let alignment = self.model.traits.view_alignment(c.dtype);
        // A shard not open yet (or that can't be opened): view_decoded opens it or says
        // why.
        let source = self.files.opened(c.blob.file)?;
        if c.is_plain()
            && let Some(data) = source.stored(c.blob.offset, c.blob.length)
            && ((data.as_ptr() as usize).is_multiple_of(alignment) || data.is_empty())
        {
            return Some(View {
                data,
                dtype: c.dtype,
                zero_copy: true,
            });
        }
        None
    }

    /// `view` of what isn't zero-copy yet: a set's shard not opened yet is opened first,
    /// so its plain components are zero-copy from their first view (one view per
    /// component, however the shard was opened); otherwise the cached or freshly decoded
    /// bytes, or the error.
    #[inline(never)]
    fn view_decoded(&self, object: usize, component: usize) -> Result<View<'_>> {
        let (obj, c) = self.component(object, component)?;
        self.source(obj, c)?;
        if let Some(v) = self.view_in_place(c) {
            return Ok(v);
        }
        if let Some(buf) = self.cached(object, component) {
            return Ok(View::cached(buf, c.dtype));
        }
        let cache = self.caches.cell(&self.model.objects, object, component);
        let _guard = cache.lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(buf) = cache.cell.get() {
            return Ok(View::cached(buf, c.dtype));
        }
        let ctx = self.ctx(obj, c);
        let len = c.decoded_length;
        let limit = self.limits.max_total_cached;
        let refuse = || {
            err!(
                Limit,
                "caching {len} decoded bytes would exceed the reader's cache limit of {limit}"
            )
        };
        // Cheap early refusal; the budget itself is taken only once the decode succeeded,
        // so a failing decode on another thread never makes a good view fail.
        if len.saturating_add(self.cached_total.load(Ordering::SeqCst)) > limit {
            return Err(ctx(refuse()));
        }
        let source = self.source(obj, c)?;
        let mut buf = AlignedBuf::zeroed(len).map_err(&ctx)?;
        decode::component_into(source, c, buf.as_mut_slice()).map_err(&ctx)?;
        self.cached_total
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |total| {
                total.checked_add(len).filter(|&t| t <= limit)
            })
            .map_err(|_| ctx(refuse()))?;
        Ok(View::cached(cache.cell.get_or_init(|| buf), c.dtype))
    }

    /// Copies or decodes a component into `dst`, which must be exactly `decoded_length`
    /// bytes. Decodes straight into `dst`, with no intermediate copy, unless a view already
    /// cached the decoded bytes (then it copies them).
    pub fn read_into(&self, object: usize, component: usize, dst: &mut [u8]) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        check_dst(c.decoded_length, dst.len()).map_err(self.ctx(obj, c))?;
        if let Some(buf) = self.cached(object, component) {
            dst.copy_from_slice(buf.as_slice());
            return Ok(());
        }
        decode::component_into(self.source(obj, c)?, c, dst).map_err(self.ctx(obj, c))
    }

    /// Reads a component into a new vector (allocates `decoded_length` bytes).
    pub fn read_to_vec(&self, object: usize, component: usize) -> Result<Vec<u8>> {
        let (obj, c) = self.component(object, component)?;
        let mut v = zeroed_vec(c.decoded_length).map_err(self.ctx(obj, c))?;
        self.read_into(object, component, &mut v)?;
        Ok(v)
    }

    /// Reads the decoded bytes `[offset, offset + dst.len())` of a component into `dst`.
    /// Raw components are read in place. zstd components are read through their frame
    /// index (`frame_index`, built on the first call): only the frames overlapping the
    /// range are read and decoded, and a frame the range covers in part is decoded from
    /// its start only as far as the range needs; a stream of one large frame (as the
    /// reference implementation writes) is decoded from its start up to the end of the
    /// range, streaming, without a buffer of the whole. Components of other formats'
    /// pipelines and legacy swapped data are decoded whole into a temporary buffer.
    /// Nothing but the frame index is cached.
    pub fn read_range(
        &self,
        object: usize,
        component: usize,
        offset: u64,
        dst: &mut [u8],
    ) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        let ctx = self.ctx(obj, c);
        offset
            .checked_add(dst.len() as u64)
            .filter(|&e| e <= c.decoded_length)
            .ok_or_else(|| {
                err!(
                    InvalidArgument,
                    "range [{offset}, {offset} + {}) is outside the component's {} bytes",
                    dst.len(),
                    c.decoded_length
                )
            })
            .map_err(&ctx)?;
        if dst.is_empty() {
            return Ok(());
        }
        let range = offset as usize..offset as usize + dst.len();
        if let Some(buf) = self.cached(object, component) {
            dst.copy_from_slice(&buf.as_slice()[range]);
            return Ok(());
        }
        let index = match decode::has_frames(c) {
            true => Some(self.frame_index(object, component)?),
            false => None,
        };
        let source = self.source(obj, c)?;
        if decode::component_range(source, c, index.as_deref(), offset, dst).map_err(&ctx)? {
            return Ok(());
        }
        let all = self.read_to_vec(object, component)?;
        dst.copy_from_slice(&all[range]);
        Ok(())
    }

    /// Reads the stored (possibly compressed) bytes `[offset, offset + dst.len())` of a
    /// component's blob, exactly as the file holds them: no decoding, no steps. For
    /// copying a component without decoding it (`Writer::copy_object`) or for a loader
    /// that decodes itself.
    pub fn read_stored(
        &self,
        object: usize,
        component: usize,
        offset: u64,
        dst: &mut [u8],
    ) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        offset
            .checked_add(dst.len() as u64)
            .filter(|&e| e <= c.blob.length)
            .ok_or_else(|| {
                err!(
                    InvalidArgument,
                    "range [{offset}, {offset} + {}) is outside the component's {} stored bytes",
                    dst.len(),
                    c.blob.length
                )
            })
            .map_err(self.ctx(obj, c))?;
        self.source(obj, c)?
            .read_at(c.blob.offset + offset, dst)
            .map_err(self.ctx(obj, c))
    }

    /// Hands `sink` a component's decoded bytes in order, in pieces of `ZSTD_FRAME_SIZE`
    /// bytes (a multiple of every element size; the last piece shorter). Memory: one piece
    /// for raw components and zstd ones (read frame by frame through their index when
    /// range reads are cheap, else decoded as one stream from the start, plus the
    /// decoder's window); components of other formats' pipelines and legacy swapped data
    /// are decoded whole once and handed out from memory. A zstd component whose frame
    /// index can't be built (a seek table that lies) is refused with that error.
    pub fn for_each_piece(
        &self,
        object: usize,
        component: usize,
        mut sink: impl FnMut(&[u8]) -> Result<()>,
    ) -> Result<()> {
        const PIECE: usize = crate::codec::ZSTD_FRAME_SIZE;
        let (obj, c) = self.component(object, component)?;
        let length = c.decoded_length;
        if length == 0 {
            // Nothing to hand out, but an encoded empty component is still decoded (checked).
            return self.read_into(object, component, &mut []);
        }
        if decode::has_frames(c) && self.cached(object, component).is_none() {
            // The index first: a seek table that disagrees with the stream is a fault of
            // the component, reported here as it is by range reads.
            let index = self.frame_index(object, component)?;
            if !decode::range_reads_are_cheap(c, Some(&index)) {
                return decode::zstd_pieces(self.source(obj, c)?, &c.blob, PIECE, &mut sink)
                    .map_err(self.ctx(obj, c));
            }
        } else if !self.range_reads_are_cheap(object, component)? {
            let all = self.read_to_vec(object, component)?;
            return all.chunks(PIECE).try_for_each(sink);
        }
        let mut buf = zeroed_vec(length.min(PIECE as u64))?;
        let mut offset = 0u64;
        while offset < length {
            let n = (length - offset).min(buf.len() as u64) as usize;
            self.read_range(object, component, offset, &mut buf[..n])?;
            sink(&buf[..n])?;
            offset += n as u64;
        }
        Ok(())
    }

    /// True when `read_range` of a piece of this component costs about the piece, in every
    /// kind of source (mapped, pread, memory): raw components, components a view has
    /// cached, and zstd ones whose frame index has entries of at most `ZSTD_FRAME_SIZE`
    /// decoded bytes (this library's frames, with or without a seek table). Otherwise a
    /// range read decodes from the start of a large frame (or, for other formats'
    /// pipelines, the whole component), so a caller streaming a large component should use
    /// `for_each_piece`. Builds the frame index if needed (reads the seek table or frame
    /// headers); a component whose index can't be built is not cheap.
    pub fn range_reads_are_cheap(&self, object: usize, component: usize) -> Result<bool> {
        let (_, c) = self.component(object, component)?;
        if self.cached(object, component).is_some() {
            return Ok(true);
        }
        let index = match decode::has_frames(c) {
            true => self.frame_index(object, component).ok(),
            false => None,
        };
        Ok(decode::range_reads_are_cheap(c, index.as_deref()))
    }

    /// The frame index of a zstd component: where each frame's stored bytes and decoded
    /// bytes lie, for range reads and for loaders that fetch and decode frames themselves.
    /// Built on the first call from the seek table at the end of the stored bytes (which
    /// this library writes for every component of several frames), or, without one, by
    /// walking the frame and block headers (a few bytes per block, read with `pread` even
    /// from a mapped file; nothing is decoded); then cached, thread-safe. A seek table that
    /// disagrees with the component (sizes, counts, sums, reserved bits) is a `Format`
    /// error. Memory: at most 1 MiB per index (streams of more than 65,536 frames get
    /// entries of several frames each) and 64 MiB for all the indexes a reader caches;
    /// past that, each call builds an index of its own. `InvalidArgument` for a component
    /// that is not zstd frames of its bytes (raw, another format's pipeline, legacy
    /// swapped data).
    pub fn frame_index(&self, object: usize, component: usize) -> Result<Arc<FrameIndex>> {
        let (obj, c) = self.component(object, component)?;
        let cache = self.caches.cell(&self.model.objects, object, component);
        if let Some(index) = cache.index.get() {
            return Ok(index.clone());
        }
        let _guard = cache.lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(index) = cache.index.get() {
            return Ok(index.clone());
        }
        let source = self.source(obj, c)?;
        let index = Arc::new(decode::frame_index(source, c).map_err(self.ctx(obj, c))?);
        let size = index.heap_bytes();
        let reserved = self
            .index_total
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |total| {
                total.checked_add(size).filter(|&t| t <= INDEX_CACHE_BUDGET)
            });
        if reserved.is_ok() {
            let _ = cache.index.set(index.clone());
        }
        Ok(index)
    }

    /// Reads a component's values as `dtype` (see `convert::plan`): the stored bytes when
    /// `dtype` is the storage dtype, ggml blocks dequantized to f32, f16 or bf16 (on
    /// several threads when large), other elements converted one by one. `dst` must be
    /// exactly the value count x `dtype.size()` bytes (for blocks, the object's element
    /// count). Borrows the mapped or cached bytes when it can, else decodes into a
    /// temporary buffer. A refused call leaves `dst` untouched.
    pub fn read_as(
        &self,
        object: usize,
        component: usize,
        dtype: DType,
        dst: &mut [u8],
    ) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        let ctx = self.ctx(obj, c);
        let (plan, total) = self.plan(obj, c, dtype).map_err(&ctx)?;
        let needed = total
            .checked_mul(dtype.size() as u64)
            .ok_or_else(|| ctx(err!(Limit, "the converted size overflows")))?;
        check_dst(needed, dst.len()).map_err(&ctx)?;
        if matches!(plan, Plan::Copy) {
            return self.read_into(object, component, dst);
        }
        self.convert_values(object, component, plan, dtype, 0, dst)
    }

    /// `read_as` of the values `[first, first + dst.len() / dtype.size())`: a slice of a
    /// tensor (e.g. the rows a tensor-parallel rank needs) read converted or dequantized.
    /// For ggml blocks the range must start and end on block boundaries (whole rows
    /// always do). Reads only the bytes the range needs (for zstd, only the frames that
    /// hold them). `InvalidArgument` for a range outside the values, not block-aligned,
    /// or a `dst` that is not whole values.
    pub fn read_as_range(
        &self,
        object: usize,
        component: usize,
        dtype: DType,
        first: u64,
        dst: &mut [u8],
    ) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        let ctx = self.ctx(obj, c);
        let (plan, total) = self.plan(obj, c, dtype).map_err(&ctx)?;
        let width = dtype.size();
        if !dst.len().is_multiple_of(width) {
            return Err(ctx(err!(
                InvalidArgument,
                "a buffer of {} bytes is not whole {dtype} values",
                dst.len()
            )));
        }
        let count = (dst.len() / width) as u64;
        if first.checked_add(count).is_none_or(|end| end > total) {
            return Err(ctx(err!(
                InvalidArgument,
                "values [{first}, {first} + {count}) are outside the component's {total}"
            )));
        }
        if let Plan::Dequantize(t) = plan
            && !(first.is_multiple_of(t.block_size()) && count.is_multiple_of(t.block_size()))
        {
            return Err(ctx(err!(
                InvalidArgument,
                "values [{first}, {first} + {count}) don't start and end on {} block \
                 boundaries (multiples of {} values)",
                t.name(),
                t.block_size()
            )));
        }
        if count == 0 {
            return Ok(());
        }
        self.convert_values(object, component, plan, dtype, first, dst)
    }

    /// The conversion plan of a component read as `dtype`, and how many values it holds
    /// (for blocks, the object's element count, checked against the bytes).
    fn plan(&self, obj: &Object, c: &Component, dtype: DType) -> Result<(Plan, u64)> {
        let plan = crate::convert::plan(c.dtype, c.logical_type(), dtype)?;
        let total = match plan {
            // Packed sub-byte floats are one stream of values: blocks may span rows.
            Plan::Dequantize(t) if crate::quant::packed_of(c.dtype, c.logical_type()).is_some() => {
                c.decoded_length / t.type_size() * t.block_size()
            }
            Plan::Dequantize(t) => {
                let (rows, row_size) = crate::quant::rows(t, obj.shape(), c.decoded_length)?;
                rows * (row_size / t.type_size() * t.block_size())
            }
            Plan::Copy | Plan::Elements => c.element_count(),
        };
        Ok((plan, total))
    }

    /// Values `[first, first + dst.len() / to.size())` of a component, converted by `plan`
    /// (checked, with the range, by the caller).
    fn convert_values(
        &self,
        object: usize,
        component: usize,
        plan: Plan,
        to: DType,
        first: u64,
        dst: &mut [u8],
    ) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        let count = (dst.len() / to.size()) as u64;
        // Source bytes per group of values, and values per group.
        let (unit, per) = match plan {
            Plan::Dequantize(t) => (t.type_size(), t.block_size()),
            Plan::Copy | Plan::Elements => (c.dtype.size() as u64, 1),
        };
        let range = first / per * unit..(first + count) / per * unit;
        let temp;
        let src: &[u8] = match self.borrowed(object, component, c) {
            Some(all) => &all[range.start as usize..range.end as usize],
            None => {
                temp = {
                    let mut v = zeroed_vec(range.end - range.start).map_err(self.ctx(obj, c))?;
                    self.read_range(object, component, range.start, &mut v)?;
                    v
                };
                &temp
            }
        };
        match plan {
            Plan::Copy => dst.copy_from_slice(src),
            Plan::Elements => crate::convert::convert(c.dtype, c.logical_type(), src, to, dst),
            Plan::Dequantize(t) => crate::quant::dequantize(t, src, to, dst, crate::pool::threads)
                .map_err(self.ctx(obj, c))?,
        }
        Ok(())
    }

    /// The decoded bytes when they can be borrowed: mapped raw data, or a cached decode.
    pub(crate) fn borrowed(&self, object: usize, component: usize, c: &Component) -> Option<&[u8]> {
        if c.is_plain()
            && let Ok(source) = self.files.part(c.blob.file)
            && let Some(data) = source.stored(c.blob.offset, c.blob.length)
        {
            return Some(data);
        }
        self.cached(object, component).map(AlignedBuf::as_slice)
    }

    /// Checks one component's stored digest. `NotFound` when it has none, `Unsupported`
    /// for an algorithm this build doesn't know, `Checksum` on mismatch. Reads every stored
    /// byte of the component once.
    pub fn verify_component(&self, object: usize, component: usize) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        verify::component(self.source(obj, c)?, &self.model, object, component)
            .map_err(self.ctx(obj, c))
    }

    /// Checks every stored digest in the file (each stored blob once, in parallel) and
    /// returns the first failure in file order. A file without digests verifies as Ok.
    pub fn verify(&self) -> Result<()> {
        verify::all(&self.model, &|oi, ci| {
            match self.verify_component(oi, ci) {
                // Checked for its values only (a v2 bool or fp4 component without a digest).
                Err(e)
                    if e.kind() == ErrorKind::NotFound
                        && self.model.objects[oi].components[ci].digest().is_none() =>
                {
                    Ok(())
                }
                r => r,
            }
        })?;
        self.verify_shards()
    }

    /// A zTensor v2 set's shards against the identities its root's table records: their
    /// whole-file digests (§7.3; sizes were checked when each was opened). Opens any
    /// shard not open yet and reads it whole.
    fn verify_shards(&self) -> Result<()> {
        for file in 1..=self.model.v2_shards.len() {
            self.verify_shard(file)?;
        }
        Ok(())
    }

    /// Checks file `index` of a set against the identity its root records for it: a
    /// zTensor v2 shard's size and whole-file digest (§7.3; opens it and reads it whole).
    /// `Ok(false)` when the set records no identity for that file (the root itself, the
    /// files of an index or a GGUF split set); `Checksum` on a mismatch.
    pub fn verify_shard(&self, index: usize) -> Result<bool> {
        if index >= self.shard_count() {
            self.shard_path(index)?;
        }
        let Some(entry) = index
            .checked_sub(1)
            .and_then(|i| self.model.v2_shards.get(i))
        else {
            return Ok(false);
        };
        let in_file = |e: Error| match self.files.path(index as u32) {
            Some(p) => e.context(p),
            None => e,
        };
        let source = self.files.part(index as u32).map_err(in_file)?;
        ztensor_v2::shards::verify_shard(source, entry).map_err(in_file)?;
        Ok(true)
    }

    /// The content digest of a zTensor v2 file (its §6.4 identity of the model, whatever
    /// its layout, sharding or encodings): `"xxh3:<hex>"` or `"sha256:<hex>"`, computed
    /// from the manifest alone. `Unsupported` for other files and for a v2 file with a
    /// part without a digest (the content digest is then undefined).
    pub fn content_digest(&self, algorithm: crate::DigestAlgorithm) -> Result<String> {
        ztensor_v2::encode::content_digest(&self.model, algorithm)
    }

    /// Checks an object's values beyond what the manifest shows: sparse structure (indptr
    /// starts at 0, never decreases and ends at nnz; indices and coordinates in range) and
    /// bool bytes (0 or 1). Decodes the components it checks.
    pub fn validate_values(&self, object: usize) -> Result<()> {
        let obj = self.object(object)?;
        crate::model::schema::check_values(obj, &mut |ci| self.read_to_vec(object, ci)).map_err(
            |e| {
                // A v2 file's value rules are its layouts' data rules and Appendix A's.
                let e = match self.model.traits.value_rules && e.kind() == ErrorKind::Format {
                    true => ztensor_v2::reject(ztensor_v2::Rule::LayoutData, e.message()),
                    false => e,
                };
                e.context(format!("object '{}'", obj.name()))
            },
        )
    }
}

/// A destination must be exactly the size the call fills.
pub(crate) fn check_dst(needed: u64, given: usize) -> Result<()> {
    match (given as u64).cmp(&needed) {
        std::cmp::Ordering::Less => bail!(
            BufferTooSmall,
            "buffer of {given} bytes is smaller than the {needed} bytes to read"
        ),
        std::cmp::Ordering::Greater => {
            bail!(
                InvalidArgument,
                "buffer of {given} bytes is larger than the {needed} bytes to read; sizes must match"
            )
        }
        std::cmp::Ordering::Equal => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::ztensor::{ALIGNMENT, MAGIC_V1, manifest};
    use crate::model::{Blob, CText, Encoding};
    use crate::writer::{WriteOptions, Writer};

    #[test]
    fn range_reads_are_cheap_for_raw_and_our_frames_only() {
        let data: Vec<u8> = (0..crate::codec::ZSTD_FRAME_SIZE + 100)
            .map(|i| (i % 251) as u8)
            .collect();
        let mut w = Writer::new(Vec::new()).unwrap();
        let shape = [data.len() as u64];
        w.add("raw", DType::U8, &shape, &data, &WriteOptions::default())
            .unwrap();
        w.add("ours", DType::U8, &shape, &data, &WriteOptions::zstd(1))
            .unwrap();
        let bytes = w.finish().unwrap();
        let r = Reader::from_slice(&bytes).unwrap();
        assert!(r.range_reads_are_cheap(0, 0).unwrap());
        assert!(r.range_reads_are_cheap(1, 0).unwrap());
        assert!(r.range_reads_are_cheap(2, 0).is_err());
        assert!(r.range_reads_are_cheap(0, 1).is_err());

        // One frame larger than ZSTD_FRAME_SIZE (as other writers make): not cheap.
        let single = crate::codec::zstd_compress(&data, 1).unwrap();
        let len = data.len() as u64;
        let object = Object {
            name: CText::new("single").unwrap(),
            format: CText::new("dense").unwrap(),
            shape: vec![len].into(),
            attributes: None,
            components: crate::model::Components::One(Component {
                role: CText::new("data").unwrap(),
                dtype: DType::U8,
                logical_type: None,
                blob: Blob {
                    file: 0,
                    offset: ALIGNMENT,
                    length: single.len() as u64,
                    encoding: Encoding::Zstd,
                    decoded_length: len,
                },
                decoded_length: len,
                digest: None,
                steps: Default::default(),
            }),
        };
        let mut file = MAGIC_V1.to_vec();
        file.resize(ALIGNMENT as usize, 0);
        file.extend_from_slice(&single);
        let manifest = manifest::encode(None, &[object]);
        file.extend_from_slice(&manifest);
        file.extend_from_slice(&(manifest.len() as u64).to_le_bytes());
        file.extend_from_slice(MAGIC_V1);
        let r = Reader::from_slice(&file).unwrap();
        assert!(!r.range_reads_are_cheap(0, 0).unwrap());
        let mut piece = [0u8; 3];
        r.read_range(0, 0, 7, &mut piece).unwrap();
        assert_eq!(piece, data[7..10]);

        // Legacy big-endian data is swapped on read: every range read decodes it whole.
        let legacy = std::fs::read(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("tests/vectors/hostile/v01_ok_zstd_big_endian.zt"),
        )
        .unwrap();
        let r = Reader::from_slice(&legacy).unwrap();
        assert!(!r.range_reads_are_cheap(0, 0).unwrap());
    }
}
