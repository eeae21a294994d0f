//! Session memory: the per-session notes file Claude Code keeps for compaction
//! (`src/services/SessionMemory/*`; the feature is compiled out of the 2.1.197 binary, so the
//! rules and numbers are those of the 2.1.88 source; the template and prompts are Mneme's own
//! words, in `data/`, with the same structure).
//!
//! - The file is `<config>/projects/<sanitize(cwd)>/<session>/session-memory/summary.md`
//!   ([`mneme_store::paths::session_memory_path`]); its folder is created `0700`, the file
//!   exclusively with `0600` and then filled with the template.
//! - The template is [`DEFAULT_TEMPLATE`] unless `<config>/session-memory/config/template.md`
//!   exists; the update prompt is [`default_update_prompt`] unless
//!   `<config>/session-memory/config/prompt.md` exists. `{{currentNotes}}` and `{{notesPath}}`
//!   are substituted in one pass; other `{{x}}` stay as written. Reminders are appended when a
//!   section is over [`MAX_SECTION_LENGTH`] tokens or the file over
//!   [`MAX_TOTAL_SESSION_MEMORY_TOKENS`].
//! - [`SessionMemoryState::should_extract`] is Claude Code's threshold rule over the context
//!   size ([`token_count_with_estimation`]: the last API usage plus length/4 for what came
//!   after it).
//! - The update runs as an agent that may only `Edit` that one file ([`update`]).

use crate::prompt::render_conversation;
use crate::record::LeftOut;
use crate::transcript::{Block, Content, Conversation, EntryType};
use mneme_core::text::estimate_tokens;
use mneme_core::Clock;
use mneme_model::{Cancel, Provider};
use mneme_store::Environment;
use serde::{Deserialize, Serialize};
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Soft per-section budget in tokens (`MAX_SECTION_LENGTH`).
pub const MAX_SECTION_LENGTH: u64 = 2000;
/// Budget for the whole file in tokens (`MAX_TOTAL_SESSION_MEMORY_TOKENS`).
pub const MAX_TOTAL_SESSION_MEMORY_TOKENS: u64 = 12000;
/// The most model turns one notes update takes (see where it is used).
pub const SESSION_MEMORY_MAX_TURNS: u32 = 20;

/// The notes template: ten `# ` sections, each opened by an italic line saying what belongs
/// in it (the structure of Claude Code's `DEFAULT_SESSION_MEMORY_TEMPLATE`; Mneme's wording).
pub const DEFAULT_TEMPLATE: &str = include_str!("../data/session_template.md");

/// The update prompt with `{{notesPath}}`, `{{currentNotes}}` and `{{maxSectionTokens}}`.
const UPDATE_PROMPT: &str = include_str!("../data/session_update.txt");

/// The default update prompt (the counterpart of Claude Code's `getDefaultUpdatePrompt()`, in
/// Mneme's words): edit only the notes file, keep the template's headings and italic lines,
/// write dense specifics, keep sections under [`MAX_SECTION_LENGTH`], keep "Current State"
/// current. `{{notesPath}}` and `{{currentNotes}}` are left for [`build_update_prompt`].
pub fn default_update_prompt() -> String {
    substitute(UPDATE_PROMPT.trim_end(), &[("maxSectionTokens", &MAX_SECTION_LENGTH.to_string())])
}

/// `<config>/session-memory/config`, where the user's overrides live.
pub fn config_dir(env: &Environment) -> PathBuf {
    env.config_home().join("session-memory").join("config")
}

/// The most of an override that is read: a template or prompt is a few kilobytes, and what is
/// read goes into every session-notes prompt.
const MAX_OVERRIDE_BYTES: u64 = 1 << 20;

/// Reads an override; a missing or unreadable file means the default, as in Claude Code
/// (which logs other read errors and carries on). Only a plain file is read, opened without
/// waiting: a FIFO under an override's name would otherwise stop every notes update, and a
/// huge file would be read whole. Such a file is unreadable, so the default is used.
fn read_override(path: &Path) -> Option<String> {
    let bytes = mneme_store::open::read_own_file(path, MAX_OVERRIDE_BYTES).ok()??;
    String::from_utf8(bytes).ok()
}

