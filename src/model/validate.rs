//! The structural validation every model passes before a reader exists, whatever format
//! it came from: names, blob bounds, alignment and overlap, decode limits, decode steps,
//! and each object's sizes against its kind (`schema`).

use crate::dtype::{logical_type_info, numel};
use crate::error::{Error, Result, bail, err};
use crate::model::{Blob, CText, Encoding, Model, check_steps, schema};

/// The checks on names: non-empty, bounded, no NUL (UTF-8 is guaranteed by the decoders).
pub(crate) fn check_name(what: &str, name: &str, max_len: usize) -> Result<CText> {
    check_name_text(what, name, max_len)?;
    CText::new(name).map_err(|e| e.context(format!("{what} name")))
}

/// `check_name` without making the C string: empty or too long (a NUL byte is refused
/// when the C string is made).
pub(crate) fn check_name_text(what: &str, name: &str, max_len: usize) -> Result<()> {
    if name.is_empty() {
        bail!(Format, "{what} name is empty");
    }
    if name.len() > max_len {
        bail!(
            Limit,
            "{what} name is {} bytes, over the limit of {max_len}",
            name.len()
        );
    }
    Ok(())
}

/// Validates a model against the file it came from: blob bounds, alignment and overlap,
/// component sizes against shape and dtype, decode steps, sizes by object kind.
/// `data_end` is where the data region ends (no blob may reach past it).
pub(crate) fn validate(model: &Model, data_end: u64, max_decoded: u64) -> Result<()> {
    // Blobs in file order (what writers produce) are checked for overlap on the way;
    // only a file with blobs out of order pays for collecting and sorting them.
    let mut last: (u32, u64, u64) = (0, 0, 0);
    let mut in_order = true;
    for obj in &model.objects {
        let ctx = |e: Error| e.context(format!("object '{}'", obj.name()));
        numel(&obj.shape)
            .ok_or_else(|| ctx(err!(Format, "shape {:?} overflows u64", obj.shape)))?;
        for c in &obj.components {
            let cctx = |e: Error| ctx(e.context(format!("component '{}'", c.role())));
            // Blobs in other files (ONNX external data) are checked against the size of
            // theirs when those are opened (`sets::open_external`).
            let end = if c.blob.file == 0 { data_end } else { u64::MAX };
            check_blob(&c.blob, end, max_decoded, model.traits.blob_alignment).map_err(cctx)?;
            if c.decoded_length > max_decoded {
                return Err(cctx(err!(
                    Limit,
                    "decoded length {} is over the decode limit {max_decoded}",
                    c.decoded_length
                )));
            }
            if c.decoded_length % c.dtype.size() as u64 != 0 {
                return Err(cctx(err!(
                    Format,
                    "{} bytes is not a whole number of {} elements",
                    c.decoded_length,
                    c.dtype
                )));
            }
            if let Some(t) = c.logical_type()
                && let Some(info) = logical_type_info(t)
            {
                let unit = info.ratio * c.dtype.size() as u64;
                if c.decoded_length % unit != 0 {
                    return Err(cctx(err!(
                        Format,
                        "{} bytes is not a whole number of '{t}' elements",
                        c.decoded_length
                    )));
                }
            }
            check_steps(c).map_err(cctx)?;
            let blob = (c.blob.file, c.blob.offset, c.blob.length);
            if blob.2 > 0 && blob != last {
                in_order &= (blob.0, blob.1) >= (last.0, last.1 + last.2);
                last = blob;
            }
        }
        schema::check_sizes(obj).map_err(ctx)?;
    }
    if in_order || model.traits.shared_blobs {
        return Ok(());
    }
    check_overlap(model)
}

/// Refuses blobs that overlap partially (two components may share one blob exactly).
fn check_overlap(model: &Model) -> Result<()> {
    let mut blobs: Vec<(u32, u64, u64)> = model
        .objects
        .iter()
        .flat_map(|o| o.components.iter())
        .map(|c| (c.blob.file, c.blob.offset, c.blob.length))
        .filter(|&(_, _, len)| len > 0)
        .collect();
    blobs.sort_unstable();
    blobs.dedup();
    for pair in blobs.windows(2) {
        let (a_file, a_off, a_len) = pair[0];
        let (b_file, b_off, b_len) = pair[1];
        if a_file == b_file && b_off < a_off + a_len {
            bail!(
                Format,
                "blobs [{a_off}, {}) and [{b_off}, {}) overlap",
                a_off + a_len,
                b_off + b_len
            );
        }
    }
    Ok(())
}

fn check_blob(blob: &Blob, data_end: u64, max_decoded: u64, alignment: u64) -> Result<()> {
    let Blob {
        file: _,
        offset,
        length,
        encoding,
        decoded_length,
    } = *blob;
    if offset == 0 && blob.file == 0 {
        bail!(Format, "offset 0 points at the file header");
    }
    if offset % alignment != 0 {
        bail!(Format, "offset {offset} is not a multiple of {alignment}");
    }
    let end = offset
        .checked_add(length)
        .ok_or_else(|| err!(Format, "offset {offset} + length {length} overflows"))?;
    if end > data_end {
        bail!(
            Format,
            "bytes [{offset}, {end}) reach past the data region, which ends at {data_end} where the manifest starts"
        );
    }
    match encoding {
        Encoding::Raw if decoded_length != length => {
            bail!(
                Format,
                "raw blob of {length} bytes cannot decode to {decoded_length} bytes"
            )
        }
        Encoding::Zstd => {
            if decoded_length > max_decoded {
                bail!(
                    Limit,
                    "uncompressed_length {decoded_length} is over the decode limit {max_decoded}"
                );
            }
            // A zstd block expands at most 128 KiB from a 4-byte RLE block; allow 2x slack.
            let ceiling = length.saturating_mul(65536).saturating_add(65536);
            if decoded_length > ceiling {
                bail!(
                    Format,
                    "uncompressed_length {decoded_length} is impossible for {length} bytes of zstd"
                );
            }
            if length == 0 && decoded_length > 0 {
                bail!(
                    Format,
                    "zstd blob of 0 bytes cannot decode to {decoded_length} bytes"
                );
            }
        }
        Encoding::Raw => {}
        // The format's step checks its own streams; the size bound is the caller's.
        Encoding::Pipeline => {}
    }
    Ok(())
}
