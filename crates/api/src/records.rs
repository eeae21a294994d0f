//! The engines' own records, for a front end that shows them whole: the command line prints
//! dreams, extraction runs, inbox items, recall results and team sync reports as the engines
//! record them, and its `--json` is their serialisation. The screens get shaped views of the
//! same operations (`dreams.rs`, `inbox.rs`, `recall.rs`, `team.rs`); these methods are the
//! same work answering the records themselves, so that no front end drives an engine crate
//! directly (the `mneme` binary depends on this crate, not on the engines).
//!
//! Errors keep the engine's own words: the command line has always printed them as they are
//! (the CLI tests compare them), where the screens' versions of these operations rephrase some
//! to point at the app's controls.
//!
//! The modules below re-export the record types a front end needs to read the answers.

use crate::{ApiError, ErrorCode, Mneme};
use mneme_dream::{DreamMode, DreamSite, DreamRecord, DreamTarget, Enablement, Engine as DreamEngine, GateStatus, LogAppended};
use mneme_extract::{Engine as ExtractEngine, ExtractOptions, Extractor, InboxItem, PromoteTarget, ReviewMode};
use mneme_model::{Provider, ProviderKind, ProviderSettings};
use mneme_recall::{RecallContext, RecallResult, RecallSession};
use mneme_team::auth::{self, DeviceLogin};
use mneme_team::client::{Http, PullReport, PushReport, SyncState, ThreadSleeper};
use mneme_team::{config, SyncTarget};
use serde::Serialize;
use std::fmt::Display;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Auto dream's records: a dream with its changeset, the gates, the mode, a daily-log line.
pub mod dream {
    pub use mneme_dream::history::retention;
    pub use mneme_dream::{DreamMode, DreamRecord, DreamStatus, Gate, GateStatus, LogAppended, Moved, Trigger};
}

/// Extraction's records: one run over a transcript, and the review inbox's items.
pub mod extract {
    pub use mneme_extract::inbox::ProposalAction;
    pub use mneme_extract::offline::Decision;
    pub use mneme_extract::rules::SkipReason;
    pub use mneme_extract::{InboxItem, ItemStatus, PromoteTarget, ReviewMode, RunOutcome, RunRecord};
}

/// Recall's answer, and the provider kinds it names.
pub mod recall {
    pub use mneme_model::ProviderKind;
    pub use mneme_recall::{RecallResult, Truncation};
}

/// Team sync's reports and the device sign-in shown while it waits.
pub mod team {
    pub use mneme_team::auth::DeviceLogin;
    pub use mneme_team::client::{PullReport, PushReport, SyncState};
}

/// The background scheduler's run log entries.
pub mod scheduler {
    pub use mneme_scheduler::{Outcome, RunRecord};
}

/// Cancels a running dream or extraction (the command line's Ctrl-C).
pub use mneme_model::Cancel;

/// The memory folder a command-line job works on: the one Claude Code would use when started in
/// a folder, or a memory folder named directly. Paths are absolute.
#[derive(Debug, Clone)]
pub enum MemoryFolder {
    Cwd(PathBuf),
    MemoryDir(PathBuf),
}

/// `mneme dream status`: the gates, the folder's dream mode, and whether Claude Code itself
/// dreams there.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct DreamGateStatus {
    pub status: GateStatus,
    pub mode: DreamMode,
    /// `None` when Mneme cannot tell (see [`crate::DreamGates::claude_code_offers`]).
    pub claude_code_offers: Option<bool>,
    pub offer_note: Option<String>,
    /// Whether Claude Code, and Mneme's background dreams, skip the folder for the
    /// organizations its sessions ran under once every other gate is open (see
    /// [`crate::DreamGates::organization`]).
    pub organization: Option<crate::DreamOrganizationSkip>,
    /// What that look covers ([`crate::DreamGates::organization_checks`]).
    pub organization_checks: crate::DreamOrganizationChecks,
}

/// Which model runs a job: the offline engine, the provider saved in Settings, or one named
/// for this run (`offline`, `claude-cli`, `anthropic`, `openai`; the saved settings otherwise).
#[derive(Debug, Clone, Copy)]
pub enum ModelChoice<'a> {
    Offline,
    Configured,
    Named(&'a str),
}

