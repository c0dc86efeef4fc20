//! Remote objects (feature `remote`): files served over HTTP by a server this test starts
//! on 127.0.0.1 (tests/interop/range_server.py: Range, ETag, If-Match, request and byte
//! counts, injected faults) and over S3 by moto's server (pinned in
//! tests/interop/remote-requirements.txt). Asserts what moves, not only what arrives:
//! requests and body bytes for an open, one tensor, a range and a full load; every vector
//! reads (or fails) exactly as its local copy; every injected fault is a status.

mod common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use ztensor::{
    DType, ErrorKind, OpenOptions, Reader, RemoteOptions, WriteOptions, Writer, load::Request,
};

/// The range server, killed when dropped.
struct Server {
    child: Child,
    port: u16,
}

impl Server {
    fn start(root: &Path, token: &str) -> Server {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/range_server.py");
        let mut child = Command::new(std::env::var("ZT_PYTHON").unwrap_or("python3".into()))
            .arg(script)
            .arg(root)
            .env("RANGE_SERVER_TOKEN", token)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the range server");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .expect("PORT n")
            .parse()
            .unwrap();
        Server { child, port }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}/{path}", self.port)
    }

    /// GET of a control path; the body.
    fn control(&self, path: &str) -> String {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(s, "GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        text.split_once("\r\n\r\n").unwrap().1.to_owned()
    }

    /// (requests, body bytes) since the last reset.
    fn stats(&self) -> (u64, u64) {
        let body = self.control("/__stats");
        let num = |key: &str| -> u64 {
            let at = body.find(key).unwrap() + key.len() + 3;
            body[at..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .unwrap()
                .parse()
                .unwrap()
        };
        (num("requests"), num("bytes"))
    }

    fn reset(&self) {
        self.control("/__reset");
    }

    /// The GETs of each file since the last reset, by path.
    fn paths(&self) -> std::collections::BTreeMap<String, u64> {
        let stats: serde_json::Value = serde_json::from_str(&self.control("/__stats")).unwrap();
        let paths = stats["paths"].as_object().unwrap();
        paths
            .iter()
            .map(|(k, v)| (k.clone(), v.as_u64().unwrap()))
            .collect()
    }

    fn fault(&self, kind: &str, count: u32) {
        self.control(&format!("/__fault?kind={kind}&count={count}"));
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn opts() -> OpenOptions {
    OpenOptions::default()
}

fn no_retry() -> RemoteOptions {
    RemoteOptions {
        retries: Some(0),
        ..RemoteOptions::default()
    }
}

/// Bytes of a few values repeated: compresses to about half.
fn compressible(len: usize) -> Vec<u8> {
    common::bytes(7, len).iter().map(|b| b & 0x0f).collect()
}

const MIB: u64 = 1 << 20;

/// A 256 MiB model: one big tensor, a 3 MiB one, a small one, and a 20 MiB zstd one of
/// five frames (with a seek table).
fn big_model(dir: &Path) -> PathBuf {
    let path = dir.join("big.zt");
    let mut w = Writer::create(&path).unwrap();
    let raw = WriteOptions::default();
    w.add("small", DType::F32, &[1000], &common::bytes(1, 4000), &raw)
        .unwrap();
    w.add(
        "mid",
        DType::U8,
        &[3 * MIB],
        &common::bytes(2, 3 << 20),
        &raw,
    )
    .unwrap();
    let z = compressible(20 << 20);
    w.add(
        "z",
        DType::U8,
        &[z.len() as u64],
        &z,
        &WriteOptions::zstd(1),
    )
    .unwrap();
    let big = vec![0u8; 242 << 20];
    w.add("big", DType::U8, &[big.len() as u64], &big, &raw)
        .unwrap();
    w.finish().unwrap();
    path
}

/// Writes a file of one u8 tensor `a` holding `data` at `path`.
fn one_tensor(path: &Path, data: &[u8]) {
    let mut w = Writer::create(path).unwrap();
    w.add(
        "a",
        DType::U8,
        &[data.len() as u64],
        data,
        &WriteOptions::default(),
    )
    .unwrap();
    w.finish().unwrap();
}

/// A server for a scratch directory holding `m.zt`, a file of one u8 tensor of `data`;
/// and the file's URL.
fn serve_one_tensor(test: &str, data: &[u8]) -> (PathBuf, Server, String) {
    let dir = common::temp_dir(test);
    one_tensor(&dir.join("m.zt"), data);
    let server = Server::start(&dir, "");
    let url = server.url("m.zt");
    (dir, server, url)
}

fn component(r: &Reader<'_>, name: &str) -> (usize, ztensor::Component) {
    let o = r.find(name).unwrap();
    (o, r.objects()[o].components()[0].clone())
}

#[test]
fn a_remote_read_moves_only_what_it_reads() {
    let dir = common::temp_dir("remote_moves");
    let path = big_model(&dir);
    let local = Reader::open(&path).unwrap();
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size > 255 * MIB, "{size}");
    let server = Server::start(&dir, "");

    // Open: one suffix request (size, ETag, last 64 KiB) and the first block.
    let r = Reader::open(server.url("big.zt")).unwrap();
    let (requests, bytes) = server.stats();
    eprintln!("open of {size} bytes: {requests} requests, {bytes} bytes");
    assert!(
        requests <= 3 && bytes < MIB,
        "{requests} requests, {bytes} bytes"
    );
    let ours = r.transfer_stats().unwrap();
    assert_eq!((ours.requests, ours.bytes), (requests, bytes));
    assert_eq!(r.objects().len(), 4);
    assert!(r.mapping().is_none());

    // One 3 MiB tensor: exactly its bytes, in one request.
    server.reset();
    let (mid, c) = component(&r, "mid");
    assert_eq!(
        r.read_to_vec(mid, 0).unwrap(),
        local.read_to_vec(mid, 0).unwrap()
    );
    assert_eq!(
        server.stats(),
        (1, c.length()),
        "a large read fetches its bytes only"
    );
    eprintln!(
        "one tensor of {} bytes: 1 request, {} bytes",
        c.length(),
        c.length()
    );

    // A view: a copy the reader keeps, served again without a request.
    server.reset();
    let v = r.view(mid, 0).unwrap();
    assert!(!v.zero_copy);
    assert!(v.data == local.view(mid, 0).unwrap().data);
    assert_eq!(r.view(mid, 0).unwrap().data.as_ptr(), v.data.as_ptr());
    assert_eq!(server.stats().0, 1);

    // A small tensor: its bytes plus at most one block (1 MiB).
    server.reset();
    let (small, c) = component(&r, "small");
    assert_eq!(
        r.read_to_vec(small, 0).unwrap(),
        local.read_to_vec(small, 0).unwrap()
    );
    let (requests, bytes) = server.stats();
    assert!(
        requests <= 1 && bytes <= c.length() + MIB,
        "{requests} {bytes}"
    );

    // A range of the zstd tensor: the seek table, the header of each of its five frames
    // (checked against the table, fetched concurrently, once per reader) and one frame;
    // not the component.
    server.reset();
    let (z, c) = component(&r, "z");
    let mut got = vec![0u8; 1000];
    let mut want = vec![0u8; 1000];
    r.read_range(z, 0, 9 << 20, &mut got).unwrap();
    local.read_range(z, 0, 9 << 20, &mut want).unwrap();
    assert!(got == want);
    let (requests, bytes) = server.stats();
    eprintln!(
        "range of 1000 bytes of a {}-byte zstd tensor: {requests} requests, {bytes} bytes",
        c.length()
    );
    assert!(
        requests <= 2 + 5 && bytes < c.length() / 3,
        "{requests} {bytes} of {}",
        c.length()
    );
    // Another range of it: the index is built; one frame.
    server.reset();
    r.read_range(z, 0, 1 << 20, &mut got).unwrap();
    local.read_range(z, 0, 1 << 20, &mut want).unwrap();
    assert!(got == want);
    assert_eq!(server.stats().0, 1);

    // A 1/8 slice of every tensor (tensor parallelism) through one batch.
    server.reset();
    let r = Reader::open(server.url("big.zt")).unwrap();
    let mut slices: Vec<Vec<u8>> = r
        .objects()
        .iter()
        .map(|o| vec![0u8; (o.components()[0].decoded_length() / 8) as usize])
        .collect();
    let mut requests_: Vec<Request<'_>> = slices
        .iter_mut()
        .enumerate()
        .map(|(i, dst)| {
            let n = dst.len() as u64;
            Request::host(i, 0, dst).slice(ztensor::load::Slice::Range { first: 0, count: n })
        })
        .collect();
    assert!(r.load_batch(&mut requests_, 0).iter().all(|x| x.is_ok()));
    drop(requests_);
    for (i, s) in slices.iter().enumerate() {
        let mut want = vec![0u8; s.len()];
        local.read_range(i, 0, 0, &mut want).unwrap();
        assert!(*s == want, "slice of object {i}");
    }
    let (requests, bytes) = server.stats();
    eprintln!("open + 1/8 of every tensor: {requests} requests, {bytes} bytes");
    assert!(bytes < size / 8 + 12 * MIB, "{bytes}");

    // The whole model through one batch, with a bounded number of requests in flight.
    server.reset();
    let r = Reader::open(server.url("big.zt")).unwrap();
    let mut all: Vec<Vec<u8>> = r
        .objects()
        .iter()
        .map(|o| vec![0u8; o.components()[0].decoded_length() as usize])
        .collect();
    let mut requests_: Vec<Request<'_>> = all
        .iter_mut()
        .enumerate()
        .map(|(i, dst)| Request::host(i, 0, dst))
        .collect();
    assert!(r.load_batch(&mut requests_, 0).iter().all(|x| x.is_ok()));
    drop(requests_);
    for (i, a) in all.iter().enumerate() {
        assert!(*a == local.read_to_vec(i, 0).unwrap(), "object {i}");
    }
    let (requests, bytes) = server.stats();
    eprintln!("open + full load: {requests} requests, {bytes} bytes of {size}");
    assert!(bytes <= size + 2 * MIB, "{bytes}");
    std::fs::remove_dir_all(&dir).unwrap();
}

/// What a walk over a reader gives: every object, every component's bytes or error kind,
/// every digest check; an open failure is its kind.
fn transcript(r: Result<Reader<'_>, ztensor::Error>) -> Vec<String> {
    let r = match r {
        Ok(r) => r,
        Err(e) => return vec![format!("open {:?}", e.kind())],
    };
    let mut out = vec![format!("{:?} {} objects", r.container(), r.objects().len())];
    for (i, o) in r.objects().iter().enumerate() {
        for (ci, c) in o.components().iter().enumerate() {
            let data = match r.read_to_vec(i, ci) {
                Ok(v) => format!(
                    "{:x}",
                    v.iter().fold(0xcbf29ce484222325u64, |h, &b| (h ^ b as u64)
                        .wrapping_mul(0x100000001b3))
                ),
                Err(e) => format!("{:?}", e.kind()),
            };
            let view = r.view(i, ci).map(|v| v.data.len()).map_err(|e| e.kind());
            let verify = r.verify_component(i, ci).map_err(|e| e.kind());
            out.push(format!(
                "{} {} {} {data} {view:?} {verify:?}",
                o.name(),
                c.role(),
                c.decoded_length()
            ));
        }
    }
    out.push(format!("verify {:?}", r.verify().map_err(|e| e.kind())));
    out
}

fn files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            files(&p, out);
        } else if !matches!(
            p.extension().and_then(|e| e.to_str()),
            Some("json" | "py" | "md" | "tsv" | "txt" | "rs" | "toml" | "lock")
        ) {
            out.push(p);
        }
    }
}

