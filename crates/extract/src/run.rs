//! Running extraction over a session's transcript: the glue between the transcript, Claude
//! Code's scheduling rules ([`crate::rules`]), the engine (the offline extractor, or a model
//! through Mneme's agent with Claude Code's prompt, policy and turn budget), the project's review
//! mode, and the run log.
//!
//! Two ways in:
//! - [`Extractor::extract_transcript`]: a run the user asked for, over one transcript from its
//!   cursor (the skip rules apply; the every-N throttle does not).
//! - [`Extractor::open_session`] + [`Session::poll`] + [`Extractor::on_turn_end`]: what the
//!   background scheduler does for a live session — tail the transcript, and at each turn end
//!   apply the rules exactly as Claude Code does, including the one trailing run for turns that
//!   end while a run is going.

use crate::data;
use crate::inbox::{Inbox, InboxError, NewItem};
use crate::offline;
use crate::prompt;
use crate::record::{self, memory_paths, LeftOut, ReviewMode, RunOutcome, RunRecord, Trigger};
use crate::rules::{ExtractionState, Messages, Persisted, RunPlan, TurnDecision, DEFAULT_EVERY_N_TURNS, MAX_TURNS};
use crate::session_memory::{self, SessionMemoryError, SessionMemoryState, Updated};
use crate::transcript::{self, Entry, TranscriptReader, Window};
use mneme_agent::{apply_changeset, AgentTask, Changeset, Mode, Policy, Stop};
use mneme_claudemd::LoadOptions;
use mneme_core::{Clock, Layer};
use mneme_model::{Cancel, Provider};
use mneme_store::memdir::Memdir;
use mneme_store::paths::{self, AutoMemDir};
use mneme_store::session::SessionMemory;
use mneme_store::{git, Environment};
use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A transcript being opened as a session: what was read, and the drives asked so far.
struct Opening {
    transcript: PathBuf,
    reader: TranscriptReader,
    held: Window,
    asked: HashMap<PathBuf, bool>,
}

/// Where opening a session stands.
enum OpenStep {
    /// Whether this folder's drive answers must be known first.
    Ask(PathBuf),
    /// The session's folder, and whether the transcript is stored under it.
    Ready(PathBuf, bool),
}

/// Who extracts.
#[derive(Clone, Copy)]
pub enum Engine<'a> {
    /// The offline extractor: explicit statements only, no model.
    Offline,
    /// A model, through Mneme's agent loop (or the Claude Code CLI's own).
    Model(&'a dyn Provider),
}

impl Engine<'_> {
    fn describe(&self) -> (String, Option<String>) {
        match self {
            Engine::Offline => ("offline".into(), None),
            Engine::Model(p) => {
                let kind = serde_json::to_value(p.kind()).ok().and_then(|v| v.as_str().map(str::to_string));
                (kind.unwrap_or_else(|| "model".into()), Some(p.model().to_string()))
            }
        }
    }
}

/// The project a session belongs to.
#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    /// The realpath'd folder the session ran in.
    pub root: PathBuf,
    pub memory_dir: AutoMemDir,
    /// Whether Claude Code's auto memory is on there; why not, when it is off.
    pub auto_memory: paths::AutoMemoryReason,
    /// The environment the session sees (after the settings files' `env` blocks), and the
    /// settings' `claudeMdExcludes`: what loading its CLAUDE.md files needs, resolved once.
    pub session_env: Environment,
    pub claude_md_excludes: Vec<String>,
    /// The `deny` and `ask` permission rules of the session's settings, which the memory agent
    /// obeys from 2.1.292 (`Profile::memory_agents_obey_permission_rules`).
    pub permission_rules: mneme_agent::PermissionRules,
    /// Claude Code ran there: the folder came from the user (the CLI, the app) or from a
    /// transcript stored under that project in Claude Code's own folder. A folder named only by
    /// a transcript from elsewhere is anyone's: the model's read-only `git` would run that
    /// repository's own config there (`core.fsmonitor`, filter and textconv drivers run
    /// commands), so its shell runs in the memory folder instead.
    pub trusted: bool,
}

