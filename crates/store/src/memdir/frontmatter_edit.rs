//! Writing frontmatter without disturbing what Mneme does not own.
//!
//! Claude Code stamps keys of its own into memory files (`originSessionId`, `created`,
//! `last_read`, …) and files come in two generations (top-level `type:` or
//! `metadata: { type: }`). Re-serializing the YAML would reorder keys, change quoting and drop
//! comments, so field edits are minimal textual edits of the `key: value` lines instead; the
//! result is then parsed again and compared with the original, and any edit that would
//! change an untouched key, the generation or the body is refused rather than written.

use mneme_core::frontmatter::{self, Generation};
use mneme_core::MemoryType;
use regex::Regex;
use std::sync::LazyLock;
use yaml_serde::Value;

/// The same pattern as Claude Code's `FRONTMATTER_REGEX` (and mneme-core's parser), used
/// here for the byte offsets of the YAML region.
static FRONTMATTER: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"^---\s*\n((?s:.*?))---\s*\n?").expect("frontmatter regex"));

/// The frontmatter fields and body a caller wants changed; `None` leaves a part alone.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Changes<'a> {
    /// New `name:`.
    pub name: Option<&'a str>,
    /// New `description:`.
    pub description: Option<&'a str>,
    /// New type, in the file's generation.
    pub memory_type: Option<MemoryType>,
    /// New text after the frontmatter.
    pub body: Option<&'a str>,
}

impl Changes<'_> {
    fn touches_fields(&self) -> bool {
        self.name.is_some() || self.description.is_some() || self.memory_type.is_some()
    }
}

/// Why an edit was not made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Refusal {
    /// The existing YAML does not parse.
    Malformed(String),
    /// The edit would disturb something else.
    NotEditable(String),
}

/// A value as YAML: plain when that reads back as the same string in every YAML reader
/// involved (Claude Code's, Claude Code's quoting retry, yaml_serde), double-quoted
/// otherwise.
pub(crate) fn render_scalar(v: &str) -> String {
    if plain_is_safe(v) {
        v.to_string()
    } else {
        double_quote(v)
    }
}

fn plain_is_safe(v: &str) -> bool {
    const SPECIAL_WORDS: [&str; 11] = ["true", "false", "yes", "no", "on", "off", "null", "y", "n", "~", ""];
    let Some(first) = v.chars().next() else { return false };
    if v != v.trim() || "-?:,[]{}#&*!|>'\"%@`".contains(first) || v.ends_with(':') {
        return false;
    }
    // Claude Code's quoting retry treats these as special; `---` would end the frontmatter
    // wherever it appears, because Claude Code finds the closing fence by text.
    if v.contains(": ") || v.contains(" #") || v.contains("---") || v.contains(['{', '}', '[', ']', '*', '&', '#', '!', '|', '>', '%', '@', '`']) {
        return false;
    }
    if v.chars().any(must_escape) {
        return false;
    }
    if SPECIAL_WORDS.contains(&v.to_ascii_lowercase().as_str()) {
        return false;
    }
    // Anything number-like (`42`, `0x1F`, `.inf`, `1e3`, dates): YAML readers disagree on
    // which of these resolve to numbers or timestamps, so quote them all.
    if v.starts_with(|c: char| c.is_ascii_digit() || c == '+' || c == '.') && !v.contains(' ') {
        return false;
    }
    // Numbers, dates and anything else a resolver could turn into a non-string.
    matches!(yaml_serde::from_str::<Value>(v), Ok(Value::String(s)) if s == v)
}

/// Characters a YAML scalar may not hold as they are: controls and the two non-characters
/// outside YAML's printable set (U+FFFE, U+FFFF; readers refuse them), and the byte-order mark
/// and line separators some readers take as breaks.
fn must_escape(c: char) -> bool {
    c.is_control() || matches!(c, '\u{FEFF}' | '\u{2028}' | '\u{2029}' | '\u{FFFE}' | '\u{FFFF}')
}

