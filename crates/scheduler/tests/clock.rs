//! The scheduler when the wall clock jumps: stepped back (NTP, a clock set by hand) or forward
//! (a laptop waking after a week asleep). Its loops pace themselves on the monotonic clock, so
//! neither jump stalls them or sets off catch-up runs; the gates keep Claude Code's wall-time
//! rule (a lock stamped ahead of the clock keeps the time gate closed, as it does in Claude Code).

use mneme_core::clock::SetClock;
use mneme_scheduler::{start, Folders, JobKind, Jobs, Outcome, SchedulerConfig};
use mneme_testsupport::TestHome;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const DAY: Duration = Duration::from_secs(24 * 3600);

/// Five sessions in `project`'s transcript folder, named from `first`, modified at `at`.
fn sessions(home: &TestHome, project: &Path, first: u32, at: SystemTime) {
    let transcripts = mneme_store::paths::transcript_dir(&home.env, project);
    std::fs::create_dir_all(&transcripts).unwrap();
    for i in first..first + 5 {
        let p = transcripts.join(format!("5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f{i:04}.jsonl"));
        std::fs::write(&p, "{}\n").unwrap();
        std::fs::File::options().write(true).open(&p).unwrap().set_modified(at).unwrap();
    }
}

/// Waits (up to 30 s, a guard against hanging, not a timing assertion) until the dream loop
/// has finished two more passes than now, so at least one started after this call.
async fn two_passes(passes: &mut tokio::sync::watch::Receiver<u64>) {
    let seen = *passes.borrow_and_update();
    tokio::time::timeout(Duration::from_secs(30), passes.wait_for(|n| *n >= seen + 2))
        .await
        .expect("the dream loop finished no two passes within 30 s: stalled")
        .expect("the dream loop stopped");
}

/// The dreams recorded as done so far.
fn dreams_done(handle: &mneme_scheduler::SchedulerHandle) -> usize {
    handle.run_log().recent(50, Some(JobKind::Dream)).unwrap().iter().filter(|r| matches!(r.outcome, Outcome::Done { .. })).count()
}

/// One dream; the clock set back a day: the loop goes on checking (no stall) and the time gate,
/// counted from a lock now a day ahead, stays closed as in Claude Code; the clock a week ahead
/// with new sessions: exactly one more dream, however many ticks the week held, and passes
/// after it find the time gate closed again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clock_stepped_back_or_forward_neither_stalls_the_dream_loop_nor_sets_off_catch_up_dreams() {
    let home = TestHome::new();
    home.write(home.config_home().join("settings.json"), r#"{"autoDreamEnabled": true}"#);
    let project = home.git_repo("app");
    let memory: PathBuf = home.memdir_for(&project);
    std::fs::create_dir_all(&memory).unwrap();
    std::fs::write(memory.join("MEMORY.md"), "- [Build](build.md) — how to build\n").unwrap();
    std::fs::write(memory.join("build.md"), "---\nname: build\ndescription: how to build\ntype: project\n---\nRun make.\n").unwrap();
    let t0 = SystemTime::now();
    sessions(&home, &project, 0, t0 - Duration::from_secs(3600));
    let clock = Arc::new(SetClock::at(t0));
    let mut config = SchedulerConfig::new(home.env.clone(), clock.clone());
    config.jobs = Jobs { extraction: false, session_memory: false, dream: true, team: false };
    config.folders = Folders::Given(vec![project.clone()]);
    config.dream_tick = Duration::from_millis(100);
    let handle = start(config).unwrap();
    let mut passes = handle.dream_passes();
    two_passes(&mut passes).await;
    assert_eq!(dreams_done(&handle), 1, "{:?}", handle.run_log().recent(10, None).unwrap());

    clock.set(t0 - DAY);
    two_passes(&mut passes).await;
    two_passes(&mut passes).await;
    assert_eq!(dreams_done(&handle), 1, "the lock is a day ahead of the clock: Claude Code's time gate stays closed");

    let week_later = t0 + 7 * DAY;
    clock.set(week_later);
    sessions(&home, &project, 100, week_later - Duration::from_secs(3600));
    two_passes(&mut passes).await;
    two_passes(&mut passes).await;
    two_passes(&mut passes).await;
    assert_eq!(dreams_done(&handle), 2, "one dream after a week, not one per missed tick: {:?}", handle.run_log().recent(10, None).unwrap());
    let lock = std::fs::metadata(memory.join(".consolidate-lock")).unwrap().modified().unwrap();
    let off = lock.duration_since(week_later).unwrap_or_else(|e| e.duration());
    assert!(off < Duration::from_millis(1), "stamped with the clock as it reads now, not {off:?} away");
    handle.shutdown().await;
}
