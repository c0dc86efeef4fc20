//! The slice kernels of `convert`: for each pair of dtypes a loop over fixed-size
//! elements (`[u8; S]` in, `[u8; D]` out) that the compiler vectorizes, built three times
//! on x86-64 (the baseline, AVX2 with F16C and FMA, AVX-512) and picked at run time by
//! what the CPU has. Elsewhere the one build (NEON on aarch64 is part of the baseline, so
//! its loops are vectorized with it). Each element goes through the scalar definition
//! (`bits`; `as` only from integers, which is exact), so every build writes the same
//! bits. One pair has an instruction of its own: f16 -> f32 with F16C on AVX2 and up
//! (`f16_to_f32_f16c`, signaling NaNs fixed up to the same bits).
//!
//! Large outputs are written with non-temporal stores (`each_streamed`): each 64-byte
//! line of the destination is converted into a register-sized buffer and stored whole,
//! so the destination's lines are not read before they are overwritten and don't evict
//! the source from the caches.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicU8, Ordering};

use super::bits;
use crate::dtype::DType;

/// An instruction set the kernels are built for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Isa {
    /// The target's baseline (SSE2 on x86-64, NEON on aarch64).
    Baseline,
    /// AVX2, FMA, F16C, BMI1/2 (x86-64).
    Avx2,
    /// AVX-512 F/BW/DQ/VL on top of `Avx2` (x86-64).
    Avx512,
}

/// The best `Isa` of this CPU (detected once).
pub(crate) fn isa() -> Isa {
    static BEST: AtomicU8 = AtomicU8::new(0);
    match BEST.load(Ordering::Relaxed) {
        1 => Isa::Baseline,
        2 => Isa::Avx2,
        3 => Isa::Avx512,
        _ => {
            let best = detect();
            BEST.store(best as u8 + 1, Ordering::Relaxed);
            best
        }
    }
}

fn detect() -> Isa {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::is_x86_feature_detected as has;
        let avx2 = has!("avx2")
            && has!("fma")
            && has!("f16c")
            && has!("bmi1")
            && has!("bmi2")
            && has!("lzcnt");
        if avx2 && has!("avx512f") && has!("avx512bw") && has!("avx512dq") && has!("avx512vl") {
            return Isa::Avx512;
        }
        if avx2 {
            return Isa::Avx2;
        }
    }
    Isa::Baseline
}

/// Every `Isa` this CPU runs, lowest first (the tests run each).
#[cfg(test)]
pub(crate) fn isas() -> Vec<Isa> {
    [Isa::Baseline, Isa::Avx2, Isa::Avx512]
        .into_iter()
        .filter(|&i| i <= isa())
        .collect()
}

/// How a kernel runs: the instruction set it is built for (at most `isa()`: the kernels
/// of a higher one would fault), and whether it writes with non-temporal stores.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Mode {
    pub(crate) isa: Isa,
    pub(crate) stream: bool,
}

/// `f` on each element: `src` holds whole elements of `S` bytes, `dst` as many of `D`.
#[inline(always)]
fn each<const S: usize, const D: usize, F: Fn([u8; S]) -> [u8; D]>(
    src: &[u8],
    dst: &mut [u8],
    f: F,
) {
    let (s, _) = src.as_chunks::<S>();
    let (d, _) = dst.as_chunks_mut::<D>();
    let n = s.len().min(d.len());
    let (s, d) = (&s[..n], &mut d[..n]);
    for i in 0..n {
        d[i] = f(s[i]);
    }
}

/// `each`, writing whole 64-byte lines of `dst` with non-temporal stores (`line` stores
/// one, at an address aligned to 64): each line's elements are converted into a
/// register-sized buffer and stored from there, so the destination's lines are never
/// read before they are overwritten and don't evict the source from the caches. The
/// elements before the first aligned line and after the last are written as `each`
/// writes them. The caller fences.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn each_streamed<const S: usize, const D: usize, F: Fn([u8; S]) -> [u8; D]>(
    src: &[u8],
    dst: &mut [u8],
    f: F,
    line: impl Fn(*mut u8, &[u8; 64]),
) {
    let n = (src.len() / S).min(dst.len() / D);
    let addr = dst.as_ptr() as usize;
    if !addr.is_multiple_of(D) {
        // Elements never meet a line boundary: no whole line to stream.
        return each(src, dst, f);
    }
    let head = (addr.next_multiple_of(64) - addr) / D;
    let head = head.min(n);
    each(&src[..head * S], &mut dst[..head * D], &f);
    let per = 64 / D;
    let lines = (n - head) / per;
    let (body_src, rest_src) = src[head * S..].split_at(lines * per * S);
    let (body_dst, rest_dst) = dst[head * D..].split_at_mut(lines * per * D);
    for (s, d) in body_src
        .chunks_exact(per * S)
        .zip(body_dst.chunks_exact_mut(64))
    {
        let mut buf = [0u8; 64];
        each(s, &mut buf, &f);
        line(d.as_mut_ptr(), &buf);
    }
    each(rest_src, rest_dst, &f);
}

