//! The conversion kernels against the scalar definition, and the scalar definition against
//! an independent exact rounding and against what the library wrote before the kernels.

use half::{bf16, f16};

use super::bits;
use super::fast::{self, Fp8, From, Isa, Mode};
use super::{Plan, convert, convert_with, plan, source_kind};
use crate::dtype::{ALL_DTYPES, DType};

/// Deterministic pseudo-random numbers (splitmix64).
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Mantissa patterns of `bits` bits that exercise rounding at every cut: zero, all ones,
/// and for each cut position the exact tie, one below and above it, and the tie with an
/// odd kept part; then `random` random ones.
fn mantissas(bits: u32, random: usize, rng: &mut Rng) -> Vec<u64> {
    let all = (1u64 << bits) - 1;
    let mut v = vec![0, 1, 2, all, all - 1, 1 << (bits - 1)];
    for k in 1..bits {
        let tie = 1u64 << (k - 1);
        for m in [
            tie,
            tie - 1,
            tie + 1,
            tie | (1 << k),
            (tie | (1 << k)) - 1,
            1 << k,
        ] {
            v.push(m & all);
            v.push((m | (all & !((1 << k) - 1) & 0x5555_5555_5555_5555)) & all);
        }
    }
    v.extend((0..random).map(|_| rng.next() & all));
    v
}

/// Every sign and exponent of f32 with `mantissas(23)`: every class (zeros, subnormals,
/// normals, infinities, NaNs quiet and signalling with payloads) and every rounding cut.
fn f32_classes() -> Vec<u32> {
    let mut rng = Rng(32);
    let ms = mantissas(23, 24, &mut rng);
    let mut v = Vec::new();
    for sign in [0u32, 1] {
        for e in 0..=255u32 {
            for &m in &ms {
                v.push(sign << 31 | e << 23 | m as u32);
            }
        }
    }
    v
}

/// The same for f64 (every exponent; fewer random mantissas).
fn f64_classes() -> Vec<u64> {
    let mut rng = Rng(64);
    let ms = mantissas(52, 4, &mut rng);
    let mut v = Vec::new();
    for sign in [0u64, 1] {
        for e in 0..=2047u64 {
            for &m in &ms {
                v.push(sign << 63 | e << 52 | m);
            }
        }
    }
    v
}

/// Exact rounding of a finite, non-NaN f64 to a 16-bit float with `man` mantissa bits and
/// exponent bias `bias`, to nearest even, by integer arithmetic on the value's
/// significand: the independent definition the scalar functions are checked against.
fn round_exact(x: u64, man: u32, bias: i32) -> u16 {
    let sign = ((x >> 63) as u16) << 15;
    let inf = sign | ((1u16 << (15 - man)) - 1) << man;
    let a = x & !(1 << 63);
    if a == 0x7ff0_0000_0000_0000 {
        return inf;
    }
    let (e64, f) = ((a >> 52) as i32, a & ((1 << 52) - 1));
    let (m, e) = if e64 == 0 {
        (f, -1074)
    } else {
        (f | 1 << 52, e64 - 1075)
    };
    if m == 0 {
        return sign;
    }
    // value = m x 2^e; its leading bit has weight 2^lead.
    let lead = e + 63 - m.leading_zeros() as i32;
    let emin = 1 - bias;
    let q = lead.max(emin) - man as i32;
    let r: u128 = if q <= e {
        u128::from(m) << (e - q)
    } else {
        let sh = (q - e) as u32;
        if sh > 60 {
            0
        } else {
            let (kept, lost, half) = (m >> sh, m & ((1 << sh) - 1), 1u64 << (sh - 1));
            u128::from(kept + u64::from(lost > half || (lost == half && kept & 1 == 1)))
        }
    };
    if r == 0 {
        return sign;
    }
    let lead = q + 127 - r.leading_zeros() as i32;
    if lead > bias {
        return inf;
    }
    if lead < emin {
        return sign | r as u16;
    }
    let width = (lead - q) as u32;
    let frac = if width >= man {
        r >> (width - man)
    } else {
        r << (man - width)
    } as u16
        & ((1 << man) - 1);
    sign | ((lead + bias) as u16) << man | frac
}

