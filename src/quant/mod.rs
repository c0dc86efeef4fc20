//! ggml's tensor types: the table of every type id ggml defines (ggml.h `enum ggml_type`),
//! the block-quantized ones with their block layout, and their dequantization to f32
//! (and, through f32, to f16 and bf16).
//!
//! A block type stores `block_size` values in `type_size` bytes, and a ggml row (ne[0]
//! values, our shape's last dimension) is always whole blocks. In this library such bytes
//! are a `u8` component whose logical type names the block type, e.g. `ggml_q4_0`: GGUF
//! files are read that way, and zTensor files converted from them keep it. The logical type
//! is what `convert` and the reader look at, so block bytes are never converted element
//! by element: they are read as bytes, or dequantized.
//!
//! Every dequantizer gives the values `gguf.quants.dequantize` of gguf-py 0.19.0 gives,
//! bit for bit (the same f32 operations in the same order; the interop test checks it),
//! which are also ggml's. Q1_0, Q2_0 and Q8_K, which gguf-py can't dequantize, follow
//! ggml's reference dequantizers. The kernels are one file per family: `simple` (one
//! scale per block: Q4_0 ... Q8_0, Q1_0, Q2_0, TQ1_0, TQ2_0), `kquants` (super-blocks of
//! 256 with 6-bit sub-scales), `fp4` (MXFP4, NVFP4), `iquants` (codebook types, whose
//! codebooks are in `grids`).

mod fp4;
mod grids;
mod iquants;
mod kquants;
mod simple;
mod subbyte;

use std::ffi::CStr;

use crate::dtype::DType;
use crate::error::{Result, bail, err};

/// Dequantizes whole blocks: `src` is n x `type_size` bytes, `dst` n x `block_size` values.
pub(crate) type Kernel = fn(&[u8], &mut [f32]);

/// A block-quantized ggml type.
#[derive(Debug)]
pub struct BlockType {
    id: u32,
    name: &'static CStr,
    logical_type: &'static str,
    block_size: u32,
    type_size: u32,
    /// The dequantizer, or why there is none.
    kernel: std::result::Result<Kernel, &'static str>,
}

impl BlockType {
    /// The ggml type id (`GGML_TYPE_Q4_0` is 2 ...).
    pub fn id(&self) -> u32 {
        self.id
    }
    /// The name after `GGML_TYPE_` (as gguf-py spells it): "Q4_0", "Q4_K", "IQ2_XXS" ...
    pub fn name(&self) -> &'static str {
        self.name.to_str().expect("ASCII")
    }
    /// `name`, NUL-terminated for the C API.
    pub(crate) fn c_name(&self) -> &'static CStr {
        self.name
    }
    /// The logical type of components holding these blocks: "ggml_" and the lower-case
    /// name ("ggml_q4_k").
    pub fn logical_type(&self) -> &'static str {
        self.logical_type
    }
    /// Values per block.
    pub fn block_size(&self) -> u64 {
        u64::from(self.block_size)
    }
    /// Bytes per block.
    pub fn type_size(&self) -> u64 {
        u64::from(self.type_size)
    }
    /// True when this build dequantizes it.
    pub fn can_dequantize(&self) -> bool {
        self.kernel.is_ok()
    }
    /// Bytes of `values` values (whole blocks only).
    pub fn byte_size(&self, values: u64) -> Option<u64> {
        if !values.is_multiple_of(self.block_size()) {
            return None;
        }
        (values / self.block_size()).checked_mul(self.type_size())
    }
    /// The dequantizer; `Unsupported` saying why there is none.
    pub(crate) fn dequantizer(&self) -> Result<Kernel> {
        self.kernel.map_err(|why| {
            err!(
                Unsupported,
                "ggml type {} (id {}) can't be dequantized: {why}",
                self.name(),
                self.id
            )
        })
    }
}

