//! What the SIGKILL crash tests of operations that write several files share (`crash_rename.rs`,
//! `crash_trash.rs`, `crash_dream.rs`, `crash_merge.rs`, `crash_settings.rs`, `crash_team.rs`):
//! starting the real `mneme` binary, killing it after a pause drawn over the span one whole run
//! takes here, and looking for the temporary files a killed writer leaves. `crash_edit.rs` is
//! the model; each test file compiles this module on its own, so one that uses part of it
//! would warn about the rest.
#![allow(dead_code)]

use std::fs;
use std::io::Write;
use std::os::unix::process::ExitStatusExt;
use mneme_testsupport::TestHome;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// The real `mneme` in `repo`, with the test's home and its own managed folder.
pub fn cmd(h: &TestHome, repo: &Path, args: &[&str]) -> Command {
    let mut c = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), h);
    c.current_dir(repo).arg("--managed-dir").arg(h.root.join("managed")).args(args);
    c
}

/// Runs `mneme args` in `repo` and answers its stdout; fails the test when it fails.
pub fn ok(h: &TestHome, repo: &Path, args: &[&str]) -> String {
    let out = cmd(h, repo, args).output().unwrap();
    assert!(out.status.success(), "mneme {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

/// A pause in `[0, span)` microseconds, mixed from the run's number and the clock: the number
/// spreads the kills over the span from run to run, the clock keeps reruns from repeating one
/// schedule that happens to miss the window between two writes.
pub fn jitter(seed: u64, span_us: u64) -> u64 {
    let nanos = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().subsec_nanos() as u64;
    let mixed = (nanos ^ seed.wrapping_mul(0x9E37_79B9_7F4A_7C15)).wrapping_mul(0x2545_F491_4F6C_DD1D) >> 33;
    mixed % span_us.max(1)
}

/// How long `run` takes, in microseconds (at least 1 ms), measured on one real run: the kills
/// of the loop that follows are spread over it and a quarter more, so some land after the end.
pub fn span_of(run: impl FnOnce()) -> u64 {
    let started = Instant::now();
    run();
    (started.elapsed().as_micros() as u64).max(1000)
}

/// How one run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// SIGKILL stopped it.
    Killed,
    /// It finished before the kill (with this exit code).
    Finished(i32),
}

/// Starts `cmd`, feeds it `stdin` from a thread (a kill may come before it has read it all),
/// and sends SIGKILL after a pause drawn from `seed` over `span_us` and a quarter more.
pub fn kill_at_random(mut cmd: Command, seed: u64, span_us: u64, stdin: Option<Vec<u8>>) -> Ended {
    cmd.stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() }).stdout(Stdio::null()).stderr(Stdio::null());
    let mut child = cmd.spawn().expect("mneme starts");
    let feeder = stdin.map(|input| {
        let mut pipe = child.stdin.take().expect("stdin");
        std::thread::spawn(move || {
            let _ = pipe.write_all(&input);
        })
    });
    std::thread::sleep(Duration::from_micros(jitter(seed, span_us + span_us / 4)));
    // A child that already exited is a zombie until waited for: the kill is then a no-op and
    // the status its own.
    let _ = child.kill();
    let status = child.wait().expect("wait for mneme");
    if let Some(f) = feeder {
        f.join().unwrap();
    }
    match status.signal() {
        Some(9) => Ended::Killed,
        _ => Ended::Finished(status.code().unwrap_or(-1)),
    }
}

/// Mneme's temporary files (`mneme_store::atomic`'s names) anywhere under `dir`.
pub fn temps_under(dir: &Path) -> Vec<String> {
    mneme_testsupport::files_under(dir)
        .into_iter()
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| {
                n.starts_with(mneme_store::atomic::TEMP_PREFIX) && n.ends_with(mneme_store::atomic::TEMP_SUFFIX)
            })
        })
        .map(|p| p.display().to_string())
        .collect()
}

/// A folder's files (not under `skip`-named entries) and their bytes, by path relative to it.
pub fn files_of(dir: &Path, skip: impl Fn(&str) -> bool) -> std::collections::BTreeMap<String, Vec<u8>> {
    mneme_testsupport::files_under(dir)
        .into_iter()
        .filter_map(|p| {
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            (!skip(&rel)).then(|| (rel, fs::read(&p).unwrap()))
        })
        .collect()
}
