//! Floats narrower than a byte, packed (safetensors `F4`, `F6_E2M3`, `F6_E3M2`): the
//! values form one little-endian bit stream, value i in bits `[w*i, w*i + w)` counted
//! from bit 0 of byte 0 (so an F4 byte holds value 2i in its low nibble, 2i + 1 in its
//! high nibble, as PyTorch's `float4_e2m1fn_x2` packs them). Read as `u8` components of
//! logical type `f4_e2m1fn_x2` (2 values per byte), `f6_e2m3fn_x4` and `f6_e3m2fn_x4`
//! (4 values per 3 bytes), and decoded with the same machinery as ggml blocks. The values
//! are ml_dtypes' `float4_e2m1fn`, `float6_e2m3fn` and `float6_e3m2fn`: no infinities, no
//! NaN.

use super::{BlockType, c_str};

/// The value of an `e`-exponent-bit, `m`-mantissa-bit float with exponent bias
/// `2^(e-1) - 1`, subnormals, and no infinities or NaN, from its low `1 + e + m` bits.
#[inline(always)]
fn minifloat(bits: u32, e: u32, m: u32) -> f32 {
    let sign = if bits >> (e + m) & 1 == 1 { -1.0 } else { 1.0 };
    let exp = (bits >> m) & ((1 << e) - 1);
    let man = (bits & ((1 << m) - 1)) as f32 / (1 << m) as f32;
    let bias = (1i32 << (e - 1)) - 1;
    let v = if exp == 0 {
        man * 2f32.powi(1 - bias)
    } else {
        (1.0 + man) * 2f32.powi(exp as i32 - bias)
    };
    sign * v
}

/// Every value of a type of `w` bits, indexed by its bits.
fn table<const N: usize>(e: u32, m: u32) -> [f32; N] {
    std::array::from_fn(|b| minifloat(b as u32, e, m))
}

fn f4_e2m1(src: &[u8], dst: &mut [f32]) {
    let t: [f32; 16] = table(2, 1);
    for (b, d) in src.iter().zip(dst.chunks_exact_mut(2)) {
        d[0] = t[usize::from(b & 0x0f)];
        d[1] = t[usize::from(b >> 4)];
    }
}

/// Four 6-bit values from three bytes (24 bits, little-endian), through `t`.
fn six_bits(src: &[u8], dst: &mut [f32], t: &[f32; 64]) {
    for (b, d) in src.chunks_exact(3).zip(dst.chunks_exact_mut(4)) {
        let word = u32::from(b[0]) | u32::from(b[1]) << 8 | u32::from(b[2]) << 16;
        for (i, v) in d.iter_mut().enumerate() {
            *v = t[(word >> (6 * i) & 0x3f) as usize];
        }
    }
}

fn f6_e2m3(src: &[u8], dst: &mut [f32]) {
    six_bits(src, dst, &table(2, 3));
}

fn f6_e3m2(src: &[u8], dst: &mut [f32]) {
    six_bits(src, dst, &table(3, 2));
}

/// The packed sub-byte float types (no ggml id: `id` is 0 and never shown).
pub(super) const PACKED_FLOATS: &[BlockType] = &[
    BlockType {
        id: 0,
        name: c_str("F4\0"),
        logical_type: "f4_e2m1fn_x2",
        block_size: 2,
        type_size: 1,
        kernel: Ok(f4_e2m1),
    },
    BlockType {
        id: 0,
        name: c_str("F6_E2M3\0"),
        logical_type: "f6_e2m3fn_x4",
        block_size: 4,
        type_size: 3,
        kernel: Ok(f6_e2m3),
    },
    BlockType {
        id: 0,
        name: c_str("F6_E3M2\0"),
        logical_type: "f6_e3m2fn_x4",
        block_size: 4,
        type_size: 3,
        kernel: Ok(f6_e3m2),
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_value_tables_are_ml_dtypes() {
        // float4_e2m1fn: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives.
        let f4: [f32; 16] = table(2, 1);
        assert_eq!(f4[..8], [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
        assert_eq!(f4[9], -0.5);
        assert_eq!(f4[15], -6.0);
        // float6_e2m3fn: subnormals of 1/8, max 7.5; float6_e3m2fn: 1/16 steps, max 28.
        let e2m3: [f32; 64] = table(2, 3);
        assert_eq!(
            (e2m3[1], e2m3[8], e2m3[31], e2m3[63]),
            (0.125, 1.0, 7.5, -7.5)
        );
        let e3m2: [f32; 64] = table(3, 2);
        assert_eq!(
            (e3m2[1], e3m2[4], e3m2[31], e3m2[32]),
            (0.0625, 0.25, 28.0, -0.0)
        );
    }

    #[test]
    fn values_are_a_little_endian_bit_stream() {
        let mut out = [0f32; 4];
        f4_e2m1(&[0x72, 0xf1], &mut out);
        assert_eq!(out, [1.0, 6.0, 0.5, -6.0]);
        // 6-bit codes 1, 2, 3, 63 in bits 0-5, 6-11, 12-17, 18-23.
        let word: u32 = 1 | 2 << 6 | 3 << 12 | 63 << 18;
        let bytes = word.to_le_bytes();
        f6_e2m3(&bytes[..3], &mut out);
        assert_eq!(out, [0.125, 0.25, 0.375, -7.5]);
    }
}
