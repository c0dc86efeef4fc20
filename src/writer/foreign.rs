//! Writing safetensors and GGUF with the same writer that writes zTensor.
//!
//! Both formats put a header that lists every tensor's place before the data, so a file
//! can't be written front to back while tensors are still coming. The writer spools:
//! each tensor's bytes go, as they come, to the temporary file a path writer writes
//! anyway (no padding, no header); `finish` then writes the header to a second temporary
//! file beside it, copies the tensors into it in the format's order with the kernel's
//! `copy_file_range` (no user-space buffer; a 4 MiB one where the kernel can't), removes
//! the spool and names the result as a zTensor file is named (fsync, rename, directory
//! fsync unless not durable). Memory is the header's, whatever the data's size.
//!
//! - safetensors: tensors sorted as `safetensors` sorts them (its dtype enum's order,
//!   largest first, then name), no padding, the header JSON as serde_json writes it
//!   (`__metadata__` first) padded with spaces to a multiple of 8: the file is byte for
//!   byte what `safetensors.torch.save_file` / `safetensors.numpy.save_file` write for the
//!   same tensors and metadata (whose own `__metadata__` order is a hash map's: identical
//!   for one key; ours keeps the order the keys were set).
//! - GGUF v3: key/values in the order set, with their types (a typed attribute's width;
//!   plain CBOR as a typed read gives it back), tensor infos in the order the tensors were
//!   added (ggml's dimension order: the shape reversed), the data section aligned to
//!   `general.alignment` (32 without it) and every tensor padded to it, the last one
//!   included: what gguf-py's `GGUFWriter` writes for the same calls.

use std::fs::File;
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::path::Path;

use super::Writer;
use super::output::{Writeback, temp_name};
use crate::dtype::{DType, numel};
use crate::error::{Error, Result, bail, err};
use crate::formats::gguf::{
    T_ARRAY, T_BOOL, T_F32, T_F64, T_I8, T_I16, T_I32, T_I64, T_STRING, T_U8, T_U16, T_U32, T_U64,
};
use crate::model::{Attributes, Encoding, Object};
use crate::quant::{BLOCK_TYPES, BlockType};
use crate::value::typed::{TypedValue, ValueType};

/// The container a writer writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum OutputFormat {
    /// By the path's extension: `.safetensors` is safetensors, `.gguf` GGUF, anything
    /// else (and a writer into a stream) zTensor of `CreateOptions::version`.
    #[default]
    Auto,
    /// zTensor, of the version `CreateOptions::version` says.
    Ztensor,
    /// Hugging Face safetensors.
    Safetensors,
    /// ggml's GGUF v3.
    Gguf,
}

impl OutputFormat {
    /// The format a path's extension names (`Auto` resolved): `.safetensors`,
    /// `.gguf`, else zTensor.
    pub fn of_path(path: &Path) -> OutputFormat {
        match path.extension().and_then(|e| e.to_str()) {
            Some("safetensors") => OutputFormat::Safetensors,
            Some("gguf") => OutputFormat::Gguf,
            _ => OutputFormat::Ztensor,
        }
    }

    /// This format, `Auto` resolved for `path`.
    pub fn resolve(self, path: Option<&Path>) -> OutputFormat {
        match (self, path) {
            (OutputFormat::Auto, Some(p)) => OutputFormat::of_path(p),
            (OutputFormat::Auto, None) => OutputFormat::Ztensor,
            (f, _) => f,
        }
    }

    /// Its name in messages: "zTensor", "safetensors", "GGUF".
    pub fn name(self) -> &'static str {
        match self {
            OutputFormat::Auto => "the format of the path",
            OutputFormat::Ztensor => "zTensor",
            OutputFormat::Safetensors => "safetensors",
            OutputFormat::Gguf => "GGUF",
        }
    }

    /// A file's extension in this format (sets name their files with it).
    pub(super) fn extension(self) -> &'static str {
        match self {
            OutputFormat::Safetensors => "safetensors",
            OutputFormat::Gguf => "gguf",
            _ => "zt",
        }
    }

    /// Whether tensors are spooled and the file assembled at `finish`.
    pub(super) fn spools(self) -> bool {
        matches!(self, OutputFormat::Safetensors | OutputFormat::Gguf)
    }
}

/// safetensors' dtype names in the order of its `Dtype` enum, which is the order it
/// sorts tensors by (descending): what the enum says, not an alignment computed.
const ST_ORDER: [&str; 22] = [
    "BOOL",
    "F4",
    "F6_E2M3",
    "F6_E3M2",
    "U8",
    "I8",
    "F8_E5M2",
    "F8_E4M3",
    "F8_E8M0",
    "F8_E4M3FNUZ",
    "F8_E5M2FNUZ",
    "I16",
    "U16",
    "F16",
    "BF16",
    "I32",
    "U32",
    "F32",
    "C64",
    "F64",
    "I64",
    "U64",
];

