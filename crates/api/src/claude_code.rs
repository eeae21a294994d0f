//! Which Claude Code the user runs, and whose behaviours Mneme renders: every view of what
//! Claude Code sends names the release it follows and how sure that is, so Mneme is never
//! silently wrong about a release it has not checked.

use crate::Mneme;
use mneme_core::versions::{self, ClaudeVersion, Fidelity, Profile};
use mneme_store::claude_install::{self, FoundBy};
use serde::Serialize;
use std::path::PathBuf;

/// The release a view follows.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct RenderedFor {
    /// `MAJOR.MINOR.PATCH`.
    pub version: String,
    /// `chosen` (asked for), `installed` (the user's Claude Code) or `assumed` (none found:
    /// the newest release Mneme checks).
    pub basis: String,
    /// `verified` (in the test matrix), `bisected` (between two matrix releases) or
    /// `unverified` (outside them: the nearest known behaviours are used).
    pub fidelity: String,
    /// One sentence for people.
    pub note: String,
}

/// The user's Claude Code as Mneme found it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct ClaudeCodeInfo {
    pub installed: bool,
    /// The `claude` found, as the user knows it (a launcher or symlink).
    pub path: Option<PathBuf>,
    /// `path` (first on PATH), `nativeInstaller` or `npmGlobal`.
    pub found_by: Option<String>,
    /// The release it reports, when `claude --version` answered.
    pub version: Option<String>,
    /// Why the release could not be read.
    pub version_error: Option<String>,
    /// What Mneme renders by default, and how sure it is.
    pub rendered_for: RenderedFor,
    /// The releases checked byte for byte against the real binary.
    pub checked_releases: Vec<String>,
}

fn fidelity_name(f: Fidelity) -> &'static str {
    match f {
        Fidelity::Verified => "verified",
        Fidelity::Bisected => "bisected",
        Fidelity::Unverified => "unverified",
    }
}

fn found_by_name(f: FoundBy) -> &'static str {
    match f {
        FoundBy::Path => "path",
        FoundBy::NativeInstaller => "nativeInstaller",
        FoundBy::NpmGlobal => "npmGlobal",
    }
}

impl Mneme {
    /// The user's Claude Code: where it is and which release, and what Mneme renders for it.
    pub fn claude_code(&self) -> ClaudeCodeInfo {
        let found = claude_install::detect(&self.env);
        let (rendered_for, _) = self.rendered_for(None);
        ClaudeCodeInfo {
            installed: found.is_some(),
            path: found.as_ref().map(|f| f.path.clone()),
            found_by: found.as_ref().map(|f| found_by_name(f.found_by).to_string()),
            version: found.as_ref().and_then(|f| f.version).map(|v| v.to_string()),
            version_error: found.and_then(|f| f.version_error),
            rendered_for,
            checked_releases: versions::matrix().iter().map(ToString::to_string).collect(),
        }
    }

    /// The behaviours to render with: the release asked for, else the installed one, else
    /// the newest the matrix checks.
    pub(crate) fn rendered_for(&self, chosen: Option<ClaudeVersion>) -> (RenderedFor, Profile) {
        let installed = match chosen {
            Some(_) => None,
            None => claude_install::detect(&self.env).and_then(|f| Some((f.version?, f.profile()?))),
        };
        let (version, basis) = match (chosen, installed) {
            (Some(v), _) => (v, "chosen"),
            (None, Some((v, _))) => (v, "installed"),
            (None, None) => (versions::newest_checked(), "assumed"),
        };
        let mut resolved = versions::profile_for(version);
        if let Some((_, profile)) = installed {
            resolved.profile = profile;
        }
        let newest = versions::newest_checked();
        let note = match (basis, resolved.fidelity) {
            (_, Fidelity::Unverified) if version > newest => format!(
                "Claude Code {version} is newer than any release Mneme has checked (newest: {newest}); \
                 shown with {newest}'s behaviours. Run Check with my Claude Code to confirm."
            ),
            (_, Fidelity::Unverified) if version >= versions::BASELINE.since => format!(
                "Claude Code {version} is older than the releases Mneme checks on every test run (from {}); \
                 shown with the behaviours differential runs found for it.",
                versions::matrix().into_iter().min().unwrap_or(newest)
            ),
            (_, Fidelity::Unverified) => format!(
                "Claude Code {version} is older than any release Mneme has checked; shown with {}'s behaviours.",
                versions::BASELINE.since
            ),
            ("assumed", _) => format!("No Claude Code was found on this machine; shown as Claude Code {version} sends it."),
            ("installed", _) => format!("As your Claude Code {version} sends it."),
            _ => format!("As Claude Code {version} sends it."),
        };
        let rendered = RenderedFor {
            version: version.to_string(),
            basis: basis.to_string(),
            fidelity: fidelity_name(resolved.fidelity).to_string(),
            note,
        };
        (rendered, resolved.profile)
    }
}
