//! Sign-in: the OAuth 2.0 device authorization grant (RFC 8628) with rotating refresh tokens.
//!
//! 1. The app posts `client_id` and `scope` to `/oauth/device/code` and shows the person the
//!    user code and `/device`.
//! 2. The person opens `/device`, enters the code, their name and password, and approves
//!    (or denies).
//! 3. Meanwhile the app polls `/oauth/token` no faster than `interval`, getting
//!    `authorization_pending` (or `slow_down`, which adds 5 seconds to the interval) until the
//!    decision, then an access token (1 hour) and a refresh token, or `access_denied`, or
//!    `expired_token` once the code has lapsed.
//! 4. A refresh token is spent on use and replaced; presenting a spent one again means it was
//!    copied, so every token from that sign-in is revoked.
//!
//! Device codes and tokens are stored as SHA-256 hashes only; user codes are short-lived,
//! drawn from RFC 8628 §6.1's 20 consonants, and useless without the person's password.

use crate::auth::{self, token_hash};
use crate::http::AppState;
use crate::limits::{client_key, network_key};
use crate::store::{DeviceRow, DeviceStatus, RefreshUse, SignInRow, StoreError};
use axum::extract::rejection::FormRejection;
use axum::extract::{ConnectInfo, DefaultBodyLimit, Query, State};
use axum::http::{header, HeaderValue, StatusCode};
use axum::response::{Html, IntoResponse, Response};
use axum::routing::post;
use axum::{Form, Json, Router};
use mneme_team_proto::server_wire::{
    DeviceCodeResponse, OAuthError, TokenResponse, DEVICE_CODE_GRANT, DEVICE_CODE_PATH, DEVICE_PAGE_PATH,
    REFRESH_TOKEN_GRANT, TOKEN_PATH,
};
use serde::Deserialize;
use std::net::SocketAddr;
use std::sync::Arc;

pub(crate) fn routes() -> Router<Arc<AppState>> {
    Router::new()
        .route(DEVICE_CODE_PATH, post(device_code))
        .route(TOKEN_PATH, post(token))
        .route(DEVICE_PAGE_PATH, axum::routing::get(device_page).post(device_submit))
        // Every sign-in form is a few short fields.
        .layer(DefaultBodyLimit::max(MAX_FORM_BYTES))
}

const MAX_FORM_BYTES: usize = 8 * 1024;
/// Field limits: generous for anything real, small enough that no request stores or hashes much.
const MAX_CLIENT_ID_BYTES: usize = 64;
const MAX_SCOPE_BYTES: usize = 256;
const MAX_TYPED_CODE_BYTES: usize = 32;
const MAX_USERNAME_BYTES: usize = 256;
const MAX_PASSWORD_BYTES: usize = 1024;
/// The scope a device sign-in may ask for (or none).
const KNOWN_SCOPE: &str = "team_memory";

/// RFC 8628 §6.1: no vowels (no words), no easily confused characters.
const USER_CODE_ALPHABET: &[u8; 20] = b"BCDFGHJKLMNPQRSTVWXZ";
const USER_CODE_LEN: usize = 8;
/// RFC 8628 §3.5: each `slow_down` adds this to the interval.
const SLOW_DOWN_STEP_S: i64 = 5;

struct OAuthFailure {
    status: StatusCode,
    body: OAuthError,
    retry_after: Option<u64>,
}

impl OAuthFailure {
    fn new(error: &str, description: impl Into<String>) -> OAuthFailure {
        OAuthFailure {
            status: StatusCode::BAD_REQUEST,
            body: OAuthError { error: error.to_string(), error_description: Some(description.into()) },
            retry_after: None,
        }
    }
}

impl OAuthFailure {
    /// 429 with `Retry-After`: a sign-in limit was reached.
    fn too_many(retry_after: u64, description: impl Into<String>) -> OAuthFailure {
        OAuthFailure {
            status: StatusCode::TOO_MANY_REQUESTS,
            body: OAuthError { error: "slow_down".into(), error_description: Some(description.into()) },
            retry_after: Some(retry_after),
        }
    }
}

