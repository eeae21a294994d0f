//! Reading and writing memories without ever losing one.
//!
//! Every write is atomic: the new bytes go to a temporary file in the same folder (named
//! `.mneme-<pid>-<n>.tmp`, which Claude Code's `*.md` scan ignores), are fsynced, and the
//! temporary file is renamed over the target; then the folder is fsynced so the rename
//! itself survives a power cut. An existing file's permissions (and, where allowed, owner)
//! carry over. New files are published with a hard link, which fails rather than replacing
//! anything that appeared meanwhile.
//!
//! Every edit of an existing file names the [`Revision`] the caller read and is refused with
//! [`MemdirError::ChangedOnDisk`] if the file no longer matches. The check runs once before
//! the temporary file is written and again just before the rename. Claude Code takes no locks,
//! so a write landing between that last check and the rename can still be replaced; the
//! window is the duration of one `rename` call.

use super::error::io_err;
use super::frontmatter_edit::{self, Changes, Refusal};
use super::health::DanglingLink;
use super::index::{encode_target, render_entry};
use super::pending::{sync_lines, EntryChange, PendingSync};
use super::path::{relative_to_dir, slugify, validate_topic_path};
use super::scan::{build_topic, read_bytes, stem_of};
use super::{Memdir, MemdirError, Problem, Revision, Scope, TopicFile};
use mneme_core::MemoryType;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::fs::{self, Metadata};
use std::io;
use std::path::{Path, PathBuf};


/// A new memory for [`Memdir::create`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewMemory {
    /// The `name:` field and the index line's title; one line.
    pub name: String,
    /// The `description:` field and the index line's hook; one line.
    pub description: String,
    /// `metadata.type`; omitted from the file when `None`.
    pub memory_type: Option<MemoryType>,
    /// The memory's text, after the frontmatter.
    pub body: String,
    /// The file name relative to the scope's folder (`foo.md`, `notes/foo.md`); derived from
    /// the name with [`slugify`] when `None`.
    pub file_name: Option<String>,
    /// Private (`MEMORY.md`) or team (`team/`, `team/MEMORY.md`).
    pub scope: Scope,
}

/// What [`Memdir::create`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Created {
    /// The new file, relative to the memory folder.
    pub rel_path: String,
    /// Its revision, for a following edit.
    pub revision: Revision,
    /// The index the entry is in.
    pub index_rel_path: String,
    /// The entry line (the existing one if the index already pointed at this file).
    pub index_line: String,
    /// Its 1-based line number.
    pub index_line_number: usize,
    /// False when an existing line already pointed at the new file.
    pub index_line_added: bool,
    /// True when the entry falls past the 200-line / 25,000-unit cap, so Claude Code will
    /// not see it until the index is trimmed.
    pub index_line_past_cap: bool,
}

/// A topic file with its full text and the revision to hand back when saving.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryFile {
    /// The parsed view.
    pub topic: TopicFile,
    /// The whole file (invalid UTF-8 shown as U+FFFD).
    pub content: String,
    /// What was read.
    pub revision: Revision,
    /// Anything odd about the file (malformed frontmatter, not UTF-8, …).
    pub problems: Vec<Problem>,
}

/// Field edits for [`Memdir::update_fields`]; `None` leaves a part as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldEdits {
    /// New `name:`.
    pub name: Option<String>,
    /// New `description:`.
    pub description: Option<String>,
    /// New type, written in the generation the file already uses.
    pub memory_type: Option<MemoryType>,
    /// New body (everything after the frontmatter).
    pub body: Option<String>,
}

/// What [`Memdir::update_fields`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FieldsUpdated {
    /// The file's new revision.
    pub revision: Revision,
    /// Index lines whose title or hook followed a name or description change.
    pub index_lines_updated: usize,
    /// Set when the file was saved but its index line could not be updated.
    pub index_error: Option<String>,
}

/// What [`Memdir::rename`] did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Renamed {
    /// The old path.
    pub old_rel_path: String,
    /// The new path.
    pub new_rel_path: String,
    /// Index lines whose target now points at the new path.
    pub index_lines_rewritten: usize,
    /// `[[old-stem]]` links that no longer match any memory's name or file stem. Mneme does
    /// not rewrite other memories' bodies; these are for the user to fix.
    pub links_to_old_name: Vec<DanglingLink>,
}

impl Memdir {
    /// Runs the team-write check ([`Memdir::with_team_write_check`]) on content bound for team
    /// memory, as Claude Code refuses a Write or Edit into the team folder: the folder is
    /// shared with everyone in the repository.
    fn check_team_write(&self, rel: &str, content: &str) -> Result<(), MemdirError> {
        match self.team_write_check {
            Some(check) if Scope::of(rel) == Scope::Team => {
                check(content).map_err(|refused| MemdirError::SecretsInTeamMemory { path: rel.into(), refused: refused.0 })
            }
            _ => Ok(()),
        }
    }
}

/// A one-line text field: not blank, no line breaks or other control characters except tab.
/// A file's bytes as text to edit and write back, refused when they are not UTF-8 (an editor
/// showed replacement characters for them, and writing would put those over the bytes).
pub(crate) fn text_of(rel: &str, bytes: Vec<u8>) -> Result<String, MemdirError> {
    String::from_utf8(bytes).map_err(|e| MemdirError::NotUtf8Text {
        path: rel.into(),
        problem: crate::text_form::NotUtf8::of(e.as_bytes()).unwrap_or(crate::text_form::NotUtf8::Truncated),
    })
}

fn validate_line(field: &'static str, value: &str) -> Result<(), MemdirError> {
    if value.trim().is_empty() {
        return Err(MemdirError::InvalidInput { field, reason: "it is empty; write a few words".into() });
    }
    if value.contains(['\n', '\r']) {
        return Err(MemdirError::InvalidInput {
            field,
            reason: "it must be one line (the index holds one line per memory); move detail into the body".into(),
        });
    }
    if value.chars().any(|c| c.is_control() && c != '\t') {
        return Err(MemdirError::InvalidInput { field, reason: "it contains a control character".into() });
    }
    Ok(())
}

/// [`crate::atomic::write_temp`] in `dir` for saving `target`, with the memory folder's error:
/// a disk's refusal names `target`, the file being saved, not the folder its temporary file
/// was to go in ([`crate::atomic::Refusal::told_as`]).
fn write_temp(target: &Path, dir: &Path, bytes: &[u8], like: Option<&Metadata>) -> Result<(PathBuf, Metadata), MemdirError> {
    crate::atomic::write_temp(dir, bytes, like).map_err(|source| {
        let (action, path) = crate::atomic::Refusal::told_as(&source, target, "write a temporary file in", dir);
        MemdirError::Io { action, path: path.to_path_buf(), source }
    })
}

pub(crate) use crate::atomic::fsync_dir;

/// Moves a file without ever replacing one at `dst`. On Linux one `renameat2` with
/// `RENAME_NOREPLACE`: atomic, so a writer that replaces `src` meanwhile (Claude Code saves by
/// renaming a new file over the old) has its file moved whole or not at all. Elsewhere, and on
/// file systems that refuse the flag: a hard link then an unlink of `src`, but only while `src`
/// is still the file that was linked; falling back to check-then-rename where hard links are
/// unsupported and to copy-then-remove across file systems (the trash may live on another
/// disk).
pub(crate) fn move_file(src: &Path, dst: &Path) -> io::Result<()> {
    // A new spelling of the same name on a disk that folds letter case: `dst` "exists" only as `src` itself, which a no-replace move refuses.
    if crate::fold::same_entry(src, dst) {
        return fs::rename(src, dst);
    }
    #[cfg(any(target_os = "linux", target_os = "android"))]
    {
        use rustix::fs::{renameat_with, RenameFlags, CWD};
        use rustix::io::Errno;
        match renameat_with(CWD, src, CWD, dst, RenameFlags::NOREPLACE) {
            Ok(()) => return Ok(()),
            Err(Errno::EXIST) => return Err(io::Error::from(io::ErrorKind::AlreadyExists)),
            Err(Errno::XDEV) => return copy_then_remove(src, dst),
            // An old kernel or a file system without the flag: the portable way below.
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => {}
            Err(e) => return Err(e.into()),
        }
    }
    link_then_unlink(src, dst, || {})
}

