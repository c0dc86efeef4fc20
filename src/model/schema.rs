//! The object kinds the format defines (its "format" field): which component roles each
//! needs, which of them hold indices, and the rules their sizes and values obey. The
//! model check at open, the writer, value validation and the `zt` tool all ask here, so
//! a rule is written once.

use crate::dtype::{DType, dense_byte_size, logical_type_info, numel};
use crate::error::{Result, bail, err};
use crate::model::{Component, Object};

/// An object's kind, from its format string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ObjectKind {
    /// "dense": one `data` component, row-major.
    Dense,
    /// "sparse_csr": `values`, `indices` (column of each value), `indptr` (rows + 1).
    SparseCsr,
    /// "sparse_coo": `values` and `coords` (ndim x nnz, structure of arrays).
    SparseCoo,
    /// "quantized_group": roles and attributes are a convention (`packed_weight`,
    /// `scales`, `zeros`); nothing is required.
    QuantizedGroup,
    /// Any other format string: read at the component level, no rules.
    Other,
}

impl ObjectKind {
    /// The kind a format string names.
    pub fn of(format: &str) -> ObjectKind {
        match format {
            "dense" => ObjectKind::Dense,
            "sparse_csr" | V2_CSR => ObjectKind::SparseCsr,
            "sparse_coo" | V2_COO => ObjectKind::SparseCoo,
            "quantized_group" | "zt.quant_group/1" => ObjectKind::QuantizedGroup,
            _ => ObjectKind::Other,
        }
    }

    /// The roles an object of this kind must have.
    pub fn required_roles(self) -> &'static [&'static str] {
        match self {
            ObjectKind::Dense => &["data"],
            ObjectKind::SparseCsr => &["values", "indices", "indptr"],
            ObjectKind::SparseCoo => &["values", "coords"],
            ObjectKind::QuantizedGroup | ObjectKind::Other => &[],
        }
    }

    /// The roles that hold indices: `u64` by the spec (written so); `u32` is read too,
    /// since some writers emit it.
    pub fn index_roles(self) -> &'static [&'static str] {
        match self {
            ObjectKind::SparseCsr => &["indices", "indptr"],
            ObjectKind::SparseCoo => &["coords"],
            _ => &[],
        }
    }

    /// True when `role` holds indices in an object of this kind.
    pub fn is_index(self, role: &str) -> bool {
        self.index_roles().contains(&role)
    }
}

/// zTensor v2's sparse layouts: the kinds of ours, with their own metadata rules (checked
/// by the v2 format when the file is parsed, since they differ in details: u32 indices,
/// nnz from the index part) and two more value rules (strictly increasing columns within
/// a CSR row, no repeated COO coordinate).
const V2_CSR: &str = "zt.sparse_csr/1";
const V2_COO: &str = "zt.sparse_coo/1";

fn component_of<'o>(obj: &'o Object, role: &str) -> Result<&'o Component> {
    obj.components
        .iter()
        .find(|c| c.role() == role)
        .ok_or_else(|| err!(Format, "{} object has no '{role}' component", obj.format()))
}

/// Index dtypes we accept: u64 (the spec) and u32 (what some writers emit).
fn check_index(c: &Component) -> Result<()> {
    if !matches!(c.dtype, DType::U64 | DType::U32) {
        bail!(
            Format,
            "index component '{}' must be u64 (or u32), not {}",
            c.role(),
            c.dtype
        );
    }
    Ok(())
}

/// Logical elements of a values component (complex counts pairs, packed fp4 two per
/// byte).
fn logical_elements(c: &Component) -> u64 {
    let (ratio, values) = c
        .logical_type()
        .and_then(logical_type_info)
        .map_or((1, 1), |i| (i.ratio, i.values));
    c.decoded_length / (c.dtype.size() as u64 * ratio) * values
}

