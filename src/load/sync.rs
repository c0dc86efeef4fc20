//! The synchronisation primitives `core.rs` uses: the standard library's here, loom's in
//! the model checker (`tests/loom/`, which compiles `core.rs` against its own `sync`).

pub(crate) use std::sync::Mutex;
pub(crate) use std::sync::MutexGuard;
pub(crate) use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
