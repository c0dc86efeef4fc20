//! The append-only writer: header, aligned blobs with zero padding, manifest, footer.
//! Writes zTensor v2 (`v2`: 4 KiB placement, or 64 KiB for canonical form; the 40-byte
//! footer; the default) or v1.2.0 (64-byte alignment, the manifest's size before the footer magic),
//! as `CreateOptions::version` says; or safetensors or GGUF (`foreign`), as
//! `CreateOptions::format` says. Writing to a path goes through a temporary file in the
//! same directory that is renamed into place only by `finish`. The same writer writes a
//! sharded set (`sharded`): its destination is then a set of such files, begun one after
//! another, and an index.

use std::collections::HashMap;
use std::fs::{File, OpenOptions as FsOpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use crate::codec::DigestAlgorithm;
use crate::codec::compress::FramePipeline;
use crate::dtype::{DType, check_logical_type, dense_byte_size};
use crate::error::{Error, ErrorKind, Result, bail, err};
use crate::formats::ztensor::{MAGIC_V1, manifest};
use crate::formats::ztensor_v2::MAGIC_V2;
use crate::limits::Limits;
use crate::model::{Attributes, CText, Encoding, Object, check_name, schema};

mod attrs;
mod copy;
mod foreign;
mod output;
mod placed;
mod sharded;
mod stream;
mod v2;
mod vocabulary;
pub use copy::CopyOptions;
pub use foreign::{OutputFormat, ggml_block_type, safetensors_dtype};
use output::{BUFFER, Output, Target, Writeback, temp_name};
pub use sharded::ShardedWriter;
use sharded::Shards;
use stream::{Mark, Placing, Stream, place};

/// How one component is stored. `WriteOptions::default()` is raw, no digest.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WriteOptions {
    /// Raw or zstd.
    pub encoding: Encoding,
    /// zstd level; 0 means the library default (3).
    pub level: i32,
    /// Digest of the stored bytes to record.
    pub digest: DigestAlgorithm,
}

impl Default for WriteOptions {
    fn default() -> Self {
        WriteOptions {
            encoding: Encoding::Raw,
            level: 0,
            digest: DigestAlgorithm::None,
        }
    }
}

impl WriteOptions {
    /// zstd at `level` (0 = default), no digest.
    pub fn zstd(level: i32) -> Self {
        WriteOptions {
            encoding: Encoding::Zstd,
            level,
            ..Default::default()
        }
    }
    /// These options with a digest.
    pub fn with_digest(self, digest: DigestAlgorithm) -> Self {
        WriteOptions { digest, ..self }
    }
}

/// An append-only writer. Add objects, then `finish`. Used by one thread at a time.
pub struct Writer<W: Write = BufWriter<File>> {
    output: Output<W>,
    objects: Vec<Object>,
    by_name: HashMap<String, usize>,
    open_object: bool,
    stream: Option<Stream>,
    file_attributes: Option<Attributes>,
    target: Option<Target>,
    /// What `finish` writes the objects as.
    version: FileVersion,
    /// A v2 writer's bookkeeping (`v2::State`).
    v2: Option<Box<v2::State>>,
    /// zstd frames being compressed on the pool, written out in order (created with the
    /// first zstd component).
    frames: Option<FramePipeline<Mark>>,
    /// The zstd component whose frames are being written out.
    placing: Option<Placing>,
    /// Where the file goes when it is finished: None for a single file (or stream); for
    /// a set, the shards finished before this one, and what begins the next (`sharded`).
    set: Option<Box<Shards<W>>>,
    /// The container written (`Auto` resolved).
    format: OutputFormat,
    /// safetensors and GGUF: the temporary file the tensors are spooled to, read back
    /// when `finish` assembles the file (`foreign`).
    spool: Option<File>,
    /// What spooled tensors are padded to: 1 for safetensors, GGUF's alignment (so that
    /// the spool is the data section, copied in one piece when nothing changed).
    spool_align: u64,
    /// The bytes of the tensors spooled (their padding not counted): what a set's shard
    /// holds, for its limit (as gguf-py and transformers count).
    spool_data: u64,
    /// Tensors declared before their data (`placed`): safetensors and GGUF are then
    /// written in one pass, each tensor's bytes to their place.
    declared: Option<Box<placed::Declared>>,
}

/// The zTensor version a writer writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileVersion {
    /// zTensor v1.2.0: what `ztensor` 1.x reads.
    V1_2,
    /// zTensor v2 (Draft 4): what `ztensor` 2.x reads and writes.
    V2,
}

