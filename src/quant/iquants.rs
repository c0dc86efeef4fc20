//! The i-quants: values from codebooks (`grids`) with per-group scales and sign bits
//! (IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, IQ1_S, IQ1_M), and the non-linear 4-bit
//! ones (IQ4_NL, IQ4_XS). Operations are in the order gguf-py and ggml use, so the f32
//! results are theirs bit for bit.

use super::grids::{IQ1S_GRID, IQ2S_GRID, IQ2XS_GRID, IQ2XXS_GRID, IQ3S_GRID, IQ3XXS_GRID};
use super::{array, blocks, f16_at, f16_to_f32};

/// The sign bits of 7 stored bits: the eighth makes the count of set bits even
/// (ggml's ksigns_iq2xs).
#[inline(always)]
fn signs7(bits: u32) -> u8 {
    let b = (bits & 127) as u8;
    b | (((b.count_ones() & 1) as u8) << 7)
}

/// Eight values `scale x point[j]`, negated where bit j of `signs` is set.
#[inline(always)]
fn signed8(y: &mut [f32], scale: f32, point: &[u8; 8], signs: u8) {
    for j in 0..8 {
        let v = scale * f32::from(point[j]);
        y[j] = if signs >> j & 1 != 0 { -v } else { v };
    }
}

/// Four values `scale x point[j]`, negated where bit `first + j` of `signs` is set.
#[inline(always)]
fn signed4(y: &mut [f32], scale: f32, point: &[u8; 4], signs: u8, first: usize) {
    for j in 0..4 {
        let v = scale * f32::from(point[j]);
        y[j] = if signs >> (first + j) & 1 != 0 { -v } else { v };
    }
}

/// The scale of the 2-bit i-quants: d x (0.5 + s) x 0.25.
#[inline(always)]
fn iq2_scale(d: f32, s: u32) -> f32 {
    d * (0.5 + s as f32) * 0.25
}

/// IQ2_XXS: d (f16), then per 32 values two u32: four codebook indices (bytes), and
/// four 7-bit sign groups with a 4-bit scale on top.
#[inline(always)]
pub(super) fn iq2_xxs(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<66, 256>(src, dst) {
        let d = f16_at(b, 0);
        for ib in 0..8 {
            let idx: &[u8; 4] = array(b, 2 + 8 * ib);
            let aux = u32::from_le_bytes(*array(b, 6 + 8 * ib));
            let db = iq2_scale(d, aux >> 28);
            for l in 0..4 {
                let y = &mut y[32 * ib + 8 * l..32 * ib + 8 * l + 8];
                signed8(
                    y,
                    db,
                    &IQ2XXS_GRID[usize::from(idx[l])],
                    signs7(aux >> (7 * l)),
                );
            }
        }
    }
}

/// IQ2_XS: d (f16), 32 u16 (9-bit codebook index, 7 sign bits), 8 bytes of two 4-bit
/// scales (one per 16 values).
#[inline(always)]
pub(super) fn iq2_xs(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<74, 256>(src, dst) {
        let d = f16_at(b, 0);
        let scales: &[u8; 8] = array(b, 66);
        for k in 0..32 {
            let q = u16::from_le_bytes(*array(b, 2 + 2 * k));
            let s = (scales[k / 4] >> (4 * ((k / 2) % 2))) & 15;
            let point = &IQ2XS_GRID[usize::from(q & 511)];
            signed8(
                &mut y[8 * k..8 * k + 8],
                iq2_scale(d, u32::from(s)),
                point,
                signs7(u32::from(q >> 9)),
            );
        }
    }
}

