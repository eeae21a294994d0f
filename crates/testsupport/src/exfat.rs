//! A real exFAT drive (what a USB stick, an SD card or a drive shared with a Mac or a Windows
//! machine is formatted with), mounted on a folder: a sparse image formatted by `mkfs.exfat`
//! (exfatprogs), attached to a loop device and mounted through FUSE by `mount.exfat-fuse`
//! (exfat-fuse), which wants a block device. What such a drive does differently: names are
//! case-insensitive but case-preserving, there are no symbolic links (ENOSYS) and no hard links
//! (EPERM), `chmod` succeeds and changes nothing (every mode reads 0777), and a file's inode
//! number comes from the FUSE layer per name looked up, so two spellings of one file show two
//! numbers.
//!
//! Mounting needs root. As another user [`Exfat::mount`] answers `None` after saying the test
//! did not run (`accounts::root_or_skip`), as the tmpfs tests do; as root (CI) a failure to make
//! the drive fails the test with what to install, since `scripts/test.sh` installs both
//! packages. Dropping it unmounts it (retried, then lazily), detaches the loop device and
//! removes the image, even when the test panicked.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// An exFAT drive mounted on a folder.
pub struct Exfat {
    at: PathBuf,
    image: PathBuf,
    device: Option<String>,
    mounted: bool,
}

impl Exfat {
    /// Makes a 64 MiB exFAT image next to `at` (`<at>.img`), attaches it and mounts it on `at`
    /// (made if missing). `None`, after saying so, when this process is not root.
    pub fn mount(at: &Path) -> Option<Exfat> {
        if !crate::accounts::root_or_skip("mounting an exFAT drive") {
            return None;
        }
        std::fs::create_dir_all(at).expect("make the mount point");
        let mut image = at.as_os_str().to_owned();
        image.push(".img");
        // Filled in step by step, so a step that fails leaves Drop what to undo.
        let mut drive = Exfat { at: at.to_path_buf(), image: PathBuf::from(image), device: None, mounted: false };
        std::fs::File::create(&drive.image).and_then(|f| f.set_len(64 << 20)).expect("make the drive's image");
        must(Command::new("mkfs.exfat").arg(&drive.image), "formatting the image (mkfs.exfat)");
        let device = must(Command::new("losetup").args(["--find", "--show"]).arg(&drive.image), "attaching the image to a loop device (losetup)");
        drive.device = Some(device.trim().to_string());
        must(Command::new("mount.exfat-fuse").arg(device.trim()).arg(at), "mounting the drive (mount.exfat-fuse)");
        drive.mounted = true;
        Some(drive)
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.at
    }

    /// Makes the drive stop answering (a network share whose server went away, a FUSE daemon
    /// that hangs): its FUSE daemon is stopped with SIGSTOP until the answer is dropped, and
    /// every system call under the mount that the kernel cannot answer from its caches blocks
    /// meanwhile. A watchdog continues it after `bound` anyway, so code that hangs with the
    /// drive fails its test instead of hanging it; [`Hung::rescued`] says whether it had to.
    pub fn hang(&self, bound: std::time::Duration) -> Hung {
        let pid = self.daemon();
        let rescued = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (done, wait) = std::sync::mpsc::channel::<()>();
        let r = rescued.clone();
        std::thread::spawn(move || {
            if wait.recv_timeout(bound) == Err(std::sync::mpsc::RecvTimeoutError::Timeout) {
                r.store(true, std::sync::atomic::Ordering::SeqCst);
                signal(pid, "CONT");
            }
        });
        signal(pid, "STOP");
        Hung { pid, rescued, _done: done }
    }

    /// The `mount.exfat-fuse` process serving this drive.
    fn daemon(&self) -> i32 {
        let at = self.at.to_string_lossy();
        for e in std::fs::read_dir("/proc").expect("read /proc").flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<i32>() else { continue };
            let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else { continue };
            let args: Vec<String> = cmd.split(|b| *b == 0).map(|a| String::from_utf8_lossy(a).into_owned()).collect();
            if args.first().is_some_and(|a| a.contains("mount.exfat")) && args.iter().any(|a| a == at.as_ref()) {
                return pid;
            }
        }
        panic!("no mount.exfat-fuse process serves {at}");
    }
}

/// A drive that does not answer, from [`Exfat::hang`]; dropping it (the test ending, or
/// panicking) continues its daemon: a stopped one would hang every later look at the mount,
/// its unmount included.
pub struct Hung {
    pid: i32,
    rescued: std::sync::Arc<std::sync::atomic::AtomicBool>,
    _done: std::sync::mpsc::Sender<()>,
}

