//! The consolidation lock, `<memory>/.consolidate-lock`, exactly as Claude Code keeps it
//! (`consolidationLock.ts`):
//!
//! - the body is the holder's PID in decimal; the file's **mtime is "last consolidated at"**;
//! - it counts as held only while it is under 60 minutes old *and* its PID is a live process,
//!   so a crashed holder's lock can be taken over at once (the time gate still waits);
//! - acquiring writes our PID (stamping the mtime), then reads the file back: someone else's
//!   PID there means we lost a race;
//! - a failed or cancelled run rolls back: the file is removed if there was none before,
//!   otherwise emptied and its old mtime put back.
//!
//! Because the format is Claude Code's, a dream running in Claude Code blocks Mneme and a dream
//! running in Mneme blocks Claude Code.
//!
//! Mneme reads and writes the lock file itself, never through a link: a project-scope agent's
//! memory folder comes with a cloned repository, whose `.consolidate-lock` may be a symbolic
//! link to `~/.bashrc` (which a write would empty) or to `/dev/zero` (which a read would never
//! finish). A lock that is not a plain file with one name is refused with a message saying to
//! remove it, its body is read only as far as a PID could reach, and the format on disk is
//! unchanged.
//!
//! A model dream in Mneme can run longer than the hour after which a lock no longer blocks,
//! so it stamps the lock again every ten minutes while it runs ([`ConsolidationLock::refresh`],
//! only while the body still holds its PID).
//!
//! One addition that Claude Code lacks: two Mneme processes serialize the read–write–re-read
//! sequence with an advisory `flock` on a guard file in Mneme's data folder (never in the memory
//! folder). Without it, two processes that both find no lock can both write, both read back
//! their own PID (each re-read happening before the other's write) and both consolidate.

use crate::error::DreamError;
use filetime::FileTime;
use mneme_core::Clock;
use serde::{Deserialize, Serialize};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The lock's file name inside the memory folder.
pub const LOCK_FILE: &str = ".consolidate-lock";

/// `HOLDER_STALE_MS`: a lock older than this no longer blocks, whatever its PID.
pub const HOLDER_STALE: Duration = Duration::from_secs(60 * 60);

/// Nanoseconds since the epoch, signed so times before 1970 and clock skew stay representable.
pub(crate) fn ns_since_epoch(t: SystemTime) -> i128 {
    match t.duration_since(UNIX_EPOCH) {
        Ok(d) => d.as_nanos() as i128,
        Err(e) => -(e.duration().as_nanos() as i128),
    }
}

/// Milliseconds since the epoch, held to i64's range: a file's time can be anything a
/// filesystem stores (tmpfs keeps 2^63-1 seconds as given).
pub(crate) fn ms_since_epoch(t: SystemTime) -> i64 {
    (ns_since_epoch(t) / 1_000_000).clamp(i64::MIN as i128, i64::MAX as i128) as i64
}

/// The time `ns` nanoseconds from the epoch, `None` past what `SystemTime` holds. Checked: a
/// file's time can be centuries away, and `Duration::from_nanos(ns as u64)` wrapped anything
/// after the year 2554 to some other date.
pub(crate) fn system_time_of_ns(ns: i128) -> Option<SystemTime> {
    let abs = ns.unsigned_abs();
    let d = Duration::new(u64::try_from(abs / 1_000_000_000).ok()?, (abs % 1_000_000_000) as u32);
    if ns >= 0 {
        UNIX_EPOCH.checked_add(d)
    } else {
        UNIX_EPOCH.checked_sub(d)
    }
}

fn filetime_of(t: SystemTime) -> FileTime {
    FileTime::from_system_time(t)
}

/// The most of the lock's body that is read. Claude Code writes a bare PID (a few digits) and
/// reads it with `parseInt`, which stops at the first non-digit; nothing past this could be part
/// of one, unless hidden behind kilobytes of leading blanks.
const BODY_CAP: u64 = 4096;

/// Why a lock file cannot be used, as an I/O error of its own kind.
fn not_plain(what: &str) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        format!("it is {what}, not the plain file a dream lock is; remove it and dream again (a new lock is created)"),
    )
}

