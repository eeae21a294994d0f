//! YAML as Claude Code's JavaScript reads a frontmatter block: `Bun.YAML.parse` in a Bun binary
//! (its 1.3 and 1.4 readings), the bundled `yaml` package in the releases that ran on Node.
//! The grammar comes from a YAML 1.2 parser's events (saphyr-parser); this module turns them
//! into the values JavaScript gets, which is where a YAML 1.1 reader such as libyaml goes
//! another way, and refuses what the runtime refuses:
//!
//! - plain scalars resolve by YAML 1.2's core schema: `08` and `017` are the numbers 8 and 17,
//!   `0o17` and `0x1F` are octal and hex, an integer past 64 bits is a double, `-0` is zero;
//! - in Bun a merge key (`<<: {…}`, `<<: *anchor`, `<<: [*a, *b]`) lends its mapping's entries
//!   to the mapping it sits in, under the entries written there; the `yaml` package keeps `<<`
//!   as an ordinary key;
//! - in Bun a repeated key keeps its last value, in the place of its first; the `yaml` package
//!   refuses it;
//! - keys become property names, as in a JavaScript object (`1`, `true` are text; a null key is
//!   `null` in Bun and the empty name in the `yaml` package);
//! - an unknown tag (`!note x`) makes text, `!!str` makes text, and the non-specific `!` makes
//!   even an empty value the empty text;
//! - tabs in indentation, by each runtime's rule ([`prescan`]).
//!
//! The expected values come from the real parsers (`crates/core/tests/js_yaml.rs`).

use crate::versions::YamlParser;
use saphyr_parser::{Event, Parser, ScalarStyle, Tag};
use std::borrow::Cow;
use std::collections::HashMap;
use yaml_serde::{Mapping, Number, Value};

/// Why a block did not parse, and on which line of it (1-based), when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct YamlError {
    pub line: Option<usize>,
    pub message: String,
}

/// The value of a whole block: the document's root, or, as Bun does, a list of the roots when
/// the block holds several documents (`null` when it holds none).
pub fn parse(yaml: &str, parser: YamlParser) -> Result<Value, YamlError> {
    let yaml = match parser {
        YamlParser::Bun1_3 => bun_1_3_values(yaml),
        YamlParser::Node | YamlParser::Bun1_4 => Cow::Borrowed(yaml),
    };
    let scan = prescan(&yaml, parser);
    if let Some((line, why)) = scan.refused {
        return Err(YamlError { line: Some(line), message: why.into() });
    }
    let mut events = Parser::new_from_str(&scan.text);
    let mut builder = Builder::new(parser);
    let mut docs: Vec<Value> = Vec::new();
    // How deep the deepest root nests: in a list of several roots, one level more.
    let mut deepest_root = 0;
    while let Some(next) = events.next_event() {
        let (event, span) = next.map_err(|e| YamlError { line: Some(e.marker().line()), message: e.info().to_string() })?;
        let at = |limit: Limit| YamlError { line: Some(span.start.line()), message: limit.to_string() };
        match event {
            Event::StreamStart | Event::StreamEnd | Event::Nothing => {}
            // A later document's anchors start afresh; what the aliases copied still counts.
            Event::DocumentStart(_) => builder = Builder { copied: std::mem::take(&mut builder.copied), ..Builder::new(parser) },
            Event::DocumentEnd => {
                docs.push(builder.root.take().unwrap_or(Value::Null));
                deepest_root = deepest_root.max(builder.root_height);
            }
            Event::Alias(id) => {
                let anchored = builder.anchors.get(&id).ok_or_else(|| YamlError {
                    line: None,
                    message: "an alias to an anchor that is not defined".into(),
                })?;
                let size = anchored.size;
                if builder.stack.len() + size.height > MAX_NESTING {
                    return Err(at(Limit::TooDeep));
                }
                builder.copied.charge(size).map_err(at)?;
                let value = anchored.value.clone();
                builder.add(value, size);
            }
            Event::Scalar(text, style, anchor, tag) => {
                let value = scalar(&text, style, tag.as_deref(), parser);
                let size = Size { nodes: 1, bytes: text.len(), height: 0 };
                if anchor > 0 {
                    builder.copied.charge(size).map_err(at)?;
                    builder.anchors.insert(anchor, Anchored { value: value.clone(), size });
                }
                builder.add(value, size);
            }
            Event::SequenceStart(anchor, _) => builder.open(Open::Sequence(Vec::new()), anchor).map_err(at)?,
            Event::MappingStart(anchor, _) => builder.open(Open::Mapping(Mapping::new(), None), anchor).map_err(at)?,
            Event::SequenceEnd | Event::MappingEnd => builder.close().map_err(at)?,
        }
        if let Some(key) = builder.repeated.take() {
            return Err(YamlError { line: None, message: format!("Map keys must be unique: {key}") });
        }
    }
    if docs.len() > 1 && deepest_root >= MAX_NESTING {
        return Err(YamlError { line: None, message: Limit::TooDeep.to_string() });
    }
    Ok(match docs.len() {
        0 => Value::Null,
        1 => docs.pop().unwrap_or(Value::Null),
        _ => Value::Sequence(docs),
    })
}

