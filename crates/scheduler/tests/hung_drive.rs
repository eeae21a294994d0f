//! A project on a drive that stops answering (a network share whose server went away, a FUSE
//! daemon that hangs), made real as root: an exFAT image mounted through FUSE
//! (`mneme_testsupport::exfat`) whose daemon is stopped, and always continued before the drive
//! is unmounted (`mneme_testsupport::hung_drive`). As any other user the test says so and passes
//! without checking (CI runs it as root).

#![cfg(target_os = "linux")]

use mneme_core::{Clock, SystemClock};
use mneme_scheduler::{start, Event, Folders, JobKind, Jobs, Outcome, RunRecord, SchedulerConfig, SchedulerHandle};
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::hung_drive::{self, config_on_a_drive, GIVE_UP};
use mneme_testsupport::{wait, TestHome};
use serde_json::json;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// When the drive's watchdog continues it anyway: later than the passes give up waiting
/// (`hung_drive::GIVE_UP`, the bound no pass comes near while the fix holds).
const NEVER: Duration = Duration::from_secs(60);

/// Auto dream on for `project`, a memory folder and five sessions since it last dreamed
/// (never): every gate is open. Its memory folder is answered.
fn ready_to_dream(home: &TestHome, project: &Path) -> PathBuf {
    std::fs::create_dir_all(project).unwrap();
    let memory = home.memdir_for(project);
    std::fs::create_dir_all(&memory).unwrap();
    std::fs::write(memory.join("MEMORY.md"), "- [Build](build.md) — how to build\n").unwrap();
    std::fs::write(memory.join("build.md"), "---\nname: build\ndescription: how to build\ntype: project\n---\nRun make.\n").unwrap();
    let transcripts = mneme_store::paths::transcript_dir(&home.env, project);
    std::fs::create_dir_all(&transcripts).unwrap();
    for i in 0..5 {
        std::fs::write(transcripts.join(format!("5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5{i}.jsonl")), "{}\n").unwrap();
    }
    memory
}

/// The dream loop alone over `folders`, checking them every 100 ms.
fn dream_loop(home: &TestHome, folders: Folders) -> SchedulerHandle {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut c = SchedulerConfig::new(home.env.clone(), clock);
    c.jobs = Jobs { extraction: false, session_memory: false, dream: true, team: false };
    c.folders = folders;
    c.dream_tick = Duration::from_millis(100);
    start(c).unwrap()
}

/// Waits for two more dream passes than now (the one under way may have started before the
/// last change), and answers the dream runs recorded by then, newest first.
async fn runs_after_two_passes(handle: &SchedulerHandle) -> Vec<RunRecord> {
    let mut passes = handle.dream_passes();
    let seen = *passes.borrow_and_update();
    tokio::time::timeout(GIVE_UP, passes.wait_for(|n| *n >= seen + 2))
        .await
        .expect("the dream loop finished no two passes within 30 s: it hung with the drive")
        .expect("the dream loop stopped");
    handle.run_log().recent(20, Some(JobKind::Dream)).unwrap()
}

