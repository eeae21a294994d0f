//! Frontmatter as Claude Code reads it (`src/utils/frontmatterParser.ts`): a `---` block at
//! byte 0 matched by `/^---\s*\n([\s\S]*?)---\s*\n?/`, parsed as YAML; on a YAML error the
//! parser retries once after quoting values with YAML-special characters, and if that fails
//! too the frontmatter counts as empty. Memory files come in two generations: the older one
//! has `type:` at the top level, the current one nests it as `metadata: { type: }`.

use crate::MemoryType;
use crate::js_yaml;
use crate::versions::{FrontmatterReader, YamlParser};
use regex::Regex;
use std::sync::LazyLock;
use yaml_serde::{Mapping, Value};

/// The retry's `key: value` line, `/^([a-zA-Z_-]+):\s+(.+)$/` as JavaScript reads it: `\s` also
/// takes U+FEFF, and `.` stops at `\r`, U+2028 and U+2029, so a CRLF line never matches.
static SIMPLE_LINE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"^([a-zA-Z_-]+):[\s\x{feff}]+([^\n\r\x{2028}\x{2029}]+)$").expect("line regex")
});
static YAML_SPECIAL: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[{}\[\]*&#!|>%@`]|:\s").expect("special regex"));

/// Why a frontmatter block could not be read. Claude Code treats such a block as `{}`;
/// Mneme does the same but reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontmatterError {
    /// 1-based line inside the file (the opening `---` is line 1), when YAML said where.
    pub line: Option<usize>,
    pub message: String,
}


impl std::error::Error for FrontmatterError {}

impl std::fmt::Display for FrontmatterError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(l) => write!(f, "malformed frontmatter at line {l}: {}", self.message),
            None => write!(f, "malformed frontmatter: {}", self.message),
        }
    }
}

/// Which frontmatter generation a memory file uses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Generation {
    /// No frontmatter block at all.
    None,
    /// `type:` at the top level (Claude Code before the `metadata:` block).
    TopLevelType,
    /// `metadata: { type: }` (current).
    Metadata,
    /// A block without any type.
    Untyped,
}

impl Generation {
    /// Where the release of `profile` reads a memory's type, and so where a new type is written:
    /// `metadata:`/`type:` from 2.1.139, a top-level `type:` before (their memory instructions
    /// ask for that form, and their recall does not see a type under `metadata:`).
    pub fn written_by(profile: &crate::versions::Profile) -> Generation {
        if profile.memory_type_in_metadata {
            Generation::Metadata
        } else {
            Generation::TopLevelType
        }
    }
}

/// A parsed frontmatter block.
#[derive(Debug, Clone, PartialEq)]
pub struct Frontmatter {
    /// The YAML text between the fences, verbatim.
    pub yaml: String,
    /// The parsed keys in file order; empty when the YAML was unreadable.
    pub fields: Mapping,
    /// Set when neither the YAML nor its quoted retry parsed.
    pub error: Option<FrontmatterError>,
    /// Byte length of the whole block including both fences.
    pub block_len: usize,
}

/// A file split into its frontmatter (if any) and the body after it.
#[derive(Debug, Clone, PartialEq)]
pub struct Parsed<'a> {
    pub frontmatter: Option<Frontmatter>,
    pub body: &'a str,
}

/// Claude Code's `FRONTMATTER_REGEX`, `/^---\s*\n([\s\S]*?)---\s*\n?/`, evaluated by hand
/// (it runs once per memory file in a scan). Returns the YAML byte range and where the body
/// starts. The greedy `\s*\n` after the opening fence ends at the *last* newline of the
/// whitespace run; the lazy group ends at the first `---` after that, wherever it sits on its
/// line; and the closing `\s*` swallows all whitespace after it, blank lines included.
pub fn block_bounds(content: &str) -> Option<(std::ops::Range<usize>, usize)> {
    let rest = content.strip_prefix("---")?;
    let run = rest.find(|c: char| !crate::text::is_js_whitespace(c)).unwrap_or(rest.len());
    let start = 3 + rest[..run].rfind('\n')? + 1;
    let close = start + content[start..].find("---")?;
    let after = &content[close + 3..];
    let ws = after.find(|c: char| !crate::text::is_js_whitespace(c)).unwrap_or(after.len());
    Some((start..close, close + 3 + ws))
}

/// Split and parse as the newest Claude Code release reads YAML. Never fails: a bad block
/// yields empty fields plus an error.
pub fn parse(content: &str) -> Parsed<'_> {
    parse_with(content, FrontmatterReader::NEWEST)
}

/// [`parse`] as a release with `reader` reads the block ([`FrontmatterReader`]).
pub fn parse_with(content: &str, reader: FrontmatterReader) -> Parsed<'_> {
    let Some((range, whole)) = block_bounds(content) else {
        return Parsed { frontmatter: None, body: content };
    };
    let yaml = content[range].to_string();
    let (fields, error) = parse_yaml(&yaml, reader);
    Parsed { frontmatter: Some(Frontmatter { yaml, fields, error, block_len: whole }), body: &content[whole..] }
}

