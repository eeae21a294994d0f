//! The team-sync loop against folders of a github.com repository with a server on 127.0.0.1
//! where nothing answers (every pull fails, so each watcher that starts says so with one failed
//! run): one watcher per memory folder, a sign-in made after the start is picked up, and a
//! keyring that cannot be read is reported once instead of being taken for "signed out".

use mneme_core::{Clock, SystemClock};
use mneme_scheduler::team::{sync_targets, TeamLoop};
use mneme_scheduler::{Folders, JobKind, Outcome, Reporter, RunLog, RunRecord};
use mneme_team::auth::{CredentialStore, Credentials};
use mneme_team::SyncError;
use mneme_testsupport::{git, refused_port, RefusedPort, TestHome};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Sign-ins held in memory, with how often they were read; `locked` answers as a keyring that
/// refuses access does.
#[derive(Default)]
struct Store {
    credentials: Mutex<HashMap<String, Credentials>>,
    loads: AtomicUsize,
    locked: AtomicBool,
}

impl CredentialStore for Store {
    fn load(&self, server: &str) -> Result<Option<Credentials>, SyncError> {
        self.loads.fetch_add(1, Ordering::SeqCst);
        if self.locked.load(Ordering::SeqCst) {
            return Err(SyncError::Keychain(mneme_keychain::KeychainError::Denied("the collection is locked".into())));
        }
        Ok(self.credentials.lock().unwrap().get(server).cloned())
    }
    fn save(&self, server: &str, c: &Credentials) -> Result<(), SyncError> {
        self.credentials.lock().unwrap().insert(server.into(), c.clone());
        Ok(())
    }
    fn remove(&self, server: &str) -> Result<(), SyncError> {
        self.credentials.lock().unwrap().remove(server);
        Ok(())
    }
}

impl Store {
    fn sign_in(&self, server: &str) {
        let c = Credentials { access_token: "token".into(), refresh_token: None, expires_at_ms: 0, user: Some("ada".into()) };
        self.save(server, &c).unwrap();
    }

