//! One very long transcript line read straight from the file into its compact entry, without
//! holding the line or a parsed value of it.
//!
//! A line longer than the reader's piece (8 MiB) is a giant tool result, a pasted file, an
//! image's base64 or a hostile file. Parsing it whole held the line and its `serde_json` value
//! (about twice its size, briefly) for the few thousand characters an entry keeps. Here it is
//! read through a 64 KiB buffer by a small JSON reader that keeps, as it goes, what
//! [`super::parse_entry`] would keep of the whole value: strings extraction reads whole (ids,
//! `cwd`, text blocks), the start, length and token estimate of tool results and tool inputs,
//! and of everything else only the length of its JSON (the token estimates of attachments,
//! images and unknown blocks). What is held is that, plus one buffer.
//!
//! It reads JSON as [`mneme_core::js_json::parse`] does (Node's `JSON.parse`): invalid UTF-8
//! and unpaired surrogate escapes read as U+FFFD, numbers past a double's range are numbers,
//! nesting past [`mneme_core::js_json::MAX_NESTING`] is refused, anything else not JSON is a
//! malformed line (with this reader's own message). One difference, for hostile lines only: a
//! key repeated inside an object is kept where the whole value would keep the last one (the
//! entry's own fields and a block's fields do take the last; the JSON length an estimate is
//! taken from counts both copies).

use super::{Block, Clipped, Content, Conversation, Entry, EntryType, Message, ToolInput, ToolResultContent, Usage, METADATA_TYPES};
use std::io::{self, Read};

/// Why a line could not be read.
pub(super) enum Fail {
    /// Not JSON: said at a byte position of the line.
    Syntax(String),
    Io(io::Error),
}

type R<T> = Result<T, Fail>;

/// The longest key or `type` kept to compare: no key Claude Code writes is longer.
const KEY_BYTES: usize = 256;

/// The line's bytes, through a buffer.
struct Src<'a> {
    file: &'a mut (dyn Read + Send),
    buf: Box<[u8]>,
    at: usize,
    end: usize,
    /// Bytes of the line not yet in the buffer.
    left: u64,
    /// Bytes of the line consumed before `buf[0]`.
    base: u64,
    depth: usize,
}

impl Src<'_> {
    fn pos(&self) -> u64 {
        self.base + self.at as u64
    }

    fn fill(&mut self) -> R<bool> {
        if self.at < self.end {
            return Ok(true);
        }
        if self.left == 0 {
            return Ok(false);
        }
        self.base += self.end as u64;
        let want = (self.buf.len() as u64).min(self.left) as usize;
        let n = loop {
            match self.file.read(&mut self.buf[..want]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(Fail::Io(e)),
            }
        };
        if n == 0 {
            return Err(Fail::Io(io::Error::new(io::ErrorKind::UnexpectedEof, "the transcript shrank while a line of it was read")));
        }
        self.left -= n as u64;
        self.at = 0;
        self.end = n;
        Ok(true)
    }

    fn peek(&mut self) -> R<Option<u8>> {
        Ok(if self.fill()? { Some(self.buf[self.at]) } else { None })
    }

    fn bump(&mut self) {
        self.at += 1;
    }

    fn next(&mut self) -> R<Option<u8>> {
        let b = self.peek()?;
        if b.is_some() {
            self.bump();
        }
        Ok(b)
    }

    fn fail<T>(&self, what: &str) -> R<T> {
        Err(Fail::Syntax(format!("{what} at byte {} of the line", self.pos())))
    }

    fn ws(&mut self) -> R<Option<u8>> {
        while let Some(b) = self.peek()? {
            if !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return Ok(Some(b));
            }
            self.bump();
        }
        Ok(None)
    }

    fn expect(&mut self, want: u8, what: &str) -> R<()> {
        match self.ws()? {
            Some(b) if b == want => {
                self.bump();
                Ok(())
            }
            Some(_) => self.fail(&format!("expected {what}")),
            None => self.fail(&format!("the line ended where {what} was expected")),
        }
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > mneme_core::js_json::MAX_NESTING {
            return self.fail(&format!("arrays and objects nest more than {} levels", mneme_core::js_json::MAX_NESTING));
        }
        Ok(())
    }
}

