//! Secrets: random tokens (stored only as SHA-256), argon2 password hashes, and issuing the
//! access/refresh pair every sign-in and refresh ends with.

use crate::store::{Store, StoreError, TokenKind, TokenRow};
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use argon2::Argon2;
use sha2::{Digest, Sha256};
use std::sync::OnceLock;
use std::time::Duration;

#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    #[error("The operating system's random source failed: {0}. The server cannot make secrets without it.")]
    Random(String),
    #[error("Could not hash the password: {0}.")]
    Hash(String),
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// `len` random bytes as lower-case hex.
pub fn random_hex(len: usize) -> Result<String, AuthError> {
    let mut bytes = vec![0u8; len];
    getrandom::fill(&mut bytes).map_err(|e| AuthError::Random(e.to_string()))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// What the database keeps instead of a token: a leaked table grants nothing.
pub fn token_hash(token: &str) -> String {
    format!("{:x}", Sha256::digest(token.as_bytes()))
}

pub fn hash_password(password: &str) -> Result<String, AuthError> {
    let mut salt = [0u8; 16];
    getrandom::fill(&mut salt).map_err(|e| AuthError::Random(e.to_string()))?;
    let salt = SaltString::encode_b64(&salt).map_err(|e| AuthError::Hash(e.to_string()))?;
    Ok(Argon2::default().hash_password(password.as_bytes(), &salt).map_err(|e| AuthError::Hash(e.to_string()))?.to_string())
}

/// Checks `password` against a stored hash; with no user (`None`) a fixed hash is checked
/// instead, so an unknown name takes as long to reject as a wrong password.
pub fn verify_password(stored: Option<&str>, password: &str) -> bool {
    static DUMMY: OnceLock<String> = OnceLock::new();
    let dummy = DUMMY.get_or_init(|| hash_password("mneme-no-such-user").unwrap_or_default());
    let hash = stored.unwrap_or(dummy);
    let ok = PasswordHash::new(hash)
        .map(|parsed| Argon2::default().verify_password(password.as_bytes(), &parsed).is_ok())
        .unwrap_or(false);
    ok && stored.is_some()
}

/// An issued pair (the refresh token is absent for tokens minted for scripts).
#[derive(Debug, Clone)]
pub struct Issued {
    /// The sign-in the tokens belong to.
    pub family: String,
    pub access_token: String,
    pub refresh_token: Option<String>,
    pub expires_in: u64,
}

/// The longest an access token minted by `admin token` may live: scripts get a bounded
/// credential, and a forgotten one stops working on its own.
pub const MAX_ADMIN_TOKEN_TTL: Duration = Duration::from_secs(30 * 24 * 3600);
/// The `client_id` recorded for tokens minted by `admin token`.
pub const ADMIN_CLIENT_ID: &str = "admin-token";

pub const ACCESS_PREFIX: &str = "mneme_at_";
pub const REFRESH_PREFIX: &str = "mneme_rt_";

/// Stores and returns new tokens for `user_id` in `family` (a new family when `None`); the
/// refresh token, if any, expires at `refresh_expires_ms`.
pub async fn issue(
    store: &dyn Store,
    user_id: i64,
    family: Option<String>,
    now_ms: i64,
    access_ttl: Duration,
    refresh_expires_ms: Option<i64>,
) -> Result<Issued, AuthError> {
    let family = match family {
        Some(f) => f,
        None => random_hex(16)?,
    };
    let access_token = format!("{ACCESS_PREFIX}{}", random_hex(32)?);
    store
        .insert_token(&TokenRow {
            hash: token_hash(&access_token),
            kind: TokenKind::Access,
            user_id,
            family: family.clone(),
            created_ms: now_ms,
            expires_ms: now_ms.saturating_add(duration_ms(access_ttl)),
            revoked_ms: None,
        })
        .await?;
    let refresh_token = match refresh_expires_ms {
        Some(expires_ms) => {
            let token = format!("{REFRESH_PREFIX}{}", random_hex(32)?);
            store
                .insert_token(&TokenRow {
                    hash: token_hash(&token),
                    kind: TokenKind::Refresh,
                    user_id,
                    family: family.clone(),
                    created_ms: now_ms,
                    expires_ms,
                    revoked_ms: None,
                })
                .await?;
            Some(token)
        }
        None => None,
    };
    Ok(Issued { family, access_token, refresh_token, expires_in: access_ttl.as_secs() })
}

pub fn duration_ms(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

/// The user an access token belongs to, if it is live.
pub async fn authenticate(store: &dyn Store, token: &str, now_ms: i64) -> Result<Option<i64>, StoreError> {
    let Some(row) = store.token(&token_hash(token)).await? else { return Ok(None) };
    let live = row.kind == TokenKind::Access && row.revoked_ms.is_none() && row.expires_ms > now_ms;
    Ok(live.then_some(row.user_id))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_verify_only_against_their_own_hash() {
        let hash = hash_password("correct horse").unwrap();
        assert!(hash.starts_with("$argon2id$"));
        assert!(verify_password(Some(&hash), "correct horse"));
        assert!(!verify_password(Some(&hash), "correct horse!"));
        assert!(!verify_password(None, "mneme-no-such-user"));
        assert!(!verify_password(Some("not a hash"), "x"));
    }

    #[test]
    fn token_hash_is_hex_sha256() {
        assert_eq!(token_hash("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(random_hex(32).unwrap().len(), 64);
        assert_ne!(random_hex(16).unwrap(), random_hex(16).unwrap());
    }
}
