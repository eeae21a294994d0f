//! `Bash`: allowed commands run with `bash -c` in the working directory, in a process group
//! of their own, with a timeout, an output cap and Claude Code's result shape; the memory
//! policy's `rm` is applied to the overlay instead of the disk.
//!
//! Why bash and not `sh`: the read-only classifier parses commands the way bash does (as
//! Claude Code's tree-sitter-bash does). Under another shell the same text means something
//! else — dash reads `git tag 12>/dev/null` as `git tag 12` with stdout redirected, and
//! `sleep 45 &>/dev/null` as a background job — so a command judged read-only could write.
//!
//! Once the run has pending changes, a command that names the memory folder (or runs inside
//! it) runs against a scratch copy of the folder with the changes applied, so `ls`, `cat` and
//! `wc` see what `Read` sees; the copy's path is mapped back in the output.

use super::{bool_arg, num_arg, str_arg, Failure, ToolResult, Tools};
use crate::bash::memory_rm_targets;
use crate::messages;
use crate::schema::{opt, req, Param, Ty};
use mneme_model::Cancel;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::AsyncReadExt;

pub(super) const BASH_PARAMS: &[Param] = &[
    req("command", Ty::Str, "The command line to run"),
    opt("timeout", Ty::Num, "Time limit in milliseconds (at most 600000)"),
    opt("description", Ty::Str, "A few words on what the command does"),
    // Every release offers both. A memory agent's command runs to its end before the answer
    // (true is refused, `Tools::validate_bash`), and no sandbox wraps it to turn off.
    opt("run_in_background", Ty::Bool, "Only false is taken here: commands run to their end"),
    opt("dangerouslyDisableSandbox", Ty::Bool, "Ignored here: commands run without a sandbox"),
];

// Mneme's own description (data/tools/), written from what the tool does here.
pub(super) const BASH_DESCRIPTION: &str = include_str!("../../data/tools/Bash.txt");

/// Claude Code's default and maximum command timeouts, and its output cap.
const DEFAULT_TIMEOUT_MS: u64 = 120_000;
const MAX_TIMEOUT_MS: u64 = 600_000;
const MAX_OUTPUT_CHARS: usize = 30_000;

static VIEW_SEQ: AtomicU64 = AtomicU64::new(0);

/// Claude Code's semantic exit codes: for these commands 1 means "nothing found", not failure.
fn is_failure(command: &str, code: i32) -> bool {
    let last = command.rsplit(['|', ';', '&', '\n']).find(|s| !s.trim().is_empty()).unwrap_or(command);
    let words: Vec<&str> = last.split_whitespace().collect();
    match words.first().copied() {
        Some("grep" | "rg" | "egrep" | "fgrep" | "find" | "diff" | "test" | "[") => code >= 2,
        Some("git") if matches!(words.iter().skip(1).find(|w| !w.starts_with('-')), Some(&"diff" | &"grep")) => code >= 2,
        _ => code != 0,
    }
}

/// `PATH` with only its absolute entries (the system's default when none is left).
fn safe_path(path: Option<&std::ffi::OsStr>) -> std::ffi::OsString {
    const DEFAULT: &str = "/usr/local/bin:/usr/bin:/bin";
    let kept: Vec<PathBuf> = path.map(|p| std::env::split_paths(p).filter(|d| d.is_absolute()).collect()).unwrap_or_default();
    if kept.is_empty() {
        return DEFAULT.into();
    }
    std::env::join_paths(kept).unwrap_or_else(|_| DEFAULT.into())
}

/// The most output a command may write before it is stopped (its process group killed).
const OUTPUT_BUDGET_BYTES: u64 = 64 << 20;
/// How much of each end of a long output is kept while it streams: more than the result
/// shows ([`MAX_OUTPUT_CHARS`] in all, half from each end, up to four bytes a character).
const KEPT_END_BYTES: usize = 128 * 1024;

