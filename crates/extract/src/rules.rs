//! When extraction runs: Claude Code 2.1.197's scheduling rules (`initExtractMemories`), as
//! plain synchronous state so that every rule is tested deterministically.
//!
//! Claude Code keeps this state in a closure per session. At the end of every complete query
//! loop on the main thread it calls the extractor with the conversation so far:
//!
//! 1. A run already in progress: the context is stashed (the newest stash wins) and the call
//!    returns. When the run finishes, ONE trailing run starts with the stashed context, skipping
//!    the every-N throttle — but only while the throttle is at its default of every turn.
//! 2. The main agent itself wrote memory (an `Edit`/`Write` `tool_use` whose `file_path` lies in
//!    the auto-memory folder) since the cursor: skipped, and the cursor moves to the newest
//!    message, because those messages are already handled.
//! 3. No user prose since the cursor (no non-meta user message with at least three words):
//!    skipped, cursor moved to the newest message.
//! 4. The every-N throttle (`tengu_bramble_lintel`, default 1): a non-trailing call counts a
//!    turn and returns until the count reaches N; a run resets it.
//! 5. The run. Only a successful run moves the cursor (to the newest message of the context it
//!    ran on); after an error the same messages are offered again next time.
//!
//! [`ExtractionState`] is that closure. [`ExtractionState::turn_ended`] answers with a
//! [`TurnDecision`]; for [`TurnDecision::Run`] the caller runs the extraction and reports back
//! with [`ExtractionState::run_finished`], which may hand out the trailing run. A caller with a
//! synchronous runner can use [`ExtractionState::handle_turn_end`], which does both.

use crate::transcript::{Conversation, EntryType};
use mneme_store::paths::AutoMemDir;
use std::path::Path;
use serde::{Deserialize, Serialize};

/// Claude Code's default for `tengu_bramble_lintel`: extract after every eligible turn.
pub const DEFAULT_EVERY_N_TURNS: u32 = 1;
/// A user message needs this many words to count as prose (`oLl`).
pub const MIN_PROSE_WORDS: usize = 3;
/// The extraction agent's turn budget (`maxTurns`).
pub const MAX_TURNS: u32 = 5;

/// What `messages` means here: the main thread's current conversation (see
/// [`crate::transcript::conversation`]).
pub type Messages = Vec<Conversation>;

/// `uuid` of each message after `cursor`, or all of them when there is no cursor or it is gone.
fn after_cursor<'a>(messages: &'a [Conversation], cursor: Option<&str>) -> Option<&'a [Conversation]> {
    match cursor {
        None => Some(messages),
        Some(c) => messages.iter().position(|m| m.uuid == c).map(|i| &messages[i + 1..]),
    }
}

/// `newMessageCount`: user and assistant messages after the cursor; all of them when there is
/// no cursor or the cursor's message is gone (compaction).
pub fn new_message_count(messages: &[Conversation], cursor: Option<&str>) -> usize {
    let counted = after_cursor(messages, cursor).unwrap_or(messages);
    counted.iter().filter(|m| matches!(m.entry_type, EntryType::User | EntryType::Assistant)).count()
}

/// `hasMemoryWritesSince`: an assistant message after the cursor (all, without a cursor) has an
/// `Edit` or `Write` `tool_use` whose string `file_path` lies in the auto-memory folder. A cursor
/// that is no longer present gives `false`.
pub fn has_memory_writes_since(messages: &[Conversation], cursor: Option<&str>, memory_dir: &AutoMemDir) -> bool {
    let Some(since) = after_cursor(messages, cursor) else { return false };
    since.iter().filter(|m| m.entry_type == EntryType::Assistant).any(|m| {
        m.tool_uses().any(|t| {
            matches!(t.name, "Edit" | "Write") && t.file_path().is_some_and(|p| memory_dir.contains(std::path::Path::new(p)))
        })
    })
}

fn word_count(s: &str) -> usize {
    // JavaScript's `split(/\s+/).filter(Boolean)`.
    s.split(|c: char| c.is_whitespace() || c == '\u{feff}').filter(|w| !w.is_empty()).count()
}

