//! A loader request resolved against the file: what its bytes are (the conversion, the
//! unit it is cut in), which of the component's units it takes (all, a range of rows, or
//! a range of columns of every row), how it is checked, and how it is cut into chunks of at
//! most one staging buffer.
//!
//! Everything is counted in units: an element of a plain dtype, or one block of ggml
//! blocks (and packed sub-byte floats), so that a chunk boundary never splits what a
//! conversion needs whole. A request reads bytes `[first * in_unit, ...)` of the decoded
//! component and writes `units * out_unit` bytes.

use crate::codec::digest::{self, Expected};
use crate::convert::Plan;
use crate::dtype::DType;
use crate::error::{Result, bail, err};
use crate::model::{Component, Object};
use crate::quant::BlockType;
use crate::reader::Reader;
use crate::source::Source;

use super::{Destination, Request, Slice};

/// How source units become destination units.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Conv<'r> {
    /// The decoded bytes themselves.
    Copy,
    /// Element by element (`convert::convert`).
    Elements {
        from: DType,
        logical: Option<&'r str>,
        to: DType,
    },
    /// ggml blocks (or packed sub-byte floats) dequantized.
    Dequantize { t: &'static BlockType, to: DType },
}

/// Which source units a request takes, in order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Cut {
    /// Units `[first, first + units)`.
    Contiguous { first: u64 },
    /// Columns: of every row of `row` units, the `width` units from `first` on.
    Strided { row: u64, first: u64, width: u64 },
}

/// Where a request's digest is checked.
pub(crate) enum Check {
    /// Not checked (not asked for, or the component has none).
    None,
    /// On the bytes as they are read (a raw component read whole): the stored bytes are
    /// the decoded ones, hashed in order by the task that runs the request.
    Staged(Box<Expected>),
    /// Before the request is read: the stored bytes are hashed once (zstd, other
    /// formats' pipelines, slices: what is read is not what the digest covers).
    Before,
}

/// Where a request's bytes go, as the tasks use it.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Dst {
    /// Host memory (`len` bytes; the tasks write disjoint parts of it).
    Host(*mut u8),
    /// A device destination and the offset of the request's first byte in it.
    Device { address: u64, offset: u64 },
}

/// A resolved request.
pub(crate) struct Job<'r> {
    pub(crate) object: usize,
    pub(crate) component: usize,
    pub(crate) c: &'r Component,
    pub(crate) conv: Conv<'r>,
    pub(crate) in_unit: u64,
    pub(crate) out_unit: u64,
    /// Destination units.
    pub(crate) units: u64,
    pub(crate) cut: Cut,
    pub(crate) dst: Dst,
    pub(crate) check: Check,
    /// Run by one task, chunk after chunk in order: a digest hashed in order, or a
    /// component whose range reads cost more than the range (`stream`).
    pub(crate) sequential: bool,
    /// Decoded from its start as a stream (range reads would decode it again and again).
    pub(crate) stream: bool,
    /// A device may read the bytes straight from storage (raw bytes of a file, copied as
    /// they are, contiguous, unchecked): from `raw`'s descriptor.
    pub(crate) direct: bool,
    /// For a raw component: its file (index and source) and the offset of its byte 0 in
    /// it, so the load reads its bytes the way it chose for that file (`io`).
    pub(crate) raw: Option<(u32, u64, &'r Source<'r>)>,
    /// A host request for a whole component that doesn't read well in ranges (one large
    /// zstd frame, another format's pipeline): decoded straight into its destination in
    /// one piece, holding nothing besides (`Reader::read_into`).
    pub(crate) into_place: bool,
}

// SAFETY: `Dst::Host` points into the caller's destination, which the load borrows
// mutably for its whole duration; tasks write disjoint chunks of it.
unsafe impl Send for Job<'_> {}
// SAFETY: as above.
unsafe impl Sync for Job<'_> {}

