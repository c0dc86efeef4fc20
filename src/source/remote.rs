//! A remote object as a source (feature `remote`): `s3://`, `gs://`, `az://`, `abfs://`,
//! `http://` and `https://` URLs through Apache Arrow's `object_store`, on a small tokio
//! runtime this module owns (no caller ever sees it). Opening costs one request (a suffix
//! range: the object's size, ETag and its last `TAIL` bytes); reads of at most `SMALL`
//! bytes (headers, manifests, frame headers, seek tables) are served from a few cached
//! blocks fetched whole, growing while the reads go forward; larger reads fetch exactly
//! their bytes, split into `PART`s fetched concurrently. Every request waits for one of
//! `concurrency` permits, so a batch on many threads has at most that many in flight.
//! Every answer is checked: its length, its range (by `object_store`) and its ETag and
//! size against those at open (an object that changed is a `Format` error).

use std::future::Future;
use std::ops::Range;
use std::sync::atomic::{AtomicPtr, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::stream::{self, StreamExt, TryStreamExt};
use object_store::path::Path as StorePath;
use object_store::{
    ClientOptions, GetOptions, GetRange, ObjectStore, ObjectStoreScheme, RetryConfig,
};

use super::RemoteOptions;

mod errors;
use crate::error::{Error, Result, bail, err};
use errors::{Connector, map_error, redact, redact_text, scrub};

/// Bytes fetched at open from the end of the object (footer, manifest, seek tables).
const TAIL: u64 = 64 << 10;
/// Reads up to this size go through the block cache.
const SMALL: u64 = 64 << 10;
/// The first block a small read fetches; doubled while reads go forward, up to `MAX_BLOCK`.
const BLOCK: u64 = 64 << 10;
const MAX_BLOCK: u64 = 1 << 20;
/// Blocks kept, in bytes (oldest dropped first).
const CACHE_BYTES: u64 = 4 << 20;
/// Large reads are fetched in pieces of this size, concurrently.
pub(crate) const PART: u64 = 8 << 20;
/// Requests in flight per reader when the options don't say.
pub(crate) const DEFAULT_CONCURRENCY: usize = 8;
const DEFAULT_RETRIES: usize = 3;

/// Counts of what a remote reader transferred.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TransferStats {
    /// GET requests answered (retries inside `object_store` count once).
    pub requests: u64,
    /// Body bytes received.
    pub bytes: u64,
}

struct Blocks {
    /// (first byte, bytes), oldest first.
    held: Vec<(u64, bytes::Bytes)>,
    /// Where the last fetched block ended and the size of the next one.
    last_end: u64,
    next: u64,
}

/// Where remote objects are read from: one store (client, credentials, endpoint), one
/// limit of requests in flight and one tally of what was transferred, shared by the
/// objects of a set (an index and its shards, a GGUF split set), which sit in one
/// directory: `dir` (as shown) is `prefix` (as the store names it).
pub(crate) struct Site {
    store: Box<dyn ObjectStore>,
    /// The directory's URL without user info or query, for messages (no final `/`).
    dir: Box<str>,
    prefix: StorePath,
    /// The object the site was made for, and its URL as shown.
    object: StorePath,
    shown: Box<str>,
    permits: tokio::sync::Semaphore,
    concurrency: usize,
    requests: AtomicU64,
    bytes: AtomicU64,
    /// The process the site was made in: its store's connections belong to that
    /// process's runtime (see `runtime`), so another process (a child made by `fork()`)
    /// must open the URL again.
    pid: u32,
}

pub(crate) struct Remote {
    site: Arc<Site>,
    path: StorePath,
    /// The URL without user info or query, for messages.
    url: Box<str>,
    size: u64,
    etag: Option<String>,
    blocks: Mutex<Blocks>,
}

/// The library's runtime and the process it was started in.
struct Owned {
    pid: u32,
    runtime: tokio::runtime::Runtime,
}

/// The runtime every remote reader of this process shares: two worker threads, made on
/// first use. Never dropped.
static RUNTIME: AtomicPtr<Owned> = AtomicPtr::new(std::ptr::null_mut());

