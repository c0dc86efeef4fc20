//! ztensor benchmark (issue 6): ours against the peers and the machine's limits, side by side
//! in one run on the same data.
//!
//! Run: `cargo run --release --manifest-path bench/Cargo.toml -- [--quick] [--dir DIR]`
//! (see bench/README.md). Prints a table and writes bench/results.json (bench/results-quick.json
//! with --quick).
//!
//! Peers: the reference crate `ztensor` 1.2.3 (its own .zt files, and its GGUF reader on GGUF
//! files written here), and the `safetensors` crate. Limits: `read()` of a whole file into one
//! buffer, `write()` of the same bytes, the `zstd` crate single-threaded, `sha2` single-threaded.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::fs::{self, File};
use std::hint::black_box;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use memmap2::Mmap;
use sha2::Digest as _;

type Res<T> = Result<T, Box<dyn std::error::Error>>;

/// Bump when the generators or the layouts change: every data file is then rewritten.
const GEN_VERSION: &str = "gen-v2";
/// Fingerprint of the library's sources (build.rs): files our writer made are rewritten when
/// it changes.
const LIB_HASH: &str = env!("ZT_BENCH_LIB_HASH");
const MIB: f64 = 1024.0 * 1024.0;
/// The budget of the memory targets.
const RSS_BUDGET_MIB: f64 = 64.0;

// ------------------------------------------------------------------------------------------
// Command line
// ------------------------------------------------------------------------------------------

struct Args {
    quick: bool,
    dir: PathBuf,
    runs: usize,
    out: PathBuf,
    only: Option<Vec<String>>,
    keep: bool,
}

const SECTIONS: [&str; 8] = [
    "list", "views", "load", "zstd", "range", "write", "verify", "memory",
];

fn usage() -> String {
    format!(
        "usage: ztensor-bench [--quick] [--dir DIR] [--runs N] [--out FILE] [--only LIST] [--keep]\n\
         \n  --quick      scale every workload down ~16x (3 runs)\n\
         \x20 --dir DIR    scratch directory for the data (default bench/data)\n\
         \x20 --runs N     runs per case, the median is reported (default 5, quick 3)\n\
         \x20 --out FILE   results file (default bench/results.json, quick bench/results-quick.json)\n\
         \x20 --only LIST  comma-separated sections: {}\n\
         \x20 --keep       keep the multi-GiB files of the memory cases",
        SECTIONS.join(",")
    )
}

fn parse_args(argv: &[String]) -> Res<Args> {
    let here = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut quick = false;
    let mut dir = None;
    let mut runs = None;
    let mut out = None;
    let mut only = None;
    let mut keep = false;
    let mut it = argv.iter();
    while let Some(a) = it.next() {
        let mut value = |name: &str| {
            it.next()
                .cloned()
                .ok_or_else(|| format!("{name} needs a value\n{}", usage()))
        };
        match a.as_str() {
            "--quick" => quick = true,
            "--dir" => dir = Some(PathBuf::from(value("--dir")?)),
            "--runs" => runs = Some(value("--runs")?.parse::<usize>()?.max(1)),
            "--out" => out = Some(PathBuf::from(value("--out")?)),
            "--only" => {
                let list: Vec<String> = value("--only")?
                    .split(',')
                    .map(|s| s.trim().to_owned())
                    .collect();
                for s in &list {
                    if !SECTIONS.contains(&s.as_str()) {
                        return Err(format!("unknown section '{s}'\n{}", usage()).into());
                    }
                }
                only = Some(list);
            }
            "--keep" => keep = true,
            "-h" | "--help" => {
                println!("{}", usage());
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument '{other}'\n{}", usage()).into()),
        }
    }
    Ok(Args {
        quick,
        dir: dir.unwrap_or_else(|| here.join("data")),
        runs: runs.unwrap_or(if quick { 3 } else { 5 }),
        out: out.unwrap_or_else(|| {
            here.join(if quick {
                "results-quick.json"
            } else {
                "results.json"
            })
        }),
        only,
        keep,
    })
}

impl Args {
    fn wants(&self, section: &str) -> bool {
        self.only
            .as_ref()
            .is_none_or(|l| l.iter().any(|s| s == section))
    }
}

fn main() {
    let argv: Vec<String> = std::env::args().collect();
    if argv.get(1).map(String::as_str) == Some("__child") {
        let code = match child(&argv[2..]) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("child {:?}: {e}", &argv[2..]);
                1
            }
        };
        std::process::exit(code);
    }
    let result = parse_args(&argv[1..]).and_then(|a| run(&a));
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

// ------------------------------------------------------------------------------------------
// Deterministic data
// ------------------------------------------------------------------------------------------

/// wyrand: fast, deterministic, good enough for test data.
struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed ^ 0x9e37_79b9_7f4a_7c15)
    }
    #[inline(always)]
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let t = u128::from(self.0) * u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db);
        ((t >> 64) as u64) ^ (t as u64)
    }
}

fn fnv(s: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in s.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0100_0000_01b3);
    }
    h
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Dt {
    BF16,
    F16,
    F32,
    I32,
    I8,
}

impl Dt {
    fn size(self) -> usize {
        match self {
            Dt::BF16 | Dt::F16 => 2,
            Dt::F32 | Dt::I32 => 4,
            Dt::I8 => 1,
        }
    }
    fn ours(self) -> ztensor::DType {
        match self {
            Dt::BF16 => ztensor::DType::BF16,
            Dt::F16 => ztensor::DType::F16,
            Dt::F32 => ztensor::DType::F32,
            Dt::I32 => ztensor::DType::I32,
            Dt::I8 => ztensor::DType::I8,
        }
    }
    fn reference(self) -> ztensor_ref::DType {
        match self {
            Dt::BF16 => ztensor_ref::DType::BF16,
            Dt::F16 => ztensor_ref::DType::F16,
            Dt::F32 => ztensor_ref::DType::F32,
            Dt::I32 => ztensor_ref::DType::I32,
            Dt::I8 => ztensor_ref::DType::I8,
        }
    }
    fn safetensors(self) -> safetensors::Dtype {
        match self {
            Dt::BF16 => safetensors::Dtype::BF16,
            Dt::F16 => safetensors::Dtype::F16,
            Dt::F32 => safetensors::Dtype::F32,
            Dt::I32 => safetensors::Dtype::I32,
            Dt::I8 => safetensors::Dtype::I8,
        }
    }
    fn gguf(self) -> u32 {
        match self {
            Dt::F32 => 0,
            Dt::F16 => 1,
            Dt::I8 => 24,
            Dt::I32 => 26,
            Dt::BF16 => 30,
        }
    }
}

