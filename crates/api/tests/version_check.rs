//! The once-per-release check: a new Claude Code release triggers one run of the user's own
//! binary on the project used last; the same release does not run it again; the answer is kept.
//! A stand-in `claude` on PATH reports the release and fails when run for real, so the check's
//! bookkeeping is tested without the network or a real binary (`verify` itself is tested
//! against the real releases in crates/cli/tests/verify.rs).

use mneme_api::{FixedClock, Mneme};
use mneme_testsupport::TestHome;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::sync::Arc;

fn fake_claude(bin_dir: &Path, version: &str, runs_log: &Path) {
    std::fs::create_dir_all(bin_dir).unwrap();
    let p = bin_dir.join("claude");
    std::fs::write(
        &p,
        format!(
            "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version} (Claude Code)'; exit 0; fi\necho run >> '{}'\necho 'no network here' >&2\nexit 3\n",
            runs_log.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
}

/// A repository Claude Code has a session for (a transcript in its projects folder), so it is
/// the project used last.
fn project_used_last(h: &TestHome) -> std::path::PathBuf {
    let repo = h.git_repo("repo");
    let key = mneme_core::sanitize::sanitize_path(&repo.to_string_lossy());
    h.write(
        h.config_home().join("projects").join(&key).join("s.jsonl"),
        &format!("{{\"type\":\"user\",\"cwd\":{:?},\"sessionId\":\"s\"}}\n", repo.to_string_lossy()),
    );
    repo
}

#[test]
fn runs_once_per_release_on_the_project_used_last() {
    let h = TestHome::new();
    let repo = project_used_last(&h);
    let bin = h.root.join("bin");
    let runs = h.root.join("runs.log");
    let mneme = |version: &str| {
        fake_claude(&bin, version, &runs);
        let env = h.env.clone().set_var("PATH", bin.to_string_lossy().to_string());
        Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_764_590_000)))
    };
    let runs_so_far = || std::fs::read_to_string(&runs).map(|s| s.lines().count()).unwrap_or(0);

    let first = mneme("2.1.340").version_check().unwrap();
    assert!(first.ran_now);
    assert_eq!(first.version.as_deref(), Some("2.1.340"));
    assert_eq!(first.project.as_deref(), Some(repo.as_path()));
    assert_eq!(first.status.as_deref(), Some("failed"), "{first:?}");
    assert_eq!(runs_so_far(), 1);

    let again = mneme("2.1.340").version_check().unwrap();
    assert!(!again.ran_now, "same release: the kept answer, no second run");
    assert_eq!(again.status, first.status);
    assert_eq!(runs_so_far(), 1);

    let updated = mneme("2.1.341").version_check().unwrap();
    assert!(updated.ran_now, "Claude Code updated itself: check again");
    assert_eq!(runs_so_far(), 2);
}

/// The background scheduler runs the same check when Claude Code updates itself while Mneme
/// runs: the new release is checked once, recorded as a run, and the app's answer is that run's.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_scheduler_checks_a_release_that_appears_while_it_runs() {
    use mneme_scheduler::{Event, Jobs, JobKind, Outcome, SchedulerConfig};
    let h = TestHome::new();
    // The check runs on the project used last; which one is not asserted here.
    project_used_last(&h);
    let bin = h.root.join("bin");
    let runs = h.root.join("runs.log");
    fake_claude(&bin, "2.1.350", &runs);
    let env = h.env.clone().set_var("PATH", bin.to_string_lossy().to_string());
    let clock = Arc::new(FixedClock::at_unix_secs(1_764_590_000));
    let mut config = SchedulerConfig::new(env.clone(), clock.clone());
    config.jobs = Jobs { extraction: false, session_memory: false, dream: false, team: false };
    config.claude_code_check = Some(Arc::new(mneme_api::ScheduledClaudeCheck(Mneme::new(env.clone(), clock.clone()))));
    config.claude_check_every = std::time::Duration::from_millis(50);
    let handle = mneme_scheduler::start(config).unwrap();
    let mut events = handle.subscribe();
    let next_check = |events: &mut tokio::sync::broadcast::Receiver<Event>| {
        let mut events = events.resubscribe();
        async move {
            loop {
                let ev = tokio::time::timeout(std::time::Duration::from_secs(30), events.recv()).await.expect("a check within 30 s");
                if let Ok(Event::Finished { record }) = ev {
                    if record.job == JobKind::ClaudeCodeCheck {
                        return record;
                    }
                }
            }
        }
    };
    let first = next_check(&mut events).await;
    assert_eq!(first.target, "Claude Code 2.1.350");
    // The stand-in fails when run for real, so the check reports a failure, with its reason.
    assert!(matches!(first.outcome, Outcome::Failed { .. }), "{first:?}");
    // Claude Code updates itself: the next poll checks the new release, once.
    let waiting = next_check(&mut events);
    fake_claude(&bin, "2.1.351", &runs);
    let second = waiting.await;
    assert_eq!(second.target, "Claude Code 2.1.351");
    handle.shutdown().await;
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 2, "one run per release");
    let app_view = Mneme::new(env, clock).version_check().unwrap();
    assert_eq!(app_view.version.as_deref(), Some("2.1.351"));
    assert!(!app_view.ran_now, "the app reads the scheduler's answer instead of running again");
}