/// Every way extraction fails before or around a run (a failing run itself is recorded as
/// [`RunOutcome::Failed`]).
#[derive(Debug, thiserror::Error)]
pub enum ExtractError {
    #[error("could not read the transcript {}: {source}", path.display())]
    Read { path: PathBuf, source: io::Error },
    /// With how many messages were let go to stay within `limit` bytes of entries, when any
    /// were (then it holds a conversation, but none of it is among what a run holds).
    #[error("{}", no_conversation_text(path, *left_out, *limit))]
    NoConversation { path: PathBuf, left_out: usize, limit: usize },
    #[error("{} does not say which folder the session ran in (no `cwd` on its entries); it is not a Claude Code transcript", path.display())]
    NoCwd { path: PathBuf },
    #[error("{} is kept in Claude Code's folder for another project: no folder its entries name ({}) is the project it is stored under. Mneme writes memories only for the project a transcript belongs to; move the file, or pass a transcript from that project.", path.display(), cwds.join(", "))]
    ForeignCwd { path: PathBuf, cwds: Vec<String> },
    #[error("{}", state_error_text(action, path, source))]
    State { action: &'static str, path: PathBuf, source: io::Error },
    /// The session's folder is on a drive that does not answer a look within
    /// `mneme_store::drive::PATIENCE`, so it was not opened.
    #[error("the drive holding {} is not answering (a network share or USB drive that hangs?); the session is opened once it answers", path.display())]
    DriveNotAnswering { path: PathBuf },
    #[error(transparent)]
    Inbox(#[from] InboxError),
    #[error(transparent)]
    SessionMemory(#[from] SessionMemoryError),
}

/// [`ExtractError::NoConversation`] for people: a file whose messages were all let go is not
/// said to hold none.
fn no_conversation_text(path: &Path, left_out: usize, limit: usize) -> String {
    if left_out == 0 {
        return format!("{} holds no conversation; pass a Claude Code session transcript (<config>/projects/<project>/<session>.jsonl)", path.display());
    }
    format!(
        "{} holds no user or assistant message among its newest {} of entries, all a run holds: its {left_out} older {} left out, and the lines after them are not conversation. A Claude Code session does not look like this; check the file, or move it out of the projects folder.",
        path.display(),
        mneme_store::open::size_words(limit as u64),
        if left_out == 1 { "one was" } else { "ones were" }
    )
}

/// [`ExtractError::State`] for people: a file of Mneme's own that does not parse is named, with
/// what to do about it (a writable folder does not help there); a refusal that already says
/// what is there is passed on; the data folder's permissions are named only when they failed.
fn state_error_text(action: &str, path: &Path, source: &io::Error) -> String {
    if source.kind() != io::ErrorKind::InvalidData {
        return crate::inbox::io_error_text(action, path, source);
    }
    let afresh = if record::is_modes_file(path) {
        "every project's review mode goes back to automatic"
    } else {
        "Mneme starts it afresh"
    };
    format!("{} is damaged: it is not valid JSON ({source}). Fix it, or delete it ({afresh}).", path.display())
}

/// A damaged state file's error, named with what to do about it, and a write the disk refused
/// (full, read-only, another account's) with the file and the way out, keeping its kind so
/// callers still tell which refusal it was (for callers that get an `io::Error`); other errors
/// as they are.
fn with_state_text(action: &str, path: &Path, e: io::Error) -> io::Error {
    if e.kind() == io::ErrorKind::InvalidData || (action != "read" && mneme_store::atomic::Refusal::of(&e).is_some()) {
        io::Error::new(e.kind(), state_error_text(action, path, &e))
    } else {
        e
    }
}

/// Options for [`Extractor::extract_transcript`].
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtractOptions {
    /// Stage the result in the inbox even if the project is in automatic mode.
    pub review: bool,
}

/// Runs extraction for any project; cheap to clone.
#[derive(Clone)]
pub struct Extractor {
    env: Environment,
    clock: Arc<dyn Clock>,
    every_n_turns: u32,
    held_limit: usize,
}

impl std::fmt::Debug for Extractor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Extractor").field("every_n_turns", &self.every_n_turns).finish_non_exhaustive()
    }
}

/// A live session being followed.
///
/// What it holds of the transcript is bounded by what extraction still needs: the entries from
/// the extraction cursor on (the turns since the last run). Entries before the cursor are let
/// go once the cursor is a turn's end; the conversation from the cursor on is then the one the
/// whole file gives, where extraction reads it (what follows the cursor). When it may not be
/// (the user rewound to a message before the cursor, so the newest messages chain to ones let
/// go), the transcript is read again whole for that turn. Session memory reads the whole
/// conversation: a session whose notes are kept holds every entry, within the same limit (an
/// update says how many of the oldest messages it did not read, [`Updated::left_out`]).
///
/// Whatever is kept, at most [`transcript::HELD_LIMIT_BYTES`] of the newest entries are held
/// (a [`Window`]): a session with more than that since its last extraction, or of very many
/// tiny lines, has its oldest entries let go as they are read, and each run's record says how
/// many messages after the cursor were left out ([`RunRecord::left_out`]).
#[derive(Debug)]
pub struct Session {
    transcript: PathBuf,
    reader: TranscriptReader,
    held: Window,
    /// Entries before the cursor were let go.
    trimmed: bool,
    /// Keep every entry (session memory reads the whole conversation).
    keep_all: bool,
    reported: Option<String>,
    session_id: Option<String>,
    /// The folder the session runs in, as its entries say (session memory is keyed on it).
    cwd: PathBuf,
    project: Project,
    state: ExtractionState,
    session_memory: SessionMemoryState,
    /// How many times the transcript was polled: a turn end is one poll's.
    polls: u64,
    /// The sub-agents' transcripts as far as the saved-chat check has read them.
    subagents: SubagentReads,
}

impl Session {
    pub fn transcript(&self) -> &Path {
        &self.transcript
    }

    pub fn project(&self) -> &Project {
        &self.project
    }

    pub fn session_id(&self) -> Option<&str> {
        self.session_id.as_deref()
    }

    /// Whether extraction found that this session read a saved claude.ai chat (row 75: a
    /// release with `Profile::memory_off_after_chat_read` saves no memory in it, and does not
    /// dream from it either). Set by a turn end's extraction; a turn not extracted yet is
    /// looked at by [`Session::saved_chat_read_in`].
    pub fn read_saved_chat(&self) -> bool {
        self.state.read_saved_chat()
    }

    /// The saved claude.ai chat `messages` (this session's conversation) or one of its
    /// sub-agents' transcripts show read, and who read it; `None` when neither does. Extraction
    /// asks before it runs, and the scheduler at each turn end whether or not extraction runs
    /// then: the release's mark is set by the read itself, not by its extraction.
    ///
    /// The sub-agents' transcripts are looked at once per turn end (per [`Session::poll`]):
    /// the scheduler's ask and extraction's share that look. Each look reads only what they
    /// appended since the last one ([`SubagentReads`]), and a read once found stays found (the
    /// release keeps its mark for the process).
    pub fn saved_chat_read_in(&mut self, messages: &[transcript::Conversation]) -> Option<(String, &'static str)> {
        let env = &self.project.session_env;
        if let Some(p) = crate::rules::saved_chat_read(messages, env) {
            return Some((p, "this session"));
        }
        if self.subagents.looked_at != Some(self.polls) {
            self.subagents.looked_at = Some(self.polls);
            self.subagents.look(&self.transcript, env);
        }
        self.subagents.found.clone().map(|p| (p, "a sub-agent of this session"))
    }

    /// The extraction cursor (`lastMemoryMessageUuid`).
    pub fn cursor(&self) -> Option<&str> {
        self.state.cursor()
    }

    /// The session-memory thresholds' state.
    pub fn session_memory(&self) -> &SessionMemoryState {
        &self.session_memory
    }

    /// The main thread's conversation as read so far (from the extraction cursor on, unless
    /// every entry is kept: see [`Session::keep_all_entries`]).
    pub fn conversation(&self) -> Messages {
        transcript::conversation(self.held.entries()).into_iter().cloned().collect()
    }

    /// How many entries of the transcript are held.
    pub fn held_entries(&self) -> usize {
        self.held.len()
    }

    /// How many bytes of entries are held (by [`transcript::held_bytes`]).
    pub fn held_bytes(&self) -> usize {
        self.held.bytes()
    }

    /// How many of the main thread's messages after the extraction cursor were let go unread
    /// to stay within the limit (0 when none).
    pub fn left_out_messages(&self) -> usize {
        let conv = transcript::conversation(self.held.entries());
        // Unknown only until `sync_cursor` reads again: then every message let go may count.
        self.held.left_out_of(&conv).unwrap_or(self.held.left_out().messages)
    }

