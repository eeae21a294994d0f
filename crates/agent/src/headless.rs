//! Providers that run their own agent (the Claude Code CLI): the task runs in a scratch copy of
//! the folder with the policy as Claude Code permission rules, and the copy is diffed against
//! the original into the same [`Changeset`](crate::Changeset) the turn loop produces.

use crate::bash::read_only_prefixes;
use crate::overlay::MAX_READ_BYTES;
use crate::policy::Gate;
use crate::run::changeset_root;
use crate::{AgentError, AgentOutcome, AgentTask, Changeset, Denial, FileChange, Policy, Stop};
use mneme_core::versions::Profile;
use mneme_model::{Cancel, HeadlessAgent, HeadlessTask, ModelError};
use mneme_store::memdir::{Memdir, MemdirError};
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

/// Bytes as text, invalid UTF-8 shown as U+FFFD.
fn text(bytes: Vec<u8>) -> String {
    match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    }
}

/// One side of a file compared after the run: the real folder's or the scratch copy's.
enum Side {
    Missing,
    Text(String),
    /// Past [`MAX_READ_BYTES`]: not read into memory, only compared a block at a time (a large
    /// file the run left alone is no change; one it made or changed is left out).
    Large(std::fs::File),
}

impl Side {
    fn text(self) -> Option<String> {
        match self {
            Side::Text(t) => Some(t),
            Side::Missing | Side::Large(_) => None,
        }
    }
}

/// Why one side of a file was not read for the comparison; said in the run's denial.
#[derive(Debug)]
enum Unread {
    /// A link at the name itself: not followed.
    Link,
    /// A folder, named pipe, socket or device, in `mneme_store::open::kind_of`'s words.
    NotPlain(&'static str),
    /// The system refused: `doing` is what was being done.
    Io { doing: &'static str, source: std::io::Error },
    /// The real folder's side, refused by the memory folder's own checks.
    Memdir(MemdirError),
}

impl std::fmt::Display for Unread {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unread::Link => f.write_str("it is a symbolic link, which is not followed."),
            Unread::NotPlain(kind) => write!(f, "it is {kind}, not a plain file, so it is not read."),
            Unread::Io { doing, source } => write!(f, "it could not be {doing} ({source})."),
            Unread::Memdir(e) => write!(f, "{e}"),
        }
    }
}

/// Opens `path` for the comparison without following a link at its last component
/// (`O_NOFOLLOW`) and without waiting for a FIFO's writer (`O_NONBLOCK`), and reads it only if
/// it is a regular file of at most [`MAX_READ_BYTES`]: a name holding a link (to `/dev/zero`, to a
/// file outside the folder), a FIFO, a device or a folder is refused, saying what it is, rather
/// than read forever, waited on for ever, or read where it leads.
fn side(path: &Path) -> Result<Side, Unread> {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let flags = rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK | rustix::fs::OFlags::CLOEXEC;
    let file = match std::fs::OpenOptions::new().read(true).custom_flags(flags.bits() as i32).open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Side::Missing),
        Err(_) if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) => return Err(Unread::Link),
        Err(source) => return Err(Unread::Io { doing: "opened", source }),
    };
    let meta = file.metadata().map_err(|source| Unread::Io { doing: "inspected", source })?;
    if !meta.is_file() {
        return Err(Unread::NotPlain(mneme_store::open::kind_of(&meta)));
    }
    if meta.len() > MAX_READ_BYTES {
        return Ok(Side::Large(file));
    }
    let mut bytes = Vec::with_capacity(mneme_store::open::capacity_for(meta.len()));
    // It may grow after its size was taken: the read stops one byte past the cap either way.
    (&file).take(MAX_READ_BYTES + 1).read_to_end(&mut bytes).map_err(|source| Unread::Io { doing: "read", source })?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        return Ok(Side::Large(file));
    }
    Ok(Side::Text(text(bytes)))
}

