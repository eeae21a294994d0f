//! Deleting without losing: a deleted memory moves to `<trash>/<id>/<file name>` next to a
//! `record.json` saying where it came from and which index lines were removed with it, so a
//! restore can put both back. The trash lives in Mneme's data directory: inside the memory
//! folder, Claude Code would read a deleted memory as a live one.
//!
//! Order of work, so a crash at any point leaves the memory findable: the record is written
//! first (with the index lines about to go and the file's revision), then the file moves into
//! the trash, then the index lines are removed. If the move or the index edit fails, the file
//! moves back. A delete killed between its record and the move leaves the memory in place
//! beside a record of it; the next trash listing or delete finishes it (the user asked to
//! delete), or drops the record if the memory has changed since ([`Memdir::list_trash`]).
//!
//! Each entry folder is locked (`flock`) by whoever moves files in or out of it (a delete, a
//! restore, that finishing), so a delete still running is never taken for one killed.

use super::error::io_err;
use super::path::{validate_topic_path, validate_trash_id};
use super::revision::Revision;
use super::scan::{read_bytes_no_follow, stem_of};
use super::write::{fsync_dir, move_file};
use super::{Memdir, MemdirError, Problem, ProblemKind, Scope};
use serde::{Deserialize, Serialize};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

const RECORD_FILE: &str = "record.json";
/// What an entry folder being deleted for good is renamed to first (`.purging-<id>`): a trash
/// id never starts with a dot, so the name is no entry's, and the listing does not show it.
const PURGING_PREFIX: &str = ".purging-";
const RECORD_VERSION: u32 = 1;
/// Written into an entry by a restore before it moves the file back, so a restore killed after
/// that move is not taken for a delete killed before its own (both leave a record, no file in
/// the trash and the memory in place).
const RESTORING_FILE: &str = "restoring";

/// `record.json` as written: the entry, and the revision of the file when the delete began,
/// which tells the memory a killed delete left in place from one changed since. Kept out of
/// [`TrashEntry`], which front ends are shown.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Record {
    #[serde(flatten)]
    entry: TrashEntry,
    /// Absent in records of older Mneme releases and for files that could not be read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    revision: Option<Revision>,
}

/// What [`Memdir::settle`] did with an entry.
enum Settled {
    /// Nothing: the entry is whole, or not a delete cut short.
    Unchanged,
    /// A delete cut short between its record and the move, now finished.
    Finished(TrashEntry),
    /// A record whose memory changed after its delete was cut short: dropped, the memory kept.
    Dropped,
}

/// An index line removed by a delete, remembered so a restore can put it back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct RemovedIndexLine {
    /// `MEMORY.md` or `team/MEMORY.md`.
    pub index_rel_path: String,
    /// Where it was (1-based); a restore puts it back there, or at the end if the index
    /// has since become shorter.
    pub line_number: usize,
    /// The line, verbatim.
    pub text: String,
}

/// One deleted memory in the trash (also the on-disk `record.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TrashEntry {
    /// Format version of the record.
    pub version: u32,
    /// The id to pass to [`Memdir::restore`] and [`Memdir::purge_trash`].
    pub id: String,
    /// Where the memory was, relative to the memory folder.
    pub original_rel_path: String,
    /// The memory folder it was deleted from.
    pub memdir_root: PathBuf,
    /// When, in milliseconds since the epoch (from the injected clock).
    pub deleted_at_ms: u64,
    /// The index lines removed with it.
    pub index_lines: Vec<RemovedIndexLine>,
    /// Size of the deleted file in bytes.
    pub size: u64,
}

/// The trash of one memory folder.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TrashListing {
    /// Entries of this memory folder, newest first.
    pub entries: Vec<TrashEntry>,
    /// Entries whose record could not be read; their files are still there.
    pub damaged: Vec<Problem>,
}

/// What [`Memdir::empty_trash`] removed.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct EmptiedTrash {
    /// Entries deleted for good.
    pub removed: usize,
    /// The bytes their memories held.
    pub bytes: u64,
}

/// What [`Memdir::restore`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Restored {
    /// Where the memory is again, relative to the memory folder.
    pub rel_path: String,
    /// Index lines put back (lines already present are not duplicated).
    pub index_lines_restored: usize,
    /// Set when the memory is back but its emptied trash folder could not be removed.
    pub cleanup_error: Option<String>,
}

impl Memdir {
    fn check_trash_location(&self) -> Result<(), MemdirError> {
        let real = |p: &Path| fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
        if real(&self.trash_dir).starts_with(real(&self.root)) || self.trash_dir.starts_with(&self.root) {
            return Err(MemdirError::TrashInsideMemdir { trash: self.trash_dir.clone(), root: self.root.clone() });
        }
        Ok(())
    }

    /// A fresh entry folder `<ms>-<stem>[-n]`, created exclusively.
    fn new_trash_entry_dir(&self, now_ms: u64, rel: &str) -> Result<(String, PathBuf), MemdirError> {
        fs::create_dir_all(&self.trash_dir).map_err(io_err("create the trash folder", &self.trash_dir))?;
        let stem: String = super::path::slugify_ascii(stem_of(rel)).chars().take(40).collect();
        for n in 0u32.. {
            let id = if n == 0 { format!("{now_ms}-{stem}") } else { format!("{now_ms}-{stem}-{n}") };
            let dir = self.trash_dir.join(&id);
            match fs::create_dir(&dir) {
                Ok(()) => return Ok((id, dir)),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(MemdirError::Io { action: "create a trash entry in", path: self.trash_dir.clone(), source: e }),
            }
        }
        unreachable!("u32 ids exhausted")
    }

    /// Moves a topic file to the trash with a record of where it was, and removes its index
    /// lines. Symbolic links are trashed as links (their targets are untouched).
    pub fn delete(&self, rel: &str) -> Result<TrashEntry, MemdirError> {
        self.check_trash_location()?;
        let real_root = self.real_root()?;
        validate_topic_path(rel)?;
        // Deletes cut short by a kill are finished first; if this memory's was one of them, it
        // is in the trash now, which is what was asked.
        let finished = self.settle_trash().map(|(_, finished)| finished).unwrap_or_default();
        let abs = self.abs(rel);
        // A symbolic link is trashed as a link, so only its folder must be inside: that is
        // how a link pointing outside the memory folder gets removed.
        let is_link = fs::symlink_metadata(&abs).is_ok_and(|m| m.file_type().is_symlink());
        let checked = if is_link { abs.parent().unwrap_or(&self.root) } else { &abs };
        self.check_contained(&real_root, rel, checked)?;
        let meta = match fs::symlink_metadata(&abs) {
            Ok(m) if m.file_type().is_file() || m.file_type().is_symlink() => m,
            Ok(m) => {
                return Err(MemdirError::NotARegularFile { path: rel.into(), detail: super::path::describe_type(&m) })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                return match finished.into_iter().find(|e| e.original_rel_path == rel) {
                    Some(entry) => Ok(entry),
                    None => Err(MemdirError::NotFound { path: rel.into() }),
                }
            }
            Err(e) => return Err(MemdirError::Io { action: "inspect", path: abs, source: e }),
        };
        let now_ms = u64::try_from(self.clock.now_ms()).unwrap_or(u64::MAX);
        // The trash's own folders this delete makes, taken away again when it fails: a disk
        // that refuses the record (full: folders still fit where a file's first block does not)
        // is left as it was.
        let made: Vec<PathBuf> = self.trash_dir.ancestors().take_while(|p| fs::symlink_metadata(p).is_err()).map(Path::to_path_buf).collect();
        let unmake = || made.iter().for_each(|p| drop(fs::remove_dir(p)));
        let (id, dir) = self.new_trash_entry_dir(now_ms, rel).inspect_err(|_| unmake())?;
        let _entry_lock = lock_entry(&dir)?;
        let planned = self.index_lines_of(rel);
        let entry = TrashEntry {
            version: RECORD_VERSION,
            id,
            original_rel_path: rel.into(),
            memdir_root: self.root.clone(),
            deleted_at_ms: now_ms,
            index_lines: planned,
            size: meta.len(),
        };
        // The record, with the index lines about to be removed and the file's revision, is on
        // disk before the file moves and before the index changes: a process killed at any
        // later point leaves an entry that restores the memory and its lines, or (killed
        // before the move) one the next listing finishes. Killed before it, nothing has moved.
        let revision = revision_of(&abs);
        if let Err(e) = write_record(&dir, &entry, revision.as_ref()) {
            let _ = fs::remove_dir_all(&dir);
            unmake();
            return Err(e);
        }
        // Only empty folders go: an entry still holding the memory (left in the trash) stays.
        self.finish_move(&abs, &dir, entry, revision.as_ref(), true).inspect_err(|_| unmake())
    }