/// `mneme team status`: the repository, server, sign-in and sync state of a project folder.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TeamSyncStatus {
    pub memory_dir: PathBuf,
    /// `<memory>/team`, the folder that syncs.
    #[serde(skip)]
    pub team_dir: PathBuf,
    pub repo: Option<String>,
    pub server_url: Option<String>,
    pub server_url_source: Option<&'static str>,
    pub signed_in_as: Option<String>,
    /// False too when the keyring could not be read (`keyring_problem` says so).
    pub signed_in: bool,
    /// Why the OS keyring could not be read, saying what to do, when it could not (the Team
    /// screen's `keyringProblem`, in the same words): whether anyone is signed in is unknown,
    /// and pulls and pushes fail until it answers, but everything else here is still shown.
    pub keyring_problem: Option<String>,
    /// Absent until the folder has pulled or pushed once, and when its file cannot be read.
    pub state: Option<SyncState>,
    /// Why the sync state file cannot be read, saying what to do (the Team screen's
    /// `stateProblem`, in the same words); everything else here is still shown.
    pub state_problem: Option<String>,
}

/// An engine error in its own words; the code is the api's usual one for it.
fn exact<E: Display + Into<ApiError>>(e: E) -> ApiError {
    let text = e.to_string();
    let mut err: ApiError = e.into();
    err.message = text;
    err
}

fn io(e: impl Display) -> ApiError {
    ApiError::new(ErrorCode::Io, e.to_string())
}

/// A sync failure in the client's words (the screens' version points at the app's controls).
fn sync(e: mneme_team::SyncError) -> ApiError {
    let text = e.to_string();
    let mut err = crate::team::sync_error(e);
    err.message = text;
    err
}

impl Mneme {
    /// The folder's dream site, resolved as the background scheduler resolves it (a history,
    /// an undo or a log line needs no Claude Code that starts); a memory folder given directly
    /// dreams under the gates of a session started in it.
    fn dream_site_at(&self, at: &MemoryFolder) -> Result<DreamSite, ApiError> {
        match at {
            MemoryFolder::MemoryDir(dir) => Ok(self.dreams().site_for_memory_dir(dir)),
            MemoryFolder::Cwd(cwd) if !cwd.is_dir() => Err(ApiError::no_project_folder(cwd)),
            MemoryFolder::Cwd(cwd) => Ok(self.dreams().site_for_cwd(cwd)),
        }
    }

    /// The folder's dream target and gate 0.
    fn dream_target_at(&self, at: &MemoryFolder) -> Result<(DreamTarget, Enablement), ApiError> {
        let site = self.dream_site_at(at)?;
        Ok((site.target, site.enabled))
    }

    /// The memory folder a dream or daily-log command works on.
    pub fn dream_memory_dir(&self, at: &MemoryFolder) -> Result<PathBuf, ApiError> {
        Ok(self.dream_target_at(at)?.0.memory_dir)
    }

    /// The dream gates of the folder as they stand, and its dream mode. Changes nothing.
    pub fn dream_gate_status(&self, at: &MemoryFolder) -> Result<DreamGateStatus, ApiError> {
        let site = self.dream_site_at(at)?;
        let profile = self.rendered_for(None).1;
        // The scheduler's own last look before it dreams (`DreamSite::organization_skip`).
        let organization = site.organization_skip(&profile).map(Into::into);
        let organization_checks = site.organization_checks(&profile).into();
        let DreamSite { target, enabled, flags, env } = site;
        let offer = flags.claude_code_offer(&env, &profile);
        let d = self.dreams();
        let status = d.status(&target, &enabled, &flags);
        let mode = d.mode(&target.memory_dir).map_err(exact)?;
        Ok(DreamGateStatus {
            status,
            mode,
            claude_code_offers: crate::dreams::offer_known(offer),
            offer_note: crate::dreams::offer_note(offer),
            organization,
            organization_checks,
        })
    }

    /// Dreams now over the folder (the lock is honoured). Applied at once when `apply_now` or
    /// the folder's mode is automatic, else held for review. `cancel` stops it; the dream then
    /// rolls its lock back and records itself as failed.
    pub async fn dream_now(
        &self,
        at: &MemoryFolder,
        model: ModelChoice<'_>,
        apply_now: bool,
        cancel: &Cancel,
    ) -> Result<DreamRecord, ApiError> {
        let DreamSite { target, enabled, flags, .. } = self.dream_site_at(at)?;
        let provider = self.job_provider(model)?;
        let opts = mneme_dream::RunOptions {
            trigger: mneme_dream::Trigger::Manual,
            engine: match &provider {
                Some(p) => DreamEngine::Model(p.as_ref()),
                None => DreamEngine::Offline,
            },
            apply_now,
            enabled,
            flags,
            cancel: cancel.clone(),
        };
        self.dreams().run(&target, &opts).await.map_err(exact)
    }

