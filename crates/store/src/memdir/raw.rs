//! Verbatim writes of any file in the memory folder, for writers that already hold the
//! whole new text (an agent's changeset): topic files, `MEMORY.md` at any depth, anything.
//!
//! The same guarantees as the rest of the folder's writes: the path is validated lexically
//! and physically (no `..`, no symbolic-link escape), the write is atomic, and it is refused
//! with [`MemdirError::ChangedOnDisk`] when the file no longer matches the revision the
//! caller read.

use super::error::io_err;
use super::scan::read_bytes;
use super::{Memdir, MemdirError, Revision, Scope};
use std::fs;
use std::path::PathBuf;

/// Checks a `/`-separated path relative to the memory folder: not empty, not absolute, no
/// `.`/`..`/empty segments, no backslash, NUL or control characters. Public so a writer that
/// applies later (an agent's run) can refuse such a path when it is asked for, not at the end.
pub fn validate_raw_path(rel: &str) -> Result<(), MemdirError> {
    let refuse = |reason: &str| Err(MemdirError::InvalidPath { path: rel.to_string(), reason: reason.to_string() });
    if rel.is_empty() {
        return refuse("the path is empty");
    }
    if rel.starts_with('/') || rel.contains('\\') {
        return refuse("give a path relative to the folder, separated with '/'");
    }
    if rel.chars().any(char::is_control) {
        return refuse("it contains a control character");
    }
    if rel.split('/').any(|p| matches!(p, "" | "." | "..")) {
        return refuse("it contains an empty, '.' or '..' segment; paths must stay inside the folder");
    }
    Ok(())
}

impl Memdir {
    /// The bytes at `rel` and their revision ([`Revision::ABSENT`] and `None` when missing).
    pub fn read_raw(&self, rel: &str) -> Result<(Option<Vec<u8>>, Revision), MemdirError> {
        validate_raw_path(rel)?;
        let real_root = self.real_root()?;
        let abs = self.abs(rel);
        self.check_contained(&real_root, rel, &abs)?;
        Ok(match read_bytes(&abs)? {
            Some((bytes, meta)) => {
                let rev = Revision::of(&bytes, &meta);
                (Some(bytes), rev)
            }
            None => (None, Revision::ABSENT),
        })
    }

    /// Atomically replaces (or, with [`Revision::ABSENT`], creates) the file at `rel` with
    /// `content`, creating missing folders, if it still matches `expected`.
    pub fn write_raw(&self, rel: &str, content: &[u8], expected: &Revision) -> Result<Revision, MemdirError> {
        validate_raw_path(rel)?;
        let real_root = self.ensure_root()?;
        let mut abs: PathBuf = self.abs(rel);
        self.check_contained(&real_root, rel, &abs)?;
        // A linked index (`MEMORY.md -> notes/index.md`, which the check above keeps inside) is
        // written where it lives, as every index edit writes it: putting back an index the fix
        // changed must not refuse the link it followed, nor replace it with a file.
        if [Scope::Private, Scope::Team].iter().any(|s| s.index_rel_path() == rel) && fs::symlink_metadata(&abs).is_ok_and(|m| m.file_type().is_symlink()) {
            if let Ok(target) = fs::canonicalize(&abs) {
                abs = target;
            }
        }
        if expected.exists() {
            self.require_regular(rel, &abs)?;
        }
        if let Some(parent) = abs.parent() {
            fs::create_dir_all(parent).map_err(io_err("create the folder", parent))?;
            // The folder may have been created through a link planted meanwhile.
            self.check_contained(&real_root, rel, &abs)?;
        }
        self.write_replace(&abs, rel, content, expected)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    /// A linked index is written where it lives, as an index edit writes it (putting back an
    /// index "Fix index" changed); the link stays a link.
    #[test]
    fn a_linked_index_is_written_where_it_lives() {
        let t = TestDir::new();
        t.write("notes/index.md", "- [a](../a.md)\n");
        std::os::unix::fs::symlink("notes/index.md", t.mem().join("MEMORY.md")).unwrap();
        let m = t.memdir();
        let (_, rev) = m.read_raw("MEMORY.md").unwrap();
        m.write_raw("MEMORY.md", b"- [a](../a.md) \xe2\x80\x94 put back\n", &rev).unwrap();
        assert!(std::fs::symlink_metadata(t.mem().join("MEMORY.md")).unwrap().file_type().is_symlink());
        assert_eq!(t.read("notes/index.md"), "- [a](../a.md) — put back\n");
    }

    #[test]
    fn writes_any_file_with_conflict_checks() {
        let t = TestDir::new();
        let m = t.memdir();
        let r = m.write_raw("MEMORY.md", b"- [a](a.md)\n", &Revision::ABSENT).unwrap();
        assert_eq!(t.read("MEMORY.md"), "- [a](a.md)\n");
        m.write_raw("team/sub/x.md", b"x", &Revision::ABSENT).unwrap();
        assert_eq!(t.read("team/sub/x.md"), "x");
        assert_eq!(m.write_raw("MEMORY.md", b"again", &Revision::ABSENT).unwrap_err().code(), "changed-on-disk");
        t.write("MEMORY.md", "changed by Claude Code");
        assert_eq!(m.write_raw("MEMORY.md", b"mine", &r).unwrap_err().code(), "changed-on-disk");
        let (bytes, rev) = m.read_raw("MEMORY.md").unwrap();
        assert_eq!(bytes.as_deref(), Some(&b"changed by Claude Code"[..]));
        m.write_raw("MEMORY.md", b"mine", &rev).unwrap();
        assert_eq!(t.read("MEMORY.md"), "mine");
        assert_eq!(m.read_raw("missing.md").unwrap(), (None, Revision::ABSENT));
        for bad in ["../x.md", "/abs.md", "a//b.md", "a/./b.md", "a\\b.md", ""] {
            assert_eq!(m.write_raw(bad, b"x", &Revision::ABSENT).unwrap_err().code(), "invalid-path", "{bad}");
        }
    }

    #[cfg(unix)]
    #[test]
    fn symlink_escapes_are_refused() {
        let t = TestDir::new();
        std::fs::create_dir_all(t.path().join("elsewhere")).unwrap();
        std::os::unix::fs::symlink(t.path().join("elsewhere"), t.mem().join("out")).unwrap();
        let m = t.memdir();
        assert_eq!(m.write_raw("out/x.md", b"x", &Revision::ABSENT).unwrap_err().code(), "outside-memdir");
        assert!(!t.path().join("elsewhere/x.md").exists());
    }
}
