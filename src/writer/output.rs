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

/// The kernel is asked to start writing a durable file's pages to disk as soon as a
/// chunk of them is surely out of the writer's buffer, so that writing and the disk's
/// work overlap and `finish`'s fsync waits only for the tail.
pub(super) struct Writeback {
    /// The temporary file (a second handle to it).
    pub(super) file: File,
    /// Bytes whose writeback has been started.
    pub(super) started: u64,
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
            file.sync_all()
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