    /// Every dream of the folder, newest first, and the records that could not be read (each
    /// in the engine's words).
    pub fn dream_records(&self, at: &MemoryFolder) -> Result<(PathBuf, Vec<DreamRecord>, Vec<String>), ApiError> {
        let dir = self.dream_memory_dir(at)?;
        let (records, damaged) = self.dreams().list(&dir).map_err(exact)?;
        Ok((dir, records, damaged.iter().map(ToString::to_string).collect()))
    }

    /// One dream with every change it made or proposes.
    pub fn dream_record(&self, at: &MemoryFolder, id: &str) -> Result<DreamRecord, ApiError> {
        self.dreams().show(&self.dream_memory_dir(at)?, id).map_err(exact)
    }

    /// Applies a dream held for review.
    pub fn approve_dream_record(&self, at: &MemoryFolder, id: &str) -> Result<DreamRecord, ApiError> {
        self.dreams().approve(&self.dream_memory_dir(at)?, id).map_err(exact)
    }

    /// Turns down a dream held for review; nothing is written.
    pub fn reject_dream_record(&self, at: &MemoryFolder, id: &str) -> Result<DreamRecord, ApiError> {
        self.dreams().reject(&self.dream_memory_dir(at)?, id).map_err(exact)
    }

    /// Undoes an applied dream (`None`: the newest), refused when its files changed since
    /// unless `force`.
    pub fn undo_dream_record(&self, at: &MemoryFolder, id: Option<&str>, force: bool) -> Result<DreamRecord, ApiError> {
        self.dreams().undo(&self.dream_memory_dir(at)?, id, force).map_err(exact)
    }

    /// The dream mode of a memory folder (from [`Mneme::dream_memory_dir`]).
    pub fn dream_mode_of(&self, memory_dir: &Path) -> Result<DreamMode, ApiError> {
        self.dreams().mode(memory_dir).map_err(exact)
    }

    pub fn set_dream_mode_of(&self, memory_dir: &Path, mode: DreamMode) -> Result<(), ApiError> {
        self.dreams().set_mode(memory_dir, mode).map_err(exact)
    }

    /// A day's KAIROS log of the folder (`date`: `YYYY-MM-DD`; `None`: today, local time): its
    /// path, and its text when it exists.
    pub fn daily_log_text(&self, at: &MemoryFolder, date: Option<&str>) -> Result<(PathBuf, Option<String>), ApiError> {
        let date = match date {
            Some(s) => Some(
                mneme_dream::dates::parse_iso_date(s)
                    .filter(|_| s.trim().len() == 10)
                    .ok_or_else(|| ApiError::invalid(format!("'{s}' is not a date; write it as YYYY-MM-DD")))?,
            ),
            None => None,
        };
        let dir = self.dream_memory_dir(at)?;
        self.dreams().read_log(&dir, date).map_err(exact)
    }

    /// Appends one timestamped bullet to today's daily log of the folder.
    pub fn append_log_line(&self, at: &MemoryFolder, text: &str) -> Result<LogAppended, ApiError> {
        let dir = self.dream_memory_dir(at)?;
        self.dreams().log(&dir, text).map_err(exact)
    }

    /// The provider a dream or extraction run asks, `None` for the offline engine.
    fn job_provider(&self, model: ModelChoice<'_>) -> Result<Option<Arc<dyn Provider>>, ApiError> {
        let name = match model {
            ModelChoice::Offline => return Ok(None),
            ModelChoice::Configured => None,
            ModelChoice::Named(name) => Some(name),
        };
        mneme_model::configured_provider(&self.env, name).map_err(|e| ApiError::invalid(e.to_string()))
    }

    fn engine_extractor(&self) -> Extractor {
        Extractor::new(self.env.clone(), self.clock.clone())
    }

    /// Runs extraction over one session transcript, from where the last extraction of that
    /// session stopped; `review` stages what it finds in the inbox whatever the project's mode.
    /// `cancel` stops it (nothing is written; the same messages are offered again next time).
    pub async fn extract_transcript(
        &self,
        transcript: &Path,
        model: ModelChoice<'_>,
        review: bool,
        cancel: &Cancel,
    ) -> Result<Vec<mneme_extract::RunRecord>, ApiError> {
        if !transcript.is_file() {
            return Err(ApiError::not_found(format!(
                "{} is not a file; pass a session transcript (<config>/projects/<project>/<session>.jsonl)",
                transcript.display()
            )));
        }
        let provider = self.job_provider(model)?;
        let engine = match &provider {
            Some(p) => ExtractEngine::Model(p.as_ref()),
            None => ExtractEngine::Offline,
        };
        self.engine_extractor().extract_transcript(transcript, engine, ExtractOptions { review }, cancel).await.map_err(exact)
    }

