//! The append-only writer: header, aligned blobs with zero padding, manifest, footer.
//! Writes zTensor v1.2.0 (64-byte alignment, the manifest's size before the footer magic)
//! or v2 (`v2`: 64 KiB placement, the 40-byte footer, canonical form), as
//! `CreateOptions::version` says. Writing to a path goes through a temporary file in the
//! same directory that is renamed into place only by `finish`.

use std::collections::HashMap;
use std::fs::{File, OpenOptions as FsOpenOptions};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::cbor::Value;
use crate::codec::compress::{FramePipeline, Out};
use crate::codec::digest::Hasher;
use crate::codec::{DigestAlgorithm, seek_table, zstd_level_range};
use crate::dtype::{DType, check_logical_type, dense_byte_size, logical_type_info};
use crate::error::{Error, ErrorKind, Result, bail, err};
use crate::formats::ztensor::{ALIGNMENT, MAGIC_V1, manifest};
use crate::formats::ztensor_v2::MAGIC_V2;
use crate::limits::Limits;
use crate::model::{Attributes, Blob, CText, Component, Encoding, Object, check_name, schema};

mod attrs;
mod copy;
mod sharded;
mod v2;
mod vocabulary;
pub use copy::CopyOptions;
pub(crate) use sharded::AnyWriter;
pub use sharded::ShardedWriter;

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

/// A component being streamed.
struct Stream {
    role: CText,
    dtype: DType,
    logical_type: Option<CText>,
    /// Where a raw component begins (a zstd one's start is known when its first frame is
    /// written: `Placing`).
    offset: u64,
    decoded: u64,
    /// A raw component's digest (a zstd one's travels with its frames: `Mark::Begin`).
    hasher: Hasher,
    /// The zstd level of a zstd component (None: raw).
    zstd: Option<i32>,
    /// zTensor v2: the digest covers the decoded bytes (`hasher` is fed those), and a raw
    /// component's xxh3-128 finds an identical blob to share.
    decoded_digest: bool,
    content: Option<Box<xxhash_rust::xxh3::Xxh3>>,
    /// The last byte written (the unused nibble of an odd count of packed fp4 values).
    last: Option<u8>,
}

/// What the compression pipeline carries between frames: where a zstd component begins
/// and ends, so that its frames are placed, hashed and recorded as they come out.
enum Mark {
    /// A component begins: pad to the alignment, then its frames follow; its stored
    /// bytes are hashed with `hasher`. `seekable`: zTensor v2's `zt.zstd-seekable/1`,
    /// whose seek table follows even a single frame.
    Begin { hasher: Hasher, seekable: bool },
    /// Component `.1` of object `.0` ends: its seek table goes out, then its place and
    /// digest are recorded in the object.
    End(usize, usize),
}

/// The zstd component whose frames are being written out.
struct Placing {
    offset: u64,
    hasher: Hasher,
    /// (compressed, decompressed) size of each frame, for the seek table.
    sizes: Vec<(u32, u32)>,
    /// The seek table follows even one frame (`Mark::Begin`).
    seekable: bool,
}

