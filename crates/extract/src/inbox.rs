//! The review inbox: what extraction (or dream) would write, held back until the user decides.
//!
//! In review mode a run's [`Changeset`] is staged as one item (one JSON file in Mneme's data
//! folder) and nothing touches the memory folder. Then, per item:
//!
//! - **keep**: the changeset is applied as a whole — every topic file lands together with its
//!   index line, or nothing does. If Claude Code changed any of the files since the item was
//!   staged, keeping is refused (nothing is overwritten) with a message saying so.
//! - **edit**: replace the proposed content of one file (its index line follows a changed
//!   description), then keep.
//! - **discard**: nothing is written; the item stays in the history as discarded.
//! - **promote**: the proposed memories go somewhere else instead of the private memory folder:
//!   appended to the project's `CLAUDE.md` or `CLAUDE.local.md` (atomically, refused if the file
//!   changed meanwhile), or into team memory (`<memory>/team/`, with its own index line), which
//!   is refused with Claude Code's message when the content holds a secret.
//!
//! Decided items stay in the history, but not forever: see [`retention`].

use crate::data;
use mneme_agent::{apply_changeset, ApplyError, Changeset, FileChange};
use mneme_core::versions::Profile;
use mneme_core::{Clock, MemoryType};
use mneme_store::atomic::Refusal;
use mneme_store::memdir::{render_entry, IndexDoc, MemdirError, Revision, Scope};
use mneme_store::file_lock::FileLock;
use mneme_store::textfile::{self, TextFileError};
use serde::{Deserialize, Serialize};
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

const INDEX_FILE: &str = "MEMORY.md";

/// How long decided inbox items are kept. Each item holds the full text of every file it
/// proposed, before and after, and a daemon that extracts at every session's end in review mode
/// stages items all day, so an inbox would otherwise grow by that much forever. The rule,
/// applied each time an item is decided (kept, edited and kept, discarded or promoted), under
/// the inbox's lock: a decided item goes only when it is past *both* of these.
///
/// An item that cannot be deleted does not fail the decision (it is already made): the
/// decision's item names it in [`InboxItem::not_pruned`], and the next decision tries again.
pub mod retention {
    /// Every item decided less than this long ago is kept: a month is how long a memory that
    /// went wrong can take to be noticed, and the item is where its before and after are.
    pub const KEEP_DAYS: u64 = 30;
    /// However old, each project's newest decided items are kept: a project decided on rarely
    /// would otherwise lose its whole history in one prune. Counted per project (per memory
    /// folder, the items the Inbox shows as one project's history), not over the whole inbox,
    /// so that a busy project's decisions never push out a quiet one's.
    pub const KEEP_NEWEST: usize = 20;
    /// [`KEEP_DAYS`] in milliseconds, the unit of an item's times.
    pub const KEEP_MS: u64 = KEEP_DAYS * 24 * 60 * 60 * 1000;
    // Never pruned whatever their age: a pending item (only a person may settle it), and a
    // file that cannot be read as an item (what it holds and how old it is are unknown; it
    // stays listed as damaged, for the user to delete).
}

/// Where a memory can be promoted to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum PromoteTarget {
    /// `<project>/CLAUDE.md` (checked in, shared).
    ClaudeMd,
    /// `<project>/CLAUDE.local.md` (private, not checked in).
    ClaudeLocal,
    /// `<memory>/team/` (synced to the team).
    Team,
}

impl PromoteTarget {
    pub fn parse(s: &str) -> Option<PromoteTarget> {
        match s {
            "claude-md" => Some(PromoteTarget::ClaudeMd),
            "claude-local" => Some(PromoteTarget::ClaudeLocal),
            "team" => Some(PromoteTarget::Team),
            _ => None,
        }
    }
}

/// Where an item stands.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "state")]
pub enum ItemStatus {
    Pending,
    Kept { at_ms: u64 },
    Discarded { at_ms: u64 },
    Promoted { at_ms: u64, to: PromoteTarget, paths: Vec<PathBuf> },
}

impl ItemStatus {
    fn word(&self) -> &'static str {
        match self {
            ItemStatus::Pending => "pending",
            ItemStatus::Kept { .. } => "kept",
            ItemStatus::Discarded { .. } => "discarded",
            ItemStatus::Promoted { .. } => "promoted",
        }
    }

    /// When the item was decided; `None` while it is pending.
    fn decided_ms(&self) -> Option<u64> {
        match self {
            ItemStatus::Pending => None,
            ItemStatus::Kept { at_ms } | ItemStatus::Discarded { at_ms } | ItemStatus::Promoted { at_ms, .. } => Some(*at_ms),
        }
    }
}

/// What an item would do to one memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ProposalAction {
    New,
    Update,
    Remove,
}

/// One memory an item proposes to write or remove (index files are not listed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Proposal {
    /// Relative to the memory folder.
    pub rel_path: String,
    pub action: ProposalAction,
    pub name: Option<String>,
    pub description: Option<String>,
    pub memory_type: Option<MemoryType>,
}

/// One staged run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InboxItem {
    pub id: String,
    /// The project (the folder Claude Code ran in, realpath'd).
    pub project_root: PathBuf,
    pub memory_dir: PathBuf,
    pub session_id: Option<String>,
    pub transcript: Option<PathBuf>,
    pub created_ms: u64,
    pub created_at: String,
    /// What produced it (`extract_memories`, `extract_memories (offline)`, `auto_dream`).
    pub source: String,
    pub changeset: Changeset,
    pub proposals: Vec<Proposal>,
    pub status: ItemStatus,
    /// Only on the item a decision returns, and only when the [`retention`] prune that follows
    /// the decision could not delete something: each decided item it left, with why. The
    /// decision itself stands (it was saved before the prune, so this is never in an item's
    /// file), and the next decision tries again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_pruned: Vec<NotPruned>,
    /// Fields a newer Mneme wrote that this build does not know, written back as they were
    /// when a decision rewrites the item.
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: mneme_core::own_files::Unknown,
}

/// What a [`retention`] prune could not delete: a decided item's file, or the inbox folder
/// itself when it could not be listed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NotPruned {
    pub path: PathBuf,
    /// The system's error.
    pub error: String,
}

