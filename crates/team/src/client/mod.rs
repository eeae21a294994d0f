//! The team-memory sync client: Claude Code 2.1.197's pull and push (`teamMemorySync`),
//! speaking `GET`/`PUT <server>/api/claude_code/team_memory?repo=owner%2Fname`, so a team can
//! mix Claude Code and Mneme against one server.
//!
//! **Pull** (server wins per key): `If-None-Match` with the last checksum; 304 writes nothing;
//! 404 forgets what the server held; on 200 every entry whose key validates and whose content
//! is at most 250,000 bytes is written — only when it differs from the file, so unchanged files
//! keep their mtime. Keys the server tombstoned (`deletedEntries`) move the local file to
//! Mneme's trash (never a hard delete) and are never uploaded again. Where a pull replaces a
//! local edit the server never saw, the local version is copied to the trash first and the
//! conflict recorded (saved in the state before the file is replaced, so a pull killed
//! part-way still lists it): server-wins must not mean lost work (a local file that is not UTF-8
//! counts as an edit, since the server has only its lossy reading; when no copy can be kept,
//! the key is skipped instead). A key the pull does not write (refused, oversized, failed, or
//! on a case-insensitive disk the same file as a key spelled differently only in case) is held
//! back from pushes, so its stale local copy never reverts the teammate's version, and the
//! next pull asks for everything until it is written. Pulls retry transient failures four
//! times on Claude Code's backoff; auth and parse errors are not retried, except that a request
//! refused with 401 (pull, push, hashes, and the lead's calls in `lead.rs`, all through
//! `send_signed`) is sent once more after one token refresh (its
//! expiry was reckoned on a clock that may have been stepped back since). A push the server
//! acknowledged counts as held only once a pull shows it (`SyncState::unconfirmed_pushes`):
//! until then a pull keeps the file in the trash before replacing it, and one the server's
//! answer (or a 404) no longer names stays, is reported as forgotten and is pushed again —
//! by the watcher ([`SyncClient::push_automatic`]) only until the server has lost the same
//! content [`MAX_LOST_PUSHES`] times in a row (`SyncState::lost_pushes`); then it is reported
//! as given up, and only a push by hand or an edit here sends it again.
//!
//! **Push** (local wins for edited keys): every `.md`/`.txt` file in `team/` (not starting
//! with `.`, at most 250,000 bytes) is read; files the secret scanner flags are left out and
//! reported as `"<relPath>" (<label>)` — the secret never leaves the machine; keys are cut to a
//! learned server cap in sorted order; the delta against the server's per-key checksums goes
//! in PUT batches under 200,000 bytes with `If-Match`. A 412 probes `?view=hashes` and retries
//! at most twice; a structured 413 teaches the cap. One deliberate difference: after a 412, a
//! key a teammate changed that is *unchanged here* is held back rather than pushed — Claude
//! Code 2.1.197 does that for personal memory only, and for team memory reverts the teammate's
//! edit with the stale copy. A key changed on both sides is still pushed (local wins) and
//! recorded as a conflict; the server's history keeps the teammate's version.
//!
//! **Deletions are not propagated.** Claude Code 2.1.197 sends `soft_delete_keys` for keys the
//! server has but the disk lacks, trusting that its own session pulled first. Mneme's state
//! outlives a session, and a file missing from `team/` can mean many things (a checkout in
//! progress, a folder restored from backup, a teammate's pull racing ours), so Mneme never
//! turns an absence into a delete: removing a team entry is an explicit act
//! ([`SyncClient::remove_entry`], the server's lead API), and the next pull restores a file
//! deleted only locally.
//!
//! Layout: this module holds the client itself (target, token, state, the request helpers);
//! `pull.rs` and `push.rs` hold the two directions ([`PullReport`], [`PushReport`]), and
//! `errors.rs` gives HTTP failures their meaning ([`SyncError`]).

mod errors;
mod files;
mod http;
mod pull;
mod push;
mod retry;
pub mod state;

