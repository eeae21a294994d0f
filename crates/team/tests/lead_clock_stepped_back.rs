//! The Team screen's calls to the server's own API (who am I, the hashes it lists, a key's
//! history, the newest versions, a lead's rollback, removal and purge, the sign-ins) with a
//! token the local clock still calls current but the server has expired: the clock ran ahead
//! when it was issued and was stepped back since. As with pulls and pushes
//! (`clock_stepped_back.rs`), the 401 gets one refresh and one retry, sent with the same body;
//! a second 401 says to sign in again after exactly one refresh, and nothing loops.

mod common;

use mneme_core::clock::SetClock;
use mneme_core::Clock;
use mneme_team::auth::{CredentialStore, Credentials, MemoryStore, Session};
use mneme_team::client::{Http, SyncClient, SyncError, SyncTarget};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::TestHome;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use common::{bearer, is_refresh, unauthorized, body};

/// 2026-12-07T00:00:00Z: the clock after it was stepped back.
const NOW: u64 = 1_796_601_600;

const REFRESHED: &str = r#"{"access_token":"a2","token_type":"Bearer","expires_in":3600,"refresh_token":"r2"}"#;

/// One lead call: its name, what its request line starts with, and the call itself (which
/// must succeed against a server that accepts the token).
type Call = (&'static str, &'static str, fn(&SyncClient) -> Result<(), SyncError>);

const CALLS: [Call; 8] = [
    ("me", "GET /api/mneme/me ", |c| c.me().map(|m| assert_eq!(m.user, "ada"))),
    ("server_hashes", "GET /api/claude_code/team_memory?", |c| c.server_hashes().map(|h| assert!(h.is_some()))),
    ("history", "GET /api/mneme/team_memory/history?", |c| c.history("a.md").map(|h| assert_eq!(h.versions.len(), 1))),
    ("latest", "GET /api/mneme/team_memory/latest?", |c| c.latest().map(|l| assert_eq!(l.entries.len(), 1))),
    ("rollback", "POST /api/mneme/team_memory/rollback?", |c| c.rollback("a.md", 1).map(|p| assert_eq!(p.checksum, "sha256:p"))),
    ("remove_entry", "DELETE /api/mneme/team_memory/entry?", |c| c.remove_entry("a.md").map(|p| assert_eq!(p.checksum, "sha256:p"))),
    ("purge", "POST /api/mneme/team_memory/purge?", |c| c.purge("a.md").map(|p| assert_eq!(p.checksum, "sha256:p"))),
    ("sign_ins", "GET /api/mneme/team_memory/sign_ins?", |c| c.sign_ins().map(|s| assert_eq!(s.sign_ins.len(), 1))),
];

/// What the server answers each lead request with, once the token is accepted.
fn answer(req: &str) -> Vec<u8> {
    let path = req.split(' ').nth(1).unwrap_or("");
    let body = if path.starts_with("/api/mneme/me") {
        r#"{"user":"ada","repos":[{"repo":"owner/name","team":"t","role":"lead","version":3,"maxEntries":100}]}"#
    } else if path.starts_with("/api/claude_code/team_memory") {
        r#"{"version":3,"checksum":"sha256:c","entryChecksums":{"a.md":"sha256:a"}}"#
    } else if path.starts_with("/api/mneme/team_memory/history") {
        r#"{"repo":"owner/name","key":"a.md","versions":[{"version":1,"checksum":"sha256:a","author":"ada","time":"2026-12-07T00:00:00.000Z","deleted":false,"content":"x"}]}"#
    } else if path.starts_with("/api/mneme/team_memory/latest") {
        r#"{"repo":"owner/name","entries":[{"key":"a.md","version":1,"checksum":"sha256:a","author":"ada","time":"2026-12-07T00:00:00.000Z","deleted":false,"versions":1}]}"#
    } else if path.starts_with("/api/mneme/team_memory/sign_ins") {
        r#"{"repo":"owner/name","signIns":[{"user":"ada","clientId":"mneme","created":"2026-12-07T00:00:00.000Z","lastUsed":"2026-12-07T00:00:00.000Z","expires":"2026-12-07T01:00:00.000Z"}]}"#
    } else {
        r#"{"checksum":"sha256:p","lastModified":"2026-12-07T00:00:00.000Z","version":4}"#
    };
    json("200 OK", body)
}

