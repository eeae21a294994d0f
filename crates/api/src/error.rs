//! Errors as every front end receives them: a closed set of codes plus a sentence that says
//! what happened and what to do, and the command to run when that is the fix.

use mneme_store::atomic::Refusal;
pub use mneme_store::text_form::CommandFix;
use serde::Serialize;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// The user named something that does not exist (a folder, a memory, a trash entry).
    NotFound,
    /// The input is malformed (bad name, bad setting-sources list, path escaping a folder).
    InvalidInput,
    /// The file changed on disk since it was read; reload and retry.
    Conflict,
    /// A file exists where a new one would go.
    AlreadyExists,
    /// A settings or memory file could not be parsed; it was left untouched.
    Malformed,
    /// Reading or writing failed for a reason not listed below (a vanished drive, a broken
    /// disk).
    Io,
    /// The disk holding the file is full (or the account's quota used up); nothing was written.
    DiskFull,
    /// The disk holding the file is mounted read-only; nothing was written.
    ReadOnly,
    /// This account may not change the file or its folder (another account's repository,
    /// permissions that forbid writing).
    PermissionDenied,
    /// A trash entry was put there by a newer Mneme, whose record this build would misread:
    /// it is left as it is until Mneme is updated.
    TrashEntryNewer,
    /// Content bound for team memory holds something that looks like a secret; the message
    /// names the rule, never the secret.
    SecretsRefused,
    /// The team server needs a sign-in (none yet, or it no longer accepts the one stored).
    SignInRequired,
    /// The team server refused this account (no access to the repository, or not its lead).
    Forbidden,
    /// A service Mneme needs is not reachable or refused access (the OS keyring); the message
    /// says what to start or unlock.
    Unavailable,
}

#[derive(Debug, Clone, thiserror::Error, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[error("{message}")]
pub struct ApiError {
    pub code: ErrorCode,
    /// The whole sentence, any command to run in it in backticks: what the command line prints.
    pub message: String,
    /// The command the message says to run (the `iconv` that converts a file to UTF-8), with
    /// the message around it as whole sentences, as a health problem's `command` is: a screen
    /// shows the command on a line of its own with a Copy button, where in `message` it sits
    /// inside a sentence. `None` when the fix is not a command.
    pub command: Option<CommandFix>,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError { code, message: message.into(), command: None }
    }

    /// The same error, with the command its message tells the person to run.
    pub(crate) fn with_command(self, command: Option<CommandFix>) -> Self {
        ApiError { command, ..self }
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::NotFound, message)
    }

    /// The project folder a request names is not a folder (now): both shells show this, so it
    /// names no command-line flag; the command line checks its `--cwd` first and says so there.
    pub fn no_project_folder(path: &std::path::Path) -> Self {
        Self::not_found(format!(
            "{} is not a folder now: it may have been deleted, renamed or moved, or be on a drive that is not mounted. Open another project, or bring the folder back.",
            path.display()
        ))
    }

    pub fn invalid(message: impl Into<String>) -> Self {
        Self::new(ErrorCode::InvalidInput, message)
    }

    /// A write the disk refused (full, read-only, not this account's to change) while Mneme
    /// was `doing` something to `path` ("write the dream record", "remember the project in"):
    /// the refusal's code and a sentence saying what to do about it, where the system's own
    /// words ("No space left on device") say neither. `None` for any other failure, which the
    /// caller words itself.
    pub(crate) fn refused(e: &std::io::Error, doing: &str, path: &std::path::Path) -> Option<Self> {
        let r = Refusal::of(e)?;
        Some(Self::new(r.into(), format!("Could not {doing} {}: {}.", path.display(), r.says(path))))
    }
}

impl From<Refusal> for ErrorCode {
    fn from(r: Refusal) -> Self {
        match r {
            Refusal::DiskFull => ErrorCode::DiskFull,
            Refusal::ReadOnly => ErrorCode::ReadOnly,
            Refusal::PermissionDenied => ErrorCode::PermissionDenied,
        }
    }
}

impl ErrorCode {
    /// The code for a failed read or write: the disk's refusal a person can act on, or
    /// [`ErrorCode::Io`].
    pub fn for_io(e: &std::io::Error) -> ErrorCode {
        Refusal::of(e).map_or(ErrorCode::Io, ErrorCode::from)
    }
}

impl From<mneme_store::settings::SettingsError> for ApiError {
    fn from(e: mneme_store::settings::SettingsError) -> Self {
        use mneme_store::settings::SettingsError as E;
        let code = match &e {
            E::Malformed { .. } => ErrorCode::Malformed,
            E::UnknownSource { .. } => ErrorCode::InvalidInput,
            _ => e.refused().map_or(ErrorCode::Io, ErrorCode::from),
        };
        ApiError::new(code, e.to_string())
    }
}