pub(crate) use errors::classify_failure;
pub use errors::{recoverable_by_unlink, DriveNotAnswering, SyncError};
pub use files::{hash_content, js_sort, read_local, syncs_name, LocalFiles};
pub use http::{encode_uri_component, user_agent, Http, MAX_RESPONSE_BYTES, MAX_SIGN_IN_RESPONSE_BYTES};
pub(crate) use pull::MAX_PULL_KEYS;
pub use pull::{given_up_message, PullReport};
pub use push::{batch_by_bytes, PushReport};
pub use retry::{retry_delay, Sleeper, ThreadSleeper, BASE_DELAY_MS, MAX_DELAY_MS};
pub use state::{Conflict, ConflictKind, LostFile, LostPush, Outcome, PendingReplacement, SkippedSecret, Suppression, SyncState, MAX_LOST_PUSHES};

use crate::wire::TEAM_MEMORY_PATH;
use http::{Failure, Reply, Request};
use mneme_core::Clock;
use mneme_store::memdir::{Memdir, TEAM_DIR};
use mneme_store::Environment;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Supplies the bearer token for each request (refreshing it first when it is about to
/// expire); `None` when nobody is signed in.
pub trait TokenSource: Send + Sync {
    fn access_token(&self) -> Result<Option<String>, SyncError>;

    /// The server answered 401 to a request sent with `rejected`. Whether a different token is
    /// now available (the caller then asks [`TokenSource::access_token`] again and retries
    /// once); an error (a refused refresh) is reported instead of the 401. A source that
    /// cannot renew its token keeps the 401.
    fn renew_rejected(&self, rejected: &str) -> Result<bool, SyncError> {
        let _ = rejected;
        Ok(false)
    }
}

/// A token held in memory only, e.g. one a lead minted for a script.
#[derive(Clone)]
pub struct StaticToken(pub String);

impl std::fmt::Debug for StaticToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StaticToken(…)")
    }
}

impl TokenSource for StaticToken {
    fn access_token(&self) -> Result<Option<String>, SyncError> {
        Ok(Some(self.0.clone()))
    }
}

/// What a client syncs: the memory folder (its `team/` is synced), the repository it belongs
/// to, and the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncTarget {
    pub memory_dir: PathBuf,
    /// `owner/name`, or `None` when the folder is not in a github.com repository.
    pub repo: Option<String>,
    /// The server's base URL, or `None` when none is configured.
    pub server_url: Option<String>,
}

impl SyncTarget {
    pub fn team_dir(&self) -> PathBuf {
        self.memory_dir.join(TEAM_DIR)
    }
}

/// A key a pull did not write or a push left out, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedKey {
    pub key: String,
    pub reason: String,
}

/// The sync client for one memory folder.
pub struct SyncClient {
    target: SyncTarget,
    state_path: PathBuf,
    memdir: Memdir,
    clock: Arc<dyn Clock>,
    tokens: Arc<dyn TokenSource>,
    sleeper: Arc<dyn Sleeper>,
    http: Http,
    /// One pull or push at a time within the process (Claude Code shares one promise).
    busy: Mutex<()>,
}

impl std::fmt::Debug for SyncClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SyncClient").field("target", &self.target).field("state_path", &self.state_path).finish_non_exhaustive()
    }
}

impl SyncClient {
    /// A client for `target`, keeping its state and trash in `env`'s data dir.
    pub fn new(target: SyncTarget, env: &Environment, clock: Arc<dyn Clock>, tokens: Arc<dyn TokenSource>) -> Self {
        let memory_key = target.memory_dir.to_string_lossy().trim_end_matches('/').to_string();
        let trash = env.data_dir().join("trash").join(mneme_core::sanitize::sanitize_path(&memory_key));
        SyncClient {
            state_path: state::state_path(&env.data_dir(), &target.memory_dir),
            memdir: Memdir::new(target.memory_dir.clone(), trash, clock.clone()),
            target,
            clock,
            tokens,
            sleeper: Arc::new(ThreadSleeper),
            http: Http::for_env(env),
            busy: Mutex::new(()),
        }
    }

