//! Every dream, recorded in Mneme's data folder as
//! `dreams/<memory-dir-key>/<id>.json` (the key is the memory folder's path run through
//! Claude Code's project-folder sanitizer, as the trash does): when, why, by which provider,
//! the gates as they stood, and the changeset with the full text of every file before and
//! after. That record is what review, approve, reject and undo work from, so it is written
//! atomically and read back strictly.
//!
//! Also here: the per-folder review mode (`dreams/<key>/settings.json`), and the history's
//! retention ([`retention`], [`History::prune`]): each record carries whole files, so records
//! past it are deleted as each new dream is recorded.
//!
//! The key is not one-to-one: the sanitizer turns every character but a letter or digit into
//! `-`, so `/src/my_app/memory` and `/src/my-app/memory` share one history folder. Renaming
//! the folders would orphan every existing history, so instead each record names its memory
//! folder, and a [`History`] answers only the records of its own folder (a record that names
//! another, or whose changes lie outside the folder it names, is never applied or undone
//! here); the mode file keeps one mode per folder.

use crate::error::DreamError;
use crate::gate::GateStatus;
use crate::lock::Acquired;
use crate::offline::PlanStats;
use crate::safety::Moved;
use mneme_agent::{Changeset, Denial};
use mneme_core::own_files::{self, Unknown};
use mneme_core::sanitize::sanitize_path;
use serde::{Deserialize, Serialize};
use std::fs::{self, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

/// The record's format. Raised only when an older Mneme would misread a record: one that finds
/// a higher version reports the record as a newer Mneme's and leaves it alone (never approved,
/// undone or pruned here); a field added without a new version is kept ([`DreamRecord::extra`]).
pub const RECORD_VERSION: u32 = 1;
const MODE_FILE: &str = "settings.json";
/// The mode file's field of per-folder modes.
const MODES: &str = "modes";
/// The one mode a mode file held before modes were kept per folder.
const LEGACY_MODE: &str = "dreamMode";
/// The lock file that keeps a record's read, check and write-back whole (see
/// [`History::lock_records`]).
const RECORDS_LOCK: &str = "records.lock";

/// How long dream records are kept. Each record holds the full text of every file before and
/// after its dream (what undo puts back), so a folder that dreams daily would otherwise grow
/// by that much forever. The rule, applied by [`History::prune`] each time a dream is recorded:
/// a record goes only when it is past *all* of these.
pub mod retention {
    /// Every record whose last event (run, approved, rejected, undone) is younger than this is
    /// kept: a month is how long a dream that went wrong can take to be noticed (a memory that
    /// is needed only now and then), and undo needs its record.
    pub const KEEP_DAYS: i64 = 30;
    /// However old, a folder's newest records are kept: one that dreams rarely would otherwise
    /// lose its whole history in one prune, and "what did the last dreams do" is the question
    /// the history answers.
    pub const KEEP_NEWEST: usize = 20;
    /// [`KEEP_DAYS`] in milliseconds, the unit of a record's times.
    pub const KEEP_MS: i64 = KEEP_DAYS * 24 * 60 * 60 * 1000;
    // Never pruned whatever their age (see `History::prune`): a dream still waiting for review
    // or cut short while writing (`applying`), which only a person can settle, and the dream
    // `mneme dream undo --last` would undo, so that undo always has its newest step.

    /// The rule in a sentence, for `mneme dream history` and its help.
    pub fn describe() -> String {
        format!(
            "Dream records are kept for {KEEP_DAYS} days after their last change (run, approved, rejected, undone), and the newest {KEEP_NEWEST} of a memory folder however old; \
             a dream waiting for review, one cut short while writing, and the newest applied dream (what `mneme dream undo --last` undoes) are never pruned. \
             Older records are deleted when the next dream of the folder is recorded."
        )
    }
}

/// What one [`History::prune`] did.
#[derive(Debug, Default)]
pub struct Pruned {
    /// The ids of the records deleted.
    pub removed: Vec<String>,
    /// Records that could not be deleted (each as the error saying why); they are tried again
    /// at the next prune.
    pub failed: Vec<DreamError>,
    /// Records that could not be read, left as they are: what they hold, and whose they are,
    /// is unknown, so age cannot be told. [`History::list`] reports them.
    pub damaged: usize,
}

/// What started a dream.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Trigger {
    /// The user asked (`mneme dream run`, the Dreams screen's "Run now").
    Manual,
    /// The scheduler, when the gates opened.
    Auto,
}

/// Where a dream stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DreamStatus {
    /// Waiting for review: nothing written yet.
    Pending,
    /// Written to the memory folder (or there was nothing to write).
    Applied,
    /// Reviewed and turned down: nothing written.
    Rejected,
    /// Applied, then undone.
    Undone,
    /// Did not finish; nothing written.
    Failed,
    /// Being written to the memory folder, or was when Mneme stopped (killed, power lost): the
    /// record holds every file's earlier text, so undo puts back what was written.
    Applying,
}

