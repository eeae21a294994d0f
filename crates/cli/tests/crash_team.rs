//! `mneme team pull` killed at random points (SIGKILL) while it writes many team files, one of
//! them over a local edit. Whatever the kill interrupts, each file is the version before the
//! pull or the server's new one, whole; the local edit is in its file or kept in Mneme's trash
//! and listed by `mneme team status` for restoring (the pull records it before it writes over
//! it); the sync state stays readable; and the next pull finishes with no temporary file left.
//! `team_lost_and_killed.rs` stops pulls at a chosen write (SIGXFSZ); the server here is the
//! same kind of raw loopback one.
//!
//! The sign-in needs a Secret Service (`scripts/with-keyring.sh`); without one, the test checks
//! that `mneme team login` says so and stops, as the other team tests of the CLI do.
#![cfg(target_os = "linux")]

mod common;
mod killing;

use killing::{kill_at_random, span_of, temps_under, Ended};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::{git, write_file, TestHome};
use serde_json::{json as j, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

const MNEME: &str = env!("CARGO_BIN_EXE_mneme");
/// Team files a pull writes, and the runs (each pulls a new version of all of them).
const FILES: usize = 30;
const MIN_RUNS: usize = 15;
const MAX_RUNS: usize = 80;
const WANT_BETWEEN: usize = 3;

/// `sha256:<hex>` of `text`, as the server names content (from `sha256sum`: no hash crate here).
fn checksum(text: &str) -> String {
    let mut c = Command::new("sha256sum");
    c.stdout(std::process::Stdio::piped());
    let out = mneme_testsupport::output_with_stdin(c, Some(text.as_bytes()));
    assert!(out.status.success(), "sha256sum runs");
    format!("sha256:{}", String::from_utf8(out.stdout).unwrap().split_whitespace().next().unwrap())
}

struct Synced {
    h: TestHome,
    repo: PathBuf,
    team: PathBuf,
    url: String,
    service: String,
    entries: Arc<Mutex<BTreeMap<String, String>>>,
}

impl Synced {
    fn start() -> Option<Synced> {
        let entries: Arc<Mutex<BTreeMap<String, String>>> = Arc::default();
        let held = entries.clone();
        let (url, _seen) = serve(move |req| {
            let line = req.lines().next().unwrap_or_default();
            if line.starts_with("POST /oauth/device/code") {
                json(
                    "200 OK",
                    r#"{"device_code":"d-1","user_code":"WDJB-MJHT","verification_uri":"http://127.0.0.1/device","verification_uri_complete":"http://127.0.0.1/device?user_code=WDJB-MJHT","expires_in":600,"interval":1}"#,
                )
            } else if line.starts_with("POST /oauth/token") {
                json("200 OK", r#"{"access_token":"t0k3n","token_type":"Bearer","expires_in":3600}"#)
            } else if line.starts_with("GET /api/mneme/me") {
                json("200 OK", r#"{"user":"ana","repos":[]}"#)
            } else if line.contains("view=hashes") {
                json("404 Not Found", r#"{"error":{"message":"no team memory yet"}}"#)
            } else {
                let entries = held.lock().unwrap().clone();
                let sums: BTreeMap<&String, String> = entries.iter().map(|(k, v)| (k, checksum(v))).collect();
                let body = j!({ "repo": "acme/shop", "lastModified": "x", "checksum": checksum(&format!("{sums:?}")), "content": { "entries": entries, "entryChecksums": sums } });
                json("200 OK", &body.to_string())
            }
        });
        static N: AtomicU32 = AtomicU32::new(0);
        let service = format!("mneme-cli-crash-team-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let h = TestHome::new();
        let repo = h.git_repo("code/shop");
        git(&repo, &["remote", "add", "origin", "git@github.com:acme/shop.git"]);
        let team = h.memdir_for(&repo).join("team");
        let s = Synced { h, repo, team, url, service, entries };
        let login = s.command(&["team", "login"]).output().unwrap();
        if !login.status.success() && !mneme_testsupport::keyring_required() {
            let err = common::one_line_error(login, &["team", "login"]);
            assert!(err.contains("no OS keyring is reachable"), "{err}");
            return None;
        }
        common::succeeded(login, &["team", "login"]);
        Some(s)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = mneme_testsupport::command_in(MNEME, &self.h);
        cmd.env("MNEME_KEYRING_SERVICE", &self.service).env("TEAM_MEMORY_SYNC_URL", &self.url).current_dir(&self.repo).args(args);
        if let Ok(bus) = std::env::var("DBUS_SESSION_BUS_ADDRESS") {
            cmd.env("DBUS_SESSION_BUS_ADDRESS", bus);
        }
        cmd
    }

    fn ok(&self, args: &[&str]) -> String {
        let out: Output = self.command(args).output().unwrap();
        common::succeeded(out, args)
    }

    /// The server's version `v` of every file.
    fn publish(&self, v: usize) {
        let mut entries = self.entries.lock().unwrap();
        for i in 0..FILES {
            entries.insert(format!("k{i:02}.md"), version(i, v));
        }
    }

    /// The local edits a pull replaced, as `team status` lists them for restoring.
    fn replaced(&self) -> Vec<String> {
        let status: Value = serde_json::from_str(&self.ok(&["team", "status", "--json"])).unwrap();
        status["state"]["conflicts"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["kind"] == "pulledOverLocalEdit")
            .map(|c| c["key"].as_str().unwrap().to_string())
            .collect()
    }
}

impl Drop for Synced {
    fn drop(&mut self) {
        let _ = self.command(&["team", "logout"]).output();
    }
}

fn version(i: usize, v: usize) -> String {
    format!("file {i}, version {v}\n").repeat(400)
}

fn local_edit(v: usize) -> String {
    format!("my own edit before pull {v}\n")
}

/// Whether Mneme's trash holds a file with exactly `text`.
fn trash_holds(data: &Path, text: &str) -> bool {
    mneme_testsupport::files_under(&data.join("trash")).iter().any(|p| std::fs::read(p).is_ok_and(|b| b == text.as_bytes()))
}

#[test]
fn killed_pulls_leave_old_or_new_files_and_keep_the_local_edit_they_replace() {
    let Some(s) = Synced::start() else { return };
    let data = s.h.root.join("mneme-data");
    s.publish(0);
    let span_us = span_of(|| drop(s.ok(&["team", "pull"])));
    assert_eq!(std::fs::read_to_string(s.team.join("k00.md")).unwrap(), version(0, 0));

    let (mut between, mut killed, mut runs) = (0, 0, 0);
    for v in 1..=MAX_RUNS {
        runs += 1;
        // k00.md edited here since the last pull; the server has a new version of everything.
        write_file(&s.team.join("k00.md"), &local_edit(v));
        s.publish(v);
        let listed_before = s.replaced().len();
        killed += usize::from(kill_at_random(s.command(&["team", "pull"]), v as u64, span_us, None) == Ended::Killed);

        let mut new = 0;
        for i in 0..FILES {
            let now = std::fs::read_to_string(s.team.join(format!("k{i:02}.md"))).unwrap();
            let old = if i == 0 { local_edit(v) } else { version(i, v - 1) };
            assert!(now == old || now == version(i, v), "run {v}: k{i:02}.md is neither its old text nor the server's new one ({} bytes)", now.len());
            new += usize::from(now == version(i, v));
        }
        if new > 0 && new < FILES {
            between += 1;
        }
        // The local edit is in its file, or kept and listed for restoring.
        let k00 = std::fs::read_to_string(s.team.join("k00.md")).unwrap();
        if k00 != local_edit(v) {
            assert!(trash_holds(&data, &local_edit(v)), "run {v}: the local edit of k00.md was written over and is not in the trash");
            assert!(s.replaced().len() > listed_before, "run {v}: the replaced edit is not listed for restoring");
        }

        // The next pull finishes: every file the server's, no temporary file left.
        let pulled = s.ok(&["team", "pull"]);
        for i in 0..FILES {
            assert_eq!(std::fs::read_to_string(s.team.join(format!("k{i:02}.md"))).unwrap(), version(i, v), "run {v}: after the next pull ({pulled})");
        }
        assert!(trash_holds(&data, &local_edit(v)), "run {v}: the local edit is kept in the trash");
        assert_eq!(temps_under(&s.team), Vec::<String>::new(), "run {v}: temporary files outlive the next pull");

        if between >= WANT_BETWEEN && runs >= MIN_RUNS {
            break;
        }
    }
    eprintln!("{runs} pulls, {killed} killed, {between} between the first and the last file");
    assert!(between > 0, "none of {runs} kills landed between the pull's writes: the test proved nothing (a pull took {span_us} µs)");
}