/// Writes out one item of the compression pipeline (see `Mark`).
fn place<W: Write>(
    output: &mut Output<W>,
    objects: &mut [Object],
    placing: &mut Option<Placing>,
    item: Out<'_, Mark>,
) -> Result<()> {
    match item {
        Out::Mark(Mark::Begin { hasher, seekable }) => {
            output.pad()?;
            *placing = Some(Placing {
                offset: output.pos,
                hasher,
                sizes: Vec::new(),
                seekable,
            });
        }
        Out::Frame { bytes, decoded } => {
            let p = placing.as_mut().expect("frames follow a begin");
            // A frame of at most ZSTD_FRAME_SIZE input is far below 4 GiB.
            let sizes = (u32::try_from(bytes.len()), u32::try_from(decoded));
            let (Ok(compressed), Ok(decoded)) = sizes else {
                bail!(Internal, "a zstd frame of {} bytes", bytes.len());
            };
            p.hasher.update(bytes);
            output.emit(bytes)?;
            p.sizes.push((compressed, decoded));
        }
        Out::Mark(Mark::End(object, component)) => {
            let mut p = placing.take().expect("an end follows a begin");
            if p.sizes.len() > 1 || p.seekable {
                match seek_table::encode(&p.sizes) {
                    Some(table) => {
                        p.hasher.update(&table);
                        output.emit(&table)?;
                    }
                    None if p.seekable => bail!(
                        Limit,
                        "{} zstd frames are more than a seek table can list",
                        p.sizes.len()
                    ),
                    None => {}
                }
            }
            let c = &mut objects[object].components[component];
            c.blob.offset = p.offset;
            c.blob.length = output.pos - p.offset;
            // A digest of the stored bytes; a v2 digest (of the decoded bytes) was
            // recorded by `end_component`.
            if let Some(d) = p.hasher.finish() {
                c.digest = Some(CText::new(&d)?);
            }
        }
    }
    Ok(())
}

/// Where a path writer puts its bytes until `finish`.
struct Target {
    temp: PathBuf,
    path: PathBuf,
    /// fsync the file and its directory at `finish` (see `CreateOptions::durable`).
    durable: bool,
    /// Renamed into place, or already removed: nothing to clean up.
    done: bool,
}

impl Target {
    /// Removes the temporary file (once).
    fn discard(&mut self) {
        if !self.done {
            let _ = std::fs::remove_file(&self.temp);
            self.done = true;
        }
    }
}

impl Drop for Target {
    fn drop(&mut self) {
        self.discard();
    }
}

/// The name of the temporary file for `file_name`: hidden, unique in this process, and
/// never longer than NAME_MAX (255 bytes), so that any legal final name can be written.
fn temp_name(file_name: &std::ffi::OsStr) -> std::ffi::OsString {
    use std::os::unix::ffi::{OsStrExt, OsStringExt};
    let suffix = format!(
        ".{}.{}.tmp",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let mut stem = file_name.as_bytes();
    let room = 255 - 1 - suffix.len();
    if stem.len() > room {
        stem = &stem[..room];
        // Cut on a character boundary when the name is UTF-8.
        if let Err(e) = std::str::from_utf8(stem)
            && file_name.to_str().is_some()
        {
            stem = &stem[..e.valid_up_to()];
        }
    }
    let mut name = Vec::with_capacity(1 + stem.len() + suffix.len());
    name.push(b'.');
    name.extend_from_slice(stem);
    name.extend_from_slice(suffix.as_bytes());
    std::ffi::OsString::from_vec(name)
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
}

/// The zTensor version a writer writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileVersion {
    /// zTensor v1.2.0: what `ztensor` 1.x reads.
    V1_2,
    /// zTensor v2 (Draft 4): what `ztensor` 2.x reads and writes.
    V2,
}

/// The version new files are written as unless the caller says otherwise.
impl Default for FileVersion {
    fn default() -> FileVersion {
        FileVersion::V1_2
    }
}

/// Where the bytes go, and how far they got.
struct Output<W> {
    out: W,
    /// Bytes written so far.
    pos: u64,
    /// The first I/O failure: the file can't be finished after one.
    failed: Option<String>,
    /// What the writer writes, for error messages: the final path, or "stream".
    label: Box<str>,
    /// Writeback started early on a durable file, so that the final fsync has little
    /// left to write.
    writeback: Option<Writeback>,
}

impl<W: Write> Output<W> {
    /// Writes bytes; an I/O failure poisons the writer (the file can't be finished).
    fn emit(&mut self, bytes: &[u8]) -> Result<()> {
        if let Err(e) = self.out.write_all(bytes) {
            let e = Error::io(
                format_args!(
                    "{}: writing {} bytes at offset {}",
                    self.label,
                    bytes.len(),
                    self.pos
                ),
                e,
            );
            self.failed = Some(e.message().to_owned());
            return Err(e);
        }
        self.pos += bytes.len() as u64;
        if let Some(wb) = &mut self.writeback {
            wb.advance(self.pos);
        }
        Ok(())
    }

