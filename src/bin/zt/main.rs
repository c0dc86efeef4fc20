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
mod text;
mod verify;

use std::ffi::OsString;
use std::io::Write;
use std::process::ExitCode;

use args::Command;

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

/// What a command returns: its value, or the failure that sets the exit status.
pub type CliResult<T = ()> = Result<T, Failure>;

fn main() -> ExitCode {
    let args: Vec<OsString> = std::env::args_os().collect();
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
    let Some(cli) = args::parse(args)? else {
        return Ok(());
    };
    match cli.command {
        Command::Info(a) => info::run(&a),
        Command::Verify(a) => verify::run(&a),
        Command::Cat(a) => cat::run(&a),
        Command::Convert(a) => copy::run_convert(&a),
        Command::Merge(a) => copy::run_merge(&a),
    }
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
