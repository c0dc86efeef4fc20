//! The v1.x manifest: parsed straight from its CBOR bytes into the model (v1.2 and v1.1
//! spellings) without building a tree of the document, so memory stays proportional to
//! the model; and the model's entries encoded as the CBOR the writer appends.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::cbor::{Cursor, DecodeError, Len};
use crate::dtype::{check_logical_type, dense_byte_size, parse_v11_dtype};
use crate::error::{Error, ErrorKind, Result, bail, err};
use crate::limits::Limits;
use crate::model::{
    Attributes, Blob, CText, Component, Encoding, Model, Object, Transform, check_digest_syntax,
    check_name,
};

/// The version string this library writes.
pub const WRITE_VERSION: &str = "1.2.0";

/// A CBOR error, positioned in the file: too deep is a `Limit`, anything else `Format`.
pub(crate) fn cbor_error(e: DecodeError, base: u64) -> Error {
    let kind = if e.too_deep {
        ErrorKind::Limit
    } else {
        ErrorKind::Format
    };
    Error::new(
        kind,
        format!(
            "manifest: CBOR error at file offset {}: {}",
            base + e.offset as u64,
            e.message
        ),
    )
}

/// Schema-level reading helpers over a cursor; `base` is the manifest's file offset.
pub(crate) struct Parser<'a> {
    pub(crate) c: Cursor<'a>,
    base: u64,
}

impl<'a> Parser<'a> {
    pub(crate) fn new(bytes: &'a [u8], base: u64, limits: &Limits) -> Self {
        let depth = limits.max_cbor_depth.min(crate::limits::MAX_CBOR_DEPTH);
        Parser {
            c: Cursor::new(bytes, depth),
            base,
        }
    }

    pub(crate) fn cbor<T>(&self, r: std::result::Result<T, DecodeError>) -> Result<T> {
        r.map_err(|e| cbor_error(e, self.base))
    }

    /// The error for an item of the wrong type: malformed CBOR is reported as such (it
    /// explains more than the type it happens to start with), else the type mismatch.
    fn mismatch(&mut self, what: &str, expected: &str, found: &str) -> Error {
        let start = self.c.position();
        match self.c.skip(0) {
            Err(e) => cbor_error(e, self.base),
            Ok(()) => err!(
                Format,
                "{what} must be {expected}, not {found} (file offset {})",
                self.base + start as u64
            ),
        }
    }

    /// A map's length, or a Format error naming `what`.
    pub(crate) fn map(&mut self, depth: usize, what: &str) -> Result<Len> {
        let found = self.c.peek_type();
        let r = self.c.map(depth);
        match self.cbor(r)? {
            Some(len) => Ok(len),
            None => Err(self.mismatch(what, "a map", found)),
        }
    }

    /// An array's length, or a Format error naming `what`.
    pub(crate) fn array(&mut self, depth: usize, what: &str) -> Result<Len> {
        let found = self.c.peek_type();
        let r = self.c.array(depth);
        match self.cbor(r)? {
            Some(len) => Ok(len),
            None => Err(self.mismatch(what, "an array", found)),
        }
    }

    pub(crate) fn more(&mut self, len: &mut Len) -> Result<bool> {
        let r = self.c.more(len);
        self.cbor(r)
    }

    /// The next map key when it is text; a non-text key (and its value) is skipped and
    /// reported as None.
    pub(crate) fn key(
        &mut self,
        depth: usize,
        seen: &mut HashSet<Cow<'a, str>>,
        what: &str,
    ) -> Result<Option<Cow<'a, str>>> {
        let r = self.c.text();
        match self.cbor(r)? {
            Some(k) => {
                if !seen.insert(k.clone()) {
                    bail!(Format, "{what} has the key '{k}' more than once");
                }
                Ok(Some(k))
            }
            None => {
                self.skip(depth)?;
                self.skip(depth)?;
                Ok(None)
            }
        }
    }

    pub(crate) fn skip(&mut self, depth: usize) -> Result<()> {
        let r = self.c.skip(depth);
        self.cbor(r)
    }

    pub(crate) fn text(&mut self, what: &str) -> Result<Cow<'a, str>> {
        let found = self.c.peek_type();
        let r = self.c.text();
        match self.cbor(r)? {
            Some(t) => Ok(t),
            None => Err(self.mismatch(what, "text", found)),
        }
    }

    pub(crate) fn uint(&mut self, what: &str) -> Result<u64> {
        let found = self.c.peek_type();
        let r = self.c.unsigned();
        match self.cbor(r)? {
            Some(n) => Ok(n),
            None => Err(self.mismatch(what, "an unsigned integer", found)),
        }
    }

    /// Text, or None for null / undefined.
    pub(crate) fn optional_text(&mut self, what: &str) -> Result<Option<Cow<'a, str>>> {
        if self.c.take_null() {
            Ok(None)
        } else {
            self.text(what).map(Some)
        }
    }

    /// Attributes: null means none; anything else must be a map, kept as its bytes.
    pub(crate) fn attributes(&mut self, depth: usize, what: &str) -> Result<Option<Attributes>> {
        if self.c.take_null() {
            return Ok(None);
        }
        let found = self.c.peek_type();
        if found != "map" {
            return Err(self.mismatch(&format!("{what} attributes"), "a map", found));
        }
        let r = self.c.capture(depth);
        Ok(Some(Attributes::from_cbor(self.cbor(r)?)))
    }

    /// Captures the next item as bytes (validated), for parsing later.
    pub(crate) fn capture(&mut self, depth: usize) -> Result<&'a [u8]> {
        let r = self.c.capture(depth);
        self.cbor(r)
    }

    /// A shape array, bounded by the rank limit.
    pub(crate) fn shape(&mut self, depth: usize, limits: &Limits) -> Result<Vec<u64>> {
        let mut len = self.array(depth, "shape")?;
        if let Len::Definite(n) = len
            && n > limits.max_rank as u64
        {
            bail!(
                Limit,
                "shape has {n} dimensions, over the limit of {}",
                limits.max_rank
            );
        }
        let mut dims = Vec::new();
        while self.more(&mut len)? {
            if dims.len() == limits.max_rank {
                bail!(
                    Limit,
                    "shape has more than {} dimensions, the limit",
                    limits.max_rank
                );
            }
            dims.push(self.uint("a shape dimension")?);
        }
        Ok(dims)
    }

    /// A sub-parser over bytes captured earlier at `offset` within this manifest.
    fn sub(&self, bytes: &'a [u8], offset: usize, limits: &Limits) -> Parser<'a> {
        Parser::new(bytes, self.base + offset as u64, limits)
    }
}

