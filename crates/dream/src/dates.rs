//! Relative dates made absolute, as the consolidation prompt asks ("Converting relative dates
//! ('yesterday', 'last week') to absolute dates so they remain interpretable after time
//! passes"). Only phrases with one meaning are converted, against the date the memory was
//! written: `today`, `yesterday`, `tomorrow`, `the day before yesterday`, `the day after
//! tomorrow`, `N days/weeks ago`, `in N days/weeks`, `last/this/next week|month|year`, and
//! `last/next <weekday>` (the nearest such day strictly before / after). A bare weekday
//! ("on Thursday") could be either side of the date and is left alone.
//!
//! Each phrase is worded for its sentence: a day becomes "on <date>" ("as of <date>" for
//! `today`, which memories often use for "currently"), a month or year "in …", a week "the week
//! of <Monday>", with no preposition added after one ("until tomorrow" → "until <date>").
//!
//! Code (fenced blocks and inline spans), URLs and link targets are never touched, nor are
//! possessives ("today's") or phrases glued to other words ("to-day", "yesterday_2").

use regex::Regex;
use std::sync::LazyLock;
use time::{Date, Duration, Month, Weekday};

const NUMBER: &str = r"\d{1,3}|a|an|one|two|three|four|five|six|seven|eight|nine|ten|eleven|twelve";
const WEEKDAY: &str = r"monday|tuesday|wednesday|thursday|friday|saturday|sunday";

static PHRASE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(&format!(
        r"(?i)\b(?:(?P<dby>the day before yesterday)|(?P<dat>the day after tomorrow)|(?P<yd>yesterday)|(?P<td>today)|(?P<tm>tomorrow)|(?P<agon>{NUMBER}) (?P<agou>days?|weeks?) ago|in (?P<inn>{NUMBER}) (?P<inu>days?|weeks?)|(?P<rel>last|this|next) (?P<unit>week|month|year)|(?P<wrel>last|next) (?P<wd>{WEEKDAY}))\b"
    ))
    .expect("relative date regex")
});

static URL: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"(?i)\b[a-z][a-z0-9+.-]*://\S+").expect("url regex"));

/// One conversion, for the change's reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Conversion {
    pub phrase: String,
    pub replacement: String,
}

fn number(word: &str) -> Option<i64> {
    let w = word.to_ascii_lowercase();
    let words = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"];
    match w.as_str() {
        "a" | "an" => Some(1),
        _ => words.iter().position(|x| *x == w).map(|i| i as i64 + 1).or_else(|| w.parse().ok()),
    }
}

fn weekday(word: &str) -> Option<Weekday> {
    Some(match word.to_ascii_lowercase().as_str() {
        "monday" => Weekday::Monday,
        "tuesday" => Weekday::Tuesday,
        "wednesday" => Weekday::Wednesday,
        "thursday" => Weekday::Thursday,
        "friday" => Weekday::Friday,
        "saturday" => Weekday::Saturday,
        "sunday" => Weekday::Sunday,
        _ => return None,
    })
}

pub(crate) use mneme_core::text::iso_date as iso;

fn monday_of(d: Date) -> Date {
    d - Duration::days(i64::from(d.weekday().number_days_from_monday()))
}

fn month_name(m: Month) -> &'static str {
    match m {
        Month::January => "January",
        Month::February => "February",
        Month::March => "March",
        Month::April => "April",
        Month::May => "May",
        Month::June => "June",
        Month::July => "July",
        Month::August => "August",
        Month::September => "September",
        Month::October => "October",
        Month::November => "November",
        Month::December => "December",
    }
}

fn shift_month(d: Date, by: i32) -> (i32, Month) {
    let idx = d.year() * 12 + i32::from(u8::from(d.month())) - 1 + by;
    let m = Month::try_from((idx.rem_euclid(12) + 1) as u8).unwrap_or(Month::January);
    (idx.div_euclid(12), m)
}

/// What a phrase resolves to, before it is worded for its sentence.
enum Resolved {
    /// A day; `today` reads "as of" rather than "on" ("what works today").
    Day { date: String, today: bool },
    /// "the week of <Monday>".
    Week(String),
    /// "April 2026" or "2026".
    Period(String),
}

