//! Mneme's `.consolidate-lock` against Claude Code's own lock code. A node process runs Claude
//! Code's consolidationLock module and isProcessRunning, cut byte for byte out of the installed
//! binary (`MNEME_CLAUDE_BIN`) at test time by `crates/dream/tests/data/consolidation_lock_gen.mjs`
//! into the build folder (Claude Code's code is never committed), and the real `mneme` binary
//! dreams the same folder:
//! each blocks the other while it holds the lock, each reclaims the lock of a dead holder, and
//! Claude Code's rollback puts back the mtime Mneme reads. Every release `MNEME_CLAUDE_BINS`
//! names is run too, in its own layout (2.1.100's cli.js, one bundle, ES module text).

mod common;

use mneme_stub_model::StubModel;
use mneme_testsupport::{claude_code, TestHome};
use serde_json::Value;
use std::fs;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, ChildStdout, Command, Output, Stdio};
use std::time::{Duration, Instant};

const LOCK_GEN: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../dream/tests/data/consolidation_lock_gen.mjs");

/// The driver with Claude Code's lock code, generated once per test process from the installed
/// binary; `None` (the test is skipped) without one, unless `MNEME_REQUIRE_CLAUDE=1`.
fn claude_lock() -> Option<&'static Path> {
    static SCRIPT: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    SCRIPT.get_or_init(|| Some(cut_lock_code(&claude_code::pinned()?, "pinned"))).as_deref()
}

/// The cutter's exit status for a binary that holds no consolidationLock module at all.
const NO_LOCK_MODULE: i32 = 3;

/// Cuts the lock code out of `bin` into a driver script named by `tag`. A binary whose lock
/// code the cutter cannot find fails the test, one the cutter finds no lock module in at all
/// too: every release Mneme follows has auto dream (docs/claude-code-versions.md, its server
/// flag in every release checked), so that is the cutter missing a layout, not a release to
/// pass over (which would let the test pass having checked nothing).
fn cut_lock_code(bin: &Path, tag: &str) -> PathBuf {
    let out = Command::new("node").arg(LOCK_GEN).arg(bin).output().unwrap_or_else(|e| {
        panic!("node is needed to cut Claude Code's lock code ({e}); install it with `sudo apt-get install nodejs` (npm test needs it too)")
    });
    assert_ne!(
        out.status.code(),
        Some(NO_LOCK_MODULE),
        "{LOCK_GEN} found no lock module in {}, yet every release Mneme follows has auto dream: teach it this release's layout. It said: {}",
        bin.display(),
        String::from_utf8_lossy(&out.stderr).trim()
    );
    assert!(out.status.success(), "{LOCK_GEN} could not cut the lock code from {}: {}", bin.display(), String::from_utf8_lossy(&out.stderr));
    // A name of its own per process: test processes may run at once.
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("claude-code-lock");
    fs::create_dir_all(&dir).unwrap();
    let script = dir.join(format!("consolidation_lock_cc-{tag}-{}.mjs", std::process::id()));
    fs::write(&script, &out.stdout).unwrap();
    script
}

/// A node process running Claude Code's lock functions on one memory folder; its PID is the
/// one they write, and it stays alive (a running Claude Code) until dropped or [`exit`]ed.
struct ClaudeCode {
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    /// The release still has recordConsolidation (the manual `/dream`'s stamp, 2.1.100 to
    /// 2.1.145), which [`ClaudeCode::record`] runs.
    records: bool,
}

impl ClaudeCode {
    fn start(memory_dir: &Path) -> ClaudeCode {
        ClaudeCode::start_with(claude_lock().expect("the test checked claude_lock() first"), memory_dir)
    }

