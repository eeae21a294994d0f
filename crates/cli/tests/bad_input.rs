//! Bad input on the command line, as a new user or an attacker gives it: each must end in one
//! clear error that says what to do, with a non-zero exit, and leave every file as it was.
//! Each test runs the real `mneme` binary in a hermetic home.

mod common;

use mneme_testsupport::{topic, wait, TestHome};
use std::fs;
use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_mneme");

fn cmd(h: &TestHome, cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = mneme_testsupport::command_in(BIN, h);
    cmd.current_dir(cwd).arg("--managed-dir").arg(h.root.join("managed")).args(args);
    cmd
}

fn run(h: &TestHome, cwd: &Path, args: &[&str], stdin: Option<&str>) -> Output {
    mneme_testsupport::output_with_stdin(cmd(h, cwd, args), stdin.map(str::as_bytes))
}

/// Runs `cmd` to the end, or kills it after `secs` and fails the test: a command that waits for
/// ever on bad input is the bug some of these tests catch.
fn finishes_within(mut cmd: Command, secs: u64, what: &str) -> Output {
    wait::command_within(Duration::from_secs(secs), cmd.stdin(Stdio::null())).unwrap_or_else(|| panic!("{what}: still running after {secs} s (killed)"))
}

/// The one-line error of a run that must fail, checked to carry no Rust debug print, no bare
/// OS error and no raw terminal escape.
fn clean_error(out: Output, args: &[&str]) -> String {
    let err = common::one_line_error(out, args);
    assert!(!err.contains("os error"), "a bare OS error: {err}");
    assert!(!err.contains("Os {"), "a debug print: {err}");
    assert!(!err.contains("panicked"), "a panic: {err}");
    assert!(!err.contains('\u{1b}'), "a raw escape: {err:?}");
    err
}

fn project() -> (TestHome, PathBuf, PathBuf) {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let mem = h.memdir_for(&repo);
    fs::create_dir_all(&mem).unwrap();
    fs::write(mem.join("tabs.md"), topic("tabs", "Use tabs", "feedback", "Always indent with tabs.")).unwrap();
    fs::write(mem.join("MEMORY.md"), "- [tabs](tabs.md) — Use tabs\n").unwrap();
    (h, repo, mem)
}

fn mkfifo(p: &Path) {
    let status = Command::new("mkfifo").arg(p).status().expect("mkfifo runs");
    assert!(status.success());
}

/// A FIFO where ~/.claude/settings.json should be: `settings auto-memory off` read it and
/// waited for a writer for ever. Now each settings change is refused at once, saying what is
/// there, and the FIFO is left in place.
#[test]
fn a_settings_change_over_a_fifo_is_refused_at_once() {
    let (h, repo, _) = project();
    let settings = h.config_home().join("settings.json");
    mkfifo(&settings);
    for args in [&["settings", "auto-memory", "off"][..], &["settings", "auto-dream", "on"], &["settings", "memory-dir", "/tmp/somewhere"]] {
        let out = finishes_within(cmd(&h, &repo, args), 20, &format!("mneme {args:?} over a FIFO"));
        let err = clean_error(out, args);
        assert!(err.contains("settings.json is not a plain file") && err.contains("Move it aside"), "{err}");
        assert!(err.contains("nothing was changed"), "{err}");
        assert!(fs::symlink_metadata(&settings).unwrap().file_type().is_fifo(), "the FIFO is left alone");
    }
}

/// A folder where settings.json should be: the write said "Is a directory (os error 21)".
#[test]
fn a_settings_change_over_a_folder_says_it_is_a_folder() {
    let (h, repo, _) = project();
    let settings = h.config_home().join("settings.json");
    fs::create_dir(&settings).unwrap();
    let args = ["settings", "auto-dream", "on"];
    let err = clean_error(run(&h, &repo, &args, None), &args);
    assert!(err.contains("settings.json is a folder") && err.contains("Move it aside"), "{err}");
    assert!(settings.is_dir() && fs::read_dir(&settings).unwrap().next().is_none(), "nothing was written into it");
}