/// IQ2_S: d (f16), 32 bytes of low index bits, 32 bytes of signs, 8 bytes of 2-bit high
/// index bits, 8 bytes of two 4-bit scales.
#[inline(always)]
pub(super) fn iq2_s(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<82, 256>(src, dst) {
        let d = f16_at(b, 0);
        let qs: &[u8; 32] = array(b, 2);
        let signs: &[u8; 32] = array(b, 34);
        let qh: &[u8; 8] = array(b, 66);
        let scales: &[u8; 8] = array(b, 74);
        for k in 0..32 {
            let high = (qh[k / 4] >> (2 * (k % 4))) & 3;
            let index = usize::from(qs[k]) | usize::from(high) << 8;
            let s = (scales[k / 4] >> (4 * ((k / 2) % 2))) & 15;
            signed8(
                &mut y[8 * k..8 * k + 8],
                iq2_scale(d, u32::from(s)),
                &IQ2S_GRID[index],
                signs[k],
            );
        }
    }
}

/// IQ3_XXS: d (f16), 64 bytes of codebook indices (4 values each), then per 32 values a
/// u32 of four 7-bit sign groups and a 4-bit scale.
#[inline(always)]
pub(super) fn iq3_xxs(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<98, 256>(src, dst) {
        let d = f16_at(b, 0);
        let qs: &[u8; 64] = array(b, 2);
        for ib in 0..8 {
            let aux = u32::from_le_bytes(*array(b, 66 + 4 * ib));
            let db = d * (0.5 + (aux >> 28) as f32) * 0.5;
            for l in 0..4 {
                let signs = signs7(aux >> (7 * l));
                let at = 32 * ib + 8 * l;
                let (p1, p2) = (qs[8 * ib + 2 * l], qs[8 * ib + 2 * l + 1]);
                signed4(
                    &mut y[at..at + 4],
                    db,
                    &IQ3XXS_GRID[usize::from(p1)],
                    signs,
                    0,
                );
                signed4(
                    &mut y[at + 4..at + 8],
                    db,
                    &IQ3XXS_GRID[usize::from(p2)],
                    signs,
                    4,
                );
            }
        }
    }
}

/// IQ3_S: d (f16), 64 bytes of low index bits, 8 bytes of ninth bits, 32 bytes of
/// signs, 4 bytes of two 4-bit scales (one per 32 values: d x (1 + 2 s)).
#[inline(always)]
pub(super) fn iq3_s(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<110, 256>(src, dst) {
        let d = f16_at(b, 0);
        let qs: &[u8; 64] = array(b, 2);
        let qh: &[u8; 8] = array(b, 66);
        let signs: &[u8; 32] = array(b, 74);
        let scales: &[u8; 4] = array(b, 106);
        for ib in 0..8 {
            let s = (scales[ib / 2] >> (4 * (ib % 2))) & 15;
            let db = d * f32::from(1 + 2 * s);
            for l in 0..4 {
                let at = 32 * ib + 8 * l;
                let index =
                    |k: usize| usize::from(qs[k]) | usize::from((qh[k / 8] >> (k % 8)) & 1) << 8;
                let k = 8 * ib + 2 * l;
                let sg = signs[4 * ib + l];
                signed4(&mut y[at..at + 4], db, &IQ3S_GRID[index(k)], sg, 0);
                signed4(&mut y[at + 4..at + 8], db, &IQ3S_GRID[index(k + 1)], sg, 4);
            }
        }
    }
}

/// Eight values `scale x (point[j] + delta)` of an IQ1 codebook point.
#[inline(always)]
fn iq1_values(y: &mut [f32], scale: f32, point: &[i8; 8], delta: f32) {
    for j in 0..8 {
        y[j] = scale * (f32::from(point[j]) + delta);
    }
}

/// The ±1/8 shift of the IQ1 types.
const IQ1_DELTA: f32 = 0.125;

/// IQ1_S: d (f16), 32 bytes of low index bits, then per 32 values a u16: four 3-bit
/// high index parts, a 3-bit scale (d x (2 s + 1)) and the sign of the shift.
#[inline(always)]
pub(super) fn iq1_s(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<50, 256>(src, dst) {
        let d = f16_at(b, 0);
        let qs: &[u8; 32] = array(b, 2);
        for ib in 0..8 {
            let qh = u16::from_le_bytes(*array(b, 34 + 2 * ib));
            let dl = d * f32::from(2 * ((qh >> 12) & 7) + 1);
            let delta = if qh & 0x8000 != 0 {
                -IQ1_DELTA
            } else {
                IQ1_DELTA
            };
            for l in 0..4 {
                let index = usize::from(qs[4 * ib + l]) | usize::from((qh >> (3 * l)) & 7) << 8;
                let at = 32 * ib + 8 * l;
                iq1_values(&mut y[at..at + 8], dl, &IQ1S_GRID[index], delta);
            }
        }
    }
}