impl DreamStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            DreamStatus::Pending => "pending",
            DreamStatus::Applied => "applied",
            DreamStatus::Rejected => "rejected",
            DreamStatus::Undone => "undone",
            DreamStatus::Failed => "failed",
            DreamStatus::Applying => "applying",
        }
    }
}

/// What happens to a dream's changes: applied at once, held for review, or (for the
/// scheduler) no automatic dreams at all. The values and the default are those of the
/// project review mode extraction uses, so the two can share one setting.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum DreamMode {
    /// Apply at once, as Claude Code does; every dream stays undoable.
    #[default]
    Automatic,
    /// Hold each dream until it is approved or rejected.
    Review,
    /// The scheduler never dreams for this folder; a manual run is held for review.
    Off,
}

impl DreamMode {
    pub fn parse(s: &str) -> Option<DreamMode> {
        match s.trim().to_ascii_lowercase().as_str() {
            "automatic" | "auto" => Some(DreamMode::Automatic),
            "review" => Some(DreamMode::Review),
            "off" => Some(DreamMode::Off),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            DreamMode::Automatic => "automatic",
            DreamMode::Review => "review",
            DreamMode::Off => "off",
        }
    }
}

/// A file an apply moved to Mneme's trash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TrashedFile {
    pub path: PathBuf,
    /// Restores it (`mneme memories restore <id>`).
    pub trash_id: String,
    /// Fields a newer Mneme wrote here that this one does not know, written back with the
    /// record (see [`crate::history::DreamRecord::extra`]).
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: mneme_core::own_files::Unknown,
}

/// A file a forced undo replaced that was not UTF-8 text (an editor saved it as Windows-1252,
/// say). The undo's `before` for it ([`DreamRecord::undo`]) is text, which can show such a
/// file only with U+FFFD where its bytes do not decode; its exact bytes are kept here, and the
/// file itself, as the undo found it, in Mneme's trash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KeptBytes {
    pub path: PathBuf,
    /// The file's bytes as the undo replaced them (base64 in the record: JSON strings hold
    /// text, not bytes).
    #[serde(with = "base64_bytes")]
    pub bytes: Vec<u8>,
    /// The trash entry holding the file: `mneme memories restore <id>` puts it back, once the
    /// file the undo wrote at its path is moved away.
    pub trash_id: String,
    /// Fields a newer Mneme wrote here that this one does not know, written back with the
    /// record (see [`DreamRecord::extra`]).
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: Unknown,
}

/// Bytes as a base64 string (standard alphabet, padded), read back strictly: a record whose
/// bytes do not decode is damaged, never read as other bytes.
mod base64_bytes {
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(bytes: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&base64::engine::general_purpose::STANDARD.encode(bytes))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = String::deserialize(d)?;
        base64::engine::general_purpose::STANDARD.decode(text.as_bytes()).map_err(|e| serde::de::Error::custom(format!("the kept bytes are not base64 ({e})")))
    }
}

/// One dream.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DreamRecord {
    pub version: u32,
    pub id: String,
    pub memory_dir: PathBuf,
    /// When it ran (ms since the epoch, injected clock).
    pub created_at_ms: i64,
    pub trigger: Trigger,
    /// `offline`, `anthropic`, `openai`, `claude-cli`.
    pub provider: String,
    pub model: Option<String>,
    /// The gates when it started.
    pub gate: GateStatus,
    /// The sessions it was told about.
    pub sessions: Vec<String>,
    pub status: DreamStatus,
    /// The closing summary (the model's, or the offline dream's).
    pub summary: String,
    /// Remarks that are not changes.
    pub notes: Vec<String>,
    /// Counts, for offline dreams.
    pub stats: Option<PlanStats>,
    /// Every file changed, with its full text before and after.
    pub changeset: Changeset,
    /// Tool calls the memory policy refused (model-driven dreams).
    #[serde(default)]
    pub denials: Vec<Denial>,
    #[serde(default)]
    pub turns: u32,
    /// Why it failed.
    pub error: Option<String>,
    /// The lock as taken: its earlier mtime (what a rollback restores) and the new one.
    pub lock: Option<Acquired>,
    pub applied_at_ms: Option<i64>,
    /// Files the apply moved to the trash, with the trash ids that restore them.
    #[serde(default)]
    pub trashed: Vec<TrashedFile>,
    pub rejected_at_ms: Option<i64>,
    pub undone_at_ms: Option<i64>,
    /// What the undo wrote: each file's text just before the undo and after it. With
    /// `--force` this keeps the edits made since the dream that the undo replaced (a file that
    /// was not UTF-8 is shown here with U+FFFD for what does not decode; its bytes are in
    /// [`undo_kept`](Self::undo_kept)).
    pub undo: Option<Changeset>,
    /// The exact bytes of the files a forced undo replaced that were not UTF-8 text. Records
    /// older than this have none (their undo refused such files).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub undo_kept: Vec<KeptBytes>,
    /// Every line the changeset removes and where its text is afterwards (the safety net's
    /// result, and the "what moved where" report). Records older than the net have none.
    #[serde(default)]
    pub moved: Vec<Moved>,
    /// The folders the apply made for files the dream created (relative to the memory folder,
    /// `/`-separated), recorded before its first write: undo removes these, once empty, and no
    /// other. Records older than this have none, and their undo leaves folders as they are.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub made_folders: Vec<String>,
    /// Fields a newer Mneme wrote that this one does not know, written back as they were when
    /// this one approves, rejects or undoes the dream, so the newer build's record stays whole.
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: Unknown,
}

