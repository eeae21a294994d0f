//! The scheduler's loops on a hermetic home with real files: a turn end in a Claude Code
//! transcript leads to an extraction run (offline provider) that saves a memory with its index
//! line, and open dream gates lead to a recorded dream. Every run is announced and logged.

mod common;

use common::{finished, ready_to_dream};
use mneme_core::{Clock, SystemClock};
use mneme_scheduler::{start, Folders, JobKind, Jobs, Outcome, SchedulerConfig};
use mneme_testsupport::TestHome;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

const SID: &str = "5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5b";

fn append(transcript: &Path, cwd: &Path, entries: &[Value]) {
    append_after(transcript, cwd, entries, 0);
}

/// [`append`] continuing a transcript that holds `before` entries already.
fn append_after(transcript: &Path, cwd: &Path, entries: &[Value], before: usize) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(transcript).unwrap();
    let mut parent: Option<String> = (before > 0).then(|| format!("00000000-0000-4000-8000-{before:012}"));
    for (i, e) in entries.iter().enumerate() {
        let mut e = e.clone();
        let uuid = format!("00000000-0000-4000-8000-{:012}", before + i + 1);
        let o = e.as_object_mut().unwrap();
        o.insert("uuid".into(), json!(uuid));
        o.insert("parentUuid".into(), json!(parent));
        o.insert("isSidechain".into(), json!(false));
        o.insert("sessionId".into(), json!(SID));
        o.insert("cwd".into(), json!(cwd));
        o.insert("timestamp".into(), json!("2026-11-29T10:00:00.000Z"));
        o.insert("userType".into(), json!("external"));
        o.insert("version".into(), json!("2.1.197"));
        writeln!(f, "{e}").unwrap();
        parent = Some(uuid);
    }
}

fn turn(user: &str, answer: &str) -> Vec<Value> {
    vec![
        json!({"type": "user", "message": {"role": "user", "content": user}}),
        json!({"type": "assistant", "message": {"id": "msg_1", "role": "assistant", "model": "claude-opus-4-8",
            "content": [{"type": "text", "text": answer}], "stop_reason": "end_turn",
            "usage": {"input_tokens": 100, "output_tokens": 5}}}),
    ]
}

/// A home with a git repository `app`, its memory folder, and the path of the transcript of
/// session [`SID`] in its (made) transcript folder.
fn app_session() -> (TestHome, PathBuf, PathBuf, PathBuf) {
    let home = TestHome::new();
    let project = home.git_repo("app");
    let memory = home.memdir_for(&project);
    let transcripts = mneme_store::paths::transcript_dir(&home.env, &project);
    std::fs::create_dir_all(&transcripts).unwrap();
    let transcript = transcripts.join(format!("{SID}.jsonl"));
    (home, project, memory, transcript)
}