/// The most collections one value may nest in another. Claude Code's readers have no stated
/// limit (Bun's and the `yaml` package's run out of stack far deeper), but a value this deep
/// is no memory, and dropping, cloning, comparing or printing a `Value` recurses once per
/// level: at 50,000 levels dropping overflows a thread's 2 MiB stack, and an unoptimised
/// build clones 1,000 nested mappings only with more than 2 MiB. At 512 every one of those
/// has room to spare on such a thread. A block nesting deeper is refused as a parse error,
/// like any YAML the reader cannot take.
pub const MAX_NESTING: usize = 512;
/// The most values that anchors and aliases may copy in one block, and the most bytes of
/// scalar text, over all of them together. A few hundred bytes of anchors aliasing each other (`&a2 [*a1, *a1, …]`,
/// "billion laughs") would otherwise copy gigabytes; Bun refuses such a block as "Excessive
/// aliasing".
pub const MAX_ALIASED_NODES: usize = 1_000_000;
pub const MAX_ALIASED_BYTES: usize = 16 << 20;

/// A block past one of the builder's limits (the message is the parse error's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Limit {
    TooDeep,
    Aliasing,
}

impl std::fmt::Display for Limit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Limit::TooDeep => write!(f, "Exceeded the maximum nesting depth: collections nest more than {MAX_NESTING} levels"),
            Limit::Aliasing => write!(
                f,
                "Excessive aliasing: anchors and aliases would copy more than {MAX_ALIASED_NODES} values or {} MiB of text",
                MAX_ALIASED_BYTES >> 20
            ),
        }
    }
}

/// What a value holds: how many values (itself included), how many bytes of scalar text, and
/// how many collections deep it nests (0 for a scalar).
#[derive(Debug, Clone, Copy, Default)]
struct Size {
    nodes: usize,
    bytes: usize,
    height: usize,
}

/// What anchors and aliases have copied so far (an anchored value is kept as a copy, and each
/// alias copies it again).
#[derive(Default)]
struct Copied {
    nodes: usize,
    bytes: usize,
}

impl Copied {
    fn charge(&mut self, size: Size) -> Result<(), Limit> {
        self.nodes = self.nodes.saturating_add(size.nodes);
        self.bytes = self.bytes.saturating_add(size.bytes);
        if self.nodes > MAX_ALIASED_NODES || self.bytes > MAX_ALIASED_BYTES {
            return Err(Limit::Aliasing);
        }
        Ok(())
    }
}

struct Anchored {
    value: Value,
    size: Size,
}

enum Open {
    Sequence(Vec<Value>),
    /// The mapping so far and the key waiting for its value.
    Mapping(Mapping, Option<Value>),
}

struct Frame {
    open: Open,
    anchor: usize,
    /// What the collection holds so far, itself included.
    size: Size,
}

struct Builder {
    parser: YamlParser,
    stack: Vec<Frame>,
    anchors: HashMap<usize, Anchored>,
    root: Option<Value>,
    root_height: usize,
    /// A key written twice in one mapping, which the `yaml` package refuses.
    repeated: Option<String>,
    copied: Copied,
}

impl Builder {
    fn new(parser: YamlParser) -> Builder {
        Builder { parser, stack: Vec::new(), anchors: HashMap::new(), root: None, root_height: 0, repeated: None, copied: Copied::default() }
    }

    /// A collection starts; refused past [`MAX_NESTING`] levels, so that no value deeper is
    /// ever built.
    fn open(&mut self, open: Open, anchor: usize) -> Result<(), Limit> {
        if self.stack.len() >= MAX_NESTING {
            return Err(Limit::TooDeep);
        }
        self.stack.push(Frame { open, anchor, size: Size { nodes: 1, bytes: 0, height: 1 } });
        Ok(())
    }

