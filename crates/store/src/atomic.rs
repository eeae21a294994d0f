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
//! processes that no longer run, and every write calls it for its folder. A leftover under this
//! process's own pid (a container's pid 1 run after run, any reused pid) is told from this
//! process's own files exactly: this process holds every number it has a temporary file under
//! ([`TempName`]) until that file is done, and any other file with its pid is a leftover.

use std::collections::BTreeMap;
use std::fs::{self, File, Metadata, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Every temporary file's name starts with this and ends with [`TEMP_SUFFIX`].
pub const TEMP_PREFIX: &str = ".mneme-";
pub const TEMP_SUFFIX: &str = ".tmp";

static SEQ: AtomicU64 = AtomicU64::new(0);

/// The numbers this process has temporary files (or is about to have one) under. Keyed by
/// number, not path: the same folder is reached under many spellings (a link, a relative path,
/// `/proc/self/fd/N`), while a number is never used twice by one process. A number is taken
/// before its file is created and the check-and-remove of [`remove_stale_temps`] runs under
/// the same lock, so a file of this process's is never taken for a leftover, even by a clean-up
/// on another thread in the instant between its creation and its registration.
static OURS: Mutex<BTreeMap<u64, Held>> = Mutex::new(BTreeMap::new());

enum Held {
    /// Its writer releases the number when done (the [`TempName`] is dropped).
    Writing,
    /// The file was handed to a caller that renames or removes it itself ([`write_temp`],
    /// [`create_temp`]): held until the file at this (absolute) path is seen gone, which is
    /// when that caller is done with it.
    UntilGone(PathBuf),
}

fn ours() -> MutexGuard<'static, BTreeMap<u64, Held>> {
    // A panic elsewhere while holding the lock leaves the map whole (each step is one insert or
    // removal), so its contents are still right.
    OURS.lock().unwrap_or_else(|p| p.into_inner())
}

/// A temporary file's name (`.mneme-<pid>-<seq>.tmp`), held for this process from before the
/// file is created until this value is dropped: [`remove_stale_temps`] leaves the file alone
/// meanwhile, in any folder. For writers that create the file themselves (through a folder's
/// descriptor, say); drop it once the file is renamed away or removed, or its creation failed.
#[derive(Debug)]
pub struct TempName {
    seq: u64,
    name: String,
    handed_on: bool,
}

impl TempName {
    /// The next name of this process's, not used by it before.
    pub fn reserve() -> TempName {
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        ours().insert(seq, Held::Writing);
        TempName { seq, name: format!("{TEMP_PREFIX}{}-{seq}{TEMP_SUFFIX}", std::process::id()), handed_on: false }
    }

    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// Keeps the name held after this value is gone, until no file is at `path` any more: for a
    /// file whose caller finishes it elsewhere.
    fn until_gone(mut self, path: &Path) {
        let path = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        let mut ours = ours();
        // Every memory save hands a file on, and a clean-up lets go of finished ones only when
        // it meets a file of this pid: a long-running app would otherwise keep a path per save.
        if ours.len() >= HELD_BEFORE_PRUNE {
            release_finished(&mut ours);
        }
        ours.insert(self.seq, Held::UntilGone(path));
        self.handed_on = true;
    }
}

impl Drop for TempName {
    fn drop(&mut self) {
        if !self.handed_on {
            ours().remove(&self.seq);
        }
    }
}

/// How many numbers may be held before handing one on first lets go of those whose files are
/// gone (a few `stat`s, once per this many saves).
const HELD_BEFORE_PRUNE: usize = 64;

/// Lets go of the numbers whose handed-on files are gone (renamed into place or removed).
fn release_finished(ours: &mut BTreeMap<u64, Held>) {
    ours.retain(|_, held| match held {
        Held::Writing => true,
        Held::UntilGone(path) => fs::symlink_metadata(path).is_ok(),
    });
}

/// A temporary file with a name no other thread or process uses, created empty in `dir`, held
/// as this process's until it is gone (see [`TempName`]).
pub fn create_temp(dir: &Path) -> io::Result<(PathBuf, File)> {
    let (name, path, file) = make_temp(dir)?;
    name.until_gone(&path);
    Ok((path, file))
}

