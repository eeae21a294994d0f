//! What the team client tests share: a sleeper that never waits (retries and polls run at
//! once, so no test sleeps), the few readings of a raw request a loopback server needs to
//! answer like the real one (whose token it carries, whether it is a refresh, its body), a
//! client for one repository, an approved device sign-in, and for the clock-stepped-back tests
//! a session whose token the local clock calls current and servers that expire it.
#![allow(dead_code)] // each test file uses its own part

use mneme_core::clock::SetClock;
use mneme_core::Clock;
use mneme_team::auth::{CredentialStore, Credentials, DeviceLogin, MemoryStore, Session};
use mneme_team::client::{Http, Sleeper, StaticToken, SyncClient, SyncTarget, TokenSource};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::TestHome;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// 2026-12-07T00:00:00Z: the tests' now (for the clock-stepped-back tests, the clock after it
/// was stepped back).
pub const NOW: u64 = 1_796_601_600;

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

/// A client of `url` for repository `owner/name` that never waits, keeping its memory in
/// `folder` under the home (made, with its `team` folder): the client and that team folder.
pub fn client_at(home: &TestHome, url: &str, folder: &str, clock: Arc<dyn Clock>, tokens: Arc<dyn TokenSource>) -> (SyncClient, PathBuf) {
    let memory = home.root.join(folder);
    std::fs::create_dir_all(memory.join("team")).unwrap();
    let target = SyncTarget { memory_dir: memory.clone(), repo: Some("owner/name".into()), server_url: Some(url.into()) };
    (SyncClient::new(target, &home.env, clock, tokens).with_sleeper(Arc::new(NoWait)), memory.join("team"))
}

/// [`client_at`] `memory`, sending a fixed token that is never renewed.
pub fn client_with_token(home: &TestHome, url: &str, clock: Arc<dyn Clock>) -> (SyncClient, PathBuf) {
    client_at(home, url, "memory", clock, Arc::new(StaticToken("t0k3n".into())))
}

/// A device sign-in the user has approved at `url`, ready to be polled for its tokens.
pub fn login_at(url: &str) -> DeviceLogin {
    DeviceLogin {
        server: url.to_string(),
        user_code: "ABCD-EFGH".into(),
        verification_uri: format!("{url}/device"),
        verification_uri_complete: format!("{url}/device"),
        interval_secs: 1,
        expires_at_ms: u64::MAX,
        device_code: "dc".into(),
    }
}

/// The server's answer to the one refresh of `r1` an [`expiring_server`] grants.
pub const REFRESHED: &str = r#"{"access_token":"a2","token_type":"Bearer","expires_in":3600,"refresh_token":"r2"}"#;

/// Credentials (`a1`, refresh token `r1`, user `ada`) issued while the clock ran two hours
/// ahead with an hour to live: by the clock at [`NOW`] they have three hours left; the server
/// expired them an hour ago.
pub fn issued_ahead() -> Credentials {
    let json = format!(r#"{{"accessToken":"a1","refreshToken":"r1","expiresAtMs":{},"user":"ada"}}"#, (NOW + 3 * 3600) * 1000);
    serde_json::from_str(&json).unwrap()
}

/// A client signed in with [`issued_ahead`] credentials through a real [`Session`] (with its
/// refresh lock), its clock at [`NOW`]: the client, the credential store and its team folder.
pub fn signed_in_ahead(home: &TestHome, url: &str) -> (SyncClient, Arc<MemoryStore>, PathBuf) {
    let store = Arc::new(MemoryStore::default());
    store.save(url, &issued_ahead()).unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SetClock::at_unix_secs(NOW));
    let session = Session::new(url, store.clone(), Http::default(), clock.clone()).with_refresh_lock(&home.env.data_dir());
    let (c, team) = client_at(home, url, "memory", clock, Arc::new(session));
    (c, store, team)
}

/// A server that refuses `a1` (expired), refreshes `r1` once into `a2`/`r2` and refuses any
/// other refresh, and gives requests carrying `a2` to `answer`: its address and the requests
/// it saw.
pub fn expiring_server(answer: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static) -> (String, Arc<Mutex<Vec<String>>>) {
    let spent = AtomicBool::new(false);
    serve(move |req| {
        if is_refresh(req) {
            // A refresh token spent twice is theft to a rotating server.
            if req.contains("refresh_token=r1") && !spent.swap(true, Ordering::SeqCst) {
                return json("200 OK", REFRESHED);
            }
            return json("400 Bad Request", r#"{"error":"invalid_grant","error_description":"refresh token reused"}"#);
        }
        match bearer(req) {
            Some("a2") => answer(req),
            _ => unauthorized(),
        }
    })
}

/// A server that grants every refresh a new pair (`a2`/`r2`, then `a3`/`r3`, …) and refuses
/// every token all the same: its address and the requests it saw.
pub fn refusing_every_token() -> (String, Arc<Mutex<Vec<String>>>) {
    let refreshes = AtomicUsize::new(0);
    serve(move |req| {
        if !is_refresh(req) {
            return unauthorized();
        }
        let n = refreshes.fetch_add(1, Ordering::SeqCst) + 2;
        json("200 OK", &format!(r#"{{"access_token":"a{n}","token_type":"Bearer","expires_in":3600,"refresh_token":"r{n}"}}"#))
    })
}