/// Where a zTensor v2 writer starts blobs. Compact by default: measured, it is as fast
/// as 64 KiB for large tensors and much smaller and faster to read for many small ones
/// (docs/format.md, "Placement").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Placement {
    /// At 64 KiB boundaries: canonical form (§6.3), byte for byte what `ztensor` 2.x
    /// writes for the same tensors.
    Canonical,
    /// At 4 KiB boundaries, the spec's floor (the default): a valid v2 file every v2
    /// reader reads, much smaller for many small tensors, but not canonical.
    #[default]
    Compact,
}

impl Placement {
    /// The blob alignment.
    pub fn alignment(self) -> u64 {
        match self {
            Placement::Canonical => crate::formats::ztensor_v2::ALIGN_CANONICAL,
            Placement::Compact => crate::formats::ztensor_v2::ALIGN_FLOOR,
        }
    }
}

/// The version new files are written as unless the caller says otherwise: v2, what
/// `pip install ztensor` (2.x) reads; v1.2 stays one option away for readers pinned to
/// 1.x.
impl Default for FileVersion {
    fn default() -> FileVersion {
        FileVersion::V2
    }
}

impl<W: Write> std::fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("position", &self.output.pos)
            .field("objects", &self.objects.len())
            .finish()
    }
}

/// How `Writer::create_with` writes a file. The default is durable.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CreateOptions {
    /// When true (the default), `finish` returns only once the file and its name are on
    /// disk: it fsyncs the file, renames it into place and fsyncs the directory, so a
    /// crash or power loss afterwards leaves the whole new file. Writeback is started
    /// while writing, so the final fsync has little left to do. When false, `finish`
    /// neither syncs nor waits: the file appears complete under its name at once (the
    /// rename is still atomic, so readers never see half a file), but after a crash or
    /// power loss within the next seconds it may be missing, empty or partly written.
    /// For scratch files, caches and tests.
    pub durable: bool,
    /// The zTensor version to write (`FileVersion::default()` unless set).
    pub version: FileVersion,
    /// zTensor v2 with `Placement::Canonical`: keep the blobs in the order they were
    /// written, instead of copying them into canonical order at `finish` when they were
    /// added out of it (objects not in ascending name order, or components not in
    /// ascending role order). The file is then canonical only if they were added in that
    /// order. `Placement::Compact` (the default) always keeps the written order: its
    /// files are not canonical whatever the order, so nothing is copied.
    pub keep_order: bool,
    /// zTensor v2: where blobs start (`Placement`).
    pub placement: Placement,
    /// The container to write: zTensor (of `version`), safetensors or GGUF; `Auto` (the
    /// default) goes by the path's extension (`.safetensors`, `.gguf`, else zTensor).
    /// safetensors and GGUF are written to a path only (their header, which lists every
    /// tensor, comes first: see `foreign`).
    pub format: OutputFormat,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions {
            durable: true,
            version: FileVersion::default(),
            keep_order: false,
            placement: Placement::default(),
            format: OutputFormat::Auto,
        }
    }
}

impl Writer<BufWriter<File>> {
    /// Creates a writer for `path`, durable (see `CreateOptions`). Nothing appears under
    /// `path` until `finish` succeeds; the bytes go to a temporary file beside it, removed
    /// if the writer is dropped unfinished.
    pub fn create(path: impl AsRef<Path>) -> Result<Self> {
        Self::create_with(path, &CreateOptions::default())
    }

    /// `create` with options.
    pub fn create_with(path: impl AsRef<Path>, options: &CreateOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if std::os::unix::ffi::OsStrExt::as_bytes(path.as_os_str()).ends_with(b"/") || path.is_dir()
        {
            bail!(
                InvalidArgument,
                "'{}' is a directory, not a file path",
                path.display()
            );
        }
        let file_name = path
            .file_name()
            .ok_or_else(|| err!(InvalidArgument, "'{}' does not name a file", path.display()))?;
        let dir = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let format = options.format.resolve(Some(&path));
        let options = &CreateOptions {
            format,
            // safetensors and GGUF take the v1.2 writer's paths (plain blobs, typed
            // attributes kept), without its framing.
            version: match format.spools() {
                true => FileVersion::V1_2,
                false => options.version,
            },
            ..*options
        };
        let temp = dir.join(temp_name(file_name));
        // Readable too: a v2 writer reads blobs back (identical parts share one), and a
        // safetensors or GGUF writer its spooled tensors.
        let file = FsOpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&temp)
            .map_err(|e| Error::io(format_args!("creating {}", temp.display()), e))?;
        let target = Target {
            temp,
            path,
            durable: options.durable,
            done: false,
        };
        // A safetensors or GGUF writer drops it when it spools (the spool is copied out and
        // removed: only the file assembled from it is synced), and keeps it when its
        // tensors are declared (written to the file in one pass).
        let writeback = (target.durable)
            .then(|| file.try_clone().ok())
            .flatten()
            .map(Writeback::new);
        let handle = match options.version == FileVersion::V2 || format.spools() {
            true => Some(file.try_clone().map_err(|e| {
                Error::io(
                    format_args!("{}: a second handle", target.temp.display()),
                    e,
                )
            })?),
            false => None,
        };
        let mut w = Writer::new_inner(
            BufWriter::with_capacity(BUFFER, file),
            Some(target),
            options,
            handle,
        );
        w.output.writeback = writeback;
        w.write_header()?;
        Ok(w)
    }
}