/// Opens the lock file itself: never a link's target (`O_NOFOLLOW`), never waiting on a FIFO
/// (`O_NONBLOCK`), and only a regular file, which for writing must have no other name (a hard
/// link would carry the write to another file). `None` when there is no lock file.
fn open_plain(path: &Path, write: bool) -> io::Result<Option<fs::File>> {
    let mut options = fs::OpenOptions::new();
    options.read(true).write(write);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags((rustix::fs::OFlags::NOFOLLOW | rustix::fs::OFlags::NONBLOCK).bits() as i32);
    }
    #[cfg(not(unix))]
    if fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(not_plain("a symbolic link"));
    }
    let file = match options.open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(rustix::io::Errno::LOOP.raw_os_error()) => return Err(not_plain("a symbolic link")),
        #[cfg(unix)]
        Err(e) if write && e.raw_os_error() == Some(rustix::io::Errno::NXIO.raw_os_error()) => return Err(not_plain("a FIFO")),
        Err(e) => return Err(e),
    };
    let meta = file.metadata()?;
    if !meta.is_file() {
        let what = if meta.is_dir() { "a folder" } else { "a FIFO, socket or device" };
        return Err(not_plain(what));
    }
    #[cfg(unix)]
    if write && std::os::unix::fs::MetadataExt::nlink(&meta) > 1 {
        return Err(not_plain("a hard link to another file"));
    }
    Ok(Some(file))
}

/// The lock's mtime and (the start of) its body, read through one plain-file handle.
fn read_plain(path: &Path) -> io::Result<Option<(SystemTime, Vec<u8>)>> {
    use std::io::Read;
    let Some(file) = open_plain(path, false)? else { return Ok(None) };
    let mtime = file.metadata()?.modified()?;
    let mut body = Vec::new();
    file.take(BODY_CAP).read_to_end(&mut body)?;
    Ok(Some((mtime, body)))
}

/// The PID in the lock's body, if it can be read and parses.
fn read_pid(path: &Path) -> Option<i64> {
    read_plain(path).ok().flatten().and_then(|(_, body)| js_parse_int(&String::from_utf8_lossy(&body)))
}

/// JavaScript's `parseInt(text.trim(), 10)`: optional sign, then leading decimal digits;
/// `None` where JavaScript gives `NaN`.
pub(crate) fn js_parse_int(text: &str) -> Option<i64> {
    let t = mneme_core::text::js_trim(text);
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let end = digits.bytes().take_while(u8::is_ascii_digit).count();
    if end == 0 {
        return None;
    }
    // PIDs never come near i64::MAX; a longer digit run saturates, which no live PID matches.
    let v = digits[..end].parse::<i64>().unwrap_or(i64::MAX);
    Some(if neg { -v } else { v })
}

/// Claude Code's `isProcessRunning`: `process.kill(pid, 0)` succeeds. PIDs 0 and 1 and
/// negative ones are never "running" (they would address process groups or init), and a
/// process owned by another user (EPERM) counts as not running, as in Node.
pub fn process_alive(pid: i64) -> bool {
    if pid <= 1 || pid > i64::from(i32::MAX) {
        return false;
    }
    probe(pid as i32)
}

#[cfg(unix)]
fn probe(pid: i32) -> bool {
    match rustix::process::Pid::from_raw(pid) {
        Some(p) => rustix::process::test_kill_process(p).is_ok(),
        None => false,
    }
}

#[cfg(not(unix))]
fn probe(_pid: i32) -> bool {
    false
}

/// What the lock file says right now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockState {
    /// The lock file.
    pub path: PathBuf,
    /// Whether it exists (and could be read).
    pub exists: bool,
    /// Its mtime in milliseconds since the epoch: when the memory was last consolidated.
    pub mtime_ms: Option<i64>,
    /// The PID in its body, if it parses.
    pub holder_pid: Option<i64>,
    /// Whether that PID is a live process.
    pub holder_alive: bool,
    /// Whether the lock blocks a new dream now: under 60 minutes old with a live PID.
    pub held: bool,
    /// When it stops blocking even if the holder keeps running (mtime + 60 minutes).
    pub stale_at_ms: Option<i64>,
    /// Fields a newer Mneme wrote here that this one does not know, written back with the
    /// record (see [`crate::history::DreamRecord::extra`]).
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: mneme_core::own_files::Unknown,
}

/// A lock we hold. Dropping it does nothing: success leaves the mtime at acquisition time
/// (that is the record of the consolidation); failure must call [`ConsolidationLock::rollback`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Acquired {
    /// The lock's mtime before we took it, in nanoseconds since the epoch; 0 when there was
    /// no lock file. [`ConsolidationLock::rollback`] puts it back.
    pub prior_mtime_ns: i128,
    /// When we took it (the new "last consolidated at"), in nanoseconds since the epoch.
    pub acquired_at_ns: i128,
    /// Fields a newer Mneme wrote here that this one does not know, written back with the
    /// record (see [`crate::history::DreamRecord::extra`]).
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: mneme_core::own_files::Unknown,
}

