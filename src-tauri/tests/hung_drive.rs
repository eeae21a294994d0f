//! The desktop app's commands on a drive that stops answering (a network share whose server went
//! away, a FUSE daemon that hangs), made real as root: an exFAT image mounted through FUSE
//! (`mneme_testsupport::exfat`) whose daemon is stopped, and always continued before the drive
//! is unmounted (`mneme_testsupport::hung_drive`). Each test calls `commands::engine`, the path every generated command takes, so
//! no window is needed. As any other user the tests say so and pass without checking (CI runs
//! them as root).

#![cfg(target_os = "linux")]

use mneme_api::{ErrorCode, FixedClock, Mneme};
use mneme_app::{commands, Session};
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::{wait, TestHome};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A bound no answer comes near while the fix holds: reaching it is the failure (a hang).
const NEVER: Duration = Duration::from_secs(60);

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap()
}

fn session(start_dir: PathBuf, patience: Duration) -> Session {
    Session { start_dir, launch_folder: None, live: None, scheduler: Arc::default(), operation_patience: patience }
}

/// The memory list of `cwd` through the desktop command path.
fn memories(rt: &tokio::runtime::Runtime, m: &Mneme, s: &Session, cwd: &Path) -> Result<usize, mneme_api::ApiError> {
    let req: mneme_api::ops::MemoriesQuery = serde_json::from_value(json!({ "cwd": cwd })).unwrap();
    rt.block_on(commands::engine("memories", m, s.clone(), req, mneme_api::ops::memories)).map(|list| list.len())
}

/// The count an answer carries; while the drive still counts as not answering, the refusal's
/// words (what a wait that runs out shows); any other error fails the test.
fn answered(answer: Result<usize, mneme_api::ApiError>) -> Result<usize, String> {
    answer.map_err(|e| {
        assert_eq!(e.code, ErrorCode::Unavailable, "{}", e.message);
        e.message
    })
}

/// A project whose own folder is on a drive that does not answer is answered `unavailable` with
/// what is wrong and what Mneme will do, instead of the command blocking for ever (the screen
/// waited with it). Then the drive answers, and so does the command.
#[test]
fn a_command_for_a_project_on_a_hung_drive_says_so() {
    let home = TestHome::new();
    let Some(drive) = Exfat::mount(&home.root.join("drives/stick")) else { return };
    let stick = drive.path().join("proj");
    home.write(stick.join("CLAUDE.md"), "Stick rules.\n");
    home.write(home.memdir_for(&stick).join("MEMORY.md"), "- [Tabs](tabs.md) — indentation\n");
    let m = Mneme::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_764_400_000)));
    let s = session(home.root.clone(), Duration::from_secs(2));
    let rt = runtime();
    assert_eq!(memories(&rt, &m, &s, &stick).unwrap(), 0);
    let hung = drive.hang(NEVER);

    // Answers from the kernel's caches may come for a moment; then the drive is not answering.
    let refused = wait::value("the command refused on the stopped drive", || {
        let answer = memories(&rt, &m, &s, &stick);
        assert!(!hung.rescued(), "the command hung with the drive");
        answer.err()
    });
    assert_eq!(refused.code, ErrorCode::Unavailable, "{}", refused.message);
    assert!(
        refused.message.contains(&format!("The drive holding {}", stick.display())) && refused.message.contains("answering"),
        "{}",
        refused.message
    );
    assert!(!hung.rescued(), "the command hung with the drive");

    drop(hung);
    let back = wait::result("the command answered once the drive answers", || answered(memories(&rt, &m, &s, &stick)));
    assert_eq!(back, 0);
    drop(drive);
}

/// A command for a project whose folder answers while its memory folder is on a drive that hangs
/// is answered `unavailable` naming the memory folder once the session's patience runs out (the
/// memory folder's drive is asked before the operation and again then; its 3 s outlast this
/// patience), and the next command at once; before, the command never answered.
#[test]
fn a_command_whose_drive_hangs_midway_answers_after_the_patience() {
    let home = TestHome::new();
    let repo = home.git_repo("repo");
    let Some(drive) = Exfat::mount(&home.root.join("drives/memories")) else { return };
    let memdir = drive.path().join("memory");
    home.write(memdir.join("MEMORY.md"), "- [Tabs](tabs.md) — indentation\n");
    home.write(memdir.join("tabs.md"), "---\nname: tabs\ndescription: indentation\ntype: feedback\n---\nUse tabs.\n");
    home.write(repo.join(".claude/settings.local.json"), &format!("{{\"autoMemoryDirectory\": {:?}}}", memdir.display().to_string()));
    let m = Mneme::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_764_400_000)));
    let patience = Duration::from_secs(2);
    let s = session(repo.clone(), patience);
    let rt = runtime();
    assert_eq!(memories(&rt, &m, &s, &repo).unwrap(), 1);
    let hung = drive.hang(NEVER);

    let (took, refused) = wait::value("the command refused once the memory folder's drive stopped", || {
        let started = Instant::now();
        let answer = memories(&rt, &m, &s, &repo);
        assert!(!hung.rescued(), "the command hung with the drive");
        answer.err().map(|e| (started.elapsed(), e))
    });
    assert_eq!(refused.code, ErrorCode::Unavailable, "{}", refused.message);
    let stopped = format!("The drive holding {} stopped answering during this request", memdir.display());
    assert!(refused.message.starts_with(&stopped) && refused.message.contains("after 2 seconds"), "{}", refused.message);
    assert!(took >= patience, "answered after {took:?}");
    // The next command for the project is answered at once: the drive is known not to answer.
    let again = memories(&rt, &m, &s, &repo).unwrap_err();
    assert!(again.message.starts_with(&format!("The drive holding {} is not answering", memdir.display())), "{}", again.message);
    assert!(!hung.rescued(), "the command hung with the drive");

    drop(hung);
    let back = wait::result("the command answered once the drive answers", || answered(memories(&rt, &m, &s, &repo)));
    assert_eq!(back, 1);
    drop(drive);
}
