//! Opening files (mmap, caller memory, or pread), looking objects up, and getting their
//! bytes: zero-copy views, decoded views cached once, copies into caller buffers, range
//! reads and digest verification. A `Reader` is immutable after open and `Send + Sync`.

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use memmap2::Mmap;

use crate::buffer::{AlignedBuf, zeroed_vec};
use crate::cbor::Value;
use crate::codec::{
    Frame, decode_frames, frame_index, parse_digest, sized_frames, zstd_decode_into,
};
use crate::dtype::DType;
use crate::error::{Error, Result, bail, err};
use crate::limits::Limits;
use crate::model::{
    Attributes, Blob, Component, Container, Encoding, Model, Object, Transform, validate,
};
use crate::{formats, legacy, manifest};

/// Magic bytes of v1.x files, at both ends.
pub const MAGIC_V1: &[u8; 8] = b"ZTEN1000";
/// Magic bytes at the start of legacy v0.1 files.
pub const MAGIC_V01: &[u8; 8] = b"ZTEN0001";

/// How to open a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpenOptions {
    /// Map the file (default). When false, every access is a `pread` into memory: nothing
    /// is zero-copy, but a file truncated by someone else can't raise SIGBUS.
    pub use_mmap: bool,
    /// Verify every digest while opening (reads every stored byte once).
    pub verify_on_open: bool,
    /// Safety limits.
    pub limits: Limits,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            use_mmap: true,
            verify_on_open: false,
            limits: Limits::default(),
        }
    }
}

enum Source<'a> {
    /// The mapping, and the file for large copies: `pread` into the caller's buffer beats
    /// faulting the mapping's pages in one by one and copying them.
    Map(Mmap, File),
    Slice(&'a [u8]),
    File(File),
}

impl Source<'_> {
    /// A blob's stored bytes when the file is addressable memory (bounds checked at open).
    fn stored(&self, blob: &Blob) -> Option<&[u8]> {
        self.bytes()
            .map(|all| &all[blob.offset as usize..(blob.offset + blob.length) as usize])
    }

    /// The whole file when it is addressable memory.
    fn bytes(&self) -> Option<&[u8]> {
        match self {
            Source::Map(m, _) => Some(m),
            Source::Slice(s) => Some(s),
            Source::File(_) => None,
        }
    }

    /// `dst.len()` bytes at `offset`; the caller has bounds-checked the range.
    fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        const PREAD_FROM: usize = 1 << 20;
        match self {
            Source::File(f) | Source::Map(_, f)
                if matches!(self, Source::File(_)) || dst.len() >= PREAD_FROM =>
            {
                f.read_exact_at(dst, offset).map_err(|e| {
                    Error::io(
                        format_args!("reading {} bytes at offset {offset}", dst.len()),
                        e,
                    )
                })
            }
            _ => {
                let all = self.bytes().expect("memory source");
                let start = offset as usize;
                dst.copy_from_slice(&all[start..start + dst.len()]);
                Ok(())
            }
        }
    }

    /// The bytes `[offset, offset + len)`: borrowed from memory, or read from the file.
    fn region(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        if let Some(all) = self.bytes() {
            return Ok(Cow::Borrowed(
                &all[offset as usize..(offset + len) as usize],
            ));
        }
        let mut v = zeroed_vec(len)?;
        self.read_at(offset, &mut v)?;
        Ok(Cow::Owned(v))
    }
}

struct Cache {
    cell: OnceLock<AlignedBuf>,
    lock: Mutex<()>,
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

/// An open file. Immutable after open; every method may be called from many threads.
pub struct Reader<'a> {
    source: Source<'a>,
    model: Model,
    limits: Limits,
    caches: Box<[Cache]>,
    first_cache: Box<[usize]>,
    /// The path, for error messages, when opened from one.
    origin: Option<Box<str>>,
    cached_total: AtomicU64,
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

