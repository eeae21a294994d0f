//! Signing in to a team server with the OAuth 2.0 device authorization grant (RFC 8628):
//! ask for a code, show the person the user code and the page to enter it on, poll the token
//! endpoint no faster than `interval` (and five seconds slower after each `slow_down`), but at
//! least once a minute and for at most an hour, until they approve or deny or the code lapses.
//! Access tokens are refreshed a minute before they expire by the local clock, and once more
//! when the server refuses one the clock calls current (a clock stepped back); refresh tokens
//! rotate, so each refresh stores the new one.
//!
//! Credentials live only in the OS keyring ([`mneme_keychain`]), under the account
//! `team-token:<server URL>`, as a small JSON record. Signing out forgets them there; the
//! server keeps no session to end (its tokens expire on their own).

use crate::client::{Http, Sleeper, SyncError, TokenSource};
use crate::server_wire::{
    DeviceCodeResponse, MeResponse, OAuthError, TokenResponse, DEVICE_CODE_GRANT, DEVICE_CODE_PATH, ME_PATH,
    REFRESH_TOKEN_GRANT, TOKEN_PATH,
};
use mneme_core::own_files::Unknown;
use mneme_core::Clock;
use mneme_keychain::Keychain;
use mneme_store::file_lock::FileLock;
use mneme_store::Environment;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The `client_id` Mneme signs in as (the server's default allowed client).
pub use crate::server_wire::CLIENT_ID;
/// The scope it asks for.
pub const SCOPE: &str = "team_memory";
/// Tokens this close to expiry are refreshed before use.
pub const REFRESH_MARGIN_MS: u64 = 60_000;
/// RFC 8628 §3.5: each `slow_down` adds five seconds to the polling interval.
pub const SLOW_DOWN_STEP: Duration = Duration::from_secs(5);
/// The longest wait between two polls, whatever the server asks (its `interval`, grown by
/// `slow_down`). The interval is the server's to set, but a hostile or broken one sending
/// `u64::MAX` would have the CLI sleep for ever and the Team screen never poll again; real
/// servers ask for 5 seconds, and a person who approved should not wait over a minute.
pub const MAX_POLL_INTERVAL: Duration = Duration::from_secs(60);
/// The longest a device code is waited on, whatever `expires_in` the server sends. Real
/// servers give 15 to 30 minutes; without a cap a server answering `authorization_pending`
/// for ever with an `expires_in` near `u64::MAX` would keep `mneme team login` polling for ever.
pub const MAX_CODE_LIFETIME: Duration = Duration::from_secs(60 * 60);
/// The variable tests set so they never touch a person's real keyring entries.
pub const KEYRING_SERVICE_VAR: &str = mneme_keychain::SERVICE_VAR;

/// What is kept in the keyring for one server.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    pub access_token: String,
    #[serde(default)]
    pub refresh_token: Option<String>,
    /// When the access token expires, in ms since the epoch.
    pub expires_at_ms: u64,
    /// Who signed in, as the server names them.
    #[serde(default)]
    pub user: Option<String>,
    /// Fields a newer Mneme keeps here that this one does not know: a refresh by this build
    /// writes them back, so the newer build finds its record whole when it runs again. A new
    /// sign-in starts without them (they described the sign-in it replaces).
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: Unknown,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("expires_at_ms", &self.expires_at_ms).field("user", &self.user).finish_non_exhaustive()
    }
}

/// Where credentials are kept. [`KeyringStore`] is the only store Mneme itself uses.
pub trait CredentialStore: Send + Sync {
    fn load(&self, server: &str) -> Result<Option<Credentials>, SyncError>;
    fn save(&self, server: &str, c: &Credentials) -> Result<(), SyncError>;
    fn remove(&self, server: &str) -> Result<(), SyncError>;
}

/// Who is signed in to a server, as far as the keyring can tell: what `mneme team status` and
/// the Team screen show, decided here once so both say the same.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SignInState {
    pub signed_in: bool,
    /// Who signed in, as the server names them.
    pub user: Option<String>,
    /// Why the keyring could not be read (saying what to do), when it could not. Whether a
    /// token is stored is then unknown (`signed_in` is false), and pulls and pushes fail until
    /// the keyring answers; everything kept on disk can still be shown.
    pub keyring_problem: Option<String>,
}