/// A YAML double-quoted scalar. Every third dash of a run is written `\x2D`, so the text
/// never contains `---` (see [`plain_is_safe`]).
fn double_quote(v: &str) -> String {
    let mut out = String::with_capacity(v.len() + 2);
    out.push('"');
    let mut dashes = 0;
    for c in v.chars() {
        match c {
            '-' if dashes >= 2 => {
                out.push_str("\\x2D");
                dashes = 0;
                continue;
            }
            '-' => {
                out.push('-');
                dashes += 1;
                continue;
            }
            '\\' => out.push_str("\\\\"),
            '"' => out.push_str("\\\""),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x100 && (c.is_control()) => out.push_str(&format!("\\x{:02X}", c as u32)),
            c if must_escape(c) => {
                out.push_str(&format!("\\u{:04X}", c as u32))
            }
            c => out.push(c),
        }
        dashes = 0;
    }
    out.push('"');
    out
}

/// A new memory: `---\nname: …\ndescription: …\nmetadata:\n  type: …\n---\n\n<body>\n`, or with a
/// top-level `type: …` when `form` is [`Generation::TopLevelType`] (what releases before 2.1.139
/// read; see [`Generation::written_by`]).
pub fn new_memory_content(name: &str, description: &str, memory_type: Option<MemoryType>, body: &str, form: Generation) -> String {
    let mut s = String::with_capacity(64 + name.len() + description.len() + body.len());
    s.push_str("---\nname: ");
    s.push_str(&render_scalar(name));
    s.push_str("\ndescription: ");
    s.push_str(&render_scalar(description));
    s.push('\n');
    if let Some(t) = memory_type {
        s.push_str(if form == Generation::TopLevelType { "type: " } else { "metadata:\n  type: " });
        s.push_str(t.as_str());
        s.push('\n');
    }
    s.push_str("---\n");
    let body = body.replace("\r\n", "\n");
    let body = body.trim_matches('\n');
    if !body.is_empty() {
        s.push('\n');
        s.push_str(body);
        s.push('\n');
    }
    s
}

/// `content` with a new `description:` and/or a new body, by minimal textual edits verified
/// by re-parsing (the rest of the front matter stays as written); `None` when the file cannot
/// be edited that way (a block that does not parse), so the caller can keep it as it is.
pub fn edited_content(content: &str, description: Option<&str>, body: Option<&str>, form: Generation) -> Option<String> {
    apply(content, &Changes { description, body, ..Default::default() }, form).ok()
}

/// Applies `ch` to `content` with minimal textual edits, verified by re-parsing. A file that
/// has no type yet gains one in `form`; a typed file keeps its own generation.
pub(crate) fn apply(content: &str, ch: &Changes<'_>, form: Generation) -> Result<String, Refusal> {
    // Claude Code's memory scan reads the block after a byte-order mark (an editor on Windows
    // writes one), so the edit goes after it too, and the mark stays.
    if let Some(rest) = content.strip_prefix('\u{feff}') {
        return apply(rest, ch, form).map(|new| format!("\u{feff}{new}"));
    }
    let before = frontmatter::parse(content);
    if let Some(e) = before.frontmatter.as_ref().and_then(|f| f.error.as_ref()) {
        return Err(Refusal::Malformed(e.to_string()));
    }
    let new = match FRONTMATTER.captures(content) {
        None => add_block(content, ch, form),
        Some(caps) => {
            let yaml = caps.get(1).map_or(0..0, |m| m.range());
            let generation = before.frontmatter.as_ref().map_or(Generation::Untyped, |f| f.generation());
            let has_top_type = before.frontmatter.as_ref().is_some_and(|f| f.get("type").is_some());
            edit_block(content, yaml, generation, has_top_type, ch, form)?
        }
    };
    verify(content, &new, ch)?;
    Ok(new)
}

/// The dominant line ending of `s`: CRLF when its first line ends in one.
fn eol_of_text(s: &str) -> &'static str {
    match s.find('\n') {
        Some(i) if i > 0 && s.as_bytes()[i - 1] == b'\r' => "\r\n",
        _ => "\n",
    }
}

/// Converts a body to the file's line ending, ending it with one line break.
fn body_text(body: &str, eol: &str) -> String {
    let lf = body.replace("\r\n", "\n");
    let trimmed = lf.trim_end_matches('\n');
    if trimmed.is_empty() {
        return String::new();
    }
    let mut out = if eol == "\n" { trimmed.to_string() } else { trimmed.replace('\n', eol) };
    out.push_str(eol);
    out
}