/// Where a string's characters go.
trait Sink {
    fn text(&mut self, s: &str);
}

/// All of it.
impl Sink for String {
    fn text(&mut self, s: &str) {
        self.push_str(s);
    }
}

/// Its first [`KEY_BYTES`] bytes, and whether there were more.
#[derive(Default)]
struct Key {
    text: String,
    over: bool,
}

impl Key {
    fn is(&self, name: &str) -> bool {
        !self.over && self.text == name
    }
}

impl Sink for Key {
    fn text(&mut self, s: &str) {
        for c in s.chars() {
            if self.text.len() + c.len_utf8() > KEY_BYTES {
                self.over = true;
                return;
            }
            self.text.push(c);
        }
    }
}

/// A body: its start and length in characters, and its length in UTF-16 units.
#[derive(Default)]
struct Body {
    clipped: Clipped,
    units: u64,
}

impl Sink for Body {
    fn text(&mut self, s: &str) {
        self.clipped.push(s);
        self.units += utf16_len(s);
    }
}

fn utf16_len(s: &str) -> u64 {
    if s.is_ascii() {
        s.len() as u64
    } else {
        s.chars().map(|c| c.len_utf16() as u64).sum()
    }
}

/// A value's JSON as `serde_json` writes it (`Value::to_string`): its length in UTF-16 units
/// and, when asked, its start and length in characters.
#[derive(Default)]
struct Json {
    units: u64,
    head: Option<Clipped>,
}

impl Json {
    fn with_head() -> Json {
        Json { units: 0, head: Some(Clipped::default()) }
    }

    /// Text written as it is (punctuation, numbers, literals).
    fn raw(&mut self, s: &str) {
        self.units += utf16_len(s);
        if let Some(h) = &mut self.head {
            h.push(s);
        }
    }

    fn add(&mut self, other: &Json) {
        self.units += other.units;
        if let (Some(h), Some(o)) = (&mut self.head, &other.head) {
            h.extend(o);
        }
    }
}

/// A string's characters escaped as `serde_json` escapes them.
struct Escaped<'a>(&'a mut Json);

impl Sink for Escaped<'_> {
    fn text(&mut self, s: &str) {
        let mut plain = 0;
        for (i, b) in s.bytes().enumerate() {
            let esc: Option<&str> = match b {
                b'"' => Some("\\\""),
                b'\\' => Some("\\\\"),
                b'\n' => Some("\\n"),
                b'\r' => Some("\\r"),
                b'\t' => Some("\\t"),
                0x08 => Some("\\b"),
                0x0c => Some("\\f"),
                0..=0x1f => None,
                _ => continue,
            };
            self.0.raw(&s[plain..i]);
            match esc {
                Some(e) => self.0.raw(e),
                None => self.0.raw(&format!("\\u{b:04x}")),
            }
            plain = i + 1;
        }
        self.0.raw(&s[plain..]);
    }
}

/// Two sinks at once.
struct Both<'a, 'b>(&'a mut dyn Sink, &'b mut dyn Sink);

impl Sink for Both<'_, '_> {
    fn text(&mut self, s: &str) {
        self.0.text(s);
        self.1.text(s);
    }
}

fn hex(src: &mut Src) -> R<u32> {
    let mut n = 0;
    for _ in 0..4 {
        let d = match src.next()? {
            Some(b) => (b as char).to_digit(16),
            None => None,
        };
        match d {
            Some(d) => n = n * 16 + d,
            None => return src.fail("expected four hex digits after \\u"),
        }
    }
    Ok(n)
}