/// [`SignInState`] for `server` (`None`: no server configured, so nobody is signed in). A
/// keyring that cannot be reached or is locked is reported, not an error: a status must still
/// show what it can without the token.
pub fn sign_in_state(store: &dyn CredentialStore, server: Option<&str>) -> SignInState {
    let Some(server) = server else { return SignInState::default() };
    match store.load(server) {
        Ok(Some(c)) => SignInState { signed_in: true, user: c.user, keyring_problem: None },
        Ok(None) => SignInState::default(),
        Err(e) => SignInState { keyring_problem: Some(e.to_string()), ..SignInState::default() },
    }
}

/// Credentials held in this process only, by server: for tests, and for any caller that must
/// not touch the keyring. Nothing outlives the value.
#[derive(Debug, Default)]
pub struct MemoryStore(Mutex<std::collections::BTreeMap<String, Credentials>>);

impl MemoryStore {
    /// Whether nothing is saved for any server (what a refused sign-in must leave).
    pub fn is_empty(&self) -> bool {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).is_empty()
    }
}

impl CredentialStore for MemoryStore {
    fn load(&self, server: &str) -> Result<Option<Credentials>, SyncError> {
        Ok(self.0.lock().unwrap_or_else(|p| p.into_inner()).get(server).cloned())
    }
    fn save(&self, server: &str, c: &Credentials) -> Result<(), SyncError> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).insert(server.into(), c.clone());
        Ok(())
    }
    fn remove(&self, server: &str) -> Result<(), SyncError> {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).remove(server);
        Ok(())
    }
}

/// The OS keyring.
#[derive(Debug, Clone)]
pub struct KeyringStore {
    keychain: Keychain,
}

impl KeyringStore {
    pub fn new(keychain: Keychain) -> Self {
        KeyringStore { keychain }
    }

    /// The service `MNEME_KEYRING_SERVICE` names, else `mneme`.
    pub fn from_env(env: &Environment) -> Self {
        KeyringStore { keychain: Keychain::for_service_var(env.var(KEYRING_SERVICE_VAR)) }
    }

    /// The same store for background work: each keyring call gives up after `limit` instead
    /// of waiting for an unlock prompt nobody answers ([`Keychain::with_time_limit`]).
    pub fn with_time_limit(self, limit: Duration) -> Self {
        KeyringStore { keychain: self.keychain.with_time_limit(limit) }
    }

    pub fn keychain(&self) -> &Keychain {
        &self.keychain
    }
}

/// The keyring account for a server's credentials.
pub fn account(server: &str) -> String {
    format!("team-token:{server}")
}

impl CredentialStore for KeyringStore {
    fn load(&self, server: &str) -> Result<Option<Credentials>, SyncError> {
        match self.keychain.get(&account(server))? {
            // A record that does not parse is treated as signed out; signing in replaces it.
            Some(json) => Ok(serde_json::from_str(&json).ok()),
            None => Ok(None),
        }
    }

    fn save(&self, server: &str, c: &Credentials) -> Result<(), SyncError> {
        let json = serde_json::to_string(c).map_err(|e| SyncError::Parse { detail: e.to_string() })?;
        Ok(self.keychain.set(&account(server), &json)?)
    }

    fn remove(&self, server: &str) -> Result<(), SyncError> {
        Ok(self.keychain.delete(&account(server))?)
    }
}

/// A device sign-in in progress: what to show the person, and what to poll with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceLogin {
    pub server: String,
    /// Shown to the person, e.g. `WDJB-MJHT`.
    pub user_code: String,
    /// Where they enter it.
    pub verification_uri: String,
    /// The same page with the code filled in.
    pub verification_uri_complete: String,
    /// Seconds to wait between polls (grows with `slow_down`).
    pub interval_secs: u64,
    /// When the codes lapse, in ms since the epoch.
    pub expires_at_ms: u64,
    /// Secret: exchanged for the tokens. Kept by the caller between polls, never shown.
    pub device_code: String,
}

/// How one poll went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum LoginPoll {
    /// Not decided yet; poll again after `interval_secs`.
    Pending,
    /// Polled too fast; the interval grew by five seconds.
    SlowDown,
    /// Signed in; the credentials are in the keyring.
    SignedIn { user: Option<String> },
}

