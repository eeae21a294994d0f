//! Memories of one project's auto-memory folder: list, show, create, edit, rename, delete to
//! the trash, restore, and the index health meter with its fixes.

use crate::context::Resolved;
use crate::ops::ManifestText;
use crate::{ApiError, ContextRequest, ErrorCode, Mneme};
use mneme_core::sanitize::sanitize_path;
use mneme_core::frontmatter::Generation;
use mneme_core::MemoryType;
use mneme_store::memdir::{
    format_manifest_as, FieldEdits, FileState, Health, Memdir, MemdirError, NewMemory, Problem, ProblemKind, Scope, EmptiedTrash, TopicFile, TrashEntry, TrashListing,
};
use mneme_store::paths::{AutoMemSource, AutoMemoryReason};
use mneme_store::session::SessionMemory;
use mneme_store::settings::{self, EnabledSources, SettingSource};
use serde::{Deserialize, Serialize};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

/// The most of one memory a text search reads: the size past which the store does not read a
/// memory whole either.
const SEARCH_READ_MAX_BYTES: u64 = 64 << 20;

/// Filters for [`Mneme::memories`].
#[derive(Debug, Clone, Default)]
pub struct MemoryListFilter {
    /// `user`, `feedback`, `project` or `reference`.
    pub kind: Option<String>,
    /// Case-insensitive text to find in the name, description, file name or body.
    pub search: Option<String>,
}

/// What the Memories screen shows: one page of the filtered list, newest first.
#[derive(Debug, Clone, Default)]
pub struct MemoryPageRequest {
    /// `user`, `feedback`, `project`, `reference`, or `none` for memories without a type.
    pub kind: Option<String>,
    /// `private` or `team`.
    pub scope: Option<String>,
    /// `7` or `30` (changed within that many days), or `old` (more than 30 days ago).
    pub age: Option<String>,
    pub search: Option<String>,
    pub offset: usize,
    pub limit: usize,
    /// A memory (relative path) whose position in the filtered list to report.
    pub find: Option<String>,
}

/// One page of memories. The front end holds only the pages on screen, never the whole folder.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct MemoryPage {
    /// How many memories match the filters.
    pub total: u32,
    /// How many memories the folder holds.
    pub all: u32,
    pub offset: u32,
    pub items: Vec<MemorySummary>,
    /// Where the memory asked for with `find` sits in the filtered list, when it is there.
    pub found: Option<u32>,
}

/// At most this many memories a page (the screen shows about ten rows at once).
pub const MEMORY_PAGE_MAX: usize = 500;

/// One memory in a list.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct MemorySummary {
    pub rel_path: String,
    pub path: PathBuf,
    pub name: String,
    pub description: Option<String>,
    pub memory_type: Option<MemoryType>,
    pub scope: Scope,
    pub modified_ms: i64,
    /// Whole days since the last change, as Claude Code's freshness note counts them.
    pub age_days: i64,
    pub links: Vec<String>,
    pub indexed: bool,
    /// Why the frontmatter could not be read, when its YAML does not parse (the parser's
    /// message, with the line when it said where). Claude Code then reads the file as having
    /// no name, description or type. `None` when it reads.
    pub frontmatter_problem: Option<String>,
}

/// One memory with its text.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct MemoryDetail {
    #[serde(flatten)]
    pub summary: MemorySummary,
    /// The whole file.
    pub content: String,
    /// Pass back when saving; the save is refused if the file changed since.
    pub revision: String,
    /// What is wrong with the file, each with the command that mends it where there is one.
    pub problems: Vec<Problem>,
    /// The file is not valid UTF-8 (one of `problems` says which byte): `content` shows what
    /// it cannot read as U+FFFD, so an editor shows it read-only, since the engine refuses to
    /// save over it (writing U+FFFD over those bytes would lose them for good).
    pub not_utf8: bool,
    /// Where an editor puts the type of a memory that has none: `top` (a top-level `type:`,
    /// all that Claude Code before 2.1.139 reads) or `metadata` (`metadata:`/`type:`), as the
    /// release shown (the installed one unless another is chosen) reads it.
    pub new_type_at: String,
    /// Why Claude Code's recall never offers this memory, when it cannot: its memory scan (the
    /// list the selector and the extraction agent are shown) leaves the file out, as the
    /// release shown reads the folder. `None` when the memory is on that list.
    pub recall_note: Option<String>,
}

/// A new memory.
#[derive(Debug, Clone, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct NewMemoryRequest {
    pub name: String,
    pub description: String,
    /// `user`, `feedback`, `project` or `reference`.
    pub kind: String,
    pub body: String,
    /// Absent: made from the name.
    #[serde(default)]
    #[cfg_attr(feature = "specta", specta(optional))]
    pub file_name: Option<String>,
}

/// Changes to one memory; `None` leaves a part as it is.
#[derive(Debug, Clone, Default, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct MemoryEdit {
    /// File name or `name:` of the memory.
    pub memory: String,
    #[serde(default)]
    #[cfg_attr(feature = "specta", specta(optional))]
    pub name: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "specta", specta(optional))]
    pub description: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "specta", specta(optional))]
    pub kind: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "specta", specta(optional))]
    pub body: Option<String>,
    /// New file name; the index line follows.
    #[serde(default)]
    #[cfg_attr(feature = "specta", specta(optional))]
    pub rename: Option<String>,
}

/// A memory moved to the trash.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct Trashed {
    pub id: String,
    pub original: PathBuf,
    pub entry: TrashEntry,
}

/// Memory settings of this machine, as Claude Code reads them from user settings.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct MachineSettings {
    pub user_settings_path: PathBuf,
    /// The values in the user settings file (`None`: not set there).
    pub auto_memory_enabled: Option<bool>,
    pub auto_dream_enabled: Option<bool>,
    pub auto_memory_directory: Option<String>,
    pub problems: Vec<String>,
    /// Why the user file's `autoMemoryEnabled` decides nothing on this machine, when something
    /// above it does for every project (managed policy, an environment variable, a settings
    /// `env` block), with what Claude Code does instead. A project's own settings may still
    /// turn it off there (What Claude sees says so per project).
    pub auto_memory_overridden: Option<String>,
    /// The same for `autoDreamEnabled`.
    pub auto_dream_overridden: Option<String>,
    /// The same for `autoMemoryDirectory`.
    pub auto_memory_directory_overridden: Option<String>,
    /// The problem, when Claude Code ignores the user file for a value in it (one of
    /// `problems`): Mneme leaves the file alone until it is fixed.
    #[serde(skip)]
    #[cfg_attr(feature = "specta", specta(skip))]
    pub ignored_for: Option<String>,
}

/// See [`MachineSettings`]'s `*_overridden` fields.
struct MachineOverrides {
    auto_memory: Option<String>,
    auto_dream: Option<String>,
    directory: Option<String>,
}

/// The indexes of a memory folder a fix may rewrite.
const INDEXES: [&str; 2] = ["MEMORY.md", "team/MEMORY.md"];

/// An index as it was before a fix rewrote it.
#[derive(Debug, Clone, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct IndexBefore {
    /// `MEMORY.md` or `team/MEMORY.md`.
    pub rel_path: String,
    /// Its text before the fix.
    pub content: String,
    /// Its revision after the fix: the undo happens only while it is still that.
    pub revision: String,
}

