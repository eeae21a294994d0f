//! Team memory (`<memory>/team/`) for the app's Team screen: which repository and server a
//! folder syncs with, who is signed in, the sync state, the team files with their status,
//! pull / push / sync, device sign-in, and the lead's history, rollback and removal.
//!
//! Everything here drives [`mneme_team`], the same client `mneme team …` uses, so the app and
//! the CLI share one state file per memory folder and one sign-in per server. Credentials live
//! in the OS keyring ([`KeyringStore`]); tests hand in another [`CredentialStore`] with
//! [`Mneme::with_team_credentials`]. The device code of a sign-in in progress stays in this
//! process: front ends get an opaque id to poll with.
//!
//! [`Mneme::team_status`] reads only the disk and the keyring, so it answers without a network;
//! [`Mneme::team_remote`] asks the server who you are and who last changed each file.

use crate::{ApiError, ContextRequest, ErrorCode, Mneme};
use mneme_core::sanitize::sanitize_path;
use mneme_store::memdir::{Memdir, TEAM_DIR};
use mneme_team::auth::{self, CredentialStore, DeviceLogin, KeyringStore, LoginError, LoginPoll, Session};
use mneme_team::client::{
    self, hash_content, js_sort, Conflict, ConflictKind, Http, PullReport, PushReport, SkippedSecret, SyncError,
    SyncState, MAX_LOST_PUSHES,
};
use mneme_team::server_wire::{EntryVersion, RepoRole};
use mneme_team::wire::{CONTENT_FULL, INVALID_CONTENT, KEY_COLLISION, STORAGE_FULL, TOO_MANY_ENTRIES, TOO_MANY_KEYS};
use mneme_team::{config, repo, SyncClient, SyncTarget};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A monotonic clock: what a sign-in counts its code's life on.
type MonotonicNow = Arc<dyn Fn() -> Instant + Send + Sync>;

/// The app's team state: where credentials are kept, and sign-ins waiting for approval.
#[derive(Clone, Default)]
pub(crate) struct TeamSessions {
    /// `None`: the OS keyring, under `MNEME_KEYRING_SERVICE` or `mneme`.
    credentials: Option<Arc<dyn CredentialStore>>,
    /// Sign-in id → the device sign-in it polls.
    logins: Arc<Mutex<HashMap<String, PendingLogin>>>,
    /// `None`: `Instant::now`; tests pass their own ([`Mneme::with_team_monotonic_clock`]).
    monotonic: Option<MonotonicNow>,
}

#[derive(Clone)]
struct PendingLogin {
    login: DeviceLogin,
    /// Remember the server once signed in (an address was given and the environment
    /// variable does not override it).
    save_server: bool,
    /// When the code was issued, on a monotonic clock, and how long it lives (at most
    /// [`auth::MAX_CODE_LIFETIME`]). The code's life is counted in time actually waited as well
    /// as against the wall clock's `expires_at_ms`, as `mneme team login` counts it: a clock
    /// stepped back while the person is away would otherwise push the lapse back with it, and
    /// the Team screen would keep polling a server that answers `authorization_pending` that
    /// much longer. The wall clock still counts too: a machine asleep meanwhile does not
    /// advance every monotonic clock, and its code lapsed all the same.
    started: Instant,
    lifetime: Duration,
}

impl PendingLogin {
    /// Whether the code has lapsed by either clock.
    fn lapsed(&self, now_ms: u64, now: Instant) -> bool {
        now_ms >= self.login.expires_at_ms || now.saturating_duration_since(self.started) >= self.lifetime
    }
}

/// Where the server address comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum TeamServerSource {
    /// `TEAM_MEMORY_SYNC_URL`, which Claude Code reads too; it wins over the setting.
    Environment,
    /// Mneme's setting (`team.json` in its data folder).
    Setting,
}

/// The server address as set and as used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamServerSetting {
    /// The server sync uses.
    pub server_url: Option<String>,
    pub source: Option<TeamServerSource>,
    /// Mneme's own setting, which `TEAM_MEMORY_SYNC_URL` may be overriding.
    pub saved_server_url: Option<String>,
}

/// How one pull or push ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamOutcome {
    pub at_ms: u64,
    pub ok: bool,
    /// One line: what was written or uploaded, or the error.
    pub summary: String,
    /// `auth`, `timeout`, `network`, `http`, … when it failed.
    pub error_class: Option<String>,
}

/// Why automatic pushes stopped, and how they start again.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamSuppression {
    /// `no_oauth`, `no_repo`, `http_<status>` or the server's error code.
    pub reason: String,
    pub at_ms: u64,
    /// What to do; a successful push turns automatic pushes back on.
    pub recovery: String,
}

/// A file a push held back because the secret scanner flagged it. The secret itself is never
/// reported, only the rule that found it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamSecretHold {
    /// The key, relative to `team/`.
    pub path: String,
    pub rule_id: String,
    /// e.g. "GitHub PAT".
    pub label: String,
}

/// What happened to one key when the two sides disagreed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum TeamConflictKind {
    /// A pull replaced a local edit the server never had; the local version is in the trash.
    PulledOverLocalEdit,
    /// A push replaced a teammate's newer version; theirs stays in the server's history.
    PushedOverTeammate,
    /// A lead removed the file for everyone; the local copy went to the trash.
    DeletedByTeammate,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamConflict {
    pub key: String,
    pub at_ms: u64,
    pub kind: TeamConflictKind,
    /// The trash entry holding the local version, when one was kept.
    pub trash_id: Option<String>,
}

/// The sync state of one memory folder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamSyncState {
    pub last_pull: Option<TeamOutcome>,
    pub last_push: Option<TeamOutcome>,
    pub suppressed: Option<TeamSuppression>,
    /// The entry cap the server taught with a 413; files past it in sorted order stay local.
    pub server_max_entries: Option<u64>,
    /// Held back by the last push because they hold a secret.
    pub skipped_for_secrets: Vec<TeamSecretHold>,
    /// Held back by the last push because of the entry cap.
    pub skipped_over_cap: Vec<String>,
    /// Newest first.
    pub conflicts: Vec<TeamConflict>,
    /// Files automatic pushes hold back because the server accepted this very content from
    /// here and then lost it `maxLostPushes` times in a row: the copy here is the only one.
    /// Push (by hand) sends them again; editing one does too. Sorted as Claude Code sorts keys.
    pub held_back_lost: Vec<String>,
    /// How many losses in a row make automatic pushes hold a file back (for the wording).
    pub max_lost_pushes: u32,
}

