//! Texts Mneme must send exactly as the user's own Claude Code does, cut at run time from the
//! installed binary and cached per version in Mneme's data dir.
//!
//! Claude Code is proprietary, so Mneme's repository holds none of its prose: Mneme has its own
//! wording for every prompt. Where a feature promises to behave exactly like Claude Code (the
//! recall selector in its Claude Code dialect), the text comes from the binary on this machine:
//! a Bun-compiled executable whose JavaScript sits in it as plain UTF-8. Each text is found by
//! a short anchor (its first words), read to the end of its string literal and unescaped as
//! JavaScript does. A `${name}` inside a template literal is resolved when the bundle assigns
//! that name a plain string (feature-gated parts are empty strings); anything else is refused
//! rather than guessed.

use std::path::{Path, PathBuf};

/// A text Mneme can cut from Claude Code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaudeText {
    /// The recall selector's system prompt (the side query that picks relevant memories).
    SelectorPrompt,
}

impl ClaudeText {
    /// The opening words of the text in the bundle: a fact to search by, not the text.
    fn anchor(self) -> &'static str {
        match self {
            ClaudeText::SelectorPrompt => "You are selecting memories that will be useful to Claude Code",
        }
    }

    fn file_name(self) -> &'static str {
        match self {
            ClaudeText::SelectorPrompt => "selector_prompt.txt",
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClaudeTextError {
    #[error("cannot read the Claude Code binary {path}: {source}")]
    Read { path: PathBuf, source: std::io::Error },
    #[error("{what} was not found in {path}; this Claude Code build may word or pack it differently, so Mneme uses its own text")]
    NotFound { what: &'static str, path: PathBuf },
    #[error("{what} in {path} could not be read as a JavaScript string: {why}")]
    Malformed { what: &'static str, path: PathBuf, why: String },
}

/// `which` as Claude Code `version` at `bin` has it. The answer is cached in
/// `cache_dir/<version>/` (Mneme's data dir), since reading a 200 MB binary on every call would
/// be slow and the text of a release never changes.
pub fn claude_text(bin: &Path, version: &str, cache_dir: &Path, which: ClaudeText) -> Result<String, ClaudeTextError> {
    // A version string names a folder; keep it to the characters a release uses, and never let
    // it name the cache folder itself or its parent (`.`, `..`): such a version is not cached.
    let safe: String = version.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+')).collect();
    let safe = if safe.starts_with(|c: char| c.is_ascii_alphanumeric()) && !safe.contains("..") { safe } else { String::new() };
    let cached = cache_dir.join(&safe).join(which.file_name());
    if !safe.is_empty() {
        // A cache without its whole seal (cut short by a crash or a full disk, damaged, or
        // written before the seal) is read again from the binary and written anew.
        if let Some(text) = std::fs::read(&cached).ok().and_then(|bytes| unseal(&bytes)) {
            return Ok(text);
        }
    }
    let binary = std::fs::read(bin).map_err(|source| ClaudeTextError::Read { path: bin.to_path_buf(), source })?;
    let text = cut(&binary, which).map_err(|e| match e {
        Cut::NotFound => ClaudeTextError::NotFound { what: what(which), path: bin.to_path_buf() },
        Cut::Malformed(why) => ClaudeTextError::Malformed { what: what(which), path: bin.to_path_buf(), why },
    })?;
    if !safe.is_empty() {
        // The cache is an optimisation: failing to write it only costs the next call a read.
        if let Some(dir) = cached.parent() {
            if std::fs::create_dir_all(dir).is_ok() {
                let _ = crate::atomic::write_atomic(&cached, &seal(&text));
            }
        }
    }
    Ok(text)
}

/// What closes a cache file: the text's length in bytes and its FNV-1a hash. Any cut or changed
/// byte breaks it, so a cache that is not whole is never sent as Claude Code's text.
const SEAL: &str = "\n-- mneme claude_text cache: ";

fn fnv1a(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3))
}

/// The cache file for `text`: the text, then a last line sealing it.
fn seal(text: &str) -> Vec<u8> {
    format!("{text}{SEAL}{} bytes, fnv1a {:016x} --\n", text.len(), fnv1a(text.as_bytes())).into_bytes()
}

/// The text of a cache file whose seal is whole and matches it, else `None`.
fn unseal(bytes: &[u8]) -> Option<String> {
    let file = std::str::from_utf8(bytes).ok()?;
    let at = file.rfind(SEAL)?;
    let (text, last) = (&file[..at], &file[at + SEAL.len()..]);
    let (len, hash) = last.strip_suffix(" --\n")?.split_once(" bytes, fnv1a ")?;
    (len.parse::<usize>().ok()? == text.len() && u64::from_str_radix(hash, 16).ok()? == fnv1a(text.as_bytes())).then(|| text.to_string())
}

fn what(which: ClaudeText) -> &'static str {
    match which {
        ClaudeText::SelectorPrompt => "The recall selector prompt",
    }
}

