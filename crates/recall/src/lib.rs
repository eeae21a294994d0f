//! Relevant-memory recall: which memory files Claude Code would put in front of the model for
//! a prompt, and an offline ranker that answers the same question without a model.
//!
//! # What Claude Code 2.1.197 does (read from the binary, which wins over the 2.1.88 source)
//!
//! Recall runs once per user turn when auto memory is on and the `tengu_moth_copse` flag is on
//! (off by default, and it replaces the `MEMORY.md` index when on; from 2.1.198 a non-blank
//! `CLAUDE_MEMORY_STORES` turns it on too, `Profile::memory_stores_skip_index`). The prompt is the text of the
//! last non-meta user message; recall is skipped when it is empty or one word
//! ([`should_recall`]), and when the memories surfaced so far in the conversation add up to
//! [`MAX_SESSION_BYTES`] UTF-16 units.
//!
//! The selector is a side query to `ANTHROPIC_DEFAULT_SONNET_MODEL` or, on the first-party
//! API, `claude-sonnet-5` (2.1.197's model catalog maps `sonnet` there; the reference digest's
//! `claude-sonnet-4-6` is 2.1.88's) ([`selector_model`]), `max_tokens` 256, structured output
//! `{selected_memories: string[], selected_knowledge_ids?: string[]}`. In 2.1.197 it is a
//! *dialogue kept for the whole conversation*, one per memory folder: the first time a folder
//! is asked about, it is scanned (the 30-line headers, newest 200, `MAX_MEMORY_FILES`) and the
//! first user message becomes `Available memories:\n<manifest>`; every query appends
//! `Select memories relevant to:\n<query>`, and after an answer that parses, the query and the
//! raw answer stay in the dialogue. The manifest is therefore frozen at the first query:
//! memories written later in the conversation are not offered until the conversation starts
//! over. The system prompt ([`selector_system_prompt`]: the installed Claude Code's own, else
//! Mneme's [`SELECT_MEMORIES_SYSTEM_PROMPT`]) has no recently-used-tools hint,
//! which 2.1.197 no longer has; "be conservative with [user]/[project]" and "do not
//! re-select" are new). The answer's first text block, stripped of a code fence, is parsed as
//! JSON; names not in the manifest are dropped; any failure yields nothing. Nothing is asked
//! when every listed memory was already surfaced.
//!
//! The chosen files then lose any already surfaced in this conversation or already read,
//! written or edited by the model (`readFileState`), are cut to [`MAX_RECALLED`], and each is
//! read with the [`read_capped`] caps. Each becomes a meta user message
//! `<system-reminder>\n<header>\n\n<content>\n</system-reminder>`, the first one opened by
//! [`RELEVANCE_PREAMBLE`]; the header is `Memory: <path>:`, after the staleness warning
//! ([`freshness_text`]) for a memory more than a day old. 2.1.197 has no `Memory (saved
//! today)` form any more. On the wire the attachment usually follows a tool result and is sent
//! as one `role: "system"` message: the reminders unwrapped and joined with `\n`
//! ([`RecallResult::api_text`]).
//!
//! # Other releases
//!
//! What differs between releases is data in `mneme_core::versions` (rows 42–48 of
//! docs/claude-code-versions.md), and a [`RecallSession`] follows one release
//! ([`RecallSession::for_release`]): the selector's model, `max_tokens`, `thinking` and schema
//! (`RecallSelector`), whether a memory's `metadata.type` tags it in the manifest, the
//! relevance note and header form ([`render_reminders`], [`memory_header`]), and where the
//! memories reach the API ([`Delivery`]: appended to the tool result before 2.1.154).
//! Releases up to 2.1.90 ask in [`Dialect::ClaudeCode2_1_88`]'s form: a fresh scan per query
//! with already-surfaced files left out of the manifest, one message
//! `Query: <query>\n\nAvailable memories:\n<manifest>` plus `\n\nRecently used tools: a, b`
//! ([`collect_recent_successful_tools`]), no fence stripping.
//!
//! All of this was checked against the binaries themselves: `testdata/recall-capture/capture.sh`
//! runs a real release with the flag forced on (through `cachedGrowthBookFeatures`, inside a
//! network namespace with only loopback) against the conformance stub API, and
//! `tests/real_capture.rs` requires Mneme's side query and surfaced text to equal what each
//! captured release sent, apart from the billing-attribution system block, `cache_control`
//! markers and `metadata.user_id`, which identify Claude Code and its prompt cache rather than
//! the recall.
//!
//! Not reproduced: `@agent-<type>` mentions switching the search to that agent's memory folder
//! (callers pass the folder), the prompt-cache `cache_control` markers (the provider trait has
//! no place for them; they change billing, not the answer), the billing-attribution block
//! Claude Code puts first in every system prompt (it names Claude Code's build), and
//! third-party (Bedrock, Vertex) model defaults.
//!
//! Different on purpose: a memory whose name holds a line break is left out of recall
//! ([`forges_lines`]), where Claude Code would write the name as it is into the selector's
//! manifest and the `Memory:` header, lines of the file's own choosing.
//!
//! # Providers
//!
//! [`recall`] takes an optional [`Provider`]. With a model provider (Anthropic, OpenAI,
//! Claude Code CLI) the selection is Claude Code's side query, sent through that provider; the
//! provider should be built with [`selector_model`] for the model Claude Code would use. With
//! none (or an offline one), the [`offline`] BM25F ranker chooses instead, over every topic
//! file (not only the newest 200), with a score and the words that matched. Both go through
//! the same filters, caps and rendering. A failed model call yields an empty selection with
//! the error in [`RecallResult::error`], as Claude Code degrades, so front ends can show why.