/// `loadSessionMemoryTemplate`.
pub fn load_template(env: &Environment) -> String {
    read_override(&config_dir(env).join("template.md")).unwrap_or_else(|| DEFAULT_TEMPLATE.to_string())
}

/// `loadSessionMemoryPrompt`.
pub fn load_prompt(env: &Environment) -> String {
    read_override(&config_dir(env).join("prompt.md")).unwrap_or_else(default_update_prompt)
}

/// `substituteVariables`: each `{{name}}` (`name` of `[A-Za-z0-9_]+`) with a value in `vars` is
/// replaced, in one left-to-right pass, so a value containing `{{…}}` is never substituted
/// again; unknown names stay as written.
pub fn substitute(template: &str, vars: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        let name_len = after.bytes().take_while(|b| b.is_ascii_alphanumeric() || *b == b'_').count();
        if name_len > 0 && after[name_len..].starts_with("}}") {
            let name = &after[..name_len];
            match vars.iter().find(|(k, _)| *k == name) {
                Some((_, v)) => out.push_str(v),
                None => out.push_str(&rest[open..open + 2 + name_len + 2]),
            }
            rest = &after[name_len + 2..];
        } else {
            out.push('{');
            rest = &rest[open + 1..];
        }
    }
    out.push_str(rest);
    out
}

/// `analyzeSectionSizes`: tokens per `# ` section (content trimmed), in first-seen order.
fn section_sizes(content: &str) -> Vec<(String, u64)> {
    let mut sizes: Vec<(String, u64)> = Vec::new();
    let mut set = |header: &str, lines: &[&str]| {
        if header.is_empty() || lines.is_empty() {
            return;
        }
        let tokens = estimate_tokens(mneme_core::text::js_trim(&lines.join("\n"))) as u64;
        match sizes.iter_mut().find(|(h, _)| h == header) {
            Some(slot) => slot.1 = tokens,
            None => sizes.push((header.to_string(), tokens)),
        }
    };
    let mut header = "";
    let mut lines: Vec<&str> = Vec::new();
    for line in content.split('\n') {
        if line.starts_with("# ") {
            set(header, &lines);
            header = line;
            lines.clear();
        } else {
            lines.push(line);
        }
    }
    set(header, &lines);
    sizes
}

/// The size reminders appended to the prompt (Claude Code's `generateSectionReminders` rule:
/// the whole file over budget, then the oversized sections, largest first).
fn section_reminders(sizes: &[(String, u64)], total: u64) -> String {
    let over_budget = total > MAX_TOTAL_SESSION_MEMORY_TOKENS;
    let mut oversized: Vec<&(String, u64)> = sizes.iter().filter(|(_, t)| *t > MAX_SECTION_LENGTH).collect();
    oversized.sort_by_key(|s| std::cmp::Reverse(s.1));
    if oversized.is_empty() && !over_budget {
        return String::new();
    }
    let mut out = String::new();
    if over_budget {
        out.push_str(&format!(
            "\n\nThe notes are too long: about {total} tokens, over the limit of {MAX_TOTAL_SESSION_MEMORY_TOKENS}. Shorten them to fit: cut minor details from the longest sections, merge items that belong together, and sum up older entries. Keep \"Current State\" and \"Errors & Corrections\" accurate and complete."
        ));
    }
    if !oversized.is_empty() {
        let list: Vec<String> = oversized
            .iter()
            .map(|(s, t)| format!("- \"{s}\" is ~{t} tokens (limit: {MAX_SECTION_LENGTH})"))
            .collect();
        let lead = if over_budget {
            "Sections to shorten first"
        } else {
            "These sections are over the limit for one section; shorten them"
        };
        out.push_str(&format!("\n\n{lead}:\n{}", list.join("\n")));
    }
    out
}

