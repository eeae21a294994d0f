//! Merging another memory folder into this one (an orphan left by a deleted worktree or a
//! renamed folder): every topic file moves across under the same relative path, the source's
//! index lines for them are appended to this folder's index, and nothing is ever overwritten.
//!
//! - A name already taken by a file with the same bytes is skipped (it is already here); one
//!   taken by different content keeps both: the incoming file becomes `<stem>-merged.md`,
//!   `<stem>-merged-2.md`, … and its index line points at the new name.
//! - Files move with a hard link then an unlink, which publishes the whole file at once and
//!   keeps its modification time (Claude Code dates memories by it). Across file systems the
//!   bytes are written atomically (temporary file, fsync, link) and the time copied over.
//! - Both indexes of this folder are checked for readability before anything moves, so a
//!   merge does not stop half-way on an index it cannot edit.
//! - Symbolic links and unreadable files are not moved; they are reported as skipped and stay
//!   in the source folder.
//! - [`trash_folder`] then puts the emptied source folder in Mneme's trash as a whole.

use super::index::{encode_target, IndexEntry, IndexFile};
use super::pending::MergedLine;
use super::path::{relative_to_dir, validate_topic_path};
use super::scan::{read_bytes, read_bytes_no_follow, stem_of};
use super::write::fsync_dir;
use super::{Memdir, MemdirError, Scope, INDEX_FILE};
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// Deepest folder level walked in the source; guards against pathological trees.
const MAX_DEPTH: usize = 32;
/// Suffixed names tried before giving up on a clash.
const MAX_SUFFIX: usize = 1000;

/// One topic file that moved (under its own name or a `-merged` one).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct MergedFile {
    /// Where it was, relative to the source memory folder.
    pub from_rel_path: String,
    /// Where it is now, relative to this memory folder.
    pub to_rel_path: String,
}

/// A source file that did not move, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct SkippedFile {
    /// Relative to the source memory folder.
    pub rel_path: String,
    /// A sentence.
    pub reason: String,
}

/// An index line appended to this folder's index.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct AddedIndexLine {
    /// `MEMORY.md` or `team/MEMORY.md`.
    pub index_rel_path: String,
    /// The line as written (its target rewritten when the file was renamed).
    pub text: String,
}

/// What [`Memdir::merge_from`] did (or, as a plan, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct MergeOutcome {
    /// Files that moved under their own name.
    pub moved: Vec<MergedFile>,
    /// Files that moved under a `-merged` name because a different file had theirs.
    pub renamed: Vec<MergedFile>,
    /// Files left in the source folder.
    pub skipped: Vec<SkippedFile>,
    /// Index lines appended here.
    pub index_lines_added: Vec<AddedIndexLine>,
    /// Set when files moved but an index here could not be edited afterwards: which index,
    /// why, and the lines that belong in it (the source's index still holds them).
    pub index_problem: Option<String>,
}

/// What to do with one source file.
enum Step {
    Move { from: String, to: String, renamed: bool },
    /// Already here with the same bytes, at `to`.
    Same { from: String, to: String },
    Skip { from: String, reason: String },
}

/// Where a test's hook runs, with the source file's path: the moments someone else could
/// swap the file for a link or a FIFO.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Moment {
    /// After the file was found plain, before it is read.
    BeforeRead,
    /// After it was read, before it is linked here.
    BeforeMove,
}

impl Memdir {
    /// Moves every topic file of `source` into this folder and appends the source's index
    /// lines for them; see the [module documentation](self). With `apply = false` nothing is
    /// written and the outcome is the plan. The source folder itself is left in place (with
    /// its index and whatever was skipped) for the caller to put in a trash.
    pub fn merge_from(&self, source: &Memdir, apply: bool) -> Result<MergeOutcome, MemdirError> {
        self.merge_from_with(source, apply, || {}, &mut |_, _| {})
    }

