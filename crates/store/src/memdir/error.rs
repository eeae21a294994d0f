//! What can go wrong in the memory folder, worded for the person who has to act on it.

use crate::atomic::Refusal;
use std::io;
use std::path::{Path, PathBuf};

/// Every failure of a memory-folder operation. Messages say what happened and what to do;
/// [`code`](MemdirError::code) gives front ends a closed set of stable identifiers.
#[derive(Debug, thiserror::Error)]
pub enum MemdirError {
    /// The optimistic-concurrency check failed: the file is not what the caller read.
    #[error("{path} changed on disk since you opened it (Claude Code may have written it). Reload it, then make your edit again.")]
    ChangedOnDisk {
        /// The file, relative to the memory folder.
        path: String,
    },
    /// A create would make a second memory of a name (`[[links]]` find a memory by its name).
    #[error("A memory named {name:?} already exists ({path}). Open that one and edit it, or choose another name: [[links]] find a memory by its name.")]
    NameTaken {
        /// The name asked for.
        name: String,
        /// The memory that has it, relative to the memory folder.
        path: String,
    },
    /// A create, rename or restore would have replaced an existing file.
    #[error("{path} already exists in the memory folder. Choose another file name, or open the existing memory and edit it instead.")]
    AlreadyExists {
        /// The file, relative to the memory folder.
        path: String,
    },
    /// The file to read, edit, rename or delete is not there.
    #[error("{path} does not exist in the memory folder; it may have been renamed or deleted. Reload the list and try again.")]
    NotFound {
        /// The file, relative to the memory folder.
        path: String,
    },
    /// A relative path failed validation (traversal, absolute, not `.md`, …).
    #[error("\"{path}\" is not a usable memory path: {reason}.")]
    InvalidPath {
        /// The path as given.
        path: String,
        /// Why it was refused.
        reason: String,
    },
    /// A path resolves outside the memory folder, through a symbolic link.
    #[error("\"{path}\" leads outside the memory folder {root} ({detail}). Mneme only reads and writes inside the memory folder; remove the link or pick a path inside the folder.")]
    OutsideMemdir {
        /// The path as given.
        path: String,
        /// The memory folder.
        root: PathBuf,
        /// Which link escapes, or why containment could not be checked.
        detail: String,
    },
    /// The path is a folder, a symbolic link, a pipe or similar where a plain file was needed.
    #[error("{path} is not a regular file: {detail}. Mneme only reads and writes plain files; move it aside or delete it.")]
    NotARegularFile {
        /// The path, relative to the memory folder.
        path: String,
        /// What it is instead.
        detail: String,
    },
    /// A field of a request (name, description, revision, trash id, …) was refused.
    #[error("The {field} is not usable: {reason}.")]
    InvalidInput {
        /// Which input.
        field: &'static str,
        /// Why, and what would be accepted.
        reason: String,
    },
    /// A field edit was asked of a file whose frontmatter YAML does not parse.
    #[error("The frontmatter of {path} is malformed ({detail}). Fix it in the text editor before editing its fields.")]
    MalformedFrontmatter {
        /// The file, relative to the memory folder.
        path: String,
        /// The YAML error.
        detail: String,
    },
    /// A field edit could not be made without disturbing other frontmatter.
    #[error("Mneme cannot change the frontmatter of {path} without rewriting parts it does not understand ({reason}). Edit the file as text instead.")]
    FrontmatterNotEditable {
        /// The file, relative to the memory folder.
        path: String,
        /// What stood in the way.
        reason: String,
    },
    /// A file to change in place (the inbox's appends) is not valid UTF-8.
    #[error("{path} is not valid UTF-8, so Mneme will not change it (that would replace the bytes it cannot read for good): {}.", problem.then("try again"))]
    NotUtf8 {
        /// The file, relative to the memory folder.
        path: String,
        /// What its bytes look like, and how to convert them (UTF-16 needs another command
        /// than Windows-1252).
        problem: crate::text_form::NotUtf8,
    },
    /// A whole-file save over a file that is not UTF-8: the editor was shown replacement
    /// characters for what could not be decoded, and saving would write them over the file's
    /// own bytes for good.
    #[error("Mneme will not save {path} because it is not UTF-8 text: {problem}.")]
    NotUtf8Text {
        /// The file, relative to the memory folder.
        path: String,
        /// What its bytes look like, and how to convert them.
        problem: crate::text_form::NotUtf8,
    },
    /// The release's memory scan cannot list the folder, so Claude Code's recall sees no
    /// memories at all (a link that leads back into a folder being walked, or a link into a
    /// tree too large to walk).
    #[error("Claude Code {release} cannot list this memory folder: {reason}. Its memory scan then finds nothing, so recall never offers a memory from here. Remove or replace the link {link}.")]
    ListingFails {
        /// The release whose scan fails.
        release: String,
        /// The link, relative to the memory folder.
        link: String,
        /// What goes wrong.
        reason: String,
    },
    /// The memory folder path names something that is not a folder.
    #[error("The memory folder {root} is not a folder. Check the autoMemoryDirectory setting, or move the file that is in the way.")]
    RootNotADirectory {
        /// The configured memory folder.
        root: PathBuf,
    },
    /// The trash folder was configured inside the memory folder.
    #[error("The trash folder {trash} is inside the memory folder {root}, where Claude Code would read deleted memories as live ones. Use a trash folder in Mneme's data directory.")]
    TrashInsideMemdir {
        /// The configured trash folder.
        trash: PathBuf,
        /// The memory folder.
        root: PathBuf,
    },
    /// No trash entry has this id.
    #[error("No trash entry has the id \"{id}\"; it may have been restored or purged already.")]
    TrashEntryNotFound {
        /// The id asked for.
        id: String,
    },
    /// A trash entry's record is missing or unreadable.
    #[error("Trash entry \"{id}\" is damaged ({detail}); its files are still in {dir}. Restore them by hand.")]
    TrashEntryDamaged {
        /// The entry.
        id: String,
        /// Its folder.
        dir: PathBuf,
        /// What is wrong with it.
        detail: String,
    },
    /// A trash entry whose record a newer Mneme wrote, in a format this build would misread:
    /// not restored or settled here (acting on fields read as this build's could put the wrong
    /// file back, or none), and kept until a newer Mneme restores it or the user purges it.
    #[error("Trash entry \"{id}\" was put in the trash by a newer Mneme: update Mneme to restore it. This build leaves it as it is, in {} (its record is format {}; this build reads format {} and older).", dir.display(), source.found, source.supported)]
    TrashEntryNewer {
        /// The entry.
        id: String,
        /// Its folder.
        dir: PathBuf,
        /// The record's format and the newest this build reads.
        source: mneme_core::own_files::NewerFormat,
    },
    /// A delete failed after the file had gone to the trash, and it could not be put back
    /// (something now exists where it was, most likely written by Claude Code meanwhile). The
    /// trash entry is kept: it holds the only copy.
    #[error("{cause} The memory had already been moved to the trash, and {path} now exists again, so it stays there as trash entry \"{id}\": move the new {path} aside, then restore the entry from the trash.")]
    LeftInTrash {
        /// The file, relative to the memory folder.
        path: String,
        /// The trash entry that holds it.
        id: String,
        /// Why the delete failed.
        cause: Box<MemdirError>,
    },
    /// Deleting trash entries for good (one, or the whole trash) met an entry the disk would
    /// not let go of: `deleted` entries went, those in `kept` are whole in the trash, and those
    /// in `damaged` lost their record on the way (their files are still there, listed among
    /// the damaged entries).
    #[error("{cause} {}", purge_outcome(*deleted, kept, damaged))]
    PurgeRefused {
        /// Entries deleted for good before or after the refusal.
        deleted: usize,
        /// The ids of the entries still whole in the trash.
        kept: Vec<String>,
        /// The ids of the entries left partly deleted.
        damaged: Vec<String>,
        /// The first refusal.
        cause: Box<MemdirError>,
    },
    /// A trash entry belongs to a different memory folder.
    #[error("Trash entry \"{id}\" came from another memory folder ({origin}). Open that project to restore it.")]
    TrashEntryForeign {
        /// The entry.
        id: String,
        /// The memory folder it was deleted from.
        origin: PathBuf,
    },
    /// The team-write check refused content for team memory (something that looks like a
    /// secret; the message names the rule labels, `Not written to team memory: …`).
    #[error("{refused}")]
    SecretsInTeamMemory {
        /// The file, relative to the memory folder.
        path: String,
        /// The check's refusal, for the person (rule labels, never the secret).
        refused: String,
    },
    /// An index fix would add a line holding `-->` below an HTML comment left open: the line
    /// would close it, and Claude Code strips a closed comment, so every line from the `<!--`
    /// on would no longer be read.
    #[error("{index} line {line} opens an HTML comment (<!--) that is never closed, and the line Fix index would add for {closed_by} holds -->, which closes it: Claude Code would then hide every line from the <!-- to there. Close the comment with --> (or remove the <!--), then fix the index again.")]
    IndexCommentOpen {
        /// `MEMORY.md` or `team/MEMORY.md`.
        index: String,
        /// The 1-based line holding the `<!--`.
        line: usize,
        /// The memory whose new line would close the comment, relative to the memory folder.
        closed_by: String,
    },
    /// An operating-system error.
    #[error("{}", io_text(action, path, source))]
    Io {
        /// What Mneme was doing ("read", "write", "rename", …).
        action: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
}

impl MemdirError {
    /// A stable identifier for front ends (`changed-on-disk`, `not-found`, …).
    pub fn code(&self) -> &'static str {
        match self {
            MemdirError::ChangedOnDisk { .. } => "changed-on-disk",
            MemdirError::AlreadyExists { .. } | MemdirError::NameTaken { .. } => "already-exists",
            MemdirError::NotFound { .. } => "not-found",
            MemdirError::InvalidPath { .. } => "invalid-path",
            MemdirError::OutsideMemdir { .. } => "outside-memdir",
            MemdirError::NotARegularFile { .. } => "not-a-regular-file",
            MemdirError::InvalidInput { .. } => "invalid-input",
            MemdirError::MalformedFrontmatter { .. } => "malformed-frontmatter",
            MemdirError::FrontmatterNotEditable { .. } => "frontmatter-not-editable",
            MemdirError::NotUtf8 { .. } | MemdirError::NotUtf8Text { .. } => "not-utf8",
            MemdirError::RootNotADirectory { .. } => "root-not-a-directory",
            MemdirError::ListingFails { .. } => "listing-fails",
            MemdirError::TrashInsideMemdir { .. } => "trash-inside-memdir",
            MemdirError::TrashEntryNotFound { .. } => "trash-entry-not-found",
            MemdirError::TrashEntryDamaged { .. } => "trash-entry-damaged",
            MemdirError::TrashEntryNewer { .. } => "trash-entry-newer",
            MemdirError::TrashEntryForeign { .. } => "trash-entry-foreign",
            MemdirError::LeftInTrash { cause, .. } | MemdirError::PurgeRefused { cause, .. } => cause.code(),
            MemdirError::SecretsInTeamMemory { .. } => "secrets-in-team-memory",
            MemdirError::IndexCommentOpen { .. } => "index-comment-open",
            MemdirError::Io { .. } => match self.refused() {
                Some(Refusal::DiskFull) => "disk-full",
                Some(Refusal::ReadOnly) => "read-only",
                Some(Refusal::PermissionDenied) => "permission-denied",
                None => "io",
            },
        }
    }

