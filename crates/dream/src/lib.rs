//! Auto dream: background consolidation of an auto-memory folder, as Claude Code's autoDream
//! does it (§7), made reviewable and undoable.
//!
//! - [`gate`]: the gates, cheapest first (enabled → 24 h since the lock's mtime → 10-minute
//!   scan throttle → 5 sessions touched since), and the [`GateStatus`] the Dreams screen shows.
//! - [`lock`]: `.consolidate-lock`, byte-compatible with Claude Code's (PID body, mtime =
//!   last consolidated, 60-minute live-PID rule, rollback), so Mneme and Claude Code never
//!   dream over the same folder at once.
//! - [`offline`]: the deterministic dream (daily logs distilled, duplicates merged, relative
//!   dates made absolute, the index pruned, completed, shortened and re-ranked under the cap).
//! - model-driven dreams: Claude Code's four-phase consolidation prompt ([`prompt`]) run by
//!   `mneme-agent` under the auto-memory write policy, staged so it can be previewed.
//! - [`safety`]: the net every changeset passes before it is applied: each line it removes must
//!   still be found in the folder afterwards (or be vouched for as a duplicate), the folder
//!   weighed as the apply leaves it, index lines a removal takes with it included; a dream that
//!   would lose text, or leave the index listing memories it removes, is held for review
//!   whatever the mode. Its per-line result is the "what moved where" report kept in the record.
//! - [`history`]: every dream recorded with the full text of every file it touched; review mode
//!   holds a dream until approved or rejected; undo restores the folder byte for byte.
//! - [`logs`]: KAIROS daily logs, appended one bullet at a time.
//! - [`organization`]: the release's last check before it dreams, the organizations the
//!   folder's sessions ran under (another's, or a limited-retention owner's, skip the dream).
//!
//! [`Dreams`] is the one entry point front ends and the scheduler call. Nothing here reads the
//! process environment or the wall clock: an [`Environment`] and a [`Clock`] are injected.

pub mod dates;
pub mod error;
pub mod gate;
pub mod history;
pub mod lock;
pub mod logs;
pub mod offline;
pub mod organization;
pub mod prompt;
pub mod safety;
pub mod similar;

pub use error::DreamError;
pub use gate::{enablement, CachedFlags, ClaudeCodeOffer, DreamConfig, DreamTarget, Enablement, Gate, GateStatus, Scheduler};
pub use history::{DreamMode, DreamRecord, DreamStatus, DreamSummary, History, TrashedFile, Trigger};
pub use lock::{ConsolidationLock, LockState, LOCK_FILE};
pub use logs::{append_log, LogAppended};
pub use mneme_agent::{Changeset, FileChange};
pub use offline::{OfflineOptions, Plan, PlanStats};
pub use safety::{Accounted, Moved};

use gate::Decision;
use lock::{ms_since_epoch, NotAcquired};
use mneme_agent::{apply_changeset, AgentTask, ApplyError, Denial, Mode, Policy, Stop};
use mneme_core::sanitize::sanitize_path;
use mneme_core::Clock;
use mneme_core::versions::Profile;
use mneme_model::{Cancel, Provider};
use mneme_store::file_lock::FileLock;
use mneme_store::local_time::LocalZone;
use mneme_store::memdir::{Memdir, MemdirError, Revision};
use mneme_store::session::SessionMemory;
use mneme_store::Environment;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

/// The most model turns one dream takes. Claude Code sets none; Mneme's dreams run on the
/// user's own key and model, and a model that keeps calling tools (small local ones do) would
/// otherwise run, and bill, for ever. A real consolidation takes a few dozen.
pub const DREAM_MAX_TURNS: u32 = 100;

/// Who does the consolidation.
#[derive(Clone, Copy)]
pub enum Engine<'a> {
    /// The deterministic offline dream.
    Offline,
    /// A model, through Mneme's agent loop (or the Claude Code CLI's own).
    Model(&'a dyn Provider),
}

impl Engine<'_> {
    fn name(&self) -> (String, Option<String>) {
        match self {
            Engine::Offline => ("offline".into(), None),
            Engine::Model(p) => {
                let kind = serde_json::to_value(p.kind()).ok().and_then(|v| v.as_str().map(str::to_string));
                (kind.unwrap_or_else(|| "model".into()), Some(p.model().to_string()))
            }
        }
    }
}

/// How to run one dream.
#[derive(Clone)]
pub struct RunOptions<'a> {
    pub trigger: Trigger,
    pub engine: Engine<'a>,
    /// Apply at once whatever the folder's review mode says (`--yes`).
    pub apply_now: bool,
    /// Gate 0 as it stands, for the record.
    pub enabled: Enablement,
    /// Claude Code's cached server flags as the session sees them (its config directory), for
    /// the thresholds the record's gates are measured against.
    pub flags: CachedFlags,
    pub cancel: Cancel,
}

/// The history's record lock as a failing dream finds it (see [`Dreams::fail`]).
enum Held<'a> {
    /// Held by the caller.
    Lock(&'a FileLock),
    /// Could not be taken.
    Unavailable,
}

/// What a dream produced before it is applied.
struct Produced {
    changeset: Changeset,
    summary: String,
    notes: Vec<String>,
    stats: Option<PlanStats>,
    denials: Vec<Denial>,
    turns: u32,
    /// Removed lines the engine vouches for (the offline dream's merges and rewrites).
    accounted: Vec<Accounted>,
    /// The release the engine worked for: the safety net reads the indexes as it does (from
    /// 2.1.284 a lone CR ends a MEMORY.md line).
    release: Profile,
}

/// The note an applying dream's record carries until it is written: what a record left in that
/// state means to whoever reads it later.
const INTERRUPTED_NOTE: &str =
    "Mneme stopped while writing this dream to the memory folder, so only part of it may be there. Undo puts back every file it changed.";

/// The dream engine of one machine.
#[derive(Clone)]
pub struct Dreams {
    env: Environment,
    clock: Arc<dyn Clock>,
    /// The local time zone, asked for the offset of each instant dated (now, the day each file
    /// was written, the last consolidation), so one dream dates files from both sides of a
    /// daylight-saving change as the clock showed each, and a long-lived engine (the
    /// scheduler's) keeps writing the local day after such a change.
    zone: LocalZone,
    scheduler: Arc<Scheduler>,
    /// Thresholds given by the caller ([`Dreams::with_config`]); otherwise the server flag's,
    /// read again before each check.
    config_fixed: bool,
}

/// `<dir>/`, as Claude Code names the memory folder in prompts.
fn with_trailing_slash(dir: &Path) -> String {
    let s = dir.to_string_lossy();
    if s.ends_with('/') {
        s.into_owned()
    } else {
        format!("{s}/")
    }
}

/// Moves `rel`, a file that is not UTF-8 text, to the trash as it is, for a forced undo to
/// write over its place: the trash keeps its bytes (and its permissions and dates), and the
/// entry's id restores it. Refused, and put back, when the file changed since the undo read
/// `bytes`: the record would keep other bytes than the trash.
fn set_aside(memdir: &Memdir, rel: &str, bytes: &[u8]) -> Result<String, DreamError> {
    let entry = memdir
        .trash_file(rel)
        .map_err(|e| DreamError::Invalid(format!("{rel} is not UTF-8 text, and the undo could not keep it in Mneme's trash before replacing it ({e}); nothing was undone. Free some space or fix the trash folder, then undo again")))?;
    match memdir.trashed_content(&entry.id) {
        Ok(Some((_, kept))) if kept == bytes => Ok(entry.id),
        _ => {
            let back = match memdir.restore(&entry.id) {
                Ok(_) => String::new(),
                Err(e) => format!(" It could not be put back ({e}): `mneme memories restore {}` does that", entry.id),
            };
            Err(DreamError::Invalid(format!("{rel} changed while the undo was setting it aside; nothing was undone.{back} Undo again")))
        }
    }
}

/// Puts back the files [`set_aside`] moved to the trash for an undo that then failed; says
/// (as a sentence to append to the error) which could not be, and how to get each back.
fn put_back(memdir: &Memdir, kept: &[history::KeptBytes]) -> String {
    let left: Vec<String> = kept
        .iter()
        .filter_map(|k| memdir.restore(&k.trash_id).err().map(|e| format!("{} ({e}; `mneme memories restore {}` puts it back)", k.path.display(), k.trash_id)))
        .collect();
    if left.is_empty() {
        String::new()
    } else {
        format!(". Set aside in Mneme's trash and not put back: {}", left.join(", "))
    }
}

fn relative(root: &Path, path: &Path) -> Option<String> {
    let rest = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rest.components().map(|c| c.as_os_str().to_str()).collect();
    parts.map(|p| p.join("/")).filter(|p| !p.is_empty())
}

