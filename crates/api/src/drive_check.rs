//! What both shells (the desktop app's commands and `mneme serve`'s methods) do around every
//! operation, so a project on a drive that stops answering (a network share whose server went
//! away, a USB stick or FUSE mount whose daemon hangs) never leaves a screen waiting for ever:
//!
//! 1. Before the operation, the drive of the folder the request names ([`NamesFolder`]) is asked
//!    (`mneme_store::drive::answers`: `statfs`, at most `drive::PATIENCE`); one that does not
//!    answer gets [`not_answering`] at once. So is the drive of its memory folder when that is
//!    on another drive (`autoMemoryDirectory` may put it on a network share): nearly every
//!    operation on a project reads its `MEMORY.md`, and would otherwise wait the whole patience.
//! 2. The operation runs on a thread of its own, and the shell waits for it at most a patience
//!    ([`OPERATION_PATIENCE`] unless the shell was built with another). Every system call under a
//!    hung drive blocks until it answers and nothing can interrupt it, so when the patience runs
//!    out the thread is left behind (it ends by itself when the drive answers) and the request
//!    answers `unavailable`: [`stopped_answering`] when the folder's drive, or its memory
//!    folder's elsewhere, does not answer now, [`gave_up`] when they do (then another drive the
//!    operation reads is the likely one). Operations that wait on a model, a team server or
//!    Claude Code itself ([`WAITS_ON_OTHERS`]) may take longer than any patience on a healthy
//!    drive: for them both drives are asked each time the patience runs out, and only one that
//!    does not answer ends the wait, or [`PATIENT_ROUNDS`] patiences (a hung drive those checks
//!    cannot see, or one an operation naming no folder reads: `version_check` runs Claude Code
//!    in the project used last).
//! 3. While a request given up on is still blocked, later requests naming the same folder (or,
//!    naming none, of the same operation) are answered at once with [`still_stuck`] instead of
//!    queueing behind it, on the drive or on a lock it holds (a memory folder's `flock`, the
//!    one-per-machine lock of `version_check` and of the agent-memory probe), so a hung drive
//!    costs one blocked thread per folder however often the page asks, as the drive check's own
//!    looks do.
//!
//! Operations that read the project's transcripts ([`READS_TRANSCRIPTS`]: the dream gates count
//! the sessions there and search them for the organizations they ran under) ask the drive of
//! Claude Code's configuration folder too, where the transcripts live (`CLAUDE_CONFIG_DIR`, or
//! `~/.claude`), before anything else: the settings every request reads first are there, so a
//! hung one would otherwise hold the request until the patience ran out.

use crate::ops::*;
use crate::{ApiError, ErrorCode};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a shell waits for an operation before it stops waiting: far more than any operation
/// that only reads and writes files takes on a healthy drive (the largest memory folders list in
/// well under a second), short enough that a person is told what is wrong while still looking.
pub const OPERATION_PATIENCE: Duration = Duration::from_secs(60);

/// How many patiences an operation of [`WAITS_ON_OTHERS`] is waited for at most while its
/// folder's drive answers (30 minutes with [`OPERATION_PATIENCE`]): longer than a dream or an
/// extraction takes with a slow model, and still an end.
pub const PATIENT_ROUNDS: u32 = 30;

/// Operations that wait on something other than the drive (a model, a team server, the user's
/// own Claude Code, the OS keyring): no patience is too short for them to exceed on a healthy
/// drive, so only a drive that does not answer ends their wait.
pub const WAITS_ON_OTHERS: &[&str] = &[
    "verify", "version_check", "agent_context", "test_provider", "recall", "run_extraction", "run_dream",
    "team_remote", "team_pull", "team_push", "team_sync", "team_history", "team_rollback", "team_remove",
    "team_purge", "team_sign_ins", "team_sign_in", "team_sign_in_poll", "team_sign_out", "set_provider_key",
    "provider_settings", "inbox_promote",
];