/// The runtime of this process. A child made by `fork()` inherits its parent's runtime
/// without its threads (only the forking thread is copied), so blocking on it would wait
/// forever: a process that finds its parent's runtime starts its own (and leaves the
/// inherited one alone: its threads are not there to stop). No lock is taken (a lock held
/// by another thread at the fork would stay held in the child).
fn runtime() -> Result<&'static tokio::runtime::Runtime> {
    let pid = std::process::id();
    loop {
        let current = RUNTIME.load(Ordering::Acquire);
        // SAFETY: a non-null pointer is a leaked `Owned`, never freed.
        if let Some(owned) = unsafe { current.as_ref() }
            && owned.pid == pid
        {
            return Ok(&owned.runtime);
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("zt-remote")
            .enable_all()
            .build()
            .map_err(|e| err!(Io, "starting the runtime for remote reads: {e}"))?;
        let fresh = Box::into_raw(Box::new(Owned { pid, runtime }));
        match RUNTIME.compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire) {
            // SAFETY: just leaked; never freed.
            Ok(_) => return Ok(unsafe { &(*fresh).runtime }),
            Err(_) => {
                // Another thread of this process started one first: use that one.
                // SAFETY: `fresh` was never shared.
                let mine = unsafe { Box::from_raw(fresh) };
                mine.runtime.shutdown_background();
            }
        }
    }
}

/// Runs `f` to completion on the library's runtime. From inside another tokio runtime
/// (a Rust caller's async code) blocking there would panic, so it runs on a helper thread.
fn run<F>(f: F) -> Result<F::Output>
where
    F: Future + Send,
    F::Output: Send,
{
    let rt = runtime()?;
    if tokio::runtime::Handle::try_current().is_err() {
        return Ok(rt.block_on(f));
    }
    std::thread::scope(|s| match s.spawn(|| rt.block_on(f)).join() {
        Ok(v) => Ok(v),
        Err(panic) => std::panic::resume_unwind(panic),
    })
}

fn client_options(options: &RemoteOptions) -> Result<ClientOptions> {
    let mut headers = reqwest::header::HeaderMap::new();
    let mut add = |name: &str, value: &str| -> Result<()> {
        let n = reqwest::header::HeaderName::from_bytes(name.trim().as_bytes())
            .map_err(|_| err!(InvalidArgument, "'{name}' is not an HTTP header name"))?;
        let mut v = reqwest::header::HeaderValue::from_str(value.trim())
            .map_err(|_| err!(InvalidArgument, "the value of header '{name}' is not valid"))?;
        v.set_sensitive(true);
        headers.insert(n, v);
        Ok(())
    };
    if let Some(token) = &options.bearer_token {
        add("authorization", &format!("Bearer {token}"))?;
    }
    for (name, value) in &options.headers {
        add(name, value)?;
    }
    let mut client = ClientOptions::new().with_default_headers(headers);
    if options.allow_http {
        client = client.with_allow_http(true);
    }
    if let Some(t) = options.timeout {
        client = client.with_timeout(t);
    }
    Ok(client)
}

fn retry(options: &RemoteOptions) -> RetryConfig {
    let mut r = RetryConfig {
        max_retries: options.retries.unwrap_or(DEFAULT_RETRIES),
        retry_timeout: Duration::from_secs(60),
        ..RetryConfig::default()
    };
    r.backoff.init_backoff = Duration::from_millis(50);
    r.backoff.max_backoff = Duration::from_secs(5);
    r
}

/// The configuration keys the environment sets for a store: every `PREFIX*` variable
/// the builder knows, as `from_env` reads them, applied after our client options (which
/// `with_client_options` would otherwise overwrite).
/// Then the caller's `config`, which wins.
fn env_config<K: std::str::FromStr>(
    prefixes: &[&str],
    options: &RemoteOptions,
) -> Vec<(K, String)> {
    std::env::vars_os()
        .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
        .filter(|(k, _)| prefixes.iter().any(|p| k.starts_with(p)))
        .chain(options.config.iter().cloned())
        .filter_map(|(k, v)| Some((k.to_ascii_lowercase().parse().ok()?, v)))
        .collect()
}

