//! The files a reader reads: one, or the shards of a set.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};

use crate::error::{Error, Result, bail};
#[cfg(feature = "remote")]
use crate::source::remote;
use crate::source::{Mapping, Source};

use super::Place;
use super::dir::Dir;

/// The files a reader reads: one, or the shards of a set, each held open from the set's
/// open (or, for a zTensor v2 shard, opened when one of its components is first read)
/// and mapped when first read (or at open, `Shards::open_all`). Blobs say which
/// file holds them (`Blob::file`), so offsets stay those of their own file.
pub(crate) enum Files<'a> {
    One(Source<'a>),
    Set(Box<Shards>),
}

/// The shards of a set.
pub(crate) struct Shards {
    files: Box<[Shard]>,
}

/// How a shard's bytes are reached before its first read.
pub(crate) enum Held {
    /// Open and ready to read (mapped, or read with `pread`).
    Open(Source<'static>),
    /// Open since the set's open (its header was read through this descriptor, with
    /// `pread`): mapped when first read, never opened by name again.
    File(std::fs::File),
    /// Opened when first read, beneath the set's directory (a zTensor v2 shard).
    Beneath(Arc<Dir>, Box<str>),
    /// Opened when first read, at a remote place.
    #[cfg_attr(not(feature = "remote"), allow(dead_code))]
    At(Place),
}

/// One shard: where it is, what it was when the set was opened, and its source once open.
pub(crate) struct Shard {
    /// As given to the reader (relative to the index's directory, or the split's path).
    pub(crate) name: Box<str>,
    path: PathBuf,
    /// `path` as shown in messages.
    shown: Box<str>,
    size: u64,
    mapping: Mapping,
    opened: OnceLock<Source<'static>>,
    /// What opens it on first read (None once open).
    pending: Mutex<Option<Held>>,
    /// Run on the shard once opened, before its first read: what its format requires of
    /// a file in its place (a zTensor v2 shard's magic and footer, §7.3).
    check: Option<fn(&Source<'static>) -> Result<()>>,
}

impl Shard {
    /// A shard at `path`, `size` bytes when the set was opened, reached through `held`.
    pub(crate) fn new(name: &str, path: PathBuf, size: u64, mapping: Mapping, held: Held) -> Shard {
        let opened = OnceLock::new();
        let pending = match held {
            Held::Open(source) => {
                let _ = opened.set(source);
                None
            }
            other => Some(other),
        };
        Shard {
            name: name.into(),
            shown: path.display().to_string().into(),
            path,
            size,
            mapping,
            opened,
            pending: Mutex::new(pending),
            check: None,
        }
    }

    /// The shard checked by `check` once opened, before anything is read from it.
    pub(crate) fn checked_by(mut self, check: fn(&Source<'static>) -> Result<()>) -> Shard {
        self.check = Some(check);
        self
    }

    /// Where the shard is.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// Its size when the set was opened.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The shard's bytes in this process: mapped (or opened) on first use, once, through
    /// the descriptor the set holds (or opened beneath the set's directory then), and
    /// checked to be the size it was when the set was opened.
    fn source(&self) -> Result<&Source<'static>> {
        if let Some(s) = self.opened.get() {
            return Ok(s);
        }
        let mut pending = self.pending.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(s) = self.opened.get() {
            return Ok(s);
        }
        let source = match pending.as_ref() {
            Some(Held::File(file)) => {
                // A second descriptor of the same open file: the one held stays should
                // the mapping fail, and is closed once the source has its own.
                let file = file
                    .try_clone()
                    .map_err(|e| Error::io(format_args!("shard {}", self.shown), e))?;
                Source::from_file(file, &self.shown, self.mapping)?
            }
            Some(Held::Beneath(dir, name)) => dir.open(name, self.mapping)?,
            Some(Held::At(place)) => place.open(&self.path, self.mapping)?,
            Some(Held::Open(_)) | None => {
                bail!(Internal, "shard {} has nothing to open it", self.name)
            }
        };
        if source.size() != self.size {
            bail!(
                Format,
                "shard {} is {} bytes now, not the {} the set records",
                self.name,
                source.size(),
                self.size
            );
        }
        if let Some(check) = self.check {
            check(&source)
                .map_err(|e| e.context(format_args!("shard {} ({})", self.name, self.shown)))?;
        }
        *pending = None;
        Ok(self.opened.get_or_init(|| source))
    }
}

impl Shards {
    pub(crate) fn new(files: Vec<Shard>) -> Shards {
        Shards {
            files: files.into_boxed_slice(),
        }
    }

    /// Opens every shard not open yet (the first failure is the error).
    pub(crate) fn open_all(&self) -> Result<()> {
        self.files.iter().try_for_each(|s| s.source().map(drop))
    }
}

impl<'a> Files<'a> {
    /// The source of file `file` (0 for a single file), opening a shard on first use.
    pub(crate) fn part(&self, file: u32) -> Result<&Source<'a>> {
        match self {
            Files::One(s) if file == 0 => Ok(s),
            Files::Set(set) => match set.files.get(file as usize) {
                Some(shard) => shard.source(),
                None => bail!(Internal, "no file {file} in a set of {}", set.files.len()),
            },
            Files::One(_) => bail!(Internal, "no file {file} in a reader of one file"),
        }
    }

    /// The source of file `file` if it is open (a single file always is: file 0).
    #[inline]
    pub(crate) fn opened(&self, file: u32) -> Option<&Source<'a>> {
        match self {
            // Only file 0: a zTensor v2 root read alone (from memory or a descriptor) has
            // blobs in shards it can't open, at offsets of those files.
            Files::One(s) => (file == 0).then_some(s),
            Files::Set(set) => set.files.get(file as usize)?.opened.get(),
        }
    }

    /// The path of shard `file` of a set, for messages; None for a single file.
    pub(crate) fn path(&self, file: u32) -> Option<&str> {
        match self {
            Files::One(_) => None,
            Files::Set(set) => set.files.get(file as usize).map(|s| &*s.shown),
        }
    }

    /// A remote object the reader reads (the single file, or an open shard): every one
    /// of a reader's objects shares its site, so its tally and request limit.
    #[cfg(feature = "remote")]
    pub(crate) fn remote(&self) -> Option<&remote::Remote> {
        match self {
            Files::One(s) => s.remote(),
            Files::Set(set) => set.files.iter().find_map(|s| s.opened.get()?.remote()),
        }
    }

    /// Reads that may usefully run at once: a remote reader's request concurrency.
    pub(crate) fn parallel_reads(&self) -> Option<usize> {
        match self {
            Files::One(s) => s.parallel_reads(),
            Files::Set(set) => set
                .files
                .iter()
                .find_map(|s| s.opened.get()?.parallel_reads()),
        }
    }

    /// The single file's source; None for a set.
    pub(crate) fn single(&self) -> Option<&Source<'a>> {
        match self {
            Files::One(s) => Some(s),
            Files::Set(_) => None,
        }
    }

    /// The shards of a set; empty for a single file.
    pub(crate) fn shards(&self) -> &[Shard] {
        match self {
            Files::One(_) => &[],
            Files::Set(set) => &set.files,
        }
    }
}
