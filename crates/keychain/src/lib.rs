//! Secrets in the OS keyring. On Linux this is the Secret Service (gnome-keyring, KWallet) over
//! D-Bus, with the kernel keyutils as the session cache; macOS Keychain and Windows Credential
//! Manager elsewhere. Mneme never writes a key or token to a file: when no keyring is reachable the
//! caller gets [`KeychainError::Unavailable`] with what to install or start.
//!
//! Every secret lives under the service name `mneme` (or `MNEME_KEYRING_SERVICE`, which tests set so
//! they never touch a user's real entries) with an account naming what it is, e.g.
//! `anthropic-api-key` or `team-token:https://team.example.com`.
//!
//! A locked Secret Service collection is unlocked through a prompt, and the `keyring` crate
//! waits for its answer without a time limit. A person who asked for something can answer it;
//! background work (the scheduler's team sync) must not hang on a prompt nobody is there to
//! answer, so its handle carries a time limit ([`Keychain::with_time_limit`]): the call runs on
//! a thread of its own, and past the limit the caller gets [`KeychainError::Denied`] saying to
//! unlock the keyring. The thread is left waiting (the prompt stays up; answering it completes
//! the call), and while it waits further limited calls for the same service are refused at
//! once instead of stacking threads and prompts.

use std::collections::BTreeSet;
use std::sync::{mpsc, Mutex};
use std::time::Duration;

pub const DEFAULT_SERVICE: &str = "mneme";
/// The variable naming another service: tests and throwaway runs set it so they never touch a
/// person's own entries.
pub const SERVICE_VAR: &str = "MNEME_KEYRING_SERVICE";

/// The system whose keyring this build talks to (the `keyring` crate's backend is chosen per
/// target in Cargo.toml: Secret Service, Keychain, Credential Manager).
const KEYRING: mneme_core::platform::Os = mneme_core::platform::Os::current();

#[derive(Debug, thiserror::Error)]
pub enum KeychainError {
    #[error("no OS keyring is reachable ({0}); Mneme keeps keys in {name}: {hint}", name = KEYRING.keyring_name(), hint = KEYRING.keyring_unreachable_hint())]
    Unavailable(String),
    /// Locked, refused, or not answering (an unlock prompt nobody answered).
    #[error("the OS keyring is locked or refused access ({0}); unlock the keyring and try again")]
    Denied(String),
    #[error("the OS keyring failed: {0}")]
    Other(String),
}

/// How long background work waits for the keyring before giving up: far longer than an
/// unlocked keyring takes (a few milliseconds; about a second when D-Bus first starts the
/// daemon), short enough that a prompt nobody answers holds a sync for seconds, not for ever.
pub const BACKGROUND_TIME_LIMIT: Duration = Duration::from_secs(10);

/// A handle on one service's entries.
#[derive(Debug, Clone)]
pub struct Keychain {
    service: String,
    /// `None`: wait for the keyring as long as it takes (a person is there to answer an unlock
    /// prompt). `Some`: give up after this long (background work).
    time_limit: Option<Duration>,
}

impl Keychain {
    pub fn new(service: impl Into<String>) -> Keychain {
        Keychain { service: service.into(), time_limit: None }
    }

    /// The same entries, for work nobody is watching: each call gives up after `limit` with
    /// [`KeychainError::Denied`] ("unlock the keyring") instead of waiting for an unlock prompt
    /// nobody answers. See the crate overview.
    pub fn with_time_limit(mut self, limit: Duration) -> Keychain {
        self.time_limit = Some(limit);
        self
    }

    /// The limit [`Keychain::with_time_limit`] set, if any.
    pub fn time_limit(&self) -> Option<Duration> {
        self.time_limit
    }

    /// Mneme's keyring, the one rule every crate uses: the service [`SERVICE_VAR`] names, else
    /// [`DEFAULT_SERVICE`]; a blank value counts as unset. It takes the variable's value because
    /// only front ends read the process environment (callers pass `env.var(SERVICE_VAR)`).
    pub fn for_service_var(value: Option<&str>) -> Keychain {
        Keychain::new(value.filter(|s| !s.trim().is_empty()).unwrap_or(DEFAULT_SERVICE))
    }

