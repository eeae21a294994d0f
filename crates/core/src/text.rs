//! Claude Code measures text as JavaScript does: lengths are UTF-16 code units and `trim()`
//! uses ECMAScript's whitespace set. These helpers reproduce that so limits match exactly.

use crate::versions::TruncationNote;

/// `MAX_ENTRYPOINT_LINES` in `src/memdir/memdir.ts`.
pub const MAX_ENTRYPOINT_LINES: usize = 200;
/// `MAX_ENTRYPOINT_BYTES` in `src/memdir/memdir.ts`; despite the name, UTF-16 code units.
pub const MAX_ENTRYPOINT_UNITS: usize = 25_000;
/// `MAX_MEMORY_CHARACTER_COUNT`: Claude Code's advisory size for one CLAUDE.md file.
pub const MAX_MEMORY_CHARACTER_COUNT: usize = 40_000;

/// JavaScript's `String(number)`: the shortest digits that read back as `f`, written plainly
/// from 1e-7 up to 1e21 and in exponent form (`1e+21`, `1.5e-7`) outside, `Infinity`, `NaN`.
pub fn js_number(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if f == 0.0 {
        return "0".into();
    }
    // Rust's `{:e}` gives the same shortest round-trip digits: `d.ddde<x>`.
    let sci = format!("{:e}", f.abs());
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let k = digits.len() as i32;
    let n = exp.parse::<i32>().unwrap_or(0) + 1; // the decimal point after `n` digits
    let body = if k <= n && n <= 21 {
        format!("{digits}{}", "0".repeat((n - k) as usize))
    } else if 0 < n && n <= 21 {
        format!("{}.{}", &digits[..n as usize], &digits[n as usize..])
    } else if -6 < n && n <= 0 {
        format!("0.{}{digits}", "0".repeat((-n) as usize))
    } else {
        let e = n - 1;
        let sign = if e < 0 { '-' } else { '+' };
        if k == 1 {
            format!("{digits}e{sign}{}", e.abs())
        } else {
            format!("{}.{}e{sign}{}", &digits[..1], &digits[1..], e.abs())
        }
    };
    if f < 0.0 {
        format!("-{body}")
    } else {
        body
    }
}

/// `s` safe to print to a terminal: control characters (C0 with the newline, DEL, C1) and the
/// characters that reorder text (bidi overrides, isolates and marks) are written as `\u{…}`,
/// so text from a server or another user cannot move the cursor, recolour the screen or make a
/// name read as another.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    let unsafe_char = |c: char| {
        c.is_control() || matches!(c, '\u{200E}' | '\u{200F}' | '\u{061C}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
    };
    if !s.chars().any(unsafe_char) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(s.chars().map(|c| if unsafe_char(c) { format!("\\u{{{:04x}}}", c as u32) } else { c.to_string() }).collect())
}

/// Length of `s` in UTF-16 code units (JavaScript's `String.prototype.length`).
pub fn utf16_len(s: &str) -> usize {
    s.chars().map(char::len_utf16).sum()
}

/// ECMAScript's WhiteSpace + LineTerminator set, which `String.prototype.trim` removes.
/// It differs from Rust's `char::is_whitespace` in two places: U+FEFF counts, U+0085 does not.
pub fn is_js_whitespace(c: char) -> bool {
    c == '\u{FEFF}' || (c.is_whitespace() && c != '\u{85}')
}

/// JavaScript's `String.prototype.trim`.
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_whitespace)
}

/// The characters Claude Code reads past (from 2.1.284) when it cleans MEMORY.md and when its
/// team-memory check reads a text: C0 and C1 controls but tab, LF and CR; format, private-use
/// and unassigned code points; default-ignorable ones — but not ZWNJ, ZWJ, VS15 and VS16, with
/// which emoji are spelled. One class for both, so they cannot drift apart.
pub static UNSEEN_CHARACTERS: std::sync::LazyLock<regex::Regex> = std::sync::LazyLock::new(|| {
    regex::Regex::new(r"[[\x00-\x08\x0B\x0C\x0E-\x1F\x7F-\x9F\p{Cf}\p{Co}\p{Cn}\p{Default_Ignorable_Code_Point}]--[\u{200C}\u{200D}\u{FE0E}\u{FE0F}]]")
        .expect("the unseen-character class compiles")
});

/// JavaScript's `String.prototype.trimStart`.
pub fn js_trim_start(s: &str) -> &str {
    s.trim_start_matches(is_js_whitespace)
}