    /// As [`ClaudeCode::start`], with the lock code of the driver `script`.
    fn start_with(script: &Path, memory_dir: &Path) -> ClaudeCode {
        let spawned = Command::new("node")
            .arg(script)
            .arg(memory_dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn();
        let mut child = match spawned {
            Ok(c) => c,
            Err(e) => panic!(
                "node is needed to run Claude Code's lock code ({e}); install it with `sudo apt-get install nodejs` (npm test needs it too)"
            ),
        };
        let stdin = child.stdin.take();
        let stdout = BufReader::new(child.stdout.take().expect("piped"));
        let mut cc = ClaudeCode { child, stdin, stdout, records: false };
        let ready = cc.line();
        assert_eq!(ready["ready"], cc.pid(), "the driver starts: {ready}");
        cc.records = ready["records"].as_bool().expect("the driver says whether it has recordConsolidation");
        cc
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn line(&mut self) -> Value {
        let mut line = String::new();
        self.stdout.read_line(&mut line).expect("node answers");
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{e}: {line:?}"))
    }

    fn send(&mut self, command: &str) {
        let stdin = self.stdin.as_mut().expect("still running");
        writeln!(stdin, "{command}").unwrap();
        stdin.flush().unwrap();
    }

    /// `tryAcquireConsolidationLock()`: the prior mtime in ms (0 for no lock file), or `None`
    /// where Claude Code's function returns null.
    fn acquire(&mut self) -> Option<f64> {
        self.send("acquire");
        self.answer_acquire()
    }

    fn answer_acquire(&mut self) -> Option<f64> {
        let v = self.line();
        assert!(v.get("acquired").is_some(), "{v}");
        v["acquired"].as_f64()
    }

    /// `rollbackConsolidationLock(prior)`, with the prior mtime exactly as acquire returned it.
    fn rollback(&mut self, prior: f64) {
        self.send(&format!("rollback {prior}"));
        assert_eq!(self.line()["rolledBack"], true);
    }

    /// `recordConsolidation()`, where the release has it.
    fn record(&mut self) {
        self.send("record");
        assert_eq!(self.line()["recorded"], true);
    }

    /// `readLastConsolidatedAt()`.
    fn last_consolidated_at(&mut self) -> f64 {
        self.send("last");
        self.line()["lastConsolidatedAt"].as_f64().expect("a number")
    }

    /// Ends the process the way a Claude Code session ends: no rollback, its PID now dead.
    fn exit(mut self) -> u32 {
        drop(self.stdin.take());
        assert!(self.child.wait().unwrap().success());
        self.child.id()
    }
}

impl Drop for ClaudeCode {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn command(h: &TestHome, cwd: &Path, args: &[&str]) -> Command {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), h);
    cmd.env("MNEME_KEYRING_SERVICE", "mneme-dream-interop-test")
        .env("ANTHROPIC_API_KEY", "sk-ant-test")
        .current_dir(cwd)
        .arg("--managed-dir")
        .arg(h.root.join("managed"))
        .args(args);
    cmd
}

fn json(text: &[u8]) -> Value {
    let text = String::from_utf8_lossy(text);
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{e}: {text}"))
}

fn ok(h: &TestHome, cwd: &Path, args: &[&str]) -> Value {
    let out = command(h, cwd, args).output().expect("mneme runs");
    assert!(out.status.success(), "mneme {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    json(&out.stdout)
}

/// The one line a blocked `mneme dream run` prints, checked to be that.
fn blocked_line(out: &Output) -> String {
    assert_eq!(out.status.code(), Some(1), "mneme should be blocked: {}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(err.trim_end().lines().count(), 1, "one clear line, got: {err}");
    err
}

/// A repository whose memory holds two near-duplicate feedback memories: a dream merges them.
fn project() -> (TestHome, PathBuf, PathBuf) {
    common::tabs_project("")
}

fn lock_body(mem: &Path) -> String {
    fs::read_to_string(mem.join(".consolidate-lock")).unwrap()
}

fn mtime_ms(p: &Path) -> f64 {
    let d = fs::metadata(p).unwrap().modified().unwrap().duration_since(std::time::UNIX_EPOCH).unwrap();
    d.as_nanos() as f64 / 1e6
}

/// The same instant to within a microsecond: Node keeps mtimes as float milliseconds.
fn same_ms(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-3
}

#[test]
fn claude_codes_lock_blocks_mneme_and_a_dead_claude_codes_lock_is_reclaimed() {
    if claude_lock().is_none() {
        return;
    }
    let (h, repo, mem) = project();
    let mut cc = ClaudeCode::start(&mem);
    assert_eq!(cc.acquire(), Some(0.0), "no lock file before");
    assert_eq!(lock_body(&mem), cc.pid().to_string());
    let taken = mtime_ms(&mem.join(".consolidate-lock"));

    let out = command(&h, &repo, &["dream", "run", "--offline", "--yes"]).output().unwrap();
    let err = blocked_line(&out);
    assert!(
        err.starts_with(&format!("mneme: another dream holds the lock {} (PID {}, taken 0 min ago);", mem.join(".consolidate-lock").display(), cc.pid())),
        "{err}"
    );
    assert!(mem.join("tabs_old.md").exists(), "nothing consolidated");
    let status = ok(&h, &repo, &["dream", "status", "--json"]);
    assert_eq!(status["status"]["lock"]["held"], true);
    assert_eq!(status["status"]["lock"]["holderPid"], cc.pid());

    // The session ends without rolling back: a fresh lock with a dead PID.
    let dead = cc.exit();
    assert_eq!(lock_body(&mem), dead.to_string());
    let status = ok(&h, &repo, &["dream", "status", "--json"]);
    assert_eq!(status["status"]["lock"]["holderAlive"], false);
    assert_eq!(status["status"]["lock"]["held"], false);
    let rec = ok(&h, &repo, &["dream", "run", "--offline", "--yes", "--json"]);
    assert_eq!(rec["status"], "applied");
    assert!(!mem.join("tabs_old.md").exists());
    assert!(same_ms(rec["lock"]["priorMtimeNs"].as_f64().unwrap() / 1e6, taken), "Mneme took over Claude Code's lock: {rec}");
}

/// The lock code of every release the environment names (`MNEME_CLAUDE_BINS`,
/// `MNEME_CLAUDE_BIN`), found in each one's own layout: 2.1.100's cli.js (an ES module with the
/// bundler's lazy initialiser), one bundle (2.1.113 to 2.1.197, 2.1.282 to 2.1.316), ES module
/// text whose functions take the memory folder (2.1.257 to 2.1.278 inside a larger chunk,
/// 2.1.332 and 2.1.337 as a chunk of their own). Each blocks Mneme while it holds the lock and,
/// rolled back with no lock before, leaves none behind; after Mneme's dream it reads Mneme's
/// mtime as the last consolidation.
#[test]
fn every_releases_lock_code_blocks_mneme_and_rolls_back() {
    let releases = claude_code::all();
    if releases.is_empty() {
        claude_code::skip("no Claude Code binary is named; run: export MNEME_CLAUDE_BINS=\"$(scripts/claude-code.sh --matrix)\"");
        return;
    }
    // Cut all at once: each cutter mostly waits on reading a binary of a few hundred MB.
    let cuts: Vec<_> = std::thread::scope(|s| {
        let running: Vec<_> = releases.iter().map(|(v, bin)| s.spawn(move || cut_lock_code(bin, &v.to_string()))).collect();
        releases.iter().map(|(v, _)| *v).zip(running.into_iter().map(|t| t.join().expect("the cutter's thread"))).collect()
    });
    for (v, script) in cuts {
        let (h, repo, mem) = project();
        let mut cc = ClaudeCode::start_with(&script, &mem);
        assert_eq!(cc.acquire(), Some(0.0), "{v}: no lock file before");
        assert_eq!(lock_body(&mem), cc.pid().to_string(), "{v}");
        let out = command(&h, &repo, &["dream", "run", "--offline", "--yes"]).output().unwrap();
        assert!(blocked_line(&out).contains(&format!("(PID {}, taken 0 min ago)", cc.pid())), "{v}");
        cc.rollback(0.0);
        assert!(!mem.join(".consolidate-lock").exists(), "{v}: the rollback removes the lock it made");
        let rec = ok(&h, &repo, &["dream", "run", "--offline", "--yes", "--json"]);
        assert_eq!(rec["status"], "applied", "{v}");
        let dreamt = mtime_ms(&mem.join(".consolidate-lock"));
        assert!(same_ms(cc.last_consolidated_at(), dreamt), "{v}: Claude Code reads Mneme's dream as the last one");
        assert!(same_ms(cc.acquire().expect("Mneme's finished dream left a dead PID"), dreamt), "{v}");

        // 2.1.100 to 2.1.145: the manual /dream stamps the lock with its session's PID at once,
        // with no holder check and no rollback. Mneme finds it held while that session lives,
        // and counts the 24 hours from the stamp, as Claude Code's own auto dream does.
        if cc.records {
            let (h, repo, mem) = project();
            let mut cc = ClaudeCode::start_with(&script, &mem);
            cc.record();
            assert_eq!(lock_body(&mem), cc.pid().to_string(), "{v}");
            let stamped = mtime_ms(&mem.join(".consolidate-lock"));
            let out = command(&h, &repo, &["dream", "run", "--offline", "--yes"]).output().unwrap();
            assert!(blocked_line(&out).contains(&format!("(PID {}, taken 0 min ago)", cc.pid())), "{v}");
            let status = ok(&h, &repo, &["dream", "status", "--json"]);
            assert_eq!(status["status"]["lastConsolidatedAtMs"].as_i64(), Some(stamped as i64), "{v}: {status}");
            assert!(mem.join("tabs_old.md").exists(), "{v}: nothing consolidated");
        }
    }
}

#[test]
fn mnemes_lock_blocks_claude_codes_and_a_crashed_mnemes_is_reclaimed() {
    if claude_lock().is_none() {
        return;
    }
    let (h, repo, mem) = project();
    // A model-driven dream whose model never answers holds the lock for as long as it runs.
    let stub = StubModel::start_blocking();
    stub.push_hang();
    let data = h.root.join("mneme-data");
    fs::create_dir_all(&data).unwrap();
    fs::write(data.join("providers.json"), format!("{{\"kind\": \"anthropic\", \"base_url\": \"{}\"}}", stub.base_url())).unwrap();
    let mut mneme = command(&h, &repo, &["dream", "run"]).stdout(Stdio::null()).stderr(Stdio::null()).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while stub.model_requests().is_empty() {
        assert!(Instant::now() < deadline, "the dreamer never asked the model");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(lock_body(&mem), mneme.id().to_string());
    let taken = mtime_ms(&mem.join(".consolidate-lock"));

    let mut cc = ClaudeCode::start(&mem);
    assert_eq!(cc.acquire(), None, "Claude Code's function returns null while Mneme dreams");
    assert_eq!(lock_body(&mem), mneme.id().to_string(), "and leaves the lock alone");
    assert!(same_ms(cc.last_consolidated_at(), taken), "it reads Mneme's mtime as the last consolidation");

    // kill -9: no rollback, the lock keeps a dead PID, and Claude Code's rule reclaims it.
    mneme.kill().unwrap();
    mneme.wait().unwrap();
    let prior = cc.acquire().expect("Claude Code takes over a dead PID's lock");
    assert!(same_ms(prior, taken), "remembering Mneme's mtime: {prior} vs {taken}");
    assert_eq!(lock_body(&mem), cc.pid().to_string());
}

#[test]
fn claude_codes_rollback_restores_the_mtime_mneme_reads() {
    if claude_lock().is_none() {
        return;
    }
    let (h, repo, mem) = project();
    let rec = ok(&h, &repo, &["dream", "run", "--offline", "--yes", "--json"]);
    assert_eq!(rec["status"], "applied");
    let dreamt = ok(&h, &repo, &["dream", "status", "--json"])["status"]["lastConsolidatedAtMs"].as_i64().expect("Mneme dreamt");

    let mut cc = ClaudeCode::start(&mem);
    let prior = cc.acquire().expect("Mneme's finished dream left a dead PID");
    assert_eq!(prior as i64, dreamt, "Claude Code reads the mtime Mneme wrote");
    let status = ok(&h, &repo, &["dream", "status", "--json"]);
    assert_eq!(status["status"]["lock"]["holderPid"], cc.pid());
    assert!(status["status"]["lastConsolidatedAtMs"].as_i64().unwrap() >= dreamt);

    // The dream fails: Claude Code empties the lock and puts the old mtime back.
    cc.rollback(prior);
    assert_eq!(lock_body(&mem), "");
    let status = ok(&h, &repo, &["dream", "status", "--json"]);
    assert_eq!(status["status"]["lastConsolidatedAtMs"].as_i64(), Some(dreamt), "Mneme sees its own dream as the last one again");
    assert_eq!(status["status"]["lock"]["held"], false);
    assert_eq!(status["status"]["lock"]["holderPid"], Value::Null);

    // With no lock before, the rollback removes the file: Mneme sees it has never dreamt.
    let (h, repo, mem) = project();
    let mut cc = ClaudeCode::start(&mem);
    assert_eq!(cc.acquire(), Some(0.0));
    cc.rollback(0.0);
    assert!(!mem.join(".consolidate-lock").exists());
    let status = ok(&h, &repo, &["dream", "status", "--json"]);
    assert_eq!(status["status"]["lastConsolidatedAtMs"], Value::Null);
    assert_eq!(status["status"]["lock"]["exists"], false);
}

/// Claude Code's code and `mneme dream run` started together on a fresh folder, round after
/// round, alternating who is sent off first: never do both believe they hold the lock. (Claude
/// Code's acquire is check → write → read back with nothing atomic about it; Mneme looks again
/// just before writing and once more after a short grace, and steps back when it sees the other.)
///
/// The window cannot be closed from one side while Claude Code's stays as it is: a process
/// descheduled for longer than the grace between its check and its write can still slip
/// through. So this runs on its own (`scripts/test.sh` runs it after the parallel suite, with
/// the machine otherwise quiet), not among tests that load both cores.
#[test]
#[ignore = "timing-sensitive: run alone (scripts/test.sh does)"]
fn racing_claude_codes_lock_code_never_gives_two_winners() {
    if claude_lock().is_none() {
        return;
    }
    // How long `mneme dream run` takes from spawn to writing its lock on this machine now,
    // uncontended (watched by polling for the lock file): the start delays below sweep from 0
    // to twice that, so they cross the moment both reach the lock (a fixed sweep missed it on a
    // loaded machine, where start-up took longer than the sweep).
    let mut to_lock: Vec<Duration> = (0..3)
        .map(|_| {
            let (h, repo, mem) = project();
            let lock = mem.join(".consolidate-lock");
            let started = Instant::now();
            let mut child = command(&h, &repo, &["dream", "run", "--offline", "--yes", "--json"])
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("mneme starts");
            let seen = loop {
                if lock.exists() {
                    break started.elapsed();
                }
                if child.try_wait().expect("wait").is_some() {
                    assert!(lock.exists(), "mneme dream run alone ended without taking the lock");
                    break started.elapsed();
                }
                assert!(started.elapsed() < Duration::from_secs(60), "mneme dream run alone took no lock within 60 s");
            };
            child.wait().expect("mneme ends");
            seen
        })
        .collect();
    to_lock.sort();
    // And how long Claude Code's code takes from being told to acquire to having written it.
    let mut cc_lock: Vec<Duration> = (0..3)
        .map(|_| {
            let (_h, _repo, mem) = project();
            let mut cc = ClaudeCode::start(&mem);
            let started = Instant::now();
            cc.send("acquire");
            assert!(cc.answer_acquire().is_some(), "Claude Code's code alone did not get the lock");
            started.elapsed()
        })
        .collect();
    cc_lock.sort();
    // Mneme wins a round when it reaches the lock before Claude Code's code, which is sent off
    // `offset` after Mneme (before it, for a negative offset): the crossover lies near
    // to_lock - cc_lock, inside a sweep of +-(to_lock + cc_lock).
    let reach = to_lock[1] + cc_lock[1];
    let step = (reach / 20).max(Duration::from_micros(50));
    // Who won each round, in order: `M` Mneme, `C` Claude Code's code.
    let mut winners = String::new();
    for round in 0..40 {
        let (h, repo, mem) = project();
        let mut cc = ClaudeCode::start(&mem);
        let mut cmd = command(&h, &repo, &["dream", "run", "--offline", "--yes", "--json"]);
        // Offsets from -20 to +19 steps: the two land on the lock at nearly the same moment
        // in the rounds around the crossover.
        let child = if round < 20 {
            cc.send("acquire");
            std::thread::sleep(step * (20 - round));
            cmd.spawn().expect("mneme starts")
        } else {
            let child = cmd.spawn().expect("mneme starts");
            std::thread::sleep(step * (round - 20));
            cc.send("acquire");
            child
        };
        let (mneme, claude) = (child, cc.answer_acquire());
        let out = mneme.wait_with_output().unwrap();
        let mneme_won = out.status.success();
        let claude_won = claude.is_some();
        if mneme_won && claude_won {
            let rec = json(&out.stdout);
            panic!("round {round}: both hold the lock; Claude Code's acquire returned prior {claude:?}; mneme's lock record {}; the lock now names {}", rec["lock"], lock_body(&mem));
        }
        assert!(mneme_won || claude_won, "round {round}: nobody got the lock: {}", String::from_utf8_lossy(&out.stderr));
        let holder = lock_body(&mem);
        if mneme_won {
            winners.push('M');
        } else {
            winners.push('C');
            assert_eq!(holder, cc.pid().to_string(), "round {round}: Claude Code won but the lock names {holder}");
            blocked_line(&out);
        }
    }
    // A sweep where one side won every round never brought the two to the lock together, so it
    // proved nothing about the race: each side must have won some rounds. The rounds where the
    // winner changes are where the two landed on the lock at nearly the same moment.
    let (mneme_wins, claude_wins) = (winners.matches('M').count(), winners.matches('C').count());
    let raced = winners.as_bytes().windows(2).filter(|w| w[0] != w[1]).count();
    eprintln!(
        "40 rounds ({winners}), Claude Code's code sent off {:?} before to {:?} after Mneme (alone, Mneme reached its lock after {:?} and Claude Code's code after {:?}): mneme won {mneme_wins}, Claude Code's code won {claude_wins}; the winner changed {raced} times",
        step * 20,
        step * 19,
        to_lock[1],
        cc_lock[1]
    );
    assert!(
        mneme_wins > 0 && claude_wins > 0,
        "no race happened: one side won all 40 rounds ({winners}); the offsets (+-{:?}) must sweep across the moment both reach the lock",
        step * 20
    );
}