fn store(url: &url::Url, options: &RemoteOptions) -> Result<(Box<dyn ObjectStore>, StorePath)> {
    // reqwest's rustls has no provider of its own in this build (the default one is a C
    // build of minutes); if the program installed one already, that one stays.
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let shown = redact(url);
    let bad = |e: object_store::Error| map_error("configuring the store", e).context(&shown);
    let (scheme, path) = ObjectStoreScheme::parse(url).map_err(|e| {
        err!(
            InvalidArgument,
            "{shown}: not a URL of an object store: {}",
            scrub(&e.to_string())
        )
    })?;
    let path = StorePath::from_url_path(path)
        .map_err(|e| err!(InvalidArgument, "{shown}: {}", scrub(&e.to_string())))?;
    let client = client_options(options)?;
    let retry = retry(options);
    let store: Box<dyn ObjectStore> = match scheme {
        ObjectStoreScheme::AmazonS3 => {
            use object_store::aws::AmazonS3Builder;
            let mut b = AmazonS3Builder::new()
                .with_client_options(client)
                .with_http_connector(Connector)
                .with_retry(retry);
            for (k, v) in env_config(&["AWS_"], options) {
                b = b.with_config(k, v);
            }
            b = b.with_url(url.as_str());
            if let Some(e) = &options.endpoint {
                b = b.with_endpoint(e);
            }
            if options.allow_http {
                b = b.with_allow_http(true);
            }
            Box::new(b.build().map_err(bad)?)
        }
        ObjectStoreScheme::GoogleCloudStorage => {
            use object_store::gcp::GoogleCloudStorageBuilder;
            let mut b = GoogleCloudStorageBuilder::new()
                .with_client_options(client)
                .with_http_connector(Connector)
                .with_retry(retry);
            for (k, v) in env_config(&["GOOGLE_", "SERVICE_ACCOUNT"], options) {
                b = b.with_config(k, v);
            }
            Box::new(b.with_url(url.as_str()).build().map_err(bad)?)
        }
        ObjectStoreScheme::MicrosoftAzure => {
            use object_store::azure::MicrosoftAzureBuilder;
            let mut b = MicrosoftAzureBuilder::new()
                .with_client_options(client)
                .with_http_connector(Connector)
                .with_retry(retry);
            for (k, v) in env_config(&["AZURE_"], options) {
                b = b.with_config(k, v);
            }
            b = b.with_url(url.as_str());
            if let Some(e) = &options.endpoint {
                b = b.with_endpoint(e.clone());
            }
            if options.allow_http {
                b = b.with_allow_http(true);
            }
            Box::new(b.build().map_err(bad)?)
        }
        ObjectStoreScheme::Http => {
            use object_store::http::HttpBuilder;
            // The store's URL is the origin; the object's path is added to it per request,
            // and a query kept (`object_store` extends the path only), so a presigned URL
            // (its signature in the query) is fetched as given.
            let mut origin = url[..url::Position::BeforePath].to_owned();
            if let Some(query) = url.query() {
                origin.push_str("/?");
                origin.push_str(query);
            }
            // The URL itself says plain HTTP: that is the caller's choice.
            let client = client.with_allow_http(url.scheme() == "http" || options.allow_http);
            let b = HttpBuilder::new()
                .with_client_options(client)
                .with_http_connector(Connector)
                .with_retry(retry)
                .with_url(origin);
            Box::new(b.build().map_err(bad)?)
        }
        other => bail!(
            Unsupported,
            "{shown}: {other:?} URLs are not opened remotely"
        ),
    };
    Ok((store, path))
}