/// IQ1_M: 32 bytes of low index bits, 16 bytes of two 4-bit parts (3 high index bits and
/// the shift's sign) per byte, 4 u16 of 3-bit scales whose top nibbles together are d.
#[inline(always)]
pub(super) fn iq1_m(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<56, 256>(src, dst) {
        let qs: &[u8; 32] = array(b, 0);
        let qh: &[u8; 16] = array(b, 32);
        let sc: [u16; 4] = std::array::from_fn(|i| u16::from_le_bytes(*array(b, 48 + 2 * i)));
        let d = f16_to_f32(
            (sc[0] >> 12) | ((sc[1] >> 8) & 0x00f0) | ((sc[2] >> 4) & 0x0f00) | (sc[3] & 0xf000),
        );
        for k in 0..32 {
            // Group k of 8 values: scale 3-bit field k / 2 of the 16, index part k.
            let field = k / 2;
            let s = (sc[field / 4] >> (3 * (field % 4))) & 7;
            let dl = d * f32::from(2 * s + 1);
            let part = (qh[k / 2] >> (4 * (k % 2))) & 15;
            let index = usize::from(qs[k]) | usize::from(part & 7) << 8;
            let delta = if part & 8 != 0 { -IQ1_DELTA } else { IQ1_DELTA };
            iq1_values(&mut y[8 * k..8 * k + 8], dl, &IQ1S_GRID[index], delta);
        }
    }
}

/// The non-linear 4-bit values of IQ4_NL and IQ4_XS.
const IQ4_VALUES: [i8; 16] = [
    -127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113,
];

/// The 16 values of a scale: `d` times each IQ4 value.
#[inline(always)]
fn iq4_table(d: f32) -> [f32; 16] {
    IQ4_VALUES.map(|v| d * f32::from(v))
}

/// Sixteen bytes of codes into 32 values: low nibbles first.
#[inline(always)]
fn iq4_codes(y: &mut [f32], t: &[f32; 16], qs: &[u8; 16]) {
    for j in 0..16 {
        y[j] = t[usize::from(qs[j] & 15)];
        y[j + 16] = t[usize::from(qs[j] >> 4)];
    }
}

/// IQ4_NL: d (f16), 16 bytes of codes.
#[inline(always)]
pub(super) fn iq4_nl(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<18, 32>(src, dst) {
        iq4_codes(y, &iq4_table(f16_at(b, 0)), array(b, 2));
    }
}

