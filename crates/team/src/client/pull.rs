//! Pull (server wins per key): `GET` with `If-None-Match`, 304/404/200 as Claude Code handles
//! them, each entry written only when it differs, tombstoned keys moved to the trash, and a
//! local edit the server never saw kept in the trash before it is replaced. See the module
//! overview in `client` for the whole policy.

use super::http::{Reply, Request};
use super::state::{self, Conflict, ConflictKind, LostPush, Outcome, PendingReplacement, SyncState, MAX_LOST_PUSHES};
use super::{files, hash_content, retry_delay, strip_quotes, SkippedKey, SyncClient, SyncError};
use crate::wire::{MAX_FILE_SIZE_BYTES, MAX_RETRIES};
use mneme_store::memdir::TEAM_DIR;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::Path;

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
    /// Keys this client pushed and the server acknowledged that its answer no longer holds,
    /// neither as an entry nor as a removal (the server lost the push): the local files are
    /// left as they are, and the next push sends them again.
    pub forgotten: Vec<String>,
    /// Of `forgotten`, the keys whose same content the server has now lost
    /// [`MAX_LOST_PUSHES`](super::state::MAX_LOST_PUSHES) times in a row: automatic pushes no
    /// longer send them (a push by hand, or an edit here, does). Their files stay as they are.
    pub given_up: Vec<String>,
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
    #[serde(deserialize_with = "capped_map")]
    entries: BTreeMap<String, String>,
    #[serde(default, deserialize_with = "capped_optional_map")]
    entry_checksums: Option<BTreeMap<String, String>>,
    #[serde(default, deserialize_with = "capped_optional_map")]
    deleted_entries: Option<BTreeMap<String, f64>>,
}

/// The most keys one map of a pull may name: ten times the entry cap of Mneme's own server
/// (100,000). The answer is read whole (up to 1 GiB) before it is parsed, and a map of tiny
/// entries costs many times its bytes once parsed (`"k0.md":""` is 10 bytes of JSON and some
/// 100 of memory), so without a count a hostile server could take the app's memory with one
/// answer, or have it create millions of files. The hashes view a push reads and the lead
/// API's listing of every key are held to it too.
pub(crate) const MAX_PULL_KEYS: usize = 1_000_000;

/// A JSON object read into a map that refuses its `MAX_PULL_KEYS + 1`th key while parsing,
/// before it is allocated.
pub(crate) fn capped_map<'de, D, V>(de: D) -> Result<BTreeMap<String, V>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Capped<V>(std::marker::PhantomData<V>);
    impl<'de, V: Deserialize<'de>> serde::de::Visitor<'de> for Capped<V> {
        type Value = BTreeMap<String, V>;
        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("an object of team memory keys")
        }
        fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
            let mut out = BTreeMap::new();
            while let Some((k, v)) = map.next_entry::<String, V>()? {
                if out.len() >= MAX_PULL_KEYS {
                    return Err(serde::de::Error::custom(format!(
                        "it names more than {MAX_PULL_KEYS} files, far more than any team memory holds, so Mneme acted on none of it; ask the server's administrator to check this repository"
                    )));
                }
                out.insert(k, v);
            }
            Ok(out)
        }
    }
    de.deserialize_map(Capped(std::marker::PhantomData))
}

pub(crate) fn capped_optional_map<'de, D, V>(de: D) -> Result<Option<BTreeMap<String, V>>, D::Error>
where
    D: serde::Deserializer<'de>,
    V: Deserialize<'de>,
{
    struct Wrapped<V>(BTreeMap<String, V>);
    impl<'de, V: Deserialize<'de>> Deserialize<'de> for Wrapped<V> {
        fn deserialize<D2: serde::Deserializer<'de>>(de: D2) -> Result<Self, D2::Error> {
            capped_map(de).map(Wrapped)
        }
    }
    Ok(Option::<Wrapped<V>>::deserialize(de)?.map(|w| w.0))
}