#[test]
fn every_vector_reads_remotely_as_its_local_copy() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    let server = Server::start(&root, "");
    let mut all = Vec::new();
    files(&root, &mut all);
    all.sort();
    let mut formats = std::collections::BTreeMap::new();
    for path in &all {
        let rel = path.strip_prefix(&root).unwrap().to_str().unwrap();
        if rel.starts_with("hostile/alloc/") {
            continue; // decompression bombs: minutes of decoding, nothing about sources
        }
        let local = transcript(Reader::open(path));
        let t = std::time::Instant::now();
        let remote = transcript(Reader::open_url(&server.url(rel), &opts(), &no_retry()));
        if t.elapsed().as_millis() > 200 {
            eprintln!("{rel}: {:?}", t.elapsed());
        }
        assert_eq!(local, remote, "{rel}");
        *formats
            .entry(local[0].split(' ').next().unwrap().to_owned())
            .or_insert(0) += 1;
    }
    eprintln!("{} files: {formats:?}", all.len());
    for f in ["ZTensor", "Safetensors", "Gguf", "Tensogram"] {
        assert!(
            formats.get(f).copied().unwrap_or(0) > 0,
            "no {f} vector read: {formats:?}"
        );
    }
}

/// The builds of tests/c/test_remote.c ctest names in ZT_TEST_REMOTE_C (':'-separated:
/// plain, and under ASan where the compiler has it); none under plain `cargo test`.
fn c_programs() -> Vec<String> {
    let Ok(programs) = std::env::var("ZT_TEST_REMOTE_C") else {
        eprintln!("ZT_TEST_REMOTE_C not set (ctest sets it): the C program was not run");
        return Vec::new();
    };
    programs
        .split(':')
        .filter(|p| !p.is_empty())
        .map(str::to_owned)
        .collect()
}

