//! Element conversion for `read_as`: floats among f64/f32/f16/bf16 (fp8 logical types
//! read as their values), integers (and bools) widened to types that hold every value,
//! small integers to floats that represent them exactly, and ggml blocks dequantized to
//! f32, f16 or bf16 (`quant`). Anything lossy or meaningless is `Unsupported`; so is any
//! element conversion of bytes that are not numbers of their storage dtype (blocks, or a
//! logical type this library doesn't know): those are read as stored, or not at all.
//! `plan` is the one place that decides.

//!
//! Element conversions run as loops the compiler vectorizes, built for the CPU's
//! instruction sets and chosen at run time (`fast`), over the scalar definition of each
//! conversion (`bits`); large outputs are split over the pool (`convert_with`) and
//! written with non-temporal stores.

mod bits;
mod fast;
#[cfg(test)]
mod kernel_tests;

use crate::dtype::DType;
use crate::error::{Result, bail};
use crate::quant::{BlockType, blocks_of};

use fast::{Fp8, From as SourceKind};

/// Decodes an OCP/NVIDIA FP8 E4M3FN byte (no infinities; S.1111.111 is NaN).
pub fn f8_e4m3fn_to_f32(b: u8) -> f32 {
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = ((b >> 3) & 0x0f) as i32;
    let man = (b & 0x07) as f32;
    if exp == 0x0f && b & 0x07 == 0x07 {
        return f32::NAN;
    }
    if exp == 0 {
        return sign * man / 8.0 * 2f32.powi(-6);
    }
    sign * (1.0 + man / 8.0) * 2f32.powi(exp - 7)
}

/// Decodes an OCP FP8 E5M2 byte (IEEE-like: infinities and NaNs at exponent 31).
pub fn f8_e5m2_to_f32(b: u8) -> f32 {
    // E5M2 is the top byte of an IEEE half.
    half::f16::from_bits((b as u16) << 8).to_f32()
}

/// Decodes an AMD FP8 E4M3FNUZ byte (bias 8, 0x80 is the only NaN, no infinities).
pub fn f8_e4m3fnuz_to_f32(b: u8) -> f32 {
    if b == 0x80 {
        return f32::NAN;
    }
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = ((b >> 3) & 0x0f) as i32;
    let man = (b & 0x07) as f32;
    if exp == 0 {
        return sign * man / 8.0 * 2f32.powi(-7);
    }
    sign * (1.0 + man / 8.0) * 2f32.powi(exp - 8)
}

/// Decodes an AMD FP8 E5M2FNUZ byte (bias 16, 0x80 is the only NaN, no infinities).
pub fn f8_e5m2fnuz_to_f32(b: u8) -> f32 {
    if b == 0x80 {
        return f32::NAN;
    }
    let sign = if b & 0x80 != 0 { -1.0 } else { 1.0 };
    let exp = ((b >> 2) & 0x1f) as i32;
    let man = (b & 0x03) as f32;
    if exp == 0 {
        return sign * man / 4.0 * 2f32.powi(-15);
    }
    sign * (1.0 + man / 4.0) * 2f32.powi(exp - 16)
}

/// The value of an OCP MX e8m0 scale (ml_dtypes' `float8_e8m0fnu`): 2^(b - 127), and NaN
/// for 0xff. No sign, no zero.
pub fn f8_e8m0fnu_to_f32(b: u8) -> f32 {
    match b {
        0xff => f32::NAN,
        // 2^-127 is a subnormal f32: bit 22 alone.
        0 => f32::from_bits(1 << 22),
        e => f32::from_bits(u32::from(e) << 23),
    }
}

