//! Whole-file editing for front ends with a text editor: a memory's topic file, and the
//! CLAUDE.md, rules, CLAUDE.local.md and MEMORY.md files that "What Claude sees" lists.
//!
//! Every save names the revision the editor started from and is refused with
//! [`ErrorCode::Conflict`] if the file changed since (Claude Code writes these files too), so
//! the person can reload, overwrite or compare instead of silently losing either version. The
//! reading and the checked, atomic write are `mneme_store::textfile`; this module decides which
//! files a front end may edit (those the context lists).

use crate::context::absolute;
use crate::{ApiError, ContextRequest, ErrorCode, Mneme};
use mneme_claudemd::SkipReason;
use mneme_store::memdir::{MemdirError, Problem, Revision, INDEX_FILE};
use mneme_store::textfile::{self, TextFileError, TextSaveError};
use serde::Serialize;
use std::fs;
use std::path::{Path, PathBuf};

/// A file's text with the revision to hand back when saving it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct FileText {
    pub path: PathBuf,
    /// The whole file (invalid UTF-8 is shown with replacement characters).
    pub content: String,
    /// `absent` when the file does not exist yet (only a memory folder's MEMORY.md).
    pub revision: String,
    /// The file is not valid UTF-8 (a Latin-1 or UTF-16 file): `content` shows the bytes it
    /// could not read as replacement characters, and saving it writes those for good.
    pub not_utf8: bool,
    /// Why it is not UTF-8 (which byte, the encoding it looks like) and the command that
    /// converts it, with `relPath` the file's name; `None` for a UTF-8 file.
    pub problem: Option<Problem>,
}

/// Where a save landed and the revision to use for the next save.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct SavedFile {
    pub path: PathBuf,
    pub revision: String,
}

/// A memory saved whole, and what its `MEMORY.md` lines did.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct SavedMemory {
    pub path: PathBuf,
    pub revision: String,
    /// Index lines whose title or hook followed a changed name or description (lines written
    /// by hand, that showed something else, stay as they are).
    pub index_lines_updated: u32,
    /// Set when the memory was saved but its index lines could not follow; the health
    /// meter then lists them, and its fix brings them in line.
    pub index_error: Option<String>,
}

/// A store error as the api's: a stale revision is a [`ErrorCode::Conflict`] with the one
/// message every refused save carries, so each front end offers the same choices.
impl From<TextFileError> for ApiError {
    fn from(e: TextFileError) -> ApiError {
        let code = match &e {
            TextFileError::ChangedOnDisk { .. } => ErrorCode::Conflict,
            TextFileError::NotARegularFile { .. } | TextFileError::NoParent { .. } => ErrorCode::InvalidInput,
            TextFileError::Io { source, .. } => ErrorCode::for_io(source),
        };
        ApiError::new(code, e.to_string())
    }
}

/// A text save refused because the file is not UTF-8 is bad input (what to do is in the
/// message: convert the file); anything else as [`TextFileError`].
impl From<TextSaveError> for ApiError {
    fn from(e: TextSaveError) -> ApiError {
        match e {
            TextSaveError::File(e) => e.into(),
            e @ TextSaveError::NotUtf8 { .. } => ApiError::new(ErrorCode::InvalidInput, e.to_string()).with_command(e.command()),
        }
    }
}

pub(crate) fn parse_revision(revision: &str) -> Result<Revision, ApiError> {
    revision.trim().parse::<Revision>().map_err(ApiError::from)
}

impl Mneme {
    /// Replaces a topic file's whole text, if it still matches `revision` (from
    /// [`Mneme::memory`] or an earlier save).
    pub fn save_memory(
        &self,
        req: &ContextRequest,
        rel_path: &str,
        content: &str,
        revision: &str,
    ) -> Result<SavedMemory, ApiError> {
        let expected = parse_revision(revision)?;
        let (_, m) = self.memdir(req)?;
        let path = rel_path.split('/').fold(m.root().to_path_buf(), |p, part| p.join(part));
        match m.update(rel_path, content, &expected) {
            Ok(done) => Ok(SavedMemory {
                path,
                revision: done.revision.to_string(),
                index_lines_updated: u32::try_from(done.index_lines_updated).unwrap_or(u32::MAX),
                index_error: done.index_error,
            }),
            Err(MemdirError::ChangedOnDisk { .. }) => Err(TextFileError::ChangedOnDisk { path }.into()),
            Err(e) => Err(e.into()),
        }
    }

