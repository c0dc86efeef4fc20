//! The v1.x manifest: CBOR value tree to model (v1.2 and v1.1 spellings), and model
//! entries to the CBOR the writer appends.

use crate::cbor::Value;
use crate::dtype::{check_logical_type, dense_byte_size, parse_v11_dtype};
use crate::error::{Result, bail, err};
use crate::limits::Limits;
use crate::model::{
    Blob, CText, Component, Encoding, Model, Object, Transform, check_digest_syntax, check_name, check_unique_keys,
};

/// The version string this library writes.
pub const WRITE_VERSION: &str = "1.2.0";

fn text<'v>(v: &'v Value, what: &str) -> Result<&'v str> {
    v.as_text().ok_or_else(|| err!(Format, "{what} must be text, not {}", v.type_name()))
}

fn uint(v: &Value, what: &str) -> Result<u64> {
    v.as_u64().ok_or_else(|| err!(Format, "{what} must be an unsigned integer, not {}", v.type_name()))
}

fn map<'v>(v: &'v Value, what: &str) -> Result<&'v [(Value, Value)]> {
    v.as_map().ok_or_else(|| err!(Format, "{what} must be a map, not {}", v.type_name()))
}

fn required<'v>(m: &'v Value, key: &str, what: &str) -> Result<&'v Value> {
    m.get(key).ok_or_else(|| err!(Format, "{what} lacks the required key '{key}'"))
}

/// Attributes: absent or null means none; anything else must be a map.
fn attributes(m: &Value, what: &str) -> Result<Option<Value>> {
    match m.get("attributes") {
        None | Some(Value::Null) => Ok(None),
        Some(v) => {
            map(v, &format!("{what} attributes"))?;
            Ok(Some(v.clone()))
        }
    }
}

/// Parses a shape array, bounded by the rank limit.
pub(crate) fn parse_shape(v: &Value, limits: &Limits) -> Result<Vec<u64>> {
    let dims = v.as_array().ok_or_else(|| err!(Format, "shape must be an array, not {}", v.type_name()))?;
    if dims.len() > limits.max_rank {
        bail!(Limit, "shape has {} dimensions, over the limit of {}", dims.len(), limits.max_rank);
    }
    dims.iter().map(|d| uint(d, "a shape dimension")).collect()
}

/// Turns a decoded v1.x manifest into a model (not yet validated against the file).
pub(crate) fn parse(root: &Value, limits: &Limits) -> Result<Model> {
    check_unique_keys(map(root, "the manifest")?, "the manifest")?;
    let version = text(required(root, "version", "the manifest")?, "version")?;
    let major = version.split('.').next().unwrap_or("");
    if major != "1" {
        bail!(Unsupported, "manifest version '{version}' is not a 1.x version this library reads");
    }
    // v1.2 made uncompressed_length required on zstd components; v1.1 writers may omit it.
    let minor: u64 = version.split('.').nth(1).and_then(|m| m.parse().ok()).unwrap_or(0);
    let derive_missing_length = minor < 2;
    let file_attributes = attributes(root, "file")?;
    let entries = map(required(root, "objects", "the manifest")?, "objects")?;
    let mut objects = Vec::with_capacity(entries.len());
    for (key, body) in entries {
        let name = text(key, "an object name")?;
        let name_c = check_name("object", name, limits.max_name_length)?;
        let object = parse_object(name_c, body, limits, derive_missing_length).map_err(|e| e.context(format!("object '{name}'")))?;
        objects.push(object);
    }
    Model::new(version, file_attributes, objects)
}

fn parse_object(name: CText, body: &Value, limits: &Limits, derive_missing_length: bool) -> Result<Object> {
    check_unique_keys(map(body, "an object")?, "the object")?;
    let shape = parse_shape(required(body, "shape", "an object")?, limits)?;
    let format = text(required(body, "format", "an object")?, "format")?;
    if format.is_empty() {
        bail!(Format, "format is empty");
    }
    let comps = map(required(body, "components", "an object")?, "components")?;
    let mut components: Vec<Component> = Vec::with_capacity(comps.len());
    for (key, cbody) in comps {
        let role = text(key, "a component role")?;
        let role_c = check_name("component", role, limits.max_name_length)?;
        if components.iter().any(|c| c.role() == role) {
            bail!(Format, "duplicate component role '{role}'");
        }
        let dense_data = derive_missing_length && format == "dense" && role == "data";
        let c = parse_component(role_c, cbody, dense_data.then_some(shape.as_slice()))
            .map_err(|e| e.context(format!("component '{role}'")))?;
        components.push(c);
    }
    Ok(Object {
        name,
        format: CText::new(format)?,
        shape,
        attributes: attributes(body, "object")?,
        components,
    })
}

