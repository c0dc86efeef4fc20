//! The v2 vocabulary (L2) as this library reads and writes it: the 12 storage types, the
//! registered logical types (Appendix A), the layout profiles (`dense` §5.1,
//! `zt.sparse_csr/1`, `zt.sparse_coo/1`, `zt.quant_group/1`, `zt.mx/1`, the
//! `gguf.<type>/1` family) with their metadata rules, the encoding profile
//! `zt.zstd-seekable/1`, and the mapping between v2 parts and our components, both ways.
//!
//! The mapping is the identity except where our model has a name of its own for the same
//! thing: a `u8` part of logical type `bool` is a component of dtype `bool`; the `data`
//! part of a `gguf.<type>/1` object whose ggml type this build knows carries the logical
//! type `ggml_<type>` (what makes `quant_info` and dequantizing reads work, as for GGUF
//! files). Writing reverses both, and also spells our other names the v2 way: objects of
//! format `sparse_csr` and `sparse_coo` are `zt.sparse_csr/1` and `zt.sparse_coo/1`,
//! `ggml_<type>` objects (from GGUF files) are `gguf.<type>/1`, and the logical types
//! `f8_e8m0fnu` and `f4_e2m1fn_x2` are `f8_e8m0` and `f4_e2m1`.

use std::borrow::Cow;
use std::sync::Arc;

use crate::dtype::DType;
use crate::error::{Result, bail};
use crate::model::{Component, Encoding, FormatStep, Step};
use crate::value::cbor::Value;

use super::{Rule, refuse, reject};

/// The encoding profile id of zstd seekable streams.
pub(crate) const ZSTD_SEEKABLE: &str = "zt.zstd-seekable/1";

/// A part as the manifest states it (names borrowed from the manifest).
#[derive(Clone, Debug)]
pub(crate) struct Part<'a> {
    pub(crate) name: Cow<'a, str>,
    /// One of the 12 storage types (never `Bool`).
    pub(crate) dtype: DType,
    pub(crate) logical: Option<Cow<'a, str>>,
    /// 0 for this file, else 1 + the shard's index in the sorted shard table.
    pub(crate) file: u32,
    pub(crate) shard: Option<Cow<'a, str>>,
    pub(crate) offset: u64,
    pub(crate) length: u64,
    pub(crate) encoding: Option<Cow<'a, str>>,
    pub(crate) decoded_length: Option<u64>,
    pub(crate) digest: Option<Cow<'a, str>>,
}

impl Part<'_> {
    /// Bytes after decoding: the blob's length when raw.
    pub(crate) fn decoded_size(&self) -> u64 {
        match self.encoding {
            None => self.length,
            Some(_) => self.decoded_length.unwrap_or(0),
        }
    }
}

/// A v2 storage type by name: the 12 primitives (our `bool` is a logical type there).
pub(crate) fn storage_dtype(name: &str) -> Option<DType> {
    DType::from_name(name).filter(|&d| d != DType::Bool)
}

/// The storage type a registered logical type requires; None for an unregistered one.
pub(crate) fn pinned_dtype(logical: &str) -> Option<DType> {
    Some(match logical {
        "bool" | "f8_e4m3fn" | "f8_e5m2" | "f8_e4m3fnuz" | "f8_e5m2fnuz" | "f8_e8m0"
        | "f4_e2m1" => DType::U8,
        "complex64" => DType::F32,
        "complex128" => DType::F64,
        _ => return None,
    })
}

/// The decoded size of `n` elements of `dtype` seen through `logical` (Appendix A): None
/// for an unregistered logical type (its size is unknown, so it stays structural),
/// `Some(None)` when the size overflows u64.
pub(crate) fn size_of(logical: Option<&str>, dtype: DType, n: u64) -> Option<Option<u64>> {
    let width = dtype.size() as u64;
    Some(match logical {
        None => n.checked_mul(width),
        Some("f4_e2m1") => Some(n.div_ceil(2)),
        Some("complex64" | "complex128") => n.checked_mul(2 * width),
        Some(t) if pinned_dtype(t).is_some() => Some(n),
        Some(_) => return None,
    })
}

