//! `Bash`: allowed commands run with `sh -c` in the working directory, with a timeout, an
//! output cap and Claude Code's result shape; the memory policy's `rm` is applied to the
//! overlay instead of the disk.
//!
//! Once the run has pending changes, a command that names the memory folder (or runs inside
//! it) runs against a scratch copy of the folder with the changes applied, so `ls`, `cat` and
//! `wc` see what `Read` sees; the copy's path is mapped back in the output.

use super::{num_arg, str_arg, Failure, ToolResult, Tools};
use crate::bash::memory_rm_targets;
use crate::schema::{opt, req, Param, Ty};
use mneme_model::Cancel;
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::io::AsyncReadExt;

pub(super) const BASH_PARAMS: &[Param] = &[
    req("command", Ty::Str, "The command to execute"),
    opt("timeout", Ty::Num, "Optional timeout in milliseconds (max 600000)"),
    opt(
        "description",
        Ty::Str,
        "Clear, concise description of what this command does in active voice. Never use words like \"complex\" or \"risk\" in the description - just describe what it does.",
    ),
];

pub(super) const BASH_DESCRIPTION: &str = "Executes a given bash command and returns its output.

The working directory persists between commands, but shell state does not.

IMPORTANT: Avoid using this tool to run `find`, `grep`, `cat`, `head`, `tail`, `sed`, `awk`, or `echo` commands, unless explicitly instructed or after you have verified that a dedicated tool cannot accomplish your task. Instead, use the appropriate dedicated tool as this will provide a much better experience for the user:

 - File search: Use Glob (NOT find or ls)
 - Content search: Use Grep (NOT grep or rg)
 - Read files: Use Read (NOT cat/head/tail)
 - Edit files: Use Edit (NOT sed/awk)
 - Write files: Use Write (NOT echo >/cat <<EOF)";

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

impl Tools {
    /// A scratch copy of the memory folder with the overlay applied, for one command.
    fn make_view(&mut self, memory_dir: &Path) -> std::io::Result<PathBuf> {
        let view = self.work_dir.join(format!(
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

    pub(super) async fn bash(&mut self, args: &Map<String, Value>, cancel: &Cancel) -> Result<ToolResult, Failure> {
        let command = str_arg(args, "command").unwrap_or_default().to_string();
        let timeout_ms = num_arg(args, "timeout").map_or(DEFAULT_TIMEOUT_MS, |t| (t.max(0.0) as u64).min(MAX_TIMEOUT_MS));
        if let Some(prefix) = self.gate.memory_prefix().map(String::from) {
            if !crate::bash::is_read_only_command(&command) {
                if let Some((targets, force)) = memory_rm_targets(&command, &prefix) {
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
            if self.overlay.has_changes() && mentions && is_plain_path(&self.work_dir) {
                let view = self.make_view(&memory_dir).map_err(|e| Failure::Failed(e.to_string()))?;
                let view_s = view.to_string_lossy().into_owned();
                run_command = replace_path(&command, &mem, &view_s);
                if let Ok(rel) = self.cwd.strip_prefix(&memory_dir) {
                    cwd = view.join(rel);
                }
                mapping = Some((view_s, mem));
            }
        }

        // `exec 2>&1` first: Claude Code returns stdout and stderr interleaved, as one stream.
        let mut child = tokio::process::Command::new("sh")
            .arg("-c")
            .arg(format!("exec 2>&1\n{run_command}"))
            .current_dir(&cwd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| Failure::Failed(format!("Could not start the shell in {}: {e}", cwd.display())))?;
        let mut stdout = child.stdout.take().expect("stdout is piped");
        let mut bytes = Vec::new();
        let read = async {
            let _ = stdout.read_to_end(&mut bytes).await;
            child.wait().await
        };
        let cancelled = async {
            while !cancel.is_cancelled() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        };
        let status = tokio::select! {
            s = tokio::time::timeout(Duration::from_millis(timeout_ms), read) => s,
            _ = cancelled => return Err(Failure::Failed("<error>Command was aborted before completion</error>".into())),
        };
        let mut output = String::from_utf8_lossy(&bytes).into_owned();
        if let Some((view, real)) = &mapping {
            output = output.replace(view.as_str(), real);
        }
        let Ok(status) = status else {
            let out = cap_output(output.trim_end().to_string());
            return Err(Failure::Failed(format!("Command timed out after {timeout_ms} ms\n{out}").trim_end().to_string()));
        };
        let code = status.map_err(|e| Failure::Failed(e.to_string()))?.code().unwrap_or(-1);
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
