//! ONNX models (`.onnx`): the weights a model keeps as its graph's initializers, read
//! through the protobuf wire format (`protobuf`) without a protobuf library: only
//! ModelProto's header fields, its graph, and the graph's initializers (TensorProto) are
//! read; nodes and everything else are stepped over.
//!
//! Choices:
//! - Each initializer is a "dense" object named as in the graph, with one "data"
//!   component. `raw_data` (always little-endian) is read in place: zero-copy when
//!   aligned to the element size (protobuf aligns nothing, so it is often a copy).
//!   Typed fields are decoded into the dtype's bytes on read (a copy), except a single
//!   packed run of `float_data`/`double_data` of f32/f64/complex, which is read in place.
//!   A typed field's value count is checked against the shape at open, from the field's
//!   length: exactly for `float_data` and `double_data` (4 and 8 bytes a value), as an
//!   upper bound for the varint fields (a value takes at least a byte), so a shape never
//!   commits more memory than its bytes can fill (8 bytes of output per byte of field at
//!   most); the exact count of a varint field is checked when it is decoded.
//! - External data (`data_location: EXTERNAL`): the file `location` names, relative to the
//!   model's directory, at `offset` for `length` bytes. Absolute paths, `..` and links
//!   that lead outside the model's directory are refused. The model must be opened by
//!   path (from memory or a descriptor there is no directory to look in). At most 65,536
//!   files, found in a hash map (linear in the initializers).
//! - dtypes: every ONNX type with a plain layout: FLOAT DOUBLE FLOAT16 BFLOAT16, the ints
//!   and uints, BOOL, COMPLEX64/128 (f32/f64 + complex logical type), the FLOAT8 types
//!   (u8 + fp8 logical type), FLOAT4E2M1 (u8 + `f4_e2m1fn_x2`), FLOAT6E2M3/E3M2 (u8 +
//!   `f6_*_x4`), INT4/UINT4 (u8 + `int4_x2`/`uint4_x2`) and INT2/UINT2 (u8 +
//!   `int2_x4`/`uint2_x4`): the sub-byte types packed low bits first as ONNX packs them,
//!   the last byte padded. STRING initializers, sparse initializers, and FLOAT4/FLOAT6
//!   tensors whose count doesn't fill whole bytes groups are not objects: their names are
//!   listed in the file attribute `onnx.unread_initializers` with the reason.
//! - File attributes: `onnx.ir_version`, `onnx.producer_name`, `onnx.producer_version`,
//!   `onnx.domain`, `onnx.model_version`, `onnx.opset_import` (domain to version) and the
//!   model's `metadata_props`, where present. The version reported is the IR version.

use std::collections::HashMap;
use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{Error, Result, bail, err};
use crate::formats::ReadAt;
use crate::formats::protobuf::{Fields, Wire, each_field, varint};
use crate::limits::Limits;
use crate::model::{
    Attributes, Blob, CText, Component, Components, Container, Encoding, FormatStep, Model, Object,
    Step, TextArena, check_name_text,
};
use crate::value::cbor::Value;

/// True for the first bytes of a ModelProto as the `onnx` package writes it:
/// `ir_version` (field 1, a small varint) first, then another ModelProto field, and the
/// bytes shown are well-formed fields as far as they go. (A safetensors header length
/// can start with the same three bytes; its zero bytes after them are no field.)
pub(crate) fn detect(head: &[u8]) -> bool {
    if head.len() < 4
        || head[0] != 0x08
        || !(1..=64).contains(&head[1])
        || !matches!(
            head[2],
            0x12 | 0x1a | 0x22 | 0x28 | 0x32 | 0x3a | 0x42 | 0x72 | 0xa2 | 0xca
        )
    {
        return false;
    }
    let mut at = 2;
    while at < head.len() {
        // A varint cut by the end of the bytes shown: nothing wrong so far.
        let Some((key, n)) = varint(&head[at..]) else {
            return true;
        };
        if key >> 3 == 0 {
            return false;
        }
        at += n;
        let skip = match key & 7 {
            0 => varint(&head[at..]).map(|(_, m)| m as u64),
            2 => varint(&head[at..]).map(|(len, m)| len.saturating_add(m as u64)),
            1 => Some(8),
            5 => Some(4),
            _ => return false,
        };
        match skip {
            Some(skip) => at = at.saturating_add(usize::try_from(skip).unwrap_or(usize::MAX)),
            None => return true,
        }
    }
    true
}

