//! What remote failures say, and how much of them is received: `object_store`'s errors
//! as ours, every URL in a message without user info or query (also a URL that doesn't
//! parse), an error page cut to its status and a short excerpt, and a connector that
//! receives at most `ERROR_BODY` bytes of an error answer's body.

use std::future::Future;

use futures_util::stream::StreamExt;
use object_store::ClientOptions;
use object_store::client::HttpClient;

use crate::error::{Error, ErrorKind};

/// The URL without user info, query or fragment: what messages show.
pub(crate) fn redact(url: &url::Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_query(None);
    u.set_fragment(None);
    u.to_string()
}

/// `url` as messages may show it when it does not parse: everything between `://` and
/// the last `@` before any `?` or `#` (the user info, wherever a malformed URL puts it),
/// the query and the fragment removed. Built before any message is, so no path of a
/// malformed URL leaks a password or a signature.
pub(crate) fn redact_text(url: &str) -> String {
    let end = url.find(['?', '#']).unwrap_or(url.len());
    let (before, _) = url.split_at(end);
    let (scheme, rest) = match before.find("://") {
        Some(at) => before.split_at(at + 3),
        None => ("", before),
    };
    let rest = rest.rsplit_once('@').map_or(rest, |(_, after)| after);
    format!("{scheme}{rest}")
}

/// An `object_store` error as ours: a changed object (a failed `If-Match`) is `Format`,
/// anything else `Io`, with the whole chain of causes.
pub(super) fn map_error(what: &str, e: object_store::Error) -> Error {
    let kind = match e {
        object_store::Error::Precondition { .. } => ErrorKind::Format,
        _ => ErrorKind::Io,
    };
    let mut message = format!("{what}: {e}");
    let mut cause = std::error::Error::source(&e);
    while let Some(c) = cause {
        let text = c.to_string();
        if !message.contains(&text) {
            message.push_str(": ");
            message.push_str(&text);
        }
        cause = c.source();
    }
    if kind == ErrorKind::Format {
        message.push_str(" (the object changed since it was opened)");
    }
    Error::new(kind, scrub(&cap_bodies(&message)))
}

/// `object_store` puts the whole body of an error answer (a 404's HTML page) at the end
/// of its message, after the status: keep the status and at most `SHOWN_BODY` characters
/// of the body, its whitespace made single spaces.
fn cap_bodies(text: &str) -> String {
    const STATUS: &str = "status code: ";
    let Some(from) = text.find(STATUS).map(|at| at + STATUS.len()) else {
        return text.to_owned();
    };
    // The status ("404 Not Found") ends at ": ", where the body begins.
    let Some(body_at) = text[from..].find(": ").map(|i| from + i + 2) else {
        return text.to_owned();
    };
    let body = text[body_at..]
        .split_whitespace()
        .collect::<Vec<_>>()
        .join(" ");
    let mut out = text[..body_at].to_owned();
    match body.char_indices().nth(SHOWN_BODY) {
        Some((end, _)) => {
            out.push_str(body[..end].trim_end());
            out.push_str(" ...");
        }
        None => out.push_str(&body),
    }
    out
}

/// Characters of an error answer's body a message keeps.
const SHOWN_BODY: usize = 200;

/// Bytes of an error answer's body read at most (the rest is never received).
const ERROR_BODY: usize = 8 << 10;

/// The HTTP client of every store: `object_store`'s reqwest client, except that the body
/// of an answer that is not a success is read only up to `ERROR_BODY` bytes
/// (`object_store` reads all of it into its message: an endless body would never end).
#[derive(Debug, Default)]
pub(super) struct Connector;

impl object_store::client::HttpConnector for Connector {
    fn connect(&self, options: &ClientOptions) -> object_store::Result<HttpClient> {
        let inner = object_store::client::ReqwestConnector::default().connect(options)?;
        Ok(HttpClient::new(ShortErrorBodies(inner)))
    }
}