/// The headers safetensors reads: it refuses a larger one (its `MAX_HEADER_SIZE`).
const ST_MAX_HEADER: usize = 100_000_000;

/// The safetensors dtype of a storage dtype and logical type; `InvalidArgument` naming
/// what safetensors can't hold.
pub fn safetensors_dtype(dtype: DType, logical: Option<&str>) -> Result<&'static str> {
    Ok(match (dtype, logical) {
        (DType::F64, None) => "F64",
        (DType::F32, None) => "F32",
        (DType::F16, None) => "F16",
        (DType::BF16, None) => "BF16",
        (DType::I64, None) => "I64",
        (DType::I32, None) => "I32",
        (DType::I16, None) => "I16",
        (DType::I8, None) => "I8",
        (DType::U64, None) => "U64",
        (DType::U32, None) => "U32",
        (DType::U16, None) => "U16",
        (DType::U8, None) => "U8",
        (DType::Bool, None) => "BOOL",
        (DType::U8, Some("f8_e4m3fn")) => "F8_E4M3",
        (DType::U8, Some("f8_e5m2")) => "F8_E5M2",
        (DType::U8, Some("f8_e4m3fnuz")) => "F8_E4M3FNUZ",
        (DType::U8, Some("f8_e5m2fnuz")) => "F8_E5M2FNUZ",
        (DType::U8, Some("f8_e8m0fnu" | "f8_e8m0")) => "F8_E8M0",
        (DType::U8, Some("f4_e2m1fn_x2" | "f4_e2m1")) => "F4",
        (DType::U8, Some("f6_e2m3fn_x4")) => "F6_E2M3",
        (DType::U8, Some("f6_e3m2fn_x4")) => "F6_E3M2",
        (DType::F32, Some("complex64")) => "C64",
        (d, t) => bail!(
            InvalidArgument,
            "safetensors has no dtype for {d}{} (it holds f64 f32 f16 bf16 i64 i32 i16 i8 \
             u64 u32 u16 u8 bool, fp8, f4/f6 and complex64)",
            t.map(|t| format!(" of logical type '{t}'"))
                .unwrap_or_default()
        ),
    })
}

fn st_rank(name: &str) -> usize {
    ST_ORDER
        .iter()
        .position(|n| *n == name)
        .expect("a name of ST_ORDER")
}

/// ggml's type id of a dense storage dtype; `InvalidArgument` for one ggml lacks.
fn ggml_plain(dtype: DType) -> Result<u32> {
    Ok(match dtype {
        DType::F32 => 0,
        DType::F16 => 1,
        DType::I8 => 24,
        DType::I16 => 25,
        DType::I32 => 26,
        DType::I64 => 27,
        DType::F64 => 28,
        DType::BF16 => 30,
        d => bail!(
            InvalidArgument,
            "GGUF has no {d} tensors (ggml's plain types are f32 f16 bf16 f64 i8 i16 i32 i64)"
        ),
    })
}

/// The block type of an object format (`ggml_q4_k` or v2's `gguf.q4_k/1`), when it names
/// one this build knows.
pub fn ggml_block_type(format: &str) -> Option<&'static BlockType> {
    let name = format
        .strip_prefix("ggml_")
        .or_else(|| format.strip_prefix("gguf.")?.strip_suffix("/1"))?;
    BLOCK_TYPES.iter().find(|b| &b.logical_type()[5..] == name)
}

/// ggml refuses tensor names this long or longer (GGML_MAX_NAME, its NUL included).
const GGML_MAX_NAME: usize = 64;
/// ggml's most dimensions (GGML_MAX_DIMS).
const GGML_MAX_DIMS: usize = 4;