/// Where a dream works and what gates it, as one session sees them: the target, gate 0, and
/// the server flags Claude Code cached in that session's global config (settings' `env`
/// blocks can move it), read once.
#[derive(Debug, Clone)]
pub struct DreamSite {
    pub target: DreamTarget,
    pub enabled: Enablement,
    pub flags: CachedFlags,
    /// The session's environment (after the settings' `env` blocks).
    pub env: Environment,
}

impl DreamSite {
    fn new(target: DreamTarget, session: &SessionMemory) -> DreamSite {
        let flags = CachedFlags::of(&mneme_store::server_flags::ServerFlags::for_memory_session(session));
        let enabled = gate::enablement(&session.env, &session.settings, false, &flags);
        DreamSite { target, enabled, flags, env: session.env.clone() }
    }
}

impl Dreams {
    pub fn new(env: Environment, clock: Arc<dyn Clock>) -> Self {
        Dreams { env, clock, zone: LocalZone::default(), scheduler: Arc::new(Scheduler::new(DreamConfig::default())), config_fixed: false }
    }

    /// One offset from UTC, in seconds east, for every instant (tests, and callers that chose
    /// one on purpose).
    pub fn with_utc_offset(self, secs: i32) -> Self {
        self.with_local_zone(LocalZone::Fixed(secs))
    }

    /// Local dates (daily logs, relative dates made absolute) in `zone`, asked for each instant:
    /// front ends pass the system's, as Claude Code's runtime uses it.
    pub fn with_local_zone(mut self, zone: LocalZone) -> Self {
        self.zone = zone;
        self
    }

    /// Other thresholds than Claude Code's defaults (a fresh scheduler and throttle).
    pub fn with_config(mut self, config: DreamConfig) -> Self {
        self.scheduler = Arc::new(Scheduler::new(config));
        self.config_fixed = true;
        self
    }

    pub fn environment(&self) -> &Environment {
        &self.env
    }

    /// The memory and transcript folders for a Claude Code session started in `cwd`, and
    /// its gates as that session sees them (KAIROS never applies to Mneme's own runs).
    pub fn site_for_cwd(&self, cwd: &Path) -> DreamSite {
        let session = SessionMemory::for_cwd(&self.env, cwd);
        DreamSite::new(DreamTarget::for_session(&session), &session)
    }

    /// A memory folder given directly, under the gates of a session started in it.
    pub fn site_for_memory_dir(&self, memory_dir: &Path) -> DreamSite {
        DreamSite::new(self.target_for_memory_dir(memory_dir), &SessionMemory::for_cwd(&self.env, memory_dir))
    }

    /// A memory folder given directly. Its sessions are those of the project folder holding it
    /// (`<config>/projects/<name>/memory` → `<config>/projects/<name>`), which is where the
    /// sessions started at the repository root keep their transcripts.
    pub fn target_for_memory_dir(&self, memory_dir: &Path) -> DreamTarget {
        let parent = memory_dir.parent().unwrap_or(memory_dir);
        DreamTarget {
            memory_dir: memory_dir.to_path_buf(),
            transcript_dir: parent.to_path_buf(),
            current_session: None,
            cwd: memory_dir.to_path_buf(),
        }
    }


    /// The memory folder with the same trash the rest of Mneme uses for it.
    pub fn memdir(&self, memory_dir: &Path) -> Memdir {
        Memdir::new(memory_dir, self.trash_dir(memory_dir), self.clock.clone())
    }

    /// [`Dreams::memdir`] for a dream that writes memories: new ones the way the user's Claude
    /// Code reads them, and index lines split as it reads them (from 2.1.284 a lone CR ends
    /// one). A dream, an approve and an undo look the release up; the daily log does not.
    fn memdir_for_dream(&self, memory_dir: &Path) -> Memdir {
        self.memdir(memory_dir).for_release(&mneme_store::claude_install::installed_profile(&self.env))
    }

    fn trash_dir(&self, memory_dir: &Path) -> PathBuf {
        self.env.data_dir().join("trash").join(sanitize_path(&memory_dir.to_string_lossy()))
    }

    pub fn history(&self, memory_dir: &Path) -> History {
        History::new(&self.env.data_dir(), memory_dir)
    }

    /// The gates as they stand (changes nothing), measured against the thresholds of the
    /// server flags the session sees ([`DreamSite::flags`]; not this process's config
    /// directory, which may be another).
    pub fn status(&self, target: &DreamTarget, enabled: &Enablement, flags: &CachedFlags) -> GateStatus {
        self.refresh_config(flags);
        self.scheduler.status(enabled, target, &*self.clock)
    }

    /// Claude Code's thresholds as its cached server flag gives them now (24 hours and 5
    /// sessions when it gives none).
    fn refresh_config(&self, flags: &CachedFlags) {
        if !self.config_fixed {
            self.scheduler.set_config(flags.dream_config());
        }
    }

    pub fn mode(&self, memory_dir: &Path) -> Result<DreamMode, DreamError> {
        self.history(memory_dir).mode()
    }

    pub fn set_mode(&self, memory_dir: &Path, mode: DreamMode) -> Result<(), DreamError> {
        self.history(memory_dir).set_mode(mode)
    }

    /// A scheduler tick: when the folder's mode allows automatic dreams and every gate opens
    /// (the lock last), dreams and returns the record; otherwise `None`.
    pub async fn tick(&self, target: &DreamTarget, enabled: &Enablement, flags: &CachedFlags, engine: Engine<'_>, cancel: &Cancel) -> Result<Option<DreamRecord>, DreamError> {
        if self.mode(&target.memory_dir)? == DreamMode::Off {
            return Ok(None);
        }
        self.refresh_config(flags);
        if let Decision::Skip(_) = self.scheduler.check(enabled, target, &*self.clock) {
            return Ok(None);
        }
        let opts = RunOptions { trigger: Trigger::Auto, engine, apply_now: false, enabled: enabled.clone(), flags: flags.clone(), cancel: cancel.clone() };
        match self.run(target, &opts).await {
            Err(DreamError::Locked { .. } | DreamError::LostRace { .. }) => Ok(None),
            other => other.map(Some),
        }
    }

