//! Device sign-in (RFC 8628) with rotating refresh tokens, end to end over HTTP, on SQLite and
//! (when configured) PostgreSQL.

mod common;

use common::{databases, Harness, PASSWORD, REPO};
use mneme_team::server_wire::{DeviceCodeResponse, OAuthError, TokenResponse, DEVICE_CODE_GRANT};
use mneme_team_server::admin::Role;
use reqwest::{Method, StatusCode};
use std::time::Duration;

async fn device_code(h: &Harness) -> DeviceCodeResponse {
    let res = h
        .http
        .post(h.url("/oauth/device/code"))
        .form(&[("client_id", "mneme"), ("scope", "team_memory")])
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["cache-control"], "no-store");
    res.json().await.unwrap()
}

/// Polls once: `Ok(tokens)` or `Err(the OAuth error)`.
async fn poll(h: &Harness, device_code: &str) -> Result<TokenResponse, OAuthError> {
    let res = h
        .http
        .post(h.url("/oauth/token"))
        .form(&[("grant_type", DEVICE_CODE_GRANT), ("device_code", device_code), ("client_id", "mneme")])
        .send()
        .await
        .unwrap();
    token_result(res).await
}

async fn token_result(res: reqwest::Response) -> Result<TokenResponse, OAuthError> {
    if res.status() == StatusCode::OK {
        return Ok(res.json().await.unwrap());
    }
    assert_eq!(res.status(), StatusCode::BAD_REQUEST);
    let err: OAuthError = res.json().await.unwrap();
    assert!(err.error_description.is_some());
    Err(err)
}

async fn refresh(h: &Harness, token: &str) -> Result<TokenResponse, OAuthError> {
    let res = h
        .http
        .post(h.url("/oauth/token"))
        .form(&[("grant_type", "refresh_token"), ("refresh_token", token), ("client_id", "mneme")])
        .send()
        .await
        .unwrap();
    token_result(res).await
}

/// Submits the `/device` form as a browser would.
async fn submit(h: &Harness, user_code: &str, username: &str, password: &str, action: &str) -> (StatusCode, String) {
    let res = h
        .http
        .post(h.url("/device"))
        .form(&[("user_code", user_code), ("username", username), ("password", password), ("action", action)])
        .send()
        .await
        .unwrap();
    (res.status(), res.text().await.unwrap())
}

async fn me_status(h: &Harness, access_token: &str) -> StatusCode {
    h.request(Method::GET, &h.url("/api/mneme/me"), access_token).send().await.unwrap().status()
}

