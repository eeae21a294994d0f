//! Row 75's dream side: from 2.1.337 Claude Code's auto-dream gate refuses in a session that
//! read a claude.ai chat's saved text (the same per-process mark that stops its extraction), so
//! no dream fires from that session's turn ends. The scheduler's dream loop, which checks the
//! gates at the turn ends extraction sees, does not dream from such a session either, and says
//! why once; 2.1.332 dreams from it.

mod common;

use common::finished;
use mneme_core::{Clock, SystemClock};
use mneme_scheduler::{start, Event, Folders, JobKind, Jobs, Outcome, RunRecord, SchedulerConfig};
use mneme_testsupport::TestHome;
use serde_json::{json, Value};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

const SID: &str = "5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5b";

/// Appends `entries` to the transcript of session [`SID`], linked one after the other.
fn append(transcript: &Path, cwd: &Path, entries: &[Value]) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(transcript).unwrap();
    let mut parent: Option<String> = None;
    for (i, e) in entries.iter().enumerate() {
        let mut e = e.clone();
        let uuid = format!("00000000-0000-4000-8000-{:012}", i + 1);
        let o = e.as_object_mut().unwrap();
        for (k, v) in [("uuid", json!(uuid)), ("parentUuid", json!(parent)), ("isSidechain", json!(false)), ("sessionId", json!(SID))] {
            o.insert(k.into(), v);
        }
        for (k, v) in [("cwd", json!(cwd)), ("timestamp", json!("2026-11-29T10:00:00.000Z")), ("userType", json!("external")), ("version", json!("2.1.337"))] {
            o.insert(k.into(), v);
        }
        writeln!(f, "{e}").unwrap();
        parent = Some(uuid);
    }
}

/// A turn in which the session reads a claude.ai chat Claude Code saved (a `Read` of
/// `tool-results/artifact-chat.*` under the config home's `projects` folder that succeeded).
fn chat_read_turn(home: &TestHome) -> Vec<Value> {
    let path = home.env.projects_dir().join("-elsewhere").join(SID).join("tool-results/artifact-chat.4f2a.txt");
    vec![
        json!({"type": "user", "message": {"role": "user", "content": "Remember that I prefer tabs over spaces."}}),
        json!({"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Read",
            "input": {"file_path": path}}], "stop_reason": "tool_use"}}),
        json!({"type": "user", "message": {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "1\tchat text"}]}}),
        json!({"type": "assistant", "message": {"id": "m2", "role": "assistant", "content": [{"type": "text", "text": "Noted."}], "stop_reason": "end_turn"}}),
    ]
}

