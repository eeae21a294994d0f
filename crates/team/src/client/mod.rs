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
//! conflict recorded: server-wins must not mean lost work. Pulls retry transient failures
//! four times on Claude Code's backoff; auth and parse errors are not retried.
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

mod files;
mod http;
mod retry;
pub mod state;

pub use files::{hash_content, js_sort, read_local, syncs_name, LocalFiles};
pub use http::{encode_uri_component, user_agent, Http};
pub use retry::{retry_delay, Sleeper, ThreadSleeper, BASE_DELAY_MS, MAX_DELAY_MS};
pub use state::{Conflict, ConflictKind, Outcome, SkippedSecret, Suppression, SyncState};

use crate::wire::{
    entry_put_bytes, PutBody, EMPTY_PUT_BYTES, MAX_CONFLICT_RETRIES, MAX_FILE_SIZE_BYTES, MAX_PUT_BODY_BYTES, MAX_RETRIES,
    TEAM_MEMORY_PATH, TOO_MANY_ENTRIES,
};
use http::{Failure, Reply, Request};
use mneme_core::Clock;
use mneme_store::memdir::{Memdir, TEAM_DIR};
use mneme_store::Environment;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

/// Why a sync step failed. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("Not signed in to the team server {server}. Run `mneme team login` first.")]
    NoAuth { server: String },
    #[error("No team server is configured. Run `mneme team login <URL>` or set TEAM_MEMORY_SYNC_URL.")]
    NoServer,
    #[error("This folder is not in a GitHub repository whose `origin` remote is on github.com; team memory is shared per repository, so there is nothing to sync.")]
    NoRepo,
    #[error("The team server refused the sign-in (HTTP {status}{}). Run `mneme team login` again.", server_says(.message))]
    Auth { status: u16, message: Option<String> },
    #[error("The team server forbids team memory for this account or repository (HTTP 403{}). Ask the team's lead for access.", server_says(.message))]
    Forbidden { message: Option<String> },
    #[error("The team server did not answer within 30 seconds. Try again later.")]
    Timeout,
    #[error("Cannot reach the team server at {server}: {detail}. Check the address and your network.")]
    Network { server: String, detail: String },
    #[error("The team server answered HTTP {status}{}.", server_says(.message))]
    Http { status: u16, code: Option<String>, message: Option<String> },
    #[error("The team server refused this push: it holds at most {max_entries} entries and got {received}. Remove or merge some team memory files; later pushes send only the first {max_entries} in sorted order.")]
    TooManyEntries { max_entries: u64, received: u64 },
    #[error("The team server's answer could not be read ({detail}). Check that the server URL points at a team memory server.")]
    Parse { detail: String },
    #[error("Teammates kept changing the team memory while this push retried ({attempts} attempts). Run the push again.")]
    Conflict { attempts: u32 },
    #[error("The request to the team server failed: {detail}.")]
    Transport { detail: String },
    #[error("{} escapes its canonical location ({detail}); sync refuses to follow it. Replace the symbolic link with a real folder.", .path.display())]
    Escapes { path: PathBuf, detail: String },
    #[error("Could not {action} {}: {source}", .path.display())]
    Io { action: &'static str, path: PathBuf, #[source] source: std::io::Error },
    #[error("Mneme's team sync state file {} could not be used: {detail}", .path.display())]
    State { path: PathBuf, detail: String },
    #[error("The OS keyring failed: {0}")]
    Keychain(#[from] mneme_keychain::KeychainError),
}

fn server_says(message: &Option<String>) -> String {
    match message {
        Some(m) if !m.is_empty() => format!(": {m}"),
        _ => String::new(),
    }
}

impl SyncError {
    /// Claude Code's error class for this failure: `no_oauth`, `no_repo`, `auth`, `forbidden`,
    /// `timeout`, `network`, `http`, `parse`, `conflict`, `local`.
    pub fn class(&self) -> &'static str {
        match self {
            SyncError::NoAuth { .. } | SyncError::NoServer => "no_oauth",
            SyncError::NoRepo => "no_repo",
            SyncError::Auth { .. } | SyncError::Keychain(_) => "auth",
            SyncError::Forbidden { .. } => "forbidden",
            SyncError::Timeout => "timeout",
            SyncError::Network { .. } => "network",
            SyncError::Http { .. } | SyncError::TooManyEntries { .. } | SyncError::Transport { .. } => "http",
            SyncError::Parse { .. } => "parse",
            SyncError::Conflict { .. } => "conflict",
            SyncError::Escapes { .. } | SyncError::Io { .. } | SyncError::State { .. } => "local",
        }
    }

    /// The HTTP status behind this failure, when there was one.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            SyncError::Auth { status, .. } | SyncError::Http { status, .. } => Some(*status),
            SyncError::Forbidden { .. } => Some(403),
            SyncError::TooManyEntries { .. } => Some(413),
            _ => None,
        }
    }

    /// Claude Code's suppression reason: the server's error code, else `http_<status>`, else
    /// the error class.
    pub fn suppression_reason(&self) -> String {
        match self {
            SyncError::Http { code: Some(c), .. } => c.clone(),
            SyncError::TooManyEntries { .. } => TOO_MANY_ENTRIES.to_string(),
            other => match other.http_status() {
                Some(s) => format!("http_{s}"),
                None => other.class().to_string(),
            },
        }
    }

    /// Whether automatic pushes stop after this failure: no sign-in, no repository, or any
    /// 4xx except 409 and 429 (Claude Code's `isPermanentFailure`).
    pub fn is_permanent(&self) -> bool {
        matches!(self, SyncError::NoAuth { .. } | SyncError::NoServer | SyncError::NoRepo)
            || self.http_status().is_some_and(|s| (400..500).contains(&s) && s != 409 && s != 429)
    }
}