    fn close(&mut self) -> Result<(), Limit> {
        let Some(Frame { open, anchor, size }) = self.stack.pop() else { return Ok(()) };
        let value = match open {
            Open::Sequence(items) => Value::Sequence(items),
            Open::Mapping(map, _) => Value::Mapping(map),
        };
        if anchor > 0 {
            self.copied.charge(size)?;
            self.anchors.insert(anchor, Anchored { value: value.clone(), size });
        }
        self.add(value, size);
        Ok(())
    }

    fn add(&mut self, value: Value, size: Size) {
        let node = self.parser == YamlParser::Node;
        let Some(Frame { open, size: total, .. }) = self.stack.last_mut() else {
            self.root = Some(value);
            self.root_height = size.height;
            return;
        };
        total.nodes = total.nodes.saturating_add(size.nodes);
        total.bytes = total.bytes.saturating_add(size.bytes);
        total.height = total.height.max(size.height + 1);
        match open {
            Open::Sequence(items) => items.push(value),
            Open::Mapping(map, pending) => match pending.take() {
                None => {
                    let name = property_name(&value, self.parser);
                    if node && map.contains_key(name.as_str()) {
                        self.repeated.get_or_insert(name.clone());
                    }
                    *pending = Some(Value::String(name))
                }
                // A merge key lends a mapping's entries, or those of each mapping in a list (the
                // rest of the list is dropped); any other value is an ordinary `<<` entry, and
                // always in the `yaml` package.
                Some(key) if key.as_str() == Some("<<") && !node => match value {
                    Value::Mapping(m) => lend(map, &m),
                    Value::Sequence(items) => items.iter().filter_map(Value::as_mapping).for_each(|m| lend(map, m)),
                    other => {
                        map.insert(key, other);
                    }
                },
                // A repeated key keeps its place and takes the later value, as a JavaScript
                // property does.
                Some(key) => {
                    map.insert(key, value);
                }
            },
        }
    }
}

/// A merged mapping's entries, where the mapping has no such key yet: the entries written in
/// the mapping win over merged ones wherever they stand, and an earlier merge over a later one.
/// Bun adds each merged mapping's keys last to first.
fn lend(map: &mut Mapping, from: &Mapping) {
    let entries: Vec<(&Value, &Value)> = from.iter().collect();
    for (k, v) in entries.into_iter().rev() {
        if !map.contains_key(k) {
            map.insert(k.clone(), v.clone());
        }
    }
}

/// What a look over a block's text finds before the parser runs: the text the parser gets, or
/// why Bun refuses the block where saphyr-parser would not.
struct Prescan<'a> {
    /// The block as the parser gets it. A tab after a `:` indicator is a space (YAML and Bun take
    /// it as separating white space, `type:\tuser`; saphyr-parser refuses it), and for Bun 1.3
    /// a line indented with tabs has only the spaces before its first tab.
    text: Cow<'a, str>,
    /// The line (1-based) and reason the runtime refuses the block for.
    refused: Option<(usize, &'static str)>,
}

/// A block scalar (`key: |`) being read: the indentation of the line that opened it, and
/// whether the last line was its header or a blank line.
struct BlockScalar {
    parent: usize,
    fresh: bool,
}

