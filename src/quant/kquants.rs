//! The k-quants: super-blocks of 256 values in 16 or 8 sub-blocks, each with its own
//! scale (and minimum for Q2_K, Q4_K, Q5_K) relative to the super-block's f16 d (and
//! dmin). Q8_K (ggml's intermediate type, f32 d and 256 signed bytes) is here too.

use super::{array, blocks, f16_at};

/// Q2_K: 16 bytes of 4-bit scale | 4-bit min per 16 values, 64 bytes of 2-bit values
/// (each 32-byte half gives 128 values: bit pair s of byte m is value s x 32 + m), d and
/// dmin (f16); value = (d x scale) x q - dmin x min.
#[inline(always)]
pub(super) fn q2_k(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<84, 256>(src, dst) {
        let (d, dmin) = (f16_at(b, 80), f16_at(b, 82));
        let scales: &[u8; 16] = array(b, 0);
        let qs: &[u8; 64] = array(b, 16);
        let mut dl = [0f32; 16];
        let mut ml = [0f32; 16];
        for i in 0..16 {
            dl[i] = d * f32::from(scales[i] & 15);
            ml[i] = dmin * f32::from(scales[i] >> 4);
        }
        for half in 0..2 {
            for s in 0..4 {
                let g = half * 8 + s * 2;
                for m in 0..32 {
                    let q = f32::from((qs[half * 32 + m] >> (2 * s)) & 3);
                    y[half * 128 + s * 32 + m] = dl[g + m / 16] * q - ml[g + m / 16];
                }
            }
        }
    }
}

/// Q3_K: 32 bytes of high bits (bit b of byte m belongs to value b x 32 + m; a clear bit
/// subtracts 4), 64 bytes of low 2-bit values (as in Q2_K), 12 bytes of sixteen 6-bit
/// scales, d (f16); value = (d x (scale - 32)) x q.
#[inline(always)]
pub(super) fn q3_k(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<110, 256>(src, dst) {
        let d = f16_at(b, 108);
        let hmask: &[u8; 32] = array(b, 0);
        let qs: &[u8; 64] = array(b, 32);
        let sc: &[u8; 12] = array(b, 96);
        let mut dl = [0f32; 16];
        for (i, dl) in dl.iter_mut().enumerate() {
            let low = (sc[i % 8] >> (4 * (i / 8))) & 15;
            let high = (sc[8 + i % 4] >> (2 * (i / 4))) & 3;
            *dl = d * f32::from(((low | high << 4) as i8) - 32);
        }
        for e in 0..256 {
            let (half, s, m) = (e / 128, (e % 128) / 32, e % 32);
            let low = ((qs[half * 32 + m] >> (2 * s)) & 3) as i8;
            let high = (hmask[m] >> (e / 32)) & 1;
            let q = low - (((high ^ 1) << 2) as i8);
            y[e] = dl[e / 16] * f32::from(q);
        }
    }
}

/// The eight 6-bit scales and mins of Q4_K and Q5_K, packed in 12 bytes.
#[inline(always)]
fn scales_and_mins(s: &[u8; 12]) -> ([u8; 8], [u8; 8]) {
    let mut sc = [0u8; 8];
    let mut mn = [0u8; 8];
    for i in 0..4 {
        sc[i] = s[i] & 0x3f;
        mn[i] = s[4 + i] & 0x3f;
        sc[4 + i] = (s[8 + i] & 0x0f) | ((s[i] >> 2) & 0x30);
        mn[4 + i] = (s[8 + i] >> 4) | ((s[4 + i] >> 2) & 0x30);
    }
    (sc, mn)
}

/// The per-32-value factors of Q4_K and Q5_K: d x scale and dmin x min.
#[inline(always)]
fn factors(b: &[u8]) -> ([f32; 8], [f32; 8]) {
    let (d, dmin) = (f16_at(b, 0), f16_at(b, 2));
    let (sc, mn) = scales_and_mins(array(b, 4));
    let mut ds = [0f32; 8];
    let mut dm = [0f32; 8];
    for i in 0..8 {
        ds[i] = d * f32::from(sc[i]);
        dm[i] = dmin * f32::from(mn[i]);
    }
    (ds, dm)
}

/// Q4_K: d, dmin (f16), 12 bytes of scales and mins, 128 bytes of nibbles (each 32 bytes
/// give 64 values: low nibbles first); value = (d x scale) x q - dmin x min.
#[inline(always)]
pub(super) fn q4_k(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<144, 256>(src, dst) {
        let (ds, dm) = factors(b);
        let qs: &[u8; 128] = array(b, 16);
        for c in 0..4 {
            let (lo, hi) = (2 * c, 2 * c + 1);
            for m in 0..32 {
                let q = qs[c * 32 + m];
                y[c * 64 + m] = ds[lo] * f32::from(q & 15) - dm[lo];
                y[c * 64 + 32 + m] = ds[hi] * f32::from(q >> 4) - dm[hi];
            }
        }
    }
}

