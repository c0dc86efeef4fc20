//! Types with one f16 scale per block: Q4_0, Q4_1, Q5_0, Q5_1, Q8_0 (32 values), Q1_0
//! (128), Q2_0 (64), and the ternary TQ1_0 and TQ2_0 (256). Each value is its integer
//! times the scale (plus the minimum for Q4_1 and Q5_1), as ggml and gguf-py compute it.

use super::{array, blocks, f16_at};

/// Q4_0: d (f16), 16 bytes of nibbles: low nibbles are values 0..16, high 16..32;
/// value = (nibble - 8) x d.
#[inline(always)]
pub(super) fn q4_0(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<18, 32>(src, dst) {
        let d = f16_at(b, 0);
        let qs: &[u8; 16] = array(b, 2);
        for j in 0..16 {
            y[j] = d * ((qs[j] & 15) as i32 - 8) as f32;
            y[j + 16] = d * ((qs[j] >> 4) as i32 - 8) as f32;
        }
    }
}

/// Q4_1: d, m (f16), 16 bytes of nibbles; value = nibble x d + m.
#[inline(always)]
pub(super) fn q4_1(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<20, 32>(src, dst) {
        let (d, m) = (f16_at(b, 0), f16_at(b, 2));
        let qs: &[u8; 16] = array(b, 4);
        for j in 0..16 {
            y[j] = d * f32::from(qs[j] & 15) + m;
            y[j + 16] = d * f32::from(qs[j] >> 4) + m;
        }
    }
}

/// The fifth bits of Q5_0 and Q5_1: bit j of the little-endian u32 is value j's.
#[inline(always)]
fn fifth_bit(qh: u32, j: usize) -> u8 {
    ((qh >> j) as u8 & 1) << 4
}

/// Q5_0: d (f16), 4 bytes of fifth bits, 16 bytes of nibbles; value = (q - 16) x d.
#[inline(always)]
pub(super) fn q5_0(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<22, 32>(src, dst) {
        let d = f16_at(b, 0);
        let qh = u32::from_le_bytes(*array(b, 2));
        let qs: &[u8; 16] = array(b, 6);
        for j in 0..16 {
            let lo = (qs[j] & 15) | fifth_bit(qh, j);
            let hi = (qs[j] >> 4) | fifth_bit(qh, j + 16);
            y[j] = d * (lo as i32 - 16) as f32;
            y[j + 16] = d * (hi as i32 - 16) as f32;
        }
    }
}

/// Q5_1: d, m (f16), 4 bytes of fifth bits, 16 bytes of nibbles; value = q x d + m.
#[inline(always)]
pub(super) fn q5_1(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<24, 32>(src, dst) {
        let (d, m) = (f16_at(b, 0), f16_at(b, 2));
        let qh = u32::from_le_bytes(*array(b, 4));
        let qs: &[u8; 16] = array(b, 8);
        for j in 0..16 {
            let lo = (qs[j] & 15) | fifth_bit(qh, j);
            let hi = (qs[j] >> 4) | fifth_bit(qh, j + 16);
            y[j] = d * f32::from(lo) + m;
            y[j + 16] = d * f32::from(hi) + m;
        }
    }
}

/// Q8_0: d (f16), 32 signed bytes; value = q x d.
#[inline(always)]
pub(super) fn q8_0(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<34, 32>(src, dst) {
        let d = f16_at(b, 0);
        let qs: &[u8; 32] = array(b, 2);
        for j in 0..32 {
            y[j] = f32::from(qs[j] as i8) * d;
        }
    }
}

/// Q1_0 (ggml's dequantize_row_q1_0): d (f16), 16 bytes of bits, value j's bit is bit
/// j % 8 of byte j / 8; value = d when set, else -d.
#[inline(always)]
pub(super) fn q1_0(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<18, 128>(src, dst) {
        let d = f16_at(b, 0);
        let qs: &[u8; 16] = array(b, 2);
        for j in 0..128 {
            y[j] = if qs[j / 8] >> (j % 8) & 1 != 0 { d } else { -d };
        }
    }
}

/// Q2_0 (ggml's dequantize_row_q2_0): d (f16), 16 bytes of 2-bit values, four per byte
/// from the low bits up; value = (q - 1) x d.
#[inline(always)]
pub(super) fn q2_0(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<18, 64>(src, dst) {
        let d = f16_at(b, 0);
        let qs: &[u8; 16] = array(b, 2);
        for j in 0..64 {
            let q = (qs[j / 4] >> (2 * (j % 4))) & 3;
            y[j] = (q as i32 - 1) as f32 * d;
        }
    }
}

/// One base-3 digit of a TQ1_0 byte: the byte times 3^n (wrapping), scaled to 0..3.
#[inline(always)]
fn trit(byte: u8, pow3: u8) -> f32 {
    let q = byte.wrapping_mul(pow3);
    (((u16::from(q) * 3) >> 8) as i32 - 1) as f32
}

/// TQ1_0: 48 bytes of five trits each (32 bytes for values 0..160, 16 for 160..240, each
/// byte's digits n-major), 4 bytes of four trits (values 240..256), then d (f16);
/// value = (trit - 1) x d.
#[inline(always)]
pub(super) fn tq1_0(src: &[u8], dst: &mut [f32]) {
    const POW3: [u8; 5] = [1, 3, 9, 27, 81];
    for (b, y) in blocks::<54, 256>(src, dst) {
        let d = f16_at(b, 52);
        for (n, &p) in POW3.iter().enumerate() {
            for m in 0..32 {
                y[n * 32 + m] = d * trit(b[m], p);
            }
            for m in 0..16 {
                y[160 + n * 16 + m] = d * trit(b[32 + m], p);
            }
        }
        for (n, &p) in POW3[..4].iter().enumerate() {
            for m in 0..4 {
                y[240 + n * 4 + m] = d * trit(b[48 + m], p);
            }
        }
    }
}