    /// The rest of a delete once its record is written: moves the file at `abs` into the
    /// entry folder `dir` and, with `edit_index`, removes its index lines, rewriting the
    /// record if they were not the ones it names. Called with the entry locked. If the move
    /// fails the entry goes (nothing moved); if an index edit fails the file moves back.
    fn finish_move(
        &self,
        abs: &Path,
        dir: &Path,
        mut entry: TrashEntry,
        revision: Option<&Revision>,
        edit_index: bool,
    ) -> Result<TrashEntry, MemdirError> {
        let rel = entry.original_rel_path.clone();
        let rel = rel.as_str();
        let stored = dir.join(rel.rsplit('/').next().unwrap_or(rel));
        if let Err(e) = move_file(abs, &stored) {
            let _ = fs::remove_dir_all(dir);
            return Err(MemdirError::Io { action: "move to the trash", path: abs.to_path_buf(), source: e });
        }
        fsync_dir(abs.parent().unwrap_or(&self.root));
        if !edit_index {
            return Ok(entry);
        }
        let kept_as = entry.id.clone();
        let root = self.root.clone();
        let planned = std::mem::take(&mut entry.index_lines);
        let put_back = |cause| put_back(&stored, abs, dir, rel, &kept_as, cause);

        for scope in [Scope::Private, Scope::Team] {
            let removed = self.edit_index(scope, |doc| {
                let hits: Vec<usize> =
                    doc.entries(scope, &root).into_iter().filter(|(_, e)| e.rel_path == rel).map(|(i, _)| i).collect();
                let texts = doc.remove(&hits);
                hits.into_iter().zip(texts).collect::<Vec<_>>()
            });
            match removed {
                Ok((lines, _)) => entry.index_lines.extend(lines.into_iter().map(|(i, text)| RemovedIndexLine {
                    index_rel_path: scope.index_rel_path().into(),
                    line_number: i + 1,
                    text,
                })),
                Err(e) => {
                    // Undo the private index edit when the team one fails.
                    if scope == Scope::Team && !entry.index_lines.is_empty() {
                        let _ = self.reinsert_lines(&entry);
                    }
                    return Err(put_back(e));
                }
            }
        }
        // Someone else's edit between the look and the removal: the record says what went.
        if entry.index_lines != planned {
            if let Err(e) = write_record(dir, &entry, revision) {
                let _ = self.reinsert_lines(&entry);
                return Err(put_back(e));
            }
        }
        Ok(entry)
    }

    /// The index lines pointing at `rel`, as a delete would remove them. Best effort: an index
    /// that cannot be read now is read again by the edit, which reports its error.
    fn index_lines_of(&self, rel: &str) -> Vec<RemovedIndexLine> {
        let mut out = Vec::new();
        for scope in [Scope::Private, Scope::Team] {
            let Ok(index) = self.read_index(scope) else { continue };
            let mut doc = super::index::IndexDoc::parse_as(index.content.strip_prefix('\u{FEFF}').unwrap_or(&index.content), &self.index_release(&index.content));
            let hits: Vec<usize> = doc.entries(scope, &self.root).into_iter().filter(|(_, e)| e.rel_path == rel).map(|(i, _)| i).collect();
            let texts = doc.remove(&hits);
            out.extend(hits.into_iter().zip(texts).map(|(i, text)| RemovedIndexLine {
                index_rel_path: scope.index_rel_path().into(),
                line_number: i + 1,
                text,
            }));
        }
        out
    }

    /// Moves any file of the memory folder to the trash without touching an index: how team
    /// sync honours a teammate's deletion (the team's own `team/MEMORY.md` arrives from the
    /// server like any other file, so Mneme must not edit it on its own). Unlike
    /// [`delete`](Memdir::delete) the path need not be a topic file (`team/MEMORY.md`,
    /// `team/notes.txt`); a symbolic link is trashed as a link.
    pub fn trash_file(&self, rel: &str) -> Result<TrashEntry, MemdirError> {
        self.trash_synced(rel, false)
    }

    /// Puts a copy of a file in the trash and leaves the file in place: the local version a
    /// team pull is about to overwrite, so a teammate's version never silently replaces
    /// unsynced local work.
    pub fn trash_copy(&self, rel: &str) -> Result<TrashEntry, MemdirError> {
        self.trash_synced(rel, true)
    }

