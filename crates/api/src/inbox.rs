//! The review inbox and extraction for front ends: the project's mode (automatic, review, off),
//! what extraction staged (each file as before/after), keep / edit / discard / promote, the
//! recent runs in Claude Code's words ("● Saved 2 memories"), and a run over the project's
//! newest session transcript.

use crate::providers::ProviderChoice;
use crate::{ApiError, ContextRequest, ErrorCode, Mneme};
use mneme_core::MemoryType;
use mneme_extract::offline::Decision;
use mneme_extract::rules::SkipReason;
use mneme_extract::session_memory::SessionMemoryError;
use mneme_extract::{
    Engine, ExtractError, ExtractOptions, Extractor, InboxError, InboxItem, ItemStatus, PromoteTarget, ReviewMode, RunOutcome,
    RunRecord,
};
use mneme_model::{build_provider, Cancel, Provider, ProviderSettings};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What happens to what extraction finds in a project.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum ReviewModeName {
    /// Written at once, as Claude Code does.
    Automatic,
    /// Staged in the inbox until the user keeps it.
    Review,
    /// Extraction does not run.
    Off,
}

impl ReviewModeName {
    pub fn parse(s: &str) -> Result<ReviewModeName, ApiError> {
        match ReviewMode::parse(s.trim()) {
            Some(m) => Ok(m.into()),
            None => Err(ApiError::invalid(format!("'{s}' is not a review mode. Use automatic, review or off."))),
        }
    }
}

impl From<ReviewMode> for ReviewModeName {
    fn from(m: ReviewMode) -> Self {
        match m {
            ReviewMode::Automatic => ReviewModeName::Automatic,
            ReviewMode::Review => ReviewModeName::Review,
            ReviewMode::Off => ReviewModeName::Off,
        }
    }
}

impl From<ReviewModeName> for ReviewMode {
    fn from(m: ReviewModeName) -> Self {
        match m {
            ReviewModeName::Automatic => ReviewMode::Automatic,
            ReviewModeName::Review => ReviewMode::Review,
            ReviewModeName::Off => ReviewMode::Off,
        }
    }
}

/// Where an item's memories can go instead of the private memory folder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "kebab-case")]
pub enum PromoteTo {
    /// Appended to the project's `CLAUDE.md` (checked in, shared).
    ClaudeMd,
    /// Appended to the project's `CLAUDE.local.md` (private).
    ClaudeLocal,
    /// Team memory (`<memory>/team/`), refused when it holds a secret.
    Team,
}

impl From<PromoteTo> for PromoteTarget {
    fn from(p: PromoteTo) -> Self {
        match p {
            PromoteTo::ClaudeMd => PromoteTarget::ClaudeMd,
            PromoteTo::ClaudeLocal => PromoteTarget::ClaudeLocal,
            PromoteTo::Team => PromoteTarget::Team,
        }
    }
}

impl From<PromoteTarget> for PromoteTo {
    fn from(p: PromoteTarget) -> Self {
        match p {
            PromoteTarget::ClaudeMd => PromoteTo::ClaudeMd,
            PromoteTarget::ClaudeLocal => PromoteTo::ClaudeLocal,
            PromoteTarget::Team => PromoteTo::Team,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum FileAction {
    New,
    Update,
    Remove,
}

/// One file an inbox item would write or remove.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct InboxFile {
    /// Relative to the memory folder.
    pub rel_path: String,
    pub path: PathBuf,
    pub action: FileAction,
    /// The index (`MEMORY.md`), which follows its memories.
    pub is_index: bool,
    /// On disk when the item was staged; `None` for a new file.
    pub before: Option<String>,
    /// What would be written; `None` when the file would go to the trash.
    pub after: Option<String>,
    /// From `before` to `after`.
    pub diff: crate::LineDiff,
    pub name: Option<String>,
    pub description: Option<String>,
    pub memory_type: Option<MemoryType>,
    /// Which run and tool calls made the change.
    pub reason: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum InboxState {
    Pending,
    Kept,
    Discarded,
    Promoted,
}

/// One staged extraction run.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct InboxItemView {
    pub id: String,
    pub created_ms: u64,
    pub created_at: String,
    /// What produced it (`extract_memories`, `extract_memories (offline)`, `auto_dream`).
    pub source: String,
    pub session_id: Option<String>,
    pub transcript: Option<PathBuf>,
    pub project_root: PathBuf,
    pub memory_dir: PathBuf,
    pub state: InboxState,
    /// When it was kept, discarded or promoted.
    pub decided_ms: Option<u64>,
    pub promoted_to: Option<PromoteTo>,
    /// The files a promotion wrote.
    pub promoted_paths: Vec<PathBuf>,
    /// The memories first, then the index.
    pub files: Vec<InboxFile>,
    /// Only on the answer to a decision: old decided items the inbox's retention prune could
    /// not delete. The decision itself went through; the next decision tries again. Left out
    /// when empty, as the CLI's JSON does.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_pruned: Vec<InboxNotPruned>,
}

/// A decided item's file (or the inbox folder) the retention prune could not delete.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct InboxNotPruned {
    pub path: PathBuf,
    /// The system's error, e.g. "Permission denied (os error 13)".
    pub error: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum RunResult {
    Saved,
    Staged,
    NothingToSave,
    Skipped,
    Disabled,
    Failed,
}

/// A statement the offline extractor did not save, and the rule that says why.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct NotSaved {
    pub sentence: String,
    pub rule: String,
}

/// A tool call the extraction agent was refused, with Claude Code's message.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct Refusal {
    pub tool: String,
    pub message: String,
}