    /// [`Memdir::merge_from`] with a hook between the moves and the index edits, where tests
    /// change the index, and one at each [`Moment`] of a source file, where tests swap it.
    fn merge_from_with(
        &self,
        source: &Memdir,
        apply: bool,
        after_moves: impl FnOnce(),
        at: &mut dyn FnMut(Moment, &Path),
    ) -> Result<MergeOutcome, MemdirError> {
        let src_root = source.real_root()?;
        if let Ok(own) = fs::canonicalize(&self.root) {
            if own.starts_with(&src_root) || src_root.starts_with(&own) {
                return Err(MemdirError::InvalidInput {
                    field: "source memory folder",
                    reason: format!("{} and {} are the same folder or one holds the other", src_root.display(), own.display()),
                });
            }
        }
        let real_root = if apply {
            // Refuse up front when an index here cannot be edited, before any file moves.
            for scope in [Scope::Private, Scope::Team] {
                self.edit_index(scope, |_| ())?;
            }
            self.ensure_root()?
        } else {
            fs::canonicalize(&self.root).unwrap_or_else(|_| self.root.clone())
        };

        // The source's index lines are read before anything moves: a source index that cannot
        // be read stops the merge while every file is still where it was.
        let source_indexes = [Scope::Private, Scope::Team].map(|scope| source.read_index(scope).map(|idx| (scope, idx)));
        let source_indexes = source_indexes.into_iter().collect::<Result<Vec<_>, _>>()?;

        let mut rels = Vec::new();
        let mut walk_skips = Vec::new();
        walk(&src_root, "", 0, &mut rels, &mut walk_skips);
        rels.sort();

        // The moves and the index edit are separate writes. The orphan's lines for the files
        // that will move in under their own names are noted first (`pending.rs`): a merge
        // killed in between leaves those files without lines, and the health fix then adds
        // them as the orphan wrote them, not lines of its own. (A file that lands under a
        // `-merged` name is left to the fix's own line: which name it gets is decided as it
        // moves.)
        let note = if apply {
            let moving: HashSet<&str> = rels.iter().map(String::as_str).collect();
            let lines: Vec<MergedLine> = source_indexes
                .iter()
                .flat_map(|(scope, idx)| idx.lines.iter().map(move |l| (*scope, l)))
                .filter_map(|(scope, l)| {
                    let e = l.entry.as_ref()?;
                    let free = fs::symlink_metadata(join_rel(&real_root, &e.rel_path)).is_err();
                    (moving.contains(e.rel_path.as_str()) && free)
                        .then(|| MergedLine { rel_path: e.rel_path.clone(), text: retarget(&l.text, e, &e.rel_path, scope) })
                })
                .collect();
            if lines.is_empty() {
                None
            } else {
                Some(self.note_pending_merge(&real_root, lines)?)
            }
        } else {
            None
        };

        let mut out = MergeOutcome { skipped: walk_skips, ..MergeOutcome::default() };
        // Where each source file ends up here, for the index lines.
        let mut landed: BTreeMap<String, String> = BTreeMap::new();
        let mut taken: HashSet<String> = HashSet::new();
        for rel in rels {
            let step = self.plan_one(&real_root, &src_root, &rel, &taken, at);
            let step = match (step, apply) {
                (Step::Move { from, to, renamed }, true) => match self.move_in(&real_root, &src_root, &from, &to, at) {
                    Ok(()) => Step::Move { from, to, renamed },
                    // Something appeared at that name meanwhile: plan again around it.
                    Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                        match self.plan_one(&real_root, &src_root, &from, &taken, at) {
                            Step::Move { from, to, renamed } => match self.move_in(&real_root, &src_root, &from, &to, at) {
                                Ok(()) => Step::Move { from, to, renamed },
                                Err(e) => Step::Skip { reason: format!("it could not be moved: {e}"), from },
                            },
                            other => other,
                        }
                    }
                    Err(e) => Step::Skip { reason: format!("it could not be moved: {e}"), from },
                },
                (step, _) => step,
            };
            match step {
                Step::Move { from, to, renamed } => {
                    taken.insert(to.clone());
                    landed.insert(from.clone(), to.clone());
                    let f = MergedFile { from_rel_path: from, to_rel_path: to };
                    if renamed {
                        out.renamed.push(f);
                    } else {
                        out.moved.push(f);
                    }
                }
                Step::Same { from, to } => {
                    out.skipped.push(SkippedFile {
                        reason: format!("the project already has {to} with exactly the same content"),
                        rel_path: from.clone(),
                    });
                    landed.insert(from, to);
                }
                Step::Skip { from, reason } => out.skipped.push(SkippedFile { rel_path: from, reason }),
            }
        }

