//! The check Mneme runs once for each Claude Code release the user ends up with: Claude Code
//! updates itself, and a release Mneme has not seen may load memory differently. When the
//! installed release differs from the one last checked, the user's own Claude Code is run once
//! (`verify`) on the most recently used project, and the answer is kept, so the app can say at
//! start whether Mneme still shows exactly what this Claude Code sends.

use crate::{ApiError, ContextRequest, Mneme};
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

impl Mneme {
    /// The last check for the installed release, running it first when the release changed.
    pub fn version_check(&self) -> Result<VersionCheck, ApiError> {
        match self.unchecked_release() {
            Ok(version) => self.check_release(version),
            Err(last) => Ok(last),
        }
    }

    /// The installed release when it has not been checked yet; otherwise what is known (the
    /// last check of this release, or nothing when no Claude Code was found).
    fn unchecked_release(&self) -> Result<String, VersionCheck> {
        let installed = mneme_store::claude_install::detect(&self.env).and_then(|i| i.version).map(|v| v.to_string());
        let Some(version) = installed else {
            return Err(VersionCheck::default());
        };
        let last: Option<VersionCheck> =
            std::fs::read(self.env.data_dir().join(STATE_FILE)).ok().and_then(|b| serde_json::from_slice(&b).ok());
        match last.filter(|l| l.version.as_deref() == Some(version.as_str())) {
            Some(last) => Err(VersionCheck { ran_now: false, ..last }),
            None => Ok(version),
        }
    }

    /// Runs the user's Claude Code `version` once on the project used last and records the
    /// answer.
    fn check_release(&self, version: String) -> Result<VersionCheck, ApiError> {
        let state_path = self.env.data_dir().join(STATE_FILE);
        // The project used last: Claude Code's own folders, newest first.
        let project = self
            .projects()
            .into_iter()
            .filter(|p| p.project_exists)
            .max_by_key(|p| p.last_modified_ms.unwrap_or(0))
            .and_then(|p| p.project_path);
        let mut check = VersionCheck { version: Some(version), project: project.clone(), ran_now: true, ..Default::default() };
        if let Some(cwd) = project {
            let report = self.verify(&ContextRequest { cwd, ..Default::default() })?;
            check.status = Some(report.status);
            check.summary = Some(report.summary);
        }
        let text = serde_json::to_vec_pretty(&check).map_err(|e| ApiError::new(crate::ErrorCode::Io, e.to_string()))?;
        std::fs::create_dir_all(self.env.data_dir())
            .and_then(|()| {
                let tmp = state_path.with_extension(format!("json.{}.tmp", std::process::id()));
                std::fs::write(&tmp, &text)?;
                std::fs::rename(&tmp, &state_path)
            })
            .map_err(|e| ApiError::new(crate::ErrorCode::Io, format!("could not record the Claude Code check in {}: {e}", state_path.display())))?;
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
