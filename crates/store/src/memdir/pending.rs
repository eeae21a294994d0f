//! A name or description edit changes two files: the topic file, then the index lines that
//! showed the old value. Each is replaced atomically, but a crash between the two leaves
//! `MEMORY.md` describing the other version, and nothing in either file says so: index titles
//! and hooks are free text that often differ from `name:` and `description:` on purpose.
//!
//! So before the topic file is written, the edit notes what the index showed: a small file
//! `.mneme-index-sync-<pid>-<n>.json` in the memory folder (Claude Code reads only `*.md`),
//! removed once the index follows. A note that outlives its edit means the index may be
//! stale; [`Memdir::health`](super::Memdir::health) compares it with the file and the index
//! (`stale_index_lines`), and [`Memdir::repair_stale_index_lines`] brings the lines in line
//! with the file and removes the note.
//!
//! A rename is three writes too: the file moves, then its index lines are pointed at the new
//! name. Its note (`renamedTo`) is written before the move; a note that outlives its rename,
//! with the file at the new name and a line still naming the old one, is reported as a stale
//! line (field `path`), and the fix points that line at the new name where it stands. Without
//! the note a health fix would see a dangling line and an unindexed file, drop the one and add
//! a line of its own for the other: the title and hook written by hand would be lost, and the
//! new line would go last, past the 200-line cap in a long index.

use super::error::io_err;
use super::health::{IndexFix, StaleIndexLine};
use super::index::{escape_title, unescape_title, IndexDoc};
use super::scan::{read_bytes, stem_of};
use super::{Memdir, MemdirError, Scope};
use serde::{Deserialize, Serialize};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

const NOTE_PREFIX: &str = ".mneme-index-sync-";
/// The most of a note that is read: a note holds a path, a name and a description.
const MAX_NOTE_BYTES: u64 = 1 << 20;
const NOTE_SUFFIX: &str = ".json";
/// [`StaleIndexLine::field`] of a line a stopped rename left naming the old file.
pub(crate) const RENAMED: &str = "path";

static SEQ: AtomicU64 = AtomicU64::new(0);

/// What the index showed for a memory before an edit of its name or description.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct PendingSync {
    pub rel_path: String,
    pub old_name: String,
    pub old_description: Option<String>,
    /// Set for a rename: the memory's new path (relative to the memory folder), which the
    /// lines naming `rel_path` must follow once the file has moved. Absent in edit notes and
    /// in those of Mneme builds before it; such a build reads a rename note as an edit that
    /// changed nothing (the name and description it holds are the file's own).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub renamed_to: Option<String>,
    /// Set for a merge (`merge.rs`): the orphan's index lines for the files about to move in
    /// under their own names, which the health fix adds for those that moved and have no line
    /// (a merge killed between its moves and its index edit). Such a note names `MEMORY.md`
    /// with its stem as the name, which a build that does not know this field reads as an
    /// edit that changed nothing.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub merged_lines: Vec<MergedLine>,
}

/// One index line a merge is about to write: the memory (relative to the memory folder) and
/// the line as the orphan's index had it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct MergedLine {
    pub rel_path: String,
    pub text: String,
}

/// An edit of one memory's name or description, as its index lines must follow it: a line
/// pointing at `rel` takes `new_name` as its title where it still shows `old_name`, and
/// `new_desc` as its hook where it still shows `old_desc`. A title or hook that shows anything
/// else was written by hand and is left alone.
#[derive(Debug, Clone, Copy)]
pub(crate) struct EntryChange<'a> {
    /// The memory, relative to the memory folder.
    pub rel: &'a str,
    /// What the index showed before the edit (the name defaults to the file stem).
    pub old_name: &'a str,
    pub old_desc: Option<&'a str>,
    /// What it should show now; `None` where the edit left that part as it was.
    pub new_name: Option<&'a str>,
    pub new_desc: Option<&'a str>,
}

/// `s` on one line: an index entry is one line (as `render_entry` writes it).
fn one_line(s: &str) -> String {
    super::index::one_line(s.trim()).into_owned()
}

