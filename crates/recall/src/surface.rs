//! What happens around the selection: the pre-filters that decide whether recall runs at all,
//! the capped read of each chosen file, its header, and the `<system-reminder>` text the main
//! model finally sees (`src/utils/attachments.ts`, `src/memdir/memoryAge.ts`,
//! `src/utils/messages.ts` case `relevant_memories`).

use mneme_core::text::{is_js_whitespace, js_trim};
use serde::Serialize;
use std::io;
use std::path::Path;

/// `MAX_SESSION_BYTES`: once the memories surfaced in the conversation add up to this many
/// UTF-16 units (JavaScript's `content.length`), no further recall runs until compaction.
pub const MAX_SESSION_BYTES: usize = 60 * 1024;
/// `MAX_MEMORY_LINES`: a recalled file is read up to this many lines.
pub const MAX_MEMORY_LINES: usize = 200;
/// `MAX_MEMORY_BYTES`: and up to this many UTF-8 bytes, whole lines only.
pub const MAX_MEMORY_BYTES: usize = 4096;
/// At most this many memories are surfaced per turn.
pub const MAX_RECALLED: usize = 5;
/// The name of the tool the truncation note points to.
const READ_TOOL: &str = "Read";

/// 2.1.197 puts this before the first recalled memory of a turn (inside its reminder).
pub const RELEVANCE_PREAMBLE: &str =
    "Retrieved for possible relevance \u{2014} use only if it actually applies to what the user asked.\n\n";

/// Whether Claude Code would run recall for this prompt at all: not for an empty prompt and not
/// for a single word (no whitespace left after trimming), with JavaScript's notion of whitespace.
pub fn should_recall(prompt: &str) -> bool {
    !prompt.is_empty() && js_trim(prompt).chars().any(is_js_whitespace)
}

/// Why a file was cut short.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Truncation {
    /// The next whole line would have passed [`MAX_MEMORY_BYTES`].
    ByteLimit,
    /// The file has more than [`MAX_MEMORY_LINES`] lines.
    LineLimit,
}

/// A memory file read the way recall reads it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CappedRead {
    /// The kept lines joined with `\n`, plus the truncation note when cut.
    pub content: String,
    /// Why it was cut, if it was.
    pub truncated: Option<Truncation>,
    /// How many lines were kept (Claude Code's `limit`, recorded only when truncated).
    pub line_count: usize,
}

/// Reads `path` as `readFileInRange(path, 0, 200, 4096, {truncateOnByteLimit: true})` does, then
/// appends the note Claude Code appends to a cut file.
///
/// The rules, which matter for exactness: a leading BOM is dropped; lines are split on `\n`
/// and lose one trailing `\r`; a line is kept only while the running byte count (lines plus the
/// `\n` between them) stays within 4,096, and after the first line that does not fit no later
/// line is kept; the text after the last `\n` counts as a line even when empty, so a file of
/// exactly 200 lines that ends with a newline has 201 and is reported as cut at 200 lines.
///
/// Only the start of the file is read: 200 lines within 4,096 bytes (with a `\r` each) and the
/// start of the line after them always lie in the first [`READ_AHEAD`] bytes, so whether and
/// how the file is cut is decided there; a memory of gigabytes costs the same as a short one.
/// The file is opened without waiting (a FIFO planted under a memory's name answers at once)
/// and must be a plain file.
pub fn read_capped(path: &Path) -> io::Result<CappedRead> {
    use std::io::Read;
    let file = mneme_store::open::open_no_wait(path)?;
    let meta = file.metadata()?;
    if meta.is_dir() {
        return Err(io::Error::new(io::ErrorKind::IsADirectory, format!("{} is a folder", path.display())));
    }
    if !meta.is_file() {
        return Err(mneme_store::open::not_plain());
    }
    let mut bytes = Vec::new();
    file.take(READ_AHEAD).read_to_end(&mut bytes)?;
    let text = String::from_utf8_lossy(&bytes);
    let text = text.strip_prefix('\u{feff}').unwrap_or(&text);
    let mut kept: Vec<&str> = Vec::new();
    let mut used = 0usize;
    let mut by_bytes = false;
    let mut total = 0usize;
    for line in text.split('\n') {
        if total < MAX_MEMORY_LINES && !by_bytes {
            let line = line.strip_suffix('\r').unwrap_or(line);
            let next = used + usize::from(!kept.is_empty()) + line.len();
            if next > MAX_MEMORY_BYTES {
                by_bytes = true;
            } else {
                used = next;
                kept.push(line);
            }
        }
        total += 1;
    }
    let truncated = if by_bytes {
        Some(Truncation::ByteLimit)
    } else if total > MAX_MEMORY_LINES {
        Some(Truncation::LineLimit)
    } else {
        None
    };
    let mut content = kept.join("\n");
    if let Some(t) = truncated {
        let why = match t {
            Truncation::ByteLimit => format!("{MAX_MEMORY_BYTES} byte limit"),
            Truncation::LineLimit => format!("first {MAX_MEMORY_LINES} lines"),
        };
        content.push_str(&format!(
            "\n\n> This memory file was truncated ({why}). Use the {READ_TOOL} tool to view the complete file at: {}",
            path.display()
        ));
    }
    Ok(CappedRead { content, truncated, line_count: kept.len() })
}

