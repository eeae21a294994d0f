//! Special files in place of plain ones: a named pipe (FIFO) that a careless read waits on for
//! ever, and a guard that turns such a wait into a test failure instead of a test binary that
//! never ends.

use std::path::Path;
use std::sync::mpsc;
use std::time::Duration;

/// How long a call may take before it counts as waiting on a FIFO: far more than any read of a
/// plain file needs on a loaded machine.
pub const PATIENCE: Duration = Duration::from_secs(25);

/// Runs `f` on a thread of its own and returns its result, or fails the test after
/// [`PATIENCE`] naming `what` (the thread is left waiting; the test process ends anyway).
pub fn within<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(PATIENCE).unwrap_or_else(|_| panic!("{what} did not return within {} s: it is waiting on the FIFO", PATIENCE.as_secs()))
}

/// Makes a named pipe at `p` (with the system's `mkfifo`, as a user would), and its parent
/// folders.
pub fn mkfifo(p: &Path) {
    if let Some(parent) = p.parent() {
        std::fs::create_dir_all(parent).unwrap();
    }
    let status = std::process::Command::new("mkfifo").arg(p).status().expect("mkfifo runs");
    assert!(status.success(), "mkfifo {}", p.display());
}
