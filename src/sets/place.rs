//! Where a reader's files are opened.

use std::path::Path;

use crate::error::Result;
#[cfg(feature = "remote")]
use crate::error::bail;
#[cfg(feature = "remote")]
use crate::source::remote;
use crate::source::{Mapping, RemoteOptions, Source};

/// Where the files of a set are opened: local paths, or objects in the directory of a
/// remote one (one store, its options, its request limit and tally). A set's paths are
/// then URLs as shown (without credentials or query), joined as paths are.
#[derive(Clone, Default)]
pub(crate) enum Place {
    #[default]
    Local,
    #[cfg(feature = "remote")]
    Remote(std::sync::Arc<remote::Site>),
}

impl Place {
    /// Opens the file at `path`: a local file, or the object a URL in the place names.
    pub(crate) fn open(&self, path: &Path, mapping: Mapping) -> Result<Source<'static>> {
        match self {
            Place::Local => Source::open(path, mapping),
            #[cfg(feature = "remote")]
            Place::Remote(site) => {
                let Some(url) = path.to_str() else {
                    bail!(Internal, "a remote set's path is not text");
                };
                Ok(Source::from_remote(site.open(url)?))
            }
        }
    }

    /// Files worth opening at once when they wait on the network (a remote place's
    /// request concurrency); None for local files.
    pub(crate) fn parallel_opens(&self) -> Option<usize> {
        match self {
            Place::Local => None,
            #[cfg(feature = "remote")]
            Place::Remote(site) => Some(site.concurrency()),
        }
    }

    /// The place of the object at `url` (its directory, for a set), and its URL as shown
    /// (without user info or query). No request yet.
    pub(crate) fn of_url(url: &str, options: &RemoteOptions) -> Result<(Place, String)> {
        #[cfg(feature = "remote")]
        {
            let site = remote::Site::new(url, options)?;
            let shown = site.shown().to_owned();
            Ok((Place::Remote(site), shown))
        }
        #[cfg(not(feature = "remote"))]
        {
            Source::open_url(url, options)?;
            unreachable!("without remote support a URL doesn't open")
        }
    }

    /// Opens the file a reader was asked for: the local file at `path`, or the object
    /// a remote place was made for (`of_url`), by its whole URL (a presigned one keeps
    /// its query).
    pub(crate) fn open_named(&self, path: &Path, mapping: Mapping) -> Result<Source<'static>> {
        match self {
            Place::Local => Source::open(path, mapping),
            #[cfg(feature = "remote")]
            Place::Remote(site) => Ok(Source::from_remote(site.open_object()?)),
        }
    }
}
