//! `mneme daemon` on the real binary: it follows a Claude Code session transcript, extracts at
//! the turn end (offline), prints the run, records it for `mneme daemon runs`, and stops cleanly
//! on SIGTERM; `install-unit` writes a systemd user unit that runs this binary.

use mneme_testsupport::{wait, TestHome};
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::Command;
use std::sync::mpsc;
use std::time::Duration;

fn command(h: &TestHome, args: &[&str]) -> Command {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), h);
    cmd.env("XDG_CONFIG_HOME", h.root.join("xdg-config"))
        .env("MNEME_KEYRING_SERVICE", "mneme-daemon-cli-test")
        .arg("--managed-dir")
        .arg(h.root.join("managed"))
        .args(args);
    cmd
}

fn transcript_line(cwd: &Path, uuid: &str, parent: Option<&str>, body: serde_json::Value) -> String {
    let mut v = body;
    let o = v.as_object_mut().unwrap();
    o.insert("uuid".into(), uuid.into());
    o.insert("parentUuid".into(), parent.map_or(serde_json::Value::Null, |p| p.into()));
    o.insert("isSidechain".into(), false.into());
    o.insert("sessionId".into(), "7c0ffee0-1111-4222-8333-444455556666".into());
    o.insert("cwd".into(), cwd.to_string_lossy().into_owned().into());
    o.insert("timestamp".into(), "2026-11-29T10:00:00.000Z".into());
    o.insert("type".into(), o["message"]["role"].clone());
    format!("{v}\n")
}

/// A session of one remembered fact and an answer, written where the daemon watches.
fn write_session(transcripts: &std::path::Path, project: &std::path::Path) {
    let mut f = std::fs::File::create(transcripts.join("7c0ffee0-1111-4222-8333-444455556666.jsonl")).unwrap();
    let u1 = "00000000-0000-4000-8000-000000000001";
    let u2 = "00000000-0000-4000-8000-000000000002";
    f.write_all(transcript_line(project, u1, None, serde_json::json!({"message": {"role": "user", "content": "Remember that the staging database is refreshed every Monday night."}})).as_bytes()).unwrap();
    f.write_all(transcript_line(project, u2, Some(u1), serde_json::json!({"message": {"role": "assistant", "content": [{"type": "text", "text": "Noted."}], "stop_reason": "end_turn"}})).as_bytes()).unwrap();
}

#[test]
fn the_daemon_extracts_at_a_turn_end_records_the_run_and_stops_on_sigterm() {
    let h = TestHome::new();
    let project = h.git_repo("app");
    let transcripts = mneme_store::paths::transcript_dir(&h.env, &project);
    std::fs::create_dir_all(&transcripts).unwrap();
    let mut child = command(&h, &["daemon", "--no-team", "--no-dream"]).spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    // The daemon announces itself on stderr once it watches transcripts.
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut announcement = String::new();
    stderr.read_line(&mut announcement).unwrap();
    assert!(announcement.contains("extraction on, dream off, team sync off"), "{announcement}");
    write_session(&transcripts, &project);

    // Progress lines come first ("turn ended in …"), then the finished run.
    let mut seen = Vec::new();
    let line = loop {
        let line = rx.recv_timeout(Duration::from_secs(30)).unwrap_or_else(|_| panic!("no finished run within 30 s; saw {seen:?}"));
        if !line.contains("turn ended in") {
            break line;
        }
        seen.push(line);
    };
    assert_eq!(seen.len(), 1, "{seen:?}");
    assert!(line.starts_with("[extraction] ") && line.contains("● Saved 1 memory"), "{line}");

    rustix_kill(child.id());
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(status.success(), "exit {status:?}: {rest}");
    assert!(rest.contains("stopping"), "{rest}");

    let runs = command(&h, &["daemon", "runs"]).output().unwrap();
    assert!(String::from_utf8_lossy(&runs.stdout).contains("● Saved 1 memory"));
}