/// The element count of a shape as v2 computes it (the product; `check_layout` checked
/// that it doesn't overflow).
fn elements(shape: &[u64]) -> u64 {
    shape.iter().product()
}

/// §3.3: the product of the dimensions doesn't overflow as it is accumulated (so a shape
/// like [2^40, 2^40, 0] is refused, as the reference reader refuses it).
pub(crate) fn check_shape_product(shape: &[u64]) -> Result<()> {
    if shape
        .iter()
        .try_fold(1u64, |acc, &d| acc.checked_mul(d))
        .is_none()
    {
        refuse!(Shape, "the product of shape {shape:?} overflows u64");
    }
    Ok(())
}

/// Checks an object's parts and attributes against its layout profile, for the layouts
/// this library interprets; any other layout is structural (§5.2) and passes.
pub(crate) fn check_layout(
    layout: &str,
    shape: &[u64],
    attributes: Option<&[u8]>,
    parts: &[Part<'_>],
) -> Result<()> {
    // The reader checked the shape as it parsed it; a writer's object is checked here.
    check_shape_product(shape)?;
    let attrs = || -> Value {
        attributes.map_or(Value::Map(Vec::new()), |a| {
            crate::value::cbor::decode(a, crate::limits::MAX_CBOR_DEPTH).unwrap_or(Value::Null)
        })
    };
    match layout {
        "dense" => check_dense(shape, parts),
        "zt.sparse_csr/1" => check_csr(shape, parts),
        "zt.sparse_coo/1" => check_coo(shape, parts),
        "zt.quant_group/1" => check_quant_group(shape, &attrs(), parts),
        "zt.mx/1" => check_mx(shape, &attrs(), parts),
        _ => match gguf_type(layout) {
            Some(t) => check_gguf(t, shape, &attrs(), parts),
            None => Ok(()),
        },
    }
}

/// The ggml type name of a `gguf.<type>/1` layout.
pub(crate) fn gguf_type(layout: &str) -> Option<&str> {
    layout
        .strip_prefix("gguf.")?
        .strip_suffix("/1")
        .filter(|t| !t.is_empty())
}

/// Exactly the parts `roles` (sorted, as parts are), or a layout-rule error naming
/// `layout`.
fn exact<'p, 'a, const N: usize>(
    layout: &str,
    parts: &'p [Part<'a>],
    roles: [&str; N],
) -> Result<[&'p Part<'a>; N]> {
    debug_assert!(roles.is_sorted(), "roles in part order");
    if parts.len() != N || parts.iter().zip(roles).any(|(p, r)| *p.name != *r) {
        let have: Vec<&str> = parts.iter().map(|p| &*p.name).collect();
        refuse!(
            LayoutRule,
            "{layout} needs exactly the parts {roles:?}, not {have:?}"
        );
    }
    Ok(std::array::from_fn(|i| &parts[i]))
}

/// `decoded_size(part)` must be `expected` (when the type's size is known).
/// `what` names the expected size for the message (built only on a refusal).
fn check_size(
    layout: &str,
    p: &Part<'_>,
    expected: Option<Option<u64>>,
    what: impl FnOnce() -> String,
) -> Result<()> {
    let rule = if layout == "dense" {
        Rule::DenseSize
    } else {
        Rule::LayoutRule
    };
    match expected {
        None => Ok(()),
        Some(None) => Err(reject(
            rule,
            format_args!("part '{}': the size of {} overflows u64", p.name, what()),
        )),
        Some(Some(n)) if n != p.decoded_size() => Err(reject(
            rule,
            format_args!(
                "part '{}' decodes to {} bytes, but {} take {n}",
                p.name,
                p.decoded_size(),
                what()
            ),
        )),
        Some(Some(_)) => Ok(()),
    }
}

fn type_text(p: &Part<'_>) -> String {
    match &p.logical {
        Some(t) => format!("{} ({t})", p.dtype.name()),
        None => p.dtype.name().to_string(),
    }
}