/// `memories save` with nothing on standard input (`< /dev/null`, a closed pipe) emptied the
/// memory and answered "saved". Now it is refused and the file keeps its text.
#[test]
fn saving_an_empty_standard_input_keeps_the_memory() {
    let (h, repo, mem) = project();
    let before = fs::read(mem.join("tabs.md")).unwrap();
    let shown = common::succeeded(run(&h, &repo, &["memories", "show", "tabs", "--json"], None), &["memories", "show"]);
    let revision = serde_json::from_str::<serde_json::Value>(&shown).unwrap()["revision"].as_str().unwrap().to_string();
    for stdin in [None, Some(""), Some("  \n\n")] {
        let args = ["memories", "save", "tabs", "--revision", &revision];
        let err = clean_error(run(&h, &repo, &args, stdin), &args);
        assert!(err.contains("standard input held no text") && err.contains("left as it is"), "{err}");
        assert!(err.contains("mneme memories rm"), "says how to delete instead: {err}");
        assert_eq!(fs::read(mem.join("tabs.md")).unwrap(), before, "the memory keeps its text");
    }
}

/// A revision that is not one: the shared message said "reload the file", which the command
/// line cannot do; it now names the command that gives the revision.
#[test]
fn a_made_up_revision_says_where_to_get_one() {
    let (h, repo, mem) = project();
    let before = fs::read(mem.join("tabs.md")).unwrap();
    let args = ["memories", "save", "tabs", "--revision", "abc"];
    let err = clean_error(run(&h, &repo, &args, Some("---\nname: tabs\n---\nnew\n")), &args);
    assert!(err.contains("\"abc\"") && err.contains("mneme memories show tabs.md --json"), "{err}");
    assert!(!err.to_lowercase().contains("reload"), "{err}");
    assert_eq!(fs::read(mem.join("tabs.md")).unwrap(), before);
}

/// A memory file that is not UTF-8 is refused with the command that converts it; the revision
/// hint the command line gives a made-up revision ("`mneme memories show … --json` gives the
/// current revision") was appended to this refusal too, where the revision was not the problem.
#[test]
fn saving_over_a_file_that_is_not_utf8_names_the_conversion_not_the_revision() {
    let (h, repo, mem) = project();
    let latin = b"---\nname: tabs\ndescription: Use tabs\ntype: feedback\n---\n\nCaf\xe9 indents with tabs.\n";
    fs::write(mem.join("tabs.md"), latin).unwrap();
    let shown = common::succeeded(run(&h, &repo, &["memories", "show", "tabs", "--json"], None), &["memories", "show"]);
    let revision = serde_json::from_str::<serde_json::Value>(&shown).unwrap()["revision"].as_str().unwrap().to_string();
    let args = ["memories", "save", "tabs", "--revision", &revision];
    let err = clean_error(run(&h, &repo, &args, Some("---\nname: tabs\n---\nnew\n")), &args);
    assert!(err.contains("tabs.md because it is not UTF-8 text") && err.contains("`iconv -f WINDOWS-1252 -t UTF-8 FILE > FILE.new`"), "{err}");
    assert!(!err.contains("revision"), "{err}");
    assert_eq!(fs::read(mem.join("tabs.md")).unwrap(), latin, "the file keeps its bytes");
}

/// `memories edit NAME` with no change asked for answered "saved" and rewrote nothing; it now
/// says which options change something.
#[test]
fn an_edit_with_nothing_to_change_says_so() {
    let (h, repo, mem) = project();
    let before = fs::read(mem.join("tabs.md")).unwrap();
    let args = ["memories", "edit", "tabs"];
    let err = clean_error(run(&h, &repo, &args, None), &args);
    assert!(err.contains("nothing to change") && err.contains("--description"), "{err}");
    assert_eq!(fs::read(mem.join("tabs.md")).unwrap(), before);
}

