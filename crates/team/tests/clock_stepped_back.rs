//! A session whose token the local clock still calls current but the server has expired: the
//! clock ran ahead when the token was issued and was stepped back since (NTP, a clock set by
//! hand). The server's 401 gets one refresh and one retry, on pulls, pushes and the hashes
//! probe, so automatic pushes do not stop for as long as the clock was off; a second 401 or a
//! refused refresh says to sign in again, and nothing loops.

mod common;

use mneme_core::clock::SetClock;
use mneme_team::auth::{CredentialStore, Credentials, Session};
use mneme_team::client::{Http, StaticToken, SyncError, TokenSource};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::TestHome;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use common::{bearer, client_at, expiring_server, is_refresh, issued_ahead, refusing_every_token, signed_in_ahead, unauthorized, NOW, REFRESHED};

const TREE: &str = r#"{"repo":"owner/name","lastModified":"x","checksum":"sha256:c","content":{"entries":{"a.md":"theirs"}}}"#;
const HASHES: &str = r#"{"version":1,"checksum":"sha256:c","entryChecksums":{}}"#;
const PUT_OK: &str = r#"{"checksum":"sha256:p"}"#;

fn count(seen: &Mutex<Vec<String>>, what: impl Fn(&str) -> bool) -> usize {
    seen.lock().unwrap().iter().filter(|r| what(r)).count()
}

#[test]
fn a_pull_refused_for_a_token_the_clock_calls_current_refreshes_once_and_succeeds() {
    let home = TestHome::new();
    let (url, seen) = expiring_server(|_| json("200 OK", TREE));
    let (c, store, team) = signed_in_ahead(&home, &url);
    let r = c.pull().unwrap();
    assert_eq!(r.written, ["a.md"], "{r:?}");
    assert_eq!(std::fs::read_to_string(team.join("a.md")).unwrap(), "theirs");
    assert_eq!(count(&seen, is_refresh), 1);
    assert_eq!(count(&seen, |r| r.starts_with("GET ")), 2, "the refused pull and its one retry");
    let kept = store.load(&url).unwrap().unwrap();
    assert_eq!((kept.access_token.as_str(), kept.refresh_token.as_deref(), kept.user.as_deref()), ("a2", Some("r2"), Some("ada")));
    // The renewed token is used from now on, with no further refresh.
    c.pull_fresh().unwrap();
    assert_eq!(count(&seen, is_refresh), 1);
}

/// The hashes probe a first push sends, refused: refreshed, probed again, then pushed with
/// the new token; the automatic push this is stays unsuppressed.
#[test]
fn a_push_whose_probe_is_refused_refreshes_once_and_pushes() {
    let home = TestHome::new();
    let (url, seen) = expiring_server(|req| if req.starts_with("PUT ") { json("200 OK", PUT_OK) } else { json("200 OK", HASHES) });
    let (c, _, team) = signed_in_ahead(&home, &url);
    std::fs::write(team.join("mine.md"), "mine").unwrap();
    let p = c.push_automatic().unwrap();
    assert_eq!(p.uploaded, ["mine.md"], "{p:?}");
    assert_eq!(count(&seen, is_refresh), 1);
    let requests = seen.lock().unwrap().clone();
    let hashes: Vec<_> = requests.iter().filter(|r| r.contains("view=hashes")).map(|r| bearer(r).map(str::to_string)).collect();
    assert_eq!(hashes, [Some("a1".to_string()), Some("a2".to_string())]);
    assert!(requests.iter().filter(|r| r.starts_with("PUT ")).all(|r| bearer(r) == Some("a2")));
    assert!(c.state().unwrap().suppressed.is_none());
}