fn f16_exact(x: u64) -> u16 {
    round_exact(x, 10, 15)
}

fn bf16_exact(x: u64) -> u16 {
    round_exact(x, 7, 127)
}

fn is_nan32(x: u32) -> bool {
    x & 0x7fff_ffff > 0x7f80_0000
}

fn is_nan64(x: u64) -> bool {
    x & 0x7fff_ffff_ffff_ffff > 0x7ff0_0000_0000_0000
}

#[test]
fn f16_and_bf16_widen_exactly_every_value() {
    for h in 0..=u16::MAX {
        // The definition the library used before: every bit kept, NaN payloads included.
        assert_eq!(
            bits::f16_to_f32(h),
            crate::quant::f16_to_f32(h).to_bits(),
            "{h:#06x}"
        );
        let b = bits::bf16_to_f32(h);
        assert_eq!(b, u32::from(h) << 16);
        if !is_nan32(b) {
            assert_eq!(f32::from_bits(b), bf16::from_bits(h).to_f32());
        }
    }
}

#[test]
fn narrowing_f32_rounds_to_nearest_even_on_every_class() {
    for x in f32_classes() {
        let (h, b) = (bits::f32_to_f16(x), bits::f32_to_bf16(x));
        if is_nan32(x) {
            let (sign, payload) = ((x >> 16) as u16 & 0x8000, x & 0x7f_ffff);
            assert_eq!(h, sign | 0x7e00 | (payload >> 13) as u16, "{x:#010x}");
            assert_eq!(b, sign | 0x7fc0 | (payload >> 16) as u16, "{x:#010x}");
            continue;
        }
        let wide = f64::from(f32::from_bits(x)).to_bits();
        assert_eq!(h, f16_exact(wide), "f16 of {x:#010x}");
        assert_eq!(b, bf16_exact(wide), "bf16 of {x:#010x}");
        // What `half` gives (the library's f16 results before, with or without F16C).
        assert_eq!(h, f16::from_f32(f32::from_bits(x)).to_bits(), "{x:#010x}");
        assert_eq!(b, bf16::from_f32(f32::from_bits(x)).to_bits(), "{x:#010x}");
    }
}

#[test]
fn narrowing_f64_rounds_once_to_nearest_even_on_every_class() {
    for x in f64_classes() {
        let (h, b) = (bits::f64_to_f16(x), bits::f64_to_bf16(x));
        if is_nan64(x) {
            let (sign, payload) = ((x >> 48) as u16 & 0x8000, x & ((1 << 52) - 1));
            assert_eq!(h, sign | 0x7e00 | (payload >> 42) as u16, "{x:#018x}");
            assert_eq!(b, sign | 0x7fc0 | (payload >> 45) as u16, "{x:#018x}");
            continue;
        }
        assert_eq!(h, f16_exact(x), "f16 of {x:#018x}");
        assert_eq!(b, bf16_exact(x), "bf16 of {x:#018x}");
    }
}

#[test]
fn f32_and_f64_convert_as_the_hardware_does_on_every_class() {
    // In the default floating-point mode, `as` is IEEE: exact widening, narrowing to
    // nearest even, NaN quieted with its payload's top bits.
    for x in f32_classes() {
        let want = f64::from(f32::from_bits(x)).to_bits();
        assert_eq!(bits::f32_to_f64(x), want, "{x:#010x}");
    }
    for x in f64_classes() {
        let want = (f64::from_bits(x) as f32).to_bits();
        assert_eq!(bits::f64_to_f32(x), want, "{x:#018x}");
    }
}

/// Every f32, through the scalar definition against `half` (the f16 results the library
/// had before; bf16's with `half`'s direct f32 rounding), and where bf16 changed from
/// before (`bf16_was_rounded_down`). Minutes in a debug build:
/// `cargo test --release --lib every_f32 -- --ignored`.
#[test]
#[ignore]
fn every_f32_narrows_as_half_does() {
    for x in 0..=u32::MAX {
        let v = f32::from_bits(x);
        assert_eq!(bits::f32_to_f16(x), f16::from_f32(v).to_bits(), "{x:#010x}");
        assert_eq!(
            bits::f32_to_bf16(x),
            bf16::from_f32(v).to_bits(),
            "{x:#010x}"
        );
        let before = bf16::from_f64(f64::from(v)).to_bits();
        assert_eq!(
            before != bits::f32_to_bf16(x),
            bf16_was_rounded_down(x),
            "{x:#010x}"
        );
    }
}