fn check_dense(shape: &[u64], parts: &[Part<'_>]) -> Result<()> {
    let [data] = exact("dense", parts, ["data"])?;
    let n = elements(shape);
    let expected = size_of(data.logical.as_deref(), data.dtype, n);
    check_size("dense", data, expected, || {
        format!("{n} elements of {}", type_text(data))
    })
}

/// An index part: plain u32 or u64. Its element width.
fn index_part(layout: &str, p: &Part<'_>) -> Result<u64> {
    if !matches!(p.dtype, DType::U32 | DType::U64) || p.logical.is_some() {
        refuse!(
            LayoutRule,
            "{layout}: part '{}' holds indices: plain u32 or u64, not {}",
            p.name,
            type_text(p)
        );
    }
    Ok(p.dtype.size() as u64)
}

fn check_csr(shape: &[u64], parts: &[Part<'_>]) -> Result<()> {
    const L: &str = "zt.sparse_csr/1";
    let &[rows, _cols] = shape else {
        refuse!(LayoutRule, "{L} needs a rank-2 shape, not {shape:?}");
    };
    let [indices, indptr, values] = exact(L, parts, ["indices", "indptr", "values"])?;
    let w = index_part(L, indices)?;
    index_part(L, indptr)?;
    if indptr.dtype != indices.dtype {
        refuse!(
            LayoutRule,
            "{L}: 'indptr' is {}, but 'indices' is {}",
            indptr.dtype.name(),
            indices.dtype.name()
        );
    }
    let expected = rows.checked_add(1).and_then(|r| r.checked_mul(w));
    check_size(L, indptr, Some(expected), || {
        format!("{rows} + 1 row pointers")
    })?;
    if indices.decoded_size() % w != 0 {
        refuse!(
            LayoutRule,
            "{L}: 'indices' decodes to {} bytes, not whole {w}-byte indices",
            indices.decoded_size()
        );
    }
    check_values_size(L, values, indices.decoded_size() / w)
}

/// A sparse layout's `values` part holds `nnz` values of its type.
fn check_values_size(layout: &str, values: &Part<'_>, nnz: u64) -> Result<()> {
    let expected = size_of(values.logical.as_deref(), values.dtype, nnz);
    check_size(layout, values, expected, || {
        format!("{nnz} values of {}", type_text(values))
    })
}

fn check_coo(shape: &[u64], parts: &[Part<'_>]) -> Result<()> {
    const L: &str = "zt.sparse_coo/1";
    if shape.is_empty() {
        refuse!(LayoutRule, "{L} needs a rank of at least 1");
    }
    let [coords, values] = exact(L, parts, ["coords", "values"])?;
    let w = index_part(L, coords)?;
    let unit = w * shape.len() as u64;
    if coords.decoded_size() % unit != 0 {
        refuse!(
            LayoutRule,
            "{L}: 'coords' decodes to {} bytes, not whole sets of {} {w}-byte coordinates",
            coords.decoded_size(),
            shape.len()
        );
    }
    check_values_size(L, values, coords.decoded_size() / unit)
}

/// An attribute of a layout profile, or a layout-rule error naming it.
fn attr<'v>(layout: &str, attrs: &'v Value, key: &str) -> Result<&'v Value> {
    attrs.get(key).ok_or_else(|| {
        reject(
            Rule::LayoutRule,
            format_args!("{layout} needs the attribute '{key}'"),
        )
    })
}

fn attr_uint(layout: &str, attrs: &Value, key: &str) -> Result<u64> {
    attr(layout, attrs, key)?.as_u64().ok_or_else(|| {
        reject(
            Rule::LayoutRule,
            format_args!("{layout}: attribute '{key}' must be an unsigned integer"),
        )
    })
}

fn attr_text<'v>(layout: &str, attrs: &'v Value, key: &str) -> Result<&'v str> {
    attr(layout, attrs, key)?.as_text().ok_or_else(|| {
        reject(
            Rule::LayoutRule,
            format_args!("{layout}: attribute '{key}' must be text"),
        )
    })
}

/// The storage word of `zt.quant_group/1`'s packing, by name.
fn word_dtype(name: &str) -> Option<DType> {
    Some(match name {
        "u8" => DType::U8,
        "u16" => DType::U16,
        "u32" => DType::U32,
        "u64" => DType::U64,
        _ => return None,
    })
}

/// The unsigned type of the same width as an integer type.
fn unsigned_of(d: DType) -> Option<DType> {
    Some(match d {
        DType::U8 | DType::I8 => DType::U8,
        DType::U16 | DType::I16 => DType::U16,
        DType::U32 | DType::I32 => DType::U32,
        DType::U64 | DType::I64 => DType::U64,
        _ => return None,
    })
}