#[derive(Debug)]
enum Cut {
    NotFound,
    Malformed(String),
}

/// The string literal that starts with `which`'s anchor, unescaped. The anchor may also occur
/// outside the bundle's source (Bun keeps other copies of some strings), so every occurrence
/// is tried and the first that opens a string literal wins.
fn cut(binary: &[u8], which: ClaudeText) -> Result<String, Cut> {
    let anchor = which.anchor().as_bytes();
    let mut from = 0;
    let mut last = Cut::NotFound;
    while let Some(at) = find(binary, anchor, from) {
        from = at + 1;
        if let Some(q @ (b'"' | b'\'' | b'`')) = at.checked_sub(1).map(|p| binary[p]) {
            match literal(binary, at, q) {
                Ok(text) => return Ok(text),
                Err(e) => last = e,
            }
        }
    }
    Err(last)
}

/// The rest of a string literal opened by `quote`, from `at`, unescaped.
fn literal(binary: &[u8], at: usize, quote: u8) -> Result<String, Cut> {
    let mut out: Vec<u8> = Vec::new();
    let mut i = at;
    loop {
        let b = *binary.get(i).ok_or_else(|| Cut::Malformed("the string literal never closes".into()))?;
        match b {
            _ if b == quote => break,
            b'\\' => {
                let (bytes, used) = unescape(&binary[i..]).ok_or_else(|| Cut::Malformed(format!("an unknown escape at byte {i}")))?;
                out.extend_from_slice(&bytes);
                i += used;
            }
            b'$' if quote == b'`' && binary.get(i + 1) == Some(&b'{') => {
                let end = binary[i..].iter().position(|&c| c == b'}').ok_or_else(|| Cut::Malformed("an unclosed ${…}".into()))?;
                let name = &binary[i + 2..i + end];
                out.extend_from_slice(&resolve(binary, name)?);
                i += end + 1;
            }
            b'\n' | b'\r' if quote != b'`' => return Err(Cut::Malformed("a line break inside a quoted string".into())),
            0 => return Err(Cut::Malformed("a NUL byte: not JavaScript source".into())),
            _ => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8(out).map_err(|_| Cut::Malformed("the text is not UTF-8".into()))
}

/// A `${name}` inside the template: the plain string the bundle assigns to `name`.
fn resolve(binary: &[u8], name: &[u8]) -> Result<Vec<u8>, Cut> {
    let unsupported = || Cut::Malformed(format!("${{{}}} is not a plain string in the bundle", String::from_utf8_lossy(name)));
    if name.is_empty() || !name.iter().all(|c| c.is_ascii_alphanumeric() || *c == b'_' || *c == b'$') {
        return Err(unsupported());
    }
    for quote in [b'"', b'\'', b'`'] {
        let mut needle = name.to_vec();
        needle.extend_from_slice(&[b'=', quote]);
        let mut from = 0;
        while let Some(at) = find(binary, &needle, from) {
            from = at + 1;
            // `name` must be the whole identifier, not the tail of a longer one.
            let before = at.checked_sub(1).map(|p| binary[p]);
            if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'$') {
                continue;
            }
            let start = at + needle.len();
            let Some(len) = binary[start..].iter().position(|&c| c == quote) else { continue };
            let value = &binary[start..start + len];
            if value.contains(&b'\\') || value.contains(&b'\n') || (quote == b'`' && value.contains(&b'$')) {
                continue;
            }
            return Ok(value.to_vec());
        }
    }
    Err(unsupported())
}

/// One JavaScript escape at the start of `s` (which begins with a backslash): its bytes and
/// how many input bytes it used.
fn unescape(s: &[u8]) -> Option<(Vec<u8>, usize)> {
    let c = *s.get(1)?;
    let simple = |b: u8| Some((vec![b], 2));
    match c {
        b'n' => simple(b'\n'),
        b't' => simple(b'\t'),
        b'r' => simple(b'\r'),
        b'b' => simple(0x08),
        b'f' => simple(0x0c),
        b'v' => simple(0x0b),
        b'0' if !s.get(2).is_some_and(u8::is_ascii_digit) => simple(0),
        b'\n' => Some((Vec::new(), 2)), // a line continuation
        b'x' => {
            let hex = std::str::from_utf8(s.get(2..4)?).ok()?;
            let ch = char::from_u32(u32::from_str_radix(hex, 16).ok()?)?;
            Some((ch.to_string().into_bytes(), 4))
        }
        b'u' if s.get(2) == Some(&b'{') => {
            let end = s.iter().position(|&b| b == b'}')?;
            let ch = char::from_u32(u32::from_str_radix(std::str::from_utf8(&s[3..end]).ok()?, 16).ok()?)?;
            Some((ch.to_string().into_bytes(), end + 1))
        }
        b'u' => {
            let unit = u16::from_str_radix(std::str::from_utf8(s.get(2..6)?).ok()?, 16).ok()?;
            // A surrogate pair is two escapes in a row.
            if (0xD800..0xDC00).contains(&unit) && s.get(6) == Some(&b'\\') && s.get(7) == Some(&b'u') {
                let low = u16::from_str_radix(std::str::from_utf8(s.get(8..12)?).ok()?, 16).ok()?;
                let ch = char::decode_utf16([unit, low]).next()?.ok()?;
                return Some((ch.to_string().into_bytes(), 12));
            }
            let ch = char::from_u32(unit as u32)?;
            Some((ch.to_string().into_bytes(), 6))
        }
        _ if c.is_ascii_digit() => None, // legacy octal: never in Claude Code's prompts
        _ => simple(c), // \" \' \` \\ \$ and any other character stand for themselves
    }
}

fn find(hay: &[u8], needle: &[u8], from: usize) -> Option<usize> {
    if from >= hay.len() {
        return None;
    }
    memchr_find(&hay[from..], needle).map(|p| p + from)
}

/// A plain substring search: the first byte is located with `position` (vectorized by the
/// standard library) and the rest compared.
fn memchr_find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    let (&first, rest) = needle.split_first()?;
    let mut i = 0;
    while i + needle.len() <= hay.len() {
        let p = hay[i..=hay.len() - needle.len()].iter().position(|&b| b == first)?;
        let at = i + p;
        if &hay[at + 1..at + needle.len()] == rest {
            return Some(at);
        }
        i = at + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bundle(body: &str) -> Vec<u8> {
        format!("\0\0var a=1;var Kx=\"\",Q=`{body}`;\0").into_bytes()
    }

    #[test]
    fn a_template_literal_is_cut_and_unescaped_with_empty_interpolations_resolved() {
        let b = bundle("You are selecting memories that will be useful to Claude Code \\u2014 \\`x\\`.\n- one${Kx}\n");
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("claude");
        std::fs::write(&bin, &b).unwrap();
        let got = claude_text(&bin, "9.9.9", &dir.path().join("cache"), ClaudeText::SelectorPrompt).unwrap();
        assert_eq!(got, "You are selecting memories that will be useful to Claude Code \u{2014} `x`.\n- one\n");
        // Cached per version: a changed binary at the same version is not read again.
        std::fs::write(&bin, b"nothing").unwrap();
        let again = claude_text(&bin, "9.9.9", &dir.path().join("cache"), ClaudeText::SelectorPrompt).unwrap();
        assert_eq!(again, got);
        let other = claude_text(&bin, "9.9.10", &dir.path().join("cache"), ClaudeText::SelectorPrompt);
        assert!(matches!(other, Err(ClaudeTextError::NotFound { .. })), "{other:?}");
    }

    /// A cache file that is not whole (a crash or a full disk cut it short; a byte changed; one
    /// written before the seal) is not trusted: the text is read from the binary again and the
    /// cache written anew.
    #[test]
    fn a_damaged_cache_is_read_again_from_the_binary() {
        let text = "You are selecting memories that will be useful to Claude Code.\n- one\n";
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("claude");
        std::fs::write(&bin, bundle(text)).unwrap();
        let cache = dir.path().join("cache");
        assert_eq!(claude_text(&bin, "9.9.9", &cache, ClaudeText::SelectorPrompt).unwrap(), text);
        let file = cache.join("9.9.9").join(ClaudeText::SelectorPrompt.file_name());
        let whole = std::fs::read(&file).unwrap();
        assert_eq!(unseal(&whole).as_deref(), Some(text));
        let mut flipped = whole.clone();
        flipped[10] ^= 0x20;
        let damaged: Vec<Vec<u8>> = vec![
            whole[..text.len() - 5].to_vec(),
            whole[..text.len()].to_vec(),
            whole[..whole.len() - 1].to_vec(),
            flipped,
            text.as_bytes().to_vec(),
            [&whole[..], b"trailing"].concat(),
        ];
        for bytes in damaged {
            std::fs::write(&file, &bytes).unwrap();
            assert_eq!(claude_text(&bin, "9.9.9", &cache, ClaudeText::SelectorPrompt).unwrap(), text, "{:?}", String::from_utf8_lossy(&bytes));
            assert_eq!(std::fs::read(&file).unwrap(), whole, "the cache is written anew");
        }
        // A whole cache is still trusted without the binary.
        std::fs::write(&bin, b"nothing").unwrap();
        assert_eq!(claude_text(&bin, "9.9.9", &cache, ClaudeText::SelectorPrompt).unwrap(), text);
        // A text that itself holds the seal's words round-trips.
        let tricky = format!("a{SEAL}1 bytes, fnv1a 0000000000000000 --\nb");
        assert_eq!(unseal(&seal(&tricky)).as_deref(), Some(tricky.as_str()));
    }

    /// The version comes from whatever `claude --version` printed: one that filters down to
    /// `..` or `.` must not read or write a cache beside or above the cache folder.
    #[test]
    fn a_version_of_dots_is_not_cached_outside_the_cache_folder() {
        let b = bundle("You are selecting memories that will be useful to Claude Code.\n");
        let dir = tempfile::tempdir().unwrap();
        let bin = dir.path().join("claude");
        std::fs::write(&bin, &b).unwrap();
        let cache = dir.path().join("data").join("cache");
        std::fs::create_dir_all(&cache).unwrap();
        // A planted file where `cache/../selector-prompt…` would be read from.
        let planted = cache.parent().unwrap().join(ClaudeText::SelectorPrompt.file_name());
        std::fs::write(&planted, "planted").unwrap();
        for version in ["..", ".", "../..", "/../", "-..", "1..2"] {
            let got = claude_text(&bin, version, &cache, ClaudeText::SelectorPrompt).unwrap();
            assert_eq!(got, "You are selecting memories that will be useful to Claude Code.\n", "{version}");
        }
        assert_eq!(std::fs::read_to_string(&planted).unwrap(), "planted");
        assert_eq!(std::fs::read_dir(&cache).unwrap().count(), 0, "nothing cached for a version of dots");
        claude_text(&bin, "2.1.332", &cache, ClaudeText::SelectorPrompt).unwrap();
        assert!(cache.join("2.1.332").join(ClaudeText::SelectorPrompt.file_name()).is_file());
    }

    #[test]
    fn an_interpolation_that_is_not_a_plain_string_is_refused() {
        let b = bundle("You are selecting memories that will be useful to Claude Code ${f(1)}");
        assert!(matches!(cut(&b, ClaudeText::SelectorPrompt), Err(Cut::Malformed(_))));
        let b = bundle("You are selecting memories that will be useful to Claude Code ${Nope}");
        assert!(matches!(cut(&b, ClaudeText::SelectorPrompt), Err(Cut::Malformed(_))));
    }

    /// Against the real binary (`MNEME_CLAUDE_BIN`, see `scripts/claude-code.sh`): the text is
    /// found, is whole, and its interpolation resolved.
    #[test]
    fn the_selector_prompt_is_cut_from_the_installed_claude_code() {
        let Some(bin) = std::env::var_os("MNEME_CLAUDE_BIN").map(PathBuf::from).filter(|p| p.is_file()) else {
            assert!(std::env::var("MNEME_REQUIRE_CLAUDE").as_deref() != Ok("1"), "MNEME_REQUIRE_CLAUDE=1 but MNEME_CLAUDE_BIN is not set");
            eprintln!("skipped: set MNEME_CLAUDE_BIN=\"$(scripts/claude-code.sh)\"");
            return;
        };
        let binary = std::fs::read(&bin).unwrap();
        let text = match cut(&binary, ClaudeText::SelectorPrompt) {
            Ok(t) => t,
            Err(e) => panic!("the selector prompt was not cut from {}: {e:?}", bin.display()),
        };
        assert!(text.starts_with(ClaudeText::SelectorPrompt.anchor()));
        assert!(text.ends_with('\n') && !text.contains("${"), "{text}");
        assert!(text.len() > 500, "{text}");
    }
}