    /// Replaces how the client waits between pull retries (tests record instead of sleeping).
    pub fn with_sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.sleeper = sleeper;
        self
    }

    /// Replaces the HTTP client (a shorter timeout, say).
    pub fn with_http(mut self, http: Http) -> Self {
        self.http = http;
        self
    }

    pub fn target(&self) -> &SyncTarget {
        &self.target
    }

    /// The state file's path.
    pub fn state_path(&self) -> &Path {
        &self.state_path
    }

    /// The persisted state (fresh when none is stored for this server and repository), with
    /// the local edits a killed pull replaced listed among the conflicts (not saved: the next
    /// pull saves them).
    pub fn state(&self) -> Result<SyncState, SyncError> {
        let (server, repo) = self.server_and_repo()?;
        let mut st = state::load(&self.state_path, &server, &repo)?;
        st.settle_replacements(&self.target.team_dir());
        Ok(st)
    }

    /// The state as a status shows it, decided here once so `mneme team status` and the Team
    /// screen say the same: the state ([`SyncClient::state`]), or `None` and why not when its
    /// file cannot be read (a broken, oversized or special file; the sentence says to delete
    /// it, after which the next pull rebuilds it from the server), so a status still shows the
    /// rest. No server or repository is no problem: nothing was ever synced under that pair.
    pub fn status_state(&self) -> (Option<SyncState>, Option<String>) {
        match self.state() {
            Ok(st) => (Some(st), None),
            Err(e @ SyncError::State { .. }) => (None, Some(e.to_string())),
            Err(_) => (None, None),
        }
    }

    pub(crate) fn server_and_repo(&self) -> Result<(String, String), SyncError> {
        let server = self.server()?;
        let repo = self.target.repo.clone().ok_or(SyncError::NoRepo)?;
        Ok((server, repo))
    }

    /// The server alone: what asking it about the signed-in person needs (no repository).
    pub(crate) fn server(&self) -> Result<String, SyncError> {
        self.target.server_url.clone().ok_or(SyncError::NoServer)
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.clock.now_ms()).unwrap_or(u64::MAX)
    }

    fn url(&self, server: &str, repo: &str, view: Option<&str>) -> String {
        let mut u = format!("{}{}?repo={}", http::trim_base(server), TEAM_MEMORY_PATH, encode_uri_component(repo));
        if let Some(v) = view {
            u.push_str("&view=");
            u.push_str(v);
        }
        u
    }

    fn token(&self, server: &str) -> Result<String, SyncError> {
        self.tokens.access_token()?.ok_or_else(|| SyncError::NoAuth { server: server.to_string() })
    }

    fn failure(&self, server: &str, f: Failure) -> SyncError {
        classify_failure(server, f)
    }

    /// Sends the request `build` makes (without a token) with the session's token. A 401 is
    /// retried once with a renewed token ([`TokenSource::renew_rejected`]): the token's expiry
    /// was reckoned on the local clock, which may have been stepped back since, and a 401 stops
    /// automatic pushes for good. A second 401, or a refresh the server refuses, is reported
    /// as it is (both say to sign in again); nothing is retried twice.
    pub(crate) fn send_signed<'a>(&self, server: &str, accept: &[u16], build: impl Fn() -> Request<'a>) -> Result<Reply, SyncError> {
        let signed = |token| {
            let mut req = build();
            req.token = Some(token);
            self.http.send(req, accept)
        };
        let token = self.token(server)?;
        match signed(&token) {
            Err(Failure::Auth { status: 401, body }) => {
                if !self.tokens.renew_rejected(&token)? {
                    return Err(self.failure(server, Failure::Auth { status: 401, body }));
                }
                signed(&self.token(server)?).map_err(|f| self.failure(server, f))
            }
            sent => sent.map_err(|f| self.failure(server, f)),
        }
    }

    /// Claude Code's `syncTeamMemory`: a pull that ignores the ETag, then a push.
    pub fn sync(&self) -> Result<(PullReport, PushReport), SyncError> {
        let pulled = self.pull_fresh()?;
        let pushed = self.push()?;
        Ok((pulled, pushed))
    }

    /// Records a permanent failure seen outside a push (the watcher's `no_oauth`, `no_repo`).
    pub fn record_suppression(&self, reason: Option<&str>) -> Result<(), SyncError> {
        let (server, repo) = match self.server_and_repo() {
            Ok(p) => p,
            // Without a server or repository there is no state file to record into.
            Err(_) => return Ok(()),
        };
        let _busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        let mut st = state::load(&self.state_path, &server, &repo)?;
        st.suppressed = reason.map(|r| Suppression { reason: r.to_string(), at_ms: self.now_ms() });
        state::save(&self.state_path, &st)
    }

    /// Whether a token is available (signing in first when not).
    pub fn signed_in(&self) -> Result<bool, SyncError> {
        Ok(self.tokens.access_token()?.is_some())
    }
}

