//! Which Claude Code this user runs: the `claude` a terminal would start (the first on
//! `PATH`), else the native installer's or npm's usual places, and the release it is.
//!
//! The release decides what Mneme renders (`mneme_core::versions`), so it is read from the
//! npm package manifest beside the binary when there is one (npm installs), else from the
//! binary itself (`claude --version`, which touches no state) rather than guessed from a folder
//! name, and cached per binary (path, size, mtime) because Claude Code replaces itself when it
//! updates.

use crate::env::Environment;
use mneme_core::versions::{self, Profile, Runtime};
use mneme_core::ClaudeVersion;
use serde::Serialize;
use std::collections::HashMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant, SystemTime};

/// How long `claude --version` may take before Mneme gives up on it.
const VERSION_TIMEOUT: Duration = Duration::from_secs(10);

/// Where the binary was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub enum FoundBy {
    /// The first `claude` on `PATH`: what a terminal runs.
    Path,
    /// The native installer's launcher (`~/.local/bin/claude`) or its older local install
    /// (`~/.claude/local/claude`).
    NativeInstaller,
    /// An npm global install outside `PATH`.
    NpmGlobal,
}

/// An installed Claude Code.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ClaudeInstall {
    /// The path that was found (a launcher or symlink, as the user knows it).
    pub path: PathBuf,
    /// The file it resolves to.
    pub resolved: PathBuf,
    pub found_by: FoundBy,
    /// `None` when `claude --version` failed; `version_error` says why.
    pub version: Option<ClaudeVersion>,
    pub version_error: Option<String>,
    /// What runs it, when the file says: a Node script (`cli.js`, npm's package up to
    /// 2.1.112) or a compiled binary. `None` for a launcher script of another kind.
    pub runtime: Option<Runtime>,
}

/// Finds the Claude Code this user runs, or `None` when there is none.
pub fn detect(env: &Environment) -> Option<ClaudeInstall> {
    let (path, found_by) = candidates(env).into_iter().find(|(p, _)| is_executable(p))?;
    let resolved = std::fs::canonicalize(&path).unwrap_or_else(|_| path.clone());
    let (version, version_error) = match cached_version(&resolved, env) {
        Ok(v) => (Some(v), None),
        Err(e) => (None, Some(e.to_string())),
    };
    let runtime = runtime_of(&resolved);
    Some(ClaudeInstall { path, resolved, found_by, version, version_error, runtime })
}

impl ClaudeInstall {
    /// The behaviours of this install: its release's profile, as run by the runtime found
    /// (a native install of a release whose npm package was still `cli.js` is a binary).
    /// `None` when the release could not be read.
    pub fn profile(&self) -> Option<Profile> {
        let profile = versions::profile_for(self.version?).profile;
        Some(match self.runtime {
            Some(r) => profile.with_runtime(r),
            None => profile,
        })
    }
}

/// The behaviours of the Claude Code this user runs, or of the newest release Mneme checks
/// when none is found (or its release cannot be read): what files Mneme writes for it follow.
pub fn installed_profile(env: &Environment) -> Profile {
    detect(env)
        .and_then(|found| found.profile())
        .unwrap_or_else(|| versions::profile_for(versions::newest_checked()).profile)
}

/// Node for a script whose `#!` line names node, a binary for an executable format (ELF,
/// Mach-O), else unknown.
pub fn runtime_of(file: &Path) -> Option<Runtime> {
    let mut head = [0u8; 128];
    let n = std::fs::File::open(file).and_then(|mut f| f.read(&mut head)).ok()?;
    let head = &head[..n];
    let first_line = head.split(|&b| b == b'\n').next().unwrap_or(head);
    if first_line.starts_with(b"#!") {
        return first_line.windows(4).any(|w| w == b"node").then_some(Runtime::Node);
    }
    let binary = head.starts_with(b"\x7fELF")
        || [[0xcf, 0xfa, 0xed, 0xfe], [0xca, 0xfe, 0xba, 0xbe]].iter().any(|magic| head.starts_with(magic));
    binary.then_some(Runtime::Bun)
}

