//! The tag neutralizer of MEMORY.md's cleaning (releases from 2.1.284): which `<` opens a tag
//! that could pass for one of the request's own, read the way those releases read it.
//!
//! Those releases do not look at the text as it is spelled. Each character is first read as
//! what it looks like (`data/lookalikes.txt`, taken from the releases by running their own code
//! on every code point: `tests/data/neutralizer_oracle.mjs`): a fullwidth, mathematical,
//! circled or accented letter, or a letter of another script drawn like a Latin one, reads as
//! that Latin letter; a ligature or a unit sign as its letters in turn (`ﬁ` is `f` then `i`);
//! dashes and low lines as `-` and `_`. Then a `<` (or a character drawn like one: `＜`, `﹤`,
//! `〈`, …) opens a tag when, after any characters that are neither name characters nor
//! brackets, a tag name follows letter by letter, with joiners, format characters, controls and
//! combining marks allowed between its letters, and ends where the next character is not a name
//! character. Such a bracket, whatever its spelling, is written as `<\`.
//!
//! The reading is modelled as Claude Code builds it: a read letter is not a name character, so
//! `<ｘtick>` reads as filler before `tick` and `<tickｘ>` as `tick` ended.

use mneme_core::versions::{ClaudeVersion, MemoryIndexTags};
use std::collections::HashMap;
use std::sync::LazyLock;

/// One character of the text as the neutralizer reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Unit {
    /// An ASCII character, as it is.
    Ascii(u8),
    /// A character read as itself.
    Other(char),
    /// A character read as a letter, digit, `-` or `_`; `first` is false for the second and later
    /// letters one character stands for (they do not count as characters of their own in the
    /// `channel` tag's 120-character reach).
    Letter { letter: u8, first: bool },
    /// A character read as either of two letters (`ν` as `n` or `v`, `υ` as `u` or `y`).
    Either(u8, u8),
    /// A sign read as `-` or `_` in a tag name and as `=` after `source`.
    Equals,
}