    /// Opens a file by path with options.
    pub fn open_with(path: impl AsRef<Path>, options: &OpenOptions) -> Result<Reader<'static>> {
        let path = path.as_ref();
        let ctx = |e: Error| e.context(path.display());
        let file = File::open(path)
            .map_err(|e| Error::io(format_args!("opening {}", path.display()), e))?;
        let source = if options.use_mmap {
            let len = file
                .metadata()
                .map_err(|e| ctx(Error::io("reading its size", e)))?
                .len();
            if len < 8 {
                return Err(ctx(err!(
                    Format,
                    "file is {len} bytes, too short to be a tensor file"
                )));
            }
            // SAFETY: the mapping is read-only. If another process truncates the file while it
            // is mapped, access faults (SIGBUS); `use_mmap = false` avoids that.
            let map =
                unsafe { Mmap::map(&file) }.map_err(|e| ctx(Error::io("mapping the file", e)))?;
            Source::Map(map, file)
        } else {
            Source::File(file)
        };
        let mut reader = Reader::from_source(source, options).map_err(ctx)?;
        reader.origin = Some(path.display().to_string().into());
        Ok(reader)
    }
}

impl<'a> Reader<'a> {
    /// Opens a file held in memory; the bytes are borrowed, never copied.
    pub fn from_slice(bytes: &'a [u8]) -> Result<Reader<'a>> {
        Self::from_slice_with(bytes, &OpenOptions::default())
    }

    /// Opens a file held in memory, with options (`use_mmap` is ignored).
    pub fn from_slice_with(bytes: &'a [u8], options: &OpenOptions) -> Result<Reader<'a>> {
        Reader::from_source(Source::Slice(bytes), options)
    }

    fn from_source(source: Source<'a>, options: &OpenOptions) -> Result<Reader<'a>> {
        let limits = options.limits;
        let size = match &source {
            Source::File(f) => f
                .metadata()
                .map_err(|e| Error::io("reading the file size", e))?
                .len(),
            other => other.bytes().expect("memory source").len() as u64,
        };
        let model = read_model(&source, size, &limits)?;
        let mut first_cache = Vec::with_capacity(model.objects.len());
        let mut count = 0usize;
        for o in &model.objects {
            first_cache.push(count);
            count += o.components.len();
        }
        let caches = (0..count)
            .map(|_| Cache {
                cell: OnceLock::new(),
                lock: Mutex::new(()),
            })
            .collect();
        let reader = Reader {
            source,
            model,
            limits,
            caches,
            first_cache: first_cache.into_boxed_slice(),
            origin: None,
            cached_total: AtomicU64::new(0),
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

    /// File-level attributes (a CBOR map), decoded on each call; None when absent.
    pub fn attributes(&self) -> Option<Value> {
        self.model.attributes.as_ref().map(Attributes::value)
    }

    /// File-level attributes as stored (CBOR bytes), without decoding.
    pub fn raw_attributes(&self) -> Option<&Attributes> {
        self.model.attributes.as_ref()
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
    pub fn find(&self, name: &str) -> Option<usize> {
        self.model.by_name.find(&self.model.objects, name)
    }

    /// The limits this reader was opened with.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    pub(crate) fn model(&self) -> &Model {
        &self.model
    }

    fn component(&self, object: usize, component: usize) -> Result<(&Object, &Component)> {
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
    fn ctx<'s>(&'s self, obj: &'s Object, c: &'s Component) -> impl Fn(Error) -> Error + 's {
        move |e| match &self.origin {
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

    /// A view of a component's decoded bytes. Raw components are zero-copy (a slice of the
    /// mapping or the caller's memory) when that is 64-byte aligned, or for formats other
    /// than zTensor, which don't align their data to 64, aligned to the element size.
    /// Anything else is decoded (or copied) once into 64-byte aligned memory the reader
    /// owns and keeps until it is dropped; concurrent first calls decode once.
    pub fn view(&self, object: usize, component: usize) -> Result<View<'_>> {
        let (obj, c) = self.component(object, component)?;
        let alignment = self.model.container.view_alignment(c.dtype);
        if c.is_plain()
            && let Some(data) = self.source.stored(&c.blob)
            && ((data.as_ptr() as usize).is_multiple_of(alignment) || data.is_empty())
        {
            return Ok(View {
                data,
                dtype: c.dtype,
                zero_copy: true,
            });
        }
        let cache = &self.caches[self.first_cache[object] + component];
        if let Some(buf) = cache.cell.get() {
            return Ok(View {
                data: buf.as_slice(),
                dtype: c.dtype,
                zero_copy: false,
            });
        }
        let _guard = cache.lock.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(buf) = cache.cell.get() {
            return Ok(View {
                data: buf.as_slice(),
                dtype: c.dtype,
                zero_copy: false,
            });
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
        let mut buf = AlignedBuf::zeroed(len).map_err(&ctx)?;
        self.decode_into(c, buf.as_mut_slice()).map_err(&ctx)?;
        self.cached_total
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |total| {
                total.checked_add(len).filter(|&t| t <= limit)
            })
            .map_err(|_| ctx(refuse()))?;
        let buf = cache.cell.get_or_init(|| buf);
        Ok(View {
            data: buf.as_slice(),
            dtype: c.dtype,
            zero_copy: false,
        })
    }

    /// Copies or decodes a component into `dst`, which must be exactly `decoded_length`
    /// bytes. Decodes straight into `dst`, with no intermediate copy, unless a view already
    /// cached the decoded bytes (then it copies them).
    pub fn read_into(&self, object: usize, component: usize, dst: &mut [u8]) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        check_dst(c.decoded_length, dst.len()).map_err(self.ctx(obj, c))?;
        if let Some(buf) = self.caches[self.first_cache[object] + component].cell.get() {
            dst.copy_from_slice(buf.as_slice());
            return Ok(());
        }
        self.decode_into(c, dst).map_err(self.ctx(obj, c))
    }

    /// Reads a component into a new vector (allocates `decoded_length` bytes).
    pub fn read_to_vec(&self, object: usize, component: usize) -> Result<Vec<u8>> {
        let (obj, c) = self.component(object, component)?;
        let mut v = zeroed_vec(c.decoded_length).map_err(self.ctx(obj, c))?;
        self.read_into(object, component, &mut v)?;
        Ok(v)
    }

    /// Reads the decoded bytes `[offset, offset + dst.len())` of a component into `dst`.
    /// For zstd components written as independent frames with recorded sizes (as this
    /// library writes them) only the frames overlapping the range are decoded; other zstd
    /// streams are decoded whole into a temporary buffer. Nothing is cached.
    pub fn read_range(
        &self,
        object: usize,
        component: usize,
        offset: u64,
        dst: &mut [u8],
    ) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
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
            .map_err(self.ctx(obj, c))?;
        if dst.is_empty() {
            return Ok(());
        }
        if let Some(buf) = self.caches[self.first_cache[object] + component].cell.get() {
            dst.copy_from_slice(&buf.as_slice()[offset as usize..offset as usize + dst.len()]);
            return Ok(());
        }
        let ctx = self.ctx(obj, c);
        match (c.blob.encoding, c.transform) {
            (Encoding::Raw, Transform::None) => self
                .source
                .read_at(c.blob.offset + offset, dst)
                .map_err(ctx),
            (Encoding::Zstd, Transform::None) => self.zstd_range(&c.blob, offset, dst).map_err(ctx),
            _ => {
                let all = self.read_to_vec(object, component)?;
                dst.copy_from_slice(&all[offset as usize..offset as usize + dst.len()]);
                Ok(())
            }
        }
    }

    /// True when `read_range` of a piece of this component costs about the piece: raw
    /// components, and zstd streams of independent frames with recorded sizes of at most
    /// `ZSTD_FRAME_SIZE` decoded bytes each (what this library writes) in a mapped file or
    /// caller memory. Otherwise each `read_range` decodes the whole component, so a caller
    /// streaming a large component should read it whole once instead. Reads only the zstd
    /// frame headers.
    pub fn range_reads_are_cheap(&self, object: usize, component: usize) -> Result<bool> {
        let (_, c) = self.component(object, component)?;
        if self.caches[self.first_cache[object] + component]
            .cell
            .get()
            .is_some()
        {
            return Ok(true);
        }
        Ok(match (c.blob.encoding, c.transform) {
            (Encoding::Raw, Transform::None) => true,
            (Encoding::Zstd, Transform::None) => {
                match (
                    self.source.stored(&c.blob),
                    usize::try_from(c.decoded_length),
                ) {
                    (Some(stored), Ok(total)) => frame_index(stored, total).is_some_and(|f| {
                        f.iter()
                            .all(|frame| frame.dst.len() <= crate::codec::ZSTD_FRAME_SIZE)
                    }),
                    _ => false,
                }
            }
            _ => false,
        })
    }

    fn zstd_range(&self, blob: &Blob, offset: u64, dst: &mut [u8]) -> Result<()> {
        let stored = self.source.region(blob.offset, blob.length)?;
        let total = usize::try_from(blob.decoded_length)
            .map_err(|_| err!(Limit, "component too large for memory"))?;
        // Frames with recorded sizes (what this library writes): decode only those needed.
        // Otherwise decode the whole stream into a temporary buffer, exactly as a read
        // would, so that range reads accept and refuse exactly what reads do.
        let frames = frame_index(&stored, total).unwrap_or_else(|| {
            vec![Frame {
                src: 0..stored.len(),
                dst: 0..total,
            }]
        });
        decode_range_of_frames(&stored, &frames, offset as usize, dst)
    }

    /// Decodes a component into `dst` (exactly its decoded length).
    fn decode_into(&self, c: &Component, dst: &mut [u8]) -> Result<()> {
        match c.transform {
            Transform::None => self.decode_blob_into(&c.blob, dst),
            Transform::SwapBytes(width) => {
                self.decode_blob_into(&c.blob, dst)?;
                swap_in_place(dst, width);
                Ok(())
            }
            Transform::External(index) => {
                let stored = self.source.region(c.blob.offset, c.blob.length)?;
                self.model.decoders[index as usize].decode(&stored, dst)
            }
            other => {
                let mut blob = zeroed_vec(c.blob.decoded_length)?;
                self.decode_blob_into(&c.blob, &mut blob)?;
                legacy::gather(other, &blob, dst)
            }
        }
    }

    fn decode_blob_into(&self, blob: &Blob, dst: &mut [u8]) -> Result<()> {
        debug_assert_eq!(dst.len() as u64, blob.decoded_length);
        match blob.encoding {
            Encoding::Raw => self.source.read_at(blob.offset, dst),
            Encoding::Zstd => {
                if blob.length > ZSTD_WINDOW as u64 {
                    let done = match &self.source {
                        Source::Map(map, _) => decode_mapped_windows(map, blob, dst)?,
                        Source::File(file) => decode_windowed(file, blob, dst)?,
                        Source::Slice(_) => false,
                    };
                    if done {
                        return Ok(());
                    }
                }
                let stored = self.source.region(blob.offset, blob.length)?;
                zstd_decode_into(&stored, dst)
            }
            Encoding::Pipeline => bail!(Internal, "a pipeline blob without its decoder"),
        }
    }

    /// Reads a component converted element by element into `dtype` (see `convert`):
    /// `dst` must be exactly element count x `dtype.size()` bytes. Reading as the stored
    /// dtype is `read_into`. Borrows the mapped or cached bytes when it can, else decodes
    /// into a temporary buffer.
    pub fn read_as(
        &self,
        object: usize,
        component: usize,
        dtype: DType,
        dst: &mut [u8],
    ) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        let ctx = self.ctx(obj, c);
        crate::convert::check(c.dtype, c.logical_type(), dtype).map_err(&ctx)?;
        let needed = c
            .element_count()
            .checked_mul(dtype.size() as u64)
            .ok_or_else(|| ctx(err!(Limit, "the converted size overflows")))?;
        check_dst(needed, dst.len()).map_err(&ctx)?;
        if dtype == c.dtype {
            return self.read_into(object, component, dst);
        }
        let temp;
        let src: &[u8] = match self.borrowed(object, component, c) {
            Some(s) => s,
            None => {
                temp = self.read_to_vec(object, component)?;
                &temp
            }
        };
        crate::convert::convert(c.dtype, c.logical_type(), src, dtype, dst);
        Ok(())
    }

    /// The decoded bytes when they can be borrowed: mapped raw data, or a cached decode.
    fn borrowed(&self, object: usize, component: usize, c: &Component) -> Option<&[u8]> {
        if c.is_plain()
            && let Some(data) = self.source.stored(&c.blob)
        {
            return Some(data);
        }
        self.caches[self.first_cache[object] + component]
            .cell
            .get()
            .map(AlignedBuf::as_slice)
    }

    /// Checks one component's stored digest. `NotFound` when it has none, `Unsupported`
    /// for an algorithm this build doesn't know, `Checksum` on mismatch. Reads every stored
    /// byte of the component once.
    pub fn verify_component(&self, object: usize, component: usize) -> Result<()> {
        let (obj, c) = self.component(object, component)?;
        let ctx = self.ctx(obj, c);
        let digest = c
            .digest()
            .ok_or_else(|| ctx(err!(NotFound, "the component has no digest")))?;
        let (offset, length) = self.model.digest_region(object, component);
        let region = Blob {
            offset,
            length,
            encoding: Encoding::Raw,
            decoded_length: length,
        };
        self.check_digest(&region, digest).map_err(ctx)
    }

    /// Hashes the stored bytes of `blob` (a region of the file) and compares the digest.
    fn check_digest(&self, blob: &Blob, digest: &str) -> Result<()> {
        let xxh3 = self.model.container == Container::Tensogram;
        let expected = parse_digest(digest, xxh3)?;
        let mut hasher = expected.hasher();
        match self.source.stored(blob) {
            Some(stored) => hasher.update(stored),
            None => {
                let mut chunk = vec![0u8; (1 << 20).min(blob.length as usize)];
                let mut done = 0u64;
                while done < blob.length {
                    let n = chunk.len().min((blob.length - done) as usize);
                    self.source.read_at(blob.offset + done, &mut chunk[..n])?;
                    hasher.update(&chunk[..n]);
                    done += n as u64;
                }
            }
        }
        expected.check(hasher)
    }

    /// Checks every stored digest in the file (each stored blob once) and returns the first
    /// failure. A file without digests verifies as Ok.
    pub fn verify(&self) -> Result<()> {
        let mut seen = std::collections::HashSet::new();
        let mut work: Vec<(usize, usize)> = Vec::new();
        for (oi, obj) in self.model.objects.iter().enumerate() {
            for (ci, c) in obj.components.iter().enumerate() {
                if let Some(d) = c.digest()
                    && seen.insert((self.model.digest_region(oi, ci), d))
                {
                    work.push((oi, ci));
                }
            }
        }
        // Components are hashed in parallel: each worker takes the next unclaimed one; the
        // failure reported is the first in file order, as a sequential pass would give.
        // Threads pay off only for enough bytes (and each spawn costs the calling thread a
        // small, once-only allocation in Rust's std, which leak checkers report).
        let bytes: u64 = work
            .iter()
            .map(|&(oi, ci)| self.model.digest_region(oi, ci).1)
            .sum();
        let workers = crate::codec::threads().min(work.len());
        if workers <= 1 || bytes < 16 << 20 {
            return work
                .iter()
                .try_for_each(|&(oi, ci)| self.verify_component(oi, ci));
        }
        let next = std::sync::atomic::AtomicUsize::new(0);
        let failures = Mutex::new(Vec::new());
        std::thread::scope(|scope| {
            for _ in 0..workers {
                scope.spawn(|| {
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(&(oi, ci)) = work.get(i) else { break };
                        if let Err(e) = self.verify_component(oi, ci) {
                            failures
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push((i, e));
                        }
                    }
                });
            }
        });
        let failures = failures.into_inner().unwrap_or_else(|p| p.into_inner());
        match failures.into_iter().min_by_key(|(i, _)| *i) {
            Some((_, e)) => Err(e),
            None => Ok(()),
        }
    }

    /// Checks an object's values beyond what the manifest shows: sparse structure (indptr
    /// starts at 0, never decreases and ends at nnz; indices and coordinates in range) and
    /// bool bytes (0 or 1). Decodes the components it checks.
    pub fn validate_values(&self, object: usize) -> Result<()> {
        let obj = self.object(object)?;
        crate::validate::check_values(self, object, obj)
            .map_err(|e| e.context(format!("object '{}'", obj.name())))
    }
}

/// Compressed bytes held at once when decoding a large zstd component from a file.
const ZSTD_WINDOW: usize = 16 << 20;

/// Decodes a large zstd component from a file through a bounded window of compressed
/// bytes (read with `pread`, so neither a copy of the whole stream nor its mapped pages
/// add to the process's memory), each batch of whole frames decoded in parallel straight
/// into `dst`. Returns false when the stream doesn't suit (a frame without a recorded
/// size, or larger than the window): the caller then decodes it whole.
fn decode_windowed(file: &File, blob: &Blob, dst: &mut [u8]) -> Result<bool> {
    let mut buf: Vec<u8> = Vec::with_capacity(ZSTD_WINDOW);
    let (mut read, mut out) = (0u64, 0usize);
    loop {
        let want = (ZSTD_WINDOW - buf.len()).min((blob.length - read) as usize);
        let old = buf.len();
        buf.resize(old + want, 0);
        file.read_exact_at(&mut buf[old..], blob.offset + read)
            .map_err(|e| {
                Error::io(
                    format_args!("reading {want} bytes at offset {}", blob.offset + read),
                    e,
                )
            })?;
        read += want as u64;
        let Some((frames, used, end)) = sized_frames(&buf, buf.len(), out, dst.len()) else {
            return Ok(false);
        };
        decode_frames(&buf[..used], &mut dst[out..end], &frames)?;
        out = end;
        buf.drain(..used);
        if read == blob.length {
            // Trailing bytes that are no whole frame, or a short total: the one-shot
            // decoder reports the precise fault.
            return Ok(buf.is_empty() && out == dst.len());
        }
    }
}

/// Decodes a large zstd component of a mapped file window by window: the frames in each
/// `ZSTD_WINDOW` of stored bytes are decoded in parallel straight from the mapping into
/// `dst`, then the window's pages are dropped from the process (`MADV_DONTNEED`; the
/// mapping is shared and read-only, so a later access just maps them again from the page
/// cache). So the stored stream never becomes resident as a whole, and no thread waits
/// for a copy. Returns false when the stream doesn't suit (a frame without a recorded
/// size): the caller then decodes it whole.
fn decode_mapped_windows(map: &Mmap, blob: &Blob, dst: &mut [u8]) -> Result<bool> {
    let base = blob.offset as usize;
    let stored = &map[base..base + blob.length as usize];
    let (mut used, mut out) = (0usize, 0usize);
    while used < stored.len() {
        let Some((frames, took, end)) = sized_frames(&stored[used..], ZSTD_WINDOW, out, dst.len())
        else {
            return Ok(false);
        };
        decode_frames(&stored[used..used + took], &mut dst[out..end], &frames)?;
        release_pages(map, base + used, took);
        used += took;
        out = end;
    }
    Ok(out == dst.len())
}

/// Drops the pages of `[offset, offset + len)` of a shared read-only mapping from the
/// process (they stay in the page cache; touching them again maps them again).
fn release_pages(map: &Mmap, offset: usize, len: usize) {
    // SAFETY: sysconf has no preconditions.
    let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) }).unwrap_or(4096);
    let start = offset / page * page;
    let end = (offset + len)
        .div_ceil(page)
        .saturating_mul(page)
        .min(map.len());
    if end > start {
        // SAFETY: the range lies inside the mapping, which starts page-aligned. For a
        // shared file mapping MADV_DONTNEED only unmaps pages: their contents are the
        // file's, so concurrent readers of the same pages see no change.
        unsafe {
            libc::madvise(
                map.as_ptr().add(start) as *mut libc::c_void,
                end - start,
                libc::MADV_DONTNEED,
            );
        }
    }
}

