//! `MEMORY.md`, the index: one line per memory, `- [Title](file.md) — hook` by convention.
//! Nothing enforces that shape (Claude Code's model writes it from prompt instructions), so
//! parsing is liberal: any line holding a markdown link whose target ends in `.md` and stays
//! inside the memory folder is an entry. Targets may be wrapped in `<…>`, percent-encoded or
//! contain spaces, and are resolved relative to the folder holding the index.
//!
//! Edits keep every other line byte for byte: [`IndexDoc`] remembers each line's ending and
//! whether the file ended with a newline, so `render(parse(x)) == x`. A lone CR ends a line
//! for the releases that read it so ([`IndexDoc::parse_as`]), and is put back on the way out
//! ([`IndexDoc::render_as`]).

use super::path::{normalize_rel, relative_to_dir};
use super::{Memdir, MemdirError, Revision, Scope};
use mneme_core::text::{is_js_whitespace, js_trim};
use mneme_core::versions::Profile;
use serde::Serialize;
use std::borrow::Cow;
use std::path::Path;

/// Whether the lone CRs of `content` (a classic Mac line end: a CR with no LF after it) end
/// lines of the index — in every release. From 2.1.284 Claude Code sends each lone CR as LF
/// after the cut, and earlier releases send the CR itself; in none does a lone CR count as a
/// line towards the 200 (row 9 of docs/claude-code-versions.md), so the same entries load
/// either way. Reading such an index as one line for the older releases made every edit of one
/// entry an edit of all of them (removing the first memory emptied the index, Fix index added
/// duplicates of the entries it could no longer see), so entries are always split at a lone
/// CR; what the release changes is only how the index is measured (`release` is kept for the
/// callers' symmetry with the measuring functions).
pub(crate) fn lone_cr_ends_lines(content: &str, _release: &Profile) -> bool {
    has_lone_cr(content)
}

fn has_lone_cr(content: &str) -> bool {
    let b = content.as_bytes();
    b.iter().enumerate().any(|(i, &c)| c == b'\r' && b.get(i + 1) != Some(&b'\n'))
}

/// `content` with each lone CR made LF (CRLF left as it is): the lines [`IndexDoc::parse`]
/// then finds are the index's entries as [`lone_cr_ends_lines`] splits them.
fn lines_as_read<'a>(content: &'a str, release: &Profile) -> Cow<'a, str> {
    if !lone_cr_ends_lines(content, release) {
        return Cow::Borrowed(content);
    }
    let b = content.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    for (i, &c) in b.iter().enumerate() {
        out.push(if c == b'\r' && b.get(i + 1) != Some(&b'\n') { b'\n' } else { c });
    }
    // Only ASCII bytes were swapped for ASCII bytes.
    Cow::Owned(String::from_utf8(out).unwrap_or_else(|_| content.to_string()))
}

/// Index lines longer than this many UTF-16 units are flagged: Claude Code's consolidation
/// prompt asks for index lines under about 200 characters.
pub const LONG_INDEX_LINE_UNITS: usize = 200;

/// One line of an index, verbatim.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexLine {
    /// 1-based line number in the file.
    pub number: usize,
    /// The line without its line ending.
    pub text: String,
    /// The entry this line holds, if it links to a topic file.
    pub entry: Option<IndexEntry>,
}

/// The link an index line makes to a topic file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexEntry {
    /// The link text as written (markdown escapes kept).
    pub title: String,
    /// The link target as written.
    pub target: String,
    /// The target resolved to a path relative to the memory folder (`/` separators).
    pub rel_path: String,
    /// The text after the link, without the leading `—`/`-`/`:` separator.
    pub hook: Option<String>,
    #[serde(skip)]
    pub(crate) spans: Spans,
}

/// Byte ranges inside the line, for in-place rewrites.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct Spans {
    /// The link text, between `[` and `]`.
    pub title: (usize, usize),
    /// The target as written, without `<>`.
    pub target: (usize, usize),
    /// The hook after the separator.
    pub hook: Option<(usize, usize)>,
}

/// An index as read from disk.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexFile {
    /// `MEMORY.md` or `team/MEMORY.md`.
    pub rel_path: String,
    /// The whole file (empty when it does not exist).
    pub content: String,
    /// What was read; pass it back to [`Memdir::write_index`].
    pub revision: Revision,
    /// The parsed lines.
    pub lines: Vec<IndexLine>,
}

/// Parses an index of `scope` inside the memory folder `root` (used only to recognise
/// absolute targets that point into it), its lines split on LF ([`IndexDoc::parse`]).
/// A line inside an HTML comment holds no entry: Claude Code strips comment blocks before it
/// reads the index, so such a line is notes, not a memory the index lists.
pub fn parse_index(content: &str, scope: Scope, root: &Path) -> Vec<IndexLine> {
    lines_of(IndexDoc::parse(content), scope, root)
}

