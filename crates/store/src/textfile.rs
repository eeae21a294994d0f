//! Whole-file edits of the instruction files Claude Code reads (CLAUDE.md, rules,
//! CLAUDE.local.md, a memory folder's MEMORY.md) for front ends with a text editor.
//!
//! Every save names the [`Revision`] the editor started from and is refused with
//! [`TextFileError::ChangedOnDisk`] if the file changed since (Claude Code writes these files
//! too), so the person can reload, overwrite or compare instead of silently losing either
//! version. Writes go through [`crate::atomic`]: temporary file in the same folder, fsync,
//! rename, fsync the folder. Which files may be edited at all is the caller's decision (the
//! api allows only the files a context lists).

use crate::atomic::{fsync_dir, write_temp};
use crate::memdir::Revision;
use std::fs::{self, Metadata};
use std::io;
use std::path::{Path, PathBuf};

/// Why a read or a save did not happen. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum TextFileError {
    /// The file is not the one the editor started from (or, for a new file, now exists).
    #[error("{} changed on disk since you opened it (Claude Code may have written it). Reload it to see the new text, overwrite it with yours, or compare the two first.", path.display())]
    ChangedOnDisk {
        /// The file as the caller named it.
        path: PathBuf,
    },
    /// A folder, device or other non-file.
    #[error("{} is not a regular file; Mneme only edits plain files.", path.display())]
    NotARegularFile {
        /// The path.
        path: PathBuf,
    },
    /// A path with no folder to write in (`/`).
    #[error("{} has no parent folder.", path.display())]
    NoParent {
        /// The path.
        path: PathBuf,
    },
    /// An operating-system error.
    #[error("{}", io_text(action, path, source))]
    Io {
        /// What Mneme was doing ("read", "replace", …).
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

/// [`TextFileError::Io`] for people: what the disk refused and what to do about it, else the
/// system's error and what to check.
fn io_text(action: &str, path: &Path, source: &io::Error) -> String {
    match crate::atomic::Refusal::of(source) {
        Some(r) if action != "read" => format!("Could not {action} {}: {}.", path.display(), r.says(path)),
        Some(_) => format!("Could not read {}: {source}. Check that you may read it, then try again.", path.display()),
        None => format!("Could not {action} {}: {source}. Check that it exists and that you may write there, then try again.", path.display()),
    }
}

impl TextFileError {
    /// The disk's refusal behind this failure, if any ([`crate::atomic::Refusal`]).
    pub fn refused(&self) -> Option<crate::atomic::Refusal> {
        match self {
            TextFileError::Io { source, .. } => crate::atomic::Refusal::of(source),
            _ => None,
        }
    }
}

/// `map_err` adapter for a step of saving `path`: a refusal of the disk is told as the save of
/// the file the person asked to save (the folder, lock or temporary file it came from is a
/// detail to them), any other failure names the step and its path, which is what to look at.
fn save_err<'a>(path: &'a Path, action: &'static str, at: &'a Path) -> impl FnOnce(io::Error) -> TextFileError + 'a {
    move |source| match crate::atomic::Refusal::of(&source) {
        Some(_) => TextFileError::Io { action: "save", path: path.to_path_buf(), source },
        None => TextFileError::Io { action, path: at.to_path_buf(), source },
    }
}

fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> TextFileError + 'a {
    move |source| TextFileError::Io { action, path: path.to_path_buf(), source }
}

/// The bytes and metadata of a regular file (following symbolic links), or `None` if absent.
/// Opening a file to edit it also clears what a save killed there left ([`remove_leftovers`]).
pub fn read(path: &Path) -> Result<Option<(Vec<u8>, Metadata)>, TextFileError> {
    remove_leftovers(path);
    let mut file = match crate::open::open_no_wait(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(io_err("read", path)(e)),
    };
    let meta = file.metadata().map_err(io_err("read", path))?;
    if !meta.is_file() {
        return Err(TextFileError::NotARegularFile { path: path.to_path_buf() });
    }
    let mut bytes = Vec::with_capacity(crate::open::capacity_for(meta.len()));
    io::Read::read_to_end(&mut file, &mut bytes).map_err(io_err("read", path))?;
    Ok(Some((bytes, meta)))
}