pub(crate) fn code_for(e: &MemdirError) -> ErrorCode {
    // The disk's refusal (full, read-only, another account's) has a code of its own, whatever
    // the operation: each has its own way out for the person.
    if let Some(r) = e.refused() {
        return r.into();
    }
    match e {
        MemdirError::TrashEntryNewer { .. } => ErrorCode::TrashEntryNewer,
        MemdirError::ChangedOnDisk { .. } => ErrorCode::Conflict,
        MemdirError::AlreadyExists { .. } | MemdirError::NameTaken { .. } => ErrorCode::AlreadyExists,
        MemdirError::NotFound { .. } | MemdirError::TrashEntryNotFound { .. } => ErrorCode::NotFound,
        MemdirError::MalformedFrontmatter { .. } | MemdirError::FrontmatterNotEditable { .. } => ErrorCode::Malformed,
        MemdirError::Io { .. } => ErrorCode::Io,
        MemdirError::SecretsInTeamMemory { .. } => ErrorCode::SecretsRefused,
        MemdirError::LeftInTrash { cause, .. } | MemdirError::PurgeRefused { cause, .. } => code_for(cause),
        _ => ErrorCode::InvalidInput,
    }
}

fn parse_kind(kind: &str) -> Result<MemoryType, ApiError> {
    MemoryType::parse(kind.trim()).ok_or_else(|| {
        ApiError::invalid(format!("'{kind}' is not a memory type. Use one of: user, feedback, project, reference."))
    })
}

impl Mneme {
    /// The memory folder Claude Code would use from `req.cwd`, with Mneme's trash beside it.
    pub(crate) fn memdir(&self, req: &ContextRequest) -> Result<(Resolved, Memdir), ApiError> {
        let mut r = self.resolve(req)?;
        if let Some(target) = &req.agent {
            r.memdir = self.agent_memory(&r.cwd, &r.settings, target)?.dir;
        }
        let trash = self.env.data_dir().join("trash").join(sanitize_path(&r.memdir.to_string_lossy()));
        // Team memory is shared with the repository: the team crate's policy (no secrets)
        // decides what may be written there.
        let m = Memdir::new(r.memdir.clone(), trash, self.clock.clone()).with_team_write_check(mneme_team::check_team_write);
        // Which lines of an index holding a CR Claude Code reads depends on its release (row 9
        // of docs/claude-code-versions.md): the one asked for, else the installed one, looked
        // up only when such an index is read, so listing a folder never waits for it otherwise.
        let (chosen, env) = (req.claude_version, self.env.clone());
        let m = m.reading_index_for(move || match chosen {
            Some(v) => mneme_core::versions::profile_for(v).profile,
            None => mneme_store::claude_install::installed_profile(&env),
        });
        Ok((r, m))
    }

    /// [`Mneme::memdir`] for what depends on the release asked for (`req.claude_version`), else
    /// the installed one: where a change that gives a memory its type writes it, and which
    /// types the manifest shows (releases before 2.1.139 read only a top-level `type:`).
    /// Finding the release is left to these, so listing never waits for it.
    fn memdir_for_release(&self, req: &ContextRequest) -> Result<(Resolved, Memdir), ApiError> {
        let (r, m) = self.memdir(req)?;
        let (_, release) = self.rendered_for(req.claude_version);
        Ok((r, m.for_release(&release)))
    }

    fn summary(&self, f: &TopicFile, indexed: bool) -> MemorySummary {
        summary_of(f.clone(), indexed, self.clock.now_ms() as i64)
    }

    /// Topic files of the folder's auto memory, newest first.
    pub fn memories(&self, req: &ContextRequest, filter: &MemoryListFilter) -> Result<Vec<MemorySummary>, ApiError> {
        self.memories_with(req, filter, |m| m)
    }

    /// [`Mneme::memories`], each memory handed to `f` on the thread that read it and `f`'s
    /// answers returned in the list's order, so per-memory work (the CLI's JSON text for
    /// 10,000 memories) runs on every core while the folder is still being read rather than
    /// after it, and what `f` does not keep is freed as it goes.
    pub fn memories_with<R: Send>(
        &self,
        req: &ContextRequest,
        filter: &MemoryListFilter,
        f: impl Fn(MemorySummary) -> R + Sync,
    ) -> Result<Vec<R>, ApiError> {
        let (_, m) = self.memdir(req)?;
        let kind = filter.kind.as_deref().map(parse_kind).transpose()?;
        let needle = filter.search.as_deref().map(str::to_lowercase).filter(|s| !s.is_empty());
        let indexed = indexed_targets(&m);
        let now_ms = self.clock.now_ms() as i64;
        let (items, _) = m.scan_map(|file| {
            if kind.is_some() && file.memory_type != kind {
                return None;
            }
            if let Some(n) = &needle {
                let head = format!("{} {} {}", file.rel_path, file.display_name(), file.description.as_deref().unwrap_or(""))
                    .to_lowercase();
                let hit = head.contains(n)
                    // Read as the scan opened it: a FIFO swapped in since is not waited on, and
                    // the read is bounded.
                    || mneme_store::open::read_plain_capped(&file.abs_path, SEARCH_READ_MAX_BYTES)
                        .ok()
                        .and_then(|(b, _)| String::from_utf8(b).ok())
                        .is_some_and(|b| b.to_lowercase().contains(n));
                if !hit {
                    return None;
                }
            }
            let is_indexed = indexed.contains(&file.rel_path);
            let summary = summary_of(file, is_indexed, now_ms);
            Some(Listed { modified_ms: summary.modified_ms, rel_path: summary.rel_path.clone(), item: f(summary) })
        })?;
        Ok(newest_first(items))
    }