/// A project with auto dream on, every gate open, and an index line pointing at nothing (so a
/// dream has work and keeps the lock it took); the memory folder and the transcript of session
/// [`SID`].
fn ready_to_dream(home: &TestHome) -> (PathBuf, PathBuf, PathBuf) {
    home.write(home.config_home().join("settings.json"), r#"{"autoDreamEnabled": true}"#);
    let (project, memory) = common::ready_to_dream(home, "app");
    common::give_the_dream_work(&memory);
    let transcript = mneme_store::paths::transcript_dir(&home.env, &project).join(format!("{SID}.jsonl"));
    (project, memory, transcript)
}

/// `env` with a `claude` on its PATH that says it is `version` (the release the loops follow).
fn with_claude(home: &TestHome, version: &str) -> mneme_store::Environment {
    use std::os::unix::fs::PermissionsExt;
    let bin = home.root.join(format!("bin-{version}"));
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("claude"), format!("#!/bin/sh\necho '{version} (Claude Code)'\n")).unwrap();
    std::fs::set_permissions(bin.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
    home.env.clone().set_var("PATH", bin.to_string_lossy().to_string())
}

/// The extraction and dream loops in `env`, quick to poll and tick.
fn extraction_and_dreams(env: mneme_store::Environment) -> SchedulerConfig {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut config = SchedulerConfig::new(env, clock);
    config.jobs = Jobs { extraction: true, session_memory: false, dream: true, team: false };
    // No folder to start with: the dream loop hears of the project from the turn end alone.
    config.folders = Folders::Given(vec![]);
    config.poll = Duration::from_millis(50);
    config.dream_tick = Duration::from_millis(100);
    config
}

/// Session [`SID`] reads a saved chat and ends its turn under the Claude Code `version`; the
/// dream runs the scheduler logged after the turn's extraction and a few more passes (the
/// loop's tick stands in for that session's turn ends too), newest first, the memory folder,
/// and the home that holds it.
async fn dream_runs_after_a_chat_read(version: &str) -> (Vec<RunRecord>, PathBuf, TestHome) {
    dream_runs_after_a_chat_read_with(version, |_, _| {}).await
}

/// [`dream_runs_after_a_chat_read`], with `prepare` given the home and the memory folder first.
async fn dream_runs_after_a_chat_read_with(version: &str, prepare: impl FnOnce(&TestHome, &Path)) -> (Vec<RunRecord>, PathBuf, TestHome) {
    let home = TestHome::new();
    let (project, memory, transcript) = ready_to_dream(&home);
    prepare(&home, &memory);
    let handle = start(extraction_and_dreams(with_claude(&home, version))).unwrap();
    let mut rx = handle.subscribe();
    handle.ready().await;
    append(&transcript, &project, &chat_read_turn(&home));
    finished(&mut rx, JobKind::Extraction).await;
    let mut passes = handle.dream_passes();
    for _ in 0..3 {
        let seen = *passes.borrow_and_update();
        tokio::time::timeout(Duration::from_secs(30), passes.wait_for(|n| *n >= seen + 2)).await.expect("no two passes within 30 s").expect("the dream loop stopped");
    }
    let runs = handle.run_log().recent(10, Some(JobKind::Dream)).unwrap();
    handle.shutdown().await;
    (runs, memory, home)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_dream_fires_from_a_session_that_read_a_saved_claude_ai_chat_from_2_1_337() {
    let (runs, memory, _home) = dream_runs_after_a_chat_read("2.1.337").await;
    assert_eq!(runs.len(), 1, "said once, not at every pass: {runs:?}");
    let Outcome::Skipped { reason } = &runs[0].outcome else { panic!("{runs:?}") };
    assert!(reason.starts_with(&format!("session {SID}, the last to end a turn in ")), "{reason}");
    assert!(reason.contains("read a claude.ai chat's saved text") && reason.contains("2.1.337 or later") && reason.contains("/clear"), "{reason}");
    assert!(!memory.join(".consolidate-lock").exists(), "dreamed from a session that read a saved chat");

    // 2.1.332 dreams from the same session.
    let (runs, memory, _home) = dream_runs_after_a_chat_read("2.1.332").await;
    assert!(runs.len() == 1 && matches!(runs[0].outcome, Outcome::Done { .. }), "{runs:?}");
    assert!(memory.join(".consolidate-lock").exists());
}

/// The release's mark comes from the read, not from its extraction: with Mneme's extraction off
/// for the project (its review mode Off, dreams still automatic) the read is still seen and no
/// dream fires from that session under 2.1.337.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_dream_fires_from_a_chat_reading_session_while_extraction_is_off_for_the_project() {
    let off = |home: &TestHome, memory: &Path| {
        mneme_extract::record::set_mode(&home.env.data_dir(), memory, mneme_extract::record::ReviewMode::Off).unwrap()
    };
    let (runs, memory, _home) = dream_runs_after_a_chat_read_with("2.1.337", off).await;
    assert!(runs.len() == 1 && matches!(&runs[0].outcome, Outcome::Skipped { reason } if reason.contains("read a claude.ai chat's saved text")), "{runs:?}");
    assert!(!memory.join(".consolidate-lock").exists(), "dreamed from a session that read a saved chat");
}

/// A model that does not answer the extraction's request does not hold the dream back: the
/// dream loop hears of the turn end before the extraction's model run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_model_that_does_not_answer_the_extraction_does_not_hold_the_dream_back() {
    let home = TestHome::new();
    let (project, _memory, transcript) = ready_to_dream(&home);
    // A loopback model that takes connections and never answers them.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let base_url = format!("http://{}", silent.local_addr().unwrap());
    let providers = home.env.data_dir().join("providers.json");
    std::fs::create_dir_all(providers.parent().unwrap()).unwrap();
    std::fs::write(&providers, json!({"kind": "anthropic", "base_url": base_url}).to_string()).unwrap();
    let handle = start(extraction_and_dreams(with_claude(&home, "2.1.332").set_var("ANTHROPIC_API_KEY", "sk-ant-test"))).unwrap();
    let mut rx = handle.subscribe();
    handle.ready().await;
    let turn = vec![
        json!({"type": "user", "message": {"role": "user", "content": "From now on, always use British English spelling in the docs."}}),
        json!({"type": "assistant", "message": {"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Understood."}], "stop_reason": "end_turn"}}),
    ];
    append(&transcript, &project, &turn);
    // The dream starts (it takes the lock) while the extraction still waits on the model.
    let started = async {
        loop {
            match rx.recv().await {
                Ok(Event::Started { job: JobKind::Dream, .. }) => return,
                Ok(Event::Finished { record }) if record.job == JobKind::Extraction => panic!("the extraction finished first: {record:?}"),
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("event channel closed: {e}"),
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), started).await.expect("no dream started within 30 s of the turn end");
    drop(silent);
    handle.shutdown().await;
}
