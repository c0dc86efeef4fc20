//! The workloads, generated deterministically: W1 (a small Llama-style model in bf16), W2 (many
//! small tensors of mixed dtypes) and W3 (compressible data for the zstd sections).

use std::collections::HashMap;

use crate::datagen::{Fill, Rng, fill, fingerprint, fnv};

/// Bump when the generators or the layouts change: every data file is then rewritten.
pub const GEN_VERSION: &str = "gen-v2";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Dt {
    BF16,
    F16,
    F32,
    I32,
    I8,
}

impl Dt {
    pub fn size(self) -> usize {
        match self {
            Dt::BF16 | Dt::F16 => 2,
            Dt::F32 | Dt::I32 => 4,
            Dt::I8 => 1,
        }
    }
    pub fn ours(self) -> ztensor::DType {
        match self {
            Dt::BF16 => ztensor::DType::BF16,
            Dt::F16 => ztensor::DType::F16,
            Dt::F32 => ztensor::DType::F32,
            Dt::I32 => ztensor::DType::I32,
            Dt::I8 => ztensor::DType::I8,
        }
    }
    pub fn reference(self) -> ztensor_ref::DType {
        match self {
            Dt::BF16 => ztensor_ref::DType::BF16,
            Dt::F16 => ztensor_ref::DType::F16,
            Dt::F32 => ztensor_ref::DType::F32,
            Dt::I32 => ztensor_ref::DType::I32,
            Dt::I8 => ztensor_ref::DType::I8,
        }
    }
    pub fn safetensors(self) -> safetensors::Dtype {
        match self {
            Dt::BF16 => safetensors::Dtype::BF16,
            Dt::F16 => safetensors::Dtype::F16,
            Dt::F32 => safetensors::Dtype::F32,
            Dt::I32 => safetensors::Dtype::I32,
            Dt::I8 => safetensors::Dtype::I8,
        }
    }
    pub fn gguf(self) -> u32 {
        match self {
            Dt::F32 => 0,
            Dt::F16 => 1,
            Dt::I8 => 24,
            Dt::I32 => 26,
            Dt::BF16 => 30,
        }
    }
}

pub struct TSpec {
    pub name: String,
    pub dt: Dt,
    pub shape: Vec<u64>,
    pub fill: Fill,
    /// Byte range in the workload's contiguous data.
    pub start: usize,
    pub len: usize,
}

/// A workload: tensors whose bytes lie back to back in one buffer.
pub struct Workload {
    pub id: &'static str,
    pub tensors: Vec<TSpec>,
    pub data: Vec<u8>,
    /// Fingerprint of each tensor's bytes.
    pub prints: Vec<u64>,
    pub by_name: HashMap<String, usize>,
}

impl Workload {
    pub fn bytes(&self, i: usize) -> &[u8] {
        let t = &self.tensors[i];
        &self.data[t.start..t.start + t.len]
    }
    /// The tensors' names, in order.
    pub fn names(&self) -> Vec<&str> {
        self.tensors.iter().map(|t| t.name.as_str()).collect()
    }
    pub fn total(&self) -> u64 {
        self.data.len() as u64
    }
    /// A short description for the stamp files.
    pub fn spec(&self) -> String {
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
        let (w, n) = (Fill::WeightBf16, Fill::NormBf16);
        for (part, shape, fill) in [
            ("input_layernorm", vec![hidden], n),
            ("self_attn.q_proj", vec![hidden, hidden], w),
            ("self_attn.k_proj", vec![kv, hidden], w),
            ("self_attn.v_proj", vec![kv, hidden], w),
            ("self_attn.o_proj", vec![hidden, hidden], w),
            ("post_attention_layernorm", vec![hidden], n),
            ("mlp.gate_proj", vec![inter, hidden], w),
            ("mlp.up_proj", vec![inter, hidden], w),
            ("mlp.down_proj", vec![hidden, inter], w),
        ] {
            s.push((
                format!("model.layers.{l}.{part}.weight"),
                Dt::BF16,
                shape,
                fill,
            ));
        }
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

/// Generates a workload; the argument is `--quick`.
pub type Generator = fn(bool) -> Workload;

/// Every workload with its generator, in the order in which they are generated and measured:
/// a workload is generated only when a wanted section measures it.
pub const ALL: [(&str, Generator); 3] = [("W2", w2), ("W1", w1), ("W3", w3)];