    /// [`MemdirError::NotUtf8`] for a file at `path` whose `bytes` are not UTF-8 (what
    /// `String::from_utf8`'s error hands back), saying which encoding they look like.
    pub fn not_utf8(path: impl Into<String>, bytes: &[u8]) -> Self {
        let problem = crate::text_form::NotUtf8::of(bytes).unwrap_or(crate::text_form::NotUtf8::Truncated);
        MemdirError::NotUtf8 { path: path.into(), problem }
    }

    /// The command the message tells the person to run, with the message around it as whole
    /// sentences, for a screen that shows the command apart to copy (the `iconv` that converts
    /// a file to UTF-8). The message itself names it too, for a terminal.
    pub fn command(&self) -> Option<crate::text_form::CommandFix> {
        match self {
            MemdirError::NotUtf8 { path, problem } => problem.fix(
                &format!("{path} is not valid UTF-8, so Mneme will not change it (that would replace the bytes it cannot read for good): "),
                "try again",
            ),
            MemdirError::NotUtf8Text { path, problem } => {
                problem.fix(&format!("Mneme will not save {path} because it is not UTF-8 text: "), "open it again")
            }
            _ => None,
        }
    }

    /// The disk's refusal behind this failure (a full or read-only disk, a folder this account
    /// may not write), for front ends that give each its own kind and words.
    pub fn refused(&self) -> Option<Refusal> {
        match self {
            MemdirError::Io { source, .. } => Refusal::of(source),
            MemdirError::LeftInTrash { cause, .. } | MemdirError::PurgeRefused { cause, .. } => cause.refused(),
            _ => None,
        }
    }
}