/// A kernel compiled three times (baseline x86-64, AVX2, AVX-512) and chosen at run time
/// by the CPU: the kernels are plain Rust loops the compiler vectorizes, so wider vectors
/// are only a matter of compiling them for the CPU at hand. Elsewhere, one version.
macro_rules! dispatch {
    ($kernel:path) => {{
        fn dispatched(src: &[u8], dst: &mut [f32]) {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx512bw,avx512vl,avx2,bmi2")]
                unsafe fn avx512(src: &[u8], dst: &mut [f32]) {
                    $kernel(src, dst)
                }
                #[target_feature(enable = "avx2,bmi2")]
                unsafe fn avx2(src: &[u8], dst: &mut [f32]) {
                    $kernel(src, dst)
                }
                match simd_level() {
                    // SAFETY: simd_level() saw AVX-512F/BW/VL, AVX2 and BMI2 on this CPU,
                    // the features `avx512` is compiled for.
                    SimdLevel::Avx512 => return unsafe { avx512(src, dst) },
                    // SAFETY: simd_level() saw AVX2 and BMI2 on this CPU, the features
                    // `avx2` is compiled for.
                    SimdLevel::Avx2 => return unsafe { avx2(src, dst) },
                    SimdLevel::Baseline => {}
                }
            }
            $kernel(src, dst)
        }
        Ok(dispatched as Kernel)
    }};
}

/// The widest vectors the kernels may use on this CPU.
#[cfg(target_arch = "x86_64")]
#[derive(Clone, Copy, PartialEq, Eq)]
enum SimdLevel {
    Baseline,
    Avx2,
    Avx512,
}

/// Detected once.
#[cfg(target_arch = "x86_64")]
fn simd_level() -> SimdLevel {
    use std::sync::atomic::{AtomicU8, Ordering};
    static LEVEL: AtomicU8 = AtomicU8::new(u8::MAX);
    match LEVEL.load(Ordering::Relaxed) {
        0 => SimdLevel::Baseline,
        1 => SimdLevel::Avx2,
        2 => SimdLevel::Avx512,
        _ => {
            let detected = if std::is_x86_feature_detected!("avx512f")
                && std::is_x86_feature_detected!("avx512bw")
                && std::is_x86_feature_detected!("avx512vl")
                && std::is_x86_feature_detected!("avx2")
                && std::is_x86_feature_detected!("bmi2")
            {
                SimdLevel::Avx512
            } else if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("bmi2")
            {
                SimdLevel::Avx2
            } else {
                SimdLevel::Baseline
            };
            LEVEL.store(detected as u8, Ordering::Relaxed);
            detected
        }
    }
}

