//! Legacy v0.1.0 files: a CBOR array of per-tensor maps after the blobs, an 8-byte size,
//! no footer magic. Read into the same model as v1.x files: long dtype names map to the
//! short ones, big-endian data is swapped on read (a `SwapBytes` step), and the
//! single-blob sparse layouts (`sparsecoo`, `sparsecsr`) are presented as `sparse_coo` /
//! `sparse_csr` objects whose components are slices of the one blob (`Slice` steps, and
//! for COO records the gathers `CooGather` below).

use std::borrow::Cow;
use std::collections::HashSet;
use std::sync::Arc;

use crate::codec::digest;
use crate::dtype::{DType, dense_byte_size};
use crate::error::{Result, bail, err};
use crate::limits::Limits;
use crate::model::{
    Attributes, Blob, CText, Component, Container, Encoding, FormatStep, Model, Object, Step,
    check_name,
};

use super::ReadAt;
use super::ztensor::manifest::{self, Parser};
use super::ztensor::{TRAITS, manifest_region};
use crate::value::cbor::Writer;

/// Magic bytes at the start of legacy v0.1 files.
pub const MAGIC_V01: &[u8; 8] = b"ZTEN0001";

/// True for the first bytes of a v0.1 file.
pub(crate) fn detect(head: &[u8]) -> bool {
    head.starts_with(MAGIC_V01)
}

/// Reads a v0.1 file: the 8-byte manifest size at its end, then the manifest. Returns the
/// model and where the data region ends (the manifest's start).
pub(crate) fn parse(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<(Model, u64)> {
    let (start, bytes) = manifest_region(read, size, 8, limits, |_| Ok(()))?;
    Ok((parse_manifest(&bytes, start, limits)?, start))
}

/// Parses a legacy manifest (an array of tensor maps, at file offset `base`) into a model.
fn parse_manifest(bytes: &[u8], base: u64, limits: &Limits) -> Result<Model> {
    let mut p = manifest::parser(bytes, base, limits);
    let mut len = p.array(0, "a legacy manifest")?;
    let mut objects = Vec::new();
    while p.more(&mut len)? {
        let i = objects.len();
        let object =
            parse_tensor(&mut p, limits).map_err(|e| e.context(format!("legacy tensor #{i}")))?;
        objects.push(object);
    }
    p.finish()?;
    Model::new(Container::ZTensor, TRAITS, "0.1.0", None, objects)
}

/// The fields of one legacy tensor map.
#[derive(Default)]
struct Fields<'a> {
    name: Option<Cow<'a, str>>,
    offset: Option<u64>,
    size: Option<u64>,
    dtype: Option<Cow<'a, str>>,
    layout: Option<Cow<'a, str>>,
    shape: Option<Vec<u64>>,
    encoding: Option<Cow<'a, str>>,
    endianness: Option<Cow<'a, str>>,
    checksum: Option<Cow<'a, str>>,
    sparse_format: Option<Cow<'a, str>>,
    /// Custom keys and values, as CBOR bytes, for the object's attributes.
    custom: Vec<(&'a [u8], &'a [u8])>,
}

fn parse_tensor(p: &mut Parser<'_>, limits: &Limits) -> Result<Object> {
    let mut len = p.map(1, "a legacy tensor entry")?;
    let mut seen = HashSet::new();
    let mut f = Fields::default();
    while p.more(&mut len)? {
        let key_start = p.c.position();
        let r = p.c.text();
        let Some(key) = p.cbor(r)? else {
            p.skip(2)?;
            let key_bytes = &p.c.bytes()[key_start..p.c.position()];
            let value = p.capture(2)?;
            f.custom.push((key_bytes, value));
            continue;
        };
        if !seen.insert(key.clone()) {
            bail!(
                Format,
                "the legacy tensor has the key '{key}' more than once"
            );
        }
        let key_bytes = &p.c.bytes()[key_start..p.c.position()];
        match key.as_ref() {
            "name" => f.name = Some(p.text("'name'")?),
            "offset" => f.offset = Some(p.uint("'offset'")?),
            "size" => f.size = Some(p.uint("'size'")?),
            "dtype" => f.dtype = Some(p.text("'dtype'")?),
            "layout" => f.layout = p.optional_text("'layout'")?,
            "shape" => f.shape = Some(manifest::shape(p, 2, limits)?.to_vec()),
            "encoding" => f.encoding = p.optional_text("'encoding'")?,
            "data_endianness" => f.endianness = p.optional_text("'data_endianness'")?,
            "checksum" => f.checksum = p.optional_text("'checksum'")?,
            "sparse_format" => f.sparse_format = p.optional_text("'sparse_format'")?,
            _ => {
                let value = p.capture(2)?;
                f.custom.push((key_bytes, value));
            }
        }
    }
    let missing = |k: &str| err!(Format, "legacy tensor lacks the required key '{k}'");
    let name_text = f.name.as_deref().ok_or_else(|| missing("name"))?;
    let name = check_name("object", name_text, limits.max_name_length)
        .map_err(|e| e.context(format!("'{name_text}'")))?;
    let offset = f.offset.ok_or_else(|| missing("offset"))?;
    let length = f.size.ok_or_else(|| missing("size"))?;
    let dtype = {
        let d = f.dtype.as_deref().ok_or_else(|| missing("dtype"))?;
        DType::from_legacy_name(d).ok_or_else(|| err!(Format, "unknown dtype '{d}'"))?
    };
    let shape = f.shape.clone().ok_or_else(|| missing("shape"))?;
    build(name, (offset, length, dtype), shape, &f).map_err(|e| e.context(format!("'{name_text}'")))
}

