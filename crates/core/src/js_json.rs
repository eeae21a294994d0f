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
//! Node also nests as deep as memory allows, where serde_json stops at 128 levels; [`parse`]
//! takes up to [`MAX_NESTING`] levels and refuses deeper with a clear error.
//!
//! [`parse`] accepts all three, so a file Claude Code uses is never called broken here. The
//! stand-ins are the largest finite double for ±Infinity (serde_json has no infinity; it is
//! still a number, and still larger than any limit a setting is compared with) and U+FFFD for the
//! surrogate (what Node writes when such a string goes to a UTF-8 file). Everything else,
//! including the last of duplicated keys winning, serde_json already does as Node does.

use serde::Deserialize;
use serde_json::Value;

/// The most arrays and objects [`parse`] nests. serde_json's own limit is 128, which refused
/// settings Node reads (a 129-deep array). Reading, dropping, cloning, comparing and printing a
/// `Value` all recurse once per level: 10,000 nested objects overflow a 2 MiB thread's stack
/// even to drop, and an unoptimised build clones 1,000 only with more than 2 MiB; 512 leaves
/// every one of those room to spare. No real settings file comes near. (The YAML reader has
/// the same limit, `js_yaml::MAX_NESTING`.)
pub const MAX_NESTING: usize = 512;

/// Parses `bytes` as `JSON.parse(bytes.toString('utf8'))` would, with the stand-ins above.
/// A genuine syntax error is serde_json's, with its line and column.
pub fn parse(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    let first = match from_slice(bytes) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    if !node_accepts_what_failed(&first) {
        return Err(first);
    }
    let text = String::from_utf8_lossy(bytes);
    from_slice(with_stand_ins(&text).as_bytes())
}

/// serde_json's reading, nesting up to [`MAX_NESTING`] levels instead of 128.
fn from_slice(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    match serde_json::from_slice::<Value>(bytes) {
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => from_slice_deep(bytes),
        other => other,
    }
}

/// A document nesting past 128 levels: refused past [`MAX_NESTING`], else read without
/// serde_json's limit on a thread of its own with room for the recursion (an unoptimised
/// build needs a few KiB a level: more than a 2 MiB thread has at 512 levels).
fn from_slice_deep(bytes: &[u8]) -> Result<Value, serde_json::Error> {
    if nesting(bytes) > MAX_NESTING {
        return Err(serde::de::Error::custom(format!("arrays and objects nest more than {MAX_NESTING} levels")));
    }
    let read = || {
        let mut de = serde_json::Deserializer::from_slice(bytes);
        de.disable_recursion_limit();
        let value = Value::deserialize(&mut de)?;
        de.end()?;
        Ok(value)
    };
    std::thread::scope(|scope| {
        let reader = std::thread::Builder::new().name("json-deep".into()).stack_size(64 << 20).spawn_scoped(scope, read);
        match reader {
            Ok(handle) => handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
            Err(e) => Err(serde::de::Error::custom(format!("no thread to read deeply nested JSON: {e}"))),
        }
    })
}

/// How deep the arrays and objects of a JSON text nest (brackets inside strings not counted;
/// unbalanced text is the parser's to refuse).
fn nesting(bytes: &[u8]) -> usize {
    let (mut depth, mut deepest, mut in_string, mut escaped) = (0usize, 0usize, false, false);
    for &b in bytes {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                deepest = deepest.max(depth);
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    deepest
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

    /// Node reads any depth; serde_json stopped at 128 and a settings file with a 129-deep
    /// array was called broken.
    #[test]
    fn nesting_up_to_the_limit_reads() {
        let nested = |n: usize| format!("{{\"permissions\": {}1{}}}", "[".repeat(n), "]".repeat(n));
        for n in [127, 128, 129, 300, MAX_NESTING - 1] {
            let v = parse_str(&nested(n)).unwrap_or_else(|e| panic!("{n}: {e}"));
            assert!(v["permissions"].is_array());
            drop(v);
        }
        // Still the stand-ins and the real errors in a deep document.
        let v = parse_str(&format!("{}\"\\ud800\", 1e400, \"[{{\"{}", "[".repeat(300), "]".repeat(300))).unwrap();
        let mut inner = &v;
        for _ in 0..299 {
            inner = &inner[0];
        }
        assert_eq!(inner, &json!(["\u{fffd}", f64::MAX, "[{"]));
        assert!(parse_str(&format!("{}1,{}", "[".repeat(300), "]".repeat(300))).is_err());
        assert!(parse_str(&format!("{}1{}]", "[".repeat(300), "]".repeat(300))).is_err());
        // Past the limit: refused, quickly and without overflowing the stack.
        for n in [MAX_NESTING + 1, 100_000] {
            let e = parse_str(&nested(n)).unwrap_err();
            assert!(e.to_string().contains("nest more than"), "{e}");
        }
        assert_eq!(nesting(br#"{"a": "[[{", "b": [{"c": "\"]"}]}"#), 3);
        // Objects at the limit can be cloned, compared, printed and dropped on a 2 MiB thread.
        let objects = format!("{}1{}", "{\"a\": ".repeat(MAX_NESTING), "}".repeat(MAX_NESTING));
        let v = parse_str(&objects).unwrap();
        std::thread::Builder::new()
            .stack_size(2 << 20)
            .spawn(move || {
                let copy = v.clone();
                assert_eq!(copy, v);
                assert!(format!("{v:?}").len() > MAX_NESTING && serde_json::to_string(&v).unwrap() == objects.replace(": ", ":"));
                drop((v, copy));
            })
            .unwrap()
            .join()
            .unwrap();
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
