//! Writes the legacy (v0.1.0, "ZTEN0001") vectors that the Python 0.1.4 API
//! cannot produce: zstd, crc32c checksums, big-endian data, custom per-tensor
//! fields, true rank-0 shapes and the two sparse layouts.
//!
//! Usage: cargo run --release -- OUTDIR
//!
//! The values written here are mirrored in make_vectors.py (RUST_LEGACY table),
//! which writes the matching X.json expectations. Keep the two in sync.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_cbor::Value;
use ztensor::models::ChecksumAlgorithm;
use ztensor::{DType, DataEndianness, Encoding, Layout, ZTensorWriter};

type Res = Result<(), Box<dyn std::error::Error>>;

fn le<T: Copy, const N: usize>(vals: &[T], f: impl Fn(T) -> [u8; N]) -> Vec<u8> {
    vals.iter().flat_map(|v| f(*v)).collect()
}

fn f32s(v: &[f32]) -> Vec<u8> {
    le(v, f32::to_ne_bytes)
}
fn f64s(v: &[f64]) -> Vec<u8> {
    le(v, f64::to_ne_bytes)
}

struct T<'a> {
    name: &'a str,
    shape: Vec<u64>,
    dtype: DType,
    layout: Layout,
    encoding: Encoding,
    data: Vec<u8>,
    endian: Option<DataEndianness>,
    checksum: ChecksumAlgorithm,
    custom: Option<BTreeMap<String, Value>>,
}

impl<'a> T<'a> {
    fn dense(name: &'a str, shape: &[u64], dtype: DType, data: Vec<u8>) -> Self {
        T {
            name,
            shape: shape.to_vec(),
            dtype,
            layout: Layout::Dense,
            encoding: Encoding::Raw,
            data,
            endian: None,
            checksum: ChecksumAlgorithm::None,
            custom: None,
        }
    }
    fn zstd(mut self) -> Self {
        self.encoding = Encoding::Zstd;
        self
    }
    fn crc(mut self) -> Self {
        self.checksum = ChecksumAlgorithm::Crc32c;
        self
    }
    fn big(mut self) -> Self {
        self.endian = Some(DataEndianness::Big);
        self
    }
}

fn write(dir: &Path, file: &str, tensors: Vec<T>) -> Res {
    let path: PathBuf = dir.join(file);
    let mut w = ZTensorWriter::create(&path)?;
    for t in tensors {
        w.add_tensor(
            t.name, t.shape, t.dtype, t.layout, t.encoding, t.data, t.endian, t.checksum, t.custom,
        )?;
    }
    let n = w.finalize()?;
    println!("wrote {} ({} bytes)", path.display(), n);
    Ok(())
}

