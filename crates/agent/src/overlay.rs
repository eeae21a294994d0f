//! The run's pending writes: every `Edit`, `Write` and allowed `rm` lands here instead of on
//! disk, and every read looks here first. At the end it becomes the [`Changeset`].

use crate::changeset::{Changeset, FileChange};
use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

#[derive(Debug, Clone, PartialEq, Eq)]
enum State {
    /// As on disk.
    Clean,
    Written(String),
    Removed,
}

#[derive(Debug)]
struct Entry {
    /// The disk content when the run first touched the file (`None`: it did not exist).
    base: Option<String>,
    state: State,
    /// The tools that changed it, in order, without repeats.
    tools: Vec<String>,
    /// How many times the run wrote or removed it: the run's own writes have no modification
    /// time, so this tells whether one came since a Read.
    writes: u64,
}

/// What a read sees.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Seen {
    pub content: String,
    /// Modification time in ms since the epoch; `None` for the run's own writes.
    pub mtime_ms: Option<u128>,
}

#[derive(Debug, Default)]
pub(crate) struct Overlay {
    entries: HashMap<PathBuf, Entry>,
    order: Vec<PathBuf>,
}

fn mtime_ms(meta: &fs::Metadata) -> Option<u128> {
    meta.modified().ok()?.duration_since(SystemTime::UNIX_EPOCH).ok().map(|d| d.as_millis())
}

/// The most of one file the agent's tools read (a file under `/proc` may say it is empty
/// and never end).
pub(crate) const MAX_READ_BYTES: u64 = 64 << 20;

/// The file's text (invalid UTF-8 shown as U+FFFD) and mtime, `None` when missing. A device,
/// FIFO or socket is refused without waiting on it; a file past [`MAX_READ_BYTES`] is refused
/// after reading no more than that.
pub(crate) fn read_disk(path: &Path) -> io::Result<Option<Seen>> {
    use io::Read;
    let file = match mneme_store::open::open_no_wait(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a plain file (a folder, device, pipe or socket), so it is not read"));
    }
    let mut bytes = Vec::with_capacity(mneme_store::open::capacity_for(meta.len()));
    file.take(MAX_READ_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_READ_BYTES {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("larger than {} MiB, so it is not read", MAX_READ_BYTES >> 20)));
    }
    let content = match String::from_utf8(bytes) {
        Ok(s) => s,
        Err(e) => String::from_utf8_lossy(e.as_bytes()).into_owned(),
    };
    Ok(Some(Seen { content, mtime_ms: mtime_ms(&meta) }))
}

impl Overlay {
    fn touch(&mut self, path: &Path) -> io::Result<&mut Entry> {
        if !self.entries.contains_key(path) {
            let base = read_disk(path)?.map(|s| s.content);
            self.entries.insert(path.to_path_buf(), Entry { base, state: State::Clean, tools: Vec::new(), writes: 0 });
            self.order.push(path.to_path_buf());
        }
        Ok(self.entries.get_mut(path).expect("inserted above"))
    }

    /// The file as the run sees it. The first read of a file records its disk content as the
    /// changeset's `before`, so a later change on disk is caught when applying.
    pub fn read(&mut self, path: &Path) -> io::Result<Option<Seen>> {
        if let Some(e) = self.entries.get(path) {
            return Ok(match &e.state {
                State::Written(c) => Some(Seen { content: c.clone(), mtime_ms: None }),
                State::Removed => None,
                State::Clean => read_disk(path)?,
            });
        }
        let seen = read_disk(path)?;
        self.entries.insert(
            path.to_path_buf(),
            Entry { base: seen.as_ref().map(|s| s.content.clone()), state: State::Clean, tools: Vec::new(), writes: 0 },
        );
        self.order.push(path.to_path_buf());
        Ok(seen)
    }

    /// How many times the run has written or removed the file.
    pub fn writes(&self, path: &Path) -> u64 {
        self.entries.get(path).map_or(0, |e| e.writes)
    }

    /// Whether the run changed the file (so disk state says nothing about it).
    pub fn is_changed(&self, path: &Path) -> bool {
        self.entries.get(path).is_some_and(|e| e.state != State::Clean)
    }