impl Job<'_> {
    /// The source units `[start, end)` that destination units `[u0, u1)` come from.
    pub(crate) fn span(&self, u0: u64, u1: u64) -> (u64, u64) {
        span(self.cut, u0, u1)
    }

    /// The end of the chunk that starts at unit `u0`: as many units as fit in `limit`
    /// bytes, of destination bytes and of source bytes alike (so a chunk's source bytes
    /// fit in one scratch buffer of the staging size). At least one unit.
    pub(crate) fn chunk_end(&self, u0: u64, limit: u64) -> u64 {
        let by_out = (limit / self.out_unit).max(1);
        let mut hi = self.units.min(u0.saturating_add(by_out));
        let fits = |u1: u64| {
            let (s0, s1) = self.span(u0, u1);
            (s1 - s0).saturating_mul(self.in_unit) <= limit
        };
        if fits(hi) {
            return hi;
        }
        // The largest end whose source span fits (spans grow with the end).
        let mut lo = u0 + 1;
        while lo < hi {
            let mid = lo + (hi - lo).div_ceil(2);
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        lo
    }

    /// How many chunks the request is cut into.
    pub(crate) fn chunk_count(&self, limit: u64) -> usize {
        if self.into_place {
            return usize::from(self.units > 0);
        }
        let mut n = 0;
        let mut u = 0;
        while u < self.units {
            u = self.chunk_end(u, limit);
            n += 1;
        }
        n
    }

    /// The bytes destination units `[u0, u1)` take.
    pub(crate) fn out_bytes(&self, u0: u64, u1: u64) -> u64 {
        (u1 - u0) * self.out_unit
    }
}

/// The source units `[start, end)` that destination units `[u0, u1)` (`u0 < u1`) of
/// `cut` come from.
fn span(cut: Cut, u0: u64, u1: u64) -> (u64, u64) {
    debug_assert!(u0 < u1);
    match cut {
        Cut::Contiguous { first } => (first + u0, first + u1),
        Cut::Strided { row, first, width } => {
            let at = |u: u64| (u / width) * row + first + u % width;
            (at(u0), at(u1 - 1) + 1)
        }
    }
}

/// The units of a component read through `conv`: (bytes of a source unit, bytes of a
/// destination unit, values per unit, units in the component).
fn units(
    c: &Component,
    conv: &Conv<'_>,
    whole_bytes: bool,
    bytes: bool,
) -> Result<(u64, u64, u64, u64)> {
    let blocks = crate::quant::packed_of(c.dtype(), c.logical_type())
        .or_else(|| c.blocks().and_then(|b| b.known().ok()));
    let (in_unit, per) = match (conv, blocks) {
        // A range of decoded bytes, as they are.
        (Conv::Copy, _) if bytes => (1, 1),
        (Conv::Dequantize { t, .. }, _) => (t.type_size(), t.block_size()),
        (_, Some(t)) => (t.type_size(), t.block_size()),
        // A whole copy is bytes: no element is ever split by a byte range of whole chunks
        // that end on the component's end.
        (Conv::Copy, None) if whole_bytes => (1, 1),
        (_, None) => (c.dtype().size() as u64, 1),
    };
    let out_unit = match conv {
        Conv::Copy => in_unit,
        Conv::Elements { to, .. } => to.size() as u64,
        Conv::Dequantize { to, .. } => per * to.size() as u64,
    };
    if !c.decoded_length().is_multiple_of(in_unit) {
        bail!(
            Format,
            "{} decoded bytes are not whole units of {in_unit} bytes",
            c.decoded_length()
        );
    }
    Ok((in_unit, out_unit, per, c.decoded_length() / in_unit))
}

/// The cut of a slice in units, and the units it takes.
fn cut(shape: &[u64], slice: Slice, per: u64, total_units: u64) -> Result<(Cut, u64)> {
    let (first, count) = match slice {
        Slice::Whole => return Ok((Cut::Contiguous { first: 0 }, total_units)),
        Slice::Range { first, count } => {
            let total = total_units.saturating_mul(per);
            if first.checked_add(count).is_none_or(|end| end > total) {
                bail!(
                    InvalidArgument,
                    "[{first}, {first} + {count}) is outside the component's {total} \
                     {}",
                    if per == 1 { "units" } else { "values" }
                );
            }
            if !(first.is_multiple_of(per) && count.is_multiple_of(per)) {
                bail!(
                    InvalidArgument,
                    "values [{first}, {first} + {count}) don't start and end on block \
                     boundaries (multiples of {per} values)"
                );
            }
            return Ok((Cut::Contiguous { first: first / per }, count / per));
        }
        Slice::Rows { first, count } | Slice::Columns { first, count } => (first, count),
    };
    let numel = shape
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or_else(|| err!(Format, "the element count of shape {shape:?} overflows"))?;
    if shape.is_empty() || numel != total_units * per {
        bail!(
            InvalidArgument,
            "a slice needs a component whose values make the object's shape {shape:?} \
             ({} values here); read it whole",
            total_units * per
        );
    }
    let aligned = |v: u64, what: &str| -> Result<u64> {
        if !v.is_multiple_of(per) {
            bail!(
                InvalidArgument,
                "{what} {v} is not a multiple of the {per} values of a block"
            );
        }
        Ok(v / per)
    };
    match slice {
        Slice::Rows { .. } => {
            let rows = shape[0];
            if first.checked_add(count).is_none_or(|end| end > rows) {
                bail!(
                    InvalidArgument,
                    "rows [{first}, {first} + {count}) are outside the {rows} rows of shape {shape:?}"
                );
            }
            let inner = numel.checked_div(rows).unwrap_or(0);
            let first = aligned(first * inner, "the first row's first value")?;
            let units = aligned(count * inner, "the rows' value count")?;
            Ok((Cut::Contiguous { first }, units))
        }
        Slice::Columns { .. } => {
            let cols = *shape.last().expect("not empty");
            if first.checked_add(count).is_none_or(|end| end > cols) {
                bail!(
                    InvalidArgument,
                    "columns [{first}, {first} + {count}) are outside the {cols} columns of \
                     shape {shape:?}"
                );
            }
            let rows = numel.checked_div(cols).unwrap_or(0);
            let row = aligned(cols, "a row of")?;
            let (first, width) = (
                aligned(first, "the first column")?,
                aligned(count, "the column count")?,
            );
            let units = if width == 0 { 0 } else { rows * width };
            Ok((Cut::Strided { row, first, width }, units))
        }
        Slice::Whole | Slice::Range { .. } => unreachable!("returned above"),
    }
}