/// What to stage.
#[derive(Debug, Clone)]
pub struct NewItem {
    pub project_root: PathBuf,
    pub memory_dir: PathBuf,
    pub session_id: Option<String>,
    pub transcript: Option<PathBuf>,
    pub source: String,
    pub changeset: Changeset,
}

/// Every way an inbox action fails. Nothing is ever half-written.
#[derive(Debug, thiserror::Error)]
pub enum InboxError {
    #[error("there is no inbox item `{0}`; run `mneme inbox list` to see the ids")]
    NotFound(String),
    #[error("inbox item {id} was already {status}; nothing was done")]
    NotPending { id: String, status: &'static str },
    #[error("{} changed since this item was staged (Claude Code may have written it). Nothing was written. Look at the file as it is now, then give the text you want with `mneme inbox edit` (or Edit in the Inbox), which keeps it in place of the current file, or discard the item.", path.display())]
    Changed { path: PathBuf },
    #[error("{0}")]
    Apply(ApplyError),
    #[error("{} is not one of the files of inbox item {id}; pass one of: {}", path, choices.join(", "))]
    NotInItem { id: String, path: String, choices: Vec<String> },
    #[error("inbox item {0} proposes no memory to promote (only removals or index changes); keep or discard it instead")]
    NothingToPromote(String),
    #[error(transparent)]
    Secret(#[from] mneme_secrets::TeamWriteRefused),
    #[error("Not written to CLAUDE.md: the memory appears to contain a secret ({labels}), and CLAUDE.md is checked in for everyone with the repository. Remove the secret (edit the item), keep it as a private memory (Claude Code's memory folder is outside the repository), or promote it to CLAUDE.local.md once git ignores that file in this project.")]
    SecretInClaudeMd { labels: String },
    #[error("Not written to CLAUDE.local.md: the memory appears to contain a secret ({labels}), and git does not ignore CLAUDE.local.md in this project (or could not say whether it does), so it could be committed with everything else. Remove the secret (edit the item), keep it as a private memory (Claude Code's memory folder is outside the repository), or add CLAUDE.local.md to the project's .gitignore first.")]
    SecretInClaudeLocal { labels: String },
    #[error("team memory {} already exists; edit it in the Memories screen instead of promoting over it", path.display())]
    TeamExists { path: PathBuf },
    #[error("{first} and {second} would both become team memory {team}, which holds one file. Nothing was written: keep the item and promote them one at a time from the Memories screen (renaming one), or discard it.")]
    TeamNameClash { first: String, second: String, team: String },
    #[error("{} is a link to {}, outside the project (or to nothing). Nothing was written: promote to it only once it is a file of this project, or copy the memory there yourself.", path.display(), target.display())]
    LinkLeadsOut { path: PathBuf, target: PathBuf },
    #[error("{}", damaged_text(id, path, detail, *newer))]
    Damaged {
        id: String,
        path: PathBuf,
        detail: String,
        /// It holds a value only a newer Mneme knows (a status this build lacks): the file is
        /// sound, so it is not to be deleted but read by an updated Mneme.
        newer: bool,
    },
    #[error(transparent)]
    Memdir(#[from] MemdirError),
    #[error("{}", io_error_text(action, path, source))]
    Io { action: &'static str, path: PathBuf, source: io::Error },
}

/// [`InboxError::Damaged`] for people: a file cut short is to be deleted; one a newer Mneme
/// wrote is left for it (deleting it would lose an item that build can still decide).
fn damaged_text(id: &str, path: &Path, detail: &str, newer: bool) -> String {
    if newer {
        format!("inbox item {id} ({}) cannot be read by this build: {detail}. This build leaves it as it is.", path.display())
    } else {
        format!("inbox item {id} is damaged: it is not valid JSON ({detail}). Delete it ({}); nothing else depends on it.", path.display())
    }
}

/// A failure on one of Mneme's own files, for people. The disk's refusal (full, read-only,
/// another account's) says which and what to do ([`Refusal::says`]), where the system's bare
/// words ("No space left on device") say neither. A refusal that already names the file,
/// says what is there and what to do (a FIFO or folder under an item's name, a file too large)
/// is passed on as it is; the data folder's permissions are named only when they are the
/// cause, since a writable folder mends nothing else.
pub(crate) fn io_error_text(action: &str, path: &Path, source: &io::Error) -> String {
    let shown = path.display().to_string();
    let text = source.to_string();
    // A read refused for permissions is not a write refused: that keeps the words below.
    if let Some(r) = Refusal::of(source).filter(|_| action != "read") {
        return format!("could not {action} {shown}: {}.", r.says(path));
    }
    if text.contains(&shown) {
        return text;
    }
    match source.kind() {
        io::ErrorKind::PermissionDenied | io::ErrorKind::ReadOnlyFilesystem => {
            format!("could not {action} {shown}: {text}. Check that Mneme's data folder is writable.")
        }
        _ => format!("could not {action} {shown}: {text}."),
    }
}

impl InboxError {
    /// A read refused for what stands under an item's name (not a plain file, or too large).
    fn is_not_an_item_file(&self) -> bool {
        matches!(self, InboxError::Io { action: "read", source, .. }
            if matches!(source.kind(), io::ErrorKind::InvalidInput | io::ErrorKind::FileTooLarge))
    }

    /// A stable code for front ends.
    pub fn code(&self) -> &'static str {
        match self {
            InboxError::NotFound(_) => "not-found",
            InboxError::NotPending { .. } => "not-pending",
            InboxError::Changed { .. } => "changed-on-disk",
            InboxError::Apply(_) => "apply-failed",
            InboxError::NotInItem { .. } => "invalid-input",
            InboxError::NothingToPromote(_) => "nothing-to-promote",
            InboxError::Secret(_) => "secrets-in-team-memory",
            InboxError::SecretInClaudeMd { .. } | InboxError::SecretInClaudeLocal { .. } => "secrets-in-claude-md",
            InboxError::TeamExists { .. } => "already-exists",
            InboxError::TeamNameClash { .. } => "name-clash",
            InboxError::LinkLeadsOut { .. } => "outside-project",
            InboxError::Damaged { .. } => "damaged",
            InboxError::Memdir(e) => e.code(),
            InboxError::Io { .. } => "io",
        }
    }
}

/// Where a promotion to the project's `CLAUDE.md` (or `CLAUDE.local.md`) writes: the file, or
/// the file a link there leads to (`CLAUDE.md -> AGENTS.md` is common), as long as that stays
/// inside the project. A cloned repository's `CLAUDE.md -> ~/.bashrc` must not get a memory
/// appended to it unseen.
fn claude_md_target(project_root: &Path, name: &str) -> Result<PathBuf, InboxError> {
    let path = project_root.join(name);
    if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Ok(path);
    }
    let root = std::fs::canonicalize(project_root).unwrap_or_else(|_| project_root.to_path_buf());
    match std::fs::canonicalize(&path) {
        Ok(target) if target.starts_with(&root) => Ok(path),
        Ok(target) => Err(InboxError::LinkLeadsOut { path, target }),
        // A dangling link: writing would create its target wherever it points.
        Err(_) => Err(InboxError::LinkLeadsOut { target: std::fs::read_link(&path).unwrap_or_default(), path }),
    }
}

/// Whether `path` (in the project) cannot be committed: the project is not in a git
/// repository, or git ignores the file (through a link, the file it leads to). A file git
/// tracks is not ignored, and when git cannot be asked the answer is no.
fn stays_out_of_git(project_root: &Path, path: &Path) -> bool {
    if mneme_store::git::find_git_root(project_root).is_none() {
        return true;
    }
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    std::process::Command::new("git")
        .arg("check-ignore")
        .arg("-q")
        .arg("--")
        .arg(&real)
        .current_dir(project_root)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

fn from_textfile(e: TextFileError) -> InboxError {
    match e {
        TextFileError::ChangedOnDisk { path } => InboxError::Changed { path },
        TextFileError::Io { action, path, source } => InboxError::Io { action, path, source },
        TextFileError::NotARegularFile { path } | TextFileError::NoParent { path } => InboxError::Memdir(MemdirError::NotARegularFile {
            path: path.display().to_string(),
            detail: "not a plain file".into(),
        }),
    }
}

fn from_apply(e: ApplyError) -> InboxError {
    match e {
        ApplyError::Changed { path } => InboxError::Changed { path },
        other => InboxError::Apply(other),
    }
}

fn rel_of(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).map(|r| r.to_string_lossy().replace('\\', "/")).unwrap_or_else(|_| path.to_string_lossy().into_owned())
}

fn is_index(rel: &str) -> bool {
    rel.rsplit('/').next() == Some(INDEX_FILE)
}

/// The memories a changeset proposes.
pub fn proposals(changeset: &Changeset) -> Vec<Proposal> {
    changeset
        .changes
        .iter()
        .filter_map(|c| {
            let rel = rel_of(&changeset.root, &c.path);
            if is_index(&rel) {
                return None;
            }
            let action = match (&c.before, &c.after) {
                (None, _) => ProposalAction::New,
                (Some(_), Some(_)) => ProposalAction::Update,
                (Some(_), None) => ProposalAction::Remove,
            };
            let fm = c
                .after
                .as_deref()
                .or(c.before.as_deref())
                .and_then(|t| mneme_core::frontmatter::parse(t).frontmatter);
            Some(Proposal {
                rel_path: rel,
                action,
                name: fm.as_ref().and_then(|f| f.name()),
                description: fm.as_ref().and_then(|f| f.description()),
                memory_type: fm.as_ref().and_then(|f| f.memory_type()),
            })
        })
        .collect()
}

/// The inbox in Mneme's data folder.
#[derive(Clone)]
pub struct Inbox {
    data_dir: PathBuf,
    clock: Arc<dyn Clock>,
    /// The Claude Code release the user runs, looked up only when an item is decided (see
    /// [`Inbox::for_release`]): listing the inbox never waits for it.
    release: Arc<dyn Fn() -> Profile + Send + Sync>,
}

impl std::fmt::Debug for Inbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inbox").field("data_dir", &self.data_dir).finish_non_exhaustive()
    }
}

