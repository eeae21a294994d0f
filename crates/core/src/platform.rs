//! What differs between the systems Mneme is packaged for (Linux, macOS, Windows), as plain
//! data of an [`Os`]: the folders Claude Code and Mneme use, where the home folder comes from,
//! and which OS keyring holds secrets. [`Os::current`] is the only place that asks which system
//! this is; everything else takes an `Os`, so each system's answers are unit-tested on any
//! machine. The OS calls themselves (spawning an editor, reading the keyring) stay in the
//! crates that make them.
//!
//! The config home (`~/.claude`, or `CLAUDE_CONFIG_DIR`) is the same on every system: Claude
//! Code joins `.claude` to `os.homedir()` everywhere.

use std::collections::BTreeMap;
use std::path::PathBuf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Os {
    Linux,
    MacOs,
    Windows,
}

impl Os {
    /// The system this binary was built for. Other Unix systems follow Linux, as Claude Code's
    /// own platform checks do.
    pub const fn current() -> Os {
        if cfg!(target_os = "macos") {
            Os::MacOs
        } else if cfg!(windows) {
            Os::Windows
        } else {
            Os::Linux
        }
    }

    /// The path separator this system's paths are written with.
    pub const fn separator(self) -> char {
        match self {
            Os::Windows => '\\',
            Os::Linux | Os::MacOs => '/',
        }
    }

    /// Joins `parts` to `base` with this system's separator (so Windows paths come out right
    /// when tested on Linux).
    pub fn join(self, base: &str, parts: &[&str]) -> PathBuf {
        let sep = self.separator();
        let mut out = base.trim_end_matches(sep).to_string();
        for p in parts {
            out.push(sep);
            out.push_str(p);
        }
        PathBuf::from(out)
    }