#[test]
fn injected_faults_are_statuses_that_name_the_url() {
    let dir = common::temp_dir("remote_faults");
    one_tensor(&dir.join("m.zt"), &common::bytes(3, 200_000));
    let server = Server::start(&dir, "");
    let url = server.url("m.zt");
    let read = |kind: &str| {
        let r = Reader::open_url(&url, &opts(), &no_retry()).unwrap();
        server.fault(kind, 1);
        let e = r.read_to_vec(0, 0).unwrap_err();
        server.reset();
        e
    };
    for (kind, status) in [
        ("drop", ErrorKind::Io),
        ("truncate", ErrorKind::Io),
        ("short", ErrorKind::Io),
        ("wrong_range", ErrorKind::Io),
        ("full", ErrorKind::Io),
        ("status:500", ErrorKind::Io),
        ("status:403", ErrorKind::Io),
    ] {
        let e = read(kind);
        assert_eq!(e.kind(), status, "{kind}: {e}");
        assert!(e.message().contains(&url), "{kind}: {e}");
        eprintln!("{kind}: {e}");
    }
    // At open too.
    for kind in ["drop", "truncate", "status:403", "wrong_range"] {
        server.fault(kind, 1);
        let e = Reader::open_url(&url, &opts(), &no_retry()).unwrap_err();
        server.reset();
        assert_eq!(e.kind(), ErrorKind::Io, "{kind}: {e}");
        assert!(e.message().contains(&url), "{kind}: {e}");
    }
    // No such object; no server at all.
    let e = Reader::open(server.url("missing.zt")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(
        e.message().contains("missing.zt") && e.message().contains("404"),
        "{e}"
    );
    let e = Reader::open_url("http://127.0.0.1:1/m.zt", &opts(), &no_retry()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.message().contains("http://127.0.0.1:1/m.zt"), "{e}");

    // The same faults through the C API, from the C program (plain and under ASan).
    for program in &c_programs() {
        let out = Command::new(&program)
            .current_dir(&dir)
            .env("ZT_REMOTE_FAULTS", server.url("").trim_end_matches('/'))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        eprintln!("{program}:\n{text}{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{program} failed");
        assert!(
            text.contains("faults: 7 kinds"),
            "{program} injected nothing"
        );
        assert!(
            text.contains("fork: a URL opened in the child"),
            "{program} did not fork"
        );
    }

    // The object changes after the open: a Format error, never other bytes.
    let r = Reader::open_url(&url, &opts(), &no_retry()).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(20));
    one_tensor(&dir.join("m.zt"), &common::bytes(4, 200_000));
    let e = r.read_to_vec(0, 0).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Format, "{e}");
    assert!(e.message().contains("changed"), "{e}");
}

#[test]
fn retries_recover_from_a_dropped_connection() {
    let dir = common::temp_dir("remote_retry");
    let data = common::bytes(5, 300_000);
    one_tensor(&dir.join("m.zt"), &data);
    let server = Server::start(&dir, "");
    let r = Reader::open(server.url("m.zt")).unwrap();
    server.fault("drop", 1);
    assert_eq!(r.read_to_vec(0, 0).unwrap(), data);
    server.fault("status:503", 2);
    assert_eq!(
        Reader::open(server.url("m.zt"))
            .unwrap()
            .read_to_vec(0, 0)
            .unwrap(),
        data
    );
}

#[test]
fn a_bearer_token_and_headers_reach_the_server() {
    let dir = common::temp_dir("remote_token");
    std::fs::create_dir_all(dir.join("private")).unwrap();
    let data = common::bytes(6, 1000);
    one_tensor(&dir.join("private/m.zt"), &data);
    let server = Server::start(&dir, "s3cr3t");
    let url = server.url("private/m.zt");
    let e = Reader::open_url(&url, &opts(), &no_retry()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io);
    assert!(
        e.message().contains("401") && !e.message().contains("s3cr3t"),
        "{e}"
    );
    let with = |remote: RemoteOptions| Reader::open_url(&url, &opts(), &remote);
    let r = with(RemoteOptions {
        bearer_token: Some("s3cr3t".into()),
        ..no_retry()
    })
    .unwrap();
    assert_eq!(r.read_to_vec(0, 0).unwrap(), data);
    let header = ("Authorization".to_owned(), "Bearer s3cr3t".to_owned());
    let r = with(RemoteOptions {
        headers: vec![header],
        ..no_retry()
    })
    .unwrap();
    assert_eq!(r.read_to_vec(0, 0).unwrap(), data);
    let bad = ("bad name".to_owned(), "x".to_owned());
    let e = with(RemoteOptions {
        headers: vec![bad],
        ..no_retry()
    })
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::InvalidArgument, "{e}");
}