    /// The memory folder extraction uses for a project folder.
    pub fn extraction_memory_dir(&self, cwd: &Path) -> PathBuf {
        self.engine_extractor().project_for_cwd(cwd).memory_dir.dir
    }

    /// Inbox items of one memory folder (`None`: every project's), newest first; with
    /// `history`, decided ones too.
    pub fn inbox_items(&self, memory_dir: Option<&Path>, history: bool) -> Result<Vec<InboxItem>, ApiError> {
        self.engine_extractor().inbox().list(memory_dir, history).map_err(exact)
    }

    pub fn inbox_item(&self, id: &str) -> Result<InboxItem, ApiError> {
        self.engine_extractor().inbox().get(id).map_err(exact)
    }

    /// Writes the item: each memory together with its index line.
    pub fn keep_inbox_item(&self, id: &str) -> Result<InboxItem, ApiError> {
        self.engine_extractor().inbox().keep(id).map_err(exact)
    }

    /// Replaces one file's proposed content; with `keep`, then writes the item.
    pub fn edit_inbox_item(&self, id: &str, file: &str, content: String, keep: bool) -> Result<InboxItem, ApiError> {
        let inbox = self.engine_extractor().inbox();
        let edited = if keep { inbox.edit_and_keep(id, file, content) } else { inbox.edit(id, file, content) };
        edited.map_err(exact)
    }

    /// Drops the item; nothing is written.
    pub fn discard_inbox_item(&self, id: &str) -> Result<InboxItem, ApiError> {
        self.engine_extractor().inbox().discard(id).map_err(exact)
    }

    /// Puts the item's memories into CLAUDE.md, CLAUDE.local.md or team memory instead.
    pub fn promote_inbox_item(&self, id: &str, to: PromoteTarget) -> Result<InboxItem, ApiError> {
        self.engine_extractor().inbox().promote(id, to).map_err(exact)
    }

    /// What happens to what extraction finds in a memory folder.
    pub fn review_mode_at(&self, memory_dir: &Path) -> Result<ReviewMode, ApiError> {
        self.engine_extractor().mode(memory_dir).map_err(io)
    }

    pub fn set_review_mode_at(&self, memory_dir: &Path, mode: ReviewMode) -> Result<(), ApiError> {
        // A refusal's words are the engine's (the file, the disk, what to do); its code its own.
        self.engine_extractor().set_mode(memory_dir, mode).map_err(|e| ApiError::new(ErrorCode::for_io(&e), e.to_string()))
    }

    /// Which memories Claude Code would recall from `memory_dir` for a prompt, by the saved
    /// provider or `provider` (its kind over the saved settings), as `claude_version` (else
    /// the installed Claude Code, else the newest release Mneme checks) asks and surfaces
    /// them. That release's selector model is the default for Anthropic and the Claude Code
    /// CLI when the settings name none.
    pub fn recall_result(
        &self,
        prompt: &str,
        memory_dir: &Path,
        provider: Option<&str>,
        claude_version: Option<mneme_core::versions::ClaudeVersion>,
    ) -> Result<(RecallResult, crate::claude_code::RenderedFor), ApiError> {
        let (rendered_for, release) = self.rendered_for(claude_version);
        let saved = ProviderSettings::load(&self.env).map_err(exact)?;
        let choice = match provider {
            Some(name) => serde_json::from_value::<ProviderKind>(serde_json::Value::String(name.trim().to_string()))
                .map_err(|_| ApiError::invalid(format!("'{name}' is not a provider. Use one of: offline, claude-cli, anthropic, openai.")))?
                .into(),
            None => saved.kind.into(),
        };
        let provider = self.recall_provider(&saved, choice, &release).map_err(|e| ApiError::invalid(e.to_string()))?;
        let cancel = Cancel::new();
        let mut session = RecallSession::for_release(release);
        let mut ctx =
            RecallContext { env: &self.env, clock: self.clock.clone(), cancel: &cancel, transcript: &[], session: &mut session };
        let result = crate::block_on(mneme_recall::recall(prompt, memory_dir, provider.as_deref(), &mut ctx))?;
        Ok((result, rendered_for))
    }