    /// Claude Code's managed-policy folder, which holds the Managed `CLAUDE.md` and rules
    /// (`managedPath.ts`).
    pub const fn managed_dir(self) -> &'static str {
        match self {
            Os::Linux => "/etc/claude-code",
            Os::MacOs => "/Library/Application Support/ClaudeCode",
            Os::Windows => r"C:\Program Files\ClaudeCode",
        }
    }

    /// The home folder as Node's `os.homedir()` finds it from the environment: `HOME` on Unix,
    /// `USERPROFILE` on Windows. Only an absolute path counts; `None` means the caller must
    /// say which variable to set ([`Os::home_variable`]).
    pub fn home_dir(self, vars: &BTreeMap<String, String>) -> Option<PathBuf> {
        let value = vars.get(self.home_variable())?;
        let absolute = match self {
            Os::Windows => {
                let b = value.as_bytes();
                (b.len() >= 3 && b[0].is_ascii_alphabetic() && b[1] == b':' && (b[2] == b'\\' || b[2] == b'/'))
                    || value.starts_with(r"\\")
            }
            Os::Linux | Os::MacOs => value.starts_with('/'),
        };
        absolute.then(|| PathBuf::from(value))
    }

    /// The variable [`Os::home_dir`] reads.
    pub const fn home_variable(self) -> &'static str {
        match self {
            Os::Windows => "USERPROFILE",
            Os::Linux | Os::MacOs => "HOME",
        }
    }

    /// Where Mneme keeps its own data (trash, history, provider settings) when
    /// `MNEME_DATA_DIR` is not set: each system's per-user application-data folder.
    /// Linux: `$XDG_DATA_HOME/mneme` (an absolute value only), else `~/.local/share/mneme`.
    /// macOS: `~/Library/Application Support/mneme`. Windows: `%APPDATA%\mneme`, else
    /// `<home>\AppData\Roaming\mneme`.
    pub fn data_dir(self, home: &str, vars: &BTreeMap<String, String>) -> PathBuf {
        match self {
            Os::Linux => match vars.get("XDG_DATA_HOME").filter(|d| d.starts_with('/')) {
                Some(d) => self.join(d, &["mneme"]),
                None => self.join(home, &[".local", "share", "mneme"]),
            },
            Os::MacOs => self.join(home, &["Library", "Application Support", "mneme"]),
            Os::Windows => match vars.get("APPDATA").filter(|d| !d.is_empty()) {
                Some(d) => self.join(d, &["mneme"]),
                None => self.join(home, &["AppData", "Roaming", "mneme"]),
            },
        }
    }

    /// The OS keyring that holds API keys and sign-in tokens, for messages.
    pub const fn keyring_name(self) -> &'static str {
        match self {
            Os::Linux => "the Secret Service (GNOME Keyring or KWallet)",
            Os::MacOs => "the macOS Keychain",
            Os::Windows => "the Windows Credential Manager",
        }
    }

    /// What to do when the keyring cannot be reached at all.
    pub const fn keyring_unreachable_hint(self) -> &'static str {
        match self {
            Os::Linux => "start a Secret Service such as gnome-keyring (`apt install gnome-keyring`) inside a D-Bus session",
            Os::MacOs => "unlock the login keychain in Keychain Access",
            Os::Windows => "sign in to Windows with a user profile that has a Credential Manager",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn this_build_is_linux_macos_or_windows() {
        let os = Os::current();
        assert_eq!(os == Os::MacOs, cfg!(target_os = "macos"));
        assert_eq!(os == Os::Windows, cfg!(windows));
    }

    #[test]
    fn managed_policy_folders_are_claude_codes() {
        assert_eq!(Os::Linux.managed_dir(), "/etc/claude-code");
        assert_eq!(Os::MacOs.managed_dir(), "/Library/Application Support/ClaudeCode");
        assert_eq!(Os::Windows.managed_dir(), "C:\\Program Files\\ClaudeCode");
    }

    #[test]
    fn home_comes_from_each_systems_variable() {
        let v = vars(&[("HOME", "/home/ana"), ("USERPROFILE", r"C:\Users\ana")]);
        assert_eq!(Os::Linux.home_dir(&v), Some(PathBuf::from("/home/ana")));
        assert_eq!(Os::MacOs.home_dir(&v), Some(PathBuf::from("/home/ana")));
        assert_eq!(Os::Windows.home_dir(&v), Some(PathBuf::from(r"C:\Users\ana")));
        // Relative or missing values are refused, naming the variable to set.
        assert_eq!(Os::Linux.home_dir(&vars(&[("HOME", "ana")])), None);
        assert_eq!(Os::Windows.home_dir(&vars(&[("USERPROFILE", r"Users\ana")])), None);
        assert_eq!(Os::Windows.home_dir(&vars(&[("HOME", "/home/ana")])), None);
        assert_eq!(Os::Windows.home_variable(), "USERPROFILE");
        assert_eq!(Os::Windows.home_dir(&vars(&[("USERPROFILE", r"\\server\home\ana")])), Some(PathBuf::from(r"\\server\home\ana")));
    }

    #[test]
    fn data_folders_follow_each_systems_convention() {
        let none = vars(&[]);
        assert_eq!(Os::Linux.data_dir("/home/ana", &none), PathBuf::from("/home/ana/.local/share/mneme"));
        assert_eq!(Os::Linux.data_dir("/home/ana", &vars(&[("XDG_DATA_HOME", "/data")])), PathBuf::from("/data/mneme"));
        assert_eq!(
            Os::Linux.data_dir("/home/ana", &vars(&[("XDG_DATA_HOME", "rel")])),
            PathBuf::from("/home/ana/.local/share/mneme"),
            "a relative XDG_DATA_HOME is ignored, as the XDG spec says"
        );
        assert_eq!(Os::MacOs.data_dir("/Users/ana", &none), PathBuf::from("/Users/ana/Library/Application Support/mneme"));
        assert_eq!(
            Os::Windows.data_dir(r"C:\Users\ana", &vars(&[("APPDATA", r"C:\Users\ana\AppData\Roaming")])),
            PathBuf::from(r"C:\Users\ana\AppData\Roaming\mneme")
        );
        assert_eq!(Os::Windows.data_dir(r"C:\Users\ana\", &none), PathBuf::from(r"C:\Users\ana\AppData\Roaming\mneme"));
    }

    #[test]
    fn keyrings_are_named_with_what_to_do() {
        assert!(Os::Linux.keyring_name().contains("Secret Service"));
        assert!(Os::MacOs.keyring_name().contains("Keychain"));
        assert!(Os::Windows.keyring_name().contains("Credential Manager"));
        for os in [Os::Linux, Os::MacOs, Os::Windows] {
            assert!(!os.keyring_unreachable_hint().is_empty());
        }
    }
}