    /// One page of the memory list, filtered and sorted here (newest first, then by path), so
    /// a front end asks only for the rows it shows.
    pub fn memory_page(&self, req: &ContextRequest, q: &MemoryPageRequest) -> Result<MemoryPage, ApiError> {
        let kind = match q.kind.as_deref().map(str::trim).filter(|k| !k.is_empty()) {
            None => None,
            Some("none") => Some(None),
            Some(k) => Some(Some(parse_kind(k)?)),
        };
        let scope = match q.scope.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
            None => None,
            Some("private") => Some(Scope::Private),
            Some("team") => Some(Scope::Team),
            Some(s) => return Err(ApiError::invalid(format!("'{s}' is not a memory scope. Use private or team."))),
        };
        let age: Option<fn(i64) -> bool> = match q.age.as_deref().map(str::trim).filter(|a| !a.is_empty()) {
            None => None,
            Some("7") => Some(|d| d <= 7),
            Some("30") => Some(|d| d <= 30),
            Some("old") => Some(|d| d > 30),
            Some(a) => return Err(ApiError::invalid(format!("'{a}' is not an age filter. Use 7, 30 or old."))),
        };
        if q.limit > MEMORY_PAGE_MAX {
            return Err(ApiError::invalid(format!("A page holds at most {MEMORY_PAGE_MAX} memories; ask for {} or fewer.", MEMORY_PAGE_MAX)));
        }
        let searching = q.search.as_deref().is_some_and(|s| !s.trim().is_empty());
        if kind.is_none() && !searching {
            if let Some(page) = self.page_from_stats(req, scope, age, q)? {
                return Ok(page);
            }
        }
        let (every, all) = self.page_rows(req, q.search.as_deref())?;
        let matching: Vec<MemorySummary> = every
            .into_iter()
            .filter(|m| kind.is_none_or(|k| m.memory_type == k))
            .filter(|m| scope.is_none_or(|s| m.scope == s))
            .filter(|m| age.is_none_or(|f| f(m.age_days)))
            .collect();
        let found = q.find.as_deref().and_then(|f| matching.iter().position(|m| m.rel_path == f)).map(|i| i as u32);
        let total = matching.len();
        let items: Vec<MemorySummary> = matching.into_iter().skip(q.offset).take(q.limit).collect();
        Ok(MemoryPage { total: total as u32, all: all as u32, offset: q.offset.min(total) as u32, items, found })
    }

    /// [`Mneme::memory_page`] without a type or text filter. The list's order (newest first,
    /// then by path), the age and scope filters and the counts need only each file's path and
    /// `stat`, so only the rows on the page are read, or taken from those kept
    /// ([`KeptRows`]): the first page of a folder of thousands reads a page of files, not
    /// the folder. `None` when the listing alone cannot tell what the scan would show: a
    /// symbolic link (the scan reads it every time: its target may lie outside the folder),
    /// or a file on the page that does not read alone as the scan reads it (unreadable, or
    /// past the size the scan reads only the head of); [`Mneme::page_rows`] then reads.
    fn page_from_stats(
        &self,
        req: &ContextRequest,
        scope: Option<Scope>,
        age: Option<fn(i64) -> bool>,
        q: &MemoryPageRequest,
    ) -> Result<Option<MemoryPage>, ApiError> {
        let (_, m) = self.memdir(req)?;
        let listing = m.listing_with_stats()?;
        if listing.iter().any(|(_, _, symlink)| *symlink) {
            return Ok(None);
        }
        let now_ms = self.clock.now_ms() as i64;
        let age_of = |st: &FileState| ((now_ms - st.mtime_ns / 1_000_000) / 86_400_000).max(0);
        // What the scan lists: plain files that `stat` (it leaves the rest out too).
        let mut files: Vec<(String, FileState)> = listing.into_iter().filter_map(|(rel, st, _)| Some((rel, st?))).collect();
        let all = files.len();
        // `modified_ms` as the scan gives it (`new Date(mtimeMs)` truncates), then the path.
        files.sort_unstable_by(|(ra, a), (rb, b)| (b.mtime_ns / 1_000_000).cmp(&(a.mtime_ns / 1_000_000)).then_with(|| ra.cmp(rb)));
        let shown: Vec<&(String, FileState)> =
            files.iter().filter(|(rel, st)| scope.is_none_or(|s| Scope::of(rel) == s) && age.is_none_or(|f| f(age_of(st)))).collect();
        let found = q.find.as_deref().and_then(|f| shown.iter().position(|(rel, _)| rel == f)).map(|i| i as u32);
        let total = shown.len();
        let key = m.root().to_path_buf();
        let mut kept = self.rows.take(&key).unwrap_or_default();
        let settled_ns = now_ms.saturating_sub(ROW_SETTLE_MS).saturating_mul(1_000_000);
        let indexed = indexed_targets(&m);
        let mut items = Vec::new();
        for (rel, st) in shown.iter().skip(q.offset).take(q.limit).copied() {
            let mut summary = match kept.get(rel).filter(|k| k.state == *st) {
                Some(k) => k.summary.clone(),
                None => {
                    // The state was taken before the read: a write since leaves the file's
                    // state other than the kept one, so the row is read again next time.
                    let read = m.read(rel).ok().filter(|f| f.topic.size <= SCAN_READS_WHOLE_MAX_BYTES);
                    let Some(file) = read else {
                        self.rows.put(key, kept);
                        return Ok(None);
                    };
                    let clean = file.problems.is_empty();
                    let mut summary = summary_of(file.topic, false, now_ms);
                    // Where the scan names it: under the folder as given, not its real path.
                    summary.path = m.root().join(rel);
                    if st.changed_ns < settled_ns {
                        kept.insert(rel.clone(), KeptRow { state: *st, summary: summary.clone(), clean });
                    } else {
                        kept.remove(rel);
                    }
                    summary
                }
            };
            summary.indexed = indexed.contains(&summary.rel_path);
            summary.age_days = ((now_ms - summary.modified_ms) / 86_400_000).max(0);
            items.push(summary);
        }
        // Rows of files gone or changed since go; the rest stay for the next page.
        let now: HashMap<&str, &FileState> = files.iter().map(|(rel, st)| (rel.as_str(), st)).collect();
        kept.retain(|rel, k| now.get(rel.as_str()).is_some_and(|st| **st == k.state));
        self.rows.put(key, kept);
        Ok(Some(MemoryPage { total: total as u32, all: all as u32, offset: q.offset.min(total) as u32, items, found }))
    }

    /// Every memory's row for [`Mneme::memory_page`], newest first, those a search leaves out
    /// left out, and how many memories the folder holds. Rows are those of
    /// [`Mneme::each_row`]: a page of a folder of thousands costs a `stat` of each file.
    fn page_rows(&self, req: &ContextRequest, search: Option<&str>) -> Result<(Vec<MemorySummary>, usize), ApiError> {
        let (_, m) = self.memdir(req)?;
        let needle = search.map(str::to_lowercase).filter(|s| !s.trim().is_empty());
        let indexed = indexed_targets(&m);
        let now_ms = self.clock.now_ms() as i64;
        let shown = |summary: &MemorySummary| {
            let Some(n) = &needle else { return true };
            let head = format!("{} {} {}", summary.rel_path, summary.name, summary.description.as_deref().unwrap_or("")).to_lowercase();
            head.contains(n)
                // Read as the scan opened it: a FIFO swapped in since is not waited on, and the
                // read is bounded.
                || mneme_store::open::read_plain_capped(&summary.path, SEARCH_READ_MAX_BYTES)
                    .ok()
                    .and_then(|(b, _)| String::from_utf8(b).ok())
                    .is_some_and(|b| b.to_lowercase().contains(n))
        };
        let (listed, all, _) = self.each_row(&m, now_ms, false, |summary, _| {
            shown(summary).then(|| {
                let mut summary = summary.clone();
                summary.indexed = indexed.contains(&summary.rel_path);
                summary.age_days = ((now_ms - summary.modified_ms) / 86_400_000).max(0);
                Listed { modified_ms: summary.modified_ms, rel_path: summary.rel_path.clone(), item: summary }
            })
        })?;
        Ok((newest_first(listed), all))
    }

    /// Every memory file of `m`'s folder handed to `pick` as its row (with `indexed` and
    /// `age_days` unset) and its modification time in ns, on the thread that read it; `pick`'s
    /// answers in walk order, how many memories the folder holds, and the problems of the
    /// files read. A file that is as it was when a call before read it ([`FileState`]: same
    /// file, size, modification and change time) is not read again: its row is kept in this
    /// facade ([`KeptRows`]). Anything changed, added or gone since is read or dropped, so no
    /// row is ever stale. `clean_only`: reuse only rows whose read reported no problem, for a
    /// caller that reports problems too (the health report), since a kept row carries none.
    fn each_row<X: Send>(
        &self,
        m: &Memdir,
        now_ms: i64,
        clean_only: bool,
        pick: impl Fn(&MemorySummary, i64) -> Option<X> + Sync,
    ) -> Result<(Vec<X>, usize, Vec<Problem>), MemdirError> {
        // A file changed within this margin of now is read again next time: its file system may
        // stamp a second write within the same clock tick with the same times.
        let settled_ns = now_ms.saturating_sub(ROW_SETTLE_MS).saturating_mul(1_000_000);
        let key = m.root().to_path_buf();
        let before = self.rows.take(&key);
        let row = |summary: MemorySummary, keep: Option<FileState>, mtime_ns: i64, clean: bool| {
            let pick = pick(&summary, mtime_ns);
            let kept = keep.filter(|st| st.changed_ns < settled_ns).map(|state| (summary.rel_path.clone(), KeptRow { state, summary, clean }));
            Some(EachRow { kept, pick })
        };
        let (rows, problems) = m.scan_map_reusing(
            |rel, state| {
                let k = before.as_ref()?.get(rel).filter(|k| k.state == *state && (k.clean || !clean_only))?;
                row(k.summary.clone(), Some(k.state), k.state.mtime_ns, k.clean)
            },
            |file, state| {
                let mtime_ns = file.mtime_ns;
                row(summary_of(file, false, now_ms), state, mtime_ns, true)
            },
        )?;
        // Only files read give problems; a file that gave one is kept as not clean.
        let troubled: HashSet<&str> = problems.iter().map(|p| p.rel_path.as_str()).collect();
        let all = rows.len();
        let mut kept = HashMap::with_capacity(all);
        let mut picked = Vec::new();
        for r in rows {
            if let Some((rel, mut k)) = r.kept {
                k.clean &= !troubled.contains(rel.as_str());
                kept.insert(rel, k);
            }
            picked.extend(r.pick);
        }
        self.rows.put(key, kept);
        Ok((picked, all, problems))
    }

    /// The manifest Claude Code's recall and extraction show the model, byte for byte, as the
    /// release asked for (else the installed one) writes it.
    /// Like Claude Code, any failure to list the folder gives the empty text; one the user can
    /// fix (a link the release's scan cannot get past) is said in `note`.
    pub fn manifest(&self, req: &ContextRequest) -> Result<ManifestText, ApiError> {
        let m = self.memdir_for_release(req)?.1;
        Ok(match m.manifest_headers() {
            Ok(headers) => ManifestText { text: format_manifest_as(&headers, m.release()), note: None },
            Err(e @ MemdirError::ListingFails { .. }) => ManifestText { text: String::new(), note: Some(e.to_string()) },
            Err(_) => ManifestText { text: String::new(), note: None },
        })
    }

    /// Finds a memory by file name (with or without `.md`), relative path or `name:`.
    fn find(&self, m: &Memdir, key: &str) -> Result<TopicFile, ApiError> {
        if let Some(f) = read_by_path(m, key.trim()) {
            return Ok(f.topic);
        }
        let scan = m.scan()?;
        let key = key.trim();
        let by_path: Vec<&TopicFile> = scan
            .files
            .iter()
            .filter(|f| f.rel_path == key || f.rel_path == format!("{key}.md"))
            .collect();
        if let [one] = by_path.as_slice() {
            return Ok((*one).clone());
        }
        let by_name: Vec<&TopicFile> =
            scan.files.iter().filter(|f| f.name.as_deref() == Some(key) || f.stem() == key).collect();
        match by_name.as_slice() {
            [one] => Ok((*one).clone()),
            [] => {
                // A file the scan could not take as a memory (a FIFO or folder named like one, a
                // file it could not read) is there: say what it is, not that nothing is.
                let named = |rel: &str| {
                    rel == key
                        || rel.strip_suffix(".md") == Some(key)
                        || rel.rsplit('/').next().and_then(|n| n.strip_suffix(".md")) == Some(key)
                };
                if let Some(p) = scan.problems.iter().find(|p| named(&p.rel_path)) {
                    let code = match p.kind {
                        ProblemKind::NotARegularFile => ErrorCode::InvalidInput,
                        _ => ErrorCode::Io,
                    };
                    return Err(ApiError::new(code, format!("{}: {}", m.root().join(&p.rel_path).display(), p.message)));
                }
                // The app meets this for a memory deleted, renamed or moved since its list was
                // drawn, so it names the list, not a command (the command line adds its own).
                Err(ApiError::not_found(format!(
                    "No memory called '{key}' in {} now: it may have been deleted, renamed or moved. The list of memories shows the ones there are.",
                    m.root().display()
                )))
            }
            many => Err(ApiError::invalid(format!(
                "'{key}' matches {} memories ({}); name one by its file.",
                many.len(),
                many.iter().map(|f| f.rel_path.as_str()).collect::<Vec<_>>().join(", ")
            ))),
        }
    }

    /// One memory with its full text.
    pub fn memory(&self, req: &ContextRequest, key: &str) -> Result<MemoryDetail, ApiError> {
        let (_, m) = self.memdir_for_release(req)?;
        let file = match read_by_path(&m, key.trim()) {
            Some(file) => file,
            None => m.read(&self.find(&m, key)?.rel_path)?,
        };
        let f = &file.topic;
        let indexed = indexed_targets(&m).contains(&f.rel_path);
        let version = self.rendered_for(req.claude_version).0.version;
        Ok(MemoryDetail {
            summary: self.summary(&file.topic, indexed),
            content: file.content,
            revision: file.revision.to_string(),
            not_utf8: file.problems.iter().any(|p| p.kind == ProblemKind::NotUtf8),
            problems: file.problems,
            new_type_at: if m.type_form() == Generation::TopLevelType { "top" } else { "metadata" }.into(),
            recall_note: recall_note(&m, &f.rel_path, &version),
        })
    }

    /// Creates a memory (in the frontmatter form the user's Claude Code reads) and its index line.
    pub fn create_memory(&self, req: &ContextRequest, new: &NewMemoryRequest) -> Result<MemorySummary, ApiError> {
        let (_, m) = self.memdir_for_release(req)?;
        let created = m.create(&NewMemory {
            name: new.name.clone(),
            description: new.description.clone(),
            memory_type: Some(parse_kind(&new.kind)?),
            body: new.body.clone(),
            file_name: new.file_name.clone(),
            scope: Scope::Private,
        })
        .map_err(|e| name_taken_by_case(&m, e))?;
        let f = m.read(&created.rel_path)?;
        Ok(self.summary(&f.topic, true))
    }

    /// Edits fields and/or renames a memory, keeping unknown frontmatter keys and the index.
    pub fn edit_memory(&self, req: &ContextRequest, edit: &MemoryEdit) -> Result<MemorySummary, ApiError> {
        let (_, m) = self.memdir_for_release(req)?;
        let f = self.find(&m, &edit.memory)?;
        let mut rel = f.rel_path.clone();
        let fields = FieldEdits {
            name: edit.name.clone(),
            description: edit.description.clone(),
            memory_type: edit.kind.as_deref().map(parse_kind).transpose()?,
            body: edit.body.clone(),
        };
        let target = edit.rename.as_ref().map(|new_name| {
            let target = if new_name.ends_with(".md") { new_name.clone() } else { format!("{new_name}.md") };
            match rel.rsplit_once('/') {
                Some((dir, _)) if !target.contains('/') => format!("{dir}/{target}"),
                _ => target,
            }
        });
        // A rename that cannot happen is refused before the fields are saved, so a failed
        // edit changes nothing.
        if let Some(target) = &target {
            m.check_rename(&rel, target).map_err(|e| name_taken_by_case(&m, e))?;
        }
        if fields != FieldEdits::default() {
            let current = m.read(&rel)?;
            m.update_fields(&rel, &fields, &current.revision)?;
        }
        if let Some(target) = &target {
            rel = m.rename(&rel, target)?.new_rel_path;
        }
        let f = m.read(&rel)?;
        let indexed = indexed_targets(&m).contains(&rel);
        Ok(self.summary(&f.topic, indexed))
    }

    /// Moves a memory to Mneme's trash and removes its index line.
    pub fn delete_memory(&self, req: &ContextRequest, key: &str) -> Result<Trashed, ApiError> {
        let (_, m) = self.memdir(req)?;
        let f = self.find(&m, key)?;
        let entry = m.delete(&f.rel_path)?;
        Ok(Trashed { id: entry.id.clone(), original: f.abs_path, entry })
    }

    /// The trash of the folder's memory, newest first.
    pub fn trash(&self, req: &ContextRequest) -> Result<TrashListing, ApiError> {
        Ok(self.memdir(req)?.1.list_trash()?)
    }

    /// Deletes one trashed memory for good (a damaged entry too: that is how it goes away).
    pub fn purge_trash(&self, req: &ContextRequest, id: &str) -> Result<EmptiedTrash, ApiError> {
        let (_, m) = self.memdir(req)?;
        let bytes = m.list_trash()?.entries.iter().find(|e| e.id == id).map_or(0, |e| e.size);
        m.purge_trash(id)?;
        Ok(EmptiedTrash { removed: 1, bytes })
    }

    /// Deletes every trashed memory of the folder for good.
    pub fn empty_trash(&self, req: &ContextRequest) -> Result<EmptiedTrash, ApiError> {
        Ok(self.memdir(req)?.1.empty_trash()?)
    }

    /// Puts a trashed memory back, with its index line.
    pub fn restore_memory(&self, req: &ContextRequest, id: &str) -> Result<PathBuf, ApiError> {
        let (_, m) = self.memdir(req)?;
        if let Some(entry) = m.list_trash()?.entries.into_iter().find(|e| e.id == id) {
            team_restore_allowed(&m, id, &entry.original_rel_path)?;
        }
        let restored = m.restore(id).map_err(|e| match e {
            // Restoring has no other name to offer: say how to make room instead, naming the
            // file as the folder lists it where the disk folds letter case.
            mneme_store::memdir::MemdirError::AlreadyExists { path } => match mneme_store::fold::listed_spelling(&m.root().join(&path)) {
                Some(there) => {
                    let there = std::path::Path::new(&path).with_file_name(there);
                    ApiError::new(
                        crate::ErrorCode::AlreadyExists,
                        format!("{} is in the memory folder, and this disk does not tell letter case apart in file names, so restoring {path} would replace it. Rename {} to a name that differs in more than letter case, or move it to the trash first, then restore this one.", there.display(), there.display()),
                    )
                }
                None => ApiError::new(
                    crate::ErrorCode::AlreadyExists,
                    format!("{path} exists again in the memory folder, and restoring would replace it. Rename that memory or move it to the trash first, then restore this one."),
                ),
            },
            other => other.into(),
        })?;
        Ok(m.root().join(restored.rel_path))
    }

    /// The index health meter. Temporary files that killed writers left in the folder are
    /// removed on the way: they are nobody's, and nothing else would look for them.
    /// Each memory's facts (its name and `[[links]]`) are those of [`Mneme::each_row`], so a
    /// second report on a folder of thousands reads only the files that changed.
    pub fn health(&self, req: &ContextRequest) -> Result<Health, ApiError> {
        let (_, m) = self.memdir(req)?;
        m.remove_stale_temps();
        let now_ms = self.clock.now_ms() as i64;
        let facts = |s: &MemorySummary, mtime_ns: i64| Some((s.rel_path.clone(), mtime_ns, s.name.clone(), s.links.clone()));
        Ok(match self.each_row(&m, now_ms, true, facts) {
            Ok((files, _, problems)) => {
                m.health_of(&files, |(rel, mtime_ns, name, links)| (rel.as_str(), *mtime_ns, Some(name.as_str()), links.as_slice()), problems)
            }
            // The folder cannot be listed: the store's own report says so, as a problem.
            Err(_) => m.health(),
        })
    }

    /// [`Mneme::fix_index`], keeping each index it rewrites as it was, so the fix can be taken
    /// back ([`Mneme::undo_fix_index`]): a line pointing at a missing file may be the only copy
    /// of what it says.
    pub fn fix_index_undoable(&self, req: &ContextRequest) -> Result<(Vec<String>, Vec<IndexBefore>), ApiError> {
        let (_, m) = self.memdir(req)?;
        let before: Vec<(&str, Option<Vec<u8>>)> = INDEXES.iter().map(|rel| (*rel, m.read_raw(rel).ok().and_then(|(b, _)| b))).collect();
        let changes = self.fix_index(req)?;
        let mut undo = Vec::new();
        for (rel, old) in before {
            // An index the fix created holds nothing anyone wrote: there is nothing to put back.
            let (Some(old), Ok((Some(now), revision))) = (old, m.read_raw(rel)) else { continue };
            if now == old {
                continue;
            }
            let Ok(content) = String::from_utf8(old) else { continue };
            undo.push(IndexBefore { rel_path: rel.to_string(), content, revision: revision.to_string() });
        }
        Ok((changes, undo))
    }

    /// Puts back indexes as they were before a fix, each only while it is still exactly what
    /// the fix wrote (Claude Code may have written it since: then nothing is put back).
    pub fn undo_fix_index(&self, req: &ContextRequest, undo: &[IndexBefore]) -> Result<Vec<String>, ApiError> {
        let (_, m) = self.memdir(req)?;
        let mut planned = Vec::new();
        for u in undo {
            if !INDEXES.contains(&u.rel_path.as_str()) {
                return Err(ApiError::invalid(format!("{} is not an index; only MEMORY.md and team/MEMORY.md are put back", u.rel_path)));
            }
            let expected = crate::files::parse_revision(&u.revision)?;
            let (_, current) = m.read_raw(&u.rel_path)?;
            if !current.matches(&expected) {
                return Err(ApiError::new(
                    ErrorCode::Conflict,
                    format!("{} changed since the fix (Claude Code may have written it), so nothing was put back. Open it to compare.", u.rel_path),
                ));
            }
            planned.push((u, expected));
        }
        let mut done = Vec::new();
        for (u, expected) in planned {
            m.write_raw(&u.rel_path, u.content.as_bytes(), &expected)?;
            done.push(format!("put back {} as it was before the fix", u.rel_path));
        }
        Ok(done)
    }

    /// Applies every index fix: bring lines an unfinished edit left stale in line with their
    /// files, add missing lines, drop dangling ones, move entries that fall past the cap up.
    /// Returns one sentence per change.
    pub fn fix_index(&self, req: &ContextRequest) -> Result<Vec<String>, ApiError> {
        let (_, m) = self.memdir(req)?;
        let mut done = Vec::new();
        for p in m.remove_stale_temps() {
            done.push(format!("removed a killed writer's temporary file: {}", p.display()));
        }
        for fix in m.repair_stale_index_lines()? {
            for (old, new) in fix.removed.iter().zip(&fix.added) {
                done.push(format!("brought in line with its file in {}: {old} → {new}", fix.index_rel_path));
            }
            // A merge cut short: its lines are added, nothing is replaced.
            if fix.removed.is_empty() {
                done.extend(fix.added.iter().map(|l| format!("added to {} as the merged folder's index had it: {l}", fix.index_rel_path)));
            }
        }
        for fix in m.add_missing_index_lines()?.into_iter().chain(m.drop_dangling_index_lines()?) {
            done.extend(fix.added.iter().map(|l| format!("added to {}: {l}", fix.index_rel_path)));
            done.extend(fix.removed.iter().map(|l| format!("removed from {}: {l}", fix.index_rel_path)));
            if !fix.left_out.is_empty() {
                done.push(left_out_sentence(&fix.index_rel_path, &fix.left_out));
            }
        }
        let health = m.health();
        for e in health.team_index.iter().flat_map(|t| &t.missing_targets) {
            done.push(format!(
                "left in team/MEMORY.md, which the team shares: {} (no {} here; if a teammate deleted it, remove the line by hand; a pull may not have been able to write it on this disk)",
                e.text, e.rel_path
            ));
        }
        let past: Vec<String> = health.index.past_cap.iter().map(|e| e.rel_path.clone()).collect();
        if !past.is_empty() || !health.index.duplicates.is_empty() {
            let fix = m.reorder_index(Scope::Private, &past)?;
            done.extend(fix.moved.iter().map(|l| format!("moved up in {}: {l}", fix.index_rel_path)));
            done.extend(fix.removed.iter().map(|l| format!("removed duplicate from {}: {l}", fix.index_rel_path)));
            for e in &fix.past_cap_after {
                done.push(format!("still past the cap (shorten the index): {}", e.rel_path));
            }
        }
        if done.is_empty() {
            done.push("the index needed no changes".to_string());
        }
        Ok(done)
    }

    /// Memory settings of this machine from Claude Code's user settings file.
    pub fn machine_settings(&self) -> Result<MachineSettings, ApiError> {
        let path = settings::user_settings_path(&self.env);
        let machine_only = EnabledSources { user: true, project: false, local: false };
        let profile = mneme_store::claude_install::installed_profile(&self.env);
        let session = SessionMemory::resolve(&self.env, &self.env.home, &profile, machine_only, None);
        // The user file as the installed release reads it: its problems include a value that
        // breaks that release's schema, which makes it ignore the file.
        let file = session.settings.files().iter().find(|f| f.source == SettingSource::User);
        let get = |k: &str| file.and_then(|f| f.value.as_ref()).and_then(|v| v.get(k)).cloned();
        let over = self.machine_overrides(&session);
        Ok(MachineSettings {
            user_settings_path: path,
            auto_memory_enabled: get("autoMemoryEnabled").and_then(|v| v.as_bool()),
            auto_dream_enabled: get("autoDreamEnabled").and_then(|v| v.as_bool()),
            auto_memory_directory: get("autoMemoryDirectory").and_then(|v| v.as_str().map(str::to_string)),
            problems: file.and_then(|f| f.error.as_ref()).map(|e| e.to_string()).into_iter().collect(),
            ignored_for: file
                .and_then(|f| f.error.as_ref())
                .filter(|e| matches!(e, mneme_store::settings::SettingsError::InvalidValue(_)))
                .map(|e| e.to_string()),
            auto_memory_overridden: over.auto_memory,
            auto_dream_overridden: over.auto_dream,
            auto_memory_directory_overridden: over.directory,
        })
    }

    /// What decides the three memory settings on this machine above the user's settings file:
    /// the sources that apply to every project (managed policy and its drop-ins, the process
    /// environment, and the `env` blocks of the user settings, `~/.claude.json` and policy).
    fn machine_overrides(&self, session: &SessionMemory) -> MachineOverrides {
        let shown = |p: &std::path::Path| settings::shown_path(&self.env, p);
        let from_policy = |key: &str| {
            (session.settings.effective_source(key) == Some(SettingSource::Policy)).then(|| {
                let file = session.settings.files().iter().rev().find(|f| {
                    f.source == SettingSource::Policy && f.applied_object().is_some_and(|o| o.contains_key(key))
                });
                let value = session.settings.merged().get(key).map(|v| v.to_string()).unwrap_or_default();
                let at = file.map(|f| shown(&f.path)).unwrap_or_else(|| "managed settings".into());
                format!("Your organisation's managed settings ({at}) set {key} to {value}; Claude Code follows them whatever this file says.")
            })
        };
        // Where a variable that decides comes from: an env block of a settings file, or the
        // environment Mneme was started in (and so, usually, the shell Claude Code starts in).
        let variable = |name: &str| match session.overrides.iter().find(|o| o.name == name) {
            Some(o) => format!("{name}={:?} in the env block of {}", o.value, shown(&o.path)),
            None => format!("{name}={:?} in the environment", session.env.var(name).unwrap_or_default()),
        };
        let auto_memory = match session.reason {
            AutoMemoryReason::Default | AutoMemoryReason::Setting { source: Some(SettingSource::User), .. } => None,
            AutoMemoryReason::Setting { .. } => from_policy("autoMemoryEnabled"),
            AutoMemoryReason::DisabledByEnv => Some(format!(
                "Auto memory is off: {} turns it off whatever this switch says.",
                variable("CLAUDE_CODE_DISABLE_AUTO_MEMORY")
            )),
            AutoMemoryReason::EnabledByEnv => Some(format!(
                "Auto memory is on: {} (a false value) turns it on whatever this switch says.",
                variable("CLAUDE_CODE_DISABLE_AUTO_MEMORY")
            )),
            AutoMemoryReason::SafeMode => {
                Some(format!("Auto memory is off: {} runs Claude Code in safe mode.", variable("CLAUDE_CODE_SAFE_MODE")))
            }
            AutoMemoryReason::SimpleMode => {
                Some(format!("Auto memory is off: {} runs Claude Code in bare mode.", variable("CLAUDE_CODE_SIMPLE")))
            }
            AutoMemoryReason::RemoteWithoutStorage => Some(format!(
                "Auto memory is off: {} makes every session remote, with nowhere to keep memory.",
                variable("CLAUDE_CODE_REMOTE")
            )),
        };
        let directory = match &session.dir.source {
            AutoMemSource::EnvOverride => Some(format!(
                "{} moves every project's memory to {} (Claude Code's desktop app sets it for its own sessions); this setting applies where it is not set.",
                variable("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE"),
                session.dir.dir.display()
            )),
            AutoMemSource::Setting(SettingSource::Policy) => from_policy("autoMemoryDirectory"),
            _ => None,
        };
        MachineOverrides { auto_memory, auto_dream: from_policy("autoDreamEnabled"), directory }
    }

    /// Writes `autoMemoryEnabled` to the user settings file, keeping everything else.
    pub fn set_auto_memory(&self, on: bool) -> Result<PathBuf, ApiError> {
        self.user_settings_to_change()?;
        Ok(settings::write_user_setting(&self.env, "autoMemoryEnabled", serde_json::Value::Bool(on))?)
    }

    /// The machine's settings, when the user settings file may be changed: not while Claude
    /// Code ignores it (a value breaks its rules), since a change would do nothing until the
    /// file is fixed — and the Settings screen promises to leave such a file alone.
    /// (A file that does not parse is refused by the write itself, with its own message.)
    pub(crate) fn user_settings_to_change(&self) -> Result<MachineSettings, ApiError> {
        let s = self.machine_settings()?;
        match &s.ignored_for {
            Some(problem) => Err(ApiError::new(ErrorCode::Malformed, format!("{problem} Mneme will not change this file until it is fixed."))),
            None => Ok(s),
        }
    }

    /// Writes `autoDreamEnabled` to the user settings file, keeping everything else.
    pub fn set_auto_dream(&self, on: bool) -> Result<PathBuf, ApiError> {
        self.user_settings_to_change()?;
        Ok(settings::write_user_setting(&self.env, "autoDreamEnabled", serde_json::Value::Bool(on))?)
    }
}