/// TQ2_0: 64 bytes of 2-bit values (each 32-byte half gives 128 values, bit pair l of
/// byte m is value l x 32 + m), then d (f16); value = (q - 1) x d.
#[inline(always)]
pub(super) fn tq2_0(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<66, 256>(src, dst) {
        let d = f16_at(b, 64);
        for half in 0..2 {
            for l in 0..4 {
                for m in 0..32 {
                    let q = (b[half * 32 + m] >> (2 * l)) & 3;
                    y[half * 128 + l * 32 + m] = d * (q as i32 - 1) as f32;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(kernel: fn(&[u8], &mut [f32]), block: &[u8], values: usize) -> Vec<f32> {
        let mut out = vec![0f32; values];
        kernel(block, &mut out);
        out
    }

    const HALF: [u8; 2] = [0x00, 0x38]; // 0.5
    const MINUS_TWO: [u8; 2] = [0x00, 0xc0]; // -2.0

    #[test]
    fn q4_0_and_q4_1() {
        // Nibbles: byte j = (15 - j) << 4 | j.
        let nibbles: Vec<u8> = (0..16u8).map(|j| (15 - j) << 4 | j).collect();
        let mut b = HALF.to_vec();
        b.extend(&nibbles);
        let got = run(q4_0, &b, 32);
        let want: Vec<f32> = (0..32)
            .map(|i| if i < 16 { i - 8 } else { 15 - (i - 16) - 8 })
            .map(|q| q as f32 * 0.5)
            .collect();
        assert_eq!(got, want);
        assert_eq!((got[0], got[15], got[16], got[31]), (-4.0, 3.5, 3.5, -4.0));

        let mut b = HALF.to_vec();
        b.extend(MINUS_TWO);
        b.extend(&nibbles);
        let got = run(q4_1, &b, 32);
        assert_eq!(
            (got[0], got[1], got[15], got[16], got[31]),
            (-2.0, -1.5, 5.5, 5.5, -2.0)
        );
    }

    #[test]
    fn q5_0_and_q5_1() {
        // Fifth bits set for values 1 and 17 only; all nibbles 3.
        let qh = (1u32 << 1 | 1 << 17).to_le_bytes();
        let mut b = MINUS_TWO.to_vec();
        b.extend(qh);
        b.extend([0x33u8; 16]);
        let got = run(q5_0, &b, 32);
        // q = 3 - 16 = -13 → 26; q = 19 - 16 = 3 → -6.
        assert_eq!((got[0], got[1], got[16], got[17]), (26.0, -6.0, 26.0, -6.0));
        let mut b = HALF.to_vec();
        b.extend([0x00, 0x3c]); // m = 1
        b.extend(qh);
        b.extend([0x33u8; 16]);
        let got = run(q5_1, &b, 32);
        assert_eq!((got[0], got[1], got[16], got[17]), (2.5, 10.5, 2.5, 10.5));
    }

    #[test]
    fn q8_0() {
        let mut b = MINUS_TWO.to_vec();
        b.extend((0..32).map(|i| (i as i8 * 4 - 64) as u8));
        let got = run(super::q8_0, &b, 32);
        assert_eq!((got[0], got[16], got[31]), (128.0, 0.0, -120.0));
    }

    #[test]
    fn q1_0_and_q2_0() {
        let mut b = HALF.to_vec();
        b.extend([0b1000_0001u8; 16]);
        let got = run(q1_0, &b, 128);
        assert_eq!(
            (got[0], got[1], got[6], got[7], got[127]),
            (0.5, -0.5, -0.5, 0.5, 0.5)
        );
        let mut b = MINUS_TWO.to_vec();
        b.extend([0b11_10_01_00u8; 16]);
        let got = run(q2_0, &b, 64);
        assert_eq!(&got[..5], &[2.0, -0.0, -2.0, -4.0, 2.0]);
        assert_eq!(got[1].to_bits(), 0x8000_0000, "0 x -2 is -0, as in ggml");
    }

    #[test]
    fn ternary() {
        // TQ1_0: byte 0 holds trits 2,1,0,2,1 (most significant first in the
        // fixed-point digit order); byte 48 (qh) holds 0,0,0,2.
        // Encode digits t0..t4 as ceil((t0*81 + t1*27 + t2*9 + t3*3 + t4) * 256 / 243).
        let enc = |t: [u16; 5]| {
            ((t[0] * 81 + t[1] * 27 + t[2] * 9 + t[3] * 3 + t[4]) * 256).div_ceil(243) as u8
        };
        let mut b = vec![enc([1, 1, 1, 1, 1]); 54];
        b[0] = enc([2, 1, 0, 2, 1]);
        b[48] = enc([0, 0, 0, 2, 0]);
        b[52..54].copy_from_slice(&MINUS_TWO);
        let got = run(tq1_0, &b, 256);
        assert_eq!(
            [got[0], got[32], got[64], got[96], got[128]],
            [-2.0, -0.0, 2.0, -2.0, -0.0]
        );
        assert_eq!(
            [got[240], got[244], got[248], got[252]],
            [2.0, 2.0, 2.0, -2.0]
        );
        assert_eq!(got[1], -0.0);

        let mut b = vec![0b00_01_10_11u8; 66];
        b[64..66].copy_from_slice(&HALF);
        let got = run(tq2_0, &b, 256);
        assert_eq!(
            [got[0], got[32], got[64], got[96], got[128]],
            [1.0, 0.5, 0.0, -0.5, 1.0]
        );
    }
}
