//! A CLAUDE.md or rule saved from the app's editor (the `save_file` operation, here driven
//! through `mneme serve`, whose process is SIGKILLed at random points of the request): the file
//! is always the old bytes or the new, never a part, and what a killed save leaves beside it is
//! a temporary file Claude Code does not load. That matters most in `.claude/rules`, where
//! Claude Code loads every `*.md` (sub-folders too): a temporary named like a rule would be
//! sent as one. The next opening of the file clears what killed saves left.
//! `crash_edit.rs` is the model; the store's own crash test covers its writes in general.
#![cfg(target_os = "linux")]

mod killing;

use killing::{jitter, ok, temps_under};
use mneme_testsupport::TestHome;
use serde_json::{json, Value};
use std::collections::BTreeSet;
use std::fs;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Instant;

/// Each save writes this much, so the write spans many blocks.
const SIZE: usize = 2 << 20;
/// Runs stop once this many kills left a killed save's temporary file (and `MIN_RUNS` ran).
const WANT_TEMPS: usize = 3;
const MIN_RUNS: usize = 24;
const MAX_RUNS: usize = 120;

/// The text of version `v` of a file: its number on the first line, then filler.
fn text(v: usize) -> String {
    let mut t = format!("# Version {v}\n\nUse tabs, not spaces.\n");
    let line = format!("- house rule {v:04}: keep functions short and names plain.\n");
    while t.len() < SIZE {
        t.push_str(&line);
    }
    t
}

/// `mneme serve` on `home`, started in `cwd`, with its port and token. Its stdout stays open
/// (in the child's handle) so that nothing it prints later fails on a closed pipe.
fn serve(h: &TestHome, cwd: &Path) -> (Child, u16, String) {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), h);
    cmd.args(["serve", "--port", "0"]).current_dir(cwd).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = cmd.spawn().expect("mneme serve starts");
    let mut line = String::new();
    let mut out = BufReader::new(child.stdout.take().unwrap());
    out.read_line(&mut line).expect("mneme serve prints its address");
    child.stdout = Some(out.into_inner());
    // "Mneme is running at http://127.0.0.1:<port>/?token=<token>"
    let url = line.trim().rsplit(' ').next().unwrap().to_string();
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("no address in {line:?}"));
    let (port, token) = rest.split_once("/?token=").unwrap();
    (child, port.parse().unwrap(), token.to_string())
}

/// `POST /api/<method>` with `body`, answering the response's JSON body (empty when the
/// connection dropped before an answer: the server was killed).
fn post(port: u16, token: &str, method: &str, body: &Value) -> String {
    post_on(connect(port), port, token, method, body)
}

fn connect(port: u16) -> std::net::TcpStream {
    std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect to mneme serve")
}