/// Why the lock could not be taken.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotAcquired {
    /// A live process took it less than 60 minutes ago.
    Held(LockState),
    /// Another process wrote its PID between our write and our read-back.
    LostRace { winner_pid: Option<i64> },
}

/// The lock of one memory folder.
#[derive(Debug, Clone)]
pub struct ConsolidationLock {
    memory_dir: PathBuf,
    path: PathBuf,
    pid: u32,
    guard: Option<PathBuf>,
}

impl ConsolidationLock {
    /// The lock of `memory_dir`, taken as this process.
    pub fn new(memory_dir: impl Into<PathBuf>) -> Self {
        let memory_dir = memory_dir.into();
        let path = memory_dir.join(LOCK_FILE);
        ConsolidationLock { memory_dir, path, pid: std::process::id(), guard: None }
    }

    /// Serializes acquisition with other Mneme processes through an advisory lock on `guard`
    /// (a file in Mneme's data folder; created if missing).
    pub fn with_guard(mut self, guard: impl Into<PathBuf>) -> Self {
        self.guard = Some(guard.into());
        self
    }

    /// Acts as process `pid` (tests use this to play a second holder).
    pub fn with_pid(mut self, pid: u32) -> Self {
        self.pid = pid;
        self
    }

    /// The lock file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The PID this lock writes.
    pub fn pid(&self) -> u32 {
        self.pid
    }

    /// `readLastConsolidatedAt`: the lock file's mtime, `None` when there is no lock file
    /// (Claude Code's 0).
    pub fn last_consolidated_at(&self) -> Option<SystemTime> {
        open_plain(&self.path, false).ok().flatten().and_then(|f| f.metadata().ok()?.modified().ok())
    }

    /// The lock as a dreamer sees it at `now`. Like Claude Code, the file counts only when
    /// both its metadata and its body could be read.
    pub fn state(&self, now: SystemTime) -> LockState {
        // A lock that is not a plain file is no lock here; acquiring says what to do about it.
        let (mtime, pid) = match read_plain(&self.path) {
            Ok(Some((mtime, body))) => (Some(mtime), js_parse_int(&String::from_utf8_lossy(&body))),
            Ok(None) | Err(_) => (None, None),
        };
        let alive = pid.is_some_and(process_alive);
        let fresh = mtime.is_some_and(|m| ns_since_epoch(now) - ns_since_epoch(m) < HOLDER_STALE.as_nanos() as i128);
        LockState {
            path: self.path.clone(),
            exists: mtime.is_some(),
            mtime_ms: mtime.map(ms_since_epoch),
            holder_pid: pid,
            holder_alive: alive,
            held: fresh && alive,
            // `checked_add`: a lock dated at the end of time must not panic the status.
            stale_at_ms: mtime.map(|m| m.checked_add(HOLDER_STALE).map_or(i64::MAX, ms_since_epoch)),
            extra: Default::default(),
        }
    }

    /// Whether a dream of this process is running in this folder now. The lock keeps the PID
    /// of the last dreamer for an hour after it finished (Claude Code's rule), so a lock held by
    /// this very process is busy only while one of its own dreams runs.
    pub fn running_here(&self) -> bool {
        running().contains(&self.path)
    }

    /// Ends this process's dream in the folder (see [`running_here`](Self::running_here)):
    /// the caller of a successful acquire calls it when the dream is over, however it ended.
    pub fn finished(&self) {
        running().remove(&self.path);
    }

    /// Held, and not only by this process between dreams of its own. A dream of this very
    /// process still running here holds the folder however old the lock looks: after a suspend
    /// the wall clock can pass the hour in the middle of it.
    fn held_by_another(&self, state: &LockState) -> bool {
        let ours = self.pid == std::process::id();
        if ours && self.running_here() {
            return true;
        }
        state.held && !(state.holder_pid == Some(i64::from(self.pid)) && ours)
    }

    /// `tryAcquireConsolidationLock`, with the injected clock's "now" as the acquisition time.
    pub fn try_acquire(&self, clock: &dyn Clock) -> Result<Result<Acquired, NotAcquired>, DreamError> {
        self.try_acquire_with(clock, || {})
    }

