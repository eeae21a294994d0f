//! What the loader tests share: a tree in a temporary folder with an empty home (`home`, its
//! `.claude` the configuration folder), a managed-settings folder that is never made
//! (`managed`) and a project folder `repo`, and the load options for a folder in it.
#![allow(dead_code)] // each test file uses its own part

use mneme_claudemd::LoadOptions;
use mneme_core::versions::{behaviours, ClaudeVersion};
use std::fs;
use std::path::{Path, PathBuf};

/// A tree in a temporary folder, removed when dropped. Test files add their own readings of
/// it in `impl Fx` blocks of their own.
pub struct Fx {
    _tmp: tempfile::TempDir,
    /// The folder, canonical: the loader reports canonical paths, and on macOS the temporary
    /// folder is behind a link.
    pub root: PathBuf,
}

impl Fx {
    pub fn new() -> Self {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = fs::canonicalize(tmp.path()).expect("canonical tempdir");
        fs::create_dir_all(root.join("home/.claude")).unwrap();
        fs::create_dir_all(root.join("repo")).unwrap();
        Fx { _tmp: tmp, root }
    }

    /// `rel` under the tree.
    pub fn p(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.root.join(rel)
    }

    /// Writes `content` at `rel`, making its folders (any bytes, so a name may be anything the
    /// system allows).
    pub fn write_bytes(&self, rel: impl AsRef<Path>, content: &[u8]) -> PathBuf {
        let p = self.p(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(&p, content).unwrap();
        p
    }

    /// What Claude Code `release` loads from in folder `cwd` (made if missing) of the tree.
    pub fn options_for(&self, cwd: &str, release: ClaudeVersion) -> LoadOptions {
        let cwd = self.p(cwd);
        fs::create_dir_all(&cwd).unwrap();
        LoadOptions::new(cwd, self.p("home"), self.p("home/.claude"), self.p("managed"), behaviours(release))
    }
}