impl From<StoreError> for OAuthFailure {
    fn from(e: StoreError) -> OAuthFailure {
        tracing::error!(error = %e, "storage failure during sign-in");
        OAuthFailure {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            body: OAuthError {
                error: "server_error".into(),
                error_description: Some("The server's database failed; try again later.".into()),
            },
            retry_after: None,
        }
    }
}

impl From<auth::AuthError> for OAuthFailure {
    fn from(e: auth::AuthError) -> OAuthFailure {
        match e {
            auth::AuthError::Store(s) => s.into(),
            other => {
                tracing::error!(error = %other, "could not make a secret");
                OAuthFailure {
                    status: StatusCode::INTERNAL_SERVER_ERROR,
                    body: OAuthError { error: "server_error".into(), error_description: Some(other.to_string()) },
                    retry_after: None,
                }
            }
        }
    }
}

/// Token endpoint answers must not be cached (RFC 6749 §5.1).
fn no_store(mut res: Response) -> Response {
    res.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    res.headers_mut().insert(header::PRAGMA, HeaderValue::from_static("no-cache"));
    res
}

impl IntoResponse for OAuthFailure {
    fn into_response(self) -> Response {
        let mut res = no_store((self.status, Json(self.body)).into_response());
        if let Some(secs) = self.retry_after {
            res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        res
    }
}

#[derive(Deserialize)]
struct DeviceCodeForm {
    client_id: Option<String>,
    scope: Option<String>,
}

fn random_user_code() -> Result<String, auth::AuthError> {
    let mut code = String::with_capacity(USER_CODE_LEN);
    while code.len() < USER_CODE_LEN {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes).map_err(|e| auth::AuthError::Random(e.to_string()))?;
        // 240 is the largest multiple of 20 below 256: rejecting the rest keeps letters uniform.
        for b in bytes.into_iter().filter(|b| *b < 240) {
            if code.len() < USER_CODE_LEN {
                code.push(USER_CODE_ALPHABET[usize::from(b % 20)] as char);
            }
        }
    }
    Ok(code)
}

/// `WDJBMJHT` → `WDJB-MJHT`, the form people read and type.
fn display_user_code(code: &str) -> String {
    let (a, b) = code.split_at(code.len() / 2);
    format!("{a}-{b}")
}

/// What a person typed → the stored form: upper case, separators and spaces dropped.
fn normalize_user_code(typed: &str) -> String {
    typed.chars().filter(|c| c.is_ascii_alphanumeric()).map(|c| c.to_ascii_uppercase()).collect()
}

