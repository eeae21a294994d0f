//! Claude Code's session transcripts (`<config>/projects/<sanitized cwd>/<session>.jsonl`).
//!
//! One JSON object per line, appended while the session runs. Conversation entries (`user`,
//! `assistant`, `attachment`, `system`, and the legacy `progress`) carry a `uuid` and the
//! `parentUuid` of the entry before them; metadata entries (`summary`, `custom-title`,
//! `last-prompt`, `queue-operation`, …) carry no message. Reading is tolerant in the ways a live
//! file demands:
//!
//! - the last line may still be being written: [`TranscriptReader`] keeps a byte cursor and only
//!   consumes complete (`\n`-terminated) lines, so the rest is read again next time;
//! - entry and block types this version does not know are kept as [`Entry::Unknown`] /
//!   [`Block::Other`], never an error, because Claude Code adds types in minor releases;
//! - a complete line that is not JSON is counted and skipped, as Claude Code's own loader does.
//!
//! Entries are compact: each line is parsed and then only what extraction and session memory
//! read of it is kept (ids, flags, text blocks, and of tool calls their `file_path`, the start
//! of their input and result as the prompt shows it, their lengths and token estimates). Long
//! sessions run to hundreds of MB, nearly all tool results. Every read goes into a [`Window`],
//! which holds at most [`HELD_LIMIT_BYTES`] of the newest entries and counts what it lets go.
//!
//! [`conversation`] rebuilds the main thread's messages the way Claude Code holds them in memory:
//! the `parentUuid` chain back from the newest entry (which stops at a compaction boundary and
//! leaves abandoned branches out), plus the tool results of parallel tool calls that hang off the
//! chain as siblings, in file order. Sub-agent entries (`isSidechain`, `agentId`) are never part
//! of it.

use mneme_core::text::estimate_tokens;
use serde_json::{Map, Value};
use std::collections::{HashMap, HashSet};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::Path;

mod skim;

/// Metadata entry types of Claude Code 2.1.197 (entries without a message).
pub const METADATA_TYPES: &[&str] = &[
    "summary",
    "custom-title",
    "ai-title",
    "last-prompt",
    "task-summary",
    "tag",
    "agent-name",
    "agent-color",
    "agent-setting",
    "pr-link",
    "mode",
    "worktree-state",
    "content-replacement",
    "file-history-snapshot",
    "attribution-snapshot",
    "queue-operation",
    "speculation-accept",
    "marble-origami-commit",
    "marble-origami-snapshot",
];

/// The kinds of conversation entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EntryType {
    User,
    Assistant,
    Attachment,
    System,
    /// The legacy `progress` entries of older versions.
    Progress,
}

impl EntryType {
    fn parse(s: &str) -> Option<EntryType> {
        Some(match s {
            "user" => EntryType::User,
            "assistant" => EntryType::Assistant,
            "attachment" => EntryType::Attachment,
            "system" => EntryType::System,
            "progress" => EntryType::Progress,
            _ => return None,
        })
    }

    pub fn as_str(self) -> &'static str {
        match self {
            EntryType::User => "user",
            EntryType::Assistant => "assistant",
            EntryType::Attachment => "attachment",
            EntryType::System => "system",
            EntryType::Progress => "progress",
        }
    }
}

/// One line of a transcript.
#[derive(Debug, Clone, PartialEq)]
pub enum Entry {
    Conversation(Box<Conversation>),
    /// A metadata entry (one of [`METADATA_TYPES`]).
    /// With its `sessionId`, all that is read of it (the entry itself is not kept).
    Metadata { kind: String, session_id: Option<String> },
    /// Anything else: a type this version does not know, or a conversation entry without a
    /// `uuid`, with its `sessionId`; never an error.
    Unknown { kind: Option<String>, session_id: Option<String> },
}

impl Entry {
    pub fn as_conversation(&self) -> Option<&Conversation> {
        match self {
            Entry::Conversation(c) => Some(c),
            _ => None,
        }
    }
}

/// A conversation entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub entry_type: EntryType,
    pub uuid: String,
    /// `null` at the first entry and at compaction boundaries.
    pub parent_uuid: Option<String>,
    pub logical_parent_uuid: Option<String>,
    pub is_sidechain: bool,
    pub is_meta: bool,
    pub is_compact_summary: bool,
    /// Set on a sub-agent's entries.
    pub agent_id: Option<String>,
    pub session_id: Option<String>,
    pub cwd: Option<String>,
    pub timestamp: Option<String>,
    /// `system` entries: what kind (`compact_boundary`, `memory_saved`, …).
    pub subtype: Option<String>,
    /// `user` and `assistant` entries.
    pub message: Option<Message>,
    /// `attachment` entries: `roughTokenCountEstimation` of the attachment as written (its
    /// JSON), which is all session memory reads of it; the attachment itself (a file's text,
    /// a hook's output) is not kept.
    pub attachment_tokens: Option<u64>,
}

impl Conversation {
    /// Whether this entry belongs to the main thread (not a sub-agent's).
    pub fn is_main_thread(&self) -> bool {
        !self.is_sidechain && self.agent_id.is_none()
    }

    /// The `tool_use` blocks of an assistant entry.
    pub fn tool_uses(&self) -> impl Iterator<Item = ToolUse<'_>> {
        let blocks: &[Block] = match (&self.entry_type, &self.message) {
            (EntryType::Assistant, Some(Message { content: Content::Blocks(b), .. })) => b,
            _ => &[],
        };
        blocks.iter().filter_map(|b| match b {
            Block::ToolUse { id, name, input } => Some(ToolUse { id, name, input }),
            _ => None,
        })
    }

    /// The `tool_result` blocks of a user entry: `(tool_use_id, is_error)`.
    pub fn tool_results(&self) -> impl Iterator<Item = (&str, bool)> {
        let blocks: &[Block] = match (&self.entry_type, &self.message) {
            (EntryType::User, Some(Message { content: Content::Blocks(b), .. })) => b,
            _ => &[],
        };
        blocks.iter().filter_map(|b| match b {
            Block::ToolResult { tool_use_id, is_error, .. } => Some((tool_use_id.as_str(), *is_error)),
            _ => None,
        })
    }
}

/// A `tool_use` block, borrowed.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ToolUse<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub input: &'a ToolInput,
}

impl ToolUse<'_> {
    /// `input.file_path` when it is a string (Edit, Write, Read).
    pub fn file_path(&self) -> Option<&str> {
        self.input.file_path.as_deref()
    }
}

/// The `message` of a user or assistant entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub role: Option<String>,
    /// The API message id; one API response split into several entries shares it.
    pub id: Option<String>,
    pub model: Option<String>,
    pub content: Content,
    /// `end_turn`, `tool_use`, `max_tokens`, …; `None` while a response is still streaming.
    pub stop_reason: Option<String>,
    pub usage: Option<Usage>,
}

