//! Another account on the same machine, for tests of what this account may not do: root passes
//! every permission check, so a refusal is only real when the program runs as someone else. The
//! tests run their children as `nobody` (uid 65534), which needs root; as any other user they say
//! so and pass without checking (CI runs them as root).

use crate::TestHome;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// The `nobody` account's uid (and gid).
pub const NOBODY: u32 = 65534;

/// Whether this process runs as root (its effective uid, as the kernel shows it).
pub fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// Whether this process runs as root; when not, prints that `what` needs root and did not run,
/// so a skipped audit is seen in the test output.
pub fn root_or_skip(what: &str) -> bool {
    let root = is_root();
    if !root {
        eprintln!("skipped: {what} needs root (this audit did not run)");
    }
    root
}

/// `cmd` will run as `nobody` (uid and gid 65534).
pub fn as_nobody(cmd: &mut Command) -> &mut Command {
    cmd.uid(NOBODY).gid(NOBODY)
}

/// `bash -c script` started as `nobody` in `/`, stdout and stderr piped.
pub fn bash_as_nobody(script: &str) -> Child {
    as_nobody(Command::new("bash").args(["-c", script])).current_dir("/").stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().expect("bash runs as nobody")
}

/// Lets `nobody` into the home's temporary folder (mode 0755), so it reaches the files there,
/// to be refused writing what is root's. The temporary folder is made 0700.
pub fn open_to_nobody(h: &TestHome) {
    std::fs::set_permissions(&h.root, std::fs::Permissions::from_mode(0o755)).expect("open the temporary folder to others");
}

/// Makes `dir` (and its parents) and gives it to `nobody`: what that account must be able to
/// write (Mneme's own data folder, say).
pub fn give_to_nobody(dir: &Path) {
    std::fs::create_dir_all(dir).expect("make the folder");
    std::os::unix::fs::chown(dir, Some(NOBODY), Some(NOBODY)).expect("give the folder to nobody");
}

/// The binary `bin` (`env!("CARGO_BIN_EXE_…")`) in the home's temporary folder, opened to
/// `nobody`: the build folder lies under root's home, which `nobody` cannot enter. A hard link
/// where the two share a file system, because a copy is written, and while it is written
/// another test thread may be starting a child, which holds the write handle between its fork
/// and exec: running the copy at that moment fails with "Text file busy". A link opens nothing
/// for writing. A copy only when a link cannot be made (another file system).
pub fn binary_for_nobody(h: &TestHome, bin: &str) -> PathBuf {
    open_to_nobody(h);
    let name = Path::new(bin).file_name().expect("a binary's file name");
    let place = h.root.join(name);
    if std::fs::hard_link(bin, &place).is_err() {
        std::fs::copy(bin, &place).expect("copy the binary");
    }
    place
}