impl Inbox {
    /// The inbox in `data_dir`, deciding items for the newest release unless told otherwise
    /// ([`Inbox::for_release`]).
    pub fn new(data_dir: impl Into<PathBuf>, clock: Arc<dyn Clock>) -> Inbox {
        Inbox { data_dir: data_dir.into(), clock, release: Arc::new(mneme_core::versions::newest) }
    }

    /// Decides items for the release `release` answers (called once per keep, edit or
    /// promotion, not for a listing): the index lines a keep, an edit or a promotion to team
    /// memory changes, and those a removal takes with it, are split as that release reads
    /// them (from 2.1.284 a lone CR ends a line, row 9 of docs/claude-code-versions.md).
    pub fn for_release(mut self, release: impl Fn() -> Profile + Send + Sync + 'static) -> Inbox {
        self.release = Arc::new(release);
        self
    }

    fn now_ms(&self) -> u64 {
        self.clock.now_ms() as u64
    }

    fn path_of(&self, id: &str) -> Result<PathBuf, InboxError> {
        /// Far above any id Mneme makes, far below a file name's 255 bytes with `.json`.
        const MAX_ID_LEN: usize = 128;
        // Ids are ours (digits, a dash, hex: a few dozen characters); anything else cannot name
        // an item. The length bound answers "not found" for a name the file system would refuse
        // as too long, instead of an I/O error.
        if id.is_empty() || id.len() > MAX_ID_LEN || !id.chars().all(|c| c.is_ascii_alphanumeric() || c == '-') {
            return Err(InboxError::NotFound(id.to_string()));
        }
        Ok(data::inbox_dir(&self.data_dir).join(format!("{id}.json")))
    }

