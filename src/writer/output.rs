//! Where a writer's bytes go: the output with its position and first failure, the early
//! writeback of a durable file, and the temporary file a path writer fills until
//! `finish` names it (`Target`).

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::error::{Error, Result};
use crate::formats::ztensor::ALIGNMENT;

/// Where the bytes go, and how far they got.
pub(super) struct Output<W> {
    pub(super) out: W,
    /// Bytes written so far.
    pub(super) pos: u64,
    /// The first I/O failure: the file can't be finished after one.
    pub(super) failed: Option<String>,
    /// What the writer writes, for error messages: the final path, or "stream".
    pub(super) label: Box<str>,
    /// Writeback started early on a durable file, so that the final fsync has little
    /// left to write.
    pub(super) writeback: Option<Writeback>,
}

impl<W: Write> Output<W> {
    /// Writes bytes; an I/O failure poisons the writer (the file can't be finished).
    pub(super) fn emit(&mut self, bytes: &[u8]) -> Result<()> {
        if let Some(wb) = &mut self.writeback {
            wb.before(self.pos, bytes.len());
        }
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
    pub(super) fn pad(&mut self) -> Result<()> {
        const ZEROS: [u8; ALIGNMENT as usize] = [0; ALIGNMENT as usize];
        let pad = (ALIGNMENT - self.pos % ALIGNMENT) % ALIGNMENT;
        self.emit(&ZEROS[..pad as usize])
    }
}

/// How a durable file gets to disk while it is written, so that `finish`'s sync has
/// only the last few MiB left: the kernel is asked to start writing each chunk of pages
/// as soon as it is surely out of the writer's buffer (`sync_file_range(WRITE)`), and
/// the writer waits for the chunks more than `BEHIND` bytes back to be on disk before it
/// goes on (so the dirty pages of the file stay bounded, the disk never idles while the
/// writer fills memory, and nothing is left for one long wait at the end). Large writes
/// are preallocated first (`fallocate`, keeping the size: exactly the bytes about to be
/// written), so the filesystem allocates their blocks in one extent up front. Linux
/// only; elsewhere, and wherever the calls are refused (a filesystem without them), the
/// final sync does all the work, as it would anyway.
pub(super) struct Writeback {
    /// The temporary file (a second handle to it).
    pub(super) file: File,
    /// Bytes whose writeback has been started.
    pub(super) started: u64,
    /// Bytes known to be on disk (waited for).
    waited: u64,
    /// Bytes preallocated.
    allocated: u64,
}

impl Writeback {
    /// Writeback is started this many bytes at a time.
    const CHUNK: u64 = 8 << 20;
    /// Written bytes further back than this are waited for.
    const BEHIND: u64 = 64 << 20;
    /// Writes at least this long are preallocated.
    const PREALLOCATE: usize = 4 << 20;

    pub(super) fn new(file: File) -> Writeback {
        Writeback {
            file,
            started: 0,
            waited: 0,
            allocated: 0,
        }
    }

    /// Called before `len` bytes are written at `pos`: preallocates them when they are
    /// many (only what is written now, so nothing is allocated past the file's end).
    pub(super) fn before(&mut self, pos: u64, len: usize) {
        if len < Self::PREALLOCATE || pos + (len as u64) <= self.allocated {
            return;
        }
        let from = pos.max(self.allocated);
        let to = pos + len as u64;
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            // SAFETY: a descriptor we own; fallocate only reserves blocks, keeping the
            // size. A refusal (a filesystem without it) is harmless.
            unsafe {
                libc::fallocate(
                    self.file.as_raw_fd(),
                    libc::FALLOC_FL_KEEP_SIZE,
                    from as libc::off_t,
                    (to - from) as libc::off_t,
                );
            }
        }
        let _ = from;
        self.allocated = to;
    }

    /// Called with the bytes written so far (some may still sit in the writer's buffer).
    pub(super) fn advance(&mut self, written: u64) {
        self.written(written.saturating_sub(BUFFER as u64));
    }

    /// Preallocates `[0, len)` at once: for a writer that knows the file's size before
    /// it writes (an assembled safetensors or GGUF file).
    pub(super) fn preallocate(&mut self, len: u64) {
        if let Ok(len) = usize::try_from(len) {
            self.before(0, len);
        }
    }

    /// Called with the bytes surely in the file (out of every buffer of the writer's):
    /// starts their writeback a chunk at a time, and waits for those `BEHIND` back.
    pub(super) fn written(&mut self, flushed: u64) {
        if flushed < self.started + Self::CHUNK {
            return;
        }
        self.range(self.started, flushed, false);
        self.started = flushed;
        let old = flushed.saturating_sub(Self::BEHIND);
        if old >= self.waited + Self::CHUNK {
            self.range(self.waited, old, true);
            self.waited = old;
        }
    }