/// Refuses an object `format` can't hold, when it begins: its kind, its name, its shape.
pub(super) fn check_object(
    format: OutputFormat,
    name: &str,
    kind: &str,
    shape: &[u64],
) -> Result<()> {
    match format {
        OutputFormat::Safetensors => {
            if kind != "dense" {
                bail!(
                    InvalidArgument,
                    "object '{name}' is {kind}: safetensors holds dense tensors only (no \
                     sparse, quantized-group or ggml block objects)"
                );
            }
            if name == "__metadata__" {
                bail!(
                    InvalidArgument,
                    "a tensor can't be named '__metadata__' in safetensors (the header's \
                     metadata key)"
                );
            }
        }
        OutputFormat::Gguf => {
            if kind != "dense" && ggml_block_type(kind).is_none() {
                bail!(
                    InvalidArgument,
                    "object '{name}' is {kind}: GGUF holds dense tensors and ggml block types \
                     only"
                );
            }
            if name.len() >= GGML_MAX_NAME {
                bail!(
                    InvalidArgument,
                    "tensor name '{name}' is {} bytes: ggml's gguf.h refuses names of {} bytes \
                     or more",
                    name.len(),
                    GGML_MAX_NAME
                );
            }
            if shape.len() > GGML_MAX_DIMS {
                bail!(
                    InvalidArgument,
                    "object '{name}' has {} dimensions: ggml tensors have at most {}",
                    shape.len(),
                    GGML_MAX_DIMS
                );
            }
            // ggml counts elements in int64_t.
            if numel(shape).is_none_or(|n| n > i64::MAX as u64)
                || shape.iter().any(|&d| d > i64::MAX as u64)
            {
                bail!(
                    InvalidArgument,
                    "object '{name}': shape {shape:?} has more elements than ggml's int64_t \
                     counts"
                );
            }
            if let Some(bt) = ggml_block_type(kind) {
                let ne0 = shape.last().copied().unwrap_or(1);
                if ne0 % bt.block_size() != 0 {
                    bail!(
                        InvalidArgument,
                        "object '{name}': its rows of {ne0} elements are not whole {} blocks \
                         of {}",
                        bt.name(),
                        bt.block_size()
                    );
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// Refuses a component `format` can't hold, when it begins.
pub(super) fn check_component(
    format: OutputFormat,
    obj: &Object,
    role: &str,
    dtype: DType,
    logical: Option<&str>,
    encoding: Encoding,
    digest: bool,
) -> Result<()> {
    let name = obj.name();
    if role != "data" || !obj.components().is_empty() {
        bail!(
            InvalidArgument,
            "object '{name}': a {} tensor is one 'data' component, not '{role}'",
            format.name()
        );
    }
    if encoding != Encoding::Raw {
        bail!(
            InvalidArgument,
            "object '{name}': {} stores raw bytes only, not {} (no compression)",
            format.name(),
            encoding.name()
        );
    }
    if digest {
        bail!(
            InvalidArgument,
            "object '{name}': {} records no digests",
            format.name()
        );
    }
    check_types(format, name, obj.format(), dtype, logical)
}

/// Refuses a tensor's data type that `format` can't hold (`kind`: the object's format).
pub(super) fn check_types(
    format: OutputFormat,
    name: &str,
    kind: &str,
    dtype: DType,
    logical: Option<&str>,
) -> Result<()> {
    match format {
        OutputFormat::Safetensors => {
            safetensors_dtype(dtype, logical).map_err(|e| e.context(format!("object '{name}'")))?;
        }
        OutputFormat::Gguf => match ggml_block_type(kind) {
            Some(bt) => {
                if dtype != DType::U8 || logical != Some(bt.logical_type()) {
                    bail!(
                        InvalidArgument,
                        "object '{name}': a {kind} object's data is u8 of logical type '{}'",
                        bt.logical_type()
                    );
                }
            }
            None => {
                if let Some(t) = logical {
                    bail!(
                        InvalidArgument,
                        "object '{name}': GGUF has no tensors of logical type '{t}'"
                    );
                }
                ggml_plain(dtype).map_err(|e| e.context(format!("object '{name}'")))?;
            }
        },
        _ => {}
    }
    Ok(())
}

/// Refuses an ended object the format can't hold (its data missing, or an odd count of
/// f4 values in safetensors, which counts bits).
pub(super) fn check_end(format: OutputFormat, obj: &Object) -> Result<()> {
    if !format.spools() {
        return Ok(());
    }
    let name = obj.name();
    let [c] = obj.components() else {
        bail!(
            InvalidArgument,
            "object '{name}': a {} tensor needs its 'data' component",
            format.name()
        );
    };
    check_whole_bytes(format, name, c.logical_type(), obj.shape())
}

/// Refuses an odd count of f4 values in safetensors, which counts bits.
pub(super) fn check_whole_bytes(
    format: OutputFormat,
    name: &str,
    logical: Option<&str>,
    shape: &[u64],
) -> Result<()> {
    if format == OutputFormat::Safetensors
        && logical == Some("f4_e2m1")
        && numel(shape).is_some_and(|n| n % 2 == 1)
    {
        bail!(
            InvalidArgument,
            "object '{name}': an odd count of f4 values is not a whole number of bytes, which \
             safetensors requires"
        );
    }
    Ok(())
}

/// Refuses file attributes the format can't hold, as they are set.
pub(super) fn check_attributes(format: OutputFormat, attributes: &Attributes) -> Result<()> {
    match format {
        OutputFormat::Safetensors => metadata_strings(attributes).map(drop),
        OutputFormat::Gguf => {
            let mut out = Vec::new();
            gguf_kvs(attributes, &mut out).map(drop)
        }
        _ => Ok(()),
    }
}

/// The string-to-string map safetensors' `__metadata__` holds, in order.
fn metadata_strings(attributes: &Attributes) -> Result<Vec<(String, String)>> {
    let TypedValue::Map(pairs) = attributes.typed_value()? else {
        bail!(InvalidArgument, "attributes must be a map");
    };
    pairs
        .into_iter()
        .map(|(k, v)| {
            let key = match k {
                TypedValue::String(k) => String::from_utf8(k)
                    .map_err(|_| err!(InvalidArgument, "a metadata key is not UTF-8"))?,
                other => bail!(
                    InvalidArgument,
                    "safetensors' __metadata__ keys are strings, not {}",
                    other.value_type()
                ),
            };
            match v {
                TypedValue::String(s) => Ok((
                    key.clone(),
                    String::from_utf8(s)
                        .map_err(|_| err!(InvalidArgument, "metadata '{key}' is not UTF-8 text"))?,
                )),
                other => bail!(
                    InvalidArgument,
                    "safetensors' __metadata__ holds strings only: '{key}' is {}; write it as \
                     text if its readers expect that",
                    other.value_type()
                ),
            }
        })
        .collect()
}

/// What a header says of one tensor: an object being written (`TensorInfo::of`) or one
/// declared before its data (`Writer::declare`).
#[derive(Clone, Copy, Debug)]
pub(super) struct TensorInfo<'a> {
    pub(super) name: &'a str,
    /// "dense", or a ggml block format (`ggml_q4_k`, `gguf.q4_k/1`).
    pub(super) format: &'a str,
    pub(super) shape: &'a [u64],
    pub(super) dtype: DType,
    pub(super) logical: Option<&'a str>,
    /// Its bytes (unpadded).
    pub(super) length: u64,
}

impl<'a> TensorInfo<'a> {
    /// The info of an object whose one component is written.
    pub(super) fn of(o: &'a Object) -> TensorInfo<'a> {
        let c = &o.components()[0];
        TensorInfo {
            name: o.name(),
            format: o.format(),
            shape: o.shape(),
            dtype: c.dtype(),
            logical: c.logical_type(),
            length: c.decoded_length(),
        }
    }
}

/// Where a file's tensors go: its header (its padding included), where each tensor's
/// bytes begin in the file (`places[i]` for `tensors[i]`), the order they lie in, the
/// alignment each is padded to (1 for safetensors) and the file's size.
pub(super) struct Layout {
    pub(super) header: Vec<u8>,
    pub(super) places: Vec<u64>,
    pub(super) order: Vec<usize>,
    pub(super) alignment: u64,
    pub(super) end: u64,
}

/// The order a file of `format` holds `tensors` in: safetensors' (its dtypes' order,
/// largest first, then name, as `safetensors` sorts), GGUF's (as given).
pub(super) fn file_order(format: OutputFormat, tensors: &[TensorInfo<'_>]) -> Result<Vec<usize>> {
    match format {
        OutputFormat::Safetensors => {
            let ranks = (tensors.iter())
                .map(|t| safetensors_dtype(t.dtype, t.logical).map(st_rank))
                .collect::<Result<Vec<_>>>()?;
            let mut order: Vec<usize> = (0..tensors.len()).collect();
            order.sort_by(|&a, &b| {
                (ranks[b].cmp(&ranks[a]))
                    .then_with(|| tensors[a].name.as_bytes().cmp(tensors[b].name.as_bytes()))
            });
            Ok(order)
        }
        _ => Ok((0..tensors.len()).collect()),
    }
}

/// The layout of a safetensors or GGUF file of `tensors` (see `Layout`).
pub(super) fn layout(
    format: OutputFormat,
    tensors: &[TensorInfo<'_>],
    attributes: Option<&Attributes>,
    split: Option<SplitKeys>,
) -> Result<Layout> {
    match format {
        OutputFormat::Safetensors => safetensors_header(tensors, attributes),
        OutputFormat::Gguf => gguf_header(tensors, attributes, split),
        f => bail!(Internal, "{} has no header before its data", f.name()),
    }
}

/// The layout of a safetensors file: its header (the 8-byte length first), the tensors
/// after it in safetensors' order, unpadded.
fn safetensors_header(
    tensors: &[TensorInfo<'_>],
    attributes: Option<&Attributes>,
) -> Result<Layout> {
    let order = file_order(OutputFormat::Safetensors, tensors)?;
    let json = |s: &str| serde_json::to_string(s).expect("a string serializes");
    let mut text = String::from("{");
    let metadata = attributes.map(metadata_strings).transpose()?;
    // set, even empty, as safetensors writes a metadata dict it was given (`{}` too)
    if let Some(pairs) = metadata {
        text.push_str("\"__metadata__\":{");
        for (i, (k, v)) in pairs.iter().enumerate() {
            if i > 0 {
                text.push(',');
            }
            text.push_str(&json(k));
            text.push(':');
            text.push_str(&json(v));
        }
        text.push('}');
    }
    let mut offset = 0u64;
    let mut relative = vec![0u64; tensors.len()];
    for &i in &order {
        let t = &tensors[i];
        let dtype = safetensors_dtype(t.dtype, t.logical)?;
        if text.len() > 1 {
            text.push(',');
        }
        use std::fmt::Write as _;
        let _ = write!(text, "{}:{{\"dtype\":\"{dtype}\",\"shape\":[", json(t.name));
        for (k, d) in t.shape.iter().enumerate() {
            if k > 0 {
                text.push(',');
            }
            let _ = write!(text, "{d}");
        }
        let end = offset
            .checked_add(t.length)
            .ok_or_else(|| err!(InvalidArgument, "the tensors' bytes overflow u64"))?;
        let _ = write!(text, "],\"data_offsets\":[{offset},{end}]}}");
        relative[i] = offset;
        offset = end;
    }
    text.push('}');
    let mut header = text.into_bytes();
    let padded = header.len().next_multiple_of(8);
    header.resize(padded, b' ');
    if padded > ST_MAX_HEADER {
        bail!(
            Limit,
            "the safetensors header would be {padded} bytes: safetensors refuses headers over \
             {ST_MAX_HEADER}"
        );
    }
    let mut out = Vec::with_capacity(8 + padded);
    out.extend_from_slice(&(padded as u64).to_le_bytes());
    out.extend_from_slice(&header);
    let base = out.len() as u64;
    let end = base
        .checked_add(offset)
        .ok_or_else(|| err!(InvalidArgument, "the tensors' bytes overflow u64"))?;
    Ok(Layout {
        header: out,
        places: relative.into_iter().map(|r| base + r).collect(),
        order,
        alignment: 1,
        end,
    })
}

/// GGUF's value type of a typed value's type.
fn gguf_type(t: ValueType) -> Option<u32> {
    Some(match t {
        ValueType::U8 => T_U8,
        ValueType::I8 => T_I8,
        ValueType::U16 => T_U16,
        ValueType::I16 => T_I16,
        ValueType::U32 => T_U32,
        ValueType::I32 => T_I32,
        ValueType::F32 => T_F32,
        ValueType::Bool => T_BOOL,
        ValueType::String => T_STRING,
        ValueType::Array => T_ARRAY,
        ValueType::U64 => T_U64,
        ValueType::I64 => T_I64,
        ValueType::F64 => T_F64,
        _ => return None,
    })
}

fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(&(s.len() as u64).to_le_bytes());
    out.extend_from_slice(s);
}

/// Appends a value (without its type) to a GGUF key/value section.
fn gguf_value(v: &TypedValue, key: &str, out: &mut Vec<u8>) -> Result<()> {
    use TypedValue as T;
    match v {
        T::Bool(b) => out.push(u8::from(*b)),
        T::U8(x) => out.push(*x),
        T::I8(x) => out.extend(x.to_le_bytes()),
        T::U16(x) => out.extend(x.to_le_bytes()),
        T::I16(x) => out.extend(x.to_le_bytes()),
        T::U32(x) => out.extend(x.to_le_bytes()),
        T::I32(x) => out.extend(x.to_le_bytes()),
        T::U64(x) => out.extend(x.to_le_bytes()),
        T::I64(x) => out.extend(x.to_le_bytes()),
        T::F32(x) => out.extend(x.to_le_bytes()),
        T::F64(x) => out.extend(x.to_le_bytes()),
        T::String(s) => put_string(out, s),
        T::Numbers { elem, data } => {
            let ty = gguf_type(*elem).expect("numbers have a GGUF type");
            let width = elem.packed_width().expect("numbers have a width");
            out.extend(ty.to_le_bytes());
            out.extend(((data.len() / width) as u64).to_le_bytes());
            // The elements are in this machine's order; GGUF's is little-endian.
            for e in data.chunks_exact(width) {
                let mut e = e.to_vec();
                if cfg!(target_endian = "big") {
                    e.reverse();
                }
                out.extend(e);
            }
        }
        T::Array { elem, items } => {
            let first = items.first().map(TypedValue::value_type).or(*elem);
            let Some(t) = first else {
                bail!(
                    InvalidArgument,
                    "GGUF '{key}': an empty array with no element type (GGUF arrays declare one)"
                );
            };
            let Some(ty) = gguf_type(t) else {
                bail!(
                    InvalidArgument,
                    "GGUF '{key}': arrays of {t} have no GGUF type"
                );
            };
            if let Some(other) = items.iter().find(|i| i.value_type() != t) {
                bail!(
                    InvalidArgument,
                    "GGUF '{key}': an array's elements share one type, but it mixes {t} and {}",
                    other.value_type()
                );
            }
            out.extend(ty.to_le_bytes());
            out.extend((items.len() as u64).to_le_bytes());
            for item in items {
                gguf_value(item, key, out)?;
            }
        }
        other => bail!(
            InvalidArgument,
            "GGUF '{key}': GGUF has no {} values (its key/values are numbers, bools, strings \
             and arrays of them)",
            other.value_type()
        ),
    }
    Ok(())
}

/// Appends the key/values of `attributes` (GGUF's section, each with its type); returns
/// their count and `general.alignment` (checked: a u32 power of two).
fn gguf_kvs(attributes: &Attributes, out: &mut Vec<u8>) -> Result<(u64, Option<u64>)> {
    let TypedValue::Map(pairs) = attributes.typed_value()? else {
        bail!(InvalidArgument, "attributes must be a map");
    };
    let mut alignment = None;
    for (k, v) in &pairs {
        let TypedValue::String(key) = k else {
            bail!(
                InvalidArgument,
                "GGUF keys are strings, not {}",
                k.value_type()
            );
        };
        let key_text = String::from_utf8_lossy(key);
        if key_text == "general.alignment" {
            match v {
                TypedValue::U32(a) if *a != 0 && a.is_power_of_two() => {
                    alignment = Some(u64::from(*a));
                }
                TypedValue::U32(a) => bail!(
                    InvalidArgument,
                    "GGUF general.alignment is {a}, not a power of two"
                ),
                other => bail!(
                    InvalidArgument,
                    "GGUF general.alignment must be a u32, not {}",
                    other.value_type()
                ),
            }
        }
        let ty = gguf_type(v.value_type())
            .filter(|_| !matches!(v, TypedValue::Array { .. } | TypedValue::Numbers { .. }));
        put_string(out, key);
        match ty {
            Some(ty) => out.extend(ty.to_le_bytes()),
            None => out.extend(T_ARRAY.to_le_bytes()),
        }
        gguf_value(v, &key_text, out)?;
    }
    Ok((pairs.len() as u64, alignment))
}

/// The `general.alignment` of GGUF key/values (32 without it, or when they are not
/// valid: they are checked when set).
pub(super) fn gguf_alignment(attributes: &Attributes) -> u64 {
    gguf_kvs(attributes, &mut Vec::new())
        .ok()
        .and_then(|(_, a)| a)
        .unwrap_or(32)
}

/// Where a GGUF file is in a split set: (`split.no`, `split.count`,
/// `split.tensors.count`), appended after the set's key/values as llama.cpp's gguf-split
/// and gguf-py write them (u16, u16, i32).
#[derive(Clone, Copy, Debug)]
pub(super) struct SplitKeys {
    pub(super) no: u16,
    pub(super) count: u16,
    pub(super) tensors: i32,
}

/// The ggml type id of a tensor being written as GGUF.
fn ggml_id(t: &TensorInfo<'_>) -> Result<u32> {
    match ggml_block_type(t.format) {
        Some(bt) => Ok(bt.id()),
        None => ggml_plain(t.dtype),
    }
}

/// The layout of a GGUF v3 file: its header up to its data section (padding included),
/// the tensors in the order given, each padded to the alignment.
fn gguf_header(
    tensors: &[TensorInfo<'_>],
    attributes: Option<&Attributes>,
    split: Option<SplitKeys>,
) -> Result<Layout> {
    let mut kvs = Vec::new();
    let (mut count, alignment) = match attributes {
        Some(a) => gguf_kvs(a, &mut kvs)?,
        None => (0, None),
    };
    let alignment = alignment.unwrap_or(32);
    if let Some(s) = split {
        for (key, ty, bytes) in [
            ("split.no", T_U16, s.no.to_le_bytes().to_vec()),
            ("split.count", T_U16, s.count.to_le_bytes().to_vec()),
            (
                "split.tensors.count",
                T_I32,
                s.tensors.to_le_bytes().to_vec(),
            ),
        ] {
            put_string(&mut kvs, key.as_bytes());
            kvs.extend(ty.to_le_bytes());
            kvs.extend(bytes);
            count += 1;
        }
    }
    let mut out = Vec::with_capacity(24 + kvs.len() + tensors.len() * 64);
    out.extend_from_slice(b"GGUF");
    out.extend(3u32.to_le_bytes());
    out.extend((tensors.len() as u64).to_le_bytes());
    out.extend(count.to_le_bytes());
    out.extend_from_slice(&kvs);
    let mut offset = 0u64;
    let mut relative = Vec::with_capacity(tensors.len());
    for t in tensors {
        put_string(&mut out, t.name.as_bytes());
        out.extend((t.shape.len() as u32).to_le_bytes());
        for d in t.shape.iter().rev() {
            out.extend(d.to_le_bytes());
        }
        out.extend(ggml_id(t)?.to_le_bytes());
        out.extend(offset.to_le_bytes());
        relative.push(offset);
        offset = t
            .length
            .checked_next_multiple_of(alignment)
            .and_then(|l| offset.checked_add(l))
            .ok_or_else(|| err!(InvalidArgument, "the tensors' bytes overflow u64"))?;
    }
    let padded = (out.len() as u64).next_multiple_of(alignment) as usize;
    out.resize(padded, 0);
    let base = padded as u64;
    let end = base
        .checked_add(offset)
        .ok_or_else(|| err!(InvalidArgument, "the tensors' bytes overflow u64"))?;
    Ok(Layout {
        header: out,
        places: relative.into_iter().map(|r| base + r).collect(),
        order: (0..tensors.len()).collect(),
        alignment,
        end,
    })
}

/// A spooled file's parts: where each object's bytes are in the spool.
pub(super) struct Spooled<'a> {
    pub(super) format: OutputFormat,
    pub(super) spool: &'a File,
    pub(super) objects: &'a [Object],
    pub(super) attributes: Option<&'a Attributes>,
    pub(super) split: Option<SplitKeys>,
    /// What the spooled tensors were padded to (`Writer::spool_align`).
    pub(super) spool_align: u64,
}

/// Writes the finished file to `dest` (created new): the header, then every object's
/// bytes copied from the spool in the format's order (GGUF: each padded). Flushed, not
/// synced (the caller's commit syncs a durable file). `writeback`: start writing the
/// copied pages to disk as the copy goes, for a durable file.
pub(super) fn assemble(s: &Spooled<'_>, dest: &Path, writeback: bool) -> Result<u64> {
    let infos: Vec<TensorInfo<'_>> = s.objects.iter().map(TensorInfo::of).collect();
    let Layout {
        header,
        places,
        order,
        end,
        ..
    } = layout(s.format, &infos, s.attributes, s.split)?;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(dest)
        .map_err(|e| Error::io(format_args!("creating {}", dest.display()), e))?;
    let io = |what: &str, e| Error::io(format_args!("{}: {what}", dest.display()), e);
    file.write_all(&header)
        .map_err(|e| io("writing the header", e))?;
    // The pieces to copy (spool offset, file offset, length), a run of tensors merged
    // into one piece where the spool holds them as the file will (GGUF spooled with its
    // alignment, safetensors added in its order): one copy, not one per tensor.
    let mut pieces: Vec<(u64, u64, u64)> = Vec::new();
    for i in order {
        let c = &s.objects[i].components()[0];
        let (src, len, pos) = (c.offset(), c.length(), places[i]);
        match pieces.last_mut() {
            Some(last)
                if src == (last.0 + last.2).next_multiple_of(s.spool_align)
                    && src - last.0 == pos - last.1 =>
            {
                last.2 = pos + len - last.1;
            }
            _ => pieces.push((src, pos, len)),
        }
    }
    // A durable file gets to disk as the copy goes, by the same mechanism as a zTensor
    // file's (`Writeback`): preallocated whole (its size is known now), each chunk's
    // writeback started when copied, and waited for some way behind.
    let mut writeback = match writeback {
        true => file.try_clone().ok().map(Writeback::new),
        false => None,
    };
    if let Some(wb) = &mut writeback {
        wb.preallocate(end);
    }
    // Small pieces (many small tensors in an order the spool doesn't hold them in) are
    // gathered into one buffer with `pread` and written with one `pwrite` a few MiB at a
    // time: a copy_file_range each costs more than the bytes it moves. Large ones are
    // copied in the kernel. Memory: the buffer, `STAGE` bytes.
    const SMALL: u64 = 256 << 10;
    const STAGE: usize = 4 << 20;
    let mut stage: Vec<u8> = Vec::new();
    let mut stage_at = 0u64;
    let flush = |stage: &mut Vec<u8>, at: u64| -> std::io::Result<()> {
        if !stage.is_empty() {
            file.write_all_at(stage, at)?;
            stage.clear();
        }
        Ok(())
    };
    for (src, dst, len) in pieces {
        if len < SMALL {
            let room = stage_at + stage.len() as u64;
            if stage.is_empty() || dst < room || (dst - stage_at) as usize + len as usize > STAGE {
                flush(&mut stage, stage_at).map_err(|e| io("writing the tensors", e))?;
                stage_at = dst;
            }
            // Padding between staged pieces: zeros, as the file has them.
            let at = (dst - stage_at) as usize;
            stage.resize(at, 0);
            stage.resize(at + len as usize, 0);
            s.spool
                .read_exact_at(&mut stage[at..], src)
                .map_err(|e| io("reading the spool", e))?;
        } else {
            flush(&mut stage, stage_at).map_err(|e| io("writing the tensors", e))?;
            copy_range(s.spool, src, &file, dst, len).map_err(|e| io("copying the tensors", e))?;
        }
        if let Some(wb) = &mut writeback {
            // Staged bytes are not in the file yet: only what precedes them is.
            let flushed = if stage.is_empty() {
                dst + len
            } else {
                stage_at
            };
            wb.written(flushed);
        }
    }
    flush(&mut stage, stage_at).map_err(|e| io("writing the tensors", e))?;
    // Padding after the last tensor (GGUF): zeros, as every gap left.
    file.set_len(end).map_err(|e| io("padding", e))?;
    file.flush().map_err(|e| io("flushing", e))?;
    Ok(end)
}

/// Copies `length` bytes at `from` of `src` to `to` of `dst`: in the kernel
/// (`copy_file_range`), or through a 4 MiB buffer where the kernel can't.
fn copy_range(src: &File, from: u64, dst: &File, to: u64, length: u64) -> std::io::Result<()> {
    let mut done = 0u64;
    while done < length {
        let mut off_in = (from + done) as libc::loff_t;
        let mut off_out = (to + done) as libc::loff_t;
        let n = (length - done).min(1 << 30) as usize;
        // SAFETY: two open descriptors and offsets we own; no memory is passed.
        let r = unsafe {
            libc::copy_file_range(
                src.as_raw_fd(),
                &mut off_in,
                dst.as_raw_fd(),
                &mut off_out,
                n,
                0,
            )
        };
        if r > 0 {
            done += r as u64;
            continue;
        }
        if r == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "the spool ended early",
            ));
        }
        let e = std::io::Error::last_os_error();
        match e.raw_os_error() {
            Some(libc::EINTR) => continue,
            Some(libc::EXDEV | libc::ENOSYS | libc::EINVAL | libc::EOPNOTSUPP | libc::EPERM) => {
                return copy_buffered(src, from + done, dst, to + done, length - done);
            }
            _ => return Err(e),
        }
    }
    Ok(())
}

fn copy_buffered(src: &File, from: u64, dst: &File, to: u64, length: u64) -> std::io::Result<()> {
    let mut buf = vec![0u8; length.min(4 << 20) as usize];
    let mut done = 0u64;
    while done < length {
        let n = buf.len().min((length - done) as usize);
        src.read_exact_at(&mut buf[..n], from + done)?;
        dst.write_all_at(&buf[..n], to + done)?;
        done += n as u64;
    }
    Ok(())
}

impl<W: Write> Writer<W> {
    /// A single safetensors or GGUF file at `finish`: assembled from the spool into a new
    /// temporary file, which becomes the one `finish` names; the spool is removed.
    pub(super) fn assemble(&mut self, split: Option<SplitKeys>) -> Result<()> {
        let label = &self.output.label;
        self.output
            .out
            .flush()
            .map_err(|e| Error::io(format_args!("{label}: flushing"), e))?;
        let target = self
            .target
            .as_mut()
            .expect("safetensors and GGUF write to a path");
        let dest = beside(&target.path);
        let spooled = Spooled {
            format: self.format,
            spool: self.spool.as_ref().expect("a spool"),
            objects: &self.objects,
            attributes: self.file_attributes.as_ref(),
            split,
            spool_align: self.spool_align,
        };
        match assemble(&spooled, &dest, target.durable) {
            Ok(size) => self.output.pos = size,
            Err(e) => {
                let _ = std::fs::remove_file(&dest);
                return Err(e);
            }
        }
        let _ = std::fs::remove_file(&target.temp);
        target.temp = dest;
        Ok(())
    }
}

/// A new temporary name beside `path`, for the file that will be named `path`.
pub(super) fn beside(path: &Path) -> std::path::PathBuf {
    let dir = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => std::path::PathBuf::from("."),
    };
    dir.join(temp_name(path.file_name().expect("a file name")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_safetensors_dtype_has_a_rank() {
        for name in ST_ORDER {
            assert_eq!(ST_ORDER[st_rank(name)], name);
        }
        assert_eq!(
            safetensors_dtype(DType::U8, Some("f8_e8m0")).unwrap(),
            "F8_E8M0"
        );
        assert!(safetensors_dtype(DType::F64, Some("complex128")).is_err());
    }

    #[test]
    fn block_types_by_either_name() {
        assert_eq!(ggml_block_type("ggml_q4_k").unwrap().id(), 12);
        assert_eq!(ggml_block_type("gguf.q4_k/1").unwrap().id(), 12);
        assert!(ggml_block_type("gguf.q4_k/2").is_none());
        assert!(ggml_block_type("dense").is_none());
    }
}