impl Site {
    /// The site of the object at `url` (no request yet): its store and directory.
    pub(crate) fn new(url: &str, options: &RemoteOptions) -> Result<Arc<Site>> {
        let parsed = url::Url::parse(url)
            .map_err(|e| err!(InvalidArgument, "'{}' is not a URL: {e}", redact_text(url)))?;
        let shown = redact(&parsed);
        let (store, path) = store(&parsed, options)?;
        let concurrency = match options.max_concurrency {
            0 => DEFAULT_CONCURRENCY,
            n => n.min(256),
        };
        let dir = shown.rsplit_once('/').map_or(&*shown, |(d, _)| d).into();
        let path_parts: Vec<_> = path.parts().collect();
        let mut parts = path_parts;
        parts.pop();
        let site = Site {
            store,
            dir,
            prefix: StorePath::from_iter(parts),
            object: path,
            shown: shown.into(),
            permits: tokio::sync::Semaphore::new(concurrency),
            concurrency,
            requests: AtomicU64::new(0),
            bytes: AtomicU64::new(0),
            pid: std::process::id(),
        };
        Ok(Arc::new(site))
    }

    /// The URL the site was made for, as shown (without user info or query).
    pub(crate) fn shown(&self) -> &str {
        &self.shown
    }

    /// Opens the object the site was made for.
    pub(crate) fn open_object(self: &Arc<Self>) -> Result<Remote> {
        self.open_path(self.object.clone(), self.shown.clone())
    }

    /// Opens the object `url` names, in this site's directory: `url` is the directory's
    /// URL as shown, `/`, and a relative name (a set's shard, as `sets` joins them).
    pub(crate) fn open(self: &Arc<Self>, url: &str) -> Result<Remote> {
        let Some(name) = url
            .strip_prefix(&*self.dir)
            .and_then(|n| n.strip_prefix('/'))
        else {
            bail!(Internal, "{url} is not in the directory {}", self.dir);
        };
        let parts = name
            .split('/')
            .filter(|p| !p.is_empty() && *p != ".")
            .map(object_store::path::PathPart::from);
        let path = StorePath::from_iter(self.prefix.parts().chain(parts));
        self.open_path(path, url.into())
    }

    /// Opens the object at `path`, shown as `url`: one suffix-range request gives its
    /// size, ETag and last bytes.
    fn open_path(self: &Arc<Self>, path: StorePath, url: Box<str>) -> Result<Remote> {
        let mut remote = Remote {
            site: self.clone(),
            path,
            url,
            size: 0,
            etag: None,
            blocks: Mutex::new(Blocks {
                held: Vec::new(),
                last_end: u64::MAX,
                next: BLOCK,
            }),
        };
        let url = remote.url.clone();
        remote.first_request().map_err(|e| e.context(url))?;
        Ok(remote)
    }

    /// Requests in flight at most, for all the site's objects together.
    pub(crate) fn concurrency(&self) -> usize {
        self.concurrency
    }

    /// What the site's objects transferred so far.
    pub(crate) fn stats(&self) -> TransferStats {
        TransferStats {
            requests: self.requests.load(Ordering::Relaxed),
            bytes: self.bytes.load(Ordering::Relaxed),
        }
    }
}

impl Remote {
    /// The size, ETag and last bytes, from one suffix request. An empty object has no
    /// range to answer (416): a HEAD request then tells that it is empty.
    fn first_request(&mut self) -> Result<()> {
        let (meta, range, tail) = match run(self.get(GetRange::Suffix(TAIL), None))? {
            Ok(answer) => answer,
            Err(e) => {
                let head = GetOptions {
                    head: true,
                    ..GetOptions::default()
                };
                match run(self.site.store.get_opts(&self.path, head))? {
                    Ok(r) if r.meta.size == 0 => {
                        self.site.requests.fetch_add(1, Ordering::Relaxed);
                        self.etag = r.meta.e_tag;
                        return Ok(());
                    }
                    _ => return Err(e),
                }
            }
        };
        if range.end != meta.size || tail.len() as u64 != range.end - range.start {
            bail!(
                Io,
                "the server answered the last {TAIL} bytes with bytes {}..{} of {} ({} received)",
                range.start,
                range.end,
                meta.size,
                tail.len()
            );
        }
        self.size = meta.size;
        self.etag = meta.e_tag;
        self.hold(range.start, tail);
        Ok(())
    }

    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    pub(crate) fn concurrency(&self) -> usize {
        self.site.concurrency
    }

    /// What this object's site (the object, or every file of its set) transferred.
    pub(crate) fn stats(&self) -> TransferStats {
        self.site.stats()
    }