    /// Runs one dream now: takes the lock (a dream already running, here or in Claude Code,
    /// refuses), consolidates, records, and applies at once when `apply_now` is set or the
    /// folder's mode is automatic. A failure or cancel rolls the lock back and is recorded.
    pub async fn run(&self, target: &DreamTarget, opts: &RunOptions<'_>) -> Result<DreamRecord, DreamError> {
        let history = self.history(&target.memory_dir);
        let gate = self.status(target, &opts.enabled, &opts.flags);
        let lock = ConsolidationLock::new(&target.memory_dir).with_guard(history.dir().join("acquire.lock"));
        let acquired = match lock.try_acquire(&*self.clock)? {
            Ok(a) => a,
            Err(NotAcquired::Held(state)) => {
                let age = state.mtime_ms.map(|m| lock_age(ms_since_epoch(self.clock.now()), m)).unwrap_or_default();
                return Err(DreamError::Locked { path: lock.path().to_path_buf(), pid: state.holder_pid.unwrap_or(0), age });
            }
            Err(NotAcquired::LostRace { .. }) => return Err(DreamError::LostRace { path: lock.path().to_path_buf() }),
        };
        // However this ends (an error, a panic, a cancel), the dream is no longer running here.
        struct Running<'a>(&'a ConsolidationLock);
        impl Drop for Running<'_> {
            fn drop(&mut self) {
                self.0.finished();
            }
        }
        let _running = Running(&lock);
        let since = (acquired.prior_mtime_ns != 0).then(|| lock::system_time_of_ns(acquired.prior_mtime_ns)).flatten();
        let sessions = gate::sessions_touched_since(&target.transcript_dir, since, target.current_session.as_deref());
        let now_ms = ms_since_epoch(self.clock.now());
        let id = match history.reserve_id(now_ms) {
            Ok(id) => id,
            Err(e) => {
                let _ = lock.rollback(&acquired);
                return Err(e);
            }
        };
        let mut record = DreamRecord {
            sessions: sessions.clone(),
            lock: Some(acquired),
            ..DreamRecord::started(id, &target.memory_dir, now_ms, opts.trigger, opts.engine.name(), gate)
        };
        let produced = match self.indexes_are_text(&target.memory_dir) {
            Err(e) => Err(e),
            Ok(()) => match opts.engine {
                Engine::Offline => contained("planning the dream", || self.offline(target, since)),
                Engine::Model(p) => keep_fresh(&lock, self.clock.as_ref(), LOCK_REFRESH, self.with_model(p, target, &sessions, &opts.cancel, &history)).await,
            },
        };
        let produced = match produced {
            Ok(_) if opts.cancel.is_cancelled() => Err(DreamError::Cancelled),
            other => other,
        };
        let produced = match produced {
            Ok(p) => p,
            Err(e) => return Err(self.fail(&history, &lock, record, e, None)),
        };
        record.changeset = produced.changeset;
        record.summary = produced.summary;
        record.notes = produced.notes;
        record.stats = produced.stats;
        record.denials = produced.denials;
        record.turns = produced.turns;
        // The safety net, before anything is written: a dream that would lose text, or leave the
        // index pointing at memories it removes, waits for a person, whatever the mode or
        // `--yes` say. It weighs the folder as the apply would leave it, index edits included.
        let mut hold = false;
        let weighed = match self.as_applied(&record.changeset, &produced.release) {
            Ok(c) => c,
            Err(e) => {
                hold = true;
                record.notes.insert(0, format!("Held for review: the index lines its removals take with them could not be read ({e})."));
                record.changeset.clone()
            }
        };
        record.moved = safety::check(&weighed, &produced.accounted, &produced.release);
        let dangling = safety::dangling(&weighed, &produced.release);
        if !dangling.is_empty() {
            hold = true;
            let lines: Vec<String> = dangling.iter().map(|d| format!("{} `{}`", d.index, d.line)).collect();
            record.notes.insert(
                0,
                format!(
                    "Held for review: afterwards the index would still list {} memory(ies) this dream removes or never writes, and Claude Code would be sent to files that are not there: {}. Approve only if those lines should stay.",
                    dangling.len(),
                    lines.join("; ")
                ),
            );
        }
        let lost = record.moved.iter().filter(|m| m.lost()).count();
        if lost > 0 {
            hold = true;
            record.notes.insert(
                0,
                format!(
                    "Held for review: {lost} line(s) this dream removes would be found nowhere in the memory folder afterwards (listed as lost). Approve only if losing them is right."
                ),
            );
        }
        // A mode file that cannot be read may have said review or off: hold the dream, and say why.
        let mode = history.mode().unwrap_or_else(|e| {
            record.notes.insert(0, format!("Held for review: {e}."));
            DreamMode::Review
        });
        // An undo that finds this dream while it is being written must wait for the end.
        let records = match history.lock_records(&history.record_file(&record.id)) {
            Ok(l) => l,
            // Not taken, so not tried again for the prune: the next dream prunes.
            Err(e) => return Err(self.fail(&history, &lock, record, e, Some(Held::Unavailable))),
        };
        if record.changeset.is_empty() || (!hold && (opts.apply_now || mode == DreamMode::Automatic)) {
            if let Err(e) = contained("applying the dream", || self.apply(&history, &mut record, &produced.release)) {
                return Err(self.fail(&history, &lock, record, e, Some(Held::Lock(&records))));
            }
        }
        history.save(&record)?;
        self.prune(&history, &records, &mut record);
        Ok(record)
    }

    /// Prunes the history ([`History::prune`]) as a dream is recorded, the one time it grows,
    /// so no daemon is needed for it. `held` is the record lock. A prune that fails does not fail
    /// the dream: its record says so, and the next dream tries again.
    fn prune(&self, history: &History, held: &FileLock, record: &mut DreamRecord) {
        let problems: Vec<String> = match history.prune(held, ms_since_epoch(self.clock.now())) {
            Ok(pruned) => pruned.failed.iter().map(ToString::to_string).collect(),
            Err(e) => vec![e.to_string()],
        };
        if !problems.is_empty() {
            record.notes.push(format!("Older dream records could not be pruned ({}); the next dream tries again.", problems.join("; ")));
            let _ = history.save(record);
        }
    }

    /// Records a failed dream and rolls the lock back, returning the error to report.
    /// (A panic while planning or applying is turned into such a failure by [`contained`], so a
    /// bug met on some hostile file still rolls the lock back instead of leaving it stamped.)
    ///
    /// A failed dream is recorded too, so it prunes as well (a folder whose dreams keep failing
    /// must not grow without end): under `held`, the record lock when the caller holds it, else
    /// under the lock taken here.
    fn fail(&self, history: &History, lock: &ConsolidationLock, mut record: DreamRecord, e: DreamError, held: Option<Held<'_>>) -> DreamError {
        if let Some(a) = &record.lock {
            // Claude Code: "If the rollback itself fails, the next trigger is delayed until
            // minHours passes"; the error worth reporting is still the dream's own.
            let _ = lock.rollback(a);
        }
        // Part of it written (an apply whose rollback failed, a panic while writing): it stays
        // `applying`, which undo works from.
        if !matches!(e, DreamError::PartlyApplied { .. }) && record.status != DreamStatus::Applying {
            record.status = DreamStatus::Failed;
        }
        // A dream written in part already records its cause, and a note saying undo puts the
        // files back; the error's own words name the command line's undo, which a screen
        // showing the record (with its Undo button) must not.
        if !matches!(e, DreamError::PartlyApplied { .. }) {
            record.error = Some(e.to_string());
        }
        if let Err(save) = history.save(&record) {
            return DreamError::Invalid(format!("{e}; recording the failed dream also failed: {save}"));
        }
        match held {
            Some(Held::Lock(records)) => self.prune(history, records, &mut record),
            Some(Held::Unavailable) => {}
            None => {
                if let Ok(records) = history.lock_records(&history.record_file(&record.id)) {
                    self.prune(history, &records, &mut record);
                }
            }
        }
        e
    }

    /// Refuses a dream over an index (`MEMORY.md`, `team/MEMORY.md`) that is not UTF-8 text,
    /// naming it and how to convert it. Both engines read an index as text: the model's tools
    /// show undecodable bytes as U+FFFD and an edit would write those back over the user's
    /// bytes (the apply then refused it as "changed since planned", which running the dream
    /// again never mends), and the offline dream's merges met the store's refusal only when
    /// applied. An index that cannot be read for another reason is left to the engine, which
    /// says so in its own words.
    fn indexes_are_text(&self, memory_dir: &Path) -> Result<(), DreamError> {
        let memdir = self.memdir(memory_dir);
        for scope in [mneme_store::memdir::Scope::Private, mneme_store::memdir::Scope::Team] {
            let rel = scope.index_rel_path();
            let Ok((Some(bytes), _)) = memdir.read_raw(rel) else { continue };
            if let Some(problem) = mneme_store::text_form::NotUtf8::of(&bytes) {
                return Err(DreamError::NotUtf8 { path: memory_dir.join(rel), problem });
            }
        }
        Ok(())
    }

    fn offline(&self, target: &DreamTarget, since: Option<SystemTime>) -> Result<Produced, DreamError> {
        let memdir = self.memdir_for_dream(&target.memory_dir);
        let plan = offline::consolidate(&memdir, OfflineOptions { zone: self.zone.clone(), since, now: self.clock.now() })?;
        Ok(Produced {
            changeset: plan.changeset,
            summary: plan.summary,
            notes: plan.notes,
            stats: Some(plan.stats),
            denials: Vec::new(),
            turns: 0,
            accounted: plan.accounted,
            release: *memdir.release(),
        })
    }

    async fn with_model(
        &self,
        provider: &dyn Provider,
        target: &DreamTarget,
        sessions: &[String],
        cancel: &Cancel,
        history: &History,
    ) -> Result<Produced, DreamError> {
        let root = with_trailing_slash(&target.memory_dir);
        let team = target.memory_dir.join(mneme_store::memdir::TEAM_DIR).is_dir();
        let memdir = self.memdir_for_dream(&target.memory_dir);
        let task = AgentTask {
            system: mneme_agent::prompts::memory_policy(&target.memory_dir, memdir.type_form()),
            prompt: prompt::consolidation_prompt(
                &root,
                &target.transcript_dir.to_string_lossy(),
                // The local date as the dream starts, with the offset in force now.
                &prompt::dream_extra(dates::local_date_in(lock::ns_since_epoch(self.clock.now()), &self.zone), sessions),
                team,
            ),
            policy: Policy::AutoMem { memory_dir: target.memory_dir.clone() },
            max_turns: Some(DREAM_MAX_TURNS),
            cwd: target.cwd.clone(),
            label: "auto_dream".into(),
            work_dir: history.dir().join("work"),
            clock: self.clock.clone(),
            release: *memdir.release(),
            // The user's deny and ask rules, as the dream agent obeys them from 2.1.292.
            permission_rules: mneme_agent::PermissionRules::for_session(&SessionMemory::for_cwd(&self.env, &target.cwd), &target.cwd),
        };
        let outcome = mneme_agent::run_agent(provider, &task, Mode::Stage, cancel)
            .await
            .map_err(|e| DreamError::Agent(e.to_string()))?;
        if outcome.stop == Stop::Cancelled {
            return Err(DreamError::Cancelled);
        }
        let notes = match outcome.stop {
            Stop::MaxTurns { max_turns } => vec![format!(
                "The model was still working after {max_turns} turns, so the dream stopped there; what it changed until then is below."
            )],
            _ => Vec::new(),
        };
        Ok(Produced {
            changeset: outcome.changeset,
            summary: outcome.final_text,
            notes,
            stats: None,
            denials: outcome.denials,
            turns: outcome.turns,
            accounted: Vec::new(),
            release: *memdir.release(),
        })
    }

    /// `changeset` as the apply writes it: with the index lines its removals take with them
    /// written out as changes of their own (`mneme_agent::with_index_edits`, from the indexes
    /// as they are now). The safety net weighs this, not the changeset as planned: a dream that
    /// deletes a memory and leaves MEMORY.md alone loses the memory's index line too, and while
    /// that line was still counted as there, the memory's name and description were found in
    /// it, so the deletion of a memory whose text was nowhere else passed as losing nothing.
    /// Each index is split into lines as `release` (the dream's) reads it, as the apply splits it.
    fn as_applied(&self, changeset: &Changeset, release: &Profile) -> Result<Changeset, MemdirError> {
        mneme_agent::with_index_edits(changeset, &self.trash_dir(&changeset.root), self.clock.clone(), release)
    }

    /// Writes a record's changeset and marks it applied, its indexes edited as `release` (the
    /// user's Claude Code, which the safety net weighed them for) reads them.
    fn apply(&self, history: &History, record: &mut DreamRecord, release: &Profile) -> Result<(), DreamError> {
        if !record.changeset.is_empty() {
            // A memory the dream removes without writing its index takes its index lines with
            // it. Those index edits are written out as the dream's own changes, from the index as
            // it is now, so the record holds the index's earlier text and undo puts it back even
            // once the trash is emptied. The safety net weighed them when the dream was planned
            // and again before an approve ([`Dreams::as_applied`]). Written into the record here,
            // not when the dream is planned, so a dream waiting for review is not refused for
            // an index Claude Code has written since.
            let planned = record.changeset.clone();
            record.changeset = self.as_applied(&planned, release)?;
            // Recorded first, every file's earlier text with it: a process killed halfway leaves
            // a record undo can work from, not a half-changed folder nobody knows about.
            record.made_folders = folders_to_make(&record.changeset);
            let was = record.status;
            record.status = DreamStatus::Applying;
            record.notes.insert(0, INTERRUPTED_NOTE.to_string());
            if let Err(e) = history.save(record) {
                record.status = was;
                record.changeset = planned;
                record.notes.retain(|n| n != INTERRUPTED_NOTE);
                return Err(e);
            }
            // The apply checks every file before its first write too, but a conflict found
            // there and a failure after some writes look alike; checked here first, a failure of
            // the apply means it had started writing.
            let (changed, _) = self.compare(&record.changeset, |c| &c.before);
            if let Some(path) = changed.into_iter().next() {
                record.status = was;
                record.changeset = planned;
                record.notes.retain(|n| n != INTERRUPTED_NOTE);
                let _ = history.save(record);
                return Err(self.apply_error(&record.id, ApplyError::Changed { path }, "was planned", "reject it and run the dream again"));
            }
            let applied = apply_changeset(&record.changeset, &self.trash_dir(&record.memory_dir), self.clock.clone(), release);
            record.notes.retain(|n| n != INTERRUPTED_NOTE);
            let applied = match applied {
                Ok(a) => a,
                Err(e) => return Err(self.settle_failed_apply(history, record, was, planned, e)),
            };
            record.trashed =
                applied.trashed.into_iter().map(|t| TrashedFile { path: t.path, trash_id: t.trash_id, extra: Default::default() }).collect();
        }
        record.status = DreamStatus::Applied;
        record.applied_at_ms = Some(ms_since_epoch(self.clock.now()));
        Ok(())
    }

    /// After an apply that failed: the apply puts back what it wrote before it gives up, but
    /// ignores a failure to do so. A file still holding the dream's text means part of the
    /// dream is in the folder, and then the record stays `applying` (undo puts back every file
    /// it changed) instead of claiming nothing was written; otherwise it is as it was, with
    /// its changeset as `planned` (without the index edits the apply wrote out, which are taken
    /// again from the index as it is when the dream is next applied).
    fn settle_failed_apply(&self, history: &History, record: &mut DreamRecord, was: DreamStatus, planned: Changeset, e: ApplyError) -> DreamError {
        let (_, written) = self.compare(&record.changeset, |c| &c.after);
        let written: Vec<String> = written.iter().filter_map(|p| relative(&record.changeset.root, p)).collect();
        if written.is_empty() {
            record.status = was;
            record.changeset = planned;
            let _ = history.save(record);
            return self.apply_error(&record.id, e, "was planned", "reject it and run the dream again");
        }
        let cause = match &e {
            ApplyError::Write { path, source } => format!("{} could not be written: {source}", path.display()),
            ApplyError::Changed { path } => format!("{} changed on disk while it was written", path.display()),
            ApplyError::OutsideRoot { path, .. } => format!("{} is outside the memory folder", path.display()),
            ApplyError::PartlyApplied { path, detail, .. } => format!("{} could not be written: {detail}", path.display()),
        };
        record.status = DreamStatus::Applying;
        record.error = Some(cause.clone());
        record.notes.insert(
            0,
            format!("Writing this dream failed part way ({cause}), and putting the folder back failed too: {} still hold its text. Undo puts back every file it changed.", written.join(", ")),
        );
        let _ = history.save(record);
        DreamError::PartlyApplied { id: record.id.clone(), files: written, cause }
    }

    /// The changes whose file is not as `side` says it was (`before`) and those whose file is
    /// as `side` says (the other list), leaving out changes that leave a file as it was.
    fn compare(&self, changeset: &Changeset, side: impl Fn(&FileChange) -> &Option<String>) -> (Vec<PathBuf>, Vec<PathBuf>) {
        let memdir = Memdir::new(changeset.root.clone(), self.trash_dir(&changeset.root), self.clock.clone());
        let (mut differ, mut same) = (Vec::new(), Vec::new());
        for c in changeset.changes.iter().filter(|c| c.before != c.after) {
            let Some(rel) = relative(&changeset.root, &c.path) else {
                differ.push(c.path.clone());
                continue;
            };
            let current = match memdir.read_raw(&rel) {
                Ok((bytes, _)) => bytes,
                Err(MemdirError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => None,
                Err(_) => {
                    differ.push(c.path.clone());
                    continue;
                }
            };
            if current.as_deref() == side(c).as_ref().map(|t| t.as_bytes()) {
                same.push(c.path.clone());
            } else {
                differ.push(c.path.clone());
            }
        }
        (differ, same)
    }

    fn apply_error(&self, id: &str, e: ApplyError, when: &'static str, advice: &'static str) -> DreamError {
        match e {
            ApplyError::Changed { path } => DreamError::Conflict {
                id: id.to_string(),
                files: vec![path.display().to_string()],
                when,
                advice,
            },
            other => DreamError::Apply(other),
        }
    }

    /// Every dream of a memory folder, newest first, and the records that could not be read.
    pub fn list(&self, memory_dir: &Path) -> Result<(Vec<DreamRecord>, Vec<DreamError>), DreamError> {
        self.history(memory_dir).list()
    }

    /// How many dreams of the memory folder wait for review, without reading their changes.
    pub fn pending_count(&self, memory_dir: &Path) -> Result<usize, DreamError> {
        self.history(memory_dir).pending_count()
    }

    pub fn show(&self, memory_dir: &Path, id: &str) -> Result<DreamRecord, DreamError> {
        self.history(memory_dir).load(id)
    }

    /// Applies a pending dream. Refused, with nothing written, when a file it changes has
    /// changed since the dream read it.
    pub fn approve(&self, memory_dir: &Path, id: &str) -> Result<DreamRecord, DreamError> {
        let history = self.history(memory_dir);
        // Loaded under the lock, so a second approve (or a reject) waits and then sees this
        // one's result instead of the pending record both started from.
        let _records = history.lock_records(&history.record_file(id))?;
        let mut record = history.load(id)?;
        if record.status != DreamStatus::Pending {
            return Err(DreamError::WrongStatus { id: id.into(), status: record.status.as_str(), action: "approved" });
        }
        // The plan said where each removed line's text lives on; files it does not write may
        // have changed since (Claude Code edits memories), and then that text is gone with it.
        // Weighed as the apply writes it, as the plan was (see `run`).
        let release = *self.memdir_for_dream(memory_dir).release();
        let now = safety::check(&self.as_applied(&record.changeset, &release).unwrap_or_else(|_| record.changeset.clone()), &[], &release);
        let mut changed: Vec<String> = Vec::new();
        for m in now.iter().filter(|m| m.lost()) {
            let planned = record.moved.iter().find(|o| o.from == m.from && o.text == m.text && o.duplicate.is_none() && !o.lost());
            for f in planned.map(|o| o.found_in.clone()).unwrap_or_default() {
                if !changed.contains(&f) {
                    changed.push(f);
                }
            }
        }
        if !changed.is_empty() {
            return Err(DreamError::Conflict {
                id: id.into(),
                files: changed,
                when: "was planned",
                advice: "text a line it removes was to be found in is no longer there, so nothing was applied. Reject this dream and let a new one look again",
            });
        }
        self.apply(&history, &mut record, &release)?;
        history.save(&record)?;
        Ok(record)
    }

    /// Turns a pending dream down; nothing is written.
    pub fn reject(&self, memory_dir: &Path, id: &str) -> Result<DreamRecord, DreamError> {
        let history = self.history(memory_dir);
        let _records = history.lock_records(&history.record_file(id))?;
        let mut record = history.load(id)?;
        if record.status != DreamStatus::Pending {
            return Err(DreamError::WrongStatus { id: id.into(), status: record.status.as_str(), action: "rejected" });
        }
        record.status = DreamStatus::Rejected;
        record.rejected_at_ms = Some(ms_since_epoch(self.clock.now()));
        history.save(&record)?;
        Ok(record)
    }

    /// Undoes an applied dream in one step (`None`: the most recent applied dream that changed
    /// something), putting back every file's earlier text byte for byte, taking files it moved
    /// to the trash back from there (written anew from the record when their entry is gone) and
    /// moving files it created to the trash. Refused when any of those
    /// files changed since, unless `force`; the text a forced undo replaces is kept in the
    /// record. The lock keeps its stamp: the dream happened, and the time gate should not
    /// reopen because of an undo.
    pub fn undo(&self, memory_dir: &Path, id: Option<&str>, force: bool) -> Result<DreamRecord, DreamError> {
        let history = self.history(memory_dir);
        // Which dream `--last` means is read under the lock; until then the history is what
        // is to be saved.
        let _records = history.lock_records(&id.map_or_else(|| history.dir().to_path_buf(), |id| history.record_file(id)))?;
        let mut record = match id {
            Some(id) => history.load(id)?,
            None => history::last_undoable(&history.list()?.0).cloned().ok_or(DreamError::NothingToUndo)?,
        };
        if !matches!(record.status, DreamStatus::Applied | DreamStatus::Applying) {
            return Err(DreamError::WrongStatus { id: record.id.clone(), status: record.status.as_str(), action: "undone" });
        }
        if record.changeset.is_empty() {
            return Err(DreamError::Invalid(format!("dream {} changed nothing, so there is nothing to undo", record.id)));
        }
        // The user's release: the apply below takes a removed memory's index lines out, and a
        // restore from the trash puts them back, split as that release reads the index.
        let memdir = self.memdir_for_dream(memory_dir);
        // A dream killed between a removal's trash record and its move left that memory in
        // place beside the record, and the next trash listing finishes such a delete. After an
        // undo that found the memory as it was, that listing would take it away again with its
        // index line. So the trash is listed first: the removal is finished now, and the undo
        // brings it back below like any other, from the entry found here (`trash_holds`).
        let listed = memdir.list_trash().map(|l| l.entries).unwrap_or_default();
        let root = record.changeset.root.clone();
        let mut stale = Vec::new();
        let mut inverse = Vec::new();
        // Files a forced undo replaces that are not UTF-8 text: path, relative path, bytes.
        let mut not_text: Vec<(PathBuf, String, Vec<u8>)> = Vec::new();
        for c in record.changeset.changes.iter().rev() {
            let rel = relative(&root, &c.path)
                .ok_or_else(|| DreamError::Invalid(format!("{} is outside {}", c.path.display(), root.display())))?;
            let current = match memdir.read_raw(&rel) {
                Ok((bytes, _)) => bytes,
                Err(MemdirError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(e.into()),
            };
            // Compared as bytes: a file that is not UTF-8 is never taken for the text it shows
            // with its undecodable bytes replaced.
            let holds = |text: &Option<String>| current.as_deref() == text.as_deref().map(str::as_bytes);
            // Already as it was before the dream: a dream cut short never wrote it, or an undo
            // stopped before it saved the record (the record holds every file's text twice, so
            // a full disk stops it there) put it back. Nothing to do, and nothing changed since.
            if holds(&c.before) {
                continue;
            }
            if !holds(&c.after) {
                stale.push(rel.clone());
            }
            let before = if force {
                match current.map(String::from_utf8) {
                    None => None,
                    Some(Ok(text)) => Some(text),
                    Some(Err(e)) => {
                        let bytes = e.into_bytes();
                        let shown = String::from_utf8_lossy(&bytes).into_owned();
                        not_text.push((c.path.clone(), rel.clone(), bytes));
                        Some(shown)
                    }
                }
            } else {
                c.after.clone()
            };
            inverse.push(FileChange {
                path: c.path.clone(),
                before,
                after: c.before.clone(),
                reason: format!("undo of dream {}: {}", record.id, c.reason),
                extra: Default::default(),
            });
        }
        if !stale.is_empty() && !force {
            stale.reverse();
            return Err(DreamError::Conflict {
                id: record.id.clone(),
                files: stale,
                when: "was applied",
                advice: "nothing was undone. Look at those files, then run the undo again with --force to put the dream's earlier versions back anyway (the newer text is kept in the dream's record)",
            });
        }
        // A file the dream moved to the trash goes back from there: the same file, with its
        // permissions and dates, and the index lines a delete took with it; its trash entry is
        // used up. Written anew from the record only when the entry is gone or no longer holds
        // exactly the text the dream removed.
        let mut writes = Vec::new();
        let mut from_trash = Vec::new();
        for u in &inverse {
            match (u.before.is_none() && u.after.is_some()).then(|| self.trash_holds(&memdir, &record, &root, u, &listed)).flatten() {
                Some(found) => from_trash.push((u, found)),
                None => writes.push(u.clone()),
            }
        }
        let (kept, apart) = self.indexes_kept(&memdir, &root, &writes)?;
        writes.retain(|w| !apart.contains(&w.path));
        writes.extend(kept);
        // A file that is not UTF-8 cannot be named as text in the changeset (the apply compares
        // bytes), and its bytes must not be lost: it goes to the trash as it is, and the undo
        // then writes the dream's earlier text where nothing is. Put back if the undo fails.
        let mut undo_kept = Vec::new();
        for (path, rel, bytes) in not_text.iter().filter(|(p, ..)| writes.iter().any(|w| &w.path == p)) {
            match set_aside(&memdir, rel, bytes) {
                Ok(trash_id) => undo_kept.push(history::KeptBytes { path: path.clone(), bytes: bytes.clone(), trash_id, extra: Default::default() }),
                Err(e) => {
                    let unsaid = put_back(&memdir, &undo_kept);
                    return Err(if unsaid.is_empty() { e } else { DreamError::Invalid(format!("{e}{unsaid}")) });
                }
            }
        }
        for w in writes.iter_mut().filter(|w| undo_kept.iter().any(|k| k.path == w.path)) {
            w.before = None;
        }
        let undo = Changeset { root: root.clone(), changes: writes, extra: Default::default() };
        if let Err(e) = apply_changeset(&undo, &self.trash_dir(memory_dir), self.clock.clone(), memdir.release()) {
            let unsaid = put_back(&memdir, &undo_kept);
            let e = self.apply_error(&record.id, e, "was applied", "nothing was undone; try again");
            return Err(if unsaid.is_empty() { e } else { DreamError::Invalid(format!("{e}{unsaid}")) });
        }
        let mut not_back = Vec::new();
        // Files whose index cannot be carried through the changeset unchanged go to the trash
        // on their own, which never edits an index. Each was checked above to hold the dream's
        // text still, or, forced, is kept there as it is (bytes that are not UTF-8 included).
        for path in &apart {
            let Some(rel) = relative(&root, path) else { continue };
            match memdir.trash_file(&rel) {
                Ok(entry) => {
                    if let Some((_, _, bytes)) = not_text.iter().find(|(p, ..)| p == path) {
                        undo_kept.push(history::KeptBytes { path: path.clone(), bytes: bytes.clone(), trash_id: entry.id, extra: Default::default() });
                    }
                }
                Err(e) => not_back.push(format!("{rel} (still there: {e})")),
            }
        }
        remove_made_folders(&root, &record.made_folders);
        for (u, (rel, trash_id)) in from_trash {
            if memdir.restore(&trash_id).is_ok() {
                continue;
            }
            let text = u.after.as_deref().unwrap_or_default();
            if let Err(e) = memdir.write_raw(&rel, text.as_bytes(), &Revision::ABSENT) {
                not_back.push(format!("{rel} ({e})"));
            }
        }
        record.status = DreamStatus::Undone;
        record.undone_at_ms = Some(ms_since_epoch(self.clock.now()));
        record.undo = Some(Changeset { root, changes: inverse, extra: Default::default() });
        for k in &undo_kept {
            let rel = relative(&record.changeset.root, &k.path).unwrap_or_else(|| k.path.display().to_string());
            record.notes.insert(
                0,
                format!(
                    "{rel} was not UTF-8 text when the undo replaced it: the text shown for it has U+FFFD where its bytes do not decode. Its exact bytes are kept in this record and in Mneme's trash: move {rel} away, then run `mneme memories restore {}` to put them back.",
                    k.trash_id
                ),
            );
        }
        record.undo_kept = undo_kept;
        if !not_back.is_empty() {
            record.notes.insert(0, format!("The undo could not put back {}; the dream's record keeps their text.", not_back.join(", ")));
        }
        history.save(&record)?;
        if !not_back.is_empty() {
            return Err(DreamError::UndoneInPart { id: record.id.clone(), files: not_back });
        }
        Ok(record)
    }

    /// For an undo that removes memories (the ones the dream created) without writing their
    /// index: the index as it is now, written back unchanged. Removing a memory on its own takes
    /// its index lines with it, but these lines were there before the dream (a memory written
    /// back from its index line leaves the index alone), so the undo must leave them; an index
    /// the undo writes itself is never edited a second time by the removals.
    ///
    /// An index that is not UTF-8 cannot be carried as text: the removals under it are
    /// answered apart (the second list), for the undo to trash on their own.
    fn indexes_kept(&self, memdir: &Memdir, root: &Path, writes: &[FileChange]) -> Result<(Vec<FileChange>, Vec<PathBuf>), DreamError> {
        let written = |index: &str| writes.iter().any(|w| w.after.is_some() && relative(root, &w.path).as_deref() == Some(index));
        let mut kept: Vec<FileChange> = Vec::new();
        let mut apart = Vec::new();
        let mut not_text: Vec<&str> = Vec::new();
        for w in writes.iter().filter(|w| w.after.is_none() && w.before.is_some()) {
            let Some(rel) = relative(root, &w.path) else { continue };
            let index = mneme_store::memdir::Scope::of(&rel).index_rel_path();
            if written(index) || kept.iter().any(|k| relative(root, &k.path).as_deref() == Some(index)) {
                continue;
            }
            if not_text.contains(&index) {
                apart.push(w.path.clone());
                continue;
            }
            let bytes = match memdir.read_raw(index) {
                Ok((bytes, _)) => bytes,
                Err(MemdirError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(e.into()),
            };
            let Some(bytes) = bytes else { continue };
            let Ok(text) = String::from_utf8(bytes) else {
                not_text.push(index);
                apart.push(w.path.clone());
                continue;
            };
            kept.push(FileChange {
                path: root.join(index),
                before: Some(text.clone()),
                after: Some(text),
                reason: format!("{index} kept as it is while {rel} is removed"),
                extra: Default::default(),
            });
        }
        Ok((kept, apart))
    }

    /// The trash entry holding a file the dream removed, when `undo` (the undo's change that
    /// recreates it) can take it from there: the record names the entry for that file (or,
    /// for a dream killed before it saved those names, an entry of `listed` for that path made
    /// since the dream began), and the entry is of this folder, for that path, and holds
    /// exactly the text the dream removed. Answers the file's path in the folder and the
    /// entry's id.
    fn trash_holds(&self, memdir: &Memdir, record: &DreamRecord, root: &Path, undo: &FileChange, listed: &[mneme_store::memdir::TrashEntry]) -> Option<(String, String)> {
        let rel = relative(root, &undo.path)?;
        let want = undo.after.as_deref()?.as_bytes();
        let holds = |id: &str| -> Option<()> {
            // Ids are the trash's own (`<ms>-<slug>`); anything else could name a path outside it.
            if id.is_empty() || id.starts_with('.') || !id.bytes().all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')) {
                return None;
            }
            let entry_dir = memdir.trash_dir().join(id);
            let entry: mneme_store::memdir::TrashEntry =
                serde_json::from_slice(&mneme_store::open::read_plain_capped(&entry_dir.join("record.json"), 1 << 20).ok()?.0).ok()?;
            if entry.original_rel_path != rel || history::normalize(&entry.memdir_root) != history::normalize(root) {
                return None;
            }
            let stored = entry_dir.join(rel.rsplit('/').next()?);
            if !std::fs::symlink_metadata(&stored).ok()?.is_file() {
                return None;
            }
            let (bytes, _) = mneme_store::open::read_plain_capped(&stored, want.len() as u64).ok()?;
            (bytes == want).then_some(())
        };
        if let Some(trashed) = record.trashed.iter().find(|t| t.path == undo.path) {
            return holds(&trashed.trash_id).map(|()| (rel.clone(), trashed.trash_id.clone()));
        }
        let mut made: Vec<&mneme_store::memdir::TrashEntry> =
            listed.iter().filter(|e| e.original_rel_path == rel && i64::try_from(e.deleted_at_ms).is_ok_and(|at| at >= record.created_at_ms)).collect();
        made.sort_by_key(|e| std::cmp::Reverse(e.deleted_at_ms));
        made.into_iter().find(|e| holds(&e.id).is_some()).map(|e| (rel.clone(), e.id.clone()))
    }

    /// Appends one bullet to today's daily log of `memory_dir`.
    pub fn log(&self, memory_dir: &Path, text: &str) -> Result<LogAppended, DreamError> {
        logs::append_log(&self.memdir(memory_dir), &*self.clock, &self.zone, text)
    }

    /// The daily log of `date` (`None`: today, local time): its path and text, if it exists.
    pub fn read_log(&self, memory_dir: &Path, date: Option<time::Date>) -> Result<(PathBuf, Option<String>), DreamError> {
        let date = date.unwrap_or_else(|| dates::local_date_in(lock::ns_since_epoch(self.clock.now()), &self.zone));
        let path = logs::log_path(memory_dir, date);
        let text = read_contained(memory_dir, &logs::log_rel_path(date), LOG_READ_CAP)?;
        Ok((path, text.map(|b| String::from_utf8_lossy(&b).into_owned())))
    }
}

/// The most of a daily log [`Dreams::read_log`] reads. A log grows by one short line per entry
/// (a busy year of them is well under a megabyte); a bigger file is not a log to show whole.
pub const LOG_READ_CAP: u64 = 8 << 20;

/// The bytes of `rel` in the memory folder `root` (`None` when missing), read as the folder's
/// own reads are: links followed only while they stay inside the folder, a plain file only
/// (a FIFO would wait for ever), and no more than `cap` bytes. The memory folder may come from
/// a cloned repository, whose `logs/…` could link to any file of the user's, or to `/dev/zero`.
fn read_contained(root: &Path, rel: &str, cap: u64) -> Result<Option<Vec<u8>>, DreamError> {
    let abs = rel.split('/').fold(root.to_path_buf(), |p, s| p.join(s));
    let outside = |detail: String| DreamError::Memdir(MemdirError::OutsideMemdir { path: rel.to_string(), root: root.to_path_buf(), detail });
    let real_root = match std::fs::canonicalize(root) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(DreamError::io("find the memory folder", root, e)),
    };
    let real = match std::fs::canonicalize(&abs) {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(outside(format!("where {} leads could not be checked: {e}", abs.display()))),
    };
    if !real.starts_with(&real_root) {
        return Err(outside(format!("{} resolves to {}", abs.display(), real.display())));
    }
    match mneme_store::open::read_plain_capped(&real, cap) {
        Ok((bytes, _)) => Ok(Some(bytes)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::FileTooLarge => Err(DreamError::Invalid(format!(
            "{} is larger than the {} MiB a daily log is read up to; open it in an editor instead",
            abs.display(),
            cap >> 20
        ))),
        // What is there, said once ("it is a named pipe (FIFO)"), not the reader's own
        // "not a plain file (a folder, …)" inside "is not a regular file (…)".
        Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => {
            let detail = match std::fs::metadata(&real) {
                Ok(meta) => format!("it is {}", mneme_store::open::kind_of(&meta)),
                Err(_) => "it is a folder, named pipe, socket or device".to_string(),
            };
            Err(DreamError::Memdir(MemdirError::NotARegularFile { path: rel.to_string(), detail }))
        }
        Err(e) => Err(DreamError::io("read the daily log", &abs, e)),
    }
}


/// The folders `changeset` makes when applied: those above each file it creates, up to (not
/// including) the memory folder, that do not exist yet, relative and `/`-separated. A memory
/// written back from an index line such as `notes/x.md` makes `notes/`.
fn folders_to_make(changeset: &Changeset) -> Vec<String> {
    let root = &changeset.root;
    let mut made: Vec<String> = Vec::new();
    for c in changeset.changes.iter().filter(|c| c.before.is_none() && c.after.is_some()) {
        let Some(rel) = relative(root, &c.path) else { continue };
        let mut dir = Path::new(&rel).parent();
        while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
            let Some(d_rel) = d.to_str().map(|s| s.replace('\\', "/")) else { break };
            if made.contains(&d_rel) {
                break;
            }
            match std::fs::symlink_metadata(root.join(d)) {
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => made.push(d_rel),
                // There already (or not to be told): not the dream's to remove, nor are those above.
                _ => break,
            }
            dir = d.parent();
        }
    }
    made
}

