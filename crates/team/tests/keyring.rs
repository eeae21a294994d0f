//! Sign-in end to end against the real OS keyring. Ignored by default because it needs a
//! Secret Service; run it with
//!
//!     scripts/with-keyring.sh cargo test -p mneme-team -- --ignored keyring
//!
//! which starts a private D-Bus session with an unlocked gnome-keyring. The device code is
//! approved by posting the server's `/device` form as a browser would; the token is stored in
//! and read back from the keyring (and, through `secret-tool`, from Secret Service itself, so
//! the kernel keyutils cache alone cannot satisfy the test), used for a push, and gone after
//! signing out.

use mneme_core::{Clock, SystemClock};
use mneme_keychain::Keychain;
use mneme_store::Environment;
use mneme_team::auth::{self, CredentialStore, KeyringStore, Session};
use mneme_team::client::{Http, Sleeper, SyncClient, SyncTarget};
use mneme_team_server::{DatabaseUrl, Role, ServerConfig};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// Approves the sign-in on the first wait instead of sleeping through the interval.
struct ApproveOnFirstWait {
    approve: Mutex<Option<Box<dyn FnOnce() + Send>>>,
}

impl Sleeper for ApproveOnFirstWait {
    fn sleep(&self, d: Duration) {
        match self.approve.lock().unwrap().take() {
            Some(approve) => approve(),
            // The server enforces `interval` between polls; wait it out for real after that.
            None => std::thread::sleep(d),
        }
    }
    fn jitter(&self) -> f64 {
        0.0
    }
}

fn secret_tool_lookup(service: &str, account: &str) -> Option<String> {
    let out = Command::new("secret-tool").args(["lookup", "service", service, "username", account]).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

#[test]
#[ignore = "needs a Secret Service: run under scripts/with-keyring.sh"]
fn keyring_sign_in_push_and_sign_out() {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos();
    let service = format!("mneme-test-{}-{nanos}", std::process::id());
    let data = tempfile::tempdir().unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let mut config = ServerConfig::new(DatabaseUrl::Sqlite(data.path().join("server.db")));
    config.device_poll_interval = Duration::from_secs(1);
    let server = rt.block_on(async {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        mneme_team_server::spawn(config, listener).await.unwrap()
    });
    let url = server.url();
    let admin = server.admin();
    rt.block_on(admin.create_team("team")).unwrap();
    rt.block_on(admin.create_user("ada", "correct horse battery staple")).unwrap();
    rt.block_on(admin.grant("ada", Some("team"), "owner/repo", Role::Member)).unwrap();

    let env = Environment::with_home(data.path())
        .set_var(auth::KEYRING_SERVICE_VAR, service.clone())
        .set_var("MNEME_DATA_DIR", data.path().join("mneme").to_string_lossy());
    let store = Arc::new(KeyringStore::from_env(&env));
    assert_eq!(store.keychain().service(), service);
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let code = Arc::new(Mutex::new(String::new()));
    let (form_url, seen) = (format!("{url}/device"), code.clone());
    let sleeper = ApproveOnFirstWait {
        approve: Mutex::new(Some(Box::new(move || {
            let user_code = seen.lock().unwrap().clone();
            let page = ureq::post(&form_url)
                .send_form([
                    ("user_code", user_code.as_str()),
                    ("username", "ada"),
                    ("password", "correct horse battery staple"),
                    ("action", "approve"),
                ])
                .unwrap()
                .body_mut()
                .read_to_string()
                .unwrap();
            assert!(!page.is_empty());
        }))),
    };
    let shown = code.clone();
    let user = auth::login(&Http::default(), &url, store.as_ref(), clock.as_ref(), &sleeper, |l| {
        *shown.lock().unwrap() = l.user_code.clone();
    })
    .unwrap();
    assert_eq!(user.as_deref(), Some("ada"));

    // In the keyring, and in Secret Service itself.
    let stored = store.load(&url).unwrap().expect("credentials in the keyring");
    assert_eq!(stored.user.as_deref(), Some("ada"));
    let raw = Keychain::new(service.clone()).get(&auth::account(&url)).unwrap().unwrap();
    assert!(raw.contains(&stored.access_token));
    let via_secret_service = secret_tool_lookup(&service, &auth::account(&url)).expect("secret-tool finds the entry");
    assert!(via_secret_service.contains(&stored.access_token), "the token is in Secret Service");

    // Used for a push.
    std::fs::create_dir_all(data.path().join("memory/team")).unwrap();
    std::fs::write(data.path().join("memory/team/keyring.md"), "pushed with a token from the keyring").unwrap();
    let session = Arc::new(Session::new(&url, store.clone(), Http::default(), clock.clone()));
    let target = SyncTarget { memory_dir: data.path().join("memory"), repo: Some("owner/repo".into()), server_url: Some(url.clone()) };
    let client = SyncClient::new(target, &env, clock, session);
    assert_eq!(client.push().unwrap().uploaded, ["keyring.md"]);

    // Signing out removes it from the keyring and from Secret Service.
    auth::logout(store.as_ref(), &url).unwrap();
    assert!(store.load(&url).unwrap().is_none());
    assert_eq!(secret_tool_lookup(&service, &auth::account(&url)), None);
    assert!(client.push().is_err());
    rt.block_on(server.shutdown());
}