/// The oldest messages since the last extraction that a run did not read: the session's
/// transcript holds more than one run holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct LeftOutMessages {
    /// How many of the user's and Claude's messages were not read.
    pub messages: usize,
    /// The most of a transcript's entries one run holds, in bytes.
    pub limit_bytes: u64,
    /// The same in a sentence, with why ("3 older messages were not read: a run holds only the
    /// newest 32 MiB …").
    pub text: String,
}

/// One extraction run, as the run log holds it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct ExtractionRun {
    pub id: String,
    pub started_ms: u64,
    pub started_at: String,
    /// `turnEnd`, `trailing` or `requested`.
    pub trigger: String,
    /// `offline`, or the provider kind.
    pub engine: String,
    pub model: Option<String>,
    pub transcript: PathBuf,
    pub result: RunResult,
    /// What happened, in a sentence ("Saved 2 memories", "Skipped: …", "Failed: …").
    pub summary: String,
    /// Claude Code's own line and files (`● Saved 2 memories` …), when memories were written.
    pub message: Option<String>,
    /// Base names of the memories written or staged.
    pub memory_files: Vec<String>,
    pub inbox_id: Option<String>,
    pub not_saved: Vec<NotSaved>,
    pub refused: Vec<Refusal>,
    /// Messages the run did not read, when the conversation since the last extraction was
    /// longer than a run holds; `null` when it read them all.
    pub left_out: Option<LeftOutMessages>,
}

/// A session transcript extraction can run over.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TranscriptInfo {
    pub path: PathBuf,
    pub modified_ms: i64,
    pub bytes: u64,
}

/// The inbox of one project.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct InboxView {
    pub project_root: PathBuf,
    pub memory_dir: PathBuf,
    pub mode: ReviewModeName,
    /// Extraction runs only where Claude Code's auto memory is on.
    pub auto_memory_enabled: bool,
    pub auto_memory_reason: String,
    /// Waiting for a decision, newest first.
    pub pending: Vec<InboxItemView>,
    /// The newest decided items (kept, discarded, promoted), newest first.
    pub decided: Vec<InboxItemView>,
    /// The newest extraction runs, newest first.
    pub runs: Vec<ExtractionRun>,
    /// The project's newest session transcript, which "run extraction now" reads.
    pub newest_transcript: Option<TranscriptInfo>,
    /// Inbox item files that are damaged (not valid JSON), which no list can show and which
    /// belong to no project anyone can tell: each names the file and says to delete it.
    pub damaged: Vec<String>,
}

/// What [`Mneme::run_extraction`] did.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct ExtractionReport {
    pub transcript: PathBuf,
    pub runs: Vec<ExtractionRun>,
}

const DECIDED_SHOWN: usize = 20;
const RUNS_SHOWN: usize = 10;

