//! `mneme team status|pull|push` on the real binary against a team server on 127.0.0.1:0,
//! signed in with `mneme team login` through the real OS keyring: the files the server accepted
//! and then lost, listed with why and the command that sends them again, pulls killed
//! part-way through a write (SIGXFSZ under `prlimit --fsize`) that leave every file whole and
//! every replaced local edit listed for restoring, and the status shown without a keyring.
//!
//! The server (`mneme_testsupport::team_server`, which `crash_team.rs` runs against too) is a
//! raw HTTP one that acknowledges every push and answers every pull with the entries the test
//! sets, so a push it "loses" is simply not in the next answer (what a server that crashed
//! before its commit, or was restored from backup, answers).
//!
//! The sign-in needs a Secret Service: `scripts/with-keyring.sh`, under which `npm test` runs
//! the workspace's tests, provides one. Where there is none (a plain `cargo test`), each test
//! checks that `mneme team login` says so in one line, and stops there; the status test without
//! a keyring runs either way (its runs get no D-Bus session).
#![cfg(target_os = "linux")]

mod common;

use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::team_server::{checksum, shop_with_origin, signed_in, TeamProject, USER, USER_CODE};
use mneme_testsupport::{write_file, TestHome};
use serde_json::{json as j, Value};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::sync::Arc;

const MNEME: &str = env!("CARGO_BIN_EXE_mneme");
/// The signal a process gets for writing past `RLIMIT_FSIZE`, on Linux.
const SIGXFSZ: i32 = 25;

/// A signed-in project folder and the server it syncs with (the [`TeamProject`]'s fields).
struct Synced(TeamProject);

impl std::ops::Deref for Synced {
    type Target = TeamProject;
    fn deref(&self) -> &TeamProject {
        &self.0
    }
}

/// `mneme ARGS` in the shop against the server at `url`, under a keyring service name no
/// keyring holds, as a machine without a reachable keyring runs it.
fn without_keyring(h: &TestHome, repo: &Path, url: &str, args: &[&str]) -> Output {
    let mut cmd = mneme_testsupport::command_in(MNEME, h);
    cmd.env("MNEME_KEYRING_SERVICE", format!("mneme-cli-no-keyring-{}", std::process::id())).env("TEAM_MEMORY_SYNC_URL", url).current_dir(repo).args(args);
    cmd.output().expect("mneme runs")
}

impl Synced {
    /// Signed in, or `None` where no keyring is reachable and none is required.
    fn start() -> Option<Synced> {
        let s = Synced(TeamProject::new("mneme-cli-team-test"));
        let signed_in = signed_in(s.run(&[], &["team", "login"]))?;
        assert!(signed_in.contains(USER_CODE) && signed_in.ends_with(&format!("Signed in to {} as {USER}.\n", s.server.url)), "{signed_in}");
        Some(s)
    }

    /// `mneme ARGS` in the project folder, with this test's keyring service and server, under
    /// `limit` (`prlimit` options) when given.
    fn run(&self, limit: &[&str], args: &[&str]) -> Output {
        let mut cmd = if limit.is_empty() {
            mneme_testsupport::command_in(MNEME, &self.h)
        } else {
            let mut c = mneme_testsupport::command_in("prlimit", &self.h);
            // No core file: the process is meant to die at the write.
            c.arg("--core=0").args(limit).arg("--").arg(MNEME);
            c
        };
        self.aim(&mut cmd);
        cmd.args(args).output().expect("mneme runs")
    }

    fn ok(&self, args: &[&str]) -> String {
        common::succeeded(self.run(&[], args), args)
    }

    fn status(&self, args: &[&str]) -> Value {
        let mut all = vec!["team", "status", "--json"];
        all.extend_from_slice(args);
        serde_json::from_str(&self.ok(&all)).expect("json")
    }

