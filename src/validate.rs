//! Value-level checks that need the data, not just the manifest: sparse structure and
//! bool bytes. Run on request (`Reader::validate_values`), never implicitly at open.

use crate::dtype::DType;
use crate::error::{Result, bail};
use crate::model::{Component, Object};
use crate::reader::Reader;

/// Decodes an index component (u64 or u32) into u64 values.
fn indices(reader: &Reader<'_>, object: usize, obj: &Object, role: &str) -> Result<Vec<u64>> {
    let ci = obj.find_component(role).expect("checked at open");
    let c: &Component = &obj.components()[ci];
    let bytes = reader.read_to_vec(object, ci)?;
    Ok(match c.dtype() {
        DType::U32 => bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()) as u64)
            .collect(),
        _ => bytes
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            .collect(),
    })
}

pub(crate) fn check_values(reader: &Reader<'_>, object: usize, obj: &Object) -> Result<()> {
    for (ci, c) in obj.components().iter().enumerate() {
        if c.dtype() == DType::Bool {
            let bytes = reader.read_to_vec(object, ci)?;
            if let Some(i) = bytes.iter().position(|&b| b > 1) {
                bail!(
                    Format,
                    "component '{}': bool byte {} at index {i} is neither 0 nor 1",
                    c.role(),
                    bytes[i]
                );
            }
        }
    }
    match obj.format() {
        "sparse_csr" => {
            let (rows, cols) = (obj.shape()[0], obj.shape()[1]);
            let indptr = indices(reader, object, obj, "indptr")?;
            let idx = indices(reader, object, obj, "indices")?;
            let nnz = idx.len() as u64;
            if indptr.first() != Some(&0) {
                bail!(Format, "indptr must start at 0, not {:?}", indptr.first());
            }
            if let Some(w) = indptr.windows(2).position(|w| w[1] < w[0]) {
                bail!(
                    Format,
                    "indptr decreases at row {w}: {} then {}",
                    indptr[w],
                    indptr[w + 1]
                );
            }
            if indptr.last() != Some(&nnz) {
                bail!(
                    Format,
                    "indptr ends at {:?}, not at nnz {nnz}",
                    indptr.last()
                );
            }
            debug_assert_eq!(indptr.len() as u64, rows + 1);
            if let Some(i) = idx.iter().position(|&c| c >= cols) {
                bail!(
                    Format,
                    "column index {} at position {i} is out of range for {cols} columns",
                    idx[i]
                );
            }
        }
        "sparse_coo" => {
            let coords = indices(reader, object, obj, "coords")?;
            if let Some(nnz) = coords.len().checked_div(obj.shape().len()) {
                for (d, &extent) in obj.shape().iter().enumerate() {
                    if let Some(i) = coords[d * nnz..(d + 1) * nnz]
                        .iter()
                        .position(|&x| x >= extent)
                    {
                        bail!(
                            Format,
                            "coordinate {} of value {i} in dimension {d} is out of range for extent {extent}",
                            coords[d * nnz + i]
                        );
                    }
                }
            }
        }
        _ => {}
    }
    Ok(())
}
