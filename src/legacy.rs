//! Legacy v0.1.0 files: a CBOR array of per-tensor maps after the blobs, an 8-byte size,
//! no footer magic. Read into the same model as v1.x files: long dtype names map to the
//! short ones, big-endian data is swapped on read, and the single-blob sparse layouts
//! (`sparsecoo`, `sparsecsr`) are presented as `sparse_coo` / `sparse_csr` objects.

use std::borrow::Cow;
use std::collections::HashSet;

use crate::dtype::{DType, dense_byte_size};
use crate::error::{Result, bail, err};
use crate::limits::Limits;
use crate::manifest::Parser;
use crate::model::{
    Attributes, Blob, CText, Component, Encoding, Model, Object, Transform, check_digest_syntax,
    check_name,
};

/// Parses a legacy manifest (an array of tensor maps, at file offset `base`) into a model.
pub(crate) fn parse(bytes: &[u8], base: u64, limits: &Limits) -> Result<Model> {
    let mut p = Parser::new(bytes, base, limits);
    let mut len = p.array(0, "a legacy manifest")?;
    let mut objects = Vec::new();
    while p.more(&mut len)? {
        let i = objects.len();
        let object =
            parse_tensor(&mut p, limits).map_err(|e| e.context(format!("legacy tensor #{i}")))?;
        objects.push(object);
    }
    let r = p.c.finish();
    p.cbor(r)?;
    Model::new("0.1.0", None, objects)
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
            "shape" => f.shape = Some(p.shape(2, limits)?.to_vec()),
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
    let name_text = f.name.ok_or_else(|| missing("name"))?;
    let name = check_name("object", &name_text, limits.max_name_length)
        .map_err(|e| e.context(format!("'{name_text}'")))?;
    build(
        name,
        f.offset.ok_or_else(|| missing("offset"))?,
        f.size.ok_or_else(|| missing("size"))?,
        {
            let d = f.dtype.ok_or_else(|| missing("dtype"))?;
            DType::from_legacy_name(&d).ok_or_else(|| err!(Format, "unknown dtype '{d}'"))?
        },
        f.shape.ok_or_else(|| missing("shape"))?,
        f.encoding.as_deref(),
        f.endianness.as_deref(),
        f.checksum.as_deref(),
        f.layout.as_deref(),
        f.sparse_format.as_deref(),
        &f.custom,
    )
    .map_err(|e| e.context(format!("'{name_text}'")))
}