/// The UTF-8 sequence starting with `lead` (already consumed), or U+FFFD for its longest
/// invalid start, as `String::from_utf8_lossy` (and Node) decode it.
fn utf8(src: &mut Src, lead: u8) -> R<char> {
    let (len, lo, hi) = match lead {
        0xc2..=0xdf => (2, 0x80, 0xbf),
        0xe0 => (3, 0xa0, 0xbf),
        0xe1..=0xec | 0xee..=0xef => (3, 0x80, 0xbf),
        0xed => (3, 0x80, 0x9f),
        0xf0 => (4, 0x90, 0xbf),
        0xf1..=0xf3 => (4, 0x80, 0xbf),
        0xf4 => (4, 0x80, 0x8f),
        _ => return Ok('\u{fffd}'),
    };
    let mut code = (lead as u32) & (0x7f >> len);
    for i in 1..len {
        let (lo, hi) = if i == 1 { (lo, hi) } else { (0x80, 0xbf) };
        match src.peek()? {
            Some(b) if (lo..=hi).contains(&b) => {
                src.bump();
                code = (code << 6) | (b as u32 & 0x3f);
            }
            _ => return Ok('\u{fffd}'),
        }
    }
    Ok(char::from_u32(code).unwrap_or('\u{fffd}'))
}

/// A string whose opening quote is next, its characters to `sink`.
fn string(src: &mut Src, sink: &mut dyn Sink) -> R<()> {
    src.expect(b'"', "a string")?;
    let mut pending: Option<u32> = None; // a high surrogate waiting for its low half
    let mut out = [0u8; 4];
    loop {
        if !src.fill()? {
            return src.fail("the line ended inside a string");
        }
        // A run of plain ASCII, passed on at once.
        let run = src.buf[src.at..src.end].iter().position(|&b| b == b'"' || b == b'\\' || !(0x20..0x80).contains(&b)).unwrap_or(src.end - src.at);
        if run > 0 {
            if pending.take().is_some() {
                sink.text("\u{fffd}");
            }
            let s = std::str::from_utf8(&src.buf[src.at..src.at + run]).unwrap_or_default();
            sink.text(s);
            src.at += run;
            continue;
        }
        let b = src.buf[src.at];
        src.bump();
        let c = match b {
            b'"' => {
                if pending.take().is_some() {
                    sink.text("\u{fffd}");
                }
                return Ok(());
            }
            b'\\' => {
                let e = match src.next()? {
                    Some(e) => e,
                    None => return src.fail("the line ended inside a string"),
                };
                let c = match e {
                    b'"' => '"',
                    b'\\' => '\\',
                    b'/' => '/',
                    b'b' => '\u{8}',
                    b'f' => '\u{c}',
                    b'n' => '\n',
                    b'r' => '\r',
                    b't' => '\t',
                    b'u' => {
                        let unit = hex(src)?;
                        match (pending.take(), unit) {
                            (Some(high), 0xdc00..=0xdfff) => {
                                char::from_u32(0x10000 + ((high - 0xd800) << 10) + (unit - 0xdc00)).unwrap_or('\u{fffd}')
                            }
                            (high, 0xd800..=0xdbff) => {
                                if high.is_some() {
                                    sink.text("\u{fffd}");
                                }
                                pending = Some(unit);
                                continue;
                            }
                            (high, _) => {
                                if high.is_some() {
                                    sink.text("\u{fffd}");
                                }
                                char::from_u32(unit).unwrap_or('\u{fffd}')
                            }
                        }
                    }
                    _ => return src.fail("an invalid escape in a string"),
                };
                if !matches!(e, b'u') && pending.take().is_some() {
                    sink.text("\u{fffd}");
                }
                c
            }
            0..=0x1f => return src.fail("a control character inside a string"),
            _ => {
                if pending.take().is_some() {
                    sink.text("\u{fffd}");
                }
                utf8(src, b)?
            }
        };
        sink.text(c.encode_utf8(&mut out));
    }
}

