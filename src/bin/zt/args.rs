//! Command-line parsing (by hand: a few flags and valued options per command) and the
//! help texts.

use std::ffi::{OsStr, OsString};
use std::path::PathBuf;

use crate::{CliResult, Failure};

pub const MAIN_HELP: &str = "\
zt: inspect, check and convert zTensor (.zt) files

Usage: zt COMMAND [OPTIONS] ARGS...

Commands:
  info FILE          list the objects and components of a file
  verify FILE        check every digest, decode every component, validate values
  cat FILE NAME      print the first values of a tensor
  convert IN OUT     copy any readable file into a zTensor 1.2.0 file
  merge OUT IN...    combine the objects of several files into one zTensor file
  help [COMMAND]     show the help of a command

Options:
  -h, --help         show this help, or after a command that command's help
  -V, --version      show the version

Exit status: 0 success; 1 the operation failed (a file can't be read or written, a
check failed, duplicate object names ...); 2 usage error (unknown command or option,
wrong number of arguments, bad option value).
";

const INFO_HELP: &str = "\
Usage: zt info FILE [--json]

Prints a header line (file, format version, object count, file attribute names) and a
table with one row per component: object name, format, shape, role, dtype (with the
logical type in parentheses), encoding, stored and decoded size, and digest (sha256
digests shortened). Only the manifest is read.

Options:
  --json       print the whole manifest as one line of JSON instead (see docs/cli.md)
  -h, --help   show this help
";

const VERIFY_HELP: &str = "\
Usage: zt verify FILE [--json] [--quiet]

Checks every component's stored digest, decodes every encoded (or otherwise
transformed) component once, and validates every object's values (bool bytes, sparse
indices). Reports each failure and a summary; exits with status 1 if anything failed.

Options:
  --json       print the report as one line of JSON (see docs/cli.md)
  -q, --quiet  no progress bar (it is shown only when stderr is a terminal)
  -h, --help   show this help
";

const CAT_HELP: &str = "\
Usage: zt cat FILE NAME [--count N] [--component ROLE] [--json]

Prints the object's format, shape and dtype, then its first N values: floats (f16,
bf16 and the fp8 logical types included) in their shortest exact form, integers,
bools, complex numbers as (re, im) pairs. Values of unknown logical types are shown as
their storage elements.

Options:
  --count N           how many values to show (default 16)
  --component ROLE    which component (default: 'data', else 'values', else the first)
  --json              print one line of JSON (see docs/cli.md)
  -h, --help          show this help
";

const CONVERT_HELP: &str = "\
Usage: zt convert IN OUT [--zstd LEVEL | --raw] [--digest sha256|crc32c|none] [--quiet]

Copies every object of IN (any file zt reads: zTensor 1.2.0, 1.1.0, legacy 0.1.0 ...)
into a new zTensor 1.2.0 file OUT: file and object attributes, and every component of
every object with its role, dtype and logical type. Components are streamed, so memory stays
bounded for large ones. OUT appears only when complete (it is written to a temporary
file beside it and renamed).

By default each component keeps its encoding and digest algorithm. u32 index
components of sparse objects (readable, but not allowed by the spec) are widened to u64.

Options:
  --zstd LEVEL       compress every component with zstd at LEVEL (0 = default level)
  --raw              store every component uncompressed
  --digest ALGO      record a sha256 or crc32c digest of every component, or none
  -q, --quiet        no progress bar (it is shown only when stderr is a terminal)
  -h, --help         show this help
";

const MERGE_HELP: &str = "\
Usage: zt merge OUT IN... [--zstd LEVEL | --raw] [--digest sha256|crc32c|none] [--quiet]

Writes the objects of every IN, in order, into one zTensor 1.2.0 file OUT. Two objects
with the same name are an error naming both files. The file attributes of OUT are
those of the first IN; the others' file attributes are not kept. Components are copied
as by 'zt convert', with the same options.

Options:
  --zstd LEVEL       compress every component with zstd at LEVEL (0 = default level)
  --raw              store every component uncompressed
  --digest ALGO      record a sha256 or crc32c digest of every component, or none
  -q, --quiet        no progress bar (it is shown only when stderr is a terminal)
  -h, --help         show this help
";

/// The help of a command, by name.
pub fn command_help(command: &str) -> Option<&'static str> {
    Some(match command {
        "info" => INFO_HELP,
        "verify" => VERIFY_HELP,
        "cat" => CAT_HELP,
        "convert" => CONVERT_HELP,
        "merge" => MERGE_HELP,
        _ => return None,
    })
}

/// What a command accepts.
pub struct Spec {
    pub command: &'static str,
    /// Options without a value, long names ("--json").
    pub flags: &'static [&'static str],
    /// Options with a value ("--count").
    pub valued: &'static [&'static str],
    /// Positional arguments: at least `min`, at most `max`.
    pub min: usize,
    pub max: usize,
    /// How the positionals read in messages ("FILE NAME").
    pub operands: &'static str,
}

