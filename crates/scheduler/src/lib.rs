//! The background scheduler. Claude Code runs extraction and dream from its own turn loop; Mneme
//! runs them for every watched project from outside, plus team sync. There is one loop per job
//! type, each in its own module and readable top to bottom:
//!
//! - [`extraction`]: tails transcripts, and on each turn end applies Claude Code's extraction
//!   rules (cursor, skip, trailing run, every-N) through `mneme-extract`;
//! - [`dream`]: checks the auto-dream gates (cheapest first) every few minutes and on turn ends,
//!   and dreams through `mneme-dream` when they open;
//! - [`team`]: keeps team memory in sync through `mneme-team`'s client;
//! - [`claude_check`]: when the installed Claude Code changes, checks once that Mneme still
//!   shows exactly what it sends (the check itself is supplied by the api).
//!
//! Every run is announced as [`Event`]s (for the app's progress display) and recorded in the
//! [`runs::RunLog`]; failures back off; a loop that panics is recorded and started again
//! ([`supervise`]); [`SchedulerHandle::shutdown`] cancels and waits.
//! It runs inside the desktop app and headless as `mneme daemon`.

pub mod backoff;
pub mod claude_check;
pub mod dream;
pub mod extraction;
pub mod runs;
pub mod team;

pub use backoff::Backoff;
pub use claude_check::ClaudeCodeCheck;
pub use dream::LocalOffset;
pub use runs::{JobKind, Outcome, RunJob, RunLog, RunRecord};

use mneme_core::Clock;
use mneme_model::{Cancel, Provider};
use mneme_store::projects::OwnFolderNotAnswering;
use mneme_store::Environment;
use serde::Serialize;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};
use tokio::sync::{broadcast, mpsc};

/// What the scheduler tells anyone listening (the app's status bar, `mneme daemon`'s log).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Event {
    Started { id: String, job: JobKind, target: String },
    Progress { id: String, job: JobKind, message: String },
    Finished { record: RunRecord },
}

/// Shared by every loop: the clock, the run log and the event channel.
#[derive(Clone)]
pub struct Reporter {
    clock: Arc<dyn Clock>,
    log: RunLog,
    events: broadcast::Sender<Event>,
    /// Runs are finishing that the run log cannot record (the disk full or read-only): said
    /// once when it starts, not at every run while it lasts.
    unrecorded: Arc<std::sync::atomic::AtomicBool>,
}

impl Reporter {
    pub fn new(clock: Arc<dyn Clock>, log: RunLog) -> Reporter {
        let (events, _) = broadcast::channel(256);
        Reporter { clock, log, events, unrecorded: Arc::default() }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    pub fn log(&self) -> &RunLog {
        &self.log
    }

    pub fn now_ms(&self) -> u64 {
        self.clock.now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }

    /// Announces a run; finish it with [`Run::finish`].
    pub fn begin(&self, job: JobKind, target: impl Into<String>) -> Run {
        let started_ms = self.now_ms();
        let id = runs::new_run_id(started_ms);
        let target = target.into();
        // Nobody listening is normal (the daemon with no client attached).
        let _ = self.events.send(Event::Started { id: id.clone(), job, target: target.clone() });
        Run { reporter: self.clone(), id, job, target, started_ms }
    }
}

/// One run in flight.
pub struct Run {
    reporter: Reporter,
    id: String,
    job: JobKind,
    target: String,
    started_ms: u64,
}

impl Run {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn progress(&self, message: impl Into<String>) {
        let _ = self.reporter.events.send(Event::Progress { id: self.id.clone(), job: self.job, message: message.into() });
    }

    /// Records the outcome and announces it. The run is announced with its own outcome even when
    /// the run log cannot be written (a full or read-only disk): what the job did is not turned
    /// into a failure it did not have. That the log cannot record it is said on the event
    /// channel (a progress line of this run, which `mneme daemon` prints and the app shows)
    /// with what to do, once when it starts; the runs after it, while the log still cannot be
    /// written, are announced without saying it again, and a record written again ends it.
    pub fn finish(self, outcome: Outcome) -> RunRecord {
        use std::sync::atomic::Ordering;
        let record = RunRecord {
            id: self.id,
            job: self.job.into(),
            target: self.target,
            started_ms: self.started_ms,
            finished_ms: self.reporter.now_ms(),
            outcome,
        };
        match self.reporter.log.append(&record) {
            Ok(()) => self.reporter.unrecorded.store(false, Ordering::Relaxed),
            Err(e) => {
                if !self.reporter.unrecorded.swap(true, Ordering::Relaxed) {
                    let message = format!("{e}. Until then runs are not recorded in the history; this is said once.");
                    let _ = self.reporter.events.send(Event::Progress { id: record.id.clone(), job: self.job, message });
                }
            }
        }
        let _ = self.reporter.events.send(Event::Finished { record: record.clone() });
        record
    }
}

/// Which loops run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Jobs {
    pub extraction: bool,
    /// Session notes (session memory) after each turn; needs a model provider.
    pub session_memory: bool,
    pub dream: bool,
    pub team: bool,
}