mod claude_code;
pub mod eval;
pub mod offline;
mod surface;

pub use claude_code::{
    collect_recent_successful_tools, manifest_message, parse_answer, query_message, selected_names, selection_schema,
    selector_model, single_message, strip_code_fence, AnswerError,
    selector_system_prompt, SelectorPrompt, SELECT_MEMORIES_SYSTEM_PROMPT,
    SELECT_MEMORIES_SYSTEM_PROMPT_2_1_88,
};
pub use surface::{
    freshness_text, memory_age, memory_age_days, memory_header, read_capped, render_reminders, should_recall,
    strip_system_reminder, system_reminder, CappedRead, Truncation, MAX_MEMORY_BYTES, MAX_MEMORY_LINES, MAX_RECALLED, MAX_SESSION_BYTES,
    RELEVANCE_PREAMBLE,
};

use mneme_core::frontmatter;
use mneme_core::versions::{self, LazyAttachment, Profile};
use mneme_core::text::{js_trim, utf16_len};
use mneme_core::Clock;
use mneme_model::{Block, Cancel, Message, ModelError, Provider, ProviderKind, Request, Role};
use mneme_store::memdir::{format_manifest_as, Memdir, Scope, TopicHeader};
use mneme_store::Environment;
use serde::Serialize;
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The form of the selector query (`Profile::recall_dialogue` chooses it for a release).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize)]
pub enum Dialect {
    /// 2.1.91 on: the per-conversation selector dialogue.
    #[default]
    #[serde(rename = "2.1.197")]
    ClaudeCode2_1_197,
    /// Up to 2.1.90 (and the 2.1.88 source): one message per query, with the
    /// recently-used-tools hint.
    #[serde(rename = "2.1.88")]
    ClaudeCode2_1_88,
}

/// Why recall did not run or found nothing to ask about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, thiserror::Error)]
#[serde(rename_all = "camelCase")]
pub enum Skipped {
    #[error("the prompt is empty or a single word; Claude Code recalls only for longer prompts")]
    TooShort,
    #[error("this conversation already surfaced 60 KiB of memories; Claude Code recalls no more until it compacts")]
    SessionBudget,
    #[error("the memory folder has no topic files")]
    NoMemories,
    #[error("every memory was already surfaced in this conversation")]
    AllSurfaced,
    #[error("cancelled")]
    Cancelled,
}

/// Where the recalled memories reach the API when they follow a tool result (the usual case,
/// since recall is collected after tools run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Delivery {
    /// Appended to the tool result after a blank line, the reminders kept whole and separated
    /// by a blank line (releases before 2.1.154).
    ToolResult,
    /// One `role: "system"` message: the reminders unwrapped and joined with `\n` (2.1.154 on;
    /// a string up to 2.1.211, one text block after).
    SystemMessage,
}

