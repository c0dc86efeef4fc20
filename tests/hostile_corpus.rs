//! The hostile corpus (tests/vectors/hostile/) through the Rust API: the same statuses as
//! tests/c/test_hostile.c checks through the C API, with the same walk, plus a bound on the
//! memory that opening each file allocates.
//!
//! expected.tsv gives, per file, the status of the open and the first non-OK status of
//! the walk (see the comment at the top of expected.tsv; statuses map to `ErrorKind` by
//! `ErrorKind::status_name`). Each file is opened three ways (mmap, pread, caller memory)
//! and each way must give the expected statuses. The walk, identical to the C test's:
//!
//! ```text
//! for each object i:
//!   object(i)                                     (C: zt_object_get_info; on failure skip)
//!   for each component c:
//!     (component info; C: zt_component_get_info)
//!     if decoded_length > 0: read_range of byte 0, then of byte decoded_length - 1
//!     read_into an exact-size buffer              (C: zt_component_read)
//!     view, every byte read                       (C: zt_component_view)
//!     verify_component; NotFound ("no digest") is not a failure
//!   validate_values(i)                            (C: zt_object_validate)
//!   attributes of i rendered as JSON              (C: zt_object_get_attributes_json)
//! file attributes rendered as JSON                (C: zt_file_get_attributes_json)
//! verify()                                        (C: zt_file_verify)
//! ```
//!
//! Range reads and the read come before the view because a view caches the decoded bytes
//! and later reads are then served from that cache.
//!
//! The allocation check: a counting global allocator (per thread) measures the peak of
//! live heap bytes while `Reader::from_slice` opens each file; it must stay within
//! 64 x file size + 1 MiB. The worst ratio seen is printed (`cargo test --test
//! hostile_corpus -- --nocapture`).

use std::path::{Path, PathBuf};

use ztensor::{Error, ErrorKind, OpenOptions, Reader};

#[path = "common/counting.rs"]
mod counting;

use counting::peak_during;

// ---------------------------------------------------------------------------------------
// The corpus and its expectations
// ---------------------------------------------------------------------------------------

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/hostile")
}

struct Expectation {
    file: String,
    open: String,
    walk: String,
    note: String,
}

fn expectations() -> Vec<Expectation> {
    let text = std::fs::read_to_string(dir().join("expected.tsv")).expect("expected.tsv");
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("file\t"))
        .map(|l| {
            let f: Vec<&str> = l.splitn(4, '\t').collect();
            assert_eq!(f.len(), 4, "malformed line in expected.tsv: {l:?}");
            Expectation {
                file: f[0].to_owned(),
                open: f[1].to_owned(),
                walk: f[2].to_owned(),
                note: f[3].to_owned(),
            }
        })
        .collect()
}

fn status<T>(r: &Result<T, Error>) -> &'static str {
    match r {
        Ok(_) => "ZT_OK",
        Err(e) => e.kind().status_name(),
    }
}

/// The first failure of the walk, and the first breach of an invariant.
#[derive(Default)]
struct Walk {
    first: Option<Error>,
    problem: Option<String>,
}

impl Walk {
    fn record<T>(&mut self, r: &Result<T, Error>, call: &str) {
        if let (Err(e), None) = (r, &self.first) {
            self.first = Some(Error::new(e.kind(), format!("{call}: {}", e.message())));
        }
    }
    fn problem(&mut self, what: String) {
        self.problem.get_or_insert(what);
    }
    fn status(&self) -> &'static str {
        self.first
            .as_ref()
            .map_or("ZT_OK", |e| e.kind().status_name())
    }
}