/// A trash id that does not exist, or is a path: the message pointed at the app's "trash
/// list"; it now names the command that lists the ids.
#[test]
fn a_wrong_trash_id_names_the_command_that_lists_them() {
    let (h, repo, mem) = project();
    for args in [
        &["memories", "restore", "123-nope"][..],
        &["memories", "restore", "../../etc/passwd"],
        &["memories", "purge", "123-nope"],
        &["memories", "purge", "../../etc/passwd"],
    ] {
        let err = clean_error(run(&h, &repo, args, None), args);
        assert!(err.contains("`mneme memories restore` lists the ids in the trash"), "{err}");
        assert!(!err.to_lowercase().contains("reload"), "{err}");
    }
    assert!(mem.join("tabs.md").is_file());
}

/// CLAUDE_CONFIG_DIR naming a file: every command failed with "Not a directory (os error 20)"
/// on a path under it. It now names the variable.
#[test]
fn a_config_dir_that_is_a_file_names_the_variable() {
    let (h, repo, _) = project();
    let file = h.write("not-a-folder", "x");
    for args in [&["memories", "list"][..], &["settings", "auto-memory", "off"]] {
        let mut c = cmd(&h, &repo, args);
        c.env("CLAUDE_CONFIG_DIR", &file);
        let err = clean_error(c.output().unwrap(), args);
        assert!(err.contains("CLAUDE_CONFIG_DIR is") && err.contains("which is a file"), "{err}");
    }
    assert_eq!(fs::read_to_string(&file).unwrap(), "x");
}

/// ~/.claude is a file (no CLAUDE_CONFIG_DIR): said so, and how to get going again.
#[test]
fn a_claude_folder_that_is_a_file_says_what_to_do() {
    let h = TestHome::new();
    let home = h.root.join("home2");
    fs::create_dir_all(&home).unwrap();
    fs::write(home.join(".claude"), "oops").unwrap();
    let args = ["memories", "list"];
    let mut c = cmd(&h, &h.root, &args);
    c.env_remove("CLAUDE_CONFIG_DIR").env("HOME", &home);
    let err = clean_error(c.output().unwrap(), &args);
    assert!(err.contains("/.claude is a file") && err.contains("Move it aside"), "{err}");
    assert_eq!(fs::read_to_string(home.join(".claude")).unwrap(), "oops");
}

/// Started in a folder that was deleted since: "No such file or directory (os error 2)" with
/// no path. Now the message says it is the current folder and what to do.
#[test]
fn a_deleted_current_folder_is_named_as_such() {
    let (h, _, _) = project();
    let gone = h.root.join("gone");
    fs::create_dir(&gone).unwrap();
    for args in [&["memories", "list"][..], &["dream", "status"], &["context"], &["inbox"], &[]] {
        fs::create_dir_all(&gone).unwrap();
        // A shell enters the folder, removes it, then becomes mneme there.
        let mut c = mneme_testsupport::command_in("sh", &h);
        c.arg("-c")
            .arg("cd \"$1\" && rmdir \"$1\" && shift && exec \"$@\"")
            .arg("sh")
            .arg(&gone)
            .arg(BIN)
            .arg("--managed-dir")
            .arg(h.root.join("managed"))
            .args(args);
        let err = clean_error(c.output().unwrap(), args);
        assert!(err.contains("the current folder") && err.contains("cd to an existing folder"), "{err}");
    }
}