/// A NUL-terminated literal as a `CStr`, at compile time.
const fn c_str(s: &'static str) -> &'static CStr {
    match CStr::from_bytes_with_nul(s.as_bytes()) {
        Ok(c) => c,
        Err(_) => panic!("a name without its NUL"),
    }
}

macro_rules! block_types {
    ($( $id:literal $name:ident $logical:literal $block:literal $size:literal $kernel:expr; )*) => {
        /// Every block-quantized type ggml defines, and the removed ones whose layout is
        /// known (their blocks can be sized, not dequantized), in id order.
        pub const BLOCK_TYPES: &[BlockType] = &[$(
            BlockType {
                id: $id,
                name: c_str(concat!(stringify!($name), "\0")),
                logical_type: $logical,
                block_size: $block,
                type_size: $size,
                kernel: $kernel,
            },
        )*];
    };
}

const NO_DOT_TYPE: &str = "ggml defines no dequantization for it (it is an intermediate type \
                           of its dot products, not one models are stored in)";
const INTERLEAVED: &str = "its blocks are interleaved across rows for ggml's old ARM kernels, \
                           which ggml removed with no dequantizer; convert the model again \
                           from its Q4_0 or IQ4_NL form";

block_types! {
    2 Q4_0 "ggml_q4_0" 32 18 dispatch!(simple::q4_0);
    3 Q4_1 "ggml_q4_1" 32 20 dispatch!(simple::q4_1);
    6 Q5_0 "ggml_q5_0" 32 22 dispatch!(simple::q5_0);
    7 Q5_1 "ggml_q5_1" 32 24 dispatch!(simple::q5_1);
    8 Q8_0 "ggml_q8_0" 32 34 dispatch!(simple::q8_0);
    9 Q8_1 "ggml_q8_1" 32 36 Err(NO_DOT_TYPE);
    10 Q2_K "ggml_q2_k" 256 84 dispatch!(kquants::q2_k);
    11 Q3_K "ggml_q3_k" 256 110 dispatch!(kquants::q3_k);
    12 Q4_K "ggml_q4_k" 256 144 dispatch!(kquants::q4_k);
    13 Q5_K "ggml_q5_k" 256 176 dispatch!(kquants::q5_k);
    14 Q6_K "ggml_q6_k" 256 210 dispatch!(kquants::q6_k);
    15 Q8_K "ggml_q8_k" 256 292 dispatch!(kquants::q8_k);
    16 IQ2_XXS "ggml_iq2_xxs" 256 66 dispatch!(iquants::iq2_xxs);
    17 IQ2_XS "ggml_iq2_xs" 256 74 dispatch!(iquants::iq2_xs);
    18 IQ3_XXS "ggml_iq3_xxs" 256 98 dispatch!(iquants::iq3_xxs);
    19 IQ1_S "ggml_iq1_s" 256 50 dispatch!(iquants::iq1_s);
    20 IQ4_NL "ggml_iq4_nl" 32 18 dispatch!(iquants::iq4_nl);
    21 IQ3_S "ggml_iq3_s" 256 110 dispatch!(iquants::iq3_s);
    22 IQ2_S "ggml_iq2_s" 256 82 dispatch!(iquants::iq2_s);
    23 IQ4_XS "ggml_iq4_xs" 256 136 dispatch!(iquants::iq4_xs);
    29 IQ1_M "ggml_iq1_m" 256 56 dispatch!(iquants::iq1_m);
    31 Q4_0_4_4 "ggml_q4_0_4_4" 32 18 Err(INTERLEAVED);
    32 Q4_0_4_8 "ggml_q4_0_4_8" 32 18 Err(INTERLEAVED);
    33 Q4_0_8_8 "ggml_q4_0_8_8" 32 18 Err(INTERLEAVED);
    34 TQ1_0 "ggml_tq1_0" 256 54 dispatch!(simple::tq1_0);
    35 TQ2_0 "ggml_tq2_0" 256 66 dispatch!(simple::tq2_0);
    36 IQ4_NL_4_4 "ggml_iq4_nl_4_4" 32 18 Err(INTERLEAVED);
    39 MXFP4 "ggml_mxfp4" 32 17 dispatch!(fp4::mxfp4);
    40 NVFP4 "ggml_nvfp4" 64 36 dispatch!(fp4::nvfp4);
    41 Q1_0 "ggml_q1_0" 128 18 dispatch!(simple::q1_0);
    42 Q2_0 "ggml_q2_0" 64 18 dispatch!(simple::q2_0);
}

/// What a ggml type id stands for.
#[derive(Clone, Copy, Debug)]
pub enum GgmlType {
    /// Plain little-endian elements of a storage dtype (F32, F16, BF16, F64, I8 ... I64).
    Plain(DType),
    /// Blocks of a block-quantized type.
    Blocks(&'static BlockType),
    /// An id this build doesn't know (a newer ggml's, or one ggml removed before GGUF
    /// existed): the size of its tensors can't be computed.
    Unknown(u32),
}

/// The type of a ggml type id, from ggml.h's `enum ggml_type` (ids 0 to 42 today).
pub fn ggml_type(id: u32) -> GgmlType {
    let plain = match id {
        0 => Some(DType::F32),
        1 => Some(DType::F16),
        24 => Some(DType::I8),
        25 => Some(DType::I16),
        26 => Some(DType::I32),
        27 => Some(DType::I64),
        28 => Some(DType::F64),
        30 => Some(DType::BF16),
        _ => None,
    };
    if let Some(d) = plain {
        return GgmlType::Plain(d);
    }
    match BLOCK_TYPES.binary_search_by_key(&id, |t| t.id) {
        Ok(i) => GgmlType::Blocks(&BLOCK_TYPES[i]),
        Err(_) => GgmlType::Unknown(id),
    }
}

/// Why a ggml type id is unknown, for messages: "ggml type id 43 is not one this build
/// knows", with what ggml says of the ids it retired.
pub fn unknown_type_message(id: u32) -> String {
    let retired = match id {
        4 => " (Q4_2, removed from ggml before GGUF existed)",
        5 => " (Q4_3, removed from ggml before GGUF existed)",
        37 => " (IQ4_NL_4_8, reserved by ggml and never defined)",
        38 => " (IQ4_NL_8_8, reserved by ggml and never defined)",
        _ => "",
    };
    format!("ggml type id {id}{retired} is not one this build knows")
}

/// The logical type of a tensor of an unknown ggml type id: "ggml_type_<id>".
pub fn unknown_logical_type(id: u32) -> String {
    format!("ggml_type_{id}")
}

/// What a component's bytes are, when they are ggml blocks.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Blocks {
    /// Blocks of a known type.
    Known(&'static BlockType),
    /// Blocks of a ggml type id this build doesn't know ("ggml_type_<id>").
    Unknown(u32),
}

impl Blocks {
    /// The block type, or `Unsupported` naming the unknown id.
    pub(crate) fn known(self) -> Result<&'static BlockType> {
        match self {
            Blocks::Known(t) => Ok(t),
            Blocks::Unknown(id) => bail!(Unsupported, "{}", unknown_type_message(id)),
        }
    }
}

/// The one rule that says a component holds ggml blocks: `u8` storage whose logical type
/// names a ggml block type ("ggml_q4_0", or "ggml_type_<id>" for an id this build doesn't
/// know). None for anything else.
pub(crate) fn blocks_of(storage: DType, logical: Option<&str>) -> Option<Blocks> {
    let name = logical?.strip_prefix("ggml_")?;
    if storage != DType::U8 {
        return None;
    }
    if let Some(t) = BLOCK_TYPES.iter().find(|t| &t.logical_type[5..] == name) {
        return Some(Blocks::Known(t));
    }
    let id = name.strip_prefix("type_")?;
    // Canonical decimal only, so one id has one spelling.
    if id.is_empty() || (id.len() > 1 && id.starts_with('0')) {
        return None;
    }
    match id.parse::<u32>().ok().map(ggml_type)? {
        GgmlType::Unknown(id) => Some(Blocks::Unknown(id)),
        _ => None,
    }
}

/// The packed sub-byte float type a component holds (`u8` storage, logical type
/// `f4_e2m1fn_x2`, `f6_e2m3fn_x4` or `f6_e3m2fn_x4`; see `subbyte`). Its values are a flat
/// stream: blocks may span rows.
pub(crate) fn packed_of(storage: DType, logical: Option<&str>) -> Option<&'static BlockType> {
    let name = logical?;
    (storage == DType::U8)
        .then(|| {
            subbyte::PACKED_FLOATS
                .iter()
                .find(|t| t.logical_type == name)
        })
        .flatten()
}