/// Size consistency of an object's components with its shape and kind, from the
/// manifest alone: required roles, index dtypes, dense byte size, sparse counts.
/// Each kind's arm looks its `required_roles` up once (this runs for every object at
/// open); `tests::each_required_role_is_required` keeps the two in step.
pub(crate) fn check_sizes(obj: &Object) -> Result<()> {
    let total = numel(&obj.shape).unwrap_or(u64::MAX);
    if matches!(obj.format(), V2_CSR | V2_COO) {
        return Ok(());
    }
    match ObjectKind::of(obj.format()) {
        ObjectKind::Dense => check_dense(obj, component_of(obj, "data")?),
        ObjectKind::SparseCsr => {
            let values = component_of(obj, "values")?;
            let indices = component_of(obj, "indices")?;
            let indptr = component_of(obj, "indptr")?;
            check_index(indices)?;
            check_index(indptr)?;
            let nnz = logical_elements(values);
            if obj.shape.len() != 2 {
                bail!(Format, "sparse_csr needs a 2-d shape, not {:?}", obj.shape);
            }
            if indptr.element_count() != obj.shape[0].saturating_add(1) {
                bail!(
                    Format,
                    "indptr has {} entries, expected rows + 1 = {}",
                    indptr.element_count(),
                    obj.shape[0] as u128 + 1
                );
            }
            if indices.element_count() != nnz {
                bail!(
                    Format,
                    "indices has {} entries but values has {nnz}",
                    indices.element_count()
                );
            }
            check_nnz(nnz, total)
        }
        ObjectKind::SparseCoo => {
            let values = component_of(obj, "values")?;
            let coords = component_of(obj, "coords")?;
            check_index(coords)?;
            let nnz = logical_elements(values);
            if (obj.shape.len() as u64).checked_mul(nnz) != Some(coords.element_count()) {
                bail!(
                    Format,
                    "coords has {} entries, expected ndim {} x nnz {nnz}",
                    coords.element_count(),
                    obj.shape.len()
                );
            }
            check_nnz(nnz, total)
        }
        ObjectKind::QuantizedGroup | ObjectKind::Other => Ok(()),
    }
}

fn check_nnz(nnz: u64, total: u64) -> Result<()> {
    if nnz > total {
        bail!(
            Format,
            "{nnz} stored values exceed the shape's {total} elements"
        );
    }
    Ok(())
}

fn check_dense(obj: &Object, data: &Component) -> Result<()> {
    let known_type = data
        .logical_type()
        .is_none_or(|t| logical_type_info(t).is_some());
    let expected = dense_byte_size(&obj.shape, data.dtype, data.logical_type());
    if known_type && expected.is_none() {
        bail!(
            Format,
            "the byte size of shape {:?} of {} overflows u64",
            obj.shape,
            data.dtype
        );
    }
    // An unknown logical type has an unknown ratio: its size can't be checked.
    if let Some(expected) = expected
        && data.decoded_length != expected
    {
        bail!(
            Format,
            "'data' holds {} bytes but shape {:?} of {}{} needs {expected}",
            data.decoded_length,
            obj.shape,
            data.dtype,
            data.logical_type()
                .map(|t| format!(" ({t})"))
                .unwrap_or_default()
        );
    }
    Ok(())
}

/// What the writer adds to `check_sizes`: index components must be u64, as the spec says.
pub(crate) fn check_writable(obj: &Object) -> Result<()> {
    check_sizes(obj)?;
    let kind = ObjectKind::of(obj.format());
    for c in obj.components.iter().filter(|c| kind.is_index(c.role())) {
        if c.dtype != DType::U64 {
            bail!(
                InvalidArgument,
                "index component '{}' must be u64, not {}",
                c.role(),
                c.dtype
            );
        }
    }
    Ok(())
}