/// The absolute form of one matched phrase, or `None` when it has no single meaning.
fn resolve(c: &regex::Captures<'_>, on: Date) -> Option<Resolved> {
    let day = |n: i64| on.checked_add(Duration::days(n)).map(|d| Resolved::Day { date: iso(d), today: n == 0 && c.name("td").is_some() });
    if c.name("dby").is_some() {
        return day(-2);
    }
    if c.name("dat").is_some() {
        return day(2);
    }
    if c.name("yd").is_some() {
        return day(-1);
    }
    if c.name("td").is_some() {
        return day(0);
    }
    if c.name("tm").is_some() {
        return day(1);
    }
    let unit_days = |u: &str| if u.to_ascii_lowercase().starts_with("week") { 7 } else { 1 };
    if let (Some(n), Some(u)) = (c.name("agon"), c.name("agou")) {
        return day(-number(n.as_str())? * unit_days(u.as_str()));
    }
    if let (Some(n), Some(u)) = (c.name("inn"), c.name("inu")) {
        return day(number(n.as_str())? * unit_days(u.as_str()));
    }
    if let (Some(r), Some(u)) = (c.name("rel"), c.name("unit")) {
        let by = match r.as_str().to_ascii_lowercase().as_str() {
            "last" => -1,
            "next" => 1,
            _ => 0,
        };
        return match u.as_str().to_ascii_lowercase().as_str() {
            "week" => monday_of(on).checked_add(Duration::weeks(by)).map(|m| Resolved::Week(iso(m))),
            "month" => {
                let (y, m) = shift_month(on, by as i32);
                Some(Resolved::Period(format!("{} {y}", month_name(m))))
            }
            _ => Some(Resolved::Period(format!("{}", on.year() + by as i32))),
        };
    }
    if let (Some(r), Some(w)) = (c.name("wrel"), c.name("wd")) {
        let target = weekday(w.as_str())?;
        let mut d = on;
        let step = if r.as_str().eq_ignore_ascii_case("next") { 1 } else { -1 };
        for _ in 0..7 {
            d = d.checked_add(Duration::days(step))?;
            if d.weekday() == target {
                return Some(Resolved::Day { date: iso(d), today: false });
            }
        }
    }
    None
}

/// Words after which a date needs no preposition of its own ("until tomorrow" → "until
/// 2026-05-07", not "until on 2026-05-07").
const PREPOSITIONS: &[&str] = &[
    "on", "by", "until", "till", "since", "from", "before", "after", "of", "for", "at", "in", "during", "to", "as",
    "than", "through", "starting", "ending",
];

fn after_preposition(text: &str, at: usize) -> bool {
    let before = text[..at].trim_end();
    let word: String = before.chars().rev().take_while(|c| c.is_alphabetic()).collect::<Vec<_>>().into_iter().rev().collect();
    before.len() < text[..at].len() && PREPOSITIONS.contains(&word.to_lowercase().as_str())
}

/// The phrase's replacement, worded for where it stands: "shipped yesterday" → "shipped on
/// 2026-05-05", "what works today" → "what works as of 2026-05-06", "last month" → "in April
/// 2026", and no added preposition after one ("by tomorrow" → "by 2026-05-07").
fn word(resolved: Resolved, text: &str, at: usize, phrase: &str) -> String {
    let bare = after_preposition(text, at);
    let out = match resolved {
        Resolved::Day { date, .. } if bare => date,
        Resolved::Day { date, today: true } => format!("as of {date}"),
        Resolved::Day { date, today: false } => format!("on {date}"),
        Resolved::Week(monday) => format!("the week of {monday}"),
        Resolved::Period(p) if bare => p,
        Resolved::Period(p) => format!("in {p}"),
    };
    if phrase.starts_with(|c: char| c.is_uppercase()) {
        let mut chars = out.chars();
        chars.next().map(|f| f.to_uppercase().chain(chars).collect()).unwrap_or(out)
    } else {
        out
    }
}

