//! How a load reads a raw component's bytes from its file: copied from the mapping, read
//! with `pread` through the page cache, or read with `O_DIRECT` (around the page cache,
//! into aligned buffers); and, from a remote object, fetched by exact range requests.
//!
//! The way is chosen once per file and load (`ReadMode::Auto`): a file whose pages are
//! mostly in the page cache (`mincore` on a sample), or under 64 MiB, is read through the
//! cache; a cold one with `O_DIRECT`: 1 MiB reads, several in flight (the load's tasks),
//! at the storage's speed and without the page cache's work (on 2 cores that work is what
//! held buffered reads of a cold file to 0.70x–0.91x of raw `O_DIRECT`, where ours reach
//! 0.92x–1.11x in the benchmark's `cold` section run alone; bench/README gives the full
//! runs too), and without filling the cache with a
//! model that is about to live on a GPU. The price: a file read that way stays out of the
//! cache, so the next load of it is cold again (`ReadMode::Pread` keeps it). A filesystem
//! that refuses `O_DIRECT` (tmpfs, some FUSE filesystems) is read through the cache
//! instead.
//! Whichever the way, a load whose reads wait on storage (`Way::waits_on_storage`) keeps
//! several in flight: its tasks run on the I/O helper's threads, at least 16 of them
//! (`run.rs`), not one per core.
//!
//! Reads of neighbouring pieces of a file (adjacent requests, chunks packed together) are
//! one read: `preadv` into every destination, one `O_DIRECT` read of the range they
//! cover, or one range request.

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::error::{Error, Result, err};
use crate::reader::Reader;
use crate::source::Source;

use super::ReadMode;
use super::budget::{Budget, Grant};

/// The alignment of `O_DIRECT` reads: of the file offset, the length and the memory (the
/// page size covers every logical block size in use).
pub(crate) const DIRECT_ALIGN: u64 = 4096;

/// Reads of at least this size from a mapped file go through `pread` (faster than
/// faulting the mapping's pages in and copying them), smaller ones are copied from the
/// mapping: the reader's own rule for a mapped file.
const PREAD_FROM: usize = 1 << 20;

/// The most pieces one `preadv` takes (Linux's `IOV_MAX`).
const IOV_MAX: usize = 1024;

/// The most bytes one `O_DIRECT` read into destinations asks for (`Io::read`): a read of
/// more is several, each copied out of the task's aligned buffer before the next is
/// issued. Measured on the cold section of the benchmark (W1, 8 tasks then, a virtual
/// disk): with 1 MiB pieces ours reached 0.87x–1.09x of the best raw read; with this
/// constant set to 4 MiB or 16 MiB, 0.71x–0.79x (likely because a task's copy then waits for a
/// whole large read, and its buffer outgrows the caches). A chunk to convert or gather
/// (`Io::span`) is read whole: its converter needs all of it in the buffer.
const DIRECT_PIECE: usize = 1 << 20;

/// Gaps up to this fraction of a piece are fetched with it when pieces of a remote
/// object are read (1/16: a few percent more bytes instead of a request more).
const REMOTE_GAP_DIVISOR: u64 = 16;

/// How one file is read in a load.
pub(crate) enum Way<'r> {
    /// Through the page cache: from the mapping (`map`) when the piece is small and the
    /// file is mapped, else `pread` on `fd`. `forced`: always the mapping when there is
    /// one (`ReadMode::Mmap`), or always `pread` (`ReadMode::Pread`).
    Buffered {
        map: Option<&'r [u8]>,
        fd: i32,
        force: Option<ReadMode>,
        /// Most of the file is not in the page cache (`ReadMode::Auto` looked).
        cold: bool,
    },
    /// `O_DIRECT` reads on a descriptor of our own for the same file (`pread` on the
    /// reader's `fd` once the filesystem refused one).
    Direct {
        direct: OwnedFd,
        fd: i32,
        refused: AtomicBool,
    },
    /// The caller's memory.
    Memory(&'r [u8]),
    /// Anything else (a remote object): through the source.
    Source(&'r Source<'r>),
}

impl Way<'_> {
    /// Whether reads of this way wait on storage: `O_DIRECT`, or through the cache of a
    /// file that is mostly not there. Such reads reach the storage's speed only with
    /// several in flight.
    pub(crate) fn waits_on_storage(&self) -> bool {
        match self {
            Way::Direct { refused, .. } => !refused.load(Ordering::Relaxed),
            Way::Buffered { cold, .. } => *cold,
            Way::Memory(_) | Way::Source(_) => false,
        }
    }
}