impl Message {
    /// All text: the string content, or the text blocks joined with `\n`.
    pub fn text(&self) -> String {
        match &self.content {
            Content::Text(s) => s.clone(),
            Content::Blocks(blocks) => blocks
                .iter()
                .filter_map(|b| match b {
                    Block::Text { text } => Some(text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }
}

/// An API response's token usage.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub cache_creation_input_tokens: u64,
    pub cache_read_input_tokens: u64,
}

impl Usage {
    /// `getTokenCountFromUsage`: the whole context at that call (input + cache + output).
    pub fn context_tokens(&self) -> u64 {
        // Saturating: the counts come from the transcript, which may hold anything.
        self.input_tokens
            .saturating_add(self.cache_creation_input_tokens)
            .saturating_add(self.cache_read_input_tokens)
            .saturating_add(self.output_tokens)
    }
}

/// Message content: a plain string, or Anthropic content blocks.
#[derive(Debug, Clone, PartialEq)]
pub enum Content {
    Text(String),
    Blocks(Vec<Block>),
}

/// One content block.
#[derive(Debug, Clone, PartialEq)]
pub enum Block {
    Text { text: String },
    /// `input` is what extraction reads of it (see [`ToolInput`]).
    ToolUse { id: String, name: String, input: ToolInput },
    /// `content` is what extraction reads of it, not the body itself (see [`ToolResultContent`]).
    ToolResult { tool_use_id: String, content: ToolResultContent, is_error: bool },
    /// Of a thinking block, only its token estimate: the prompt never shows it.
    Thinking { tokens: u64 },
    RedactedThinking { tokens: u64 },
    /// `image`, `document`, server tool blocks, and anything newer, with the rough token count
    /// of the block (all that is read of it: an image's data is not kept).
    Other { kind: String, tokens: u64 },
}

impl Block {
    /// `roughTokenCountEstimationForContent` over this block.
    pub fn rough_tokens(&self) -> u64 {
        match self {
            Block::Text { text } => estimate_tokens(text) as u64,
            Block::ToolUse { input, .. } => input.tokens,
            Block::ToolResult { content, .. } => content.tokens,
            Block::Thinking { tokens } | Block::RedactedThinking { tokens } => *tokens,
            Block::Other { tokens, .. } => *tokens,
        }
    }
}

/// How many characters of a tool result's text are kept: the most the extraction prompt shows
/// of one. Long sessions are mostly tool results (whole files, command output), and keeping
/// every body would hold the transcript's size in memory for a few thousand characters each.
pub const TOOL_RESULT_HEAD_CHARS: usize = 2_000;

/// A text of which only the start is kept: its first [`TOOL_RESULT_HEAD_CHARS`] characters
/// (or all of it) and how long it is, which is all the prompt shows of it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Clipped {
    /// The first [`TOOL_RESULT_HEAD_CHARS`] characters, or all.
    pub head: String,
    /// How many characters the text has in all.
    pub chars: usize,
}

impl Clipped {
    /// Appends to the text: counted whole, kept up to the head's length.
    fn push(&mut self, s: &str) {
        let room = TOOL_RESULT_HEAD_CHARS.saturating_sub(self.chars);
        let mut n = 0;
        for (i, _) in s.char_indices() {
            if n == room {
                self.head.push_str(&s[..i]);
                self.chars += n + s[i..].chars().count();
                return;
            }
            n += 1;
        }
        self.head.push_str(s);
        self.chars += n;
    }

    /// Appends another clipped text: its start as far as there is room, its length whole.
    fn extend(&mut self, other: &Clipped) {
        let chars = self.chars + other.chars;
        self.push(&other.head);
        self.chars = chars;
    }

    fn of(s: &str) -> Clipped {
        let mut c = Clipped::default();
        c.push(s);
        c.head.shrink_to_fit();
        c
    }

    /// The text cut to `max` characters (at most [`TOOL_RESULT_HEAD_CHARS`]), with how many
    /// more there were: `… [N more characters]`.
    pub fn clipped(&self, max: usize) -> String {
        debug_assert!(max <= TOOL_RESULT_HEAD_CHARS);
        if self.chars <= max {
            return self.head.clone();
        }
        let cut = self.head.char_indices().nth(max).map_or(self.head.len(), |(i, _)| i);
        format!("{}… [{} more characters]", &self.head[..cut], self.chars - max)
    }
}

/// What extraction reads of a tool result's `content` (a string, an array of blocks, or
/// anything else), taken when the line is read so the body can be dropped.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolResultContent {
    /// The text as the prompt renders it: a string as it is; an array's text blocks' text,
    /// other blocks as `[type]`, untyped items as JSON, one per line; nothing for null;
    /// anything else as JSON.
    pub text: Clipped,
    /// `roughTokenCountEstimationForContent`: a string's estimate, an array's items' sum (a
    /// bare string's, or each block's as [`Block::rough_tokens`]); 0 for anything else.
    pub tokens: u64,
}

impl ToolResultContent {
    fn from_value(v: &Value) -> ToolResultContent {
        let mut out = ToolResultContent::default();
        match v {
            Value::String(s) => {
                out.text.push(s);
                out.tokens = body_tokens(s);
            }
            Value::Array(items) => {
                for (i, b) in items.iter().enumerate() {
                    if i > 0 {
                        out.text.push("\n");
                    }
                    match b.get("type").and_then(Value::as_str) {
                        Some("text") => out.text.push(b.get("text").and_then(Value::as_str).unwrap_or_default()),
                        Some(other) => out.text.push(&format!("[{other}]")),
                        None => out.text.push(&b.to_string()),
                    }
                    out.tokens += match b {
                        Value::String(s) => body_tokens(s),
                        other => parse_block(other).rough_tokens(),
                    };
                }
            }
            Value::Null => {}
            other => out.text.push(&other.to_string()),
        }
        out.text.head.shrink_to_fit();
        out
    }
}

/// [`estimate_tokens`] of a tool result's body, which is read whole for it when the line is
/// read, whether or not session memory ever asks: most bodies are ASCII, whose UTF-16 length
/// is their length, found without decoding every character.
fn body_tokens(s: &str) -> u64 {
    if s.is_ascii() {
        (s.len() as u64 + 2) / 4
    } else {
        estimate_tokens(s) as u64
    }
}

/// What extraction reads of a `tool_use` block's `input`, taken when the line is read (a
/// Write's input holds the whole file written).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolInput {
    /// `input.file_path` when it is a string (Edit, Write, Read).
    pub file_path: Option<String>,
    /// The input as JSON (`null` when there is none), as the prompt shows it.
    pub json: Clipped,
    /// `roughTokenCountEstimationForContent` of the block: the tool's name and its input's
    /// JSON (`{}` when there is none).
    pub tokens: u64,
}

impl ToolInput {
    fn new(name: &str, input: Option<&Value>) -> ToolInput {
        let input = input.unwrap_or(&Value::Null);
        let json = input.to_string();
        let for_tokens = if input.is_null() { "{}" } else { json.as_str() };
        ToolInput {
            file_path: input.get("file_path").and_then(Value::as_str).map(str::to_string),
            tokens: estimate_tokens(&format!("{name}{for_tokens}")) as u64,
            json: Clipped::of(&json),
        }
    }
}

fn string(obj: &Map<String, Value>, key: &str) -> Option<String> {
    obj.get(key).and_then(Value::as_str).map(str::to_string)
}

fn flag(obj: &Map<String, Value>, key: &str) -> bool {
    obj.get(key).and_then(Value::as_bool).unwrap_or(false)
}

/// Interprets one content block.
pub fn parse_block(v: &Value) -> Block {
    let kind = v.get("type").and_then(Value::as_str).unwrap_or_default();
    let s = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    match kind {
        "text" => match s("text") {
            Some(text) => Block::Text { text },
            None => other(kind, v),
        },
        "tool_use" => match (s("id"), s("name")) {
            (Some(id), Some(name)) => {
                let input = ToolInput::new(&name, v.get("input"));
                Block::ToolUse { id, name, input }
            }
            _ => other(kind, v),
        },
        "tool_result" => match s("tool_use_id") {
            Some(tool_use_id) => Block::ToolResult {
                tool_use_id,
                content: ToolResultContent::from_value(v.get("content").unwrap_or(&Value::Null)),
                is_error: v.get("is_error").and_then(Value::as_bool).unwrap_or(false),
            },
            None => other(kind, v),
        },
        "thinking" => Block::Thinking { tokens: s("thinking").map_or(0, |t| estimate_tokens(&t) as u64) },
        "redacted_thinking" => Block::RedactedThinking { tokens: s("data").map_or(0, |t| estimate_tokens(&t) as u64) },
        _ => other(kind, v),
    }
}

/// A block of a kind not read here: an image or document counts as 2000 tokens, as Claude
/// Code's estimate has it; anything else by its JSON.
fn other(kind: &str, v: &Value) -> Block {
    let tokens = if kind == "image" || kind == "document" { 2000 } else { estimate_tokens(&v.to_string()) as u64 };
    Block::Other { kind: kind.into(), tokens }
}

