//! Mneme's device sign-in against the real server: the code is approved by posting the
//! server's `/device` form as a browser would; polling honours `interval` and `slow_down`;
//! tokens refresh before expiry and the refresh token rotates; signing out forgets them.
//! The credential store here is in memory; `crates/team/tests/keyring.rs` runs the same
//! flow against the real OS keyring.

mod sync_support;

use mneme_team::auth::{self, CredentialStore, Credentials, LoginError, LoginPoll, MemoryStore, Session};
use mneme_team::client::{Http, SyncClient, SyncError, SyncTarget, TokenSource};
use mneme_team_server::Role;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};
use std::time::Duration;
use sync_support::{ClockSleeper, Server};

/// Posts the `/device` form the way a browser submits it.
fn decide(url: &str, user_code: &str, user: &str, action: &str) -> String {
    let mut resp = ureq::post(&format!("{url}/device"))
        .config()
        .http_status_as_error(false)
        .build()
        .send_form([("user_code", user_code), ("username", user), ("password", "correct horse battery staple"), ("action", action)])
        .unwrap();
    resp.body_mut().read_to_string().unwrap()
}

#[test]
fn device_sign_in_refresh_and_sign_out() {
    let s = Server::start(|c| c.access_token_ttl = Duration::from_secs(600));
    let repo = s.repo();
    let (user, _) = s.member(&repo, Role::Member);
    let store = Arc::new(MemoryStore::default());
    let http = Http::default();

    let code = Arc::new(Mutex::new(String::new()));
    let (url, who, seen) = (s.url.clone(), user.clone(), code.clone());
    let sleeper = ClockSleeper {
        clock: s.clock.clone(),
        // The person approves in their browser while the app waits for the first poll.
        on_sleep: Mutex::new(Box::new(move |n| {
            if n == 0 {
                decide(&url, &seen.lock().unwrap(), &who, "approve");
            }
        })),
        count: AtomicU64::new(0),
    };
    let shown = code.clone();
    let signed_in = auth::login(&http, &s.url, store.as_ref(), s.clock.as_ref(), &sleeper, |l| {
        assert!(!l.user_code.is_empty());
        assert!(l.verification_uri.ends_with("/device"));
        *shown.lock().unwrap() = l.user_code.clone();
    })
    .unwrap();
    assert_eq!(signed_in.as_deref(), Some(user.as_str()));
    let first = store.load(&s.url).unwrap().unwrap();
    assert_eq!(first.user.as_deref(), Some(user.as_str()));
    assert!(first.refresh_token.is_some());

    // The token works for sync.
    let home = tempfile::tempdir().unwrap();
    let env = mneme_store::Environment::with_home(home.path()).set_var("MNEME_DATA_DIR", home.path().join("data").to_string_lossy());
    std::fs::create_dir_all(home.path().join("memory/team")).unwrap();
    std::fs::write(home.path().join("memory/team/hello.md"), "signed in").unwrap();
    let session = Arc::new(Session::new(&s.url, store.clone(), Http::default(), s.clock.clone()));
    let target = SyncTarget { memory_dir: home.path().join("memory"), repo: Some(repo.clone()), server_url: Some(s.url.clone()) };
    let client = SyncClient::new(target, &env, s.clock.clone(), session.clone());
    assert_eq!(client.push().unwrap().uploaded, ["hello.md"]);
    assert_eq!(client.me().unwrap().user, user);

    // Far from expiry the token is used as is; within a minute of it, it is refreshed and the
    // refresh token rotates.
    assert_eq!(session.access_token().unwrap().as_deref(), Some(first.access_token.as_str()));
    s.clock.advance(Duration::from_secs(560));
    let refreshed = session.access_token().unwrap().unwrap();
    assert_ne!(refreshed, first.access_token);
    let second = store.load(&s.url).unwrap().unwrap();
    assert_ne!(second.refresh_token, first.refresh_token);
    assert_eq!(second.user, first.user, "the name survives a refresh");
    assert!(client.pull().is_ok());

    // Sessions of different processes (the app's watchers, a CLI run) meeting at expiry: one
    // refreshes, the others wait and use its token. Each spending the same refresh token would
    // get the sign-in revoked.
    s.clock.advance(Duration::from_secs(560));
    let data_dir = home.path().join("data");
    let barrier = Arc::new(std::sync::Barrier::new(4));
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let session = Session::new(&s.url, store.clone(), Http::default(), s.clock.clone()).with_refresh_lock(&data_dir);
            let barrier = barrier.clone();
            std::thread::spawn(move || {
                barrier.wait();
                session.access_token()
            })
        })
        .collect();
    let tokens: Vec<String> = threads.into_iter().map(|t| t.join().unwrap().unwrap().unwrap()).collect();
    assert!(tokens.iter().all(|t| *t == tokens[0] && *t != refreshed), "{tokens:?}");
    assert_eq!(store.load(&s.url).unwrap().unwrap().access_token, tokens[0]);
    assert!(client.pull().is_ok(), "the sign-in is still good");

    // A spent refresh token presented again revokes the sign-in; the client says to sign in again.
    store.save(&s.url, &Credentials { expires_at_ms: 0, ..first.clone() }).unwrap();
    assert!(matches!(session.access_token(), Err(SyncError::Auth { .. })));

    auth::logout(store.as_ref(), &s.url).unwrap();
    assert!(store.load(&s.url).unwrap().is_none());
    assert_eq!(session.access_token().unwrap(), None);
    let after = client.push();
    assert!(matches!(after, Err(SyncError::NoAuth { .. })), "{after:?}");
}

#[test]
fn polling_too_fast_slows_down_and_denial_and_expiry_end_the_sign_in() {
    let s = Server::start(|c| c.device_code_ttl = Duration::from_secs(120));
    let repo = s.repo();
    let (user, _) = s.member(&repo, Role::Member);
    let store = MemoryStore::default();
    let http = Http::default();

    let mut l = auth::start_login(&http, &s.url, s.clock.as_ref()).unwrap();
    assert_eq!(auth::poll_login(&http, &mut l, &store, s.clock.as_ref()).unwrap(), LoginPoll::Pending);
    let interval = l.interval_secs;
    // Again at once: too fast.
    assert_eq!(auth::poll_login(&http, &mut l, &store, s.clock.as_ref()).unwrap(), LoginPoll::SlowDown);
    assert_eq!(l.interval_secs, interval + 5);
    s.clock.advance(Duration::from_secs(l.interval_secs));
    decide(&s.url, &l.user_code, &user, "deny");
    assert!(matches!(auth::poll_login(&http, &mut l, &store, s.clock.as_ref()), Err(LoginError::Denied)));
    assert!(store.load(&s.url).unwrap().is_none());

    let mut l = auth::start_login(&http, &s.url, s.clock.as_ref()).unwrap();
    s.clock.advance(Duration::from_secs(121));
    assert!(matches!(auth::poll_login(&http, &mut l, &store, s.clock.as_ref()), Err(LoginError::Expired)));
}