    /// Runs `act` on the pending item `id` and returns the item as `act` left it, holding the
    /// inbox's lock from reading the item to saving its new state, so that of keep, edit,
    /// discard and promote racing on one item (two windows, the app and the CLI) exactly one
    /// acts and the others then find it no longer pending. `act` saves what it changed.
    ///
    /// One lock for the whole inbox: the inbox folder itself is locked, so no lock file is
    /// made and none is left behind. A lock file per item cannot be deleted once its item is
    /// decided: a process already waiting holds the old file open, and once it is deleted the
    /// next process locks a new file of the same name, so two would hold "the" lock at once.
    /// (Deleting while holding and checking after each take that the file locked is still the
    /// one of that name closes that, at the cost of a retry loop every caller must get right.)
    /// A decision takes milliseconds and a person makes it, so one inbox-wide lock costs nothing
    /// worth having per-item locks for. An id that names no item takes no lock.
    fn with_pending_item(&self, id: &str, act: impl FnOnce(&mut InboxItem) -> Result<(), InboxError>) -> Result<InboxItem, InboxError> {
        self.get(id)?;
        let dir = data::inbox_dir(&self.data_dir);
        let _lock = FileLock::take_folder(&dir).map_err(|source| InboxError::Io { action: "lock", path: dir.clone(), source })?;
        #[cfg(test)]
        tests::LOCKS_TAKEN.with(|n| n.set(n.get() + 1));
        // Read again under the lock: another process may have decided it meanwhile.
        let mut item = self.pending(id)?;
        act(&mut item)?;
        // Mneme once locked each item with a `<id>.lock` beside it and left it there. Nothing
        // takes those any more, so the item's own goes once something is done with it.
        let _ = std::fs::remove_file(dir.join(format!("{id}.lock")));
        // A decision is the one time the history grows, so it is when the history is pruned
        // (no job of its own). The decision is already saved and the user's files written: a
        // prune that fails must not report it as failed, but says what it left, and the next
        // decision tries again.
        if item.status != ItemStatus::Pending {
            item.not_pruned = self.prune(&_lock);
        }
        Ok(item)
    }