/// What a [`MemdirError::PurgeRefused`] deleted and kept, after the refusal's own sentence.
fn purge_outcome(deleted: usize, kept: &[String], damaged: &[String]) -> String {
    let named = |ids: &[String]| {
        let quoted: Vec<String> = ids.iter().take(3).map(|id| format!("\"{id}\"")).collect();
        let (noun, verb) = if ids.len() == 1 { ("Trash entry", "is") } else { ("Trash entries", "are") };
        let list = match (quoted.as_slice(), ids.len()) {
            ([one], 1) => one.clone(),
            (_, n) if n > 3 => format!("{} and {} more", quoted.join(", "), n - 3),
            (shown, _) => format!("{} and {}", shown[..shown.len() - 1].join(", "), shown[shown.len() - 1]),
        };
        (format!("{noun} {list}"), verb)
    };
    if deleted == 0 && damaged.is_empty() {
        return match kept {
            [id] => format!("Nothing was deleted: trash entry \"{id}\" is still in the trash."),
            _ => format!("Nothing was deleted: all {} entries are still in the trash.", kept.len()),
        };
    }
    let mut out = Vec::new();
    if deleted > 0 {
        out.push(format!("{deleted} trash {} deleted for good.", if deleted == 1 { "entry was" } else { "entries were" }));
    }
    if !kept.is_empty() {
        let (who, verb) = named(kept);
        out.push(format!("{who} {verb} still in the trash."));
    }
    if !damaged.is_empty() {
        let (who, _) = named(damaged);
        let (was, it) = if damaged.len() == 1 { ("was", "it") } else { ("were", "them") };
        out.push(format!(
            "{who} {was} only partly deleted: what is left is listed among the damaged entries of the trash; delete {it} again once the disk allows it."
        ));
    }
    out.join(" ")
}

