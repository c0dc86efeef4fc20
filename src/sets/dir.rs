//! The directories a set's local files are opened beneath, and the one rule they are
//! opened by (docs/reliability.md, "The files a set opens"):
//!
//! - every file a set names (an index's shards, the other splits of a GGUF split set, a
//!   zTensor v2 root's shards, an ONNX model's external data) is opened by its name
//!   relative to the directory of the file the caller opened, through a descriptor of
//!   that directory held since the open, and must resolve beneath it: a name that is
//!   absolute or climbs out with `..`, an absolute symbolic link, and a relative one that
//!   leads out of the directory are refused (`Format`). Links that stay inside (one file
//!   of the model linked to another beside it, a subdirectory) are followed;
//! - or, where the file the caller opened is itself a link into another directory (its
//!   real directory: `blobs/` of a Hugging Face cache, whose `snapshots/<rev>/` holds
//!   only links into `../../blobs/`), the name may be a link that resolves beneath that
//!   real directory. It is held open too, from the open, checked to hold the opened file
//!   (the same device and inode, not through a link), and the file is opened beneath it
//!   (`Dir::open_real`). Links into any third directory stay refused: a set reaches only
//!   the places the file the caller chose to open lives in;
//! - the file is opened once, checked to be a regular file, and read only through that
//!   descriptor from then on (never opened by its name again): swapping a name for a
//!   link after the open changes nothing a reader reads.
//!
//! `openat2` with `RESOLVE_BENEATH` resolves a name so in one call where the kernel has
//! it (Linux 5.6); elsewhere, or where a sandbox refuses the call, `walk_beneath` does the
//! same one component at a time, each opened with `O_NOFOLLOW` relative to the directory
//! opened before it, every link's target resolved by hand from there, and `..` taken back
//! from the directories it opened (never the file system's `..`), so a directory renamed
//! while a name is resolved can't lead it out either.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result, bail, err};
use crate::source::{Mapping, Source, clear_nonblocking};

/// A directory held open: the files of a set are opened beneath it (or beneath `real`).
pub(crate) struct Dir {
    fd: OwnedFd,
    /// The directory as the caller's path names it ("." for a bare file name): where its
    /// files are said to be in messages and shard paths.
    path: PathBuf,
    /// Where the file opened really is, when the caller's path to it ends in a link into
    /// another directory; None when the directory holds the file itself (or where it
    /// really is could not be made sure of: then only `fd` serves).
    real: Option<Real>,
}

/// The real directory of the file a caller opened through a link: a second directory a
/// set's files may be opened beneath (reached by links from `Dir::path`).
struct Real {
    fd: OwnedFd,
    /// Its canonical path (absolute, no links), as found when the set was opened.
    path: PathBuf,
}

/// Why a name was not opened beneath a directory.
#[derive(Debug)]
pub(crate) enum Refused {
    /// It leads out of the directory (`..` past it, an absolute name or link).
    Outside,
    /// The system refused (no such file, permission, a loop of links ...).
    Io(io::Error),
}

impl Dir {
    /// The directory of the file at `file` (the caller's path), held open. `opened` is
    /// that file, open already: the directory must hold it under its name (the same
    /// device and inode), so that a directory renamed or replaced between the two opens
    /// is an error rather than another directory's files. Where that name is a link (the
    /// file itself is elsewhere), the directory the file really is in is held too
    /// (`Real::of`).
    pub(crate) fn of(file: &Path, opened: &Source<'_>) -> Result<Dir> {
        let parent = file.parent().unwrap_or(Path::new(""));
        let path = if parent.as_os_str().is_empty() {
            PathBuf::from(".")
        } else {
            parent.to_path_buf()
        };
        let Some(name) = file.file_name() else {
            bail!(Io, "{} names no file", file.display());
        };
        let fd = open_dir(&path)
            .map_err(|e| Error::io(format_args!("opening the directory {}", path.display()), e))?;
        let checking = |e| {
            Error::io(
                format_args!("checking {} in its directory", file.display()),
                e,
            )
        };
        let Some(held) = opened.fd() else {
            bail!(Internal, "a set's directory for a file with no descriptor");
        };
        let id = stat_fd(held).map_err(checking)?;
        // The name itself (a hard link counts): the directory holds the file.
        if stat_at(fd.as_fd(), name.as_bytes(), libc::AT_SYMLINK_NOFOLLOW).map_err(checking)? == id
        {
            let real = None;
            return Ok(Dir { fd, path, real });
        }
        if stat_at(fd.as_fd(), name.as_bytes(), 0).map_err(checking)? != id {
            bail!(
                Io,
                "{} is no longer the file opened as {}: its directory changed while it \
                 was opened",
                file.display(),
                file.display()
            );
        }
        // A link: the file is somewhere else too.
        let real = Real::of(file, id, stat_fd(fd.as_raw_fd()).map_err(checking)?);
        Ok(Dir { fd, path, real })
    }