/// While one project's drive hangs, the dream loop goes on for the other project (it checks
/// the projects one after another, the hung one first here), records the hung one as skipped
/// with what is wrong, once however many passes it lasts, and dreams there once the drive
/// answers again. Before, the pass stopped at the hung project until its drive answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_on_a_hung_drive_is_skipped_and_the_others_dream() {
    let home = TestHome::new();
    home.write(home.config_home().join("settings.json"), r#"{"autoDreamEnabled": true}"#);
    let Some(drive) = Exfat::mount(&home.root.join("drives/stick")) else { return };
    let stick = drive.path().join("proj");
    let stick_memory = ready_to_dream(&home, &stick);
    // Checked after the stick: the loop goes through its projects in the order of their paths.
    let other = home.root.join("zeta");
    let other_memory = ready_to_dream(&home, &other);
    assert!(stick < other);

    let hung = hung_drive::stop(&drive, &stick, NEVER);

    let handle = dream_loop(&home, Folders::Given(vec![stick.clone(), other.clone()]));

    let skipped = Outcome::Skipped {
        reason: format!(
            "the drive holding {} is not answering (a network share or USB drive that hangs?); Mneme tries again at the next check (every few minutes) and dreams once it answers",
            stick.display()
        ),
    };
    let runs = runs_after_two_passes(&handle).await;
    assert!(!hung.rescued(), "the dream loop hung with the drive");
    let of = |runs: &[RunRecord], target: &Path| runs.iter().filter(|r| r.target == target.display().to_string()).cloned().collect::<Vec<_>>();
    let done = of(&runs, &other_memory);
    assert!(done.len() == 1 && matches!(done[0].outcome, Outcome::Done { .. }), "{runs:?}");
    let said = of(&runs, &stick);
    assert!(said.len() == 1 && said[0].outcome == skipped, "{runs:?}");
    assert!(!stick_memory.join(".consolidate-lock").exists());

    // More passes while it lasts: nothing more to say.
    let runs = runs_after_two_passes(&handle).await;
    assert_eq!(of(&runs, &stick).len(), 1, "said more than once: {runs:?}");
    assert!(!hung.rescued(), "the dream loop hung with the drive");

    // The drive answers again: its project dreams at a later pass.
    drop(hung);
    let dreamed = dreamed_once_answering(&handle, &stick_memory).await;
    assert!(matches!(dreamed.outcome, Outcome::Done { .. }), "{dreamed:?}");
    handle.shutdown().await;
    drop(drive);
}

/// The dream of `memory` the loop records once its drive answers again, waiting up to
/// [`GIVE_UP`] (a guard against hanging, not a timing assertion).
async fn dreamed_once_answering(handle: &SchedulerHandle, memory: &Path) -> RunRecord {
    let dreamed = async {
        loop {
            let runs = runs_after_two_passes(handle).await;
            if let Some(r) = runs.iter().find(|r| r.target == memory.display().to_string()) {
                return r.clone();
            }
        }
    };
    tokio::time::timeout(GIVE_UP, dreamed).await.expect("the project did not dream within 30 s of its drive answering again")
}

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

/// The transcript of session `sid` in `project`, its folder made.
fn transcript(home: &TestHome, project: &Path, sid: &str) -> PathBuf {
    std::fs::create_dir_all(project).unwrap();
    let dir = mneme_store::paths::transcript_dir(&home.env, project);
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(format!("{sid}.jsonl"))
}

