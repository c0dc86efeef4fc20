//! The command line, declared with clap's derive API: the commands, their arguments and
//! help texts, and how a parse error becomes help on stdout or a one-line usage error.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::LazyLock;

use clap::error::{ContextKind, ContextValue, ErrorKind};
use clap::{Args, CommandFactory, Parser, Subcommand, ValueEnum};
use ztensor::{DigestAlgorithm, FileVersion, OutputFormat, zstd_level_range};

use crate::{CliResult, Failure, emit};

/// "0.1.0 (writes zTensor 2 and 1.2.0, safetensors, GGUF)"; clap prints it after the name.
static VERSION: LazyLock<String> = LazyLock::new(|| {
    format!(
        "{} (writes zTensor 2 and {}, safetensors, GGUF)",
        env!("CARGO_PKG_VERSION"),
        ztensor::WRITE_VERSION
    )
});

const EXIT_STATUS: &str = "\
Exit status: 0 success; 1 the operation failed (a file can't be read or written, a
check failed, duplicate object names ...); 2 usage error (unknown command or option,
wrong number of arguments, bad option value).";

/// zt: inspect, check and convert zTensor (.zt) files
#[derive(Parser, Debug)]
#[command(
    name = "zt",
    version = VERSION.as_str(),
    after_help = EXIT_STATUS,
    subcommand_required = true,
    arg_required_else_help = false
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// List the objects and components of a file
    #[command(long_about = INFO_ABOUT)]
    Info(InfoArgs),
    /// Check every digest, decode every component, validate values
    #[command(long_about = VERIFY_ABOUT)]
    Verify(VerifyArgs),
    /// Print the first values of a tensor
    #[command(long_about = CAT_ABOUT)]
    Cat(CatArgs),
    /// Copy any readable file into a zTensor, safetensors or GGUF file
    #[command(long_about = CONVERT_ABOUT)]
    Convert(ConvertArgs),
    /// Combine the objects of several files into one zTensor file
    #[command(long_about = MERGE_ABOUT)]
    Merge(MergeArgs),
}

const INFO_ABOUT: &str = "\
List the objects and components of a file.

Prints a header line (file, format version, object count, file attribute names) and a
table with one row per component: object name, format, shape, role, dtype (with the
logical type in parentheses), encoding, stored and decoded size, and digest (sha256
digests shortened). Only the manifest is read.";

#[derive(Args, Debug)]
pub struct InfoArgs {
    /// The file (any format zt reads)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print the whole manifest as one line of JSON instead (see docs/cli.md)
    #[arg(long, overrides_with = "json")]
    pub json: bool,
}

const VERIFY_ABOUT: &str = "\
Check every digest, decode every component, validate values.

Checks every component's stored digest, decodes every encoded (or otherwise
transformed) component once, and validates every object's values (bool bytes, sparse
indices). For a zTensor v2 file it also checks each shard of its set against the root's
table (size and whole-file digest) and reports the content digest (spec §6.4), which
--content must match when given. Reports each failure and a summary; exits with status
1 if anything failed.";

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The file (any format zt reads)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// Print the report as one line of JSON (see docs/cli.md)
    #[arg(long, overrides_with = "json")]
    pub json: bool,
    /// The content digest the file must have ("xxh3:<hex>" or "sha256:<hex>")
    #[arg(long, value_name = "DIGEST")]
    pub content: Option<String>,
    #[command(flatten)]
    pub progress: ProgressArgs,
}

const CAT_ABOUT: &str = "\
Print the first values of a tensor.

Prints the object's format, shape and dtype, then its first N values: floats (f16,
bf16 and the fp8 logical types included) in their shortest exact form, integers,
bools, complex numbers as (re, im) pairs. Values of unknown logical types are shown as
their storage elements.";

