//! Shared by the server's own tests: fresh databases (SQLite always, PostgreSQL when
//! `MNEME_TEST_PG_URL` is set — and required when `MNEME_REQUIRE_PG=1`), a clock the tests move,
//! and a started server with a team, users and tokens.
#![allow(dead_code)]

pub mod process;

use mneme_core::Clock;
use mneme_team_server::admin::{Admin, Role};
use mneme_team_server::{DatabaseUrl, RunningServer, ServerConfig};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};
use tempfile::TempDir;

/// A clock that only moves when a test says so.
pub struct ManualClock(Mutex<SystemTime>);

impl ManualClock {
    pub fn new() -> Arc<ManualClock> {
        // 2026-11-29T15:00:00Z: a fixed, realistic instant.
        Arc::new(ManualClock(Mutex::new(UNIX_EPOCH + Duration::from_secs(1_795_964_400))))
    }

    pub fn advance(&self, by: Duration) {
        let mut now = self.0.lock().unwrap();
        *now += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        *self.0.lock().unwrap()
    }
}

/// The PostgreSQL cluster to test against, if any.
pub fn pg_url() -> Option<String> {
    match std::env::var("MNEME_TEST_PG_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert_ne!(
                std::env::var("MNEME_REQUIRE_PG").as_deref(),
                Ok("1"),
                "MNEME_REQUIRE_PG=1 but MNEME_TEST_PG_URL is not set: start a cluster with eval \"$(scripts/pg.sh)\""
            );
            None
        }
    }
}

/// `base` with its database name replaced.
fn with_database(base: &str, name: &str) -> String {
    let (url, query) = match base.split_once('?') {
        Some((u, q)) => (u, Some(q)),
        None => (base, None),
    };
    let (scheme, rest) = url.split_once("://").unwrap();
    let host = rest.split_once('/').map(|(h, _)| h).unwrap_or(rest);
    match query {
        Some(q) => format!("{scheme}://{host}/{name}?{q}"),
        None => format!("{scheme}://{host}/{name}"),
    }
}

/// A new, empty database in the test cluster.
pub async fn fresh_pg_database(base: &str) -> DatabaseUrl {
    use sqlx::Connection;
    let mut conn = sqlx::PgConnection::connect(base).await.expect("connect to MNEME_TEST_PG_URL");
    let name = format!("mneme_test_{}", mneme_team_server::auth::random_hex(8).unwrap());
    sqlx::query(&format!("CREATE DATABASE {name}")).execute(&mut conn).await.unwrap();
    conn.close().await.unwrap();
    DatabaseUrl::Postgres(with_database(base, &name))
}

/// One database to run a test against; the folder of a SQLite one goes when this drops.
pub struct TestDb {
    pub label: &'static str,
    pub url: DatabaseUrl,
    pub dir: Option<TempDir>,
}

/// A fresh SQLite database, and a fresh PostgreSQL one when a cluster is configured.
pub async fn databases() -> Vec<TestDb> {
    let dir = tempfile::tempdir().unwrap();
    let mut out = vec![TestDb {
        label: "sqlite",
        url: DatabaseUrl::Sqlite(dir.path().join("team.db")),
        dir: Some(dir),
    }];
    if let Some(base) = pg_url() {
        out.push(TestDb { label: "postgres", url: fresh_pg_database(&base).await, dir: None });
    }
    out
}

/// JavaScript's `encodeURIComponent`, as Claude Code builds `?repo=`.
pub fn encode_uri_component(s: &str) -> String {
    let mut out = String::new();
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.!~*'()".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

pub const REPO: &str = "acme/app";
pub const TEAM: &str = "acme";
pub const PASSWORD: &str = "correct horse battery";

/// A running server on 127.0.0.1 with the team `acme`.
pub struct Harness {
    pub label: &'static str,
    pub server: RunningServer,
    pub admin: Admin,
    pub clock: Arc<ManualClock>,
    pub http: reqwest::Client,
    pub db: DatabaseUrl,
    _dir: Option<TempDir>,
}

impl Harness {
    pub async fn start(db: TestDb, tweak: impl FnOnce(&mut ServerConfig)) -> Harness {
        let clock = ManualClock::new();
        let mut config = ServerConfig::new(db.url.clone());
        config.clock = clock.clone();
        tweak(&mut config);
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let server = mneme_team_server::spawn(config, listener).await.unwrap();
        let admin = server.admin();
        admin.create_team(TEAM).await.unwrap();
        eprintln!("--- backend: {}", db.label);
        Harness {
            label: db.label,
            server,
            admin,
            clock,
            http: reqwest::Client::new(),
            db: db.url,
            _dir: db.dir,
        }
    }

    /// A second server on the same database, as another replica behind a load balancer.
    pub async fn replica(&self) -> RunningServer {
        let mut config = ServerConfig::new(self.db.clone());
        config.clock = self.clock.clone();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        mneme_team_server::spawn(config, listener).await.unwrap()
    }

    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.server.url())
    }

    /// `<base>/api/claude_code/team_memory?repo=<encodeURIComponent(repo)>`.
    pub fn memory_url(&self, repo: &str) -> String {
        format!("{}{}?repo={}", self.server.url(), mneme_team::wire::TEAM_MEMORY_PATH, encode_uri_component(repo))
    }

    /// Creates `name` if needed, grants it `role` in `repo`, and returns a fresh access token.
    pub async fn user(&self, name: &str, repo: &str, role: Role) -> String {
        match self.admin.create_user(name, PASSWORD).await {
            Ok(()) | Err(mneme_team_server::admin::AdminError::Store(mneme_team_server::store::StoreError::AlreadyExists(_))) => {}
            Err(e) => panic!("create_user: {e}"),
        }
        self.admin.grant(name, Some(TEAM), repo, role).await.unwrap();
        self.admin.mint_token(name).await.unwrap()
    }

    /// A request with the headers Claude Code sends on every call.
    pub fn request(&self, method: reqwest::Method, url: &str, token: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, url)
            .bearer_auth(token)
            .header("anthropic-beta", mneme_team::wire::ANTHROPIC_BETA)
            .header("user-agent", "claude-code/2.1.197")
    }

    pub async fn get(&self, token: &str, repo: &str) -> reqwest::Response {
        self.request(reqwest::Method::GET, &self.memory_url(repo), token).send().await.unwrap()
    }

    pub async fn put(&self, token: &str, repo: &str, body: serde_json::Value, if_match: Option<&str>) -> reqwest::Response {
        let mut req = self.request(reqwest::Method::PUT, &self.memory_url(repo), token).json(&body);
        if let Some(tag) = if_match {
            req = req.header("if-match", format!("\"{tag}\""));
        }
        req.send().await.unwrap()
    }

    pub async fn shutdown(self) {
        self.server.shutdown().await;
    }
}