fn config(home: &TestHome, jobs: Jobs, folders: Vec<PathBuf>) -> SchedulerConfig {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut c = SchedulerConfig::new(home.env.clone(), clock);
    c.jobs = jobs;
    c.folders = Folders::Given(folders);
    c.poll = Duration::from_millis(50);
    c.dream_tick = Duration::from_millis(100);
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_end_runs_offline_extraction_and_saves_a_memory_with_its_index_line() {
    let (home, project, memory, transcript) = app_session();

    let jobs = Jobs { extraction: true, session_memory: false, dream: false, team: false };
    let handle = start(config(&home, jobs, vec![])).unwrap();
    let mut rx = handle.subscribe();
    handle.ready().await;
    append(&transcript, &project, &turn("From now on, always use British English spelling in the docs.", "Understood."));

    let rec = finished(&mut rx, JobKind::Extraction).await;
    let Outcome::Done { summary } = &rec.outcome else { panic!("{rec:?}") };
    assert!(summary.starts_with("● Saved 1 memory"), "{summary}");
    let index = std::fs::read_to_string(memory.join("MEMORY.md")).unwrap();
    let topics: Vec<_> = std::fs::read_dir(&memory).unwrap().flatten().map(|e| e.file_name().into_string().unwrap()).filter(|n| n != "MEMORY.md").collect();
    assert_eq!(topics.len(), 1, "{topics:?}");
    assert!(index.contains(&topics[0]), "index {index:?} lacks {}", topics[0]);
    assert!(std::fs::read_to_string(memory.join(&topics[0])).unwrap().contains("British English"));
    assert_eq!(handle.run_log().recent(5, Some(JobKind::Extraction)).unwrap()[0], rec);
    handle.shutdown().await;
}

/// A model run that failed rests the model: the next turn end is not sent to it (with a
/// provider that is down each would spend minutes of retries) and says when it will be.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_model_is_rested_after_a_failed_run() {
    let (home, project, _, transcript) = app_session();
    let stub = mneme_stub_model::StubModel::start().await;
    stub.set_default(mneme_stub_model::Reply::status(400));
    let providers = home.env.data_dir().join("providers.json");
    std::fs::create_dir_all(providers.parent().unwrap()).unwrap();
    std::fs::write(&providers, json!({"kind": "anthropic", "base_url": stub.base_url()}).to_string()).unwrap();

    let jobs = Jobs { extraction: true, session_memory: false, dream: false, team: false };
    let mut c = config(&home, jobs, vec![]);
    c.env = c.env.set_var("ANTHROPIC_API_KEY", "sk-ant-test");
    let handle = start(c).unwrap();
    let mut rx = handle.subscribe();
    handle.ready().await;
    append(&transcript, &project, &turn("From now on, always use British English spelling in the docs.", "Understood."));
    let rec = finished(&mut rx, JobKind::Extraction).await;
    assert!(matches!(rec.outcome, Outcome::Failed { .. }), "{rec:?}");
    let asked = stub.model_requests().len();
    assert!(asked > 0);
    append_after(&transcript, &project, &turn("Also remember that the staging database is refreshed every Monday.", "Noted."), 2);
    let rec = finished(&mut rx, JobKind::Extraction).await;
    let Outcome::Skipped { reason } = &rec.outcome else { panic!("{rec:?}") };
    assert!(reason.contains("asked again in") && reason.contains("includes this turn"), "{reason}");
    assert_eq!(stub.model_requests().len(), asked, "the model was not asked while rested");
    handle.shutdown().await;
}

