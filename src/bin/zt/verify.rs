//! `zt verify FILE [--json] [--quiet]`: every digest, every decode, every object's values.

use std::fmt::Write as _;
use std::path::Path;

use ztensor::{Error, Reader};

use crate::args::VerifyArgs;
use crate::progress::Progress;
use crate::text::{self, plural};
use crate::{CliResult, Failure, emit};

/// Which check failed.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Check {
    Digest,
    Decode,
    Values,
    /// A zTensor v2 shard against its root's table.
    Shard,
    /// The content digest against `--content`.
    Content,
}

impl Check {
    fn name(self) -> &'static str {
        match self {
            Check::Digest => "digest",
            Check::Decode => "decode",
            Check::Values => "values",
            Check::Shard => "shard",
            Check::Content => "content",
        }
    }
}

struct Problem {
    object: String,
    component: Option<String>,
    check: Check,
    status: &'static str,
    message: String,
}

/// Passed and failed counts of one kind of check.
#[derive(Default)]
struct Tally {
    ok: usize,
    failed: usize,
}

#[derive(Default)]
struct Report {
    components: usize,
    digests: Tally,
    no_digest: usize,
    decoded: Tally,
    values: Tally,
    /// Shards checked against their root's identity (v2 sets).
    shards: Tally,
    /// The zTensor v2 content digest (xxh3), when the file has one.
    content: Option<String>,
    problems: Vec<Problem>,
}

pub fn run(args: &VerifyArgs) -> CliResult {
    let path = &args.file;
    let reader = text::open(path)?;
    let mut report = check(path, &reader, args.progress.quiet);
    check_set_and_content(&reader, args.content.as_deref(), &mut report);
    let objects = reader.objects().len();
    if args.json {
        emit(&json(path, objects, &report))?;
    } else {
        emit(&summary(path, objects, &report))?;
    }
    match report.problems.len() {
        0 => Ok(()),
        n => Err(Failure::Failed(format!(
            "'{}' failed verification: {n} problem{}",
            text::display(path),
            plural(n)
        ))),
    }
}

/// Components whose decoded bytes are not simply their stored bytes: those are decoded.
fn needs_decoding(c: &ztensor::Component) -> bool {
    !c.is_plain()
}

fn check(path: &Path, reader: &Reader<'_>, quiet: bool) -> Report {
    let objects = reader.objects();
    let total: u64 = objects
        .iter()
        .flat_map(|o| o.components())
        .map(|c| {
            let digest = if c.digest().is_some() { c.length() } else { 0 };
            let decode = if needs_decoding(c) {
                c.decoded_length()
            } else {
                0
            };
            digest.saturating_add(decode)
        })
        .fold(0u64, u64::saturating_add);
    let mut progress = Progress::new("verifying", total, quiet);
    let mut report = Report::default();
    let file = text::display(path);
    for (oi, obj) in objects.iter().enumerate() {
        for (ci, c) in obj.components().iter().enumerate() {
            report.components += 1;
            let context = format!("object '{}' component '{}'", obj.name(), c.role());
            let known = [file.clone(), context];
            let problem = |check: Check, e: Error| Problem {
                object: obj.name().to_owned(),
                component: Some(c.role().to_owned()),
                check,
                status: e.kind().status_name(),
                message: text::strip(e.message(), &known).to_owned(),
            };
            if c.digest().is_some() {
                match reader.verify_component(oi, ci) {
                    Ok(()) => report.digests.ok += 1,
                    Err(e) => {
                        report.digests.failed += 1;
                        report.problems.push(problem(Check::Digest, e));
                    }
                }
                progress.add(c.length());
            } else {
                report.no_digest += 1;
            }
            if needs_decoding(c) {
                let mut remaining = c.decoded_length();
                let result = reader.for_each_piece(oi, ci, |piece| {
                    progress.add(piece.len() as u64);
                    remaining -= piece.len() as u64;
                    Ok(())
                });
                progress.add(remaining);
                match result {
                    Ok(()) => report.decoded.ok += 1,
                    Err(e) => {
                        report.decoded.failed += 1;
                        report.problems.push(problem(Check::Decode, e));
                    }
                }
            }
        }
        match reader.validate_values(oi) {
            Ok(()) => report.values.ok += 1,
            Err(e) => {
                report.values.failed += 1;
                let known = [format!("object '{}'", obj.name()), file.clone()];
                report.problems.push(Problem {
                    object: obj.name().to_owned(),
                    component: None,
                    check: Check::Values,
                    status: e.kind().status_name(),
                    message: text::strip(e.message(), &known).to_owned(),
                });
            }
        }
    }
    progress.clear();
    report
}

