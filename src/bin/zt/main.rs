//! `zt`: inspect, check and convert zTensor files from the command line.
//!
//! Built only with the `cli` feature (`cargo build --features cli --bin zt`), from the
//! crate's public Rust API. Commands, output formats (text and `--json`) and exit codes
//! are documented in docs/cli.md and by `zt --help`.

mod args;
mod cat;
mod copy;
mod info;
mod progress;
mod stream;
mod text;
mod verify;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

/// Why a command did not succeed; decides the exit status.
#[derive(Debug)]
pub enum Failure {
    /// The command line is wrong: exit 2.
    Usage(String),
    /// The operation failed (unreadable file, failed check, ...): exit 1.
    Failed(String),
    /// Exit 1 without a message (stdout was closed under us).
    Silent,
}

/// Exit status of a failed operation.
pub const EXIT_FAILED: u8 = 1;
/// Exit status of a usage error.
pub const EXIT_USAGE: u8 = 2;

pub type CliResult<T = ()> = Result<T, Failure>;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().skip(1).collect();
    match run(&args) {
        Ok(()) => ExitCode::SUCCESS,
        Err(Failure::Usage(message)) => {
            eprintln!("zt: error: {message}");
            ExitCode::from(EXIT_USAGE)
        }
        Err(Failure::Failed(message)) => {
            eprintln!("zt: error: {message}");
            ExitCode::from(EXIT_FAILED)
        }
        Err(Failure::Silent) => ExitCode::from(EXIT_FAILED),
    }
}

fn run(args: &[OsString]) -> CliResult {
    let Some(first) = args.first() else {
        return Err(Failure::Usage(
            "no command given (see 'zt --help')".to_owned(),
        ));
    };
    let rest = &args[1..];
    match first.to_str().unwrap_or("") {
        "-h" | "--help" => emit(args::MAIN_HELP),
        "-V" | "--version" => emit(&version_line()),
        "help" => match rest.first().map(|a| a.to_str().unwrap_or("")) {
            None => emit(args::MAIN_HELP),
            Some(command) => match args::command_help(command) {
                Some(help) => emit(help),
                None => Err(unknown_command(command)),
            },
        },
        "info" => info::run(rest),
        "verify" => verify::run(rest),
        "cat" => cat::run(rest),
        "convert" => copy::run_convert(rest),
        "merge" => copy::run_merge(rest),
        other if other.starts_with('-') => Err(Failure::Usage(format!(
            "unknown option '{other}' (see 'zt --help')"
        ))),
        _ => Err(unknown_command(&first.to_string_lossy())),
    }
}

fn unknown_command(name: &str) -> Failure {
    Failure::Usage(format!("unknown command '{name}' (see 'zt --help')"))
}

/// "zt 0.1.0 (writes zTensor 1.2.0)".
fn version_line() -> String {
    format!(
        "zt {} (writes zTensor {})\n",
        env!("CARGO_PKG_VERSION"),
        ztensor::WRITE_VERSION
    )
}

/// Writes text to stdout in one piece. A closed pipe (`zt info big.zt | head`) ends the
/// program quietly with status 1.
pub fn emit(text: &str) -> CliResult {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Err(Failure::Silent),
        Err(e) => Err(Failure::Failed(format!("writing to stdout: {e}"))),
    }
}