/// What a tensor's values look like.
#[derive(Clone, Copy, Debug)]
enum Fill {
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

fn fill(kind: Fill, seed: u64, buf: &mut [u8]) {
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
fn fingerprint(bytes: &[u8]) -> u64 {
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

struct TSpec {
    name: String,
    dt: Dt,
    shape: Vec<u64>,
    fill: Fill,
    /// Byte range in the workload's contiguous data.
    start: usize,
    len: usize,
}

/// A workload: tensors whose bytes lie back to back in one buffer.
struct Workload {
    id: &'static str,
    tensors: Vec<TSpec>,
    data: Vec<u8>,
    /// Fingerprint of each tensor's bytes.
    prints: Vec<u64>,
    by_name: HashMap<String, usize>,
}

impl Workload {
    fn bytes(&self, i: usize) -> &[u8] {
        let t = &self.tensors[i];
        &self.data[t.start..t.start + t.len]
    }
    fn total(&self) -> u64 {
        self.data.len() as u64
    }
    /// A short description for the stamp files.
    fn spec(&self) -> String {
        format!(
            "{GEN_VERSION} {} tensors={} bytes={} first={}",
            self.id,
            self.tensors.len(),
            self.data.len(),
            self.tensors.first().map_or("", |t| &t.name)
        )
    }
}

fn build(id: &'static str, specs: Vec<(String, Dt, Vec<u64>, Fill)>) -> Workload {
    let mut tensors = Vec::with_capacity(specs.len());
    let mut at = 0usize;
    for (name, dt, shape, fill) in specs {
        let len = shape.iter().product::<u64>() as usize * dt.size();
        tensors.push(TSpec {
            name,
            dt,
            shape,
            fill,
            start: at,
            len,
        });
        at += len;
    }
    let mut data = vec![0u8; at];
    for t in &tensors {
        fill(
            t.fill,
            fnv(id) ^ fnv(&t.name),
            &mut data[t.start..t.start + t.len],
        );
    }
    let prints = tensors
        .iter()
        .map(|t| fingerprint(&data[t.start..t.start + t.len]))
        .collect();
    let by_name = tensors
        .iter()
        .enumerate()
        .map(|(i, t)| (t.name.clone(), i))
        .collect();
    Workload {
        id,
        tensors,
        data,
        prints,
        by_name,
    }
}

/// W1: a small Llama-style model in bf16, about 1 GiB in 300 tensors.
fn w1(quick: bool) -> Workload {
    let (hidden, inter, kv, vocab) = if quick {
        (256u64, 896u64, 64u64, 8000u64)
    } else {
        (1024, 3584, 256, 32000)
    };
    let layers = 33;
    let mut s = vec![(
        "model.embed_tokens.weight".to_owned(),
        Dt::BF16,
        vec![vocab, hidden],
        Fill::WeightBf16,
    )];
    for l in 0..layers {
        let p = format!("model.layers.{l}");
        let w = Fill::WeightBf16;
        s.push((
            format!("{p}.input_layernorm.weight"),
            Dt::BF16,
            vec![hidden],
            Fill::NormBf16,
        ));
        s.push((
            format!("{p}.self_attn.q_proj.weight"),
            Dt::BF16,
            vec![hidden, hidden],
            w,
        ));
        s.push((
            format!("{p}.self_attn.k_proj.weight"),
            Dt::BF16,
            vec![kv, hidden],
            w,
        ));
        s.push((
            format!("{p}.self_attn.v_proj.weight"),
            Dt::BF16,
            vec![kv, hidden],
            w,
        ));
        s.push((
            format!("{p}.self_attn.o_proj.weight"),
            Dt::BF16,
            vec![hidden, hidden],
            w,
        ));
        s.push((
            format!("{p}.post_attention_layernorm.weight"),
            Dt::BF16,
            vec![hidden],
            Fill::NormBf16,
        ));
        s.push((
            format!("{p}.mlp.gate_proj.weight"),
            Dt::BF16,
            vec![inter, hidden],
            w,
        ));
        s.push((
            format!("{p}.mlp.up_proj.weight"),
            Dt::BF16,
            vec![inter, hidden],
            w,
        ));
        s.push((
            format!("{p}.mlp.down_proj.weight"),
            Dt::BF16,
            vec![hidden, inter],
            w,
        ));
    }
    s.push((
        "model.norm.weight".to_owned(),
        Dt::BF16,
        vec![hidden],
        Fill::NormBf16,
    ));
    s.push((
        "lm_head.weight".to_owned(),
        Dt::BF16,
        vec![vocab, hidden],
        Fill::WeightBf16,
    ));
    build("W1", s)
}

/// W2: many small tensors of 1 to 4 KiB, mixed dtypes.
fn w2(quick: bool) -> Workload {
    let n = if quick { 50_000 / 16 } else { 50_000 };
    let mut rng = Rng::new(0x5eed_0002);
    let mut s = Vec::with_capacity(n);
    for i in 0..n {
        let r = rng.next();
        let bytes = (1024 + (r % 3073)) & !7; // 1024..=4096, a multiple of 8
        let (dt, fill) = match (r >> 32) % 5 {
            0 => (Dt::F32, Fill::WeightF32),
            1 => (Dt::F16, Fill::WeightF16),
            2 => (Dt::BF16, Fill::WeightBf16),
            3 => (Dt::I32, Fill::SmallI32),
            _ => (Dt::I8, Fill::QuantI8),
        };
        let numel = bytes / dt.size() as u64;
        let shape = if numel.is_multiple_of(16) {
            vec![16, numel / 16]
        } else {
            vec![numel]
        };
        s.push((
            format!(
                "blocks.{}.unit.{}.{}",
                i / 100,
                i % 100,
                ["weight", "bias", "scale"][i % 3]
            ),
            dt,
            shape,
            fill,
        ));
    }
    build("W2", s)
}

/// W3: compressible data (int8 quantized-like weights and half-zero fp32), 256 MiB.
fn w3(quick: bool) -> Workload {
    let d = if quick { 16 } else { 1 };
    let mut s = vec![
        (
            "quant.big.weight".to_owned(),
            Dt::I8,
            vec![24576 / d, 4096],
            Fill::QuantI8,
        ),
        (
            "sparse.big.weight".to_owned(),
            Dt::F32,
            vec![6144 / d, 4096],
            Fill::HalfZeroF32,
        ),
    ];
    for i in 0..4 {
        s.push((
            format!("quant.{i}.weight"),
            Dt::I8,
            vec![2048 / d, 4096],
            Fill::QuantI8,
        ));
        s.push((
            format!("sparse.{i}.weight"),
            Dt::F32,
            vec![512 / d, 4096],
            Fill::HalfZeroF32,
        ));
    }
    build("W3", s)
}

// ------------------------------------------------------------------------------------------
// Writers for every format
// ------------------------------------------------------------------------------------------

fn write_ours(w: &Workload, path: &Path, opts: &ztensor::WriteOptions) -> Res<()> {
    let mut wr = ztensor::Writer::create(path)?;
    for (i, t) in w.tensors.iter().enumerate() {
        wr.add(&t.name, t.dt.ours(), &t.shape, w.bytes(i), opts)?;
    }
    wr.finish()?;
    Ok(())
}

/// Our writer over a plain file: no temporary file, no rename, no fsync.
fn write_ours_nosync(w: &Workload, path: &Path, opts: &ztensor::WriteOptions) -> Res<()> {
    let file = File::create(path)?;
    let mut wr = ztensor::Writer::new(BufWriter::with_capacity(1 << 20, file))?;
    for (i, t) in w.tensors.iter().enumerate() {
        wr.add(&t.name, t.dt.ours(), &t.shape, w.bytes(i), opts)?;
    }
    let mut out = wr.finish()?;
    out.flush()?;
    Ok(())
}

fn write_ref(w: &Workload, path: &Path, compression: ztensor_ref::Compression) -> Res<()> {
    let mut wr = ztensor_ref::Writer::create(path)?;
    for (i, t) in w.tensors.iter().enumerate() {
        wr.add_bytes(
            &t.name,
            t.shape.clone(),
            t.dt.reference(),
            compression,
            w.bytes(i),
            ztensor_ref::Checksum::None,
        )?;
    }
    wr.finish()?;
    Ok(())
}

struct StView<'a> {
    dtype: safetensors::Dtype,
    shape: Vec<usize>,
    data: &'a [u8],
}

impl safetensors::View for StView<'_> {
    fn dtype(&self) -> safetensors::Dtype {
        self.dtype
    }
    fn shape(&self) -> &[usize] {
        &self.shape
    }
    fn data(&self) -> Cow<'_, [u8]> {
        Cow::Borrowed(self.data)
    }
    fn data_len(&self) -> usize {
        self.data.len()
    }
}

fn write_safetensors(w: &Workload, path: &Path) -> Res<()> {
    let views = w.tensors.iter().enumerate().map(|(i, t)| {
        (
            t.name.clone(),
            StView {
                dtype: t.dt.safetensors(),
                shape: t.shape.iter().map(|&d| d as usize).collect(),
                data: w.bytes(i),
            },
        )
    });
    safetensors::serialize_to_file(views, None, path)?;
    Ok(())
}

/// GGUF v3 with `general.alignment` = 64; dimensions innermost first, as ggml stores them.
fn write_gguf(w: &Workload, path: &Path) -> Res<()> {
    const ALIGN: u64 = 64;
    fn string(h: &mut Vec<u8>, s: &str) {
        h.extend_from_slice(&(s.len() as u64).to_le_bytes());
        h.extend_from_slice(s.as_bytes());
    }
    let mut head = Vec::new();
    head.extend_from_slice(b"GGUF");
    head.extend_from_slice(&3u32.to_le_bytes());
    head.extend_from_slice(&(w.tensors.len() as u64).to_le_bytes());
    head.extend_from_slice(&1u64.to_le_bytes());
    string(&mut head, "general.alignment");
    head.extend_from_slice(&4u32.to_le_bytes()); // UINT32
    head.extend_from_slice(&(ALIGN as u32).to_le_bytes());
    let mut offset = 0u64;
    let mut offsets = Vec::with_capacity(w.tensors.len());
    for t in &w.tensors {
        string(&mut head, &t.name);
        head.extend_from_slice(&(t.shape.len() as u32).to_le_bytes());
        for d in t.shape.iter().rev() {
            head.extend_from_slice(&d.to_le_bytes());
        }
        head.extend_from_slice(&t.dt.gguf().to_le_bytes());
        head.extend_from_slice(&offset.to_le_bytes());
        offsets.push(offset);
        offset = (offset + t.len as u64).next_multiple_of(ALIGN);
    }
    head.resize((head.len() as u64).next_multiple_of(ALIGN) as usize, 0);
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    out.write_all(&head)?;
    let mut pos = 0u64;
    for (i, _) in w.tensors.iter().enumerate() {
        let pad = offsets[i] - pos;
        out.write_all(&vec![0u8; pad as usize])?;
        out.write_all(w.bytes(i))?;
        pos = offsets[i] + w.bytes(i).len() as u64;
    }
    out.flush()?;
    Ok(())
}

/// A data file and how to make it; skipped when its stamp says it is already there.
struct DataFile {
    path: PathBuf,
    /// The file is made by our library: its stamp includes the library's fingerprint.
    ours: bool,
}

fn stamp_path(p: &Path) -> PathBuf {
    let mut s = p.as_os_str().to_owned();
    s.push(".stamp");
    PathBuf::from(s)
}

fn stamp_text(w: &Workload, f: &DataFile, quick: bool) -> String {
    format!(
        "{} quick={quick}{}",
        w.spec(),
        if f.ours {
            format!(" lib={LIB_HASH}")
        } else {
            String::new()
        }
    )
}