/// The object of one legacy tensor entry: its blob (offset, length) of `dtype` elements.
fn build(
    name: CText,
    (offset, length, dtype): (u64, u64, DType),
    shape: Vec<u64>,
    f: &Fields<'_>,
) -> Result<Object> {
    let parts = Parts::new(f, offset, length, dtype)?;
    let (format, components) = match parts.layout {
        "dense" => ("dense", parts.dense(&shape)?),
        "sparsecoo" => ("sparse_coo", parts.sparse_coo(&shape)?),
        "sparsecsr" => ("sparse_csr", parts.sparse_csr(&shape)?),
        other => bail!(Unsupported, "legacy layout '{other}' is not supported"),
    };
    Ok(Object {
        name,
        format: CText::new(format)?,
        shape: shape.into(),
        attributes: custom_attributes(&f.custom),
        components: components.into(),
    })
}

/// The custom keys of a legacy entry, as the object's attribute map.
fn custom_attributes(custom: &[(&[u8], &[u8])]) -> Option<Attributes> {
    (!custom.is_empty()).then(|| {
        let mut cbor = Writer::new();
        cbor.map(custom.len());
        for (k, v) in custom {
            cbor.raw(k);
            cbor.raw(v);
        }
        Attributes::from_cbor(cbor.as_slice())
    })
}

/// What every component of a legacy tensor shares: its one blob, how it is encoded, the
/// byte order of its elements, its digest, and its layout.
struct Parts {
    offset: u64,
    length: u64,
    encoding: Encoding,
    big_endian: bool,
    digest: Option<CText>,
    dtype: DType,
    /// The element width of `dtype`.
    width: u8,
    /// `dense`, `sparsecoo` or `sparsecsr` (or one this library doesn't read).
    layout: &'static str,
}

impl Parts {
    fn new(f: &Fields<'_>, offset: u64, length: u64, dtype: DType) -> Result<Parts> {
        let encoding = match f.encoding.as_deref().unwrap_or("raw") {
            "raw" => Encoding::Raw,
            "zstd" => Encoding::Zstd,
            other => bail!(Unsupported, "encoding '{other}' is not supported"),
        };
        let big_endian = match f.endianness.as_deref().unwrap_or("little") {
            "little" => false,
            "big" => true,
            other => bail!(
                Format,
                "data_endianness '{other}' is neither 'little' nor 'big'"
            ),
        };
        let digest = match f.checksum.as_deref() {
            Some(d) => {
                digest::check_syntax(d, TRAITS.digest_kinds)?;
                Some(CText::new(d)?)
            }
            None => None,
        };
        let layout = match f.layout.as_deref().unwrap_or("dense") {
            "dense" => "dense",
            "sparse" => match f.sparse_format.as_deref() {
                Some("coo") => "sparsecoo",
                Some("csr") => "sparsecsr",
                other => bail!(Unsupported, "sparse_format {other:?} is not supported"),
            },
            "sparsecoo" => "sparsecoo",
            "sparsecsr" => "sparsecsr",
            other => bail!(Unsupported, "legacy layout '{other}' is not supported"),
        };
        Ok(Parts {
            offset,
            length,
            encoding,
            big_endian,
            digest,
            dtype,
            width: dtype.size() as u8,
            layout,
        })
    }

    /// The blob's decoded size: its length when raw; for zstd, `derived` (what the shape
    /// says), which sparse layouts don't have.
    fn decoded_blob(&self, derived: Option<u64>) -> Result<u64> {
        match self.encoding {
            Encoding::Raw | Encoding::Pipeline => Ok(self.length),
            Encoding::Zstd => derived.ok_or_else(|| {
                err!(
                    Unsupported,
                    "a zstd-encoded legacy {} tensor has no recorded decoded size",
                    self.layout
                )
            }),
        }
    }

    fn blob(&self, decoded_length: u64) -> Blob {
        Blob {
            file: 0,
            offset: self.offset,
            length: self.length,
            encoding: self.encoding,
            decoded_length,
        }
    }