/// `buildSessionMemoryUpdatePrompt`: the prompt (override or default) with the notes and their
/// path substituted, plus any size reminders.
pub fn build_update_prompt(env: &Environment, current_notes: &str, notes_path: &Path) -> String {
    let template = load_prompt(env);
    let path = notes_path.to_string_lossy();
    let base = substitute(&template, &[("currentNotes", current_notes), ("notesPath", &path)]);
    let total = estimate_tokens(current_notes) as u64;
    base + &section_reminders(&section_sizes(current_notes), total)
}

/// `isSessionMemoryEmpty`: the notes are still just the template.
pub fn is_empty(env: &Environment, content: &str) -> bool {
    mneme_core::text::js_trim(content) == mneme_core::text::js_trim(&load_template(env))
}

/// The most of the notes file that is read: what is read goes into every update's prompt, and
/// the notes are kept under [`MAX_TOTAL_SESSION_MEMORY_TOKENS`] (some 48 KB), so a file past
/// this is none the update wrote. The same bound as an override of the template or prompt,
/// which go into the same prompt.
pub const MAX_NOTES_BYTES: u64 = MAX_OVERRIDE_BYTES;

/// The notes file, created with the template if it does not exist yet (folder `0700`, file
/// created exclusively with `0600`). Returns its current content. A file over
/// [`MAX_NOTES_BYTES`] is refused with [`io::ErrorKind::FileTooLarge`], naming it and what to
/// do, as [`mneme_store::open::read_own_file`] refuses one of Mneme's own files (which cannot
/// be used here: it follows links).
pub fn setup_file(env: &Environment, path: &Path) -> io::Result<String> {
    if let Some(dir) = path.parent() {
        create_private_dir(dir)?;
    }
    let mut opts = OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, 0o600);
    match opts.open(path) {
        Ok(mut f) => {
            f.write_all(load_template(env).as_bytes())?;
            f.sync_all()?;
        }
        Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    // Read without following a link or waiting on a FIFO planted under the notes' name: what
    // is read here goes into the model's prompt.
    let mut opts = OpenOptions::new();
    opts.read(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::custom_flags(&mut opts, (rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32);
    let mut f = opts.open(path).map_err(|e| io::Error::new(e.kind(), format!("{e}; the session notes must be a plain file, not a link ({})", path.display())))?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, format!("the session notes {} are not a plain file; remove what is there", path.display())));
    }
    let too_large = || {
        io::Error::new(
            io::ErrorKind::FileTooLarge,
            format!(
                "the session notes {} are larger than {}, far more than notes hold, so Mneme does not read them; move the file aside or delete it (the next update starts the notes again from the template)",
                path.display(),
                mneme_store::open::size_words(MAX_NOTES_BYTES)
            ),
        )
    };
    if meta.len() > MAX_NOTES_BYTES {
        return Err(too_large());
    }
    // Capped by what is read too: the file may grow while it is read.
    let mut bytes = Vec::with_capacity(mneme_store::open::capacity_for(meta.len()));
    io::Read::read_to_end(&mut io::Read::take(&mut f, MAX_NOTES_BYTES + 1), &mut bytes)?;
    if bytes.len() as u64 > MAX_NOTES_BYTES {
        return Err(too_large());
    }
    String::from_utf8(bytes).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, format!("the session notes {} are not UTF-8 text ({e}); fix or delete the file", path.display())))
}

fn create_private_dir(dir: &Path) -> io::Result<()> {
    let mut b = fs::DirBuilder::new();
    b.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
    b.create(dir)
}

/// `roughTokenCountEstimationForMessage`. Attachments are estimated from their JSON: Claude
/// Code renders each kind into user messages first, which Mneme does not reproduce for every
/// kind; attachments are small next to the messages they follow.
fn message_tokens(m: &Conversation) -> u64 {
    match (m.entry_type, &m.message, m.attachment_tokens) {
        (EntryType::User | EntryType::Assistant, Some(msg), _) => match &msg.content {
            Content::Text(s) => estimate_tokens(s) as u64,
            Content::Blocks(blocks) => blocks.iter().map(Block::rough_tokens).sum(),
        },
        (EntryType::Attachment, _, Some(tokens)) => tokens,
        _ => 0,
    }
}

