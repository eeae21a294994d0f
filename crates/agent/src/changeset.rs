//! The reviewable result of an agent run: each changed file's content before and after, and
//! the one function that applies it, all or nothing.

use mneme_core::own_files::Unknown;
use mneme_core::versions::Profile;
use mneme_core::Clock;
use mneme_store::memdir::{validate_topic_path, IndexDoc, Memdir, MemdirError, Revision, Scope};
use serde::{Deserialize, Serialize};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// Every file an agent run changed, inside one folder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Changeset {
    /// The folder every change lies in: the memory folder, or the session-memory file's folder.
    pub root: PathBuf,
    /// In the order the run first touched each file.
    pub changes: Vec<FileChange>,
    /// Fields a newer Mneme wrote here (a dream record or an inbox item holds a changeset), kept
    /// so this build's rewrite of the record does not drop them.
    #[serde(flatten, default, skip_serializing_if = "Unknown::is_empty")]
    pub extra: Unknown,
}

impl Changeset {
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// One file's change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileChange {
    /// Absolute path, inside [`Changeset::root`].
    pub path: PathBuf,
    /// The content when the run first read it; `None` when the file did not exist.
    pub before: Option<String>,
    /// The new content; `None` when the run removed the file (it goes to the trash).
    pub after: Option<String>,
    /// Which run and which tool calls made the change, e.g. `extract_memories: Write, Edit`.
    pub reason: String,
    /// Fields a newer Mneme wrote on the change, kept through this build's rewrite.
    #[serde(flatten, default, skip_serializing_if = "Unknown::is_empty")]
    pub extra: Unknown,
}

/// What [`apply_changeset`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Applied {
    /// Files written or created, in changeset order.
    pub written: Vec<PathBuf>,
    /// Files moved to the trash, with the trash id that restores each.
    pub trashed: Vec<Trashed>,
}

/// A removed file and where it went.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Trashed {
    pub path: PathBuf,
    pub trash_id: String,
}

/// Why a changeset was not applied. In every case nothing was left half-written.
#[derive(Debug, thiserror::Error)]
pub enum ApplyError {
    #[error("{} changed on disk since the agent read it (Claude Code may have written it meanwhile). Nothing was applied; review the changes against the new version or run the agent again.", path.display())]
    Changed { path: PathBuf },
    #[error("{} is outside {}; an agent's changes must stay inside the folder they were made for. Nothing was applied.", path.display(), root.display())]
    OutsideRoot { path: PathBuf, root: PathBuf },
    // The cause goes last: it is often a whole sentence of its own, with its own full stop.
    #[error("{} could not be written, so nothing was applied: {source}", path.display())]
    Write { path: PathBuf, source: MemdirError },
    /// A write failed part-way and putting back what was already done failed too: the
    /// folder holds part of the changeset.
    #[error("{} could not be written ({detail}), and putting the folder back failed for {}: those files are not as they were before. Compare them with the changes, or run the agent again.", path.display(), list(left))]
    PartlyApplied { path: PathBuf, detail: String, left: Vec<PathBuf> },
}

fn list(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
}

impl ApplyError {
    /// `self` after a rollback that left `left` as the changeset made them (nothing left:
    /// `self`, whose message says nothing was applied).
    fn after_rollback(self, left: Vec<PathBuf>) -> ApplyError {
        if left.is_empty() {
            return self;
        }
        let (path, detail) = match self {
            ApplyError::Changed { path } => (path, "it changed on disk meanwhile".to_string()),
            ApplyError::Write { path, source } => (path, source.to_string()),
            ApplyError::OutsideRoot { path, root } => (path, format!("it is outside {}", root.display())),
            e @ ApplyError::PartlyApplied { .. } => return e,
        };
        ApplyError::PartlyApplied { path, detail, left }
    }
}

/// `path` relative to `root` with `/` separators, lexically (no `..`, no `.`).
fn relative(root: &Path, path: &Path) -> Option<String> {
    let rest = path.strip_prefix(root).ok()?;
    let mut parts = Vec::new();
    for c in rest.components() {
        match c {
            Component::Normal(s) => parts.push(s.to_str()?.to_string()),
            _ => return None,
        }
    }
    (!parts.is_empty()).then(|| parts.join("/"))
}

