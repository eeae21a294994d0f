//! Auto dream for front ends (the Dreams screen): the gates of a project's memory folder as they
//! stand, its dream mode, "dream now" (offline or through a provider), the history with every
//! dream's changeset (each file before and after, with its one-line reason), approve / reject
//! for dreams held for review, one-step undo, KAIROS daily logs, and the background runs the
//! scheduler recorded. The dreaming itself is `mneme-dream`'s; this module only shapes it.

use crate::providers::ProviderChoice;
use crate::{ApiError, ContextRequest, ErrorCode, Mneme};
use mneme_core::text::iso_date as iso;
use mneme_core::Profile;
use mneme_dream::{CachedFlags, ClaudeCodeOffer, DreamSite};
use mneme_dream::{
    DreamError, DreamMode, DreamRecord, DreamStatus, DreamSummary, DreamTarget, Dreams, Enablement, Engine, FileChange,
    Gate, GateStatus, RunOptions, Trigger,
};
use mneme_model::{Cancel, ProviderSettings};
use mneme_scheduler::{JobKind, Outcome, RunJob, RunLog, RunRecord};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What happens to a project's dreams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum DreamModeName {
    /// Applied at once, as Claude Code does; every dream stays undoable.
    Automatic,
    /// Held until approved or rejected.
    Review,
    /// No automatic dreams; one started by hand is held for review.
    Off,
}

impl DreamModeName {
    pub fn parse(s: &str) -> Result<DreamModeName, ApiError> {
        DreamMode::parse(s)
            .map(Into::into)
            .ok_or_else(|| ApiError::invalid(format!("'{s}' is not a dream mode. Use automatic, review or off.")))
    }
}

impl From<DreamMode> for DreamModeName {
    fn from(m: DreamMode) -> Self {
        match m {
            DreamMode::Automatic => DreamModeName::Automatic,
            DreamMode::Review => DreamModeName::Review,
            DreamMode::Off => DreamModeName::Off,
        }
    }
}

impl From<DreamModeName> for DreamMode {
    fn from(m: DreamModeName) -> Self {
        match m {
            DreamModeName::Automatic => DreamMode::Automatic,
            DreamModeName::Review => DreamMode::Review,
            DreamModeName::Off => DreamMode::Off,
        }
    }
}

/// The gates in the order Claude Code checks them, cheapest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum DreamGate {
    /// Auto dream (or auto memory) is off.
    Enabled,
    /// Fewer than `minHours` since the last consolidation.
    Time,
    /// A transcript scan ran less than 10 minutes ago.
    Throttle,
    /// Fewer than `minSessions` sessions since the last consolidation.
    Sessions,
    /// Another dream (here or in Claude Code) holds `.consolidate-lock`.
    Lock,
    /// The release's last look, once it holds the lock (from 2.1.331): the folder's sessions
    /// ran under another organization, or for a limited-retention owner who is not the
    /// sign-in's, so it gives the lock back without dreaming (`organization` says which).
    Organization,
}

impl From<Gate> for DreamGate {
    fn from(g: Gate) -> Self {
        match g {
            Gate::Enabled => DreamGate::Enabled,
            Gate::Time => DreamGate::Time,
            Gate::Throttle => DreamGate::Throttle,
            Gate::Sessions => DreamGate::Sessions,
            Gate::Lock => DreamGate::Lock,
        }
    }
}

/// Why auto dream is off, when it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum DreamOffReason {
    /// `autoDreamEnabled` is false or unset (the user settings toggle turns it on).
    AutoDreamOff,
    /// Auto memory is off: there is nothing to consolidate.
    AutoMemoryOff,
    /// `CLAUDE_CODE_REMOTE` is set.
    Remote,
    /// KAIROS mode distils its logs with its own nightly dream.
    Kairos,
}

/// `.consolidate-lock` as it is now.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct DreamLock {
    pub path: PathBuf,
    pub exists: bool,
    /// The PID in the file, if it parses.
    pub holder_pid: Option<i64>,
    /// Whether that process is running.
    pub holder_alive: bool,
    /// Whether that process is this one (the app or `mneme serve` that answers): its dream
    /// finished, and the lock only records when.
    pub holder_is_this_process: bool,
    /// Whether it blocks a dream now (under 60 minutes old, its PID alive).
    pub held: bool,
    /// When it stops blocking even if its holder keeps running.
    pub stale_at_ms: Option<i64>,
}

/// What the release looks for in the folder's sessions before it dreams.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum DreamOrganizationChecks {
    /// Nothing: the release has no such look (it came in 2.1.331).
    None,
    /// Sessions of another organization (hybrid-organization records).
    Organizations,
    /// Those, and sessions of a limited-retention owner who is not the sign-in (2.1.337, with
    /// its server flag on).
    OrganizationsAndOwners,
}

impl From<mneme_dream::organization::Checks> for DreamOrganizationChecks {
    fn from(c: mneme_dream::organization::Checks) -> Self {
        use mneme_dream::organization::Checks;
        match c {
            Checks::None => DreamOrganizationChecks::None,
            Checks::Organizations => DreamOrganizationChecks::Organizations,
            Checks::OrganizationsAndOwners => DreamOrganizationChecks::OrganizationsAndOwners,
        }
    }
}

impl DreamOrganizationChecks {
    /// The sentence for a folder where the look found nothing to skip for.
    pub fn clear_note(self) -> &'static str {
        match self {
            DreamOrganizationChecks::None => "not checked: this Claude Code release does not look at the organizations sessions ran under (2.1.331 and later do)",
            DreamOrganizationChecks::Organizations => "no session here ran under another organization",
            DreamOrganizationChecks::OrganizationsAndOwners => "no session here ran under another organization or for a limited-retention owner who is not you",
        }
    }
}

/// Why Claude Code (and so Mneme's background dreams) skips this folder for the organizations
/// its sessions ran under: the scheduler's own reason, which it otherwise says only in the run
/// log.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct DreamOrganizationSkip {
    /// Claude Code's name for the reason in its debug log: `other_hybrid_organization`,
    /// `other_retention_organization` or `hybrid_organization_check_failed`.
    pub code: String,
    /// The organization the sessions ran under; `None` when they ran under several, for an
    /// owner without one, or the search failed.
    pub organization: Option<String>,
    /// The limited-retention owner's account (`other_retention_organization`).
    pub account: Option<String>,
    /// Which sessions, why they are skipped and what to do, in a sentence.
    pub explanation: String,
}