/// Byte offset in `s` of the UTF-16 unit index `units`, rounded down to a char boundary.
pub fn byte_offset_of_utf16(s: &str, units: usize) -> usize {
    let mut seen = 0;
    for (i, c) in s.char_indices() {
        let w = c.len_utf16();
        if seen + w > units {
            return i;
        }
        seen += w;
    }
    s.len()
}

/// `25000` as `25,000`, for prose.
// `% 3`, not `is_multiple_of` (Rust 1.87; the workspace supports 1.85).
#[allow(clippy::manual_is_multiple_of)]
pub fn group_thousands(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// Claude Code's `formatFileSize`: bytes below 1 KiB, then KB/MB/GB with one decimal and a
/// trailing `.0` dropped (25,000 prints as `24.4KB`).
pub fn format_file_size(n: usize) -> String {
    if n < 1024 {
        return format!("{n} bytes");
    }
    let units = ["KB", "MB", "GB"];
    let mut unit = 0;
    let mut divisor: u128 = 1024;
    while n as u128 >= divisor * 1024 && unit < units.len() - 1 {
        divisor *= 1024;
        unit += 1;
    }
    // `toFixed(1)` rounds a tie up (25,856 bytes is 25.25 KB exactly: `25.3KB`), where Rust's
    // `{:.1}` rounds it to even; in integers, tenths = floor(10n / divisor + 1/2).
    let tenths = (20 * n as u128 + divisor) / (2 * divisor);
    let s = match tenths % 10 {
        0 => format!("{}", tenths / 10),
        d => format!("{}.{d}", tenths / 10),
    };
    format!("{s}{}", units[unit])
}

/// Claude Code's rough token estimate (`roughTokenCountEstimation`): UTF-16 length / 4, rounded.
pub fn estimate_tokens(s: &str) -> usize {
    (utf16_len(s) + 2) / 4
}

/// The outcome of fitting MEMORY.md into the context (`truncateEntrypointContent`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EntrypointTruncation {
    /// What Claude Code loads: the trimmed text, cut if needed, with the warning appended.
    pub content: String,
    /// Lines of the trimmed original (`split('\n').length`).
    pub line_count: usize,
    /// UTF-16 units of the trimmed original.
    pub unit_count: usize,
    pub was_line_truncated: bool,
    pub was_unit_truncated: bool,
}

impl EntrypointTruncation {
    pub fn was_truncated(&self) -> bool {
        self.was_line_truncated || self.was_unit_truncated
    }
}

/// Claude Code's `truncateEntrypointContent` with the newest release's note.
pub fn truncate_entrypoint(raw: &str) -> EntrypointTruncation {
    truncate_entrypoint_with(raw, crate::versions::newest().truncation_note)
}

/// Claude Code's `truncateEntrypointContent`: 200 lines first, then 25,000 UTF-16 units cut
/// at the last newline, then the warning in the wording of the release (`note`).
pub fn truncate_entrypoint_with(raw: &str, note: TruncationNote) -> EntrypointTruncation {
    if note == TruncationNote::FirstLines {
        return truncate_to_first_lines(raw);
    }
    let trimmed = js_trim(raw);
    let line_count = trimmed.split('\n').count();
    let unit_count = utf16_len(trimmed);
    let was_line_truncated = line_count > MAX_ENTRYPOINT_LINES;
    let was_unit_truncated = unit_count > MAX_ENTRYPOINT_UNITS;
    if !was_line_truncated && !was_unit_truncated {
        return EntrypointTruncation {
            content: trimmed.to_string(),
            line_count,
            unit_count,
            was_line_truncated,
            was_unit_truncated,
        };
    }
    let mut truncated: String = if was_line_truncated {
        trimmed.split('\n').take(MAX_ENTRYPOINT_LINES).collect::<Vec<_>>().join("\n")
    } else {
        trimmed.to_string()
    };
    if utf16_len(&truncated) > MAX_ENTRYPOINT_UNITS {
        // `lastIndexOf('\n', 25000)`: the newline may sit at unit index 25000 itself.
        let limit = byte_offset_of_utf16(&truncated, MAX_ENTRYPOINT_UNITS + 1);
        let cut = match truncated[..limit].rfind('\n') {
            Some(i) if i > 0 => i,
            _ => byte_offset_of_utf16(&truncated, MAX_ENTRYPOINT_UNITS),
        };
        truncated.truncate(cut);
    }
    let reason = match (was_line_truncated, was_unit_truncated) {
        (false, true) => format!(
            "{} (limit: {}) — index entries are too long",
            format_file_size(unit_count),
            format_file_size(MAX_ENTRYPOINT_UNITS)
        ),
        (true, false) => format!("{line_count} lines (limit: {MAX_ENTRYPOINT_LINES})"),
        _ => format!("{line_count} lines and {}", format_file_size(unit_count)),
    };
    let loaded = match note {
        TruncationNote::FirstLines => unreachable!("handled by truncate_to_first_lines above"),
        TruncationNote::Reason => "Only part of it was loaded".to_string(),
        TruncationNote::ReasonAndCut => {
            format!("Only part of it was loaded: {}", what_was_cut(trimmed, &truncated, line_count))
        }
    };
    let content = format!(
        "{truncated}\n\n> WARNING: MEMORY.md is {reason}. {loaded}. Keep index entries to one line under ~200 chars; move detail into topic files."
    );
    EntrypointTruncation { content, line_count, unit_count, was_line_truncated, was_unit_truncated }
}