    /// [`try_acquire`](Self::try_acquire) with a hook between writing our PID and reading it
    /// back, where a racing writer would land.
    pub(crate) fn try_acquire_with(
        &self,
        clock: &dyn Clock,
        between: impl FnOnce(),
    ) -> Result<Result<Acquired, NotAcquired>, DreamError> {
        let _guard = match &self.guard {
            Some(g) => Some(GuardLock::take(g)?),
            None => None,
        };
        let now = clock.now();
        // Nothing is read through, or written to, a lock that is not a plain file.
        let prior = read_plain(&self.path).map_err(|e| DreamError::io("use the dream lock", &self.path, e))?;
        let state = self.state(now);
        if self.held_by_another(&state) {
            return Ok(Err(NotAcquired::Held(state)));
        }
        let prior_mtime_ns = match (state.exists, prior) {
            (true, Some((mtime, _))) => ns_since_epoch(mtime),
            _ => 0,
        };
        fs::create_dir_all(&self.memory_dir).map_err(|e| DreamError::io("create the memory folder", &self.memory_dir, e))?;
        // Claude Code's acquire (check, write, read back) is not atomic, and another process
        // running it knows nothing of Mneme's guard file. Look again just before writing, so a
        // dreamer that wrote since our check is seen instead of overwritten.
        let again = self.state(now);
        if self.held_by_another(&again) {
            return Ok(Err(NotAcquired::Held(again)));
        }
        use std::io::Write;
        let existing = if again.exists {
            open_plain(&self.path, true).map_err(|e| DreamError::io("write the dream lock", &self.path, e))?
        } else {
            None
        };
        let file = match existing {
            // Claude Code's `writeFile`: the body replaced by our PID.
            Some(mut f) => {
                f.set_len(0)
                    .and_then(|()| f.write_all(self.pid.to_string().as_bytes()))
                    .map_err(|e| DreamError::io("write the dream lock", &self.path, e))?;
                f
            }
            // No lock yet: create it exclusively (which never follows a link), so a dreamer
            // that created it a moment ago (after our look, before our write) makes us lose
            // instead of both winning.
            None => match fs::OpenOptions::new().write(true).create_new(true).open(&self.path) {
                Ok(mut f) => {
                    f.write_all(self.pid.to_string().as_bytes())
                        .map_err(|e| DreamError::io("write the dream lock", &self.path, e))?;
                    f
                }
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                    return Ok(Err(NotAcquired::LostRace { winner_pid: read_pid(&self.path) }));
                }
                Err(e) => return Err(DreamError::io("write the dream lock", &self.path, e)),
            },
        };
        // The file system stamps "now" already; stamping the injected clock's now keeps
        // "last consolidated at" consistent with every other time Mneme records.
        filetime::set_file_handle_times(&file, None, Some(filetime_of(now)))
            .map_err(|e| DreamError::io("stamp the dream lock", &self.path, e))?;
        drop(file);
        between();
        let back = match read_plain(&self.path) {
            Ok(Some((_, b))) => js_parse_int(&String::from_utf8_lossy(&b)),
            Ok(None) | Err(_) => return Ok(Err(NotAcquired::LostRace { winner_pid: None })),
        };
        if back != Some(i64::from(self.pid)) {
            return Ok(Err(NotAcquired::LostRace { winner_pid: back }));
        }
        // A Claude Code that checked before our write can still write after our read-back and
        // then read its own PID back: it believes it won. Read once more after a moment; if its
        // PID is there now the lock is its, so we step back without touching the file.
        std::thread::sleep(RACE_GRACE);
        let settled = read_pid(&self.path);
        if settled != Some(i64::from(self.pid)) {
            return Ok(Err(NotAcquired::LostRace { winner_pid: settled }));
        }
        // Marked while the guard file is still held: another thread's acquire waits for it.
        running().insert(self.path.clone());
        Ok(Ok(Acquired { prior_mtime_ns, acquired_at_ns: ns_since_epoch(now), extra: Default::default() }))
    }

    /// Stamps the lock with the clock's now again while it still holds our PID, so a dream
    /// that runs past [`HOLDER_STALE`] is not taken for a crashed one (Claude Code would then
    /// start a dream of its own over ours). Answers whether it was ours to stamp. Claude Code's
    /// own dreams end well within the hour and never do this; the mtime it reads afterwards
    /// is "last consolidated at", which a refresh only moves closer to the truth.
    pub fn refresh(&self, clock: &dyn Clock) -> Result<bool, DreamError> {
        let Some(file) = open_plain(&self.path, false).map_err(|e| DreamError::io("read the dream lock", &self.path, e))? else {
            return Ok(false);
        };
        if read_pid(&self.path) != Some(i64::from(self.pid)) {
            return Ok(false);
        }
        filetime::set_file_handle_times(&file, None, Some(filetime_of(clock.now())))
            .map_err(|e| DreamError::io("stamp the dream lock", &self.path, e))?;
        Ok(true)
    }

    /// `rollbackConsolidationLock`: no lock before → remove the file; otherwise empty its body
    /// and restore the old mtime, so the time gate sees the previous consolidation again.
    /// A lock another dreamer has taken since (a Claude Code that found ours stale after an
    /// hour's dream) is its lock now, and is left as it is.
    pub fn rollback(&self, acquired: &Acquired) -> Result<(), DreamError> {
        if let Ok(Some((_, body))) = read_plain(&self.path) {
            if js_parse_int(&String::from_utf8_lossy(&body)).is_some_and(|holder| holder != i64::from(self.pid)) {
                return Ok(());
            }
        }
        if acquired.prior_mtime_ns == 0 {
            return match fs::remove_file(&self.path) {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(()),
                Err(e) => Err(DreamError::io("remove the dream lock", &self.path, e)),
            };
        }
        // Claude Code's `writeFile(path, '')`, on the file itself (created again if it went).
        let file = match open_plain(&self.path, true) {
            Ok(Some(f)) => f.set_len(0).map(|()| f),
            Ok(None) => fs::OpenOptions::new().write(true).create_new(true).open(&self.path),
            Err(e) => Err(e),
        }
        .map_err(|e| DreamError::io("roll back the dream lock", &self.path, e))?;
        let t = system_time_of_ns(acquired.prior_mtime_ns).ok_or_else(|| {
            DreamError::Invalid(format!(
                "the dream lock {} cannot be dated back to its earlier time ({} ns from 1970); remove it to reopen the time gate",
                self.path.display(),
                acquired.prior_mtime_ns
            ))
        })?;
        // `utimes(path, prior, prior)` sets both times.
        filetime::set_file_handle_times(&file, Some(filetime_of(t)), Some(filetime_of(t)))
            .map_err(|e| DreamError::io("roll back the dream lock", &self.path, e))
    }
}

