//! `zt convert IN OUT` and `zt merge OUT IN...`: stream objects into a new zTensor,
//! safetensors or GGUF file.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use ztensor::typed::TypedValue;
use ztensor::{
    Component, CopyOptions, CreateOptions, DType, DigestAlgorithm, Encoding, Error, FileVersion,
    OutputFormat, Reader, WriteOptions, Writer,
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

/// How the output is created: the format and version `--to` names (else OUT's
/// extension, else zTensor v2).
fn create_options(args: &StorageArgs, output: &Path) -> CreateOptions {
    let (format, version) = args
        .to
        .map_or((OutputFormat::Auto, FileVersion::V2), |t| t.target());
    CreateOptions {
        version,
        format: format.resolve(Some(output)),
        placement: match args.placement {
            Some(crate::args::PlacementArg::Compact) => ztensor::Placement::Compact,
            Some(crate::args::PlacementArg::Canonical) => ztensor::Placement::Canonical,
            None => ztensor::Placement::default(),
        },
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
        args.dequantize.map(DType::from),
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
        None,
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
    dequantize: Option<DType>,
) -> CliResult {
    let options = copy_options(storage);
    let create = create_options(storage, output);
    let foreign = create.format != OutputFormat::Ztensor;
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
    let cannot_copy = |path: &Path, e: Error| {
        Failure::Failed(format!(
            "cannot copy '{}' to '{}': {}",
            display(path),
            display(output),
            describe(&e, &[display(path)])
        ))
    };
    let mut writer = match shard_size {
        None => Writer::create_with(output, &create),
        Some(max) => Writer::create_sharded_with(output, max, &create),
    }
    .map_err(cannot_write)?;
    if let Some((_, first)) = inputs.first() {
        copy_file_attributes(&mut writer, first, foreign).map_err(cannot_write)?;
    }
    let order = copy_order(
        inputs,
        &create,
        shard_size.is_none(),
        dequantize,
        &mut writer,
    )
    .map_err(|(k, e)| cannot_copy(&inputs[k].0, e))?;
    for (k, i) in order {
        let (path, reader) = &inputs[k];
        copy_one(
            reader,
            i,
            &mut writer,
            &options,
            create.format,
            dequantize,
            &mut progress,
        )
        .map_err(|e| cannot_copy(path, e))?;
    }
    writer.finish().map_err(cannot_write)?;
    Ok(())
}

/// The first input's file attributes, copied: with their types to zTensor (a GGUF's u32
/// and f32 key/values stay u32 and f32); to safetensors or GGUF key by key, so that one
/// the target can't hold is left out, and said.
fn copy_file_attributes(
    writer: &mut Writer,
    first: &Reader<'_>,
    foreign: bool,
) -> ztensor::Result<()> {
    let Some(attributes) = first.raw_attributes() else {
        return Ok(());
    };
    if !foreign {
        return writer.set_file_attributes_from(attributes);
    }
    let typed = first.typed_attributes(None).and_then(TypedValue::from_attr);
    if let Ok(TypedValue::Map(pairs)) = typed {
        for (k, v) in pairs {
            let key = match &k {
                TypedValue::String(k) => String::from_utf8_lossy(k).into_owned(),
                other => format!("{other:?}"),
            };
            if let Err(e) = writer.set_file_attribute(&key, &v) {
                eprintln!(
                    "zt: note: file attribute '{key}' is not kept: {}",
                    e.message()
                );
            }
        }
    }
    Ok(())
}

/// The (input, object) pairs in the order they are copied. A v2 file's blobs are in
/// name order; a single safetensors or GGUF file's objects are declared to `writer`
/// first and copied in the file's order. An error names the input it came from.
fn copy_order(
    inputs: &[(PathBuf, Reader<'static>)],
    create: &CreateOptions,
    single: bool,
    dequantize: Option<DType>,
    writer: &mut Writer,
) -> Result<Vec<(usize, usize)>, (usize, Error)> {
    let foreign = create.format != OutputFormat::Ztensor;
    // A v2 file's blobs are in name order (canonical form): copied in that order, they
    // are written where they belong, with no reordering at the end.
    let mut order: Vec<(usize, usize)> = inputs
        .iter()
        .enumerate()
        .flat_map(|(k, (_, r))| (0..r.objects().len()).map(move |i| (k, i)))
        .collect();
    if !foreign && create.version == FileVersion::V2 {
        order.sort_by(|&(a, i), &(b, j)| {
            let name = |k: usize, i: usize| inputs[k].1.objects()[i].name().as_bytes();
            name(a, i).cmp(name(b, j))
        });
    }
    // A single safetensors or GGUF file: every object declared first, so that the file
    // is written in one pass (header first, each tensor straight to its place), and the
    // objects copied in the file's order (front to back). When one can't be declared as
    // it is, nothing is: the copy then says what the target can't hold.
    if foreign && single {
        let declared = (order.iter())
            .map(|&(k, i)| declaration(&inputs[k].1.objects()[i], create.format, dequantize))
            .collect::<Option<Vec<_>>>();
        if let Some(declared) = declared {
            for (&(k, _), (o, format, dtype, logical)) in order.iter().zip(&declared) {
                writer
                    .declare_object(o.name(), format, o.shape(), *dtype, *logical)
                    .map_err(|e| (k, e))?;
            }
            let file_order = writer.declared_order();
            order = file_order.into_iter().map(|d| order[d]).collect();
        }
    }
    Ok(order)
}

/// Copies object `i` of `reader` into `writer` (a safetensors or GGUF `format` says what
/// it leaves out; `dequantize` writes what it can't hold as dense values).
fn copy_one(
    reader: &Reader<'_>,
    i: usize,
    writer: &mut Writer,
    options: &CopyOptions,
    format: OutputFormat,
    dequantize: Option<DType>,
    progress: &mut Progress,
) -> ztensor::Result<()> {
    let foreign = format != OutputFormat::Ztensor;
    let obj = &reader.objects()[i];
    if foreign && obj.attributes().is_some() && !obj.format().starts_with("ggml_") {
        eprintln!(
            "zt: note: object '{}': its attributes are not kept ({} has no per-tensor \
             attributes)",
            obj.name(),
            format.name()
        );
    }
    match dequantize {
        Some(dtype) if foreign && !holds(format, obj) => {
            write_dequantized(reader, i, writer, dtype, progress)
        }
        _ => copy_object(reader, i, writer, options, progress).map_err(|e| {
            match foreign && dequantize.is_none() && e.kind() == ztensor::ErrorKind::InvalidArgument
            {
                true => e.context(format!(
                    "{} can't hold it as it is (--dequantize f32 writes its values as a \
                         dense tensor)",
                    format.name()
                )),
                false => e,
            }
        }),
    }
}

/// How object `o` is declared to a safetensors or GGUF writer (the object, its format,
/// dtype and logical type): as it is when the target holds it, as a dense tensor of
/// `dequantize` when that is asked; None when it is neither (its copy will say why).
fn declaration(
    o: &ztensor::Object,
    format: OutputFormat,
    dequantize: Option<DType>,
) -> Option<(&ztensor::Object, &str, DType, Option<&str>)> {
    match (holds(format, o), dequantize) {
        (true, _) => {
            let c = &o.components()[0];
            Some((o, o.format(), c.dtype(), c.logical_type()))
        }
        (false, Some(dtype)) => Some((o, "dense", dtype, None)),
        (false, None) => None,
    }
}

/// Whether a safetensors or GGUF file holds object `o` as it is.
fn holds(format: OutputFormat, o: &ztensor::Object) -> bool {
    let [c] = o.components() else {
        return false;
    };
    match format {
        OutputFormat::Safetensors => {
            o.format() == "dense" && ztensor::safetensors_dtype(c.dtype(), c.logical_type()).is_ok()
        }
        OutputFormat::Gguf => {
            (o.format() == "dense"
                && c.logical_type().is_none()
                && !matches!(
                    c.dtype(),
                    DType::U8 | DType::U16 | DType::U32 | DType::U64 | DType::Bool
                ))
                || ztensor::ggml_block_type(o.format()).is_some()
        }
        _ => true,
    }
}

/// Writes object `i`'s first component's values as a dense tensor of `dtype`, decoded
/// (ggml blocks dequantized) a piece at a time.
fn write_dequantized(
    reader: &Reader<'_>,
    i: usize,
    writer: &mut Writer,
    dtype: DType,
    progress: &mut Progress,
) -> ztensor::Result<()> {
    let obj = &reader.objects()[i];
    let count = obj.shape().iter().product::<u64>();
    writer.begin_object(obj.name(), "dense", obj.shape())?;
    (|| {
        writer.begin_component("data", dtype, None, &WriteOptions::default())?;
        // Whole blocks of every ggml type (256 divides 1 Mi).
        const PIECE: u64 = 1 << 20;
        let mut buf = vec![0u8; (count.min(PIECE) as usize) * dtype.size()];
        let mut first = 0u64;
        while first < count {
            let n = (count - first).min(PIECE) as usize;
            let dst = &mut buf[..n * dtype.size()];
            reader.read_as_range(i, 0, dtype, first, dst)?;
            writer.write(dst)?;
            progress.add((n * dtype.size()) as u64);
            first += n as u64;
        }
        writer.end_component()?;
        writer.end_object()
    })()
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
