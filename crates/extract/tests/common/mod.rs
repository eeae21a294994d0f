//! What the inbox's test files share: a data folder, a project and its memory folder in a
//! temporary directory, the inbox over them, and where its item files are.

// Each test file that says `mod common;` compiles all of this and uses only some of it.
#![allow(dead_code)]

use mneme_agent::{Changeset, FileChange};
use mneme_core::FixedClock;
use mneme_extract::inbox::{Inbox, NewItem};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// When [`World::inbox`] is (Unix seconds).
pub const T0: u64 = 1_800_000_000;

pub struct World {
    _dir: tempfile::TempDir,
    pub data: PathBuf,
    pub project: PathBuf,
    pub memory: PathBuf,
    /// The inbox at [`T0`].
    pub inbox: Inbox,
}

impl World {
    pub fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let project = dir.path().join("proj");
        let memory = dir.path().join("memory");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&memory).unwrap();
        let inbox = Inbox::new(&data, Arc::new(FixedClock::at_unix_secs(T0)));
        World { _dir: dir, data, project, memory, inbox }
    }

    /// The inbox as seen at `secs` (Unix time): each decision is dated by the clock it is made with.
    pub fn at(&self, secs: u64) -> Inbox {
        Inbox::new(&self.data, Arc::new(FixedClock::at_unix_secs(secs)))
    }

    /// The inbox folder, where each item is `<id>.json`.
    pub fn folder(&self) -> PathBuf {
        self.data.join("extract/inbox")
    }

    pub fn item_path(&self, id: &str) -> PathBuf {
        self.folder().join(format!("{id}.json"))
    }

    /// Every file name in the inbox folder, sorted.
    pub fn names(&self) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(self.folder()).unwrap().flatten().map(|e| e.file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }
}

/// An item extraction would stage for `project`, whose memory folder is `memory`: `changes` to it.
pub fn new_item(project: &Path, memory: &Path, changes: Vec<FileChange>) -> NewItem {
    NewItem {
        project_root: project.to_path_buf(),
        memory_dir: memory.to_path_buf(),
        session_id: None,
        transcript: None,
        source: "extract_memories".into(),
        changeset: Changeset { root: memory.to_path_buf(), changes, extra: Default::default() },
    }
}
