//! Attributes as their CBOR bytes, decoded only on request.

use std::ptr::NonNull;

use crate::error::{Result, bail};
use crate::value::cbor::Value;
use crate::value::typed::{Doc, TypedValue};

use super::{CBytes, TextArena};

/// Attributes as their CBOR bytes (a map), validated when the file was opened and decoded
/// only on request, so that opening never builds trees of metadata nobody asked for.
/// Either their own allocation, or an entry in a block shared with other objects'
/// attributes (`Attributes::in_arena`: a file of many small objects pays no allocation
/// per object's attributes). One pointer either way, told apart by its lowest bit (a
/// box of `AttrBytes` is 8-aligned, an entry's bytes 2-aligned; the bit is set for a box).
pub struct Attributes(NonNull<u8>);

// SAFETY: both forms are immutable once made and shared as Arc and Box are.
unsafe impl Send for Attributes {}
// SAFETY: as above.
unsafe impl Sync for Attributes {}

#[derive(Clone, PartialEq)]
pub(super) struct AttrBytes {
    cbor: Box<[u8]>,
    /// The widths of the top-level values, for formats that have them (GGUF): the
    /// stream `typed::Doc::build` reads.
    widths: Option<Box<[u8]>>,
    /// A width record by key (`typed::Desc`, its CBOR), as a zTensor manifest keeps one
    /// under `attribute_types`.
    record: Option<Box<[u8]>>,
}

/// The two forms, borrowed.
pub(super) enum AttrRef<'a> {
    Own(&'a AttrBytes),
    Shared(&'a [u8]),
}

impl Attributes {
    /// The form `self` holds.
    pub(super) fn form(&self) -> AttrRef<'_> {
        let p = self.0.as_ptr();
        if p.addr() & 1 == 1 {
            // SAFETY: a set bit marks a pointer from `Box::into_raw` (plus one) that
            // `self` owns.
            AttrRef::Own(unsafe { &*p.wrapping_sub(1).cast::<AttrBytes>() })
        } else {
            // SAFETY: else it is a `CBytes` that `self` holds a reference to; the bytes
            // live as long as that reference. Read without taking it over.
            let shared = std::mem::ManuallyDrop::new(unsafe { CBytes::from_raw(self.0) });
            let bytes = shared.as_bytes();
            // SAFETY: as above: the bytes outlive the borrow of `self`.
            AttrRef::Shared(unsafe { std::slice::from_raw_parts(bytes.as_ptr(), bytes.len()) })
        }
    }
}

impl Clone for Attributes {
    fn clone(&self) -> Attributes {
        match self.form() {
            AttrRef::Own(own) => Attributes::boxed(own.clone()),
            AttrRef::Shared(_) => {
                // SAFETY: a `CBytes` that `self` holds; cloned, then both kept as raw.
                let shared = std::mem::ManuallyDrop::new(unsafe { CBytes::from_raw(self.0) });
                Attributes((*shared).clone().into_raw())
            }
        }
    }
}

impl Drop for Attributes {
    fn drop(&mut self) {
        let p = self.0.as_ptr();
        if p.addr() & 1 == 1 {
            // SAFETY: the box `self` owns (see `form`), dropped once.
            drop(unsafe { Box::from_raw(p.wrapping_sub(1).cast::<AttrBytes>()) });
        } else {
            // SAFETY: the reference `self` holds, given back once.
            drop(unsafe { CBytes::from_raw(self.0) });
        }
    }
}

impl PartialEq for Attributes {
    fn eq(&self, other: &Attributes) -> bool {
        self.as_cbor() == other.as_cbor()
            && self.widths() == other.widths()
            && self.record() == other.record()
    }
}

