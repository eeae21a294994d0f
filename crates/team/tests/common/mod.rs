//! What the team client tests share: a sleeper that never waits (retries and polls run at
//! once, so no test sleeps) and the few readings of a raw request a loopback server needs to
//! answer like the real one (whose token it carries, whether it is a refresh, its body).
#![allow(dead_code)] // each test file uses its own part

use mneme_team::client::Sleeper;
use mneme_testsupport::raw_http::json;
use std::time::Duration;

/// Sleeps no time and adds no jitter.
pub struct NoWait;

impl Sleeper for NoWait {
    fn sleep(&self, _: Duration) {}
    fn jitter(&self) -> f64 {
        0.0
    }
}

/// The bearer token a request carries.
pub fn bearer(req: &str) -> Option<&str> {
    req.lines().find_map(|l| {
        let (name, value) = l.split_once(':')?;
        name.eq_ignore_ascii_case("authorization").then(|| value.trim().strip_prefix("Bearer ")).flatten()
    })
}

/// Whether the request spends a refresh token.
pub fn is_refresh(req: &str) -> bool {
    req.starts_with("POST ") && req.contains("/oauth/token") && req.contains("grant_type=refresh_token")
}

/// The server's answer to a token it no longer accepts.
pub fn unauthorized() -> Vec<u8> {
    json("401 Unauthorized", r#"{"error":{"type":"authentication_error","message":"token expired"}}"#)
}

/// The request's body (after the blank line).
pub fn body(req: &str) -> &str {
    req.split_once("\r\n\r\n").map_or("", |(_, b)| b)
}
