//! A strided view gathered into row-major order: PyTorch's non-contiguous tensors (a
//! transpose, a slice with a step) and NumPy's Fortran-ordered arrays are read as copies
//! through this step. Element `(i0, .., ik)` of the output (row-major over `shape`) is
//! the input element at `offset + sum(i_j * strides[j])`, counted in elements.

use crate::error::{Result, bail};
use crate::model::FormatStep;

#[derive(Debug)]
pub(crate) struct Strided {
    width: usize,
    shape: Box<[u64]>,
    strides: Box<[u64]>,
    offset: u64,
    /// Elements of the input, every one the view touches below it (checked by `new`).
    input_elements: u64,
}

impl Strided {
    /// The gather of `shape` at `strides` (elements of `width` bytes) from element
    /// `offset` of an input of `input_elements`; `Format` when some element would lie
    /// outside the input. An empty shape (no elements) reads nothing.
    pub(crate) fn new(
        width: usize,
        shape: &[u64],
        strides: &[u64],
        offset: u64,
        input_elements: u64,
    ) -> Result<Strided> {
        debug_assert_eq!(shape.len(), strides.len());
        if !shape.contains(&0) {
            let mut last = offset;
            for (&d, &s) in shape.iter().zip(strides) {
                last = (d - 1)
                    .checked_mul(s)
                    .and_then(|r| r.checked_add(last))
                    .ok_or_else(|| crate::error::err!(Format, "strides {strides:?} overflow"))?;
            }
            if last >= input_elements {
                bail!(
                    Format,
                    "a view of shape {shape:?}, strides {strides:?} from element {offset} reaches \
                     element {last}, past the {input_elements} the storage holds"
                );
            }
        }
        Ok(Strided {
            width,
            shape: shape.into(),
            strides: strides.into(),
            offset,
            input_elements,
        })
    }

    /// The elements of the view (u64::MAX when they overflow: `output_len` is then no
    /// component's length, and `model::check_steps` refuses the step).
    fn count(&self) -> u64 {
        crate::dtype::numel(&self.shape).unwrap_or(u64::MAX)
    }
}

impl FormatStep for Strided {
    fn apply(&self, input: &[u8], out: &mut [u8]) -> Result<()> {
        let w = self.width;
        if self.count() == 0 {
            return Ok(());
        }
        let needed = self.input_elements.saturating_mul(w as u64);
        if (out.len() as u64) != self.output_len() || (input.len() as u64) < needed {
            bail!(
                Internal,
                "a gather of {} bytes into {} from {} bytes, which must be {needed}",
                self.output_len(),
                out.len(),
                input.len()
            );
        }
        let rank = self.shape.len();
        if rank == 0 {
            let at = self.offset as usize * w;
            out.copy_from_slice(&input[at..at + w]);
            return Ok(());
        }
        // The innermost dimension as a run of elements; the outer ones as a counter.
        let inner = self.shape[rank - 1] as usize;
        let step = self.strides[rank - 1] as usize * w;
        let mut index = vec![0u64; rank - 1];
        let mut base = self.offset as usize * w;
        for row in out.chunks_exact_mut(inner * w) {
            let mut at = base;
            for dst in row.chunks_exact_mut(w) {
                dst.copy_from_slice(&input[at..at + w]);
                at += step;
            }
            // Next outer index, odometer style.
            for d in (0..rank - 1).rev() {
                index[d] += 1;
                base += self.strides[d] as usize * w;
                if index[d] < self.shape[d] {
                    break;
                }
                base -= (self.shape[d] * self.strides[d]) as usize * w;
                index[d] = 0;
            }
        }
        Ok(())
    }
    fn output_len(&self) -> u64 {
        self.count().saturating_mul(self.width as u64)
    }
}

/// The strides (in elements) of a Fortran-ordered (column-major) array of `shape`.
pub(crate) fn fortran_strides(shape: &[u64]) -> Vec<u64> {
    let mut s = Vec::with_capacity(shape.len());
    let mut acc = 1u64;
    for &d in shape {
        s.push(acc);
        acc = acc.saturating_mul(d.max(1));
    }
    s
}

/// True when `strides` are the row-major (C) strides of `shape`: dimensions of size 1
/// may have any stride.
pub(crate) fn is_row_major(shape: &[u64], strides: &[u64]) -> bool {
    let mut acc = 1u64;
    for (&d, &s) in shape.iter().zip(strides).rev() {
        if d != 1 && s != acc {
            return false;
        }
        acc = acc.saturating_mul(d);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transpose_and_step_gather_row_major() {
        // A 2x3 row-major matrix read as its 3x2 transpose.
        let input: Vec<u8> = (0..6).collect();
        let t = Strided::new(1, &[3, 2], &[1, 3], 0, 6).unwrap();
        let mut out = vec![0u8; 6];
        t.apply(&input, &mut out).unwrap();
        assert_eq!(out, [0, 3, 1, 4, 2, 5]);
        // Every other element of a row, from element 1, two bytes wide.
        let input: Vec<u8> = (0..20).collect();
        let s = Strided::new(2, &[2, 2], &[5, 2], 1, 10).unwrap();
        let mut out = vec![0u8; 8];
        s.apply(&input, &mut out).unwrap();
        assert_eq!(out, [2, 3, 6, 7, 12, 13, 16, 17]);
        assert!(Strided::new(2, &[2, 2], &[5, 3], 1, 10).is_ok());
        assert!(Strided::new(2, &[2, 2], &[5, 5], 1, 10).is_err());
        assert!(Strided::new(1, &[2, 0], &[u64::MAX, 1], 0, 0).is_ok());
        assert!(Strided::new(1, &[3, 2], &[u64::MAX, 1], 0, 9).is_err());
        assert_eq!(fortran_strides(&[2, 3, 4]), [1, 2, 6]);
        assert!(is_row_major(&[2, 3], &[3, 1]));
        assert!(is_row_major(&[1, 3], &[7, 1]));
        assert!(!is_row_major(&[3, 2], &[1, 3]));
    }
}