fn walk(r: &Reader<'_>) -> Walk {
    let mut w = Walk::default();
    for i in 0..r.objects().len() {
        let obj = r.object(i);
        w.record(&obj, "object");
        let Ok(obj) = obj else { continue };
        for (c, comp) in obj.components().iter().enumerate() {
            let role = comp.role();
            let dl = comp.decoded_length();
            let (mut first, mut last) = ([0u8], [0u8]);
            let (mut r0, mut r1) = (Ok(()), Ok(()));
            if dl > 0 {
                r0 = r.read_range(i, c, 0, &mut first);
                w.record(&r0, "read_range(first byte)");
                r1 = r.read_range(i, c, dl - 1, &mut last);
                w.record(&r1, "read_range(last byte)");
            }
            let mut buf = vec![0u8; usize::try_from(dl).expect("decoded_length fits in memory")];
            let rd = r.read_into(i, c, &mut buf);
            w.record(&rd, "read_into");
            if rd.is_ok() && dl > 0 {
                if r0.is_ok() && first[0] != buf[0] {
                    w.problem(format!("object {i} component '{role}': range read of the first byte differs from read"));
                }
                if r1.is_ok() && last[0] != buf[buf.len() - 1] {
                    w.problem(format!("object {i} component '{role}': range read of the last byte differs from read"));
                }
            }
            let view = r.view(i, c);
            w.record(&view, "view");
            if let Ok(v) = &view {
                if v.data.len() as u64 != dl {
                    w.problem(format!(
                        "object {i} component '{role}': view size differs from decoded_length"
                    ));
                }
                // Zero-copy views into other formats are only aligned to their element size.
                let align = if v.zero_copy && r.container() != ztensor::Container::ZTensor {
                    comp.dtype().size()
                } else {
                    64
                };
                if !v.data.is_empty() && !(v.data.as_ptr() as usize).is_multiple_of(align) {
                    w.problem(format!(
                        "object {i} component '{role}': view not {align}-byte aligned"
                    ));
                }
                let sum = v
                    .data
                    .iter()
                    .fold(0u32, |a, &b| a.wrapping_add(u32::from(b)));
                std::hint::black_box(sum);
                if rd.is_ok() && v.data != &buf[..] {
                    w.problem(format!(
                        "object {i} component '{role}': view and read bytes differ"
                    ));
                }
            }
            match r.verify_component(i, c) {
                Err(e) if e.kind() == ErrorKind::NotFound => {
                    if comp.digest().is_some() {
                        w.problem(format!(
                            "object {i} component '{role}': has a digest but verifies as NotFound"
                        ));
                    }
                }
                other => {
                    w.record(&other, "verify_component");
                    if comp.digest().is_none() {
                        w.problem(format!(
                            "object {i} component '{role}': no digest, yet not NotFound"
                        ));
                    }
                }
            }
        }
        let v = r.validate_values(i);
        w.record(&v, "validate_values");
        let json = obj
            .attributes()
            .map_or_else(|| "{}".to_owned(), |a| ztensor::json::to_json(&a));
        if !json.starts_with('{') {
            w.problem(format!("object {i}: attributes JSON is not an object"));
        }
    }
    let json = r
        .attributes()
        .map_or_else(|| "{}".to_owned(), |a| ztensor::json::to_json(&a));
    if !json.starts_with('{') {
        w.problem("file attributes JSON is not an object".to_owned());
    }
    let v = r.verify();
    w.record(&v, "verify");
    w
}

/// Opens `path` one of three ways and walks it; None when it matches `e`, else the mismatch.
fn check(e: &Expectation, path: &Path, mode: &str) -> Option<String> {
    let bytes;
    let opened = match mode {
        "mmap" => Reader::open_with(
            path,
            &OpenOptions {
                use_mmap: true,
                ..Default::default()
            },
        ),
        "pread" => Reader::open_with(
            path,
            &OpenOptions {
                use_mmap: false,
                ..Default::default()
            },
        ),
        _ => {
            bytes = std::fs::read(path).expect("readable corpus file");
            Reader::from_slice(&bytes)
        }
    };
    let got = status(&opened);
    if got != e.open {
        let why = opened.err().map(|e| e.to_string()).unwrap_or_default();
        return Some(format!(
            "{} [{mode}]: open {got}, expected {} ({why}) -- {}",
            e.file, e.open, e.note
        ));
    }
    let Ok(reader) = opened else { return None };
    let w = walk(&reader);
    let mut out = Vec::new();
    if w.status() != e.walk {
        let why = w
            .first
            .as_ref()
            .map_or("no failure".to_owned(), ToString::to_string);
        out.push(format!(
            "{} [{mode}]: walk {}, expected {} ({why}) -- {}",
            e.file,
            w.status(),
            e.walk,
            e.note
        ));
    }
    if let Some(p) = w.problem {
        out.push(format!("{} [{mode}]: {p} -- {}", e.file, e.note));
    }
    (!out.is_empty()).then(|| out.join("\n"))
}

