//! Where a file's bytes come from: a mapped file, a file read with `pread`, or the caller's
//! memory. Everything above this layer asks for byte ranges (`read_at`, `region`,
//! `stored`) and never learns which kind of source it has; windowed zstd decoding and the
//! page advice that goes with it live here because they depend on how bytes arrive.
//! A new kind of source (a file descriptor, the files of a sharded set, a remote object)
//! is a new `Kind` here and nothing else.

use std::borrow::Cow;
use std::fs::File;
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::Path;

use memmap2::{Mmap, MmapMut, MmapOptions};

use crate::buffer::zeroed_vec;
use crate::codec::stream::Chunks;
use crate::codec::zstd_decode_into;
use crate::error::{Error, Result, bail, err};

#[cfg(feature = "remote")]
pub(crate) mod remote;
mod window;

#[cfg(feature = "remote")]
pub use remote::TransferStats;
use window::{decode_mapped_windows, decode_windowed};

/// The URL schemes a path may start with to be opened remotely (compared ignoring case;
/// a local file whose path starts so is opened as `./s3://...`).
pub(crate) const URL_SCHEMES: &[&str] = &[
    "s3://", "s3a://", "gs://", "az://", "azure://", "abfs://", "abfss://", "adl://", "http://",
    "https://",
];

/// What a remote open needs that the environment can't say (`Reader::open_url`).
/// Credentials, regions and endpoints otherwise come from the environment: `AWS_*`
/// (including `AWS_ENDPOINT_URL` and `AWS_ALLOW_HTTP`), `GOOGLE_*`, `AZURE_*`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RemoteOptions {
    /// Sent as `Authorization: Bearer <token>` (for HTTP hubs that need one).
    pub bearer_token: Option<String>,
    /// Extra headers sent with every request, (name, value).
    pub headers: Vec<(String, String)>,
    /// The endpoint of an S3- or Azure-compatible service (overrides the environment's).
    pub endpoint: Option<String>,
    /// Allow plain `http://` endpoints (S3, Azure, GCS are https-only otherwise).
    pub allow_http: bool,
    /// Settings of the store as `object_store` names them ("aws_access_key_id",
    /// "aws_region", "aws_skip_signature", "google_service_account", "azure_storage_account_name"
    /// ...), applied after the environment's; a key the store doesn't know is ignored.
    pub config: Vec<(String, String)>,
    /// Requests in flight at most (0: 8).
    pub max_concurrency: usize,
    /// Retries of a failed request (None: 3).
    pub retries: Option<usize>,
    /// Timeout of one request (None: 30 seconds).
    pub timeout: Option<std::time::Duration>,
}

/// True when `path` names a remote object by URL: decided by its first characters only,
/// so a local path never reaches the network code.
pub(crate) fn is_url(path: &Path) -> bool {
    let Some(text) = path.to_str() else {
        return false;
    };
    URL_SCHEMES
        .iter()
        .any(|s| text.len() > s.len() && text[..s.len()].eq_ignore_ascii_case(s))
}

/// Compressed bytes held at once when decoding a large zstd component from a file.
pub(crate) const ZSTD_WINDOW: usize = 16 << 20;

/// Copies of at least this size from a mapped file are read with `pread` into the
/// destination: faster than faulting the mapping's pages in one by one and copying them.
const PREAD_FROM: usize = 1 << 20;

enum Kind<'a> {
    /// The mapping, and the file for large copies.
    Map(Map, File),
    /// Every access is a `pread`.
    File(File),
    /// The caller's bytes, borrowed.
    Memory(&'a [u8]),
    /// An object fetched by range requests.
    #[cfg(feature = "remote")]
    Remote(Box<remote::Remote>),
}

/// The bytes of one file, immutable and shareable between threads.
pub(crate) struct Source<'a> {
    kind: Kind<'a>,
    size: u64,
}

/// How to map a file.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Mapping {
    /// Every access is a `pread`.
    None,
    /// Mapped; pages come in as they are touched.
    #[default]
    Lazy,
    /// Mapped, every page read in while opening (`MAP_POPULATE`).
    Populated,
    /// Mapped private and writable (`ZT_OPEN_COPY_ON_WRITE`): a write through a view
    /// changes this process's copy of the page, never the file; `populate` reads every
    /// page in while opening (without breaking the sharing: no page is copied).
    CopyOnWrite { populate: bool },
}