/// How lines indented with tabs read ([`prescan`]).
///
/// Bun 1.4 refuses a tab in the indentation of a line that starts a new entry; the lines that
/// continue a plain or quoted value, lines inside a flow collection and a block scalar's text
/// may hold one after spaces. Bun 1.3 counts only the spaces before a line's first tab as its
/// indentation (`meta:\n\ttype: user` is a `type` of its own) and refuses a line that starts
/// with a tab only when its parser steps onto that line itself (the line before did not end in
/// plain text, which would carry it over) while inside the second or a later entry of a
/// mapping: `meta:\n\towner: me` reads, `paths: x\nmeta:\n\towner: me` does not. Both refuse a
/// tab-first line right after a block scalar's header or a blank line inside it. The `yaml`
/// package (Node) refuses a tab in the indentation of any line but a blank or comment line.
fn prescan(yaml: &str, parser: YamlParser) -> Prescan<'_> {
    let mut scan = Prescan { text: Cow::Borrowed(yaml), refused: None };
    // `...` (a document's end) before any document.
    if let Some((n, _)) = yaml.split('\n').enumerate().find(|(_, l)| {
        let t = l.trim();
        !t.is_empty() && !t.starts_with('#')
    }) {
        let first = yaml.split('\n').nth(n).unwrap_or("");
        if first.strip_prefix("...").is_some_and(|rest| rest.trim().is_empty() || rest.starts_with([' ', '\t'])) {
            scan.refused = Some((n + 1, "Unexpected document end"));
            return scan;
        }
    }
    if !yaml.contains(['\t', '[', '{']) {
        return scan;
    }
    let tab_refusal = match parser {
        YamlParser::Node => "Tabs are not allowed as indentation",
        YamlParser::Bun1_3 => "Unexpected character",
        YamlParser::Bun1_4 => "Tab characters cannot be used as indentation",
    };
    let mut out = String::with_capacity(yaml.len());
    let (mut single, mut double) = (false, false);
    // The open flow collections, innermost last (`[` or `{`).
    let mut flows: Vec<char> = Vec::new();
    let mut block_scalar: Option<BlockScalar> = None;
    // The block mappings around the current line: the column of their keys and how many
    // entries each has had.
    let mut maps: Vec<(usize, usize)> = Vec::new();
    // Whether the last line with content ended in plain text (which carries a line break over),
    // and its indentation.
    let (mut prev_plain, mut prev_indent) = (false, 0usize);
    for (n, raw) in yaml.split_inclusive('\n').enumerate() {
        let line_no = n + 1;
        let mut refuse = |why: &'static str| {
            scan.refused.get_or_insert((line_no, why));
        };
        let body_end = raw.trim_end_matches(['\n', '\r']).len();
        let lead_len = raw.len() - raw.trim_start_matches([' ', '\t']).len();
        let lead = &raw[..lead_len.min(body_end)];
        let spaces = lead.find('\t').unwrap_or(lead.len());
        let tab_first = raw.starts_with('\t');
        let has_tab = lead.contains('\t');
        let rest = &raw[lead.len()..body_end];
        let blank = rest.is_empty();
        let in_mapping_entry_after_first = maps.iter().any(|&(_, count)| count >= 2);
        let mut carried = prev_plain;
        if let Some(b) = &mut block_scalar {
            if blank {
                if tab_first && b.fresh {
                    refuse(tab_refusal);
                }
                b.fresh = true;
                out.push_str(raw);
                continue;
            }
            if !tab_first && spaces > b.parent {
                b.fresh = false;
                out.push_str(raw);
                continue;
            }
            if tab_first && b.fresh {
                refuse(tab_refusal);
            }
            // The text ends here; a tab-first line after it is carried over in Bun 1.3.
            carried = tab_first;
            block_scalar = None;
        }
        let flow = flows.len();
        if single || double || flow > 0 {
            if tab_first && !maps.is_empty() {
                refuse(if single || double { tab_refusal } else { "Unexpected token" });
            }
        } else if has_tab {
            match parser {
                // The `yaml` package refuses a tab in any indentation but a blank or comment line's.
                YamlParser::Node => {
                    let continues_plain = prev_plain && !tab_first && spaces > prev_indent;
                    if !blank && !rest.starts_with('#') && !continues_plain {
                        refuse(tab_refusal);
                    }
                }
                YamlParser::Bun1_4 => {
                    let continues_plain = prev_plain && !tab_first && spaces > prev_indent && !blank;
                    let harmless_blank = (blank || rest.starts_with('#')) && !(tab_first && !carried && in_mapping_entry_after_first);
                    if !continues_plain && !harmless_blank {
                        refuse(tab_refusal);
                    }
                }
                YamlParser::Bun1_3 => {
                    if tab_first && !carried && in_mapping_entry_after_first {
                        refuse(tab_refusal);
                    }
                }
            }
        }
        // Bun 1.3 reads the line as if only the spaces before its first tab indented it.
        let (indent, line) = if parser == YamlParser::Bun1_3 && has_tab && !single && !double && flow == 0 {
            out.push_str(&lead[..spaces]);
            (spaces, &raw[lead.len()..])
        } else {
            out.push_str(lead);
            (lead.len(), &raw[lead.len()..])
        };
        let starts_in_block = !single && !double && flow == 0;
        if blank {
            out.push_str(line);
            continue;
        }
        if starts_in_block && rest.starts_with('#') {
            prev_plain = false;
            out.push_str(line);
            continue;
        }
        if starts_in_block {
            maps.retain(|&(col, _)| col <= indent);
            // `- ` items, then a key: the mapping it belongs to starts at the key's column.
            let mut col = indent;
            let mut item = line;
            while let Some(after) = item.strip_prefix('-').filter(|a| a.is_empty() || a.starts_with([' ', '\t', '\r', '\n'])) {
                let skip = after.len() - after.trim_start_matches([' ', '\t']).len();
                col += 1 + skip;
                item = &after[skip..];
                maps.retain(|&(c, _)| c < col);
            }
            let explicit = item.starts_with('?') && item[1..].chars().next().is_none_or(char::is_whitespace);
            if is_key_line(item) || explicit {
                match maps.last_mut() {
                    Some((c, count)) if *c == col => {
                        // Bun 1.3 takes an explicit key (`? k` then `: v`) only as a mapping's
                        // first entry.
                        if explicit && parser == YamlParser::Bun1_3 {
                            refuse("Multiline implicit key");
                        }
                        *count += 1
                    }
                    _ => maps.push((col, 1)),
                }
            }
        }
        let chars: Vec<char> = line.chars().collect();
        let mut at_start = true;
        let mut comment = false;
        let mut i = 0;
        while i < chars.len() {
            let c = chars[i];
            out.push(c);
            if double {
                match c {
                    '\\' => {
                        if let Some(&next) = chars.get(i + 1) {
                            out.push(next);
                            i += 1;
                        }
                    }
                    '"' => double = false,
                    _ => {}
                }
                i += 1;
                continue;
            }
            if single {
                if c == '\'' {
                    single = false;
                }
                i += 1;
                continue;
            }
            let starts = at_start;
            at_start = false;
            match c {
                '"' if starts => double = true,
                '\'' if starts => single = true,
                '#' if i == 0 || chars[i - 1].is_whitespace() => {
                    comment = true;
                    out.extend(&chars[i + 1..]);
                    break;
                }
                ' ' | '\t' | '\r' | '\n' => at_start = starts,
                ':' if chars.get(i + 1).is_none_or(|n| n.is_whitespace()) || !flows.is_empty() => {
                    while chars.get(i + 1) == Some(&'\t') {
                        out.push(' ');
                        i += 1;
                    }
                    at_start = true;
                }
                // Bun 1.3 takes `---` where a value starts on an unindented line for a document
                // marker, and refuses it there.
                '-' if starts
                    && i > 0
                    && indent == 0
                    && !has_tab
                    && parser == YamlParser::Bun1_3
                    && chars[i..].starts_with(&['-', '-', '-'])
                    && chars.get(i + 3).is_none_or(|n| n.is_whitespace()) =>
                {
                    refuse("Unexpected document start")
                }
                '-' | '?' if starts && chars.get(i + 1).is_none_or(|n| n.is_whitespace()) => at_start = true,
                '[' | '{' if starts || !flows.is_empty() => {
                    flows.push(c);
                    at_start = true;
                }
                ']' | '}' if !flows.is_empty() => {
                    flows.pop();
                }
                ',' if !flows.is_empty() => at_start = true,
                '>' | '|' if starts && !flows.is_empty() => refuse("Unexpected token"),
                // A lone `?` as a flow mapping's value.
                '?' if starts
                    && flows.last() == Some(&'{')
                    && chars[..i].iter().rev().find(|c| **c != ' ') == Some(&':')
                    && chars[i + 1..].iter().find(|c| **c != ' ').is_none_or(|c| matches!(c, ',' | '}')) =>
                {
                    refuse("Unexpected token")
                }
                // Bun wants a value after a lone `!` in a flow collection; the `yaml` package
                // reads the empty text.
                '!' if starts && !flows.is_empty() && parser != YamlParser::Node => {
                    let tag_end = chars[i..].iter().position(|c| c.is_whitespace() || matches!(c, ',' | ']' | '}'));
                    let after = tag_end.map(|e| i + e).and_then(|e| chars[e..].iter().find(|c| **c != ' '));
                    if after.is_none_or(|c| matches!(c, ',' | ']' | '}')) {
                        refuse("Unexpected token");
                    }
                }
                _ => {}
            }
            i += 1;
        }
        if starts_in_block || (!single && !double && flows.is_empty()) {
            prev_plain = !comment && !single && !double && flows.is_empty() && ends_in_plain_text(line);
            prev_indent = indent;
        }
        if !single && !double && flows.is_empty() && opens_block_scalar(line) {
            block_scalar = Some(BlockScalar { parent: indent, fresh: true });
            prev_plain = false;
        }
    }
    scan.text = Cow::Owned(out);
    scan
}