    /// A component of the blob (decoded to `decoded` bytes), read through `steps` and,
    /// for big-endian elements of `width` bytes, a swap after them.
    fn part(
        &self,
        role: &str,
        dtype: DType,
        (decoded_length, blob): (u64, Blob),
        mut steps: Vec<Step>,
        width: u8,
    ) -> Result<Component> {
        if self.big_endian && width > 1 {
            steps.push(Step::SwapBytes(width));
        }
        Ok(Component {
            role: CText::new(role)?,
            dtype,
            logical_type: None,
            blob,
            decoded_length,
            digest: self.digest.clone(),
            steps: steps.into(),
        })
    }

    fn dense(&self, shape: &[u64]) -> Result<Vec<Component>> {
        let dtype = self.dtype;
        let size = dense_byte_size(shape, dtype, None).ok_or_else(|| {
            err!(
                Format,
                "the byte size of shape {shape:?} of {dtype} overflows u64"
            )
        })?;
        let decoded = self.decoded_blob(Some(size))?;
        let blob = self.blob(decoded);
        Ok(vec![self.part(
            "data",
            dtype,
            (decoded, blob),
            vec![],
            self.width,
        )?])
    }

    /// COO records `[ndim x u64 index][value]`: values and coordinates gathered.
    fn sparse_coo(&self, shape: &[u64]) -> Result<Vec<Component>> {
        let (dtype, width) = (self.dtype, self.width);
        let decoded = self.decoded_blob(None)?;
        let blob = self.blob(decoded);
        let ndim = shape.len() as u64;
        let record = ndim * 8 + width as u64;
        if decoded % record != 0 {
            bail!(
                Format,
                "COO blob of {decoded} bytes is not a whole number of {record}-byte records"
            );
        }
        let nnz = decoded / record;
        let gather = |coords: bool| {
            vec![Step::Format(Arc::new(CooGather {
                ndim,
                nnz,
                value_size: width,
                coords,
            }))]
        };
        Ok(vec![
            self.part(
                "values",
                dtype,
                (nnz * width as u64, blob),
                gather(false),
                width,
            )?,
            self.part(
                "coords",
                DType::U64,
                (nnz * ndim * 8, blob),
                gather(true),
                8,
            )?,
        ])
    }

    /// CSR: row pointers, then indices, then values, each a slice of the blob.
    fn sparse_csr(&self, shape: &[u64]) -> Result<Vec<Component>> {
        let (dtype, width) = (self.dtype, self.width);
        if shape.len() != 2 {
            bail!(Format, "a CSR tensor needs a 2-d shape, not {shape:?}");
        }
        let decoded = self.decoded_blob(None)?;
        let blob = self.blob(decoded);
        let indptr_len = shape[0]
            .checked_add(1)
            .and_then(|r| r.checked_mul(8))
            .filter(|&n| n <= decoded)
            .ok_or_else(|| {
                err!(
                    Format,
                    "CSR blob of {decoded} bytes cannot hold {} row pointers",
                    shape[0] as u128 + 1
                )
            })?;
        let rest = decoded - indptr_len;
        let per_value = 8 + width as u64;
        if rest % per_value != 0 {
            bail!(
                Format,
                "CSR blob of {decoded} bytes does not split into row pointers, indices and values"
            );
        }
        let nnz = rest / per_value;
        let slice = |start: u64, len: u64| vec![Step::Slice { start, len }];
        let values_len = nnz * width as u64;
        Ok(vec![
            self.part(
                "values",
                dtype,
                (values_len, blob),
                slice(indptr_len + nnz * 8, values_len),
                width,
            )?,
            self.part(
                "indices",
                DType::U64,
                (nnz * 8, blob),
                slice(indptr_len, nnz * 8),
                8,
            )?,
            self.part(
                "indptr",
                DType::U64,
                (indptr_len, blob),
                slice(0, indptr_len),
                8,
            )?,
        ])
    }
}

/// Legacy COO records `[ndim x u64 index][value]`, nnz of them: gathers either the
/// values, or the indices into structure-of-arrays order (all of dimension 0, then 1 ...).
#[derive(Debug)]
struct CooGather {
    ndim: u64,
    nnz: u64,
    value_size: u8,
    /// True: the coordinates; false: the values.
    coords: bool,
}

impl FormatStep for CooGather {
    fn apply(&self, records: &[u8], dst: &mut [u8]) -> Result<()> {
        let (ndim, nnz) = (self.ndim as usize, self.nnz as usize);
        let vs = self.value_size as usize;
        let record = ndim * 8 + vs;
        for i in 0..nnz {
            let rec = &records[i * record..(i + 1) * record];
            if self.coords {
                for d in 0..ndim {
                    let out = (d * nnz + i) * 8;
                    dst[out..out + 8].copy_from_slice(&rec[d * 8..d * 8 + 8]);
                }
            } else {
                dst[i * vs..(i + 1) * vs].copy_from_slice(&rec[ndim * 8..]);
            }
        }
        Ok(())
    }

    fn output_len(&self) -> u64 {
        let width = if self.coords {
            self.ndim * 8
        } else {
            u64::from(self.value_size)
        };
        self.nnz * width
    }
}