/// Rows of whole blocks: `(rows, row_size)` of a tensor of `shape` (row-major; a row is
/// the last dimension, ggml's ne[0]) stored as `bytes` bytes of blocks of `t`. `Format`
/// when the last dimension is not whole blocks or the bytes don't match the shape.
pub(crate) fn rows(t: &BlockType, shape: &[u64], bytes: u64) -> Result<(u64, u64)> {
    let (row, outer) = match shape.split_last() {
        Some((&last, outer)) => (last, outer),
        None => (1, &[][..]),
    };
    let row_size = t.byte_size(row).ok_or_else(|| {
        err!(
            Format,
            "a row of {row} values is not whole {} blocks of {}",
            t.name(),
            t.block_size
        )
    })?;
    let rows = outer
        .iter()
        .try_fold(1u64, |n, &d| n.checked_mul(d))
        .ok_or_else(|| err!(Format, "the row count of shape {shape:?} overflows u64"))?;
    if rows.checked_mul(row_size) != Some(bytes) {
        bail!(
            Format,
            "{bytes} bytes of {} blocks do not make shape {shape:?} ({rows} rows of \
             {row_size} bytes)",
            t.name()
        );
    }
    Ok((rows, row_size))
}

/// Values dequantized at a time into a stack buffer when they can't be written in place
/// (f16 or bf16 output, or a destination not aligned for f32): 16 KiB, a multiple of
/// every block size.
const CHUNK: usize = 4096;