/// The list entry for a scanned file, moved out of it rather than copied.
/// Why the release's recall cannot offer `rel` (see [`MemoryDetail::recall_note`]).
fn recall_note(m: &Memdir, rel: &str, version: &str) -> Option<String> {
    let headers = match m.manifest_headers() {
        Ok(h) => h,
        Err(e @ MemdirError::ListingFails { .. }) => return Some(e.to_string()),
        Err(_) => return None,
    };
    if headers.iter().any(|h| h.rel_path == rel) {
        return None;
    }
    use mneme_store::memdir::{left_out_by_scan, LeftOut};
    let why = match left_out_by_scan(rel, m.release()) {
        Some(LeftOut::DotName) => {
            "its name, or a folder's it lies in, starts with a dot, and its memory scan leaves those out".to_string()
        }
        Some(LeftOut::ReservedFolder(folder)) => format!("it lies in {folder}/, a folder its memory scan leaves out"),
        Some(LeftOut::TeamSubfolder) => {
            "it lies in a folder inside team/, which its memory scan leaves out (those hold other team stores)".to_string()
        }
        None if headers.len() >= mneme_store::memdir::MAX_MEMORY_FILES => format!(
            "only the newest {} memories are offered, and this one is older; a change to it makes it the newest",
            mneme_store::memdir::MAX_MEMORY_FILES
        ),
        None => "its memory scan does not list it".to_string(),
    };
    Some(format!("Claude Code {version} never offers this memory in recall: {why}."))
}

