//! The in-memory model of a file (objects and components) that every input format is
//! parsed into, and the structural validation every model passes before a reader exists.

use std::ffi::c_char;

use crate::cbor::Value;
use crate::dtype::{DType, dense_byte_size, logical_type_info, numel};
use crate::error::{Result, bail, err};

/// Alignment of every blob in the file, in bytes.
pub const ALIGNMENT: u64 = 64;

/// A UTF-8 string stored with a trailing NUL so the C API can lend it out without copying.
/// It never contains an interior NUL.
/// Clones share the text (names, formats and roles are stored once).
#[derive(Clone, PartialEq, Eq)]
pub struct CText(std::sync::Arc<str>);

impl CText {
    /// Copies `s`, refusing interior NUL bytes. One allocation.
    pub fn new(s: &str) -> Result<CText> {
        if s.as_bytes().contains(&0) {
            bail!(Format, "text {:?} contains a NUL byte", s);
        }
        let mut small = [0u8; 128];
        let text: std::sync::Arc<str> = if s.len() < small.len() {
            small[..s.len()].copy_from_slice(s.as_bytes());
            // SAFETY: a copy of valid UTF-8 followed by an ASCII NUL is valid UTF-8.
            std::sync::Arc::from(unsafe { std::str::from_utf8_unchecked(&small[..=s.len()]) })
        } else {
            let mut owned = String::with_capacity(s.len() + 1);
            owned.push_str(s);
            owned.push('\0');
            owned.into()
        };
        Ok(CText(text))
    }
    /// The text without the terminator.
    pub fn as_str(&self) -> &str {
        &self.0[..self.0.len() - 1]
    }
    /// A NUL-terminated pointer, valid as long as `self`.
    pub fn as_ptr(&self) -> *const c_char {
        self.0.as_ptr().cast()
    }
}

impl std::hash::Hash for CText {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // As the text without its terminator, so that lookups by &str agree.
        self.as_str().hash(state)
    }
}

impl std::borrow::Borrow<str> for CText {
    fn borrow(&self) -> &str {
        self.as_str()
    }
}

impl std::fmt::Debug for CText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(self.as_str(), f)
    }
}

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
    /// Absolute file offset.
    pub offset: u64,
    /// Stored bytes.
    pub length: u64,
    /// How the stored bytes are encoded.
    pub encoding: Encoding,
    /// Bytes after decoding.
    pub decoded_length: u64,
}

/// How a component's bytes are obtained from its blob. zTensor v1 files need only `None`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transform {
    /// The decoded blob is the component.
    None,
    /// The decoded blob holds big-endian elements of this many bytes: swap each.
    SwapBytes(u8),
    /// Decoded by `Model::decoders[index]` from the blob's stored bytes (formats other
    /// than zTensor whose encodings are pipelines of their own).
    External(u32),
    /// A byte range of the decoded blob, elements of `swap` bytes swapped when `swap > 1`.
    Slice { start: u64, len: u64, swap: u8 },
    /// Legacy COO records `[ndim x u64 index][value]`: gather the values.
    CooValues {
        ndim: u64,
        nnz: u64,
        value_size: u8,
        swap: bool,
    },
    /// Legacy COO records: gather the indices into structure-of-arrays order.
    CooCoords {
        ndim: u64,
        nnz: u64,
        value_size: u8,
        swap: bool,
    },
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
    pub(crate) transform: Transform,
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
                offset,
                length,
                encoding: Encoding::Raw,
                decoded_length: length,
            },
            decoded_length: length,
            digest: None,
            transform: Transform::None,
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
    /// Absolute file offset of the stored bytes.
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
        self.blob.encoding == Encoding::Raw && self.transform == Transform::None
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
#[derive(Clone, PartialEq)]
pub struct Attributes(Box<[u8]>);

impl Attributes {
    pub(crate) fn from_cbor(bytes: &[u8]) -> Attributes {
        Attributes(bytes.into())
    }
    /// Encodes a value (the writer checks it is a map).
    pub(crate) fn from_value(v: &Value) -> Attributes {
        Attributes(crate::cbor::to_vec(v).into_boxed_slice())
    }
    /// The CBOR encoding of the attribute map.
    pub fn as_cbor(&self) -> &[u8] {
        &self.0
    }
    /// Decodes the attribute map (allocates the tree).
    pub fn value(&self) -> Value {
        crate::cbor::decode(&self.0, crate::limits::MAX_CBOR_DEPTH)
            .expect("validated when the file was opened")
    }
}