impl From<mneme_dream::organization::OrganizationSkip> for DreamOrganizationSkip {
    fn from(skip: mneme_dream::organization::OrganizationSkip) -> Self {
        use mneme_dream::organization::{Found, OrganizationSkip};
        let (organization, account) = match &skip {
            OrganizationSkip::OtherHybridOrganization { found: Found::One(org) } => (Some(org.clone()), None),
            OrganizationSkip::OtherRetentionOrganization { owner } => (owner.organization_uuid.clone(), Some(owner.account_uuid.clone())),
            OrganizationSkip::OtherHybridOrganization { found: Found::Several } | OrganizationSkip::SearchFailed { .. } => (None, None),
        };
        DreamOrganizationSkip {
            code: skip.code().to_string(),
            organization,
            account,
            explanation: format!("{} Mneme's background dreams skip this folder too.", sentence(skip.explanation())),
        }
    }
}

/// The gates of one project's memory folder, and what the Dreams screen says about them.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct DreamGates {
    pub project_root: PathBuf,
    pub memory_dir: PathBuf,
    /// Where the sessions counted by the session gate keep their transcripts.
    pub transcript_dir: PathBuf,
    pub mode: DreamModeName,
    /// Gate 0: `autoDreamEnabled` and auto memory.
    pub enabled: bool,
    pub off_reason: Option<DreamOffReason>,
    /// Why it is on or off, in a sentence.
    pub enabled_explanation: String,
    /// The settings source that set `autoDreamEnabled` to false, when one did.
    pub auto_dream_source: Option<String>,
    /// Whether Claude Code itself dreams for this account at all (its server flag offers
    /// auto dream), whatever the setting says; `None` when Mneme cannot tell. Mneme's own
    /// background dreams follow the setting.
    pub claude_code_offers: Option<bool>,
    /// Why Claude Code does not dream here, or why that cannot be told; `None` when it does.
    pub offer_note: Option<String>,
    /// The lock file's mtime: when this folder was last consolidated (`None`: never).
    pub last_consolidated_ms: Option<i64>,
    pub hours_since: Option<f64>,
    pub min_hours: f64,
    pub sessions_since: usize,
    pub session_ids: Vec<String>,
    pub min_sessions: usize,
    pub lock: DreamLock,
    pub throttled_until_ms: Option<i64>,
    /// When the time, throttle and lock gates all allow a dream; the session gate may still
    /// wait for more sessions.
    pub next_eligible_ms: i64,
    /// Whether the release this status is seen for skips the folder, once every other gate
    /// is open, for the organizations its sessions ran under; `None` when it does not (or the
    /// release has no such check).
    pub organization: Option<DreamOrganizationSkip>,
    /// What that look covers for this release and its server flag, so "no session ran under
    /// another organization" is said only where it was looked for.
    pub organization_checks: DreamOrganizationChecks,
    /// The first gate that blocks; `None` when an automatic dream would start now.
    pub blocked_by: Option<DreamGate>,
    /// What blocks, in a sentence.
    pub blocked_explanation: String,
    /// Dreams waiting for approval.
    pub pending: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum DreamTrigger {
    /// Started by hand (the Dreams screen, `mneme dream run`).
    Manual,
    /// Started by the scheduler when the gates opened.
    Auto,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum DreamState {
    /// Waiting for review: nothing written yet.
    Pending,
    /// Written (or there was nothing to write).
    Applied,
    /// Turned down: nothing written.
    Rejected,
    /// Applied, then undone.
    Undone,
    /// Did not finish: nothing written, the lock rolled back.
    Failed,
}

impl From<DreamStatus> for DreamState {
    fn from(s: DreamStatus) -> Self {
        match s {
            DreamStatus::Pending => DreamState::Pending,
            DreamStatus::Applied => DreamState::Applied,
            DreamStatus::Rejected => DreamState::Rejected,
            DreamStatus::Undone => DreamState::Undone,
            DreamStatus::Failed => DreamState::Failed,
            // Cut short while writing: shown as applied (its note says so), so it can be undone.
            DreamStatus::Applying => DreamState::Applied,
        }
    }
}

fn trigger(t: Trigger) -> DreamTrigger {
    match t {
        Trigger::Manual => DreamTrigger::Manual,
        Trigger::Auto => DreamTrigger::Auto,
    }
}

/// One line of the history.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct DreamListItem {
    pub id: String,
    pub created_ms: i64,
    pub trigger: DreamTrigger,
    /// `offline`, `anthropic`, `openai` or `claude-cli`.
    pub provider: String,
    pub model: Option<String>,
    pub state: DreamState,
    /// The first line of the dream's summary.
    pub headline: String,
    pub sessions: usize,
    pub added: usize,
    pub changed: usize,
    pub removed: usize,
    /// Lines it removes that would be found nowhere afterwards: why it waits for review.
    pub lost: usize,
    pub error: Option<String>,
    pub applied_ms: Option<i64>,
    pub undone_ms: Option<i64>,
}

impl From<DreamSummary> for DreamListItem {
    fn from(s: DreamSummary) -> Self {
        DreamListItem {
            id: s.id,
            created_ms: s.created_at_ms,
            trigger: trigger(s.trigger),
            provider: s.provider,
            model: s.model,
            state: s.status.into(),
            headline: s.headline,
            sessions: s.sessions,
            added: s.added,
            changed: s.changed,
            removed: s.removed,
            lost: s.lost,
            error: s.error,
            applied_ms: s.applied_at_ms,
            undone_ms: s.undone_at_ms,
        }
    }
}

/// The dreams of one memory folder, newest first.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct DreamHistory {
    pub memory_dir: PathBuf,
    pub dreams: Vec<DreamListItem>,
    /// Records that could not be read, each with what to do.
    pub damaged: Vec<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum DreamFileAction {
    Added,
    Changed,
    /// Removed because its content went into another memory (`mergedInto`).
    Merged,
    /// Moved to Mneme's trash.
    Removed,
}