fn parse_content(v: Option<&Value>) -> Content {
    match v {
        Some(Value::String(s)) => Content::Text(s.clone()),
        Some(Value::Array(items)) => Content::Blocks(
            items
                .iter()
                .map(|b| match b {
                    // Claude Code's estimators accept bare strings inside content arrays.
                    Value::String(s) => Block::Text { text: s.clone() },
                    other => parse_block(other),
                })
                .collect(),
        ),
        _ => Content::Blocks(Vec::new()),
    }
}

fn parse_usage(v: &Value) -> Option<Usage> {
    let obj = v.as_object()?;
    let n = |k: &str| obj.get(k).and_then(Value::as_u64).unwrap_or(0);
    Some(Usage {
        input_tokens: n("input_tokens"),
        output_tokens: n("output_tokens"),
        cache_creation_input_tokens: n("cache_creation_input_tokens"),
        cache_read_input_tokens: n("cache_read_input_tokens"),
    })
}

fn parse_message(v: &Value) -> Option<Message> {
    let obj = v.as_object()?;
    Some(Message {
        role: string(obj, "role"),
        id: string(obj, "id"),
        model: string(obj, "model"),
        content: parse_content(obj.get("content")),
        stop_reason: string(obj, "stop_reason"),
        usage: obj.get("usage").and_then(parse_usage),
    })
}

/// Interprets one parsed line.
pub fn parse_entry(raw: Value) -> Entry {
    let Some(obj) = raw.as_object() else { return Entry::Unknown { kind: None, session_id: None } };
    let kind = string(obj, "type");
    let session_id = || string(obj, "sessionId");
    let Some(k) = kind.as_deref() else { return Entry::Unknown { kind: None, session_id: session_id() } };
    if METADATA_TYPES.contains(&k) {
        return Entry::Metadata { kind: k.to_string(), session_id: session_id() };
    }
    let (Some(entry_type), Some(uuid)) = (EntryType::parse(k), string(obj, "uuid")) else {
        return Entry::Unknown { kind, session_id: session_id() };
    };
    let conv = Conversation {
        entry_type,
        uuid,
        parent_uuid: string(obj, "parentUuid"),
        logical_parent_uuid: string(obj, "logicalParentUuid"),
        is_sidechain: flag(obj, "isSidechain"),
        is_meta: flag(obj, "isMeta"),
        is_compact_summary: flag(obj, "isCompactSummary"),
        agent_id: string(obj, "agentId"),
        session_id: string(obj, "sessionId"),
        cwd: string(obj, "cwd"),
        timestamp: string(obj, "timestamp"),
        subtype: string(obj, "subtype"),
        message: match entry_type {
            EntryType::User | EntryType::Assistant => obj.get("message").and_then(parse_message),
            _ => None,
        },
        attachment_tokens: obj.get("attachment").map(|a| estimate_tokens(&a.to_string()) as u64),
    };
    Entry::Conversation(Box::new(conv))
}

/// A complete line that was not JSON.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed {
    /// Byte offset of the line in the file.
    pub offset: u64,
    pub error: String,
}

/// Parses the complete lines of `bytes` (which starts at file offset `base`) into a [`Window`]
/// of [`HELD_LIMIT_BYTES`], as a transcript is read. Returns the window and how many bytes were
/// consumed: everything up to and including the last `\n`. A trailing line without `\n` is
/// left for the next read, because Claude Code may still be appending it.
pub fn parse_complete_lines(bytes: &[u8], base: u64) -> (Window, usize) {
    let mut window = Window::new(HELD_LIMIT_BYTES);
    let consumed = parse_lines_into(bytes, base, &mut window);
    (window, consumed)
}

/// [`parse_complete_lines`] into `sink`; returns how many bytes were consumed.
fn parse_lines_into(bytes: &[u8], base: u64, sink: &mut Window) -> usize {
    let consumed = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut at = 0usize;
    for line in bytes[..consumed].split_inclusive(|&b| b == b'\n') {
        let offset = base + at as u64;
        at += line.len();
        let text = line.strip_suffix(b"\n").unwrap_or(line);
        let text = text.strip_suffix(b"\r").unwrap_or(text);
        if text.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        match mneme_core::js_json::parse(text) {
            Ok(v) => sink.entry(parse_entry(v)),
            Err(e) => sink.push_malformed(Malformed { offset, error: e.to_string() }),
        }
    }
    consumed
}

/// Reads a transcript incrementally: each [`read_into`](Self::read_into) puts the entries of
/// the complete lines appended since the last call into a [`Window`], which holds the newest of
/// them within its limit. There is no read that keeps every entry: a transcript runs to
/// hundreds of MB, and every reader of it goes through the one bound.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TranscriptReader {
    offset: u64,
}

impl TranscriptReader {
    /// A reader at the start of the file.
    pub fn new() -> TranscriptReader {
        TranscriptReader { offset: 0 }
    }

    /// A reader resuming at a byte offset saved from [`offset`](Self::offset).
    pub fn at(offset: u64) -> TranscriptReader {
        TranscriptReader { offset }
    }

