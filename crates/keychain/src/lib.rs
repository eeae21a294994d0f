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
            Err(e) => Err(classify(e)),
        }
    }

    pub fn set(&self, account: &str, secret: &str) -> Result<(), KeychainError> {
        self.entry(account)?.set_password(secret).map_err(classify)
    }

    /// Removes the secret; removing one that is not there is not an error.
    pub fn delete(&self, account: &str) -> Result<(), KeychainError> {
        match self.entry(account)?.delete_credential() {
            Ok(()) | Err(keyring::Error::NoEntry) => Ok(()),
            Err(e) => Err(classify(e)),
        }
    }

    fn entry(&self, account: &str) -> Result<keyring::Entry, KeychainError> {
        keyring::Entry::new(&self.service, account).map_err(classify)
    }
}

fn classify(e: keyring::Error) -> KeychainError {
    match e {
        keyring::Error::PlatformFailure(inner) | keyring::Error::NoStorageAccess(inner) => {
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
}
