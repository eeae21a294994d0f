//! A session whose project is on a drive that does not answer when its transcript is first
//! seen, made real as root: an exFAT image mounted through FUSE (`mneme_testsupport::exfat`)
//! whose daemon is stopped, and always continued before the drive is unmounted. As any other
//! user the test says so and passes without checking (CI runs it as root).

#![cfg(target_os = "linux")]

use mneme_core::{Clock, SystemClock};
use mneme_scheduler::{start, Event, Folders, JobKind, Jobs, Outcome, RunRecord, SchedulerConfig};
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::TestHome;
use serde_json::json;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

/// A bound no pass comes near while the fix holds: reaching it is the failure (a hang). The
/// drive's watchdog continues it after [`NEVER`], later than the test gives up waiting.
const NEVER: Duration = Duration::from_secs(90);
const GIVE_UP: Duration = Duration::from_secs(30);

/// Appends one turn (a user's message and the answer, ending it) of session `sid` run in `cwd`;
/// `before` is how many entries the transcript holds already.
fn append_turn(transcript: &Path, cwd: &Path, sid: &str, before: usize, user: &str) {
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(transcript).unwrap();
    let entries = [
        json!({"type": "user", "message": {"role": "user", "content": user}}),
        json!({"type": "assistant", "message": {"id": "msg_1", "role": "assistant", "model": "claude-opus-4-8",
            "content": [{"type": "text", "text": "Understood."}], "stop_reason": "end_turn", "usage": {"input_tokens": 100, "output_tokens": 5}}}),
    ];
    for (i, mut e) in entries.into_iter().enumerate() {
        let n = before + i + 1;
        let o = e.as_object_mut().unwrap();
        o.insert("uuid".into(), json!(format!("00000000-0000-4000-8000-{n:012}")));
        o.insert("parentUuid".into(), json!((n > 1).then(|| format!("00000000-0000-4000-8000-{:012}", n - 1))));
        o.insert("isSidechain".into(), json!(false));
        o.insert("sessionId".into(), json!(sid));
        o.insert("cwd".into(), json!(cwd));
        o.insert("timestamp".into(), json!("2026-11-29T10:00:00.000Z"));
        o.insert("userType".into(), json!("external"));
        o.insert("version".into(), json!("2.1.197"));
        writeln!(f, "{e}").unwrap();
    }
}

/// The next extraction run of `target` to finish, waiting up to [`GIVE_UP`] (a guard against
/// hanging, not a timing assertion).
async fn finished(rx: &mut tokio::sync::broadcast::Receiver<Event>, target: &str, what: &str) -> RunRecord {
    let wait = async {
        loop {
            match rx.recv().await {
                Ok(Event::Finished { record }) if record.job == JobKind::Extraction && record.target == target => return record,
                Ok(_) | Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("event channel closed: {e}"),
            }
        }
    };
    tokio::time::timeout(GIVE_UP, wait).await.unwrap_or_else(|_| panic!("{what} within 30 s"))
}

/// A session first seen while its project's drive hangs is recorded as skipped, with what is
/// wrong (not as failed: there is nothing to fix in Mneme), and opened at its next turn end once
/// the drive answers, extracting both turns. Before, the open was recorded as failed, and
/// tried again only a minute later.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_first_seen_while_its_drive_hangs_is_skipped_and_opened_once_it_answers() {
    let home = TestHome::new();
    let Some(drive) = Exfat::mount(&home.root.join("drives/stick")) else { return };
    let stick = drive.path().join("proj");
    std::fs::create_dir_all(&stick).unwrap();
    let sid = "5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5b";
    let dir = mneme_store::paths::transcript_dir(&home.env, &stick);
    std::fs::create_dir_all(&dir).unwrap();
    let transcript = dir.join(format!("{sid}.jsonl"));

    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut c = SchedulerConfig::new(home.env.clone(), clock);
    c.jobs = Jobs { extraction: true, session_memory: false, dream: false, team: false };
    c.folders = Folders::Given(vec![]);
    c.poll = Duration::from_millis(50);
    let handle = start(c).unwrap();
    let mut rx = handle.subscribe();
    handle.ready().await;
    let target = transcript.display().to_string();

    let hung = drive.hang(NEVER);
    assert!(!mneme_store::drive::answers(&stick), "the stopped drive still answers");
    append_turn(&transcript, &stick, sid, 0, "Also remember that the staging database is refreshed every Monday.");
    let skipped = finished(&mut rx, &target, "no word on the session on the hung drive").await;
    let reason = format!("the drive holding {} is not answering (a network share or USB drive that hangs?); the session is opened once it answers", stick.display());
    assert_eq!(skipped.outcome, Outcome::Skipped { reason }, "{skipped:?}");
    assert!(!hung.rescued(), "the extraction loop hung with the drive");

    // The drive answers again: the session's next turn end opens it and extracts both turns.
    drop(hung);
    append_turn(&transcript, &stick, sid, 2, "And the release branch is cut on Thursdays.");
    let done = finished(&mut rx, &target, "no extraction once the drive answered").await;
    assert!(matches!(&done.outcome, Outcome::Done { .. }), "{done:?}");
    let memory = home.memdir_for(&stick);
    let saved: String = std::fs::read_dir(&memory).unwrap().flatten().map(|e| std::fs::read_to_string(e.path()).unwrap_or_default()).collect();
    assert!(saved.contains("Monday"), "the turn ended while the drive hung was not extracted later: {saved}");
    handle.shutdown().await;
    drop(drive);
}