impl Delivery {
    /// The name it is serialized as (`toolResult`, `systemMessage`).
    pub fn as_str(self) -> &'static str {
        match self {
            Delivery::ToolResult => "toolResult",
            Delivery::SystemMessage => "systemMessage",
        }
    }
}

/// One recalled memory, as it would be surfaced.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Recalled {
    /// Absolute path (what the header names).
    pub path: PathBuf,
    /// Path relative to the memory folder (what the manifest lists).
    pub rel_path: String,
    /// `name:` from the frontmatter, else the file stem.
    pub name: String,
    /// Why it was chosen: `selected by <model> (1 of 3)`, or the offline ranker's matches.
    pub reason: String,
    /// The offline ranker's BM25F score; none for a model's choice.
    pub score: Option<f32>,
    /// The header above the content (`Memory: <path>:` and the staleness warning).
    pub header: String,
    /// The content as surfaced: capped, with the truncation note when cut.
    pub content: String,
    /// Why the content was cut, if it was.
    pub truncated: Option<Truncation>,
    pub mtime_ms: i64,
    /// Lines kept, when cut (Claude Code records it as the read's `limit`).
    pub limit: Option<usize>,
}

/// The outcome of one [`recall`].
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecallResult {
    /// The memories surfaced, in order.
    pub selected: Vec<Recalled>,
    /// Who chose them.
    pub provider: ProviderKind,
    /// The model asked, for a model provider.
    pub model: Option<String>,
    /// Which Claude Code's protocol was followed.
    pub dialect: Dialect,
    /// Where the memories reach the API in the release followed.
    pub delivery: Delivery,
    /// The first reminder opens with [`RELEVANCE_PREAMBLE`] (2.1.90 on).
    #[serde(skip)]
    pub relevance_note: bool,
    /// Set when recall did not run or had nothing to ask about.
    pub skipped: Option<Skipped>,
    /// The failure that emptied the selection (Claude Code swallows it; Mneme shows it).
    pub error: Option<String>,
    /// Why the offline ranker surfaced nothing although some memories share words with the
    /// prompt: none of them cleared its bar.
    pub abstained: Option<offline::Abstention>,
    /// How sure the offline ranker was of the best memory it weighed (the first surfaced, or
    /// the closest when it stayed silent).
    pub confidence: Option<offline::Confidence>,
    /// Whose words the model selector was asked in (Claude Code's, read from the installed
    /// binary, or Mneme's and why); none when no model was asked.
    pub selector_prompt: Option<SelectorPrompt>,
}

impl RecallResult {
    /// The offline ranker's chance that the first memory it surfaced is relevant; none for a
    /// model's choice or when nothing was surfaced.
    pub fn first_confidence(&self) -> Option<f32> {
        let (sure, first) = (self.confidence.as_ref()?, self.selected.first()?);
        (self.model.is_none() && sure.memory == first.rel_path).then(|| sure.probability())
    }

    /// The `<system-reminder>` texts of the meta messages Claude Code would add, in order.
    pub fn reminders(&self) -> Vec<String> {
        render_reminders(self.selected.iter().map(|m| (m.header.as_str(), m.content.as_str())), self.relevance_note)
    }

    /// The text that reaches the API when the attachment follows a tool result (the usual
    /// case, since recall is collected after tools run), placed as [`RecallResult::delivery`]
    /// says: the reminders whole, separated by a blank line, for the tool result; without their
    /// `<system-reminder>` wrapping, joined with `\n`, for the system message. `None` when
    /// nothing was recalled.
    pub fn api_text(&self) -> Option<String> {
        let reminders = self.reminders();
        let text = match self.delivery {
            Delivery::ToolResult => reminders.join("\n\n"),
            Delivery::SystemMessage => {
                reminders.iter().map(|r| strip_system_reminder(r).to_string()).collect::<Vec<_>>().join("\n")
            }
        };
        (!js_trim(&text).is_empty()).then_some(text)
    }
}

/// The selector dialogue Claude Code 2.1.197 keeps for one memory folder.
#[derive(Debug, Clone)]
struct SelectorConversation {
    headers: Vec<TopicHeader>,
    messages: Vec<Message>,
}

