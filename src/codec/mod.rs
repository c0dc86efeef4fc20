//! The byte transformations between stored and decoded bytes, as pure functions of bytes:
//! zstd frames (`frames`), the writer's compression pipeline (`compress`), the seek table at the end of multi-frame streams
//! (`seek_table`), the frame index built from it or from the frame headers (`frame_index`),
//! streaming decode (`stream`), digests (`digest`) and byte order.

pub(crate) mod compress;
pub(crate) mod digest;
pub(crate) mod frame_index;
pub(crate) mod frames;
pub(crate) mod seek_table;
pub(crate) mod stream;

pub use digest::{DigestAlgorithm, hex_lower};
pub use frame_index::{FrameIndex, FrameSpan};
pub(crate) use frames::*;
pub use frames::{ZSTD_FRAME_SIZE, zstd_level_range};

/// Reverses the bytes of each `width`-byte element.
pub(crate) fn swap_in_place(bytes: &mut [u8], width: u8) {
    if width > 1 {
        for chunk in bytes.chunks_exact_mut(width as usize) {
            chunk.reverse();
        }
    }
}
