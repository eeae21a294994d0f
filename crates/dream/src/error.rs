//! Every way a dream operation fails, each message saying what the user can do about it.

use mneme_store::memdir::MemdirError;
use std::io;
use std::path::{Path, PathBuf};

#[derive(Debug, thiserror::Error)]
pub enum DreamError {
    #[error("could not {action} {}: {source}", path.display())]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },

    #[error(transparent)]
    Memdir(#[from] MemdirError),

    #[error("another dream holds the lock {} (PID {pid}, {age}); wait for it to finish, or remove the file if that process is not a dream", path.display())]
    Locked { path: PathBuf, pid: i64, age: String },

    #[error("another process took the dream lock {} at the same moment; try again in a minute", path.display())]
    LostRace { path: PathBuf },

    #[error("no dream with id {id} for this memory folder; list them with `mneme dream history`")]
    NotFound { id: String },

    #[error("dream {id} is a dream of the memory folder {}, not of this one (the two share a history folder, or the record was changed); run the command for that folder", owner.display())]
    OtherFolder { id: String, owner: PathBuf },

    #[error("there is no dream to undo for this memory folder")]
    NothingToUndo,

    #[error("dream {id} is {status}, so it cannot be {action}")]
    WrongStatus { id: String, status: &'static str, action: &'static str },

    #[error("{} changed since dream {id} {when}; {advice}", files.join(", "))]
    Conflict { id: String, files: Vec<String>, when: &'static str, advice: &'static str },

    /// `newer`: a newer Mneme wrote it (a newer format, or a status this build lacks); it is
    /// left as it is for that build, not moved aside.
    #[error("{}", damaged_record(path, detail, *newer))]
    DamagedRecord { path: PathBuf, detail: String, newer: bool },

    #[error("the dream mode file {} is damaged ({detail}); choose the mode again (`mneme dream mode automatic`, `review` or `off`, or on the Dreams screen) to rewrite it", path.display())]
    DamagedMode { path: PathBuf, detail: String },

    #[error("dream {id} was written only in part ({cause}), and putting the memory folder back failed too: {} still hold its text. Undo it with `mneme dream undo {id}`, which puts back every file it changed", files.join(", "))]
    PartlyApplied { id: String, files: Vec<String>, cause: String },

    /// An undo that put back every file but `files`, whose text before the dream stays in the
    /// dream's record.
    #[error("dream {id} was undone except for {}; their text before the dream is in its record (`mneme dream show {id}`)", files.join(", "))]
    UndoneInPart { id: String, files: Vec<String> },

    #[error(transparent)]
    Apply(#[from] mneme_agent::ApplyError),

    /// An index a dream reads and may rewrite (`MEMORY.md`, `team/MEMORY.md`) is not UTF-8
    /// text: refused before the dream starts, so no text with the undecodable bytes replaced
    /// is ever planned, weighed or written back.
    #[error("no dream ran: {} is not UTF-8 text, and a dream that rewrote it would replace the bytes it cannot read for good; {}", path.display(), problem.then("run the dream again"))]
    NotUtf8 { path: PathBuf, problem: mneme_store::text_form::NotUtf8 },

    #[error("the model-driven dream failed: {0}")]
    Agent(String),

    #[error("the dream was cancelled; the lock was rolled back and nothing was changed")]
    Cancelled,

    #[error("{0}")]
    Invalid(String),
}

fn damaged_record(path: &Path, detail: &str, newer: bool) -> String {
    if newer {
        format!("the dream record {} cannot be read by this build: {detail}", path.display())
    } else {
        format!("the dream record {} is damaged ({detail}); move it aside and run the command again", path.display())
    }
}

impl DreamError {
    pub(crate) fn io(action: &'static str, path: &Path, source: io::Error) -> DreamError {
        DreamError::Io { action, path: path.to_path_buf(), source }
    }

    /// A short stable code for front ends.
    pub fn code(&self) -> &'static str {
        match self {
            DreamError::Io { .. } => "io",
            DreamError::Memdir(e) => e.code(),
            DreamError::Locked { .. } | DreamError::LostRace { .. } => "locked",
            DreamError::NotFound { .. } | DreamError::OtherFolder { .. } | DreamError::NothingToUndo => "not-found",
            DreamError::WrongStatus { .. } => "wrong-status",
            DreamError::Conflict { .. } => "conflict",
            DreamError::DamagedRecord { .. } | DreamError::DamagedMode { .. } => "damaged",
            DreamError::Apply(mneme_agent::ApplyError::Changed { .. }) => "conflict",
            DreamError::Apply(_) => "not-applied",
            DreamError::PartlyApplied { .. } => "partly-applied",
            DreamError::UndoneInPart { .. } => "partly-undone",
            DreamError::NotUtf8 { .. } => "not-utf8",
            DreamError::Agent(_) => "agent",
            DreamError::Cancelled => "cancelled",
            DreamError::Invalid(_) => "invalid-input",
        }
    }
}