/// Output bytes below which dequantizing stays on the calling thread, and the least
/// each extra thread gets (starting a thread costs about what 0.5 MiB of output does).
const PER_THREAD: usize = 1 << 20;

/// Dequantizes whole blocks of `t` in `src` into `dst`, little-endian values of `to`
/// (f32, f16 or bf16; f16 and bf16 are rounded to nearest even from the f32 values), on
/// up to `workers()` threads of the pool for large outputs (this one included; asked only
/// then). `dst` must be exactly the values' size. Allocates only the list of pieces.
/// `store` writes a chunk of f32 values as `to` (f16 and bf16 outputs go through it):
/// `convert::dequantize` passes `convert`'s kernels, which sit a layer above this one.
pub(crate) fn dequantize_with(
    t: &BlockType,
    src: &[u8],
    to: DType,
    dst: &mut [u8],
    workers: impl FnOnce() -> usize,
    store: Store,
) -> Result<()> {
    let kernel = t.dequantizer()?;
    if !matches!(to, DType::F32 | DType::F16 | DType::BF16) {
        bail!(
            Unsupported,
            "ggml type {} dequantizes to f32, f16 or bf16, not {to}",
            t.name()
        );
    }
    let (bs, ts) = (t.block_size as usize, t.type_size as usize);
    let blocks = src.len() / ts;
    assert!(
        src.len() == blocks * ts && dst.len() == blocks * bs * to.size(),
        "dequantize: {} source bytes and {} destination bytes don't match {}",
        src.len(),
        dst.len(),
        t.name()
    );
    let most = dst.len() / PER_THREAD;
    let workers = if most > 1 {
        workers().clamp(1, most)
    } else {
        1
    };
    if workers == 1 {
        run(kernel, ts, bs, src, to, dst, store);
        return Ok(());
    }
    let per = blocks.div_ceil(workers);
    let pieces: Vec<(&[u8], &mut [u8])> = src
        .chunks(per * ts)
        .zip(dst.chunks_mut(per * bs * to.size()))
        .collect();
    crate::pool::map(pieces, workers, |(s, d)| {
        run(kernel, ts, bs, s, to, d, store)
    });
    Ok(())
}

/// One thread's share: straight into `dst` when it is aligned f32, else through a stack
/// buffer of `CHUNK` values.
fn run(kernel: Kernel, ts: usize, bs: usize, src: &[u8], to: DType, dst: &mut [u8], store: Store) {
    if to == DType::F32 && cfg!(target_endian = "little") {
        // SAFETY: every bit pattern is a valid f32; align_to_mut only yields aligned,
        // in-bounds middle parts.
        let (head, values, _) = unsafe { dst.align_to_mut::<f32>() };
        if head.is_empty() {
            kernel(src, values);
            return;
        }
    }
    let mut buf = [0f32; CHUNK];
    let width = to.size();
    for (s, d) in src
        .chunks(CHUNK / bs * ts)
        .zip(dst.chunks_mut(CHUNK * width))
    {
        let values = &mut buf[..s.len() / ts * bs];
        kernel(s, values);
        store(values, to, d);
    }
}