/// One line of the history: a dream without its file contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DreamSummary {
    pub id: String,
    pub created_at_ms: i64,
    pub trigger: Trigger,
    pub provider: String,
    pub model: Option<String>,
    pub status: DreamStatus,
    /// The first line of the closing summary.
    pub headline: String,
    pub sessions: usize,
    pub added: usize,
    pub changed: usize,
    pub removed: usize,
    /// Removed lines found nowhere after the dream (why it waits for review).
    #[serde(default)]
    pub lost: usize,
    pub error: Option<String>,
    pub applied_at_ms: Option<i64>,
    pub undone_at_ms: Option<i64>,
}

impl DreamRecord {
    /// A dream as it starts: pending, nothing produced yet, no change under `memory_dir`.
    /// `engine` names the provider and the model. The one place every field is given its
    /// starting value, so a field added later is started here once.
    pub fn started(id: String, memory_dir: &Path, created_at_ms: i64, trigger: Trigger, engine: (String, Option<String>), gate: GateStatus) -> DreamRecord {
        let (provider, model) = engine;
        DreamRecord {
            version: RECORD_VERSION,
            id,
            memory_dir: memory_dir.to_path_buf(),
            created_at_ms,
            trigger,
            provider,
            model,
            gate,
            sessions: Vec::new(),
            status: DreamStatus::Pending,
            summary: String::new(),
            notes: Vec::new(),
            stats: None,
            changeset: Changeset { root: memory_dir.to_path_buf(), changes: Vec::new(), extra: Default::default() },
            denials: Vec::new(),
            turns: 0,
            error: None,
            lock: None,
            applied_at_ms: None,
            trashed: Vec::new(),
            rejected_at_ms: None,
            undone_at_ms: None,
            undo: None,
            undo_kept: Vec::new(),
            moved: Vec::new(),
            made_folders: Vec::new(),
            extra: Unknown::new(),
        }
    }

    /// The record without file contents, for lists.
    pub fn summary_view(&self) -> DreamSummary {
        let (added, changed, removed) = self.counts();
        DreamSummary {
            id: self.id.clone(),
            created_at_ms: self.created_at_ms,
            trigger: self.trigger,
            provider: self.provider.clone(),
            model: self.model.clone(),
            status: self.status,
            headline: self.summary.lines().next().unwrap_or_default().to_string(),
            sessions: self.sessions.len(),
            added,
            changed,
            removed,
            lost: self.moved.iter().filter(|m| m.lost()).count(),
            error: self.error.clone(),
            applied_at_ms: self.applied_at_ms,
            undone_at_ms: self.undone_at_ms,
        }
    }

    /// Files added, changed and removed, for lists.
    pub fn counts(&self) -> (usize, usize, usize) {
        let c = &self.changeset.changes;
        (
            c.iter().filter(|x| x.before.is_none() && x.after.is_some()).count(),
            c.iter().filter(|x| x.before.is_some() && x.after.is_some()).count(),
            c.iter().filter(|x| x.after.is_none()).count(),
        )
    }
}

/// The dream records of one memory folder.
#[derive(Debug, Clone)]
pub struct History {
    dir: PathBuf,
    /// The folder whose records these are, [`normalize`]d.
    memory_dir: PathBuf,
}

/// `path` with `.` components, repeated and trailing separators dropped and `..` taken back
/// lexically (links are not followed: a record names its folder as it was given): how two
/// spellings of one memory folder are told to be the same.
pub fn normalize(path: &Path) -> PathBuf {
    use std::path::Component;
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                let popped = matches!(out.components().next_back(), Some(Component::Normal(_))) && out.pop();
                // `/..` is `/`; a relative path keeps the `..` it cannot take back.
                if !popped && !out.has_root() {
                    out.push("..");
                }
            }
            other => out.push(other.as_os_str()),
        }
    }
    out
}

/// The key of a memory folder under `dreams/`.
pub fn memory_dir_key(memory_dir: &Path) -> String {
    sanitize_path(&memory_dir.to_string_lossy())
}

