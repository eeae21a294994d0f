//! Looking at a folder on a drive that may have stopped answering (a network share whose server
//! went away, a USB stick or FUSE mount whose daemon hangs): every system call under such a
//! drive blocks until it answers again, possibly for ever, and nothing can interrupt it. So a look
//! that a shared lock, an async worker or a request must not wait on for ever runs on a thread
//! of its own, and the caller waits at most [`PATIENCE`] for it. A folder whose look is still
//! blocked after that counts as not answering, and later looks at it fail at once, without
//! another thread, until the blocked one returns (the drive answers again): one stuck thread per
//! folder, however often it is asked about.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// How long a look at a folder may take before its drive counts as not answering. A healthy
/// disk answers a `stat` in microseconds and a busy network share in well under a second.
pub const PATIENCE: Duration = Duration::from_secs(3);

/// The looks under way, by folder: the number and start of the oldest one still blocked.
static UNDER_WAY: Mutex<Option<HashMap<PathBuf, (u64, Instant)>>> = Mutex::new(None);
static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn under_way() -> std::sync::MutexGuard<'static, Option<HashMap<PathBuf, (u64, Instant)>>> {
    UNDER_WAY.lock().unwrap_or_else(|e| e.into_inner())
}

/// `look(dir)` run on a thread of its own; `None` when it has not returned within [`PATIENCE`]
/// (or another look at `dir` has been blocked that long already: then nothing runs).
pub fn look<T: Send + 'static>(dir: &Path, look: impl FnOnce(&Path) -> T + Send + 'static) -> Option<T> {
    look_within(dir, PATIENCE, look)
}

/// Whether `dir`'s drive answers within [`PATIENCE`] (a missing folder answers). Asked with
/// `statfs`, which the kernel always passes on to the drive (NFS, SMB and FUSE alike): a `stat`
/// is answered from the kernel's cache for a while after the drive stopped answering, and the
/// next look at a name not cached then blocks.
pub fn answers(dir: &Path) -> bool {
    look(dir, ask_drive).is_some()
}

#[cfg(target_os = "linux")]
fn ask_drive(dir: &Path) {
    let _ = rustix::fs::statfs(dir);
}

#[cfg(not(target_os = "linux"))]
fn ask_drive(dir: &Path) {
    let _ = std::fs::symlink_metadata(dir);
}

fn look_within<T: Send + 'static>(dir: &Path, patience: Duration, look: impl FnOnce(&Path) -> T + Send + 'static) -> Option<T> {
    let number = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    {
        let mut map = under_way();
        let map = map.get_or_insert_with(HashMap::new);
        match map.get(dir) {
            // Stuck already: a new look would only block one more thread.
            Some((_, since)) if since.elapsed() >= patience => return None,
            Some(_) => {}
            None => {
                map.insert(dir.to_path_buf(), (number, Instant::now()));
            }
        }
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let owned = dir.to_path_buf();
    let spawned = std::thread::Builder::new().name("mneme-drive-look".into()).spawn(move || {
        let answer = look(&owned);
        let _ = tx.send(answer);
        // The drive answered: the next look runs again.
        if let Some(map) = under_way().as_mut() {
            if map.get(&owned).is_some_and(|(n, _)| *n == number) {
                map.remove(&owned);
            }
        }
    });
    if spawned.is_err() {
        // No thread to spare (the process's limit): counted as not answering this time, and
        // not as stuck (no look is under way).
        if let Some(map) = under_way().as_mut() {
            if map.get(dir).is_some_and(|(n, _)| *n == number) {
                map.remove(dir);
            }
        }
        return None;
    }
    rx.recv_timeout(patience).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A look that blocks (a drive not answering) gives up after the patience given, later looks
    /// at that folder give up at once without running, and once it returns (the drive answers)
    /// looks run and answer again.
    #[test]
    fn a_blocked_look_gives_up_blocks_one_thread_only_and_recovers() {
        let dir = tempfile_free_path("blocked");
        let (release, blocked) = mpsc::channel::<()>();
        let ran = Arc::new(AtomicUsize::new(0));
        let r = ran.clone();
        let first = look_within(&dir, Duration::from_millis(100), move |_| {
            r.fetch_add(1, Ordering::SeqCst);
            let _ = blocked.recv();
        });
        assert_eq!(first, None, "a look that does not return gives up");
        for _ in 0..5 {
            let r = ran.clone();
            let again = look_within(&dir, Duration::from_millis(100), move |_| {
                r.fetch_add(1, Ordering::SeqCst);
            });
            assert_eq!(again, None, "the folder still does not answer");
        }
        assert_eq!(ran.load(Ordering::SeqCst), 1, "no second thread was blocked on it");
        release.send(()).unwrap();
        // The blocked look now returns and clears its folder; the next look runs.
        let answered = loop {
            let r = ran.clone();
            if let Some(n) = look_within(&dir, PATIENCE, move |_| r.fetch_add(1, Ordering::SeqCst) + 1) {
                break n;
            }
            std::thread::yield_now();
        };
        assert!(answered >= 2, "the look ran once the drive answered");
    }

    /// A folder that answers is looked at as if directly.
    #[test]
    fn a_folder_that_answers_is_seen() {
        let dir = std::env::temp_dir();
        assert_eq!(look(&dir, |d| d.is_dir()), Some(true));
        assert!(answers(&dir));
    }

    /// A name no other test uses (looks are keyed by path, process-wide).
    fn tempfile_free_path(name: &str) -> PathBuf {
        PathBuf::from(format!("/nonexistent-mneme-drive-test/{name}-{}", std::process::id()))
    }
}