#[tokio::test]
async fn a_device_signs_in_polls_politely_and_refreshes_with_rotation() {
    for db in databases().await {
        let h = Harness::start(db, |_| {}).await;
        h.user("alice", REPO, Role::Member).await;

        let code = device_code(&h).await;
        assert_eq!(code.verification_uri, h.url("/device"));
        assert_eq!(code.verification_uri_complete, format!("{}?user_code={}", h.url("/device"), code.user_code));
        assert_eq!((code.expires_in, code.interval), (900, 5));
        assert!(code.user_code.len() == 9 && code.user_code.as_bytes()[4] == b'-', "{}", code.user_code);

        // The first poll waits; a second one within the interval is told to slow down, and
        // the interval grows by 5 seconds.
        assert_eq!(poll(&h, &code.device_code).await.unwrap_err().error, "authorization_pending");
        assert_eq!(poll(&h, &code.device_code).await.unwrap_err().error, "slow_down");
        h.clock.advance(Duration::from_secs(5));
        assert_eq!(poll(&h, &code.device_code).await.unwrap_err().error, "slow_down");
        h.clock.advance(Duration::from_secs(15));
        assert_eq!(poll(&h, &code.device_code).await.unwrap_err().error, "authorization_pending");

        // The page shows the code it was linked with and refuses a wrong password.
        let page = h.http.get(&code.verification_uri_complete).send().await.unwrap();
        assert_eq!(page.headers()["x-frame-options"], "DENY");
        assert!(page.text().await.unwrap().contains(&format!("value=\"{}\"", code.user_code)));
        let (status, body) = submit(&h, &code.user_code, "alice", "wrong password", "approve").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        assert!(body.contains("Wrong user name or password."));
        let (status, _) = submit(&h, &code.user_code, "mallory", PASSWORD, "approve").await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
        h.clock.advance(Duration::from_secs(20));
        assert_eq!(poll(&h, &code.device_code).await.unwrap_err().error, "authorization_pending");

        // Approved with the code typed in lower case without the dash.
        let typed = code.user_code.replace('-', "").to_lowercase();
        let (status, body) = submit(&h, &typed, "alice", PASSWORD, "approve").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert!(body.contains("Signed in as <strong>alice</strong>"));
        h.clock.advance(Duration::from_secs(20));
        let tokens = poll(&h, &code.device_code).await.unwrap();
        assert_eq!(tokens.token_type, "Bearer");
        assert_eq!(tokens.expires_in, 3600);
        assert_eq!(tokens.scope.as_deref(), Some("team_memory"));
        let first_refresh = tokens.refresh_token.clone().unwrap();
        assert_eq!(me_status(&h, &tokens.access_token).await, StatusCode::OK);
        assert_eq!(h.get(&tokens.access_token, REPO).await.status(), StatusCode::NOT_FOUND);
        // A device code turns into tokens once.
        h.clock.advance(Duration::from_secs(20));
        assert_eq!(poll(&h, &code.device_code).await.unwrap_err().error, "invalid_grant");

        // Refreshing rotates: the new pair works, the spent refresh token does not.
        let rotated = refresh(&h, &first_refresh).await.unwrap();
        let second_refresh = rotated.refresh_token.clone().unwrap();
        assert_ne!(second_refresh, first_refresh);
        assert_eq!(me_status(&h, &rotated.access_token).await, StatusCode::OK);
        // Replaying the spent one means it leaked: every token of this sign-in is revoked.
        assert_eq!(refresh(&h, &first_refresh).await.unwrap_err().error, "invalid_grant");
        assert_eq!(me_status(&h, &rotated.access_token).await, StatusCode::UNAUTHORIZED);
        assert_eq!(me_status(&h, &tokens.access_token).await, StatusCode::UNAUTHORIZED);
        assert_eq!(refresh(&h, &second_refresh).await.unwrap_err().error, "invalid_grant");
        h.shutdown().await;
    }
}

#[tokio::test]
async fn access_tokens_expire_and_a_refresh_brings_a_new_one() {
    for db in databases().await {
        let h = Harness::start(db, |_| {}).await;
        h.user("alice", REPO, Role::Member).await;
        let code = device_code(&h).await;
        let (status, _) = submit(&h, &code.user_code, "alice", PASSWORD, "approve").await;
        assert_eq!(status, StatusCode::OK);
        let tokens = poll(&h, &code.device_code).await.unwrap();
        h.clock.advance(Duration::from_secs(3600));
        assert_eq!(me_status(&h, &tokens.access_token).await, StatusCode::UNAUTHORIZED);
        let fresh = refresh(&h, tokens.refresh_token.as_deref().unwrap()).await.unwrap();
        assert_eq!(me_status(&h, &fresh.access_token).await, StatusCode::OK);
        // Refresh tokens live 30 days from their issue.
        h.clock.advance(Duration::from_secs(30 * 24 * 3600));
        assert_eq!(refresh(&h, fresh.refresh_token.as_deref().unwrap()).await.unwrap_err().error, "invalid_grant");
        h.shutdown().await;
    }
}

#[tokio::test]
async fn a_user_disabled_while_their_tokens_live_gets_nothing_more() {
    use mneme_team_server::store::Store;
    for db in databases().await {
        let h = Harness::start(db, |_| {}).await;
        h.user("alice", REPO, Role::Member).await;
        let code = device_code(&h).await;
        submit(&h, &code.user_code, "alice", PASSWORD, "approve").await;
        let tokens = poll(&h, &code.device_code).await.unwrap();
        // The user is marked disabled, and a refresh races the revocation that follows.
        let store = mneme_team_server::store::SqlStore::connect(&h.db).await.unwrap();
        let alice = store.user_by_name("alice").await.unwrap().unwrap();
        store.set_disabled(alice.id, Some(1)).await.unwrap();
        assert_eq!(me_status(&h, &tokens.access_token).await, StatusCode::UNAUTHORIZED);
        assert_eq!(refresh(&h, tokens.refresh_token.as_deref().unwrap()).await.unwrap_err().error, "invalid_grant");
        h.shutdown().await;
    }
}