impl Default for Jobs {
    fn default() -> Self {
        Jobs { extraction: true, session_memory: false, dream: true, team: true }
    }
}

pub struct SchedulerConfig {
    pub env: Environment,
    pub clock: Arc<dyn Clock>,
    pub jobs: Jobs,
    /// Project folders dream and team sync look after from the start; more are learned from
    /// sessions as they end turns.
    pub folders: Folders,
    /// How often dream gates are checked besides turn ends (Claude Code's scan throttle is
    /// 10 minutes, so checking more often finds nothing new).
    pub dream_tick: Duration,
    pub team_pull_every: Duration,
    /// How often new transcript lines are looked for.
    pub poll: Duration,
    /// Checks a newly installed Claude Code against Mneme's view; `None` leaves it out.
    pub claude_code_check: Option<Arc<dyn ClaudeCodeCheck>>,
    /// How often the installed Claude Code's release is looked at.
    pub claude_check_every: Duration,
    /// The offset from UTC the dates dreams write are local to. Callers that read the offset
    /// at start (while single-threaded) give it as the fallback.
    pub utc_offset: LocalOffset,
}

impl SchedulerConfig {
    pub fn new(env: Environment, clock: Arc<dyn Clock>) -> SchedulerConfig {
        SchedulerConfig {
            env,
            clock,
            jobs: Jobs::default(),
            folders: Folders::Discover,
            dream_tick: Duration::from_secs(600),
            team_pull_every: Duration::from_secs(300),
            poll: Duration::from_millis(500),
            claude_code_check: None,
            // Claude Code updates itself at most a few times a day.
            claude_check_every: Duration::from_secs(30 * 60),
            utc_offset: LocalOffset::System { fallback: 0 },
        }
    }
}

/// Why the scheduler did not start.
#[derive(Debug, thiserror::Error)]
pub enum SchedulerError {
    #[error("another Mneme scheduler already runs on this machine{}: the desktop app, `mneme serve --scheduler` or `mneme daemon`. One is enough (two would extract the same turns twice); stop the other first", pid.map(|p| format!(" (PID {p})")).unwrap_or_default())]
    AlreadyRunning { pid: Option<u32> },
    #[error("{}", lock_text(path, source))]
    Lock { path: PathBuf, source: std::io::Error },
}

/// [`SchedulerError::Lock`] for people: the disk's refusal (full, read-only, another account's)
/// says which and what to do, where the system's bare words say neither.
fn lock_text(path: &std::path::Path, source: &std::io::Error) -> String {
    match mneme_store::atomic::Refusal::of(source) {
        Some(r) => format!("could not take the scheduler lock {}: {}", path.display(), r.says(path)),
        None => format!("could not take the scheduler lock {}: {source}; check that Mneme's data folder is writable", path.display()),
    }
}

/// The most of `scheduler.lock` read for the holder's PID (a few digits).
const MAX_LOCK_BODY_BYTES: u64 = 64;