/// Byte ranges that must not change: fenced code blocks, inline code spans, URLs and
/// markdown link targets.
fn protected(text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut fence: Option<(usize, &str)> = None;
    let mut pos = 0;
    for line in text.split_inclusive('\n') {
        let trimmed = line.trim_start();
        let marker = ["```", "~~~"].into_iter().find(|m| trimmed.starts_with(m));
        match (fence, marker) {
            (None, Some(m)) => fence = Some((pos, m)),
            (Some((start, open)), Some(m)) if m == open => {
                out.push((start, pos + line.len()));
                fence = None;
            }
            (Some(_), _) => {}
            (None, None) => {
                let mut in_code: Option<usize> = None;
                for (i, ch) in line.char_indices() {
                    if ch == '`' {
                        match in_code {
                            None => in_code = Some(pos + i),
                            Some(s) => {
                                out.push((s, pos + i + 1));
                                in_code = None;
                            }
                        }
                    }
                }
            }
        }
        pos += line.len();
    }
    if let Some((start, _)) = fence {
        out.push((start, text.len()));
    }
    for m in URL.find_iter(text) {
        out.push((m.start(), m.end()));
    }
    // Each `](` to the next `)`. That `)` is found once for all the `](` before it (looking
    // again from each would be quadratic in a text of `](` with no `)`).
    let mut from = 0;
    let mut close: Option<usize> = None;
    while let Some(i) = text[from..].find("](") {
        let s = from + i + 2;
        let e = match close {
            Some(c) if c >= s => c + 1,
            _ => match text[s..].find(')') {
                Some(j) => {
                    close = Some(s + j);
                    s + j + 1
                }
                None => {
                    // No `)` anywhere after: every later `](` is inside this range.
                    out.push((s, text.len()));
                    break;
                }
            },
        };
        out.push((s, e));
        from = s;
    }
    // Sorted and merged, so a phrase is checked against them by a binary search.
    out.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(out.len());
    for (a, b) in out {
        match merged.last_mut() {
            Some(last) if a <= last.1 => last.1 = last.1.max(b),
            _ => merged.push((a, b)),
        }
    }
    merged
}

/// Whether `s..e` overlaps one of the sorted, disjoint `ranges`.
fn overlaps(ranges: &[(usize, usize)], s: usize, e: usize) -> bool {
    let first_ending_after = ranges.partition_point(|&(_, b)| b <= s);
    ranges.get(first_ending_after).is_some_and(|&(a, _)| a < e)
}

fn glued_before(text: &str, at: usize) -> bool {
    text[..at].chars().next_back().is_some_and(|c| matches!(c, '-' | '_' | '/' | '\\' | '.' | '@' | '#'))
        && !text[..at].ends_with(". ")
}

fn glued_after(text: &str, at: usize) -> bool {
    let rest = &text[at..];
    let mut chars = rest.chars();
    match chars.next() {
        Some('\'' | '’') => chars.next().is_some_and(char::is_alphanumeric),
        Some('-' | '_' | '/' | '\\' | '@') => true,
        _ => false,
    }
}

/// Rewrites the relative dates in `text` against `on`. Returns the new text and what was
/// converted (empty when nothing changed).
pub fn absolutize(text: &str, on: Date) -> (String, Vec<Conversion>) {
    let guard = protected(text);
    let mut out = String::with_capacity(text.len());
    let mut done = Vec::new();
    let mut last = 0;
    for c in PHRASE.captures_iter(text) {
        let Some(m) = c.get(0) else { continue };
        let (s, e) = (m.start(), m.end());
        if overlaps(&guard, s, e) || glued_before(text, s) || glued_after(text, e) {
            continue;
        }
        let Some(resolved) = resolve(&c, on) else { continue };
        let replacement = word(resolved, text, s, m.as_str());
        out.push_str(&text[last..s]);
        out.push_str(&replacement);
        last = e;
        done.push(Conversion { phrase: m.as_str().to_string(), replacement });
    }
    out.push_str(&text[last..]);
    (out, done)
}

/// The calendar date of `ns` nanoseconds since the epoch at a fixed UTC offset.
pub fn local_date(ns: i128, utc_offset_secs: i32) -> Date {
    let offset = time::UtcOffset::from_whole_seconds(utc_offset_secs).unwrap_or(time::UtcOffset::UTC);
    time::OffsetDateTime::from_unix_timestamp_nanos(ns)
        .ok()
        .and_then(|t| t.checked_to_offset(offset))
        .map_or(Date::MIN, |t| t.date())
}

/// The calendar date of `ns` nanoseconds since the epoch in `zone`, with the offset in force
/// at that instant (summer or winter time), as Claude Code's runtime dates each instant.
pub fn local_date_in(ns: i128, zone: &mneme_store::local_time::LocalZone) -> Date {
    local_date(ns, zone.offset_at_unix_ns(ns))
}

