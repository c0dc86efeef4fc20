//! The loader's pipeline core, compiled against loom's synchronisation primitives: see
//! `model.rs`.
#![allow(dead_code)]

/// What `core.rs` imports as `super::sync`: loom's versions.
pub mod sync {
    pub use loom::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
    pub use loom::sync::{Mutex, MutexGuard};
}

#[path = "../../../src/load/core.rs"]
pub mod core;

// The models (in the crate, since core.rs's items are crate-visible only).
#[cfg(test)]
mod model;
