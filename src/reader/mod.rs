//! Opening files (mmap, caller memory, or pread), looking objects up, and getting their
//! bytes: zero-copy views, decoded views cached once, copies into caller buffers, range
//! reads and digest verification. A `Reader` is immutable after open and `Send + Sync`.

use std::sync::atomic::AtomicU64;

use crate::buffer::AlignedBuf;
use crate::dtype::DType;
use crate::error::{Error, Result, bail, err};
use crate::formats::ztensor_v2;
use crate::limits::Limits;
use crate::model::{Attributes, Component, Container, Model, Object};
use crate::sets::Files;
use crate::source::{Advice, Source};
use crate::value::cbor::Value;
use crate::value::typed::{self, AttrValue, DocCache};

mod cache;
mod checks;
mod open;
mod read;

use cache::{Caches, INDEX_CACHE_BUDGET};

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
    /// With `use_mmap`: map files private and writable (copy-on-write), so memory a view
    /// points into may be written: the write changes this process's copy of the page,
    /// never the file, and later views of the same bytes from this reader see it. For
    /// bindings whose arrays are writable (PyTorch tensors). Default: read-only mappings.
    pub copy_on_write: bool,
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
            copy_on_write: false,
            limits: Limits::default(),
        }
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

impl<'a> Reader<'a> {
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
mod tests;
