//! Team memory keys: the rules a key must pass before it may name a file under the team
//! folder, with no file system involved — shared by the sync client (`mneme-team`, which adds
//! the checks against the real folder and the write) and the server (`mneme-team-server`, which
//! refuses keys that break them).
//!
//! [`sanitize_path_key`] is Claude Code's `sanitizePathKey` (each failure a
//! [`PathTraversalError`] with Claude Code's message): a NUL byte; `%`-escapes that decode to
//! `..` or `/` (`decodeURIComponent`, malformed escapes kept as they are); NFKC forms that
//! introduce `..`, `/`, `\` or NUL (full-width `．．／`); a backslash; a leading `/`.
//!
//! Paths follow Node's POSIX `path` module ([`normalize`], [`resolve`], [`dirname`]: `/`
//! separators, `..` resolved lexically), as Claude Code does on Linux and macOS. The team folder
//! string is NFC-normalised with a trailing `/` ([`team_dir_prefix`], `getTeamMemPath`).
//!
//! Mneme adds a strict canonical policy on top ([`check_strict_key`]) for every file it writes
//! from team memory and every key a team server stores: non-canonical spellings, control and
//! invisible characters, over-long names and names Windows cannot create are refused, never
//! normalised. The Windows rule is `mneme_core::portable`'s, which new local memory names
//! follow too, so the two cannot drift apart.

use mneme_core::portable::{check_windows_name, WindowsNameError};
use percent_encoding::percent_decode_str;
use std::path::Path;
use unicode_normalization::UnicodeNormalization;

/// A refused key or path, worded exactly as Claude Code words it (`PathTraversalError`).
/// Messages quote the key or path verbatim, NUL bytes included.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathTraversalError {
    /// The key holds a NUL byte.
    #[error("Null byte in path key: \"{0}\"")]
    NullByteInKey(String),
    /// `decodeURIComponent(key)` differs from the key and holds `..` or `/`.
    #[error("URL-encoded traversal in path key: \"{0}\"")]
    UrlEncodedTraversal(String),
    /// NFKC changes the key and the result holds `..`, `/`, `\` or NUL.
    #[error("Unicode-normalized traversal in path key: \"{0}\"")]
    UnicodeNormalizedTraversal(String),
    /// The key holds a backslash.
    #[error("Backslash in path key: \"{0}\"")]
    Backslash(String),
    /// The key starts with `/`.
    #[error("Absolute path key: \"{0}\"")]
    AbsoluteKey(String),
    /// The key resolves outside the team folder without following links.
    #[error("Key escapes team memory directory: \"{0}\"")]
    KeyEscapes(String),
    /// The key resolves outside the real team folder once links are followed.
    #[error("Key escapes team memory directory via symlink: \"{0}\"")]
    KeyEscapesViaSymlink(String),
    /// A path given to `mneme_team::keys::validate_team_mem_write_path` holds a NUL byte.
    #[error("Null byte in path: \"{0}\"")]
    NullByteInPath(String),
    /// A path given to `mneme_team::keys::validate_team_mem_write_path` is outside the team folder.
    #[error("Path escapes team memory directory: \"{0}\"")]
    PathEscapes(String),
    /// A path given to `mneme_team::keys::validate_team_mem_write_path` leads outside through a link.
    #[error("Path escapes team memory directory via symlink: \"{0}\"")]
    PathEscapesViaSymlink(String),
    /// A component is a symbolic link whose target does not exist.
    #[error("Dangling symlink detected (target does not exist): \"{0}\"")]
    DanglingSymlink(String),
    /// Following the links never ends.
    #[error("Symlink loop detected in path: \"{0}\"")]
    SymlinkLoop(String),
    /// `realpath` failed in a way that says nothing about containment (fail closed).
    #[error("Cannot verify path containment ({code}): \"{path}\"")]
    CannotVerify {
        /// The error code Node would report (`EACCES`, …).
        code: String,
        /// The path being resolved.
        path: String,
    },
}

