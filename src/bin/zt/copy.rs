//! `zt convert IN OUT` and `zt merge OUT IN...`: stream objects into a new zTensor file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ztensor::{Component, DType, DigestAlgorithm, Encoding, Error, Reader, WriteOptions, Writer};

use crate::args::{ConvertArgs, MergeArgs, StorageArgs};
use crate::progress::Progress;
use crate::stream::for_each_piece;
use crate::text::{self, describe, display};
use crate::{CliResult, Failure};

/// How components are stored in the output; `None` keeps what the input has.
#[derive(Clone, Copy, Debug, Default)]
struct Storage {
    encoding: Option<Encoding>,
    level: i32,
    digest: Option<DigestAlgorithm>,
}

impl Storage {
    fn from_args(args: &StorageArgs) -> Storage {
        let encoding = match (args.zstd, args.raw) {
            (Some(_), _) => Some(Encoding::Zstd),
            (None, true) => Some(Encoding::Raw),
            (None, false) => None,
        };
        Storage {
            encoding,
            level: args.zstd.unwrap_or(0),
            digest: args.digest.map(DigestAlgorithm::from),
        }
    }

    /// The options for one component: the overrides, else what the input has (a digest
    /// of an algorithm we can't compute is dropped; another format's pipeline, such as
    /// Tensogram's packing and compression, becomes zstd).
    fn options(&self, c: &Component) -> WriteOptions {
        let encoding = self.encoding.unwrap_or(match c.encoding() {
            Encoding::Pipeline => Encoding::Zstd,
            other => other,
        });
        let digest = self.digest.unwrap_or_else(|| match c.digest() {
            Some(d) if d.starts_with("sha256:") => DigestAlgorithm::Sha256,
            Some(d) if d.starts_with("crc32c:") => DigestAlgorithm::Crc32c,
            _ => DigestAlgorithm::None,
        });
        WriteOptions {
            encoding,
            level: if encoding == Encoding::Zstd {
                self.level
            } else {
                0
            },
            digest,
        }
    }
}

pub fn run_convert(args: &ConvertArgs) -> CliResult {
    let reader = text::open(&args.input)?;
    write_file(
        "converting",
        &args.output,
        &[(args.input.clone(), reader)],
        Storage::from_args(&args.storage),
        args.progress.quiet,
    )
}

pub fn run_merge(args: &MergeArgs) -> CliResult {
    let mut inputs: Vec<(PathBuf, Reader<'static>)> = Vec::new();
    let mut owner: HashMap<String, usize> = HashMap::new();
    for path in &args.inputs {
        let reader = text::open(path)?;
        for obj in reader.objects() {
            if let Some(&first) = owner.get(obj.name()) {
                return Err(Failure::Failed(format!(
                    "object '{}' is in both '{}' and '{}'",
                    obj.name(),
                    display(&inputs[first].0),
                    display(path)
                )));
            }
            owner.insert(obj.name().to_owned(), inputs.len());
        }
        inputs.push((path.clone(), reader));
    }
    write_file(
        "merging",
        &args.output,
        &inputs,
        Storage::from_args(&args.storage),
        args.progress.quiet,
    )
}

/// Writes every object of every input, in order, into `output`; file attributes from
/// the first input. Nothing appears under `output` unless everything succeeded.
fn write_file(
    label: &'static str,
    output: &Path,
    inputs: &[(PathBuf, Reader<'static>)],
    storage: Storage,
    quiet: bool,
) -> CliResult {
    let total = inputs
        .iter()
        .flat_map(|(_, r)| r.objects())
        .flat_map(|o| o.components())
        .map(Component::decoded_length)
        .fold(0u64, u64::saturating_add);
    let mut progress = Progress::new(label, total, quiet);
    let cannot_write = |e: Error| {
        Failure::Failed(format!(
            "cannot write '{}': {}",
            display(output),
            describe(&e, &[])
        ))
    };
    let mut writer = Writer::create(output).map_err(cannot_write)?;
    if let Some((_, first)) = inputs.first()
        && let Some(attributes) = first.attributes()
    {
        writer
            .set_file_attributes(attributes)
            .map_err(cannot_write)?;
    }
    for (path, reader) in inputs {
        copy_objects(reader, &mut writer, storage, &mut progress).map_err(|e| {
            Failure::Failed(format!(
                "cannot copy '{}' to '{}': {}",
                display(path),
                display(output),
                describe(&e, &[display(path)])
            ))
        })?;
    }
    writer.finish().map_err(cannot_write)?;
    Ok(())
}

/// Sparse index components must be u64 in files we write; readers also accept u32.
fn widen_to_u64(format: &str, c: &Component) -> bool {
    let index_roles: &[&str] = match format {
        "sparse_csr" => &["indices", "indptr"],
        "sparse_coo" => &["coords"],
        _ => &[],
    };
    c.dtype() == DType::U32 && index_roles.contains(&c.role())
}

fn copy_objects(
    reader: &Reader<'_>,
    writer: &mut Writer,
    storage: Storage,
    progress: &mut Progress,
) -> ztensor::Result<()> {
    for (oi, obj) in reader.objects().iter().enumerate() {
        writer.begin_object(obj.name(), obj.format(), obj.shape())?;
        if let Some(attributes) = obj.attributes() {
            writer.set_object_attributes(obj.name(), attributes)?;
        }
        for (ci, c) in obj.components().iter().enumerate() {
            let widen = widen_to_u64(obj.format(), c);
            let dtype = if widen { DType::U64 } else { c.dtype() };
            writer.begin_component(c.role(), dtype, c.logical_type(), &storage.options(c))?;
            let mut wide = Vec::new();
            for_each_piece(reader, oi, ci, |piece| {
                progress.add(piece.len() as u64);
                if widen {
                    wide.clear();
                    wide.extend(piece.chunks_exact(4).flat_map(|b| {
                        u64::from(u32::from_le_bytes(b.try_into().expect("4 bytes"))).to_le_bytes()
                    }));
                    writer.write(&wide)
                } else {
                    writer.write(piece)
                }
            })?;
            writer.end_component()?;
        }
        writer.end_object()?;
    }
    Ok(())
}