/// One file a dream adds, changes, merges away or removes.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct DreamFile {
    /// Relative to the memory folder.
    pub rel_path: String,
    pub path: PathBuf,
    pub action: DreamFileAction,
    /// The memory a merged file went into.
    pub merged_into: Option<String>,
    /// The index (`MEMORY.md`).
    pub is_index: bool,
    /// Before the dream; `None` for a new file.
    pub before: Option<String>,
    /// After it; `None` for a file moved to the trash.
    pub after: Option<String>,
    /// From `before` to `after`.
    pub diff: crate::LineDiff,
    /// Why, in a line.
    pub reason: String,
    /// In what an undo replaced: the file was not UTF-8 text, so `before` shows U+FFFD where
    /// its bytes do not decode and is not what it held; its exact bytes are in Mneme's trash.
    pub kept_bytes: Option<DreamKeptBytes>,
}

/// The exact bytes of a file a forced undo replaced that was not UTF-8 text (an editor saved it
/// in another encoding), kept in Mneme's trash as they were.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct DreamKeptBytes {
    /// The trash entry holding them (Memories → Trash, `mneme memories restore <id>`).
    pub trash_id: String,
    /// How many bytes the file held.
    pub size: u64,
    /// Where they are and how to put them back, in a sentence.
    pub note: String,
}

impl DreamKeptBytes {
    fn of(kept: &mneme_dream::history::KeptBytes, rel: &str) -> DreamKeptBytes {
        let (id, size) = (&kept.trash_id, kept.bytes.len());
        DreamKeptBytes {
            trash_id: id.clone(),
            size: size as u64,
            note: format!(
                "{rel} was not UTF-8 text when the undo replaced it, so its text cannot be shown as it was. Its exact {size} bytes are kept in Mneme's trash as entry {id}: to put them back, rename {rel} or move it to the trash, then restore {id} from Memories → Trash."
            ),
        }
    }
}

/// One line a dream takes out of a file, and where its text is afterwards: the "what moved
/// where" report, and the safety net's verdict on it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct DreamMove {
    /// The file it left, relative to the memory folder.
    pub from: String,
    /// The line as it was.
    pub text: String,
    /// The whole file went to the trash.
    pub file_removed: bool,
    /// Where its text is after the dream (relative paths), most telling first.
    pub found_in: Vec<String>,
    /// Found nowhere after the dream: applying would lose it.
    pub lost: bool,
    /// The parts of the line found nowhere (a link's title or hook, or the whole line).
    pub missing: Vec<String>,
    /// Why the dream says the line duplicates or rewrites text it keeps.
    pub duplicate: Option<String>,
}

/// A tool call the memory policy refused a model-driven dream, with Claude Code's message.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct DreamRefusal {
    pub tool: String,
    pub message: String,
}

/// A file an apply moved to the trash, with the trash entry that restores it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct DreamTrashed {
    pub path: PathBuf,
    pub trash_id: String,
}

/// One dream with its whole changeset.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct DreamView {
    #[serde(flatten)]
    pub item: DreamListItem,
    pub memory_dir: PathBuf,
    /// The whole closing summary.
    pub summary: String,
    /// Remarks that are not changes (links a merge left dangling…).
    pub notes: Vec<String>,
    /// The sessions it was told about.
    pub session_ids: Vec<String>,
    /// Memories first, then the index.
    pub files: Vec<DreamFile>,
    /// Every line the dream takes out of a file and where it went, lost lines first.
    pub moved: Vec<DreamMove>,
    pub refused: Vec<DreamRefusal>,
    /// Model turns (0 for the offline dream).
    pub turns: u32,
    pub trashed: Vec<DreamTrashed>,
    pub rejected_ms: Option<i64>,
    /// What an undo replaced: files that had changed since the dream, with the text that was
    /// on disk just before a forced undo (kept so nothing is lost).
    pub undo_replaced: Vec<DreamFile>,
}

/// A KAIROS daily log of a memory folder.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct DailyLog {
    /// `YYYY-MM-DD`, local time.
    pub date: String,
    pub path: PathBuf,
    /// Relative to the memory folder (`logs/YYYY/MM/YYYY-MM-DD.md`).
    pub rel_path: String,
    /// `None` when there is no log for that day yet.
    pub text: Option<String>,
    /// Every day with a log, newest first (at most [`LOG_DAYS_SHOWN`]).
    pub days: Vec<String>,
}

/// How many days with a log are listed.
pub const LOG_DAYS_SHOWN: usize = 30;

/// A background job.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "kebab-case")]
pub enum JobName {
    Extraction,
    Dream,
    TeamSync,
    ClaudeCodeCheck,
}

impl From<JobKind> for JobName {
    fn from(j: JobKind) -> Self {
        match j {
            JobKind::Extraction => JobName::Extraction,
            JobKind::Dream => JobName::Dream,
            JobKind::TeamSync => JobName::TeamSync,
            JobKind::ClaudeCodeCheck => JobName::ClaudeCodeCheck,
        }
    }
}