/// `tokenCountWithEstimation`: the context size as of the newest API response with usage
/// (input + cache + output), plus the rough estimate of every message after it — after the
/// response's first entry, so tool results interleaved between the entries of one split
/// response are counted. Without any usage, the rough estimate of everything.
pub fn token_count_with_estimation(messages: &[Conversation]) -> u64 {
    let usage_of = |m: &Conversation| {
        let msg = m.message.as_ref()?;
        if m.entry_type != EntryType::Assistant || msg.model.as_deref() == Some("<synthetic>") {
            return None;
        }
        msg.usage
    };
    let response_id = |m: &Conversation| {
        (m.entry_type == EntryType::Assistant).then(|| m.message.as_ref().and_then(|x| x.id.clone())).flatten()
    };
    for i in (0..messages.len()).rev() {
        let Some(usage) = usage_of(&messages[i]) else { continue };
        let mut anchor = i;
        if let Some(id) = response_id(&messages[i]) {
            for j in (0..i).rev() {
                match response_id(&messages[j]) {
                    Some(prior) if prior == id => anchor = j,
                    Some(_) => break,
                    None => {}
                }
            }
        }
        return usage.context_tokens() + messages[anchor + 1..].iter().map(message_tokens).sum::<u64>();
    }
    messages.iter().map(message_tokens).sum()
}

/// `hasToolCallsInLastAssistantTurn`.
pub fn has_tool_calls_in_last_assistant_turn(messages: &[Conversation]) -> bool {
    messages
        .iter()
        .rev()
        .find(|m| m.entry_type == EntryType::Assistant && m.message.is_some())
        .is_some_and(|m| m.tool_uses().next().is_some())
}

/// `SessionMemoryConfig` (remote config may raise or lower each; values ≤ 0 are ignored).
/// A threshold missing from a saved state takes Claude Code's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionMemoryConfig {
    pub minimum_message_tokens_to_init: u64,
    pub minimum_tokens_between_update: u64,
    pub tool_calls_between_updates: u64,
}

impl Default for SessionMemoryConfig {
    /// `DEFAULT_SESSION_MEMORY_CONFIG`.
    fn default() -> Self {
        SessionMemoryConfig {
            minimum_message_tokens_to_init: 10_000,
            minimum_tokens_between_update: 5_000,
            tool_calls_between_updates: 3,
        }
    }
}

/// Claude Code's per-session session-memory state. A field missing from the saved file (an
/// older or partial one) takes its default, as a fresh session's: at worst the thresholds are
/// counted again from the start, where an error would stop the session's extraction.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct SessionMemoryState {
    pub config: SessionMemoryConfig,
    /// The first extraction happened (the init threshold was met once).
    pub initialized: bool,
    /// Context size when the last update ran.
    pub tokens_at_last_extraction: u64,
    /// `lastMemoryMessageUuid`: tool calls are counted after it.
    pub last_memory_message_uuid: Option<String>,
    /// The newest message the notes are known to cover (used by compaction).
    pub last_summarized_message_id: Option<String>,
    /// Fields a newer Mneme wrote, kept when this build saves the state (those inside
    /// `config` are not: it is read as this build's thresholds).
    #[serde(flatten, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: mneme_core::own_files::Unknown,
}

impl SessionMemoryState {
    /// `shouldExtractMemory`: the context must have reached the init threshold once; then an
    /// update needs the token growth since the last one, and either enough tool calls since the
    /// last update or a last assistant turn without tool calls (a natural break). When it says
    /// yes, the tool-call count restarts at the newest message.
    pub fn should_extract(&mut self, messages: &[Conversation]) -> bool {
        let current = token_count_with_estimation(messages);
        if !self.initialized {
            if current < self.config.minimum_message_tokens_to_init {
                return false;
            }
            self.initialized = true;
        }
        // A context that shrank (compaction) has not grown.
        let token_threshold =
            current.saturating_sub(self.tokens_at_last_extraction) >= self.config.minimum_tokens_between_update;
        let tool_calls = count_tool_calls_since(messages, self.last_memory_message_uuid.as_deref());
        let tool_threshold = tool_calls >= self.config.tool_calls_between_updates;
        let natural_break = !has_tool_calls_in_last_assistant_turn(messages);
        // Claude Code: (tokens && toolCalls) || (tokens && !toolCallsInLastTurn).
        let extract = token_threshold && (tool_threshold || natural_break);
        if extract {
            if let Some(last) = messages.last() {
                self.last_memory_message_uuid = Some(last.uuid.clone());
            }
        }
        extract
    }

