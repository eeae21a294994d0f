//! Background team sync against a real Secret Service whose keyring is locked behind an unlock
//! prompt nobody answers. Ignored by default because it needs gnome-keyring, D-Bus and Xvfb;
//! run it with
//!
//!     cargo test -p mneme-team --test keyring_locked -- --ignored
//!
//! (or with the other keyring tests, `scripts/with-keyring.sh cargo test -p mneme-team --
//! --ignored keyring`). It starts a private D-Bus session and gnome-keyring of its own, because
//! it locks the keyring: the shared session of `scripts/with-keyring.sh` must stay unlocked for
//! the tests that run beside it. Alone in its binary, since it points this process at that
//! session.

use mneme_core::SystemClock;
use mneme_keychain::{Keychain, KeychainError};
use mneme_store::Environment;
use mneme_team::auth;
use mneme_team::client::{SyncError, SyncTarget};
use std::io::{BufRead, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::Duration;

/// Ends a child (Xvfb, dbus-daemon) with the test.
struct Kill(Child);

impl Drop for Kill {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Starts `command` and reads the first line it prints.
fn start(command: &mut Command, what: &str) -> (Kill, String) {
    let mut child = command.stdout(Stdio::piped()).stderr(Stdio::null()).spawn().unwrap_or_else(|e| panic!("{what}: {e}"));
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    (Kill(child), line.trim().to_string())
}

fn run(program: &str, args: &[&str], stdin: &[u8]) -> String {
    run_command(Command::new(program).args(args), stdin)
}

fn run_command(command: &mut Command, stdin: &[u8]) -> String {
    let program = command.get_program().to_string_lossy().into_owned();
    let args: Vec<_> = command.get_args().map(|a| a.to_string_lossy().into_owned()).collect();
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("{program}: {e}"));
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{program} {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// A display nobody looks at (gnome-keyring's prompter opens its unlock prompt there and waits
/// for an answer that never comes, as on a desktop nobody is at), and a D-Bus session with an
/// unlocked gnome-keyring whose programs start on that display. Returns the display and the
/// bus; this process talks to that bus from then on.
fn private_keyring(scratch: &Path) -> (Kill, Kill) {
    let (display, number) = start(Command::new("Xvfb").args(["-displayfd", "1", "-nolisten", "tcp"]), "Xvfb (apt-get install xvfb)");
    assert!(number.parse::<u32>().is_ok(), "Xvfb named no display: {number:?}");
    let (data, runtime) = (scratch.join("data"), scratch.join("runtime"));
    for dir in [&data, &runtime] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700)).unwrap();
    }
    // Everything the bus starts (the keyring daemon, its prompter) gets this environment.
    let (bus, address) = start(
        Command::new("dbus-daemon")
            .args(["--session", "--nofork", "--print-address=1"])
            .env("DISPLAY", format!(":{number}"))
            .env("XDG_DATA_HOME", &data)
            .env("XDG_RUNTIME_DIR", &runtime),
        "dbus-daemon (apt-get install dbus)",
    );
    assert!(address.starts_with("unix:"), "dbus-daemon printed {address:?}");
    // Alone in this binary: no other test reads the variable.
    std::env::set_var("DBUS_SESSION_BUS_ADDRESS", &address);
    std::env::set_var("XDG_RUNTIME_DIR", &runtime);
    // A throwaway password creates and unlocks the login keyring, as scripts/with-keyring.sh does.
    run_command(
        Command::new("gnome-keyring-daemon").args(["--unlock", "--components=secrets"]).env("XDG_DATA_HOME", &data).env("XDG_RUNTIME_DIR", &runtime),
        b"mneme",
    );
    (display, bus)
}

