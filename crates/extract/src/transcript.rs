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
//! sessions run to hundreds of MB, nearly all tool results, and every entry since the start is
//! held while a session is followed.
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

/// What one read produced.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    pub entries: Vec<Entry>,
    pub malformed: Vec<Malformed>,
    /// The file was shorter than the cursor (replaced or truncated), so reading restarted at 0.
    pub restarted: bool,
}

/// Parses the complete lines of `bytes` (which starts at file offset `base`). Returns the
/// entries and how many bytes were consumed: everything up to and including the last `\n`. A
/// trailing line without `\n` is left for the next read, because Claude Code may still be
/// appending it.
pub fn parse_complete_lines(bytes: &[u8], base: u64) -> (Batch, usize) {
    let consumed = bytes.iter().rposition(|&b| b == b'\n').map_or(0, |i| i + 1);
    let mut batch = Batch::default();
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
            Ok(v) => batch.entries.push(parse_entry(v)),
            Err(e) => batch.malformed.push(Malformed { offset, error: e.to_string() }),
        }
    }
    (batch, consumed)
}

/// Reads a transcript incrementally: each [`read_new`](Self::read_new) returns the entries of
/// the complete lines appended since the last call.
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

    /// Reads what was appended since the cursor and moves the cursor past the complete lines.
    /// A missing file reads as empty; anything but a plain file (a FIFO, a device, a folder
    /// planted under a transcript's name) is refused without waiting on it. Lines are read in
    /// pieces of 8 MiB; a line longer than a piece (a giant tool result, a pasted file) is read
    /// straight from the file into its compact entry (`skim`), never held whole. A line of
    /// [`MAX_CHUNK`] bytes or more is no transcript entry Claude Code writes, so it is skipped
    /// whole (the cursor moves to the end of the file, reported as malformed).
    pub fn read_new(&mut self, path: &Path) -> io::Result<Batch> {
        let mut file = match mneme_store::open::open_no_wait(path) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Batch::default()),
            Err(e) => return Err(e),
        };
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a plain file (a folder, pipe or device), so not a transcript"));
        }
        let len = meta.len();
        let mut batch = Batch { restarted: len < self.offset, ..Batch::default() };
        if batch.restarted {
            self.offset = 0;
        }
        let from = self.offset;
        match self.read_pieces(&mut file, len, &mut batch) {
            Ok(()) => Ok(batch),
            // What was read before the failure is kept, the cursor after it: the rest is read
            // again next time (a file that shrank while it was read is then seen to be shorter).
            Err(_) if self.offset > from => Ok(batch),
            Err(e) => Err(e),
        }
    }

    /// [`read_new`](Self::read_new)'s reading of `file` (`len` bytes long) from the cursor,
    /// into `batch`, moving the cursor past each complete line as it goes.
    fn read_pieces(&mut self, file: &mut std::fs::File, len: u64, batch: &mut Batch) -> io::Result<()> {
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
            let (part, consumed) = parse_complete_lines(&bytes, self.offset);
            batch.entries.extend(part.entries);
            batch.malformed.extend(part.malformed);
            self.offset += consumed as u64;
            if consumed == 0 {
                if bytes.len() as u64 == want && want < len.saturating_sub(self.offset) {
                    // A line longer than the piece: where it ends is looked for piece by piece,
                    // and the line is then read from the file without being held.
                    match line_end(file, self.offset + want, len.min(self.offset + MAX_CHUNK), &mut bytes)? {
                        Some(end) => {
                            file.seek(SeekFrom::Start(self.offset))?;
                            match read_long_line(file, end - self.offset)? {
                                Ok(Some(entry)) => batch.entries.push(entry),
                                Ok(None) => {}
                                Err(error) => batch.malformed.push(Malformed { offset: self.offset, error }),
                            }
                            self.offset = end + 1;
                            file.seek(SeekFrom::Start(self.offset))?;
                            continue;
                        }
                        None if len - self.offset >= MAX_CHUNK => {
                            batch.malformed.push(Malformed {
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

/// A whole transcript read at once.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Transcript {
    pub entries: Vec<Entry>,
    pub malformed: Vec<Malformed>,
    /// The byte cursor after the last complete line.
    pub offset: u64,
}

impl Transcript {
    /// Reads every complete line of `path`.
    pub fn load(path: &Path) -> io::Result<Transcript> {
        let mut reader = TranscriptReader::new();
        let batch = reader.read_new(path)?;
        Ok(Transcript { entries: batch.entries, malformed: batch.malformed, offset: reader.offset() })
    }

    /// The session id: the first entry's `sessionId`.
    pub fn session_id(&self) -> Option<&str> {
        session_id(&self.entries)
    }

    /// The folder the session ran in: the newest main-thread entry's `cwd`.
    pub fn cwd(&self) -> Option<&str> {
        self.entries.iter().rev().find_map(|e| e.as_conversation().filter(|c| c.is_main_thread())?.cwd.as_deref())
    }

    /// Every folder the main thread ran in, oldest first, each once (a `cd` during the session
    /// adds one; the first is where it started).
    pub fn cwds(&self) -> Vec<&str> {
        let mut out: Vec<&str> = Vec::new();
        for cwd in self.entries.iter().filter_map(|e| e.as_conversation().filter(|c| c.is_main_thread())?.cwd.as_deref()) {
            if !out.contains(&cwd) {
                out.push(cwd);
            }
        }
        out
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
        let b = r.read_new(&p).unwrap();
        assert_eq!(b.entries.len(), 1);
        assert_eq!(r.offset(), first.len() as u64);
        // Nothing new until the line is finished.
        assert!(r.read_new(&p).unwrap().entries.is_empty());
        std::fs::write(&p, format!("{first}{head}{tail}")).unwrap();
        let b = r.read_new(&p).unwrap();
        assert_eq!(b.entries.len(), 1);
        assert_eq!(b.entries[0].as_conversation().unwrap().uuid, "a1");
        assert_eq!(r.offset(), (first.len() + second.len()) as u64);
        // Replaced by a shorter file: start again.
        std::fs::write(&p, &first).unwrap();
        let b = r.read_new(&p).unwrap();
        assert!(b.restarted);
        assert_eq!(b.entries.len(), 1);
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
        assert_eq!(b.malformed.len(), 1);
        assert_eq!(b.malformed[0].offset, 100 + text.find("not json").unwrap() as u64);
        assert!(matches!(&b.entries[0], Entry::Unknown { kind: Some(k), .. } if k == "brand-new-kind"));
        assert!(matches!(&b.entries[1], Entry::Unknown { kind: Some(k), .. } if k == "user"));
        assert!(matches!(&b.entries[2], Entry::Metadata { kind, .. } if kind == "summary"));
        assert!(matches!(&b.entries[3], Entry::Unknown { kind: None, .. }));
        let a = b.entries[4].as_conversation().unwrap();
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
        assert!(b.malformed.is_empty(), "{:?}", b.malformed);
        let texts: Vec<_> = b
            .entries
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