fn summary_of(f: TopicFile, indexed: bool, now_ms: i64) -> MemorySummary {
    let name = match f.name {
        Some(n) => n,
        None => f.stem().to_string(),
    };
    MemorySummary {
        rel_path: f.rel_path,
        path: f.abs_path,
        name,
        description: f.description,
        memory_type: f.memory_type,
        scope: f.scope,
        modified_ms: f.mtime_ms,
        age_days: ((now_ms - f.mtime_ms) / 86_400_000).max(0),
        links: f.links,
        indexed,
        frontmatter_problem: f.frontmatter_error.map(|e| match e.line {
            Some(line) => format!("line {line}: {}", e.message),
            None => e.message,
        }),
    }
}

/// The largest memory the scan reads whole (its `MAX_FULL_READ_BYTES`): past it the scan
/// reads only the head, and leaves the links out, which a read of the file alone would not.
const SCAN_READS_WHOLE_MAX_BYTES: u64 = 10 * 1024 * 1024;

/// How long after its last change a memory's row may be kept across pages (see
/// [`FileState::changed_ns`]).
const ROW_SETTLE_MS: i64 = 2_000;

/// The folders whose rows are kept: the Memories screen shows one at a time, and a few spare
/// the switch back.
const ROW_FOLDERS: usize = 4;