    /// How many of the main thread's oldest messages were let go unread to stay within the
    /// limit, whatever the cursor (0 when none): what session notes, which read the whole
    /// conversation, did not see.
    pub fn left_out_of_conversation(&self) -> usize {
        self.held.left_out_of_whole(&transcript::conversation(self.held.entries()))
    }

    /// Tells the window where the extraction cursor stands; when it cannot tell how many
    /// messages after it were let go (it was set after they were), the transcript is read
    /// again with it.
    fn sync_cursor(&mut self) -> io::Result<()> {
        self.held.set_cursor(self.state.cursor());
        if self.held.cursor_unknown() {
            self.read_whole()?;
        }
        Ok(())
    }

    /// Keep every entry from now on (session memory's update reads the whole conversation);
    /// entries already let go are read again from the transcript.
    pub fn keep_all_entries(&mut self) -> io::Result<()> {
        if !self.keep_all {
            self.keep_all = true;
            if self.trimmed {
                self.read_whole()?;
            }
        }
        Ok(())
    }

    /// Reads the transcript again from its start, up to where the cursor stands (what follows
    /// is the next poll's).
    fn read_whole(&mut self) -> io::Result<()> {
        let mut reader = TranscriptReader::new();
        let mut held = Window::new(self.held.limit());
        held.set_cursor(self.state.cursor());
        reader.read_into(&self.transcript, &mut held)?;
        self.held = held;
        self.reader = reader;
        self.trimmed = false;
        Ok(())
    }

    /// Lets go of the entries before the extraction cursor when the cursor is a turn's end (an
    /// assistant message that ended its response): nothing after it then hangs off anything
    /// before it except by the cursor itself, and the rules read only what follows it.
    fn trim(&mut self) {
        if self.keep_all {
            return;
        }
        let Some(cursor) = self.state.cursor() else { return };
        let entries = self.held.entries();
        let at = entries.iter().rposition(|e| e.as_conversation().is_some_and(|c| c.uuid == cursor && c.is_main_thread()));
        let Some(at) = at.filter(|&i| i > 0) else { return };
        let ends_turn = entries[at].as_conversation().is_some_and(|c| {
            c.entry_type == transcript::EntryType::Assistant
                && c.message.as_ref().and_then(|m| m.stop_reason.as_deref()).is_some_and(|r| !matches!(r, "tool_use" | "pause_turn"))
                && c.tool_uses().next().is_none()
        });
        if ends_turn {
            if self.session_id.is_none() {
                self.session_id = session_id_of(&self.transcript, self.held.session_id());
            }
            self.held.let_go_before(at);
            self.trimmed = true;
        }
    }

    /// Whether the conversation of the entries held may differ from the whole file's where
    /// extraction reads it: a main-thread message after the first held one names a parent
    /// that is no longer held (the user went back to a message before the cursor).
    fn needs_whole(&self) -> bool {
        if !self.trimmed {
            return false;
        }
        let main = || self.held.entries().iter().filter_map(Entry::as_conversation).filter(|c| c.is_main_thread());
        let held: std::collections::HashSet<&str> = main().map(|c| c.uuid.as_str()).collect();
        main().skip(1).any(|c| c.parent_uuid.as_deref().is_some_and(|p| !held.contains(p)))
    }

    /// Reads what Claude Code appended since the last poll (complete lines only) and returns
    /// the conversation if it now ends a query loop that was not reported before.
    pub fn poll(&mut self) -> io::Result<Option<Messages>> {
        self.polls += 1;
        self.trim();
        self.held.set_cursor(self.state.cursor());
        let before = self.reader.offset();
        self.reader.read_into(&self.transcript, &mut self.held)?;
        if self.reader.offset() < before {
            // Replaced by a shorter file: the window started again.
            self.trimmed = false;
        }
        if self.needs_whole() {
            self.read_whole()?;
        }
        if self.session_id.is_none() {
            self.session_id = session_id_of(&self.transcript, self.held.session_id());
        }
        let conv = transcript::conversation(self.held.entries());
        match transcript::turn_end(&conv) {
            Some(uuid) if self.reported.as_deref() != Some(uuid.as_str()) => {
                self.reported = Some(uuid);
                Ok(Some(conv.into_iter().cloned().collect()))
            }
            _ => Ok(None),
        }
    }
}

/// The session a transcript is: the id its file is named after (Claude Code names each
/// session's file `<session id>.jsonl`), else its first entry's `sessionId`. Entries are
/// anyone's text: a file whose entries name another session's id must not share that session's
/// saved cursor, lock and notes.
fn session_id_of(transcript: &Path, first: Option<&str>) -> Option<String> {
    let named = transcript.file_stem().and_then(|s| s.to_str()).filter(|s| transcript.extension().is_some_and(|e| e == "jsonl") && paths::is_session_id(s));
    named.map(str::to_string).or_else(|| first.map(str::to_string))
}

/// The saved claude.ai chat the session's sub-agents read, followed as their transcripts
/// (`<session>/subagents/*.jsonl` beside the session's own) grow. A sub-agent runs in its
/// session's process, and 2.1.337 keeps the mark of such a read for the process: the session
/// that started it saves no memory either, though its own transcript never shows the read.
///
/// A session's sub-agents may have written hundreds of MB by its last turns: each look reads
/// only the lines appended since the last one, as the extraction cursor does for the session's
/// own transcript. The one thing carried from look to look is a `Read` still waiting for its
/// result (its message), so that a read whose result lands after a look is still found.
#[derive(Debug, Default)]
struct SubagentReads {
    files: std::collections::BTreeMap<PathBuf, SubagentFile>,
    /// The first read found ([`crate::rules::saved_chat_read`]'s path).
    found: Option<String>,
    /// The poll whose turn end was last looked at.
    looked_at: Option<u64>,
}

/// How far one sub-agent transcript was read.
#[derive(Debug, Default)]
struct SubagentFile {
    reader: TranscriptReader,
    /// Messages with a `Read` whose result was not in the file yet.
    waiting: Vec<transcript::Conversation>,
}

impl SubagentReads {
    /// Reads what the sub-agents of the session at `transcript` appended since the last look,
    /// in name order, until a saved chat's read is found. A file that cannot be read now (it
    /// is being replaced, Mneme may not read it) is passed over and read from where it stood
    /// at the next look.
    fn look(&mut self, transcript: &Path, env: &Environment) {
        if self.found.is_some() {
            return;
        }
        let dir = transcript.with_extension("").join("subagents");
        let Ok(listing) = std::fs::read_dir(dir) else { return };
        let names: std::collections::BTreeSet<PathBuf> =
            listing.flatten().map(|e| e.path()).filter(|p| p.extension().is_some_and(|x| x == "jsonl")).collect();
        self.files.retain(|p, _| names.contains(p));
        for path in names {
            let file = self.files.entry(path.clone()).or_default();
            if let Some(read) = file.read_more(&path, env) {
                self.found = Some(read);
                return;
            }
        }
    }
}

impl SubagentFile {
    /// Reads the lines `path` appended since the last look (within [`transcript::HELD_LIMIT_BYTES`]
    /// of entries, as any transcript read) and returns the saved chat they show read, with the
    /// `Read`s carried from earlier looks; the `Read`s still without a result are carried on.
    fn read_more(&mut self, path: &Path, env: &Environment) -> Option<String> {
        let before = self.reader.offset();
        let mut window = Window::new(transcript::HELD_LIMIT_BYTES);
        self.reader.read_into(path, &mut window).ok()?;
        if self.reader.offset() < before {
            // Replaced by a shorter file, read again from its start: what waited was another file's.
            self.waiting.clear();
        }
        let mut messages = std::mem::take(&mut self.waiting);
        messages.extend(window.into_entries().into_iter().filter_map(|e| match e {
            Entry::Conversation(c) => Some(*c),
            _ => None,
        }));
        if let Some(read) = crate::rules::saved_chat_read(&messages, env) {
            return Some(read);
        }
        let answered: std::collections::HashSet<String> = messages.iter().flat_map(|m| m.tool_results()).map(|(id, _)| id.to_string()).collect();
        messages.retain(|m| m.tool_uses().any(|t| t.name == "Read" && !answered.contains(t.id)));
        self.waiting = messages;
        None
    }
}
fn session_key(transcript: &Path, session_id: Option<&str>) -> String {
    match session_id.filter(|s| paths::is_session_id(s)) {
        Some(s) => s.to_string(),
        None => mneme_core::sanitize::sanitize_path(&transcript.to_string_lossy()),
    }
}

impl Extractor {
    pub fn new(env: Environment, clock: Arc<dyn Clock>) -> Extractor {
        Extractor { env, clock, every_n_turns: DEFAULT_EVERY_N_TURNS, held_limit: transcript::HELD_LIMIT_BYTES }
    }