    fn trash_synced(&self, rel: &str, keep: bool) -> Result<TrashEntry, MemdirError> {
        self.check_trash_location()?;
        validate_synced_rel(rel)?;
        let real_root = self.real_root()?;
        let abs = self.abs(rel);
        let is_link = fs::symlink_metadata(&abs).is_ok_and(|m| m.file_type().is_symlink());
        self.check_contained(&real_root, rel, if is_link { abs.parent().unwrap_or(&self.root) } else { &abs })?;
        let meta = match fs::symlink_metadata(&abs) {
            Ok(m) if m.file_type().is_file() || (m.file_type().is_symlink() && !keep) => m,
            Ok(m) => {
                return Err(MemdirError::NotARegularFile { path: rel.into(), detail: super::path::describe_type(&m) })
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(MemdirError::NotFound { path: rel.into() }),
            Err(e) => return Err(MemdirError::Io { action: "inspect", path: abs, source: e }),
        };
        let now_ms = u64::try_from(self.clock.now_ms()).unwrap_or(u64::MAX);
        // The trash's own folders this delete makes, taken away again when it fails: a disk
        // that refuses the record (full: folders still fit where a file's first block does not)
        // is left as it was.
        let made: Vec<PathBuf> = self.trash_dir.ancestors().take_while(|p| fs::symlink_metadata(p).is_err()).map(Path::to_path_buf).collect();
        let unmake = || made.iter().for_each(|p| drop(fs::remove_dir(p)));
        let (id, dir) = self.new_trash_entry_dir(now_ms, rel).inspect_err(|_| unmake())?;
        let _entry_lock = lock_entry(&dir)?;
        let stored = dir.join(rel.rsplit('/').next().unwrap_or(rel));
        let entry = TrashEntry {
            version: RECORD_VERSION,
            id,
            original_rel_path: rel.into(),
            memdir_root: self.root.clone(),
            deleted_at_ms: now_ms,
            index_lines: Vec::new(),
            size: meta.len(),
        };
        let failed = |e, action| {
            let _ = fs::remove_dir_all(&dir);
            MemdirError::Io { action, path: abs.clone(), source: e }
        };
        if keep {
            // Copied whole or not at all (a temporary file renamed): a copy cut short by a
            // crash is never in the trash as if it were the file. The record follows.
            crate::atomic::copy_new(&abs, &stored).map_err(|e| failed(e, "copy to the trash"))?;
            if let Err(e) = write_record(&dir, &entry, None) {
                let _ = fs::remove_dir_all(&dir);
                return Err(e);
            }
            Ok(entry)
        } else {
            // As in [`Memdir::delete`]: the record first, so a file that has moved always has one.
            let revision = revision_of(&abs);
            if let Err(e) = write_record(&dir, &entry, revision.as_ref()) {
                let _ = fs::remove_dir_all(&dir);
                return Err(e);
            }
            self.finish_move(&abs, &dir, entry, revision.as_ref(), false)
        }
    }

    /// The trash of this memory folder, newest first. A delete killed between writing its
    /// record and moving the file is finished first (see [`Memdir::settle`]).
    pub fn list_trash(&self) -> Result<TrashListing, MemdirError> {
        self.settle_trash().map(|(listing, _)| listing)
    }

    /// [`Memdir::list_trash`], with the entries of the deletes it finished.
    fn settle_trash(&self) -> Result<(TrashListing, Vec<TrashEntry>), MemdirError> {
        let mut listing = TrashListing::default();
        let mut finished = Vec::new();
        let entries = match fs::read_dir(&self.trash_dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok((listing, finished)),
            Err(e) => return Err(MemdirError::Io { action: "list the trash folder", path: self.trash_dir.clone(), source: e }),
        };
        for e in entries {
            let e = e.map_err(io_err("list the trash folder", &self.trash_dir))?;
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let id = e.file_name().to_string_lossy().into_owned();
            if id.starts_with(PURGING_PREFIX) {
                // A purge stopped after its rename: the user asked for it to go.
                let _ = fs::remove_dir_all(e.path());
                continue;
            }
            match read_record(&e.path(), &id) {
                Ok(r) if same_root(&r.entry.memdir_root, &self.root) => match self.settle(&e.path(), r.clone()) {
                    Settled::Unchanged => listing.entries.push(r.entry),
                    Settled::Finished(entry) => {
                        listing.entries.push(entry.clone());
                        finished.push(entry);
                    }
                    Settled::Dropped => {}
                },
                Ok(_) => {}
                Err(_) if interrupted_before_record(&e.path()) => {}
                Err(err) => listing.damaged.push(Problem::new(id, ProblemKind::Unreadable, err.to_string())),
            }
        }
        listing.entries.sort_by(|a, b| b.deleted_at_ms.cmp(&a.deleted_at_ms).then_with(|| b.id.cmp(&a.id)));
        Ok((listing, finished))
    }

    /// Finishes a delete (or a team pull's [`trash_file`](Memdir::trash_file)) that was killed
    /// after writing its record `r` in `dir` and before moving the file: no file in the entry,
    /// no restore under way, and the memory at its place with the revision the record holds.
    /// The user asked for it to be deleted, so the delete is carried out. If the memory has
    /// changed since, the record is about a text that is no longer there and is dropped; the
    /// memory stays. Entries of older records (no revision) are left as they are: restoring
    /// them clears them.
    fn settle(&self, dir: &Path, r: Record) -> Settled {
        let rel = r.entry.original_rel_path.clone();
        let base = rel.rsplit('/').next().unwrap_or(&rel);
        let cut_short = || fs::symlink_metadata(dir.join(base)).is_err() && fs::symlink_metadata(dir.join(RESTORING_FILE)).is_err();
        let Some(recorded) = r.revision else { return Settled::Unchanged };
        if !cut_short() {
            return Settled::Unchanged;
        }
        // The record is data on disk: its path is held to the rules a delete's was.
        let synced = validate_topic_path(&rel).is_err();
        if synced && validate_synced_rel(&rel).is_err() {
            return Settled::Unchanged;
        }
        let Ok(real_root) = self.real_root() else { return Settled::Unchanged };
        let abs = self.abs(&rel);
        let is_link = fs::symlink_metadata(&abs).is_ok_and(|m| m.file_type().is_symlink());
        if self.check_contained(&real_root, &rel, if is_link { abs.parent().unwrap_or(&self.root) } else { &abs }).is_err() {
            return Settled::Unchanged;
        }
        // Looked at again under the entry's lock: a delete still running holds it until done.
        let Ok(_entry_lock) = lock_entry(dir) else { return Settled::Unchanged };
        if !dir.join(RECORD_FILE).exists() || !cut_short() {
            return Settled::Unchanged;
        }
        match revision_of(&abs) {
            None => Settled::Unchanged,
            Some(now) if now.matches(&recorded) => match self.finish_move(&abs, dir, r.entry, Some(&recorded), !synced) {
                Ok(entry) => Settled::Finished(entry),
                Err(_) if dir.exists() => Settled::Unchanged,
                Err(_) => Settled::Dropped,
            },
            Some(_) => match fs::remove_dir_all(dir) {
                Ok(()) => Settled::Dropped,
                Err(_) => Settled::Unchanged,
            },
        }
    }

    /// Puts a deleted memory back where it was, with its index lines. Refuses if something
    /// now exists at that path.
    pub fn restore(&self, id: &str) -> Result<Restored, MemdirError> {
        validate_trash_id(id)?;
        let dir = self.trash_dir.join(id);
        let entry = read_record(&dir, id)?.entry;
        if !same_root(&entry.memdir_root, &self.root) {
            return Err(MemdirError::TrashEntryForeign { id: id.into(), origin: entry.memdir_root });
        }
        // Held while the file moves back and the entry goes, so a listing never takes this
        // restore, half done, for a delete cut short.
        let _entry_lock = lock_entry(&dir)?;
        // The record is data on disk: validate it like any input.
        let rel = entry.original_rel_path.clone();
        // Topic files, and whatever [`trash_file`](Memdir::trash_file) took (any name).
        let synced = validate_topic_path(&rel).is_err();
        if synced {
            validate_synced_rel(&rel)?;
        }
        let base = rel.rsplit('/').next().unwrap_or(&rel);
        let stored = dir.join(base);
        let in_trash = fs::symlink_metadata(&stored).is_ok();
        let real_root = self.ensure_root()?;
        // The name it had, even one a create would now refuse (`.draft.md`): it is put back.
        let abs = if synced { self.index_abs(&real_root, &rel)? } else { self.topic_abs_any_name(&real_root, &rel)? };
        let cleanup = |restored| {
            let cleanup_error = fs::remove_dir_all(&dir).err().map(|e| format!("could not remove {}: {e}", dir.display()));
            Ok(Restored { rel_path: rel.clone(), index_lines_restored: restored, cleanup_error })
        };
        if !in_trash {
            // A delete killed after its record and before the move, or a restore killed after
            // the move: the file is in the memory folder already, and what may still be missing
            // is its index lines (never doubled: an index that points at it is left alone).
            if fs::symlink_metadata(&abs).is_err() {
                return Err(MemdirError::TrashEntryDamaged { id: id.into(), dir: dir.clone(), detail: format!("the file {base} is missing") });
            }
            return cleanup(self.reinsert_lines(&entry)?.iter().map(|(_, n)| n).sum());
        }
        if fs::symlink_metadata(&abs).is_ok() {
            return Err(MemdirError::AlreadyExists { path: rel.clone() });
        }
        if let Some(parent) = abs.parent() {
            fs::create_dir_all(parent).map_err(io_err("create the folder", parent))?;
        }
        // Marks the entry as being restored before anything moves back: killed after the move,
        // it is a restore to finish, not a delete.
        let marker = dir.join(RESTORING_FILE);
        crate::atomic::write_atomic(&marker, b"").map_err(io_err("mark the trash entry as being restored", &marker))?;
        // The index lines first, then the file: a restore killed in between has left a line
        // pointing at a file still in the trash, which the next restore moves (and, the other
        // way round, a line lost with the file back would be found by no restore).
        let inserted = self.reinsert_lines(&entry)?;
        if let Err(e) = move_file(&stored, &abs) {
            let _ = self.take_back_lines(&entry, &inserted);
            return Err(match e.kind() {
                io::ErrorKind::AlreadyExists => MemdirError::AlreadyExists { path: rel.clone() },
                _ => MemdirError::Io { action: "restore", path: abs.clone(), source: e },
            });
        }
        fsync_dir(abs.parent().unwrap_or(&self.root));
        cleanup(inserted.iter().map(|(_, n)| n).sum())
    }

    /// The file trash entry `id` holds, where it lies and its bytes, read without following a
    /// link, so a caller can judge what a [`restore`](Memdir::restore) would put back before
    /// anything moves (the team's write policy for a version a pull replaced). `None` when the
    /// entry holds no file (its file is back in the folder already: a restore cut short) or
    /// holds a symbolic link, which has no content of its own.
    pub fn trashed_content(&self, id: &str) -> Result<Option<(PathBuf, Vec<u8>)>, MemdirError> {
        validate_trash_id(id)?;
        let dir = self.trash_dir.join(id);
        let entry = read_record(&dir, id)?.entry;
        if !same_root(&entry.memdir_root, &self.root) {
            return Err(MemdirError::TrashEntryForeign { id: id.into(), origin: entry.memdir_root });
        }
        let rel = &entry.original_rel_path;
        let stored = dir.join(rel.rsplit('/').next().unwrap_or(rel));
        if fs::symlink_metadata(&stored).is_ok_and(|m| m.file_type().is_symlink()) {
            return Ok(None);
        }
        Ok(read_bytes_no_follow(&stored)?.map(|(bytes, _)| (stored, bytes)))
    }

    /// Deletes a trash entry for good, all or nothing (see [`Memdir::purge_entry`]).
    pub fn purge_trash(&self, id: &str) -> Result<(), MemdirError> {
        validate_trash_id(id)?;
        let dir = self.trash_dir.join(id);
        match read_record(&dir, id) {
            Ok(r) if !same_root(&r.entry.memdir_root, &self.root) => {
                return Err(MemdirError::TrashEntryForeign { id: id.into(), origin: r.entry.memdir_root })
            }
            Err(e @ MemdirError::TrashEntryNotFound { .. }) => return Err(e),
            // A damaged entry can still be purged: that is how the user gets rid of it. So can a
            // newer Mneme's, asked for by its id (never by `empty_trash`, which purges only
            // the entries it read): that is the user's choice, made knowing what it is.
            _ => {}
        }
        self.purge_entry(id, &dir).map_err(|(cause, partly)| purge_refused(0, vec![(id.to_string(), partly)], cause))
    }

    /// Deletes every entry of this memory folder's trash for good, and answers how many went
    /// and how many bytes they held. Entries whose record cannot be read are left: which
    /// folder they came from is unknown (the trash folder may be shared), and
    /// [`Memdir::purge_trash`] removes one by id. An entry the disk will not let go of is
    /// kept whole and the others still go; the error then says which went and which stay.
    pub fn empty_trash(&self) -> Result<EmptiedTrash, MemdirError> {
        let mut emptied = EmptiedTrash::default();
        let mut kept = Vec::new();
        let mut first_cause = None;
        for entry in self.list_trash()?.entries {
            match self.purge_entry(&entry.id, &self.trash_dir.join(&entry.id)) {
                Ok(()) => {
                    emptied.removed += 1;
                    emptied.bytes += entry.size;
                }
                Err((cause, partly)) => {
                    kept.push((entry.id, partly));
                    first_cause.get_or_insert(cause);
                }
            }
        }
        match first_cause {
            Some(cause) => Err(purge_refused(emptied.removed, kept, cause)),
            None => Ok(emptied),
        }
    }

    /// Deletes the entry folder `dir` for good, so that a refusal leaves it whole: it is first
    /// renamed out of the listing (`.purging-<id>`, which no id can be), which is what a
    /// read-only disk or a trash folder this account may not change refuses, before anything
    /// in it goes; then its record goes, then the rest. Should the record or the rest refuse
    /// (an entry folder of another account's), the folder takes its name back: whole when its
    /// record stayed, else listed as damaged, with its files, for another try. The error says
    /// whether it was left partly deleted (`true`). A purge killed after the rename is
    /// finished by the next listing.
    fn purge_entry(&self, id: &str, dir: &Path) -> Result<(), (MemdirError, bool)> {
        // A restore of this entry finishes first.
        let _entry_lock = lock_entry(dir).ok();
        let going = self.trash_dir.join(format!("{PURGING_PREFIX}{id}"));
        fs::rename(dir, &going).map_err(|e| (MemdirError::Io { action: "delete for good", path: dir.to_path_buf(), source: e }, false))?;
        let give_back = |e: io::Error, partly: bool| {
            let _ = fs::rename(&going, dir);
            (MemdirError::Io { action: "delete for good", path: dir.to_path_buf(), source: e }, partly)
        };
        match fs::remove_file(going.join(RECORD_FILE)) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(give_back(e, false)),
        }
        fs::remove_dir_all(&going).map_err(|e| give_back(e, true))?;
        fsync_dir(&self.trash_dir);
        Ok(())
    }

