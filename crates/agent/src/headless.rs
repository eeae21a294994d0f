//! Providers that run their own agent (the Claude Code CLI): the task runs in a scratch copy of
//! the folder with the policy as Claude Code permission rules, and the copy is diffed against
//! the original into the same [`Changeset`](crate::Changeset) the turn loop produces.

use crate::bash::read_only_prefixes;
use crate::policy::Gate;
use crate::run::changeset_root;
use crate::{AgentError, AgentOutcome, AgentTask, Changeset, Denial, FileChange, Policy, Stop};
use mneme_core::versions::Profile;
use mneme_model::{Cancel, HeadlessAgent, HeadlessTask, ModelError};
use mneme_store::memdir::Memdir;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

static SCRATCH_SEQ: AtomicU64 = AtomicU64::new(0);

/// Removes the scratch copy however the run ends.
struct Scratch(PathBuf);

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy_tree(from: &Path, to: &Path) -> std::io::Result<()> {
    std::fs::create_dir_all(to)?;
    if !from.is_dir() {
        return Ok(());
    }
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        if kind.is_dir() {
            copy_tree(&entry.path(), &to.join(entry.file_name()))?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), to.join(entry.file_name()))?;
        }
    }
    Ok(())
}

/// Every regular file under `dir`, relative, with `/` separators.
fn files(dir: &Path) -> BTreeSet<String> {
    fn walk(base: &Path, dir: &Path, out: &mut BTreeSet<String>) {
        let Ok(entries) = std::fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                walk(base, &e.path(), out);
            } else if kind.is_file() {
                if let Ok(rel) = e.path().strip_prefix(base) {
                    out.insert(rel.to_string_lossy().replace('\\', "/"));
                }
            }
        }
    }
    let mut out = BTreeSet::new();
    walk(dir, dir, &mut out);
    out
}

fn text(path: &Path) -> Option<String> {
    std::fs::read(path).ok().map(|b| match String::from_utf8(b) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    })
}

/// Claude Code's permission-rule form of an absolute path (`//abs/path`).
fn rule_path(p: &Path) -> String {
    format!("/{}", p.to_string_lossy())
}

/// The policy as `--allowedTools` rules over the scratch copy. The CLI runs in `dontAsk`
/// mode, where even read-only shell commands need a rule, so each command of Claude Code's
/// READONLY_COMMANDS list (none of which can write) plus `ls`, `find`, `grep` and `rg` gets a
/// prefix rule; Claude Code itself refuses `find -delete`/`-exec` under a `find` prefix rule.
fn allowed_tools(policy: &Policy, scratch: &Path, release: &Profile) -> Vec<String> {
    match policy {
        Policy::AutoMem { .. } => {
            let mut rules: Vec<String> = vec![
                "Read".into(),
                "Grep".into(),
                "Glob".into(),
                format!("Edit({}/**)", rule_path(scratch)),
                format!("Write({}/**)", rule_path(scratch)),
                format!("Read({}/**)", rule_path(scratch)),
            ];
            rules.extend(read_only_prefixes(release.bash_read_only).into_iter().map(|c| format!("Bash({c}:*)")));
            rules
        }
        Policy::SessionMemory { path } => {
            let file = scratch.join(path.file_name().unwrap_or_default());
            vec![format!("Read({})", rule_path(&file)), format!("Edit({})", rule_path(&file))]
        }
    }
}

