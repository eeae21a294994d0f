//! Looking at a folder on a drive that may have stopped answering (a network share whose server
//! went away, a USB stick or FUSE mount whose daemon hangs): every system call under such a
//! drive blocks until it answers again, possibly for ever, and nothing can interrupt it. So a look
//! that a shared lock, an async worker or a request must not wait on for ever runs on a thread
//! of its own, and the caller waits at most [`PATIENCE`] for it. A folder whose look is still
//! blocked after that counts as not answering, and later looks at it, or at any folder on the
//! same drive, fail at once, without another thread, until the blocked one returns (the drive
//! answers again): one stuck thread per drive, however many folders on it are asked about (ten
//! projects on one hung share cost one patience, not ten).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// How long a look at a folder may take before its drive counts as not answering. A healthy
/// disk answers a `stat` in microseconds and a busy network share in well under a second.
pub const PATIENCE: Duration = Duration::from_secs(3);

/// The looks under way, by folder and by the mount point of its drive: the number and start of
/// the oldest one still blocked.
static UNDER_WAY: Mutex<Option<HashMap<PathBuf, (u64, Instant)>>> = Mutex::new(None);
static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn under_way() -> std::sync::MutexGuard<'static, Option<HashMap<PathBuf, (u64, Instant)>>> {
    UNDER_WAY.lock().unwrap_or_else(|e| e.into_inner())
}

/// `look(dir)` run on a thread of its own; `None` when it has not returned within [`PATIENCE`]
/// (or another look at `dir`, or at its drive, has been blocked that long already: then nothing
/// runs).
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
    let mount = holding_mount(&mount_points(), dir);
    look_on(&mount, dir, patience, look)
}

/// `look(dir)` for a `dir` on the drive mounted at `mount`, which is asked first (`statfs` of
/// the mount point) on the same thread. Both are counted among the looks under way: the folder
/// until the look returns, the mount only until its drive answered. So a drive that does not
/// answer is remembered by its mount point, and a second folder on it fails at once; while a
/// look stuck past its drive's answer (a folder reached through a symbolic link to another
/// drive, which the mount found by name cannot tell) is remembered by its folder alone, so it
/// never gets the healthy drive named in its path refused.
fn look_on<T: Send + 'static>(mount: &Path, dir: &Path, patience: Duration, look: impl FnOnce(&Path) -> T + Send + 'static) -> Option<T> {
    let number = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    // A folder that is itself the mount point has one entry, which the whole look holds.
    let mount = (mount != dir).then(|| mount.to_path_buf());
    {
        let mut map = under_way();
        let map = map.get_or_insert_with(HashMap::new);
        // Stuck already: a new look would only block one more thread.
        let stuck = |key: &Path| map.get(key).is_some_and(|(_, since)| since.elapsed() >= patience);
        if stuck(dir) || mount.as_deref().is_some_and(stuck) {
            return None;
        }
        for key in std::iter::once(dir).chain(mount.as_deref()) {
            map.entry(key.to_path_buf()).or_insert((number, Instant::now()));
        }
    }
    let (tx, rx) = mpsc::sync_channel(1);
    let owned = dir.to_path_buf();
    let owned_mount = mount.clone();
    let spawned = std::thread::Builder::new().name("mneme-drive-look".into()).spawn(move || {
        if let Some(m) = &owned_mount {
            ask_drive(m);
            // Its drive answered: other folders on it are looked at again.
            forget_if_mine(m, number);
        }
        let answer = look(&owned);
        let _ = tx.send(answer);
        // The drive answered: the next look runs again.
        forget_if_mine(&owned, number);
    });
    if spawned.is_err() {
        // No thread to spare (the process's limit): counted as not answering this time, and
        // not as stuck (no look is under way).
        for key in std::iter::once(dir).chain(mount.as_deref()) {
            forget_if_mine(key, number);
        }
        return None;
    }
    rx.recv_timeout(patience).ok()
}

/// Looks at many paths, one look per drive instead of one per path: the paths are grouped by
/// the mount holding them ([`holding_mount`]; a few hundred projects mostly share one healthy
/// disk, and a thread each would be a few hundred threads), and each drive's paths are looked
/// at together on a thread of its own, all drives at once. Each look asks its drive first with
/// `statfs` (see [`answers`]): a `stat` may be answered from the kernel's cache after the drive
/// stopped answering, and the answer would then hide it. [`PATIENCE`] is for each answer, not
/// for the whole look: a slow network share that answers a few hundred looks in more than 3 s
/// still answers, while one that answers nothing for 3 s does not. The answers come in the
/// order of `paths`; `None` for every path whose drive did not answer.
pub fn look_at_each<T: Send + 'static>(paths: &[PathBuf], each: fn(&Path) -> T) -> Vec<Option<T>> {
    let mounts = mount_points();
    let mut by_drive: HashMap<PathBuf, Vec<usize>> = HashMap::new();
    for (i, p) in paths.iter().enumerate() {
        by_drive.entry(holding_mount(&mounts, p)).or_default().push(i);
    }
    let mut out: Vec<Option<T>> = paths.iter().map(|_| None).collect();
    let ask = |mount: &PathBuf, indices: &Vec<usize>| look_at_drive(mount, indices.iter().map(|&i| paths[i].clone()).collect(), each, PATIENCE);
    // Every drive is waited for at once, so two drives that hang cost one patience, not two.
    let answers: Vec<(&Vec<usize>, Option<Vec<T>>)> = if by_drive.len() == 1 {
        by_drive.iter().map(|(m, ix)| (ix, ask(m, ix))).collect()
    } else {
        std::thread::scope(|s| {
            let waiting: Vec<_> = by_drive.iter().map(|(m, ix)| (ix, s.spawn(move || ask(m, ix)))).collect();
            waiting.into_iter().map(|(ix, w)| (ix, w.join().ok().flatten())).collect()
        })
    };
    for (indices, answer) in answers {
        if let Some(answer) = answer {
            for (&i, a) in indices.iter().zip(answer) {
                out[i] = Some(a);
            }
        }
    }
    out
}