/// The keys a release reads from the YAML between the fences; empty when it reads none.
pub fn read_block(yaml: &str, reader: FrontmatterReader) -> Mapping {
    parse_yaml(yaml, reader).0
}

fn parse_yaml(yaml: &str, reader: FrontmatterReader) -> (Mapping, Option<FrontmatterError>) {
    if let Some(m) = parse_simple_yaml(yaml) {
        return (m, None);
    }
    parse_yaml_in_full(yaml, reader)
}

/// [`parse_yaml`] without the fast path.
fn parse_yaml_in_full(yaml: &str, reader: FrontmatterReader) -> (Mapping, Option<FrontmatterError>) {
    if excessive_aliasing(yaml) {
        let message = "Excessive aliasing: the frontmatter's YAML aliases would expand to far more text than it holds".to_string();
        return (Mapping::new(), Some(FrontmatterError { line: None, message }));
    }
    let first = match parse_as(yaml, reader.parser) {
        Ok(m) => return (m, None),
        Err(e) => e,
    };
    let mut retry = quote_problematic_values(yaml, reader);
    if reader.retry_untabs {
        retry = untab_indents(&retry);
    }
    match parse_as(&retry, reader.parser) {
        Ok(m) => (m, None),
        // +1 for the opening fence line.
        Err(_) => (Mapping::new(), Some(FrontmatterError { line: first.line.map(|l| l + 1), message: first.message })),
    }
}

/// A single value as `parser` reads it.
fn parse_value(text: &str, parser: YamlParser) -> Option<Value> {
    js_yaml::parse(text, parser).ok()
}

/// One attempt of `parser` at a block: the mapping it gives (a list or a scalar gives an empty
/// one), or its error.
fn parse_as(yaml: &str, parser: YamlParser) -> Result<Mapping, js_yaml::YamlError> {
    js_yaml::parse(yaml, parser).map(as_mapping)
}

/// Whether the YAML's aliases could expand past what any memory needs. The parser copies an
/// anchored value at each alias, so one long anchored string and thousands of aliases to it
/// make gigabytes from a few hundred kilobytes. Claude Code's parser (Bun's) refuses such
/// documents as "excessive aliasing" too. The parser counts what it copies as well
/// ([`js_yaml::MAX_ALIASED_NODES`]), which also stops aliases nested in aliases; this look
/// at the text refuses the flat case before any parsing, and without the quoting retry. The bound is generous: every alias counted as a copy of the whole
/// block, at most 16 MiB in all.
fn excessive_aliasing(yaml: &str) -> bool {
    const BUDGET: usize = 16 << 20;
    if !yaml.contains('&') {
        return false;
    }
    let bytes = yaml.as_bytes();
    let aliases = (0..bytes.len())
        .filter(|&i| {
            bytes[i] == b'*'
                && (i == 0 || matches!(bytes[i - 1], b' ' | b'\t' | b'\n' | b'\r' | b'[' | b'{' | b',' | b':' | b'-'))
                && bytes.get(i + 1).is_some_and(|c| !c.is_ascii_whitespace() && !matches!(c, b',' | b'[' | b']' | b'{' | b'}'))
        })
        .count();
    aliases.saturating_mul(yaml.len()) > BUDGET
}

