//! `mneme secrets scan` and `mneme team check-key`, run as the real binary.
#![cfg(unix)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};

fn mneme(args: &[&str], stdin: &[u8]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_mneme"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("mneme starts");
    child.stdin.take().expect("stdin").write_all(stdin).expect("write stdin");
    child.wait_with_output().expect("mneme finishes")
}

fn stdout(o: &Output) -> String {
    String::from_utf8(o.stdout.clone()).expect("utf-8")
}

/// Tokens assembled at run time, so this file holds no secret-looking literal.
fn github_pat() -> String {
    format!("ghp_{}", "nUwYcfi1NQBYsmPBK6K7rrTYmlfxd6KQzYRd")
}
fn aws_key() -> String {
    format!("AKIA{}", "QYLPMN5HHHFPZAM2")
}

#[test]
fn scan_exits_1_with_labels_when_text_holds_a_secret() {
    let text = format!("CI uses {} and deploys with {}.\nDB: postgres://app:Tr0ub4dor@db/app\n", github_pat(), aws_key());
    let out = mneme(&["secrets", "scan"], text.as_bytes());
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "AWS Access Token\nGitHub PAT\nConnection String Password\n");
    assert!(!stdout(&out).contains(&github_pat()[4..]));
    assert!(out.stderr.is_empty());
}

#[test]
fn scan_exits_0_silently_on_clean_text() {
    let out = mneme(&["secrets", "scan"], b"Deploys go through staging first.\nDB: postgres://app:${DB_PASSWORD}@db/app\n");
    assert_eq!(out.status.code(), Some(0));
    assert!(out.stdout.is_empty() && out.stderr.is_empty());
}

#[test]
fn scan_can_give_claude_codes_exact_verdict() {
    let text = b"aws_access_key_id = AKIAIOSFODNN7EXAMPLE";
    assert_eq!(mneme(&["secrets", "scan"], text).status.code(), Some(0));
    let out = mneme(&["secrets", "scan", "--claude-code"], text);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "AWS Access Token\n");
}

#[test]
fn scan_gives_the_verdict_of_the_release_asked_for() {
    // Anthropic OAuth tokens are in Claude Code's table from 2.1.234.
    let text = format!("token: sk-ant-oat01-{}", "Zq8Kd2mXv9Lp4Rt7Wn3Bc6Hy1Js5Fg0Ae");
    let old = mneme(&["secrets", "scan", "--claude-code", "--claude-version", "2.1.233"], text.as_bytes());
    assert_eq!(old.status.code(), Some(0), "{}", String::from_utf8_lossy(&old.stderr));
    assert!(old.stdout.is_empty());
    let new = mneme(&["secrets", "scan", "--claude-code", "--claude-version", "2.1.234"], text.as_bytes());
    assert_eq!(new.status.code(), Some(1));
    assert_eq!(stdout(&new), "Anthropic OAuth Token\n");
    // Mneme's own verdict refuses it whatever the release.
    assert_eq!(stdout(&mneme(&["secrets", "scan"], text.as_bytes())), "Anthropic OAuth Token\n");
    // A release only means something for Claude Code's verdict.
    let misused = mneme(&["secrets", "scan", "--claude-version", "2.1.234"], text.as_bytes());
    assert_eq!(misused.status.code(), Some(2));
}

/// Standard input that cannot be read is "could not run", exit 2, as `mneme verify` says it:
/// never 1, which a script takes for "holds a secret".
#[test]
fn scan_exits_2_when_it_cannot_read_its_input() {
    let dir = tempfile::tempdir().unwrap();
    // Reading a folder fails (EISDIR) where a file would be read.
    let out = Command::new(env!("CARGO_BIN_EXE_mneme"))
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .args(["secrets", "scan"])
        .stdin(std::fs::File::open(dir.path()).unwrap())
        .output()
        .expect("mneme runs");
    assert_eq!(out.status.code(), Some(2), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.stdout.is_empty());
    assert!(String::from_utf8_lossy(&out.stderr).starts_with("mneme: could not read standard input"));
    let help = stdout(&mneme(&["secrets", "scan", "--help"], b""));
    assert!(help.contains("exits 2 when the scan could not run"), "{help}");
}

fn team_dir() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let team = std::fs::canonicalize(tmp.path()).unwrap().join("memory/team");
    std::fs::create_dir_all(&team).unwrap();
    (tmp, team)
}

fn check(team: &Path, args: &[&str], stdin: &[u8]) -> Output {
    let mut all = vec!["team", "check-key"];
    all.extend_from_slice(args);
    all.extend_from_slice(&["--team-dir", team.to_str().unwrap()]);
    mneme(&all, stdin)
}

