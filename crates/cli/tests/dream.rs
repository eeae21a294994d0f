//! `mneme dream` and `mneme log` on the real binary in hermetic homes: the review flow, undo
//! byte for byte, two processes racing for the lock, a dream in progress blocking another, a
//! killed dreamer's lock reclaimed, and a lock held in Claude Code's format blocking Mneme.

mod common;

use mneme_stub_model::StubModel;
use mneme_testsupport::{wait, TestHome};
use serde_json::Value;
use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output};
use std::time::Duration;

fn command(h: &TestHome, cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), h);
    cmd.env("MNEME_KEYRING_SERVICE", "mneme-dream-cli-test")
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .current_dir(cwd)
        .arg("--managed-dir")
        .arg(h.root.join("managed"))
        .args(args);
    cmd
}

fn run(h: &TestHome, cwd: &Path, args: &[&str]) -> Output {
    command(h, cwd, args).output().expect("mneme runs")
}

fn ok(h: &TestHome, cwd: &Path, args: &[&str]) -> String {
    common::succeeded(run(h, cwd, args), args)
}

fn fails(h: &TestHome, cwd: &Path, args: &[&str]) -> String {
    let out = run(h, cwd, args);
    assert_eq!(out.status.code(), Some(1), "mneme {args:?} should fail with exit 1");
    common::one_line_error(out, args)
}

fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

/// A repository whose memory holds two near-duplicate feedback memories and a dangling line.
fn project() -> (TestHome, PathBuf, PathBuf) {
    common::tabs_project("- [Gone](gone.md) — x\n")
}