/// The app and the scheduler find the same new release at once: one of them runs the check,
/// the other waits and takes its answer (both used to run it and write one temporary file).
#[test]
fn callers_at_once_run_one_check() {
    let h = TestHome::new();
    project_used_last(&h);
    let bin = h.root.join("bin");
    let runs = h.root.join("runs.log");
    fake_claude(&bin, "2.1.360", &runs);
    // Slow enough for every caller to arrive while the first runs.
    let slow = std::fs::read_to_string(bin.join("claude")).unwrap().replace("echo run >>", "/bin/sleep 1; echo run >>");
    std::fs::write(bin.join("claude"), slow).unwrap();
    let env = h.env.clone().set_var("PATH", bin.to_string_lossy().to_string());
    let checks: Vec<_> = std::thread::scope(|s| {
        (0..3)
            .map(|_| s.spawn(|| Mneme::new(env.clone(), Arc::new(FixedClock::at_unix_secs(1_764_590_000))).version_check().unwrap()))
            .collect::<Vec<_>>()
            .into_iter()
            .map(|t| t.join().unwrap())
            .collect()
    });
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 1, "{checks:#?}");
    assert_eq!(checks.iter().filter(|c| c.ran_now).count(), 1, "{checks:#?}");
    assert!(checks.iter().all(|c| c.status.as_deref() == Some("failed") && c.version.as_deref() == Some("2.1.360")), "{checks:#?}");
}

/// A check that gave no answer (no project yet, or Claude Code failed) is not the release's
/// answer for good: an hour later it runs again, on the project used by then.
#[test]
fn a_check_without_an_answer_is_tried_again_later() {
    let h = TestHome::new();
    let bin = h.root.join("bin");
    let runs = h.root.join("runs.log");
    fake_claude(&bin, "2.1.361", &runs);
    let at = |secs: u64| {
        let env = h.env.clone().set_var("PATH", bin.to_string_lossy().to_string());
        Mneme::new(env, Arc::new(FixedClock::at_unix_secs(secs)))
    };
    let start = 1_764_590_000;
    let none = at(start).version_check().unwrap();
    assert!(none.ran_now && none.project.is_none() && none.status.is_none(), "{none:?}");
    let repo = project_used_last(&h);
    assert!(!at(start + 60).version_check().unwrap().ran_now, "not again at once");
    let later = at(start + 3600).version_check().unwrap();
    assert!(later.ran_now, "{later:?}");
    assert_eq!((later.project.as_deref(), later.status.as_deref()), (Some(repo.as_path()), Some("failed")));
    assert!(!at(start + 3700).version_check().unwrap().ran_now);
    assert!(at(start + 7300).version_check().unwrap().ran_now, "a failed run is tried again too");
    assert_eq!(std::fs::read_to_string(&runs).unwrap().lines().count(), 2);
}

/// A newer Mneme's fields in `claude-code-check.json` were dropped when this one recorded the
/// next release's check (ARCHITECTURE.md, "Mneme's own files across versions").
#[test]
fn a_newer_mneme_s_fields_survive_the_next_check() {
    let h = TestHome::new();
    project_used_last(&h);
    let bin = h.root.join("bin");
    let runs = h.root.join("runs.log");
    fake_claude(&bin, "2.1.370", &runs);
    let env = h.env.clone().set_var("PATH", bin.to_string_lossy().to_string());
    let state = h.env.data_dir().join("claude-code-check.json");
    std::fs::create_dir_all(state.parent().unwrap()).unwrap();
    let newer = serde_json::json!({
        "version": "2.1.369", "project": null, "status": "match", "summary": "same", "ranNow": false,
        "checkedAtMs": 1, "history": [{"version": "2.1.368", "status": "match"}], "channel": "stable",
    });
    std::fs::write(&state, newer.to_string()).unwrap();
    let check = Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_764_590_000))).version_check().unwrap();
    assert!(check.ran_now && check.version.as_deref() == Some("2.1.370"), "{check:?}");
    let after: serde_json::Value = serde_json::from_slice(&std::fs::read(&state).unwrap()).unwrap();
    assert_eq!(after["version"], "2.1.370");
    assert_eq!(after["history"], newer["history"], "{after}");
    assert_eq!(after["channel"], "stable", "{after}");
}
