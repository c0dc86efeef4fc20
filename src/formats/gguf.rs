//! ggml's GGUF v2 and v3 (little-endian): "GGUF", version, tensor count, key/value count,
//! the key/values, the tensor infos, padding to `general.alignment` (default 32), then the
//! data section. Each tensor's bytes stay where the file has them, so views are zero-copy.
//!
//! How a file maps onto the model:
//! - Version: "2" or "3". v1 (32-bit counts) and big-endian files are `Unsupported`.
//! - The key/values become the file attributes, a CBOR map in file order: integers as
//!   integers, f32/f64 as floats, bools, strings as text (a string that is not UTF-8 as a
//!   byte string rather than refusing the file), arrays (nested too) as arrays.
//! - GGUF lists dims innermost first (ne[0] varies fastest); the shape is reversed, so it
//!   is row-major like every other object (numpy's shape for the same tensor).
//! - F32 F16 BF16 F64 I8 I16 I32 I64 tensors are "dense" objects of that dtype.
//! - Block-quantized types (`quant::BLOCK_TYPES`) are objects of format "ggml_<type>"
//!   (e.g. "ggml_q4_0"), shape in logical elements, one u8 "data" component of logical
//!   type "ggml_<type>" holding the raw blocks (rows x ne[0] / block_size x type_size
//!   bytes), and attributes {"ggml_type", "ggml_type_id", "block_size", "type_size"}. The
//!   logical type is what makes the reader dequantize them in `read_as` (and never
//!   convert their bytes as numbers). ne[0] must be a multiple of the block size.
//! - A type id this build doesn't know (a newer ggml's, or one ggml retired before GGUF)
//!   fails only its tensors: their size can't be computed (GGUF records offsets, not
//!   sizes, and ggml defines each type's size in code), so each becomes an object of
//!   format "ggml_type_<id>" (attributes {"ggml_type_id"}) whose "data" component
//!   (u8, logical type "ggml_type_<id>") claims no bytes: 0 bytes at the tensor's offset,
//!   with a decode step that refuses every read with `Unsupported` naming the id. Its
//!   offset is still checked (aligned, inside the file); the other tensors keep all their
//!   checks, but none can be checked against its unknown extent.
//! - Tensors must be aligned to `general.alignment` within the data section, inside the
//!   file, and must not overlap; unlike ggml we don't require them packed in info order.
//!   The model records the data section's offset and the alignment (`Reader::layout`).

use std::borrow::Cow;
use std::collections::HashMap;

use crate::dtype::{DType, numel};
use crate::error::{Result, bail, err};
use crate::formats::ReadAt;
use crate::limits::{Limits, MAX_CBOR_DEPTH};
use crate::model::{
    Attributes, CText, Component, Components, Container, FormatStep, Model, Object, Shape, Split,
    Step, TextArena, Traits, check_name_text,
};
use crate::quant::{GgmlType, ggml_type, unknown_logical_type, unknown_type_message};
use crate::value::cbor::item::string_body;
use crate::value::cbor::{Value, Writer};

/// Data section alignment when the file has no `general.alignment`.
const DEFAULT_ALIGNMENT: u64 = 32;

/// Bytes read at a time when the file is not in memory.
const CHUNK: u64 = 64 << 10;

/// GGUF metadata value types (the writer's too).
pub(crate) const T_U8: u32 = 0;
pub(crate) const T_I8: u32 = 1;
pub(crate) const T_U16: u32 = 2;
pub(crate) const T_I16: u32 = 3;
pub(crate) const T_U32: u32 = 4;
pub(crate) const T_I32: u32 = 5;
pub(crate) const T_F32: u32 = 6;
pub(crate) const T_BOOL: u32 = 7;
pub(crate) const T_STRING: u32 = 8;
pub(crate) const T_ARRAY: u32 = 9;
pub(crate) const T_U64: u32 = 10;
pub(crate) const T_I64: u32 = 11;
pub(crate) const T_F64: u32 = 12;

/// The fewest bytes a value of this type takes (for bounding declared counts); Format for
/// an unknown type.
fn min_size(ty: u32) -> Result<u64> {
    Ok(match ty {
        T_U8 | T_I8 | T_BOOL => 1,
        T_U16 | T_I16 => 2,
        T_U32 | T_I32 | T_F32 => 4,
        T_U64 | T_I64 | T_F64 | T_STRING => 8,
        T_ARRAY => 12,
        other => bail!(Format, "unknown GGUF value type {other}"),
    })
}

