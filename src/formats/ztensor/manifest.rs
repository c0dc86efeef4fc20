//! The v1.x manifest: parsed straight from its CBOR bytes into the model (v1.2 and v1.1
//! spellings) without building a tree of the document, so memory stays proportional to
//! the model; and the model's entries encoded as the CBOR the writer appends.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::codec::digest;
use crate::dtype::{DType, check_logical_type, dense_byte_size, parse_v11_dtype};
use crate::error::{Error, Result, bail, err};
use crate::limits::Limits;
use crate::model::{
    Attributes, Blob, CText, Component, Components, Container, Encoding, Model, Object, Shape,
    TextArena, check_name_text,
};
use crate::value::cbor::schema::{Keys, Report, Schema};
use crate::value::cbor::{DecodeError, Len, Writer};

use super::TRAITS;

/// The version string this library writes.
pub const WRITE_VERSION: &str = "1.2.0";

/// The CBOR nesting the file's attribute map sits at (inside the manifest map).
pub(crate) const FILE_ATTRIBUTES_DEPTH: usize = 1;
/// The CBOR nesting an object's attribute map sits at (manifest, objects, object).
pub(crate) const OBJECT_ATTRIBUTES_DEPTH: usize = 3;

/// A CBOR error in the manifest, positioned in the file.
pub(crate) fn cbor_error(e: DecodeError, base: u64) -> Error {
    e.positioned("manifest", base)
}

/// How a v1.x or v0.1 manifest (whose bytes start at file offset `base`) reports its
/// errors: `Format`, positioned in the file.
pub(crate) struct V1Errors {
    base: u64,
}

impl Report for V1Errors {
    fn malformed(&self, e: DecodeError) -> Error {
        cbor_error(e, self.base)
    }
    fn mismatch(&self, what: &str, expected: &str, found: &str, at: usize) -> Error {
        err!(
            Format,
            "{what} must be {expected}, not {found} (file offset {})",
            self.base + at as u64
        )
    }
}

/// The schema reader of v1.x and v0.1 manifests.
pub(crate) type Parser<'a> = Schema<'a, V1Errors>;

/// A manifest's schema reader at file offset `base`, nested no deeper than the limits allow.
pub(crate) fn parser<'a>(bytes: &'a [u8], base: u64, limits: &Limits) -> Parser<'a> {
    let depth = limits.max_cbor_depth.min(crate::limits::MAX_CBOR_DEPTH);
    Schema::new(bytes, depth, V1Errors { base })
}

/// Attributes: null means none; anything else must be a map, kept as its bytes.
pub(crate) fn attributes_of(
    p: &mut Parser<'_>,
    depth: usize,
    what: &str,
) -> Result<Option<Attributes>> {
    if p.c.take_null() {
        return Ok(None);
    }
    if p.c.peek_type() != "map" {
        return Err(p.mismatch(&format!("{what} attributes"), "a map"));
    }
    Ok(Some(Attributes::from_cbor(p.capture(depth)?)))
}

/// A width record of attributes (`attribute_types`): a map, kept as its bytes.
fn record_of<'a>(p: &mut Parser<'a>, depth: usize, what: &str) -> Result<&'a [u8]> {
    if p.c.peek_type() != "map" {
        return Err(p.mismatch(&format!("{what} attribute_types"), "a map"));
    }
    p.capture(depth)
}

/// A shape array, bounded by the rank limit; no allocation up to rank 4.
pub(crate) fn shape(p: &mut Parser<'_>, depth: usize, limits: &Limits) -> Result<Shape> {
    let mut len = p.array(depth, "shape")?;
    if let Len::Definite(n) = len
        && n > limits.max_rank as u64
    {
        bail!(
            Limit,
            "shape has {n} dimensions, over the limit of {}",
            limits.max_rank
        );
    }
    let mut small = [0u64; 4];
    let mut rank = 0usize;
    let mut dims = Vec::new();
    while p.more(&mut len)? {
        if rank == limits.max_rank {
            bail!(
                Limit,
                "shape has more than {} dimensions, the limit",
                limits.max_rank
            );
        }
        let d = p.uint("a shape dimension")?;
        if rank < small.len() {
            small[rank] = d;
        } else {
            if dims.is_empty() {
                dims.extend_from_slice(&small);
            }
            dims.push(d);
        }
        rank += 1;
    }
    Ok(if rank <= small.len() {
        Shape::from(&small[..rank])
    } else {
        Shape::from(dims)
    })
}