    /// Hold at most `bytes` of a transcript's entries (by [`transcript::held_bytes`]) instead
    /// of [`transcript::HELD_LIMIT_BYTES`]: for tests of what is let go.
    pub fn with_held_limit(mut self, bytes: usize) -> Extractor {
        self.held_limit = bytes;
        self
    }

    /// Extract every `n` eligible turns (Claude Code's `tengu_bramble_lintel`, default 1).
    pub fn with_every_n_turns(mut self, n: u32) -> Extractor {
        self.every_n_turns = n.max(1);
        self
    }

    pub fn env(&self) -> &Environment {
        &self.env
    }

    /// The review inbox, deciding items for the Claude Code the user runs.
    pub fn inbox(&self) -> Inbox {
        let env = self.env.clone();
        Inbox::new(self.env.data_dir(), self.clock.clone()).for_release(move || mneme_store::claude_install::installed_profile(&env))
    }

    /// The project of a folder Claude Code ran in: its memory folder and whether auto memory
    /// is on, read from the settings as Claude Code reads them.
    /// Settings files' `env` blocks count (`SessionMemory`): a memory is never written where,
    /// or while, Claude Code would not read it.
    pub fn project_for_cwd(&self, cwd: &Path) -> Project {
        let session = SessionMemory::for_cwd(&self.env, cwd);
        let claude_md_excludes = session.settings.claude_md_excludes();
        let permission_rules = mneme_agent::PermissionRules::for_session(&session, &session.root);
        Project {
            permission_rules,
            root: session.root,
            memory_dir: session.dir,
            auto_memory: session.reason,
            session_env: session.env,
            claude_md_excludes,
            trusted: true,
        }
    }

    /// The review mode of a project. A damaged modes file is named in the error, with what to
    /// do about it.
    pub fn mode(&self, memory_dir: &Path) -> io::Result<ReviewMode> {
        let data_dir = self.env.data_dir();
        record::mode(&data_dir, memory_dir).map_err(|e| with_state_text("read", &record::modes_path(&data_dir), e))
    }

    pub fn set_mode(&self, memory_dir: &Path, mode: ReviewMode) -> io::Result<()> {
        let data_dir = self.env.data_dir();
        record::set_mode(&data_dir, memory_dir, mode).map_err(|e| with_state_text("save the review mode in", &record::modes_path(&data_dir), e))
    }

    /// The newest runs of a project, newest first.
    pub fn recent_runs(&self, memory_dir: &Path, limit: usize) -> io::Result<Vec<RunRecord>> {
        record::recent_runs(&self.env.data_dir(), memory_dir, limit)
    }

    fn state_path(&self, memory_dir: &Path, key: &str) -> PathBuf {
        data::project_dir(&self.env.data_dir(), memory_dir).join("sessions").join(format!("{key}.json"))
    }

    fn load_state(&self, project: &Project, key: &str) -> Result<ExtractionState, ExtractError> {
        let path = self.state_path(&project.memory_dir.dir, key);
        let persisted: Persisted =
            data::read_json(&path).map_err(|source| ExtractError::State { action: "read", path, source })?.unwrap_or_default();
        Ok(ExtractionState::resume(project.memory_dir.clone(), self.every_n_turns, persisted))
    }

    /// The lock on one session's extraction, waited for without blocking the runtime.
    /// Polled rather than a blocking `flock` on `spawn_blocking`: a thread stuck in `flock`
    /// cannot be told to stop, so a cancelled wait would keep it alive, and dropping the tokio
    /// runtime waits for blocking tasks — Ctrl-C on `mneme extract` would hang until the other
    /// extraction finished.
    async fn hold_session(&self, project: &Project, key: &str, cancel: &Cancel) -> Result<mneme_store::file_lock::FileLock, ExtractError> {
        let path = self.state_path(&project.memory_dir.dir, &format!("{key}.lock"));
        loop {
            match mneme_store::file_lock::FileLock::try_take(&path) {
                Ok(Some(held)) => return Ok(held),
                Ok(None) if !cancel.is_cancelled() => tokio::time::sleep(std::time::Duration::from_millis(200)).await,
                Ok(None) => {
                    return Err(ExtractError::State {
                        action: "wait for another extraction of this session in",
                        path,
                        source: io::Error::new(io::ErrorKind::Interrupted, "cancelled while another extraction of this session ran"),
                    })
                }
                Err(source) => return Err(ExtractError::State { action: "lock", path, source }),
            }
        }
    }