/// The ways of the files of one load, each chosen on first use, and what was read.
pub(crate) struct Io<'r> {
    mode: ReadMode,
    files: Vec<OnceLock<Way<'r>>>,
    /// Reads issued (after merging neighbours), and those with `O_DIRECT`.
    pub(crate) reads: AtomicU64,
    pub(crate) direct: AtomicU64,
}

impl<'r> Io<'r> {
    pub(crate) fn new(reader: &Reader<'_>, mode: ReadMode) -> Io<'r> {
        Io {
            mode,
            files: (0..reader.shard_count()).map(|_| OnceLock::new()).collect(),
            reads: AtomicU64::new(0),
            direct: AtomicU64::new(0),
        }
    }

    /// The way file `file` (whose source is `source`) is read, chosen on first use.
    pub(crate) fn way(&self, file: u32, source: &'r Source<'r>) -> Option<&Way<'r>> {
        let slot = self.files.get(file as usize)?;
        Some(slot.get_or_init(|| choose(source, self.mode)))
    }

    /// Reads the file's bytes from `offset` into `outs`, one after the other (pieces that
    /// lie next to each other in the file): one read for all of them where the way allows
    /// (`preadv`, one `O_DIRECT` read of the range they cover into `scratch`, one range
    /// request). The caller has bounds-checked the range.
    pub(crate) fn read(
        &self,
        way: &Way<'_>,
        offset: u64,
        outs: &mut [&mut [u8]],
        scratch: &mut Scratch<'_>,
    ) -> Result<()> {
        let total: usize = outs.iter().map(|o| o.len()).sum();
        if total == 0 {
            return Ok(());
        }
        match way {
            Way::Memory(all) => copy_from(all, offset, outs),
            Way::Buffered { map, fd, force, .. } => {
                let from_map = match (force, map) {
                    (Some(ReadMode::Pread), _) | (_, None) => None,
                    (Some(ReadMode::Mmap), Some(m)) => Some(*m),
                    (_, Some(m)) => (total < PREAD_FROM).then_some(*m),
                };
                match from_map {
                    Some(m) => copy_from(m, offset, outs),
                    None => {
                        self.reads
                            .fetch_add(outs.len().div_ceil(IOV_MAX) as u64, Ordering::Relaxed);
                        preadv_all(*fd, offset, outs)
                    }
                }
            }
            Way::Direct {
                direct,
                fd,
                refused,
            } => {
                if !refused.load(Ordering::Relaxed) {
                    match self.direct_pieces(direct.as_raw_fd(), offset, total, outs, scratch) {
                        Ok(()) => return Ok(()),
                        // The filesystem refused O_DIRECT (EINVAL): read through the
                        // cache from now on.
                        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                            refused.store(true, Ordering::Relaxed);
                        }
                        Err(e) => {
                            return Err(Error::io(
                                format_args!("reading {total} bytes at offset {offset} (O_DIRECT)"),
                                e,
                            ));
                        }
                    }
                }
                self.reads
                    .fetch_add(outs.len().div_ceil(IOV_MAX) as u64, Ordering::Relaxed);
                preadv_all(*fd, offset, outs)
            }
            Way::Source(source) => {
                self.reads.fetch_add(1, Ordering::Relaxed);
                read_source(source, offset, total, outs, scratch)
            }
        }
    }

    /// Reads `[offset, offset + total)` with `O_DIRECT` into `outs` (one after the
    /// other), `DIRECT_PIECE` bytes at a time: each piece read into the aligned scratch
    /// buffer and copied out before the next is read.
    fn direct_pieces(
        &self,
        fd: i32,
        offset: u64,
        total: usize,
        outs: &mut [&mut [u8]],
        scratch: &mut Scratch<'_>,
    ) -> std::io::Result<()> {
        let mut at = 0usize;
        while at < total {
            let n = DIRECT_PIECE.min(total - at);
            let bytes = self.direct_read(fd, offset + at as u64, n, scratch)?;
            scatter_at(bytes, outs, at);
            at += n;
        }
        Ok(())
    }

    /// Reads `[offset, offset + len)` with `O_DIRECT` into the aligned scratch buffer and
    /// returns those bytes (the aligned range around them read whole).
    fn direct_read<'s>(
        &self,
        fd: i32,
        offset: u64,
        len: usize,
        scratch: &'s mut Scratch<'_>,
    ) -> std::io::Result<&'s [u8]> {
        let start = offset / DIRECT_ALIGN * DIRECT_ALIGN;
        let end = (offset + len as u64).next_multiple_of(DIRECT_ALIGN);
        let span = (end - start) as usize;
        let buf = scratch
            .aligned(span)
            .map_err(|e| std::io::Error::other(e.to_string()))?;
        let mut done = 0usize;
        let want = (offset - start) as usize + len;
        while done < want {
            // SAFETY: `buf[done..span]` is ours to write; the offset and length are
            // multiples of the alignment, and so is the buffer's address (checked by
            // `aligned`) plus `done` (each read returns whole blocks until the file's end).
            let n = unsafe {
                libc::pread(
                    fd,
                    buf.as_mut_ptr().add(done).cast(),
                    span - done,
                    (start + done as u64) as libc::off_t,
                )
            };
            match n {
                n if n > 0 => {
                    self.direct.fetch_add(1, Ordering::Relaxed);
                    self.reads.fetch_add(1, Ordering::Relaxed);
                    done += n as usize;
                    if !(done as u64).is_multiple_of(DIRECT_ALIGN) && done < want {
                        // A short read that isn't whole blocks: only at the file's end.
                        return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof));
                    }
                }
                0 => return Err(std::io::Error::from(std::io::ErrorKind::UnexpectedEof)),
                _ => {
                    let e = std::io::Error::last_os_error();
                    if e.kind() != std::io::ErrorKind::Interrupted {
                        return Err(e);
                    }
                }
            }
        }
        let from = (offset - start) as usize;
        Ok(&buf[from..from + len])
    }

    /// The file's bytes `[offset, offset + len)` for a chunk to convert or gather:
    /// borrowed from the mapping or the caller's memory when the way reads through them,
    /// else read into `scratch` (with `O_DIRECT`, the aligned range around them). With
    /// `pieces` (start, length from `offset`, increasing), only those bytes are needed:
    /// a remote object fetches only them (neighbours with a small gap together, each range
    /// one request), the rest of the span left as it was; a local file is read whole (one
    /// read costs less than many).
    pub(crate) fn span<'s>(
        &self,
        way: &'s Way<'_>,
        offset: u64,
        len: usize,
        pieces: Option<&[(u64, u64)]>,
        scratch: &'s mut Scratch<'_>,
    ) -> Result<&'s [u8]> {
        let at = offset as usize;
        match way {
            Way::Memory(all) => return Ok(&all[at..at + len]),
            // The reader's rule for a mapped file: small pieces from the mapping, large
            // ones with pread (whose pages then never become the process's).
            Way::Buffered {
                map: Some(m),
                force: Some(ReadMode::Mmap),
                ..
            } => return Ok(&m[at..at + len]),
            Way::Buffered {
                map: Some(m),
                force: None,
                ..
            } if len < PREAD_FROM => return Ok(&m[at..at + len]),
            Way::Direct {
                direct, refused, ..
            } if !refused.load(Ordering::Relaxed) => {
                match self.direct_read(direct.as_raw_fd(), offset, len, scratch) {
                    // The borrow checker can't see that the error path holds no borrow:
                    // read again below through the scratch (the bytes are cached).
                    Ok(_) => {}
                    Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                        refused.store(true, Ordering::Relaxed);
                    }
                    Err(e) => {
                        return Err(Error::io(
                            format_args!("reading {len} bytes at offset {offset} (O_DIRECT)"),
                            e,
                        ));
                    }
                }
                if !refused.load(Ordering::Relaxed) {
                    let start = offset / DIRECT_ALIGN * DIRECT_ALIGN;
                    let from = (offset - start) as usize;
                    let span = (offset + len as u64).next_multiple_of(DIRECT_ALIGN) - start;
                    return Ok(&scratch.get(span as usize)?[from..from + len]);
                }
            }
            _ => {}
        }
        let buf = scratch.get(len)?;
        #[cfg(feature = "remote")]
        if let (Way::Source(source), Some(pieces)) = (way, pieces)
            && let Some(remote) = source.remote()
        {
            let ranges = merge_pieces(pieces);
            let wanted: Vec<std::ops::Range<u64>> = ranges
                .iter()
                .map(|r| offset + r.start..offset + r.end)
                .collect();
            self.reads.fetch_add(wanted.len() as u64, Ordering::Relaxed);
            let fetched = remote.read_ranges(&wanted)?;
            for (r, bytes) in ranges.iter().zip(&fetched) {
                buf[r.start as usize..r.end as usize].copy_from_slice(bytes);
            }
            return Ok(buf);
        }
        match way {
            Way::Source(source) => {
                self.reads.fetch_add(1, Ordering::Relaxed);
                source.read_at(offset, buf)?;
            }
            Way::Buffered { fd, .. } | Way::Direct { fd, .. } => {
                self.reads.fetch_add(1, Ordering::Relaxed);
                preadv_all(*fd, offset, &mut [&mut *buf])?;
            }
            Way::Memory(_) => unreachable!("borrowed above"),
        }
        let _ = pieces;
        Ok(buf)
    }
}