struct Planned<'a> {
    change: &'a FileChange,
    rel: String,
    revision: Revision,
}

/// Applies `changeset`: every write atomic (temporary file, fsync, rename), removals to the
/// trash in `trash_dir` (a memory with the index lines that pointed at it, so a restore puts
/// both back; any other file as it is). Refused as a whole, before anything is written, when any file's current content is
/// not its `before`; if a write still fails part-way (a change landing in the last instant),
/// the writes already made are undone.
///
/// `release` is the Claude Code the user runs (or the one a run stands in for): a removal takes
/// its index lines out of `MEMORY.md` split as that release reads it (from 2.1.284 a lone CR
/// ends a line, row 9 of docs/claude-code-versions.md), so pass the same release as
/// [`with_index_edits`] was given for this changeset.
pub fn apply_changeset(changeset: &Changeset, trash_dir: &Path, clock: Arc<dyn Clock>, release: &Profile) -> Result<Applied, ApplyError> {
    apply_changeset_with(changeset, trash_dir, clock, release, |_| {})
}

/// [`apply_changeset`] with a hook before each write (given the file's relative path), where
/// tests change the folder under it.
fn apply_changeset_with(
    changeset: &Changeset,
    trash_dir: &Path,
    clock: Arc<dyn Clock>,
    release: &Profile,
    mut before_write: impl FnMut(&str),
) -> Result<Applied, ApplyError> {
    let root = &changeset.root;
    let memdir = Memdir::new(root.clone(), trash_dir.to_path_buf(), clock).for_release(release);
    let mut plan = Vec::with_capacity(changeset.changes.len());
    for change in &changeset.changes {
        let rel = relative(root, &change.path)
            .ok_or_else(|| ApplyError::OutsideRoot { path: change.path.clone(), root: root.clone() })?;
        let (current, revision) = match memdir.read_raw(&rel) {
            Ok(found) => found,
            Err(MemdirError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => (None, Revision::ABSENT),
            Err(source) => return Err(ApplyError::Write { path: change.path.clone(), source }),
        };
        if current.as_deref() != change.before.as_ref().map(|s| s.as_bytes()) {
            return Err(ApplyError::Changed { path: change.path.clone() });
        }
        plan.push(Planned { change, rel, revision });
    }

    let mut written: Vec<(&Planned, Revision)> = Vec::new();
    // Puts back what this apply wrote; the files it could not put back.
    let undo_writes = |written: &[(&Planned, Revision)]| {
        let mut left = Vec::new();
        for (p, ours) in written.iter().rev() {
            let undone = match &p.change.before {
                Some(before) => memdir.write_raw(&p.rel, before.as_bytes(), ours).is_ok(),
                None => {
                    // Only remove the file if it is still exactly what this apply created.
                    !matches!(memdir.read_raw(&p.rel), Ok((_, rev)) if rev.matches(ours)) || std::fs::remove_file(&p.change.path).is_ok()
                }
            };
            if !undone {
                left.push(p.change.path.clone());
            }
        }
        left
    };
    for p in plan.iter().filter(|p| p.change.after.is_some()) {
        let after = p.change.after.as_deref().unwrap_or_default();
        before_write(&p.rel);
        match memdir.write_raw(&p.rel, after.as_bytes(), &p.revision) {
            Ok(rev) => written.push((p, rev)),
            Err(source) => {
                let left = undo_writes(&written);
                let error = match source {
                    MemdirError::ChangedOnDisk { .. } | MemdirError::AlreadyExists { .. } => {
                        ApplyError::Changed { path: p.change.path.clone() }
                    }
                    source => ApplyError::Write { path: p.change.path.clone(), source },
                };
                return Err(error.after_rollback(left));
            }
        }
    }

    let mut trashed: Vec<Trashed> = Vec::new();
    for p in plan.iter().filter(|p| p.change.after.is_none()) {
        if p.change.before.is_none() {
            continue; // created and removed within the run: nothing on disk to remove.
        }
        // A memory goes with its index lines (the trash remembers them), unless the changeset
        // has a change of that index itself; any other file (an index, a non-topic file) is
        // trashed as it is.
        let trashed_entry = if takes_index_lines(changeset, &p.rel) {
            memdir.delete(&p.rel)
        } else {
            memdir.trash_file(&p.rel)
        };
        match trashed_entry {
            Ok(entry) => trashed.push(Trashed { path: p.change.path.clone(), trash_id: entry.id }),
            Err(source) => {
                let mut left: Vec<PathBuf> = trashed.iter().rev().filter(|t| memdir.restore(&t.trash_id).is_err()).map(|t| t.path.clone()).collect();
                left.extend(undo_writes(&written));
                return Err(ApplyError::Write { path: p.change.path.clone(), source }.after_rollback(left));
            }
        }
    }
    Ok(Applied { written: written.iter().map(|(p, _)| p.change.path.clone()).collect(), trashed })
}

/// Whether [`apply_changeset`] removes the memory at `rel` together with its index lines: a
/// topic file whose own index the changeset neither writes nor removes. An index the changeset writes is
/// already the index it wants, so a memory it removes must not take lines out of it a second
/// time (undoing a dream that wrote a memory back from its index line restores that line and
/// removes the file); an index it removes goes to the trash as it was read, not first edited.
fn takes_index_lines(changeset: &Changeset, rel: &str) -> bool {
    let index = Scope::of(rel).index_rel_path();
    validate_topic_path(rel).is_ok()
        && !changeset.changes.iter().any(|c| (c.before.is_some() || c.after.is_some()) && relative(&changeset.root, &c.path).as_deref() == Some(index))
}

/// `changeset` with the index edits its removals would make on their own written out as changes:
/// for every memory it removes together with its index lines (see [`apply_changeset`]), the
/// lines pointing at it are taken out of each index (`MEMORY.md`, `team/MEMORY.md`), as the
/// store's delete takes them: out of the text the changeset writes for that index, or out of
/// the index on disk, as a change of its own (its `before` the index as it is now). Applied, the
/// result leaves the folder exactly as `changeset` would, and every byte it changes is in its
/// changes, so whoever keeps it (a dream, for its undo) can put the index back without the
/// trash entry, which the user may have emptied.
///
/// An index on disk that is not UTF-8 text is left out: the apply's own delete then refuses it,
/// as it did before, with the store's message saying what to do.
///
/// Each index is split into lines as `release` reads it, as [`apply_changeset`] given the same
/// release splits it.
pub fn with_index_edits(changeset: &Changeset, trash_dir: &Path, clock: Arc<dyn Clock>, release: &Profile) -> Result<Changeset, MemdirError> {
    let root = &changeset.root;
    let removed: Vec<String> = changeset
        .changes
        .iter()
        .filter(|c| c.after.is_none() && c.before.is_some())
        .filter_map(|c| relative(root, &c.path))
        .filter(|rel| takes_index_lines(changeset, rel))
        .collect();
    let mut out = changeset.clone();
    if removed.is_empty() {
        return Ok(out);
    }
    let memdir = Memdir::new(root.clone(), trash_dir.to_path_buf(), clock).for_release(release);
    for scope in [Scope::Private, Scope::Team] {
        let index = scope.index_rel_path();
        let own = out.changes.iter().position(|c| relative(root, &c.path).as_deref() == Some(index));
        let text = match own {
            // Removed by the changeset, or neither there nor made: nothing to edit.
            Some(i) => match &out.changes[i].after {
                Some(after) => after.clone(),
                None => continue,
            },
            None => match memdir.read_raw(index) {
                Ok((Some(bytes), _)) => match String::from_utf8(bytes) {
                    Ok(text) => text,
                    Err(_) => continue,
                },
                Ok((None, _)) => continue,
                Err(MemdirError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            },
        };
        // The byte-order mark belongs to the file, not its first line, as the store's own
        // index edits keep it.
        let (bom, body) = match text.strip_prefix('\u{FEFF}') {
            Some(rest) => ("\u{FEFF}", rest),
            None => ("", text.as_str()),
        };
        // Split into lines as the store's delete splits them (a lone CR ends a line for the
        // releases that read it so), so a removal takes its own line and no other; the apply's
        // delete, given the same release, splits them the same way.
        let mut doc = IndexDoc::parse_as(body, memdir.release());
        let hits: Vec<(usize, String)> =
            doc.entries(scope, root).into_iter().filter(|(_, e)| removed.contains(&e.rel_path)).map(|(i, e)| (i, e.rel_path)).collect();
        if hits.is_empty() {
            continue;
        }
        doc.remove(&hits.iter().map(|(i, _)| *i).collect::<Vec<_>>());
        let edited = format!("{bom}{}", doc.render_as(body, memdir.release()));
        match own {
            Some(i) => out.changes[i].after = Some(edited),
            None => {
                let mut gone: Vec<&str> = Vec::new();
                for (_, rel) in &hits {
                    if !gone.contains(&rel.as_str()) {
                        gone.push(rel);
                    }
                }
                out.changes.push(FileChange {
                    path: root.join(index),
                    before: Some(text.clone()),
                    after: Some(edited),
                    reason: format!("{index}: the index lines of {}, removed with {}", gone.join(", "), if gone.len() == 1 { "it" } else { "them" }),
                    extra: Default::default(),
                });
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_core::versions::newest;
    use mneme_core::FixedClock;

    fn clock() -> Arc<dyn Clock> {
        Arc::new(FixedClock::at_unix_secs(1_764_422_207))
    }

    fn change(root: &Path, rel: &str, before: Option<&str>, after: Option<&str>) -> FileChange {
        FileChange {
            path: root.join(rel),
            before: before.map(String::from),
            after: after.map(String::from),
            reason: "test".into(),
            extra: Default::default(),
        }
    }

    /// A write that fails after another succeeded is undone; when the undo fails too (the
    /// first file changed again meanwhile), the error says which files hold what, instead of
    /// "nothing was applied".
    #[test]
    fn a_rollback_that_fails_is_reported_with_the_files_it_left() {
        let t = tempfile::tempdir().unwrap();
        let mem = t.path().join("mem");
        std::fs::create_dir_all(&mem).unwrap();
        std::fs::write(mem.join("a.md"), "a v1").unwrap();
        std::fs::write(mem.join("b.md"), "b v1").unwrap();
        let cs = Changeset { root: mem.clone(), changes: vec![change(&mem, "a.md", Some("a v1"), Some("a v2")), change(&mem, "b.md", Some("b v1"), Some("b v2"))], extra: Default::default() };
        // Only b changes under the apply: a is put back and nothing is left.
        let e = apply_changeset_with(&cs, &t.path().join("trash"), clock(), &newest(), |rel| {
            if rel == "b.md" {
                std::fs::write(mem.join("b.md"), "b by someone else").unwrap();
            }
        })
        .unwrap_err();
        assert!(matches!(&e, ApplyError::Changed { path } if path == &mem.join("b.md")), "{e}");
        assert_eq!(std::fs::read_to_string(mem.join("a.md")).unwrap(), "a v1");
        // Now a changes too once written, so it cannot be put back.
        std::fs::write(mem.join("b.md"), "b v1").unwrap();
        let e = apply_changeset_with(&cs, &t.path().join("trash"), clock(), &newest(), |rel| {
            if rel == "b.md" {
                std::fs::write(mem.join("a.md"), "a by someone else").unwrap();
                std::fs::write(mem.join("b.md"), "b by someone else").unwrap();
            }
        })
        .unwrap_err();
        match &e {
            ApplyError::PartlyApplied { path, left, .. } => {
                assert_eq!((path, left.as_slice()), (&mem.join("b.md"), [mem.join("a.md")].as_slice()));
            }
            other => panic!("{other}"),
        }
        assert!(!e.to_string().to_lowercase().contains("nothing was applied"), "{e}");
    }

    /// A dream record or an inbox item a newer Mneme wrote keeps that build's fields on its
    /// changeset, each change and each denial when this build rewrites it (approve, reject,
    /// undo); they used to be dropped at the first rewrite.
    #[test]
    fn fields_a_newer_mneme_wrote_are_written_back() {
        let changeset = serde_json::json!({
            "root": "/m",
            "changes": [{"path": "/m/a.md", "before": null, "after": "a", "reason": "r", "hunks": [1, 2], "why": {"k": "v"}}],
            "reviewedBy": "someone",
        });
        let read: Changeset = serde_json::from_value(changeset.clone()).unwrap();
        assert_eq!((read.changes[0].reason.as_str(), read.changes[0].after.as_deref()), ("r", Some("a")));
        assert_eq!(serde_json::to_value(&read).unwrap(), changeset);
        let denial = serde_json::json!({"tool": "Write", "message": "no", "rule": "outside the folder"});
        let read: crate::Denial = serde_json::from_value(denial.clone()).unwrap();
        assert_eq!(serde_json::to_value(&read).unwrap(), denial);
        // What this build writes itself has no extra fields.
        let own = Changeset { root: "/m".into(), changes: vec![change(Path::new("/m"), "a.md", None, Some("a"))], extra: Default::default() };
        assert_eq!(serde_json::to_value(&own).unwrap()["changes"][0].as_object().unwrap().len(), 4);
    }

    /// The store's errors are whole sentences with their own full stop; the message around
    /// one must not add a second.
    #[test]
    fn a_write_error_reads_as_one_sentence() {
        let e = ApplyError::Write { path: PathBuf::from("/m/a.md"), source: MemdirError::NotFound { path: "a.md".into() } };
        let text = e.to_string();
        assert!(text.starts_with("/m/a.md could not be written, so nothing was applied: a.md does not exist"), "{text}");
        assert!(!text.contains(".."), "{text}");
    }

    #[test]
    fn applies_writes_creates_and_removals() {
        let t = tempfile::tempdir().unwrap();
        let mem = t.path().join("mem");
        std::fs::create_dir_all(&mem).unwrap();
        std::fs::write(mem.join("MEMORY.md"), "- [Old](old.md) — gone\n- [A](a.md) — a\n").unwrap();
        std::fs::write(mem.join("a.md"), "a v1").unwrap();
        std::fs::write(mem.join("old.md"), "old").unwrap();
        let cs = Changeset {
            root: mem.clone(),
            changes: vec![
                change(&mem, "a.md", Some("a v1"), Some("a v2")),
                change(&mem, "team/new.md", None, Some("new")),
                change(&mem, "old.md", Some("old"), None),
            ],
            extra: Default::default(),
        };
        let applied = apply_changeset(&cs, &t.path().join("trash"), clock(), &newest()).unwrap();
        assert_eq!(applied.written, vec![mem.join("a.md"), mem.join("team/new.md")]);
        assert_eq!(applied.trashed.len(), 1);
        assert_eq!(std::fs::read_to_string(mem.join("a.md")).unwrap(), "a v2");
        assert_eq!(std::fs::read_to_string(mem.join("team/new.md")).unwrap(), "new");
        assert!(!mem.join("old.md").exists());
        // The trash keeps the file and the index line it removed.
        assert_eq!(std::fs::read_to_string(mem.join("MEMORY.md")).unwrap(), "- [A](a.md) — a\n");
        let restored = Memdir::new(mem.clone(), t.path().join("trash"), clock()).restore(&applied.trashed[0].trash_id);
        assert!(restored.is_ok());
        assert_eq!(std::fs::read_to_string(mem.join("old.md")).unwrap(), "old");
    }

    /// Every file under `dir`, relative path → bytes.
    fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
        fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(root, &p, out);
                } else {
                    out.insert(p.strip_prefix(root).unwrap().to_string_lossy().into_owned(), std::fs::read(&p).unwrap());
                }
            }
        }
        let mut out = std::collections::BTreeMap::new();
        walk(dir, dir, &mut out);
        out
    }

    /// A folder whose indexes point at memories a changeset removes: a private index with a
    /// byte-order mark, CRLF lines and two lines for one memory, and a team index.
    fn indexed_folder(mem: &Path) {
        std::fs::create_dir_all(mem.join("team")).unwrap();
        std::fs::write(mem.join("MEMORY.md"), "\u{FEFF}- [B](b.md) — b\r\n- [A](a.md) — a\r\n- [B again](b.md)\r\n- [T](team/t.md) — t\r\nend").unwrap();
        std::fs::write(mem.join("team/MEMORY.md"), "- [T](t.md) — t\n- [U](u.md) — u\n").unwrap();
        for (rel, text) in [("a.md", "a"), ("b.md", "b"), ("team/t.md", "t"), ("team/u.md", "u"), ("notes.txt", "n")] {
            std::fs::write(mem.join(rel), text).unwrap();
        }
    }

    /// The index edits a changeset's removals make on their own, written out as changes, leave
    /// the folder exactly as the changeset alone does, and hold every index's earlier text:
    /// each index on disk gets a change from its text now, an index the changeset writes has the
    /// lines taken out of its new text, and removing the memories no longer edits an index.
    #[test]
    fn index_edits_written_out_leave_the_folder_as_the_apply_did() {
        let t = tempfile::tempdir().unwrap();
        let removals = |mem: &Path| {
            vec![change(mem, "b.md", Some("b"), None), change(mem, "team/t.md", Some("t"), None), change(mem, "notes.txt", Some("n"), None), change(mem, "a.md", Some("a"), Some("a2"))]
        };
        for writes_index in [false, true] {
            let (on_its_own, written_out) = (t.path().join(format!("own{writes_index}")), t.path().join(format!("out{writes_index}")));
            let mut planned = Vec::new();
            for mem in [&on_its_own, &written_out] {
                indexed_folder(mem);
                let mut changes = removals(mem);
                if writes_index {
                    changes.push(change(mem, "MEMORY.md", Some("\u{FEFF}- [B](b.md) — b\r\n- [A](a.md) — a\r\n- [B again](b.md)\r\n- [T](team/t.md) — t\r\nend"), Some("- [T](team/t.md) — t\n- [A](a.md) — a2\n")));
                }
                planned.push(Changeset { root: mem.clone(), changes, extra: Default::default() });
            }
            apply_changeset(&planned[0], &t.path().join("trash-own"), clock(), &newest()).unwrap();
            let explicit = with_index_edits(&planned[1], &t.path().join("trash-out"), clock(), &newest()).unwrap();
            let index = |rel: &str| explicit.changes.iter().find(|c| c.path == written_out.join(rel)).cloned();
            if writes_index {
                assert_eq!(explicit.changes.len(), planned[1].changes.len() + 1, "team/MEMORY.md added: {:#?}", explicit.changes);
                assert_eq!(index("MEMORY.md").unwrap().after.as_deref(), Some("- [A](a.md) — a2\n"), "its own line for team/t.md taken out of the new text");
            } else {
                assert_eq!(explicit.changes.len(), planned[1].changes.len() + 2, "{:#?}", explicit.changes);
                let private = index("MEMORY.md").unwrap();
                assert_eq!(private.before.as_deref().map(str::as_bytes), Some(std::fs::read(written_out.join("MEMORY.md")).unwrap().as_slice()));
                assert_eq!(private.after.as_deref(), Some("\u{FEFF}- [A](a.md) — a\r\nend"));
                assert_eq!(private.reason, "MEMORY.md: the index lines of b.md, team/t.md, removed with them");
            }
            assert_eq!(index("team/MEMORY.md").unwrap().after.as_deref(), Some("- [U](u.md) — u\n"));
            apply_changeset(&explicit, &t.path().join("trash-out"), clock(), &newest()).unwrap();
            assert_eq!(tree(&written_out), tree(&on_its_own), "writes the index: {writes_index}");
            // The trash entries of the memories hold no index lines: the changes do.
            let listed = Memdir::new(written_out.clone(), t.path().join("trash-out"), clock()).list_trash().unwrap();
            assert!(listed.entries.iter().all(|e| e.index_lines.is_empty()), "{:#?}", listed.entries);
            std::fs::remove_dir_all(t.path().join("trash-out")).unwrap();
        }
        // Nothing removed, or no index line for what is: the changeset as it was.
        let mem = t.path().join("plain");
        indexed_folder(&mem);
        let cs = Changeset { root: mem.clone(), changes: vec![change(&mem, "notes.txt", Some("n"), None), change(&mem, "a.md", Some("a"), Some("a2"))], extra: Default::default() };
        assert_eq!(with_index_edits(&cs, &t.path().join("trash"), clock(), &newest()).unwrap(), cs);
    }

    /// A changeset that removes a memory and its index trashes the index as it was, so restoring
    /// it from the trash gives the user's index back, not one the memory's removal had edited
    /// first (which happened when the memory came first in the changeset).
    #[test]
    fn an_index_removed_with_a_memory_goes_to_the_trash_unedited() {
        let t = tempfile::tempdir().unwrap();
        let mem = t.path().join("mem");
        std::fs::create_dir_all(&mem).unwrap();
        let index = "- [A](a.md) — a\n- [B](b.md) — b\n";
        std::fs::write(mem.join("MEMORY.md"), index).unwrap();
        std::fs::write(mem.join("b.md"), "b").unwrap();
        let cs = Changeset { root: mem.clone(), changes: vec![change(&mem, "b.md", Some("b"), None), change(&mem, "MEMORY.md", Some(index), None)], extra: Default::default() };
        let applied = apply_changeset(&cs, &t.path().join("trash"), clock(), &newest()).unwrap();
        assert!(!mem.join("MEMORY.md").exists() && !mem.join("b.md").exists());
        let memdir = Memdir::new(mem.clone(), t.path().join("trash"), clock());
        memdir.restore(&applied.trashed[1].trash_id).unwrap();
        assert_eq!(std::fs::read_to_string(mem.join("MEMORY.md")).unwrap(), index);
    }

    #[test]
    fn refuses_the_whole_set_on_a_concurrent_change() {
        let t = tempfile::tempdir().unwrap();
        let mem = t.path().join("mem");
        std::fs::create_dir_all(&mem).unwrap();
        std::fs::write(mem.join("a.md"), "changed by Claude Code").unwrap();
        let cs = Changeset {
            root: mem.clone(),
            changes: vec![change(&mem, "b.md", None, Some("b")), change(&mem, "a.md", Some("a v1"), Some("a v2"))],
            extra: Default::default(),
        };
        let err = apply_changeset(&cs, &t.path().join("trash"), clock(), &newest()).unwrap_err();
        assert!(matches!(&err, ApplyError::Changed { path } if path == &mem.join("a.md")), "{err}");
        assert!(!mem.join("b.md").exists(), "nothing half-written");
        assert_eq!(std::fs::read_to_string(mem.join("a.md")).unwrap(), "changed by Claude Code");
        // A file that appeared where the run created one is a conflict too.
        std::fs::write(mem.join("b.md"), "someone else's").unwrap();
        let cs = Changeset { root: mem.clone(), changes: vec![change(&mem, "b.md", None, Some("b"))], extra: Default::default() };
        assert!(matches!(apply_changeset(&cs, &t.path().join("trash"), clock(), &newest()), Err(ApplyError::Changed { .. })));
        assert_eq!(std::fs::read_to_string(mem.join("b.md")).unwrap(), "someone else's");
    }

    #[test]
    fn refuses_paths_outside_the_root_and_trashes_an_index_as_is() {
        let t = tempfile::tempdir().unwrap();
        let mem = t.path().join("mem");
        std::fs::create_dir_all(&mem).unwrap();
        let cs = Changeset {
            root: mem.clone(),
            changes: vec![FileChange {
                path: mem.join("../escape.md"),
                before: None,
                after: Some("x".into()),
                reason: "test".into(),
                extra: Default::default(),
            }],
            extra: Default::default(),
        };
        assert!(matches!(apply_changeset(&cs, &t.path().join("trash"), clock(), &newest()), Err(ApplyError::OutsideRoot { .. })));
        assert!(!t.path().join("escape.md").exists());
        std::fs::write(mem.join("MEMORY.md"), "- [a](a.md)\n").unwrap();
        let cs = Changeset { root: mem.clone(), changes: vec![change(&mem, "MEMORY.md", Some("- [a](a.md)\n"), None)], extra: Default::default() };
        let applied = apply_changeset(&cs, &t.path().join("trash"), clock(), &newest()).unwrap();
        assert!(!mem.join("MEMORY.md").exists());
        let restored = Memdir::new(mem.clone(), t.path().join("trash"), clock()).restore(&applied.trashed[0].trash_id);
        assert!(restored.is_ok(), "{restored:?}");
        assert_eq!(std::fs::read_to_string(mem.join("MEMORY.md")).unwrap(), "- [a](a.md)\n");
    }
}