/// The next event about an extraction run of `transcript` that `pick` keeps, waiting up to
/// [`GIVE_UP`] (a guard against hanging, not a timing assertion).
async fn next<T>(rx: &mut tokio::sync::broadcast::Receiver<Event>, what: &str, mut pick: impl FnMut(Event) -> Option<T>) -> T {
    let wait = async {
        loop {
            match rx.recv().await {
                Ok(e) => {
                    if let Some(t) = pick(e) {
                        return t;
                    }
                }
                Err(tokio::sync::broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("event channel closed: {e}"),
            }
        }
    };
    tokio::time::timeout(GIVE_UP, wait).await.unwrap_or_else(|_| panic!("{what} within 30 s: the extraction loop hung with the drive"))
}

/// The extraction loop alone over `home`'s sessions, looking at transcripts every 50 ms, and its
/// events subscribed to, once it is ready.
async fn extraction_loop(home: &TestHome) -> (SchedulerHandle, tokio::sync::broadcast::Receiver<Event>) {
    let clock: Arc<dyn Clock> = Arc::new(SystemClock);
    let mut c = SchedulerConfig::new(home.env.clone(), clock);
    c.jobs = Jobs { extraction: true, session_memory: false, dream: false, team: false };
    c.folders = Folders::Given(vec![]);
    c.poll = Duration::from_millis(50);
    let handle = start(c).unwrap();
    let rx = handle.subscribe();
    handle.ready().await;
    (handle, rx)
}

/// While one project's drive hangs, a turn that ends there is recorded as skipped with what is
/// wrong, the extraction loop goes on with other projects' turns, and once the drive answers
/// the project's next turn end extracts what was left (from the session's saved cursor).
/// Before, the loop waited on the hung project until its drive answered.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_turn_end_on_a_hung_drive_is_skipped_and_other_projects_are_extracted() {
    let home = TestHome::new();
    let Some(drive) = Exfat::mount(&home.root.join("drives/stick")) else { return };
    let stick = drive.path().join("proj");
    let (a, b) = ("5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5b", "6c2d0f2f-3044-4e8b-8b62-1d2e3f4a5b6c");
    let on_stick = transcript(&home, &stick, a);
    let other = home.root.join("zeta");
    let on_other = transcript(&home, &other, b);

    let (handle, mut rx) = extraction_loop(&home).await;
    let target = |t: &Path| t.display().to_string();
    let finished = |t: String| move |e| match e {
        Event::Finished { record } if record.job == JobKind::Extraction && record.target == t => Some(record),
        _ => None,
    };

    // The session on the stick is followed while its drive answers.
    append_turn(&on_stick, &stick, a, 0, "From now on, always use British English spelling in the docs.");
    let first = next(&mut rx, "no extraction on the stick", finished(target(&on_stick))).await;
    assert!(matches!(&first.outcome, Outcome::Done { summary } if summary.starts_with("● Saved 1 memory")), "{first:?}");

    let hung = hung_drive::stop(&drive, &stick, NEVER);
    append_turn(&on_stick, &stick, a, 2, "Also remember that the staging database is refreshed every Monday.");
    // The loop has taken the hung project's turn up before the other one ends a turn.
    next(&mut rx, "no run started on the stick", |e| matches!(e, Event::Started { target: t, .. } if t == target(&on_stick)).then_some(())).await;
    append_turn(&on_other, &other, b, 0, "From now on, never use sudo in scripts.");
    let skipped = next(&mut rx, "no word on the stick's turn", finished(target(&on_stick))).await;
    let reason = format!(
        "the drive holding {} is not answering (a network share or USB drive that hangs?); this turn is extracted with the session's next turn end once it answers",
        stick.display()
    );
    assert_eq!(skipped.outcome, Outcome::Skipped { reason }, "{skipped:?}");
    let done = next(&mut rx, "no extraction in the other project", finished(target(&on_other))).await;
    assert!(matches!(&done.outcome, Outcome::Done { summary } if summary.starts_with("● Saved 1 memory")), "{done:?}");
    assert!(!hung.rescued(), "the extraction loop hung with the drive");

    // The drive answers again: the session's next turn end extracts both turns. (Until the
    // look stuck on it has returned it still counts as not answering, and a turn ending then
    // is skipped again: waited for, not raced.)
    drop(hung);
    wait::until("the stick's drive answering again", || mneme_store::drive::answers(&stick));
    append_turn(&on_stick, &stick, a, 4, "And the release branch is cut on Thursdays.");
    let back = next(&mut rx, "no extraction on the stick once it answered", finished(target(&on_stick))).await;
    assert!(matches!(&back.outcome, Outcome::Done { .. }), "{back:?}");
    let memory = home.memdir_for(&stick);
    let saved: String = std::fs::read_dir(&memory).unwrap().flatten().map(|e| std::fs::read_to_string(e.path()).unwrap_or_default()).collect();
    assert!(saved.contains("Monday"), "the turn skipped while the drive hung was not extracted later: {saved}");
    handle.shutdown().await;
    drop(drive);
}

