//! What the client remembers between runs, per memory folder: Claude Code's in-session
//! `SyncState` (`lastKnownChecksum`, `serverChecksums`, `serverMaxEntries`, the tombstoned
//! keys) plus what the app shows — when the last pull and push ran and how they ended, the
//! files held back because they hold a secret or exceed the server's cap, conflicts, and
//! whether automatic pushes are suppressed.
//!
//! It lives in Mneme's data dir at `team-sync/<sanitized memory folder>.json`, never in the
//! memory folder. It is keyed by the memory folder, not only by the repository: a second
//! clone of the same repository has its own team folder, and sharing one `lastKnownChecksum`
//! would make a 304 skip writing into the folder that has never been filled.

use super::SyncError;
use mneme_core::sanitize::sanitize_path;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

const STATE_VERSION: u32 = 1;
/// Conflicts kept for display; older ones fall off.
pub const MAX_CONFLICTS: usize = 50;
/// How many pushes of the same content in a row a server may acknowledge and then lose before
/// automatic pushes stop sending it: past that, sending it again is not going to help, and
/// every pull re-pushing it for ever would hide a server that is losing work.
pub const MAX_LOST_PUSHES: u32 = 3;

/// How one pull or push ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Outcome {
    /// Milliseconds since the epoch (the injected clock).
    pub at_ms: u64,
    pub ok: bool,
    /// One line for people: "wrote 3 files", "not modified", or the error.
    pub summary: String,
    /// The error class when it failed (`auth`, `timeout`, `network`, `http`, …).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_class: Option<String>,
}

/// A file a push left out because the secret scanner flagged it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkippedSecret {
    /// The key (path relative to `team/`).
    pub path: String,
    pub rule_id: String,
    pub label: String,
}

impl SkippedSecret {
    /// Claude Code's wording: `"<relPath>" (<label>)`.
    pub fn describe(&self) -> String {
        format!("\"{}\" ({})", self.path, self.label)
    }
}

/// Where the two sides disagreed about one key, and what Mneme did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Conflict {
    pub key: String,
    pub at_ms: u64,
    pub kind: ConflictKind,
    /// The trash entry holding the local version that was replaced, when one was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trash_id: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ConflictKind {
    /// A pull replaced a local edit that had never reached the server (server wins per key);
    /// the local version is in Mneme's trash.
    PulledOverLocalEdit,
    /// After a 412, a teammate had changed the same key; this push replaced their version
    /// (local wins for edited keys). The server's history still has theirs.
    PushedOverTeammate,
    /// The server deleted a key that still existed here; the local file went to the trash.
    DeletedByTeammate,
}

/// Why automatic pushes stopped (Claude Code suppresses them for the session after a
/// permanent failure).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Suppression {
    /// `no_oauth`, `no_repo`, `http_<status>`, or the server's error code.
    pub reason: String,
    pub at_ms: u64,
}

/// A key whose acknowledged push the server then lost, with how often in a row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LostPush {
    /// The hash of the content that was lost; other content starts the count afresh.
    pub hash: String,
    /// Pushes of this content in a row the server acknowledged and then lost.
    pub times: u32,
    /// Sent again since the last loss was counted: the next pull that finds it missing counts
    /// once more (several pulls finding one lost push count it once).
    #[serde(default)]
    pub resent: bool,
}

/// The persisted state of one memory folder's sync.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SyncState {
    pub version: u32,
    /// The server and repository this state belongs to; a different pair starts afresh.
    pub server_url: String,
    pub repo: String,
    /// The whole-repository checksum of the last pull or push (`If-None-Match`/`If-Match`).
    #[serde(default)]
    pub last_known_checksum: Option<String>,
    /// What the server holds per key, as last learned (`sha256:<hex>`).
    #[serde(default)]
    pub server_checksums: BTreeMap<String, String>,
    /// The entry cap learned from a structured 413.
    #[serde(default)]
    pub server_max_entries: Option<u64>,
    /// Keys the server reported deleted (key → deletion time in ms); never re-uploaded.
    #[serde(default)]
    pub tombstoned_keys: BTreeMap<String, i64>,
    /// Keys held back from pushes (key → the local hash held back): the local copy is stale
    /// (unchanged here, changed by a teammate). Cleared by a pull or an edit here.
    #[serde(default)]
    pub kept_divergent: BTreeMap<String, String>,
    /// Keys this client pushed and the server acknowledged (key → the hash sent) that no pull
    /// has yet shown the server holding. Until one does, the acknowledgement is all there is:
    /// a server that acknowledged a push and then lost it (a crash before its commit, a restore
    /// from backup, a hostile server) would otherwise have the next pull write its older copy
    /// over the only one, or hold back a file it no longer has. So a pull treats such a file as
    /// a local edit (kept in the trash before it is replaced) and reports one missing from its
    /// answer, which the next push sends again.
    #[serde(default)]
    pub unconfirmed_pushes: BTreeMap<String, String>,
    /// Keys whose acknowledged pushes the server lost, with how many times in a row (see
    /// [`LostPush`]). At [`MAX_LOST_PUSHES`] automatic pushes stop sending that content; a push
    /// made by hand sends it and starts the count again, an edit here forgets it, a pull that
    /// shows the server holding it ends it. The local file is left as it is throughout.
    #[serde(default)]
    pub lost_pushes: BTreeMap<String, LostPush>,
    #[serde(default)]
    pub last_pull: Option<Outcome>,
    #[serde(default)]
    pub last_push: Option<Outcome>,
    /// Files the last push held back because they hold a secret.
    #[serde(default)]
    pub skipped_for_secrets: Vec<SkippedSecret>,
    /// Files the last push held back because of the learned entry cap.
    #[serde(default)]
    pub skipped_over_cap: Vec<String>,
    /// Newest last, at most [`MAX_CONFLICTS`].
    #[serde(default)]
    pub conflicts: Vec<Conflict>,
    #[serde(default)]
    pub suppressed: Option<Suppression>,
}