    fn save_state(&self, project: &Project, key: &str, state: &ExtractionState) -> Result<(), ExtractError> {
        let path = self.state_path(&project.memory_dir.dir, key);
        data::write_json(&path, state.persisted()).map_err(|source| ExtractError::State { action: "write", path, source })
    }

    /// The folder whose memory a transcript feeds: where the session started. Entries name
    /// their own `cwd`, and a transcript is anyone's text, so a folder is taken only when it is
    /// absolute and, for a transcript in Claude Code's projects folder, only when it is the
    /// project the transcript is stored under (Claude Code names that folder after where the
    /// session started; a `cd` later in the session does not move its memory).
    /// With whether the transcript is stored under that project in Claude Code's folder, or
    /// the folder whose drive must be asked first ([`OpenStep::Ask`]; `asked` holds the answers
    /// so far).
    fn session_cwd(&self, transcript: &Path, cwds: Vec<&str>, asked: &HashMap<PathBuf, bool>) -> Result<OpenStep, ExtractError> {
        let cwds: Vec<&str> = cwds.into_iter().filter(|c| Path::new(c).is_absolute()).collect();
        if cwds.is_empty() {
            return Err(ExtractError::NoCwd { path: transcript.into() });
        }
        let stored_under = transcript.parent().filter(|dir| {
            let projects = std::fs::canonicalize(self.env.projects_dir()).unwrap_or_else(|_| self.env.projects_dir());
            dir.parent().and_then(|p| std::fs::canonicalize(p).ok()).is_some_and(|p| p == projects)
        });
        let Some(folder) = stored_under.and_then(|d| d.file_name()).map(|n| n.to_string_lossy().into_owned()) else {
            return Ok(OpenStep::Ready(PathBuf::from(cwds[0]), false));
        };
        // As Claude Code finds a project's folder: its sanitized path, or for a path too long
        // for one name, the name's readable prefix (the hash after it depends on the runtime).
        let names_folder = |path: &str| {
            folder == mneme_core::sanitize::sanitize_path(path)
                || mneme_core::sanitize::long_name_prefix(path).is_some_and(|prefix| folder.starts_with(&prefix))
        };
        // Finding a folder's real path looks at it: a folder on a drive that stopped answering
        // is not looked at (that would hold the caller until the drive answers), and when no
        // other folder is the project, that drive is the answer.
        let mut not_answering = None;
        for c in &cwds {
            if names_folder(c) {
                return Ok(OpenStep::Ready(PathBuf::from(c), true));
            }
            match asked.get(Path::new(c)) {
                None => return Ok(OpenStep::Ask(PathBuf::from(c))),
                Some(true) if names_folder(&paths::project_root(Path::new(c)).to_string_lossy()) => return Ok(OpenStep::Ready(PathBuf::from(c), true)),
                Some(true) => {}
                Some(false) => {
                    not_answering.get_or_insert_with(|| PathBuf::from(c));
                }
            }
        }
        match not_answering {
            Some(path) => Err(ExtractError::DriveNotAnswering { path }),
            None => Err(ExtractError::ForeignCwd { path: transcript.into(), cwds: cwds.iter().map(|c| c.to_string()).collect() }),
        }
    }

    /// Starts following a session's transcript, with its saved cursor. The drives it asks
    /// (up to `mneme_store::drive::PATIENCE` each) are asked on this thread; an async caller
    /// uses [`Extractor::open_session_asking`].
    pub fn open_session(&self, transcript: &Path) -> Result<Session, ExtractError> {
        let mut opening = self.read_for_open(transcript)?;
        loop {
            match self.open_step(&opening)? {
                OpenStep::Ask(dir) => {
                    let answered = mneme_store::drive::answers(&dir);
                    opening.asked.insert(dir, answered);
                }
                OpenStep::Ready(cwd, trusted) => return self.finish_open(opening, cwd, trusted),
            }
        }
    }

    /// [`Extractor::open_session`], with whether a folder's drive answers asked of `answers`:
    /// the scheduler's extraction loop runs on an async worker every session shares, and the
    /// first look at a drive that stopped answering takes the whole patience (3 s), so it asks
    /// off the worker (`spawn_blocking` of `mneme_store::drive::answers`).
    pub async fn open_session_asking<F, A>(&self, transcript: &Path, mut answers: F) -> Result<Session, ExtractError>
    where
        F: FnMut(PathBuf) -> A,
        A: std::future::Future<Output = bool>,
    {
        let mut opening = self.read_for_open(transcript)?;
        loop {
            match self.open_step(&opening)? {
                OpenStep::Ask(dir) => {
                    let answered = answers(dir.clone()).await;
                    opening.asked.insert(dir, answered);
                }
                OpenStep::Ready(cwd, trusted) => return self.finish_open(opening, cwd, trusted),
            }
        }
    }

    /// The transcript read as far as an open needs (from the start: the cursor is not known
    /// yet).
    fn read_for_open(&self, transcript: &Path) -> Result<Opening, ExtractError> {
        let mut reader = TranscriptReader::new();
        let mut held = Window::new(self.held_limit);
        reader.read_into(transcript, &mut held).map_err(|source| ExtractError::Read { path: transcript.into(), source })?;
        Ok(Opening { transcript: transcript.to_path_buf(), reader, held, asked: HashMap::new() })
    }

    /// The session's folder, once every drive it depends on has answered; else the next drive
    /// to ask.
    fn open_step(&self, opening: &Opening) -> Result<OpenStep, ExtractError> {
        let (cwd, trusted) = match self.session_cwd(&opening.transcript, opening.held.cwds(), &opening.asked)? {
            OpenStep::Ready(cwd, trusted) => (cwd, trusted),
            ask => return Ok(ask),
        };
        // The project's settings and git root are read next: on a drive that stopped answering
        // that would hold the caller (the scheduler's extraction loop, which serves every
        // session) until it answers.
        match opening.asked.get(&cwd) {
            None => Ok(OpenStep::Ask(cwd)),
            Some(false) => Err(ExtractError::DriveNotAnswering { path: cwd }),
            Some(true) => Ok(OpenStep::Ready(cwd, trusted)),
        }
    }