/// Decodes only the frames overlapping `[offset, offset + dst.len())`: frames inside the
/// range straight into `dst`, the partial ones at either end through a scratch buffer.
fn decode_range_of_frames(
    stored: &[u8],
    frames: &[Frame],
    offset: usize,
    dst: &mut [u8],
) -> Result<()> {
    let end = offset + dst.len();
    let first = frames.partition_point(|f| f.dst.end <= offset);
    for f in frames[first..].iter().take_while(|f| f.dst.start < end) {
        let src = &stored[f.src.clone()];
        let (from, to) = (f.dst.start.max(offset), f.dst.end.min(end));
        let out = &mut dst[from - offset..to - offset];
        if from == f.dst.start && to == f.dst.end {
            zstd_decode_into(src, out)?;
        } else {
            let mut scratch = zeroed_vec(f.dst.len() as u64)?;
            zstd_decode_into(src, &mut scratch)?;
            out.copy_from_slice(&scratch[from - f.dst.start..to - f.dst.start]);
        }
    }
    Ok(())
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

/// Reverses the bytes of each `width`-byte element.
pub(crate) fn swap_in_place(bytes: &mut [u8], width: u8) {
    if width > 1 {
        for chunk in bytes.chunks_exact_mut(width as usize) {
            chunk.reverse();
        }
    }
}

/// Recognises the format by its first bytes, then decodes and validates the model.
fn read_model(source: &Source<'_>, size: u64, limits: &Limits) -> Result<Model> {
    if size < 8 {
        bail!(
            Format,
            "file is {size} bytes, too short to be a tensor file"
        );
    }
    let mut head = [0u8; 16];
    let head = &mut head[..size.min(16) as usize];
    source.read_at(0, head)?;
    let (tail_len, legacy) = match &head[..8] {
        m if m == MAGIC_V1 => (16u64, false),
        m if m == MAGIC_V01 => (8u64, true),
        _ => {
            let Some(container) = formats::detect(head) else {
                bail!(
                    Format,
                    "not a zTensor, safetensors, GGUF or Tensogram file: the header magic is {:?}",
                    String::from_utf8_lossy(&head[..8])
                )
            };
            let read = |offset: u64, len: u64| -> Result<Cow<'_, [u8]>> {
                match offset.checked_add(len) {
                    Some(end) if end <= size => source.region(offset, len),
                    _ => bail!(
                        Format,
                        "bytes [{offset}, {offset} + {len}) reach past the end of the {size}-byte file"
                    ),
                }
            };
            let (model, data_end) = formats::parse(container, &read, size, limits)?;
            validate(&model, data_end, limits.max_decoded_size)?;
            return Ok(model);
        }
    };
    if size < 8 + tail_len + 1 {
        bail!(
            Format,
            "file is {size} bytes, too short to hold a header, a manifest and a footer"
        );
    }
    let mut tail = [0u8; 16];
    let tail = &mut tail[..tail_len as usize];
    source.read_at(size - tail_len, tail)?;
    if !legacy && &tail[8..16] != MAGIC_V1 {
        bail!(
            Format,
            "the footer magic is {:?}, not \"ZTEN1000\": the file is truncated or corrupt",
            String::from_utf8_lossy(&tail[8..16])
        );
    }
    let manifest_size = u64::from_le_bytes(tail[..8].try_into().expect("8 bytes"));
    if manifest_size == 0 {
        bail!(Format, "manifest size is 0");
    }
    if manifest_size > limits.max_manifest_size {
        bail!(
            Limit,
            "manifest size {manifest_size} is over the limit of {}",
            limits.max_manifest_size
        );
    }
    if manifest_size > size - 8 - tail_len {
        bail!(
            Format,
            "manifest size {manifest_size} does not fit between the header and the footer of a {size}-byte file"
        );
    }
    let start = size - tail_len - manifest_size;
    let bytes = source.region(start, manifest_size)?;
    let model = if legacy {
        legacy::parse(&bytes, start, limits)?
    } else {
        manifest::parse(&bytes, start, limits)?
    };
    drop(bytes);
    validate(&model, start, limits.max_decoded_size)?;
    Ok(model)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ALIGNMENT;
    use crate::model::CText;
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
                    offset: ALIGNMENT,
                    length: single.len() as u64,
                    encoding: Encoding::Zstd,
                    decoded_length: len,
                },
                decoded_length: len,
                digest: None,
                transform: Transform::None,
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

    #[test]
    fn windowed_decode_handles_our_frames_and_declines_foreign_streams() {
        let frame = crate::codec::ZSTD_FRAME_SIZE;
        let mut x = 0x9E37_79B9_7F4A_7C15u64;
        let data: Vec<u8> = (0..5 * frame + 999)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect();
        let dir = std::env::temp_dir().join(format!("zt-window-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("w.zt");
        let mut w = Writer::create(&path).unwrap();
        w.add(
            "z",
            DType::U8,
            &[data.len() as u64],
            &data,
            &WriteOptions::zstd(1),
        )
        .unwrap();
        w.finish().unwrap();
        let r = Reader::open(&path).unwrap();
        let blob = r.objects()[0].components()[0].blob;
        assert!(blob.length > ZSTD_WINDOW as u64);
        let file = File::open(&path).unwrap();
        let mut dst = vec![0u8; data.len()];
        assert!(
            decode_windowed(&file, &blob, &mut dst).unwrap(),
            "our frames decode through the window"
        );
        assert!(dst == data);
        // The same through the mapping, window by window.
        let map = unsafe { Mmap::map(&file) }.unwrap();
        dst.fill(0);
        assert!(
            decode_mapped_windows(&map, &blob, &mut dst).unwrap(),
            "our frames decode from the mapping"
        );
        assert!(dst == data);
        // One big frame without a recorded size (as other writers make): declined.
        let single = {
            let mut enc = zstd::stream::Encoder::new(Vec::new(), 1).unwrap();
            std::io::Write::write_all(&mut enc, &data).unwrap();
            enc.finish().unwrap()
        };
        std::fs::write(dir.join("raw.zst"), &single).unwrap();
        let file = File::open(dir.join("raw.zst")).unwrap();
        let foreign = Blob {
            offset: 0,
            length: single.len() as u64,
            encoding: Encoding::Zstd,
            decoded_length: data.len() as u64,
        };
        assert!(!decode_windowed(&file, &foreign, &mut dst).unwrap());
        let map = unsafe { Mmap::map(&file) }.unwrap();
        assert!(!decode_mapped_windows(&map, &foreign, &mut dst).unwrap());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