/// A path with terminal escapes (an `autoMemoryDirectory` a cloned dotfile set, a log line)
/// came back raw on standard output in "created …", "autoMemoryDirectory is now …" and the
/// log's "→ path". Now every one is shown escaped.
#[test]
fn paths_and_text_with_escapes_are_shown_escaped() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let evil = format!("{}/mem\u{1b}]0;owned\u{7}\u{1b}[2J", h.root.display());
    let set = ["settings", "memory-dir", evil.as_str()];
    let out = common::succeeded(run(&h, &repo, &set, None), &set);
    assert!(!out.contains('\u{1b}') && out.contains("\\u{001b}"), "{out:?}");
    for args in [
        &["memories", "new", "--name", "tabs", "--description", "Use tabs", "--type", "user", "--body", "Tabs."][..],
        &["memories", "edit", "tabs", "--description", "Tabs always"],
        &["log", "\u{1b}[31mred"],
        &["memories", "rm", "tabs"],
        &["settings"],
        &["settings", "memory-dir"],
    ] {
        let out = run(&h, &repo, args, None);
        assert!(out.status.success(), "mneme {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(!text.contains('\u{1b}') && !text.contains('\u{7}'), "mneme {args:?} printed a raw escape: {text:?}");
    }
}

/// `serve --ui-dir` naming no built UI started anyway and served a "not built" page; it now
/// stops before listening and says what to pass.
#[test]
fn serve_with_a_missing_ui_folder_says_so_instead_of_serving() {
    let (h, repo, _) = project();
    let args = ["serve", "--ui-dir", "/nonexistent/ui/dist"];
    let out = finishes_within(cmd(&h, &repo, &args), 20, "mneme serve --ui-dir <missing>");
    let err = clean_error(out, &args);
    assert!(err.contains("--ui-dir /nonexistent/ui/dist holds no index.html") && err.contains("npm run build:ui"), "{err}");
}

/// A --cwd this user may not enter read as an empty project ("No memories here yet", a
/// context with no CLAUDE.md). Root ignores permissions, so as root the run is made as
/// `nobody` with a copy of the binary it can execute; without setpriv it is skipped.
#[test]
fn a_folder_you_may_not_enter_is_refused() {
    let h = TestHome::new();
    let locked = h.root.join("locked");
    fs::create_dir(&locked).unwrap();
    fs::write(locked.join("CLAUDE.md"), "secret rules\n").unwrap();
    use std::os::unix::fs::PermissionsExt;
    let is_root = rustix::process::geteuid().is_root();
    let mut prefix: Vec<String> = Vec::new();
    let mut bin = PathBuf::from(BIN);
    if is_root {
        if Command::new("setpriv").arg("--version").output().map(|o| !o.status.success()).unwrap_or(true) {
            eprintln!("skipped: running as root without setpriv");
            return;
        }
        // nobody must reach the binary, the home and the folder's parent.
        let copy = h.root.join("bin-mneme");
        fs::copy(BIN, &copy).unwrap();
        bin = copy;
        for d in [&h.root, &h.root.join("home"), &h.config_home()] {
            fs::set_permissions(d, fs::Permissions::from_mode(0o777)).unwrap();
        }
        prefix = ["setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups", "--"].map(String::from).to_vec();
    }
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    let cwd = locked.to_str().unwrap();
    for args in [&["memories", "list", "--cwd", cwd][..], &["context", "--cwd", cwd], &["dream", "status", "--cwd", cwd]] {
        let mut c = match prefix.split_first() {
            Some((first, rest)) => {
                let mut c = Command::new(first);
                c.args(rest).arg(&bin);
                c
            }
            None => Command::new(&bin),
        };
        c.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", h.home())
            .env("CLAUDE_CONFIG_DIR", h.config_home())
            .env("MNEME_DATA_DIR", h.root.join("mneme-data"))
            .current_dir(&h.root)
            .arg("--managed-dir")
            .arg(h.root.join("managed"))
            .args(args)
            .stdin(Stdio::null());
        // The copy was just written: while another test thread forks a child, that child holds
        // the copy's write descriptor until it execs, and executing the copy then fails with
        // "Text file busy" (ETXTBSY). That is the test harness, not mneme: run it again.
        let out = wait::result("a run of the copied binary that is not refused as \"Text file busy\"", || {
            let out = c.output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr).into_owned();
            if err.contains("Text file busy") {
                Err(err)
            } else {
                Ok(out)
            }
        });
        let err = clean_error(out, args);
        assert!(err.contains("you may not open the folder") && err.contains("permission denied"), "{err}");
    }
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
}