    /// The text of a CLAUDE.md, rule, CLAUDE.local.md or MEMORY.md file that the context of
    /// `req` lists (loaded or skipped), or of the memory folder's MEMORY.md.
    pub fn read_file(&self, req: &ContextRequest, path: &Path) -> Result<FileText, ApiError> {
        let (path, is_index) = self.editable_path(req, path)?;
        match textfile::read(&path)? {
            Some((bytes, meta)) => Ok(FileText {
                revision: Revision::of(&bytes, &meta).to_string(),
                not_utf8: std::str::from_utf8(&bytes).is_err(),
                problem: std::str::from_utf8(&bytes).is_err().then(|| {
                    Problem::not_utf8(path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default(), &bytes)
                }),
                content: String::from_utf8_lossy(&bytes).into_owned(),
                path,
            }),
            None if is_index => {
                Ok(FileText { path, content: String::new(), revision: Revision::ABSENT.to_string(), not_utf8: false, problem: None })
            }
            None => Err(ApiError::not_found(format!(
                "{} no longer exists; it may have been moved or deleted. Reload the context.",
                path.display()
            ))),
        }
    }

    /// Replaces the whole text of a file [`Mneme::read_file`] may read, if it still matches
    /// `revision`. With `absent` the file is created and must still not exist. The file keeps
    /// its line ends and byte-order mark (an editor hands back LF text); one that is not UTF-8
    /// is refused rather than saved with its undecodable bytes replaced.
    pub fn save_file(&self, req: &ContextRequest, path: &Path, content: &str, revision: &str) -> Result<SavedFile, ApiError> {
        let expected = parse_revision(revision)?;
        let (path, _) = self.editable_path(req, path)?;
        let rev = textfile::write_text_checked(&path, content, &expected)?;
        Ok(SavedFile { path, revision: rev.to_string() })
    }