/// Rewrites the lines of `doc` (the index of `scope`) that `change` says must follow it.
/// Returns how many lines changed.
pub(crate) fn sync_lines(doc: &mut IndexDoc, scope: Scope, root: &Path, change: &EntryChange) -> usize {
    let EntryChange { rel, old_name, old_desc, new_name, new_desc } = *change;
    let mut updated = 0;
    for (i, e) in doc.entries(scope, root) {
        if e.rel_path != rel {
            continue;
        }
        let mut line = doc.lines[i].text.clone();
        // A name or description may span lines in the frontmatter (`description: |`); an index
        // entry is one line, and a line break here would split it, or start a new entry.
        let (new_desc, new_name) = (new_desc.map(one_line), new_name.map(one_line));
        // Right to left, so the title's span is still valid after the hook changes.
        if let (Some(nd), Some(od), Some((s, t))) = (new_desc.as_deref(), old_desc, e.spans.hook) {
            if line[s..t] == *od || line[s..t] == one_line(od) {
                line.replace_range(s..t, nd);
            }
        }
        if let Some(nn) = new_name.as_deref() {
            if unescape_title(&e.title) == old_name {
                line.replace_range(e.spans.title.0..e.spans.title.1, &escape_title(nn));
            }
        }
        if line != doc.lines[i].text {
            doc.lines[i].text = line;
            updated += 1;
        }
    }
    updated
}

impl Memdir {
    /// Removes the temporary files killed writers left in the memory folder and its `team/`
    /// folder (any later write into a folder does the same for that folder).
    pub fn remove_stale_temps(&self) -> Vec<PathBuf> {
        let mut removed = crate::atomic::remove_stale_temps(&self.root);
        removed.extend(crate::atomic::remove_stale_temps(&self.root.join(super::TEAM_DIR)));
        removed
    }

    /// Notes, durably, what the index shows for `rel` before its name or description changes.
    pub(crate) fn note_pending_sync(&self, real_root: &Path, note: &PendingSync) -> Result<PathBuf, MemdirError> {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let path = real_root.join(format!("{NOTE_PREFIX}{}-{n}{NOTE_SUFFIX}", std::process::id()));
        let bytes = serde_json::to_vec(note).expect("a note of strings serialises");
        crate::atomic::write_atomic(&path, &bytes).map_err(io_err("write", &path))?;
        Ok(path)
    }

    /// Notes, durably, that `old_rel` is about to move to `new_rel`, before it moves (see the
    /// module's overview). The name and description are the file's own, so a build that does
    /// not know `renamedTo` finds nothing to follow in it.
    pub(crate) fn note_pending_rename(&self, real_root: &Path, old_rel: &str, new_rel: &str) -> Result<PathBuf, MemdirError> {
        let (old_name, old_description) = self.current_fields(old_rel).unwrap_or_else(|| (stem_of(old_rel).to_string(), None));
        let note = PendingSync { rel_path: old_rel.into(), old_name, old_description, renamed_to: Some(new_rel.into()), merged_lines: Vec::new() };
        self.note_pending_sync(real_root, &note)
    }

    /// Notes, durably, the index lines a merge is about to add, before its first move.
    pub(crate) fn note_pending_merge(&self, real_root: &Path, lines: Vec<MergedLine>) -> Result<PathBuf, MemdirError> {
        let index = super::INDEX_FILE;
        let note = PendingSync { rel_path: index.into(), old_name: stem_of(index).into(), old_description: None, renamed_to: None, merged_lines: lines };
        self.note_pending_sync(real_root, &note)
    }