/// A non-meta user message with at least [`MIN_PROSE_WORDS`] words in its string content or in
/// one of its text blocks.
pub fn is_user_prose(m: &Conversation) -> bool {
    if m.entry_type != EntryType::User || m.is_meta {
        return false;
    }
    let Some(msg) = &m.message else { return false };
    match &msg.content {
        crate::transcript::Content::Text(s) => word_count(s) >= MIN_PROSE_WORDS,
        crate::transcript::Content::Blocks(blocks) => blocks
            .iter()
            .any(|b| matches!(b, crate::transcript::Block::Text { text } if word_count(text) >= MIN_PROSE_WORDS)),
    }
}

/// Whether a user wrote prose after the cursor; with a cursor that is gone, anywhere.
pub fn has_user_prose_since(messages: &[Conversation], cursor: Option<&str>) -> bool {
    after_cursor(messages, cursor).unwrap_or(messages).iter().any(is_user_prose)
}

/// How the file of a claude.ai chat's text that Claude Code saved in a session's
/// `tool-results` folder is named: `artifact-chat.` and the rest.
pub const SAVED_CHAT_PREFIX: &str = "artifact-chat.";

/// Whether `path` names a claude.ai chat's text that Claude Code saved (2.1.337's test, which
/// compares lowercased paths with `\` read as `/`): it holds `/tool-results/artifact-chat.`,
/// no `/artifact-files/`, and the config home's `projects` folder (`projects_dir`) anywhere.
pub fn is_saved_chat(path: &str, projects_dir: &Path) -> bool {
    let fold = |p: &str| p.to_lowercase().replace('\\', "/");
    let path = fold(path);
    path.contains(&format!("/tool-results/{SAVED_CHAT_PREFIX}"))
        && !path.contains("/artifact-files/")
        && path.contains(&fold(&projects_dir.to_string_lossy()))
}

/// How many bytes the first line of the frame 2.1.337 puts around a saved copy of a claude.ai
/// chat has (the sentence before the `<artifact-file-content>` tag). The line is known here by
/// its length and SHA-256 only: Mneme needs to recognise it, not to hold Claude Code's prose.
const CHAT_FRAME_LEAD_BYTES: usize = 211;
const CHAT_FRAME_LEAD_SHA256: [u8; 32] = [
    0xd9, 0x00, 0xa3, 0xb2, 0x85, 0xbb, 0x9d, 0x13, 0x63, 0x26, 0xdd, 0x50, 0x0a, 0x39, 0xd6, 0xfc, 0x96, 0x2d, 0xb9, 0xcd, 0x89, 0x4a,
    0x48, 0xb7, 0x03, 0x2b, 0x3f, 0xf5, 0xb5, 0x11, 0xd0, 0x4f,
];

/// Whether a `Read`'s result is a saved copy Claude Code framed as a claude.ai chat: one of its
/// lines starts with the chat frame's first line. 2.1.337 frames a copy so when its own record
/// of the copy says it holds a chat, whatever the file is called (a copy it saved under another
/// name), and puts the frame into the result the transcript keeps; the path test
/// ([`is_saved_chat`]) does not see such a copy.
pub fn framed_as_chat(text: &str) -> bool {
    a_line_starts_with(text, CHAT_FRAME_LEAD_BYTES, &CHAT_FRAME_LEAD_SHA256)
}

/// Whether a line of `text` (its start, or after a `\n`) starts with `len` bytes whose SHA-256
/// is `sha256`.
fn a_line_starts_with(text: &str, len: usize, sha256: &[u8; 32]) -> bool {
    use sha2::{Digest, Sha256};
    let lines = std::iter::once(text).chain(text.match_indices('\n').map(|(i, _)| &text[i + 1..]));
    lines.filter_map(|line| line.as_bytes().get(..len)).any(|lead| Sha256::digest(lead)[..] == sha256[..])
}

/// The first saved claude.ai chat a `Read` in `messages` read, in the session `env` (its config
/// home's `projects` folder; `~/` is its home): a `tool_use` whose result came back without an
/// error, and whose `file_path` names a saved chat ([`is_saved_chat`]) or whose result is a copy
/// framed as one ([`framed_as_chat`]). Claude Code marks the session when such a read succeeds;
/// a refused or failed one reads nothing. `messages` may be a sub-agent's: its reads mark the
/// session that started it (2.1.337 keeps the mark for the whole process).
pub fn saved_chat_read(messages: &[Conversation], env: &mneme_store::Environment) -> Option<String> {
    saved_chat_read_by(messages, env, framed_as_chat)
}

