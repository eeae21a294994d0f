//! `mneme serve` stopping while a request is stuck on a drive that stopped answering (a network
//! share whose server went away, a FUSE daemon that hangs), made real as root: an exFAT image
//! mounted through FUSE (`mneme_testsupport::exfat`) whose daemon is stopped, and always
//! continued before the drive is unmounted. As any other user the test says so and passes
//! without checking (CI runs it as root).
//!
//! A thread blocked in a system call under such a drive cannot be interrupted, and the server
//! leaves the operation's thread behind (`mneme_api::drive_check::guarded`); what matters is
//! that nothing waits for it when the server is told to stop: a runtime that waited for its
//! blocking tasks, or a shutdown that waited for every request in flight, would keep the
//! process alive until the drive answered, possibly for ever.

#![cfg(target_os = "linux")]

use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::TestHome;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// Far longer than a stop takes while the fix holds (the server waits at most 3 s for requests
/// in flight): reaching it is the failure. The drive's watchdog continues it after [`NEVER`].
const PROMPT: Duration = Duration::from_secs(15);
const NEVER: Duration = Duration::from_secs(90);

/// `mneme serve` on `home`, started in `cwd`, with the port and token it prints.
fn serve(home: &TestHome, cwd: &Path) -> (Child, u16, String) {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), home);
    let mut child = cmd.args(["serve", "--port", "0"]).current_dir(cwd).spawn().expect("mneme serve starts");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("mneme serve prints its address");
    // "Mneme is running at http://127.0.0.1:<port>/?token=<token>"
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("no address in {line:?}"));
    let (port, token) = rest.split_once("/?token=").unwrap();
    (child, port.parse().unwrap(), token.to_string())
}

/// Sends `POST /api/<method>` with `body` and answers the whole response, on a thread of its own
/// (the answer may never come): the receiver gets it, or nothing when the connection dropped.
fn post(port: u16, token: &str, method: &str, body: &str) -> mpsc::Receiver<String> {
    let request = format!(
        "POST /api/{method} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to mneme serve");
        s.write_all(request.as_bytes()).unwrap();
        let mut answer = String::new();
        let _ = s.read_to_string(&mut answer);
        let _ = tx.send(answer);
    });
    rx
}

/// Sends `signal` to `child` and answers how long it took to exit, failing past [`PROMPT`].
fn stop(mut child: Child, signal: &str) -> Duration {
    let asked = Instant::now();
    assert!(Command::new("kill").arg(format!("-{signal}")).arg(child.id().to_string()).status().unwrap().success());
    loop {
        if child.try_wait().unwrap().is_some() {
            return asked.elapsed();
        }
        if asked.elapsed() > PROMPT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("mneme serve was still running {PROMPT:?} after SIG{signal} while a request was stuck on a hung drive");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The user's CLAUDE.md includes a file on a drive that then stops answering: "What Claude
/// sees" reads it, so the request's thread blocks there (the drive checks before a request ask
/// only the project's folder and its memory folder). Stopped with Ctrl-C (SIGINT, which it
/// handles: requests in flight are given a moment, then dropped) and with SIGTERM, the server
/// exits within a few seconds, the stuck request answered or dropped, however long the drive
/// stays silent.
#[test]
fn mneme_serve_exits_promptly_while_a_request_is_stuck_on_a_hung_drive() {
    let home = TestHome::new();
    let Some(drive) = Exfat::mount(&home.root.join("drives/stick")) else { return };
    let shared = drive.path().join("shared-rules.md");
    std::fs::write(&shared, "Shared rules.\n").unwrap();
    let project = home.git_repo("app");
    // In the user's CLAUDE.md, whose includes outside the project Claude Code always follows.
    home.write(home.config_home().join("CLAUDE.md"), &format!("My rules.\n\n@{}\n", shared.display()));
    // Views are cached by their whole request: each asks for another day, so it is read afresh.
    let context = |day: u32| serde_json::json!({ "cwd": project, "date": format!("2025-11-{day:02}") }).to_string();

    for signal in ["INT", "TERM"] {
        let (child, port, token) = serve(&home, &project);
        let answered = post(port, &token, "context", &context(1)).recv_timeout(PROMPT).expect("context answers while the drive does");
        assert!(answered.starts_with("HTTP/1.1 200") && answered.contains("Shared rules."), "{answered}");

        let hung = drive.hang(NEVER);
        let stuck = post(port, &token, "context", &context(2));
        // A context read takes milliseconds; this one waits on the drive.
        assert!(stuck.recv_timeout(Duration::from_secs(2)).is_err(), "the request did not wait on the hung drive");
        let took = stop(child, signal);
        assert!(!hung.rescued(), "mneme serve waited for the drive to exit (SIG{signal})");
        assert!(took < Duration::from_secs(10), "SIG{signal}: exited only after {took:?}");
        drop(hung);
    }
    drop(drive);
}
