//! How well the index serves Claude Code: whether `MEMORY.md` fits the 200-line / 25,000-unit
//! cap and exactly which entries fall past it, memories nobody indexed, index lines pointing
//! nowhere, duplicates, long lines and `[[links]]` to memories that do not exist (yet); plus
//! the fixes, each an atomic, conflict-checked rewrite of the index.
//!
//! The cap is measured as Claude Code measures it (`parseMemoryFileContent`): frontmatter
//! off, then block-level HTML comments off, then the text trimmed with JavaScript's `trim()`,
//! counting lines by `split('\n')` and length in UTF-16 units (`truncateEntrypointContent`).
//! Comment stripping is `mneme_markdown`'s, the same lexer the CLAUDE.md loader uses, so the
//! meter and the loader agree on what a comment hides.

use super::index::{commented_lines, loaded_span, lone_cr_ends_lines, parse_index_as, render_entry, IndexDoc, LONG_INDEX_LINE_UNITS};
use mneme_core::versions::Profile;
use super::scan::stem_of;
use super::pending::RENAMED;
use super::{Memdir, MemdirError, Problem, ProblemKind, Revision, Scan, Scope, TopicFile, TEAM_DIR};
use mneme_core::text::{utf16_len, MAX_ENTRYPOINT_LINES, MAX_ENTRYPOINT_UNITS};
use crate::fold::{folded, same_entry};
use serde::Serialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

/// An index line that holds an entry.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct IndexEntryRef {
    /// 1-based line number.
    pub line: usize,
    /// The target, relative to the memory folder.
    pub rel_path: String,
    /// The line, verbatim.
    pub text: String,
}

/// A target indexed more than once.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct Duplicate {
    /// The target, relative to the memory folder.
    pub rel_path: String,
    /// Every line (1-based) pointing at it.
    pub lines: Vec<usize>,
}

/// An index line longer than [`LONG_INDEX_LINE_UNITS`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct LongLine {
    /// 1-based line number.
    pub line: usize,
    /// Its length in UTF-16 units.
    pub units: usize,
}

/// A `[[link]]` that matches no memory's `name:`, file stem or path. Claude Code's own
/// instructions call these fine ("it marks something worth writing later"), so this is
/// information, not an error.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct DanglingLink {
    /// The file holding the link, relative to the memory folder.
    pub from: String,
    /// The link name.
    pub link: String,
}

/// An index line that still shows a memory's old name or description: an edit changed the
/// file and stopped (a crash, a kill) before the index followed. Found from the note the edit
/// left (see `pending.rs`), so hand-written titles and hooks that differ on purpose are not.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct StaleIndexLine {
    /// `MEMORY.md` or `team/MEMORY.md`.
    pub index_rel_path: String,
    /// 1-based line number.
    pub line: usize,
    /// The memory, relative to the memory folder.
    pub rel_path: String,
    /// The line, verbatim.
    pub text: String,
    /// `name` (the line's title), `description` (its hook) or `path` (its target, after a rename).
    pub field: String,
    /// What the line shows.
    pub index_shows: String,
    /// What the file says now.
    pub file_has: String,
}

/// The state of one index file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct IndexHealth {
    /// `MEMORY.md` or `team/MEMORY.md`.
    pub rel_path: String,
    /// Whether the file exists.
    pub exists: bool,
    /// What was measured.
    pub revision: Revision,
    /// Lines of the trimmed text, as Claude Code counts them.
    pub line_count: usize,
    /// UTF-16 units of the trimmed text.
    pub unit_count: usize,
    /// The line cap (200).
    pub max_lines: usize,
    /// The unit cap (25,000).
    pub max_units: usize,
    /// Whether Claude Code loads only part of the index.
    pub truncated: bool,
    /// Over the line cap.
    pub line_truncated: bool,
    /// Over the unit cap.
    pub unit_truncated: bool,
    /// The last file line (1-based) Claude Code loads in full; 0 when none.
    pub loaded_through_line: usize,
    /// How many lines hold entries.
    pub entry_count: usize,
    /// Entries whose line is not fully loaded: Claude Code does not see them.
    pub past_cap: Vec<IndexEntryRef>,
    /// Entries whose target file does not exist. A line a rename that stopped half-way left
    /// naming the old file is not here: it is reported once, in `staleIndexLines` (field `path`).
    pub missing_targets: Vec<IndexEntryRef>,
    /// Targets indexed more than once.
    pub duplicates: Vec<Duplicate>,
    /// Lines over about 200 characters.
    pub long_lines: Vec<LongLine>,
}

/// The health of a memory folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct Health {
    /// Readable topic files.
    pub topic_count: usize,
    /// `MEMORY.md`.
    pub index: IndexHealth,
    /// `team/MEMORY.md`, when there is a `team/` folder.
    pub team_index: Option<IndexHealth>,
    /// Topic files no index line points at (daily logs under `logs/` excepted: they are
    /// not meant to be indexed), newest first, at most 50 of them (`UNINDEXED_LISTED`): a
    /// folder of thousands would otherwise carry every name. `unindexedCount` says how many
    /// there are; the memory list's `indexed` flag tells each memory. A memory a rename that
    /// stopped half-way moved is not here: its line is the one the rename left, reported in
    /// `staleIndexLines` (field `path`), which the index fix points at it.
    pub unindexed: Vec<String>,
    /// How many topic files no index line points at, all of them (`unindexed` lists the
    /// newest).
    pub unindexed_count: usize,
    /// `[[links]]` that match no memory.
    pub dangling_links: Vec<DanglingLink>,
    /// Index lines an unfinished edit left showing the memory's old name or description, or
    /// (field `path`) a rename left naming the old file after the file moved: the old name
    /// (`indexShows`), the new one (`relPath`), and the line, which the index fix points at the
    /// new name keeping the rest of it. The index fix brings each in line with the file.
    pub stale_index_lines: Vec<StaleIndexLine>,
    /// Files the scan could not read fully, and an unreadable index.
    pub problems: Vec<Problem>,
}

/// The memories the indexes list, matched as the disk matches names: a line spelled in another
/// letter case than its file (`TABS.md` for `tabs.md`) lists that file on a disk that folds
/// case (an exFAT stick, macOS, Windows), where Claude Code opens it by that line; on a disk
/// that tells case apart it points at a file that is not there, and the memory is not listed.
#[derive(Debug, Clone, Default)]
pub struct IndexedTargets {
    root: PathBuf,
    /// Targets as the lines spell them, relative to the memory folder.
    exact: HashSet<String>,
    /// The same, by their folded spelling: where to look when a memory's own spelling is not
    /// among them (rarely), before asking the disk.
    folded: HashMap<String, Vec<String>>,
}

impl IndexedTargets {
    fn new(root: &Path, targets: impl IntoIterator<Item = String>) -> IndexedTargets {
        let mut t = IndexedTargets { root: root.to_path_buf(), ..IndexedTargets::default() };
        for rel in targets {
            t.folded.entry(folded(&rel)).or_default().push(rel.clone());
            t.exact.insert(rel);
        }
        t
    }

    /// Whether a line of an index opens the memory at `rel` (relative to the memory folder, as
    /// the folder lists it). A line spelled otherwise counts only where the disk says the two
    /// spellings are one file: both open, and the folder lists one of them
    /// ([`crate::fold::same_entry`]).
    pub fn contains(&self, rel: &str) -> bool {
        if self.exact.contains(rel) {
            return true;
        }
        let Some(spellings) = self.folded.get(&folded(rel)) else { return false };
        let listed = self.root.join(rel);
        spellings.iter().any(|t| same_entry(&listed, &self.root.join(t)))
    }
}