/// As [`post`], on a connection made beforehand: a save's connection is made before the kill is
/// timed, so the kill lands on a request the server has, not on one never sent.
fn post_on(mut s: std::net::TcpStream, port: u16, token: &str, method: &str, body: &Value) -> String {
    let body = body.to_string();
    let request = format!(
        "POST /api/{method} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    // A write cut by the kill is the test's point, not a failure.
    let _ = s.write_all(request.as_bytes());
    let mut answer = String::new();
    let _ = s.read_to_string(&mut answer);
    answer.split_once("\r\n\r\n").map(|(_, b)| b.to_string()).unwrap_or_default()
}

/// The file's revision, read through the server as the editor reads it (which also clears the
/// temporary files killed saves left beside it).
fn revision(port: u16, token: &str, repo: &Path, file: &Path) -> String {
    let answer = post(port, token, "readFile", &json!({"cwd": repo, "path": file}));
    let v: Value = serde_json::from_str(&answer).unwrap_or_else(|e| panic!("readFile answered {answer:?}: {e}"));
    v["revision"].as_str().unwrap_or_else(|| panic!("no revision in {v}")).to_string()
}

fn save(s: std::net::TcpStream, port: u16, token: &str, repo: &Path, file: &Path, v: usize, revision: &str) -> String {
    post_on(s, port, token, "saveFile", &json!({"cwd": repo, "path": file, "content": text(v), "revision": revision}))
}

/// Every file under `repo` but git's, by path relative to it.
fn files(repo: &Path) -> BTreeSet<String> {
    mneme_testsupport::files_under(repo)
        .into_iter()
        .map(|p| p.strip_prefix(repo).unwrap().to_string_lossy().into_owned())
        .filter(|r| !r.starts_with(".git/"))
        .collect()
}

/// The files Claude Code would load from `repo`, as `mneme context --json` lists them.
fn loaded(h: &TestHome, repo: &Path) -> BTreeSet<PathBuf> {
    let v: Value = serde_json::from_str(&ok(h, repo, &["context", "--json"])).unwrap();
    let files = v["files"].as_array().unwrap_or_else(|| panic!("no files in {v}"));
    files.iter().map(|f| PathBuf::from(f["path"].as_str().unwrap())).filter(|p| p.starts_with(repo)).collect()
}

#[test]
fn killed_claude_md_saves_leave_the_old_or_the_new_bytes_and_nothing_claude_code_loads() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let claude_md = repo.join("CLAUDE.md");
    let rule = repo.join(".claude/rules/style.md");
    fs::create_dir_all(rule.parent().unwrap()).unwrap();
    let mut version = [0usize; 2];
    fs::write(&claude_md, text(0)).unwrap();
    fs::write(&rule, text(0)).unwrap();
    let targets = [claude_md.clone(), rule.clone()];
    let expected_files = files(&repo);
    let expected_loaded = loaded(&h, &repo);
    assert_eq!(expected_loaded, targets.iter().cloned().collect(), "both files are loaded before any save");

    // How long one save takes, from the request to the answer.
    let (mut child, port, token) = serve(&h, &repo);
    let rev = revision(port, &token, &repo, &claude_md);
    let started = Instant::now();
    let answer = save(connect(port), port, &token, &repo, &claude_md, 1, &rev);
    let span_us = (started.elapsed().as_micros() as u64).max(1000);
    assert!(answer.contains("revision"), "the save answered {answer:?}");
    version[0] = 1;
    child.kill().unwrap();
    child.wait().unwrap();

    let (mut runs, mut killed, mut temps_seen) = (0, 0, 0);
    let mut next = 2;
    while runs < MIN_RUNS || (temps_seen < WANT_TEMPS && runs < MAX_RUNS) {
        runs += 1;
        let t = runs % 2;
        let file = &targets[t];
        let (mut child, port, token) = serve(&h, &repo);
        let rev = revision(port, &token, &repo, file);
        let v = next;
        next += 1;
        let (port2, token2, repo2, file2) = (port, token.clone(), repo.clone(), file.clone());
        let stream = connect(port);
        let saver = std::thread::spawn(move || save(stream, port2, &token2, &repo2, &file2, v, &rev));
        std::thread::sleep(std::time::Duration::from_micros(jitter(runs as u64, span_us + span_us / 4)));
        let _ = child.kill();
        let status = child.wait().unwrap();
        let answered = saver.join().unwrap();
        killed += usize::from(std::os::unix::process::ExitStatusExt::signal(&status) == Some(9) && answered.is_empty());

        let now = fs::read(file).unwrap();
        let (old, new) = (text(version[t]), text(v));
        assert!(now == old.as_bytes() || now == new.as_bytes(), "run {runs}: {} is torn: {} bytes, starting {:?}", file.display(), now.len(), String::from_utf8_lossy(&now[..40.min(now.len())]));
        if now == new.as_bytes() {
            version[t] = v;
        }
        // Anything else in the project is a killed save's temporary file, which Claude Code does
        // not load: not named `*.md` (`.claude/rules` loads those), and not listed as loaded.
        let strays: Vec<String> = files(&repo).difference(&expected_files).cloned().collect();
        let temps = temps_under(&repo);
        assert_eq!(strays.len(), temps.len(), "run {runs}: files left that are not Mneme's temporary files: {strays:?}");
        for s in &strays {
            assert!(!s.to_ascii_lowercase().ends_with(".md"), "run {runs}: {s} would be loaded as a rule");
        }
        if !strays.is_empty() {
            assert_eq!(loaded(&h, &repo), expected_loaded, "run {runs}: Claude Code would load {strays:?}");
        }
        temps_seen += strays.len();
    }
    // Opening each file again (as the editor does) clears what the killed saves left.
    let (mut child, port, token) = serve(&h, &repo);
    for file in &targets {
        revision(port, &token, &repo, file);
    }
    child.kill().unwrap();
    child.wait().unwrap();
    assert_eq!(temps_under(&repo), Vec::<String>::new());
    assert_eq!(files(&repo), expected_files);
    eprintln!("{runs} saves, {killed} killed before answering, {temps_seen} temporary files seen after kills (a save took {span_us} µs)");
    assert!(killed > 0, "no kill landed: the test proved nothing (a save took {span_us} µs)");
}
