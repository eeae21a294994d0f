//! The context cache with the real watcher, for a Cowork session's unverified managed files
//! (docs/claude-code-versions.md, rows 87 and 88): whether the session's account could have
//! written a managed file depends on the owner and mode of the file and of every folder on its
//! way down from `/`, not on its text. A `chmod` or `chown` there changes the verdict (and the
//! assembled block's label) without changing a byte, so the kept view must go all the same.
//!
//! Root could write anything, so the verdict only moves for another account: the test runs its
//! body as `nobody` (a child process; as any other user it says so and passes without
//! checking), and the parent, still root, makes each change when the child asks for it.

mod common;

use common::START;
use mneme_api::{ClaudeVersion, ContextRequest, ContextView, CouldWrite, FixedClock, Mneme};
use mneme_live::events::Events;
use mneme_testsupport::{accounts, TestHome};
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

/// Set in the child run as `nobody`: the fixture folder (root's) it judges.
const CHILD: &str = "MNEME_TEST_LIVE_UNVERIFIED_CHILD";

/// What a line of the child's asking starts with; the rest names the change.
const ASK: &str = "mneme-change:";

/// The changes, in the order the child asks for them, as the parent (root) makes them.
fn make_change(fixture: &Path, name: &str) {
    let mode = |p: PathBuf, m: u32| std::fs::set_permissions(&p, std::fs::Permissions::from_mode(m)).unwrap();
    let nobody = Some(accounts::NOBODY);
    match name {
        "folder-above-open" => mode(fixture.join("org"), 0o777),
        "folder-above-closed" => mode(fixture.join("org"), 0o755),
        "top-open" => mode(fixture.to_path_buf(), 0o777),
        "top-closed" => mode(fixture.to_path_buf(), 0o755),
        "file-open" => mode(fixture.join("org/managed/CLAUDE.md"), 0o666),
        "file-closed" => mode(fixture.join("org/managed/CLAUDE.md"), 0o644),
        "managed-given" => std::os::unix::fs::chown(fixture.join("org/managed"), nobody, nobody).unwrap(),
        other => panic!("the child asked for an unknown change {other:?}"),
    }
}

/// Removes the fixture folder however the test ends.
struct Remove(PathBuf);

impl Drop for Remove {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Before, the cache dropped a view only when a file's text (or a name) changed in a folder it
/// watched: the folders above the managed folder were not watched at all, so a folder there
/// made writable left "What Claude sees" calling the file the organization's policy.
#[test]
fn a_permission_change_on_the_way_to_a_managed_file_drops_the_kept_view() {
    if let Some(fixture) = std::env::var_os(CHILD) {
        return as_the_session(PathBuf::from(fixture));
    }
    if !accounts::root_or_skip("judging managed files as another account through the watcher") {
        return;
    }
    // Under `/run` (root's, 0755, as is `/`): below the temporary folder, writable by everyone,
    // every file could have been written by anyone.
    let fixture = PathBuf::from(format!("/run/mneme-live-unverified-{}", std::process::id()));
    let _remove = Remove(fixture.clone());
    std::fs::create_dir_all(fixture.join("org/managed")).unwrap();
    std::fs::write(fixture.join("org/managed/CLAUDE.md"), "Never push to main.\n").unwrap();
    for (p, m) in [("", 0o755), ("org", 0o755), ("org/managed", 0o755), ("org/managed/CLAUDE.md", 0o644)] {
        std::fs::set_permissions(fixture.join(p), std::fs::Permissions::from_mode(m)).unwrap();
    }

    let h = TestHome::new();
    let me = accounts::binary_for_nobody(&h, std::env::current_exe().unwrap().to_str().unwrap());
    let mut cmd = std::process::Command::new(me);
    cmd.args(["--exact", "a_permission_change_on_the_way_to_a_managed_file_drops_the_kept_view", "--test-threads=1", "--nocapture"])
        .env(CHILD, &fixture)
        .current_dir("/")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = accounts::as_nobody(&mut cmd).spawn().unwrap();
    let mut to_child = child.stdin.take().unwrap();
    let mut said = String::new();
    let mut made = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        // libtest prints the test's name before running it, with no line break after it.
        if let Some(name) = line.find(ASK).map(|at| &line[at + ASK.len()..]) {
            make_change(&fixture, name);
            made.push(name.to_string());
            writeln!(to_child, "done").unwrap();
        } else {
            said.push_str(&line);
            said.push('\n');
        }
    }
    let out = child.wait_with_output().unwrap();
    said.push_str(&String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success() && said.contains("1 passed"), "as nobody (changes made: {made:?}): {said}");
    assert_eq!(made.len(), 7, "{made:?}: {said}");
}

