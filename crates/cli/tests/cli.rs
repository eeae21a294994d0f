//! The `mneme` commands end to end, in hermetic homes: each test starts the real binary with
//! a temporary HOME and CLAUDE_CONFIG_DIR and checks what it printed and what it left on disk.

mod common;

use mneme_testsupport::{set_mtime, topic, TestHome};
use std::fs;
use std::path::Path;
use std::process::Output;

fn run(h: &TestHome, cwd: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), h);
    cmd.current_dir(cwd).arg("--managed-dir").arg(h.root.join("managed")).args(args);
    mneme_testsupport::output_with_stdin(cmd, Some(stdin.unwrap_or("").as_bytes()))
}

fn ok(h: &TestHome, cwd: &Path, args: &[&str]) -> String {
    common::succeeded(run(h, cwd, args, None), args)
}

/// Runs a command that must fail; returns its one-line error.
fn fails(h: &TestHome, cwd: &Path, args: &[&str]) -> String {
    common::one_line_error(run(h, cwd, args, None), args)
}

fn project() -> (TestHome, std::path::PathBuf) {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    fs::write(repo.join("CLAUDE.md"), "Repo rules.\n").unwrap();
    (h, repo)
}

#[test]
fn memory_lifecycle_keeps_the_index_in_step() {
    let (h, repo) = project();
    let memdir = h.memdir_for(&repo);

    let out = run(&h, &repo, &["memories", "new", "--name", "Testing style", "--description", "Table-driven tests", "--type", "feedback"], Some("Use table-driven tests.\n"));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let file = memdir.join("testing-style.md");
    let text = fs::read_to_string(&file).unwrap();
    assert!(text.starts_with("---\nname: Testing style\ndescription: Table-driven tests\nmetadata:\n  type: feedback\n---\n"), "{text}");
    assert!(text.contains("Use table-driven tests."));
    let index = fs::read_to_string(memdir.join("MEMORY.md")).unwrap();
    assert_eq!(index, "- [Testing style](testing-style.md) — Table-driven tests\n");

    // The context now carries the index, exactly as Claude Code would load it.
    // No claude is installed here, so the newest checked release's wrapper is used; 2.1.197's on request.
    let block = ok(&h, &repo, &["context", "--date", "2026-11-29"]);
    // (From 2.1.337 the index goes out quoted behind a preamble.)
    let (_, index) = block.split_once(&format!("Contents of {}/MEMORY.md (user's auto-memory, persists across conversations):\n\n", memdir.display())).expect(&block);
    assert!(index.contains("\n\n> - [Testing style](testing-style.md) — Table-driven tests\n</system-reminder>"), "{block}");
    let block = ok(&h, &repo, &["context", "--date", "2026-11-29", "--claude-version", "2.1.197"]);
    assert!(block.contains(&format!("Contents of {}/MEMORY.md (user's auto-memory, persists across conversations):\n\n- [Testing style](testing-style.md) — Table-driven tests\n# currentDate", memdir.display())), "{block}");

    // The manifest line Claude Code's recall would show for it.
    let manifest = ok(&h, &repo, &["memories", "manifest"]);
    assert!(manifest.starts_with("- [feedback] testing-style.md (20") && manifest.trim_end().ends_with("Z): Table-driven tests"), "{manifest}");

    let list = ok(&h, &repo, &["memories", "list", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(v[0]["relPath"], "testing-style.md");
    assert_eq!(v[0]["memoryType"], "feedback");
    assert_eq!(v[0]["indexed"], true);

    // Edit keeps unknown keys; rename carries the index line along.
    fs::write(&file, text.replace("metadata:", "originSessionId: abc-123\nmetadata:")).unwrap();
    ok(&h, &repo, &["memories", "edit", "Testing style", "--description", "Prefer table-driven tests", "--rename", "tests"]);
    let renamed = fs::read_to_string(memdir.join("tests.md")).unwrap();
    assert!(renamed.contains("originSessionId: abc-123\n"), "{renamed}");
    assert!(renamed.contains("description: Prefer table-driven tests\n"));
    assert!(!file.exists());
    let index = fs::read_to_string(memdir.join("MEMORY.md")).unwrap();
    assert!(index.contains("](tests.md)"), "{index}");

    // Delete goes to Mneme's trash, outside the memory folder, and restore brings both back.
    let rm = ok(&h, &repo, &["memories", "rm", "tests"]);
    assert!(!memdir.join("tests.md").exists());
    assert!(!fs::read_to_string(memdir.join("MEMORY.md")).unwrap().contains("tests.md"));
    let id = rm.rsplit("restore ").next().unwrap().trim().trim_end_matches(')').to_string();
    let trashed: Vec<_> = walk(&h.root.join("mneme-data"));
    assert!(trashed.iter().any(|p| p.ends_with("tests.md")), "{trashed:?}");
    let listing = ok(&h, &repo, &["memories", "restore"]);
    assert!(listing.contains(&id));
    ok(&h, &repo, &["memories", "restore", &id]);
    assert_eq!(fs::read_to_string(memdir.join("tests.md")).unwrap(), renamed);
    assert!(fs::read_to_string(memdir.join("MEMORY.md")).unwrap().contains("](tests.md)"));

    // Purge deletes a trashed memory for good; --all empties the folder's trash.
    let first = ok(&h, &repo, &["memories", "rm", "tests"]).rsplit("restore ").next().unwrap().trim().trim_end_matches(')').to_string();
    assert!(ok(&h, &repo, &["memories", "restore"]).contains("memories purge ID"));
    assert_eq!(ok(&h, &repo, &["memories", "purge", &first]).trim(), format!("deleted 1 trashed memory for good ({} bytes)", renamed.len()));
    assert!(!walk(&h.root.join("mneme-data")).iter().any(|p| p.ends_with("tests.md")), "gone from the trash");
    assert!(fails(&h, &repo, &["memories", "restore", &first]).contains(&first));
    fs::write(memdir.join("a.md"), "a").unwrap();
    fs::write(memdir.join("b.md"), "bb").unwrap();
    ok(&h, &repo, &["memories", "rm", "a.md"]);
    ok(&h, &repo, &["memories", "rm", "b.md"]);
    let v: serde_json::Value = serde_json::from_str(&ok(&h, &repo, &["memories", "purge", "--all", "--json"])).expect("JSON");
    assert_eq!(v, serde_json::json!({"removed": 2, "bytes": 3}));
    assert_eq!(ok(&h, &repo, &["memories", "purge", "--all"]).trim(), "The trash is already empty.");
    assert!(run(&h, &repo, &["memories", "purge"], None).status.code() == Some(2), "an id or --all is required");
}

fn walk(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walk(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

#[test]
fn health_reports_and_fixes_the_index() {
    let (h, repo) = project();
    let memdir = h.memdir_for(&repo);
    fs::create_dir_all(&memdir).unwrap();
    fs::write(memdir.join("a.md"), topic("a", "first", "user", "See [[b]] and [[nowhere]].")).unwrap();
    fs::write(memdir.join("b.md"), topic("b", "second", "project", "Plain.")).unwrap();
    fs::write(memdir.join("MEMORY.md"), "- [A](a.md) — first\n- [Gone](gone.md) — missing\n- [A again](a.md) — dup\n").unwrap();

    let json = ok(&h, &repo, &["memories", "health", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["index"]["missingTargets"][0]["relPath"], "gone.md");
    assert_eq!(v["index"]["duplicates"][0]["relPath"], "a.md");
    assert_eq!(v["unindexed"][0], "b.md");
    assert_eq!(v["danglingLinks"][0]["link"], "nowhere");

    let fixed = ok(&h, &repo, &["memories", "health", "--fix"]);
    assert!(fixed.contains("added to MEMORY.md"), "{fixed}");
    let index = fs::read_to_string(memdir.join("MEMORY.md")).unwrap();
    assert!(index.contains("](b.md)"));
    assert!(!index.contains("gone.md"));
    assert_eq!(index.matches("](a.md)").count(), 1, "{index}");
}

/// `health --fix --json` answers one JSON document: what was fixed and the health after it,
/// not the fix lines ahead of the JSON.
#[test]
fn health_fix_json_is_one_json_document() {
    let (h, repo) = project();
    let memdir = h.memdir_for(&repo);
    fs::create_dir_all(&memdir).unwrap();
    fs::write(memdir.join("a.md"), topic("a", "first", "user", "Plain.")).unwrap();
    fs::write(memdir.join("MEMORY.md"), "- [Gone](gone.md) — missing\n").unwrap();
    let out = ok(&h, &repo, &["memories", "health", "--fix", "--json"]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"));
    let fixed: Vec<&str> = v["fixed"].as_array().expect("the fixes").iter().map(|l| l.as_str().unwrap()).collect();
    assert!(fixed.iter().any(|l| l.contains("added to MEMORY.md")), "{fixed:?}");
    assert_eq!(v["health"]["unindexed"], serde_json::json!([]), "the health after the fix: {out}");
    assert_eq!(v["health"]["index"]["missingTargets"], serde_json::json!([]), "{out}");
    // Nothing left to fix: still one document.
    let again: serde_json::Value = serde_json::from_str(&ok(&h, &repo, &["memories", "health", "--fix", "--json"])).unwrap();
    assert_eq!(again["health"]["topicCount"], 1);
}

#[test]
fn health_counts_exactly_like_claude_code_at_the_caps() {
    for (lines, truncated) in [(200, false), (201, true)] {
        let (h, repo) = project();
        let memdir = h.memdir_for(&repo);
        fs::create_dir_all(&memdir).unwrap();
        let index: String = (1..=lines).map(|i| format!("- line {i}\n")).collect();
        fs::write(memdir.join("MEMORY.md"), index).unwrap();
        let v: serde_json::Value = serde_json::from_str(&ok(&h, &repo, &["memories", "health", "--json"])).unwrap();
        assert_eq!(v["index"]["lineCount"], lines);
        assert_eq!(v["index"]["truncated"], truncated, "{lines} lines");
    }
    for (units, truncated) in [(25_000usize, false), (25_001, true)] {
        let (h, repo) = project();
        let memdir = h.memdir_for(&repo);
        fs::create_dir_all(&memdir).unwrap();
        let text = format!("{}\n{}", "a".repeat(12_000), "é".repeat(units - 12_001));
        fs::write(memdir.join("MEMORY.md"), &text).unwrap();
        let v: serde_json::Value = serde_json::from_str(&ok(&h, &repo, &["memories", "health", "--json"])).unwrap();
        assert_eq!(v["index"]["unitCount"], units);
        assert_eq!(v["index"]["truncated"], truncated, "{units} units");
    }
}

#[test]
fn graph_has_memories_index_files_and_ghosts() {
    let (h, repo) = project();
    fs::write(repo.join("CLAUDE.md"), "Root.\n@docs/more.md\n").unwrap();
    fs::create_dir_all(repo.join("docs")).unwrap();
    fs::write(repo.join("docs/more.md"), "More.\n").unwrap();
    let memdir = h.memdir_for(&repo);
    fs::create_dir_all(&memdir).unwrap();
    fs::write(memdir.join("a.md"), topic("a", "first", "user", "Links [[b]] and [[ghost-name]].")).unwrap();
    fs::write(memdir.join("b.md"), topic("b", "second", "project", "Plain.")).unwrap();
    fs::write(memdir.join("MEMORY.md"), "- [A](a.md) — first\n- [X](missing.md) — gone\n").unwrap();

    let v: serde_json::Value = serde_json::from_str(&ok(&h, &repo, &["graph", "--json"])).unwrap();
    let ids: Vec<&str> = v["nodes"].as_array().unwrap().iter().map(|n| n["id"].as_str().unwrap()).collect();
    assert!(ids.contains(&"memory:a.md") && ids.contains(&"memory:b.md"), "{ids:?}");
    assert!(ids.contains(&"ghost:ghost-name") && ids.contains(&"ghost:missing.md"), "{ids:?}");
    assert!(ids.contains(&"index:MEMORY.md"));
    let edges: Vec<(String, String, String)> = v["edges"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| (e["source"].as_str().unwrap().into(), e["target"].as_str().unwrap().into(), e["kind"].as_str().unwrap().into()))
        .collect();
    assert!(edges.contains(&("memory:a.md".into(), "memory:b.md".into(), "link".into())), "{edges:?}");
    assert!(edges.contains(&("index:MEMORY.md".into(), "memory:a.md".into(), "indexPointer".into())));
    let include = (format!("file:{}", repo.join("CLAUDE.md").display()), format!("file:{}", repo.join("docs/more.md").display()), "include".to_string());
    assert!(edges.contains(&include), "{edges:?}");
}

#[test]
fn settings_toggles_keep_every_other_key() {
    let (h, repo) = project();
    let settings = h.config_home().join("settings.json");
    let original = "{\n    \"model\": \"opus\",\n    \"permissions\": {\"allow\": [\"Bash(ls)\"]},\n    \"autoMemoryEnabled\": true\n}\n";
    fs::write(&settings, original).unwrap();
    ok(&h, &repo, &["settings", "auto-memory", "off"]);
    assert_eq!(fs::read_to_string(&settings).unwrap(), original.replace("\"autoMemoryEnabled\": true", "\"autoMemoryEnabled\": false"));
    ok(&h, &repo, &["settings", "auto-dream", "on"]);
    let text = fs::read_to_string(&settings).unwrap();
    assert!(text.starts_with("{\n    \"model\": \"opus\",\n    \"permissions\": {\"allow\": [\"Bash(ls)\"]},\n    \"autoMemoryEnabled\": false,"), "{text}");
    assert!(text.contains("\"autoDreamEnabled\": true"));
    // Auto memory now off: the context no longer carries MEMORY.md.
    let memdir = h.memdir_for(&repo);
    fs::create_dir_all(&memdir).unwrap();
    fs::write(memdir.join("MEMORY.md"), "- [A](a.md) — x\n").unwrap();
    assert!(!ok(&h, &repo, &["context"]).contains("MEMORY.md"));

    // A malformed settings file is reported with its position and left untouched.
    let broken = "{\n  \"model\": \"opus\",\n}\n";
    fs::write(&settings, broken).unwrap();
    let err = fails(&h, &repo, &["settings", "auto-memory", "on"]);
    assert!(err.contains("line 3"), "{err}");
    assert_eq!(fs::read_to_string(&settings).unwrap(), broken);
}

/// `--json` is honoured where it is accepted: showing autoMemoryDirectory, and restoring a
/// memory from the trash.
#[test]
fn memory_dir_and_restore_answer_json_when_asked() {
    let (h, repo) = project();
    let settings = h.config_home().join("settings.json");
    let v: serde_json::Value = serde_json::from_str(&ok(&h, &repo, &["settings", "memory-dir", "--json"])).expect("JSON");
    assert_eq!(v["value"], serde_json::Value::Null);
    assert_eq!(v["settingsPath"], settings.to_string_lossy().as_ref());
    fs::write(&settings, "{\"autoMemoryDirectory\": \"~/memories\"}\n").unwrap();
    let v: serde_json::Value = serde_json::from_str(&ok(&h, &repo, &["settings", "memory-dir", "--json"])).expect("JSON");
    assert_eq!(v["value"], "~/memories");
    fs::write(&settings, "{}\n").unwrap();

    ok(&h, &repo, &["memories", "new", "--name", "a", "--description", "x", "--type", "user", "--body", "y"]);
    let rm = ok(&h, &repo, &["memories", "rm", "a"]);
    let id = rm.rsplit("restore ").next().unwrap().trim().trim_end_matches(')').to_string();
    let v: serde_json::Value = serde_json::from_str(&ok(&h, &repo, &["memories", "restore", &id, "--json"])).expect("JSON");
    assert_eq!(v["id"], id.as_str());
    assert_eq!(v["restored"], h.memdir_for(&repo).join("a.md").to_string_lossy().as_ref());
}

/// One value Claude Code's rules refuse makes it ignore the whole user settings file, so an
/// autoMemoryDirectory there decides nothing: `settings` and `settings memory-dir` say so, as
/// they do for the on/off switches, instead of showing it as the folder in use.
#[test]
fn a_memory_dir_in_an_ignored_settings_file_is_shown_as_ignored() {
    let (h, repo) = project();
    let settings = h.config_home().join("settings.json");
    fs::write(&settings, "{\"autoMemoryDirectory\": \"~/memories\", \"cleanupPeriodDays\": \"soon\"}\n").unwrap();
    let shown = ok(&h, &repo, &["settings"]);
    assert!(shown.contains("  memory directory: ~/memories in the file, which Claude Code ignores (see the problem below)\n"), "{shown}");
    let shown = ok(&h, &repo, &["settings", "memory-dir"]);
    assert!(shown.starts_with(&format!("autoMemoryDirectory is ~/memories in {}, which Claude Code ignores: ", settings.display())), "{shown}");
    assert!(shown.contains("cleanupPeriodDays"), "{shown}");
    let v: serde_json::Value = serde_json::from_str(&ok(&h, &repo, &["settings", "memory-dir", "--json"])).unwrap();
    assert!(v["ignored"].as_str().is_some_and(|p| p.contains("cleanupPeriodDays")), "{v}");
    // With the file fixed, the value is simply shown.
    fs::write(&settings, "{\"autoMemoryDirectory\": \"~/memories\"}\n").unwrap();
    assert_eq!(ok(&h, &repo, &["settings", "memory-dir"]), format!("autoMemoryDirectory is ~/memories in {}\n", settings.display()));
    assert!(ok(&h, &repo, &["settings"]).contains("  memory directory: ~/memories\n"));
}

#[test]
fn bad_inputs_get_one_clear_line() {
    let (h, repo) = project();
    let err = fails(&h, &repo, &["context", "--cwd", "/definitely/not/here"]);
    assert!(err.contains("not a folder"), "{err}");
    let err = fails(&h, &repo, &["context", "--setting-sources", "user,bogus"]);
    assert!(err.contains("bogus"), "{err}");
    let err = fails(&h, &repo, &["memories", "new", "--name", "x", "--description", "y", "--type", "opinion", "--body", "z"]);
    assert!(err.contains("user, feedback, project, reference"), "{err}");
    let err = fails(&h, &repo, &["memories", "show", "nothing-here"]);
    assert!(err.contains("No memory called") && err.trim_end().ends_with("`mneme memories list` lists the ones there are."), "{err}");
    let err = fails(&h, &repo, &["memories", "rm", "nothing-here"]);
    assert!(err.contains("No memory called") && err.trim_end().ends_with("`mneme memories list` lists the ones there are."), "{err}");
    // An --agent Mneme cannot open: the shared words name the app's folder list; here the
    // command and the flag.
    let err = fails(&h, &repo, &["memories", "list", "--agent", "nobody"]);
    assert!(err.contains("No agent named nobody is defined here now") && err.trim_end().ends_with("Run `mneme agents` to list them, or pass --scope user|project|local to open a folder left behind."), "{err}");
    fs::create_dir_all(h.config_home().join("agents")).unwrap();
    fs::write(h.config_home().join("agents/plain.md"), "---\nname: plain\ndescription: p\n---\nNo memory.\n").unwrap();
    let err = fails(&h, &repo, &["memories", "list", "--agent", "plain"]);
    assert!(err.contains("The agent plain has no memory") && err.trim_end().ends_with("Add it there, or pass --scope user|project|local to open a folder anyway."), "{err}");
    let gone = h.config_home().join("projects/-nope");
    let (gone, into) = (gone.to_str().unwrap(), repo.to_str().unwrap());
    let err = fails(&h, &repo, &["projects", "merge", "--into", into, gone]);
    assert!(err.contains("-nope does not exist now") && err.trim_end().ends_with("`mneme projects` lists the ones there are."), "{err}");
    let err = fails(&h, &repo, &["memories", "new", "--name", "x", "--description", "y", "--type", "user", "--body", "z", "--file", "../escape.md"]);
    assert!(!h.root.join("escape.md").exists() && !h.memdir_for(&repo).parent().unwrap().join("escape.md").exists(), "{err}");
    let err = fails(&h, &repo, &["memories", "new", "--name", "x"]);
    assert!(err.contains("--description") && err.contains("(see: mneme memories new --help)"), "{err}");
    let err = fails(&h, &repo, &["no-such-command"]);
    assert!(err.contains("no-such-command"), "{err}");
    let err = fails(&h, &repo, &["memories", "restore", "no-such-id"]);
    assert!(!err.is_empty());
}

/// A usage error keeps what helps: a command that needs a subcommand shows its help (the list
/// of them), a typo keeps clap's "similar subcommand" tip, and the error names the help of
/// the command being parsed.
#[test]
fn usage_errors_list_subcommands_keep_tips_and_name_the_right_help() {
    let (h, repo) = project();
    let out = run(&h, &repo, &["dream"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(out.stdout.is_empty());
    let help = String::from_utf8_lossy(&out.stderr);
    assert!(help.contains("Usage: mneme dream") && help.contains("status") && help.contains("undo") && help.contains("approve"), "{help}");

    let err = fails(&h, &repo, &["dream", "stauts"]);
    assert_eq!(err, "mneme: unrecognized subcommand 'stauts'; tip: a similar subcommand exists: 'status' (see: mneme dream --help)\n");
    let err = fails(&h, &repo, &["dream", "status", "--memory-dir"]);
    assert!(err.ends_with("(see: mneme dream status --help)\n"), "{err}");
    let err = fails(&h, &repo, &["memories", "lst"]);
    assert!(err.contains("'list'") && err.ends_with("(see: mneme memories --help)\n"), "{err}");
    let out = run(&h, &repo, &["contxt"], None);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("tip: a similar subcommand exists: 'context' (see: mneme --help)"), "{out:?}");
}

/// A body from standard input that is empty (`< /dev/null`, a bare Ctrl-D) is a slip: refused
/// with how to give it, and no memory is written. `--body` and `--body-stdin` together are a
/// usage error, not one silently dropped.
#[test]
fn an_empty_body_from_standard_input_is_refused() {
    let (h, repo) = project();
    let out = run(&h, &repo, &["memories", "new", "--name", "a", "--description", "x", "--type", "user"], Some(" \n"));
    let err = common::one_line_error(out, &["memories", "new"]);
    assert_eq!(err, "mneme: the memory's text is empty: standard input held no text. Pipe the text in, or pass it with --body TEXT.\n");
    assert!(!h.memdir_for(&repo).join("a.md").exists());
    ok(&h, &repo, &["memories", "new", "--name", "a", "--description", "x", "--type", "user", "--body", "First."]);
    let err = common::one_line_error(run(&h, &repo, &["memories", "edit", "a", "--body-stdin"], Some("")), &["memories", "edit"]);
    assert!(err.contains("the memory's new text is empty"), "{err}");
    let out = run(&h, &repo, &["memories", "edit", "a", "--body", "Second.", "--body-stdin"], Some("Third.\n"));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("'--body <BODY>' cannot be used with '--body-stdin'"), "{out:?}");
    assert!(fs::read_to_string(h.memdir_for(&repo).join("a.md")).unwrap().contains("First."));
}

/// On a terminal, `memories new` without --body says it is waiting for the text and how to end
/// it (on standard error), instead of waiting silently; what is typed becomes the body.
#[cfg(target_os = "linux")]
#[test]
fn memories_new_on_a_terminal_says_it_waits_for_the_text() {
    use rustix::fs::{Mode, OFlags};
    use rustix::pty::{grantpt, openpt, ptsname, unlockpt, OpenptFlags};
    use std::io::Write;
    let (h, repo) = project();
    let master = openpt(OpenptFlags::RDWR | OpenptFlags::NOCTTY).unwrap();
    grantpt(&master).unwrap();
    unlockpt(&master).unwrap();
    let name = ptsname(&master, Vec::new()).unwrap();
    let terminal = rustix::fs::open(name.as_c_str(), OFlags::RDWR | OFlags::NOCTTY, Mode::empty()).unwrap();
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), &h);
    cmd.current_dir(&repo)
        .arg("--managed-dir")
        .arg(h.root.join("managed"))
        .args(["memories", "new", "--name", "typed", "--description", "x", "--type", "user"])
        .stdin(std::process::Stdio::from(terminal));
    let child = cmd.spawn().unwrap();
    // The line discipline holds what is typed until mneme reads it; Ctrl-D at a line's start
    // ends the input.
    let mut keyboard = fs::File::from(master);
    keyboard.write_all(b"Typed at the terminal.\n\x04").unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert_eq!(err, "mneme: type the memory's text, then end it with Ctrl-D on a line of its own (or pass it with --body TEXT)\n");
    assert!(fs::read_to_string(h.memdir_for(&repo).join("typed.md")).unwrap().contains("Typed at the terminal.\n"));
}

#[test]
fn refuses_to_overwrite_a_memory_changed_on_disk() {
    let (h, repo) = project();
    ok(&h, &repo, &["memories", "new", "--name", "a", "--description", "first", "--type", "user", "--body", "one"]);
    // Two creates of the same name: the second must not clobber the first, nor make a second
    // memory of that name. Naming the first's file is refused too.
    let err = fails(&h, &repo, &["memories", "new", "--name", "a", "--description", "other", "--type", "user", "--body", "two"]);
    assert!(err.contains("already exists (a.md)"), "{err}");
    let err = fails(&h, &repo, &["memories", "new", "--name", "b", "--description", "other", "--type", "user", "--body", "two", "--file", "a.md"]);
    assert!(err.to_lowercase().contains("exists"), "{err}");
    let file = h.memdir_for(&repo).join("a.md");
    assert!(fs::read_to_string(&file).unwrap().contains("one"));

    // Read, then the file changes on disk (Claude Code writes it), then a save from the stale
    // read: refused with what to do, and Claude Code's text stays.
    let shown: serde_json::Value = serde_json::from_str(&ok(&h, &repo, &["memories", "show", "a", "--json"])).unwrap();
    let stale = shown["revision"].as_str().expect("a revision").to_string();
    let theirs = topic("a", "first", "user", "Claude Code wrote this meanwhile.");
    fs::write(&file, &theirs).unwrap();
    let mine = topic("a", "first", "user", "Mneme's edit from the stale read.");
    let out = run(&h, &repo, &["memories", "save", "a", "--revision", &stale], Some(&mine));
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("changed on disk since revision") && err.contains("save again with that --revision"), "{err}");
    assert_eq!(fs::read_to_string(&file).unwrap(), theirs);

    // Saved from the current revision, the same text lands.
    let shown: serde_json::Value = serde_json::from_str(&ok(&h, &repo, &["memories", "show", "a", "--json"])).unwrap();
    let out = run(&h, &repo, &["memories", "save", "a", "--revision", shown["revision"].as_str().unwrap()], Some(&mine));
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(fs::read_to_string(&file).unwrap(), mine);
}

#[test]
fn projects_lists_memory_folders_and_flags_orphans() {
    let (h, repo) = project();
    ok(&h, &repo, &["memories", "new", "--name", "a", "--description", "x", "--type", "user", "--body", "y"]);
    let gone = h.root.join("deleted-worktree");
    let orphan = h.memdir_for(&gone);
    fs::create_dir_all(&orphan).unwrap();
    fs::write(orphan.join("old.md"), topic("old", "stale", "project", "x")).unwrap();
    let transcript_dir = orphan.parent().unwrap();
    fs::write(
        transcript_dir.join("0b3c7e6a-1d2f-4c5b-9a8e-7f6d5c4b3a21.jsonl"),
        format!("{{\"type\":\"user\",\"cwd\":\"{}\",\"sessionId\":\"0b3c7e6a-1d2f-4c5b-9a8e-7f6d5c4b3a21\"}}\n", gone.display()),
    )
    .unwrap();
    set_mtime(&orphan.join("old.md"), 1_700_000_000);
    let v: serde_json::Value = serde_json::from_str(&ok(&h, &repo, &["projects", "--json"])).unwrap();
    let list = v.as_array().unwrap();
    let find = |p: &Path| list.iter().find(|x| x["projectPath"] == p.to_string_lossy().as_ref()).cloned();
    let live = find(&repo).expect("the repo is listed");
    assert_eq!(live["orphaned"], false);
    assert_eq!(live["topicCount"], 1);
    let dead = find(&gone).expect("the orphan is listed with its recovered folder");
    assert_eq!(dead["orphaned"], true);
}

#[test]
fn a_reader_that_stops_early_ends_the_command_quietly() {
    // `mneme context | head -1`: the reader closes the pipe while mneme still has lines to
    // write. The command stops without a panic's message or backtrace.
    let (h, repo) = project();
    fs::write(repo.join("CLAUDE.md"), "A line of the project's rules.\n".repeat(20_000)).unwrap();
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), &h);
    cmd.current_dir(&repo)
        .arg("--managed-dir")
        .arg(h.root.join("managed"))
        .arg("context")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    // Closing the only read end before anything is read: every write fails with EPIPE.
    drop(child.stdout.take());
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{:?}: {stderr}", out.status);
    assert!(stderr.is_empty(), "{stderr}");
}

/// `mneme memories list --json | head -c 10`: the JSON is written through a buffer of its own
/// (memories_json.rs), whose failed write is an error, not a `println!` panic; a closed pipe
/// still ends the command quietly with success.
#[test]
fn memories_list_json_into_a_closed_pipe_ends_quietly() {
    let (h, repo) = project();
    let memdir = h.memdir_for(&repo);
    fs::create_dir_all(&memdir).unwrap();
    for i in 0..50 {
        fs::write(memdir.join(format!("m{i}.md")), topic(&format!("m{i}"), &format!("memory number {i}"), "user", "Body.")).unwrap();
    }
    for json in [true, false] {
        let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), &h);
        cmd.current_dir(&repo).arg("--managed-dir").arg(h.root.join("managed")).args(["memories", "list"]);
        if json {
            cmd.arg("--json");
        }
        let mut child = cmd.spawn().unwrap();
        drop(child.stdout.take());
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success() && stderr.is_empty(), "--json {json}: {:?}: {stderr}", out.status);
    }
}

