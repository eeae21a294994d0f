//! The `autoMemoryDirectory` user setting: one folder for every project's auto memory,
//! validated with Claude Code's own rules before it is written.

use crate::{ApiError, Mneme};
use mneme_store::paths::{node_normalize, validate_memory_path};
use mneme_store::settings;
use mneme_store::Environment;
use serde::Serialize;
use std::path::PathBuf;

/// What [`Mneme::set_auto_memory_directory`] wrote.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct AutoMemDirChange {
    /// The user settings file.
    pub settings_path: PathBuf,
    /// The value now in the file; `None` when the key was removed.
    pub value: Option<String>,
    /// The folder Claude Code will use (`~/` expanded, normalized); `None` when cleared, which
    /// means one folder per project under [`Self::default_base`].
    pub resolved: Option<PathBuf>,
    /// `<memory base>/projects`, where per-project memory folders live without the setting.
    pub default_base: PathBuf,
    /// Something that keeps the setting from taking effect everywhere, in a sentence.
    pub note: Option<String>,
}

impl Mneme {
    /// Sets (`Some`) or removes (`None`) `autoMemoryDirectory` in Claude Code's user settings,
    /// keeping every other byte of the file. A value Claude Code would ignore is refused with
    /// the reason.
    pub fn set_auto_memory_directory(&self, value: Option<&str>) -> Result<AutoMemDirChange, ApiError> {
        let default_base = self.env.memory_base().join("projects");
        // Managed policy or the cowork override (shell or an env block) may decide instead.
        let note = self.user_settings_to_change()?.auto_memory_directory_overridden;
        match value {
            None => {
                let settings_path = settings::remove_user_setting(&self.env, "autoMemoryDirectory")?;
                Ok(AutoMemDirChange { settings_path, value: None, resolved: None, default_base, note })
            }
            Some(raw) => {
                let resolved = validate_memory_path(raw, true, &self.env)
                    .ok_or_else(|| ApiError::invalid(why_invalid(raw, &self.env)))?;
                let settings_path =
                    settings::write_user_setting(&self.env, "autoMemoryDirectory", serde_json::Value::String(raw.to_string()))?;
                Ok(AutoMemDirChange {
                    settings_path,
                    value: Some(raw.to_string()),
                    resolved: Some(resolved),
                    default_base,
                    note: note.or_else(|| {
                        Some("A repository's .claude/settings.json or .claude/settings.local.json can still choose another folder for that repository.".to_string())
                    }),
                })
            }
        }
    }
}