/// One scheduler per machine: an exclusive `flock` on `<data dir>/scheduler.lock` with the
/// holder's PID as its body, held for the scheduler's life and released by the kernel when
/// the process ends, however it ends.
struct InstanceLock(#[allow(dead_code)] mneme_store::file_lock::FileLock);

impl InstanceLock {
    fn take(data_dir: &std::path::Path) -> Result<InstanceLock, SchedulerError> {
        use std::io::{Seek, Write};
        let path = data_dir.join("scheduler.lock");
        let err = |source| SchedulerError::Lock { path: path.clone(), source };
        let Some(mut lock) = mneme_store::file_lock::FileLock::try_take(&path).map_err(err)? else {
            // The holder's PID, when the file is a plain one holding a short body: read without
            // waiting on a FIFO (one held open by its locker never ends) and never past a PID.
            let body = mneme_store::open::read_own_file(&path, MAX_LOCK_BODY_BYTES).ok().flatten().unwrap_or_default();
            let pid = std::str::from_utf8(&body).ok().and_then(|b| b.trim().parse().ok());
            return Err(SchedulerError::AlreadyRunning { pid });
        };
        // The PID over the old body, then cut to its length: emptied first, a full disk would
        // refuse the new body and leave the file empty (the page the old body held is given
        // back by the truncation), where written in place it needs no new space.
        let f = lock.file();
        let pid = std::process::id().to_string();
        f.rewind().and_then(|()| f.write_all(pid.as_bytes())).and_then(|()| f.set_len(pid.len() as u64)).map_err(err)?;
        Ok(InstanceLock(lock))
    }
}

/// Which project folders the dream and team loops start with.
#[derive(Debug, Clone, PartialEq)]
pub enum Folders {
    /// Every project Claude Code has sessions for that still exists, found by each loop when it
    /// starts (off the caller's start-up path: the desktop window does not wait for the scan).
    Discover,
    Given(Vec<PathBuf>),
}

impl Folders {
    /// The folders; with [`Folders::Discover`], an error when the drive holding Claude Code's
    /// own folders does not answer (discovery then gives up after its patience).
    fn resolve(&self, env: &Environment) -> Result<Vec<PathBuf>, OwnFolderNotAnswering> {
        match self {
            Folders::Discover => existing_project_folders(env),
            Folders::Given(v) => Ok(v.clone()),
        }
    }
}

/// The running loops.
pub struct SchedulerHandle {
    reporter: Reporter,
    cancel: Cancel,
    tasks: Vec<tokio::task::JoinHandle<()>>,
    ready: tokio::sync::watch::Receiver<bool>,
    dream_passes: tokio::sync::watch::Receiver<u64>,
    _instance: Arc<InstanceLock>,
}

impl SchedulerHandle {
    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.reporter.subscribe()
    }

    pub fn run_log(&self) -> &RunLog {
        self.reporter.log()
    }

    /// Waits until the extraction loop watches transcripts (at once when it does not run), so
    /// a session that writes after this is seen.
    pub async fn ready(&self) {
        let mut rx = self.ready.clone();
        // An error means the loop is gone; there is nothing left to wait for.
        let _ = rx.wait_for(|r| *r).await;
    }

    /// How many passes the dream loop has finished (each checks the gates of every folder due
    /// and dreams where they are open); stays at 0 when the dream loop does not run. A pass
    /// that starts after the count is read finishes by the time it has gone up by two, which
    /// is how a caller learns that the gates were looked at again without sleeping on it.
    pub fn dream_passes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.dream_passes.clone()
    }

    /// Cancels every loop and waits for them: a run in flight is cancelled (a dream rolls its
    /// lock back), and team sync flushes a last push.
    pub async fn shutdown(mut self) {
        self.cancel.cancel();
        for t in std::mem::take(&mut self.tasks) {
            let _ = t.await;
        }
    }
}

impl Drop for SchedulerHandle {
    /// A handle dropped without [`SchedulerHandle::shutdown`] (its owner failed) cancels the
    /// loops all the same: left running, they would go on without anyone to stop them, and a
    /// runtime being dropped waits for ever for the team loop on its blocking pool.
    fn drop(&mut self) {
        self.cancel.cancel();
    }
}

