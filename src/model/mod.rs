//! The in-memory model of a file (objects and components) that every input format is
//! parsed into: names, shapes, components, where each component's bytes are and how they
//! decode (`decode::Step`), what the file's format guarantees (`Traits`), and a name
//! index. `schema` holds the rules of each object kind; `validate` the structural checks
//! every model passes before a reader exists.

use crate::cbor::Value;
use crate::codec::digest;
use crate::dtype::DType;
use crate::error::{Result, bail};
use crate::typed::{Doc, TypedValue};
use std::ptr::NonNull;

pub mod schema;
mod steps;
mod text;
mod validate;

pub(crate) use steps::{FormatStep, Step, Steps, check_steps};
pub use text::CText;
pub(crate) use text::{CBytes, TextArena};

pub(crate) use validate::{check_name, check_name_text, validate};

/// How stored bytes are encoded. Values are the C ABI's `zt_encoding`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u32)]
pub enum Encoding {
    /// Stored as is.
    Raw = 0,
    /// One or more concatenated zstd frames.
    Zstd = 1,
    /// A format-specific decoding pipeline of a file read through another format (e.g.
    /// Tensogram's packing, shuffle and compression stages). Read only: never written.
    Pipeline = 2,
}

impl Encoding {
    /// The manifest spelling.
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Raw => "raw",
            Encoding::Zstd => "zstd",
            Encoding::Pipeline => "pipeline",
        }
    }
    /// From the C enum value of an encoding the writer produces (raw or zstd),
    /// range-checked.
    pub fn from_u32(v: u32) -> Option<Encoding> {
        match v {
            0 => Some(Encoding::Raw),
            1 => Some(Encoding::Zstd),
            _ => None,
        }
    }
}

/// A contiguous stored region of the file and how it is encoded.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blob {
    /// Which file of a set holds it (0 for a single file).
    pub file: u32,
    /// Absolute offset in that file.
    pub offset: u64,
    /// Stored bytes.
    pub length: u64,
    /// How the stored bytes are encoded.
    pub encoding: Encoding,
    /// Bytes after decoding.
    pub decoded_length: u64,
}

/// One component of an object: a role, a type, and where its bytes are.
#[derive(Clone, Debug)]
pub struct Component {
    pub(crate) role: CText,
    pub(crate) dtype: DType,
    pub(crate) logical_type: Option<CText>,
    pub(crate) blob: Blob,
    pub(crate) decoded_length: u64,
    pub(crate) digest: Option<CText>,
    /// Steps from the decoded blob to the component's bytes; empty for zTensor v1.
    pub(crate) steps: Steps,
}

impl Component {
    /// A component stored as is: `length` raw bytes at file offset `offset`.
    pub(crate) fn raw(
        role: CText,
        dtype: DType,
        logical_type: Option<CText>,
        offset: u64,
        length: u64,
    ) -> Component {
        Component {
            role,
            dtype,
            logical_type,
            blob: Blob {
                file: 0,
                offset,
                length,
                encoding: Encoding::Raw,
                decoded_length: length,
            },
            decoded_length: length,
            digest: None,
            steps: Steps::default(),
        }
    }