    /// After a successful update: remember the context size, and that the notes cover the
    /// newest message when it does not end in a tool call (so compaction never splits a call
    /// from its result).
    pub fn record_extraction(&mut self, messages: &[Conversation]) {
        self.tokens_at_last_extraction = token_count_with_estimation(messages);
        if !has_tool_calls_in_last_assistant_turn(messages) {
            if let Some(last) = messages.last() {
                self.last_summarized_message_id = Some(last.uuid.clone());
            }
        }
    }
}

/// `countToolCallsSince`: `tool_use` blocks in assistant messages after `since` (all without
/// one; none when `since` is gone).
fn count_tool_calls_since(messages: &[Conversation], since: Option<&str>) -> u64 {
    let start = match since {
        None => 0,
        Some(id) => match messages.iter().position(|m| m.uuid == id) {
            Some(i) => i + 1,
            None => return 0,
        },
    };
    messages[start..].iter().map(|m| m.tool_uses().count() as u64).sum()
}

/// What one update did.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Updated {
    pub path: PathBuf,
    /// Whether the notes changed.
    pub changed: bool,
    pub turns: u32,
    pub denials: Vec<mneme_agent::Denial>,
    /// The oldest messages of the conversation the update did not read: the transcript holds
    /// more than one read holds ([`crate::transcript::HELD_LIMIT_BYTES`]). Absent when none
    /// were; set by [`crate::Extractor::update_session_memory`], which holds the transcript.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_out: Option<LeftOut>,
}

impl Updated {
    /// What the update did, for a run log: a line, then what was left out and why, if
    /// anything was, so notes written from part of a conversation never read as from all of it.
    pub fn summary(&self) -> String {
        let done = if self.changed { "Session notes updated" } else { "Session notes checked: nothing to change" };
        match &self.left_out {
            Some(left_out) => format!("{done}\nLeft out: {}", left_out.notes_sentence()),
            None => done.to_string(),
        }
    }
}

