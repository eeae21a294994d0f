//! A team server whose times are absurd: removal times at the ends of i64 and past them,
//! negative, fractional; a `lastModified` that is no date; sign-in lifetimes at the end of
//! u64. None of it may panic, overflow or stop sync: Mneme acts on what a time names (which
//! key was removed), never on the time itself.

mod common;

use mneme_core::clock::SetClock;
use mneme_core::{Clock, FixedClock};
use mneme_team::auth::{self, CredentialStore, MemoryStore};
use mneme_team::client::{Http, Sleeper};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::TestHome;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;
use common::{client_with_token, login_at, NOW};

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
    let (c, team) = client_with_token(&home, &url, clock);
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
    let mut login = login_at(&url);
    auth::poll_login(&Http::default(), &mut login, &store, &clock).unwrap();
    let saved = store.load(&url).unwrap().expect("signed in");
    assert_eq!(saved.expires_at_ms, u64::MAX);
}

/// Waits by moving a [`SetClock`] on (or, with `stepped_back`, by leaving it where it was, as a
/// clock stepped back while the person is away would), recording each wait. Gives up loudly
/// after `MAX_WAITS`, so a sign-in that would poll for ever fails instead of hanging.
struct ClockSleeper {
    clock: Arc<SetClock>,
    stepped_back: bool,
    waits: std::sync::Mutex<Vec<Duration>>,
}

const MAX_WAITS: usize = 10_000;

impl Sleeper for ClockSleeper {
    fn sleep(&self, d: Duration) {
        let mut waits = self.waits.lock().unwrap();
        waits.push(d);
        assert!(waits.len() < MAX_WAITS, "still polling after {MAX_WAITS} waits");
        if !self.stepped_back {
            self.clock.set(self.clock.now() + d);
        }
    }
    fn jitter(&self) -> f64 {
        0.0
    }
}

/// A device-code endpoint answering with `expires_in` and `interval`, and a token endpoint
/// that never decides: `slow_down` and `authorization_pending` in turn.
fn undecided_server(expires_in: &'static str, interval: &'static str) -> String {
    let code = move |url: &str| {
        format!(
            r#"{{"device_code":"dc","user_code":"ABCD-EFGH","verification_uri":"{url}/device","verification_uri_complete":"{url}/device","expires_in":{expires_in},"interval":{interval}}}"#
        )
    };
    let polls = Arc::new(AtomicUsize::new(0));
    let base = Arc::new(std::sync::OnceLock::<String>::new());
    let url_for_answer = base.clone();
    let (url, _) = serve(move |req| {
        if req.contains("/oauth/device") {
            json("200 OK", &code(url_for_answer.get().map(String::as_str).unwrap_or("")))
        } else if polls.fetch_add(1, Ordering::SeqCst).is_multiple_of(2) {
            json("400 Bad Request", r#"{"error":"slow_down"}"#)
        } else {
            json("400 Bad Request", r#"{"error":"authorization_pending"}"#)
        }
    });
    base.set(url.clone()).unwrap();
    url
}

/// `interval` and `expires_in` at the end of u64, then `slow_down` after `slow_down`: no
/// overflow, no wait over a minute, and the sign-in gives up as expired after an hour instead of
/// polling (or sleeping) for ever.
#[test]
fn a_sign_in_whose_interval_and_lifetime_are_the_end_of_u64_stops_within_the_hour() {
    let url = undecided_server("18446744073709551615", "18446744073709551615");
    let clock = Arc::new(SetClock::at_unix_secs(NOW));
    let sleeper = ClockSleeper { clock: clock.clone(), stepped_back: false, waits: Default::default() };
    let mut shown = None;
    let e = auth::login(&Http::default(), &url, &MemoryStore::default(), clock.as_ref(), &sleeper, |l| shown = Some(l.clone())).unwrap_err();
    assert!(matches!(e, auth::LoginError::Expired), "{e:?}");
    let shown = shown.expect("the code was shown");
    assert_eq!(shown.interval_secs, auth::MAX_POLL_INTERVAL.as_secs());
    assert_eq!(shown.expires_at_ms, (NOW + auth::MAX_CODE_LIFETIME.as_secs()) * 1000);
    let waits = sleeper.waits.lock().unwrap();
    assert!(waits.iter().all(|w| *w <= auth::MAX_POLL_INTERVAL && !w.is_zero()), "{waits:?}");
    assert_eq!(waits.iter().sum::<Duration>(), auth::MAX_CODE_LIFETIME);
}

/// A clock stepped back while the person is away (here: never moving on) does not keep a
/// sign-in that is never decided polling past the code's lifetime.
#[test]
fn a_clock_stepped_back_during_sign_in_does_not_prolong_it() {
    let url = undecided_server("900", "5");
    let clock = Arc::new(SetClock::at_unix_secs(NOW));
    let sleeper = ClockSleeper { clock: clock.clone(), stepped_back: true, waits: Default::default() };
    let e = auth::login(&Http::default(), &url, &MemoryStore::default(), clock.as_ref(), &sleeper, |_| {}).unwrap_err();
    assert!(matches!(e, auth::LoginError::Expired), "{e:?}");
    let waits = sleeper.waits.lock().unwrap();
    assert_eq!(waits.iter().sum::<Duration>(), Duration::from_secs(900), "{} waits", waits.len());
    assert_eq!(waits.first(), Some(&Duration::from_secs(5)));
    assert!(waits.iter().all(|w| *w <= auth::MAX_POLL_INTERVAL), "{waits:?}");
}

/// A sign-in kept by its caller between polls (the Team screen's) whose interval is already
/// the end of u64: a `slow_down` holds it to the cap and to what is left of the code's life
/// instead of overflowing.
#[test]
fn slow_down_on_an_interval_at_the_end_of_u64_does_not_overflow() {
    let (url, _) = serve(|_| json("400 Bad Request", r#"{"error":"slow_down"}"#));
    let clock = FixedClock::at_unix_secs(NOW);
    let mut login = auth::DeviceLogin { interval_secs: u64::MAX, expires_at_ms: (NOW + 30) * 1000, ..login_at(&url) };
    assert_eq!(auth::poll_login(&Http::default(), &mut login, &MemoryStore::default(), &clock).unwrap(), auth::LoginPoll::SlowDown);
    assert_eq!(login.interval_secs, 30);
    login.expires_at_ms = u64::MAX;
    login.interval_secs = u64::MAX;
    auth::poll_login(&Http::default(), &mut login, &MemoryStore::default(), &clock).unwrap();
    assert_eq!(login.interval_secs, auth::MAX_POLL_INTERVAL.as_secs());
}

/// The interval a server asks for is kept within the code's own life: a code that lives ten
/// seconds is polled after ten seconds, not thirty; one that lives no time at all after one.
#[test]
fn the_poll_interval_never_passes_the_code_s_lifetime() {
    for (expires_in, interval, want) in [("10", "30", 10), ("0", "5", 1), ("900", "0", 1), ("900", "5", 5)] {
        let url = undecided_server(expires_in, interval);
        let l = auth::start_login(&Http::default(), &url, &FixedClock::at_unix_secs(NOW)).unwrap();
        assert_eq!(l.interval_secs, want, "expires_in {expires_in}, interval {interval}");
    }
}