/// What a request's slice and conversion make of a component: the conversion, the units,
/// the cut, and the destination bytes.
struct Shape<'r> {
    conv: Conv<'r>,
    in_unit: u64,
    out_unit: u64,
    units: u64,
    cut: Cut,
    needed: u64,
}

/// Resolves the slice and conversion of a request for component `c` of `obj`.
fn shape<'r>(
    obj: &Object,
    c: &'r Component,
    slice: Slice,
    convert: Option<DType>,
) -> Result<Shape<'r>> {
    let conv = match convert {
        None => Conv::Copy,
        Some(to) => match crate::convert::plan(c.dtype(), c.logical_type(), to)? {
            Plan::Copy => Conv::Copy,
            Plan::Elements => Conv::Elements {
                from: c.dtype(),
                logical: c.logical_type(),
                to,
            },
            Plan::Dequantize(t) => {
                t.dequantizer()?;
                Conv::Dequantize { t, to }
            }
        },
    };
    let whole = matches!(slice, Slice::Whole);
    // A range without a conversion counts decoded bytes; with one, values.
    let bytes = matches!(slice, Slice::Range { .. }) && convert.is_none();
    let (in_unit, out_unit, per, total) = units(c, &conv, whole, bytes)?;
    let (cut, units) = cut(obj.shape(), slice, per, total)?;
    let needed = units
        .checked_mul(out_unit)
        .ok_or_else(|| err!(Limit, "the destination size overflows"))?;
    Ok(Shape {
        conv,
        in_unit,
        out_unit,
        units,
        cut,
        needed,
    })
}

/// The exact destination size, in bytes, of a request for `slice` of component
/// `component` of object `object`, converted into `convert` (see `Request`).
pub fn dst_size(
    reader: &Reader<'_>,
    object: usize,
    component: usize,
    slice: Slice,
    convert: Option<DType>,
) -> Result<u64> {
    let (obj, c) = reader.component(object, component)?;
    Ok(shape(obj, c, slice, convert)
        .map_err(reader.ctx(obj, c))?
        .needed)
}

/// Resolves request `r` of a load against `reader`: checks the slice, the conversion and
/// the destination's size, and decides how the request is checked and read.
pub(crate) fn job<'r>(
    reader: &'r Reader<'_>,
    r: &mut Request<'_>,
    verify_all: bool,
) -> Result<Job<'r>> {
    let (obj, c) = reader.component(r.object, r.component)?;
    let ctx = reader.ctx(obj, c);
    let Shape {
        conv,
        in_unit,
        out_unit,
        units,
        cut,
        needed,
    } = shape(obj, c, r.slice, r.convert).map_err(&ctx)?;
    let whole = matches!(r.slice, Slice::Whole);
    let (dst, given) = match &mut r.dst {
        Destination::Host(buf) => (Dst::Host(buf.as_mut_ptr()), buf.len() as u64),
        Destination::Device {
            address,
            offset,
            len,
        } => {
            if offset.checked_add(*len).is_none() {
                return Err(ctx(err!(
                    InvalidArgument,
                    "the destination's offset {offset} + size {len} overflows 64 bits"
                )));
            }
            (
                Dst::Device {
                    address: *address,
                    offset: *offset,
                },
                *len,
            )
        }
    };
    check_size(needed, given).map_err(&ctx)?;
    let check = match (r.verify || verify_all, c.digest()) {
        (true, Some(text)) => {
            let model = reader.model();
            let expected = digest::expected(text, model.traits.digest_kinds).map_err(&ctx)?;
            let blob = (c.blob.offset, c.blob.length);
            let staged =
                c.is_plain() && whole && model.digest_region(r.object, r.component) == blob;
            if staged {
                Check::Staged(Box::new(expected))
            } else {
                Check::Before
            }
        }
        _ => Check::None,
    };
    let stream = !reader.range_reads_are_cheap(r.object, r.component)?;
    let raw = match c.is_plain() {
        true => Some((c.blob.file, c.blob.offset, reader.source(obj, c)?)),
        false => None,
    };
    let direct = matches!(
        (&dst, &check, conv, cut, &raw),
        (Dst::Device { .. }, Check::None, Conv::Copy, Cut::Contiguous { .. }, Some(raw))
            if raw.2.fd().is_some()
    );
    let into_place = stream && whole && matches!((dst, conv), (Dst::Host(_), Conv::Copy));
    Ok(Job {
        object: r.object,
        component: r.component,
        c,
        conv,
        in_unit,
        out_unit,
        units,
        cut,
        dst,
        sequential: stream || !matches!(check, Check::None),
        check,
        stream,
        direct,
        raw,
        into_place,
    })
}