    /// The team sync target of a project folder, as the sync client resolves it, once its
    /// drive and its memory folder's have answered (`mneme_team::answering_target`): on a drive
    /// that stopped answering the command fails as `unavailable` instead of waiting on it.
    fn sync_target_at(&self, cwd: &Path) -> Result<SyncTarget, ApiError> {
        mneme_team::answering_target(&self.env, cwd).map_err(|e| sync(e.into()))
    }

    /// Team memory of a project folder: repository, server, who is signed in, and the sync
    /// state once it has pulled or pushed. Reads the disk and the keyring only; a keyring that
    /// cannot be reached is reported in `keyring_problem`, not as a failure.
    pub fn team_sync_status(&self, cwd: &Path) -> Result<TeamSyncStatus, ApiError> {
        let target = self.sync_target_at(cwd)?;
        let sign_in = auth::sign_in_state(self.credential_store().as_ref(), target.server_url.as_deref());
        let (state, state_problem) = self.sync_client(target.clone()).status_state();
        let state = state.filter(|s| s.last_pull.is_some() || s.last_push.is_some());
        Ok(TeamSyncStatus {
            team_dir: target.team_dir(),
            memory_dir: target.memory_dir,
            repo: target.repo,
            server_url: target.server_url,
            server_url_source: config::server_url_source(&self.env),
            signed_in: sign_in.signed_in,
            signed_in_as: sign_in.user,
            keyring_problem: sign_in.keyring_problem,
            state,
            state_problem,
        })
    }

    /// Fetches the team's memory into the project's team folder (`fresh`: ignoring the cached
    /// checksum).
    pub fn team_pull_report(&self, cwd: &Path, fresh: bool) -> Result<PullReport, ApiError> {
        let c = self.sync_client(self.sync_target_at(cwd)?);
        let pulled = if fresh { c.pull_fresh() } else { c.pull() };
        pulled.map_err(sync)
    }

    /// Uploads the team folder's changes (files with secrets are never sent).
    pub fn team_push_report(&self, cwd: &Path) -> Result<PushReport, ApiError> {
        self.sync_client(self.sync_target_at(cwd)?).push().map_err(sync)
    }

    /// The team server a sign-in or sign-out is for: `url` normalised, else the configured one.
    pub fn team_server_for(&self, url: Option<&str>) -> Result<Option<String>, ApiError> {
        match url {
            Some(u) => config::normalize_server_url(u).map(Some).map_err(|e| ApiError::invalid(e.to_string())),
            None => Ok(config::server_url(&self.env)),
        }
    }

    /// Signs in to `server` with a device code, waiting until it is approved; `show` is called
    /// once with the code and the page to approve it on. The server is remembered unless
    /// `TEAM_MEMORY_SYNC_URL` sets it. Answers who signed in, when the server says.
    pub fn team_device_login(&self, server: &str, show: impl FnOnce(&DeviceLogin)) -> Result<Option<String>, ApiError> {
        let store = self.credential_store();
        let user = auth::login(&Http::for_env(&self.env), server, store.as_ref(), self.clock.as_ref(), &ThreadSleeper, show)
            .map_err(|e| ApiError::new(ErrorCode::SignInRequired, e.to_string()))?;
        if self.env.var(config::SYNC_URL_VAR).is_none() {
            config::save_server_url(&self.env, server).map_err(io)?;
        }
        Ok(user)
    }

    /// Signs out of `server`: the token leaves the OS keyring.
    pub fn team_logout(&self, server: &str) -> Result<(), ApiError> {
        auth::logout(self.credential_store().as_ref(), server).map_err(sync)
    }

    /// The newest runs in the background scheduler's run log, newest first.
    pub fn background_run_records(&self, limit: usize) -> Result<Vec<mneme_scheduler::RunRecord>, ApiError> {
        mneme_scheduler::RunLog::in_data_dir(&self.env.data_dir()).recent(limit, None).map_err(io)
    }
}

/// Whether `key` may be written under the team folder `team_dir`: the path it resolves to, or
/// why not. Mneme's strict policy applies first unless `claude_code_only`, then Claude Code's
/// own check (`validateTeamMemKey`, with its exact messages).
pub fn check_team_key(team_dir: &Path, key: &str, claude_code_only: bool) -> Result<PathBuf, ApiError> {
    let verdict = if claude_code_only {
        mneme_team::keys::validate_team_mem_key(team_dir, key).map_err(|e| e.to_string())
    } else {
        mneme_team::keys::validate_strict_team_mem_key(team_dir, key).map_err(|e| e.to_string())
    };
    verdict.map_err(ApiError::invalid)
}