/// [`saved_chat_read`] with `framed` telling a chat's frame.
fn saved_chat_read_by(messages: &[Conversation], env: &mneme_store::Environment, framed: impl Fn(&str) -> bool) -> Option<String> {
    use crate::transcript::{Block, Content, Message};
    let results: std::collections::HashMap<&str, (bool, &str)> = messages
        .iter()
        .filter(|m| m.entry_type == EntryType::User)
        .flat_map(|m| match &m.message {
            Some(Message { content: Content::Blocks(b), .. }) => b.as_slice(),
            _ => &[],
        })
        .filter_map(|b| match b {
            Block::ToolResult { tool_use_id, content, is_error } => Some((tool_use_id.as_str(), (*is_error, content.text.head.as_str()))),
            _ => None,
        })
        .collect();
    let projects_dir = env.projects_dir();
    messages.iter().flat_map(|m| m.tool_uses()).find_map(|t| {
        let (false, text) = results.get(t.id).copied().filter(|_| t.name == "Read")? else { return None };
        let path = env.expand_tilde(t.file_path()?).to_string_lossy().into_owned();
        (is_saved_chat(&path, &projects_dir) || framed(text)).then_some(path)
    })
}

/// A run to make.
#[derive(Debug, Clone, PartialEq)]
pub struct RunPlan {
    /// The context to extract from.
    pub messages: Messages,
    /// `newMessageCount` (the `~N` of the prompt).
    pub new_message_count: usize,
    /// A trailing run for a context stashed while the previous run was going.
    pub trailing: bool,
    /// Where the cursor moves if the run succeeds (the newest message's uuid).
    pub advance_to: Option<String>,
}

/// Why a turn end did not start a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum SkipReason {
    /// The main agent already wrote memory since the cursor (cursor advanced).
    DirectWrite,
    /// No user prose since the cursor (cursor advanced).
    NoProse,
    /// The every-N throttle: `turns` of `every` counted so far.
    Throttled,
    /// A run is in progress; the context was stashed for the trailing run.
    Stashed,
}

/// What to do about a turn end.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnDecision {
    Run(RunPlan),
    Skip(SkipReason),
}

/// The state Claude Code keeps per session, serializable so Mneme can resume after a restart.
/// A field missing from the file (an older or partial one) takes its default: no cursor reads
/// the session from its start and a zero count restarts the throttle, where an error would
/// stop the session's extraction for good.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Persisted {
    /// `lastMemoryMessageUuid`.
    pub cursor: Option<String>,
    /// `turnsSinceLastExtraction`.
    pub turns_since_last: u32,
    /// The session read a saved claude.ai chat, so a release that stops saving memory after
    /// one (`Profile::memory_off_after_chat_read`) extracts nothing more from it. Kept, since
    /// the read may later leave the messages Mneme holds (a compaction, a long session).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub read_saved_chat: bool,
    /// Fields a newer Mneme wrote, kept when this build saves the state.
    #[serde(flatten, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: mneme_core::own_files::Unknown,
}

/// One session's extraction state.
#[derive(Debug, Clone)]
pub struct ExtractionState {
    memory_dir: AutoMemDir,
    every_n_turns: u32,
    persisted: Persisted,
    in_progress: bool,
    pending: Option<Messages>,
    /// The cursor's message is older than every message given (Mneme let it go to bound what a
    /// run holds): the messages are all new, not "the cursor is gone".
    cursor_before_all: bool,
}

impl ExtractionState {
    /// Fresh state for a session writing memory to `memory_dir`, extracting every
    /// `every_n_turns` eligible turns (Claude Code: [`DEFAULT_EVERY_N_TURNS`]).
    pub fn new(memory_dir: AutoMemDir, every_n_turns: u32) -> ExtractionState {
        ExtractionState::resume(memory_dir, every_n_turns, Persisted::default())
    }