/// Tabs that indent a line (`paths:\n\t- src/**`) read as spaces, as Claude Code's YAML
/// reading accepts them (family `yaml_paths`); strict YAML refuses tab indentation.
fn untab_indents(yaml: &str) -> String {
    yaml.split('\n')
        .map(|line| {
            let tabs = line.len() - line.trim_start_matches('\t').len();
            format!("{}{}", "  ".repeat(tabs), &line[tabs..])
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// Whether a block is only what Claude Code itself writes (`key: plain words` lines and a
/// `metadata:` block of them), which every release's reader reads alike.
pub fn is_plain_block(yaml: &str) -> bool {
    parse_simple_yaml(yaml).is_some()
}

/// A fast path for the frontmatter Claude Code itself writes: `key: plain words` lines and a
/// `metadata:` block of indented `key: plain words` lines. It accepts only values that every
/// YAML parser reads as a plain string (starting with a letter, no `:`/`#`/quotes/flow
/// characters, no control characters, byte order marks or line separators, not a boolean or
/// null word), keys that every reader names alike (a letter or `_` first, then letters, digits,
/// `_` and `-`; not a null or boolean word, which some readers rename), each key once, and
/// lines that are blank only if empty or spaces, so its result equals every reader's full
/// parse (`the_fast_path_agrees_with_the_full_parser`); anything else returns `None` and goes
/// to the full parser. Scanning 10,000 memories spends most of its time here otherwise.
fn parse_simple_yaml(yaml: &str) -> Option<Mapping> {
    fn plain(v: &str) -> Option<&str> {
        let v = v.trim_end_matches(' ');
        let first = v.chars().next()?;
        if !first.is_alphabetic() || v.contains(": ") || v.ends_with(':') || v.contains(" #") {
            return None;
        }
        // Tabs, `\r` and the other control characters, U+FEFF and U+2028/U+2029 each have a
        // reader that takes them its own way.
        if v.chars().any(|c| matches!(c, '"' | '\'' | '{' | '}' | '[' | ']' | '`' | '\u{feff}' | '\u{2028}' | '\u{2029}') || c.is_control()) {
            return None;
        }
        const WORDS: [&str; 11] = ["true", "false", "null", "yes", "no", "on", "off", "y", "n", "nan", "inf"];
        if WORDS.iter().any(|w| v.eq_ignore_ascii_case(w)) {
            return None;
        }
        Some(v)
    }
    fn key(k: &str) -> Option<&str> {
        let first = k.bytes().next()?;
        let renamed = ["null", "true", "false"].iter().any(|w| k.eq_ignore_ascii_case(w));
        ((first.is_ascii_alphabetic() || first == b'_') && k.bytes().all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b'-') && !renamed)
            .then_some(k)
    }
    let mut out = Mapping::new();
    let mut nested: Option<(String, Mapping)> = None;
    for line in yaml.split('\n') {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.trim_start_matches(' ').is_empty() {
            continue;
        }
        if let Some(rest) = line.strip_prefix("  ") {
            let (k, v) = rest.split_once(": ")?;
            let m = &mut nested.as_mut()?.1;
            if k.starts_with(' ') || m.insert(Value::String(key(k)?.into()), Value::String(plain(v)?.into())).is_some() {
                return None;
            }
            continue;
        }
        if let Some((name, m)) = nested.take() {
            if m.is_empty() || out.insert(Value::String(name), Value::Mapping(m)).is_some() {
                return None;
            }
        }
        if let Some(k) = line.strip_suffix(':') {
            nested = Some((key(k)?.to_string(), Mapping::new()));
            continue;
        }
        let (k, v) = line.split_once(": ")?;
        if out.insert(Value::String(key(k)?.into()), Value::String(plain(v)?.into())).is_some() {
            return None;
        }
    }
    if let Some((name, m)) = nested.take() {
        if m.is_empty() || out.insert(Value::String(name), Value::Mapping(m)).is_some() {
            return None;
        }
    }
    Some(out)
}

/// The object a block gives; a list, a scalar or nothing gives none (Claude Code takes only a
/// plain object).
fn as_mapping(v: Value) -> Mapping {
    match v {
        Value::Mapping(m) => m,
        _ => Mapping::new(),
    }
}

/// The retry's rewrite: a `key: value` line whose value holds a character YAML treats specially
/// is rewritten as `key: "value"`, backslashes and quotes escaped; a value already quoted stays,
/// and so, with `keep_lists` (the release's parser), does a value that parses as a whole list.
fn quote_problematic_values(yaml: &str, reader: FrontmatterReader) -> String {
    yaml.split('\n')
        .map(|line| {
            let Some(c) = SIMPLE_LINE.captures(line) else { return line.to_string() };
            let (key, value) = (&c[1], &c[2]);
            let quoted = (value.starts_with('"') && value.ends_with('"'))
                || (value.starts_with('\'') && value.ends_with('\''));
            let list = reader.retry_keeps_lists
                && value.starts_with('[')
                && value.ends_with(']')
                && parse_value(value, reader.parser).is_some_and(|v| matches!(v, Value::Sequence(_)));
            if !quoted && !list && YAML_SPECIAL.is_match(value) {
                let escaped = value.replace('\\', "\\\\").replace('"', "\\\"");
                format!("{key}: \"{escaped}\"")
            } else {
                line.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

impl Frontmatter {
    pub fn get(&self, key: &str) -> Option<&Value> {
        // Looked up by `&str`, not a `Value::String` made for the call: a scan asks each of
        // 10,000 files for five or six keys.
        self.fields.get(key)
    }

    fn get_str(&self, key: &str) -> Option<String> {
        scalar_string(self.get(key)?)
    }

    /// `description`, as Claude Code reads it: `frontmatter.description || null`, then string
    /// interpolation ([`js_truthy_string`]: `0`, `false`, `.nan` are none, `.inf` is
    /// `Infinity`, `[a, b]` is `a,b`).
    pub fn description(&self) -> Option<String> {
        js_truthy_string(self.get("description")?)
    }

    /// `name` (prompt-only in Claude Code; Mneme shows it), read as [`Self::description`] is.
    pub fn name(&self) -> Option<String> {
        js_truthy_string(self.get("name")?)
    }

    /// The type, from either generation: `metadata.type` wins over a top-level `type`.
    pub fn memory_type(&self) -> Option<MemoryType> {
        self.metadata_type().or_else(|| self.top_level_type())
    }

    /// The type as releases before 2.1.139 read it: a top-level `type` only.
    pub fn top_level_type(&self) -> Option<MemoryType> {
        self.get_str("type").and_then(|t| MemoryType::parse(&t))
    }

    fn metadata_type(&self) -> Option<MemoryType> {
        let Value::Mapping(m) = self.get("metadata")? else { return None };
        scalar_string(m.get("type")?).and_then(|t| MemoryType::parse(&t))
    }

    pub fn generation(&self) -> Generation {
        if self.metadata_type().is_some() {
            Generation::Metadata
        } else if self.get("type").is_some() {
            Generation::TopLevelType
        } else {
            Generation::Untyped
        }
    }

    /// Keys Mneme does not interpret (`originSessionId`, `created`, `last_read`, …), in order.
    pub fn unknown_keys(&self) -> Vec<String> {
        const KNOWN: [&str; 4] = ["name", "description", "type", "metadata"];
        self.fields
            .keys()
            .filter_map(|k| k.as_str())
            .filter(|k| !KNOWN.contains(k))
            .map(str::to_string)
            .collect()
    }

    /// `paths:` as releases before 2.1.84 split it: the value walked like a string, so a list's
    /// entries run together into one pattern (`[a, b]` reads `ab`), an entry that is exactly
    /// `{`, `}` or `,` acting as that character (commas inside an entry never split it); a
    /// number or a boolean gives no pattern at all. The parts still need their braces expanded.
    pub fn paths_parts_as_2_1_83(&self) -> Option<Vec<String>> {
        fn js_string(v: &Value) -> String {
            match v {
                Value::String(s) => s.clone(),
                Value::Number(n) => n.to_string(),
                Value::Bool(b) => b.to_string(),
                Value::Null => "null".to_string(),
                Value::Sequence(items) => items.iter().map(js_string).collect::<Vec<_>>().join(","),
                _ => "[object Object]".to_string(),
            }
        }
        let items = match self.get("paths")? {
            Value::String(s) => return Some(split_outside_braces(s)),
            Value::Sequence(items) => items,
            _ => return None,
        };
        let (mut parts, mut current, mut depth) = (Vec::new(), String::new(), 0i64);
        let finish = |current: &mut String, parts: &mut Vec<String>| {
            let t = crate::text::js_trim(current);
            if !t.is_empty() {
                parts.push(t.to_string());
            }
            current.clear();
        };
        for item in items {
            let w = js_string(item);
            match w.as_str() {
                "{" => depth += 1,
                "}" => depth -= 1,
                "," if depth == 0 => {
                    finish(&mut current, &mut parts);
                    continue;
                }
                _ => {}
            }
            current.push_str(&w);
        }
        finish(&mut current, &mut parts);
        Some(parts)
    }

    /// The raw `paths:` value: a string or a list of strings.
    pub fn paths(&self) -> Option<Vec<String>> {
        // Only text counts: `paths: true` or `paths: 42` leave the rule unconditional, as in
        // every release in the matrix (testdata/conformance-versions, family yaml_paths).
        match self.get("paths")? {
            Value::Sequence(items) => Some(items.iter().filter_map(text_only).collect()),
            v => text_only(v).map(|s| vec![s]),
        }
    }
}

fn text_only(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        _ => None,
    }
}

/// `value || null` and then `String(value)`, for the values YAML gives JavaScript: none for the
/// falsy ones (null, `false`, `""`, `0`, `-0`, `NaN`), else the text JavaScript prints
/// ([`js_string`]).
pub fn js_truthy_string(v: &Value) -> Option<String> {
    let falsy = match v {
        Value::Null | Value::Bool(false) => true,
        Value::String(s) => s.is_empty(),
        Value::Number(n) => n.as_f64().is_none_or(|f| f == 0.0 || f.is_nan()),
        Value::Tagged(t) => return js_truthy_string(&t.value),
        _ => false,
    };
    (!falsy).then(|| js_string(v))
}

/// JavaScript's `String(value)` for a value YAML gives: numbers as JavaScript prints them
/// (`Infinity`, `1e+21`, `12345678901234567000`, every number being a double), a list as its
/// items joined by commas (null items empty), a mapping as `[object Object]`.
pub fn js_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::String(s) => s.clone(),
        Value::Number(n) => crate::text::js_number(n.as_f64().unwrap_or(f64::NAN)),
        Value::Sequence(items) => items
            .iter()
            .map(|i| if i.is_null() { String::new() } else { js_string(i) })
            .collect::<Vec<_>>()
            .join(","),
        Value::Mapping(_) => "[object Object]".into(),
        Value::Tagged(t) => js_string(&t.value),
    }
}

fn scalar_string(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) => Some(n.to_string()),
        Value::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

/// Claude Code's `splitPathInFrontmatter`: split on commas outside braces, then expand
/// `{a,b}` alternatives so that several groups multiply out.
///
/// Brace groups multiply (`{a,b}` twenty times is a million patterns), and Claude Code builds
/// them all. A rules file from a cloned repository must not be able to exhaust memory that
/// way, so the expansion stops after [`MAX_EXPANDED_PATHS`] patterns or once it has looked at
/// [`MAX_EXPANSION_BYTES`] bytes of intermediate patterns (each step rescans one), keeping the
/// patterns found so far in Claude Code's order; no real rule comes near either.
pub fn split_paths(values: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut budget = MAX_EXPANSION_BYTES;
    for part in values.iter().flat_map(|v| split_outside_braces(v)) {
        expand_braces(&part, &mut out, &mut budget);
    }
    out
}

/// [`split_paths`] for parts already split at their commas.
fn expand_parts(parts: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    let mut budget = MAX_EXPANSION_BYTES;
    for part in parts {
        expand_braces(part, &mut out, &mut budget);
    }
    out
}

/// The most patterns a `paths:` value expands to; see [`split_paths`].
pub const MAX_EXPANDED_PATHS: usize = 1_000;
/// The most bytes of intermediate patterns one `paths:` value's expansion looks at; see
/// [`split_paths`].
pub const MAX_EXPANSION_BYTES: usize = 1 << 20;

fn split_outside_braces(input: &str) -> Vec<String> {
    let mut parts = Vec::new();
    let mut depth: i32 = 0;
    let mut current = String::new();
    for c in input.chars() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                parts.push(std::mem::take(&mut current));
                continue;
            }
            _ => {}
        }
        current.push(c);
    }
    parts.push(current);
    parts.into_iter().map(|p| p.trim().to_string()).filter(|p| !p.is_empty()).collect()
}