/// `each` of `paths` on `mount`'s drive, on a thread of its own, after a `statfs` of it; `None`
/// once the drive has given no answer for `patience`. Counted among the looks under way by
/// `mount`, as [`look`] counts its folder, so a drive stuck in one costs one thread however
/// often it is asked; each answer counts as the drive answering, so a long look on a drive
/// that keeps answering is not taken for a stuck one.
fn look_at_drive<T: Send + 'static>(mount: &Path, paths: Vec<PathBuf>, each: fn(&Path) -> T, patience: Duration) -> Option<Vec<T>> {
    let number = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    {
        let mut map = under_way();
        let map = map.get_or_insert_with(HashMap::new);
        match map.get(mount) {
            Some((_, since)) if since.elapsed() >= patience => return None,
            Some(_) => {}
            None => {
                map.insert(mount.to_path_buf(), (number, Instant::now()));
            }
        }
    }
    let n = paths.len();
    // Unbounded: the look never waits on its caller, who may have stopped listening.
    let (tx, rx) = mpsc::channel::<Option<T>>();
    let owned = mount.to_path_buf();
    let spawned = std::thread::Builder::new().name("mneme-drive-look".into()).spawn(move || {
        let answered = || if_mine(&owned, number, |entry| entry.1 = Instant::now());
        ask_drive(&owned);
        answered();
        let mut listened = tx.send(None).is_ok();
        for p in &paths {
            if !listened {
                break;
            }
            let answer = each(p);
            answered();
            listened = tx.send(Some(answer)).is_ok();
        }
        // The drive answered: the next look runs again.
        forget_if_mine(&owned, number);
    });
    if spawned.is_err() {
        // No thread to spare: counted as not answering this time, and not as stuck.
        forget_if_mine(mount, number);
        return None;
    }
    rx.recv_timeout(patience).ok()?;
    let mut out = Vec::with_capacity(n);
    while out.len() < n {
        out.push(rx.recv_timeout(patience).ok()??);
    }
    Some(out)
}

/// Changes `dir`'s entry among the looks under way when it is look `number`'s.
fn if_mine(dir: &Path, number: u64, change: impl FnOnce(&mut (u64, Instant))) {
    if let Some(entry) = under_way().as_mut().and_then(|map| map.get_mut(dir)).filter(|(n, _)| *n == number) {
        change(entry);
    }
}

/// Drops `dir`'s entry among the looks under way when it is look `number`'s.
fn forget_if_mine(dir: &Path, number: u64) {
    if let Some(map) = under_way().as_mut() {
        if map.get(dir).is_some_and(|(n, _)| *n == number) {
            map.remove(dir);
        }
    }
}

/// The mount points of this machine, longest first (so the first one a path starts with is the
/// one holding it); empty where there is no `/proc/self/mountinfo`. Read from the kernel's
/// table, which never asks a drive.
pub fn mount_points() -> Vec<PathBuf> {
    let mut points = read_mount_points().unwrap_or_default();
    points.sort_by_key(|p| std::cmp::Reverse(p.as_os_str().len()));
    points.dedup();
    points
}

/// The mount in `mounts` (from [`mount_points`]) holding `path`, found by its name alone: paths
/// Claude Code records are real paths, so no symbolic link stands between. Without a mount
/// table, its top folder (`/Volumes/Stick`, `/home`) stands for its drive.
pub fn holding_mount(mounts: &[PathBuf], path: &Path) -> PathBuf {
    if let Some(m) = mounts.iter().find(|m| path.starts_with(m)) {
        return m.clone();
    }
    let top: PathBuf = path.components().take(3).collect();
    if top.as_os_str().is_empty() { PathBuf::from("/") } else { top }
}

/// The mount points `/proc/self/mountinfo` lists, in its order (the file watcher's mount table
/// reads them too); `None` where it cannot be read or there is none.
#[cfg(target_os = "linux")]
pub fn read_mount_points() -> Option<Vec<PathBuf>> {
    // The fifth field of each line, with the kernel's octal escapes (space, tab, newline,
    // backslash) undone.
    let text = std::fs::read("/proc/self/mountinfo").ok()?;
    Some(text.split(|b| *b == b'\n').filter_map(|line| line.split(|b| *b == b' ').nth(4)).map(unescape_mount_point).collect())
}

