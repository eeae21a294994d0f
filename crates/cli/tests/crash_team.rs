//! `mneme team pull` killed at random points (SIGKILL) while it writes many team files, one of
//! them over a local edit. Whatever the kill interrupts, each file is the version before the
//! pull or the server's new one, whole; the local edit is in its file or kept in Mneme's trash
//! and listed by `mneme team status` for restoring (the pull records it before it writes over
//! it); the sync state stays readable; and the next pull finishes with no temporary file left.
//! `team_lost_and_killed.rs` stops pulls at a chosen write (SIGXFSZ); both run against the same
//! loopback team server (`mneme_testsupport::team_server`).
//!
//! The sign-in needs a Secret Service (`scripts/with-keyring.sh`); without one, the test checks
//! that `mneme team login` says so and stops, as the other team tests of the CLI do.
#![cfg(target_os = "linux")]

mod common;
mod killing;

use killing::{kill_at_random, span_of, temps_under, Ended};
use mneme_testsupport::team_server::{signed_in, TeamProject};
use mneme_testsupport::write_file;
use serde_json::Value;
use std::path::Path;
use std::process::{Command, Output};

const MNEME: &str = env!("CARGO_BIN_EXE_mneme");
/// Team files a pull writes, and the runs (each pulls a new version of all of them).
const FILES: usize = 30;
const MIN_RUNS: usize = 15;
const MAX_RUNS: usize = 80;
const WANT_BETWEEN: usize = 3;

/// The signed-in project; its fields are the [`TeamProject`]'s.
struct Synced(TeamProject);

impl std::ops::Deref for Synced {
    type Target = TeamProject;
    fn deref(&self) -> &TeamProject {
        &self.0
    }
}

impl Synced {
    fn start() -> Option<Synced> {
        let s = Synced(TeamProject::new("mneme-cli-crash-team"));
        signed_in(s.command(&["team", "login"]).output().unwrap())?;
        Some(s)
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut cmd = mneme_testsupport::command_in(MNEME, &self.h);
        self.aim(&mut cmd);
        cmd.args(args);
        cmd
    }

    fn ok(&self, args: &[&str]) -> String {
        let out: Output = self.command(args).output().unwrap();
        common::succeeded(out, args)
    }

    /// The server's version `v` of every file.
    fn publish(&self, v: usize) {
        let mut entries = self.server.entries.lock().unwrap();
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