/// A forward cursor over the file's header bytes. In memory (mapping or caller's bytes)
/// it borrows the whole file; otherwise it reads `CHUNK`-sized pieces as it goes, so
/// memory stays bounded by the largest single item. Never reads past `max_header`.
struct Input<'r, 's> {
    read: &'r ReadAt<'s>,
    size: u64,
    chunk: Cow<'s, [u8]>,
    start: u64,
    pos: u64,
    max_header: u64,
}

impl<'r, 's> Input<'r, 's> {
    fn new(read: &'r ReadAt<'s>, size: u64, limits: &Limits) -> Result<Self> {
        let mut chunk = read(0, size.min(CHUNK))?;
        if matches!(chunk, Cow::Borrowed(_)) {
            // Memory: borrowing all of it costs nothing.
            chunk = read(0, size)?;
        }
        Ok(Input {
            read,
            size,
            chunk,
            start: 0,
            pos: 0,
            max_header: limits.max_manifest_size,
        })
    }

    fn remaining(&self) -> u64 {
        self.size - self.pos
    }

    /// The next `n` bytes; Format when the file ends first, Limit past `max_header`.
    fn take(&mut self, n: u64, what: &dyn std::fmt::Display) -> Result<&[u8]> {
        let pos = self.pos;
        let end = pos
            .checked_add(n)
            .filter(|&e| e <= self.size)
            .ok_or_else(|| {
                err!(
                    Format,
                    "GGUF {what} at offset {pos}: {n} bytes reach past the end of the {}-byte \
                     file (truncated?)",
                    self.size
                )
            })?;
        if end > self.max_header {
            bail!(
                Limit,
                "GGUF header (key/values and tensor infos) reaches offset {end}, over the \
                 manifest limit of {} bytes",
                self.max_header
            );
        }
        if end > self.start + self.chunk.len() as u64 {
            let len = n.max(CHUNK).min(self.size - pos);
            self.chunk = (self.read)(pos, len)?;
            self.start = pos;
        }
        self.pos = end;
        let at = (pos - self.start) as usize;
        Ok(&self.chunk[at..at + n as usize])
    }

    fn array<const N: usize>(&mut self, what: &dyn std::fmt::Display) -> Result<[u8; N]> {
        Ok(self.take(N as u64, what)?.try_into().expect("N bytes"))
    }
    fn u32(&mut self, what: &dyn std::fmt::Display) -> Result<u32> {
        self.array(what).map(u32::from_le_bytes)
    }
    fn u64(&mut self, what: &dyn std::fmt::Display) -> Result<u64> {
        self.array(what).map(u64::from_le_bytes)
    }
    /// A string's bytes (u64 length, then the bytes), bounded by the file.
    fn string(&mut self, what: &dyn std::fmt::Display) -> Result<&[u8]> {
        let len = self.u64(what)?;
        self.take(len, what)
    }
    /// A string that must be UTF-8.
    fn text(&mut self, what: &dyn std::fmt::Display) -> Result<String> {
        let at = self.pos;
        let bytes = self.string(what)?;
        match std::str::from_utf8(bytes) {
            Ok(s) => Ok(s.to_owned()),
            Err(_) => bail!(Format, "GGUF {what} at offset {at} is not UTF-8"),
        }
    }
}

/// Makes room for `n` more bytes of attributes; a `Limit` error (not an abort) when the
/// system refuses.
fn room(out: &mut Writer, n: usize) -> Result<()> {
    out.try_reserve(n).map_err(|_| {
        err!(
            Limit,
            "could not allocate {} bytes for the GGUF key/values",
            out.len() + n
        )
    })
}