impl From<JobName> for JobKind {
    fn from(j: JobName) -> Self {
        match j {
            JobName::Extraction => JobKind::Extraction,
            JobName::Dream => JobKind::Dream,
            JobName::TeamSync => JobKind::TeamSync,
            JobName::ClaudeCodeCheck => JobKind::ClaudeCodeCheck,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum RunOutcome {
    Done,
    /// A gate said no; nothing was attempted.
    Skipped,
    Failed,
    Cancelled,
    /// An outcome a newer Mneme recorded (the run log is shared by every build on the
    /// machine): `newer_outcome` names it.
    Newer,
}

/// One run of the background scheduler (in the desktop app, `mneme serve --scheduler` or
/// `mneme daemon`), from the run log they share.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct BackgroundRun {
    pub id: String,
    /// `None` for a run of a job a newer Mneme added (the run log is shared by every build on
    /// the machine): `newer_job` names it.
    pub job: Option<JobName>,
    /// The name the run log gives a job this Mneme does not know; `None` when `job` is set.
    pub newer_job: Option<String>,
    /// What it was for: a memory folder, a transcript, a repository.
    pub target: String,
    pub started_ms: u64,
    pub finished_ms: u64,
    pub outcome: RunOutcome,
    /// The name the run log gives an outcome this Mneme does not know (`outcome` is `newer`);
    /// `None` otherwise.
    pub newer_outcome: Option<String>,
    /// What happened, in a sentence ("Saved 2 memories", the reason it was skipped, the error).
    pub summary: String,
}

impl From<RunRecord> for BackgroundRun {
    fn from(r: RunRecord) -> Self {
        let newer_outcome = r.outcome.newer().map(str::to_string);
        let (outcome, summary) = match r.outcome {
            Outcome::Done { summary } => (RunOutcome::Done, summary),
            Outcome::Skipped { reason } => (RunOutcome::Skipped, reason),
            Outcome::Failed { error } => (RunOutcome::Failed, error),
            Outcome::Cancelled => (RunOutcome::Cancelled, "Cancelled: the scheduler stopped while it ran.".into()),
            // The name goes in `newer_outcome`; what else the newer build recorded is not read.
            Outcome::Newer { .. } => (RunOutcome::Newer, "A newer Mneme recorded how this run ended; update Mneme to read what it says.".into()),
        };
        let (job, newer_job) = match r.job {
            RunJob::Known(kind) => (Some(kind.into()), None),
            RunJob::Newer(name) => (None, Some(name)),
        };
        BackgroundRun {
            id: r.id,
            job,
            newer_job,
            target: r.target,
            started_ms: r.started_ms,
            finished_ms: r.finished_ms,
            outcome,
            newer_outcome,
            summary,
        }
    }
}

/// What the background scheduler announces while it works, for a live display ("Dreaming…",
/// then "Saved 2 memories").
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum SchedulerEvent {
    #[serde(rename_all = "camelCase")]
    Started { id: String, job: JobName, target: String },
    #[serde(rename_all = "camelCase")]
    Progress { id: String, job: JobName, message: String },
    #[serde(rename_all = "camelCase")]
    Finished { run: BackgroundRun },
}

impl From<mneme_scheduler::Event> for SchedulerEvent {
    fn from(e: mneme_scheduler::Event) -> Self {
        match e {
            mneme_scheduler::Event::Started { id, job, target } => SchedulerEvent::Started { id, job: job.into(), target },
            mneme_scheduler::Event::Progress { id, job, message } => SchedulerEvent::Progress { id, job: job.into(), message },
            mneme_scheduler::Event::Finished { record } => SchedulerEvent::Finished { run: record.into() },
        }
    }
}

/// The dream crate speaks to a terminal in lower case; front ends show sentences.
fn sentence(text: String) -> String {
    let mut s = String::with_capacity(text.len() + 1);
    let mut chars = text.chars();
    if let Some(c) = chars.next() {
        s.extend(c.to_uppercase());
        s.push_str(chars.as_str());
    }
    if !s.ends_with(['.', '!', '?', ')']) {
        s.push('.');
    }
    s
}

impl From<DreamError> for ApiError {
    fn from(e: DreamError) -> Self {
        if let DreamError::Io { action, path, source } = &e {
            if let Some(refused) = ApiError::refused(source, action, path) {
                return refused;
            }
        }
        let code = match &e {
            DreamError::Apply(mneme_agent::ApplyError::Changed { .. }) => ErrorCode::Conflict,
            DreamError::Io { source, .. } => ErrorCode::for_io(source),
            DreamError::Apply(_) | DreamError::PartlyApplied { .. } | DreamError::UndoneInPart { .. } | DreamError::Cancelled => ErrorCode::Io,
            DreamError::Memdir(m) => crate::memories::code_for(m),
            DreamError::Locked { .. } | DreamError::LostRace { .. } | DreamError::WrongStatus { .. } | DreamError::Conflict { .. } => {
                ErrorCode::Conflict
            }
            DreamError::NotFound { .. } | DreamError::OtherFolder { .. } | DreamError::NothingToUndo => ErrorCode::NotFound,
            DreamError::DamagedRecord { .. } | DreamError::DamagedMode { .. } => ErrorCode::Malformed,
            // A provider that could not be reached or refused: the dream is recorded as failed.
            DreamError::Agent(_) => ErrorCode::Unavailable,
            DreamError::Invalid(_) | DreamError::NotUtf8 { .. } => ErrorCode::InvalidInput,
        };
        let command = match &e {
            // The dream crate's sentence starts in lower case; `sentence` below capitalises it.
            DreamError::NotUtf8 { path, problem } => problem.fix(
                &format!("No dream ran: {} is not UTF-8 text, and a dream that rewrote it would replace the bytes it cannot read for good: ", path.display()),
                "run the dream again",
            ),
            DreamError::Memdir(m) => m.command(),
            _ => None,
        };
        let message = match e {
            DreamError::NotFound { id } => format!("There is no dream {id} for this memory folder; it may belong to another project."),
            // The dream crate's advice names the CLI flag; front ends offer "undo anyway".
            DreamError::Conflict { id, files, when: "was applied", .. } => format!(
                "{} changed since dream {id} was applied, so nothing was undone. Look at those files first; undoing anyway puts the dream's earlier versions back and keeps the newer text in the dream's record.",
                files.join(", ")
            ),
            // The dream crate's words for these name `mneme dream` commands (the command line
            // prints them, through `records`); on a screen the dream's own Undo button, the
            // mode chooser and the project picker do the same.
            DreamError::PartlyApplied { id, files, cause } => format!(
                "Dream {id} was written only in part ({cause}), and putting the memory folder back failed too: {} still hold its text. Open the dream and use Undo dream: it puts back every file it changed.",
                files.join(", ")
            ),
            DreamError::UndoneInPart { id, files } => format!(
                "Dream {id} was undone except for {}; their text before the dream is kept in the dream's record, under this dream.",
                files.join(", ")
            ),
            DreamError::DamagedMode { path, detail } => format!(
                "The dream mode file {} is damaged ({detail}), so this folder's dream mode cannot be read and a dream here waits for review. Fix the file or delete it (every folder that shares it goes back to Automatic, the default), then choose the mode again on this screen.",
                path.display()
            ),
            DreamError::OtherFolder { id, owner } => format!(
                "Dream {id} is a dream of the memory folder {}, not of this one (the two share a history folder, or the record was changed); open the project that uses that folder to see it.",
                owner.display()
            ),
            DreamError::DamagedRecord { path, detail, newer: false } => {
                format!("The dream record {} is damaged ({detail}), so Mneme cannot show, apply or undo that dream; move the file out of its folder.", path.display())
            }
            other => sentence(other.to_string()),
        };
        ApiError::new(code, message).with_command(command)
    }
}

fn rel_of(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).map(|r| r.to_string_lossy().replace('\\', "/")).unwrap_or_else(|_| path.to_string_lossy().into_owned())
}

/// The changes as the screen lists them: memories first, the index last. A removed file is
/// "merged" when another file of the same dream says it took that file in (the offline dream's
/// reason, `merged the duplicate <rel> into it`).
fn files_of(root: &Path, changes: &[FileChange]) -> Vec<DreamFile> {
    let rels: Vec<String> = changes.iter().map(|c| rel_of(root, &c.path)).collect();
    let mut files: Vec<DreamFile> = changes
        .iter()
        .zip(&rels)
        .map(|(c, rel)| {
            let merged_into = if c.after.is_none() {
                let marker = format!("merged the duplicate {rel} into it");
                changes.iter().zip(&rels).find(|(o, _)| o.after.is_some() && o.reason.contains(&marker)).map(|(_, r)| r.clone())
            } else {
                None
            };
            let action = match (&c.before, &c.after) {
                (None, _) => DreamFileAction::Added,
                (Some(_), Some(_)) => DreamFileAction::Changed,
                (Some(_), None) if merged_into.is_some() => DreamFileAction::Merged,
                (Some(_), None) => DreamFileAction::Removed,
            };
            let reason = c.reason.strip_prefix(&format!("{rel}: ")).unwrap_or(&c.reason).to_string();
            DreamFile {
                is_index: rel == "MEMORY.md",
                rel_path: rel.clone(),
                path: c.path.clone(),
                action,
                merged_into,
                diff: crate::line_diff(c.before.as_deref().unwrap_or_default(), c.after.as_deref().unwrap_or_default()),
                before: c.before.clone(),
                after: c.after.clone(),
                reason,
                kept_bytes: None,
            }
        })
        .collect();
    files.sort_by_key(|f| f.is_index);
    files
}

fn moves(moved: Vec<mneme_dream::Moved>) -> Vec<DreamMove> {
    let mut out: Vec<DreamMove> = moved
        .into_iter()
        .map(|m| DreamMove {
            lost: m.lost(),
            from: m.from,
            text: m.text,
            file_removed: m.file_removed,
            found_in: m.found_in,
            missing: m.missing,
            duplicate: m.duplicate,
        })
        .collect();
    // Stable: within each group the dream's own order (file by file, line by line) stays.
    out.sort_by_key(|m| !m.lost);
    out
}

fn dream_view(r: DreamRecord) -> DreamView {
    let item = r.summary_view().into();
    let files = files_of(&r.changeset.root, &r.changeset.changes);
    // A forced undo's inverse changeset holds, as `before`, what was on disk just before it;
    // only the files that differed from the dream's own result are worth showing, and every
    // file whose exact bytes the undo kept (its text there is only a lossy reading of them).
    let undo_replaced = match &r.undo {
        Some(undo) => {
            let kept = |path: &Path| r.undo_kept.iter().find(|k| k.path == path);
            let replaced: Vec<FileChange> = undo
                .changes
                .iter()
                .filter(|u| kept(&u.path).is_some() || r.changeset.changes.iter().any(|c| c.path == u.path && c.after != u.before))
                .cloned()
                .collect();
            let mut files = files_of(&undo.root, &replaced);
            for f in &mut files {
                f.kept_bytes = kept(&f.path).map(|k| DreamKeptBytes::of(k, &f.rel_path));
            }
            files
        }
        None => Vec::new(),
    };
    DreamView {
        item,
        memory_dir: r.memory_dir,
        summary: r.summary,
        notes: r.notes,
        session_ids: r.sessions,
        files,
        moved: moves(r.moved),
        refused: r.denials.into_iter().map(|d| DreamRefusal { tool: d.tool, message: d.message }).collect(),
        turns: r.turns,
        trashed: r.trashed.into_iter().map(|t| DreamTrashed { path: t.path, trash_id: t.trash_id }).collect(),
        rejected_ms: r.rejected_at_ms,
        undo_replaced,
    }
}

fn off_reason(e: &Enablement) -> (Option<DreamOffReason>, Option<String>, String) {
    match e {
        Enablement::On => (None, None, "On: autoDreamEnabled is true and auto memory is on.".into()),
        Enablement::OnByServerFlag => (None, None, mneme_dream::gate::SERVER_FLAG_ON.into()),
        Enablement::AutoDreamOff { source: Some(s) } => (
            Some(DreamOffReason::AutoDreamOff),
            Some(s.as_str().to_string()),
            format!("Off: autoDreamEnabled is false in the {} settings.", s.as_str()),
        ),
        Enablement::AutoDreamOff { source: None } => (
            Some(DreamOffReason::AutoDreamOff),
            None,
            "Off: autoDreamEnabled is not set, and Claude Code's server flag for auto dream (as last cached in ~/.claude.json) does not turn it on."
                .into(),
        ),
        Enablement::AutoMemoryOff { reason } => {
            (Some(DreamOffReason::AutoMemoryOff), None, format!("Off: auto memory is off ({reason}), so there is nothing to consolidate."))
        }
        Enablement::Remote => (Some(DreamOffReason::Remote), None, "Off: this is a remote session (CLAUDE_CODE_REMOTE is set).".into()),
        Enablement::Kairos => (Some(DreamOffReason::Kairos), None, "Off: KAIROS mode distils its daily logs with its own nightly dream.".into()),
    }
}

fn blocked_explanation(s: &GateStatus) -> String {
    match s.blocked_by {
        None => "Nothing: every gate is open, so the scheduler would dream at its next check.".into(),
        Some(Gate::Enabled) => "Auto dream is off.".into(),
        // The lock's date is ahead of the clock (it was ahead when a dream stamped it, or the
        // file came from another machine): Claude Code counts the hours from that date too.
        Some(Gate::Time) if s.hours_since.is_some_and(|h| h < 0.0) => format!(
            "The time gate: the last consolidation is dated {:.1} hours in the future (the clock was ahead when it was recorded, \
             or the lock file came from another machine), so Claude Code will not dream here until {} hours after that date. \
             Dream now dates it to the present.",
            -s.hours_since.unwrap_or_default(),
            s.min_hours
        ),
        Some(Gate::Time) => format!(
            "The time gate: {:.1} of {} hours since the last consolidation.",
            s.hours_since.unwrap_or_default(),
            s.min_hours
        ),
        Some(Gate::Throttle) => "The 10-minute throttle: transcripts were scanned a moment ago.".into(),
        Some(Gate::Sessions) => format!("The session gate: {} of {} sessions since the last consolidation.", s.sessions_since, s.min_sessions),
        Some(Gate::Lock) => match s.lock.holder_pid {
            Some(pid) => format!("The lock: process {pid} is dreaming over this folder now."),
            None => "The lock: another process is dreaming over this folder now.".into(),
        },
    }
}

/// Whether Claude Code itself dreams here; `None` when Mneme cannot tell.
pub(crate) fn offer_known(offer: ClaudeCodeOffer) -> Option<bool> {
    match offer {
        ClaudeCodeOffer::Offered => Some(true),
        ClaudeCodeOffer::NotOffered => Some(false),
        ClaudeCodeOffer::Unknown => None,
    }
}

/// Why Claude Code does not dream here, or why that cannot be told; `None` when it does.
pub(crate) fn offer_note(offer: ClaudeCodeOffer) -> Option<String> {
    match offer {
        ClaudeCodeOffer::Offered => None,
        ClaudeCodeOffer::NotOffered => Some(
            "Claude Code itself will not dream for this account: its server flag for auto dream (as last cached in \
             ~/.claude.json) does not offer it, whatever autoDreamEnabled says. Mneme's own background dreams follow autoDreamEnabled."
                .to_string(),
        ),
        ClaudeCodeOffer::Unknown => Some(
            "Claude Code offers auto dream to this account only if its team memory holds content on Anthropic's server, \
             which Mneme cannot see (the server flag for auto dream does not offer it). Mneme's own background dreams follow autoDreamEnabled."
                .to_string(),
        ),
    }
}

impl Mneme {
    /// Dates in the facade's zone, asked for each instant: a daily log written after a
    /// daylight-saving change gets that day's date, and one dream dates each file it reads with
    /// the offset in force when it was written.
    pub(crate) fn dreams(&self) -> Dreams {
        Dreams::new(self.env.clone(), self.clock.clone()).with_local_zone(self.zone.clone())
    }

