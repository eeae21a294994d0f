//! `mneme extract` and `mneme inbox` end to end: the real binary in a hermetic home, over a
//! transcript written by the real Claude Code and over hand-made ones.

mod common;

use mneme_testsupport::TestHome;
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

fn run(h: &TestHome, cwd: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), h);
    cmd.current_dir(cwd).args(args);
    mneme_testsupport::output_with_stdin(cmd, Some(stdin.unwrap_or("").as_bytes()))
}

fn ok(h: &TestHome, cwd: &Path, args: &[&str]) -> String {
    common::succeeded(run(h, cwd, args, None), args)
}

fn fails(h: &TestHome, cwd: &Path, args: &[&str]) -> String {
    common::one_line_error(run(h, cwd, args, None), args)
}

/// A project and a session transcript in it with the given user prompts, each answered.
fn session(prompts: &[&str]) -> (TestHome, PathBuf, PathBuf) {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let dir = h.config_home().join("projects").join(mneme_core::sanitize::sanitize_path(&repo.to_string_lossy()));
    fs::create_dir_all(&dir).unwrap();
    let t = dir.join("0a23833b-7439-4af7-b274-46564fd6c262.jsonl");
    append(&t, &repo, prompts, 0);
    (h, repo, t)
}

fn append(t: &Path, repo: &Path, prompts: &[&str], start: usize) {
    let mut lines = String::new();
    let mut parent: Value = if start == 0 { Value::Null } else { json!(format!("a{start}")) };
    for (i, p) in prompts.iter().enumerate() {
        let n = start + i + 1;
        let common = |uuid: String, parent: &Value| {
            json!({"uuid": uuid, "parentUuid": parent, "isSidechain": false, "cwd": repo,
                "sessionId": "0a23833b-7439-4af7-b274-46564fd6c262", "timestamp": "2026-03-02T10:00:00.000Z"})
        };
        let mut u = common(format!("u{n}"), &parent);
        u["type"] = json!("user");
        u["message"] = json!({"role": "user", "content": p});
        let mut a = common(format!("a{n}"), &json!(format!("u{n}")));
        a["type"] = json!("assistant");
        a["message"] = json!({"id": format!("m{n}"), "role": "assistant", "content": [{"type": "text", "text": "OK."}], "stop_reason": "end_turn"});
        lines.push_str(&format!("{u}\n{a}\n"));
        parent = json!(format!("a{n}"));
    }
    let mut f = fs::OpenOptions::new().create(true).append(true).open(t).unwrap();
    std::io::Write::write_all(&mut f, lines.as_bytes()).unwrap();
}

#[test]
fn offline_extraction_over_a_real_claude_code_transcript() {
    let h = TestHome::new();
    let t = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/transcripts/tools.jsonl");
    let out = ok(&h, &h.root, &["extract", "--transcript", t.to_str().unwrap()]);
    assert_eq!(
        out,
        "● Saved 2 memories\nfeedback_i_prefer_tabs_over_spaces.md\nfeedback_never_use_semicolons_in_javascript.md\n"
    );
    // Claude Code's memory folder for the session's project, in this home.
    let mem = h.config_home().join("projects/-tmp-mneme-tx-project/memory");
    assert_eq!(
        fs::read_to_string(mem.join("MEMORY.md")).unwrap(),
        "- [I prefer tabs over spaces](feedback_i_prefer_tabs_over_spaces.md) — I prefer tabs over spaces\n\
         - [Never use semicolons in JavaScript](feedback_never_use_semicolons_in_javascript.md) — Never use semicolons in JavaScript\n"
    );
    assert!(fs::read_to_string(mem.join("feedback_never_use_semicolons_in_javascript.md"))
        .unwrap()
        .starts_with("---\nname: never-use-semicolons-in-javascript\ndescription: Never use semicolons in JavaScript\nmetadata:\n  type: feedback\n---\n\nNever use semicolons in JavaScript.\n\n**Why:** The user said so explicitly on 2026-11-29: \"From now on, never use semicolons in JavaScript.\"\n"));
    // From the cursor: nothing new.
    let again = ok(&h, &h.root, &["extract", "--transcript", t.to_str().unwrap()]);
    assert_eq!(again, "Skipped: no new message from the user since the last extraction\n");
    let v: Value = serde_json::from_str(&ok(&h, &h.root, &["extract", "--transcript", t.to_str().unwrap(), "--json"])).unwrap();
    assert_eq!(v[0]["outcome"], json!({"kind": "skipped", "reason": "noProse"}));
}