/// After an undo took away files the dream created: the folders the dream made for them
/// ([`DreamRecord::made_folders`]), deepest first, each only when empty. A folder that was
/// there before the dream, empty or not, is not among them, so it stays; a folder the user
/// made since inside one of them keeps that one too. `remove_dir` removes only an empty folder
/// and never follows a link; a name that would leave the memory folder (a record edited by
/// hand) is passed over.
fn remove_made_folders(root: &Path, made: &[String]) {
    let mut made: Vec<&Path> = made
        .iter()
        .map(Path::new)
        .filter(|p| p.components().count() > 0 && p.components().all(|c| matches!(c, std::path::Component::Normal(_))))
        .collect();
    made.sort_by_key(|p| std::cmp::Reverse(p.components().count()));
    for d in made {
        let _ = std::fs::remove_dir(root.join(d));
    }
}

/// Runs `f`, turning a panic into an error that says what was being done, so the caller's
/// failure path (lock rollback, a failed record) still runs.
fn contained<T>(what: &str, f: impl FnOnce() -> Result<T, DreamError>) -> Result<T, DreamError> {
    std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).unwrap_or_else(|panic| {
        let why = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "no message".into());
        Err(DreamError::Invalid(format!("internal error while {what} ({why}); the dream stopped there. Please report it")))
    })
}