impl SyncState {
    pub fn fresh(server_url: &str, repo: &str) -> Self {
        SyncState { version: STATE_VERSION, server_url: server_url.into(), repo: repo.into(), ..Default::default() }
    }

    /// Whether automatic pushes hold back `key` with content `hash`: the server lost that very
    /// content [`MAX_LOST_PUSHES`] times in a row.
    pub fn gave_up_on(&self, key: &str, hash: &str) -> bool {
        self.lost_pushes.get(key).is_some_and(|l| l.hash == hash && l.times >= MAX_LOST_PUSHES)
    }

    pub fn record_conflict(&mut self, c: Conflict) {
        self.conflicts.push(c);
        let excess = self.conflicts.len().saturating_sub(MAX_CONFLICTS);
        self.conflicts.drain(..excess);
    }
}

/// Where a memory folder's state file lives.
pub fn state_path(data_dir: &Path, memory_dir: &Path) -> PathBuf {
    let key = memory_dir.to_string_lossy();
    data_dir.join("team-sync").join(format!("{}.json", sanitize_path(key.trim_end_matches('/'))))
}

/// The most of a state file read. The state holds, per key, what pulls learned (a checksum, a
/// tombstone), and a pull's answer, which names every key and its content, is itself read up
/// to this size ([`super::MAX_RESPONSE_BYTES`]); a state past it is not one Mneme wrote.
pub const MAX_STATE_BYTES: u64 = super::MAX_RESPONSE_BYTES;

/// The state file's bytes, `None` when there is none. Only a plain file is read, opened without
/// waiting and up to [`MAX_STATE_BYTES`]: a FIFO in its place held every pull, push and the Team
/// screen for ever. A refusal says what is there and what to do.
fn read_state(path: &Path) -> Result<Option<Vec<u8>>, SyncError> {
    use std::io::ErrorKind;
    mneme_store::open::read_own_file(path, MAX_STATE_BYTES).map_err(|e| {
        let detail = match e.kind() {
            ErrorKind::InvalidInput => match fs::metadata(path) {
                Ok(m) if !m.is_file() => format!("it is {}, not a plain file; delete it to start afresh", mneme_store::open::kind_of(&m)),
                _ => "it is not a plain file; delete it to start afresh".to_string(),
            },
            ErrorKind::FileTooLarge => format!(
                "it is larger than {}, more than a sync state holds; delete it to start afresh",
                mneme_store::open::size_words(MAX_STATE_BYTES)
            ),
            _ => e.to_string(),
        };
        SyncError::State { path: path.to_path_buf(), detail }
    })
}

/// Reads the state for `server_url` and `repo`; a missing file, another pair, or an older
/// format gives a fresh state (the next pull rebuilds everything from the server).
pub fn load(path: &Path, server_url: &str, repo: &str) -> Result<SyncState, SyncError> {
    let Some(bytes) = read_state(path)? else { return Ok(SyncState::fresh(server_url, repo)) };
    match serde_json::from_slice::<SyncState>(&bytes) {
        Ok(s) if s.version == STATE_VERSION && s.server_url == server_url && s.repo == repo => Ok(s),
        Ok(_) => Ok(SyncState::fresh(server_url, repo)),
        Err(e) => Err(SyncError::State { path: path.to_path_buf(), detail: format!("it does not parse ({e}); delete it to start afresh") }),
    }
}

/// Reads whatever state is stored, whichever server or repository it belongs to (for status).
pub fn peek(path: &Path) -> Option<SyncState> {
    serde_json::from_slice(&read_state(path).ok()??).ok()
}

/// Writes the state atomically (temporary file, fsync, rename).
pub fn save(path: &Path, state: &SyncState) -> Result<(), SyncError> {
    let err = |e: std::io::Error| SyncError::State { path: path.to_path_buf(), detail: e.to_string() };
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(err)?;
    let json = serde_json::to_vec_pretty(state).map_err(|e| SyncError::State { path: path.to_path_buf(), detail: e.to_string() })?;
    mneme_store::atomic::write_atomic(path, &json).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_reset_on_another_repo() {
        let t = tempfile::tempdir().unwrap();
        let p = state_path(t.path(), Path::new("/h/.claude/projects/-r/memory/"));
        assert!(p.ends_with("team-sync/-h--claude-projects--r-memory.json"), "{}", p.display());
        let mut s = SyncState::fresh("http://s", "o/r");
        s.last_known_checksum = Some("sha256:ab".into());
        s.server_checksums.insert("a.md".into(), "sha256:cd".into());
        for i in 0..(MAX_CONFLICTS + 3) {
            s.record_conflict(Conflict { key: format!("k{i}"), at_ms: i as u64, kind: ConflictKind::PushedOverTeammate, trash_id: None });
        }
        assert_eq!(s.conflicts.len(), MAX_CONFLICTS);
        assert_eq!(s.conflicts[0].key, "k3");
        save(&p, &s).unwrap();
        assert_eq!(load(&p, "http://s", "o/r").unwrap(), s);
        assert_eq!(load(&p, "http://s", "o/other").unwrap(), SyncState::fresh("http://s", "o/other"));
        assert_eq!(peek(&p).unwrap().repo, "o/r");
        std::fs::write(&p, "{").unwrap();
        assert!(matches!(load(&p, "http://s", "o/r"), Err(SyncError::State { .. })));
    }
}