fn main() -> Res {
    let out = std::env::args().nth(1).expect("usage: gen_legacy_rust OUTDIR");
    let dir = Path::new(&out);
    std::fs::create_dir_all(dir)?;

    // zstd: f32 [4,8] = i*0.25 - 4, u8 [40] = (i*7) % 256, f32 [0] (empty frame)
    let w: Vec<f32> = (0..32).map(|i| i as f32 * 0.25 - 4.0).collect();
    let b: Vec<u8> = (0..40u32).map(|i| ((i * 7) % 256) as u8).collect();
    write(
        dir,
        "v01_rust_zstd.zt",
        vec![
            T::dense("w", &[4, 8], DType::Float32, f32s(&w)).zstd(),
            T::dense("b", &[40], DType::Uint8, b).zstd(),
            T::dense("empty", &[0], DType::Float32, vec![]).zstd(),
        ],
    )?;

    // crc32c over raw bytes: i32 [3,4] = i*1000 - 5000
    let x: Vec<i32> = (0..12).map(|i| i * 1000 - 5000).collect();
    write(
        dir,
        "v01_rust_crc32c.zt",
        vec![T::dense("x", &[3, 4], DType::Int32, le(&x, i32::to_ne_bytes)).crc()],
    )?;

    // crc32c over the zstd frame: f64 [10] = i*1.5
    let y: Vec<f64> = (0..10).map(|i| i as f64 * 1.5).collect();
    write(
        dir,
        "v01_rust_zstd_crc32c.zt",
        vec![T::dense("y", &[10], DType::Float64, f64s(&y)).zstd().crc()],
    )?;

    // big-endian raw data, one tensor per dtype (values given natively; the
    // writer swaps them to big-endian on disk).
    let f16_bits: [u16; 3] = [0x3C00, 0xC000, 0x7BFF]; // 1.0, -2.0, 65504
    let bf16_bits: [u16; 3] = [0x3F80, 0xC000, 0x7F7F]; // 1.0, -2.0, max
    write(
        dir,
        "v01_rust_bigendian.zt",
        vec![
            T::dense("be_f64", &[3], DType::Float64, f64s(&[1.5, -2.25, 1e300])).big(),
            T::dense("be_f32", &[2, 2], DType::Float32, f32s(&[1.0, -0.5, 3.25, 65504.0])).big(),
            T::dense("be_f16", &[3], DType::Float16, le(&f16_bits, u16::to_ne_bytes)).big(),
            T::dense("be_bf16", &[3], DType::BFloat16, le(&bf16_bits, u16::to_ne_bytes)).big(),
            T::dense("be_i64", &[2], DType::Int64, le(&[-2i64, 0x0102030405060708], i64::to_ne_bytes)).big(),
            T::dense("be_i32", &[3], DType::Int32, le(&[-1i32, 0x01020304, 7], i32::to_ne_bytes)).big(),
            T::dense("be_i16", &[3], DType::Int16, le(&[-2i16, 0x0102, 300], i16::to_ne_bytes)).big(),
            T::dense("be_u64", &[2], DType::Uint64, le(&[0x0102030405060708u64, u64::MAX], u64::to_ne_bytes)).big(),
            T::dense("be_u32", &[2], DType::Uint32, le(&[0xDEADBEEFu32, 1], u32::to_ne_bytes)).big(),
            T::dense("be_u16", &[2], DType::Uint16, le(&[0xABCDu16, 2], u16::to_ne_bytes)).big(),
            // single-byte types: the writer records no data_endianness for these
            T::dense("be_u8", &[3], DType::Uint8, vec![1, 2, 255]).big(),
            T::dense("be_i8", &[2], DType::Int8, vec![0x80, 0x7F]).big(),
            T::dense("be_bool", &[2], DType::Bool, vec![1, 0]).big(),
        ],
    )?;

    // custom per-tensor fields (flattened into the tensor map)
    let mut custom = BTreeMap::new();
    custom.insert("author".to_string(), Value::Text("zt-vectors".into()));
    custom.insert("count".to_string(), Value::Integer(42));
    custom.insert("neg".to_string(), Value::Integer(-7));
    custom.insert("ratio".to_string(), Value::Float(0.5));
    custom.insert("pi".to_string(), Value::Float(3.14159));
    custom.insert("flag".to_string(), Value::Bool(true));
    custom.insert("nothing".to_string(), Value::Null);
    custom.insert(
        "list".to_string(),
        Value::Array(vec![Value::Integer(1), Value::Text("two".into()), Value::Float(3.0)]),
    );
    let mut nested = BTreeMap::new();
    nested.insert(Value::Text("k".into()), Value::Text("v".into()));
    nested.insert(Value::Text("n".into()), Value::Integer(1));
    custom.insert("nested".to_string(), Value::Map(nested));
    custom.insert("blob".to_string(), Value::Bytes(vec![0xDE, 0xAD, 0xBE, 0xEF]));
    let mut t = T::dense("t", &[2], DType::Float32, f32s(&[1.0, 2.0]));
    t.custom = Some(custom);
    let mut t2 = T::dense("u", &[1], DType::Uint8, vec![9]);
    let mut c2 = BTreeMap::new();
    c2.insert("role".to_string(), Value::Text("second".into()));
    t2.custom = Some(c2);
    write(dir, "v01_rust_custom_fields.zt", vec![t, t2])?;

    // true rank-0 tensor (shape []), which the Python 0.1.4 API cannot write
    write(
        dir,
        "v01_rust_scalar.zt",
        vec![T::dense("s", &[], DType::Float32, f32s(&[3.5]))],
    )?;

    // Sparse layouts. The 0.1.0 writer has no sparse API: add_tensor takes any
    // layout but insists that the blob is numel(shape) * dtype_size bytes.
    // These shapes/nnz are chosen so that the sparse blob has exactly that size.
    //
    // COO blob = nnz records of [ndim x u64 LE index][value]:
    //   f64 [2,3], nnz 2: 2 * (2*8 + 8) = 48 = 6 * 8
    let mut coo = Vec::new();
    for (idx, v) in [([0u64, 1u64], 1.5f64), ([1, 2], -2.0)] {
        for i in idx {
            coo.extend_from_slice(&i.to_le_bytes());
        }
        coo.extend_from_slice(&v.to_le_bytes());
    }
    let mut t = T::dense("coo", &[2, 3], DType::Float64, coo);
    t.layout = Layout::SparseCoo;
    write(dir, "v01_rust_sparse_coo.zt", vec![t])?;

    // CSR blob = [indptr u64 x rows+1][indices u64 x nnz][values x nnz]:
    //   f64 [3,4], nnz 4: 4*8 + 4*8 + 4*8 = 96 = 12 * 8
    let mut csr = Vec::new();
    for p in [0u64, 1, 3, 4] {
        csr.extend_from_slice(&p.to_le_bytes());
    }
    for i in [2u64, 0, 3, 1] {
        csr.extend_from_slice(&i.to_le_bytes());
    }
    for v in [1.0f64, 2.0, 3.0, 4.0] {
        csr.extend_from_slice(&v.to_le_bytes());
    }
    let mut t = T::dense("csr", &[3, 4], DType::Float64, csr);
    t.layout = Layout::SparseCsr;
    write(dir, "v01_rust_sparse_csr.zt", vec![t])?;

    Ok(())
}