async fn device_code(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    form: Result<Form<DeviceCodeForm>, FormRejection>,
) -> Result<Response, OAuthFailure> {
    let Form(form) = form.map_err(|e| OAuthFailure::new("invalid_request", e.body_text()))?;
    let client_id = form
        .client_id
        .filter(|c| !c.trim().is_empty())
        .ok_or_else(|| OAuthFailure::new("invalid_request", "client_id is required."))?;
    // Only known clients: nothing of unbounded size or unknown origin is stored.
    if client_id.len() > MAX_CLIENT_ID_BYTES || !app.config.client_ids.contains(&client_id) {
        return Err(OAuthFailure::new(
            "invalid_client",
            format!("Unknown client_id; this server accepts {}.", app.config.client_ids.join(", ")),
        ));
    }
    let scope = form.scope.unwrap_or_default();
    if scope.len() > MAX_SCOPE_BYTES || !scope.split_whitespace().all(|s| s == KNOWN_SCOPE) {
        return Err(OAuthFailure::new("invalid_scope", format!("The only scope is {KNOWN_SCOPE:?}.")));
    }
    let now = app.now_ms();
    let ip = client_key(peer.ip());
    if let Some(secs) = app.sign_in.codes_per_ip.blocked(&ip, now) {
        return Err(OAuthFailure::too_many(secs, format!("Too many sign-in requests from this address; try again in {secs} seconds.")));
    }
    let network = network_key(peer.ip());
    if let Some(secs) = app.sign_in.codes_per_network.blocked(&network, now) {
        return Err(OAuthFailure::too_many(secs, format!("Too many sign-in requests from this network; try again in {secs} seconds.")));
    }
    app.sign_in.codes_per_ip.record(&ip, now);
    app.sign_in.codes_per_network.record(&network, now);
    // Sign-in requests are short-lived; forget the lapsed ones (and expired tokens) here.
    app.store().purge_expired(now).await?;
    if app.store().live_devices(now).await? >= app.sign_in.limits.max_live_codes {
        tracing::warn!("too many sign-in requests are waiting; refusing new ones");
        return Err(OAuthFailure::too_many(60, "Too many sign-ins are waiting for approval; try again in a few minutes."));
    }
    let device_code = auth::random_hex(32)?;
    let ttl = app.config.device_code_ttl;
    let interval = app.config.device_poll_interval.as_secs().max(1);
    // A clash with a live user code is unlikely (20^8 codes); draw again when it happens.
    let mut attempts = 0;
    let user_code = loop {
        let user_code = random_user_code()?;
        let row = DeviceRow {
            code_hash: token_hash(&device_code),
            user_code: user_code.clone(),
            client_id: client_id.clone(),
            scope: scope.clone(),
            created_ms: now,
            expires_ms: now.saturating_add(auth::duration_ms(ttl)),
            interval_s: i64::try_from(interval).unwrap_or(5),
            last_poll_ms: None,
            status: DeviceStatus::Pending,
            user_id: None,
        };
        match app.store().insert_device(&row).await {
            Ok(()) => break user_code,
            Err(StoreError::AlreadyExists(_)) if attempts < 8 => attempts += 1,
            Err(e) => return Err(e.into()),
        }
    };
    let shown = display_user_code(&user_code);
    let verification_uri = format!("{}{DEVICE_PAGE_PATH}", app.base_url);
    let body = DeviceCodeResponse {
        device_code,
        verification_uri_complete: format!("{verification_uri}?user_code={shown}"),
        verification_uri,
        user_code: shown,
        expires_in: ttl.as_secs(),
        interval,
    };
    Ok(no_store(Json(body).into_response()))
}

#[derive(Deserialize)]
struct TokenForm {
    grant_type: Option<String>,
    device_code: Option<String>,
    client_id: Option<String>,
    refresh_token: Option<String>,
}

async fn token(
    State(app): State<Arc<AppState>>,
    form: Result<Form<TokenForm>, FormRejection>,
) -> Result<Response, OAuthFailure> {
    let Form(form) = form.map_err(|e| OAuthFailure::new("invalid_request", e.body_text()))?;
    match form.grant_type.as_deref() {
        Some(DEVICE_CODE_GRANT) => device_grant(&app, form).await,
        Some(REFRESH_TOKEN_GRANT) => refresh_grant(&app, form).await,
        Some(other) => Err(OAuthFailure::new("unsupported_grant_type", format!("grant_type {other:?} is not supported."))),
        None => Err(OAuthFailure::new("invalid_request", "grant_type is required.")),
    }
}

fn token_response(issued: auth::Issued, scope: Option<String>) -> Response {
    no_store(
        Json(TokenResponse {
            access_token: issued.access_token,
            token_type: "Bearer".into(),
            expires_in: issued.expires_in,
            refresh_token: issued.refresh_token,
            scope: scope.filter(|s| !s.is_empty()),
        })
        .into_response(),
    )
}