/// Parses `YYYY-MM-DD` at the start of `s` (a `created:` value may carry a time after it).
pub fn parse_iso_date(s: &str) -> Option<Date> {
    let s = s.trim().trim_matches(['"', '\'']);
    let b = s.as_bytes();
    // Digits checked before slicing: a multibyte character at byte 9 would split there.
    let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
    if b.len() < 10 || b[4] != b'-' || b[7] != b'-' || !digits(0..4) || !digits(5..7) || !digits(8..10) {
        return None;
    }
    let y: i32 = s[..4].parse().ok()?;
    let m: u8 = s[5..7].parse().ok()?;
    let d: u8 = s[8..10].parse().ok()?;
    if b.len() > 10 && b[10].is_ascii_digit() {
        return None;
    }
    Date::from_calendar_date(y, Month::try_from(m).ok()?, d).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use time::macros::date;

    fn conv(text: &str) -> String {
        absolutize(text, date!(2026 - 05 - 06)).0 // a Wednesday
    }

    /// Link targets are found once each: `](` repeated with no `)` (a hostile body) and with
    /// one `)` at the very end both finish at once, and a phrase inside either stays.
    #[test]
    fn link_targets_in_hostile_text_are_found_in_one_pass() {
        let on = date!(2026 - 03 - 02);
        let open = format!("{}yesterday", "](".repeat(200_000));
        assert_eq!(absolutize(&open, on).1, []);
        let closed = format!("{}yesterday)", "](".repeat(200_000));
        assert_eq!(absolutize(&closed, on).1, []);
        let (text, done) = absolutize("see [x](a) yesterday and [y](b)", on);
        assert_eq!((text.as_str(), done.len()), ("see [x](a) on 2026-03-01 and [y](b)", 1));
    }

    #[test]
    fn converts_unambiguous_phrases() {
        assert_eq!(conv("We shipped yesterday."), "We shipped on 2026-05-05.");
        assert_eq!(conv("Today the API froze; tomorrow we cut."), "As of 2026-05-06 the API froze; on 2026-05-07 we cut.");
        assert_eq!(conv("What works today: the workaround"), "What works as of 2026-05-06: the workaround");
        assert_eq!(conv("frozen until tomorrow, since yesterday"), "frozen until 2026-05-07, since 2026-05-05");
        assert_eq!(conv("the day before yesterday and the day after tomorrow"), "on 2026-05-04 and on 2026-05-08");
        assert_eq!(conv("3 days ago, two weeks ago, a day ago"), "on 2026-05-03, on 2026-04-22, on 2026-05-05");
        assert_eq!(conv("due in 10 days, by next Monday"), "due on 2026-05-16, by 2026-05-11");
        assert_eq!(conv("Last week we moved; next week we test."), "The week of 2026-04-27 we moved; the week of 2026-05-11 we test.");
        assert_eq!(conv("this week"), "the week of 2026-05-04");
        assert_eq!(conv("shipped last month, ships next year"), "shipped in April 2026, ships in 2027");
        assert_eq!(conv("since last month"), "since April 2026");
        assert_eq!(conv("next Monday and last Wednesday"), "on 2026-05-11 and on 2026-04-29");
        assert_eq!(conv("next wednesday"), "on 2026-05-13", "strictly after");
        assert_eq!(absolutize("last month", date!(2026 - 01 - 15)).0, "in December 2025");
    }

    #[test]
    fn leaves_ambiguous_and_protected_text_alone() {
        for t in [
            "on Thursday",
            "today's build",
            "yesterday’s notes",
            "`git log --since=yesterday`",
            "```\nrun it today\n```",
            "see https://example.com/today/tomorrow",
            "[notes](logs/today.md)",
            "flag --today-only",
            "the today_view component",
            "todays",
            "nowadays",
        ] {
            assert_eq!(conv(t), t, "{t:?}");
        }
        let (_, done) = absolutize("yesterday and today", date!(2026 - 05 - 06));
        assert_eq!(
            done,
            vec![
                Conversion { phrase: "yesterday".into(), replacement: "on 2026-05-05".into() },
                Conversion { phrase: "today".into(), replacement: "as of 2026-05-06".into() }
            ]
        );
    }

    #[test]
    fn dates_parse_and_localize() {
        assert_eq!(parse_iso_date("2026-01-05"), Some(date!(2026 - 01 - 05)));
        assert_eq!(parse_iso_date("'2026-01-05T10:00:00Z'"), Some(date!(2026 - 01 - 05)));
        assert_eq!(parse_iso_date("2026-13-05"), None);
        assert_eq!(parse_iso_date("20260105"), None);
        assert_eq!(parse_iso_date("2026-05-0é"), None, "a multibyte character where a digit goes");
        assert_eq!(parse_iso_date("2026-0é-05"), None);
        // 2026-05-06T23:30Z is already May 7th at UTC+1.
        let ns = 1_778_110_200i128 * 1_000_000_000;
        assert_eq!(local_date(ns, 0), date!(2026 - 05 - 06));
        assert_eq!(local_date(ns, 3600), date!(2026 - 05 - 07));
    }
}