fn source_kind(storage: DType, logical: Option<&str>) -> Option<SourceKind> {
    match logical {
        None => Some(SourceKind::Storage(storage)),
        Some("f8_e4m3fn") => Some(SourceKind::Fp8(Fp8::E4m3fn)),
        Some("f8_e5m2") => Some(SourceKind::Fp8(Fp8::E5m2)),
        Some("f8_e4m3fnuz") => Some(SourceKind::Fp8(Fp8::E4m3fnuz)),
        Some("f8_e5m2fnuz") => Some(SourceKind::Fp8(Fp8::E5m2fnuz)),
        Some("f8_e8m0fnu" | "f8_e8m0") => Some(SourceKind::Fp8(Fp8::E8m0fnu)),
        Some(_) => None,
    }
}

/// Value range class of an integer dtype: (signed, bits). Bool counts as unsigned 1-bit.
fn int_class(d: DType) -> Option<(bool, u32)> {
    Some(match d {
        DType::I8 => (true, 8),
        DType::I16 => (true, 16),
        DType::I32 => (true, 32),
        DType::I64 => (true, 64),
        DType::U8 => (false, 8),
        DType::U16 => (false, 16),
        DType::U32 => (false, 32),
        DType::U64 => (false, 64),
        DType::Bool => (false, 1),
        _ => return None,
    })
}

/// Mantissa bits + 1 of a float dtype: the largest integer width it represents exactly.
fn exact_int_bits(d: DType) -> u32 {
    match d {
        DType::F64 => 53,
        DType::F32 => 24,
        DType::F16 => 11,
        DType::BF16 => 8,
        _ => 0,
    }
}

/// How a component's bytes become values of another dtype.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Plan {
    /// The stored bytes themselves: reading as the storage dtype.
    Copy,
    /// Element by element (`convert`).
    Elements,
    /// Dequantizing ggml blocks (`quant::dequantize`).
    Dequantize(&'static BlockType),
}

/// How elements of `storage` (with logical type `logical`) are read as `to`, checked
/// without touching data: the one rule for every `read_as`.
pub(crate) fn plan(storage: DType, logical: Option<&str>, to: DType) -> Result<Plan> {
    if let Some(t) = crate::quant::packed_of(storage, logical) {
        return match to {
            _ if to == storage => Ok(Plan::Copy),
            DType::F32 | DType::F16 | DType::BF16 => Ok(Plan::Dequantize(t)),
            _ => bail!(
                Unsupported,
                "packed {} values are read as their u8 bytes or as f32, f16 or bf16, not as {to}",
                t.name()
            ),
        };
    }
    if let Some(blocks) = blocks_of(storage, logical) {
        let t = blocks.known()?;
        return match to {
            _ if to == storage => Ok(Plan::Copy),
            DType::F32 | DType::F16 | DType::BF16 => {
                t.dequantizer()?;
                Ok(Plan::Dequantize(t))
            }
            _ => bail!(
                Unsupported,
                "{} blocks are read as their u8 bytes or dequantized to f32, f16 or bf16, \
                 not converted to {to}",
                t.name()
            ),
        };
    }
    if to == storage {
        return Ok(Plan::Copy);
    }
    let Some(kind) = source_kind(storage, logical) else {
        bail!(
            Unsupported,
            "elements of logical type '{}' can only be read as {storage}",
            logical.unwrap_or("")
        );
    };
    let ok = match kind {
        SourceKind::Fp8(_) => to.is_float(),
        SourceKind::Storage(from) if from.is_float() => to.is_float(),
        SourceKind::Storage(from) => match (int_class(from), int_class(to)) {
            (Some((fs, fb)), Some((ts, tb))) => to != DType::Bool && tb > fb && (ts || !fs),
            (Some((fs, fb)), None) => to.is_float() && fb - fs as u32 <= exact_int_bits(to),
            _ => false,
        },
    };
    if !ok {
        let from = logical.map_or_else(|| storage.name().to_owned(), str::to_owned);
        bail!(
            Unsupported,
            "converting {from} to {to} would lose values or has no meaning"
        );
    }
    Ok(Plan::Elements)
}

/// Checks that a conversion is allowed, without touching data.
#[cfg(test)]
fn check(storage: DType, logical: Option<&str>, to: DType) -> Result<()> {
    plan(storage, logical, to).map(|_| ())
}

