//! JavaScript regular expressions (no `u` flag) rewritten for Rust's `regex` and `fancy-regex`
//! with the same meaning.
//!
//! Claude Code's rule table is a list of JavaScript regex sources. Run as Rust syntax they
//! would mostly work but match differently at the edges: in JavaScript without the `u` flag
//! `\b`, `\w` and `\d` are ASCII-only, the `i` flag folds ASCII letters only (so `ſ` is not
//! `s` and the Kelvin sign is not `k`), `\s` is JavaScript's own set (no-break space and BOM
//! in, U+0085 out), `.` also stops at `\r`, U+2028 and U+2029, and a `{` that does not start
//! a quantifier is a literal. This module rewrites each construct into an explicit form, so
//! the sources can be kept verbatim and still behave as in Claude Code.
//!
//! One difference cannot be expressed: JavaScript counts UTF-16 code units, so a character
//! outside the Basic Multilingual Plane counts twice in `{n,m}`. The only bounded repetition
//! in the table that admits such characters is the private-key body (`[\s\S-]{64,}?`), where
//! a body of fewer than 64 characters made mostly of emoji would match in Claude Code and
//! not here.

use std::fmt::Write as _;

/// Why a source could not be rewritten (a construct the table does not use).
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum TranslateError {
    /// The source uses a construct this port does not implement.
    #[error("unsupported construct {construct:?} at byte {at} of the JavaScript regex; extend jsregex.rs")]
    Unsupported {
        /// What was found.
        construct: String,
        /// Where.
        at: usize,
    },
    /// The source ends inside a class, group or escape.
    #[error("the JavaScript regex ends early (an unclosed class, group or escape)")]
    Truncated,
}

/// Which engine the output is for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// `fancy-regex`, keeping lookarounds (it cannot change Unicode mode, so `\b` becomes a
    /// pair of lookarounds).
    Fancy,
    /// The `regex` crate with lookarounds dropped: a pattern that matches wherever the
    /// original does (and possibly more), for a `RegexSet` prefilter.
    Prefilter,
}

/// JavaScript's `\s`: WhiteSpace and LineTerminator of ECMA-262.
const JS_SPACE: &[(u32, u32)] = &[
    (0x09, 0x0D),
    (0x20, 0x20),
    (0xA0, 0xA0),
    (0x1680, 0x1680),
    (0x2000, 0x200A),
    (0x2028, 0x2029),
    (0x202F, 0x202F),
    (0x205F, 0x205F),
    (0x3000, 0x3000),
    (0xFEFF, 0xFEFF),
];
const JS_WORD: &[(u32, u32)] = &[(0x30, 0x39), (0x41, 0x5A), (0x5F, 0x5F), (0x61, 0x7A)];
const JS_DIGIT: &[(u32, u32)] = &[(0x30, 0x39)];
/// What `.` matches without the `s` flag: anything but a line terminator.
const JS_LINE_TERMINATORS: &[(u32, u32)] = &[(0x0A, 0x0A), (0x0D, 0x0D), (0x2028, 0x2029)];

/// Whether a source uses lookarounds (and so needs `fancy-regex`).
pub fn needs_fancy(source: &str) -> bool {
    ["(?=", "(?!", "(?<=", "(?<!"].iter().any(|l| source.contains(l))
}

/// Rewrites a JavaScript regex source with the given flags (`i` is the only one honoured;
/// `g` does not change what a pattern matches).
pub fn translate(source: &str, flags: &str, target: Target) -> Result<String, TranslateError> {
    let mut p = Parser { chars: source.char_indices().collect(), pos: 0, icase: flags.contains('i'), target };
    let out = p.sequence(false)?;
    if p.pos < p.chars.len() {
        return Err(p.unsupported());
    }
    Ok(out)
}

struct Parser {
    chars: Vec<(usize, char)>,
    pos: usize,
    icase: bool,
    target: Target,
}

/// One class member: a range of code points, a class escape (`\w`), or a negated class
/// escape (`\S`, written as a nested `[^...]`).
enum Member {
    Range(u32, u32),
    Set(&'static [(u32, u32)]),
    NotSet(&'static [(u32, u32)]),
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).map(|&(_, c)| c)
    }

