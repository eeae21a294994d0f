//! The dream lock (`.consolidate-lock`, Claude Code's own) in a memory folder on a real exFAT
//! drive (a USB stick, an SD card: `mneme_testsupport::exfat`), with Mneme's guard file in a
//! data folder on the same drive. The lock's mtime is "last consolidated at". Seen here:
//! exfat-fuse stamps a written file with its own "now" when it is closed, after Mneme stamped
//! the clock's now on the open file, so the lock reads the time of the write (the same
//! moment with a real clock, give or take a second; a test's fixed clock does not reach it).
//! Its `flock` (the guard) works within this machine, which is all the guard needs.
//!
//! Mounting needs root; as any other user this test says so and passes without checking (CI
//! runs it as root).

#![cfg(target_os = "linux")]

use mneme_core::FixedClock;
use mneme_dream::lock::NotAcquired;
use mneme_dream::ConsolidationLock;
use mneme_testsupport::exfat::Exfat;
use std::time::{Duration, UNIX_EPOCH};

#[test]
fn the_dream_lock_is_taken_held_and_given_back_on_the_drive() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(drive) = Exfat::mount(&tmp.path().join("stick")) else { return };
    let memdir = drive.path().join("claude/projects/-stick-repo/memory");
    std::fs::create_dir_all(&memdir).unwrap();
    let guard = drive.path().join("mneme-data/dreams/x/acquire.lock");
    let lock = ConsolidationLock::new(&memdir).with_guard(&guard);
    // The real time: the drive stamps its own at close (see the top of this file).
    let t0 = std::time::SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_secs();
    let acquired = lock.try_acquire(&FixedClock::at_unix_secs(t0)).unwrap().expect("the lock is free");
    assert_eq!(std::fs::read_to_string(memdir.join(".consolidate-lock")).unwrap(), std::process::id().to_string());
    let stamped = std::fs::metadata(memdir.join(".consolidate-lock")).unwrap().modified().unwrap().duration_since(UNIX_EPOCH).unwrap().as_secs();
    assert!(stamped.abs_diff(t0) <= 2, "the lock is dated when it was taken: {stamped} for {t0}");
    // Another process (a Claude Code, say) finds it held, by this process, for an hour.
    let other = ConsolidationLock::new(&memdir).with_guard(&guard).with_pid(1);
    match other.try_acquire(&FixedClock::at_unix_secs(t0 + 60)).unwrap() {
        Err(NotAcquired::Held(s)) => assert_eq!((s.holder_pid, s.holder_alive), (Some(i64::from(std::process::id())), true)),
        got => panic!("{got:?}"),
    }
    // A dream that failed gives the lock back as it found it (no lock: none).
    lock.rollback(&acquired).unwrap();
    lock.finished();
    assert!(!lock.state(UNIX_EPOCH + Duration::from_secs(t0 + 61)).held);
    assert!(lock.try_acquire(&FixedClock::at_unix_secs(t0 + 120)).unwrap().is_ok(), "and it can be taken again");
    lock.finished();
}