async fn device_grant(app: &AppState, form: TokenForm) -> Result<Response, OAuthFailure> {
    let code = form.device_code.ok_or_else(|| OAuthFailure::new("invalid_request", "device_code is required."))?;
    let hash = token_hash(&code);
    let unknown = || OAuthFailure::new("invalid_grant", "Unknown or already used device code. Start the sign-in again.");
    let Some(row) = app.store().device_by_code_hash(&hash).await? else { return Err(unknown()) };
    if form.client_id.as_deref().is_some_and(|c| c != row.client_id) || row.status == DeviceStatus::Used {
        return Err(unknown());
    }
    let now = app.now_ms();
    if now >= row.expires_ms {
        return Err(OAuthFailure::new("expired_token", "The sign-in request expired. Start it again."));
    }
    if let Some(last) = row.last_poll_ms {
        if now - last < row.interval_s * 1000 {
            let interval = row.interval_s + SLOW_DOWN_STEP_S;
            app.store().record_poll(&hash, now, interval).await?;
            return Err(OAuthFailure::new(
                "slow_down",
                format!("Polling too fast; wait at least {interval} seconds between requests."),
            ));
        }
    }
    app.store().record_poll(&hash, now, row.interval_s).await?;
    match row.status {
        DeviceStatus::Pending => {
            Err(OAuthFailure::new("authorization_pending", "Waiting for the person to approve the sign-in."))
        }
        DeviceStatus::Denied => Err(OAuthFailure::new("access_denied", "The sign-in was denied.")),
        DeviceStatus::Used => Err(unknown()),
        DeviceStatus::Approved => {
            let user_id = row.user_id.ok_or_else(unknown)?;
            // Only one poll may turn an approval into tokens.
            if !app.store().take_device(&hash).await? {
                return Err(unknown());
            }
            // Disabled between the approval and this poll.
            if app.store().user_by_id(user_id).await?.is_none_or(|u| u.disabled_ms.is_some()) {
                return Err(OAuthFailure::new("access_denied", "This account is disabled. Ask a team admin."));
            }
            let refresh_expires = refresh_expiry(app, now, now);
            let issued =
                auth::issue(app.store(), user_id, None, now, app.config.access_token_ttl, Some(refresh_expires)).await?;
            app.store()
                .insert_sign_in(&SignInRow {
                    family: issued.family.clone(),
                    user_id,
                    user: String::new(),
                    client_id: row.client_id.clone(),
                    created_ms: now,
                    last_used_ms: now,
                    expires_ms: refresh_expires,
                    revoked_ms: None,
                })
                .await?;
            tracing::info!(user_id, client_id = %row.client_id, "device sign-in completed");
            Ok(token_response(issued, Some(row.scope)))
        }
    }
}

/// When a refresh token issued at `now` for a sign-in made at `signed_in_ms` expires: after
/// the usual refresh lifetime, but never past the sign-in's own lifetime.
fn refresh_expiry(app: &AppState, signed_in_ms: i64, now: i64) -> i64 {
    let rolling = now.saturating_add(auth::duration_ms(app.config.refresh_token_ttl));
    let absolute = signed_in_ms.saturating_add(auth::duration_ms(app.config.sign_in_lifetime));
    rolling.min(absolute)
}