/// Pieces (start, length) merged into ranges where the gap between two is at most
/// `1 / REMOTE_GAP_DIVISOR` of the smaller.
#[cfg_attr(not(feature = "remote"), allow(dead_code))]
fn merge_pieces(pieces: &[(u64, u64)]) -> Vec<std::ops::Range<u64>> {
    let mut out: Vec<std::ops::Range<u64>> = Vec::new();
    let mut last_len = 0u64;
    for &(start, len) in pieces {
        if len == 0 {
            continue;
        }
        match out.last_mut() {
            Some(r)
                if start >= r.end && start - r.end <= last_len.min(len) / REMOTE_GAP_DIVISOR =>
            {
                r.end = start + len;
            }
            _ => out.push(start..start + len),
        }
        last_len = len;
    }
    out
}

fn copy_from(all: &[u8], offset: u64, outs: &mut [&mut [u8]]) -> Result<()> {
    let mut at = offset as usize;
    for out in outs.iter_mut() {
        out.copy_from_slice(&all[at..at + out.len()]);
        at += out.len();
    }
    Ok(())
}

/// Copies `bytes` into the concatenation of `outs`, from its position `at` on.
fn scatter_at(mut bytes: &[u8], outs: &mut [&mut [u8]], mut at: usize) {
    for out in outs.iter_mut() {
        if bytes.is_empty() {
            break;
        }
        if at >= out.len() {
            at -= out.len();
            continue;
        }
        let n = (out.len() - at).min(bytes.len());
        let (head, rest) = bytes.split_at(n);
        out[at..at + n].copy_from_slice(head);
        bytes = rest;
        at = 0;
    }
}