/// Reads one metadata value of type `ty` and appends it as CBOR. `depth` is the CBOR
/// nesting it sits at (1 for a value of the top-level map); arrays deeper than
/// `max_depth` are a Limit. `widths`, when given, gets the value's types (the stream
/// `typed::Doc::build` reads: the type; for an array `Array` and the element type, then
/// each element's stream when the elements are arrays).
fn value(
    input: &mut Input<'_, '_>,
    ty: u32,
    depth: usize,
    max_depth: usize,
    key: &str,
    out: &mut Writer,
    widths: Option<&mut Vec<u8>>,
) -> Result<()> {
    let what = format_args!("value of '{key}'");
    room(out, 9)?;
    if let Some(w) = widths {
        w.push(width_code(ty));
        if ty == T_ARRAY {
            return array(input, depth, max_depth, key, out, w);
        }
    }
    match ty {
        T_U8 => out.uint(u64::from(input.array::<1>(&what)?[0])),
        T_I8 => out.int(i64::from(i8::from_le_bytes(input.array(&what)?))),
        T_U16 => out.uint(u64::from(u16::from_le_bytes(input.array(&what)?))),
        T_I16 => out.int(i64::from(i16::from_le_bytes(input.array(&what)?))),
        T_U32 => out.uint(u64::from(input.u32(&what)?)),
        T_I32 => out.int(i64::from(i32::from_le_bytes(input.array(&what)?))),
        T_U64 => out.uint(input.u64(&what)?),
        T_I64 => out.int(i64::from_le_bytes(input.array(&what)?)),
        T_F32 => out.float(f64::from(f32::from_le_bytes(input.array(&what)?))),
        T_F64 => out.float(f64::from_le_bytes(input.array(&what)?)),
        T_BOOL => {
            let at = input.pos;
            match input.array::<1>(&what)?[0] {
                0 => out.bool(false),
                1 => out.bool(true),
                b => bail!(Format, "GGUF bool {what} at offset {at} is {b}, not 0 or 1"),
            }
        }
        T_STRING => {
            let bytes = input.string(&what)?;
            room(out, 9 + bytes.len())?;
            // A string that is not UTF-8 is kept as a byte string.
            out.string(std::str::from_utf8(bytes).is_ok(), bytes);
        }
        T_ARRAY => array(input, depth, max_depth, key, out, &mut Vec::new())?,
        other => bail!(Format, "GGUF {what} has unknown value type {other}"),
    }
    Ok(())
}

/// The typed value type of a GGUF value type (`typed::ValueType` codes).
fn width_code(ty: u32) -> u8 {
    use crate::value::typed::ValueType as V;
    (match ty {
        T_U8 => V::U8,
        T_I8 => V::I8,
        T_U16 => V::U16,
        T_I16 => V::I16,
        T_U32 => V::U32,
        T_I32 => V::I32,
        T_F32 => V::F32,
        T_BOOL => V::Bool,
        T_STRING => V::String,
        T_ARRAY => V::Array,
        T_U64 => V::U64,
        T_I64 => V::I64,
        T_F64 => V::F64,
        _ => V::Other,
    }) as u8
}

/// An array value after its type: element type, count, elements. Its element type goes
/// to `widths`, and when the elements are arrays, each element's stream.
fn array(
    input: &mut Input<'_, '_>,
    depth: usize,
    max_depth: usize,
    key: &str,
    out: &mut Writer,
    widths: &mut Vec<u8>,
) -> Result<()> {
    let what = format_args!("value of '{key}'");
    let at = input.pos;
    let elem = input.u32(&what)?;
    let count = input.u64(&what)?;
    let unit = min_size(elem).map_err(|e| e.context(format!("GGUF array {what}")))?;
    if depth + 1 > max_depth {
        bail!(
            Limit,
            "GGUF array {what} at offset {at} nests deeper than {max_depth} levels"
        );
    }
    if count
        .checked_mul(unit)
        .is_none_or(|n| n > input.remaining())
    {
        bail!(
            Format,
            "GGUF array {what} at offset {at} declares {count} elements, more than \
             the {} bytes left in the file can hold",
            input.remaining()
        );
    }
    widths.push(width_code(elem));
    // Bounded by the file's size above.
    out.array(count as usize);
    for _ in 0..count {
        let nested = (elem == T_ARRAY).then_some(&mut *widths);
        value(input, elem, depth + 1, max_depth, key, out, nested)?;
    }
    Ok(())
}

/// One tensor info as stored.
struct Info<'d> {
    name: CText,
    dims: &'d [u64],
    type_id: u32,
    offset: u64,
}

/// True for the first bytes of a GGUF file.
pub(crate) fn detect(head: &[u8]) -> bool {
    head.starts_with(b"GGUF")
}

