//! Remote loads (issue 18): W1 read over the network from servers on 127.0.0.1.
//! - S3: moto's server (pinned in tests/interop/remote-requirements.txt) holding W1 as a
//!   set of 16 shards with an index. Every tensor loaded with one `load_batch` over the
//!   index's `s3://` URL (the open included) against downloading every shard whole, one
//!   GET each, as many at once as ours keeps in flight (object_store, the same client).
//!   moto reads an object's whole value for every range it serves (about 0.6 s per
//!   request for a 1 GiB object), so the set keeps each object at 64 MiB: with one 1 GiB
//!   object the load would measure moto, not the client.
//! - HTTP: tests/interop/range_server.py (Range served by seek + read) holding W1 as the one
//!   file it is: the same load by its `http://` URL against one GET of the whole file.
//! - What moves: requests and bytes of the open (the set, and the one file), and of a
//!   tensor-parallel slice (rank 0 of 8: the first 1/8 of every matrix's rows, norms whole),
//!   from `Reader::transfer_stats`, against the file's size.
//!
//! Skipped, saying why, when no Python with moto can be found or made.

use std::cell::RefCell;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Instant;

use futures_util::stream::{self, StreamExt, TryStreamExt};
use object_store::{ObjectStore, ObjectStoreExt};

use super::{Ctx, Runs, Section};
use crate::Res;
use crate::files::Files;
use crate::harness::{caller_buffers, case, filled_right, measure, names_of, row_from};
use crate::report::Row;
use crate::workloads::Workload;

pub const SECTION: Section = Section {
    name: "remote",
    runs: Runs::On(&["W1"], run),
};

const SHARDS: u64 = 16;
const MIB: f64 = (1u64 << 20) as f64;

/// A server this section started, stopped when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    /// Runs `python script args`, waiting for its "PORT n" line.
    fn start(python: &Path, script: &Path, args: &[String], env: &[(&str, &str)]) -> Res<Server> {
        let mut child = Command::new(python)
            .arg(script)
            .args(args)
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().ok_or("no stdout")?).read_line(&mut line)?;
        let Some(port) = line
            .trim()
            .strip_prefix("PORT ")
            .and_then(|p| p.parse().ok())
        else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("{} printed {line:?}, not PORT n", script.display()).into());
        };
        Ok(Server { child, port })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn has_moto(python: &Path) -> bool {
    Command::new(python)
        .args(["-c", "import moto.server, boto3"])
        .stderr(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success())
}