    /// Deletes the decided items [`retention`] no longer keeps, returning what it could not
    /// delete. `_held` is the inbox's lock, which the caller holds: no item can be decided (or
    /// its file rewritten) while its status is judged here.
    ///
    /// Only a file read in full as an item, whose name is that item's id, is ever deleted:
    /// a damaged file stays (and stays listed as damaged), and so does anything else in the
    /// folder. A file that cannot be deleted is left for the next prune.
    fn prune(&self, _held: &FileLock) -> Vec<NotPruned> {
        let now = self.now_ms();
        let files = match self.item_files() {
            Ok(files) => files,
            Err(InboxError::Io { path, source, .. }) => return vec![NotPruned { path, error: source.to_string() }],
            Err(other) => return vec![NotPruned { path: data::inbox_dir(&self.data_dir), error: other.to_string() }],
        };
        let mut decided: Vec<(u64, u64, String, PathBuf, PathBuf)> = files
            .into_iter()
            .filter_map(|path| {
                let item = data::read_json::<InboxItem>(&path).ok().flatten()?;
                let at = item.status.decided_ms()?;
                path.file_stem().is_some_and(|s| s == item.id.as_str()).then_some((at, item.created_ms, item.id, item.memory_dir, path))
            })
            .collect();
        // Newest decision first; ties by newest item, then id, so the cut is the same each time.
        decided.sort_by(|a, b| b.0.cmp(&a.0).then_with(|| b.1.cmp(&a.1)).then_with(|| b.2.cmp(&a.2)));
        // How many of each project's decided items were kept as its newest so far.
        let mut newest: std::collections::HashMap<PathBuf, usize> = std::collections::HashMap::new();
        let mut not_pruned = Vec::new();
        for (at, _, _, memory_dir, path) in decided {
            let count = newest.entry(memory_dir).or_default();
            if *count < retention::KEEP_NEWEST {
                *count += 1;
                continue;
            }
            if now.saturating_sub(at) < retention::KEEP_MS {
                continue;
            }
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                // Gone already (deleted by hand meanwhile): what the prune wanted.
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => not_pruned.push(NotPruned { path, error: e.to_string() }),
            }
        }
        not_pruned
    }

    /// The inbox folder's `.json` files, each an item or a damaged one; none when the folder
    /// was never made. Listing, the damaged list and the prune all start here.
    fn item_files(&self) -> Result<Vec<PathBuf>, InboxError> {
        let dir = data::inbox_dir(&self.data_dir);
        let entries = match std::fs::read_dir(&dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(source) => return Err(InboxError::Io { action: "read", path: dir, source }),
        };
        Ok(entries.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect())
    }

    fn save(&self, item: &InboxItem) -> Result<(), InboxError> {
        let path = self.path_of(&item.id)?;
        data::write_json(&path, item).map_err(|source| InboxError::Io { action: "write", path, source })
    }

    /// Stages a changeset; nothing is written to the memory folder.
    pub fn stage(&self, new: NewItem) -> Result<InboxItem, InboxError> {
        let now = self.now_ms();
        let item = InboxItem {
            id: data::new_id(now as u128),
            project_root: new.project_root,
            memory_dir: new.memory_dir,
            session_id: new.session_id,
            transcript: new.transcript,
            created_ms: now,
            created_at: mneme_core::text::iso8601_millis(now as i128),
            source: new.source,
            proposals: proposals(&new.changeset),
            changeset: new.changeset,
            status: ItemStatus::Pending,
            not_pruned: Vec::new(),
            extra: Default::default(),
        };
        self.save(&item)?;
        Ok(item)
    }

    /// One item.
    pub fn get(&self, id: &str) -> Result<InboxItem, InboxError> {
        let path = self.path_of(id)?;
        match data::read_json(&path) {
            Ok(Some(item)) => Ok(item),
            Ok(None) => Err(InboxError::NotFound(id.to_string())),
            // A writable folder does not mend a file cut short: say which file, and what to do.
            Err(source) if source.kind() == io::ErrorKind::InvalidData => {
                // Serde's own error, when that is what it is: a value this build lacks is named
                // as a newer Mneme's, with what to do.
                let parse = source.get_ref().and_then(|e| e.downcast_ref::<serde_json::Error>());
                let newer = parse.is_some_and(mneme_core::own_files::is_unknown_value);
                let detail = parse.map_or_else(|| source.to_string(), mneme_core::own_files::parse_failure);
                Err(InboxError::Damaged { id: id.to_string(), path, detail, newer })
            }
            Err(source) => Err(InboxError::Io { action: "read", path, source }),
        }
    }

    /// The item files that cannot be read as items (cut short by a crash or a full disk, or
    /// edited by hand), which [`list`](Self::list) cannot show: each as the error that names it
    /// and says to delete it.
    pub fn damaged(&self) -> Result<Vec<InboxError>, InboxError> {
        let mut damaged: Vec<InboxError> = self
            .item_files()?
            .into_iter()
            .filter_map(|path| {
                let id = path.file_stem()?.to_string_lossy().into_owned();
                match self.get(&id) {
                    Err(d @ InboxError::Damaged { .. }) => Some(d),
                    // A FIFO, folder or socket under an item's name, or a file too large to be
                    // an item: [`list`](Self::list) cannot show it either, and its error says
                    // what it is and to move it aside or delete it.
                    Err(e @ InboxError::Io { .. }) if e.is_not_an_item_file() => Some(e),
                    _ => None,
                }
            })
            .collect();
        damaged.sort_by_key(|d| d.to_string());
        Ok(damaged)
    }

    /// Items, newest first: only pending ones unless `history`; only one project's when
    /// `memory_dir` is given. A damaged item file is not among them: [`damaged`](Self::damaged)
    /// names those.
    pub fn list(&self, memory_dir: Option<&Path>, history: bool) -> Result<Vec<InboxItem>, InboxError> {
        let mut items: Vec<InboxItem> = self
            .item_files()?
            .into_iter()
            .filter_map(|path| data::read_json::<InboxItem>(&path).ok().flatten())
            .filter(|i| memory_dir.is_none_or(|m| i.memory_dir == m))
            .filter(|i| history || i.status == ItemStatus::Pending)
            .collect();
        items.sort_by(|a, b| b.created_ms.cmp(&a.created_ms).then_with(|| b.id.cmp(&a.id)));
        Ok(items)
    }

    fn pending(&self, id: &str) -> Result<InboxItem, InboxError> {
        let item = self.get(id)?;
        if item.status != ItemStatus::Pending {
            return Err(InboxError::NotPending { id: id.to_string(), status: item.status.word() });
        }
        Ok(item)
    }

    /// Applies the item's changeset as a whole and marks it kept. An index Claude Code changed
    /// since the item was staged (it adds a line whenever it saves a memory) is not a reason
    /// to refuse: the item's own line changes are made to the index as it is now. A memory
    /// file that changed is: its new text is Claude Code's, and only the user may replace it.
    ///
    /// A file that already holds what the item proposes (a keep whose result was written but
    /// whose item could not be marked kept, retried) is not a change Claude Code made: it is
    /// left as it is and the rest is kept.
    pub fn keep(&self, id: &str) -> Result<InboxItem, InboxError> {
        self.with_pending_item(id, |item| self.keep_item(item))
    }

    /// [`keep`](Self::keep) of an item read under the inbox's lock.
    fn keep_item(&self, item: &mut InboxItem) -> Result<(), InboxError> {
        let trash = data::trash_dir(&self.data_dir, &item.memory_dir);
        let release = (self.release)();
        let mut changeset = item.changeset.clone();
        for change in changeset.changes.iter_mut().filter(|c| is_index(&rel_of(&item.changeset.root, &c.path))) {
            let Some(after) = change.after.as_deref() else { continue };
            let current = match read_memory_file(&change.path) {
                Ok(bytes) => match String::from_utf8(bytes) {
                    Ok(text) => Some(text),
                    // Not text: leave it to the apply's check, which refuses.
                    Err(_) => continue,
                },
                Err(e) if e.kind() == io::ErrorKind::NotFound => None,
                Err(_) => continue,
            };
            if current != change.before {
                let rebased = rebase_index(change.before.as_deref().unwrap_or(""), after, current.as_deref().unwrap_or(""), &release);
                change.after = Some(rebased);
                change.before = current;
            }
        }
        // Team memory is shared with everyone in the repository: whatever this item writes
        // under `team/` (the team index included) passes the check every other way in passes,
        // however it got there (an edit, a model that wrote there, a hand-made item).
        check_team_changes(&changeset)?;
        let mut to_apply = changeset.clone();
        to_apply.changes.retain(|c| is_index(&rel_of(&changeset.root, &c.path)) || !already_as_proposed(c));
        item.changeset = changeset;
        item.status = ItemStatus::Kept { at_ms: self.now_ms() };
        self.save_after(item, || match to_apply.changes.is_empty() {
            true => Ok(()),
            false => apply_changeset(&to_apply, &trash, self.clock.clone(), &release).map(|_| ()).map_err(from_apply),
        })
    }

    /// Replaces the proposed content of one file of a pending item (`file`: its path relative
    /// to the memory folder, or its base name). When a memory's `description:` changes, its
    /// line in the proposed index follows.
    pub fn edit(&self, id: &str, file: &str, content: String) -> Result<InboxItem, InboxError> {
        self.with_pending_item(id, |item| self.edit_item(item, file, content))
    }

    /// [`edit`](Self::edit) of an item read under the inbox's lock; saves it.
    fn edit_item(&self, item: &mut InboxItem, file: &str, content: String) -> Result<(), InboxError> {
        let id = item.id.clone();
        let root = item.changeset.root.clone();
        let choices: Vec<String> = item
            .changeset
            .changes
            .iter()
            .filter(|c| c.after.is_some())
            .map(|c| rel_of(&root, &c.path))
            .collect();
        let pos = item.changeset.changes.iter().position(|c| {
            let rel = rel_of(&root, &c.path);
            c.after.is_some() && (rel == file || c.path.file_name().is_some_and(|n| n == file))
        });
        let Some(pos) = pos else {
            return Err(InboxError::NotInItem { id, path: file.to_string(), choices });
        };
        let rel = rel_of(&root, &item.changeset.changes[pos].path);
        item.changeset.changes[pos].after = Some(content.clone());
        // The user has said what this file should hold, so it replaces the file as it is now,
        // even when Claude Code changed it since the item was staged (keeping is refused for
        // such a file until then). A file that is not text stays guarded.
        match read_memory_file(&item.changeset.changes[pos].path) {
            Ok(bytes) => {
                if let Ok(text) = String::from_utf8(bytes) {
                    item.changeset.changes[pos].before = Some(text);
                }
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => item.changeset.changes[pos].before = None,
            Err(_) => {}
        }
        if !is_index(&rel) {
            let fm = mneme_core::frontmatter::parse(&content).frontmatter;
            let description = fm.as_ref().and_then(|f| f.description());
            let scope = Scope::of(&rel);
            let index_path = root.join(scope.index_rel_path());
            if let (Some(desc), Some(index)) =
                (description, item.changeset.changes.iter_mut().find(|c| c.path == index_path))
            {
                if let Some(after) = index.after.as_mut() {
                    let release = (self.release)();
                    let mut doc = IndexDoc::parse_as(after, &release);
                    let hit = doc.entries(scope, &root).into_iter().find(|(_, e)| e.rel_path == rel);
                    if let Some((i, e)) = hit {
                        doc.lines[i].text = render_entry(&e.title, &rel, scope, Some(&desc));
                        *after = doc.render_as(after, &release);
                    }
                }
            }
        }
        item.proposals = proposals(&item.changeset);
        self.save(item)
    }

    /// [`edit`](Self::edit), then [`keep`](Self::keep), under one hold of the lock: nothing
    /// can decide the item between the two. The edit is saved before the keep, so a keep that
    /// is refused (a file changed on disk, a secret headed for team memory) leaves the item
    /// pending with the user's text in it, not lost.
    pub fn edit_and_keep(&self, id: &str, file: &str, content: String) -> Result<InboxItem, InboxError> {
        self.with_pending_item(id, |item| {
            self.edit_item(item, file, content)?;
            self.keep_item(item)
        })
    }

    /// Marks the item discarded; nothing is written. It stays in the history.
    pub fn discard(&self, id: &str) -> Result<InboxItem, InboxError> {
        self.with_pending_item(id, |item| {
            item.status = ItemStatus::Discarded { at_ms: self.now_ms() };
            self.save(item)
        })
    }

    /// Sends the item's proposed memories to `target` instead of the private memory folder.
    ///
    /// Retried after the memories went where they were sent but the item could not be marked
    /// promoted, nothing is added twice: a `CLAUDE.md` that already ends with them, and team
    /// files that already hold them, are left as they are.
    pub fn promote(&self, id: &str, target: PromoteTarget) -> Result<InboxItem, InboxError> {
        self.with_pending_item(id, |item| self.promote_item(item, target))
    }

    /// [`promote`](Self::promote) of an item read under the inbox's lock.
    fn promote_item(&self, item: &mut InboxItem, target: PromoteTarget) -> Result<(), InboxError> {
        let id = item.id.as_str();
        let root = item.changeset.root.clone();
        let memories: Vec<&FileChange> = item
            .changeset
            .changes
            .iter()
            .filter(|c| c.after.is_some() && !is_index(&rel_of(&root, &c.path)) && Scope::of(&rel_of(&root, &c.path)) == Scope::Private)
            .collect();
        if memories.is_empty() {
            return Err(InboxError::NothingToPromote(id.to_string()));
        }
        let trash = data::trash_dir(&self.data_dir, &item.memory_dir);
        let (paths, write): (Vec<PathBuf>, Deferred) = match target {
            PromoteTarget::ClaudeMd | PromoteTarget::ClaudeLocal => {
                let name = if target == PromoteTarget::ClaudeMd { "CLAUDE.md" } else { "CLAUDE.local.md" };
                let path = claude_md_target(&item.project_root, name)?;
                let (existing, revision) = match textfile::read(&path).map_err(from_textfile)? {
                    Some((b, meta)) => {
                        let revision = Revision::of(&b, &meta);
                        (String::from_utf8(b).map_err(|e| MemdirError::not_utf8(name, e.as_bytes()))?, revision)
                    }
                    None => (String::new(), Revision::ABSENT),
                };
                let updated = append_to_claude_md(&existing, &memories);
                // CLAUDE.md is checked in; CLAUDE.local.md is private only while git ignores it.
                let added: String = memories.iter().filter_map(|m| m.after.as_deref()).collect::<Vec<_>>().join("\n");
                let found = mneme_secrets::scan_team(&added);
                if !found.is_empty() {
                    let labels = found.iter().map(|f| f.label.as_str()).collect::<Vec<_>>().join(", ");
                    if target == PromoteTarget::ClaudeMd {
                        return Err(InboxError::SecretInClaudeMd { labels });
                    }
                    if !stays_out_of_git(&item.project_root, &path) {
                        return Err(InboxError::SecretInClaudeLocal { labels });
                    }
                }
                let appended = already_appended(&existing, &memories);
                let write: Deferred = Box::new(move || match appended {
                    true => Ok(()),
                    false => textfile::write_checked(&path, updated.as_bytes(), &revision).map(|_| ()).map_err(from_textfile),
                });
                (vec![item.project_root.join(name)], write)
            }
            PromoteTarget::Team => {
                let release = (self.release)();
                let (changeset, paths) = team_changeset(item, &memories, &release)?;
                let clock = self.clock.clone();
                let write: Deferred = Box::new(move || match changeset.changes.is_empty() {
                    true => Ok(()),
                    false => apply_changeset(&changeset, &trash, clock, &release).map(|_| ()).map_err(from_apply),
                });
                (paths, write)
            }
        };
        item.status = ItemStatus::Promoted { at_ms: self.now_ms(), to: target, paths };
        self.save_after(item, write)
    }

    /// Saves `item` once `write` (what deciding it writes outside the inbox: memories, the
    /// index, CLAUDE.md) has succeeded. Its new text is on disk beside it first, so a disk that
    /// refuses the inbox (full, read-only) refuses before `write` changes anything, rather than
    /// after the memories are written with the item still pending; the item takes its new text
    /// only once `write` is done, and a `write` that fails leaves it as it was.
    fn save_after(&self, item: &InboxItem, write: impl FnOnce() -> Result<(), InboxError>) -> Result<(), InboxError> {
        let path = self.path_of(&item.id)?;
        let bytes = data::json_bytes(item).map_err(|source| InboxError::Io { action: "write", path: path.clone(), source })?;
        let mut failed = None;
        let saved = mneme_store::atomic::write_atomic_if(&path, &bytes, || match write() {
            Ok(()) => Ok(true),
            Err(e) => {
                failed = Some(e);
                Ok(false)
            }
        });
        if let Some(e) = failed {
            return Err(e);
        }
        saved.map(|_| ()).map_err(|source| InboxError::Io { action: "write", path, source })
    }
}