#[derive(Args, Debug)]
pub struct CatArgs {
    /// The file (any format zt reads)
    #[arg(value_name = "FILE")]
    pub file: PathBuf,
    /// The object's name
    #[arg(value_name = "NAME")]
    pub name: String,
    /// How many values to show
    #[arg(
        long,
        value_name = "N",
        default_value_t = 16,
        allow_negative_numbers = true
    )]
    pub count: usize,
    /// Which component [default: 'data', else 'values', else the first]
    #[arg(long, value_name = "ROLE")]
    pub component: Option<String>,
    /// Print one line of JSON (see docs/cli.md)
    #[arg(long, overrides_with = "json")]
    pub json: bool,
}

const CONVERT_ABOUT: &str = "\
Copy any readable file into a zTensor, safetensors or GGUF file.

Copies every object of IN (any file zt reads: zTensor 2, 1.2.0, 1.1.0, legacy 0.1.0,
safetensors, GGUF, Tensogram, PyTorch, NumPy, ONNX) into a new file OUT of the format --to
names (by default OUT's extension: .safetensors, .gguf, else zTensor v2).

safetensors holds dense tensors of its dtypes and a string-to-string __metadata__; GGUF
holds f32 f16 bf16 f64 i8..i64 tensors, ggml block types (copied as they are, never
re-quantized) and typed key/values. What the target can't hold is said: a file attribute
it can't hold is left out with a note; an object it can't hold stops the conversion,
naming it, unless --dequantize writes ggml blocks (and other values zt can convert) as
dense tensors of that dtype. Object attributes have no place in either and are left out
with a note.

For zTensor: file and object attributes, and every component of every object with
its role, dtype and logical type, under the names of that version (sparse_csr is
zt.sparse_csr/1 in v2, a GGUF q4_k tensor gguf.q4_k/1 ...). Components are streamed, so
memory stays bounded for large ones. OUT appears only when complete (it is written to a
temporary file beside it and renamed).

By default each component keeps its encoding and digest algorithm where the version has
them. u32 index components of sparse objects (readable, but not allowed by the v1.2
spec) are widened to u64. A v2 file gets an xxh3 digest of every part, blobs in name
order at 4 KiB boundaries, identical parts sharing one blob; with --placement canonical
(64 KiB) and no compressed component it is in canonical form (spec §6.3): the same
tensors give the same bytes as any canonical writer.";

#[derive(Args, Debug)]
pub struct ConvertArgs {
    /// The file to read
    #[arg(value_name = "IN")]
    pub input: PathBuf,
    /// The file to write (a set's base path with --shard-size)
    #[arg(value_name = "OUT")]
    pub output: PathBuf,
    /// Write a set: OUT-0000k-of-0000n.zt of about BYTES each, OUT.zt.index.json
    /// (safetensors: .safetensors shards and OUT.safetensors.index.json; GGUF: split files)
    #[arg(long, value_name = "BYTES", value_parser = clap::value_parser!(u64).range(1..))]
    pub shard_size: Option<u64>,
    /// safetensors or GGUF: write objects the target can't hold as they are (ggml blocks
    /// into safetensors ...) as dense tensors of DTYPE (f32, f16, bf16), values decoded
    #[arg(long, value_name = "DTYPE")]
    pub dequantize: Option<Dequantize>,
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub progress: ProgressArgs,
}

const MERGE_ABOUT: &str = "\
Combine the objects of several files into one zTensor file.

Writes the objects of every IN, in order, into one zTensor file OUT (of the version
--to names). Two objects
with the same name are an error naming both files. The file attributes of OUT are
those of the first IN; the others' file attributes are not kept. Components are copied
as by 'zt convert', with the same options.";

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The zTensor file to write
    #[arg(value_name = "OUT")]
    pub output: PathBuf,
    /// The files to read, in order
    #[arg(value_name = "IN", required = true)]
    pub inputs: Vec<PathBuf>,
    #[command(flatten)]
    pub storage: StorageArgs,
    #[command(flatten)]
    pub progress: ProgressArgs,
}