impl Hung {
    /// Whether the watchdog had to continue the daemon (something hung with the drive).
    pub fn rescued(&self) -> bool {
        self.rescued.load(std::sync::atomic::Ordering::SeqCst)
    }
}

impl Drop for Hung {
    fn drop(&mut self) {
        signal(self.pid, "CONT");
    }
}

fn signal(pid: i32, sig: &str) {
    let ok = Command::new("kill").arg(format!("-{sig}")).arg(pid.to_string()).status().is_ok_and(|s| s.success());
    // Not a panic in a drop: the daemon may have ended with its mount.
    if !ok {
        eprintln!("kill -{sig} {pid} failed");
    }
}

impl Drop for Exfat {
    fn drop(&mut self) {
        if self.mounted {
            // A watch or an open file keeps a plain unmount from succeeding, and a child another
            // test thread is starting holds this process's files between its fork and exec: a
            // few tries, then lazily (detached now, gone when the last file closes).
            let plain = (0..50).any(|i| {
                if i > 0 {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Command::new("umount").arg(&self.at).stderr(Stdio::null()).status().is_ok_and(|s| s.success())
            });
            if !plain {
                let _ = Command::new("umount").arg("-l").arg(&self.at).stderr(Stdio::null()).status();
            }
        }
        if let Some(device) = &self.device {
            // While the FUSE process still holds the device the kernel detaches it when that
            // process lets go (autoclear), so this never leaves a loop device behind.
            let _ = Command::new("losetup").arg("-d").arg(device).stderr(Stdio::null()).status();
        }
        let _ = std::fs::remove_file(&self.image);
    }
}

/// Runs `cmd` (one step of making the drive) and answers its standard output; panics with the
/// step, its error output and what to install when it fails.
fn must(cmd: &mut Command, step: &str) -> String {
    let out = cmd.stdin(Stdio::null()).output();
    match out {
        Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).into_owned(),
        Ok(out) => panic!(
            "{step} failed ({}): {}; the exFAT tests need exfatprogs and exfat-fuse (apt-get install exfatprogs exfat-fuse, as scripts/test.sh does), a free loop device and /dev/fuse",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        ),
        Err(e) => panic!("{step} could not start ({e}); install exfatprogs and exfat-fuse (apt-get install exfatprogs exfat-fuse, as scripts/test.sh does)"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The drive behaves as the module says (so a test relying on it relies on something
    /// seen), and dropping it leaves no mount, no loop device and no image.
    #[test]
    fn a_real_exfat_drive_folds_case_has_no_links_or_modes_and_goes_away_on_drop() {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let dir = tempfile::tempdir().unwrap();
        let at = dir.path().join("stick");
        let Some(drive) = Exfat::mount(&at) else { return };
        let device = drive.device.clone().unwrap();
        let p = drive.path();
        std::fs::write(p.join("Foo.md"), "a").unwrap();
        assert_eq!(std::fs::read_to_string(p.join("foo.md")).unwrap(), "a", "case-insensitive");
        assert_eq!(std::fs::read_dir(p).unwrap().map(|e| e.unwrap().file_name()).collect::<Vec<_>>(), ["Foo.md"], "case-preserving");
        assert_eq!(std::os::unix::fs::symlink("Foo.md", p.join("l")).unwrap_err().raw_os_error(), Some(38), "no symbolic links (ENOSYS)");
        assert_eq!(std::fs::hard_link(p.join("Foo.md"), p.join("h")).unwrap_err().raw_os_error(), Some(1), "no hard links (EPERM)");
        std::fs::set_permissions(p.join("Foo.md"), std::fs::Permissions::from_mode(0o600)).expect("chmod succeeds");
        assert_eq!(std::fs::metadata(p.join("Foo.md")).unwrap().mode() & 0o777, 0o777, "and changes nothing");
        drop(drive);
        let mounts = std::fs::read_to_string("/proc/self/mountinfo").unwrap();
        assert!(!mounts.contains(at.to_str().unwrap()), "unmounted");
        assert!(!at.with_extension("img").exists(), "the image is removed");
        let attached = Command::new("losetup").arg("-a").output().unwrap();
        let image = format!("{}.img", at.display());
        assert!(!String::from_utf8_lossy(&attached.stdout).contains(&image), "the loop device {device} is detached");
    }
}