    /// The byte cursor: everything before it has been consumed.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Reads what was appended since the cursor into `sink`, moving the cursor past the
    /// complete lines; the window lets go of its oldest entries as the lines are read, so it
    /// never holds more than its limit, whatever the number of lines.
    /// A missing file reads as empty; anything but a plain file (a FIFO, a device, a folder
    /// planted under a transcript's name) is refused without waiting on it. Lines are read in
    /// pieces of 8 MiB; a line longer than a piece (a giant tool result, a pasted file) is read
    /// straight from the file into its compact entry (`skim`), never held whole. A line of
    /// [`MAX_CHUNK`] bytes or more is no transcript entry Claude Code writes, so it is skipped
    /// whole (the cursor moves to the end of the file, reported as malformed). A file shorter
    /// than the cursor (replaced or truncated) is read again from its start into an emptied
    /// window.
    pub fn read_into(&mut self, path: &Path, sink: &mut Window) -> io::Result<()> {
        let mut file = match mneme_store::open::open_no_wait(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a plain file (a folder, pipe or device), so not a transcript"));
        }
        let len = meta.len();
        if len < self.offset {
            sink.clear();
            self.offset = 0;
        }
        let from = self.offset;
        match self.read_pieces(&mut file, len, sink) {
            Ok(()) => Ok(()),
            // What was read before the failure is kept, the cursor after it: the rest is read
            // again next time (a file that shrank while it was read is then seen to be shorter).
            Err(_) if self.offset > from => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// [`read_into`](Self::read_into)'s reading of `file` (`len` bytes long) from the cursor,
    /// into `sink`, moving the cursor past each complete line as it goes.
    fn read_pieces(&mut self, file: &mut std::fs::File, len: u64, sink: &mut Window) -> io::Result<()> {
        file.seek(SeekFrom::Start(self.offset))?;
        let mut bytes = Vec::new();
        loop {
            bytes.clear();
            let want = (len.saturating_sub(self.offset)).min(READ_CHUNK);
            if want == 0 {
                break;
            }
            // Exactly the piece: read_to_end's own growth would double the buffer.
            bytes.reserve_exact(want as usize);
            (&mut *file).take(want).read_to_end(&mut bytes)?;
            let consumed = parse_lines_into(&bytes, self.offset, sink);
            self.offset += consumed as u64;
            if consumed == 0 {
                if bytes.len() as u64 == want && want < len.saturating_sub(self.offset) {
                    // A line longer than the piece: where it ends is looked for piece by piece,
                    // and the line is then read from the file without being held.
                    match line_end(file, self.offset + want, len.min(self.offset + MAX_CHUNK), &mut bytes)? {
                        Some(end) => {
                            file.seek(SeekFrom::Start(self.offset))?;
                            match read_long_line(file, end - self.offset)? {
                                Ok(Some(entry)) => sink.entry(entry),
                                Ok(None) => {}
                                Err(error) => sink.push_malformed(Malformed { offset: self.offset, error }),
                            }
                            self.offset = end + 1;
                            file.seek(SeekFrom::Start(self.offset))?;
                            continue;
                        }
                        None if len - self.offset >= MAX_CHUNK => {
                            sink.push_malformed(Malformed {
                                offset: self.offset,
                                error: format!("a line longer than {} MiB; skipped to the end of the file", MAX_CHUNK >> 20),
                            });
                            self.offset = len;
                        }
                        None => {}
                    }
                }
                break;
            }
            if (bytes.len() as u64) < want {
                break; // the file ended sooner than it said (it shrank while read)
            }
            file.seek(SeekFrom::Start(self.offset))?;
        }
        Ok(())
    }
}

/// The longest line read: one this long or longer is skipped.
pub const MAX_CHUNK: u64 = 128 << 20;

/// How much of a transcript is read at once: a line longer than this is read from the file
/// through `skim`, without being held.
const READ_CHUNK: u64 = 8 << 20;

/// The offset of the first `\n` at or after `from` and before `to`, looked for a piece at a
/// time in `buf`.
fn line_end(file: &mut std::fs::File, from: u64, to: u64, buf: &mut Vec<u8>) -> io::Result<Option<u64>> {
    let mut at = from;
    file.seek(SeekFrom::Start(at))?;
    while at < to {
        buf.clear();
        let got = (&mut *file).take((to - at).min(READ_CHUNK)).read_to_end(buf)?;
        if got == 0 {
            return Ok(None); // it shrank
        }
        if let Some(i) = buf.iter().position(|&b| b == b'\n') {
            return Ok(Some(at + i as u64));
        }
        at += got as u64;
    }
    Ok(None)
}

/// A line of `len` bytes read from where `file` stands: its entry, nothing for a blank line,
/// or why it is not JSON. On a thread of its own with room for nesting as deep as
/// `js_json` reads (the reader recurses once a level).
fn read_long_line(file: &mut (dyn Read + Send), len: u64) -> io::Result<Result<Option<Entry>, String>> {
    let read = move || match skim::entry(file, len) {
        Ok(e) => Ok(Ok(e)),
        Err(skim::Fail::Syntax(why)) => Ok(Err(why)),
        Err(skim::Fail::Io(e)) => Err(e),
    };
    std::thread::scope(|scope| match std::thread::Builder::new().name("transcript-line".into()).stack_size(64 << 20).spawn_scoped(scope, read) {
        Ok(handle) => handle.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        Err(e) => Err(io::Error::other(format!("no thread to read a long transcript line: {e}"))),
    })
}

/// One line (without its `\n`) read the way a line longer than a piece is read: for tests
/// holding that reading to [`parse_complete_lines`]'s on lines of any length.
#[doc(hidden)]
pub fn read_line_streamed(line: &[u8]) -> Result<Option<Entry>, String> {
    read_long_line(&mut &line[..], line.len() as u64).unwrap_or_else(|e| Err(e.to_string()))
}

/// The most of a transcript's entries one extraction holds, by [`held_bytes`]: the newest
/// entries up to this are kept and older ones let go as the read goes on, so what a run holds
/// does not grow with the transcript's length. A run's prompt shows the conversation since its
/// cursor, and no model reads more than a million tokens (some 4 MB of text) at once; the
/// compact entries of a 200 MB session with 3,651 tool results come to 17 MB, whose prompt
/// would already be some 2 million tokens (docs/benchmarks.md). So only a session with more
/// since its last extraction than any model could be shown, or one of hundreds of thousands of
/// tiny lines, reaches it. What is let go of the conversation is counted and said in the run's
/// record ([`Window::left_out_of`]).
pub const HELD_LIMIT_BYTES: usize = 32 << 20;

/// About how many bytes `entry` holds: its own size and its strings' lengths (lengths, not
/// capacities, so the same file always gives the same window).
pub fn held_bytes(entry: &Entry) -> usize {
    fn s(x: &Option<String>) -> usize {
        x.as_ref().map_or(0, String::len)
    }
    fn block(b: &Block) -> usize {
        std::mem::size_of::<Block>()
            + match b {
                Block::Text { text } => text.len(),
                Block::ToolUse { id, name, input } => id.len() + name.len() + s(&input.file_path) + input.json.head.len(),
                Block::ToolResult { tool_use_id, content, .. } => tool_use_id.len() + content.text.head.len(),
                Block::Other { kind, .. } => kind.len(),
                Block::Thinking { .. } | Block::RedactedThinking { .. } => 0,
            }
    }
    std::mem::size_of::<Entry>()
        + match entry {
            Entry::Conversation(c) => {
                std::mem::size_of::<Conversation>()
                    + c.uuid.len()
                    + [&c.parent_uuid, &c.logical_parent_uuid, &c.agent_id, &c.session_id, &c.cwd, &c.timestamp, &c.subtype].into_iter().map(s).sum::<usize>()
                    + c.message.as_ref().map_or(0, |m| {
                        [&m.role, &m.id, &m.model, &m.stop_reason].into_iter().map(s).sum::<usize>()
                            + match &m.content {
                                Content::Text(t) => t.len(),
                                Content::Blocks(b) => b.iter().map(block).sum(),
                            }
                    })
            }
            Entry::Metadata { kind, session_id } => kind.len() + s(session_id),
            Entry::Unknown { kind, session_id } => s(kind) + s(session_id),
        }
}

/// What a [`Window`] let go of a transcript's start to stay within its limit.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LeftOut {
    /// Lines (entries of every kind).
    pub entries: usize,
    /// Of them, the user and assistant messages of the main thread.
    pub messages: usize,
}

/// How the window follows the extraction cursor's message, to say how many messages after it
/// were let go.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Watch {
    /// No cursor: every message let go was after it.
    NoCursor,
    /// The cursor was set while its message was held (or before anything was let go), so its
    /// letting go is seen: then `Some` of [`LeftOut::messages`] as it stood.
    Seen(Option<usize>),
    /// Set after messages were let go and not held: it may have been among them.
    Unknown,
}

/// How many malformed lines a [`Window`] keeps a record of (all are counted).
const MALFORMED_KEPT: usize = 1_000;

/// How many folders a [`Window`] keeps of those the main thread names: the first is where the
/// session started (its project), and a session names one per `cd`.
const CWDS_KEPT: usize = 64;

/// The newest entries of a transcript, at most [`limit`](Self::limit) bytes of them (by
/// [`held_bytes`]), filled by [`TranscriptReader::read_into`]: older entries are let go as the
/// read goes on and counted. What is needed of every line is taken as it passes: the first
/// `sessionId`, the folders the main thread ran in, the malformed lines.
#[derive(Debug, Clone)]
pub struct Window {
    /// Held entries are `entries[start..]`; those before `start` are let go (an empty
    /// placeholder each, until the front is cut off).
    entries: Vec<Entry>,
    start: usize,
    bytes: usize,
    limit: usize,
    left_out: LeftOut,
    /// Main-thread messages let go since the last one without a parent (the first message, or
    /// a compaction's boundary): the conversation reaches no further back than that.
    since_root: usize,
    cursor: Option<String>,
    watch: Watch,
    session_id: Option<String>,
    cwds: Vec<String>,
    malformed: Vec<Malformed>,
    malformed_lines: usize,
}

impl Window {
    /// An empty window holding at most `limit` bytes of entries (the newest entry is always
    /// held, however large).
    pub fn new(limit: usize) -> Window {
        Window {
            entries: Vec::new(),
            start: 0,
            bytes: 0,
            limit,
            left_out: LeftOut::default(),
            since_root: 0,
            cursor: None,
            watch: Watch::NoCursor,
            session_id: None,
            cwds: Vec::new(),
            malformed: Vec::new(),
            malformed_lines: 0,
        }
    }

    /// The entries held, oldest first.
    pub fn entries(&self) -> &[Entry] {
        &self.entries[self.start..]
    }

