//! The decode pipeline of a data object: what the descriptor's encoding, filter and
//! compression stages are, and `TgmPipeline`, which runs them backwards on the stored
//! bytes (decompress, unshuffle, unpack simple_packing or bitmask, byte-swap), then
//! restores the masked NaN/Inf values.

use std::borrow::Cow;

use crate::codec::swap_in_place;
use crate::error::{Error, ErrorKind, Result, bail, err};
use crate::limits::Limits;
use crate::model::FormatStep;
use crate::value::cbor::Value;

use super::codecs::{Compression, bit, buffer, decompress, read_bits, to_usize};
use super::descriptors::{Kind, Layout, float_field, int_field, text_field, uint_field};
use super::masks::{Mask, MaskEntry};

/// simple_packing parameters and the float width it decodes to.
#[derive(Debug, Clone, Copy)]
struct Packing {
    reference: f64,
    binary_scale: i32,
    decimal_scale: i32,
    bits: u32,
    /// 8 for float64 output, 4 for float32.
    out_width: usize,
}

impl Packing {
    /// Reads a descriptor's `sp_*` parameters (for a float64 or float32 object only).
    fn read(desc: &Value, layout: &Layout<'_>) -> Result<Self> {
        let bits = uint_field(desc, "sp_bits_per_value")?;
        if bits > 64 {
            bail!(Format, "sp_bits_per_value {bits} is over 64");
        }
        let reference = float_field(desc, "sp_reference_value")?;
        if !reference.is_finite() {
            bail!(Format, "sp_reference_value {reference} is not finite");
        }
        let scale = |key: &str| -> Result<i32> {
            let v = int_field(desc, key)?;
            i32::try_from(v).map_err(|_| err!(Format, "{key} {v} is out of range"))
        };
        let out_width = match layout.kind {
            Kind::F64 => 8,
            Kind::F32 => 4,
            _ => bail!(
                Unsupported,
                "simple_packing of dtype '{}' is not supported (float64 or float32)",
                layout.dtype_name
            ),
        };
        Ok(Packing {
            reference,
            binary_scale: scale("sp_binary_scale_factor")?,
            decimal_scale: scale("sp_decimal_scale_factor")?,
            bits: bits as u32,
            out_width,
        })
    }
}

/// A descriptor's encoding, filter and compression stages.
pub(super) struct Stages {
    /// The first stage this build can't run, as the error message to give.
    unsupported: Option<String>,
    packing: Option<Packing>,
    /// Bytes the encoding stage produces: what decompression (and unshuffling) gives.
    pre_len: u64,
    shuffle: Option<usize>,
    compression: Compression,
}

impl Stages {
    /// Reads the stages of a descriptor. A stage this build lacks is kept as the
    /// `Unsupported` error to give on access; the packed size is bounded by
    /// `limits.max_decoded_size`.
    pub(super) fn read(desc: &Value, layout: &Layout<'_>, limits: &Limits) -> Result<Self> {
        let encoding = text_field(desc, "encoding")?;
        let filter = text_field(desc, "filter")?;
        let compression = text_field(desc, "compression")?;
        let mut unsupported = None;
        let (packing, pre_len) = match encoding {
            "none" if layout.kind == Kind::Bitmask => (None, layout.numel.div_ceil(8)),
            "none" => (None, layout.decoded_length),
            "simple_packing" => {
                let p = Packing::read(desc, layout)?;
                // numel x bits can pass u64 (a decode limit raised to 2^64 lets numel be
                // up to it): counted in u128 and refused, never truncated.
                let bits = (layout.numel as u128 * p.bits as u128).div_ceil(8);
                let bytes = u64::try_from(bits)
                    .map_err(|_| err!(Format, "{bits} packed bytes overflow u64"))?;
                (Some(p), bytes)
            }
            other => {
                unsupported = Some(format!("encoding '{other}' is not supported by this build"));
                (None, 0)
            }
        };
        if pre_len > limits.max_decoded_size {
            bail!(
                Limit,
                "{pre_len} packed bytes are over the decode limit {}",
                limits.max_decoded_size
            );
        }
        let shuffle = match filter {
            "none" => None,
            "shuffle" => Some(shuffle_width(desc, pre_len, unsupported.is_none())?),
            other => {
                unsupported
                    .get_or_insert(format!("filter '{other}' is not supported by this build"));
                None
            }
        };
        let compression = match compression {
            "none" => Compression::None,
            "zstd" => Compression::Zstd,
            "lz4" => Compression::Lz4,
            other => {
                unsupported.get_or_insert(format!(
                    "compression '{other}' is not supported by this build"
                ));
                Compression::None
            }
        };
        Ok(Stages {
            unsupported,
            packing,
            pre_len,
            shuffle,
            compression,
        })
    }

    /// Checks the size of an uncompressed payload against what the stages imply.
    pub(super) fn check_payload(&self, payload_len: u64) -> Result<()> {
        if self.unsupported.is_none()
            && self.compression == Compression::None
            && payload_len != self.pre_len
        {
            bail!(
                Format,
                "the payload holds {payload_len} bytes but the descriptor implies {}",
                self.pre_len
            );
        }
        Ok(())
    }

    /// Whether the payload is the decoded bytes as they are (up to byte order).
    pub(super) fn is_identity(&self, layout: &Layout<'_>) -> bool {
        self.unsupported.is_none()
            && self.packing.is_none()
            && self.shuffle.is_none()
            && self.compression == Compression::None
            && layout.kind != Kind::Bitmask
    }

    /// The width of the elements to byte-swap after the other stages, 0 for none.
    pub(super) fn swap(&self, layout: &Layout<'_>) -> u8 {
        if layout.big && layout.kind != Kind::Bitmask && self.packing.is_none() {
            (layout.width / if layout.logical.is_some() { 2 } else { 1 }) as u8
        } else {
            0
        }
    }
}