/// A locked keyring whose unlock prompt nobody answers: the scheduler's team client (keyring
/// calls limited to `BACKGROUND_TIME_LIMIT`) fails its pull saying to unlock the keyring
/// instead of waiting for ever, and the failure is recorded for the Team screen; while the
/// prompt is still up nothing asks the keyring again (no second thread, no second prompt);
/// once the prompt goes (here dismissed: its display closes) the keyring is asked again.
#[test]
#[ignore = "needs gnome-keyring, D-Bus and Xvfb: run with --ignored"]
fn keyring_locked_behind_a_prompt_nobody_answers_fails_background_sync_and_says_to_unlock() {
    let scratch = tempfile::tempdir().unwrap();
    let (display, _bus) = private_keyring(scratch.path());
    let service = format!("mneme-test-locked-{}", std::process::id());
    let server = "http://127.0.0.1:9";
    let account = auth::account(server);
    // Stored through Secret Service's own tool, with the attributes the keyring crate gives its
    // entries, so this process's keyutils cache cannot answer.
    run(
        "secret-tool",
        &["store", "--label=mneme test", "service", &service, "username", &account, "target", "default", "application", "rust-keyring"],
        br#"{"accessToken":"t0k3n","expiresAtMs":99999999999999}"#,
    );
    assert!(run("secret-tool", &["lookup", "service", &service, "username", &account], b"").contains("t0k3n"));
    let collection = "/org/freedesktop/secrets/collection/login";
    run("gdbus", &["call", "--session", "--dest", "org.freedesktop.secrets", "--object-path", "/org/freedesktop/secrets", "--method", "org.freedesktop.Secret.Service.Lock", &format!("['{collection}']")], b"");
    let locked = run("busctl", &["--user", "get-property", "org.freedesktop.secrets", collection, "org.freedesktop.Secret.Collection", "Locked"], b"");
    assert_eq!(locked.trim(), "b true");

    let data = scratch.path().join("home");
    let env = Environment::with_home(&data).set_var(auth::KEYRING_SERVICE_VAR, service.clone()).set_var("MNEME_DATA_DIR", data.join("mneme").to_string_lossy());
    let target = SyncTarget { memory_dir: data.join("memory"), repo: Some("owner/repo".into()), server_url: Some(server.into()) };
    let client = mneme_team::keyring_client(target, &env, Arc::new(SystemClock));
    let e = client.pull().unwrap_err();
    let limit = mneme_keychain::BACKGROUND_TIME_LIMIT.as_secs();
    assert!(matches!(&e, SyncError::Keychain(KeychainError::Denied(m)) if m.contains(&format!("did not answer within {limit} s"))), "{e:?}");
    assert!(e.to_string().contains("unlock the keyring"), "{e}");
    let recorded = client.state().unwrap().last_pull.expect("the failed pull is recorded");
    assert!(!recorded.ok && recorded.summary.contains("unlock the keyring"), "{recorded:?}");

    // The prompt is still up: the push is refused without asking again.
    let e = client.push().unwrap_err();
    assert!(matches!(&e, SyncError::Keychain(KeychainError::Denied(m)) if m.contains("has not been answered yet")), "{e:?}");

    // The scheduler's model provider (extraction, dreams) reads its key with the same limit:
    // asked now, it fails saying to unlock the keyring instead of waiting for a second prompt.
    mneme_model::ProviderSettings { kind: mneme_model::ProviderKind::Anthropic, ..Default::default() }.save(&env).unwrap();
    let e = mneme_model::configured_provider_in_background(&env).err().expect("no key can be read from a locked keyring");
    assert!(e.to_string().contains("has not been answered yet") && e.to_string().contains("unlock the keyring"), "{e}");

    // The display closes and the prompt with it: the waiting call ends and the keyring is
    // asked again (still locked, it now says its prompt was dismissed).
    drop(display);
    let bounded = Keychain::new(service.clone()).with_time_limit(Duration::from_secs(30));
    let mut asked_again = None;
    for _ in 0..600 {
        match bounded.get(&account) {
            Err(KeychainError::Denied(m)) if m.contains("has not been answered yet") => std::thread::sleep(Duration::from_millis(100)),
            other => {
                asked_again = Some(other);
                break;
            }
        }
    }
    let asked_again = asked_again.expect("the waiting call never ended after its prompt was dismissed");
    assert!(matches!(&asked_again, Err(KeychainError::Denied(m)) if !m.contains("did not answer")), "{asked_again:?}");
    assert!(asked_again.unwrap_err().to_string().contains("unlock the keyring"));
}