const QUANT_GROUP: &str = "zt.quant_group/1";

fn check_quant_group(shape: &[u64], attrs: &Value, parts: &[Part<'_>]) -> Result<()> {
    const L: &str = QUANT_GROUP;
    let bits = attr_uint(L, attrs, "bits")?;
    let group_size = attr_uint(L, attrs, "group_size")?;
    let axis = attr_uint(L, attrs, "axis")?;
    let packing = attr(L, attrs, "packing")?;
    let scale_form = attr_text(L, attrs, "scale_form")?;
    let zero_point = attr(L, attrs, "zero_point")?;
    if !packing.is_map() || !zero_point.is_map() {
        refuse!(LayoutRule, "{L}: 'packing' and 'zero_point' must be maps");
    }
    let word_name = attr_text(L, packing, "word")?;
    let order = attr_text(L, packing, "order")?;
    let per_word = attr_uint(L, packing, "per_word")?;
    let form = attr_text(L, zero_point, "form")?;
    let word = packing_word(word_name, order, bits, per_word)?;
    let (data, scales, zeros) = if zeros_in_a_part(form, zero_point)? {
        let [data, scales, zeros] = exact(L, parts, ["data", "scales", "zeros"])?;
        (data, scales, Some(zeros))
    } else {
        let [data, scales] = exact(L, parts, ["data", "scales"])?;
        (data, scales, None)
    };
    if data.logical.is_some() || unsigned_of(data.dtype) != Some(word) {
        refuse!(
            LayoutRule,
            "{L}: 'data' is {}, but the packing word is {word_name}",
            type_text(data)
        );
    }
    check_scales_type(scales, scale_form)?;
    let group = Grouping {
        axis,
        group_size,
        per_word,
        word: word.size() as u64,
    };
    let plain_zeros = zero_point.get("packing").and_then(Value::as_text) == Some("plain");
    check_quant_sizes(shape, &group, data, scales, zeros.map(|z| (z, plain_zeros)))
}

/// The packing word of `zt.quant_group/1`: its name, bit order, and `per_word` codes of
/// `bits` filling it.
fn packing_word(word_name: &str, order: &str, bits: u64, per_word: u64) -> Result<DType> {
    const L: &str = QUANT_GROUP;
    let Some(word) = word_dtype(word_name) else {
        refuse!(
            LayoutRule,
            "{L}: packing word '{word_name}' is not u8, u16, u32 or u64"
        );
    };
    if !matches!(order, "lsb_first" | "msb_first") {
        refuse!(
            LayoutRule,
            "{L}: packing order '{order}' is not lsb_first or msb_first"
        );
    }
    let word_bits = 8 * word.size() as u64;
    if ![2, 3, 4, 5, 6, 8].contains(&bits) || !word_bits.is_multiple_of(bits) {
        refuse!(
            LayoutRule,
            "{L}: {bits}-bit codes don't fill a {word_name} word (bits must be 2, 3, 4, 5, 6 or 8 and divide {word_bits})"
        );
    }
    if per_word != word_bits / bits {
        refuse!(
            LayoutRule,
            "{L}: per_word is {per_word}, but a {word_name} holds {} {bits}-bit codes",
            word_bits / bits
        );
    }
    Ok(word)
}

/// Whether `zt.quant_group/1`'s zero points (of `form`) are a part of their own.
fn zeros_in_a_part(form: &str, zero_point: &Value) -> Result<bool> {
    const L: &str = QUANT_GROUP;
    Ok(match form {
        "none" => false,
        "implied" => {
            if !matches!(
                zero_point.get("value"),
                Some(Value::Unsigned(_) | Value::Negative(_))
            ) {
                refuse!(
                    LayoutRule,
                    "{L}: zero_point form 'implied' needs an integer 'value'"
                );
            }
            false
        }
        "tensor" => {
            let how = attr_text(L, zero_point, "packing")?;
            if !matches!(how, "same_as_data" | "plain") {
                refuse!(
                    LayoutRule,
                    "{L}: zero_point packing '{how}' is not same_as_data or plain"
                );
            }
            true
        }
        other => refuse!(
            LayoutRule,
            "{L}: zero_point form '{other}' is not none, implied or tensor"
        ),
    })
}

/// The scales' type against `scale_form`.
fn check_scales_type(scales: &Part<'_>, scale_form: &str) -> Result<()> {
    const L: &str = QUANT_GROUP;
    let scales_ok = match scale_form {
        "f32_factors" | "f16_factors" => scales.dtype.is_float() && scales.logical.is_none(),
        "e8m0_exponent" => {
            scales.dtype == DType::U8 && scales.logical.as_deref() == Some("f8_e8m0")
        }
        other => refuse!(
            LayoutRule,
            "{L}: scale_form '{other}' is not one the profile defines"
        ),
    };
    if !scales_ok {
        refuse!(
            LayoutRule,
            "{L}: 'scales' is {}, which scale_form '{scale_form}' doesn't allow",
            type_text(scales)
        );
    }
    Ok(())
}

/// How `zt.quant_group/1` groups its codes: along `axis`, `group_size` at a time (0: the
/// whole axis), `per_word` codes in a packing word of `word` bytes.
struct Grouping {
    axis: u64,
    group_size: u64,
    per_word: u64,
    word: u64,
}

/// The sizes of the data, scales and zero points (with whether they are `plain`, one
/// element each, rather than packed as the data) of a `zt.quant_group/1` of `shape`.
fn check_quant_sizes(
    shape: &[u64],
    g: &Grouping,
    data: &Part<'_>,
    scales: &Part<'_>,
    zeros: Option<(&Part<'_>, bool)>,
) -> Result<()> {
    const L: &str = QUANT_GROUP;
    let Grouping {
        axis,
        group_size,
        per_word,
        word: w,
    } = *g;
    let rank = shape.len() as u64;
    if axis >= rank {
        refuse!(LayoutRule, "{L}: axis {axis} is not below the rank {rank}");
    }
    let along = shape[axis as usize];
    if group_size != 0 && !along.is_multiple_of(group_size) {
        refuse!(
            LayoutRule,
            "{L}: group_size {group_size} doesn't divide shape[{axis}] = {along}"
        );
    }
    let codes = elements(shape);
    let groups = along.checked_div(group_size).unwrap_or(along);
    let lanes = codes.checked_div(along).unwrap_or(0);
    check_size(L, data, Some(Some(codes / per_word * w)), || {
        format!("{codes} codes")
    })?;
    let cells = groups.checked_mul(lanes);
    let scale_bytes = cells.and_then(|c| c.checked_mul(scales.dtype.size() as u64));
    check_size(L, scales, Some(scale_bytes), || {
        format!("{groups} x {lanes} scales")
    })?;
    if let Some((zeros, plain)) = zeros {
        let expected = if plain {
            cells.and_then(|c| c.checked_mul(zeros.dtype.size() as u64))
        } else {
            cells.map(|c| c / per_word * w)
        };
        check_size(L, zeros, Some(expected), || {
            format!("{groups} x {lanes} zero points")
        })?;
    }
    Ok(())
}

fn check_mx(shape: &[u64], attrs: &Value, parts: &[Part<'_>]) -> Result<()> {
    const L: &str = "zt.mx/1";
    let [data, scales] = exact(L, parts, ["data", "scales"])?;
    if scales.dtype != DType::U8 || scales.logical.as_deref() != Some("f8_e8m0") {
        refuse!(
            LayoutRule,
            "{L}: 'scales' is {}, not u8 (f8_e8m0)",
            type_text(scales)
        );
    }
    let block = attr_uint(L, attrs, "block_size")?;
    let form = attr_text(L, attrs, "scale_form")?;
    if form != "e8m0_exponent" {
        refuse!(LayoutRule, "{L}: scale_form is '{form}', not e8m0_exponent");
    }
    if shape.is_empty() {
        refuse!(LayoutRule, "{L} needs a rank of at least 1");
    }
    let rank = shape.len() as u64;
    let axis = match attrs.get("axis") {
        None => rank - 1,
        Some(v) => v.as_u64().ok_or_else(|| {
            reject(
                Rule::LayoutRule,
                format_args!("{L}: 'axis' must be an unsigned integer"),
            )
        })?,
    };
    if axis >= rank {
        refuse!(LayoutRule, "{L}: axis {axis} is not below the rank {rank}");
    }
    let along = shape[axis as usize];
    if block < 2 || !along.is_multiple_of(block) {
        refuse!(
            LayoutRule,
            "{L}: block_size {block} must be at least 2 and divide shape[{axis}] = {along}"
        );
    }
    let known = match (data.logical.as_deref(), data.dtype) {
        (Some("f4_e2m1" | "f8_e4m3fn" | "f8_e5m2"), DType::U8) | (None, DType::I8) => true,
        (Some(t), _) if pinned_dtype(t).is_none() => false,
        _ => refuse!(
            LayoutRule,
            "{L}: 'data' is {}, not an MX element type",
            type_text(data)
        ),
    };
    let n = elements(shape);
    if known {
        let expected = size_of(data.logical.as_deref(), data.dtype, n);
        check_size(L, data, expected, || format!("{n} elements"))?;
    }
    check_size(L, scales, Some(Some(n / block)), || {
        format!("{} blocks", n / block)
    })
}

fn check_gguf(t: &str, shape: &[u64], attrs: &Value, parts: &[Part<'_>]) -> Result<()> {
    let layout = format!("gguf.{t}/1");
    let l = layout.as_str();
    let [data] = exact(l, parts, ["data"])?;
    if data.dtype != DType::U8 || data.logical.is_some() {
        refuse!(
            LayoutRule,
            "{l}: 'data' is {}, not plain u8 blocks",
            type_text(data)
        );
    }
    let epb = attr_uint(l, attrs, "elems_per_block")?;
    let block_bytes = attr_uint(l, attrs, "block_bytes")?;
    let n = elements(shape);
    if epb == 0 || block_bytes == 0 || !n.is_multiple_of(epb) {
        refuse!(
            LayoutRule,
            "{l}: elems_per_block {epb} and block_bytes {block_bytes} must be at least 1, and the first divide the {n} elements"
        );
    }
    if let Some(bt) = ggml_block_type(t)
        && (bt.block_size() != epb || bt.type_size() != block_bytes)
    {
        refuse!(
            LayoutRule,
            "{l}: ggml's {} blocks are {} elements in {} bytes, not {epb} in {block_bytes}",
            bt.name(),
            bt.block_size(),
            bt.type_size()
        );
    }
    let expected = (n / epb).checked_mul(block_bytes);
    check_size(l, data, Some(expected), || {
        format!("{} blocks of {block_bytes} bytes", n / epb)
    })
}

/// The ggml block type of a `gguf.<type>/1` layout, when this build knows it.
fn ggml_block_type(t: &str) -> Option<&'static crate::quant::BlockType> {
    crate::quant::BLOCK_TYPES
        .iter()
        .find(|b| b.logical_type().strip_prefix("ggml_") == Some(t))
}

/// The dtype and logical type of the component a part becomes (see the module's notes).
pub(crate) fn component_types<'a>(layout: &str, part: &Part<'a>) -> (DType, Option<Cow<'a, str>>) {
    match (part.dtype, part.logical.as_deref()) {
        (DType::U8, Some("bool")) => (DType::Bool, None),
        (DType::U8, None) => match gguf_type(layout).and_then(ggml_block_type) {
            Some(bt) if &*part.name == "data" => {
                (DType::U8, Some(Cow::Borrowed(bt.logical_type())))
            }
            _ => (DType::U8, None),
        },
        _ => (part.dtype, part.logical.clone()),
    }
}

/// The v2 dtype and logical type of a component of an object of `format`: what
/// `component_types` undoes.
pub(crate) fn part_types<'c>(format: &str, c: &'c Component) -> (DType, Option<&'c str>) {
    match (c.dtype(), c.logical_type()) {
        (DType::Bool, _) => (DType::U8, Some("bool")),
        (DType::U8, Some(t)) if t.starts_with("ggml_") && is_gguf_format(format) => {
            (DType::U8, None)
        }
        (d, Some("f8_e8m0fnu")) => (d, Some("f8_e8m0")),
        (d, Some("f4_e2m1fn_x2")) => (d, Some("f4_e2m1")),
        (d, t) => (d, t),
    }
}

fn is_gguf_format(format: &str) -> bool {
    gguf_type(format).is_some() || format.starts_with("ggml_")
}

/// The v2 layout id of an object of our `format`.
pub(crate) fn layout_of(format: &str) -> Cow<'_, str> {
    match format {
        "sparse_csr" => Cow::Borrowed("zt.sparse_csr/1"),
        "sparse_coo" => Cow::Borrowed("zt.sparse_coo/1"),
        f => match f.strip_prefix("ggml_") {
            Some(t) if ggml_block_type(t).is_some() => Cow::Owned(format!("gguf.{t}/1")),
            _ => Cow::Borrowed(f),
        },
    }
}