/// Every way an update fails.
#[derive(Debug, thiserror::Error)]
pub enum SessionMemoryError {
    #[error("the session id `{0}` is not a UUID; pass the id from the transcript's file name")]
    BadSessionId(String),
    #[error("{}", setup_text(path, source))]
    Setup { path: PathBuf, source: io::Error },
    /// The notes file is there but is not notes: too large, not text, or not a plain file. Its
    /// message names the file and what to do.
    #[error("{source}")]
    Notes { path: PathBuf, source: io::Error },
    #[error(transparent)]
    Agent(#[from] mneme_agent::AgentError),
}

/// [`SessionMemoryError::Setup`] for people: the disk's refusal (full, read-only, another
/// account's) says which and what to do, where the system's bare words say neither.
fn setup_text(path: &Path, source: &io::Error) -> String {
    match mneme_store::atomic::Refusal::of(source) {
        Some(r) => format!("could not prepare the session notes at {}: {}.", path.display(), r.says(path)),
        None => format!("could not prepare the session notes at {}: {source}. Check that the folder is writable.", path.display()),
    }
}

/// Runs one session-memory update: creates the notes from the template if needed, asks the
/// model (through Mneme's agent, allowed only `Edit` of the notes file) to update them from
/// `messages`, and applies the edit atomically.
pub async fn update(
    env: &Environment,
    clock: Arc<dyn Clock>,
    provider: &dyn Provider,
    cwd: &Path,
    session_id: &str,
    messages: &[Conversation],
    cancel: &Cancel,
) -> Result<Updated, SessionMemoryError> {
    let path = mneme_store::paths::session_memory_path(env, cwd, session_id)
        .ok_or_else(|| SessionMemoryError::BadSessionId(session_id.to_string()))?;
    let current = setup_file(env, &path).map_err(|source| match source.kind() {
        io::ErrorKind::FileTooLarge | io::ErrorKind::InvalidData | io::ErrorKind::InvalidInput => SessionMemoryError::Notes { path: path.clone(), source },
        _ => SessionMemoryError::Setup { path: path.clone(), source },
    })?;
    let prompt = format!(
        "<conversation>\n{}\n</conversation>\n\n{}",
        render_conversation(messages),
        build_update_prompt(env, &current, &path)
    );
    let data = env.data_dir();
    let task = mneme_agent::AgentTask {
        system: String::new(),
        prompt,
        policy: mneme_agent::Policy::SessionMemory { path: path.clone() },
        // Claude Code sets none; on the user's own key a looping model must still stop (one
        // notes file takes a handful of edits).
        max_turns: Some(SESSION_MEMORY_MAX_TURNS),
        cwd: cwd.to_path_buf(),
        label: "session_memory".into(),
        work_dir: data.join("work").join("session-memory"),
        clock,
        // The notes file is never in team memory; the scanner only has to be a real one.
        release: mneme_store::claude_install::installed_profile(env),
        // The session-memory policy allows one Edit of one file; Claude Code's rule check is
        // part of the auto-memory agents' permission function only.
        permission_rules: Default::default(),
    };
    let trash = data.join("trash").join("session-memory");
    let outcome = mneme_agent::run_agent(provider, &task, mneme_agent::Mode::Apply { trash_dir: trash }, cancel).await?;
    Ok(Updated { path, changed: !outcome.changeset.is_empty(), turns: outcome.turns, denials: outcome.denials, left_out: None })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::parse_entry;
    use serde_json::{json, Value};

    fn conv(v: Value) -> Conversation {
        match parse_entry(v) {
            crate::transcript::Entry::Conversation(c) => *c,
            other => panic!("{other:?}"),
        }
    }

    fn user(uuid: &str, chars: usize) -> Conversation {
        conv(json!({"type": "user", "uuid": uuid, "message": {"content": "x".repeat(chars)}}))
    }

    fn assistant(uuid: &str, id: &str, usage: Option<(u64, u64)>, tool: bool) -> Conversation {
        let content = if tool {
            json!([{"type": "tool_use", "id": format!("t{uuid}"), "name": "Bash", "input": {"command": "ls"}}])
        } else {
            json!([{"type": "text", "text": "done"}])
        };
        let mut m = json!({"id": id, "content": content, "stop_reason": if tool { "tool_use" } else { "end_turn" }});
        if let Some((i, o)) = usage {
            m["usage"] = json!({"input_tokens": i, "output_tokens": o, "cache_read_input_tokens": 100, "cache_creation_input_tokens": 0});
        }
        conv(json!({"type": "assistant", "uuid": uuid, "message": m}))
    }

    #[test]
    fn the_template_has_ten_sections_each_with_an_italic_line() {
        let lines: Vec<&str> = DEFAULT_TEMPLATE.lines().collect();
        let headers: Vec<&str> = lines.iter().filter(|l| l.starts_with("# ")).copied().collect();
        assert_eq!(
            headers,
            [
                "# Session Title", "# Current State", "# Task specification", "# Files and Functions", "# Workflow",
                "# Errors & Corrections", "# Codebase and System Documentation", "# Learnings", "# Key results",
                "# Worklog"
            ]
        );
        for (i, l) in lines.iter().enumerate() {
            if l.starts_with("# ") {
                assert!(lines[i + 1].starts_with('_') && lines[i + 1].ends_with('_'), "{l}");
            }
        }
        assert!(DEFAULT_TEMPLATE.starts_with("\n# Session Title\n") && DEFAULT_TEMPLATE.ends_with("_\n"));
    }

    #[test]
    fn substitution_is_one_pass_and_keeps_unknown_placeholders() {
        let t = "a {{notesPath}} b {{currentNotes}} c {{other}} {{ notesPath }} {{} {{{notesPath}}}";
        let out = substitute(t, &[("currentNotes", "{{notesPath}} $1 $&"), ("notesPath", "/p")]);
        assert_eq!(out, "a /p b {{notesPath}} $1 $& c {{other}} {{ notesPath }} {{} {/p}");
        let p = default_update_prompt();
        assert!(p.contains("You already have the notes file, {{notesPath}}.") && p.contains("under about 2000 tokens"));
        assert!(p.contains("<current_notes_content>\n{{currentNotes}}\n</current_notes_content>"));
    }

    #[test]
    fn overrides_and_reminders() {
        let home = mneme_testsupport::TestHome::new();
        let env = &home.env;
        assert_eq!(load_template(env), DEFAULT_TEMPLATE);
        let big = format!("# A\n_a_\n{}\n# B\n_b_\n{}\n", "w".repeat(8_100), "v".repeat(40_000));
        let p = build_update_prompt(env, &big, Path::new("/n/summary.md"));
        assert!(p.starts_with("Note: this message is an instruction"));
        assert!(p.contains("You already have the notes file, /n/summary.md."));
        let tail = &p[p.find("\n\nThe notes are too long").unwrap()..];
        assert_eq!(
            tail,
            format!(
                "\n\nThe notes are too long: about {} tokens, over the limit of 12000. Shorten them to fit: cut minor details from the longest sections, merge items that belong together, and sum up older entries. Keep \"Current State\" and \"Errors & Corrections\" accurate and complete.\n\nSections to shorten first:\n- \"# B\" is ~10001 tokens (limit: 2000)\n- \"# A\" is ~2026 tokens (limit: 2000)",
                estimate_tokens(&big)
            )
        );
        let small = "# A\n_a_\nfine\n";
        assert!(!build_update_prompt(env, small, Path::new("/n")).contains("The notes are too long"));
        let one_big = format!("# A\n{}\n", "w".repeat(8_100));
        assert!(build_update_prompt(env, &one_big, Path::new("/n"))
            .ends_with("\n\nThese sections are over the limit for one section; shorten them:\n- \"# A\" is ~2025 tokens (limit: 2000)"));

        std::fs::create_dir_all(config_dir(env)).unwrap();
        std::fs::write(config_dir(env).join("template.md"), "# Mine\n").unwrap();
        std::fs::write(config_dir(env).join("prompt.md"), "Notes at {{notesPath}}:\n{{currentNotes}}\n{{unknown}}").unwrap();
        assert_eq!(load_template(env), "# Mine\n");
        assert_eq!(build_update_prompt(env, "N {{notesPath}}", Path::new("/x.md")), "Notes at /x.md:\nN {{notesPath}}\n{{unknown}}");
        assert!(is_empty(env, "\n# Mine\n\n"));
    }

    #[cfg(unix)]
    #[test]
    fn the_file_is_created_private_with_the_template_once() {
        use std::os::unix::fs::PermissionsExt;
        let home = mneme_testsupport::TestHome::new();
        let cwd = home.root.join("proj");
        let sid = "0a23833b-7439-4af7-b274-46564fd6c262";
        let path = mneme_store::paths::session_memory_path(&home.env, &cwd, sid).unwrap();
        assert!(path.ends_with(format!("{sid}/session-memory/summary.md")));
        assert_eq!(setup_file(&home.env, &path).unwrap(), DEFAULT_TEMPLATE);
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(path.parent().unwrap()), 0o700);
        std::fs::write(&path, "edited").unwrap();
        assert_eq!(setup_file(&home.env, &path).unwrap(), "edited", "an existing file is never replaced");
    }

