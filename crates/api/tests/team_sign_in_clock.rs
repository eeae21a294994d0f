//! The Team screen's device sign-in when the clock is stepped back while the person is away:
//! the code's life is counted in time actually waited (a monotonic clock the test moves by
//! hand, `Mneme::with_team_monotonic_clock`) as well as on the wall clock, so a server that
//! answers `authorization_pending` for ever is not polled past the code's life however far the
//! clock went back, and a machine whose wall clock passed the lapse (asleep meanwhile) still
//! stops. The server is a raw loopback one on 127.0.0.1:0; nothing waits for real.

use mneme_api::{ErrorCode, Mneme, TeamSignInState};
use mneme_core::clock::SetClock;
use mneme_team::auth::MemoryStore;
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::TestHome;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, UNIX_EPOCH};

/// 2026-12-07T00:00:00Z.
const NOW: u64 = 1_796_601_600;
/// The code's life the server gives, in seconds.
const LIFE: u64 = 900;

/// A device-flow server that hands out a new code each time and never sees it approved.
fn pending_for_ever() -> (String, Arc<Mutex<Vec<String>>>) {
    let codes = AtomicUsize::new(0);
    serve(move |req| {
        if req.contains("/oauth/device/code") {
            let n = codes.fetch_add(1, Ordering::SeqCst);
            json(
                "200 OK",
                &format!(
                    r#"{{"device_code":"device-{n}","user_code":"CODE-{n}","verification_uri":"http://127.0.0.1/device","verification_uri_complete":"http://127.0.0.1/device?code={n}","expires_in":{LIFE},"interval":5}}"#
                ),
            )
        } else {
            json("400 Bad Request", r#"{"error":"authorization_pending"}"#)
        }
    })
}

/// The app, its wall clock, and the monotonic clock's hand (time waited since the test began).
struct App {
    _home: TestHome,
    mneme: Mneme,
    clock: Arc<SetClock>,
    waited: Arc<Mutex<Duration>>,
}

impl App {
    fn new(url: &str) -> App {
        let home = TestHome::new();
        let clock = Arc::new(SetClock::at_unix_secs(NOW));
        let waited = Arc::new(Mutex::new(Duration::ZERO));
        let base = Instant::now();
        let hand = waited.clone();
        let mneme = Mneme::new(home.env.clone().set_var("TEAM_MEMORY_SYNC_URL", url), clock.clone())
            .with_team_credentials(Arc::new(MemoryStore::default()))
            .with_team_monotonic_clock(Arc::new(move || base + *hand.lock().unwrap()));
        App { _home: home, mneme, clock, waited }
    }

    /// `secs` pass, and the wall clock reads `wall_secs` after them.
    fn wait(&self, secs: u64, wall_secs: u64) {
        *self.waited.lock().unwrap() += Duration::from_secs(secs);
        self.clock.set(UNIX_EPOCH + Duration::from_secs(wall_secs));
    }
}

fn polls(seen: &Mutex<Vec<String>>) -> usize {
    seen.lock().unwrap().iter().filter(|r| r.contains("/oauth/token")).count()
}

#[test]
fn a_clock_stepped_back_during_the_sign_in_does_not_stretch_the_codes_life() {
    let (url, seen) = pending_for_ever();
    let app = App::new(&url);
    let login = app.mneme.team_sign_in(None).unwrap();
    assert_eq!(login.expires_at_ms, (NOW + LIFE) * 1000);
    // The life a countdown starts from, with no wall clock for the screen to read against.
    assert_eq!(login.expires_in_secs, LIFE);
    assert_eq!(app.mneme.team_sign_in_poll(&login.id).unwrap().state, TeamSignInState::Pending);

    // Ten minutes later NTP steps the clock back two hours: still pending, a second before the end.
    app.wait(LIFE - 1, NOW + LIFE - 1 - 2 * 3600);
    assert_eq!(app.mneme.team_sign_in_poll(&login.id).unwrap().state, TeamSignInState::Pending);
    assert_eq!(polls(&seen), 2);

    // The code's life is up in time waited, though the wall clock gives it two more hours.
    app.wait(1, NOW + LIFE - 2 * 3600);
    let e = app.mneme.team_sign_in_poll(&login.id).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{e:?}");
    assert!(e.message.contains("The code expired") && e.message.contains("Choose Sign in for a new code"), "{}", e.message);
    assert_eq!(polls(&seen), 2, "a lapsed code is not polled");
    let e = app.mneme.team_sign_in_poll(&login.id).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "the lapsed sign-in is forgotten: {}", e.message);
}

/// A sign-in left unfinished is dropped when the next one starts once its life is up in time
/// waited, whatever the (stepped back) wall clock says; a fresh one is not.
#[test]
fn a_new_sign_in_forgets_the_ones_whose_life_is_up_in_time_waited() {
    let (url, _) = pending_for_ever();
    let app = App::new(&url);
    let old = app.mneme.team_sign_in(None).unwrap();
    app.wait(LIFE / 2, NOW - 3600);
    let recent = app.mneme.team_sign_in(None).unwrap();
    app.wait(LIFE / 2, NOW - 3600 + LIFE / 2);
    let new = app.mneme.team_sign_in(None).unwrap();
    assert_ne!(old.id, new.id);
    let e = app.mneme.team_sign_in_poll(&old.id).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "{}", e.message);
    assert_eq!(app.mneme.team_sign_in_poll(&recent.id).unwrap().state, TeamSignInState::Pending);
    assert_eq!(app.mneme.team_sign_in_poll(&new.id).unwrap().state, TeamSignInState::Pending);
}

/// The wall clock still ends a code whose life it says is over even when little time was
/// counted as waited (a machine asleep meanwhile): the server's code has lapsed either way.
#[test]
fn the_wall_clock_still_ends_the_code_after_a_sleep() {
    let (url, seen) = pending_for_ever();
    let app = App::new(&url);
    let login = app.mneme.team_sign_in(None).unwrap();
    app.wait(1, NOW + LIFE);
    let e = app.mneme.team_sign_in_poll(&login.id).unwrap_err();
    assert!(e.message.contains("The code expired"), "{}", e.message);
    assert_eq!(polls(&seen), 0);
}