/// Removes the temporary files that saves killed mid-write left in the folder `path` is saved
/// in (where a link at `path` leads), by [`crate::atomic::remove_stale_temps`]'s rule: only
/// `.mneme-<pid>-<n>.tmp` names, only of writers that no longer run, never a live process's
/// and never this process's own in flight. Returns what it removed.
///
/// Why here: these files sit in the user's repository (beside a CLAUDE.md, a rule,
/// CLAUDE.local.md), where `git status` shows them, and this module is the only code that
/// writes there, so it is also the only code that removes anything there. It runs when a save
/// starts and when a file is opened to be edited, the first time Mneme comes back to that
/// folder after a killed save, rather than waiting for the next save. The context loader,
/// which lists these folders far more often, stays a reader: showing what Claude Code reads
/// must never change a repository.
pub fn remove_leftovers(path: &Path) -> Vec<PathBuf> {
    let saved_at = fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    match saved_at.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => crate::atomic::remove_stale_temps(dir),
        _ => Vec::new(),
    }
}

/// The file's revision now ([`Revision::ABSENT`] when it does not exist).
pub fn revision(path: &Path) -> Result<Revision, TextFileError> {
    Ok(match read(path)? {
        Some((bytes, meta)) => Revision::of(&bytes, &meta),
        None => Revision::ABSENT,
    })
}

/// Atomically replaces (or, with [`Revision::ABSENT`], creates) `path` if it still matches
/// `expected`. The check runs before the temporary file is written and again just before the
/// rename; Claude Code takes no locks, so only the rename itself remains as a window.
pub fn write_checked(path: &Path, bytes: &[u8], expected: &Revision) -> Result<Revision, TextFileError> {
    let conflict = || TextFileError::ChangedOnDisk { path: path.to_path_buf() };
    // A symlinked rule or CLAUDE.md is edited where it really lives, so the link survives
    // instead of being replaced by a regular file.
    let target = if expected.exists() { fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf()) } else { path.to_path_buf() };
    if !revision(&target)?.matches(expected) {
        return Err(conflict());
    }
    let dir = target.parent().ok_or_else(|| TextFileError::NoParent { path: path.to_path_buf() })?;
    if !expected.exists() {
        fs::create_dir_all(dir).map_err(save_err(path, "create the folder", dir))?;
    }
    // A MEMORY.md is also edited line by line by `Memdir`, which holds its folder's lock from
    // its read to its rename; holding the same lock here keeps a whole-file save from landing
    // in the middle of one of those edits, where neither revision check could see it.
    let _writing = crate::file_lock::FileLock::take_folder(dir).map_err(save_err(path, "lock the folder", dir))?;
    let existing = fs::metadata(&target).ok();
    let (tmp, meta) = write_temp(dir, bytes, existing.as_ref()).map_err(save_err(path, "write a temporary file in", dir))?;
    let published = if expected.exists() {
        match revision(&target) {
            Ok(now) if now.matches(expected) => fs::rename(&tmp, &target).map_err(save_err(path, "replace", &target)),
            Ok(_) => Err(conflict()),
            Err(e) => Err(e),
        }
    } else {
        // A hard link never replaces a file that appeared meanwhile; the rename fallback is
        // for file systems without hard links.
        match fs::hard_link(&tmp, &target) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(conflict()),
            Err(_) if fs::symlink_metadata(&target).is_ok() => Err(conflict()),
            Err(_) => fs::rename(&tmp, &target).map_err(save_err(path, "create", &target)),
        }
    };
    let _ = fs::remove_file(&tmp);
    published?;
    fsync_dir(dir);
    Ok(Revision::of(bytes, &meta))
}

