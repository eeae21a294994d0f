//! The one way Mneme writes a file: a temporary file with a unique name in the same folder,
//! written and fsynced, the old file's permissions (and owner, where allowed) copied, renamed
//! over the target, and the folder fsynced. A reader — Claude Code, another Mneme, a crash
//! recovery — sees the old file or the new one, never a mix.
//!
//! [`write_atomic_if`] adds compare-and-swap: the caller's check runs after the new bytes are
//! safely on disk and just before the rename, so a file changed by someone else since it was
//! read is refused rather than overwritten (the window left is the rename itself).
//!
//! Temporary files are named `.mneme-<pid>-<seq>.tmp`: the pid and a per-process counter keep
//! two threads and two processes apart, exclusive creation catches what is left. A process
//! killed mid-write leaves its temporary file behind; [`remove_stale_temps`] removes those of
//! processes that no longer run, and every write calls it for its folder.

use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Every temporary file's name starts with this and ends with [`TEMP_SUFFIX`].
pub const TEMP_PREFIX: &str = ".mneme-";
pub const TEMP_SUFFIX: &str = ".tmp";

static SEQ: AtomicU64 = AtomicU64::new(0);

/// A temporary file with a name no other thread or process uses, created empty in `dir`.
pub fn create_temp(dir: &Path) -> io::Result<(PathBuf, File)> {
    loop {
        let n = SEQ.fetch_add(1, Ordering::Relaxed);
        let path = dir.join(format!("{TEMP_PREFIX}{}-{n}{TEMP_SUFFIX}", std::process::id()));
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(f) => return Ok((path, f)),
            // Left by a crashed process that had the same pid: take the next number.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Writes `bytes` to a fresh temporary file in `dir` with the permissions (and owner) of
/// `like`, fsynced. Returns its path and metadata; on failure nothing is left behind.
pub fn write_temp(dir: &Path, bytes: &[u8], like: Option<&Metadata>) -> io::Result<(PathBuf, Metadata)> {
    remove_stale_temps(dir);
    let (path, mut file) = create_temp(dir)?;
    let written = (|| -> io::Result<Metadata> {
        // Permissions before content: a 0600 file's secrets are never readable by others
        // through its temporary copy, not even for a moment.
        if let Some(m) = like {
            file.set_permissions(m.permissions())?;
            copy_owner(&file, m);
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        file.metadata()
    })();
    match written {
        Ok(meta) => Ok((path, meta)),
        Err(e) => {
            let _ = fs::remove_file(&path);
            Err(e)
        }
    }
}

/// Replaces (or creates) `target` with `bytes` atomically. A new file gets the process's
/// default mode, as Claude Code's own writes do.
pub fn write_atomic(target: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_if(target, bytes, || Ok(true)).map(|_| ())
}

/// [`write_atomic`] with compare-and-swap: `unchanged` runs once the new bytes are on disk,
/// right before the rename; when it answers false nothing is replaced and the answer is
/// `Ok(None)`. Otherwise the answer is the new file's metadata.
pub fn write_atomic_if(
    target: &Path,
    bytes: &[u8],
    unchanged: impl FnOnce() -> io::Result<bool>,
) -> io::Result<Option<Metadata>> {
    let dir = folder_of(target);
    let existing = fs::metadata(target).ok();
    let (tmp, meta) = write_temp(&dir, bytes, existing.as_ref())?;
    let swapped = (|| {
        if !unchanged()? {
            return Ok(None);
        }
        fs::rename(&tmp, target)?;
        Ok(Some(meta))
    })();
    match &swapped {
        Ok(Some(_)) => fsync_dir(&dir),
        _ => {
            let _ = fs::remove_file(&tmp);
        }
    }
    swapped
}

/// Copies `src` to `dst`, a name that must not exist yet, whole or not at all: the bytes go to
/// a temporary file in `dst`'s folder, fsynced with `src`'s permissions, which takes the name
/// only then (a hard link, which never replaces a file; where links are unsupported, a rename
/// after a check). A copy cut short by a crash is a temporary file the next write removes,
/// never a torn file at `dst`.
pub fn copy_new(src: &Path, dst: &Path) -> io::Result<()> {
    let mut from = File::open(src)?;
    let permissions = from.metadata()?.permissions();
    let dir = folder_of(dst);
    let (tmp, mut to) = create_temp(&dir)?;
    let copied = (|| {
        io::copy(&mut from, &mut to)?;
        to.set_permissions(permissions)?;
        to.sync_all()?;
        match fs::hard_link(&tmp, dst) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => Err(e),
            Err(_) if fs::symlink_metadata(dst).is_ok() => Err(io::Error::from(io::ErrorKind::AlreadyExists)),
            Err(_) => fs::rename(&tmp, dst),
        }
    })();
    let _ = fs::remove_file(&tmp);
    copied?;
    fsync_dir(&dir);
    Ok(())
}

/// The folder a file is in (`.` for a bare name).
fn folder_of(target: &Path) -> PathBuf {
    match target.parent() {
        Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
        _ => PathBuf::from("."),
    }
}

/// Makes a rename or link in `dir` durable. Best effort: some file systems refuse to fsync a
/// folder, and the rename has happened either way.
pub fn fsync_dir(dir: &Path) {
    #[cfg(unix)]
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    #[cfg(not(unix))]
    let _ = dir;
}

/// Keeps the owner of a replaced file when Mneme runs with the rights to (as root, say);
/// otherwise the file simply belongs to the user running Mneme, as with any editor.
#[cfg(unix)]
fn copy_owner(file: &File, like: &Metadata) {
    use std::os::unix::fs::MetadataExt;
    if let Ok(mine) = file.metadata() {
        if mine.uid() != like.uid() || mine.gid() != like.gid() {
            let _ = std::os::unix::fs::fchown(file, Some(like.uid()), Some(like.gid()));
        }
    }
}

#[cfg(not(unix))]
fn copy_owner(_file: &File, _like: &Metadata) {}

/// How long a temporary file of a process we cannot check stays before it counts as stale.
/// Writes take milliseconds; an hour is far past any writer still running.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes the temporary files in `dir` left by writers that were killed: those of processes
/// that no longer run (where the system says so) and those older than an hour. Never this
/// process's own. Returns what it removed.
pub fn remove_stale_temps(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let me = std::process::id();
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_pid) else { continue };
        if pid == me || !writer_gone(pid, &entry) {
            continue;
        }
        if fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    removed
}

/// The writer's pid in a temporary file's name (`.mneme-<pid>-<seq>.tmp`).
fn temp_pid(name: &str) -> Option<u32> {
    let rest = name.strip_prefix(TEMP_PREFIX)?.strip_suffix(TEMP_SUFFIX)?;
    let (pid, seq) = rest.split_once('-')?;
    seq.parse::<u64>().ok()?;
    pid.parse().ok()
}

fn writer_gone(pid: u32, entry: &fs::DirEntry) -> bool {
    // An hour-old temporary file is stale whoever has its pid now: on Linux the pid may have
    // been handed to another process since the writer was killed, and elsewhere the age is
    // all there is to go by.
    let old = entry.metadata().and_then(|m| m.modified()).ok().and_then(|t| t.elapsed().ok()).is_some_and(|age| age > STALE_AFTER);
    let proc = Path::new("/proc");
    old || (proc.join("self").exists() && !proc.join(pid.to_string()).exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_replace_and_keep_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.json");
        write_atomic(&f, b"one").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&f, fs::Permissions::from_mode(0o600)).unwrap();
            write_atomic(&f, b"two").unwrap();
            assert_eq!(fs::metadata(&f).unwrap().permissions().mode() & 0o777, 0o600);
        }
        write_atomic(&f, b"three").unwrap();
        assert_eq!(fs::read(&f).unwrap(), b"three");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, vec![std::ffi::OsString::from("a.json")], "no temporary file is left");
    }

    #[test]
    fn copies_are_new_files_only_and_keep_permissions() {
        let dir = tempfile::tempdir().unwrap();
        let (src, dst) = (dir.path().join("a.md"), dir.path().join("b.md"));
        fs::write(&src, "text").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(&src, fs::Permissions::from_mode(0o600)).unwrap();
        }
        copy_new(&src, &dst).unwrap();
        assert_eq!(fs::read_to_string(&dst).unwrap(), "text");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            assert_eq!(fs::metadata(&dst).unwrap().permissions().mode() & 0o777, 0o600);
        }
        fs::write(&src, "newer").unwrap();
        assert_eq!(copy_new(&src, &dst).unwrap_err().kind(), io::ErrorKind::AlreadyExists);
        assert_eq!(fs::read_to_string(&dst).unwrap(), "text", "an existing file is never replaced");
        let mut names: Vec<_> = fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name()).collect();
        names.sort();
        assert_eq!(names, ["a.md", "b.md"], "no temporary file is left");
    }

    #[test]
    fn a_failed_check_replaces_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.md");
        fs::write(&f, "old").unwrap();
        assert!(write_atomic_if(&f, b"new", || Ok(false)).unwrap().is_none());
        assert_eq!(fs::read_to_string(&f).unwrap(), "old");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn threads_never_share_a_temporary_file() {
        let dir = tempfile::tempdir().unwrap();
        std::thread::scope(|s| {
            for t in 0..8 {
                let dir = dir.path();
                s.spawn(move || {
                    for i in 0..50 {
                        let body = format!("{t}-{i}-").repeat(1000);
                        write_atomic(&dir.join(format!("f{}", i % 3)), body.as_bytes()).unwrap();
                    }
                });
            }
        });
        for i in 0..3 {
            let text = fs::read_to_string(dir.path().join(format!("f{i}"))).unwrap();
            let unit = &text[..text.find('-').unwrap() + 1 + text[text.find('-').unwrap() + 1..].find('-').unwrap() + 1];
            assert_eq!(text, unit.repeat(1000), "one writer's whole text");
        }
    }

    #[test]
    #[cfg(target_os = "linux")]
    fn stale_temps_of_dead_writers_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().unwrap();
        // A pid far above any the kernel hands out here (pid_max is at most 2^22).
        let dead = dir.path().join(".mneme-4194399-7.tmp");
        let mine = dir.path().join(format!(".mneme-{}-1.tmp", std::process::id()));
        let other = dir.path().join(".mneme-notes.tmp");
        for f in [&dead, &mine, &other] {
            fs::write(f, "x").unwrap();
        }
        assert_eq!(remove_stale_temps(dir.path()), vec![dead.clone()]);
        assert!(!dead.exists() && mine.exists() && other.exists());
        // A pid that runs (our parent's: the writer's pid handed on) on a two-hour-old file.
        let reused = dir.path().join(format!(".mneme-{}-1.tmp", std::os::unix::process::parent_id()));
        fs::write(&reused, "x").unwrap();
        assert!(remove_stale_temps(dir.path()).is_empty(), "a fresh file of a running pid stays");
        let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        File::options().write(true).open(&reused).unwrap().set_modified(two_hours_ago).unwrap();
        assert_eq!(remove_stale_temps(dir.path()), vec![reused.clone()], "an hour-old file goes whoever has the pid");
    }
}
