//! What a sync step can fail with, and how an HTTP failure from the team server becomes one:
//! 401 → sign in again, 403 → ask for access, the structured 413 → the learned entry cap, other
//! statuses with the server's message and error code (cut to 256 characters, as Claude Code
//! does). The watcher's suppression reasons (`http_<status>`, `no_oauth`, …) come from here too.

use super::http::Failure;
use crate::wire::TOO_MANY_ENTRIES;
use serde::Deserialize;
use std::path::PathBuf;

/// Why a sync step failed. Messages say what to do.
#[derive(Debug, thiserror::Error)]
pub enum SyncError {
    #[error("Not signed in to the team server {server}. Run `mneme team login` first.")]
    NoAuth { server: String },
    #[error("No team server is configured. Run `mneme team login <URL>` or set TEAM_MEMORY_SYNC_URL.")]
    NoServer,
    #[error("This folder is not in a GitHub repository whose `origin` remote is on github.com; team memory is shared per repository, so there is nothing to sync.")]
    NoRepo,
    #[error("The team server refused the sign-in (HTTP {status}{}). Run `mneme team login` again.", server_says(.message))]
    Auth { status: u16, message: Option<String> },
    #[error("The team server forbids team memory for this account or repository (HTTP 403{}). Ask the team's lead for access.", server_says(.message))]
    Forbidden { message: Option<String> },
    #[error("The team server did not answer in time (30 seconds for each step up to its answer, 10 minutes to read the answer). Try again later; if pulls keep timing out on a slow connection, ask a lead to remove team memory nobody needs.")]
    Timeout,
    #[error("Cannot reach the team server at {server}: {detail}. Check the address and your network.")]
    Network { server: String, detail: String },
    #[error("The team server answered HTTP {status}{}.", server_says(.message))]
    Http { status: u16, code: Option<String>, message: Option<String> },
    #[error("The team server refused this push: it holds at most {max_entries} entries and got {received}. Remove or merge some team memory files; later pushes send only the first {max_entries} in sorted order.")]
    TooManyEntries { max_entries: u64, received: u64 },
    #[error("The team server's answer could not be read ({detail}). Check that the server URL points at a team memory server.")]
    Parse { detail: String },
    #[error("Teammates kept changing the team memory while this push retried ({attempts} attempts). Run the push again.")]
    Conflict { attempts: u32 },
    #[error("The request to the team server failed: {detail}.")]
    Transport { detail: String },
    #[error("{} escapes its canonical location ({detail}); sync refuses to follow it. Replace the symbolic link with a real folder.", .path.display())]
    Escapes { path: PathBuf, detail: String },
    #[error("Could not {action} {}: {source}", .path.display())]
    Io { action: &'static str, path: PathBuf, #[source] source: std::io::Error },
    #[error("Mneme's team sync state file {} could not be used: {detail}", .path.display())]
    State { path: PathBuf, detail: String },
    #[error("The OS keyring failed: {0}")]
    Keychain(#[from] mneme_keychain::KeychainError),
    #[error(transparent)]
    Drive(#[from] DriveNotAnswering),
}

/// A folder a sync step needs is on a drive that did not answer within
/// [`mneme_store::drive::PATIENCE`] (a network share whose server went away, a USB stick or
/// FUSE mount whose daemon hangs): every look there would block until it answers, possibly
/// for ever, so the step is not started.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("The drive holding {} is not answering (a network share or USB drive that hangs?). Check that it is still connected or mounted, then try again.", .path.display())]
pub struct DriveNotAnswering {
    pub path: PathBuf,
}

fn server_says(message: &Option<String>) -> String {
    match message {
        Some(m) if !m.is_empty() => format!(": {m}"),
        _ => String::new(),
    }
}

impl SyncError {
    /// Claude Code's error class for this failure: `no_oauth`, `no_repo`, `auth`, `forbidden`,
    /// `timeout`, `network`, `http`, `parse`, `conflict`, `local`.
    pub fn class(&self) -> &'static str {
        match self {
            SyncError::NoAuth { .. } | SyncError::NoServer => "no_oauth",
            SyncError::NoRepo => "no_repo",
            SyncError::Auth { .. } | SyncError::Keychain(_) => "auth",
            SyncError::Forbidden { .. } => "forbidden",
            SyncError::Timeout => "timeout",
            SyncError::Network { .. } => "network",
            SyncError::Http { .. } | SyncError::TooManyEntries { .. } | SyncError::Transport { .. } => "http",
            SyncError::Parse { .. } => "parse",
            SyncError::Conflict { .. } => "conflict",
            SyncError::Escapes { .. } | SyncError::Io { .. } | SyncError::State { .. } | SyncError::Drive(_) => "local",
        }
    }

    /// The HTTP status behind this failure, when there was one.
    pub fn http_status(&self) -> Option<u16> {
        match self {
            SyncError::Auth { status, .. } | SyncError::Http { status, .. } => Some(*status),
            SyncError::Forbidden { .. } => Some(403),
            SyncError::TooManyEntries { .. } => Some(413),
            _ => None,
        }
    }

    /// Claude Code's suppression reason: the server's error code, else `http_<status>`, else
    /// the error class.
    pub fn suppression_reason(&self) -> String {
        match self {
            SyncError::Http { code: Some(c), .. } => c.clone(),
            SyncError::TooManyEntries { .. } => TOO_MANY_ENTRIES.to_string(),
            other => match other.http_status() {
                Some(s) => format!("http_{s}"),
                None => other.class().to_string(),
            },
        }
    }

    /// Whether automatic pushes stop after this failure: no sign-in, no repository, or any
    /// 4xx except 409 and 429 (Claude Code's `isPermanentFailure`).
    pub fn is_permanent(&self) -> bool {
        matches!(self, SyncError::NoAuth { .. } | SyncError::NoServer | SyncError::NoRepo)
            || self.http_status().is_some_and(|s| (400..500).contains(&s) && s != 409 && s != 429)
    }
}

/// Suppression reasons an unlink in `team/` clears (2.1.197: the too-many-entries family,
/// since deleting a file is how a user gets back under the cap; and Mneme's server's cap on
/// a repository's current content, which deleting a file brings back under too).
pub fn recoverable_by_unlink(reason: &str) -> bool {
    reason == TOO_MANY_ENTRIES || reason == "http_413" || reason == crate::wire::CONTENT_FULL
}

/// `{error:{type?, message?, details?:{error_code?, max_entries?, received_entries?}}}`.
#[derive(Deserialize, Default)]
struct ServerError {
    #[serde(default)]
    error: Option<ServerErrorObject>,
}

#[derive(Deserialize, Default)]
struct ServerErrorObject {
    #[serde(default)]
    message: Option<String>,
    #[serde(default)]
    details: Option<ServerErrorDetails>,
}

#[derive(Deserialize, Default)]
struct ServerErrorDetails {
    #[serde(default)]
    error_code: Option<String>,
    #[serde(default)]
    max_entries: Option<f64>,
    #[serde(default)]
    received_entries: Option<f64>,
}

/// Claude Code truncates server messages to 256 characters.
fn server_error(body: &str) -> (Option<String>, Option<String>) {
    let e = serde_json::from_str::<ServerError>(body).ok().and_then(|e| e.error).unwrap_or_default();
    let cut = |s: String| s.chars().take(256).collect::<String>();
    (e.message.map(cut), e.details.and_then(|d| d.error_code).map(cut))
}

/// The structured 413: `error_code` is the too-many-entries code and both counts are
/// positive integers; anything else is an ordinary failure.
fn too_many_entries(body: &str) -> Option<(u64, u64)> {
    let d = serde_json::from_str::<ServerError>(body).ok()?.error?.details?;
    let int = |v: Option<f64>| v.filter(|n| n.fract() == 0.0 && *n > 0.0).map(|n| n as u64);
    if d.error_code.as_deref() != Some(TOO_MANY_ENTRIES) {
        return None;
    }
    Some((int(d.max_entries)?, int(d.received_entries)?))
}

/// Gives an HTTP failure its meaning: 401 → auth, 403 → forbidden, a structured 413 → the
/// learned cap, other statuses with the server's message and error code.
pub(crate) fn classify_failure(server: &str, f: Failure) -> SyncError {
    match f {
        Failure::Auth { status: 403, body } => SyncError::Forbidden { message: server_error(&body).0 },
        Failure::Auth { status, body } => SyncError::Auth { status, message: server_error(&body).0 },
        Failure::Timeout => SyncError::Timeout,
        Failure::Network { detail } => SyncError::Network { server: server.to_string(), detail },
        Failure::Http { status, body } => {
            if status == 413 {
                if let Some((max_entries, received)) = too_many_entries(&body) {
                    return SyncError::TooManyEntries { max_entries, received };
                }
            }
            let (message, code) = server_error(&body);
            SyncError::Http { status, code, message }
        }
        Failure::Other { detail } => SyncError::Transport { detail },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permanence_and_reasons_follow_the_watcher() {
        let http = |status| SyncError::Http { status, code: None, message: None };
        assert!(http(400).is_permanent());
        assert!(http(404).is_permanent());
        assert!(!http(409).is_permanent());
        assert!(!http(429).is_permanent());
        assert!(!http(500).is_permanent());
        assert!(!SyncError::Timeout.is_permanent());
        assert!(SyncError::NoRepo.is_permanent());
        assert!(SyncError::NoAuth { server: "s".into() }.is_permanent());
        assert!(SyncError::Auth { status: 401, message: None }.is_permanent());
        assert!(!SyncError::Conflict { attempts: 3 }.is_permanent());
        assert_eq!(http(400).suppression_reason(), "http_400");
        assert_eq!(SyncError::Http { status: 403, code: Some("team_memory_group_acl_denied".into()), message: None }.suppression_reason(), "team_memory_group_acl_denied");
        assert_eq!(SyncError::TooManyEntries { max_entries: 2, received: 3 }.suppression_reason(), TOO_MANY_ENTRIES);
        assert_eq!(SyncError::NoRepo.suppression_reason(), "no_repo");
        assert_eq!(SyncError::NoServer.suppression_reason(), "no_oauth");
        assert!(recoverable_by_unlink(TOO_MANY_ENTRIES) && recoverable_by_unlink("http_413"));
        assert!(!recoverable_by_unlink("http_400"));
    }

    #[test]
    fn structured_413_needs_positive_integers() {
        let body = |max: &str, rec: &str| format!(r#"{{"error":{{"details":{{"error_code":"{TOO_MANY_ENTRIES}","max_entries":{max},"received_entries":{rec}}}}}}}"#);
        assert_eq!(too_many_entries(&body("2", "5")), Some((2, 5)));
        assert_eq!(too_many_entries(&body("0", "5")), None);
        assert_eq!(too_many_entries(&body("2.5", "5")), None);
        assert_eq!(too_many_entries(r#"{"error":{"details":{"error_code":"other","max_entries":2,"received_entries":3}}}"#), None);
        assert_eq!(too_many_entries("<html>413</html>"), None);
    }
}