/// Longest text field read into an attribute.
const MAX_TEXT: u64 = 1 << 20;

/// The most files external data may be in.
const MAX_EXTERNAL: usize = 1 << 16;

/// How a dtype's values are laid out.
#[derive(Clone, Copy, Debug)]
struct Layout {
    dtype: DType,
    logical: Option<&'static str>,
    /// Bits per value (complex: per pair).
    bits: u64,
    /// The typed field that holds it without raw_data.
    field: u32,
}

fn layout(data_type: u64) -> std::result::Result<Layout, &'static str> {
    let l = |dtype, logical, bits, field| Layout {
        dtype,
        logical,
        bits,
        field,
    };
    use DType as D;
    Ok(match data_type {
        1 => l(D::F32, None, 32, 4),
        2 => l(D::U8, None, 8, 5),
        3 => l(D::I8, None, 8, 5),
        4 => l(D::U16, None, 16, 5),
        5 => l(D::I16, None, 16, 5),
        6 => l(D::I32, None, 32, 5),
        7 => l(D::I64, None, 64, 7),
        8 => return Err("STRING"),
        9 => l(D::Bool, None, 8, 5),
        10 => l(D::F16, None, 16, 5),
        11 => l(D::F64, None, 64, 10),
        12 => l(D::U32, None, 32, 11),
        13 => l(D::U64, None, 64, 11),
        14 => l(D::F32, Some("complex64"), 64, 4),
        15 => l(D::F64, Some("complex128"), 128, 10),
        16 => l(D::BF16, None, 16, 5),
        17 => l(D::U8, Some("f8_e4m3fn"), 8, 5),
        18 => l(D::U8, Some("f8_e4m3fnuz"), 8, 5),
        19 => l(D::U8, Some("f8_e5m2"), 8, 5),
        20 => l(D::U8, Some("f8_e5m2fnuz"), 8, 5),
        21 => l(D::U8, Some("uint4_x2"), 4, 5),
        22 => l(D::U8, Some("int4_x2"), 4, 5),
        23 => l(D::U8, Some("f4_e2m1fn_x2"), 4, 5),
        24 => l(D::U8, Some("f8_e8m0fnu"), 8, 5),
        25 => l(D::U8, Some("uint2_x4"), 2, 5),
        26 => l(D::U8, Some("int2_x4"), 2, 5),
        27 => l(D::U8, Some("f6_e2m3fn_x4"), 6, 5),
        28 => l(D::U8, Some("f6_e3m2fn_x4"), 6, 5),
        0 => return Err("UNDEFINED"),
        _ => return Err("an unknown data_type"),
    })
}

/// The bytes `n` values take: whole bytes, the last one padded.
fn byte_len(n: u64, bits: u64) -> Option<u64> {
    Some(n.checked_mul(bits)?.div_ceil(8))
}