/// The most unindexed memories [`Health::unindexed`] names.
pub const UNINDEXED_LISTED: usize = 50;

/// What one index fix changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexFix {
    /// `MEMORY.md` or `team/MEMORY.md`.
    pub index_rel_path: String,
    /// Lines added.
    pub added: Vec<String>,
    /// Lines removed (kept here so the user can see, and copy back, what went).
    pub removed: Vec<String>,
    /// Lines moved up.
    pub moved: Vec<String>,
    /// The index's new revision, when it was written.
    pub revision: Option<Revision>,
    /// Entries still past the cap afterwards.
    pub past_cap_after: Vec<IndexEntryRef>,
    /// Memories (relative paths) no line was added for because the index had no room left
    /// under Claude Code's cap: a line past it would be one Claude Code never reads.
    pub left_out: Vec<String>,
}

/// Each line of `content` as [`IndexDoc`] splits it (on LF; with `lone_cr`, on a lone CR too,
/// as [`IndexDoc::parse_as`] does for the releases that read one as a line end): where it
/// starts, where its text ends (before a CR of its CRLF) and where the next line starts. An
/// empty piece after the last line end is no line.
fn line_bounds(content: &str, lone_cr: bool) -> Vec<(usize, usize, usize)> {
    let b = content.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        match c {
            b'\n' => {
                let text_end = if i > start && b[i - 1] == b'\r' { i - 1 } else { i };
                out.push((start, text_end, i + 1));
                start = i + 1;
            }
            b'\r' if lone_cr && b.get(i + 1) != Some(&b'\n') => {
                out.push((start, i, i + 1));
                start = i + 1;
            }
            _ => {}
        }
    }
    if start < b.len() {
        out.push((start, b.len(), b.len() + 1));
    }
    out
}

/// For each line of `content` (as [`line_bounds`] splits it), whether Claude Code loads it in
/// full. Lines that comment stripping removes entirely count as loaded: Claude Code drops them
/// on purpose, not for want of room. The cap is measured on the file's own text whichever
/// way its lines are split: a lone CR counts as no line towards it unless comment stripping
/// (marked, which reads it as a line end) rewrote the text. `crlf_as_lf`: the release reads
/// CRLF as LF before it measures (from 2.1.284, row 9), so no CR of a CRLF counts towards the
/// 25,000 units; earlier releases count each. Comment stripping decides too: up to 2.1.329 a
/// file holding `<!--` is rebuilt from marked's tokens (every line end LF, link reference
/// definitions gone), so there no CR counts whatever the release; from 2.1.330
/// (`rerender_only_when_removed`) only a file a comment block is removed from is rebuilt, its
/// definitions kept, and any other is measured as it is.
fn loaded_lines(content: &str, lone_cr: bool, crlf_as_lf: bool, rerender_only_when_removed: bool) -> (mneme_core::text::EntrypointTruncation, Vec<bool>) {
    let fm_len = mneme_core::frontmatter::parse(content).frontmatter.as_ref().map_or(0, |f| f.block_len);
    let body = &content[fm_len..];
    let kept = match rerender_only_when_removed {
        true => mneme_markdown::html_comment_kept_ranges_rerendered_only_when_removed(body),
        false => mneme_markdown::html_comment_kept_ranges(body),
    };
    let kept = kept.filter(|k| k.iter().all(|r| body.get(r.clone()).is_some()));
    let Some(kept) = kept else { return loaded_lines_raw(content, lone_cr, crlf_as_lf) };
    // The stripped text (its CRLF and lone CR turned into LF), and for each of its bytes the
    // byte of `content` it came from.
    let mut text = String::new();
    let mut origin: Vec<usize> = Vec::new();
    for r in &kept {
        let piece = &body[r.clone()];
        let mut chars = piece.char_indices().peekable();
        while let Some((i, c)) = chars.next() {
            let at = fm_len + r.start + i;
            if c == '\r' {
                if chars.peek().is_some_and(|(_, n)| *n == '\n') {
                    continue;
                }
                text.push('\n');
                origin.push(at);
                continue;
            }
            text.push(c);
            origin.extend(std::iter::repeat_n(at, c.len_utf8()));
        }
    }
    // As `loaded_span`, but the frontmatter is already off: it is not stripped twice.
    let start = text.len() - text.trim_start_matches(mneme_core::text::is_js_whitespace).len();
    let t = mneme_core::text::truncate_entrypoint(&text);
    let len = if t.was_truncated() { t.content.rfind("\n\n> WARNING: MEMORY.md is ").unwrap_or(0) } else { t.content.len() };
    let end = start + len;
    // The last stripped byte each line's text ends up as.
    let mut flags = Vec::new();
    let mut o = 0;
    for (pos, text_end, next) in line_bounds(content, lone_cr) {
        let mut last = None;
        while o < origin.len() && origin[o] < next {
            if origin[o] >= pos && origin[o] < text_end {
                last = Some(o);
            }
            o += 1;
        }
        flags.push(last.is_none_or(|l| l < end));
    }
    (t, flags)
}

/// [`loaded_lines`] as `release` reads and measures `content`.
fn loaded_lines_as(content: &str, release: &Profile) -> (mneme_core::text::EntrypointTruncation, Vec<bool>) {
    loaded_lines(content, lone_cr_ends_lines(content, release), release.memory_index_crlf_to_lf, release.comments_rerender_only_when_removed)
}

fn loaded_lines_raw(content: &str, lone_cr: bool, crlf_as_lf: bool) -> (mneme_core::text::EntrypointTruncation, Vec<bool>) {
    if crlf_as_lf && content.contains("\r\n") {
        // Measured as the release measures it, on the text with each CRLF made LF; that text has
        // the same lines, in the same order, so each flag is still its line's.
        return loaded_lines_raw(&content.replace("\r\n", "\n"), lone_cr, false);
    }
    let (t, start, len) = loaded_span(content);
    let end = start + len;
    let flags = line_bounds(content, lone_cr).into_iter().map(|(_, text_end, _)| text_end <= end).collect();
    (t, flags)
}

/// For each line of an index's text (split on `\n`, as [`IndexDoc::parse`] splits it), whether
/// Claude Code loads it in full: for callers that compute a new index before writing it.
pub fn loaded_index_lines(content: &str) -> Vec<bool> {
    loaded_lines(content, false, false, false).1
}

/// [`loaded_index_lines`] for each line `release` reads in `content` (as
/// [`IndexDoc::parse_as`] splits it): from 2.1.284 a lone CR ends a line, though it counts no
/// line towards the cap. Split on LF alone, such a file is one line, and its last lone CR,
/// trimmed before the cut, leaves that line short of loaded.
pub fn loaded_index_lines_as(content: &str, release: &Profile) -> Vec<bool> {
    loaded_lines_as(content, release).1
}

/// Whether the line at 0-based `index` of `content` (split as `release` reads it, see
/// [`loaded_index_lines_as`]) falls past Claude Code's cap.
pub(crate) fn line_past_cap(content: &str, index: usize, release: &Profile) -> bool {
    !loaded_index_lines_as(content, release).get(index).copied().unwrap_or(false)
}

fn past_cap_entries(content: &str, scope: Scope, root: &Path, release: &Profile) -> Vec<IndexEntryRef> {
    let (_, flags) = loaded_lines_as(content, release);
    parse_index_as(content, scope, root, release)
        .into_iter()
        .filter(|l| !flags.get(l.number - 1).copied().unwrap_or(false))
        .filter_map(|l| l.entry.map(|e| IndexEntryRef { line: l.number, rel_path: e.rel_path, text: l.text }))
        .collect()
}

