//! The disk says no to the scheduler's own files: the run history (`runs.jsonl`) and the
//! instance lock (`scheduler.lock`) in Mneme's data folder, on a small tmpfs filled to the brim
//! and then remounted read-only. An append the disk refuses says which refusal and what to do
//! and leaves the history byte for byte as it was (no torn line, no empty file); a run whose
//! record cannot be written is still announced with its own outcome, and that the history
//! cannot record it is said once, not at every run; the lock's refusal says the same, and a
//! lock file already there is taken on a full disk (its PID written in place).
//!
//! Mounting needs root; as any other user these tests say so and pass without checking (CI runs
//! them as root).

#![cfg(target_os = "linux")]

use mneme_core::FixedClock;
use mneme_scheduler::{Event, JobKind, Jobs, Outcome, Reporter, RunLog, RunRecord, SchedulerConfig, SchedulerError};
use mneme_store::atomic::Refusal;
use mneme_testsupport::accounts::root_or_skip;
use mneme_testsupport::tmpfs::Tmpfs;
use mneme_testsupport::{tree_snapshot, TestHome};
use std::sync::Arc;

const FULL: &str = "is full. Free some space on it, then try again";
const READ_ONLY: &str = "is mounted read-only. Remount it read-write";

fn record(id: &str) -> RunRecord {
    RunRecord { id: id.into(), job: JobKind::Dream.into(), target: "/m".into(), started_ms: 1, finished_ms: 2, outcome: Outcome::Done { summary: "ok".into() } }
}

/// Mneme's data folder on a fresh 64 KiB tmpfs.
fn drive(t: &TestHome) -> (Tmpfs, std::path::PathBuf) {
    let drive = Tmpfs::mount(&t.root.join("drive"), "64k").expect("mounting a tmpfs as root");
    let data = drive.path().join("mneme-data");
    std::fs::create_dir_all(&data).unwrap();
    (drive, data)
}

#[test]
fn an_append_the_disk_refuses_says_so_and_leaves_the_history_as_it_was() {
    if !root_or_skip("mounting a tmpfs") {
        return;
    }
    let t = TestHome::new();
    let (drive, data) = drive(&t);
    // A history that fills its page exactly (the next byte needs a new one), and a second
    // folder with none yet.
    let log = RunLog::in_data_dir(&data);
    let mut text = serde_json::to_string(&record("a")).unwrap() + "\n";
    text.push_str(&"x".repeat(4095 - text.len()));
    text.push('\n');
    std::fs::write(log.path(), &text).unwrap();
    let fresh_dir = data.join("other");
    std::fs::create_dir_all(&fresh_dir).unwrap();
    let fresh = RunLog::in_data_dir(&fresh_dir);
    drive.fill();

    let refused = |log: &RunLog, expect: Refusal, words: &str| {
        let before = tree_snapshot(drive.path());
        let e = log.append(&record("b")).expect_err("an append on a disk that says no");
        assert_eq!(e.refused(), Some(expect), "{e}");
        let text = e.to_string();
        assert!(text.contains(words) && text.contains(&log.path().display().to_string()) && !text.contains("os error"), "{text}");
        assert!(tree_snapshot(drive.path()) == before, "the append changed the drive: {text}");
    };
    refused(&log, Refusal::DiskFull, FULL);
    refused(&fresh, Refusal::DiskFull, FULL);
    assert!(!fresh.path().exists(), "no empty history is left");
    drive.read_only();
    refused(&log, Refusal::ReadOnly, READ_ONLY);
    refused(&fresh, Refusal::ReadOnly, READ_ONLY);
    assert_eq!(std::fs::read_to_string(log.path()).unwrap(), text);
}

#[test]
fn a_run_the_history_cannot_record_keeps_its_outcome_and_is_said_once() {
    if !root_or_skip("mounting a tmpfs") {
        return;
    }
    let t = TestHome::new();
    let (drive, data) = drive(&t);
    drive.fill();
    let reporter = Reporter::new(Arc::new(FixedClock::at_unix_secs(1_700_000_000)), RunLog::in_data_dir(&data));
    let mut rx = reporter.subscribe();
    let mut notices = Vec::new();
    for n in 0..3 {
        let run = reporter.begin(JobKind::Dream, "/m");
        let done = Outcome::Done { summary: format!("Improved {n} memories") };
        let rec = run.finish(done.clone());
        assert_eq!(rec.outcome, done, "the run is announced with what it did");
        loop {
            match rx.try_recv().expect("an event") {
                Event::Started { .. } => {}
                Event::Progress { message, .. } => notices.push(message),
                Event::Finished { record } => {
                    assert_eq!(record, rec);
                    break;
                }
            }
        }
    }
    assert_eq!(notices.len(), 1, "said once: {notices:?}");
    assert!(notices[0].contains(FULL) && notices[0].contains("runs.jsonl") && !notices[0].contains("os error"), "{}", notices[0]);
    assert!(!data.join("runs.jsonl").exists());

    // Room again: the next run is recorded; the disk full again is said again.
    std::fs::remove_file(drive.path().join("filler")).unwrap();
    let rec = reporter.begin(JobKind::Dream, "/m").finish(Outcome::Done { summary: "ok".into() });
    assert_eq!(reporter.log().recent(5, None).unwrap(), vec![rec]);
}

#[tokio::test]
async fn the_scheduler_lock_on_a_disk_that_says_no() {
    if !root_or_skip("mounting a tmpfs") {
        return;
    }
    let t = TestHome::new();
    let (drive, data) = drive(&t);
    let config = || {
        let env = t.env.clone().set_var("MNEME_DATA_DIR", data.to_string_lossy().to_string());
        let mut c = SchedulerConfig::new(env, Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
        c.jobs = Jobs { extraction: false, session_memory: false, dream: false, team: false };
        c.claude_code_check = None;
        c
    };
    let lock = data.join("scheduler.lock");
    let refused = |words: &str| {
        let started = mneme_scheduler::start(config());
        let Err(e @ SchedulerError::Lock { .. }) = started else { panic!("the lock is refused: {:?}", started.map(|_| ())) };
        let text = e.to_string();
        assert!(text.contains(words) && text.contains(&lock.display().to_string()) && !text.contains("os error"), "{text}");
        e
    };

    // Full, with no lock file yet: its PID cannot be written. The lock file stays, empty (a
    // lock file is never removed: a scheduler that opened it meanwhile would hold a lock on a
    // file no longer there), which reads as no holder.
    drive.fill();
    refused(FULL);
    assert_eq!(std::fs::read(&lock).unwrap(), b"");
    // Full, with the lock file a scheduler left: taken, its PID written where the old one was.
    std::fs::remove_file(drive.path().join("filler")).unwrap();
    std::fs::write(&lock, "4194303").unwrap();
    drive.fill();
    let handle = mneme_scheduler::start(config()).expect("a lock file already there is taken on a full disk");
    assert_eq!(std::fs::read_to_string(&lock).unwrap(), std::process::id().to_string());
    handle.shutdown().await;

    drive.read_only();
    let before = tree_snapshot(drive.path());
    refused(READ_ONLY);
    assert!(tree_snapshot(drive.path()) == before, "the drive changed");
}