    /// Where `name` (relative to the directory) is, as a path for messages.
    pub(crate) fn shown(&self, name: &str) -> PathBuf {
        self.path.join(name)
    }

    /// Opens the regular file `name` (relative to this directory) beneath it, or beneath
    /// the real directory of the file opened (`open_real`): `Format` when it leads out of
    /// both, `Io` when the system refuses or it is not a regular file. Mapped as `mapping`
    /// says.
    pub(crate) fn open(&self, name: &str, mapping: Mapping) -> Result<Source<'static>> {
        let shown = self.shown(name);
        let fd = match open_beneath(self.fd.as_fd(), name) {
            Ok(fd) => fd,
            Err(Refused::Outside) => match self.open_real(name, &shown)? {
                Some(fd) => fd,
                None => return Err(self.outside(&shown)),
            },
            Err(Refused::Io(e)) => {
                return Err(Error::io(format_args!("opening {}", shown.display()), e));
            }
        };
        let file = File::from(fd);
        clear_nonblocking(&file);
        Source::from_file(file, &shown.display().to_string(), mapping)
    }

    /// `name`, which leads out of this directory, opened beneath the real directory of
    /// the file opened: None when there is none, when `name` itself climbs out (only a
    /// link may lead there), or when it doesn't resolve beneath it. Where the name leads
    /// is found by its path (`realpath`: links followed, nothing opened), then the file
    /// is opened by that path relative to the real directory's descriptor, beneath it,
    /// and checked to be the file the name leads to (the same device and inode), so that
    /// a name changed in between is an error, and what is opened lies beneath the real
    /// directory whatever the path said.
    fn open_real(&self, name: &str, shown: &Path) -> Result<Option<OwnedFd>> {
        let Some(real) = &self.real else {
            return Ok(None);
        };
        if name.starts_with('/') || name.split('/').any(|p| p == "..") {
            return Ok(None);
        }
        let io = |e: io::Error| Error::io(format_args!("opening {}", shown.display()), e);
        // A link to nothing (a download not finished) is the system's refusal, as
        // beneath the directory.
        let target = std::fs::canonicalize(self.path.join(name)).map_err(io)?;
        let Ok(inside) = target.strip_prefix(&real.path) else {
            return Ok(None);
        };
        if inside.as_os_str().is_empty() {
            return Err(io(io::Error::from_raw_os_error(libc::EISDIR)));
        }
        let Some(inside) = inside.to_str() else {
            return Err(io(io::Error::new(
                io::ErrorKind::InvalidData,
                "it leads to a name that is not UTF-8",
            )));
        };
        let fd = match open_beneath(real.fd.as_fd(), inside) {
            Ok(fd) => fd,
            Err(Refused::Outside) => return Ok(None),
            Err(Refused::Io(e)) => return Err(io(e)),
        };
        let opened = stat_fd(fd.as_raw_fd()).map_err(io)?;
        if stat_at(self.fd.as_fd(), name.as_bytes(), 0).map_err(io)? != opened {
            bail!(
                Io,
                "{} changed while it was opened (it no longer leads to {})",
                shown.display(),
                real.path.join(inside).display()
            );
        }
        Ok(Some(fd))
    }

    /// The refusal of `shown`, which leads out of every directory a set may use.
    fn outside(&self, shown: &Path) -> Error {
        match &self.real {
            None => err!(
                Format,
                "{} leads outside the directory {}: a set's files must lie beneath the \
                 directory of the file opened (an absolute name or link, or one that climbs \
                 out with '..', is refused)",
                shown.display(),
                self.path.display()
            ),
            Some(real) => err!(
                Format,
                "{} leads outside the directory {}, and outside {}, where the file opened \
                 really is: a set's files must lie beneath the directory of the file opened, \
                 or be links to files beneath its real directory (a name that climbs out \
                 with '..', or a link to any other directory, is refused)",
                shown.display(),
                self.path.display(),
                real.path.display()
            ),
        }
    }
}