    pub fn len(&self) -> usize {
        self.entries.len() - self.start
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The bytes held, by [`held_bytes`].
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// What was let go to stay within the limit.
    pub fn left_out(&self) -> LeftOut {
        self.left_out
    }

    /// The first `sessionId` of every line read (held or not).
    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// The folders the main thread ran in, oldest first, each once (the first
    /// [`CWDS_KEPT`]), of every line read.
    pub fn cwds(&self) -> Vec<&str> {
        self.cwds.iter().map(String::as_str).collect()
    }

    /// The first [`MALFORMED_KEPT`] malformed lines.
    pub fn malformed(&self) -> &[Malformed] {
        &self.malformed
    }

    /// How many lines were malformed.
    pub fn malformed_lines(&self) -> usize {
        self.malformed_lines
    }

    /// Whether the main thread's message `uuid` is held.
    fn holds(&self, uuid: &str) -> bool {
        self.entries().iter().any(|e| e.as_conversation().is_some_and(|c| c.uuid == uuid && c.is_main_thread()))
    }

    /// The extraction cursor (`lastMemoryMessageUuid`), so that the messages let go after it
    /// can be counted.
    pub fn set_cursor(&mut self, cursor: Option<&str>) {
        if self.cursor.as_deref() == cursor {
            return;
        }
        self.cursor = cursor.map(str::to_string);
        self.watch = match cursor {
            None => Watch::NoCursor,
            Some(c) if self.left_out.messages == 0 || self.holds(c) => Watch::Seen(None),
            Some(_) => Watch::Unknown,
        };
    }

    /// Whether the cursor's message was let go (every message held is then after it).
    pub fn cursor_let_go(&self) -> bool {
        matches!(self.watch, Watch::Seen(Some(_)))
    }

    /// Whether the window cannot tell how many messages after the cursor were let go (it was
    /// set after the read let messages go): the transcript must be read again with it.
    pub fn cursor_unknown(&self) -> bool {
        self.watch == Watch::Unknown
    }

    /// How many of the main thread's messages after the cursor were let go from
    /// `conversation` (the conversation of the entries held): none when it reaches its start
    /// (every message in it has its parent held, or none), else those let go after both the
    /// cursor and the last message without a parent. `None` when that is not known
    /// ([`cursor_unknown`](Self::cursor_unknown)).
    pub fn left_out_of(&self, conversation: &[&Conversation]) -> Option<usize> {
        if !self.cut_short(conversation) {
            return Some(0);
        }
        let since_cursor = match self.watch {
            Watch::NoCursor => self.left_out.messages,
            Watch::Seen(Some(mark)) => self.left_out.messages - mark,
            // Held, or not in the transcript (gone with a compaction): every message counts as
            // new, as Claude Code counts them when its cursor is gone.
            Watch::Seen(None) if self.cursor.as_deref().is_some_and(|c| self.holds(c)) => 0,
            Watch::Seen(None) => self.left_out.messages,
            Watch::Unknown => return None,
        };
        Some(since_cursor.min(self.since_root))
    }

    /// How many of the main thread's messages were let go from the start of `conversation`
    /// (the conversation of the entries held), whatever the cursor: what a reader of the whole
    /// conversation (session notes) did not see. None when it reaches its start, else those
    /// let go since the last message without a parent.
    pub fn left_out_of_whole(&self, conversation: &[&Conversation]) -> usize {
        if self.cut_short(conversation) {
            self.since_root
        } else {
            0
        }
    }

    /// Whether `conversation` was cut short by what was let go: some message in it names a
    /// parent that is not held.
    fn cut_short(&self, conversation: &[&Conversation]) -> bool {
        if self.left_out.messages == 0 {
            return false;
        }
        let held: HashSet<&str> = conversation.iter().map(|c| c.uuid.as_str()).collect();
        !conversation.iter().all(|c| c.parent_uuid.as_deref().is_none_or(|p| held.contains(p)))
    }

    /// Starts again empty (the file was replaced), with the same limit and cursor.
    pub fn clear(&mut self) {
        let cursor = self.cursor.take();
        *self = Window::new(self.limit);
        self.set_cursor(cursor.as_deref());
    }

    /// Lets go of the first `n` entries held without counting them as left out: they come
    /// before the cursor, so no run reads them.
    pub fn let_go_before(&mut self, n: usize) {
        let n = n.min(self.len());
        for i in self.start..self.start + n {
            self.bytes -= held_bytes(&self.entries[i]);
        }
        self.entries.drain(..self.start + n);
        self.entries.shrink_to_fit();
        self.start = 0;
    }

    /// Lets go of the oldest held entry, counted.
    fn let_go_oldest(&mut self) {
        let gone = std::mem::replace(&mut self.entries[self.start], Entry::Unknown { kind: None, session_id: None });
        self.start += 1;
        self.bytes -= held_bytes(&gone);
        self.left_out.entries += 1;
        if let Some(c) = gone.as_conversation().filter(|c| c.is_main_thread()) {
            // A message without a parent starts a conversation: it is the first that counts.
            if c.parent_uuid.is_none() {
                self.since_root = 0;
            }
            if matches!(c.entry_type, EntryType::User | EntryType::Assistant) {
                self.left_out.messages += 1;
                self.since_root += 1;
            }
            if self.watch == Watch::Seen(None) && self.cursor.as_deref() == Some(c.uuid.as_str()) {
                self.watch = Watch::Seen(Some(self.left_out.messages));
            }
        }
        // The slots let go are cut off once they are half the vector: each entry is moved
        // at most once more, whatever the number of lines.
        if self.start * 2 >= self.entries.len() {
            self.entries.drain(..self.start);
            self.start = 0;
        }
    }

    /// The entries held, oldest first, given up by the window.
    pub fn into_entries(mut self) -> Vec<Entry> {
        self.entries.drain(..self.start);
        self.entries
    }

    /// The whole transcript as far as this window holds it, read to `offset`.
    fn into_transcript(self, offset: u64) -> Transcript {
        let left_out = self.left_out;
        let (session_id, cwds, malformed) = (self.session_id, self.cwds, self.malformed);
        let mut entries = self.entries;
        entries.drain(..self.start);
        Transcript { entries, malformed, offset, left_out, first_session_id: session_id, main_cwds: cwds }
    }
}

impl Window {
    /// Takes in the entry of the next line, letting go of the oldest held entries past the limit.
    fn entry(&mut self, entry: Entry) {
        if self.session_id.is_none() {
            self.session_id = session_id(std::slice::from_ref(&entry)).map(str::to_string);
        }
        if let Some(cwd) = entry.as_conversation().filter(|c| c.is_main_thread()).and_then(|c| c.cwd.as_deref()) {
            if self.cwds.len() < CWDS_KEPT && !self.cwds.iter().any(|c| c == cwd) {
                self.cwds.push(cwd.to_string());
            }
        }
        self.bytes += held_bytes(&entry);
        self.entries.push(entry);
        while self.bytes > self.limit && self.len() > 1 {
            self.let_go_oldest();
        }
    }

    /// Counts the next line as malformed, keeping a record of the first ones.
    fn push_malformed(&mut self, malformed: Malformed) {
        self.malformed_lines += 1;
        if self.malformed.len() < MALFORMED_KEPT {
            self.malformed.push(malformed);
        }
    }
}

/// A whole transcript read at once, as far as [`HELD_LIMIT_BYTES`] of its newest entries.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    pub entries: Vec<Entry>,
    /// The first of the malformed lines (see [`Window::malformed`]).
    pub malformed: Vec<Malformed>,
    /// The byte cursor after the last complete line.
    pub offset: u64,
    /// What was let go of the file's start to stay within the limit.
    pub left_out: LeftOut,
    first_session_id: Option<String>,
    main_cwds: Vec<String>,
}

impl Transcript {
    /// Reads every complete line of `path`, holding the newest [`HELD_LIMIT_BYTES`] of entries.
    pub fn load(path: &Path) -> io::Result<Transcript> {
        Transcript::load_within(path, HELD_LIMIT_BYTES)
    }

