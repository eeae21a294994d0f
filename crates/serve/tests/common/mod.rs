//! A server started in-process on a free loopback port against a hermetic home, and a real
//! HTTP client pointed at it.

#![allow(dead_code)]

use mneme_api::{ContextRequest, FixedClock, Mneme};
use mneme_serve::{serve_until, ServeOptions};
use mneme_testsupport::TestHome;
use serde_json::Value;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use tokio::sync::oneshot;

pub const DATE: &str = "2025-11-29";

pub struct Server {
    pub home: TestHome,
    pub repo: PathBuf,
    pub mneme: Mneme,
    pub addr: SocketAddr,
    pub token: String,
    pub client: reqwest::Client,
    stop: Option<oneshot::Sender<()>>,
    task: Option<tokio::task::JoinHandle<Result<(), mneme_serve::ServeError>>>,
}

/// A home with a repository (CLAUDE.md, one rule), user settings with an unrelated key, and
/// an existing memory folder.
pub fn fixture() -> (TestHome, PathBuf) {
    let home = TestHome::new();
    let repo = home.git_repo("repo");
    home.write(repo.join("CLAUDE.md"), "Use tabs for indentation.\n");
    home.write(repo.join(".claude/rules/style.md"), "Prefer small functions.\n");
    home.write(home.config_home().join("settings.json"), "{\n  \"theme\": \"dark\",\n  \"model\": \"opus\"\n}\n");
    let memdir = home.memdir_for(&repo);
    std::fs::create_dir_all(&memdir).unwrap();
    (home, repo)
}

pub fn engine(home: &TestHome) -> Mneme {
    Mneme::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_764_400_000)))
}

impl Server {
    pub async fn start() -> Server {
        let (home, repo) = fixture();
        let ui = home.root.join("no-ui-here");
        Server::start_with(home, repo, Some(ui)).await
    }

    pub async fn start_with(home: TestHome, repo: PathBuf, ui_dir: Option<PathBuf>) -> Server {
        Server::start_opts(home, repo, ui_dir, false).await
    }

    /// With `scheduler`, the background scheduler runs in the server (`--scheduler`).
    pub async fn start_opts(home: TestHome, repo: PathBuf, ui_dir: Option<PathBuf>, scheduler: bool) -> Server {
        let opts = ServeOptions { port: 0, ui_dir, token: None, start_dir: Some(repo.clone()), scheduler, operation_patience: None };
        Server::start_options(home, repo, opts).await
    }

    pub async fn start_options(home: TestHome, repo: PathBuf, opts: ServeOptions) -> Server {
        let mneme = engine(&home);
        let (ready_tx, ready_rx) = oneshot::channel();
        let (stop, stop_rx) = oneshot::channel::<()>();
        let task = tokio::spawn(serve_until(
            mneme.clone(),
            opts,
            move |addr, token| {
                let _ = ready_tx.send((addr, token.to_string()));
            },
            async {
                let _ = stop_rx.await;
            },
        ));
        let (addr, token) = ready_rx.await.expect("server starts");
        let client = reqwest::Client::builder().no_proxy().build().unwrap();
        Server { home, repo, mneme, addr, token, client, stop: Some(stop), task: Some(task) }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.addr.port())
    }

    /// An authorized JSON POST, as the UI sends it.
    pub fn post(&self, method: &str, body: Value) -> reqwest::RequestBuilder {
        self.client.post(self.url(&format!("/api/{method}"))).bearer_auth(&self.token).json(&body)
    }

    /// Calls a method and returns status and JSON body.
    pub async fn call(&self, method: &str, body: Value) -> (u16, Value) {
        let resp = self.post(method, body).send().await.expect("request goes through");
        let status = resp.status().as_u16();
        let body = resp.json::<Value>().await.expect("JSON body");
        (status, body)
    }

    /// Calls a method that must succeed.
    pub async fn ok(&self, method: &str, body: Value) -> Value {
        let (status, body) = self.call(method, body).await;
        assert_eq!(status, 200, "{method}: {body}");
        body
    }

    pub fn request(&self) -> ContextRequest {
        ContextRequest { cwd: self.repo.clone(), date: Some(DATE.into()), ..Default::default() }
    }

    /// Stops the server and checks it shut down cleanly (open event streams included).
    pub async fn stop(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let done = tokio::time::timeout(std::time::Duration::from_secs(5), task).await;
            done.expect("server stops within 5 s").expect("server task").expect("server ends without error");
        }
    }
}