/// A file's mapping: shared and read-only (a write through it faults), or private and
/// writable (copy-on-write). Reads are the same: pages are the page cache's until written.
pub(crate) enum Map {
    Shared(Mmap),
    Private(MmapMut),
}

impl std::ops::Deref for Map {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Map::Shared(m) => m,
            Map::Private(m) => m,
        }
    }
}

/// What a caller tells the kernel about a range of the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Advice {
    /// Start reading it in now, in the background.
    WillNeed,
    /// Drop its pages from this process (they stay in the page cache).
    DontNeed,
}

impl Source<'static> {
    /// Opens a regular file by path, mapped or for `pread`. A directory, FIFO, socket or
    /// device is an `Io` error, given without blocking (a FIFO with no writer would block
    /// `open` forever), so its message says what it is.
    pub(crate) fn open(path: &Path, mapping: Mapping) -> Result<Source<'static>> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| Error::io(format_args!("opening {}", path.display()), e))?;
        clear_nonblocking(&file);
        Self::from_file(file, &path.display().to_string(), mapping)
    }

    /// Without the feature `remote`: an `Unsupported` error that says so.
    #[cfg(not(feature = "remote"))]
    pub(crate) fn open_url(url: &str, _options: &RemoteOptions) -> Result<Source<'static>> {
        let scheme = url.split("://").next().unwrap_or(url);
        bail!(
            Unsupported,
            "{scheme}:// URLs: this build of ztensor has no remote support (built without \
             the cargo feature `remote`, CMake option ZTENSOR_REMOTE)"
        )
    }

    /// A source over a remote object.
    #[cfg(feature = "remote")]
    pub(crate) fn from_remote(remote: remote::Remote) -> Source<'static> {
        Source {
            size: remote.size(),
            kind: Kind::Remote(Box::new(remote)),
        }
    }

    /// A source over an open file (see `Reader::open_fd`); `name` is for messages.
    pub(crate) fn from_file(file: File, name: &str, mapping: Mapping) -> Result<Source<'static>> {
        let path = Path::new(name);
        let meta = file
            .metadata()
            .map_err(|e| Error::io(format_args!("{}: reading its size", path.display()), e))?;
        let what = match meta.file_type() {
            t if t.is_file() => None,
            t if t.is_dir() => Some("a directory"),
            t if t.is_fifo() => Some("a FIFO"),
            t if t.is_socket() => Some("a socket"),
            t if t.is_block_device() => Some("a block device"),
            t if t.is_char_device() => Some("a character device"),
            _ => Some("not a regular file"),
        };
        if let Some(what) = what {
            bail!(Io, "{} is {what}, not a tensor file", path.display());
        }
        let size = meta.len();
        let kind = if mapping == Mapping::None {
            Kind::File(file)
        } else {
            if size < 8 {
                bail!(
                    Format,
                    "{}: file is {size} bytes, too short to be a tensor file",
                    path.display()
                );
            }
            let mut options = MmapOptions::new();
            // The size known: memmap2 would ask the kernel again.
            options.len(usize::try_from(size).map_err(|_| {
                err!(
                    Limit,
                    "{}: {size} bytes can't be mapped here",
                    path.display()
                )
            })?);
            let mapped = |e| Error::io(format_args!("{}: mapping the file", path.display()), e);
            let map = if let Mapping::CopyOnWrite { populate } = mapping {
                // No swap reserved for pages never written (a private writable mapping
                // is otherwise charged its whole size: a file larger than memory could
                // not be mapped). MAP_POPULATE would copy every page of a writable
                // private mapping: populate reads them in instead.
                options.no_reserve_swap();
                // SAFETY: as below; writes go to private pages, never to the file.
                let map = unsafe { options.map_copy(&file) }.map_err(mapped)?;
                if populate && map.advise(memmap2::Advice::PopulateRead).is_err() {
                    let _ = map.advise(memmap2::Advice::WillNeed); // before Linux 5.14
                }
                Map::Private(map)
            } else {
                if mapping == Mapping::Populated {
                    options.populate();
                }
                // SAFETY: the mapping is read-only. If another process truncates the file
                // while it is mapped, touching a vanished page raises SIGBUS;
                // `Mapping::None` avoids that (docs/reliability.md).
                Map::Shared(unsafe { options.map(&file) }.map_err(mapped)?)
            };
            Kind::Map(map, file)
        };
        Ok(Source { kind, size })
    }
}