impl SyncClient {
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
        // Local edits an earlier pull replaced and was killed before it could record: listed
        // now, first among this pull's conflicts.
        let settled = st.settle_replacements(&self.target.team_dir());
        let mut result = self.pull_inner(&server, &repo, &mut st, skip_etag);
        if let Ok(r) = &mut result {
            r.conflicts.splice(0..0, settled);
            // What is still pending was not replaced by this pull either: the file holds the
            // text kept in the trash, so there is nothing to restore.
            st.replacing.clear();
        }
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
            let result = self.send_signed(server, &[200, 304, 404], || {
                let mut req = Request::new("GET", &url);
                if let Some(e) = etag {
                    req.headers.push(("If-None-Match", format!("\"{}\"", strip_quotes(e))));
                }
                req
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
        // The state as this pull found it: saved with each local edit it is about to replace,
        // before the write (journal first), so a pull killed before its own last save leaves
        // the record. Nothing this pull learned is in it, so the next pull does the work again.
        let mut journal = st.clone();
        self.token(server)?;
        files::check_canonical(&self.target.memory_dir)?;
        // A key held back (not written by the last pull, or stale after a push) is brought up
        // to date only by a whole answer, which an unchanged ETag would not get.
        let etag = if skip_etag || !st.kept_divergent.is_empty() { None } else { st.last_known_checksum.clone() };
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
                // Pushes it acknowledged and no longer holds are reported, and pushed again.
                self.settle_unconfirmed(&self.target.team_dir(), &BTreeMap::new(), &BTreeMap::new(), st, &mut report);
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
        // Key → whether a later pull could write it with nothing changed on the server (a
        // failed write, a local copy that could not be kept), as opposed to a key refused for
        // what it is (invalid, too large, a case twin).
        let mut unwritten: BTreeMap<String, bool> = BTreeMap::new();
        let mut untrashed = Vec::new();
        // Keys by their case-folded spelling: on a case-insensitive disk (macOS, Windows)
        // `MEMORY.md` and `memory.md` name one file, so a teammate's `memory.md` would replace
        // the index on every pull. Where the disk says two keys are one file, the first in the
        // server's order is written; where they are two files (Linux), both are.
        let mut by_case: BTreeMap<String, &str> = BTreeMap::new();
        for (key, content) in &body.content.entries {
            if let Some(first) = by_case.get(&case_fold(key)).copied() {
                if same_file(&team_dir, first, key) {
                    unwritten.insert(key.clone(), false);
                    report.skipped.push(SkippedKey { key: key.clone(), reason: EntrySkipped::SameFileAs(first.to_string()).to_string() });
                    continue;
                }
            }
            by_case.entry(case_fold(key)).or_insert(key);
            match self.write_entry(&team_dir, key, content, &prior, st, &mut journal) {
                Ok(WriteOutcome::Matched) => {}
                Ok(WriteOutcome::Written(conflict)) => {
                    report.written.push(key.clone());
                    if let Some(c) = conflict {
                        st.replacing.remove(key);
                        st.record_conflict(c.clone());
                        report.conflicts.push(c);
                    }
                }
                Err(why) => {
                    unwritten.insert(key.clone(), !matches!(why, EntrySkipped::Invalid(_) | EntrySkipped::TooLarge { .. }));
                    report.skipped.push(SkippedKey { key: key.clone(), reason: why.to_string() });
                }
            }
        }
        for key in deleted.keys() {
            // A removed `NOTES.md` beside a live `notes.md` is the live file on a
            // case-insensitive disk: it stays.
            if by_case.get(&case_fold(key)).is_some_and(|live| *live != key && same_file(&team_dir, live, key)) {
                continue;
            }
            match self.trash_tombstoned(&team_dir, key) {
                Ok(Some(entry)) => {
                    let c = Conflict { key: key.clone(), at_ms: self.now_ms(), kind: ConflictKind::DeletedByTeammate, trash_id: Some(entry) };
                    st.record_conflict(c);
                    report.trashed.push(key.clone());
                }
                Ok(None) => {}
                // Held back like an entry not written, so the next pull tries again.
                Err(why) => {
                    untrashed.push(key.clone());
                    report.skipped.push(SkippedKey { key: key.clone(), reason: why.to_string() });
                }
            }
        }
        self.settle_unconfirmed(&team_dir, &body.content.entries, &deleted, st, &mut report);
        // A key not written here leaves the local copy (if any) behind the server's: it is held
        // back from pushes until it is edited here or a later pull writes it, so a failed write
        // never turns into a push that reverts the teammate's version.
        // A removal not carried out here keeps the next pull whole (no ETag), so it is tried
        // again even when the server has not changed; what is on disk may not be readable.
        for key in untrashed {
            let local = crate::keys::validate_strict_team_mem_key(&team_dir, &key).ok().and_then(|p| mneme_store::open::read_plain(&p).ok()).map(|(b, _)| b);
            let hash = local.map_or_else(|| "(not a readable file)".to_string(), |b| hash_content(&String::from_utf8_lossy(&b)));
            st.kept_divergent.insert(key, hash);
        }
        for (key, retry) in unwritten {
            let local = crate::keys::validate_strict_team_mem_key(&team_dir, &key).ok().and_then(|p| mneme_store::open::read_plain(&p).ok()).map(|(b, _)| b);
            match local {
                Some(bytes) => {
                    st.kept_divergent.insert(key, hash_content(&String::from_utf8_lossy(&bytes)));
                }
                None => {
                    st.server_checksums.remove(&key);
                    // With no local copy to hold back, nothing else would keep the next pull
                    // whole: it would send the ETag, get 304, and the file would stay missing
                    // until a teammate changed something. The marker matches no file's hash.
                    if retry {
                        st.kept_divergent.insert(key, "(not written here)".to_string());
                    }
                }
            }
        }
        Ok(report)
    }

    /// What a whole answer says about the pushes only acknowledged so far: one whose content
    /// the answer holds is confirmed; one the pull wrote over (its copy kept in the trash) or a
    /// lead removed (moved to the trash) is settled; one the answer does not name at all was
    /// lost by the server. Its local file, if it still holds what was pushed, stays, is
    /// reported, and goes out with the next push (`server_checksums` no longer names it), and
    /// the key stays unconfirmed until a pull shows the server holding it.
    fn settle_unconfirmed(
        &self,
        team_dir: &Path,
        entries: &BTreeMap<String, String>,
        deleted: &BTreeMap<String, f64>,
        st: &mut SyncState,
        report: &mut PullReport,
    ) {
        let mut forgotten = Vec::new();
        let mut given_up = Vec::new();
        st.unconfirmed_pushes.retain(|key, pushed| {
            let held = entries.get(key).is_some_and(|content| hash_content(content) == *pushed);
            if held || deleted.contains_key(key) || report.written.iter().any(|k| k == key) {
                // Held, removed by a lead or replaced by the server's copy: the run of losses ends.
                st.lost_pushes.remove(key);
                return false;
            }
            let local = crate::keys::validate_strict_team_mem_key(team_dir, key).ok().and_then(|p| mneme_store::open::read_plain(&p).ok());
            if local.is_none_or(|(bytes, _)| hash_content(&String::from_utf8_lossy(&bytes)) != *pushed) {
                // Edited or removed here since: an ordinary local change from now on.
                st.lost_pushes.remove(key);
                return false;
            }
            if !entries.contains_key(key) {
                // Whatever checksum the answer claims for it, the next push sends it again.
                st.server_checksums.remove(key);
                forgotten.push(key.clone());
                // One more loss of this content, counted once per push (the pulls between two
                // pushes all see the same loss).
                let lost = st.lost_pushes.entry(key.clone()).or_insert_with(|| LostPush { hash: pushed.clone(), times: 0, resent: true, extra: Default::default() });
                if lost.hash != *pushed {
                    *lost = LostPush { hash: pushed.clone(), times: 0, resent: true, extra: Default::default() };
                }
                if lost.resent {
                    lost.times += 1;
                    lost.resent = false;
                }
                if lost.times >= MAX_LOST_PUSHES {
                    given_up.push(key.clone());
                }
            }
            // Forgotten, or named but not written here (held back): a later pull looks again.
            true
        });
        report.forgotten = forgotten;
        report.given_up = given_up;
    }

    /// Writes one pulled entry if it differs from the file; `Err` holds why it was skipped.
    /// `st.unconfirmed_pushes` holds the pushes no pull has shown the server holding: a local
    /// file that is one of them is kept in the trash before it is replaced, as a local edit is.
    /// A local edit is recorded in `journal` and that is saved before the file is replaced.
    fn write_entry(
        &self,
        team_dir: &Path,
        key: &str,
        content: &str,
        prior: &BTreeMap<String, String>,
        st: &SyncState,
        journal: &mut SyncState,
    ) -> Result<WriteOutcome, EntrySkipped> {
        // Mneme's strict key policy first: a key spelled non-canonically, with control or
        // invisible characters, or impossible on Windows is refused, never normalised.
        let path = crate::keys::validate_strict_team_mem_key(team_dir, key)?;
        if content.len() as u64 > MAX_FILE_SIZE_BYTES {
            return Err(EntrySkipped::TooLarge { bytes: content.len() });
        }
        let mut conflict = None;
        let local = mneme_store::open::read_plain(&path);
        if local.as_ref().is_ok_and(|(bytes, _)| bytes == content.as_bytes()) {
            return Ok(WriteOutcome::Matched);
        }
        // A link or folder under the key's name is the person's doing: the server's copy would
        // replace it, and no copy of it could be kept in the trash first. (A FIFO or socket holds
        // no text to keep, and is written over.)
        if let Ok(meta) = std::fs::symlink_metadata(&path) {
            if meta.is_symlink() || meta.is_dir() {
                return Err(EntrySkipped::NotAPlainFile(if meta.is_symlink() { "a link" } else { "a folder" }));
            }
            // A plain file whose bytes cannot be read (another user's, or one without read
            // permission) may hold an edit the server never saw, and no copy of it can be kept
            // first: the rename would have replaced it unseen, since only the folder's
            // permission counts for that.
            if let (true, Err(e)) = (meta.is_file(), &local) {
                return Err(EntrySkipped::LocalUnreadable(e.to_string()));
            }
        }
        if let Ok((bytes, _)) = local {
            // A local version the server never had: keep it before the server's replaces it.
            // Bytes that are not UTF-8 were pushed as their lossy reading, so matching hashes do
            // not mean the server has them: they are kept too. If no copy can be kept, the
            // server's version is not written over them.
            let local_hash = hash_content(&String::from_utf8_lossy(&bytes));
            // Kept by a pull killed before it replaced the file: that copy is this text.
            let kept_before = st.replacing.get(key).filter(|p| p.local_hash == local_hash);
            // A push the server acknowledged but never showed it holds is kept too (the second
            // test): a server that lost it would otherwise replace the only copy with its older one.
            if let Some(pending) = kept_before {
                conflict = Some(pending.conflict.clone());
            } else if prior.get(key) != Some(&local_hash)
                || st.unconfirmed_pushes.get(key) == Some(&local_hash)
                || std::str::from_utf8(&bytes).is_err()
            {
                let kept = self.memdir.trash_copy(&format!("{TEAM_DIR}/{key}")).map_err(|e| EntrySkipped::LocalNotKept(e.to_string()))?;
                conflict = Some(Conflict {
                    key: key.to_string(),
                    at_ms: self.now_ms(),
                    kind: ConflictKind::PulledOverLocalEdit,
                    trash_id: Some(kept.id),
                });
            }
            if let Some(c) = &conflict {
                // Journal first: the record is on disk before the file it describes changes.
                journal.replacing.insert(key.to_string(), PendingReplacement { local_hash, conflict: c.clone(), extra: Default::default() });
                state::save(&self.state_path, journal).map_err(|e| EntrySkipped::NotRecorded(e.to_string()))?;
            }
        }
        crate::keys::write_team_file(team_dir, key, content.as_bytes())?;
        Ok(WriteOutcome::Written(conflict))
    }

    /// Moves a tombstoned key's local file to the trash; the trash id when one was moved,
    /// `None` when there is no local file (or the key names none this machine could hold).
    fn trash_tombstoned(&self, team_dir: &Path, key: &str) -> Result<Option<String>, EntrySkipped> {
        let Ok(path) = crate::keys::validate_strict_team_mem_key(team_dir, key) else { return Ok(None) };
        let Ok(meta) = std::fs::symlink_metadata(&path) else { return Ok(None) };
        if !meta.is_file() {
            return Err(EntrySkipped::RemovedNotAFile);
        }
        match self.memdir.trash_file(&format!("{TEAM_DIR}/{key}")) {
            Ok(e) => Ok(Some(e.id)),
            Err(e) => Err(EntrySkipped::RemovedNotTrashed(e.to_string())),
        }
    }
}

/// Whether two keys name one file on this disk (a case-insensitive file system, or a link).
/// The folder's listing decides for spellings of one name, since device and inode cannot: on an
/// exFAT stick (exfat-fuse) the two spellings of one file show two inode numbers.
fn same_file(team_dir: &Path, a: &str, b: &str) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (Ok(pa), Ok(pb)) = (crate::keys::validate_strict_team_mem_key(team_dir, a), crate::keys::validate_strict_team_mem_key(team_dir, b)) else { return false };
    let id = |path: &Path| std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino()));
    matches!((id(&pa), id(&pb)), (Some(x), Some(y)) if x == y) || mneme_store::fold::same_entry(&pa, &pb)
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
    #[error("it differs from \"{0}\" only in letter case, and on a case-insensitive disk (macOS, Windows) the two are one file; rename one of them on the server")]
    SameFileAs(String),
    #[error("your local edit could not be kept in the trash ({0}), so the server's version was not written over it; free space or fix the trash folder, then pull again")]
    LocalNotKept(String),
    #[error("your local edit is kept in the trash, but the record that lists it for restoring could not be saved ({0}), so the server's version was not written over it; free space or fix Mneme's data folder, then pull again")]
    NotRecorded(String),
    #[error("the copy here cannot be read ({0}), so no copy of it could be kept in the trash and the server's version was not written over it; make the file readable (or move it away), then pull again")]
    LocalUnreadable(String),
    #[error("a lead removed it for everyone, but the copy here could not be moved to the trash ({0}); free space or fix the trash folder and pull again, or delete the file by hand")]
    RemovedNotTrashed(String),
    #[error("a lead removed it for everyone, but here it is not a plain file (a folder or a link), which Mneme does not move to the trash; remove it by hand")]
    RemovedNotAFile,
    #[error("here it is {0}, which the server's copy would replace and Mneme cannot keep in the trash first; replace it with a plain file (or remove it), then pull again")]
    NotAPlainFile(&'static str),
}