    /// Starts writeback of `[from, to)`, and with `wait`, waits until it is on disk.
    fn range(&self, from: u64, to: u64, wait: bool) {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let flags = if wait {
                libc::SYNC_FILE_RANGE_WAIT_BEFORE
                    | libc::SYNC_FILE_RANGE_WRITE
                    | libc::SYNC_FILE_RANGE_WAIT_AFTER
            } else {
                libc::SYNC_FILE_RANGE_WRITE
            };
            // SAFETY: a descriptor we own; sync_file_range only starts (and waits for)
            // I/O on its pages. A failure is harmless: the final sync writes everything.
            unsafe {
                libc::sync_file_range(
                    self.file.as_raw_fd(),
                    from as libc::off64_t,
                    (to - from) as libc::off64_t,
                    flags,
                );
            }
        }
        let _ = (from, to, wait);
    }
}

/// The writer's buffer in front of a file.
pub(super) const BUFFER: usize = 1 << 20;

/// Where a path writer puts its bytes until `finish`.
pub(super) struct Target {
    pub(super) temp: PathBuf,
    pub(super) path: PathBuf,
    /// fsync the file and its directory at `finish` (see `CreateOptions::durable`).
    pub(super) durable: bool,
    /// Renamed into place, or already removed: nothing to clean up.
    pub(super) done: bool,
}