#[tokio::test]
async fn denied_and_expired_requests_end_with_their_errors() {
    for db in databases().await {
        let h = Harness::start(db, |_| {}).await;
        h.user("alice", REPO, Role::Member).await;

        let denied = device_code(&h).await;
        // Denying needs no password.
        let (status, body) = submit(&h, &denied.user_code, "", "", "deny").await;
        assert_eq!(status, StatusCode::OK);
        assert!(body.contains("Sign-in denied"));
        assert_eq!(poll(&h, &denied.device_code).await.unwrap_err().error, "access_denied");
        // A decided code cannot be approved afterwards.
        let (status, _) = submit(&h, &denied.user_code, "alice", PASSWORD, "approve").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);

        let lapsed = device_code(&h).await;
        h.clock.advance(Duration::from_secs(15 * 60));
        assert_eq!(poll(&h, &lapsed.device_code).await.unwrap_err().error, "expired_token");
        let (status, body) = submit(&h, &lapsed.user_code, "alice", PASSWORD, "approve").await;
        assert_eq!(status, StatusCode::BAD_REQUEST);
        assert!(body.contains("unknown, expired or already used"));

        assert_eq!(poll(&h, "not-a-device-code").await.unwrap_err().error, "invalid_grant");
        h.shutdown().await;
    }
}

#[tokio::test]
async fn malformed_token_requests_get_oauth_errors() {
    for db in databases().await {
        let h = Harness::start(db, |_| {}).await;
        let post = |form: Vec<(&'static str, &'static str)>| {
            let req = h.http.post(h.url("/oauth/token")).form(&form);
            async move { token_result(req.send().await.unwrap()).await.unwrap_err().error }
        };
        assert_eq!(post(vec![("grant_type", "password")]).await, "unsupported_grant_type");
        assert_eq!(post(vec![]).await, "invalid_request");
        assert_eq!(post(vec![("grant_type", DEVICE_CODE_GRANT)]).await, "invalid_request");
        assert_eq!(post(vec![("grant_type", "refresh_token")]).await, "invalid_request");
        let res = h.http.post(h.url("/oauth/device/code")).form(&[("scope", "x")]).send().await.unwrap();
        assert_eq!(res.status(), StatusCode::BAD_REQUEST);
        assert_eq!(res.json::<OAuthError>().await.unwrap().error, "invalid_request");
        h.shutdown().await;
    }
}

/// Tokens and device codes are kept only as SHA-256 hashes, passwords only as argon2id.
#[tokio::test]
async fn secrets_are_stored_hashed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("team.db");
    let h = Harness::start(
        common::TestDb { label: "sqlite", url: mneme_team_server::DatabaseUrl::Sqlite(path.clone()), dir: None },
        |_| {},
    )
    .await;
    let minted = h.user("alice", REPO, Role::Member).await;
    let code = device_code(&h).await;
    submit(&h, &code.user_code, "alice", PASSWORD, "approve").await;
    let tokens = poll(&h, &code.device_code).await.unwrap();
    h.shutdown().await;

    use sqlx::{Connection, Row};
    let mut conn = sqlx::SqliteConnection::connect(&format!("sqlite://{}", path.display())).await.unwrap();
    let hashes: Vec<String> = sqlx::query("SELECT hash FROM tokens").fetch_all(&mut conn).await.unwrap().iter().map(|r| r.get(0)).collect();
    let expected: Vec<String> = [&minted, &tokens.access_token, tokens.refresh_token.as_ref().unwrap()]
        .iter()
        .map(|t| mneme_team_server::auth::token_hash(t))
        .collect();
    for e in &expected {
        assert!(hashes.contains(e), "{e} not among {hashes:?}");
    }
    let device: String = sqlx::query("SELECT code_hash FROM device_codes").fetch_one(&mut conn).await.unwrap().get(0);
    assert_eq!(device, mneme_team_server::auth::token_hash(&code.device_code));
    let password: String = sqlx::query("SELECT password_hash FROM users").fetch_one(&mut conn).await.unwrap().get(0);
    assert!(password.starts_with("$argon2id$"));
    // No secret appears anywhere in the database file.
    conn.close().await.unwrap();
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.extend(std::fs::read(dir.path().join("team.db-wal")).unwrap_or_default());
    let haystack = String::from_utf8_lossy(&bytes);
    for secret in [&minted, &tokens.access_token, tokens.refresh_token.as_ref().unwrap(), &code.device_code, &PASSWORD.to_string()] {
        assert!(!haystack.contains(secret.as_str()));
    }
}
