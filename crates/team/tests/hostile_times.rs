//! A team server whose times are absurd: removal times at the ends of i64 and past them,
//! negative, fractional; a `lastModified` that is no date; sign-in lifetimes at the end of
//! u64. None of it may panic, overflow or stop sync: Mneme acts on what a time names (which
//! key was removed), never on the time itself.

use mneme_core::{Clock, FixedClock};
use mneme_team::auth::{self, CredentialStore, MemoryStore};
use mneme_team::client::{Http, Sleeper, StaticToken, SyncClient, SyncTarget};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::TestHome;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

struct NoWait;

impl Sleeper for NoWait {
    fn sleep(&self, _: Duration) {}
    fn jitter(&self) -> f64 {
        0.0
    }
}

/// 2026-12-07T00:00:00Z.
const NOW: u64 = 1_796_601_600;

fn client(home: &TestHome, url: &str, clock: Arc<dyn Clock>) -> (SyncClient, PathBuf) {
    let memory = home.root.join("memory");
    std::fs::create_dir_all(memory.join("team")).unwrap();
    let target = SyncTarget { memory_dir: memory.clone(), repo: Some("owner/name".into()), server_url: Some(url.into()) };
    let c = SyncClient::new(target, &home.env, clock, Arc::new(StaticToken("t0k3n".into()))).with_sleeper(Arc::new(NoWait));
    (c, memory.join("team"))
}

/// Removal times of every absurd kind: each named key is still removed here (to the trash),
/// the state is saved and read back, and the next push leaves the removed keys out; a
/// `lastModified` in the year 275760 or no date at all changes nothing.
#[test]
fn absurd_removal_times_still_remove_and_sync_goes_on() {
    let home = TestHome::new();
    let times = [
        ("max.md", "9223372036854775807"),
        ("min.md", "-9223372036854775808"),
        ("past_i64.md", "1e300"),
        ("before_epoch.md", "-1"),
        ("zero.md", "0"),
        ("fraction.md", "1796601600000.5"),
        ("y9999.md", "253402300799999"),
    ];
    let deleted: Vec<String> = times.iter().map(|(k, t)| format!(r#""{k}":{t}"#)).collect();
    let body = format!(
        r#"{{"repo":"owner/name","lastModified":"+275760-09-13T00:00:00.000Z","checksum":"sha256:r","content":{{"entries":{{"kept.md":"theirs"}},"deletedEntries":{{{}}}}}}}"#,
        deleted.join(",")
    );
    // The first push meets a conflict (412), so the client asks for the hashes, whose removal
    // time is absurd too, and pushes again.
    let puts = Arc::new(AtomicUsize::new(0));
    let (url, seen) = serve(move |req| {
        if req.starts_with("PUT ") && puts.fetch_add(1, Ordering::SeqCst) == 0 {
            json("412 Precondition Failed", "{}")
        } else if req.starts_with("PUT ") {
            json("200 OK", r#"{"checksum":"sha256:p","lastModified":"not a date"}"#)
        } else if req.contains("view=hashes") {
            json("200 OK", r#"{"version":1,"checksum":"sha256:r","entryChecksums":{},"deletedEntries":{"late.md":1e308}}"#)
        } else {
            json("200 OK", &body)
        }
    });
    let clock: Arc<dyn Clock> = Arc::new(FixedClock::at_unix_secs(NOW));
    let (c, team) = client(&home, &url, clock);
    for (k, _) in times {
        std::fs::write(team.join(k), format!("{k} here")).unwrap();
    }
    let r = c.pull().unwrap();
    let mut trashed = r.trashed.clone();
    trashed.sort();
    let mut want: Vec<&str> = times.iter().map(|(k, _)| *k).collect();
    want.sort();
    assert_eq!(trashed, want, "{r:?}");
    assert!(times.iter().all(|(k, _)| !team.join(k).exists()));
    assert_eq!(std::fs::read_to_string(team.join("kept.md")).unwrap(), "theirs");
    let st = c.state().unwrap();
    assert_eq!(st.tombstoned_keys.get("max.md"), Some(&i64::MAX));
    assert_eq!(st.tombstoned_keys.get("min.md"), Some(&i64::MIN));
    assert_eq!(st.tombstoned_keys.get("past_i64.md"), Some(&i64::MAX), "held to i64, not wrapped");

    // A new file, one removed at time 0 and one the hashes name as removed at 1e308: only the
    // new one goes out in the push that lands.
    std::fs::write(team.join("new.md"), "mine").unwrap();
    std::fs::write(team.join("zero.md"), "written again here").unwrap();
    std::fs::write(team.join("late.md"), "removed there").unwrap();
    let p = c.push().unwrap();
    let last_put = seen.lock().unwrap().iter().rev().find(|r| r.starts_with("PUT ")).cloned().expect("a push was sent");
    assert!(last_put.contains("new.md") && !last_put.contains("zero.md") && !last_put.contains("late.md"), "{last_put}");
    assert!(p.tombstoned.contains(&"late.md".to_string()), "{p:?}");
    assert_eq!(c.state().unwrap().tombstoned_keys.get("late.md"), Some(&i64::MAX));
}

/// A sign-in whose lifetimes are the end of u64 neither overflows nor expires at once: the
/// expiry is held to the end of time, so the session is fresh and its token used.
#[test]
fn sign_in_lifetimes_at_the_end_of_u64_do_not_overflow() {
    let (url, _) = serve(|req| {
        if req.contains("/oauth/token") {
            json("200 OK", r#"{"access_token":"tok","token_type":"Bearer","expires_in":18446744073709551615,"refresh_token":"r"}"#)
        } else {
            json("200 OK", r#"{"user":"mallory","repos":[]}"#)
        }
    });
    let store = MemoryStore::default();
    let clock = FixedClock::at_unix_secs(NOW);
    let mut login = auth::DeviceLogin {
        server: url.clone(),
        user_code: "ABCD-EFGH".into(),
        verification_uri: format!("{url}/device"),
        verification_uri_complete: format!("{url}/device"),
        interval_secs: 1,
        expires_at_ms: u64::MAX,
        device_code: "dc".into(),
    };
    auth::poll_login(&Http::default(), &mut login, &store, &clock).unwrap();
    let saved = store.load(&url).unwrap().expect("signed in");
    assert_eq!(saved.expires_at_ms, u64::MAX);
}