use mneme_store::atomic::{write_atomic, Refusal};

impl History {
    /// The history of `memory_dir`, kept under `data_dir`.
    pub fn new(data_dir: &Path, memory_dir: &Path) -> History {
        History { dir: data_dir.join("dreams").join(memory_dir_key(memory_dir)), memory_dir: normalize(memory_dir) }
    }

    /// Whether `path` names this history's memory folder.
    fn is_ours(&self, path: &Path) -> bool {
        normalize(path) == self.memory_dir
    }

    /// `dreams/<key>/`: records, the mode, the lock guard and agent scratch space live here.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn record_path(&self, id: &str) -> Result<PathBuf, DreamError> {
        // Ids are ours (digits and `-`); anything else could walk out of the folder.
        if id.is_empty() || !id.bytes().all(|b| b.is_ascii_digit() || b == b'-') {
            return Err(DreamError::NotFound { id: id.to_string() });
        }
        Ok(self.dir.join(format!("{id}.json")))
    }

    /// Holds every record of this history still against Mneme's other processes and threads
    /// until dropped. Approve, reject and undo each read a record, check its status, write to
    /// the memory folder and save the record again; two of them on one dream at once (a
    /// double-clicked Approve, the app and the CLI) would otherwise both pass the check, and
    /// the one that saves last would leave an applied dream marked pending or rejected. Taken
    /// before the memory folder's own lock, never while holding it.
    ///
    /// `saving` is what the caller takes it to save (a record, [`History::record_file`]; the
    /// mode file; the history folder when which record is not known yet): a refusal of the
    /// disk (read-only, full, not this account's) names that, not the lock file, which is a
    /// detail to the person reading it ([`Refusal::told_as`]).
    pub fn lock_records(&self, saving: &Path) -> Result<mneme_store::file_lock::FileLock, DreamError> {
        let path = self.dir.join(RECORDS_LOCK);
        mneme_store::file_lock::FileLock::take(&path).map_err(|e| {
            let (action, at) = Refusal::told_as(&e, saving, "lock the dream history", &path);
            DreamError::io(action, at, e)
        })
    }

    /// The file a dream's record is saved in, for messages (the id is not checked here).
    pub fn record_file(&self, id: &str) -> PathBuf {
        self.dir.join(format!("{id}.json"))
    }

    /// The file the dream modes are saved in.
    pub fn mode_file(&self) -> PathBuf {
        self.dir.join(MODE_FILE)
    }

    /// A fresh id, reserved by creating its file exclusively: `now_ms` as a rule, but always
    /// after every id already in the history folder. Newest first (the list, the newest records
    /// retention keeps, the dream `undo --last` undoes) is the order of the ids, so a dream
    /// recorded after the clock was stepped back (NTP correcting a clock that ran ahead, a
    /// laptop whose clock was set by hand) still comes after the dreams before it, instead of
    /// leaving `undo --last` on an older dream until the clock catches up. The record's
    /// `created_at_ms` stays what the clock said.
    pub fn reserve_id(&self, now_ms: i64) -> Result<String, DreamError> {
        fs::create_dir_all(&self.dir).map_err(|e| DreamError::io("create the dream history folder", &self.dir, e))?;
        // A clock before 1970 would make an id starting with `-`, which `id_order` misreads.
        let now_ms = now_ms.max(0);
        let (ms, first) = match self.last_id() {
            Some((last_ms, last_n)) if last_ms >= now_ms => (last_ms, last_n.saturating_add(1)),
            _ => (now_ms, 0),
        };
        for n in first.. {
            let id = if n == 0 { ms.to_string() } else { format!("{ms}-{n}") };
            let path = self.dir.join(format!("{id}.json"));
            match OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(_) => return Ok(id),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(DreamError::io("create a dream record in", &self.dir, e)),
            }
        }
        unreachable!("u32 ids exhausted")
    }

    /// The highest id in the history folder ([`id_order`]), reserved ids and other folders'
    /// records sharing it included: a new id goes after all of them.
    fn last_id(&self) -> Option<(i64, u32)> {
        fs::read_dir(&self.dir)
            .ok()?
            .flatten()
            .filter_map(|e| {
                let name = e.file_name();
                let id = name.to_str()?.strip_suffix(".json")?;
                (!id.is_empty() && id.bytes().all(|b| b.is_ascii_digit() || b == b'-')).then(|| id_order(id))
            })
            .max()
    }

    pub fn save(&self, record: &DreamRecord) -> Result<(), DreamError> {
        let path = self.record_path(&record.id)?;
        let json = serde_json::to_vec_pretty(record).map_err(|e| DreamError::DamagedRecord { path: path.clone(), detail: e.to_string(), newer: false })?;
        write_atomic(&path, &json).map_err(|e| DreamError::io("write the dream record", &path, e))
    }

    /// One record. Read only as a plain file, opened without waiting and up to
    /// [`MAX_RECORD_BYTES`]: a FIFO or a folder under a record's name (the history folder is a
    /// folder like any other) is a damaged record saying what is there, where it held the
    /// Dreams screen, `mneme dream` and the scheduler for ever.
    pub fn load(&self, id: &str) -> Result<DreamRecord, DreamError> {
        let path = self.record_path(id)?;
        let bytes = match mneme_store::open::read_own_file(&path, MAX_RECORD_BYTES) {
            Ok(Some(b)) => b,
            Ok(None) => return Err(DreamError::NotFound { id: id.into() }),
            Err(e) => {
                return Err(match refusal(&path, &e, MAX_RECORD_BYTES, "any dream record holds") {
                    Some(detail) => DreamError::DamagedRecord { path, detail, newer: false },
                    None => DreamError::io("read the dream record", &path, e),
                })
            }
        };
        // A newer format is told apart before its fields are held to this one's: read as this
        // build's, it could be applied or undone wrongly.
        if let Err(e) = own_files::check_version_of(&bytes, RECORD_VERSION.into()) {
            return Err(DreamError::DamagedRecord { path, detail: e.to_string(), newer: true });
        }
        let record: DreamRecord = serde_json::from_slice(&bytes).map_err(|e| DreamError::DamagedRecord {
            path: path.clone(),
            detail: own_files::parse_failure(&e),
            // A status or trigger a newer build added: the record is that build's to act on.
            newer: own_files::is_unknown_value(&e),
        })?;
        if record.id != id {
            return Err(DreamError::DamagedRecord { path, detail: format!("it names dream {}", record.id), newer: false });
        }
        // Approve and undo write where the record says; it must say this folder.
        if !self.is_ours(&record.memory_dir) {
            return Err(DreamError::OtherFolder { id: id.into(), owner: record.memory_dir });
        }
        if let Some(root) = [Some(&record.changeset), record.undo.as_ref()].into_iter().flatten().map(|c| &c.root).find(|r| !self.is_ours(r)) {
            return Err(DreamError::DamagedRecord {
                path,
                detail: format!("its changes are under {}, not under the memory folder it names, {}", root.display(), record.memory_dir.display()),
                newer: false,
            });
        }
        Ok(record)
    }

    /// Every record of this memory folder, newest first. Damaged files are reported rather
    /// than skipped in silence; the records of another folder sharing the history folder are
    /// that folder's, and left out.
    pub fn list(&self) -> Result<(Vec<DreamRecord>, Vec<DreamError>), DreamError> {
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((Vec::new(), Vec::new())),
            Err(e) => return Err(DreamError::io("list the dream history", &self.dir, e)),
        };
        let mut records = Vec::new();
        let mut damaged = Vec::new();
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".json") else { continue };
            if id == MODE_FILE.trim_end_matches(".json") {
                continue;
            }
            // A reserved id whose record is still being written is empty; it is not a dream yet.
            if e.metadata().is_ok_and(|m| m.len() == 0) {
                continue;
            }
            match self.load(id) {
                Ok(r) => records.push(r),
                Err(DreamError::OtherFolder { .. }) => {}
                // Deleted since the folder was read (pruned as another process recorded a dream,
                // [`History::prune`]): gone, not damaged.
                Err(DreamError::NotFound { .. }) if fs::symlink_metadata(e.path()).is_err() => {}
                Err(err) => damaged.push(err),
            }
        }
        // By id, not by `created_at_ms`: ids follow the order dreams were recorded in even
        // across a clock stepped back (see `reserve_id`); the times are the clock's.
        records.sort_by_key(|r| std::cmp::Reverse(id_order(&r.id)));
        Ok((records, damaged))
    }

    /// Deletes this folder's records that [`retention`] no longer keeps, as of `now_ms`.
    /// `_held` is the history's record lock ([`History::lock_records`]), which the caller holds
    /// and keeps holding: what a record's status is, and which dream is the newest applied one,
    /// is only settled while no approve, reject or undo can change it (an undo of the newest
    /// dream running alongside would make an older one the next to undo just as it is deleted).
    ///
    /// Only records read in full and naming this folder are ever deleted: another folder's
    /// records sharing the history folder are that folder's to prune, a damaged record is left
    /// (and counted), and so is a reserved id whose record is still being written.
    pub fn prune(&self, _held: &mneme_store::file_lock::FileLock, now_ms: i64) -> Result<Pruned, DreamError> {
        let (records, damaged) = self.list()?;
        let mut pruned = Pruned { damaged: damaged.len(), ..Pruned::default() };
        let undoable = last_undoable(&records).map(|r| r.id.clone());
        // `list` is newest first, so the first `KEEP_NEWEST` are the newest.
        for record in records.iter().skip(retention::KEEP_NEWEST) {
            let protected = matches!(record.status, DreamStatus::Pending | DreamStatus::Applying) || undoable.as_deref() == Some(record.id.as_str());
            if protected || now_ms.saturating_sub(last_event_ms(record)) < retention::KEEP_MS {
                continue;
            }
            let path = self.record_path(&record.id)?;
            match fs::remove_file(&path) {
                Ok(()) => pruned.removed.push(record.id.clone()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => pruned.failed.push(DreamError::io("delete the old dream record", &path, e)),
            }
        }
        self.remove_dead_reservations(now_ms);
        Ok(pruned)
    }

    /// Removes the ids reserved by dreams killed before their record was written: a reserved id
    /// is an empty file until then, which [`History::list`] skips and nothing else would ever
    /// remove. One still empty after an hour (the lock's own grace) belongs to no running dream
    /// of this folder: the caller holds the lock a dream holds from its reservation to its record.
    fn remove_dead_reservations(&self, now_ms: i64) {
        let Ok(entries) = fs::read_dir(&self.dir) else { return };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(path) = name.strip_suffix(".json").and_then(|id| self.record_path(id).ok()) else { continue };
            let Ok(meta) = fs::symlink_metadata(&path) else { continue };
            let modified_ms = meta.modified().map(crate::lock::ms_since_epoch).unwrap_or(now_ms);
            if meta.is_file() && meta.len() == 0 && now_ms.saturating_sub(modified_ms) > crate::lock::HOLDER_STALE.as_millis() as i64 {
                let _ = fs::remove_file(&path);
            }
        }
    }

    /// How many of this folder's dreams wait for review. Each record is read only for its
    /// folder and status, skipping its file texts unparsed (a screen asks on every visit, and
    /// the full records of a long history are mostly those texts); unreadable records are not
    /// counted ([`History::list`] reports them).
    pub fn pending_count(&self) -> Result<usize, DreamError> {
        #[derive(Deserialize)]
        #[serde(rename_all = "camelCase")]
        struct Head {
            version: u32,
            id: String,
            memory_dir: PathBuf,
            status: DreamStatus,
        }
        let entries = match fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(DreamError::io("list the dream history", &self.dir, e)),
        };
        let mut pending = 0;
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(id) = name.strip_suffix(".json") else { continue };
            let Ok(path) = self.record_path(id) else { continue };
            let Ok(Some(bytes)) = mneme_store::open::read_own_file(&path, MAX_RECORD_BYTES) else { continue };
            if let Ok(head) = serde_json::from_slice::<Head>(&bytes) {
                // A newer format's record is not one this build can review ([`History::load`]).
                if head.version <= RECORD_VERSION && head.id == id && head.status == DreamStatus::Pending && self.is_ours(&head.memory_dir) {
                    pending += 1;
                }
            }
        }
        Ok(pending)
    }

    /// The review mode of this folder (automatic when never set). A file that cannot be read
    /// as a mode is an error naming it; a dream that meets it is held for review, because the
    /// mode the user chose may have been review or off.
    ///
    /// The file keeps each folder's mode under `modes`, keyed by the folder's [`normalize`]d
    /// path, since two folders can share the history folder. A file from before holds one
    /// `dreamMode` for the whole history folder: it still counts for every folder that has not
    /// set a mode of its own since, so no one's existing choice is lost.
    pub fn mode(&self) -> Result<DreamMode, DreamError> {
        let path = self.dir.join(MODE_FILE);
        let damaged = |detail: String| DreamError::DamagedMode { path: path.clone(), detail };
        let Some(fields) = self.read_mode_file()? else { return Ok(DreamMode::default()) };
        let own = match fields.get(MODES) {
            None => None,
            Some(serde_json::Value::Object(modes)) => modes.get(&self.mode_key()),
            Some(other) => return Err(damaged(format!("{MODES} is {other}, not an object"))),
        };
        match own.or_else(|| fields.get(LEGACY_MODE)) {
            None => Ok(DreamMode::default()),
            // A mode a newer Mneme added reads as damaged here; updating reads it.
            Some(serde_json::Value::String(m)) => {
                DreamMode::parse(m).ok_or_else(|| damaged(format!("\"{m}\" is not a dream mode this build knows; if a newer Mneme set it, update Mneme")))
            }
            Some(other) => Err(damaged(format!("the mode is {other}, not automatic, review or off"))),
        }
    }

    /// Sets this folder's mode, keeping the modes of other folders that share the file. A
    /// damaged file is replaced: that is how it is mended.
    pub fn set_mode(&self, mode: DreamMode) -> Result<(), DreamError> {
        // Read, changed and written back whole: another folder's mode set at the same moment
        // must not be lost.
        let path = self.mode_file();
        let _records = self.lock_records(&path)?;
        let mut fields = match self.read_mode_file() {
            Ok(fields) => fields.unwrap_or_default(),
            Err(DreamError::DamagedMode { .. }) => Default::default(),
            // A file that could not be read (this account may not, the disk failed) may still
            // hold other folders' modes, readable again later: writing over it would lose them.
            Err(e) => return Err(e),
        };
        // A shared mode nobody can read helps no folder.
        if fields.get(LEGACY_MODE).is_some_and(|m| m.as_str().and_then(DreamMode::parse).is_none()) {
            fields.remove(LEGACY_MODE);
        }
        let modes = fields.entry(MODES).or_insert_with(|| serde_json::Value::Object(Default::default()));
        if !modes.is_object() {
            *modes = serde_json::Value::Object(Default::default());
        }
        if let serde_json::Value::Object(modes) = modes {
            modes.insert(self.mode_key(), serde_json::Value::String(mode.as_str().into()));
        }
        let mut json = serde_json::to_vec_pretty(&fields).map_err(|e| DreamError::DamagedMode { path: path.clone(), detail: e.to_string() })?;
        json.push(b'\n');
        write_atomic(&path, &json).map_err(|e| DreamError::io("write the dream mode file", &path, e))
    }

    fn mode_key(&self) -> String {
        self.memory_dir.to_string_lossy().into_owned()
    }

    /// The mode file's fields; `None` when there is none.
    fn read_mode_file(&self) -> Result<Option<serde_json::Map<String, serde_json::Value>>, DreamError> {
        let path = self.dir.join(MODE_FILE);
        let damaged = |detail: String| DreamError::DamagedMode { path: path.clone(), detail };
        // A plain file only, opened without waiting, up to [`MAX_MODE_BYTES`]: every dream, the
        // scheduler's gate checks and the Dreams screen read it, and a FIFO here held them all.
        match mneme_store::open::read_own_file(&path, MAX_MODE_BYTES) {
            Ok(Some(b)) => match serde_json::from_slice(&b).map_err(|e| damaged(e.to_string()))? {
                serde_json::Value::Object(fields) => Ok(Some(fields)),
                _ => Err(damaged("it is not a JSON object".into())),
            },
            Ok(None) => Ok(None),
            Err(e) => Err(match refusal(&path, &e, MAX_MODE_BYTES, "a mode file holds") {
                Some(detail) => damaged(detail),
                None => DreamError::io("read the dream mode file", &path, e),
            }),
        }
    }
}