pub(crate) use http::Failure as HttpFailure;

/// A request with no token, headers or body yet.
pub(crate) fn http_request<'a>(method: &'a str, url: &'a str) -> Request<'a> {
    Request::new(method, url)
}

fn strip_quotes(s: &str) -> String {
    s.replace('"', "")
}

/// A client for background work (the scheduler's team sync) signed in with the token kept in
/// the OS keyring; tests and the api may pass their own credential store to
/// [`SyncClient::new`] instead. Its keyring calls give up after
/// [`mneme_keychain::BACKGROUND_TIME_LIMIT`]: a locked keyring whose unlock prompt nobody
/// answers fails the pull or push with "unlock the keyring" (the scheduler tries again later)
/// instead of holding it, the watcher's last push at shutdown included.
pub fn keyring_client(target: SyncTarget, env: &Environment, clock: Arc<dyn Clock>) -> SyncClient {
    let server = target.server_url.clone().unwrap_or_default();
    let store = Arc::new(crate::auth::KeyringStore::from_env(env).with_time_limit(mneme_keychain::BACKGROUND_TIME_LIMIT));
    let session = crate::auth::Session::new(&server, store, Http::for_env(env), clock.clone()).with_refresh_lock(&env.data_dir());
    SyncClient::new(target, env, clock, Arc::new(session))
}

/// The memory folder and repository of the project at `cwd`, with the server from
/// `TEAM_MEMORY_SYNC_URL` or Mneme's setting: what the CLI and app sync. It reads the folder's
/// settings and git config directly, so on a drive that stopped answering it blocks until the
/// drive answers: a caller that must not wait on that uses [`answering_target`].
pub fn resolve_target(env: &Environment, cwd: &Path) -> SyncTarget {
    // The folder the session uses, after its settings' `env` blocks.
    let memory_dir = mneme_store::session::SessionMemory::for_cwd(env, cwd).dir.dir;
    SyncTarget { memory_dir, repo: crate::repo::github_repo(cwd), server_url: crate::config::server_url(env) }
}

/// Whether `dir`'s drive answers within [`mneme_store::drive::PATIENCE`] (asked on a thread of
/// its own, see `mneme_store::drive`); a missing folder answers.
pub fn drive_answers(dir: &Path) -> Result<(), DriveNotAnswering> {
    if mneme_store::drive::answers(dir) {
        Ok(())
    } else {
        Err(DriveNotAnswering { path: dir.to_path_buf() })
    }
}

/// [`resolve_target`] for a folder whose drive may hang: the folder's drive is asked first, and
/// the memory folder's after (`autoMemoryDirectory` may put it on another drive), so a
/// project on a drive that does not answer costs one blocked look, not the caller (the
/// scheduler's team loop, a request from the app). A drive that stops answering after it was
/// asked still holds the caller.
pub fn answering_target(env: &Environment, cwd: &Path) -> Result<SyncTarget, DriveNotAnswering> {
    drive_answers(cwd)?;
    let target = resolve_target(env, cwd);
    drive_answers(&target.memory_dir)?;
    Ok(target)
}
