//! Team sync while a drive stops answering (a network share whose server went away, a FUSE
//! daemon that hangs), made real as root: an exFAT image mounted through FUSE
//! (`mneme_testsupport::exfat`) whose daemon is stopped, and always continued before the drive
//! is unmounted (`mneme_testsupport::hung_drive`). The team loop is one thread; before, one look at a folder on the hung drive
//! held every project's sync until the drive answered. As any other user the tests say so and
//! pass without checking (CI runs them as root).
//!
//! The team server is a loopback one (127.0.0.1:0) that holds nothing yet: every pull gets
//! 404 and every push is taken. Each request names its repository, so the pulls tell which
//! project is still syncing.

#![cfg(target_os = "linux")]

use mneme_core::{Clock, SystemClock};
use mneme_model::Cancel;
use mneme_scheduler::team::TeamLoop;
use mneme_scheduler::{Folders, JobKind, Outcome, Reporter, RunLog, RunRecord};
use mneme_team::auth::{CredentialStore, Credentials, MemoryStore};
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::hung_drive::{self, GIVE_UP, NEVER};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::{git, wait, TestHome};
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Arc, Mutex};
use std::time::Duration;

struct World {
    home: TestHome,
    url: String,
    seen: Arc<Mutex<Vec<String>>>,
    data: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let (url, seen) = serve(|req| {
            if req.starts_with("PUT ") {
                json("200 OK", r#"{"checksum":"sha256:1"}"#)
            } else {
                json("404 Not Found", r#"{"error":{"message":"no team memory yet"}}"#)
            }
        });
        let mut home = TestHome::new();
        home.env = home.env.clone().set_var("TEAM_MEMORY_SYNC_URL", &url);
        World { home, url, seen, data: tempfile::tempdir().unwrap() }
    }

    /// A clone of github.com/acme/`name` at `dir` (made).
    fn repo(&self, dir: &Path, name: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        git(dir, &["init", "-q"]);
        git(dir, &["remote", "add", "origin", &format!("https://github.com/acme/{name}.git")]);
        dir.to_path_buf()
    }

    /// The loop over `folders`, signed in, looking and pulling at every turn (250 ms).
    fn team_loop(&self, folders: Vec<PathBuf>) -> (TeamLoop, Reporter) {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let reporter = Reporter::new(clock.clone(), RunLog::in_data_dir(self.data.path()));
        let store = Arc::new(MemoryStore::default());
        let c = Credentials { access_token: "t0k3n".into(), refresh_token: None, expires_at_ms: u64::MAX / 2, user: Some("ada".into()), extra: Default::default() };
        store.save(&self.url, &c).unwrap();
        let credentials: Arc<dyn CredentialStore> = store;
        let l = TeamLoop { env: self.home.env.clone(), clock, reporter: reporter.clone(), folders: Folders::Given(folders), pull_every: Duration::from_millis(100), credentials: Some(credentials) };
        (l, reporter)
    }

    /// The pulls of github.com/acme/`name` the server has answered so far.
    fn pulls(&self, name: &str) -> usize {
        let line = format!("GET /api/claude_code/team_memory?repo=acme%2F{name} ");
        self.seen.lock().unwrap().iter().filter(|r| r.starts_with(&line)).count()
    }

    /// Waits until github.com/acme/`name` has been pulled `more` times after now.
    fn wait_for_pulls(&self, name: &str, more: usize, why: &str) {
        let want = self.pulls(name) + more;
        wait_until(&format!("{more} more pulls of acme/{name} ({why})"), || self.pulls(name) >= want);
    }

    /// The pushes that carried `content`.
    fn pushes_of(&self, content: &str) -> usize {
        self.seen.lock().unwrap().iter().filter(|r| r.starts_with("PUT ") && r.contains(content)).count()
    }
}

/// Waits for `done` for at most `hung_drive::GIVE_UP` (a guard against hanging, not a timing
/// assertion), failing with `what`.
fn wait_until(what: &str, done: impl FnMut() -> bool) {
    wait::until_within(GIVE_UP, &format!("{what} (did the team loop hang with the drive?)"), done);
}

/// Runs the loop on a thread of its own; the answer stops it.
struct Running {
    cancel: Cancel,
    ended: mpsc::Receiver<()>,
}

fn run(l: TeamLoop) -> Running {
    let cancel = Cancel::new();
    let c = cancel.clone();
    let (tx, ended) = mpsc::channel();
    std::thread::spawn(move || {
        l.run(c);
        let _ = tx.send(());
    });
    Running { cancel, ended }
}

impl Running {
    /// Cancels the loop and waits for it to end (its watchers' last pushes included).
    fn stop(self) {
        self.cancel.cancel();
        self.ended.recv_timeout(GIVE_UP).expect("the team loop did not end within 30 s of its cancel: its shutdown hung with the drive");
    }
}

fn team_runs(reporter: &Reporter) -> Vec<RunRecord> {
    reporter.log().recent(1000, Some(JobKind::TeamSync)).unwrap()
}

/// The skipped runs recorded for `folder`.
fn skipped_for(reporter: &Reporter, folder: &Path) -> Vec<Outcome> {
    team_runs(reporter).into_iter().filter(|r| r.target == folder.display().to_string()).map(|r| r.outcome).collect()
}

fn not_answering(folder: &Path) -> Outcome {
    Outcome::Skipped {
        reason: format!(
            "the drive holding {} is not answering (a network share or USB drive that hangs?); Mneme looks again every 1 s and syncs once it answers",
            folder.display()
        ),
    }
}

/// A project on a drive that does not answer when the loop starts: the loop records it as
/// skipped, once however many looks it lasts, keeps pulling the other project (listed after
/// it), and starts syncing the hung one once its drive answers again. Before, the first look
/// stopped at the hung project (its settings and git config) until the drive answered, and no
/// project synced.
#[test]
fn a_project_on_a_hung_drive_is_skipped_and_the_others_keep_syncing() {
    let w = World::new();
    let Some(drive) = Exfat::mount(&w.home.root.join("drives/stick")) else { return };
    let stick = w.repo(&drive.path().join("proj"), "stick");
    let other = w.repo(&w.home.root.join("zeta"), "shop");

    let hung = hung_drive::stop(&drive, &stick, NEVER);
    let (l, reporter) = w.team_loop(vec![stick.clone(), other.clone()]);
    let running = run(l);

    w.wait_for_pulls("shop", 3, "the project whose drive answers");
    wait_until("the hung project recorded as skipped", || !skipped_for(&reporter, &stick).is_empty());
    // More looks while it lasts (one every pull): nothing more to say.
    w.wait_for_pulls("shop", 3, "the project whose drive answers, later");
    assert_eq!(skipped_for(&reporter, &stick), [not_answering(&stick)], "said once: {:?}", team_runs(&reporter));
    assert_eq!(w.pulls("stick"), 0, "the hung project was pulled");
    assert!(!hung.rescued(), "the team loop hung with the drive");

    // The drive answers again: the project syncs from the next look on.
    drop(hung);
    w.wait_for_pulls("stick", 2, "the project whose drive answers again");
    let team = w.home.memdir_for(&stick).join("team");
    std::fs::write(team.join("deploy.md"), "Deploy from the release branch.").unwrap();
    wait_until("the stick's team file pushed", || w.pushes_of("Deploy from the release branch.") == 1);
    running.stop();
    assert!(!team_runs(&reporter).iter().any(|r| matches!(r.outcome, Outcome::Failed { .. })), "{:?}", team_runs(&reporter));
    drop(drive);
}

/// A project whose memory folder is on a drive that does not answer (`autoMemoryDirectory` in
/// its local settings): while it lasts its watcher does not start, or once started its
/// scheduled pulls are skipped, each time said once; the other project's pulls go on, and the
/// loop's shutdown does not wait for the last push of a change made there. Before, the watcher's
/// start, the first pull after the hang and the shutdown's push each held the loop until the
/// drive answered.
#[test]
fn a_memory_folder_on_a_hung_drive_holds_neither_other_pulls_nor_the_shutdown() {
    let w = World::new();
    let Some(drive) = Exfat::mount(&w.home.root.join("drives/stick")) else { return };
    let alpha = w.repo(&w.home.root.join("alpha"), "stick");
    let memory = drive.path().join("alpha-memory");
    w.home.write(alpha.join(".claude/settings.local.json"), &format!(r#"{{"autoMemoryDirectory": "{}"}}"#, memory.display()));
    assert_eq!(mneme_team::resolve_target(&w.home.env, &alpha).memory_dir, memory);
    let other = w.repo(&w.home.root.join("zeta"), "shop");

    // Not answering from the start: no watcher for it (it would pull into the folder).
    let hung = hung_drive::stop(&drive, &memory, NEVER);
    let (l, reporter) = w.team_loop(vec![alpha.clone(), other.clone()]);
    let running = run(l);
    w.wait_for_pulls("shop", 3, "the project whose memory folder answers");
    wait_until("the hung memory folder recorded as skipped", || !skipped_for(&reporter, &memory).is_empty());
    w.wait_for_pulls("shop", 3, "the project whose memory folder answers, later");
    assert_eq!(skipped_for(&reporter, &memory), [not_answering(&memory)], "said once: {:?}", team_runs(&reporter));
    assert_eq!(w.pulls("stick"), 0, "the hung memory folder was pulled into");
    assert!(!hung.rescued(), "the team loop hung with the drive");

    // It answers: its watcher starts and its scheduled pulls run.
    drop(hung);
    w.wait_for_pulls("stick", 2, "the watcher started and a scheduled pull ran");

    // A change waiting for its push (the watcher waits 2 s after a change), then the drive
    // stops answering again.
    std::fs::write(memory.join("team/deploy.md"), "Deploy from the release branch.").unwrap();
    let hung = hung_drive::stop(&drive, &memory, NEVER);
    w.wait_for_pulls("shop", 3, "the project whose memory folder answers");
    wait_until("the hung memory folder recorded as skipped again", || skipped_for(&reporter, &memory).len() == 2);
    w.wait_for_pulls("shop", 3, "the project whose memory folder answers, later");
    assert_eq!(skipped_for(&reporter, &memory), [not_answering(&memory), not_answering(&memory)], "said once more: {:?}", team_runs(&reporter));
    let stick_pulls = w.pulls("stick");
    w.wait_for_pulls("shop", 2, "the project whose memory folder answers, later still");
    assert_eq!(w.pulls("stick"), stick_pulls, "the hung memory folder was pulled into");

    running.stop();
    assert!(!hung.rescued(), "the team loop hung with the drive");
    drop(hung);
    drop(drive);
}
