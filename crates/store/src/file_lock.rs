//! An exclusive advisory `flock` on a file in Mneme's own data folder, held while the value
//! lives. Claude Code never takes these; they only keep Mneme's own processes and threads apart.

use std::fs::{File, OpenOptions};
use std::io;
use std::path::Path;

/// The lock, released when dropped.
pub struct FileLock(File);

impl FileLock {
    /// Waits until the lock is free, creating the file (and its folder) if needed.
    pub fn take(path: &Path) -> io::Result<FileLock> {
        let file = open(path)?;
        rustix::fs::flock(&file, rustix::fs::FlockOperation::LockExclusive)?;
        Ok(FileLock(file))
    }

    /// Takes the lock if it is free; `Ok(None)` when someone holds it.
    pub fn try_take(path: &Path) -> io::Result<Option<FileLock>> {
        let file = open(path)?;
        match rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
            Ok(()) => Ok(Some(FileLock(file))),
            Err(rustix::io::Errno::WOULDBLOCK) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// Waits until the folder itself is free, locking the folder (no file is created in it:
    /// a memory folder is Claude Code's, and a lock file there would be one more entry in it).
    /// A thread must not take the same folder twice: the second waits for the first forever.
    pub fn take_folder(dir: &Path) -> io::Result<FileLock> {
        let folder = File::open(dir)?;
        rustix::fs::flock(&folder, rustix::fs::FlockOperation::LockExclusive)?;
        Ok(FileLock(folder))
    }

    /// The locked file, for a body such as the holder's PID.
    pub fn file(&mut self) -> &mut File {
        &mut self.0
    }
}

fn open(path: &Path) -> io::Result<File> {
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)?;
    }
    OpenOptions::new().read(true).write(true).create(true).truncate(false).open(path)
}

impl Drop for FileLock {
    /// Unlocks before the file closes. Closing alone is not enough: a child this process is
    /// starting (any thread's `Command::spawn`) holds a copy of every descriptor until it
    /// execs, and the lock lives until the last copy closes, so whoever takes the lock next
    /// would be refused, or kept waiting, for a moment. An explicit unlock frees every copy.
    fn drop(&mut self) {
        let _ = rustix::fs::flock(&self.0, rustix::fs::FlockOperation::Unlock);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_lock_is_free_while_a_copy_of_its_descriptor_lives_on() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("sub").join("x.lock");
        let first = FileLock::take(&path).unwrap();
        // What a child being spawned on another thread holds until it execs.
        let copy = first.0.try_clone().unwrap();
        assert!(
            FileLock::try_take(&path).unwrap().is_none(),
            "a held lock is refused"
        );
        drop(first);
        assert!(
            FileLock::try_take(&path).unwrap().is_some(),
            "the lock is free once dropped"
        );
        drop(copy);
    }
}