/// Suppression reasons an unlink in `team/` clears (2.1.197: the too-many-entries family,
/// since deleting a file is how a user gets back under the cap).
pub fn recoverable_by_unlink(reason: &str) -> bool {
    reason == TOO_MANY_ENTRIES || reason == "http_413"
}

/// Supplies the bearer token for each request (refreshing it first when it is about to
/// expire); `None` when nobody is signed in.
pub trait TokenSource: Send + Sync {
    fn access_token(&self) -> Result<Option<String>, SyncError>;
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

/// What a pull did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PullReport {
    /// 304: nothing was written.
    pub not_modified: bool,
    /// 404: the server holds nothing for this repository yet.
    pub server_empty: bool,
    /// Entries the server holds.
    pub entry_count: usize,
    /// Keys written to disk, sorted.
    pub written: Vec<String>,
    /// Keys the server deleted whose local file went to the trash.
    pub trashed: Vec<String>,
    /// Keys not written (invalid, oversized, or failed to write).
    pub skipped: Vec<SkippedKey>,
    /// Local edits replaced by the server's version (copies are in the trash).
    pub conflicts: Vec<Conflict>,
}

/// What a push did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PushReport {
    /// Keys uploaded, in upload order.
    pub uploaded: Vec<String>,
    /// PUT requests that carried them.
    pub batches: usize,
    /// Files left out because the scanner found a secret.
    pub skipped_secrets: Vec<SkippedSecret>,
    /// Files left out by the learned entry cap.
    pub skipped_over_cap: Vec<String>,
    /// Files left out for being over 250,000 bytes.
    pub oversized: Vec<String>,
    /// Files left out because their key breaks Mneme's strict key policy, with the reason.
    pub refused_keys: Vec<SkippedKey>,
    /// Keys the server deleted that exist locally; never uploaded.
    pub tombstoned: Vec<String>,
    /// 412 rounds it took.
    pub conflict_retries: u32,
    /// Keys where this push replaced a teammate's newer version.
    pub conflicts: Vec<Conflict>,
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