/// `mneme recall how do I indent`, unquoted, failed with "unexpected argument 'do'". The words
/// are now the prompt, as if quoted.
#[test]
fn an_unquoted_recall_prompt_is_the_prompt() {
    let (h, repo, _) = project();
    let quoted = run(&h, &repo, &["recall", "how should I indent with tabs", "--provider", "offline"], None);
    let unquoted = run(&h, &repo, &["recall", "how", "should", "I", "indent", "with", "tabs", "--provider", "offline"], None);
    let quoted = common::succeeded(quoted, &["recall", "quoted"]);
    let unquoted = common::succeeded(unquoted, &["recall", "unquoted"]);
    assert_eq!(unquoted, quoted);
    assert!(quoted.contains("tabs.md"), "{quoted}");
}

/// Standard output on a full disk (`mneme … > file`, here /dev/full): `memories list` and
/// `graph --json` panicked ("failed printing to stdout", exit 101), and `context`, whose block
/// is printed without a last line feed, exited 0 with nothing written. Each is now one error
/// line and exit 1; a closed pipe stays quiet (cli.rs checks that).
#[test]
fn a_full_disk_on_standard_output_is_an_error_not_a_panic() {
    let (h, repo, _) = project();
    fs::write(repo.join("CLAUDE.md"), "Repo rules.\n").unwrap();
    for args in [&["memories", "list"][..], &["memories", "list", "--json"], &["graph", "--json"], &["context"], &["dream", "status"]] {
        let full = fs::OpenOptions::new().write(true).open("/dev/full").expect("/dev/full");
        let mut c = cmd(&h, &repo, args);
        c.stdout(full);
        let err = clean_error(c.output().unwrap(), args);
        assert!(err.contains("could not write the answer to standard output: No space left on device"), "{err}");
    }
}

/// A FIFO in place of Mneme's provider settings: `recall`, `dream run` and `settings provider`
/// waited on it for ever. They now stop at once and say what to do; the FIFO stays.
#[test]
fn a_fifo_in_place_of_the_provider_settings_is_refused_at_once() {
    let (h, repo, _) = project();
    let data = h.root.join("mneme-data");
    fs::create_dir_all(&data).unwrap();
    let providers = data.join("providers.json");
    mkfifo(&providers);
    for args in [&["recall", "how should I indent my code"][..], &["dream", "run"], &["settings", "provider", "show"]] {
        let out = finishes_within(cmd(&h, &repo, args), 20, &format!("mneme {args:?} over a FIFO"));
        let err = clean_error(out, args);
        assert!(err.contains("providers.json (Mneme's model provider settings) is not a plain file") && err.contains("Move it aside"), "{err}");
    }
    assert!(fs::symlink_metadata(&providers).unwrap().file_type().is_fifo());
}

/// `--managed-dir` naming a file: the answer blamed the machine's administrator ("Claude Code
/// does not start on this machine … Ask whoever manages this machine"); it now says the flag
/// names no folder.
#[test]
fn a_managed_dir_that_is_a_file_blames_the_flag() {
    let (h, repo, _) = project();
    let file = h.write("managed-file", "{}");
    for args in [&["context"][..], &["memories", "list"]] {
        let mut c = mneme_testsupport::command_in(BIN, &h);
        c.current_dir(&repo).arg("--managed-dir").arg(&file).args(args);
        let err = clean_error(c.output().unwrap(), args);
        assert!(err.contains("--managed-dir") && err.contains("is not a folder"), "{err}");
        assert!(!err.contains("whoever manages"), "{err}");
    }
}