/// A link back into the memory folder: releases before 2.1.326 follow it without end, their
/// memory scan fails and recall is shown no memory, so the manifest is empty, and Mneme says
/// why on standard error; 2.1.326 on walks each folder once.
#[cfg(unix)]
#[test]
fn manifest_says_why_an_older_release_lists_nothing() {
    let (h, repo) = project();
    let memdir = h.memdir_for(&repo);
    fs::create_dir_all(memdir.join("notes")).unwrap();
    fs::write(memdir.join("notes/deploys.md"), "---\ndescription: how we deploy\n---\nSteps.\n").unwrap();
    std::os::unix::fs::symlink("..", memdir.join("notes/up")).unwrap();
    let args = ["memories", "manifest", "--claude-version", "2.1.197"];
    let out = run(&h, &repo, &args, None);
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(String::from_utf8_lossy(&out.stdout), "");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with("mneme: Claude Code before 2.1.326 cannot list this memory folder: the link notes/up leads back"),
        "{err}"
    );
    let newest = ok(&h, &repo, &["memories", "manifest", "--claude-version", "2.1.332"]);
    assert!(newest.starts_with("- notes/deploys.md (") && newest.trim_end().ends_with("): how we deploy"), "{newest}");
}

/// Asserts a run's output holds none of the bytes a terminal acts on (ESC starts a sequence
/// that can retitle the window or clear the screen; BEL ends an OSC title).
fn no_terminal_controls(out: &Output, what: &str) -> String {
    assert!(out.status.success(), "{what}: {}", String::from_utf8_lossy(&out.stderr));
    for (name, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
        assert!(!bytes.iter().any(|b| matches!(b, 0x1b | 0x07 | 0x9b)), "{what} wrote a control byte to {name}: {:?}", String::from_utf8_lossy(bytes));
    }
    String::from_utf8(out.stdout.clone()).unwrap()
}