#[derive(Debug)]
struct ShortErrorBodies(HttpClient);

type HttpAnswer =
    std::result::Result<object_store::client::HttpResponse, object_store::client::HttpError>;

impl object_store::client::HttpService for ShortErrorBodies {
    fn call<'s, 'f>(
        &'s self,
        request: object_store::client::HttpRequest,
    ) -> std::pin::Pin<Box<dyn Future<Output = HttpAnswer> + Send + 'f>>
    where
        's: 'f,
        Self: 'f,
    {
        Box::pin(async move {
            let answer = self.0.execute(request).await?;
            if answer.status().is_success() {
                return Ok(answer);
            }
            let (parts, body) = answer.into_parts();
            let mut kept = Vec::new();
            let mut chunks = body.bytes_stream();
            while kept.len() < ERROR_BODY
                && let Some(chunk) = chunks.next().await
            {
                let chunk = chunk?;
                kept.extend_from_slice(&chunk[..chunk.len().min(ERROR_BODY - kept.len())]);
            }
            Ok(object_store::client::HttpResponse::from_parts(
                parts,
                bytes::Bytes::from(kept).into(),
            ))
        })
    }
}

/// `text` with every URL in it redacted: no user info, no query (a presigned URL's
/// signature), as `object_store`'s messages would otherwise show the URLs it requested.
pub(super) fn scrub(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        out.push_str(&rest[..at + 3]);
        rest = &rest[at + 3..];
        let url_end = rest
            .find(|c: char| c.is_whitespace() || c == '"' || c == '\'')
            .unwrap_or(rest.len());
        let (url, after) = rest.split_at(url_end);
        let authority_end = url.find(['/', '?', '#']).unwrap_or(url.len());
        let (authority, path) = url.split_at(authority_end);
        out.push_str(
            authority
                .rsplit_once('@')
                .map_or(authority, |(_, host)| host),
        );
        out.push_str(&path[..path.find(['?', '#']).unwrap_or(path.len())]);
        rest = after;
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn messages_lose_the_user_info_and_query_of_every_url() {
        assert_eq!(
            super::scrub(
                "GET http://user:pw@h:1/a/b?sig=x failed; see https://h/c#f and s3://b/k, ok"
            ),
            "GET http://h:1/a/b failed; see https://h/c and s3://b/k, ok"
        );
        assert_eq!(super::scrub("no url"), "no url");
        assert_eq!(super::scrub("x://"), "x://");
    }

    #[test]
    fn urls_that_do_not_parse_lose_everything_up_to_their_last_at() {
        for (url, shown) in [
            (
                "http://user:SECRET@127.0.0.1:99999/x?sig=SIG#f",
                "http://127.0.0.1:99999/x",
            ),
            ("http://user:SECRET/PW@host:1/x.zt", "http://host:1/x.zt"),
            ("http://us er:SE CRET@h st/x", "http://h st/x"),
            ("s3://bucket/x.zt", "s3://bucket/x.zt"),
            ("no scheme@host/x", "host/x"),
        ] {
            assert_eq!(super::redact_text(url), shown, "{url}");
        }
    }

    #[test]
    fn error_pages_are_cut_to_200_characters() {
        let page = format!("<html>\n  {}</html>", "<p>x</p>\n".repeat(100));
        let text =
            format!("GET failed - Server returned non-2xx status code: 404 Not Found: {page}");
        let cut = super::cap_bodies(&text);
        let body = cut.split("404 Not Found: ").nth(1).unwrap();
        assert!(body.starts_with("<html> <p>x</p> <p>x</p>"), "{cut}");
        assert!(
            body.ends_with(" ...") && body.chars().count() <= 204,
            "{cut}"
        );
        let short = "status code: 403 Forbidden: no token";
        assert_eq!(super::cap_bodies(short), short);
        assert_eq!(super::cap_bodies("no status"), "no status");
    }
}