/// [`create_temp`], with the name held until the caller drops it.
fn make_temp(dir: &Path) -> io::Result<(TempName, PathBuf, File)> {
    loop {
        let name = TempName::reserve();
        let path = dir.join(name.as_str());
        match OpenOptions::new().write(true).create_new(true).open(&path) {
            Ok(f) => return Ok((name, path, f)),
            // Left by a killed process that had the same pid, in a folder not cleaned up first
            // (`copy_new`'s): take the next number.
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
}

/// Writes `bytes` to a fresh temporary file in `dir` with the permissions (and owner) of
/// `like`, fsynced. Returns its path and metadata; on failure nothing is left behind. The file
/// stays this process's (never taken for a leftover) until the caller renames or removes it.
pub fn write_temp(dir: &Path, bytes: &[u8], like: Option<&Metadata>) -> io::Result<(PathBuf, Metadata)> {
    let (name, path, meta) = write_named_temp(dir, bytes, like)?;
    name.until_gone(&path);
    Ok((path, meta))
}

/// [`write_temp`], with the name held until the caller drops it.
fn write_named_temp(dir: &Path, bytes: &[u8], like: Option<&Metadata>) -> io::Result<(TempName, PathBuf, Metadata)> {
    remove_stale_temps(dir);
    let (name, path, mut file) = make_temp(dir)?;
    let written = (|| -> io::Result<Metadata> {
        // Permissions before content: a 0600 file's secrets are never readable by others
        // through its temporary copy, not even for a moment.
        if let Some(m) = like {
            match_permissions(&file, m)?;
        }
        file.write_all(bytes)?;
        file.sync_all()?;
        file.metadata()
    })();
    match written {
        Ok(meta) => Ok((name, path, meta)),
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
    let (_name, tmp, meta) = write_named_temp(&dir, bytes, existing.as_ref())?;
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
    let (_name, tmp, mut to) = make_temp(&dir)?;
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

/// Gives `file`, the new text of a file about to replace another, the permission bits of the
/// replaced file (`like`, its metadata) and, where this process may set it (as root, say), its
/// owner; otherwise the file belongs to the user running Mneme, as with any editor. Call it
/// before writing the text, so the text is never readable more widely than the old.
pub fn match_permissions(file: &File, like: &Metadata) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match_mode_and_owner(file, like.mode(), like.uid(), like.gid())
    }
    #[cfg(not(unix))]
    file.set_permissions(like.permissions())
}

/// [`match_permissions`] from the replaced file's raw `mode`, `uid` and `gid` (a `stat` made
/// through a folder's descriptor, say). Only the read, write and execute bits are taken: a
/// set-user-id or set-group-id bit lends its owner's rights to whoever runs the file, and a
/// file whose text Mneme (or a team server) just wrote must not carry that on; the kernel drops
/// them too when anyone but the owner writes to a file.
#[cfg(unix)]
pub fn match_mode_and_owner(file: &File, mode: impl Into<u32>, uid: u32, gid: u32) -> io::Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    file.set_permissions(fs::Permissions::from_mode(mode.into() & 0o777))?;
    if let Ok(mine) = file.metadata() {
        if (mine.uid(), mine.gid()) != (uid, gid) {
            // Best effort: only a privileged process may give a file away.
            let _ = std::os::unix::fs::fchown(file, Some(uid), Some(gid));
        }
    }
    Ok(())
}

/// The disk's refusals a person can act on, told apart from other I/O failures so every front
/// end can say what happened and what to do (free space, remount, ask for access) instead of
/// passing on the system's bare words. Every writer's error keeps its `io::Error`; this reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No space left on the disk, or the account's quota is used up (ENOSPC, EDQUOT).
    DiskFull,
    /// The file system is mounted read-only (EROFS).
    ReadOnly,
    /// The file or its folder may not be changed by this account (EACCES, EPERM): another
    /// account's repository, a folder without write permission.
    PermissionDenied,
}

impl Refusal {
    /// The refusal `e` is, if it is one.
    pub fn of(e: &io::Error) -> Option<Refusal> {
        match e.kind() {
            io::ErrorKind::StorageFull | io::ErrorKind::QuotaExceeded => Some(Refusal::DiskFull),
            io::ErrorKind::ReadOnlyFilesystem => Some(Refusal::ReadOnly),
            io::ErrorKind::PermissionDenied => Some(Refusal::PermissionDenied),
            _ => None,
        }
    }