/// A Python with moto and boto3: `ZT_BENCH_PYTHON`, the venv tests/remote.rs made, or one
/// made here from the tests' pinned requirements. Err: why there is none.
fn s3_python() -> Result<PathBuf, String> {
    let tests = repo().join("target/tmp/remote-venv/bin/python");
    let found = std::env::var_os("ZT_BENCH_PYTHON")
        .map(PathBuf::from)
        .into_iter()
        .chain([tests])
        .find(|p| has_moto(p));
    if let Some(p) = found {
        return Ok(p);
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/remote-venv");
    let python = venv.join("bin/python");
    if has_moto(&python) {
        return Ok(python);
    }
    let base = std::env::var("ZT_PYTHON").unwrap_or_else(|_| "python3".to_owned());
    let made = Command::new(&base)
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .map_err(|e| format!("no {base}: {e}"))?;
    if !made.success() {
        return Err(format!("{base} -m venv failed"));
    }
    let requirements = repo().join("tests/interop/remote-requirements.txt");
    let installed = Command::new(&python)
        .args([
            "-m",
            "pip",
            "install",
            "--quiet",
            "--disable-pip-version-check",
            "-r",
        ])
        .arg(&requirements)
        .status()
        .map_err(|e| format!("pip: {e}"))?;
    if !installed.success() || !has_moto(&python) {
        return Err(format!("installing {} failed", requirements.display()));
    }
    Ok(python)
}

/// W1 as a set of about `SHARDS` zTensor shards (made once): the index, and the shards.
fn make_set(f: &Files, dir: &Path) -> Res<(PathBuf, Vec<PathBuf>)> {
    let base = dir.join("w1_set");
    let index = dir.join("w1_set.zt.index.json");
    let fresh = |p: &Path| {
        let (Ok(a), Ok(b)) = (std::fs::metadata(p), std::fs::metadata(&f.ours)) else {
            return false;
        };
        matches!((a.modified(), b.modified()), (Ok(x), Ok(y)) if x >= y)
    };
    let shards_of = |index: &Path| -> Res<Vec<PathBuf>> {
        let set = ztensor::Reader::open(index)?;
        (0..set.shard_count())
            .map(|i| {
                Ok(set
                    .shard_path(i)?
                    .ok_or("a shard without a path")?
                    .to_owned())
            })
            .collect()
    };
    if fresh(&index)
        && let Ok(shards) = shards_of(&index)
        && shards.iter().all(|s| fresh(s))
    {
        return Ok((index, shards));
    }
    let r = ztensor::Reader::open(&f.ours)?;
    let size = std::fs::metadata(&f.ours)?.len();
    // v1.2 shards, as the single file they are cut from.
    let options = ztensor::CreateOptions {
        durable: false,
        ..crate::formats::v1_2()
    };
    let mut w = ztensor::ShardedWriter::create_with(&base, size / SHARDS + 1, &options)?;
    for o in 0..r.objects().len() {
        w.copy_object(&r, o, &Default::default())?;
    }
    w.finish()?;
    Ok((index.clone(), shards_of(&index)?))
}

/// One `load_batch` of every tensor (the open included) into `bufs`, in workload order.
fn load_all(
    url: &str,
    remote: &ztensor::RemoteOptions,
    w: &Workload,
    bufs: &mut [Vec<u8>],
) -> Res<ztensor::TransferStats> {
    let r = ztensor::Reader::open_url(url, &Default::default(), remote)?;
    let mut requests = Vec::with_capacity(bufs.len());
    for (i, dst) in bufs.iter_mut().enumerate() {
        let object = r
            .find(&w.tensors[i].name)
            .ok_or_else(|| format!("no tensor '{}'", w.tensors[i].name))?;
        requests.push(ztensor::load::Request::host(object, 0, dst));
    }
    for result in r.load_batch(&mut requests, 0) {
        result?;
    }
    Ok(r.transfer_stats().unwrap_or_default())
}

/// What an open moved.
fn opened(url: &str, remote: &ztensor::RemoteOptions) -> Res<ztensor::TransferStats> {
    let r = ztensor::Reader::open_url(url, &Default::default(), remote)?;
    Ok(r.transfer_stats().unwrap_or_default())
}

/// The tensor-parallel slice of rank 0 of 8 of every tensor: the first 1/8 of the rows of
/// a matrix, a vector whole. (requests, bytes) of the open, then of the slice.
fn slice(
    url: &str,
    remote: &ztensor::RemoteOptions,
) -> Res<(ztensor::TransferStats, ztensor::TransferStats, u64)> {
    let r = ztensor::Reader::open_url(url, &Default::default(), remote)?;
    let open = r.transfer_stats().unwrap_or_default();
    let mut bufs: Vec<(usize, Vec<u8>)> = Vec::new();
    for (i, o) in r.objects().iter().enumerate() {
        let c = &o.components()[0];
        let len = c.decoded_length();
        let want = match o.shape() {
            [rows, ..] if o.shape().len() >= 2 && *rows >= 8 => len / rows * (rows / 8),
            _ => len,
        };
        bufs.push((i, vec![0u8; want as usize]));
    }
    let wanted: u64 = bufs.iter().map(|(_, b)| b.len() as u64).sum();
    let mut requests: Vec<ztensor::load::Request<'_>> = bufs
        .iter_mut()
        .map(|(i, dst)| {
            let n = dst.len() as u64;
            ztensor::load::Request::host(*i, 0, dst)
                .slice(ztensor::load::Slice::Range { first: 0, count: n })
        })
        .collect();
    for result in r.load_batch(&mut requests, 0) {
        result?;
    }
    let all = r.transfer_stats().unwrap_or_default();
    let moved = ztensor::TransferStats {
        requests: all.requests - open.requests,
        bytes: all.bytes - open.bytes,
    };
    Ok((open, moved, wanted))
}

/// GETs of whole objects, `concurrency` at once: the bytes received.
fn get_whole(
    rt: &tokio::runtime::Runtime,
    store: &Arc<dyn ObjectStore>,
    keys: &[String],
    concurrency: usize,
) -> Res<u64> {
    let gets = keys.iter().map(|k| {
        let store = store.clone();
        let path = object_store::path::Path::from(k.as_str());
        async move {
            let body = store.get(&path).await?.bytes().await?;
            Ok::<u64, object_store::Error>(body.len() as u64)
        }
    });
    let sizes: Vec<u64> = rt.block_on(
        stream::iter(gets)
            .buffer_unordered(concurrency)
            .try_collect(),
    )?;
    Ok(sizes.iter().sum())
}

fn run(ctx: &Ctx, w: &Workload, f: &Files, rows: &mut Vec<Row>) -> Res<()> {
    let python = match s3_python() {
        Ok(p) => p,
        Err(why) => {
            eprintln!("remote: skipped, no Python with moto ({why}; or set ZT_BENCH_PYTHON)");
            return Ok(());
        }
    };
    let start = Instant::now();
    let (index, shards) = make_set(f, &ctx.args.dir)?;
    let mut uploads = vec![format!("w1_set.zt.index.json={}", index.display())];
    let mut keys = Vec::new();
    for s in &shards {
        let name = s.file_name().and_then(|n| n.to_str()).ok_or("shard name")?;
        uploads.push(format!("{name}={}", s.display()));
        keys.push(name.to_owned());
    }
    eprintln!(
        "W1: remote: moto S3 server, uploading the {}-shard set",
        shards.len()
    );
    let mut args = vec!["models".to_owned()];
    args.extend(uploads);
    let s3 = match Server::start(
        &python,
        &repo().join("tests/interop/s3_server.py"),
        &args,
        &[],
    ) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("remote: skipped, the S3 server did not start: {e}");
            return Ok(());
        }
    };
    let endpoint = format!("http://127.0.0.1:{}", s3.port);
    let config = [
        ("aws_access_key_id", "test"),
        ("aws_secret_access_key", "test"),
        ("aws_region", "us-east-1"),
    ];
    let s3_options = ztensor::RemoteOptions {
        endpoint: Some(endpoint.clone()),
        allow_http: true,
        config: config
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect(),
        ..Default::default()
    };
    let dir = ctx.args.dir.canonicalize()?;
    let file = f
        .ours
        .file_name()
        .and_then(|n| n.to_str())
        .ok_or("W1 name")?;
    let http = Server::start(
        &python,
        &repo().join("tests/interop/range_server.py"),
        &[dir.display().to_string()],
        &[],
    )?;
    let http_url = format!("http://127.0.0.1:{}/{file}", http.port);
    let s3_url = "s3://models/w1_set.zt.index.json";
    eprintln!(
        "W1: remote: servers up after {:.1} s",
        start.elapsed().as_secs_f64()
    );

    // Our reader installs the TLS provider object_store's client needs; a store of our own
    // is made after it.
    let open_set = opened(s3_url, &s3_options)?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()?;
    let s3_store: Arc<dyn ObjectStore> = Arc::new(
        object_store::aws::AmazonS3Builder::new()
            .with_bucket_name("models")
            .with_endpoint(&endpoint)
            .with_allow_http(true)
            .with_access_key_id("test")
            .with_secret_access_key("test")
            .with_region("us-east-1")
            .build()?,
    );
    let http_store: Arc<dyn ObjectStore> = Arc::new(
        object_store::http::HttpBuilder::new()
            .with_url(format!("http://127.0.0.1:{}", http.port))
            .with_client_options(object_store::ClientOptions::new().with_allow_http(true))
            .build()?,
    );
    let size = std::fs::metadata(&f.ours)?.len();
    let set_size: u64 = shards
        .iter()
        .map(|s| std::fs::metadata(s).map(|m| m.len()))
        .sum::<std::io::Result<u64>>()?;
    let concurrency = 8;

    // (a) Loads: one load_batch against GETs of whole objects, over S3 and over HTTP.
    let bufs = RefCell::new(caller_buffers(w));
    let check = |who| filled_right(w, &bufs, who);
    let moved = RefCell::new(ztensor::TransferStats::default());
    for (label, url, options, store, objects, bytes, runs) in [
        (
            "remote load, S3 (moto) set",
            s3_url.to_owned(),
            &s3_options,
            &s3_store,
            keys.clone(),
            set_size,
            1,
        ),
        (
            "remote load, HTTP, one file",
            http_url.clone(),
            &ztensor::RemoteOptions::default(),
            &http_store,
            vec![file.to_owned()],
            size,
            ctx.args.runs.min(3),
        ),
    ] {
        eprintln!("W1: {label}");
        let whole = |n: u64| -> Res<()> {
            if n != bytes {
                return Err(format!("the GETs brought {n} bytes, not {bytes}").into());
            }
            Ok(())
        };
        let cases = vec![
            case("ours open + load_batch", || {
                *moved.borrow_mut() = load_all(&url, options, w, &mut bufs.borrow_mut())?;
                Ok(())
            })
            .check(check("load_batch")),
            case("GET of every object whole", || {
                whole(get_whole(&rt, store, &objects, concurrency)?)
            }),
        ];
        let labels = names_of(&cases);
        let t = measure(runs, cases)?;
        let m = *moved.borrow();
        let row = row_from(label, w.id, &labels, &t, true)
            .bytes(w.total())
            .note(format!(
                "{} object(s) of {:.1} MiB; ours moved {:.1} MiB in {} requests, \
                 {concurrency} in flight; the limit GETs each object whole, {concurrency} at once",
                objects.len(),
                bytes as f64 / MIB,
                m.bytes as f64 / MIB,
                m.requests
            ));
        let row = if objects.len() > 1 {
            let n = row.note.clone();
            row.note(format!(
                "{n}; moto reads an object's whole value for every range it serves, so each of \
                 ours' requests costs it about as much as a whole GET of that shard"
            ))
        } else {
            row
        };
        let met = row.vs_limit().is_some_and(|r| r >= 0.5);
        rows.push(row.target(">= 0.5x GET whole", met));
    }

    // (b) A tensor-parallel slice, and (c) the opens: what moves, against the file.
    eprintln!("W1: remote: bytes moved by a 1/8 slice and by the opens");
    let (_, slice_moved, wanted) = slice(s3_url, &s3_options)?;
    let open_one = opened(&http_url, &Default::default())?;
    let row = Row::new(
        "remote 1/8 TP slice, moved",
        w.id,
        "MiB",
        slice_moved.bytes as f64 / MIB,
    )
    .limit("the whole set", set_size as f64 / MIB)
    .note(format!(
        "rank 0 of 8 (first 1/8 of every matrix's rows, vectors whole): {:.1} MiB wanted, \
         {:.1} MiB in {} requests over S3 after the open",
        wanted as f64 / MIB,
        slice_moved.bytes as f64 / MIB,
        slice_moved.requests
    ));
    // A read under 64 KiB fetches the 64 KiB block around it (the reader's coalescing
    // margin); a larger one exactly its bytes.
    let met = slice_moved.bytes <= wanted + slice_moved.requests * (64 << 10);
    rows.push(row.target("<= wanted + 64 KiB a request", met));
    let row = Row::new(
        "remote open, moved",
        w.id,
        "MiB",
        open_set.bytes as f64 / MIB,
    )
    .peer("one file over HTTP", open_one.bytes as f64 / MIB)
    .limit("the whole file", size as f64 / MIB)
    .note(format!(
        "the {}-shard set over S3: {} requests, {} bytes (the index, each shard's first and \
         last bytes); the one file over HTTP: {} requests, {} bytes",
        shards.len(),
        open_set.requests,
        open_set.bytes,
        open_one.requests,
        open_one.bytes
    ));
    let met = open_one.bytes < 1 << 20 && open_one.requests <= 3;
    rows.push(row.target("one file: <= 3 requests, < 1 MiB", met));
    drop((s3, http));
    eprintln!("W1: remote: {:.1} s in all", start.elapsed().as_secs_f64());
    Ok(())
}