    /// The folder's dream target and gate 0, resolved like every other screen's folder (the
    /// same settings sources, the same memory folder).
    fn dream_target(&self, req: &ContextRequest) -> Result<(DreamTarget, Enablement), ApiError> {
        let (site, _) = self.dream_site(req)?;
        Ok((site.target, site.enabled))
    }

    /// Where a dream over the request's folder works and what gates it, resolved once, and
    /// the release it is seen for.
    fn dream_site(&self, req: &ContextRequest) -> Result<(DreamSite, Profile), ApiError> {
        let r = self.resolve(req)?;
        let flags = CachedFlags::of(&mneme_store::server_flags::ServerFlags::for_session(&self.env, &r.session_env));
        let mut target = DreamTarget {
            memory_dir: r.memdir.clone(),
            transcript_dir: mneme_store::paths::transcript_dir(&r.session_env, &r.cwd),
            current_session: None,
            cwd: r.cwd.clone(),
        };
        // A sub-agent's folder dreams under the project's gates (agents run inside the
        // project's sessions), with its own lock, history and undo in its own folder.
        if let Some(agent) = &req.agent {
            target.memory_dir = self.agent_memory(&r.cwd, &r.settings, agent)?.dir;
        }
        let enabled = mneme_dream::gate::enablement(&r.session_env, &r.settings, false, &flags);
        Ok((DreamSite { target, enabled, flags, env: r.session_env.clone() }, r.options.profile))
    }