fn tree(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if e.file_name() != ".consolidate-lock" {
                out.insert(p.strip_prefix(root).unwrap().to_string_lossy().into_owned(), fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

#[test]
fn status_run_review_and_undo() {
    let (h, repo, mem) = project();
    let before = tree(&mem);
    let status = json(&ok(&h, &repo, &["dream", "status", "--json"]));
    assert_eq!(status["status"]["blockedBy"], "enabled");
    assert_eq!(status["status"]["memoryDir"], mem.to_string_lossy().as_ref());
    assert_eq!(status["mode"], "automatic");
    assert_eq!(status["status"]["lock"]["exists"], false);
    ok(&h, &repo, &["settings", "auto-dream", "on"]);
    let text = ok(&h, &repo, &["dream", "status"]);
    assert!(text.contains("Auto dream:         On: autoDreamEnabled is true and auto memory is on."), "{text}");
    assert!(text.contains("Last consolidated:  never"), "{text}");
    assert!(text.contains("Blocked by:         the session gate (0 of 5 sessions)"), "{text}");
    // No server flag cached: Claude Code itself never dreams for this account, and says so.
    assert_eq!(status["claudeCodeOffers"], false);
    assert!(text.contains("Claude Code:        Claude Code itself will not dream for this account"), "{text}");
    // Once the flag is cached it offers auto dream, and its thresholds are the gates'.
    let global = h.env.global_config_path();
    fs::write(&global, r#"{"cachedGrowthBookFeatures":{"tengu_onyx_plover":{"available":true,"minSessions":2}}}"#).unwrap();
    let text = ok(&h, &repo, &["dream", "status"]);
    assert!(!text.contains("Claude Code:"), "{text}");
    assert!(text.contains("Blocked by:         the session gate (0 of 2 sessions)"), "{text}");
    assert_eq!(json(&ok(&h, &repo, &["dream", "status", "--json"]))["claudeCodeOffers"], true);
    fs::remove_file(&global).unwrap();

    ok(&h, &repo, &["dream", "mode", "review"]);
    let rec = json(&ok(&h, &repo, &["dream", "run", "--offline", "--json"]));
    let id = rec["id"].as_str().unwrap().to_string();
    assert_eq!(rec["status"], "pending");
    assert_eq!(rec["provider"], "offline");
    assert_eq!(tree(&mem), before, "held for review");
    let lock = fs::read_to_string(mem.join(".consolidate-lock")).unwrap();
    assert!(lock.parse::<u32>().is_ok(), "Claude Code's lock format: a PID, got {lock:?}");

    let listed = json(&ok(&h, &repo, &["dream", "history", "--json"]));
    assert_eq!(listed[0]["id"], id.as_str());
    assert_eq!((listed[0]["added"].as_u64(), listed[0]["changed"].as_u64(), listed[0]["removed"].as_u64()), (Some(1), Some(2), Some(1)));
    assert!(listed[0].get("changeset").is_none(), "lists carry no file contents");
    let history = ok(&h, &repo, &["dream", "history"]);
    assert!(history.starts_with(&id) && history.contains("manual  offline     pending   +1 ~2 -1  "), "{history}");
    assert!(history.ends_with("\nOlder dreams are pruned as new ones are recorded: see `mneme dream history --help`.\n"), "{history}");
    let help = ok(&h, &repo, &["dream", "history", "--help"]);
    assert!(help.contains("kept for 30 days after their last change") && help.contains("the newest 20 of a memory folder"), "{help}");
    let shown = ok(&h, &repo, &["dream", "show", &id]);
    assert!(shown.contains("  removed  tabs_old.md\n"), "{shown}");
    // The dangling line is the only copy of that memory: written back, never deleted.
    assert!(shown.contains("  added    gone.md\n"), "{shown}");
    assert!(shown.contains("           + name: Gone\n"), "a diff per change: {shown}");
    // What moved where, line by line.
    assert!(shown.contains("What moved where ("), "{shown}");
    assert!(shown.contains("  tabs_old.md: Always indent with tabs.\n           → tabs_new.md\n"), "{shown}");
    assert!(!shown.contains("LOST"), "{shown}");
    assert!(shown.contains(&format!("Held for review: apply with `mneme dream approve {id}`")), "{shown}");

    let applied = ok(&h, &repo, &["dream", "approve", &id]);
    assert!(applied.starts_with(&format!("Applied dream {id} (4 file(s))")), "{applied}");
    assert!(!mem.join("tabs_old.md").exists());
    assert_eq!(fs::read_to_string(mem.join("MEMORY.md")).unwrap(), "- [New](tabs_new.md) — tabs\n- [Gone](gone.md) — x\n");
    let err = fails(&h, &repo, &["dream", "reject", &id]);
    assert_eq!(err, format!("mneme: dream {id} is applied, so it cannot be rejected\n"));

    fs::write(mem.join("MEMORY.md"), "edited since\n").unwrap();
    let err = fails(&h, &repo, &["dream", "undo", "--last"]);
    assert!(err.starts_with(&format!("mneme: MEMORY.md changed since dream {id} was applied; nothing was undone.")), "{err}");
    fs::write(mem.join("MEMORY.md"), "- [New](tabs_new.md) — tabs\n- [Gone](gone.md) — x\n").unwrap();
    let undone = json(&ok(&h, &repo, &["dream", "undo", &id, "--json"]));
    assert_eq!(undone["status"], "undone");
    assert_eq!(tree(&mem), before, "byte-identical after undo");
    assert_eq!(fails(&h, &repo, &["dream", "show", "12345"]), "mneme: no dream with id 12345 for this memory folder; list them with `mneme dream history`\n");
    assert_eq!(fails(&h, &repo, &["dream", "mode", "sometimes"]), "mneme: 'sometimes' is not a dream mode. Use one of: automatic, review, off.\n");
    ok(&h, &repo, &["dream", "mode", "off", "--memory-dir", &mem.to_string_lossy()]);
    assert_eq!(ok(&h, &repo, &["dream", "mode"]), "off\n");
    assert_eq!(json(&ok(&h, &repo, &["dream", "mode", "--json"]))["mode"], "off");
}

#[test]
fn two_processes_racing_consolidate_exactly_once() {
    for round in 0..4 {
        let (h, repo, mem) = project();
        let spawn = || command(&h, &repo, &["dream", "run", "--offline", "--yes", "--json"]).spawn().unwrap();
        let (a, b) = (spawn(), spawn());
        let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
        let mut consolidated = 0;
        for out in &outs {
            let stderr = String::from_utf8_lossy(&out.stderr);
            if out.status.success() {
                let rec = json(&String::from_utf8_lossy(&out.stdout));
                assert_eq!(rec["status"], "applied");
                if !rec["changeset"]["changes"].as_array().unwrap().is_empty() {
                    consolidated += 1;
                }
            } else {
                // The loser saw the winner's live lock.
                assert!(stderr.contains("another dream holds the lock") || stderr.contains("at the same moment"), "round {round}: {stderr}");
            }
        }
        assert_eq!(consolidated, 1, "round {round}: exactly one process consolidates");
        assert!(!mem.join("tabs_old.md").exists());
        assert_eq!(fs::read_to_string(mem.join("MEMORY.md")).unwrap(), "- [New](tabs_new.md) — tabs\n- [Gone](gone.md) — x\n");
        let tabs = fs::read_to_string(mem.join("tabs_new.md")).unwrap();
        assert_eq!(tabs.matches("Always indent with tabs.\n").count(), 1, "merged once: {tabs}");
    }
}

fn wait_for_lock_pid(mem: &Path, pid: u32) {
    wait::until_within(Duration::from_secs(60), &format!("the dreamer (PID {pid}) to take the lock"), || {
        fs::read_to_string(mem.join(".consolidate-lock")).ok().as_deref() == Some(&pid.to_string())
    });
}

#[test]
fn a_dream_in_progress_blocks_another_and_a_killed_dreamers_lock_is_reclaimed() {
    let (h, repo, mem) = project();
    // A model-driven dream whose model never answers holds the lock for as long as it runs.
    let stub = StubModel::start_blocking();
    stub.push_hang();
    let data = h.root.join("mneme-data");
    fs::create_dir_all(&data).unwrap();
    fs::write(data.join("providers.json"), format!("{{\"kind\": \"anthropic\", \"base_url\": \"{}\"}}", stub.base_url())).unwrap();
    let mut first: Child = command(&h, &repo, &["dream", "run"]).spawn().unwrap();
    wait_for_lock_pid(&mem, first.id());
    wait::until_within(Duration::from_secs(60), "the dreamer to ask the model", || !stub.model_requests().is_empty());

    let err = fails(&h, &repo, &["dream", "run", "--offline"]);
    assert!(
        err.starts_with(&format!("mneme: another dream holds the lock {} (PID {}, taken 0 min ago);", mem.join(".consolidate-lock").display(), first.id())),
        "{err}"
    );
    let status = json(&ok(&h, &repo, &["dream", "status", "--json"]));
    assert_eq!(status["status"]["lock"]["held"], true);
    assert_eq!(status["status"]["lock"]["holderPid"], first.id());

    // kill -9: no rollback happens, the lock stays with a dead PID and is reclaimable at once.
    first.kill().unwrap();
    first.wait().unwrap();
    assert_eq!(fs::read_to_string(mem.join(".consolidate-lock")).unwrap(), first.id().to_string());
    let status = json(&ok(&h, &repo, &["dream", "status", "--json"]));
    assert_eq!(status["status"]["lock"]["holderAlive"], false);
    assert_eq!(status["status"]["lock"]["held"], false);
    let rec = json(&ok(&h, &repo, &["dream", "run", "--offline", "--yes", "--json"]));
    assert_eq!(rec["status"], "applied");
    let prompt = stub.model_requests()[0].body["messages"][0].to_string();
    assert!(prompt.contains("# Dream: tidy the memory folder"), "the killed dream had sent Claude Code's prompt");
}

#[test]
fn a_lock_in_claude_codes_format_blocks_mneme() {
    let (h, repo, mem) = project();
    // Any live process's PID with a fresh mtime is a dream in progress to Claude Code and Mneme.
    let mut claude = Command::new("sleep").arg("60").spawn().unwrap();
    fs::write(mem.join(".consolidate-lock"), format!("{}\n", claude.id())).unwrap();
    let err = fails(&h, &repo, &["dream", "run", "--offline", "--yes"]);
    assert!(err.contains(&format!("(PID {}, taken 0 min ago)", claude.id())), "{err}");
    assert!(mem.join("tabs_old.md").exists(), "nothing consolidated");
    claude.kill().unwrap();
    claude.wait().unwrap();
    ok(&h, &repo, &["dream", "run", "--offline", "--yes"]);
    assert!(!mem.join("tabs_old.md").exists());
}

#[test]
fn daily_logs_from_the_command_line() {
    let (h, repo, mem) = project();
    let out = ok(&h, &repo, &["log", "Always run cargo fmt before committing"]);
    let logs: Vec<PathBuf> = fs::read_dir(mem.join("logs")).unwrap().flatten().map(|e| e.path()).collect();
    assert_eq!(logs.len(), 1, "logs/YYYY");
    assert!(out.contains(" Always run cargo fmt before committing → ") && out.trim_end().ends_with(".md"), "{out}");
    let shown_json = json(&ok(&h, &repo, &["log", "show", "--json"]));
    assert!(shown_json["text"].as_str().unwrap().contains("Always run cargo fmt"));
    let shown = ok(&h, &repo, &["log", "show"]);
    assert!(shown.starts_with("- ") && shown.ends_with(" Always run cargo fmt before committing\n"), "{shown}");
    assert_eq!(ok(&h, &repo, &["log", "show", "--date", "2001-02-03"]), format!("No log for that day ({} does not exist).\n", mem.join("logs/2001/02/2001-02-03.md").display()));
    assert_eq!(fails(&h, &repo, &["log", "show", "--date", "yesterday"]), "mneme: 'yesterday' is not a date; write it as YYYY-MM-DD\n");
    assert_eq!(fails(&h, &repo, &["log", "  "]), "mneme: the log entry is empty; write what happened or what to remember\n");
    let rec = json(&ok(&h, &repo, &["dream", "run", "--offline", "--yes", "--json"]));
    assert_eq!(rec["stats"]["distilled"], 1);
    assert!(fs::read_to_string(mem.join("MEMORY.md")).unwrap().contains("Always run cargo fmt before committing"));
}

/// `--memory-dir` spelt with a trailing slash, `./` or `..` names the folder the app and the
/// scheduler know: a mode set through it is the mode they read, and its dreams are theirs.
#[test]
fn a_memory_dir_spelt_another_way_is_the_same_folder() {
    let (h, repo, mem) = project();
    let parent = mem.parent().unwrap();
    let trailing = format!("{}/", mem.display());
    ok(&h, &repo, &["dream", "mode", "review", "--memory-dir", &trailing]);
    let seen = json(&ok(&h, &repo, &["dream", "mode", "--json"]));
    assert_eq!(seen["mode"], "review", "the mode the project's own resolution reads");
    assert_eq!(seen["memoryDir"], mem.to_string_lossy().as_ref());
    ok(&h, parent, &["dream", "mode", "off", "--memory-dir", "./memory/."]);
    assert_eq!(json(&ok(&h, &repo, &["dream", "mode", "--json"]))["mode"], "off");
    let dotdot = format!("{}/logs/../", mem.display());
    let shown = json(&ok(&h, &repo, &["dream", "mode", "--json", "--memory-dir", &dotdot]));
    assert_eq!((shown["mode"].as_str(), shown["memoryDir"].as_str()), (Some("off"), mem.to_str()));
    ok(&h, &repo, &["dream", "mode", "automatic"]);
    let rec = json(&ok(&h, &repo, &["dream", "run", "--offline", "--json", "--memory-dir", &trailing]));
    let listed = json(&ok(&h, &repo, &["dream", "history", "--json"]));
    assert_eq!(listed[0]["id"], rec["id"], "a dream run through the other spelling is in the project's history");
}

/// What a dream wrote back and its diffs are text from the memory folder: `dream show` prints
/// escape sequences in them as text.
#[test]
fn a_dreams_changes_reach_the_terminal_escaped() {
    let (h, repo, _mem) = common::tabs_project("- [Gone \x1b]0;PWNED\x07](gone.md) — it \x1b[2J went\n");
    let rec = json(&ok(&h, &repo, &["dream", "run", "--offline", "--yes", "--json"]));
    let out = run(&h, &repo, &["dream", "show", rec["id"].as_str().unwrap()]);
    let shown = common::succeeded(out.clone(), &["dream", "show"]);
    assert!(!out.stdout.iter().any(|b| matches!(b, 0x1b | 0x07)), "{shown}");
    assert!(shown.contains("+ it \\u{001b}[2J went"), "{shown}");
    let history = ok(&h, &repo, &["dream", "history"]);
    assert!(!history.contains(['\x1b', '\x07']), "{history}");
}

/// A mode is kept by the folder's path, so setting one on a folder that does not exist (a
/// mistyped --memory-dir or --cwd) is refused instead of applying to no folder.
#[test]
fn a_mode_is_not_set_on_a_folder_that_does_not_exist() {
    let (h, repo, mem) = project();
    let typo = h.root.join("memroy");
    let err = fails(&h, &repo, &["dream", "mode", "review", "--memory-dir", typo.to_str().unwrap()]);
    assert!(err.starts_with(&format!("mneme: --memory-dir {} is not a folder; check the path", typo.display())), "{err}");
    let err = fails(&h, &repo, &["dream", "mode", "review", "--cwd", "/definitely/not/here"]);
    assert_eq!(err, "mneme: /definitely/not/here is not a folder. Pass --cwd with the folder Claude Code would start in.\n");
    // Nothing was set anywhere; the real folder still takes a mode.
    assert_eq!(json(&ok(&h, &repo, &["dream", "mode", "--json"]))["mode"], "automatic");
    ok(&h, &repo, &["dream", "mode", "review", "--memory-dir", mem.to_str().unwrap()]);
    assert_eq!(json(&ok(&h, &repo, &["dream", "mode", "--json"]))["mode"], "review");
}

/// A lock stamped three days ahead of the clock (a folder copied from a machine whose clock was
/// ahead): the status says the last dream is stamped in the future and why that blocks, instead
/// of "-72.0 h ago" and "the time gate (24 h since the last dream)"; with a live PID in it, a
/// dream by hand is refused, saying the lock is stamped in the future rather than "taken 0 min
/// ago"; once that process is gone, a dream by hand dates the lock to the present.
#[test]
fn a_lock_stamped_in_the_future_is_said_to_be() {
    let (h, repo, mem) = project();
    ok(&h, &repo, &["settings", "auto-dream", "on"]);
    let mut other = Command::new("sleep").arg("600").spawn().unwrap();
    let lock = mem.join(".consolidate-lock");
    fs::write(&lock, other.id().to_string()).unwrap();
    // Two minutes over the three days, so the hours read 72.0 for as long as the test runs.
    let ahead = std::time::SystemTime::now() + Duration::from_secs(72 * 3600 + 120);
    fs::File::options().write(true).open(&lock).unwrap().set_modified(ahead).unwrap();

    let text = ok(&h, &repo, &["dream", "status"]);
    assert!(!text.contains("h ago"), "{text}");
    assert!(text.contains("(stamped 72.0 h in the future; needs 24 h after that)"), "{text}");
    assert!(text.contains(&format!("Lock:               held by PID {} (running): stamped 72.0 h in the future, and a lock counts as held until an hour after its stamp, so until ", other.id())), "{text}");
    assert!(
        text.contains("Blocked by:         the time gate: the last dream is stamped 72.0 h in the future (the clock was ahead when it was recorded, or the lock file came from another machine), and Claude Code waits 24 h after that date before it dreams here again. If the process holding the lock is not a dream, remove the lock file; then `mneme dream run` dreams now and dates it to the present"),
        "{text}"
    );
    let err = fails(&h, &repo, &["dream", "run", "--offline", "--yes"]);
    assert!(err.contains(&format!("(PID {}, stamped 72.0 h in the future, by a clock that was ahead or on another machine; a lock counts as held until an hour after its stamp)", other.id())), "{err}");
    assert!(mem.join("tabs_old.md").exists(), "nothing consolidated");

    other.kill().unwrap();
    other.wait().unwrap();
    let text = ok(&h, &repo, &["dream", "status"]);
    assert!(text.contains("free (PID "), "{text}");
    assert!(text.contains("Claude Code waits 24 h after that date before it dreams here again. `mneme dream run` dreams now and dates it to the present"), "{text}");
    ok(&h, &repo, &["dream", "run", "--offline", "--yes"]);
    let text = ok(&h, &repo, &["dream", "status"]);
    assert!(text.contains(" h ago; needs 24 h)") && !text.contains("in the future"), "{text}");
    // Seconds ahead are two clocks' jitter: just now, not "-0.0 h ago".
    let jitter = std::time::SystemTime::now() + Duration::from_secs(30);
    fs::File::options().write(true).open(&lock).unwrap().set_modified(jitter).unwrap();
    let text = ok(&h, &repo, &["dream", "status"]);
    assert!(text.contains(" (0.0 h ago; needs 24 h)") && !text.contains("in the future"), "{text}");
}

/// Sessions that ran under another organization keep auto dream away once every other gate is
/// open (row 89): `dream status` says so, in words and in `--json`, with the organization and
/// what to do, where it said "nothing: a dream would start now" while the scheduler skipped the
/// folder, saying why only in the run log. Signed in to that organization, the gate is open.
#[test]
fn status_says_when_sessions_of_another_organization_keep_dreams_away() {
    const MINE: &str = "5b7c9f0e-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
    const THEIRS: &str = "0f9e8d7c-6b5a-4493-8271-605f4e3d2c1b";
    let (h, repo, _mem) = project();
    ok(&h, &repo, &["settings", "auto-dream", "on"]);
    // One session is enough (the cached flag's threshold), so every other gate opens.
    let config = |org: &str| {
        let v = serde_json::json!({
            "cachedGrowthBookFeatures": {"tengu_onyx_plover": {"available": true, "minSessions": 1}},
            "oauthAccount": {"accountUuid": "acc-1", "organizationUuid": org},
        });
        fs::write(h.env.global_config_path(), v.to_string()).unwrap();
    };
    config(MINE);
    let transcripts = h.config_home().join("projects").join(mneme_core::sanitize::sanitize_path(&repo.to_string_lossy()));
    fs::create_dir_all(&transcripts).unwrap();
    let hybrid = serde_json::json!({"type": "hybrid-organization", "organizationUuid": THEIRS});
    fs::write(transcripts.join("00000000-1111-4111-8111-111111111111.jsonl"), format!("{{}}\n{hybrid}\n")).unwrap();

    let text = ok(&h, &repo, &["dream", "status"]);
    assert!(text.contains(&format!("Organizations:      skipped: Sessions in this folder ran under organization {THEIRS}, not the one Claude Code is signed in to")), "{text}");
    assert!(text.contains("sign in to that organization to dream here") && text.contains("Mneme's background dreams skip this folder too."), "{text}");
    assert!(text.contains("Blocked by:         the organization check (above): no automatic dream runs here"), "{text}");
    let status = json(&ok(&h, &repo, &["dream", "status", "--json"]));
    assert_eq!(status["status"]["blockedBy"], Value::Null, "the engine's own gates are all open");
    assert_eq!(status["organization"]["code"], "other_hybrid_organization");
    assert_eq!(status["organization"]["organization"], THEIRS);

    config(THEIRS);
    let text = ok(&h, &repo, &["dream", "status"]);
    assert!(
        text.contains("Organizations:      open (no session here ran under another organization or for a limited-retention owner who is not you)\n")
            && text.contains("Blocked by:         nothing: a dream would start now"),
        "{text}"
    );
    let status = json(&ok(&h, &repo, &["dream", "status", "--json"]));
    assert_eq!(status["organization"], Value::Null);
    assert_eq!(status["organizationChecks"], "organizationsAndOwners");

}

/// A forced undo over an index saved since as Windows-1252: `dream show` says its exact bytes
/// are kept in Mneme's trash, with the entry to restore.
#[test]
fn show_says_where_a_forced_undo_kept_a_file_that_was_not_utf8() {
    let (h, repo, mem) = project();
    let rec = json(&ok(&h, &repo, &["dream", "run", "--offline", "--yes", "--json"]));
    let id = rec["id"].as_str().unwrap().to_string();
    fs::write(mem.join("MEMORY.md"), b"- [New](tabs_new.md) \x97 caf\xe9\n").unwrap();
    let undone = json(&ok(&h, &repo, &["dream", "undo", &id, "--force", "--json"]));
    let trash_id = undone["undoKept"][0]["trashId"].as_str().expect("the bytes are kept").to_string();
    let shown = ok(&h, &repo, &["dream", "show", &id]);
    assert!(shown.contains("MEMORY.md was not UTF-8 text when the undo replaced it"), "{shown}");
    assert!(shown.contains(&format!("`mneme memories restore {trash_id}`")), "{shown}");
}