    fn peek_at(&self, ahead: usize) -> Option<char> {
        self.chars.get(self.pos + ahead).map(|&(_, c)| c)
    }

    fn next(&mut self) -> Result<char, TranslateError> {
        let c = self.peek().ok_or(TranslateError::Truncated)?;
        self.pos += 1;
        Ok(c)
    }

    fn unsupported(&self) -> TranslateError {
        let at = self.chars.get(self.pos).map_or_else(|| self.chars.last().map_or(0, |&(i, _)| i), |&(i, _)| i);
        let construct: String = self.chars[self.pos.min(self.chars.len())..].iter().take(6).map(|&(_, c)| c).collect();
        TranslateError::Unsupported { construct, at }
    }

    /// A sequence of alternatives up to the end, or up to the `)` closing a group.
    fn sequence(&mut self, in_group: bool) -> Result<String, TranslateError> {
        let mut out = String::new();
        while let Some(c) = self.peek() {
            match c {
                ')' if in_group => return Ok(out),
                ')' => return Err(self.unsupported()),
                '(' => {
                    self.pos += 1;
                    out.push_str(&self.group()?);
                }
                '[' => {
                    self.pos += 1;
                    out.push_str(&self.class()?);
                }
                '\\' => {
                    self.pos += 1;
                    out.push_str(&self.escape()?);
                }
                '.' => {
                    self.pos += 1;
                    out.push_str(&render_class(true, &[], JS_LINE_TERMINATORS));
                }
                '{' => {
                    self.pos += 1;
                    match self.quantifier_body() {
                        Some(q) => out.push_str(&q),
                        None => out.push_str(r"\{"),
                    }
                }
                '}' | ']' => {
                    self.pos += 1;
                    out.push('\\');
                    out.push(c);
                }
                '^' | '$' | '|' | '*' | '+' | '?' => {
                    self.pos += 1;
                    out.push(c);
                }
                _ => {
                    self.pos += 1;
                    out.push_str(&self.literal(c as u32));
                }
            }
        }
        if in_group {
            return Err(TranslateError::Truncated);
        }
        Ok(out)
    }

    /// After `{`: a complete quantifier (`{n}`, `{n,}`, `{n,m}`) is passed through; anything
    /// else leaves the position alone and the `{` is a literal, as in JavaScript's Annex B.
    fn quantifier_body(&mut self) -> Option<String> {
        let start = self.pos;
        let mut body = String::new();
        while let Some(c) = self.peek() {
            self.pos += 1;
            if c == '}' {
                let ok = {
                    let mut parts = body.splitn(2, ',');
                    let lo = parts.next().unwrap_or("");
                    let hi = parts.next();
                    !lo.is_empty()
                        && lo.bytes().all(|b| b.is_ascii_digit())
                        && hi.is_none_or(|h| h.bytes().all(|b| b.is_ascii_digit()))
                };
                if ok {
                    return Some(format!("{{{body}}}"));
                }
                break;
            }
            if !(c.is_ascii_digit() || c == ',') {
                break;
            }
            body.push(c);
        }
        self.pos = start;
        None
    }

    /// After `(`.
    fn group(&mut self) -> Result<String, TranslateError> {
        if self.peek() != Some('?') {
            let inner = self.sequence(true)?;
            self.pos += 1;
            return Ok(format!("({inner})"));
        }
        let kind: String = [self.peek_at(1), self.peek_at(2)].iter().flatten().collect();
        let (opener, skip, look) = if kind.starts_with(':') {
            ("(?:", 2, false)
        } else if kind.starts_with('=') {
            ("(?=", 2, true)
        } else if kind.starts_with('!') {
            ("(?!", 2, true)
        } else if kind == "<=" {
            ("(?<=", 3, true)
        } else if kind == "<!" {
            ("(?<!", 3, true)
        } else {
            return Err(self.unsupported());
        };
        self.pos += skip;
        let inner = self.sequence(true)?;
        self.pos += 1;
        if look && self.target == Target::Prefilter {
            // Dropping a lookaround only widens what matches.
            return Ok(String::new());
        }
        Ok(format!("{opener}{inner})"))
    }

