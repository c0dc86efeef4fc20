//! Hugging Face safetensors: an 8-byte little-endian header length, a JSON header
//! (`{"name": {"dtype", "shape", "data_offsets"}, "__metadata__": {..}}`), then the data
//! section. Every tensor becomes a "dense" object with one raw "data" component pointing
//! into the data section, so views are zero-copy wherever the file aligns the tensor to
//! its element size (files written by the reference library always do).
//!
//! Choices where the format leaves room:
//! - Version: safetensors has no version field and one layout since its first release;
//!   the model reports "1".
//! - Object order: by data offset (the order of the bytes in the file), ties in header
//!   order. JSON key order carries no meaning in safetensors.
//! - `__metadata__` (a string-to-string map) becomes the file attributes, in header order;
//!   `null` means none.
//! - Unknown keys in a tensor entry are ignored; gaps between tensors and trailing bytes
//!   after the last one are accepted (the reference library refuses them, but they harm
//!   nobody); overlapping tensors are refused.
//! - dtypes: F64 F32 F16 BF16 I64 I32 I16 I8 U64 U32 U16 U8 BOOL as themselves; F8_E4M3,
//!   F8_E5M2, F8_E4M3FNUZ, F8_E5M2FNUZ, F8_E8M0 as u8 + the matching fp8 logical type
//!   (`f8_e8m0fnu` for the MX scales); F4, F6_E2M3 and F6_E3M2, whose values are packed
//!   (a little-endian bit stream, see `quant::subbyte`), as u8 + `f4_e2m1fn_x2`,
//!   `f6_e2m3fn_x4`, `f6_e3m2fn_x4`; C64 as f32 + "complex64". Unknown names are
//!   `Unsupported`, naming the dtype and the tensor.

mod header;
mod stream;

use header::{Names, State};

use crate::dtype::DType;
use crate::error::{ErrorKind, Result, bail, err};
use crate::formats::ReadAt;
use crate::limits::{Limits, MAX_CBOR_DEPTH};
use crate::model::{Container, Model, Object};
use crate::value::json;

/// The version string a safetensors model reports (the format has none of its own).
pub(crate) const VERSION: &str = "1";

/// The storage dtype and logical type of a safetensors dtype name. `Unsupported` for a
/// name this build can't represent.
fn dtype_of(name: &str) -> Result<(DType, Option<&'static str>)> {
    Ok(match name {
        "F64" => (DType::F64, None),
        "F32" => (DType::F32, None),
        "F16" => (DType::F16, None),
        "BF16" => (DType::BF16, None),
        "I64" => (DType::I64, None),
        "I32" => (DType::I32, None),
        "I16" => (DType::I16, None),
        "I8" => (DType::I8, None),
        "U64" => (DType::U64, None),
        "U32" => (DType::U32, None),
        "U16" => (DType::U16, None),
        "U8" => (DType::U8, None),
        "BOOL" => (DType::Bool, None),
        "F8_E4M3" => (DType::U8, Some("f8_e4m3fn")),
        "F8_E5M2" => (DType::U8, Some("f8_e5m2")),
        "F8_E4M3FNUZ" => (DType::U8, Some("f8_e4m3fnuz")),
        "F8_E5M2FNUZ" => (DType::U8, Some("f8_e5m2fnuz")),
        "C64" => (DType::F32, Some("complex64")),
        "F8_E8M0" => (DType::U8, Some("f8_e8m0fnu")),
        "F4" => (DType::U8, Some("f4_e2m1fn_x2")),
        "F6_E2M3" => (DType::U8, Some("f6_e2m3fn_x4")),
        "F6_E3M2" => (DType::U8, Some("f6_e3m2fn_x4")),
        other => bail!(
            Unsupported,
            "unknown safetensors dtype {other:?} (known: F64 F32 F16 BF16 I64 I32 I16 I8 \
             U64 U32 U16 U8 BOOL F8_E4M3 F8_E5M2 F8_E4M3FNUZ F8_E5M2FNUZ F8_E8M0 F6_E2M3 \
             F6_E3M2 F4 C64)"
        ),
    })
}

/// True for the first bytes of a safetensors file: a u64 little-endian header length,
/// then a JSON object, which may begin with JSON whitespace (writers pad headers so the
/// data is page-aligned; safetensors itself accepts it). When all the bytes shown are
/// whitespace, the parser decides. A length past the end still says safetensors: the
/// parser reports the truncation.
pub(crate) fn detect(head: &[u8]) -> bool {
    if head.len() < 9 {
        return false;
    }
    let n = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
    let json = &head[8..];
    let first = json
        .iter()
        .find(|b| !matches!(b, b' ' | b'\t' | b'\n' | b'\r'));
    n >= 2 && first.is_none_or(|&b| b == b'{')
}