    /// Notes far past what notes hold (a file planted or grown by another program) are not
    /// read into memory and the prompt: refused, naming the file and what to do.
    #[test]
    fn oversized_notes_are_refused_with_the_file_and_what_to_do() {
        let home = mneme_testsupport::TestHome::new();
        let sid = "0a23833b-7439-4af7-b274-46564fd6c262";
        let path = mneme_store::paths::session_memory_path(&home.env, &home.root.join("proj"), sid).unwrap();
        assert_eq!(setup_file(&home.env, &path).unwrap(), DEFAULT_TEMPLATE);
        // Sparse, so no disk is used (one byte over is enough: any size past it is refused alike).
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(MAX_NOTES_BYTES + 1).unwrap();
        let err = setup_file(&home.env, &path).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::FileTooLarge);
        let text = err.to_string();
        assert!(text.contains(&path.display().to_string()) && text.contains("larger than 1 MiB") && text.contains("move the file aside or delete it"), "{text}");
        // At the cap it is still read.
        std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(MAX_NOTES_BYTES).unwrap();
        assert_eq!(setup_file(&home.env, &path).unwrap().len() as u64, MAX_NOTES_BYTES);
    }

    #[test]
    fn token_count_anchors_on_the_first_entry_of_the_last_response() {
        let m = vec![
            user("u1", 400),                               // 100 tokens, before the anchor
            assistant("a1", "m1", Some((1000, 50)), true), // split response, first entry
            conv(json!({"type": "user", "uuid": "r1", "message": {"content": [{"type": "tool_result", "tool_use_id": "ta1", "content": "y".repeat(80)}]}})),
            assistant("a2", "m1", Some((1000, 50)), true),
            user("u2", 40),
        ];
        // usage 1000 + 100 (cache) + 50, then r1 (20) + a2 (tool_use "Bash{...}") + u2 (10)
        let tool = estimate_tokens("Bash{\"command\":\"ls\"}") as u64;
        assert_eq!(token_count_with_estimation(&m), 1150 + 20 + tool + 10);
        assert_eq!(token_count_with_estimation(&m[..1]), 100);
        let synthetic = conv(json!({"type": "assistant", "uuid": "s", "message": {"model": "<synthetic>", "content": "", "usage": {"input_tokens": 99999, "output_tokens": 0}}}));
        assert_eq!(token_count_with_estimation(&[user("u", 4), synthetic]), 1);
    }

    #[test]
    fn thresholds() {
        let mut s = SessionMemoryState::default();
        // 9,999 tokens of context: below the init threshold.
        let mut m = vec![user("u1", 4 * 9_998), assistant("a1", "m1", None, false)];
        assert_eq!(token_count_with_estimation(&m), 9_999);
        assert!(!s.should_extract(&m));
        assert!(!s.initialized);
        // 10,000: initialized and (no previous extraction, natural break) extracted.
        m[0] = user("u1", 4 * 9_999);
        assert!(s.should_extract(&m));
        assert_eq!(s.last_memory_message_uuid.as_deref(), Some("a1"));
        s.record_extraction(&m);
        assert_eq!((s.tokens_at_last_extraction, s.last_summarized_message_id.as_deref()), (10_000, Some("a1")));

        // 4,999 more tokens: not enough growth.
        m.push(user("u2", 4 * 4_998));
        m.push(assistant("a2", "m2", None, false));
        assert!(!s.should_extract(&m));
        // 5,000 more and a natural break (no tool calls in the last assistant turn).
        m.push(user("u3", 4));
        m.push(assistant("a3", "m3", None, false));
        assert!(s.should_extract(&m));
        s.record_extraction(&m);

        // Enough tokens but the last turn called a tool and fewer than 3 calls since: wait.
        m.push(user("u4", 4 * 5_000));
        m.push(assistant("a4", "m4", None, true));
        m.push(assistant("a5", "m5", None, true));
        assert!(!s.should_extract(&m));
        // A third tool call: extract even mid-loop.
        m.push(assistant("a6", "m6", None, true));
        assert!(s.should_extract(&m));
        s.record_extraction(&m);
        assert_eq!(s.last_summarized_message_id.as_deref(), Some("a3"), "never mid tool call");

        // Tool calls alone never suffice without the token growth.
        for i in 0..5 {
            m.push(assistant(&format!("t{i}"), &format!("tm{i}"), None, true));
        }
        assert!(!s.should_extract(&m));
    }
}