/// `O_NONBLOCK` only served the open; reads of a regular file ignore it, but clear it so
/// the descriptor behaves as any other.
pub(crate) fn clear_nonblocking(file: &File) {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor we own; failure leaves the flag, which is harmless.
    unsafe {
        let flags = libc::fcntl(fd, libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
}

impl<'a> Source<'a> {
    /// The caller's bytes, borrowed, never copied.
    pub(crate) fn memory(bytes: &'a [u8]) -> Source<'a> {
        Source {
            kind: Kind::Memory(bytes),
            size: bytes.len() as u64,
        }
    }

    /// The open file behind a local source (mapped or not), its mapping dropped; the
    /// source itself back when it has none (memory, a remote object).
    pub(crate) fn into_file(self) -> std::result::Result<File, Source<'a>> {
        match self.kind {
            Kind::Map(_, f) | Kind::File(f) => Ok(f),
            kind => Err(Source {
                kind,
                size: self.size,
            }),
        }
    }

    /// The file's size in bytes.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The mapping (or the caller's memory) as a whole: where the file's byte 0 is.
    pub(crate) fn base(&self) -> Option<&[u8]> {
        self.bytes()
    }

    /// Advises the kernel about `[offset, offset + len)` (bounds-checked by the caller):
    /// `madvise` on the pages of a mapping, `posix_fadvise` on a file read with `pread`,
    /// nothing for the caller's memory. Only ever a hint: never fails, never blocks on I/O,
    /// never changes a byte anyone reads (the mapping is shared and read-only: dropped
    /// pages are read again from the file when touched).
    pub(crate) fn advise(&self, offset: u64, len: u64, advice: Advice) {
        // The kernel starts at most a few MiB of readahead per WILLNEED call (8 MiB seen
        // here, whatever the length asked): ask in pieces so all of it is read.
        const PIECE: u64 = 8 << 20;
        if advice == Advice::WillNeed && len > PIECE {
            let mut at = 0;
            while at < len {
                self.advise(offset + at, PIECE.min(len - at), advice);
                at += PIECE;
            }
            return;
        }
        if len == 0 {
            return;
        }
        match &self.kind {
            Kind::Map(map, _) => {
                let flag = match advice {
                    Advice::WillNeed => libc::MADV_WILLNEED,
                    Advice::DontNeed => libc::MADV_DONTNEED,
                };
                advise_pages(map, offset as usize, len as usize, flag);
            }
            Kind::File(file) => {
                use std::os::fd::AsRawFd;
                let flag = match advice {
                    Advice::WillNeed => libc::POSIX_FADV_WILLNEED,
                    Advice::DontNeed => libc::POSIX_FADV_DONTNEED,
                };
                // SAFETY: a descriptor we own; an advice call has no memory effects.
                unsafe {
                    libc::posix_fadvise(
                        file.as_raw_fd(),
                        offset as libc::off_t,
                        len as libc::off_t,
                        flag,
                    );
                }
            }
            Kind::Memory(_) => {}
            #[cfg(feature = "remote")]
            Kind::Remote(_) => {}
        }
    }

    /// The open file's descriptor (mapped or read with `pread`), for a loader's direct
    /// reads; None for memory and remote objects.
    pub(crate) fn fd(&self) -> Option<i32> {
        use std::os::fd::AsRawFd;
        match &self.kind {
            Kind::Map(_, f) | Kind::File(f) => Some(f.as_raw_fd()),
            _ => None,
        }
    }

    /// The remote object behind this source, if it is one.
    #[cfg(feature = "remote")]
    pub(crate) fn remote(&self) -> Option<&remote::Remote> {
        match &self.kind {
            Kind::Remote(r) => Some(r),
            _ => None,
        }
    }

    /// Reads that may usefully run at once: a remote object's concurrency, else None.
    pub(crate) fn parallel_reads(&self) -> Option<usize> {
        match &self.kind {
            #[cfg(feature = "remote")]
            Kind::Remote(r) => Some(r.concurrency()),
            _ => None,
        }
    }

    /// Bytes per piece when a long range is streamed: 1 MiB from a file, a request's
    /// worth from a remote object.
    fn piece(&self) -> u64 {
        match &self.kind {
            #[cfg(feature = "remote")]
            Kind::Remote(_) => remote::PART,
            _ => PREAD_FROM as u64,
        }
    }

    /// The whole file when it is addressable memory (mapped or the caller's).
    pub(crate) fn bytes(&self) -> Option<&[u8]> {
        match &self.kind {
            Kind::Map(m, _) => Some(m),
            Kind::Memory(s) => Some(s),
            Kind::File(_) => None,
            #[cfg(feature = "remote")]
            Kind::Remote(_) => None,
        }
    }

    /// `[offset, offset + len)` when the file is addressable memory; the caller has
    /// bounds-checked the range (the model's validation does, for every blob).
    #[inline]
    pub(crate) fn stored(&self, offset: u64, len: u64) -> Option<&[u8]> {
        self.bytes()
            .map(|all| &all[offset as usize..(offset + len) as usize])
    }

    /// Fills `dst` with the bytes at `offset`; the caller has bounds-checked the range.
    pub(crate) fn read_at(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        let file = match &self.kind {
            Kind::File(f) => Some(f),
            Kind::Map(_, f) if dst.len() >= PREAD_FROM => Some(f),
            _ => None,
        };
        #[cfg(feature = "remote")]
        if let Kind::Remote(r) = &self.kind {
            return r.read(offset, dst);
        }
        if let Some(f) = file {
            return f.read_exact_at(dst, offset).map_err(|e| {
                Error::io(
                    format_args!("reading {} bytes at offset {offset}", dst.len()),
                    e,
                )
            });
        }
        let all = self.bytes().expect("a memory source");
        let start = offset as usize;
        dst.copy_from_slice(&all[start..start + dst.len()]);
        Ok(())
    }

    /// The bytes `[offset, offset + len)`: borrowed from memory, or read from the file
    /// into a new buffer. The caller has bounds-checked the range.
    pub(crate) fn region(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        if let Some(stored) = self.stored(offset, len) {
            return Ok(Cow::Borrowed(stored));
        }
        let mut v = zeroed_vec(len)?;
        self.read_at(offset, &mut v)?;
        Ok(Cow::Owned(v))
    }

    /// `region` for parsers: a range past the end of the file is a `Format` error naming
    /// it. Parsers bound `len` by their limits before asking.
    pub(crate) fn region_checked(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        match offset.checked_add(len) {
            Some(end) if end <= self.size => self.region(offset, len),
            _ => bail!(
                Format,
                "bytes [{offset}, {offset} + {len}) reach past the end of the {}-byte file",
                self.size
            ),
        }
    }

    /// `region_checked` for a format's parser: a piece of at most `PARSE_PREAD_MAX` bytes
    /// is read with `pread` even from a mapped file (`fetch`), so that a header read in
    /// pieces (GGUF's, 64 KiB at a time) costs the pieces, not every one of its pages
    /// mapped into the process; a larger one (a whole manifest) is borrowed from the
    /// mapping.
    pub(crate) fn parse_region(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        if len <= PARSE_PREAD_MAX
            && matches!(self.kind, Kind::Map(..))
            && offset.checked_add(len).is_some_and(|end| end <= self.size)
        {
            return self.fetch(offset, len);
        }
        self.region_checked(offset, len)
    }

    /// Passes `[offset, offset + len)` to `f` in pieces: all at once from memory, else in
    /// 1 MiB reads (for hashing a region without holding it).
    pub(crate) fn for_each_piece(
        &self,
        offset: u64,
        len: u64,
        mut f: impl FnMut(&[u8]),
    ) -> Result<()> {
        if let Some(stored) = self.stored(offset, len) {
            f(stored);
            return Ok(());
        }
        let mut chunk = zeroed_vec(self.piece().min(len))?;
        let mut done = 0u64;
        while done < len {
            let n = chunk.len().min((len - done) as usize);
            self.read_at(offset + done, &mut chunk[..n])?;
            f(&chunk[..n]);
            done += n as u64;
        }
        Ok(())
    }

    /// Fills `dst` with the bytes at `offset` without touching the mapping: a `pread` for a
    /// file (mapped or not), a copy from caller memory. For small scattered reads (frame
    /// headers, seek tables) that must not fault pages of a mapping into the process. The
    /// caller has bounds-checked the range.
    pub(crate) fn peek(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        match &self.kind {
            Kind::Map(_, f) | Kind::File(f) => f.read_exact_at(dst, offset).map_err(|e| {
                Error::io(
                    format_args!("reading {} bytes at offset {offset}", dst.len()),
                    e,
                )
            }),
            Kind::Memory(all) => {
                let start = offset as usize;
                dst.copy_from_slice(&all[start..start + dst.len()]);
                Ok(())
            }
            #[cfg(feature = "remote")]
            Kind::Remote(r) => r.read(offset, dst),
        }
    }

    /// Reads many small pieces at once, as `peek` does each: (offset, length) pairs in
    /// increasing order, their bytes one after the other into `out` (exactly their total
    /// length). Pieces close together (within `PEEK_GROUP` bytes) are read as one range;
    /// a remote object fetches the ranges concurrently (frame headers, scattered through
    /// a component, are read so). The caller has bounds-checked the pieces.
    pub(crate) fn peek_many(&self, pieces: &[(u64, usize)], out: &mut [u8]) -> Result<()> {
        let groups = group_pieces(pieces);
        #[cfg(feature = "remote")]
        if let Kind::Remote(r) = &self.kind {
            let ranges: Vec<_> = groups.iter().map(|g| g.range.clone()).collect();
            let fetched = r.read_ranges(&ranges)?;
            let mut at = 0;
            for (g, bytes) in groups.iter().zip(&fetched) {
                at = g.scatter(bytes, pieces, out, at);
            }
            return Ok(());
        }
        let mut buf = Vec::new();
        let mut at = 0;
        for g in &groups {
            let len = g.range.end - g.range.start;
            buf.clear();
            buf.try_reserve(len as usize)
                .map_err(|_| crate::error::err!(Limit, "no memory for {len} bytes"))?;
            buf.resize(len as usize, 0);
            self.peek(g.range.start, &mut buf)?;
            at = g.scatter(&buf, pieces, out, at);
        }
        Ok(())
    }

    /// The bytes `[offset, offset + len)`: borrowed from caller memory, else read with
    /// `pread` into a new buffer, also from a mapped file, whose pages are then never
    /// touched: the process's memory does not grow with every part of the file it reads
    /// once (frames decoded by range reads). The caller has bounds-checked the range.
    pub(crate) fn fetch(&self, offset: u64, len: u64) -> Result<Cow<'_, [u8]>> {
        if let Kind::Memory(all) = self.kind {
            return Ok(Cow::Borrowed(
                &all[offset as usize..(offset + len) as usize],
            ));
        }
        let mut v = zeroed_vec(len)?;
        self.peek(offset, &mut v)?;
        Ok(Cow::Owned(v))
    }

    /// The bytes `[offset, offset + len)` in order, in pieces: caller memory in one piece,
    /// a file (mapped or not) in 1 MiB `pread`s into one buffer, so that streaming through
    /// a long range holds 1 MiB and never maps the range's pages into the process. The
    /// caller has bounds-checked the range.
    pub(crate) fn chunks(&self, offset: u64, len: u64) -> SourceChunks<'_, 'a> {
        SourceChunks {
            source: self,
            at: offset,
            end: offset + len,
            buf: Vec::new(),
        }
    }

    /// Decodes the zstd stream stored at `[offset, offset + len)` into `dst`, which must
    /// come out exactly full. A large stream of frames with recorded sizes is decoded
    /// window by window (see `decode_windowed` and `decode_mapped_windows`), so the stored
    /// bytes never become resident as a whole; anything else is decoded in one piece.
    pub(crate) fn decode_zstd(&self, offset: u64, len: u64, dst: &mut [u8]) -> Result<()> {
        if len > ZSTD_WINDOW as u64 {
            let done = match &self.kind {
                Kind::Map(map, _) => decode_mapped_windows(map, offset, len, dst)?,
                Kind::File(file) => decode_windowed(
                    &|at, buf: &mut [u8]| {
                        file.read_exact_at(buf, at).map_err(|e| {
                            Error::io(
                                format_args!("reading {} bytes at offset {at}", buf.len()),
                                e,
                            )
                        })
                    },
                    offset,
                    len,
                    dst,
                )?,
                #[cfg(feature = "remote")]
                Kind::Remote(r) => decode_windowed(&|at, buf| r.read(at, buf), offset, len, dst)?,
                Kind::Memory(_) => false,
            };
            if done {
                return Ok(());
            }
        }
        let stored = self.region(offset, len)?;
        zstd_decode_into(&stored, dst)
    }
}

/// Pieces `peek_many` reads as one range when they all lie within this many bytes.
const PEEK_GROUP: u64 = 64 << 10;

/// A range `peek_many` reads, and the pieces in it.
struct PieceGroup {
    range: std::ops::Range<u64>,
    pieces: std::ops::Range<usize>,
}

impl PieceGroup {
    /// Copies the group's pieces out of `bytes` (its range's) into `out` from `at`;
    /// returns where the next group's pieces go.
    fn scatter(&self, bytes: &[u8], pieces: &[(u64, usize)], out: &mut [u8], at: usize) -> usize {
        let mut at = at;
        for &(offset, len) in &pieces[self.pieces.clone()] {
            let from = (offset - self.range.start) as usize;
            out[at..at + len].copy_from_slice(&bytes[from..from + len]);
            at += len;
        }
        at
    }
}

/// Groups increasing pieces into ranges of at most `PEEK_GROUP` bytes (a larger piece
/// is a range of its own).
fn group_pieces(pieces: &[(u64, usize)]) -> Vec<PieceGroup> {
    let mut groups: Vec<PieceGroup> = Vec::new();
    for (i, &(offset, len)) in pieces.iter().enumerate() {
        let end = offset + len as u64;
        match groups.last_mut() {
            Some(g)
                if offset >= g.range.start
                    && end.max(g.range.end) - g.range.start <= PEEK_GROUP =>
            {
                g.range.end = g.range.end.max(end);
                g.pieces.end = i + 1;
            }
            _ => groups.push(PieceGroup {
                range: offset..end,
                pieces: i..i + 1,
            }),
        }
    }
    groups
}

/// A range of a source in pieces (`Source::chunks`).
pub(crate) struct SourceChunks<'s, 'a> {
    source: &'s Source<'a>,
    at: u64,
    end: u64,
    buf: Vec<u8>,
}

impl Chunks for SourceChunks<'_, '_> {
    fn next_chunk(&mut self) -> Result<&[u8]> {
        let n = (self.end - self.at).min(self.source.piece());
        if let Kind::Memory(all) = self.source.kind {
            let (from, to) = (self.at as usize, self.end as usize);
            self.at = self.end;
            return Ok(&all[from..to]);
        }
        if self.buf.len() < n as usize {
            self.buf = zeroed_vec(n)?;
        }
        let piece = &mut self.buf[..n as usize];
        self.source.peek(self.at, piece)?;
        self.at += n;
        Ok(piece)
    }
}

/// `madvise(flag)` on the pages of `[offset, offset + len)` of a shared read-only mapping.
/// `MADV_DONTNEED` drops them from the process (they stay in the page cache; touching
/// them again maps them again); `MADV_WILLNEED` starts reading them in.
fn advise_pages(map: &Map, offset: usize, len: usize, flag: libc::c_int) {
    if flag == libc::MADV_DONTNEED && matches!(map, Map::Private(_)) {
        return; // it would drop what was written to the private pages
    }
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
                flag,
            );
        }
    }
}

/// The largest piece `parse_region` reads with `pread` from a mapped file.
const PARSE_PREAD_MAX: u64 = 1 << 20;

#[cfg(test)]
mod tests;
