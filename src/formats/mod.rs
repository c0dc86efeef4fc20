//! Every file format this library reads, each a peer behind the same interface: it
//! recognises itself by its first bytes (`detect`), parses its header, manifest or index
//! into the one model (`parse`), and declares how each component's stored bytes decode
//! (`decode::Step`) and what its files guarantee (`model::Traits`). Data bytes stay where
//! the file has them, so raw tensors are zero-copy. The reader, the C API, the C++
//! wrapper and the CLI never learn which format a file was.
//!
//! A new format is a new module here and one row in `FORMATS`.

use std::borrow::Cow;

mod gguf;
mod safetensors;
pub(crate) mod sets;
mod tensogram;
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
};

/// A format's entry points. `parse` returns the model and the end of the region its
/// blobs may occupy (for `model::validate`).
struct Format {
    container: Container,
    detect: fn(&[u8]) -> bool,
    parse: fn(&ReadAt<'_>, u64, &Limits) -> Result<(Model, u64)>,
}

/// The formats, in the order a file's first bytes are tried: the ones with a magic
/// first, safetensors (recognised by the shape of its header) last.
const FORMATS: [Format; 6] = [
    Format {
        container: Container::ZTensor,
        detect: ztensor_v2::detect,
        parse: ztensor_v2::parse,
    },
    Format {
        container: Container::ZTensor,
        detect: ztensor::detect,
        parse: ztensor::parse,
    },
    Format {
        container: Container::ZTensor,
        detect: ztensor_v01::detect,
        parse: ztensor_v01::parse,
    },
    Format {
        container: Container::Gguf,
        detect: gguf::detect,
        parse: gguf::parse,
    },
    Format {
        container: Container::Tensogram,
        detect: tensogram::detect,
        parse: tensogram::parse,
    },
    Format {
        container: Container::Safetensors,
        detect: safetensors::detect,
        parse: safetensors::parse,
    },
];

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
        bail!(
            Format,
            "not a {} or {last} file: the header magic is {}",
            rest.join(", "),
            printable(&head[..8])
        )
    };
    debug_assert!(Container::ALL.contains(&format.container));
    let (model, data_end) = (format.parse)(read, size, limits)?;
    debug_assert_eq!(model.container, format.container);
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