/// Q5_K: Q4_K's header, 32 bytes of fifth bits (bit g of byte m is value g x 32 + m's),
/// 128 bytes of nibbles; value = (d x scale) x q - dmin x min.
#[inline(always)]
pub(super) fn q5_k(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<176, 256>(src, dst) {
        let (ds, dm) = factors(b);
        let qh: &[u8; 32] = array(b, 16);
        let qs: &[u8; 128] = array(b, 48);
        for c in 0..4 {
            let (lo, hi) = (2 * c, 2 * c + 1);
            for m in 0..32 {
                let q = qs[c * 32 + m];
                let q_lo = (q & 15) | (((qh[m] >> lo) & 1) << 4);
                let q_hi = (q >> 4) | (((qh[m] >> hi) & 1) << 4);
                y[c * 64 + m] = ds[lo] * f32::from(q_lo) - dm[lo];
                y[c * 64 + 32 + m] = ds[hi] * f32::from(q_hi) - dm[hi];
            }
        }
    }
}

/// Q6_K: 128 bytes of low nibbles, 64 bytes of high bit pairs, 16 signed scales, d (f16).
/// Each 128-value half uses 64 low and 32 high bytes: value l + 32 k (k in 0..4) takes
/// the low (k < 2) or high nibble of low byte l + 32 (k % 2) and bits 2k of high byte l;
/// value = (d x scale) x (q - 32), a scale per 16 values.
#[inline(always)]
pub(super) fn q6_k(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<210, 256>(src, dst) {
        let d = f16_at(b, 208);
        let scales: &[u8; 16] = array(b, 192);
        let mut ds = [0f32; 16];
        for i in 0..16 {
            ds[i] = d * f32::from(scales[i] as i8);
        }
        for half in 0..2 {
            let ql: &[u8; 64] = array(b, half * 64);
            let qh: &[u8; 32] = array(b, 128 + half * 32);
            let y: &mut [f32; 128] = (&mut y[half * 128..half * 128 + 128])
                .try_into()
                .expect("128 values");
            let ds = &ds[half * 8..half * 8 + 8];
            for l in 0..32 {
                let h = qh[l];
                let q1 = (ql[l] & 15) | ((h & 3) << 4);
                let q2 = (ql[l + 32] & 15) | (((h >> 2) & 3) << 4);
                let q3 = (ql[l] >> 4) | (((h >> 4) & 3) << 4);
                let q4 = (ql[l + 32] >> 4) | ((h >> 6) << 4);
                let s = l / 16;
                y[l] = ds[s] * f32::from(q1 as i8 - 32);
                y[l + 32] = ds[s + 2] * f32::from(q2 as i8 - 32);
                y[l + 64] = ds[s + 4] * f32::from(q3 as i8 - 32);
                y[l + 96] = ds[s + 6] * f32::from(q4 as i8 - 32);
            }
        }
    }
}

/// Q8_K (ggml's dequantize_row_q8_K): d (f32), 256 signed bytes, 16 i16 sums (unused);
/// value = d x q.
#[inline(always)]
pub(super) fn q8_k(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<292, 256>(src, dst) {
        let d = f32::from_le_bytes(*array(b, 0));
        let qs: &[u8; 256] = array(b, 4);
        for j in 0..256 {
            y[j] = d * f32::from(qs[j] as i8);
        }
    }
}

#[cfg(test)]
mod tests {
    fn run(kernel: fn(&[u8], &mut [f32]), block: &[u8]) -> Vec<f32> {
        let mut out = vec![0f32; 256];
        kernel(block, &mut out);
        out
    }

    const ONE: [u8; 2] = [0x00, 0x3c];
    const HALF: [u8; 2] = [0x00, 0x38];

    #[test]
    fn q2_k() {
        let mut b = vec![0u8; 84];
        // Sub-block i: scale i % 16, min 1 (values 16 i .. 16 i + 16).
        for (i, s) in b[..16].iter_mut().enumerate() {
            *s = 0x10 | i as u8;
        }
        // 2-bit values: byte m of half h holds (0, 1, 2, 3) for s = 0..4.
        for m in 0..64 {
            b[16 + m] = 0b11_10_01_00;
        }
        b[80..82].copy_from_slice(&HALF);
        b[82..84].copy_from_slice(&ONE);
        let y = run(super::q2_k, &b);
        // Value 0: sub-block 0 (scale 0): 0 - 1. Value 40: s = 1 (q 1), sub-block 2 (scale 2).
        assert_eq!(y[0], -1.0);
        assert_eq!(y[40], 0.5 * 2.0 * 1.0 - 1.0);
        // Value 255: half 1, s = 3 (q 3), sub-block 15.
        assert_eq!(y[255], 0.5 * 15.0 * 3.0 - 1.0);
    }