/// What one conversation has recalled so far: the surfaced memories (for dedupe and the 60 KiB
/// budget), the files the model read or wrote (`readFileState`), the selector dialogues and
/// the offline indexes, per memory folder.
pub struct RecallSession {
    /// The release whose recall is followed: its selector's model, limits and schema, its
    /// manifest, and where the memories reach the API.
    profile: Profile,
    /// Surfaced memories with their content length in UTF-16 units, in order.
    surfaced: Vec<(PathBuf, usize)>,
    read_file_state: HashSet<PathBuf>,
    selectors: HashMap<PathBuf, SelectorConversation>,
    offline: HashMap<PathBuf, Arc<offline::Index>>,
    /// The offline ranker's knobs (the default unless the evaluation sweeps them).
    tuning: offline::Tuning,
}

impl std::fmt::Debug for RecallSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RecallSession")
            .field("dialect", &self.dialect())
            .field("surfaced", &self.surfaced)
            .field("read_file_state", &self.read_file_state)
            .finish_non_exhaustive()
    }
}

impl Default for RecallSession {
    fn default() -> Self {
        RecallSession::for_release(versions::newest())
    }
}

impl RecallSession {
    /// A new conversation following the newest release Mneme knows.
    pub fn new() -> RecallSession {
        RecallSession::default()
    }

    /// A new conversation following the release whose behaviours are `profile`
    /// (`mneme_core::versions::behaviours`).
    pub fn for_release(profile: Profile) -> RecallSession {
        RecallSession {
            profile,
            surfaced: Vec::new(),
            read_file_state: HashSet::new(),
            selectors: HashMap::new(),
            offline: HashMap::new(),
            tuning: offline::Tuning::default(),
        }
    }

    /// A new conversation following the given Claude Code's protocol: 2.1.88's (the release
    /// the reference source is), or the newest release's.
    pub fn with_dialect(dialect: Dialect) -> RecallSession {
        match dialect {
            Dialect::ClaudeCode2_1_88 => RecallSession::for_release(versions::behaviours(versions::ClaudeVersion::new(2, 1, 88))),
            Dialect::ClaudeCode2_1_197 => RecallSession::default(),
        }
    }

    /// Sets the offline ranker's knobs, for the evaluation's sweeps.
    pub fn set_offline_tuning(&mut self, tuning: offline::Tuning) {
        self.tuning = tuning;
    }

    /// The form of the selector query, as the release followed asks it.
    pub fn dialect(&self) -> Dialect {
        if self.profile.recall_dialogue {
            Dialect::ClaudeCode2_1_197
        } else {
            Dialect::ClaudeCode2_1_88
        }
    }

    /// Paths surfaced so far (Claude Code's `alreadySurfaced`).
    pub fn surfaced_paths(&self) -> HashSet<&Path> {
        self.surfaced.iter().map(|(p, _)| p.as_path()).collect()
    }

    /// The session budget used so far: surfaced content lengths in UTF-16 units.
    pub fn surfaced_bytes(&self) -> usize {
        self.surfaced.iter().map(|(_, n)| n).sum()
    }

    /// Records a memory as surfaced by an earlier turn (for resuming a conversation).
    pub fn add_surfaced(&mut self, path: impl Into<PathBuf>, content: &str) {
        let path = path.into();
        self.read_file_state.insert(path.clone());
        self.surfaced.push((path, utf16_len(content)));
    }

    /// Records that the model read, wrote or edited a file; recall will not surface it.
    pub fn mark_read(&mut self, path: impl Into<PathBuf>) {
        self.read_file_state.insert(path.into());
    }

    /// Compaction drops the old `relevant_memories` attachments, which resets the budget and
    /// the surfaced set, and clears the file-read state.
    pub fn compact(&mut self) {
        self.surfaced.clear();
        self.read_file_state.clear();
    }

    /// Forgets the frozen manifest and offline index of `memory_dir`, so the next query scans
    /// the folder again (a new conversation in Claude Code's terms).
    pub fn rescan(&mut self, memory_dir: &Path) {
        self.selectors.remove(memory_dir);
        self.offline.remove(memory_dir);
    }

    fn record(&mut self, selected: &[Recalled]) {
        for m in selected {
            self.add_surfaced(m.path.clone(), &m.content);
        }
    }
}

/// Everything [`recall`] needs besides the query, the folder and the provider.
pub struct RecallContext<'a> {
    pub env: &'a Environment,
    pub clock: Arc<dyn Clock>,
    pub cancel: &'a Cancel,
    /// The conversation so far, for 2.1.88's recently-used-tools hint (2.1.197 ignores it).
    pub transcript: &'a [Message],
    pub session: &'a mut RecallSession,
}