    pub fn service(&self) -> &str {
        &self.service
    }

    /// The stored secret, or `None` when there is none.
    pub fn get(&self, account: &str) -> Result<Option<String>, KeychainError> {
        let entry = self.entry(account)?;
        let this = self.clone();
        let account = account.to_string();
        self.run(move || match entry.get_password() {
            Ok(secret) => Ok(Some(secret)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(this.explain(&account, e)),
        })
    }

    pub fn set(&self, account: &str, secret: &str) -> Result<(), KeychainError> {
        let entry = self.entry(account)?;
        let (this, account, secret) = (self.clone(), account.to_string(), secret.to_string());
        self.run(move || entry.set_password(&secret).map_err(|e| this.explain(&account, e)))
    }

    /// Removes the secret; removing one that is not there is not an error.
    pub fn delete(&self, account: &str) -> Result<(), KeychainError> {
        let entry = self.entry(account)?;
        let (this, account) = (self.clone(), account.to_string());
        self.run(move || match entry.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(this.explain(&account, e)),
        })
    }

    /// Runs one keyring call: here and now without a time limit, else bounded ([`bounded`]).
    fn run<T: Send + 'static>(&self, call: impl FnOnce() -> Result<T, KeychainError> + Send + 'static) -> Result<T, KeychainError> {
        match self.time_limit {
            None => call(),
            Some(limit) => bounded(&self.service, limit, call),
        }
    }

    /// [`classify`], with what to do about the entries themselves: several matching one name
    /// (an item copied into a second collection, or made by hand) or one that is not text
    /// (stored by another program) leave every get, set and delete failing, so signing in or
    /// out again cannot mend it; removing them does.
    fn explain(&self, account: &str, e: keyring::Error) -> KeychainError {
        let remove = format!(
            "remove them in your keyring's app (on Linux, Seahorse, or `secret-tool clear service {:?} username {:?}`), then sign in or enter the key again",
            self.service, account
        );
        match e {
            keyring::Error::Ambiguous(items) => KeychainError::Other(format!(
                "{} entries match service {:?} and account {:?}, so Mneme cannot tell which is its own; {remove}",
                items.len(),
                self.service,
                account
            )),
            keyring::Error::BadEncoding(_) => {
                KeychainError::Other(format!("the entry for service {:?} and account {:?} is not text, so another program stored it; {remove}", self.service, account))
            }
            other => classify(other),
        }
    }

    fn entry(&self, account: &str) -> Result<keyring::Entry, KeychainError> {
        // D-Bus passes names as C strings, so libdbus ends one at its first NUL: the account
        // `team-token:https://a.example\0…` would be `team-token:https://a.example`'s entry,
        // read, overwritten or deleted in its place. Such a name comes only from a hand-edited
        // setting, and is refused before the keyring is asked.
        for (what, name) in [("service", self.service.as_str()), ("account", account)] {
            if name.contains('\0') {
                return Err(KeychainError::Other(format!(
                    "the keyring {what} name {name:?} holds a NUL character, which the keyring would cut short and so reach another entry; remove the \\u0000 from the server address or base URL it was made from (or from {SERVICE_VAR})"
                )));
            }
        }
        keyring::Entry::new(&self.service, account).map_err(classify)
    }
}

/// Services with a limited call still waiting for the keyring (an unlock prompt nobody has
/// answered yet).
static WAITING: Mutex<BTreeSet<String>> = Mutex::new(BTreeSet::new());

fn waiting() -> std::sync::MutexGuard<'static, BTreeSet<String>> {
    WAITING.lock().unwrap_or_else(|p| p.into_inner())
}

/// Takes `service` off [`WAITING`] when the call's thread ends, however it ends.
struct Waiting(String);

impl Drop for Waiting {
    fn drop(&mut self) {
        waiting().remove(&self.0);
    }
}