/// A PUT refused after the server expired the token mid-session (the pull before it was
/// accepted), and a 412's probe refused the same way: each is refreshed and retried once.
#[test]
fn a_put_and_a_conflict_probe_refused_mid_session_are_retried_after_a_refresh() {
    for probe_refused in [false, true] {
        let home = TestHome::new();
        // `a1` is accepted until the server's clock passes its expiry: for the pull (and, in
        // the second run, the first PUT, which meets a conflict), not after.
        let uses = Arc::new(AtomicUsize::new(0));
        let accepted_uses = if probe_refused { 2 } else { 1 };
        let puts = AtomicUsize::new(0);
        let spent = AtomicBool::new(false);
        let (url, seen) = serve(move |req| {
            if is_refresh(req) {
                let first = req.contains("refresh_token=r1") && !spent.swap(true, Ordering::SeqCst);
                return if first { json("200 OK", REFRESHED) } else { json("400 Bad Request", r#"{"error":"invalid_grant"}"#) };
            }
            let ok = match bearer(req) {
                Some("a1") => uses.fetch_add(1, Ordering::SeqCst) < accepted_uses,
                Some("a2") => true,
                _ => false,
            };
            if !ok {
                return unauthorized();
            }
            if req.starts_with("PUT ") {
                if probe_refused && puts.fetch_add(1, Ordering::SeqCst) == 0 {
                    return json("412 Precondition Failed", "{}");
                }
                json("200 OK", PUT_OK)
            } else if req.contains("view=hashes") {
                json("200 OK", HASHES)
            } else {
                json("200 OK", TREE)
            }
        });
        let (c, _, team) = signed_in_ahead(&home, &url);
        c.pull().unwrap();
        std::fs::write(team.join("mine.md"), "mine").unwrap();
        let p = c.push_automatic().unwrap();
        assert!(p.uploaded.contains(&"mine.md".to_string()), "{p:?}");
        assert_eq!(count(&seen, is_refresh), 1, "probe refused: {probe_refused}");
        let requests = seen.lock().unwrap().clone();
        // After the pull: each request of the push, and the token it carried.
        let sent: Vec<(&str, Option<&str>)> = requests
            .iter()
            .filter(|r| !is_refresh(r))
            .skip(1)
            .map(|r| (if r.contains("view=hashes") { "probe" } else { r.split(' ').next().unwrap_or("") }, bearer(r)))
            .collect();
        let want = if probe_refused {
            vec![("PUT", Some("a1")), ("probe", Some("a1")), ("probe", Some("a2")), ("PUT", Some("a2"))]
        } else {
            vec![("PUT", Some("a1")), ("PUT", Some("a2"))]
        };
        assert_eq!(sent, want, "probe refused: {probe_refused}");
        assert!(c.state().unwrap().suppressed.is_none());
    }
}

/// A server that refuses the renewed token too: the second 401 is the answer (sign in again),
/// after exactly one refresh and one retry, and automatic pushes stop as before.
#[test]
fn a_second_401_after_the_refresh_is_permanent_and_nothing_loops() {
    let home = TestHome::new();
    let (url, seen) = refusing_every_token();
    let (c, _, team) = signed_in_ahead(&home, &url);
    let e = c.pull().unwrap_err();
    assert!(matches!(e, SyncError::Auth { status: 401, .. }) && e.is_permanent(), "{e:?}");
    assert!(e.to_string().contains("Run `mneme team login` again"), "{e}");
    assert_eq!(count(&seen, is_refresh), 1);
    assert_eq!(count(&seen, |r| r.starts_with("GET ")), 2);

    std::fs::write(team.join("mine.md"), "mine").unwrap();
    let before = seen.lock().unwrap().len();
    let e = c.push_automatic().unwrap_err();
    assert!(matches!(e, SyncError::Auth { status: 401, .. }), "{e:?}");
    let after: Vec<String> = seen.lock().unwrap()[before..].to_vec();
    assert_eq!(after.len(), 3, "the probe, one refresh, the probe again: {after:?}");
    assert!(is_refresh(&after[1]) && bearer(&after[0]) == Some("a2") && bearer(&after[2]) == Some("a3"), "{after:?}");
    assert_eq!(c.state().unwrap().suppressed.map(|s| s.reason).as_deref(), Some("http_401"));
}

/// A refresh the server refuses, as an OAuth `invalid_grant` (400 or 401) or as a 401 with no
/// OAuth body at all: the pull fails saying to sign in again, after one refresh.
#[test]
fn a_refused_refresh_says_to_sign_in_again() {
    let refusals: [(&str, &str, &str); 3] = [
        ("400 Bad Request", r#"{"error":"invalid_grant","error_description":"refresh token revoked"}"#, "refresh token revoked"),
        ("401 Unauthorized", r#"{"error":"invalid_grant"}"#, "invalid_grant"),
        ("401 Unauthorized", "<html>sign-in expired</html>", ""),
    ];
    for (status, body, says) in refusals {
        let home = TestHome::new();
        let (url, seen) = serve(move |req| if is_refresh(req) { json(status, body) } else { unauthorized() });
        let (c, store, _) = signed_in_ahead(&home, &url);
        let e = c.pull().unwrap_err();
        assert!(matches!(e, SyncError::Auth { .. }) && e.is_permanent(), "{status} {body}: {e:?}");
        let text = e.to_string();
        assert!(text.contains("Run `mneme team login` again") && text.contains(says), "{status} {body}: {text}");
        assert_eq!(count(&seen, is_refresh), 1, "{status} {body}");
        assert_eq!(count(&seen, |r| r.starts_with("GET ")), 1, "{status} {body}: no retry without a new token");
        assert_eq!(store.load(&url).unwrap().unwrap().access_token, "a1", "nothing saved");
    }
}

/// A token that cannot be renewed (no refresh token kept, or a token a lead minted for a
/// script) keeps its 401 at once: no refresh is asked for, no request sent twice.
#[test]
fn a_token_that_cannot_be_renewed_keeps_its_401() {
    let home = TestHome::new();
    let (url, seen) = expiring_server(|_| json("200 OK", TREE));
    let (c, store, _) = signed_in_ahead(&home, &url);
    let mut bare = issued_ahead();
    bare.refresh_token = None;
    store.save(&url, &bare).unwrap();
    let e = c.pull().unwrap_err();
    assert!(matches!(e, SyncError::Auth { status: 401, .. }), "{e:?}");
    assert_eq!(seen.lock().unwrap().len(), 1);

    let (c, _) = client_at(&home, &url, "static", Arc::new(SetClock::at_unix_secs(NOW)), Arc::new(StaticToken("a1".into())));
    let e = c.pull().unwrap_err();
    assert!(matches!(e, SyncError::Auth { status: 401, .. }), "{e:?}");
    assert_eq!(seen.lock().unwrap().len(), 2);
}

/// Credentials that changed between handing out the token and its refusal (another Mneme
/// process refreshed meanwhile): the newer token is retried without spending the refresh
/// token again, which a rotating server would take for theft.
#[test]
fn a_token_refreshed_elsewhere_meanwhile_is_used_without_a_second_refresh() {
    /// Hands out `a1` once, then what another process saved: `a2` and `r2`.
    struct RefreshedElsewhere(AtomicUsize);
    impl CredentialStore for RefreshedElsewhere {
        fn load(&self, _: &str) -> Result<Option<Credentials>, SyncError> {
            let mut c = issued_ahead();
            if self.0.fetch_add(1, Ordering::SeqCst) > 0 {
                c.access_token = "a2".into();
                c.refresh_token = Some("r2".into());
            }
            Ok(Some(c))
        }
        fn save(&self, _: &str, _: &Credentials) -> Result<(), SyncError> {
            panic!("nothing is refreshed here")
        }
        fn remove(&self, _: &str) -> Result<(), SyncError> {
            Ok(())
        }
    }
    let (url, seen) = expiring_server(|_| json("200 OK", TREE));
    let session = Session::new(&url, Arc::new(RefreshedElsewhere(AtomicUsize::new(0))), Http::default(), Arc::new(SetClock::at_unix_secs(NOW)));
    assert_eq!(session.access_token().unwrap().as_deref(), Some("a1"));
    assert!(session.renew_rejected("a1").unwrap());
    assert_eq!(session.access_token().unwrap().as_deref(), Some("a2"));
    assert_eq!(count(&seen, is_refresh), 0);
}