/// Writes f32 values as little-endian `to` values (f32, f16 or bf16, rounded to nearest
/// even): `convert::store_f32`.
pub(crate) type Store = fn(&[f32], DType, &mut [u8]);

/// The f32 value of IEEE half bits, exactly (subnormals included, NaN payloads kept),
/// with integer operations only, so a caller's flush-to-zero mode can't change it.
#[inline(always)]
pub(crate) fn f16_to_f32(h: u16) -> f32 {
    let h = u32::from(h);
    let sign = (h & 0x8000) << 16;
    let exp = (h >> 10) & 0x1f;
    let man = h & 0x3ff;
    let bits = if exp == 0x1f {
        0x7f80_0000 | (man << 13)
    } else if exp != 0 {
        ((exp + 112) << 23) | (man << 13)
    } else if man == 0 {
        0
    } else {
        // man x 2^-24: put its top bit at the implicit one.
        let top = 31 - man.leading_zeros();
        ((top + 103) << 23) | ((man << (23 - top)) & 0x7f_ffff)
    };
    f32::from_bits(sign | bits)
}

/// The f16 at byte `at` of a block.
#[inline(always)]
fn f16_at(block: &[u8], at: usize) -> f32 {
    f16_to_f32(u16::from_le_bytes([block[at], block[at + 1]]))
}

/// A block's bytes as a fixed-size array (the compiler then drops every bounds check).
#[inline(always)]
fn array<const N: usize>(block: &[u8], at: usize) -> &[u8; N] {
    block[at..at + N].try_into().expect("N bytes")
}