impl Attributes {
    fn boxed(bytes: AttrBytes) -> Attributes {
        let p = Box::into_raw(Box::new(bytes)).cast::<u8>();
        debug_assert_eq!(p.addr() & 1, 0);
        // SAFETY: a box's pointer is non-null; plus one (it is 8-aligned) is the tag.
        Attributes(unsafe { NonNull::new_unchecked(p.wrapping_add(1)) })
    }
    fn own(cbor: Box<[u8]>, widths: Option<Box<[u8]>>) -> Attributes {
        Attributes::boxed(AttrBytes {
            cbor,
            widths,
            record: None,
        })
    }
    /// CBOR bytes of a map and of its width record (`typed::Desc`).
    pub(crate) fn with_record(cbor: Vec<u8>, record: Option<Vec<u8>>) -> Attributes {
        Attributes::boxed(AttrBytes {
            cbor: cbor.into_boxed_slice(),
            widths: None,
            record: record.map(Vec::into_boxed_slice),
        })
    }
    /// The map of a typed value (`InvalidArgument` for another type), written as plain
    /// CBOR and the width record that gives its types back; the CBOR value too, for the
    /// writer's checks.
    pub(crate) fn from_typed(v: &TypedValue) -> Result<(Attributes, Value)> {
        if !matches!(v, TypedValue::Map(_)) {
            bail!(
                InvalidArgument,
                "attributes must be a map, not {}",
                v.value_type()
            );
        }
        let (value, desc) = v.encode();
        let record = desc.map(|d| crate::value::cbor::to_vec(&d.to_value()));
        Ok((
            Attributes::with_record(crate::value::cbor::to_vec(&value), record),
            value,
        ))
    }
    pub(crate) fn from_cbor(bytes: &[u8]) -> Attributes {
        Attributes::own(bytes.into(), None)
    }
    /// Keeps CBOR bytes already in a vector (no copy when its capacity fits).
    pub(crate) fn from_vec(bytes: Vec<u8>) -> Attributes {
        Attributes::own(bytes.into_boxed_slice(), None)
    }
    /// `from_vec` with the widths of the top-level values.
    pub(crate) fn from_vec_with_widths(bytes: Vec<u8>, widths: Vec<u8>) -> Attributes {
        Attributes::own(bytes.into_boxed_slice(), Some(widths.into_boxed_slice()))
    }
    /// Copies CBOR bytes into `arena` when they are short enough to share a block, else
    /// into an allocation of their own.
    pub(crate) fn in_arena(arena: &mut TextArena, bytes: &[u8]) -> Attributes {
        match arena.bytes(bytes) {
            Some(shared) => Attributes(shared.into_raw()),
            None => Attributes::from_cbor(bytes),
        }
    }
    /// Encodes a value (the writer checks it is a map).
    pub(crate) fn from_value(v: &Value) -> Attributes {
        Attributes::from_cbor(&crate::value::cbor::to_vec(v))
    }
    /// The CBOR encoding of the attribute map.
    pub fn as_cbor(&self) -> &[u8] {
        match self.form() {
            AttrRef::Own(own) => &own.cbor,
            AttrRef::Shared(bytes) => bytes,
        }
    }
    /// The widths stream of the top-level values, when the format has widths.
    pub(crate) fn widths(&self) -> Option<&[u8]> {
        match self.form() {
            AttrRef::Own(own) => own.widths.as_deref(),
            AttrRef::Shared(_) => None,
        }
    }
    /// The width record by key (its CBOR), when there is one.
    pub(crate) fn record(&self) -> Option<&[u8]> {
        match self.form() {
            AttrRef::Own(own) => own.record.as_deref(),
            AttrRef::Shared(_) => None,
        }
    }
    /// These attributes with a width record (a manifest's `attribute_types`).
    pub(crate) fn and_record(self, record: &[u8]) -> Attributes {
        Attributes::with_record(self.as_cbor().to_vec(), Some(record.to_vec()))
    }
    /// The typed tree of the map, with its widths or record.
    pub(crate) fn doc(&self) -> Result<Doc> {
        let depth = crate::limits::MAX_CBOR_DEPTH;
        match self.record() {
            Some(record) => Doc::build_with_record_bytes(self.as_cbor(), record, depth),
            None => Doc::build(self.as_cbor(), self.widths(), depth),
        }
    }
    /// The map as a typed value, types as a typed read gives them.
    pub(crate) fn typed_value(&self) -> Result<TypedValue> {
        TypedValue::from_attr(self.doc()?.root())
    }
    /// Decodes the attribute map (allocates the tree).
    pub fn value(&self) -> Value {
        crate::value::cbor::decode(self.as_cbor(), crate::limits::MAX_CBOR_DEPTH)
            .expect("validated when the file was opened")
    }
    /// The attribute map as compact JSON (the mapping of `json::write_json`), rendered
    /// straight from the CBOR bytes without building a tree: memory is the output's.
    pub fn to_json(&self) -> Result<String> {
        crate::value::json::cbor_to_json(self.as_cbor())
            .map_err(|e| crate::error::err!(Format, "attributes: {e}"))
    }
}

impl std::fmt::Debug for Attributes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.value(), f)
    }
}