/// How long ago a held lock was taken, for the error that refuses a dream. A lock stamped ahead
/// of the clock (a clock that ran ahead, a folder copied from another machine) is said to be,
/// with what that means: it counts as held until an hour after its stamp, however far off that
/// is. Less than a minute ahead is another clock's jitter, not worth a sentence.
fn lock_age(now_ms: i64, mtime_ms: i64) -> String {
    let ahead = mtime_ms.saturating_sub(now_ms);
    if ahead < 60_000 {
        return format!("taken {} min ago", now_ms.saturating_sub(mtime_ms).max(0) / 60_000);
    }
    let span = if ahead < 2 * 3_600_000 { format!("{} min", ahead / 60_000) } else { format!("{:.1} h", ahead as f64 / 3.6e6) };
    format!(
        "stamped {span} in the future, by a clock that was ahead or on another machine; a lock counts as held until an hour after its stamp"
    )
}

/// How often a model dream stamps its lock again: well inside [`lock::HOLDER_STALE`].
const LOCK_REFRESH: std::time::Duration = std::time::Duration::from_secs(10 * 60);

/// Runs `work` while stamping `lock` every `every`, so a long model dream keeps the lock
/// other dreamers respect. A failed stamp is not the dream's failure: the lock only matters to
/// someone else, and the next stamp tries again.
async fn keep_fresh<T>(lock: &ConsolidationLock, clock: &dyn Clock, every: std::time::Duration, work: impl std::future::Future<Output = T>) -> T {
    tokio::pin!(work);
    let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tokio::select! {
            done = &mut work => return done,
            _ = ticks.tick() => {
                let _ = lock.refresh(clock);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    /// A model dream longer than the lock's hour stamps the lock as it goes, so another
    /// dreamer does not take it for a crashed one; the work's answer comes through.
    #[tokio::test]
    async fn a_long_dream_keeps_its_lock_fresh() {
        let dir = tempfile::tempdir().unwrap();
        let lock = ConsolidationLock::new(dir.path().join("memory")).with_pid(std::process::id());
        std::fs::create_dir_all(dir.path().join("memory")).unwrap();
        std::fs::write(lock.path(), std::process::id().to_string()).unwrap();
        filetime::set_file_mtime(lock.path(), filetime::FileTime::from_unix_time(1_700_000_000, 0)).unwrap();
        let later = mneme_core::clock::FixedClock::at_unix_secs(1_800_000_000);
        let work = async {
            tokio::time::sleep(std::time::Duration::from_millis(150)).await;
            7
        };
        assert_eq!(keep_fresh(&lock, &later, std::time::Duration::from_millis(20), work).await, 7);
        let mtime = filetime::FileTime::from_last_modification_time(&std::fs::metadata(lock.path()).unwrap());
        assert_eq!(mtime.unix_seconds(), 1_800_000_000);
    }

    use super::*;
    use mneme_core::FixedClock;
    use std::fs;

    fn record(dreams: &Dreams, memory_dir: &Path, id: &str, changes: Vec<FileChange>) -> DreamRecord {
        let gate = dreams.status(&dreams.target_for_memory_dir(memory_dir), &Enablement::On, &CachedFlags::default());
        let mut record = DreamRecord::started(id.into(), memory_dir, 1, Trigger::Manual, ("offline".into(), None), gate);
        record.changeset.changes = changes;
        record
    }

    fn change(mem: &Path, rel: &str, before: &str, after: &str) -> FileChange {
        FileChange { path: mem.join(rel), before: Some(before.into()), after: Some(after.into()), reason: format!("{rel}: edited"), extra: Default::default() }
    }

    fn removal(mem: &Path, rel: &str, before: &str) -> FileChange {
        FileChange { path: mem.join(rel), before: Some(before.into()), after: None, reason: format!("{rel}: removed"), extra: Default::default() }
    }

    /// A memory folder in a home of its own, and the dream engine over it.
    struct Folder {
        _home: mneme_testsupport::TestHome,
        mem: PathBuf,
        dreams: Dreams,
    }

    impl Folder {
        /// With `files` (relative path, bytes) written.
        fn with(files: &[(&str, &[u8])]) -> Folder {
            let home = mneme_testsupport::TestHome::new();
            let mem = home.root.join("memory");
            fs::create_dir_all(&mem).unwrap();
            for (rel, bytes) in files {
                fs::write(mem.join(rel), bytes).unwrap();
            }
            let dreams = Dreams::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_800_000_000)));
            Folder { _home: home, mem, dreams }
        }

        /// `changes` recorded as dream 1 and applied as a dream is, the record saved.
        fn applied(&self, changes: Vec<FileChange>) -> DreamRecord {
            let history = self.dreams.history(&self.mem);
            let mut rec = record(&self.dreams, &self.mem, "1", changes);
            history.reserve_id(1).unwrap();
            self.dreams.apply(&history, &mut rec, &mneme_core::versions::newest()).unwrap();
            history.save(&rec).unwrap();
            rec
        }

        fn read(&self, rel: &str) -> String {
            fs::read_to_string(self.mem.join(rel)).unwrap()
        }
    }

    /// Every file under `dir`, relative path → bytes.
    fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
        fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, Vec<u8>>) {
            for e in fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(root, &p, out);
                } else {
                    out.insert(p.strip_prefix(root).unwrap().to_string_lossy().into_owned(), fs::read(&p).unwrap());
                }
            }
        }
        let mut out = std::collections::BTreeMap::new();
        walk(dir, dir, &mut out);
        out
    }

    const B: &str = "---\nname: B\ndescription: b\ntype: user\n---\n\nB.\n";
    const INDEX: &str = "# Index\n\n- [A](a.md) — a\n- [B](b.md) — b\n- [C](c.md) — c\n\ntrailing words\n";
    /// [`INDEX`] without b.md's line.
    const INDEX_WITHOUT_B: &str = "# Index\n\n- [A](a.md) — a\n- [C](c.md) — c\n\ntrailing words\n";

    /// A folder with a.md, b.md and its index line among others.
    fn with_b() -> Folder {
        Folder::with(&[("a.md", b"a\n"), ("b.md", B.as_bytes()), ("MEMORY.md", INDEX.as_bytes())])
    }

    /// A dream that removes a memory without writing the index (a model dream that deleted a
    /// file and left MEMORY.md alone): the apply takes the memory's index line with it, and the
    /// undo, taking the file back from the trash, puts that line back where it was.
    #[test]
    fn undoing_a_removal_that_took_an_index_line_puts_the_line_back_where_it_was() {
        let f = with_b();
        f.applied(vec![removal(&f.mem, "b.md", B)]);
        assert!(!f.mem.join("b.md").exists());
        assert_eq!(f.read("MEMORY.md"), INDEX_WITHOUT_B, "the premise");
        f.dreams.undo(&f.mem, Some("1"), false).unwrap();
        assert_eq!(f.read("b.md"), B);
        assert_eq!(f.read("MEMORY.md"), INDEX);
    }

    /// The index lines such a dream takes with the memory are in its record, as a change of
    /// MEMORY.md: undone after the trash was emptied, the folder is as it was, index and all
    /// (the record used to hold no earlier text of MEMORY.md, and the line was lost).
    #[test]
    fn undoing_a_removal_with_the_trash_emptied_gives_the_index_lines_back() {
        let f = with_b();
        let before = tree(&f.mem);
        let rec = f.applied(vec![removal(&f.mem, "b.md", B)]);
        assert_eq!(f.read("MEMORY.md"), INDEX_WITHOUT_B, "the premise");
        let index = rec.changeset.changes.iter().find(|c| c.path == f.mem.join("MEMORY.md")).expect("the index edit is in the record");
        assert_eq!(index.before.as_deref(), Some(INDEX));
        assert!(f.dreams.memdir(&f.mem).empty_trash().unwrap().removed >= 1);
        f.dreams.undo(&f.mem, Some("1"), false).unwrap();
        assert_eq!(tree(&f.mem), before);
    }

    /// An index changed since the dream is not overwritten by its undo: the undo refuses, names
    /// MEMORY.md, and changes nothing.
    #[test]
    fn undoing_a_removal_refuses_when_the_index_changed_since() {
        let f = with_b();
        f.applied(vec![removal(&f.mem, "b.md", B)]);
        let edited = "# Index\n\n- [A](a.md) — a\n- [C](c.md) — c\n- [D](d.md) — written since\n\ntrailing words\n";
        fs::write(f.mem.join("MEMORY.md"), edited).unwrap();
        let now = tree(&f.mem);
        let e = f.dreams.undo(&f.mem, Some("1"), false).unwrap_err();
        assert!(matches!(&e, DreamError::Conflict { files, .. } if files == &vec!["MEMORY.md".to_string()]), "{e}");
        assert!(e.to_string().contains("--force"), "{e}");
        assert_eq!(tree(&f.mem), now);
        assert_eq!(f.dreams.show(&f.mem, "1").unwrap().status, DreamStatus::Applied);
    }

    /// A dream that removes a memory and the index too: the undo gives both back as they were,
    /// the memory's line once.
    #[test]
    fn undoing_a_dream_that_removed_a_memory_and_its_index_gives_both_back() {
        let f = with_b();
        let before = tree(&f.mem);
        f.applied(vec![removal(&f.mem, "b.md", B), removal(&f.mem, "MEMORY.md", INDEX)]);
        assert!(!f.mem.join("MEMORY.md").exists() && !f.mem.join("b.md").exists(), "the premise");
        f.dreams.undo(&f.mem, Some("1"), false).unwrap();
        assert_eq!(tree(&f.mem), before);
    }

    /// A record an older Mneme wrote for such a dream has no change of the index: the apply took
    /// the line out on its own and the trash entry kept it. Its undo still puts the line back
    /// where it was, from the trash entry.
    #[test]
    fn a_removal_recorded_without_its_index_edit_is_undone_as_before() {
        let f = Folder::with(&[("b.md", B.as_bytes()), ("MEMORY.md", INDEX.as_bytes())]);
        let before = tree(&f.mem);
        let history = f.dreams.history(&f.mem);
        let mut rec = record(&f.dreams, &f.mem, "1", vec![removal(&f.mem, "b.md", B)]);
        history.reserve_id(1).unwrap();
        // What the older apply did: the changeset as planned, the index edited by the delete.
        let applied = apply_changeset(&rec.changeset, &f.dreams.trash_dir(&f.mem), f.dreams.clock.clone(), &mneme_core::versions::newest()).unwrap();
        rec.trashed = applied.trashed.into_iter().map(|t| TrashedFile { path: t.path, trash_id: t.trash_id, extra: Default::default() }).collect();
        rec.status = DreamStatus::Applied;
        history.save(&rec).unwrap();
        assert_eq!(f.read("MEMORY.md"), INDEX_WITHOUT_B, "the premise");
        f.dreams.undo(&f.mem, Some("1"), false).unwrap();
        assert_eq!(tree(&f.mem), before);
    }

    /// A dream that created a memory whose line was already in an index that is not UTF-8
    /// (Windows-1252 bytes): the undo removes the memory and leaves the index's bytes alone.
    #[test]
    fn undoing_a_created_memory_leaves_an_index_that_is_not_utf8_as_it_is() {
        let index: &[u8] = b"- [Caf\xe9](cafe.md) \x97 espresso\n- [X](x.md) \x97 x\n";
        let f = Folder::with(&[("MEMORY.md", index)]);
        let x = "---\nname: X\ndescription: x\ntype: user\n---\n\nx\n";
        let created = FileChange { path: f.mem.join("x.md"), before: None, after: Some(x.into()), reason: "x.md: written back".into(), extra: Default::default() };
        f.applied(vec![created]);
        assert_eq!(f.read("x.md"), x, "the premise");
        f.dreams.undo(&f.mem, Some("1"), false).unwrap();
        assert!(!f.mem.join("x.md").exists());
        assert_eq!(fs::read(f.mem.join("MEMORY.md")).unwrap(), index);
    }

    /// An apply that failed after writing, whose own rollback failed too (it ignores that),
    /// leaves a file with the dream's text: the record says applying, not "nothing written",
    /// the error says which files and to undo, and undo puts them back. With every file as it
    /// was, the record is as it was and the error is the apply's own.
    #[test]
    fn a_failed_apply_whose_rollback_failed_stays_undoable() {
        let f = Folder::with(&[]);
        let (mem, dreams) = (&f.mem, &f.dreams);
        let history = dreams.history(mem);
        let changes = vec![change(mem, "a.md", "a0\n", "a1\n"), change(mem, "b.md", "b0\n", "b1\n")];
        let failure = || ApplyError::Write { path: mem.join("b.md"), source: MemdirError::NotFound { path: "b.md".into() } };

        fs::write(mem.join("a.md"), "a0\n").unwrap();
        fs::write(mem.join("b.md"), "b0\n").unwrap();
        let mut rec = record(dreams, mem, "1", changes.clone());
        history.reserve_id(1).unwrap();
        let planned = rec.changeset.clone();
        let err = dreams.settle_failed_apply(&history, &mut rec, DreamStatus::Pending, planned, failure());
        assert_eq!(err.code(), "not-applied", "{err}");
        assert_eq!(history.load("1").unwrap().status, DreamStatus::Pending, "nothing written: as it was");

        // a.md was written and could not be put back.
        fs::write(mem.join("a.md"), "a1\n").unwrap();
        let mut rec = record(dreams, mem, "2", changes);
        history.reserve_id(2).unwrap();
        let planned = rec.changeset.clone();
        let err = dreams.settle_failed_apply(&history, &mut rec, DreamStatus::Pending, planned, failure());
        assert_eq!(err.code(), "partly-applied");
        assert!(err.to_string().contains(": a.md still hold its text. Undo it with `mneme dream undo 2`"), "{err}");
        let saved = history.load("2").unwrap();
        assert_eq!(saved.status, DreamStatus::Applying);
        assert!(saved.notes[0].contains("a.md still hold its text"), "{:?}", saved.notes);
        // Recorded as failed, the record keeps the cause, not the command line's undo command:
        // every front end shows the record's error.
        let lock = ConsolidationLock::new(mem);
        let err = dreams.fail(&history, &lock, saved, err, None);
        let saved = history.load("2").unwrap();
        assert_eq!(saved.status, DreamStatus::Applying, "{err}");
        assert_eq!(saved.error.as_deref(), Some(format!("{} could not be written: {}", mem.join("b.md").display(), MemdirError::NotFound { path: "b.md".into() }).as_str()));
        let undone = dreams.undo(mem, None, false).unwrap();
        assert_eq!(undone.id, "2");
        assert_eq!((fs::read_to_string(mem.join("a.md")).unwrap(), fs::read_to_string(mem.join("b.md")).unwrap()), ("a0\n".into(), "b0\n".into()));
    }
}