/// A memory's row as read, kept while its file stays as it was.
struct KeptRow {
    state: FileState,
    /// With `indexed` and `age_days` unset: those depend on the index and the day, not the file.
    summary: MemorySummary,
    /// The read that made it reported no problem: a report of problems may reuse it.
    clean: bool,
}

/// What [`Mneme::each_row`] makes of one file: the row to keep, and the caller's answer.
struct EachRow<X> {
    kept: Option<(String, KeptRow)>,
    pick: Option<X>,
}

type RowsOf = HashMap<String, KeptRow>;

/// The rows kept for the last few folders a facade read, most recent last. One store per
/// facade ([`Mneme::new`]; its clones share it), so two windows or two tests never evict or
/// see each other's, and the rows go with the facade.
#[derive(Clone, Default)]
pub(crate) struct KeptRows(Arc<Mutex<Vec<(PathBuf, RowsOf)>>>);

impl KeptRows {
    /// Takes the rows kept for `folder` (another call on it meanwhile reads the folder).
    fn take(&self, folder: &PathBuf) -> Option<RowsOf> {
        let mut all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let at = all.iter().position(|(f, _)| f == folder)?;
        Some(all.remove(at).1)
    }

    /// Keeps `rows` as `folder`'s, forgetting the folder read longest ago past [`ROW_FOLDERS`].
    fn put(&self, folder: PathBuf, rows: RowsOf) {
        let mut all = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        all.retain(|(f, _)| *f != folder);
        all.push((folder, rows));
        if all.len() > ROW_FOLDERS {
            all.remove(0);
        }
    }
}