    /// After `\` outside a class.
    fn escape(&mut self) -> Result<String, TranslateError> {
        let c = self.next()?;
        Ok(match c {
            'b' => match self.target {
                Target::Prefilter => r"(?-u:\b)".to_string(),
                Target::Fancy => {
                    let w = render_class(false, &[], JS_WORD);
                    format!("(?:(?<!{w})(?={w})|(?<={w})(?!{w}))")
                }
            },
            'w' => render_class(false, &[], JS_WORD),
            'W' => render_class(true, &[], JS_WORD),
            'd' => render_class(false, &[], JS_DIGIT),
            'D' => render_class(true, &[], JS_DIGIT),
            's' => render_class(false, &[], JS_SPACE),
            'S' => render_class(true, &[], JS_SPACE),
            _ => match self.char_escape(c)? {
                Some(cp) => self.literal(cp),
                None => return Err(self.unsupported_back()),
            },
        })
    }

    fn unsupported_back(&mut self) -> TranslateError {
        self.pos = self.pos.saturating_sub(2);
        self.unsupported()
    }

    /// The code point of a character escape (`\n`, `\x60`, `\-`, …); `None` for anything that
    /// is not one (back-references, `\B`, `\p`, …).
    fn char_escape(&mut self, c: char) -> Result<Option<u32>, TranslateError> {
        Ok(Some(match c {
            'n' => 0x0A,
            'r' => 0x0D,
            't' => 0x09,
            'f' => 0x0C,
            'v' => 0x0B,
            '0' if !self.peek().is_some_and(|d| d.is_ascii_digit()) => 0,
            'x' => match self.hex(2)? {
                Some(v) => v,
                None => 'x' as u32,
            },
            'u' => match self.hex(4)? {
                Some(v) => v,
                None => 'u' as u32,
            },
            c if c.is_ascii_alphanumeric() => return Ok(None),
            // An identity escape: `\.`, `\-`, `\/`, `\\`, …
            c => c as u32,
        }))
    }

    /// `n` hex digits, or `None` (and no input consumed) if they are not there.
    fn hex(&mut self, n: usize) -> Result<Option<u32>, TranslateError> {
        let digits: String = (0..n).filter_map(|i| self.peek_at(i)).collect();
        if digits.chars().count() == n && digits.chars().all(|d| d.is_ascii_hexdigit()) {
            self.pos += n;
            return Ok(u32::from_str_radix(&digits, 16).ok());
        }
        Ok(None)
    }

    /// One literal code point, with its ASCII case partner under `i`.
    fn literal(&self, cp: u32) -> String {
        if self.icase {
            if let Some(other) = ascii_case_partner(cp) {
                return render_class(false, &[Member::Range(cp, cp), Member::Range(other, other)], &[]);
            }
        }
        match char::from_u32(cp) {
            Some(c) => regex::escape(c.encode_utf8(&mut [0; 4])),
            None => format!("\\x{{{cp:X}}}"),
        }
    }

    /// After `[`.
    fn class(&mut self) -> Result<String, TranslateError> {
        let negated = self.peek() == Some('^');
        if negated {
            self.pos += 1;
        }
        if self.peek() == Some(']') {
            // `[]` and `[^]` have no Rust spelling worth supporting; the table has neither.
            return Err(self.unsupported());
        }
        let mut members = Vec::new();
        loop {
            let c = self.next()?;
            if c == ']' {
                break;
            }
            let first = self.class_atom(c)?;
            // A range needs single characters on both sides; `[\w-x]` and a `-` before `]`
            // are literal hyphens, as in JavaScript's Annex B.
            if let Member::Range(lo, _) = first {
                if self.peek() == Some('-') && self.peek_at(1).is_some_and(|n| n != ']') {
                    let save = self.pos;
                    self.pos += 1;
                    let c2 = self.next()?;
                    match self.class_atom(c2)? {
                        Member::Range(hi, _) if hi >= lo => {
                            members.push(Member::Range(lo, hi));
                            continue;
                        }
                        Member::Range(..) => return Err(self.unsupported()),
                        Member::Set(_) | Member::NotSet(_) => self.pos = save,
                    }
                }
            }
            members.push(first);
        }
        if self.icase {
            let mut extra = Vec::new();
            for m in &members {
                if let Member::Range(lo, hi) = *m {
                    for (a, z, shift) in [(0x61u32, 0x7Au32, -32i64), (0x41, 0x5A, 32)] {
                        let (l, h) = (lo.max(a), hi.min(z));
                        if l <= h {
                            extra.push(Member::Range((l as i64 + shift) as u32, (h as i64 + shift) as u32));
                        }
                    }
                }
            }
            members.extend(extra);
        }
        Ok(render_members(negated, &members))
    }