impl Real {
    /// The real directory of the file at `file` (the caller's path, which leads to it
    /// through a link), whose device and inode are `id`: the directory its canonical path
    /// names, held open and checked to hold it under its own name (not through a link).
    /// None where it can't be made sure of (the file moved or gone since it was opened,
    /// a path the system can't resolve), or where it is the directory `dir` (the one of
    /// the caller's path) after all.
    fn of(file: &Path, id: FileId, dir: FileId) -> Option<Real> {
        let canonical = std::fs::canonicalize(file).ok()?;
        let (path, name) = (canonical.parent()?, canonical.file_name()?);
        let fd = open_dir(path).ok()?;
        if stat_at(fd.as_fd(), name.as_bytes(), libc::AT_SYMLINK_NOFOLLOW).ok()? != id {
            return None;
        }
        if stat_fd(fd.as_raw_fd()).ok()? == dir {
            return None;
        }
        let path = path.to_path_buf();
        Some(Real { fd, path })
    }
}

/// A directory opened to resolve names from.
fn open_dir(path: &Path) -> io::Result<OwnedFd> {
    Ok(std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(DIR_FLAGS)
        .open(path)?
        .into())
}

/// `open` flags of a directory a name is resolved through: a handle to resolve from,
/// which needs only search permission.
#[cfg(target_os = "linux")]
const DIR_FLAGS: libc::c_int = libc::O_PATH | libc::O_DIRECTORY | libc::O_CLOEXEC;
#[cfg(not(target_os = "linux"))]
const DIR_FLAGS: libc::c_int = libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC;

/// `open` flags of the file itself: read-only, never blocking (a FIFO in a file's place
/// would block the open forever; the caller refuses what is not a regular file).
const FILE_FLAGS: libc::c_int =
    libc::O_RDONLY | libc::O_CLOEXEC | libc::O_NONBLOCK | libc::O_NOCTTY;

/// Symbolic links followed in one name at most (the kernel's own limit).
const MAX_LINKS: usize = 40;

/// Opens `name` beneath the directory `root`: `openat2` with `RESOLVE_BENEATH` where the
/// kernel has it, else `walk_beneath`.
pub(crate) fn open_beneath(
    root: BorrowedFd<'_>,
    name: &str,
) -> std::result::Result<OwnedFd, Refused> {
    if name.starts_with('/') {
        return Err(Refused::Outside);
    }
    let Ok(c_name) = CString::new(name) else {
        return Err(Refused::Io(io::Error::from(io::ErrorKind::InvalidInput)));
    };
    #[cfg(target_os = "linux")]
    if let Some(opened) = openat2_beneath(root, &c_name) {
        return opened;
    }
    let _ = c_name;
    walk_beneath(root, name)
}

/// `openat2(root, name, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`; None where the call
/// is missing or refused as such (a kernel before 5.6, a sandbox that filters it; then
/// never tried again), or kept racing renames: the caller walks instead.
#[cfg(target_os = "linux")]
fn openat2_beneath(
    root: BorrowedFd<'_>,
    name: &std::ffi::CStr,
) -> Option<std::result::Result<OwnedFd, Refused>> {
    use std::sync::atomic::{AtomicBool, Ordering};
    static UNAVAILABLE: AtomicBool = AtomicBool::new(false);
    if UNAVAILABLE.load(Ordering::Relaxed) {
        return None;
    }
    /// The kernel's `struct open_how` (libc's is not constructible outside it).
    #[repr(C)]
    struct OpenHow {
        flags: u64,
        mode: u64,
        resolve: u64,
    }
    let how = OpenHow {
        flags: FILE_FLAGS as u64,
        mode: 0,
        resolve: libc::RESOLVE_BENEATH | libc::RESOLVE_NO_MAGICLINKS,
    };
    for _ in 0..8 {
        // SAFETY: a NUL-terminated name and an `open_how` of the size passed, both live
        // for the call; the result is a new descriptor we own, or -1.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                root.as_raw_fd(),
                name.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        if fd >= 0 {
            // SAFETY: a descriptor the kernel just gave us, owned by nothing else.
            return Some(Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) }));
        }
        let e = io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EXDEV) => return Some(Err(Refused::Outside)),
            // A rename anywhere on the system while `..` was resolved (the kernel can't
            // tell it stayed beneath), or a signal: again.
            Some(libc::EAGAIN | libc::EINTR) => continue,
            Some(libc::ENOSYS | libc::EPERM | libc::EINVAL | libc::E2BIG) => {
                UNAVAILABLE.store(true, Ordering::Relaxed);
                return None;
            }
            _ => return Some(Err(Refused::Io(e))),
        }
    }
    None
}

