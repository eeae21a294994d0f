//! KAIROS daily logs (`<memory>/logs/YYYY/MM/YYYY-MM-DD.md`): the append-only stream an
//! assistant session writes one short timestamped bullet at a time, and that a dream later
//! distils into topic files (Claude Code §12; `getAutoMemDailyLogPath` builds the path from the
//! local date, zero-padded).
//!
//! Logs are never rewritten: an entry is appended (atomically, through the memory folder's
//! conflict-checked writer, retrying if another writer appended meanwhile), and distillation
//! reads them without changing them.
//!
//! Distillation keeps only what a bullet states explicitly: preferences and corrections
//! ("always…", "never…", "I prefer…", "from now on…"), facts about the user ("I am…", "my
//! role…"), pointers to external systems (a URL with "tracked in", "dashboard", "runbook"…),
//! project facts with a deadline or decision, explicit `remember …` requests and tagged bullets
//! (`feedback:`, `user:`, `project:`, `reference:`). Everything else is activity, not memory.

use crate::dates::{self, iso};
use crate::error::DreamError;
use mneme_core::{Clock, MemoryType};
use mneme_store::local_time::LocalZone;
use mneme_store::memdir::{Memdir, MemdirError, Revision};
use regex::Regex;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::LazyLock;
use time::Date;

/// The logs folder inside the memory folder.
pub const LOGS_DIR: &str = "logs";

/// `logs/YYYY/MM/YYYY-MM-DD.md` for `date`.
pub fn log_rel_path(date: Date) -> String {
    format!("{LOGS_DIR}/{:04}/{:02}/{}.md", date.year(), u8::from(date.month()), iso(date))
}

/// The absolute path of `date`'s log.
pub fn log_path(memory_dir: &Path, date: Date) -> PathBuf {
    let mut p = memory_dir.to_path_buf();
    for part in log_rel_path(date).split('/') {
        p.push(part);
    }
    p
}

/// The date a log path names, if it is a daily log path.
pub fn log_date(rel: &str) -> Option<Date> {
    let parts: Vec<&str> = rel.split('/').collect();
    let [dir, y, m, file] = parts.as_slice() else { return None };
    let d = dates::parse_iso_date(file.strip_suffix(".md")?)?;
    (*dir == LOGS_DIR && file.len() == 13 && log_rel_path(d) == format!("{dir}/{y}/{m}/{file}")).then_some(d)
}

/// What [`append_log`] wrote.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LogAppended {
    /// The log file.
    pub path: PathBuf,
    /// Its local date, `YYYY-MM-DD`.
    pub date: String,
    /// The bullet added (without the line break).
    pub line: String,
}

/// Appends one timestamped bullet (`- HH:MM text`, local time) to today's log, creating the
/// file and its folders on first use. Line breaks in `text` become spaces: one entry, one line.
/// The date and time are `zone`'s at this instant: the day and the `HH:MM` the clock shows, as
/// Claude Code's runtime has them, whatever the offset was when the caller started.
pub fn append_log(memdir: &Memdir, clock: &dyn Clock, zone: &LocalZone, text: &str) -> Result<LogAppended, DreamError> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.is_empty() {
        return Err(DreamError::Invalid("the log entry is empty; write what happened or what to remember".into()));
    }
    let at = clock.now();
    let offset = time::UtcOffset::from_whole_seconds(zone.offset_at(at)).unwrap_or(time::UtcOffset::UTC);
    let now = time::OffsetDateTime::from(at).to_offset(offset);
    let rel = log_rel_path(now.date());
    let line = format!("- {:02}:{:02} {text}", now.hour(), now.minute());
    // Another writer (Claude Code's assistant session) may append between our read and our
    // write; the write is then refused and we append to what is there now.
    for _ in 0..5 {
        let (bytes, rev) = match memdir.read_raw(&rel) {
            Ok(found) => found,
            Err(MemdirError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => (None, Revision::ABSENT),
            Err(e) => return Err(e.into()),
        };
        let mut content = bytes.unwrap_or_default();
        if !content.is_empty() && !content.ends_with(b"\n") {
            content.push(b'\n');
        }
        content.extend_from_slice(line.as_bytes());
        content.push(b'\n');
        match memdir.write_raw(&rel, &content, &rev) {
            Ok(_) => return Ok(LogAppended { path: log_path(memdir.root(), now.date()), date: iso(now.date()), line }),
            Err(MemdirError::ChangedOnDisk { .. }) => continue,
            Err(e) => return Err(e.into()),
        }
    }
    Err(DreamError::Invalid(format!("{rel} kept changing while Mneme appended to it; try again")))
}