/// The head and tail of a command's output as it streams, and how much there was.
#[derive(Default)]
struct Kept {
    head: Vec<u8>,
    tail: std::collections::VecDeque<u8>,
    total: u64,
}

impl Kept {
    fn push(&mut self, mut chunk: &[u8]) {
        self.total += chunk.len() as u64;
        let room = KEPT_END_BYTES.saturating_sub(self.head.len());
        let into_head = room.min(chunk.len());
        self.head.extend_from_slice(&chunk[..into_head]);
        chunk = &chunk[into_head..];
        if chunk.len() >= KEPT_END_BYTES {
            self.tail.clear();
            chunk = &chunk[chunk.len() - KEPT_END_BYTES..];
        }
        let over = (self.tail.len() + chunk.len()).saturating_sub(KEPT_END_BYTES);
        self.tail.drain(..over);
        self.tail.extend(chunk);
    }

    /// The output, with a note where bytes were not kept.
    fn into_bytes(self) -> Vec<u8> {
        let dropped = self.total - (self.head.len() + self.tail.len()) as u64;
        let mut out = self.head;
        if dropped > 0 {
            out.extend_from_slice(format!("\n\n... [{dropped} bytes of output not kept] ...\n\n").as_bytes());
        }
        out.extend(self.tail);
        if self.total > OUTPUT_BUDGET_BYTES {
            out.extend_from_slice(format!("\n[stopped: the command wrote more than {} MiB]", OUTPUT_BUDGET_BYTES >> 20).as_bytes());
        }
        out
    }
}

/// Cuts long output in the middle, keeping both ends.
fn cap_output(s: String) -> String {
    let n = s.chars().count();
    if n <= MAX_OUTPUT_CHARS {
        return s;
    }
    let half = MAX_OUTPUT_CHARS / 2;
    let head: String = s.chars().take(half).collect();
    let tail: String = s.chars().skip(n - half).collect();
    format!("{head}\n\n... [{} characters truncated] ...\n\n{tail}", n - 2 * half)
}

/// A path made only of characters that need no quoting, so substituting it into a command
/// cannot change how the shell splits it.
fn is_plain_path(p: &Path) -> bool {
    p.to_str().is_some_and(|s| s.chars().all(|c| c.is_ascii_alphanumeric() || "/._-".contains(c)))
}

/// Where a view of the memory folder with the run's changes is made: its path goes into the
/// command text, so it must need no quoting. The run's work folder usually does; on macOS
/// it is under "Application Support", and the system's temporary folder is used instead.
fn view_base(work_dir: &Path) -> Option<PathBuf> {
    [work_dir.to_path_buf(), std::env::temp_dir()].into_iter().find(|p| is_plain_path(p))
}

/// Replaces `from` with `to` where it stands as a whole path (followed by `/`, the end, a
/// quote, whitespace or a shell operator), so a sibling like `memory-old` is left alone.
fn replace_path(text: &str, from: &str, to: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find(from) {
        let after = &rest[i + from.len()..];
        let whole = after.chars().next().is_none_or(|c| c == '/' || c.is_whitespace() || "'\";|&)<>".contains(c));
        out.push_str(&rest[..i]);
        out.push_str(if whole { to } else { from });
        rest = after;
    }
    out.push_str(rest);
    out
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let dest = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &dest)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &dest)?;
            // Keep modification times, so `ls -t` orders the copy like the original.
            if let Ok(t) = entry.metadata().and_then(|m| m.modified()) {
                if let Ok(f) = std::fs::OpenOptions::new().write(true).open(&dest) {
                    let _ = f.set_modified(t);
                }
            }
        }
    }
    Ok(())
}

