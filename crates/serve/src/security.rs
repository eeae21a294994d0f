//! The checks every request passes before any handler runs.
//!
//! A server on 127.0.0.1 is still reachable by every web page the person opens, so:
//! - Host must be `127.0.0.1:<port>` or `localhost:<port>`: a page on `evil.com` whose DNS
//!   is rebound to 127.0.0.1 sends `Host: evil.com`, and is refused (403).
//! - Origin, when sent, must be this server's own: cross-site `fetch` calls carry their
//!   page's origin and are refused (403), whatever they guessed.
//! - `/api/*` needs the per-run token as `Authorization: Bearer <token>` (401), which a
//!   foreign page cannot read. Never in the URL, the event stream included (the page reads
//!   it with `fetch`, not EventSource, to send the header): URLs end up in DevTools' HAR
//!   exports (whose "sanitized" form strips `Authorization` only), net logs and proxies.
//!   Never from a cookie: cookies ignore ports, so any other server on localhost could set
//!   one, and every page's requests here would carry it.
//! - POST needs `Content-Type: application/json` (415): HTML forms can only send
//!   form or text types, so a cross-site form post never reaches a handler.
//!
//! The static UI is served without the token: it holds no data, and the page finds its
//! token in its own URL.

use crate::methods::error_response;
use crate::AppState;
use axum::extract::{Request, State};
use axum::http::{header, Method, StatusCode};
use axum::middleware::Next;
use axum::response::Response;
use std::sync::Arc;

pub(crate) async fn guard(State(state): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let headers = req.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok()).unwrap_or("");
    if !allowed_host(host, state.port) {
        return error_response(
            StatusCode::FORBIDDEN,
            "forbidden",
            "This server only answers requests addressed to 127.0.0.1 or localhost.",
        );
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let ok = origin.to_str().is_ok_and(|o| allowed_origin(o, state.port));
        if !ok {
            return error_response(
                StatusCode::FORBIDDEN,
                "forbidden",
                "Requests from other web pages are refused; open Mneme from the address it printed.",
            );
        }
    }
    let path = req.uri().path();
    if path == "/api" || path.starts_with("/api/") {
        let bearer = headers
            .get(header::AUTHORIZATION)
            .and_then(|h| h.to_str().ok())
            .and_then(|h| h.strip_prefix("Bearer "))
            .map(str::trim);
        if !bearer.is_some_and(|t| constant_time_eq(t.as_bytes(), state.token.as_bytes())) {
            return error_response(
                StatusCode::UNAUTHORIZED,
                "unauthorized",
                "Missing or wrong access token. Open Mneme from the address `mneme serve` printed; it carries the token.",
            );
        }
    }
    if req.method() == Method::POST && !is_json(headers.get(header::CONTENT_TYPE).and_then(|h| h.to_str().ok())) {
        return error_response(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "unsupported_media_type",
            "Send the request body as JSON with Content-Type: application/json.",
        );
    }
    next.run(req).await
}

pub(crate) fn allowed_host(host: &str, port: u16) -> bool {
    host == format!("127.0.0.1:{port}") || host == format!("localhost:{port}")
}

pub(crate) fn allowed_origin(origin: &str, port: u16) -> bool {
    origin == format!("http://127.0.0.1:{port}") || origin == format!("http://localhost:{port}")
}

/// `application/json`, with or without parameters such as `; charset=utf-8`.
fn is_json(content_type: Option<&str>) -> bool {
    content_type
        .and_then(|c| c.split(';').next())
        .is_some_and(|m| m.trim().eq_ignore_ascii_case("application/json"))
}

/// Compares without stopping at the first difference, so response timing does not reveal
/// how much of a guessed token was right. The length is not secret (always 64 hex digits).
pub(crate) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let diff = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_and_origins() {
        assert!(allowed_host("127.0.0.1:8080", 8080));
        assert!(allowed_host("localhost:8080", 8080));
        for bad in ["127.0.0.1", "localhost", "evil.com:8080", "127.0.0.1:8081", "127.0.0.1:8080.evil.com", ""] {
            assert!(!allowed_host(bad, 8080), "{bad}");
        }
        assert!(allowed_origin("http://localhost:8080", 8080));
        for bad in ["null", "http://evil.com", "https://127.0.0.1:8080", "http://127.0.0.1:8080/", "http://localhost:80"] {
            assert!(!allowed_origin(bad, 8080), "{bad}");
        }
    }

    #[test]
    fn content_types_and_tokens() {
        assert!(is_json(Some("application/json")));
        assert!(is_json(Some("Application/JSON; charset=utf-8")));
        for bad in [None, Some("text/plain"), Some("application/x-www-form-urlencoded"), Some("multipart/form-data")] {
            assert!(!is_json(bad), "{bad:?}");
        }
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
    }
}