/// `preadv` of every piece, whole (short reads continued, `EINTR` retried), at most
/// `IOV_MAX` pieces per call.
fn preadv_all(fd: i32, offset: u64, outs: &mut [&mut [u8]]) -> Result<()> {
    let total: usize = outs.iter().map(|o| o.len()).sum();
    let fail =
        |e: std::io::Error| Error::io(format_args!("reading {total} bytes at offset {offset}"), e);
    let mut at = offset;
    // (piece, bytes of it done)
    let (mut piece, mut done) = (0usize, 0usize);
    while piece < outs.len() {
        if outs[piece].len() == done {
            piece += 1;
            done = 0;
            continue;
        }
        let iov: Vec<libc::iovec> = outs[piece..]
            .iter_mut()
            .take(IOV_MAX)
            .enumerate()
            .map(|(k, o)| {
                let skip = if k == 0 { done } else { 0 };
                libc::iovec {
                    // SAFETY: within the piece (skip <= its length).
                    iov_base: unsafe { o.as_mut_ptr().add(skip) }.cast(),
                    iov_len: o.len() - skip,
                }
            })
            .collect();
        // SAFETY: every iovec points into a piece we hold mutably, for its length.
        let n = unsafe { libc::preadv(fd, iov.as_ptr(), iov.len() as i32, at as libc::off_t) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(fail(e));
        }
        if n == 0 {
            return Err(fail(std::io::Error::from(
                std::io::ErrorKind::UnexpectedEof,
            )));
        }
        let mut n = n as usize;
        at += n as u64;
        while n > 0 {
            let left = outs[piece].len() - done;
            if n >= left {
                n -= left;
                piece += 1;
                done = 0;
            } else {
                done += n;
                n = 0;
            }
        }
    }
    Ok(())
}