#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn line_sse2(at: *mut u8, buf: &[u8; 64]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_stream_si128};
    for k in 0..4 {
        // SAFETY: `at` is a 64-byte line of the destination, aligned to 64 (each_streamed);
        // `buf` holds 64 readable bytes. SSE2 is part of x86-64.
        unsafe {
            _mm_stream_si128(
                at.add(16 * k).cast::<__m128i>(),
                _mm_loadu_si128(buf.as_ptr().add(16 * k).cast::<__m128i>()),
            )
        };
    }
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,f16c,bmi1,bmi2,lzcnt")]
fn each_avx2<const S: usize, const D: usize, F: Fn([u8; S]) -> [u8; D]>(
    src: &[u8],
    dst: &mut [u8],
    f: F,
    stream: bool,
) {
    use std::arch::x86_64::{__m256i, _mm256_loadu_si256, _mm256_stream_si256};
    if !stream {
        return each(src, dst, f);
    }
    each_streamed(src, dst, f, |at, buf| {
        for k in 0..2 {
            // SAFETY: as `line_sse2`; AVX2 is enabled here.
            unsafe {
                _mm256_stream_si256(
                    at.add(32 * k).cast::<__m256i>(),
                    _mm256_loadu_si256(buf.as_ptr().add(32 * k).cast::<__m256i>()),
                )
            };
        }
    })
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,avx512dq,avx512vl,avx2,fma,f16c,bmi1,bmi2,lzcnt")]
fn each_avx512<const S: usize, const D: usize, F: Fn([u8; S]) -> [u8; D]>(
    src: &[u8],
    dst: &mut [u8],
    f: F,
    stream: bool,
) {
    use std::arch::x86_64::{__m512i, _mm512_loadu_si512, _mm512_stream_si512};
    if !stream {
        return each(src, dst, f);
    }
    each_streamed(src, dst, f, |at, buf| {
        // SAFETY: as `line_sse2`; AVX-512 is enabled here.
        unsafe {
            _mm512_stream_si512(
                at.cast::<__m512i>(),
                _mm512_loadu_si512(buf.as_ptr().cast::<__m512i>()),
            )
        };
    })
}

/// `each` (or `each_streamed`), built for `mode.isa`.
#[inline(always)]
fn apply<const S: usize, const D: usize, F: Fn([u8; S]) -> [u8; D]>(
    mode: Mode,
    src: &[u8],
    dst: &mut [u8],
    f: F,
) {
    #[cfg(target_arch = "x86_64")]
    match mode.isa {
        // SAFETY: `isa` is at most what `detect` found this CPU to have.
        Isa::Avx512 => return unsafe { each_avx512(src, dst, f, mode.stream) },
        // SAFETY: as above.
        Isa::Avx2 => return unsafe { each_avx2(src, dst, f, mode.stream) },
        Isa::Baseline if mode.stream => return each_streamed(src, dst, f, line_sse2),
        Isa::Baseline => {}
    }
    // Elsewhere plain stores (aarch64's non-temporal pair stores are hints the
    // hardware mostly ignores for this).
    let _ = (mode.isa, mode.stream);
    each(src, dst, f)
}

/// A source of element conversions: a storage dtype, or an fp8 logical type (one byte).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum From {
    Storage(DType),
    Fp8(Fp8),
}

/// The fp8 formats `read_as` decodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Fp8 {
    E4m3fn,
    E5m2,
    E4m3fnuz,
    E5m2fnuz,
    E8m0fnu,
}

impl Fp8 {
    const ALL: [Fp8; 5] = [
        Fp8::E4m3fn,
        Fp8::E5m2,
        Fp8::E4m3fnuz,
        Fp8::E5m2fnuz,
        Fp8::E8m0fnu,
    ];

    /// The value of one byte (the scalar definition).
    pub(crate) fn decode(self, b: u8) -> f32 {
        match self {
            Fp8::E4m3fn => super::f8_e4m3fn_to_f32(b),
            Fp8::E5m2 => super::f8_e5m2_to_f32(b),
            Fp8::E4m3fnuz => super::f8_e4m3fnuz_to_f32(b),
            Fp8::E5m2fnuz => super::f8_e5m2fnuz_to_f32(b),
            Fp8::E8m0fnu => super::f8_e8m0fnu_to_f32(b),
        }
    }