/// The poll interval Mneme keeps for a server's `interval` (grown by `slow_down`): at least a
/// second, at most [`MAX_POLL_INTERVAL`], and never longer than the code lives
/// (`lifetime_secs`), so the last poll comes before it lapses rather than a minute after.
fn poll_interval(server_secs: u64, lifetime_secs: u64) -> u64 {
    server_secs.min(MAX_POLL_INTERVAL.as_secs()).min(lifetime_secs).max(1)
}

/// Why signing in failed.
#[derive(Debug, thiserror::Error)]
pub enum LoginError {
    #[error("The sign-in was denied on the server's page. Run `mneme team login` to try again.")]
    Denied,
    #[error("The sign-in code expired before it was approved. Run `mneme team login` again and approve within the time shown.")]
    Expired,
    #[error("The team server refused the sign-in request ({error}{}). Check the server address.", .description.as_deref().map(|d| format!(": {d}")).unwrap_or_default())]
    Refused { error: String, description: Option<String> },
    #[error(transparent)]
    Sync(#[from] SyncError),
}

fn now_ms(clock: &dyn Clock) -> u64 {
    u64::try_from(clock.now_ms()).unwrap_or(u64::MAX)
}

/// An OAuth endpoint's refusal: its HTTP status (400 or 401) and its error.
struct Refusal {
    status: u16,
    error: OAuthError,
}

fn form_post(http: &Http, server: &str, path: &str, form: Vec<(&str, String)>) -> Result<Result<String, Refusal>, SyncError> {
    use crate::client::HttpFailure;
    let url = format!("{}{path}", server.trim_end_matches('/'));
    let mut req = crate::client::http_request("POST", &url);
    req.form = Some(form);
    req.max_body = crate::client::MAX_SIGN_IN_RESPONSE_BYTES;
    match http.send(req, &[200]) {
        Ok(reply) => Ok(Ok(reply.body)),
        Err(HttpFailure::Http { status: 400, body }) => match serde_json::from_str::<OAuthError>(&body) {
            Ok(error) => Ok(Err(Refusal { status: 400, error })),
            Err(e) => Err(SyncError::Parse { detail: e.to_string() }),
        },
        Err(HttpFailure::Auth { status: 401, body }) => match serde_json::from_str::<OAuthError>(&body) {
            Ok(error) => Ok(Err(Refusal { status: 401, error })),
            // A 401 without an OAuth error body (a proxy's page, say) still refuses the
            // sign-in: classified as one, it says to sign in again rather than that the
            // server's answer could not be read.
            Err(_) => Err(crate::client::classify_failure(server, HttpFailure::Auth { status: 401, body })),
        },
        Err(f) => Err(crate::client::classify_failure(server, f)),
    }
}

fn parse<T: serde::de::DeserializeOwned>(body: &str) -> Result<T, SyncError> {
    serde_json::from_str(body).map_err(|e| SyncError::Parse { detail: e.to_string() })
}

/// The sign-in page the server names is opened in the person's browser (and is a link in the
/// app), so it must be a web address: a `javascript:` or `file:` one from a hostile server
/// would run in the app's page or open a local file. Over https, the page must be https too.
fn check_sign_in_page(server: &str, page: &str) -> Result<(), LoginError> {
    let refused = |why: &str| LoginError::Refused {
        error: "invalid_verification_uri".into(),
        description: Some(format!("the sign-in page it names, {page:?}, {why}")),
    };
    let url = url::Url::parse(page).map_err(|_| refused("is not a web address"))?;
    let secure_server = server.trim_start().to_ascii_lowercase().starts_with("https:");
    match url.scheme() {
        "https" => Ok(()),
        "http" if !secure_server => Ok(()),
        "http" => Err(refused("is plain http while the server is https")),
        _ => Err(refused("is not an http(s) address")),
    }
}

/// Asks `server` for a device code.
pub fn start_login(http: &Http, server: &str, clock: &dyn Clock) -> Result<DeviceLogin, LoginError> {
    let form = vec![("client_id", CLIENT_ID.to_string()), ("scope", SCOPE.to_string())];
    let body = form_post(http, server, DEVICE_CODE_PATH, form)?
        .map_err(|r| LoginError::Refused { error: r.error.error, description: r.error.error_description })?;
    let d: DeviceCodeResponse = parse(&body)?;
    for page in [&d.verification_uri, &d.verification_uri_complete] {
        check_sign_in_page(server, page)?;
    }
    let lifetime_secs = d.expires_in.min(MAX_CODE_LIFETIME.as_secs());
    Ok(DeviceLogin {
        server: server.to_string(),
        user_code: d.user_code,
        verification_uri: d.verification_uri,
        verification_uri_complete: d.verification_uri_complete,
        interval_secs: poll_interval(d.interval, lifetime_secs),
        expires_at_ms: now_ms(clock).saturating_add(lifetime_secs.saturating_mul(1000)),
        device_code: d.device_code,
    })
}

fn credentials(t: TokenResponse, user: Option<String>, clock: &dyn Clock) -> Credentials {
    Credentials {
        access_token: t.access_token,
        refresh_token: t.refresh_token,
        expires_at_ms: now_ms(clock).saturating_add(t.expires_in.saturating_mul(1000)),
        user,
        extra: Unknown::new(),
    }
}

/// The longest token accepted from a server (a JWT with many claims is a few KB; Mneme's own
/// server's are 43 characters).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// Why a token the server sent is not kept, or `None` when it may be. Tokens go into the OS
/// keyring and into an `Authorization` header on every request, so one a hostile or broken
/// server makes huge (its answer may be up to 1 GiB) or gives a line break, NUL or other
/// control character would be stored for good and fail every later request with an error
/// about a header instead of about the sign-in. RFC 6750 tokens are visible ASCII.
fn unusable_token(what: &str, token: &str) -> Option<String> {
    if token.is_empty() {
        return Some(format!("the {what} it sent is empty"));
    }
    if token.len() > MAX_TOKEN_BYTES {
        return Some(format!("the {what} it sent is {} bytes long, over the {MAX_TOKEN_BYTES} a token may have", token.len()));
    }
    token.chars().find(|c| !c.is_ascii_graphic()).map(|c| format!("the {what} it sent holds U+{:04X}, which no token may hold", c as u32))
}

/// [`unusable_token`] for both tokens of an answer: why it is refused, or `None`.
fn unusable_tokens(t: &TokenResponse) -> Option<String> {
    let refresh = t.refresh_token.as_deref().and_then(|r| unusable_token("refresh token", r));
    unusable_token("access token", &t.access_token).or(refresh).map(|why| format!("{why}; nothing was saved"))
}

/// Polls once. On success the credentials (with the user's name from `/api/mneme/me`) are
/// saved in `store`.
pub fn poll_login(
    http: &Http,
    login: &mut DeviceLogin,
    store: &dyn CredentialStore,
    clock: &dyn Clock,
) -> Result<LoginPoll, LoginError> {
    if now_ms(clock) >= login.expires_at_ms {
        return Err(LoginError::Expired);
    }
    let form = vec![
        ("grant_type", DEVICE_CODE_GRANT.to_string()),
        ("device_code", login.device_code.clone()),
        ("client_id", CLIENT_ID.to_string()),
    ];
    match form_post(http, &login.server, TOKEN_PATH, form)? {
        Ok(body) => {
            let t: TokenResponse = parse(&body)?;
            if let Some(why) = unusable_tokens(&t) {
                return Err(LoginError::Refused { error: "invalid_token".into(), description: Some(why) });
            }
            let user = whoami(http, &login.server, &t.access_token).ok().map(|m| m.user);
            let c = credentials(t, user.clone(), clock);
            store.save(&login.server, &c)?;
            Ok(LoginPoll::SignedIn { user })
        }
        Err(Refusal { error: e, .. }) => match e.error.as_str() {
            "authorization_pending" => Ok(LoginPoll::Pending),
            "slow_down" => {
                // Saturating and capped: a `DeviceLogin` is the caller's to keep, so its
                // interval may already be anything, and each `slow_down` must not overflow it.
                let left_secs = login.expires_at_ms.saturating_sub(now_ms(clock)) / 1000;
                login.interval_secs = poll_interval(login.interval_secs.saturating_add(SLOW_DOWN_STEP.as_secs()), left_secs);
                Ok(LoginPoll::SlowDown)
            }
            "access_denied" => Err(LoginError::Denied),
            "expired_token" => Err(LoginError::Expired),
            _ => Err(LoginError::Refused { error: e.error, description: e.error_description }),
        },
    }
}

/// Signs in from start to finish: `show` is called once with the code to display, then this
/// polls (waiting through `sleeper`) until the person decides or the code lapses.
///
/// The code's lifetime is also counted in the time this waited, not only on the clock: a
/// clock stepped back while the person is away would otherwise push the lapse back with it,
/// and a server that keeps answering `authorization_pending` would be polled that much longer.
pub fn login(
    http: &Http,
    server: &str,
    store: &dyn CredentialStore,
    clock: &dyn Clock,
    sleeper: &dyn Sleeper,
    show: impl FnOnce(&DeviceLogin),
) -> Result<Option<String>, LoginError> {
    let mut l = start_login(http, server, clock)?;
    show(&l);
    let lifetime = Duration::from_millis(l.expires_at_ms.saturating_sub(now_ms(clock)));
    let mut waited = Duration::ZERO;
    loop {
        if waited >= lifetime {
            return Err(LoginError::Expired);
        }
        let wait = Duration::from_secs(l.interval_secs).min(lifetime - waited);
        sleeper.sleep(wait);
        waited += wait;
        match poll_login(http, &mut l, store, clock)? {
            LoginPoll::Pending | LoginPoll::SlowDown => continue,
            LoginPoll::SignedIn { user } => return Ok(user),
        }
    }
}

/// Forgets the server's credentials (signing out). Not signed in is not an error.
pub fn logout(store: &dyn CredentialStore, server: &str) -> Result<(), SyncError> {
    store.remove(server)
}

/// `GET /api/mneme/me`: who the token belongs to and which repositories they reach. A 401 is
/// final here: `token` is one the server just issued, with nothing to renew it from; the
/// session's token is asked about with [`SyncClient::me`](crate::client::SyncClient::me), which
/// refreshes it once when the server refuses it.
pub fn whoami(http: &Http, server: &str, token: &str) -> Result<MeResponse, SyncError> {
    let url = me_url(server);
    let mut req = crate::client::http_request("GET", &url);
    req.token = Some(token);
    req.max_body = crate::client::MAX_SIGN_IN_RESPONSE_BYTES;
    let reply = http.send(req, &[200]).map_err(|f| crate::client::classify_failure(server, f))?;
    parse(&reply.body)
}

/// Where [`whoami`] asks.
pub(crate) fn me_url(server: &str) -> String {
    format!("{}{ME_PATH}", server.trim_end_matches('/'))
}

/// The signed-in session for one server: hands out access tokens, refreshing them a minute
/// before they expire and storing the rotated refresh token.
pub struct Session {
    server: String,
    store: Arc<dyn CredentialStore>,
    http: Http,
    clock: Arc<dyn Clock>,
    /// Two refreshes at once would spend the same refresh token twice, which the server treats
    /// as theft and answers by revoking the sign-in.
    refreshing: Mutex<()>,
    /// The same, across every session for this server in every Mneme process (the app, its
    /// scheduler's watchers, a CLI run): a file lock in Mneme's data folder. The credentials
    /// are read again once it is held, so whoever waited uses the token the other refreshed.
    lock_file: Option<PathBuf>,
}

impl std::fmt::Debug for Session {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Session").field("server", &self.server).finish_non_exhaustive()
    }
}