/// Reads through the source (a remote object): small pieces fetched exactly, one request
/// for all of them (a remote object's block cache would fetch more than asked), large ones
/// as the source splits them.
fn read_source(
    source: &Source<'_>,
    offset: u64,
    total: usize,
    outs: &mut [&mut [u8]],
    scratch: &mut Scratch<'_>,
) -> Result<()> {
    #[cfg(feature = "remote")]
    if let Some(remote) = source.remote()
        && total as u64 <= 1 << 20
    {
        let range = offset..offset + total as u64;
        let fetched = remote.read_ranges(std::slice::from_ref(&range))?;
        scatter_at(&fetched[0], outs, 0);
        return Ok(());
    }
    if let [one] = outs {
        return source.read_at(offset, one);
    }
    let buf = scratch.get(total)?;
    source.read_at(offset, buf)?;
    scatter_at(buf, outs, 0);
    Ok(())
}

/// The way a file is read with `mode`.
fn choose<'r>(source: &'r Source<'r>, mode: ReadMode) -> Way<'r> {
    let Some(fd) = source.fd() else {
        return match source.bytes() {
            Some(all) => Way::Memory(all),
            None => Way::Source(source),
        };
    };
    let map = source.bytes();
    let buffered = |force, cold| Way::Buffered {
        map,
        fd,
        force,
        cold,
    };
    match mode {
        ReadMode::Mmap | ReadMode::Pread => return buffered(Some(mode), false),
        ReadMode::Direct => {}
        ReadMode::Auto if is_cold(fd, source.size()) => {}
        ReadMode::Auto => return buffered(None, false),
    }
    match open_direct(fd) {
        Some(d) => Way::Direct {
            direct: d,
            fd,
            refused: AtomicBool::new(false),
        },
        None => buffered(None, true),
    }
}

/// Whether a file of `size` bytes on `fd` is cold: large enough to matter (64 MiB; the
/// page cache costs a small file nothing worth avoiding) and under half of a sample of
/// its pages in the page cache.
fn is_cold(fd: i32, size: u64) -> bool {
    size >= 64 << 20 && resident_fraction(fd, size).is_some_and(|f| f < 0.5)
}

/// The fraction of a sample of the file's pages that are in the page cache: 64 windows
/// of 16 pages spread over the file, asked with `mincore` on a mapping made for the
/// question (nothing is read).
pub(crate) fn resident_fraction(fd: i32, size: u64) -> Option<f64> {
    let page = 4096u64;
    let len = usize::try_from(size).ok()?;
    if len == 0 {
        return Some(1.0);
    }
    // SAFETY: a fresh read-only shared mapping of our descriptor; never dereferenced.
    let map = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            len,
            libc::PROT_READ,
            libc::MAP_SHARED,
            fd,
            0,
        )
    };
    if map == libc::MAP_FAILED {
        return None;
    }
    let pages = size.div_ceil(page);
    let (windows, per) = (64u64, 16u64);
    let mut vec = [0u8; 16];
    let (mut asked, mut resident) = (0u64, 0u64);
    for w in 0..windows.min(pages.div_ceil(per)) {
        let first = (pages.saturating_sub(per)) * w / (windows - 1).max(1);
        let count = per.min(pages - first);
        // SAFETY: `count` pages from `first` lie inside the mapping; `vec` has room.
        let r = unsafe {
            libc::mincore(
                map.cast::<u8>().add((first * page) as usize).cast(),
                (count * page) as usize,
                vec.as_mut_ptr(),
            )
        };
        if r == 0 {
            asked += count;
            resident += vec[..count as usize]
                .iter()
                .filter(|&&b| b & 1 != 0)
                .count() as u64;
        }
    }
    // SAFETY: unmapping what was mapped above.
    unsafe { libc::munmap(map, len) };
    (asked > 0).then(|| resident as f64 / asked as f64)
}

