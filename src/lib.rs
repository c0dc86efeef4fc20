//! # ztensor
//!
//! Reads zTensor files (v1.2.0, v1.1.0 and legacy v0.1.0) and writes v1.2.0, with a C ABI
//! (`include/ztensor.h`) over the same API.
//!
//! ```
//! use ztensor::{DType, Reader, WriteOptions, Writer};
//!
//! let mut w = Writer::new(Vec::new()).unwrap();
//! let values: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
//! w.add("w", DType::F32, &[2, 2], &values, &WriteOptions::default()).unwrap();
//! let bytes = w.finish().unwrap();
//!
//! let r = Reader::from_slice(&bytes).unwrap();
//! let i = r.find("w").unwrap();
//! let view = r.view(i, 0).unwrap();
//! assert_eq!(view.data, &values[..]);
//! ```
//!
//! What is checked when: `open` decodes and validates the whole manifest (structure, types,
//! bounds, alignment, overlap, sizes against shapes, sparse component sizes); data bytes
//! are only touched on access: zstd integrity and exact decoded length when decoded,
//! digests by `verify`, sparse index values and bool bytes by `validate_values`.

// The layers, bottom to top (docs/architecture.md, checked by tests/architecture.rs):
// error, limits, dtype, buffer, value; pool; quant, convert; codec; source;
// model; decode; formats; sets; verify; reader; batch, load; writer; ffi.
mod batch;
mod buffer;
mod codec;
pub mod convert;
mod decode;
pub mod dtype;
mod error;
pub mod ffi;
pub(crate) mod formats;
mod limits;
pub mod load;
mod model;
pub mod pool;
pub mod quant;
mod reader;
mod sets;
mod source;
mod value;
mod verify;
mod writer;

pub use codec::{
    DigestAlgorithm, FrameIndex, FrameSpan, ZSTD_FRAME_SIZE, hex_lower, zstd_level_range,
};
pub use dtype::DType;
pub use error::{Error, ErrorKind, Result};
pub use formats::ztensor::manifest::WRITE_VERSION;
pub use formats::ztensor::{ALIGNMENT, MAGIC_V1};
pub use formats::ztensor_v01::MAGIC_V01;
pub use limits::{Limits, MAX_CBOR_DEPTH};
pub use load::{Loader, LoaderOptions, ReadMode};
pub use model::schema::ObjectKind;
pub use model::{Attributes, Component, Container, Encoding, Object};
pub use reader::{Layout, OpenOptions, QuantInfo, Reader, View};
pub use source::RemoteOptions;
#[cfg(feature = "remote")]
pub use source::TransferStats;
pub use typed::{AttrScalar, AttrValue, TypedValue, ValueType};
pub use value::{cbor, json, typed};
pub use writer::{
    CopyOptions, CreateOptions, FileVersion, OutputFormat, Placement, ShardedWriter, WriteOptions,
    Writer, ggml_block_type, safetensors_dtype,
};