/// A destination must be exactly the size the request fills.
fn check_size(needed: u64, given: u64) -> Result<()> {
    match given.cmp(&needed) {
        std::cmp::Ordering::Less => bail!(
            BufferTooSmall,
            "a destination of {given} bytes is smaller than the {needed} bytes to load"
        ),
        std::cmp::Ordering::Greater => bail!(
            InvalidArgument,
            "a destination of {given} bytes is larger than the {needed} bytes to load; sizes \
             must match"
        ),
        std::cmp::Ordering::Equal => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strided_spans_and_chunks_stay_within_the_limit() {
        // 6 rows of 16 units, columns 4..8: 24 destination units.
        let (cut, units) = cut_of(&[6, 16], Slice::Columns { first: 4, count: 4 }, 1, 96).unwrap();
        assert_eq!(
            (cut, units),
            (
                Cut::Strided {
                    row: 16,
                    first: 4,
                    width: 4
                },
                24
            )
        );
        assert_eq!(span(cut, 0, 4), (4, 8));
        assert_eq!(span(cut, 0, 5), (4, 21));
        assert_eq!(span(cut, 3, 9), (7, 37));
        assert_eq!(span(Cut::Contiguous { first: 3 }, 2, 5), (5, 8));
    }

    fn cut_of(shape: &[u64], s: Slice, per: u64, total: u64) -> Result<(Cut, u64)> {
        cut(shape, s, per, total)
    }

    #[test]
    fn slices_are_checked_against_the_shape_and_blocks() {
        assert_eq!(
            cut_of(&[4, 8], Slice::Rows { first: 1, count: 2 }, 1, 32).unwrap(),
            (Cut::Contiguous { first: 8 }, 16)
        );
        // Blocks of 32 values: rows of 64 values are two blocks.
        assert_eq!(
            cut_of(&[4, 64], Slice::Rows { first: 3, count: 1 }, 32, 8).unwrap(),
            (Cut::Contiguous { first: 6 }, 2)
        );
        assert_eq!(
            cut_of(
                &[4, 64],
                Slice::Columns {
                    first: 32,
                    count: 32
                },
                32,
                8
            )
            .unwrap(),
            (
                Cut::Strided {
                    row: 2,
                    first: 1,
                    width: 1
                },
                4
            )
        );
        let e = cut_of(
            &[4, 64],
            Slice::Columns {
                first: 16,
                count: 32,
            },
            32,
            8,
        )
        .unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArgument);
        let e = cut_of(&[4, 8], Slice::Rows { first: 3, count: 2 }, 1, 32).unwrap_err();
        assert!(e.message().contains("outside"), "{e}");
        let e = cut_of(&[4, 8], Slice::Columns { first: 0, count: 9 }, 1, 32).unwrap_err();
        assert!(e.message().contains("outside"), "{e}");
        // A component whose values don't make the shape (sparse values) is read whole.
        let e = cut_of(&[4, 8], Slice::Rows { first: 0, count: 1 }, 1, 5).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::InvalidArgument);
        assert_eq!(
            cut_of(&[], Slice::Whole, 1, 1).unwrap(),
            (Cut::Contiguous { first: 0 }, 1)
        );
        assert!(cut_of(&[], Slice::Rows { first: 0, count: 1 }, 1, 1).is_err());
        // Zero columns: nothing to load.
        assert_eq!(
            cut_of(&[4, 8], Slice::Columns { first: 2, count: 0 }, 1, 32)
                .unwrap()
                .1,
            0
        );
    }
}