    /// The role name ("data", "values", "indices" ...).
    pub fn role(&self) -> &str {
        self.role.as_str()
    }
    /// The storage dtype.
    pub fn dtype(&self) -> DType {
        self.dtype
    }
    /// The logical type, if the file gives one.
    pub fn logical_type(&self) -> Option<&str> {
        self.logical_type.as_ref().map(CText::as_str)
    }
    /// The stored encoding.
    pub fn encoding(&self) -> Encoding {
        self.blob.encoding
    }
    /// Which file of a set holds the stored bytes (`Reader::shard_path`); 0 for a single
    /// file.
    pub fn file(&self) -> u32 {
        self.blob.file
    }
    /// Absolute offset of the stored bytes in their file (`file`).
    pub fn offset(&self) -> u64 {
        self.blob.offset
    }
    /// Stored (possibly compressed) bytes.
    pub fn length(&self) -> u64 {
        self.blob.length
    }
    /// Bytes of this component after decoding.
    pub fn decoded_length(&self) -> u64 {
        self.decoded_length
    }
    /// The digest string as stored ("sha256:...", "crc32c:0x..."), if any.
    pub fn digest(&self) -> Option<&str> {
        self.digest.as_ref().map(CText::as_str)
    }
    /// Number of storage elements after decoding.
    pub fn element_count(&self) -> u64 {
        self.decoded_length / self.dtype.size() as u64
    }
    /// True when the stored bytes are the component's bytes (raw, little-endian, whole blob).
    pub fn is_plain(&self) -> bool {
        self.blob.encoding == Encoding::Raw && self.steps.is_empty()
    }
    /// The ggml blocks this component holds, when its bytes are blocks (`u8` storage and
    /// a ggml block logical type, see `quant::blocks_of`).
    pub(crate) fn blocks(&self) -> Option<crate::quant::Blocks> {
        crate::quant::blocks_of(self.dtype, self.logical_type())
    }
    pub(crate) fn role_c(&self) -> &CText {
        &self.role
    }
    pub(crate) fn logical_type_c(&self) -> Option<&CText> {
        self.logical_type.as_ref()
    }
    pub(crate) fn digest_c(&self) -> Option<&CText> {
        self.digest.as_ref()
    }
}

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
struct AttrBytes {
    cbor: Box<[u8]>,
    /// The widths of the top-level values, for formats that have them (GGUF): the
    /// stream `typed::Doc::build` reads.
    widths: Option<Box<[u8]>>,
    /// A width record by key (`typed::Desc`, its CBOR), as a zTensor manifest keeps one
    /// under `attribute_types`.
    record: Option<Box<[u8]>>,
}

/// The two forms, borrowed.
enum AttrRef<'a> {
    Own(&'a AttrBytes),
    Shared(&'a [u8]),
}

impl Attributes {
    /// The form `self` holds.
    fn form(&self) -> AttrRef<'_> {
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
        let record = desc.map(|d| crate::cbor::to_vec(&d.to_value()));
        Ok((
            Attributes::with_record(crate::cbor::to_vec(&value), record),
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
        Attributes::from_cbor(&crate::cbor::to_vec(v))
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
        crate::cbor::decode(self.as_cbor(), crate::limits::MAX_CBOR_DEPTH)
            .expect("validated when the file was opened")
    }
    /// The attribute map as compact JSON (the mapping of `json::write_json`), rendered
    /// straight from the CBOR bytes without building a tree: memory is the output's.
    pub fn to_json(&self) -> Result<String> {
        crate::json::cbor_to_json(self.as_cbor())
            .map_err(|e| crate::error::err!(Format, "attributes: {e}"))
    }
}

impl std::fmt::Debug for Attributes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.value(), f)
    }
}

/// An object's dimensions, stored inline up to rank 2 (most tensors), so that a manifest
/// of many small tensors doesn't pay an allocation per shape; 24 bytes.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    Inline {
        rank: u8,
        dims: [u64; Shape::INLINE],
    },
    Heap(Box<[u64]>),
}

impl Shape {
    const INLINE: usize = 2;
}

impl From<&[u64]> for Shape {
    fn from(dims: &[u64]) -> Shape {
        if dims.len() <= Shape::INLINE {
            let mut inline = [0u64; Shape::INLINE];
            inline[..dims.len()].copy_from_slice(dims);
            Shape::Inline {
                rank: dims.len() as u8,
                dims: inline,
            }
        } else {
            Shape::Heap(dims.into())
        }
    }
}

impl From<Vec<u64>> for Shape {
    fn from(dims: Vec<u64>) -> Shape {
        if dims.len() <= Shape::INLINE {
            Shape::from(&dims[..])
        } else {
            Shape::Heap(dims.into_boxed_slice())
        }
    }
}

impl std::ops::Deref for Shape {
    type Target = [u64];
    fn deref(&self) -> &[u64] {
        match self {
            Shape::Inline { rank, dims } => &dims[..usize::from(*rank)],
            Shape::Heap(dims) => dims,
        }
    }
}

impl std::fmt::Debug for Shape {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&**self, f)
    }
}

/// An object's components, the single one of most objects stored inline (no allocation
/// per tensor when a manifest lists many).
#[derive(Clone, Debug, Default)]
pub(crate) enum Components {
    #[default]
    None,
    One(Component),
    Many(Vec<Component>),
}

impl Components {
    /// Appends a component.
    pub(crate) fn push(&mut self, c: Component) {
        *self = match std::mem::take(self) {
            Components::None => Components::One(c),
            Components::One(first) => Components::Many(vec![first, c]),
            Components::Many(mut v) => {
                v.push(c);
                Components::Many(v)
            }
        };
    }
}

