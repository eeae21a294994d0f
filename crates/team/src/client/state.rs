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
use mneme_core::own_files::{self, OpenList, Unknown};
use mneme_core::sanitize::sanitize_path;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

/// The state's format. Raised only when an older Mneme would misread the file: one that finds
/// a higher version refuses it and leaves it alone (see [`load`]); a field added without a new
/// version is kept by older builds ([`SyncState::extra`]).
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

/// A local edit a pull is about to replace, saved in the state before the file is written (the
/// copy is already in the trash). A pull killed after the write and before its own last save
/// would otherwise leave the copy in the trash with nothing listing it under "Restore my
/// version": the next pull finds the file holding the server's text and sees nothing to keep.
/// [`SyncState::settle_replacements`] turns it into a [`Conflict`] once the file no longer
/// holds the kept text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingReplacement {
    /// The hash of the text kept in the trash, read as pulls read it (lossy UTF-8).
    pub local_hash: String,
    /// What is recorded once the replacement is known to have happened.
    pub conflict: Conflict,
    /// A newer Mneme's fields, written back as they were (see [`SyncState::extra`]).
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: Unknown,
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
    /// A newer Mneme's fields, written back as they were (see [`SyncState::extra`]).
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: Unknown,
}

/// A file whose push the server acknowledged and then lost, still holding the content that was
/// lost ([`SyncState::lost_files`]): what `mneme team status` lists.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct LostFile {
    /// The key (path relative to `team/`).
    pub key: String,
    /// Pushes of this content in a row the server acknowledged and then lost.
    pub times_lost: u32,
    /// Lost [`MAX_LOST_PUSHES`] times in a row: automatic pushes leave it out; only a push by
    /// hand (or an edit here) sends it again.
    pub held_back: bool,
    /// Sent again since the last loss was counted: the next pull shows whether the server kept
    /// it this time.
    pub sent_again: bool,
}

impl LostFile {
    /// Why it is listed and what happens to it next, in one sentence for people (no command:
    /// the front end names its own).
    pub fn why(&self) -> String {
        let times = if self.times_lost == 1 { "once".to_string() } else { format!("{} times in a row", self.times_lost) };
        if self.held_back {
            format!("the team server accepted this content from here and then lost it {times}, so automatic pushes no longer send it; the copy here is kept as it is. Check the team server (its disk, its logs, a restore from backup), then push it by hand (editing it also sends it)")
        } else if self.sent_again {
            format!("the team server accepted it from here and then lost it {times}; it has been sent again, and the next pull shows whether the server kept it")
        } else {
            format!("the team server accepted it from here and then lost it {times}; the copy here is kept, and the next push sends it again")
        }
    }
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
    /// Newest last, at most [`MAX_CONFLICTS`]. Conflicts of a kind a newer Mneme added are
    /// kept unread beside them, so one of them does not make the whole state unreadable.
    #[serde(default)]
    pub conflicts: OpenList<Conflict>,
    #[serde(default)]
    pub suppressed: Option<Suppression>,
    /// Local edits a pull recorded before replacing them and has not yet finished with (see
    /// [`PendingReplacement`]); empty once a pull has saved its outcome.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub replacing: BTreeMap<String, PendingReplacement>,
    /// Fields a newer Mneme wrote that this one does not know, written back as they were: a
    /// save here must not lose what the newer build keeps (both may run on one machine).
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: Unknown,
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

    /// The files the server acknowledged and then lost that still hold the content it lost,
    /// One edited here since is an ordinary change (the next push sends it and
    /// the count starts afresh), one removed here has nothing to send, and one sent again by
    /// hand and not yet found missing counts no loss: none of those is listed. In byte order of
    /// the keys.
    pub fn lost_files(&self, team_dir: &Path) -> Vec<LostFile> {
        self.lost_pushes
            .iter()
            .filter(|(_, lost)| lost.times > 0)
            .filter(|(key, lost)| {
                // Read as the pull reads it when it counts a loss: a plain file, its bytes hashed
                // through their lossy UTF-8 reading.
                let local = crate::keys::validate_strict_team_mem_key(team_dir, key).ok().and_then(|p| mneme_store::open::read_plain(&p).ok());
                local.is_some_and(|(bytes, _)| super::hash_content(&String::from_utf8_lossy(&bytes)) == lost.hash)
            })
            .map(|(key, lost)| LostFile { key: key.clone(), times_lost: lost.times, held_back: lost.times >= MAX_LOST_PUSHES, sent_again: lost.resent })
            .collect()
    }