    /// The session in `cwd`, whose drive answered.
    fn finish_open(&self, opening: Opening, cwd: PathBuf, trusted: bool) -> Result<Session, ExtractError> {
        let Opening { transcript, reader, held, .. } = opening;
        let transcript = transcript.as_path();
        let read = |source| ExtractError::Read { path: transcript.into(), source };
        let project = Project { trusted, ..self.project_for_cwd(&cwd) };
        let session_id = session_id_of(transcript, held.session_id());
        let key = session_key(transcript, session_id.as_deref());
        let state = self.load_state(&project, &key)?;
        let sm_path = self.state_path(&project.memory_dir.dir, &format!("{key}.session-memory"));
        let session_memory = data::read_json(&sm_path)
            .map_err(|source| ExtractError::State { action: "read", path: sm_path, source })?
            .unwrap_or_default();
        // What was read to find the folder is kept (from the saved cursor on): the first poll
        // reads only what follows.
        let mut session = Session {
            transcript: transcript.to_path_buf(),
            reader,
            held,
            trimmed: false,
            keep_all: false,
            reported: None,
            session_id,
            cwd,
            project,
            state,
            session_memory,
            polls: 0,
            subagents: SubagentReads::default(),
        };
        // The cursor was not known while the file was read: if entries were let go, whether
        // it was among them is found by reading again with it.
        session.sync_cursor().map_err(read)?;
        session.trim();
        Ok(session)
    }

    /// Claude Code's session-memory hook for `session` (it runs after each model response of
    /// the main thread): when the thresholds say so, the notes file is created from the
    /// template if needed and updated by `provider`, allowed only to `Edit` that file. Returns
    /// `None` when the thresholds were not met. The threshold state is saved either way. Of a
    /// conversation longer than the window holds, the update reads the newest part and says
    /// how many older messages it left out ([`Updated::left_out`], [`Updated::summary`]).
    pub async fn update_session_memory(
        &self,
        session: &mut Session,
        provider: &dyn Provider,
        cancel: &Cancel,
    ) -> Result<Option<Updated>, ExtractError> {
        session.keep_all_entries().map_err(|source| ExtractError::Read { path: session.transcript.clone(), source })?;
        let messages = session.conversation();
        let Some(sid) = session.session_id.clone() else { return Ok(None) };
        let run = session.session_memory.should_extract(&messages);
        let updated = if run {
            let mut u = session_memory::update(&self.env, self.clock.clone(), provider, &session.cwd, &sid, &messages, cancel).await?;
            u.left_out = LeftOut::of(session.left_out_of_conversation(), session.held.limit());
            session.session_memory.record_extraction(&messages);
            Some(u)
        } else {
            None
        };
        let key = session_key(&session.transcript, Some(&sid));
        let path = self.state_path(&session.project.memory_dir.dir, &format!("{key}.session-memory"));
        data::write_json(&path, &session.session_memory)
            .map_err(|source| ExtractError::State { action: "write", path, source })?;
        Ok(updated)
    }

    /// A turn ended in `session` with `messages` as the conversation: Claude Code's rules
    /// decide whether to run; turns that end while the run is going (found by polling the
    /// transcript when it finishes) become the one trailing run. Returns a record per decision.
    pub async fn on_turn_end(
        &self,
        session: &mut Session,
        messages: Messages,
        engine: Engine<'_>,
        cancel: &Cancel,
    ) -> Result<Vec<RunRecord>, ExtractError> {
        self.drive(session, messages, Trigger::TurnEnd, engine, ExtractOptions::default(), cancel, true).await
    }

    /// Runs extraction over `transcript` from its saved cursor, now.
    pub async fn extract_transcript(
        &self,
        transcript: &Path,
        engine: Engine<'_>,
        options: ExtractOptions,
        cancel: &Cancel,
    ) -> Result<Vec<RunRecord>, ExtractError> {
        let mut session = self.open_session(transcript)?;
        session.poll().map_err(|source| ExtractError::Read { path: transcript.into(), source })?;
        let messages = session.conversation();
        if messages.is_empty() {
            let (left_out, limit) = (session.held.left_out().messages, session.held.limit());
            return Err(ExtractError::NoConversation { path: transcript.into(), left_out, limit });
        }
        self.drive(&mut session, messages, Trigger::Requested, engine, options, cancel, false).await
    }