#[test]
fn review_mode_holds_everything_until_keep() {
    let (h, repo, t) = session(&["Remember that I review code in the morning. Don't push to main without a review."]);
    let mem = h.memdir_for(&repo);
    assert_eq!(ok(&h, &repo, &["inbox", "mode"]), format!("automatic ({})\n", mem.display()));
    assert_eq!(ok(&h, &repo, &["inbox", "mode", "review"]), format!("review ({})\n", mem.display()));
    let out = ok(&h, &repo, &["extract", "--transcript", t.to_str().unwrap()]);
    let id = out.split("inbox item ").nth(1).unwrap().split_whitespace().next().unwrap().to_string();
    assert!(out.starts_with("2 memories waiting for review as inbox item"), "{out}");
    assert!(!mem.exists(), "nothing written to the memory folder");

    let list = ok(&h, &repo, &["inbox"]);
    assert!(list.starts_with(&id) && list.contains("+feedback_don_t_push_to_main_without.md"), "{list}");
    let show = ok(&h, &repo, &["inbox", "show", &id]);
    assert!(show.contains("new MEMORY.md") && show.contains("+ - [Don't push to main without a review]"), "{show}");
    let item: Value = serde_json::from_str(&ok(&h, &repo, &["inbox", "show", &id, "--json"])).unwrap();
    assert_eq!(item["status"]["state"], "pending");

    assert_eq!(ok(&h, &repo, &["inbox", "keep", &id]), format!("Kept {id}\n"));
    let index = fs::read_to_string(mem.join("MEMORY.md")).unwrap();
    assert_eq!(index.lines().count(), 2);
    for line in index.lines() {
        let target = line.split("](").nth(1).unwrap().split(')').next().unwrap();
        assert!(mem.join(target).is_file(), "{target} landed with its line");
    }
    assert_eq!(ok(&h, &repo, &["inbox"]), "Nothing waiting for review.\n");
    assert!(fails(&h, &repo, &["inbox", "keep", &id]).contains("was already kept"));
    assert!(ok(&h, &repo, &["inbox", "list", "--history"]).contains("[kept]"));
}