/// Where one team file stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum TeamFileStatus {
    /// The same here and on the server.
    Synced,
    /// Changed here since the last sync; Push sends it.
    Modified,
    /// Only here; Push uploads it.
    New,
    /// A teammate changed it since this copy was synced; Pull brings their version.
    Stale,
    /// On the server, not here yet; Pull brings it.
    ServerOnly,
    /// Holds something that looks like a secret: never uploaded.
    Secret,
    /// Over 250,000 bytes: never uploaded.
    TooLarge,
    /// Past the server's entry cap: not uploaded.
    OverCap,
    /// A lead removed it for everyone: never uploaded again.
    Removed,
    /// Never synced from this folder: Sync compares it with the server.
    Unknown,
}

/// One file of `team/` (or one the server has).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamFile {
    /// The path relative to `team/`, as the server names it.
    pub key: String,
    /// The file on disk, when there is one.
    pub path: Option<PathBuf>,
    pub size: Option<u64>,
    pub modified_ms: Option<u64>,
    /// `sha256:<hex>` of the local text.
    pub local_hash: Option<String>,
    /// `sha256:<hex>` the server held at the last sync.
    pub server_hash: Option<String>,
    pub status: TeamFileStatus,
    /// For `secret`: the rule's label (never the secret).
    pub secret_label: Option<String>,
}

/// Team memory as seen from one folder, without asking the server.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamStatus {
    pub memory_dir: PathBuf,
    /// `<memory>/team`: what syncs.
    pub team_dir: PathBuf,
    /// `owner/name` on github.com.
    pub repo: Option<String>,
    /// Why there is no repository (one sentence saying what to do); `None` when there is one.
    pub repo_problem: Option<String>,
    /// `origin`'s URL as Claude Code reads it.
    pub remote_url: Option<String>,
    pub server: TeamServerSetting,
    pub signed_in: bool,
    /// Who signed in, as the server names them.
    pub user: Option<String>,
    /// Why the OS keyring could not be read, when it could not.
    pub keyring_problem: Option<String>,
    /// Why Mneme's sync state file for this folder cannot be read, saying what to do, when it
    /// cannot (`sync` is then empty).
    pub state_problem: Option<String>,
    pub sync: TeamSyncState,
    /// Sorted as Claude Code sorts keys.
    pub files: Vec<TeamFile>,
}

/// A user's role in the repository.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum TeamRole {
    Member,
    /// May roll entries back and remove them for everyone.
    Lead,
}

/// The newest change the server holds for one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamRemoteEntry {
    pub key: String,
    /// The repository version the change created.
    pub version: u64,
    /// `sha256:<hex>` of the content.
    pub checksum: String,
    /// `None`: changed by the server's admin command line.
    pub author: Option<String>,
    /// ISO 8601 with milliseconds.
    pub time: String,
    /// The newest change removed the entry.
    pub deleted: bool,
    /// How many versions the server keeps.
    pub versions: u64,
}

/// What the server says about you and this repository's files.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamRemote {
    pub user: String,
    /// `None`: the account has no access to this repository.
    pub role: Option<TeamRole>,
    pub team: Option<String>,
    /// The server's entry cap for the repository.
    pub max_entries: Option<u64>,
    /// Bytes of history the server keeps for the repository (every version), when it says.
    pub stored_bytes: Option<u64>,
    /// The server's storage cap on them, when it says.
    pub max_bytes: Option<u64>,
    /// One per key the server has history for, sorted by key.
    pub entries: Vec<TeamRemoteEntry>,
}

/// One version of one key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamVersion {
    pub version: u64,
    pub checksum: String,
    pub author: Option<String>,
    pub time: String,
    /// A removal; `content` is what was removed.
    pub deleted: bool,
    pub content: String,
    /// What this version changed: from the version before it (nothing, for the first) to this
    /// one (nothing, for a removal).
    pub changes: crate::LineDiff,
    /// From the copy on this machine to this version; `None` when there is no local copy.
    pub against_local: Option<crate::LineDiff>,
}

/// A key's history, newest first, with the local copy to compare against.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamHistory {
    pub key: String,
    /// The newest versions the server sends in one page (100).
    pub versions: Vec<TeamVersion>,
    /// The server keeps older versions than these.
    pub older_not_shown: bool,
    /// The file in `team/` now, when there is one.
    pub local: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamSkippedKey {
    pub key: String,
    pub reason: String,
}

/// What a pull did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamPullResult {
    pub summary: String,
    /// The server had nothing new (304); nothing was written.
    pub not_modified: bool,
    /// The server holds nothing for this repository yet.
    pub server_empty: bool,
    pub entry_count: u64,
    /// Keys written to disk.
    pub written: Vec<String>,
    /// Keys a lead removed whose local file went to the trash.
    pub trashed: Vec<String>,
    pub skipped: Vec<TeamSkippedKey>,
    pub conflicts: Vec<TeamConflict>,
    /// Files this machine pushed and the server accepted that its answer no longer holds (the
    /// server lost them): they are kept here unchanged and the next push sends them again.
    pub forgotten: Vec<String>,
    /// Of `forgotten`, the files the server has now lost three times in a row: automatic
    /// pushes stop sending them until a push by hand (or an edit here).
    pub given_up: Vec<String>,
}

