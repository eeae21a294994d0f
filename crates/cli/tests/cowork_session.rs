//! A Cowork session of the real Claude Code (docs/claude-code-versions.md, rows 87 and 88) keeps
//! the verdict on its managed files that it reached at its start, for the whole session: a
//! managed file given to the session's account (or given back to root) between two turns is
//! sent as it was judged at the start, in the start-up block and in a conditional managed rule
//! attached after a later Read alike. A new session judges again. So what Mneme shows (what
//! `mneme context` and `mneme touched` print) is what a *new* session sends; this test holds
//! both halves against every release from 2.1.304 that the environment names
//! (`MNEME_CLAUDE_BINS`, `MNEME_CLAUDE_BIN`; skipped without one unless `MNEME_REQUIRE_CLAUDE=1`).
//!
//! Root could write anything, so the verdict only moves for another account: Claude Code and
//! `mneme` run as `nobody`, and the test (root) changes owners between turns. Each runs in a
//! private mount namespace (`unshare -m`) whose `/etc` is a copy holding `claude-code/`, so the
//! real `/etc` is never touched and runs elsewhere on the machine never see the fixture.
//! Offline: Claude Code talks only to the loopback stub, which answers a turn that should read
//! a file with a scripted `Read`. As any other user, or without `unshare`/`setpriv`
//! (util-linux), the test says why and passes without checking.

use mneme_core::versions::ClaudeVersion;
use mneme_stub_model::{RecordedRequest, StubModel, Turn};
use mneme_testsupport::{accounts, claude_code};
use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// The first release that sends such a file unverified (row 87).
const FIRST: &str = "2.1.304";
/// How long one turn may take (a start with a cold cache takes a few seconds).
const TURN: Duration = Duration::from_secs(120);
/// The managed files, relative to the managed folder, and what each holds.
const MANAGED: &[(&str, &str)] = &[
    ("CLAUDE.md", "MANAGED-TOP\n"),
    (".claude/rules/always.md", "MANAGED-ALWAYS\n"),
    (".claude/rules/src.md", "---\npaths: \"src/**\"\n---\nMANAGED-SRC\n"),
    (".claude/rules/lib.md", "---\npaths: \"lib/**\"\n---\nMANAGED-LIB\n"),
];
/// The start of the label Claude Code gives a managed file it does not verify (row 87).
const UNVERIFIED: &str = "(instructions from this machine's managed folder.";

