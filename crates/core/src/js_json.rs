//! `JSON.parse` as Node runs it, on top of serde_json.
//!
//! Claude Code reads and writes its JSON files (settings, `~/.claude.json`, transcripts) with
//! Node, which accepts three things serde_json refuses:
//!
//! - a number too large for a double: `1e400` is `Infinity`;
//! - a `\u` escape of an unpaired UTF-16 surrogate: `JSON.stringify` writes one for a string
//!   that was cut inside an emoji, so transcripts can hold them;
//! - invalid UTF-8, which Node decodes to U+FFFD before parsing.
//!
//! [`parse`] accepts all three, so a file Claude Code uses is never called broken here. The
//! stand-ins are the largest finite double for ±Infinity (serde_json has no infinity; it is
//! still a number, and still larger than any limit a setting is compared with) and U+FFFD for the
//! surrogate (what Node writes when such a string goes to a UTF-8 file). Everything else,
//! including the last of duplicated keys winning, serde_json already does as Node does.

use serde_json::Value;

/// Parses `bytes` as `JSON.parse(bytes.toString('utf8'))` would, with the stand-ins above.
/// A genuine syntax error is serde_json's, with its line and column.
pub fn parse(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let first = match serde_json::from_slice::<Value>(bytes) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    if !node_accepts_what_failed(&first) {
        return Err(first);
    }
    let text = String::from_utf8_lossy(bytes);
    serde_json::from_str(&with_stand_ins(&text))
}

/// [`parse`] for text already decoded.
pub fn parse_str(text: &str) -> Result<Value, serde_json::Error> {
    parse(text.as_bytes())
}

/// Whether serde_json stopped at one of the three things Node accepts. serde_json stops at the
/// first problem, so anything else is a real syntax error and is reported as it is.
fn node_accepts_what_failed(e: &serde_json::Error) -> bool {
    let message = e.to_string();
    ["number out of range", "lone leading surrogate", "unexpected end of hex escape", "invalid unicode code point"]
        .iter()
        .any(|m| message.starts_with(m))
}

/// `text` with every infinite number written as the largest finite double and every unpaired
/// surrogate escape as `\ufffd`. Works on the token level, so the same characters inside a
/// string are left alone.
fn with_stand_ins(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 16);
    let mut rest = text;
    while let Some(c) = rest.chars().next() {
        if c == '"' {
            let len = string_token_len(rest);
            push_string_with_stand_ins(&rest[..len], &mut out);
            rest = &rest[len..];
        } else if c == '-' || c.is_ascii_digit() {
            let len = rest.find(|c: char| !matches!(c, '0'..='9' | '-' | '+' | '.' | 'e' | 'E')).unwrap_or(rest.len());
            let token = &rest[..len];
            match token.parse::<f64>() {
                Ok(n) if n.is_infinite() => {
                    out.push_str(if n < 0.0 { "-1.7976931348623157e308" } else { "1.7976931348623157e308" })
                }
                _ => out.push_str(token),
            }
            rest = &rest[len..];
        } else {
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    out
}

/// The byte length of the string token at the start of `s` (which starts with `"`), closing
/// quote included; the rest of `s` when it is never closed.
fn string_token_len(s: &str) -> usize {
    let bytes = s.as_bytes();
    let mut i = 1;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'"' => return i + 1,
            _ => i += 1,
        }
    }
    s.len()
}

/// Copies a string token, replacing each `\u` escape of an unpaired surrogate with `\ufffd`.
fn push_string_with_stand_ins(token: &str, out: &mut String) {
    let mut rest = token;
    while let Some(at) = rest.find("\\") {
        out.push_str(&rest[..at]);
        rest = &rest[at..];
        let Some(unit) = unicode_escape(rest) else {
            // Any other escape: copy the backslash and the character it escapes.
            let len = rest[1..].chars().next().map_or(1, |c| 1 + c.len_utf8());
            out.push_str(&rest[..len]);
            rest = &rest[len..];
            continue;
        };
        let paired = match unit {
            0xD800..=0xDBFF => unicode_escape(&rest[6..]).is_some_and(|next| (0xDC00..=0xDFFF).contains(&next)),
            0xDC00..=0xDFFF => false,
            _ => true,
        };
        if paired && (0xD800..=0xDBFF).contains(&unit) {
            out.push_str(&rest[..12]);
            rest = &rest[12..];
        } else if paired {
            out.push_str(&rest[..6]);
            rest = &rest[6..];
        } else {
            out.push_str("\\ufffd");
            rest = &rest[6..];
        }
    }
    out.push_str(rest);
}

/// The code unit of a `\uXXXX` escape at the start of `s`.
fn unicode_escape(s: &str) -> Option<u32> {
    let hex = s.strip_prefix("\\u")?.get(..4)?;
    if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    u32::from_str_radix(hex, 16).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn what_serde_json_parses_is_unchanged() {
        let text = r#"{"a": [1, -2.5e3, "x\"y\\u", "\ud83d\ude00"], "a": true}"#;
        assert_eq!(parse_str(text).unwrap(), serde_json::from_str::<Value>(text).unwrap());
        assert_eq!(parse_str(text).unwrap()["a"], json!(true), "the last duplicate wins, as in JSON.parse");
    }

    #[test]
    fn infinite_numbers_are_the_largest_double() {
        let v = parse_str(r#"{"big": 1e400, "small": -1E+999, "fine": 1e300, "s": "1e400"}"#).unwrap();
        assert_eq!(v["big"].as_f64(), Some(f64::MAX));
        assert_eq!(v["small"].as_f64(), Some(f64::MIN));
        assert_eq!(v["fine"].as_f64(), Some(1e300));
        assert_eq!(v["s"], json!("1e400"), "a number inside a string stays text");
    }

    #[test]
    fn unpaired_surrogates_become_replacement_characters() {
        let v = parse_str(r#"{"lead": "a\ud83d", "trail": "\ude00b", "pair": "\ud83d\ude00", "two": "\ud83d\ud83d\ude00", "k\udfff": 1}"#)
            .unwrap();
        assert_eq!(v["lead"], json!("a\u{fffd}"));
        assert_eq!(v["trail"], json!("\u{fffd}b"));
        assert_eq!(v["pair"], json!("😀"));
        assert_eq!(v["two"], json!("\u{fffd}😀"));
        assert_eq!(v["k\u{fffd}"], json!(1));
        // An escaped backslash before "ud800" is not an escape.
        assert_eq!(parse_str(r#"["\\ud800", "\ud800"]"#).unwrap(), json!(["\\ud800", "\u{fffd}"]));
    }

    #[test]
    fn invalid_utf8_reads_as_replacement_characters() {
        let v = parse(b"{\"a\": \"x\xff\xfey\"}").unwrap();
        assert_eq!(v["a"], json!("x\u{fffd}\u{fffd}y"));
    }

    #[test]
    fn real_syntax_errors_keep_their_position() {
        let e = parse_str("{\n  \"a\": 1,\n  \"b\": ,\n}").unwrap_err();
        assert_eq!((e.line(), e.column()), (3, 8));
        // A real error after a stand-in is still reported.
        let e = parse_str("{\"a\": 1e400,\n \"b\" 2}").unwrap_err();
        assert_eq!(e.line(), 2);
        assert!(parse_str(r#"{"a": "\ud800" x}"#).is_err());
        assert!(parse_str(r#"{"a": "unterminated \ud800"#).is_err());
    }
}