/// Whether a line (after its indentation and `- ` items) is a `key:` entry of a block mapping.
fn is_key_line(item: &str) -> bool {
    let item = item.trim_end_matches(['\r', '\n']);
    let key_end = match item.chars().next() {
        Some(q @ ('"' | '\'')) => item[1..].find(q).map(|e| e + 2),
        Some('#' | '[' | '{' | '&' | '*' | '!' | '|' | '>' | '%' | '@' | '`') | None => None,
        Some(_) => item.find(": ").or_else(|| item.ends_with(':').then(|| item.len() - 1)).filter(|e| !item[..*e].contains(" #")),
    };
    key_end.is_some_and(|e| item[e..].starts_with(':') && item[e + 1..].chars().next().is_none_or(char::is_whitespace))
}

/// Whether a line's last token is plain text (which, in Bun, carries the line break after it
/// over): not a `key:` with nothing after it, a lone `-`, a quoted value's closing quote, a flow
/// collection's bracket, an anchor, tag or alias, or a document marker.
fn ends_in_plain_text(line: &str) -> bool {
    let t = line.trim_end();
    if t.is_empty() || t == "---" || t.ends_with(':') || t == "-" || t.ends_with(" -") || t == "?" {
        return false;
    }
    if t.ends_with(['"', '\'', ']', '}']) {
        return false;
    }
    let last = t.rsplit([' ', '\t']).next().unwrap_or(t);
    !last.starts_with(['&', '!', '*'])
}

