//! The byte transformations between stored and decoded bytes, as pure functions of bytes:
//! zstd frames (`frames`) and digests (`digest`).

pub(crate) mod digest;
pub(crate) mod frames;

pub use digest::{DigestAlgorithm, hex_lower};
pub(crate) use frames::*;
pub use frames::{ZSTD_FRAME_SIZE, zstd_level_range};

/// Worker threads for compression, decompression and verification.
pub(crate) fn threads() -> usize {
    std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(16)
}
