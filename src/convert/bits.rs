//! The scalar definition of every float conversion `read_as` does, one value at a time,
//! on bits: the slice kernels (`fast`) are these functions in loops, and the tests check
//! them against this definition on every input of 8 and 16 bits and on every class of
//! wider ones.
//!
//! Narrowing rounds to nearest, ties to even, with a single rounding (f64 to f16 goes
//! straight to f16, not through f32). NaN stays NaN with its sign and the top bits of its
//! payload, quieted (the payload's top bit set), as the `half` crate does; widening an
//! f16 or bf16 to f32 keeps the bits exactly (a signalling NaN stays signalling).
//!
//! Branch-free (selects, which the compiler turns into vector blends), and independent of
//! the caller's floating-point environment: integer operations, except two additions whose
//! operands and results are normal numbers or whose inputs would round to zero anyway (the
//! subnormal cases of narrowing), so that flush-to-zero and denormals-are-zero modes can't
//! change a result.

/// The f32 bits of an IEEE half (exact; a NaN keeps its payload bits, quiet or not).
#[inline(always)]
pub(crate) fn f16_to_f32(h: u16) -> u32 {
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    let em = h & 0x7fff;
    let normal = (em << 13) + (112 << 23);
    // Infinity and NaN: exponent 31 becomes 255, the payload moves up as it is.
    let special = (em << 13) + (224 << 23);
    // Zero and subnormals: the mantissa (an integer below 2^10, exact in f32) times
    // 2^-24, an exact product of normal numbers (or zero).
    let small = (em as f32 * f32::from_bits(0x3380_0000)).to_bits();
    let bits = match em >> 10 {
        0 => small,
        31 => special,
        _ => normal,
    };
    sign | bits
}

/// The f32 bits of a bfloat16 (its top half; exact, NaN payloads kept).
#[inline(always)]
pub(crate) fn bf16_to_f32(b: u16) -> u32 {
    u32::from(b) << 16
}

/// f32 bits to IEEE half bits, rounded to nearest even; overflow is infinity; NaN is
/// quieted, keeping its sign and its payload's top 10 bits.
#[inline(always)]
pub(crate) fn f32_to_f16(x: u32) -> u16 {
    let sign = (x >> 16) & 0x8000;
    let a = x & 0x7fff_ffff;
    // Normal halves: rebias the exponent (127 -> 15), round off 13 bits.
    let r = a.wrapping_sub(112 << 23);
    let normal = r.wrapping_add(0xfff + ((r >> 13) & 1)) >> 13;
    // Below 2^-14: adding 0.5 (whose unit in the last place is 2^-24, the subnormal
    // half's) rounds the value to a multiple of 2^-24, once; the low bits of the sum
    // count them. Values so small that they are subnormal f32 give 0 either way.
    let small = (f32::from_bits(a) + 0.5)
        .to_bits()
        .wrapping_sub(0x3f00_0000);
    let nan = 0x7e00 | ((a >> 13) & 0x3ff);
    let bits = if a > 0x7f80_0000 {
        nan
    } else if a >= 0x477f_f000 {
        // 65520 and up round to infinity (and infinity stays).
        0x7c00
    } else if a >= 0x3880_0000 {
        normal
    } else {
        small
    };
    (sign | bits) as u16
}

/// f32 bits to bfloat16 bits, rounded to nearest even; NaN is quieted, keeping its sign
/// and its payload's top 7 bits.
#[inline(always)]
pub(crate) fn f32_to_bf16(x: u32) -> u16 {
    let rounded = x.wrapping_add(0x7fff + ((x >> 16) & 1)) >> 16;
    let nan = (x >> 16) | 0x40;
    (if x & 0x7fff_ffff > 0x7f80_0000 {
        nan
    } else {
        rounded
    }) as u16
}

/// f64 bits to IEEE half bits, rounded to nearest even once; NaN as `f32_to_f16`.
#[inline(always)]
pub(crate) fn f64_to_f16(x: u64) -> u16 {
    let sign = ((x >> 48) & 0x8000) as u32;
    let a = x & 0x7fff_ffff_ffff_ffff;
    // Rebias 1023 -> 15, round off 42 bits.
    let r = a.wrapping_sub(1008 << 52);
    let normal = (r.wrapping_add((1 << 41) - 1 + ((r >> 42) & 1)) >> 42) as u32;
    // Below 2^-14: 2^28's unit in the last place is 2^-24 (see `f32_to_f16`).
    const MAGIC: u64 = 0x41b0_0000_0000_0000;
    let small = (f64::from_bits(a) + f64::from_bits(MAGIC))
        .to_bits()
        .wrapping_sub(MAGIC) as u32;
    let nan = 0x7e00 | ((a >> 42) & 0x3ff) as u32;
    let bits = if a > 0x7ff0_0000_0000_0000 {
        nan
    } else if a >= 0x40ef_fe00_0000_0000 {
        // 65520 and up.
        0x7c00
    } else if a >= 0x3f10_0000_0000_0000 {
        normal
    } else {
        small
    };
    (sign | bits) as u16
}