/// Output bytes per piece of work when a conversion is split over the pool: enough that
/// a piece's fixed costs (a task, a fence) are small beside its work.
const PER_THREAD: usize = 1 << 20;

/// Converts `src` (elements of `storage`/`logical`) into `dst` (elements of `to`), on
/// this thread. Sizes have been checked: same element count.
pub(crate) fn convert(
    storage: DType,
    logical: Option<&str>,
    src: &[u8],
    to: DType,
    dst: &mut [u8],
) {
    convert_with(storage, logical, src, to, dst, || 1)
}

/// `convert` for one piece of an output written piece by piece (the rows of a column
/// slice, each a few KiB of a large destination): with `large`, written with
/// non-temporal stores as a large conversion is, though the piece itself is small.
pub(crate) fn convert_part(
    storage: DType,
    logical: Option<&str>,
    src: &[u8],
    to: DType,
    dst: &mut [u8],
    large: bool,
) {
    convert_on(storage, logical, src, to, dst, || 1, large)
}

/// `convert` on up to `workers()` threads of the pool (this one included; asked only when
/// the output is large enough to split).
pub(crate) fn convert_with(
    storage: DType,
    logical: Option<&str>,
    src: &[u8],
    to: DType,
    dst: &mut [u8],
    workers: impl FnOnce() -> usize,
) {
    let large = dst.len() >= fast::STREAM_MIN;
    convert_on(storage, logical, src, to, dst, workers, large)
}

/// Outputs of at least this many bytes are written with non-temporal stores (see
/// `fast::STREAM_MIN`); a piece of one (`convert_part`) too.
pub(crate) const STREAM_MIN: usize = fast::STREAM_MIN;

fn convert_on(
    storage: DType,
    logical: Option<&str>,
    src: &[u8],
    to: DType,
    dst: &mut [u8],
    workers: impl FnOnce() -> usize,
    large: bool,
) {
    if to == storage {
        dst.copy_from_slice(src);
        return;
    }
    let (sw, dw) = (storage.size(), to.size());
    let Some(from) = source_kind(storage, logical) else {
        return;
    };
    let isa = fast::isa();
    if matches!(from, SourceKind::Fp8(_)) && sw != 1 {
        let mode = fast::Mode { isa, stream: false };
        return fp8_of_wider(mode, from, sw, src, to, dst);
    }
    // Whole lines only: a piece smaller than a few lines gains nothing.
    let stream = large && dst.len() >= 256;
    let most = dst.len() / PER_THREAD;
    let workers = if most > 1 {
        workers().clamp(1, most)
    } else {
        1
    };
    let mode = fast::Mode { isa, stream };
    let one = |(s, d): (&[u8], &mut [u8])| {
        // `plan` lets through only pairs that have a kernel (every one is tested).
        assert!(
            fast::run(mode, from, to, s, d),
            "a kernel for {storage} -> {to}"
        );
        if stream {
            fast::fence();
        }
    };
    if workers == 1 {
        return one((src, dst));
    }
    // A few pieces per thread, so that a thread slowed by other work leaves its share to
    // the others.
    let per = (dst.len() / dw).div_ceil(workers * 4).max(PER_THREAD / dw);
    let pieces: Vec<(&[u8], &mut [u8])> =
        src.chunks(per * sw).zip(dst.chunks_mut(per * dw)).collect();
    crate::pool::map(pieces, workers, one);
}

/// Dequantizes whole blocks of `t` (`quant::dequantize_with`), f16 and bf16 outputs
/// narrowed by this module's kernels (`store_f32`).
pub(crate) fn dequantize(
    t: &BlockType,
    src: &[u8],
    to: DType,
    dst: &mut [u8],
    workers: impl FnOnce() -> usize,
) -> Result<()> {
    crate::quant::dequantize_with(t, src, to, dst, workers, store_f32)
}