/// The attributes `gguf.<type>/1` requires, for an object of our format `ggml_<type>`.
pub(crate) fn gguf_attributes(format: &str) -> Option<Value> {
    let bt = ggml_block_type(format.strip_prefix("ggml_")?)?;
    let t = |s: &str| Value::Text(s.into());
    Some(Value::Map(vec![
        (t("block_bytes"), Value::Unsigned(bt.type_size())),
        (t("elems_per_block"), Value::Unsigned(bt.block_size())),
    ]))
}

/// A part's encoding, as the component's: `zt.zstd-seekable/1` is our zstd (frames with
/// a seek table, read a range at a time); any other is kept as a step that refuses to
/// decode (§5.3), its stored bytes still located and read structurally.
pub(crate) fn set_encoding(c: &mut Component, id: &str, decoded: u64, object: &str) -> Result<()> {
    if id == ZSTD_SEEKABLE {
        c.blob.encoding = Encoding::Zstd;
        c.blob.decoded_length = decoded;
        c.decoded_length = decoded;
        return Ok(());
    }
    c.blob.encoding = Encoding::Pipeline;
    c.decoded_length = decoded;
    c.steps = vec![Step::Format(Arc::new(UnknownEncoding {
        id: id.into(),
        object: object.into(),
        decoded,
    }))]
    .into();
    Ok(())
}