impl Session {
    pub fn new(server: &str, store: Arc<dyn CredentialStore>, http: Http, clock: Arc<dyn Clock>) -> Self {
        Session { server: server.to_string(), store, http, clock, refreshing: Mutex::new(()), lock_file: None }
    }

    /// Refreshes under a lock shared with every Mneme process using `data_dir` (what every
    /// real client does; a session without one only keeps its own threads apart).
    pub fn with_refresh_lock(mut self, data_dir: &Path) -> Self {
        let digest = Sha256::digest(self.server.trim_end_matches('/').as_bytes());
        let name: String = digest.iter().take(8).map(|b| format!("{b:02x}")).collect();
        self.lock_file = Some(data_dir.join("team").join(format!("refresh-{name}.lock")));
        self
    }

    /// Holds both locks; a lock file that cannot be made leaves the in-process one alone
    /// (a read-only data folder must not stop syncing).
    fn lock(&self) -> (std::sync::MutexGuard<'_, ()>, Option<FileLock>) {
        let one = self.refreshing.lock().unwrap_or_else(|p| p.into_inner());
        let all = self.lock_file.as_deref().and_then(|p| FileLock::take(p).ok());
        (one, all)
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    /// The stored credentials, without refreshing.
    pub fn credentials(&self) -> Result<Option<Credentials>, SyncError> {
        self.store.load(&self.server)
    }

    /// Exchanges the refresh token now.
    pub fn refresh(&self) -> Result<Credentials, SyncError> {
        let _held = self.lock();
        let current = self.store.load(&self.server)?.ok_or_else(|| SyncError::NoAuth { server: self.server.clone() })?;
        self.refresh_from(current)
    }

    fn refresh_from(&self, current: Credentials) -> Result<Credentials, SyncError> {
        let Some(refresh) = current.refresh_token.clone() else {
            return Err(SyncError::NoAuth { server: self.server.clone() });
        };
        let form = vec![
            ("grant_type", REFRESH_TOKEN_GRANT.to_string()),
            ("refresh_token", refresh),
            ("client_id", CLIENT_ID.to_string()),
        ];
        match form_post(&self.http, &self.server, TOKEN_PATH, form)? {
            Ok(body) => {
                let t: TokenResponse = parse(&body)?;
                if let Some(detail) = unusable_tokens(&t) {
                    return Err(SyncError::Parse { detail });
                }
                let mut c = credentials(t, current.user.clone(), self.clock.as_ref());
                if c.refresh_token.is_none() {
                    c.refresh_token = current.refresh_token;
                }
                c.extra = current.extra;
                self.store.save(&self.server, &c)?;
                Ok(c)
            }
            // A refused refresh (expired, revoked, reused) means signing in again.
            Err(Refusal { status, error: e }) => Err(SyncError::Auth { status, message: Some(e.error_description.unwrap_or(e.error)) }),
        }
    }
}

impl TokenSource for Session {
    fn access_token(&self) -> Result<Option<String>, SyncError> {
        let current = |c: &Credentials| {
            now_ms(self.clock.as_ref()).saturating_add(REFRESH_MARGIN_MS) < c.expires_at_ms || c.refresh_token.is_none()
        };
        let Some(c) = self.store.load(&self.server)? else { return Ok(None) };
        if current(&c) {
            return Ok(Some(c.access_token));
        }
        // Read again under the locks: another thread or process may have refreshed meanwhile.
        let _held = self.lock();
        let Some(c) = self.store.load(&self.server)? else { return Ok(None) };
        if current(&c) {
            return Ok(Some(c.access_token));
        }
        Ok(Some(self.refresh_from(c)?.access_token))
    }