    fn wait_for_loads(&self, n: usize) {
        let deadline = Instant::now() + Duration::from_secs(30);
        while self.loads.load(Ordering::SeqCst) < n {
            assert!(Instant::now() < deadline, "the loop read the sign-in fewer than {n} times in 30 s");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

struct World {
    home: TestHome,
    repo: PathBuf,
    server: String,
    _port: RefusedPort,
    data: tempfile::TempDir,
}

impl World {
    fn new() -> World {
        let mut home = TestHome::new();
        let repo = home.git_repo("shop");
        git(&repo, &["remote", "add", "origin", "https://github.com/acme/shop.git"]);
        std::fs::create_dir_all(repo.join("sub")).unwrap();
        let port = refused_port();
        let server = format!("http://{}", port.addr);
        home.env = home.env.clone().set_var("TEAM_MEMORY_SYNC_URL", &server);
        World { home, repo, server, _port: port, data: tempfile::tempdir().unwrap() }
    }

    fn team_loop(&self, folders: Vec<PathBuf>, pull_every: Duration, store: &Arc<Store>) -> (TeamLoop, Reporter) {
        let clock: Arc<dyn Clock> = Arc::new(SystemClock);
        let reporter = Reporter::new(clock.clone(), RunLog::in_data_dir(self.data.path()));
        let credentials: Arc<dyn CredentialStore> = store.clone();
        let l = TeamLoop { env: self.home.env.clone(), clock, reporter: reporter.clone(), folders: Folders::Given(folders), pull_every, credentials: Some(credentials) };
        (l, reporter)
    }
}

/// The team-sync runs recorded so far, oldest first, once there are at least `n` (30 s at most).
fn runs(reporter: &Reporter, n: usize) -> Vec<RunRecord> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut r = reporter.log().recent(100, Some(JobKind::TeamSync)).unwrap();
        if r.len() >= n {
            r.reverse();
            return r;
        }
        assert!(Instant::now() < deadline, "fewer than {n} team-sync runs in 30 s: {r:?}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn failed(r: &RunRecord) -> &str {
    match &r.outcome {
        Outcome::Failed { error } => error,
        other => panic!("{other:?}"),
    }
}

#[test]
fn folders_of_one_memory_folder_are_one_target() {
    let w = World::new();
    let worktree = w.home.root.join("shop-wt");
    git(&w.repo, &["worktree", "add", "-q", worktree.to_str().unwrap()]);
    let targets = sync_targets(&w.home.env, &[w.repo.clone(), w.repo.join("sub"), worktree]);
    assert_eq!(targets.len(), 1, "{targets:?}");
    assert_eq!(targets[0].memory_dir, w.home.memdir_for(&w.repo));
    assert_eq!(targets[0].repo.as_deref(), Some("acme/shop"));
}

/// The repository's root and a sub-folder share one memory folder and its state file: one
/// watcher, so one start-up pull.
#[test]
fn a_repository_and_its_sub_folder_get_one_watcher() {
    let w = World::new();
    let store = Arc::new(Store::default());
    store.sign_in(&w.server);
    let (l, reporter) = w.team_loop(vec![w.repo.clone(), w.repo.join("sub")], Duration::from_secs(3600), &store);
    let cancel = mneme_model::Cancel::new();
    let c = cancel.clone();
    let t = std::thread::spawn(move || l.run(c));
    // Every watcher started in the first look reports its start-up pull in the same round.
    let first = runs(&reporter, 1);
    cancel.cancel();
    t.join().unwrap();
    let all = runs(&reporter, 1);
    assert_eq!(all.len(), 1, "{all:?}");
    assert_eq!(first[0].target, "acme/shop");
    assert!(failed(&first[0]).contains("127.0.0.1"), "{first:?}");
}

/// Nobody signed in at the start (the sign-in comes later, from the app): sync starts at a
/// later look instead of never.
#[test]
fn a_sign_in_after_the_start_starts_sync() {
    let w = World::new();
    let store = Arc::new(Store::default());
    let (l, reporter) = w.team_loop(vec![w.repo.clone()], Duration::from_millis(100), &store);
    let cancel = mneme_model::Cancel::new();
    let c = cancel.clone();
    let t = std::thread::spawn(move || l.run(c));
    store.wait_for_loads(1);
    assert!(reporter.log().recent(10, None).unwrap().is_empty(), "signed out is not news");
    store.sign_in(&w.server);
    let started = runs(&reporter, 1);
    cancel.cancel();
    t.join().unwrap();
    assert_eq!(started[0].target, "acme/shop");
    assert!(failed(&started[0]).contains("127.0.0.1"), "{started:?}");
}

/// A keyring that refuses access (locked at login) is said once, with what to do, and sync
/// starts once it opens; it is not taken for "signed out" for good.
#[test]
fn a_locked_keyring_is_reported_once_and_sync_starts_when_it_opens() {
    let w = World::new();
    let store = Arc::new(Store::default());
    store.sign_in(&w.server);
    store.locked.store(true, Ordering::SeqCst);
    let (l, reporter) = w.team_loop(vec![w.repo.clone()], Duration::from_millis(100), &store);
    let cancel = mneme_model::Cancel::new();
    let c = cancel.clone();
    let t = std::thread::spawn(move || l.run(c));
    store.wait_for_loads(3);
    store.locked.store(false, Ordering::SeqCst);
    let seen = runs(&reporter, 2);
    cancel.cancel();
    t.join().unwrap();
    let keyring = failed(&seen[0]);
    assert!(keyring.starts_with(&format!("could not read the team sign-in for {}", w.server)) && keyring.contains("unlock the keyring"), "{keyring}");
    assert!(!failed(&seen[1]).contains("sign-in"), "said once: {seen:?}");
}
