//! The auto-memory folder (`<memoryBase>/projects/<sanitized root>/memory/`), read and written
//! exactly as Claude Code lays it out:
//!
//! - `MEMORY.md` is the index: one markdown link line per memory, loaded into every session and
//!   cut at 200 lines / 25,000 UTF-16 units ([`health`](Memdir::health) shows what falls past
//!   the cap). `team/MEMORY.md` is the team folder's own index.
//! - every other `*.md` at any depth is a topic file with `name` / `description` / type
//!   frontmatter, in either generation (`type:` at the top level, or `metadata: { type: }`).
//! - [`manifest`](Memdir::manifest) reproduces the text Claude Code's recall shows its selector
//!   model, byte for byte (30-line frontmatter reads, newest first, 200 files).
//!
//! Writes never lose a memory: every write goes to a temporary file in the same folder, is
//! fsynced and renamed over the target; every edit names the [`Revision`] it started from and
//! is refused if the file changed since (Claude Code writes these files too); deletes move the
//! file to a trash folder in Mneme's data directory (never inside the memory folder, where
//! Claude Code would read it as a live memory) together with the index line they removed.

mod error;
mod frontmatter_edit;
mod generated_index;
mod health;
mod index;
mod listing;
mod manifest;
mod merge;
mod path;
mod pending;
mod raw;
mod revision;
mod scan;
mod trash;
mod write;

#[cfg(test)]
mod testutil;

pub use error::MemdirError;
pub use frontmatter_edit::{edited_content, new_memory_content};
pub use generated_index::{generated_index, index_from_headers, GENERATED_LINE_MAX, GENERATED_MAX_LINES, GENERATED_MAX_UNITS};
pub use health::{
    loaded_index_lines, loaded_index_lines_as, DanglingLink, Duplicate, Health, IndexEntryRef, IndexFix, IndexHealth, IndexedTargets, LongLine, StaleIndexLine, UNINDEXED_LISTED,
};
pub use index::{parse_index, render_entry, DocLine, IndexDoc, IndexEntry, IndexFile, IndexLine, LONG_INDEX_LINE_UNITS, MAX_LINK_TRIES};
pub use merge::{trash_folder, AddedIndexLine, MergeOutcome, MergedFile, SkippedFile};
pub use manifest::{
    folder_key, format_manifest, format_manifest_as, left_out_by_scan, select_for_manifest, LeftOut, MAX_MEMORY_FILES,
    RESERVED_FOLDERS,
};
pub use path::{slugify, validate_topic_path, MAX_SLUG_LEN};
pub use raw::validate_raw_path;
pub use revision::Revision;
pub use scan::{
    FileState, FrontmatterProblem, HeaderFields, HeaderScan, OtherReadings, Problem, ProblemKind, Scan, TopicFile, TopicHeader,
    FRONTMATTER_MAX_LINES, HEAD_BYTE_CAP,
};
pub use trash::{EmptiedTrash, RemovedIndexLine, Restored, TrashEntry, TrashListing};
pub use write::{Created, FieldEdits, FieldsUpdated, MemoryFile, NewMemory, Renamed};

use mneme_core::frontmatter::Generation;
use mneme_core::versions::Profile;
use mneme_core::Clock;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The team folder inside the memory folder (`team/`, synced across the organization).
pub const TEAM_DIR: &str = "team";
/// The index file's name; at any depth, a file with this name is never a topic file.
pub const INDEX_FILE: &str = "MEMORY.md";

/// Whether a memory is the user's own or shared with the team (`team/…`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum Scope {
    /// Anywhere in the memory folder except `team/`; indexed by `MEMORY.md`.
    Private,
    /// Under `team/`; indexed by `team/MEMORY.md`.
    Team,
}

impl Scope {
    /// The scope of a path relative to the memory folder (`/` separators).
    pub fn of(rel_path: &str) -> Scope {
        match rel_path.strip_prefix(TEAM_DIR) {
            Some(rest) if rest.starts_with('/') => Scope::Team,
            _ => Scope::Private,
        }
    }

    /// The index file of this scope, relative to the memory folder.
    pub fn index_rel_path(self) -> &'static str {
        match self {
            Scope::Private => "MEMORY.md",
            Scope::Team => "team/MEMORY.md",
        }
    }

    /// The folder index targets are relative to ("" for the memory folder itself).
    pub(crate) fn dir(self) -> &'static str {
        match self {
            Scope::Private => "",
            Scope::Team => TEAM_DIR,
        }
    }
}