/// Strings that repeat across objects (formats, roles, logical types) are stored once;
/// the others (names, digests) side by side in an arena.
#[derive(Default)]
pub(crate) struct Interner {
    repeated: Vec<CText>,
    pub(crate) arena: TextArena,
}

impl Interner {
    pub(crate) fn get(&mut self, s: &str) -> Result<CText> {
        if let Some(t) = self.repeated.iter().find(|t| t.as_str() == s) {
            return Ok(t.clone());
        }
        let t = self.arena.text(s)?;
        if self.repeated.len() < 32 {
            self.repeated.push(t.clone());
        }
        Ok(t)
    }

    /// A string of its own (an object's name, a digest).
    fn unique(&mut self, s: &str) -> Result<CText> {
        self.arena.text(s)
    }
}

/// Parses a v1.x manifest (whose bytes start at file offset `base`) into a model, not
/// yet validated against the file. One pass over the bytes.
pub(crate) fn parse(bytes: &[u8], base: u64, limits: &Limits) -> Result<Model> {
    const SCHEMA: [&str; 4] = ["version", "attributes", "objects", "attribute_types"];
    let mut p = parser(bytes, base, limits);
    let mut len = p.map(0, "the manifest")?;
    let mut keys = Keys::default();
    let mut interner = Interner::default();
    let (mut version, mut attributes, mut objects, mut record) = (None, None, None, None);
    // The first component whose decoded size had to come from its shape (v1.1 only).
    let mut derived: Option<String> = None;
    while p.more(&mut len)? {
        let Some(slot) = p.schema_key(1, &SCHEMA, &mut keys, "the manifest")? else {
            continue;
        };
        match slot {
            Some(0) => version = Some(p.text("version")?),
            Some(1) => attributes = attributes_of(&mut p, FILE_ATTRIBUTES_DEPTH, "file")?,
            Some(2) => objects = Some(parse_objects(&mut p, limits, &mut interner, &mut derived)?),
            Some(3) => record = Some(record_of(&mut p, FILE_ATTRIBUTES_DEPTH, "file")?),
            _ => p.skip(1)?,
        }
    }
    let attributes = with_record(attributes, record);
    p.finish()?;
    let version =
        version.ok_or_else(|| err!(Format, "the manifest lacks the required key 'version'"))?;
    let major = version.split('.').next().unwrap_or("");
    if major != "1" {
        bail!(
            Unsupported,
            "manifest version '{version}' is not a 1.x version this library reads"
        );
    }
    // v1.2 made uncompressed_length required on zstd components; v1.1 writers may omit it.
    let minor: u64 = version
        .split('.')
        .nth(1)
        .and_then(|m| m.parse().ok())
        .unwrap_or(0);
    if let (true, Some(which)) = (minor >= 2, derived) {
        bail!(
            Format,
            "{which}: zstd component lacks uncompressed_length, which v{version} requires"
        );
    }
    let objects =
        objects.ok_or_else(|| err!(Format, "the manifest lacks the required key 'objects'"))?;
    Model::new(Container::ZTensor, TRAITS, &version, attributes, objects)
}

/// Attributes with the width record the manifest keeps beside them (a record without
/// attributes describes nothing).
fn with_record(attributes: Option<Attributes>, record: Option<&[u8]>) -> Option<Attributes> {
    match (attributes, record) {
        (Some(a), Some(r)) => Some(a.and_record(r)),
        (a, _) => a,
    }
}

/// The fewest manifest bytes an object entry takes: a non-empty name (2) and a map (1)
/// holding the required keys with their shortest values: "shape" [] (7), "format" and a
/// one-character text (9), "components" {} (12).
const MIN_OBJECT_BYTES: usize = 2 + 1 + 7 + 9 + 12;

/// The first reservation for the objects of a manifest, at most (about 10 MiB).
const FIRST_OBJECTS: usize = 1 << 16;