/// How much of a memory [`read_capped`] reads: comfortably more than the 4,096 kept bytes, a
/// `\r` on each of 200 lines, a BOM and the first line that does not fit.
const READ_AHEAD: u64 = 64 * 1024;

/// `memoryAgeDays`: whole days between the file's modification and now, never negative.
/// Nanoseconds keep the fractional milliseconds JavaScript's `mtimeMs` carries.
pub fn memory_age_days(mtime_ns: i64, now_ms: u128) -> i64 {
    let now_ns = i128::try_from(now_ms).unwrap_or(i128::MAX / 2) * 1_000_000;
    let days = (now_ns - i128::from(mtime_ns)).div_euclid(86_400_000_000_000);
    i64::try_from(days.max(0)).unwrap_or(i64::MAX)
}

/// `memoryAge` (2.1.88): `today`, `yesterday`, or `<d> days ago`.
pub fn memory_age(days: i64) -> String {
    match days {
        0 => "today".to_string(),
        1 => "yesterday".to_string(),
        d => format!("{d} days ago"),
    }
}

/// `memoryFreshnessText`: empty for a memory at most a day old, otherwise the staleness warning.
pub fn freshness_text(days: i64) -> String {
    if days <= 1 {
        return String::new();
    }
    format!(
        "This memory is {days} days old. Memories are point-in-time observations, not live state \u{2014} \
         claims about code behavior or file:line citations may be outdated. Verify against current code before \
         asserting as fact."
    )
}

/// `memoryHeader`: the line above a recalled memory, computed once when it is surfaced so the
/// bytes stay stable for the prompt cache. From 2.1.90 it is `Memory: <path>:` (after the
/// staleness warning when there is one; `relevance_note`); before, a memory saved today or
/// yesterday was headed `Memory (saved today): <path>:`.
pub fn memory_header(path: &Path, mtime_ns: i64, now_ms: u128, relevance_note: bool) -> String {
    let days = memory_age_days(mtime_ns, now_ms);
    let stale = freshness_text(days);
    let path = path.display();
    if !stale.is_empty() {
        return format!("{stale}\n\nMemory: {path}:");
    }
    if relevance_note {
        format!("Memory: {path}:")
    } else {
        format!("Memory (saved {}): {path}:", memory_age(days))
    }
}

/// `<system-reminder>` wrapping, as every meta message gets it.
pub fn system_reminder(text: &str) -> String {
    format!("<system-reminder>\n{text}\n</system-reminder>")
}

