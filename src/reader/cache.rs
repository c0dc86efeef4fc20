//! The decoded copies and frame indexes a reader keeps per component.

use std::sync::{Arc, Mutex, OnceLock};

use crate::buffer::AlignedBuf;
use crate::codec::FrameIndex;
use crate::model::Object;

/// What the reader keeps per component: the decoded bytes of a view, and the frame index
/// of a zstd component; both built once, under `lock`.
pub(super) struct Cache {
    pub(super) cell: OnceLock<AlignedBuf>,
    pub(super) index: OnceLock<Arc<FrameIndex>>,
    pub(super) lock: Mutex<()>,
}

/// The memory the frame indexes one reader caches may take in total. An index is at most
/// 1 MiB (`FrameIndex`), and this library's frames need 16 bytes per 4 MiB, so only files
/// of very many small frames reach it; past it, each call that needs an index builds its
/// own and drops it after (reading the seek table or the frame headers again).
pub(super) const INDEX_CACHE_BUDGET: u64 = 64 << 20;

/// Objects per group of `Caches`.
const CACHE_GROUP: usize = 64;

/// The decoded copies views keep, one cell per component, made for a group of
/// `CACHE_GROUP` objects when one of them first needs one: a file of millions of objects
/// whose views are zero-copy pays a few bytes per group, not per component.
pub(super) struct Caches {
    groups: Box<[OnceLock<CacheGroup>]>,
}

/// Per object of a group, per component.
type CacheGroup = Box<[Box<[Cache]>]>;

impl Caches {
    pub(super) fn new(objects: usize) -> Caches {
        Caches {
            groups: (0..objects.div_ceil(CACHE_GROUP))
                .map(|_| OnceLock::new())
                .collect(),
        }
    }

    /// The cell of a component, if its group was made.
    pub(super) fn get(&self, object: usize, component: usize) -> Option<&Cache> {
        self.groups[object / CACHE_GROUP].get()?[object % CACHE_GROUP].get(component)
    }

    /// The cell of a component, making its group if needed.
    pub(super) fn cell(&self, objects: &[Object], object: usize, component: usize) -> &Cache {
        let first = object / CACHE_GROUP * CACHE_GROUP;
        let group = self.groups[object / CACHE_GROUP].get_or_init(|| {
            objects[first..objects.len().min(first + CACHE_GROUP)]
                .iter()
                .map(|o| {
                    (0..o.components.len())
                        .map(|_| Cache {
                            cell: OnceLock::new(),
                            index: OnceLock::new(),
                            lock: Mutex::new(()),
                        })
                        .collect()
                })
                .collect()
        });
        &group[object - first][component]
    }
}
