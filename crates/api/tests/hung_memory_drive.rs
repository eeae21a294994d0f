//! A project whose folder answers but whose memory folder (moved by `autoMemoryDirectory`) is on
//! a drive that stops answering, made real as root: an exFAT image mounted through FUSE
//! (`mneme_testsupport::exfat`) whose daemon is stopped, and always continued before the drive
//! is unmounted (`mneme_testsupport::hung_drive`). As any other user each test says so and
//! passes without checking (CI runs them as root).

#![cfg(target_os = "linux")]

use mneme_api::drive_check::{guarded, not_answering, OPERATION_PATIENCE};
use mneme_api::{ContextRequest, ErrorCode, FixedClock, Mneme};
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::hung_drive::{self, within, GIVE_UP};
use mneme_testsupport::{wait, TestHome};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc};
use std::time::{Duration, SystemTime};

/// When the drive's watchdog continues it anyway: later than the tests give up waiting
/// (`hung_drive::GIVE_UP`, the bound no call comes near while the fix holds).
const NEVER: Duration = Duration::from_secs(120);

/// A repository with a session of Claude Code's in it (a transcript naming it, last written at
/// `used`), whose memory folder is `memory` when given (its local settings' `autoMemoryDirectory`).
fn project(t: &TestHome, name: &str, memory: Option<&Path>, used: SystemTime) -> PathBuf {
    let repo = t.git_repo(name);
    if let Some(memory) = memory {
        t.write(repo.join(".claude/settings.local.json"), &format!(r#"{{"autoMemoryDirectory": "{}"}}"#, memory.display()));
    }
    let key = mneme_core::sanitize::sanitize_path(&repo.to_string_lossy());
    let transcript = t.write(
        t.config_home().join("projects").join(&key).join("5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5b.jsonl"),
        &format!("{{\"type\":\"user\",\"cwd\":{:?},\"sessionId\":\"s\"}}\n", repo.to_string_lossy()),
    );
    std::fs::File::options().append(true).open(&transcript).unwrap().set_modified(used).unwrap();
    repo
}

/// A `claude` on PATH that reports `version` and, run for real, notes the folder it was run in
/// and fails (no network here).
fn fake_claude(bin: &Path, version: &str, runs: &Path) {
    std::fs::create_dir_all(bin).unwrap();
    let p = bin.join("claude");
    std::fs::write(
        &p,
        format!("#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version} (Claude Code)'; exit 0; fi\npwd >> '{}'\nexit 3\n", runs.display()),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// The once-per-release check asks the drives of the project used last before it runs Claude
/// Code there holding its machine-wide lock: with that project, or its memory folder, on a hung
/// drive it goes on with the next project, and with no other project it records that it could
/// not check, naming the drive of the project used last. Before, it ran `verify` there and held the lock (and its caller:
/// the app's start, the scheduler) until the drive answered.
#[test]
fn the_release_check_passes_over_a_project_whose_memory_drive_hangs() {
    let t = TestHome::new();
    let Some(drive) = Exfat::mount(&t.root.join("drives/share")) else { return };
    let memory = drive.path().join("alpha-memory");
    std::fs::create_dir_all(&memory).unwrap();
    std::fs::write(memory.join("MEMORY.md"), "- [Build](build.md) — how to build\n").unwrap();
    let now = SystemTime::now();
    let alpha = project(&t, "alpha", Some(&memory), now - Duration::from_secs(60));
    // Used last, on the drive itself: the projects' list says its drive does not answer.
    let delta = project(&t, &drive.path().join("delta").to_string_lossy(), None, now);
    let bin = t.root.join("bin");
    let runs = t.root.join("runs.log");
    let mneme = |version: &str| {
        fake_claude(&bin, version, &runs);
        Mneme::new(t.env.clone().set_var("PATH", bin.to_string_lossy().to_string()), Arc::new(FixedClock::at_unix_secs(1_764_590_000)))
    };

    let hung = hung_drive::stop(&drive, &memory, NEVER);

    let m = mneme("2.1.340");
    let alone = within("the check with only the hung project", move || m.version_check()).unwrap();
    assert!(alone.ran_now);
    assert_eq!((alone.project.as_deref(), alone.status.as_deref()), (None, Some("failed")), "{alone:?}");
    let summary = alone.summary.unwrap_or_default();
    assert!(summary.starts_with(&format!("Claude Code 2.1.340 was not checked: the drive holding {} is not answering", delta.display())), "{summary}");
    assert!(!runs.exists(), "Claude Code ran although no project's drives answered");

    // Another project, used before: a new release is checked there.
    let beta = project(&t, "beta", None, now - Duration::from_secs(3600));
    let m = mneme("2.1.341");
    let checked = within("the check with another project", move || m.version_check()).unwrap();
    assert_eq!(checked.project.as_deref(), Some(beta.as_path()), "{checked:?}");
    assert_eq!(checked.status.as_deref(), Some("failed"), "the stand-in fails when run: {checked:?}");
    let ran_in = std::fs::read_to_string(&runs).unwrap();
    assert!(ran_in.lines().all(|l| Path::new(l) == beta), "Claude Code ran elsewhere than {}: {ran_in}", beta.display());
    assert!(!hung.rescued(), "the check hung with the drive");
    drop(hung);
    assert!(alpha.is_dir());
    drop(drive);
}

/// A request for a project whose folder answers but whose memory folder's drive does not fails
/// at once as `unavailable`, naming the memory folder, as a request for a project on a hung
/// drive does; once the drive answers, the same request is answered. Before, the request read
/// `MEMORY.md` there and was answered only when the shells' patience (60 s) ran out.
#[test]
fn a_request_whose_memory_folder_s_drive_hangs_fails_at_once_naming_it() {
    let t = TestHome::new();
    let Some(drive) = Exfat::mount(&t.root.join("drives/stick")) else { return };
    let memory = drive.path().join("gamma-memory");
    std::fs::create_dir_all(&memory).unwrap();
    std::fs::write(memory.join("MEMORY.md"), "- [Build](build.md) — how to build\n").unwrap();
    let gamma = project(&t, "gamma", Some(&memory), SystemTime::now());
    let m = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_764_590_000)));
    let context = |m: &Mneme, cwd: &Path| {
        let (m, owned, cwd) = (m.clone(), m.clone(), cwd.to_path_buf());
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        within("the context request", move || {
            rt.block_on(guarded("context", &m, Some(cwd.clone()), OPERATION_PATIENCE, move || owned.context(&ContextRequest { cwd, ..Default::default() })))
        })
    };

    let hung = hung_drive::stop(&drive, &memory, NEVER);
    let e = context(&m, &gamma).unwrap_err();
    assert_eq!((e.code, e.message.as_str()), (ErrorCode::Unavailable, not_answering(&memory).message.as_str()));
    assert!(!hung.rescued(), "the request hung with the drive");

    drop(hung);
    // The look given up on returns as the drive answers; until then the drive is not asked (so
    // each request is answered at once).
    let answered = wait::value_within(GIVE_UP, "the context request answered once the drive answers", || match context(&m, &gamma) {
        Err(e) if e.code == ErrorCode::Unavailable => None,
        other => Some(other),
    });
    let view = answered.unwrap();
    assert!(view.auto_memory.entrypoint_exists && view.auto_memory.dir == memory, "{:?}", view.auto_memory);
    drop(drive);
}

/// An operation that waits on others (here `run_dream`, which may wait on a model for long)
/// whose memory folder's drive stops answering while it runs is given up on when the patience
/// runs out, naming the memory folder, as one whose project's drive stops answering is. Before,
/// only the project's drive was asked then, and it was waited for 30 patiences.
#[test]
fn an_operation_waiting_on_others_stops_waiting_once_its_memory_drive_stops_answering() {
    let t = TestHome::new();
    let Some(drive) = Exfat::mount(&t.root.join("drives/nas")) else { return };
    let memory = drive.path().join("eta-memory");
    std::fs::create_dir_all(&memory).unwrap();
    let eta = project(&t, "eta", Some(&memory), SystemTime::now());
    let m = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_764_590_000)));
    let patience = Duration::from_millis(200);
    let (started_tx, started) = mpsc::channel();
    let (go_tx, go) = mpsc::channel::<()>();
    // A name never looked up before: its lookup reaches the drive.
    let probe = memory.join("asked-while-it-hangs.md");
    let (answer_tx, answer) = mpsc::channel();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let run = guarded("run_dream", &m, Some(eta), patience, move || {
            let _ = started_tx.send(());
            let _ = go.recv();
            let _ = std::fs::metadata(&probe);
            Ok(())
        });
        let _ = answer_tx.send(rt.block_on(run));
    });
    started.recv_timeout(GIVE_UP).expect("the operation did not start within 30 s");
    let hung = drive.hang(NEVER);
    go_tx.send(()).unwrap();
    let e = answer.recv_timeout(GIVE_UP).expect("the operation was not given up on within 30 s").unwrap_err();
    assert_eq!(e.message, mneme_api::drive_check::stopped_answering(&memory, patience).message);
    assert!(!hung.rescued(), "the wait hung with the drive");
    drop(hung);
    drop(drive);
}