/// [`parse_index`] with the lines `release` sees in the index ([`IndexDoc::parse_as`]): from
/// 2.1.284 a lone CR ends a line too, and the line numbers count it.
pub fn parse_index_as(content: &str, scope: Scope, root: &Path, release: &Profile) -> Vec<IndexLine> {
    lines_of(IndexDoc::parse_as(content, release), scope, root)
}

fn lines_of(doc: IndexDoc, scope: Scope, root: &Path) -> Vec<IndexLine> {
    let commented = commented_lines(&doc.lines);
    doc.lines
        .iter()
        .enumerate()
        .map(|(i, l)| IndexLine {
            number: i + 1,
            text: l.text.clone(),
            entry: if commented[i] { None } else { parse_entry(&l.text, scope.dir(), root) },
        })
        .collect()
}

/// Up to three spaces of indent, as CommonMark allows before a block's opening.
fn block_start(text: &str) -> &str {
    let indent = text.len() - text.trim_start_matches(' ').len();
    if indent <= 3 {
        &text[indent..]
    } else {
        ""
    }
}

/// For each line, whether Claude Code's comment stripping leaves nothing of it, read with the
/// same markdown lexer the cap measurement and the CLAUDE.md loader use
/// (`mneme_markdown::html_comment_kept_ranges`): a line is hidden when it has text and none of
/// that text is kept. A `<!--` only hides what follows when it opens an HTML block, which a
/// line rule gets wrong inside list items and fences.
pub(crate) fn commented_lines(lines: &[DocLine]) -> Vec<bool> {
    let mut content = String::with_capacity(lines.iter().map(|l| l.text.len() + 1).sum());
    // Every line ends in `\n` here, the last included: marked reads a block at the very end of
    // the text differently, and the file's own last line ending does not change what is hidden.
    for l in lines {
        content.push_str(&l.text);
        content.push('\n');
    }
    if !content.contains("<!--") {
        return vec![false; lines.len()];
    }
    // A byte-order mark before the first line is no part of it.
    let bom = if content.starts_with('\u{FEFF}') { '\u{FEFF}'.len_utf8() } else { 0 };
    let Some(kept) = mneme_markdown::html_comment_kept_ranges(&content[bom..]) else {
        // The lexer could not say where its text came from: the line rule stands in.
        return commented_lines_by_rule(lines);
    };
    let mut kept = kept.into_iter().map(|r| r.start + bom..r.end + bom).peekable();
    let mut out = Vec::with_capacity(lines.len());
    let mut start = 0;
    for l in lines {
        let end = start + l.text.len();
        while kept.next_if(|r| r.end <= start).is_some() {}
        let mut shown = false;
        for r in kept.clone().take_while(|r| r.start < end) {
            let (a, b) = (r.start.max(start), r.end.min(end));
            // Off a character boundary the offsets are not to be trusted: keep the line.
            shown |= content.get(a..b).is_none_or(|piece| !js_trim(piece).is_empty());
        }
        let has_text = !js_trim(l.text.strip_prefix('\u{FEFF}').unwrap_or(&l.text)).is_empty();
        out.push(has_text && !shown);
        start = end + 1;
    }
    out
}

/// The line rule [`commented_lines`] falls back on: the line is in an HTML block that opens
/// with `<!--` at the start of a line (outside fenced code) and runs to the line holding the
/// matching `-->`, and nothing but blanks lies outside the block's `<!-- … -->` spans on it
/// (what is left, like `<!-- x --> - [a](a.md)`, is kept). An unclosed `<!--` is not stripped.
fn commented_lines_by_rule(lines: &[DocLine]) -> Vec<bool> {
    let mut out = vec![false; lines.len()];
    let mut fence: Option<&str> = None;
    let mut i = 0;
    while i < lines.len() {
        // A byte-order mark before the first line is no part of it.
        let text = if i == 0 { lines[i].text.trim_start_matches('\u{FEFF}') } else { &lines[i].text };
        let start = block_start(text);
        if let Some(f) = fence {
            if start.starts_with(f) {
                fence = None;
            }
            i += 1;
            continue;
        }
        if let Some(f) = ["```", "~~~"].into_iter().find(|f| start.starts_with(f)) {
            fence = Some(f);
            i += 1;
            continue;
        }
        if !start.starts_with("<!--") {
            i += 1;
            continue;
        }
        // The block ends at the first line holding `-->` after the opening `<!--`.
        let open_at = lines[i].text.len() - start.len() + 4;
        let Some(end) = (i..lines.len()).find(|&k| lines[k].text[if k == i { open_at } else { 0 }..].contains("-->")) else {
            break;
        };
        // Walk the block's comment spans, noting the lines with text outside them.
        let mut in_comment = false;
        for (k, line) in lines.iter().enumerate().take(end + 1).skip(i) {
            let text = line.text.as_str();
            let mut residue = false;
            let mut at = 0;
            while at < text.len() {
                if in_comment {
                    match text[at..].find("-->") {
                        Some(c) => {
                            at += c + 3;
                            in_comment = false;
                        }
                        None => at = text.len(),
                    }
                } else {
                    let next = text[at..].find("<!--").map_or(text.len(), |c| at + c);
                    residue |= !js_trim(&text[at..next]).is_empty();
                    at = next;
                    if next < text.len() {
                        // The opening's own `-->` may not overlap it: `<!-->` is not closed.
                        at += 4;
                        in_comment = true;
                    }
                }
            }
            out[k] = !residue;
        }
        i = end + 1;
    }
    out
}