/// One bullet of a daily log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogEntry {
    pub date: Date,
    /// `HH:MM` when the bullet carries a time.
    pub time: Option<(u8, u8)>,
    pub text: String,
}

static BULLET: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^\s*[-*+]\s+(?:\[?(\d{1,2}):(\d{2})(?::\d{2})?\]?\s*(?:[—–-]\s*)?)?(.+?)\s*$").expect("bullet regex")
});

/// The bullets of a log written on `date` (headings, prose and blank lines are skipped).
pub fn parse_log(content: &str, date: Date) -> Vec<LogEntry> {
    content
        .lines()
        .filter_map(|l| {
            let c = BULLET.captures(l)?;
            let time = match (c.get(1), c.get(2)) {
                (Some(h), Some(m)) => Some((h.as_str().parse().ok()?, m.as_str().parse().ok()?)),
                _ => None,
            };
            Some(LogEntry { date, time, text: c.get(3)?.as_str().to_string() })
        })
        .collect()
}

static TAGGED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(feedback|preference|correction|user|project|reference|fact|remember)\s*:\s*(.+)$").expect("tag regex")
});
static REMEMBER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"(?i)^(?:please\s+)?remember(?:\s+that)?\s+(.+)$").expect("remember regex"));
static FEEDBACK: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:always|never|don't|do not|stop|avoid|prefer|from now on|going forward|in (?:the )?future)\b|\b(?:i|we|user|the user)\s+(?:prefers?|likes?|wants?|hates?|dislikes?|don't want|do not want|asked (?:me )?(?:to|not to))\b|\binstead of\b")
        .expect("feedback regex")
});
static USER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)^(?:i am|i'm|i work|my role|my name|the user is|user is|the user's role|user's role)\b").expect("user regex")
});
static REFERENCE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:tracked|board|dashboard|docs?|wiki|channel|runbook|tickets?|issues?|grafana|jira|linear|slack)\b")
        .expect("reference regex")
});
static URL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)\bhttps?://\S+").expect("url regex"));
static PROJECT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"(?i)\b(?:deadline|due|freeze|frozen|release|launch|milestone|decided|decision)\b").expect("project regex")
});

fn classify_plain(text: &str) -> Option<MemoryType> {
    if USER.is_match(text) {
        Some(MemoryType::User)
    } else if FEEDBACK.is_match(text) {
        Some(MemoryType::Feedback)
    } else if URL.is_match(text) && REFERENCE.is_match(text) {
        Some(MemoryType::Reference)
    } else if PROJECT.is_match(text) {
        Some(MemoryType::Project)
    } else {
        None
    }
}

/// The memory type and text of a bullet worth keeping, or `None` for plain activity.
pub fn classify(text: &str) -> Option<(MemoryType, String)> {
    let text = text.trim();
    if text.ends_with('?') {
        return None;
    }
    if let Some(c) = TAGGED.captures(text) {
        let rest = c[2].trim().to_string();
        let kind = match c[1].to_ascii_lowercase().as_str() {
            "feedback" | "preference" | "correction" => MemoryType::Feedback,
            "user" => MemoryType::User,
            "project" => MemoryType::Project,
            "reference" => MemoryType::Reference,
            _ => classify_plain(&rest).unwrap_or(MemoryType::Project),
        };
        return Some((kind, rest));
    }
    if let Some(c) = REMEMBER.captures(text) {
        let rest = c[1].trim().to_string();
        return Some((classify_plain(&rest).unwrap_or(MemoryType::Project), rest));
    }
    classify_plain(text).map(|k| (k, text.to_string()))
}

/// A fact distilled from a log bullet, relative dates already made absolute against the log's
/// date.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fact {
    pub kind: MemoryType,
    pub text: String,
    pub log_rel_path: String,
    pub date: Date,
    pub time: Option<(u8, u8)>,
}