async fn refresh_grant(app: &AppState, form: TokenForm) -> Result<Response, OAuthFailure> {
    let token = form.refresh_token.ok_or_else(|| OAuthFailure::new("invalid_request", "refresh_token is required."))?;
    let now = app.now_ms();
    match app.store().use_refresh(&token_hash(&token), now).await? {
        RefreshUse::Spent { user_id, family } => {
            let sign_in = match app.store().sign_in(&family).await? {
                Some(s) => s,
                // Tokens issued before sign-ins were recorded: their sign-in starts now.
                None => {
                    let row = SignInRow {
                        family: family.clone(),
                        user_id,
                        user: String::new(),
                        client_id: "unrecorded".into(),
                        created_ms: now,
                        last_used_ms: now,
                        expires_ms: now,
                        revoked_ms: None,
                    };
                    app.store().insert_sign_in(&row).await?;
                    row
                }
            };
            if sign_in.revoked_ms.is_some() {
                return Err(OAuthFailure::new("invalid_grant", "This sign-in was revoked. Sign in again."));
            }
            // Disabling a user revokes their tokens; a refresh racing that must not mint new ones.
            if app.store().user_by_id(user_id).await?.is_none_or(|u| u.disabled_ms.is_some()) {
                app.store().revoke_family(&family, now).await?;
                return Err(OAuthFailure::new("invalid_grant", "This account is disabled. Ask the server's admin."));
            }
            let refresh_expires = refresh_expiry(app, sign_in.created_ms, now);
            if refresh_expires <= now {
                return Err(OAuthFailure::new(
                    "invalid_grant",
                    "This sign-in has reached its maximum lifetime. Sign in again.",
                ));
            }
            let issued =
                auth::issue(app.store(), user_id, Some(family.clone()), now, app.config.access_token_ttl, Some(refresh_expires))
                    .await?;
            app.store().touch_sign_in(&family, now, refresh_expires).await?;
            Ok(token_response(issued, None))
        }
        RefreshUse::Replayed { family } => {
            app.store().revoke_family(&family, now).await?;
            tracing::warn!("a spent refresh token was presented again; its sign-in is revoked");
            Err(OAuthFailure::new(
                "invalid_grant",
                "This refresh token was already used, so every token from its sign-in is now revoked. Sign in again.",
            ))
        }
        RefreshUse::Invalid => {
            Err(OAuthFailure::new("invalid_grant", "Unknown, expired or revoked refresh token. Sign in again."))
        }
    }
}

#[derive(Deserialize)]
struct DevicePageQuery {
    user_code: Option<String>,
}

#[derive(Deserialize)]
struct DeviceSubmit {
    user_code: Option<String>,
    username: Option<String>,
    password: Option<String>,
    action: Option<String>,
}

fn escape_html(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

/// The page shell; the page must not be framed (clickjacking) nor load anything.
fn page(status: StatusCode, title: &str, body: &str) -> Response {
    let html = format!(
        "<!doctype html><html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>{title} · Mneme team memory</title><style>\
         body{{font-family:system-ui,sans-serif;max-width:26rem;margin:3rem auto;padding:0 1rem;color:#1d1d1f}}\
         label{{display:block;margin:.8rem 0 .2rem}}input{{width:100%;padding:.5rem;font-size:1rem;box-sizing:border-box}}\
         .code{{font-family:monospace;letter-spacing:.15em;text-transform:uppercase}}\
         .row{{display:flex;gap:.5rem;margin-top:1.2rem}}button{{flex:1;padding:.6rem;font-size:1rem}}\
         .error{{color:#b3261e}}</style></head><body><h1>{title}</h1>{body}</body></html>",
        title = escape_html(title)
    );
    let mut res = (status, Html(html)).into_response();
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static("default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'"),
    );
    h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    h.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    res
}

fn sign_in_form(user_code: &str, username: &str, error: Option<&str>) -> String {
    let error = error.map(|e| format!("<p class=\"error\">{}</p>", escape_html(e))).unwrap_or_default();
    format!(
        "<p>Enter the code your device shows, then sign in to let it use team memory.</p>{error}\
         <form method=\"post\" action=\"{DEVICE_PAGE_PATH}\">\
         <label for=\"user_code\">Code</label>\
         <input id=\"user_code\" name=\"user_code\" class=\"code\" required autocomplete=\"off\" value=\"{code}\">\
         <label for=\"username\">User name</label>\
         <input id=\"username\" name=\"username\" autocomplete=\"username\" value=\"{user}\">\
         <label for=\"password\">Password</label>\
         <input id=\"password\" name=\"password\" type=\"password\" autocomplete=\"current-password\">\
         <div class=\"row\"><button name=\"action\" value=\"approve\" type=\"submit\">Approve</button>\
         <button name=\"action\" value=\"deny\" type=\"submit\" formnovalidate>Deny</button></div></form>",
        code = escape_html(user_code),
        user = escape_html(username),
    )
}