/// How `convert` and `merge` store components; nothing given keeps what the input has.
#[derive(Args, Debug)]
pub struct StorageArgs {
    /// Compress every component with zstd at LEVEL (0 = the default level)
    #[arg(
        long,
        value_name = "LEVEL",
        value_parser = zstd_level,
        allow_negative_numbers = true,
        conflicts_with = "raw"
    )]
    pub zstd: Option<i32>,
    /// Store every component uncompressed
    #[arg(long, overrides_with = "raw")]
    pub raw: bool,
    /// Record a digest of every component, or none
    #[arg(long, value_name = "ALGO")]
    pub digest: Option<Digest>,
    /// The format to write [default: by OUT's extension, else v2]
    #[arg(long, value_name = "FORMAT")]
    pub to: Option<Version>,
    /// zTensor v2: blobs at 64 KiB (canonical) or 4 KiB (compact) boundaries [default: compact]
    #[arg(long, value_name = "PLACEMENT")]
    pub placement: Option<PlacementArg>,
}

/// The values of `--placement`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum PlacementArg {
    #[value(name = "canonical")]
    Canonical,
    #[value(name = "compact")]
    Compact,
}

/// The values of `--to`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Version {
    #[value(name = "v1.2", alias = "1.2")]
    V1_2,
    #[value(name = "v2", alias = "2")]
    V2,
    #[value(name = "safetensors")]
    Safetensors,
    #[value(name = "gguf")]
    Gguf,
}

impl Version {
    /// The writer's format and zTensor version for this value.
    pub fn target(self) -> (OutputFormat, FileVersion) {
        match self {
            Version::V1_2 => (OutputFormat::Ztensor, FileVersion::V1_2),
            Version::V2 => (OutputFormat::Ztensor, FileVersion::V2),
            Version::Safetensors => (OutputFormat::Safetensors, FileVersion::V2),
            Version::Gguf => (OutputFormat::Gguf, FileVersion::V2),
        }
    }
}

/// The values of `--dequantize`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Dequantize {
    #[value(name = "f32")]
    F32,
    #[value(name = "f16")]
    F16,
    #[value(name = "bf16")]
    Bf16,
}

impl From<Dequantize> for ztensor::DType {
    fn from(d: Dequantize) -> ztensor::DType {
        match d {
            Dequantize::F32 => ztensor::DType::F32,
            Dequantize::F16 => ztensor::DType::F16,
            Dequantize::Bf16 => ztensor::DType::BF16,
        }
    }
}

#[derive(Args, Debug)]
pub struct ProgressArgs {
    /// No progress bar (it is shown only when stderr is a terminal)
    #[arg(short, long, overrides_with = "quiet")]
    pub quiet: bool,
}

/// The values of `--digest`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Digest {
    #[value(name = "sha256")]
    Sha256,
    #[value(name = "crc32c")]
    Crc32c,
    #[value(name = "xxh3")]
    Xxh3,
    #[value(name = "none")]
    None,
}

impl From<Digest> for DigestAlgorithm {
    fn from(d: Digest) -> DigestAlgorithm {
        match d {
            Digest::Sha256 => DigestAlgorithm::Sha256,
            Digest::Crc32c => DigestAlgorithm::Crc32c,
            Digest::Xxh3 => DigestAlgorithm::Xxh3,
            Digest::None => DigestAlgorithm::None,
        }
    }
}

/// A `--zstd` level: zstd's range, or 0 for its default level.
fn zstd_level(text: &str) -> Result<i32, String> {
    let level: i32 = text.parse().map_err(|_| "expected an integer".to_owned())?;
    let range = zstd_level_range();
    if level != 0 && !range.contains(&level) {
        return Err(format!(
            "zstd levels are {} to {} (0 = default)",
            range.start(),
            range.end()
        ));
    }
    Ok(level)
}

/// Parses the whole command line (`args[0]` is the program). `None` means help or the
/// version was asked for, and printed on stdout.
pub fn parse(args: &[OsString]) -> CliResult<Option<Cli>> {
    match Cli::try_parse_from(args) {
        Ok(cli) => Ok(Some(cli)),
        Err(e) if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) => {
            emit(&e.render().to_string())?;
            Ok(None)
        }
        Err(e) => Err(Failure::Usage(one_line(&e, args))),
    }
}