    /// `path` (relative to the cwd or absolute) if the context of `req` shows it, with whether
    /// it is the memory folder's MEMORY.md (which may not exist yet); else InvalidInput: a
    /// browser page must not be able to make Mneme read or write anywhere else.
    fn editable_path(&self, req: &ContextRequest, path: &Path) -> Result<(PathBuf, bool), ApiError> {
        let view = self.context(req)?;
        let wanted = absolute(&req.cwd, path);
        let index = view.auto_memory.dir.join(INDEX_FILE);
        // A skipped file Claude Code reads in other circumstances (an excluded CLAUDE.md, a
        // conditional rule, an empty one) is the user's to edit. An `@include` target it refuses to
        // follow is not: the CLAUDE.md naming it may be a cloned repository's, and `@~/.ssh/id_rsa`
        // must not make the file readable and writable from the window.
        let never_read = |r: &SkipReason| {
            matches!(
                r,
                SkipReason::ExternalInclude
                    | SkipReason::NonTextExtension
                    | SkipReason::DepthLimit
                    | SkipReason::SymlinkOutsideProject { .. }
                    | SkipReason::Unreadable { .. }
            )
        };
        let listed = view
            .files
            .iter()
            .map(|f| &f.path)
            .chain(view.skipped.iter().filter(|s| !never_read(&s.detail)).map(|s| &s.path))
            .chain(std::iter::once(&index));
        let wanted_real = fs::canonicalize(&wanted).ok();
        for candidate in listed {
            // Listed paths are as the loader spelled them (a symlinked cwd stays symlinked), so
            // a path naming the same file through another spelling is the same file.
            let same = *candidate == wanted
                || wanted_real.as_ref().is_some_and(|w| fs::canonicalize(candidate).ok().as_ref() == Some(w));
            if same {
                return Ok((candidate.clone(), *candidate == index));
            }
        }
        Err(ApiError::invalid(format!(
            "{} is not one of the files Claude Code reads from {}, so Mneme will not open or write it. Pick a file \
             from the context list.",
            wanted.display(),
            req.cwd.display()
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FixedClock, NewMemoryRequest};
    use mneme_testsupport::TestHome;
    use std::sync::Arc;

    fn world() -> (TestHome, Mneme, ContextRequest) {
        let home = TestHome::new();
        let repo = home.git_repo("repo");
        let clock = Arc::new(FixedClock::at_unix_secs(1_764_400_000));
        let mneme = Mneme::new(home.env.clone(), clock);
        let req = ContextRequest { cwd: repo, date: Some("2025-11-29".into()), ..Default::default() };
        (home, mneme, req)
    }

    fn new_memory(mneme: &Mneme, req: &ContextRequest) -> String {
        let created = mneme
            .create_memory(
                req,
                &NewMemoryRequest {
                    name: "Testing".into(),
                    description: "how we test".into(),
                    kind: "feedback".into(),
                    body: "Run the suite.".into(),
                    file_name: None,
                },
            )
            .unwrap();
        created.rel_path
    }

    #[test]
    fn save_memory_round_trips_and_refuses_a_stale_revision() {
        let (_home, mneme, req) = world();
        let rel = new_memory(&mneme, &req);
        let detail = mneme.memory(&req, &rel).unwrap();
        let text = detail.content.replace("Run the suite.", "Run the whole suite.");
        let saved = mneme.save_memory(&req, &rel, &text, &detail.revision).unwrap();
        assert_eq!(fs::read_to_string(&saved.path).unwrap(), text);
        assert_eq!(mneme.memory(&req, &rel).unwrap().revision, saved.revision);

        let err = mneme.save_memory(&req, &rel, "lost", &detail.revision).unwrap_err();
        assert_eq!(err.code, ErrorCode::Conflict);
        for word in ["Reload", "overwrite", "compare"] {
            assert!(err.message.contains(word), "{}", err.message);
        }
        assert_eq!(fs::read_to_string(&saved.path).unwrap(), text, "a refused save leaves the file alone");

        let err = mneme.save_memory(&req, &rel, "x", "garbage").unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
        let err = mneme.save_memory(&req, "../escape.md", "x", &saved.revision).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
    }

    #[test]
    fn read_and_save_a_listed_claude_md_keeping_permissions() {
        let (home, mneme, req) = world();
        let claude_md = home.write(req.cwd.join("CLAUDE.md"), "Use tabs.\n");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&claude_md, fs::Permissions::from_mode(0o640)).unwrap();
        }
        let file = mneme.read_file(&req, Path::new("CLAUDE.md")).unwrap();
        assert_eq!(file.path, claude_md);
        assert_eq!(file.content, "Use tabs.\n");

        let saved = mneme.save_file(&req, &claude_md, "Use spaces.\n", &file.revision).unwrap();
        assert_eq!(fs::read_to_string(&claude_md).unwrap(), "Use spaces.\n");
        assert_eq!(mneme.read_file(&req, &claude_md).unwrap().revision, saved.revision);
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&claude_md).unwrap().permissions().mode() & 0o777, 0o640);
        }
        let leftovers: Vec<_> = fs::read_dir(&req.cwd)
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty(), "temporary files are cleaned up");

        let err = mneme.save_file(&req, &claude_md, "stale", &file.revision).unwrap_err();
        assert_eq!(err.code, ErrorCode::Conflict);
        assert_eq!(fs::read_to_string(&claude_md).unwrap(), "Use spaces.\n");
    }

    /// A CLAUDE.md checked out on Windows keeps its CRLF line ends and byte-order mark when
    /// the editor hands back LF text; a Windows-1252 rule is shown but not saved over.
    #[test]
    fn saves_keep_a_windows_files_form_and_refuse_one_that_is_not_utf8() {
        let (home, mneme, req) = world();
        let claude_md = home.write(req.cwd.join("CLAUDE.md"), "\u{feff}# Team\r\n\r\nUse tabs.\r\nRun tests.\r\n");
        let file = mneme.read_file(&req, &claude_md).unwrap();
        let typed = file.content.replace("\r\n", "\n").replace("tabs", "spaces");
        mneme.save_file(&req, &claude_md, &typed, &file.revision).unwrap();
        assert_eq!(fs::read(&claude_md).unwrap(), "\u{feff}# Team\r\n\r\nUse spaces.\r\nRun tests.\r\n".as_bytes());

        let rule = req.cwd.join(".claude/rules/legacy.md");
        home.write(&rule, "");
        fs::write(&rule, b"Caf\xe9 au lait.\n").unwrap();
        let file = mneme.read_file(&req, &rule).unwrap();
        assert!(file.not_utf8);
        // Why, and the command that converts it, apart from the prose; a UTF-16 file gets its own.
        let problem = file.problem.as_ref().unwrap();
        assert_eq!(problem.command.as_ref().map(|c| c.line.as_str()), Some("iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new"));
        assert!(problem.message.contains("byte 0xE9 on line 1"), "{}", problem.message);
        assert_eq!(problem.rel_path, "legacy.md");
        let wide = req.cwd.join(".claude/rules/wide.md");
        home.write(&wide, "");
        fs::write(&wide, [&[0xff, 0xfe][..], &"Hi\n".encode_utf16().flat_map(u16::to_le_bytes).collect::<Vec<u8>>()].concat()).unwrap();
        let wide = mneme.read_file(&req, &wide).unwrap().problem.unwrap();
        assert_eq!(wide.command.as_ref().map(|c| c.line.as_str()), Some("iconv -f UTF-16 -t UTF-8 FILE > FILE.new"));
        assert!(mneme.read_file(&req, &claude_md).unwrap().problem.is_none());
        let err = mneme.save_file(&req, &rule, &file.content.replace("lait", "lait!"), &file.revision).unwrap_err();
        assert_eq!(err.code, ErrorCode::InvalidInput);
        assert!(err.message.contains("is not UTF-8 text: byte 0xE9 on line 1") && err.message.contains("iconv"), "{}", err.message);
        // The command is the error's own field too, with the message around it as whole
        // sentences, for the screen's error banner to show apart with a Copy button.
        let fix = err.command.as_ref().expect("the refused save carries its command");
        assert_eq!(fix.line, "iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new");
        assert!(fix.before.starts_with("Mneme will not save ") && fix.before.contains("legacy.md because it is not UTF-8 text: byte 0xE9 on line 1"), "{}", fix.before);
        assert!(fix.after.starts_with("Then move FILE.new over FILE and open it again."), "{}", fix.after);
        let wide_path = req.cwd.join(".claude/rules/wide.md");
        let wide_file = mneme.read_file(&req, &wide_path).unwrap();
        let err = mneme.save_file(&req, &wide_path, "Hi!\n", &wide_file.revision).unwrap_err();
        assert_eq!(err.command.map(|c| c.line).as_deref(), Some("iconv -f UTF-16 -t UTF-8 FILE > FILE.new"));
        assert_eq!(fs::read(&rule).unwrap(), b"Caf\xe9 au lait.\n");
    }

    #[test]
    fn files_outside_the_context_are_refused() {
        let (home, mneme, req) = world();
        let secret = home.write("home/.ssh/config", "Host *\n");
        let notes = home.write(req.cwd.join("notes.md"), "not loaded\n");
        for p in [secret.as_path(), notes.as_path(), Path::new("../../home/.ssh/config")] {
            let err = mneme.read_file(&req, p).unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidInput, "{p:?}");
            let err = mneme.save_file(&req, p, "x", "absent").unwrap_err();
            assert_eq!(err.code, ErrorCode::InvalidInput, "{p:?}");
        }
        assert_eq!(fs::read_to_string(&secret).unwrap(), "Host *\n");
    }

    #[test]
    fn skipped_files_are_editable_too() {
        let (home, mneme, req) = world();
        // Only frontmatter and a comment: Claude Code skips it as empty, and the person may
        // want to fill it in from the context view.
        let empty = home.write(req.cwd.join("CLAUDE.md"), "<!-- nothing yet -->\n");
        let view = mneme.context(&req).unwrap();
        assert!(view.skipped.iter().any(|s| s.path == empty), "{:?}", view.skipped);
        let file = mneme.read_file(&req, &empty).unwrap();
        mneme.save_file(&req, &empty, "Real rules.\n", &file.revision).unwrap();
        assert_eq!(fs::read_to_string(&empty).unwrap(), "Real rules.\n");
    }

    #[test]
    fn includes_claude_code_refuses_to_follow_are_not_opened() {
        // A cloned repository's CLAUDE.md names files outside it; Claude Code skips them
        // (external includes not approved), and so must the window's read and save.
        let (home, mneme, req) = world();
        let key = home.write("home/.ssh/id_rsa.md", "PRIVATE\n");
        let victim = home.write("elsewhere/notes.txt", "mine\n");
        home.write(req.cwd.join("CLAUDE.md"), &format!("Rules.\n@{}\n@{}\n", key.display(), victim.display()));
        let view = mneme.context(&req).unwrap();
        assert!(view.skipped.iter().any(|s| s.path == key && s.detail == SkipReason::ExternalInclude), "{:?}", view.skipped);
        for p in [&key, &victim] {
            assert_eq!(mneme.read_file(&req, p).unwrap_err().code, ErrorCode::InvalidInput, "{p:?}");
            assert_eq!(mneme.save_file(&req, p, "x", "absent").unwrap_err().code, ErrorCode::InvalidInput, "{p:?}");
        }
        assert_eq!(fs::read_to_string(&victim).unwrap(), "mine\n");
    }

    #[test]
    fn the_memory_index_can_be_created_and_edited() {
        let (home, mneme, req) = world();
        let index = home.memdir_for(&req.cwd).join("MEMORY.md");
        let file = mneme.read_file(&req, &index).unwrap();
        assert_eq!((file.content.as_str(), file.revision.as_str()), ("", "absent"));
        let saved = mneme.save_file(&req, &index, "- [A](a.md) — a\n", "absent").unwrap();
        assert_eq!(fs::read_to_string(&index).unwrap(), "- [A](a.md) — a\n");
        let err = mneme.save_file(&req, &index, "again", "absent").unwrap_err();
        assert_eq!(err.code, ErrorCode::Conflict, "creating refuses when the file appeared meanwhile");
        mneme.save_file(&req, &index, "- [B](b.md) — b\n", &saved.revision).unwrap();
        assert_eq!(fs::read_to_string(&index).unwrap(), "- [B](b.md) — b\n");
    }

    #[cfg(unix)]
    #[test]
    fn a_symlinked_rule_is_written_through_its_link() {
        let (home, mneme, req) = world();
        let real = home.write(req.cwd.join("shared/style.md"), "Shared style.\n");
        let rules = req.cwd.join(".claude/rules");
        fs::create_dir_all(&rules).unwrap();
        let link = rules.join("style.md");
        std::os::unix::fs::symlink(&real, &link).unwrap();
        let file = mneme.read_file(&req, &link).unwrap();
        assert_eq!(file.content, "Shared style.\n");
        mneme.save_file(&req, &link, "New style.\n", &file.revision).unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "the link stays a link");
        assert_eq!(fs::read_to_string(&real).unwrap(), "New style.\n");
        // A link leading out of the project (a cloned repository's `.claude/rules/x.md ->
        // ~/.ssh/config`) is one this Claude Code does not follow: not opened, not written.
        let secret = home.write("home/.ssh/config.md", "Host *\n");
        let out = rules.join("out.md");
        std::os::unix::fs::symlink(&secret, &out).unwrap();
        assert_eq!(mneme.read_file(&req, &out).unwrap_err().code, ErrorCode::InvalidInput);
        assert_eq!(mneme.save_file(&req, &out, "x", "absent").unwrap_err().code, ErrorCode::InvalidInput);
        assert_eq!(fs::read_to_string(&secret).unwrap(), "Host *\n");
    }
}