/// The 200 body of a pull, as leniently as Claude Code's schema reads it (`organizationId`
/// and `version` optional, unknown fields ignored).
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PullBody {
    #[allow(dead_code)]
    repo: String,
    #[serde(default)]
    #[allow(dead_code)]
    version: Option<f64>,
    #[allow(dead_code)]
    last_modified: String,
    checksum: String,
    content: PullContent,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PullContent {
    entries: BTreeMap<String, String>,
    #[serde(default)]
    entry_checksums: Option<BTreeMap<String, String>>,
    #[serde(default)]
    deleted_entries: Option<BTreeMap<String, f64>>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct HashesBody {
    #[serde(default)]
    checksum: Option<String>,
    #[serde(default)]
    entry_checksums: Option<BTreeMap<String, String>>,
    #[serde(default)]
    deleted_entries: Option<BTreeMap<String, f64>>,
}

#[derive(Deserialize)]
struct PutReply {
    #[serde(default)]
    checksum: Option<String>,
}

/// `{error:{type?, message?, details?:{error_code?, max_entries?, received_entries?}}}`.
#[derive(Deserialize, Default)]
struct ServerError {
    #[serde(default)]
    error: Option<ServerErrorObject>,
}

#[derive(Deserialize, Default)]
struct ServerErrorObject {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    details: Option<ServerErrorDetails>,
}

#[derive(Deserialize, Default)]
struct ServerErrorDetails {
    #[serde(default)]
    error_code: Option<String>,
    #[serde(default)]
    max_entries: Option<f64>,
    #[serde(default)]
    received_entries: Option<f64>,
}

/// Claude Code truncates server messages to 256 characters.
fn server_error(body: &str) -> (Option<String>, Option<String>) {
    let e = serde_json::from_str::<ServerError>(body).ok().and_then(|e| e.error).unwrap_or_default();
    let cut = |s: String| s.chars().take(256).collect::<String>();
    (e.message.map(cut), e.details.and_then(|d| d.error_code).map(cut))
}

/// The structured 413: `error_code` is the too-many-entries code and both counts are
/// positive integers; anything else is an ordinary failure.
fn too_many_entries(body: &str) -> Option<(u64, u64)> {
    let d = serde_json::from_str::<ServerError>(body).ok()?.error?.details?;
    let int = |v: Option<f64>| v.filter(|n| n.fract() == 0.0 && *n > 0.0).map(|n| n as u64);
    if d.error_code.as_deref() != Some(TOO_MANY_ENTRIES) {
        return None;
    }
    Some((int(d.max_entries)?, int(d.received_entries)?))
}

/// Gives an HTTP failure its meaning: 401 → auth, 403 → forbidden, a structured 413 → the
/// learned cap, other statuses with the server's message and error code.
pub(crate) fn classify_failure(server: &str, f: Failure) -> SyncError {
    match f {
        Failure::Auth { status: 403, body } => SyncError::Forbidden { message: server_error(&body).0 },
        Failure::Auth { status, body } => SyncError::Auth { status, message: server_error(&body).0 },
        Failure::Timeout => SyncError::Timeout,
        Failure::Network { detail } => SyncError::Network { server: server.to_string(), detail },
        Failure::Http { status, body } => {
            if status == 413 {
                if let Some((max_entries, received)) = too_many_entries(&body) {
                    return SyncError::TooManyEntries { max_entries, received };
                }
            }
            let (message, code) = server_error(&body);
            SyncError::Http { status, code, message }
        }
        Failure::Other { detail } => SyncError::Transport { detail },
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
            http: Http::default(),
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

    /// The persisted state (fresh when none is stored for this server and repository).
    pub fn state(&self) -> Result<SyncState, SyncError> {
        let (server, repo) = self.server_and_repo()?;
        state::load(&self.state_path, &server, &repo)
    }

    fn server_and_repo(&self) -> Result<(String, String), SyncError> {
        let server = self.target.server_url.clone().ok_or(SyncError::NoServer)?;
        let repo = self.target.repo.clone().ok_or(SyncError::NoRepo)?;
        Ok((server, repo))
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

    /// Pulls with the ETag cache (`If-None-Match`), as Claude Code's periodic pulls do.
    pub fn pull(&self) -> Result<PullReport, SyncError> {
        self.pull_with(false)
    }

    /// Pulls everything regardless of the ETag (Claude Code's start-of-session pull).
    pub fn pull_fresh(&self) -> Result<PullReport, SyncError> {
        self.pull_with(true)
    }

    fn pull_with(&self, skip_etag: bool) -> Result<PullReport, SyncError> {
        let _busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        let (server, repo) = self.server_and_repo()?;
        let mut st = state::load(&self.state_path, &server, &repo)?;
        let result = self.pull_inner(&server, &repo, &mut st, skip_etag);
        st.last_pull = Some(match &result {
            Ok(r) => Outcome { at_ms: self.now_ms(), ok: true, summary: r.summary(), error_class: None },
            Err(e) => Outcome { at_ms: self.now_ms(), ok: false, summary: e.to_string(), error_class: Some(e.class().into()) },
        });
        state::save(&self.state_path, &st)?;
        result
    }

    /// `GET` with Claude Code's retries: up to four attempts, auth and parse errors at once.
    fn fetch(&self, server: &str, repo: &str, etag: Option<&str>) -> Result<Reply, SyncError> {
        let url = self.url(server, repo, None);
        let mut attempt = 1;
        loop {
            let result = self.token(server).and_then(|token| {
                let mut req = Request::new("GET", &url);
                req.token = Some(&token);
                if let Some(e) = etag {
                    req.headers.push(("If-None-Match", format!("\"{}\"", strip_quotes(e))));
                }
                self.http.send(req, &[200, 304, 404]).map_err(|f| self.failure(server, f))
            });
            let reply = match result {
                Ok(r) => r,
                Err(e) => {
                    let final_ = matches!(e, SyncError::NoAuth { .. } | SyncError::Auth { .. } | SyncError::Forbidden { .. } | SyncError::Keychain(_));
                    if final_ || attempt > MAX_RETRIES {
                        return Err(e);
                    }
                    self.sleeper.sleep(retry_delay(attempt, self.sleeper.jitter()));
                    attempt += 1;
                    continue;
                }
            };
            return Ok(reply);
        }
    }

    fn pull_inner(&self, server: &str, repo: &str, st: &mut SyncState, skip_etag: bool) -> Result<PullReport, SyncError> {
        self.token(server)?;
        files::check_canonical(&self.target.memory_dir)?;
        let etag = if skip_etag { None } else { st.last_known_checksum.clone() };
        let reply = self.fetch(server, repo, etag.as_deref())?;
        let mut report = PullReport::default();
        match reply.status {
            304 => {
                report.not_modified = true;
                return Ok(report);
            }
            404 => {
                st.last_known_checksum = None;
                st.server_checksums.clear();
                st.tombstoned_keys.clear();
                st.kept_divergent.clear();
                report.server_empty = true;
                return Ok(report);
            }
            _ => {}
        }
        let body: PullBody = serde_json::from_str(&reply.body).map_err(|e| SyncError::Parse { detail: e.to_string() })?;
        let checksum = Some(body.checksum.clone())
            .filter(|c| !c.is_empty())
            .or_else(|| reply.etag.as_deref().map(|e| e.trim_start_matches('"').trim_end_matches('"').to_string()))
            .filter(|c| !c.is_empty());
        if checksum.is_some() {
            st.last_known_checksum = checksum;
        }
        let deleted = body.content.deleted_entries.unwrap_or_default();
        st.tombstoned_keys = deleted.iter().map(|(k, v)| (k.clone(), *v as i64)).collect();
        let prior = std::mem::take(&mut st.server_checksums);
        st.server_checksums = body.content.entry_checksums.unwrap_or_default();
        report.entry_count = body.content.entries.len();

        let team_dir = self.target.team_dir();
        // The pull brings every held-back key up to the server's version.
        st.kept_divergent.clear();
        let mut unwritten = BTreeSet::new();
        for (key, content) in &body.content.entries {
            match self.write_entry(&team_dir, key, content, &prior) {
                Ok(WriteOutcome::Matched) => {}
                Ok(WriteOutcome::Written(conflict)) => {
                    report.written.push(key.clone());
                    if let Some(c) = conflict {
                        st.record_conflict(c.clone());
                        report.conflicts.push(c);
                    }
                }
                Err(why) => {
                    unwritten.insert(key.clone());
                    report.skipped.push(SkippedKey { key: key.clone(), reason: why.to_string() });
                }
            }
        }
        for key in deleted.keys() {
            if let Some(entry) = self.trash_tombstoned(&team_dir, key) {
                let c = Conflict { key: key.clone(), at_ms: self.now_ms(), kind: ConflictKind::DeletedByTeammate, trash_id: Some(entry) };
                st.record_conflict(c);
                report.trashed.push(key.clone());
            }
        }
        for key in unwritten {
            st.server_checksums.remove(&key);
        }
        Ok(report)
    }

    /// Writes one pulled entry if it differs from the file; `Err` holds why it was skipped.
    fn write_entry(
        &self,
        team_dir: &Path,
        key: &str,
        content: &str,
        prior: &BTreeMap<String, String>,
    ) -> Result<WriteOutcome, EntrySkipped> {
        // Mneme's strict key policy first: a key spelled non-canonically, with control or
        // invisible characters, or impossible on Windows is refused, never normalised.
        let path = crate::keys::validate_strict_team_mem_key(team_dir, key)?;
        if content.len() as u64 > MAX_FILE_SIZE_BYTES {
            return Err(EntrySkipped::TooLarge { bytes: content.len() });
        }
        let mut conflict = None;
        if let Ok(bytes) = std::fs::read(&path) {
            if bytes == content.as_bytes() {
                return Ok(WriteOutcome::Matched);
            }
            // A local version the server never had: keep it before the server's replaces it.
            let local_hash = hash_content(&String::from_utf8_lossy(&bytes));
            if prior.get(key) != Some(&local_hash) {
                let trash_id = self.memdir.trash_copy(&format!("{TEAM_DIR}/{key}")).ok().map(|e| e.id);
                conflict = Some(Conflict { key: key.to_string(), at_ms: self.now_ms(), kind: ConflictKind::PulledOverLocalEdit, trash_id });
            }
        }
        crate::keys::write_team_file(team_dir, key, content.as_bytes())?;
        Ok(WriteOutcome::Written(conflict))
    }

    /// Moves a tombstoned key's local file to the trash; the trash id when one was moved.
    fn trash_tombstoned(&self, team_dir: &Path, key: &str) -> Option<String> {
        let path = crate::keys::validate_strict_team_mem_key(team_dir, key).ok()?;
        std::fs::symlink_metadata(&path).ok()?;
        self.memdir.trash_file(&format!("{TEAM_DIR}/{key}")).ok().map(|e| e.id)
    }

    /// Pushes the local delta.
    pub fn push(&self) -> Result<PushReport, SyncError> {
        let _busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        let (server, repo) = self.server_and_repo()?;
        let mut st = state::load(&self.state_path, &server, &repo)?;
        let result = self.push_inner(&server, &repo, &mut st);
        let now = self.now_ms();
        match &result {
            Ok(r) => {
                st.last_push = Some(Outcome { at_ms: now, ok: true, summary: r.summary(), error_class: None });
                st.suppressed = None;
            }
            Err(e) => {
                st.last_push = Some(Outcome { at_ms: now, ok: false, summary: e.to_string(), error_class: Some(e.class().into()) });
                if e.is_permanent() {
                    st.suppressed = Some(Suppression { reason: e.suppression_reason(), at_ms: now });
                }
            }
        }
        state::save(&self.state_path, &st)?;
        result
    }

    /// Claude Code's `syncTeamMemory`: a pull that ignores the ETag, then a push.
    pub fn sync(&self) -> Result<(PullReport, PushReport), SyncError> {
        let pulled = self.pull_fresh()?;
        let pushed = self.push()?;
        Ok((pulled, pushed))
    }

    fn push_inner(&self, server: &str, repo: &str, st: &mut SyncState) -> Result<PushReport, SyncError> {
        // Signed out is `no_oauth` even when there is nothing to send, as in Claude Code.
        self.token(server)?;
        files::check_canonical(&self.target.memory_dir)?;
        let local = files::read_local(&self.target.team_dir())?;
        let mut report = PushReport {
            skipped_secrets: local.skipped_secrets.clone(),
            oversized: local.oversized.clone(),
            refused_keys: local.refused_keys.clone(),
            ..Default::default()
        };
        st.skipped_for_secrets = local.skipped_secrets.clone();

        let mut keys: Vec<String> = local.entries.keys().cloned().collect();
        js_sort(&mut keys);
        if let Some(cap) = st.server_max_entries {
            let cap = usize::try_from(cap).unwrap_or(usize::MAX);
            if keys.len() > cap {
                report.skipped_over_cap = keys.split_off(cap);
            }
        }
        st.skipped_over_cap = report.skipped_over_cap.clone();

        // key → hash of what may be sent; tombstoned keys are never re-uploaded.
        let mut hashes: BTreeMap<String, String> = BTreeMap::new();
        for k in &keys {
            if st.tombstoned_keys.contains_key(k) {
                report.tombstoned.push(k.clone());
                continue;
            }
            hashes.insert(k.clone(), hash_content(&local.entries[k]));
        }

        for round in 0..=MAX_CONFLICT_RETRIES {
            let delta: BTreeMap<String, String> = hashes
                .iter()
                .filter(|(k, h)| st.server_checksums.get(*k) != Some(*h) && st.kept_divergent.get(*k) != Some(*h))
                .map(|(k, _)| (k.clone(), local.entries[k].clone()))
                .collect();
            if delta.is_empty() {
                return Ok(report);
            }
            let batches = batch_by_bytes(&delta);
            let mut conflict = false;
            for batch in &batches {
                let put = self.put(server, repo, st.last_known_checksum.as_deref(), batch);
                if let Err(SyncError::TooManyEntries { max_entries, .. }) = &put {
                    st.server_max_entries = Some(*max_entries);
                }
                match put? {
                    PutOutcome::Committed(checksum) => {
                        if let Some(c) = checksum {
                            st.last_known_checksum = Some(c);
                        }
                        for k in batch.keys() {
                            st.server_checksums.insert(k.clone(), hashes[k].clone());
                            st.kept_divergent.remove(k);
                            report.uploaded.push(k.clone());
                        }
                        report.batches += 1;
                    }
                    PutOutcome::Conflict => {
                        conflict = true;
                        break;
                    }
                }
            }
            if !conflict {
                return Ok(report);
            }
            if round >= MAX_CONFLICT_RETRIES {
                return Err(SyncError::Conflict { attempts: round + 1 });
            }
            report.conflict_retries += 1;
            let probe = self.probe(server, repo, st)?;
            // Keep only keys this client knew about or has on disk; a teammate's new keys
            // arrive with the next pull.
            let before = std::mem::take(&mut st.server_checksums);
            for (k, h) in &probe.entry_checksums {
                if before.contains_key(k) || local.disk_keys.contains(k) {
                    st.server_checksums.insert(k.clone(), h.clone());
                }
            }
            for (k, h) in &hashes {
                let theirs = probe.entry_checksums.get(k);
                if theirs.is_none() || theirs == before.get(k) || theirs == Some(h) {
                    continue;
                }
                if before.get(k) == Some(h) {
                    // Unchanged here since the last sync, changed by a teammate: the local copy
                    // is merely stale. Claude Code 2.1.197 pushes it anyway for team memory
                    // (reverting the teammate); Mneme holds it back, as Claude Code does for
                    // personal memory, until it is edited here or the next pull refreshes it.
                    st.kept_divergent.insert(k.clone(), h.clone());
                    continue;
                }
                let c = Conflict { key: k.clone(), at_ms: self.now_ms(), kind: ConflictKind::PushedOverTeammate, trash_id: None };
                st.record_conflict(c.clone());
                report.conflicts.push(c);
            }
            for (k, at) in probe.deleted_entries {
                st.tombstoned_keys.insert(k.clone(), at);
                if hashes.remove(&k).is_some() {
                    report.tombstoned.push(k);
                }
            }
        }
        Err(SyncError::Conflict { attempts: MAX_CONFLICT_RETRIES + 1 })
    }

    fn put(&self, server: &str, repo: &str, if_match: Option<&str>, entries: &BTreeMap<String, String>) -> Result<PutOutcome, SyncError> {
        let token = self.token(server)?;
        let url = self.url(server, repo, None);
        let body = PutBody { entries: entries.clone(), soft_delete_keys: Vec::new() };
        let mut req = Request::new("PUT", &url);
        req.token = Some(&token);
        req.json = Some(serde_json::to_string(&body).map_err(|e| SyncError::Parse { detail: e.to_string() })?);
        if let Some(c) = if_match {
            req.headers.push(("If-Match", format!("\"{}\"", strip_quotes(c))));
        }
        let reply = self.http.send(req, &[200, 412]).map_err(|f| self.failure(server, f))?;
        if reply.status == 412 {
            return Ok(PutOutcome::Conflict);
        }
        let checksum = serde_json::from_str::<PutReply>(&reply.body).ok().and_then(|r| r.checksum).filter(|c| !c.is_empty());
        Ok(PutOutcome::Committed(checksum))
    }

    /// `GET …&view=hashes`; updates the last known checksum as Claude Code does.
    fn probe(&self, server: &str, repo: &str, st: &mut SyncState) -> Result<Probe, SyncError> {
        let token = self.token(server)?;
        let url = self.url(server, repo, Some("hashes"));
        let mut req = Request::new("GET", &url);
        req.token = Some(&token);
        let reply = self.http.send(req, &[200, 404]).map_err(|f| self.failure(server, f))?;
        if reply.status == 404 {
            st.last_known_checksum = None;
            return Ok(Probe::default());
        }
        let body: Option<HashesBody> = serde_json::from_str(&reply.body).ok();
        let checksum = body
            .as_ref()
            .and_then(|b| b.checksum.clone())
            .filter(|c| !c.is_empty())
            .or_else(|| reply.etag.as_deref().map(|e| e.trim_start_matches('"').trim_end_matches('"').to_string()));
        let Some(body) = body else {
            return Err(SyncError::Parse { detail: "the hashes view did not parse".into() });
        };
        let Some(entry_checksums) = body.entry_checksums else {
            return Err(SyncError::Parse { detail: "the server did not return entryChecksums (?view=hashes unsupported)".into() });
        };
        if let Some(c) = checksum.filter(|c| !c.is_empty()) {
            st.last_known_checksum = Some(c);
        }
        let deleted_entries = body.deleted_entries.unwrap_or_default().into_iter().map(|(k, v)| (k, v as i64)).collect();
        Ok(Probe { entry_checksums, deleted_entries })
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

    /// The HTTP client, server, repository and a bearer token, for the server's own API.
    pub(crate) fn authorized(&self) -> Result<(&Http, String, String, String), SyncError> {
        let (server, repo) = self.server_and_repo()?;
        let token = self.token(&server)?;
        Ok((&self.http, server, repo, token))
    }
}

enum WriteOutcome {
    Matched,
    Written(Option<Conflict>),
}

/// Why a pulled entry was not written (reported per key; the pull goes on).
#[derive(Debug, thiserror::Error)]
enum EntrySkipped {
    #[error(transparent)]
    Invalid(#[from] crate::keys::StrictKeyError),
    #[error("the server's copy is {bytes} bytes, over the {MAX_FILE_SIZE_BYTES}-byte limit")]
    TooLarge { bytes: usize },
    #[error(transparent)]
    Write(#[from] crate::keys::TeamFileError),
}

enum PutOutcome {
    Committed(Option<String>),
    Conflict,
}

#[derive(Default)]
struct Probe {
    entry_checksums: BTreeMap<String, String>,
    deleted_entries: BTreeMap<String, i64>,
}

/// `batchDeltaByBytes`: keys in JavaScript sort order, greedily packed so each PUT body stays
/// within 200,000 bytes as Claude Code counts them; an entry too big for any batch goes alone.
pub fn batch_by_bytes(delta: &BTreeMap<String, String>) -> Vec<BTreeMap<String, String>> {
    let mut keys: Vec<String> = delta.keys().cloned().collect();
    if keys.is_empty() {
        return Vec::new();
    }
    js_sort(&mut keys);
    let mut batches = Vec::new();
    let mut current = BTreeMap::new();
    let mut size = EMPTY_PUT_BYTES;
    for k in keys {
        let v = &delta[&k];
        let add = entry_put_bytes(&k, v);
        if size + add > MAX_PUT_BODY_BYTES && !current.is_empty() {
            batches.push(std::mem::take(&mut current));
            size = EMPTY_PUT_BYTES;
        }
        size += add;
        current.insert(k, v.clone());
    }
    batches.push(current);
    batches
}

impl PullReport {
    /// One line for people.
    pub fn summary(&self) -> String {
        if self.not_modified {
            return "not modified".into();
        }
        if self.server_empty {
            return "the server holds no team memory for this repository yet".into();
        }
        let mut s = format!("{} of {} entries written", self.written.len(), self.entry_count);
        if !self.trashed.is_empty() {
            s.push_str(&format!(", {} deleted by teammates moved to the trash", self.trashed.len()));
        }
        if !self.skipped.is_empty() {
            s.push_str(&format!(", {} skipped", self.skipped.len()));
        }
        if !self.conflicts.is_empty() {
            s.push_str(&format!(", {} local edits kept in the trash", self.conflicts.len()));
        }
        s
    }
}

impl PushReport {
    /// One line for people.
    pub fn summary(&self) -> String {
        let mut s = if self.uploaded.is_empty() {
            "nothing to upload".to_string()
        } else {
            format!("{} files uploaded in {} request{}", self.uploaded.len(), self.batches, if self.batches == 1 { "" } else { "s" })
        };
        if !self.skipped_secrets.is_empty() {
            let list: Vec<String> = self.skipped_secrets.iter().map(SkippedSecret::describe).collect();
            s.push_str(&format!(
                "; {} file(s) skipped due to detected secrets: {}. Remove the secret(s) to enable sync for these files.",
                self.skipped_secrets.len(),
                list.join(", ")
            ));
        }
        if !self.skipped_over_cap.is_empty() {
            s.push_str(&format!("; {} file(s) over the server's entry cap will not sync: {}", self.skipped_over_cap.len(), self.skipped_over_cap.join(", ")));
        }
        if !self.oversized.is_empty() {
            s.push_str(&format!("; {} file(s) over 250,000 bytes skipped", self.oversized.len()));
        }
        if !self.refused_keys.is_empty() {
            let list: Vec<String> = self.refused_keys.iter().map(|k| k.reason.clone()).collect();
            s.push_str(&format!("; {} file(s) not synced because of their names: {}", self.refused_keys.len(), list.join("; ")));
        }
        s
    }
}

/// The memory folder and repository of the project at `cwd`, with the server from
/// `TEAM_MEMORY_SYNC_URL` or Mneme's setting: what the CLI and app sync.
/// A client for `target` signed in with the token kept in the OS keyring (the usual client;
/// tests and the api may pass their own credential store to [`SyncClient::new`] instead).
pub fn keyring_client(target: SyncTarget, env: &Environment, clock: Arc<dyn Clock>) -> SyncClient {
    let server = target.server_url.clone().unwrap_or_default();
    let store = Arc::new(crate::auth::KeyringStore::from_env(env));
    let session = crate::auth::Session::new(&server, store, Http::default(), clock.clone());
    SyncClient::new(target, env, clock, Arc::new(session))
}

pub fn resolve_target(env: &Environment, cwd: &Path) -> SyncTarget {
    let root = mneme_store::paths::project_root(cwd);
    let settings = mneme_store::settings::load_settings(env, &root, mneme_store::settings::EnabledSources::all(), None);
    let memory_dir = mneme_store::paths::resolve_auto_mem_dir(env, &settings, &root).dir;
    SyncTarget { memory_dir, repo: crate::repo::github_repo(cwd), server_url: crate::config::server_url(env) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_follow_claude_code() {
        let mut delta = BTreeMap::new();
        assert!(batch_by_bytes(&delta).is_empty());
        // Three entries of ~90 KB: two fit in one 200 KB body, the third starts a new one.
        for k in ["c.md", "a.md", "b.md"] {
            delta.insert(k.to_string(), "x".repeat(90_000));
        }
        let b = batch_by_bytes(&delta);
        assert_eq!(b.iter().map(|m| m.keys().cloned().collect::<Vec<_>>()).collect::<Vec<_>>(), [vec!["a.md", "b.md"], vec!["c.md"]]);
        // The exact boundary: a body counted at exactly 200,000 bytes still fits.
        let mut exact = BTreeMap::new();
        let fill = MAX_PUT_BODY_BYTES - EMPTY_PUT_BYTES - entry_put_bytes("a", "");
        exact.insert("a".to_string(), "y".repeat(fill));
        exact.insert("b".to_string(), String::new());
        let b = batch_by_bytes(&exact);
        assert_eq!(b.len(), 2, "a alone fills the body; b needs its own");
        let body = serde_json::to_string(&PutBody { entries: b[0].clone(), soft_delete_keys: vec![] }).unwrap();
        // Claude Code counts a comma after every entry, the last included, so the real body
        // is one byte under the count.
        assert_eq!(body.len() + 1, MAX_PUT_BODY_BYTES);
        // An entry bigger than any body goes alone.
        let mut big = BTreeMap::new();
        big.insert("a".to_string(), "z".repeat(MAX_PUT_BODY_BYTES));
        big.insert("b".to_string(), "small".to_string());
        assert_eq!(batch_by_bytes(&big).len(), 2);
    }

    #[test]
    fn permanence_and_reasons_follow_the_watcher() {
        let http = |status| SyncError::Http { status, code: None, message: None };
        assert!(http(400).is_permanent());
        assert!(http(404).is_permanent());
        assert!(!http(409).is_permanent());
        assert!(!http(429).is_permanent());
        assert!(!http(500).is_permanent());
        assert!(!SyncError::Timeout.is_permanent());
        assert!(SyncError::NoRepo.is_permanent());
        assert!(SyncError::NoAuth { server: "s".into() }.is_permanent());
        assert!(SyncError::Auth { status: 401, message: None }.is_permanent());
        assert!(!SyncError::Conflict { attempts: 3 }.is_permanent());
        assert_eq!(http(400).suppression_reason(), "http_400");
        assert_eq!(SyncError::Http { status: 403, code: Some("team_memory_group_acl_denied".into()), message: None }.suppression_reason(), "team_memory_group_acl_denied");
        assert_eq!(SyncError::TooManyEntries { max_entries: 2, received: 3 }.suppression_reason(), TOO_MANY_ENTRIES);
        assert_eq!(SyncError::NoRepo.suppression_reason(), "no_repo");
        assert_eq!(SyncError::NoServer.suppression_reason(), "no_oauth");
        assert!(recoverable_by_unlink(TOO_MANY_ENTRIES) && recoverable_by_unlink("http_413"));
        assert!(!recoverable_by_unlink("http_400"));
    }

    #[test]
    fn structured_413_needs_positive_integers() {
        let body = |max: &str, rec: &str| format!(r#"{{"error":{{"details":{{"error_code":"{TOO_MANY_ENTRIES}","max_entries":{max},"received_entries":{rec}}}}}}}"#);
        assert_eq!(too_many_entries(&body("2", "5")), Some((2, 5)));
        assert_eq!(too_many_entries(&body("0", "5")), None);
        assert_eq!(too_many_entries(&body("2.5", "5")), None);
        assert_eq!(too_many_entries(r#"{"error":{"details":{"error_code":"other","max_entries":2,"received_entries":3}}}"#), None);
        assert_eq!(too_many_entries("<html>413</html>"), None);
    }
}