/// [`MemdirError::Io`] for people: a write the disk refused says which refusal and what to do
/// about it; anything else names the system's error and what to check.
fn io_text(action: &str, path: &Path, source: &io::Error) -> String {
    let access = access_for(action);
    match Refusal::of(source) {
        Some(r) if access == "write" => format!("Could not {action} {}: {}.", path.display(), r.says(path)),
        _ => format!("Could not {action} {}: {source}. Check that it exists and that you may {access} there, then try again.", path.display()),
    }
}

/// Whether a failed `action` needed to read or to write: what to check ("read" for a read, a
/// listing, an inspection or opening the folder; "write" for everything that changes a file).
fn access_for(action: &str) -> &'static str {
    const READS: [&str; 6] = ["read", "list", "inspect", "open", "check", "find"];
    if READS.iter().any(|r| action == *r || action.starts_with(&format!("{r} "))) {
        "read"
    } else {
        "write"
    }
}

/// `map_err` adapter: `fs::read(p).map_err(io_err("read", p))`.
pub(crate) fn io_err<'a>(action: &'static str, path: &'a Path) -> impl FnOnce(io::Error) -> MemdirError + 'a {
    move |source| MemdirError::Io { action, path: path.to_path_buf(), source }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_read_says_read_and_a_failed_write_says_write() {
        let io = |action| MemdirError::Io { action, path: PathBuf::from("/m"), source: io::Error::from(io::ErrorKind::PermissionDenied) };
        for action in ["read", "list the trash folder", "inspect", "open the memory folder", "check where this path leads"] {
            let text = io(action).to_string();
            assert!(text.contains("that you may read there") && !text.contains("write"), "{text}");
        }
        for action in ["write", "create the folder", "rename", "move to the trash", "remove", "restore", "replace"] {
            let text = io(action).to_string();
            assert!(text.contains("this account may not change /m") && !text.contains("read"), "{text}");
            // A failure that is no refusal (an I/O error of the disk itself) names what to check.
            let text = MemdirError::Io { action, path: PathBuf::from("/m"), source: io::Error::from_raw_os_error(5) }.to_string();
            assert!(text.contains("that you may write there"), "{text}");
        }
        let text = MemdirError::TrashEntryNotFound { id: "1-a".into() }.to_string();
        assert!(text.contains("No trash entry has the id \"1-a\"") && !text.to_lowercase().contains("reload"), "{text}");
    }

    /// A write the disk refused is its own kind with its own way out, not the system's bare
    /// words; a refused read still says to check the permissions to read.
    #[test]
    fn a_refused_write_says_which_refusal_and_what_to_do() {
        let io = |action, errno| MemdirError::Io { action, path: PathBuf::from("/m/a.md"), source: io::Error::from_raw_os_error(errno) };
        let full = io("write", 28);
        assert_eq!((full.code(), full.refused()), ("disk-full", Some(Refusal::DiskFull)));
        assert!(full.to_string().contains("the disk holding /m/a.md is full. Free some space on it"), "{full}");
        let quota = io("write", 122);
        assert_eq!(quota.code(), "disk-full", "{quota}");
        let ro = io("create the folder", 30);
        assert_eq!((ro.code(), ro.refused()), ("read-only", Some(Refusal::ReadOnly)));
        assert!(ro.to_string().contains("is mounted read-only. Remount it read-write"), "{ro}");
        let denied = io("move to the trash", 13);
        assert_eq!(denied.code(), "permission-denied");
        assert!(denied.to_string().contains("this account may not change /m/a.md") && denied.to_string().contains("Ask its owner for write access"), "{denied}");
        let read = io("read", 13);
        assert_eq!(read.code(), "permission-denied");
        assert!(read.to_string().contains("that you may read there"), "{read}");
        let other = io("write", 5);
        assert_eq!((other.code(), other.refused()), ("io", None));
        let left = MemdirError::LeftInTrash { path: "a.md".into(), id: "1-a".into(), cause: Box::new(io("restore", 28)) };
        assert_eq!((left.code(), left.refused()), ("disk-full", Some(Refusal::DiskFull)));
    }

    /// A purge the disk refused says what went and what is still in the trash.
    #[test]
    fn a_refused_purge_says_what_was_and_was_not_deleted() {
        let ids = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let said = |deleted, kept: &[&str], damaged: &[&str]| {
            let e = MemdirError::PurgeRefused { deleted, kept: ids(kept), damaged: ids(damaged), cause: Box::new(MemdirError::Io { action: "delete for good", path: PathBuf::from("/t/1-a"), source: io::Error::from_raw_os_error(30) }) };
            assert_eq!((e.code(), e.refused()), ("read-only", Some(Refusal::ReadOnly)));
            let text = e.to_string();
            assert!(text.starts_with("Could not delete for good /t/1-a: the disk holding /t/1-a is mounted read-only."), "{text}");
            text.split_once("then try again. ").map(|(_, outcome)| outcome.to_string()).unwrap()
        };
        assert_eq!(said(0, &["1-a"], &[]), "Nothing was deleted: trash entry \"1-a\" is still in the trash.");
        assert_eq!(said(0, &["1-a", "2-b"], &[]), "Nothing was deleted: all 2 entries are still in the trash.");
        assert_eq!(said(1, &["2-b"], &[]), "1 trash entry was deleted for good. Trash entry \"2-b\" is still in the trash.");
        assert_eq!(said(3, &["a", "b", "c", "d", "e"], &[]), "3 trash entries were deleted for good. Trash entries \"a\", \"b\", \"c\" and 2 more are still in the trash.");
        assert_eq!(said(0, &["a", "b"], &["c"]), "Trash entries \"a\" and \"b\" are still in the trash. Trash entry \"c\" was only partly deleted: what is left is listed among the damaged entries of the trash; delete it again once the disk allows it.");
    }

    #[test]
    fn a_newer_mneme_s_trash_entry_says_to_update_mneme() {
        let e = MemdirError::TrashEntryNewer { id: "1-a".into(), dir: PathBuf::from("/t/1-a"), source: mneme_core::own_files::NewerFormat { found: 3, supported: 2 } };
        let text = e.to_string();
        assert!(text.starts_with("Trash entry \"1-a\" was put in the trash by a newer Mneme: update Mneme to restore it."), "{text}");
        assert!(text.contains("/t/1-a") && text.contains("format 3"), "{text}");
    }
}
