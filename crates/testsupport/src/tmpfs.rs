//! A small tmpfs standing for a drive: mounted on a folder, filled to the brim, remounted
//! read-only, unmounted and mounted again, and always unmounted when dropped so the temporary
//! folder can go. Mounting needs root; [`Tmpfs::mount`] answers `None` otherwise, and the test
//! says it did not run (`accounts::root_or_skip`).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted on a folder (mode 0755, root's: another account may read, not write).
pub struct Tmpfs {
    at: PathBuf,
    size: String,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (as `mount` takes it: `64k`, `1m`) on `at`, made if missing;
    /// `None` when that is not possible (not root).
    pub fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        std::fs::create_dir_all(at).expect("make the mount point");
        let t = Tmpfs { at: at.to_path_buf(), size: size.to_string() };
        t.mount_here().then_some(t)
    }

    fn mount_here(&self) -> bool {
        run(Command::new("mount").args(["-t", "tmpfs", "-o", &format!("size={},mode=0755", self.size), "tmpfs"]).arg(&self.at))
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.at
    }

    /// Writes one file until the drive has no block left (the last write is refused).
    pub fn fill(&self) {
        let mut f = std::fs::File::create(self.at.join("filler")).expect("make the filler file");
        while f.write_all(&[b'x'; 512]).is_ok() {}
        // A last byte or two may fit in what the chunk left: nothing may.
        while f.write_all(b"x").is_ok() {}
        assert_eq!(f.write_all(b"x").unwrap_err().raw_os_error(), Some(28), "the drive at {} is full", self.at.display());
    }

    /// Remounts it read-only.
    pub fn read_only(&self) {
        assert!(busy_retried(|| run(Command::new("mount").args(["-o", "remount,ro"]).arg(&self.at))), "remounting {} read-only", self.at.display());
    }

    /// Unmounts it (the folder under it shows again).
    pub fn unmount(&self) {
        assert!(busy_retried(|| run(Command::new("umount").arg(&self.at))), "the tmpfs on {} could not be unmounted", self.at.display());
    }

    /// Mounts a new, empty tmpfs of the same size on the same folder.
    pub fn mount_again(&self) {
        assert!(self.mount_here(), "the tmpfs could not be mounted on {} again", self.at.display());
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        // Lazily: a watch or a file still open keeps a plain unmount from succeeding. Already
        // unmounted by the test is fine.
        let _ = Command::new("umount").arg("-l").arg(&self.at).stderr(std::process::Stdio::null()).status();
    }
}

/// `attempt` until it succeeds, a few times. The kernel refuses to remount read-only or to
/// unmount while any process holds a file on the drive open for writing, and a child another
/// test thread is starting holds a copy of this process's open files between its fork and its
/// exec: a write this test finished a moment ago can still be open there for a few
/// microseconds. Seen once in 2026-12 as "remounting … read-only" failing, then passing.
fn busy_retried(mut attempt: impl FnMut() -> bool) -> bool {
    for _ in 0..50 {
        if attempt() {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    false
}

/// Whether `cmd` ran and succeeded.
fn run(cmd: &mut Command) -> bool {
    cmd.status().is_ok_and(|s| s.success())
}