#[test]
fn edit_discard_promote_and_clear_errors() {
    let (h, repo, t) = session(&["Remember that the staging cluster is called blue-harbor."]);
    let tp = t.to_str().unwrap();
    let mem = h.memdir_for(&repo);
    ok(&h, &repo, &["inbox", "mode", "review", "--cwd", repo.to_str().unwrap()]);
    let id_of = |out: &str| out.split("inbox item ").nth(1).unwrap().split_whitespace().next().unwrap().to_string();

    let id = id_of(&ok(&h, &repo, &["extract", "--transcript", tp]));
    let out = run(&h, &repo, &["inbox", "edit", &id, "project_the_staging_cluster_is_called_blue.md"], Some(
        "---\nname: staging-cluster\ndescription: Staging runs on the blue-harbor cluster\nmetadata:\n  type: project\n---\n\nStaging runs on the blue-harbor cluster.\n",
    ));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(fs::read_to_string(mem.join("MEMORY.md")).unwrap().contains("— Staging runs on the blue-harbor cluster"));

    append(&t, &repo, &["Remember that the design review happens every Tuesday."], 1);
    let id = id_of(&ok(&h, &repo, &["extract", "--transcript", tp]));
    assert_eq!(ok(&h, &repo, &["inbox", "discard", &id]), format!("Discarded {id}\n"));
    assert!(!mem.join("project_the_design_review_happens_every_tuesday.md").exists());

    append(&t, &repo, &["From now on, always write commit messages in English."], 2);
    let id = id_of(&ok(&h, &repo, &["extract", "--transcript", tp]));
    assert!(fails(&h, &repo, &["inbox", "promote", &id, "--to", "wiki"]).contains("Use claude-md, claude-local or team"));
    let out = ok(&h, &repo, &["inbox", "promote", &id, "--to", "claude-local"]);
    assert_eq!(out, format!("Promoted {id} to {}\n", repo.join("CLAUDE.local.md").display()));
    assert_eq!(fs::read_to_string(repo.join("CLAUDE.local.md")).unwrap().lines().next().unwrap(), "## Always write commit messages in English");
    assert!(!fs::read_to_string(mem.join("MEMORY.md")).unwrap().contains("English"), "not in the memory folder");

    // An empty replacement from standard input is a slip, refused before anything is kept.
    append(&t, &repo, &["Remember that the release train leaves on Thursdays."], 3);
    let id = id_of(&ok(&h, &repo, &["extract", "--transcript", tp]));
    let err = fails(&h, &repo, &["inbox", "edit", &id, "project_the_release_train_leaves_on_thursdays.md"]);
    assert_eq!(err, "mneme: the file's new text is empty: standard input held no text. Pipe the text in, or pass it with --content TEXT.\n");
    let waiting = ok(&h, &repo, &["inbox"]);
    assert!(waiting.contains(&format!("{id}  ")) && waiting.contains("+project_the_release_train_leaves_on_thursdays.md"), "still waiting for review: {waiting}");

    let err = fails(&h, &repo, &["inbox", "show", "no-such-item"]);
    assert_eq!(err, "mneme: there is no inbox item `no-such-item`; run `mneme inbox list` to see the ids\n");
    assert!(fails(&h, &repo, &["inbox", "mode", "sometimes"]).contains("Use automatic, review or off"));
    // A mistyped --cwd sets no mode for a project that does not exist.
    let not_here = "mneme: /definitely/not/here is not a folder. Pass --cwd with the folder Claude Code would start in.\n";
    assert_eq!(fails(&h, &repo, &["inbox", "mode", "off", "--cwd", "/definitely/not/here"]), not_here);
    assert_eq!(fails(&h, &repo, &["inbox", "--cwd", "/definitely/not/here"]), not_here);
    assert!(ok(&h, &repo, &["inbox", "mode"]).starts_with("review "), "the project keeps its mode");
    assert!(fails(&h, &repo, &["extract", "--transcript", "missing.jsonl"]).contains("is not a file"));
    assert!(fails(&h, &repo, &["extract", "--transcript", tp, "--provider", "gpt"]).contains("is not a provider"));
}

/// The user's sentences and the proposed files are anyone's text: what `extract` did not save
/// and what `inbox show` proposes reach the terminal with escape sequences shown as text.
#[test]
fn sentences_and_proposals_reach_the_terminal_escaped() {
    let (h, repo, t) = session(&["Remember that I review code in the morning \x1b]0;PWNED\x07 always. Remember that the crash was fixed by \x1b[2J restarting the worker."]);
    ok(&h, &repo, &["inbox", "mode", "review"]);
    let clean = |out: Output| {
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
        assert!(!out.stdout.iter().chain(&out.stderr).any(|b| matches!(b, 0x1b | 0x07)), "{:?}", String::from_utf8_lossy(&out.stdout));
        String::from_utf8(out.stdout).unwrap()
    };
    let out = clean(run(&h, &repo, &["extract", "--transcript", t.to_str().unwrap()], None));
    assert!(out.contains("not saved: \"Remember that the crash was fixed by \\u{001b}[2J restarting the worker.\""), "{out}");
    let id = out.split("inbox item ").nth(1).unwrap().split_whitespace().next().unwrap().to_string();
    clean(run(&h, &repo, &["inbox"], None));
    let show = clean(run(&h, &repo, &["inbox", "show", &id], None));
    assert!(show.contains("+ I review code in the morning \\u{001b}]0;PWNED\\u{0007} always."), "{show}");
}