/// Writes f32 values as little-endian `to` values (f32, f16 or bf16: the same
/// conversion as `convert` from f32, rounded to nearest even), on this thread: what
/// dequantization writes its blocks' values with.
pub(crate) fn store_f32(values: &[f32], to: DType, dst: &mut [u8]) {
    debug_assert!(matches!(to, DType::F32 | DType::F16 | DType::BF16));
    debug_assert_eq!(values.len() * to.size(), dst.len());
    if cfg!(target_endian = "little") {
        // SAFETY: the bytes of initialized f32s, little-endian here, for as long as
        // `values` is borrowed.
        let bytes =
            unsafe { std::slice::from_raw_parts(values.as_ptr().cast::<u8>(), values.len() * 4) };
        return convert(DType::F32, None, bytes, to, dst);
    }
    for (v, d) in values.iter().zip(dst.chunks_exact_mut(to.size())) {
        let x = v.to_bits();
        match to {
            DType::F16 => d.copy_from_slice(&bits::f32_to_f16(x).to_le_bytes()),
            DType::BF16 => d.copy_from_slice(&bits::f32_to_bf16(x).to_le_bytes()),
            _ => d.copy_from_slice(&x.to_le_bytes()),
        }
    }
}

/// An fp8 logical type on a storage dtype wider than a byte, which no format writes but
/// a file may say: each element's first byte is decoded (by the one-byte kernel).
fn fp8_of_wider(
    mode: fast::Mode,
    from: SourceKind,
    sw: usize,
    src: &[u8],
    to: DType,
    dst: &mut [u8],
) {
    let firsts: Vec<u8> = src.chunks_exact(sw).map(|s| s[0]).collect();
    assert!(
        fast::run(mode, from, to, &firsts, dst),
        "an fp8 kernel to {to}"
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    #[test]
    fn fp8_decoders_match_known_values() {
        assert_eq!(f8_e4m3fn_to_f32(0x38), 1.0);
        assert_eq!(f8_e4m3fn_to_f32(0x7e), 448.0);
        assert_eq!(f8_e4m3fn_to_f32(0x01), 2f32.powi(-9));
        assert_eq!(f8_e4m3fn_to_f32(0xb8), -1.0);
        assert!(f8_e4m3fn_to_f32(0x7f).is_nan());
        assert_eq!(f8_e5m2_to_f32(0x3c), 1.0);
        assert_eq!(f8_e5m2_to_f32(0x7b), 57344.0);
        assert_eq!(f8_e5m2_to_f32(0x7c), f32::INFINITY);
        assert!(f8_e5m2_to_f32(0x7d).is_nan());
        assert_eq!(f8_e4m3fnuz_to_f32(0x40), 1.0);
        assert_eq!(f8_e4m3fnuz_to_f32(0x7f), 240.0);
        assert!(f8_e4m3fnuz_to_f32(0x80).is_nan());
        assert_eq!(f8_e5m2fnuz_to_f32(0x40), 1.0);
        assert_eq!(f8_e5m2fnuz_to_f32(0x7f), 57344.0);
        assert!(f8_e5m2fnuz_to_f32(0x80).is_nan());
    }

    #[test]
    fn allowed_and_refused_conversions() {
        use DType::*;
        for (from, to) in [
            (BF16, F32),
            (F32, F16),
            (F64, BF16),
            (I8, I64),
            (U8, I16),
            (U32, U64),
            (Bool, U8),
            (I16, F32),
            (U32, F64),
            (I32, F64),
            (I8, BF16),
            (U8, BF16),
        ] {
            check(from, None, to).unwrap_or_else(|e| panic!("{from} -> {to}: {e}"));
        }
        for (from, to) in [
            (I64, I32),
            (U8, I8),
            (I8, U64),
            (U64, I64),
            (I64, F64),
            (I32, F32),
            (F32, I32),
            (U8, Bool),
            (I16, F16),
            (U16, BF16),
        ] {
            assert!(
                check(from, None, to).is_err(),
                "{from} -> {to} must be refused"
            );
        }
        check(U8, Some("f8_e4m3fn"), F32).unwrap();
        assert!(check(U8, Some("f8_e4m3fn"), I32).is_err());
        assert!(check(F32, Some("complex64"), F64).is_err());
        check(F32, Some("complex64"), F32).unwrap();
    }

    #[test]
    fn block_bytes_are_read_as_bytes_or_dequantized() {
        use DType::*;
        let name = |p: Result<Plan>| match p {
            Ok(Plan::Dequantize(t)) => t.name(),
            Ok(Plan::Copy) => "copy",
            Ok(Plan::Elements) => "elements",
            Err(_) => "refused",
        };
        assert_eq!(name(plan(U8, Some("ggml_q4_k"), F32)), "Q4_K");
        assert_eq!(name(plan(U8, Some("ggml_mxfp4"), BF16)), "MXFP4");
        assert_eq!(name(plan(U8, Some("ggml_q4_k"), U8)), "copy");
        assert_eq!(name(plan(U8, None, F32)), "elements");
        let message = |p: Result<Plan>| p.unwrap_err().message().to_owned();
        assert_eq!(
            message(plan(U8, Some("ggml_q4_k"), I16)),
            "Q4_K blocks are read as their u8 bytes or dequantized to f32, f16 or bf16, not \
             converted to i16"
        );
        assert!(
            message(plan(U8, Some("ggml_q8_1"), F16))
                .starts_with("ggml type Q8_1 (id 9) can't be dequantized: ")
        );
        assert_eq!(
            message(plan(U8, Some("ggml_type_43"), U8)),
            "ggml type id 43 is not one this build knows"
        );
        // A ggml name on another storage dtype is just an unknown logical type.
        assert_eq!(
            message(plan(F32, Some("ggml_q4_k"), F64)),
            "elements of logical type 'ggml_q4_k' can only be read as f32"
        );
        assert_eq!(name(plan(F32, Some("ggml_q4_k"), F32)), "copy");
    }

    #[test]
    fn halves_widen_to_every_f32_exactly() {
        let src: Vec<u8> = (0..=u16::MAX).flat_map(u16::to_le_bytes).collect();
        let mut out = vec![0u8; src.len() * 2];
        for storage in [DType::F16, DType::BF16] {
            convert(storage, None, &src, DType::F32, &mut out);
            for (h, d) in (0..=u16::MAX).zip(out.chunks(4)) {
                let ours = f32::from_le_bytes(d.try_into().unwrap());
                let want = match storage {
                    DType::F16 => f16::from_bits(h).to_f32(),
                    _ => bf16::from_bits(h).to_f32(),
                };
                assert!(
                    ours.to_bits() == want.to_bits() || (ours.is_nan() && want.is_nan()),
                    "{storage} {h:#06x}: {ours} {want}"
                );
            }
        }
    }

    #[test]
    fn conversions_produce_exact_values() {
        let src: Vec<u8> = [-1i8, 5, -128].iter().map(|&v| v as u8).collect();
        let mut out = vec![0u8; 24];
        convert(DType::I8, None, &src, DType::I64, &mut out);
        let got: Vec<i64> = out
            .chunks(8)
            .map(|c| i64::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(got, [-1, 5, -128]);
        let src: Vec<u8> = [1.5f32, -2.25]
            .iter()
            .flat_map(|v| v.to_le_bytes())
            .collect();
        let mut out = vec![0u8; 4];
        convert(DType::F32, None, &src, DType::BF16, &mut out);
        assert_eq!(out, [0xc0, 0x3f, 0x10, 0xc0]);
        let mut out = vec![0u8; 8];
        convert(
            DType::U8,
            Some("f8_e4m3fn"),
            &[0x38, 0xb8],
            DType::F32,
            &mut out,
        );
        assert_eq!(
            out,
            [1.0f32, -1.0]
                .iter()
                .flat_map(|v| v.to_le_bytes())
                .collect::<Vec<_>>()
        );
    }
}