/// The folders (their lock files) where a dream of this process is running: marked while the
/// guard file is held, so two threads of one process never both win.
fn running() -> std::sync::MutexGuard<'static, std::collections::BTreeSet<PathBuf>> {
    static RUNNING: std::sync::LazyLock<std::sync::Mutex<std::collections::BTreeSet<PathBuf>>> =
        std::sync::LazyLock::new(Default::default);
    RUNNING.lock().unwrap_or_else(|e| e.into_inner())
}

/// How long an acquisition waits before its last look at the lock: far longer than Claude
/// Code's synchronous check → write → read-back takes, short enough not to be noticed.
const RACE_GRACE: Duration = Duration::from_millis(150);

/// An exclusive advisory lock on a file, released when dropped.
struct GuardLock(#[allow(dead_code)] mneme_store::file_lock::FileLock);

impl GuardLock {
    fn take(path: &Path) -> Result<GuardLock, DreamError> {
        mneme_store::file_lock::FileLock::take(path)
            .map(GuardLock)
            .map_err(|e| DreamError::io("lock the dream guard file", path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_core::FixedClock;
    use std::process::{Child, Command};

    const HOUR: u64 = 3600;

    fn lock_in(dir: &tempfile::TempDir) -> ConsolidationLock {
        ConsolidationLock::new(dir.path().join("memory"))
    }

    fn write_lock(l: &ConsolidationLock, body: &str, mtime_secs: i64) {
        fs::create_dir_all(l.path().parent().unwrap()).unwrap();
        fs::write(l.path(), body).unwrap();
        filetime::set_file_mtime(l.path(), FileTime::from_unix_time(mtime_secs, 0)).unwrap();
    }

    fn mtime_secs(p: &Path) -> i64 {
        FileTime::from_last_modification_time(&fs::metadata(p).unwrap()).unix_seconds()
    }

    /// A refresh stamps our own lock with the clock's now, and leaves a lock that holds
    /// another PID (a dreamer that took it over), or none, alone.
    #[test]
    fn a_refresh_stamps_only_our_own_lock() {
        let dir = tempfile::tempdir().unwrap();
        let l = lock_in(&dir).with_pid(4242);
        let later = mneme_core::clock::FixedClock::at_unix_secs(1_800_000_000);
        assert!(!l.refresh(&later).unwrap(), "no lock, nothing to stamp");
        write_lock(&l, "4242", 1_700_000_000);
        assert!(l.refresh(&later).unwrap());
        assert_eq!(mtime_secs(l.path()), 1_800_000_000);
        write_lock(&l, "999", 1_700_000_000);
        assert!(!l.refresh(&later).unwrap());
        assert_eq!(mtime_secs(l.path()), 1_700_000_000, "another dreamer's lock is its own");
    }

    /// A live process that is not us, killed when the test ends.
    struct Sleeper(Child);
    impl Sleeper {
        fn start() -> Sleeper {
            Sleeper(Command::new("sleep").arg("60").spawn().expect("sleep runs"))
        }
        fn pid(&self) -> u32 {
            self.0.id()
        }
    }
    impl Drop for Sleeper {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }

    #[test]
    fn parse_int_is_javascripts() {
        assert_eq!(js_parse_int(" 123\n"), Some(123));
        assert_eq!(js_parse_int("123abc"), Some(123));
        assert_eq!(js_parse_int("-7"), Some(-7));
        assert_eq!(js_parse_int("+8"), Some(8));
        assert_eq!(js_parse_int(""), None);
        assert_eq!(js_parse_int("abc"), None);
        assert_eq!(js_parse_int("\u{FEFF}42"), Some(42));
    }

    #[test]
    fn no_lock_is_acquired_and_writes_our_pid_and_the_clock() {
        let d = tempfile::tempdir().unwrap();
        let l = lock_in(&d).with_pid(std::process::id());
        assert_eq!(l.last_consolidated_at(), None);
        let clock = FixedClock::at_unix_secs(1_800_000_000);
        let got = l.try_acquire(&clock).unwrap().unwrap();
        assert_eq!(got.prior_mtime_ns, 0);
        assert_eq!(fs::read_to_string(l.path()).unwrap(), std::process::id().to_string());
        assert_eq!(mtime_secs(l.path()), 1_800_000_000);
        // Our own live PID, fresh: a second dreamer in this process is blocked too.
        match l.try_acquire(&clock).unwrap() {
            Err(NotAcquired::Held(s)) => assert_eq!(s.holder_pid, Some(i64::from(std::process::id()))),
            other => panic!("{other:?}"),
        }
        // Once this process's dream is over the file still names our PID for the hour, but
        // nothing of ours runs: the next dream of this process may take it.
        assert!(l.running_here());
        l.finished();
        assert!(!l.running_here() && l.state(clock.now()).held);
        assert!(l.try_acquire(&clock).unwrap().is_ok());
        l.finished();
    }

    /// A lock dated at the end of time (tmpfs keeps any mtime it is given) is reported, not a
    /// panic of every status and every scheduler tick.
    #[test]
    fn a_lock_dated_at_the_end_of_time_does_not_panic() {
        let d = tempfile::tempdir().unwrap();
        let l = lock_in(&d);
        fs::create_dir_all(l.path().parent().unwrap()).unwrap();
        fs::write(l.path(), "1").unwrap();
        let far = SystemTime::UNIX_EPOCH + Duration::from_secs(i64::MAX as u64 / 2);
        let state = l.state(far);
        assert_eq!(state.stale_at_ms, Some(i64::MAX).filter(|_| far.checked_add(HOLDER_STALE).is_none()).or(state.stale_at_ms));
        assert_eq!(ms_since_epoch(far), i64::MAX, "milliseconds past i64 are held at its end");
        // The mtime itself as far as the filesystem allows: the status still reads.
        let _ = filetime::set_file_mtime(l.path(), FileTime::from_unix_time(i64::MAX / 1000, 0));
        let _ = l.state(SystemTime::now());
    }

    /// A dream of this process still running keeps the folder, even once the wall clock says
    /// the lock is over an hour old (a laptop suspended in the middle of a dream).
    #[test]
    fn our_running_dream_holds_the_folder_past_the_hour() {
        let d = tempfile::tempdir().unwrap();
        let l = lock_in(&d).with_pid(std::process::id());
        let clock = FixedClock::at_unix_secs(1_800_000_000);
        l.try_acquire(&clock).unwrap().unwrap();
        let later = FixedClock::at_unix_secs(1_800_000_000 + 3 * HOUR);
        assert!(!l.state(later.now()).held, "by the wall clock the hour is over");
        assert!(matches!(l.try_acquire(&later).unwrap(), Err(NotAcquired::Held(_))), "but our dream still runs");
        l.finished();
        assert!(l.try_acquire(&later).unwrap().is_ok());
        l.finished();
    }

    #[test]
    fn a_live_foreign_pid_under_an_hour_old_blocks() {
        let d = tempfile::tempdir().unwrap();
        let l = lock_in(&d);
        let other = Sleeper::start();
        let t0 = 1_800_000_000;
        write_lock(&l, &other.pid().to_string(), t0);
        let at = |secs| FixedClock::at_unix_secs(secs);
        match l.try_acquire(&at(t0 as u64 + HOUR - 1)).unwrap() {
            Err(NotAcquired::Held(s)) => {
                assert!(s.held && s.holder_alive);
                assert_eq!(s.holder_pid, Some(i64::from(other.pid())));
                assert_eq!(s.stale_at_ms, Some((t0 + 3600) * 1000));
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(fs::read_to_string(l.path()).unwrap(), other.pid().to_string(), "untouched");
        assert_eq!(mtime_secs(l.path()), t0);
        // Exactly 60 minutes old: stale, even though the holder still runs.
        let got = l.try_acquire(&at(t0 as u64 + HOUR)).unwrap().unwrap();
        assert_eq!(got.prior_mtime_ns, i128::from(t0) * 1_000_000_000);
    }

    #[test]
    fn a_dead_pid_or_garbage_body_is_reclaimed_at_once() {
        let d = tempfile::tempdir().unwrap();
        let l = lock_in(&d);
        let mut child = Command::new("true").spawn().unwrap();
        let dead = child.id();
        child.wait().unwrap();
        let now = 1_800_000_000;
        for body in [dead.to_string(), String::new(), "not a pid".into(), "1".into(), "0".into()] {
            write_lock(&l, &body, now - 5);
            assert!(l.try_acquire(&FixedClock::at_unix_secs(now as u64)).unwrap().is_ok(), "{body:?}");
            l.finished();
        }
    }

    /// Our dream ran past the hour and a Claude Code took the lock: our failure's rollback
    /// leaves its lock (PID and date) as it is.
    #[test]
    fn a_rollback_leaves_a_lock_another_dreamer_took_since() {
        let dir = tempfile::tempdir().unwrap();
        let l = lock_in(&dir);
        write_lock(&l, "", 1_700_000_000);
        let clock = mneme_core::FixedClock::at_unix_secs(1_764_000_000);
        let acquired = l.try_acquire(&clock).unwrap().expect("acquired");
        l.finished();
        write_lock(&l, "424242", 1_764_004_000);
        l.rollback(&acquired).unwrap();
        assert_eq!(std::fs::read_to_string(l.path()).unwrap(), "424242");
        assert_eq!(mtime_secs(l.path()), 1_764_004_000);
        // Still ours: rolled back to the earlier consolidation.
        write_lock(&l, &l.pid().to_string(), 1_764_000_000);
        l.rollback(&acquired).unwrap();
        assert_eq!((std::fs::read_to_string(l.path()).unwrap().as_str(), mtime_secs(l.path())), ("", 1_700_000_000));
    }

    #[test]
    fn losing_the_race_is_detected() {
        let d = tempfile::tempdir().unwrap();
        let l = lock_in(&d);
        let rival = Sleeper::start();
        let path = l.path().to_path_buf();
        let got = l
            .try_acquire_with(&FixedClock::at_unix_secs(1_800_000_000), || fs::write(&path, rival.pid().to_string()).unwrap())
            .unwrap();
        assert_eq!(got, Err(NotAcquired::LostRace { winner_pid: Some(i64::from(rival.pid())) }));
    }

    #[test]
    fn rollback_restores_the_previous_state() {
        let d = tempfile::tempdir().unwrap();
        let l = lock_in(&d);
        let clock = FixedClock::at_unix_secs(1_800_000_000);
        // No lock before: rollback removes it.
        let a = l.try_acquire(&clock).unwrap().unwrap();
        l.rollback(&a).unwrap();
        l.finished();
        assert!(!l.path().exists());
        // A lock before: the body is emptied and the old mtime comes back.
        write_lock(&l, "99999999", 1_700_000_000);
        let a = l.try_acquire(&clock).unwrap().unwrap();
        assert_eq!(mtime_secs(l.path()), 1_800_000_000);
        l.rollback(&a).unwrap();
        l.finished();
        assert_eq!(fs::read_to_string(l.path()).unwrap(), "");
        assert_eq!(mtime_secs(l.path()), 1_700_000_000);
        assert_eq!(l.last_consolidated_at(), Some(UNIX_EPOCH + Duration::from_secs(1_700_000_000)));
    }

    /// Reads `l`'s state on another thread, failing the test if it does not answer in time (a
    /// read of a FIFO waits for a writer for ever).
    fn state_in_time(l: &ConsolidationLock) -> LockState {
        let (tx, rx) = std::sync::mpsc::channel();
        let l2 = l.clone();
        std::thread::spawn(move || {
            let _ = tx.send(l2.state(SystemTime::now()));
        });
        rx.recv_timeout(Duration::from_secs(20)).expect("reading the lock's state never returned")
    }

    /// A `.consolidate-lock` planted as a link (a cloned repository's agent memory) is never
    /// written through: acquiring and rolling back refuse with a message saying to remove it,
    /// and the file it points at keeps its text and its date.
    #[cfg(unix)]
    #[test]
    fn a_lock_that_is_a_link_or_a_hard_link_is_refused_and_its_target_untouched() {
        let d = tempfile::tempdir().unwrap();
        let l = lock_in(&d);
        fs::create_dir_all(l.path().parent().unwrap()).unwrap();
        let victim = d.path().join("bashrc");
        let check_victim = || {
            assert_eq!(fs::read_to_string(&victim).unwrap(), "export PATH=/usr/bin\n", "the target's text is kept");
            assert_eq!(mtime_secs(&victim), 1_600_000_000, "and its date");
        };
        let clock = FixedClock::at_unix_secs(1_800_000_000);
        for link in [true, false] {
            fs::write(&victim, "export PATH=/usr/bin\n").unwrap();
            filetime::set_file_mtime(&victim, FileTime::from_unix_time(1_600_000_000, 0)).unwrap();
            let _ = fs::remove_file(l.path());
            if link {
                std::os::unix::fs::symlink(&victim, l.path()).unwrap();
            } else {
                fs::hard_link(&victim, l.path()).unwrap();
            }
            let err = l.try_acquire(&clock).expect_err("refused");
            let what = if link { "a symbolic link" } else { "a hard link to another file" };
            assert_eq!(
                err.to_string(),
                format!(
                    "could not {} the dream lock {}: it is {what}, not the plain file a dream lock is; remove it and dream again (a new lock is created)",
                    if link { "use" } else { "write" },
                    l.path().display()
                )
            );
            assert!(!l.running_here());
            check_victim();
            let err = l.rollback(&Acquired { prior_mtime_ns: 1_700_000_000_000_000_000, acquired_at_ns: 0, extra: Default::default() }).expect_err("refused");
            assert!(err.to_string().contains(what), "{err}");
            check_victim();
            if link {
                let s = l.state(clock.now());
                assert!(!s.exists && !s.held, "{s:?}");
                assert_eq!(l.last_consolidated_at(), None, "the target's date is not the lock's");
            }
        }
    }

    /// A FIFO under the lock's name is reported at once instead of a read that waits for ever.
    #[cfg(unix)]
    #[test]
    fn a_lock_that_is_a_fifo_never_blocks() {
        let d = tempfile::tempdir().unwrap();
        let l = lock_in(&d);
        fs::create_dir_all(l.path().parent().unwrap()).unwrap();
        assert!(Command::new("mkfifo").arg(l.path()).status().unwrap().success());
        let s = state_in_time(&l);
        assert!(!s.exists && !s.held, "{s:?}");
        let err = l.try_acquire(&FixedClock::at_unix_secs(1_800_000_000)).expect_err("refused");
        assert!(err.to_string().contains("it is a FIFO, socket or device, not the plain file"), "{err}");
    }

    /// The body is read only as far as a PID could reach: what lies past the first 4 KiB is
    /// never read (a lock linked to a device or grown huge costs nothing), so digits hidden
    /// behind that many blanks are not seen.
    #[test]
    fn only_the_start_of_the_body_is_read() {
        let d = tempfile::tempdir().unwrap();
        let l = lock_in(&d);
        write_lock(&l, "4242", 1_700_000_000);
        assert_eq!(l.state(SystemTime::now()).holder_pid, Some(4242));
        write_lock(&l, &format!("{}4242", " ".repeat(BODY_CAP as usize)), 1_700_000_000);
        assert_eq!(l.state(SystemTime::now()).holder_pid, None);
    }

    /// Times past the year 2554 (beyond u64 nanoseconds) come back as they were, instead of
    /// wrapping to another date that a rollback would then stamp on the lock.
    #[test]
    fn far_times_convert_back_unchanged() {
        let year_10000 = SystemTime::UNIX_EPOCH + Duration::new(253_402_300_800 + 400 * 86_400, 123);
        for t in [year_10000, UNIX_EPOCH + Duration::from_secs(1_700_000_000), UNIX_EPOCH - Duration::new(86_400, 5)] {
            assert_eq!(system_time_of_ns(ns_since_epoch(t)), Some(t));
        }
        assert_eq!(system_time_of_ns(i128::MAX), None);
    }

    #[test]
    fn the_guard_serializes_and_releases() {
        let d = tempfile::tempdir().unwrap();
        let guard = d.path().join("data/dreams/x/acquire.lock");
        let l = lock_in(&d).with_guard(&guard);
        let clock = FixedClock::at_unix_secs(1_800_000_000);
        let a = l.try_acquire(&clock).unwrap().unwrap();
        assert!(guard.exists());
        l.rollback(&a).unwrap();
        l.finished();
        // Released on return: a second acquisition does not deadlock.
        assert!(l.try_acquire(&clock).unwrap().is_ok());
        l.finished();
    }
}