/// Runs `call` on a thread of its own and waits at most `limit` for it. Past the limit the
/// thread is left to finish (or to wait for the prompt's answer) and the caller is told to
/// unlock the keyring; a call for a service whose earlier call still waits is refused at once,
/// so a locked keyring costs one thread and one prompt however often background work asks.
fn bounded<T: Send + 'static>(service: &str, limit: Duration, call: impl FnOnce() -> Result<T, KeychainError> + Send + 'static) -> Result<T, KeychainError> {
    if !waiting().insert(service.to_string()) {
        return Err(KeychainError::Denied(
            "an earlier request to it has not been answered yet, most likely because its unlock prompt is waiting; Mneme does not ask again until it is answered".into(),
        ));
    }
    let guard = Waiting(service.to_string());
    let (tx, rx) = mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new().name("mneme-keyring".into()).spawn(move || {
        let result = call();
        // Off the list before the answer is sent, so a caller who has it may ask again at once.
        drop(guard);
        let _ = tx.send(result);
    });
    if let Err(e) = spawned {
        // The closure (and the guard in it) was dropped with the error.
        return Err(KeychainError::Other(format!("could not start a thread to ask it: {e}")));
    }
    match rx.recv_timeout(limit) {
        Ok(result) => result,
        Err(mpsc::RecvTimeoutError::Timeout) => Err(KeychainError::Denied(format!(
            "it did not answer within {} s, most likely because it is locked and its unlock prompt is waiting for an answer",
            limit.as_secs_f64()
        ))),
        Err(mpsc::RecvTimeoutError::Disconnected) => Err(KeychainError::Other("the request to it ended without an answer".into())),
    }
}