/// Room for more objects in `list` when it is full. A declared count is a claim: the
/// reservation is bounded by what the bytes left can hold, and sized by what was actually
/// read (the bytes per object so far), so an honest file's list is reserved about once
/// and a hostile count reserves nothing it can't fill. Allocation failure is a status.
fn reserve_objects(
    list: &mut Vec<Object>,
    declared: Option<u64>,
    read: usize,
    left: usize,
) -> Result<()> {
    let fit = match list.len() {
        0 => (left / MIN_OBJECT_BYTES).min(FIRST_OBJECTS),
        n => (left / (read / n).max(1)).max(n / 4),
    };
    let want = match declared {
        Some(d) => fit.min((d as usize).saturating_sub(list.len())),
        None => fit,
    };
    list.try_reserve_exact(want.max(1)).map_err(|_| {
        err!(
            Limit,
            "no memory for {} more objects after {}",
            want.max(1),
            list.len()
        )
    })
}

fn parse_objects(
    p: &mut Parser<'_>,
    limits: &Limits,
    interner: &mut Interner,
    derived: &mut Option<String>,
) -> Result<Vec<Object>> {
    let mut len = p.map(1, "objects")?;
    let declared = match len {
        Len::Definite(n) => Some(n),
        Len::Indefinite => None,
    };
    let start = p.c.position();
    let mut list = Vec::new();
    while p.more(&mut len)? {
        if list.len() == list.capacity() {
            let read = p.c.position() - start;
            reserve_objects(&mut list, declared, read, p.c.remaining())?;
        }
        let name = p.text("an object name")?;
        check_name_text("object", &name, limits.max_name_length)?;
        let name_c = interner
            .unique(&name)
            .map_err(|e| e.context("object name"))?;
        let object = parse_object(p, name_c, limits, interner, derived)
            .map_err(|e| e.context(format!("object '{name}'")))?;
        list.push(object);
    }
    Ok(list)
}

fn parse_object(
    p: &mut Parser<'_>,
    name: CText,
    limits: &Limits,
    interner: &mut Interner,
    derived: &mut Option<String>,
) -> Result<Object> {
    const SCHEMA: [&str; 5] = [
        "shape",
        "format",
        "attributes",
        "components",
        "attribute_types",
    ];
    let mut len = p.map(2, "an object")?;
    let mut keys = Keys::default();
    let (mut shape, mut format, mut attributes, mut components) = (None, None, None, None);
    let mut record = None;
    while p.more(&mut len)? {
        let Some(slot) = p.schema_key(3, &SCHEMA, &mut keys, "the object")? else {
            continue;
        };
        match slot {
            Some(0) => shape = Some(self::shape(p, 3, limits)?),
            Some(1) => format = Some(p.text("format")?),
            Some(2) => attributes = attributes_of(p, OBJECT_ATTRIBUTES_DEPTH, "object")?,
            Some(3) => components = Some(parse_components(p, limits, interner)?),
            Some(4) => record = Some(record_of(p, OBJECT_ATTRIBUTES_DEPTH, "object")?),
            _ => p.skip(3)?,
        }
    }
    let attributes = with_record(attributes, record);
    let missing = |k: &str| err!(Format, "an object lacks the required key '{k}'");
    let shape = shape.ok_or_else(|| missing("shape"))?;
    let format = format.ok_or_else(|| missing("format"))?;
    if format.is_empty() {
        bail!(Format, "format is empty");
    }
    let (mut components, unknown) = components.ok_or_else(|| missing("components"))?;
    // A zstd component without uncompressed_length: v1.1 dense data takes it from the shape.
    for i in unknown {
        let c = &mut components[i];
        let size = (format == "dense" && c.role() == "data")
            .then(|| dense_byte_size(&shape, c.dtype, c.logical_type()))
            .flatten()
            .ok_or_else(|| err!(Format, "component '{}': zstd component lacks uncompressed_length, and its size can't be derived from the shape", c.role()))?;
        c.decoded_length = size;
        c.blob.decoded_length = size;
        derived
            .get_or_insert_with(|| format!("object '{}' component '{}'", name.as_str(), c.role()));
    }
    Ok(Object {
        name,
        format: interner.get(&format)?,
        shape,
        attributes,
        components,
    })
}

