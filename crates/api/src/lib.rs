//! The one facade every Mneme front end calls (the CLI today; the desktop shell and the local
//! HTTP server later). Each public method is one user operation; inputs and outputs are plain
//! serde DTOs so any transport can carry them. Below this crate nothing reads the process
//! environment or the wall clock: [`Mneme`] holds the injected [`Environment`] and [`Clock`].
//!
//! Model-backed operations (the provider settings and their connection test, the recall bench)
//! stay synchronous too: each model call runs to the end on a small runtime of its own. A
//! provider that fails is not an [`ApiError`]: the answer carries the failure, because showing
//! why a model did not answer is the point of those screens. A dream that fails is the exception: it
//! is recorded in the dream history as failed, and the call answers with the error. API keys go into the OS keyring
//! and never come back out through here; front ends learn only whether one is set.

mod agent_context;
mod agents;
mod claude_code;
mod context;
mod context_cache;
mod diff;
pub mod drive_check;
mod version_check;
mod dreams;
mod error;
mod files;
mod graph;
mod inbox;
mod memories;
mod memory_dir;
mod merge;
mod open;
pub mod ops;
mod providers;
mod recall;
pub mod records;
mod team;
mod verify;

pub use agent_context::AgentContextView;
pub use agents::{AgentFolder, AgentInfo, AgentTarget, AgentsView};
pub use mneme_store::agents::{AgentProblem, AgentSource};
pub use mneme_store::paths::AgentScope;
pub use claude_code::{ClaudeCodeInfo, RenderedFor};
pub use version_check::{ScheduledClaudeCheck, VersionCheck};
pub use verify::{Difference, VerifyOptions, VerifyReport, VERIFY_TIMEOUT};
pub use mneme_core::versions::ClaudeVersion;
pub use mneme_store::claude_install::installed_profile;
pub use mneme_store::atomic::Refusal as DiskRefusal;
/// For one-shot processes only (the CLI): files the loader reads are left for the exit to close.
pub use mneme_claudemd::keep_files_open_until_exit;
pub use context_cache::{CacheStats, ContextCache, DependsOn, DependsOnIndex, FolderWatch};
pub use context::{AutoMemoryInfo, ContextFile, ContextRequest, ContextView, SkippedEntry, TouchedView, UnverifiedFile};
// What `ContextFile::unverified` carries: who could have written a managed file.
pub use mneme_claudemd::managed::CouldWrite;
pub use error::{ApiError, ErrorCode};
pub use diff::{line_diff, DiffLine, DiffOp, LineDiff};
pub use dreams::{
    BackgroundRun, DailyLog, DreamFile, DreamFileAction, DreamGate, DreamGates, DreamHistory, DreamKeptBytes, DreamListItem,
    DreamLock, DreamModeName, DreamOffReason, DreamOrganizationChecks, DreamOrganizationSkip, DreamRefusal, DreamState, DreamTrashed, DreamTrigger,
    DreamView, JobName, RunOutcome, SchedulerEvent, LOG_DAYS_SHOWN,
};
pub use files::{FileText, SavedFile, SavedMemory};
pub use graph::{Graph, GraphEdge, GraphNode};
pub use memories::{
    IndexBefore, MachineSettings, MemoryDetail, MemoryEdit, MemoryListFilter, MemoryPage, MemoryPageRequest, MemorySummary, NewMemoryRequest,
    Trashed, MEMORY_PAGE_MAX,
};
pub use memory_dir::AutoMemDirChange;
pub use merge::MergeReport;
pub use open::{FolderCompletion, OpenedProject};
pub use providers::{
    KeyState, KeyStatus, ProviderChoice, ProviderFailure, ProviderSettingsInput, ProviderTest, ProviderView,
};
pub use recall::{RecallQuery, RecallView, RecalledMemory};
pub use inbox::{
    ExtractionReport, ExtractionRun, FileAction, InboxFile, InboxItemView, InboxState, InboxView, LeftOutMessages, NotSaved, PromoteTo, Refusal,
    ReviewModeName, RunResult, TranscriptInfo,
};
pub use team::{
    TeamConflict, TeamConflictKind, TeamFile, TeamFileStatus, TeamHistory, TeamLeadChange, TeamOutcome, TeamPullResult,
    TeamPushResult, TeamRemote, TeamRemoteEntry, TeamRestored, TeamRole, TeamSecretHold, TeamServerSetting,
    TeamServerSource, TeamSignIn, TeamSignInPoll, TeamSignInRecord, TeamSignIns, TeamSignInState, TeamSignedOut,
    TeamSkippedKey, TeamStatus, TeamSuppression, TeamSyncResult, TeamSyncState, TeamVersion,
};
pub use mneme_store::memdir::{AddedIndexLine, MergedFile, SkippedFile};
pub use mneme_core::{Clock, FixedClock, SystemClock};
pub use mneme_store::local_time::{LocalZone, UnknownZone};
pub use mneme_store::projects::ProjectInfo;
pub use mneme_store::memdir::{EmptiedTrash, Health, TrashListing};
pub use mneme_store::{Environment, NoHome};
/// The one way every front end writes a file (see `mneme_store::atomic`).
pub use mneme_store::atomic::write_atomic;