/// With the projects found on disk (as the desktop and `mneme serve --scheduler` start it), a
/// project on a drive that hangs does not hold the dream loop's start: discovery gives the
/// drive its patience and goes on, the other project dreams, and the hung one, still known,
/// is recorded as skipped and dreams once its drive answers. Before, discovery looked at the
/// hung folder on the loop's start-up thread and the loop never started.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dream_loop_starts_with_discovered_projects_while_one_drive_hangs() {
    let home = TestHome::new();
    home.write(home.config_home().join("settings.json"), r#"{"autoDreamEnabled": true}"#);
    let Some(drive) = Exfat::mount(&home.root.join("drives/stick")) else { return };
    let stick = drive.path().join("proj");
    let stick_memory = ready_to_dream(&home, &stick);
    let other = home.root.join("zeta");
    let other_memory = ready_to_dream(&home, &other);
    // Sessions that name their folder, as Claude Code's do: discovery recovers each project
    // from them.
    for project in [&stick, &other] {
        append_turn(&transcript(&home, project, "5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a50"), project, "5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a50", 0, "Hello.");
    }

    let hung = hung_drive::stop(&drive, &stick, NEVER);

    let handle = dream_loop(&home, Folders::Discover);

    let runs = runs_after_two_passes(&handle).await;
    assert!(!hung.rescued(), "the dream loop hung with the drive");
    let of = |runs: &[RunRecord], target: &Path| runs.iter().filter(|r| r.target == target.display().to_string()).cloned().collect::<Vec<_>>();
    let done = of(&runs, &other_memory);
    assert!(done.len() == 1 && matches!(done[0].outcome, Outcome::Done { .. }), "{runs:?}");
    let said = of(&runs, &stick);
    assert!(said.len() == 1 && matches!(&said[0].outcome, Outcome::Skipped { reason } if reason.contains("is not answering")), "{runs:?}");

    drop(hung);
    let dreamed = dreamed_once_answering(&handle, &stick_memory).await;
    assert!(matches!(dreamed.outcome, Outcome::Done { .. }), "{dreamed:?}");
    handle.shutdown().await;
    drop(drive);
}

/// The next extraction run of `target` to finish, waiting up to [`GIVE_UP`] (a guard against
/// hanging, not a timing assertion).
async fn finished(rx: &mut tokio::sync::broadcast::Receiver<Event>, target: &str, what: &str) -> RunRecord {
    next(rx, what, |e| match e {
        Event::Finished { record } if record.job == JobKind::Extraction && record.target == target => Some(record),
        _ => None,
    })
    .await
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

    let (handle, mut rx) = extraction_loop(&home).await;
    let target = transcript.display().to_string();

    let hung = hung_drive::stop(&drive, &stick, NEVER + GIVE_UP);
    append_turn(&transcript, &stick, sid, 0, "Also remember that the staging database is refreshed every Monday.");
    let skipped = finished(&mut rx, &target, "no word on the session on the hung drive").await;
    let reason = format!("the drive holding {} is not answering (a network share or USB drive that hangs?); the session is opened once it answers", stick.display());
    assert_eq!(skipped.outcome, Outcome::Skipped { reason }, "{skipped:?}");
    assert!(!hung.rescued(), "the extraction loop hung with the drive");

    // The drive answers again: the session's next turn end opens it and extracts both turns
    // (once the look stuck on it has returned, as above).
    drop(hung);
    wait::until("the stick's drive answering again", || mneme_store::drive::answers(&stick));
    append_turn(&transcript, &stick, sid, 2, "And the release branch is cut on Thursdays.");
    let done = finished(&mut rx, &target, "no extraction once the drive answered").await;
    assert!(matches!(&done.outcome, Outcome::Done { .. }), "{done:?}");
    let memory = home.memdir_for(&stick);
    let saved: String = std::fs::read_dir(&memory).unwrap().flatten().map(|e| std::fs::read_to_string(e.path()).unwrap_or_default()).collect();
    assert!(saved.contains("Monday"), "the turn ended while the drive hung was not extracted later: {saved}");
    handle.shutdown().await;
    drop(drive);
}