    #[allow(clippy::too_many_arguments)]
    async fn drive(
        &self,
        session: &mut Session,
        messages: Messages,
        trigger: Trigger,
        engine: Engine<'_>,
        options: ExtractOptions,
        cancel: &Cancel,
        follow: bool,
    ) -> Result<Vec<RunRecord>, ExtractError> {
        let key = session_key(&session.transcript, session.session_id.as_deref());
        let project = session.project.clone();
        let data_dir = self.env.data_dir();
        // One extraction of a session at a time across Mneme's processes (a scheduler following
        // it, a run asked for on the screen or the command line), each starting from the cursor
        // the last one saved: two would extract the same messages twice.
        let _running = self.hold_session(&project, &key, cancel).await?;
        let saved = self.load_state(&project, &key)?;
        if saved.persisted() != session.state.persisted() {
            session.state.adopt(saved.persisted().clone());
        }
        session.sync_cursor().map_err(|source| ExtractError::Read { path: session.transcript.clone(), source })?;
        // A cursor whose message was let go comes before every message held: the rules then
        // read all of them as new, memory writes included (not as a cursor gone with a
        // compaction, after which Claude Code ignores the session's own memory writes).
        session.state.set_cursor_before_all(session.held.cursor_let_go());
        let mut left_out = session.left_out_messages();
        let mode = if options.review {
            ReviewMode::Review
        } else {
            record::mode(&data_dir, &project.memory_dir.dir)
                .map_err(|source| ExtractError::State { action: "read", path: record::modes_path(&data_dir), source })?
        };
        let disabled = match (project.auto_memory, mode) {
            (why, _) if !why.enabled() => Some(format!("auto memory is off: {}", why.explanation())),
            (_, ReviewMode::Off) => {
                // Kept in the run's record, which the command line and the Inbox both show: it
                // names the mode, not a command only one of them has.
                Some("extraction is off for this project (its review mode is Off; Automatic or Review turns it on)".to_string())
            }
            _ => None,
        };
        if let Some(why) = disabled {
            let rec = self.record(session, &project, trigger, engine, 0, RunOutcome::Disabled { why });
            self.log(&rec)?;
            return Ok(vec![rec]);
        }
        // From 2.1.337 a session that read a claude.ai chat's saved text saves no memory again
        // (until `/clear` starts a new session): what such a chat holds stays out of memory,
        // by Claude Code's extraction and so by Mneme's.
        if mneme_store::claude_install::installed_profile(&self.env).memory_off_after_chat_read {
            let read = match session.state.read_saved_chat() {
                true => Some(None),
                false => session.saved_chat_read_in(&messages).map(Some),
            };
            if let Some(read) = read {
                session.state.mark_read_saved_chat();
                self.save_state(&project, &key, &session.state)?;
                let (who, what) = match read {
                    Some((p, who)) => (who, format!("a claude.ai chat's saved text ({p})")),
                    None => ("this session", "a claude.ai chat's saved text".to_string()),
                };
                let why = format!(
                    "{who} read {what}, and the Claude Code installed (2.1.337 or later) saves no memory in such a session; a new session (/clear) saves again"
                );
                let rec = self.record(session, &project, trigger, engine, 0, RunOutcome::Disabled { why });
                self.log(&rec)?;
                return Ok(vec![rec]);
            }
        }
        // From 2.1.292 Claude Code's extraction does not start while one of the user's deny or
        // ask rules refuses every write into the memory folder (a rule on all of Edit or Write,
        // or an Edit rule covering the folder), and its cursor stays: once the rule is gone, the
        // turns skipped meanwhile are reviewed too.
        if mneme_store::claude_install::installed_profile(&self.env).memory_agents_obey_permission_rules {
            if let Some(rule) = project.permission_rules.blocking_memory_writes(&project.memory_dir.dir) {
                let why = format!(
                    "the {} rule \"{}\" in the {} settings covers every write into {}, and the Claude Code installed (2.1.292 or later) saves no memory while it does; remove that rule, or narrow it so it no longer covers the memory folder",
                    rule.behavior.as_str(),
                    rule.text,
                    rule.source.label(),
                    project.memory_dir.dir.display()
                );
                let rec = self.record(session, &project, trigger, engine, 0, RunOutcome::Disabled { why });
                self.log(&rec)?;
                return Ok(vec![rec]);
            }
        }

        let mut out = Vec::new();
        let mut decision = Some(match trigger {
            Trigger::Requested => session.state.requested(messages),
            _ => session.state.turn_ended(messages),
        });
        let mut trigger = trigger;
        while let Some(d) = decision.take() {
            match d {
                TurnDecision::Skip(reason) => {
                    let mut rec = self.record(session, &project, trigger, engine, 0, RunOutcome::Skipped { reason });
                    rec.left_out = LeftOut::of(left_out, session.held.limit());
                    self.log(&rec)?;
                    out.push(rec);
                }
                TurnDecision::Run(plan) => {
                    let cursor = session.state.cursor().map(str::to_string);
                    let ran = self.run(session, &project, &plan, cursor.as_deref(), trigger, engine, mode, cancel).await;
                    // Whatever happens next, the run is over: a session left "in progress" would
                    // stash every later turn and never extract again until Mneme restarts.
                    let (mut rec, ok) = match ran {
                        Ok(r) => r,
                        Err(e) => {
                            session.state.run_finished(&plan, false);
                            return Err(e);
                        }
                    };
                    rec.left_out = LeftOut::of(left_out, session.held.limit());
                    if ok && plan.advance_to.is_some() {
                        // The cursor moves to the newest message held: nothing after it is let go.
                        left_out = 0;
                        session.state.set_cursor_before_all(false);
                    }
                    let logged = self.log(&rec);
                    out.push(rec);
                    if follow && logged.is_ok() {
                        // Turns that ended during the run: Claude Code stashes the newest.
                        if let Ok(Some(newer)) = session.poll() {
                            session.state.turn_ended(newer);
                        }
                    }
                    decision = session.state.run_finished(&plan, ok);
                    logged?;
                    trigger = Trigger::Trailing;
                }
            }
            self.save_state(&project, &key, &session.state)?;
        }
        // What came before the cursor the runs moved is no longer needed.
        session.trim();
        Ok(out)
    }

    fn record(
        &self,
        session: &Session,
        project: &Project,
        trigger: Trigger,
        engine: Engine<'_>,
        new_message_count: usize,
        outcome: RunOutcome,
    ) -> RunRecord {
        let (engine, model) = engine.describe();
        let about = record::RunAbout {
            memory_dir: project.memory_dir.dir.clone(),
            project_root: project.root.clone(),
            session_id: session.session_id.clone(),
            transcript: session.transcript.clone(),
            trigger,
            engine,
            model,
            new_message_count,
        };
        RunRecord::nothing_done(self.clock.now_ms(), about, outcome)
    }

    fn log(&self, rec: &RunRecord) -> Result<(), ExtractError> {
        let data_dir = self.env.data_dir();
        record::append_run(&data_dir, rec)
            .map_err(|source| ExtractError::State { action: "write", path: record::runs_path(&data_dir, &rec.about.memory_dir), source })
    }

    /// The memory files that items waiting in the inbox for this memory folder would create:
    /// a new memory must not take one of their names, or keeping the older item would fail as
    /// if Claude Code had written its file. An inbox that cannot be read hides nothing here.
    fn proposed_in_inbox(&self, memory_dir: &Path) -> Vec<String> {
        let items = self.inbox().list(Some(memory_dir), false).unwrap_or_default();
        items.into_iter().flat_map(|i| i.proposals).filter(|p| p.action == crate::inbox::ProposalAction::New).map(|p| p.rel_path).collect()
    }