        after_moves();
        for (scope, source_index) in source_indexes {
            let lines = source_lines(source_index, scope, &landed);
            if lines.is_empty() {
                continue;
            }
            let root = self.root.clone();
            let pick = |present: &mut HashSet<String>| {
                let mut added = Vec::new();
                for (new_rel, text) in &lines {
                    if present.insert(new_rel.clone()) {
                        added.push(text.clone());
                    }
                }
                added
            };
            let added = if apply {
                let edited = self.edit_index(scope, |doc| {
                    let mut present: HashSet<String> = doc.entries(scope, &root).into_iter().map(|(_, e)| e.rel_path).collect();
                    let added = pick(&mut present);
                    for t in &added {
                        doc.append(t.clone());
                    }
                    added
                });
                match edited {
                    Ok((added, _)) => added,
                    // The files have moved, so failing here would report nothing of what was
                    // done: the outcome says which lines are missing and the merge goes on.
                    Err(e) => {
                        let missing: Vec<&str> = lines.iter().map(|(_, text)| text.as_str()).collect();
                        let problem = format!(
                            "{} could not be edited ({e}), so these lines for the moved files are not in it yet: {}",
                            scope.index_rel_path(),
                            missing.join(" | ")
                        );
                        out.index_problem = Some(match out.index_problem.take() {
                            Some(earlier) => format!("{earlier}; {problem}"),
                            None => problem,
                        });
                        continue;
                    }
                }
            } else {
                let idx = self.read_index(scope)?;
                let mut present: HashSet<String> =
                    idx.lines.into_iter().filter_map(|l| l.entry.map(|e| e.rel_path)).collect();
                pick(&mut present)
            };
            out.index_lines_added.extend(
                added.into_iter().map(|text| AddedIndexLine { index_rel_path: scope.index_rel_path().to_string(), text }),
            );
        }
        if apply {
            fsync_dir(&real_root);
        }
        // Every line is written: the note has done its work. Lines an index refused stay
        // noted, for the health fix to add once it can.
        if let Some(note) = note.filter(|_| out.index_problem.is_none()) {
            let _ = fs::remove_file(note);
        }
        Ok(out)
    }

    /// Decides where one source file goes: its own name, the first free `-merged` name, or
    /// nowhere because identical content is already here.
    fn plan_one(&self, real_root: &Path, src_root: &Path, rel: &str, taken: &HashSet<String>, at: &mut dyn FnMut(Moment, &Path)) -> Step {
        let src = join_rel(src_root, rel);
        // Read through the one open that checks what it opened, and does not follow a link: a
        // FIFO or a link swapped in since the type check is refused (not waited on, not read
        // through to a file outside the folder), and a huge file is not read whole.
        let mut read = || {
            at(Moment::BeforeRead, &src);
            read_bytes_no_follow(&src)
        };
        let bytes = match fs::symlink_metadata(&src) {
            Ok(m) if m.file_type().is_file() => match read() {
                Ok(Some((b, _))) => b,
                Ok(None) => return Step::Skip { from: rel.into(), reason: "it could not be read: it is gone".into() },
                Err(MemdirError::NotARegularFile { detail, .. }) => {
                    return Step::Skip { from: rel.into(), reason: format!("{detail}, not a plain file") }
                }
                Err(MemdirError::Io { source, .. }) => {
                    return Step::Skip { from: rel.into(), reason: format!("it could not be read: {source}") }
                }
                Err(e) => return Step::Skip { from: rel.into(), reason: format!("it could not be read: {e}") },
            },
            Ok(m) if m.file_type().is_symlink() => {
                return Step::Skip {
                    from: rel.into(),
                    reason: "it is a symbolic link; Mneme moves only plain files (the link goes to the trash with the folder)"
                        .into(),
                }
            }
            Ok(m) => {
                return Step::Skip { from: rel.into(), reason: format!("it is {}, not a plain file", crate::open::kind_of(&m)) }
            }
            Err(e) => return Step::Skip { from: rel.into(), reason: format!("it could not be read: {e}") },
        };
        for n in 0..=MAX_SUFFIX {
            let candidate = merged_name(rel, n);
            if validate_topic_path(&candidate).is_err() {
                return Step::Skip { from: rel.into(), reason: format!("{candidate} is not a usable memory path here") };
            }
            if taken.contains(&candidate) {
                continue;
            }
            let abs = join_rel(real_root, &candidate);
            if self.check_contained(real_root, &candidate, &abs).is_err() {
                return Step::Skip { from: rel.into(), reason: format!("{candidate} would lead outside the project's memory folder") };
            }
            match fs::symlink_metadata(&abs) {
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return Step::Move { from: rel.into(), to: candidate, renamed: n > 0 };
                }
                Ok(m)
                    if m.file_type().is_file()
                        && m.len() == bytes.len() as u64
                        && read_bytes(&abs).is_ok_and(|r| r.is_some_and(|(b, _)| b == bytes)) =>
                {
                    return Step::Same { from: rel.into(), to: candidate };
                }
                _ => continue,
            }
        }
        Step::Skip { from: rel.into(), reason: format!("every name up to {} is taken", merged_name(rel, MAX_SUFFIX)) }
    }

    /// Moves `src_root/from` to `<this folder>/to` without replacing anything.
    fn move_in(&self, real_root: &Path, src_root: &Path, from: &str, to: &str, at: &mut dyn FnMut(Moment, &Path)) -> io::Result<()> {
        let src = join_rel(src_root, from);
        let dst = join_rel(real_root, to);
        let dir = dst.parent().map(Path::to_path_buf).unwrap_or_else(|| real_root.to_path_buf());
        fs::create_dir_all(&dir)?;
        at(Moment::BeforeMove, &src);
        match fs::hard_link(&src, &dst) {
            // A hard link takes a symbolic link as it is: one swapped in since the plan's read
            // would land here pointing anywhere. What landed is checked, and taken back if it
            // is not a plain file.
            Ok(()) => match fs::symlink_metadata(&dst) {
                Ok(m) if m.file_type().is_file() => {}
                Ok(m) => {
                    let _ = fs::remove_file(&dst);
                    return Err(io::Error::new(
                        io::ErrorKind::InvalidInput,
                        format!("it was replaced by {} while it was being merged; it stays where it is", crate::open::kind_of(&m)),
                    ));
                }
                Err(e) => return Err(e),
            },
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => return Err(e),
            // Another file system, or one without hard links: write the bytes atomically.
            Err(_) => {
                // The same checked read as the plan's: no wait on a FIFO, no link followed, no
                // unbounded read.
                let (bytes, meta) = match read_bytes_no_follow(&src) {
                    Ok(Some(read)) => read,
                    Ok(None) => return Err(io::Error::from(io::ErrorKind::NotFound)),
                    Err(MemdirError::Io { source, .. }) => return Err(source),
                    Err(other) => return Err(io::Error::new(io::ErrorKind::InvalidInput, other.to_string())),
                };
                self.write_new(&dst, to, &bytes).map_err(|e| match e {
                    MemdirError::AlreadyExists { .. } => io::Error::from(io::ErrorKind::AlreadyExists),
                    other => io::Error::other(other.to_string()),
                })?;
                if let Ok(modified) = meta.modified() {
                    if let Ok(f) = fs::File::options().write(true).open(&dst) {
                        let _ = f.set_modified(modified);
                    }
                }
            }
        }
        fsync_dir(&dir);
        if let Err(e) = fs::remove_file(&src) {
            // Keep exactly one copy: the source stays, the new link goes.
            let _ = fs::remove_file(&dst);
            return Err(e);
        }
        if let Some(p) = src.parent() {
            fsync_dir(p);
        }
        Ok(())
    }
}

