//! The team-sync loop against folders of a github.com repository with a server on 127.0.0.1
//! where nothing answers (every pull fails, so each watcher that starts says so with one failed
//! run): one watcher per memory folder, a sign-in made after the start is picked up, and a
//! keyring that cannot be read is reported once instead of being taken for "signed out".
//! Then against a server that acknowledges pushes and loses them: the loop pushes a lost file
//! again, and stops doing so once the server has lost it three times in a row.

use mneme_core::{Clock, SystemClock};
use mneme_scheduler::team::{sync_targets, TeamLoop};
use mneme_scheduler::{Folders, JobKind, Outcome, Reporter, RunLog, RunRecord};
use mneme_team::auth::{CredentialStore, Credentials};
use mneme_team::client::hash_content;
use mneme_team::SyncError;
use mneme_testsupport::raw_http::read_request;
use mneme_testsupport::{git, refused_port, wait, RefusedPort, TestHome};
use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::net::TcpListener;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

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
        let c = Credentials { access_token: "token".into(), refresh_token: None, expires_at_ms: 0, user: Some("ada".into()), extra: Default::default() };
        self.save(server, &c).unwrap();
    }

    fn wait_for_loads(&self, n: usize) {
        wait::until(&format!("the loop to read the sign-in {n} times"), || self.loads.load(Ordering::SeqCst) >= n);
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
    wait::value(&format!("{n} team-sync runs"), || {
        let mut r = reporter.log().recent(100, Some(JobKind::TeamSync)).unwrap();
        r.reverse();
        (r.len() >= n).then_some(r)
    })
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
    let (folder, target) = targets[0].as_ref().unwrap();
    assert_eq!(folder, &w.repo);
    assert_eq!(target.memory_dir, w.home.memdir_for(&w.repo));
    assert_eq!(target.repo.as_deref(), Some("acme/shop"));
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

/// What the dropping server below holds and has been sent.
#[derive(Default)]
struct ServerState {
    /// What it holds, and serves to pulls.
    held: BTreeMap<String, String>,
    /// Pushes still to acknowledge and then lose (the rest are kept).
    drops_left: usize,
    /// A key every push is acknowledged with and then loses, keeping the push's other entries.
    loses: Option<&'static str>,
    /// The entries of every push it was sent, oldest first.
    puts: Vec<BTreeMap<String, String>>,
    /// Pulls (GETs of the whole tree) it answered.
    pulls: usize,
}

/// A team server on 127.0.0.1:0 that acknowledges every push with a new checksum but keeps
/// one only once `drops_left` pushes have been lost ("ack-then-drop": a crash before its
/// commit, a restore from backup). Pulls get what it holds, and 304 for the checksum of that,
/// as a real server does; so a pull after a push always gets a whole answer.
fn dropping_server(drops_left: usize) -> (String, Arc<Mutex<ServerState>>) {
    serve(ServerState { drops_left, ..Default::default() })
}

/// As [`dropping_server`], losing only `key`, at every push.
fn losing_server(key: &'static str) -> (String, Arc<Mutex<ServerState>>) {
    serve(ServerState { loses: Some(key), ..Default::default() })
}

fn serve(state: ServerState) -> (String, Arc<Mutex<ServerState>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let state = Arc::new(Mutex::new(state));
    let s = state.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let request = read_request(&mut conn);
            let answer = answer(&request, &mut s.lock().unwrap());
            let _ = conn.write_all(answer.as_bytes());
        }
    });
    (url, state)
}