    /// Zero padding up to the next multiple of `ALIGNMENT`.
    fn pad(&mut self) -> Result<()> {
        const ZEROS: [u8; ALIGNMENT as usize] = [0; ALIGNMENT as usize];
        let pad = (ALIGNMENT - self.pos % ALIGNMENT) % ALIGNMENT;
        self.emit(&ZEROS[..pad as usize])
    }
}

/// The kernel is asked to start writing a durable file's pages to disk as soon as a
/// chunk of them is surely out of the writer's buffer, so that writing and the disk's
/// work overlap and `finish`'s fsync waits only for the tail.
struct Writeback {
    /// The temporary file (a second handle to it).
    file: File,
    /// Bytes whose writeback has been started.
    started: u64,
}

impl Writeback {
    /// Writeback is started this many bytes at a time.
    const CHUNK: u64 = 32 << 20;

    /// Called with the bytes written so far (some may still sit in the writer's buffer).
    fn advance(&mut self, written: u64) {
        let flushed = written.saturating_sub(BUFFER as u64);
        if flushed - self.started < Self::CHUNK {
            return;
        }
        use std::os::fd::AsRawFd;
        // SAFETY: a descriptor we own; sync_file_range only starts I/O on its pages.
        // A failure is harmless: the final fsync still writes everything.
        unsafe {
            libc::sync_file_range(
                self.file.as_raw_fd(),
                self.started as libc::off64_t,
                (flushed - self.started) as libc::off64_t,
                libc::SYNC_FILE_RANGE_WRITE,
            );
        }
        self.started = flushed;
    }
}

/// The writer's buffer in front of a file.
const BUFFER: usize = 1 << 20;

impl<W: Write> std::fmt::Debug for Writer<W> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Writer")
            .field("position", &self.output.pos)
            .field("objects", &self.objects.len())
            .finish()
    }
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

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
    /// zTensor v2: keep the blobs in the order they were written, instead of copying
    /// them into canonical order at `finish` when they were added out of it (objects not
    /// in ascending name order, or components not in ascending role order). The file is
    /// then canonical only if they were added in that order.
    pub keep_order: bool,
}