/// What a push did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamPushResult {
    pub summary: String,
    /// Keys uploaded, in upload order.
    pub uploaded: Vec<String>,
    /// Requests that carried them.
    pub batches: u64,
    pub skipped_secrets: Vec<TeamSecretHold>,
    pub skipped_over_cap: Vec<String>,
    pub oversized: Vec<String>,
    /// Removed by a lead; never uploaded again.
    pub tombstoned: Vec<String>,
    pub conflict_retries: u32,
    pub conflicts: Vec<TeamConflict>,
    /// Files an automatic push left out because the server lost them three times in a row.
    /// Always empty for the app's own Push and Sync, which send them.
    pub held_back_lost: Vec<String>,
}

/// A pull, then a push.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamSyncResult {
    pub pull: TeamPullResult,
    pub push: TeamPushResult,
}

/// A lead's rollback or removal, and the pull that brought it here.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamLeadChange {
    pub key: String,
    /// The repository version the change created.
    pub version: Option<u64>,
    pub checksum: String,
    /// The pull that followed; `None` when it failed (see `pullError`).
    pub pull: Option<TeamPullResult>,
    /// The change is on the server; only bringing it here failed.
    pub pull_error: Option<String>,
}

/// Every sign-in of the people granted a repository (lead only), newest first: who signed in,
/// with which client, when the sign-in was last refreshed, and whether it was revoked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamSignIns {
    pub repo: String,
    pub sign_ins: Vec<TeamSignInRecord>,
}

/// One sign-in (a device sign-in, or a token the server's admin minted) and the tokens it led to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamSignInRecord {
    pub user: String,
    /// The `client_id` the device sign-in named; `admin-token` for a token the admin minted.
    pub client_id: String,
    /// ISO 8601.
    pub created: String,
    /// The last token refresh (or the sign-in itself).
    pub last_used: String,
    /// When its newest token expires.
    pub expires: String,
    /// When it was revoked (signed out, a replayed refresh token, or the server's admin).
    pub revoked: Option<String>,
}