/// A number's text, checked against JSON's grammar.
fn number(src: &mut Src) -> R<String> {
    let mut t = String::new();
    let digits = |src: &mut Src, t: &mut String| -> R<usize> {
        let mut n = 0;
        while let Some(b @ b'0'..=b'9') = src.peek()? {
            src.bump();
            t.push(b as char);
            n += 1;
        }
        Ok(n)
    };
    if src.peek()? == Some(b'-') {
        src.bump();
        t.push('-');
    }
    match src.peek()? {
        Some(b'0') => {
            src.bump();
            t.push('0');
        }
        Some(b'1'..=b'9') => {
            digits(src, &mut t)?;
        }
        _ => return src.fail("expected a digit"),
    }
    if src.peek()? == Some(b'.') {
        src.bump();
        t.push('.');
        if digits(src, &mut t)? == 0 {
            return src.fail("expected a digit after the decimal point");
        }
    }
    if let Some(b @ (b'e' | b'E')) = src.peek()? {
        src.bump();
        t.push(b as char);
        if let Some(s @ (b'+' | b'-')) = src.peek()? {
            src.bump();
            t.push(s as char);
        }
        if digits(src, &mut t)? == 0 {
            return src.fail("expected a digit in the exponent");
        }
    }
    Ok(t)
}

/// A number as `serde_json` holds it (a double's largest for one out of range, as `js_json`).
fn number_value(text: &str) -> serde_json::Value {
    serde_json::from_str::<serde_json::Value>(text).unwrap_or_else(|_| {
        let big = if text.starts_with('-') { f64::MIN } else { f64::MAX };
        serde_json::Value::from(big)
    })
}

fn literal(src: &mut Src, word: &str) -> R<()> {
    for w in word.bytes() {
        if src.next()? != Some(w) {
            return src.fail(&format!("expected `{word}`"));
        }
    }
    Ok(())
}

/// An object whose `{` is next: each key (its start) and `json` (the object's JSON, keys and
/// punctuation; `value` adds each value's) to `value`, which must read the value.
fn object(src: &mut Src, json: &mut Json, mut value: impl FnMut(&mut Src, &Key, &mut Json) -> R<()>) -> R<()> {
    sequence(src, json, (b'{', b'}'), "an object", |src, _, json| {
        let mut key = Key::default();
        if src.ws()? != Some(b'"') {
            return src.fail("expected a key");
        }
        json.raw("\"");
        string(src, &mut Both(&mut key, &mut Escaped(json)))?;
        json.raw("\":");
        src.expect(b':', "`:`")?;
        value(src, &key, json)
    })
}

/// An array whose `[` is next: `item` reads each item (with its index).
fn array(src: &mut Src, json: &mut Json, item: impl FnMut(&mut Src, usize, &mut Json) -> R<()>) -> R<()> {
    sequence(src, json, (b'[', b']'), "an array", item)
}

/// What an object and an array share: `open` is next, then members separated by `,` until
/// `close`, each read by `member` (with its index), and the punctuation added to `json`. The
/// nesting depth counts it while it is read.
fn sequence(src: &mut Src, json: &mut Json, (open, close): (u8, u8), what: &str, mut member: impl FnMut(&mut Src, usize, &mut Json) -> R<()>) -> R<()> {
    src.expect(open, what)?;
    src.enter()?;
    json.raw((open as char).encode_utf8(&mut [0; 4]));
    if src.ws()? == Some(close) {
        src.bump();
    } else {
        let mut i = 0;
        loop {
            if i > 0 {
                json.raw(",");
            }
            member(src, i, json)?;
            i += 1;
            match src.ws()? {
                Some(b',') => src.bump(),
                Some(b) if b == close => {
                    src.bump();
                    break;
                }
                _ => return src.fail(&format!("expected `,` or `{}`", close as char)),
            }
        }
    }
    json.raw((close as char).encode_utf8(&mut [0; 4]));
    src.depth -= 1;
    Ok(())
}