use std::future::Future;
use std::sync::Arc;

/// The engine, bound to one machine's environment and clock.
#[derive(Clone)]
pub struct Mneme {
    env: Environment,
    clock: Arc<dyn Clock>,
    /// The local time zone, asked for the offset of each instant dated (today in the context
    /// block, a daily log's date): an app left open across a daylight-saving change dates as
    /// the system does. Injected, as the clock is; front ends pass [`LocalZone::system`].
    zone: LocalZone,
    /// Team sign-in: where credentials live, and device sign-ins waiting for approval.
    team: team::TeamSessions,
    /// Memory rows read from big folders, kept while their files do not change (the memory
    /// list's pages and the health report reuse them).
    rows: memories::KeptRows,
    /// What the dream organization search found in each transcript, kept while the file does
    /// not change: the Dreams screen's status searches every transcript of the folder at each
    /// look (`DreamSite::organization_skip`).
    organization_search: Arc<mneme_dream::organization::SearchCache>,
}

impl Mneme {
    pub fn new(env: Environment, clock: Arc<dyn Clock>) -> Self {
        Mneme {
            env,
            clock,
            zone: LocalZone::default(),
            team: team::TeamSessions::default(),
            rows: memories::KeptRows::default(),
            organization_search: Arc::default(),
        }
    }

    /// Dates with one offset from UTC (seconds east) for every instant.
    pub fn with_utc_offset(self, secs: i32) -> Self {
        self.with_local_zone(LocalZone::Fixed(secs))
    }

    /// Dates in `zone`, asked for each instant (front ends: [`LocalZone::system`]).
    pub fn with_local_zone(mut self, zone: LocalZone) -> Self {
        self.zone = zone;
        self
    }

    /// The local offset from UTC (seconds east) now, by the injected clock.
    pub fn utc_offset(&self) -> i32 {
        self.zone.offset_at(self.clock.now())
    }

    pub fn environment(&self) -> &Environment {
        &self.env
    }

    /// The injected clock, for front ends that start background work beside the api (the
    /// scheduler in `mneme serve --scheduler`).
    pub fn clock(&self) -> Arc<dyn Clock> {
        self.clock.clone()
    }

    /// Every project Claude Code has a folder for, newest first, with orphans flagged;
    /// `unavailable` when the drive holding Claude Code's own folders (its config folder, the
    /// remote memory base) does not answer within its patience.
    pub fn projects(&self) -> Result<Vec<ProjectInfo>, ApiError> {
        mneme_store::projects::discover_projects(&self.env)
            .map_err(|e| ApiError::new(ErrorCode::Unavailable, format!("{e} Check the drive or its connection; Mneme looks again the next time the list is asked for.")))
    }

    /// Today's date as Claude Code writes it in the context block (`YYYY-MM-DD`, local time).
    pub fn today(&self) -> String {
        let at = self.clock.now();
        let now = time::OffsetDateTime::from(at);
        let offset = time::UtcOffset::from_whole_seconds(self.zone.offset_at(at)).unwrap_or(time::UtcOffset::UTC);
        let local = now.to_offset(offset);
        mneme_core::text::iso_date(local.date())
    }
}

/// Runs a model call to the end on a runtime of its own, on a thread of its own. The api is
/// synchronous; running the future on a fresh thread keeps it callable from anywhere — the
/// CLI's main thread, a blocking pool, or (in tests and the desktop shell) a thread that is
/// already driving an async runtime, where blocking on a second runtime would panic.
pub(crate) fn block_on<F>(f: F) -> Result<F::Output, ApiError>
where
    F: Future + Send,
    F::Output: Send,
{
    let failed = |e: String| ApiError::new(ErrorCode::Io, format!("The model call could not run ({e}); the system may be out of threads or file handles."));
    std::thread::scope(|s| {
        let worker = std::thread::Builder::new().name("mneme-model-call".into()).spawn_scoped(s, move || {
            let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|e| failed(e.to_string()))?;
            Ok(rt.block_on(f))
        });
        match worker {
            Ok(handle) => handle.join().unwrap_or_else(|_| Err(failed("it stopped unexpectedly".into()))),
            Err(e) => Err(failed(e.to_string())),
        }
    })
}