/// clap's message on one line: its first paragraph (without "error: "), lines joined, and
/// the name it suggests for a near miss, after the command it is about and before where
/// to find help: "info: unexpected argument '--jsn' found; did you mean '--json'? (see
/// 'zt info --help')".
fn one_line(e: &clap::Error, args: &[OsString]) -> String {
    let rendered = e.render().to_string();
    let text = rendered.strip_prefix("error: ").unwrap_or(&rendered);
    let message: Vec<&str> = text
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .map(str::trim)
        .collect();
    let mut message = message.join(" ");
    // A near miss of a command, option or value (clap's suggestions, after the first
    // paragraph): named on the same line.
    let near = [
        ContextKind::SuggestedSubcommand,
        ContextKind::SuggestedArg,
        ContextKind::SuggestedValue,
    ]
    .into_iter()
    .find_map(|kind| match e.get(kind)? {
        ContextValue::String(s) => Some(s.clone()),
        ContextValue::Strings(v) => v.first().cloned(),
        _ => None,
    });
    if let Some(near) = near {
        message.push_str(&format!("; did you mean '{near}'?"));
    }
    // Only -h and -V may come before a command, and they end parsing: a command is the
    // first argument or there is none.
    let command = args
        .get(1)
        .and_then(|a| a.to_str())
        .filter(|a| *a != "help" && Cli::command().find_subcommand(a).is_some());
    match command {
        Some(c) => format!("{c}: {message} (see 'zt {c} --help')"),
        None => format!("{message} (see 'zt --help')"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// "zt" and `args`.
    fn command_line(args: &[&str]) -> Vec<OsString> {
        std::iter::once("zt")
            .chain(args.iter().copied())
            .map(OsString::from)
            .collect()
    }

    fn command(args: &[&str]) -> Command {
        match parse(&command_line(args)) {
            Ok(Some(cli)) => cli.command,
            other => panic!("expected a command, got {other:?}"),
        }
    }

    fn usage(args: &[&str]) -> String {
        match parse(&command_line(args)) {
            Err(Failure::Usage(m)) => m,
            other => panic!("expected a usage error, got {other:?}"),
        }
    }

    #[test]
    fn the_declaration_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn options_anywhere_in_both_spellings() {
        let Command::Cat(cat) = command(&["cat", "a", "--count=3", "--", "--json"]) else {
            panic!("a cat command");
        };
        assert_eq!(
            (cat.file, cat.name.as_str(), cat.count, cat.json),
            (PathBuf::from("a"), "--json", 3, false)
        );
        let Command::Convert(c) = command(&["convert", "--zstd", "-5", "-", "o", "-q"]) else {
            panic!("a convert command");
        };
        assert_eq!(
            (c.input, c.storage.zstd, c.progress.quiet),
            (PathBuf::from("-"), Some(-5), true)
        );
    }

    #[test]
    fn mistakes_are_one_line_usage_errors() {
        assert_eq!(
            usage(&["cat", "a", "--bogus"]),
            "cat: unexpected argument '--bogus' found (see 'zt cat --help')"
        );
        assert_eq!(
            usage(&["--frob", "info"]),
            "unexpected argument '--frob' found (see 'zt --help')"
        );
        assert_eq!(
            usage(&["inf", "a"]),
            "unrecognized subcommand 'inf'; did you mean 'info'? (see 'zt --help')"
        );
        assert_eq!(
            usage(&["cat", "a", "x", "--cont", "3"]),
            "cat: unexpected argument '--cont' found; did you mean '--count'? \
             (see 'zt cat --help')"
        );
        assert_eq!(
            usage(&["convert", "a", "b", "--digest", "sha265"]),
            "convert: invalid value 'sha265' for '--digest <ALGO>' \
             [possible values: sha256, crc32c, xxh3, none]; did you mean 'sha256'? \
             (see 'zt convert --help')"
        );
        assert_eq!(
            usage(&["convert", "a", "b", "--digest", "md5"]),
            "convert: invalid value 'md5' for '--digest <ALGO>' \
             [possible values: sha256, crc32c, xxh3, none] (see 'zt convert --help')"
        );
    }
}