/// Whether two large files hold the same bytes, compared a block at a time from the start so
/// that neither is held whole (a large memory the run left alone is no change).
fn same_content(mut a: &std::fs::File, mut b: &std::fs::File) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let (Ok(ma), Ok(mb)) = (a.metadata(), b.metadata()) else { return false };
    if ma.len() != mb.len() || a.seek(SeekFrom::Start(0)).is_err() || b.seek(SeekFrom::Start(0)).is_err() {
        return false;
    }
    let (mut ba, mut bb) = (vec![0u8; 1 << 16], vec![0u8; 1 << 16]);
    let fill = |f: &mut &std::fs::File, buf: &mut [u8]| -> std::io::Result<usize> {
        let mut n = 0;
        while n < buf.len() {
            match f.read(&mut buf[n..])? {
                0 => break,
                k => n += k,
            }
        }
        Ok(n)
    };
    loop {
        match (fill(&mut a, &mut ba), fill(&mut b, &mut bb)) {
            (Ok(na), Ok(nb)) if na == nb && ba[..na] == bb[..nb] => {
                if na == 0 {
                    return true;
                }
            }
            _ => return false,
        }
    }
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
    let listed = files(&root);
    let names: BTreeSet<String> = listed.union(&files(&scratch)).cloned().collect();
    for rel in names {
        let path = root.join(&rel);
        let shown = path.to_string_lossy().into_owned();
        let mut left_out = |why: &dyn std::fmt::Display| denials.push(Denial { tool: "Write".into(), message: format!("{shown}: {why} Left out."), extra: Default::default() });
        // What the CLI left in the copy is read as the real folder's side is: a file of any
        // size it wrote is not read whole, and a link or FIFO there is not read at all.
        let after = match side(&scratch.join(&rel)) {
            Ok(after) => after,
            Err(why) => {
                left_out(&format_args!("in Claude Code's copy of the folder, {why}"));
                continue;
            }
        };
        // The real folder's side. A name listed there was a regular file reached through real
        // folders; any other name is one the copy holds and the folder did not, where the folder
        // may hold what the listing passes over (a link to `/dev/zero` or to a file outside it, a
        // FIFO, a folder link leading out). Such a path is checked before anything is read, and
        // then read only inside the folder, never waiting on a FIFO, never past the size cap:
        // a read through it would run out of memory, block for ever, or hold a file from outside
        // the folder as the change's "before" (and let a guess of its text pass unnoticed).
        let before = if listed.contains(&rel) {
            side(&path)
        } else if matches!(after, Side::Missing) {
            continue;
        } else {
            match memdir.check_write_path(&rel).and_then(|()| memdir.read_raw(&rel)) {
                Ok((bytes, _)) => Ok(bytes.map_or(Side::Missing, |b| Side::Text(text(b)))),
                Err(MemdirError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => Ok(Side::Missing),
                Err(e) => Err(Unread::Memdir(e)),
            }
        };
        let before = match before {
            Ok(before) => before,
            Err(why) => {
                left_out(&why);
                continue;
            }
        };
        let (before, after) = match (before, after) {
            (Side::Large(a), Side::Large(b)) if same_content(&a, &b) => continue,
            (Side::Large(_), _) | (_, Side::Large(_)) => {
                left_out(&format_args!("it is larger than {} MiB, which Mneme does not read whole.", MAX_READ_BYTES >> 20));
                continue;
            }
            (before, after) => (before.text(), after.text()),
        };
        if before == after {
            continue;
        }
        if !gate.allows_write_path("Write", &shown) {
            denials.push(Denial { tool: "Write".into(), message: format!("{shown}: not a memory file this run may write; left out"), extra: Default::default() });
            continue;
        }
        // A file the changeset could not apply (a link planted in the real folder where the copy
        // holds a plain file, a folder leading out of it) would lose every other change.
        let unappliable = match after {
            Some(_) => memdir.check_write_path(&rel),
            None => memdir.check_remove_path(&rel),
        };
        if let Err(e) = unappliable {
            denials.push(Denial { tool: "Write".into(), message: format!("{shown}: {e} Left out."), extra: Default::default() });
            continue;
        }
        if let Some(refusal) = after.as_deref().and_then(|text| gate.team_secret_refusal(&path, text)) {
            denials.push(Denial { tool: "Write".into(), message: format!("{shown}: {refusal}"), extra: Default::default() });
            continue;
        }
        changes.push(FileChange { path, before, after, reason: format!("{}: Claude Code", task.label), extra: Default::default() });
    }
    let Some(result) = result else {
        return Ok(AgentOutcome {
            changeset: Changeset { root, changes, extra: Default::default() },
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
        changeset: Changeset { root, changes, extra: Default::default() },
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