/// IQ4_XS: d (f16), a u16 of 2-bit high scale parts, 4 bytes of 4-bit low parts, 128
/// bytes of codes; the 6-bit scale of each 32 values is d x (s - 32).
#[inline(always)]
pub(super) fn iq4_xs(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<136, 256>(src, dst) {
        let d = f16_at(b, 0);
        let high = u16::from_le_bytes(*array(b, 2));
        let low: &[u8; 4] = array(b, 4);
        for ib in 0..8 {
            let ls = ((low[ib / 2] >> (4 * (ib % 2))) & 15) | (((high >> (2 * ib)) & 3) as u8) << 4;
            let dl = d * f32::from(ls as i8 - 32);
            iq4_codes(
                &mut y[32 * ib..32 * ib + 32],
                &iq4_table(dl),
                array(b, 8 + 16 * ib),
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ONE: [u8; 2] = [0x00, 0x3c];

    fn run(kernel: fn(&[u8], &mut [f32]), block: &[u8]) -> Vec<f32> {
        let mut out = vec![0f32; 256];
        kernel(block, &mut out);
        out
    }

    #[test]
    fn sign_groups_have_even_parity() {
        assert_eq!(signs7(0), 0);
        assert_eq!(signs7(1), 129);
        assert_eq!(signs7(3), 3);
        assert_eq!(signs7(127), 255);
        assert_eq!(signs7(0x80 | 2), 130, "only 7 bits are read");
    }

    #[test]
    fn codebooks_unpack_to_ggml_points() {
        // First and last points of each codebook, as ggml-common.h lists them.
        let le = |v: u64| v.to_le_bytes();
        assert_eq!(IQ2XXS_GRID[0], le(0x0808080808080808));
        assert_eq!(IQ2XXS_GRID[255], le(0x2b2b2b1908081908));
        assert_eq!(IQ2XS_GRID[1], le(0x080808080808082b));
        assert_eq!(IQ2S_GRID[1023], le(0x2b2b2b2b2b2b2b2b));
        assert_eq!(IQ3XXS_GRID[0], [4, 4, 4, 4]);
        assert_eq!(IQ3S_GRID[0], [1, 1, 1, 1]);
        assert_eq!(IQ1S_GRID[0], [-1; 8]);
        assert_eq!(IQ1S_GRID[1], [1, -1, -1, -1, -1, -1, -1, -1]);
    }

    #[test]
    fn iq2_xxs_block() {
        let mut b = vec![0u8; 66];
        b[..2].copy_from_slice(&ONE);
        // Group 0: indices 0, 255, 0, 0; signs: group l = 0 has bits 1 (→ 129: values 0
        // and 7 negative); scale 3: (0.5 + 3) x 0.25 = 0.875.
        b[2..6].copy_from_slice(&[0, 255, 0, 0]);
        b[6..10].copy_from_slice(&(1u32 | 3 << 28).to_le_bytes());
        let y = run(iq2_xxs, &b);
        assert_eq!(&y[..8], &[-7.0, 7.0, 7.0, 7.0, 7.0, 7.0, 7.0, -7.0]);
        // Point 255's values times 0.875, no signs.
        let want: Vec<f32> = IQ2XXS_GRID[255]
            .iter()
            .map(|&v| 0.875 * f32::from(v))
            .collect();
        assert_eq!(&y[8..16], &want[..]);
        // Group 1 (scale 0: 0.125): point 0, all positive.
        assert_eq!(&y[32..40], &[1.0; 8]);
    }

    #[test]
    fn iq2_xs_and_iq2_s_blocks() {
        let mut b = vec![0u8; 74];
        b[..2].copy_from_slice(&ONE);
        // Group 0: point 1 ([43, 8, 8 ...]), sign bits 0b11 (even: values 0 and 1 negative).
        b[2..4].copy_from_slice(&(1u16 | 3 << 9).to_le_bytes());
        // Scales: groups 0-1 use 1 ((0.5 + 1) x 0.25), groups 2-3 use 2.
        b[66] = 0x21;
        let y = run(iq2_xs, &b);
        assert_eq!(&y[..8], &[-16.125, -3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0]);
        assert_eq!(&y[8..16], &[3.0; 8]);
        assert_eq!(&y[16..24], &[5.0; 8]);

        let mut b = vec![0u8; 82];
        b[..2].copy_from_slice(&ONE);
        b[2] = 255; // low index bits of group 0
        b[66] = 0b11; // its high bits: point 1023, all 43
        b[34] = 0x81; // values 0 and 7 negative
        b[74] = 0x03; // groups 0-1: (0.5 + 3) x 0.25
        let y = run(iq2_s, &b);
        assert_eq!(
            &y[..8],
            &[
                -37.625, 37.625, 37.625, 37.625, 37.625, 37.625, 37.625, -37.625
            ]
        );
        let want: Vec<f32> = IQ2S_GRID[0].iter().map(|&v| 0.875 * f32::from(v)).collect();
        assert_eq!(&y[8..16], &want[..]);
    }

    #[test]
    fn iq3_blocks() {
        let mut b = vec![0u8; 98];
        b[..2].copy_from_slice(&ONE);
        // Group 0: points 0 and 0 ([4, 4, 4, 4]); signs 1 (values 0 and 7 negative), scale 1.
        b[66..70].copy_from_slice(&(1u32 | 1 << 28).to_le_bytes());
        let y = run(iq3_xxs, &b);
        assert_eq!(&y[..8], &[-3.0, 3.0, 3.0, 3.0, 3.0, 3.0, 3.0, -3.0]);
        assert_eq!(&y[32..40], &[1.0; 8], "group 1: scale 0 (d x 0.25)");

        let mut b = vec![0u8; 110];
        b[..2].copy_from_slice(&ONE);
        b[66] = 0b10; // the ninth index bit of point 1 (values 4..8): point 256
        b[74] = 0x11; // values 0 and 4 negative
        b[106] = 0x02; // group 0: d x (1 + 2 x 2)
        let y = run(iq3_s, &b);
        let p = IQ3S_GRID[256];
        assert_eq!(&y[..4], &[-5.0, 5.0, 5.0, 5.0]);
        assert_eq!(
            &y[4..8],
            &[
                -5.0 * f32::from(p[0]),
                5.0 * f32::from(p[1]),
                5.0 * f32::from(p[2]),
                5.0 * f32::from(p[3])
            ]
        );
        assert_eq!(&y[32..40], &[1.0; 8], "group 1: scale 0 (d x 1)");
    }

    #[test]
    fn iq4_blocks() {
        let mut b = ONE.to_vec();
        b.extend((0..16u8).map(|j| (15 - j) << 4 | j));
        let mut y = [0f32; 32];
        iq4_nl(&b, &mut y);
        assert_eq!(
            (y[0], y[7], y[15], y[16], y[31]),
            (-127.0, -10.0, 113.0, 113.0, -127.0)
        );

        let mut b = vec![0u8; 136];
        b[..2].copy_from_slice(&[0x00, 0x38]); // 0.5
        // Scale 0: low 1, high 2 → 33 - 32 = 1; scale 1: low 0, high 0 → -32.
        b[2..4].copy_from_slice(&0b10u16.to_le_bytes());
        b[4] = 0x01;
        b[8..136].fill(0x98); // low code 8 (1), high code 9 (13)
        let y = run(iq4_xs, &b);
        assert_eq!((y[0], y[16]), (0.5, 6.5));
        assert_eq!((y[32], y[48]), (0.5 * -32.0 * 1.0, 0.5 * -32.0 * 13.0));
    }

    #[test]
    fn iq1_blocks() {
        let mut b = vec![0u8; 50];
        b[..2].copy_from_slice(&ONE);
        // Group 0: qh = scale 2 (d x 5), negative shift, high index bits 0.
        b[34..36].copy_from_slice(&(0x8000u16 | 2 << 12).to_le_bytes());
        b[2] = 1; // point 1 for values 0..8
        let y = run(iq1_s, &b);
        assert_eq!(
            &y[..8],
            &[
                5.0 * 0.875,
                5.0 * -1.125,
                -5.625,
                -5.625,
                -5.625,
                -5.625,
                -5.625,
                -5.625
            ]
        );
        // Group 1: scale 0 (d x 1), positive shift, point 0.
        assert_eq!(&y[32..40], &[-0.875; 8]);

        let mut b = vec![0u8; 56];
        // d = 1.0 (0x3c00) spread over the top nibbles; all scales 1 (d x 3) except field 0.
        let d = 0x3c00u16;
        let fields = 0b001_001_001_001u16;
        for i in 0..4 {
            let sc = fields | ((d >> (4 * i)) & 15) << 12;
            b[48 + 2 * i..50 + 2 * i].copy_from_slice(&sc.to_le_bytes());
        }
        b[48..50].copy_from_slice(&((0b001_001_001_000u16) | (d & 15) << 12).to_le_bytes());
        b[32] = 0x80; // group 0: positive shift, group 1: negative
        let y = run(iq1_m, &b);
        assert_eq!(&y[..8], &[-0.875; 8]);
        assert_eq!(&y[8..16], &[-1.125; 8]);
        assert_eq!(&y[16..24], &[3.0 * -0.875; 8]);
    }
}