    #[test]
    fn q3_k() {
        let mut b = vec![0u8; 110];
        // High bits set everywhere except value 33's (bit 1 of hmask byte 1).
        b[..32].fill(0xff);
        b[1] = 0xfd;
        // Low values: all 3.
        b[32..96].fill(0xff);
        // Scales: low nibbles 1 for every scale, high bits 2 (scale = 33 - 32 = 1), but
        // scale 5 gets low nibble 0 (scale = 32 - 32 = 0).
        b[96..104].fill(0x11);
        b[96 + 5] = 0x10;
        b[104..108].fill(0b10_10_10_10);
        b[108..110].copy_from_slice(&HALF);
        let y = run(super::q3_k, &b);
        assert_eq!(y[0], 1.5);
        assert_eq!(y[33], -0.5);
        assert_eq!(y[80], 0.0, "scale 5");
        assert_eq!(y[255], 1.5);
    }

    #[test]
    fn q4_k_and_q5_k() {
        let mut b = vec![0u8; 144];
        b[0..2].copy_from_slice(&HALF);
        b[2..4].copy_from_slice(&ONE);
        // Scales 0..4 = 1, 2, 3, 4 and 4..8 = 17 + 16 x (high bits); mins 1.
        b[4..8].copy_from_slice(&[1, 2, 3, 0x44]);
        b[8..12].copy_from_slice(&[1, 1, 1, 1]);
        b[12..16].copy_from_slice(&[0x11, 0x11, 0x11, 0x11]);
        for m in 0..128 {
            b[16 + m] = 0xa5; // low 5, high 10
        }
        let y = run(super::q4_k, &b);
        assert_eq!(y[0], 0.5 * 1.0 * 5.0 - 1.0);
        assert_eq!(y[32], 0.5 * 2.0 * 10.0 - 1.0);
        assert_eq!(y[64], 0.5 * 3.0 * 5.0 - 1.0);
        // Scale 3: 0x44 & 0x3f = 4; scale 7: (0x11 & 0x0f) | ((0x44 >> 2) & 0x30) = 0x11.
        assert_eq!(y[96], 0.5 * 4.0 * 10.0 - 1.0);
        assert_eq!(y[255], 0.5 * 17.0 * 10.0 - 1.0);

        let mut b5 = b[..16].to_vec();
        // Fifth bits: value g x 32 + m has bit g of qh[m]; set bit 1 of byte 0 only.
        let mut qh = [0u8; 32];
        qh[0] = 0b10;
        b5.extend(qh);
        b5.extend(&b[16..144]);
        let y = run(super::q5_k, &b5);
        assert_eq!(y[0], 0.5 * 1.0 * 5.0 - 1.0);
        assert_eq!(y[32], 0.5 * 2.0 * 26.0 - 1.0);
        assert_eq!(y[33], 0.5 * 2.0 * 10.0 - 1.0);
    }

    #[test]
    fn q6_k() {
        let mut b = vec![0u8; 210];
        // Low nibbles of half 0: byte l = l & 15 | 0xf0; high pairs: byte 0 = 0b11_10_01_00.
        for (l, q) in b[..64].iter_mut().enumerate() {
            *q = (l as u8 & 15) | 0xf0;
        }
        b[128] = 0b11_10_01_00;
        // Scales: i - 8 (signed).
        for i in 0..16 {
            b[192 + i] = (i as i8 - 8) as u8;
        }
        b[208..210].copy_from_slice(&HALF);
        let y = run(super::q6_k, &b);
        // Value 0: q = 0 | 0 << 4 = 0 → -32, scale -8.
        assert_eq!(y[0], 0.5 * -8.0 * -32.0);
        // Value 32: low nibble of byte 32 (0) | 1 << 4 → 16 - 32, scale index 2 (-6).
        assert_eq!(y[32], 0.5 * -6.0 * -16.0);
        // Value 64: high nibble of byte 0 (15) | 2 << 4 → 47 - 32, scale -4.
        assert_eq!(y[64], 0.5 * -4.0 * 15.0);
        // Value 96: high nibble of byte 32 (15) | 3 << 4 → 63 - 32, scale -2.
        assert_eq!(y[96], 0.5 * -2.0 * 31.0);
        // Value 17: low nibble 1, scale index 1 (-7): (1 - 32).
        assert_eq!(y[17], 0.5 * -7.0 * -31.0);
        // Half 1 is all zero bytes: q - 32 with scales 8 + s.
        assert_eq!(y[128], 0.5 * 0.0 * -32.0);
        assert_eq!(y[255], 0.5 * 7.0 * -32.0);
    }

    #[test]
    fn q8_k() {
        let mut b = vec![0u8; 292];
        b[..4].copy_from_slice(&0.25f32.to_le_bytes());
        for j in 0..256 {
            b[4 + j] = j as u8;
        }
        let y = run(super::q8_k, &b);
        assert_eq!((y[0], y[127], y[128], y[255]), (0.0, 31.75, -32.0, -0.25));
    }
}