    /// [`load`](Self::load) holding at most `limit` bytes of entries.
    pub fn load_within(path: &Path, limit: usize) -> io::Result<Transcript> {
        let mut reader = TranscriptReader::new();
        let mut window = Window::new(limit);
        reader.read_into(path, &mut window)?;
        Ok(window.into_transcript(reader.offset()))
    }

    /// The session id: the first entry's `sessionId`.
    pub fn session_id(&self) -> Option<&str> {
        self.first_session_id.as_deref()
    }

    /// The folder the session ran in: the newest main-thread entry's `cwd`.
    pub fn cwd(&self) -> Option<&str> {
        self.entries.iter().rev().find_map(|e| e.as_conversation().filter(|c| c.is_main_thread())?.cwd.as_deref())
    }

    /// Every folder the main thread ran in, oldest first, each once (a `cd` during the session
    /// adds one; the first is where it started).
    /// Of every line read, held or not; the first [`CWDS_KEPT`].
    pub fn cwds(&self) -> Vec<&str> {
        self.main_cwds.iter().map(String::as_str).collect()
    }

    /// The main thread's messages; see [`conversation`].
    pub fn conversation(&self) -> Vec<&Conversation> {
        conversation(&self.entries)
    }
}

/// The first `sessionId` among `entries`.
pub fn session_id(entries: &[Entry]) -> Option<&str> {
    entries.iter().find_map(|e| match e {
        Entry::Conversation(c) => c.session_id.as_deref(),
        Entry::Metadata { session_id, .. } | Entry::Unknown { session_id, .. } => session_id.as_deref(),
    })
}

/// The main thread's current conversation, as Claude Code holds it in memory: the chain of
/// `parentUuid` links back from the newest main-thread entry (stopping at a compaction
/// boundary, whose `parentUuid` is null, and leaving abandoned branches out), plus the tool
/// results of parallel tool calls, which Claude Code chains to the `tool_use` entry they
/// answer rather than to each other. Returned in file order.
pub fn conversation(entries: &[Entry]) -> Vec<&Conversation> {
    let main: Vec<&Conversation> =
        entries.iter().filter_map(Entry::as_conversation).filter(|c| c.is_main_thread()).collect();
    let Some(leaf) = main.last() else { return Vec::new() };
    let by_uuid: HashMap<&str, &Conversation> = main.iter().map(|c| (c.uuid.as_str(), *c)).collect();
    let mut chain: HashSet<&str> = HashSet::new();
    let mut cur = Some(*leaf);
    while let Some(c) = cur {
        if !chain.insert(c.uuid.as_str()) {
            break;
        }
        cur = c.parent_uuid.as_deref().and_then(|p| by_uuid.get(p).copied());
    }
    let chained_tool_uses: HashSet<&str> =
        main.iter().filter(|c| chain.contains(c.uuid.as_str())).flat_map(|c| c.tool_uses().map(|t| t.id)).collect();
    let mut siblings: Vec<&str> = Vec::new();
    for c in &main {
        if chain.contains(c.uuid.as_str()) {
            continue;
        }
        let parent_in_chain = c.parent_uuid.as_deref().is_some_and(|p| chain.contains(p));
        let mut results = c.tool_results().peekable();
        if parent_in_chain && results.peek().is_some() && results.all(|(id, _)| chained_tool_uses.contains(id)) {
            siblings.push(c.uuid.as_str());
        }
    }
    chain.extend(siblings);
    // An entry written twice under one uuid: the later one, as the chain above followed it
    // (and as Claude Code's own map by uuid keeps it).
    let last: HashMap<&str, usize> = main.iter().enumerate().map(|(i, c)| (c.uuid.as_str(), i)).collect();
    main.iter().enumerate().filter(|(i, c)| chain.contains(c.uuid.as_str()) && last[c.uuid.as_str()] == *i).map(|(_, c)| *c).collect()
}

/// A `tool_use` with its result, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolCall<'a> {
    pub tool_use: ToolUse<'a>,
    /// The assistant entry holding the call.
    pub assistant_uuid: &'a str,
    /// The user entry holding the result, and whether it was an error.
    pub result: Option<(&'a str, bool)>,
}

/// Pairs every `tool_use` in `messages` with its `tool_result`, in call order.
pub fn tool_calls<'a>(messages: &[&'a Conversation]) -> Vec<ToolCall<'a>> {
    let results: HashMap<&str, (&str, bool)> = messages
        .iter()
        .flat_map(|m| m.tool_results().map(move |(id, err)| (id, (m.uuid.as_str(), err))))
        .collect();
    messages
        .iter()
        .flat_map(|m| {
            let results = &results;
            m.tool_uses().map(move |t| ToolCall {
                tool_use: t,
                assistant_uuid: m.uuid.as_str(),
                result: results.get(t.id).copied(),
            })
        })
        .collect()
}