    /// One GET of `range`, under a permit, checked against the object as opened. The body
    /// is read piece by piece into a buffer of the range's size (never sized by the
    /// answer's `Content-Length`), and a body longer than the range asked for is an `Io`
    /// error as soon as its first byte too many arrives (the connection is then dropped).
    async fn get(
        &self,
        range: GetRange,
        expect: Option<Range<u64>>,
    ) -> Result<(object_store::ObjectMeta, Range<u64>, bytes::Bytes)> {
        if self.site.pid != std::process::id() {
            bail!(
                State,
                "this remote reader was opened in process {}, which this process was \
                 forked from: its connections belong to that process; open the URL again \
                 in this one",
                self.site.pid
            );
        }
        let _permit = self
            .site
            .permits
            .acquire()
            .await
            .map_err(|_| err!(Internal, "the request permits were closed"))?;
        let what = match &expect {
            Some(r) => format!("reading bytes {}..{}", r.start, r.end),
            None => "reading its size and last bytes".to_owned(),
        };
        let fail = |e| map_error(&what, e);
        let options = GetOptions {
            range: Some(range),
            // A weak ETag never matches strongly: then only the comparison below checks.
            if_match: self.etag.clone().filter(|e| !e.starts_with("W/")),
            ..GetOptions::default()
        };
        let result = self
            .site
            .store
            .get_opts(&self.path, options)
            .await
            .map_err(fail)?;
        let (meta, got) = (result.meta.clone(), result.range.clone());
        self.site.requests.fetch_add(1, Ordering::Relaxed);
        // What the body may hold: the range asked for, or at open the suffix asked for.
        let want = match &expect {
            Some(want) => want.end - want.start,
            None => TAIL.min(meta.size),
        };
        if let Some(want) = &expect {
            if meta.size != self.size || (self.etag.is_some() && meta.e_tag != self.etag) {
                bail!(
                    Format,
                    "{what}: the object changed since it was opened ({} bytes, ETag {:?}; now {} bytes, ETag {:?})",
                    self.size,
                    self.etag,
                    meta.size,
                    meta.e_tag
                );
            }
            if got != *want {
                bail!(
                    Io,
                    "{what}: the server answered bytes {}..{}",
                    got.start,
                    got.end
                );
            }
        } else if got.end - got.start > want {
            bail!(
                Io,
                "{what}: the server answered bytes {}..{} of {}, more than the last {TAIL} \
                 asked for",
                got.start,
                got.end,
                meta.size
            );
        }
        let body = self.body(result.into_stream(), want, &what).await?;
        if body.len() as u64 != got.end - got.start {
            bail!(
                Io,
                "{what}: the server answered bytes {}..{} with {} bytes",
                got.start,
                got.end,
                body.len()
            );
        }
        Ok((meta, got, body))
    }