    /// The refusal anywhere in `e`'s chain of causes: writers wrap the `io::Error` in their own.
    pub fn in_chain(e: &(dyn std::error::Error + 'static)) -> Option<Refusal> {
        let mut next = Some(e);
        while let Some(e) = next {
            if let Some(r) = e.downcast_ref::<io::Error>().and_then(Refusal::of) {
                return Some(r);
            }
            next = e.source();
        }
        None
    }

    /// The action and path a failed step of saving `target` is told by: when the disk refused
    /// (`e` is a [`Refusal`]), the save of `target` itself, since that is what the person asked
    /// for and the temporary file, lock or folder the refusal met is a detail to them (its disk
    /// is the same); any other failure names the step (`action`) and the path it worked on
    /// (`at`), which is what to look at.
    pub fn told_as<'a>(e: &io::Error, target: &'a Path, action: &'static str, at: &'a Path) -> (&'static str, &'a Path) {
        match Refusal::of(e) {
            Some(_) => ("save", target),
            None => (action, at),
        }
    }

    /// What happened to a write (`to` "write", "create", …) of `path`, and what to do, as a
    /// clause that a message goes on from: the system's own words ("No space left on device")
    /// name the cause but neither the disk nor the way out.
    pub fn says(self, path: &Path) -> String {
        let shown = path.display();
        match self {
            Refusal::DiskFull => format!("the disk holding {shown} is full. Free some space on it, then try again"),
            Refusal::ReadOnly => format!(
                "the disk holding {shown} is mounted read-only. Remount it read-write (or ask whoever manages it to), then try again"
            ),
            Refusal::PermissionDenied => format!(
                "this account may not change {shown}: the file or its folder belongs to another account or its permissions forbid writing. Ask its owner for write access (or fix its permissions), then try again"
            ),
        }
    }
}

/// How long a temporary file of a process we cannot check stays before it counts as stale.
/// Writes take milliseconds; an hour is far past any writer still running.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes the temporary files in `dir` left by writers that were killed: those of processes
/// that no longer run (where the system says so), those older than an hour, and those under
/// this process's own pid that this process does not hold (a previous process's with the same
/// pid; see [`TempName`]). This process's own files in flight stay. Returns what it removed.
pub fn remove_stale_temps(dir: &Path) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else { return Vec::new() };
    let me = std::process::id();
    let mut removed = Vec::new();
    let mut own = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some((pid, seq)) = name.to_str().and_then(temp_pid) else { continue };
        if pid == me {
            own.push((seq, entry.path()));
            continue;
        }
        if !writer_gone(pid, &entry) {
            continue;
        }
        if fs::remove_file(entry.path()).is_ok() {
            removed.push(entry.path());
        }
    }
    if !own.is_empty() {
        // Held across the removals, so no number is taken (and its file created) between the
        // check and the removal.
        let mut ours = ours();
        // Numbers whose files are done with are let go here, which keeps the map as small as
        // the writes in flight; a number is never used again, so letting it go is safe.
        release_finished(&mut ours);
        for (seq, path) in own {
            // A number this process holds: its own file (or, in another folder, a leftover that
            // shares the number, which goes once this process's file is done).
            if ours.contains_key(&seq) {
                continue;
            }
            if fs::remove_file(&path).is_ok() {
                removed.push(path);
            }
        }
    }
    removed
}