/// A session that cannot be opened for a reason the user must fix (here its saved cursor is
/// damaged) is reported with the file and what to do, once, not taken for a transcript still
/// waiting for its `cwd` and dropped without a word.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_cannot_be_opened_is_reported_once_with_the_file_to_fix() {
    let (home, project, memory, transcript) = app_session();
    let cursor = home.env.data_dir().join("extract/projects").join(mneme_core::sanitize::sanitize_path(&memory.to_string_lossy())).join(format!("sessions/{SID}.json"));
    std::fs::create_dir_all(cursor.parent().unwrap()).unwrap();
    std::fs::write(&cursor, "{\"cursor\": ").unwrap();

    let jobs = Jobs { extraction: true, session_memory: false, dream: false, team: false };
    let handle = start(config(&home, jobs, vec![])).unwrap();
    let mut rx = handle.subscribe();
    handle.ready().await;
    append(&transcript, &project, &turn("From now on, always use British English spelling in the docs.", "Understood."));
    let rec = finished(&mut rx, JobKind::Extraction).await;
    assert_eq!(rec.target, transcript.display().to_string());
    let Outcome::Failed { error } = &rec.outcome else { panic!("{rec:?}") };
    assert!(error.starts_with(&format!("{} is damaged", cursor.display())) && error.contains("Fix it, or delete it"), "{error}");
    // More turns while it stays damaged: nothing new to say.
    append(&transcript, &project, &turn("Also remember that the staging database is refreshed every Monday.", "Noted."));
    // A sleep on purpose: what is checked is that nothing happens, so there is nothing to wait
    // for; it gives the loop (polling every 50 ms) ten looks in which to say something.
    tokio::time::sleep(Duration::from_millis(500)).await;
    handle.shutdown().await;
    let failed = mneme_scheduler::RunLog::in_data_dir(&home.env.data_dir()).recent(10, Some(JobKind::Extraction)).unwrap();
    assert_eq!(failed, vec![rec]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_projects_folder_removed_and_made_again_is_watched_again() {
    let home = TestHome::new();
    let project = home.git_repo("app");
    let memory = home.memdir_for(&project);
    let transcripts = mneme_store::paths::transcript_dir(&home.env, &project);
    std::fs::create_dir_all(&transcripts).unwrap();
    let jobs = Jobs { extraction: true, session_memory: false, dream: false, team: false };
    let handle = start(config(&home, jobs, vec![])).unwrap();
    let mut rx = handle.subscribe();
    handle.ready().await;
    // Claude Code's projects folder goes away and comes back (a cleanup, a restore): the
    // watch on the old folder sees nothing of the new one.
    std::fs::remove_dir_all(home.env.projects_dir()).unwrap();
    // Sleeps on purpose: the loop tells no one when it has seen the folder go, or watches the
    // new one, so there is nothing to poll; these give its 50 ms looks ample time for each, so
    // that the turn below is written into a folder the loop had to watch afresh.
    tokio::time::sleep(Duration::from_millis(500)).await;
    std::fs::create_dir_all(&transcripts).unwrap();
    tokio::time::sleep(Duration::from_secs(1)).await;
    append(&transcripts.join(format!("{SID}.jsonl")), &project, &turn("From now on, never use sudo in scripts.", "Understood."));
    let rec = finished(&mut rx, JobKind::Extraction).await;
    assert!(matches!(&rec.outcome, Outcome::Done { summary } if summary.starts_with("● Saved 1 memory")), "{rec:?}");
    assert!(std::fs::read_to_string(memory.join("MEMORY.md")).unwrap().contains("sudo"));
    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn open_gates_lead_to_a_recorded_dream_that_holds_claude_codes_lock_format() {
    let home = TestHome::new();
    let project = home.git_repo("app");
    let memory = home.memdir_for(&project);
    home.write(home.config_home().join("settings.json"), r#"{"autoDreamEnabled": true}"#);
    std::fs::create_dir_all(&memory).unwrap();
    std::fs::write(memory.join("MEMORY.md"), "- [Build](build.md) — how to build\n- [Gone](gone.md) — points at nothing\n").unwrap();
    std::fs::write(memory.join("build.md"), "---\nname: build\ndescription: how to build\ntype: project\n---\nRun make.\n").unwrap();
    let transcripts = mneme_store::paths::transcript_dir(&home.env, &project);
    std::fs::create_dir_all(&transcripts).unwrap();
    for i in 0..5 {
        std::fs::write(transcripts.join(format!("5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5{i}.jsonl")), "{}\n").unwrap();
    }

    let jobs = Jobs { extraction: false, session_memory: false, dream: true, team: false };
    let handle = start(config(&home, jobs, vec![project.clone()])).unwrap();
    let mut rx = handle.subscribe();
    let rec = finished(&mut rx, JobKind::Dream).await;
    assert!(matches!(rec.outcome, Outcome::Done { .. }), "{rec:?}");
    // The lock is Claude Code's: our PID as the body, its mtime now "last consolidated".
    let lock = std::fs::read_to_string(memory.join(".consolidate-lock")).unwrap();
    assert_eq!(lock.trim(), std::process::id().to_string());
    // The dream is in the history, and a later pass finds the time gate closed: one dream only.
    let (records, _) = mneme_dream::Dreams::new(home.env.clone(), Arc::new(SystemClock)).list(&memory).unwrap();
    assert_eq!(records.len(), 1);
    // Two more passes than now: the pass that dreamed may still be finishing, the next one
    // starts after it and looks at the gates again (no sleep standing in for "it ran").
    let mut passes = handle.dream_passes();
    let seen = *passes.borrow_and_update();
    tokio::time::timeout(Duration::from_secs(30), passes.wait_for(|n| *n >= seen + 2))
        .await
        .expect("the dream loop finished no further pass within 30 s")
        .expect("the dream loop stopped");
    let runs = handle.run_log().recent(10, Some(JobKind::Dream)).unwrap();
    assert_eq!(runs.len(), 1, "a pass after the dream ran again: {runs:?}");
    handle.shutdown().await;
}

/// A project folder that is gone (deleted, renamed, on a drive that is not mounted) is not
/// dreamed over, however open its gates look: the settings and git root a session there would
/// dream by are in it. Said once while it stays gone, not at every tick; once it is back it
/// dreams, and it is said again when it goes again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_folder_that_is_gone_is_not_dreamed_over_and_is_said_once() {
    let home = TestHome::new();
    home.write(home.config_home().join("settings.json"), r#"{"autoDreamEnabled": true}"#);
    let (project, memory) = ready_to_dream(&home, "app");
    let git = home.root.join("app-git");
    std::fs::rename(&project, &git).unwrap();
    let jobs = Jobs { extraction: false, session_memory: false, dream: true, team: false };
    let handle = start(config(&home, jobs, vec![project.clone()])).unwrap();
    // Two passes that started after the folder last changed, however quick (a skip is), and the
    // loop's dream runs by then, newest first.
    let mut passes = handle.dream_passes();
    let mut runs_after_two_passes = async || {
        let seen = *passes.borrow_and_update();
        tokio::time::timeout(Duration::from_secs(30), passes.wait_for(|n| *n >= seen + 2)).await.expect("no two passes within 30 s").expect("the dream loop stopped");
        handle.run_log().recent(10, Some(JobKind::Dream)).unwrap()
    };
    let skipped = Outcome::Skipped { reason: format!("{} is gone; not dreaming until it is back", project.display()) };
    let runs = runs_after_two_passes().await;
    assert_eq!(runs.len(), 1, "{runs:?}");
    assert_eq!((&runs[0].outcome, runs[0].target.as_str()), (&skipped, project.display().to_string().as_str()));
    assert!(!memory.join(".consolidate-lock").exists(), "the gone project's memory folder was dreamed in");
    // Further passes look again and say nothing more.
    assert_eq!(runs_after_two_passes().await.len(), 1, "said more than once");
    // Back: it dreams. Gone again: said again.
    std::fs::rename(&git, &project).unwrap();
    let runs = runs_after_two_passes().await;
    assert!(runs.len() == 2 && matches!(runs[0].outcome, Outcome::Done { .. }), "{runs:?}");
    std::fs::rename(&project, &git).unwrap();
    let runs = runs_after_two_passes().await;
    assert!(runs.len() == 3 && runs[0].outcome == skipped, "{runs:?}");
    handle.shutdown().await;
}

/// A folder whose sessions ran for a limited-retention organization the sign-in is not in
/// (a restricted `session-owner` record, here in a sub-agent's transcript) is not dreamed over
/// by the newest release, whose last look before it dreams finds it (row 89): the run log says
/// why, once, and the lock is never taken. (No `claude` is installed here: the newest release
/// of the matrix is the one followed.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_of_another_limited_retention_organization_are_not_dreamed_over() {
    let home = TestHome::new();
    home.write(home.config_home().join("settings.json"), r#"{"autoDreamEnabled": true}"#);
    home.write(home.env.global_config_path(), r#"{"oauthAccount": {"accountUuid": "acc-1", "organizationUuid": "5b7c9f0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f"}}"#);
    let (project, memory) = ready_to_dream(&home, "app");
    let sub_agent = mneme_store::paths::transcript_dir(&home.env, &project).join("5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a50/subagents/agent-a1.jsonl");
    let owner = json!({"type": "session-owner", "sessionId": "s", "accountUuid": "acc-9",
        "organizationUuid": "0f9e8d7c-6b5a-4493-8271-605f4e3d2c1b", "restricted": ["ldr"]});
    home.write(&sub_agent, &format!("{owner}\n"));
    let jobs = Jobs { extraction: false, session_memory: false, dream: true, team: false };
    let handle = start(config(&home, jobs, vec![project.clone()])).unwrap();
    let mut passes = handle.dream_passes();
    for _ in 0..2 {
        let seen = *passes.borrow_and_update();
        tokio::time::timeout(Duration::from_secs(30), passes.wait_for(|n| *n >= seen + 2)).await.expect("no two passes within 30 s").expect("the dream loop stopped");
    }
    let runs = handle.run_log().recent(10, Some(JobKind::Dream)).unwrap();
    assert_eq!(runs.len(), 1, "said once: {runs:?}");
    let Outcome::Skipped { reason } = &runs[0].outcome else { panic!("{runs:?}") };
    assert!(reason.contains("other_retention_organization") && reason.contains("0f9e8d7c-6b5a-4493-8271-605f4e3d2c1b"), "{reason}");
    assert!(!memory.join(".consolidate-lock").exists(), "dreamed over another organization's sessions");
    handle.shutdown().await;
}

/// The scan throttle is per folder, as it is per Claude Code session: one scheduler looking
/// after two projects whose gates are open dreams in both, not only in the first one scanned.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_folder_whose_gates_open_dreams_not_only_the_first_one_scanned() {
    let home = TestHome::new();
    home.write(home.config_home().join("settings.json"), r#"{"autoDreamEnabled": true}"#);
    let (a, a_memory) = ready_to_dream(&home, "alpha");
    let (b, b_memory) = ready_to_dream(&home, "beta");
    let jobs = Jobs { extraction: false, session_memory: false, dream: true, team: false };
    let handle = start(config(&home, jobs, vec![a, b])).unwrap();
    let mut rx = handle.subscribe();
    let first = finished(&mut rx, JobKind::Dream).await;
    let second = finished(&mut rx, JobKind::Dream).await;
    let mut targets = vec![first.target.clone(), second.target.clone()];
    targets.sort();
    assert_eq!(targets, vec![a_memory.display().to_string(), b_memory.display().to_string()], "{first:?} {second:?}");
    assert!(matches!(first.outcome, Outcome::Done { .. }) && matches!(second.outcome, Outcome::Done { .. }), "{first:?} {second:?}");
    handle.shutdown().await;
}

/// A handle dropped without a shutdown (its owner failed) stops the loops all the same; they
/// hold the one-per-machine lock until they have stopped, so a new scheduler can start once
/// they have, and not while they still run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_handle_dropped_without_shutdown_stops_every_loop() {
    let home = TestHome::new();
    let project = home.git_repo("app");
    let jobs = Jobs { extraction: true, session_memory: false, dream: true, team: true };
    let handle = start(config(&home, jobs, vec![project])).unwrap();
    handle.ready().await;
    drop(handle);
    let restarted = async {
        loop {
            match start(config(&home, jobs, vec![])) {
                Ok(h) => return h,
                Err(mneme_scheduler::SchedulerError::AlreadyRunning { .. }) => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(e) => panic!("{e}"),
            }
        }
    };
    let again = tokio::time::timeout(Duration::from_secs(30), restarted).await.expect("the dropped scheduler's loops still run after 30 s");
    again.shutdown().await;
}

/// A dream writes the day as the user's clock shows it: the scheduler's offset from UTC, not 0.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dream_writes_the_local_day() {
    let home = TestHome::new();
    home.write(home.config_home().join("settings.json"), r#"{"autoDreamEnabled": true}"#);
    let (project, memory) = ready_to_dream(&home, "app");
    std::fs::write(memory.join("MEMORY.md"), "- [Build](build.md) — how to build\n- [Gone](gone.md) — points at nothing\n").unwrap();
    let jobs = Jobs { extraction: false, session_memory: false, dream: true, team: false };
    let mut c = config(&home, jobs, vec![project]);
    // 23:30 on 2 March in UTC is 00:30 on 3 March an hour east of it.
    c.clock = Arc::new(mneme_core::FixedClock::at_unix_secs(1_772_494_200));
    c.utc_offset = mneme_scheduler::LocalOffset::Fixed(3600);
    let handle = start(c).unwrap();
    let mut rx = handle.subscribe();
    let rec = finished(&mut rx, JobKind::Dream).await;
    assert!(matches!(rec.outcome, Outcome::Done { .. }), "{rec:?}");
    let gone = std::fs::read_to_string(memory.join("gone.md")).unwrap();
    assert!(gone.contains("Written back by a Mneme dream on 2026-03-03"), "{gone}");
    handle.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_scheduler_per_machine_and_the_next_one_may_start_when_it_stops() {
    let home = TestHome::new();
    let jobs = Jobs { extraction: true, session_memory: false, dream: false, team: false };
    let first = start(config(&home, jobs, vec![])).unwrap();
    let second = start(config(&home, jobs, vec![])).err().expect("a second scheduler is refused");
    let text = second.to_string();
    assert!(text.contains(&format!("(PID {})", std::process::id())) && text.contains("stop the other first"), "{text}");
    first.shutdown().await;
    start(config(&home, jobs, vec![])).unwrap().shutdown().await;
}
