//! `mneme team status|pull|push|login|logout` on the real binary in a hermetic home, where no
//! team server is set: what the status says, and the one-line refusals that say what to do.
//! (Nothing here reaches a keyring or a network.)

mod common;

use mneme_testsupport::TestHome;
use serde_json::Value;
use std::path::Path;
use std::process::Output;

fn run(h: &TestHome, cwd: &Path, args: &[&str]) -> Output {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), h);
    cmd.current_dir(cwd).args(args).output().expect("mneme runs")
}

fn ok(h: &TestHome, cwd: &Path, args: &[&str]) -> String {
    common::succeeded(run(h, cwd, args), args)
}

fn fails(h: &TestHome, cwd: &Path, args: &[&str]) -> String {
    let out = run(h, cwd, args);
    assert_eq!(out.status.code(), Some(1), "mneme {args:?} should fail: {}", String::from_utf8_lossy(&out.stdout));
    assert!(out.stdout.is_empty(), "mneme {args:?} printed {}", String::from_utf8_lossy(&out.stdout));
    String::from_utf8(out.stderr).expect("utf-8")
}

#[test]
fn status_without_a_server_names_the_team_folder_and_how_to_sign_in() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let mem = h.memdir_for(&repo);
    assert_eq!(
        ok(&h, &repo, &["team", "status"]),
        format!(
            "Team folder:  {}\nRepository:   none (no github.com `origin` remote)\nServer:       none (run `mneme team login <URL>`)\nSigned in:    no\nLast pull:    never\nLast push:    never\n",
            mem.join("team").display()
        )
    );
    let json: Value = serde_json::from_str(&ok(&h, &repo, &["team", "status", "--json"])).expect("json");
    assert_eq!(
        json,
        serde_json::json!({
            "memoryDir": mem,
            "repo": null,
            "serverUrl": null,
            "serverUrlSource": null,
            "signedInAs": null,
            "signedIn": false,
            "keyringProblem": null,
            "state": null,
            "stateProblem": null,
            "lostFiles": [],
        })
    );
}

#[test]
fn sync_and_sign_in_without_a_server_say_what_to_do() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let no_server = "mneme: No team server is configured. Run `mneme team login <URL>` or set TEAM_MEMORY_SYNC_URL.\n";
    assert_eq!(fails(&h, &repo, &["team", "pull"]), no_server);
    assert_eq!(fails(&h, &repo, &["team", "push", "--json"]), no_server);
    assert_eq!(fails(&h, &repo, &["team", "logout"]), "mneme: no team server is configured; nothing to sign out of\n");
    assert_eq!(fails(&h, &repo, &["team", "login"]), "mneme: give the team server's address: mneme team login <URL>\n");
    assert_eq!(
        fails(&h, &repo, &["team", "login", "ftp://x"]),
        "mneme: \"ftp://x\" is not a server address; give an http:// or https:// URL such as https://team.example.com\n"
    );
}

/// The global --managed-dir decides the team folder as it decides every other memory folder:
/// a policy's autoMemoryDirectory moves it.
#[test]
fn the_managed_policy_folder_decides_the_team_folder() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let managed = h.root.join("managed");
    let policy_memory = h.root.join("policy-memory");
    std::fs::create_dir_all(&managed).unwrap();
    std::fs::write(managed.join("managed-settings.json"), serde_json::json!({ "autoMemoryDirectory": policy_memory }).to_string()).unwrap();
    let args = ["--managed-dir", managed.to_str().unwrap(), "team", "status", "--json"];
    let json: Value = serde_json::from_str(&ok(&h, &repo, &args)).expect("json");
    assert_eq!(json["memoryDir"], policy_memory.to_string_lossy().as_ref());
    // The text says the same folder.
    let text = ok(&h, &repo, &["--managed-dir", managed.to_str().unwrap(), "team", "status"]);
    assert!(text.starts_with(&format!("Team folder:  {}\n", policy_memory.join("team").display())), "{text}");
}

/// A --cwd that is not a folder is refused as `mneme context` refuses it, instead of showing a
/// team folder for a project that does not exist.
#[test]
fn a_cwd_that_is_not_a_folder_is_refused() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let not_here = "mneme: /definitely/not/here is not a folder. Pass --cwd with the folder Claude Code would start in.\n";
    assert_eq!(fails(&h, &repo, &["team", "status", "--cwd", "/definitely/not/here"]), not_here);
    assert_eq!(fails(&h, &repo, &["team", "status", "--json", "--cwd", "/definitely/not/here"]), not_here);
    assert_eq!(fails(&h, &repo, &["team", "pull", "--cwd", "/definitely/not/here"]), not_here);
}