/// Why [`write_text_checked`] did not save: the file is not UTF-8 text, or the write failed.
#[derive(Debug, thiserror::Error)]
pub enum TextSaveError {
    /// The file on disk is not UTF-8: the editor was shown replacement characters for what
    /// could not be decoded, and saving its text would write those over the file's own bytes.
    #[error("Mneme will not save {} because it is not UTF-8 text: {problem}.", path.display())]
    NotUtf8 {
        /// The file as the caller named it.
        path: PathBuf,
        /// What its bytes look like, and how to convert them.
        problem: crate::text_form::NotUtf8,
    },
    /// Everything [`write_checked`] refuses.
    #[error(transparent)]
    File(#[from] TextFileError),
}

impl TextSaveError {
    /// The command the message tells the person to run (the `iconv` that converts the file),
    /// with the message around it as whole sentences, for a screen that shows it apart.
    pub fn command(&self) -> Option<crate::text_form::CommandFix> {
        match self {
            TextSaveError::NotUtf8 { path, problem } => {
                problem.fix(&format!("Mneme will not save {} because it is not UTF-8 text: ", path.display()), "open it again")
            }
            TextSaveError::File(_) => None,
        }
    }
}

/// [`write_checked`] for text typed in an editor: refused if the file on disk is not UTF-8
/// (never saved back with its undecodable bytes replaced), else written in the file's own form
/// ([`crate::text_form::keep_form`]: its line ends and byte-order mark), so a one-line change
/// to a file checked out on Windows stays a one-line change in git.
pub fn write_text_checked(path: &Path, text: &str, expected: &Revision) -> Result<Revision, TextSaveError> {
    let old = if expected.exists() { read(path)?.filter(|(b, m)| Revision::of(b, m).matches(expected)) } else { None };
    let Some((old, _)) = old else {
        // New, or changed since it was read: `write_checked` creates it or says it changed.
        return Ok(write_checked(path, text.as_bytes(), expected)?);
    };
    let old = match String::from_utf8(old) {
        Ok(s) => s,
        Err(e) => {
            let problem = crate::text_form::NotUtf8::of(e.as_bytes()).unwrap_or(crate::text_form::NotUtf8::Truncated);
            return Err(TextSaveError::NotUtf8 { path: path.to_path_buf(), problem });
        }
    };
    let text = crate::text_form::keep_form(&old, text);
    Ok(write_checked(path, text.as_bytes(), expected)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    /// Opening a CLAUDE.md (here through a link, as a shared rule often is) clears what a killed
    /// save left beside the file it leads to; a live writer's temporary file stays.
    #[test]
    #[cfg(target_os = "linux")]
    fn opening_a_file_clears_what_a_killed_save_left_where_it_lives() {
        let dir = tempfile::tempdir().unwrap();
        let (repo, shared) = (dir.path().join("repo"), dir.path().join("shared"));
        fs::create_dir_all(&repo).unwrap();
        fs::create_dir_all(&shared).unwrap();
        fs::write(shared.join("CLAUDE.md"), "text\n").unwrap();
        std::os::unix::fs::symlink(shared.join("CLAUDE.md"), repo.join("CLAUDE.md")).unwrap();
        // A pid far above any the kernel hands out (pid_max is at most 2^22), and our parent's,
        // which runs.
        let dead = shared.join(".mneme-4194399-3.tmp");
        let live = shared.join(format!(".mneme-{}-3.tmp", std::os::unix::process::parent_id()));
        for f in [&dead, &live] {
            fs::write(f, "half a save").unwrap();
        }
        let (bytes, _) = read(&repo.join("CLAUDE.md")).unwrap().unwrap();
        assert_eq!(bytes, b"text\n");
        assert!(!dead.exists(), "the killed save's file is gone");
        assert!(live.exists(), "a running writer's file stays");
    }

    /// A refusal of the disk met while saving names the file the person saved (not the
    /// folder, lock or temporary file it came from) and what to do; another failure names its
    /// step and path, what to look at.
    #[test]
    fn a_refused_save_names_the_file_and_what_to_do() {
        let (file, dir) = (Path::new("/r/CLAUDE.md"), Path::new("/r"));
        let full = save_err(file, "write a temporary file in", dir)(io::Error::from_raw_os_error(28));
        assert_eq!(full.refused(), Some(crate::atomic::Refusal::DiskFull));
        assert_eq!(full.to_string(), "Could not save /r/CLAUDE.md: the disk holding /r/CLAUDE.md is full. Free some space on it, then try again.");
        let ro = save_err(file, "lock the folder", dir)(io::Error::from_raw_os_error(30));
        assert!(ro.to_string().starts_with("Could not save /r/CLAUDE.md: the disk holding /r/CLAUDE.md is mounted read-only."), "{ro}");
        let denied = save_err(file, "replace", file)(io::Error::from_raw_os_error(13));
        assert!(denied.to_string().starts_with("Could not save /r/CLAUDE.md: this account may not change /r/CLAUDE.md"), "{denied}");
        let other = save_err(file, "write a temporary file in", dir)(io::Error::from_raw_os_error(5));
        assert_eq!(other.refused(), None);
        assert!(other.to_string().starts_with("Could not write a temporary file in /r: "), "{other}");
        let read = io_err("read", file)(io::Error::from_raw_os_error(13));
        assert!(read.to_string().contains("Check that you may read it"), "{read}");
    }

    /// A file checked out on Windows, edited in a page whose editor hands back LF text, keeps
    /// its CRLF line ends and byte-order mark: only the edited line changes.
    #[test]
    fn a_text_save_keeps_the_files_line_ends_and_byte_order_mark() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("CLAUDE.md");
        fs::write(&path, "\u{feff}# Rules\r\n\r\n- one\r\n- two\r\n").unwrap();
        let opened = revision(&path).unwrap();
        write_text_checked(&path, "# Rules\n\n- one\n- TWO\n- three\n", &opened).unwrap();
        assert_eq!(fs::read(&path).unwrap(), "\u{feff}# Rules\r\n\r\n- one\r\n- TWO\r\n- three\r\n".as_bytes());
        // A new file is written as typed.
        let new = dir.path().join("CLAUDE.local.md");
        write_text_checked(&new, "a\nb\n", &Revision::ABSENT).unwrap();
        assert_eq!(fs::read(&new).unwrap(), b"a\nb\n");
    }

    /// A Windows-1252 file read for the editor shows U+FFFD for its accented letters; saving
    /// that text would write U+FFFD over them for good, so the save is refused, says what the
    /// bytes look like and how to convert them, and leaves the file as it was.
    #[test]
    fn a_text_save_over_a_file_that_is_not_utf8_is_refused_and_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("CLAUDE.md");
        fs::write(&path, b"# Notes\nCaf\xe9 au lait\n").unwrap();
        let opened = revision(&path).unwrap();
        let err = write_text_checked(&path, "# Notes\nCaf\u{fffd} au lait\nmore\n", &opened).unwrap_err();
        assert!(matches!(err, TextSaveError::NotUtf8 { problem: crate::text_form::NotUtf8::Byte { byte: 0xe9, line: 2 }, .. }), "{err:?}");
        let said = err.to_string();
        assert!(said.starts_with(&format!("Mneme will not save {} because it is not UTF-8 text: byte 0xE9 on line 2", path.display())), "{said}");
        assert!(said.contains("iconv -f WINDOWS-1252 -t UTF-8"), "{said}");
        assert_eq!(fs::read(&path).unwrap(), b"# Notes\nCaf\xe9 au lait\n");
        // A stale revision is still a conflict, whatever the bytes.
        let stale = Revision::of(b"other", &fs::metadata(&path).unwrap());
        assert!(matches!(write_text_checked(&path, "x", &stale), Err(TextSaveError::File(TextFileError::ChangedOnDisk { .. }))));
    }

    #[test]
    fn a_save_waits_for_a_folder_edit_in_progress_and_then_sees_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("MEMORY.md");
        fs::write(&path, "- [a](a.md) — one\n").unwrap();
        let opened = revision(&path).unwrap();
        // What `Memdir` holds while it edits the index.
        let held = crate::file_lock::FileLock::take_folder(dir.path()).unwrap();
        let saver = {
            let path = path.clone();
            std::thread::spawn(move || write_checked(&path, b"whole file from the editor\n", &opened))
        };
        std::thread::sleep(Duration::from_millis(300));
        assert!(!saver.is_finished(), "the save waits while the folder is locked");
        fs::write(&path, "- [a](a.md) — one\n- [b](b.md) — two\n").unwrap();
        drop(held);
        let err = saver.join().unwrap().unwrap_err();
        assert!(matches!(err, TextFileError::ChangedOnDisk { .. }), "{err}");
        assert_eq!(fs::read_to_string(&path).unwrap(), "- [a](a.md) — one\n- [b](b.md) — two\n", "the index edit survives");
    }
}