/// Pairs of (block bytes, block values) for whole blocks of `TS` bytes and `BS` values.
///
/// Each block's bytes pass through `black_box`, which keeps the compiler from vectorizing
/// the loop over blocks: it would load each byte position of 16 blocks at a time (a
/// gather of 18-byte strides) instead of a block's bytes with one load, four times slower
/// than vectorizing within the block, which it then does.
#[inline(always)]
fn blocks<'a, const TS: usize, const BS: usize>(
    src: &'a [u8],
    dst: &'a mut [f32],
) -> impl Iterator<Item = (&'a [u8; TS], &'a mut [f32; BS])> {
    src.chunks_exact(TS)
        .zip(dst.chunks_exact_mut(BS))
        .map(|(s, d)| {
            (
                std::hint::black_box(<&[u8; TS]>::try_from(s).expect("TS bytes")),
                <&mut [f32; BS]>::try_from(d).expect("BS values"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use half::{bf16, f16};

    /// What the library calls: `convert`'s stores.
    fn dequantize(
        t: &BlockType,
        src: &[u8],
        to: DType,
        dst: &mut [u8],
        workers: impl FnOnce() -> usize,
    ) -> Result<()> {
        crate::convert::dequantize(t, src, to, dst, workers)
    }

    #[test]
    fn the_table_is_in_id_order_with_ggml_sizes() {
        assert!(BLOCK_TYPES.windows(2).all(|w| w[0].id < w[1].id));
        for t in BLOCK_TYPES {
            assert_eq!(
                t.logical_type,
                format!("ggml_{}", t.name().to_ascii_lowercase())
            );
            assert!(CHUNK.is_multiple_of(t.block_size as usize), "{}", t.name());
        }
        // Every id of ggml.h's enum ggml_type (GGML_TYPE_COUNT is 43).
        let kinds: Vec<char> = (0..44)
            .map(|id| match ggml_type(id) {
                GgmlType::Plain(_) => 'p',
                GgmlType::Blocks(t) if t.can_dequantize() => 'b',
                GgmlType::Blocks(_) => 's',
                GgmlType::Unknown(_) => '-',
            })
            .collect();
        assert_eq!(
            kinds.iter().collect::<String>(),
            "ppbb--bbbsbbbbbbbbbbbbbbpppppbpsssbbs--bbbb-"
        );
        let q2_0 = match ggml_type(42) {
            GgmlType::Blocks(t) => t,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            (q2_0.name(), q2_0.block_size(), q2_0.type_size()),
            ("Q2_0", 64, 18)
        );
    }

    #[test]
    fn blocks_are_named_by_the_logical_type_of_u8_storage() {
        let known = |d, l| match blocks_of(d, Some(l)) {
            Some(Blocks::Known(t)) => Some(t.name()),
            _ => None,
        };
        assert_eq!(known(DType::U8, "ggml_q4_k"), Some("Q4_K"));
        assert_eq!(known(DType::U8, "ggml_nvfp4"), Some("NVFP4"));
        assert_eq!(known(DType::I8, "ggml_q4_k"), None);
        assert_eq!(known(DType::U8, "q4_k"), None);
        assert_eq!(known(DType::U8, "ggml_Q4_K"), None);
        assert!(blocks_of(DType::U8, None).is_none());
        assert!(matches!(
            blocks_of(DType::U8, Some("ggml_type_43")),
            Some(Blocks::Unknown(43))
        ));
        assert!(matches!(
            blocks_of(DType::U8, Some("ggml_type_4")),
            Some(Blocks::Unknown(4))
        ));
        // Known ids, other spellings and non-numbers are not "unknown blocks".
        for other in [
            "ggml_type_2",
            "ggml_type_0",
            "ggml_type_043",
            "ggml_type_",
            "ggml_type_x",
        ] {
            assert!(blocks_of(DType::U8, Some(other)).is_none(), "{other}");
        }
        assert_eq!(
            Blocks::Unknown(4).known().unwrap_err().message(),
            "ggml type id 4 (Q4_2, removed from ggml before GGUF existed) is not one this \
             build knows"
        );
    }

    #[test]
    fn rows_of_whole_blocks() {
        let q4_0 = &BLOCK_TYPES[0];
        assert_eq!(rows(q4_0, &[3, 64], 108).unwrap(), (3, 36));
        assert_eq!(rows(q4_0, &[0, 64], 0).unwrap(), (0, 36));
        assert_eq!(rows(q4_0, &[2, 0], 0).unwrap(), (2, 0));
        assert_eq!(
            rows(q4_0, &[3, 48], 0).unwrap_err().message(),
            "a row of 48 values is not whole Q4_0 blocks of 32"
        );
        assert_eq!(
            rows(q4_0, &[3, 64], 107).unwrap_err().message(),
            "107 bytes of Q4_0 blocks do not make shape [3, 64] (3 rows of 36 bytes)"
        );
        assert!(rows(q4_0, &[], 18).is_err());
    }

    #[test]
    fn halves_convert_exactly() {
        assert_eq!(f16_to_f32(0x3c00), 1.0);
        assert_eq!(f16_to_f32(0xc000), -2.0);
        assert_eq!(f16_to_f32(0x7bff), 65504.0);
        assert_eq!(f16_to_f32(0x0001), 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x03ff), 1023.0 * 2f32.powi(-24));
        assert_eq!(f16_to_f32(0x8000).to_bits(), 0x8000_0000);
        assert_eq!(f16_to_f32(0x7c00), f32::INFINITY);
        assert_eq!(f16_to_f32(0x7e01).to_bits(), 0x7fc0_2000);
        for h in 0..=u16::MAX {
            let ours = f16_to_f32(h);
            let theirs = f16::from_bits(h).to_f32();
            assert!(
                ours.to_bits() == theirs.to_bits() || (ours.is_nan() && theirs.is_nan()),
                "{h:#06x}"
            );
        }
    }

    #[test]
    fn every_output_dtype_and_alignment_gives_the_same_values() {
        // Two Q8_0 blocks: d = 0.5 and d = -2, values -128 .. 127.
        let mut src = Vec::new();
        for (d, start) in [(0x3800u16, -128i32), (0xc000, 96)] {
            src.extend(d.to_le_bytes());
            src.extend((0..32).map(|i| (start + i) as i8 as u8));
        }
        let t = match ggml_type(8) {
            GgmlType::Blocks(t) => t,
            _ => unreachable!(),
        };
        let want: Vec<f32> = (0..64)
            .map(|i| {
                if i < 32 {
                    0.5 * (i - 128) as f32
                } else {
                    -2.0 * (96 + i - 32) as f32
                }
            })
            .collect();
        let mut storage = vec![0u8; 64 * 4 + 1];
        for skew in [0, 1] {
            let dst = &mut storage[skew..skew + 256];
            dequantize(t, &src, DType::F32, dst, || 1).unwrap();
            let got: Vec<f32> = dst
                .chunks(4)
                .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
                .collect();
            assert_eq!(got, want);
        }
        let mut dst = vec![0u8; 128];
        dequantize(t, &src, DType::F16, &mut dst, || 1).unwrap();
        let got: Vec<f32> = dst
            .chunks(2)
            .map(|c| f16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect();
        assert_eq!(got, want);
        dequantize(t, &src, DType::BF16, &mut dst, || 1).unwrap();
        // bf16 keeps 8 significant bits: -2 x 127 = -254 rounds to -254, -2 x 99 = -198.
        let got: Vec<f32> = dst
            .chunks(2)
            .map(|c| bf16::from_le_bytes([c[0], c[1]]).to_f32())
            .collect();
        let rounded: Vec<f32> = want.iter().map(|&v| bf16::from_f32(v).to_f32()).collect();
        assert_eq!(got, rounded);
        let e = dequantize(t, &src, DType::I32, &mut vec![0u8; 256], || 1).unwrap_err();
        assert_eq!(
            e.message(),
            "ggml type Q8_0 dequantizes to f32, f16 or bf16, not i32"
        );
        let q8_1 = match ggml_type(9) {
            GgmlType::Blocks(t) => t,
            _ => unreachable!(),
        };
        let e = dequantize(q8_1, &[0; 36], DType::F32, &mut [0; 128], || 1).unwrap_err();
        assert_eq!(e.kind(), crate::error::ErrorKind::Unsupported);
        assert!(
            e.message()
                .starts_with("ggml type Q8_1 (id 9) can't be dequantized: "),
            "{e}"
        );
    }

    #[test]
    fn threads_split_on_block_boundaries() {
        // 3 MiB of output from Q4_K (256 values in 144 bytes): several workers.
        let t = match ggml_type(12) {
            GgmlType::Blocks(t) => t,
            _ => unreachable!(),
        };
        let blocks = 3 * (1 << 20) / 4 / 256 + 7;
        let mut src: Vec<u8> = (0..blocks * 144).map(|i| (i * 7 % 251) as u8).collect();
        for b in src.chunks_mut(144) {
            b[..4].copy_from_slice(&[0x00, 0x3c, 0x00, 0x38]);
        }
        let mut one = vec![0u8; blocks * 256 * 4];
        let mut many = vec![0u8; blocks * 256 * 4];
        dequantize(t, &src, DType::F32, &mut one, || 1).unwrap();
        dequantize(t, &src, DType::F32, &mut many, || 3).unwrap();
        assert!(one == many);
        let mut half_one = vec![0u8; blocks * 256 * 2];
        let mut half_many = vec![0u8; blocks * 256 * 2];
        dequantize(t, &src, DType::F16, &mut half_one, || 1).unwrap();
        dequantize(t, &src, DType::F16, &mut half_many, || 4).unwrap();
        assert!(half_one == half_many);
    }
}