/// Every place Claude Code may be, in the order a user's shell and the installers make them
/// win: `PATH` first, then the native installer, then npm's global folders.
pub fn candidates(env: &Environment) -> Vec<(PathBuf, FoundBy)> {
    let mut out = Vec::new();
    for dir in std::env::split_paths(env.var("PATH").unwrap_or("")) {
        // An empty or relative PATH entry means the current folder, which depends on where
        // Mneme was started, not on the user's setup.
        if dir.is_absolute() {
            out.push((dir.join("claude"), FoundBy::Path));
        }
    }
    let home = &env.home;
    out.push((home.join(".local/bin/claude"), FoundBy::NativeInstaller));
    out.push((env.config_home().join("local/claude"), FoundBy::NativeInstaller));
    for prefix in npm_prefixes(env) {
        out.push((prefix.join("bin/claude"), FoundBy::NpmGlobal));
    }
    // A place named twice (PATH often repeats a folder; `/usr/local/bin` is also npm's) is
    // looked at once, under the first reason it was named for.
    let mut seen = std::collections::HashSet::new();
    out.retain(|(p, _)| seen.insert(p.clone()));
    out
}

/// npm's global prefixes: `NPM_CONFIG_PREFIX`, the user-level ones people configure, and the
/// system ones Node's installers use.
fn npm_prefixes(env: &Environment) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Some(p) = env.var("NPM_CONFIG_PREFIX").or_else(|| env.var("npm_config_prefix")).filter(|p| p.starts_with('/')) {
        out.push(PathBuf::from(p));
    }
    out.push(env.home.join(".npm-global"));
    out.push(env.home.join(".local"));
    out.push(PathBuf::from("/usr/local"));
    out.push(PathBuf::from("/usr"));
    out
}