impl<W: Write> Writer<W> {
    /// A writer appending to any `Write` (a socket, a `Vec<u8>` ...), of the default
    /// version. Writes the header now.
    pub fn new(out: W) -> Result<Self> {
        Self::new_with(out, &CreateOptions::default())
    }

    /// `new` with options (`version`; `durable` means nothing without a file). Into a
    /// `Write` that is not a file, a v2 writer keeps blobs in the order written and can't
    /// take back a streamed duplicate (see `v2`).
    pub fn new_with(out: W, options: &CreateOptions) -> Result<Self> {
        let format = options.format.resolve(None);
        if format.spools() {
            bail!(
                InvalidArgument,
                "{} is written to a path (its header, which lists every tensor, comes first), \
                 not to a stream",
                format.name()
            );
        }
        let options = &CreateOptions { format, ..*options };
        let mut w = Writer::new_inner(out, None, options, None);
        w.write_header()?;
        Ok(w)
    }

    fn write_header(&mut self) -> Result<()> {
        if self.format.spools() {
            return Ok(());
        }
        match self.version {
            FileVersion::V1_2 => self.emit(MAGIC_V1),
            FileVersion::V2 => self.emit(&MAGIC_V2),
        }
    }

    /// The zTensor version this writer writes (meaningless for safetensors and GGUF).
    pub fn version(&self) -> FileVersion {
        self.version
    }

    /// The container this writer writes.
    pub fn format(&self) -> OutputFormat {
        self.format
    }

    fn new_inner(
        out: W,
        target: Option<Target>,
        options: &CreateOptions,
        handle: Option<File>,
    ) -> Self {
        let label = target
            .as_ref()
            .map_or_else(|| "stream".into(), |t| t.path.display().to_string().into());
        let (handle, spool) = match options.format.spools() {
            true => (None, handle),
            false => (handle, None),
        };
        Writer {
            output: Output {
                out,
                pos: 0,
                failed: None,
                label,
                writeback: None,
            },
            objects: Vec::new(),
            by_name: HashMap::new(),
            open_object: false,
            stream: None,
            file_attributes: None,
            target,
            version: options.version,
            v2: (options.version == FileVersion::V2).then(|| {
                // Only canonical placement needs the blobs in name order: a compact
                // file (4 KiB, not canonical whatever its order) keeps the written
                // order, one pass over the data instead of a copy at `finish`.
                Box::new(v2::State::new(
                    options.keep_order || options.placement != Placement::Canonical,
                    options.placement.alignment(),
                    handle,
                ))
            }),
            frames: None,
            placing: None,
            set: None,
            format: options.format,
            spool,
            spool_align: match options.format {
                OutputFormat::Gguf => 32,
                _ => 1,
            },
            spool_data: 0,
            declared: None,
        }
    }

    /// Writes bytes after every zstd frame still in flight; an I/O failure poisons the
    /// writer (the file can't be finished).
    fn emit(&mut self, bytes: &[u8]) -> Result<()> {
        self.settle()?;
        let r = self.output.emit(bytes);
        self.after_io(r)
    }

    /// Writes out every zstd frame still being compressed (waiting for them), so that
    /// the position is final and the objects' places are recorded.
    pub(crate) fn settle(&mut self) -> Result<()> {
        let Some(frames) = &mut self.frames else {
            return Ok(());
        };
        if frames.is_empty() {
            return Ok(());
        }
        let (output, objects, placing) = (&mut self.output, &mut self.objects, &mut self.placing);
        let r = frames.drain(&mut |item| place(output, objects, placing, item));
        self.after_io(r)
    }