/// Operations that read the transcripts of the project the request names, in Claude Code's
/// configuration folder (`projects/<project>`): the dream gates' session count and the
/// organization search, and an extraction run by hand, which reads the newest transcript.
pub const READS_TRANSCRIPTS: &[&str] = &["dream_status", "set_dream_mode", "run_dream", "run_extraction"];

/// The folder a request names, whose drive is asked before the operation runs: `cwd`, as sent
/// (a relative one is taken from the shell's start folder by the caller). Every request type of
/// [`operations!`](crate::operations) says whether it names one, so a new one cannot be added
/// without deciding.
pub trait NamesFolder {
    fn folder(&self) -> Option<&Path>;
}

macro_rules! names_no_folder {
    ($($t:ty),* $(,)?) => { $(impl NamesFolder for $t { fn folder(&self) -> Option<&Path> { None } })* };
}
macro_rules! names_folder_at {
    ($($t:ty),* $(,)?) => { $(impl NamesFolder for $t { fn folder(&self) -> Option<&Path> { Some(&self.at.cwd) } })* };
}

impl NamesFolder for crate::ops::Folder {
    fn folder(&self) -> Option<&Path> {
        Some(&self.cwd)
    }
}

names_no_folder!(
    NoArgs, TypedPath, DiffQuery, Toggle, MemoryDirValue, crate::ProviderSettingsInput, ProviderKey, TeamServerValue,
    TeamServerRef, TeamSignInRef, InboxRef, InboxEdit, InboxPromote, RunsQuery,
);
names_folder_at!(
    ContextQuery, CreateMemory, DailyLogAppend, DailyLogQuery, DreamModeChange, DreamRef, DreamUndo, EditMemory, FileRef,
    MemoriesQuery, MemoryPageQuery, MemoryRef, MergeQuery, ModeChange, RecallAsk, RunNow, SaveFile, SaveMemory,
    TeamConflictRef, TeamKeyRef, TeamRollbackQuery, TouchedQuery, TrashRef, UndoFixIndex,
);

/// The answer for a folder whose drive does not answer a look within `drive::PATIENCE`, before
/// anything was done there.
pub fn not_answering(folder: &Path) -> ApiError {
    ApiError::new(
        ErrorCode::Unavailable,
        format!(
            "The drive holding {} is not answering (a network share whose server went away, or a USB stick or mounted folder that hangs). Mneme will try again on the next request; check the drive or its connection.",
            folder.display()
        ),
    )
}

/// The answer for a request whose folder's drive stopped answering while the operation ran.
pub fn stopped_answering(folder: &Path, waited: Duration) -> ApiError {
    ApiError::new(
        ErrorCode::Unavailable,
        format!(
            "The drive holding {} stopped answering during this request (a network share whose server went away, or a USB stick or mounted folder that hangs), so Mneme stopped waiting after {}. What the request started finishes by itself if the drive comes back; check the drive or its connection, then try again.",
            folder.display(),
            seconds(waited)
        ),
    )
}

/// The answer for a request that did not finish within the patience although its folder's
/// drive answers (or it names none).
pub fn gave_up(waited: Duration) -> ApiError {
    ApiError::new(
        ErrorCode::Unavailable,
        format!(
            "This request did not finish within {}, so Mneme stopped waiting: a drive it reads (the project's memory folder, or a folder its settings name) may have stopped answering. What the request started finishes by itself if the drive comes back; check that drive or its connection, then try again.",
            seconds(waited)
        ),
    )
}

/// The answer for a request naming a folder an earlier request given up on is still blocked in
/// (or, naming none, for the same operation as one still blocked: `folder` is `None`).
pub fn still_stuck(folder: Option<&Path>, name: &str) -> ApiError {
    let what = match folder {
        Some(f) => format!("An earlier request for {}", f.display()),
        None => format!("An earlier request of the same kind ({name})"),
    };
    ApiError::new(
        ErrorCode::Unavailable,
        format!(
            "{what} is still waiting on a drive that stopped answering (a project's folder or its memory folder), so Mneme does not start another. It will try again once that drive answers; check the drive or its connection."
        ),
    )
}

