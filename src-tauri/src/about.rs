//! The About section: the app's version (the workspace's) and the commit it was built from
//! (stamped by build.rs), the same text `mneme --version` prints for the CLI.

use serde::Serialize;
use specta::Type;

/// Which build of the app is running.
#[derive(Debug, Clone, Serialize, Type)]
#[serde(rename_all = "camelCase")]
pub struct About {
    /// The workspace version, e.g. `0.1.0`.
    pub version: String,
    /// The commit's first 12 hex digits, or `unknown` for a build made outside git without
    /// `MNEME_COMMIT`.
    pub commit: String,
}

pub fn about_this_build() -> About {
    About { version: env!("CARGO_PKG_VERSION").to_string(), commit: env!("MNEME_COMMIT").to_string() }
}

/// Version and commit of the running app.
#[tauri::command]
#[specta::specta]
pub fn about() -> About {
    about_this_build()
}
