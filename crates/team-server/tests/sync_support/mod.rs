//! A real `mneme-server` on 127.0.0.1:0 (SQLite in a temporary folder, or the PostgreSQL
//! database `MNEME_TEST_PG_URL` names) and real sync clients pointed at it, each with its own
//! memory folder and data dir. Names are unique per test so tests can share one PostgreSQL
//! database.

#![allow(dead_code)]

use mneme_core::Clock;
use mneme_store::Environment;
use mneme_team::client::{Sleeper, StaticToken, SyncClient, SyncTarget};
use mneme_team_server::{admin::Admin, DatabaseUrl, RunningServer, ServerConfig};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A clock both the server and the clients read, advanced by hand (and by [`ClockSleeper`]).
#[derive(Debug)]
pub struct ManualClock(AtomicU64);

impl ManualClock {
    pub fn new() -> Arc<ManualClock> {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64;
        Arc::new(ManualClock(AtomicU64::new(now)))
    }

    pub fn advance(&self, d: Duration) {
        self.0.fetch_add(d.as_millis() as u64, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_millis(self.0.load(Ordering::SeqCst))
    }
}

/// Records each wait instead of sleeping; the jitter draw is fixed.
#[derive(Debug, Default)]
pub struct RecordingSleeper {
    pub waits: Mutex<Vec<Duration>>,
    pub jitter: f64,
}

impl Sleeper for RecordingSleeper {
    fn sleep(&self, d: Duration) {
        self.waits.lock().unwrap().push(d);
    }

    fn jitter(&self) -> f64 {
        self.jitter
    }
}

/// Advances the shared clock instead of sleeping, and runs `on_sleep` on each wait (a person
/// approving the sign-in in their browser, say).
pub struct ClockSleeper {
    pub clock: Arc<ManualClock>,
    pub on_sleep: Mutex<Box<dyn FnMut(usize) + Send>>,
    pub count: AtomicU64,
}

impl Sleeper for ClockSleeper {
    fn sleep(&self, d: Duration) {
        self.clock.advance(d);
        let n = self.count.fetch_add(1, Ordering::SeqCst) as usize;
        (self.on_sleep.lock().unwrap())(n);
    }

    fn jitter(&self) -> f64 {
        0.0
    }
}

pub fn unique(prefix: &str) -> String {
    static N: AtomicU64 = AtomicU64::new(0);
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos();
    format!("{prefix}{}x{}x{}", std::process::id(), nanos, N.fetch_add(1, Ordering::SeqCst))
}

pub struct Server {
    pub rt: tokio::runtime::Runtime,
    pub server: Option<RunningServer>,
    pub url: String,
    pub admin: Admin,
    pub clock: Arc<ManualClock>,
    pub team: String,
    pub dir: tempfile::TempDir,
    pub database: DatabaseUrl,
}

impl Server {
    pub fn start(adjust: impl FnOnce(&mut ServerConfig)) -> Server {
        let dir = tempfile::tempdir().unwrap();
        let database = match std::env::var("MNEME_TEST_PG_URL") {
            Ok(u) if !u.is_empty() => DatabaseUrl::Postgres(u),
            _ => DatabaseUrl::Sqlite(dir.path().join("server.db")),
        };
        let clock = ManualClock::new();
        let mut config = ServerConfig::new(database.clone());
        config.clock = clock.clone();
        adjust(&mut config);
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        let server = rt.block_on(async {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            mneme_team_server::spawn(config, listener).await.unwrap()
        });
        let url = server.url();
        let admin = server.admin();
        let team = unique("team");
        rt.block_on(admin.create_team(&team)).unwrap();
        Server { rt, server: Some(server), url, admin, clock, team, dir, database }
    }