#[test]
fn a_presigned_url_keeps_its_query() {
    let dir = common::temp_dir("remote_signed");
    std::fs::create_dir_all(dir.join("signed")).unwrap();
    let data = common::bytes(11, 300_000);
    one_tensor(&dir.join("signed/m.zt"), &data);
    let server = Server::start(&dir, "s3cr3t");
    let url = server.url("signed/m.zt");
    let r = Reader::open_url(&format!("{url}?sig=s3cr3t"), &opts(), &no_retry()).unwrap();
    assert_eq!(r.read_to_vec(0, 0).unwrap(), data);
    // Every request carried it: the first bytes, the last, and the tensor's.
    assert_eq!(server.paths(), counts(&[("/signed/m.zt", 3)]));
    for bad in [url.clone(), format!("{url}?sig=wr0ng")] {
        let e = Reader::open_url(&bad, &opts(), &no_retry()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
        assert!(
            e.message().contains("403") && e.message().contains(&url),
            "{e}"
        );
        assert!(!e.message().contains("wr0ng"), "{e}");
    }
}

fn size(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

fn counts(pairs: &[(&str, u64)]) -> std::collections::BTreeMap<String, u64> {
    pairs.iter().map(|(k, n)| (k.to_string(), *n)).collect()
}

#[test]
fn a_set_by_url_opens_its_shards_where_its_index_is() {
    let sets = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/sets");
    let server = Server::start(&sets, "");
    let st = sets.join("safetensors");
    let shards: Vec<String> = (1..=3)
        .map(|k| format!("model-0000{k}-of-00003.safetensors"))
        .collect();
    // Every file of the committed set is under 64 KiB: one request each, whole.
    server.reset();
    let r = Reader::open_url(
        &server.url("safetensors/model.safetensors.index.json"),
        &opts(),
        &no_retry(),
    )
    .unwrap();
    let all: u64 = shards.iter().map(|f| size(&st.join(f))).sum::<u64>()
        + size(&st.join("model.safetensors.index.json"));
    assert_eq!(server.stats(), (4, all));
    let stats = r.transfer_stats().unwrap();
    assert_eq!((stats.requests, stats.bytes), (4, all));
    assert_eq!(r.shard_count(), 3);
    let local = Reader::open(st.join("model.safetensors.index.json"));
    assert_eq!(transcript(local), transcript(Ok(r)));
    assert_eq!(
        server.stats(),
        (4, all),
        "the reads were served from the open's answers"
    );

    // A GGUF split set from the URL of any of its splits; one split alone when asked.
    let gguf = sets.join("gguf");
    for no in 1..=3 {
        let name = format!("split-0000{no}-of-00003.gguf");
        server.reset();
        let remote = Reader::open_url(&server.url(&format!("gguf/{name}")), &opts(), &no_retry());
        assert_eq!(remote.as_ref().unwrap().shard_count(), 3);
        assert_eq!(server.stats().0, 3, "{name}");
        assert_eq!(
            transcript(Reader::open(gguf.join(&name))),
            transcript(remote),
            "{name}"
        );
    }
    let one = OpenOptions {
        one_file: true,
        ..opts()
    };
    server.reset();
    let r = Reader::open_url(
        &server.url("gguf/split-00002-of-00003.gguf"),
        &one,
        &no_retry(),
    )
    .unwrap();
    assert!(!r.is_set());
    assert_eq!(
        server.paths(),
        counts(&[("/gguf/split-00002-of-00003.gguf", 1)])
    );
    let local = Reader::open_with(gguf.join("split-00002-of-00003.gguf"), &one);
    assert_eq!(transcript(local), transcript(Ok(r)));
    // ZT_OPEN_ONE_FILE is the C name of `one_file`; the index itself is no tensor file.
    let e = Reader::open_url(
        &server.url("safetensors/model.safetensors.index.json"),
        &one,
        &no_retry(),
    )
    .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Format, "{e}");
}

#[test]
fn a_remote_set_fetches_only_the_shards_it_reads() {
    let dir = common::temp_dir("remote_set_lazy");
    // Four shards of two 4 MiB tensors each.
    let data: Vec<Vec<u8>> = (0..8).map(|i| common::bytes(20 + i, 4 << 20)).collect();
    let mut w = ztensor::ShardedWriter::create(dir.join("model.zt"), 9 << 20).unwrap();
    for (i, d) in data.iter().enumerate() {
        let shape = [d.len() as u64];
        w.add(
            &format!("t{i}"),
            DType::U8,
            &shape,
            d,
            &WriteOptions::default(),
        )
        .unwrap();
    }
    let index = w.finish().unwrap();
    let shard = |k: usize| format!("model-0000{k}-of-00004.zt");
    assert!(dir.join(shard(4)).is_file());
    let server = Server::start(&dir, "");
    let r = Reader::open_url(&server.url("model.zt.index.json"), &opts(), &no_retry()).unwrap();
    // The open: the index, and of each shard its first bytes (which say the format) and
    // its last (footer and manifest), one request each.
    let open = r.transfer_stats().unwrap();
    let mut each = vec![("/model.zt.index.json".to_owned(), 1)];
    each.extend((1..=4).map(|k| (format!("/{}", shard(k)), 2)));
    let each: Vec<(&str, u64)> = each.iter().map(|(p, n)| (p.as_str(), *n)).collect();
    assert_eq!(server.paths(), counts(&each));
    assert_eq!(open.requests, 9);
    assert!(open.bytes <= 9 * (64 << 10), "{open:?}");
    // One tensor of the third shard: its bytes, from its shard only.
    let o = r.find("t5").unwrap();
    assert_eq!(r.read_to_vec(o, 0).unwrap(), data[5]);
    let one = r.transfer_stats().unwrap();
    assert_eq!(
        (one.requests - open.requests, one.bytes - open.bytes),
        (1, 4 << 20)
    );
    let mut after = each.clone();
    after[3].1 = 3;
    assert_eq!(server.paths(), counts(&after));
    // Everything, in one batch.
    let mut out: Vec<Vec<u8>> = data.iter().map(|d| vec![0; d.len()]).collect();
    let mut requests: Vec<Request<'_>> = out
        .iter_mut()
        .enumerate()
        .map(|(i, dst)| Request::host(r.find(&format!("t{i}")).unwrap(), 0, dst))
        .collect();
    assert!(r.load_batch(&mut requests, 0).iter().all(|x| x.is_ok()));
    assert_eq!(out, data);
    let full = r.transfer_stats().unwrap();
    let total: u64 = (1..=4).map(|k| size(&dir.join(shard(k)))).sum();
    eprintln!("set of {total} bytes: open {open:?}, one tensor {one:?}, all {full:?}");
    // Reads are not cached: t5 moves again, and nothing else but the tensors' bytes; the
    // two tensors of a shard lie one after the other, so one request fetches both.
    assert_eq!(
        (full.requests - one.requests, full.bytes - one.bytes),
        (4, 8 * (4 << 20))
    );
    assert!(open.bytes + size(&index) < total / 32, "{open:?}");
    assert_eq!(server.stats(), (full.requests, full.bytes));
}

#[test]
fn a_missing_shard_is_an_error_naming_its_url_without_credentials() {
    let dir = common::temp_dir("remote_set_missing");
    let st = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors/sets/safetensors");
    std::fs::create_dir_all(dir.join("private")).unwrap();
    for e in std::fs::read_dir(&st).unwrap() {
        let p = e.unwrap().path();
        std::fs::copy(&p, dir.join("private").join(p.file_name().unwrap())).unwrap();
    }
    std::fs::remove_file(dir.join("private/model-00002-of-00003.safetensors")).unwrap();
    let server = Server::start(&dir, "s3cr3t");
    let token = RemoteOptions {
        bearer_token: Some("s3cr3t".into()),
        ..no_retry()
    };
    let index = server.url("private/model.safetensors.index.json");
    // With user info in the URL too: never in a message.
    let with_user = index.replace("http://", "http://user:pa55word@");
    for url in [&index, &with_user] {
        let e = Reader::open_url(url, &opts(), &token).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
        let missing = server.url("private/model-00002-of-00003.safetensors");
        assert!(e.message().contains(&missing), "{e}");
        assert!(e.message().contains("404"), "{e}");
        assert!(
            !e.message().contains("s3cr3t") && !e.message().contains("pa55word"),
            "{e}"
        );
    }
    // The shards need the token as the index does: without it, the index is refused.
    let e = Reader::open_url(&index, &opts(), &no_retry()).unwrap_err();
    assert!(e.message().contains("401"), "{e}");
}

/// moto's S3 server on 127.0.0.1 with `files` uploaded to the bucket "models"; stopped
/// when dropped (its stdin closes).
struct S3 {
    child: Child,
    port: u16,
}

impl S3 {
    fn start(files: &[(&str, PathBuf)]) -> S3 {
        let python = common::pinned_python("tests/interop/remote-requirements.txt", "remote-venv");
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/interop/s3_server.py");
        let mut child = Command::new(python)
            .arg(script)
            .arg("models")
            .args(files.iter().map(|(k, p)| format!("{k}={}", p.display())))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port = line
            .trim()
            .strip_prefix("PORT ")
            .expect("PORT n")
            .parse()
            .unwrap();
        S3 { child, port }
    }

    fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// (GET requests, body bytes) the server sent to every client since the last reset.
    fn served(&self) -> (u64, u64) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(s, "GET /__stats HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
        let body: serde_json::Value =
            serde_json::from_str(text.split_once("\r\n\r\n").unwrap().1).unwrap();
        (
            body["requests"].as_u64().unwrap(),
            body["bytes"].as_u64().unwrap(),
        )
    }

    fn reset(&self) {
        let mut s = TcpStream::connect(("127.0.0.1", self.port)).unwrap();
        write!(s, "GET /__reset HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n").unwrap();
        let mut text = String::new();
        s.read_to_string(&mut text).unwrap();
    }

    /// Everything an S3 client needs here, given as options, not taken from the
    /// environment (which other tests share, and which must not send a client looking for
    /// credentials anywhere but 127.0.0.1).
    fn options(&self) -> RemoteOptions {
        let config = [
            ("aws_access_key_id", "test"),
            ("aws_secret_access_key", "test"),
            ("aws_region", "us-east-1"),
        ];
        RemoteOptions {
            endpoint: Some(self.endpoint()),
            allow_http: true,
            config: config
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            ..no_retry()
        }
    }
}

impl Drop for S3 {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn s3_objects_read_as_their_local_copies_from_rust_and_c() {
    let dir = common::temp_dir("remote_s3");
    let model = dir.join("model.zt");
    let mut w = Writer::create(&model).unwrap();
    w.add(
        "embed",
        DType::F32,
        &[1024, 256],
        &common::bytes(8, 1 << 20),
        &WriteOptions::default(),
    )
    .unwrap();
    for i in 0..8 {
        let z = compressible(3 << 20);
        w.add(
            &format!("layer{i}"),
            DType::U8,
            &[z.len() as u64],
            &z,
            &WriteOptions::zstd(1),
        )
        .unwrap();
    }
    w.add(
        "norm",
        DType::F32,
        &[256],
        &common::bytes(9, 1024),
        &WriteOptions::default(),
    )
    .unwrap();
    w.finish().unwrap();
    let vectors = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    let files: Vec<(&str, PathBuf)> = vec![
        ("model.zt", model.clone()),
        (
            "st/small.safetensors",
            vectors.join("safetensors/small.safetensors"),
        ),
        (
            "st/dtypes.safetensors",
            vectors.join("safetensors/dtypes.safetensors"),
        ),
        ("gguf/quant_v3.gguf", vectors.join("gguf/quant_v3.gguf")),
        (
            "tgm/compressed.tgm",
            vectors.join("tensogram/compressed.tgm"),
        ),
        (
            "tgm/streamed_multi.tgm",
            vectors.join("tensogram/streamed_multi.tgm"),
        ),
        ("v01/f32.zt", vectors.join("reference/v01_dtype_f32.zt")),
    ];
    // The committed sets, under a prefix of their own.
    let mut files = files;
    let sets = vectors.join("sets");
    let mut set_files = Vec::new();
    for kind in ["safetensors", "gguf"] {
        for e in std::fs::read_dir(sets.join(kind)).unwrap() {
            let p = e.unwrap().path();
            let name = p.file_name().unwrap().to_str().unwrap().to_owned();
            set_files.push((format!("sets/{kind}/{name}"), p));
        }
    }
    files.extend(set_files.iter().map(|(k, p)| (k.as_str(), p.clone())));
    let s3 = S3::start(&files);
    let files = &files[..files.len() - set_files.len()];
    // A set by the URL of its index, or of any GGUF split: as the local set.
    let index = sets.join("safetensors/model.safetensors.index.json");
    let mut opens = vec![(
        "s3://models/sets/safetensors/model.safetensors.index.json".to_owned(),
        index.clone(),
        4,
    )];
    for no in 1..=3 {
        let name = format!("split-0000{no}-of-00003.gguf");
        opens.push((
            format!("s3://models/sets/gguf/{name}"),
            sets.join("gguf").join(&name),
            3,
        ));
    }
    for (url, local, requests) in &opens {
        let remote = Reader::open_url(url, &opts(), &s3.options());
        let stats = remote.as_ref().ok().and_then(|r| r.transfer_stats());
        assert_eq!(transcript(Reader::open(local)), transcript(remote), "{url}");
        assert_eq!(stats.unwrap().requests, *requests, "{url}");
    }
    for (key, path) in files {
        let url = format!("s3://models/{key}");
        let remote = Reader::open_url(&url, &opts(), &s3.options());
        let stats = remote.as_ref().ok().and_then(|r| r.transfer_stats());
        assert_eq!(transcript(Reader::open(path)), transcript(remote), "{url}");
        let stats = stats.unwrap();
        assert!(stats.requests <= 3 && stats.bytes < MIB, "{url}: {stats:?}");
    }
    let r = Reader::open_url("s3://models/model.zt", &opts(), &s3.options()).unwrap();
    let open = r.transfer_stats().unwrap();
    let local = Reader::open(&model).unwrap();
    for i in 0..r.objects().len() {
        assert_eq!(
            r.read_to_vec(i, 0).unwrap(),
            local.read_to_vec(i, 0).unwrap()
        );
    }
    let all = r.transfer_stats().unwrap();
    let size = std::fs::metadata(&model).unwrap().len();
    eprintln!("s3 open: {open:?}; open + full load of {size} bytes: {all:?}");
    assert!(all.bytes <= size + MIB, "{all:?}");

    let e = Reader::open_url("s3://models/missing.zt", &opts(), &s3.options()).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Io, "{e}");
    assert!(e.message().contains("s3://models/missing.zt"), "{e}");

    // The C program, with everything in the environment as a deployment would set it.
    for program in &c_programs() {
        let out = Command::new(program)
            .current_dir(&dir)
            .env("AWS_ENDPOINT_URL", s3.endpoint())
            .env("AWS_ALLOW_HTTP", "true")
            .env("AWS_ACCESS_KEY_ID", "test")
            .env("AWS_SECRET_ACCESS_KEY", "test")
            .env("AWS_REGION", "us-east-1")
            .env("ZT_REMOTE_URL", "s3://models/model.zt")
            .env("ZT_REMOTE_LOCAL", &model)
            .env("ZT_REMOTE_SET_URL", &opens[0].0)
            .env("ZT_REMOTE_SET_LOCAL", &index)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        eprintln!("{program}:\n{text}{}", String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success(), "{program} failed");
        assert_eq!(
            text.matches("open + full load of").count(),
            2,
            "{program} loaded nothing, or not the set"
        );
    }
}

/// A body longer than the range asked for is refused as soon as its first byte too many
/// arrives, never read to its end: an endless one (Content-Length 10^12, then zeros) and
/// one twice as long, at open (the suffix request) and at a read. The reader stays usable.
#[test]
fn a_body_longer_than_its_range_is_refused_at_once() {
    let data = common::bytes(6, 300_000);
    let (dir, server, url) = serve_one_tensor("remote_long_bodies", &data);
    for kind in ["endless", "long"] {
        server.reset();
        server.fault(kind, 1);
        let t = std::time::Instant::now();
        let e = Reader::open_url(&url, &opts(), &no_retry()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{kind}: {e}");
        assert!(
            e.message().contains(&format!(
                "{url}: reading its size and last bytes: the server sent more than the {} \
                 bytes asked for",
                std::fs::metadata(dir.join("m.zt"))
                    .unwrap()
                    .len()
                    .min(64 << 10)
            )),
            "{kind}: {e}"
        );
        let r = Reader::open_url(&url, &opts(), &no_retry()).unwrap();
        server.fault(kind, 1);
        let e = r.read_to_vec(0, 0).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{kind}: {e}");
        assert!(
            e.message()
                .contains("the server sent more than the 300000 bytes asked for"),
            "{kind}: {e}"
        );
        assert_eq!(r.read_to_vec(0, 0).unwrap(), data, "{kind}");
        // At once: what the server managed to send before the connection closed is the
        // socket's buffers, not the body it announced.
        let (_, sent) = server.stats();
        eprintln!("{kind}: refused in {:?}, {sent} bytes sent", t.elapsed());
        assert!(sent < 64 * MIB, "{kind}: {sent} bytes sent");
    }
}

/// An endless body under an address-space limit (`RLIMIT_AS`: what the process uses now
/// and 1 GiB) is an `Io` error, not an allocation failure that aborts the process: the
/// test runs itself in a child process that sets the limit.
#[test]
fn an_endless_body_under_a_memory_limit_is_an_error_not_an_abort() {
    const NAME: &str = "an_endless_body_under_a_memory_limit_is_an_error_not_an_abort";
    if let Ok(url) = std::env::var("ZT_TEST_ENDLESS_URL") {
        let status = std::fs::read_to_string("/proc/self/status").unwrap();
        let vm_kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmSize:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap();
        let limit = vm_kb * 1024 + (1 << 30);
        let rl = libc::rlimit {
            rlim_cur: limit,
            rlim_max: limit,
        };
        // SAFETY: setrlimit with a valid struct.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &rl) }, 0);
        let e = Reader::open_url(&url, &opts(), &no_retry()).unwrap_err();
        assert_eq!(e.kind(), ErrorKind::Io, "{e}");
        println!("child: {e}");
        println!("CHILD-OK");
        return;
    }
    let (_dir, server, url) =
        serve_one_tensor("remote_endless_limited", &common::bytes(7, 100_000));
    server.fault("endless", 1);
    let out = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", NAME, "--nocapture", "--test-threads=1"])
        .env("ZT_TEST_ENDLESS_URL", &url)
        .env("MALLOC_ARENA_MAX", "2")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!("{text}{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "the child failed: {:?}", out.status);
    assert!(text.contains("CHILD-OK"), "the child did not run the test");
}

/// A GGUF header of 6.4 MB (a vocabulary of 200,000 tokens), read by the parser in
/// pieces, is fetched about once: blocks that grow while the reads go forward, a read that
/// crosses the end of the last block continuing from there.
#[test]
fn a_gguf_header_of_megabytes_is_fetched_about_once() {
    use common::gguf::{Gguf, gstr};
    let dir = common::temp_dir("remote_gguf_header");
    let n = 200_000u64;
    let mut tokens = 8u32.to_le_bytes().to_vec();
    tokens.extend(n.to_le_bytes());
    for i in 0..n {
        tokens.extend(gstr(format!("token-{i:08}-{}", "x".repeat(10)).as_bytes()));
    }
    let weights = common::bytes(8, 4000);
    let g = Gguf::new()
        .kv("tokenizer.ggml.tokens", 9, &tokens)
        .tensor("w", &[1000], 0, &weights);
    let header = g.header().len() as u64;
    let file = g.build();
    std::fs::write(dir.join("vocab.gguf"), &file).unwrap();
    let server = Server::start(&dir, "");
    let r = Reader::open(server.url("vocab.gguf")).unwrap();
    let (requests, bytes) = server.stats();
    eprintln!("open of a GGUF with a {header}-byte header: {requests} requests, {bytes} bytes");
    assert!(header > 6_000_000, "{header}");
    // Blocks double from 128 KiB to 1 MiB: about header / 1 MiB + 4 requests, and at most
    // one block more than the header.
    assert!(requests <= 14, "{requests} requests");
    assert!(
        bytes <= header + 2 * MIB,
        "{bytes} bytes for a {header}-byte header"
    );
    assert_eq!(r.read_to_vec(0, 0).unwrap(), weights);
    let tokens = r.typed_attribute(None, "tokenizer.ggml.tokens").unwrap();
    assert_eq!(tokens.len().unwrap(), n as usize);
    assert_eq!(
        tokens.string_at(199_999).unwrap(),
        b"token-00199999-xxxxxxxxxx"
    );
}

/// An error answer's page in a message: the status and at most 200 characters of the
/// body, whitespace made single spaces; an endless one is read only so far.
#[test]
fn an_error_page_is_its_status_and_a_short_excerpt() {
    // Larger than the blocks an open holds, so that a read asks the server.
    let data = common::bytes(9, 1_000_000);
    let (_dir, server, url) = serve_one_tensor("remote_error_page", &data);
    for kind in ["page:404", "endless_page:404", "page:403"] {
        let status = if kind.ends_with("403") {
            "403 Forbidden"
        } else {
            "404 Not Found"
        };
        server.reset();
        server.fault(kind, 1);
        let e = Reader::open_url(&url, &opts(), &no_retry()).unwrap_err();
        eprintln!("{kind}: {e}");
        assert!(
            matches!(e.kind(), ErrorKind::Io | ErrorKind::NotFound),
            "{kind}: {e}"
        );
        let m = e.message();
        assert!(m.contains(&url) && m.contains(status), "{kind}: {e}");
        let body = m
            .split(&format!("{status}: "))
            .nth(1)
            .expect("a body excerpt");
        assert!(
            body.trim_start_matches("<html><body>")
                .starts_with("<p>There is nothing here.</p> <p>There"),
            "{kind}: {e}"
        );
        assert!(body.ends_with(" ..."), "{kind}: {e}");
        assert!(
            body.chars().count() <= 204,
            "{kind}: {} characters",
            body.len()
        );
        assert!(!m.contains("END-OF-PAGE"), "{kind}");
        let (_, sent) = server.stats();
        assert!(sent < 64 * MIB, "{kind}: {sent} bytes sent");
        // At a read too.
        let r = Reader::open_url(&url, &opts(), &no_retry()).unwrap();
        server.fault(kind, 1);
        let e = r.read_to_vec(0, 0).err().expect("the read fails");
        assert!(e.message().contains(status), "{kind}: {e}");
        assert!(!e.message().contains("END-OF-PAGE"), "{kind}");
        assert!(e.message().len() < 1000, "{kind}: {e}");
    }
}

/// Malformed URLs, and URLs no store takes, with user info (and a signature in the
/// query): every message, from every way of opening, shows neither.
#[test]
fn malformed_urls_never_show_their_credentials() {
    let urls = [
        "http://user:SECRETPW@127.0.0.1:99999/x.zt",
        "http://user:SECRETPW@256.1.1.1/x.zt",
        "http://user:SECRETPW@[::g]/x.zt",
        "http://user:SECRETPW@ho st/x.zt",
        "https://user:SECRETPW@/x.zt",
        "http://user:SECRET/PW@host:1/x.zt",
        "s3://user:SECRETPW@bu cket/x.zt",
        "http://user:SECRETPW@127.0.0.1:99999/x.zt?sig=SECRETSIG",
        "ftp://user:SECRETPW@host/x.zt",
        "http://user:SECRET PW@127.0.0.1:1/x.zt",
    ];
    for url in urls {
        let mut errors = vec![
            Reader::open_url(url, &opts(), &no_retry()).unwrap_err(),
            Reader::open_url(
                url,
                &OpenOptions {
                    one_file: true,
                    ..opts()
                },
                &no_retry(),
            )
            .unwrap_err(),
        ];
        if !url.starts_with("ftp:") {
            errors.push(Reader::open(url).unwrap_err());
        }
        for e in errors {
            eprintln!("{url}: {e}");
            assert!(!e.message().contains("SECRET"), "{url}: {e}");
            assert!(
                matches!(
                    e.kind(),
                    ErrorKind::InvalidArgument | ErrorKind::Io | ErrorKind::Unsupported
                ),
                "{url}: {e}"
            );
        }
    }
}

// --- tensor-parallel ranks that share storage (issue 39 item 6) ----------------------------

const RANK_CHILD: &str = "ZT_RANK_CHILD";
/// Each layer: q [1024, 2048] bf16 (a column-parallel layer: ranks take rows), o
/// [128, 16384] bf16 (row-parallel: ranks take columns, one run of bytes per row), and a
/// norm [2048] every rank loads whole. Two layers, one per shard: 16 MiB in all.
const TP_LAYERS: usize = 2;

/// A safetensors file of `tensors` (name, shape, bytes) in order.
fn safetensors_file(path: &Path, tensors: &[(String, Vec<u64>, Vec<u8>)]) {
    let mut header = String::from("{");
    let mut at = 0u64;
    for (i, (name, shape, data)) in tensors.iter().enumerate() {
        if i > 0 {
            header.push(',');
        }
        let dims: Vec<String> = shape.iter().map(u64::to_string).collect();
        header.push_str(&format!(
            "\"{name}\":{{\"dtype\":\"BF16\",\"shape\":[{}],\"data_offsets\":[{at},{}]}}",
            dims.join(","),
            at + data.len() as u64
        ));
        at += data.len() as u64;
    }
    header.push('}');
    while header.len() % 8 != 0 {
        header.push(' ');
    }
    let mut out = (header.len() as u64).to_le_bytes().to_vec();
    out.extend_from_slice(header.as_bytes());
    for (_, _, data) in tensors {
        out.extend_from_slice(data);
    }
    std::fs::write(path, out).unwrap();
}

/// The sharded model: two safetensors shards and their index; (index path, model bytes).
fn tp_model(dir: &Path) -> (PathBuf, u64) {
    let mut weight_map = Vec::new();
    let mut total = 0u64;
    for layer in 0..TP_LAYERS {
        let file = format!("model-{:05}-of-{:05}.safetensors", layer + 1, TP_LAYERS);
        let mut tensors = Vec::new();
        for (name, shape) in [("q", vec![1024u64, 2048]), ("o", vec![128, 16384])] {
            let n: u64 = shape.iter().product();
            let data = common::bytes(layer as u64 * 10 + name.len() as u64, (n * 2) as usize);
            tensors.push((format!("layers.{layer}.{name}.weight"), shape, data));
        }
        if layer == 0 {
            tensors.push((
                "norm.weight".to_owned(),
                vec![2048],
                common::bytes(99, 4096),
            ));
        }
        for (name, _, data) in &tensors {
            weight_map.push(format!("\"{name}\":\"{file}\""));
            total += data.len() as u64;
        }
        safetensors_file(&dir.join(&file), &tensors);
    }
    let index = dir.join("model.safetensors.index.json");
    std::fs::write(
        &index,
        format!(
            "{{\"metadata\":{{\"total_size\":{total}}},\"weight_map\":{{{}}}}}",
            weight_map.join(",")
        ),
    )
    .unwrap();
    (index, total)
}

/// Rank `rank` of `world`'s requests: rows of q, columns of o, the norm whole; and the
/// bytes of its share.
fn rank_requests<'d>(
    r: &Reader<'_>,
    rank: u64,
    world: u64,
    bufs: &'d mut [Vec<u8>],
) -> Vec<Request<'d>> {
    let mut out = Vec::new();
    for (i, buf) in bufs.iter_mut().enumerate() {
        let name = rank_tensor(i);
        let object = r.find(&name).unwrap();
        let shape = r.objects()[object].shape().to_vec();
        let q = Request::host(object, 0, buf);
        out.push(if name.ends_with(".q.weight") {
            let per = shape[0] / world;
            q.slice(ztensor::load::Slice::Rows {
                first: rank * per,
                count: per,
            })
        } else if name.ends_with(".o.weight") {
            let per = shape[1] / world;
            q.slice(ztensor::load::Slice::Columns {
                first: rank * per,
                count: per,
            })
        } else {
            q
        });
    }
    out
}

/// The tensors a rank loads, in order.
fn rank_tensor(i: usize) -> String {
    match i {
        0 => "norm.weight".to_owned(),
        i => {
            let (layer, kind) = ((i - 1) / 2, if (i - 1) % 2 == 0 { "q" } else { "o" });
            format!("layers.{layer}.{kind}.weight")
        }
    }
}

/// Buffers of rank `rank`'s slices.
fn rank_buffers(world: u64) -> Vec<Vec<u8>> {
    (0..1 + 2 * TP_LAYERS)
        .map(|i| {
            let name = rank_tensor(i);
            // q (1024 x 2048) and o (128 x 16384) are both 4 MiB of bf16.
            let bytes = if name.starts_with("norm") {
                4096
            } else {
                (4 << 20) / world
            };
            vec![0u8; bytes as usize]
        })
        .collect()
}

/// A rank's process: opens the set over S3, loads its slices with a host loader, checks
/// them against the local copy; prints "ZT_RANK <open bytes> <bytes> <requests> <share>".
#[test]
fn rank_child() {
    let Ok(spec) = std::env::var(RANK_CHILD) else {
        return; // Run directly: nothing to do.
    };
    let parts: Vec<&str> = spec.split('\t').collect();
    let (url, local, endpoint, rank, world) = (
        parts[0],
        parts[1],
        parts[2],
        parts[3].parse::<u64>().unwrap(),
        parts[4].parse::<u64>().unwrap(),
    );
    let remote = RemoteOptions {
        endpoint: Some(endpoint.to_owned()),
        allow_http: true,
        config: [
            ("aws_access_key_id", "test"),
            ("aws_secret_access_key", "test"),
            ("aws_region", "us-east-1"),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect(),
        ..no_retry()
    };
    let r = Reader::open_url(url, &opts(), &remote).unwrap();
    let open = r.transfer_stats().unwrap();
    let mut bufs = rank_buffers(world);
    let share: u64 = bufs.iter().map(|b| b.len() as u64).sum();
    let loader = ztensor::Loader::new(None, &ztensor::LoaderOptions::default()).unwrap();
    let mut q = rank_requests(&r, rank, world, &mut bufs);
    for (i, (result, _)) in loader
        .load(&r, &mut q, &ztensor::load::NoEvents)
        .iter()
        .enumerate()
    {
        assert!(result.is_ok(), "rank {rank} request {i}: {result:?}");
    }
    drop(q);
    let all = r.transfer_stats().unwrap();
    // The same slices of the local copy.
    let l = Reader::open(local).unwrap();
    let mut want = rank_buffers(world);
    let mut q = rank_requests(&l, rank, world, &mut want);
    assert!(l.load_batch(&mut q, 0).iter().all(|x| x.is_ok()));
    drop(q);
    assert!(bufs == want, "rank {rank}: wrong bytes");
    println!(
        "ZT_RANK {} {} {} {share}",
        open.bytes, all.bytes, all.requests
    );
}

#[test]
fn ranks_sharing_s3_storage_fetch_the_model_about_once() {
    let dir = common::temp_dir("remote_ranks");
    let (index, total) = tp_model(&dir);
    let mut files = vec![("tp/model.safetensors.index.json", index.clone())];
    let names: Vec<String> = (0..TP_LAYERS)
        .map(|l| format!("tp/model-{:05}-of-{:05}.safetensors", l + 1, TP_LAYERS))
        .collect();
    for (l, name) in names.iter().enumerate() {
        files.push((
            name.as_str(),
            dir.join(format!(
                "model-{:05}-of-{:05}.safetensors",
                l + 1,
                TP_LAYERS
            )),
        ));
    }
    let s3 = S3::start(&files);
    for world in [2u64, 4] {
        s3.reset();
        let children: Vec<Child> = (0..world)
            .map(|rank| {
                Command::new(std::env::current_exe().unwrap())
                    .args(["--exact", "rank_child", "--nocapture", "--test-threads=1"])
                    .env(
                        RANK_CHILD,
                        format!(
                            "s3://models/tp/model.safetensors.index.json\t{}\t{}\t{rank}\t{world}",
                            index.display(),
                            s3.endpoint()
                        ),
                    )
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .unwrap()
            })
            .collect();
        let mut ranks = Vec::new();
        for (rank, child) in children.into_iter().enumerate() {
            let out = child.wait_with_output().unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success(),
                "rank {rank}: {stdout}\n{}",
                String::from_utf8_lossy(&out.stderr)
            );
            let line = stdout
                .lines()
                .find_map(|l| l.split_once("ZT_RANK ").map(|p| p.1))
                .unwrap();
            let v: Vec<u64> = line
                .split_whitespace()
                .map(|n| n.parse().unwrap())
                .collect();
            ranks.push((v[0], v[1], v[2], v[3]));
        }
        let (requests, served) = s3.served();
        let fetched: u64 = ranks.iter().map(|r| r.1).sum();
        let opens: u64 = ranks.iter().map(|r| r.0).sum();
        eprintln!(
            "TP={world}: the server sent {served} bytes in {requests} GETs for a model of \
             {total} bytes ({:.3}x; the opens {opens}); per rank (open, all, requests, \
             share): {ranks:?}",
            served as f64 / total as f64
        );
        // What the ranks counted is what the server sent.
        assert_eq!(served, fetched);
        assert_eq!(requests, ranks.iter().map(|r| r.2).sum::<u64>());
        // Together: the model about once (the norm, loaded by every rank, is 4 KiB).
        assert!(served * 10 <= total * 11, "{served} of {total}");
        for (rank, &(open, all, _, share)) in ranks.iter().enumerate() {
            // Each: its share and what the open read (the index, each shard's header
            // and the tail fetched with its size).
            assert!(
                (all - open) * 10 <= share * 11,
                "rank {rank}: {} bytes for a share of {share}",
                all - open
            );
        }
    }
}