fn up_to_date(w: &Workload, f: &DataFile, quick: bool) -> bool {
    let Ok(stamp) = fs::read_to_string(stamp_path(&f.path)) else {
        return false;
    };
    let Ok(meta) = fs::metadata(&f.path) else {
        return false;
    };
    stamp == format!("{} size={}", stamp_text(w, f, quick), meta.len())
}

fn ensure(
    w: &Workload,
    quick: bool,
    path: PathBuf,
    ours: bool,
    make: impl FnOnce(&Path) -> Res<()>,
) -> Res<PathBuf> {
    let f = DataFile { path, ours };
    if up_to_date(w, &f, quick) {
        return Ok(f.path);
    }
    let _ = fs::remove_file(stamp_path(&f.path));
    let t = Instant::now();
    make(&f.path)?;
    let size = fs::metadata(&f.path)?.len();
    fs::write(
        stamp_path(&f.path),
        format!("{} size={size}", stamp_text(w, &f, quick)),
    )?;
    eprintln!(
        "  wrote {} ({:.1} MiB) in {:.1} s",
        f.path.display(),
        size as f64 / MIB,
        t.elapsed().as_secs_f64()
    );
    Ok(f.path)
}

/// Reads a file once so that its pages are in the page cache.
fn warm(path: &Path) -> Res<()> {
    let mut f = File::open(path)?;
    let mut buf = vec![0u8; 8 << 20];
    while f.read(&mut buf)? > 0 {}
    Ok(())
}

// ------------------------------------------------------------------------------------------
// Measuring
// ------------------------------------------------------------------------------------------

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

fn cpu_seconds() -> f64 {
    // SAFETY: getrusage fills the struct we hand it.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        let t = |v: libc::timeval| v.tv_sec as f64 + v.tv_usec as f64 * 1e-6;
        t(u.ru_utime) + t(u.ru_stime)
    }
}

fn minor_faults() -> u64 {
    // SAFETY: getrusage fills the struct we hand it.
    unsafe {
        let mut u: libc::rusage = std::mem::zeroed();
        libc::getrusage(libc::RUSAGE_SELF, &mut u);
        u.ru_minflt as u64
    }
}

fn map(path: &Path) -> Res<Mmap> {
    let f = File::open(path)?;
    // SAFETY: read-only map of a file this process wrote and nobody modifies meanwhile.
    Ok(unsafe { Mmap::map(&f)? })
}

/// Caller buffers, one per tensor (in the workload's order), touched once so that the
/// measurements copy into resident memory.
fn caller_buffers(w: &Workload) -> Vec<Vec<u8>> {
    w.tensors.iter().map(|t| vec![0x55u8; t.len]).collect()
}

fn check_buffers(w: &Workload, bufs: &[Vec<u8>], who: &str) -> Res<()> {
    for (i, b) in bufs.iter().enumerate() {
        if fingerprint(b) != w.prints[i] {
            return Err(format!(
                "{who} read wrong bytes for '{}' in {}",
                w.tensors[i].name, w.id
            )
            .into());
        }
    }
    Ok(())
}

fn scrub(bufs: &mut [Vec<u8>]) {
    for b in bufs {
        b.fill(0x55);
    }
}

// ------------------------------------------------------------------------------------------
// Results
// ------------------------------------------------------------------------------------------

struct Row {
    metric: String,
    workload: String,
    /// "s", "MiB" or "faults": lower is better for all of them.
    unit: &'static str,
    ours: f64,
    peers: Vec<(String, f64)>,
    limit: Option<(String, f64)>,
    /// Bytes processed, for a throughput column.
    bytes: Option<u64>,
    target: Option<(String, bool)>,
    note: String,
    /// CPU seconds per wall second while ours ran.
    cpu: Option<f64>,
}

impl Row {
    fn new(metric: &str, workload: &str, unit: &'static str, ours: f64) -> Row {
        Row {
            metric: metric.to_owned(),
            workload: workload.to_owned(),
            unit,
            ours,
            peers: Vec::new(),
            limit: None,
            bytes: None,
            target: None,
            note: String::new(),
            cpu: None,
        }
    }
    fn peer(mut self, name: &str, v: f64) -> Row {
        self.peers.push((name.to_owned(), v));
        self
    }
    fn limit(mut self, name: &str, v: f64) -> Row {
        self.limit = Some((name.to_owned(), v));
        self
    }
    fn bytes(mut self, b: u64) -> Row {
        self.bytes = Some(b);
        self
    }
    fn note(mut self, n: impl Into<String>) -> Row {
        self.note = n.into();
        self
    }
    fn cpu(mut self, c: f64) -> Row {
        self.cpu = c.is_finite().then_some(c);
        self
    }
    fn best_peer(&self) -> Option<&(String, f64)> {
        self.peers.iter().min_by(|a, b| a.1.total_cmp(&b.1))
    }
    /// Best peer's value over ours: above 1 means ours is better (every unit is lower-better).
    fn vs_best_peer(&self) -> Option<f64> {
        self.best_peer().and_then(|p| ratio(p.1, self.ours))
    }
    fn vs_limit(&self) -> Option<f64> {
        self.limit.as_ref().and_then(|l| ratio(l.1, self.ours))
    }
    fn target(mut self, text: &str, met: bool) -> Row {
        self.target = Some((text.to_owned(), met));
        self
    }
}

fn ratio(other: f64, ours: f64) -> Option<f64> {
    (ours > 0.0 && other.is_finite()).then(|| other / ours)
}

fn json_str(s: &str) -> String {
    let mut o = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            c if (c as u32) < 0x20 => {
                let _ = write!(o, "\\u{:04x}", c as u32);
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

fn json_num(v: f64) -> String {
    if v.is_finite() {
        format!("{v}")
    } else {
        "null".into()
    }
}

fn json_opt(v: Option<f64>) -> String {
    v.map_or("null".into(), json_num)
}

fn to_json(rows: &[Row], env: &Env) -> String {
    let mut o = String::from("[\n");
    for (k, r) in rows.iter().enumerate() {
        let peers: Vec<String> = r
            .peers
            .iter()
            .map(|(n, v)| format!("{}: {}", json_str(n), json_num(*v)))
            .collect();
        let limit = r.limit.as_ref().map_or("null".into(), |(n, v)| {
            format!("{{\"name\": {}, \"value\": {}}}", json_str(n), json_num(*v))
        });
        let target = r.target.as_ref().map_or("null".into(), |(t, met)| {
            format!("{{\"text\": {}, \"met\": {met}}}", json_str(t))
        });
        let _ = writeln!(
            o,
            "  {{\"metric\": {}, \"workload\": {}, \"unit\": {}, \"ours\": {}, \"peers\": {{{}}}, \
             \"limit\": {}, \"ratios\": {{\"vs_best_peer\": {}, \"vs_limit\": {}}}, \
             \"target\": {}, \"bytes\": {}, \"ours_cpu_per_wall\": {}, \"note\": {}, \"run\": {}}}{}",
            json_str(&r.metric),
            json_str(&r.workload),
            json_str(r.unit),
            json_num(r.ours),
            peers.join(", "),
            limit,
            json_opt(r.vs_best_peer()),
            json_opt(r.vs_limit()),
            target,
            r.bytes.map_or("null".into(), |b| b.to_string()),
            json_opt(r.cpu),
            json_str(&r.note),
            env.json(),
            if k + 1 < rows.len() { "," } else { "" }
        );
    }
    o.push_str("]\n");
    o
}

struct Env {
    quick: bool,
    runs: usize,
    cores: usize,
    load_start: String,
    load_end: String,
    revision: String,
    started: u64,
}

impl Env {
    fn json(&self) -> String {
        format!(
            "{{\"quick\": {}, \"runs\": {}, \"cores\": {}, \"loadavg_start\": {}, \"loadavg_end\": {}, \
             \"revision\": {}, \"unix_time\": {}}}",
            self.quick,
            self.runs,
            self.cores,
            json_str(&self.load_start),
            json_str(&self.load_end),
            json_str(&self.revision),
            self.started
        )
    }
}

fn loadavg() -> String {
    fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn revision() -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let git = |args: &[&str]| {
        Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(args)
            .output()
            .ok()
            .filter(|o| o.status.success())
            .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_owned())
    };
    let rev = git(&["rev-parse", "--short", "HEAD"]).unwrap_or_else(|| "unknown".into());
    let dirty =
        git(&["status", "--porcelain", "--", "src", "Cargo.toml"]).is_some_and(|s| !s.is_empty());
    format!("{rev}{}", if dirty { "+dirty-src" } else { "" })
}

fn fmt_val(unit: &str, v: f64) -> String {
    if !v.is_finite() {
        return "-".into();
    }
    match unit {
        "s" if v >= 1.0 => format!("{v:.2} s"),
        "s" if v >= 1e-3 => format!("{:.2} ms", v * 1e3),
        "s" => format!("{:.1} us", v * 1e6),
        "MiB" => format!("{v:.1} MiB"),
        "faults" => format!("{v:.0} flt"),
        _ => format!("{v:.3} {unit}"),
    }
}

fn fmt_ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |x| format!("{x:.2}x"))
}

