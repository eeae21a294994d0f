//! Starting a program that may be in the middle of being written.

use std::io;
use std::process::{Child, Command};
use std::time::Duration;

/// How long [`spawn_past_busy`] keeps trying: an update writing the binary, or a child another
/// thread forked while it still held the file open for writing, clears within milliseconds.
const BUSY_TRIES: u32 = 50;
const BUSY_PAUSE: Duration = Duration::from_millis(10);

/// `cmd.spawn()`, tried again for up to half a second while exec fails with "text file busy"
/// (`ETXTBSY`). Linux refuses to run a file some process has open for writing: Claude Code's
/// updater writing its new binary, or — inside Mneme's own multi-threaded process — a child
/// forked by another thread at the moment a fresh script was written, which holds that
/// descriptor until it execs. Either clears on its own; any other error, or a file still busy
/// after the last try, is returned as it is.
pub fn spawn_past_busy(cmd: &mut Command) -> io::Result<Child> {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.kind() == io::ErrorKind::ExecutableFileBusy && tries < BUSY_TRIES => {
                tries += 1;
                std::thread::sleep(BUSY_PAUSE);
            }
            other => return other,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_program_held_open_for_writing_for_a_moment_still_starts() {
        let t = std::env::temp_dir().join(format!("mneme-busy-{}", std::process::id()));
        std::fs::create_dir_all(&t).unwrap();
        let script = t.join("prog");
        std::fs::write(&script, "#!/bin/sh\nexit 0\n").unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
        // A writer holds it, as an updater mid-write does; exec is refused while it does.
        let writer = std::fs::OpenOptions::new().write(true).open(&script).unwrap();
        let err = Command::new(&script).spawn().expect_err("Linux refuses to run a file open for writing");
        assert_eq!(err.kind(), io::ErrorKind::ExecutableFileBusy);
        let released = std::thread::spawn(move || {
            std::thread::sleep(Duration::from_millis(30));
            drop(writer);
        });
        let status = spawn_past_busy(&mut Command::new(&script)).expect("started once the writer let go").wait().unwrap();
        assert!(status.success());
        released.join().unwrap();
        // Anything but "busy" is not retried: a missing program fails at once.
        let missing = spawn_past_busy(&mut Command::new(t.join("absent"))).expect_err("no such program");
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        std::fs::remove_dir_all(&t).unwrap();
    }
}