/// Starts the loops on the current tokio runtime, unless another scheduler already runs on
/// this machine (same data folder).
pub fn start(config: SchedulerConfig) -> Result<SchedulerHandle, SchedulerError> {
    let instance = InstanceLock::take(&config.env.data_dir())?;
    let reporter = Reporter::new(config.clock.clone(), RunLog::in_data_dir(&config.env.data_dir()));
    let cancel = Cancel::new();
    let mut tasks = Vec::new();
    let (turn_tx, turn_rx) = mpsc::unbounded_channel();
    let (ready_tx, ready) = tokio::sync::watch::channel(!config.jobs.extraction);
    let (passes, dream_passes) = tokio::sync::watch::channel(0u64);
    // Every loop holds the instance lock until it has stopped, so another scheduler cannot
    // start while one of these still runs (the team loop finishing its last push).
    let instance = Arc::new(instance);
    let supervised = |job, name, spawn| tokio::spawn(supervise(job, name, reporter.clone(), cancel.clone(), spawn));
    if config.jobs.extraction {
        let l = Arc::new(extraction::ExtractionLoop {
            extractor: mneme_extract::Extractor::new(config.env.clone(), config.clock.clone()),
            reporter: reporter.clone(),
            session_memory: config.jobs.session_memory,
            poll: config.poll,
            turn_ends: turn_tx,
            ready: ready_tx,
        });
        let held = instance.clone();
        tasks.push(supervised(
            JobKind::Extraction,
            "extraction",
            Box::new(move |c| {
                let (l, held) = (l.clone(), held.clone());
                tokio::spawn(async move {
                    let _held = held;
                    l.run(c).await;
                })
            }),
        ));
    }
    if config.jobs.dream {
        // The loop owns the receiving end of the turn-end channel, which a restart keeps.
        let l = Arc::new(tokio::sync::Mutex::new(dream::DreamLoop {
            dreams: mneme_dream::Dreams::new(config.env.clone(), config.clock.clone()),
            utc_offset: config.utc_offset,
            reporter: reporter.clone(),
            tick: config.dream_tick,
            env: config.env.clone(),
            folders: config.folders.clone(),
            turn_ends: turn_rx,
            passes,
        }));
        let held = instance.clone();
        tasks.push(supervised(
            JobKind::Dream,
            "dream",
            Box::new(move |c| {
                let (l, held) = (l.clone(), held.clone());
                tokio::spawn(async move {
                    let _held = held;
                    l.lock().await.run(c).await;
                })
            }),
        ));
    }
    if config.jobs.team {
        let l = Arc::new(team::TeamLoop {
            env: config.env.clone(),
            clock: config.clock.clone(),
            reporter: reporter.clone(),
            folders: config.folders.clone(),
            pull_every: config.team_pull_every,
            credentials: None,
        });
        let held = instance.clone();
        tasks.push(supervised(
            JobKind::TeamSync,
            "team sync",
            Box::new(move |c| {
                let (l, held) = (l.clone(), held.clone());
                tokio::task::spawn_blocking(move || {
                    let _held = held;
                    l.run(c);
                })
            }),
        ));
    }
    if let Some(check) = config.claude_code_check {
        let l = Arc::new(claude_check::ClaudeCheckLoop { check, reporter: reporter.clone(), every: config.claude_check_every });
        let held = instance.clone();
        tasks.push(supervised(
            JobKind::ClaudeCodeCheck,
            "Claude Code check",
            Box::new(move |c| {
                let (l, held) = (l.clone(), held.clone());
                tokio::spawn(async move {
                    let _held = held;
                    l.run(c).await;
                })
            }),
        ));
    }
    Ok(SchedulerHandle { reporter, cancel, tasks, ready, dream_passes, _instance: instance })
}

/// Starts one run of a loop (on the runtime, or on the blocking pool for a synchronous one).
type SpawnLoop = Box<dyn FnMut(Cancel) -> tokio::task::JoinHandle<()> + Send>;

/// The first pause before a loop that panicked starts again; it doubles with each panic in a
/// row, up to [`RESTART_CAP`].
const RESTART_AFTER: Duration = Duration::from_secs(1);
const RESTART_CAP: Duration = Duration::from_secs(600);

/// Keeps a loop running until the scheduler is cancelled. A loop that panics (a bug: every
/// error it expects is a recorded run) would otherwise stop for good while the others, and
/// the daemon, run on as if nothing happened: the panic is recorded as a failed run of that
/// job, and the loop starts again after a pause that grows while it keeps panicking.
async fn supervise(job: JobKind, name: &'static str, reporter: Reporter, cancel: Cancel, mut spawn: SpawnLoop) {
    let mut backoff = Backoff::new(RESTART_AFTER, RESTART_CAP);
    loop {
        let started = tokio::time::Instant::now();
        let panic = match spawn(cancel.clone()).await {
            Ok(()) => return,
            Err(e) if e.is_panic() => panic_text(e.into_panic()),
            // The runtime is shutting down: nothing to restart on.
            Err(_) => return,
        };
        // A loop that ran for a long while before this panic is not panicking in a row.
        if started.elapsed() >= RESTART_CAP {
            backoff.succeeded();
        }
        let wait = backoff.failed();
        let error = if cancel.is_cancelled() {
            format!("the {name} loop stopped on an internal error while shutting down ({panic}). This is a bug in Mneme; please report it with this message")
        } else {
            format!(
                "the {name} loop stopped on an internal error ({panic}); it starts again in {} s. This is a bug in Mneme; please report it with this message",
                wait.as_secs()
            )
        };
        reporter.begin(job, format!("{name} loop")).finish(Outcome::Failed { error });
        if extraction::sleep_or_cancel(wait, &cancel).await {
            return;
        }
    }
}

/// What a panic said, for the run log.
fn panic_text(payload: Box<dyn std::any::Any + Send>) -> String {
    match payload.downcast::<String>() {
        Ok(s) => format!("panicked: {s}"),
        Err(payload) => match payload.downcast::<&'static str>() {
            Ok(s) => format!("panicked: {s}"),
            Err(_) => "panicked".into(),
        },
    }
}