    fn memory_dir_for_dreams(&self, req: &ContextRequest) -> Result<PathBuf, ApiError> {
        Ok(self.dream_target(req)?.0.memory_dir)
    }

    /// The gates of the project's memory folder as they stand, its dream mode and how many
    /// dreams wait for approval. Changes nothing.
    pub fn dream_status(&self, req: &ContextRequest) -> Result<DreamGates, ApiError> {
        let (site, profile) = self.dream_site(req)?;
        // The scheduler's own last look, so the screen says why a dream whose other gates are
        // open never runs (it was said only in the run log).
        // Each transcript's marks are kept while it does not change, so a look at an unchanged
        // folder lists and `stat`s its transcripts without reading them.
        let search = mneme_dream::organization::Search { cache: Some(&self.organization_search), limit: None };
        let organization: Option<DreamOrganizationSkip> = site.organization_skip_searching(&profile, search).map(Into::into);
        let organization_checks = site.organization_checks(&profile).into();
        let DreamSite { target, enabled, flags, env } = site;
        let offer = flags.claude_code_offer(&env, &profile);
        let (claude_code_offers, offer_note) = (offer_known(offer), offer_note(offer));
        let d = self.dreams();
        let s = d.status(&target, &enabled, &flags);
        // Checked last, as the release does once it holds the lock: an earlier gate that is
        // shut is still the one that blocks.
        let (blocked_by, blocked_explanation) = match (s.blocked_by, &organization) {
            (None, Some(o)) => (Some(DreamGate::Organization), o.explanation.clone()),
            (gate, _) => (gate.map(Into::into), blocked_explanation(&s)),
        };
        let mode = d.mode(&target.memory_dir)?;
        let pending = d.pending_count(&target.memory_dir)?;
        let (off_reason, auto_dream_source, explanation) = off_reason(&enabled);
        Ok(DreamGates {
            project_root: target.cwd.clone(),
            memory_dir: target.memory_dir.clone(),
            transcript_dir: target.transcript_dir.clone(),
            mode: mode.into(),
            enabled: s.enabled,
            off_reason,
            enabled_explanation: explanation,
            auto_dream_source,
            claude_code_offers,
            offer_note,
            last_consolidated_ms: s.last_consolidated_at_ms,
            hours_since: s.hours_since,
            min_hours: s.min_hours,
            sessions_since: s.sessions_since,
            session_ids: s.session_ids.clone(),
            min_sessions: s.min_sessions,
            lock: DreamLock {
                path: s.lock.path.clone(),
                exists: s.lock.exists,
                holder_pid: s.lock.holder_pid,
                holder_alive: s.lock.holder_alive,
                holder_is_this_process: s.lock.holder_pid == Some(i64::from(std::process::id())),
                held: s.lock.held,
                stale_at_ms: s.lock.stale_at_ms,
            },
            throttled_until_ms: s.throttled_until_ms,
            next_eligible_ms: s.next_eligible_at_ms,
            organization,
            organization_checks,
            blocked_by,
            blocked_explanation,
            pending,
        })
    }