/// Newest first by modification time, then by path.
fn newest_first<F: Dated>(files: &mut [&F]) {
    files.sort_by(|a, b| b.mtime_ns().cmp(&a.mtime_ns()).then_with(|| a.rel_path().cmp(b.rel_path())));
}

/// What [`newest_first`] sorts by: the index fix sorts whole files, the report their facts.
trait Dated {
    fn mtime_ns(&self) -> i64;
    fn rel_path(&self) -> &str;
}

impl Dated for TopicFile {
    fn mtime_ns(&self) -> i64 {
        self.mtime_ns
    }
    fn rel_path(&self) -> &str {
        &self.rel_path
    }
}

/// All the health report needs of one memory file (see [`Memdir::health_of`]).
struct Facts<'a> {
    rel_path: &'a str,
    mtime_ns: i64,
    name: Option<&'a str>,
    links: &'a [String],
}

impl Dated for Facts<'_> {
    fn mtime_ns(&self) -> i64 {
        self.mtime_ns
    }
    fn rel_path(&self) -> &str {
        self.rel_path
    }
}

impl Memdir {
    fn target_exists(&self, rel: &str) -> bool {
        fs::symlink_metadata(self.abs(rel)).is_ok()
    }

    fn index_health(&self, scope: Scope, problems: &mut Vec<Problem>) -> IndexHealth {
        let rel = scope.index_rel_path();
        let (content, revision, lines) = match self.read_index(scope) {
            Ok(f) => (f.content, f.revision, f.lines),
            Err(e) => {
                problems.push(Problem::new(rel, ProblemKind::IndexUnreadable, e.to_string()));
                (String::new(), Revision::ABSENT, Vec::new())
            }
        };
        // Split into lines as `read_index` split them, so each flag is its line's.
        let release = self.index_release(&content);
        let (t, flags) = loaded_lines_as(&content, &release);
        let mut h = IndexHealth {
            rel_path: rel.into(),
            exists: revision.exists(),
            revision,
            line_count: if content.is_empty() { 0 } else { t.line_count },
            unit_count: t.unit_count,
            max_lines: MAX_ENTRYPOINT_LINES,
            max_units: MAX_ENTRYPOINT_UNITS,
            truncated: t.was_truncated(),
            line_truncated: t.was_line_truncated,
            unit_truncated: t.was_unit_truncated,
            loaded_through_line: flags.iter().take_while(|f| **f).count(),
            entry_count: 0,
            past_cap: Vec::new(),
            missing_targets: Vec::new(),
            duplicates: Vec::new(),
            long_lines: Vec::new(),
        };
        let mut by_target: BTreeMap<String, Vec<usize>> = BTreeMap::new();
        for line in lines {
            let units = utf16_len(&line.text);
            if units > LONG_INDEX_LINE_UNITS {
                h.long_lines.push(LongLine { line: line.number, units });
            }
            let Some(e) = line.entry else { continue };
            h.entry_count += 1;
            let r = IndexEntryRef { line: line.number, rel_path: e.rel_path.clone(), text: line.text };
            if !flags.get(line.number - 1).copied().unwrap_or(false) {
                h.past_cap.push(r.clone());
            }
            if !self.target_exists(&e.rel_path) {
                h.missing_targets.push(r);
            }
            by_target.entry(e.rel_path).or_default().push(line.number);
        }
        self.merge_spellings(&mut by_target);
        h.duplicates = by_target
            .into_iter()
            .filter(|(_, lines)| lines.len() > 1)
            .map(|(rel_path, lines)| Duplicate { rel_path, lines })
            .collect();
        h
    }