impl From<Vec<Component>> for Components {
    fn from(mut v: Vec<Component>) -> Components {
        match v.len() {
            0 => Components::None,
            1 => Components::One(v.pop().expect("one")),
            _ => Components::Many(v),
        }
    }
}

impl std::ops::DerefMut for Components {
    fn deref_mut(&mut self) -> &mut [Component] {
        match self {
            Components::None => &mut [],
            Components::One(c) => std::slice::from_mut(c),
            Components::Many(v) => v,
        }
    }
}

impl<'c> IntoIterator for &'c Components {
    type Item = &'c Component;
    type IntoIter = std::slice::Iter<'c, Component>;
    fn into_iter(self) -> Self::IntoIter {
        self.iter()
    }
}

impl std::ops::Deref for Components {
    type Target = [Component];
    fn deref(&self) -> &[Component] {
        match self {
            Components::None => &[],
            Components::One(c) => std::slice::from_ref(c),
            Components::Many(v) => v,
        }
    }
}

/// A named object: shape, format, attributes and components.
#[derive(Clone, Debug)]
pub struct Object {
    pub(crate) name: CText,
    pub(crate) format: CText,
    pub(crate) shape: Shape,
    pub(crate) attributes: Option<Attributes>,
    pub(crate) components: Components,
}

impl Object {
    /// The object's name.
    pub fn name(&self) -> &str {
        self.name.as_str()
    }
    /// The layout: "dense", "sparse_csr", "sparse_coo", "quantized_group", or as stored.
    pub fn format(&self) -> &str {
        self.format.as_str()
    }
    /// The logical shape; empty for a scalar.
    pub fn shape(&self) -> &[u64] {
        &self.shape
    }
    /// The object's attributes (a CBOR map), decoded on each call; None when absent.
    pub fn attributes(&self) -> Option<Value> {
        self.attributes.as_ref().map(Attributes::value)
    }
    /// The object's attributes as stored (CBOR bytes), without decoding.
    pub fn raw_attributes(&self) -> Option<&Attributes> {
        self.attributes.as_ref()
    }
    /// The components in manifest order.
    pub fn components(&self) -> &[Component] {
        &self.components
    }
    /// Index of the component with this role.
    pub fn find_component(&self, role: &str) -> Option<usize> {
        self.components.iter().position(|c| c.role() == role)
    }
    /// The first component holding ggml blocks, and its blocks: what makes an object
    /// block-quantized.
    pub(crate) fn block_component(&self) -> Option<(usize, crate::quant::Blocks)> {
        self.components
            .iter()
            .enumerate()
            .find_map(|(i, c)| c.blocks().map(|b| (i, b)))
    }
    pub(crate) fn name_c(&self) -> &CText {
        &self.name
    }
    pub(crate) fn format_c(&self) -> &CText {
        &self.format
    }
}

/// The file formats this library reads: the one table of their names.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Container {
    /// zTensor v1.x or legacy v0.1.
    ZTensor,
    /// Hugging Face safetensors.
    Safetensors,
    /// ggml's GGUF v2/v3.
    Gguf,
    /// ECMWF Tensogram v3 (`.tgm`).
    Tensogram,
    /// PyTorch checkpoints (`torch.save`'s zip format: `pytorch_model.bin`, `.pt`).
    PyTorch,
    /// NumPy `.npy` and `.npz`.
    NumPy,
    /// ONNX models' initializers (`.onnx`).
    Onnx,
}

impl Container {
    /// Every format.
    pub const ALL: [Container; 7] = [
        Container::ZTensor,
        Container::Safetensors,
        Container::Gguf,
        Container::Tensogram,
        Container::PyTorch,
        Container::NumPy,
        Container::Onnx,
    ];

    /// The name the C API reports: "zt", "safetensors", "gguf", "tensogram", "pytorch",
    /// "numpy", "onnx".
    pub fn name(self) -> &'static str {
        self.names().0.to_str().expect("ASCII")
    }

    /// `name`, NUL-terminated for the C API.
    pub(crate) fn c_name(self) -> &'static std::ffi::CStr {
        self.names().0
    }

    /// The name people use in prose: "zTensor", "safetensors", "GGUF", "Tensogram".
    pub fn title(self) -> &'static str {
        self.names().1
    }

    fn names(self) -> (&'static std::ffi::CStr, &'static str) {
        match self {
            Container::ZTensor => (c"zt", "zTensor"),
            Container::Safetensors => (c"safetensors", "safetensors"),
            Container::Gguf => (c"gguf", "GGUF"),
            Container::Tensogram => (c"tensogram", "Tensogram"),
            Container::PyTorch => (c"pytorch", "PyTorch"),
            Container::NumPy => (c"numpy", "NumPy"),
            Container::Onnx => (c"onnx", "ONNX"),
        }
    }
}