    /// Reads an answer's body of at most `want` bytes into one buffer of that size,
    /// counting what arrives; more than `want` is an `Io` error at once.
    async fn body(
        &self,
        mut chunks: futures_util::stream::BoxStream<'static, object_store::Result<bytes::Bytes>>,
        want: u64,
        what: &str,
    ) -> Result<bytes::Bytes> {
        let mut body: Vec<u8> = Vec::new();
        body.try_reserve_exact(want as usize)
            .map_err(|_| err!(Limit, "{what}: no memory for {want} bytes"))?;
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|e| map_error(what, e))?;
            self.site
                .bytes
                .fetch_add(chunk.len() as u64, Ordering::Relaxed);
            if (body.len() + chunk.len()) as u64 > want {
                bail!(
                    Io,
                    "{what}: the server sent more than the {want} bytes asked for (the rest \
                     of the answer was not read)"
                );
            }
            body.extend_from_slice(&chunk);
        }
        Ok(body.into())
    }

    async fn get_range(&self, range: Range<u64>) -> Result<bytes::Bytes> {
        Ok(self
            .get(GetRange::Bounded(range.clone()), Some(range))
            .await?
            .2)
    }

    fn hold(&self, start: u64, bytes: bytes::Bytes) {
        let mut b = self.blocks.lock().unwrap_or_else(|p| p.into_inner());
        b.held.push((start, bytes));
        let mut total: u64 = b.held.iter().map(|(_, x)| x.len() as u64).sum();
        while total > CACHE_BYTES && b.held.len() > 1 {
            total -= b.held.remove(0).1.len() as u64;
        }
    }

    /// Copies the first bytes of `[offset, offset + dst.len())` that held blocks hold,
    /// block after block; returns how many it copied (all of `dst`, or up to the first
    /// byte no block holds).
    fn copy_held(&self, offset: u64, dst: &mut [u8]) -> usize {
        let b = self.blocks.lock().unwrap_or_else(|p| p.into_inner());
        let mut done = 0;
        'next: while done < dst.len() {
            let at = offset + done as u64;
            for (start, bytes) in b.held.iter().rev() {
                let end = start + bytes.len() as u64;
                if *start <= at && at < end {
                    let n = ((end - at) as usize).min(dst.len() - done);
                    let from = (at - start) as usize;
                    dst[done..done + n].copy_from_slice(&bytes[from..from + n]);
                    done += n;
                    continue 'next;
                }
            }
            break;
        }
        done
    }

    /// The block a small read of the bytes `[offset, end)` that no held block holds
    /// fetches: aligned to `BLOCK`, twice as large as the last one (up to `MAX_BLOCK`)
    /// while reads go forward (a read that continues where the last block ended, as a
    /// header read in pieces does), else `BLOCK`.
    fn block_for(&self, offset: u64, end: u64) -> Range<u64> {
        let mut b = self.blocks.lock().unwrap_or_else(|p| p.into_inner());
        let start = offset / BLOCK * BLOCK;
        let forward = offset >= b.last_end && offset < b.last_end.saturating_add(BLOCK);
        let size = if start == b.last_end || forward {
            (b.next * 2).min(MAX_BLOCK)
        } else {
            BLOCK
        };
        let block_end = (start + size)
            .max(end.div_ceil(BLOCK) * BLOCK)
            .min(self.size);
        b.last_end = block_end;
        b.next = size;
        start..block_end
    }

    /// The bytes of each range, fetched exactly (no block cache), concurrently under the
    /// site's request limit; in the order given. For small pieces scattered through the
    /// object (frame headers), which the block cache would each fetch a block for, one
    /// after the other.
    pub(crate) fn read_ranges(&self, ranges: &[Range<u64>]) -> Result<Vec<bytes::Bytes>> {
        let gets = ranges.iter().map(|r| self.get_range(r.clone()));
        run(stream::iter(gets)
            .buffered(self.site.concurrency)
            .try_collect::<Vec<_>>())?
    }

    /// Fills `dst` with the bytes at `offset`; the caller has bounds-checked the range.
    pub(crate) fn read(&self, offset: u64, dst: &mut [u8]) -> Result<()> {
        let len = dst.len() as u64;
        if len <= SMALL {
            // What the held blocks hold from `offset` on; the rest is fetched from where
            // they end, so a read crossing the last block's end continues the run of
            // growing blocks instead of fetching its bytes again.
            let held = self.copy_held(offset, dst);
            if held == dst.len() {
                return Ok(());
            }
            let (offset, dst) = (offset + held as u64, &mut dst[held..]);
            let block = self.block_for(offset, offset + dst.len() as u64);
            let bytes = run(self.get_range(block.clone()))??;
            let from = (offset - block.start) as usize;
            dst.copy_from_slice(&bytes[from..from + dst.len()]);
            self.hold(block.start, bytes);
            return Ok(());
        }
        if self.copy_held(offset, dst) == dst.len() {
            return Ok(());
        }
        let parts = dst.chunks_mut(PART as usize).enumerate().map(|(i, piece)| {
            let at = offset + i as u64 * PART;
            async move {
                let bytes = self.get_range(at..at + piece.len() as u64).await?;
                piece.copy_from_slice(&bytes);
                Ok::<(), Error>(())
            }
        });
        run(stream::iter(parts)
            .buffer_unordered(self.site.concurrency)
            .try_collect::<()>())?
    }
}