/// A descriptor of the same file as `fd`, opened with `O_DIRECT` (through /proc/self/fd,
/// checked to be the same inode), or None where that can't be done (no /proc, a
/// filesystem that refuses `O_DIRECT`).
pub(crate) fn open_direct(fd: i32) -> Option<OwnedFd> {
    let path = std::ffi::CString::new(format!("/proc/self/fd/{fd}")).ok()?;
    // SAFETY: a NUL-terminated path; the descriptor returned is ours.
    let d = unsafe {
        libc::open(
            path.as_ptr(),
            libc::O_RDONLY | libc::O_DIRECT | libc::O_CLOEXEC,
        )
    };
    if d < 0 {
        return None;
    }
    // SAFETY: a descriptor just opened, owned here.
    let direct = unsafe { OwnedFd::from_raw_fd(d) };
    // SAFETY: libc::stat is plain integers, for which all zero bytes are a valid value.
    let (mut a, mut b): (libc::stat, libc::stat) =
        unsafe { (std::mem::zeroed(), std::mem::zeroed()) };
    // SAFETY: fstat on descriptors we hold, into structs we own.
    let same = unsafe { libc::fstat(fd, &mut a) == 0 && libc::fstat(d, &mut b) == 0 }
        && a.st_dev == b.st_dev
        && a.st_ino == b.st_ino;
    same.then_some(direct)
}

/// A task's buffer for source bytes that can't be read straight into their destination
/// (a chunk to convert or gather, an `O_DIRECT` read's aligned range): grown as needed
/// (kept between chunks), every byte of it taken from the load's budget first.
pub(crate) struct Scratch<'b> {
    buf: Option<Aligned>,
    grant: Option<Grant<'b>>,
    budget: &'b Budget,
    /// The most bytes it held.
    peak: usize,
}

/// Zeroed memory aligned for `O_DIRECT`.
struct Aligned {
    ptr: std::ptr::NonNull<u8>,
    len: usize,
}

// SAFETY: owned memory, like a Box<[u8]>.
unsafe impl Send for Aligned {}
// SAFETY: shared access only reads.
unsafe impl Sync for Aligned {}

impl Aligned {
    fn zeroed(len: usize) -> Result<Aligned> {
        let layout = std::alloc::Layout::from_size_align(len.max(1), DIRECT_ALIGN as usize)
            .map_err(|_| err!(Limit, "{len} bytes cannot be allocated"))?;
        // SAFETY: a non-zero size.
        let raw = unsafe { std::alloc::alloc_zeroed(layout) };
        let ptr = std::ptr::NonNull::new(raw)
            .ok_or_else(|| err!(Limit, "could not allocate {len} bytes of scratch memory"))?;
        Ok(Aligned { ptr, len })
    }

    fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: `len` zeroed bytes of ours.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for Aligned {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with this layout.
        unsafe {
            std::alloc::dealloc(
                self.ptr.as_ptr(),
                std::alloc::Layout::from_size_align_unchecked(
                    self.len.max(1),
                    DIRECT_ALIGN as usize,
                ),
            )
        }
    }
}

impl<'b> Scratch<'b> {
    pub(crate) fn new(budget: &'b Budget) -> Scratch<'b> {
        Scratch {
            buf: None,
            grant: None,
            budget,
            peak: 0,
        }
    }

    /// `len` bytes to read into (grown, after waiting for the budget, and kept).
    pub(crate) fn get(&mut self, len: usize) -> Result<&mut [u8]> {
        let have = self.buf.as_ref().map_or(0, |b| b.len);
        if have < len {
            // Give back what is held before waiting for more (see budget.rs: no deadlock).
            self.release();
            self.hold_with(len, 0, "a chunk's scratch buffer")?;
        }
        let buf = self.buf.as_mut().expect("allocated above");
        Ok(&mut buf.as_mut_slice()[..len])
    }

    /// `len` bytes of memory aligned for `O_DIRECT`.
    pub(crate) fn aligned(&mut self, len: usize) -> Result<&mut [u8]> {
        let buf = self.get(len)?;
        if !(buf.as_ptr() as u64).is_multiple_of(DIRECT_ALIGN) {
            return Err(err!(Internal, "a scratch buffer is not page-aligned"));
        }
        Ok(buf)
    }

    /// A buffer of `size` bytes and `extra` bytes more of the budget (returned: held
    /// until dropped), taken together in one wait after giving back what it held (a task
    /// waits for memory only while it holds none).
    pub(crate) fn hold_with(&mut self, size: usize, extra: u64, what: &str) -> Result<Grant<'b>> {
        self.release();
        let mut grant = self.budget.take(extra.saturating_add(size as u64), what)?;
        let mine = grant.split(size as u64);
        self.buf = Some(Aligned::zeroed(size)?);
        self.peak = self.peak.max(size);
        self.grant = Some(mine);
        Ok(grant)
    }