    /// Sets what happens to the project's dreams.
    pub fn set_dream_mode(&self, req: &ContextRequest, mode: DreamModeName) -> Result<DreamGates, ApiError> {
        let dir = self.memory_dir_for_dreams(req)?;
        self.dreams().set_mode(&dir, mode.into())?;
        self.dream_status(req)
    }

    /// Dreams now over the project's memory folder, by `provider` (`None` or offline: the
    /// deterministic offline dream). The lock is honoured (a dream running here or in Claude
    /// Code refuses with `conflict`); the folder's mode decides whether the result is applied
    /// or held for review. A dream that fails is recorded in the history and reported as the
    /// error.
    pub fn run_dream(&self, req: &ContextRequest, provider: Option<ProviderChoice>) -> Result<DreamView, ApiError> {
        let (DreamSite { target, enabled, flags, .. }, _) = self.dream_site(req)?;
        let model = match provider.unwrap_or(ProviderChoice::Offline) {
            ProviderChoice::Offline => None,
            choice => {
                let saved = ProviderSettings::load(&self.env)?;
                Some(self.model_provider(&saved, choice).map_err(|e| ApiError::invalid(e.to_string()))?)
            }
        };
        let d = self.dreams();
        // The lock keeps this process's PID for 60 minutes after a dream (Claude Code's rule,
        // which keeps the time gate's record). That only blocks while one of this app's own
        // dreams is still running; the engine's "another dream holds the lock" would point at
        // this very app, so say what is going on instead.
        let lock = d.status(&target, &enabled, &flags).lock;
        if lock.held
            && lock.holder_pid == Some(i64::from(std::process::id()))
            && mneme_dream::lock::ConsolidationLock::new(&target.memory_dir).running_here()
        {
            return Err(ApiError::new(
                ErrorCode::Conflict,
                "A dream of this app is running in this folder now; wait for it to finish, then dream again.",
            ));
        }
        let record = crate::block_on(async {
            let opts = RunOptions {
                trigger: Trigger::Manual,
                engine: match &model {
                    Some(p) => Engine::Model(p.as_ref()),
                    None => Engine::Offline,
                },
                apply_now: false,
                enabled,
                flags,
                cancel: Cancel::new(),
            };
            d.run(&target, &opts).await
        })??;
        Ok(dream_view(record))
    }

    /// Every dream of the project's memory folder, newest first, without file contents.
    pub fn dream_history(&self, req: &ContextRequest) -> Result<DreamHistory, ApiError> {
        let dir = self.memory_dir_for_dreams(req)?;
        let (records, damaged) = self.dreams().list(&dir)?;
        Ok(DreamHistory {
            memory_dir: dir,
            dreams: records.iter().map(|r| r.summary_view().into()).collect(),
            // In the screen's words, as an error about one of them would be.
            damaged: damaged.into_iter().map(|e| ApiError::from(e).message).collect(),
        })
    }

    /// One dream with every file it changed or proposes, before and after.
    pub fn dream(&self, req: &ContextRequest, id: &str) -> Result<DreamView, ApiError> {
        let dir = self.memory_dir_for_dreams(req)?;
        Ok(dream_view(self.dreams().show(&dir, id)?))
    }

    /// Applies a dream held for review; refused (`conflict`, nothing written) when a file it
    /// changes changed since the dream read it.
    pub fn approve_dream(&self, req: &ContextRequest, id: &str) -> Result<DreamView, ApiError> {
        let dir = self.memory_dir_for_dreams(req)?;
        Ok(dream_view(self.dreams().approve(&dir, id)?))
    }

    /// Turns a dream held for review down; nothing is written.
    pub fn reject_dream(&self, req: &ContextRequest, id: &str) -> Result<DreamView, ApiError> {
        let dir = self.memory_dir_for_dreams(req)?;
        Ok(dream_view(self.dreams().reject(&dir, id)?))
    }

    /// Undoes an applied dream in one step (`None`: the newest one that changed something),
    /// putting every file back byte for byte. Refused with `conflict` when any of its files
    /// changed since, unless `force` (the newer text is then kept in the dream's record).
    pub fn undo_dream(&self, req: &ContextRequest, id: Option<&str>, force: bool) -> Result<DreamView, ApiError> {
        let dir = self.memory_dir_for_dreams(req)?;
        Ok(dream_view(self.dreams().undo(&dir, id, force)?))
    }

    /// The project's KAIROS daily log for `date` (`YYYY-MM-DD`; `None`: today, local time),
    /// and the days that have one.
    pub fn daily_log(&self, req: &ContextRequest, date: Option<&str>) -> Result<DailyLog, ApiError> {
        let dir = self.memory_dir_for_dreams(req)?;
        let date = match date.map(str::trim).filter(|s| !s.is_empty()) {
            Some(s) => Some(
                mneme_dream::dates::parse_iso_date(s)
                    .filter(|_| s.len() == 10)
                    .ok_or_else(|| ApiError::invalid(format!("'{s}' is not a date; write it as YYYY-MM-DD.")))?,
            ),
            None => None,
        };
        let (path, text) = self.dreams().read_log(&dir, date)?;
        let rel_path = rel_of(&dir, &path);
        let date = mneme_dream::logs::log_date(&rel_path).map(iso).unwrap_or_default();
        Ok(DailyLog { date, path, rel_path, text, days: log_days(&dir) })
    }

    /// Appends one timestamped bullet to today's daily log and answers the log.
    pub fn append_daily_log(&self, req: &ContextRequest, text: &str) -> Result<DailyLog, ApiError> {
        let dir = self.memory_dir_for_dreams(req)?;
        let appended = self.dreams().log(&dir, text)?;
        self.daily_log(req, Some(&appended.date))
    }