/// The uuid of the assistant entry that ends the last complete query loop, if the newest
/// user/assistant message of `messages` is one.
///
/// Claude Code runs its stop hooks (and so extraction) when the model finishes without tool
/// calls. In the transcript that is an assistant entry with a stop reason other than
/// `tool_use` / `pause_turn` whose API response (every entry sharing its message id) holds
/// no `tool_use`. An entry still streaming has no stop reason yet and does not count, so a
/// response whose text block is written before its tool calls is never mistaken for an end.
pub fn turn_end(messages: &[&Conversation]) -> Option<String> {
    let last = messages
        .iter()
        .rev()
        .find(|m| matches!(m.entry_type, EntryType::User | EntryType::Assistant) && m.is_main_thread())?;
    if last.entry_type != EntryType::Assistant {
        return None;
    }
    let msg = last.message.as_ref()?;
    let stop = msg.stop_reason.as_deref()?;
    if matches!(stop, "tool_use" | "pause_turn") {
        return None;
    }
    let same_response = |m: &&&Conversation| match (&msg.id, m.message.as_ref().and_then(|x| x.id.as_ref())) {
        (Some(a), Some(b)) => a == b,
        _ => std::ptr::eq(**m, *last),
    };
    if messages.iter().filter(same_response).any(|m| m.tool_uses().next().is_some()) {
        return None;
    }
    Some(last.uuid.clone())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn line(v: Value) -> String {
        format!("{v}\n")
    }

    #[test]
    fn a_body_is_estimated_as_estimate_tokens_does() {
        for s in ["", "a", "ab", "abc", "abcd", "abcde", &"x".repeat(4001), "é", "🚀🚀", "数据 and ascii"] {
            assert_eq!(body_tokens(s), estimate_tokens(s) as u64, "{s:?}");
        }
    }

    /// The prompt's and session memory's readings of a tool call, as they were taken from the
    /// whole `input` and `content` before only their start was kept.
    #[test]
    fn what_is_kept_of_a_tool_call_reads_as_the_whole_did() {
        fn old_text(content: &Value) -> String {
            match content {
                Value::String(s) => s.clone(),
                Value::Array(items) => items
                    .iter()
                    .map(|b| match b.get("type").and_then(Value::as_str) {
                        Some("text") => b.get("text").and_then(Value::as_str).unwrap_or_default().to_string(),
                        Some(other) => format!("[{other}]"),
                        None => b.to_string(),
                    })
                    .collect::<Vec<_>>()
                    .join("\n"),
                Value::Null => String::new(),
                other => other.to_string(),
            }
        }
        fn old_clip(s: &str, max: usize) -> String {
            match s.char_indices().nth(max) {
                Some((i, _)) => format!("{}… [{} more characters]", &s[..i], s[i..].chars().count()),
                None => s.to_string(),
            }
        }
        fn old_tokens(v: &Value) -> u64 {
            match v {
                Value::String(s) => estimate_tokens(s) as u64,
                Value::Array(items) => items
                    .iter()
                    .map(|b| match b {
                        Value::String(s) => estimate_tokens(s) as u64,
                        other => match other.get("type").and_then(Value::as_str) {
                            Some("text") if other.get("text").is_some_and(Value::is_string) => estimate_tokens(other["text"].as_str().unwrap()) as u64,
                            Some("tool_result") if other.get("tool_use_id").is_some_and(Value::is_string) => old_tokens(other.get("content").unwrap_or(&Value::Null)),
                            Some("image" | "document") => 2000,
                            _ => estimate_tokens(&other.to_string()) as u64,
                        },
                    })
                    .sum(),
                _ => 0,
            }
        }
        let long = |n: usize, unit: &str| unit.repeat(n);
        let contents = [
            Value::Null,
            json!(7),
            json!({"odd": true}),
            json!(""),
            json!(long(1_999, "a")),
            json!(long(2_000, "a")),
            json!(long(2_001, "a")),
            json!(long(1_999, "é") + "🚀🚀"),
            json!(long(3_000, "数")),
            json!([]),
            json!(["bare", {"type": "text", "text": long(1_500, "x")}, {"type": "text", "text": long(1_500, "🚀")}, {"type": "image", "source": {"data": "AAAA"}}, {"no": "type"}, 3, {"type": "text"}]),
            json!([{"type": "tool_result", "tool_use_id": "n", "content": [{"type": "text", "text": long(5_000, "y")}]}, {"type": "document"}, {"type": "server_tool_use", "id": "s"}]),
        ];
        for content in contents {
            let kept = ToolResultContent::from_value(&content);
            let text = old_text(&content);
            for max in [0, 1, 1_999, TOOL_RESULT_HEAD_CHARS] {
                assert_eq!(kept.text.clipped(max), old_clip(&text, max), "{content} at {max}");
            }
            assert_eq!(kept.tokens, old_tokens(&content), "{content}");
        }
        for (name, input) in [("Read", Some(json!({"file_path": "/x"}))), ("Write", Some(json!({"file_path": 3, "content": long(4_000, "é")}))), ("Bash", None), ("Bash", Some(Value::Null))] {
            let kept = ToolInput::new(name, input.as_ref());
            let whole = input.clone().unwrap_or(Value::Null);
            assert_eq!(kept.json.clipped(TOOL_RESULT_HEAD_CHARS), old_clip(&whole.to_string(), TOOL_RESULT_HEAD_CHARS));
            let for_tokens = if whole.is_null() { "{}".to_string() } else { whole.to_string() };
            assert_eq!(kept.tokens, estimate_tokens(&format!("{name}{for_tokens}")) as u64);
            assert_eq!(kept.file_path.as_deref(), whole.get("file_path").and_then(Value::as_str));
        }
    }

    #[test]
    fn partial_last_line_is_left_for_the_next_read() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let first = line(json!({"type": "user", "uuid": "u1", "message": {"role": "user", "content": "hi"}}));
        let second = line(json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1",
            "message": {"role": "assistant", "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}}));
        let (head, tail) = second.split_at(20);
        std::fs::write(&p, format!("{first}{head}")).unwrap();
        let mut r = TranscriptReader::new();
        let mut w = Window::new(HELD_LIMIT_BYTES);
        r.read_into(&p, &mut w).unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(r.offset(), first.len() as u64);
        // Nothing new until the line is finished.
        r.read_into(&p, &mut w).unwrap();
        assert_eq!(w.len(), 1);
        std::fs::write(&p, format!("{first}{head}{tail}")).unwrap();
        r.read_into(&p, &mut w).unwrap();
        assert_eq!(w.len(), 2);
        assert_eq!(w.entries()[1].as_conversation().unwrap().uuid, "a1");
        assert_eq!(r.offset(), (first.len() + second.len()) as u64);
        // Replaced by a shorter file: the window starts again.
        std::fs::write(&p, &first).unwrap();
        r.read_into(&p, &mut w).unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(w.entries()[0].as_conversation().unwrap().uuid, "u1");
    }

    /// A first message, `n` tiny entries chained after it (the shape of Claude Code's progress
    /// entries), then a turn: the file, and where its lines end.
    fn tiny_lines(n: usize) -> (String, Vec<usize>) {
        let mut lines = vec![line(json!({"type": "user", "uuid": "u0", "parentUuid": null, "sessionId": "first", "cwd": "/first", "message": {"content": "From now on, use tabs."}}))];
        for i in 0..n {
            let parent = if i == 0 { "u0".to_string() } else { format!("p{}", i - 1) };
            lines.push(line(json!({"type": "progress", "uuid": format!("p{i}"), "parentUuid": parent, "cwd": if i == 7 { "/then" } else { "/first" }})));
        }
        lines.push(line(json!({"type": "user", "uuid": "u1", "parentUuid": format!("p{}", n - 1), "message": {"content": "Please run the tests now."}})));
        lines.push(line(json!({"type": "assistant", "uuid": "a1", "parentUuid": "u1", "message": {"content": [{"type": "text", "text": "Done."}], "stop_reason": "end_turn"}})));
        let ends = lines.iter().scan(0, |at, l| {
            *at += l.len();
            Some(*at)
        });
        let ends = ends.collect();
        (lines.concat(), ends)
    }

    #[test]
    fn a_window_holds_the_newest_entries_within_its_limit_and_counts_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        let n = 5_000;
        let (text, ends) = tiny_lines(n);
        std::fs::write(&p, &text).unwrap();
        let tiny = held_bytes(&parse_entry(json!({"type": "progress", "uuid": "p1", "parentUuid": "p0", "cwd": "/first"})));
        let limit = 300 * tiny;

        let mut w = Window::new(limit);
        TranscriptReader::new().read_into(&p, &mut w).unwrap();
        assert!(w.bytes() <= limit, "{} bytes held", w.bytes());
        assert!(w.len() <= 300 && w.len() > 250, "{} entries held", w.len());
        assert_eq!(w.bytes(), w.entries().iter().map(held_bytes).sum::<usize>());
        assert_eq!(w.left_out(), LeftOut { entries: n + 3 - w.len(), messages: 1 });
        // What is needed of every line is taken from the lines let go too.
        assert_eq!((w.session_id(), w.cwds()), (Some("first"), vec!["/first", "/then"]));
        let conv = conversation(w.entries());
        assert_eq!(conv.last().unwrap().uuid, "a1");
        assert_eq!(w.left_out_of(&conv), Some(1), "the first message is not in the conversation held");

        // With a cursor, only what was let go after it counts.
        for (cursor, after) in [("u0", 0), ("p10", 0), ("a1", 0)] {
            let mut w = Window::new(limit);
            w.set_cursor(Some(cursor));
            TranscriptReader::new().read_into(&p, &mut w).unwrap();
            assert_eq!(w.left_out_of(&conversation(w.entries())), Some(after), "{cursor}");
            assert_eq!(w.cursor_let_go(), cursor != "a1", "{cursor}");
        }
        // Set once messages were let go, a cursor not held may have been among them.
        w.set_cursor(Some("p10"));
        assert!(w.cursor_unknown());
        assert_eq!(w.left_out_of(&conversation(w.entries())), None);

        // Read in pieces cut inside lines, as a live session is: the same window.
        std::fs::write(&p, "").unwrap();
        let mut pieces = Window::new(limit);
        let mut reader = TranscriptReader::new();
        let mut from = 0;
        for cut in [ends[10] + 3, ends[n / 2] - 1, text.len()] {
            let mut f = std::fs::OpenOptions::new().append(true).open(&p).unwrap();
            std::io::Write::write_all(&mut f, &text.as_bytes()[from..cut]).unwrap();
            from = cut;
            reader.read_into(&p, &mut pieces).unwrap();
        }
        assert_eq!((pieces.entries(), pieces.left_out(), pieces.bytes()), (w.entries(), w.left_out(), w.bytes()));

        // Within its limit, a window is the whole read.
        let whole = Transcript::load(&p).unwrap();
        assert_eq!((whole.entries.len(), whole.left_out), (n + 3, LeftOut::default()));
        let mut w = Window::new(HELD_LIMIT_BYTES);
        TranscriptReader::new().read_into(&p, &mut w).unwrap();
        assert_eq!(whole.entries, w.entries());
    }

    #[test]
    fn a_window_keeps_a_record_of_the_first_malformed_lines_and_counts_all() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("s.jsonl");
        std::fs::write(&p, "not json\n".repeat(MALFORMED_KEPT + 5)).unwrap();
        let t = Transcript::load(&p).unwrap();
        assert_eq!(t.malformed.len(), MALFORMED_KEPT);
        let mut w = Window::new(HELD_LIMIT_BYTES);
        TranscriptReader::new().read_into(&p, &mut w).unwrap();
        assert_eq!((w.malformed().len(), w.malformed_lines()), (MALFORMED_KEPT, MALFORMED_KEPT + 5));
    }

    #[test]
    fn unknown_types_and_bad_lines_are_kept_or_counted_never_errors() {
        let text = concat!(
            "{\"type\":\"brand-new-kind\",\"x\":1}\n",
            "not json\n",
            "\n",
            "{\"type\":\"user\",\"message\":{\"content\":\"no uuid\"}}\n",
            "{\"type\":\"summary\",\"leafUuid\":\"l\",\"summary\":\"s\"}\n",
            "[1,2]\n",
            "{\"type\":\"assistant\",\"uuid\":\"a\",\"message\":{\"content\":[{\"type\":\"server_tool_use\",\"id\":\"s\"},\"bare\"]}}\n",
        );
        let (b, consumed) = parse_complete_lines(text.as_bytes(), 100);
        assert_eq!(consumed, text.len());
        assert_eq!(b.malformed().len(), 1);
        assert_eq!(b.malformed()[0].offset, 100 + text.find("not json").unwrap() as u64);
        assert!(matches!(&b.entries()[0], Entry::Unknown { kind: Some(k), .. } if k == "brand-new-kind"));
        assert!(matches!(&b.entries()[1], Entry::Unknown { kind: Some(k), .. } if k == "user"));
        assert!(matches!(&b.entries()[2], Entry::Metadata { kind, .. } if kind == "summary"));
        assert!(matches!(&b.entries()[3], Entry::Unknown { kind: None, .. }));
        let a = b.entries()[4].as_conversation().unwrap();
        let Content::Blocks(blocks) = &a.message.as_ref().unwrap().content else { panic!() };
        assert!(matches!(&blocks[0], Block::Other { kind, .. } if kind == "server_tool_use"));
        assert_eq!(blocks[1], Block::Text { text: "bare".into() });
    }

    #[test]
    fn a_message_cut_inside_an_emoji_is_still_read() {
        // JSON.stringify writes an unpaired surrogate as an escape (a tool result cut inside an
        // emoji); Node reads invalid UTF-8 as U+FFFD. Neither line is malformed to Claude Code.
        let mut text = b"{\"type\":\"user\",\"uuid\":\"u\",\"message\":{\"content\":\"rocket \\ud83d\"}}\n".to_vec();
        text.extend_from_slice(b"{\"type\":\"user\",\"uuid\":\"v\",\"message\":{\"content\":\"bad \xff byte\"}}\n");
        let (b, _) = parse_complete_lines(&text, 0);
        assert!(b.malformed.is_empty(), "{:?}", b.malformed());
        let texts: Vec<_> = b
            .entries()
            .iter()
            .map(|e| match &e.as_conversation().unwrap().message.as_ref().unwrap().content {
                Content::Text(t) => t.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(texts, ["rocket \u{fffd}", "bad \u{fffd} byte"]);
    }

    fn conv(uuid: &str, parent: Option<&str>, t: &str, extra: Value) -> Entry {
        let mut v = json!({"type": t, "uuid": uuid, "parentUuid": parent, "isSidechain": false});
        if let (Some(o), Some(e)) = (v.as_object_mut(), extra.as_object()) {
            o.extend(e.clone());
        }
        parse_entry(v)
    }

    #[test]
    fn conversation_follows_the_chain_and_recovers_parallel_results() {
        let tu = |id: &str| json!({"message": {"id": "m1", "content": [{"type": "tool_use", "id": id, "name": "Read", "input": {}}], "stop_reason": "tool_use"}});
        let tr = |id: &str| json!({"message": {"content": [{"type": "tool_result", "tool_use_id": id, "content": "x"}]}});
        let entries = vec![
            conv("old", None, "user", json!({"message": {"content": "before compaction"}})),
            conv("b", None, "system", json!({"subtype": "compact_boundary"})),
            conv("u1", Some("b"), "user", json!({"message": {"content": "go"}})),
            conv("a1", Some("u1"), "assistant", tu("t1")),
            conv("a2", Some("a1"), "assistant", tu("t2")),
            conv("r1", Some("a1"), "user", tr("t1")),
            conv("r2", Some("a2"), "user", tr("t2")),
            conv("dead", Some("u1"), "assistant", json!({"message": {"content": "abandoned branch"}})),
            conv("side", Some("r2"), "assistant", json!({"isSidechain": true})),
            conv("a3", Some("r2"), "assistant", json!({"message": {"id": "m2", "content": [{"type": "text", "text": "done"}], "stop_reason": "end_turn"}})),
        ];
        let c = conversation(&entries);
        let uuids: Vec<&str> = c.iter().map(|c| c.uuid.as_str()).collect();
        assert_eq!(uuids, ["b", "u1", "a1", "a2", "r1", "r2", "a3"]);
        let calls = tool_calls(&c);
        assert_eq!(calls.len(), 2);
        assert_eq!(calls[0].result, Some(("r1", false)));
        assert_eq!(turn_end(&c), Some("a3".into()));
        // Mid-loop: the newest message is a tool result.
        assert_eq!(turn_end(&c[..6]), None);
    }

    #[test]
    fn an_entry_written_twice_under_one_uuid_counts_as_its_later_copy() {
        let entries = vec![
            conv("A", None, "user", json!({"message": {"content": "hello there friend"}})),
            conv("D", Some("A"), "assistant", json!({"message": {"content": "ok"}})),
            conv("D", Some("D"), "user", json!({"message": {"content": "From now on, always sign commits with gpg."}})),
            conv("E", Some("D"), "assistant", json!({"message": {"content": "ok"}})),
        ];
        let c = conversation(&entries);
        let texts: Vec<String> = c.iter().map(|c| format!("{}:{:?}", c.uuid, c.entry_type)).collect();
        assert_eq!(texts, ["D:User", "E:Assistant"], "the chain the later copy starts (its parent is itself) ends there");
    }

    #[test]
    fn turn_end_needs_a_finished_response_without_tool_calls() {
        let a = |stop: Value, content: Value| {
            conv("a", Some("u"), "assistant", json!({"message": {"id": "m", "content": content, "stop_reason": stop}}))
        };
        let u = conv("u", None, "user", json!({"message": {"content": "hi"}}));
        let text = json!([{"type": "text", "text": "ok"}]);
        for (stop, content, ends) in [
            (json!("end_turn"), text.clone(), true),
            (json!("max_tokens"), text.clone(), true),
            (json!(null), text.clone(), false),
            (json!("tool_use"), text.clone(), false),
            (json!("pause_turn"), text.clone(), false),
            (json!("end_turn"), json!([{"type": "tool_use", "id": "t", "name": "Bash", "input": {}}]), false),
        ] {
            let entries = vec![u.clone(), a(stop.clone(), content)];
            assert_eq!(turn_end(&conversation(&entries)).is_some(), ends, "{stop}");
        }
        // A text entry whose sibling entry (same response) made a tool call is not an end.
        let entries = vec![
            u.clone(),
            conv("t", Some("u"), "assistant", json!({"message": {"id": "m", "content": [{"type": "tool_use", "id": "x", "name": "Read", "input": {}}], "stop_reason": "end_turn"}})),
            conv("a", Some("t"), "assistant", json!({"message": {"id": "m", "content": text, "stop_reason": "end_turn"}})),
        ];
        assert_eq!(turn_end(&conversation(&entries)), None);
    }
}
