//! Deterministic test data: a small PRNG, the value patterns of the workloads' tensors, and a
//! fast fingerprint to check that every reader read the right bytes.

/// wyrand: fast, deterministic, good enough for test data.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    #[inline(always)]
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = u128::from(self.0) * u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db);
        ((t >> 64) as u64) ^ (t as u64)
    }
}

pub fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}
/// What a tensor's values look like.
#[derive(Clone, Copy, Debug)]
pub enum Fill {
    /// bf16 weights: random sign and mantissa, exponents around 2^-6 (geometric).
    WeightBf16,
    /// bf16 norm weights around 1.0.
    NormBf16,
    WeightF16,
    WeightF32,
    /// Small integers (-1000..=1000).
    SmallI32,
    /// int8 quantized weights: roughly normal, sd ~18 (see `quant_table`).
    QuantI8,
    /// fp32 weights with half of the elements exactly zero.
    HalfZeroF32,
}

#[inline(always)]
fn weight_bf16(r: u64) -> u16 {
    // 16 random bits: sign 1, mantissa 7, exponent drop from 8 bits (geometric).
    let sign = (r & 1) as u16;
    let mant = ((r >> 1) & 0x7f) as u16;
    let k = (((r >> 8) & 0xff) as u8 | 0x80).trailing_zeros() as u16;
    (sign << 15) | ((121 - k) << 7) | mant
}

#[inline(always)]
fn weight_f32(r: u64) -> u32 {
    let sign = (r & 1) as u32;
    let mant = ((r >> 1) & 0x7f_ffff) as u32;
    let k = (((r >> 24) & 0xff) as u8 | 0x80).trailing_zeros();
    (sign << 31) | ((121 - k) << 23) | mant
}

pub fn fill(kind: Fill, seed: u64, buf: &mut [u8]) {
    let mut rng = Rng::new(seed);
    match kind {
        Fill::WeightBf16 => {
            let mut chunks = buf.chunks_exact_mut(8);
            for c in &mut chunks {
                let r = rng.next();
                let v = u64::from(weight_bf16(r))
                    | u64::from(weight_bf16(r >> 16)) << 16
                    | u64::from(weight_bf16(r >> 32)) << 32
                    | u64::from(weight_bf16(r >> 48)) << 48;
                c.copy_from_slice(&v.to_le_bytes());
            }
            for c in chunks.into_remainder().chunks_exact_mut(2) {
                c.copy_from_slice(&weight_bf16(rng.next()).to_le_bytes());
            }
        }
        Fill::NormBf16 => {
            for c in buf.chunks_exact_mut(2) {
                let r = rng.next();
                // 1.0 +- a few percent: exponent 126 or 127, top mantissa bits varied.
                let v: u16 = if r & 1 == 0 {
                    0x3f80 | ((r >> 1) & 0x07) as u16
                } else {
                    0x3f78 | ((r >> 1) & 0x07) as u16
                };
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
        Fill::WeightF16 => {
            for c in buf.chunks_exact_mut(2) {
                let r = rng.next();
                let sign = (r & 1) as u16;
                let mant = ((r >> 1) & 0x3ff) as u16;
                let k = (((r >> 11) & 0xff) as u8 | 0x80).trailing_zeros() as u16;
                let v = (sign << 15) | ((9 - k) << 10) | mant;
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
        Fill::WeightF32 => {
            for c in buf.chunks_exact_mut(4) {
                c.copy_from_slice(&weight_f32(rng.next()).to_le_bytes());
            }
        }
        Fill::SmallI32 => {
            for c in buf.chunks_exact_mut(4) {
                let v = (rng.next() % 2001) as i32 - 1000;
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
        Fill::QuantI8 => {
            // Eight bytes per random word, each through the quantile table.
            let table = quant_table();
            let mut chunks = buf.chunks_exact_mut(8);
            for c in &mut chunks {
                let r = rng.next().to_le_bytes();
                for (b, &u) in c.iter_mut().zip(&r) {
                    *b = table[u as usize] as u8;
                }
            }
            for b in chunks.into_remainder() {
                *b = table[(rng.next() & 0xff) as usize] as u8;
            }
        }
        Fill::HalfZeroF32 => {
            for c in buf.chunks_exact_mut(4) {
                let r = rng.next();
                let v = if r >> 63 == 0 { 0 } else { weight_f32(r) };
                c.copy_from_slice(&v.to_le_bytes());
            }
        }
    }
}

/// int8 quantized-weight values: the 256 quantiles of the sum of four uniform 5-bit
/// numbers, centred (Irwin-Hall, close to a normal law with sd ~18, range -62..=62).
fn quant_table() -> &'static [i8; 256] {
    static TABLE: std::sync::OnceLock<[i8; 256]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        // Distribution of the sum, by convolution.
        let mut dist = vec![1.0f64];
        for _ in 0..4 {
            let mut next = vec![0.0; dist.len() + 31];
            for (s, &p) in dist.iter().enumerate() {
                for k in 0..32 {
                    next[s + k] += p / 32.0;
                }
            }
            dist = next;
        }
        let mut table = [0i8; 256];
        let mut cdf = 0.0;
        let mut s = 0usize;
        for (u, t) in table.iter_mut().enumerate() {
            let q = (u as f64 + 0.5) / 256.0;
            while cdf + dist[s] < q {
                cdf += dist[s];
                s += 1;
            }
            *t = (s as i32 - 62) as i8;
        }
        table
    })
}

/// A fast fingerprint of bytes, to check that every reader read the right data.
pub fn fingerprint(bytes: &[u8]) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut lanes = [1u64, 2, 3, 4];
    let mut chunks = bytes.chunks_exact(32);
    for c in &mut chunks {
        for (j, lane) in lanes.iter_mut().enumerate() {
            let w = u64::from_le_bytes(c[8 * j..8 * j + 8].try_into().unwrap());
            *lane = (*lane ^ w).wrapping_mul(K).rotate_left(29);
        }
    }
    let mut h = bytes.len() as u64;
    for l in lanes {
        h = (h ^ l).wrapping_mul(K);
    }
    for &b in chunks.remainder() {
        h = (h ^ u64::from(b)).wrapping_mul(K);
    }
    h
}