fn print_table(rows: &[Row]) {
    println!();
    println!(
        "{:<34} {:<7} {:>11} {:>9} {:>11} {:>8} {:>11} {:>8}  target",
        "metric", "wl", "ours", "GB/s", "best peer", "vs peer", "limit", "vs lim"
    );
    println!("{}", "-".repeat(123));
    for r in rows {
        let gbs = match (r.unit, r.bytes) {
            ("s", Some(b)) if r.ours > 0.0 => format!("{:.2}", b as f64 / r.ours / 1e9),
            _ => "".into(),
        };
        let target = r.target.as_ref().map_or(String::new(), |(t, met)| {
            format!("{} {t}", if *met { "MET    " } else { "NOT MET" })
        });
        println!(
            "{:<34} {:<7} {:>11} {:>9} {:>11} {:>8} {:>11} {:>8}  {}",
            r.metric,
            r.workload,
            fmt_val(r.unit, r.ours),
            gbs,
            r.best_peer().map_or("-".into(), |p| fmt_val(r.unit, p.1)),
            fmt_ratio(r.vs_best_peer()),
            r.limit
                .as_ref()
                .map_or("-".into(), |l| fmt_val(r.unit, l.1)),
            fmt_ratio(r.vs_limit()),
            target
        );
        let mut detail = Vec::new();
        if let Some(c) = r.cpu {
            detail.push(format!("ours used {c:.2} CPUs"));
        }
        for (n, v) in &r.peers {
            detail.push(format!("{n} {}", fmt_val(r.unit, *v)));
        }
        if let Some((n, v)) = &r.limit {
            detail.push(format!("limit: {n} {}", fmt_val(r.unit, *v)));
        }
        if !detail.is_empty() {
            println!("{:>43}{}", "", detail.join(" | "));
        }
        if !r.note.is_empty() {
            println!("{:>43}note: {}", "", r.note);
        }
    }
    println!("{}", "-".repeat(123));
    println!(
        "ratios = other / ours (every unit is lower-is-better), so above 1.00x means ours is ahead."
    );
}

// ------------------------------------------------------------------------------------------
// The run
// ------------------------------------------------------------------------------------------

/// The files of a workload in every format that a peer reads.
struct Files {
    ours: PathBuf,
    reference: PathBuf,
    safetensors: Option<PathBuf>,
    gguf: Option<PathBuf>,
    /// Ours with sha256 digests (W1 only).
    ours_sha: Option<PathBuf>,
}

impl Files {
    fn all(&self) -> Vec<&PathBuf> {
        let mut v = vec![&self.ours, &self.reference];
        v.extend(self.safetensors.iter());
        v.extend(self.gguf.iter());
        v.extend(self.ours_sha.iter());
        v
    }
}

fn files_for(w: &Workload, a: &Args) -> Res<Files> {
    let d = &a.dir;
    let id = w.id.to_lowercase();
    let zstd = w.id == "W3";
    let ours_opts = if zstd {
        ztensor::WriteOptions::zstd(3)
    } else {
        ztensor::WriteOptions::default()
    };
    let ref_comp = if zstd {
        ztensor_ref::Compression::Zstd(3)
    } else {
        ztensor_ref::Compression::Raw
    };
    let ours = ensure(w, a.quick, d.join(format!("{id}.zt")), true, |p| {
        write_ours(w, p, &ours_opts)
    })?;
    let reference = ensure(w, a.quick, d.join(format!("{id}.ref.zt")), false, |p| {
        write_ref(w, p, ref_comp)
    })?;
    // safetensors and GGUF store raw bytes only: they have no W3 (compressed) file.
    let (safetensors, gguf) = if zstd {
        (None, None)
    } else {
        (
            Some(ensure(
                w,
                a.quick,
                d.join(format!("{id}.safetensors")),
                false,
                |p| write_safetensors(w, p),
            )?),
            Some(ensure(
                w,
                a.quick,
                d.join(format!("{id}.gguf")),
                false,
                |p| write_gguf(w, p),
            )?),
        )
    };
    let ours_sha = if w.id == "W1" {
        let opts = ztensor::WriteOptions::default().with_digest(ztensor::DigestAlgorithm::Sha256);
        Some(ensure(
            w,
            a.quick,
            d.join(format!("{id}.sha256.zt")),
            true,
            |p| write_ours(w, p, &opts),
        )?)
    } else {
        None
    };
    Ok(Files {
        ours,
        reference,
        safetensors,
        gguf,
        ours_sha,
    })
}

fn run(a: &Args) -> Res<()> {
    fs::create_dir_all(&a.dir)?;
    let env_start = loadavg();
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    eprintln!(
        "ztensor bench: {} mode, {} runs per case (median), {} cores, load average {}, data in {}",
        if a.quick { "quick" } else { "full" },
        a.runs,
        cores,
        env_start,
        a.dir.display()
    );
    let started = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut rows = Vec::new();

    let needs_w2 = a.wants("list") || a.wants("views") || a.wants("load");
    let needs_w1 = needs_w2 || a.wants("write") || a.wants("verify");
    let needs_w3 = a.wants("zstd") || a.wants("range") || a.wants("write");

    if needs_w2 {
        eprintln!("W2: generating");
        let w = w2(a.quick);
        let f = files_for(&w, a)?;
        for p in f.all() {
            warm(p)?;
        }
        section_w(a, &w, &f, &mut rows, cores)?;
    }
    if needs_w1 {
        eprintln!("W1: generating");
        let w = w1(a.quick);
        let f = files_for(&w, a)?;
        for p in f.all() {
            warm(p)?;
        }
        section_w(a, &w, &f, &mut rows, cores)?;
    }
    if needs_w3 {
        eprintln!("W3: generating");
        let w = w3(a.quick);
        let f = files_for(&w, a)?;
        for p in f.all() {
            warm(p)?;
        }
        section_w3(a, &w, &f, &mut rows, cores)?;
    }
    if a.wants("memory") {
        section_memory(a, &mut rows)?;
    }

    let env = Env {
        quick: a.quick,
        runs: a.runs,
        cores,
        load_start: env_start,
        load_end: loadavg(),
        revision: revision(),
        started,
    };
    print_table(&rows);
    let met = rows
        .iter()
        .filter(|r| r.target.as_ref().is_some_and(|t| t.1))
        .count();
    let judged = rows.iter().filter(|r| r.target.is_some()).count();
    println!(
        "targets met: {met} of {judged}; load average {} at start, {} at end; {} cores; revision {}",
        env.load_start, env.load_end, env.cores, env.revision
    );
    fs::write(&a.out, to_json(&rows, &env))?;
    println!("wrote {}", a.out.display());
    Ok(())
}

// ---- Cases measured side by side ----

type CaseFn<'a> = Box<dyn FnMut() -> Res<()> + 'a>;

/// One contender of a comparison.
struct Case<'a> {
    name: &'static str,
    run: CaseFn<'a>,
    /// Untimed, before every timed call (each run then times exactly one call).
    setup: Option<CaseFn<'a>>,
    /// Untimed, after the warm-up call: checks what the case produced.
    check: Option<CaseFn<'a>>,
}

fn case<'a>(name: &'static str, run: impl FnMut() -> Res<()> + 'a) -> Case<'a> {
    Case {
        name,
        run: Box::new(run),
        setup: None,
        check: None,
    }
}