/// What deciding an item writes outside the inbox, run by [`Inbox::save_after`].
type Deferred = Box<dyn FnOnce() -> Result<(), InboxError>>;

/// A memory folder's file read whole, as keeping, editing and promoting compare it: without
/// waiting on a FIFO planted in its place (refused as not a plain file, where `fs::read` waited
/// for ever) and at most [`crate::offline::MAX_MEMORY_READ_BYTES`]. A missing file is
/// [`io::ErrorKind::NotFound`], as `fs::read` gives it.
fn read_memory_file(path: &Path) -> io::Result<Vec<u8>> {
    mneme_store::open::read_plain_capped(path, crate::offline::MAX_MEMORY_READ_BYTES).map(|(bytes, _)| bytes)
}

/// Whether the file already holds what `change` proposes (absent, for a removal).
fn already_as_proposed(change: &FileChange) -> bool {
    match read_memory_file(&change.path) {
        Ok(bytes) => change.after.as_deref().is_some_and(|after| after.as_bytes() == bytes),
        Err(e) if e.kind() == io::ErrorKind::NotFound => change.after.is_none(),
        Err(_) => false,
    }
}

/// Whether `existing` already ends with what promoting `memories` would add to it: a
/// promotion retried after its write.
fn already_appended(existing: &str, memories: &[&FileChange]) -> bool {
    let unix = |s: &str| s.replace("\r\n", "\n").trim_end_matches('\n').to_string();
    let addition = unix(&append_to_claude_md("", memories));
    let existing = unix(existing);
    !addition.is_empty() && (existing == addition || existing.ends_with(&format!("\n{addition}")))
}