/// The portable [`move_file`]. `between` runs after the link and before the check (a test's
/// stand-in for a writer replacing `src` in that window).
fn link_then_unlink(src: &Path, dst: &Path, between: impl FnOnce()) -> io::Result<()> {
    match fs::hard_link(src, dst) {
        Ok(()) => {
            between();
            // A writer that renamed a new file over `src` since the link: unlinking `src` now
            // would delete its file, which exists nowhere else. Both stay.
            if !same_file(src, dst)? {
                return Err(io::Error::other(format!(
                    "{} was replaced while it was being moved to {}; both are kept (the new file at the old path, the moved one at the new path). Keep the one you want and delete the other.",
                    src.display(),
                    dst.display()
                )));
            }
            if let Err(e) = fs::remove_file(src) {
                let _ = fs::remove_file(dst);
                return Err(e);
            }
            Ok(())
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
        Err(_) => {
            if fs::symlink_metadata(dst).is_ok() {
                return Err(io::Error::from(io::ErrorKind::AlreadyExists));
            }
            match fs::rename(src, dst) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::CrossesDevices => copy_then_remove(src, dst),
                Err(e) => Err(e),
            }
        }
    }
}

/// Whether two paths name the same file (device and inode). Where that cannot be told, yes.
fn same_file(a: &Path, b: &Path) -> io::Result<bool> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let (a, b) = (fs::symlink_metadata(a)?, fs::symlink_metadata(b)?);
        Ok(a.dev() == b.dev() && a.ino() == b.ino())
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        Ok(true)
    }
}

/// The move across file systems: a whole copy first ([`crate::atomic::copy_new`]: a copy cut
/// short by a crash is a temporary file, never a file at `dst` — in the trash, a torn memory a
/// restore would put back), `src` removed last.
fn copy_then_remove(src: &Path, dst: &Path) -> io::Result<()> {
    crate::atomic::copy_new(src, dst)?;
    fs::remove_file(src)
}

impl Memdir {
    /// The revision of whatever is at `abs` now.
    pub(crate) fn current_revision(&self, abs: &Path) -> Result<Revision, MemdirError> {
        Ok(match read_bytes(abs)? {
            Some((bytes, meta)) => Revision::of(&bytes, &meta),
            None => Revision::ABSENT,
        })
    }

    /// Atomically replaces `abs` with `bytes` if it still matches `expected`. With
    /// [`Revision::ABSENT`] the file must still not exist.
    pub(crate) fn write_replace(
        &self,
        abs: &Path,
        display: &str,
        bytes: &[u8],
        expected: &Revision,
    ) -> Result<Revision, MemdirError> {
        let _writing = self.lock_folder_of(abs)?;
        self.write_replace_locked(abs, display, bytes, expected)
    }

    /// Mneme's processes and threads write a memory folder one at a time: between the check
    /// that a file is as expected and the rename that replaces it, another writer could
    /// replace it too, and one of the two changes would be lost with both reported saved.
    /// Claude Code takes no lock; the revision checks are what catch its writes.
    pub(crate) fn lock_folder_of(&self, abs: &Path) -> Result<crate::file_lock::FileLock, MemdirError> {
        let dir = abs.parent().unwrap_or(&self.root);
        crate::file_lock::FileLock::take_folder(dir).map_err(io_err("lock the folder", dir))
    }

    /// [`Memdir::write_replace`] for a caller that holds the folder's lock.
    pub(crate) fn write_replace_locked(
        &self,
        abs: &Path,
        display: &str,
        bytes: &[u8],
        expected: &Revision,
    ) -> Result<Revision, MemdirError> {
        let changed = || MemdirError::ChangedOnDisk { path: display.to_string() };
        if !expected.exists() {
            return match self.write_new(abs, display, bytes) {
                Err(MemdirError::AlreadyExists { .. }) => Err(changed()),
                other => other,
            };
        }
        if !self.current_revision(abs)?.matches(expected) {
            return Err(changed());
        }
        let dir = abs.parent().unwrap_or(&self.root);
        let existing = fs::metadata(abs).ok();
        let (tmp, meta) = write_temp(abs, dir, bytes, existing.as_ref())?;
        let recheck = self.current_revision(abs);
        if !matches!(&recheck, Ok(r) if r.matches(expected)) {
            let _ = fs::remove_file(&tmp);
            recheck?;
            return Err(changed());
        }
        if let Err(e) = fs::rename(&tmp, abs) {
            let _ = fs::remove_file(&tmp);
            return Err(MemdirError::Io { action: "replace", path: abs.to_path_buf(), source: e });
        }
        fsync_dir(dir);
        Ok(Revision::of(bytes, &meta))
    }

