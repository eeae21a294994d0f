//! The scheduler's one-per-machine lock (`scheduler.lock`, an exclusive `flock`) with Mneme's
//! data folder on a real exFAT drive (a USB stick, an SD card: `mneme_testsupport::exfat`,
//! mounted through exfat-fuse, whose `flock` works within this machine): the first scheduler
//! takes it and writes its PID, a second is refused naming that PID, and once the first stops
//! the lock is free again.
//!
//! Mounting needs root; as any other user this test says so and passes without checking (CI
//! runs it as root).

#![cfg(target_os = "linux")]

use mneme_core::FixedClock;
use mneme_scheduler::{Jobs, SchedulerConfig, SchedulerError};
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::TestHome;
use std::sync::Arc;

#[tokio::test]
async fn one_scheduler_at_a_time_with_the_data_folder_on_the_drive() {
    let t = TestHome::new();
    let Some(drive) = Exfat::mount(&t.root.join("stick")) else { return };
    let data = drive.path().join("mneme-data");
    std::fs::create_dir_all(&data).unwrap();
    let config = || {
        let env = t.env.clone().set_var("MNEME_DATA_DIR", data.to_string_lossy().to_string());
        let mut c = SchedulerConfig::new(env, Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
        c.jobs = Jobs { extraction: false, session_memory: false, dream: false, team: false };
        c.claude_code_check = None;
        c
    };
    let first = mneme_scheduler::start(config()).expect("the lock is free");
    assert_eq!(std::fs::read_to_string(data.join("scheduler.lock")).unwrap(), std::process::id().to_string());
    match mneme_scheduler::start(config()) {
        Err(SchedulerError::AlreadyRunning { pid }) => assert_eq!(pid, Some(std::process::id())),
        other => panic!("a second scheduler is refused: {:?}", other.map(|_| ())),
    }
    first.shutdown().await;
    let again = mneme_scheduler::start(config()).expect("free again once the first stopped");
    again.shutdown().await;
    drop(drive);
}