/// A file without frontmatter gains a block holding just the requested fields.
fn add_block(content: &str, ch: &Changes<'_>, form: Generation) -> String {
    let eol = eol_of_text(content);
    let rest = match ch.body {
        Some(b) => body_text(b, eol),
        None => content.to_string(),
    };
    if !ch.touches_fields() {
        return rest;
    }
    let mut s = format!("---{eol}");
    if let Some(n) = ch.name {
        s.push_str(&format!("name: {}{eol}", render_scalar(n)));
    }
    if let Some(d) = ch.description {
        s.push_str(&format!("description: {}{eol}", render_scalar(d)));
    }
    match ch.memory_type {
        Some(t) if form == Generation::TopLevelType => s.push_str(&format!("type: {t}{eol}")),
        Some(t) => s.push_str(&format!("metadata:{eol}  type: {t}{eol}")),
        None => {}
    }
    s.push_str(&format!("---{eol}"));
    if !rest.is_empty() && !rest.starts_with('\n') && !rest.starts_with("\r\n") {
        s.push_str(eol);
    }
    s.push_str(&rest);
    s
}

fn line_body(line: &str) -> &str {
    line.trim_end_matches('\n').trim_end_matches('\r')
}

fn line_eol(line: &str) -> &str {
    &line[line_body(line).len()..]
}

/// The key of a top-level `key: value` line.
fn top_key(line: &str) -> Option<&str> {
    let b = line_body(line);
    if b.is_empty() || b.starts_with([' ', '\t', '#', '-']) {
        return None;
    }
    let mut from = 0;
    while let Some(i) = b[from..].find(':') {
        let at = from + i;
        match b[at + 1..].chars().next() {
            None | Some(' ') | Some('\t') => return Some(&b[..at]),
            _ => from = at + 1,
        }
    }
    None
}

/// The value text after `key:` on a line, without surrounding whitespace.
fn inline_value(line: &str) -> &str {
    let b = line_body(line);
    match b.find(':') {
        Some(i) => b[i + 1..].trim(),
        None => "",
    }
}

/// The exclusive end of the lines belonging to the key on line `i`: indented continuation
/// lines, blank lines inside the value, and a compact `- item` list when the value starts on
/// the next line. Trailing blank lines stay outside.
fn span_end(lines: &[String], i: usize) -> usize {
    let value = inline_value(&lines[i]);
    let block_below = value.is_empty() || value.starts_with('#');
    let mut j = i + 1;
    while j < lines.len() {
        let b = line_body(&lines[j]);
        let continues = b.trim().is_empty() || b.starts_with([' ', '\t']) || (block_below && (b == "-" || b.starts_with("- ")));
        if !continues {
            break;
        }
        j += 1;
    }
    while j > i + 1 && line_body(&lines[j - 1]).trim().is_empty() {
        j -= 1;
    }
    j
}

fn find_top(lines: &[String], key: &str) -> Option<usize> {
    lines.iter().position(|l| top_key(l) == Some(key))
}

/// Sets a top-level key, replacing its whole value span, or inserts it at `insert_at`.
fn set_top(lines: &mut Vec<String>, key: &str, rendered: &str, eol: &str, insert_at: usize) {
    match find_top(lines, key) {
        Some(i) => {
            let end = span_end(lines, i);
            let ending = line_eol(&lines[end - 1]).to_string();
            lines.splice(i..end, [format!("{key}: {rendered}{ending}")]);
        }
        None => lines.insert(insert_at.min(lines.len()), format!("{key}: {rendered}{eol}")),
    }
}

/// Sets `metadata.type`, editing the `type:` child in place or adding one; adds a
/// `metadata:` block at the end when there is none.
fn set_metadata_type(lines: &mut Vec<String>, t: MemoryType, eol: &str) -> Result<(), Refusal> {
    let Some(m) = find_top(lines, "metadata") else {
        if lines.last().is_some_and(|l| line_eol(l).is_empty()) {
            return Err(Refusal::NotEditable("the frontmatter's last line has no line break".into()));
        }
        lines.push(format!("metadata:{eol}"));
        lines.push(format!("  type: {t}{eol}"));
        return Ok(());
    };
    let value = inline_value(&lines[m]);
    if !value.is_empty() && !value.starts_with('#') {
        return Err(Refusal::NotEditable("`metadata:` is written on one line".into()));
    }
    let end = span_end(lines, m);
    let indent = lines[m + 1..end]
        .iter()
        .map(|l| line_body(l))
        .find(|b| !b.trim().is_empty())
        .map(|b| b[..b.len() - b.trim_start().len()].to_string())
        .unwrap_or_else(|| "  ".to_string());
    for line in lines.iter_mut().take(end).skip(m + 1) {
        let b = line_body(line);
        if b.len() > indent.len() && b.starts_with(indent.as_str()) && top_key(&b[indent.len()..]) == Some("type") {
            let ending = line_eol(line).to_string();
            *line = format!("{indent}type: {t}{ending}");
            return Ok(());
        }
    }
    lines.insert(m + 1, format!("{indent}type: {t}{eol}"));
    Ok(())
}