/// Parses a GGUF file into a model. Reads the header once (without a mapping, in 64 KiB
/// pieces) and encodes the key/values as one CBOR map; memory is proportional to the
/// header, which is bounded by `limits.max_manifest_size`. Touches no tensor data.
pub(crate) fn parse(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<(Model, u64)> {
    let mut input = Input::new(read, size, limits)?;
    let (version, tensor_count, kv_count) = header(&mut input, size)?;
    let kv = key_values(&mut input, kv_count, limits)?;
    let mut objects = tensor_infos(&mut input, tensor_count, kv.alignment, limits)?;
    let data_start = input
        .pos
        .checked_next_multiple_of(kv.alignment)
        .ok_or_else(|| err!(Format, "GGUF data section start overflows"))?;
    drop(input);
    place(&mut objects, data_start, size)?;

    let version = if version == 2 { "2" } else { "3" };
    // The data section starts aligned and every offset in it is aligned: so is every
    // absolute offset.
    let traits = Traits {
        blob_alignment: kv.alignment,
        ..super::UNALIGNED
    };
    let mut model = Model::new(Container::Gguf, traits, version, kv.attributes, objects)?;
    model.data_offset = data_start;
    model.split = match kv.split {
        [None, None, None] => None,
        [Some(no), Some(count), tensors] => Some(Split { no, count, tensors }),
        _ => bail!(
            Format,
            "GGUF split keys are incomplete: a split needs both split.no and split.count"
        ),
    };
    Ok((model, size))
}

/// The fixed header: magic, version (2 or 3), tensor count and key/value count, the
/// counts bounded by what the file can hold.
fn header(input: &mut Input<'_, '_>, size: u64) -> Result<(u32, u64, u64)> {
    input.take(4, &"magic")?;
    let version = input.u32(&"version")?;
    match version {
        2 | 3 => {}
        1 => bail!(
            Unsupported,
            "GGUF v1 files (32-bit counts and lengths) are not supported; convert the \
             model again with a current GGUF writer"
        ),
        v if (1..=3).contains(&v.swap_bytes()) => bail!(
            Unsupported,
            "big-endian GGUF v{} is not supported: only little-endian files are read",
            v.swap_bytes()
        ),
        v => bail!(
            Unsupported,
            "GGUF version {v} is not supported (2 and 3 are)"
        ),
    }
    let tensor_count = input.u64(&"tensor count")?;
    let kv_count = input.u64(&"key/value count")?;
    // A key/value takes at least 13 bytes (key length, type, one value byte); a tensor
    // info at least 24 (name length, n_dims, type, offset).
    if kv_count
        .checked_mul(13)
        .is_none_or(|n| n > input.remaining())
    {
        bail!(
            Format,
            "GGUF key/value count {kv_count} is more than the {}-byte file can hold",
            size
        );
    }
    if tensor_count
        .checked_mul(24)
        .is_none_or(|n| n > input.remaining())
    {
        bail!(
            Format,
            "GGUF tensor count {tensor_count} is more than the {}-byte file can hold",
            size
        );
    }
    Ok((version, tensor_count, kv_count))
}

/// What the key/values make: the file attributes (with their widths), the data
/// section's alignment, and llama.cpp's split keys (`split_key`).
struct KeyValues {
    attributes: Option<Attributes>,
    alignment: u64,
    split: [Option<u64>; 3],
}

/// Reads the `kv_count` key/values into one CBOR map in file order, refusing a key that
/// repeats.
fn key_values(input: &mut Input<'_, '_>, kv_count: u64, limits: &Limits) -> Result<KeyValues> {
    let max_depth = limits.max_cbor_depth.min(MAX_CBOR_DEPTH);
    let mut attrs = Writer::new();
    // Bounded by the file's size (`header`).
    attrs.map(kv_count as usize);
    // Where each key's CBOR text starts in `attrs`, and its file offset: repeated keys
    // are found by sorting these at the end (a set of the keys would cost several times
    // their bytes).
    let mut keys: Vec<(usize, u64)> = Vec::new();
    // One width code per value (and per array's element type), each for at least one
    // byte of the file: bounded by its size.
    let mut widths = Vec::new();
    let mut alignment = DEFAULT_ALIGNMENT;
    let mut split = [None; 3];
    for i in 0..kv_count {
        let at = input.pos;
        let key = input.text(&format_args!("key {i}"))?;
        // A key repeating the one before is refused at once (the sort below finds the
        // others once all are read).
        if keys
            .last()
            .is_some_and(|&(start, _)| key_at(&attrs, start) == Some(key.as_bytes()))
        {
            bail!(
                Format,
                "GGUF key '{key}' at offset {at} appears more than once"
            );
        }
        let ty = input.u32(&format_args!("type of '{key}'"))?;
        room(&mut attrs, 9 + key.len())?;
        keys.try_reserve(1)
            .map_err(|_| err!(Limit, "could not allocate room for {i} GGUF keys"))?;
        keys.push((attrs.len(), at));
        attrs.text(&key);
        if key == "general.alignment" {
            alignment = general_alignment(input, ty)?;
            attrs.uint(alignment);
            widths.push(width_code(T_U32));
        } else {
            let start = attrs.len();
            value(input, ty, 1, max_depth, &key, &mut attrs, Some(&mut widths))?;
            if key.starts_with("split.") {
                split_key(&key, &attrs.as_slice()[start..], &mut split)?;
            }
        }
    }
    let key_at = |start: usize| key_at(&attrs, start);
    keys.sort_unstable_by(|a, b| key_at(a.0).cmp(&key_at(b.0)).then(a.1.cmp(&b.1)));
    if let Some(pair) = keys.windows(2).find(|p| key_at(p[0].0) == key_at(p[1].0)) {
        bail!(
            Format,
            "GGUF key '{}' at offset {} appears more than once",
            String::from_utf8_lossy(key_at(pair[1].0).unwrap_or_default()),
            pair[1].1
        );
    }
    drop(keys);
    Ok(KeyValues {
        attributes: Some(Attributes::from_vec_with_widths(attrs.into_bytes(), widths)),
        alignment,
        split,
    })
}

/// The text of the key `attrs` holds at `start` (as `Writer::text` wrote it).
fn key_at(attrs: &Writer, start: usize) -> Option<&[u8]> {
    string_body(&attrs.as_slice()[start..])
}

/// `general.alignment` (of type `ty`): a uint32 power of two.
fn general_alignment(input: &mut Input<'_, '_>, ty: u32) -> Result<u64> {
    if ty != T_U32 {
        bail!(
            Format,
            "GGUF general.alignment must be of type uint32 (4), not type {ty}"
        );
    }
    let a = input.u32(&"general.alignment")?;
    if a == 0 || !a.is_power_of_two() {
        bail!(Format, "GGUF general.alignment is {a}, not a power of two");
    }
    Ok(u64::from(a))
}

/// Reads the `tensor_count` tensor infos into objects, built as the infos are read
/// (offsets still relative to the data section, which starts after the last info), grown
/// by what was read: a count the file can hold may still be absurd for memory. Names sit
/// side by side in an arena. An info that can't become an object is reported once the
/// infos are all read, as a truncation later in them is.
fn tensor_infos(
    input: &mut Input<'_, '_>,
    tensor_count: u64,
    alignment: u64,
    limits: &Limits,
) -> Result<Vec<Object>> {
    let mut build = Build::new()?;
    let mut objects = Vec::new();
    let mut deferred = None;
    let mut dims = Vec::new();
    for i in 0..tensor_count {
        let at = input.pos;
        let name = input.string(&format_args!("name of tensor {i}"))?;
        let Ok(name) = std::str::from_utf8(name) else {
            bail!(
                Format,
                "GGUF name of tensor {i} at offset {at} is not UTF-8"
            );
        };
        check_name_text("tensor", name, limits.max_name_length)?;
        let name = build
            .arena
            .text(name)
            .map_err(|e| e.context("tensor name"))?;
        let what = format_args!("tensor '{}'", name.as_str());
        let n_dims = input.u32(&what)?;
        if n_dims as usize > limits.max_rank {
            bail!(
                Limit,
                "GGUF {what} has {n_dims} dimensions, over the limit of {}",
                limits.max_rank
            );
        }
        dims.clear();
        for _ in 0..n_dims {
            dims.push(input.u64(&what)?);
        }
        let type_id = input.u32(&what)?;
        let offset = input.u64(&what)?;
        if deferred.is_some() {
            continue;
        }
        let info = Info {
            name,
            dims: &dims,
            type_id,
            offset,
        };
        match build.object(&info, alignment) {
            Ok(o) => objects.push(o),
            Err(e) => deferred = Some(e),
        }
    }
    match deferred {
        Some(e) => Err(e),
        None => Ok(objects),
    }
}

/// Records one of llama.cpp's split keys (`split.no`, `split.count`,
/// `split.tensors.count`; `value` is its CBOR encoding): a non-negative integer.
fn split_key(key: &str, value: &[u8], split: &mut [Option<u64>; 3]) -> Result<()> {
    let slot = match key {
        "split.no" => 0,
        "split.count" => 1,
        "split.tensors.count" => 2,
        _ => return Ok(()),
    };
    match crate::value::cbor::decode(value, 1) {
        Ok(Value::Unsigned(n)) => split[slot] = Some(n),
        _ => bail!(Format, "GGUF {key} is not a non-negative integer"),
    }
    Ok(())
}

/// What a tensor's type makes of it: format, storage dtype, logical type, attributes and
/// byte length (None when the type is unknown).
struct Typed {
    format: CText,
    dtype: DType,
    logical: Option<CText>,
    attributes: Option<Attributes>,
    length: Option<u64>,
}

/// Refuses every read of a tensor whose ggml type this build doesn't know.
#[derive(Debug)]
struct UnknownType(u32);

impl FormatStep for UnknownType {
    fn apply(&self, _: &[u8], _: &mut [u8]) -> Result<()> {
        bail!(
            Unsupported,
            "{}: the byte size of its tensors can't be computed, so their bytes can't be read",
            unknown_type_message(self.0)
        )
    }
    fn output_len(&self) -> u64 {
        0
    }
}

/// The format, logical type and attributes of the objects of each ggml type id met, built
/// once per id.
#[derive(Default)]
struct TypeNames(HashMap<u32, (CText, Option<CText>, Attributes)>);

impl TypeNames {
    fn get(&mut self, id: u32) -> Result<(CText, Option<CText>, Attributes)> {
        if let Some(e) = self.0.get(&id) {
            return Ok(e.clone());
        }
        let t = |s: &str| Value::Text(s.to_owned());
        let e = match ggml_type(id) {
            GgmlType::Blocks(q) => {
                let attrs = Value::Map(vec![
                    (t("ggml_type"), t(q.name())),
                    (t("ggml_type_id"), Value::Unsigned(u64::from(id))),
                    (t("block_size"), Value::Unsigned(q.block_size())),
                    (t("type_size"), Value::Unsigned(q.type_size())),
                ]);
                let name = CText::new(q.logical_type())?;
                (name.clone(), Some(name), Attributes::from_value(&attrs))
            }
            _ => {
                let attrs = Value::Map(vec![(t("ggml_type_id"), Value::Unsigned(u64::from(id)))]);
                let name = CText::new(&unknown_logical_type(id))?;
                (name.clone(), Some(name), Attributes::from_value(&attrs))
            }
        };
        self.0.insert(id, e.clone());
        Ok(e)
    }
}

/// The type-dependent part of a tensor's object.
fn typed(info: &Info<'_>, count: u64, dense: &CText, names: &mut TypeNames) -> Result<Typed> {
    let overflow = || err!(Format, "byte size of dims {:?} overflows u64", info.dims);
    Ok(match ggml_type(info.type_id) {
        GgmlType::Plain(dtype) => Typed {
            format: dense.clone(),
            dtype,
            logical: None,
            attributes: None,
            length: Some(
                count
                    .checked_mul(dtype.size() as u64)
                    .ok_or_else(overflow)?,
            ),
        },
        GgmlType::Blocks(q) => {
            let ne0 = info.dims.first().copied().unwrap_or(1);
            if ne0 % q.block_size() != 0 {
                bail!(
                    Format,
                    "ne[0] = {ne0} is not a multiple of the {} block size {}",
                    q.name(),
                    q.block_size()
                );
            }
            let (format, logical, attributes) = names.get(info.type_id)?;
            Typed {
                format,
                dtype: DType::U8,
                logical,
                attributes: Some(attributes),
                length: Some(q.byte_size(count).ok_or_else(overflow)?),
            }
        }
        GgmlType::Unknown(id) => {
            let (format, logical, attributes) = names.get(id)?;
            Typed {
                format,
                dtype: DType::U8,
                logical,
                attributes: Some(attributes),
                length: None,
            }
        }
    })
}

/// What every tensor's object shares: texts made once, the arena of names.
struct Build {
    data: CText,
    dense: CText,
    names: TypeNames,
    arena: TextArena,
}

impl Build {
    fn new() -> Result<Build> {
        Ok(Build {
            data: CText::new("data")?,
            dense: CText::new("dense")?,
            names: TypeNames::default(),
            arena: TextArena::default(),
        })
    }

    /// The object of one tensor info: shape, size and type; its offset is still
    /// relative to the data section (checked for alignment here, placed by `place`).
    fn object(&mut self, info: &Info<'_>, alignment: u64) -> Result<Object> {
        let name = info.name.as_str();
        let ctx = |e: crate::error::Error| e.context(format!("GGUF tensor '{name}'"));
        let shape: Vec<u64> = info.dims.iter().rev().copied().collect();
        let count = numel(&shape)
            .ok_or_else(|| ctx(err!(Format, "dims {:?} overflow u64 elements", info.dims)))?;
        let typed = typed(info, count, &self.dense, &mut self.names).map_err(ctx)?;
        if !info.offset.is_multiple_of(alignment) {
            return Err(ctx(err!(
                Format,
                "data offset {} is not a multiple of the alignment {alignment}",
                info.offset
            )));
        }
        let length = typed.length.unwrap_or(0);
        let mut component = Component::raw(
            self.data.clone(),
            typed.dtype,
            typed.logical,
            info.offset,
            length,
        );
        if typed.length.is_none() {
            component.steps =
                vec![Step::Format(std::sync::Arc::new(UnknownType(info.type_id)))].into();
        }
        Ok(Object {
            name: info.name.clone(),
            format: typed.format,
            shape: Shape::from(shape),
            attributes: typed.attributes,
            components: Components::One(component),
        })
    }
}

/// Moves every object's data from its data-section offset to its file offset (the data
/// section starts at `data_start`) and checks it lies inside the file and overlaps no
/// other. Tensors in data order (what writers produce) are checked on the way; only
/// files with tensors out of order pay for collecting and sorting their ranges.
fn place(objects: &mut [Object], data_start: u64, size: u64) -> Result<()> {
    let mut last: Option<(u64, usize)> = None;
    let mut in_order = true;
    for (i, obj) in objects.iter_mut().enumerate() {
        let name = obj.name.as_str();
        let ctx = |e: crate::error::Error| e.context(format!("GGUF tensor '{name}'"));
        let Components::One(c) = &mut obj.components else {
            unreachable!("a GGUF object has one component")
        };
        let relative = c.blob.offset;
        let offset = data_start
            .checked_add(relative)
            .ok_or_else(|| ctx(err!(Format, "data offset {relative} overflows u64")))?;
        let length = c.blob.length;
        if offset.checked_add(length).is_none_or(|end| end > size) {
            return Err(ctx(err!(
                Format,
                "{length} bytes at file offset {offset} (data offset {relative}) reach past the \
                 end of the {size}-byte file"
            )));
        }
        c.blob.offset = offset;
        if length > 0 {
            if let Some((end, _)) = last
                && offset < end
            {
                in_order = false;
            }
            last = Some((offset + length, i));
        }
    }
    if in_order {
        return Ok(());
    }
    let range = |o: &Object| {
        let c = &o.components()[0];
        (c.offset(), c.offset() + c.length())
    };
    let mut order: Vec<u32> = (0..objects.len() as u32)
        .filter(|&i| objects[i as usize].components()[0].length() > 0)
        .collect();
    order.sort_unstable_by_key(|&i| (range(&objects[i as usize]), i));
    for pair in order.windows(2) {
        let (a, b) = (&objects[pair[0] as usize], &objects[pair[1] as usize]);
        let ((a0, a1), (b0, b1)) = (range(a), range(b));
        if b0 < a1 {
            bail!(
                Format,
                "GGUF tensors '{}' (bytes [{a0}, {a1})) and '{}' (bytes [{b0}, {b1})) overlap",
                a.name(),
                b.name()
            );
        }
    }
    Ok(())
}