    /// After an I/O failure the file can never be finished: its temporary file is
    /// removed at once, so a full disk gets its space back without waiting for the
    /// writer to be freed.
    fn after_io<T>(&mut self, r: Result<T>) -> Result<T> {
        if r.is_err()
            && self.output.failed.is_some()
            && let Some(target) = &mut self.target
        {
            target.discard();
        }
        r
    }

    fn pad_to_alignment(&mut self) -> Result<()> {
        if self.placed() {
            // Declared tensors go to their places (`declared_component`).
            return Ok(());
        }
        if self.format.spools() {
            // Spooled tensors lie end to end (GGUF: each padded as the file pads it);
            // `finish` places them.
            self.settle()?;
            let pad = self.output.pos.next_multiple_of(self.spool_align) - self.output.pos;
            const ZEROS: [u8; 4096] = [0; 4096];
            let mut left = pad;
            while left > 0 {
                let n = left.min(ZEROS.len() as u64) as usize;
                let r = self.output.emit(&ZEROS[..n]);
                self.after_io(r)?;
                left -= n as u64;
            }
            return Ok(());
        }
        if self.version == FileVersion::V2 {
            return self.v2_pad();
        }
        self.settle()?;
        let r = self.output.pad();
        self.after_io(r)
    }

    fn check_usable(&self) -> Result<()> {
        if let Some(why) = &self.output.failed {
            bail!(
                State,
                "the writer failed earlier and can't continue ({why})"
            );
        }
        Ok(())
    }

    /// Adds a dense object with one raw or encoded "data" component.
    /// `data.len()` must equal the element count of `shape` times the dtype size.
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

    /// Adds a dense object whose data has a logical type (fp8 kinds, complex ...).
    pub fn add_typed(
        &mut self,
        name: &str,
        dtype: DType,
        logical_type: Option<&str>,
        shape: &[u64],
        data: &[u8],
        options: &WriteOptions,
    ) -> Result<()> {
        self.check_usable()?;
        if self.open_object {
            bail!(
                State,
                "object '{}' is still open: end it before adding another",
                self.objects.last().map_or("", |o| o.name())
            );
        }
        check_logical_type(dtype, logical_type).map_err(as_argument)?;
        check_shape(shape)?;
        match dense_byte_size(shape, dtype, logical_type) {
            Some(n) if n == data.len() as u64 => {}
            Some(n) => bail!(
                InvalidArgument,
                "object '{name}': {} bytes given, but shape {shape:?} of {dtype}{} needs {n}",
                data.len(),
                logical_type.map(|t| format!(" ({t})")).unwrap_or_default()
            ),
            None if logical_type.is_some() => {}
            None => bail!(
                InvalidArgument,
                "object '{name}': shape {shape:?} overflows"
            ),
        }
        self.begin_object_sized(name, "dense", shape, data.len() as u64)?;
        let result = self
            .add_component("data", dtype, logical_type, data, options)
            .and_then(|()| self.end_object());
        if result.is_err() {
            self.abandon_object();
        }
        result
    }

    /// Begins an object of any format; add its components, then `end_object`.
    /// In a set, the object goes to the current shard unless that is already at the limit
    /// (its size is not known yet).
    pub fn begin_object(&mut self, name: &str, format: &str, shape: &[u64]) -> Result<()> {
        self.begin_object_sized(name, format, shape, 0)
    }

    /// `begin_object` of an object of about `size` bytes, which in a set may begin the
    /// next shard (`Shards::make_room`).
    fn begin_object_sized(
        &mut self,
        name: &str,
        format: &str,
        shape: &[u64],
        size: u64,
    ) -> Result<()> {
        self.check_usable()?;
        if self.open_object {
            bail!(
                State,
                "object '{}' is still open: end it before beginning another",
                self.objects.last().map_or("", |o| o.name())
            );
        }
        self.make_room(name, size)?;
        let name_c =
            check_name("object", name, Limits::default().max_name_length).map_err(as_argument)?;
        if self.by_name.contains_key(name) {
            bail!(
                InvalidArgument,
                "an object named '{name}' was already added"
            );
        }
        if format.is_empty() {
            bail!(InvalidArgument, "object '{name}': the format is empty");
        }
        foreign::check_object(self.format, name, format, shape)?;
        let format_c = CText::new(format).map_err(as_argument)?;
        check_shape(shape)?;
        if self.format.spools() && self.declared.is_none() && self.output.writeback.is_some() {
            // Spooled: the file is assembled (and synced) at `finish`.
            self.output.writeback = None;
        }
        self.declared_begin(name, format, shape)?;
        self.by_name.insert(name.to_owned(), self.objects.len());
        self.objects.push(Object {
            name: name_c,
            format: format_c,
            shape: shape.into(),
            attributes: None,
            components: Default::default(),
        });
        self.open_object = true;
        Ok(())
    }