    /// State restored from [`persisted`](Self::persisted).
    pub fn resume(memory_dir: AutoMemDir, every_n_turns: u32, persisted: Persisted) -> ExtractionState {
        ExtractionState { memory_dir, every_n_turns, persisted, in_progress: false, pending: None, cursor_before_all: false }
    }

    pub fn persisted(&self) -> &Persisted {
        &self.persisted
    }

    /// Takes `persisted` as this session's state: another process (a manual extraction while
    /// a scheduler follows the session) ran since this state was loaded and saved its own.
    pub fn adopt(&mut self, persisted: Persisted) {
        self.persisted = persisted;
    }

    pub fn cursor(&self) -> Option<&str> {
        self.persisted.cursor.as_deref()
    }

    /// Whether the session is known to have read a saved claude.ai chat ([`saved_chat_read`]).
    pub fn read_saved_chat(&self) -> bool {
        self.persisted.read_saved_chat
    }

    /// The session read a saved claude.ai chat: for a release that stops saving memory then,
    /// it stays so for the rest of the session.
    pub fn mark_read_saved_chat(&mut self) {
        self.persisted.read_saved_chat = true;
    }

    /// Whether the cursor's message comes before every message the next decisions are given
    /// (it was let go to bound what is held, see [`crate::transcript::Window`]): they are then
    /// read as with no cursor. Claude Code's rule for a cursor that is not among the messages
    /// (gone with a compaction) ignores the session's own memory writes; one merely left
    /// unread must not.
    pub fn set_cursor_before_all(&mut self, before_all: bool) {
        self.cursor_before_all = before_all;
    }

    pub fn in_progress(&self) -> bool {
        self.in_progress
    }

    /// Whether a context is waiting for the trailing run.
    pub fn has_pending(&self) -> bool {
        self.pending.is_some()
    }

    /// A complete query loop ended on the main thread with `messages` as the conversation.
    pub fn turn_ended(&mut self, messages: Messages) -> TurnDecision {
        if self.in_progress {
            self.pending = Some(messages);
            return TurnDecision::Skip(SkipReason::Stashed);
        }
        self.consider(messages, false)
    }

    /// Like [`turn_ended`](Self::turn_ended) for a run the user asked for: the skip rules apply
    /// but not the every-N throttle (as for a trailing run).
    pub fn requested(&mut self, messages: Messages) -> TurnDecision {
        if self.in_progress {
            self.pending = Some(messages);
            return TurnDecision::Skip(SkipReason::Stashed);
        }
        self.consider(messages, true)
    }

    fn consider(&mut self, messages: Messages, trailing: bool) -> TurnDecision {
        let cursor = self.persisted.cursor.as_deref().filter(|_| !self.cursor_before_all);
        let count = new_message_count(&messages, cursor);
        let newest = messages.last().map(|m| m.uuid.clone());
        if has_memory_writes_since(&messages, cursor, &self.memory_dir) {
            if newest.is_some() {
                self.persisted.cursor = newest;
            }
            return TurnDecision::Skip(SkipReason::DirectWrite);
        }
        if !has_user_prose_since(&messages, cursor) {
            if newest.is_some() {
                self.persisted.cursor = newest;
            }
            return TurnDecision::Skip(SkipReason::NoProse);
        }
        if !trailing {
            self.persisted.turns_since_last += 1;
            if self.persisted.turns_since_last < self.every_n_turns {
                return TurnDecision::Skip(SkipReason::Throttled);
            }
        }
        self.persisted.turns_since_last = 0;
        self.in_progress = true;
        TurnDecision::Run(RunPlan { messages, new_message_count: count, trailing, advance_to: newest })
    }

    /// The run for `plan` ended. On success the cursor moves to the plan's newest message. Then
    /// the stashed context, if any, is taken: with the throttle at every turn it becomes the
    /// trailing run returned here (itself subject to the skip rules); otherwise it is dropped.
    pub fn run_finished(&mut self, plan: &RunPlan, succeeded: bool) -> Option<TurnDecision> {
        if succeeded && plan.advance_to.is_some() {
            self.persisted.cursor = plan.advance_to.clone();
        }
        self.in_progress = false;
        let pending = self.pending.take()?;
        (self.every_n_turns <= 1).then(|| self.consider(pending, true))
    }