/// Releases before 2.1.83: lines are counted after trailing whitespace is trimmed, and past
/// 200 the first 200 are kept with a note; under that the text stays as it is. There is no
/// size cap.
fn truncate_to_first_lines(raw: &str) -> EntrypointTruncation {
    let trimmed = raw.trim_end_matches(is_js_whitespace);
    let line_count = trimmed.split('\n').count();
    let unit_count = utf16_len(trimmed);
    let was_line_truncated = line_count > MAX_ENTRYPOINT_LINES;
    let content = if was_line_truncated {
        let kept = trimmed.split('\n').take(MAX_ENTRYPOINT_LINES).collect::<Vec<_>>().join("\n");
        format!(
            "{kept}\n\n> WARNING: MEMORY.md is {line_count} lines (limit: {MAX_ENTRYPOINT_LINES}). Only the first \
             {MAX_ENTRYPOINT_LINES} lines were loaded. Move detailed content into separate topic files and keep \
             MEMORY.md as a concise index."
        )
    } else {
        raw.to_string()
    };
    EntrypointTruncation { content, line_count, unit_count, was_line_truncated, was_unit_truncated: false }
}

/// Which part of MEMORY.md a cut left out, as newer releases word it. `kept` is a prefix of
/// `trimmed`. When the cut fell on a line end, the lines after it are counted and the first
/// of them quoted (at most 80 UTF-16 units, shortened at a word); otherwise the first line
/// alone was too long and the note says after how many characters it was cut.
fn what_was_cut(trimmed: &str, kept: &str, line_count: usize) -> String {
    let rest = &trimmed[kept.len()..];
    if !rest.starts_with('\n') {
        return format!("everything after the first {} characters of line 1 was cut off", utf16_len(kept));
    }
    let kept_lines = kept.matches('\n').count() + 1;
    let first_cut = js_trim(rest[1..].split('\n').next().unwrap_or(""));
    let quote = if first_cut.is_empty() { String::new() } else { format!(" (\"{}\")", shorten_at_word(first_cut, 80)) };
    format!(
        "{} of {line_count} lines were cut off, starting at line {}{quote}",
        line_count - kept_lines,
        kept_lines + 1
    )
}

/// Shortens `s` to at most `max` UTF-16 units ending in `…`: at the last word break when
/// that keeps more than half, else mid-word. Never splits a surrogate pair.
pub fn shorten_at_word(s: &str, max: usize) -> String {
    if utf16_len(s) <= max {
        return s.to_string();
    }
    let head = &s[..byte_offset_of_utf16(s, max - 1)];
    // The start of the last run of whitespace followed by non-whitespace up to the end.
    let last_break = head
        .char_indices()
        .filter(|&(i, c)| is_js_whitespace(c) && !head[i + c.len_utf8()..].chars().any(is_js_whitespace))
        .map(|(i, _)| i)
        .next();
    let at_word = last_break.map(|i| head[..i].trim_end_matches(is_js_whitespace)).unwrap_or("");
    let body = if utf16_len(at_word) * 2 > max { at_word } else { head.trim_end_matches(is_js_whitespace) };
    format!("{body}…")
}

/// A calendar date as `YYYY-MM-DD`, the way Claude Code writes dates (the context block's
/// date, daily-log names, dream notes): the one date formatter every crate uses.
pub fn iso_date(d: time::Date) -> String {
    format!("{:04}-{:02}-{:02}", d.year(), u8::from(d.month()), d.day())
}