    pub fn is_removed(&self, path: &Path) -> bool {
        self.entries.get(path).is_some_and(|e| e.state == State::Removed)
    }

    pub fn write(&mut self, path: &Path, content: String, tool: &str) -> io::Result<()> {
        let e = self.touch(path)?;
        e.state = State::Written(content);
        e.writes += 1;
        if !e.tools.iter().any(|t| t == tool) {
            e.tools.push(tool.to_string());
        }
        Ok(())
    }

    pub fn remove(&mut self, path: &Path, tool: &str) -> io::Result<()> {
        let e = self.touch(path)?;
        e.state = State::Removed;
        e.writes += 1;
        if !e.tools.iter().any(|t| t == tool) {
            e.tools.push(tool.to_string());
        }
        Ok(())
    }

    /// Files the run wrote, with their content (for searches and the `Bash` view).
    pub fn written(&self) -> impl Iterator<Item = (&Path, &str)> {
        self.order.iter().filter_map(|p| match &self.entries[p].state {
            State::Written(c) => Some((p.as_path(), c.as_str())),
            _ => None,
        })
    }

    /// The bytes of every file the run holds written.
    pub fn pending_bytes(&self) -> usize {
        self.written().map(|(_, c)| c.len()).sum()
    }

    /// The bytes the run holds written for `path` (0 when it holds none).
    pub fn pending_len(&self, path: &Path) -> usize {
        match self.entries.get(path).map(|e| &e.state) {
            Some(State::Written(c)) => c.len(),
            _ => 0,
        }
    }

    /// Files the run wrote or removed.
    pub fn changed(&self) -> impl Iterator<Item = &Path> {
        self.order.iter().filter(|p| self.entries[*p].state != State::Clean).map(PathBuf::as_path)
    }

    /// Files the run removed.
    pub fn removed(&self) -> impl Iterator<Item = &Path> {
        self.order.iter().filter(|p| self.entries[*p].state == State::Removed).map(PathBuf::as_path)
    }

    /// Whether anything differs from disk.
    pub fn has_changes(&self) -> bool {
        self.entries.values().any(|e| e.state != State::Clean)
    }

    /// The changes, in first-touch order, each with its `before` as first seen.
    pub fn changeset(&self, root: &Path, label: &str) -> Changeset {
        let changes = self
            .order
            .iter()
            .filter_map(|p| {
                let e = &self.entries[p];
                let after = match &e.state {
                    State::Clean => return None,
                    State::Written(c) => Some(c.clone()),
                    State::Removed => None,
                };
                (after != e.base).then(|| FileChange {
                    path: p.clone(),
                    before: e.base.clone(),
                    after,
                    reason: format!("{label}: {}", e.tools.join(", ")),
                    extra: Default::default(),
                })
            })
            .collect();
        Changeset { root: root.to_path_buf(), changes, extra: Default::default() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_see_writes_and_the_changeset_keeps_first_seen_content() {
        let t = tempfile::tempdir().unwrap();
        let a = t.path().join("a.md");
        fs::write(&a, "v1").unwrap();
        let mut o = Overlay::default();
        assert_eq!(o.read(&a).unwrap().unwrap().content, "v1");
        fs::write(&a, "v2 on disk").unwrap();
        o.write(&a, "mine".into(), "Edit").unwrap();
        assert_eq!(o.read(&a).unwrap().unwrap().content, "mine");
        let b = t.path().join("b.md");
        o.write(&b, "new".into(), "Write").unwrap();
        o.remove(&b, "Bash").unwrap();
        assert!(o.read(&b).unwrap().is_none());
        let cs = o.changeset(t.path(), "extract_memories");
        assert_eq!(cs.changes.len(), 1, "a file created and removed in the run is no change");
        assert_eq!(cs.changes[0].before.as_deref(), Some("v1"));
        assert_eq!(cs.changes[0].after.as_deref(), Some("mine"));
        assert_eq!(cs.changes[0].reason, "extract_memories: Edit");
        assert_eq!(fs::read_to_string(&a).unwrap(), "v2 on disk", "nothing touches the disk");
    }
}