/// A chosen file before the filters and the read.
struct Pick {
    path: PathBuf,
    rel_path: String,
    name: String,
    mtime_ms: i64,
    mtime_ns: i64,
    reason: String,
    score: Option<f32>,
}

fn display_name(name: Option<&str>, rel_path: &str) -> String {
    name.map(str::to_string).unwrap_or_else(|| {
        let base = rel_path.rsplit('/').next().unwrap_or(rel_path);
        base.strip_suffix(".md").unwrap_or(base).to_string()
    })
}

/// Runs recall for one user turn: the pre-filters, the selection (by `provider`, or offline),
/// the post-filters, the capped reads and the headers. The surfaced memories are recorded in
/// the session, as the attachment would be in Claude Code's conversation.
pub async fn recall(
    query: &str,
    memory_dir: &Path,
    provider: Option<&dyn Provider>,
    ctx: &mut RecallContext<'_>,
) -> RecallResult {
    let model_provider = provider.filter(|p| p.kind() != ProviderKind::Offline);
    let mut result = RecallResult {
        selected: Vec::new(),
        provider: model_provider.map_or(ProviderKind::Offline, |p| p.kind()),
        model: model_provider.map(|p| p.model().to_string()),
        dialect: ctx.session.dialect(),
        delivery: match ctx.session.profile.lazy {
            LazyAttachment::InToolResult => Delivery::ToolResult,
            LazyAttachment::SystemMessage | LazyAttachment::ReminderPerFile => Delivery::SystemMessage,
        },
        relevance_note: ctx.session.profile.recall_relevance_note,
        skipped: None,
        error: None,
        abstained: None,
        confidence: None,
        selector_prompt: None,
    };
    if !should_recall(query) {
        result.skipped = Some(Skipped::TooShort);
        return result;
    }
    if ctx.session.surfaced_bytes() >= MAX_SESSION_BYTES {
        result.skipped = Some(Skipped::SessionBudget);
        return result;
    }
    if ctx.cancel.is_cancelled() {
        result.skipped = Some(Skipped::Cancelled);
        return result;
    }
    let memdir = Memdir::new(memory_dir, ctx.env.data_dir().join("trash"), ctx.clock.clone()).for_release(&ctx.session.profile);
    let picks = match model_provider {
        Some(p) => select_by_model(query, &memdir, p, ctx, &mut result).await,
        None => select_offline(query, &memdir, ctx, &mut result),
    };
    let surfaced: HashSet<PathBuf> = ctx.session.surfaced.iter().map(|(p, _)| p.clone()).collect();
    let now_ms = ctx.clock.now_ms();
    let relevance_note = ctx.session.profile.recall_relevance_note;
    result.selected = picks
        .into_iter()
        .filter(|p| !ctx.session.read_file_state.contains(&p.path) && !surfaced.contains(&p.path))
        .take(MAX_RECALLED)
        .filter_map(|p| {
            // A file that vanished or cannot be read is dropped, as Claude Code drops it.
            let read = read_capped(&p.path).ok()?;
            Some(Recalled {
                header: memory_header(&p.path, p.mtime_ns, now_ms, relevance_note),
                path: p.path,
                rel_path: p.rel_path,
                name: p.name,
                reason: p.reason,
                score: p.score,
                content: read.content,
                limit: read.truncated.map(|_| read.line_count),
                truncated: read.truncated,
                mtime_ms: p.mtime_ms,
            })
        })
        .collect();
    ctx.session.record(&result.selected);
    result
}

/// Whether a memory's path inside the folder holds a line break: `\n`, `\r`, the vertical
/// tab, form feed and separators that split lines for many readers (U+001C to U+001E, U+0085,
/// U+2028, U+2029). Such a name would write lines of its own into the manifest the selector
/// model reads (a fake entry, a fake `Memory:` header) and into the header above the memory;
/// no memory Claude Code or a person writes is named so, so recall leaves it out, where Claude
/// Code would list it as it is. Other control characters (an escape) stay on their line, and
/// the CLI shows them as text.
pub fn forges_lines(rel_path: &str) -> bool {
    rel_path.chars().any(|c| matches!(c, '\n' | '\r' | '\u{0b}' | '\u{0c}' | '\u{1c}'..='\u{1e}' | '\u{85}' | '\u{2028}' | '\u{2029}'))
}