/// Decodes an index component's bytes (u64 or u32, little-endian) into u64 values.
fn index_values(c: &Component, bytes: &[u8]) -> Vec<u64> {
    match c.dtype() {
        DType::U32 => bytes
            .chunks_exact(4)
            .map(|b| u32::from_le_bytes(b.try_into().expect("4 bytes")) as u64)
            .collect(),
        _ => bytes
            .chunks_exact(8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .collect(),
    }
}

/// Checks an object's values beyond what the manifest shows: bool bytes are 0 or 1;
/// sparse indptr starts at 0, never decreases and ends at nnz; indices and coordinates
/// are in range. `read` returns a component's decoded bytes by index. The object passed
/// `check_sizes` at open.
pub(crate) fn check_values(
    obj: &Object,
    read: &mut dyn FnMut(usize) -> Result<Vec<u8>>,
) -> Result<()> {
    for (ci, c) in obj.components().iter().enumerate() {
        if has_value_rules(c) {
            let bytes = read(ci)?;
            check_component_values(c, obj.format() == "dense", obj.shape(), &bytes)?;
        }
    }
    let mut indices = |role: &str| -> Result<Vec<u64>> {
        let ci = obj.find_component(role).expect("checked at open");
        Ok(index_values(&obj.components()[ci], &read(ci)?))
    };
    match ObjectKind::of(obj.format()) {
        ObjectKind::SparseCsr => {
            let cols = obj.shape()[1];
            let indptr = indices("indptr")?;
            let idx = indices("indices")?;
            check_indptr(&indptr, idx.len() as u64)?;
            if let Some(i) = idx.iter().position(|&c| c >= cols) {
                bail!(
                    Format,
                    "column index {} at position {i} is out of range for {cols} columns",
                    idx[i]
                );
            }
            if obj.format() == V2_CSR {
                check_rows_increase(&indptr, &idx)?;
            }
        }
        ObjectKind::SparseCoo => {
            let coords = indices("coords")?;
            if let Some(nnz) = coords.len().checked_div(obj.shape().len()) {
                for (d, &extent) in obj.shape().iter().enumerate() {
                    let dim = &coords[d * nnz..(d + 1) * nnz];
                    if let Some(i) = dim.iter().position(|&x| x >= extent) {
                        bail!(
                            Format,
                            "coordinate {} of value {i} in dimension {d} is out of range for extent {extent}",
                            dim[i]
                        );
                    }
                }
                if obj.format() == V2_COO {
                    check_unique_coords(&coords, obj.shape().len(), nnz)?;
                }
            }
        }
        _ => {}
    }
    Ok(())
}

/// True for a component whose values its type constrains: bool bytes, and the unused
/// nibble of v2's `f4_e2m1`.
pub(crate) fn has_value_rules(c: &Component) -> bool {
    c.dtype() == DType::Bool || c.logical_type() == Some("f4_e2m1")
}

/// The value rules of a component's type over its decoded bytes: bool bytes are 0 or 1;
/// the last byte of an odd count of `f4_e2m1` values (of a dense object, whose count the
/// shape gives) has a zero high nibble.
pub(crate) fn check_component_values(
    c: &Component,
    dense: bool,
    shape: &[u64],
    bytes: &[u8],
) -> Result<()> {
    if c.dtype() == DType::Bool
        && let Some(i) = bytes.iter().position(|&b| b > 1)
    {
        bail!(
            Format,
            "component '{}': bool byte {} at index {i} is neither 0 nor 1",
            c.role(),
            bytes[i]
        );
    }
    if c.logical_type() == Some("f4_e2m1")
        && dense
        && numel(shape).is_some_and(|n| n % 2 == 1)
        && let Some(&last) = bytes.last()
        && last & 0xf0 != 0
    {
        bail!(
            Format,
            "component '{}': the unused high nibble of the last byte of an odd number of \
             f4_e2m1 values is {:#x}, not 0",
            c.role(),
            last >> 4
        );
    }
    Ok(())
}

/// A v2 CSR row's column indices strictly increase (the indptr was checked).
fn check_rows_increase(indptr: &[u64], idx: &[u64]) -> Result<()> {
    for (row, w) in indptr.windows(2).enumerate() {
        let cols = &idx[w[0] as usize..w[1] as usize];
        if let Some(i) = cols.windows(2).position(|p| p[1] <= p[0]) {
            bail!(
                Format,
                "row {row}: column indices {} then {} do not strictly increase",
                cols[i],
                cols[i + 1]
            );
        }
    }
    Ok(())
}

/// No two values of a v2 COO tensor share a cell.
fn check_unique_coords(coords: &[u64], ndim: usize, nnz: usize) -> Result<()> {
    let mut cells: Vec<usize> = (0..nnz).collect();
    let at = |i: usize| (0..ndim).map(move |d| coords[d * nnz + i]);
    cells.sort_unstable_by(|&a, &b| at(a).cmp(at(b)));
    if let Some(w) = cells.windows(2).find(|w| at(w[0]).eq(at(w[1]))) {
        let cell: Vec<u64> = at(w[0]).collect();
        bail!(
            Format,
            "values {} and {} are both at coordinates {cell:?}",
            w[0].min(w[1]),
            w[0].max(w[1])
        );
    }
    Ok(())
}

fn check_indptr(indptr: &[u64], nnz: u64) -> Result<()> {
    if indptr.first() != Some(&0) {
        bail!(
            Format,
            "indptr must start at 0, not {}",
            indptr.first().map_or("nothing".to_owned(), u64::to_string)
        );
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
            "indptr ends at {}, not at nnz {nnz}",
            indptr.last().map_or("nothing".to_owned(), u64::to_string)
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::{CText, Components};

    fn object(format: &str, shape: &[u64], roles: &[(&str, DType, u64)]) -> Object {
        let components: Vec<Component> = roles
            .iter()
            .enumerate()
            .map(|(i, &(role, dtype, len))| {
                Component::raw(
                    CText::new(role).unwrap(),
                    dtype,
                    None,
                    64 * (i as u64 + 1),
                    len,
                )
            })
            .collect();
        Object {
            name: CText::new("o").unwrap(),
            format: CText::new(format).unwrap(),
            shape: shape.into(),
            attributes: None,
            components: Components::from(components),
        }
    }

    /// A well-formed object of each kind with a required role (2x2, one stored value).
    fn complete(kind: ObjectKind) -> Option<Object> {
        let format = match kind {
            ObjectKind::Dense => "dense",
            ObjectKind::SparseCsr => "sparse_csr",
            ObjectKind::SparseCoo => "sparse_coo",
            _ => return None,
        };
        let roles: &[(&str, DType, u64)] = match kind {
            ObjectKind::Dense => &[("data", DType::F32, 16)],
            ObjectKind::SparseCsr => &[
                ("values", DType::F32, 4),
                ("indices", DType::U64, 8),
                ("indptr", DType::U64, 24),
            ],
            _ => &[("values", DType::F32, 4), ("coords", DType::U32, 8)],
        };
        Some(object(format, &[2, 2], roles))
    }

    #[test]
    fn each_required_role_is_required() {
        let kinds = [
            ObjectKind::Dense,
            ObjectKind::SparseCsr,
            ObjectKind::SparseCoo,
            ObjectKind::QuantizedGroup,
            ObjectKind::Other,
        ];
        for kind in kinds {
            let Some(obj) = complete(kind) else {
                assert!(kind.required_roles().is_empty());
                continue;
            };
            check_sizes(&obj).unwrap();
            for role in kind.required_roles() {
                let mut without = obj.clone();
                let kept: Vec<Component> = without
                    .components
                    .iter()
                    .filter(|c| c.role() != *role)
                    .cloned()
                    .collect();
                without.components = Components::from(kept);
                let e = check_sizes(&without).unwrap_err();
                assert_eq!(
                    e.message(),
                    format!("{} object has no '{role}' component", obj.format())
                );
            }
            for role in kind.index_roles() {
                let mut wrong = obj.clone();
                let i = wrong.find_component(role).unwrap();
                wrong.components[i].dtype = DType::I32;
                let e = check_sizes(&wrong).unwrap_err();
                assert!(
                    e.message()
                        .starts_with(&format!("index component '{role}' must be u64"))
                );
            }
        }
    }
}