#[allow(clippy::too_many_arguments)]
fn build(
    name: CText,
    offset: u64,
    length: u64,
    dtype: DType,
    shape: Vec<u64>,
    encoding: Option<&str>,
    endianness: Option<&str>,
    checksum: Option<&str>,
    layout: Option<&str>,
    sparse_format: Option<&str>,
    custom: &[(&[u8], &[u8])],
) -> Result<Object> {
    let encoding = match encoding.unwrap_or("raw") {
        "raw" => Encoding::Raw,
        "zstd" => Encoding::Zstd,
        other => bail!(Unsupported, "encoding '{other}' is not supported"),
    };
    let big_endian = match endianness.unwrap_or("little") {
        "little" => false,
        "big" => true,
        other => bail!(
            Format,
            "data_endianness '{other}' is neither 'little' nor 'big'"
        ),
    };
    let digest = match checksum {
        Some(d) => {
            check_digest_syntax(d)?;
            Some(CText::new(d)?)
        }
        None => None,
    };
    let layout = match layout.unwrap_or("dense") {
        "sparse" => match sparse_format {
            Some("coo") => "sparsecoo",
            Some("csr") => "sparsecsr",
            other => bail!(Unsupported, "sparse_format {other:?} is not supported"),
        },
        l => l,
    };
    let width = dtype.size() as u8;
    let swap = if big_endian { width } else { 1 };
    let decoded_blob = |derived: Option<u64>| -> Result<u64> {
        match encoding {
            Encoding::Raw | Encoding::Pipeline => Ok(length),
            Encoding::Zstd => derived.ok_or_else(|| {
                err!(
                    Unsupported,
                    "a zstd-encoded legacy {layout} tensor has no recorded decoded size"
                )
            }),
        }
    };
    let part = |role: &str,
                dtype: DType,
                decoded_length: u64,
                blob: Blob,
                transform: Transform|
     -> Result<Component> {
        Ok(Component {
            role: CText::new(role)?,
            dtype,
            logical_type: None,
            blob,
            decoded_length,
            digest: digest.clone(),
            transform,
        })
    };
    let (format, components) = match layout {
        "dense" => {
            let size = dense_byte_size(&shape, dtype, None).ok_or_else(|| {
                err!(
                    Format,
                    "the byte size of shape {shape:?} of {dtype} overflows u64"
                )
            })?;
            let decoded = decoded_blob(Some(size))?;
            let blob = Blob {
                offset,
                length,
                encoding,
                decoded_length: decoded,
            };
            let transform = if swap > 1 {
                Transform::SwapBytes(swap)
            } else {
                Transform::None
            };
            (
                "dense",
                vec![part("data", dtype, decoded, blob, transform)?],
            )
        }
        "sparsecoo" => {
            let decoded = decoded_blob(None)?;
            let blob = Blob {
                offset,
                length,
                encoding,
                decoded_length: decoded,
            };
            let ndim = shape.len() as u64;
            let record = ndim * 8 + width as u64;
            if decoded % record != 0 {
                bail!(
                    Format,
                    "COO blob of {decoded} bytes is not a whole number of {record}-byte records"
                );
            }
            let nnz = decoded / record;
            let big = big_endian;
            let values = Transform::CooValues {
                ndim,
                nnz,
                value_size: width,
                swap: big,
            };
            let coords = Transform::CooCoords {
                ndim,
                nnz,
                value_size: width,
                swap: big,
            };
            (
                "sparse_coo",
                vec![
                    part("values", dtype, nnz * width as u64, blob, values)?,
                    part("coords", DType::U64, nnz * ndim * 8, blob, coords)?,
                ],
            )
        }
        "sparsecsr" => {
            if shape.len() != 2 {
                bail!(Format, "a CSR tensor needs a 2-d shape, not {shape:?}");
            }
            let decoded = decoded_blob(None)?;
            let blob = Blob {
                offset,
                length,
                encoding,
                decoded_length: decoded,
            };
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
            let sw = if big_endian { 8 } else { 1 };
            (
                "sparse_csr",
                vec![
                    part(
                        "values",
                        dtype,
                        nnz * width as u64,
                        blob,
                        Transform::Slice {
                            start: indptr_len + nnz * 8,
                            len: nnz * width as u64,
                            swap,
                        },
                    )?,
                    part(
                        "indices",
                        DType::U64,
                        nnz * 8,
                        blob,
                        Transform::Slice {
                            start: indptr_len,
                            len: nnz * 8,
                            swap: sw,
                        },
                    )?,
                    part(
                        "indptr",
                        DType::U64,
                        indptr_len,
                        blob,
                        Transform::Slice {
                            start: 0,
                            len: indptr_len,
                            swap: sw,
                        },
                    )?,
                ],
            )
        }
        other => bail!(Unsupported, "legacy layout '{other}' is not supported"),
    };
    let attributes = (!custom.is_empty()).then(|| {
        let mut cbor = Vec::new();
        crate::cbor::encode_head(&mut cbor, 5, custom.len() as u64);
        for (k, v) in custom {
            cbor.extend_from_slice(k);
            cbor.extend_from_slice(v);
        }
        Attributes::from_cbor(&cbor)
    });
    Ok(Object {
        name,
        format: CText::new(format)?,
        shape: shape.into(),
        attributes,
        components: components.into(),
    })
}

/// Builds a derived component's bytes from its decoded blob.
pub(crate) fn gather(transform: Transform, blob: &[u8], dst: &mut [u8]) -> Result<()> {
    match transform {
        Transform::None => dst.copy_from_slice(blob),
        Transform::External(_) => bail!(Internal, "an external decoder is not a gather"),
        Transform::SwapBytes(w) => {
            dst.copy_from_slice(blob);
            crate::reader::swap_in_place(dst, w);
        }
        Transform::Slice { start, len, swap } => {
            dst.copy_from_slice(&blob[start as usize..(start + len) as usize]);
            crate::reader::swap_in_place(dst, swap);
        }
        Transform::CooValues {
            ndim,
            nnz,
            value_size,
            swap,
        } => {
            let record = (ndim * 8) as usize + value_size as usize;
            let vs = value_size as usize;
            for i in 0..nnz as usize {
                let src = i * record + ndim as usize * 8;
                dst[i * vs..(i + 1) * vs].copy_from_slice(&blob[src..src + vs]);
            }
            if swap {
                crate::reader::swap_in_place(dst, value_size);
            }
        }
        Transform::CooCoords {
            ndim,
            nnz,
            value_size,
            swap,
        } => {
            let record = (ndim * 8) as usize + value_size as usize;
            let (ndim, nnz) = (ndim as usize, nnz as usize);
            for i in 0..nnz {
                for d in 0..ndim {
                    let src = i * record + d * 8;
                    let out = (d * nnz + i) * 8;
                    dst[out..out + 8].copy_from_slice(&blob[src..src + 8]);
                }
            }
            if swap {
                crate::reader::swap_in_place(dst, 8);
            }
        }
    }
    Ok(())
}