/// The step of a part stored under an encoding profile this library doesn't know.
#[derive(Debug)]
struct UnknownEncoding {
    id: Box<str>,
    object: Box<str>,
    decoded: u64,
}

impl FormatStep for UnknownEncoding {
    fn apply(&self, _input: &[u8], _out: &mut [u8]) -> Result<()> {
        bail!(
            Unsupported,
            "object '{}' is stored under the encoding '{}', which this library does not \
             decode (its stored bytes can still be located and read as they are)",
            self.object,
            self.id
        )
    }

    fn output_len(&self) -> u64 {
        self.decoded
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_follow_appendix_a() {
        assert_eq!(size_of(Some("f4_e2m1"), DType::U8, 5), Some(Some(3)));
        assert_eq!(size_of(Some("complex64"), DType::F32, 3), Some(Some(24)));
        assert_eq!(size_of(Some("complex128"), DType::F64, 3), Some(Some(48)));
        assert_eq!(size_of(Some("bool"), DType::U8, 7), Some(Some(7)));
        assert_eq!(size_of(None, DType::F64, u64::MAX), Some(None));
        assert_eq!(size_of(Some("x.future/1"), DType::U8, 7), None);
        assert_eq!(storage_dtype("bool"), None);
        assert_eq!(storage_dtype("bf16"), Some(DType::BF16));
        assert_eq!(pinned_dtype("complex64"), Some(DType::F32));
    }

    #[test]
    fn formats_map_to_layouts_and_back() {
        assert_eq!(layout_of("sparse_csr"), "zt.sparse_csr/1");
        assert_eq!(layout_of("ggml_q4_k"), "gguf.q4_k/1");
        assert_eq!(layout_of("quantized_group"), "quantized_group");
        assert_eq!(gguf_type("gguf.q8_0/1"), Some("q8_0"));
        assert_eq!(gguf_type("gguf.q8_0/2"), None);
        let a = gguf_attributes("ggml_q8_0").unwrap();
        assert_eq!(a.get("elems_per_block").and_then(Value::as_u64), Some(32));
        assert_eq!(a.get("block_bytes").and_then(Value::as_u64), Some(34));
    }
}