    /// Gives the buffer and its bytes of budget back.
    pub(crate) fn release(&mut self) {
        self.buf = None;
        self.grant = None;
    }

    /// The most bytes it held.
    pub(crate) fn peak(&self) -> usize {
        self.peak
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remote_pieces_merge_only_across_small_gaps() {
        // Columns of a 4-way split: gaps three times a piece, never merged.
        assert_eq!(
            merge_pieces(&[(0, 16), (64, 16), (128, 16)]),
            vec![0..16, 64..80, 128..144]
        );
        // A gap of 1/16 of the pieces is fetched with them.
        assert_eq!(merge_pieces(&[(0, 160), (170, 160)]), vec![0..330]);
        assert_eq!(
            merge_pieces(&[(0, 160), (171, 160)]),
            vec![0..160, 171..331]
        );
    }

    #[test]
    fn preadv_fills_every_piece_and_direct_reads_match() {
        let dir = std::env::temp_dir().join(format!("zt_io_{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        let data: Vec<u8> = (0..(3 << 20) + 123).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&path, &data).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let (mut a, mut b, mut c) = (vec![0u8; 5], vec![0u8; 1 << 20], vec![0u8; 77]);
        preadv_all(f.as_raw_fd(), 1000, &mut [&mut a, &mut b, &mut c]).unwrap();
        assert_eq!(a, data[1000..1005]);
        assert_eq!(b, data[1005..1005 + (1 << 20)]);
        assert_eq!(c, data[1005 + (1 << 20)..1005 + (1 << 20) + 77]);
        let budget = Budget::new(64 << 20, 0);
        let mut scratch = Scratch::new(&budget);
        let io = Io {
            mode: ReadMode::Direct,
            files: Vec::new(),
            reads: AtomicU64::new(0),
            direct: AtomicU64::new(0),
        };
        // The file's last bytes: the aligned range ends past the file.
        let at = data.len() as u64 - 5000;
        match open_direct(f.as_raw_fd()) {
            Some(d) => {
                let got = io.direct_read(d.as_raw_fd(), at, 5000, &mut scratch);
                match got {
                    Ok(bytes) => assert_eq!(bytes, &data[at as usize..]),
                    // tmpfs and friends refuse O_DIRECT reads.
                    Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}"),
                }
                // Pieces across several 1 MiB reads, from an unaligned offset, the last
                // to the file's end: each read's bytes land where they belong.
                let from = 4097u64;
                let head = [3usize, (1 << 20) + 5, 1];
                let last = data.len() - from as usize - head.iter().sum::<usize>();
                let mut outs: Vec<Vec<u8>> =
                    head.iter().chain([&last]).map(|&n| vec![0u8; n]).collect();
                let total: usize = outs.iter().map(Vec::len).sum();
                let mut views: Vec<&mut [u8]> = outs.iter_mut().map(|v| v.as_mut_slice()).collect();
                let before = io.direct.load(Ordering::Relaxed);
                match io.direct_pieces(d.as_raw_fd(), from, total, &mut views, &mut scratch) {
                    Ok(()) => {
                        let got: Vec<u8> = outs.concat();
                        assert!(got == data[from as usize..from as usize + total]);
                        // ceil(total / 1 MiB) reads at least.
                        assert!(
                            io.direct.load(Ordering::Relaxed) - before
                                >= total.div_ceil(DIRECT_PIECE) as u64
                        );
                    }
                    Err(e) => assert_eq!(e.raw_os_error(), Some(libc::EINVAL), "{e}"),
                }
            }
            None => eprintln!("O_DIRECT refused here"),
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn scatter_at_fills_the_pieces_from_a_position() {
        let (mut a, mut b, mut c) = (vec![0u8; 3], vec![0u8; 4], vec![0u8; 2]);
        // Positions 2..7 of the nine bytes: a's last, all of b.
        scatter_at(&[1, 2, 3, 4, 5], &mut [&mut a, &mut b, &mut c], 2);
        assert_eq!(
            (a.as_slice(), b.as_slice(), c.as_slice()),
            (&[0, 0, 1][..], &[2, 3, 4, 5][..], &[0, 0][..])
        );
        scatter_at(&[9, 8], &mut [&mut a, &mut b, &mut c], 7);
        assert_eq!(c, [9, 8]);
    }
}