/// Parses a v1.x manifest (whose bytes start at file offset `base`) into a model, not
/// yet validated against the file.
pub(crate) fn parse(bytes: &[u8], base: u64, limits: &Limits) -> Result<Model> {
    let mut p = Parser::new(bytes, base, limits);
    let mut len = p.map(0, "the manifest")?;
    let mut seen = HashSet::new();
    let (mut version, mut attributes, mut objects) = (None, None, None);
    while p.more(&mut len)? {
        let Some(key) = p.key(1, &mut seen, "the manifest")? else {
            continue;
        };
        match key.as_ref() {
            "version" => version = Some(p.text("version")?),
            "attributes" => attributes = p.attributes(1, "file")?,
            "objects" => {
                let at = p.c.position();
                objects = Some((p.capture(1)?, at));
            }
            _ => p.skip(1)?,
        }
    }
    let r = p.c.finish();
    p.cbor(r)?;
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
    let derive_missing_length = minor < 2;
    let (objects_bytes, at) =
        objects.ok_or_else(|| err!(Format, "the manifest lacks the required key 'objects'"))?;
    let mut op = p.sub(objects_bytes, at, limits);
    let mut len = op.map(1, "objects")?;
    let mut list = Vec::new();
    while op.more(&mut len)? {
        let name = op.text("an object name")?;
        let name_c = check_name("object", &name, limits.max_name_length)?;
        let object = parse_object(&mut op, name_c, limits, derive_missing_length)
            .map_err(|e| e.context(format!("object '{name}'")))?;
        list.push(object);
    }
    Model::new(&version, attributes, list)
}

fn parse_object(
    p: &mut Parser<'_>,
    name: CText,
    limits: &Limits,
    derive_missing_length: bool,
) -> Result<Object> {
    let mut len = p.map(2, "an object")?;
    let mut seen = HashSet::new();
    let (mut shape, mut format, mut attributes, mut components) = (None, None, None, None);
    while p.more(&mut len)? {
        let Some(key) = p.key(3, &mut seen, "the object")? else {
            continue;
        };
        match key.as_ref() {
            "shape" => shape = Some(p.shape(3, limits)?),
            "format" => format = Some(p.text("format")?),
            "attributes" => attributes = p.attributes(3, "object")?,
            "components" => {
                let at = p.c.position();
                components = Some((p.capture(3)?, at));
            }
            _ => p.skip(3)?,
        }
    }
    let missing = |k: &str| err!(Format, "an object lacks the required key '{k}'");
    let shape = shape.ok_or_else(|| missing("shape"))?;
    let format = format.ok_or_else(|| missing("format"))?;
    if format.is_empty() {
        bail!(Format, "format is empty");
    }
    let (bytes, at) = components.ok_or_else(|| missing("components"))?;
    let mut cp = p.sub(bytes, at, limits);
    let mut len = cp.map(3, "components")?;
    let mut list: Vec<Component> = Vec::new();
    while cp.more(&mut len)? {
        let role = cp.text("a component role")?;
        let role_c = check_name("component", &role, limits.max_name_length)?;
        if list.iter().any(|c| c.role() == role) {
            bail!(Format, "duplicate component role '{role}'");
        }
        let dense_shape = (derive_missing_length && format == "dense" && role == "data")
            .then_some(shape.as_slice());
        let c = parse_component(&mut cp, role_c, dense_shape)
            .map_err(|e| e.context(format!("component '{role}'")))?;
        list.push(c);
    }
    Ok(Object {
        name,
        format: CText::new(&format)?,
        shape,
        attributes,
        components: list,
    })
}