/// The components map, and the indices of those whose zstd decoded size is still unknown.
fn parse_components(
    p: &mut Parser<'_>,
    limits: &Limits,
    interner: &mut Interner,
) -> Result<(Components, Vec<usize>)> {
    let mut len = p.map(3, "components")?;
    // Made only past 16 components (a set per object would cost every object a
    // randomly keyed hasher).
    let mut roles: Option<HashSet<CText>> = None;
    let mut unknown = Vec::new();
    let mut list = Components::None;
    while p.more(&mut len)? {
        let role = p.text("a component role")?;
        check_name_text("component", &role, limits.max_name_length)?;
        let role_c = interner
            .get(&role)
            .map_err(|e| e.context("component name"))?;
        // Linear for the usual handful of components, a set beyond (hostile files list many).
        let duplicate = if list.len() < 16 {
            list.iter().any(|c| c.role() == role)
        } else {
            let roles = roles.get_or_insert_with(|| list.iter().map(|c| c.role.clone()).collect());
            !roles.insert(role_c.clone())
        };
        if duplicate {
            bail!(Format, "duplicate component role '{role}'");
        }
        let (c, size_unknown) = parse_component(p, role_c, interner)
            .map_err(|e| e.context(format!("component '{role}'")))?;
        if size_unknown {
            unknown.push(list.len());
        }
        list.push(c);
    }
    Ok((list, unknown))
}

fn parse_component(
    p: &mut Parser<'_>,
    role: CText,
    interner: &mut Interner,
) -> Result<(Component, bool)> {
    const SCHEMA: [&str; 7] = [
        "dtype",
        "type",
        "offset",
        "length",
        "encoding",
        "uncompressed_length",
        "digest",
    ];
    let mut len = p.map(4, "a component")?;
    let mut keys = Keys::default();
    let (mut dtype_name, mut ty, mut offset, mut length, mut encoding, mut stated, mut digest) =
        (None, None, None, None, None, None, None);
    while p.more(&mut len)? {
        let Some(slot) = p.schema_key(5, &SCHEMA, &mut keys, "the component")? else {
            continue;
        };
        match slot {
            Some(0) => dtype_name = Some(p.text("dtype")?),
            Some(1) => ty = p.optional_text("type")?,
            Some(2) => offset = Some(p.uint("offset")?),
            Some(3) => length = Some(p.uint("length")?),
            Some(4) => encoding = p.optional_text("encoding")?,
            Some(5) => {
                stated = if p.c.take_null() {
                    None
                } else {
                    Some(p.uint("uncompressed_length")?)
                }
            }
            Some(6) => digest = p.optional_text("digest")?,
            _ => p.skip(5)?,
        }
    }
    let missing = |k: &str| err!(Format, "a component lacks the required key '{k}'");
    let dtype_name = dtype_name.ok_or_else(|| missing("dtype"))?;
    let (dtype, logical_type) = component_types(&dtype_name, ty)?;
    let offset = offset.ok_or_else(|| missing("offset"))?;
    let length = length.ok_or_else(|| missing("length"))?;
    let (encoding, decoded_length, unknown) = component_sizes(encoding.as_deref(), length, stated)?;
    let digest = match digest {
        Some(d) => {
            digest::check_syntax(&d, TRAITS.digest_kinds)?;
            Some(interner.unique(&d)?)
        }
        None => None,
    };
    let component = Component {
        role,
        dtype,
        logical_type: logical_type
            .as_deref()
            .map(|t| interner.get(t))
            .transpose()?,
        blob: Blob {
            file: 0,
            offset,
            length,
            encoding,
            decoded_length,
        },
        decoded_length,
        digest,
        steps: Default::default(),
    };
    Ok((component, unknown))
}