/// An entry of the list with what it is sorted by.
struct Listed<R> {
    modified_ms: i64,
    rel_path: String,
    item: R,
}

/// Newest first, then by path (paths are unique, so the order is total). The indices are
/// sorted and each entry moved once, rather than moving whole entries at every step.
fn newest_first<R>(items: Vec<Listed<R>>) -> Vec<R> {
    let mut order: Vec<usize> = (0..items.len()).collect();
    order.sort_unstable_by(|&a, &b| {
        let (a, b) = (&items[a], &items[b]);
        b.modified_ms.cmp(&a.modified_ms).then_with(|| a.rel_path.cmp(&b.rel_path))
    });
    let mut slots: Vec<Option<R>> = items.into_iter().map(|l| Some(l.item)).collect();
    order.into_iter().filter_map(|i| slots[i].take()).collect()
}

/// The memory `key` names by its path, read alone: opening one memory of a folder of
/// thousands need not read the rest. `None` whenever the scan could answer otherwise, which
/// [`Mneme::find`] then asks: a name that is no file, a path the scan would not list as a
/// memory (an index, anything reached through a link, not a plain file, a name written in
/// another case on a case-insensitive disk), both `x.md` and `x.md.md` there, or a read that
/// fails (the scan says why).
fn read_by_path(m: &Memdir, key: &str) -> Option<mneme_store::memdir::MemoryFile> {
    let with_md = format!("{key}.md");
    let (rel, other) = if key.ends_with(".md") { (key, Some(with_md.as_str())) } else { (with_md.as_str(), None) };
    mneme_store::memdir::validate_topic_path(rel).ok()?;
    if rel.rsplit('/').next() == Some("MEMORY.md") {
        return None;
    }
    let abs = m.root().join(rel);
    // On a disk that folds letter case `TABS.md` opens `tabs.md` (and `memory.md` the index):
    // the file is the one listed, under the name the index and the scan know it by.
    if let Some(listed) = mneme_store::fold::listed_spelling(&abs) {
        return read_by_path(m, std::path::Path::new(rel).with_file_name(listed).to_str()?);
    }
    // Where the scan walks it: through plain folders only, to a plain file of exactly this
    // name. The real path of anything else differs from the root's real path joined with it.
    let real_root = std::fs::canonicalize(m.root()).ok()?;
    if std::fs::canonicalize(&abs).ok()? != real_root.join(rel) || !std::fs::symlink_metadata(&abs).ok()?.file_type().is_file() {
        return None;
    }
    if let Some(other) = other {
        if !matches!(std::fs::symlink_metadata(m.root().join(other)), Err(e) if e.kind() == std::io::ErrorKind::NotFound) {
            return None;
        }
    }
    m.read(rel).ok()
}

/// What the index fix says about memories it found no room for. Names a few, not thousands:
/// the sentence is one line in the fix's report.
fn left_out_sentence(index: &str, left_out: &[String]) -> String {
    const SHOWN: usize = 5;
    let mut names = left_out.iter().take(SHOWN).map(String::as_str).collect::<Vec<_>>().join(", ");
    if left_out.len() > SHOWN {
        names.push_str(&format!(" and {} more", left_out.len() - SHOWN));
    }
    let (n, memories) = (left_out.len(), if left_out.len() == 1 { "memory" } else { "memories" });
    format!(
        "left {n} {memories} out of {index} ({names}): Claude Code reads only the first {} lines and {} characters of it, and it is full, so a line added there would never be read. Merge or delete memories, or write a shorter index (fewer or shorter lines), then fix the index again.",
        mneme_core::text::MAX_ENTRYPOINT_LINES,
        mneme_core::text::MAX_ENTRYPOINT_UNITS
    )
}