impl From<InboxError> for ApiError {
    fn from(e: InboxError) -> Self {
        let code = match &e {
            InboxError::NotFound(_) => ErrorCode::NotFound,
            InboxError::NotPending { .. } | InboxError::Changed { .. } => ErrorCode::Conflict,
            InboxError::NotInItem { .. } | InboxError::NothingToPromote(_) => ErrorCode::InvalidInput,
            InboxError::Secret(_) | InboxError::SecretInClaudeMd { .. } | InboxError::SecretInClaudeLocal { .. } => ErrorCode::SecretsRefused,
            InboxError::TeamExists { .. } => ErrorCode::AlreadyExists,
            InboxError::TeamNameClash { .. } => ErrorCode::InvalidInput,
            InboxError::LinkLeadsOut { .. } => ErrorCode::InvalidInput,
            InboxError::Damaged { .. } => ErrorCode::Malformed,
            InboxError::Memdir(m) => crate::memories::code_for(m),
            InboxError::Apply(mneme_agent::ApplyError::Changed { .. }) => ErrorCode::Conflict,
            // The disk's refusal of one of Mneme's own files (the inbox folder full or
            // read-only) has its own code, as everywhere else; its words are the engine's.
            InboxError::Io { source, .. } => ErrorCode::for_io(source),
            InboxError::Apply(_) => ErrorCode::Io,
        };
        let command = match &e {
            InboxError::Memdir(m) => m.command(),
            _ => None,
        };
        // The engine's words name `mneme inbox` commands (the command line prints them, through
        // `records`); on a screen the Inbox's own list and Edit button do the same.
        let message = match &e {
            InboxError::NotFound(id) => {
                format!("There is no inbox item {id} now: it was kept, discarded or cleared meanwhile. The Inbox lists the items that are left.")
            }
            InboxError::Changed { path } => format!(
                "{} changed since this item was staged (Claude Code may have written it). Nothing was written. Look at the file as it is now, then use Edit on this item to give the text you want (it replaces the current file), or discard the item.",
                path.display()
            ),
            _ => e.to_string(),
        };
        ApiError::new(code, message).with_command(command)
    }
}

impl From<ExtractError> for ApiError {
    fn from(e: ExtractError) -> Self {
        match e {
            ExtractError::Inbox(i) => i.into(),
            // The engine's words ask the command line for another transcript; a screen runs on
            // the project's newest session, which may not hold a message yet.
            ExtractError::NoConversation { ref path, left_out: 0, .. } => ApiError::invalid(format!(
                "{} holds no conversation yet (no message from you or from Claude), so there is nothing to extract from it. Run extraction again once the session has some.",
                path.display()
            )),
            ExtractError::NoConversation { .. } | ExtractError::NoCwd { .. } | ExtractError::ForeignCwd { .. } => ApiError::invalid(e.to_string()),
            ExtractError::Read { ref source, .. }
            | ExtractError::State { ref source, .. }
            | ExtractError::SessionMemory(SessionMemoryError::Setup { ref source, .. } | SessionMemoryError::Notes { ref source, .. }) => {
                ApiError::new(ErrorCode::for_io(source), e.to_string())
            }
            ExtractError::SessionMemory(_) => ApiError::new(ErrorCode::Io, e.to_string()),
            ExtractError::DriveNotAnswering { .. } => ApiError::new(ErrorCode::Unavailable, e.to_string()),
        }
    }
}

fn state_io(what: &str, e: std::io::Error) -> ApiError {
    // One project's review mode that this build cannot read: the engine's words name the
    // `mneme inbox mode` command (the command line prints them, through `records`); the Inbox
    // keeps its mode chooser when this is its error (code malformed), and choosing a mode
    // replaces this project's entry only.
    if let Some(m) = e.get_ref().and_then(|inner| inner.downcast_ref::<mneme_extract::record::UnreadableMode>()) {
        // A mode a newer Mneme added already says to update Mneme; a malformed one does not.
        let choose = if m.reason.contains("update Mneme") { "Or choose" } else { "Choose" };
        return ApiError::new(
            ErrorCode::Malformed,
            format!(
                "The review mode of {} in {} cannot be read: {}. {choose} the mode again on this screen: that replaces this project's entry. The other projects' modes are not affected.",
                m.memory_dir.display(),
                m.path.display(),
                m.reason
            ),
        );
    }
    // A damaged state file's error already names the file and says to fix or delete it;
    // "check that the folder is writable" would send the person to the wrong place. A write
    // the disk refused is worded by the engine too (the file, the disk, what to do), and has
    // its own code.
    if e.kind() == std::io::ErrorKind::InvalidData {
        return ApiError::new(ErrorCode::Io, e.to_string());
    }
    if let Some(r) = mneme_store::atomic::Refusal::of(&e).filter(|_| !what.starts_with("read")) {
        return ApiError::new(r.into(), e.to_string());
    }
    ApiError::new(ErrorCode::Io, format!("Could not {what} in Mneme's data folder ({e}); check that it is readable and writable."))
}

