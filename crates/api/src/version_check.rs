//! The check Mneme runs once for each Claude Code release the user ends up with: Claude Code
//! updates itself, and a release Mneme has not seen may load memory differently. When the
//! installed release differs from the one last checked, the user's own Claude Code is run once
//! (`verify`) on the most recently used project, and the answer is kept, so the app can say at
//! start whether Mneme still shows exactly what this Claude Code sends.
//!
//! A match or a difference is the release's answer for good. A check that could not run (no
//! project yet, Claude Code failed or timed out, every project's drive not answering) is tried
//! again after [`RETRY_AFTER`]. The project's drive and its memory folder's are asked before
//! `verify` runs there. The app and the background scheduler may both find a new release at
//! once: the check runs under a lock in the data dir, and whoever waited for it takes the
//! answer the other recorded.

use crate::{ApiError, ContextRequest, Mneme};
use mneme_core::own_files::Unknown;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// What Mneme knows about the installed release.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct VersionCheck {
    /// The installed release; `None` when no Claude Code (or its release) was found.
    pub version: Option<String>,
    /// The project it was checked on.
    pub project: Option<PathBuf>,
    /// `match`, `differ`, `failed`, or `None` when there was no project to check.
    pub status: Option<String>,
    pub summary: Option<String>,
    /// The check ran during this call (the release changed since the last one).
    pub ran_now: bool,
}

const STATE_FILE: &str = "claude-code-check.json";
const LOCK_FILE: &str = "claude-code-check.lock";
/// How long a check that gave no answer (no project, or a failed run) stands before the
/// release is checked again.
const RETRY_AFTER: std::time::Duration = std::time::Duration::from_secs(60 * 60);

/// The state file: the last check and when it was made.
#[derive(Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Stored {
    #[serde(flatten)]
    check: VersionCheck,
    /// Milliseconds since the Unix epoch; absent in files written before it was kept.
    #[serde(default)]
    checked_at_ms: Option<u64>,
    /// Fields a newer Mneme keeps here, written back when this one records a check.
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    extra: Unknown,
}

/// The largest state file read: a release, a path and a sentence or two.
const STATE_CAP: u64 = 1 << 20;

impl Mneme {
    /// The last check for the installed release, running it first when the release changed.
    pub fn version_check(&self) -> Result<VersionCheck, ApiError> {
        match self.unchecked_release() {
            Ok(version) => self.check_release(version),
            Err(last) => Ok(last),
        }
    }

    /// The installed release when it has not been checked yet (or its last check gave no answer
    /// and is due again); otherwise what is known (the last check of this release, or nothing
    /// when no Claude Code was found).
    fn unchecked_release(&self) -> Result<String, VersionCheck> {
        let installed = mneme_store::claude_install::detect(&self.env).and_then(|i| i.version).map(|v| v.to_string());
        let Some(version) = installed else {
            return Err(VersionCheck::default());
        };
        match self.answer_for(&version) {
            Some(last) => Err(last),
            None => Ok(version),
        }
    }

    /// The recorded check of `version`, when it still stands: a match or a difference, or a
    /// check without an answer made less than [`RETRY_AFTER`] ago.
    fn answer_for(&self, version: &str) -> Option<VersionCheck> {
        let last = self.stored_check()?;
        if last.check.version.as_deref() != Some(version) {
            return None;
        }
        let answered = matches!(last.check.status.as_deref(), Some("match" | "differ"));
        let now = self.clock.now_ms() as u64;
        let recent = last.checked_at_ms.is_some_and(|at| now.saturating_sub(at) < RETRY_AFTER.as_millis() as u64);
        (answered || recent).then_some(VersionCheck { ran_now: false, ..last.check })
    }

    /// The state file as it is; `None` when it is absent or unreadable (the release is then
    /// checked again, which writes it afresh).
    fn stored_check(&self) -> Option<Stored> {
        let bytes = mneme_store::open::read_plain_capped(&self.env.data_dir().join(STATE_FILE), STATE_CAP).ok()?.0;
        serde_json::from_slice(&bytes).ok()
    }