/// Any value, only its JSON measured.
fn any(src: &mut Src, json: &mut Json) -> R<()> {
    match src.ws()? {
        Some(b'{') => object(src, json, |src, _, json| any(src, json)),
        Some(b'[') => array(src, json, |src, _, json| any(src, json)),
        Some(b'"') => {
            json.raw("\"");
            string(src, &mut Escaped(json))?;
            json.raw("\"");
            Ok(())
        }
        Some(b't') => literal(src, "true").map(|_| json.raw("true")),
        Some(b'f') => literal(src, "false").map(|_| json.raw("false")),
        Some(b'n') => literal(src, "null").map(|_| json.raw("null")),
        Some(b'-' | b'0'..=b'9') => {
            let t = number(src)?;
            json.raw(&number_value(&t).to_string());
            Ok(())
        }
        Some(_) => src.fail("expected a value"),
        None => src.fail("the line ended where a value was expected"),
    }
}

/// A value kept when it is a string (`Value::as_str`), else `None`; `keep` a string's text.
fn opt_string(src: &mut Src, json: &mut Json, keep: &mut dyn Sink) -> R<bool> {
    if src.ws()? != Some(b'"') {
        any(src, json)?;
        return Ok(false);
    }
    json.raw("\"");
    string(src, &mut Both(keep, &mut Escaped(json)))?;
    json.raw("\"");
    Ok(true)
}

fn opt_whole(src: &mut Src, json: &mut Json) -> R<Option<String>> {
    let mut s = String::new();
    Ok(opt_string(src, json, &mut s)?.then_some(s))
}

/// `Value::as_bool`.
fn opt_bool(src: &mut Src, json: &mut Json) -> R<Option<bool>> {
    Ok(match src.ws()? {
        Some(b't') => literal(src, "true").map(|_| json.raw("true")).map(|_| Some(true))?,
        Some(b'f') => literal(src, "false").map(|_| json.raw("false")).map(|_| Some(false))?,
        _ => {
            any(src, json)?;
            None
        }
    })
}

/// `Value::as_u64`.
fn opt_u64(src: &mut Src, json: &mut Json) -> R<Option<u64>> {
    if !matches!(src.ws()?, Some(b'-' | b'0'..=b'9')) {
        any(src, json)?;
        return Ok(None);
    }
    let v = number_value(&number(src)?);
    json.raw(&v.to_string());
    Ok(v.as_u64())
}

/// The fields of a content block (or of an item of a tool result's content) that any reading
/// of it takes, whatever its `type` turns out to be.
#[derive(Default)]
struct BlockParts {
    /// Whole, as the block keeps it (`Block::Other`'s kind).
    kind: Option<String>,
    /// `text` whole (a message's block) or its start (an item of a tool result).
    text: Option<String>,
    text_body: Option<Body>,
    /// UTF-16 length of `thinking` / `data` when a string.
    thinking: Option<u64>,
    data: Option<u64>,
    id: Option<String>,
    name: Option<String>,
    tool_use_id: Option<String>,
    input: Option<(Json, Option<String>, bool)>,
    content: Option<ToolResultContent>,
    is_error: bool,
}

impl BlockParts {
    fn kind(&self) -> &str {
        self.kind.as_deref().unwrap_or_default()
    }

    /// May this block still be `kind` (so its field for that kind is worth keeping)?
    fn may_be(&self, kind: &str) -> bool {
        self.kind.as_deref().is_none_or(|k| k == kind)
    }
}