fn seconds(d: Duration) -> String {
    match d.as_secs() {
        1 => "1 second".to_string(),
        0 => format!("{} ms", d.as_millis()),
        s => format!("{s} seconds"),
    }
}

/// What a blocked request holds up: the folder it names, or the operation when it names none.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Key {
    Folder(PathBuf),
    Operation(String),
}

impl Key {
    fn of(name: &str, folder: Option<&Path>) -> Key {
        match folder {
            Some(f) => Key::Folder(f.to_path_buf()),
            None => Key::Operation(name.to_string()),
        }
    }
}

/// The requests given up on that are still blocked, by what they hold up.
static STUCK: Mutex<Option<HashMap<Key, usize>>> = Mutex::new(None);

fn stuck() -> std::sync::MutexGuard<'static, Option<HashMap<Key, usize>>> {
    STUCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// One operation's thread and whether a request given up on counts it as blocked in a folder;
/// one lock decides both, so the count never outlives the thread nor misses its return.
#[derive(Default)]
struct Blocked {
    returned: bool,
    counted_in: Option<Key>,
}

/// Held by the operation's thread: when it returns (or panics), it is no longer blocked.
struct Returns(Arc<Mutex<Blocked>>);

impl Drop for Returns {
    fn drop(&mut self) {
        let mut b = self.0.lock().unwrap_or_else(|e| e.into_inner());
        b.returned = true;
        let Some(key) = b.counted_in.take() else { return };
        if let Some(map) = stuck().as_mut() {
            if let Some(n) = map.get_mut(&key) {
                *n -= 1;
                if *n == 0 {
                    map.remove(&key);
                }
            }
        }
    }
}

/// Counts the operation as blocked, holding up `key`, unless it returned already.
fn count_blocked(blocked: &Mutex<Blocked>, key: Key) {
    let mut b = blocked.lock().unwrap_or_else(|e| e.into_inner());
    if !b.returned {
        *stuck().get_or_insert_with(HashMap::new).entry(key.clone()).or_default() += 1;
        b.counted_in = Some(key);
    }
}

/// Runs the operation `name` for a request naming `folder` (already taken from the shell's start
/// folder) as the module overview says: the drive asked first, then the operation on a thread of
/// its own waited for at most `patience` (for [`WAITS_ON_OTHERS`]: while the drive answers, up
/// to [`PATIENT_ROUNDS`] patiences). Call from inside a tokio runtime (both shells are).
pub async fn guarded<T: Send + 'static>(
    name: &str,
    mneme: &crate::Mneme,
    folder: Option<PathBuf>,
    patience: Duration,
    op: impl FnOnce() -> Result<T, ApiError> + Send + 'static,
) -> Result<T, ApiError> {
    let key = Key::of(name, folder.as_deref());
    if stuck().as_ref().is_some_and(|m| m.contains_key(&key)) {
        return Err(still_stuck(folder.as_deref(), name));
    }
    if let Some(folder) = &folder {
        if !answers(folder).await {
            return Err(not_answering(folder));
        }
    }
    // Where the transcripts are, as the environment says before any settings are read (their
    // `env` blocks may move it: that folder is asked on the operation's thread).
    let transcripts = (folder.is_some() && READS_TRANSCRIPTS.contains(&name)).then(|| mneme.env.projects_dir());
    if let Some(transcripts) = &transcripts {
        if !answers(transcripts).await {
            return Err(not_answering(transcripts));
        }
    }
    let reads_transcripts = transcripts.is_some();
    let blocked = Arc::new(Mutex::new(Blocked::default()));
    let returns = Returns(blocked.clone());
    // A thread of its own rather than the runtime's blocking pool: dropping a runtime waits for
    // its blocking tasks, so one stuck on a hung drive would keep `mneme serve` from exiting.
    let (tx, mut answer) = tokio::sync::oneshot::channel();
    let env = mneme.env.clone();
    let (project, thread_env) = (folder.clone(), env.clone());
    std::thread::Builder::new()
        .name("mneme-operation".into())
        .spawn(move || {
            let _returns = returns;
            // On the operation's thread: finding the memory folder reads the project's settings,
            // and a drive that stopped answering since it was asked is then the patience's to see.
            let checked = match &project {
                Some(p) => folders_answer(&thread_env, p, reads_transcripts).map_err(|dir| not_answering(&dir)),
                None => Ok(()),
            };
            let _ = tx.send(checked.and_then(|()| op()));
        })
        .map_err(|e| {
            ApiError::new(
                ErrorCode::Io,
                format!("Mneme could not start a thread for this request: {e}. The system is short of threads or memory; close some programs and try again."),
            )
        })?;
    let patient = WAITS_ON_OTHERS.contains(&name);
    let mut waited = Duration::ZERO;
    loop {
        match tokio::time::timeout(patience, &mut answer).await {
            Ok(Ok(answer)) => return answer,
            Ok(Err(_)) => return Err(ApiError::new(ErrorCode::Io, "The request failed inside Mneme (the operation panicked); the error output has the details.")),
            Err(_) => {
                waited += patience;
                let silent = match &folder {
                    Some(f) => silent_drive(&env, f, reads_transcripts).await,
                    None => None,
                };
                if patient && silent.is_none() && waited < patience * PATIENT_ROUNDS {
                    continue;
                }
                count_blocked(&blocked, key);
                return Err(match silent {
                    Some(dir) => stopped_answering(&dir, waited),
                    None => gave_up(waited),
                });
            }
        }
    }
}