/// `dense_shape` is the object's shape when this is a v1.1 dense object's data: a zstd
/// component without `uncompressed_length` then takes its decoded size from the shape.
fn parse_component(role: CText, body: &Value, dense_shape: Option<&[u64]>) -> Result<Component> {
    check_unique_keys(map(body, "a component")?, "the component")?;
    let dtype_name = text(required(body, "dtype", "a component")?, "dtype")?;
    let (dtype, implied_type) =
        parse_v11_dtype(dtype_name).ok_or_else(|| err!(Format, "unknown dtype '{dtype_name}'"))?;
    let logical_type = match body.get("type") {
        None | Some(Value::Null) => implied_type.map(str::to_owned),
        Some(v) => {
            let t = text(v, "type")?;
            if let Some(implied) = implied_type {
                if implied != t {
                    bail!(Format, "dtype '{dtype_name}' implies type '{implied}', but type is '{t}'");
                }
            }
            Some(t.to_owned())
        }
    };
    check_logical_type(dtype, logical_type.as_deref())?;
    let offset = uint(required(body, "offset", "a component")?, "offset")?;
    let length = uint(required(body, "length", "a component")?, "length")?;
    let encoding = match body.get("encoding") {
        None | Some(Value::Null) => Encoding::Raw,
        Some(v) => match text(v, "encoding")? {
            "raw" => Encoding::Raw,
            "zstd" => Encoding::Zstd,
            other => bail!(Unsupported, "encoding '{other}' is not supported"),
        },
    };
    let stated = match body.get("uncompressed_length") {
        None | Some(Value::Null) => None,
        Some(v) => Some(uint(v, "uncompressed_length")?),
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
    let digest = match body.get("digest") {
        None | Some(Value::Null) => None,
        Some(v) => {
            let d = text(v, "digest")?;
            check_digest_syntax(d)?;
            Some(CText::new(d)?)
        }
    };
    Ok(Component {
        role,
        dtype,
        logical_type: logical_type.as_deref().map(CText::new).transpose()?,
        blob: Blob { offset, length, encoding, decoded_length },
        decoded_length,
        digest,
        transform: Transform::None,
    })
}

fn key(k: &str) -> Value {
    Value::Text(k.to_owned())
}

/// The manifest entry of one component, keys in the reference writer's order, defaults omitted.
pub(crate) fn encode_component(c: &Component) -> Value {
    let mut m = vec![(key("dtype"), key(c.dtype.name()))];
    if let Some(t) = c.logical_type() {
        m.push((key("type"), key(t)));
    }
    m.push((key("offset"), Value::Unsigned(c.blob.offset)));
    m.push((key("length"), Value::Unsigned(c.blob.length)));
    if c.blob.encoding == Encoding::Zstd {
        m.push((key("uncompressed_length"), Value::Unsigned(c.decoded_length)));
        m.push((key("encoding"), key("zstd")));
    }
    if let Some(d) = c.digest() {
        m.push((key("digest"), key(d)));
    }
    Value::Map(m)
}

/// The manifest entry of one object.
pub(crate) fn encode_object(o: &Object) -> Value {
    let mut m = vec![
        (key("shape"), Value::Array(o.shape.iter().map(|&d| Value::Unsigned(d)).collect())),
        (key("format"), key(o.format())),
    ];
    if let Some(a) = &o.attributes {
        m.push((key("attributes"), a.clone()));
    }
    let comps = o.components.iter().map(|c| (key(c.role()), encode_component(c))).collect();
    m.push((key("components"), Value::Map(comps)));
    Value::Map(m)
}

/// The whole manifest as written by this library (version 1.2.0).
pub(crate) fn encode(attributes: Option<&Value>, objects: &[Object]) -> Vec<u8> {
    let mut root = vec![(key("version"), key(WRITE_VERSION))];
    if let Some(a) = attributes {
        root.push((key("attributes"), a.clone()));
    }
    let objs = objects.iter().map(|o| (key(o.name()), encode_object(o))).collect();
    root.push((key("objects"), Value::Map(objs)));
    crate::cbor::to_vec(&Value::Map(root))
}