/// One memory folder, with the trash folder its deletes go to and the clock that stamps them.
///
/// Cheap to construct and holds no open files: every call reads the disk afresh, because
/// Claude Code may change the folder between any two calls.
#[derive(Clone)]
pub struct Memdir {
    root: PathBuf,
    trash_dir: PathBuf,
    clock: Arc<dyn Clock>,
    /// What content bound for `team/` must pass (see [`TeamWriteCheck`]); `None` checks nothing.
    team_write_check: Option<TeamWriteCheck>,
    /// The Claude Code release the folder is written and listed for ([`Memdir::for_release`]):
    /// where a new type goes, what the manifest shows and in which order. The newest unless told.
    release: Profile,
    /// The release MEMORY.md is read and edited for when it is not `release`
    /// ([`Memdir::reading_index_for`]): found only for an index that holds a CR.
    index_release: Option<Arc<LazyRelease>>,
}

/// A release looked up once, the first time it is asked for.
struct LazyRelease {
    found: std::sync::OnceLock<Profile>,
    find: Box<dyn Fn() -> Profile + Send + Sync>,
}

/// Decides whether content may be written into team memory, which is shared with everyone in
/// the repository: `Err` carries the refusal, worded for the person. The store does not decide
/// this itself; whoever decides team writes passes its policy (the api passes
/// `mneme_team::check_team_write`, the secret scanner).
pub type TeamWriteCheck = fn(&str) -> Result<(), TeamWriteRefused>;

/// A team-write check's refusal, worded for the person (it names what was found, never the
/// secret itself, and says what to do).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TeamWriteRefused(pub String);

impl std::fmt::Display for TeamWriteRefused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for TeamWriteRefused {}

impl std::fmt::Debug for Memdir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memdir").field("root", &self.root).field("trash_dir", &self.trash_dir).finish_non_exhaustive()
    }
}

impl Memdir {
    /// A memory folder at `root` whose deletes go to `trash_dir`.
    ///
    /// `trash_dir` must lie outside `root` (pass something like
    /// `env.data_dir().join("trash").join(<sanitized project>)`); deletes refuse otherwise.
    /// The clock stamps trash records, so tests can freeze it.
    pub fn new(root: impl Into<PathBuf>, trash_dir: impl Into<PathBuf>, clock: Arc<dyn Clock>) -> Self {
        Memdir {
            root: root.into(),
            trash_dir: trash_dir.into(),
            clock,
            team_write_check: None,
            release: mneme_core::versions::newest(),
            index_release: None,
        }
    }

    /// Writes new memories, and the type of a memory that had none, the way the release of
    /// `profile` reads them (a top-level `type:` before 2.1.139, `metadata:`/`type:` since), and
    /// lists the manifest as it does. A memory that already has a type keeps its own form.
    pub fn for_release(mut self, profile: &Profile) -> Self {
        self.release = *profile;
        self.index_release = None;
        self
    }

    /// Reads and edits MEMORY.md (and `team/MEMORY.md`) for the release `find` answers, leaving
    /// everything else as [`Memdir::release`] says. Only an index holding a CR or `<!--` is
    /// measured otherwise in another release (row 9 of docs/claude-code-versions.md: from
    /// 2.1.284 CRLF is measured as LF; from 2.1.330 comment stripping rebuilds only a file it
    /// removes a comment from, keeping its link definitions), so `find` is called only when
    /// such an index is read, once: a listing of a folder whose index has neither never waits
    /// for the release to be found (`claude --version`).
    pub fn reading_index_for(mut self, find: impl Fn() -> Profile + Send + Sync + 'static) -> Self {
        self.index_release = Some(Arc::new(LazyRelease { found: std::sync::OnceLock::new(), find: Box::new(find) }));
        self
    }

    /// The release `content`, a MEMORY.md's text, is read and edited for (see
    /// [`Memdir::reading_index_for`]).
    pub(crate) fn index_release(&self, content: &str) -> Profile {
        match &self.index_release {
            Some(lazy) if content.contains('\r') || content.contains("<!--") => *lazy.found.get_or_init(|| (lazy.find)()),
            _ => self.release,
        }
    }

    /// The release this folder is written and listed for (see [`Memdir::for_release`]).
    pub fn release(&self) -> &Profile {
        &self.release
    }

    /// Where this folder's new memories get their type (see [`Memdir::for_release`]); pass it
    /// to [`new_memory_content`] for memories written through a changeset.
    pub fn type_form(&self) -> Generation {
        Generation::written_by(&self.release)
    }


    /// Has every create, edit, rename into `team/` and team index write pass `check` first
    /// (changesets written with `write_raw` were checked where they were made).
    pub fn with_team_write_check(mut self, check: TeamWriteCheck) -> Self {
        self.team_write_check = Some(check);
        self
    }

    /// The memory folder.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Where deleted memories go.
    pub fn trash_dir(&self) -> &Path {
        &self.trash_dir
    }

    /// The absolute path of a validated relative path (`/` separators).
    pub(crate) fn abs(&self, rel: &str) -> PathBuf {
        let mut p = self.root.clone();
        for part in rel.split('/') {
            p.push(part);
        }
        p
    }
}
