//! Server-side validation of entry keys.
//!
//! A key is a path relative to a client's team-memory folder. Claude Code applies
//! `sanitizePathKey` to every key it pulls and writes nothing for a key that fails, so the
//! server refuses such keys up front with the same checks in the same order and the same
//! messages (reference §8.7). The client then checks containment against its folder; with no
//! folder here, the server asks for more: a key must be a normalized relative path (no empty,
//! `.` or `..` segment), so that every stored key names exactly one file on every client.

use unicode_normalization::UnicodeNormalization;

/// Longer keys cannot be a path on Linux (`PATH_MAX`), so no client could write them.
pub const MAX_KEY_BYTES: usize = 4096;

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum KeyError {
    #[error("Null byte in path key: \"{0}\"")]
    NullByte(String),
    #[error("URL-encoded traversal in path key: \"{0}\"")]
    UrlEncodedTraversal(String),
    #[error("Unicode-normalized traversal in path key: \"{0}\"")]
    UnicodeTraversal(String),
    #[error("Backslash in path key: \"{0}\"")]
    Backslash(String),
    #[error("Absolute path key: \"{0}\"")]
    Absolute(String),
    #[error("Key escapes team memory directory: \"{0}\"")]
    Escapes(String),
    #[error("Key is not a normalized relative path (empty, \".\" or \"..\" segment): \"{0}\"")]
    NotNormalized(String),
    #[error("Key is longer than {MAX_KEY_BYTES} bytes")]
    TooLong,
}

/// Claude Code's `sanitizePathKey`, check for check.
pub fn sanitize_path_key(key: &str) -> Result<(), KeyError> {
    if key.contains('\0') {
        return Err(KeyError::NullByte(key.to_string()));
    }
    // A malformed encoding makes decodeURIComponent throw; Claude Code then uses the key as is.
    if let Some(decoded) = decode_uri_component(key) {
        if decoded != key && (decoded.contains("..") || decoded.contains('/')) {
            return Err(KeyError::UrlEncodedTraversal(key.to_string()));
        }
    }
    let normalized: String = key.nfkc().collect();
    if normalized != key
        && (normalized.contains("..") || normalized.contains('/') || normalized.contains('\\') || normalized.contains('\0'))
    {
        return Err(KeyError::UnicodeTraversal(key.to_string()));
    }
    if key.contains('\\') {
        return Err(KeyError::Backslash(key.to_string()));
    }
    if key.starts_with('/') {
        return Err(KeyError::Absolute(key.to_string()));
    }
    Ok(())
}

/// Everything a key must satisfy to be stored.
pub fn validate_key(key: &str) -> Result<(), KeyError> {
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
                    return Err(KeyError::Escapes(key.to_string()));
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

/// JavaScript's `decodeURIComponent`: `None` where it would throw a `URIError` (a `%` not
/// followed by two hex digits, or escapes that are not UTF-8).
fn decode_uri_component(s: &str) -> Option<String> {
    if !s.contains('%') {
        return Some(s.to_string());
    }
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    // Literal characters are whole UTF-8 sequences, so the result is valid exactly when every
    // run of escapes is, which is the condition JavaScript checks.
    String::from_utf8(out).ok()
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
    fn rejects_in_claude_codes_order_with_its_messages() {
        assert_eq!(validate_key("a\0/..").unwrap_err().to_string(), "Null byte in path key: \"a\0/..\"");
        assert_eq!(
            validate_key("%2e%2e/x.md").unwrap_err().to_string(),
            "URL-encoded traversal in path key: \"%2e%2e/x.md\""
        );
        assert_eq!(validate_key("a%2Fb.md").unwrap_err(), KeyError::UrlEncodedTraversal("a%2Fb.md".into()));
        // U+FF0E FULLWIDTH FULL STOP normalizes to "." under NFKC.
        assert_eq!(validate_key("\u{ff0e}\u{ff0e}/x").unwrap_err(), KeyError::UnicodeTraversal("\u{ff0e}\u{ff0e}/x".into()));
        // U+FF0F FULLWIDTH SOLIDUS normalizes to "/".
        assert_eq!(validate_key("a\u{ff0f}b").unwrap_err(), KeyError::UnicodeTraversal("a\u{ff0f}b".into()));
        assert_eq!(validate_key("a\\b.md").unwrap_err().to_string(), "Backslash in path key: \"a\\b.md\"");
        assert_eq!(validate_key("/etc/passwd").unwrap_err().to_string(), "Absolute path key: \"/etc/passwd\"");
    }

    #[test]
    fn rejects_keys_that_escape_or_are_not_normalized() {
        assert_eq!(validate_key("../x.md").unwrap_err(), KeyError::Escapes("../x.md".into()));
        assert_eq!(validate_key("a/../../x.md").unwrap_err(), KeyError::Escapes("a/../../x.md".into()));
        for key in ["", "a//b.md", "a/./b.md", "a/../b.md", "dir/", "."] {
            assert_eq!(validate_key(key), Err(KeyError::NotNormalized(key.into())), "{key:?}");
        }
        assert_eq!(validate_key(&"a".repeat(MAX_KEY_BYTES + 1)), Err(KeyError::TooLong));
    }

    #[test]
    fn decodes_like_javascript() {
        assert_eq!(decode_uri_component("a%20b").as_deref(), Some("a b"));
        assert_eq!(decode_uri_component("%E2%82%AC").as_deref(), Some("\u{20ac}"));
        assert_eq!(decode_uri_component("%E2%82"), None);
        assert_eq!(decode_uri_component("%"), None);
        assert_eq!(decode_uri_component("%g0"), None);
        // An encoded surrogate is a URIError in JavaScript.
        assert_eq!(decode_uri_component("%ED%A0%80"), None);
    }
}