    /// One class member after its first character `c`.
    fn class_atom(&mut self, c: char) -> Result<Member, TranslateError> {
        if c != '\\' {
            return Ok(Member::Range(c as u32, c as u32));
        }
        let e = self.next()?;
        Ok(match e {
            'w' => Member::Set(JS_WORD),
            'd' => Member::Set(JS_DIGIT),
            's' => Member::Set(JS_SPACE),
            'W' => Member::NotSet(JS_WORD),
            'D' => Member::NotSet(JS_DIGIT),
            'S' => Member::NotSet(JS_SPACE),
            'b' => Member::Range(0x08, 0x08),
            _ => match self.char_escape(e)? {
                Some(cp) => Member::Range(cp, cp),
                None => return Err(self.unsupported_back()),
            },
        })
    }
}

fn ascii_case_partner(cp: u32) -> Option<u32> {
    match cp {
        0x41..=0x5A => Some(cp + 32),
        0x61..=0x7A => Some(cp - 32),
        _ => None,
    }
}

fn push_range(out: &mut String, lo: u32, hi: u32) {
    if lo == hi {
        let _ = write!(out, "\\x{{{lo:X}}}");
    } else {
        let _ = write!(out, "\\x{{{lo:X}}}-\\x{{{hi:X}}}");
    }
}

/// `[...]` of explicit ranges plus one set, every code point spelled `\x{..}` so no class
/// metacharacter (`-`, `&&`, `~~`, `[`) can be misread.
fn render_class(negated: bool, members: &[Member], set: &[(u32, u32)]) -> String {
    let mut out = String::from(if negated { "[^" } else { "[" });
    for m in members {
        if let Member::Range(lo, hi) = *m {
            push_range(&mut out, lo, hi);
        }
    }
    for &(lo, hi) in set {
        push_range(&mut out, lo, hi);
    }
    out.push(']');
    out
}

fn render_members(negated: bool, members: &[Member]) -> String {
    let mut out = String::from(if negated { "[^" } else { "[" });
    for m in members {
        match *m {
            Member::Range(lo, hi) => push_range(&mut out, lo, hi),
            Member::Set(set) => {
                for &(lo, hi) in set {
                    push_range(&mut out, lo, hi);
                }
            }
            Member::NotSet(set) => {
                out.push_str("[^");
                for &(lo, hi) in set {
                    push_range(&mut out, lo, hi);
                }
                out.push(']');
            }
        }
    }
    out.push(']');
    out
}

/// A text as JavaScript counts it, for the rules that count characters of any kind
/// (`[\s\S-]{64,}?` between a private key's lines): a JavaScript string holds a character outside
/// the Basic Multilingual Plane as two code units, and a regex without the `u` flag matches each
/// on its own, so 32 emoji are 64 characters to it. Here each such character is written as two
/// stand-ins (U+E000, which no rule names), and a match found in this text maps back to the
/// original as long as it starts and ends next to characters of the original.
pub struct CodeUnits {
    /// The text with the stand-ins.
    pub text: String,
    /// Where, in `text`, each replaced character's stand-ins end.
    ends: Vec<usize>,
}

impl CodeUnits {
    /// `None` when the text has no character outside the BMP (then it counts the same).
    pub fn of(original: &str) -> Option<CodeUnits> {
        if original.chars().all(|c| c.len_utf16() == 1) {
            return None;
        }
        let mut text = String::with_capacity(original.len() + original.len() / 2);
        let mut ends = Vec::new();
        for c in original.chars() {
            if c.len_utf16() == 2 {
                text.push_str("\u{E000}\u{E000}");
                ends.push(text.len());
            } else {
                text.push(c);
            }
        }
        Some(CodeUnits { text, ends })
    }

    /// The byte offset in the original text of an offset in `text` that falls between
    /// characters of the original: each replaced character is 4 bytes there and 6 here.
    pub fn original_offset(&self, at: usize) -> usize {
        at - 2 * self.ends.partition_point(|&end| end <= at)
    }
}