/// Asks the drive of the memory folder a session started in `cwd` uses, when it is not `cwd`'s
/// own drive (which the caller has asked); `Err` with that folder when it does not answer.
/// Finding the folder reads settings (the config folder's and the project's) and follows the
/// project's git root, never the memory folder itself.
pub(crate) fn memory_folder_answers(env: &mneme_store::Environment, cwd: &Path) -> Result<(), PathBuf> {
    folders_answer(env, cwd, false)
}

/// [`memory_folder_answers`], and with `transcripts` the drive of the folder the session keeps
/// its transcripts in too, when settings' `env` blocks moved it off the drive the caller asked.
fn folders_answer(env: &mneme_store::Environment, cwd: &Path, transcripts: bool) -> Result<(), PathBuf> {
    match folders_elsewhere(env, cwd, transcripts).into_iter().find(|dir| !mneme_store::drive::answers(dir)) {
        Some(dir) => Err(dir),
        None => Ok(()),
    }
}

/// The memory folder a session started in `cwd` uses when it is on another drive than `cwd`,
/// and with `transcripts` its transcripts' folder (`projects`) when the session's settings put
/// it elsewhere than the environment did (the caller asked that one already).
fn folders_elsewhere(env: &mneme_store::Environment, cwd: &Path, transcripts: bool) -> Vec<PathBuf> {
    let session = mneme_store::session::SessionMemory::for_cwd(env, cwd);
    let mounts = mneme_store::drive::mount_points();
    let on = |p: &Path| mneme_store::drive::holding_mount(&mounts, p);
    let mut out = Vec::new();
    let projects = session.env.projects_dir();
    if transcripts && on(&projects) != on(&env.projects_dir()) && on(&projects) != on(cwd) {
        out.push(projects);
    }
    let memory = session.dir.dir;
    if on(&memory) != on(cwd) {
        out.push(memory);
    }
    out
}