    /// The f32 bits of every byte (built once per format).
    fn table(self) -> &'static [u32; 256] {
        static TABLES: [OnceLock<[u32; 256]>; 5] = [const { OnceLock::new() }; 5];
        let i = Fp8::ALL.iter().position(|&k| k == self).expect("listed");
        TABLES[i].get_or_init(|| std::array::from_fn(|b| self.decode(b as u8).to_bits()))
    }
}

/// An integer of `S` bytes, sign-extended when `SIGNED`.
#[inline(always)]
fn int_of<const S: usize, const SIGNED: bool>(s: [u8; S]) -> i64 {
    let mut w = [0u8; 8];
    w[..S].copy_from_slice(&s);
    let v = u64::from_le_bytes(w);
    let shift = 64 - 8 * S as u32;
    if SIGNED {
        ((v << shift) as i64) >> shift
    } else {
        v as i64
    }
}

/// The low `D` bytes of an integer.
#[inline(always)]
fn int_to<const D: usize>(v: i64) -> [u8; D] {
    let mut out = [0u8; D];
    out.copy_from_slice(&v.to_le_bytes()[..D]);
    out
}

/// Elements whose value is an f32 (given as bits by `$value`, from `[u8; $s]`) into each
/// float dtype; false for any other.
macro_rules! from_f32 {
    ($isa:expr, $src:expr, $dst:expr, $to:expr, $s:literal, $value:expr) => {{
        let value = $value;
        match $to {
            DType::F32 => apply($isa, $src, $dst, |s: [u8; $s]| value(s).to_le_bytes()),
            DType::F64 => apply($isa, $src, $dst, |s: [u8; $s]| {
                bits::f32_to_f64(value(s)).to_le_bytes()
            }),
            DType::F16 => apply($isa, $src, $dst, |s: [u8; $s]| {
                bits::f32_to_f16(value(s)).to_le_bytes()
            }),
            DType::BF16 => apply($isa, $src, $dst, |s: [u8; $s]| {
                bits::f32_to_bf16(value(s)).to_le_bytes()
            }),
            _ => return false,
        }
        true
    }};
}

/// Integers of `[u8; $s]` (signed or not) into wider integers, or into floats that hold
/// them exactly (`plan` decides which: here they are simply converted).
macro_rules! from_int {
    ($isa:expr, $src:expr, $dst:expr, $to:expr, $s:literal, $signed:literal) => {{
        let v = |s: [u8; $s]| int_of::<$s, $signed>(s);
        match $to {
            DType::I8 | DType::U8 | DType::Bool => {
                apply($isa, $src, $dst, |s: [u8; $s]| int_to::<1>(v(s)))
            }
            DType::I16 | DType::U16 => apply($isa, $src, $dst, |s: [u8; $s]| int_to::<2>(v(s))),
            DType::I32 | DType::U32 => apply($isa, $src, $dst, |s: [u8; $s]| int_to::<4>(v(s))),
            DType::I64 | DType::U64 => apply($isa, $src, $dst, |s: [u8; $s]| int_to::<8>(v(s))),
            DType::F64 => apply($isa, $src, $dst, |s: [u8; $s]| (v(s) as f64).to_le_bytes()),
            // Exact for the sources `plan` allows (at most 24 bits); f16 and bf16 from
            // the exact f32.
            to => {
                return from_f32!($isa, $src, $dst, to, $s, |s: [u8; $s]| {
                    (v(s) as f32).to_bits()
                });
            }
        }
        true
    }};
}

/// Converts whole elements of `src` into `dst` with the kernels built for `isa.isa`,
/// streamed when `isa.stream` (the caller fences: `fence`). False when the pair has no
/// kernel (`plan` lets none through; the caller then has a generic path).
pub(crate) fn run(isa: Mode, from: From, to: DType, src: &[u8], dst: &mut [u8]) -> bool {
    use DType::*;
    let storage = match from {
        From::Fp8(k) => {
            let t = k.table();
            return from_f32!(isa, src, dst, to, 1, |s: [u8; 1]| t[s[0] as usize]);
        }
        From::Storage(d) => d,
    };
    match storage {
        #[cfg(target_arch = "x86_64")]
        F16 if to == F32 && isa.isa >= Isa::Avx2 && !denormals_are_zero() => {
            // SAFETY: `isa` is at most what `detect` found (AVX2 and F16C included).
            unsafe { f16_to_f32_f16c(src, dst, isa.stream) };
            true
        }
        F16 => from_f32!(isa, src, dst, to, 2, |s: [u8; 2]| bits::f16_to_f32(
            u16::from_le_bytes(s)
        )),
        BF16 => from_f32!(isa, src, dst, to, 2, |s: [u8; 2]| bits::bf16_to_f32(
            u16::from_le_bytes(s)
        )),
        F32 => from_f32!(isa, src, dst, to, 4, u32::from_le_bytes),
        F64 => {
            match to {
                F32 => apply(isa, src, dst, |s: [u8; 8]| {
                    bits::f64_to_f32(u64::from_le_bytes(s)).to_le_bytes()
                }),
                F16 => apply(isa, src, dst, |s: [u8; 8]| {
                    bits::f64_to_f16(u64::from_le_bytes(s)).to_le_bytes()
                }),
                BF16 => apply(isa, src, dst, |s: [u8; 8]| {
                    bits::f64_to_bf16(u64::from_le_bytes(s)).to_le_bytes()
                }),
                _ => return false,
            }
            true
        }
        I8 => from_int!(isa, src, dst, to, 1, true),
        U8 | Bool => from_int!(isa, src, dst, to, 1, false),
        I16 => from_int!(isa, src, dst, to, 2, true),
        U16 => from_int!(isa, src, dst, to, 2, false),
        I32 => from_int!(isa, src, dst, to, 4, true),
        U32 => from_int!(isa, src, dst, to, 4, false),
        I64 | U64 => false,
    }
}

