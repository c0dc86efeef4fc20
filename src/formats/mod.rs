//! Other tensor file formats, read into the same model as zTensor files so that the C
//! API, the C++ wrapper and the CLI never learn which format a file was. Each format
//! recognises itself by its first bytes (`detect`) and parses its own header or index
//! (`parse`); data bytes stay where the file has them, so raw tensors are zero-copy.

use std::borrow::Cow;

mod gguf;
mod safetensors;

use crate::error::{Result, bail};
use crate::limits::Limits;
use crate::model::{Container, Model};

mod tensogram;

/// Reads `len` bytes at `offset` of the file: borrowed from the mapping or caller's
/// memory, or read with `pread`. A range past the end of the file is a `Format` error.
/// Parsers must bound `len` by the limits before asking (it is allocated when the file
/// is not in memory).
pub(crate) type ReadAt<'s> = dyn Fn(u64, u64) -> Result<Cow<'s, [u8]>> + 's;

/// The format of a file that is not zTensor, from its first (up to 16) bytes.
pub(crate) fn detect(head: &[u8]) -> Option<Container> {
    if head.starts_with(b"GGUF") {
        return Some(Container::Gguf);
    }
    if head.starts_with(b"TENSOGRM") {
        return Some(Container::Tensogram);
    }
    // safetensors: u64 little-endian header length, then a JSON object.
    if head.len() >= 9 {
        let n = u64::from_le_bytes(head[..8].try_into().expect("8 bytes"));
        // A length past the end still says safetensors: the parser reports the truncation.
        if n >= 2 && head[8] == b'{' {
            return Some(Container::Safetensors);
        }
    }
    None
}

/// Parses a file of a detected format into a model. Returns the model and the end of
/// the region its blobs may occupy (for `model::validate`).
pub(crate) fn parse(
    container: Container,
    read: &ReadAt<'_>,
    size: u64,
    limits: &Limits,
) -> Result<(Model, u64)> {
    match container {
        Container::ZTensor => bail!(Internal, "zTensor files are not parsed here"),
        Container::Safetensors => safetensors::parse(read, size, limits),
        Container::Gguf => gguf::parse(read, size, limits),
        Container::Tensogram => tensogram::parse(read, size, limits),
    }
}