/// The most of one dream record read. A record holds the text before and after of every file
/// its dream changes (each read up to 64 MiB, as the memory folder's files are) and the same
/// again for an undo; memories are small (Claude Code's Read tool stops at 256 KB), so a dream
/// record is kilobytes, and one past this is not one Mneme wrote.
pub const MAX_RECORD_BYTES: u64 = 256 << 20;

/// The most of the mode file read: one short line per memory folder sharing the history
/// folder.
pub const MAX_MODE_BYTES: u64 = 1 << 20;

/// What [`mneme_store::open::read_own_file`] refused, in the words of a damaged record or mode
/// file ("it is a named pipe (FIFO), not a plain file"), whose own message already names the
/// file and says what to do; `None` for any other error, which is reported as it is.
fn refusal(path: &Path, e: &io::Error, cap: u64, holds: &str) -> Option<String> {
    match e.kind() {
        io::ErrorKind::InvalidInput => Some(match fs::metadata(path) {
            Ok(m) if !m.is_file() => format!("it is {}, not a plain file", mneme_store::open::kind_of(&m)),
            _ => "it is not a plain file".to_string(),
        }),
        io::ErrorKind::FileTooLarge => Some(format!("it is larger than {}, more than {holds}", mneme_store::open::size_words(cap))),
        _ => None,
    }
}