impl std::fmt::Debug for Attributes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Debug::fmt(&self.value(), f)
    }
}

/// An object's dimensions, stored inline up to rank 4 (nearly every tensor), so that a
/// manifest of many small tensors doesn't pay an allocation per shape.
#[derive(Clone, PartialEq, Eq)]
pub(crate) enum Shape {
    Inline {
        rank: u8,
        dims: [u64; Shape::INLINE],
    },
    Heap(Box<[u64]>),
}

impl Shape {
    const INLINE: usize = 4;
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
    pub(crate) fn name_c(&self) -> &CText {
        &self.name
    }
    pub(crate) fn format_c(&self) -> &CText {
        &self.format
    }
}

/// Decodes a component's stored bytes for a format whose encodings are its own
/// (`Transform::External`). Implementations are immutable and shared between threads.
pub(crate) trait Decoder: Send + Sync + std::fmt::Debug {
    /// Decodes `stored` (the blob's bytes) into `dst`, exactly the component's decoded
    /// length. A pipeline this build can't decode is `Unsupported`, naming the codec.
    fn decode(&self, stored: &[u8], dst: &mut [u8]) -> Result<()>;
}

/// The container a file was read from: its name and what it guarantees about layout.
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
}

impl Container {
    /// The name the C API reports: "zt", "safetensors", "gguf", "tensogram".
    pub fn name(self) -> &'static str {
        match self {
            Container::ZTensor => "zt",
            Container::Safetensors => "safetensors",
            Container::Gguf => "gguf",
            Container::Tensogram => "tensogram",
        }
    }
    /// Blob offsets in a zTensor file are multiples of 64; other formats place data where
    /// they like (see `view_alignment`).
    pub(crate) fn blob_alignment(self) -> u64 {
        match self {
            Container::ZTensor => ALIGNMENT,
            _ => 1,
        }
    }
    /// The alignment a zero-copy view of `dtype` elements must have to be lent out: 64 in
    /// zTensor files (the format guarantees it), the element size elsewhere (a misaligned
    /// tensor is copied into an aligned cache instead).
    pub(crate) fn view_alignment(self, dtype: DType) -> usize {
        match self {
            Container::ZTensor => ALIGNMENT as usize,
            _ => dtype.size(),
        }
    }
}

/// A whole file's model: version, attributes, objects in manifest order, and a name index.
#[derive(Clone, Debug)]
pub struct Model {
    pub(crate) container: Container,
    pub(crate) version: CText,
    pub(crate) attributes: Option<Attributes>,
    pub(crate) objects: Vec<Object>,
    pub(crate) by_name: NameIndex,
    /// Decoders of `Transform::External` components, by index.
    pub(crate) decoders: Vec<std::sync::Arc<dyn Decoder>>,
    /// File regions `(offset, length)` that digests cover when that is not the
    /// component's blob, by (object, component) index: Tensogram's frame hashes cover
    /// a frame's whole body (payload, NaN/Inf masks and descriptor). Empty for zTensor.
    pub(crate) digest_regions: std::collections::HashMap<(usize, usize), (u64, u64)>,
}

impl Model {
    /// Builds a zTensor model and its name index, refusing duplicate names.
    pub(crate) fn new(
        version: &str,
        attributes: Option<Attributes>,
        objects: Vec<Object>,
    ) -> Result<Model> {
        Model::foreign(Container::ZTensor, version, attributes, objects, Vec::new())
    }

    /// Builds the model of a file in another container format (see `formats`), with the
    /// decoders its `Transform::External` components refer to.
    pub(crate) fn foreign(
        container: Container,
        version: &str,
        attributes: Option<Attributes>,
        objects: Vec<Object>,
        decoders: Vec<std::sync::Arc<dyn Decoder>>,
    ) -> Result<Model> {
        let by_name = NameIndex::build(&objects)?;
        for o in &objects {
            for c in &o.components {
                if let Transform::External(d) = c.transform
                    && d as usize >= decoders.len()
                {
                    bail!(
                        Internal,
                        "component refers to decoder {d} of {}",
                        decoders.len()
                    );
                }
            }
        }
        Ok(Model {
            container,
            version: CText::new(version)?,
            attributes,
            objects,
            by_name,
            decoders,
            digest_regions: Default::default(),
        })
    }