impl Default for CreateOptions {
    fn default() -> Self {
        CreateOptions {
            durable: true,
            version: FileVersion::default(),
            keep_order: false,
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
        let temp = dir.join(temp_name(file_name));
        // Readable too: a v2 writer reads blobs back (identical parts share one).
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
        let writeback = (target.durable)
            .then(|| file.try_clone().ok())
            .flatten()
            .map(|file| Writeback { file, started: 0 });
        let handle = match options.version {
            FileVersion::V2 => Some(file.try_clone().map_err(|e| {
                Error::io(
                    format_args!("{}: a second handle", target.temp.display()),
                    e,
                )
            })?),
            FileVersion::V1_2 => None,
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
        let mut w = Writer::new_inner(out, None, options, None);
        w.write_header()?;
        Ok(w)
    }

    fn write_header(&mut self) -> Result<()> {
        match self.version {
            FileVersion::V1_2 => self.emit(MAGIC_V1),
            FileVersion::V2 => self.emit(&MAGIC_V2),
        }
    }

    /// The version this writer writes.
    pub fn version(&self) -> FileVersion {
        self.version
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
            v2: (options.version == FileVersion::V2)
                .then(|| Box::new(v2::State::new(options.keep_order, handle))),
            frames: None,
            placing: None,
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
        self.begin_object(name, "dense", shape)?;
        let result = self
            .add_component("data", dtype, logical_type, data, options)
            .and_then(|()| self.end_object());
        if result.is_err() {
            self.abandon_object();
        }
        result
    }

    /// Begins an object of any format; add its components, then `end_object`.
    pub fn begin_object(&mut self, name: &str, format: &str, shape: &[u64]) -> Result<()> {
        self.check_usable()?;
        if self.open_object {
            bail!(
                State,
                "object '{}' is still open: end it before beginning another",
                self.objects.last().map_or("", |o| o.name())
            );
        }
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
        let format_c = CText::new(format).map_err(as_argument)?;
        check_shape(shape)?;
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

    /// Adds a whole component to the open object.
    pub fn add_component(
        &mut self,
        role: &str,
        dtype: DType,
        logical_type: Option<&str>,
        data: &[u8],
        options: &WriteOptions,
    ) -> Result<()> {
        self.begin_component(role, dtype, logical_type, options)?;
        let r = self.write(data).and_then(|()| self.end_component());
        if r.is_err() && self.stream.take().is_some() {
            self.discard_frames();
        }
        r
    }

    /// Begins streaming a component of the open object; feed it with `write`, end it with
    /// `end_component`. Memory use is bounded whatever the component's size.
    pub fn begin_component(
        &mut self,
        role: &str,
        dtype: DType,
        logical_type: Option<&str>,
        options: &WriteOptions,
    ) -> Result<()> {
        self.check_usable()?;
        let obj = self.open_object_idle()?;
        let role_c = check_name("component", role, Limits::default().max_name_length)
            .map_err(as_argument)?;
        if obj.find_component(role).is_some() {
            bail!(
                InvalidArgument,
                "object '{}' already has a '{role}' component",
                obj.name()
            );
        }
        check_logical_type(dtype, logical_type).map_err(as_argument)?;
        let v2 = self.version == FileVersion::V2;
        let digest = match (v2, options.digest) {
            (true, DigestAlgorithm::None | DigestAlgorithm::Xxh3) => DigestAlgorithm::Xxh3,
            (true, DigestAlgorithm::Crc32c) => bail!(
                InvalidArgument,
                "zTensor v2 digests are xxh3 or sha256, not crc32c"
            ),
            (false, DigestAlgorithm::Xxh3) => bail!(
                InvalidArgument,
                "zTensor v1.2 digests are sha256 or crc32c; xxh3 is a v2 digest"
            ),
            (_, d) => d,
        };
        let zstd = match options.encoding {
            Encoding::Raw => None,
            Encoding::Pipeline => bail!(
                InvalidArgument,
                "the writer stores raw or zstd components, not format pipelines"
            ),
            Encoding::Zstd => {
                if options.level != 0 && !zstd_level_range().contains(&options.level) {
                    bail!(
                        InvalidArgument,
                        "zstd level {} is outside {:?}",
                        options.level,
                        zstd_level_range()
                    );
                }
                Some(if options.level == 0 { 3 } else { options.level })
            }
        };
        let logical_type = logical_type
            .map(CText::new)
            .transpose()
            .map_err(as_argument)?;
        let mut hasher = Hasher::new(digest);
        if zstd.is_some() {
            // A v2 component starts on a 64 KiB boundary (every frame before it written
            // out), and its digest covers the decoded bytes: `hasher` stays in the stream.
            if v2 {
                self.pad_to_alignment()?;
            }
            // Placed (padded, hashed) when its first frame is written out.
            let stored = match v2 {
                true => Hasher::new(DigestAlgorithm::None),
                false => std::mem::replace(&mut hasher, Hasher::new(DigestAlgorithm::None)),
            };
            let frames = self.frames.get_or_insert_with(|| FramePipeline::new(0, v2));
            let (output, objects, placing) =
                (&mut self.output, &mut self.objects, &mut self.placing);
            let begin = Mark::Begin {
                hasher: stored,
                seekable: v2,
            };
            let r = frames.mark(begin, &mut |item| place(output, objects, placing, item));
            self.after_io(r)?;
        } else {
            self.pad_to_alignment()?;
        }
        self.stream = Some(Stream {
            role: role_c,
            dtype,
            logical_type,
            offset: self.output.pos,
            decoded: 0,
            hasher,
            zstd,
            decoded_digest: v2,
            content: (v2 && zstd.is_none()).then(Box::default),
            last: None,
        });
        Ok(())
    }

    /// Appends a chunk of the component being streamed (any size, including 0).
    pub fn write(&mut self, data: &[u8]) -> Result<()> {
        self.check_usable()?;
        let Some(mut s) = self.stream.take() else {
            bail!(
                State,
                "no component is being written: call begin_component first"
            );
        };
        if s.dtype == DType::Bool
            && let Some(i) = data.iter().position(|&b| b > 1)
        {
            let at = s.decoded + i as u64;
            self.stream = Some(s);
            return Err(err!(
                InvalidArgument,
                "bool byte {} at index {at} is neither 0 nor 1",
                data[i]
            )
            .context(self.stream_context()));
        }
        s.decoded += data.len() as u64;
        if let Some(&last) = data.last() {
            s.last = Some(last);
        }
        let result = match (s.zstd, &mut self.frames) {
            (Some(level), Some(frames)) => {
                if s.decoded_digest {
                    s.hasher.update(data);
                }
                let (output, objects, placing) =
                    (&mut self.output, &mut self.objects, &mut self.placing);
                frames.write(level, data, &mut |item| {
                    place(output, objects, placing, item)
                })
            }
            _ => {
                s.hasher.update(data);
                if let Some(c) = &mut s.content {
                    c.update(data);
                }
                self.emit(data)
            }
        };
        self.stream = Some(s);
        let result = self.after_io(result);
        result.map_err(|e| e.context(self.stream_context()))
    }

    /// The open object, when no component of it is being streamed.
    fn open_object_idle(&self) -> Result<&Object> {
        if !self.open_object {
            bail!(State, "no object is open: begin one first");
        }
        if let Some(s) = &self.stream {
            bail!(
                State,
                "component '{}' is still being written: end it first",
                s.role.as_str()
            );
        }
        Ok(self.objects.last().expect("open object"))
    }

    /// "object 'o' component 'r'" for the component being streamed.
    fn stream_context(&self) -> String {
        let object = self.objects.last().map_or("", |o| o.name());
        let role = self.stream.as_ref().map_or("", |s| s.role.as_str());
        format!("object '{object}' component '{role}'")
    }

    /// Ends the component being streamed and records it in the open object.
    pub fn end_component(&mut self) -> Result<()> {
        self.check_usable()?;
        let Some(s) = self.stream.take() else {
            bail!(State, "no component is being written");
        };
        let unit = s.dtype.size() as u64
            * s.logical_type
                .as_ref()
                .and_then(|t| logical_type_info(t.as_str()))
                .map_or(1, |i| i.ratio);
        if s.decoded % unit != 0 {
            self.discard_frames();
            bail!(
                InvalidArgument,
                "object '{}' component '{}': {} bytes is not a whole number of {}-byte elements",
                self.objects.last().map_or("", |o| o.name()),
                s.role.as_str(),
                s.decoded,
                unit
            );
        }
        let encoding = if s.zstd.is_some() {
            Encoding::Zstd
        } else {
            Encoding::Raw
        };
        let obj = self.objects.last().expect("open object");
        if s.logical_type
            .as_ref()
            .is_some_and(|t| t.as_str() == "f4_e2m1")
            && obj.format() == "dense"
            && crate::dtype::numel(obj.shape()).is_some_and(|n| n % 2 == 1)
            && s.last.is_some_and(|b| b & 0xf0 != 0)
        {
            let e = err!(
                InvalidArgument,
                "object '{}' component '{}': the unused high nibble of the last byte of an odd \
                 number of f4_e2m1 values must be 0",
                obj.name(),
                s.role.as_str()
            );
            self.discard_frames();
            return Err(e);
        }
        let mut component = Component {
            role: s.role,
            dtype: s.dtype,
            logical_type: s.logical_type,
            blob: Blob {
                file: 0,
                offset: s.offset,
                length: self.output.pos - s.offset,
                encoding,
                decoded_length: s.decoded,
            },
            decoded_length: s.decoded,
            digest: s.hasher.finish().map(|d| CText::new(&d)).transpose()?,
            steps: Default::default(),
        };
        if let Some(content) = s.content {
            self.v2_share(&mut component, content.digest128())?;
        }
        let object = self.objects.len() - 1;
        let components = &mut self.objects[object].components;
        components.push(component);
        let at = components.len() - 1;
        if let (Some(level), Some(frames)) = (s.zstd, &mut self.frames) {
            // Recorded (place, length, digest) when its last frame is written out.
            let (output, objects, placing) =
                (&mut self.output, &mut self.objects, &mut self.placing);
            let mut out = |item: Out<'_, Mark>| place(output, objects, placing, item);
            let r = frames
                .end_frames(level, &mut out)
                .and_then(|()| frames.mark(Mark::End(object, at), &mut out));
            self.after_io(r)?;
            // A v2 object is checked against its profile at `end_object`, with its
            // parts' places known.
            if self.version == FileVersion::V2 {
                self.settle()?;
            }
        }
        Ok(())
    }

    /// Forgets the zstd component being streamed: frames already handed to the pool are
    /// still written out (unreferenced), input not yet in a frame is dropped.
    fn discard_frames(&mut self) {
        if let Some(frames) = &mut self.frames {
            frames.discard_input();
        }
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
                let obj = self.objects.last_mut().expect("open object");
                vocabulary::v1_vocabulary(obj)
                    .and_then(|()| schema::check_writable(obj))
                    .map_err(as_argument)
            }
        };
        if let Err(e) = checked {
            let name = self.objects.last().map_or("", |o| o.name());
            let e = e.context(format!("object '{name}'"));
            self.abandon_object();
            return Err(e);
        }
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
            if let Some(o) = self.objects.pop() {
                self.by_name.remove(o.name());
            }
            self.open_object = false;
        }
    }