    /// Runs the user's Claude Code `version` once on the project used last and records the
    /// answer, unless someone else checked it while this call waited for the lock.
    fn check_release(&self, version: String) -> Result<VersionCheck, ApiError> {
        let state_path = self.env.data_dir().join(STATE_FILE);
        let lock_path = self.env.data_dir().join(LOCK_FILE);
        // A full or read-only disk is said as such, with its own code, like every other write.
        let _lock = mneme_store::file_lock::FileLock::take(&lock_path).map_err(|e| {
            ApiError::refused(&e, "lock", &lock_path).unwrap_or_else(|| {
                ApiError::new(crate::ErrorCode::Io, format!("could not lock {} to check Claude Code: {e}. Check that Mneme's data folder is writable.", lock_path.display()))
            })
        })?;
        if let Some(answer) = self.answer_for(&version) {
            return Ok(answer);
        }
        // The project used last whose drives answer: Claude Code's own folders, newest first.
        // `verify` reads the project and its memory folder (which `autoMemoryDirectory` may put
        // on another drive) while this holds the machine-wide lock, so each drive is asked
        // first, as the shells ask before a request: a project on a drive that does not answer
        // is passed over for the next one, and would otherwise hold every caller of this check
        // (the app's start, the scheduler) until that drive answered.
        let mut projects: Vec<_> = self.projects()?.into_iter().filter(|p| p.project_exists || p.drive_not_answering).filter_map(|p| Some((p.last_modified_ms.unwrap_or(0), p.project_path?))).collect();
        projects.sort_by_key(|(used, _)| std::cmp::Reverse(*used));
        let mut not_answering = None;
        let project = projects.into_iter().map(|(_, p)| p).find(|cwd| {
            let answered = if mneme_store::drive::answers(cwd) { crate::drive_check::memory_folder_answers(&self.env, cwd) } else { Err(cwd.clone()) };
            answered.map_err(|dir| not_answering.get_or_insert(dir)).is_ok()
        });
        let mut check = VersionCheck { version: Some(version), project: project.clone(), ran_now: true, ..Default::default() };
        if let Some(cwd) = project {
            let report = self.verify(&ContextRequest { cwd, ..Default::default() })?;
            check.status = Some(report.status);
            check.summary = Some(report.summary);
        } else if let Some(dir) = not_answering {
            // No answer this time, so the release is checked again within the hour.
            check.status = Some("failed".to_string());
            check.summary = Some(format!(
                "Claude Code {} was not checked: the drive holding {} is not answering (a network share whose server went away, or a USB stick or mounted folder that hangs). Mneme checks again within the hour; check the drive or its connection.",
                check.version.as_deref().unwrap_or_default(),
                dir.display()
            ));
        }
        let extra = self.stored_check().map(|s| s.extra).unwrap_or_default();
        let stored = Stored { check: VersionCheck { ran_now: false, ..check.clone() }, checked_at_ms: Some(self.clock.now_ms() as u64), extra };
        let text = serde_json::to_vec_pretty(&stored).map_err(|e| ApiError::new(crate::ErrorCode::Io, e.to_string()))?;
        mneme_store::atomic::write_atomic(&state_path, &text)
            .map_err(|e| {
                ApiError::refused(&e, "record the Claude Code check in", &state_path)
                    .unwrap_or_else(|| ApiError::new(crate::ErrorCode::for_io(&e), format!("could not record the Claude Code check in {}: {e}", state_path.display())))
            })?;
        Ok(check)
    }
}

/// The scheduler's once-per-release check ([`mneme_scheduler::ClaudeCodeCheck`]), answered by
/// the same code as the app's [`Mneme::version_check`], so both record one state.
pub struct ScheduledClaudeCheck(pub Mneme);

impl mneme_scheduler::ClaudeCodeCheck for ScheduledClaudeCheck {
    fn due(&self) -> Option<String> {
        self.0.unchecked_release().ok()
    }

    fn run(&self, release: &str) -> mneme_scheduler::Outcome {
        use mneme_scheduler::Outcome;
        match self.0.check_release(release.to_string()) {
            Ok(c) => match (c.status.as_deref(), c.summary) {
                (None, _) => Outcome::Done { summary: format!("Claude Code {release} found; no project to check it on yet") },
                (Some("match"), Some(s)) => Outcome::Done { summary: s },
                (_, s) => Outcome::Failed { error: s.unwrap_or_else(|| format!("Claude Code {release} could not be checked")) },
            },
            Err(e) => Outcome::Failed { error: e.to_string() },
        }
    }
}