    /// [`turn_ended`](Self::turn_ended) with a synchronous `runner`, including any trailing
    /// runs. Returns every decision in order.
    pub fn handle_turn_end<E>(
        &mut self,
        messages: Messages,
        runner: &mut dyn FnMut(&RunPlan) -> Result<(), E>,
    ) -> Vec<(TurnDecision, Option<Result<(), E>>)> {
        let mut out = Vec::new();
        let mut next = Some(self.turn_ended(messages));
        while let Some(decision) = next.take() {
            match &decision {
                TurnDecision::Run(plan) => {
                    let result = runner(plan);
                    next = self.run_finished(plan, result.is_ok());
                    out.push((decision, Some(result)));
                }
                TurnDecision::Skip(_) => out.push((decision, None)),
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transcript::parse_entry;
    use mneme_store::paths::AutoMemSource;
    use serde_json::json;
    use std::path::PathBuf;

    fn memdir() -> AutoMemDir {
        AutoMemDir { dir: PathBuf::from("/h/.claude/projects/-r/memory"), source: AutoMemSource::Default }
    }

    fn msg(v: serde_json::Value) -> Conversation {
        match parse_entry(v) {
            crate::transcript::Entry::Conversation(c) => *c,
            other => panic!("{other:?}"),
        }
    }

    fn user(uuid: &str, text: &str) -> Conversation {
        msg(json!({"type": "user", "uuid": uuid, "message": {"role": "user", "content": text}}))
    }

    fn assistant(uuid: &str) -> Conversation {
        msg(json!({"type": "assistant", "uuid": uuid, "message": {"content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn"}}))
    }

    fn writes(uuid: &str, tool: &str, path: &str) -> Conversation {
        msg(json!({"type": "assistant", "uuid": uuid, "message": {"content": [
            {"type": "tool_use", "id": format!("t-{uuid}"), "name": tool, "input": {"file_path": path, "content": "x"}}]}}))
    }

    fn ok_runner() -> impl FnMut(&RunPlan) -> Result<(), ()> {
        |_| Ok(())
    }

    #[test]
    fn a_cursor_let_go_reads_every_message_as_new_memory_writes_included() {
        let m = vec![user("u1", "please fix the build now"), writes("a1", "Write", "/h/.claude/projects/-r/memory/x.md")];
        let gone = Persisted { cursor: Some("gone".into()), turns_since_last: 0, ..Persisted::default() };
        let mut s = ExtractionState::resume(memdir(), 1, gone.clone());
        assert!(matches!(s.turn_ended(m.clone()), TurnDecision::Run(_)), "gone with a compaction: Claude Code ignores the writes");
        let mut s = ExtractionState::resume(memdir(), 1, gone);
        s.set_cursor_before_all(true);
        assert_eq!(s.turn_ended(m), TurnDecision::Skip(SkipReason::DirectWrite));
        assert_eq!(s.cursor(), Some("a1"));
    }

    fn read_of(uuid: &str, id: &str, path: &str) -> Conversation {
        msg(json!({"type": "assistant", "uuid": uuid, "message": {"content": [
            {"type": "tool_use", "id": id, "name": "Read", "input": {"file_path": path}}]}}))
    }

    fn result_of(uuid: &str, id: &str, is_error: bool) -> Conversation {
        msg(json!({"type": "user", "uuid": uuid, "message": {"content": [
            {"type": "tool_result", "tool_use_id": id, "content": "text", "is_error": is_error}]}}))
    }

    /// 2.1.337's test for a claude.ai chat's saved text, path by path: lowercased, `\` read as
    /// `/`, the config home's `projects` folder anywhere in it.
    #[test]
    fn a_saved_chat_is_told_by_its_folder_and_name() {
        let projects = Path::new("/h/.claude/projects");
        for (path, saved) in [
            ("/h/.claude/projects/-r/0a23833b/tool-results/artifact-chat.abc.txt", true),
            ("/H/.Claude/Projects/-r/s/Tool-Results/Artifact-Chat.ABC", true),
            ("C:\\x/h/.claude/projects\\-r\\s\\tool-results\\artifact-chat.1", true),
            ("/h/.claude/projects-old/-r/s/tool-results/artifact-chat.1", true),
            ("/h/.claude/projects/-r/s/tool-results/artifact-files/artifact-chat.1", false),
            ("/h/.claude/projects/-r/s/tool-results/chat.1", false),
            ("/h/.claude/projects/-r/s/tool-results/artifact-chat", false),
            ("/elsewhere/s/tool-results/artifact-chat.1", false),
        ] {
            assert_eq!(is_saved_chat(path, projects), saved, "{path}");
        }
    }

    /// Only a Read that came back without an error counts, whichever turn it was in.
    #[test]
    fn a_saved_chat_counts_once_its_read_succeeded() {
        let env = mneme_store::Environment::with_home("/h");
        let chat = "/h/.claude/projects/-r/s/tool-results/artifact-chat.abc.txt";
        let read = |is_error: Option<bool>| {
            let mut m = vec![user("u1", "what did we say in that chat"), read_of("a1", "t1", chat)];
            m.extend(is_error.map(|e| result_of("r1", "t1", e)));
            m.push(assistant("a2"));
            m
        };
        assert_eq!(saved_chat_read(&read(Some(false)), &env).as_deref(), Some(chat));
        assert_eq!(saved_chat_read(&read(Some(true)), &env), None, "refused: nothing was read");
        assert_eq!(saved_chat_read(&read(None), &env), None, "no result yet");
        let home = vec![read_of("a1", "t1", "~/.claude/projects/-r/s/tool-results/artifact-chat.x"), result_of("r1", "t1", false)];
        assert_eq!(saved_chat_read(&home, &env).as_deref(), Some("/h/.claude/projects/-r/s/tool-results/artifact-chat.x"));
        let other = vec![read_of("a1", "t1", "/h/notes/artifact-chat.x"), result_of("r1", "t1", false)];
        assert_eq!(saved_chat_read(&other, &env), None);
        let moved = mneme_store::Environment::with_home("/h").set_var("CLAUDE_CONFIG_DIR", "/cfg");
        assert_eq!(saved_chat_read(&read(Some(false)), &moved), None, "the session's own config home");
    }

    /// A copy framed as a chat is told by a line of its result that starts with the frame's
    /// first line, wherever the file is and whatever it is called; a refused Read reads nothing.
    /// (The frame's own words are not kept here: a made-up first line stands in for them.)
    #[test]
    fn a_copy_framed_as_a_chat_is_told_by_its_first_line() {
        use sha2::{Digest, Sha256};
        let lead = "A made-up first line of a frame:";
        let sha: [u8; 32] = Sha256::digest(lead.as_bytes()).into();
        let starts = |t: &str| a_line_starts_with(t, lead.len(), &sha);
        assert!(starts(&format!("{lead}\n<artifact-file-content>\n1\tchat")));
        assert!(starts(&format!("a note first\n{lead}\n<tag>")), "a later line");
        assert!(starts(lead) && starts(&format!("{lead} and more")));
        assert!(!starts(&format!(" {lead}")) && !starts(&format!("x{lead}")), "not at a line's start");
        assert!(!starts(&lead[..lead.len() - 1]) && !starts("") && !starts("é\n"));
        // The real frame's first line is 211 bytes long: shorter results are never framed.
        assert!(!framed_as_chat("1\tchat text") && !framed_as_chat(&"x".repeat(300)));

        // A Read of a framed copy anywhere counts once it succeeded; the same file unframed,
        // or the Read refused, does not.
        let env = mneme_store::Environment::with_home("/h");
        let copy = "/tmp/elsewhere/notes.txt";
        let read = |text: &str, is_error: bool| {
            vec![read_of("a1", "t1", copy), msg(json!({"type": "user", "uuid": "r1", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "t1", "content": text, "is_error": is_error}]}}))]
        };
        let framed = format!("{lead}\n<artifact-file-content>\n1\tchat\n</artifact-file-content>");
        assert_eq!(saved_chat_read_by(&read(&framed, false), &env, starts).as_deref(), Some(copy));
        assert_eq!(saved_chat_read_by(&read("1\tchat", false), &env, starts), None);
        assert_eq!(saved_chat_read_by(&read(&framed, true), &env, starts), None);
    }