/// Refuses a changeset that would put a secret into team memory: every file it writes under
/// `team/`, the team index included, is scanned as a promotion to team is.
fn check_team_changes(changeset: &Changeset) -> Result<(), InboxError> {
    for change in &changeset.changes {
        if Scope::of(&rel_of(&changeset.root, &change.path)) == Scope::Team {
            if let Some(after) = change.after.as_deref() {
                mneme_secrets::check_team_content(after)?;
            }
        }
    }
    Ok(())
}

/// The index an item proposed (`after`, made from `before`), redone on the index as it is now:
/// the lines the item removed are removed where they still are, and the lines it added are
/// added after the last one, unless the index already holds them. Lines anyone else added or
/// removed since stay as they are.
/// Each index is split into lines as `release` reads it.
fn rebase_index(before: &str, after: &str, current: &str, release: &Profile) -> String {
    let (before, after) = (IndexDoc::parse_as(before, release), IndexDoc::parse_as(after, release));
    let mut doc = IndexDoc::parse_as(current, release);
    let count = |doc: &IndexDoc, text: &str| doc.lines.iter().filter(|l| l.text == text).count();
    let mut removed: Vec<&str> = Vec::new();
    for l in &before.lines {
        let text = l.text.as_str();
        if !removed.contains(&text) && count(&after, text) < count(&before, text) {
            removed.push(text);
        }
    }
    for text in removed {
        let extra = count(&before, text) - count(&after, text);
        let at: Vec<usize> = doc.lines.iter().enumerate().filter(|(_, l)| l.text == text).map(|(i, _)| i).take(extra).collect();
        doc.remove(&at);
    }
    for l in &after.lines {
        if count(&before, &l.text) < count(&after, &l.text) && count(&doc, &l.text) < count(&after, &l.text) && !l.text.trim().is_empty() {
            doc.append(l.text.clone());
        }
    }
    doc.render_as(current, release)
}

/// A memory's body without its frontmatter.
fn body_of(content: &str) -> &str {
    mneme_core::frontmatter::parse(content).body.trim()
}

/// Appends each memory's body: a one-paragraph body as a bullet, a longer one as a section
/// headed by the memory's name.
fn append_to_claude_md(existing: &str, memories: &[&FileChange]) -> String {
    let mut bullets = Vec::new();
    let mut sections = Vec::new();
    for m in memories {
        let content = m.after.as_deref().unwrap_or_default();
        let body = body_of(content);
        let fm = mneme_core::frontmatter::parse(content).frontmatter;
        if !body.contains("\n\n") && !body.is_empty() {
            bullets.push(format!("- {}", body.lines().map(str::trim).collect::<Vec<_>>().join(" ")));
        } else {
            let heading = fm
                .as_ref()
                .and_then(|f| f.description().or_else(|| f.name()))
                .unwrap_or_else(|| m.path.file_stem().map(|s| s.to_string_lossy().into_owned()).unwrap_or_default());
            sections.push(format!("## {heading}\n\n{body}"));
        }
    }
    let mut blocks = Vec::new();
    if !bullets.is_empty() {
        blocks.push(bullets.join("\n"));
    }
    blocks.extend(sections);
    let addition = blocks.join("\n\n");
    let head = existing.trim_end_matches(['\n', '\r']);
    let whole = if head.is_empty() { format!("{addition}\n") } else { format!("{head}\n\n{addition}\n") };
    // A file written with CRLF line ends keeps them on the added lines too.
    if existing.contains("\r\n") {
        whole.replace("\r\n", "\n").replace('\n', "\r\n")
    } else {
        whole
    }
}