    /// Writes `entries` into `repo` through the store itself, below the write rules, as a
    /// database from before a rule (or another server) may hold them: keys that differ only in
    /// letter case, say, which the server no longer creates.
    pub fn seed_below_the_checks(&self, repo: &str, entries: &[(&str, &str)]) {
        use mneme_team_server::checksum::{entry_checksum, next_repo_checksum};
        use mneme_team_server::store::{Change, Commit, SqlStore, Store, WriteView};
        self.rt.block_on(async {
            let store = SqlStore::connect(&self.database).await.unwrap();
            let id = store.repo_by_slug(repo).await.unwrap().unwrap().id;
            for (key, content) in entries {
                let now = i64::try_from(self.clock.now_ms()).unwrap();
                let mut decide = |view: &WriteView| {
                    let checksum = entry_checksum(content);
                    let old = view.entries.iter().find(|e| !e.deleted).map(|e| e.bytes);
                    let bytes = content.len() as i64;
                    vec![Commit {
                        expected_version: view.repo.version,
                        version: view.repo.version + 1,
                        checksum: next_repo_checksum(&view.repo.checksum, [(*key, checksum.as_str())], []),
                        now_ms: now.max(view.repo.last_modified_ms),
                        author: None,
                        live_entries: view.repo.live_entries + i64::from(old.is_none()),
                        history_bytes: view.repo.history_bytes + bytes,
                        live_bytes: view.repo.live_bytes + bytes - old.unwrap_or(0),
                        changes: vec![Change { key: key.to_string(), content: content.to_string(), checksum, deleted: false, purge: false }],
                    }]
                };
                store.write(id, &[key], &mut decide).await.unwrap();
            }
            store.close().await;
        });
    }

    /// A new user with `role` in `repo`, and an access token for them.
    pub fn member(&self, repo: &str, role: mneme_team_server::Role) -> (String, String) {
        let user = unique("user");
        self.rt.block_on(self.admin.create_user(&user, "correct horse battery staple")).unwrap();
        self.rt.block_on(self.admin.grant(&user, Some(&self.team), repo, role)).unwrap();
        let token = self.rt.block_on(self.admin.mint_token(&user)).unwrap();
        (user, token)
    }

    /// A fresh `owner/name` for one test.
    pub fn repo(&self) -> String {
        format!("owner/{}", unique("repo"))
    }

    /// The server's current entries for `repo`, read the way Claude Code reads them.
    pub fn entries(&self, repo: &str, token: &str) -> std::collections::BTreeMap<String, String> {
        let url = format!("{}/api/claude_code/team_memory?repo={}", self.url, repo.replace('/', "%2F"));
        let mut resp = ureq::get(&url)
            .header("Authorization", format!("Bearer {token}"))
            .config()
            .http_status_as_error(false)
            .build()
            .call()
            .unwrap();
        if resp.status().as_u16() == 404 {
            return Default::default();
        }
        let v: serde_json::Value = serde_json::from_str(&resp.body_mut().read_to_string().unwrap()).unwrap();
        serde_json::from_value(v["content"]["entries"].clone()).unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(s) = self.server.take() {
            self.rt.block_on(s.shutdown());
        }
    }
}

/// One person's machine: a memory folder, Mneme's data dir, and a client.
pub struct Machine {
    pub home: tempfile::TempDir,
    pub env: Environment,
    pub client: SyncClient,
    pub sleeper: Arc<RecordingSleeper>,
}

impl Machine {
    pub fn new(server: &Server, repo: &str, token: &str) -> Machine {
        let home = tempfile::tempdir().unwrap();
        let env = Environment::with_home(home.path()).set_var("MNEME_DATA_DIR", home.path().join("data").to_string_lossy());
        let memory_dir = home.path().join("memory");
        std::fs::create_dir_all(memory_dir.join("team")).unwrap();
        let target = SyncTarget { memory_dir, repo: Some(repo.to_string()), server_url: Some(server.url.clone()) };
        let sleeper = Arc::new(RecordingSleeper { jitter: 0.5, ..Default::default() });
        let client = SyncClient::new(target, &env, server.clock.clone(), Arc::new(StaticToken(token.to_string())))
            .with_sleeper(sleeper.clone());
        Machine { home, env, client, sleeper }
    }

    pub fn team(&self) -> PathBuf {
        self.home.path().join("memory/team")
    }

    pub fn write(&self, key: &str, text: &str) {
        let p = self.team().join(key);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    pub fn read(&self, key: &str) -> Option<String> {
        std::fs::read_to_string(self.team().join(key)).ok()
    }

    /// Every file under `team/`, key → content.
    pub fn files(&self) -> std::collections::BTreeMap<String, String> {
        let mut out = std::collections::BTreeMap::new();
        walk(&self.team(), &self.team(), &mut out);
        out
    }
}

fn walk(root: &Path, dir: &Path, out: &mut std::collections::BTreeMap<String, String>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            walk(root, &p, out);
        } else {
            let key = p.strip_prefix(root).unwrap().to_string_lossy().replace('\\', "/");
            out.insert(key, std::fs::read_to_string(&p).unwrap_or_default());
        }
    }
}