/// Memory names, descriptions and file names, and agent names, are anyone's text (a model, a
/// teammate through team sync, a cloned repository): the commands that list them show escape
/// sequences as text, never as sequences the terminal runs.
#[test]
fn untrusted_names_and_descriptions_reach_the_terminal_escaped() {
    let (h, repo) = project();
    let memdir = h.memdir_for(&repo);
    fs::create_dir_all(&memdir).unwrap();
    let title = "\x1b]0;PWNED\x07";
    let clear = "\x1b[2J";
    fs::write(memdir.join("ok.md"), topic("ok", "fine", "user", "Plain.")).unwrap();
    fs::write(memdir.join("MEMORY.md"), "- [ok](ok.md) — fine\n").unwrap();
    // An unindexed file whose name, `name:` and description all carry sequences.
    let evil_file = format!("deploy{clear}.md");
    fs::write(memdir.join(&evil_file), format!("---\nname: deploy{title}\ndescription: how we deploy {title} {clear}\ntype: user\n---\nDeploy on Fridays.\n")).unwrap();
    fs::create_dir_all(repo.join(".claude/agents")).unwrap();
    fs::write(repo.join(".claude/agents/reviewer.md"), format!("---\nname: rev{title}iewer\ndescription: reviews\nmemory: project\n---\nYou review.\n")).unwrap();

    let list = no_terminal_controls(&run(&h, &repo, &["memories", "list"], None), "memories list");
    assert!(list.contains("deploy\\u{001b}[2J.md") && list.contains("how we deploy \\u{001b}]0;PWNED\\u{0007} \\u{001b}[2J"), "{list}");
    let health = no_terminal_controls(&run(&h, &repo, &["memories", "health"], None), "memories health");
    assert!(health.contains("no index line: deploy\\u{001b}[2J.md"), "{health}");
    let agents = no_terminal_controls(&run(&h, &repo, &["agents"], None), "agents");
    assert!(agents.starts_with("rev\\u{001b}]0;PWNED\\u{0007}iewer  (project, "), "{agents}");
    let recall = no_terminal_controls(&run(&h, &repo, &["recall", "how we deploy on Fridays", "--provider", "offline"], None), "recall");
    assert!(recall.contains("deploy\\u{001b}[2J.md \u{2014} deploy\\u{001b}]0;PWNED\\u{0007}"), "{recall}");
    // The fix quotes the index line it adds, name and description included.
    let fixed = no_terminal_controls(&run(&h, &repo, &["memories", "health", "--fix"], None), "memories health --fix");
    assert!(fixed.contains("added to MEMORY.md"), "{fixed}");
}