/// The most `](` a line is searched at for its entry. Each try may scan the rest of the line
/// for the balancing `)`, so a hostile index line of tens of thousands of `](` took minutes;
/// an index line Mneme or Claude Code writes has one link, and people's lines a few.
pub const MAX_LINK_TRIES: usize = 64;

/// The first link on `line` to a `.md` file inside the memory folder, among its first
/// [`MAX_LINK_TRIES`] `](`; a line whose entry comes later has none.
pub(crate) fn parse_entry(line: &str, dir: &str, root: &Path) -> Option<IndexEntry> {
    let mut from = 0;
    let mut tries = 0;
    while let Some(found) = line[from..].find("](") {
        tries += 1;
        if tries > MAX_LINK_TRIES {
            return None;
        }
        let open = from + found;
        let target_start = open + 2;
        from = target_start;
        // `\]` is a literal bracket in the link text (`escape_title` writes one for a title
        // holding `](`), not the end of it.
        if is_escaped(line.as_bytes(), open) {
            continue;
        }
        let Some((raw_span, close)) = link_target(line, target_start) else { continue };
        let raw = &line[raw_span.0..raw_span.1];
        let Some(rel_path) = resolve_target(raw, dir, root) else { continue };
        let title_start = title_start(line, open);
        let title = line[title_start..open].to_string();
        let (hook, hook_span) = hook_after(line, close + 1);
        return Some(IndexEntry {
            title,
            target: raw.to_string(),
            rel_path,
            hook,
            spans: Spans { title: (title_start, open), target: raw_span, hook: hook_span },
        });
    }
    None
}

/// The target starting at `start` (just after `](`): either `<…>` or up to the `)` that
/// balances (so `a (1).md` works). Returns the target's span without `<>` and the index of
/// the closing `)`.
fn link_target(line: &str, start: usize) -> Option<((usize, usize), usize)> {
    let rest = &line[start..];
    let lead = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    let s = start + lead;
    if line[s..].starts_with('<') {
        let end = s + 1 + line[s + 1..].find('>')?;
        let after = &line[end + 1..];
        let close = end + 1 + after.find(')')?;
        return after[..close - end - 1].trim().is_empty().then_some(((s + 1, end), close));
    }
    let mut depth = 0usize;
    for (i, c) in line[s..].char_indices() {
        match c {
            '(' => depth += 1,
            ')' if depth == 0 => {
                let raw = &line[s..s + i];
                let trimmed = raw.trim_end();
                // A link title (`(file.md "Title")`) is not part of the target.
                let target_end = match trimmed.find(" \"") {
                    Some(q) if trimmed.ends_with('"') => q,
                    _ => trimmed.len(),
                };
                return Some(((s, s + target_end), s + i));
            }
            ')' => depth -= 1,
            _ => {}
        }
    }
    None
}

/// Where the link text starts: the `[` that balances the `]` at `close`, honouring `\[`.
fn title_start(line: &str, close: usize) -> usize {
    let bytes = line.as_bytes();
    let mut depth = 0usize;
    let mut i = close;
    while i > 0 {
        i -= 1;
        // Only brackets ask, so a long run of backslashes is counted once, not per byte.
        let escaped = || is_escaped(bytes, i);
        match bytes[i] {
            b']' if !escaped() => depth += 1,
            b'[' if !escaped() => {
                if depth == 0 {
                    return i + 1;
                }
                depth -= 1;
            }
            _ => {}
        }
    }
    close
}

/// Whether the byte at `at` is backslash-escaped: preceded by an odd number of backslashes
/// (`\\]` is an escaped backslash followed by a real `]`).
fn is_escaped(bytes: &[u8], at: usize) -> bool {
    bytes[..at].iter().rev().take_while(|&&b| b == b'\\').count() % 2 == 1
}

/// The hook after the link: the rest of the line minus a leading `—`, `–`, `-` or `:`.
fn hook_after(line: &str, from: usize) -> (Option<String>, Option<(usize, usize)>) {
    let rest = &line[from.min(line.len())..];
    let mut start = from + (rest.len() - rest.trim_start().len());
    for sep in ["—", "–", "-", ":"] {
        if line[start..].starts_with(sep) {
            start += sep.len();
            let r = &line[start..];
            start += r.len() - r.trim_start().len();
            break;
        }
    }
    let end = start + line[start..].trim_end().len();
    if end > start {
        (Some(line[start..end].to_string()), Some((start, end)))
    } else {
        (None, None)
    }
}