pub(crate) async fn run(agent: &dyn HeadlessAgent, task: &AgentTask, cancel: &Cancel) -> Result<AgentOutcome, AgentError> {
    let root = changeset_root(&task.policy);
    let base = task.work_dir.join(format!("headless-{}-{}", std::process::id(), SCRATCH_SEQ.fetch_add(1, Ordering::Relaxed)));
    let _cleanup = Scratch(base.clone());
    let scratch = base.join(root.file_name().unwrap_or_else(|| "memory".as_ref()));
    copy_tree(&root, &scratch).map_err(|source| AgentError::Scratch { path: scratch.clone(), source })?;

    let real = root.to_string_lossy().into_owned();
    let copy = scratch.to_string_lossy().into_owned();
    let cwd = match task.cwd.strip_prefix(&root) {
        Ok(rel) => scratch.join(rel),
        Err(_) => task.cwd.clone(),
    };
    let headless = HeadlessTask {
        prompt: task.prompt.replace(&real, &copy),
        system: Some(task.system.replace(&real, &copy)),
        cwd,
        allowed_tools: allowed_tools(&task.policy, &scratch, &task.release),
        disallowed_tools: Vec::new(),
        max_turns: task.max_turns,
    };
    let result = match agent.run(&headless, cancel).await {
        Ok(r) => Some(r),
        Err(ModelError::Cancelled) => None,
        Err(e) => return Err(e.into()),
    };

    // Claude Code wrote into a scratch copy with its own permissions; what comes back is held
    // to the same policy as the turn loop's writes (`.md` files, no protected names, no secret
    // into team memory), so nothing reaches the real folder that Mneme's own tools refuse.
    let gate = Gate::new(&task.policy, &task.release);
    let mut changes = Vec::new();
    let mut denials = Vec::new();
    let memdir = Memdir::new(&root, task.work_dir.join("unused-trash"), task.clock.clone());
    let names: BTreeSet<String> = files(&root).union(&files(&scratch)).cloned().collect();
    for rel in names {
        let before = text(&root.join(&rel));
        let after = text(&scratch.join(&rel));
        if before == after {
            continue;
        }
        let path = root.join(&rel);
        let shown = path.to_string_lossy().into_owned();
        if !gate.allows_write_path("Write", &shown) {
            denials.push(Denial { tool: "Write".into(), message: format!("{shown}: not a memory file this run may write; left out") });
            continue;
        }
        // A file the changeset could not apply (a link planted in the real folder where the copy
        // holds a plain file, a folder leading out of it) would lose every other change.
        let unappliable = match after {
            Some(_) => memdir.check_write_path(&rel),
            None => memdir.check_remove_path(&rel),
        };
        if let Err(e) = unappliable {
            denials.push(Denial { tool: "Write".into(), message: format!("{shown}: {e} Left out.") });
            continue;
        }
        if let Some(refusal) = after.as_deref().and_then(|text| gate.team_secret_refusal(&path, text)) {
            denials.push(Denial { tool: "Write".into(), message: format!("{shown}: {refusal}") });
            continue;
        }
        changes.push(FileChange { path, before, after, reason: format!("{}: Claude Code", task.label) });
    }
    let Some(result) = result else {
        return Ok(AgentOutcome {
            changeset: Changeset { root, changes },
            applied: None,
            written_paths: Vec::new(),
            turns: 0,
            denials,
            final_text: String::new(),
            stop: Stop::Cancelled,
        });
    };
    let mut written_paths = Vec::new();
    for p in &result.written_paths {
        let mapped = match p.strip_prefix(&scratch) {
            Ok(rel) => root.join(rel),
            Err(_) => p.clone(),
        };
        if gate.allows_write_path("Edit", &mapped.to_string_lossy()) && !written_paths.contains(&mapped) {
            written_paths.push(mapped);
        }
    }
    let stop = match task.max_turns {
        Some(max) if result.result == Stop::max_turns_message(max) => Stop::MaxTurns { max_turns: max },
        _ if cancel.is_cancelled() => Stop::Cancelled,
        _ => Stop::Completed,
    };
    Ok(AgentOutcome {
        changeset: Changeset { root, changes },
        applied: None,
        written_paths,
        turns: result.turns,
        denials,
        final_text: result.result.replace(&copy, &real),
        stop,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_use_claude_codes_absolute_path_form() {
        let newest = mneme_core::versions::newest();
        let rules = allowed_tools(&Policy::AutoMem { memory_dir: "/m".into() }, Path::new("/data/agent/h-1/memory"), &newest);
        assert_eq!(rules[..5], [
            "Read",
            "Grep",
            "Glob",
            "Edit(//data/agent/h-1/memory/**)",
            "Write(//data/agent/h-1/memory/**)"
        ]);
        for rule in ["Bash(ls:*)", "Bash(cat:*)", "Bash(find:*)", "Bash(grep:*)", "Bash(wc:*)", "Bash(head:*)"] {
            assert!(rules.iter().any(|r| r == rule), "{rule}");
        }
        for writer in ["Bash(rm:*)", "Bash(sed:*)", "Bash(sort:*)", "Bash(tee:*)", "Bash(xargs:*)", "Bash(docker:*)"] {
            assert!(!rules.iter().any(|r| r == writer), "{writer}");
        }
        let rules = allowed_tools(
            &Policy::SessionMemory { path: "/h/s/session-memory/summary.md".into() },
            Path::new("/w/session-memory"),
            &newest,
        );
        assert_eq!(rules, vec!["Read(//w/session-memory/summary.md)", "Edit(//w/session-memory/summary.md)"]);
    }
}