    /// Sets the file's attributes (a CBOR map); a second call replaces them.
    pub fn set_file_attributes(&mut self, attributes: Value) -> Result<()> {
        self.check_usable()?;
        self.file_attributes = Some(self.attributes_for(
            &attributes,
            manifest::FILE_ATTRIBUTES_DEPTH,
            "the file's",
        )?);
        Ok(())
    }

    /// Attributes as this writer's version stores them, checked: a map, nested no deeper
    /// than a reader accepts where it sits (`at`), and for v2 deterministic CBOR of the
    /// types v2 permits (no tags, no undefined or other simple values).
    fn attributes_for(&self, attributes: &Value, at: usize, whose: &str) -> Result<Attributes> {
        match self.version {
            FileVersion::V1_2 => {
                let max = Limits::default().max_cbor_depth;
                let reader = format!("a reader with the default max_cbor_depth of {max}");
                check_attributes(attributes, at, whose, max, &reader)?;
                Ok(Attributes::from_value(attributes))
            }
            FileVersion::V2 => {
                let max = crate::formats::ztensor_v2::MAX_DEPTH;
                let reader = format!("a zTensor v2 reader (a nesting of {max} in all)");
                check_attributes(attributes, at, whose, max, &reader)?;
                vocabulary::deterministic_attributes(attributes)
            }
        }
    }