/// A device sign-in waiting for approval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamSignIn {
    /// Pass to [`Mneme::team_sign_in_poll`].
    pub id: String,
    pub server: String,
    /// Show this; the person types it on the server's page.
    pub user_code: String,
    pub verification_uri: String,
    /// The page with the code filled in.
    pub verification_uri_complete: String,
    /// Seconds to wait between polls.
    pub interval_secs: u64,
    pub expires_at_ms: u64,
    /// How long the code has to live, in seconds, as of this answer (the server's
    /// `expires_in`, at most an hour). A countdown runs from this on a monotonic clock, as the
    /// engine counts the code's life in time waited: `expiresAtMs` against a wall clock stepped
    /// by hand or by NTP would make it jump.
    pub expires_in_secs: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum TeamSignInState {
    /// Not approved yet.
    Pending,
    /// Polled too early; wait `intervalSecs` (now longer).
    SlowDown,
    /// Signed in; the token is in the OS keyring.
    SignedIn,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamSignInPoll {
    pub state: TeamSignInState,
    pub user: Option<String>,
    pub interval_secs: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamSignedOut {
    pub server: String,
}

/// A local version a pull replaced, put back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TeamRestored {
    pub path: PathBuf,
    /// The trash entry now holding the version it replaced.
    pub replaced_trash_id: Option<String>,
}

/// A sync failure as the app reports it. The client's messages name CLI commands; where the
/// app has its own control, the message points there instead.
pub(crate) fn sync_error(e: SyncError) -> ApiError {
    let status = e.http_status();
    let (code, message) = match &e {
        SyncError::NoAuth { server } => {
            (ErrorCode::SignInRequired, format!("Sign in to the team server {server} first: Team → Sign in."))
        }
        SyncError::NoServer => (
            ErrorCode::InvalidInput,
            "No team server is set. Enter its address under Team → Server (or set TEAM_MEMORY_SYNC_URL).".to_string(),
        ),
        SyncError::Auth { .. } => (
            ErrorCode::SignInRequired,
            format!("{} Sign in again: Team → Sign in.", e.to_string().split(" Run `").next().unwrap_or_default()),
        ),
        SyncError::NoRepo => (ErrorCode::InvalidInput, e.to_string()),
        SyncError::Forbidden { .. } => (ErrorCode::Forbidden, e.to_string()),
        SyncError::Timeout | SyncError::Network { .. } | SyncError::Transport { .. } => {
            (ErrorCode::Unavailable, e.to_string())
        }
        SyncError::TooManyEntries { .. } => (ErrorCode::InvalidInput, e.to_string()),
        SyncError::Http { .. } => (
            match status {
                Some(404) => ErrorCode::NotFound,
                Some(409 | 412) => ErrorCode::Conflict,
                Some(s) if s == 429 || s >= 500 => ErrorCode::Unavailable,
                _ => ErrorCode::InvalidInput,
            },
            e.to_string(),
        ),
        SyncError::Parse { .. } | SyncError::State { .. } => (ErrorCode::Malformed, e.to_string()),
        SyncError::Conflict { .. } => (ErrorCode::Conflict, e.to_string()),
        SyncError::Escapes { .. } => (ErrorCode::InvalidInput, e.to_string()),
        SyncError::Io { action, path, source } => match ApiError::refused(source, action, path) {
            Some(refused) => return refused,
            None => (ErrorCode::for_io(source), e.to_string()),
        },
        SyncError::Keychain(k) => (keychain_code(k), e.to_string()),
        // Said as both shells say it for a request whose folder's drive does not answer.
        SyncError::Drive(d) => return crate::drive_check::not_answering(&d.path),
    };
    ApiError::new(code, message)
}

fn keychain_code(k: &mneme_keychain::KeychainError) -> ErrorCode {
    match k {
        mneme_keychain::KeychainError::Unavailable(_) | mneme_keychain::KeychainError::Denied(_) => {
            ErrorCode::Unavailable
        }
        mneme_keychain::KeychainError::Other(_) => ErrorCode::Io,
    }
}

fn login_error(e: LoginError) -> ApiError {
    match e {
        LoginError::Denied => ApiError::new(
            ErrorCode::Forbidden,
            "The sign-in was denied on the server's page. Choose Sign in to try again.",
        ),
        LoginError::Expired => ApiError::invalid(
            "The code expired before it was approved. Choose Sign in for a new code and approve it within the time shown.",
        ),
        LoginError::Refused { .. } => ApiError::invalid(e.to_string()),
        LoginError::Sync(s) => sync_error(s),
    }
}

fn config_error(e: config::ConfigError) -> ApiError {
    match e {
        config::ConfigError::BadUrl(_) | config::ConfigError::Insecure(_) => ApiError::invalid(e.to_string()),
        config::ConfigError::Io { action, ref path, ref source } => ApiError::refused(source, &format!("{action} Mneme's team settings"), path)
            .unwrap_or_else(|| ApiError::new(ErrorCode::for_io(source), e.to_string())),
    }
}

fn outcome(o: &client::Outcome) -> TeamOutcome {
    TeamOutcome { at_ms: o.at_ms, ok: o.ok, summary: o.summary.clone(), error_class: o.error_class.clone() }
}

fn secret_hold(s: &SkippedSecret) -> TeamSecretHold {
    TeamSecretHold { path: s.path.clone(), rule_id: s.rule_id.clone(), label: s.label.clone() }
}

fn conflict(c: &Conflict) -> TeamConflict {
    TeamConflict {
        key: c.key.clone(),
        at_ms: c.at_ms,
        kind: match c.kind {
            ConflictKind::PulledOverLocalEdit => TeamConflictKind::PulledOverLocalEdit,
            ConflictKind::PushedOverTeammate => TeamConflictKind::PushedOverTeammate,
            ConflictKind::DeletedByTeammate => TeamConflictKind::DeletedByTeammate,
        },
        trash_id: c.trash_id.clone(),
    }
}

/// What to do about a suppression, by Claude Code's reason.
fn recovery(reason: &str, cap: Option<u64>) -> String {
    let then = "a successful push turns automatic pushes back on.";
    match reason {
        "no_oauth" => format!("Sign in (Team → Sign in), then Push: {then}"),
        "no_repo" => format!("Give the repository a github.com `origin` remote, then Push: {then}"),
        "http_401" => format!("The server no longer accepts the sign-in. Sign in again, then Push: {then}"),
        "http_403" => format!("Ask the team's lead for access to this repository, then Push: {then}"),
        r if r == TOO_MANY_ENTRIES || r == "http_413" => {
            let limit = cap.map(|c| format!("at most {c} entries")).unwrap_or_else(|| "a limited number of entries".into());
            format!("The server holds {limit} for this repository. Delete or merge team files (deleting one resumes automatic pushes), then Push: {then}")
        }
        STORAGE_FULL => format!(
            "The server keeps every version of every team file, and this repository has reached its storage limit. Ask a lead to purge files nobody needs (Team → Purge), or the server's admin to drop old versions or raise the limit, then Push: {then}"
        ),
        CONTENT_FULL => format!(
            "This repository's team files together reached the server's limit on what every pull carries. Shorten team files or delete ones nobody needs (deleting one resumes automatic pushes), or ask the server's admin to raise the limit, then Push: {then}"
        ),
        TOO_MANY_KEYS => format!("The push named more files than the server takes in one request. Push again, then: {then}"),
        KEY_COLLISION => format!(
            "Two team files would be one file on a teammate's disk: their names differ only in letter case, or one is a file where the other needs a folder. Rename one of them (the last push names it), then Push: {then}"
        ),
        INVALID_CONTENT => format!(
            "A team file holds a character the server cannot store (a NUL: a file saved as UTF-16 or a binary file). Save it as UTF-8 text, then Push: {then}"
        ),
        r if r.contains("acl") || r.contains("forbidden") => {
            format!("The server refused this account for the repository. Ask the team's lead for access, then Push: {then}")
        }
        _ => format!("Fix what the last push reported, then Push: {then}"),
    }
}

fn sync_state(st: &SyncState) -> TeamSyncState {
    let mut conflicts: Vec<TeamConflict> = st.conflicts.iter().map(conflict).collect();
    conflicts.reverse();
    TeamSyncState {
        last_pull: st.last_pull.as_ref().map(outcome),
        last_push: st.last_push.as_ref().map(outcome),
        suppressed: st.suppressed.as_ref().map(|s| TeamSuppression {
            reason: s.reason.clone(),
            at_ms: s.at_ms,
            recovery: recovery(&s.reason, st.server_max_entries),
        }),
        server_max_entries: st.server_max_entries,
        skipped_for_secrets: st.skipped_for_secrets.iter().map(secret_hold).collect(),
        skipped_over_cap: st.skipped_over_cap.clone(),
        conflicts,
        // Filled in by `team_status`, which knows the local files' content.
        held_back_lost: Vec::new(),
        max_lost_pushes: MAX_LOST_PUSHES,
    }
}

/// The files an automatic push would hold back now: the server lost the content each one
/// holds today [`MAX_LOST_PUSHES`] times in a row. A file edited since is not among them (the
/// edit starts afresh), nor one no longer here.
fn held_back_lost(st: &SyncState, files: &[TeamFile]) -> Vec<String> {
    files
        .iter()
        .filter(|f| f.local_hash.as_deref().is_some_and(|h| st.gave_up_on(&f.key, h)))
        .map(|f| f.key.clone())
        .collect()
}

fn pull_result(r: &PullReport) -> TeamPullResult {
    TeamPullResult {
        summary: r.summary(),
        not_modified: r.not_modified,
        server_empty: r.server_empty,
        entry_count: r.entry_count as u64,
        written: r.written.clone(),
        trashed: r.trashed.clone(),
        skipped: r.skipped.iter().map(|s| TeamSkippedKey { key: s.key.clone(), reason: s.reason.clone() }).collect(),
        conflicts: r.conflicts.iter().map(conflict).collect(),
        forgotten: r.forgotten.clone(),
        given_up: r.given_up.clone(),
    }
}

fn push_result(r: &PushReport) -> TeamPushResult {
    TeamPushResult {
        summary: r.summary(),
        uploaded: r.uploaded.clone(),
        batches: r.batches as u64,
        skipped_secrets: r.skipped_secrets.iter().map(secret_hold).collect(),
        skipped_over_cap: r.skipped_over_cap.clone(),
        oversized: r.oversized.clone(),
        tombstoned: r.tombstoned.clone(),
        conflict_retries: r.conflict_retries,
        conflicts: r.conflicts.iter().map(conflict).collect(),
        held_back_lost: r.held_back_lost.clone(),
    }
}

/// A version as the history shows it, with its diffs against the version before it (`previous`)
/// and the local copy.
fn version(v: &EntryVersion, previous: Option<&EntryVersion>, local: Option<&str>) -> TeamVersion {
    let text = |v: &EntryVersion| if v.deleted { String::new() } else { v.content.clone() };
    let now = text(v);
    TeamVersion {
        version: v.version,
        checksum: v.checksum.clone(),
        author: v.author.clone(),
        time: v.time.clone(),
        deleted: v.deleted,
        changes: crate::line_diff(&previous.map(text).unwrap_or_default(), &now),
        against_local: local.map(|l| crate::line_diff(l, &now)),
        content: v.content.clone(),
    }
}

/// Why `cwd` has no github.com repository, as a sentence that says what to do.
fn repo_problem(cwd: &Path, remote: Option<&str>) -> String {
    if repo::git_dir(cwd).is_none() {
        return "This folder is not in a git repository. Team memory is shared per GitHub repository: open a folder inside one whose `origin` remote is on github.com.".into();
    }
    match remote {
        None => "The repository has no `origin` remote. Team memory is shared per github.com repository: add one with `git remote add origin https://github.com/OWNER/NAME.git`.".into(),
        Some(url) => format!(
            "`origin` is {url}, which is not a github.com repository. Claude Code shares team memory only for repositories whose `origin` is on github.com."
        ),
    }
}

/// The newest part of a 32-hex-digit id derived from the secret device code: opaque to the
/// page, unguessable, and stable for one sign-in.
fn login_id(login: &DeviceLogin) -> String {
    hash_content(&login.device_code).trim_start_matches("sha256:").chars().take(32).collect()
}

impl Mneme {
    /// Keeps team sign-in credentials in `store` instead of the OS keyring (tests).
    pub fn with_team_credentials(mut self, store: Arc<dyn CredentialStore>) -> Self {
        self.team.credentials = Some(store);
        self
    }

    /// Counts a team sign-in's code life on `now` instead of `Instant::now` (tests: time waited
    /// without waiting, while the wall clock is stepped back).
    pub fn with_team_monotonic_clock(mut self, now: Arc<dyn Fn() -> Instant + Send + Sync>) -> Self {
        self.team.monotonic = Some(now);
        self
    }

    fn monotonic_now(&self) -> Instant {
        self.team.monotonic.as_ref().map_or_else(Instant::now, |now| now())
    }

    pub(crate) fn credential_store(&self) -> Arc<dyn CredentialStore> {
        match &self.team.credentials {
            Some(s) => s.clone(),
            None => Arc::new(KeyringStore::from_env(&self.env)),
        }
    }

    /// The memory folder and repository of `req`'s folder, with the configured server.
    fn team_target(&self, req: &ContextRequest) -> Result<SyncTarget, ApiError> {
        let r = self.team_resolve(req)?;
        Ok(SyncTarget { memory_dir: r.memdir, repo: repo::github_repo(&r.cwd), server_url: config::server_url(&self.env) })
    }

    /// `req`'s folder resolved for a team operation, once its drive and its memory folder's
    /// have answered: every team operation reads the folder's settings and git config and
    /// works in its memory folder, and on a drive that stopped answering (a network share
    /// whose server went away, a hung USB stick) each would block its caller until the drive
    /// answers. Such a drive is asked on a thread of its own for at most 3 s
    /// (`mneme_store::drive`) and the operation fails as `unavailable`, naming the drive.
    /// Resolving looks into the memory folder already (whether its index exists), so the
    /// folder the sync client would use is asked first (`answering_target`, from the settings
    /// alone); the one resolved for the release shown is asked too, in case it is another.
    fn team_resolve(&self, req: &ContextRequest) -> Result<crate::context::Resolved, ApiError> {
        mneme_team::answering_target(&self.env, &req.cwd).map_err(|e| sync_error(e.into()))?;
        let r = self.resolve(req)?;
        mneme_team::client::drive_answers(&r.memdir).map_err(|e| sync_error(e.into()))?;
        Ok(r)
    }

    pub(crate) fn sync_client(&self, target: SyncTarget) -> SyncClient {
        let server = target.server_url.clone().unwrap_or_default();
        let session =
            Session::new(&server, self.credential_store(), Http::for_env(&self.env), self.clock.clone()).with_refresh_lock(&self.env.data_dir());
        SyncClient::new(target, &self.env, self.clock.clone(), Arc::new(session))
    }

    fn team_client(&self, req: &ContextRequest) -> Result<SyncClient, ApiError> {
        Ok(self.sync_client(self.team_target(req)?))
    }

    /// The memory folder the sync client moves replaced local edits into the trash of (its
    /// trash key is the folder without a trailing `/`).
    fn team_memdir(&self, target: &SyncTarget) -> Memdir {
        let key = target.memory_dir.to_string_lossy().trim_end_matches('/').to_string();
        let trash = self.env.data_dir().join("trash").join(sanitize_path(&key));
        Memdir::new(target.memory_dir.clone(), trash, self.clock.clone())
    }

    fn server_setting(&self) -> TeamServerSetting {
        TeamServerSetting {
            server_url: config::server_url(&self.env),
            source: match config::server_url_source(&self.env) {
                Some("setting") => Some(TeamServerSource::Setting),
                Some(_) => Some(TeamServerSource::Environment),
                None => None,
            },
            saved_server_url: config::saved_server_url(&self.env),
        }
    }

    /// Team memory as seen from `req`'s folder: repository, server, sign-in, sync state and
    /// every team file with its status. Reads the disk and the keyring only.
    pub fn team_status(&self, req: &ContextRequest) -> Result<TeamStatus, ApiError> {
        let r = self.team_resolve(req)?;
        let remote_url = repo::remote_url(&r.cwd);
        let repo = remote_url.as_deref().and_then(repo::github_slug);
        let repo_problem = repo.is_none().then(|| repo_problem(&r.cwd, remote_url.as_deref()));
        let server = self.server_setting();
        let target = SyncTarget { memory_dir: r.memdir.clone(), repo: repo.clone(), server_url: server.server_url.clone() };

        // Decided where `mneme team status` decides it, so both say the same.
        let sign_in = mneme_team::auth::sign_in_state(self.credential_store().as_ref(), server.server_url.as_deref());

        let client = self.sync_client(target.clone());
        // An unreadable state file is shown as such, with the files and the rest as they are
        // on disk (nothing synced as far as can be told).
        let (state, state_problem) = client.status_state();
        let state = state.unwrap_or_default();
        let files = team_files(&target.team_dir(), &state)?;
        let mut sync = sync_state(&state);
        sync.held_back_lost = held_back_lost(&state, &files);
        Ok(TeamStatus {
            team_dir: target.team_dir(),
            memory_dir: target.memory_dir,
            repo,
            repo_problem,
            remote_url,
            server,
            signed_in: sign_in.signed_in,
            user: sign_in.user,
            keyring_problem: sign_in.keyring_problem,
            state_problem,
            sync,
            files,
        })
    }

    /// Asks the server who is signed in, their role here, and the newest change to every key
    /// it has (two requests, however many keys).
    pub fn team_remote(&self, req: &ContextRequest) -> Result<TeamRemote, ApiError> {
        let target = self.team_target(req)?;
        let client = self.sync_client(target.clone());
        let me = client.me().map_err(sync_error)?;
        let access = target.repo.as_deref().and_then(|r| me.repos.iter().find(|a| a.repo == r));
        // One request for every key the server has, removed ones included and sorted by key.
        // Keys only on this machine have no history on the server, so nothing to list here.
        let entries = match access {
            Some(_) => client
                .latest()
                .map_err(sync_error)?
                .entries
                .into_iter()
                .map(|e| TeamRemoteEntry {
                    key: e.key,
                    version: e.version,
                    checksum: e.checksum,
                    author: e.author,
                    time: e.time,
                    deleted: e.deleted,
                    versions: e.versions,
                })
                .collect(),
            None => Vec::new(),
        };
        Ok(TeamRemote {
            user: me.user,
            role: access.map(|a| match a.role.acting_as() {
                RepoRole::Lead => TeamRole::Lead,
                RepoRole::Member | RepoRole::Newer => TeamRole::Member,
            }),
            team: access.map(|a| a.team.clone()),
            max_entries: access.map(|a| a.max_entries),
            stored_bytes: access.and_then(|a| a.stored_bytes),
            max_bytes: access.and_then(|a| a.max_bytes),
            entries,
        })
    }

    /// Saves the team server's address (`None` forgets it). `TEAM_MEMORY_SYNC_URL`, when set,
    /// still wins; the answer says so.
    pub fn set_team_server(&self, url: Option<&str>) -> Result<TeamServerSetting, ApiError> {
        match url.map(str::trim).filter(|u| !u.is_empty()) {
            Some(u) => {
                config::save_server_url(&self.env, u).map_err(config_error)?;
            }
            None => config::clear_server_url(&self.env).map_err(config_error)?,
        }
        Ok(self.server_setting())
    }

    /// Fetches the team's memory (the server wins per file; replaced local edits go to the
    /// trash first).
    pub fn team_pull(&self, req: &ContextRequest) -> Result<TeamPullResult, ApiError> {
        let r = self.team_client(req)?.pull().map_err(sync_error)?;
        Ok(pull_result(&r))
    }

    /// Uploads what changed in `team/`; files holding a secret never leave the machine.
    pub fn team_push(&self, req: &ContextRequest) -> Result<TeamPushResult, ApiError> {
        let r = self.team_client(req)?.push().map_err(sync_error)?;
        Ok(push_result(&r))
    }

    /// Claude Code's sync: a full pull, then a push.
    pub fn team_sync(&self, req: &ContextRequest) -> Result<TeamSyncResult, ApiError> {
        let (pull, push) = self.team_client(req)?.sync().map_err(sync_error)?;
        Ok(TeamSyncResult { pull: pull_result(&pull), push: push_result(&push) })
    }

    /// Every version of `key` the server keeps, newest first, and the local copy.
    pub fn team_history(&self, req: &ContextRequest, key: &str) -> Result<TeamHistory, ApiError> {
        let target = self.team_target(req)?;
        let h = self.sync_client(target.clone()).history(key).map_err(sync_error)?;
        let local = mneme_team::keys::validate_team_mem_key(&target.team_dir(), key)
            .ok()
            .and_then(|p| read_local_copy(&p))
            .and_then(|b| String::from_utf8(b).ok());
        // Newest first: the version before each one is the next in the list.
        let versions =
            h.versions.iter().enumerate().map(|(i, v)| version(v, h.versions.get(i + 1), local.as_deref())).collect();
        Ok(TeamHistory { key: h.key, versions, older_not_shown: h.more_before.is_some(), local })
    }

    /// Makes `key` what it was at `version` for everyone (lead only), then pulls it here.
    pub fn team_rollback(&self, req: &ContextRequest, key: &str, version: u64) -> Result<TeamLeadChange, ApiError> {
        let client = self.team_client(req)?;
        let put = client.rollback(key, version).map_err(lead_error)?;
        Ok(after_lead_change(&client, key, put))
    }

    /// Removes `key` for everyone (lead only): the server keeps it in history and reports a
    /// tombstone, and every client moves its copy to the trash on its next pull — this one
    /// at once.
    pub fn team_remove(&self, req: &ContextRequest, key: &str) -> Result<TeamLeadChange, ApiError> {
        let client = self.team_client(req)?;
        let put = client.remove_entry(key).map_err(lead_error)?;
        Ok(after_lead_change(&client, key, put))
    }

    /// Removes `key` for everyone and erases every earlier version of it from the server's
    /// history (lead only): for a secret that should never have been shared. Teammates' copies
    /// already pulled stay in their trash, so the secret must still be rotated.
    pub fn team_purge(&self, req: &ContextRequest, key: &str) -> Result<TeamLeadChange, ApiError> {
        let client = self.team_client(req)?;
        let put = client.purge(key).map_err(lead_error)?;
        Ok(after_lead_change(&client, key, put))
    }

    /// Every sign-in of the people granted this repository, newest first (lead only).
    pub fn team_sign_ins(&self, req: &ContextRequest) -> Result<TeamSignIns, ApiError> {
        let r = self.team_client(req)?.sign_ins().map_err(lead_error)?;
        Ok(TeamSignIns {
            repo: r.repo,
            sign_ins: r
                .sign_ins
                .into_iter()
                .map(|s| TeamSignInRecord {
                    user: s.user,
                    client_id: s.client_id,
                    created: s.created,
                    last_used: s.last_used,
                    expires: s.expires,
                    revoked: s.revoked,
                })
                .collect(),
        })
    }

    /// Puts back a local version a pull replaced (kept in the trash as `trash_id`). The
    /// version it replaces goes to the trash in turn, so neither is lost; the next push makes
    /// the restored one the team's.
    pub fn team_restore_conflict(&self, req: &ContextRequest, trash_id: &str) -> Result<TeamRestored, ApiError> {
        let target = self.team_target(req)?;
        let m = self.team_memdir(&target);
        let listing = m.list_trash()?;
        let entry = listing.entries.iter().find(|e| e.id == trash_id).ok_or_else(|| {
            ApiError::not_found(format!("There is no trash entry \"{trash_id}\" for this memory folder. It may have been restored already."))
        })?;
        let rel = entry.original_rel_path.clone();
        if !rel.starts_with(&format!("{TEAM_DIR}/")) {
            return Err(ApiError::invalid(format!(
                "Trash entry \"{trash_id}\" holds {rel}, which is not a team file. Restore it from Memories → Trash."
            )));
        }
        crate::memories::team_restore_allowed(&m, trash_id, &rel)?;
        let replaced = match std::fs::symlink_metadata(target.memory_dir.join(&rel)) {
            Ok(_) => Some(m.trash_file(&rel)?.id),
            Err(_) => None,
        };
        let restored = match m.restore(trash_id) {
            Ok(r) => r,
            Err(e) => {
                // The file it would have replaced goes back where it was: a failed restore
                // leaves the folder as it found it.
                if let Some(id) = &replaced {
                    let _ = m.restore(id);
                }
                return Err(e.into());
            }
        };
        Ok(TeamRestored { path: m.root().join(restored.rel_path), replaced_trash_id: replaced })
    }

    /// Starts a device sign-in with `server` (saved once signed in) or the configured one.
    pub fn team_sign_in(&self, server: Option<&str>) -> Result<TeamSignIn, ApiError> {
        let given = server.map(str::trim).filter(|s| !s.is_empty());
        let url = match given {
            Some(s) => config::normalize_server_url(s).map_err(config_error)?,
            None => config::server_url(&self.env).ok_or_else(|| {
                ApiError::invalid("Enter the team server's address first (Team → Server), or set TEAM_MEMORY_SYNC_URL.")
            })?,
        };
        let login = auth::start_login(&Http::for_env(&self.env), &url, self.clock.as_ref()).map_err(login_error)?;
        let id = login_id(&login);
        let now = u64::try_from(self.clock.now_ms()).unwrap_or(u64::MAX);
        let started = self.monotonic_now();
        let lifetime = Duration::from_millis(login.expires_at_ms.saturating_sub(now));
        let save_server = given.is_some() && self.env.var(config::SYNC_URL_VAR).is_none_or(|v| v.trim().is_empty());
        let view = TeamSignIn {
            id: id.clone(),
            server: login.server.clone(),
            user_code: login.user_code.clone(),
            verification_uri: login.verification_uri.clone(),
            verification_uri_complete: login.verification_uri_complete.clone(),
            interval_secs: login.interval_secs,
            expires_at_ms: login.expires_at_ms,
            expires_in_secs: lifetime.as_secs(),
        };
        let mut logins = self.team.logins.lock().unwrap_or_else(|p| p.into_inner());
        // Sign-ins nobody finished are of no use once their codes lapse.
        logins.retain(|_, p| !p.lapsed(now, started));
        logins.insert(id, PendingLogin { login, save_server, started, lifetime });
        Ok(view)
    }

    /// Polls a sign-in once; call it no more often than `intervalSecs`.
    pub fn team_sign_in_poll(&self, id: &str) -> Result<TeamSignInPoll, ApiError> {
        let pending = self.team.logins.lock().unwrap_or_else(|p| p.into_inner()).get(id).cloned();
        let Some(mut pending) = pending else {
            return Err(ApiError::not_found(
                "This sign-in is no longer in progress (it finished, or Mneme restarted). Choose Sign in again.",
            ));
        };
        let now = u64::try_from(self.clock.now_ms()).unwrap_or(u64::MAX);
        if pending.lapsed(now, self.monotonic_now()) {
            self.team.logins.lock().unwrap_or_else(|p| p.into_inner()).remove(id);
            return Err(login_error(LoginError::Expired));
        }
        let store = self.credential_store();
        let polled = auth::poll_login(&Http::for_env(&self.env), &mut pending.login, store.as_ref(), self.clock.as_ref());
        let mut logins = self.team.logins.lock().unwrap_or_else(|p| p.into_inner());
        let interval_secs = pending.login.interval_secs;
        match polled {
            Ok(LoginPoll::SignedIn { user }) => {
                logins.remove(id);
                drop(logins);
                if pending.save_server {
                    config::save_server_url(&self.env, &pending.login.server).map_err(config_error)?;
                }
                Ok(TeamSignInPoll { state: TeamSignInState::SignedIn, user, interval_secs })
            }
            Ok(p) => {
                logins.insert(id.to_string(), pending);
                let state = if p == LoginPoll::SlowDown { TeamSignInState::SlowDown } else { TeamSignInState::Pending };
                Ok(TeamSignInPoll { state, user: None, interval_secs })
            }
            Err(e) => {
                logins.remove(id);
                Err(login_error(e))
            }
        }
    }

    /// Signs out of `server` (default: the configured one): the token leaves the keyring.
    pub fn team_sign_out(&self, server: Option<&str>) -> Result<TeamSignedOut, ApiError> {
        let url = match server.map(str::trim).filter(|s| !s.is_empty()) {
            Some(s) => config::normalize_server_url(s).map_err(config_error)?,
            None => config::server_url(&self.env)
                .ok_or_else(|| ApiError::invalid("No team server is set, so there is nothing to sign out of."))?,
        };
        auth::logout(self.credential_store().as_ref(), &url).map_err(sync_error)?;
        Ok(TeamSignedOut { server: url })
    }
}


/// Lead-only calls: the server's 403 means "not a lead" here, not "no access".
fn lead_error(e: SyncError) -> ApiError {
    match e {
        SyncError::Forbidden { message } => ApiError::new(
            ErrorCode::Forbidden,
            format!(
                "Only a lead of this repository may do that{}. Ask the team's lead.",
                message.filter(|m| !m.is_empty()).map(|m| format!(" (the server says: {m})")).unwrap_or_default()
            ),
        ),
        other => sync_error(other),
    }
}

fn after_lead_change(client: &SyncClient, key: &str, put: mneme_team::wire::PutResponse) -> TeamLeadChange {
    let (pull, pull_error) = match client.pull() {
        Ok(r) => (Some(pull_result(&r)), None),
        Err(e) => (None, Some(sync_error(e).message)),
    };
    TeamLeadChange { key: key.to_string(), version: put.version, checksum: put.checksum, pull, pull_error }
}

/// The most of a local team file read to show or hash it: what Mneme reads of any memory
/// whole. The server takes at most 250,000 bytes a file, so only a file that is never pushed
/// gets near it.
const MAX_LOCAL_FILE_BYTES: u64 = 64 << 20;

/// A team file's bytes, `None` when it cannot be read as one: only a plain file, opened without
/// waiting (a FIFO under a key, planted or swapped in since the folder was listed, held the
/// Team screen for ever) and up to [`MAX_LOCAL_FILE_BYTES`].
fn read_local_copy(path: &Path) -> Option<Vec<u8>> {
    mneme_store::open::read_plain_capped(path, MAX_LOCAL_FILE_BYTES).ok().map(|(bytes, _)| bytes)
}

/// Every syncable file in `team/` plus every key the server held at the last sync, with where
/// each stands.
fn team_files(team_dir: &Path, st: &SyncState) -> Result<Vec<TeamFile>, ApiError> {
    let local = client::read_local(team_dir).map_err(sync_error)?;
    let secrets: BTreeMap<&str, &SkippedSecret> = local.skipped_secrets.iter().map(|s| (s.path.as_str(), s)).collect();
    let oversized: BTreeSet<&str> = local.oversized.iter().map(String::as_str).collect();
    let over_cap: BTreeSet<&str> = st.skipped_over_cap.iter().map(String::as_str).collect();
    let synced_before = st.last_pull.as_ref().is_some_and(|o| o.ok) || st.last_push.as_ref().is_some_and(|o| o.ok);

    let mut keys: Vec<String> = local.disk_keys.iter().cloned().collect();
    keys.extend(st.server_checksums.keys().filter(|k| !local.disk_keys.contains(*k)).cloned());
    js_sort(&mut keys);
    let mut files = Vec::with_capacity(keys.len());
    for key in keys {
        let server_hash = st.server_checksums.get(&key).cloned();
        if !local.disk_keys.contains(&key) {
            files.push(TeamFile {
                key,
                path: None,
                size: None,
                modified_ms: None,
                local_hash: None,
                server_hash,
                status: TeamFileStatus::ServerOnly,
                secret_label: None,
            });
            continue;
        }
        let path = team_dir.join(&key);
        let meta = std::fs::metadata(&path).ok();
        let modified_ms = meta
            .as_ref()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
            .map(|d| d.as_millis() as u64);
        let local_hash = match local.entries.get(&key) {
            Some(text) => Some(hash_content(text)),
            None => read_local_copy(&path).map(|b| hash_content(&String::from_utf8_lossy(&b))),
        };
        let secret = secrets.get(key.as_str());
        let status = if st.tombstoned_keys.contains_key(&key) {
            TeamFileStatus::Removed
        } else if secret.is_some() {
            TeamFileStatus::Secret
        } else if oversized.contains(key.as_str()) {
            TeamFileStatus::TooLarge
        } else if over_cap.contains(key.as_str()) {
            TeamFileStatus::OverCap
        } else if server_hash.is_some() && server_hash == local_hash {
            TeamFileStatus::Synced
        } else if local_hash.is_some() && st.kept_divergent.get(&key) == local_hash.as_ref() {
            TeamFileStatus::Stale
        } else if server_hash.is_some() {
            TeamFileStatus::Modified
        } else if synced_before {
            TeamFileStatus::New
        } else {
            TeamFileStatus::Unknown
        };
        files.push(TeamFile {
            key,
            path: Some(path),
            size: meta.map(|m| m.len()),
            modified_ms,
            local_hash,
            server_hash,
            status,
            secret_label: secret.map(|s| s.label.clone()),
        });
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each refusal of Mneme's own server says what to do about it, not "fix what the last
    /// push reported".
    #[test]
    fn the_servers_own_refusals_say_what_to_do() {
        for (reason, says) in [
            (CONTENT_FULL, "Shorten team files or delete"),
            (TOO_MANY_KEYS, "Push again"),
            (KEY_COLLISION, "Rename one of them"),
            (INVALID_CONTENT, "Save it as UTF-8"),
            (STORAGE_FULL, "purge"),
        ] {
            let text = recovery(reason, None);
            assert!(text.contains(says) && text.ends_with("turns automatic pushes back on."), "{reason}: {text}");
        }
        assert!(mneme_team::client::recoverable_by_unlink(CONTENT_FULL));
    }
}