/// A parsed command line. `None` from `parse` means help was asked for (and printed).
pub struct Parsed {
    pub positionals: Vec<OsString>,
    flags: Vec<&'static str>,
    values: Vec<(&'static str, String)>,
}

impl Parsed {
    pub fn flag(&self, name: &str) -> bool {
        self.flags.contains(&name)
    }
    pub fn value(&self, name: &str) -> Option<&str> {
        self.values
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
    }
    pub fn path(&self, index: usize) -> PathBuf {
        PathBuf::from(&self.positionals[index])
    }
}

fn usage(spec: &Spec, what: impl std::fmt::Display) -> Failure {
    Failure::Usage(format!(
        "{}: {what} (see 'zt {} --help')",
        spec.command, spec.command
    ))
}

/// Parses a command's arguments: options anywhere, `--opt VALUE` or `--opt=VALUE`, `--`
/// ends the options. `-h`/`--help` prints the command's help and returns None.
pub fn parse(spec: &Spec, args: &[OsString]) -> CliResult<Option<Parsed>> {
    let mut parsed = Parsed {
        positionals: Vec::new(),
        flags: Vec::new(),
        values: Vec::new(),
    };
    let mut iter = args.iter();
    let mut options_done = false;
    while let Some(arg) = iter.next() {
        let Some(text) = arg
            .to_str()
            .filter(|t| !options_done && t.starts_with('-') && *t != "-")
        else {
            parsed.positionals.push(arg.clone());
            continue;
        };
        if text == "--" {
            options_done = true;
            continue;
        }
        if text == "-h" || text == "--help" {
            crate::emit(command_help(spec.command).expect("every command has help"))?;
            return Ok(None);
        }
        let (name, inline) = match text.split_once('=') {
            Some((n, v)) if n.starts_with("--") => (n, Some(v)),
            _ => (text, None),
        };
        let name = if name == "-q" { "--quiet" } else { name };
        if let Some(&flag) = spec.flags.iter().find(|f| **f == name) {
            if inline.is_some() {
                return Err(usage(spec, format_args!("option '{flag}' takes no value")));
            }
            if !parsed.flags.contains(&flag) {
                parsed.flags.push(flag);
            }
        } else if let Some(&option) = spec.valued.iter().find(|f| **f == name) {
            let value = match inline {
                Some(v) => v.to_owned(),
                None => iter
                    .next()
                    .ok_or_else(|| usage(spec, format_args!("option '{option}' needs a value")))?
                    .to_str()
                    .ok_or_else(|| {
                        usage(spec, format_args!("the value of '{option}' is not UTF-8"))
                    })?
                    .to_owned(),
            };
            if parsed.value(option).is_some() {
                return Err(usage(spec, format_args!("option '{option}' given twice")));
            }
            parsed.values.push((option, value));
        } else {
            return Err(usage(spec, format_args!("unknown option '{name}'")));
        }
    }
    let n = parsed.positionals.len();
    if n < spec.min {
        return Err(usage(
            spec,
            format_args!("expected {}, got {n} argument{}", spec.operands, plural(n)),
        ));
    }
    if n > spec.max {
        let extra = parsed.positionals[spec.max].to_string_lossy();
        return Err(usage(spec, format_args!("unexpected argument '{extra}'")));
    }
    Ok(Some(parsed))
}

pub fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A positional as UTF-8 text (object names, roles).
pub fn text_operand<'a>(spec: &Spec, value: &'a OsStr, what: &str) -> CliResult<&'a str> {
    value
        .to_str()
        .ok_or_else(|| usage(spec, format_args!("the {what} is not UTF-8")))
}

/// Parses an integer option value; `expected` names what it must be ("an integer").
pub fn number<T: std::str::FromStr>(
    spec: &Spec,
    option: &str,
    value: &str,
    expected: &str,
) -> CliResult<T> {
    value
        .parse()
        .map_err(|_| bad_value(spec, option, value, &format!("expected {expected}")))
}

/// A usage error for a bad option value.
pub fn bad_value(spec: &Spec, option: &str, value: &str, why: &str) -> Failure {
    usage(
        spec,
        format_args!("invalid value '{value}' for '{option}': {why}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPEC: Spec = Spec {
        command: "cat",
        flags: &["--json", "--quiet"],
        valued: &["--count"],
        min: 1,
        max: 2,
        operands: "FILE NAME",
    };

    fn os(args: &[&str]) -> Vec<OsString> {
        args.iter().map(OsString::from).collect()
    }

    fn message(r: CliResult<Option<Parsed>>) -> String {
        match r {
            Err(Failure::Usage(m)) => m,
            _ => panic!("expected a usage error"),
        }
    }

    #[test]
    fn options_anywhere_in_both_spellings() {
        let p = parse(&SPEC, &os(&["a", "--count=3", "-q", "--", "--json"]))
            .unwrap()
            .unwrap();
        assert_eq!(p.positionals, os(&["a", "--json"]));
        assert_eq!(p.value("--count"), Some("3"));
        assert!(p.flag("--quiet"));
        assert!(!p.flag("--json"));
        let p = parse(&SPEC, &os(&["--count", "4", "-", "--json"]))
            .unwrap()
            .unwrap();
        assert_eq!(p.positionals, os(&["-"]));
        assert_eq!(p.value("--count"), Some("4"));
        assert!(p.flag("--json"));
    }

    #[test]
    fn mistakes_are_usage_errors() {
        assert_eq!(
            message(parse(&SPEC, &os(&["a", "--bogus"]))),
            "cat: unknown option '--bogus' (see 'zt cat --help')"
        );
        assert_eq!(
            message(parse(&SPEC, &os(&["a", "--count"]))),
            "cat: option '--count' needs a value (see 'zt cat --help')"
        );
        assert_eq!(
            message(parse(&SPEC, &os(&["a", "--count=1", "--count=2"]))),
            "cat: option '--count' given twice (see 'zt cat --help')"
        );
        assert_eq!(
            message(parse(&SPEC, &os(&["a", "--json=1"]))),
            "cat: option '--json' takes no value (see 'zt cat --help')"
        );
        assert_eq!(
            message(parse(&SPEC, &os(&[]))),
            "cat: expected FILE NAME, got 0 arguments (see 'zt cat --help')"
        );
        assert_eq!(
            message(parse(&SPEC, &os(&["a", "b", "c"]))),
            "cat: unexpected argument 'c' (see 'zt cat --help')"
        );
    }
}