/// The dream `undo` with no id works on: the newest applied one (or one cut short while
/// writing) that changed something. `records` newest first, as [`History::list`] gives them.
pub fn last_undoable(records: &[DreamRecord]) -> Option<&DreamRecord> {
    records.iter().find(|r| matches!(r.status, DreamStatus::Applied | DreamStatus::Applying) && !r.changeset.is_empty())
}

/// When anything last happened to a record: a dream approved, rejected or undone today is as
/// fresh as one run today, whenever it ran.
fn last_event_ms(record: &DreamRecord) -> i64 {
    [Some(record.created_at_ms), record.applied_at_ms, record.rejected_at_ms, record.undone_at_ms].into_iter().flatten().max().unwrap_or(record.created_at_ms)
}

/// `1700000000000-2` sorts after `1700000000000` and `1700000000000-1`.
fn id_order(id: &str) -> (i64, u32) {
    let (ms, n) = id.split_once('-').unwrap_or((id, "0"));
    (ms.parse().unwrap_or(0), n.parse().unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_records_round_trip() {
        let d = tempfile::tempdir().unwrap();
        let h = History::new(d.path(), Path::new("/x/memory"));
        assert!(h.dir().ends_with("dreams/-x-memory"));
        let a = h.reserve_id(5).unwrap();
        let b = h.reserve_id(5).unwrap();
        assert_eq!((a.as_str(), b.as_str()), ("5", "5-1"));
        assert!(h.list().unwrap().0.is_empty(), "reserved ids are not dreams yet");
        assert_eq!(h.load("../etc").unwrap_err().code(), "not-found");
        assert_eq!(h.load("77").unwrap_err().code(), "not-found");
        fs::write(h.dir().join("9.json"), "{").unwrap();
        let (records, damaged) = h.list().unwrap();
        assert!(records.is_empty());
        assert_eq!(damaged.len(), 1);
        assert_eq!(damaged[0].code(), "damaged");
    }

    /// A dream killed between reserving its id and writing its record leaves an empty file;
    /// the next prune removes it once it is an hour old, and leaves a fresh one alone.
    #[test]
    fn ids_reserved_by_killed_dreams_are_removed_by_the_next_prune() {
        let d = tempfile::tempdir().unwrap();
        let h = History::new(d.path(), Path::new("/x/memory"));
        let dead = h.reserve_id(1).unwrap();
        let fresh = h.reserve_id(2).unwrap();
        let now = std::time::SystemTime::now();
        let two_hours_ago = now - std::time::Duration::from_secs(7200);
        fs::File::options().write(true).open(h.dir().join(format!("{dead}.json"))).unwrap().set_modified(two_hours_ago).unwrap();
        let held = h.lock_records(h.dir()).unwrap();
        h.prune(&held, crate::lock::ms_since_epoch(now)).unwrap();
        assert!(!h.dir().join(format!("{dead}.json")).exists(), "the dead reservation is gone");
        assert!(h.dir().join(format!("{fresh}.json")).exists(), "a fresh one may be a dream still running");
    }

    #[test]
    fn mode_defaults_to_automatic_and_persists() {
        let d = tempfile::tempdir().unwrap();
        let h = History::new(d.path(), Path::new("/x/memory"));
        assert_eq!(h.mode().unwrap(), DreamMode::Automatic);
        h.set_mode(DreamMode::Review).unwrap();
        assert_eq!(h.mode().unwrap(), DreamMode::Review);
        assert!(h.list().unwrap().0.is_empty(), "the settings file is not a record");
        assert_eq!(DreamMode::parse(" Auto "), Some(DreamMode::Automatic));
        assert_eq!(DreamMode::parse("later"), None);
    }

    #[test]
    fn normalize_drops_dots_and_trailing_separators_and_takes_back_dot_dot() {
        for (given, want) in [
            ("/x/memory/", "/x/memory"),
            ("/x/./memory//", "/x/memory"),
            ("/x/y/../memory", "/x/memory"),
            ("/../x/memory", "/x/memory"),
            ("./memory", "memory"),
            ("../a/../memory", "../memory"),
        ] {
            assert_eq!(normalize(Path::new(given)), Path::new(want), "{given}");
        }
    }

    /// `/src/my_app/memory` and `/src/my-app/memory` share a history folder: each keeps its
    /// own mode, and a mode file written before modes were kept per folder still counts for
    /// both until each sets its own.
    #[test]
    fn folders_sharing_a_history_folder_keep_their_own_modes() {
        let d = tempfile::tempdir().unwrap();
        let a = History::new(d.path(), Path::new("/src/my_app/memory"));
        let b = History::new(d.path(), Path::new("/src/my-app/memory"));
        assert_eq!(a.dir(), b.dir(), "the sanitizer maps both to one key");
        fs::create_dir_all(a.dir()).unwrap();
        fs::write(a.dir().join(MODE_FILE), "{\n  \"dreamMode\": \"review\"\n}\n").unwrap();
        assert_eq!((a.mode().unwrap(), b.mode().unwrap()), (DreamMode::Review, DreamMode::Review), "an existing file keeps working");
        a.set_mode(DreamMode::Off).unwrap();
        assert_eq!((a.mode().unwrap(), b.mode().unwrap()), (DreamMode::Off, DreamMode::Review));
        b.set_mode(DreamMode::Automatic).unwrap();
        assert_eq!((a.mode().unwrap(), b.mode().unwrap()), (DreamMode::Off, DreamMode::Automatic));

        let fresh = tempfile::tempdir().unwrap();
        let a = History::new(fresh.path(), Path::new("/src/my_app/memory"));
        let b = History::new(fresh.path(), Path::new("/src/my-app/memory"));
        a.set_mode(DreamMode::Review).unwrap();
        assert_eq!(b.mode().unwrap(), DreamMode::Automatic, "a's choice is not b's");
    }
}