/// The test's body, run as `nobody`: a Cowork session of 2.1.337 over a project, the managed
/// folder `fixture/org/managed` (root's), the watcher and its cache running.
fn as_the_session(fixture: PathBuf) {
    // Never left waiting on the parent for good: a parent that stops answering (or a step that
    // hangs) ends the child, which ends the parent's wait for its lines.
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(180));
        eprintln!("the test as nobody did not finish within 180 s");
        std::process::exit(3);
    });
    tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap().block_on(async move {
        let mut home = TestHome::new();
        let repo = home.git_repo("repo");
        let managed = fixture.join("org/managed");
        home.env.managed_dir = managed.clone();
        home.env = home.env.clone().set_var("CLAUDE_CODE_ENTRYPOINT", "remote_cowork");
        let mneme = Mneme::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(START)));
        let (_stop, rx) = watch::channel(false);
        let events = Events::start(&home.env, rx).expect("the watcher starts");
        let req = ContextRequest { cwd: repo, claude_version: Some(ClaudeVersion::new(2, 1, 337)), ..Default::default() };
        let file = managed.join("CLAUDE.md");
        let view = || mneme.context_cached(&req, events.context_cache()).expect("context");
        let verdict = |v: &ContextView| {
            let f = v.files.iter().find(|f| f.path == file).unwrap_or_else(|| panic!("the managed CLAUDE.md loads: {:?}", v.files));
            f.unverified.as_ref().map(|u| u.because.clone())
        };
        // A view the cache keeps (two calls answering the same one), judged as expected.
        let kept = |expected: Option<CouldWrite>| {
            for _ in 0..20 {
                let (a, b) = (view(), view());
                if Arc::ptr_eq(&a, &b) {
                    assert_eq!(verdict(&b), expected, "before the change");
                    return b;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            panic!("no view was kept in 20 tries");
        };
        // Asks the parent for a change, then waits for the view to judge the file anew. No text
        // changes, so only the change's own event can drop the kept view.
        let after = |name: &str, before: Option<CouldWrite>, expected: Option<CouldWrite>| {
            let old = kept(before);
            let mut out = std::io::stdout().lock();
            writeln!(out, "{ASK}{name}").unwrap();
            out.flush().unwrap();
            drop(out);
            let mut line = String::new();
            std::io::stdin().read_line(&mut line).unwrap();
            assert_eq!(line.trim(), "done", "the parent did not make {name}");
            let deadline = Instant::now() + Duration::from_secs(10);
            loop {
                let v = view();
                if verdict(&v) == expected {
                    assert!(!Arc::ptr_eq(&old, &v));
                    // An unverified file's path goes into the block in JSON quotes.
                    let quoted = format!("Contents of \"{}\"", file.display());
                    assert_eq!(v.block.contains(&quoted), expected.is_some(), "{name}: the block agrees: {}", v.block);
                    return;
                }
                assert!(Instant::now() < deadline, "{name}: the view still judges {:?}, not {expected:?}", verdict(&v));
                std::thread::sleep(Duration::from_millis(50));
            }
        };
        let org = fixture.join("org");
        after("folder-above-open", None, Some(CouldWrite::Folder { path: org.clone() }));
        after("folder-above-closed", Some(CouldWrite::Folder { path: org }), None);
        after("top-open", None, Some(CouldWrite::Folder { path: fixture.clone() }));
        after("top-closed", Some(CouldWrite::Folder { path: fixture.clone() }), None);
        after("file-open", None, Some(CouldWrite::File));
        after("file-closed", Some(CouldWrite::File), None);
        after("managed-given", None, Some(CouldWrite::Folder { path: managed.clone() }));
    });
}