#[test]
fn every_file_gives_its_expected_statuses() {
    let all = expectations();
    let (mut passed, mut failed) = (0, 0);
    for e in &all {
        let path = dir().join(&e.file);
        for mode in ["mmap", "pread", "memory"] {
            match check(e, &path, mode) {
                None => passed += 1,
                Some(why) => {
                    println!("FAIL {why}");
                    failed += 1;
                }
            }
        }
    }
    println!("hostile corpus through the Rust API: {passed} passed, {failed} failed");
    assert_eq!(
        failed,
        0,
        "{failed} of {} checks failed (see the FAIL lines above)",
        passed + failed
    );
}

#[test]
fn opening_allocates_a_small_multiple_of_the_file() {
    let mut seen = Vec::new();
    let mut over = Vec::new();
    for e in expectations() {
        let bytes = std::fs::read(dir().join(&e.file)).unwrap();
        for mode in ["memory", "mmap", "pread"] {
            let path = dir().join(&e.file);
            let (opened, peak) = peak_during(|| match mode {
                "memory" => Reader::from_slice(&bytes).map(drop),
                "mmap" => Reader::open_with(
                    &path,
                    &OpenOptions {
                        use_mmap: true,
                        ..Default::default()
                    },
                )
                .map(drop),
                _ => Reader::open_with(
                    &path,
                    &OpenOptions {
                        use_mmap: false,
                        ..Default::default()
                    },
                )
                .map(drop),
            });
            drop(opened);
            let size = bytes.len() as u64;
            let budget = 64 * size + (1 << 20);
            if peak > budget {
                over.push(format!(
                    "{} [{mode}]: {peak} bytes at peak for a {size}-byte file (budget {budget})",
                    e.file
                ));
            }
            seen.push((
                peak as f64 / size.max(1) as f64,
                peak,
                size,
                format!("{} [{mode}]", e.file),
            ));
        }
    }
    seen.sort_by(|a, b| b.0.total_cmp(&a.0));
    let big: Vec<_> = seen.iter().filter(|s| s.2 >= 1024).collect();
    let max_peak = seen.iter().max_by_key(|s| s.1).unwrap();
    println!("open allocation, worst ratios (all files):");
    for s in seen.iter().take(3) {
        println!("  {:8.1} x  {} bytes for {} bytes  {}", s.0, s.1, s.2, s.3);
    }
    println!("open allocation, worst ratios (files of 1 KiB or more):");
    for s in big.iter().take(3) {
        println!("  {:8.1} x  {} bytes for {} bytes  {}", s.0, s.1, s.2, s.3);
    }
    println!(
        "largest open peak: {} bytes for the {}-byte {}",
        max_peak.1, max_peak.2, max_peak.3
    );
    assert!(
        over.is_empty(),
        "opening allocated too much:\n{}",
        over.join("\n")
    );
}