    /// For a rename note: the new path, when the rename moved the file and stopped before its
    /// index lines followed: the old path is free, and the new one holds the memory and has no
    /// index line of its own.
    ///
    /// A note is believed only as far as the folder bears it out. Health folds the line that
    /// names the old file and the moved file into one finding (the rename), and the fix points
    /// the line at the new path; so a note that is garbage, outlived its rename or was put there
    /// by hand must neither hide a line pointing at a missing file or a memory with no line,
    /// nor have a line pointed outside the memory folder. Both paths must be memory names
    /// inside the folder (the new one a name [`Memdir::rename`] gives, since only a rename
    /// writes such a note), the new one a plain file (not a link that may lead out, nor a
    /// folder), and neither the same path. A new path that has a line of its own was indexed
    /// since (by Claude Code, or by hand): the old line is then a line to a missing file, as
    /// any other, and pointing it at the new path would list the memory twice.
    fn moved_to<'a>(&self, note: &'a PendingSync) -> Option<&'a str> {
        let to = note.renamed_to.as_deref()?;
        if to == note.rel_path || super::path::validate_new_topic_path(to).is_err() {
            return None;
        }
        let real_root = self.real_root().ok()?;
        let from_abs = self.topic_abs_any_name(&real_root, &note.rel_path).ok()?;
        let to_abs = self.topic_abs_any_name(&real_root, to).ok()?;
        let gone = fs::symlink_metadata(from_abs).is_err();
        let moved_here = fs::symlink_metadata(to_abs).is_ok_and(|m| m.file_type().is_file());
        (gone && moved_here && (!self.index_line_targets().contains(to) || self.only_copies_name(&note.rel_path, to))).then_some(to)
    }

    /// Whether every index line naming `to` is a copy of a line naming `from` with its target
    /// pointed at `to`: what a rename across scopes stopped between its two index writes leaves
    /// (it adds the line to the new scope's index before taking it out of the old one), not a
    /// line the memory was given since.
    fn only_copies_name(&self, from: &str, to: &str) -> bool {
        let (from_scope, to_scope) = (Scope::of(from), Scope::of(to));
        if from_scope == to_scope {
            return false;
        }
        let target = super::index::encode_target(&super::path::relative_to_dir(to, to_scope.dir()));
        let root = self.root.clone();
        let copies: Vec<String> = self
            .lines_naming(from)
            .into_iter()
            .filter(|(scope, _, _)| *scope == from_scope)
            .filter_map(|(_, _, text)| {
                let mut text = text.strip_prefix('\u{FEFF}').map(str::to_string).unwrap_or(text);
                let e = super::index::parse_entry(&text, from_scope.dir(), &root)?;
                text.replace_range(e.spans.target.0..e.spans.target.1, &target);
                Some(text)
            })
            .collect();
        let naming_to = self.lines_naming(to);
        !naming_to.is_empty() && naming_to.iter().all(|(scope, _, text)| *scope == to_scope && copies.iter().any(|c| c == text.strip_prefix('\u{FEFF}').unwrap_or(text)))
    }

    /// The index lines a rename that stopped after its move left naming the old path (see
    /// [`Memdir::moved_to`]), one per line, field [`RENAMED`].
    fn renamed_lines(&self, note: &PendingSync) -> Vec<StaleIndexLine> {
        let Some(to) = self.moved_to(note) else { return Vec::new() };
        self.lines_naming(&note.rel_path)
            .into_iter()
            .map(|(scope, number, text)| StaleIndexLine {
                index_rel_path: scope.index_rel_path().into(),
                line: number,
                // The memory is where it moved to: that is the file to open.
                rel_path: to.into(),
                text,
                field: RENAMED.into(),
                index_shows: note.rel_path.clone(),
                file_has: to.into(),
            })
            .collect()
    }

    /// [`Memdir::renamed_lines`] of every leftover note: the renames that stopped half-way.
    pub(crate) fn stopped_renames(&self) -> Vec<StaleIndexLine> {
        self.pending_syncs().into_iter().filter_map(|(_, note)| note).flat_map(|note| self.renamed_lines(&note)).collect()
    }

    /// Every note left in the memory folder, with its path; unreadable ones as `None`.
    pub(crate) fn pending_syncs(&self) -> Vec<(PathBuf, Option<PendingSync>)> {
        let Ok(entries) = fs::read_dir(&self.root) else { return Vec::new() };
        let mut notes: Vec<_> = entries
            .flatten()
            .filter(|e| e.file_name().to_str().is_some_and(|n| n.starts_with(NOTE_PREFIX) && n.ends_with(NOTE_SUFFIX)))
            .map(|e| {
                // Read as Mneme's own files are: a FIFO planted under a note's name must not
                // wait for a writer, nor a huge file be read whole; either is unreadable.
                let note = crate::open::read_own_file(&e.path(), MAX_NOTE_BYTES)
                    .ok()
                    .flatten()
                    .and_then(|b| serde_json::from_slice::<PendingSync>(&b).ok());
                (e.path(), note)
            })
            .collect();
        notes.sort_by(|a, b| a.0.cmp(&b.0));
        notes
    }

    /// The name and description the file has now (the name defaults to the file stem, as
    /// edits treat it); `None` when the file is gone or unreadable.
    fn current_fields(&self, rel: &str) -> Option<(String, Option<String>)> {
        let (bytes, _) = read_bytes(&self.abs(rel)).ok()??;
        let text = String::from_utf8(bytes).ok()?;
        let fm = mneme_core::frontmatter::parse(text.strip_prefix('\u{feff}').unwrap_or(&text)).frontmatter;
        let name = fm.as_ref().and_then(|f| f.name()).unwrap_or_else(|| stem_of(rel).to_string());
        Some((name, fm.as_ref().and_then(|f| f.description())))
    }

    /// For one note: the new name and description the index should follow to, each only when
    /// the file's differs from what the index showed.
    fn followed(&self, note: &PendingSync) -> Option<(Option<String>, Option<String>)> {
        if note.renamed_to.is_some() || !note.merged_lines.is_empty() {
            // A rename or a merge changes no field; a rename's lines follow the path
            // (`moved_to`), a merge's are added (`finish_merge`).
            return None;
        }
        let (name, desc) = self.current_fields(&note.rel_path)?;
        let new_name = (name != note.old_name).then_some(name);
        let new_desc = desc.filter(|d| Some(d) != note.old_description.as_ref());
        Some((new_name, new_desc))
    }

    /// Index lines still showing a title or hook their file no longer has, per leftover note.
    pub(crate) fn stale_index_lines(&self) -> Vec<StaleIndexLine> {
        let mut out = Vec::new();
        for (_, note) in self.pending_syncs() {
            let Some(note) = note else { continue };
            if note.renamed_to.is_some() {
                out.extend(self.renamed_lines(&note));
                continue;
            }
            let Some((new_name, new_desc)) = self.followed(&note) else { continue };
            let scope = Scope::of(&note.rel_path);
            let Ok(index) = self.read_index(scope) else { continue };
            for line in index.lines {
                let Some(e) = line.entry.filter(|e| e.rel_path == note.rel_path) else { continue };
                let mut stale = |field: &str, shows: String, has: &str| {
                    out.push(StaleIndexLine {
                        index_rel_path: scope.index_rel_path().into(),
                        line: line.number,
                        rel_path: note.rel_path.clone(),
                        text: line.text.clone(),
                        field: field.into(),
                        index_shows: shows,
                        file_has: has.into(),
                    })
                };
                if let Some(nn) = &new_name {
                    if unescape_title(&e.title) == note.old_name {
                        stale("name", note.old_name.clone(), nn);
                    }
                }
                if let (Some(nd), Some(od), Some((s, t))) = (&new_desc, &note.old_description, e.spans.hook) {
                    if &line.text[s..t] == od {
                        stale("description", od.clone(), nd);
                    }
                }
            }
        }
        out
    }

    /// Brings every index line a leftover note names in line with its file (as the edit
    /// would have), then removes the note; unreadable notes are removed too. Returns one fix
    /// per index that changed.
    pub fn repair_stale_index_lines(&self) -> Result<Vec<IndexFix>, MemdirError> {
        let mut fixes: Vec<IndexFix> = Vec::new();
        for (path, note) in self.pending_syncs() {
            let moved = note.as_ref().and_then(|n| Some((n.rel_path.clone(), self.moved_to(n)?.to_string())));
            if let Some((from, to)) = moved {
                fixes.extend(self.finish_rename(&from, &to)?);
            } else if let Some(merged) = note.as_ref().map(|n| &n.merged_lines).filter(|l| !l.is_empty()) {
                fixes.extend(self.finish_merge(merged)?);
            } else if let Some(note) = note {
                if let Some((new_name, new_desc)) = self.followed(&note) {
                    if new_name.is_some() || new_desc.is_some() {
                        let scope = Scope::of(&note.rel_path);
                        let root = self.root.clone();
                        let (changed, revision) = self.edit_index(scope, |doc| {
                            let before = doc.lines.iter().map(|l| l.text.clone()).collect::<Vec<_>>();
                            let change = EntryChange {
                                rel: &note.rel_path,
                                old_name: &note.old_name,
                                old_desc: note.old_description.as_deref(),
                                new_name: new_name.as_deref(),
                                new_desc: new_desc.as_deref(),
                            };
                            sync_lines(doc, scope, &root, &change);
                            let after = doc.lines.iter().map(|l| l.text.clone());
                            before.into_iter().zip(after).filter(|(b, a)| b != a).collect::<Vec<_>>()
                        })?;
                        if !changed.is_empty() {
                            let (removed, added) = changed.into_iter().unzip();
                            fixes.push(self.fix_result(scope, added, removed, Vec::new(), revision));
                        }
                    }
                }
            }
            fs::remove_file(&path).map_err(io_err("remove", &path))?;
        }
        Ok(fixes)
    }

    /// The index half of a merge that stopped after some of its moves: each noted line whose
    /// memory is here and has no line in its index is appended, as the orphan wrote it. One
    /// fix per index that changed.
    fn finish_merge(&self, lines: &[MergedLine]) -> Result<Vec<IndexFix>, MemdirError> {
        let mut fixes = Vec::new();
        for scope in [Scope::Private, Scope::Team] {
            let ours: Vec<&MergedLine> = lines
                .iter()
                .filter(|l| Scope::of(&l.rel_path) == scope && fs::symlink_metadata(self.abs(&l.rel_path)).is_ok_and(|m| m.is_file()))
                .collect();
            if ours.is_empty() {
                continue;
            }
            let root = self.root.clone();
            let (added, revision) = self.edit_index(scope, |doc| {
                let mut present: std::collections::HashSet<String> = doc.entries(scope, &root).into_iter().map(|(_, e)| e.rel_path).collect();
                let mut added = Vec::new();
                for l in &ours {
                    if present.insert(l.rel_path.clone()) {
                        doc.append(l.text.clone());
                        added.push(l.text.clone());
                    }
                }
                added
            })?;
            if !added.is_empty() {
                fixes.push(self.fix_result(scope, added, Vec::new(), Vec::new(), revision));
            }
        }
        Ok(fixes)
    }

    /// The index lines (scope, 1-based number, text) pointing at `rel`, in both indexes.
    fn lines_naming(&self, rel: &str) -> Vec<(Scope, usize, String)> {
        let mut out = Vec::new();
        for scope in [Scope::Private, Scope::Team] {
            let Ok(index) = self.read_index(scope) else { continue };
            out.extend(index.lines.into_iter().filter(|l| l.entry.as_ref().is_some_and(|e| e.rel_path == rel)).map(|l| (scope, l.number, l.text)));
        }
        out
    }

    /// The index half of a rename that stopped after its move: the lines naming `from` are
    /// pointed at `to` as [`Memdir::rename`] would have (in place within a scope, moved to the
    /// other scope's index across). One fix per index that changed.
    fn finish_rename(&self, from: &str, to: &str) -> Result<Vec<IndexFix>, MemdirError> {
        let before = self.lines_naming(from);
        if before.is_empty() {
            return Ok(Vec::new());
        }
        let (from_scope, to_scope) = (Scope::of(from), Scope::of(to));
        if from_scope != to_scope {
            self.move_index_lines(from_scope, to_scope, from, to)?;
        } else {
            for scope in [Scope::Private, Scope::Team] {
                self.retarget(scope, from, to)?;
            }
        }
        let after: Vec<String> = self.lines_naming(to).into_iter().map(|(_, _, text)| text).collect();
        let removed: Vec<String> = before.into_iter().map(|(_, _, text)| text).collect();
        let revision = self.read_index(to_scope).ok().map(|i| i.revision);
        Ok(vec![self.fix_result(to_scope, after, removed, Vec::new(), revision)])
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::FieldEdits;
    use super::*;

    /// The state a kill between the two writes leaves: the note and the new file, the old index.
    fn interrupted_edit(t: &TestDir) -> Memdir {
        t.write("MEMORY.md", "- [Tabs](tabs.md) — use tabs\n- [Own words](notes.md) — a hook of my own\n");
        t.write("tabs.md", "---\nname: Tabs\ndescription: use tabs\ntype: feedback\n---\nTabs.\n");
        t.write("notes.md", "---\nname: notes\ndescription: not the hook\n---\nx\n");
        let m = t.memdir();
        let real = m.real_root().unwrap();
        m.note_pending_sync(&real, &PendingSync { rel_path: "tabs.md".into(), old_name: "Tabs".into(), old_description: Some("use tabs".into()), renamed_to: None, merged_lines: Vec::new() }).unwrap();
        t.write("tabs.md", "---\nname: Indentation\ndescription: tabs, width 4\ntype: feedback\n---\nTabs.\n");
        m
    }

    #[test]
    fn health_names_lines_an_unfinished_edit_left_and_the_fix_brings_them_in_line() {
        let t = TestDir::new();
        let m = interrupted_edit(&t);
        let stale = m.health().stale_index_lines;
        let got: Vec<_> = stale.iter().map(|s| (s.line, s.field.as_str(), s.index_shows.as_str(), s.file_has.as_str())).collect();
        assert_eq!(got, [(1, "name", "Tabs", "Indentation"), (1, "description", "use tabs", "tabs, width 4")]);
        // The hand-written line of notes.md differs from its file on purpose: no note, no report.
        let fixes = m.repair_stale_index_lines().unwrap();
        assert_eq!(fixes[0].removed, ["- [Tabs](tabs.md) — use tabs"]);
        assert_eq!(fixes[0].added, ["- [Indentation](tabs.md) — tabs, width 4"]);
        assert_eq!(t.read("MEMORY.md"), "- [Indentation](tabs.md) — tabs, width 4\n- [Own words](notes.md) — a hook of my own\n");
        assert!(m.pending_syncs().is_empty(), "the note is gone");
        assert!(m.health().stale_index_lines.is_empty());
    }

    /// A whole-file save whose frontmatter spreads the description over lines (`|`) keeps its
    /// index entry one line: a line break would split it, or start an entry of its own.
    #[test]
    fn a_multi_line_description_keeps_its_index_entry_one_line() {
        let t = TestDir::new();
        t.write("MEMORY.md", "- [Tabs](tabs.md) — use tabs
");
        t.write("tabs.md", "---
name: Tabs
description: use tabs
---
Tabs.
");
        let m = t.memdir();
        let rev = m.read("tabs.md").unwrap().revision;
        let text = "---
name: Tabs
description: |
  tabs, width 4
  - [X](other.md) not an entry
---
Tabs.
";
        m.update("tabs.md", text, &rev).unwrap();
        let index = t.read("MEMORY.md");
        assert_eq!(index.lines().count(), 1, "{index:?}");
        assert!(index.starts_with("- [Tabs](tabs.md) — tabs, width 4 - [X](other.md) not an entry"), "{index:?}");
    }

    #[test]
    fn a_finished_edit_leaves_no_note_and_a_note_whose_file_never_changed_reports_nothing() {
        let t = TestDir::new();
        t.write("MEMORY.md", "- [Tabs](tabs.md) — use tabs\n");
        t.write("tabs.md", "---\nname: Tabs\ndescription: use tabs\n---\nTabs.\n");
        let m = t.memdir();
        let rev = m.read("tabs.md").unwrap().revision;
        let edits = FieldEdits { description: Some("tabs, width 4".into()), ..FieldEdits::default() };
        assert_eq!(m.update_fields("tabs.md", &edits, &rev).unwrap().index_lines_updated, 1);
        assert!(m.pending_syncs().is_empty());
        // Killed after the note, before the file: file and index still agree.
        let real = m.real_root().unwrap();
        m.note_pending_sync(&real, &PendingSync { rel_path: "tabs.md".into(), old_name: "Tabs".into(), old_description: Some("tabs, width 4".into()), renamed_to: None, merged_lines: Vec::new() }).unwrap();
        assert!(m.health().stale_index_lines.is_empty());
        assert!(m.repair_stale_index_lines().unwrap().is_empty());
        assert!(m.pending_syncs().is_empty(), "the fix removes the note all the same");
    }

    /// The state a rename killed after its move leaves: the note, the file at its new name,
    /// the index still naming the old one. Health names the line (not a dangling line to drop
    /// and a memory to index anew) and the fix points it at the new name where it stands.
    #[test]
    fn a_rename_stopped_after_its_move_is_finished_in_place_by_the_fix() {
        let t = TestDir::new();
        t.write("MEMORY.md", "- [Mine](tabs.md) — my own hook\n- [Other](other.md) — other\n");
        t.write("tabs.md", "---\nname: Tabs\ndescription: use tabs\n---\nTabs.\n");
        t.write("other.md", "---\nname: Other\ndescription: other\n---\nx\n");
        let m = t.memdir();
        let real = m.real_root().unwrap();
        m.note_pending_rename(&real, "tabs.md", "indent.md").unwrap();
        // Killed before the move: nothing to report, and the fix only removes the note.
        assert!(m.health().stale_index_lines.is_empty());
        assert!(m.repair_stale_index_lines().unwrap().is_empty());
        assert!(m.pending_syncs().is_empty());

        m.note_pending_rename(&real, "tabs.md", "indent.md").unwrap();
        fs::rename(t.mem().join("tabs.md"), t.mem().join("indent.md")).unwrap();
        let stale = m.health().stale_index_lines;
        let got: Vec<_> = stale.iter().map(|s| (s.line, s.field.as_str(), s.index_shows.as_str(), s.file_has.as_str())).collect();
        assert_eq!(got, [(1, "path", "tabs.md", "indent.md")]);
        let fixes = m.repair_stale_index_lines().unwrap();
        assert_eq!((fixes[0].removed.as_slice(), fixes[0].added.as_slice()), (&["- [Mine](tabs.md) — my own hook".to_string()][..], &["- [Mine](indent.md) — my own hook".to_string()][..]));
        assert_eq!(t.read("MEMORY.md"), "- [Mine](indent.md) — my own hook\n- [Other](other.md) — other\n");
        assert!(m.pending_syncs().is_empty());
        assert!(m.health().stale_index_lines.is_empty());
    }

    /// A rename that finishes leaves no note, and one into `team/` stopped after its move has
    /// its line moved to the team index by the fix, as the rename would have.
    #[test]
    fn a_finished_rename_leaves_no_note_and_one_across_scopes_is_finished_across() {
        let t = TestDir::new();
        t.write("MEMORY.md", "- [Mine](tabs.md) — my own hook\n");
        t.write("tabs.md", "---\nname: Tabs\ndescription: use tabs\n---\nTabs.\n");
        let m = t.memdir();
        m.rename("tabs.md", "indent.md").unwrap();
        assert!(m.pending_syncs().is_empty());
        assert_eq!(t.read("MEMORY.md"), "- [Mine](indent.md) — my own hook\n");

        let real = m.real_root().unwrap();
        m.note_pending_rename(&real, "indent.md", "team/indent.md").unwrap();
        fs::create_dir_all(t.mem().join("team")).unwrap();
        fs::rename(t.mem().join("indent.md"), t.mem().join("team/indent.md")).unwrap();
        assert_eq!(m.health().stale_index_lines.len(), 1);
        m.repair_stale_index_lines().unwrap();
        assert_eq!(t.read("MEMORY.md"), "");
        assert_eq!(t.read("team/MEMORY.md"), "- [Mine](indent.md) — my own hook\n");
        assert!(m.pending_syncs().is_empty());
    }

    /// A rename across scopes writes the new index before taking the line out of the old one,
    /// so a kill between the two leaves the user's line in both: the fix keeps exactly one, the
    /// one under the new name in the new scope's index, with the title and hook as written.
    #[test]
    fn a_rename_across_scopes_stopped_between_its_index_writes_keeps_one_line() {
        let t = TestDir::new();
        t.write("MEMORY.md", "- [Mine](indent.md) — my own hook\n");
        t.write("team/MEMORY.md", "- [Mine](indent.md) — my own hook\n");
        t.write("team/indent.md", "---\nname: Tabs\ndescription: use tabs\n---\nTabs.\n");
        let m = t.memdir();
        m.note_pending_rename(&m.real_root().unwrap(), "indent.md", "team/indent.md").unwrap();
        let h = m.health();
        let missing: Vec<_> = [Some(&h.index), h.team_index.as_ref()].into_iter().flatten().flat_map(|i| &i.missing_targets).collect();
        assert!(h.unindexed.is_empty() && missing.is_empty(), "the stopped rename is one finding: {h:?}");
        m.repair_stale_index_lines().unwrap();
        assert_eq!(t.read("MEMORY.md"), "");
        assert_eq!(t.read("team/MEMORY.md"), "- [Mine](indent.md) — my own hook\n");
        assert!(m.pending_syncs().is_empty());
    }

    /// The folder a rename killed after its move leaves, as `e2e/stopped-rename.mjs` builds it:
    /// `a.md` moved to `alpha-first.md`, the note, and line 2 of the index still naming `a.md`
    /// with a title and hook written by hand. `note` is the note's text.
    fn stopped_rename(t: &TestDir, note: &str) {
        t.write("MEMORY.md", STOPPED_INDEX);
        t.write("z1.md", "---\nname: Zed one\ndescription: one\n---\nz1\n");
        t.write("z2.md", "---\nname: Zed two\ndescription: two\n---\nz2\n");
        t.write("alpha-first.md", "---\nname: Alpha\ndescription: the first letter\n---\nAlpha's body.\n");
        t.write(".mneme-index-sync-4242-0.json", note);
    }

    const STOPPED_INDEX: &str = "- [First](z1.md) — one\n- [Alpha, by hand](a.md) — a hook of my own\n- [Last](z2.md) — two\n";
    const RENAME_NOTE: &str = r#"{"relPath":"a.md","oldName":"Alpha","oldDescription":"the first letter","renamedTo":"alpha-first.md"}"#;

    /// A stopped rename is one finding: the line it left naming the old file (old path, new
    /// path, the line the fix points at the new one), not also a line pointing at a missing
    /// file and a memory with no line; the memory counts as indexed, by its line. Each fix on
    /// its own leaves the line for the rename's fix: no second line for the moved memory, and
    /// the line written by hand is not dropped as dangling.
    #[test]
    fn a_stopped_rename_is_reported_once_as_the_rename() {
        let t = TestDir::new();
        stopped_rename(&t, RENAME_NOTE);
        let m = t.memdir();
        let h = m.health();
        let got: Vec<_> = h.stale_index_lines.iter().map(|s| (s.index_rel_path.as_str(), s.line, s.field.as_str(), s.index_shows.as_str(), s.rel_path.as_str(), s.text.as_str())).collect();
        assert_eq!(got, [("MEMORY.md", 2, "path", "a.md", "alpha-first.md", "- [Alpha, by hand](a.md) — a hook of my own")]);
        assert_eq!(h.index.missing_targets, [], "the line the rename left is the rename, not a line to a missing file");
        assert_eq!((h.unindexed.as_slice(), h.unindexed_count), (&[][..], 0), "the moved memory has its line: the one the rename left");
        assert!(m.indexed_targets().contains("alpha-first.md"));

        assert!(m.add_missing_index_lines().unwrap().is_empty(), "no second line for the moved memory");
        assert!(m.drop_dangling_index_lines().unwrap().is_empty(), "the rename's line is not dropped as dangling");
        assert_eq!(t.read("MEMORY.md"), STOPPED_INDEX);
        m.repair_stale_index_lines().unwrap();
        assert_eq!(t.read("MEMORY.md"), STOPPED_INDEX.replace("(a.md)", "(alpha-first.md)"));
        let h = m.health();
        assert!(h.stale_index_lines.is_empty() && h.index.missing_targets.is_empty() && h.unindexed.is_empty(), "{h:#?}");
    }

    /// A note the folder does not bear out hides nothing: the line to the missing file and the
    /// memory with no line are reported as such, and the fix never points the line outside the
    /// memory folder, at a link, at a folder, or at a memory that has a line of its own.
    #[test]
    fn a_stale_or_planted_rename_note_hides_no_missing_file_or_unindexed_memory() {
        let outside = |t: &TestDir| t.path().join("outside.md").to_string_lossy().into_owned();
        type Setup = fn(&TestDir);
        #[allow(unused_mut)]
        let mut cases: Vec<(&str, String, Setup)> = vec![
            ("garbage", "{not json".into(), |_| {}),
            ("out of the folder", RENAME_NOTE.replace("alpha-first.md", "../outside.md"), |_| {}),
            ("an absolute path", String::new(), |_| {}),
            ("a folder", RENAME_NOTE.replace("alpha-first.md", "dir.md"), |t| t.write("dir.md/inner.md", "---\nname: Inner\n---\nx\n")),
            ("both files there", RENAME_NOTE.into(), |t| t.write("a.md", "---\nname: Alpha again\n---\nx\n")),
            ("a memory indexed since", RENAME_NOTE.into(), |t| t.write("MEMORY.md", &format!("{STOPPED_INDEX}- [Alpha](alpha-first.md) — the first letter\n"))),
            ("the same path twice", RENAME_NOTE.replace("alpha-first.md", "a.md"), |_| {}),
        ];
        #[cfg(unix)]
        cases.extend([
            ("a link out of the folder", RENAME_NOTE.replace("alpha-first.md", "out.md"), (|t| {
                std::os::unix::fs::symlink(t.path().join("outside.md"), t.mem().join("out.md")).unwrap();
            }) as Setup),
            // The old path through a folder that is a link out of the memory folder: a line
            // naming it is a line to a file that is not there, whatever lies beyond the link.
            ("an old path through a link out of the folder", RENAME_NOTE.replace(r#""relPath":"a.md""#, r#""relPath":"linked/a.md""#), |t| {
                fs::create_dir_all(t.path().join("elsewhere")).unwrap();
                std::os::unix::fs::symlink(t.path().join("elsewhere"), t.mem().join("linked")).unwrap();
                t.write("MEMORY.md", &STOPPED_INDEX.replace("(a.md)", "(linked/a.md)"));
            }),
        ]);
        for (case, note, setup) in cases {
            let t = TestDir::new();
            t.write_outside("outside.md", "---\nname: Outside\n---\nnot a memory of this folder\n");
            let note = if case == "an absolute path" { RENAME_NOTE.replace("alpha-first.md", &outside(&t)) } else { note };
            stopped_rename(&t, &note);
            setup(&t);
            let m = t.memdir();
            let h = m.health();
            assert_eq!(h.stale_index_lines, [], "{case}: no rename is reported");
            let missing: Vec<_> = h.index.missing_targets.iter().map(|e| e.line).collect();
            assert_eq!(missing, if case == "both files there" { vec![] } else { vec![2] }, "{case}: line 2 names a file that is not there");
            let indexed_since = case == "a memory indexed since";
            assert_eq!(h.unindexed.contains(&"alpha-first.md".to_string()), !indexed_since, "{case}: {:?}", h.unindexed);
            assert_eq!(m.indexed_targets().contains("alpha-first.md"), indexed_since, "{case}");
            let before = t.read("MEMORY.md");
            m.repair_stale_index_lines().unwrap();
            assert_eq!(t.read("MEMORY.md"), before, "{case}: the note's fix leaves the index alone");
            assert!(m.pending_syncs().is_empty(), "{case}: the note goes");
        }
    }

    #[test]
    fn an_index_the_edit_could_not_update_keeps_the_note_for_health() {
        let t = TestDir::new();
        t.write("MEMORY.md", "- [Tabs](tabs.md) — use tabs\n");
        t.write("tabs.md", "---\nname: Tabs\ndescription: use tabs\n---\nTabs.\n");
        let m = t.memdir();
        let rev = m.read("tabs.md").unwrap().revision;
        // An index that is not UTF-8 cannot be edited; the file is saved all the same.
        t.write_bytes("MEMORY.md", b"- [Tabs](tabs.md) \xe2\x80\x94 use tabs\n\xff\n");
        let edits = FieldEdits { description: Some("tabs, width 4".into()), ..FieldEdits::default() };
        assert!(m.update_fields("tabs.md", &edits, &rev).unwrap().index_error.is_some());
        assert_eq!(m.health().stale_index_lines.len(), 1);
    }
}