/// The writer's pid and number in a temporary file's name (`.mneme-<pid>-<seq>.tmp`).
fn temp_pid(name: &str) -> Option<(u32, u64)> {
    let rest = name.strip_prefix(TEMP_PREFIX)?.strip_suffix(TEMP_SUFFIX)?;
    let (pid, seq) = rest.split_once('-')?;
    Some((pid.parse().ok()?, seq.parse().ok()?))
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

    /// Files handed on and then renamed away are let go of as more are handed on, so the
    /// numbers held stay bounded however many saves a long-running process makes.
    #[test]
    fn numbers_of_finished_files_are_let_go() {
        let dir = tempfile::tempdir().unwrap();
        for i in 0..(HELD_BEFORE_PRUNE * 4) {
            let (tmp, _) = write_temp(dir.path(), b"x", None).unwrap();
            fs::rename(&tmp, dir.path().join(format!("f{i}.md"))).unwrap();
        }
        // Other tests run alongside and hold a few of their own.
        assert!(ours().len() <= HELD_BEFORE_PRUNE + 16, "{} numbers held", ours().len());
    }

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
        let other = dir.path().join(".mneme-notes.tmp");
        for f in [&dead, &other] {
            fs::write(f, "x").unwrap();
        }
        assert_eq!(remove_stale_temps(dir.path()), vec![dead.clone()]);
        assert!(!dead.exists() && other.exists());
        // A pid that runs (our parent's: the writer's pid handed on) on a two-hour-old file.
        let reused = dir.path().join(format!(".mneme-{}-1.tmp", std::os::unix::process::parent_id()));
        fs::write(&reused, "x").unwrap();
        assert!(remove_stale_temps(dir.path()).is_empty(), "a fresh file of a running pid stays");
        let two_hours_ago = std::time::SystemTime::now() - std::time::Duration::from_secs(7200);
        File::options().write(true).open(&reused).unwrap().set_modified(two_hours_ago).unwrap();
        assert_eq!(remove_stale_temps(dir.path()), vec![reused.clone()], "an hour-old file goes whoever has the pid");
    }

    /// A leftover under this process's own pid (a container's pid 1 run after run) goes with
    /// the next write into its folder, however young; this process's own temporary files in
    /// flight stay, and a number is let go once its file is done.
    #[test]
    fn leftovers_under_this_pid_are_removed_and_files_in_flight_kept() {
        let dir = tempfile::tempdir().unwrap();
        let me = std::process::id();
        // A number this process will never reach, so no write of its holds it.
        let leftover = dir.path().join(format!(".mneme-{me}-{}.tmp", 1u64 << 60));
        fs::write(&leftover, "half a file").unwrap();
        // In flight: handed to a caller that has not renamed it yet, and one a writer creates
        // itself under a reserved name.
        let (handed, _file) = create_temp(dir.path()).unwrap();
        let reserved = TempName::reserve();
        let made = dir.path().join(reserved.as_str());
        fs::write(&made, "being written").unwrap();
        write_atomic(&dir.path().join("a.md"), b"text").unwrap();
        assert!(!leftover.exists(), "the previous process's leftover is gone");
        assert!(handed.exists() && made.exists(), "this process's files in flight stay");
        // Done with: the reserved name is let go, the handed-on file renamed away (and seen
        // gone by the next clean-up). A file that turns up later under either name is no file
        // of this process's.
        drop(reserved);
        fs::rename(&handed, dir.path().join("b.md")).unwrap();
        assert!(remove_stale_temps(dir.path()).contains(&made));
        fs::write(&made, "left again").unwrap();
        fs::write(&handed, "left again").unwrap();
        let mut removed = remove_stale_temps(dir.path());
        removed.sort();
        let mut expected = vec![handed.clone(), made.clone()];
        expected.sort();
        assert_eq!(removed, expected);
        assert_eq!(fs::read_to_string(dir.path().join("a.md")).unwrap(), "text");
    }

    /// The refusals a person can act on are told apart from other failures, also when a
    /// writer has wrapped the system's error in its own.
    #[test]
    fn refusals_are_told_apart_through_wrapping_errors() {
        let of = |errno| Refusal::of(&io::Error::from_raw_os_error(errno));
        assert_eq!([of(28), of(122), of(30), of(13), of(1), of(5), of(2)], [
            Some(Refusal::DiskFull),
            Some(Refusal::DiskFull),
            Some(Refusal::ReadOnly),
            Some(Refusal::PermissionDenied),
            Some(Refusal::PermissionDenied),
            None,
            None
        ]);
        #[derive(Debug, thiserror::Error)]
        #[error("could not save")]
        struct Wrapper(#[source] io::Error);
        assert_eq!(Refusal::in_chain(&Wrapper(io::Error::from_raw_os_error(30))), Some(Refusal::ReadOnly));
        assert_eq!(Refusal::in_chain(&Wrapper(io::Error::other("odd"))), None);
    }

    /// A replacement takes the replaced file's rwx bits, not its set-id bits.
    #[test]
    #[cfg(unix)]
    fn a_refused_step_of_a_save_is_told_as_the_save_of_the_file() {
        let (target, dir) = (Path::new("/m/tabs.md"), Path::new("/m"));
        let full = io::Error::from_raw_os_error(28);
        assert_eq!(Refusal::told_as(&full, target, "write a temporary file in", dir), ("save", target));
        let broken = io::Error::from_raw_os_error(5);
        assert_eq!(Refusal::told_as(&broken, target, "write a temporary file in", dir), ("write a temporary file in", dir));
    }

    #[test]
    fn a_replacement_drops_set_id_bits() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("run.sh");
        fs::write(&f, "one").unwrap();
        fs::set_permissions(&f, fs::Permissions::from_mode(0o6750)).unwrap();
        write_atomic(&f, b"two").unwrap();
        assert_eq!(fs::metadata(&f).unwrap().permissions().mode() & 0o7777, 0o750);
    }
}
