//! Errors as every front end receives them: a closed set of codes plus a sentence that says
//! what happened and what to do.

use mneme_store::atomic::Refusal;
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
    pub message: String,
}

impl ApiError {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        ApiError { code, message: message.into() }
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
        ApiError::new(crate::memories::code_for(&e), e.to_string())
    }
}