    #[test]
    fn counts_and_prose() {
        let m = vec![
            user("u1", "please remember this"),
            assistant("a1"),
            msg(json!({"type": "attachment", "uuid": "x1"})),
            user("u2", "two words"),
            msg(json!({"type": "user", "uuid": "u3", "isMeta": true, "message": {"content": "meta message with words"}})),
            assistant("a2"),
        ];
        assert_eq!(new_message_count(&m, None), 5);
        assert_eq!(new_message_count(&m, Some("a1")), 3);
        assert_eq!(new_message_count(&m, Some("gone")), 5);
        assert!(has_user_prose_since(&m, None));
        assert!(!has_user_prose_since(&m, Some("a1")), "two words and a meta message are not prose");
        assert!(has_user_prose_since(&m, Some("gone")), "a lost cursor looks at everything");
        let blocks = msg(json!({"type": "user", "uuid": "b", "message": {"content": [
            {"type": "tool_result", "tool_use_id": "t", "content": "a long tool result text"},
            {"type": "text", "text": "  three\twords\nhere "}]}}));
        assert!(is_user_prose(&blocks));
    }

    #[test]
    fn direct_memory_writes_are_detected_inside_the_folder_only() {
        let d = memdir();
        let inside = "/h/.claude/projects/-r/memory/user_prefs.md";
        for (tool, path, hit) in [
            ("Write", inside, true),
            ("Edit", "/h/.claude/projects/-r/memory/sub/../x.txt", true),
            ("Write", "/h/.claude/projects/-r/memory-old/x.md", false),
            ("Write", "/h/.claude/projects/-r/x.md", false),
            ("Read", inside, false),
            ("NotebookEdit", inside, false),
        ] {
            let m = vec![user("u", "hello there friend"), writes("a", tool, path)];
            assert_eq!(has_memory_writes_since(&m, None, &d), hit, "{tool} {path}");
        }
        let m = vec![writes("a0", "Write", inside), user("u", "hello there friend"), assistant("a1")];
        assert!(!has_memory_writes_since(&m, Some("u"), &d), "before the cursor");
        assert!(!has_memory_writes_since(&m, Some("gone"), &d), "a lost cursor finds nothing");
    }