impl<'a> Case<'a> {
    fn setup(mut self, f: impl FnMut() -> Res<()> + 'a) -> Case<'a> {
        self.setup = Some(Box::new(f));
        self
    }
    fn check(mut self, f: impl FnMut() -> Res<()> + 'a) -> Case<'a> {
        self.check = Some(Box::new(f));
        self
    }
}

/// A case's median seconds per call, and the CPUs it kept busy (CPU s per wall s).
#[derive(Clone, Copy)]
struct Timing {
    secs: f64,
    cpu: f64,
}

/// Runs every case once (warm-up, then its check), then `runs` rounds in which every case
/// runs once, in an order rotated each round, so that a change in the machine's load
/// falls on every contender alike. A call shorter than 20 ms is repeated within its turn
/// (unless the case has a setup). Returns the timings in the cases' order.
fn measure(runs: usize, mut cases: Vec<Case<'_>>) -> Res<Vec<Timing>> {
    for c in cases.iter_mut() {
        if let Some(s) = c.setup.as_mut() {
            s()?;
        }
        (c.run)().map_err(|e| format!("{}: {e}", c.name))?;
        if let Some(k) = c.check.as_mut() {
            k().map_err(|e| format!("{}: {e}", c.name))?;
        }
    }
    let k = cases.len();
    let mut samples = vec![Vec::with_capacity(runs); k];
    let mut cpu = vec![0.0f64; k];
    let mut wall = vec![0.0f64; k];
    for round in 0..runs {
        for j in 0..k {
            let i = (j + round) % k;
            let c = &mut cases[i];
            if let Some(s) = c.setup.as_mut() {
                s()?;
            }
            let c0 = cpu_seconds();
            let start = Instant::now();
            let mut calls = 0u32;
            loop {
                (c.run)()?;
                calls += 1;
                let el = start.elapsed();
                if c.setup.is_some() || el >= Duration::from_millis(20) {
                    samples[i].push(el.as_secs_f64() / f64::from(calls));
                    cpu[i] += cpu_seconds() - c0;
                    wall[i] += el.as_secs_f64();
                    break;
                }
            }
        }
    }
    Ok(samples
        .into_iter()
        .enumerate()
        .map(|(i, s)| Timing {
            secs: median(s),
            cpu: cpu[i] / wall[i],
        })
        .collect())
}

/// A row from measured cases: the first is ours, the last `limits` (0 or 1) the limit.
fn row_from(
    metric: &str,
    workload: &str,
    names: &[&'static str],
    t: &[Timing],
    has_limit: bool,
) -> Row {
    let mut row = Row::new(metric, workload, "s", t[0].secs).cpu(t[0].cpu);
    let peers_end = if has_limit { t.len() - 1 } else { t.len() };
    for i in 1..peers_end {
        row = row.peer(names[i], t[i].secs);
    }
    if has_limit {
        row = row.limit(names[t.len() - 1], t[t.len() - 1].secs);
    }
    row
}

/// For a target that needs both cores: what ours and the 1-thread limit got from the machine,
/// in CPUs and in CPU seconds per call.
fn parallel_note(ours: Timing, limit: Timing, cores: usize) -> String {
    let busy = if ours.cpu < 0.75 * cores as f64 {
        format!(
            "; MACHINE BUSY: ours had {:.2} of {cores} CPUs, so a parallel speed-up could not show",
            ours.cpu
        )
    } else {
        String::new()
    };
    format!(
        "CPU s per call: ours {:.3} ({:.2} CPUs), limit {:.3} ({:.2} CPUs){busy}",
        ours.secs * ours.cpu,
        ours.cpu,
        limit.secs * limit.cpu,
        limit.cpu
    )
}

fn names_of(cases: &[Case<'_>]) -> Vec<&'static str> {
    cases.iter().map(|c| c.name).collect()
}

// ---- W1 and W2: listing, views, loads (and, for W1, writes and verification) ----

fn list_ours(path: &Path) -> Res<()> {
    let r = ztensor::Reader::open(path)?;
    let mut acc = 0u64;
    for o in r.objects() {
        acc = acc.wrapping_add(o.name().len() as u64);
        for &d in o.shape() {
            acc ^= d;
        }
        let c = &o.components()[0];
        acc = acc.wrapping_add(c.dtype() as u64 + c.offset());
    }
    black_box(acc);
    Ok(())
}

fn section_w(a: &Args, w: &Workload, f: &Files, rows: &mut Vec<Row>, cores: usize) -> Res<()> {
    let n = a.runs;
    let wl = w.id;
    let st = f
        .safetensors
        .as_ref()
        .expect("raw workloads have safetensors");
    let gg = f.gguf.as_ref().expect("raw workloads have gguf");
    let names: Vec<&str> = w.tensors.iter().map(|t| t.name.as_str()).collect();

    // (1) Open and list every name, shape, dtype and offset.
    if a.wants("list") {
        eprintln!("{wl}: open + list");
        let cases = vec![
            case("ours", || list_ours(&f.ours)),
            case("ztensor-1.2.3", || {
                let r = ztensor_ref::Reader::open(&f.reference)?;
                let mut acc = 0u64;
                for (name, o) in r.tensors() {
                    acc = acc.wrapping_add(name.len() as u64);
                    for &d in &o.shape {
                        acc ^= d;
                    }
                    let c = &o.components["data"];
                    acc = acc.wrapping_add(c.dtype.byte_size() as u64 + c.offset);
                }
                black_box(acc);
                Ok(())
            }),
            case("safetensors deserialize", || {
                let m = map(st)?;
                let s = safetensors::SafeTensors::deserialize(&m)?;
                let base = m.as_ptr() as usize;
                let mut acc = 0u64;
                for (name, v) in s.iter() {
                    acc = acc.wrapping_add(name.len() as u64);
                    for &d in v.shape() {
                        acc ^= d as u64;
                    }
                    acc = acc.wrapping_add(
                        (v.dtype().bitsize() / 8) as u64
                            + (v.data().as_ptr() as usize - base) as u64,
                    );
                }
                black_box(acc);
                Ok(())
            }),
            case("safetensors read_metadata", || {
                let m = map(st)?;
                let (hlen, meta) = safetensors::SafeTensors::read_metadata(&m)?;
                let mut acc = 0u64;
                for (name, info) in meta.tensors() {
                    acc = acc.wrapping_add(name.len() as u64);
                    for &d in &info.shape {
                        acc ^= d as u64;
                    }
                    acc = acc.wrapping_add(
                        (info.dtype.bitsize() / 8) as u64 + (8 + hlen + info.data_offsets.0) as u64,
                    );
                }
                black_box(acc);
                Ok(())
            }),
            case("gguf (ztensor-1.2.3)", || {
                let r = ztensor_ref::GgufReader::open(gg)?;
                let mut acc = 0u64;
                for (name, o) in &r.manifest.objects {
                    acc = acc.wrapping_add(name.len() as u64);
                    for &d in &o.shape {
                        acc ^= d;
                    }
                    let c = &o.components["data"];
                    acc = acc.wrapping_add(c.dtype.byte_size() as u64 + c.offset);
                }
                black_box(acc);
                Ok(())
            }),
        ];
        let labels = names_of(&cases);
        let t = measure(n, cases)?;
        let mut row = row_from("open + list", wl, &labels, &t, false)
            .note(format!("{} tensors", w.tensors.len()));
        if wl == "W2" {
            let met = row.vs_best_peer().is_some_and(|r| r >= 2.0);
            row = row.target(">= 2x fastest peer", met);
        }
        rows.push(row);
    }

    // (2) Zero-copy views of every tensor (file already open), and the pages they touch.
    if a.wants("views") {
        eprintln!("{wl}: views");
        // Faults over a first pass on fresh mappings, one reader at a time.
        let r = ztensor::Reader::open(&f.ours)?;
        let f0 = minor_faults();
        let mut zero_copy = true;
        for name in &names {
            let v = r.view(r.find(name).ok_or("missing tensor")?, 0)?;
            zero_copy &= v.zero_copy;
            black_box((v.data.as_ptr(), v.data.len()));
        }
        let ours_faults = (minor_faults() - f0) as f64;
        let rr = ztensor_ref::Reader::open_mmap_shared(&f.reference)?;
        let f0 = minor_faults();
        for name in &names {
            black_box(rr.view(name)?.as_ptr());
        }
        let ref_faults = (minor_faults() - f0) as f64;
        let m = map(st)?;
        let s = safetensors::SafeTensors::deserialize(&m)?;
        let f0 = minor_faults();
        for name in &names {
            black_box(s.tensor(name)?.data().as_ptr());
        }
        let st_faults = (minor_faults() - f0) as f64;
        let gr = ztensor_ref::GgufReader::open(gg)?;
        let f0 = minor_faults();
        for name in &names {
            black_box(gr.view(name)?.as_ptr());
        }
        let gg_faults = (minor_faults() - f0) as f64;

        let cases = vec![
            case("ours", || {
                let mut acc = 0usize;
                for name in &names {
                    let v = r.view(r.find(name).ok_or("missing tensor")?, 0)?;
                    acc = acc.wrapping_add(v.data.as_ptr() as usize ^ v.data.len());
                }
                black_box(acc);
                Ok(())
            }),
            case("ztensor-1.2.3 mmap view", || {
                let mut acc = 0usize;
                for name in &names {
                    let v = rr.view(name)?;
                    acc = acc.wrapping_add(v.as_ptr() as usize ^ v.len());
                }
                black_box(acc);
                Ok(())
            }),
            case("safetensors tensor().data()", || {
                let mut acc = 0usize;
                for name in &names {
                    let v = s.tensor(name)?;
                    acc = acc.wrapping_add(v.data().as_ptr() as usize ^ v.data().len());
                }
                black_box(acc);
                Ok(())
            }),
            case("gguf (ztensor-1.2.3) view", || {
                let mut acc = 0usize;
                for name in &names {
                    let v = gr.view(name)?;
                    acc = acc.wrapping_add(v.as_ptr() as usize ^ v.len());
                }
                black_box(acc);
                Ok(())
            }),
        ];
        let labels = names_of(&cases);
        let t = measure(n, cases)?;
        let row = row_from("views of every tensor (by name)", wl, &labels, &t, false).note(
            format!(
                "every view zero-copy: {zero_copy}; minor faults during the first pass: ours {ours_faults}, \
                 ztensor-1.2.3 {ref_faults}, safetensors {st_faults}, gguf {gg_faults}"
            ),
        );
        let met = row.vs_best_peer().is_some_and(|r| r >= 1.0) && ours_faults == 0.0 && zero_copy;
        rows.push(row.target("no slower than any peer, no page touched", met));
        rows.push(
            Row::new("views: pages touched (minflt)", wl, "faults", ours_faults)
                .peer(labels[1], ref_faults)
                .peer(labels[2], st_faults)
                .peer(labels[3], gg_faults)
                .target("0 pages touched", ours_faults == 0.0 && zero_copy),
        );
    }

    // (3) Load every tensor into caller buffers.
    if a.wants("load") {
        eprintln!("{wl}: load into caller buffers");
        let bufs = std::cell::RefCell::new(caller_buffers(w));
        let size = fs::metadata(&f.ours)?.len() as usize;
        let whole = std::cell::RefCell::new(vec![0x55u8; size]);
        let load_ours = |opts: ztensor::OpenOptions| {
            let bufs = &bufs;
            move || -> Res<()> {
                let r = ztensor::Reader::open_with(&f.ours, &opts)?;
                for (i, b) in bufs.borrow_mut().iter_mut().enumerate() {
                    r.read_into(i, 0, b)?;
                }
                Ok(())
            }
        };
        let check = |who: &'static str| {
            let bufs = &bufs;
            move || -> Res<()> {
                check_buffers(w, &bufs.borrow(), who)?;
                scrub(&mut bufs.borrow_mut());
                Ok(())
            }
        };
        let pread = ztensor::OpenOptions {
            use_mmap: false,
            ..Default::default()
        };
        let cases = vec![
            case("ours", load_ours(ztensor::OpenOptions::default())).check(check("ours")),
            case("ours use_mmap=false", load_ours(pread)).check(check("ours pread")),
            // The reference crate has no read-into-caller-buffer API: its read() allocates.
            case("ztensor-1.2.3 read() (allocates)", || {
                let r = ztensor_ref::Reader::open(&f.reference)?;
                let mut acc = 0usize;
                for name in &names {
                    acc = acc.wrapping_add(r.read(name, false)?.len());
                }
                black_box(acc);
                Ok(())
            })
            .check(|| {
                let r = ztensor_ref::Reader::open(&f.reference)?;
                for (i, name) in names.iter().enumerate() {
                    if fingerprint(&r.read(name, false)?) != w.prints[i] {
                        return Err("ztensor-1.2.3 read wrong bytes".into());
                    }
                }
                Ok(())
            }),
            case("ztensor-1.2.3 mmap view+copy", || {
                let r = ztensor_ref::Reader::open_mmap_shared(&f.reference)?;
                for (i, b) in bufs.borrow_mut().iter_mut().enumerate() {
                    b.copy_from_slice(r.view(names[i])?);
                }
                Ok(())
            })
            .check(check("ztensor-1.2.3 view+copy")),
            case("safetensors mmap+copy", || {
                let m = map(st)?;
                let s = safetensors::SafeTensors::deserialize(&m)?;
                let mut b = bufs.borrow_mut();
                for (name, v) in s.iter() {
                    b[w.by_name[name]].copy_from_slice(v.data());
                }
                Ok(())
            })
            .check(check("safetensors")),
            case("gguf (ztensor-1.2.3) view+copy", || {
                let r = ztensor_ref::GgufReader::open(gg)?;
                for (i, b) in bufs.borrow_mut().iter_mut().enumerate() {
                    b.copy_from_slice(r.view(names[i])?);
                }
                Ok(())
            })
            .check(check("gguf")),
            case("read() whole file, 1 buffer", || {
                File::open(&f.ours)?.read_exact(&mut whole.borrow_mut())?;
                Ok(())
            }),
        ];
        let labels = names_of(&cases);
        let t = measure(n, cases)?;
        // Two rows: ours with mmap (default) and with pread, against the same peers and limit.
        for (label, ours) in [
            ("load into caller buffers", 0usize),
            ("load (use_mmap=false)", 1),
        ] {
            let mut row = Row::new(label, wl, "s", t[ours].secs).cpu(t[ours].cpu);
            for i in 2..t.len() - 1 {
                row = row.peer(labels[i], t[i].secs);
            }
            let row = row
                .limit(labels[t.len() - 1], t[t.len() - 1].secs)
                .bytes(w.total());
            let met = row.vs_limit().is_some_and(|r| r >= 0.9);
            rows.push(row.target(">= 0.9x read()", met));
        }
    }

    if w.id == "W1" && a.wants("write") {
        section_write_w1(a, w, rows)?;
    }

    // (7) Digest verification.
    if w.id == "W1" && a.wants("verify") {
        eprintln!("{wl}: verify");
        let path = f.ours_sha.as_ref().expect("W1 has a sha256 copy");
        // The limit hashes the same stored bytes, found through our reader's listing.
        let ranges: Vec<(usize, usize)> = {
            let r = ztensor::Reader::open(path)?;
            r.objects()
                .iter()
                .map(|o| {
                    let c = &o.components()[0];
                    (c.offset() as usize, c.length() as usize)
                })
                .collect()
        };
        let cases = vec![
            case("ours", || {
                ztensor::Reader::open(path)?.verify()?;
                Ok(())
            }),
            case("sha2 single-threaded", || {
                let m = map(path)?;
                let mut acc = 0u8;
                for &(off, len) in &ranges {
                    acc ^= sha2::Sha256::digest(&m[off..off + len])[0];
                }
                black_box(acc);
                Ok(())
            }),
        ];
        let labels = names_of(&cases);
        let t = measure(n, cases)?;
        let row = row_from("verify sha256 digests", wl, &labels, &t, true).bytes(w.total());
        let per_core = row.vs_limit().map_or(0.0, |r| r / cores as f64);
        let row = row.note(format!(
            "per core: {per_core:.2}x of sha2 ({cores} cores; the target needs {:.2}x overall); {}",
            0.95 * cores as f64,
            parallel_note(t[0], t[1], cores)
        ));
        rows.push(row.target(">= 0.95x sha2 per core", per_core >= 0.95));
    }
    Ok(())
}

fn remove(p: &Path) {
    let _ = fs::remove_file(p);
}

fn sync_all_path(p: &Path) -> Res<()> {
    File::open(p)?.sync_all()?;
    Ok(())
}

/// (6) Raw writes of W1, without fsync and with fsync.
fn section_write_w1(a: &Args, w: &Workload, rows: &mut Vec<Row>) -> Res<()> {
    let out = a.dir.join("out");
    fs::create_dir_all(&out)?;
    let p_ours = out.join("w1.out.zt");
    let p_ref = out.join("w1.out.ref.zt");
    let p_st = out.join("w1.out.safetensors");
    let p_raw = out.join("w1.out.bin");
    let clean = || {
        for p in [&p_ours, &p_ref, &p_st, &p_raw] {
            remove(p);
        }
    };
    let raw = ztensor::WriteOptions::default();
    for fsync in [false, true] {
        eprintln!("W1: raw write{}", if fsync { " + fsync" } else { "" });
        // Before each timed call: remove the outputs and flush what is dirty, untimed.
        let setup = || -> Res<()> {
            clean();
            if fsync {
                // SAFETY: sync() takes no arguments and cannot fail.
                unsafe { libc::sync() };
            }
            Ok(())
        };
        let cases = vec![
            case("ours", || {
                if fsync {
                    write_ours(w, &p_ours, &raw) // create: temp file, fsync, rename, fsync dir
                } else {
                    write_ours_nosync(w, &p_ours, &raw)
                }
            })
            .setup(setup),
            case("ztensor-1.2.3 Writer", || {
                write_ref(w, &p_ref, ztensor_ref::Compression::Raw)?;
                if fsync {
                    sync_all_path(&p_ref)?;
                }
                Ok(())
            })
            .setup(setup),
            case("safetensors serialize_to_file", || {
                write_safetensors(w, &p_st)?;
                if fsync {
                    sync_all_path(&p_st)?;
                }
                Ok(())
            })
            .setup(setup),
            case("write() same bytes", || {
                let mut file = File::create(&p_raw)?;
                file.write_all(&w.data)?;
                if fsync {
                    file.sync_all()?;
                }
                Ok(())
            })
            .setup(setup),
        ];
        let labels = names_of(&cases);
        let t = measure(a.runs, cases)?;
        clean();
        let label = if fsync {
            "raw write (+fsync, all)"
        } else {
            "raw write (no fsync)"
        };
        let row = row_from(label, "W1", &labels, &t, true)
            .bytes(w.total())
            .note(if fsync {
                "ours: Writer::create (temp file, fsync, rename); the others fsync the file after writing"
            } else {
                "ours: Writer::new over a BufWriter<File>; nobody fsyncs"
            });
        let ahead = row.peers.iter().all(|p| p.1 > row.ours);
        let met = row.vs_limit().is_some_and(|r| r >= 0.9) && ahead;
        rows.push(row.target(">= 0.9x write() and ahead of both peers", met));
    }
    Ok(())
}

// ---- W3: zstd load, range reads, zstd write ----

/// The frames of a zstd stream: (compressed start, compressed length, decoded start,
/// decoded length).
fn zstd_frames(src: &[u8]) -> Res<Vec<(usize, usize, u64, u64)>> {
    let mut frames = Vec::new();
    let mut pos = 0usize;
    let mut decoded = 0u64;
    while pos < src.len() {
        let len = zstd::zstd_safe::find_frame_compressed_size(&src[pos..])
            .map_err(|c| format!("bad zstd frame at {pos}: code {c}"))?;
        let size = match zstd::zstd_safe::get_frame_content_size(&src[pos..pos + len]) {
            Ok(Some(s)) => s,
            _ => {
                // No recorded size: decode once to learn it (setup, untimed).
                let mut out = Vec::new();
                let mut d = zstd::stream::read::Decoder::with_buffer(&src[pos..pos + len])?;
                std::io::copy(&mut d, &mut out)?;
                out.len() as u64
            }
        };
        frames.push((pos, len, decoded, size));
        pos += len;
        decoded += size;
    }
    Ok(frames)
}

/// A check that a case's output buffer holds `expect`.
fn same_bytes<'a>(
    dst: &'a std::cell::RefCell<Vec<u8>>,
    expect: &'a [u8],
    who: &'static str,
) -> impl FnMut() -> Res<()> + 'a {
    move || {
        if dst.borrow()[..] != expect[..] {
            return Err(format!("{who} returned wrong bytes").into());
        }
        Ok(())
    }
}

fn section_w3(a: &Args, w: &Workload, f: &Files, rows: &mut Vec<Row>, cores: usize) -> Res<()> {
    let n = a.runs;
    let wl = w.id;
    let names: Vec<&str> = w.tensors.iter().map(|t| t.name.as_str()).collect();

    // Stored ranges of our file's components (the frames the limit decodes).
    let (stored, frames_per_component): (Vec<(usize, usize)>, Vec<usize>) = {
        let r = ztensor::Reader::open(&f.ours)?;
        let m = map(&f.ours)?;
        let mut st = Vec::new();
        let mut fr = Vec::new();
        for o in r.objects() {
            let c = &o.components()[0];
            let (off, len) = (c.offset() as usize, c.length() as usize);
            st.push((off, len));
            fr.push(zstd_frames(&m[off..off + len])?.len());
        }
        (st, fr)
    };
    let stored_total: usize = stored.iter().map(|s| s.1).sum();
    let frame_note = format!(
        "our file: {:.1} MiB stored for {:.1} MiB, zstd frames per component: {:?}",
        stored_total as f64 / MIB,
        w.total() as f64 / MIB,
        frames_per_component
    );

    // (4) zstd load into caller buffers.
    if a.wants("zstd") {
        eprintln!("W3: zstd load");
        let bufs = std::cell::RefCell::new(caller_buffers(w));
        let check = |who: &'static str| {
            let bufs = &bufs;
            move || -> Res<()> {
                check_buffers(w, &bufs.borrow(), who)?;
                scrub(&mut bufs.borrow_mut());
                Ok(())
            }
        };
        let cases = vec![
            case("ours", || {
                let r = ztensor::Reader::open(&f.ours)?;
                for (i, b) in bufs.borrow_mut().iter_mut().enumerate() {
                    r.read_into(i, 0, b)?;
                }
                Ok(())
            })
            .check(check("ours zstd")),
            case("ztensor-1.2.3 read() (allocates)", || {
                let r = ztensor_ref::Reader::open(&f.reference)?;
                let mut acc = 0usize;
                for name in &names {
                    acc = acc.wrapping_add(r.read(name, false)?.len());
                }
                black_box(acc);
                Ok(())
            }),
            case("zstd 1-thread decode, same frames", || {
                let m = map(&f.ours)?;
                let mut d = zstd::bulk::Decompressor::new()?;
                for (i, b) in bufs.borrow_mut().iter_mut().enumerate() {
                    let (off, len) = stored[i];
                    let got = d.decompress_to_buffer(&m[off..off + len], &mut b[..])?;
                    if got != b.len() {
                        return Err("short zstd decode".into());
                    }
                }
                Ok(())
            })
            .check(check("zstd limit")),
        ];
        let labels = names_of(&cases);
        let t = measure(n, cases)?;
        let row = row_from("zstd load into caller buffers", wl, &labels, &t, true)
            .bytes(w.total())
            .note(format!(
                "{frame_note}; {}",
                parallel_note(t[0], t[2], cores)
            ));
        let met = row.vs_limit().is_some_and(|r| r >= 1.7);
        rows.push(row.target(">= 1.7x 1-thread decode", met));
    }

    // (5) Range read: 1 MiB from the middle of each big zstd component.
    if a.wants("range") {
        eprintln!("W3: range reads");
        let r = ztensor::Reader::open(&f.ours)?;
        let m = map(&f.ours)?;
        let refr = ztensor_ref::Reader::open(&f.reference)?;
        for big in ["quant.big.weight", "sparse.big.weight"] {
            let i = r.find(big).ok_or("missing big tensor")?;
            let ti = w.by_name[big];
            let full_len = w.tensors[ti].len as u64;
            let want = (1u64 << 20).min(full_len / 4) as usize;
            let offset = (full_len / 2) & !4095;
            let end = offset + want as u64;
            let expect = &w.bytes(ti)[offset as usize..end as usize];
            // The limit decodes exactly the frames that overlap the range, single-threaded.
            let (off, len) = stored[i];
            let src = &m[off..off + len];
            let frames = zstd_frames(src)?;
            let needed: Vec<_> = frames
                .iter()
                .filter(|fr| fr.2 < end && fr.2 + fr.3 > offset)
                .copied()
                .collect();
            let needed_bytes: u64 = needed.iter().map(|fr| fr.3).sum();
            let dst_ours = std::cell::RefCell::new(vec![0u8; want]);
            let dst_limit = std::cell::RefCell::new(vec![0u8; want]);
            let dst_ref = std::cell::RefCell::new(vec![0u8; want]);
            let full = std::cell::RefCell::new(vec![0u8; full_len as usize]);
            let mut scratch = vec![0u8; needed.iter().map(|fr| fr.3).max().unwrap_or(0) as usize];
            let mut d = zstd::bulk::Decompressor::new()?;
            let same = |dst, who| same_bytes(dst, expect, who);
            let cases = vec![
                case("ours", || {
                    r.read_range(i, 0, offset, &mut dst_ours.borrow_mut())?;
                    Ok(())
                })
                .check(same(&dst_ours, "ours read_range")),
                case("ztensor-1.2.3 full read + slice", || {
                    let v = refr.read(big, false)?;
                    dst_ref
                        .borrow_mut()
                        .copy_from_slice(&v[offset as usize..end as usize]);
                    Ok(())
                })
                .check(same(&dst_ref, "ztensor-1.2.3")),
                case("ours full read_into (reference point)", || {
                    r.read_into(i, 0, &mut full.borrow_mut())?;
                    Ok(())
                }),
                case("zstd 1-thread, only the needed frames", || {
                    let mut dst = dst_limit.borrow_mut();
                    let mut filled = 0usize;
                    for &(cs, cl, ds, dl) in &needed {
                        let got =
                            d.decompress_to_buffer(&src[cs..cs + cl], &mut scratch[..dl as usize])?;
                        let lo = offset.max(ds);
                        let hi = end.min(ds + got as u64);
                        let part = (hi - lo) as usize;
                        dst[filled..filled + part]
                            .copy_from_slice(&scratch[(lo - ds) as usize..(hi - ds) as usize]);
                        filled += part;
                    }
                    Ok(())
                })
                .check(same(&dst_limit, "range limit")),
            ];
            let labels = names_of(&cases);
            let t = measure(n, cases)?;
            let (ours, full_time) = (t[0].secs, t[2].secs);
            let est = (ours / full_time * full_len as f64).min(full_len as f64);
            let kind = big.split('.').next().unwrap_or(big);
            let row = Row::new(&format!("range read 1 MiB ({kind})"), wl, "s", ours)
                .cpu(t[0].cpu)
                .peer(labels[1], t[1].secs)
                .limit(labels[3], t[3].secs)
                .bytes(want as u64)
                .note(format!(
                    "component {:.1} MiB in {} frame(s); needed frames hold {:.2} MiB; ours full read_into {}; \
                     bytes ours decodes, estimated from time: {:.1} MiB",
                    full_len as f64 / MIB,
                    frames.len(),
                    needed_bytes as f64 / MIB,
                    fmt_val("s", full_time),
                    est / MIB
                ));
            let met = frames.len() > 1 && row.vs_limit().is_some_and(|x| x >= 1.0 / 1.5);
            rows.push(row.target(
                "decodes only the needed frames (<= 1.5x their 1-thread decode, >1 frame)",
                met,
            ));
        }
    }

    // (6b) zstd write of W3.
    if a.wants("write") {
        eprintln!("W3: zstd write");
        let out = a.dir.join("out");
        fs::create_dir_all(&out)?;
        let p_ours = out.join("w3.out.zt");
        let p_ref = out.join("w3.out.ref.zt");
        let setup = || -> Res<()> {
            remove(&p_ours);
            remove(&p_ref);
            Ok(())
        };
        let opts = ztensor::WriteOptions::zstd(3);
        let cases = vec![
            case("ours", || write_ours_nosync(w, &p_ours, &opts)).setup(setup),
            case("ztensor-1.2.3 Writer zstd(3)", || {
                write_ref(w, &p_ref, ztensor_ref::Compression::Zstd(3))
            })
            .setup(setup),
            case("zstd::bulk::compress 1-thread (memory only)", || {
                let mut acc = 0usize;
                for i in 0..w.tensors.len() {
                    acc += zstd::bulk::compress(w.bytes(i), 3)?.len();
                }
                black_box(acc);
                Ok(())
            }),
        ];
        let labels = names_of(&cases);
        let t = measure(n, cases)?;
        setup()?;
        let row = row_from("zstd-3 write (no fsync)", wl, &labels, &t, true)
            .bytes(w.total())
            .note(format!(
                "ours: Writer::new over a BufWriter<File>; the limit writes nothing; {}",
                parallel_note(t[0], t[2], cores)
            ));
        let met = row.vs_limit().is_some_and(|r| r >= 1.7);
        rows.push(row.target(">= 1.7x 1-thread compress", met));
    }
    Ok(())
}

// ---- (8) Memory, each case in a child process ----

fn run_child(args: &[&str]) -> Res<HashMap<String, f64>> {
    let exe = std::env::current_exe()?;
    let out = Command::new(exe).arg("__child").args(args).output()?;
    if !out.status.success() {
        return Err(format!(
            "child {args:?} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        )
        .into());
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("RESULT "))
        .ok_or("child printed no RESULT line")?;
    let mut m = HashMap::new();
    for kv in line["RESULT ".len()..].split_whitespace() {
        if let Some((k, v)) = kv.split_once('=') {
            m.insert(k.to_owned(), v.parse::<f64>()?);
        }
    }
    Ok(m)
}

fn section_memory(a: &Args, rows: &mut Vec<Row>) -> Res<()> {
    let size: u64 = if a.quick { 256 << 20 } else { 4 << 30 };
    let raw_path = a.dir.join("mem.raw.zt");
    let zstd_path = a.dir.join("mem.zstd.zt");
    let size_s = size.to_string();
    let label = if a.quick { "256 MiB" } else { "4 GiB" };

    eprintln!("memory: streaming raw write of {label}");
    let raw = run_child(&[
        "stream-write",
        "raw",
        raw_path.to_str().ok_or("path")?,
        &size_s,
    ])?;
    remove(&raw_path);
    eprintln!("memory: streaming zstd write of {label}");
    let z = run_child(&[
        "stream-write",
        "zstd",
        zstd_path.to_str().ok_or("path")?,
        &size_s,
    ])?;
    eprintln!("memory: zstd read of {label} into a caller buffer (mmap, then pread)");
    let rd_mmap = run_child(&["zstd-read", zstd_path.to_str().ok_or("path")?, "mmap"])?;
    let rd_pread = run_child(&["zstd-read", zstd_path.to_str().ok_or("path")?, "pread"])?;
    if !a.keep {
        remove(&zstd_path);
    }

    for (kind, m) in [("raw", &raw), ("zstd-3", &z)] {
        let peak = m["hwm_kib"] / 1024.0;
        let row = Row::new(
            &format!("peak RSS: stream {kind} write"),
            label,
            "MiB",
            peak,
        )
        .limit("budget", RSS_BUDGET_MIB)
        .cpu(m["cpu"])
        .note(format!(
            "VmHWM of the whole process; before writing {:.1} MiB; {:.2} s, {:.0} MiB stored",
            m["hwm_before_kib"] / 1024.0,
            m["secs"],
            m["stored"] / MIB
        ));
        let met = peak < RSS_BUDGET_MIB;
        rows.push(row.target("< 64 MiB peak RSS", met));
    }
    for (mode, rd) in [("mmap", &rd_mmap), ("pread", &rd_pread)] {
        let extra = rd["extra_kib"] / 1024.0;
        let row = Row::new(
            &format!("RSS beyond buf: zstd read ({mode})"),
            label,
            "MiB",
            extra,
        )
        .limit("budget", RSS_BUDGET_MIB)
        .cpu(rd["cpu"])
        .note(format!(
            "VmHWM after minus VmRSS with the buffer resident; sampled peaks over that baseline: \
             anonymous {:.1} MiB, file-backed (mapped stored bytes) {:.1} MiB; stored {:.0} MiB; {:.2} s",
            rd["anon_peak_kib"] / 1024.0,
            rd["file_peak_kib"] / 1024.0,
            rd["stored"] / MIB,
            rd["secs"]
        ));
        let met = extra < RSS_BUDGET_MIB;
        rows.push(row.target("< 64 MiB beyond the buffer", met));
    }
    Ok(())
}

fn status_kib(field: &str) -> u64 {
    fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse().ok())
        })
        .unwrap_or(0)
}