fn item_view(i: InboxItem) -> InboxItemView {
    let root = i.changeset.root.clone();
    let by_rel: std::collections::HashMap<&str, &mneme_extract::Proposal> =
        i.proposals.iter().map(|p| (p.rel_path.as_str(), p)).collect();
    let mut files: Vec<InboxFile> = i
        .changeset
        .changes
        .iter()
        .map(|c| {
            let rel = c.path.strip_prefix(&root).map(|r| r.to_string_lossy().replace('\\', "/")).unwrap_or_else(|_| c.path.to_string_lossy().into_owned());
            let proposal = by_rel.get(rel.as_str());
            InboxFile {
                is_index: proposal.is_none() && rel.rsplit('/').next() == Some("MEMORY.md"),
                action: match (&c.before, &c.after) {
                    (None, _) => FileAction::New,
                    (Some(_), Some(_)) => FileAction::Update,
                    (Some(_), None) => FileAction::Remove,
                },
                name: proposal.and_then(|p| p.name.clone()),
                description: proposal.and_then(|p| p.description.clone()),
                memory_type: proposal.and_then(|p| p.memory_type),
                rel_path: rel,
                path: c.path.clone(),
                diff: crate::line_diff(c.before.as_deref().unwrap_or_default(), c.after.as_deref().unwrap_or_default()),
                before: c.before.clone(),
                after: c.after.clone(),
                reason: c.reason.clone(),
            }
        })
        .collect();
    files.sort_by_key(|f| f.is_index);
    let (state, decided_ms, promoted_to, promoted_paths) = match i.status {
        ItemStatus::Pending => (InboxState::Pending, None, None, Vec::new()),
        ItemStatus::Kept { at_ms } => (InboxState::Kept, Some(at_ms), None, Vec::new()),
        ItemStatus::Discarded { at_ms } => (InboxState::Discarded, Some(at_ms), None, Vec::new()),
        ItemStatus::Promoted { at_ms, to, paths } => (InboxState::Promoted, Some(at_ms), Some(to.into()), paths),
    };
    InboxItemView {
        id: i.id,
        created_ms: i.created_ms,
        created_at: i.created_at,
        source: i.source,
        session_id: i.session_id,
        transcript: i.transcript,
        project_root: i.project_root,
        memory_dir: i.memory_dir,
        state,
        decided_ms,
        promoted_to,
        promoted_paths,
        files,
        not_pruned: i.not_pruned.into_iter().map(|n| InboxNotPruned { path: n.path, error: n.error }).collect(),
    }
}