    /// Removes the lines [`reinsert_lines`](Memdir::reinsert_lines) put back (`inserted`, its
    /// answer) when the file they point at could not follow.
    fn take_back_lines(&self, entry: &TrashEntry, inserted: &[(Scope, usize)]) -> Result<(), MemdirError> {
        let root = self.root.clone();
        for &(scope, n) in inserted {
            if n == 0 {
                continue;
            }
            self.edit_index(scope, |doc| {
                let hits: Vec<usize> = doc
                    .entries(scope, &root)
                    .into_iter()
                    .filter(|(i, e)| e.rel_path == entry.original_rel_path && entry.index_lines.iter().any(|l| l.text == doc.lines[*i].text))
                    .map(|(i, _)| i)
                    .collect();
                doc.remove(&hits);
            })?;
        }
        Ok(())
    }

    /// Re-adds a trash entry's index lines where they were, skipping indexes that already
    /// point at the file. Returns how many lines went back to each index.
    fn reinsert_lines(&self, entry: &TrashEntry) -> Result<Vec<(Scope, usize)>, MemdirError> {
        let root = self.root.clone();
        let mut total = Vec::new();
        for scope in [Scope::Private, Scope::Team] {
            let mut lines: Vec<&RemovedIndexLine> =
                entry.index_lines.iter().filter(|l| l.index_rel_path == scope.index_rel_path()).collect();
            if lines.is_empty() {
                continue;
            }
            lines.sort_by_key(|l| l.line_number);
            let (n, _) = self.edit_index(scope, |doc| {
                if doc.entries(scope, &root).iter().any(|(_, e)| e.rel_path == entry.original_rel_path) {
                    return 0;
                }
                // Ascending order: each earlier insert restores the numbering the next expects.
                for l in &lines {
                    doc.insert(l.line_number.saturating_sub(1), l.text.clone());
                }
                lines.len()
            })?;
            total.push((scope, n));
        }
        Ok(total)
    }
}