/// The scan Claude Code's selector sees: 30-line headers, newest 200 (less any whose name
/// [`forges_lines`]).
fn manifest_headers(memdir: &Memdir, result: &mut RecallResult) -> Vec<TopicHeader> {
    match memdir.manifest_headers() {
        Ok(mut headers) => {
            headers.retain(|h| !forges_lines(&h.rel_path));
            headers
        }
        Err(e) => {
            result.error = Some(format!("could not read the memory folder: {e}"));
            Vec::new()
        }
    }
}

fn pick_from_header(h: &TopicHeader, reason: String) -> Pick {
    Pick {
        path: h.abs_path.clone(),
        rel_path: h.rel_path.clone(),
        name: display_name(h.name.as_deref(), &h.rel_path),
        mtime_ms: h.mtime_ms,
        mtime_ns: h.mtime_ns,
        reason,
        score: None,
    }
}

/// Sends the side query. `Err(None)` is a cancellation, which Claude Code does not report.
async fn ask(provider: &dyn Provider, request: &Request, cancel: &Cancel) -> Result<String, Option<String>> {
    match provider.complete(request, cancel).await {
        Ok(response) => match response.first_text() {
            Some(text) => Ok(text.to_string()),
            None => Err(Some(AnswerError::NoText.to_string())),
        },
        Err(ModelError::Cancelled) => Err(None),
        Err(_) if cancel.is_cancelled() => Err(None),
        Err(e) => Err(Some(e.to_string())),
    }
}

async fn select_by_model(
    query: &str,
    memdir: &Memdir,
    provider: &dyn Provider,
    ctx: &mut RecallContext<'_>,
    result: &mut RecallResult,
) -> Vec<Pick> {
    let surfaced = ctx.session.surfaced_paths().into_iter().map(Path::to_path_buf).collect::<HashSet<_>>();
    let dialect = ctx.session.dialect();
    let release = ctx.session.profile;
    // Both forms of the query: the system prompt, and the release's model limits and schema.
    let selector_request = |messages: Vec<Message>, result: &mut RecallResult| {
        let (system, source) = selector_system_prompt(dialect, ctx.env);
        result.selector_prompt = Some(source);
        Request {
            system,
            messages,
            tools: Vec::new(),
            max_tokens: release.recall_selector.max_tokens,
            json_schema: Some(selection_schema(release.recall_selector.knowledge_ids)),
            thinking_disabled: release.recall_selector.thinking_disabled,
        }
    };
    let model = provider.model().to_string();
    let reason = |i: usize, n: usize| format!("selected by {model} ({} of {n})", i + 1);
    match dialect {
        Dialect::ClaudeCode2_1_197 => {
            let key = memdir.root().to_path_buf();
            if !ctx.session.selectors.contains_key(&key) {
                let headers = manifest_headers(memdir, result);
                if headers.is_empty() {
                    result.skipped.get_or_insert(Skipped::NoMemories);
                    return Vec::new();
                }
                if ctx.cancel.is_cancelled() {
                    result.skipped = Some(Skipped::Cancelled);
                    return Vec::new();
                }
                let manifest = format_manifest_as(&headers, &release);
                let messages = vec![Message::user_text(manifest_message(&manifest))];
                ctx.session.selectors.insert(key.clone(), SelectorConversation { headers, messages });
            }
            let Some(conv) = ctx.session.selectors.get_mut(&key) else { return Vec::new() };
            if conv.headers.iter().all(|h| surfaced.contains(&h.abs_path)) {
                result.skipped = Some(Skipped::AllSurfaced);
                return Vec::new();
            }
            let prompt = query_message(query);
            let mut messages = conv.messages.clone();
            messages.push(Message::user_text(prompt.clone()));
            let request = selector_request(messages, result);
            let text = match ask(provider, &request, ctx.cancel).await {
                Ok(t) => t,
                Err(e) => {
                    result.error = e;
                    return Vec::new();
                }
            };
            let answer = match parse_answer(&text, dialect) {
                Ok(v) => v,
                Err(e) => {
                    result.error = Some(e.to_string());
                    return Vec::new();
                }
            };
            // Claude Code keeps the exchange as soon as the answer parses, before it looks for
            // the list in it.
            conv.messages.push(Message::user_text(prompt));
            conv.messages.push(Message { role: Role::Assistant, content: vec![Block::Text { text }] });
            let by_name: HashMap<&str, &TopicHeader> = conv.headers.iter().map(|h| (h.rel_path.as_str(), h)).collect();
            let names = match selected_names(&answer, |n| by_name.contains_key(n)) {
                Ok(n) => n,
                Err(e) => {
                    result.error = Some(e.to_string());
                    return Vec::new();
                }
            };
            let n = names.len();
            names
                .iter()
                .enumerate()
                .map(|(i, name)| (i, by_name[name.as_str()]))
                .filter(|(_, h)| !surfaced.contains(&h.abs_path))
                .map(|(i, h)| pick_from_header(h, reason(i, n)))
                .collect()
        }
        Dialect::ClaudeCode2_1_88 => {
            let all = manifest_headers(memdir, result);
            if all.is_empty() {
                result.skipped.get_or_insert(Skipped::NoMemories);
                return Vec::new();
            }
            let headers: Vec<TopicHeader> = all.into_iter().filter(|h| !surfaced.contains(&h.abs_path)).collect();
            if headers.is_empty() {
                result.skipped = Some(Skipped::AllSurfaced);
                return Vec::new();
            }
            let tools = collect_recent_successful_tools(ctx.transcript);
            let manifest = format_manifest_as(&headers, &release);
            let request = selector_request(vec![Message::user_text(single_message(query, &manifest, &tools))], result);
            let by_name: HashMap<&str, &TopicHeader> = headers.iter().map(|h| (h.rel_path.as_str(), h)).collect();
            let names = match ask(provider, &request, ctx.cancel).await {
                Ok(text) => parse_answer(&text, dialect).and_then(|v| selected_names(&v, |n| by_name.contains_key(n))),
                Err(e) => {
                    result.error = e;
                    return Vec::new();
                }
            };
            match names {
                Ok(names) => {
                    let n = names.len();
                    names.iter().enumerate().map(|(i, name)| pick_from_header(by_name[name.as_str()], reason(i, n))).collect()
                }
                Err(e) => {
                    result.error = Some(e.to_string());
                    Vec::new()
                }
            }
        }
    }
}

