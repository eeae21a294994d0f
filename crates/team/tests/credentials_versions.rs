//! The credentials record in the keyring as builds of different ages read it: a newer Mneme's
//! fields survive a token refresh by this one (ARCHITECTURE.md, "Mneme's own files across
//! versions").

use mneme_core::SystemClock;
use mneme_team::auth::{CredentialStore, Credentials, Session};
use mneme_team::client::{Http, SyncError, TokenSource};
use mneme_testsupport::raw_http::{json, serve};
use serde_json::{json, Value};
use std::sync::{Arc, Mutex};

/// Holds each server's record as the JSON text the keyring holds, read and written the way
/// `KeyringStore` reads and writes it, without a Secret Service.
#[derive(Default)]
struct JsonStore(Mutex<Option<String>>);

impl CredentialStore for JsonStore {
    fn load(&self, _: &str) -> Result<Option<Credentials>, SyncError> {
        Ok(self.0.lock().unwrap().as_deref().and_then(|j| serde_json::from_str(j).ok()))
    }
    fn save(&self, _: &str, c: &Credentials) -> Result<(), SyncError> {
        *self.0.lock().unwrap() = Some(serde_json::to_string(c).unwrap());
        Ok(())
    }
    fn remove(&self, _: &str) -> Result<(), SyncError> {
        *self.0.lock().unwrap() = None;
        Ok(())
    }
}

/// An older Mneme refreshing the token a newer one signed in with wrote back only the fields
/// it knew: the newer build's came back gone.
#[test]
fn a_newer_mneme_s_fields_survive_a_refresh_by_this_one() {
    let body = json!({"access_token": "new-access", "token_type": "Bearer", "expires_in": 3600, "refresh_token": "r1"}).to_string();
    let (url, seen) = serve(move |_| json("200 OK", &body));
    let store = Arc::new(JsonStore::default());
    let newer = json!({
        "accessToken": "old-access",
        "refreshToken": "r0",
        "expiresAtMs": 0,
        "user": "ada",
        "deviceName": "ada's laptop",
        "scopes": ["team_memory", "team_admin"],
    });
    *store.0.lock().unwrap() = Some(newer.to_string());

    let session = Session::new(&url, store.clone(), Http::default(), Arc::new(SystemClock));
    assert_eq!(session.access_token().unwrap().as_deref(), Some("new-access"), "the expired token was refreshed");
    assert_eq!(seen.lock().unwrap().len(), 1);

    let kept: Value = serde_json::from_str(store.0.lock().unwrap().as_deref().unwrap()).unwrap();
    assert_eq!(kept["accessToken"], "new-access");
    assert_eq!(kept["refreshToken"], "r1");
    assert_eq!(kept["user"], "ada");
    assert_eq!(kept["deviceName"], "ada's laptop", "{kept}");
    assert_eq!(kept["scopes"], json!(["team_memory", "team_admin"]), "{kept}");
}