    #[test]
    fn a_direct_write_skips_and_moves_the_cursor() {
        let mut s = ExtractionState::new(memdir(), 1);
        let m = vec![user("u1", "remember that I like tabs"), writes("a1", "Write", "/h/.claude/projects/-r/memory/t.md"), assistant("a2")];
        let mut runs = 0;
        let d = s.handle_turn_end(m.clone(), &mut |_: &RunPlan| -> Result<(), ()> {
            runs += 1;
            Ok(())
        });
        assert_eq!(d[0].0, TurnDecision::Skip(SkipReason::DirectWrite));
        assert_eq!((runs, s.cursor()), (0, Some("a2")));
        // The next turn starts from there.
        let mut m2 = m;
        m2.extend([user("u2", "from now on use spaces"), assistant("a3")]);
        let TurnDecision::Run(plan) = s.turn_ended(m2) else { panic!() };
        assert_eq!(plan.new_message_count, 2);
        assert_eq!(plan.advance_to.as_deref(), Some("a3"));
    }

    #[test]
    fn no_prose_skips_and_moves_the_cursor() {
        let mut s = ExtractionState::new(memdir(), 1);
        let d = s.turn_ended(vec![user("u1", "ok thanks"), assistant("a1")]);
        assert_eq!(d, TurnDecision::Skip(SkipReason::NoProse));
        assert_eq!(s.cursor(), Some("a1"));
        assert_eq!(s.persisted().turns_since_last, 0, "skips do not count toward the throttle");
    }

    #[test]
    fn every_n_turns_throttles_non_trailing_calls() {
        let mut s = ExtractionState::new(memdir(), 3);
        let mut m = Vec::new();
        let mut decisions = Vec::new();
        for i in 0..7 {
            m.extend([user(&format!("u{i}"), "please remember this fact"), assistant(&format!("a{i}"))]);
            for (d, _) in s.handle_turn_end(m.clone(), &mut ok_runner()) {
                decisions.push(matches!(d, TurnDecision::Run(_)));
            }
        }
        assert_eq!(decisions, [false, false, true, false, false, true, false]);
        assert_eq!(s.cursor(), Some("a5"));
        assert_eq!(s.persisted().turns_since_last, 1);
    }