/// Node's `path.normalize` for POSIX paths, without the trailing-slash keep: `.` and empty
/// segments dropped, `..` popping (never above `/` for absolute paths).
pub fn normalize(path: &str) -> String {
    let absolute = path.starts_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            s => parts.push(s),
        }
    }
    let joined = parts.join("/");
    match (absolute, joined.is_empty()) {
        (true, _) => format!("/{joined}"),
        (false, true) => ".".to_string(),
        (false, false) => joined,
    }
}

/// Node's `path.resolve(p)` with an explicit working directory.
pub fn resolve(path: &str, cwd: &str) -> String {
    if path.starts_with('/') {
        normalize(path)
    } else {
        normalize(&format!("{cwd}/{path}"))
    }
}

/// Node's `path.dirname` for a normalised absolute path.
pub fn dirname(path: &str) -> &str {
    match path.rfind('/') {
        Some(0) | None => "/",
        Some(i) => &path[..i],
    }
}

/// `getTeamMemPath()`: the team folder as a normalised string with one trailing `/`, NFC.
pub fn team_dir_prefix(team_dir: &Path) -> String {
    let joined = normalize(&team_dir.to_string_lossy());
    let with_sep = if joined.ends_with('/') { joined } else { format!("{joined}/") };
    with_sep.nfc().collect()
}

/// `decodeURIComponent`, or `None` where JavaScript throws `URIError`: a `%` without two hex
/// digits after it, or escapes that do not decode to UTF-8.
fn decode_uri_component(s: &str) -> Option<String> {
    let b = s.as_bytes();
    for (i, _) in s.match_indices('%') {
        let hex = |j: usize| b.get(j).is_some_and(u8::is_ascii_hexdigit);
        if !(hex(i + 1) && hex(i + 2)) {
            return None;
        }
    }
    percent_decode_str(s).decode_utf8().ok().map(|c| c.into_owned())
}

/// `sanitizePathKey`: the key checks that need no file system, in Claude Code's order.
pub fn sanitize_path_key(key: &str) -> Result<&str, PathTraversalError> {
    if key.contains('\0') {
        return Err(PathTraversalError::NullByteInKey(key.into()));
    }
    let decoded = decode_uri_component(key).unwrap_or_else(|| key.to_string());
    if decoded != key && (decoded.contains("..") || decoded.contains('/')) {
        return Err(PathTraversalError::UrlEncodedTraversal(key.into()));
    }
    let nfkc: String = key.nfkc().collect();
    if nfkc != key && (nfkc.contains("..") || nfkc.contains('/') || nfkc.contains('\\') || nfkc.contains('\0')) {
        return Err(PathTraversalError::UnicodeNormalizedTraversal(key.into()));
    }
    if key.contains('\\') {
        return Err(PathTraversalError::Backslash(key.into()));
    }
    if key.starts_with('/') {
        return Err(PathTraversalError::AbsoluteKey(key.into()));
    }
    Ok(key)
}
/// The longest key the strict policy accepts, in bytes. The key lands under a client's team
/// folder (`~/.claude/projects/<project>/memory/team/`, often 100 to 300 bytes), and macOS
/// allows 1,024 bytes for a whole path: a longer key could be written by one teammate and then
/// not even listed on another's machine, which would stop that teammate's every push.
pub const MAX_KEY_BYTES: usize = 512;

/// The most folders a key may go down (its components, the file's name included), for the same
/// reason: each level costs the listing a path lookup, and a key a few bytes per level deep
/// reaches any path limit.
pub const MAX_KEY_DEPTH: usize = 16;

/// The longest path component, in bytes: `NAME_MAX` on Linux and macOS (ext4, APFS).
pub const MAX_COMPONENT_BYTES: usize = 255;