    /// Index targets that name one file in two spellings, on a disk that folds letter case,
    /// are one memory: each such target → the spelling it is counted under (the one the folder
    /// lists where one of them is it). A target no other spells the same way but for case is
    /// not in the map; only those that are make the disk be asked.
    fn one_spelling<'a>(&self, targets: impl IntoIterator<Item = &'a str>) -> HashMap<String, String> {
        let mut by_folded: HashMap<String, Vec<&str>> = HashMap::new();
        for rel in targets {
            let spellings = by_folded.entry(folded(rel)).or_default();
            if !spellings.contains(&rel) {
                spellings.push(rel);
            }
        }
        let mut out = HashMap::new();
        for mut spellings in by_folded.into_values().filter(|s| s.len() > 1) {
            spellings.sort_unstable();
            // The spellings the folder lists first, so one of them is the one counted.
            spellings.sort_by_key(|rel| crate::fold::listed_spelling(&self.abs(rel)).is_some());
            let mut kept: Vec<&str> = Vec::new();
            for rel in spellings {
                match kept.iter().find(|k| same_entry(&self.abs(k), &self.abs(rel))) {
                    Some(k) => out.insert(rel.to_string(), k.to_string()),
                    None => {
                        kept.push(rel);
                        out.insert(rel.to_string(), rel.to_string())
                    }
                };
            }
        }
        out
    }

    /// `by_target` (target → its lines) with one key for the spellings of one file (see
    /// [`Memdir::one_spelling`]).
    fn merge_spellings(&self, by_target: &mut BTreeMap<String, Vec<usize>>) {
        let keys = self.one_spelling(by_target.keys().map(String::as_str));
        for (rel, key) in keys.into_iter().filter(|(rel, key)| rel != key) {
            let lines = by_target.remove(&rel).unwrap_or_default();
            let into = by_target.entry(key).or_default();
            into.extend(lines);
            into.sort_unstable();
        }
    }

    /// Every memory an index lists (see [`IndexedTargets`]): each target a line points at, and
    /// each memory a rename moved before it stopped, whose line still names its old path
    /// ([`Health::stale_index_lines`], field `path`). Such a memory has its line, one the fix
    /// points at the new path where it stands; the health report lists the two as the one
    /// rename, so the memory list flags the memory as indexed rather than as one more problem.
    pub fn indexed_targets(&self) -> IndexedTargets {
        self.indexed_targets_with(&self.stopped_renames())
    }

    /// [`Memdir::indexed_targets`] given the stopped renames' lines.
    fn indexed_targets_with(&self, renamed: &[StaleIndexLine]) -> IndexedTargets {
        let mut t = self.index_line_targets();
        for r in renamed.iter().filter(|r| r.field == RENAMED) {
            t.folded.entry(folded(&r.rel_path)).or_default().push(r.rel_path.clone());
            t.exact.insert(r.rel_path.clone());
        }
        t
    }

    /// Every target a line of an index points at, as the lines spell them.
    pub(crate) fn index_line_targets(&self) -> IndexedTargets {
        let targets = [Scope::Private, Scope::Team]
            .into_iter()
            .filter_map(|s| self.read_index(s).ok())
            .flat_map(|f| f.lines.into_iter().filter_map(|l| l.entry.map(|e| e.rel_path)));
        IndexedTargets::new(&self.root, targets)
    }

    fn has_team_dir(&self) -> bool {
        fs::symlink_metadata(self.root.join(TEAM_DIR)).is_ok()
    }

    /// The health report. Never fails: what cannot be read becomes a [`Problem`].
    pub fn health(&self) -> Health {
        let scan = self.scan().unwrap_or_else(|e| Scan {
            files: Vec::new(),
            problems: vec![Problem::new("", ProblemKind::UnreadableFolder, e.to_string())],
        });
        self.health_of(&scan.files, |f| (f.rel_path.as_str(), f.mtime_ns, f.name.as_deref(), f.links.as_slice()), scan.problems)
    }

    /// [`Memdir::health`] from what a scan found: `files`, one per memory file, each told by
    /// `facts` as its relative path, modification time (ns), `name:` and `[[links]]`, and the
    /// scan's problems. For a caller that keeps those facts between reports and reads again
    /// only the files that changed (the api, on folders of thousands). Given the facts and
    /// problems a fresh [`Memdir::scan`] gives, the report is [`Memdir::health`]'s; the
    /// indexes are read here each time. A caller that keeps only the shown name (`name:`, else
    /// the file stem) may give that as the name: a link may name the stem anyway.
    pub fn health_of<T>(&self, files: &[T], facts: impl Fn(&T) -> (&str, i64, Option<&str>, &[String]), mut problems: Vec<Problem>) -> Health {
        let mut files: Vec<Facts> =
            files.iter().map(facts).map(|(rel_path, mtime_ns, name, links)| Facts { rel_path, mtime_ns, name, links }).collect();
        // The scan's order, which the dangling links are listed in.
        files.sort_unstable_by(|a, b| a.rel_path.cmp(b.rel_path));
        // A rename that stopped between moving its file and pointing its index line at the new
        // path is one problem, which the fix mends by pointing the line there: it is reported
        // once, as the line the rename left (`stale_index_lines`, field `path`), not again as
        // a line pointing at a missing file and a memory with no line. Only a rename the folder
        // bears out counts (`Memdir::moved_to`), so a stale or planted note hides nothing.
        let stale_index_lines = self.stale_index_lines();
        let renamed: Vec<&StaleIndexLine> = stale_index_lines.iter().filter(|s| s.field == RENAMED).collect();
        let not_renamed = |h: &mut IndexHealth| {
            h.missing_targets.retain(|e| !renamed.iter().any(|r| r.index_rel_path == h.rel_path && r.line == e.line && r.index_shows == e.rel_path));
        };
        let mut index = self.index_health(Scope::Private, &mut problems);
        not_renamed(&mut index);
        let mut team_index = self.has_team_dir().then(|| self.index_health(Scope::Team, &mut problems));
        team_index.as_mut().map(not_renamed);
        let indexed = self.indexed_targets_with(&stale_index_lines);
        let mut unindexed: Vec<&Facts> = files.iter().filter(|f| !indexed.contains(f.rel_path) && !f.rel_path.starts_with("logs/")).collect();
        let unindexed_count = unindexed.len();
        newest_first(&mut unindexed);
        let unindexed = unindexed.into_iter().take(UNINDEXED_LISTED).map(|f| f.rel_path.to_string()).collect();
        let mut known: HashSet<&str> = HashSet::new();
        for f in &files {
            known.insert(stem_of(f.rel_path));
            known.insert(f.rel_path.strip_suffix(".md").unwrap_or(f.rel_path));
            if let Some(n) = f.name {
                known.insert(n);
            }
        }
        let dangling_links = files
            .iter()
            .flat_map(|f| {
                f.links
                    .iter()
                    .filter(|l| !known.contains(l.as_str()))
                    .map(|l| DanglingLink { from: f.rel_path.to_string(), link: l.clone() })
            })
            .collect();
        Health { topic_count: files.len(), index, team_index, unindexed, unindexed_count, dangling_links, stale_index_lines, problems }
    }

    pub(crate) fn fix_result(&self, scope: Scope, added: Vec<String>, removed: Vec<String>, moved: Vec<String>, revision: Option<Revision>) -> IndexFix {
        let past_cap_after = self
            .read_index(scope)
            .map(|f| past_cap_entries(&f.content, scope, &self.root, &self.index_release(&f.content)))
            .unwrap_or_default();
        IndexFix { index_rel_path: scope.index_rel_path().into(), added, removed, moved, revision, past_cap_after, left_out: Vec::new() }
    }

    /// Adds `- [name](file.md) — description` for every topic file no index points at: to
    /// `MEMORY.md` for private files, to `team/MEMORY.md` for team files (daily logs under
    /// `logs/` excepted), as many as fit under Claude Code's cap (lines and UTF-16 units, as
    /// the health meter measures them); the rest are named in [`IndexFix::left_out`]. Returns
    /// one fix per index that changed or had no room.
    pub fn add_missing_index_lines(&self) -> Result<Vec<IndexFix>, MemdirError> {
        let scan = self.scan()?;
        let indexed = self.indexed_targets();
        let mut fixes = Vec::new();
        for scope in [Scope::Private, Scope::Team] {
            let mut missing: Vec<_> = scan
                .files
                .iter()
                .filter(|f| f.scope == scope && !indexed.contains(&f.rel_path) && !f.rel_path.starts_with("logs/"))
                .collect();
            // Newest first: when the cap stops the fix, the lines Claude Code reads are for the
            // memories written last, not those whose names sort first.
            newest_first(&mut missing);
            if missing.is_empty() {
                continue;
            }
            let root = self.root.clone();
            let (added_and_left, revision) = self.edit_index_with(scope, |doc, original| {
                let present = IndexedTargets::new(&root, doc.entries(scope, &root).into_iter().map(|(_, e)| e.rel_path));
                let wanted: Vec<_> = missing.iter().filter(|f| !present.contains(&f.rel_path)).collect();
                let hidden_before = commented_lines(&doc.lines);
                // Each entry adds its own units to what Claude Code loads, and one non-blank
                // line to the line cap unless it ends in a lone CR the release reads (which counts
                // none): trying only as many as could fit keeps a folder of thousands from
                // rendering and measuring an index of thousands of lines.
                let release = self.index_release(original);
                let max_lines = if lone_cr_ends_lines(original, &release) { usize::MAX } else { MAX_ENTRYPOINT_LINES };
                let mut added = Vec::new();
                let mut at = Vec::new();
                let mut units = 0;
                for f in wanted.iter().take(max_lines) {
                    let line = render_entry(f.display_name(), &f.rel_path, scope, f.description.as_deref());
                    units += utf16_len(&line);
                    if units > MAX_ENTRYPOINT_UNITS {
                        break;
                    }
                    at.push(doc.append(line.clone()));
                    added.push(line);
                }
                // Appended lines follow one another after the last non-blank line, and whether
                // a line is read depends only on what comes before it, so the ones that fit
                // are a prefix: keep it and take the rest back out. Measured on the text as it
                // will be written, as the release splits it into the doc's lines: a lone CR
                // ends a line from 2.1.284 but counts none towards the 200.
                let loaded = loaded_index_lines_as(&doc.render_as(original, &release), &release);
                let fit = at.iter().take_while(|&&i| loaded.get(i).copied().unwrap_or(false)).count();
                doc.remove(&at[fit..]);
                added.truncate(fit);
                at.truncate(fit);
                // Claude Code strips an HTML comment only once it closes: a `<!--` left open
                // hides nothing, until a line after it holds `-->`. An added line whose
                // description holds one would close it, and every line from the `<!--` on would
                // vanish from what Claude Code reads. Nothing is written then.
                if let Some(&first) = at.first() {
                    let hidden = commented_lines(&doc.lines);
                    let newly = |i: usize| hidden[i] && !hidden_before.get(i).copied().unwrap_or(false);
                    if (0..first).chain(at.iter().copied()).any(newly) {
                        let closer = at.iter().position(|&i| doc.lines[i].text.contains("-->")).map(|k| wanted[k].rel_path.clone());
                        doc.remove(&at);
                        let opened = doc.lines[..first].iter().rposition(|l| l.text.contains("<!--")).map_or(first, |i| i + 1);
                        return Err((opened, closer.unwrap_or_default()));
                    }
                }
                let left_out: Vec<String> = wanted[fit..].iter().map(|f| f.rel_path.clone()).collect();
                Ok((added, left_out))
            })?;
            let (added, left_out) =
                added_and_left.map_err(|(line, closed_by)| MemdirError::IndexCommentOpen { index: scope.index_rel_path().to_string(), line, closed_by })?;
            if !added.is_empty() || !left_out.is_empty() {
                let mut fix = self.fix_result(scope, added, Vec::new(), Vec::new(), revision);
                fix.left_out = left_out;
                fixes.push(fix);
            }
        }
        Ok(fixes)
    }

    /// Removes index lines whose target file does not exist. The removed lines are returned.
    /// Only in the private index: `team/MEMORY.md` is the team's, and a line that dangles here
    /// may name a file the last pull could not write on this disk (too large, a case twin, a
    /// link in its place); removing it would remove it for everyone at the next push.
    /// A line a stopped rename left naming the old path stays: it is the memory's line, which
    /// [`Memdir::repair_stale_index_lines`] points at the new path.
    pub fn drop_dangling_index_lines(&self) -> Result<Vec<IndexFix>, MemdirError> {
        let scope = Scope::Private;
        let root = self.root.clone();
        let renamed: HashSet<String> = self.stopped_renames().into_iter().map(|r| r.index_shows).collect();
        let (removed, revision) = self.edit_index(scope, |doc| {
            let hits: Vec<usize> = doc
                .entries(scope, &root)
                .into_iter()
                .filter(|(_, e)| !self.target_exists(&e.rel_path) && !renamed.contains(&e.rel_path))
                .map(|(i, _)| i)
                .collect();
            doc.remove(&hits)
        })?;
        if removed.is_empty() {
            return Ok(Vec::new());
        }
        Ok(vec![self.fix_result(scope, Vec::new(), removed, Vec::new(), revision)])
    }

    /// Makes room in an index for what matters: removes repeated entries for the same target
    /// (the first stays), then moves the entries for `priority` (paths relative to the memory
    /// folder, most important first) to where the first entry is, keeping every other line
    /// in its order. The result reports which entries are still past the cap.
    pub fn reorder_index(&self, scope: Scope, priority: &[String]) -> Result<IndexFix, MemdirError> {
        let root = self.root.clone();
        let ((removed, moved), revision) = self.edit_index(scope, |doc: &mut IndexDoc| {
            let mut seen = HashSet::new();
            let entries = doc.entries(scope, &root);
            // Lines for two spellings of one file are repeats too, where the disk folds case.
            let one = self.one_spelling(entries.iter().map(|(_, e)| e.rel_path.as_str()));
            let repeats: Vec<usize> = entries
                .into_iter()
                .filter(|(_, e)| !seen.insert(one.get(&e.rel_path).cloned().unwrap_or_else(|| e.rel_path.clone())))
                .map(|(i, _)| i)
                .collect();
            let removed = doc.remove(&repeats);

            let entries = doc.entries(scope, &root);
            let Some(&(first_slot, _)) = entries.first() else { return (removed, Vec::new()) };
            let mut picked: Vec<usize> = Vec::new();
            for p in priority {
                if let Some((i, _)) = entries.iter().find(|(_, e)| &e.rel_path == p) {
                    if !picked.contains(i) {
                        picked.push(*i);
                    }
                }
            }
            // Lines already in place at the top, in priority order, need not move.
            if picked.iter().enumerate().all(|(k, &i)| i == first_slot + k) {
                return (removed, Vec::new());
            }
            let crlf = doc.crlf();
            let mut taken: Vec<_> = picked.iter().map(|&i| doc.lines[i].clone()).collect();
            let mut order = picked.clone();
            order.sort_unstable();
            for &i in order.iter().rev() {
                doc.lines.remove(i);
            }
            let moved = taken.iter().map(|l| l.text.clone()).collect();
            for (k, mut line) in taken.drain(..).enumerate() {
                line.crlf = crlf;
                doc.lines.insert(first_slot + k, line);
            }
            (removed, moved)
        })?;
        Ok(self.fix_result(scope, Vec::new(), removed, moved, revision))
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    fn entries(n: usize) -> String {
        (1..=n).map(|i| format!("- [m{i}](m{i}.md) — hook {i}\n")).collect()
    }

    fn check_cap(content: &str, truncated: bool, past_cap_lines: &[usize]) {
        let t = TestDir::new();
        t.write("MEMORY.md", content);
        let h = t.memdir().health();
        assert_eq!(h.index.truncated, truncated, "lines {} units {}", h.index.line_count, h.index.unit_count);
        let got: Vec<usize> = h.index.past_cap.iter().map(|r| r.line).collect();
        assert_eq!(got, past_cap_lines);
    }

    #[test]
    fn exactly_200_lines_fit_and_201_do_not() {
        check_cap(&entries(200), false, &[]);
        check_cap(&entries(201), true, &[201]);
        check_cap(&format!("\n\n{}", entries(200)), false, &[]); // leading blank lines are trimmed
        check_cap(&format!("---\ntitle: x\n---\n{}", entries(200)), false, &[]); // frontmatter is stripped
        let t = TestDir::new();
        t.write("MEMORY.md", &entries(203));
        let h = t.memdir().health();
        assert_eq!((h.index.line_count, h.index.loaded_through_line, h.index.entry_count), (203, 200, 203));
        assert!(h.index.line_truncated && !h.index.unit_truncated);
    }

    /// A lone CR ends an index line, but the cap counts it as no line: an index of 207 LF lines,
    /// one of them holding a lone CR, is cut after its 200th LF line, which the session reads as
    /// 201 lines from 2.1.284 (the CR sent as LF). Before 2.1.284 the CR is sent as it is, and the
    /// same entries load, so health lists the same ones (it once read the CR's two entries as one
    /// line there, and called the second unindexed).
    #[test]
    fn a_lone_cr_ends_a_line_but_counts_no_line_towards_the_cap() {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        let content = entries(207).replacen("\n- [m2]", "\r- [m2]", 1);
        let t = TestDir::new();
        t.write("MEMORY.md", &content);
        let h = t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, 284))).health();
        // `line_count` is the cap's count; the lines shown count the lone CR.
        assert_eq!((h.index.line_count, h.index.loaded_through_line, h.index.entry_count), (206, 201, 207), "{h:#?}");
        assert_eq!(h.index.past_cap.iter().map(|r| (r.line, r.rel_path.as_str())).collect::<Vec<_>>()[..2], [(202, "m202.md"), (203, "m203.md")]);
        assert_eq!(h.unindexed_count, 0);
        let old = t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, 283))).health();
        assert_eq!((old.index.line_count, old.index.loaded_through_line, old.index.entry_count), (206, 201, 207), "{old:#?}");
        assert_eq!(old.index.past_cap.first().map(|r| (r.line, r.rel_path.as_str())), Some((202, "m202.md")));
        assert_eq!(old.unindexed_count, 0);

        // A file of lone CRs only is one line to the cap: every entry loads.
        let mac = entries(250).replace('\n', "\r");
        t.write("MEMORY.md", &mac);
        let h = t.memdir().health();
        assert_eq!((h.index.line_count, h.index.entry_count, h.index.loaded_through_line), (1, 250, 250), "{h:#?}");
        assert!(!h.index.truncated && h.index.past_cap.is_empty());
    }

    /// An index holding `<!--`, measured as each release's comment stripping leaves it, as the
    /// real releases were seen to (2.1.197, 2.1.316 and 2.1.332, 2026-12-07): up to 2.1.329 any
    /// such file is rebuilt from marked's tokens, so its link reference definitions go and its
    /// lone CRs become line ends; from 2.1.330 only a file a comment block is removed from is
    /// rebuilt, keeping its definitions, and one with `<!--` only inside a code span is measured
    /// as it is. Health used to measure every release as the older ones.
    #[test]
    fn an_index_with_a_comment_is_measured_as_the_release_strips_it() {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        let old = [ClaudeVersion::new(2, 1, 197), ClaudeVersion::new(2, 1, 329)].map(behaviours);
        let new = behaviours(ClaudeVersion::new(2, 1, 330));
        // A removed comment and a definition of 126 units: 24,874 units of entries without it,
        // 25,001 with it (2.1.332 cuts the last entry, 2.1.316 loads them all).
        let entries: String = (1..=199).map(|i| format!("- [m{i:03}](m{i:03}.md) — {}\n", "x".repeat(104))).collect();
        let t = TestDir::new();
        t.write("MEMORY.md", &format!("<!-- c -->\n[ref]: /{}\n{entries}", "t".repeat(124)));
        for release in &old {
            let h = t.memdir().for_release(release).health();
            assert!(!h.index.truncated && h.index.past_cap.is_empty(), "{:?}", h.index.past_cap.first());
        }
        let h = t.memdir().for_release(&new).health();
        assert!(h.index.unit_truncated, "{:#?}", h.index);
        assert_eq!(h.index.past_cap.iter().map(|r| r.rel_path.as_str()).collect::<Vec<_>>(), ["m199.md"]);

        // Lone CRs and a `<!--` in a code span, no comment block: 251 lines once rebuilt (the
        // older releases cut at 200), one line of 250 entries as it is (2.1.332 loads them all).
        let t = TestDir::new();
        let entries: String = (1..=250).map(|i| format!("- [e{i}](e{i}.md) — x\r")).collect();
        let content = format!("`<!--` inline\r{entries}");
        t.write("MEMORY.md", &content);
        for release in &old {
            let h = t.memdir().for_release(release).health();
            assert!(h.index.line_truncated, "{:#?}", h.index);
            assert_eq!(h.index.past_cap.len(), 51);
            assert_eq!(h.index.past_cap[0].rel_path, "e200.md");
        }
        let h = t.memdir().for_release(&new).health();
        assert!(!h.index.truncated && h.index.past_cap.is_empty(), "{:?}", h.index.past_cap.first());
        // An index edit measures each release's way too (a new memory's line, Fix index).
        assert!(loaded_index_lines_as(&content, &new).iter().all(|l| *l));
        assert!(!loaded_index_lines_as(&content, &old[0])[200]);
    }

    /// A CRLF index that fits the 25,000 units only without its CRs: from 2.1.284 CRLF is read
    /// as LF before the file is measured, so every line loads; up to 2.1.283 each CR counts, and
    /// the lines past the unit cut do not. Health used to measure every release's way as the
    /// older one, and called lines past the cap that 2.1.284 loads.
    #[test]
    fn a_crlf_index_is_measured_with_its_crs_only_before_2_1_284() {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        // 199 lines of 124 units: 24,874 units read as LF, 25,072 with the CRs.
        let content: String = (1..=199).map(|i| format!("- [m{i:03}](m{i:03}.md) — {}\r\n", "x".repeat(104))).collect();
        assert_eq!(content.lines().next().map(utf16_len), Some(124));
        let t = TestDir::new();
        t.write("MEMORY.md", &content);
        let new = t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, 284))).health();
        assert!(!new.index.truncated && new.index.past_cap.is_empty(), "{:?}", new.index.past_cap.first());
        assert_eq!((new.index.unit_count, new.index.loaded_through_line), (24_874, 199));
        let old = t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, 283))).health();
        assert!(old.index.unit_truncated, "{old:#?}");
        assert_eq!((old.index.unit_count, old.index.loaded_through_line), (25_072, 198));
        assert_eq!(old.index.past_cap.iter().map(|r| r.line).collect::<Vec<_>>(), [199]);
        // Each release's lines as an index edit measures them (a new memory's line, Fix index).
        assert!(loaded_index_lines_as(&content, &behaviours(ClaudeVersion::new(2, 1, 284))).iter().all(|l| *l));
        assert!(!loaded_index_lines_as(&content, &behaviours(ClaudeVersion::new(2, 1, 283)))[198]);
    }

    /// An index of `lines` entries whose trimmed text is exactly `units` UTF-16 units, with
    /// astral characters so units differ from bytes and chars.
    fn index_of_units(units: usize) -> String {
        let mut s = String::new();
        let mut i = 0;
        loop {
            let line = format!("- [😀 {i:03}](m{i:03}.md) — {}", "x".repeat(130));
            let need = utf16_len(&s) + usize::from(!s.is_empty()) + utf16_len(&line);
            if need > units {
                break;
            }
            if !s.is_empty() {
                s.push('\n');
            }
            s.push_str(&line);
            i += 1;
        }
        let pad = units - utf16_len(&s) - 1;
        s.push('\n');
        s.push_str(&format!("- [pad](pad.md) {}", "y".repeat(pad - "- [pad](pad.md) ".len())));
        assert_eq!(utf16_len(&s), units);
        s
    }

    #[test]
    fn exactly_25000_units_fit_and_25001_do_not() {
        let at = index_of_units(25_000);
        check_cap(&format!("{at}\n"), false, &[]);
        let over = index_of_units(25_001);
        let last = over.lines().count();
        check_cap(&over, true, &[last]);
        let t = TestDir::new();
        t.write("MEMORY.md", &over);
        let h = t.memdir().health();
        assert!(h.index.unit_truncated && !h.index.line_truncated);
        assert_eq!(h.index.unit_count, 25_001);
        assert!(over.len() > 25_001, "bytes differ from units");
    }

    #[test]
    fn html_comments_are_stripped_before_the_cap_is_measured() {
        let comment = format!("<!--\n{}-->\n", "notes\n".repeat(50));
        let content = format!("{comment}{}", entries(200));
        let t = TestDir::new();
        t.write("MEMORY.md", &content);
        let h = t.memdir().health();
        assert!(!h.index.truncated, "lines {}", h.index.line_count);
        assert_eq!(h.index.line_count, 200);
        assert!(h.index.past_cap.is_empty());
        assert_eq!(h.index.loaded_through_line, 252);
        // One more entry: only it is past the cap, counted after the comment.
        t.write("MEMORY.md", &format!("{comment}{}", entries(201)));
        let h = t.memdir().health();
        assert_eq!((h.index.line_count, h.index.truncated), (201, true));
        assert_eq!(h.index.past_cap.iter().map(|r| r.line).collect::<Vec<_>>(), [253]);
        assert_eq!(h.index.loaded_through_line, 252);
        // A `<!--` that opens no HTML block (inside a list item's paragraph) strips nothing:
        // the 52 lines count, and the entries after it are past the cap.
        t.write("MEMORY.md", &format!("- [a](a.md) — x\n  {comment}{}", entries(199)));
        assert!(t.memdir().health().index.truncated);
    }

    #[test]
    fn reports_unindexed_missing_duplicates_long_lines_and_links() {
        let t = TestDir::new();
        t.write(
            "MEMORY.md",
            &format!(
                "# Index\n- [A](a.md) — a\n- [Gone](gone.md) — removed by hand\n- [A twice](a.md)\n- [Long](b.md) — {}\n",
                "z".repeat(200)
            ),
        );
        t.write("a.md", "---\nname: alpha\n---\n[[beta]] [[b]] [[alpha]] [[nobody]]");
        t.write("b.md", "---\nname: beta\n---\n");
        t.write("c.md", "unindexed");
        t.write("logs/2026/01/2026-01-01.md", "daily log, never indexed");
        t.write("team/t.md", "team memory, [[sub/deep]]");
        t.write("sub/deep.md", "x");
        t.set_mtime("c.md", 1_700_000_000, 0);
        t.set_mtime("team/t.md", 1_700_000_001, 0);
        t.set_mtime("sub/deep.md", 1_700_000_002, 0);
        let h = t.memdir().health();
        assert_eq!(h.topic_count, 6);
        // Newest first.
        assert_eq!(h.unindexed, ["sub/deep.md", "team/t.md", "c.md"]);
        assert_eq!(h.unindexed_count, 3);
        assert_eq!(h.index.missing_targets.iter().map(|r| r.line).collect::<Vec<_>>(), [3]);
        assert_eq!(h.index.duplicates, vec![Duplicate { rel_path: "a.md".into(), lines: vec![2, 4] }]);
        assert_eq!(h.index.long_lines.iter().map(|l| l.line).collect::<Vec<_>>(), [5]);
        assert_eq!(h.dangling_links, vec![DanglingLink { from: "a.md".into(), link: "nobody".into() }]);
        let team = h.team_index.unwrap();
        assert!(!team.exists);
        assert_eq!(team.entry_count, 0);
        assert!(h.problems.is_empty(), "{:?}", h.problems);
    }

    #[test]
    fn fixes_add_drop_and_reorder() {
        let t = TestDir::new();
        t.write("MEMORY.md", "- [A](a.md) — a\n- [Gone](gone.md)\n");
        t.write("a.md", "a");
        t.write("b.md", "---\nname: Bee\ndescription: the b memory\n---\n");
        t.write("team/t.md", "t");
        let m = t.memdir();
        let added = m.add_missing_index_lines().unwrap();
        assert_eq!(added.len(), 2);
        assert_eq!(added[0].added, ["- [Bee](b.md) — the b memory"]);
        assert_eq!(added[1].index_rel_path, "team/MEMORY.md");
        assert_eq!(t.read("team/MEMORY.md"), "- [t](t.md)\n");
        assert!(m.add_missing_index_lines().unwrap().is_empty(), "idempotent");

        let dropped = m.drop_dangling_index_lines().unwrap();
        assert_eq!(dropped[0].removed, ["- [Gone](gone.md)"]);
        assert_eq!(t.read("MEMORY.md"), "- [A](a.md) — a\n- [Bee](b.md) — the b memory\n");
        assert!(m.drop_dangling_index_lines().unwrap().is_empty());
        // The team's index is the team's: a line that dangles here is left for the person.
        t.write("team/MEMORY.md", "- [t](t.md)\n- [Big](big.md) — a file the pull could not write\n");
        assert!(m.drop_dangling_index_lines().unwrap().is_empty());
        assert_eq!(t.read("team/MEMORY.md"), "- [t](t.md)\n- [Big](big.md) — a file the pull could not write\n");

        t.write("MEMORY.md", "# Top\n- [A](a.md)\n- [B](b.md)\n- [A again](a.md)\n## Later\n- [T](team/t.md)\n");
        let fix = m.reorder_index(Scope::Private, &["team/t.md".into(), "b.md".into()]).unwrap();
        assert_eq!(fix.removed, ["- [A again](a.md)"]);
        assert_eq!(fix.moved, ["- [T](team/t.md)", "- [B](b.md)"]);
        assert_eq!(t.read("MEMORY.md"), "# Top\n- [T](team/t.md)\n- [B](b.md)\n- [A](a.md)\n## Later\n");
        let again = m.reorder_index(Scope::Private, &["team/t.md".into(), "b.md".into()]).unwrap();
        assert_eq!(again.revision, None, "already in order: nothing written");
    }

    #[test]
    fn adding_missing_lines_stops_at_the_cap_and_names_the_rest() {
        // 195 lines and ten memories nobody indexed: five lines fit under the 200-line cap.
        let t = TestDir::new();
        t.write("MEMORY.md", &entries(195));
        for i in 1..=10 {
            t.write(&format!("new{i:02}.md"), &format!("---\nname: n{i}\ndescription: d{i}\n---\n"));
            t.set_mtime(&format!("new{i:02}.md"), 1_700_000_000 + i64::from(i), 0);
        }
        let m = t.memdir();
        let fixes = m.add_missing_index_lines().unwrap();
        assert_eq!(fixes.len(), 1);
        // The newest memories get the room, newest first.
        assert_eq!(fixes[0].added, (6..=10).rev().map(|i| format!("- [n{i}](new{i:02}.md) — d{i}")).collect::<Vec<_>>());
        assert_eq!(fixes[0].left_out, (1..=5).rev().map(|i| format!("new{i:02}.md")).collect::<Vec<_>>());
        assert!(fixes[0].past_cap_after.is_empty());
        let h = m.health().index;
        assert_eq!((h.line_count, h.truncated), (200, false));
        // Full now: a second run adds nothing and leaves the file as it is.
        let before = t.read("MEMORY.md");
        let again = m.add_missing_index_lines().unwrap();
        assert_eq!((again[0].added.len(), again[0].left_out.len(), again[0].revision), (0, 5, None));
        assert_eq!(t.read("MEMORY.md"), before);

        // The unit cap, too: long hooks fill 25,000 units long before 200 lines.
        let t = TestDir::new();
        t.write("MEMORY.md", "# Index\n");
        let hook = "h".repeat(900);
        for i in 0..40 {
            t.write(&format!("long{i:02}.md"), &format!("---\nname: l{i}\ndescription: {hook}\n---\n"));
        }
        let fixes = t.memdir().add_missing_index_lines().unwrap();
        let (added, left) = (fixes[0].added.len(), fixes[0].left_out.len());
        assert_eq!(added + left, 40);
        assert!(added > 0 && left > 0, "{added} added, {left} left out");
        let h = t.memdir().health().index;
        assert!(!h.truncated && h.unit_count <= MAX_ENTRYPOINT_UNITS, "{} units", h.unit_count);
        assert!(h.unit_count + 910 > MAX_ENTRYPOINT_UNITS, "stopped only when the next line would not fit: {} units", h.unit_count);
        assert!(h.past_cap.is_empty());
    }

    /// From 2.1.284 a lone CR ends an index line but counts no line towards the 200, so the
    /// fix adds as many lines as Claude Code loads of the index as it will be written: 195 LF
    /// lines holding 200 entries leave room for five more, and an index of lone CRs only is one
    /// line to the cap, with room for every missing memory (more than 200 of them). Measured with
    /// each lone CR made LF, the first was full and the second over the cap, and nothing was added.
    #[test]
    fn adding_missing_lines_to_a_lone_cr_index_fills_it_as_claude_code_loads_it() {
        let t = TestDir::new();
        let mixed = (1..=200).map(|i| format!("- [m{i}](m{i}.md) — hook {i}{}", if i % 40 == 20 { "\r" } else { "\n" })).collect::<String>();
        t.write("MEMORY.md", &mixed);
        for i in 1..=200 {
            t.write(&format!("m{i}.md"), "x");
        }
        for i in 1..=8 {
            t.write(&format!("new{i}.md"), &format!("---\nname: n{i}\ndescription: d{i}\n---\n"));
            t.set_mtime(&format!("new{i}.md"), 1_700_000_000 + i64::from(i), 0);
        }
        let m = t.memdir();
        assert_eq!(m.health().index.line_count, 195);
        let fixes = m.add_missing_index_lines().unwrap();
        assert_eq!(fixes[0].added, (4..=8).rev().map(|i| format!("- [n{i}](new{i}.md) — d{i}")).collect::<Vec<_>>(), "{fixes:#?}");
        assert_eq!(fixes[0].left_out, ["new3.md", "new2.md", "new1.md"]);
        assert!(fixes[0].past_cap_after.is_empty(), "{fixes:#?}");
        let h = m.health().index;
        assert_eq!((h.line_count, h.truncated, h.entry_count), (200, false, 205));
        // Each line kept its end; the new ones end as most lines do (LF).
        assert_eq!(t.read("MEMORY.md"), format!("{mixed}{}", (4..=8).rev().map(|i| format!("- [n{i}](new{i}.md) — d{i}\n")).collect::<String>()));

        let t = TestDir::new();
        let mac = (1..=250).map(|i| format!("- [m{i}](m{i}.md) — hook {i}\r")).collect::<String>();
        t.write("MEMORY.md", &mac);
        for i in 1..=250 {
            t.write(&format!("m{i}.md"), "x");
        }
        for i in 1..=210 {
            t.write(&format!("new{i:03}.md"), "x");
        }
        let fixes = t.memdir().add_missing_index_lines().unwrap();
        assert_eq!((fixes[0].added.len(), fixes[0].left_out.len()), (210, 0), "{:?}", fixes[0].left_out);
        let text = t.read("MEMORY.md");
        assert!(text.starts_with(&mac) && !text.contains('\n'), "every line ends in a lone CR");
        let h = t.memdir().health();
        assert_eq!((h.index.line_count, h.index.entry_count, h.index.truncated, h.unindexed_count), (1, 460, false, 0));
    }

    /// A folder of thousands of unindexed memories: the report names the newest fifty and
    /// counts them all, rather than carrying every name.
    #[test]
    fn the_unindexed_list_names_the_newest_and_counts_all() {
        let t = TestDir::new();
        t.write("MEMORY.md", "- [m000](m000.md)\n");
        for i in 0..120 {
            let rel = format!("m{i:03}.md");
            t.write(&rel, "x");
            // Names and times in opposite orders: the newest sort last by name.
            t.set_mtime(&rel, 1_700_000_000 + i, 0);
        }
        let h = t.memdir().health();
        assert_eq!(h.unindexed_count, 119);
        assert_eq!(h.unindexed.len(), UNINDEXED_LISTED);
        assert_eq!(h.unindexed, (70..120).rev().map(|i| format!("m{i:03}.md")).collect::<Vec<_>>());
    }

    /// A `<!--` left open near the end of the index hides nothing from Claude Code (it strips
    /// a comment only once it closes), so lines are added after it; but a line whose
    /// description holds `-->` would close it and hide everything from the `<!--` on, so the
    /// fix refuses and writes nothing.
    #[test]
    fn adding_lines_refuses_to_close_a_comment_left_open() {
        let t = TestDir::new();
        let index = "- [A](a.md)\n\n<!-- ideas:\n- [B](b.md)\n\n";
        t.write("MEMORY.md", index);
        for rel in ["a.md", "b.md", "c.md"] {
            t.write(rel, "x");
        }
        t.write("d.md", "---\ndescription: build --> deploy\n---\n");
        let e = t.memdir().add_missing_index_lines().unwrap_err();
        assert_eq!(e.code(), "index-comment-open");
        assert_eq!(
            e.to_string(),
            "MEMORY.md line 3 opens an HTML comment (<!--) that is never closed, and the line Fix index would add for d.md holds -->, which closes it: Claude Code would then hide every line from the <!-- to there. Close the comment with --> (or remove the <!--), then fix the index again."
        );
        assert_eq!(t.read("MEMORY.md"), index);
        // Without that line the comment stays open, hides nothing, and the line is added where
        // Claude Code reads it.
        std::fs::remove_file(t.mem().join("d.md")).unwrap();
        let fixes = t.memdir().add_missing_index_lines().unwrap();
        assert_eq!(fixes[0].added, ["- [c](c.md)"]);
        assert_eq!(t.read("MEMORY.md"), "- [A](a.md)\n\n<!-- ideas:\n- [B](b.md)\n- [c](c.md)\n\n");
        let h = t.memdir().health();
        assert_eq!((h.unindexed_count, h.index.entry_count), (0, 3));
    }

    #[test]
    fn reorder_brings_entries_back_under_the_cap() {
        let t = TestDir::new();
        t.write("MEMORY.md", &entries(205));
        let m = t.memdir();
        let before = m.health().index.past_cap.iter().map(|r| r.rel_path.clone()).collect::<Vec<_>>();
        assert_eq!(before.len(), 5);
        let fix = m.reorder_index(Scope::Private, &before).unwrap();
        assert_eq!(fix.moved.len(), 5);
        let after: Vec<_> = fix.past_cap_after.iter().map(|r| r.rel_path.as_str()).collect();
        assert_eq!(after, ["m196.md", "m197.md", "m198.md", "m199.md", "m200.md"]);
        assert!(t.read("MEMORY.md").starts_with("- [m201](m201.md)"));
    }

    #[test]
    fn fixes_refuse_when_the_index_changes_underneath() {
        // The conflict check inside edit_index compares against what it read; simulate a
        // writer by handing write_replace a stale revision directly.
        let t = TestDir::new();
        t.write("MEMORY.md", "- [A](a.md)\n");
        let m = t.memdir();
        let stale = m.read_index(Scope::Private).unwrap().revision;
        t.write("MEMORY.md", "- [A](a.md)\n- [B](b.md)\n");
        assert_eq!(m.write_index(Scope::Private, "x", &stale).unwrap_err().code(), "changed-on-disk");
        assert_eq!(t.read("MEMORY.md"), "- [A](a.md)\n- [B](b.md)\n");
    }

    /// A private memory named "late", created after an index's last line.
    fn late_memory() -> super::super::NewMemory {
        super::super::NewMemory { name: "late".into(), description: "d".into(), memory_type: None, body: String::new(), file_name: None, scope: Scope::Private }
    }

    #[test]
    fn create_reports_an_entry_past_the_cap() {
        let t = TestDir::new();
        t.write("MEMORY.md", &entries(200));
        let c = t.memdir().create(&late_memory()).unwrap();
        assert_eq!(c.index_line_number, 201);
        assert!(c.index_line_past_cap);
    }

    /// From 2.1.284 a lone CR ends an index line but counts none towards the 200: a memory
    /// created in an index of 250 lone-CR lines gets line 251, which Claude Code loads.
    #[test]
    fn create_measures_a_lone_cr_index_as_claude_code_loads_it() {
        let t = TestDir::new();
        t.write("MEMORY.md", &entries(250).replace('\n', "\r"));
        let c = t.memdir().create(&late_memory()).unwrap();
        assert_eq!((c.index_line_number, c.index_line_past_cap), (251, false));
        assert!(t.read("MEMORY.md").ends_with("- [m250](m250.md) — hook 250\r- [late](late.md) — d\r"));
        assert!(t.memdir().health().index.past_cap.is_empty());
    }
}