/// Claude Code's own folder (`CLAUDE_CONFIG_DIR`: every project's transcripts and memory) on a
/// drive that stops answering, with the projects found on disk (as the desktop and `mneme serve
/// --scheduler` start it): the dream loop starts all the same (discovery gives up after the
/// drive's patience), says once which folder's drive is not answering, and finds and dreams
/// the projects once it answers. Before, discovery read the folder on the loop's start-up
/// thread and the loop never started while the drive hung.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dream_loop_starts_while_claude_codes_own_folder_is_on_a_hung_drive() {
    let mut home = TestHome::new();
    let Some((drive, config)) = config_on_a_drive(&mut home) else { return };
    home.write(config.join("settings.json"), r#"{"autoDreamEnabled": true}"#);
    let project = home.root.join("zeta");
    let memory = ready_to_dream(&home, &project);
    let sid = "5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a50";
    append_turn(&transcript(&home, &project, sid), &project, sid, 0, "Hello.");

    let hung = drive.hang(NEVER);
    let handle = dream_loop(&home, Folders::Discover);

    let runs = runs_after_two_passes(&handle).await;
    assert!(!hung.rescued(), "the dream loop hung with the drive");
    let projects = config.join("projects");
    let said: Vec<_> = runs.iter().filter(|r| r.target == projects.display().to_string()).collect();
    let reason = format!("The drive holding Claude Code's configuration folder (CLAUDE_CONFIG_DIR) {} is not answering", projects.display());
    assert!(said.len() == 1 && matches!(&said[0].outcome, Outcome::Skipped { reason: r } if r.starts_with(&reason)), "{runs:?}");
    // More passes while it lasts: nothing more to say.
    let runs = runs_after_two_passes(&handle).await;
    assert_eq!(runs.iter().filter(|r| r.target == projects.display().to_string()).count(), 1, "said more than once: {runs:?}");

    drop(hung);
    let dreamed = dreamed_once_answering(&handle, &memory).await;
    assert!(matches!(dreamed.outcome, Outcome::Done { .. }), "{dreamed:?}");
    handle.shutdown().await;
    drop(drive);
}

/// The first open of a session whose project's drive does not answer asks that drive off the
/// async worker: on a runtime of one thread, other tasks go on while the look waits out its
/// patience (3 s). Before, the open asked on the worker, and every task of the runtime (the
/// other loops; in `mneme serve --scheduler` and the desktop app, the requests too) stood still
/// meanwhile.
#[tokio::test(flavor = "current_thread")]
async fn opening_a_session_on_a_hung_drive_leaves_the_async_worker_free() {
    let home = TestHome::new();
    let Some(drive) = Exfat::mount(&home.root.join("drives/stick")) else { return };
    let stick = drive.path().join("proj");
    let sid = "5b1c9e1e-2f33-4d7a-9a51-0c1d2e3f4a5b";
    let on_stick = transcript(&home, &stick, sid);

    let (handle, mut rx) = extraction_loop(&home).await;

    // Nothing here asks the drive: the open's look is the first at it, and waits its patience.
    let hung = drive.hang(NEVER + GIVE_UP);
    let longest = Arc::new(std::sync::Mutex::new(Duration::ZERO));
    let ticks = Arc::new(AtomicUsize::new(0));
    let (l, t) = (longest.clone(), ticks.clone());
    let ticker = tokio::spawn(async move {
        loop {
            let asleep = std::time::Instant::now();
            // The measure itself: a 20 ms sleep that ends late tells how long the worker stood still.
            tokio::time::sleep(Duration::from_millis(20)).await;
            let took = asleep.elapsed();
            let mut l = l.lock().unwrap();
            *l = (*l).max(took);
            t.fetch_add(1, Ordering::SeqCst);
        }
    });
    // The ticker runs before the turn is written, so it is asleep when the open begins.
    wait::until_async("the ticker's first sleep", || {
        let t = ticks.clone();
        async move { t.load(Ordering::SeqCst) > 0 }
    })
    .await;
    append_turn(&on_stick, &stick, sid, 0, "Remember that the staging database is refreshed every Monday.");
    let skipped = finished(&mut rx, &on_stick.display().to_string(), "no word on the session on the hung drive").await;
    // The ticker's sleep that spanned the open ends after it (this runtime's one thread runs
    // one task at a time, so the ticker is asleep now): the next tick is that sleep measured.
    let seen = ticks.load(Ordering::SeqCst);
    wait::until_async("the ticker's sleep across the open measured", || {
        let t = ticks.clone();
        async move { t.load(Ordering::SeqCst) > seen }
    })
    .await;
    ticker.abort();
    // Said by the open (not by a turn's run): the open is what asked the drive.
    assert!(matches!(&skipped.outcome, Outcome::Skipped { reason } if reason.ends_with("is not answering (a network share or USB drive that hangs?); the session is opened once it answers")), "{skipped:?}");
    assert!(!hung.rescued(), "the extraction loop hung with the drive");
    let longest = *longest.lock().unwrap();
    assert!(longest < Duration::from_secs(1), "the async worker stood still for {longest:?} while the drive was asked");
    handle.shutdown().await;
    drop(hung);
    drop(drive);
}