    /// The text of the CLAUDE.md files Claude Code loads for the project (for "anything already
    /// documented in CLAUDE.md files").
    fn claude_md(&self, project: &Project) -> Vec<String> {
        let canonical = git::find_canonical_git_root(&project.root).unwrap_or_else(|| project.root.clone());
        // As the session sees them: after the settings files' `env` blocks.
        let env = &project.session_env;
        let opts = LoadOptions {
            include_external: paths::external_includes_approved(env, &canonical),
            excludes: project.claude_md_excludes.clone(),
            disabled: env.is_truthy("CLAUDE_CODE_DISABLE_CLAUDE_MDS"),
            ..LoadOptions::new(
                project.root.clone(),
                env.home.clone(),
                env.config_home(),
                env.managed_dir.clone(),
                // As the user's own release loads them (the memory folder is written for it too).
                mneme_store::claude_install::installed_profile(&self.env),
            )
        };
        mneme_claudemd::load(&opts)
            .files
            .into_iter()
            .filter(|f| !matches!(f.layer, Layer::AutoMem | Layer::TeamMem))
            .map(|f| f.content)
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    async fn run(
        &self,
        session: &Session,
        project: &Project,
        plan: &RunPlan,
        cursor: Option<&str>,
        trigger: Trigger,
        engine: Engine<'_>,
        mode: ReviewMode,
        cancel: &Cancel,
    ) -> Result<(RunRecord, bool), ExtractError> {
        let mut rec = self.record(session, project, trigger, engine, plan.new_message_count, RunOutcome::NothingToSave);
        let dir = &project.memory_dir.dir;
        let data_dir = self.env.data_dir();
        let trash = data::trash_dir(&data_dir, dir);
        let memdir = Memdir::new(dir.clone(), trash.clone(), self.clock.clone())
            .for_release(&mneme_store::claude_install::installed_profile(&self.env));
        let since: &[transcript::Conversation] = match cursor {
            Some(c) => match plan.messages.iter().position(|m| m.uuid == c) {
                Some(i) => &plan.messages[i + 1..],
                None => &plan.messages,
            },
            None => &plan.messages,
        };
        let (changeset, written): (Changeset, Vec<PathBuf>) = match engine {
            Engine::Offline => match offline::extract_beside(since, &memdir, &self.claude_md(project), &self.proposed_in_inbox(dir)) {
                Ok(o) => {
                    rec.decisions = o.decisions;
                    let written = o.changeset.changes.iter().filter(|c| c.after.is_some()).map(|c| c.path.clone()).collect();
                    (o.changeset, written)
                }
                Err(e) => {
                    rec.outcome = RunOutcome::Failed { error: e.to_string() };
                    return Ok((rec, false));
                }
            },
            Engine::Model(provider) => {
                let manifest = if dir.is_dir() { memdir.manifest() } else { String::new() };
                let cwd = if project.trusted {
                    project.root.clone()
                } else {
                    if let Err(e) = std::fs::create_dir_all(dir) {
                        rec.outcome = RunOutcome::Failed { error: format!("could not create the memory folder {}: {e}", dir.display()) };
                        return Ok((rec, false));
                    }
                    dir.clone()
                };
                let task = AgentTask {
                    system: prompt::system_prompt(dir, memdir.type_form()),
                    prompt: prompt::task_prompt(since, plan.new_message_count, &manifest, false),
                    policy: Policy::AutoMem { memory_dir: dir.clone() },
                    max_turns: Some(MAX_TURNS),
                    cwd,
                    label: "extract_memories".into(),
                    work_dir: data_dir.join("work").join("extract"),
                    clock: self.clock.clone(),
                    release: *memdir.release(),
                    permission_rules: project.permission_rules.clone(),
                };
                match mneme_agent::run_agent(provider, &task, Mode::Stage, cancel).await {
                    Ok(o) if o.stop == Stop::Cancelled => {
                        rec.turns = o.turns;
                        rec.outcome = RunOutcome::Failed { error: "cancelled".into() };
                        return Ok((rec, false));
                    }
                    Ok(o) => {
                        rec.turns = o.turns;
                        rec.denials = o.denials;
                        (o.changeset, o.written_paths)
                    }
                    Err(e) => {
                        rec.outcome = RunOutcome::Failed { error: e.to_string() };
                        return Ok((rec, false));
                    }
                }
            }
        };
        if changeset.is_empty() {
            return Ok((rec, true));
        }
        rec.changeset = Some(changeset.clone());
        match mode {
            ReviewMode::Review => {
                let item = self.inbox().stage(NewItem {
                    project_root: project.root.clone(),
                    memory_dir: dir.clone(),
                    session_id: session.session_id.clone(),
                    transcript: Some(session.transcript.clone()),
                    source: match engine {
                        Engine::Offline => offline::LABEL.to_string(),
                        Engine::Model(_) => "extract_memories".to_string(),
                    },
                    changeset,
                })?;
                rec.outcome = RunOutcome::Staged { inbox_id: item.id };
                Ok((rec, true))
            }
            ReviewMode::Automatic | ReviewMode::Off => {
                // This run's record and the session's cursor go to Mneme's data folder once the
                // memories are written: a disk that would refuse them (full, read-only, another
                // account's) refuses here, before the memory folder changes, rather than after,
                // when the memories would be written by a run with no record and no cursor
                // past them (the next run would read the same turns again).
                let runs = record::runs_path(&data_dir, dir);
                let need = serde_json::to_vec(&rec).map_or(0, |b| b.len()) + STATE_ROOM;
                data::probe_room(runs.parent().unwrap_or(&data_dir), need).map_err(|source| ExtractError::State { action: "write", path: runs, source })?;
                self.apply_automatic(rec, changeset, written, &trash, dir, memdir.release())
            }
        }
    }

    /// [`Extractor::run`]'s last step in automatic mode: the changeset written to the memory
    /// folder, and the run's record saying what it wrote (or why it failed).
    fn apply_automatic(&self, mut rec: RunRecord, changeset: Changeset, written: Vec<PathBuf>, trash: &Path, dir: &Path, release: &mneme_core::versions::Profile) -> Result<(RunRecord, bool), ExtractError> {
        match apply_changeset(&changeset, trash, self.clock.clone(), release) {
            Ok(_) => {
                // Claude Code counts every Edit or Write the model asked for, even one that
                // failed (an `old_string` not found); the line here names only files the
                // run really changed, so it never says a memory was saved when none was.
                let changed: Vec<PathBuf> = changeset.changes.iter().map(|c| lexical(&c.path)).collect();
                let written: Vec<PathBuf> = written.into_iter().filter(|p| changed.contains(&lexical(p))).collect();
                let (memories, team) = memory_paths(&written, dir);
                // "Forget …" removes files: the line names them too.
                let removed: Vec<PathBuf> = changeset.changes.iter().filter(|c| c.after.is_none()).map(|c| c.path.clone()).collect();
                rec.message = record::run_message(&memories, team, &removed);
                rec.outcome = RunOutcome::Saved;
                rec.written_paths = written;
                rec.memory_paths = memories;
                rec.team_count = team;
                Ok((rec, true))
            }
            Err(e) => {
                rec.outcome = RunOutcome::Failed { error: e.to_string() };
                Ok((rec, false))
            }
        }
    }
}

/// Room for a session's cursor file beside a run's record, when [`Extractor::run`] checks that
/// Mneme's data folder takes both: the cursor is a few hundred bytes.
const STATE_ROOM: usize = 4096;

/// A path with `.` components and repeated separators taken out, to compare the path a tool
/// call named with the one the changeset holds.
fn lexical(p: &std::path::Path) -> PathBuf {
    p.components().filter(|c| !matches!(c, std::path::Component::CurDir)).collect()
}