    /// The stored region `(offset, length)` a component's digest covers: its blob,
    /// unless the format hashes a larger region (see `digest_regions`). A map lookup.
    pub(crate) fn digest_region(&self, object: usize, component: usize) -> (u64, u64) {
        match self.digest_regions.get(&(object, component)) {
            Some(&region) => region,
            None => {
                let blob = &self.objects[object].components[component].blob;
                (blob.offset, blob.length)
            }
        }
    }
}

/// Object index by name: open addressing over object indices with a keyed hash (std's
/// SipHash, randomly keyed, so a hostile file can't make lookups quadratic). It holds
/// no copies of the names: 8 bytes per slot, at most half the slots used.
#[derive(Clone, Debug)]
pub(crate) struct NameIndex {
    /// (object index + 1, high half of the hash); 0 marks an empty slot.
    slots: Box<[(u32, u32)]>,
    hasher: std::collections::hash_map::RandomState,
}

impl NameIndex {
    /// Indexes `objects` by name, refusing a duplicate name (a `Format` error).
    pub(crate) fn build(objects: &[Object]) -> Result<NameIndex> {
        if objects.len() >= u32::MAX as usize / 2 {
            bail!(
                Limit,
                "{} objects is more than this library indexes",
                objects.len()
            );
        }
        let size = (objects.len() * 2).next_power_of_two().max(8);
        let mut index = NameIndex {
            slots: vec![(0u32, 0u32); size].into_boxed_slice(),
            hasher: Default::default(),
        };
        let mask = size - 1;
        for (i, o) in objects.iter().enumerate() {
            let h = index.hash(o.name());
            let mut at = h as usize & mask;
            loop {
                let (entry, tag) = index.slots[at];
                if entry == 0 {
                    index.slots[at] = (i as u32 + 1, (h >> 32) as u32);
                    break;
                }
                if tag == (h >> 32) as u32 && objects[entry as usize - 1].name() == o.name() {
                    bail!(Format, "duplicate object name '{}'", o.name());
                }
                at = (at + 1) & mask;
            }
        }
        Ok(index)
    }

    fn hash(&self, name: &str) -> u64 {
        use std::hash::BuildHasher;
        self.hasher.hash_one(name)
    }

    /// The index of the object called `name` among `objects` (those it was built from).
    pub(crate) fn find(&self, objects: &[Object], name: &str) -> Option<usize> {
        let h = self.hash(name);
        let mask = self.slots.len() - 1;
        let mut at = h as usize & mask;
        loop {
            let (entry, tag) = self.slots[at];
            if entry == 0 {
                return None;
            }
            if tag == (h >> 32) as u32 && objects[entry as usize - 1].name() == name {
                return Some(entry as usize - 1);
            }
            at = (at + 1) & mask;
        }
    }
}

/// The checks on names: non-empty, bounded, no NUL (UTF-8 is guaranteed by the decoders).
pub(crate) fn check_name(what: &str, name: &str, max_len: usize) -> Result<CText> {
    check_name_text(what, name, max_len)?;
    CText::new(name).map_err(|e| e.context(format!("{what} name")))
}

/// `check_name` without making the C string: empty or too long (a NUL byte is refused
/// when the C string is made).
pub(crate) fn check_name_text(what: &str, name: &str, max_len: usize) -> Result<()> {
    if name.is_empty() {
        bail!(Format, "{what} name is empty");
    }
    if name.len() > max_len {
        bail!(
            Limit,
            "{what} name is {} bytes, over the limit of {max_len}",
            name.len()
        );
    }
    Ok(())
}

/// Checks a digest string's syntax: "sha256:<64 hex>", "crc32c:0x<8 hex>", or
/// "<algorithm>:<anything>" for algorithms we don't know (reported at verification).
pub(crate) fn check_digest_syntax(digest: &str) -> Result<()> {
    let Some((algo, hex)) = digest.split_once(':') else {
        bail!(
            Format,
            "malformed digest '{digest}': expected 'algorithm:hex'"
        );
    };
    let is_hex = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_hexdigit());
    let ok = match algo {
        "sha256" => hex.len() == 64 && is_hex(hex),
        "crc32c" => {
            hex.len() == 10 && (hex.starts_with("0x") || hex.starts_with("0X")) && is_hex(&hex[2..])
        }
        _ => !algo.is_empty() && !hex.is_empty(),
    };
    if !ok {
        bail!(Format, "malformed digest '{digest}'");
    }
    Ok(())
}

