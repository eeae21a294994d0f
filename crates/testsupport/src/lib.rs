//! Hermetic test worlds: a temporary HOME with its own `.claude` config home, an
//! [`Environment`] pointing at it, and small builders for repositories, CLAUDE.md trees and
//! memory folders. Nothing here ever touches the real `~/.claude`.

#[cfg(unix)]
pub mod accounts;
pub mod claude_code;
pub mod copycheck;
#[cfg(unix)]
pub mod exfat;
pub mod hostile;
#[cfg(unix)]
pub mod hung_drive;
pub mod raw_http;
pub mod scripted;
pub mod special_files;
pub mod team_server;
pub mod tls;
#[cfg(unix)]
pub mod tmpfs;
pub mod wait;

use mneme_core::sanitize::sanitize_path;
use mneme_store::Environment;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A temporary world: `<root>/home` is HOME, `<root>/home/.claude` the config home.
pub struct TestHome {
    _dir: tempfile::TempDir,
    /// The canonical (symlink-free) root, so paths match what Claude Code would realpath.
    pub root: PathBuf,
    pub env: Environment,
}

impl TestHome {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().expect("create temp dir");
        let root = fs::canonicalize(dir.path()).expect("canonical temp dir");
        let home = root.join("home");
        fs::create_dir_all(home.join(".claude")).expect("create config home");
        let mut env = Environment::with_home(&home)
            .set_var("CLAUDE_CONFIG_DIR", home.join(".claude").to_string_lossy().to_string())
            .set_var("MNEME_DATA_DIR", root.join("mneme-data").to_string_lossy().to_string());
        env.managed_dir = root.join("managed");
        TestHome { _dir: dir, root, env }
    }

    pub fn home(&self) -> PathBuf {
        self.env.home.clone()
    }

    pub fn config_home(&self) -> PathBuf {
        self.env.config_home()
    }

    /// Writes `text` at `rel` (relative to the root, or absolute), creating parents.
    pub fn write(&self, rel: impl AsRef<Path>, text: &str) -> PathBuf {
        let p = self.root.join(rel);
        write_file(&p, text);
        p
    }

    /// Creates a git repository with one commit at `rel` and returns its path.
    pub fn git_repo(&self, rel: &str) -> PathBuf {
        let p = self.root.join(rel);
        fs::create_dir_all(&p).expect("create repo dir");
        git(&p, &["init", "-q"]);
        git(&p, &["commit", "-q", "--allow-empty", "-m", "fixture"]);
        p
    }

    /// The default auto-memory folder Claude Code uses for `project_root`.
    pub fn memdir_for(&self, project_root: &Path) -> PathBuf {
        self.config_home().join("projects").join(sanitize_path(&project_root.to_string_lossy())).join("memory")
    }
}

impl Default for TestHome {
    fn default() -> Self {
        Self::new()
    }
}

/// Every file under `dir`, at any depth (folders left out; an unreadable folder lists nothing),
/// for tests that look for what an operation left anywhere in a tree.
pub fn files_under(dir: &Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(files_under(&p));
        } else {
            out.push(p);
        }
    }
    out
}

/// Every entry under `dir` at any depth, links as links (never followed), with its bytes, its
/// link target or `<dir>`: for tests that check an operation changed nothing in a tree.
pub fn tree_snapshot(dir: &Path) -> std::collections::BTreeMap<std::path::PathBuf, Vec<u8>> {
    fn walk(dir: &Path, out: &mut std::collections::BTreeMap<std::path::PathBuf, Vec<u8>>) {
        let Ok(rd) = fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let (p, ft) = (e.path(), e.file_type().expect("file type"));
            if ft.is_symlink() {
                out.insert(p.clone(), fs::read_link(&p).expect("read link").into_os_string().into_encoded_bytes());
            } else if ft.is_dir() {
                out.insert(p.clone(), b"<dir>".to_vec());
                walk(&p, out);
            } else {
                out.insert(p.clone(), fs::read(&p).expect("read file"));
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, &mut out);
    out
}

/// Writes a file, creating its parent folders.
/// Every inotify watch this process holds (Linux: the `inotify wd:` lines of its open
/// descriptors). Count in a test binary of one test, or other tests' watchers count too.
pub fn inotify_watches() -> usize {
    let mut n = 0;
    for e in std::fs::read_dir("/proc/self/fdinfo").unwrap().flatten() {
        if let Ok(t) = std::fs::read_to_string(e.path()) {
            n += t.lines().filter(|l| l.starts_with("inotify wd:")).count();
        }
    }
    n
}

pub fn write_file(p: &Path, text: &str) {
    if let Some(parent) = p.parent() {
        fs::create_dir_all(parent).expect("create parent");
    }
    fs::write(p, text).expect("write file");
}

/// Runs git with a fixed identity; panics with the arguments when it fails.
pub fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args(["-c", "user.email=fixture@example.com", "-c", "user.name=fixture", "-c", "init.defaultBranch=main"])
        .args(args)
        .current_dir(dir)
        .output()
        .expect("git runs");
    assert!(out.status.success(), "git {args:?} failed: {}", String::from_utf8_lossy(&out.stderr));
}