/// Why the strict key policy refuses a key. Each message names the problem and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StrictKeyError {
    /// One of Claude Code's own refusals (`sanitizePathKey`, or a key climbing out).
    #[error(transparent)]
    ClaudeCode(#[from] PathTraversalError),
    /// The key is empty.
    #[error("Empty key: a team memory key names a file, such as notes/deploy.md")]
    Empty,
    /// The key is longer than [`MAX_KEY_BYTES`].
    #[error("Key is {0} bytes, over the {MAX_KEY_BYTES}-byte limit; use a shorter path")]
    TooLong(usize),
    /// The key goes more than [`MAX_KEY_DEPTH`] levels down.
    #[error("Key is {0} levels deep, over the limit of {MAX_KEY_DEPTH}; move the file to a shallower folder")]
    TooDeep(usize),
    /// A component is longer than [`MAX_COMPONENT_BYTES`].
    #[error("Key component {component:?} is {bytes} bytes, over the {MAX_COMPONENT_BYTES}-byte limit file systems allow; rename it")]
    ComponentTooLong {
        /// The component's start, for the message.
        component: String,
        /// Its length in bytes.
        bytes: usize,
    },
    /// Not the one canonical spelling: an empty, `.` or `..` component, or a trailing `/`.
    #[error("Key {key:?} is not canonical ({why}); write it as {canonical:?} (keys are compared as written, never normalised)")]
    NotCanonical {
        /// The key.
        key: String,
        /// What is wrong.
        why: &'static str,
        /// The key as it should have been written (for the message only).
        canonical: String,
    },
    /// A control character (C0, DEL, C1), which a terminal or a listing could act on.
    #[error("Key {key:?} contains the control character U+{code:04X}; rename the file without it")]
    ControlCharacter {
        /// The key.
        key: String,
        /// The character's code point.
        code: u32,
    },
    /// A character that changes text direction, is invisible or is a space other than the
    /// ordinary one, so the key reads as another.
    #[error("Key {key:?} contains U+{code:04X}, an invisible, blank or text-direction character that makes a name display as something else; rename the file without it")]
    InvisibleCharacter {
        /// The key.
        key: String,
        /// The character's code point.
        code: u32,
    },
    /// Not in Unicode NFC form: on macOS the same name in another form is the same file.
    #[error("Key {key:?} is not in Unicode NFC form, so it could name the same file as another key on macOS; rename the file (NFC: {nfc:?})")]
    NotNfc {
        /// The key.
        key: String,
        /// Its NFC form.
        nfc: String,
    },
    /// A character drawn like `/` or `\\`, so a file name reads as a folder path.
    #[error("Key {key:?} contains U+{code:04X}, which looks like a slash, so the name reads as a folder path it is not; rename the file without it")]
    LookalikeSlash {
        /// The key.
        key: String,
        /// The character's code point.
        code: u32,
    },
    /// A file team sync never sends back: every client's push skips it, so it would sit in
    /// every teammate's folder as the server's alone.
    #[error("Key {key:?} names a file team sync never pushes (only names ending in .md or .txt and not starting with a dot sync); rename it")]
    NotSynced {
        /// The key.
        key: String,
    },
    /// A name Windows cannot create.
    #[error("Key {key:?} cannot be a file name on Windows ({why}); rename it so every teammate can sync it")]
    Windows {
        /// The key.
        key: String,
        /// What Windows refuses.
        why: WindowsNameError,
    },
}

/// Invisible and text-direction characters (Unicode's bidi controls and the format and filler
/// characters that render as nothing): with them `txt.md` can display as `dm.txt`, or two keys
/// look the same.
fn is_invisible(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{034F}' | '\u{061C}' | '\u{115F}' | '\u{1160}' | '\u{17B4}' | '\u{17B5}' | '\u{180B}'..='\u{180F}'
        | '\u{200B}'..='\u{200F}' | '\u{2028}'..='\u{202E}' | '\u{2060}'..='\u{206F}' | '\u{3164}'
        | '\u{FE00}'..='\u{FE0F}' | '\u{FEFF}' | '\u{FFA0}' | '\u{FFF9}'..='\u{FFFB}'
        | '\u{1D173}'..='\u{1D17A}' | '\u{E0000}'..='\u{E0FFF}')
}

