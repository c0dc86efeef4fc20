//! The decode pipeline formats declare: how a component's bytes are made from its blob.
//!
//! A component's bytes are its blob's stored bytes, decoded by the blob's encoding (raw,
//! or zstd frames), then passed through the component's `steps` in order. zTensor v1
//! files need no steps. A format whose files need more says so with steps: byte swaps
//! and slices of the decoded blob are built in (legacy big-endian and single-blob sparse
//! layouts); anything particular to one format is a `FormatStep` that the format
//! implements in its own module (legacy COO records, Tensogram's packing pipeline). So a
//! new quirk is a step, and the reader never asks which format a file came from.
//! `decode` applies them.

use std::sync::Arc;

use crate::error::{Result, bail};
use crate::model::Component;

/// One step from the decoded blob toward the component's bytes.
#[derive(Clone, Debug)]
pub(crate) enum Step {
    /// Reverse the bytes of each element of this many bytes (big-endian data).
    SwapBytes(u8),
    /// Keep the bytes `[start, start + len)` of the input.
    Slice { start: u64, len: u64 },
    /// A transformation particular to one format, implemented in its module.
    Format(Arc<dyn FormatStep>),
}

/// A format's own step. Implementations are immutable and shared between threads.
pub(crate) trait FormatStep: Send + Sync + std::fmt::Debug {
    /// Writes the step's output for `input` into `out` (exactly `output_len` bytes). A
    /// pipeline this build can't decode is `Unsupported`, naming the codec.
    fn apply(&self, input: &[u8], out: &mut [u8]) -> Result<()>;
    /// The bytes this step produces.
    fn output_len(&self) -> u64;
}

/// A component's steps; empty (no allocation, one null pointer) for nearly every component.
#[derive(Clone, Debug, Default)]
pub(crate) struct Steps(Option<Box<Box<[Step]>>>);

impl From<Vec<Step>> for Steps {
    fn from(steps: Vec<Step>) -> Steps {
        Steps((!steps.is_empty()).then(|| Box::new(steps.into_boxed_slice())))
    }
}

impl std::ops::Deref for Steps {
    type Target = [Step];
    fn deref(&self) -> &[Step] {
        self.0.as_deref().map_or(&[], |s| &**s)
    }
}

/// Checks that a component's steps fit its blob: each slice inside its input, each swap
/// a whole number of elements, and the last output exactly the component's decoded length.
#[inline]
pub(crate) fn check_steps(c: &Component) -> Result<()> {
    if c.steps.is_empty() && c.blob.decoded_length == c.decoded_length {
        return Ok(());
    }
    let mut len = c.blob.decoded_length;
    for step in c.steps.iter() {
        len = match step {
            Step::SwapBytes(w) if !len.is_multiple_of(u64::from((*w).max(1))) => {
                bail!(
                    Format,
                    "{len} bytes are not a whole number of {w}-byte elements"
                )
            }
            Step::SwapBytes(_) => len,
            Step::Slice { start, len: n } => {
                if start.checked_add(*n).is_none_or(|end| end > len) {
                    bail!(
                        Format,
                        "bytes [{start}, {start} + {n}) lie outside the {len}-byte blob"
                    );
                }
                *n
            }
            Step::Format(f) => f.output_len(),
        };
    }
    if len != c.decoded_length {
        bail!(
            Format,
            "the blob's {len} decoded bytes do not make the component's {}",
            c.decoded_length
        );
    }
    Ok(())
}