impl PullReport {
    /// One line for people.
    pub fn summary(&self) -> String {
        if self.not_modified {
            return "not modified".into();
        }
        let mut s = if self.server_empty {
            "the server holds no team memory for this repository yet".to_string()
        } else {
            self.entries_summary()
        };
        let resent = self.pushed_again();
        if !resent.is_empty() {
            s.push_str(&format!(
                "; the server no longer holds {} file(s) it had accepted from this machine ({}): they are kept here and sent again by the next push",
                resent.len(),
                resent.join(", ")
            ));
        }
        if !self.given_up.is_empty() {
            s.push_str(&format!("; {}", given_up_message(&self.given_up)));
        }
        s
    }

    /// The forgotten keys automatic pushes send again (those not given up on).
    pub fn pushed_again(&self) -> Vec<String> {
        self.forgotten.iter().filter(|k| !self.given_up.contains(k)).cloned().collect()
    }

    fn entries_summary(&self) -> String {
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

/// What to tell the person about files the server keeps losing: they are safe here, automatic
/// pushes have stopped sending them, and what to do (the CLI's `mneme team push` sends them).
pub fn given_up_message(keys: &[String]) -> String {
    format!(
        "the team server lost {} file(s) it had accepted from this machine {MAX_LOST_PUSHES} times in a row ({}). They are kept here unchanged, but Mneme has stopped pushing them automatically: check the team server (its disk, its logs, a restore from backup), then push them by hand (Push on the Team screen, or `mneme team push` in the project folder) (editing one of them also sends it again)",
        keys.len(),
        keys.join(", ")
    )
}

/// A key with case folded away as far as any disk might fold it: lower-cased after upper-casing,
/// so `ſ` meets `s` and `ς` meets `σ`, which lower-casing alone keeps apart. Grouping too much
/// costs nothing: two keys are treated as one file only where the disk says they are.
fn case_fold(key: &str) -> String {
    key.to_lowercase().to_uppercase().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::case_fold;
    use crate::client::{hash_content, state, ConflictKind, StaticToken, SyncClient, SyncTarget};
    use mneme_testsupport::raw_http::{json, serve};
    use std::collections::BTreeMap;
    use std::sync::{Arc, Mutex};

    /// A client of a loopback server answering every pull with `entries`.
    fn synced(home: &mneme_testsupport::TestHome, entries: &Arc<Mutex<BTreeMap<String, String>>>) -> SyncClient {
        let held = entries.clone();
        let (url, _) = serve(move |_| {
            let entries = held.lock().unwrap().clone();
            let sums: BTreeMap<&String, String> = entries.iter().map(|(k, v)| (k, hash_content(v))).collect();
            let body = serde_json::json!({ "repo": "o/r", "lastModified": "x", "checksum": hash_content(&format!("{sums:?}")), "content": { "entries": entries, "entryChecksums": sums } });
            json("200 OK", &body.to_string())
        });
        let memory = home.root.join("memory");
        std::fs::create_dir_all(memory.join("team")).unwrap();
        let target = SyncTarget { memory_dir: memory, repo: Some("o/r".into()), server_url: Some(url) };
        SyncClient::new(target, &home.env, Arc::new(mneme_core::SystemClock), Arc::new(StaticToken("t".into())))
    }

    /// The trash entries holding `team/<key>`.
    fn kept(c: &SyncClient, key: &str) -> Vec<String> {
        let rel = format!("team/{key}");
        c.memdir.list_trash().unwrap().entries.into_iter().filter(|e| e.original_rel_path == rel).map(|e| e.id).collect()
    }

    /// A pull that replaced a local edit (its copy in the trash) and was killed before it saved
    /// its outcome (`pull_inner` without the save that follows it) still lists the edit for
    /// restoring, in the status and once the next pull has run; one killed after recording the
    /// edit but before replacing the file has the next pull reuse that copy, not make another.
    #[test]
    fn a_local_edit_replaced_by_a_killed_pull_stays_listed_for_restoring() {
        let home = mneme_testsupport::TestHome::new();
        let entries: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
        entries.lock().unwrap().insert("deploy.md".into(), "deploy from main\n".into());
        let c = synced(&home, &entries);
        let file = c.target().team_dir().join("deploy.md");
        assert_eq!(c.pull().unwrap().written, ["deploy.md"]);
        std::fs::write(&file, "deploy from my branch\n").unwrap();
        entries.lock().unwrap().insert("deploy.md".into(), "deploy from release\n".into());
        entries.lock().unwrap().insert("notes.md".into(), "notes\n".into());

        // Killed after the writes, before the state's save.
        let (server, repo) = c.server_and_repo().unwrap();
        let mut st = state::load(c.state_path(), &server, &repo).unwrap();
        let r = c.pull_inner(&server, &repo, &mut st, false).unwrap();
        drop(st);
        assert_eq!(r.conflicts.len(), 1);
        let trash_id = r.conflicts[0].trash_id.clone().unwrap();
        let first = vec![trash_id.clone()];
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "deploy from release\n");
        assert_eq!(kept(&c, "deploy.md"), first);
        let listed = |st: &state::SyncState| st.conflicts.iter().filter(|k| k.kind == ConflictKind::PulledOverLocalEdit).filter_map(|k| k.trash_id.clone()).collect::<Vec<_>>();
        assert_eq!(listed(&c.state().unwrap()), first, "the status lists it before any pull");

        // The next pull records it for good.
        let r = c.pull().unwrap();
        assert_eq!(r.conflicts.iter().filter_map(|k| k.trash_id.clone()).collect::<Vec<_>>(), first);
        let saved = state::load(c.state_path(), &server, &repo).unwrap();
        assert_eq!(listed(&saved), first);
        assert!(saved.replacing.is_empty(), "{:?}", saved.replacing);
        assert_eq!(c.pull().unwrap().conflicts, [], "recorded once");
        assert_eq!(listed(&c.state().unwrap()), first);

        // Killed between the record and the write: the file still holds the edit.
        std::fs::write(&file, "my second edit\n").unwrap();
        entries.lock().unwrap().insert("deploy.md".into(), "deploy from hotfix\n".into());
        let mut st = state::load(c.state_path(), &server, &repo).unwrap();
        c.pull_inner(&server, &repo, &mut st, false).unwrap();
        drop(st);
        std::fs::write(&file, "my second edit\n").unwrap();
        let second: Vec<String> = kept(&c, "deploy.md").into_iter().filter(|id| *id != trash_id).collect();
        assert_eq!(second.len(), 1);
        assert_eq!(listed(&c.state().unwrap()), first, "not replaced yet, so not listed yet");
        let r = c.pull().unwrap();
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "deploy from hotfix\n");
        assert_eq!(r.conflicts.iter().filter_map(|k| k.trash_id.clone()).collect::<Vec<_>>(), second, "the copy already kept");
        assert_eq!(kept(&c, "deploy.md").len(), 2, "no third copy");
        assert_eq!(listed(&state::load(c.state_path(), &server, &repo).unwrap()), [trash_id, second[0].clone()]);
    }

    #[test]
    fn keys_a_case_insensitive_disk_may_take_for_one_are_grouped() {
        for (a, b) in [("MEMORY.md", "memory.md"), ("deploy-steps.md", "deploy-ſteps.md"), ("σημειώσεις.md", "σημειώσεις.md".replace('σ', "ς").as_str()), ("Straße.md", "STRASSE.md")] {
            assert_eq!(case_fold(a), case_fold(b), "{a} / {b}");
        }
        assert_ne!(case_fold("a.md"), case_fold("b.md"));
    }
}