/// Characters drawn as a slash or a backslash that are neither (NFKC keeps them as they are,
/// so Claude Code's own check lets them through).
fn is_lookalike_slash(c: char) -> bool {
    matches!(c, '\u{2044}' | '\u{2215}' | '\u{2216}' | '\u{2571}' | '\u{2572}' | '\u{29F5}' | '\u{29F6}' | '\u{29F8}' | '\u{29F9}' | '\u{1735}' | '\u{3033}')
}

/// Only these file names sync (Claude Code 2.1.197's push): not starting with `.`, ending in
/// `.md` or `.txt`.
pub fn syncs_name(name: &str) -> bool {
    !name.starts_with('.') && (name.ends_with(".md") || name.ends_with(".txt"))
}

/// Mneme's strict canonical key policy, for every file Mneme writes from team memory and every
/// key a team server stores: refuse, never normalise. On top of Claude Code's checks
/// ([`sanitize_path_key`]) a key must be the one canonical spelling of its path (no empty, `.`
/// or `..` component, no leading `./`, no trailing `/`), hold no control, invisible or
/// text-direction character, be NFC, fit [`MAX_KEY_BYTES`] and [`MAX_KEY_DEPTH`] with components of at most
/// [`MAX_COMPONENT_BYTES`], and be a name Windows can create (no `<>:"|?*`, no `CON`, `NUL`,
/// `COM1`… with any extension, no component ending in a dot or a space).
///
/// Why refuse rather than fix: a key two clients spell differently (`a//b.md`, an NFD `é`)
/// names one file on one system and two on another, and a name that looks like another in a
/// terminal (`U+202E`, a newline) lets a teammate disguise a file.
pub fn check_strict_key(key: &str) -> Result<(), StrictKeyError> {
    if key.is_empty() {
        return Err(StrictKeyError::Empty);
    }
    if key.len() > MAX_KEY_BYTES {
        return Err(StrictKeyError::TooLong(key.len()));
    }
    let depth = key.split('/').count();
    if depth > MAX_KEY_DEPTH {
        return Err(StrictKeyError::TooDeep(depth));
    }
    // NUL keeps Claude Code's own message; other control characters are named by code point,
    // so the message itself cannot carry them to a terminal.
    if let Some(c) = key.chars().find(|&c| c.is_control() && c != '\0') {
        return Err(StrictKeyError::ControlCharacter { key: key.into(), code: c as u32 });
    }
    // Blank: Unicode's other spaces (an ideographic space at the end of a name) and the braille
    // blank, which renders as a space.
    if let Some(c) = key.chars().find(|&c| is_invisible(c) || c == '\u{2800}' || (c.is_whitespace() && c != ' ')) {
        return Err(StrictKeyError::InvisibleCharacter { key: key.into(), code: c as u32 });
    }
    if let Some(c) = key.chars().find(|&c| is_lookalike_slash(c)) {
        return Err(StrictKeyError::LookalikeSlash { key: key.into(), code: c as u32 });
    }
    sanitize_path_key(key)?;
    let components: Vec<&str> = key.split('/').collect();
    let canonical = || {
        let kept: Vec<&str> = components.iter().copied().filter(|c| !c.is_empty() && *c != ".").collect();
        normalize(&kept.join("/"))
    };
    let why = if key.ends_with('/') {
        Some("it ends with /")
    } else if components.contains(&"..") {
        Some("it has a .. component")
    } else if components.contains(&".") {
        Some("it has a . component")
    } else if components.contains(&"") {
        Some("it has an empty component")
    } else {
        None
    };
    if let Some(why) = why {
        let canonical = canonical();
        if canonical == ".." || canonical.starts_with("../") {
            return Err(PathTraversalError::KeyEscapes(key.into()).into());
        }
        return Err(StrictKeyError::NotCanonical { key: key.into(), why, canonical });
    }
    if let Some(c) = components.iter().find(|c| c.len() > MAX_COMPONENT_BYTES) {
        let shown: String = c.chars().take(40).collect();
        return Err(StrictKeyError::ComponentTooLong { component: format!("{shown}…"), bytes: c.len() });
    }
    let nfc: String = key.nfc().collect();
    if nfc != key {
        return Err(StrictKeyError::NotNfc { key: key.into(), nfc });
    }
    // The rule new local memory names are held to as well (`mneme_core::portable`).
    for c in &components {
        check_windows_name(c).map_err(|why| StrictKeyError::Windows { key: key.into(), why })?;
    }
    if !components.last().is_some_and(|name| syncs_name(name)) {
        return Err(StrictKeyError::NotSynced { key: key.into() });
    }
    Ok(())
}