/// Removes the fixture folder however the test ends.
struct Remove(PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fixture under `/run` (root's, 0755, as is `/`; under the temporary folder, which everyone
/// may write, every managed file would be unverified): `etc/` a copy of `/etc` holding
/// `claude-code/`, `home/` (nobody's) with the project, and both programs, which `nobody`
/// cannot reach in the build folder under root's home.
struct Fixture {
    root: PathBuf,
    claude: PathBuf,
    mneme: PathBuf,
}

impl Fixture {
    fn new(claude: &Path, version: &ClaudeVersion) -> (Fixture, Remove) {
        let root = PathBuf::from(format!("/run/mneme-cowork-session-{}-{version}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let remove = Remove(root.clone());
        std::fs::create_dir_all(&root).unwrap();
        std::fs::set_permissions(&root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let copied = Command::new("cp").arg("-a").arg("/etc").arg(root.join("etc")).status().expect("cp runs");
        assert!(copied.success(), "copying /etc for the private namespace failed");
        let managed = root.join("etc/claude-code");
        for (rel, text) in MANAGED {
            let p = managed.join(rel);
            std::fs::create_dir_all(p.parent().unwrap()).unwrap();
            std::fs::write(&p, text).unwrap();
        }
        for dir in ["", ".claude", ".claude/rules"] {
            std::fs::set_permissions(managed.join(dir), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let project = root.join("home/project");
        for dir in [".git", "src", "lib", "../.claude"] {
            std::fs::create_dir_all(project.join(dir)).unwrap();
        }
        std::fs::write(project.join("src/a.txt"), "a\n").unwrap();
        std::fs::write(project.join("lib/b.txt"), "b\n").unwrap();
        chown_tree(&root.join("home"));
        let fixture = Fixture { claude: link_into(&root, claude), mneme: link_into(&root, Path::new(env!("CARGO_BIN_EXE_mneme"))), root };
        fixture.give_managed_files(0);
        (fixture, remove)
    }

    fn project(&self) -> PathBuf {
        self.root.join("home/project")
    }

    /// Gives every managed file to `uid` (root, 0, or `nobody`), mode 0644.
    fn give_managed_files(&self, uid: u32) {
        for (rel, _) in MANAGED {
            let p = self.root.join("etc/claude-code").join(rel);
            std::os::unix::fs::chown(&p, Some(uid), Some(uid)).unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o644)).unwrap();
        }
    }

    /// `program args…` as `nobody`, in the project, in a mount namespace of its own where the
    /// fixture's `etc` is `/etc`, with only `env` in its environment.
    fn command(&self, env: &[(&str, String)], program: &Path, args: &[&str]) -> Command {
        let mut cmd = Command::new("unshare");
        cmd.args(["-m", "--", "sh", "-c"])
            .arg(r#"mount --bind "$0/etc" /etc && cd "$1" && shift && exec setpriv --reuid=65534 --regid=65534 --clear-groups env -i "$@""#)
            .arg(&self.root)
            .arg(self.project());
        let home = self.root.join("home");
        cmd.arg(format!("HOME={}", home.display()))
            .arg(format!("CLAUDE_CONFIG_DIR={}", home.join(".claude").display()))
            .arg("CLAUDE_CODE_ENTRYPOINT=remote_cowork");
        for (k, v) in env {
            cmd.arg(format!("{k}={v}"));
        }
        cmd.arg(program).args(args);
        cmd
    }

    /// What `mneme context` / `mneme touched` prints now, as the session's account would see it.
    fn mneme(&self, version: &ClaudeVersion, args: &[&str]) -> String {
        let data = self.root.join("home/mneme-data");
        let env = [("PATH", "/usr/bin:/bin".to_string()), ("MNEME_DATA_DIR", data.display().to_string())];
        let version = version.to_string();
        let mut all = args.to_vec();
        all.extend(["--claude-version", version.as_str(), "--managed-dir", "/etc/claude-code"]);
        let out = self.command(&env, &self.mneme, &all).output().expect("mneme runs");
        assert!(out.status.success(), "mneme {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8(out.stdout).unwrap().trim_end_matches('\n').to_string()
    }

    fn context(&self, version: &ClaudeVersion) -> String {
        self.mneme(version, &["context", "--date", "2026-12-08"])
    }

    fn touched(&self, version: &ClaudeVersion, file: &str) -> String {
        let path = self.project().join(file);
        self.mneme(version, &["touched", path.to_str().unwrap()])
    }
}

/// `bin` hard-linked into `dir` (a copy where a link cannot be made), reachable by `nobody`.
fn link_into(dir: &Path, bin: &Path) -> PathBuf {
    let place = dir.join(bin.file_name().unwrap());
    if std::fs::hard_link(bin, &place).is_err() {
        std::fs::copy(bin, &place).expect("copy the program into the fixture");
    }
    place
}

fn chown_tree(dir: &Path) {
    std::os::unix::fs::chown(dir, Some(accounts::NOBODY), Some(accounts::NOBODY)).unwrap();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        if entry.file_type().unwrap().is_dir() {
            chown_tree(&entry.path());
        } else {
            std::os::unix::fs::chown(entry.path(), Some(accounts::NOBODY), Some(accounts::NOBODY)).unwrap();
        }
    }
}

/// One turn of a session: what is done before it (as root), and the file the model reads in it.
struct Step<'a> {
    before: Option<&'a dyn Fn()>,
    read: Option<&'a str>,
}

/// Runs one Claude Code session (`-p` with stream-json input, so one process takes several
/// user turns) through `steps`, and returns its main-loop requests.
fn session(fx: &Fixture, steps: &[Step]) -> Vec<RecordedRequest> {
    let stub = StubModel::start_blocking();
    let mut child = fx
        .command(&stub.claude_code_vars(), &fx.claude, &["-p", "--input-format", "stream-json", "--output-format", "stream-json", "--verbose"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("unshare runs Claude Code");
    let (tx, rx) = mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut stdin = child.stdin.take().unwrap();
    for (n, step) in steps.iter().enumerate() {
        if let Some(before) = step.before {
            before();
        }
        let text = match step.read {
            Some(file) => {
                let path = fx.project().join(file);
                // Only a main-loop request (it offers Read; Claude Code's side calls do not)
                // takes the scripted Read; the request after it gets the stub's "ok".
                stub.push_when(|r: &RecordedRequest| r.has_tool("Read"), Turn::tool_use("Read", json!({"file_path": path})));
                format!("read {file}")
            }
            None => "hello".to_string(),
        };
        let line = json!({"type": "user", "message": {"role": "user", "content": text}});
        writeln!(stdin, "{line}").unwrap();
        stdin.flush().unwrap();
        loop {
            match rx.recv_timeout(TURN) {
                Ok(line) if serde_json::from_str::<Value>(&line).is_ok_and(|v| v["type"] == "result") => break,
                Ok(_) => {}
                Err(_) => {
                    let _ = child.kill();
                    let out = child.wait_with_output().unwrap();
                    panic!("Claude Code did not finish turn {} within {TURN:?}: {}", n + 1, String::from_utf8_lossy(&out.stderr));
                }
            }
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "Claude Code failed: {}", String::from_utf8_lossy(&out.stderr));
    stub.model_requests().into_iter().filter(|r| r.has_tool("Read")).collect()
}

/// The text blocks of a request's messages that are `<system-reminder>`s, in order.
fn reminders(r: &RecordedRequest) -> Vec<String> {
    let mut out = Vec::new();
    for m in r.body["messages"].as_array().into_iter().flatten() {
        let blocks = match &m["content"] {
            Value::String(s) => vec![json!({"type": "text", "text": s})],
            Value::Array(a) => a.clone(),
            _ => Vec::new(),
        };
        out.extend(blocks.iter().filter_map(|b| b["text"].as_str()).filter(|t| t.starts_with("<system-reminder>")).map(str::to_string));
    }
    out
}

/// The start-up block of instructions the request carries.
fn start_block(r: &RecordedRequest) -> String {
    reminders(r).into_iter().find(|t| t.contains("Codebase and user instructions")).expect("the request carries the start-up block")
}

/// The block attached after a Read that names `rule` (a managed rule's file name).
fn attached(r: &RecordedRequest, rule: &str) -> String {
    let name = format!("/etc/claude-code/.claude/rules/{rule}");
    reminders(r)
        .into_iter()
        .find(|t| !t.contains("Codebase and user instructions") && t.contains(&name))
        .unwrap_or_else(|| panic!("no block attached for {name} in the last request: {:?}", reminders(r)))
}

#[test]
fn a_cowork_session_keeps_its_start_verdict_and_a_new_session_judges_again() {
    if !accounts::root_or_skip("running Claude Code's Cowork session as another account") {
        return;
    }
    for tool in ["unshare", "setpriv"] {
        if Command::new(tool).arg("--version").output().is_err() {
            eprintln!("skipped: {tool} (util-linux) is not installed, so no private /etc can be made (this test did not run)");
            return;
        }
    }
    let first: ClaudeVersion = FIRST.parse().unwrap();
    let bins: Vec<(ClaudeVersion, PathBuf)> = claude_code::all().into_iter().filter(|(v, _)| *v >= first).collect();
    if bins.is_empty() {
        claude_code::skip(&format!(
            "no Claude Code {FIRST} or later in MNEME_CLAUDE_BINS or MNEME_CLAUDE_BIN; run: export MNEME_CLAUDE_BINS=\"$(scripts/claude-code.sh --matrix)\""
        ));
        return;
    }
    for (version, bin) in bins {
        let (fx, _remove) = Fixture::new(&bin, &version);

        // Started with every managed file root's: the organization's policy.
        let verified_start = fx.context(&version);
        let verified_src = fx.touched(&version, "src/a.txt");
        let verified_lib = fx.touched(&version, "lib/b.txt");
        assert!(!verified_start.contains(UNVERIFIED) && !verified_src.contains(UNVERIFIED), "{version}: root's files are unverified: {verified_start}");
        fx.give_managed_files(accounts::NOBODY);
        let unverified_start = fx.context(&version);
        let unverified_src = fx.touched(&version, "src/a.txt");
        let unverified_lib = fx.touched(&version, "lib/b.txt");
        assert!(unverified_start.contains(UNVERIFIED) && unverified_src.contains(UNVERIFIED), "{version}: nobody's files are verified: {unverified_start}");
        fx.give_managed_files(0);

        // One session: the files are given to nobody between its first and second turn. The
        // rule attached after the second turn's Read is still sent as verified.
        let give = || fx.give_managed_files(accounts::NOBODY);
        let requests = session(&fx, &[Step { before: None, read: None }, Step { before: Some(&give), read: Some("src/a.txt") }]);
        let last = requests.last().expect("a main-loop request");
        assert_eq!(start_block(last), verified_start, "{version}: the running session's start-up block changed");
        assert_eq!(attached(last, "src.md"), verified_src, "{version}: the rule attached after the change was judged again");

        // A new session, the files nobody's: unverified, at the start and in a rule attached
        // after a Read, exactly as Mneme prints them. Given back to root before its second
        // turn, the rule attached then is still unverified.
        let take_back = || fx.give_managed_files(0);
        let requests = session(&fx, &[Step { before: None, read: Some("src/a.txt") }, Step { before: Some(&take_back), read: Some("lib/b.txt") }]);
        let last = requests.last().expect("a main-loop request");
        assert_eq!(start_block(last), unverified_start, "{version}: a new session's start-up block");
        assert_eq!(attached(last, "src.md"), unverified_src, "{version}: a conditional managed rule attached after a Read");
        assert_eq!(attached(last, "lib.md"), unverified_lib, "{version}: the rule attached after the files were given back was judged again");

        // And a third session, started after that, judges them verified again.
        let requests = session(&fx, &[Step { before: None, read: Some("lib/b.txt") }]);
        let last = requests.last().expect("a main-loop request");
        assert_eq!(start_block(last), verified_start, "{version}: a new session after the files were given back");
        assert_eq!(attached(last, "lib.md"), verified_lib, "{version}: a rule attached in a new session after the files were given back");
    }
}