/// A block object whose `{` is next; `whole_text`: keep `text` whole (a message's block) or
/// only its start (an item of a tool result's content, which the prompt cuts).
fn block_parts(src: &mut Src, json: &mut Json, whole_text: bool) -> R<BlockParts> {
    let mut p = BlockParts::default();
    object(src, json, |src, key, json| {
        match key.text.as_str() {
            _ if key.over => any(src, json)?,
            "type" => p.kind = opt_whole(src, json)?,
            "text" if whole_text && p.may_be("text") => {
                p.text = opt_whole(src, json)?;
                p.text_body = None;
            }
            "text" if !whole_text => {
                let mut b = Body::default();
                p.text_body = opt_string(src, json, &mut b)?.then_some(b);
                p.text = None;
            }
            "thinking" | "data" => {
                let mut n = 0;
                let units = opt_string(src, json, &mut Units(&mut n))?.then_some(n);
                if key.is("thinking") {
                    p.thinking = units;
                } else {
                    p.data = units;
                }
            }
            "id" => p.id = opt_whole(src, json)?,
            "name" => p.name = opt_whole(src, json)?,
            "tool_use_id" => p.tool_use_id = opt_whole(src, json)?,
            "input" => {
                let mut own = Json::with_head();
                let mut file_path = None;
                let null = src.ws()? == Some(b'n');
                if src.ws()? == Some(b'{') {
                    object(src, &mut own, |src, key, own| {
                        if key.is("file_path") {
                            file_path = opt_whole(src, own)?;
                        } else {
                            any(src, own)?;
                        }
                        Ok(())
                    })?;
                } else {
                    any(src, &mut own)?;
                }
                json.add(&own);
                p.input = Some((own, file_path, null));
            }
            "content" => p.content = Some(result_content(src, json)?),
            "is_error" => p.is_error = opt_bool(src, json)?.unwrap_or(false),
            _ => any(src, json)?,
        }
        Ok(())
    })?;
    Ok(p)
}

/// Counts UTF-16 units only.
struct Units<'a>(&'a mut u64);

impl Sink for Units<'_> {
    fn text(&mut self, s: &str) {
        *self.0 += utf16_len(s);
    }
}

fn tokens_of_units(units: u64) -> u64 {
    (units + 2) / 4
}

/// [`super::parse_block`] of a block read by [`block_parts`], `json` being its JSON.
fn block(p: BlockParts, json: &Json) -> Block {
    let kind = p.kind().to_string();
    let kind = kind.as_str();
    let other = || Block::Other { kind: kind.to_string(), tokens: if kind == "image" || kind == "document" { 2000 } else { tokens_of_units(json.units) } };
    match kind {
        "text" => match p.text {
            Some(text) => Block::Text { text },
            None => other(),
        },
        "tool_use" => match (p.id, p.name) {
            (Some(id), Some(name)) => {
                let (own, file_path, null) = p.input.unwrap_or_else(|| {
                    let mut j = Json::with_head();
                    j.raw("null");
                    (j, None, true)
                });
                let input_units = if null { 2 } else { own.units };
                let tokens = tokens_of_units(utf16_len(&name) + input_units);
                let mut json = own.head.unwrap_or_default();
                json.head.shrink_to_fit();
                Block::ToolUse { id, name, input: ToolInput { file_path, json, tokens } }
            }
            _ => other(),
        },
        "tool_result" => match p.tool_use_id {
            Some(tool_use_id) => Block::ToolResult { tool_use_id, content: p.content.unwrap_or_default(), is_error: p.is_error },
            None => other(),
        },
        "thinking" => Block::Thinking { tokens: tokens_of_units(p.thinking.unwrap_or(0)) },
        "redacted_thinking" => Block::RedactedThinking { tokens: tokens_of_units(p.data.unwrap_or(0)) },
        _ => other(),
    }
}