/// Whether the library's f32 -> bf16 result before the kernels was off: it went through
/// `bf16::from_f64`, which rounds on the f64's top 32 bits only, dropping the bits of the
/// f32 that land in the f64's lower word (the 3 low mantissa bits of a normal f32; of a
/// subnormal one, those more than 20 places below its leading bit); a value above a tie
/// by no more than those bits, with an even kept part, was taken for a tie and rounded
/// down.
fn bf16_was_rounded_down(x: u32) -> bool {
    let lost = if x & 0x7f80_0000 != 0 {
        3
    } else {
        (32 - (x & 0x7f_ffff).leading_zeros()).saturating_sub(21)
    };
    let mask = (1u32 << lost) - 1;
    !is_nan32(x) && x & 0xffff & !mask == 0x8000 && x & mask != 0 && x & 0x1_0000 == 0
}

#[test]
fn f32_to_bf16_differs_from_before_only_just_above_ties() {
    let mut changed = 0;
    for x in f32_classes() {
        let before = bf16::from_f64(f64::from(f32::from_bits(x))).to_bits();
        let now = bits::f32_to_bf16(x);
        assert_eq!(before != now, bf16_was_rounded_down(x), "{x:#010x}");
        changed += usize::from(before != now);
    }
    assert!(changed > 0);
}

/// The scalar definition of converting one element, restated element by element (the
/// kernels must give these bytes).
fn scalar(from: From, storage: DType, to: DType, s: &[u8]) -> Vec<u8> {
    use DType::*;
    let f32_bits: Option<u32> = match from {
        From::Fp8(k) => Some(k.decode(s[0]).to_bits()),
        From::Storage(F16) => Some(bits::f16_to_f32(u16::from_le_bytes([s[0], s[1]]))),
        From::Storage(BF16) => Some(bits::bf16_to_f32(u16::from_le_bytes([s[0], s[1]]))),
        From::Storage(F32) => Some(u32::from_le_bytes(s.try_into().unwrap())),
        _ => None,
    };
    if let Some(v) = f32_bits {
        return match to {
            F32 => v.to_le_bytes().to_vec(),
            F64 => f64::from(f32::from_bits(v)).to_le_bytes().to_vec(),
            F16 => bits::f32_to_f16(v).to_le_bytes().to_vec(),
            BF16 => bits::f32_to_bf16(v).to_le_bytes().to_vec(),
            _ => unreachable!(),
        };
    }
    if storage == F64 {
        let x = u64::from_le_bytes(s.try_into().unwrap());
        return match to {
            F32 => (f64::from_bits(x) as f32).to_le_bytes().to_vec(),
            F16 => bits::f64_to_f16(x).to_le_bytes().to_vec(),
            BF16 => bits::f64_to_bf16(x).to_le_bytes().to_vec(),
            _ => unreachable!(),
        };
    }
    let signed = matches!(storage, I8 | I16 | I32);
    let mut w = [0u8; 8];
    w[..s.len()].copy_from_slice(s);
    let shift = 64 - 8 * s.len() as u32;
    let v = if signed {
        (u64::from_le_bytes(w) << shift) as i64 >> shift
    } else {
        u64::from_le_bytes(w) as i64
    };
    match to {
        F32 => (v as f32).to_le_bytes().to_vec(),
        F64 => (v as f64).to_le_bytes().to_vec(),
        F16 => bits::f32_to_f16((v as f32).to_bits())
            .to_le_bytes()
            .to_vec(),
        BF16 => bits::f32_to_bf16((v as f32).to_bits())
            .to_le_bytes()
            .to_vec(),
        _ => v.to_le_bytes()[..to.size()].to_vec(),
    }
}