impl Target {
    /// Removes the temporary file (once).
    pub(super) fn discard(&mut self) {
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
pub(super) fn temp_name(file_name: &std::ffi::OsStr) -> std::ffi::OsString {
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

impl Target {
    /// Names the finished temporary file (its bytes flushed): for a durable file, syncs
    /// it, renames it into place and syncs the directory, so that a crash afterwards
    /// leaves the whole new file; otherwise just renames it (still atomic).
    pub(super) fn commit(&mut self) -> Result<()> {
        if self.durable {
            let file = File::open(&self.temp)
                .map_err(|e| Error::io(format_args!("reopening {}", self.temp.display()), e))?;
            // The data and what finding it needs (the size, the blocks): a new file's
            // other metadata (times) need not be on disk before the rename.
            file.sync_data()
                .map_err(|e| Error::io(format_args!("syncing {}", self.temp.display()), e))?;
        }
        std::fs::rename(&self.temp, &self.path).map_err(|e| {
            Error::io(
                format_args!(
                    "renaming {} to {}",
                    self.temp.display(),
                    self.path.display()
                ),
                e,
            )
        })?;
        self.done = true;
        // The rename is durable once the directory is: "model.zt" lives in ".".
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        if self.durable
            && let Ok(d) = File::open(dir)
        {
            let _ = d.sync_all();
        }
        Ok(())
    }
}

pub(super) static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use std::io::BufWriter;
    use std::os::fd::AsRawFd;

    use super::*;

    /// A fresh path in a directory of its own under the system's temporary directory
    /// (the test removes the directory).
    fn scratch(name: &str) -> PathBuf {
        let dir = std::env::temp_dir().join(format!("zt-output-{}-{name}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        dir.join(name)
    }

    /// Pages of `f` dirty or under writeback (`cachestat`, Linux 6.5), or None where the
    /// kernel doesn't have it.
    fn unwritten_pages(f: &File) -> Option<u64> {
        #[repr(C)]
        struct Range {
            off: u64,
            len: u64,
        }
        #[repr(C)]
        #[derive(Default)]
        struct Stat {
            cache: u64,
            dirty: u64,
            writeback: u64,
            evicted: u64,
            recently_evicted: u64,
        }
        let range = Range { off: 0, len: 0 };
        let mut st = Stat::default();
        // SAFETY: cachestat (syscall 451 on every Linux architecture) reads the range and
        // writes the stat struct, both valid.
        let rc = unsafe {
            libc::syscall(
                451,
                f.as_raw_fd(),
                &range as *const Range,
                &mut st as *mut Stat,
                0,
            )
        };
        (rc == 0).then_some(st.dirty + st.writeback)
    }

    fn on_tmpfs(p: &Path) -> bool {
        // SAFETY: a zeroed statfs is valid for statfs to fill; the path is NUL-terminated.
        unsafe {
            let mut s: libc::statfs = std::mem::zeroed();
            let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
            libc::statfs(c.as_ptr(), &mut s) == 0 && s.f_type == libc::TMPFS_MAGIC
        }
    }

    /// An output as `Writer::create` makes for a durable file.
    fn durable_output(path: &Path) -> Output<BufWriter<File>> {
        let file = File::create(path).unwrap();
        let writeback = Some(Writeback::new(file.try_clone().unwrap()));
        Output {
            out: BufWriter::with_capacity(BUFFER, file),
            pos: 0,
            failed: None,
            label: "test".into(),
            writeback,
        }
    }

    #[test]
    fn a_durable_file_is_written_back_as_it_goes() {
        let path = scratch("writeback.bin");
        if on_tmpfs(path.parent().unwrap()) {
            eprintln!("skipped: the temporary directory is tmpfs (no writeback to see)");
            std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
            return;
        }
        let mut out = durable_output(&path);
        let piece: Vec<u8> = (0..1 << 20).map(|i| (i * 7 + 3) as u8).collect();
        let total = 256u64 << 20;
        for _ in 0..total >> 20 {
            out.emit(&piece).unwrap();
        }
        let wb = out.writeback.as_ref().unwrap();
        // Started for all but the buffer and a chunk; waited for all but BEHIND more.
        assert!(wb.started + (BUFFER as u64) + Writeback::CHUNK >= total);
        assert!(wb.waited + (BUFFER as u64) + Writeback::BEHIND + Writeback::CHUNK >= total);
        // What the kernel says: at most BEHIND + two chunks + the buffer not yet on disk
        // (without the early writeback, the whole 256 MiB would be dirty here: far below
        // the kernel's own writeback threshold on any machine with a few GiB).
        match unwritten_pages(&wb.file) {
            Some(pages) => {
                let bytes = pages * 4096;
                let most = Writeback::BEHIND + 2 * Writeback::CHUNK + BUFFER as u64;
                assert!(
                    bytes <= most,
                    "{bytes} bytes not yet on disk, more than {most}"
                );
            }
            None => eprintln!("cachestat unavailable: the kernel's count not checked"),
        }
        out.out.flush().unwrap();
        drop(out);
        let back = std::fs::read(&path).unwrap();
        assert_eq!(back.len() as u64, total);
        assert!(back.chunks(1 << 20).all(|c| c == &piece[..]));
        // Preallocation reserved only what was written.
        use std::os::unix::fs::MetadataExt;
        let blocks = std::fs::metadata(&path).unwrap().blocks() * 512;
        assert!(
            blocks <= total + (1 << 20),
            "{blocks} bytes allocated for {total}"
        );
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn large_writes_are_preallocated_to_exactly_their_end() {
        let path = scratch("prealloc.bin");
        let mut out = durable_output(&path);
        out.emit(&[1u8; 100]).unwrap();
        out.emit(&vec![2u8; Writeback::PREALLOCATE + 5]).unwrap();
        let wb = out.writeback.as_ref().unwrap();
        assert_eq!(wb.allocated, 100 + Writeback::PREALLOCATE as u64 + 5);
        // Small writes after it reserve nothing more.
        out.emit(&[3u8; 10]).unwrap();
        assert_eq!(
            out.writeback.as_ref().unwrap().allocated,
            100 + Writeback::PREALLOCATE as u64 + 5
        );
        out.out.flush().unwrap();
        let len = std::fs::metadata(&path).unwrap().len();
        assert_eq!(len, 100 + Writeback::PREALLOCATE as u64 + 15);
        std::fs::remove_dir_all(path.parent().unwrap()).unwrap();
    }

    #[test]
    fn refused_writeback_and_preallocation_change_nothing() {
        // A pipe refuses sync_file_range and fallocate (ESPIPE): the bytes still go out
        // whole and in order.
        let mut fds = [0; 2];
        // SAFETY: pipe fills two descriptors, which the Files below own.
        assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0);
        // SAFETY: fresh descriptors, each owned once.
        let (r, w) = unsafe {
            use std::os::fd::FromRawFd;
            (File::from_raw_fd(fds[0]), File::from_raw_fd(fds[1]))
        };
        drop(r);
        let mut out = Output {
            out: Vec::new(),
            pos: 0,
            failed: None,
            label: "test".into(),
            writeback: Some(Writeback::new(w)),
        };
        let piece: Vec<u8> = (0..5 << 20).map(|i| (i % 251) as u8).collect();
        for _ in 0..20 {
            out.emit(&piece).unwrap();
        }
        assert_eq!(out.pos, 100 << 20);
        assert!(out.out.chunks(5 << 20).all(|c| c == &piece[..]));
    }
}