/// The most of one memory the offline ranker reads.
const MAX_DOCUMENT_BYTES: u64 = 10 * 1024 * 1024;

/// The most of a whole folder the offline ranker reads, since the index keeps every body it
/// read: a folder of a thousand 10 MiB files (sparse ones cost no disk; a checkout of zeros is
/// a small clone) would otherwise take 10 GiB of memory.
const MAX_FOLDER_BYTES: u64 = 256 * 1024 * 1024;

/// How much of each file (by their sizes at the scan) the offline ranker reads: up to
/// [`MAX_DOCUMENT_BYTES`] each while the folder's total stays within [`MAX_FOLDER_BYTES`];
/// past that, the smaller files are read whole first and the largest get what is left, which
/// may be nothing (they are then ranked by their name, description and index line).
fn read_limits(sizes: &[u64]) -> Vec<u64> {
    let wanted = |size: u64| size.min(MAX_DOCUMENT_BYTES);
    if sizes.iter().map(|&s| wanted(s)).sum::<u64>() <= MAX_FOLDER_BYTES {
        return vec![MAX_DOCUMENT_BYTES; sizes.len()];
    }
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| sizes[i]);
    let mut limits = vec![0; sizes.len()];
    let mut left = MAX_FOLDER_BYTES;
    for i in order {
        limits[i] = wanted(sizes[i]).min(left);
        left -= limits[i];
    }
    limits
}

