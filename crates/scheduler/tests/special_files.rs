//! The scheduler's own files replaced by a FIFO: the run history (`runs.jsonl`, read by the
//! Runs screen and `mneme runs`, appended to by every job) and the instance lock's body (read
//! for the PID of the scheduler already running). Each call runs on a thread and must come
//! back within 25 s, so a hang is a failure rather than a test that never ends.

use mneme_core::SystemClock;
use mneme_scheduler::{JobKind, Outcome, RunLog, RunRecord, SchedulerConfig, SchedulerError};
use mneme_testsupport::TestHome;
use std::sync::Arc;
use mneme_testsupport::special_files::{mkfifo, within};

#[test]
fn a_run_history_that_is_a_fifo_is_refused_at_once_and_never_written_to() {
    let dir = tempfile::tempdir().unwrap();
    let log = RunLog::in_data_dir(dir.path());
    mkfifo(log.path());

    let l = log.clone();
    let err = within("reading a FIFO as the run history", move || l.recent(10, None).map(|r| r.len()).map_err(|e| e.to_string())).unwrap_err();
    assert!(err.contains("runs.jsonl: it is a named pipe (FIFO), not a plain file; move it aside or delete it"), "{err}");

    // Appending would fill the pipe and then block the job that finished: refused instead.
    let record = RunRecord {
        id: "1".into(),
        job: JobKind::Dream.into(),
        target: "/m".into(),
        started_ms: 1,
        finished_ms: 2,
        outcome: Outcome::Done { summary: "ok".into() },
    };
    let l = log.clone();
    let err = within("appending to a FIFO as the run history", move || l.append(&record).map_err(|e| e.to_string())).unwrap_err();
    assert!(err.contains("it is a named pipe (FIFO), not a plain file"), "{err}");

    // A folder is named as one.
    std::fs::remove_file(log.path()).unwrap();
    std::fs::create_dir(log.path()).unwrap();
    let err = log.recent(10, None).unwrap_err().to_string();
    assert!(err.contains("runs.jsonl: it is a folder, not a plain file"), "{err}");
}

#[test]
fn a_second_scheduler_does_not_wait_on_a_lock_file_that_is_a_fifo() {
    let home = TestHome::new();
    let data = home.env.data_dir();
    std::fs::create_dir_all(&data).unwrap();
    let lock = data.join("scheduler.lock");
    mkfifo(&lock);
    // Held open for reading and writing by its locker: a plain read of it never ends.
    let _held = mneme_store::file_lock::FileLock::take(&lock).unwrap();
    let env = home.env.clone();
    let started = within("starting a scheduler against a locked FIFO", move || {
        mneme_scheduler::start(SchedulerConfig::new(env, Arc::new(SystemClock))).map(|_| ())
    });
    assert!(matches!(started, Err(SchedulerError::AlreadyRunning { pid: None })), "{started:?}");
}