/// Validates a model against the file it came from: blob bounds, alignment and overlap,
/// component sizes against shape and dtype, sparse structure sizes. `data_end` is where
/// the manifest starts (no blob may reach past it).
pub(crate) fn validate(model: &Model, data_end: u64, max_decoded: u64) -> Result<()> {
    // Blobs in file order (what writers produce) are checked for overlap on the way;
    // only a file with blobs out of order pays for collecting and sorting them.
    let mut last: (u64, u64) = (0, 0);
    let mut in_order = true;
    for obj in &model.objects {
        let ctx = |e: crate::error::Error| e.context(format!("object '{}'", obj.name()));
        numel(&obj.shape)
            .ok_or_else(|| ctx(err!(Format, "shape {:?} overflows u64", obj.shape)))?;
        for c in &obj.components {
            let cctx = |e: crate::error::Error| ctx(e.context(format!("component '{}'", c.role())));
            check_blob(
                &c.blob,
                data_end,
                max_decoded,
                model.container.blob_alignment(),
            )
            .map_err(cctx)?;
            if c.decoded_length > max_decoded {
                return Err(cctx(err!(
                    Limit,
                    "decoded length {} is over the decode limit {max_decoded}",
                    c.decoded_length
                )));
            }
            if c.decoded_length % c.dtype.size() as u64 != 0 {
                return Err(cctx(err!(
                    Format,
                    "{} bytes is not a whole number of {} elements",
                    c.decoded_length,
                    c.dtype
                )));
            }
            if let Some(t) = c.logical_type()
                && let Some(info) = logical_type_info(t)
            {
                let unit = info.ratio * c.dtype.size() as u64;
                if c.decoded_length % unit != 0 {
                    return Err(cctx(err!(
                        Format,
                        "{} bytes is not a whole number of '{t}' elements",
                        c.decoded_length
                    )));
                }
            }
            let blob = (c.blob.offset, c.blob.length);
            if blob.1 > 0 && blob != last {
                in_order &= blob.0 >= last.0 + last.1;
                last = blob;
            }
        }
        check_structure(obj).map_err(ctx)?;
    }
    if in_order {
        return Ok(());
    }
    let mut blobs: Vec<(u64, u64)> = model
        .objects
        .iter()
        .flat_map(|o| o.components.iter())
        .map(|c| (c.blob.offset, c.blob.length))
        .filter(|&(_, len)| len > 0)
        .collect();
    blobs.sort_unstable();
    blobs.dedup();
    for pair in blobs.windows(2) {
        let (a_off, a_len) = pair[0];
        let (b_off, b_len) = pair[1];
        if b_off < a_off + a_len {
            bail!(
                Format,
                "blobs [{a_off}, {}) and [{b_off}, {}) overlap",
                a_off + a_len,
                b_off + b_len
            );
        }
    }
    Ok(())
}

fn check_blob(blob: &Blob, data_end: u64, max_decoded: u64, alignment: u64) -> Result<()> {
    let Blob {
        offset,
        length,
        encoding,
        decoded_length,
    } = *blob;
    if offset == 0 {
        bail!(Format, "offset 0 points at the file header");
    }
    if offset % alignment != 0 {
        bail!(Format, "offset {offset} is not a multiple of {alignment}");
    }
    let end = offset
        .checked_add(length)
        .ok_or_else(|| err!(Format, "offset {offset} + length {length} overflows"))?;
    if end > data_end {
        bail!(
            Format,
            "bytes [{offset}, {end}) reach past the data region, which ends at {data_end} where the manifest starts"
        );
    }
    match encoding {
        Encoding::Raw if decoded_length != length => {
            bail!(
                Format,
                "raw blob of {length} bytes cannot decode to {decoded_length} bytes"
            )
        }
        Encoding::Zstd => {
            if decoded_length > max_decoded {
                bail!(
                    Limit,
                    "uncompressed_length {decoded_length} is over the decode limit {max_decoded}"
                );
            }
            // A zstd block expands at most 128 KiB from a 4-byte RLE block; allow 2x slack.
            let ceiling = length.saturating_mul(65536).saturating_add(65536);
            if decoded_length > ceiling {
                bail!(
                    Format,
                    "uncompressed_length {decoded_length} is impossible for {length} bytes of zstd"
                );
            }
            if length == 0 && decoded_length > 0 {
                bail!(
                    Format,
                    "zstd blob of 0 bytes cannot decode to {decoded_length} bytes"
                );
            }
        }
        Encoding::Raw => {}
        // The format's decoder checks its own streams; the size bound is the caller's.
        Encoding::Pipeline => {}
    }
    Ok(())
}