/// A topic file in the current frontmatter generation.
pub fn topic(name: &str, description: &str, kind: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\nmetadata:\n  type: {kind}\n---\n\n{body}\n")
}

/// Sets a file's modification time to `secs` after the epoch.
pub fn set_mtime(p: &Path, secs: i64) {
    filetime::set_file_mtime(p, filetime::FileTime::from_unix_time(secs, 0)).expect("set mtime");
}

/// Writes `n` rules into `repo/.claude/rules`, spread over 40 folders (for benchmarks; the
/// same material as benches/make_bench_fixtures.py's): every fourth is conditional (`paths:`),
/// the others each include the shared `../shared.md`.
pub fn populate_rules(repo: &Path, n: usize) {
    for i in 0..n {
        let dir = repo.join(".claude/rules").join(format!("group-{:02}", i % 40));
        let text = if i % 4 == 0 {
            format!("---\npaths: \"src/mod{i}/**/*.rs\"\n---\nConditional rule {i}.\n")
        } else {
            format!("Rule {i}: keep functions short. See @../shared.md\n")
        };
        write_file(&dir.join(format!("rule-{i:04}.md")), &text);
    }
    write_file(&repo.join(".claude/rules/shared.md"), "Shared rule text.\n");
}

/// Builds a memory folder of `n` topic files (for benchmarks), with an index of the first 150.
pub fn populate_memdir(dir: &Path, n: usize) {
    fs::create_dir_all(dir).expect("create memdir");
    let kinds = ["user", "feedback", "project", "reference"];
    let mut index = String::new();
    for i in 0..n {
        let name = format!("topic-{i:05}");
        let body = format!("Fact number {i}. Related: [[topic-{:05}]].\n\n**Why:** benchmark.\n", (i + 1) % n.max(1));
        fs::write(dir.join(format!("{name}.md")), topic(&name, &format!("Description of fact {i}"), kinds[i % 4], &body))
            .expect("write topic");
        if i < 150 {
            index.push_str(&format!("- [{name}]({name}.md) — fact {i}\n"));
        }
    }
    fs::write(dir.join("MEMORY.md"), index).expect("write index");
}

/// A command for one of Mneme's binaries (`env!("CARGO_BIN_EXE_mneme")` in a test) that sees
/// only this home: a cleared environment with PATH, HOME, CLAUDE_CONFIG_DIR and Mneme's data
/// folder set, stdin closed, stdout and stderr captured. Tests add their own variables.
pub fn command_in(bin: &str, h: &TestHome) -> std::process::Command {
    use std::process::Stdio;
    let mut cmd = std::process::Command::new(bin);
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", h.home())
        .env("CLAUDE_CONFIG_DIR", h.config_home())
        .env("MNEME_DATA_DIR", h.root.join("mneme-data"))
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    cmd
}

/// Runs `cmd` to the end, writing `stdin` (when given) to its standard input first.
pub fn output_with_stdin(mut cmd: std::process::Command, stdin: Option<&[u8]>) -> std::process::Output {
    use std::io::Write;
    if stdin.is_some() {
        cmd.stdin(std::process::Stdio::piped());
    }
    let mut child = cmd.spawn().expect("the command starts");
    if let Some(input) = stdin {
        child.stdin.take().expect("stdin").write_all(input).expect("write stdin");
    }
    child.wait_with_output().expect("the command finishes")
}

/// Whether the OS keyring must work: `scripts/with-keyring.sh` (which `npm test` runs the suite
/// under) sets `MNEME_TEST_KEYRING=1` inside its private D-Bus session with gnome-keyring, and
/// there a key that cannot be stored is a failure, not the "no keyring" case.
pub fn keyring_required() -> bool {
    std::env::var("MNEME_TEST_KEYRING").is_ok_and(|v| v == "1")
}

/// The secret stored under `service`/`account`, read back through Secret Service itself with
/// `secret-tool` (libsecret-tools, which with-keyring.sh installs), so a value that only reached
/// some cache in the process or the kernel keyutils does not count as stored.
pub fn secret_tool_lookup(service: &str, account: &str) -> Option<String> {
    let out = Command::new("secret-tool")
        .args(["lookup", "service", service, "username", account])
        .output()
        .expect("secret-tool runs (scripts/with-keyring.sh installs libsecret-tools)");
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A loopback address where nothing answers, reserved for as long as this value lives: the
/// socket is bound but never listens, so connecting is refused, and no other process can take
/// the port meanwhile (picking a free port and closing it would let anyone reuse it first).
pub struct RefusedPort {
    _socket: rustix::fd::OwnedFd,
    pub addr: std::net::SocketAddrV4,
}

pub fn refused_port() -> RefusedPort {
    use rustix::net::{bind, getsockname, socket, AddressFamily, SocketType};
    let socket = socket(AddressFamily::INET, SocketType::STREAM, None).expect("a TCP socket");
    bind(&socket, &std::net::SocketAddrV4::new(std::net::Ipv4Addr::LOCALHOST, 0)).expect("bind 127.0.0.1:0");
    let addr = getsockname(&socket).expect("the bound address").try_into().expect("an IPv4 address");
    RefusedPort { _socket: socket, addr }
}