/// A relative path [`Memdir::trash_file`] accepts: `/`-separated, no empty, `.` or `..`
/// segment, no backslash, NUL or control character, not absolute.
fn validate_synced_rel(rel: &str) -> Result<(), MemdirError> {
    let refuse = |reason: &str| Err(MemdirError::InvalidPath { path: rel.to_string(), reason: reason.to_string() });
    if rel.is_empty() || rel.starts_with('/') || rel.contains('\\') {
        return refuse("give a path relative to the memory folder, separated with '/'");
    }
    if rel.chars().any(char::is_control) {
        return refuse("it contains a control character");
    }
    if rel.split('/').any(|p| matches!(p, "" | "." | "..")) {
        return refuse("it contains an empty, '.' or '..' segment; paths must stay inside the memory folder");
    }
    Ok(())
}

/// Whether two spellings name the same memory folder (`/a/b` and `/a/b/`, or through a link).
fn same_root(a: &Path, b: &Path) -> bool {
    a == b || matches!((fs::canonicalize(a), fs::canonicalize(b)), (Ok(x), Ok(y)) if x == y)
}

/// [`MemdirError::PurgeRefused`]: `deleted` entries went before `cause` stopped the ones in
/// `kept` (each with whether it was left partly deleted).
fn purge_refused(deleted: usize, kept: Vec<(String, bool)>, cause: MemdirError) -> MemdirError {
    let (damaged, kept) = kept.into_iter().partition::<Vec<_>, _>(|(_, partly)| *partly);
    MemdirError::PurgeRefused {
        deleted,
        kept: kept.into_iter().map(|(id, _)| id).collect(),
        damaged: damaged.into_iter().map(|(id, _)| id).collect(),
        cause: Box::new(cause),
    }
}

fn write_record(dir: &Path, entry: &TrashEntry, revision: Option<&Revision>) -> Result<(), MemdirError> {
    let record = Record { entry: entry.clone(), revision: revision.copied() };
    let json = serde_json::to_vec_pretty(&record).map_err(|e| MemdirError::TrashEntryDamaged {
        id: entry.id.clone(),
        dir: dir.to_path_buf(),
        detail: e.to_string(),
    })?;
    let path = dir.join(RECORD_FILE);
    crate::atomic::write_atomic(&path, &json).map_err(io_err("write the trash record", &path))
}

/// Undoes a move to the trash when a later step of the delete failed, and returns the error
/// to report. The entry is removed only once the file is back: if something took its place
/// meanwhile (Claude Code writing a memory of the same name), the entry holds the only copy.
fn put_back(stored: &Path, abs: &Path, dir: &Path, rel: &str, id: &str, cause: MemdirError) -> MemdirError {
    match move_file(stored, abs) {
        Ok(()) => {
            let _ = fs::remove_dir_all(dir);
            cause
        }
        Err(_) => MemdirError::LeftInTrash { path: rel.into(), id: id.into(), cause: Box::new(cause) },
    }
}

/// Whether a trash entry without a readable record is one a delete was killed in before its
/// record was written (and so before the file moved: nothing of the user's is in it). Such a
/// folder holds nothing but a killed writer's temporary file, which goes with the folder; one
/// still being written by a live delete is left alone and not listed.
fn interrupted_before_record(dir: &Path) -> bool {
    if fs::symlink_metadata(dir.join(RECORD_FILE)).is_ok() {
        return false;
    }
    crate::atomic::remove_stale_temps(dir);
    let Ok(mut names) = fs::read_dir(dir) else { return false };
    let only_temps = names.all(|n| {
        n.is_ok_and(|n| n.file_name().to_str().is_some_and(|n| n.starts_with(crate::atomic::TEMP_PREFIX) && n.ends_with(crate::atomic::TEMP_SUFFIX)))
    });
    if only_temps {
        // Empty now unless a live delete is writing its record there.
        let _ = fs::remove_dir(dir);
    }
    only_temps
}

/// The most of a trash record read: it holds a path and a few index lines, so a record past
/// this is not one Mneme wrote.
const MAX_RECORD_BYTES: u64 = 1 << 20;

/// A trash entry's record. Read only as a plain file, opened without waiting and up to
/// [`MAX_RECORD_BYTES`]: a FIFO in its place (the trash folder is a folder like any other)
/// would have held `restore`, `purge` and the trash list for ever.
fn read_record(dir: &Path, id: &str) -> Result<Record, MemdirError> {
    let path = dir.join(RECORD_FILE);
    let damaged = |detail: String| MemdirError::TrashEntryDamaged { id: id.into(), dir: dir.to_path_buf(), detail };
    let bytes = match crate::open::read_own_file(&path, MAX_RECORD_BYTES) {
        Ok(Some(b)) => b,
        Ok(None) if !dir.exists() => return Err(MemdirError::TrashEntryNotFound { id: id.into() }),
        Ok(None) => return Err(damaged(format!("its record {} is missing", path.display()))),
        Err(e) => return Err(damaged(e.to_string())),
    };
    // Before the rest is read as this build's format: a newer record may mean something else
    // by the same fields, and a restore or a settle acting on that misreading moves files.
    mneme_core::own_files::check_version_of(&bytes, RECORD_VERSION.into())
        .map_err(|source| MemdirError::TrashEntryNewer { id: id.into(), dir: dir.to_path_buf(), source })?;
    let record: Record = serde_json::from_slice(&bytes).map_err(|e| MemdirError::TrashEntryDamaged {
        id: id.into(),
        dir: dir.to_path_buf(),
        detail: format!("its record does not parse: {e}"),
    })?;
    if record.entry.id != id {
        return Err(MemdirError::TrashEntryDamaged {
            id: id.into(),
            dir: dir.to_path_buf(),
            detail: format!("its record names a different id ({})", record.entry.id),
        });
    }
    Ok(record)
}

/// The lock on a trash entry's folder, held by whoever moves a file in or out of it.
fn lock_entry(dir: &Path) -> Result<crate::file_lock::FileLock, MemdirError> {
    crate::file_lock::FileLock::take_folder(dir).map_err(io_err("lock the trash entry", dir))
}