    /// Ends the open object after checking its components against its shape and format
    /// (dense data size, sparse index counts). A refused object is dropped from the file.
    pub fn end_object(&mut self) -> Result<()> {
        self.check_usable()?;
        self.open_object_idle()?;
        let checked = match self.version {
            FileVersion::V2 => self.v2_end_object().and_then(|()| {
                schema::check_sizes(self.objects.last().expect("open object")).map_err(as_argument)
            }),
            FileVersion::V1_2 => {
                let format = self.format;
                let obj = self.objects.last_mut().expect("open object");
                vocabulary::v1_vocabulary(obj)
                    .and_then(|()| schema::check_writable(obj))
                    .map_err(as_argument)
                    .and_then(|()| foreign::check_end(format, obj))
            }
        };
        if let Err(e) = checked {
            let name = self.objects.last().map_or("", |o| o.name());
            let e = e.context(format!("object '{name}'"));
            self.abandon_object();
            return Err(e);
        }
        if self.format.spools() {
            let obj = self.objects.last().expect("open object");
            self.spool_data += obj.components().iter().map(|c| c.length()).sum::<u64>();
        }
        self.declared_ended();
        self.open_object = false;
        Ok(())
    }

    /// Drops the open object (its bytes stay in the file, unreferenced).
    fn abandon_object(&mut self) {
        if self.open_object {
            // Its components' frames are written out (or fail) before it goes, so that
            // no place is recorded into an object that took its index.
            let _ = self.settle();
            self.discard_frames();
            self.stream = None;
            self.declared_abandoned();
            if let Some(o) = self.objects.pop() {
                self.by_name.remove(o.name());
            }
            self.open_object = false;
        }
    }

    /// Writes the manifest and footer, flushes, and (for a path) syncs and renames the
    /// temporary file into place. Returns the underlying writer. A set
    /// (`create_sharded_with`) finishes its last shard so, names every shard, then writes
    /// the index; the last shard's writer is returned.
    pub fn finish(mut self) -> Result<W> {
        self.check_finishable()?;
        match self.set.take() {
            None => self.finish_file(),
            Some(set) => (*set).finish(self).map(|(out, _)| out),
        }
    }

    /// Finishes the file (`finish` without a set).
    fn finish_file(mut self) -> Result<W> {
        self.write_deferred()?;
        self.settle()?;
        match self.version {
            _ if self.placed() => self.placed_finish()?,
            _ if self.format.spools() => self.assemble(None)?,
            FileVersion::V1_2 => {
                let manifest = manifest::encode(self.file_attributes.as_ref(), &self.objects);
                self.emit(&manifest)?;
                self.emit(&(manifest.len() as u64).to_le_bytes())?;
                self.emit(MAGIC_V1)?;
            }
            FileVersion::V2 => self.v2_finish_bytes()?,
        }
        let label = &self.output.label;
        self.output
            .out
            .flush()
            .map_err(|e| Error::io(format_args!("{label}: flushing"), e))?;
        if let Some(target) = &mut self.target {
            target.commit()?;
        }
        let Writer { output, target, .. } = self;
        drop(target);
        Ok(output.out)
    }

    /// Ok when `finish` may be called now: nothing open, no earlier I/O failure, every
    /// declared tensor written.
    pub fn check_finishable(&self) -> Result<()> {
        self.check_usable()?;
        if self.open_object {
            bail!(
                State,
                "object '{}' is still open: end it before finishing",
                self.objects.last().map_or("", |o| o.name())
            );
        }
        self.check_declared_written()
    }

    /// Bytes written so far. zstd frames still being compressed count once written out:
    /// by later calls, at the latest by `finish`.
    pub fn position(&self) -> u64 {
        self.output.pos
    }
}

fn as_argument(e: Error) -> Error {
    match e.kind() {
        ErrorKind::Format | ErrorKind::Limit => Error::new(ErrorKind::InvalidArgument, e.message()),
        _ => e,
    }
}

fn check_shape(shape: &[u64]) -> Result<()> {
    let max = Limits::default().max_rank;
    if shape.len() > max {
        bail!(
            InvalidArgument,
            "shape has {} dimensions; readers accept at most {max} by default",
            shape.len()
        );
    }
    if crate::dtype::numel(shape).is_none() {
        bail!(
            InvalidArgument,
            "shape {shape:?} has more elements than u64 can count"
        );
    }
    Ok(())
}
