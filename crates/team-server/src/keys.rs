//! Server-side validation of entry keys.
//!
//! A key is a path relative to a client's team-memory folder. Claude Code applies
//! `sanitizePathKey` to every key it pulls and writes nothing for a key that fails, so the
//! server refuses such keys up front with the same checks, in the same order, with the same
//! messages — [`mneme_team_proto::keys::sanitize_path_key`], the client's own port. The client then
//! checks containment against its folder; with no folder here, the server asks for more: a key
//! must be a normalized relative path (no empty, `.` or `..` segment), so that every stored key
//! names exactly one file on every client.
//!
//! A key the server newly stores must also pass Mneme's strict canonical policy
//! ([`mneme_team_proto::keys::check_strict_key`]: no control or text-direction characters, NFC,
//! components a file system and Windows accept): refused, never normalised, so that a
//! teammate on another system or a terminal listing cannot be tricked by a key. Keys named
//! only to be removed keep the looser check above, so entries stored before the strict policy
//! can still be removed.

use mneme_team_proto::keys::{check_strict_key, sanitize_path_key, PathTraversalError, StrictKeyError};

/// Longer keys cannot be a path on Linux (`PATH_MAX`), so no client could write them.
pub const MAX_KEY_BYTES: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    /// One of `sanitizePathKey`'s refusals, or a key that climbs out of the folder.
    #[error(transparent)]
    Traversal(#[from] PathTraversalError),
    #[error("Key is not a normalized relative path (empty, \".\" or \"..\" segment): \"{0}\"")]
    NotNormalized(String),
    #[error("Key is longer than {MAX_KEY_BYTES} bytes")]
    TooLong,
    /// Mneme's strict canonical policy refused it.
    #[error(transparent)]
    Strict(#[from] StrictKeyError),
}

/// Everything a key must satisfy to be stored: [`validate_existing_key`] and the strict policy.
pub fn validate_key(key: &str) -> Result<(), KeyError> {
    validate_existing_key(key)?;
    check_strict_key(key)?;
    Ok(())
}

/// What a key named for removal must satisfy: Claude Code's checks and a normalized path.
pub fn validate_existing_key(key: &str) -> Result<(), KeyError> {
    if key.len() > MAX_KEY_BYTES {
        return Err(KeyError::TooLong);
    }
    sanitize_path_key(key)?;
    let mut depth: i64 = 0;
    let mut normalized = true;
    for segment in key.split('/') {
        match segment {
            ".." => {
                depth -= 1;
                normalized = false;
                if depth < 0 {
                    return Err(PathTraversalError::KeyEscapes(key.to_string()).into());
                }
            }
            "" | "." => normalized = false,
            _ => depth += 1,
        }
    }
    if !normalized {
        return Err(KeyError::NotNormalized(key.to_string()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_plain_and_nested_keys() {
        for key in ["MEMORY.md", "a/b.md", "notes/2026/plan.txt", "100%.md", "caf\u{e9}.md", "%zz.md"] {
            assert_eq!(validate_key(key), Ok(()), "{key}");
        }
    }

    #[test]
    fn refuses_what_sanitize_path_key_refuses_with_its_messages() {
        assert_eq!(validate_key("a\0/..").unwrap_err().to_string(), "Null byte in path key: \"a\0/..\"");
        assert_eq!(
            validate_key("%2e%2e/x.md").unwrap_err().to_string(),
            "URL-encoded traversal in path key: \"%2e%2e/x.md\""
        );
        // U+FF0E FULLWIDTH FULL STOP normalizes to "." under NFKC.
        assert_eq!(
            validate_key("\u{ff0e}\u{ff0e}/x").unwrap_err().to_string(),
            "Unicode-normalized traversal in path key: \"\u{ff0e}\u{ff0e}/x\""
        );
        assert_eq!(validate_key("a\\b.md").unwrap_err().to_string(), "Backslash in path key: \"a\\b.md\"");
        assert_eq!(validate_key("/etc/passwd").unwrap_err().to_string(), "Absolute path key: \"/etc/passwd\"");
    }

    #[test]
    fn stored_keys_follow_the_strict_policy() {
        for key in ["a\u{202e}dm.exe", "notes/\u{1b}[31mred.md", "con.md", "a./b.md", "cafe\u{301}.md", "x:y.md"] {
            assert!(matches!(validate_key(key), Err(KeyError::Strict(_))), "{key:?}");
            assert_eq!(validate_existing_key(key), Ok(()), "{key:?} can still be removed");
        }
        assert!(matches!(validate_key(&format!("{}.md", "a".repeat(300))), Err(KeyError::Strict(_))));
    }

    #[test]
    fn refuses_keys_that_escape_or_are_not_normalized() {
        assert_eq!(validate_key("../x.md").unwrap_err().to_string(), "Key escapes team memory directory: \"../x.md\"");
        assert_eq!(
            validate_key("a/../../x.md").unwrap_err(),
            KeyError::Traversal(PathTraversalError::KeyEscapes("a/../../x.md".into()))
        );
        for key in ["", "a//b.md", "a/./b.md", "a/../b.md", "dir/", "."] {
            assert_eq!(validate_key(key), Err(KeyError::NotNormalized(key.into())), "{key:?}");
        }
        assert_eq!(validate_key(&"a".repeat(MAX_KEY_BYTES + 1)), Err(KeyError::TooLong));
    }
}
