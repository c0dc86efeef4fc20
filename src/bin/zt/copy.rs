//! `zt convert IN OUT` and `zt merge OUT IN...`: stream objects into a new zTensor file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ztensor::{
    Component, CopyOptions, CreateOptions, DigestAlgorithm, Encoding, Error, FileVersion, Reader,
    Writer,
};

use crate::args::{ConvertArgs, MergeArgs, StorageArgs};
use crate::progress::Progress;
use crate::text::{self, describe, display};
use crate::{CliResult, Failure};

/// How components are stored in the output: the library's copy options, from the flags.
fn copy_options(args: &StorageArgs) -> CopyOptions {
    let encoding = match (args.zstd, args.raw) {
        (Some(_), _) => Some(Encoding::Zstd),
        (None, true) => Some(Encoding::Raw),
        (None, false) => None,
    };
    CopyOptions {
        encoding,
        level: args.zstd.unwrap_or(0),
        digest: args.digest.map(DigestAlgorithm::from),
    }
}

/// How the output is created: the version `--to` names.
fn create_options(args: &StorageArgs) -> CreateOptions {
    CreateOptions {
        version: args.to.map(FileVersion::from).unwrap_or_default(),
        ..CreateOptions::default()
    }
}

pub fn run_convert(args: &ConvertArgs) -> CliResult {
    let reader = text::open(&args.input)?;
    write_file(
        "converting",
        &args.output,
        args.shard_size,
        &[(args.input.clone(), reader)],
        &args.storage,
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
        None,
        &inputs,
        &args.storage,
        args.progress.quiet,
    )
}

/// Writes every object of every input, in order, into `output` (a set of shards of
/// about `shard_size` bytes, when given); file attributes from the first input. Nothing
/// appears under `output` unless everything succeeded.
fn write_file(
    label: &'static str,
    output: &Path,
    shard_size: Option<u64>,
    inputs: &[(PathBuf, Reader<'static>)],
    storage: &StorageArgs,
    quiet: bool,
) -> CliResult {
    let options = copy_options(storage);
    let create = create_options(storage);
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
    let mut writer = match shard_size {
        None => Writer::create_with(output, &create),
        Some(max) => Writer::create_sharded_with(output, max, &create),
    }
    .map_err(cannot_write)?;
    if let Some((_, first)) = inputs.first()
        && let Some(attributes) = first.raw_attributes()
    {
        // With their types (a GGUF's u32 and f32 key/values stay u32 and f32).
        writer
            .set_file_attributes_from(attributes)
            .map_err(cannot_write)?;
    }
    // A v2 file's blobs are in name order (canonical form): copied in that order, they
    // are written where they belong, with no reordering at the end.
    let mut order: Vec<(usize, usize)> = inputs
        .iter()
        .enumerate()
        .flat_map(|(k, (_, r))| (0..r.objects().len()).map(move |i| (k, i)))
        .collect();
    if create.version == FileVersion::V2 {
        order.sort_by(|&(a, i), &(b, j)| {
            let name = |k: usize, i: usize| inputs[k].1.objects()[i].name().as_bytes();
            name(a, i).cmp(name(b, j))
        });
    }
    for (k, i) in order {
        let (path, reader) = &inputs[k];
        copy_object(reader, i, &mut writer, &options, &mut progress).map_err(|e| {
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

/// Copies object `i` of `reader` (see `Writer::copy_object`).
fn copy_object(
    reader: &Reader<'_>,
    i: usize,
    writer: &mut Writer,
    options: &CopyOptions,
    progress: &mut Progress,
) -> ztensor::Result<()> {
    let name = reader.objects()[i].name();
    let report = &mut |n| progress.add(n);
    writer.copy_object_reporting(reader, i, name, options, report)
}