#[cfg(not(target_os = "linux"))]
pub fn read_mount_points() -> Option<Vec<PathBuf>> {
    None
}

#[cfg(target_os = "linux")]
fn unescape_mount_point(field: &[u8]) -> PathBuf {
    use std::os::unix::ffi::OsStringExt;
    let mut out = Vec::with_capacity(field.len());
    let mut i = 0;
    while i < field.len() {
        let octal = field.get(i + 1..i + 4).filter(|d| field[i] == b'\\' && d[0] <= b'3' && d.iter().all(|c| (b'0'..=b'7').contains(c)));
        match octal {
            Some(d) => {
                out.push(((d[0] - b'0') << 6) | ((d[1] - b'0') << 3) | (d[2] - b'0'));
                i += 4;
            }
            None => {
                out.push(field[i]);
                i += 1;
            }
        }
    }
    PathBuf::from(std::ffi::OsString::from_vec(out))
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

    /// A path belongs to the longest mount point it starts with (by whole names: `/mnt/stick2`
    /// is not under `/mnt/stick`), and without a table to its top folder.
    #[test]
    fn a_path_is_grouped_by_the_mount_holding_it() {
        let mut mounts = vec![PathBuf::from("/"), PathBuf::from("/mnt/stick"), PathBuf::from("/mnt")];
        mounts.sort_by_key(|p| std::cmp::Reverse(p.as_os_str().len()));
        let of = |p: &str| holding_mount(&mounts, Path::new(p));
        assert_eq!(of("/mnt/stick/proj/sub"), Path::new("/mnt/stick"));
        assert_eq!(of("/mnt/stick"), Path::new("/mnt/stick"));
        assert_eq!(of("/mnt/stick2/proj"), Path::new("/mnt"));
        assert_eq!(of("/home/a/code"), Path::new("/"));
        assert_eq!(holding_mount(&[], Path::new("/Volumes/Stick/proj")), Path::new("/Volumes/Stick"));
        assert_eq!(holding_mount(&[], Path::new("/")), Path::new("/"));
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn mount_points_are_read_with_their_escapes_undone() {
        assert_eq!(unescape_mount_point(br"/mnt/my\040stick\134x"), Path::new("/mnt/my stick\\x"));
        assert_eq!(unescape_mount_point(br"/mnt/a\9"), Path::new(r"/mnt/a\9"));
        // A tab too; and what is not an escape the kernel writes (past \377, too short) is kept.
        assert_eq!(unescape_mount_point(br"/home/u/My\040Drive\011x"), Path::new("/home/u/My Drive\tx"));
        assert_eq!(unescape_mount_point(br"/a\777\04"), Path::new(r"/a\777\04"));
        let points = mount_points();
        assert!(points.iter().any(|p| p == Path::new("/")), "{points:?}");
        assert!(points.windows(2).all(|w| w[0].as_os_str().len() >= w[1].as_os_str().len()));
    }

    /// Paths on drives that answer are each looked at, answered in the order asked.
    #[test]
    fn paths_on_drives_that_answer_are_each_looked_at() {
        let t = std::env::temp_dir();
        let paths = vec![t.clone(), PathBuf::from("/nonexistent-mneme-drive-test/each"), PathBuf::from("/")];
        assert_eq!(look_at_each(&paths, |p| p.is_dir()), vec![Some(true), Some(false), Some(true)]);
        assert!(look_at_each(&[], |p| p.is_dir()).is_empty());
    }

    /// A drive whose look at one of its paths blocks gives up after the patience with no answer
    /// for any of them, later looks at that drive give up at once without running, and once
    /// the blocked look returns they run again.
    #[test]
    fn a_drive_stuck_on_one_path_gives_up_once_and_recovers() {
        static GATE: Mutex<()> = Mutex::new(());
        static RAN: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        fn gated(p: &Path) -> bool {
            RAN.fetch_add(1, Ordering::SeqCst);
            let _wait = GATE.lock();
            p.ends_with("b")
        }
        let mount = tempfile_free_path("stuck-drive");
        let paths = vec![mount.join("a"), mount.join("b")];
        let held = GATE.lock().unwrap();
        assert_eq!(look_at_drive(&mount, paths.clone(), gated, Duration::from_millis(100)), None, "a look that does not return gives up");
        for _ in 0..3 {
            assert_eq!(look_at_drive(&mount, paths.clone(), gated, Duration::from_millis(100)), None, "the drive still does not answer");
        }
        assert_eq!(RAN.load(Ordering::SeqCst), 1, "no second thread was blocked on it");
        drop(held);
        let answered = loop {
            if let Some(a) = look_at_drive(&mount, paths.clone(), gated, PATIENCE) {
                break a;
            }
            std::thread::yield_now();
        };
        assert_eq!(answered, vec![false, true], "the look ran once the drive answered, in order");
    }

    /// A name no other test uses (looks are keyed by path, process-wide).
    fn tempfile_free_path(name: &str) -> PathBuf {
        PathBuf::from(format!("/nonexistent-mneme-drive-test/{name}-{}", std::process::id()))
    }
}
