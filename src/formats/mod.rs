//! Every file format this library reads, each a peer behind the same interface: it
//! recognises itself by its first bytes (`detect`), parses its header, manifest or index
//! into the one model (`parse`), and declares how each component's stored bytes decode
//! (`decode::Step`) and what its files guarantee (`model::Traits`). Data bytes stay where
//! the file has them, so raw tensors are zero-copy. The reader, the C API, the C++
//! wrapper and the CLI never learn which format a file was.
//!
//! A new format is a new module here and one row in `FORMATS`.

use std::borrow::Cow;

pub(crate) mod gguf;
mod npy;
mod onnx;
mod pickle;
mod protobuf;
mod pytorch;
mod safetensors;
mod strided;
mod tensogram;
mod zip;
pub(crate) mod ztensor;
pub(crate) mod ztensor_v01;
pub(crate) mod ztensor_v2;

use crate::error::{Result, bail};
use crate::limits::Limits;
use crate::model::{Container, Model, Traits, validate};

/// Reads `len` bytes at `offset` of the file: borrowed from the mapping or caller's
/// memory, or read with `pread`. A range past the end of the file is a `Format` error.
/// Parsers must bound `len` by the limits before asking (it is allocated when the file
/// is not in memory).
pub(crate) type ReadAt<'s> = dyn Fn(u64, u64) -> Result<Cow<'s, [u8]>> + 's;

/// What formats without alignment or digests of their own guarantee: blobs anywhere,
/// views aligned to their element size.
pub(crate) const UNALIGNED: Traits = Traits {
    blob_alignment: 1,
    view_alignment: 0,
    digest_kinds: &[],
    decoded_digests: false,
    value_rules: false,
    shared_blobs: false,
};

/// A format's entry points. `parse` returns the model and the end of the region its
/// blobs may occupy (for `model::validate`).
struct Format {
    /// The containers its `parse` may report (a zip archive is a PyTorch checkpoint or
    /// an `.npz`, told apart by its entries).
    containers: &'static [Container],
    detect: fn(&[u8]) -> bool,
    parse: fn(&ReadAt<'_>, u64, &Limits) -> Result<(Model, u64)>,
}

/// The formats, in the order a file's first bytes are tried: the ones with a magic
/// first, safetensors (recognised by the shape of its header) last.
const FORMATS: [Format; 10] = [
    Format {
        containers: &[Container::ZTensor],
        detect: ztensor_v2::detect,
        parse: ztensor_v2::parse,
    },
    Format {
        containers: &[Container::ZTensor],
        detect: ztensor::detect,
        parse: ztensor::parse,
    },
    Format {
        containers: &[Container::ZTensor],
        detect: ztensor_v01::detect,
        parse: ztensor_v01::parse,
    },
    Format {
        containers: &[Container::Gguf],
        detect: gguf::detect,
        parse: gguf::parse,
    },
    Format {
        containers: &[Container::Tensogram],
        detect: tensogram::detect,
        parse: tensogram::parse,
    },
    Format {
        containers: &[Container::NumPy],
        detect: npy::detect,
        parse: npy::parse,
    },
    Format {
        containers: &[Container::PyTorch, Container::NumPy],
        detect: zip::detect,
        parse: parse_zip,
    },
    Format {
        containers: &[Container::PyTorch],
        detect: pytorch::detect_legacy,
        parse: pytorch::parse_legacy,
    },
    Format {
        containers: &[Container::Onnx],
        detect: onnx::detect,
        parse: onnx::parse,
    },
    Format {
        containers: &[Container::Safetensors],
        detect: safetensors::detect,
        parse: safetensors::parse,
    },
];

/// A zip archive: a PyTorch checkpoint when it holds `<dir>/data.pkl`, an `.npz` when
/// every member is an `.npy` array (an empty archive is an empty `.npz`). The zip reader
/// knows archives, not their contents: the two formats are above it and use it.
fn parse_zip(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<(Model, u64)> {
    let archive = zip::read_archive(read, size, limits)?;
    if pytorch::prefix_of(&archive).is_some() {
        return pytorch::parse(read, &archive, limits);
    }
    match archive.entries.iter().find(|e| !e.name.ends_with(".npy")) {
        None => npy::parse_npz(read, &archive, limits),
        Some(e) => bail!(
            Unsupported,
            "a zip archive that is neither a PyTorch checkpoint (no <dir>/data.pkl) nor a \
             NumPy .npz (its entry '{}' is not an .npy array)",
            e.name
        ),
    }
}

/// How many first bytes `detect` needs at most.
const HEAD: u64 = 16;

/// Recognises a file's format by its first bytes, parses its model and validates it
/// against the file.
pub(crate) fn read_model(read: &ReadAt<'_>, size: u64, limits: &Limits) -> Result<Model> {
    if size < 8 {
        bail!(
            Format,
            "file is {size} bytes, too short to be a tensor file"
        );
    }
    let head = read(0, size.min(HEAD))?;
    let Some(format) = FORMATS.iter().find(|f| (f.detect)(&head)) else {
        // A zTensor v2 footer behind a damaged header: say which rule it breaks.
        if size >= 48 && read(size - 8, 8)?[..] == ztensor_v2::MAGIC_V2 {
            return Err(ztensor_v2::reject(
                ztensor_v2::Rule::HeaderMagic,
                format_args!(
                    "the first 8 bytes are {}, though the footer is a v2 footer",
                    printable(&head[..8])
                ),
            ));
        }
        let names: Vec<&str> = Container::ALL.iter().map(|c| c.title()).collect();
        let (last, rest) = names.split_last().expect("formats");
        // An index of a set is JSON: say how a set opens (one descriptor or one buffer
        // holds one file; a set's shards are found next to its index).
        let set_hint = if head.trim_ascii_start().starts_with(b"{") {
            "; it looks like JSON, such as a sharded set's index: a set is opened by the \
             path of its *.index.json (its shards are opened next to it), not from a file \
             descriptor or memory, which hold one file (open each shard so instead)"
        } else {
            ""
        };
        bail!(
            Format,
            "not a {} or {last} file: the header magic is {}{set_hint}",
            rest.join(", "),
            printable(&head[..8])
        )
    };
    let (model, data_end) = (format.parse)(read, size, limits)?;
    debug_assert!(format.containers.contains(&model.container));
    validate(&model, data_end, limits.max_decoded_size)?;
    Ok(model)
}

/// Bytes from a file, quoted for a message: printable ASCII as is, anything else as
/// `\xNN` (C users read these messages).
pub(crate) fn printable(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() + 2);
    s.push('"');
    for &b in bytes {
        match b {
            b'"' | b'\\' => {
                s.push('\\');
                s.push(b as char);
            }
            0x20..=0x7e => s.push(b as char),
            _ => s.push_str(&format!("\\x{b:02x}")),
        }
    }
    s.push('"');
    s
}

/// Why a file name from an index may not be opened: empty, absolute, or reaching out of
/// the index's directory.
pub(crate) fn check_relative(file: &str) -> std::result::Result<(), &'static str> {
    let path = std::path::Path::new(file);
    if file.is_empty() || file.contains('\0') {
        return Err("not a file name");
    }
    if path.is_absolute() {
        return Err("an absolute path (shards are named relative to the index)");
    }
    if path.components().any(|p| {
        !matches!(
            p,
            std::path::Component::Normal(_) | std::path::Component::CurDir
        )
    }) {
        return Err("a path outside the index's directory");
    }
    Ok(())
}