fn edit_block(
    content: &str,
    yaml: std::ops::Range<usize>,
    generation: Generation,
    has_top_type: bool,
    ch: &Changes<'_>,
    form: Generation,
) -> Result<String, Refusal> {
    let eol = eol_of_text(content);
    let mut lines: Vec<String> = content[yaml.clone()].split_inclusive('\n').map(str::to_string).collect();
    if let Some(n) = ch.name {
        set_top(&mut lines, "name", &render_scalar(n), eol, 0);
    }
    if let Some(d) = ch.description {
        let after_name = find_top(&lines, "name").map_or(0, |i| span_end(&lines, i));
        set_top(&mut lines, "description", &render_scalar(d), eol, after_name);
    }
    if let Some(t) = ch.memory_type {
        let end = lines.len();
        match generation {
            // The file keeps the generation it already uses.
            Generation::TopLevelType => set_top(&mut lines, "type", t.as_str(), eol, end),
            Generation::Metadata => {
                set_metadata_type(&mut lines, t, eol)?;
                if has_top_type {
                    set_top(&mut lines, "type", t.as_str(), eol, end);
                }
            }
            Generation::Untyped | Generation::None if form == Generation::TopLevelType => {
                set_top(&mut lines, "type", t.as_str(), eol, end)
            }
            Generation::Untyped | Generation::None => set_metadata_type(&mut lines, t, eol)?,
        }
    }
    // The closing fence's line ends the head; the body follows.
    let fence_end = yaml.end + 3;
    let head_end = content[fence_end..].find('\n').map_or(content.len(), |i| fence_end + i + 1);
    let mut out = String::with_capacity(content.len() + 64);
    out.push_str(&content[..yaml.start]);
    for l in &lines {
        out.push_str(l);
    }
    out.push_str(&content[yaml.end..head_end]);
    match ch.body {
        None => out.push_str(&content[head_end..]),
        Some(b) => {
            let old_after = &content[head_end..];
            let body = body_text(b, eol);
            let blank_first = old_after.is_empty() || old_after.starts_with('\n') || old_after.starts_with("\r\n");
            if head_end == content.len() && !content.ends_with('\n') && !body.is_empty() {
                out.push_str(eol);
            }
            if blank_first && !body.is_empty() {
                out.push_str(eol);
            }
            out.push_str(&body);
        }
    }
    Ok(out)
}