/// Expands the first `{…}` group, then the rest in the expansions, like Claude Code's
/// recursive `expandBraces`: `src/*.{ts,tsx}` → `src/*.ts`, `src/*.tsx`. Iterative, depth
/// first in the same order, so thousands of groups cannot overflow the stack; it stops when
/// `budget` bytes are spent or `out` holds [`MAX_EXPANDED_PATHS`] patterns.
fn expand_braces(pattern: &str, out: &mut Vec<String>, budget: &mut usize) {
    static BRACE: LazyLock<Regex> =
        LazyLock::new(|| Regex::new(r"^([^{]*)\{([^}]+)\}(.*)$").expect("brace regex"));
    let mut pending = vec![pattern.to_string()];
    // Bytes waiting in `pending`: counted against the budget when made, not only when looked
    // at, so that 250,000 alternatives around a 500 KB suffix are never built (125 GB).
    let mut waiting = pattern.len();
    while let Some(p) = pending.pop() {
        waiting -= p.len();
        // An empty pattern costs a byte too, so that the budget only ever runs down to zero.
        let cost = p.len().max(1);
        if *budget < cost || out.len() >= MAX_EXPANDED_PATHS {
            return;
        }
        *budget -= cost;
        let Some(c) = BRACE.captures(&p) else {
            out.push(p);
            continue;
        };
        let (prefix, alternatives, suffix) = (&c[1], &c[2], &c[3]);
        let mut next = Vec::new();
        for alt in alternatives.split(',') {
            let len = prefix.len() + alt.trim().len() + suffix.len();
            // One that cannot fit would be refused when its turn came, and so would all after it.
            if waiting + len > *budget {
                break;
            }
            waiting += len;
            next.push(format!("{prefix}{}{suffix}", alt.trim()));
        }
        // Pushed in reverse so the first alternative is expanded (and emitted) first.
        pending.extend(next.into_iter().rev());
    }
}