/// Source elements of `storage` for the kernel tests: every value of 8 and 16 bits; the
/// classes of f32 and f64; for 32-bit integers the extremes and random values.
fn inputs(storage: DType) -> Vec<u8> {
    let mut rng = Rng(7);
    match storage.size() {
        1 => (0..=255u8).collect(),
        2 => (0..=u16::MAX).flat_map(u16::to_le_bytes).collect(),
        4 if storage == DType::F32 => f32_classes()
            .into_iter()
            .flat_map(u32::to_le_bytes)
            .collect(),
        4 => [
            0u32,
            1,
            u32::MAX,
            1 << 31,
            (1 << 31) - 1,
            1 << 24,
            (1 << 24) + 1,
        ]
        .into_iter()
        .chain((0..4096).map(|_| rng.next() as u32))
        .flat_map(u32::to_le_bytes)
        .collect(),
        _ => f64_classes()
            .into_iter()
            .flat_map(u64::to_le_bytes)
            .collect(),
    }
}

/// Every conversion `plan` allows element by element: (storage, logical type, to).
fn element_pairs() -> Vec<(DType, Option<&'static str>, DType)> {
    let mut v = Vec::new();
    let logicals = [
        None,
        Some("f8_e4m3fn"),
        Some("f8_e5m2"),
        Some("f8_e4m3fnuz"),
        Some("f8_e5m2fnuz"),
        Some("f8_e8m0fnu"),
    ];
    for from in ALL_DTYPES {
        for logical in logicals {
            if logical.is_some() && from != DType::U8 {
                continue;
            }
            for to in ALL_DTYPES {
                if matches!(plan(from, logical, to), Ok(Plan::Elements)) {
                    v.push((from, logical, to));
                }
            }
        }
    }
    v
}

#[test]
fn every_kernel_on_every_isa_writes_the_scalar_definition() {
    let pairs = element_pairs();
    // Floats among four dtypes, five fp8 formats to four, and the integer widenings.
    assert!(pairs.len() >= 12 + 20 + 30, "{} pairs", pairs.len());
    for (storage, logical, to) in pairs {
        let from = source_kind(storage, logical).unwrap();
        let src = inputs(storage);
        let (sw, dw) = (storage.size(), to.size());
        let n = src.len() / sw;
        let want: Vec<u8> = src
            .chunks_exact(sw)
            .flat_map(|s| scalar(from, storage, to, s))
            .collect();
        for isa in fast::isas() {
            // Unaligned source; destinations at offsets that are unaligned, aligned to an
            // element but not to a line, and aligned to a line (from a 64-aligned base);
            // plain and streamed stores. The length leaves a tail for every vector width.
            let mut s = vec![0u8; src.len() + 1];
            s[1..].copy_from_slice(&src);
            let mut d = vec![0xa5u8; n * dw + 128 + 64];
            let base = d.as_ptr().align_offset(64);
            for off in [3, dw, 3 * dw, 64] {
                for stream in [false, true] {
                    let at = base + off;
                    d.fill(0xa5);
                    let out = &mut d[at..at + n * dw];
                    assert!(fast::run(Mode { isa, stream }, from, to, &s[1..], out));
                    fast::fence();
                    assert!(
                        out[..] == want[..],
                        "{storage} {logical:?} -> {to} on {isa:?}, offset {off}, stream \
                         {stream}: first difference at element {}",
                        (0..n)
                            .find(|&i| out[i * dw..(i + 1) * dw] != want[i * dw..(i + 1) * dw])
                            .unwrap_or(n)
                    );
                    assert!(
                        d[..at].iter().all(|&b| b == 0xa5),
                        "wrote before the output"
                    );
                    assert!(d[at + n * dw..].iter().all(|&b| b == 0xa5), "wrote past it");
                }
            }
        }
    }
}