/// The revision of what a delete is about to move: a plain file's bytes, or a link's target
/// (a link is trashed as a link). `None` when it cannot be read (nothing to tell it by).
fn revision_of(abs: &Path) -> Option<Revision> {
    let meta = fs::symlink_metadata(abs).ok()?;
    if meta.file_type().is_symlink() {
        let target = fs::read_link(abs).ok()?;
        return Some(Revision::from_parts(target.as_os_str().as_encoded_bytes(), 0));
    }
    let (bytes, meta) = read_bytes_no_follow(abs).ok()??;
    Some(Revision::of(&bytes, &meta))
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    /// A memory folder holding `files` (path in the folder, text) and its `Memdir`: the set-up
    /// most tests here start from.
    fn folder_with(files: &[(&str, &str)]) -> (TestDir, Memdir) {
        let t = TestDir::new();
        for (rel, text) in files {
            t.write(rel, text);
        }
        let m = t.memdir();
        (t, m)
    }

    /// The folder of trash entry `id`.
    fn entry_dir(t: &TestDir, id: &str) -> PathBuf {
        t.path().join("trash").join(id)
    }

    /// A second memory folder beside `t`'s, sharing its trash.
    fn other_folder(t: &TestDir) -> Memdir {
        std::fs::create_dir_all(t.path().join("other")).unwrap();
        Memdir::new(t.path().join("other"), t.path().join("trash"), clock())
    }

    #[test]
    fn delete_and_restore_round_trip() {
        let t = TestDir::new();
        let index = "# Memories\n- [A](a.md) — first\n- [B](b.md) — second\n- [A again](a.md)\n";
        t.write("MEMORY.md", index);
        t.write("a.md", "---\nname: a\n---\nA body\n");
        t.write("b.md", "b");
        let m = t.memdir();
        let e = m.delete("a.md").unwrap();
        assert_eq!(e.id, format!("{}000-a", NOW_SECS));
        assert_eq!(e.deleted_at_ms, NOW_SECS * 1000);
        assert_eq!(e.original_rel_path, "a.md");
        assert_eq!(
            e.index_lines.iter().map(|l| (l.line_number, l.text.as_str())).collect::<Vec<_>>(),
            [(2, "- [A](a.md) — first"), (4, "- [A again](a.md)")]
        );
        assert_eq!(t.tree(), "MEMORY.md: # Memories\\n- [B](b.md) — second\\n\nb.md: b");
        // The trash is outside the memory folder and holds the file and its record.
        let stored = entry_dir(&t, &e.id).join("a.md");
        assert_eq!(std::fs::read_to_string(stored).unwrap(), "---\nname: a\n---\nA body\n");
        let listing = m.list_trash().unwrap();
        assert_eq!(listing.entries, vec![e.clone()]);

        let r = m.restore(&e.id).unwrap();
        assert_eq!((r.rel_path.as_str(), r.index_lines_restored, r.cleanup_error), ("a.md", 2, None));
        assert_eq!(t.read("MEMORY.md"), index);
        assert_eq!(t.read("a.md"), "---\nname: a\n---\nA body\n");
        assert!(m.list_trash().unwrap().entries.is_empty());
        assert_eq!(m.restore(&e.id).unwrap_err().code(), "trash-entry-not-found");
    }

    #[test]
    fn restore_refuses_to_overwrite() {
        let (t, m) = folder_with(&[("a.md", "old")]);
        let e = m.delete("a.md").unwrap();
        t.write("a.md", "new memory with the same name");
        assert_eq!(m.restore(&e.id).unwrap_err().code(), "already-exists");
        assert_eq!(t.read("a.md"), "new memory with the same name");
        assert_eq!(m.list_trash().unwrap().entries.len(), 1, "still in the trash");
    }

    /// What a restore would put back can be read first, and reading it moves nothing; a link
    /// has no content of its own, and another folder's entry is not this folder's to read.
    #[test]
    #[cfg(unix)]
    fn a_trashed_file_is_read_where_it_lies() {
        let (t, m) = folder_with(&[("team/t.md", "mine\n"), ("team/target.md", "x")]);
        let e = m.trash_copy("team/t.md").unwrap();
        let (at, bytes) = m.trashed_content(&e.id).unwrap().unwrap();
        assert_eq!((at, bytes), (entry_dir(&t, &e.id).join("t.md"), b"mine\n".to_vec()));
        assert_eq!(m.list_trash().unwrap().entries, vec![e.clone()], "nothing moved");
        std::os::unix::fs::symlink("target.md", t.mem().join("team/link.md")).unwrap();
        let link = m.trash_file("team/link.md").unwrap();
        assert_eq!(m.trashed_content(&link.id).unwrap(), None);
        assert_eq!(other_folder(&t).trashed_content(&e.id).unwrap_err().code(), "trash-entry-foreign");
        assert_eq!(m.trashed_content("1-none").unwrap_err().code(), "trash-entry-not-found");
    }

    #[test]
    fn a_failed_delete_keeps_the_file_in_the_trash_when_it_cannot_go_back() {
        let t = TestDir::new();
        t.write("a.md", "the only copy");
        let trash = t.path().join("trash").join("1-a");
        std::fs::create_dir_all(&trash).unwrap();
        let (abs, stored) = (t.mem().join("a.md"), trash.join("a.md"));
        move_file(&abs, &stored).unwrap();
        // Claude Code writes a memory of the same name before the delete is undone.
        t.write("a.md", "written meanwhile");
        let cause = MemdirError::ChangedOnDisk { path: "MEMORY.md".into() };
        let e = put_back(&stored, &abs, &trash, "a.md", "1-a", cause);
        assert_eq!(e.code(), "changed-on-disk");
        let message = e.to_string();
        assert!(message.contains("MEMORY.md changed on disk") && message.contains("trash entry \"1-a\""), "{message}");
        assert_eq!(std::fs::read_to_string(&stored).unwrap(), "the only copy");
        assert_eq!(t.read("a.md"), "written meanwhile");

        // With the place free, the file goes back and the entry goes away.
        std::fs::remove_file(&abs).unwrap();
        let e = put_back(&stored, &abs, &trash, "a.md", "1-a", MemdirError::ChangedOnDisk { path: "MEMORY.md".into() });
        assert!(matches!(e, MemdirError::ChangedOnDisk { .. }));
        assert_eq!(t.read("a.md"), "the only copy");
        assert!(!trash.exists());
    }

    /// A purge renames its entry out of the listing before anything in it goes; one stopped
    /// after that rename (killed) is finished by the next listing, and never listed meanwhile.
    #[test]
    fn a_purge_stopped_after_its_rename_is_finished_by_the_next_listing() {
        let (t, m) = folder_with(&[("a.md", "a"), ("b.md", "b")]);
        let a = m.delete("a.md").unwrap();
        let b = m.delete("b.md").unwrap();
        std::fs::rename(entry_dir(&t, &a.id), t.path().join("trash").join(format!("{PURGING_PREFIX}{}", a.id))).unwrap();
        let listing = m.list_trash().unwrap();
        assert_eq!(listing.entries.iter().map(|e| e.id.as_str()).collect::<Vec<_>>(), [b.id.as_str()]);
        assert!(listing.damaged.is_empty(), "{listing:?}");
        let left: Vec<String> = std::fs::read_dir(t.path().join("trash")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        assert_eq!(left, std::slice::from_ref(&b.id));
        m.purge_trash(&b.id).unwrap();
        assert_eq!(std::fs::read_dir(t.path().join("trash")).unwrap().count(), 0);
    }

    #[test]
    fn a_linked_index_is_edited_where_it_lives_and_stays_a_link() {
        let t = TestDir::new();
        t.write("notes/index.md", "- [A](a.md) — first\n- [B](b.md) — second\n");
        std::os::unix::fs::symlink("notes/index.md", t.mem().join("MEMORY.md")).unwrap();
        t.write("a.md", "a");
        let m = t.memdir();
        m.delete("a.md").unwrap();
        assert!(std::fs::symlink_metadata(t.mem().join("MEMORY.md")).unwrap().file_type().is_symlink());
        assert_eq!(t.read("notes/index.md"), "- [B](b.md) — second\n");
    }

    #[test]
    fn restore_does_not_duplicate_an_index_line() {
        let (t, m) = folder_with(&[("MEMORY.md", "- [A](a.md)\n"), ("a.md", "a")]);
        let e = m.delete("a.md").unwrap();
        t.write("MEMORY.md", "- [A, re-added by hand](a.md)\n");
        assert_eq!(m.restore(&e.id).unwrap().index_lines_restored, 0);
        assert_eq!(t.read("MEMORY.md"), "- [A, re-added by hand](a.md)\n");
    }

    /// A restore killed after the file moved back: the entry keeps its record (and the mark a
    /// restore leaves) but not the file, which is in the memory folder. Restoring it again puts
    /// back the missing line and clears the entry, instead of calling it damaged.
    #[test]
    fn restoring_an_entry_whose_file_is_already_back_finishes_the_restore() {
        let (t, m) = folder_with(&[("MEMORY.md", "- [A](a.md)\n- [B](b.md)\n"), ("a.md", "a")]);
        let e = m.delete("a.md").unwrap();
        let entry = entry_dir(&t, &e.id);
        std::fs::write(entry.join(RESTORING_FILE), "").unwrap();
        std::fs::rename(entry.join("a.md"), t.mem().join("a.md")).unwrap();
        assert_eq!(m.list_trash().unwrap().entries.len(), 1, "still listed: restoring it finishes the job");
        let r = m.restore(&e.id).unwrap();
        assert_eq!((r.index_lines_restored, r.cleanup_error), (1, None));
        assert_eq!(t.read("MEMORY.md"), "- [A](a.md)\n- [B](b.md)\n");
        assert_eq!(t.read("a.md"), "a");
        assert!(m.list_trash().unwrap().entries.is_empty());
        // With neither copy left, the entry is damaged and says so.
        t.write("b.md", "b");
        let e = m.delete("b.md").unwrap();
        std::fs::remove_file(entry_dir(&t, &e.id).join("b.md")).unwrap();
        assert_eq!(m.restore(&e.id).unwrap_err().code(), "trash-entry-damaged");
    }

    /// What a delete killed between writing its record and moving the file leaves: the entry
    /// with its record (the index lines it was about to remove, the file's revision) and no
    /// file; the memory and its index line still in place.
    fn delete_cut_short(t: &TestDir, m: &Memdir, rel: &str) -> TrashEntry {
        let (id, dir) = m.new_trash_entry_dir(NOW_SECS * 1000, rel).unwrap();
        let abs = m.abs(rel);
        let entry = TrashEntry {
            version: RECORD_VERSION,
            id,
            original_rel_path: rel.into(),
            memdir_root: m.root.clone(),
            deleted_at_ms: NOW_SECS * 1000,
            index_lines: m.index_lines_of(rel),
            size: std::fs::metadata(&abs).unwrap().len(),
        };
        write_record(&dir, &entry, revision_of(&abs).as_ref()).unwrap();
        assert!(t.exists(rel));
        entry
    }

    /// The trash listing finishes such a delete, since a delete is what was asked: the memory
    /// and its index line go, the entry holds them, and a restore brings both back. Before,
    /// the entry was listed while the memory stayed, and restoring it only removed the entry.
    #[test]
    fn a_delete_cut_short_before_its_move_is_finished_by_the_listing() {
        let (t, m) = folder_with(&[("MEMORY.md", "- [A](a.md) — first\n- [B](b.md) — second\n"), ("a.md", "---\nname: a\n---\nA body\n")]);
        let cut = delete_cut_short(&t, &m, "a.md");
        let listing = m.list_trash().unwrap();
        assert_eq!(listing.entries, vec![cut.clone()], "listed once, as the delete recorded it");
        assert!(!t.exists("a.md"), "the memory went to the trash");
        assert_eq!(t.read("MEMORY.md"), "- [B](b.md) — second\n");
        let stored = entry_dir(&t, &cut.id).join("a.md");
        assert_eq!(std::fs::read_to_string(stored).unwrap(), "---\nname: a\n---\nA body\n");
        m.restore(&cut.id).unwrap();
        assert_eq!(t.read("MEMORY.md"), "- [A](a.md) — first\n- [B](b.md) — second\n");
        assert_eq!(t.read("a.md"), "---\nname: a\n---\nA body\n");
        assert!(m.list_trash().unwrap().entries.is_empty());
    }

    /// Deleting the memory again finishes the delete that was cut short and answers its entry:
    /// one entry, not two. A team pull's trash move cut short the same way is finished too.
    #[test]
    fn the_next_delete_finishes_a_delete_cut_short() {
        let (t, m) = folder_with(&[("MEMORY.md", "- [A](a.md) — first\n"), ("a.md", "a"), ("team/notes.txt", "n")]);
        let cut = delete_cut_short(&t, &m, "a.md");
        let synced = delete_cut_short(&t, &m, "team/notes.txt");
        let again = m.delete("a.md").unwrap();
        assert_eq!(again, cut);
        assert!(!t.exists("a.md") && !t.exists("team/notes.txt"));
        assert_eq!(t.read("MEMORY.md"), "");
        let mut ids: Vec<String> = m.list_trash().unwrap().entries.into_iter().map(|e| e.id).collect();
        ids.sort();
        let mut want = vec![cut.id, synced.id];
        want.sort();
        assert_eq!(ids, want);
    }

    /// A memory changed after its delete was cut short is no longer what the user asked to
    /// delete: the record goes and the memory stays as it is now.
    #[test]
    fn a_delete_cut_short_of_a_memory_changed_since_is_dropped() {
        let (t, m) = folder_with(&[("MEMORY.md", "- [A](a.md) — first\n"), ("a.md", "a")]);
        let cut = delete_cut_short(&t, &m, "a.md");
        t.write("a.md", "a, edited after the delete was cut short");
        let listing = m.list_trash().unwrap();
        assert!(listing.entries.is_empty() && listing.damaged.is_empty(), "{listing:?}");
        assert!(!entry_dir(&t, &cut.id).exists());
        assert_eq!(t.read("a.md"), "a, edited after the delete was cut short");
        assert_eq!(t.read("MEMORY.md"), "- [A](a.md) — first\n");
    }

    /// A delete still running (its entry locked) is not taken for one cut short.
    #[test]
    fn a_running_delete_is_left_to_finish() {
        let (t, m) = folder_with(&[("a.md", "a")]);
        let cut = delete_cut_short(&t, &m, "a.md");
        let dir = entry_dir(&t, &cut.id);
        let held = lock_entry(&dir).unwrap();
        let lister = {
            let m = t.memdir();
            std::thread::spawn(move || m.list_trash().unwrap())
        };
        // The lister waits on the lock; the running delete moves the file meanwhile.
        move_file(&t.mem().join("a.md"), &dir.join("a.md")).unwrap();
        drop(held);
        assert_eq!(lister.join().unwrap().entries, vec![cut]);
        assert_eq!(std::fs::read_to_string(dir.join("a.md")).unwrap(), "a");
    }

    /// A delete killed while writing its record has moved nothing: its entry folder holds only
    /// the killed writer's temporary file, and the trash neither lists it nor keeps it.
    #[test]
    #[cfg(target_os = "linux")]
    fn an_entry_left_by_a_delete_killed_before_its_record_is_cleared() {
        let (t, m) = folder_with(&[]);
        let entry = t.path().join("trash").join("1-a");
        std::fs::create_dir_all(&entry).unwrap();
        // A pid far above any the kernel hands out (pid_max is at most 2^22): a dead writer.
        std::fs::write(entry.join(".mneme-4194399-0.tmp"), "{\"vers").unwrap();
        let listing = m.list_trash().unwrap();
        assert!(listing.entries.is_empty() && listing.damaged.is_empty(), "{listing:?}");
        assert!(!entry.exists());
    }

    #[test]
    fn team_deletes_touch_the_team_index() {
        let (t, m) = folder_with(&[("team/MEMORY.md", "- [T](t.md) — team\n"), ("team/t.md", "t")]);
        let e = m.delete("team/t.md").unwrap();
        assert_eq!(e.index_lines[0].index_rel_path, "team/MEMORY.md");
        assert_eq!(t.read("team/MEMORY.md"), "");
        m.restore(&e.id).unwrap();
        assert_eq!(t.read("team/MEMORY.md"), "- [T](t.md) — team\n");
    }

    #[test]
    fn synced_files_trash_without_index_edits_and_restore() {
        let (t, m) = folder_with(&[("team/MEMORY.md", "- [T](t.md)\n"), ("team/t.md", "t"), ("team/notes.txt", "n")]);
        let e = m.trash_file("team/t.md").unwrap();
        assert!(e.index_lines.is_empty());
        assert!(!t.exists("team/t.md"));
        assert_eq!(t.read("team/MEMORY.md"), "- [T](t.md)\n", "the team index is the team's");
        let idx = m.trash_file("team/MEMORY.md").unwrap();
        let txt = m.trash_copy("team/notes.txt").unwrap();
        assert_eq!(t.read("team/notes.txt"), "n", "a copy leaves the file in place");
        assert_eq!(std::fs::read_to_string(entry_dir(&t, &txt.id).join("notes.txt")).unwrap(), "n");
        assert_eq!(m.list_trash().unwrap().entries.len(), 3);
        m.restore(&e.id).unwrap();
        m.restore(&idx.id).unwrap();
        assert_eq!(t.read("team/t.md"), "t");
        assert_eq!(t.read("team/MEMORY.md"), "- [T](t.md)\n");
        assert_eq!(m.restore(&txt.id).unwrap_err().code(), "already-exists");
        for bad in ["../x.txt", "/abs", "team//x", "team\\x", ""] {
            assert_eq!(m.trash_file(bad).unwrap_err().code(), "invalid-path", "{bad}");
        }
        assert_eq!(m.trash_file("team/missing.md").unwrap_err().code(), "not-found");
    }

    #[test]
    fn same_instant_deletes_get_distinct_ids_newest_first() {
        let (t, m) = folder_with(&[("a.md", "1")]);
        let first = m.delete("a.md").unwrap();
        t.write("a.md", "2");
        let second = m.delete("a.md").unwrap();
        assert_ne!(first.id, second.id);
        let ids: Vec<_> = m.list_trash().unwrap().entries.into_iter().map(|e| e.id).collect();
        assert_eq!(ids, [second.id.clone(), first.id.clone()]);
        m.purge_trash(&first.id).unwrap();
        assert_eq!(m.list_trash().unwrap().entries.len(), 1);
    }

    #[test]
    fn bad_ids_trash_inside_memdir_and_damaged_records() {
        let (t, m) = folder_with(&[("a.md", "a")]);
        for bad in ["../a", "x/y", ""] {
            assert_eq!(m.restore(bad).unwrap_err().code(), "invalid-input", "{bad}");
        }
        let inside = Memdir::new(t.mem(), t.mem().join(".trash"), clock());
        assert_eq!(inside.delete("a.md").unwrap_err().code(), "trash-inside-memdir");
        assert!(t.exists("a.md"));
        let e = m.delete("a.md").unwrap();
        std::fs::write(entry_dir(&t, &e.id).join("record.json"), "{not json").unwrap();
        let listing = m.list_trash().unwrap();
        assert!(listing.entries.is_empty());
        assert_eq!(listing.damaged.len(), 1);
        assert_eq!(m.restore(&e.id).unwrap_err().code(), "trash-entry-damaged");
        m.purge_trash(&e.id).unwrap();
    }

    /// A record a newer Mneme wrote (a higher `version`) was read as this build's: restore
    /// acted on it and emptying the trash removed it with the others.
    #[test]
    fn a_newer_mneme_s_trash_record_is_not_restored_emptied_or_settled() {
        let (t, m) = folder_with(&[("a.md", "a"), ("b.md", "b")]);
        let newer = m.delete("a.md").unwrap();
        let plain = m.delete("b.md").unwrap();
        let dir = entry_dir(&t, &newer.id);
        let mut record: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join(RECORD_FILE)).unwrap()).unwrap();
        record["version"] = serde_json::json!(RECORD_VERSION + 1);
        let written = serde_json::to_vec(&record).unwrap();
        std::fs::write(dir.join(RECORD_FILE), &written).unwrap();

        let err = m.restore(&newer.id).unwrap_err();
        assert_eq!(err.code(), "trash-entry-newer", "{err}");
        assert!(err.to_string().contains("update Mneme") && err.to_string().contains(&newer.id), "{err}");
        assert!(!t.exists("a.md"), "not put back");
        let listing = m.list_trash().unwrap();
        assert_eq!(listing.entries.iter().map(|e| e.id.clone()).collect::<Vec<_>>(), std::slice::from_ref(&plain.id));
        assert_eq!(listing.damaged.len(), 1);
        assert!(listing.damaged[0].message.contains("update Mneme"), "{:?}", listing.damaged);
        assert_eq!(m.empty_trash().unwrap().removed, 1);
        assert_eq!(std::fs::read(dir.join(RECORD_FILE)).unwrap(), written, "left as it was");
        assert!(dir.join("a.md").exists());
        // Purged by its id, as the user asks.
        m.purge_trash(&newer.id).unwrap();
        assert!(!dir.exists());
    }

    /// Emptying takes this folder's entries only: another folder sharing the trash keeps its
    /// own, and so does an entry whose record is damaged (its folder is unknown).
    #[test]
    fn emptying_the_trash_removes_this_folders_entries_only() {
        let (t, m) = folder_with(&[("a.md", "12345"), ("b.md", "123"), ("c.md", "c")]);
        m.delete("a.md").unwrap();
        m.delete("b.md").unwrap();
        let damaged = m.delete("c.md").unwrap();
        std::fs::write(entry_dir(&t, &damaged.id).join("record.json"), "{not json").unwrap();
        let other = other_folder(&t);
        std::fs::write(t.path().join("other/d.md"), "d").unwrap();
        other.delete("d.md").unwrap();

        assert_eq!(m.empty_trash().unwrap(), EmptiedTrash { removed: 2, bytes: 8 });
        let left = m.list_trash().unwrap();
        assert!(left.entries.is_empty());
        assert_eq!(left.damaged.len(), 1, "the damaged entry stays until purged by id");
        assert_eq!(other.list_trash().unwrap().entries.len(), 1, "the other folder's entry stays");
        assert_eq!(m.empty_trash().unwrap(), EmptiedTrash::default());
    }

    #[test]
    fn foreign_entries_are_refused() {
        let t = TestDir::new();
        t.write("a.md", "a");
        let e = t.memdir().delete("a.md").unwrap();
        let other = other_folder(&t);
        assert!(other.list_trash().unwrap().entries.is_empty());
        assert_eq!(other.restore(&e.id).unwrap_err().code(), "trash-entry-foreign");
    }

    #[cfg(unix)]
    #[test]
    fn an_escaping_link_is_trashed_as_a_link() {
        let t = TestDir::new();
        t.write_outside("target.md", "not ours");
        std::os::unix::fs::symlink(t.path().join("target.md"), t.mem().join("link.md")).unwrap();
        let m = t.memdir();
        assert_eq!(m.read("link.md").unwrap_err().code(), "outside-memdir");
        let e = m.delete("link.md").unwrap();
        assert!(!t.exists("link.md"));
        assert_eq!(std::fs::read_to_string(t.path().join("target.md")).unwrap(), "not ours");
        m.restore(&e.id).unwrap();
        assert!(std::fs::symlink_metadata(t.mem().join("link.md")).unwrap().file_type().is_symlink());
    }

    #[test]
    fn a_differently_spelled_root_is_the_same_folder() {
        let t = TestDir::new();
        t.write("a.md", "a");
        let e = t.memdir().delete("a.md").unwrap();
        let slash = Memdir::new(format!("{}/", t.mem().display()), t.path().join("trash"), clock());
        assert_eq!(slash.list_trash().unwrap().entries.len(), 1);
        slash.restore(&e.id).unwrap();
        assert!(t.exists("a.md"));
    }

    #[cfg(unix)]
    #[test]
    fn record_paths_are_validated_on_restore() {
        let (t, m) = folder_with(&[("a.md", "a")]);
        let e = m.delete("a.md").unwrap();
        let mut forged = e.clone();
        forged.original_rel_path = "../escaped.md".into();
        std::fs::write(entry_dir(&t, &e.id).join("record.json"), serde_json::to_vec(&forged).unwrap()).unwrap();
        assert_eq!(m.restore(&e.id).unwrap_err().code(), "invalid-path");
        assert!(!t.path().join("escaped.md").exists());
    }
}