/// JavaScript's `new Date(ms).toISOString()`: `2026-11-29T13:16:47.123Z`.
pub fn iso8601_millis(ms_since_epoch: i128) -> String {
    let nanos = ms_since_epoch * 1_000_000;
    match time::OffsetDateTime::from_unix_timestamp_nanos(nanos) {
        Ok(t) => format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z",
            t.year(),
            u8::from(t.month()),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            t.millisecond()
        ),
        Err(_) => "1970-01-01T00:00:00.000Z".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terminal_safe_escapes_what_a_terminal_would_act_on() {
        assert!(matches!(terminal_safe("notes/deploy.md é"), std::borrow::Cow::Borrowed(_)));
        assert_eq!(terminal_safe("a\x1b[2Jb\nc\u{202E}d\u{9b}"), "a\\u{001b}[2Jb\\u{000a}c\\u{202e}d\\u{009b}");
    }

    #[test]
    fn numbers_print_as_javascript_prints_them() {
        for (f, js) in [
            (1.0, "1"), (1.5, "1.5"), (-2.25, "-2.25"), (123456789.0, "123456789"), (1e21, "1e+21"), (1e20, "100000000000000000000"),
            (0.1, "0.1"), (1e-6, "0.000001"), (1e-7, "1e-7"), (1.5e-7, "1.5e-7"), (2.5e25, "2.5e+25"), (f64::INFINITY, "Infinity"),
            (f64::NEG_INFINITY, "-Infinity"), (f64::NAN, "NaN"), (0.0, "0"), (12345.678, "12345.678"),
        ] {
            assert_eq!(js_number(f), js, "{f}");
        }
    }

    #[test]
    fn file_sizes_print_like_claude_code() {
        for (n, expect) in [
            (0, "0 bytes"),
            (1023, "1023 bytes"),
            (1024, "1KB"),
            (25_000, "24.4KB"),
            (40_243, "39.3KB"),
            (56_115, "54.8KB"),
            (1024 * 1024, "1MB"),
            (1536 * 1024, "1.5MB"),
            // Ties round up, as `toFixed(1)` does: 1.25, 25.25, 26.25 KB, 1.25, 3.25 MB.
            (1280, "1.3KB"),
            (25_856, "25.3KB"),
            (26_880, "26.3KB"),
            (1_310_720, "1.3MB"),
            (3_407_872, "3.3MB"),
            (1_126, "1.1KB"),
            (1024 * 1024 - 1, "1024KB"),
            (1 << 30, "1GB"),
            (5 << 40, "5120GB"),
        ] {
            assert_eq!(format_file_size(n), expect, "{n}");
        }
    }

    #[test]
    fn utf16_counts_astral_characters_twice() {
        assert_eq!(utf16_len("aé"), 2);
        assert_eq!(utf16_len("😀"), 2);
    }

    #[test]
    fn js_trim_differs_from_rust_trim_where_javascript_does() {
        assert_eq!(js_trim("\u{FEFF} x \u{85}"), "x \u{85}");
    }

    fn check_trunc(input: &str, truncated: bool, warning: Option<&str>) {
        let t = truncate_entrypoint_with(input, TruncationNote::Reason);
        assert_eq!(t.was_truncated(), truncated, "truncated flag");
        match warning {
            Some(w) => assert!(t.content.ends_with(w), "warning: {}", &t.content[t.content.len().saturating_sub(300)..]),
            None => assert!(!t.content.contains("WARNING")),
        }
    }

    #[test]
    fn releases_before_2_1_83_cut_at_200_lines_only() {
        // Under the cap the text is left as it is, leading blank lines and all; no size cap.
        let long_lines = format!("\n{}\n", "x".repeat(40_000));
        let t = truncate_entrypoint_with(&long_lines, TruncationNote::FirstLines);
        assert!(!t.was_truncated());
        assert_eq!(t.content, long_lines);
        // Trailing blank lines do not count; leading ones do.
        let lines: String = (1..=201).map(|i| format!("- line {i}\n")).collect::<String>() + "\n\n";
        let t = truncate_entrypoint_with(&format!("\n{lines}"), TruncationNote::FirstLines);
        assert!(t.was_line_truncated && !t.was_unit_truncated);
        assert!(t.content.starts_with("\n- line 1\n"));
        assert!(t.content.ends_with(
            "- line 199\n\n> WARNING: MEMORY.md is 202 lines (limit: 200). Only the first 200 lines were loaded. \
             Move detailed content into separate topic files and keep MEMORY.md as a concise index."
        ));
    }

    #[test]
    fn entrypoint_truncation_limits() {
        let lines_200: String = (1..=200).map(|i| format!("- line {i}\n")).collect();
        check_trunc(&lines_200, false, None);
        let lines_201: String = (1..=201).map(|i| format!("- line {i}\n")).collect();
        check_trunc(&lines_201, true, Some("> WARNING: MEMORY.md is 201 lines (limit: 200). Only part of it was loaded. Keep index entries to one line under ~200 chars; move detail into topic files."));
        // exactly 25,000 units is allowed; 25,001 is not.
        let exact = format!("{}\n{}", "a".repeat(12_000), "b".repeat(12_999));
        assert_eq!(utf16_len(&exact), 25_000);
        check_trunc(&exact, false, None);
        let over = format!("{}\n{}", "a".repeat(12_000), "b".repeat(13_000));
        let t = truncate_entrypoint(&over);
        assert!(t.was_unit_truncated && !t.was_line_truncated);
        assert!(t.content.starts_with(&"a".repeat(12_000)));
        assert!(t.content.contains("MEMORY.md is 24.4KB (limit: 24.4KB) — index entries are too long."));
        assert_eq!(t.content.split("\n\n> WARNING").next().unwrap().len(), 12_000);
    }

    #[test]
    fn entrypoint_units_not_bytes() {
        // 15,000 units of "é" is 30,000 UTF-8 bytes but under the cap.
        let s: String = (0..100).map(|_| format!("{}\n", "é".repeat(149))).collect();
        assert!(s.len() > 25_000);
        check_trunc(&s, false, None);
    }

    #[test]
    fn entrypoint_without_newline_cuts_hard() {
        let s = "x".repeat(30_000);
        let t = truncate_entrypoint(&s);
        assert!(t.content.starts_with(&"x".repeat(25_000)));
        assert!(!t.content.starts_with(&"x".repeat(25_001)));
    }

    #[test]
    fn newer_notes_say_what_was_cut() {
        let note = |s: &str| {
            let t = truncate_entrypoint_with(s, TruncationNote::ReasonAndCut);
            t.content.split("\n\n> WARNING: ").nth(1).unwrap().to_string()
        };
        let lines: String = (1..=250).map(|i| format!("- line {i}\n")).collect();
        assert_eq!(
            note(&lines),
            "MEMORY.md is 250 lines (limit: 200). Only part of it was loaded: 50 of 250 lines were cut off, \
             starting at line 201 (\"- line 201\"). Keep index entries to one line under ~200 chars; move detail into topic files."
        );
        // One line too long for the size cap: cut mid-line, counted in UTF-16 units.
        assert!(note(&"😀".repeat(13_000)).contains("Only part of it was loaded: everything after the first 25000 characters of line 1 was cut off."));
        // A blank first cut line is not quoted.
        let blank = format!("{}\n{}", "a\n".repeat(200), "b\n".repeat(60));
        assert!(note(&blank).contains("lines were cut off, starting at line 201. Keep"));
    }

    #[test]
    fn shortens_quotes_like_claude_code() {
        assert_eq!(shorten_at_word("short", 80), "short");
        let long = format!("- [Topic 75](topic-75.md) — {}", "x".repeat(120));
        let s = shorten_at_word(&long, 80);
        assert_eq!(utf16_len(&s), 80);
        assert!(s.ends_with("xxxx…"), "no break keeps more than half, so it cuts mid-word");
        let words = "word ".repeat(30);
        assert_eq!(shorten_at_word(&words, 80), format!("{}…", "word ".repeat(15).trim_end()));
        // A surrogate pair straddling the cut is dropped whole.
        let emoji = format!("{}😀😀", "a".repeat(78));
        assert_eq!(shorten_at_word(&emoji, 80), format!("{}…", "a".repeat(78)));
    }

    #[test]
    fn iso_dates_match_javascript() {
        assert_eq!(iso8601_millis(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(iso8601_millis(1_764_422_207_123), "2025-11-29T13:16:47.123Z");
        assert_eq!(iso8601_millis(1_795_966_933_007), "2026-11-29T15:42:13.007Z");
        let d = |y, m, d| time::Date::from_calendar_date(y, time::Month::try_from(m).unwrap(), d).unwrap();
        assert_eq!(iso_date(d(2026, 3, 7)), "2026-03-07");
        assert_eq!(iso_date(d(987, 12, 31)), "0987-12-31");
    }
}