pub(crate) fn parse(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<(Model, u64)> {
    let mut attrs: Vec<(Value, Value)> = Vec::new();
    let mut opsets: Vec<(Value, Value)> = Vec::new();
    let mut props: Vec<(Value, Value)> = Vec::new();
    let mut ir_version = None;
    let mut graph = None;
    let mut fields = Fields::new(read, 0, size);
    while let Some((n, w)) = fields.next_field()? {
        let key = match n {
            2 => "onnx.producer_name",
            3 => "onnx.producer_version",
            4 => "onnx.domain",
            6 => "onnx.doc_string",
            _ => "",
        };
        match (n, w) {
            (1, Wire::Varint(v)) => ir_version = Some(v),
            (5, Wire::Varint(v)) => attrs.push((text("onnx.model_version"), Value::Unsigned(v))),
            (2..=4 | 6, Wire::Bytes { at, len }) => {
                if let Some(s) = string(read, at, len)? {
                    attrs.push((text(key), Value::Text(s)));
                }
            }
            (7, Wire::Bytes { at, len }) => graph = Some((at, at + len)),
            (8, Wire::Bytes { at, len }) => opsets.push(opset(read, at, len)?),
            (14, Wire::Bytes { at, len }) => {
                if let Some(kv) = string_pair(read, at, len)? {
                    props.push(kv);
                }
            }
            _ => {}
        }
    }
    let Some(ir_version) = ir_version else {
        bail!(Format, "ONNX model without ir_version");
    };
    attrs.insert(0, (text("onnx.ir_version"), Value::Unsigned(ir_version)));
    if !opsets.is_empty() {
        attrs.push((text("onnx.opset_import"), Value::Map(opsets)));
    }
    attrs.extend(props);
    let mut state = Graph {
        read,
        limits,
        arena: TextArena::default(),
        objects: Vec::new(),
        unread: Vec::new(),
        external: Vec::new(),
        external_index: HashMap::new(),
        dense: CText::new("dense")?,
        data: CText::new("data")?,
    };
    if let Some((start, end)) = graph {
        state.graph(start, end)?;
    }
    let Graph {
        objects,
        unread,
        external,
        ..
    } = state;
    if !unread.is_empty() {
        let list = unread.into_iter().map(Value::Text).collect();
        attrs.push((text("onnx.unread_initializers"), Value::Array(list)));
    }
    let mut model = Model::new(
        Container::Onnx,
        super::UNALIGNED,
        &ir_version.to_string(),
        Some(Attributes::from_value(&Value::Map(attrs))),
        objects,
    )
    .map_err(|e| e.context("ONNX graph"))?;
    model.external = external.into_iter().map(String::into_boxed_str).collect();
    Ok((model, size))
}

fn text(s: &str) -> Value {
    Value::Text(s.to_owned())
}

/// An OperatorSetIdProto (domain 1, version 2), walked in the file (never read whole, so
/// a long one costs nothing but its fields); a domain over `MAX_TEXT` is refused.
fn opset(read: &ReadAt<'_>, at: u64, len: u64) -> Result<(Value, Value)> {
    let (mut domain, mut version) = (String::new(), 0u64);
    let mut fields = Fields::new(read, at, at + len);
    while let Some((n, w)) = fields.next_field()? {
        match (n, w) {
            (1, Wire::Bytes { at, len }) => match string(read, at, len)? {
                Some(s) => domain = s,
                None => bail!(
                    Limit,
                    "an opset_import domain of {len} bytes is over the {MAX_TEXT} bytes a \
                     text field of the model may take"
                ),
            },
            (2, Wire::Varint(v)) => version = v,
            _ => {}
        }
    }
    Ok((Value::Text(domain), Value::Unsigned(version)))
}

/// A text field, when short enough to keep.
fn string(read: &ReadAt<'_>, at: u64, len: u64) -> Result<Option<String>> {
    if len > MAX_TEXT {
        return Ok(None);
    }
    Ok(Some(String::from_utf8_lossy(&read(at, len)?).into_owned()))
}

/// A StringStringEntryProto (key 1, value 2).
fn string_pair(read: &ReadAt<'_>, at: u64, len: u64) -> Result<Option<(Value, Value)>> {
    if len > MAX_TEXT {
        return Ok(None);
    }
    let b = read(at, len)?;
    let (mut k, mut v) = (String::new(), String::new());
    each_field(&b, |n, w| {
        if let Wire::Bytes { at, len } = w {
            let s = String::from_utf8_lossy(&b[at as usize..(at + len) as usize]).into_owned();
            match n {
                1 => k = s,
                2 => v = s,
                _ => {}
            }
        }
        Ok(())
    })?;
    Ok(Some((Value::Text(k), Value::Text(v))))
}

/// The graph's initializers, as objects.
struct Graph<'a, 'r> {
    read: &'a ReadAt<'r>,
    limits: &'a Limits,
    arena: TextArena,
    objects: Vec<Object>,
    unread: Vec<String>,
    external: Vec<String>,
    /// Each external file's index in `external`.
    external_index: HashMap<String, u32>,
    dense: CText,
    data: CText,
}

/// A TensorProto's fields as read.
#[derive(Default)]
struct TensorFields {
    dims: Vec<u64>,
    data_type: Option<u64>,
    name: Option<String>,
    raw: Option<(u64, u64)>,
    /// Typed fields: (field, runs, first run, any unpacked value).
    typed: Option<(u32, u32, Wire)>,
    /// How many values the runs of the typed field hold: exactly for `float_data` and
    /// `double_data`, at most (a value per byte) for the varint fields.
    typed_values: u64,
    unpacked: bool,
    external: Vec<(String, String)>,
    location: u64,
    segment: bool,
}

impl Graph<'_, '_> {
    fn graph(&mut self, start: u64, end: u64) -> Result<()> {
        let mut fields = Fields::new(self.read, start, end);
        while let Some((n, w)) = fields.next_field()? {
            match (n, w) {
                (5, Wire::Bytes { at, len }) => self.initializer(at, at + len)?,
                (15, Wire::Bytes { at, len }) => {
                    let name = self.sparse_name(at, len)?;
                    self.unread.push(format!("{name} (sparse initializer)"));
                }
                _ => {}
            }
        }
        Ok(())
    }

    /// A SparseTensorProto's name: its `values` tensor's (field 1).
    fn sparse_name(&self, at: u64, len: u64) -> Result<String> {
        let mut fields = Fields::new(self.read, at, at + len);
        while let Some((n, w)) = fields.next_field()? {
            if let (1, Wire::Bytes { at, len }) = (n, w) {
                return Ok(self.tensor_fields(at, at + len)?.name.unwrap_or_default());
            }
        }
        Ok(String::new())
    }

    fn tensor_fields(&self, start: u64, end: u64) -> Result<TensorFields> {
        let mut t = TensorFields::default();
        let mut fields = Fields::new(self.read, start, end);
        while let Some((n, w)) = fields.next_field()? {
            match (n, w) {
                (1, Wire::Varint(d)) => push_dim(&mut t.dims, d, self.limits)?,
                (1, Wire::Bytes { at, len }) => {
                    // 64 dimensions of at most 10 bytes each (refused before the bytes
                    // are read, so a varint cut by the cap is never taken for a bad one).
                    if len > 64 * 10 + 10 {
                        bail!(Limit, "a tensor has more dimensions than the limit");
                    }
                    let b = (self.read)(at, len)?;
                    let mut rest = &b[..];
                    while !rest.is_empty() {
                        let (d, m) = varint(rest).ok_or_else(|| err!(Format, "a bad dimension"))?;
                        push_dim(&mut t.dims, d, self.limits)?;
                        rest = &rest[m..];
                    }
                }
                (2, Wire::Varint(v)) => t.data_type = Some(v),
                (3, _) => t.segment = true,
                (4 | 5 | 6 | 7 | 10 | 11, w) => {
                    if !matches!(w, Wire::Bytes { .. }) || n == 6 {
                        t.unpacked = true;
                    }
                    match &mut t.typed {
                        Some((field, runs, _)) if *field == n => *runs += 1,
                        Some(_) => {
                            t.unpacked = true;
                            continue;
                        }
                        None => t.typed = Some((n, 1, w)),
                    }
                    let held = match (n, w) {
                        (4, Wire::Bytes { len, .. }) if len % 4 != 0 => {
                            bail!(Format, "packed floats of {len} bytes")
                        }
                        (10, Wire::Bytes { len, .. }) if len % 8 != 0 => {
                            bail!(Format, "packed doubles of {len} bytes")
                        }
                        (4, Wire::Bytes { len, .. }) => len / 4,
                        (10, Wire::Bytes { len, .. }) => len / 8,
                        (_, Wire::Bytes { len, .. }) => len,
                        _ => 1,
                    };
                    t.typed_values = t.typed_values.saturating_add(held);
                }
                (8, Wire::Bytes { at, len }) => {
                    if len > self.limits.max_name_length as u64 {
                        bail!(
                            Limit,
                            "an initializer name of {len} bytes is over the name limit"
                        );
                    }
                    let b = (self.read)(at, len)?;
                    t.name = Some(
                        std::str::from_utf8(&b)
                            .map_err(|_| err!(Format, "an initializer name is not UTF-8"))?
                            .to_owned(),
                    );
                }
                (9, Wire::Bytes { at, len }) => t.raw = Some((at, len)),
                (13, Wire::Bytes { at, len }) => {
                    if let Some((Value::Text(k), Value::Text(v))) = string_pair(self.read, at, len)?
                    {
                        t.external.push((k, v));
                    }
                }
                (14, Wire::Varint(v)) => t.location = v,
                _ => {}
            }
        }
        Ok(t)
    }

    fn initializer(&mut self, start: u64, end: u64) -> Result<()> {
        let t = self.tensor_fields(start, end)?;
        let name = t.name.clone().unwrap_or_default();
        let ctx = |e: Error| e.context(format_args!("ONNX initializer '{name}'"));
        check_name_text("initializer", &name, self.limits.max_name_length).map_err(ctx)?;
        let data_type = t.data_type.unwrap_or(0);
        let l = match layout(data_type) {
            Ok(l) => l,
            Err(what @ "STRING") => {
                self.unread.push(format!("{name} ({what})"));
                return Ok(());
            }
            Err(what) => {
                return Err(ctx(err!(Unsupported, "data_type {data_type} ({what})")));
            }
        };
        let n = crate::dtype::numel(&t.dims).ok_or_else(|| ctx(err!(Format, "shape overflows")))?;
        let len = byte_len(n, l.bits).ok_or_else(|| ctx(err!(Format, "size overflows")))?;
        let whole = match l.logical {
            Some(x) if x.starts_with("f4") || x.starts_with("f6") => {
                crate::dtype::dense_byte_size(&t.dims, l.dtype, l.logical).is_some()
            }
            _ => true,
        };
        if !whole {
            self.unread
                .push(format!("{name} ({n} values do not fill whole bytes)"));
            return Ok(());
        }
        if t.segment {
            return Err(ctx(err!(Unsupported, "segmented tensors are not read")));
        }
        let (blob, steps) = self.data(&t, l, n, len, start, end).map_err(ctx)?;
        self.objects.push(Object {
            name: self.arena.text(&name).map_err(ctx)?,
            format: self.dense.clone(),
            shape: t.dims.into(),
            attributes: None,
            components: Components::One(Component {
                role: self.data.clone(),
                dtype: l.dtype,
                logical_type: l.logical.map(CText::new).transpose()?,
                blob,
                decoded_length: len,
                digest: None,
                steps: steps.into(),
            }),
        });
        Ok(())
    }

    /// Where an initializer's bytes are and how they decode.
    fn data(
        &mut self,
        t: &TensorFields,
        l: Layout,
        n: u64,
        len: u64,
        start: u64,
        end: u64,
    ) -> Result<(Blob, Vec<Step>)> {
        let raw = |file: u32, offset: u64, length: u64| Blob {
            file,
            offset,
            length,
            encoding: Encoding::Raw,
            decoded_length: length,
        };
        if t.location == 1 {
            return self.external_data(t, len).map(|b| (b, Vec::new()));
        }
        if let Some((at, stored)) = t.raw {
            if stored != len {
                bail!(
                    Format,
                    "raw_data holds {stored} bytes, but shape {:?} needs {len}",
                    t.dims
                );
            }
            return Ok((raw(0, at, len), Vec::new()));
        }
        let Some((field, runs, first)) = t.typed else {
            if n == 0 {
                return Ok((raw(0, start, 0), Vec::new()));
            }
            bail!(
                Format,
                "no raw_data, typed field or external data holds its {n} values"
            );
        };
        if field != l.field {
            bail!(
                Format,
                "its values are in field {field}, not field {} where data_type {} keeps them",
                l.field,
                t.data_type.unwrap_or(0)
            );
        }
        // One packed run of fixed-width floats is the bytes themselves.
        if let (false, 1, 4 | 10, Wire::Bytes { at, len: stored }) =
            (t.unpacked, runs, field, first)
            && stored == len
        {
            return Ok((raw(0, at, len), Vec::new()));
        }
        let values = if l.logical.is_some_and(|x| x.starts_with("complex")) {
            n.checked_mul(2)
                .ok_or_else(|| err!(Format, "{n} complex values overflow"))?
        } else if l.bits < 8 && l.bits != 6 {
            // Sub-byte types other than fp6 come packed, one byte per int32.
            len
        } else {
            n
        };
        // What the field holds, checked now (as a zstd blob's size is): a shape of 2^28
        // values over one value of int32_data is refused before a byte is committed.
        let exact = matches!(field, 4 | 10);
        if t.typed_values < values || (exact && t.typed_values != values) {
            bail!(
                Format,
                "field {field} holds {}{} values where its shape {:?} needs {values}",
                if exact { "" } else { "at most " },
                t.typed_values,
                t.dims
            );
        }
        let step = Typed {
            field,
            values,
            width: (l.dtype.size() as u64).min(if l.bits == 6 { 1 } else { 8 }) as u8,
            pack6: l.bits == 6,
            len,
        };
        Ok((
            raw(0, start, end - start),
            vec![Step::Format(Arc::new(step))],
        ))
    }

    fn external_data(&mut self, t: &TensorFields, len: u64) -> Result<Blob> {
        let get = |k: &str| {
            t.external
                .iter()
                .find(|(key, _)| key == k)
                .map(|(_, v)| v.as_str())
        };
        let Some(location) = get("location") else {
            bail!(Format, "external data without a location");
        };
        if let Err(why) = super::check_relative(location) {
            bail!(
                Format,
                "external data location {location:?} is {why}: it must name a file inside the model's directory"
            );
        }
        let number = |k: &str| -> Result<Option<u64>> {
            get(k)
                .map(|v| {
                    v.parse::<u64>()
                        .map_err(|_| err!(Format, "external data {k} {v:?} is not a number"))
                })
                .transpose()
        };
        let offset = number("offset")?.unwrap_or(0);
        let length = number("length")?.unwrap_or(len);
        if length != len {
            bail!(
                Format,
                "external data of {length} bytes, but shape {:?} needs {len}",
                t.dims
            );
        }
        let file = match self.external_index.get(location) {
            Some(&i) => i,
            None => {
                if self.external.len() >= MAX_EXTERNAL {
                    bail!(
                        Limit,
                        "external data in more than {MAX_EXTERNAL} files (the location \
                         {location:?} would be one more)"
                    );
                }
                let i = self.external.len() as u32;
                self.external.push(location.to_owned());
                self.external_index.insert(location.to_owned(), i);
                i
            }
        };
        Ok(Blob {
            file: file + 1,
            offset,
            length: len,
            encoding: Encoding::Raw,
            decoded_length: len,
        })
    }
}

fn push_dim(dims: &mut Vec<u64>, d: u64, limits: &Limits) -> Result<()> {
    if dims.len() >= limits.max_rank {
        bail!(
            Limit,
            "a tensor has more dimensions than the limit of {}",
            limits.max_rank
        );
    }
    if d > i64::MAX as u64 {
        bail!(Format, "a negative dimension");
    }
    dims.push(d);
    Ok(())
}

/// An initializer's typed field decoded into its dtype's little-endian bytes: `values`
/// values of field `field` (packed runs and single values, in order), each truncated to
/// `width` bytes; or, for fp6, packed four to three bytes.
#[derive(Debug)]
struct Typed {
    field: u32,
    values: u64,
    width: u8,
    pack6: bool,
    len: u64,
}

impl FormatStep for Typed {
    fn apply(&self, input: &[u8], out: &mut [u8]) -> Result<()> {
        let w = self.width as usize;
        let mut got = 0u64;
        let mut put = |v: u64, out: &mut [u8]| -> Result<()> {
            if got >= self.values {
                bail!(
                    Format,
                    "the typed field holds more than the {} values of its shape",
                    self.values
                );
            }
            if self.pack6 {
                let bit = got * 6;
                let (byte, shift) = ((bit / 8) as usize, bit % 8);
                let v = (v & 0x3f) << shift;
                out[byte] |= v as u8;
                if shift > 2 {
                    out[byte + 1] |= (v >> 8) as u8;
                }
            } else {
                let at = got as usize * w;
                out[at..at + w].copy_from_slice(&v.to_le_bytes()[..w]);
            }
            got += 1;
            Ok(())
        };
        // Every byte but fp6's is written once (a count short of the shape is an
        // error below); fp6 values are OR-ed into their bytes, which start at 0.
        if self.pack6 {
            out.fill(0);
        }
        each_field(input, |n, wire| {
            if n != self.field {
                return Ok(());
            }
            match wire {
                Wire::Varint(v) | Wire::Fixed64(v) => put(v, out),
                Wire::Fixed32(v) => put(v.into(), out),
                Wire::Bytes { at, len } => {
                    let mut b = &input[at as usize..(at + len) as usize];
                    match self.field {
                        4 => {
                            if !b.len().is_multiple_of(4) {
                                bail!(Format, "packed floats of {} bytes", b.len());
                            }
                            for c in b.chunks_exact(4) {
                                put(u32::from_le_bytes(c.try_into().expect("4")).into(), out)?;
                            }
                        }
                        10 => {
                            if !b.len().is_multiple_of(8) {
                                bail!(Format, "packed doubles of {} bytes", b.len());
                            }
                            for c in b.chunks_exact(8) {
                                put(u64::from_le_bytes(c.try_into().expect("8")), out)?;
                            }
                        }
                        _ => {
                            while !b.is_empty() {
                                let (v, m) = varint(b)
                                    .ok_or_else(|| err!(Format, "a packed varint is cut short"))?;
                                put(v, out)?;
                                b = &b[m..];
                            }
                        }
                    }
                    Ok(())
                }
            }
        })?;
        if got != self.values {
            bail!(
                Format,
                "the typed field holds {got} values where its shape needs {}",
                self.values
            );
        }
        Ok(())
    }
    fn output_len(&self) -> u64 {
        self.len
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every dtype ONNX initializers are read as has a logical type the model's
    /// validation knows, with the byte size this reader gives its values: so an
    /// initializer's shape times its element size is checked to be its length.
    #[test]
    fn validation_knows_every_layout() {
        for data_type in 0..=40 {
            let Ok(l) = layout(data_type) else { continue };
            if let Some(t) = l.logical {
                assert!(crate::dtype::logical_type_info(t).is_some(), "{t}");
            }
            for n in 0..=9u64 {
                if let Some(size) = crate::dtype::dense_byte_size(&[n], l.dtype, l.logical) {
                    assert_eq!(byte_len(n, l.bits), Some(size), "{data_type} {n}");
                } else {
                    // Only fp4 and fp6 counts that fill no whole group (listed unread).
                    assert!(
                        l.logical
                            .is_some_and(|t| t.starts_with("f4") || t.starts_with("f6"))
                    );
                }
            }
        }
    }

    #[test]
    fn detects_models_not_safetensors_lengths() {
        // ir_version 10, producer_name "pytorch" ...
        assert!(detect(b"\x08\x0a\x12\x07pytorch\x1a\x052.15"));
        assert!(detect(b"\x08\x08\x3a\xff\xff\x03\x0a\x01"));
        // A safetensors header of 0x123a08 bytes: the same first three bytes, then zeros.
        assert!(!detect(b"\x08\x3a\x12\x00\x00\x00\x00\x00{\"a\":{"));
        assert!(!detect(b"\x08\x05\x3a\x01\x00\x00\x00\x00{\"__me"));
        assert!(!detect(b"\x08\x0a\x13\x00"));
        // A length of nearly 2^64 (found by fuzzing: the skip overflowed).
        assert!(detect(
            b"\x08\x0a\x12\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01\x00\x00"
        ));
    }
}