fn answer(request: &str, s: &mut ServerState) -> String {
    let json = |status: &str, body: String| format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len());
    let checksums: serde_json::Map<String, serde_json::Value> = s.held.iter().map(|(k, v)| (k.clone(), hash_content(v).into())).collect();
    let tree = hash_content(&serde_json::to_string(&s.held).unwrap());
    if request.starts_with("PUT ") {
        let body = &request[request.find("\r\n\r\n").unwrap() + 4..];
        let entries: BTreeMap<String, String> = serde_json::from_value(serde_json::from_str::<serde_json::Value>(body).unwrap()["entries"].clone()).unwrap();
        s.puts.push(entries.clone());
        if s.drops_left > 0 {
            s.drops_left -= 1;
        } else {
            let loses = s.loses;
            s.held.extend(entries.into_iter().filter(|(k, _)| Some(k.as_str()) != loses));
        }
        // A checksum no pull is answered with: the next pull gets the whole tree.
        return json("200 OK", format!(r#"{{"checksum":"sha256:ack{}"}}"#, s.puts.len()));
    }
    if request.contains("view=hashes") {
        return json("200 OK", serde_json::json!({"checksum": tree, "entryChecksums": checksums}).to_string());
    }
    s.pulls += 1;
    if request.to_ascii_lowercase().contains(&format!("if-none-match: \"{tree}\"")) {
        return "HTTP/1.1 304 Not Modified\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".into();
    }
    let body = serde_json::json!({
        "repo": "acme/shop", "lastModified": "2026-12-06T00:00:00.000Z", "checksum": tree,
        "content": {"entries": s.held, "entryChecksums": checksums}
    });
    json("200 OK", body.to_string())
}

/// Waits for `done` for at most 60 s (the watcher waits 2 s after a change before it pushes,
/// and a re-push needs a pull first), failing with `what`.
fn wait_until(what: &str, done: impl FnMut() -> bool) {
    wait::until_within(Duration::from_secs(60), what, done);
}

impl World {
    /// The world with a dropping server instead of the refused port, signed in.
    fn with_server(url: &str) -> (World, Arc<Store>) {
        let mut w = World::new();
        w.home.env = w.home.env.clone().set_var("TEAM_MEMORY_SYNC_URL", url);
        w.server = url.to_string();
        let store = Arc::new(Store::default());
        store.sign_in(url);
        (w, store)
    }

    /// Starts the loop with the smallest pull interval (every look of the loop, 250 ms), and
    /// returns once its watcher watches: the watcher starts with a pull, and the loop's own
    /// scheduled pulls begin only once the watcher has started, so a second pull means a
    /// change to `team/` from now on is seen.
    fn start(&self, store: &Arc<Store>, server: &Arc<Mutex<ServerState>>) -> (Reporter, mneme_model::Cancel, std::thread::JoinHandle<()>) {
        let (l, reporter) = self.team_loop(vec![self.repo.clone()], Duration::from_millis(100), store);
        let cancel = mneme_model::Cancel::new();
        let c = cancel.clone();
        let before = server.lock().unwrap().pulls;
        let t = std::thread::spawn(move || l.run(c));
        wait_until("the watcher started and a scheduled pull ran", || server.lock().unwrap().pulls >= before + 2);
        (reporter, cancel, t)
    }

    fn team_dir(&self) -> PathBuf {
        self.home.memdir_for(&self.repo).join("team")
    }
}

/// The pushes the server was sent that carried `key` with `content`.
fn pushes_of(server: &Mutex<ServerState>, key: &str, content: &str) -> usize {
    server.lock().unwrap().puts.iter().filter(|p| p.get(key).map(String::as_str) == Some(content)).count()
}

fn all_runs(reporter: &Reporter) -> Vec<RunRecord> {
    let mut r = reporter.log().recent(1000, Some(JobKind::TeamSync)).unwrap();
    r.reverse();
    r
}

/// A server that acknowledges a push and then loses it: the loop's next scheduled pull
/// reports it, the watcher pushes the same content again, and the file here is untouched.
#[test]
fn a_push_the_server_lost_is_pushed_again_by_the_next_scheduled_pull() {
    let (url, server) = dropping_server(1);
    let (w, store) = World::with_server(&url);
    let (reporter, cancel, t) = w.start(&store, &server);
    let team = w.team_dir();
    std::fs::write(team.join("deploy.md"), "Deploy from the release branch.").unwrap();

    wait_until("the edit was pushed twice (lost once, then sent again)", || pushes_of(&server, "deploy.md", "Deploy from the release branch.") >= 2);
    wait_until("the server holds it", || server.lock().unwrap().held.contains_key("deploy.md"));
    wait_until("the loss was recorded", || {
        all_runs(&reporter).iter().any(|r| matches!(&r.outcome, Outcome::Done { summary } if summary.contains("no longer holds 1 file(s)") && summary.contains("(deploy.md)") && summary.contains("pushed again")))
    });
    cancel.cancel();
    t.join().unwrap();
    assert_eq!(std::fs::read_to_string(team.join("deploy.md")).unwrap(), "Deploy from the release branch.");
    assert_eq!(pushes_of(&server, "deploy.md", "Deploy from the release branch."), 2, "held once sent again: {:?}", server.lock().unwrap().puts);
    assert!(!all_runs(&reporter).iter().any(|r| matches!(&r.outcome, Outcome::Failed { .. })), "{:?}", all_runs(&reporter));
}

/// A server that loses the same file at every push: after three losses in a row automatic
/// pushes stop sending it and the loop says so once, with what to do; the file stays as it
/// is. The count is kept with the sync state, so a restart does not start the re-pushing
/// again; an edit here sends the file again.
#[test]
fn a_file_the_server_keeps_losing_is_pushed_three_times_then_reported() {
    let (url, server) = losing_server("deploy.md");
    let (w, store) = World::with_server(&url);
    let (reporter, cancel, t) = w.start(&store, &server);
    let team = w.team_dir();
    let content = "Deploy from the release branch.";
    std::fs::write(team.join("deploy.md"), content).unwrap();
    // Another file edited, which the server keeps: once its push has reached the server, every
    // push that could have carried the lost file again has. A push sends every file the server
    // was last seen without, so without the limit that one would carry it too.
    let push_another = |text: &str| {
        std::fs::write(team.join("other.md"), text).unwrap();
        wait_until("the other file was pushed", || pushes_of(&server, "other.md", text) >= 1);
    };

    let given_up = |r: &RunRecord| matches!(&r.outcome, Outcome::Failed { error } if error.contains("lost 1 file(s)") && error.contains("3 times in a row") && error.contains("(deploy.md)") && error.contains("`mneme team push`"));
    wait_until("the server's third loss was reported", || all_runs(&reporter).iter().any(given_up));
    assert_eq!(pushes_of(&server, "deploy.md", content), 3, "{:?}", server.lock().unwrap().puts);
    push_another("Another file.");
    assert_eq!(pushes_of(&server, "deploy.md", content), 3, "pushed again after the third loss: {:?}", server.lock().unwrap().puts);
    assert_eq!(all_runs(&reporter).iter().filter(|r| given_up(r)).count(), 1, "said once: {:?}", all_runs(&reporter));
    cancel.cancel();
    t.join().unwrap();
    assert_eq!(std::fs::read_to_string(team.join("deploy.md")).unwrap(), content);

    // A restart: the watcher's first pull finds the file still lost, says so once more, and
    // does not start pushing it again.
    let (reporter, cancel, t) = w.start(&store, &server);
    wait_until("the restart reported the lost file", || all_runs(&reporter).iter().filter(|r| given_up(r)).count() >= 2);
    push_another("Another file, edited.");
    assert_eq!(pushes_of(&server, "deploy.md", content), 3, "pushed again after a restart: {:?}", server.lock().unwrap().puts);

    // An edit here is new content: it goes out at once.
    std::fs::write(team.join("deploy.md"), "Deploy from main.").unwrap();
    wait_until("the edit was pushed", || pushes_of(&server, "deploy.md", "Deploy from main.") >= 1);
    cancel.cancel();
    t.join().unwrap();
    assert_eq!(std::fs::read_to_string(team.join("deploy.md")).unwrap(), "Deploy from main.");
}