/// The memories the private and team indexes list, as the health report matches them: a
/// line spelled in another letter case than its file lists it where the disk folds case.
fn indexed_targets(m: &Memdir) -> mneme_store::memdir::IndexedTargets {
    m.indexed_targets()
}

/// `e`, said plainly when the name a create or rename asked for is taken only because the disk
/// folds letter case (an exFAT USB stick, macOS, Windows): the person sees `tabs.md`, not the
/// `TABS.md` they typed, so the sentence names the file that is there and why the two collide.
fn name_taken_by_case(m: &Memdir, e: MemdirError) -> ApiError {
    if let MemdirError::AlreadyExists { path } = &e {
        if let Some(there) = mneme_store::fold::listed_spelling(&m.root().join(path)) {
            let there = std::path::Path::new(path).with_file_name(there);
            let there = there.to_string_lossy();
            return ApiError::new(
                ErrorCode::AlreadyExists,
                format!("{path} would be the same file as {there}, which is already in the memory folder: this disk does not tell letter case apart in file names. Choose a file name that differs in more than letter case, or open {there} and edit it instead."),
            );
        }
    }
    e.into()
}

/// Putting a file back into `team/` writes into the shared folder, so the team's write policy
/// decides it as it decides every other write there (a version holding a secret would otherwise
/// come back, then be held back by every push). Judged before anything moves: refused, the
/// folder and the trash entry stay as they are. Both restores ask it: Memories → Trash and a
/// local version a team pull replaced.
pub(crate) fn team_restore_allowed(m: &Memdir, id: &str, rel: &str) -> Result<(), ApiError> {
    if Scope::of(rel) != Scope::Team {
        return Ok(());
    }
    if let Some((kept, bytes)) = m.trashed_content(id)? {
        mneme_team::check_team_restore(&bytes, rel, &kept).map_err(|refused| ApiError::new(ErrorCode::SecretsRefused, refused.to_string()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ErrorCode, FixedClock};
    use mneme_testsupport::{write_file, TestHome};
    use std::sync::Arc;

    fn fixture() -> (TestHome, Mneme, ContextRequest, PathBuf) {
        let t = TestHome::new();
        let project = t.root.join("code/app");
        std::fs::create_dir_all(&project).unwrap();
        let mem = t.memdir_for(&project);
        let m = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
        (t, m, ContextRequest { cwd: project, ..Default::default() }, mem)
    }

    fn new_memory(name: &str, file_name: Option<&str>) -> NewMemoryRequest {
        NewMemoryRequest { name: name.into(), description: "d".into(), kind: "user".into(), body: "b".into(), file_name: file_name.map(str::to_string) }
    }

    /// The app shows the store's refusal of a name Windows cannot create as it is: an invalid
    /// input whose message names the problem and the name to use instead. A memory that already
    /// has such a name is read, edited and deleted as any other.
    #[test]
    fn names_windows_cannot_create_are_refused_for_new_memories_only() {
        let (_t, m, req, mem) = fixture();
        write_file(&mem.join("MEMORY.md"), "- [Aux](aux.md) — aux notes\n");
        write_file(&mem.join("aux.md"), "---\nname: Aux\ndescription: aux notes\ntype: user\n---\nBody.\n");

        let e = m.create_memory(&req, &new_memory("Console", Some("con.md"))).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput);
        assert_eq!(
            e.message,
            "\"con.md\" is not a usable memory path: the file name \"con.md\" cannot be created on Windows (\"con.md\" is a reserved device name), and a memory folder is often synced to other machines or checked into git; name it con-memory.md instead."
        );
        assert!(!mem.join("con.md").exists());
        assert_eq!(m.create_memory(&req, &new_memory("Nul", None)).unwrap().rel_path, "nul-memory.md");

        let rename = |to: &str| MemoryEdit { memory: "aux.md".into(), description: Some("edited".into()), rename: Some(to.into()), ..Default::default() };
        let e = m.edit_memory(&req, &rename("com1")).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput);
        assert!(e.message.contains("\"com1.md\" is a reserved device name") && e.message.ends_with("name it com1-memory.md instead."), "{}", e.message);
        let e = m.edit_memory(&req, &rename("notes: old")).unwrap_err();
        assert!(e.message.contains("(the character ':' is reserved)") && e.message.ends_with("name it notes old.md instead."), "{}", e.message);
        assert_eq!(m.memory(&req, "aux.md").unwrap().summary.description.as_deref(), Some("aux notes"), "a refused rename saves nothing");

        let edited = m.edit_memory(&req, &MemoryEdit { memory: "aux.md".into(), description: Some("edited".into()), ..Default::default() }).unwrap();
        assert_eq!((edited.rel_path.as_str(), edited.description.as_deref()), ("aux.md", Some("edited")));
        assert!(m.memory(&req, "Aux").unwrap().content.contains("Body."));
        m.delete_memory(&req, "aux.md").unwrap();
        assert!(!mem.join("aux.md").exists());
    }

    /// The editor opens a memory that is not UTF-8 read-only: the detail says so as a flag, not
    /// only in a problem's words, and a UTF-8 one (with a byte-order mark or accents) is not
    /// flagged. A save of the flagged one is still refused and leaves its bytes as they were.
    #[test]
    fn a_memory_that_is_not_utf8_is_flagged_in_its_detail() {
        let (_t, m, req, mem) = fixture();
        let cp1252 = b"---\nname: Caf\xE9\ndescription: the team drink\ntype: user\n---\nCaf\xE9 au lait \x96 every day.\n";
        std::fs::create_dir_all(&mem).unwrap();
        std::fs::write(mem.join("cafe.md"), cp1252).unwrap();
        write_file(&mem.join("tea.md"), "\u{feff}---\nname: Th\u{e9}\ndescription: d\ntype: user\n---\nTh\u{e9} vert.\n");

        let d = m.memory(&req, "cafe.md").unwrap();
        assert!(d.not_utf8, "{:?}", d.problems);
        assert!(d.content.contains("Caf\u{fffd} au lait"));
        let json = serde_json::to_value(&d).unwrap();
        assert_eq!(json["notUtf8"], serde_json::Value::Bool(true));
        // The editor's banner gets the command to copy as a field of its own.
        assert_eq!(json["problems"][0]["command"]["line"], "iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new");
        assert!(json["problems"][0]["message"].as_str().unwrap().contains("byte 0xE9 on line 2"), "{json}");
        assert!(!m.memory(&req, "tea.md").unwrap().not_utf8);

        let e = m.save_memory(&req, "cafe.md", &d.content, &d.revision).unwrap_err();
        assert!(e.message.contains("not UTF-8"), "{}", e.message);
        // The refusal's command is a field of its own, for the error banner to set apart.
        let fix = e.command.expect("the refused save carries its command");
        assert_eq!(fix.line, "iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new");
        assert!(fix.before.starts_with("Mneme will not save cafe.md because it is not UTF-8 text: byte 0xE9 on line 2"), "{}", fix.before);
        assert_eq!(std::fs::read(mem.join("cafe.md")).unwrap(), cp1252);
    }
}
