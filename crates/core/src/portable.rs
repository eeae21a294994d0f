//! File names every system Claude Code runs on can create. Linux and macOS take almost any
//! name; Windows refuses a few characters, names ending in a dot or a space (it drops them, so
//! the file would be another), and device names. A memory folder is often synced between
//! machines or checked into git, and team memory lands on every teammate's disk, so a name
//! Mneme writes anew must be one Windows can create too.
//!
//! This is the one copy of the rule: team keys (`mneme_team_proto::keys::check_strict_key`)
//! and new local memory names (`mneme_store::memdir::validate_new_topic_path`, and its slug
//! maker) both ask [`check_windows_name`]. Names that exist already are not judged by it.

/// Why Windows cannot create a file or folder of a given name. The messages are a reason
/// (what Windows refuses); the caller says what to do, since that depends on where the name
/// came from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WindowsNameError {
    /// One of `<>:"/\|?*` or a control character (U+0000–U+001F).
    #[error("the character {0:?} is reserved")]
    ReservedCharacter(char),
    /// The name ends with `.` or ` `, which Windows strips when it creates the file.
    #[error("the name {0:?} ends with a dot or a space, which Windows drops")]
    TrailingDotOrSpace(String),
    /// `CON`, `PRN`, `AUX`, `NUL`, `CONIN$`, `CONOUT$`, `COM0`–`COM9` or `LPT0`–`LPT9`, with or
    /// without an extension.
    #[error("{0:?} is a reserved device name")]
    DeviceName(String),
}

/// A character Windows refuses anywhere in a name.
pub fn is_windows_reserved_char(c: char) -> bool {
    matches!(c, '<' | '>' | ':' | '"' | '/' | '\\' | '|' | '?' | '*') || (c as u32) < 0x20
}

/// Whether `name` (one path component) is a device name Windows reserves in every folder:
/// the part before the first dot, trailing spaces dropped, in any letter case, is `CON`,
/// `PRN`, `AUX`, `NUL`, `CONIN$`, `CONOUT$`, `COM` or `LPT` and one digit — the superscripts
/// `¹²³` count as digits there, as Windows counts them.
pub fn is_windows_device(name: &str) -> bool {
    let stem = device_stem(name).to_ascii_uppercase();
    if matches!(stem.as_str(), "CON" | "PRN" | "AUX" | "NUL" | "CONIN$" | "CONOUT$") {
        return true;
    }
    let mut chars = stem.chars();
    let head: String = chars.by_ref().take(3).collect();
    let tail: String = chars.collect();
    (head == "COM" || head == "LPT") && tail.chars().count() == 1 && tail.chars().all(|c| c.is_ascii_digit() || "¹²³".contains(c))
}

/// The part of `name` Windows compares with its device names: up to the first dot, without
/// trailing spaces (`con .md` is `CON` too).
pub fn device_stem(name: &str) -> &str {
    name.split('.').next().unwrap_or(name).trim_end_matches(' ')
}

/// Checks that Windows can create a file or folder named `name` (one path component, no `/`):
/// reserved characters first, then a trailing dot or space, then device names.
pub fn check_windows_name(name: &str) -> Result<(), WindowsNameError> {
    if let Some(c) = name.chars().find(|&c| is_windows_reserved_char(c)) {
        return Err(WindowsNameError::ReservedCharacter(c));
    }
    if name.ends_with('.') || name.ends_with(' ') {
        return Err(WindowsNameError::TrailingDotOrSpace(name.into()));
    }
    if is_windows_device(name) {
        return Err(WindowsNameError::DeviceName(name.into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_names_in_any_case_with_or_without_an_extension() {
        for name in ["CON", "con", "Con.md", "prn.txt", "aux", "nul.tar.gz", "con .md", "CONIN$", "conout$.md", "COM0", "com9.md", "LPT1", "lpt¹.md", "COM²", "com³.md"] {
            assert_eq!(check_windows_name(name), Err(WindowsNameError::DeviceName(name.into())), "{name}");
        }
        for name in ["console.md", "con-memory.md", "com10.md", "lpt.md", "com¹¹.md", "com⁴.md", "auxiliary", "xcon.md", "nul_.md"] {
            assert_eq!(check_windows_name(name), Ok(()), "{name}");
        }
    }

    #[test]
    fn reserved_characters_and_trailing_dots_or_spaces() {
        for c in ['<', '>', ':', '"', '/', '\\', '|', '?', '*', '\0', '\n', '\u{1f}'] {
            let name = format!("a{c}b.md");
            assert_eq!(check_windows_name(&name), Err(WindowsNameError::ReservedCharacter(c)), "{name:?}");
        }
        for name in ["notes.", "notes ", "a.md."] {
            assert_eq!(check_windows_name(name), Err(WindowsNameError::TrailingDotOrSpace(name.into())), "{name:?}");
        }
        // DEL and other characters past U+001F are Windows' to create.
        assert_eq!(check_windows_name("a\u{7f}b é.md"), Ok(()));
    }

    #[test]
    fn messages_name_what_windows_refuses() {
        assert_eq!(WindowsNameError::ReservedCharacter(':').to_string(), "the character ':' is reserved");
        assert_eq!(WindowsNameError::TrailingDotOrSpace("x.".into()).to_string(), "the name \"x.\" ends with a dot or a space, which Windows drops");
        assert_eq!(WindowsNameError::DeviceName("aux.md".into()).to_string(), "\"aux.md\" is a reserved device name");
    }
}