/// Reads every topic file of the folder (whole files, for the bodies) into index documents.
/// Unreadable files are left out, as the scan leaves them out, and so are those whose name
/// [`forges_lines`].
pub fn load_documents(memdir: &Memdir) -> Result<Vec<offline::Document>, mneme_store::memdir::MemdirError> {
    let mut scan = memdir.scan()?;
    scan.files.retain(|f| !forges_lines(&f.rel_path));
    // Each memory's index line (title and hook) is a second short description of it. A
    // missing or unreadable index only costs that evidence.
    let mut index_lines: HashMap<String, String> = HashMap::new();
    for scope in [Scope::Private, Scope::Team] {
        let Ok(index) = memdir.read_index(scope) else { continue };
        for entry in index.lines.into_iter().filter_map(|l| l.entry) {
            let text = index_lines.entry(entry.rel_path).or_default();
            for part in [Some(entry.title), entry.hook].into_iter().flatten() {
                text.push_str(&part);
                text.push('\n');
            }
        }
    }
    let index_lines = &index_lines;
    let limits = read_limits(&scan.files.iter().map(|f| f.size).collect::<Vec<_>>());
    let read = |(f, &limit): (&mneme_store::memdir::TopicFile, &u64)| -> Option<offline::Document> {
        // A memory of gigabytes is ranked by its first 10 MiB (as the scan reads at most that
        // much of it whole), and a name that became a FIFO or device since the scan is skipped.
        let file = mneme_store::open::open_no_wait(&f.abs_path).ok()?;
        if !file.metadata().ok()?.is_file() {
            return None;
        }
        let mut bytes = Vec::new();
        std::io::Read::read_to_end(&mut std::io::Read::take(file, limit), &mut bytes).ok()?;
        let text = String::from_utf8_lossy(&bytes);
        // Only the body is wanted: the scan has read the frontmatter (through mneme-core's YAML
        // limits), and parsing the block again here cost a second YAML parse per memory.
        let body = match frontmatter::block_bounds(&text) {
            Some((_, end)) => text[end..].to_string(),
            None => text.into_owned(),
        };
        Some(offline::Document {
            rel_path: f.rel_path.clone(),
            abs_path: f.abs_path.clone(),
            name: f.name.clone(),
            description: f.description.clone(),
            memory_type: f.memory_type,
            body,
            index_line: index_lines.get(&f.rel_path).cloned(),
            mtime_ms: f.mtime_ms,
            mtime_ns: f.mtime_ns,
        })
    };
    // Reading thousands of files is the slow part; spread it over the cores.
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
    let chunk = scan.files.len().div_ceil(threads).max(64);
    let docs = std::thread::scope(|s| {
        let handles: Vec<_> = scan
            .files
            .chunks(chunk)
            .zip(limits.chunks(chunk))
            .map(|(part, limits)| s.spawn(move || part.iter().zip(limits).filter_map(read).collect::<Vec<_>>()))
            .collect();
        // A reader that panicked is a bug to report as the caller reports any other, not a
        // chunk of memories silently missing from the ranking.
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic))).collect()
    });
    Ok(docs)
}

fn select_offline(query: &str, memdir: &Memdir, ctx: &mut RecallContext<'_>, result: &mut RecallResult) -> Vec<Pick> {
    let key = memdir.root().to_path_buf();
    let index = match ctx.session.offline.get(&key) {
        Some(i) => i.clone(),
        None => match load_documents(memdir) {
            Ok(docs) => {
                let index = Arc::new(offline::Index::build(docs));
                ctx.session.offline.insert(key, index.clone());
                index
            }
            Err(e) => {
                result.error = Some(format!("could not read the memory folder: {e}"));
                return Vec::new();
            }
        },
    };
    if index.docs().is_empty() {
        result.skipped = Some(Skipped::NoMemories);
        return Vec::new();
    }
    let surfaced = ctx.session.surfaced_paths();
    let read = &ctx.session.read_file_state;
    let exclude = |d: &offline::Document| surfaced.contains(d.abs_path.as_path()) || read.contains(&d.abs_path);
    let ranking = index.search_tuned(query, MAX_RECALLED, exclude, &ctx.session.tuning);
    if ranking.hits.is_empty() && index.docs().iter().all(|d| surfaced.contains(d.abs_path.as_path())) {
        result.skipped = Some(Skipped::AllSurfaced);
    } else {
        result.abstained = ranking.abstained;
    }
    result.confidence = ranking.confidence;
    ranking.hits.into_iter()
        .map(|h| {
            let d = &index.docs()[h.doc];
            Pick {
                path: d.abs_path.clone(),
                rel_path: d.rel_path.clone(),
                name: display_name(d.name.as_deref(), &d.rel_path),
                mtime_ms: d.mtime_ms,
                mtime_ns: d.mtime_ns,
                reason: h.why(),
                score: Some(h.score),
            }
        })
        .collect()
}