    /// Atomically creates `abs` with `bytes`; refuses if anything exists there.
    pub(crate) fn write_new(&self, abs: &Path, display: &str, bytes: &[u8]) -> Result<Revision, MemdirError> {
        let dir = abs.parent().unwrap_or(&self.root);
        let (tmp, meta) = write_temp(abs, dir, bytes, None)?;
        let published = match fs::hard_link(&tmp, abs) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(MemdirError::AlreadyExists { path: display.into() }),
            // File systems without hard links: check, then rename (a narrow race remains).
            Err(_) if fs::symlink_metadata(abs).is_ok() => Err(MemdirError::AlreadyExists { path: display.into() }),
            Err(_) => fs::rename(&tmp, abs).map_err(io_err("create", abs)),
        };
        let _ = fs::remove_file(&tmp);
        published?;
        fsync_dir(dir);
        Ok(Revision::of(bytes, &meta))
    }

    /// Reads one topic file with the revision to hand back when saving it.
    pub fn read(&self, rel: &str) -> Result<MemoryFile, MemdirError> {
        let real_root = self.real_root()?;
        let abs = self.topic_abs(&real_root, rel)?;
        let (bytes, meta) = read_bytes(&abs)?.ok_or_else(|| MemdirError::NotFound { path: rel.into() })?;
        let mut problems = Vec::new();
        let topic = build_topic(rel, &abs, &meta, &bytes, &mut problems, self.release().frontmatter_reader);
        let revision = Revision::of(&bytes, &meta);
        let content = match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
        };
        Ok(MemoryFile { topic, content, revision, problems })
    }

    /// `<slug>.md`, or `<slug>-2.md`, `-3`, … when that is taken: a name given without a file
    /// name should not fail because another memory's name made the same slug.
    fn free_file_name(&self, scope: Scope, slug: &str) -> String {
        let taken = |file: &str| {
            let rel = match scope {
                Scope::Private => file.to_string(),
                Scope::Team => format!("{}/{file}", super::TEAM_DIR),
            };
            fs::symlink_metadata(self.root.join(rel)).is_ok()
        };
        let first = format!("{slug}.md");
        if !taken(&first) {
            return first;
        }
        (2..1000).map(|n| format!("{slug}-{n}.md")).find(|f| !taken(f)).unwrap_or(first)
    }

    /// Creates a memory in the current frontmatter generation and adds its index line
    /// (`- [name](file.md) — description`) to the scope's `MEMORY.md`, creating the index if
    /// needed. Refuses to replace an existing file. If the index cannot be written the new
    /// file is removed again, so nothing is left half-done.
    pub fn create(&self, new: &NewMemory) -> Result<Created, MemdirError> {
        validate_line("name", &new.name)?;
        validate_line("description", &new.description)?;
        let file = match &new.file_name {
            Some(f) => f.clone(),
            None => self.free_file_name(new.scope, &slugify(&new.name)),
        };
        if new.scope == Scope::Private && Scope::of(&file) == Scope::Team {
            return Err(MemdirError::InvalidInput {
                field: "file name",
                reason: "it is inside team/; create it with the team scope instead".into(),
            });
        }
        let rel = match new.scope {
            Scope::Private => file,
            Scope::Team => format!("{}/{file}", super::TEAM_DIR),
        };
        validate_topic_path(&rel)?;
        // `[[name]]` links find a memory by its name: a second memory of the same name makes
        // them ambiguous, so a create never makes one.
        if self.root.is_dir() {
            let wanted = new.name.trim().to_lowercase();
            let same = self.scan_headers()?.headers.into_iter().find(|h| {
                Scope::of(&h.rel_path) == new.scope && h.name.as_deref().is_some_and(|n| n.trim().to_lowercase() == wanted)
            });
            if let Some(h) = same {
                return Err(MemdirError::NameTaken { name: new.name.trim().to_string(), path: h.rel_path });
            }
        }
        let content = frontmatter_edit::new_memory_content(&new.name, &new.description, new.memory_type, &new.body, self.type_form());
        self.check_team_write(&rel, &content)?;
        let real_root = self.ensure_root()?;
        let abs = self.topic_abs(&real_root, &rel)?;
        if fs::symlink_metadata(&abs).is_ok() {
            return Err(MemdirError::AlreadyExists { path: rel });
        }
        if let Some(parent) = abs.parent() {
            fs::create_dir_all(parent).map_err(io_err("create the folder", parent))?;
        }
        let revision = self.write_new(&abs, &rel, content.as_bytes())?;

        let line = render_entry(&new.name, &rel, new.scope, Some(&new.description));
        let root = self.root.clone();
        let indexed = self.edit_index_with(new.scope, |doc, original| {
            let existing = doc.entries(new.scope, &root).into_iter().find(|(_, e)| e.rel_path == rel);
            let (at, added) = match existing {
                Some((i, _)) => (i, false),
                None => (doc.append(line.clone()), true),
            };
            // Measured on the text as it will be written, split as the release reads it: from
            // 2.1.284 a lone CR ends a line but counts none towards the 200.
            let release = self.index_release(original);
            let past_cap = super::health::line_past_cap(&doc.render_as(original, &release), at, &release);
            (at, added, doc.lines[at].text.clone(), past_cap)
        });
        match indexed {
            Ok(((at, added, text, past_cap), _)) => Ok(Created {
                rel_path: rel,
                revision,
                index_rel_path: new.scope.index_rel_path().into(),
                index_line: text,
                index_line_number: at + 1,
                index_line_added: added,
                index_line_past_cap: past_cap,
            }),
            Err(e) => {
                // Only we have seen this file; undo it so the create is all or nothing.
                let _ = fs::remove_file(&abs);
                fsync_dir(abs.parent().unwrap_or(&self.root));
                Err(e)
            }
        }
    }

    /// Replaces a topic file's whole text, if it still matches `expected`.
    ///
    /// When the new text changes the memory's name or description, index lines whose title or
    /// hook still show the old value follow, as with [`Self::update_fields`]: an editor that
    /// saves the whole file is the same edit to the user.
    pub fn update(&self, rel: &str, content: &str, expected: &Revision) -> Result<FieldsUpdated, MemdirError> {
        self.check_team_write(rel, content)?;
        let real_root = self.real_root()?;
        let abs = self.topic_abs(&real_root, rel)?;
        self.require_regular(rel, &abs)?;
        let old = match read_bytes(&abs)? {
            Some((bytes, meta)) if Revision::of(&bytes, &meta).matches(expected) => text_of(rel, bytes)?,
            Some(_) => return Err(MemdirError::ChangedOnDisk { path: rel.into() }),
            None => return Err(MemdirError::NotFound { path: rel.into() }),
        };
        // In the file's own line ends and byte-order mark: an editor hands back LF text.
        let kept = crate::text_form::keep_form(&old, content);
        let content: &str = &kept;
        let shown = |text: &str| {
            let fm = mneme_core::frontmatter::parse(text.strip_prefix('\u{feff}').unwrap_or(text)).frontmatter;
            let name = fm.as_ref().and_then(|f| f.name()).unwrap_or_else(|| stem_of(rel).to_string());
            (name, fm.as_ref().and_then(|f| f.description()))
        };
        let (old_name, old_desc) = shown(&old);
        let (new_name, new_desc) = shown(content);
        let new_name = Some(new_name.as_str()).filter(|n| *n != old_name);
        let new_desc = new_desc.as_deref().filter(|d| Some(*d) != old_desc.as_deref());
        self.write_following_index(&real_root, &abs, rel, content, expected, (&old_name, old_desc.as_deref()), (new_name, new_desc))
    }

    /// Replaces an index's whole text, if it still matches `expected` ([`Revision::ABSENT`]
    /// to create it).
    pub fn write_index(&self, scope: Scope, content: &str, expected: &Revision) -> Result<Revision, MemdirError> {
        let rel = scope.index_rel_path();
        self.check_team_write(rel, content)?;
        let real_root = self.ensure_root()?;
        let abs = self.index_abs(&real_root, rel)?;
        if let Some(parent) = abs.parent() {
            fs::create_dir_all(parent).map_err(io_err("create the folder", parent))?;
        }
        // The index as it is (if it is the one the editor started from): its line ends and
        // byte-order mark are kept; one that is not UTF-8 is not saved over.
        let content = match read_bytes(&abs)? {
            Some((bytes, meta)) if expected.exists() && Revision::of(&bytes, &meta).matches(expected) => {
                crate::text_form::keep_form(&text_of(rel, bytes)?, content).into_owned()
            }
            _ => content.to_string(),
        };
        self.write_replace(&abs, rel, content.as_bytes(), expected)
    }

    /// Changes frontmatter fields and/or the body with minimal textual edits: other keys
    /// (`originSessionId`, `created`, …), their order and formatting, and the file's
    /// frontmatter generation stay as they are. When the name or description changes, index
    /// lines whose title or hook still show the old value follow.
    pub fn update_fields(&self, rel: &str, edits: &FieldEdits, expected: &Revision) -> Result<FieldsUpdated, MemdirError> {
        if let Some(n) = &edits.name {
            validate_line("name", n)?;
        }
        if let Some(d) = &edits.description {
            validate_line("description", d)?;
        }
        let real_root = self.real_root()?;
        let abs = self.topic_abs(&real_root, rel)?;
        self.require_regular(rel, &abs)?;
        let (bytes, meta) = read_bytes(&abs)?.ok_or_else(|| MemdirError::NotFound { path: rel.into() })?;
        if !Revision::of(&bytes, &meta).matches(expected) {
            return Err(MemdirError::ChangedOnDisk { path: rel.into() });
        }
        let text = text_of(rel, bytes)?;
        // As the scan reads it: after a byte-order mark.
        let old = mneme_core::frontmatter::parse(text.strip_prefix('\u{feff}').unwrap_or(&text));
        let old_name = old.frontmatter.as_ref().and_then(|f| f.name()).unwrap_or_else(|| stem_of(rel).to_string());
        let old_desc = old.frontmatter.as_ref().and_then(|f| f.description());
        let changes = Changes {
            name: edits.name.as_deref(),
            description: edits.description.as_deref(),
            memory_type: edits.memory_type,
            body: edits.body.as_deref(),
        };
        let new_text = frontmatter_edit::apply(&text, &changes, self.type_form()).map_err(|r| match r {
            Refusal::Malformed(detail) => MemdirError::MalformedFrontmatter { path: rel.into(), detail },
            Refusal::NotEditable(reason) => MemdirError::FrontmatterNotEditable { path: rel.into(), reason },
        })?;
        if new_text == text {
            return Ok(FieldsUpdated { revision: *expected, index_lines_updated: 0, index_error: None });
        }
        self.check_team_write(rel, &new_text)?;
        let new_name = edits.name.as_deref().filter(|n| *n != old_name);
        let new_desc = edits.description.as_deref().filter(|d| Some(*d) != old_desc.as_deref());
        self.write_following_index(&real_root, &abs, rel, &new_text, expected, (&old_name, old_desc.as_deref()), (new_name, new_desc))
    }

    /// Writes a topic file's new text and, when its name or description changed (`new` holds
    /// the changed ones), brings the index lines still showing the `old` ones along.
    #[allow(clippy::too_many_arguments)]
    fn write_following_index(
        &self,
        real_root: &Path,
        abs: &Path,
        rel: &str,
        new_text: &str,
        expected: &Revision,
        (old_name, old_desc): (&str, Option<&str>),
        (new_name, new_desc): (Option<&str>, Option<&str>),
    ) -> Result<FieldsUpdated, MemdirError> {
        if new_name.is_none() && new_desc.is_none() {
            let revision = self.write_replace(abs, rel, new_text.as_bytes(), expected)?;
            return Ok(FieldsUpdated { revision, index_lines_updated: 0, index_error: None });
        }
        // Two files change: note what the index shows first, so a crash after the file is
        // written and before the index follows is found and repaired (`pending.rs`).
        let note = PendingSync { rel_path: rel.into(), old_name: old_name.to_string(), old_description: old_desc.map(str::to_string), renamed_to: None, merged_lines: Vec::new() };
        let note = self.note_pending_sync(real_root, &note)?;
        let revision = match self.write_replace(abs, rel, new_text.as_bytes(), expected) {
            Ok(r) => r,
            Err(e) => {
                let _ = fs::remove_file(&note);
                return Err(e);
            }
        };
        let scope = Scope::of(rel);
        let root = self.root.clone();
        let change = EntryChange { rel, old_name, old_desc, new_name, new_desc };
        let synced = self.edit_index(scope, |doc| sync_lines(doc, scope, &root, &change));
        Ok(match synced {
            Ok((n, _)) => {
                // The index follows the file now; a note that cannot be removed only costs
                // a look at the index next time health runs.
                let _ = fs::remove_file(&note);
                FieldsUpdated { revision, index_lines_updated: n, index_error: None }
            }
            // The note stays: health reports the lines, and its fix brings them in line.
            Err(e) => FieldsUpdated { revision, index_lines_updated: 0, index_error: Some(e.to_string()) },
        })
    }

    /// Points every index line targeting `from` at `to`, in one scope's index.
    pub(super) fn retarget(&self, scope: Scope, from: &str, to: &str) -> Result<usize, MemdirError> {
        let root = self.root.clone();
        let (n, _) = self.edit_index(scope, |doc| {
            let mut n = 0;
            for (i, e) in doc.entries(scope, &root) {
                if e.rel_path == from {
                    let target = encode_target(&relative_to_dir(to, scope.dir()));
                    doc.lines[i].text.replace_range(e.spans.target.0..e.spans.target.1, &target);
                    n += 1;
                }
            }
            n
        })?;
        Ok(n)
    }

    /// Whether [`rename`](Memdir::rename) would take `old_rel` to `new_rel`, asked before
    /// anything is written (an edit that also renames must not save half of itself): both
    /// paths usable, the old one a plain file, the new one free.
    pub fn check_rename(&self, old_rel: &str, new_rel: &str) -> Result<(), MemdirError> {
        self.rename_paths(old_rel, new_rel).map(|_| ())
    }

    fn rename_paths(&self, old_rel: &str, new_rel: &str) -> Result<(PathBuf, PathBuf), MemdirError> {
        if old_rel == new_rel {
            return Err(MemdirError::InvalidInput { field: "new path", reason: "it is the same as the old one".into() });
        }
        let real_root = self.real_root()?;
        let old_abs = self.topic_abs(&real_root, old_rel)?;
        let new_abs = self.topic_abs(&real_root, new_rel)?;
        self.require_regular(old_rel, &old_abs)?;
        // On a disk that folds letter case, `Tabs.md` opens `tabs.md` itself: not taken.
        if fs::symlink_metadata(&new_abs).is_ok() && !crate::fold::same_entry(&old_abs, &new_abs) {
            return Err(MemdirError::AlreadyExists { path: new_rel.into() });
        }
        Ok((old_abs, new_abs))
    }

    /// Moves a topic file and points its index lines at the new path. Refuses if anything
    /// exists at the new path. `[[links]]` naming the old file stem are reported, not
    /// rewritten. If an index cannot be updated the move is undone.
    ///
    /// The move and the index edits are separate writes: a note written before the move
    /// (`pending.rs`) lets health report, and its fix finish, a rename killed between them.
    /// The note goes once the rename is done, or undone with the file back at its old path; a
    /// failure that could not move the file back keeps it, so the fix still finds the lines.
    pub fn rename(&self, old_rel: &str, new_rel: &str) -> Result<Renamed, MemdirError> {
        let (old_abs, new_abs) = self.rename_paths(old_rel, new_rel)?;
        self.check_rename_publishes(old_rel, new_rel, &old_abs)?;
        let note = self.note_pending_rename(&self.real_root()?, old_rel, new_rel)?;
        let renamed = self.move_and_retarget(old_rel, new_rel, &old_abs, &new_abs);
        if renamed.is_ok() || fs::symlink_metadata(&old_abs).is_ok() {
            let _ = fs::remove_file(&note);
        }
        renamed
    }

    /// A rename into `team/` publishes the file (and its index lines): the team's write
    /// check, before anything is written.
    fn check_rename_publishes(&self, old_rel: &str, new_rel: &str, old_abs: &Path) -> Result<(), MemdirError> {
        let (from, to) = (Scope::of(old_rel), Scope::of(new_rel));
        if to == Scope::Team {
            // Moving a file into team/ publishes its content just as writing it there would.
            let (bytes, _) = read_bytes(old_abs)?.ok_or_else(|| MemdirError::NotFound { path: old_rel.into() })?;
            self.check_team_write(new_rel, &String::from_utf8_lossy(&bytes))?;
            if from != to {
                // Its index lines move into team/MEMORY.md with it, published as well.
                let lines: Vec<String> = self
                    .read_index(from)?
                    .lines
                    .into_iter()
                    .filter(|l| l.entry.as_ref().is_some_and(|e| e.rel_path == old_rel))
                    .map(|l| l.text)
                    .collect();
                if !lines.is_empty() {
                    self.check_team_write(to.index_rel_path(), &lines.join("\n"))?;
                }
            }
        }
        Ok(())
    }

    /// The writes of [`rename`](Memdir::rename) once its note is on disk.
    fn move_and_retarget(&self, old_rel: &str, new_rel: &str, old_abs: &Path, new_abs: &Path) -> Result<Renamed, MemdirError> {
        let (old_abs, new_abs) = (old_abs.to_path_buf(), new_abs.to_path_buf());
        let (from, to) = (Scope::of(old_rel), Scope::of(new_rel));
        if let Some(parent) = new_abs.parent() {
            fs::create_dir_all(parent).map_err(io_err("create the folder", parent))?;
        }
        move_file(&old_abs, &new_abs).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => MemdirError::AlreadyExists { path: new_rel.into() },
            _ => MemdirError::Io { action: "rename", path: old_abs.clone(), source: e },
        })?;
        fsync_dir(new_abs.parent().unwrap_or(&self.root));
        fsync_dir(old_abs.parent().unwrap_or(&self.root));
        let undo_move = || {
            let _ = move_file(&new_abs, &old_abs);
        };
        if from != to {
            // Claude Code reads a memory from the index of the scope it lives in: the line
            // leaves the old scope's index for the new one's, or the memory would read as
            // unindexed in its new scope and the old index would point across at it.
            let moved = match self.move_index_lines(from, to, old_rel, new_rel) {
                Ok(n) => n,
                Err(e) => {
                    undo_move();
                    return Err(e);
                }
            };
            return Ok(Renamed {
                old_rel_path: old_rel.into(),
                new_rel_path: new_rel.into(),
                index_lines_rewritten: moved,
                links_to_old_name: self.links_to_old_name(old_rel, new_rel),
            });
        }
        let private = match self.retarget(Scope::Private, old_rel, new_rel) {
            Ok(n) => n,
            Err(e) => {
                undo_move();
                return Err(e);
            }
        };
        let team = match self.retarget(Scope::Team, old_rel, new_rel) {
            Ok(n) => n,
            Err(e) => {
                if private > 0 {
                    let _ = self.retarget(Scope::Private, new_rel, old_rel);
                }
                undo_move();
                return Err(e);
            }
        };
        Ok(Renamed {
            old_rel_path: old_rel.into(),
            new_rel_path: new_rel.into(),
            index_lines_rewritten: private + team,
            links_to_old_name: self.links_to_old_name(old_rel, new_rel),
        })
    }

    /// `[[old-stem]]` links a rename leaves pointing at no memory.
    fn links_to_old_name(&self, old_rel: &str, new_rel: &str) -> Vec<DanglingLink> {
        let old_stem = stem_of(old_rel);
        if stem_of(new_rel) == old_stem {
            return Vec::new();
        }
        // A failed scan only loses the warning, not the rename.
        let scan = self.scan().unwrap_or_default();
        let known: HashSet<&str> = scan.files.iter().flat_map(|f| [f.stem()].into_iter().chain(f.name.as_deref())).collect();
        if known.contains(old_stem) {
            return Vec::new();
        }
        scan.files
            .iter()
            .filter(|f| f.links.iter().any(|l| l == old_stem))
            .map(|f| DanglingLink { from: f.rel_path.clone(), link: old_stem.to_string() })
            .collect()
    }

    /// For a rename from scope `from` to scope `to`: copies the lines of `from`'s index that
    /// point at `old_rel` to the end of `to`'s index with the target written relative to that
    /// index, then takes them out of `from`'s; lines of `to`'s index that already pointed across
    /// at `old_rel` are retargeted, and then the copies are not added as duplicates.
    ///
    /// The new index is written first so the user's words are on disk at every moment: a
    /// process killed between the two writes leaves the line in both indexes (the old copy
    /// naming the old path, which the rename note accounts for), and finishing the rename
    /// (this function again) sees the line already under the new name and only removes the old
    /// copy. The other order lost a hand-written title and hook to a kill in between. If the
    /// old index cannot be written the new index's change is undone. Returns how many lines
    /// were moved or retargeted.
    pub(super) fn move_index_lines(&self, from: Scope, to: Scope, old_rel: &str, new_rel: &str) -> Result<usize, MemdirError> {
        let root = self.root.clone();
        let moving: Vec<String> = self
            .read_index(from)?
            .lines
            .into_iter()
            .filter(|l| l.entry.as_ref().is_some_and(|e| e.rel_path == old_rel))
            // The index's byte order mark stays at the start of its own file, not in the copy.
            .map(|l| l.text.strip_prefix('\u{FEFF}').map(str::to_string).unwrap_or(l.text))
            .collect();
        let target = encode_target(&relative_to_dir(new_rel, to.dir()));
        let (added, _) = self.edit_index(to, |doc| {
            let mut retargeted = 0;
            for (i, e) in doc.entries(to, &root) {
                if e.rel_path == old_rel {
                    doc.lines[i].text.replace_range(e.spans.target.0..e.spans.target.1, &target);
                    retargeted += 1;
                }
            }
            let mut appended = Vec::new();
            if retargeted == 0 && !doc.entries(to, &root).iter().any(|(_, e)| e.rel_path == new_rel) {
                for text in &moving {
                    let mut text = text.clone();
                    if let Some(e) = super::index::parse_entry(&text, from.dir(), &root) {
                        text.replace_range(e.spans.target.0..e.spans.target.1, &target);
                    }
                    doc.append(text.clone());
                    appended.push(text);
                }
            }
            (retargeted, appended)
        })?;
        let removed = self.edit_index(from, |doc| {
            let at: Vec<usize> = doc.entries(from, &root).into_iter().filter(|(_, e)| e.rel_path == old_rel).map(|(i, _)| i).collect();
            doc.remove(&at);
        });
        if let Err(e) = removed {
            // The old index still has its lines: put the new one back as it was, so the undone
            // rename leaves no copy pointing at a path the file is no longer at.
            let (retargeted, appended) = &added;
            let back = encode_target(&relative_to_dir(old_rel, to.dir()));
            let _ = self.edit_index(to, |doc| {
                let mut drop = Vec::new();
                for (i, e) in doc.entries(to, &root) {
                    if e.rel_path != new_rel {
                        continue;
                    }
                    if appended.contains(&doc.lines[i].text) {
                        drop.push(i);
                    } else if *retargeted > 0 {
                        doc.lines[i].text.replace_range(e.spans.target.0..e.spans.target.1, &back);
                    }
                }
                doc.remove(&drop);
            });
            return Err(e);
        }
        let (retargeted, appended) = added;
        Ok(retargeted + appended.len())
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::super::TeamWriteRefused;
    use super::*;

    fn new_memory(name: &str, desc: &str) -> NewMemory {
        NewMemory {
            name: name.into(),
            description: desc.into(),
            memory_type: Some(MemoryType::Feedback),
            body: "Use tabs.\n\n**Why:** the team agreed.".into(),
            file_name: None,
            scope: Scope::Private,
        }
    }

    #[test]
    fn create_writes_frontmatter_and_index_line() {
        let t = TestDir::new();
        let m = t.memdir();
        let c = m.create(&new_memory("Prefers tabs", "Use tabs, not spaces")).unwrap();
        assert_eq!(c.rel_path, "prefers-tabs.md");
        assert_eq!(c.index_line, "- [Prefers tabs](prefers-tabs.md) — Use tabs, not spaces");
        assert_eq!((c.index_line_number, c.index_line_added, c.index_line_past_cap), (1, true, false));
        assert_eq!(
            t.tree(),
            "MEMORY.md: - [Prefers tabs](prefers-tabs.md) — Use tabs, not spaces\\n\n\
             prefers-tabs.md: ---\\nname: Prefers tabs\\ndescription: Use tabs, not spaces\\nmetadata:\\n  type: feedback\\n---\\n\\nUse tabs.\\n\\n**Why:** the team agreed.\\n"
        );
        assert!(c.revision.matches(&m.read("prefers-tabs.md").unwrap().revision));
        // The scan sees it as Claude Code will.
        let f = &m.scan().unwrap().files[0];
        assert_eq!(f.memory_type, Some(MemoryType::Feedback));
        assert_eq!(f.generation, mneme_core::frontmatter::Generation::Metadata);
    }

    #[test]
    fn writers_at_the_same_time_each_keep_their_index_line() {
        // Each thread its own Memdir, as separate processes (the CLI, the daemon, `mneme
        // serve`) are: without the folder lock one rename replaced the other's index and both
        // creates reported success.
        let t = TestDir::new();
        t.memdir().create(&new_memory("Seed", "s")).unwrap();
        let root = t.mem();
        let trash = t.path().join("trash");
        let threads: Vec<_> = (0..8)
            .map(|i| {
                let (root, trash) = (root.clone(), trash.clone());
                std::thread::spawn(move || {
                    let m = Memdir::new(root, trash, clock());
                    for j in 0..10 {
                        m.create(&new_memory(&format!("T{i} N{j}"), "d")).unwrap();
                    }
                })
            })
            .collect();
        for th in threads {
            th.join().unwrap();
        }
        let index = t.read("MEMORY.md");
        let missing: Vec<String> =
            (0..8).flat_map(|i| (0..10).map(move |j| format!("(t{i}-n{j}.md)"))).filter(|l| !index.contains(l.as_str())).collect();
        assert!(missing.is_empty(), "index lines lost: {missing:?}\n{index}");
        assert_eq!(index.lines().count(), 81);
    }

    #[test]
    fn names_that_make_the_same_file_name_get_a_number() {
        let t = TestDir::new();
        let m = t.memdir();
        assert_eq!(m.create(&new_memory("стиль кода", "a")).unwrap().rel_path, "стиль-кода.md");
        assert_eq!(m.create(&new_memory("стиль кода!", "b")).unwrap().rel_path, "стиль-кода-2.md");
        assert_eq!(m.create(&new_memory("😀", "c")).unwrap().rel_path, "untitled.md");
        assert_eq!(m.create(&new_memory("🎉", "d")).unwrap().rel_path, "untitled-2.md");
        // The same name again (in any case) is refused: [[links]] would not know which.
        let err = m.create(&new_memory("Стиль кода", "e")).unwrap_err();
        assert!(err.to_string().contains("стиль-кода.md"), "{err}");
        // A file name given is that file, or a refusal.
        let mut named = new_memory("x", "e");
        named.file_name = Some("memory.md".into());
        assert!(matches!(m.create(&named), Err(MemdirError::InvalidPath { .. })));
        assert_eq!(t.read("MEMORY.md").lines().count(), 4);
    }

    #[test]
    fn create_appends_to_an_existing_index_keeping_its_shape() {
        let t = TestDir::new();
        t.write("MEMORY.md", "# Index\r\n\r\n- [A](a.md) — a\r\n\r\n");
        t.write("a.md", "a");
        t.memdir().create(&new_memory("B", "b")).unwrap();
        assert_eq!(t.read("MEMORY.md"), "# Index\r\n\r\n- [A](a.md) — a\r\n- [B](b.md) — b\r\n\r\n");
        t.write("MEMORY.md", "- [A](a.md)");
        t.memdir().create(&new_memory("C", "c")).unwrap();
        assert_eq!(t.read("MEMORY.md"), "- [A](a.md)\n- [C](c.md) — c");
    }

    #[test]
    fn create_in_team_scope_uses_the_team_index() {
        let t = TestDir::new();
        let mut n = new_memory("Build invariant", "CI must stay green");
        n.scope = Scope::Team;
        n.file_name = Some("ci green.md".into());
        let c = t.memdir().create(&n).unwrap();
        assert_eq!(c.rel_path, "team/ci green.md");
        assert_eq!(c.index_rel_path, "team/MEMORY.md");
        assert_eq!(t.read("team/MEMORY.md"), "- [Build invariant](ci%20green.md) — CI must stay green\n");
        assert!(!t.exists("MEMORY.md"));
    }

    #[test]
    fn create_refuses_overwrites_and_bad_input() {
        let t = TestDir::new();
        t.write("prefers-tabs.md", "mine");
        let m = t.memdir();
        let check = |n: NewMemory, code: &str| {
            let err = m.create(&n).unwrap_err();
            assert_eq!(err.code(), code, "{err}");
        };
        let mut named = new_memory("Prefers tabs", "x");
        named.file_name = Some("prefers-tabs.md".into());
        check(named, "already-exists");
        assert_eq!(t.read("prefers-tabs.md"), "mine");
        check(new_memory("", "x"), "invalid-input");
        check(new_memory("two\nlines", "x"), "invalid-input");
        check(new_memory("a", "two\rlines"), "invalid-input");
        for bad in ["../x.md", "/abs.md", "MEMORY.md", "x.txt", "a\\b.md", "team/x.md"] {
            let mut n = new_memory("a", "b");
            n.file_name = Some(bad.into());
            assert!(m.create(&n).is_err(), "{bad}");
        }
        assert!(!t.exists("MEMORY.md"), "nothing half-written");
        assert!(!t.path().join("x.md").exists() && !t.path().join("abs.md").exists());
    }

    #[test]
    fn create_is_undone_when_the_index_cannot_be_written() {
        let t = TestDir::new();
        t.write_bytes("MEMORY.md", b"- [x](x.md) \xFF\n");
        let err = t.memdir().create(&new_memory("A", "b")).unwrap_err();
        assert_eq!(err.code(), "not-utf8");
        assert!(!t.exists("a.md"), "the new file is removed again");
        assert_eq!(t.tree().lines().count(), 1, "no temporary files left: {}", t.tree());
    }

    #[test]
    fn long_unicode_names() {
        let t = TestDir::new();
        let name = format!("Émoji 😀 {}", "long ".repeat(49)); // ~255 characters
        let c = t.memdir().create(&new_memory(&name, "désc ✓")).unwrap();
        assert!(c.rel_path.len() <= super::super::MAX_SLUG_LEN + 3, "{}", c.rel_path);
        assert_eq!(t.memdir().read(&c.rel_path).unwrap().topic.name.as_deref(), Some(name.as_str()));
        let mut n = new_memory("x", "y");
        n.file_name = Some(format!("{}.md", "é".repeat(126))); // 252 + 3 bytes
        assert!(t.memdir().create(&n).is_ok());
        n.file_name = Some(format!("{}.md", "é".repeat(127)));
        assert_eq!(t.memdir().create(&n).unwrap_err().code(), "invalid-path");
    }

    /// A token assembled at run time, so this file holds no secret-looking literal.
    fn github_pat() -> String {
        format!("ghp_{}", "nUwYcfi1NQBYsmPBK6K7rrTYmlfxd6KQzYRd")
    }

    const REFUSED: &str = "refused by the team-write check";

    /// A stand-in for the api's policy (the secret scanner, tested in mneme-team): what
    /// matters here is that every write into team/ asks it.
    fn refuse_tokens(content: &str) -> Result<(), TeamWriteRefused> {
        if content.contains("ghp_") {
            Err(TeamWriteRefused(REFUSED.into()))
        } else {
            Ok(())
        }
    }

    #[test]
    fn the_team_write_check_runs_on_every_write_into_team_memory() {
        let t = TestDir::new();
        let m = t.memdir().with_team_write_check(refuse_tokens);
        let secret_body = format!("Use the bot token {} for CI.", github_pat());

        // create
        let mut n = new_memory("CI token", "How CI authenticates");
        n.scope = Scope::Team;
        n.body = secret_body.clone();
        let err = m.create(&n).unwrap_err();
        assert_eq!(err.to_string(), REFUSED);
        assert_eq!(err.code(), "secrets-in-team-memory");
        assert!(matches!(&err, MemdirError::SecretsInTeamMemory { path, .. } if path == "team/ci-token.md"));
        assert_eq!(t.tree(), "", "nothing written, not even the team folder's index");
        // The same memory is fine in the private scope.
        n.scope = Scope::Private;
        m.create(&n).unwrap();

        // update and update_fields
        t.write("team/ci.md", "---\nname: CI\ndescription: CI notes\n---\n\nClean.\n");
        let rev = m.read("team/ci.md").unwrap().revision;
        assert_eq!(m.update("team/ci.md", &secret_body, &rev).unwrap_err().to_string(), REFUSED);
        let edits = FieldEdits { body: Some(secret_body.clone()), ..FieldEdits::default() };
        assert_eq!(m.update_fields("team/ci.md", &edits, &rev).unwrap_err().to_string(), REFUSED);
        let edits = FieldEdits { description: Some(format!("token {}", github_pat())), ..FieldEdits::default() };
        assert_eq!(m.update_fields("team/ci.md", &edits, &rev).unwrap_err().to_string(), REFUSED);
        assert_eq!(t.read("team/ci.md"), "---\nname: CI\ndescription: CI notes\n---\n\nClean.\n");
        m.update("team/ci.md", "Still clean.", &rev).unwrap();

        // the team index
        assert_eq!(
            m.write_index(Scope::Team, &format!("- [t]({}.md)\n", github_pat()), &Revision::ABSENT).unwrap_err().to_string(),
            REFUSED
        );

        // rename into team/ publishes the private file's content
        let err = m.rename("ci-token.md", "team/ci-token.md").unwrap_err();
        assert_eq!(err.to_string(), REFUSED);
        assert!(t.exists("ci-token.md") && !t.exists("team/ci-token.md"));
        m.rename("ci-token.md", "elsewhere.md").unwrap();

        // private writes are not checked
        let rev = m.read("elsewhere.md").unwrap().revision;
        m.update("elsewhere.md", &format!("{secret_body} again"), &rev).unwrap();
        // without a check (a Memdir nobody gave a policy) nothing is refused
        let rev = m.read("team/ci.md").unwrap().revision;
        t.memdir().update("team/ci.md", &secret_body, &rev).unwrap();
    }

    #[test]
    fn update_refuses_a_concurrent_change() {
        let t = TestDir::new();
        t.write("a.md", "v1");
        let m = t.memdir();
        let opened = m.read("a.md").unwrap();
        t.write("a.md", "v2 by Claude Code");
        let err = m.update("a.md", "mine", &opened.revision).unwrap_err();
        assert_eq!(
            err.to_string(),
            "a.md changed on disk since you opened it (Claude Code may have written it). Reload it, then make your edit again."
        );
        assert_eq!(t.read("a.md"), "v2 by Claude Code");
        let fresh = m.read("a.md").unwrap();
        let rev = m.update("a.md", "mine", &fresh.revision).unwrap().revision;
        assert_eq!(t.read("a.md"), "mine");
        assert!(rev.matches(&m.read("a.md").unwrap().revision));
        // A touch without a content change is not a conflict.
        t.set_mtime("a.md", 1, 0);
        m.update("a.md", "again", &rev).unwrap();
        // Deleted meanwhile: also a conflict.
        let rev = m.read("a.md").unwrap().revision;
        std::fs::remove_file(t.mem().join("a.md")).unwrap();
        assert_eq!(m.update("a.md", "x", &rev).unwrap_err().code(), "not-found");
    }

    /// A memory folder synced from Windows: saving a topic file or the index from an editor
    /// that hands back LF text keeps the file's CRLF line ends and byte-order mark, so only the
    /// edited line changes; the name read from the CRLF frontmatter still follows into the index.
    #[test]
    fn whole_file_saves_keep_crlf_line_ends_and_the_byte_order_mark() {
        let t = TestDir::new();
        t.write("a.md", "\u{feff}---\r\nname: Alpha\r\ndescription: first\r\ntype: user\r\n---\r\n\r\nline one\r\nline two\r\n");
        t.write("MEMORY.md", "# Index\r\n- [Alpha](a.md) \u{2014} first\r\n");
        let m = t.memdir();
        let opened = m.read("a.md").unwrap();
        let typed = opened.content.replace("\r\n", "\n").replace('\u{feff}', "").replace("line two", "LINE TWO").replace("first", "one");
        let done = m.update("a.md", &typed, &opened.revision).unwrap();
        assert_eq!(t.read("a.md"), "\u{feff}---\r\nname: Alpha\r\ndescription: one\r\ntype: user\r\n---\r\n\r\nline one\r\nLINE TWO\r\n");
        assert_eq!(done.index_lines_updated, 1);
        assert_eq!(t.read("MEMORY.md"), "# Index\r\n- [Alpha](a.md) \u{2014} one\r\n");
        let index = m.read_index(Scope::Private).unwrap();
        m.write_index(Scope::Private, "# Index\n- [Alpha](a.md) \u{2014} one\n- [B](b.md) \u{2014} two\n", &index.revision).unwrap();
        assert_eq!(t.read("MEMORY.md"), "# Index\r\n- [Alpha](a.md) \u{2014} one\r\n- [B](b.md) \u{2014} two\r\n");
    }

    /// A topic file or index in Windows-1252 is read with replacement characters; saving that
    /// text over it is refused with what the bytes look like and how to convert them, and the
    /// file keeps its bytes.
    #[test]
    fn whole_file_saves_over_a_file_that_is_not_utf8_are_refused() {
        let t = TestDir::new();
        t.write_bytes("a.md", b"---\nname: Caf\xe9\n---\nbody\n");
        t.write_bytes("MEMORY.md", b"- [Caf\xe9](a.md) \x96 notes\n");
        let m = t.memdir();
        let opened = m.read("a.md").unwrap();
        assert!(opened.content.contains('\u{fffd}'));
        let err = m.update("a.md", &opened.content.replace("body", "edited"), &opened.revision).unwrap_err();
        assert_eq!(err.code(), "not-utf8");
        let said = err.to_string();
        assert!(said.starts_with("Mneme will not save a.md because it is not UTF-8 text: byte 0xE9 on line 2") && said.contains("WINDOWS-1252"), "{said}");
        assert_eq!(std::fs::read(t.mem().join("a.md")).unwrap(), b"---\nname: Caf\xe9\n---\nbody\n");
        let index = m.read_index(Scope::Private).unwrap();
        let err = m.write_index(Scope::Private, "- [x](a.md) \u{2014} x\n", &index.revision).unwrap_err();
        assert!(err.to_string().starts_with("Mneme will not save MEMORY.md because it is not UTF-8 text: byte 0xE9 on line 1"), "{err}");
        assert_eq!(std::fs::read(t.mem().join("MEMORY.md")).unwrap(), b"- [Caf\xe9](a.md) \x96 notes\n");
    }

    #[cfg(unix)]
    #[test]
    fn update_keeps_permissions_and_leaves_no_temp_files() {
        use std::os::unix::fs::PermissionsExt;
        let t = TestDir::new();
        t.write("a.md", "v1");
        set_mode(&t.mem().join("a.md"), 0o640);
        let m = t.memdir();
        let r = m.read("a.md").unwrap().revision;
        m.update("a.md", "v2", &r).unwrap();
        let mode = std::fs::metadata(t.mem().join("a.md")).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o640);
        assert_eq!(t.tree(), "a.md: v2");
    }

    #[test]
    fn update_fields_keeps_unknown_keys_and_syncs_the_index() {
        let t = TestDir::new();
        let original = "---\nname: tabs\ndescription: old hook\noriginSessionId: 8d1c-uuid\ntype: feedback\ncreated: 2026-01-05\n---\n\nBody [[other]]\n";
        t.write("tabs.md", original);
        t.write("MEMORY.md", "- [tabs](tabs.md) — old hook\n- [Other](other.md) — unrelated\n");
        let m = t.memdir();
        let r = m.read("tabs.md").unwrap().revision;
        let edits = FieldEdits {
            name: Some("Tabs: always".into()),
            description: Some("new hook".into()),
            memory_type: Some(MemoryType::Project),
            body: None,
        };
        let out = m.update_fields("tabs.md", &edits, &r).unwrap();
        assert_eq!(out.index_lines_updated, 1);
        assert_eq!(
            t.read("tabs.md"),
            "---\nname: \"Tabs: always\"\ndescription: new hook\noriginSessionId: 8d1c-uuid\ntype: project\ncreated: 2026-01-05\n---\n\nBody [[other]]\n"
        );
        assert_eq!(t.read("MEMORY.md"), "- [Tabs: always](tabs.md) — new hook\n- [Other](other.md) — unrelated\n");
        // Stale revision refused, nothing written.
        let err = m.update_fields("tabs.md", &FieldEdits { body: Some("x".into()), ..Default::default() }, &r).unwrap_err();
        assert_eq!(err.code(), "changed-on-disk");
    }

    #[test]
    fn saving_the_whole_file_brings_the_index_along() {
        // The app's editor saves the whole text; a name or description changed there is the
        // same edit as `memories edit --description`, so index lines still showing the old
        // value follow, and a hand-written hook stays.
        let t = TestDir::new();
        t.write("tabs.md", "---\nname: tabs\ndescription: old hook\n---\n\nBody\n");
        t.write("notes.md", "---\nname: notes\ndescription: what the file says\n---\n");
        t.write("MEMORY.md", "- [tabs](tabs.md) — old hook\n- [notes](notes.md) — my own words\n");
        let m = t.memdir();
        let r = m.read("tabs.md").unwrap().revision;
        let out = m.update("tabs.md", "---\nname: Tabs\ndescription: new hook\n---\n\nBody\n", &r).unwrap();
        assert_eq!((out.index_lines_updated, out.index_error), (1, None));
        let r = m.read("notes.md").unwrap().revision;
        let out = m.update("notes.md", "---\nname: notes\ndescription: what it says now\n---\n", &r).unwrap();
        assert_eq!(out.index_lines_updated, 0);
        assert_eq!(t.read("MEMORY.md"), "- [Tabs](tabs.md) — new hook\n- [notes](notes.md) — my own words\n");
        // A body-only save leaves the index alone; a removed description leaves the hook.
        let r = m.read("tabs.md").unwrap().revision;
        assert_eq!(m.update("tabs.md", "---\nname: Tabs\n---\n\nNew body\n", &r).unwrap().index_lines_updated, 0);
        assert_eq!(t.read("MEMORY.md"), "- [Tabs](tabs.md) — new hook\n- [notes](notes.md) — my own words\n");
        assert!(!t.tree().contains(".mneme-index-sync-"), "no sync note left: {}", t.tree());
        // A stale revision writes neither file.
        let err = m.update("tabs.md", "---\nname: Lost\n---\n", &r).unwrap_err();
        assert_eq!(err.code(), "changed-on-disk");
        assert!(t.read("MEMORY.md").contains("[Tabs]"));
    }

    #[test]
    fn update_fields_refuses_malformed_and_non_utf8() {
        let t = TestDir::new();
        t.write("bad.md", "---\ndescription: [unclosed\n  - : :\n---\n");
        t.write_bytes("bin.md", b"---\ndescription: caf\xE9\n---\n");
        let m = t.memdir();
        let d = FieldEdits { description: Some("x".into()), ..Default::default() };
        let r = m.read("bad.md").unwrap().revision;
        assert_eq!(m.update_fields("bad.md", &d, &r).unwrap_err().code(), "malformed-frontmatter");
        let r = m.read("bin.md").unwrap().revision;
        let err = m.update_fields("bin.md", &d, &r).unwrap_err();
        assert_eq!(err.code(), "not-utf8");
        assert!(err.to_string().starts_with("Mneme will not save bin.md because it is not UTF-8 text: byte 0xE9 on line 2"), "{err}");
        // A line edit of an index in Windows-1252 (a new memory's line) is refused the same way.
        t.write_bytes("MEMORY.md", b"- [Caf\xE9](bin.md) \x96 notes\n");
        let err = m.create(&new_memory("New", "a new one")).unwrap_err();
        assert!(err.to_string().starts_with("Mneme will not save MEMORY.md because it is not UTF-8 text: byte 0xE9 on line 1"), "{err}");
        assert_eq!(std::fs::read(t.mem().join("MEMORY.md")).unwrap(), b"- [Caf\xE9](bin.md) \x96 notes\n");
    }

    #[test]
    fn rename_moves_the_file_and_its_index_line() {
        let t = TestDir::new();
        t.write("old.md", "---\ndescription: d\n---\n");
        t.write("linker.md", "see [[old]]");
        t.write("MEMORY.md", "- [Old](old.md) — d\n- [Linker](linker.md)\n");
        t.write("team/MEMORY.md", "- [Private one](../old.md) — cross link\n");
        let m = t.memdir();
        let r = m.rename("old.md", "sub/new name.md").unwrap();
        assert_eq!(r.index_lines_rewritten, 2);
        assert_eq!(r.links_to_old_name, vec![DanglingLink { from: "linker.md".into(), link: "old".into() }]);
        assert!(!t.exists("old.md"));
        assert_eq!(t.read("sub/new name.md"), "---\ndescription: d\n---\n");
        assert_eq!(t.read("MEMORY.md"), "- [Old](sub/new%20name.md) — d\n- [Linker](linker.md)\n");
        assert_eq!(t.read("team/MEMORY.md"), "- [Private one](../sub/new%20name.md) — cross link\n");
        assert_eq!(m.rename("linker.md", "sub/new name.md").unwrap_err().code(), "already-exists");
        assert_eq!(m.rename("missing.md", "x.md").unwrap_err().code(), "not-found");
        assert_eq!(m.rename("linker.md", "../x.md").unwrap_err().code(), "invalid-path");
    }

    #[test]
    fn index_lines_inside_an_html_comment_are_not_live_entries() {
        // Claude Code strips comment blocks before reading the index: the archived line is
        // neither a duplicate of the live one nor a dangling entry, and no fix touches it.
        let t = TestDir::new();
        t.write("deploy.md", "---\nname: Deploy\ndescription: current\n---\n");
        let index = "<!-- archived\n- [Deploy](deploy.md) — old\n- [Gone](gone.md) — gone\n-->\n- [Deploy](deploy.md) — current\n";
        t.write("MEMORY.md", index);
        let m = t.memdir();
        let h = m.health();
        assert!(h.index.duplicates.is_empty(), "{:?}", h.index.duplicates);
        assert!(h.index.missing_targets.is_empty(), "{:?}", h.index.missing_targets);
        assert_eq!(h.index.entry_count, 1);
        m.reorder_index(Scope::Private, &[]).unwrap();
        assert_eq!(t.read("MEMORY.md"), index, "the live line is kept, the comment left alone");
        // A memory whose only line is commented out is not indexed: create adds a live line.
        let mut n = new_memory("Gone", "back again");
        n.file_name = Some("gone.md".into());
        let c = m.create(&n).unwrap();
        assert!(c.index_line_added);
        assert_eq!(t.read("MEMORY.md"), format!("{index}- [Gone](gone.md) — back again\n"));
    }

    #[test]
    fn a_rename_across_scopes_moves_the_index_line_to_the_other_index() {
        let t = TestDir::new();
        t.write("deploy notes.md", "---\nname: Deploy\n---\n");
        t.write("MEMORY.md", "# Mine\n- [Deploy](deploy%20notes.md) — how we ship\n- [Other](other.md)\n");
        t.write("team/MEMORY.md", "- [CI](ci.md) — green\n");
        let m = t.memdir();
        let r = m.rename("deploy notes.md", "team/deploy notes.md").unwrap();
        assert_eq!(r.index_lines_rewritten, 1);
        assert_eq!(t.read("MEMORY.md"), "# Mine\n- [Other](other.md)\n");
        assert_eq!(t.read("team/MEMORY.md"), "- [CI](ci.md) — green\n- [Deploy](deploy%20notes.md) — how we ship\n");
        // And back, into an index that does not exist yet.
        std::fs::remove_file(t.mem().join("MEMORY.md")).unwrap();
        let r = m.rename("team/deploy notes.md", "sub/d.md").unwrap();
        assert_eq!(r.index_lines_rewritten, 1);
        assert_eq!(t.read("team/MEMORY.md"), "- [CI](ci.md) — green\n");
        assert_eq!(t.read("MEMORY.md"), "- [Deploy](sub/d.md) — how we ship\n");

        // A line the new scope's index already had, pointing across, is retargeted; the
        // moved copy would duplicate it and is dropped.
        t.write("team/MEMORY.md", "- [Shared](../sub/d.md) — cross link\n");
        let r = m.rename("sub/d.md", "team/d.md").unwrap();
        assert_eq!(r.index_lines_rewritten, 1);
        assert_eq!(t.read("team/MEMORY.md"), "- [Shared](d.md) — cross link\n");
        assert_eq!(t.read("MEMORY.md"), "");
    }

    #[test]
    fn a_rename_into_team_is_refused_when_its_index_line_would_publish_a_secret() {
        let t = TestDir::new();
        t.write("ci.md", "clean");
        t.write("MEMORY.md", &format!("- [CI](ci.md) — token {}\n", github_pat()));
        let m = t.memdir().with_team_write_check(refuse_tokens);
        assert_eq!(m.rename("ci.md", "team/ci.md").unwrap_err().to_string(), REFUSED);
        assert!(t.exists("ci.md") && !t.exists("team/ci.md") && !t.exists("team/MEMORY.md"));
    }

    #[test]
    fn a_rename_across_scopes_is_undone_when_the_other_index_cannot_be_written() {
        let t = TestDir::new();
        t.write("a.md", "a");
        t.write("MEMORY.md", "- [A](a.md) — hook\n- [B](b.md)\n");
        t.write_bytes("team/MEMORY.md", b"- [x](x.md) \xFF\n");
        let m = t.memdir();
        assert_eq!(m.rename("a.md", "team/a.md").unwrap_err().code(), "not-utf8");
        assert!(t.exists("a.md") && !t.exists("team/a.md"));
        assert_eq!(t.read("MEMORY.md"), "- [A](a.md) — hook\n- [B](b.md)\n");
    }

    #[test]
    fn move_file_never_replaces_and_keeps_the_file_whole() {
        let t = TestDir::new();
        t.write("a.md", "a");
        t.write("b.md", "b");
        let (a, b, c) = (t.mem().join("a.md"), t.mem().join("b.md"), t.mem().join("c.md"));
        assert_eq!(move_file(&a, &b).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!((t.read("a.md"), t.read("b.md")), ("a".to_string(), "b".to_string()));
        move_file(&a, &c).unwrap();
        assert!(!t.exists("a.md"));
        assert_eq!(t.read("c.md"), "a");
        assert_eq!(link_then_unlink(&c, &b, || {}).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        link_then_unlink(&c, &a, || {}).unwrap();
        assert_eq!(t.tree(), "a.md: a\nb.md: b");
    }

    #[cfg(unix)]
    #[test]
    fn a_file_replaced_while_it_is_moved_is_not_deleted() {
        // Claude Code saves by renaming a new file over the old: if that lands between the
        // link and the unlink, unlinking the old path would delete the only copy of the save.
        let t = TestDir::new();
        t.write("a.md", "old");
        let (a, b) = (t.mem().join("a.md"), t.mem().join("b.md"));
        let err = link_then_unlink(&a, &b, || {
            std::fs::write(t.mem().join("new.tmp"), "saved by Claude Code").unwrap();
            std::fs::rename(t.mem().join("new.tmp"), &a).unwrap();
        })
        .unwrap_err();
        assert!(err.to_string().contains("both are kept"), "{err}");
        assert_eq!(t.read("a.md"), "saved by Claude Code");
        assert_eq!(t.read("b.md"), "old");
    }

    #[test]
    fn an_index_keeps_its_byte_order_mark_at_the_start_whatever_line_goes() {
        let t = TestDir::new();
        t.write("b.md", "b");
        t.write("MEMORY.md", "\u{FEFF}- [A](a.md) — first\n- [B](b.md)\n- [A again](a.md)\n");
        let m = t.memdir();
        // Line 1 moves down below the priority entry.
        m.reorder_index(Scope::Private, &["b.md".to_string()]).unwrap();
        assert_eq!(t.read("MEMORY.md"), "\u{FEFF}- [B](b.md)\n- [A](a.md) — first\n");
        // Line 1 leaves with its file.
        m.rename("b.md", "team/b.md").unwrap();
        assert_eq!(t.read("MEMORY.md"), "\u{FEFF}- [A](a.md) — first\n");
        t.write("MEMORY.md", "\u{FEFF}- [B](b.md)\n- [A](a.md)\n");
        m.rename("team/b.md", "b.md").unwrap();
        assert_eq!(t.read("MEMORY.md"), "\u{FEFF}- [B](b.md)\n- [A](a.md)\n");
        assert_eq!(t.read("team/MEMORY.md"), "");
    }

    #[test]
    fn rename_is_undone_when_the_index_cannot_be_written() {
        let t = TestDir::new();
        t.write("a.md", "a");
        t.write_bytes("MEMORY.md", b"- [A](a.md) \xFF\n");
        let m = t.memdir();
        assert_eq!(m.rename("a.md", "b.md").unwrap_err().code(), "not-utf8");
        assert!(t.exists("a.md") && !t.exists("b.md"));
    }

    #[cfg(unix)]
    #[test]
    fn traversal_and_symlink_escapes_are_refused() {
        use std::os::unix::fs::symlink;
        let t = TestDir::new();
        std::fs::create_dir_all(t.path().join("elsewhere")).unwrap();
        symlink(t.path().join("elsewhere"), t.mem().join("out")).unwrap();
        symlink(t.path().join("victim.md"), t.mem().join("dangling.md")).unwrap();
        t.write_outside("victim.md", "precious");
        std::fs::remove_file(t.path().join("victim.md")).unwrap();
        let m = t.memdir();
        let mut n = new_memory("a", "b");
        n.file_name = Some("out/x.md".into());
        assert_eq!(m.create(&n).unwrap_err().code(), "outside-memdir");
        assert!(!t.path().join("elsewhere/x.md").exists());
        assert_eq!(m.read("out/x.md").unwrap_err().code(), "outside-memdir");
        assert_eq!(m.update("dangling.md", "x", &Revision::ABSENT).unwrap_err().code(), "outside-memdir");
        assert!(!t.path().join("victim.md").exists());
        for bad in ["../escape.md", "/etc/passwd.md", "a/../../b.md"] {
            assert_eq!(m.read(bad).unwrap_err().code(), "invalid-path", "{bad}");
            assert_eq!(m.update(bad, "x", &Revision::ABSENT).unwrap_err().code(), "invalid-path", "{bad}");
        }
    }

    #[test]
    fn write_index_creates_and_checks() {
        let t = TestDir::new();
        let m = t.memdir();
        let r = m.write_index(Scope::Team, "- [x](x.md)\n", &Revision::ABSENT).unwrap();
        assert_eq!(t.read("team/MEMORY.md"), "- [x](x.md)\n");
        assert_eq!(m.write_index(Scope::Team, "again", &Revision::ABSENT).unwrap_err().code(), "changed-on-disk");
        m.write_index(Scope::Team, "", &r).unwrap();
        assert_eq!(m.read_index(Scope::Team).unwrap().content, "");
    }
}