/// `dense_shape` is the object's shape when this is a v1.1 dense object's data: a zstd
/// component without `uncompressed_length` then takes its decoded size from the shape.
fn parse_component(
    p: &mut Parser<'_>,
    role: CText,
    dense_shape: Option<&[u64]>,
) -> Result<Component> {
    let mut len = p.map(4, "a component")?;
    let mut seen = HashSet::new();
    let (mut dtype_name, mut ty, mut offset, mut length, mut encoding, mut stated, mut digest) =
        (None, None, None, None, None, None, None);
    while p.more(&mut len)? {
        let Some(key) = p.key(5, &mut seen, "the component")? else {
            continue;
        };
        match key.as_ref() {
            "dtype" => dtype_name = Some(p.text("dtype")?),
            "type" => ty = p.optional_text("type")?,
            "offset" => offset = Some(p.uint("offset")?),
            "length" => length = Some(p.uint("length")?),
            "encoding" => encoding = p.optional_text("encoding")?,
            "uncompressed_length" => {
                stated = if p.c.take_null() {
                    None
                } else {
                    Some(p.uint("uncompressed_length")?)
                }
            }
            "digest" => digest = p.optional_text("digest")?,
            _ => p.skip(5)?,
        }
    }
    let missing = |k: &str| err!(Format, "a component lacks the required key '{k}'");
    let dtype_name = dtype_name.ok_or_else(|| missing("dtype"))?;
    let (dtype, implied_type) =
        parse_v11_dtype(&dtype_name).ok_or_else(|| err!(Format, "unknown dtype '{dtype_name}'"))?;
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
    let offset = offset.ok_or_else(|| missing("offset"))?;
    let length = length.ok_or_else(|| missing("length"))?;
    let encoding = match encoding.as_deref() {
        None | Some("raw") => Encoding::Raw,
        Some("zstd") => Encoding::Zstd,
        Some(other) => bail!(Unsupported, "encoding '{other}' is not supported"),
    };
    let decoded_length = match (encoding, stated) {
        (Encoding::Raw, Some(n)) if n != length => {
            bail!(Format, "raw component of length {length} states uncompressed_length {n}")
        }
        (Encoding::Raw, _) => length,
        (Encoding::Zstd, Some(n)) => n,
        (Encoding::Zstd, None) => dense_shape
            .and_then(|s| dense_byte_size(s, dtype, logical_type.as_deref()))
            .ok_or_else(|| err!(Format, "zstd component lacks uncompressed_length (required since v1.2; v1.1 dense data takes it from the shape)"))?,
    };
    let digest = match digest {
        Some(d) => {
            check_digest_syntax(&d)?;
            Some(CText::new(&d)?)
        }
        None => None,
    };
    Ok(Component {
        role,
        dtype,
        logical_type: logical_type.as_deref().map(CText::new).transpose()?,
        blob: Blob {
            offset,
            length,
            encoding,
            decoded_length,
        },
        decoded_length,
        digest,
        transform: Transform::None,
    })
}

/// Appends CBOR for the manifest, byte by byte, in the reference writer's key order with
/// defaults omitted.
struct Out(Vec<u8>);

impl Out {
    fn head(&mut self, major: u8, n: u64) {
        crate::cbor::encode_head(&mut self.0, major, n);
    }
    fn text(&mut self, s: &str) {
        self.head(3, s.len() as u64);
        self.0.extend_from_slice(s.as_bytes());
    }
    fn uint(&mut self, n: u64) {
        self.head(0, n);
    }
}

fn encode_component(out: &mut Out, c: &Component) {
    let zstd = c.blob.encoding == Encoding::Zstd;
    let fields = 3 + c.logical_type.is_some() as u64 + 2 * zstd as u64 + c.digest.is_some() as u64;
    out.head(5, fields);
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

fn encode_object(out: &mut Out, o: &Object) {
    out.head(5, 3 + o.attributes.is_some() as u64);
    out.text("shape");
    out.head(4, o.shape.len() as u64);
    o.shape.iter().for_each(|&d| out.uint(d));
    out.text("format");
    out.text(o.format());
    if let Some(a) = &o.attributes {
        out.text("attributes");
        out.0.extend_from_slice(a.as_cbor());
    }
    out.text("components");
    out.head(5, o.components.len() as u64);
    for c in &o.components {
        out.text(c.role());
        encode_component(out, c);
    }
}

/// The whole manifest as written by this library (version 1.2.0).
pub(crate) fn encode(attributes: Option<&Attributes>, objects: &[Object]) -> Vec<u8> {
    let mut out = Out(Vec::new());
    out.head(5, 2 + attributes.is_some() as u64);
    out.text("version");
    out.text(WRITE_VERSION);
    if let Some(a) = attributes {
        out.text("attributes");
        out.0.extend_from_slice(a.as_cbor());
    }
    out.text("objects");
    out.head(5, objects.len() as u64);
    for o in objects {
        out.text(o.name());
        encode_object(&mut out, o);
    }
    out.0
}