/// Standard output gone (the reader of a pipe went away) ends the printing, not the daemon: it
/// says so on standard error, keeps running its jobs, and still stops cleanly on SIGTERM.
#[test]
fn a_closed_standard_output_does_not_stop_the_daemon() {
    let h = TestHome::new();
    let project = h.git_repo("app");
    let transcripts = mneme_store::paths::transcript_dir(&h.env, &project);
    std::fs::create_dir_all(&transcripts).unwrap();
    let mut child = command(&h, &["daemon", "--no-team", "--no-dream"]).spawn().unwrap();
    drop(child.stdout.take());
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("extraction on"), "{line}");
    write_session(&transcripts, &project);
    line.clear();
    stderr.read_line(&mut line).unwrap();
    assert!(line.contains("cannot write to standard output") && line.contains("carrying on"), "{line}");
    // The run it could not print is in the run log, and the daemon is still there to stop.
    let runs = wait::result("the extraction run in `mneme daemon runs`", || {
        let out = command(&h, &["daemon", "runs"]).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        // A failure shows what the runs list last said, not only that the run never came.
        if text.contains("● Saved 1 memory") { Ok(text) } else { Err(text) }
    });
    assert!(runs.starts_with("[extraction] "), "{runs}");
    assert!(child.try_wait().unwrap().is_none(), "the daemon stopped");
    rustix_kill(child.id());
    let status = child.wait().unwrap();
    let mut rest = String::new();
    std::io::Read::read_to_string(&mut stderr, &mut rest).unwrap();
    assert!(status.success(), "exit {status:?}: {rest}");
}

/// A run a newer Mneme recorded with an outcome this build does not know is printed with that
/// outcome's name, not left out (the run log is shared by every build on the machine).
#[test]
fn runs_lists_a_newer_mneme_s_outcome_by_its_name() {
    let h = TestHome::new();
    let data = h.env.data_dir();
    std::fs::create_dir_all(&data).unwrap();
    std::fs::write(
        data.join("runs.jsonl"),
        "{\"id\":\"1\",\"job\":\"dream\",\"target\":\"/m\",\"startedMs\":1,\"finishedMs\":2,\"outcome\":{\"status\":\"deferred\",\"until\":3}}\n",
    )
    .unwrap();
    let out = command(&h, &["daemon", "runs"]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(text.trim_end(), "[dream] /m: finished (a newer Mneme's outcome: 'deferred')");
}

fn rustix_kill(pid: u32) {
    let status = Command::new("kill").arg("-TERM").arg(pid.to_string()).status().unwrap();
    assert!(status.success());
}

#[test]
fn install_unit_writes_a_user_unit_that_runs_this_binary() {
    let h = TestHome::new();
    let out = command(&h, &["daemon", "install-unit"]).output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let unit = std::fs::read_to_string(h.root.join("xdg-config/systemd/user/mneme.service")).unwrap();
    assert!(unit.contains(&format!("ExecStart=\"{}\" daemon\n", env!("CARGO_BIN_EXE_mneme"))), "{unit}");
    assert!(unit.contains("WantedBy=default.target"));
    // The daemon started by the user manager looks at the same folders as this shell, and is
    // not restarted every 10 s while another scheduler holds the lock.
    assert!(unit.contains(&format!("Environment=\"CLAUDE_CONFIG_DIR={}\"\n", h.config_home().display())), "{unit}");
    assert!(unit.contains("Environment=\"MNEME_KEYRING_SERVICE=mneme-daemon-cli-test\"\n"), "{unit}");
    assert!(unit.contains("RestartPreventExitStatus=75\n"), "{unit}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("systemctl --user enable --now mneme.service"));
}

#[test]
fn one_scheduler_per_machine_a_second_daemon_stops_and_serve_steps_aside() {
    let h = TestHome::new();
    let mut first = command(&h, &["daemon", "--no-team", "--no-dream"]).spawn().unwrap();
    let mut first_err = BufReader::new(first.stderr.take().unwrap());
    let mut line = String::new();
    first_err.read_line(&mut line).unwrap();
    assert!(line.contains("extraction on"), "{line}");

    // Its own exit status, which the systemd unit does not restart on.
    let second = command(&h, &["daemon", "--no-team", "--no-dream"]).output().unwrap();
    assert_eq!(second.status.code(), Some(75));
    let err = String::from_utf8_lossy(&second.stderr);
    assert!(err.contains(&format!("(PID {})", first.id())) && err.contains("stop the other first"), "{err}");

    // `mneme serve --scheduler` still serves, without its own scheduler, and says why.
    let mut serve = command(&h, &["serve", "--scheduler"]).spawn().unwrap();
    let mut out = BufReader::new(serve.stdout.take().unwrap());
    let mut url = String::new();
    out.read_line(&mut url).unwrap();
    assert!(url.starts_with("Mneme is running at http://127.0.0.1:"), "{url}");
    rustix_kill(serve.id());
    let served = serve.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&served.stderr).contains("background jobs stay off here"), "{}", String::from_utf8_lossy(&served.stderr));

    rustix_kill(first.id());
    assert!(first.wait().unwrap().success());
}