/// What a file's format guarantees, stated by the format's parser, so that the reader
/// never asks which format a file came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Traits {
    /// Every blob offset is a multiple of this.
    pub(crate) blob_alignment: u64,
    /// The alignment a zero-copy view must have to be lent out; 0 means the element size
    /// (data the file leaves less aligned is copied once into an aligned cache).
    pub(crate) view_alignment: usize,
    /// The digest algorithms the format defines (others are reported as unsupported).
    pub(crate) digest_kinds: &'static [digest::Kind],
    /// Digests cover a component's decoded bytes (zTensor v2), not its stored bytes.
    pub(crate) decoded_digests: bool,
    /// Verification also checks the values logical types constrain (bool bytes are 0 or
    /// 1, the unused nibble of an odd count of packed fp4 values is 0), as v2 requires.
    pub(crate) value_rules: bool,
    /// Blobs may overlap partially: views into one shared storage (PyTorch). Elsewhere
    /// a partial overlap is a corrupt file.
    pub(crate) shared_blobs: bool,
}

impl Traits {
    /// The alignment a zero-copy view of `dtype` elements needs.
    pub(crate) fn view_alignment(&self, dtype: DType) -> usize {
        match self.view_alignment {
            0 => dtype.size(),
            n => n,
        }
    }
}

/// A whole file's model: version, attributes, objects in manifest order, and a name index.
#[derive(Clone, Debug)]
pub struct Model {
    pub(crate) container: Container,
    pub(crate) traits: Traits,
    pub(crate) version: CText,
    pub(crate) attributes: Option<Attributes>,
    pub(crate) objects: Vec<Object>,
    pub(crate) by_name: NameIndex,
    /// File regions `(offset, length)` that digests cover when that is not the
    /// component's blob, by (object, component) index: Tensogram's frame hashes cover
    /// a frame's whole body (payload, NaN/Inf masks and descriptor). Empty for zTensor.
    pub(crate) digest_regions: DigestRegions,
    /// The file offset the format's own tensor offsets count from: where GGUF's data
    /// section and safetensors' byte buffer begin; 0 for formats that record absolute
    /// offsets (zTensor, Tensogram). Set by the format after `new`.
    pub(crate) data_offset: u64,
    /// Where the file sits in a split set, when it says (GGUF's `split.*` keys).
    pub(crate) split: Option<Split>,
    /// A zTensor v2 root's shard table, sorted by name: blobs of file `i + 1` are in the
    /// shard at `i`. Empty for every other file.
    pub(crate) v2_shards: Box<[ShardEntry]>,
    /// A set's `(data_offset, blob alignment)` of each shard, in shard order (each shard
    /// is a file of its own: its data section and alignment are its own); empty for a
    /// single file, whose are `data_offset` and `traits.blob_alignment`.
    pub(crate) shard_layouts: Box<[(u64, u64)]>,
    /// Other files the model's blobs are in (ONNX external data), relative to the
    /// file's directory: blobs with `file` k > 0 are in `external[k - 1]`. The reader
    /// opens them as a set (`sets::open_external`).
    pub(crate) external: Box<[Box<str>]>,
}

/// An entry of a zTensor v2 shard table (§7.1): a label, and the file's identity (its
/// exact size and whole-file digest), never a location.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ShardEntry {
    pub(crate) name: Box<str>,
    pub(crate) size: u64,
    pub(crate) digest: Box<str>,
}

/// A file's place in a set it declares itself part of: GGUF's `split.no` (from 0),
/// `split.count` and `split.tensors.count` (the tensors of the whole set).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Split {
    pub(crate) no: u64,
    pub(crate) count: u64,
    pub(crate) tensors: Option<u64>,
}

impl Model {
    /// Builds a model and its name index, refusing duplicate names.
    pub(crate) fn new(
        container: Container,
        traits: Traits,
        version: &str,
        attributes: Option<Attributes>,
        objects: Vec<Object>,
    ) -> Result<Model> {
        let by_name = NameIndex::build(&objects)?;
        Model::with_index(container, traits, version, attributes, objects, by_name)
    }

