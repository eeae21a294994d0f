//! The injected world: the home folder, the environment variables Claude Code consults, and
//! the managed-policy folder. Front ends build one from the real process; tests build one
//! around a temporary home.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use mneme_core::platform::Os;
use unicode_normalization::UnicodeNormalization;

/// The managed-policy folder on Linux (`src/utils/settings/managedPath.ts`); other systems':
/// [`Os::managed_dir`].
pub const DEFAULT_MANAGED_DIR: &str = Os::Linux.managed_dir();

/// The process environment names no usable home folder.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable} is not set to an absolute folder; set it and try again")]
pub struct NoHome {
    /// `HOME`, or `USERPROFILE` on Windows.
    pub variable: &'static str,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Environment {
    /// The user's home folder (`os.homedir()`).
    pub home: PathBuf,
    /// The environment variables Claude Code would see.
    pub vars: BTreeMap<String, String>,
    /// `/etc/claude-code` in production on Linux ([`Os::managed_dir`] elsewhere); injectable so
    /// tests never write to `/etc`.
    pub managed_dir: PathBuf,
}

impl Environment {
    /// An environment with only a home folder: no variables, this system's managed dir.
    pub fn with_home(home: impl Into<PathBuf>) -> Self {
        Environment { home: home.into(), vars: BTreeMap::new(), managed_dir: PathBuf::from(Os::current().managed_dir()) }
    }

    /// The real world, read once by a front end (the CLI, the desktop shell, examples): the
    /// home folder (`HOME`, or `USERPROFILE` on Windows), the environment variables, this
    /// system's managed-policy folder. Everything below the front ends takes the result
    /// instead of reading the process, so tests can hand in a temporary home.
    pub fn from_process() -> Result<Self, NoHome> {
        // A variable whose name or value is not Unicode is left out rather than failing the
        // whole run; none of the variables Claude Code or Mneme consult is one.
        let vars: BTreeMap<String, String> = std::env::vars_os()
            .filter_map(|(k, v)| Some((k.into_string().ok()?, v.into_string().ok()?)))
            .collect();
        let os = Os::current();
        let home = os.home_dir(&vars).ok_or(NoHome { variable: os.home_variable() })?;
        Ok(Environment { home, vars, managed_dir: PathBuf::from(os.managed_dir()) })
    }

    pub fn set_var(mut self, key: &str, value: impl Into<String>) -> Self {
        self.vars.insert(key.to_string(), value.into());
        self
    }

    pub fn var(&self, key: &str) -> Option<&str> {
        self.vars.get(key).map(String::as_str)
    }

    /// Claude Code's `isEnvTruthy`: `1`, `true`, `yes`, `on` (trimmed, any case).
    pub fn is_truthy(&self, key: &str) -> bool {
        self.var(key).is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "yes" | "on"))
    }

    /// Claude Code's `isEnvDefinedFalsy`: `0`, `false`, `no`, `off` (trimmed, any case).
    pub fn is_defined_falsy(&self, key: &str) -> bool {
        self.var(key).is_some_and(|v| matches!(v.trim().to_ascii_lowercase().as_str(), "0" | "false" | "no" | "off"))
    }

    /// `CLAUDE_CONFIG_DIR` if set, else `~/.claude`; NFC-normalized, no tilde expansion.
    pub fn config_home(&self) -> PathBuf {
        match self.var("CLAUDE_CONFIG_DIR") {
            Some(dir) => PathBuf::from(dir.nfc().collect::<String>()),
            None => PathBuf::from(self.home.join(".claude").to_string_lossy().nfc().collect::<String>()),
        }
    }

    /// `getMemoryBaseDir`: `CLAUDE_CODE_REMOTE_MEMORY_DIR` if set, else the config home.
    pub fn memory_base(&self) -> PathBuf {
        match self.var("CLAUDE_CODE_REMOTE_MEMORY_DIR") {
            Some(dir) if !dir.is_empty() => PathBuf::from(dir),
            _ => self.config_home(),
        }
    }

    /// `<config>/projects`: transcripts always live here, never under the memory base.
    pub fn projects_dir(&self) -> PathBuf {
        self.config_home().join("projects")
    }

    /// The global config file (`~/.claude.json`): `$CLAUDE_CONFIG_DIR/.claude.json` when the
    /// variable is set, else `~/.claude.json` (`getGlobalClaudeFile`).
    pub fn global_config_path(&self) -> PathBuf {
        match self.var("CLAUDE_CONFIG_DIR") {
            Some(dir) => Path::new(dir).join(".claude.json"),
            None => self.home.join(".claude.json"),
        }
    }

    /// Mneme's own data folder (trash, history): `MNEME_DATA_DIR`, else this system's
    /// application-data folder ([`Os::data_dir`]: on Linux `$XDG_DATA_HOME/mneme`, else
    /// `~/.local/share/mneme`). Never inside a memory folder, because Claude Code treats every
    /// `.md` there as a memory.
    pub fn data_dir(&self) -> PathBuf {
        if let Some(d) = self.var("MNEME_DATA_DIR").filter(|d| !d.is_empty()) {
            return PathBuf::from(d);
        }
        Os::current().data_dir(&self.home.to_string_lossy(), &self.vars)
    }

    /// Expands a leading `~/` against the home folder (`expandPath`).
    pub fn expand_tilde(&self, p: &str) -> PathBuf {
        if p == "~" {
            self.home.clone()
        } else if let Some(rest) = p.strip_prefix("~/") {
            self.home.join(rest)
        } else {
            PathBuf::from(p)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_home_defaults_and_env() {
        let e = Environment::with_home("/h");
        assert_eq!(e.config_home(), PathBuf::from("/h/.claude"));
        assert_eq!(e.global_config_path(), PathBuf::from("/h/.claude.json"));
        let e = e.set_var("CLAUDE_CONFIG_DIR", "/c/cafe\u{301}");
        assert_eq!(e.config_home(), PathBuf::from("/c/café"));
        assert_eq!(e.global_config_path(), PathBuf::from("/c/cafe\u{301}/.claude.json"));
    }

    #[test]
    fn truthy_and_falsy() {
        let e = Environment::with_home("/h").set_var("A", " YES ").set_var("B", "off").set_var("C", "maybe");
        assert!(e.is_truthy("A") && !e.is_defined_falsy("A"));
        assert!(e.is_defined_falsy("B") && !e.is_truthy("B"));
        assert!(!e.is_truthy("C") && !e.is_defined_falsy("C"));
        assert!(!e.is_truthy("D"));
    }
}