/// The inside of a `<system-reminder>` block, as Claude Code unwraps one before sending it as a
/// system message (`/^<system-reminder>\n?([\s\S]*?)\n?<\/system-reminder>$/`); other text is
/// returned as it is.
pub fn strip_system_reminder(text: &str) -> &str {
    let Some(inner) = text.strip_prefix("<system-reminder>").and_then(|t| t.strip_suffix("</system-reminder>")) else {
        return text;
    };
    let inner = inner.strip_prefix('\n').unwrap_or(inner);
    inner.strip_suffix('\n').unwrap_or(inner)
}

/// The meta user messages one `relevant_memories` attachment becomes: one per memory,
/// `<header>\n\n<content>` inside a system reminder, the first one opened by
/// [`RELEVANCE_PREAMBLE`] from 2.1.90 (`relevance_note`).
pub fn render_reminders<'a>(memories: impl IntoIterator<Item = (&'a str, &'a str)>, relevance_note: bool) -> Vec<String> {
    memories
        .into_iter()
        .enumerate()
        .map(|(i, (header, content))| {
            let preamble = if i == 0 && relevance_note { RELEVANCE_PREAMBLE } else { "" };
            system_reminder(&format!("{preamble}{header}\n\n{content}"))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn single_words_and_empty_prompts_are_skipped() {
        assert!(!should_recall(""));
        assert!(!should_recall("deploy"));
        assert!(!should_recall("  deploy\n"));
        assert!(!should_recall("\u{3000}deploy\u{feff}"));
        assert!(should_recall("fix deploy"));
        assert!(should_recall("fix\u{00a0}deploy"));
    }

    fn read(text: &str) -> CappedRead {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.md");
        std::fs::write(&p, text).unwrap();
        let mut r = read_capped(&p).unwrap();
        r.content = r.content.replace(&p.display().to_string(), "<path>");
        r
    }

    #[test]
    fn short_files_are_whole_minus_bom_and_crlf() {
        let r = read("\u{feff}a\r\nb\r\n");
        assert_eq!(r, CappedRead { content: "a\nb\n".into(), truncated: None, line_count: 3 });
    }

    #[test]
    fn two_hundred_lines_with_a_final_newline_count_as_cut() {
        let exact: String = (0..200).map(|i| format!("{i}")).collect::<Vec<_>>().join("\n");
        assert_eq!(read(&exact).truncated, None);
        let r = read(&format!("{exact}\n"));
        assert_eq!(r.truncated, Some(Truncation::LineLimit));
        assert_eq!(r.line_count, 200);
        assert!(r.content.ends_with(
            "199\n\n> This memory file was truncated (first 200 lines). Use the Read tool to view the complete file at: <path>"
        ));
    }

    #[test]
    fn the_byte_cap_keeps_whole_lines_and_stops_for_good() {
        let line = "x".repeat(1000);
        let text = format!("{line}\n{line}\n{line}\n{line}\n{}\nshort", "y".repeat(100));
        let r = read(&text);
        assert_eq!(r.truncated, Some(Truncation::ByteLimit));
        assert_eq!(r.line_count, 4);
        let kept = r.content.split("\n\n> ").next().unwrap();
        assert_eq!(kept.len(), 4 * 1000 + 3);
        assert!(!r.content.contains("short"));
        assert!(r.content.ends_with("(4096 byte limit). Use the Read tool to view the complete file at: <path>"));
    }

    /// Only the start of a file decides how it is cut, so a huge one is read no further than
    /// that and answers as if it had been read whole.
    #[test]
    fn a_huge_memory_is_cut_as_a_whole_read_would_cut_it() {
        let many_lines = "ab\r\n".repeat(100_000);
        let r = read(&many_lines);
        assert_eq!((r.truncated, r.line_count), (Some(Truncation::LineLimit), 200));
        assert!(r.content.starts_with("ab\nab\n") && !r.content.contains('\r'));
        let one_line = "x".repeat(3 << 20);
        let r = read(&one_line);
        assert_eq!((r.truncated, r.line_count), (Some(Truncation::ByteLimit), 0));
        assert!(r.content.starts_with("\n\n> This memory file was truncated (4096 byte limit)"), "{}", &r.content[..80]);
        let long_tail = format!("{}{}", "short\n".repeat(150), "é".repeat(1 << 20));
        let r = read(&long_tail);
        assert_eq!((r.truncated, r.line_count), (Some(Truncation::ByteLimit), 150));
    }

    /// A FIFO planted under a memory's name answers at once instead of waiting for a writer.
    #[test]
    fn a_fifo_is_refused_without_waiting() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("m.md");
        rustix::fs::mkfifoat(rustix::fs::CWD, &p, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
        let e = read_capped(&p).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput, "{e}");
    }

    #[test]
    fn bytes_are_utf8_bytes() {
        // 2,048 two-byte characters fill the cap exactly; one more line does not fit.
        let r = read(&format!("{}\na", "é".repeat(2048)));
        assert_eq!(r.line_count, 1);
        assert_eq!(r.truncated, Some(Truncation::ByteLimit));
        let r = read(&"é".repeat(2048));
        assert_eq!(r.truncated, None);
    }

    const DAY_NS: i64 = 86_400_000_000_000;

    #[test]
    fn ages_and_freshness() {
        let now_ms: u128 = 1_764_422_207_000;
        let now_ns = 1_764_422_207_000 * 1_000_000i64;
        assert_eq!(memory_age_days(now_ns + DAY_NS, now_ms), 0);
        assert_eq!(memory_age_days(now_ns - DAY_NS + 1, now_ms), 0);
        assert_eq!(memory_age_days(now_ns - DAY_NS, now_ms), 1);
        assert_eq!(memory_age_days(now_ns - 47 * DAY_NS - 5, now_ms), 47);
        assert_eq!(freshness_text(1), "");
        assert_eq!(
            freshness_text(2),
            "This memory is 2 days old. Memories are point-in-time observations, not live state \u{2014} claims about \
             code behavior or file:line citations may be outdated. Verify against current code before asserting as fact."
        );
        let p = Path::new("/m/a.md");
        assert_eq!(memory_header(p, now_ns, now_ms, true), "Memory: /m/a.md:");
        assert_eq!(memory_header(p, now_ns - DAY_NS, now_ms, false), "Memory (saved yesterday): /m/a.md:");
        assert_eq!(memory_header(p, now_ns, now_ms, false), "Memory (saved today): /m/a.md:");
        assert_eq!(
            memory_header(p, now_ns - 3 * DAY_NS, now_ms, true),
            format!("{}\n\nMemory: /m/a.md:", freshness_text(3))
        );
    }

    #[test]
    fn unwrapping_a_reminder() {
        assert_eq!(strip_system_reminder("<system-reminder>\nA\n\n</system-reminder>"), "A\n");
        assert_eq!(strip_system_reminder("<system-reminder>A</system-reminder>"), "A");
        assert_eq!(strip_system_reminder("plain"), "plain");
    }

    #[test]
    fn reminders() {
        let r = render_reminders([("Memory: /a.md:", "A"), ("Memory: /b.md:", "B")], true);
        assert_eq!(
            r,
            vec![
                "<system-reminder>\nRetrieved for possible relevance \u{2014} use only if it actually applies to what the \
                 user asked.\n\nMemory: /a.md:\n\nA\n</system-reminder>"
                    .to_string(),
                "<system-reminder>\nMemory: /b.md:\n\nB\n</system-reminder>".to_string(),
            ]
        );
        let r = render_reminders([("H", "C")], false);
        assert_eq!(r, vec!["<system-reminder>\nH\n\nC\n</system-reminder>".to_string()]);
    }
}
