//! `mneme` (the overview) and `mneme context --json` in a Cowork session: a managed file the
//! session's own account could have written is marked unverified, with who could have changed
//! it, since from 2.1.304 Claude Code does not send it as the organization's policy
//! (docs/claude-code-versions.md, rows 87 and 88).

use mneme_api::CouldWrite;
use mneme_testsupport::{accounts, TestHome};
use std::path::Path;
use std::process::Output;

fn run(h: &TestHome, cwd: &Path, entrypoint: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), h);
    // No Claude Code to find (an empty PATH): the overview renders as the newest checked
    // release, 2.1.337, whatever this machine has installed.
    cmd.env("PATH", h.root.join("no-bin")).current_dir(cwd).arg("--managed-dir").arg(h.root.join("managed")).args(args);
    if let Some(e) = entrypoint {
        cmd.env("CLAUDE_CODE_ENTRYPOINT", e);
    }
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{args:?}: {}", String::from_utf8_lossy(&out.stderr));
    out
}

#[test]
fn the_overview_and_the_json_mark_a_managed_file_the_cowork_session_could_have_written() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    h.write("managed/CLAUDE.md", "Never push to main.\n");
    h.write("repo/CLAUDE.md", "Repo rules.\n");
    let why = if accounts::is_root() { CouldWrite::Root } else { CouldWrite::File }.describe();

    let out = String::from_utf8(run(&h, &repo, Some("remote_cowork"), &[]).stdout).unwrap();
    let managed_line = out.lines().find(|l| l.contains("managed/CLAUDE.md")).unwrap_or_else(|| panic!("{out}"));
    assert!(managed_line.ends_with("[unverified]"), "{out}");
    assert!(out.contains(&format!("unverified: Claude Code does not send this file as your organization's policy. {why}")), "{out}");
    // A running session keeps the verdict it reached at its start (row 88): the overview says
    // that it shows what a new session sends.
    assert!(out.contains("one already running keeps what it saw then. This is what a new session sends."), "{out}");
    let project_line = out.lines().find(|l| l.contains("repo/CLAUDE.md")).unwrap();
    assert!(!project_line.contains("unverified"), "{out}");

    let json: serde_json::Value = serde_json::from_slice(&run(&h, &repo, Some("remote_cowork"), &["context", "--json"]).stdout).unwrap();
    let files = json["files"].as_array().unwrap();
    assert_eq!(files[0]["layer"], "Managed");
    assert_eq!(files[0]["unverified"]["reason"], why.as_str(), "{json}");
    assert!(files[1]["unverified"].is_null(), "{json}");

    // Outside a Cowork session, or as 2.1.303 renders it, the file is the organization's.
    let out = String::from_utf8(run(&h, &repo, None, &[]).stdout).unwrap();
    assert!(!out.contains("unverified") && !out.contains("new session"), "{out}");
    let json: serde_json::Value =
        serde_json::from_slice(&run(&h, &repo, Some("remote_cowork"), &["context", "--json", "--claude-version", "2.1.303"]).stdout).unwrap();
    assert!(json["files"][0]["unverified"].is_null(), "{json}");
}