/// A v2 set's shards against their root's identities, and the content digest (against
/// `expected`, when given).
fn check_set_and_content(reader: &Reader<'_>, expected: Option<&str>, report: &mut Report) {
    for i in 1..reader.shard_count() {
        match reader.verify_shard(i) {
            Ok(true) => report.shards.ok += 1,
            Ok(false) => {}
            Err(e) => {
                report.shards.failed += 1;
                let name = reader
                    .shard_path(i)
                    .ok()
                    .flatten()
                    .map_or_else(|| format!("file {i}"), |p| p.display().to_string());
                report.problems.push(Problem {
                    object: name.clone(),
                    component: None,
                    check: Check::Shard,
                    status: e.kind().status_name(),
                    message: text::strip(e.message(), &[name]).to_owned(),
                });
            }
        }
    }
    let algorithm = match expected {
        Some(d) if d.starts_with("sha256:") => ztensor::DigestAlgorithm::Sha256,
        _ => ztensor::DigestAlgorithm::Xxh3,
    };
    let computed = reader.content_digest(algorithm);
    if let Ok(d) = &computed {
        report.content = Some(d.clone());
    }
    if let Some(want) = expected {
        let wrong = match &computed {
            Ok(d) if d == want => None,
            Ok(d) => Some((
                "ZT_ERR_CHECKSUM",
                format!("the content digest is {d}, not {want}"),
            )),
            Err(e) => Some((e.kind().status_name(), e.message().to_owned())),
        };
        if let Some((status, message)) = wrong {
            report.problems.push(Problem {
                object: String::new(),
                component: None,
                check: Check::Content,
                status,
                message,
            });
        }
    }
}

/// The failures, one per line, then the counts and a verdict.
fn summary(path: &Path, objects: usize, report: &Report) -> String {
    let mut out = String::new();
    for p in &report.problems {
        match p.check {
            Check::Shard => {
                let _ = write!(out, "FAIL shard '{}'", p.object);
            }
            Check::Content => out.push_str("FAIL"),
            _ => {
                let _ = write!(out, "FAIL object '{}'", p.object);
            }
        }
        if let Some(c) = &p.component {
            let _ = write!(out, " component '{c}'");
        }
        let _ = writeln!(out, " {}: {}: {}", p.check.name(), p.status, p.message);
    }
    let _ = writeln!(
        out,
        "{}: {}, {}",
        text::display(path),
        text::count(objects, "object"),
        text::count(report.components, "component")
    );
    let _ = writeln!(
        out,
        "digests: {} ok, {} failed, {} absent",
        report.digests.ok, report.digests.failed, report.no_digest
    );
    let _ = writeln!(
        out,
        "decoded: {} ok, {} failed",
        report.decoded.ok, report.decoded.failed
    );
    let _ = writeln!(
        out,
        "values:  {} ok, {} failed",
        report.values.ok, report.values.failed
    );
    if report.shards.ok + report.shards.failed > 0 {
        let _ = writeln!(
            out,
            "shards:  {} ok, {} failed",
            report.shards.ok, report.shards.failed
        );
    }
    if let Some(d) = &report.content {
        let _ = writeln!(out, "content: {d}");
    }
    match report.problems.len() {
        0 => out.push_str("OK\n"),
        n => {
            let _ = writeln!(out, "FAILED: {n} problem{}", plural(n));
        }
    }
    out
}

/// The report as one line of JSON; the schema is in docs/cli.md.
fn json(path: &Path, objects: usize, report: &Report) -> String {
    let mut out = String::from("{\"file\":");
    text::json_str(&mut out, &text::display(path));
    let _ = write!(
        out,
        ",\"ok\":{},\"objects\":{objects},\"components\":{},\
         \"digests\":{{\"ok\":{},\"failed\":{},\"absent\":{}}},\
         \"decoded\":{{\"ok\":{},\"failed\":{}}},\
         \"values\":{{\"ok\":{},\"failed\":{}}},",
        report.problems.is_empty(),
        report.components,
        report.digests.ok,
        report.digests.failed,
        report.no_digest,
        report.decoded.ok,
        report.decoded.failed,
        report.values.ok,
        report.values.failed,
    );
    // Only for the files that have them (zTensor v2).
    if report.shards.ok + report.shards.failed > 0 {
        let _ = write!(
            out,
            "\"shards\":{{\"ok\":{},\"failed\":{}}},",
            report.shards.ok, report.shards.failed
        );
    }
    if let Some(d) = &report.content {
        out.push_str("\"content\":");
        text::json_str(&mut out, d);
        out.push(',');
    }
    out.push_str("\"problems\":[");
    for (i, p) in report.problems.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str("{\"object\":");
        match p.check {
            Check::Content => out.push_str("null"),
            _ => text::json_str(&mut out, &p.object),
        }
        out.push_str(",\"component\":");
        text::json_opt_str(&mut out, p.component.as_deref());
        out.push_str(",\"check\":");
        text::json_str(&mut out, p.check.name());
        out.push_str(",\"status\":");
        text::json_str(&mut out, p.status);
        out.push_str(",\"message\":");
        text::json_str(&mut out, &p.message);
        out.push('}');
    }
    out.push_str("]}\n");
    out
}