    /// `new` with the name index of `objects` already built.
    pub(crate) fn with_index(
        container: Container,
        traits: Traits,
        version: &str,
        attributes: Option<Attributes>,
        objects: Vec<Object>,
        by_name: NameIndex,
    ) -> Result<Model> {
        Ok(Model {
            container,
            traits,
            version: CText::new(version)?,
            attributes,
            objects,
            by_name,
            digest_regions: Default::default(),
            data_offset: 0,
            split: None,
            v2_shards: Box::default(),
            shard_layouts: Box::default(),
            external: Box::default(),
        })
    }

    /// The stored region `(offset, length)` a component's digest covers: its blob,
    /// unless the format hashes a larger region (see `digest_regions`). A binary search.
    pub(crate) fn digest_region(&self, object: usize, component: usize) -> (u64, u64) {
        match self.digest_regions.get(object, component) {
            Some(region) => region,
            None => {
                let blob = &self.objects[object].components[component].blob;
                (blob.offset, blob.length)
            }
        }
    }
}

/// The regions `(offset, length)` digests cover where that is not the component's blob,
/// by (object, component) index, in that order: a sorted list (24 bytes a region, where a
/// hash map took three times that for a message of many small objects).
#[derive(Clone, Debug, Default)]
pub(crate) struct DigestRegions(Vec<(u32, u32, u64, u64)>);

impl DigestRegions {
    /// Adds the region of a component after every one added so far.
    pub(crate) fn push(&mut self, object: usize, component: usize, (offset, length): (u64, u64)) {
        let key = (object as u32, component as u32);
        debug_assert!(self.0.last().is_none_or(|&(o, c, ..)| (o, c) < key));
        self.0.push((key.0, key.1, offset, length));
    }
    /// The region of a component, if it has one.
    pub(crate) fn get(&self, object: usize, component: usize) -> Option<(u64, u64)> {
        let key = (u32::try_from(object).ok()?, u32::try_from(component).ok()?);
        let at = self
            .0
            .binary_search_by(|&(o, c, ..)| (o, c).cmp(&key))
            .ok()?;
        let (_, _, offset, length) = self.0[at];
        Some((offset, length))
    }
    /// Every region: ((object, component), (offset, length)), in order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = ((usize, usize), (u64, u64))> + '_ {
        self.0
            .iter()
            .map(|&(o, c, offset, length)| ((o as usize, c as usize), (offset, length)))
    }
}

/// Object index by name: open addressing (linear probing) over object indices. The hash is
/// XXH3 (from `xxhash-rust`, already a dependency for Tensogram's frame hashes): about 50
/// instructions for a 40-byte name where SipHash takes about 250, and seeded at random for
/// each index (from std's randomly keyed `RandomState`), so a hostile file can't be
/// crafted for its names to collide and make lookups quadratic. It holds no copies of the
/// names: 6 bytes per slot (an index and 16 bits of the hash, in two arrays), at most two
/// thirds of the slots used: 9 bytes per object.
#[derive(Clone, Debug)]
pub(crate) struct NameIndex {
    /// Object index + 1 per slot; 0 marks an empty slot.
    entries: Box<[u32]>,
    /// Other bits of the hash of the slot's name, compared before the name.
    tags: Box<[u16]>,
    seed: u64,
}

impl NameIndex {
    /// Indexes `objects` by name, refusing a duplicate name (a `Format` error).
    pub(crate) fn build(objects: &[Object]) -> Result<NameIndex> {
        match NameIndex::try_build(objects)? {
            Ok(index) => Ok(index),
            Err((_, at)) => bail!(Format, "duplicate object name '{}'", objects[at].name()),
        }
    }