/// Puts a merged-from memory folder `dir` (`<project folder>/memory`) in Mneme's trash as a
/// whole: moves it into a fresh `<trash_root>/<now_ms>-<project folder name>[-n]/memory` and
/// returns that entry folder. Across file systems the tree is copied (links as links, each file
/// fsynced) before the original is removed. Nothing is deleted outright.
pub fn trash_folder(dir: &Path, trash_root: &Path, now_ms: u128) -> io::Result<PathBuf> {
    fs::create_dir_all(trash_root)?;
    let project = dir.parent().and_then(Path::file_name).map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let project: String = project.chars().take(120).collect();
    let mut entry = None;
    for n in 0u32..10_000 {
        let id = if n == 0 { format!("{now_ms}-{project}") } else { format!("{now_ms}-{project}-{n}") };
        let candidate = trash_root.join(id);
        match fs::create_dir(&candidate) {
            Ok(()) => {
                entry = Some(candidate);
                break;
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    let entry = entry.ok_or_else(|| io::Error::from(io::ErrorKind::AlreadyExists))?;
    let dest = entry.join(crate::paths::AUTO_MEM_DIRNAME);
    let moved = match fs::rename(dir, &dest) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == io::ErrorKind::CrossesDevices => copy_tree(dir, &dest).and_then(|()| fs::remove_dir_all(dir)),
        Err(e) => Err(e),
    };
    if let Err(e) = moved {
        let _ = fs::remove_dir_all(&entry);
        return Err(e);
    }
    for d in [Some(entry.as_path()), dir.parent()].into_iter().flatten() {
        fsync_dir(d);
    }
    Ok(entry)
}

/// Copies a folder tree (files, folders, links as links) for a move across file systems.
fn copy_tree(from: &Path, to: &Path) -> io::Result<()> {
    fs::create_dir(to)?;
    for e in fs::read_dir(from)? {
        let e = e?;
        let (src, dst) = (e.path(), to.join(e.file_name()));
        let ft = e.file_type()?;
        if ft.is_dir() {
            copy_tree(&src, &dst)?;
        } else if ft.is_symlink() {
            #[cfg(unix)]
            std::os::unix::fs::symlink(fs::read_link(&src)?, &dst)?;
        } else {
            // Whole or not at all: a crash mid-copy leaves no torn file in the trash.
            crate::atomic::copy_new(&src, &dst)?;
        }
    }
    Ok(())
}

/// The source index's lines for files that landed here, target rewritten to the new path,
/// in file order and without repeats: `(new rel path, line)`.
fn source_lines(idx: IndexFile, scope: Scope, landed: &BTreeMap<String, String>) -> Vec<(String, String)> {
    let mut seen = HashSet::new();
    let mut out = Vec::new();
    for line in idx.lines {
        let Some(entry) = line.entry else { continue };
        let Some(new_rel) = landed.get(&entry.rel_path) else { continue };
        if !seen.insert(new_rel.clone()) {
            continue;
        }
        out.push((new_rel.clone(), retarget(&line.text, &entry, new_rel, scope)));
    }
    out
}

/// `text` with its link target pointing at `new_rel` when the file was renamed or the
/// target was absolute (it named the old folder); otherwise unchanged.
fn retarget(text: &str, entry: &IndexEntry, new_rel: &str, scope: Scope) -> String {
    let absolute = entry.target.starts_with('/') || entry.target.starts_with('\\');
    if entry.rel_path == new_rel && !absolute {
        return text.to_string();
    }
    let (start, end) = entry.spans.target;
    let encoded = encode_target(&relative_to_dir(new_rel, scope.dir()));
    format!("{}{}{}", &text[..start], encoded, &text[end..])
}

/// `notes/a.md` → `notes/a.md`, `notes/a-merged.md`, `notes/a-merged-2.md`, …
fn merged_name(rel: &str, n: usize) -> String {
    if n == 0 {
        return rel.to_string();
    }
    let base = stem_of(rel);
    let name = if n == 1 { format!("{base}-merged.md") } else { format!("{base}-merged-{n}.md") };
    match rel.rsplit_once('/') {
        Some((dir, _)) => format!("{dir}/{name}"),
        None => name,
    }
}

fn join_rel(root: &Path, rel: &str) -> PathBuf {
    let mut p = root.to_path_buf();
    for part in rel.split('/') {
        p.push(part);
    }
    p
}

/// Every `*.md` except `MEMORY.md` under `dir`, as `/`-separated paths; folders that are
/// symbolic links are not followed (reported instead).
fn walk(dir: &Path, prefix: &str, depth: usize, out: &mut Vec<String>, skipped: &mut Vec<SkippedFile>) {
    let Ok(entries) = fs::read_dir(dir) else {
        if !prefix.is_empty() {
            skipped.push(SkippedFile { rel_path: prefix.to_string(), reason: "the folder could not be read".into() });
        }
        return;
    };
    let mut entries: Vec<_> = entries.filter_map(Result::ok).collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let Ok(name) = e.file_name().into_string() else { continue };
        let rel = if prefix.is_empty() { name.clone() } else { format!("{prefix}/{name}") };
        let Ok(ft) = e.file_type() else { continue };
        if ft.is_dir() {
            if depth < MAX_DEPTH {
                walk(&e.path(), &rel, depth + 1, out, skipped);
            }
        } else if name.ends_with(".md") && name != INDEX_FILE {
            out.push(rel);
        } else if ft.is_symlink() && fs::metadata(e.path()).is_ok_and(|m| m.is_dir()) {
            skipped.push(SkippedFile {
                rel_path: rel,
                reason: "it is a symbolic link to a folder; its files were not moved".into(),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::{clock, TestDir};
    use super::*;

    /// The index changed into something it cannot edit after the files moved (Claude Code
    /// wrote it meanwhile): the merge still says what moved, and which lines the index lacks,
    /// instead of failing as if nothing had happened.
    #[test]
    fn an_index_that_cannot_be_edited_after_the_moves_is_reported_with_its_missing_lines() {
        let target = TestDir::new();
        target.write("MEMORY.md", "- [mine](mine.md) — mine\n");
        target.write("mine.md", "mine\n");
        let source = TestDir::new();
        source.write("b.md", "---\nname: b\ndescription: b fact\ntype: user\n---\nB.\n");
        source.write("MEMORY.md", "- [b](b.md) — b fact\n");
        let out = target
            .memdir()
            .merge_from_with(
                &Memdir::new(source.mem(), source.path().join("trash"), clock()),
                true,
                || {
                    target.write_bytes("MEMORY.md", b"- [mine](mine.md) \xff not UTF-8 now\n");
                },
                &mut |_, _| {},
            )
            .unwrap();
        assert_eq!(out.moved, [MergedFile { from_rel_path: "b.md".into(), to_rel_path: "b.md".into() }]);
        assert!(out.index_lines_added.is_empty());
        let problem = out.index_problem.expect("the missing lines are reported");
        assert!(problem.starts_with("MEMORY.md could not be edited") && problem.contains("- [b](b.md) — b fact"), "{problem}");
        assert!(target.exists("b.md") && !source.exists("b.md"));
    }

    /// A merge killed between its moves and its index edit (here a panic at that point): the
    /// files have moved without lines, and the health fix adds the orphan's own lines for them
    /// (a title and hook written by hand), not lines made from the files; a finished merge
    /// leaves no note.
    #[test]
    fn a_merge_stopped_after_its_moves_leaves_its_lines_to_the_health_fix() {
        let target = TestDir::new();
        target.write("MEMORY.md", "- [mine](mine.md) — mine\n");
        target.write("mine.md", "mine\n");
        let source = TestDir::new();
        source.write("b.md", "---\nname: b\ndescription: b fact\ntype: user\n---\nB.\n");
        source.write("MEMORY.md", "- [Bee, by hand](b.md) — my own hook\n");
        let m = target.memdir();
        let from = Memdir::new(source.mem(), source.path().join("trash"), clock());
        let stopped = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            m.merge_from_with(&from, true, || panic!("killed between the moves and the index"), &mut |_, _| {})
        }));
        assert!(stopped.is_err());
        assert!(target.exists("b.md") && !source.exists("b.md"));
        assert_eq!(target.read("MEMORY.md"), "- [mine](mine.md) — mine\n");
        assert_eq!(m.health().unindexed, ["b.md"]);
        let fixes = m.repair_stale_index_lines().unwrap();
        assert_eq!(fixes[0].added, ["- [Bee, by hand](b.md) — my own hook"]);
        assert_eq!(target.read("MEMORY.md"), "- [mine](mine.md) — mine\n- [Bee, by hand](b.md) — my own hook\n");
        assert!(m.pending_syncs().is_empty() && m.health().unindexed.is_empty());

        source.write("c.md", "---\nname: c\ndescription: c fact\n---\nC.\n");
        source.write("MEMORY.md", "- [Cee](c.md) — c\n");
        m.merge_from(&from, true).unwrap();
        assert!(m.pending_syncs().is_empty(), "a finished merge removes its note");
        assert!(target.read("MEMORY.md").ends_with("- [Cee](c.md) — c\n"));
    }

    /// A source file found plain and then swapped for something else before it is read
    /// (`BeforeRead`) or before it is linked here (`BeforeMove`): a link to a file outside
    /// both folders is neither read through nor moved in, a FIFO is not waited on; each stays
    /// in the source with the reason, and the other files merge.
    #[cfg(unix)]
    #[test]
    fn a_source_file_swapped_after_its_check_is_left_behind() {
        for moment in [Moment::BeforeRead, Moment::BeforeMove] {
            for swap_in in ["link", "fifo"] {
                let target = TestDir::new();
                let source = TestDir::new();
                source.write("a.md", "---\nname: a\ndescription: a fact\n---\nA.\n");
                source.write("b.md", "---\nname: b\ndescription: b fact\n---\nB.\n");
                source.write_outside("secret.md", "not a memory\n");
                let secret = source.path().join("secret.md");
                let out = target
                    .memdir()
                    .merge_from_with(
                        &Memdir::new(source.mem(), source.path().join("trash"), clock()),
                        true,
                        || {},
                        &mut |at, path| {
                            if at != moment || !path.ends_with("a.md") {
                                return;
                            }
                            fs::remove_file(path).unwrap();
                            match swap_in {
                                "link" => std::os::unix::fs::symlink(&secret, path).unwrap(),
                                _ => rustix::fs::mkfifoat(rustix::fs::CWD, path, rustix::fs::Mode::from_raw_mode(0o600)).unwrap(),
                            }
                        },
                    )
                    .unwrap();
                let case = format!("{moment:?}, {swap_in}");
                assert_eq!(out.moved, [MergedFile { from_rel_path: "b.md".into(), to_rel_path: "b.md".into() }], "{case}: {out:?}");
                assert_eq!(out.skipped.len(), 1, "{case}: {out:?}");
                let what = if swap_in == "link" { "a symbolic link" } else { "a named pipe (FIFO)" };
                // Refused by the read itself, or by the check of what the link brought in.
                let want = match moment {
                    Moment::BeforeRead => format!("it is {what}, not a plain file"),
                    Moment::BeforeMove => format!("it was replaced by {what} while it was being merged"),
                };
                assert!(out.skipped[0].rel_path == "a.md" && out.skipped[0].reason.contains(&want), "{case}: {:?}", out.skipped[0]);
                assert!(!target.exists("a.md"), "{case}: nothing of the swapped file landed here");
                assert!(source.exists("a.md"), "{case}: it stays in the source");
                assert_eq!(fs::read_to_string(&secret).unwrap(), "not a memory\n", "{case}");
            }
        }
    }
}
