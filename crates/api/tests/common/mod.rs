//! What the disk-says-no tests share: a fresh home with a small tmpfs standing for a drive, the
//! two ways that drive says no with the code and words the api must answer each with, and the
//! check that a refused write left every file as it was and no temporary file behind.
#![allow(dead_code)] // each test file uses its own part

use mneme_api::{ApiError, ErrorCode};
use mneme_testsupport::accounts::root_or_skip;
use mneme_testsupport::tmpfs::Tmpfs;
use mneme_testsupport::{tree_snapshot, TestHome};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// A fresh home with a tmpfs of `size` (`64k`, `256k`) mounted on its `drive` folder. `None`
/// when this is not root: the test has said that it did not run and passes without checking.
/// Keep the drive before the home wherever both are held (fields drop in order): it must be
/// unmounted before the temporary folder goes.
pub fn home_with_drive(size: &str) -> Option<(TestHome, Tmpfs)> {
    if !root_or_skip("mounting a tmpfs") {
        return None;
    }
    let t = TestHome::new();
    let drive = Tmpfs::mount(&t.root.join("drive"), size).expect("mounting a tmpfs as root");
    Some((t, drive))
}

/// How a drive says no to a write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Refusal {
    /// Filled to the brim.
    Full,
    /// Remounted read-only.
    ReadOnly,
}

impl Refusal {
    /// Makes `drive` say it.
    pub fn make(self, drive: &Tmpfs) {
        match self {
            Refusal::Full => drive.fill(),
            Refusal::ReadOnly => drive.read_only(),
        }
    }

    /// The code the api answers it with.
    pub fn code(self) -> ErrorCode {
        match self {
            Refusal::Full => ErrorCode::DiskFull,
            Refusal::ReadOnly => ErrorCode::ReadOnly,
        }
    }

    /// What the api's sentence must say: what happened and what to do about it.
    pub fn words(self) -> &'static str {
        match self {
            Refusal::Full => "is full. Free some space on it, then try again",
            Refusal::ReadOnly => "is mounted read-only. Remount it read-write",
        }
    }

    /// Asserts that `e`, the answer to `what`, is this refusal: its code, its words, and the
    /// place the disk refused (`place` or a path below it).
    pub fn assert_answers(self, what: &str, e: &ApiError, place: &Path) {
        eprintln!("{what}: {:?}: {}", e.code, e.message);
        assert_eq!(e.code, self.code(), "{what}: {e}");
        assert!(e.message.contains(self.words()), "{what}: {e}");
        assert!(e.message.contains(&place.display().to_string()), "{what} names where: {e}");
    }
}

/// A snapshot of folders taken before writes the disk must refuse (`tree_snapshot` of each).
pub struct Before(Vec<(PathBuf, BTreeMap<PathBuf, Vec<u8>>)>);

impl Before {
    pub fn take(roots: &[&Path]) -> Before {
        Before(roots.iter().map(|r| (r.to_path_buf(), tree_snapshot(r))).collect())
    }

    /// Asserts that `what` left no temporary file below the folders and changed, added and
    /// removed nothing there.
    pub fn assert_unchanged(&self, what: &str) {
        for (root, before) in &self.0 {
            let after = tree_snapshot(root);
            let temps = temporary_files(&after);
            assert!(temps.is_empty(), "{what} left a temporary file: {temps:?}");
            let differ: Vec<_> = after.keys().filter(|k| before.get(*k) != after.get(*k)).chain(before.keys().filter(|k| !after.contains_key(*k))).collect();
            assert!(differ.is_empty(), "{what} changed {}: {differ:?}", root.display());
        }
    }
}

/// The temporary files (`*.tmp`, as the atomic writes name theirs) in a `tree_snapshot`.
pub fn temporary_files(snapshot: &BTreeMap<PathBuf, Vec<u8>>) -> Vec<&PathBuf> {
    snapshot.keys().filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".tmp"))).collect()
}

/// A project whose Claude Code configuration (settings.json with auto memory on, the memory
/// folder) and Mneme's data folder all lie under `top` (a drive), its MEMORY.md holding `index`
/// and a Tabs memory beside it: the environment to run Mneme in, the project, the memory folder.
pub fn tabs_project_under(t: &TestHome, top: &Path, index: &str) -> (mneme_store::Environment, PathBuf, PathBuf) {
    let config = top.join("claude");
    let env = t
        .env
        .clone()
        .set_var("CLAUDE_CONFIG_DIR", config.to_string_lossy().to_string())
        .set_var("MNEME_DATA_DIR", top.join("mneme-data").to_string_lossy().to_string());
    let repo = top.join("repo");
    std::fs::create_dir_all(&repo).unwrap();
    mneme_testsupport::write_file(&config.join("settings.json"), "{\n  \"autoMemoryEnabled\": true\n}\n");
    let memdir = config.join("projects").join(mneme_core::sanitize::sanitize_path(&repo.to_string_lossy())).join("memory");
    mneme_testsupport::write_file(&memdir.join("MEMORY.md"), index);
    mneme_testsupport::write_file(&memdir.join("tabs.md"), &mneme_testsupport::topic("Tabs", "the team uses tabs", "feedback", "Tabs, not spaces."));
    (env, repo, memdir)
}

/// A project with three memories (alpha, beta, gamma; `project` type, a description each) and
/// `index` as its MEMORY.md, in `t`: the lone-CR and CRLF index tests' folder.
pub fn three_memories(t: &TestHome, index: &str) -> (PathBuf, PathBuf) {
    let project = t.root.join("code/app");
    std::fs::create_dir_all(&project).unwrap();
    let mem = t.memdir_for(&project);
    for (file, name, hook) in [("alpha.md", "Alpha", "first"), ("beta.md", "Beta", "second"), ("gamma.md", "Gamma", "third")] {
        mneme_testsupport::write_file(&mem.join(file), &format!("---\nname: {name}\ndescription: {hook}\ntype: project\n---\nbody\n"));
    }
    mneme_testsupport::write_file(&mem.join("MEMORY.md"), index);
    (project, mem)
}