fn plural(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn run_view(r: RunRecord) -> ExtractionRun {
    let base = |p: &PathBuf| p.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let staged_files: Vec<String> = r
        .changeset
        .as_ref()
        .map(|c| c.changes.iter().map(|f| base(&f.path)).filter(|n| n != "MEMORY.md").collect())
        .unwrap_or_default();
    let (result, summary, inbox_id, memory_files) = match &r.outcome {
        RunOutcome::Saved => {
            let first = r.message.as_deref().and_then(|m| m.lines().next()).map(|l| l.trim_start_matches(['●', ' ']).to_string());
            let files: Vec<String> = r.memory_paths.iter().map(base).collect();
            // A record without its line (written before runs named what they removed): a run
            // that only removed memories must not read as one that saved something.
            let removed = r
                .changeset
                .as_ref()
                .map_or(0, |c| c.changes.iter().filter(|f| f.after.is_none() && base(&f.path) != "MEMORY.md").count());
            let summary = first.unwrap_or_else(|| match (files.len(), removed) {
                (0, n) if n > 0 => format!("Removed {}", plural(n, "memory", "memories")),
                _ => "Saved changes to the memory folder".to_string(),
            });
            (RunResult::Saved, summary, None, files)
        }
        RunOutcome::Staged { inbox_id } => {
            let summary = format!("{} waiting for review in the inbox", plural(staged_files.len(), "memory", "memories"));
            (RunResult::Staged, summary, Some(inbox_id.clone()), staged_files.clone())
        }
        RunOutcome::NothingToSave => (RunResult::NothingToSave, "Nothing worth saving".to_string(), None, Vec::new()),
        RunOutcome::Skipped { reason } => {
            let why = match reason {
                SkipReason::DirectWrite => "the session already wrote memory itself since the last extraction",
                SkipReason::NoProse => "no new message from the user since the last extraction",
                SkipReason::Throttled => "waiting for more turns (extraction runs every N turns)",
                SkipReason::Stashed => "an extraction was already running; this turn went into its trailing run",
            };
            (RunResult::Skipped, format!("Skipped: {why}"), None, Vec::new())
        }
        RunOutcome::Disabled { why } => (RunResult::Disabled, format!("Not run: {why}"), None, Vec::new()),
        RunOutcome::Failed { error } => (
            RunResult::Failed,
            format!("Failed: {error}. Nothing was written; the same messages are offered again next time."),
            None,
            Vec::new(),
        ),
    };
    ExtractionRun {
        id: r.id,
        started_ms: r.started_ms,
        started_at: r.started_at,
        trigger: serde_json::to_value(r.about.trigger).ok().and_then(|v| v.as_str().map(str::to_string)).unwrap_or_default(),
        engine: r.about.engine,
        model: r.about.model,
        transcript: r.about.transcript,
        result,
        summary,
        message: r.message,
        memory_files,
        inbox_id,
        not_saved: r
            .decisions
            .into_iter()
            .filter_map(|d| match d {
                Decision::Rejected { sentence, reason } => Some(NotSaved { sentence, rule: reason.rule().to_string() }),
                _ => None,
            })
            .collect(),
        refused: r.denials.into_iter().map(|d| Refusal { tool: d.tool, message: d.message }).collect(),
        left_out: r.left_out.map(|l| LeftOutMessages { messages: l.messages, limit_bytes: l.limit_bytes, text: l.to_string() }),
    }
}

impl Mneme {
    fn extractor(&self) -> Extractor {
        Extractor::new(self.env.clone(), self.clock.clone())
    }

    /// The inbox item files that are damaged (not valid JSON), which no list shows: each one's
    /// message names the file and says to delete it.
    pub fn damaged_inbox_items(&self) -> Result<Vec<String>, ApiError> {
        Ok(self.extractor().inbox().damaged()?.into_iter().map(|e| e.to_string()).collect())
    }

    /// The project's inbox: its review mode, what waits for a decision, what was decided
    /// lately, the recent extraction runs and the newest session transcript.
    pub fn inbox(&self, req: &ContextRequest) -> Result<InboxView, ApiError> {
        let r = self.resolve(req)?;
        let x = self.extractor();
        let mode = x.mode(&r.memdir).map_err(|e| state_io("read the review mode", e))?;
        let all = x.inbox().list(Some(&r.memdir), true)?;
        let (pending, decided): (Vec<InboxItem>, Vec<InboxItem>) = all.into_iter().partition(|i| i.status == ItemStatus::Pending);
        let mut decided = decided;
        decided.sort_by_key(|i| std::cmp::Reverse(decided_at(i)));
        decided.truncate(DECIDED_SHOWN);
        let runs = x.recent_runs(&r.memdir, RUNS_SHOWN).map_err(|e| state_io("read the extraction runs", e))?;
        Ok(InboxView {
            project_root: r.cwd.clone(),
            memory_dir: r.memdir.clone(),
            mode: mode.into(),
            auto_memory_enabled: r.auto_memory.enabled,
            auto_memory_reason: r.auto_memory.reason.clone(),
            pending: pending.into_iter().map(item_view).collect(),
            decided: decided.into_iter().map(item_view).collect(),
            runs: runs.into_iter().map(run_view).collect(),
            newest_transcript: newest_transcript(&self.env, &r.cwd),
            damaged: x.inbox().damaged()?.into_iter().map(|e| e.to_string()).collect(),
        })
    }

    /// Sets what happens to what extraction finds in the project.
    pub fn set_review_mode(&self, req: &ContextRequest, mode: ReviewModeName) -> Result<InboxView, ApiError> {
        let r = self.resolve(req)?;
        self.extractor().set_mode(&r.memdir, mode.into()).map_err(|e| state_io("save the review mode", e))?;
        self.inbox(req)
    }

    /// Writes the item to the memory folder, every memory with its index line, or nothing.
    pub fn inbox_keep(&self, id: &str) -> Result<InboxItemView, ApiError> {
        Ok(item_view(self.extractor().inbox().keep(id)?))
    }

    /// Replaces the proposed content of one file of the item (`file`: its path in the memory
    /// folder or its name); with `keep`, then writes the item.
    pub fn inbox_edit(&self, id: &str, file: &str, content: &str, keep: bool) -> Result<InboxItemView, ApiError> {
        let inbox = self.extractor().inbox();
        let item = if keep { inbox.edit_and_keep(id, file, content.to_string())? } else { inbox.edit(id, file, content.to_string())? };
        Ok(item_view(item))
    }

    /// Drops the item; nothing is written and it stays in the history.
    pub fn inbox_discard(&self, id: &str) -> Result<InboxItemView, ApiError> {
        Ok(item_view(self.extractor().inbox().discard(id)?))
    }

    /// Sends the item's memories to `CLAUDE.md`, `CLAUDE.local.md` or team memory instead.
    pub fn inbox_promote(&self, id: &str, to: PromoteTo) -> Result<InboxItemView, ApiError> {
        Ok(item_view(self.extractor().inbox().promote(id, to.into())?))
    }

    /// Runs extraction now over the project's newest session transcript, from where the last
    /// extraction of that session stopped, by `provider` (`None`: offline). The project's mode
    /// decides whether the result is written or staged.
    pub fn run_extraction(&self, req: &ContextRequest, provider: Option<ProviderChoice>) -> Result<ExtractionReport, ApiError> {
        let r = self.resolve(req)?;
        let transcript = newest_transcript(&self.env, &r.cwd).ok_or_else(|| {
            ApiError::not_found(format!(
                "There is no Claude Code session transcript for {} yet ({} holds no .jsonl). Transcripts appear once Claude Code has run in this folder.",
                r.cwd.display(),
                mneme_store::paths::transcript_dir(&self.env, &r.cwd).display()
            ))
        })?;
        let model = match provider.unwrap_or(ProviderChoice::Offline) {
            ProviderChoice::Offline => None,
            choice => {
                let saved = ProviderSettings::load(&self.env)?;
                Some(self.model_provider(&saved, choice).map_err(|e| ApiError::invalid(e.to_string()))?)
            }
        };
        let x = self.extractor();
        let cancel = Cancel::new();
        let path = transcript.path.clone();
        let records = crate::block_on(async {
            let engine = match &model {
                Some(p) => Engine::Model(p.as_ref()),
                None => Engine::Offline,
            };
            x.extract_transcript(&path, engine, ExtractOptions::default(), &cancel).await
        })??;
        Ok(ExtractionReport { transcript: transcript.path, runs: records.into_iter().map(run_view).collect() })
    }

    /// A model provider for `choice` (see [`Mneme::settings_for`]).
    pub(crate) fn model_provider(&self, saved: &ProviderSettings, choice: ProviderChoice) -> Result<Arc<dyn Provider>, mneme_model::ModelError> {
        build_provider(&Mneme::settings_for(saved, choice), &self.env, &self.keychain())
    }
}

fn decided_at(i: &InboxItem) -> u64 {
    match &i.status {
        ItemStatus::Pending => i.created_ms,
        ItemStatus::Kept { at_ms } | ItemStatus::Discarded { at_ms } | ItemStatus::Promoted { at_ms, .. } => *at_ms,
    }
}

/// The newest `.jsonl` directly in the project's transcript folders (sub-agent transcripts live
/// deeper and are not sessions of their own).
fn newest_transcript(env: &mneme_store::Environment, cwd: &Path) -> Option<TranscriptInfo> {
    let mut best: Option<TranscriptInfo> = None;
    for dir in mneme_store::paths::find_project_dirs(env, cwd) {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = e.path();
            if path.extension().is_none_or(|x| x != "jsonl") {
                continue;
            }
            let Ok(meta) = e.metadata() else { continue };
            if !meta.is_file() {
                continue;
            }
            let modified_ms = meta
                .modified()
                .ok()
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
            if best.as_ref().is_none_or(|b| (modified_ms, &path) > (b.modified_ms, &b.path)) {
                best = Some(TranscriptInfo { path, modified_ms, bytes: meta.len() });
            }
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A transcript with no message in it: the engine's words ask the command line to pass
    /// another transcript; a screen (which runs on the project's newest session) says there is
    /// nothing to extract yet.
    #[test]
    fn a_session_without_conversation_on_a_screen_asks_for_no_transcript() {
        let e = || ExtractError::NoConversation { path: "/c/projects/-r/s.jsonl".into(), left_out: 0, limit: 1000 };
        assert!(e().to_string().contains("pass a Claude Code session transcript"), "the command line's words: {}", e());
        let shown = ApiError::from(e());
        assert_eq!(shown.code, ErrorCode::InvalidInput);
        assert_eq!(shown.message, "/c/projects/-r/s.jsonl holds no conversation yet (no message from you or from Claude), so there is nothing to extract from it. Run extraction again once the session has some.");
    }
}