    /// Indexes `objects` by name; `Ok(Err((before, i)))` when object `i` is the first to
    /// repeat a name, object `before`'s (for callers that rename repeats, or say where
    /// both are).
    pub(crate) fn try_build(
        objects: &[Object],
    ) -> Result<std::result::Result<NameIndex, (usize, usize)>> {
        if objects.len() >= u32::MAX as usize / 2 {
            bail!(
                Limit,
                "{} objects is more than this library indexes",
                objects.len()
            );
        }
        use std::hash::BuildHasher;
        let size = (objects.len() + objects.len() / 2 + 1).max(8);
        let mut index = NameIndex {
            entries: vec![0u32; size].into_boxed_slice(),
            tags: vec![0u16; size].into_boxed_slice(),
            seed: std::collections::hash_map::RandomState::new().hash_one(size),
        };
        for (i, o) in objects.iter().enumerate() {
            let name = o.name.as_bytes();
            let (mut at, tag) = index.place(name);
            loop {
                let entry = index.entries[at];
                if entry == 0 {
                    index.entries[at] = i as u32 + 1;
                    index.tags[at] = tag;
                    break;
                }
                if index.tags[at] == tag && objects[entry as usize - 1].name.as_bytes() == name {
                    return Ok(Err((entry as usize - 1, i)));
                }
                at = index.next(at);
            }
        }
        Ok(Ok(index))
    }

    /// The first slot to look at for `name` (from the hash's high bits), and its tag (low).
    #[inline]
    fn place(&self, name: &[u8]) -> (usize, u16) {
        let h = xxhash_rust::xxh3::xxh3_64_with_seed(name, self.seed);
        let at = ((u128::from(h) * self.entries.len() as u128) >> 64) as usize;
        (at, h as u16)
    }

    #[inline]
    fn next(&self, at: usize) -> usize {
        if at + 1 == self.entries.len() {
            0
        } else {
            at + 1
        }
    }

    /// The index of the object called `name` among `objects` (those it was built from).
    /// Bytes, so that the C API needn't check a name is UTF-8 before looking it up (no
    /// object's name matches bytes that aren't).
    #[inline]
    pub(crate) fn find(&self, objects: &[Object], name: &[u8]) -> Option<usize> {
        let (mut at, tag) = self.place(name);
        loop {
            let entry = self.entries[at];
            if entry == 0 {
                return None;
            }
            if self.tags[at] == tag && objects[entry as usize - 1].name.as_bytes() == name {
                return Some(entry as usize - 1);
            }
            at = self.next(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn digest_regions_found_by_object_and_component() {
        let mut r = DigestRegions::default();
        r.push(0, 1, (10, 5));
        r.push(3, 0, (100, 50));
        r.push(3, 2, (200, 7));
        r.push(70_000, 0, (1 << 40, 1 << 33));
        assert_eq!(r.get(0, 1), Some((10, 5)));
        assert_eq!(r.get(3, 0), Some((100, 50)));
        assert_eq!(r.get(3, 2), Some((200, 7)));
        assert_eq!(r.get(70_000, 0), Some((1 << 40, 1 << 33)));
        assert_eq!(r.get(0, 0), None);
        assert_eq!(r.get(3, 1), None);
        assert_eq!(r.get(usize::MAX, 0), None);
        let all: Vec<_> = r.iter().collect();
        assert_eq!(all[1], ((3, 0), (100, 50)));
        assert_eq!(all.len(), 4);
    }

    #[test]
    fn attributes_shared_or_own_read_and_compare_alike() {
        let cbor = crate::cbor::to_vec(&Value::Map(vec![(
            Value::Text("k".into()),
            Value::Bytes(vec![0, 1, 0]),
        )]));
        let mut arena = TextArena::default();
        let shared = Attributes::in_arena(&mut arena, &cbor);
        let own = Attributes::from_cbor(&cbor);
        assert!(matches!(shared.form(), AttrRef::Shared(_)));
        assert_eq!(shared.as_cbor(), &cbor[..]);
        assert!(shared == own);
        assert_eq!(shared.to_json().unwrap(), own.to_json().unwrap());
        assert_eq!(shared.widths(), None);
        // Too long to share a block: its own allocation.
        let long = crate::cbor::to_vec(&Value::Bytes(vec![7; 20_000]));
        let a = Attributes::in_arena(&mut arena, &long);
        assert!(matches!(a.form(), AttrRef::Own(_)));
        assert_eq!(std::mem::size_of::<Option<Attributes>>(), 8);
        let (a2, s2) = (a.clone(), shared.clone());
        assert_eq!(a.as_cbor(), &long[..]);
        drop((a, shared, arena));
        assert_eq!(a2.as_cbor(), &long[..]);
        assert_eq!(s2.as_cbor(), &cbor[..]);
        let with_widths = Attributes::from_vec_with_widths(cbor.clone(), vec![1]);
        assert!(with_widths != own);
    }
}