/// Why Claude Code's `validateMemoryPath` (with `~/` expansion) rejects `raw`, in a sentence
/// that says what to write instead. The checks follow
/// [`validate_memory_path`](mneme_store::paths::validate_memory_path) in order.
pub(crate) fn why_invalid(raw: &str, env: &Environment) -> String {
    const FIX: &str = "Use an absolute folder such as ~/claude-memory or /srv/claude-memory, or clear the setting.";
    if raw.is_empty() {
        return format!("The memory folder is empty. {FIX}");
    }
    if raw.contains('\0') {
        return format!("The memory folder contains a NUL character, which no path may hold. {FIX}");
    }
    if raw.trim() != raw {
        return format!(
            "\"{raw}\" starts or ends with a space; Claude Code does not trim it, so the folder would not be what you meant. {FIX}"
        );
    }
    if raw == "~" {
        return format!("\"~\" on its own is not expanded by Claude Code (only \"~/…\" is), so it is not an absolute folder. {FIX}");
    }
    if let Some(rest) = raw.strip_prefix("~/").or_else(|| raw.strip_prefix("~\\")) {
        let norm = node_normalize(if rest.is_empty() { "." } else { rest });
        if norm == "." || norm == ".." || norm.starts_with("../") || norm.starts_with("..\\") {
            return format!(
                "\"{raw}\" is your home folder or above it; Claude Code refuses that, since every file there would count as memory. {FIX}"
            );
        }
    }
    let expanded = match raw.strip_prefix("~/").or_else(|| raw.strip_prefix("~\\")) {
        Some(rest) => format!("{}/{rest}", env.home.to_string_lossy()),
        None => raw.to_string(),
    };
    let normalized = node_normalize(&expanded);
    let normalized = normalized.trim_end_matches(['/', '\\']);
    let b = normalized.as_bytes();
    if b.len() == 2 && b[0].is_ascii_alphabetic() && b[1] == b':' {
        return format!("\"{raw}\" is a whole drive; Claude Code refuses a drive root. {FIX}");
    }
    if normalized.starts_with("\\\\") || normalized.starts_with("//") {
        return format!("\"{raw}\" is a network (UNC) path; Claude Code refuses paths starting with // or \\\\. {FIX}");
    }
    if normalized.is_empty() {
        return format!("\"{raw}\" is the root folder; Claude Code refuses it as too short. {FIX}");
    }
    if !normalized.starts_with('/') {
        return format!("\"{raw}\" is a relative path; Claude Code needs an absolute folder (starting with / or ~/). {FIX}");
    }
    if normalized.encode_utf16().count() < 3 {
        return format!("\"{raw}\" is too short: Claude Code refuses the root folder and one-letter folders like /a. {FIX}");
    }
    format!("Claude Code would ignore \"{raw}\" as a memory folder. {FIX}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_testsupport::TestHome;
    use std::sync::Arc;

    fn mneme(t: &TestHome) -> Mneme {
        Mneme::new(t.env.clone(), Arc::new(crate::FixedClock::at_unix_secs(1_700_000_000)))
    }

    #[test]
    fn refuses_what_claude_code_ignores_and_says_why() {
        let t = TestHome::new();
        let m = mneme(&t);
        let cases = [
            ("", "empty"),
            ("relative/dir", "relative"),
            ("~", "not expanded"),
            ("~/", "home folder"),
            ("~/..", "home folder"),
            ("~/../x", "home folder"),
            ("/", "too short"),
            ("///", "too short"),
            ("/a", "too short"),
            ("C:", "drive"),
            ("C:\\", "drive"),
            ("\\\\server\\share", "UNC"),
            ("/tmp/a\0b", "NUL"),
            (" /tmp/x", "space"),
        ];
        for (raw, why) in cases {
            let e = m.set_auto_memory_directory(Some(raw)).unwrap_err();
            assert_eq!(e.code, crate::ErrorCode::InvalidInput, "{raw:?}");
            assert!(e.message.contains(why), "{raw:?}: {}", e.message);
            assert!(validate_memory_path(raw, true, &t.env).is_none(), "{raw:?} is valid for Claude Code");
        }
        assert!(!t.config_home().join("settings.json").exists(), "a refused value was written");
    }

    #[test]
    fn writes_keeps_other_keys_and_clears() {
        let t = TestHome::new();
        let path = t.config_home().join("settings.json");
        std::fs::write(&path, "{\n  \"model\": \"opus\",\n  \"autoMemoryEnabled\": true\n}\n").unwrap();
        let m = mneme(&t);
        let c = m.set_auto_memory_directory(Some("~/claude-memory/")).unwrap();
        assert_eq!(c.resolved, Some(t.home().join("claude-memory")));
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "{\n  \"model\": \"opus\",\n  \"autoMemoryEnabled\": true,\n  \"autoMemoryDirectory\": \"~/claude-memory/\"\n}\n"
        );
        assert_eq!(m.machine_settings().unwrap().auto_memory_directory.as_deref(), Some("~/claude-memory/"));
        let c = m.set_auto_memory_directory(None).unwrap();
        assert!(c.resolved.is_none() && c.value.is_none());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\n  \"model\": \"opus\",\n  \"autoMemoryEnabled\": true\n}\n");
    }

    #[test]
    fn malformed_settings_are_left_alone() {
        let t = TestHome::new();
        let path = t.config_home().join("settings.json");
        let text = "{ \"model\": \"opus\", }";
        std::fs::write(&path, text).unwrap();
        let m = mneme(&t);
        let e = m.set_auto_memory_directory(Some("/srv/mem")).unwrap_err();
        assert_eq!(e.code, crate::ErrorCode::Malformed);
        let e = m.set_auto_memory_directory(None).unwrap_err();
        assert_eq!(e.code, crate::ErrorCode::Malformed);
        assert_eq!(std::fs::read_to_string(&path).unwrap(), text);
    }
}