    /// The server refused `rejected` (401) though the local clock says it is current: the
    /// clock was stepped back since it was issued (NTP correcting a clock that ran ahead, a
    /// clock set by hand), so `expires_at_ms` lies, or the server ended it early. Refreshing
    /// is the one way to tell; a refused refresh says to sign in again.
    fn renew_rejected(&self, rejected: &str) -> Result<bool, SyncError> {
        let _held = self.lock();
        let Some(c) = self.store.load(&self.server)? else { return Ok(false) };
        // Another thread or process refreshed (or signed in again) since the token was
        // handed out: retry with its token rather than spend the refresh token a second time.
        if c.access_token != rejected {
            return Ok(true);
        }
        if c.refresh_token.is_none() {
            return Ok(false);
        }
        self.refresh_from(c)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::check_sign_in_page;

    #[test]
    fn the_sign_in_page_must_be_a_web_address() {
        for (server, page) in [
            ("https://team.example", "https://team.example/device?user_code=AB"),
            ("https://team.example", "https://sso.example/device"),
            ("http://127.0.0.1:8080", "http://127.0.0.1:8080/device"),
        ] {
            assert!(check_sign_in_page(server, page).is_ok(), "{page}");
        }
        for (server, page) in [
            ("http://127.0.0.1:8080", "javascript:window.__pwned=1"),
            ("http://127.0.0.1:8080", "file:///etc/passwd"),
            ("http://127.0.0.1:8080", "data:text/html,x"),
            ("http://127.0.0.1:8080", "/device"),
            ("https://team.example", "http://team.example/device"),
        ] {
            let e = check_sign_in_page(server, page).unwrap_err().to_string();
            assert!(e.contains("refused the sign-in request") && e.contains(page), "{page}: {e}");
        }
    }
}