/// Two readings of Bun 1.3 where a value is missing after its marks. `key: ? value` is
/// `key: value` (YAML has no explicit key there; Bun 1.4 refuses it, as saphyr-parser does).
/// And a value that is only a tag, an anchor or a `?` (`description: !`, `a: &x`, `a: ?`) takes
/// the next line's key, at the same indentation, as its text, that line's value going to an
/// empty key: `description: !\nname: x` reads `{description: "name", null: "x"}`.
fn bun_1_3_values(yaml: &str) -> Cow<'_, str> {
    if !yaml.contains([':', '?']) || !yaml.contains(['?', '!', '&']) {
        return Cow::Borrowed(yaml);
    }
    let lines: Vec<&str> = yaml.split('\n').collect();
    let mut out: Vec<String> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let indent = line.len() - line.trim_start_matches(' ').len();
        let body = &line[indent..];
        let key_end = (!body.starts_with(['#', '"', '\'', '-', '{', '[', '?']))
            .then(|| body.find(": ").or_else(|| body.trim_end().ends_with(':').then(|| body.trim_end().len() - 1)))
            .flatten()
            .filter(|e| !body[..*e].contains(['#', '"', '\'']));
        let Some(key_end) = key_end else {
            out.push(line.to_string());
            i += 1;
            continue;
        };
        let value = body[key_end + 1..].trim_start_matches([' ', '\t']);
        let value_text = value.split(" #").next().unwrap_or("").trim_end_matches(['\r', ' ', '\t']);
        if let Some(after) = value_text.strip_prefix("? ") {
            // `key: ? value`
            out.push(format!("{}{}: {}", &line[..indent], &body[..key_end], after.trim_start()));
            i += 1;
            continue;
        }
        let marks_only = !value_text.is_empty()
            && value_text.split_whitespace().all(|t| t == "?" || t.starts_with(['!', '&']))
            && (value_text == "?" || !value_text.contains('?'));
        let next = lines.get(i + 1).copied().unwrap_or("");
        let next_indent = next.len() - next.trim_start_matches(' ').len();
        let next_key = (next_indent == indent && !next[indent..].starts_with(['#', '-', ' ', '\t']))
            .then(|| next[indent..].find(':'))
            .flatten()
            .filter(|e| !next[indent..indent + e].is_empty() && next[indent + e + 1..].chars().next().is_none_or(char::is_whitespace));
        match (marks_only, next_key) {
            (true, Some(e)) => {
                let marks = if value_text == "?" { "" } else { value_text };
                out.push(format!("{}{}: {} {}", &line[..indent], &body[..key_end], marks, &next[indent..indent + e]).replace(":  ", ": "));
                out.push(format!("{}{}", &next[..indent], &next[indent + e..]));
                i += 2;
            }
            (true, None) if value_text == "?" => {
                out.push(format!("{}{}:", &line[..indent], &body[..key_end]));
                i += 1;
            }
            _ => {
                out.push(line.to_string());
                i += 1;
            }
        }
    }
    Cow::Owned(out.join("\n"))
}