/// Opens `name` beneath `root` one component at a time (`open_beneath` without
/// `openat2`): each directory opened with `O_NOFOLLOW` relative to the one before, a link
/// met on the way read (`readlinkat`) and its target resolved from where it is, `..`
/// taken back from the directories opened here; an absolute link, or `..` above `root`,
/// is `Outside`. The last component is opened with `O_NOFOLLOW` too, so what is opened
/// is what was resolved.
pub(crate) fn walk_beneath(
    root: BorrowedFd<'_>,
    name: &str,
) -> std::result::Result<OwnedFd, Refused> {
    fn parts(path: &[u8]) -> impl DoubleEndedIterator<Item = Vec<u8>> + '_ {
        path.split(|&b| b == b'/')
            .filter(|p| !p.is_empty() && *p != b".")
            .map(<[u8]>::to_vec)
    }
    if name.starts_with('/') {
        return Err(Refused::Outside);
    }
    let os = |errno: i32| Refused::Io(io::Error::from_raw_os_error(errno));
    if name.ends_with('/') {
        // A directory's name ("sub/"), as openat2 takes it: not a file.
        return Err(os(libc::ENOTDIR));
    }
    // The directories opened below `root`, the last the one names are resolved in.
    let mut dirs: Vec<OwnedFd> = Vec::new();
    // What is left to resolve, the next component last.
    let mut todo: Vec<Vec<u8>> = parts(name.as_bytes()).rev().collect();
    let mut links = 0;
    loop {
        let Some(part) = todo.pop() else {
            // The name ends at a directory ("", "sub/..").
            return Err(os(libc::EISDIR));
        };
        if part == b".." {
            if dirs.pop().is_none() {
                return Err(Refused::Outside);
            }
            continue;
        }
        let at = dirs.last().map_or(root, |d| d.as_fd());
        let last = todo.is_empty();
        let flags = libc::O_NOFOLLOW | if last { FILE_FLAGS } else { DIR_FLAGS };
        let c_part = CString::new(part).map_err(|_| os(libc::EINVAL))?;
        // SAFETY: a NUL-terminated name; the result is a new descriptor we own, or -1.
        let fd = unsafe { libc::openat(at.as_raw_fd(), c_part.as_ptr(), flags) };
        if fd >= 0 {
            // SAFETY: a descriptor the kernel just gave us, owned by nothing else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            if last {
                return Ok(fd);
            }
            dirs.push(fd);
            continue;
        }
        let refused = io::Error::last_os_error();
        // O_NOFOLLOW refuses a link (ELOOP for the last component, ENOTDIR for one that
        // must be a directory): read it, and resolve its target from here.
        let Some(target) = read_link(at, &c_part) else {
            return Err(Refused::Io(refused));
        };
        links += 1;
        if links > MAX_LINKS {
            return Err(os(libc::ELOOP));
        }
        if target.first() == Some(&b'/') {
            return Err(Refused::Outside);
        }
        if target.is_empty() {
            return Err(os(libc::ENOENT));
        }
        // A link to "." adds nothing: the name then ends at a directory (EISDIR above).
        todo.extend(parts(&target).rev());
    }
}

/// The target of the link `name` in `at`; None when it is not a link (or is gone).
fn read_link(at: BorrowedFd<'_>, name: &std::ffi::CStr) -> Option<Vec<u8>> {
    let mut buf = vec![0u8; libc::PATH_MAX as usize];
    // SAFETY: the buffer is as long as passed; readlinkat writes at most that much.
    let n = unsafe {
        libc::readlinkat(
            at.as_raw_fd(),
            name.as_ptr(),
            buf.as_mut_ptr().cast(),
            buf.len(),
        )
    };
    let n = usize::try_from(n).ok()?;
    buf.truncate(n);
    Some(buf)
}

/// A file's device and inode: what it is, whatever its names.
type FileId = (libc::dev_t, libc::ino_t);

/// The device and inode of `name` in `dir`: links followed, or the link itself with
/// `AT_SYMLINK_NOFOLLOW` in `flags`.
fn stat_at(dir: BorrowedFd<'_>, name: &[u8], flags: libc::c_int) -> io::Result<FileId> {
    let c_name = CString::new(name).map_err(|_| io::Error::from(io::ErrorKind::InvalidInput))?;
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: a NUL-terminated name and room for one `stat`.
    let rc = unsafe { libc::fstatat(dir.as_raw_fd(), c_name.as_ptr(), st.as_mut_ptr(), flags) };
    if rc != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstatat filled it.
    let st = unsafe { st.assume_init() };
    Ok((st.st_dev, st.st_ino))
}

/// The device and inode of the open file (or directory) `fd`.
fn stat_fd(fd: libc::c_int) -> io::Result<FileId> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: room for one `stat`; an invalid descriptor is an error, not UB.
    if unsafe { libc::fstat(fd, st.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fstat filled it.
    let st = unsafe { st.assume_init() };
    Ok((st.st_dev, st.st_ino))
}