impl From<mneme_store::memdir::MemdirError> for ApiError {
    fn from(e: mneme_store::memdir::MemdirError) -> Self {
        ApiError::new(crate::memories::code_for(&e), e.to_string()).with_command(e.command())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_store::memdir::MemdirError;
    use mneme_store::text_form::NotUtf8;

    fn utf16(text: &str) -> Vec<u8> {
        [&[0xff, 0xfe][..], &text.encode_utf16().flat_map(u16::to_le_bytes).collect::<Vec<u8>>()].concat()
    }

    /// The inbox refuses to append to a CLAUDE.md that is not UTF-8: the error names the
    /// command for the encoding the file is in (it once said Windows-1252 for every file, which
    /// turns UTF-16 into nonsense), in the message for a terminal and as its own field, with the
    /// message around it as whole sentences, for the screen.
    #[test]
    fn an_inbox_refusal_over_a_file_that_is_not_utf8_carries_its_command() {
        let e: ApiError = mneme_extract::InboxError::Memdir(MemdirError::not_utf8("CLAUDE.md", &utf16("# Notes\n"))).into();
        assert_eq!(e.code, ErrorCode::InvalidInput);
        let cmd = "iconv -f UTF-16 -t UTF-8 FILE > FILE.new";
        assert!(e.message.starts_with("CLAUDE.md is not valid UTF-8, so Mneme will not change it") && e.message.contains(&format!("`{cmd}`")), "{}", e.message);
        let fix = e.command.expect("the refusal carries its command");
        assert_eq!(fix.line, cmd);
        assert_eq!(fix.before, "CLAUDE.md is not valid UTF-8, so Mneme will not change it (that would replace the bytes it cannot read for good): it is UTF-16 text. To convert it to UTF-8, run this in a terminal:");
        assert!(fix.after.starts_with("Then move FILE.new over FILE and try again."), "{}", fix.after);
        let latin: ApiError = MemdirError::not_utf8("team/MEMORY.md", b"caf\xe9\n").into();
        assert_eq!(latin.command.map(|c| c.line).as_deref(), Some("iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new"));
    }

    /// A dream refused for an index that is not UTF-8 carries the command too; its message
    /// stays the sentence the command line prints.
    #[test]
    fn a_dream_refused_for_an_index_that_is_not_utf8_carries_its_command() {
        let path = std::path::PathBuf::from("/m/MEMORY.md");
        let e: ApiError = mneme_dream::DreamError::NotUtf8 { path, problem: NotUtf8::Byte { byte: 0x96, line: 4 } }.into();
        assert!(e.message.starts_with("No dream ran: /m/MEMORY.md is not UTF-8 text") && e.message.contains("`iconv -f WINDOWS-1252"), "{}", e.message);
        let fix = e.command.expect("the refusal carries its command");
        assert_eq!(fix.line, "iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new");
        assert!(fix.before.starts_with("No dream ran: /m/MEMORY.md is not UTF-8 text, and a dream that rewrote it would replace the bytes it cannot read for good: byte 0x96 on line 4 is not UTF-8"), "{}", fix.before);
        assert!(fix.after.starts_with("Then move FILE.new over FILE and run the dream again."), "{}", fix.after);
        // A file cut short has no command to run; the message says what to do instead.
        let cut: ApiError = mneme_dream::DreamError::NotUtf8 { path: "/m/MEMORY.md".into(), problem: NotUtf8::Truncated }.into();
        assert!(cut.command.is_none() && cut.message.contains("cut short"), "{}", cut.message);
    }

    /// The inbox's refusals name `mneme inbox` commands for the command line; a screen's error
    /// names the Inbox's own controls instead, and no command to run.
    #[test]
    fn inbox_refusals_on_a_screen_name_the_inbox_not_a_command() {
        use mneme_extract::InboxError;
        for e in [InboxError::NotFound("20261207-abc".into()), InboxError::Changed { path: "/m/a.md".into() }] {
            let engine = e.to_string();
            assert!(engine.contains("`mneme inbox"), "the command line's words keep the command: {engine}");
            let shown: ApiError = e.into();
            assert!(!shown.message.contains("mneme") && shown.command.is_none(), "{}", shown.message);
        }
        let gone: ApiError = InboxError::NotFound("20261207-abc".into()).into();
        assert_eq!(gone.code, ErrorCode::NotFound);
        assert!(gone.message.starts_with("There is no inbox item 20261207-abc now"), "{}", gone.message);
        let changed: ApiError = InboxError::Changed { path: "/m/a.md".into() }.into();
        assert_eq!(changed.code, ErrorCode::Conflict);
        assert!(changed.message.starts_with("/m/a.md changed since this item was staged") && changed.message.contains("use Edit on this item"), "{}", changed.message);
    }

    /// Every other error has no command, and says so in its JSON (the field is always there).
    #[test]
    fn an_error_whose_fix_is_no_command_has_none() {
        let e: ApiError = MemdirError::NotFound { path: "a.md".into() }.into();
        assert!(e.command.is_none());
        assert_eq!(serde_json::to_value(&e).unwrap()["command"], serde_json::Value::Null);
    }
}