/// Every project folder Claude Code has sessions for that still exists on this machine. One
/// whose drive is not answering counts (discovery gives up on it after its patience): the
/// loops skip it while it does not answer and take it up once it does, where leaving it out
/// would forget it until the next start. An error when the drive holding Claude Code's own
/// folders (its config folder, the remote memory base) does not answer: then nothing is known.
pub fn existing_project_folders(env: &Environment) -> Result<Vec<PathBuf>, OwnFolderNotAnswering> {
    Ok(mneme_store::projects::discover_projects(env)?
        .into_iter()
        .filter(|p| p.project_exists || p.drive_not_answering)
        .filter_map(|p| p.project_path)
        .collect())
}

/// The provider chosen in Settings → Model provider, or `None` for offline; read afresh for
/// each run so a change in Settings applies to the next run without a restart. Its key is read
/// with the background time limit: nobody is there to answer a locked keyring's prompt.
pub(crate) fn provider_engine(env: &Environment) -> Result<Option<Arc<dyn Provider>>, mneme_model::ModelError> {
    mneme_model::configured_provider_in_background(env)
}

/// Whether `dir`'s drive answers (`mneme_store::drive::answers`), asked off the async workers:
/// the answer may take up to its patience. A project on a drive that does not answer is
/// skipped for the round: every look at it would hold the loop, and every other project's
/// turn with it, until the drive answers again.
pub(crate) async fn drive_answers(dir: &std::path::Path) -> bool {
    let dir = dir.to_path_buf();
    tokio::task::spawn_blocking(move || mneme_store::drive::answers(&dir)).await.unwrap_or(true)
}

/// The run outcome when the chosen provider cannot be built.
pub(crate) fn provider_unusable(e: &mneme_model::ModelError) -> Outcome {
    Outcome::Failed { error: format!("the model provider is not usable: {e}") }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_core::FixedClock;

    #[test]
    fn a_run_is_announced_and_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let clock: Arc<dyn Clock> = Arc::new(FixedClock::at_unix_secs(1_700_000_000));
        let reporter = Reporter::new(clock, RunLog::in_data_dir(dir.path()));
        let mut rx = reporter.subscribe();
        let run = reporter.begin(JobKind::Dream, "/mem");
        run.progress("orienting");
        let rec = run.finish(Outcome::Done { summary: "Improved 2 memories".into() });
        assert!(matches!(rx.try_recv().unwrap(), Event::Started { job: JobKind::Dream, .. }));
        assert!(matches!(rx.try_recv().unwrap(), Event::Progress { ref message, .. } if message == "orienting"));
        assert_eq!(rx.try_recv().unwrap(), Event::Finished { record: rec.clone() });
        assert_eq!(reporter.log().recent(5, None).unwrap(), vec![rec]);
    }

    /// A loop that panics is recorded as a failed run of its job and started again; a loop
    /// that returns (cancelled) is not.
    #[tokio::test(start_paused = true)]
    async fn a_loop_that_panics_is_recorded_and_started_again() {
        let dir = tempfile::tempdir().unwrap();
        let reporter = Reporter::new(Arc::new(mneme_core::SystemClock), RunLog::in_data_dir(dir.path()));
        let cancel = Cancel::new();
        let (starts_tx, mut starts) = tokio::sync::watch::channel(0u32);
        let spawn: SpawnLoop = Box::new(move |c: Cancel| {
            starts_tx.send_modify(|n| *n += 1);
            let first = *starts_tx.borrow() == 1;
            tokio::spawn(async move {
                if first {
                    panic!("index out of bounds");
                }
                c.cancelled().await;
            })
        });
        let supervisor = tokio::spawn(supervise(JobKind::Dream, "dream", reporter.clone(), cancel.clone(), spawn));
        starts.wait_for(|n| *n == 2).await.unwrap();
        cancel.cancel();
        supervisor.await.unwrap();
        assert_eq!(*starts.borrow(), 2, "started once more after the panic, not after the cancel");
        let runs = reporter.log().recent(5, None).unwrap();
        assert_eq!(runs.len(), 1, "{runs:?}");
        assert_eq!(runs[0].job, JobKind::Dream);
        assert_eq!(runs[0].target, "dream loop");
        let Outcome::Failed { error } = &runs[0].outcome else { panic!("{runs:?}") };
        assert!(error.starts_with("the dream loop stopped on an internal error (panicked: index out of bounds); it starts again in 1 s."), "{error}");
    }
}