/// Re-parses the edited text and checks that exactly the requested parts changed.
fn verify(old: &str, new: &str, ch: &Changes<'_>) -> Result<(), Refusal> {
    let refuse = |what: &str| Err(Refusal::NotEditable(what.to_string()));
    let before = frontmatter::parse(old);
    let after = frontmatter::parse(new);
    let (bf, af) = (before.frontmatter.as_ref(), after.frontmatter.as_ref());
    if let Some(a) = af {
        if a.error.is_some() {
            return refuse("the edited frontmatter would not parse");
        }
    } else if ch.touches_fields() || bf.is_some() {
        return refuse("the edited file would lose its frontmatter");
    }
    let str_of = |f: Option<&frontmatter::Frontmatter>, k: &str| f.and_then(|f| f.get(k)).cloned();
    let want_str = |v: &str| Some(Value::String(v.to_string()));
    match ch.name {
        Some(n) if str_of(af, "name") != want_str(n) => return refuse("the name would not read back as written"),
        None if str_of(af, "name") != str_of(bf, "name") => return refuse("the name would change"),
        _ => {}
    }
    match ch.description {
        Some(d) if str_of(af, "description") != want_str(d) => {
            return refuse("the description would not read back as written")
        }
        None if str_of(af, "description") != str_of(bf, "description") => return refuse("the description would change"),
        _ => {}
    }
    let type_of = |f: Option<&frontmatter::Frontmatter>| f.and_then(|f| f.memory_type());
    match ch.memory_type {
        Some(t) if type_of(af) != Some(t) => return refuse("the type would not read back as written"),
        None if type_of(af) != type_of(bf) => return refuse("the type would change"),
        _ => {}
    }
    let gen = |f: Option<&frontmatter::Frontmatter>| f.map_or(Generation::None, |f| f.generation());
    match (gen(bf), gen(af)) {
        (Generation::TopLevelType, g) | (Generation::Metadata, g) if g != gen(bf) => {
            return refuse("the file would switch frontmatter generation")
        }
        _ => {}
    }
    let unknown = |f: Option<&frontmatter::Frontmatter>| f.map(|f| f.unknown_keys()).unwrap_or_default();
    if unknown(bf) != unknown(af) {
        return refuse("other frontmatter keys would change order or disappear");
    }
    for k in unknown(bf) {
        if str_of(bf, &k) != str_of(af, &k) {
            return refuse(&format!("the value of `{k}` would change"));
        }
    }
    let meta_rest = |f: Option<&frontmatter::Frontmatter>| -> Vec<(Value, Value)> {
        match f.and_then(|f| f.get("metadata")) {
            Some(Value::Mapping(m)) => {
                m.iter().filter(|(k, _)| k.as_str() != Some("type")).map(|(k, v)| (k.clone(), v.clone())).collect()
            }
            _ => Vec::new(),
        }
    };
    if meta_rest(bf) != meta_rest(af) {
        return refuse("other `metadata` keys would change");
    }
    match ch.body {
        // The fence pattern's trailing `\s*` swallows whitespace at the body's start, so a
        // block added in front of a body starting with a blank line parses one shorter.
        None if before.body.trim_start() != after.body.trim_start() => refuse("the body would change"),
        Some(b) if after.body.replace("\r\n", "\n").trim_matches('\n') != b.replace("\r\n", "\n").trim_matches('\n') => {
            refuse("the body would not read back as written")
        }
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_scalar(v: &str, expect: &str) {
        let r = render_scalar(v);
        assert_eq!(r, expect, "{v:?}");
        let text = format!("---\nname: {r}\n---\n");
        let p = frontmatter::parse(&text);
        let fm = p.frontmatter.unwrap();
        assert!(fm.error.is_none(), "{r}");
        assert_eq!(fm.get("name"), Some(&Value::String(v.to_string())), "{r}");
        // The whole value stays inside the block: Claude Code finds the fence by text.
        assert_eq!(fm.block_len, text.len(), "{r}");
    }

    #[test]
    fn scalars_are_quoted_only_when_needed() {
        check_scalar("prefers tabs", "prefers tabs");
        check_scalar("Café 😀 ünïcödé", "Café 😀 ünïcödé");
        check_scalar("use `cargo`: always", "\"use `cargo`: always\"");
        check_scalar("a: b", "\"a: b\"");
        check_scalar("- item", "\"- item\"");
        check_scalar("true", "\"true\"");
        check_scalar("Yes", "\"Yes\"");
        check_scalar("42", "\"42\"");
        check_scalar("1.5e3", "\"1.5e3\"");
        check_scalar("0x1F", "\"0x1F\"");
        check_scalar("~", "\"~\"");
        check_scalar(" padded ", "\" padded \"");
        check_scalar("quote \" and \\", "quote \" and \\");
        check_scalar("\"leading quote", "\"\\\"leading quote\"");
        check_scalar("n", "\"n\"");
        check_scalar("has # hash", "\"has # hash\"");
        check_scalar("a --- b", "\"a --\\x2D b\"");
        check_scalar("-----", "\"--\\x2D--\"");
        check_scalar("tab\there", "\"tab\\there\"");
        check_scalar("bell\u{7}", "\"bell\\x07\"");
        // Outside YAML's printable set: a reader refuses them written as they are (found by
        // the hostile-input round trip).
        check_scalar("\u{FFFE}", "\"\\uFFFE\"");
        check_scalar("x\u{FFFF}y", "\"x\\uFFFFy\"");
        check_scalar("[x]", "\"[x]\"");
        check_scalar("@mention", "\"@mention\"");
        check_scalar("ends:", "\"ends:\"");
        check_scalar(&"n".repeat(250), &"n".repeat(250));
    }

    #[test]
    fn new_memories_use_the_form_asked_for() {
        assert_eq!(
            new_memory_content("Prefers tabs", "Use tabs: always", Some(MemoryType::Feedback), "Tabs.\n\n**Why:** x\n\n", Generation::Metadata),
            "---\nname: Prefers tabs\ndescription: \"Use tabs: always\"\nmetadata:\n  type: feedback\n---\n\nTabs.\n\n**Why:** x\n"
        );
        assert_eq!(
            new_memory_content("Prefers tabs", "Use tabs", Some(MemoryType::Feedback), "Tabs.", Generation::TopLevelType),
            "---\nname: Prefers tabs\ndescription: Use tabs\ntype: feedback\n---\n\nTabs.\n"
        );
        for form in [Generation::Metadata, Generation::TopLevelType] {
            assert_eq!(new_memory_content("a", "b", None, "", form), "---\nname: a\ndescription: b\n---\n");
            // Each form reads back as the type it was written with, in the generation asked for.
            let text = new_memory_content("a", "b", Some(MemoryType::Project), "x", form);
            let fm = frontmatter::parse(&text).frontmatter.expect("a block");
            assert_eq!((fm.memory_type(), fm.generation()), (Some(MemoryType::Project), form));
        }
    }

    fn check_edit(before: &str, ch: Changes<'_>, expect: Result<&str, &str>) {
        check_edit_as(before, ch, Generation::Metadata, expect)
    }

    fn check_edit_as(before: &str, ch: Changes<'_>, form: Generation, expect: Result<&str, &str>) {
        match (apply(before, &ch, form), expect) {
            (Ok(got), Ok(want)) => assert_eq!(got, want, "\nbefore: {before:?}"),
            (Err(Refusal::NotEditable(r)) | Err(Refusal::Malformed(r)), Err(want)) => {
                assert!(r.contains(want), "{before:?}: {r:?} lacks {want:?}")
            }
            (got, want) => panic!("{before:?}: got {got:?}, want {want:?}"),
        }
    }

    fn desc(d: &str) -> Changes<'_> {
        Changes { description: Some(d), ..Changes::default() }
    }

    fn ty(t: MemoryType) -> Changes<'static> {
        Changes { memory_type: Some(t), ..Changes::default() }
    }

    #[test]
    fn edits_keep_unknown_keys_byte_for_byte() {
        check_edit(
            "---\nname: a\noriginSessionId: 0f9e-uuid\ndescription: old\ncreated: 2026-01-01\nlast_read: \"2026-02-02\" # stamp\n---\n\nbody\n",
            desc("new one"),
            Ok("---\nname: a\noriginSessionId: 0f9e-uuid\ndescription: new one\ncreated: 2026-01-01\nlast_read: \"2026-02-02\" # stamp\n---\n\nbody\n"),
        );
    }

    #[test]
    fn top_level_type_stays_top_level() {
        check_edit(
            "---\nname: a\ndescription: d\ntype: user\n---\nbody",
            ty(MemoryType::Project),
            Ok("---\nname: a\ndescription: d\ntype: project\n---\nbody"),
        );
    }

    #[test]
    fn metadata_type_is_edited_in_place() {
        check_edit(
            "---\nname: a\nmetadata:\n    type: user\n    owner: me\n---\n",
            ty(MemoryType::Reference),
            Ok("---\nname: a\nmetadata:\n    type: reference\n    owner: me\n---\n"),
        );
        check_edit(
            "---\nname: a\nmetadata:\n  owner: me\n---\n",
            ty(MemoryType::User),
            Ok("---\nname: a\nmetadata:\n  type: user\n  owner: me\n---\n"),
        );
    }

    #[test]
    fn untyped_files_gain_the_current_generation() {
        check_edit(
            "---\nname: a\ndescription: d\n---\nbody\n",
            ty(MemoryType::Feedback),
            Ok("---\nname: a\ndescription: d\nmetadata:\n  type: feedback\n---\nbody\n"),
        );
    }

    #[test]
    fn untyped_files_gain_a_top_level_type_for_older_releases() {
        check_edit_as(
            "---\nname: a\ndescription: d\n---\nbody\n",
            ty(MemoryType::Feedback),
            Generation::TopLevelType,
            Ok("---\nname: a\ndescription: d\ntype: feedback\n---\nbody\n"),
        );
        check_edit_as("just text\n", ty(MemoryType::User), Generation::TopLevelType, Ok("---\ntype: user\n---\n\njust text\n"));
        // A block whose last line runs into the closing fence cannot take a line after it.
        for form in [Generation::TopLevelType, Generation::Metadata] {
            check_edit_as("---\nname: a---\nbody\n", ty(MemoryType::User), form, Err(""));
        }
        // A typed file keeps its generation whatever the release.
        check_edit_as(
            "---\nname: a\nmetadata:\n  type: user\n---\n",
            ty(MemoryType::Project),
            Generation::TopLevelType,
            Ok("---\nname: a\nmetadata:\n  type: project\n---\n"),
        );
        check_edit_as(
            "---\nname: a\ntype: user\n---\n",
            ty(MemoryType::Project),
            Generation::Metadata,
            Ok("---\nname: a\ntype: project\n---\n"),
        );
    }

    #[test]
    fn both_type_spellings_move_together_and_plain_files_gain_a_block() {
        check_edit(
            "---\ntype: user\nmetadata:\n  type: user\n---\n",
            ty(MemoryType::Project),
            Ok("---\ntype: project\nmetadata:\n  type: project\n---\n"),
        );
        check_edit("just text\n", ty(MemoryType::User), Ok("---\nmetadata:\n  type: user\n---\n\njust text\n"));
        check_edit("\nstarts blank\n", desc("d"), Ok("---\ndescription: d\n---\n\nstarts blank\n"));
    }

    #[test]
    fn missing_keys_are_inserted_after_name() {
        check_edit(
            "---\nname: a\noriginSessionId: s\n---\n",
            desc("d"),
            Ok("---\nname: a\ndescription: d\noriginSessionId: s\n---\n"),
        );
        check_edit(
            "---\noriginSessionId: s\n---\n",
            Changes { name: Some("nm"), description: Some("d"), ..Changes::default() },
            Ok("---\nname: nm\ndescription: d\noriginSessionId: s\n---\n"),
        );
    }

    #[test]
    fn multi_line_values_are_replaced_whole() {
        check_edit(
            "---\ndescription: >\n  folded\n  text\nname: a\n---\n",
            desc("one line"),
            Ok("---\ndescription: one line\nname: a\n---\n"),
        );
    }

    #[test]
    fn crlf_files_stay_crlf() {
        check_edit(
            "---\r\nname: a\r\ndescription: old\r\ntype: user\r\n---\r\n\r\nbody\r\n",
            Changes { description: Some("new"), body: Some("line 1\nline 2"), ..Changes::default() },
            Ok("---\r\nname: a\r\ndescription: new\r\ntype: user\r\n---\r\n\r\nline 1\r\nline 2\r\n"),
        );
        check_edit("body\r\nmore\r\n", desc("d"), Ok("---\r\ndescription: d\r\n---\r\n\r\nbody\r\nmore\r\n"));
    }

    #[test]
    fn body_edits_keep_the_head() {
        check_edit("---\nname: a\n---\n\nold\n", Changes { body: Some("new"), ..Changes::default() }, Ok("---\nname: a\n---\n\nnew\n"));
        check_edit("---\nname: a\n---\nold", Changes { body: Some("new\n\n"), ..Changes::default() }, Ok("---\nname: a\n---\nnew\n"));
        check_edit("---\nname: a\n---", Changes { body: Some("new"), ..Changes::default() }, Ok("---\nname: a\n---\n\nnew\n"));
        check_edit("plain", Changes { body: Some("new"), ..Changes::default() }, Ok("new\n"));
    }

    #[test]
    fn a_byte_order_mark_stays_and_the_block_after_it_is_edited() {
        let with_bom = "\u{feff}---\nname: deploy-rules\ndescription: how we deploy\ntype: project\n---\nOld body\n";
        check_edit(
            with_bom,
            Changes { body: Some("New body"), ..Changes::default() },
            Ok("\u{feff}---\nname: deploy-rules\ndescription: how we deploy\ntype: project\n---\nNew body\n"),
        );
        check_edit(with_bom, desc("to prod"), Ok("\u{feff}---\nname: deploy-rules\ndescription: to prod\ntype: project\n---\nOld body\n"));
        check_edit("\u{feff}plain\n", desc("d"), Ok("\u{feff}---\ndescription: d\n---\n\nplain\n"));
    }

    #[test]
    fn refusals() {
        check_edit("---\ndescription: [unclosed\n  - : :\n---\n", desc("x"), Err("malformed"));
        check_edit("---\nmetadata: {type: user}\n---\n", ty(MemoryType::Project), Err("one line"));
        // A quoted key is not recognised, so the edit would duplicate it, and the earlier key
        // would win as Claude Code reads the block; the check catches that.
        check_edit("---\n\"description\": old\n---\n", desc("x"), Err("would not read back as written"));
    }
}
