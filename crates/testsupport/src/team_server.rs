//! A team server for the CLI's team tests that run the real `mneme` binary: the device sign-in
//! (`/oauth/device/code`, `/oauth/token`), `/api/mneme/me`, pushes that are all acknowledged, no
//! hashes view (so every pull asks for the whole content), and pulls answered with the entries
//! the test sets, each with its checksum. A push it acknowledged is therefore simply missing
//! from the next pull once the test leaves it out, which is what a server that crashed before
//! its commit answers.
//!
//! Raw HTTP on 127.0.0.1:0 ([`crate::raw_http`]), so nothing stands between the test's bytes
//! and the client. The project it serves is acme/shop: [`shop_with_origin`] makes one, and
//! [`TeamProject`] one in a home of its own beside its server.

use crate::raw_http::{json, serve};
use crate::{git, TestHome};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

/// The user code the device sign-in shows; a test can check `mneme team login` printed it.
pub const USER_CODE: &str = "WDJB-MJHT";
/// The user the server says is signed in.
pub const USER: &str = "ana";

/// A running team server: its base URL and what it answers a pull with.
pub struct TeamServer {
    pub url: String,
    /// Key → content; a pull answers exactly these (set them before the pull).
    pub entries: Arc<Mutex<BTreeMap<String, String>>>,
}

impl TeamServer {
    /// Starts the server on a thread of its own; it serves until the test process ends.
    pub fn start() -> TeamServer {
        let entries: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
        let held = entries.clone();
        let (url, _seen) = serve(move |req| {
            let line = req.lines().next().unwrap_or_default();
            if line.starts_with("POST /oauth/device/code") {
                json(
                    "200 OK",
                    &format!(
                        r#"{{"device_code":"d-1","user_code":"{USER_CODE}","verification_uri":"http://127.0.0.1/device","verification_uri_complete":"http://127.0.0.1/device?user_code={USER_CODE}","expires_in":600,"interval":1}}"#
                    ),
                )
            } else if line.starts_with("POST /oauth/token") {
                json("200 OK", r#"{"access_token":"t0k3n","token_type":"Bearer","expires_in":3600}"#)
            } else if line.starts_with("GET /api/mneme/me") {
                json("200 OK", &format!(r#"{{"user":"{USER}","repos":[]}}"#))
            } else if line.starts_with("PUT ") {
                json("200 OK", r#"{"checksum":"sha256:put"}"#)
            } else if line.contains("view=hashes") {
                json("404 Not Found", r#"{"error":{"message":"no team memory yet"}}"#)
            } else {
                let entries = held.lock().unwrap().clone();
                let sums: BTreeMap<&String, String> = entries.iter().map(|(k, v)| (k, checksum(v))).collect();
                let body = serde_json::json!({
                    "repo": "acme/shop",
                    "lastModified": "x",
                    "checksum": checksum(&format!("{sums:?}")),
                    "content": { "entries": entries, "entryChecksums": sums },
                });
                json("200 OK", &body.to_string())
            }
        });
        TeamServer { url, entries }
    }
}

/// `sha256:<hex>` of `text`, as the server names content, from `sha256sum` (so no test needs a
/// hash crate for it).
pub fn checksum(text: &str) -> String {
    let mut c = Command::new("sha256sum");
    c.stdout(Stdio::piped());
    let out = crate::output_with_stdin(c, Some(text.as_bytes()));
    assert!(out.status.success(), "sha256sum runs");
    format!("sha256:{}", String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap())
}

/// The project the server syncs: a git repository at `code/shop` whose origin names acme/shop.
pub fn shop_with_origin(h: &TestHome) -> PathBuf {
    let repo = h.git_repo("code/shop");
    git(&repo, &["remote", "add", "origin", "git@github.com:acme/shop.git"]);
    repo
}

/// A keyring service name no other test (in this process or another) uses, starting with
/// `prefix`, so each test's token is its own and its logout removes only that.
pub fn keyring_service(prefix: &str) -> String {
    static N: AtomicU32 = AtomicU32::new(0);
    format!("{prefix}-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

/// Points `cmd` (a `mneme` run, or a wrapper that runs it) at `server` under the keyring
/// `service`, in `repo`, with the D-Bus session the keyring answers on (when there is one).
pub fn aim(cmd: &mut Command, server: &TeamServer, service: &str, repo: &std::path::Path) {
    cmd.env("MNEME_KEYRING_SERVICE", service).env("TEAM_MEMORY_SYNC_URL", &server.url).current_dir(repo);
    if let Ok(bus) = std::env::var("DBUS_SESSION_BUS_ADDRESS") {
        cmd.env("DBUS_SESSION_BUS_ADDRESS", bus);
    }
}

/// What a signed-in CLI team test stands on: a home of its own with the acme/shop project, the
/// project's `team/` folder, the server it syncs with and a keyring service name of its own.
pub struct TeamProject {
    pub h: TestHome,
    pub repo: PathBuf,
    pub team: PathBuf,
    pub server: TeamServer,
    pub service: String,
}

impl TeamProject {
    /// A fresh one, its keyring service named after `service_prefix` (see [`keyring_service`]).
    pub fn new(service_prefix: &str) -> TeamProject {
        let server = TeamServer::start();
        let service = keyring_service(service_prefix);
        let h = TestHome::new();
        let repo = shop_with_origin(&h);
        let team = h.memdir_for(&repo).join("team");
        TeamProject { h, repo, team, server, service }
    }

    /// [`aim`]s `cmd` at this project, its server and keyring service.
    pub fn aim(&self, cmd: &mut Command) {
        aim(cmd, &self.server, &self.service, &self.repo);
    }
}

/// What `mneme team login` printed; `None` where no keyring is reachable and none is required
/// ([`crate::keyring_required`]): the sign-in must then have failed saying so in one line, and
/// the test stops there.
pub fn signed_in(login: Output) -> Option<String> {
    let err = String::from_utf8_lossy(&login.stderr).into_owned();
    if !login.status.success() && !crate::keyring_required() {
        assert!(err.trim_end().lines().count() == 1 && err.contains("no OS keyring is reachable"), "`mneme team login` without a keyring: {err}");
        return None;
    }
    assert!(login.status.success(), "`mneme team login` failed: {err}");
    Some(String::from_utf8(login.stdout).expect("utf-8"))
}