    /// Sets the attributes of an object already begun (open or ended); replaces.
    pub fn set_object_attributes(&mut self, name: &str, attributes: Value) -> Result<()> {
        self.check_usable()?;
        let attributes = self.attributes_for(
            &attributes,
            manifest::OBJECT_ATTRIBUTES_DEPTH,
            "an object's",
        )?;
        let &i = self
            .by_name
            .get(name)
            .ok_or_else(|| err!(NotFound, "no object named '{name}' has been added"))?;
        self.replace_object_attributes(i, attributes)
    }

    /// Typed attributes (`attributes`, whose plain CBOR is `value`) as this writer's
    /// version stores them: v1.2 keeps their type record; v2, whose manifest has none,
    /// stores their values as deterministic CBOR. Checked as `attributes_for` checks.
    fn typed_attributes_for(
        &self,
        attributes: Attributes,
        value: &Value,
        at: usize,
        whose: &str,
    ) -> Result<Attributes> {
        let checked = self.attributes_for(value, at, whose)?;
        Ok(match self.version {
            FileVersion::V1_2 => attributes,
            FileVersion::V2 => checked,
        })
    }

    /// Replaces object `i`'s attributes; a v2 object already ended must still meet its
    /// layout's profile with them (else they are not replaced).
    fn replace_object_attributes(&mut self, i: usize, attributes: Attributes) -> Result<()> {
        let old = self.objects[i].attributes.replace(attributes);
        let ended = !(self.open_object && i + 1 == self.objects.len());
        if self.version == FileVersion::V2
            && ended
            && let Err(e) = self.v2_check_object(i)
        {
            // An ended object's attributes must still say what its layout needs.
            self.objects[i].attributes = old;
            return Err(e);
        }
        Ok(())
    }