/// Samples RssAnon and RssFile every millisecond until stopped; returns their maxima.
struct Sampler {
    stop: Arc<AtomicBool>,
    anon: Arc<AtomicU64>,
    file: Arc<AtomicU64>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Sampler {
    fn start() -> Sampler {
        let stop = Arc::new(AtomicBool::new(false));
        let anon = Arc::new(AtomicU64::new(0));
        let file = Arc::new(AtomicU64::new(0));
        let (s, an, fi) = (stop.clone(), anon.clone(), file.clone());
        let handle = std::thread::spawn(move || {
            while !s.load(Ordering::Relaxed) {
                an.fetch_max(status_kib("RssAnon:"), Ordering::Relaxed);
                fi.fetch_max(status_kib("RssFile:"), Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        Sampler {
            stop,
            anon,
            file,
            handle: Some(handle),
        }
    }
    fn finish(mut self) -> (u64, u64) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        (
            self.anon.load(Ordering::Relaxed),
            self.file.load(Ordering::Relaxed),
        )
    }
}

fn child(args: &[String]) -> Res<()> {
    match args {
        [cmd, kind, path, size] if cmd == "stream-write" => {
            let size: u64 = size.parse()?;
            let path = Path::new(path);
            let opts = match kind.as_str() {
                "raw" => ztensor::WriteOptions::default(),
                "zstd" => ztensor::WriteOptions::zstd(3),
                other => return Err(format!("unknown kind {other}").into()),
            };
            let chunk_len = 4usize << 20;
            let mut chunk = vec![0u8; chunk_len];
            let hwm_before = status_kib("VmHWM:");
            let c0 = cpu_seconds();
            let t = Instant::now();
            let mut w = ztensor::Writer::create(path)?;
            w.begin_object("big", "dense", &[size])?;
            w.begin_component("data", ztensor::DType::I8, None, &opts)?;
            let mut done = 0u64;
            let mut k = 0u64;
            while done < size {
                let n = (size - done).min(chunk_len as u64) as usize;
                fill(Fill::QuantI8, 0x3e3 ^ k, &mut chunk[..n]);
                w.write(&chunk[..n])?;
                done += n as u64;
                k += 1;
            }
            w.end_component()?;
            w.end_object()?;
            w.finish()?;
            let secs = t.elapsed().as_secs_f64();
            let stored = fs::metadata(path)?.len();
            println!(
                "RESULT hwm_kib={} hwm_before_kib={hwm_before} secs={secs} stored={stored} cpu={}",
                status_kib("VmHWM:"),
                (cpu_seconds() - c0) / secs
            );
            Ok(())
        }
        [cmd, path, mode] if cmd == "zstd-read" => {
            let opts = ztensor::OpenOptions {
                use_mmap: mode == "mmap",
                ..Default::default()
            };
            let r = ztensor::Reader::open_with(path, &opts)?;
            let c = &r.object(0)?.components()[0];
            let len = c.decoded_length() as usize;
            let stored = c.length();
            let mut buf = vec![0u8; len];
            // Make every page of the buffer resident before the baseline.
            for p in buf.chunks_mut(4096) {
                p[0] = 1;
            }
            let base_rss = status_kib("VmRSS:");
            let base_anon = status_kib("RssAnon:");
            let base_file = status_kib("RssFile:");
            let sampler = Sampler::start();
            let c0 = cpu_seconds();
            let t = Instant::now();
            r.read_into(0, 0, &mut buf)?;
            let secs = t.elapsed().as_secs_f64();
            let cpu = (cpu_seconds() - c0) / secs;
            let (anon, file) = sampler.finish();
            let hwm = status_kib("VmHWM:");
            // A spot check that the data arrived: the generator's first chunk.
            let mut first = vec![0u8; (4usize << 20).min(len)];
            fill(Fill::QuantI8, 0x3e3, &mut first);
            if buf[..first.len()] != first[..] {
                return Err("zstd read returned wrong bytes".into());
            }
            println!(
                "RESULT extra_kib={} anon_peak_kib={} file_peak_kib={} secs={secs} stored={stored} cpu={cpu}",
                hwm.saturating_sub(base_rss),
                anon.saturating_sub(base_anon),
                file.saturating_sub(base_file)
            );
            Ok(())
        }
        [cmd, what, path, iters] if cmd == "loop" => {
            // A profiling aid: one of ours' operations in a loop, nothing else in the profile.
            let iters: u64 = iters.parse()?;
            let t = Instant::now();
            for _ in 0..iters {
                let r = ztensor::Reader::open(path)?;
                match what.as_str() {
                    "open" => {
                        let mut acc = 0u64;
                        for o in r.objects() {
                            let c = &o.components()[0];
                            acc = acc.wrapping_add(o.name().len() as u64 + c.offset());
                        }
                        black_box(acc);
                    }
                    "load" => {
                        for i in 0..r.objects().len() {
                            let mut b =
                                vec![0u8; r.objects()[i].components()[0].decoded_length() as usize];
                            r.read_into(i, 0, &mut b)?;
                            black_box(&b);
                        }
                    }
                    "verify" => r.verify()?,
                    other => return Err(format!("unknown loop '{other}'").into()),
                }
            }
            println!(
                "RESULT secs_per_iter={}",
                t.elapsed().as_secs_f64() / iters.max(1) as f64
            );
            Ok(())
        }
        _ => Err(
            "usage: __child stream-write raw|zstd PATH SIZE | __child zstd-read PATH mmap|pread \
                  | __child loop open|load|verify PATH ITERS"
                .into(),
        ),
    }
}