#[test]
fn the_corpus_is_complete_and_consistent() {
    let all = expectations();
    assert!(all.len() >= 150, "only {} files", all.len());
    let known = [
        "ZT_OK",
        "ZT_ERR_INVALID_ARGUMENT",
        "ZT_ERR_IO",
        "ZT_ERR_FORMAT",
        "ZT_ERR_UNSUPPORTED",
        "ZT_ERR_NOT_FOUND",
        "ZT_ERR_CHECKSUM",
        "ZT_ERR_LIMIT",
        "ZT_ERR_BUFFER_TOO_SMALL",
        "ZT_ERR_STATE",
        "ZT_ERR_INTERNAL",
    ];
    let mut listed = std::collections::HashSet::new();
    for e in &all {
        assert!(listed.insert(e.file.clone()), "{} listed twice", e.file);
        assert!(
            known.contains(&e.open.as_str()),
            "{}: bad open status {}",
            e.file,
            e.open
        );
        if e.open == "ZT_OK" {
            assert!(
                known.contains(&e.walk.as_str()),
                "{}: bad walk status {}",
                e.file,
                e.walk
            );
        } else {
            assert_eq!(
                e.walk, "-",
                "{}: a file that fails to open has no walk",
                e.file
            );
        }
    }
    for entry in std::fs::read_dir(dir()).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        if name.ends_with(".zt") {
            assert!(
                listed.contains(&name),
                "{name} is not listed in expected.tsv"
            );
        }
    }
    for e in &all {
        assert!(
            dir().join(&e.file).is_file(),
            "{} is listed but missing",
            e.file
        );
    }
}

// ---------------------------------------------------------------------------------------
// Claims that cannot be allocated, in child processes limited to 2 GiB of address space
// ---------------------------------------------------------------------------------------

const CHILD_ENV: &str = "ZT_HOSTILE_ALLOC_CHILD";

/// Entry point of the child: does nothing unless `CHILD_ENV` names a file and a call.
#[test]
fn alloc_child_entry() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        return;
    };
    let (file, call) = spec.split_once('\t').expect("file<TAB>call");
    let limit = libc::rlimit {
        rlim_cur: 2 << 30,
        rlim_max: 2 << 30,
    };
    assert_eq!(
        // SAFETY: plain system call on a valid struct.
        unsafe { libc::setrlimit(libc::RLIMIT_AS, &limit) },
        0,
        "setrlimit"
    );
    let r = Reader::open(file).expect("the file opens");
    let result = match call {
        "view" => r.view(0, 0).map(drop),
        "range0" => r.read_range(0, 0, 0, &mut [0u8]),
        "validate" => r.validate_values(0),
        other => panic!("unknown call {other}"),
    };
    println!(
        "ZT_STATUS {} {}",
        status(&result),
        result.err().map(|e| e.to_string()).unwrap_or_default()
    );
    std::process::exit(0);
}

#[test]
fn claims_that_cannot_be_allocated_fail_gracefully() {
    let alloc = dir().join("alloc");
    let text = std::fs::read_to_string(alloc.join("expected.tsv")).expect("alloc/expected.tsv");
    let mut failures = Vec::new();
    let mut count = 0;
    for line in text
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with("file\t"))
    {
        let f: Vec<&str> = line.splitn(4, '\t').collect();
        let (file, call, acceptable, note) = (f[0], f[1], f[2], f[3]);
        count += 1;
        let out = std::process::Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "alloc_child_entry",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, format!("{}\t{call}", alloc.join(file).display()))
            .env("RUST_BACKTRACE", "0")
            .output()
            .expect("spawn the child");
        let stdout = String::from_utf8_lossy(&out.stdout);
        let got = stdout
            .lines()
            .find_map(|l| l.split_once("ZT_STATUS ").map(|(_, s)| s))
            .map(str::to_owned);
        let accepted = got
            .as_deref()
            .and_then(|g| g.split(' ').next())
            .is_some_and(|g| acceptable.split('|').any(|a| a == g));
        if !(accepted && out.status.success()) {
            let stderr = String::from_utf8_lossy(&out.stderr);
            let first_err = stderr.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
            failures.push(format!(
                "{file} [{call}]: child {} with {:?}, acceptable {acceptable} ({first_err}) -- {note}",
                out.status,
                got.unwrap_or_else(|| "no status".to_owned())
            ));
        }
    }
    for f in &failures {
        println!("FAIL {f}");
    }
    println!(
        "claims that cannot be allocated: {} passed, {} failed",
        count - failures.len(),
        failures.len()
    );
    assert!(
        count > 0 && failures.is_empty(),
        "{} of {count} failed (see the FAIL lines)",
        failures.len()
    );
}