async fn device_page(Query(q): Query<DevicePageQuery>) -> Response {
    page(StatusCode::OK, "Sign in a device", &sign_in_form(q.user_code.as_deref().unwrap_or(""), "", None))
}

/// `s` cut to at most `max` bytes (on a character boundary), for echoing into the form.
fn clip(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}

async fn device_submit(
    State(app): State<Arc<AppState>>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    form: Result<Form<DeviceSubmit>, FormRejection>,
) -> Response {
    let Ok(Form(form)) = form else {
        return page(StatusCode::BAD_REQUEST, "Sign in a device", &sign_in_form("", "", Some("The form was not sent correctly; try again.")));
    };
    let typed = form.user_code.unwrap_or_default();
    let username = form.username.unwrap_or_default();
    let password = form.password.unwrap_or_default();
    let retry = |status, message: &str| {
        page(
            status,
            "Sign in a device",
            &sign_in_form(clip(&typed, MAX_TYPED_CODE_BYTES), clip(&username, MAX_USERNAME_BYTES), Some(message)),
        )
    };
    if typed.len() > MAX_TYPED_CODE_BYTES || username.len() > MAX_USERNAME_BYTES || password.len() > MAX_PASSWORD_BYTES {
        return retry(StatusCode::BAD_REQUEST, "A field is too long. Check the code, user name and password.");
    }
    // No user name holds a NUL (`admin create-user` refuses control characters), and
    // PostgreSQL cannot even look one up: its text has no U+0000.
    if crate::http::has_nul(&username) {
        return retry(StatusCode::BAD_REQUEST, "The user name holds a NUL character. Check the user name.");
    }
    let code = normalize_user_code(&typed);
    let now = app.now_ms();
    let ip = client_key(peer.ip());
    let limited = |secs: u64, message: String| {
        let mut res = retry(StatusCode::TOO_MANY_REQUESTS, &message);
        res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        res
    };
    if let Some(secs) = app.sign_in.failures_per_ip.blocked(&ip, now) {
        return limited(secs, format!("Too many wrong passwords from this address. Try again in {secs} seconds."));
    }
    let row = match app.store().device_by_user_code(&code).await {
        Ok(row) => row,
        Err(e) => {
            tracing::error!(error = %e, "storage failure on the device page");
            return retry(StatusCode::INTERNAL_SERVER_ERROR, "The server's database failed; try again later.");
        }
    };
    let Some(row) = row.filter(|r| r.status == DeviceStatus::Pending && r.expires_ms > now) else {
        // A wrong code counts like a wrong password: codes are what an attacker would guess.
        app.sign_in.failures_per_ip.record(&ip, now);
        return retry(
            StatusCode::BAD_REQUEST,
            "This code is unknown, expired or already used. Start the sign-in again on your device.",
        );
    };
    // Denying needs no password: anyone shown a code they did not ask for should be able to stop it.
    if form.action.as_deref() == Some("deny") {
        return match app.store().decide_device(&row.user_code, None, now).await {
            Ok(_) => page(StatusCode::OK, "Sign-in denied", "<p>The device was not signed in. You can close this page.</p>"),
            Err(e) => {
                tracing::error!(error = %e, "storage failure on the device page");
                retry(StatusCode::INTERNAL_SERVER_ERROR, "The server's database failed; try again later.")
            }
        };
    }
    // Counted by the name typed, whether or not such a user exists, so the limit reveals nothing.
    // Per address first: one attacker's guesses lock that attacker out, not the user.
    let user_address = (username.clone(), ip);
    if let Some(secs) = app.sign_in.failures_per_user_address.blocked(&user_address, now) {
        return limited(secs, format!("Too many wrong passwords for this user from this address. Try again in {secs} seconds."));
    }
    let network = network_key(peer.ip());
    let trusted = app.sign_in.trusted.contains(&username, network, now);
    if let Some(secs) = app.sign_in.failures_per_user.blocked(&username, now).filter(|_| !trusted) {
        return limited(
            secs,
            format!("Too many wrong passwords for this user from several addresses. Try again in {secs} seconds, or ask a team admin."),
        );
    }
    let user = match app.store().user_by_name(&username).await {
        Ok(user) => user,
        Err(e) => {
            tracing::error!(error = %e, "storage failure on the device page");
            return retry(StatusCode::INTERNAL_SERVER_ERROR, "The server's database failed; try again later.");
        }
    };
    // argon2 is deliberately slow and takes ~19 MiB: only a few run at once, the rest wait
    // their turn for a while and are then turned away.
    let permit = match tokio::time::timeout(app.sign_in.limits.hash_wait, app.sign_in.hashing.acquire()).await {
        Ok(Ok(permit)) => permit,
        _ => {
            tracing::warn!("password checks are saturated; a sign-in was turned away");
            let mut res = retry(StatusCode::SERVICE_UNAVAILABLE, "The server is busy checking other sign-ins. Try again in a moment.");
            res.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(5));
            return res;
        }
    };
    let stored = user.as_ref().map(|u| u.password_hash.clone());
    let verified = tokio::task::spawn_blocking(move || auth::verify_password(stored.as_deref(), &password))
        .await
        .unwrap_or(false);
    drop(permit);
    let Some(user) = user.filter(|_| verified) else {
        tracing::warn!("device sign-in with a wrong user name or password");
        app.sign_in.failures_per_ip.record(&ip, now);
        app.sign_in.failures_per_user_address.record(&user_address, now);
        app.sign_in.failures_per_user.record(&username, now);
        app.sign_in.failures_per_code.record(&row.user_code, now);
        if app.sign_in.failures_per_code.blocked(&row.user_code, now).is_some() {
            // Enough guesses against this code: it is spent, and the device is told so.
            if let Err(e) = app.store().decide_device(&row.user_code, None, now).await {
                tracing::error!(error = %e, "storage failure on the device page");
            }
            app.sign_in.failures_per_code.clear(&row.user_code);
            return retry(
                StatusCode::UNAUTHORIZED,
                "Wrong user name or password too many times for this code, so it no longer works. Start the sign-in again on your device.",
            );
        }
        return retry(StatusCode::UNAUTHORIZED, "Wrong user name or password.");
    };
    if user.disabled_ms.is_some() {
        return retry(StatusCode::FORBIDDEN, "This account is disabled. Ask a team admin.");
    }
    app.sign_in.failures_per_user_address.clear(&user_address);
    app.sign_in.trusted.record(&username, network, now);
    match app.store().decide_device(&row.user_code, Some(user.id), now).await {
        Ok(true) => {
            tracing::info!(user = %user.name, "device sign-in approved");
            page(
                StatusCode::OK,
                "Device signed in",
                &format!(
                    "<p>Signed in as <strong>{}</strong>. Return to your device; you can close this page.</p>",
                    escape_html(&user.name)
                ),
            )
        }
        Ok(false) => retry(
            StatusCode::BAD_REQUEST,
            "This code is unknown, expired or already used. Start the sign-in again on your device.",
        ),
        Err(e) => {
            tracing::error!(error = %e, "storage failure on the device page");
            retry(StatusCode::INTERNAL_SERVER_ERROR, "The server's database failed; try again later.")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_codes_use_the_rfc_alphabet_and_read_back() {
        let code = random_user_code().unwrap();
        assert_eq!(code.len(), USER_CODE_LEN);
        assert!(code.bytes().all(|b| USER_CODE_ALPHABET.contains(&b)));
        let shown = display_user_code(&code);
        assert_eq!(shown.len(), USER_CODE_LEN + 1);
        assert_eq!(normalize_user_code(&shown.to_lowercase()), code);
        assert_eq!(normalize_user_code(" wdjb mjht "), "WDJBMJHT");
    }

    #[test]
    fn escapes_html() {
        assert_eq!(escape_html("<a href=\"x\">&'</a>"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;&lt;/a&gt;");
    }
}