/// `folder` or its memory folder when its drive does not answer (asked as before the
/// operation), off the async workers: an operation waiting on others is waited for only while
/// both answer, and one given up on names the drive that stopped. The memory folder is found on
/// a look of its own, so a project's drive that stops answering meanwhile cannot hold this.
async fn silent_drive(env: &mneme_store::Environment, folder: &Path, transcripts: bool) -> Option<PathBuf> {
    let (env, probe) = (env.clone(), folder.to_path_buf());
    let ask = move || {
        if !mneme_store::drive::answers(&probe) {
            return Some(probe);
        }
        // The transcripts' folder, where an operation reading them may have stopped.
        let projects = env.projects_dir();
        if transcripts && !mneme_store::drive::answers(&projects) {
            return Some(projects);
        }
        match mneme_store::drive::look(&probe, move |f| folders_elsewhere(&env, f, transcripts)) {
            // The project's drive stopped answering while its settings were read.
            None => Some(probe),
            Some(others) => others.into_iter().find(|dir| !mneme_store::drive::answers(dir)),
        }
    };
    tokio::task::spawn_blocking(ask).await.unwrap_or(None)
}

/// `drive::answers`, off the async workers.
async fn answers(folder: &Path) -> bool {
    let probe = folder.to_path_buf();
    tokio::task::spawn_blocking(move || mneme_store::drive::answers(&probe)).await.unwrap_or(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::mpsc;

    #[test]
    fn every_operation_waiting_on_others_exists() {
        for name in WAITS_ON_OTHERS {
            assert!(crate::ops::NAMES.contains(name), "{name} is not an operation");
        }
    }

    /// A name here that no operation has (one renamed) would silently skip the transcripts' drive.
    #[test]
    fn every_operation_reading_transcripts_exists() {
        for name in READS_TRANSCRIPTS {
            assert!(crate::ops::NAMES.contains(name), "{name} is not an operation");
        }
    }

    /// A Mneme on a home of its own: the check finds each request's memory folder through it.
    fn mneme() -> (mneme_testsupport::TestHome, crate::Mneme) {
        let home = mneme_testsupport::TestHome::new();
        let m = crate::Mneme::new(home.env.clone(), Arc::new(crate::FixedClock::at_unix_secs(1_764_590_000)));
        (home, m)
    }

    fn runtime() -> tokio::runtime::Runtime {
        tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap()
    }

    /// An operation blocked past the patience (on a drive the check cannot see: the folder's own
    /// drive answers) is answered `unavailable`; while it stays blocked, requests naming the same
    /// folder fail at once without running; once it returns they run again.
    #[test]
    fn a_blocked_operation_is_given_up_on_and_its_folder_fails_fast_until_it_returns() {
        let rt = runtime();
        let (_home, m) = mneme();
        let dir = tempfile::tempdir().unwrap();
        let folder = dir.path().to_path_buf();
        let (release, blocked) = mpsc::channel::<()>();
        let (returned_tx, returned) = mpsc::channel::<()>();
        let first = rt.block_on(guarded("memories", &m, Some(folder.clone()), Duration::from_millis(50), move || {
            let _ = blocked.recv();
            let _ = returned_tx.send(());
            Ok(1)
        }));
        let e = first.unwrap_err();
        assert_eq!(e.code, ErrorCode::Unavailable);
        assert!(e.message.contains("did not finish within 50 ms"), "{}", e.message);

        let ran = Arc::new(Mutex::new(false));
        let r = ran.clone();
        let again = rt.block_on(guarded("memories", &m, Some(folder.clone()), OPERATION_PATIENCE, move || {
            *r.lock().unwrap() = true;
            Ok(2)
        }));
        let e = again.unwrap_err();
        assert!(e.message.contains(&format!("An earlier request for {} is still waiting", folder.display())), "{}", e.message);
        assert!(!*ran.lock().unwrap(), "nothing ran behind the blocked request");
        // Another folder is not held up.
        let other = tempfile::tempdir().unwrap();
        assert_eq!(rt.block_on(guarded("memories", &m, Some(other.path().to_path_buf()), OPERATION_PATIENCE, || Ok(3))).unwrap(), 3);

        release.send(()).unwrap();
        returned.recv_timeout(Duration::from_secs(60)).expect("the blocked operation returns");
        // Its thread lets go of the folder as it ends, a moment after the operation returned.
        let answer = loop {
            match rt.block_on(guarded("memories", &m, Some(folder.clone()), OPERATION_PATIENCE, || Ok(4))) {
                Err(e) if e.message.contains("still waiting") => std::thread::yield_now(),
                other => break other,
            }
        };
        assert_eq!(answer.unwrap(), 4);
    }

    /// An operation that waits on a model or a server is not given up on while its folder's
    /// drive answers, however many patiences it takes.
    #[test]
    fn an_operation_waiting_on_others_is_waited_for_while_the_drive_answers() {
        let rt = runtime();
        let (_home, m) = mneme();
        let dir = tempfile::tempdir().unwrap();
        let (release, blocked) = mpsc::channel::<()>();
        let releaser = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(300));
            release.send(()).unwrap();
        });
        let answer = rt.block_on(guarded("run_dream", &m, Some(dir.path().to_path_buf()), Duration::from_millis(50), move || {
            blocked.recv().unwrap();
            Ok("dreamt")
        }));
        releaser.join().unwrap();
        assert_eq!(answer.unwrap(), "dreamt");
    }

    /// An operation that waits on others is given up on after [`PATIENT_ROUNDS`] patiences even
    /// while the drive answers (here it names no folder, as `version_check`, which runs Claude
    /// Code in the project used last holding a lock of its own); while it stays blocked, the
    /// same operation fails at once instead of queueing behind it, and others run.
    #[test]
    fn an_operation_naming_no_folder_is_given_up_on_in_the_end_and_fails_fast_meanwhile() {
        let rt = runtime();
        let (_home, m) = mneme();
        let (release, blocked) = mpsc::channel::<()>();
        let (returned_tx, returned) = mpsc::channel::<()>();
        // Waited for on a thread of its own, so a wait without an end fails the test instead.
        let (answer_tx, answer) = mpsc::channel();
        let moved = m.clone();
        std::thread::spawn(move || {
            let first = runtime().block_on(guarded("version_check", &moved, None, Duration::from_millis(10), move || {
                let _ = blocked.recv();
                let _ = returned_tx.send(());
                Ok(())
            }));
            let _ = answer_tx.send(first);
        });
        let e = answer.recv_timeout(Duration::from_secs(60)).expect("the operation was waited for without an end").unwrap_err();
        assert!(e.message.contains(&format!("did not finish within {} ms", 10 * PATIENT_ROUNDS)), "{}", e.message);
        let again = rt.block_on(guarded("version_check", &m, None, OPERATION_PATIENCE, || Ok(()))).unwrap_err();
        assert!(again.message.contains("An earlier request of the same kind (version_check) is still waiting"), "{}", again.message);
        assert_eq!(rt.block_on(guarded("claude_code", &m, None, OPERATION_PATIENCE, || Ok(5))).unwrap(), 5);
        release.send(()).unwrap();
        returned.recv_timeout(Duration::from_secs(60)).expect("the blocked operation returns");
        let answer = loop {
            match rt.block_on(guarded("version_check", &m, None, OPERATION_PATIENCE, || Ok(6))) {
                Err(e) if e.message.contains("still waiting") => std::thread::yield_now(),
                other => break other,
            }
        };
        assert_eq!(answer.unwrap(), 6);
    }

    /// An operation's own error and answer pass through untouched.
    #[test]
    fn answers_and_errors_pass_through() {
        let rt = runtime();
        let (_home, m) = mneme();
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(rt.block_on(guarded("home", &m, None, OPERATION_PATIENCE, || Ok(7))).unwrap(), 7);
        let e = rt
            .block_on(guarded::<()>("memories", &m, Some(dir.path().to_path_buf()), OPERATION_PATIENCE, || Err(ApiError::invalid("no"))))
            .unwrap_err();
        assert_eq!((e.code, e.message.as_str()), (ErrorCode::InvalidInput, "no"));
    }
}