/// A client signed in through a real [`Session`] with credentials issued while the clock ran
/// two hours ahead with an hour to live: by the clock at [`NOW`] they have three hours left.
fn client(home: &TestHome, url: &str) -> (SyncClient, Arc<MemoryStore>) {
    let memory = home.root.join("memory");
    std::fs::create_dir_all(memory.join("team")).unwrap();
    let store = Arc::new(MemoryStore::default());
    let issued: Credentials =
        serde_json::from_str(&format!(r#"{{"accessToken":"a1","refreshToken":"r1","expiresAtMs":{},"user":"ada"}}"#, (NOW + 3 * 3600) * 1000)).unwrap();
    store.save(url, &issued).unwrap();
    let clock: Arc<dyn Clock> = Arc::new(SetClock::at_unix_secs(NOW));
    let session = Session::new(url, store.clone(), Http::default(), clock.clone()).with_refresh_lock(&home.env.data_dir());
    let target = SyncTarget { memory_dir: memory, repo: Some("owner/name".into()), server_url: Some(url.into()) };
    (SyncClient::new(target, &home.env, clock, Arc::new(session)), store)
}

#[test]
fn each_lead_call_refused_for_a_token_the_clock_calls_current_refreshes_once_and_succeeds() {
    for (name, line, call) in CALLS {
        let home = TestHome::new();
        let spent = AtomicBool::new(false);
        let (url, seen) = serve(move |req| {
            if is_refresh(req) {
                // A refresh token spent twice is theft to a rotating server.
                let first = req.contains("refresh_token=r1") && !spent.swap(true, Ordering::SeqCst);
                return if first { json("200 OK", REFRESHED) } else { json("400 Bad Request", r#"{"error":"invalid_grant"}"#) };
            }
            if bearer(req) == Some("a2") {
                answer(req)
            } else {
                unauthorized()
            }
        });
        let (c, store) = client(&home, &url);
        call(&c).unwrap_or_else(|e| panic!("{name}: {e}"));
        let requests = seen.lock().unwrap().clone();
        let sent: Vec<(bool, Option<&str>)> = requests.iter().map(|r| (is_refresh(r), if is_refresh(r) { None } else { bearer(r) })).collect();
        assert_eq!(sent, [(false, Some("a1")), (true, None), (false, Some("a2"))], "{name}: the refused call, one refresh, one retry");
        assert!(requests[0].starts_with(line) && requests[2].starts_with(line), "{name}: {requests:?}");
        assert_eq!(body(&requests[2]), body(&requests[0]), "{name}: the retry carries the same body");
        if line.starts_with("POST ") {
            assert!(body(&requests[2]).contains(r#""key":"a.md""#), "{name}: {}", body(&requests[2]));
        }
        let kept = store.load(&url).unwrap().unwrap();
        assert_eq!((kept.access_token.as_str(), kept.refresh_token.as_deref()), ("a2", Some("r2")), "{name}");
        // The renewed token is used from now on, with no further refresh.
        call(&c).unwrap_or_else(|e| panic!("{name}, again: {e}"));
        let again: Vec<String> = seen.lock().unwrap()[3..].to_vec();
        assert!(again.len() == 1 && bearer(&again[0]) == Some("a2"), "{name}: {again:?}");
    }
}

/// A server that refuses the renewed token too: the second 401 is the answer, saying to sign
/// in again, after exactly one refresh and one retry.
#[test]
fn a_second_401_on_a_lead_call_is_final_after_one_refresh() {
    for (name, line, call) in CALLS {
        let home = TestHome::new();
        let refreshes = AtomicUsize::new(0);
        let (url, seen) = serve(move |req| {
            if !is_refresh(req) {
                return unauthorized();
            }
            let n = refreshes.fetch_add(1, Ordering::SeqCst) + 2;
            json("200 OK", &format!(r#"{{"access_token":"a{n}","token_type":"Bearer","expires_in":3600,"refresh_token":"r{n}"}}"#))
        });
        let (c, _) = client(&home, &url);
        let e = call(&c).unwrap_err();
        assert!(matches!(e, SyncError::Auth { status: 401, .. }) && e.is_permanent(), "{name}: {e:?}");
        assert!(e.to_string().contains("Run `mneme team login` again"), "{name}: {e}");
        let requests: Vec<String> = seen.lock().unwrap().clone();
        assert_eq!(requests.iter().filter(|r| is_refresh(r)).count(), 1, "{name}: {requests:?}");
        let calls: Vec<Option<&str>> = requests.iter().filter(|r| r.starts_with(line)).map(|r| bearer(r)).collect();
        assert_eq!(calls, [Some("a1"), Some("a2")], "{name}");
        assert_eq!(requests.len(), 3, "{name}: {requests:?}");
    }
}

/// A refresh the server refuses ends the call at once, saying to sign in again with the
/// server's reason, and the refused token is not sent a second time.
#[test]
fn a_refused_refresh_on_a_lead_call_says_to_sign_in_again() {
    let home = TestHome::new();
    let (url, seen) = serve(|req| {
        if is_refresh(req) {
            json("400 Bad Request", r#"{"error":"invalid_grant","error_description":"refresh token revoked"}"#)
        } else {
            unauthorized()
        }
    });
    let (c, store) = client(&home, &url);
    let e = c.rollback("a.md", 1).unwrap_err();
    assert!(matches!(e, SyncError::Auth { .. }) && e.is_permanent(), "{e:?}");
    let text = e.to_string();
    assert!(text.contains("Run `mneme team login` again") && text.contains("refresh token revoked"), "{text}");
    let requests = seen.lock().unwrap().clone();
    assert_eq!(requests.len(), 2, "the rollback and its refresh only: {requests:?}");
    assert!(requests[0].starts_with("POST /api/mneme/team_memory/rollback?") && is_refresh(&requests[1]), "{requests:?}");
    assert_eq!(store.load(&url).unwrap().unwrap().access_token, "a1", "nothing saved");
}

/// Guards the test's own server: answered the accepted token, every call above succeeds, so
/// the failures the tests above look for come from the token alone.
#[test]
fn every_lead_call_succeeds_with_an_accepted_token() {
    let seen = Arc::new(Mutex::new(0usize));
    let counted = seen.clone();
    let (url, _) = serve(move |req| {
        *counted.lock().unwrap() += 1;
        if bearer(req) == Some("a1") {
            answer(req)
        } else {
            unauthorized()
        }
    });
    let home = TestHome::new();
    let (c, _) = client(&home, &url);
    for (name, _, call) in CALLS {
        call(&c).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert_eq!(*seen.lock().unwrap(), CALLS.len());
}
