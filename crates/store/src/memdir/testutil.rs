//! Hermetic fixtures for the memdir tests: a temporary folder holding `mem/` (the memory
//! folder) and `trash/`, a frozen clock, and a text rendering of the tree for snapshots.

use super::Memdir;
use mneme_core::{Clock, FixedClock};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// 2025-11-29T13:16:47Z, the instant every test's clock is frozen at.
pub const NOW_SECS: u64 = 1_764_422_207;

pub fn clock() -> Arc<dyn Clock> {
    Arc::new(FixedClock::at_unix_secs(NOW_SECS))
}

pub struct TestDir {
    dir: tempfile::TempDir,
}

impl TestDir {
    pub fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir_all(dir.path().join("mem")).unwrap();
        TestDir { dir }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn mem(&self) -> PathBuf {
        self.dir.path().join("mem")
    }

    pub fn memdir(&self) -> Memdir {
        Memdir::new(self.mem(), self.dir.path().join("trash"), clock())
    }

    /// Writes `rel` inside the memory folder, creating folders.
    pub fn write(&self, rel: &str, content: &str) {
        self.write_bytes(rel, content.as_bytes());
    }

    pub fn write_bytes(&self, rel: &str, content: &[u8]) {
        let p = self.mem().join(rel);
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, content).unwrap();
    }

    /// Writes next to (not inside) the memory folder.
    pub fn write_outside(&self, rel: &str, content: &str) {
        fs::write(self.dir.path().join(rel), content).unwrap();
    }

    pub fn read(&self, rel: &str) -> String {
        fs::read_to_string(self.mem().join(rel)).unwrap()
    }

    pub fn exists(&self, rel: &str) -> bool {
        fs::symlink_metadata(self.mem().join(rel)).is_ok()
    }

    /// Sets a file's mtime to `secs` + `millis` after the epoch.
    pub fn set_mtime(&self, rel: &str, secs: i64, millis: u32) {
        let t = filetime::FileTime::from_unix_time(secs, millis * 1_000_000);
        filetime::set_file_mtime(self.mem().join(rel), t).unwrap();
    }

    /// Every file under the memory folder as `path: content` lines, sorted: a readable
    /// snapshot of the disk.
    pub fn tree(&self) -> String {
        let mut out = Vec::new();
        walk(&self.mem(), "", &mut out);
        out.sort();
        out.join("\n")
    }
}

fn walk(dir: &Path, prefix: &str, out: &mut Vec<String>) {
    for e in fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        if e.file_type().unwrap().is_dir() {
            walk(&e.path(), &rel, out);
        } else {
            let content = fs::read_to_string(e.path()).unwrap_or_default();
            out.push(format!("{rel}: {}", content.escape_debug()));
        }
    }
}

#[cfg(unix)]
pub fn set_mode(p: &Path, mode: u32) {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(p, fs::Permissions::from_mode(mode)).unwrap();
}

#[cfg(not(unix))]
pub fn set_mode(_p: &Path, _mode: u32) {}