/// Whether a line ends with a block scalar's header (`key: |`, `- >-`, `key: |2 # note`).
fn opens_block_scalar(line: &str) -> bool {
    let content = match line.find(" #") {
        Some(i) => &line[..i],
        None => line,
    };
    let last = content.trim_end().rsplit([' ', '\t']).next().unwrap_or("");
    let mut chars = last.chars();
    matches!(chars.next(), Some('|' | '>')) && chars.all(|c| c.is_ascii_digit() || c == '+' || c == '-')
        && content.trim_end().len() > last.len()
}

/// The name a key gets as a JavaScript property (the `yaml` package names a null key `""`).
fn property_name(key: &Value, parser: YamlParser) -> String {
    match key {
        Value::Null if parser == YamlParser::Node => String::new(),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => crate::text::js_number(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => s.clone(),
        Value::Sequence(items) => items.iter().map(|i| js_text(i, parser)).collect::<Vec<_>>().join(","),
        Value::Mapping(_) => "[object Object]".into(),
        Value::Tagged(t) => property_name(&t.value, parser),
    }
}

/// `String(v)` for an element of a list that names a property.
fn js_text(v: &Value, parser: YamlParser) -> String {
    match v {
        Value::Null => String::new(),
        other => property_name(other, parser),
    }
}

/// A scalar's value. Quoted and block scalars are text; a plain one resolves by the core schema
/// ([`resolve_plain`]). Tags: `!!str` and the non-specific `!` make text (an empty value the
/// empty text); `!!int` and `!!float` a number where the text is one, `!!bool` a boolean where it
/// spells one, `!!null` null where it spells null, and otherwise text; any other tag makes text,
/// and null when there is no text at all.
fn scalar(text: &str, style: ScalarStyle, tag: Option<&Tag>, parser: YamlParser) -> Value {
    let plain = style == ScalarStyle::Plain;
    let Some(tag) = tag else {
        return if plain { resolve_plain(text, parser) } else { Value::String(text.to_string()) };
    };
    let text_value = Value::String(text.to_string());
    let non_specific = (tag.handle == "!" && tag.suffix.is_empty()) || (tag.handle.is_empty() && tag.suffix == "!");
    if non_specific {
        return text_value;
    }
    let core = tag.handle == "!!" || tag.handle == "tag:yaml.org,2002:";
    let resolved = if plain { resolve_plain(text, parser) } else { text_value.clone() };
    match (core, tag.suffix.as_str()) {
        (true, "str") => text_value,
        (true, "int" | "float") if text.is_empty() => Value::Null,
        (true, "int" | "float") => if resolved.is_number() { resolved } else { text_value },
        (true, "bool") if text.is_empty() => Value::Null,
        (true, "bool") => if resolved.is_bool() { resolved } else { text_value },
        (true, "null") => if resolved.is_null() { Value::Null } else { text_value },
        _ if text.is_empty() && plain => Value::Null,
        _ => text_value,
    }
}

/// A plain scalar by YAML 1.2's core schema, as `parser` reads it: null, booleans in three
/// spellings each, decimal integers (leading zeros and all), `0x`/`0o` integers with an
/// optional sign, floats, `.inf` and `.nan`; the rest is text. Bun 1.3 also reads the longest
/// number at the start of a scalar made of digits, `.`, `e`, `+` and one `-` (`2001-12` is
/// 2001), and takes no sign before a leading dot (`-.5` is text).
fn resolve_plain(text: &str, parser: YamlParser) -> Value {
    match text {
        "" | "~" | "null" | "Null" | "NULL" => return Value::Null,
        "true" | "True" | "TRUE" => return Value::Bool(true),
        "false" | "False" | "FALSE" => return Value::Bool(false),
        ".inf" | ".Inf" | ".INF" | "+.inf" | "+.Inf" | "+.INF" => return number(f64::INFINITY),
        "-.inf" | "-.Inf" | "-.INF" => return number(f64::NEG_INFINITY),
        ".nan" | ".NaN" | ".NAN" => return number(f64::NAN),
        _ => {}
    }
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    for (prefix, base) in [("0x", 16), ("0o", 8)] {
        if let Some(digits) = unsigned.strip_prefix(prefix) {
            if !digits.is_empty() && digits.chars().all(|c| c.is_digit(base)) {
                if let Ok(u) = u64::from_str_radix(digits, base) {
                    // Read as a double, as JavaScript holds every number.
                    let f = u as f64;
                    return number(if negative { -f } else { f });
                }
            }
            return Value::String(text.to_string());
        }
    }
    if parser == YamlParser::Bun1_3 && unsigned.starts_with('.') && text.len() > unsigned.len() {
        return Value::String(text.to_string());
    }
    if is_core_number(unsigned) {
        return decimal(text);
    }
    if parser == YamlParser::Bun1_3 && text.bytes().all(|b| b.is_ascii_digit() || matches!(b, b'.' | b'e' | b'E' | b'+' | b'-'))
        && text.bytes().filter(|b| *b == b'-').count() <= 1
    {
        if let Some(end) = longest_number_prefix(text) {
            return decimal(&text[..end]);
        }
    }
    Value::String(text.to_string())
}

/// The end of the longest proper prefix of `text` that is a core-schema decimal with an
/// optional sign, where no sign stands before a leading dot (Bun 1.3's reading of `2001-12` as
/// 2001). One pass: a prefix per end, each checked whole, was quadratic (`1` and 160,000 dots
/// took seconds).
fn longest_number_prefix(text: &str) -> Option<usize> {
    #[derive(Clone, Copy, PartialEq)]
    enum At {
        Start,
        Int,
        LeadDot,
        Frac,
        Exp,
        ExpSign,
        ExpDigits,
    }
    let bytes = text.as_bytes();
    let signed = matches!(bytes.first(), Some(b'-' | b'+'));
    let mut at = At::Start;
    let mut longest = None;
    for (i, &b) in bytes.iter().enumerate().skip(usize::from(signed)) {
        let digit = b.is_ascii_digit();
        at = match (at, b) {
            (At::Start | At::Int, _) if digit => At::Int,
            (At::Start, b'.') if !signed => At::LeadDot,
            (At::Int, b'.') => At::Frac,
            (At::LeadDot | At::Frac, _) if digit => At::Frac,
            (At::Int | At::Frac, b'e' | b'E') => At::Exp,
            (At::Exp, b'-' | b'+') => At::ExpSign,
            (At::Exp | At::ExpSign | At::ExpDigits, _) if digit => At::ExpDigits,
            _ => break,
        };
        // `1.` is a number; `.` is not, and neither is an exponent without digits.
        if matches!(at, At::Int | At::Frac | At::ExpDigits) && i + 1 < text.len() {
            longest = Some(i + 1);
        }
    }
    longest
}

/// A decimal the core schema accepts, as a number: integers that fit stay integers.
fn decimal(text: &str) -> Value {
    match text.parse::<i64>() {
        Ok(i) if i != 0 || !text.starts_with('-') => Value::Number(Number::from(i)),
        _ => number(text.parse::<f64>().unwrap_or(f64::NAN)),
    }
}

/// A decimal integer or float: `(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?`, the sign
/// already taken off.
fn is_core_number(s: &str) -> bool {
    let (mantissa, exponent) = match s.find(['e', 'E']) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    let mantissa_ok = match mantissa.split_once('.') {
        Some(("", frac)) => digits(frac),
        Some((int, frac)) => digits(int) && (frac.is_empty() || digits(frac)),
        None => digits(mantissa),
    };
    mantissa_ok && exponent.is_none_or(|e| digits(e.strip_prefix(['-', '+']).unwrap_or(e)))
}

/// A number as JavaScript holds it: whole numbers that fit stay integers, so they print without
/// a fraction.
fn number(f: f64) -> Value {
    if f.fract() == 0.0 && f.abs() < 9.007_199_254_740_992e15 {
        Value::Number(Number::from(f as i64))
    } else {
        Value::Number(Number::from(f))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The prefix search as it was written first, one whole check per end.
    fn longest_number_prefix_by_ends(text: &str) -> Option<usize> {
        (1..text.len()).rev().find(|&end| {
            let p = &text[..end];
            let u = p.strip_prefix(['-', '+']).unwrap_or(p);
            is_core_number(u) && !(u.starts_with('.') && p.len() > u.len())
        })
    }

    #[test]
    fn bun_1_3_number_prefixes() {
        for (text, end) in [("2001-12", Some(4)), ("1.", Some(1)), ("1..", Some(2)), ("-.5x", None), ("+1e5e", Some(4)), ("1e+", Some(1)), (".5.", Some(2)), ("..", None)] {
            assert_eq!(longest_number_prefix(text), end, "{text}");
            assert_eq!(longest_number_prefix_by_ends(text), end, "{text}");
        }
        assert_eq!(resolve_plain("2001-12", YamlParser::Bun1_3), Value::Number(2001.into()));
    }

    proptest! {
        #[test]
        fn one_pass_finds_the_same_prefix(text in "[-+0-9.eE]{0,12}") {
            prop_assert_eq!(longest_number_prefix(&text), longest_number_prefix_by_ends(&text));
        }
    }
}