/// f64 bits to bfloat16 bits, rounded to nearest even once; NaN as `f32_to_bf16`.
#[inline(always)]
pub(crate) fn f64_to_bf16(x: u64) -> u16 {
    let sign = ((x >> 48) & 0x8000) as u32;
    let a = x & 0x7fff_ffff_ffff_ffff;
    // Rebias 1023 -> 127, round off 45 bits.
    let r = a.wrapping_sub(896 << 52);
    let normal = (r.wrapping_add((1 << 44) - 1 + ((r >> 45) & 1)) >> 45) as u32;
    // Below 2^-126: 2^-81's unit in the last place is 2^-133, the subnormal bfloat16's.
    const MAGIC: u64 = 0x3ae0_0000_0000_0000;
    let small = (f64::from_bits(a) + f64::from_bits(MAGIC))
        .to_bits()
        .wrapping_sub(MAGIC) as u32;
    let nan = 0x7fc0 | ((a >> 45) & 0x7f) as u32;
    let bits = if a > 0x7ff0_0000_0000_0000 {
        nan
    } else if a >= 0x47ef_f000_0000_0000 {
        // (2 - 2^-8) x 2^127 and up round to infinity.
        0x7f80
    } else if a >= 0x3810_0000_0000_0000 {
        normal
    } else {
        small
    };
    (sign | bits) as u16
}

/// f32 bits to f64 bits, exactly; NaN is quieted, keeping its sign and payload (what
/// `as f64` does with the caller's default floating-point mode, here without one).
#[inline(always)]
pub(crate) fn f32_to_f64(x: u32) -> u64 {
    let sign = u64::from(x & 0x8000_0000) << 32;
    let a = x & 0x7fff_ffff;
    let wide = u64::from(a) << 29;
    // Normal: rebias 127 -> 1023. Infinity and NaN: exponent 255 -> 2047.
    let normal = wide + (896 << 52);
    let special = wide | (0x7ff << 52);
    // Zero and subnormals: the mantissa (an integer below 2^23, exact in f64) times
    // 2^-149, an exact product of normal numbers (or zero).
    let small = (f64::from(a) * f64::from_bits(0x36a0_0000_0000_0000)).to_bits();
    let bits = if a > 0x7f80_0000 {
        special | (1 << 51)
    } else if a == 0x7f80_0000 {
        special
    } else if a >= 0x0080_0000 {
        normal
    } else {
        small
    };
    sign | bits
}

/// f64 bits to f32 bits, rounded to nearest even; overflow is infinity; NaN is quieted,
/// keeping its sign and its payload's top 22 bits (what `as f32` does, without depending
/// on the caller's floating-point mode).
#[inline(always)]
pub(crate) fn f64_to_f32(x: u64) -> u32 {
    let sign = ((x >> 32) & 0x8000_0000) as u32;
    let a = x & 0x7fff_ffff_ffff_ffff;
    // Rebias 1023 -> 127, round off 29 bits.
    let r = a.wrapping_sub(896 << 52);
    let normal = (r.wrapping_add((1 << 28) - 1 + ((r >> 29) & 1)) >> 29) as u32;
    // Below 2^-126: 2^-97's unit in the last place is 2^-149, the subnormal f32's.
    const MAGIC: u64 = 0x39e0_0000_0000_0000;
    let small = (f64::from_bits(a) + f64::from_bits(MAGIC))
        .to_bits()
        .wrapping_sub(MAGIC) as u32;
    let nan = 0x7fc0_0000 | ((a >> 29) & 0x3f_ffff) as u32;
    let bits = if a > 0x7ff0_0000_0000_0000 {
        nan
    } else if a >= 0x47ef_ffff_f000_0000 {
        // (2 - 2^-24) x 2^127 and up round to infinity.
        0x7f80_0000
    } else if a >= 0x3810_0000_0000_0000 {
        normal
    } else {
        small
    };
    sign | bits
}