    /// The sync state file, which holds how often the server lost each file.
    fn state_file(&self) -> PathBuf {
        let dir = self.h.root.join("mneme-data/team-sync");
        let files: Vec<PathBuf> = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).filter(|p| p.extension().is_some_and(|x| x == "json")).collect();
        assert_eq!(files.len(), 1, "{files:?}");
        files[0].clone()
    }

    /// Names in `team/` (at any depth, relative), so a temporary file left behind shows.
    fn team_names(&self) -> Vec<String> {
        let mut names: Vec<String> = mneme_testsupport::files_under(&self.team).iter().map(|p| p.strip_prefix(&self.team).unwrap().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }
}

impl Drop for Synced {
    fn drop(&mut self) {
        // The token goes from this test's keyring service.
        let _ = self.run(&[], &["team", "logout"]);
    }
}

/// A file the server accepted and lost is listed by `mneme team status`, with why and the
/// command that sends it again; held back once the server has lost it three times; gone from
/// the list once pushed by hand.
#[test]
fn status_lists_the_files_the_server_lost_with_the_command_that_sends_them() {
    let Some(s) = Synced::start() else { return };
    write_file(&s.team.join("deploy.md"), "deploy from main");
    assert!(s.ok(&["team", "push"]).starts_with("Pushed: 1 files uploaded in 1 request"));
    assert_eq!(s.status(&[])["lostFiles"], j!([]), "acknowledged, not lost yet");

    // The server's answer no longer holds it: lost once, sent again by the next push.
    let pulled: Value = serde_json::from_str(&s.ok(&["team", "pull", "--json"])).unwrap();
    assert_eq!(pulled["forgotten"], j!(["deploy.md"]));
    let status = s.status(&[]);
    let lost = &status["lostFiles"];
    assert_eq!(lost.as_array().unwrap().len(), 1, "{lost}");
    assert_eq!((&lost[0]["key"], &lost[0]["timesLost"], &lost[0]["heldBack"], &lost[0]["sentAgain"]), (&j!("deploy.md"), &j!(1), &j!(false), &j!(false)));
    assert_eq!(lost[0]["command"], "mneme team push");
    assert!(lost[0]["why"].as_str().unwrap().contains("lost it once; the copy here is kept, and the next push sends it again"), "{lost}");
    // The api's view is all still there.
    assert_eq!(status["repo"], "acme/shop");
    assert_eq!(status["state"]["lostPushes"]["deploy.md"]["times"], 1);
    let text = s.ok(&["team", "status"]);
    assert!(
        text.contains("\nLost:         deploy.md — the team server accepted it from here and then lost it once; the copy here is kept, and the next push sends it again. Send it now: mneme team push\n"),
        "{text}"
    );

    // Lost twice more after the watcher's automatic pushes (which the CLI has no way to make):
    // the fixture is the state those pulls leave, three losses of the same content.
    let path = s.state_file();
    let mut state: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    state["lostPushes"]["deploy.md"]["times"] = j!(3);
    std::fs::write(&path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();

    // Named with --cwd from elsewhere, the command names the folder too.
    let repo = s.repo.to_str().unwrap();
    let status = s.status(&["--cwd", repo]);
    let lost = &status["lostFiles"];
    assert_eq!((&lost[0]["key"], &lost[0]["timesLost"], &lost[0]["heldBack"]), (&j!("deploy.md"), &j!(3), &j!(true)));
    assert_eq!(lost[0]["command"], format!("mneme team push --cwd {repo}"));
    assert!(lost[0]["why"].as_str().unwrap().contains("lost it 3 times in a row, so automatic pushes no longer send it"), "{lost}");
    // With the global --managed-dir too (it decides the memory folder, so it goes along).
    let managed = s.h.root.join("managed policy");
    std::fs::create_dir_all(&managed).unwrap();
    let status: Value = serde_json::from_str(&s.ok(&["--managed-dir", managed.to_str().unwrap(), "team", "status", "--json"])).unwrap();
    assert_eq!(status["lostFiles"][0]["command"], format!("mneme --managed-dir '{}' team push", managed.display()));
    let text = s.ok(&["team", "status"]);
    let line = text.lines().find(|l| l.starts_with("Held back:    deploy.md — ")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.ends_with("then push it by hand (editing it also sends it). Send it again: mneme team push"), "{line}");

    // The command it names sends it, and the list is empty again.
    assert!(s.ok(&["team", "push"]).starts_with("Pushed: 1 files uploaded in 1 request"));
    assert_eq!(s.status(&[])["lostFiles"], j!([]));
    assert_eq!(std::fs::read_to_string(s.team.join("deploy.md")).unwrap(), "deploy from main", "the file is never touched");
}

/// A pull killed by SIGXFSZ while it writes a pulled file leaves the old file whole and no
/// partial copy in the team folder; killed while it saves the sync state, it leaves the old
/// state. Either way the next pull goes through.
#[test]
fn a_pull_killed_at_a_write_leaves_old_or_new_content_and_the_next_pull_works() {
    let Some(s) = Synced::start() else { return };
    let old = "old line of the runbook\n".repeat(3_000);
    let new = "new line of the runbook\n".repeat(3_000);
    s.server.entries.lock().unwrap().insert("runbook.md".into(), old.clone());
    assert!(s.ok(&["team", "pull"]).starts_with("Pulled: 1 of 1 entries written"));

    // The file is 72 KB; no file may grow past 20 KB, so the write of its new version dies.
    s.server.entries.lock().unwrap().insert("runbook.md".into(), new.clone());
    let killed = s.run(&["--fsize=20000"], &["team", "pull"]);
    assert_eq!(killed.status.signal(), Some(SIGXFSZ), "killed at the write: {killed:?}");
    assert_eq!(std::fs::read_to_string(s.team.join("runbook.md")).unwrap(), old, "the old version, whole");
    let pulled = s.ok(&["team", "pull"]);
    assert!(pulled.starts_with("Pulled: 1 of 1 entries written"), "{pulled}");
    assert_eq!(std::fs::read_to_string(s.team.join("runbook.md")).unwrap(), new);
    assert_eq!(s.team_names(), ["runbook.md"], "nothing of the killed write is left in the team folder");

    // Many small files: each is written, the state naming them all is not.
    let before = std::fs::read(s.state_file()).unwrap();
    {
        let mut entries = s.server.entries.lock().unwrap();
        for i in 0..400 {
            entries.insert(format!("notes/n{i:03}.md"), format!("note {i}\n"));
        }
    }
    let killed = s.run(&["--fsize=20000"], &["team", "pull"]);
    assert_eq!(killed.status.signal(), Some(SIGXFSZ), "killed at the state's write: {killed:?}");
    assert_eq!(std::fs::read(s.state_file()).unwrap(), before, "the old state, whole");
    let pulled = s.ok(&["team", "pull"]);
    assert!(pulled.starts_with("Pulled: "), "{pulled}");
    let status = s.status(&[]);
    assert_eq!(status["state"]["serverChecksums"].as_object().unwrap().len(), 401, "{status}");
    assert_eq!(status["state"]["conflicts"], j!([]), "files the killed pull wrote are the server's, not local edits");
    assert_eq!(std::fs::read_to_string(s.team.join("notes/n399.md")).unwrap(), "note 399\n");
    assert_eq!(s.team_names().len(), 401);
    let data: Vec<String> = mneme_testsupport::files_under(&s.h.root.join("mneme-data")).iter().map(|p| p.display().to_string()).collect();
    assert!(data.iter().all(|p| !p.ends_with(".tmp")), "{data:?}");
}

/// A pull that replaced a local edit (its copy kept in the trash) and was then killed by
/// SIGXFSZ at the sync state's save still lists the edit for restoring: the record was saved
/// before the file was replaced. The status lists it at once, the next pull records it for
/// good, and it is listed once.
#[test]
fn a_pull_killed_after_replacing_a_local_edit_still_lists_it_for_restoring() {
    let Some(s) = Synced::start() else { return };
    s.server.entries.lock().unwrap().insert("deploy.md".into(), "deploy from main\n".into());
    assert!(s.ok(&["team", "pull"]).starts_with("Pulled: 1 of 1 entries written"));
    write_file(&s.team.join("deploy.md"), "deploy from my branch\n");

    // The edit is replaced first (keys in order), then 400 small files; the state naming them
    // all is past the 20 KB limit, so the pull dies at its last save.
    {
        let mut entries = s.server.entries.lock().unwrap();
        entries.insert("deploy.md".into(), "deploy from release\n".into());
        for i in 0..400 {
            entries.insert(format!("notes/n{i:03}.md"), format!("note {i}\n"));
        }
    }
    let killed = s.run(&["--fsize=20000"], &["team", "pull"]);
    assert_eq!(killed.status.signal(), Some(SIGXFSZ), "killed at the state's write: {killed:?}");
    assert_eq!(std::fs::read_to_string(s.team.join("deploy.md")).unwrap(), "deploy from release\n", "the server's version was written");
    assert_eq!(std::fs::read_to_string(s.team.join("notes/n399.md")).unwrap(), "note 399\n");

    let replaced = |status: &Value| -> Vec<String> {
        status["state"]["conflicts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["key"] == "deploy.md" && c["kind"] == "pulledOverLocalEdit")
            .map(|c| c["trashId"].as_str().expect("a trash entry").to_string())
            .collect()
    };
    let listed = replaced(&s.status(&[]));
    assert_eq!(listed.len(), 1, "listed for restoring before any other pull");
    let trash_copy = mneme_testsupport::files_under(&s.h.root.join("mneme-data/trash"))
        .into_iter()
        .find(|p| std::fs::read_to_string(p).is_ok_and(|t| t == "deploy from my branch\n"))
        .expect("the edit is in the trash");
    assert!(trash_copy.to_string_lossy().contains(&listed[0]), "{} holds {}", listed[0], trash_copy.display());

    let pulled: Value = serde_json::from_str(&s.ok(&["team", "pull", "--json"])).unwrap();
    assert_eq!(pulled["conflicts"].as_array().unwrap().iter().map(|c| c["trashId"].clone()).collect::<Vec<_>>(), [j!(listed[0])], "{pulled}");
    let status = s.status(&[]);
    assert_eq!(replaced(&status), listed, "recorded once, with the copy the killed pull kept");
    assert_eq!(status["state"].get("replacing"), None, "nothing is left pending: {status}");
    assert_eq!(status["state"]["serverChecksums"].as_object().unwrap().len(), 401);
}

/// With a team server configured and no OS keyring reachable (a plain `cargo test`; the runs
/// here get no D-Bus session even under scripts/with-keyring.sh), `mneme team status` still
/// shows the team folder, the last pull and the files the server lost, says on the sign-in line
/// that the keyring cannot be reached and what to do, and exits 0; `--json` says it in
/// `keyringProblem`, the Team screen's field and words.
#[test]
fn status_without_a_keyring_shows_what_is_on_disk_and_what_to_do() {
    let (url, _) = serve(|_| json("500 Internal Server Error", r#"{"error":{"message":"not asked"}}"#));
    let h = TestHome::new();
    let repo = shop_with_origin(&h);
    let team = h.memdir_for(&repo).join("team");
    write_file(&team.join("deploy.md"), "deploy from main");
    let run = |args: &[&str]| without_keyring(&h, &repo, &url, args);
    let err = common::one_line_error(run(&["team", "pull"]), &["team", "pull"]);
    assert!(err.contains("no OS keyring is reachable"), "{err}");
    // What a pull records after the server lost a push from here (the fixture the first test
    // makes through a server).
    let dir = h.root.join("mneme-data/team-sync");
    let path = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|x| x == "json")).expect("the failed pull is recorded");
    let mut state: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    state["lostPushes"] = j!({ "deploy.md": { "hash": checksum("deploy from main"), "times": 1, "resent": false } });
    std::fs::write(&path, serde_json::to_vec_pretty(&state).unwrap()).unwrap();

    let text = common::succeeded(run(&["team", "status"]), &["team", "status"]);
    let signed_in = text.lines().find(|l| l.starts_with("Signed in:")).unwrap_or_else(|| panic!("{text}"));
    assert!(signed_in.starts_with("Signed in:    unknown, pulls and pushes need the keyring: The OS keyring failed: no OS keyring is reachable ("), "{signed_in}");
    assert!(signed_in.contains("start a Secret Service such as gnome-keyring"), "says what to do: {signed_in}");
    assert!(text.contains("\nRepository:   acme/shop\n") && text.contains(&format!("\nServer:       {url} (env:TEAM_MEMORY_SYNC_URL)\n")), "{text}");
    assert!(text.contains("\nLast pull:    ") && text.contains(" — failed: The OS keyring failed: no OS keyring is reachable"), "{text}");
    assert!(text.contains("\nLost:         deploy.md — the team server accepted it from here and then lost it once;"), "{text}");

    let out = run(&["team", "status", "--json"]);
    let status: Value = serde_json::from_str(&common::succeeded(out, &["team", "status", "--json"])).unwrap();
    assert_eq!(status["signedIn"], false);
    assert!(signed_in.ends_with(status["keyringProblem"].as_str().unwrap_or_else(|| panic!("{status}"))), "the same words: {status}");
    assert_eq!(status["lostFiles"][0]["key"], "deploy.md");
    assert_eq!(status["state"]["lastPull"]["ok"], false);
}

/// A sync state file that cannot be read (not JSON, or a FIFO, which a plain read would wait on
/// for ever) is shown by `mneme team status` as one line saying so and what to do, not as
/// "never" synced; the folder, repository, server and sign-in lines are still shown, the run
/// exits 0, and `--json` says it in `stateProblem`, the Team screen's field and words.
#[test]
fn status_with_an_unreadable_sync_state_says_so_and_shows_the_rest() {
    let (url, _) = serve(|_| json("500 Internal Server Error", r#"{"error":{"message":"not asked"}}"#));
    let h = TestHome::new();
    let repo = shop_with_origin(&h);
    let dir = h.root.join("mneme-data/team-sync");
    let run = {
        let (h, repo, url) = (Arc::new(h), repo.clone(), url.clone());
        move |args: &[&str]| without_keyring(&h, &repo, &url, args)
    };
    // A pull without a keyring fails but records itself, which puts the state file in place.
    assert!(!run(&["team", "pull"]).status.success());
    let path = std::fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).find(|p| p.extension().is_some_and(|x| x == "json")).expect("the failed pull is recorded");

    std::fs::write(&path, "{ not json").unwrap();
    let text = common::succeeded(run(&["team", "status"]), &["team", "status"]);
    let line = text.lines().find(|l| l.starts_with("Sync state:")).unwrap_or_else(|| panic!("{text}"));
    assert!(line.starts_with("Sync state:   unreadable: Mneme's team sync state file ") && line.contains("could not be used: it does not parse"), "{line}");
    assert!(line.contains("delete it to start afresh"), "says what to do: {line}");
    assert!(!text.contains("Last pull:    never"), "not shown as never synced: {text}");
    assert!(text.contains("\nRepository:   acme/shop\n") && text.contains(&format!("\nServer:       {url} (env:TEAM_MEMORY_SYNC_URL)\n")), "{text}");
    assert!(text.contains("\nSigned in:    unknown, pulls and pushes need the keyring"), "{text}");
    let status: Value = serde_json::from_str(&common::succeeded(run(&["team", "status", "--json"]), &["team", "status", "--json"])).unwrap();
    assert!(line.ends_with(status["stateProblem"].as_str().unwrap_or_else(|| panic!("{status}"))), "the same words: {status}");
    assert_eq!(status["state"], Value::Null);

    std::fs::remove_file(&path).unwrap();
    mneme_testsupport::special_files::mkfifo(&path);
    let text = mneme_testsupport::special_files::within("mneme team status with a FIFO as its sync state", {
        let run = run.clone();
        move || common::succeeded(run(&["team", "status"]), &["team", "status"])
    });
    assert!(text.contains("\nSync state:   unreadable: ") && text.contains("it is a named pipe (FIFO), not a plain file; delete it to start afresh"), "{text}");
}