/// The facts in one log's bullets. Bullets stamped before `since_local` (a local date and
/// time) were seen by an earlier dream and are skipped.
pub fn distil(rel: &str, content: &str, date: Date, since_local: Option<(Date, (u8, u8))>) -> Vec<Fact> {
    parse_log(content, date)
        .into_iter()
        .filter(|e| match (since_local, e.time) {
            (Some((d, t)), Some(time)) => (e.date, time) >= (d, t),
            (Some((d, _)), None) => e.date >= d,
            (None, _) => true,
        })
        .filter_map(|e| {
            let (kind, text) = classify(&e.text)?;
            let (text, _) = dates::absolutize(&text, e.date);
            Some(Fact { kind, text, log_rel_path: rel.to_string(), date: e.date, time: e.time })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_core::FixedClock;
    use std::sync::Arc;
    use time::macros::date;

    #[test]
    fn paths_are_local_and_zero_padded() {
        assert_eq!(log_rel_path(date!(2026 - 03 - 05)), "logs/2026/03/2026-03-05.md");
        assert_eq!(log_path(Path::new("/m"), date!(2026 - 12 - 31)), PathBuf::from("/m/logs/2026/12/2026-12-31.md"));
        assert_eq!(log_date("logs/2026/03/2026-03-05.md"), Some(date!(2026 - 03 - 05)));
        assert_eq!(log_date("logs/2026/04/2026-03-05.md"), None);
        assert_eq!(log_date("logs/2026/03/05/abc-title.md"), None);
        assert_eq!(log_date("notes/2026/03/2026-03-05.md"), None);
    }

    #[test]
    fn appends_bullets_without_rewriting() {
        let d = tempfile::tempdir().unwrap();
        let mem = d.path().join("memory");
        // 2026-05-06T23:30Z: at UTC+1 it is already 00:30 on May 7th.
        let clock = FixedClock::at_unix_secs(1_778_110_200);
        let m = Memdir::new(&mem, d.path().join("trash"), Arc::new(clock));
        let a = append_log(&m, &clock, &LocalZone::Fixed(3600), "I prefer  tabs\nover spaces").unwrap();
        assert_eq!(a.line, "- 00:30 I prefer tabs over spaces");
        assert_eq!(a.date, "2026-05-07");
        assert_eq!(a.path, mem.join("logs/2026/05/2026-05-07.md"));
        // A hand-written log without a final newline keeps every byte.
        std::fs::write(&a.path, "# May 7\n- 00:01 earlier").unwrap();
        append_log(&m, &clock, &LocalZone::Fixed(3600), "second").unwrap();
        assert_eq!(std::fs::read_to_string(&a.path).unwrap(), "# May 7\n- 00:01 earlier\n- 00:30 second\n");
        assert_eq!(append_log(&m, &clock, &LocalZone::Fixed(0), " \n ").unwrap_err().code(), "invalid-input");
        append_log(&m, &clock, &LocalZone::Fixed(0), "late evening").unwrap();
        assert!(mem.join("logs/2026/05/2026-05-06.md").exists(), "UTC date at offset 0");
    }

    #[test]
    fn classification_keeps_only_explicit_statements() {
        let k = |t: &str| classify(t).map(|(k, _)| k);
        assert_eq!(k("Always run cargo fmt before committing"), Some(MemoryType::Feedback));
        assert_eq!(k("User prefers small PRs"), Some(MemoryType::Feedback));
        assert_eq!(k("from now on use pnpm instead of npm"), Some(MemoryType::Feedback));
        assert_eq!(k("I am the on-call SRE for payments"), Some(MemoryType::User));
        assert_eq!(k("Bugs are tracked in https://linear.app/acme/team/PAY"), Some(MemoryType::Reference));
        assert_eq!(k("Release freeze starts 2026-06-01"), Some(MemoryType::Project));
        assert_eq!(classify("remember that the staging DB resets nightly"), Some((MemoryType::Project, "the staging DB resets nightly".into())));
        assert_eq!(classify("feedback: keep commits small"), Some((MemoryType::Feedback, "keep commits small".into())));
        assert_eq!(k("ran the test suite, 3 failures"), None);
        assert_eq!(k("should we always squash?"), None);
        assert_eq!(k("looked at https://example.com"), None);
    }

    #[test]
    fn distils_since_the_last_dream_with_absolute_dates() {
        let log = "# 2026-05-06\n- 09:00 Always use tabs\n- 10:15 fixed the flaky test\n- [14:02] Release freeze starts tomorrow\n* remember: the user is a data scientist\nnot a bullet\n";
        let all = distil("logs/2026/05/2026-05-06.md", log, date!(2026 - 05 - 06), None);
        assert_eq!(all.len(), 3, "{all:?}");
        assert_eq!(all[1].text, "Release freeze starts on 2026-05-07");
        assert_eq!(all[1].time, Some((14, 2)));
        assert_eq!(all[2].kind, MemoryType::User);
        let later = distil("l", log, date!(2026 - 05 - 06), Some((date!(2026 - 05 - 06), (12, 0))));
        assert_eq!(later.iter().map(|f| f.kind).collect::<Vec<_>>(), [MemoryType::Project, MemoryType::User]);
        assert!(distil("l", log, date!(2026 - 05 - 06), Some((date!(2026 - 05 - 07), (0, 0)))).is_empty());
    }
}
