//! The in-memory model of a file (objects and components) that every input format is
//! parsed into: names, shapes, components, where each component's bytes are and how they
//! decode (`decode::Step`), what the file's format guarantees (`Traits`), and a name
//! index. `schema` holds the rules of each object kind; `validate` the structural checks
//! every model passes before a reader exists.

use crate::codec::digest;
use crate::dtype::DType;
use crate::error::Result;
use crate::value::cbor::Value;

mod attributes;
mod lookup;
pub mod runs;
pub mod schema;
mod steps;
mod text;
mod validate;

pub use attributes::Attributes;
pub(crate) use lookup::{DigestRegions, NameIndex};
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
    /// The one component of a dense object that has exactly one (its `data`): what
    /// bindings view as an array (`ZT_OBJECT_DENSE`, runs of objects).
    pub fn single_dense(&self) -> Option<&Component> {
        match &self.components[..] {
            [c] if self.format() == "dense" => Some(c),
            _ => None,
        }
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

#[cfg(test)]
mod tests;