/// Runs `command` with bash, without startup files, with brace expansion off (the classifier
/// refuses it anyway), stderr merged into stdout, in a new process group. On timeout or
/// cancellation the whole group is killed, so nothing the command started outlives it.
/// Returns the output and the exit status, `None` when it timed out.
async fn run_bash(
    command: &str,
    cwd: &Path,
    timeout: Duration,
    cancel: &Cancel,
) -> Result<(Vec<u8>, Option<std::process::ExitStatus>), Failure> {
    let mut cmd = tokio::process::Command::new("bash");
    // `exec 2>&1` first: Claude Code returns stdout and stderr interleaved, as one stream.
    cmd.args(["--noprofile", "--norc", "+B", "-c"])
        .arg(format!("exec 2>&1\n{command}"))
        .current_dir(cwd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .process_group(0)
        .kill_on_drop(true);
    // Only what a read-only command needs from Mneme's environment. Nothing that makes bash
    // run code or parse differently before the command (BASH_ENV, SHELLOPTS, exported
    // functions, CDPATH…): it must run in exactly the shell the classifier models. Not
    // Mneme's secrets (provider keys, tokens): they are not the command's to print. And no
    // relative PATH entry (`.`, or the empty one a trailing `:` makes): it would run a program
    // from the folder the command runs in, a repository someone else wrote, under a name the
    // classifier approved.
    cmd.env_clear();
    for (name, value) in std::env::vars_os() {
        let keep = matches!(name.to_str(), Some("HOME" | "USER" | "LOGNAME" | "LANG" | "TZ" | "TMPDIR" | "TERM"))
            || name.to_str().is_some_and(|n| n.starts_with("LC_"));
        if keep {
            cmd.env(&name, &value);
        }
    }
    cmd.env("PATH", safe_path(std::env::var_os("PATH").as_deref()));
    let mut child = cmd.spawn().map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound {
            Failure::Failed("Shell commands need bash, which was not found on PATH; install bash to use this tool".into())
        } else {
            Failure::Failed(format!("Could not start bash in {}: {e}", cwd.display()))
        }
    })?;
    // The group's id is the leader's pid; the leader is not reaped before the kill below, so
    // the id cannot have been reused by then.
    let group = child.id().and_then(|id| rustix::process::Pid::from_raw(id as i32));
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut kept = Kept::default();
    let outcome = {
        let read = async {
            // Streamed: `cat /dev/zero` passes the classifier, and its output must not all be
            // held. Past the budget the group is killed; the ends are what the result shows.
            let mut buf = vec![0u8; 64 * 1024];
            loop {
                match stdout.read(&mut buf).await {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        kept.push(&buf[..n]);
                        if kept.total > OUTPUT_BUDGET_BYTES {
                            if let Some(pid) = group {
                                let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
                            }
                            break;
                        }
                    }
                }
            }
            child.wait().await
        };
        let cancelled = async {
            while !cancel.is_cancelled() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        tokio::select! {
            s = tokio::time::timeout(timeout, read) => Some(s),
            _ = cancelled => None,
        }
    };
    let kill_group = || {
        if let Some(pid) = group {
            let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
        }
    };
    let bytes = kept.into_bytes();
    match outcome {
        Some(Ok(status)) => Ok((bytes, Some(status.map_err(|e| Failure::Failed(e.to_string()))?))),
        Some(Err(_elapsed)) => {
            kill_group();
            let _ = child.wait().await;
            Ok((bytes, None))
        }
        None => {
            kill_group();
            let _ = child.wait().await;
            Err(Failure::Failed(crate::messages::COMMAND_CANCELLED.into()))
        }
    }
}