    /// The newest background runs (of one job, or all), newest first, from the run log the
    /// desktop app, `mneme serve --scheduler` and `mneme daemon` share.
    pub fn background_runs(&self, limit: usize, job: Option<JobName>) -> Result<Vec<BackgroundRun>, ApiError> {
        let log = RunLog::in_data_dir(&self.env.data_dir());
        let runs = log.recent(limit, job.map(Into::into)).map_err(|e| ApiError::new(ErrorCode::Io, sentence(e.to_string())))?;
        Ok(runs.into_iter().map(Into::into).collect())
    }
}

/// The days with a daily log under `<memory>/logs/YYYY/MM/`, newest first.
fn log_days(memory_dir: &Path) -> Vec<String> {
    let logs = memory_dir.join(mneme_dream::logs::LOGS_DIR);
    let mut days = Vec::new();
    for year in std::fs::read_dir(&logs).into_iter().flatten().flatten() {
        for month in std::fs::read_dir(year.path()).into_iter().flatten().flatten() {
            for file in std::fs::read_dir(month.path()).into_iter().flatten().flatten() {
                let rel = format!(
                    "{}/{}/{}/{}",
                    mneme_dream::logs::LOGS_DIR,
                    year.file_name().to_string_lossy(),
                    month.file_name().to_string_lossy(),
                    file.file_name().to_string_lossy()
                );
                if let Some(d) = mneme_dream::logs::log_date(&rel) {
                    days.push(iso(d));
                }
            }
        }
    }
    days.sort_unstable_by(|a, b| b.cmp(a));
    days.truncate(LOG_DAYS_SHOWN);
    days
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Dreams screen's status at each look: an unchanged folder's transcripts are not read
    /// again for the organization search, one appended to is, and the answer follows it.
    #[test]
    fn a_look_at_an_unchanged_folder_reads_no_transcript_again() {
        use mneme_dream::organization::{SearchCache, KEPT_BYTES, KEPT_FILES};
        let t = mneme_testsupport::TestHome::new();
        let repo = t.git_repo("repo");
        let dir = t.config_home().join("projects").join(mneme_core::sanitize::sanitize_path(&repo.to_string_lossy()));
        for i in 0..3 {
            t.write(dir.join(format!("0000000{i}-1111-4111-8111-111111111111.jsonl")), "{\"type\":\"user\"}\n");
        }
        let mut m = Mneme::new(t.env.clone(), std::sync::Arc::new(crate::FixedClock::at_unix_secs(1_764_590_000)));
        // Kept however recently the files were written (the 2-second settling has its own test).
        m.organization_search = std::sync::Arc::new(SearchCache::bounded(std::time::Duration::ZERO, KEPT_FILES, KEPT_BYTES));
        let req = ContextRequest { cwd: repo.clone(), ..Default::default() };
        assert!(m.dream_status(&req).unwrap().organization.is_none());
        assert_eq!(m.organization_search.files_read(), 3);
        let again = m.clone();
        assert!(again.dream_status(&req).unwrap().organization.is_none());
        assert_eq!(m.organization_search.files_read(), 3, "an unchanged folder is not read again, by any clone of the facade");
        let line = serde_json::json!({"type": "hybrid-organization", "organizationUuid": "0f9e8d7c-6b5a-4493-8271-605f4e3d2c1b"});
        let first = dir.join("00000000-1111-4111-8111-111111111111.jsonl");
        t.write(&first, &format!("{{\"type\":\"user\"}}\n{line}\n"));
        let skip = m.dream_status(&req).unwrap().organization.expect("the new record is seen");
        assert_eq!(skip.code, "other_hybrid_organization");
        assert_eq!(m.organization_search.files_read(), 4);
    }

    /// The dream crate's refusals name `mneme dream` commands for the command line; a screen's
    /// error names the screen's own controls instead (the dream's Undo button, the mode
    /// chooser), and no command to run.
    #[test]
    fn dream_refusals_on_a_screen_name_the_dreams_screen_not_a_command() {
        let partly = || DreamError::PartlyApplied { id: "d1".into(), files: vec!["a.md".into(), "MEMORY.md".into()], cause: "a.md could not be written: disk full".into() };
        let mode = || DreamError::DamagedMode { path: "/h/dreams/settings.json".into(), detail: "expected value at line 1".into() };
        let other = || DreamError::OtherFolder { id: "d2".into(), owner: "/m/other".into() };
        let record = || DreamError::DamagedRecord { path: "/h/dreams/d3.json".into(), detail: "EOF".into(), newer: false };
        let undone = || DreamError::UndoneInPart { id: "d5".into(), files: vec!["b.md".into()] };
        for (engine, shown) in [(partly().to_string(), ApiError::from(partly())), (mode().to_string(), ApiError::from(mode())), (undone().to_string(), ApiError::from(undone()))] {
            assert!(engine.contains("`mneme dream"), "the command line's words keep the command: {engine}");
            assert!(!shown.message.contains("mneme") && shown.command.is_none(), "{}", shown.message);
        }
        for (engine, shown) in [(other().to_string(), ApiError::from(other())), (record().to_string(), ApiError::from(record()))] {
            assert!(engine.contains("run the command"), "the command line's words: {engine}");
            assert!(!shown.message.contains("command"), "{}", shown.message);
        }
        let p = ApiError::from(partly());
        assert_eq!(p.code, ErrorCode::Io);
        assert!(p.message.starts_with("Dream d1 was written only in part (a.md could not be written: disk full)") && p.message.contains("a.md, MEMORY.md still hold its text") && p.message.ends_with("use Undo dream: it puts back every file it changed."), "{}", p.message);
        let m = ApiError::from(mode());
        assert_eq!(m.code, ErrorCode::Malformed);
        assert!(m.message.starts_with("The dream mode file /h/dreams/settings.json is damaged (expected value at line 1)") && m.message.ends_with("choose the mode again on this screen."), "{}", m.message);
        assert_eq!(ApiError::from(other()).code, ErrorCode::NotFound);
        assert_eq!(ApiError::from(undone()).message, "Dream d5 was undone except for b.md; their text before the dream is kept in the dream's record, under this dream.");
        assert_eq!(ApiError::from(record()).message, "The dream record /h/dreams/d3.json is damaged (EOF), so Mneme cannot show, apply or undo that dream; move the file out of its folder.");
        // A record a newer Mneme wrote keeps its words: it says to update, not to move it.
        let newer = DreamError::DamagedRecord { path: "/h/dreams/d4.json".into(), detail: "format 9".into(), newer: true };
        assert_eq!(ApiError::from(newer).message, "The dream record /h/dreams/d4.json cannot be read by this build: format 9.");
    }
}