/// [`ToolResultContent::from_value`] of the value next, its JSON added to `json`.
fn result_content(src: &mut Src, json: &mut Json) -> R<ToolResultContent> {
    let mut out = ToolResultContent::default();
    match src.ws()? {
        Some(b'"') => {
            let mut body = Body::default();
            opt_string(src, json, &mut body)?;
            out.text = body.clipped;
            out.tokens = tokens_of_units(body.units);
        }
        Some(b'[') => {
            array(src, json, |src, i, json| {
                if i > 0 {
                    out.text.push("\n");
                }
                let mut own = Json::with_head();
                match src.ws()? {
                    Some(b'{') => {
                        let p = block_parts(src, &mut own, false)?;
                        match p.kind.as_deref() {
                            Some("text") => {
                                if let Some(b) = &p.text_body {
                                    out.text.extend(&b.clipped);
                                }
                            }
                            Some(other) => out.text.push(&format!("[{other}]")),
                            None => out.text.extend(own.head.as_ref().expect("a head")),
                        }
                        // A text item's estimate is of its whole text, of which only the start
                        // is kept.
                        out.tokens += match (&p.text_body, p.kind.as_deref() == Some("text")) {
                            (Some(b), true) => tokens_of_units(b.units),
                            _ => block(p, &own).rough_tokens(),
                        };
                    }
                    Some(b'"') => {
                        let mut units = 0;
                        own.raw("\"");
                        string(src, &mut Both(&mut Units(&mut units), &mut Escaped(&mut own)))?;
                        own.raw("\"");
                        out.text.extend(own.head.as_ref().expect("a head"));
                        out.tokens += tokens_of_units(units);
                    }
                    _ => {
                        any(src, &mut own)?;
                        out.text.extend(own.head.as_ref().expect("a head"));
                        out.tokens += tokens_of_units(own.units);
                    }
                }
                json.add(&own);
                Ok(())
            })?;
        }
        Some(b'n') => any(src, json)?,
        _ => {
            let mut own = Json::with_head();
            any(src, &mut own)?;
            out.text.extend(own.head.as_ref().expect("a head"));
            json.add(&own);
        }
    }
    // Pieces were appended: let go of what the growth left over.
    out.text.head.shrink_to_fit();
    Ok(out)
}

/// [`super::parse_message`] of the value next (an object, else `None`).
fn message(src: &mut Src, json: &mut Json) -> R<Option<Message>> {
    if src.ws()? != Some(b'{') {
        any(src, json)?;
        return Ok(None);
    }
    let mut m = Message { role: None, id: None, model: None, content: Content::Blocks(Vec::new()), stop_reason: None, usage: None };
    object(src, json, |src, key, json| {
        match key.text.as_str() {
            _ if key.over => any(src, json)?,
            "role" => m.role = opt_whole(src, json)?,
            "id" => m.id = opt_whole(src, json)?,
            "model" => m.model = opt_whole(src, json)?,
            "stop_reason" => m.stop_reason = opt_whole(src, json)?,
            "usage" => {
                m.usage = None;
                if src.ws()? == Some(b'{') {
                    let mut u = Usage::default();
                    object(src, json, |src, key, json| {
                        let n = opt_u64(src, json)?.unwrap_or(0);
                        match key.text.as_str() {
                            _ if key.over => {}
                            "input_tokens" => u.input_tokens = n,
                            "output_tokens" => u.output_tokens = n,
                            "cache_creation_input_tokens" => u.cache_creation_input_tokens = n,
                            "cache_read_input_tokens" => u.cache_read_input_tokens = n,
                            _ => {}
                        }
                        Ok(())
                    })?;
                    m.usage = Some(u);
                } else {
                    any(src, json)?;
                }
            }
            "content" => {
                m.content = match src.ws()? {
                    Some(b'"') => Content::Text(opt_whole(src, json)?.unwrap_or_default()),
                    Some(b'[') => {
                        let mut blocks = Vec::new();
                        array(src, json, |src, _, json| {
                            let mut own = Json::default();
                            let b = match src.ws()? {
                                Some(b'"') => Block::Text { text: opt_whole(src, &mut own)?.unwrap_or_default() },
                                Some(b'{') => {
                                    let p = block_parts(src, &mut own, true)?;
                                    block(p, &own)
                                }
                                _ => {
                                    any(src, &mut own)?;
                                    Block::Other { kind: String::new(), tokens: tokens_of_units(own.units) }
                                }
                            };
                            json.add(&own);
                            blocks.push(b);
                            Ok(())
                        })?;
                        Content::Blocks(blocks)
                    }
                    _ => {
                        any(src, json)?;
                        Content::Blocks(Vec::new())
                    }
                };
            }
            _ => any(src, json)?,
        }
        Ok(())
    })?;
    Ok(Some(m))
}

