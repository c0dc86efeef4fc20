//! 4-bit floats (E2M1) with shared scales: MXFP4 (32 values, one E8M0 power of two) and
//! NVFP4 (64 values, four unsigned E4M3 scales of 16 values each). As in ggml, the E2M1
//! values are held doubled (0, ±1, ±2, ±3, ±4, ±6, ±8, ±12) and the scales halved.

use super::{array, blocks};

/// The E2M1 values, doubled, by code (ggml's kvalues_mxfp4).
#[cfg(test)]
const E2M1_X2: [i8; 16] = [0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12];

/// Half of 2^(e - 127), an E8M0 scale (ggml_e8m0_to_fp32_half; e = 255 is 2^127, not NaN).
#[inline(always)]
fn e8m0_half(e: u8) -> f32 {
    let bits = if e < 2 {
        0x0020_0000u32 << e
    } else {
        u32::from(e - 1) << 23
    };
    f32::from_bits(bits)
}

/// Half of an unsigned E4M3 scale (bias 7; bit 7 is ignored, and 0x7f, E4M3's NaN, is
/// 0), as ggml_ue4m3_to_fp32 and gguf-py compute it. Exact: mantissa x a power of two.
#[inline(always)]
fn ue4m3_half(x: u8) -> f32 {
    if x == 0 || x == 0x7f {
        return 0.0;
    }
    let exp = u32::from((x >> 3) & 15);
    let man = u32::from(x & 7);
    // exp 0: man x 2^-9 / 2; else (8 + man) / 8 x 2^(exp - 7) / 2 = (8 + man) x 2^(exp - 11).
    let (m, e) = if exp == 0 {
        (man, 117)
    } else {
        (8 + man, exp + 116)
    };
    m as f32 * f32::from_bits(e << 23)
}

/// A doubled E2M1 value: sign bit 3, exponent bits 1..3, mantissa bit 0; computed rather
/// than looked up, so the compiler vectorizes it (`E2M1_X2` is the table it equals).
#[inline(always)]
fn e2m1_x2(code: u8) -> i32 {
    let c = i32::from(code);
    let (e, m) = ((c >> 1) & 3, c & 1);
    let magnitude = if e == 0 { m } else { (2 + m) << (e - 1) };
    if c & 8 != 0 { -magnitude } else { magnitude }
}

/// MXFP4: e (E8M0), 16 bytes of codes: low nibbles are values 0..16, high 16..32;
/// value = d x code's value.
#[inline(always)]
pub(super) fn mxfp4(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<17, 32>(src, dst) {
        let d = e8m0_half(b[0]);
        let qs: &[u8; 16] = array(b, 1);
        for j in 0..16 {
            y[j] = d * e2m1_x2(qs[j] & 15) as f32;
            y[j + 16] = d * e2m1_x2(qs[j] >> 4) as f32;
        }
    }
}

/// NVFP4: 4 UE4M3 scales, 32 bytes of codes; sub-block s (16 values) uses scale s and
/// bytes 8s..8s + 8, low nibbles first.
#[inline(always)]
pub(super) fn nvfp4(src: &[u8], dst: &mut [f32]) {
    for (b, y) in blocks::<36, 64>(src, dst) {
        for s in 0..4 {
            let d = ue4m3_half(b[s]);
            let qs: &[u8; 8] = array(b, 4 + 8 * s);
            for j in 0..8 {
                y[16 * s + j] = d * e2m1_x2(qs[j] & 15) as f32;
                y[16 * s + 8 + j] = d * e2m1_x2(qs[j] >> 4) as f32;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scales() {
        assert_eq!(e8m0_half(127), 0.5);
        assert_eq!(e8m0_half(128), 1.0);
        assert_eq!(e8m0_half(0), 2f64.powi(-128) as f32);
        assert_eq!(e8m0_half(1), 2f32.powi(-127));
        assert_eq!(e8m0_half(255), 2f32.powi(127));
        // UE4M3 0x38 = 1.0 (exp 7, man 0); halved.
        assert_eq!(ue4m3_half(0x38), 0.5);
        assert_eq!(ue4m3_half(0x7e), 448.0 / 2.0);
        assert_eq!(ue4m3_half(0x01), 2f32.powi(-9) / 2.0);
        assert_eq!(ue4m3_half(0x7f), 0.0);
        assert_eq!(ue4m3_half(0xb8), 0.5, "bit 7 is ignored");
        assert_eq!(ue4m3_half(0xff), 240.0);
        assert_eq!(ue4m3_half(0x80), 0.0);
        // Against the formula of gguf-py, value by value.
        for x in 0..=255u8 {
            let exp = ((x >> 3) & 15) as i32;
            let man = (x & 7) as f32;
            let raw = if exp == 0 {
                man * 2f32.powi(-9)
            } else {
                (1.0 + man / 8.0) * 2f32.powi(exp - 7)
            };
            let want = if x == 0 || x == 0x7f { 0.0 } else { raw * 0.5 };
            assert_eq!(ue4m3_half(x).to_bits(), want.to_bits(), "{x:#04x}");
        }
    }

    #[test]
    fn codes_are_the_table() {
        for code in 0..16u8 {
            assert_eq!(
                e2m1_x2(code),
                i32::from(E2M1_X2[usize::from(code)]),
                "{code}"
            );
        }
    }

    #[test]
    fn blocks_of_codes() {
        let mut b = vec![127u8]; // scale 2^0: the E2M1 values themselves
        b.extend((0..16u8).map(|j| (15 - j) << 4 | j));
        let mut y = [0f32; 32];
        mxfp4(&b, &mut y);
        assert_eq!(&y[..8], &[0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0]);
        assert_eq!(&y[8..16], &[-0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]);
        assert_eq!(y[8].to_bits(), 0, "code 8 is the integer 0: +0, as in ggml");
        assert_eq!((y[16], y[31]), (-6.0, 0.0));

        let mut b = vec![0x38, 0x40, 0x00, 0x7f]; // 1, 2, 0, 0 (halved)
        b.extend([0x71u8; 32]); // low code 1, high code 7
        let mut y = [0f32; 64];
        nvfp4(&b, &mut y);
        assert_eq!((y[0], y[8], y[16], y[24]), (0.5, 6.0, 1.0, 12.0));
        assert_eq!((y[32], y[63]), (0.0, 0.0));
    }
}