#[test]
fn check_key_accepts_and_prints_the_resolved_path() {
    let (_tmp, team) = team_dir();
    let out = check(&team, &["notes/deploy.md"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout(&out), format!("{}\n", team.join("notes/deploy.md").display()));
    // Claude Code resolves a non-canonical key; only with --claude-code is that the verdict.
    let out = check(&team, &["notes/../deploy.md", "--claude-code"], b"");
    assert_eq!(out.status.code(), Some(0), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(stdout(&out), format!("{}\n", team.join("deploy.md").display()));
}

#[test]
fn check_key_applies_the_strict_policy_unless_asked_for_claude_codes_verdict() {
    let (_tmp, team) = team_dir();
    for key in ["notes/../deploy.md", "./a.md", "a//b.md", "notes/", "con.md", "C:", "trailing.", "a\u{202e}b.md", "cafe\u{301}.md"] {
        let strict = check(&team, &[key], b"");
        assert_eq!(strict.status.code(), Some(1), "{key:?} should be refused");
        let reason = stdout(&strict);
        assert_eq!(reason.lines().count(), 1, "{reason:?}");
        let claude_code = check(&team, &[key, "--claude-code"], b"");
        assert_eq!(claude_code.status.code(), Some(0), "Claude Code accepts {key:?}");
    }
    // A newline in the key, given through a file: refused by name, never echoed raw.
    let out = check(&team, &["--key-file", "-"], b"a\nb.md\n");
    assert_eq!(out.status.code(), Some(1));
    assert!(stdout(&out).contains("U+000A"), "{}", stdout(&out));
}

#[test]
fn check_key_refuses_with_claude_codes_message() {
    let (_tmp, team) = team_dir();
    for (key, message) in [
        ("../x.md", "Key escapes team memory directory: \"../x.md\""),
        ("..%2Fx.md", "URL-encoded traversal in path key: \"..%2Fx.md\""),
        ("\u{ff0e}\u{ff0e}\u{ff0f}x.md", "Unicode-normalized traversal in path key: \"\u{ff0e}\u{ff0e}\u{ff0f}x.md\""),
        ("a\\b.md", "Backslash in path key: \"a\\b.md\""),
        ("/etc/passwd", "Absolute path key: \"/etc/passwd\""),
    ] {
        let out = check(&team, &[key], b"");
        assert_eq!(out.status.code(), Some(1), "{key}");
        assert_eq!(stdout(&out), format!("{message}\n"), "{key}");
    }
    std::os::unix::fs::symlink(team.parent().unwrap(), team.join("up")).unwrap();
    let out = check(&team, &["up/x.md"], b"");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(stdout(&out), "Key escapes team memory directory via symlink: \"up/x.md\"\n");
}

#[test]
fn check_key_reads_raw_bytes_from_stdin_and_files() {
    let (tmp, team) = team_dir();
    // A NUL byte cannot be passed as an argument; stdin carries it. One \n is removed.
    let out = check(&team, &["--key-file", "-"], b"a\0b.md\n");
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(out.stdout, b"Null byte in path key: \"a\0b.md\"\n");
    // Only one newline goes: the second is part of the key.
    let file = tmp.path().join("key");
    std::fs::write(&file, b"x.md\n\n").unwrap();
    let out = check(&team, &["--key-file", file.to_str().unwrap(), "--claude-code"], b"");
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(stdout(&out), format!("{}\n\n", team.join("x.md").display()));
    // A \r stays too.
    let out = check(&team, &["--key-file", "-", "--claude-code"], b"y.md\r\n");
    assert_eq!(stdout(&out), format!("{}\r\n", team.join("y.md").display()));
}

#[test]
fn check_key_errors_are_one_line_on_stderr() {
    let (_tmp, team) = team_dir();
    // Exit 2: the check could not run (1 would say the key is refused).
    let out = check(&team, &["--key-file", "/nonexistent/key"], b"");
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let err = String::from_utf8(out.stderr).unwrap();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.starts_with("mneme: could not read the key from /nonexistent/key"), "{err}");
    let out = check(&team, &["--key-file", "-"], b"\xff\xfe.md");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("not valid UTF-8"));
    // Neither a key nor a file: a usage error.
    assert_eq!(check(&team, &[], b"").status.code(), Some(2));
}

#[test]
fn check_key_help_documents_the_newline_rule() {
    let out = mneme(&["team", "check-key", "--help"], b"");
    assert!(stdout(&out).contains("Exactly one trailing newline"), "{}", stdout(&out));
    assert!(stdout(&out).contains("exits 2 when the check could not run"), "{}", stdout(&out));
}