/// The shuffle stage's element size, which must divide the `pre_len` bytes to unshuffle
/// when the stages before it can run (`checked`).
fn shuffle_width(desc: &Value, pre_len: u64, checked: bool) -> Result<usize> {
    let w = uint_field(desc, "shuffle_element_size")?;
    if w == 0 || w > 1 << 16 {
        bail!(Format, "shuffle_element_size {w} is out of range");
    }
    if checked && !pre_len.is_multiple_of(w) {
        bail!(
            Format,
            "shuffle_element_size {w} does not divide the {pre_len} bytes to unshuffle"
        );
    }
    Ok(w as usize)
}

/// The decoding pipeline of one Tensogram data object, run backwards on its stored bytes
/// (payload, then mask blobs). Immutable; shared between threads. A decode allocates the
/// decompressed and the unshuffled stage when there are such stages (each about the
/// decoded size) and one flag per element for each mask.
#[derive(Debug)]
pub(super) struct TgmPipeline {
    /// The first stage this build can't run, as the error message to give.
    unsupported: Option<String>,
    numel: u64,
    kind: Kind,
    /// Stored payload bytes at the start of the blob.
    payload_len: usize,
    /// Bytes after decompression (and after unshuffling).
    pre_len: usize,
    compression: Compression,
    shuffle: Option<usize>,
    packing: Option<Packing>,
    /// Width of the elements to byte-swap (big-endian payloads), 0 for none.
    swap: u8,
    masks: Vec<Mask>,
    /// The object's decoded bytes.
    decoded_len: u64,
}

impl TgmPipeline {
    /// The pipeline of a blob starting at `origin` with `payload_len` payload bytes, then
    /// the `masks`.
    pub(super) fn new(
        stages: Stages,
        layout: &Layout<'_>,
        origin: u64,
        payload_len: u64,
        masks: Vec<MaskEntry>,
    ) -> Result<Self> {
        Ok(TgmPipeline {
            swap: stages.swap(layout),
            unsupported: stages.unsupported,
            numel: layout.numel,
            kind: layout.kind,
            payload_len: to_usize(payload_len)?,
            pre_len: to_usize(stages.pre_len)?,
            compression: stages.compression,
            shuffle: stages.shuffle,
            packing: stages.packing,
            masks: masks
                .into_iter()
                .map(|m| m.relative_to(origin))
                .collect::<Result<_>>()?,
            decoded_len: layout.decoded_length,
        })
    }

    /// Writes the decoded elements of the decompressed, unshuffled `stage` to `dst`.
    fn unpack_into(&self, stage: &[u8], dst: &mut [u8]) {
        if let Some(p) = self.packing {
            unpack(stage, self.numel as usize, &p, dst);
        } else if self.kind == Kind::Bitmask {
            for (i, d) in dst.iter_mut().enumerate() {
                *d = bit(stage, i);
            }
        } else {
            dst.copy_from_slice(stage);
            swap_in_place(dst, self.swap);
        }
    }
}

impl FormatStep for TgmPipeline {
    fn output_len(&self) -> u64 {
        self.decoded_len
    }

    fn apply(&self, stored: &[u8], dst: &mut [u8]) -> Result<()> {
        if let Some(msg) = &self.unsupported {
            return Err(Error::new(ErrorKind::Unsupported, msg.clone()));
        }
        if stored.len() < self.payload_len {
            bail!(
                Internal,
                "{} stored bytes, fewer than the payload's {}",
                stored.len(),
                self.payload_len
            );
        }
        let stage = decompress(&self.compression, &stored[..self.payload_len], self.pre_len)?;
        if stage.len() != self.pre_len {
            bail!(
                Format,
                "the payload holds {} bytes, the descriptor implies {}",
                stage.len(),
                self.pre_len
            );
        }
        let stage = match self.shuffle {
            Some(width) if width > 1 => Cow::Owned(unshuffle(&stage, width)?),
            _ => stage,
        };
        self.unpack_into(&stage, dst);
        let out_kind = match self.packing {
            Some(p) if p.out_width == 8 => Kind::F64,
            Some(_) => Kind::F32,
            None => self.kind,
        };
        for m in &self.masks {
            m.apply(stored, dst, self.numel as usize, out_kind)?;
        }
        Ok(())
    }
}

/// Undoes the byte shuffle of `width`-byte elements (allocates a copy).
fn unshuffle(stage: &[u8], width: usize) -> Result<Vec<u8>> {
    let mut out = buffer(stage.len())?;
    let n = stage.len() / width;
    for (b, plane) in stage.chunks_exact(n.max(1)).enumerate().take(width) {
        for (i, &byte) in plane.iter().enumerate() {
            out[i * width + b] = byte;
        }
    }
    Ok(out)
}

/// Unpacks `n` simple_packing values (MSB-first, `p.bits` each) into `dst` as
/// little-endian float64 or float32: value = reference + q x 2^E x 10^-D.
fn unpack(src: &[u8], n: usize, p: &Packing, dst: &mut [u8]) {
    let scale = 2f64.powi(p.binary_scale) * 10f64.powi(-p.decimal_scale);
    let bits = p.bits as u64;
    for i in 0..n {
        let v = if bits == 0 {
            p.reference
        } else {
            p.reference + read_bits(src, i as u64 * bits, p.bits) as f64 * scale
        };
        if p.out_width == 8 {
            dst[i * 8..i * 8 + 8].copy_from_slice(&v.to_le_bytes());
        } else {
            dst[i * 4..i * 4 + 4].copy_from_slice(&(v as f32).to_le_bytes());
        }
    }
}