/// A component's storage dtype (v1.2 and v1.1 names) and logical type: its `type`, or
/// the one a v1.1 dtype name implies (they must agree when both are given).
#[inline]
fn component_types<'a>(
    dtype_name: &str,
    ty: Option<Cow<'a, str>>,
) -> Result<(DType, Option<Cow<'a, str>>)> {
    let (dtype, implied_type) =
        parse_v11_dtype(dtype_name).ok_or_else(|| err!(Format, "unknown dtype '{dtype_name}'"))?;
    let logical_type = match (ty, implied_type) {
        (Some(t), Some(implied)) if t != implied => {
            bail!(
                Format,
                "dtype '{dtype_name}' implies type '{implied}', but type is '{t}'"
            )
        }
        (Some(t), _) => Some(t),
        (None, implied) => implied.map(Cow::Borrowed),
    };
    check_logical_type(dtype, logical_type.as_deref())?;
    Ok((dtype, logical_type))
}

/// A component's encoding and decoded length (`stated`: its uncompressed_length), and
/// whether that length is still unknown (a v1.1 zstd component that omits it).
#[inline]
fn component_sizes(
    encoding: Option<&str>,
    length: u64,
    stated: Option<u64>,
) -> Result<(Encoding, u64, bool)> {
    let encoding = match encoding {
        None | Some("raw") => Encoding::Raw,
        Some("zstd") => Encoding::Zstd,
        Some(other) => bail!(Unsupported, "encoding '{other}' is not supported"),
    };
    let (decoded_length, unknown) = match (encoding, stated) {
        (Encoding::Raw, Some(n)) if n != length => {
            bail!(
                Format,
                "raw component of length {length} states uncompressed_length {n}"
            )
        }
        (Encoding::Raw | Encoding::Pipeline, _) => (length, false),
        (Encoding::Zstd, Some(n)) => (n, false),
        (Encoding::Zstd, None) => (0, true),
    };
    Ok((encoding, decoded_length, unknown))
}

// The manifest is written byte by byte, in the reference writer's key order with defaults
// omitted.

fn encode_component(out: &mut Writer, c: &Component) {
    let zstd = c.blob.encoding == Encoding::Zstd;
    let fields = 3
        + usize::from(c.logical_type.is_some())
        + 2 * usize::from(zstd)
        + usize::from(c.digest.is_some());
    out.map(fields);
    out.text("dtype");
    out.text(c.dtype.name());
    if let Some(t) = c.logical_type() {
        out.text("type");
        out.text(t);
    }
    out.text("offset");
    out.uint(c.blob.offset);
    out.text("length");
    out.uint(c.blob.length);
    if zstd {
        out.text("uncompressed_length");
        out.uint(c.decoded_length);
        out.text("encoding");
        out.text("zstd");
    }
    if let Some(d) = c.digest() {
        out.text("digest");
        out.text(d);
    }
}

/// The entries of attributes: `attributes`, and `attribute_types` when they have a width
/// record (what makes a typed read give back u32, f32 ... instead of CBOR's u64, f64).
fn encode_attributes(out: &mut Writer, attributes: &Attributes) {
    out.text("attributes");
    out.raw(attributes.as_cbor());
    if let Some(r) = attributes.record() {
        out.text("attribute_types");
        out.raw(r);
    }
}

/// How many map entries `encode_attributes` writes.
fn attribute_entries(attributes: Option<&Attributes>) -> usize {
    attributes.map_or(0, |a| 1 + usize::from(a.record().is_some()))
}

fn encode_object(out: &mut Writer, o: &Object) {
    out.map(3 + attribute_entries(o.attributes.as_ref()));
    out.text("shape");
    out.array(o.shape.len());
    o.shape.iter().for_each(|&d| out.uint(d));
    out.text("format");
    out.text(o.format());
    if let Some(a) = &o.attributes {
        encode_attributes(out, a);
    }
    out.text("components");
    out.map(o.components.len());
    for c in &o.components {
        out.text(c.role());
        encode_component(out, c);
    }
}

/// The whole manifest as written by this library (version 1.2.0).
pub(crate) fn encode(attributes: Option<&Attributes>, objects: &[Object]) -> Vec<u8> {
    let mut out = Writer::new();
    out.map(2 + attribute_entries(attributes));
    out.text("version");
    out.text(WRITE_VERSION);
    if let Some(a) = attributes {
        encode_attributes(&mut out, a);
    }
    out.text("objects");
    out.map(objects.len());
    for o in objects {
        out.text(o.name());
        encode_object(&mut out, o);
    }
    out.into_bytes()
}
