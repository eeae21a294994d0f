//! Verbatim writes of any file in the memory folder, for writers that already hold the
//! whole new text (an agent's changeset): topic files, `MEMORY.md` at any depth, anything.
//!
//! The same guarantees as the rest of the folder's writes: the path is validated lexically
//! and physically (no `..`, no symbolic-link escape), the write is atomic, and it is refused
//! with [`MemdirError::ChangedOnDisk`] when the file no longer matches the revision the
//! caller read.

use super::error::io_err;
use super::path::MAX_COMPONENT_BYTES;
use super::scan::read_bytes;
use super::{Memdir, MemdirError, Revision, Scope};
use std::fs;
use std::io;
use std::path::PathBuf;

/// Checks a `/`-separated path relative to the memory folder: not empty, not absolute, no
/// `.`/`..`/empty segments, no backslash, NUL or control characters, no name past 255 bytes
/// (which no file system takes, so the write would fail at the end). Public so a writer that
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
    if let Some(long) = rel.split('/').find(|p| p.len() > MAX_COMPONENT_BYTES) {
        return refuse(&format!(
            "the name \"{}…\" is {} bytes long; file systems allow {MAX_COMPONENT_BYTES}",
            long.chars().take(20).collect::<String>(),
            long.len()
        ));
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

    /// Whether [`Memdir::write_raw`] would refuse `rel` whatever the content, as the folder
    /// stands: an invalid path, one that leads out of the folder through a link (or a dangling
    /// one), or a link itself (an index excepted: it is written where it leads). For writers
    /// that apply later (an agent's run), so such a path is refused when it is asked for rather
    /// than losing every other change at the end. A missing folder refuses nothing.
    pub fn check_write_path(&self, rel: &str) -> Result<(), MemdirError> {
        validate_raw_path(rel)?;
        let real_root = match self.real_root() {
            Ok(root) => root,
            Err(MemdirError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        let abs = self.abs(rel);
        self.check_contained(&real_root, rel, &abs)?;
        let index = [Scope::Private, Scope::Team].iter().any(|s| s.index_rel_path() == rel);
        match fs::symlink_metadata(&abs) {
            Ok(m) if m.file_type().is_symlink() && !index => {
                Err(MemdirError::NotARegularFile { path: rel.to_string(), detail: super::path::describe_type(&m) })
            }
            _ => Ok(()),
        }
    }

    /// Whether a change that removes `rel` (an agent's, applied with the revision check of
    /// [`Memdir::read_raw`] and then moved to the trash) would be refused for where it lies: an
    /// invalid path, or one that leads out of the folder through a link, the file itself being
    /// such a link included (what it holds is read where it leads).
    pub fn check_remove_path(&self, rel: &str) -> Result<(), MemdirError> {
        validate_raw_path(rel)?;
        let real_root = match self.real_root() {
            Ok(root) => root,
            Err(MemdirError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        self.check_contained(&real_root, rel, &self.abs(rel))
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

    /// `check_write_path` refuses, before anything is written, each path `write_raw` would
    /// refuse whatever the content: links out of the folder, dangling links, links themselves
    /// (a linked index excepted), invalid paths; and passes what it would write.
    #[cfg(unix)]
    #[test]
    fn write_paths_are_checked_as_write_raw_would_refuse_them() {
        let t = TestDir::new();
        std::fs::create_dir_all(t.path().join("elsewhere")).unwrap();
        t.write("a.md", "a");
        t.write("notes/index.md", "- [a](../a.md)\n");
        let link = |to: &std::path::Path, name: &str| std::os::unix::fs::symlink(to, t.mem().join(name)).unwrap();
        link(&t.path().join("elsewhere"), "out");
        link(&t.path().join("elsewhere/gone.md"), "dangling.md");
        link(&t.mem().join("a.md"), "inside.md");
        link(&t.mem().join("notes/index.md"), "MEMORY.md");
        let m = t.memdir();
        for (rel, code) in [("out/x.md", "outside-memdir"), ("dangling.md", "outside-memdir"), ("inside.md", "not-a-regular-file"), ("../x.md", "invalid-path"), ("a\\b.md", "invalid-path"), (&*format!("{}/x.md", "y".repeat(256)), "invalid-path")] {
            assert_eq!(m.check_write_path(rel).unwrap_err().code(), code, "{rel}");
            let (_, rev) = m.read_raw(rel).unwrap_or((None, Revision::ABSENT));
            assert_eq!(m.write_raw(rel, b"x", &rev).unwrap_err().code(), code, "{rel}");
        }
        for rel in ["a.md", "new.md", "team/new/x.md", "MEMORY.md", "notes/index.md"] {
            m.check_write_path(rel).unwrap();
            let (_, rev) = m.read_raw(rel).unwrap();
            m.write_raw(rel, b"x", &rev).unwrap();
        }
        assert!(!t.path().join("elsewhere/x.md").exists() && !t.path().join("elsewhere/gone.md").exists());
        // A folder not made yet refuses nothing.
        Memdir::new(t.path().join("none"), t.path().join("trash"), m.clock.clone()).check_write_path("x.md").unwrap();
        // Removals, checked as an agent's changeset applies them (the revision check reads the
        // file where it leads): nothing from under a link out of the folder, no link out of it.
        std::fs::write(t.path().join("elsewhere/x.md"), "theirs").unwrap();
        link(&t.path().join("elsewhere/x.md"), "outfile.md");
        for rel in ["out/x.md", "outfile.md", "dangling.md"] {
            assert_eq!(m.check_remove_path(rel).unwrap_err().code(), "outside-memdir", "{rel}");
            assert_eq!(m.read_raw(rel).unwrap_err().code(), "outside-memdir", "{rel}");
        }
        for rel in ["inside.md", "a.md"] {
            m.check_remove_path(rel).unwrap();
            m.read_raw(rel).unwrap();
            m.delete(rel).unwrap();
        }
        assert_eq!(std::fs::read_to_string(t.path().join("elsewhere/x.md")).unwrap(), "theirs");
    }
}