    #[test]
    fn overlap_stashes_the_newest_context_for_one_trailing_run() {
        let mut s = ExtractionState::new(memdir(), 1);
        let mut m = vec![user("u1", "remember I use tabs"), assistant("a1")];
        let TurnDecision::Run(first) = s.turn_ended(m.clone()) else { panic!() };
        assert!(s.in_progress());
        m.extend([user("u2", "also remember the deploy day"), assistant("a2")]);
        assert_eq!(s.turn_ended(m.clone()), TurnDecision::Skip(SkipReason::Stashed));
        m.extend([user("u3", "and never use semicolons"), assistant("a3")]);
        assert_eq!(s.turn_ended(m.clone()), TurnDecision::Skip(SkipReason::Stashed));
        let Some(TurnDecision::Run(trailing)) = s.run_finished(&first, true) else { panic!() };
        assert!(trailing.trailing);
        assert_eq!(trailing.messages.len(), 6, "the newest stash wins");
        assert_eq!(trailing.new_message_count, 4, "counted from the cursor the first run set");
        assert_eq!(s.run_finished(&trailing, true), None, "one trailing run only");
        assert_eq!(s.cursor(), Some("a3"));
        assert!(!s.in_progress());
    }

    #[test]
    fn trailing_runs_skip_the_throttle_but_only_at_every_turn() {
        // With N = 1 the trailing run starts even though nothing was counted for it.
        let mut s = ExtractionState::new(memdir(), 1);
        let m = vec![user("u1", "remember I use tabs"), assistant("a1")];
        let TurnDecision::Run(first) = s.turn_ended(m.clone()) else { panic!() };
        let mut m2 = m.clone();
        m2.extend([user("u2", "remember the deploy day"), assistant("a2")]);
        s.turn_ended(m2);
        assert!(matches!(s.run_finished(&first, true), Some(TurnDecision::Run(RunPlan { trailing: true, .. }))));

        // With N > 1 the stash is dropped.
        let mut s = ExtractionState::resume(memdir(), 2, Persisted { cursor: None, turns_since_last: 1, ..Persisted::default() });
        let TurnDecision::Run(first) = s.turn_ended(m.clone()) else { panic!() };
        let mut m2 = m;
        m2.extend([user("u2", "remember the deploy day"), assistant("a2")]);
        assert_eq!(s.turn_ended(m2), TurnDecision::Skip(SkipReason::Stashed));
        assert_eq!(s.run_finished(&first, true), None);
        assert!(!s.has_pending());
    }

    #[test]
    fn a_failed_run_keeps_the_cursor_so_the_messages_are_retried() {
        let mut s = ExtractionState::new(memdir(), 1);
        let m = vec![user("u1", "remember I use tabs"), assistant("a1")];
        let out = s.handle_turn_end(m.clone(), &mut |_: &RunPlan| Err("model down"));
        assert!(matches!(out[0].1, Some(Err("model down"))));
        assert_eq!(s.cursor(), None);
        let mut m2 = m;
        m2.extend([user("u2", "and the deploy day"), assistant("a2")]);
        let TurnDecision::Run(plan) = s.turn_ended(m2) else { panic!() };
        assert_eq!(plan.new_message_count, 4, "the failed turn's messages are offered again");
    }

    #[test]
    fn a_trailing_run_still_obeys_the_skip_rules() {
        let mut s = ExtractionState::new(memdir(), 1);
        let m = vec![user("u1", "remember I use tabs"), assistant("a1")];
        let TurnDecision::Run(first) = s.turn_ended(m.clone()) else { panic!() };
        let mut m2 = m;
        m2.extend([user("u2", "save it yourself please"), writes("a2", "Write", "/h/.claude/projects/-r/memory/x.md")]);
        s.turn_ended(m2);
        assert_eq!(s.run_finished(&first, true), Some(TurnDecision::Skip(SkipReason::DirectWrite)));
        assert_eq!(s.cursor(), Some("a2"));
    }
}