/// What one character reads as, per `data/lookalikes.txt`.
#[derive(Debug, Clone, Copy)]
enum Reading {
    Letters(&'static str),
    Either(u8, u8),
    Equals,
    /// A private-use character of the ranges the release uses for its own reading: U+FFFD.
    Replaced,
}

struct Table {
    /// Each character not read as itself, with the release it is read so from.
    reading: HashMap<char, (Reading, ClaudeVersion)>,
    open: Vec<(char, ClaudeVersion)>,
    close: Vec<(char, ClaudeVersion)>,
}

fn version(text: &str) -> ClaudeVersion {
    let parts: Vec<u32> = text.split('.').map(|p| p.parse().expect("a release number in data/lookalikes.txt")).collect();
    ClaudeVersion::new(parts[0], parts[1], parts[2])
}

fn code_point(hex: &str) -> char {
    char::from_u32(u32::from_str_radix(hex, 16).expect("a hexadecimal code point in data/lookalikes.txt")).expect("a scalar value in data/lookalikes.txt")
}

static TABLE: LazyLock<Table> = LazyLock::new(|| {
    let mut table = Table { reading: HashMap::new(), open: Vec::new(), close: Vec::new() };
    for line in include_str!("../data/lookalikes.txt").lines() {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let mut fields = line.split(' ');
        let first = fields.next().unwrap_or_default();
        if first == "open" || first == "close" {
            let since = version(fields.next().expect("a release after open/close"));
            let set = if first == "open" { &mut table.open } else { &mut table.close };
            set.extend(fields.map(|cp| (code_point(cp), since)));
            continue;
        }
        let read = fields.next().expect("a reading after the code point");
        let since = fields.next().map_or(ClaudeVersion::new(2, 1, 284), version);
        let reading = match read {
            "[nv]" => Reading::Either(b'n', b'v'),
            "[uy]" => Reading::Either(b'u', b'y'),
            "=" => Reading::Equals,
            "~" => Reading::Replaced,
            letters => {
                assert!(letters.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_'), "reading {letters:?}");
                Reading::Letters(letters)
            }
        };
        table.reading.insert(code_point(first), (reading, since));
    }
    table
});

/// The brackets a release reads as `<` and as `>`.
fn brackets(table: &Table, release: ClaudeVersion) -> (Vec<char>, Vec<char>) {
    let pick = |set: &[(char, ClaudeVersion)]| set.iter().filter(|(_, since)| *since <= release).map(|(c, _)| *c).collect();
    (pick(&table.open), pick(&table.close))
}

/// The characters that may sit between a tag name's letters: format and default-ignorable
/// characters, combining marks of the common blocks, C0 and C1 controls but tab, LF and CR, and
/// the line and paragraph separators.
fn ignorable(u: Unit) -> bool {
    match u {
        Unit::Ascii(b) => matches!(b, 0x00..=0x08 | 0x0b | 0x0c | 0x0e..=0x1f | 0x7f),
        Unit::Other(c) => matches!(c as u32,
            0x80..=0x9f | 0xad | 0x34f | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890 | 0x891 | 0x8e2
            | 0x115f | 0x1160 | 0x17b4 | 0x17b5 | 0x180b..=0x180f | 0x200b..=0x200f | 0x202a..=0x202e
            | 0x2060..=0x206f | 0x3164 | 0xfe00..=0xfe0f | 0xfeff | 0xffa0 | 0xfff0..=0xfffb | 0x110bd
            | 0x110cd | 0x13430..=0x1343f | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a | 0x16fe4
            | 0xe0000..=0xe0fff
            // combining marks
            | 0x300..=0x344 | 0x346..=0x36f | 0x483..=0x489 | 0x591..=0x5bd | 0x5bf | 0x5c1 | 0x5c2
            | 0x5c4 | 0x5c5 | 0x5c7 | 0x610..=0x61a | 0x64b..=0x65f | 0x670 | 0x6d6..=0x6dc
            | 0x6df..=0x6e4 | 0x6e7 | 0x6e8 | 0x6ea..=0x6ed | 0x1ab0..=0x1aff | 0x1dc0..=0x1dff
            | 0x20d0..=0x20ff | 0x3099 | 0x309a | 0xfe20..=0xfe2f
            | 0x2028 | 0x2029),
        _ => false,
    }
}

/// The ignorable characters that also separate words, so `channel` followed by one of them and
/// then a name character still counts as the tag `channel`.
fn separator(u: Unit) -> bool {
    match u {
        Unit::Ascii(b) => matches!(b, 0x0b | 0x0c | 0x1c..=0x1f),
        Unit::Other(c) => matches!(c, '\u{85}' | '\u{2028}' | '\u{2029}' | '\u{115f}' | '\u{1160}' | '\u{3164}' | '\u{ffa0}'),
        _ => false,
    }
}

/// `[A-Za-z0-9_-]` as a case-insensitive Unicode regular expression reads it: the long s and the
/// Kelvin sign fold into it too (the table reads both as letters, so they only count here when
/// a later table stops doing so).
fn name_character(u: Unit) -> bool {
    match u {
        Unit::Ascii(b) => b.is_ascii_alphanumeric() || b == b'_' || b == b'-',
        Unit::Other(c) => c == '\u{17f}' || c == '\u{212a}',
        _ => false,
    }
}

/// Whether `u` reads as the tag name's character `want` (a lowercase letter, a digit, `-`, `_`).
fn reads_as(u: Unit, want: u8) -> bool {
    if want == b'-' || want == b'_' {
        return match u {
            Unit::Ascii(b) | Unit::Letter { letter: b, .. } => b == b'-' || b == b'_',
            Unit::Equals => true,
            _ => false,
        };
    }
    match u {
        Unit::Ascii(b) => b.to_ascii_lowercase() == want,
        Unit::Letter { letter, .. } => letter == want,
        Unit::Either(a, b) => a == want || b == want,
        Unit::Other('\u{17f}') => want == b's',
        Unit::Other('\u{212a}') => want == b'k',
        _ => false,
    }
}

/// JavaScript's `\s`.
fn js_space(c: char) -> bool {
    matches!(c, '\t' | '\n' | '\u{b}' | '\u{c}' | '\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}')
}

fn colon(u: Unit) -> bool {
    match u {
        Unit::Ascii(b) => b == b':',
        Unit::Other(c) => matches!(c, '\u{ff1a}' | '\u{fe55}' | '\u{fe13}' | '\u{a789}' | '\u{2236}' | '\u{2d0}' | '\u{2f8}' | '\u{5c3}' | '\u{589}' | '\u{703}' | '\u{704}' | '\u{16ec}' | '\u{1803}' | '\u{1809}' | '\u{205a}' | '\u{a4fd}' | '\u{fe30}'),
        _ => false,
    }
}

fn equals(u: Unit) -> bool {
    match u {
        Unit::Ascii(b) => b == b'=',
        Unit::Other(c) => matches!(c, '\u{207c}' | '\u{208c}' | '\u{fe66}' | '\u{ff1d}' | '\u{a78a}' | '\u{2550}' | '\u{268c}' | '\u{a4ff}' | '\u{1f7f0}'),
        Unit::Equals => true,
        _ => false,
    }
}

/// The text read unit by unit, with the release's brackets.
struct Read {
    units: Vec<Unit>,
    open: Vec<char>,
    close: Vec<char>,
}

impl Read {
    fn unit(&self, at: usize) -> Option<Unit> {
        self.units.get(at).copied()
    }

    fn is_open(&self, u: Unit) -> bool {
        match u {
            Unit::Ascii(b) => b == b'<',
            Unit::Other(c) => self.open.contains(&c),
            _ => false,
        }
    }

    fn is_close(&self, u: Unit) -> bool {
        match u {
            Unit::Ascii(b) => b == b'>',
            Unit::Other(c) => self.close.contains(&c),
            _ => false,
        }
    }

    /// What may stand between `<` and the tag name: anything but a name character or a bracket.
    fn filler(&self, u: Unit) -> bool {
        !name_character(u) && !self.is_open(u) && !self.is_close(u)
    }

    fn skip_ignorable(&self, mut at: usize) -> usize {
        while self.unit(at).is_some_and(ignorable) {
            at += 1;
        }
        at
    }

    /// Where `name` read letter by letter from `at` ends, ignorable characters allowed between
    /// its letters.
    fn name_at(&self, at: usize, name: &str) -> Option<usize> {
        let mut here = at;
        for (i, want) in name.bytes().enumerate() {
            if i > 0 {
                here = self.skip_ignorable(here);
            }
            if !self.unit(here).is_some_and(|u| reads_as(u, want)) {
                return None;
            }
            here += 1;
        }
        Some(here)
    }

    /// After `channel`: a `source` assignment within reach before the next `>`.
    fn channel_tail(&self, end: usize) -> bool {
        let after = self.skip_ignorable(end);
        let ended = self.unit(after).is_none_or(|u| !name_character(u)) || self.units[end..after].iter().any(|&u| separator(u));
        if !ended {
            return false;
        }
        // Up to 120 characters that are not `>` (a character's later letters are free), then
        // `source` not glued to a word character or `-` before it, blanks, an equals sign.
        let mut counted = 0;
        let mut here = after;
        loop {
            // `\w` and `-`, case-insensitively: the name characters.
            let glued = here > 0 && name_character(self.units[here - 1]);
            if !glued && self.source_at(here) {
                return true;
            }
            let Some(u) = self.unit(here) else { return false };
            if self.is_close(u) {
                return false;
            }
            if !matches!(u, Unit::Letter { first: false, .. }) {
                counted += 1;
                if counted > 120 {
                    return false;
                }
            }
            here += 1;
        }
    }

    fn source_at(&self, at: usize) -> bool {
        let Some(mut here) = self.name_at(at, "source") else { return false };
        // Blanks: JavaScript's `\s`, the braille blank and the ignorable characters.
        let blank = |u: Unit| match u {
            Unit::Ascii(b) => js_space(b as char) || ignorable(u),
            Unit::Other(c) => js_space(c) || c == '\u{2800}' || ignorable(u),
            _ => false,
        };
        while self.unit(here).is_some_and(blank) {
            here += 1;
        }
        self.unit(here).is_some_and(equals)
    }

    /// Whether the bracket at `open` opens one of `tags` (with `channel` and `antml` read as
    /// releases read them).
    fn opens_tag(&self, open: usize, tags: &[&str]) -> bool {
        if self.unit(open + 1) == Some(Unit::Ascii(b'\\')) {
            return false;
        }
        let mut at = open + 1;
        loop {
            for tag in tags {
                let Some(end) = self.name_at(at, tag) else { continue };
                let hit = match *tag {
                    "channel" => self.channel_tail(end),
                    _ => self.unit(end).is_none_or(|u| !name_character(u)),
                };
                if hit {
                    return true;
                }
            }
            if let Some(end) = self.name_at(at, "antml") {
                if self.unit(self.skip_ignorable(end)).is_some_and(colon) {
                    return true;
                }
            }
            match self.unit(at) {
                Some(u) if self.filler(u) => at += 1,
                _ => return false,
            }
        }
    }
}

/// The byte offsets of the brackets in `text` that open one of `tags` as the neutralizer of
/// `tags.neutralizer` reads it.
pub(crate) fn tag_openers(text: &str, tags: MemoryIndexTags) -> Vec<usize> {
    let (open, close) = brackets(&TABLE, tags.neutralizer);
    let mut found = read_openers(text, tags, &open, &close);
    if tags.neutralizer >= ClaudeVersion::new(2, 1, 337) {
        // The second reading: the text without controls and private-use characters (a NUL as a
        // space), or, when it has none, without the `antml:` prefixes after a `<`. A bracket of
        // that text that opens a tag marks the bracket of the same rank in this one.
        let second = second_reading(text);
        if second != text {
            let marked = tag_openers(&second, tags);
            if !marked.is_empty() {
                let ranks = |t: &str| t.char_indices().filter(|(_, c)| *c == '<' || open.contains(c)).map(|(at, _)| at).collect::<Vec<_>>();
                for (theirs, ours) in ranks(&second).into_iter().zip(ranks(text)) {
                    if marked.contains(&theirs) && !found.contains(&ours) {
                        found.push(ours);
                    }
                }
                found.sort_unstable();
            }
        }
    }
    found
}

fn second_reading(text: &str) -> String {
    let hidden = |c: char| matches!(c, '\u{1}'..='\u{8}' | '\u{b}'..='\u{1f}' | '\u{7f}'..='\u{9f}' | '\u{e000}'..='\u{f8ff}');
    let plain: String = text.chars().filter(|&c| !hidden(c)).map(|c| if c == '\0' { ' ' } else { c }).collect();
    if plain != text {
        return plain;
    }
    // `<` then one or more of: spaces and slashes, `antml:` (ASCII letters in any case).
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(lt) = rest.find('<') {
        out.push_str(&rest[..=lt]);
        let mut after = lt + 1;
        loop {
            let next = rest[after..].trim_start_matches([' ', '/']);
            match next.get(..6) {
                Some(word) if word.eq_ignore_ascii_case("antml:") => after = rest.len() - next.len() + 6,
                _ => break,
            }
        }
        rest = &rest[after..];
    }
    out.push_str(rest);
    out
}

/// The brackets of `text` that open one of `tags` in one reading of it.
fn read_openers(text: &str, tags: MemoryIndexTags, open: &[char], close: &[char]) -> Vec<usize> {
    let table = &*TABLE;
    if !text.chars().any(|c| c == '<' || open.contains(&c)) {
        return Vec::new();
    }
    let mut units = Vec::with_capacity(text.len());
    let mut offsets = Vec::with_capacity(text.len());
    for (at, c) in text.char_indices() {
        if c.is_ascii() {
            units.push(Unit::Ascii(c as u8));
            offsets.push(at);
            continue;
        }
        match table.reading.get(&c).filter(|(_, since)| *since <= tags.neutralizer) {
            None => {
                units.push(Unit::Other(c));
                offsets.push(at);
            }
            Some((Reading::Letters(letters), _)) => {
                for (i, letter) in letters.bytes().enumerate() {
                    units.push(Unit::Letter { letter, first: i == 0 });
                    offsets.push(at);
                }
            }
            Some((Reading::Either(a, b), _)) => {
                units.push(Unit::Either(*a, *b));
                offsets.push(at);
            }
            Some((Reading::Equals, _)) => {
                units.push(Unit::Equals);
                offsets.push(at);
            }
            Some((Reading::Replaced, _)) => {
                units.push(Unit::Other('\u{fffd}'));
                offsets.push(at);
            }
        }
    }
    let read = Read { units, open: open.to_vec(), close: close.to_vec() };
    let names = tags.names();
    (0..read.units.len()).filter(|&i| read.is_open(read.units[i]) && read.opens_tag(i, &names)).map(|i| offsets[i]).collect()
}