    /// Settles the replacements a killed pull recorded ([`SyncState::replacing`]): one whose
    /// file no longer holds the text kept in the trash (the server's text replaced it, or it
    /// was edited or removed since) is recorded as a conflict like any other, so the kept copy
    /// is listed; one whose file still holds it was never replaced and stays for the pull that
    /// writes it, which reuses the copy. Returns the conflicts recorded.
    pub fn settle_replacements(&mut self, team_dir: &Path) -> Vec<Conflict> {
        let mut settled = Vec::new();
        self.replacing.retain(|key, pending| {
            let local = crate::keys::validate_strict_team_mem_key(team_dir, key).ok().and_then(|p| mneme_store::open::read_plain(&p).ok());
            let still_there = local.is_some_and(|(bytes, _)| super::hash_content(&String::from_utf8_lossy(&bytes)) == pending.local_hash);
            if !still_there {
                settled.push(pending.conflict.clone());
            }
            still_there
        });
        for c in &settled {
            self.record_conflict(c.clone());
        }
        settled
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
/// format gives a fresh state (the next pull rebuilds everything from the server). A newer
/// format is an error saying to update Mneme, and is never started afresh over: the next save
/// would replace what the newer Mneme keeps there (acknowledged pushes not yet seen on the
/// server, losses counted, local edits being replaced).
pub fn load(path: &Path, server_url: &str, repo: &str) -> Result<SyncState, SyncError> {
    let Some(bytes) = read_state(path)? else { return Ok(SyncState::fresh(server_url, repo)) };
    let newer = |e: own_files::NewerFormat| SyncError::State { path: path.to_path_buf(), detail: e.to_string() };
    own_files::check_version_of(&bytes, STATE_VERSION.into()).map_err(newer)?;
    match serde_json::from_slice::<SyncState>(&bytes) {
        Ok(s) if s.version == STATE_VERSION && s.server_url == server_url && s.repo == repo => Ok(s),
        Ok(_) => Ok(SyncState::fresh(server_url, repo)),
        Err(e) => Err(SyncError::State {
            path: path.to_path_buf(),
            detail: format!("it does not parse ({}); delete it to start afresh", own_files::parse_failure(&e)),
        }),
    }
}

/// Reads whatever state is stored, whichever server or repository it belongs to (for status).
pub fn peek(path: &Path) -> Option<SyncState> {
    serde_json::from_slice(&read_state(path).ok()??).ok()
}

/// Writes the state atomically (temporary file, fsync, rename).
pub fn save(path: &Path, state: &SyncState) -> Result<(), SyncError> {
    // A write that fails is the disk's doing (full, read-only, not this account's), not a state
    // file that cannot be used: `Io` keeps the error, so front ends can tell which and say so.
    let err = |source: std::io::Error| SyncError::Io { action: "save the team sync state", path: path.to_path_buf(), source };
    let dir = path.parent().unwrap_or(Path::new("."));
    fs::create_dir_all(dir).map_err(err)?;
    let json = serde_json::to_vec_pretty(state).map_err(|e| SyncError::State { path: path.to_path_buf(), detail: e.to_string() })?;
    mneme_store::atomic::write_atomic(path, &json).map_err(err)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lost_files_are_those_still_holding_the_lost_content() {
        let t = tempfile::tempdir().unwrap();
        let team = t.path().join("team");
        fs::create_dir_all(team.join("notes")).unwrap();
        let mut s = SyncState::fresh("http://s", "o/r");
        let mut lose = |key: &str, text: &str, times: u32, resent: bool| {
            if !text.is_empty() {
                fs::write(team.join(key), text).unwrap();
            }
            s.lost_pushes.insert(key.into(), LostPush { hash: super::super::hash_content(text), times, resent, extra: Unknown::new() });
        };
        lose("deploy.md", "deploy from main", MAX_LOST_PUSHES, false);
        lose("notes/once.md", "lost once", 1, false);
        lose("resent.md", "sent again", 2, true);
        lose("by-hand.md", "pushed by hand", 0, true);
        lose("gone.md", "", MAX_LOST_PUSHES, false);
        lose("edited.md", "the lost text", MAX_LOST_PUSHES, false);
        fs::write(team.join("edited.md"), "edited since").unwrap();
        let listed = s.lost_files(&team);
        let summary: Vec<(&str, u32, bool, bool)> = listed.iter().map(|f| (f.key.as_str(), f.times_lost, f.held_back, f.sent_again)).collect();
        assert_eq!(summary, [("deploy.md", MAX_LOST_PUSHES, true, false), ("notes/once.md", 1, false, false), ("resent.md", 2, false, true)]);
        assert!(listed[0].why().contains("3 times in a row, so automatic pushes no longer send it"), "{}", listed[0].why());
        assert!(listed[1].why().contains("lost it once; the copy here is kept, and the next push sends it again"), "{}", listed[1].why());
        assert!(listed[2].why().contains("the next pull shows whether the server kept it"), "{}", listed[2].why());
        // A key a hostile state names outside the folder is never read.
        s.lost_pushes.insert("../outside.md".into(), LostPush { hash: super::super::hash_content("x"), times: 3, resent: false, extra: Unknown::new() });
        fs::write(t.path().join("outside.md"), "x").unwrap();
        assert_eq!(s.lost_files(&team).len(), 3);
    }

    /// A state a newer Mneme saved: its own fields and a conflict of a kind this build lacks.
    fn newer_state(version: u32) -> String {
        serde_json::json!({
            "version": version, "serverUrl": "http://s", "repo": "o/r",
            "lastKnownChecksum": "sha256:ab",
            "conflicts": [
                {"key": "a.md", "atMs": 1, "kind": "pushedOverTeammate"},
                {"key": "b.md", "atMs": 2, "kind": "mergedOnServer", "mergeId": 7}
            ],
            "pushJournal": {"c.md": {"sentAtMs": 5}},
            "lostPushes": {"e.md": {"hash": "sha256:ef", "times": 1, "resent": false, "firstLostAtMs": 4}},
            "replacing": {"f.md": {"localHash": "sha256:01", "conflict": {"key": "f.md", "atMs": 6, "kind": "pulledOverLocalEdit"}, "pulledVersion": 3}}
        })
        .to_string()
    }

    #[test]
    fn a_newer_mneme_s_fields_and_conflict_kinds_survive_a_save_here() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("state.json");
        fs::write(&p, newer_state(STATE_VERSION)).unwrap();
        let mut s = load(&p, "http://s", "o/r").expect("one unknown conflict kind does not make the state unreadable");
        assert_eq!(s.conflicts.iter().map(|c| c.key.as_str()).collect::<Vec<_>>(), ["a.md"]);
        assert_eq!(s.conflicts.unread().len(), 1);
        s.record_conflict(Conflict { key: "d.md".into(), at_ms: 3, kind: ConflictKind::DeletedByTeammate, trash_id: None });
        save(&p, &s).unwrap();
        let written: serde_json::Value = serde_json::from_slice(&fs::read(&p).unwrap()).unwrap();
        assert_eq!(written["pushJournal"], serde_json::json!({"c.md": {"sentAtMs": 5}}), "{written}");
        let kinds: Vec<&str> = written["conflicts"].as_array().unwrap().iter().map(|c| c["kind"].as_str().unwrap()).collect();
        assert_eq!(kinds, ["mergedOnServer", "pushedOverTeammate", "deletedByTeammate"]);
        assert_eq!(written["conflicts"][0]["mergeId"], 7);
        assert_eq!(written["lostPushes"]["e.md"]["firstLostAtMs"], 4, "{written}");
        assert_eq!(written["replacing"]["f.md"]["pulledVersion"], 3, "{written}");
    }

    #[test]
    fn a_newer_format_is_refused_with_what_to_do_and_left_as_it_is() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("state.json");
        let text = newer_state(STATE_VERSION + 1);
        fs::write(&p, &text).unwrap();
        let e = load(&p, "http://s", "o/r").unwrap_err();
        assert!(matches!(e, SyncError::State { .. }) && e.to_string().contains("newer Mneme") && e.to_string().contains("update Mneme"), "{e}");
        assert_eq!(fs::read_to_string(&p).unwrap(), text, "never started afresh over");
    }

    #[test]
    fn an_older_state_without_the_newer_fields_reads_with_defaults() {
        let t = tempfile::tempdir().unwrap();
        let p = t.path().join("state.json");
        fs::write(&p, r#"{"version": 1, "serverUrl": "http://s", "repo": "o/r"}"#).unwrap();
        assert_eq!(load(&p, "http://s", "o/r").unwrap(), SyncState::fresh("http://s", "o/r"));
    }

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