/// The library's element conversions before the kernels (through f64 and `half`), for the
/// comparison below.
fn before(storage: DType, logical: Option<&str>, to: DType, s: &[u8]) -> Vec<u8> {
    let v: f64 = match (logical, storage) {
        (Some(_), _) => match source_kind(storage, logical).unwrap() {
            From::Fp8(k) => f64::from(k.decode(s[0])),
            From::Storage(_) => unreachable!(),
        },
        (None, DType::F64) => f64::from_le_bytes(s.try_into().unwrap()),
        (None, DType::F32) => f64::from(f32::from_le_bytes(s.try_into().unwrap())),
        (None, DType::F16) if to == DType::F32 => {
            return crate::quant::f16_to_f32(u16::from_le_bytes([s[0], s[1]]))
                .to_le_bytes()
                .to_vec();
        }
        (None, DType::BF16) if to == DType::F32 => return [0, 0, s[0], s[1]].to_vec(),
        (None, DType::F16) => f16::from_le_bytes([s[0], s[1]]).to_f64(),
        (None, DType::BF16) => bf16::from_le_bytes([s[0], s[1]]).to_f64(),
        (None, d) if !to.is_float() => {
            let signed = matches!(d, DType::I8 | DType::I16 | DType::I32);
            let mut w = [0u8; 8];
            w[..s.len()].copy_from_slice(s);
            let shift = 64 - 8 * s.len() as u32;
            let raw = u64::from_le_bytes(w);
            let v = if signed {
                ((raw << shift) as i64 >> shift) as u64
            } else {
                raw
            };
            return v.to_le_bytes()[..to.size()].to_vec();
        }
        (None, DType::I8) => f64::from(s[0] as i8),
        (None, DType::U8 | DType::Bool) => f64::from(s[0]),
        (None, DType::I16) => f64::from(i16::from_le_bytes([s[0], s[1]])),
        (None, DType::U16) => f64::from(u16::from_le_bytes([s[0], s[1]])),
        (None, DType::I32) => f64::from(i32::from_le_bytes(s.try_into().unwrap())),
        (None, DType::U32) => f64::from(u32::from_le_bytes(s.try_into().unwrap())),
        (None, _) => unreachable!(),
    };
    match to {
        DType::F64 => v.to_le_bytes().to_vec(),
        DType::F32 => (v as f32).to_le_bytes().to_vec(),
        DType::F16 => f16::from_f64(v).to_le_bytes().to_vec(),
        _ => bf16::from_f64(v).to_le_bytes().to_vec(),
    }
}

/// Bit-exact with what the library wrote before, except where that was not rounded to
/// nearest even: f32 just above a tie to bf16 (`bf16_was_rounded_down`), and f64 to f16
/// or bf16 (`half` rounds f64 on its top 32 bits, and with F16C goes through f32,
/// rounding twice). There the new bytes are the exact rounding.
#[test]
fn kernels_write_what_the_library_wrote_before() {
    for (storage, logical, to) in element_pairs() {
        let src = inputs(storage);
        let (sw, dw) = (storage.size(), to.size());
        let mut out = vec![0u8; src.len() / sw * dw];
        convert(storage, logical, &src, to, &mut out);
        let mut changed = 0;
        for (s, d) in src.chunks_exact(sw).zip(out.chunks_exact(dw)) {
            let old = before(storage, logical, to, s);
            if d == &old[..] {
                continue;
            }
            let now = u16::from_le_bytes([d[0], d[1]]);
            let (exact, was_off) = match storage {
                DType::F32 => {
                    let x = u32::from_le_bytes(s.try_into().unwrap());
                    let off = to == DType::BF16 && bf16_was_rounded_down(x);
                    (f64::from(f32::from_bits(x)).to_bits(), off)
                }
                DType::F64 => (u64::from_le_bytes(s.try_into().unwrap()), true),
                _ => panic!("{storage} {logical:?} -> {to}: {s:?} gave {d:?}, before {old:?}"),
            };
            assert!(
                was_off,
                "{storage} -> {to}: {s:?} gave {d:?}, before {old:?}"
            );
            let want = if to == DType::F16 {
                f16_exact(exact)
            } else {
                bf16_exact(exact)
            };
            assert_eq!(now, want, "{storage} -> {to}: {s:?}");
            changed += 1;
        }
        if storage == DType::F32 && to == DType::F16 {
            assert_eq!(changed, 0);
        }
    }
}