/// Whether this thread's MXCSR has DAZ set, under which `vcvtph2ps` might read a
/// subnormal f16 as zero: the integer kernel is used then.
#[cfg(target_arch = "x86_64")]
fn denormals_are_zero() -> bool {
    let mut v = 0u32;
    // SAFETY: stores this thread's MXCSR into `v`.
    unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut v, options(nostack)) };
    v & 0x40 != 0
}

/// f16 -> f32 with F16C (`vcvtph2ps`, 8 values an instruction), bit-exact with
/// `bits::f16_to_f32`: the instruction sets a signaling NaN's quiet bit, so in the lanes
/// whose input was one (exponent all ones, top mantissa bit clear, mantissa not zero)
/// that bit (22 of the f32) is cleared again. Streamed (non-temporal stores, 32-byte
/// aligned) when `stream`; the elements before the first aligned store and after the
/// last 8 go through the scalar definition. The caller fences.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,f16c")]
fn f16_to_f32_f16c(src: &[u8], dst: &mut [u8], stream: bool) {
    use std::arch::x86_64::*;
    let n = (src.len() / 2).min(dst.len() / 4);
    let one = |i: usize, dst: &mut [u8]| {
        let v = bits::f16_to_f32(u16::from_le_bytes([src[2 * i], src[2 * i + 1]]));
        dst[4 * i..4 * i + 4].copy_from_slice(&v.to_le_bytes());
    };
    let addr = dst.as_ptr() as usize;
    let head = if stream && addr.is_multiple_of(4) {
        ((addr.next_multiple_of(32) - addr) / 4).min(n)
    } else {
        0
    };
    let stream = stream && addr.is_multiple_of(4);
    for i in 0..head {
        one(i, dst);
    }
    let body = (n - head) / 8;
    let exp = _mm256_set1_epi32(0x7e00);
    let snan_exp = _mm256_set1_epi32(0x7c00);
    let low = _mm256_set1_epi32(0x1ff);
    let quiet = _mm256_set1_epi32(0x40_0000);
    for k in 0..body {
        let i = head + 8 * k;
        // SAFETY: elements i..i+8 are in both slices (i + 8 <= n); unaligned loads, and
        // stores aligned to 32 when streamed (`head` reached the boundary).
        unsafe {
            let h = _mm_loadu_si128(src.as_ptr().add(2 * i).cast::<__m128i>());
            let f = _mm256_castps_si256(_mm256_cvtph_ps(h));
            let w = _mm256_cvtepu16_epi32(h);
            let is_nan_exp = _mm256_cmpeq_epi32(_mm256_and_si256(w, exp), snan_exp);
            let payload = _mm256_cmpgt_epi32(_mm256_and_si256(w, low), _mm256_setzero_si256());
            let fix = _mm256_and_si256(_mm256_and_si256(is_nan_exp, payload), quiet);
            let v = _mm256_andnot_si256(fix, f);
            let at = dst.as_mut_ptr().add(4 * i).cast::<__m256i>();
            if stream {
                _mm256_stream_si256(at, v);
            } else {
                _mm256_storeu_si256(at, v);
            }
        }
    }
    for i in head + 8 * body..n {
        one(i, dst);
    }
}

/// Outputs of at least this many bytes are streamed (non-temporal stores): past the size
/// of the caches a conversion's output would only evict what is read, and reading the
/// destination's lines before overwriting them costs as much bandwidth as writing them
/// (bf16 -> f32 of 64 Mi values on one thread: 1.5x faster streamed).
pub(crate) const STREAM_MIN: usize = 8 << 20;

/// Orders the non-temporal stores before whatever follows (another thread may read the
/// output once this one's work is seen as done).
pub(crate) fn fence() {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: SSE is part of x86-64.
    unsafe {
        std::arch::x86_64::_mm_sfence()
    };
}