// ---------------------------------------------------------------------------------------
// Time: opening must stay linear in the manifest
// ---------------------------------------------------------------------------------------

/// A v1.2 file with one object of `n` zero-length components (35 manifest bytes each).
fn many_components(n: usize) -> Vec<u8> {
    use ztensor::cbor::{Value, to_vec};
    let t = |s: &str| Value::Text(s.to_owned());
    let comp = Value::Map(vec![
        (t("dtype"), t("u8")),
        (t("offset"), Value::Unsigned(64)),
        (t("length"), Value::Unsigned(0)),
    ]);
    let comps = (0..n)
        .map(|i| (t(&format!("r{i:06}")), comp.clone()))
        .collect();
    let object = Value::Map(vec![
        (t("shape"), Value::Array(vec![Value::Unsigned(1)])),
        (t("format"), t("custom")),
        (t("components"), Value::Map(comps)),
    ]);
    let root = Value::Map(vec![
        (t("version"), t("1.2.0")),
        (t("objects"), Value::Map(vec![(t("q"), object)])),
    ]);
    let manifest = to_vec(&root);
    let mut file = b"ZTEN1000".to_vec();
    file.resize(64, 0);
    file.extend_from_slice(&manifest);
    file.extend_from_slice(&(manifest.len() as u64).to_le_bytes());
    file.extend_from_slice(b"ZTEN1000");
    file
}

/// Opening 8x the components must not take much more than 8x the time. The role
/// uniqueness check was a linear scan per component: 40,000 components (a 1.4 MB file)
/// took 72 s to open in a release build (fixed in 4a0c0dc).
#[test]
fn opening_time_is_linear_in_the_component_count() {
    let time = |n: usize| {
        let bytes = many_components(n);
        let start = std::time::Instant::now();
        let r = Reader::from_slice(&bytes).expect("opens");
        assert_eq!(r.objects()[0].components().len(), n);
        (start.elapsed().as_secs_f64(), bytes.len())
    };
    time(500); // warm up
    let (small, _) = time(1_000);
    let (large, size) = time(8_000);
    println!("open: 1,000 components {small:.3} s, 8,000 components {large:.3} s ({size} bytes)");
    assert!(
        large <= (24.0 * small).max(2.0),
        "opening 8x the components took {:.0}x the time ({small:.3} s -> {large:.3} s): quadratic",
        large / small
    );
}

/// The committed files are exactly what generate.py writes (skipped without python3).
#[test]
fn the_generator_reproduces_the_committed_corpus() {
    let out = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("hostile-regen-{}", std::process::id()));
    std::fs::create_dir_all(&out).unwrap();
    let run = std::process::Command::new("python3")
        .arg(dir().join("generate.py"))
        .arg(&out)
        .output();
    let Ok(run) = run else {
        println!("python3 not found: generator check skipped");
        return;
    };
    assert!(
        run.status.success(),
        "generate.py failed: {}",
        String::from_utf8_lossy(&run.stderr)
    );
    for sub in ["", "alloc"] {
        let mut names: Vec<String> = std::fs::read_dir(out.join(sub))
            .unwrap()
            .map(|e| e.unwrap())
            .filter(|e| e.file_type().unwrap().is_file())
            .map(|e| e.file_name().into_string().unwrap())
            .collect();
        names.sort();
        for name in &names {
            let fresh = std::fs::read(out.join(sub).join(name)).unwrap();
            let committed = std::fs::read(dir().join(sub).join(name)).unwrap_or_default();
            assert!(
                fresh == committed,
                "{sub}/{name} differs from what generate.py writes: run it and commit the result"
            );
        }
        let committed = std::fs::read_dir(dir().join(sub))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .ends_with(".zt")
            })
            .count();
        assert_eq!(
            committed,
            names.iter().filter(|n| n.ends_with(".zt")).count(),
            "stale .zt files in {sub}/"
        );
    }
    std::fs::remove_dir_all(&out).unwrap();
}