fn component_of<'o>(obj: &'o Object, role: &str) -> Result<&'o Component> {
    obj.components
        .iter()
        .find(|c| c.role() == role)
        .ok_or_else(|| err!(Format, "{} object has no '{role}' component", obj.format()))
}

/// Index dtypes we accept for sparse objects: u64 (the spec) and u32 (what some writers
/// emit). We write u64 only.
fn check_index(c: &Component) -> Result<()> {
    if !matches!(c.dtype, DType::U64 | DType::U32) {
        bail!(
            Format,
            "index component '{}' must be u64 (or u32), not {}",
            c.role(),
            c.dtype
        );
    }
    Ok(())
}

/// Logical elements of a values component (complex counts pairs).
fn logical_elements(c: &Component) -> u64 {
    let ratio = c
        .logical_type()
        .and_then(logical_type_info)
        .map_or(1, |i| i.ratio);
    c.decoded_length / (c.dtype.size() as u64 * ratio)
}

/// Size consistency of the known formats, from the manifest alone.
pub(crate) fn check_structure(obj: &Object) -> Result<()> {
    let total = numel(&obj.shape).unwrap_or(u64::MAX);
    match obj.format() {
        "dense" => {
            let data = component_of(obj, "data")?;
            let known_type = data
                .logical_type()
                .is_none_or(|t| logical_type_info(t).is_some());
            let expected = dense_byte_size(&obj.shape, data.dtype, data.logical_type());
            if known_type && expected.is_none() {
                bail!(
                    Format,
                    "the byte size of shape {:?} of {} overflows u64",
                    obj.shape,
                    data.dtype
                );
            }
            // An unknown logical type has an unknown ratio: its size can't be checked.
            if let Some(expected) = expected
                && data.decoded_length != expected
            {
                bail!(
                    Format,
                    "'data' holds {} bytes but shape {:?} of {}{} needs {expected}",
                    data.decoded_length,
                    obj.shape,
                    data.dtype,
                    data.logical_type()
                        .map(|t| format!(" ({t})"))
                        .unwrap_or_default()
                );
            }
        }
        "sparse_csr" => {
            let values = component_of(obj, "values")?;
            let indices = component_of(obj, "indices")?;
            let indptr = component_of(obj, "indptr")?;
            check_index(indices)?;
            check_index(indptr)?;
            if obj.shape.len() != 2 {
                bail!(Format, "sparse_csr needs a 2-d shape, not {:?}", obj.shape);
            }
            let nnz = logical_elements(values);
            if indptr.element_count() != obj.shape[0].saturating_add(1) {
                bail!(
                    Format,
                    "indptr has {} entries, expected rows + 1 = {}",
                    indptr.element_count(),
                    obj.shape[0] as u128 + 1
                );
            }
            if indices.element_count() != nnz {
                bail!(
                    Format,
                    "indices has {} entries but values has {nnz}",
                    indices.element_count()
                );
            }
            if nnz > total {
                bail!(
                    Format,
                    "{nnz} stored values exceed the shape's {total} elements"
                );
            }
        }
        "sparse_coo" => {
            let values = component_of(obj, "values")?;
            let coords = component_of(obj, "coords")?;
            check_index(coords)?;
            let nnz = logical_elements(values);
            let expected = (obj.shape.len() as u64).checked_mul(nnz);
            if expected != Some(coords.element_count()) {
                bail!(
                    Format,
                    "coords has {} entries, expected ndim {} x nnz {nnz}",
                    coords.element_count(),
                    obj.shape.len()
                );
            }
            if nnz > total {
                bail!(
                    Format,
                    "{nnz} stored values exceed the shape's {total} elements"
                );
            }
        }
        _ => {}
    }
    Ok(())
}