fn classify(e: keyring::Error) -> KeychainError {
    match e {
        // The keyring itself says access was refused: on Linux a locked collection, or an
        // unlock prompt that was dismissed or could not be shown (a headless session), whose
        // message names neither "locked" nor "denied". Telling the person to install a
        // keyring they already have would not help; unlocking it does.
        keyring::Error::NoStorageAccess(inner) => {
            let text = inner.to_string();
            // Secret Service's `NoResult`: it answers, but has no default keyring to keep
            // entries in.
            if text.contains("no result found") {
                KeychainError::Unavailable(format!("{text}: the Secret Service has no default keyring; create one and make it the default, e.g. in Seahorse"))
            } else {
                KeychainError::Denied(text)
            }
        }
        keyring::Error::PlatformFailure(inner) => {
            let text = inner.to_string();
            if text.to_lowercase().contains("locked") || text.to_lowercase().contains("denied") {
                KeychainError::Denied(text)
            } else {
                KeychainError::Unavailable(text)
            }
        }
        other => KeychainError::Other(other.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_service_variable_names_the_keyring_and_blank_means_unset() {
        assert_eq!(Keychain::for_service_var(Some("mneme-test-1")).service(), "mneme-test-1");
        assert_eq!(Keychain::for_service_var(None).service(), DEFAULT_SERVICE);
        assert_eq!(Keychain::for_service_var(Some("")).service(), DEFAULT_SERVICE);
        assert_eq!(Keychain::for_service_var(Some("  ")).service(), DEFAULT_SERVICE);
    }

    /// Secret Service's own refusals (`NoStorageAccess`: a locked collection, an unlock prompt
    /// dismissed or impossible without a display) say to unlock the keyring, not to install
    /// one; whether the text happens to say "locked" does not matter.
    #[test]
    fn a_refused_unlock_says_to_unlock_the_keyring_not_to_install_one() {
        for text in ["Secret Service: unlock prompt was dismissed", "Secret Service: object locked"] {
            let e = classify(keyring::Error::NoStorageAccess(Box::new(std::io::Error::other(text))));
            assert!(matches!(e, KeychainError::Denied(_)), "{text}: {e:?}");
            assert!(e.to_string().contains("unlock the keyring"), "{e}");
        }
        let e = classify(keyring::Error::NoStorageAccess(Box::new(std::io::Error::other("Secret Service: no result found"))));
        assert!(matches!(&e, KeychainError::Unavailable(m) if m.contains("no default keyring")), "{e:?}");
        // No Secret Service at all is still "unavailable", with what to start.
        let e = classify(keyring::Error::PlatformFailure(Box::new(std::io::Error::other("No DBus session or Secret Service provider found"))));
        assert!(matches!(e, KeychainError::Unavailable(_)), "{e:?}");
    }

    /// Entries Mneme cannot use whatever it does (several for one name, one that is not text)
    /// are named, with how to remove them.
    #[test]
    fn entries_mneme_cannot_use_are_named_with_how_to_remove_them() {
        let keychain = Keychain::new("mneme-test");
        for e in [keyring::Error::Ambiguous(Vec::new()), keyring::Error::BadEncoding(vec![0xff])] {
            let e = keychain.explain("team-token:https://team.example", e).to_string();
            assert!(e.contains("\"team-token:https://team.example\"") && e.contains("secret-tool clear service \"mneme-test\""), "{e}");
        }
    }

    /// A limited call that gets no answer (a keyring call blocked on an unlock prompt nobody
    /// answers, here a call blocked on a channel) gives up with "unlock the keyring"; while it
    /// still waits, the next call for that service is refused without being made, and once it
    /// ends calls are made again. A call for another service is not held up.
    #[test]
    fn a_limited_call_that_gets_no_answer_gives_up_and_is_not_repeated_while_it_waits() {
        use std::sync::atomic::{AtomicBool, Ordering};
        use std::sync::Arc;
        let service = "mneme-test-bounded-no-answer";
        let (release, blocked) = mpsc::channel::<()>();
        let e = bounded(service, Duration::from_millis(200), move || {
            let _ = blocked.recv();
            Ok("too late")
        })
        .unwrap_err();
        assert!(matches!(&e, KeychainError::Denied(m) if m.contains("did not answer within 0.2 s")), "{e:?}");
        assert!(e.to_string().contains("unlock the keyring"), "{e}");

        let made = Arc::new(AtomicBool::new(false));
        let flag = made.clone();
        let e = bounded(service, Duration::from_secs(60), move || {
            flag.store(true, Ordering::SeqCst);
            Ok(())
        })
        .unwrap_err();
        assert!(matches!(&e, KeychainError::Denied(m) if m.contains("has not been answered yet")), "{e:?}");
        assert!(!made.load(Ordering::SeqCst), "the second call must not be made while the first waits");
        assert_eq!(bounded("mneme-test-bounded-other", Duration::from_secs(60), || Ok(7)).unwrap(), 7);

        // The prompt is answered: the waiting call ends, and the service is asked again.
        release.send(()).unwrap();
        while waiting().contains(service) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(bounded(service, Duration::from_secs(60), || Ok("answered")).unwrap(), "answered");
        let e = bounded::<()>(service, Duration::from_secs(60), || Err(KeychainError::Other("its own error".into()))).unwrap_err();
        assert!(matches!(&e, KeychainError::Other(m) if m == "its own error"), "{e:?}");
        assert!(!waiting().contains(service));
    }

    /// A call that panics on its thread ends with an error, and does not leave the service
    /// marked as waiting.
    #[test]
    fn a_limited_call_that_panics_is_an_error_not_a_lasting_wait() {
        let service = "mneme-test-bounded-panic";
        let e = bounded::<()>(service, Duration::from_secs(60), || panic!("keyring backend panicked")).unwrap_err();
        assert!(matches!(e, KeychainError::Other(_)), "{e:?}");
        while waiting().contains(service) {
            std::thread::sleep(Duration::from_millis(10));
        }
        assert_eq!(bounded(service, Duration::from_secs(60), || Ok(1)).unwrap(), 1);
    }

    /// A name with a NUL is refused before any keyring is asked: libdbus would end it at the
    /// NUL and reach the entry of the name before it.
    #[test]
    fn a_name_with_a_nul_is_refused_not_cut_short() {
        let keychain = Keychain::new("mneme-test-nul-names");
        let account = "team-token:https://team.example\0.evil.example";
        let errors = [
            keychain.get(account).unwrap_err(),
            keychain.set(account, "secret").unwrap_err(),
            keychain.delete(account).unwrap_err(),
            Keychain::new("mneme\0other").get("team-token:https://team.example").unwrap_err(),
        ];
        for e in errors {
            assert!(matches!(&e, KeychainError::Other(m) if m.contains("NUL")), "{e:?}");
            assert!(!e.to_string().contains('\0'), "the message must not carry the NUL itself: {e:?}");
        }
    }
}