fn is_executable(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(p).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Why the release of a `claude` binary could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VersionError {
    #[error("cannot read {}: {message}", bin.display())]
    Unreadable { bin: PathBuf, message: String },
    #[error("could not run {} --version: {message}", bin.display())]
    Run { bin: PathBuf, message: String },
    #[error("{} --version did not answer within {}s", bin.display(), VERSION_TIMEOUT.as_secs())]
    Timeout { bin: PathBuf },
    #[error("{} --version failed ({status})", bin.display())]
    Failed { bin: PathBuf, status: String },
    #[error("{} --version printed no version: {output:?}", bin.display())]
    NoVersion { bin: PathBuf, output: String },
}

impl VersionError {
    /// Whether the same file may answer otherwise on the next try: it could not be started
    /// (permissions, a binary being replaced) or did not answer in time (a busy machine).
    fn is_transient(&self) -> bool {
        matches!(self, VersionError::Run { .. } | VersionError::Timeout { .. })
    }
}

/// How long a transient failure ([`VersionError::is_transient`]) is remembered: long enough that
/// a binary that hangs does not cost every call the whole timeout, short enough that a fixed
/// one is read soon.
const TRANSIENT_FOR: Duration = Duration::from_secs(30);

type Key = (PathBuf, u64, Option<SystemTime>);
/// Each answer, and for a transient failure when it was had.
type Cached = (Result<ClaudeVersion, VersionError>, Option<Instant>);
static CACHE: LazyLock<Mutex<HashMap<Key, Cached>>> = LazyLock::new(Default::default);

/// `claude --version` for `bin`, remembered while the file stays the same (a transient failure
/// only for [`TRANSIENT_FOR`]).
fn cached_version(bin: &Path, env: &Environment) -> Result<ClaudeVersion, VersionError> {
    cached_version_within(bin, env, TRANSIENT_FOR)
}

fn cached_version_within(bin: &Path, env: &Environment, transient_for: Duration) -> Result<ClaudeVersion, VersionError> {
    let meta = std::fs::metadata(bin)
        .map_err(|e| VersionError::Unreadable { bin: bin.to_path_buf(), message: e.to_string() })?;
    let key = (bin.to_path_buf(), meta.len(), meta.modified().ok());
    if let Some((hit, at)) = CACHE.lock().expect("version cache").get(&key) {
        if at.is_none_or(|at| at.elapsed() < transient_for) {
            return hit.clone();
        }
    }
    // npm installs put the binary beside its package's manifest, which names the release:
    // one small read instead of starting Claude Code (tens to hundreds of milliseconds, paid
    // by every `mneme context` process, since this cache lives in memory).
    let got = match package_version(bin) {
        Some(v) => Ok(v),
        None => version_of(bin, env),
    };
    let at = got.as_ref().err().filter(|e| e.is_transient()).map(|_| Instant::now());
    CACHE.lock().expect("version cache").insert(key, (got.clone(), at));
    got
}

/// The release an npm-installed binary belongs to: the `version` of the `@anthropic-ai/claude-code`
/// package (or its per-platform package, `@anthropic-ai/claude-code-linux-x64` and the like)
/// whose `package.json` sits beside it or one folder up (`bin/`). `None` for any other layout.
fn package_version(bin: &Path) -> Option<ClaudeVersion> {
    let dir = bin.parent()?;
    [dir, dir.parent()?].into_iter().find_map(|d| {
        let text = std::fs::read_to_string(d.join("package.json")).ok()?;
        let manifest: serde_json::Value = serde_json::from_str(&text).ok()?;
        let name = manifest.get("name")?.as_str()?;
        if name != "@anthropic-ai/claude-code" && !name.starts_with("@anthropic-ai/claude-code-") {
            return None;
        }
        manifest.get("version")?.as_str()?.parse().ok()
    })
}

/// The most of `claude --version`'s output that is kept (it prints one line); the rest is
/// read and dropped, so a binary that prints without end neither fills the pipe (and hangs
/// there) nor Mneme's memory.
const VERSION_OUTPUT_KEPT: usize = 64 << 10;

/// Runs `bin --version` with no input, a bounded time, and nothing but a minimal environment
/// (`env`'s `PATH`, which a launcher needs to find Node, its home as `HOME`, and the switches
/// that keep Claude Code from updating itself or calling out) in `/`, and reads the release from
/// what it prints.
///
/// It runs in a process group of its own, killed when the deadline passes and once it has
/// exited (a helper it left behind would hold its output open); the output is read on a thread
/// of its own and waited for no later than the deadline.
pub fn version_of(bin: &Path, env: &Environment) -> Result<ClaudeVersion, VersionError> {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(bin);
    cmd.arg("--version").env_clear().env("HOME", &env.home);
    if let Some(path) = env.var("PATH") {
        cmd.env("PATH", path);
    }
    cmd.current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .process_group(0);
    // A binary being updated (or a script just written) can be busy for a moment; see
    // `spawn_past_busy`. Without the retry the check found no Claude Code at all.
    let mut child = mneme_core::process::spawn_past_busy(&mut cmd).map_err(|e| VersionError::Run { bin: bin.to_path_buf(), message: e.to_string() })?;
    let group = rustix::process::Pid::from_raw(child.id() as i32);
    let kill_group = || {
        if let Some(pid) = group {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    };
    let mut stdout = child.stdout.take().expect("piped stdout");
    let (sent, output) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let (mut kept, mut buf) = (Vec::new(), [0u8; 8192]);
        while let Ok(n @ 1..) = stdout.read(&mut buf) {
            let room = VERSION_OUTPUT_KEPT.saturating_sub(kept.len());
            kept.extend_from_slice(&buf[..n.min(room)]);
        }
        let _ = sent.send(kept);
    });
    let deadline = Instant::now() + VERSION_TIMEOUT;
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(5)),
            Ok(None) => {
                kill_group();
                let _ = child.wait();
                return Err(VersionError::Timeout { bin: bin.to_path_buf() });
            }
            Err(e) => {
                kill_group();
                let _ = child.wait();
                return Err(VersionError::Run { bin: bin.to_path_buf(), message: e.to_string() });
            }
        }
    };
    kill_group();
    // A helper that left the group can still hold the output open: no waiting past the deadline.
    let wait = deadline.saturating_duration_since(Instant::now()).max(Duration::from_millis(200));
    let out = output.recv_timeout(wait).map_err(|_| VersionError::Timeout { bin: bin.to_path_buf() })?;
    let out = String::from_utf8_lossy(&out).into_owned();
    if !status.success() {
        return Err(VersionError::Failed { bin: bin.to_path_buf(), status: status.to_string() });
    }
    ClaudeVersion::from_version_output(&out)
        .ok_or_else(|| VersionError::NoVersion { bin: bin.to_path_buf(), output: out.trim().chars().take(500).collect() })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    fn fake_claude(dir: &Path, body: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let p = dir.join("claude");
        std::fs::write(&p, format!("#!/bin/sh\n{body}\n")).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
        p
    }

    #[test]
    fn path_wins_over_the_installers() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        fake_claude(&home.join(".local/bin"), "echo '2.1.300 (Claude Code)'");
        let on_path = fake_claude(&t.path().join("bin"), "echo '2.1.332 (Claude Code)'");
        let env = Environment::with_home(&home).set_var("PATH", format!("relative:{}", t.path().join("bin").display()));
        let found = detect(&env).unwrap();
        assert_eq!(found.path, on_path);
        assert_eq!(found.found_by, FoundBy::Path);
        assert_eq!(found.version, Some(ClaudeVersion::new(2, 1, 332)));

        let env = Environment::with_home(&home).set_var("PATH", "/nonexistent");
        let found = detect(&env).unwrap();
        assert_eq!(found.found_by, FoundBy::NativeInstaller);
        assert_eq!(found.version, Some(ClaudeVersion::new(2, 1, 300)));
    }

    #[test]
    fn an_npm_install_is_read_from_its_package_manifest() {
        let t = tempfile::tempdir().unwrap();
        let pkg = t.path().join("node_modules/@anthropic-ai/claude-code-linux-x64");
        // The script would say 2.1.300 if it ran; the manifest's release wins without running it.
        let bin = fake_claude(&pkg, "echo '2.1.300 (Claude Code)'");
        std::fs::write(pkg.join("package.json"), r#"{"name":"@anthropic-ai/claude-code-linux-x64","version":"2.1.197"}"#).unwrap();
        assert_eq!(cached_version(&bin, &Environment::with_home(t.path())), Ok(ClaudeVersion::new(2, 1, 197)));
        // Another package's manifest is not taken for Claude Code's.
        let other = t.path().join("other");
        let bin = fake_claude(&other, "echo '2.1.300 (Claude Code)'");
        std::fs::write(other.join("package.json"), r#"{"name":"something-else","version":"9.9.9"}"#).unwrap();
        assert_eq!(cached_version(&bin, &Environment::with_home(t.path())), Ok(ClaudeVersion::new(2, 1, 300)));
    }

    #[test]
    fn a_broken_binary_is_reported_not_guessed() {
        let t = tempfile::tempdir().unwrap();
        fake_claude(&t.path().join("bin"), "echo oops; exit 3");
        let env = Environment::with_home(t.path().join("home")).set_var("PATH", t.path().join("bin").to_string_lossy());
        let found = detect(&env).unwrap();
        assert_eq!(found.version, None);
        assert!(found.version_error.unwrap().contains("--version failed"));

        fake_claude(&t.path().join("bin2"), "echo 'Claude Code'");
        assert!(matches!(version_of(&t.path().join("bin2/claude"), &Environment::with_home(t.path())), Err(VersionError::NoVersion { .. })));
    }

    /// A `claude --version` that prints far more than a pipe holds, leaves a helper behind
    /// holding its output, or hangs with a helper of its own: each is answered, or given up on,
    /// within the deadline, and no helper of its group outlives it.
    #[test]
    fn a_version_run_that_floods_or_leaves_helpers_is_bounded() {
        let t = tempfile::tempdir().unwrap();
        let flood = fake_claude(&t.path().join("flood"), "echo '2.1.300 (Claude Code)'; head -c 300000 /dev/zero | tr '\\0' x; echo");
        assert_eq!(version_of(&flood, &Environment::with_home(t.path())), Ok(ClaudeVersion::new(2, 1, 300)));

        let helper = t.path().join("helper.pid");
        let leaves = fake_claude(&t.path().join("leaves"), &format!("sleep 300 &\necho $! > {}\necho '2.1.301 (Claude Code)'", helper.display()));
        let started = Instant::now();
        assert_eq!(version_of(&leaves, &Environment::with_home(t.path())), Ok(ClaudeVersion::new(2, 1, 301)));
        assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
        let gone = |pid_file: &Path| {
            let pid = std::fs::read_to_string(pid_file).unwrap().trim().to_string();
            std::thread::sleep(Duration::from_millis(200));
            std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| s.contains(") Z "))
        };
        assert!(gone(&helper), "the helper was stopped with its group");

        let hangs = fake_claude(&t.path().join("hangs"), &format!("sleep 300 &\necho $! > {}\nsleep 300", helper.display()));
        let started = Instant::now();
        assert!(matches!(version_of(&hangs, &Environment::with_home(t.path())), Err(VersionError::Timeout { .. })));
        assert!(started.elapsed() < VERSION_TIMEOUT + Duration::from_secs(3), "{:?}", started.elapsed());
        assert!(gone(&helper), "the hung run's helper was stopped with its group");
    }

    /// A failure that may pass (the file could not be started, or did not answer in time) is
    /// not remembered for the file's life: made executable, the same file is read. And the run
    /// sees only what it needs, from `/`.
    #[test]
    fn a_transient_failure_is_not_kept_and_the_run_gets_a_minimal_environment() {
        let t = tempfile::tempdir().unwrap();
        let seen = t.path().join("seen");
        let bin = fake_claude(&t.path().join("bin"), &format!("{{ pwd; env; }} > {}\necho '2.1.302 (Claude Code)'", seen.display()));
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o644)).unwrap();
        // The environment handed in, not the process's own, is what the run sees.
        let env = Environment::with_home(t.path().join("their-home")).set_var("PATH", "/usr/bin:/bin").set_var("SECRET_TOKEN", "x");
        assert!(matches!(cached_version(&bin, &env), Err(VersionError::Run { .. })));
        // A chmod changes neither the size nor the modification time the cache is keyed on.
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        assert!(matches!(cached_version(&bin, &env), Err(VersionError::Run { .. })), "remembered for a moment");
        assert_eq!(cached_version_within(&bin, &env, Duration::ZERO), Ok(ClaudeVersion::new(2, 1, 302)));

        let seen = std::fs::read_to_string(&seen).unwrap();
        let mut lines = seen.lines();
        assert_eq!(lines.next(), Some("/"));
        let vars: Vec<&str> = lines.collect();
        assert!(vars.contains(&format!("HOME={}", t.path().join("their-home").display()).as_str()), "{vars:?}");
        assert!(vars.contains(&"PATH=/usr/bin:/bin"), "{vars:?}");
        let mut names: Vec<&str> = vars.iter().filter_map(|l| l.split_once('=').map(|(n, _)| n)).collect();
        names.sort();
        // `sh` adds PWD (and some shells SHLVL and _) of its own.
        names.retain(|n| !matches!(*n, "PWD" | "SHLVL" | "_" | "OLDPWD"));
        let mut expected = vec!["CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "DISABLE_AUTOUPDATER", "HOME", "PATH"];
        expected.sort();
        assert_eq!(names, expected);
    }

    #[test]
    fn a_file_that_cannot_run_is_not_claude_code() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join("bin")).unwrap();
        std::fs::write(t.path().join("bin/claude"), "x").unwrap();
        let env = Environment::with_home(t.path().join("home")).set_var("PATH", t.path().join("bin").to_string_lossy());
        // Only the system-wide npm prefixes lie outside the temporary folder.
        assert!(detect(&env).is_none_or(|found| found.found_by == FoundBy::NpmGlobal && found.path.starts_with("/usr")));
    }

    #[test]
    fn the_runtime_is_read_from_the_file() {
        let t = tempfile::tempdir().unwrap();
        let write = |name: &str, bytes: &[u8]| {
            let p = t.path().join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        };
        assert_eq!(runtime_of(&write("cli.js", b"#!/usr/bin/env node\n// (c)\n")), Some(Runtime::Node));
        assert_eq!(runtime_of(&write("elf", b"\x7fELF\x02\x01\x01\0")), Some(Runtime::Bun));
        assert_eq!(runtime_of(&write("macho", &[0xcf, 0xfa, 0xed, 0xfe, 7, 0, 0, 1])), Some(Runtime::Bun));
        assert_eq!(runtime_of(&write("launcher", b"#!/bin/sh\nexec node \"$0.js\"\n")), None, "only the #! line counts");
        assert_eq!(runtime_of(&t.path().join("missing")), None);
    }
}