/// Claude Code's `parseFrontmatterPaths`: the globs a rule applies to, with a trailing `/**`
/// removed; `None` when the rule is unconditional (no `paths`, or only `**`).
pub fn rule_globs(fm: Option<&Frontmatter>) -> Option<Vec<String>> {
    rule_globs_as(fm, &crate::versions::newest())
}

/// [`rule_globs`] as the release of `profile` reads `paths:`.
pub fn rule_globs_as(fm: Option<&Frontmatter>, profile: &crate::versions::Profile) -> Option<Vec<String>> {
    let fm = fm?;
    // A block the release's reader refuses twice is no frontmatter: the rule loads at start.
    if fm.error.is_some() {
        return None;
    }
    let expanded = if profile.paths_lists_split { split_paths(&fm.paths()?) } else { expand_parts(&fm.paths_parts_as_2_1_83()?) };
    let patterns: Vec<String> = expanded
        .into_iter()
        .map(|p| p.strip_suffix("/**").map(str::to_string).unwrap_or(p))
        .filter(|p| !p.is_empty())
        .collect();
    if patterns.is_empty() || patterns.iter().all(|p| p == "**") {
        None
    } else {
        Some(patterns)
    }
}

/// `[[name]]` links in a memory body, in order of first appearance. `[[name|alias]]` and
/// `[[name#section]]` link to `name`; brackets and line breaks end a candidate.
pub fn links(body: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut rest = body;
    while let Some(open) = rest.find("[[") {
        let after = &rest[open + 2..];
        let Some(end) = after.find(['[', ']', '\n']) else { break };
        if after[end..].starts_with("]]") {
            let inner = &after[..end];
            let name = inner.split(['|', '#']).next().unwrap_or("").trim();
            if !name.is_empty() && !inner.starts_with(['|', '#']) && !out.iter().any(|n| n == name) {
                out.push(name.to_string());
            }
            rest = &after[end + 2..];
        } else {
            // `[[[g]]]` or a line break: try again one character on, as a regex search would.
            rest = &rest[open + 1..];
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::versions::{behaviours, ClaudeVersion};

    fn globs_at(text: &str, patch: u32) -> Option<Vec<String>> {
        let profile = behaviours(ClaudeVersion::new(2, 1, patch));
        rule_globs_as(parse_with(text, profile.frontmatter_reader).frontmatter.as_ref(), &profile)
    }

    #[test]
    fn node_releases_read_yaml_strictly_and_a_refused_block_is_no_frontmatter() {
        // Tab indentation and a repeated key: a binary's parser takes both; Node's `yaml`
        // package refuses them, and the rule then loads at start as if it had no frontmatter.
        for text in ["---\npaths:\n\t- src/**\n---\nR\n", "---\npaths: \"a/**\"\npaths: \"src/**\"\n---\nR\n"] {
            assert_eq!(globs_at(text, 113), Some(vec!["src".to_string()]), "{text:?}");
            assert_eq!(globs_at(text, 112), None, "{text:?}");
        }
        // Broken YAML that quoting mends is read the same way by both.
        assert_eq!(globs_at("---\npaths: [src/**\n---\nR\n", 112), globs_at("---\npaths: [src/**\n---\nR\n", 113));
    }

    #[test]
    fn before_2_1_84_a_paths_list_runs_together() {
        let list = "---\npaths:\n  - \"lib/**/*.dart\"\n  - \"test/**/*.dart\"\n---\nR\n";
        assert_eq!(globs_at(list, 83), Some(vec!["lib/**/*.darttest/**/*.dart".to_string()]));
        assert_eq!(globs_at(list, 84), Some(vec!["lib/**/*.dart".to_string(), "test/**/*.dart".to_string()]));
        // One entry is the same either way; a lone `,` entry still separates, a comma inside an
        // entry does not, and braces still expand.
        assert_eq!(globs_at("---\npaths:\n  - \"src/**\"\n---\nR\n", 83), Some(vec!["src".to_string()]));
        assert_eq!(globs_at("---\npaths: [\"a/*\", \",\", \"b/*,c\"]\n---\nR\n", 83), Some(vec!["a/*".to_string(), "b/*,c".to_string()]));
        assert_eq!(globs_at("---\npaths: [\"x.{ts,js}\"]\n---\nR\n", 83), Some(vec!["x.ts".to_string(), "x.js".to_string()]));
        // A number is no pattern at all: the rule is unconditional.
        assert_eq!(globs_at("---\npaths: 42\n---\nR\n", 83), None);
    }

    #[test]
    fn aliases_that_would_expand_to_gigabytes_are_refused_as_excessive() {
        let big = "x".repeat(200_000);
        let aliases = vec!["*a"; 50_000].join(", ");
        let text = format!("---\nname: n\nanchor: &a \"{big}\"\nlist: [{aliases}]\n---\nbody\n");
        let p = parse(&text);
        let fm = p.frontmatter.unwrap();
        assert!(fm.fields.is_empty());
        assert!(fm.error.unwrap().message.starts_with("Excessive aliasing"));
        assert_eq!(p.body, "body\n");
        // A few aliases in an ordinary block still resolve.
        let p = parse("---\nname: &n deploys\ndescription: *n\ntags: [*n, *n]\n---\n");
        let fm = p.frontmatter.unwrap();
        assert_eq!(fm.error, None);
        assert_eq!(fm.get("description").and_then(|v| v.as_str()), Some("deploys"));
    }

    #[test]
    fn both_generations_and_unknown_keys() {
        let old = parse("---\nname: a\ndescription: d\ntype: feedback\noriginSessionId: x\n---\nbody\n");
        let fm = old.frontmatter.unwrap();
        assert_eq!(fm.memory_type(), Some(MemoryType::Feedback));
        assert_eq!(fm.generation(), Generation::TopLevelType);
        assert_eq!(fm.unknown_keys(), vec!["originSessionId"]);
        assert_eq!(old.body, "body\n");

        let new = parse("---\nname: b\ndescription: e\nmetadata:\n  type: project\n---\n\nx");
        let fm = new.frontmatter.unwrap();
        assert_eq!(fm.memory_type(), Some(MemoryType::Project));
        assert_eq!(fm.generation(), Generation::Metadata);
        assert_eq!(fm.description().as_deref(), Some("e"));
    }

    #[test]
    fn special_characters_are_retried_quoted() {
        let p = parse("---\ndescription: use `foo`: always @bar\ntype: user\n---\n");
        let fm = p.frontmatter.unwrap();
        assert!(fm.error.is_none());
        assert_eq!(fm.description().as_deref(), Some("use `foo`: always @bar"));
    }

    #[test]
    fn malformed_yaml_is_empty_with_an_error() {
        let p = parse("---\ndescription: [unclosed\n  - : :\n---\nbody");
        let fm = p.frontmatter.unwrap();
        assert!(fm.fields.is_empty());
        assert!(fm.error.is_some());
        assert_eq!(p.body, "body");
    }

    #[test]
    fn not_at_byte_zero_is_not_frontmatter() {
        assert!(parse("\n---\na: b\n---\n").frontmatter.is_none());
        assert!(parse("text").frontmatter.is_none());
    }

    #[test]
    fn crlf_frontmatter() {
        let p = parse("---\r\ntype: user\r\n---\r\nbody\r\n");
        assert_eq!(p.frontmatter.unwrap().memory_type(), Some(MemoryType::User));
        assert_eq!(p.body, "body\r\n");
    }

    #[test]
    fn rule_globs_follow_claude_code() {
        let g = |s: &str| rule_globs(parse(s).frontmatter.as_ref());
        assert_eq!(g("---\npaths: \"**\"\n---\nx"), None);
        assert_eq!(g("---\ndescription: x\n---\nx"), None);
        assert_eq!(g("---\npaths:\n  - \"src/**/*.ts\"\n---\nx"), Some(vec!["src/**/*.ts".into()]));
        assert_eq!(g("---\npaths: src/*.{ts,tsx}, lib/**\n---\nx"), Some(vec!["src/*.ts".into(), "src/*.tsx".into(), "lib".into()]));
    }

    /// Where the fast path reads a block, every reader's full parse reads it the same.
    fn fast_path_agrees(yaml: &str) -> bool {
        let Some(fast) = parse_simple_yaml(yaml) else { return true };
        FrontmatterReader::ALL.iter().all(|&r| parse_yaml_in_full(yaml, r) == (fast.clone(), None))
    }

    #[test]
    fn the_fast_path_agrees_with_the_full_parser() {
        for yaml in [
            "name: a\ndescription: Use table-driven tests\nmetadata:\n  type: feedback\n",
            "name: x\ntype: user\noriginSessionId: abc-123\n",
            "description: déjà vu 😀 works\r\ntype: project\r\n",
            "description: true\n",
            "description: 42\n",
            "description: a: b\n",
            "description: 'quoted'\n",
            "metadata:\n  type: user\nname: z\n",
            "metadata:\n",
            "name: a\nname: b\n",
            "description: trailing  \n",
            "list:\n  - a\n",
            // Found by an audit: each read differently by the fast path and a reader.
            "metadata: a\nmetadata:\n  type: user\n",
            "metadata:\n  type: user\nmetadata: a\n",
            "description: d\n\u{a0}\n",
            "description: x\n\u{3000}\n",
            "description: x\n\t\ntype: user\n",
            "null: x\n",
            "Null: x\n",
            "True: x\n",
            "01: x\n",
            "1e3: x\n",
            "0x1F: x\n",
            "description: a\rb\n",
            "description: a\rtype: user\n",
            "description: a\r\r\n",
            "description: a\u{feff}b\n",
            "description: a\u{7}b\n",
            "description: a\u{85}b\n",
            "description: a\u{2028}b\n",
            "description: ab\u{a0}\n",
            "description: a\u{1b}[31mred\n",
            "description: a\t\n",
        ] {
            assert!(fast_path_agrees(yaml), "{yaml:?}: fast {:?}", parse_simple_yaml(yaml));
        }
        assert!(parse_simple_yaml("name: a\ndescription: b\nmetadata:\n  type: user\n").is_some());
        assert!(parse_simple_yaml("_private-key: b\n").is_some());
        for doubtful in ["description: true\n", "metadata: a\nmetadata:\n  type: user\n", "description: d\n\u{a0}\n", "01: x\n", "Null: x\n", "description: a\rb\n", "description: a\u{feff}b\n"] {
            assert!(parse_simple_yaml(doubtful).is_none(), "{doubtful:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 512, failure_persistence: None, ..Default::default() })]

        /// Blocks made of the pieces the fast path has to judge.
        #[test]
        fn the_fast_path_agrees_on_awkward_pieces(pieces in proptest::collection::vec(proptest::sample::select(vec![
            "name", "metadata", "type", "Null", "null", "TRUE", "01", "1e3", "_k", "k-1", ":", ": ", "  ", "   ", "\n", "\r", "\r\n",
            "\t", " ", "\u{a0}", "\u{3000}", "\u{feff}", "\u{85}", "\u{2028}", "\u{7}", "x", "user", "a b", "#", " #", "true", "-", "- ", "é",
            "'", "[", "&a", "*a", "|", "---",
        ]), 0..14)) {
            let yaml = pieces.concat();
            proptest::prop_assert!(fast_path_agrees(&yaml), "{:?}: fast {:?}", yaml, parse_simple_yaml(&yaml));
        }

        /// `key: value` lines, most of which the fast path takes.
        #[test]
        fn the_fast_path_agrees_on_awkward_lines(lines in proptest::collection::vec((
            proptest::sample::select(vec!["", "", "", "", "  "]),
            proptest::sample::select(vec!["name", "description", "metadata", "type", "k", "_k", "k-1", "y", "Null", "null", "False", "01", "1e3", "0x1F", "-k"]),
            proptest::sample::select(vec![": ", ": ", ": ", ": ", ":", ":  "]),
            proptest::sample::select(vec!["x", "user", "a b", "é", "n"]),
            proptest::collection::vec(proptest::sample::select(vec![
                "x", "user", "a b", "é", " ", "\u{a0}", "\u{3000}", "\u{feff}", "\u{85}", "\u{2028}", "\u{7}", "\r", "\t", "#", " #", "-", "true", "nan", ".5", "1",
            ]), 0..3),
            proptest::sample::select(vec!["\n", "\n", "\n", "\r\n", "\n\n", "\n \n", "\n\u{a0}\n", "\n\t\n", "\n\u{3000}\n"]),
        ), 1..5)) {
            let yaml: String = lines.iter().map(|(indent, key, sep, first, rest, end)| format!("{indent}{key}{sep}{first}{}{end}", rest.concat())).collect();
            proptest::prop_assert!(fast_path_agrees(&yaml), "{:?}: fast {:?}", yaml, parse_simple_yaml(&yaml));
        }
    }

    /// Checked on 2.1.197 and 2.1.332: a repeated key keeps its last value, but an earlier
    /// value that does not parse still spoils the block.
    #[test]
    fn a_repeated_key_keeps_its_last_value_only_if_every_value_parses() {
        let desc = |yaml: &str| parse(&format!("---\n{yaml}---\n")).frontmatter.and_then(|f| f.get("description").cloned());
        assert_eq!(desc("description: first\ndescription: second\n"), Some(Value::String("second".into())));
        assert_eq!(desc("description: a: b\ntype: user\ntype: feedback\n"), Some(Value::String("a: b".into())));
        assert_eq!(desc("description: ends:\ndescription: second\n"), None);
        // A block scalar repeated: the first reading already takes it (the retry would quote
        // its `>` and break the lines under it).
        assert_eq!(desc("description: >\n  folded\n  text\ntype: user\ndescription: second\n"), Some(Value::String("second".into())));
        // A tab sends the block to the retry, which quotes the value, comment and all.
        assert_eq!(desc("description: value # comment\nmetadata:\n\ttype: user\n"), Some(Value::String("value # comment".into())));
        assert_eq!(desc("description: value # comment\nmetadata:\n  type: user\n"), Some(Value::String("value".into())));
        let p = parse("---\ndescription: a: b\ntype: user\ntype: feedback\n---\n").frontmatter.unwrap();
        assert_eq!(p.memory_type(), Some(MemoryType::Feedback));
        assert!(p.get("type").is_some() && p.fields.len() == 2, "{:?}", p.fields);
    }

    #[test]
    fn unknown_tags_read_as_their_value() {
        let p = parse("---\ndescription: !tag x\nmetadata:\n  type: !t user\nlist: !l [a, !b c]\n---\n");
        let fm = p.frontmatter.unwrap();
        assert_eq!(fm.get("description"), Some(&Value::String("x".into())));
        assert_eq!(fm.memory_type(), Some(MemoryType::User));
        assert_eq!(fm.get("list"), Some(&Value::Sequence(vec![Value::String("a".into()), Value::String("c".into())])));
    }

    /// `description || null` and `String()`, as Claude Code reads a memory's description.
    #[test]
    fn description_and_name_follow_javascript() {
        for (yaml, expect) in [
            ("hello", Some("hello")),
            ("''", None),
            ("~", None),
            ("0", None),
            ("-0", None),
            ("0.0", None),
            ("0x0", None),
            ("false", None),
            (".nan", None),
            ("true", Some("true")),
            ("42", Some("42")),
            ("1.5", Some("1.5")),
            ("0o17", Some("15")),
            (".inf", Some("Infinity")),
            ("-.inf", Some("-Infinity")),
            ("1e400", Some("Infinity")),
            ("1e21", Some("1e+21")),
            ("1e-7", Some("1e-7")),
            ("12345678901234567890", Some("12345678901234567000")),
            ("[a, b]", Some("a,b")),
            ("[0, false, ~, [1, 2], {a: 1}]", Some("0,false,,1,2,[object Object]")),
            ("[]", Some("")),
            ("{a: 1}", Some("[object Object]")),
        ] {
            let fm = parse(&format!("---\ndescription: {yaml}\nname: {yaml}\ntype: user\n---\n")).frontmatter.unwrap();
            assert_eq!(fm.error, None, "{yaml}");
            assert_eq!(fm.description().as_deref(), expect, "description: {yaml}");
            assert_eq!(fm.name().as_deref(), expect, "name: {yaml}");
        }
    }

    #[test]
    fn wiki_links() {
        assert_eq!(links("see [[a]] and [[b|alias]] and [[a]] [[ c ]]"), vec!["a", "b", "c"]);
        assert_eq!(links("[[d#sec]] [[|x]] [[]] [[e\nf]] [[[g]]] [[h]"), vec!["d", "g"]);
    }

    #[test]
    fn block_bounds_follow_the_javascript_regex() {
        fn b(s: &str) -> Option<(&str, &str)> {
            block_bounds(s).map(|(r, end)| (&s[r], &s[end..]))
        }
        assert_eq!(b("---\na: 1\n---\nbody"), Some(("a: 1\n", "body")));
        assert_eq!(b("---  \n\n a: 1\n---\n\n\nbody"), Some((" a: 1\n", "body")));
        assert_eq!(b("---\na: x---y\n---\nbody"), Some(("a: x", "y\n---\nbody")));
        assert_eq!(b("---a: 1\n---\n"), None);
        assert_eq!(b("---\na: 1\n"), None);
        assert_eq!(b("---\n---\nbody"), Some(("", "body")));
    }
}