    /// Writes the manifest and footer, flushes, and (for a path) syncs and renames the
    /// temporary file into place. Returns the underlying writer.
    pub fn finish(mut self) -> Result<W> {
        self.check_finishable()?;
        self.settle()?;
        match self.version {
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
            if target.durable {
                let file = File::open(&target.temp).map_err(|e| {
                    Error::io(format_args!("reopening {}", target.temp.display()), e)
                })?;
                file.sync_all()
                    .map_err(|e| Error::io(format_args!("syncing {}", target.temp.display()), e))?;
            }
            std::fs::rename(&target.temp, &target.path).map_err(|e| {
                Error::io(
                    format_args!(
                        "renaming {} to {}",
                        target.temp.display(),
                        target.path.display()
                    ),
                    e,
                )
            })?;
            target.done = true;
            // The rename is durable once the directory is: "model.zt" lives in ".".
            let dir = match target.path.parent() {
                Some(d) if !d.as_os_str().is_empty() => d,
                _ => Path::new("."),
            };
            if target.durable
                && let Ok(d) = File::open(dir)
            {
                let _ = d.sync_all();
            }
        }
        let Writer { output, target, .. } = self;
        drop(target);
        Ok(output.out)
    }

    /// Ok when `finish` may be called now: nothing open, no earlier I/O failure.
    pub fn check_finishable(&self) -> Result<()> {
        self.check_usable()?;
        if self.open_object {
            bail!(
                State,
                "object '{}' is still open: end it before finishing",
                self.objects.last().map_or("", |o| o.name())
            );
        }
        Ok(())
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

/// Attributes must be a map that `reader` accepts where it sits in the manifest (`at`: the
/// nesting of the map): arrays, maps and tags each count one level, and the manifest may
/// nest at most `max` deep.
fn check_attributes(v: &Value, at: usize, whose: &str, max: usize, reader: &str) -> Result<()> {
    if !v.is_map() {
        bail!(
            InvalidArgument,
            "attributes must be a map, not {}",
            v.type_name()
        );
    }
    let allowed = max - at;
    if nests_deeper(v, allowed) {
        bail!(
            InvalidArgument,
            "{whose} attributes nest deeper than {allowed} levels, the most {reader} accepts \
             there"
        );
    }
    Ok(())
}

/// Whether `v` nests more than `levels` containers deep (looks no deeper than that).
fn nests_deeper(v: &Value, levels: usize) -> bool {
    let inner: Box<dyn Iterator<Item = &Value>> = match v {
        Value::Array(items) => Box::new(items.iter()),
        Value::Map(pairs) => Box::new(pairs.iter().flat_map(|(k, v)| [k, v])),
        Value::Tag(_, inner) => Box::new(std::iter::once(&**inner)),
        _ => return false,
    };
    levels == 0 || inner.into_iter().any(|item| nests_deeper(item, levels - 1))
}