/// The changes that put the item's memories into `team/` with their team index lines.
/// With the paths the memories and the index end up at (those already there included).
fn team_changeset(item: &InboxItem, memories: &[&FileChange], release: &Profile) -> Result<(Changeset, Vec<PathBuf>), InboxError> {
    let root = &item.memory_dir;
    let index_rel = Scope::Team.index_rel_path();
    let index_path = root.join(index_rel);
    let index_before = match read_memory_file(&index_path) {
        Ok(b) => Some(String::from_utf8(b).map_err(|e| MemdirError::not_utf8(index_rel, e.as_bytes()))?),
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(source) => return Err(InboxError::Io { action: "read", path: index_path, source }),
    };
    let mut index = IndexDoc::parse_as(index_before.as_deref().unwrap_or(""), release);
    let private_index = item
        .changeset
        .changes
        .iter()
        .find(|c| c.path == root.join(INDEX_FILE))
        .and_then(|c| c.after.clone())
        .map(|t| IndexDoc::parse_as(&t, release));
    let mut changes = Vec::new();
    let mut paths = Vec::new();
    for m in memories {
        let content = m.after.clone().unwrap_or_default();
        mneme_secrets::check_team_content(&content)?;
        let base = m.path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
        let team_rel = format!("team/{base}");
        let path = root.join(&team_rel);
        // `x.md` and `notes/x.md` both land at `team/x.md`: say so, rather than let the second
        // look like a file changed on disk.
        if let Some(first) = memories.iter().take_while(|o| o.path != m.path).find(|o| o.path.file_name() == m.path.file_name()) {
            return Err(InboxError::TeamNameClash { first: rel_of(root, &first.path), second: rel_of(root, &m.path), team: team_rel });
        }
        paths.push(path.clone());
        if std::fs::symlink_metadata(&path).is_ok() {
            // Already promoted (a retry): the file holds this very memory and the index its line.
            let indexed = index.entries(Scope::Team, root).iter().any(|(_, e)| e.rel_path == team_rel);
            if indexed && read_memory_file(&path).is_ok_and(|b| b == content.as_bytes()) {
                continue;
            }
            return Err(InboxError::TeamExists { path });
        }
        let private_rel = rel_of(root, &m.path);
        let fm = mneme_core::frontmatter::parse(&content).frontmatter;
        let description = fm.as_ref().and_then(|f| f.description());
        let title = private_index
            .as_ref()
            .and_then(|d| d.entries(Scope::Private, root).into_iter().find(|(_, e)| e.rel_path == private_rel))
            .map(|(_, e)| e.title)
            .or_else(|| fm.as_ref().and_then(|f| f.name()))
            .unwrap_or_else(|| base.trim_end_matches(".md").to_string());
        index.append(render_entry(&title, &team_rel, Scope::Team, description.as_deref()));
        changes.push(FileChange { path, before: None, after: Some(content), reason: format!("{}: promoted to team", item.source), extra: Default::default() });
    }
    let after = index.render_as(index_before.as_deref().unwrap_or(""), release);
    mneme_secrets::check_team_content(&after)?;
    paths.push(index_path.clone());
    if index_before.as_deref() != Some(after.as_str()) {
        changes.push(FileChange { path: index_path, before: index_before, after: Some(after), reason: format!("{}: promoted to team", item.source), extra: Default::default() });
    }
    Ok((Changeset { root: root.clone(), changes, extra: Default::default() }, paths))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    thread_local! {
        /// How many times this thread took the inbox's lock.
        pub(super) static LOCKS_TAKEN: Cell<usize> = const { Cell::new(0) };
    }

    /// Edit-and-keep is one decision: it takes the lock once, not once to edit and again to
    /// keep (which let another process decide the item in between). Also the reason it cannot
    /// take it twice nested: a second `flock` of the folder by the same thread waits forever.
    #[test]
    fn edit_and_keep_takes_the_lock_once() {
        let dir = tempfile::tempdir().unwrap();
        let memory = dir.path().join("memory");
        std::fs::create_dir_all(&memory).unwrap();
        let inbox = Inbox::new(dir.path().join("data"), Arc::new(mneme_core::FixedClock::at_unix_secs(1_800_000_000)));
        let file = memory.join("x.md");
        let text = |body: &str| format!("---\nname: x\ndescription: x desc\n---\n\n{body}\n");
        let item = inbox
            .stage(NewItem {
                project_root: dir.path().to_path_buf(),
                memory_dir: memory.clone(),
                session_id: None,
                transcript: None,
                source: "extract_memories".into(),
                changeset: Changeset { root: memory.clone(), changes: vec![FileChange { path: file.clone(), before: None, after: Some(text("tabs")), reason: "t".into(), extra: Default::default() }], extra: Default::default() },
            })
            .unwrap();
        LOCKS_TAKEN.with(|n| n.set(0));
        let kept = inbox.edit_and_keep(&item.id, "x.md", text("spaces")).unwrap();
        assert_eq!(LOCKS_TAKEN.with(Cell::get), 1);
        assert!(matches!(kept.status, ItemStatus::Kept { .. }));
        assert_eq!(std::fs::read_to_string(&file).unwrap(), text("spaces"));
        // Each of the others takes it once too, and an id that names nothing not at all.
        assert_eq!(inbox.keep(&item.id).unwrap_err().code(), "not-pending");
        assert_eq!(inbox.discard("1-ab").unwrap_err().code(), "not-found");
        assert_eq!(LOCKS_TAKEN.with(Cell::get), 2);
    }

    /// An id longer than any file name is not found, as any other id that names nothing: the
    /// file system's "File name too long" used to come back as an I/O error (a 500 in the browser).
    #[test]
    fn an_overlong_id_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let inbox = Inbox::new(dir.path().join("data"), Arc::new(mneme_core::FixedClock::at_unix_secs(1_800_000_000)));
        std::fs::create_dir_all(data::inbox_dir(&dir.path().join("data"))).unwrap();
        let long = format!("1-{}", "a".repeat(70_000));
        assert_eq!(inbox.get(&long).unwrap_err().code(), "not-found");
        assert_eq!(inbox.discard(&long).unwrap_err().code(), "not-found");
        assert_eq!(inbox.keep(&long).unwrap_err().code(), "not-found");
    }
}