/// [`super::parse_entry`] of a line of `len` bytes read from `file` (its `\n` not counted), or
/// `None` for a line of nothing but blanks.
pub(super) fn entry(file: &mut (dyn Read + Send), len: u64) -> Result<Option<Entry>, Fail> {
    let mut src = Src { file, buf: vec![0u8; 64 << 10].into_boxed_slice(), at: 0, end: 0, left: len, base: 0, depth: 0 };
    // `parse_complete_lines` passes over a line of ASCII blanks (a form feed among them).
    let mut form_feed = false;
    while let Some(b) = src.peek()? {
        match b {
            b' ' | b'\t' | b'\n' | b'\r' => src.bump(),
            0x0c => {
                form_feed = true;
                src.bump();
            }
            _ => break,
        }
    }
    if src.peek()?.is_none() {
        return Ok(None);
    }
    if form_feed {
        return src.fail("a form feed before the value");
    }
    let mut json = Json::default();
    let entry = if src.peek()? != Some(b'{') {
        any(&mut src, &mut json)?;
        Entry::Unknown { kind: None, session_id: None }
    } else {
        let mut f = Fields::default();
        object(&mut src, &mut json, |src, key, json| {
            if key.over {
                return any(src, json);
            }
            let slot = match key.text.as_str() {
                "type" => &mut f.kind,
                "sessionId" => &mut f.session_id,
                "uuid" => &mut f.uuid,
                "parentUuid" => &mut f.parent_uuid,
                "logicalParentUuid" => &mut f.logical_parent_uuid,
                "agentId" => &mut f.agent_id,
                "cwd" => &mut f.cwd,
                "timestamp" => &mut f.timestamp,
                "subtype" => &mut f.subtype,
                "isSidechain" | "isMeta" | "isCompactSummary" => {
                    let b = opt_bool(src, json)?.unwrap_or(false);
                    *match key.text.as_str() {
                        "isSidechain" => &mut f.is_sidechain,
                        "isMeta" => &mut f.is_meta,
                        _ => &mut f.is_compact_summary,
                    } = b;
                    return Ok(());
                }
                "message" => {
                    f.message = message(src, json)?;
                    return Ok(());
                }
                "attachment" => {
                    let mut own = Json::default();
                    any(src, &mut own)?;
                    f.attachment_tokens = Some(tokens_of_units(own.units));
                    return Ok(());
                }
                _ => return any(src, json),
            };
            *slot = opt_whole(src, json)?;
            Ok(())
        })?;
        f.entry()
    };
    if src.ws()?.is_some() {
        return src.fail("more after the value");
    }
    Ok(Some(entry))
}

/// What an entry's object holds, each the last of its key.
#[derive(Default)]
struct Fields {
    kind: Option<String>,
    session_id: Option<String>,
    uuid: Option<String>,
    parent_uuid: Option<String>,
    logical_parent_uuid: Option<String>,
    agent_id: Option<String>,
    cwd: Option<String>,
    timestamp: Option<String>,
    subtype: Option<String>,
    is_sidechain: bool,
    is_meta: bool,
    is_compact_summary: bool,
    message: Option<Message>,
    attachment_tokens: Option<u64>,
}

impl Fields {
    fn entry(self) -> Entry {
        let Some(k) = self.kind.as_deref() else { return Entry::Unknown { kind: None, session_id: self.session_id } };
        if METADATA_TYPES.contains(&k) {
            return Entry::Metadata { kind: k.to_string(), session_id: self.session_id };
        }
        let (Some(entry_type), Some(uuid)) = (EntryType::parse(k), self.uuid) else {
            return Entry::Unknown { kind: self.kind, session_id: self.session_id };
        };
        Entry::Conversation(Box::new(Conversation {
            entry_type,
            uuid,
            parent_uuid: self.parent_uuid,
            logical_parent_uuid: self.logical_parent_uuid,
            is_sidechain: self.is_sidechain,
            is_meta: self.is_meta,
            is_compact_summary: self.is_compact_summary,
            agent_id: self.agent_id,
            session_id: self.session_id,
            cwd: self.cwd,
            timestamp: self.timestamp,
            subtype: self.subtype,
            message: match entry_type {
                EntryType::User | EntryType::Assistant => self.message,
                _ => None,
            },
            attachment_tokens: self.attachment_tokens,
        }))
    }
}
