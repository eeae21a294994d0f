//! Secrets in the OS keyring. On Linux this is the Secret Service (gnome-keyring, KWallet) over
//! D-Bus, with the kernel keyutils as the session cache; macOS Keychain and Windows Credential
//! Manager elsewhere. Mneme never writes a key or token to a file: when no keyring is reachable the
//! caller gets [`KeychainError::Unavailable`] with what to install or start.
//!
//! Every secret lives under the service name `mneme` (or `MNEME_KEYRING_SERVICE`, which tests set so
//! they never touch a user's real entries) with an account naming what it is, e.g.
//! `anthropic-api-key` or `team-token:https://team.example.com`.

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
    #[error("the OS keyring refused access ({0}); unlock the keyring and try again")]
    Denied(String),
    #[error("the OS keyring failed: {0}")]
    Other(String),
}

/// A handle on one service's entries.
#[derive(Debug, Clone)]
pub struct Keychain {
    service: String,
}

impl Keychain {
    pub fn new(service: impl Into<String>) -> Keychain {
        Keychain { service: service.into() }
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
        match self.entry(account)?.get_password() {
            Ok(secret) => Ok(Some(secret)),
            Err(keyring::Error::NoEntry) => Ok(None),
            Err(e) => Err(self.explain(account, e)),
        }
    }

    pub fn set(&self, account: &str, secret: &str) -> Result<(), KeychainError> {
        self.entry(account)?.set_password(secret).map_err(|e| self.explain(account, e))
    }

    /// Removes the secret; removing one that is not there is not an error.
    pub fn delete(&self, account: &str) -> Result<(), KeychainError> {
        match self.entry(account)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(self.explain(account, e)),
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