/// A key with case folded away as far as any disk might fold it: lower-cased after upper-casing,
/// so `ſ` meets `s` and `ς` meets `σ`, which lower-casing alone keeps apart. Two keys with one
/// folding may be one file on a case-insensitive disk (macOS, Windows): the server refuses to
/// create the second (Mneme's client groups keys the same way, `client/pull.rs`).
pub fn case_fold(key: &str) -> String {
    key.to_lowercase().to_uppercase().to_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_a_case_insensitive_disk_may_take_for_one_fold_alike() {
        for (a, b) in [("MEMORY.md", "memory.md"), ("deploy-steps.md", "deploy-ſteps.md"), ("Straße.md", "STRASSE.md"), ("A/B.md", "a/b.md")] {
            assert_eq!(case_fold(a), case_fold(b), "{a} / {b}");
        }
        assert_ne!(case_fold("a.md"), case_fold("b.md"));
        // A folder's folding is a prefix of its files' foldings.
        assert!(case_fold("Notes.md/x.md").starts_with(&format!("{}/", case_fold("Notes.md"))));
    }

    /// The Windows rule is `mneme_core::portable`'s, shared with new local memory names; the
    /// messages are the ones this policy always gave.
    #[test]
    fn windows_refusals_name_what_windows_refuses() {
        let message = |key: &str| check_strict_key(key).unwrap_err().to_string();
        assert_eq!(message("notes/con.md"), "Key \"notes/con.md\" cannot be a file name on Windows (\"con.md\" is a reserved device name); rename it so every teammate can sync it");
        assert_eq!(message("lpt\u{b9}.txt"), "Key \"lpt\u{b9}.txt\" cannot be a file name on Windows (\"lpt\u{b9}.txt\" is a reserved device name); rename it so every teammate can sync it");
        assert_eq!(message("a:b.md"), "Key \"a:b.md\" cannot be a file name on Windows (the character ':' is reserved); rename it so every teammate can sync it");
        assert_eq!(message("notes./a.md"), "Key \"notes./a.md\" cannot be a file name on Windows (the name \"notes.\" ends with a dot or a space, which Windows drops); rename it so every teammate can sync it");
        assert_eq!(check_strict_key("console.md"), Ok(()));
    }

    #[test]
    fn node_path_semantics() {
        assert_eq!(normalize("/a//b/./c/../d/"), "/a/b/d");
        assert_eq!(normalize("/../.."), "/");
        assert_eq!(resolve("x/../y", "/cwd"), "/cwd/y");
        assert_eq!(dirname("/a/b"), "/a");
        assert_eq!(dirname("/a"), "/");
        assert_eq!(dirname("/"), "/");
        assert_eq!(team_dir_prefix(Path::new("/m//team/")), "/m/team/");
        // NFC: a decomposed é in the folder name is composed, as `.normalize('NFC')` does.
        assert_eq!(team_dir_prefix(Path::new("/m/cafe\u{301}/team")), "/m/caf\u{e9}/team/");
    }

    #[test]
    fn decode_uri_component_matches_javascript() {
        assert_eq!(decode_uri_component("%2e%2E%2F").as_deref(), Some("../"));
        assert_eq!(decode_uri_component("caf%C3%A9").as_deref(), Some("caf\u{e9}"));
        for malformed in ["100%", "%zz", "%4", "%C3", "%C3x", "%ED%A0%80", "%C0%AF", "%F4%90%80%80"] {
            assert_eq!(decode_uri_component(malformed), None, "{malformed}");
        }
    }
}