/// Parses a safetensors file into a model. Reads (and, without a mapping, allocates) the
/// JSON header once, bounded by `limits.max_manifest_size`, and streams it into objects
/// without a JSON tree; touches no tensor data. Returns the model and the end of the data
/// region (the file).
pub(crate) fn parse(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<(Model, u64)> {
    let head = read(0, 8)?;
    let header_len = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
    if header_len > size - 8 {
        bail!(
            Format,
            "safetensors header of {header_len} bytes reaches past the end of the {size}-byte file"
        );
    }
    if header_len > limits.max_manifest_size {
        bail!(
            Limit,
            "safetensors header of {header_len} bytes is over the manifest limit of {}",
            limits.max_manifest_size
        );
    }
    let data_start = 8 + header_len;
    let header = read(8, header_len)?;
    let text = std::str::from_utf8(&header).map_err(|e| {
        err!(
            Format,
            "safetensors header is not UTF-8 (bad byte at file offset {})",
            8 + e.valid_up_to()
        )
    })?;
    let depth = limits.max_cbor_depth.min(MAX_CBOR_DEPTH);
    let mut state = State {
        data_start,
        size,
        limits,
        names: Names::default(),
        objects: Vec::new(),
        attributes: None,
        error: None,
    };
    // The header is streamed straight into objects: no JSON tree is built, so memory is
    // the objects' (and the header's own pages), whatever the header holds.
    json::stream(text, depth, |level, de| {
        stream::header(level, de, &mut state)
    })
    .map_err(json_error)?;
    drop(header);
    if let Some(e) = state.error {
        return Err(e);
    }
    let State {
        mut objects,
        attributes,
        ..
    } = state;
    sort_by_data_offset(&mut objects);
    // The name index refuses a repeated tensor name before overlaps are looked at.
    let mut model = Model::new(
        Container::Safetensors,
        super::UNALIGNED,
        VERSION,
        attributes,
        objects,
    )
    .map_err(|e| e.context("safetensors header"))?;
    check_overlaps(&model.objects, data_start)?;
    model.data_offset = data_start;
    Ok((model, size))
}

/// The header's JSON error, positioned in the file: nesting too deep is a `Limit`.
fn json_error(e: json::JsonError) -> crate::error::Error {
    let kind = if e.message.starts_with("nesting deeper") {
        ErrorKind::Limit
    } else {
        ErrorKind::Format
    };
    crate::error::Error::new(
        kind,
        format!(
            "safetensors header: JSON error at file offset {}: {}",
            8 + e.offset,
            e.message
        ),
    )
}

/// Refuses tensors (in data order, the data section starting at `data_start`) whose
/// bytes overlap.
fn check_overlaps(objects: &[Object], data_start: u64) -> Result<()> {
    let mut last: Option<(u64, &str)> = None;
    for obj in objects {
        let c = &obj.components()[0];
        let (begin, end) = (
            c.offset() - data_start,
            c.offset() - data_start + c.length(),
        );
        if begin == end {
            continue;
        }
        if let Some((prev_end, prev)) = last
            && begin < prev_end
        {
            bail!(
                Format,
                "safetensors tensors '{prev}' and '{}' overlap: '{}' starts at data offset \
                 {begin}, before '{prev}' ends at {prev_end}",
                obj.name(),
                obj.name()
            );
        }
        last = Some((end, obj.name()));
    }
    Ok(())
}

/// Orders objects by data offset, ties (zero-length tensors) in header order, through a
/// permutation of u32 indices (a stable sort of the objects themselves would allocate
/// half of them again).
fn sort_by_data_offset(objects: &mut [Object]) {
    let offset = |o: &Object| o.components()[0].offset();
    if objects.windows(2).all(|w| offset(&w[0]) <= offset(&w[1])) {
        return;
    }
    let mut order: Vec<u32> = (0..objects.len() as u32).collect();
    order.sort_unstable_by_key(|&i| (offset(&objects[i as usize]), i));
    // Applies the permutation in place: position j takes the object at order[j].
    for i in 0..order.len() {
        let mut j = i;
        loop {
            let k = order[j] as usize;
            order[j] = j as u32;
            if k == i {
                break;
            }
            objects.swap(j, k);
            j = k;
        }
    }
}
