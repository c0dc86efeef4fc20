//! The C ABI's handles: each opaque type declares how its caller holds it (`Handle`), and
//! the few functions here are the only places a handle pointer becomes a reference, is
//! given out, or is freed. Also the reader handle itself (`zt_reader`), which every part
//! of the ABI reads.
//!
//! Two ways of being owned: `Boxed` (made here, the caller's until its `zt_*_free` or
//! `zt_close`: the reader, writer, loader and CUDA backend) and `Lent` (a node of a tree
//! someone else keeps: a reader's attribute values, valid until `zt_close`, and the values
//! `zt_value_create_*` makes, kept in `values.rs`'s registry until `zt_value_free`).

use std::collections::HashMap;
use std::ffi::CString;
use std::sync::{Mutex, OnceLock};

use super::guard_value;
use crate::error::{Error, Result, err};
use crate::reader::Reader;

/// How the caller of the C ABI holds a handle.
pub(crate) trait Ownership {}

/// Made here as a `Box` (`give`), freed once by the matching free function (`free`).
pub(crate) enum Boxed {}

/// Lent by an owner that outlives the handle's use; never freed through the handle.
pub(crate) enum Lent {}

impl Ownership for Boxed {}
impl Ownership for Lent {}

/// An opaque type of the C ABI.
pub(crate) trait Handle {
    /// Its name in the error for a NULL handle ("reader is NULL").
    const NAME: &'static str;
    /// How the caller holds it.
    type Owned: Ownership;
    /// What a pointer to it points to (the handle itself when it is `Boxed`).
    type Target;
}

/// The value behind a handle argument; `InvalidArgument` "<name> is NULL" for NULL.
pub(crate) fn get<'h, H: Handle>(handle: *const H) -> Result<&'h H::Target> {
    // SAFETY: NULL or a live handle of this type, per the contract of every function
    // taking one; a handle's pointer points to its `Target` (`give` makes `Boxed` ones,
    // whose target is themselves; `Lent` ones point to the value lent).
    unsafe { handle.cast::<H::Target>().as_ref() }
        .ok_or_else(|| err!(InvalidArgument, "{} is NULL", H::NAME))
}

/// `get` for a handle its caller lets this call change (a writer).
pub(crate) fn get_mut<'h, H: Handle<Owned = Boxed, Target = H>>(
    handle: *mut H,
) -> Result<&'h mut H> {
    // SAFETY: NULL or a live handle used by one thread at a time, per the contract of the
    // functions taking a mutable one.
    unsafe { handle.as_mut() }.ok_or_else(|| err!(InvalidArgument, "{} is NULL", H::NAME))
}

/// Makes `value` a handle for the caller (written to its out-pointer with `put`).
pub(crate) fn give<H: Handle<Owned = Boxed, Target = H>>(value: H) -> *mut H {
    Box::into_raw(Box::new(value))
}

/// Frees a handle `give` made, inside the panic boundary; NULL is a no-op.
///
/// # Safety
/// `handle` is NULL or a live handle made by `give`, freed once, not in use.
pub(crate) unsafe fn free<H: Handle<Owned = Boxed, Target = H>>(handle: *mut H) {
    guard_value((), || {
        if !handle.is_null() {
            // SAFETY: per the function's contract.
            drop(unsafe { Box::from_raw(handle) });
        }
    })
}

/// An open file. Opaque; immutable after `zt_open`, so every function taking a
/// `const zt_reader *` may be called from many threads at once.
pub struct zt_reader {
    pub(super) reader: Reader<'static>,
    /// Attribute JSON rendered on first request, by object index (the file's after the
    /// objects'): kept until `zt_close`, and only for what was asked.
    pub(super) json: Mutex<HashMap<usize, CString>>,
    /// The path of each file the reader reads (`zt_shard_get_path`); None when unknown.
    pub(super) paths: Box<[Option<CString>]>,
    /// Every name in one block (`zt_file_get_names`, `listing.rs`), made on first request.
    pub(super) names: OnceLock<Box<[u8]>>,
    /// Content digests computed on first request, by `zt_digest` value
    /// (`zt_file_get_content_digest`).
    pub(super) content_digests: Mutex<Vec<(u32, CString)>>,
    /// The descriptor `zt_open_fd_with` was handed with `ZT_OPEN_TAKE_FD`: closed at
    /// `zt_close` (dropped after the reader, which reads its own duplicate).
    pub(super) _taken_fd: Option<std::os::fd::OwnedFd>,
}

impl Handle for zt_reader {
    const NAME: &'static str = "reader";
    type Owned = Boxed;
    type Target = zt_reader;
}

impl zt_reader {
    /// Prefixes "<path>: " to a message made here about this file, as the reader does
    /// for its own; unchanged for a file opened from memory.
    pub(super) fn in_file(&self, e: Error) -> Error {
        match self.reader.origin() {
            Some(path) => e.context(path),
            None => e,
        }
    }

    /// The Rust reader behind the handle.
    pub(crate) fn inner(&self) -> &Reader<'static> {
        &self.reader
    }
}

/// A reader handle argument.
pub(super) fn reader<'r>(reader: *const zt_reader) -> Result<&'r zt_reader> {
    get(reader)
}