impl Tools {
    /// A scratch copy of the memory folder with the overlay applied, for one command.
    fn make_view(&mut self, base: &Path, memory_dir: &Path) -> std::io::Result<PathBuf> {
        let view = base.join(format!(
            "bash-view-{}-{}",
            std::process::id(),
            VIEW_SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        self.views.push(view.clone());
        if memory_dir.is_dir() {
            copy_tree(memory_dir, &view)?;
        } else {
            std::fs::create_dir_all(&view)?;
        }
        for (p, content) in self.overlay.written() {
            if let Ok(rel) = p.strip_prefix(memory_dir) {
                let dest = view.join(rel);
                if let Some(parent) = dest.parent() {
                    std::fs::create_dir_all(parent)?;
                }
                std::fs::write(dest, content)?;
            }
        }
        for p in self.overlay.removed() {
            if let Ok(rel) = p.strip_prefix(memory_dir) {
                let _ = std::fs::remove_file(view.join(rel));
            }
        }
        Ok(view)
    }

    fn remove_in_overlay(&mut self, targets: &[String], force: bool) -> Result<ToolResult, Failure> {
        let mut errors = Vec::new();
        for t in targets {
            let path = self.abs(t);
            // A removal the changeset could not apply (from under a link out of the folder)
            // would lose the whole run at the end: refused now, as rm refuses what it cannot remove.
            if let Some((memdir, prefix)) = self.memdir() {
                if let Some(Err(e)) = path.to_str().and_then(|p| p.strip_prefix(prefix)).map(|rel| memdir.check_remove_path(rel)) {
                    errors.push(format!("rm: cannot remove '{t}': {e}"));
                    continue;
                }
            }
            let exists = self.overlay.read(&path).map_err(|e| Failure::Failed(e.to_string()))?.is_some();
            if !exists && !self.overlay.is_changed(&path) && path.is_dir() {
                errors.push(format!("rm: cannot remove '{t}': Is a directory"));
            } else if exists {
                self.overlay.remove(&path, "Bash").map_err(|e| Failure::Failed(e.to_string()))?;
                self.read_state.remove(&path);
            } else if !force {
                errors.push(format!("rm: cannot remove '{t}': No such file or directory"));
            }
        }
        if errors.is_empty() {
            Ok(ToolResult::ok(""))
        } else {
            Err(Failure::Failed(format!("Exit code 1\n{}", errors.join("\n"))))
        }
    }

    /// A command asked to run in the background is refused: a memory agent's run has no
    /// background shell to come back to (Claude Code answers with a task id and a file that
    /// fills later), so the model is told to run it in the foreground.
    pub(super) fn validate_bash(&self, args: &Map<String, Value>) -> Result<(), Failure> {
        if bool_arg(args, "run_in_background") == Some(true) {
            return Err(Failure::Invalid(messages::NO_BACKGROUND.to_string()));
        }
        Ok(())
    }

    pub(super) async fn bash(&mut self, args: &Map<String, Value>, cancel: &Cancel) -> Result<ToolResult, Failure> {
        let command = str_arg(args, "command").unwrap_or_default().to_string();
        let timeout_ms = num_arg(args, "timeout").map_or(DEFAULT_TIMEOUT_MS, |t| (t.max(0.0) as u64).min(MAX_TIMEOUT_MS));
        if let Some(prefix) = self.gate.memory_prefix().map(String::from) {
            if !crate::bash::is_read_only_command(&command, self.release.bash_read_only) {
                if let Some((targets, force)) = memory_rm_targets(&command, &prefix, &self.release) {
                    return self.remove_in_overlay(&targets, force);
                }
            }
        }

        let mut run_command = command.clone();
        let mut cwd = self.cwd.clone();
        let mut mapping: Option<(String, String)> = None;
        if let Some(prefix) = self.gate.memory_prefix().map(String::from) {
            let memory_dir = PathBuf::from(prefix.trim_end_matches('/'));
            let mem = memory_dir.to_string_lossy().into_owned();
            let mentions = command.contains(&mem) || self.cwd.starts_with(&memory_dir);
            let base = view_base(&self.work_dir);
            if let (true, true, Some(base)) = (self.overlay.has_changes(), mentions, base) {
                let view = self.make_view(&base, &memory_dir).map_err(|e| Failure::Failed(e.to_string()))?;
                let view_s = view.to_string_lossy().into_owned();
                run_command = replace_path(&command, &mem, &view_s);
                if let Ok(rel) = self.cwd.strip_prefix(&memory_dir) {
                    cwd = view.join(rel);
                }
                mapping = Some((view_s, mem));
            }
        }

        // The classifier read `command` as bash reads it; the view path substituted above is
        // plain (no characters the shell treats specially), so the text still parses the same.
        if crate::bash::parse(&run_command).is_err() {
            return Err(Failure::Failed("The command could not be analysed, so it was not run".into()));
        }
        let (bytes, status) = run_bash(&run_command, &cwd, Duration::from_millis(timeout_ms), cancel).await?;
        let mut output = String::from_utf8_lossy(&bytes).into_owned();
        if let Some((view, real)) = &mapping {
            output = output.replace(view.as_str(), real);
        }
        let Some(status) = status else {
            let out = cap_output(output.trim_end().to_string());
            return Err(Failure::Failed(format!("Command timed out after {timeout_ms} ms\n{out}").trim_end().to_string()));
        };
        let code = status.code().unwrap_or(-1);
        // Leading blank lines and trailing whitespace are dropped, as Claude Code does.
        let trimmed = output.trim_start_matches(['\n', ' ', '\t', '\r']);
        let start = output.len() - trimmed.len();
        let first_line_start = output[..start].rfind('\n').map_or(0, |i| i + 1);
        let body = cap_output(output[first_line_start..].trim_end().to_string());
        if is_failure(&command, code) {
            let parts: Vec<String> = [format!("Exit code {code}"), body].into_iter().filter(|s| !s.is_empty()).collect();
            return Err(Failure::Failed(parts.join("\n")));
        }
        Ok(ToolResult::ok(body))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::policy::Gate;
    use crate::Policy;
    use mneme_core::FixedClock;
    use serde_json::json;
    use std::sync::Arc;

    /// A git repository with one commit as the working directory, the memory folder beside
    /// it, and `Tools` under the memory policy: the background extraction's setting.
    struct Shell {
        _tmp: tempfile::TempDir,
        repo: PathBuf,
        tools: Tools,
    }

    fn git(repo: &Path, args: &[&str]) -> String {
        let out = std::process::Command::new("git")
            .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
            .args(args)
            .current_dir(repo)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .output()
            .expect("git runs");
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    fn shell() -> Shell {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        let memory = tmp.path().join("memory");
        let work = tmp.path().join("work");
        for d in [&repo, &memory, &work] {
            std::fs::create_dir_all(d).unwrap();
        }
        git(&repo, &["init", "-q"]);
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "first"]);
        let gate = Gate::new(&Policy::AutoMem { memory_dir: memory }, &mneme_core::versions::newest());
        let tools = Tools::new(repo.clone(), gate, Arc::new(FixedClock::at_unix_secs(1_764_422_207)), work);
        Shell { _tmp: tmp, repo, tools }
    }

    impl Shell {
        async fn run(&mut self, command: &str, timeout_ms: u64) -> ToolResult {
            self.tools.call("Bash", &json!({"command": command, "timeout": timeout_ms}), &Cancel::new()).await
        }

        /// Everything a command could have changed here: the folder's entries and git's refs.
        fn state(&self) -> (Vec<String>, String) {
            let mut names: Vec<String> =
                std::fs::read_dir(&self.repo).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
            names.sort();
            (names, git(&self.repo, &["for-each-ref", "--format=%(refname)"]))
        }
    }

    /// A `sleep` argument no other test run uses, so a check for survivors finds only ours.
    fn unique_seconds(whole: u32) -> String {
        static N: AtomicU64 = AtomicU64::new(0);
        format!("{whole}.{}{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
    }

    /// Whether a process whose command line is exactly `argv` is still alive (not a zombie)
    /// five seconds after the group was killed. SIGKILL takes effect when the process is next
    /// scheduled, which on two busy cores can be after the command has returned (seen in CI),
    /// so this waits for it to go; one that survives five seconds was not killed.
    fn process_survives(argv: &[&str]) -> bool {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while process_alive(argv) {
            if std::time::Instant::now() > deadline {
                return true;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        false
    }

    /// Whether a process whose command line is exactly `argv` is alive (not a zombie).
    fn process_alive(argv: &[&str]) -> bool {
        let wanted: Vec<u8> = argv.iter().flat_map(|a| a.bytes().chain([0])).collect();
        std::fs::read_dir("/proc").unwrap().flatten().any(|e| {
            let dir = e.path();
            let running = std::fs::read_to_string(dir.join("stat"))
                .is_ok_and(|s| s.rsplit_once(')').is_some_and(|(_, rest)| !rest.trim_start().starts_with('Z')));
            running && std::fs::read(dir.join("cmdline")).is_ok_and(|c| c == wanted)
        })
    }

    /// dash read `12>` as the word `12`: `git tag 12` created a tag.
    /// Every release's Bash takes `run_in_background` and `dangerouslyDisableSandbox`: false and
    /// the sandbox switch change nothing; a background command is refused as input, as a run
    /// keeps no shell past a call (checked on 2.1.100 to 2.1.337 in tests/differential.rs).
    #[tokio::test]
    async fn background_and_sandbox_fields_are_taken() {
        let mut sh = shell();
        let run = |extra: serde_json::Value| {
            let mut input = json!({"command": "echo hi"});
            input.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            input
        };
        let (plain, off, sandbox, background) =
            (run(json!({})), run(json!({"run_in_background": false})), run(json!({"dangerouslyDisableSandbox": true})), run(json!({"run_in_background": true})));
        for input in [plain, off, sandbox] {
            let r = sh.tools.call("Bash", &input, &Cancel::new()).await;
            assert_eq!((r.content.as_str(), r.is_error), ("hi", false), "{input}");
        }
        let r = sh.tools.call("Bash", &background, &Cancel::new()).await;
        assert_eq!((r.content, r.is_error), (format!("<tool_use_error>{}</tool_use_error>", messages::NO_BACKGROUND), true));
    }

    #[tokio::test]
    async fn multi_digit_fd_redirect_creates_no_tag() {
        let mut sh = shell();
        let before = sh.state();
        let r = sh.run("git tag 12>/dev/null", 10_000).await;
        assert!(r.denied.is_none(), "{r:?}");
        assert_eq!(sh.state(), before, "git tag 12>/dev/null changed the repository");
        assert!(!git(&sh.repo, &["tag", "-l"]).contains("12"));
    }

    /// dash ran `uniq 12 99`, writing a file `99`.
    #[tokio::test]
    async fn multi_digit_fd_redirects_create_no_file() {
        let mut sh = shell();
        // With an input file named `12`, dash's `uniq 12 99` copies it to a new file `99`.
        std::fs::write(sh.repo.join("12"), "line\n").unwrap();
        let before = sh.state();
        let r = sh.run("uniq 12>/dev/null 99>/dev/null", 10_000).await;
        assert!(r.denied.is_none(), "{r:?}");
        assert_eq!(sh.state(), before);
        assert!(!sh.repo.join("99").exists());
    }

    /// dash read `&>` as "run in the background": the command returned at once and `sleep`
    /// lived on past the timeout.
    #[tokio::test]
    async fn ampersand_redirect_is_not_a_background_job() {
        let mut sh = shell();
        let secs = unique_seconds(45);
        let r = sh.run(&format!("sleep {secs} &>/dev/null"), 300).await;
        assert!(r.is_error && r.content.contains("timed out after 300 ms"), "{r:?}");
        assert!(!process_survives(&["sleep", &secs]), "sleep outlived its timeout");
    }

    /// A timeout kills the whole pipeline, not only the shell.
    #[tokio::test]
    async fn timeout_kills_the_process_group() {
        let mut sh = shell();
        let secs = unique_seconds(41);
        let r = sh.run(&format!("sleep {secs} | cat"), 300).await;
        assert!(r.is_error && r.content.contains("timed out"), "{r:?}");
        assert!(!process_survives(&["sleep", &secs]), "the pipeline's sleep survived the timeout");
    }

    /// Endless output (`cat /dev/zero` is read-only) is streamed, not held: past the budget
    /// the group is killed, and the result shows both ends and says so.
    #[tokio::test]
    async fn endless_output_is_stopped_at_the_budget() {
        let mut sh = shell();
        let r = sh.run("seq 7 inf", 120_000).await;
        assert!(r.content.starts_with("Exit code") && r.content.contains("\n7\n8\n9\n10\n"), "{}", &r.content[..80.min(r.content.len())]);
        assert!(r.content.contains("[stopped: the command wrote more than 64 MiB]"), "{}", &r.content[r.content.len().saturating_sub(200)..]);
        assert!(r.content.chars().count() < MAX_OUTPUT_CHARS + 500);
        assert!(!process_survives(&["seq", "7", "inf"]));
    }

    /// The file tools never wait on a device or FIFO, nor read one without end: each call
    /// answers with an error at once, before and whatever the permission check decides.
    #[tokio::test]
    async fn file_tools_refuse_devices_fifos_and_endless_proc_files() {
        let mut sh = shell();
        let fifo = sh.repo.join("pipe.md");
        rustix::fs::mkfifoat(rustix::fs::CWD, &fifo, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
        let calls = [
            ("Write", json!({"file_path": "/dev/zero", "content": "x"})),
            ("Edit", json!({"file_path": "/dev/zero", "old_string": "a", "new_string": "b"})),
            ("Read", json!({"file_path": "/proc/self/pagemap"})),
            ("Read", json!({"file_path": "/proc/self/root/dev/zero"})),
            ("Read", json!({"file_path": fifo})),
            ("Edit", json!({"file_path": fifo, "old_string": "a", "new_string": "b"})),
            ("Grep", json!({"pattern": ".", "multiline": true, "path": "/proc/self/pagemap"})),
        ];
        for (tool, args) in calls {
            let r = tokio::time::timeout(Duration::from_secs(60), sh.tools.call(tool, &args, &Cancel::new()))
                .await
                .unwrap_or_else(|_| panic!("{tool} {args} did not answer"));
            assert!(r.is_error || r.content.is_empty() || r.content.starts_with("No "), "{tool} {args}: {}", &r.content[..r.content.len().min(200)]);
        }
    }

    #[test]
    fn kept_ends_hold_the_first_and_last_bytes() {
        let mut k = Kept::default();
        for i in 0..100_000u32 {
            k.push(format!("{i:08}\n").as_bytes());
        }
        let out = String::from_utf8(k.into_bytes()).unwrap();
        assert!(out.starts_with("00000000\n00000001\n") && out.ends_with("00099998\n00099999\n"));
        assert!(out.contains(&format!("... [{} bytes of output not kept] ...", 900_000 - 2 * KEPT_END_BYTES)));
        let mut small = Kept::default();
        small.push(b"a\n");
        small.push(b"b\n");
        assert_eq!(small.into_bytes(), b"a\nb\n");
    }

    /// Cancelling a command kills its group too.
    #[tokio::test]
    async fn cancel_kills_the_process_group() {
        let mut sh = shell();
        let cancel = Cancel::new();
        let c2 = cancel.clone();
        tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(300)).await;
            c2.cancel();
        });
        let secs = unique_seconds(43);
        let r = sh.tools.call("Bash", &json!({"command": format!("sleep {secs} | cat")}), &cancel).await;
        assert!(r.is_error && r.content == crate::messages::COMMAND_CANCELLED, "{r:?}");
        assert!(!process_survives(&["sleep", &secs]));
    }

    /// Only absolute `PATH` entries reach the command: `.` or an empty entry would run a
    /// program from the repository the command runs in.
    #[test]
    fn relative_path_entries_are_dropped() {
        assert_eq!(safe_path(Some("/usr/bin::.:bin:/bin:".as_ref())), "/usr/bin:/bin");
        assert_eq!(safe_path(Some(".".as_ref())), "/usr/local/bin:/usr/bin:/bin");
        assert_eq!(safe_path(None), "/usr/local/bin:/usr/bin:/bin");
    }

    /// The command's environment holds only the names kept (and what bash sets itself): no
    /// startup hooks, no exported functions, none of Mneme's secrets.
    #[tokio::test]
    async fn the_command_sees_only_the_environment_it_needs() {
        let mut sh = shell();
        let r = sh.run("cat /proc/self/environ", 10_000).await;
        assert!(!r.is_error, "{r:?}");
        for var in r.content.split('\0').filter(|v| !v.is_empty()) {
            let name = var.split('=').next().unwrap_or_default();
            let kept = ["HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "TERM", "PATH", "PWD", "SHLVL", "_", "OLDPWD"].contains(&name)
                || name.starts_with("LC_");
            assert!(kept, "{name} reached the command");
        }
    }

    /// A generated family around fd numbers and redirections: every combination the gate lets
    /// through is run for real, and none may create a file, a tag or a branch.
    #[tokio::test]
    async fn generated_redirections_never_write() {
        let fds = ["", "0", "1", "2", "3", "9", "10", "12", "99", "255", "1023", "4294967297"];
        let ops = [">", ">>", "<", ">&", "<&", "&>", "&>>", ">|", "<>"];
        let targets = ["/dev/null", "1", "2", "-", "out", "12", "99", "'/dev/null'"];
        let commands = ["git tag", "git branch", "uniq", "sort", "cat", "wc -l", "ls"];
        // A small linear congruential generator: the same family on every run.
        let mut seed: u64 = 0x5eed;
        let mut next = |n: usize| {
            seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            (seed >> 33) as usize % n
        };
        let mut sh = shell();
        let before = sh.state();
        let (mut tried, mut ran) = (0, 0);
        while tried < 2000 && ran < 250 {
            tried += 1;
            let mut cmd = commands[next(commands.len())].to_string();
            for _ in 0..1 + next(3) {
                // A blank after the operator is the same redirection; one between the number
                // and the operator, or quotes around the number, make the number an argument.
                let (fd, op, target) = (fds[next(fds.len())], ops[next(ops.len())], targets[next(targets.len())]);
                let form = match next(4) {
                    0 => format!(" {fd}{op} {target}"),
                    1 if !fd.is_empty() => format!(" {fd} {op}{target}"),
                    2 if !fd.is_empty() => format!(" '{fd}'{op}{target}"),
                    _ => format!(" {fd}{op}{target}"),
                };
                cmd.push_str(&form);
            }
            if !crate::bash::is_read_only_command(&cmd, mneme_core::versions::newest().bash_read_only) {
                continue;
            }
            ran += 1;
            let r = sh.run(&cmd, 10_000).await;
            assert!(r.denied.is_none(), "{cmd}: {r:?}");
            assert_eq!(sh.state(), before, "{cmd:?} changed the repository");
        }
        assert!(ran >= 100, "only {ran} of {tried} generated commands were read-only");
    }

    #[test]
    fn semantic_exit_codes() {
        assert!(!is_failure("grep x a.md", 1));
        assert!(is_failure("grep x a.md", 2));
        assert!(!is_failure("ls | grep x", 1));
        assert!(is_failure("cat missing", 1));
        assert!(!is_failure("git diff --quiet", 1));
    }

    #[test]
    fn path_replacement_respects_boundaries() {
        assert_eq!(replace_path("ls /m/memory/ /m/memory-old", "/m/memory", "/v"), "ls /v/ /m/memory-old");
        assert_eq!(replace_path("wc -l '/m/memory/MEMORY.md'", "/m/memory", "/v"), "wc -l '/v/MEMORY.md'");
        assert_eq!(replace_path("ls /m/memory", "/m/memory", "/v"), "ls /v");
    }
}