/// Resolves a link target to a path relative to the memory folder, or `None` when it is not
/// a local `.md` file inside it (URLs, other extensions, `..` escaping the folder, absolute
/// paths elsewhere).
fn resolve_target(raw: &str, dir: &str, root: &Path) -> Option<String> {
    let mut t = raw.trim();
    if t.contains("://") || t.starts_with("mailto:") {
        return None;
    }
    if let Some(i) = t.find(".md#") {
        t = &t[..i + 3];
    }
    let decoded = percent_decode(t);
    if !decoded.ends_with(".md") {
        return None;
    }
    if decoded.starts_with('/') {
        let rest = Path::new(&decoded).strip_prefix(root).ok()?;
        let rel = rest.to_str()?;
        return normalize_rel(rel.split('/')).filter(|r| !r.is_empty());
    }
    normalize_rel(dir.split('/').chain(decoded.split('/'))).filter(|r| !r.is_empty())
}

/// `%XX` decoding; malformed escapes and non-UTF-8 results leave the text as written.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s).decode_utf8().map_or_else(|_| s.to_string(), |d| d.into_owned())
}

/// Encodes a relative path as a link target: characters that would end or confuse a
/// markdown link are percent-encoded; everything else (including non-ASCII) stays readable.
pub(crate) fn encode_target(rel: &str) -> String {
    let mut out = String::with_capacity(rel.len());
    for c in rel.chars() {
        match c {
            ' ' | '(' | ')' | '<' | '>' | '[' | ']' | '%' | '#' | '?' | '"' => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

/// Escapes `[`, `]` and `\` so a title cannot end the link text early.
pub(crate) fn escape_title(title: &str) -> String {
    let mut out = String::with_capacity(title.len());
    for c in title.chars() {
        if matches!(c, '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// Undoes markdown backslash escapes of punctuation, to compare a title with a name.
pub(crate) fn unescape_title(title: &str) -> String {
    let mut out = String::with_capacity(title.len());
    let mut chars = title.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(&n) = chars.peek() {
                if n.is_ascii_punctuation() {
                    out.push(n);
                    chars.next();
                    continue;
                }
            }
        }
        out.push(c);
    }
    out
}

/// `- [Title](target) — hook`, or without the hook when there is none. Always one line: a
/// title or hook taken from frontmatter may hold line breaks (`description: |`), which would
/// split the entry, or start a line that reads as an entry of its own; each line break or
/// control character becomes a space.
pub fn render_entry(title: &str, rel_path: &str, scope: Scope, hook: Option<&str>) -> String {
    let target = encode_target(&relative_to_dir(rel_path, scope.dir()));
    let title = one_line(title);
    match hook.map(one_line).map(|h| h.trim().to_string()).filter(|h| !h.is_empty()) {
        Some(h) => format!("- [{}]({target}) — {h}", escape_title(&title)),
        None => format!("- [{}]({target})", escape_title(&title)),
    }
}

/// `s` with every line break or control character turned into a space: an index entry is one line.
pub(super) fn one_line(s: &str) -> std::borrow::Cow<'_, str> {
    let breaks = |c: char| c.is_control() || matches!(c, '\u{2028}' | '\u{2029}' | '\u{85}');
    if s.contains(breaks) {
        std::borrow::Cow::Owned(s.chars().map(|c| if breaks(c) { ' ' } else { c }).collect())
    } else {
        std::borrow::Cow::Borrowed(s)
    }
}

/// One line of an index being edited.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DocLine {
    /// The line without its ending.
    pub text: String,
    /// Ends in `\r\n` rather than `\n` (when it ends at all).
    pub crlf: bool,
}

/// An index as editable lines, rendering back to the exact bytes it was parsed from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexDoc {
    /// The lines in file order.
    pub lines: Vec<DocLine>,
    /// Whether the last line ends with a line break.
    pub trailing_newline: bool,
}

impl IndexDoc {
    /// Splits on `\n`, remembering `\r\n` endings and a final newline.
    pub fn parse(content: &str) -> IndexDoc {
        let mut lines = Vec::new();
        let mut pieces = content.split('\n').peekable();
        let mut trailing_newline = false;
        while let Some(piece) = pieces.next() {
            if pieces.peek().is_none() {
                if piece.is_empty() {
                    trailing_newline = !content.is_empty();
                } else {
                    lines.push(DocLine { text: piece.to_string(), crlf: false });
                }
                break;
            }
            match piece.strip_suffix('\r') {
                Some(t) => lines.push(DocLine { text: t.to_string(), crlf: true }),
                None => lines.push(DocLine { text: piece.to_string(), crlf: false }),
            }
        }
        IndexDoc { lines, trailing_newline }
    }

    /// The lines of `content` as an index: [`IndexDoc::parse`], except that a lone CR ends a
    /// line too (in every release, see [`lone_cr_ends_lines`]). Render
    /// such a doc with [`IndexDoc::render_as`], which puts the lone CRs back.
    pub fn parse_as(content: &str, release: &Profile) -> IndexDoc {
        IndexDoc::parse(&lines_as_read(content, release))
    }

    /// The text again, with any edits, for a doc [`IndexDoc::parse_as`] made of `original`:
    /// each line kept from `original` ends as it did there (a lone CR, CRLF or LF), and a new
    /// line as most of its lines do (`text_form::keep_form`), so the file keeps the line ends
    /// it was written with.
    pub fn render_as(&self, original: &str, release: &Profile) -> String {
        let rendered = self.render();
        if lone_cr_ends_lines(original, release) {
            crate::text_form::keep_form(original, &rendered).into_owned()
        } else {
            rendered
        }
    }

    /// The exact text again, with any edits.
    pub fn render(&self) -> String {
        let mut out = String::with_capacity(self.lines.iter().map(|l| l.text.len() + 2).sum());
        for (i, l) in self.lines.iter().enumerate() {
            out.push_str(&l.text);
            if i + 1 < self.lines.len() || self.trailing_newline {
                out.push_str(if l.crlf { "\r\n" } else { "\n" });
            }
        }
        out
    }

    /// Whether new lines should end in `\r\n`: when most existing ones do.
    pub fn crlf(&self) -> bool {
        let crlf = self.lines.iter().filter(|l| l.crlf).count();
        crlf * 2 > self.lines.len()
    }

    /// Entries with their 0-based line index; lines inside an HTML comment hold none (see
    /// [`parse_index`]), so they are never counted, kept or dropped as a live entry.
    pub fn entries(&self, scope: Scope, root: &Path) -> Vec<(usize, IndexEntry)> {
        let commented = commented_lines(&self.lines);
        self.lines
            .iter()
            .enumerate()
            .filter(|(i, _)| !commented[*i])
            .filter_map(|(i, l)| parse_entry(&l.text, scope.dir(), root).map(|e| (i, e)))
            .collect()
    }

    /// Puts `hook` after the link of the entry on line `at` (replacing what followed it, or
    /// adding ` — hook`), leaving the rest of the line as written. False when that line is not
    /// an entry.
    pub fn set_hook(&mut self, at: usize, hook: &str, scope: Scope, root: &Path) -> bool {
        let Some(line) = self.lines.get_mut(at) else { return false };
        let Some(entry) = parse_entry(&line.text, scope.dir(), root) else { return false };
        let hook = one_line(hook).trim().to_string();
        line.text = match entry.spans.hook {
            Some((start, end)) => format!("{}{hook}{}", &line.text[..start], &line.text[end..]),
            None => format!("{} — {hook}", line.text.trim_end()),
        };
        true
    }

    /// Adds a line after the last non-blank one, keeping trailing blank lines and the file's
    /// habit of ending (or not) with a newline. Returns the new line's 0-based index.
    pub fn append(&mut self, text: String) -> usize {
        let crlf = self.crlf();
        match self.lines.iter().rposition(|l| !js_trim(&l.text).is_empty()) {
            Some(k) => {
                self.lines.insert(k + 1, DocLine { text, crlf });
                k + 1
            }
            None => {
                self.lines.insert(0, DocLine { text, crlf });
                if self.lines.len() == 1 {
                    self.trailing_newline = true;
                }
                0
            }
        }
    }

    /// Inserts a line at `at` (clamped to the end).
    pub fn insert(&mut self, at: usize, text: String) -> usize {
        let crlf = self.crlf();
        let at = at.min(self.lines.len());
        // Inserting after an unterminated last line: the old last line gains the break and
        // the new one inherits "no newline at end of file".
        self.lines.insert(at, DocLine { text, crlf });
        if self.lines.len() == 1 {
            self.trailing_newline = true;
        }
        at
    }

    /// Removes the lines at the given 0-based indices; returns their texts in file order.
    pub fn remove(&mut self, indices: &[usize]) -> Vec<String> {
        let mut sorted = indices.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        let mut removed = Vec::with_capacity(sorted.len());
        for &i in sorted.iter().rev() {
            if i < self.lines.len() {
                removed.push(self.lines.remove(i).text);
            }
        }
        removed.reverse();
        removed
    }
}

/// Byte offset just past the frontmatter and leading whitespace of an index, plus the byte
/// length of the part Claude Code loads: the loaded text is `content[start..start + len]`.
pub(crate) fn loaded_span(content: &str) -> (mneme_core::text::EntrypointTruncation, usize, usize) {
    let parsed = mneme_core::frontmatter::parse(content);
    let fm_len = parsed.frontmatter.as_ref().map_or(0, |f| f.block_len);
    let stripped = &content[fm_len..];
    let start = fm_len + (stripped.len() - stripped.trim_start_matches(is_js_whitespace).len());
    let t = mneme_core::text::truncate_entrypoint(stripped);
    let len = if t.was_truncated() {
        t.content.rfind("\n\n> WARNING: MEMORY.md is ").unwrap_or(0)
    } else {
        t.content.len()
    };
    (t, start, len)
}

impl Memdir {
    /// Reads an index. A missing index reads as empty with [`Revision::ABSENT`].
    pub fn read_index(&self, scope: Scope) -> Result<IndexFile, MemdirError> {
        let rel = scope.index_rel_path();
        let real_root = match self.real_root() {
            Ok(r) => r,
            Err(MemdirError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                return Ok(IndexFile { rel_path: rel.into(), content: String::new(), revision: Revision::ABSENT, lines: vec![] })
            }
            Err(e) => return Err(e),
        };
        let abs = self.index_abs(&real_root, rel)?;
        let (content, revision) = match super::scan::read_bytes(&abs)? {
            None => (String::new(), Revision::ABSENT),
            Some((bytes, meta)) => {
                let rev = Revision::of(&bytes, &meta);
                (String::from_utf8_lossy(&bytes).into_owned(), rev)
            }
        };
        let lines = parse_index_as(&content, scope, &self.root, &self.index_release(&content));
        Ok(IndexFile { rel_path: rel.into(), content, revision, lines })
    }

    /// Reads an index for editing (strict UTF-8), applies `f`, and writes the result back
    /// atomically if it changed, refusing if the index changed in between. Returns what `f`
    /// returned and the new revision when something was written.
    pub(crate) fn edit_index<R>(
        &self,
        scope: Scope,
        f: impl FnOnce(&mut IndexDoc) -> R,
    ) -> Result<(R, Option<Revision>), MemdirError> {
        self.edit_index_with(scope, |doc, _| f(doc))
    }

    /// [`Memdir::edit_index`], `f` given the text the doc was parsed from too (without a
    /// byte-order mark): an edit that measures the doc as it will be written renders it with
    /// [`IndexDoc::render_as`], which puts that text's lone CRs back.
    pub(crate) fn edit_index_with<R>(
        &self,
        scope: Scope,
        f: impl FnOnce(&mut IndexDoc, &str) -> R,
    ) -> Result<(R, Option<Revision>), MemdirError> {
        let rel = scope.index_rel_path();
        let real_root = self.ensure_root()?;
        let abs = self.index_abs(&real_root, rel)?;
        // A linked index (`MEMORY.md -> notes/index.md`, which `index_abs` has checked stays
        // inside) is edited where it lives: Claude Code's own writes follow the link, and
        // replacing the link with a file would leave its target behind, out of date.
        let abs = match std::fs::symlink_metadata(&abs) {
            Ok(m) if m.file_type().is_symlink() => std::fs::canonicalize(&abs).unwrap_or(abs),
            _ => abs,
        };
        // Held from the read to the rename, so two Mneme writers each add their line to what
        // the other wrote instead of one replacing the other's index. A folder not made yet
        // (`team/`) is not made just to lock it: there the index is new, and creating a new
        // file fails when someone else created it first.
        let folder = abs.parent().filter(|p| !p.is_dir());
        let _writing = if folder.is_none() { Some(self.lock_folder_of(&abs)?) } else { None };
        let (content, revision) = match super::scan::read_bytes(&abs)? {
            None => (String::new(), Revision::ABSENT),
            Some((bytes, meta)) => {
                let rev = Revision::of(&bytes, &meta);
                let text = super::write::text_of(rel, bytes)?;
                (text, rev)
            }
        };
        // A byte-order mark belongs to the file, not to its first line: kept out of the lines
        // `f` sees, it stays at the start when line 1 is removed or moved.
        let (bom, body) = match content.strip_prefix('\u{FEFF}') {
            Some(rest) => ("\u{FEFF}", rest),
            None => ("", content.as_str()),
        };
        let release = self.index_release(body);
        let mut doc = IndexDoc::parse_as(body, &release);
        let out = f(&mut doc, body);
        let rendered = format!("{bom}{}", doc.render_as(body, &release));
        if rendered == content {
            return Ok((out, None));
        }
        if let Some(parent) = folder {
            std::fs::create_dir_all(parent).map_err(super::error::io_err("create the folder", parent))?;
        }
        let new_rev = self.write_replace_locked(&abs, rel, rendered.as_bytes(), &revision)?;
        Ok((out, Some(new_rev)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_entry(line: &str, expect: Option<(&str, &str, Option<&str>)>) {
        let got = parse_entry(line, "", Path::new("/mem")).map(|e| (e.title, e.rel_path, e.hook));
        let want = expect.map(|(t, r, h)| (t.to_string(), r.to_string(), h.map(str::to_string)));
        assert_eq!(got, want, "{line:?}");
    }

    #[test]
    fn an_entry_is_one_line_whatever_its_title_and_hook_hold() {
        let line = render_entry("Deploy\nnotes", "x.md", Scope::Private, Some("ok\n- [X](y.md) — injected\r\u{2028}end"));
        assert_eq!(line, "- [Deploy notes](x.md) — ok - [X](y.md) — injected  end");
        assert!(!line.contains(['\n', '\r']));
        assert_eq!(render_entry("Plain", "a b.md", Scope::Private, None), "- [Plain](a%20b.md)");
    }

    #[test]
    fn entries_are_parsed_liberally() {
        check_entry("- [Prefers tabs](prefers_tabs.md) — use tabs", Some(("Prefers tabs", "prefers_tabs.md", Some("use tabs"))));
        check_entry("- [T](a.md) - hyphen hook", Some(("T", "a.md", Some("hyphen hook"))));
        check_entry("- [T](a.md): colon hook", Some(("T", "a.md", Some("colon hook"))));
        check_entry("- [T](a.md)", Some(("T", "a.md", None)));
        check_entry("* see [x](./sub/b.md) for more", Some(("x", "sub/b.md", Some("for more"))));
        check_entry("- [Spaces](my notes.md) — raw spaces", Some(("Spaces", "my notes.md", Some("raw spaces"))));
        check_entry("- [Enc](my%20notes.md)", Some(("Enc", "my notes.md", None)));
        check_entry("- [Angle](<my notes.md>) — x", Some(("Angle", "my notes.md", Some("x"))));
        check_entry("- [Paren](a (1).md)", Some(("Paren", "a (1).md", None)));
        check_entry("- [Titled](a.md \"Tooltip\")", Some(("Titled", "a.md", None)));
        check_entry("- [Frag](a.md#section)", Some(("Frag", "a.md", None)));
        check_entry("- [Emoji 😀](😀.md) — ü", Some(("Emoji 😀", "😀.md", Some("ü"))));
        check_entry("- [Nested [x]](n.md)", Some(("Nested [x]", "n.md", None)));
        check_entry("- [Esc \\]](e.md)", Some(("Esc \\]", "e.md", None)));
        check_entry("- [Abs](/mem/team/t.md)", Some(("Abs", "team/t.md", None)));
        check_entry("- [web](https://x.org/a.md) then [b](b.md)", Some(("b", "b.md", None)));
        check_entry("- [out](../escape.md)", None);
        check_entry("- [abs](/etc/x.md)", None);
        check_entry("- [txt](a.txt)", None);
        check_entry("# Heading", None);
        check_entry("plain text ](", None);
    }

    #[test]
    fn a_rendered_entry_parses_back_to_its_own_file_whatever_the_title_holds() {
        // A title holding `](…)` once parsed as a link to that text's target: the memory read
        // as unindexed and its line as another file's.
        let titles = [
            "See [docs](docs.md) first",
            "](x.md)",
            "a\\](b.md)",
            "back\\slash\\",
            "\\",
            "[[open",
            "close]]",
            "[a](<b.md>) and [c](d.md)",
            "\\[x\\](y.md)",
            "ends with ](",
        ];
        for title in titles {
            for (scope, rel) in [(Scope::Private, "see-docs.md"), (Scope::Team, "team/a b.md")] {
                let line = render_entry(title, rel, scope, Some("d"));
                let e = parse_entry(&line, scope.dir(), Path::new("/m")).unwrap_or_else(|| panic!("{line:?}"));
                assert_eq!(e.rel_path, rel, "{line:?}");
                assert_eq!(unescape_title(&e.title), title, "{line:?}");
                assert_eq!(e.hook.as_deref(), Some("d"), "{line:?}");
                assert_eq!(&line[e.spans.title.0..e.spans.title.1], e.title);
            }
        }
        // An escaped backslash before `]` leaves the bracket real.
        check_entry("- [a\\\\](b.md)", Some(("a\\\\", "b.md", None)));
        check_entry("- [a \\](x.md) b](c.md)", Some(("a \\](x.md) b", "c.md", None)));
    }

    fn commented(content: &str) -> Vec<usize> {
        let doc = IndexDoc::parse(content);
        commented_lines(&doc.lines).iter().enumerate().filter(|(_, c)| **c).map(|(i, _)| i + 1).collect()
    }

    #[test]
    fn lines_inside_html_comments_hold_no_entry() {
        let index = "<!-- archived\n- [Deploy](deploy.md) — old\n- [Gone](gone.md)\n-->\n- [Deploy](deploy.md) — current\n";
        let live: Vec<(usize, String)> =
            parse_index(index, Scope::Private, Path::new("/m")).into_iter().filter_map(|l| Some((l.number, l.entry?.rel_path))).collect();
        assert_eq!(live, [(5, "deploy.md".to_string())]);
        let doc = IndexDoc::parse(index);
        assert_eq!(doc.entries(Scope::Private, Path::new("/m")).into_iter().map(|(i, _)| i).collect::<Vec<_>>(), [4]);

        assert_eq!(commented("<!-- one line - [a](a.md) -->\n- [b](b.md)\n"), [1]);
        assert_eq!(commented("   <!--\n- [a](a.md)\n  -->  \n"), [1, 2, 3]);
        // What follows the comment on its last line is kept, as Claude Code keeps it.
        assert_eq!(commented("<!--\n- [a](a.md)\n--> - [b](b.md)\n"), [1, 2]);
        assert_eq!(commented("<!-- x --> - [a](a.md)\n"), Vec::<usize>::new());
        // Not a comment block: indented code, mid-line, unclosed, inside a fence, `<!-->`.
        assert_eq!(commented("    <!--\n- [a](a.md)\n-->\n"), Vec::<usize>::new());
        assert_eq!(commented("text <!--\n- [a](a.md)\n-->\n"), Vec::<usize>::new());
        assert_eq!(commented("<!--\n- [a](a.md)\n"), Vec::<usize>::new());
        assert_eq!(commented("```\n<!--\n```\n- [a](a.md)\n-->\n"), Vec::<usize>::new());
        // marked ends the block at `<!-->` on its own line, and as no `<!-- … -->` span lies in
        // it, the stripping keeps it whole: nothing is hidden.
        assert_eq!(commented("<!-->\n- [a](a.md)\n-->\n"), Vec::<usize>::new());
        // A `<!--` inside a list item opens no top-level block: nothing after it is hidden.
        assert_eq!(commented("- [a](a.md) — x\n  <!-- old\n- [b](b.md)\n-->\n"), Vec::<usize>::new());
        assert_eq!(commented("\u{FEFF}<!--\n- [a](a.md)\n-->\n- [b](b.md)\n"), [1, 2, 3]);
        // CRLF lines and two blocks.
        assert_eq!(commented("<!--\r\n- [a](a.md)\r\n-->\r\n- [b](b.md)\r\n<!-- c -->\r\n"), [1, 2, 3, 5]);
    }

    #[test]
    fn team_index_targets_are_relative_to_team() {
        let e = parse_entry("- [t](t.md)", "team", Path::new("/m")).unwrap();
        assert_eq!(e.rel_path, "team/t.md");
        let e = parse_entry("- [p](../p.md)", "team", Path::new("/m")).unwrap();
        assert_eq!(e.rel_path, "p.md");
    }

    #[test]
    fn spans_point_into_the_line() {
        let line = "- [Title](a%20b.md) — the hook ";
        let e = parse_entry(line, "", Path::new("/m")).unwrap();
        assert_eq!(&line[e.spans.title.0..e.spans.title.1], "Title");
        assert_eq!(&line[e.spans.target.0..e.spans.target.1], "a%20b.md");
        let h = e.spans.hook.unwrap();
        assert_eq!(&line[h.0..h.1], "the hook");
    }

    #[test]
    fn docs_round_trip_exactly() {
        for s in ["", "\n", "a", "a\n", "a\r\nb", "a\r\nb\r\n", "a\n\n\n", "x\ry\n", "\r\n\r\n", "mixed\r\nend\n"] {
            assert_eq!(IndexDoc::parse(s).render(), s, "{s:?}");
        }
    }

    #[test]
    fn a_lone_cr_ends_a_line_in_every_release() {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        let (old, new) = (behaviours(ClaudeVersion::new(2, 1, 283)), behaviours(ClaudeVersion::new(2, 1, 284)));
        let index = "# M\r- [A](a.md)\r\n- [B](b.md)\r- [C](c.md)\n\r";
        let targets = |release: &Profile| -> Vec<(usize, String)> {
            parse_index_as(index, Scope::Private, Path::new("/m"), release).into_iter().filter_map(|l| Some((l.number, l.entry?.rel_path))).collect()
        };
        assert_eq!(targets(&new), [(2, "a.md".to_string()), (3, "b.md".into()), (4, "c.md".into())]);
        assert_eq!(targets(&old), targets(&new));
        for s in ["", "\r", "a\rb", "a\rb\r", "a\r\rb\r\n\r", "x\ry\n", "\r\n\r"] {
            for release in [&old, &new] {
                assert_eq!(IndexDoc::parse_as(s, release).render_as(s, release), s, "{s:?}");
            }
        }
        // New lines end as most lines do; lines kept keep their own ends.
        let mut doc = IndexDoc::parse_as(index, &new);
        doc.append("- [D](d.md)".into());
        doc.remove(&[2]);
        assert_eq!(doc.render_as(index, &new), "# M\r- [A](a.md)\r\n- [C](c.md)\n- [D](d.md)\r\r");
    }

    fn check_append(before: &str, after: &str) {
        let mut d = IndexDoc::parse(before);
        d.append("- new".into());
        assert_eq!(d.render(), after, "{before:?}");
    }

    #[test]
    fn append_keeps_newline_discipline() {
        check_append("", "- new\n");
        check_append("- a\n", "- a\n- new\n");
        check_append("- a", "- a\n- new");
        check_append("- a\n\n\n", "- a\n- new\n\n\n");
        check_append("- a\r\n- b\r\n", "- a\r\n- b\r\n- new\r\n");
        check_append("\n\n", "- new\n\n\n");
    }

    #[test]
    fn targets_are_encoded_only_where_markdown_needs_it() {
        assert_eq!(encode_target("my notes (old).md"), "my%20notes%20%28old%29.md");
        assert_eq!(encode_target("café 😀.md"), "café%20😀.md");
        let line = render_entry("A [b]", "team/x y.md", Scope::Team, Some("hook"));
        assert_eq!(line, "- [A \\[b\\]](x%20y.md) — hook");
        let e = parse_entry(&line, "team", Path::new("/m")).unwrap();
        assert_eq!(e.rel_path, "team/x y.md");
        assert_eq!(unescape_title(&e.title), "A [b]");
    }

    #[test]
    fn percent_decoding_is_forgiving() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz"), "%zz");
        assert_eq!(percent_decode("caf%C3%A9"), "café");
        assert_eq!(percent_decode("%FF"), "%FF");
    }
}
