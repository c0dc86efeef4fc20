//! C ABI: the settings of a remote open (`zt_open_url_with`) that the environment can't
//! give.

use std::ffi::c_char;

use super::need_str;
use crate::error::{Result, bail};
use crate::source::RemoteOptions;

/// Allow plain `http://` endpoints for S3, GCS and Azure (an `http://` URL is always
/// allowed: it says so itself).
pub const ZT_REMOTE_ALLOW_HTTP: u32 = 1;
/// Never retry a failed request (`retries` is then ignored).
pub const ZT_REMOTE_NO_RETRY: u32 = 2;

const REMOTE_FLAGS: u32 = ZT_REMOTE_ALLOW_HTTP | ZT_REMOTE_NO_RETRY;

/// What a remote open needs that the environment can't say (`zt_open_url_with`). A
/// zero-filled struct, or NULL, means the defaults; credentials, regions and endpoints
/// otherwise come from the environment (`AWS_*`, `GOOGLE_*`, `AZURE_*`).
#[repr(C)]
#[derive(Clone, Copy, Debug)]
pub struct zt_remote_options {
    /// Sent as `Authorization: Bearer <token>`; NULL for none.
    pub bearer_token: *const c_char,
    /// `header_count` strings "Name: value", sent with every request.
    pub headers: *const *const c_char,
    /// How many strings `headers` holds.
    pub header_count: usize,
    /// `config_count` strings "key=value": settings of the store as object_store names
    /// them ("aws_access_key_id", "aws_region", "aws_skip_signature" ...), over the
    /// environment's. Unknown keys are ignored.
    pub config: *const *const c_char,
    /// How many strings `config` holds.
    pub config_count: usize,
    /// The endpoint of an S3- or Azure-compatible service; NULL for the environment's.
    pub endpoint: *const c_char,
    /// `ZT_REMOTE_*` flags, or-ed.
    pub flags: u32,
    /// Requests in flight at most per reader; 0 for 8.
    pub max_concurrency: u32,
    /// Retries of a failed request; 0 for 3 (`ZT_REMOTE_NO_RETRY` for none).
    pub retries: u32,
    /// Timeout of one request in milliseconds; 0 for 30 seconds.
    pub timeout_ms: u32,
}

/// `count` C strings at `list`, each split at the first `sep`.
fn pairs(
    list: *const *const c_char,
    count: usize,
    sep: char,
    what: &str,
) -> Result<Vec<(String, String)>> {
    if count == 0 {
        return Ok(Vec::new());
    }
    if list.is_null() {
        bail!(InvalidArgument, "{what} is NULL with a count of {count}");
    }
    // SAFETY: `count` pointers at `list`, per the API contract.
    let items = unsafe { std::slice::from_raw_parts(list, count) };
    items
        .iter()
        .enumerate()
        .map(|(i, &p)| {
            let text = need_str(p, what)?;
            match text.split_once(sep) {
                Some((k, v)) => Ok((k.trim().to_owned(), v.trim().to_owned())),
                None => bail!(InvalidArgument, "{what}[{i}] '{text}' has no '{sep}'"),
            }
        })
        .collect()
}

fn optional_str(p: *const c_char, what: &str) -> Result<Option<String>> {
    if p.is_null() {
        return Ok(None);
    }
    Ok(Some(need_str(p, what)?.to_owned()))
}

pub(super) fn remote_options(options: *const zt_remote_options) -> Result<RemoteOptions> {
    // SAFETY: NULL or a valid struct, per the API contract.
    let Some(o) = (unsafe { options.as_ref() }) else {
        return Ok(RemoteOptions::default());
    };
    if o.flags & !REMOTE_FLAGS != 0 {
        bail!(
            InvalidArgument,
            "unknown remote flags 0x{:x}",
            o.flags & !REMOTE_FLAGS
        );
    }
    Ok(RemoteOptions {
        bearer_token: optional_str(o.bearer_token, "bearer_token")?,
        headers: pairs(o.headers, o.header_count, ':', "headers")?,
        config: pairs(o.config, o.config_count, '=', "config")?,
        endpoint: optional_str(o.endpoint, "endpoint")?,
        allow_http: o.flags & ZT_REMOTE_ALLOW_HTTP != 0,
        max_concurrency: o.max_concurrency as usize,
        retries: match (o.flags & ZT_REMOTE_NO_RETRY != 0, o.retries) {
            (true, _) => Some(0),
            (false, 0) => None,
            (false, n) => Some(n as usize),
        },
        timeout: match o.timeout_ms {
            0 => None,
            ms => Some(std::time::Duration::from_millis(ms as u64)),
        },
    })
}
