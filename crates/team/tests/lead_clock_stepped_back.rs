//! The Team screen's calls to the server's own API (who am I, the hashes it lists, a key's
//! history, the newest versions, a lead's rollback, removal and purge, the sign-ins) with a
//! token the local clock still calls current but the server has expired: the clock ran ahead
//! when it was issued and was stepped back since. As with pulls and pushes
//! (`clock_stepped_back.rs`), the 401 gets one refresh and one retry, sent with the same body;
//! a second 401 says to sign in again after exactly one refresh, and nothing loops.

mod common;

use mneme_team::auth::CredentialStore;
use mneme_team::client::{SyncClient, SyncError};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::TestHome;
use std::sync::{Arc, Mutex};
use common::{bearer, body, expiring_server, is_refresh, refusing_every_token, signed_in_ahead, unauthorized};

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

#[test]
fn each_lead_call_refused_for_a_token_the_clock_calls_current_refreshes_once_and_succeeds() {
    for (name, line, call) in CALLS {
        let home = TestHome::new();
        let (url, seen) = expiring_server(answer);
        let (c, store, _) = signed_in_ahead(&home, &url);
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
        let (url, seen) = refusing_every_token();
        let (c, _, _) = signed_in_ahead(&home, &url);
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
    let (c, store, _) = signed_in_ahead(&home, &url);
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
    let (c, _, _) = signed_in_ahead(&home, &url);
    for (name, _, call) in CALLS {
        call(&c).unwrap_or_else(|e| panic!("{name}: {e}"));
    }
    assert_eq!(*seen.lock().unwrap(), CALLS.len());
}