#[test]
fn a_large_conversion_on_the_pool_writes_the_same_bytes() {
    // More than STREAM_MIN of output, split in pieces on two workers (or one: the same
    // bytes either way), against a single-threaded unstreamed run.
    let n = fast::STREAM_MIN / 4 + 12_345;
    let mut rng = Rng(3);
    let src: Vec<u8> = (0..n)
        .flat_map(|_| (rng.next() as u16).to_le_bytes())
        .collect();
    for storage in [DType::F16, DType::BF16] {
        let mut want = vec![0u8; n * 4];
        assert!(fast::run(
            Mode {
                isa: fast::isa(),
                stream: false
            },
            From::Storage(storage),
            DType::F32,
            &src,
            &mut want
        ));
        let mut got = vec![0u8; n * 4 + 1];
        convert_with(storage, None, &src, DType::F32, &mut got[1..], || 2);
        assert!(got[1..] == want[..], "{storage}");
    }
}

#[test]
fn fp8_on_a_wider_storage_dtype_is_converted_element_by_element() {
    // No format writes this, but a file may say it: the first byte of each element is
    // decoded, as before.
    let src = [0x38u8, 0xff, 0xb8, 0x00];
    let mut out = [0u8; 8];
    convert(DType::F16, Some("f8_e4m3fn"), &src, DType::F32, &mut out);
    assert_eq!(out[..4], 1.0f32.to_le_bytes());
    assert_eq!(out[4..], (-1.0f32).to_le_bytes());
}

#[test]
fn every_fp8_table_holds_its_decoder() {
    for k in [
        Fp8::E4m3fn,
        Fp8::E5m2,
        Fp8::E4m3fnuz,
        Fp8::E5m2fnuz,
        Fp8::E8m0fnu,
    ] {
        let src: Vec<u8> = (0..=255).collect();
        let mut out = vec![0u8; 1024];
        let mode = Mode {
            isa: Isa::Baseline,
            stream: false,
        };
        assert!(fast::run(mode, From::Fp8(k), DType::F32, &src, &mut out));
        for (b, d) in src.iter().zip(out.chunks(4)) {
            assert_eq!(
                u32::from_le_bytes(d.try_into().unwrap()),
                k.decode(*b).to_bits(),
                "{k:?} {b:#04x}"
            );
        }
    }
}

/// With flush-to-zero and denormals-are-zero set (as inference runtimes often run), every
/// kernel still writes the same bytes: subnormals widen to their values and values narrow
/// to subnormals (f32 <-> f64 included), for every pair `plan` allows.
#[cfg(target_arch = "x86_64")]
#[test]
fn kernels_ignore_flush_to_zero_and_denormals_are_zero() {
    fn mxcsr() -> u32 {
        let mut v = 0u32;
        // SAFETY: stores this thread's MXCSR into `v`.
        unsafe { std::arch::asm!("stmxcsr [{}]", in(reg) &mut v, options(nostack)) };
        v
    }
    fn set_mxcsr(v: u32) {
        // SAFETY: loads a valid MXCSR value for this thread only.
        unsafe { std::arch::asm!("ldmxcsr [{}]", in(reg) &v, options(nostack)) };
    }
    let cases: Vec<(DType, Option<&str>, DType)> = element_pairs();
    let mut expected = Vec::new();
    for &(storage, logical, to) in &cases {
        let src = inputs(storage);
        let mut out = vec![0u8; src.len() / storage.size() * to.size()];
        convert(storage, logical, &src, to, &mut out);
        expected.push((src, out));
    }
    let saved = mxcsr();
    set_mxcsr(saved | 0x8040);
    let mut differs = Vec::new();
    for (&(storage, logical, to), (src, want)) in cases.iter().zip(&expected) {
        let from = source_kind(storage, logical).unwrap();
        for isa in fast::isas() {
            let mut out = vec![0u8; want.len()];
            for stream in [false, true] {
                fast::run(Mode { isa, stream }, from, to, src, &mut out);
                fast::fence();
                if out != *want {
                    differs.push(format!(
                        "{storage} {logical:?} -> {to} on {isa:?}, {stream}"
                    ));
                }
            }
        }
    }
    set_mxcsr(saved);
    assert!(differs.is_empty(), "{differs:?}");
}
