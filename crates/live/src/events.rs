//! The file watcher both shells run: it tells the UI when Claude Code (or anyone) changes files
//! Mneme shows, so the UI reloads instead of showing stale memory (`mneme serve` sends each
//! batch as a Server-Sent Event, the desktop shell as a typed window event).
//!
//! Watched: `<config home>/projects` (recursively: every project's memory folder), the config
//! home itself (non-recursively: `CLAUDE.md`, `settings.json`, …), and for each `watch_project` call the
//! project's memory folder (recursively, for a memory folder set elsewhere by
//! `autoMemoryDirectory`), the project folder (non-recursively: its CLAUDE.md files) and its
//! `.claude` folder (rules, local settings). Changes are gathered for 300 ms and sent as one
//! list of paths; an empty list means "too much changed to name; reload everything". In the
//! project folder only what can change what Claude Code loads reaches pages (its instruction
//! files, `.claude`, `.git`, a sub-folder coming or going, a file a view includes from there):
//! builds and tools write there all the time. Likewise in the config home only the entries
//! Mneme reads (`DependsOn::config_folder`): a running Claude Code writes its credentials,
//! backups, session and telemetry files there (its `history.jsonl`, like every `.jsonl` name,
//! is dropped before anyone hears of it).
//!
//! The watcher also keeps the api's [`ContextCache`]: building a view adds flat watches on the
//! folders its dependencies lie in (every folder above the project, their `.claude`, the
//! settings files' folders, …; `mneme_api::ContextCache` has the rules), and each batch is handed to
//! the cache before anyone hears of it, so a page reloading on the event never gets a view the
//! batch made stale. Pages then hear only of the paths they may show: those in the folders the
//! shell asked for and those a view depended on, not the rest of what the cache's flat watches
//! see (every command a shell runs rewrites its history file in the home folder).
//!
//! Each view holds the watches it needs (a ticket per view); once no kept view holds a watch
//! and the shell did not ask for its folder, it is removed, so inotify watches do not pile up.
//! A folder removed or renamed takes its watches along: they are dropped (the kernel watches an
//! inode, not a name), and the next view, or the shell's folder once it exists again, watches
//! the new folder. Folders waited for are looked for after each batch and every second, and the
//! folders in use are checked to still be the ones watched (a drive unmounted ends its watches
//! without an event): the same device, inode and, on Linux, mount (a drive unmounted and
//! mounted again within that second comes back with the same device and inode numbers on
//! tmpfs, but on another mount, and the watch on the old one is dead).
//!
//! A drive mounted *below* a folder watched recursively (a project's `.claude/rules/shared` on
//! a USB stick, a memory folder's sub-folder on a tmpfs) is checked the same second: the kernel
//! marks `/proc/self/mountinfo` (kept open) when any mount comes or goes, and only then are the
//! mount points below the recursive watches looked at (their device, inode and unique mount id
//! against those last seen). A mount point whose drive came, went or was mounted again is
//! watched afresh (unmounted, the folder under it; mounted, the drive's folders) and goes out in
//! the batch as a folder that changed, so views built on it are dropped and pages look again.
//! Without `/proc` (not Linux) this check does not run; on kernels before 6.8, which have no
//! unique mount id, a drive unmounted and mounted again within the same second can look the same.

use mneme_api::{ContextCache, DependsOn, DependsOnIndex, Environment, FolderWatch};
use notify::event::{CreateKind, ModifyKind, RemoveKind};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, watch};

/// How long changes are gathered before one event goes out: an editor's save or Claude
/// Code's write is several file-system events, and the UI should reload once.
const DEBOUNCE: Duration = Duration::from_millis(300);

/// How often, when nothing else happens, folders waited for (a fresh machine's
/// `~/.claude/projects`) are looked for, and the folders in use checked to be the ones watched:
/// no watch sees a folder appear that no watch covers, and a drive unmounted (a USB stick, a
/// network share) ends its watches without any event notify passes on (it drops inotify's
/// `IN_UNMOUNT`), so only a look at the folder tells.
const PENDING_RETRY: Duration = Duration::from_secs(1);

/// How many watches no kept view holds are kept anyway, the most recent ones: a view dropped
/// by a change is built again as soon as the page reloads, on the same folders.
const IDLE_KEPT: usize = 1024;

/// The watcher and its subscribers' channel.
pub struct Events {
    tx: broadcast::Sender<Arc<Vec<PathBuf>>>,
    stop: watch::Receiver<bool>,
    watched: Arc<Mutex<Watched>>,
    cache: Arc<ContextCache>,
}

/// One watch on a folder.
struct Watch {
    mode: RecursiveMode,
    /// Its number (1, 2, …): the watches added before it are the lower ones.
    number: u64,
    /// How many tickets of the context cache hold it.
    refs: usize,
    /// The shell asked for it (or for a folder it covers): kept until its folder goes.
    pinned: bool,
    /// The folder's identity when watched: the kernel watches the inode, so a folder removed
    /// and created again under the same name is not watched by it any more.
    id: Option<FolderId>,
}

struct Watched {
    watcher: RecommendedWatcher,
    /// Folders being watched, by folder (a folder may be watched flat and recursively).
    active: BTreeMap<PathBuf, Vec<Watch>>,
    /// How many watches were ever added: the newest one's number.
    added: u64,
    /// Folders to watch once they exist (a fresh machine has no `projects` folder yet).
    pending: Vec<(PathBuf, RecursiveMode)>,
    /// The folders the shell asked for, in order: what `watched` lists. The context cache's
    /// many flat watches (every folder above a project, …) are bookkeeping, not shown.
    shown: Vec<(PathBuf, RecursiveMode)>,
    /// What in the folders the shell asked for pages may show: everything in the memory
    /// folders and a project's `.claude`, but in a project folder only what can change what
    /// Claude Code loads (a build writing `build.log` there would otherwise reload every page
    /// at every build), and in the config home only what Mneme reads (Claude Code writes there
    /// at every prompt).
    asked: DependsOnIndex,
    /// Everything the context cache's views ever depended on (kept after a view is dropped:
    /// a page may still show it). With `shown`, what a change must touch to be sent on: the
    /// cache's watches on folders above a project see every file there (a shell's history in
    /// the home folder), and pages should not reload for those.
    interests: DependsOnIndex,
    /// The watches each ticket the cache holds stands for (folder and number).
    tickets: HashMap<u64, Vec<(PathBuf, u64)>>,
    /// How many tickets were ever given.
    issued: u64,
    /// The mounts below the recursive watches, to notice a drive coming or going there.
    mounts: Mounts,
}

/// Whether a watch on `p` as `m` covers `dir` as `mode` asks.
fn covers(p: &Path, m: RecursiveMode, dir: &Path, mode: RecursiveMode) -> bool {
    (p == dir && (m == mode || m == RecursiveMode::Recursive)) || (m == RecursiveMode::Recursive && dir.starts_with(p))
}

/// A folder as the kernel knows it: its device, its inode and the mount it was reached
/// through. Device and inode alone miss a drive unmounted and mounted again: tmpfs numbers its
/// device and inodes afresh the same way each time, so the same folders made again in the same
/// order compare equal, and so may a bind mount or a disk image mounted again; the watch on the
/// old mount is dead all the same. The mount is the kernel's unique id where it has one (Linux
/// 6.8): the short id of `/proc/self/mountinfo` is handed to the next mount as soon as it is
/// free, and is what older kernels give.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct FolderId {
    dev: u64,
    ino: u64,
    /// `None` where the system does not say (not Linux, or no `statx`).
    mount: Option<u64>,
}

/// `STATX_MNT_ID_UNIQUE` (Linux 6.8), which rustix does not name; an older kernel ignores the
/// bit and answers `STATX_MNT_ID`'s reused id instead.
#[cfg(target_os = "linux")]
const STATX_MNT_ID_UNIQUE: u32 = 0x4000;

/// The identity of a folder, following links as the watch does; `None` also when its drive does
/// not answer (`crate::drive`): the watcher's lock is held here, and a blocked look would stop
/// every project's views and pages with it.
fn identity(dir: &Path) -> Option<FolderId> {
    crate::drive::look(dir, identity_now).flatten()
}

/// Whether `dir` is a folder, `false` when its drive does not answer (see [`identity`]).
fn is_dir(dir: &Path) -> bool {
    crate::drive::look(dir, Path::is_dir) == Some(true)
}

/// The identity of a folder, looked at here (it blocks while the drive does not answer).
#[cfg(target_os = "linux")]
fn identity_now(dir: &Path) -> Option<FolderId> {
    use rustix::fs::{statx, AtFlags, StatxFlags, CWD};
    let mask = StatxFlags::BASIC_STATS | StatxFlags::MNT_ID | StatxFlags::from_bits_retain(STATX_MNT_ID_UNIQUE);
    match statx(CWD, dir, AtFlags::empty(), mask) {
        Ok(x) => {
            let mounted = x.stx_mask & (StatxFlags::MNT_ID.bits() | STATX_MNT_ID_UNIQUE) != 0;
            let dev = (u64::from(x.stx_dev_major) << 32) | u64::from(x.stx_dev_minor);
            Some(FolderId { dev, ino: x.stx_ino, mount: mounted.then_some(x.stx_mnt_id) })
        }
        // No statx (a kernel before 4.11, a sandbox that forbids it): device and inode only.
        Err(rustix::io::Errno::NOSYS | rustix::io::Errno::PERM) => plain_identity(dir),
        Err(_) => None,
    }
}

#[cfg(not(target_os = "linux"))]
fn identity_now(dir: &Path) -> Option<FolderId> {
    plain_identity(dir)
}

/// Device and inode from `stat`, no mount.
fn plain_identity(dir: &Path) -> Option<FolderId> {
    std::fs::metadata(dir).ok().map(|m| FolderId { dev: m.dev(), ino: m.ino(), mount: None })
}

impl Watched {
    fn new(watcher: RecommendedWatcher) -> Watched {
        Watched {
            watcher,
            active: BTreeMap::new(),
            added: 0,
            pending: Vec::new(),
            shown: Vec::new(),
            asked: DependsOnIndex::default(),
            interests: DependsOnIndex::default(),
            tickets: HashMap::new(),
            issued: 0,
            mounts: Mounts::open(),
        }
    }

    /// Whether a change at `path` (`folder`: it may be a folder) is one the pages may show:
    /// what matters in a folder the shell asked for, or something a context view depended on
    /// (a file a project's CLAUDE.md includes from the project folder is one of those).
    fn shows(&self, path: &Path, folder: bool) -> bool {
        self.asked.concerns_change(path, folder) || self.interests.concerns_change(path, folder)
    }

    /// The shell asks for `dir` as `mode`, of which pages show `shows`: watched as
    /// [`Watched::add`] does.
    fn ask(&mut self, dir: &Path, mode: RecursiveMode, shows: Vec<DependsOn>) -> bool {
        self.asked.extend(shows);
        self.add(dir, mode)
    }

    /// The shell asks for `dir` as `mode`, all of which pages may show.
    fn ask_all(&mut self, dir: &Path, mode: RecursiveMode) -> bool {
        let dep = DependsOn { dir: dir.to_path_buf(), recursive: mode == RecursiveMode::Recursive, entry: None, folders_only: false };
        self.ask(dir, mode, vec![dep])
    }

    /// Watches `dir` now if it exists, else as soon as it appears. Answers whether it is
    /// watched now.
    fn add(&mut self, dir: &Path, mode: RecursiveMode) -> bool {
        let listed = self.shown.iter().any(|(p, m)| covers(p, *m, dir, mode));
        if !listed {
            self.shown.push((dir.to_path_buf(), mode));
        }
        if let Some((p, n)) = self.covering(dir, mode) {
            // The shell relies on it now: it stays when the cache lets go of it.
            if let Some(w) = self.watch_mut(&p, n) {
                w.pinned = true;
            }
            return true;
        }
        if self.pending.iter().any(|(p, m)| p == dir && *m == mode) {
            return false;
        }
        if is_dir(dir) && self.watch_now(dir, mode, true) {
            return true;
        }
        self.pending.push((dir.to_path_buf(), mode));
        false
    }

    /// The folder and number of the oldest active watch that covers `dir` as `mode` asks.
    fn covering(&self, dir: &Path, mode: RecursiveMode) -> Option<(PathBuf, u64)> {
        let mut best: Option<(PathBuf, u64)> = None;
        for p in dir.ancestors() {
            let Some(ws) = self.active.get(p) else { continue };
            for w in ws.iter().filter(|w| covers(p, w.mode, dir, mode)) {
                if best.as_ref().is_none_or(|(_, n)| w.number < *n) {
                    best = Some((p.to_path_buf(), w.number));
                }
            }
        }
        best
    }

    fn watch_mut(&mut self, dir: &Path, number: u64) -> Option<&mut Watch> {
        self.active.get_mut(dir)?.iter_mut().find(|w| w.number == number)
    }

    fn watch_now(&mut self, dir: &Path, mode: RecursiveMode, pinned: bool) -> bool {
        let id = identity(dir);
        // notify looks at the folder on its own thread, which every watch of every project
        // waits on: never asked about a folder whose drive does not answer.
        if id.is_none() && !crate::drive::answers(dir) {
            return false;
        }
        if self.watcher.watch(dir, mode).is_err() {
            return false;
        }
        self.added += 1;
        self.active.entry(dir.to_path_buf()).or_default().push(Watch { mode, number: self.added, refs: 0, pinned, id });
        if mode == RecursiveMode::Recursive {
            // What the walk just watched is what a later change of these mounts is told from.
            self.mounts.note_below(dir);
        }
        true
    }

    /// Whether another active watch (`live_only`: one still needed) shares notify's record of
    /// a folder with one on `dir` as `mode` (the same folder; one watching the other's folder
    /// recursively), so removing this one from notify would remove that one's too. An idle
    /// watch asks while it is active itself, and does not count (it is not needed).
    fn overlaps_other(&self, dir: &Path, mode: RecursiveMode, live_only: bool) -> bool {
        let counts = |w: &Watch| !live_only || w.pinned || w.refs > 0;
        let same = self.active.get(dir).is_some_and(|ws| ws.iter().any(counts));
        let above = dir.ancestors().skip(1).any(|a| {
            self.active.get(a).is_some_and(|ws| ws.iter().any(|w| w.mode == RecursiveMode::Recursive && counts(w)))
        });
        let below = mode == RecursiveMode::Recursive
            && self
                .active
                .range::<Path, _>((std::ops::Bound::Excluded(dir), std::ops::Bound::Unbounded))
                .take_while(|(p, _)| p.starts_with(dir))
                .any(|(_, ws)| ws.iter().any(counts));
        same || above || below
    }

    /// `path` was removed or renamed (or a folder watched there is another one now): every
    /// watch at or below it watches nothing, or the folder under its new name, and goes; the
    /// shell's own come back once their folder exists again. Notify has forgotten a removed
    /// folder's watch itself; one whose folder moved away is removed here.
    fn forget_below(&mut self, path: &Path) {
        let gone: Vec<PathBuf> = self
            .active
            .range::<Path, _>((std::ops::Bound::Included(path), std::ops::Bound::Unbounded))
            .take_while(|(p, _)| p.starts_with(path))
            .map(|(p, _)| p.clone())
            .collect();
        if gone.is_empty() {
            return;
        }
        let removed: Vec<(PathBuf, Vec<Watch>)> = gone.into_iter().filter_map(|p| self.active.remove(&p).map(|ws| (p, ws))).collect();
        for (dir, ws) in &removed {
            for w in ws {
                // A recursive watch above (not removed) keeps notify's record of this folder.
                if !self.overlaps_other(dir, w.mode, false) {
                    let _ = self.watcher.unwatch(dir);
                }
            }
        }
        // The shell's folders no watch covers now are waited for again.
        let uncovered: Vec<(PathBuf, RecursiveMode)> =
            self.shown.iter().filter(|(p, m)| self.covering(p, *m).is_none()).cloned().collect();
        for (dir, mode) in uncovered {
            if !self.pending.iter().any(|(p, m)| *p == dir && *m == mode) {
                self.pending.push((dir, mode));
            }
        }
    }

    /// Drops the watches no ticket holds and the shell did not ask for, beyond the
    /// [`IDLE_KEPT`] most recent (a view dropped by a change is built again at once, and would
    /// otherwise be built twice: once to add its watches again, once after them), except where
    /// notify keeps one record for such a watch and one still needed.
    fn sweep(&mut self) {
        let mut idle: Vec<(u64, PathBuf, RecursiveMode)> = self
            .active
            .iter()
            .flat_map(|(p, ws)| ws.iter().filter(|w| w.refs == 0 && !w.pinned).map(move |w| (w.number, p.clone(), w.mode)))
            .collect();
        if idle.len() <= IDLE_KEPT {
            return;
        }
        idle.sort();
        let excess = idle.len() - IDLE_KEPT;
        let is_idle = |w: &Watch| w.refs == 0 && !w.pinned;
        // The oldest first; with each, every idle watch sharing a notify record with it (removing
        // one removes the other's record too).
        let mut gone: BTreeSet<(PathBuf, u64)> = BTreeSet::new();
        for (number, dir, mode) in idle {
            if gone.len() >= excess {
                break;
            }
            if gone.contains(&(dir.clone(), number)) {
                continue;
            }
            let mut group: BTreeMap<(PathBuf, u64), RecursiveMode> = BTreeMap::new();
            let mut todo = vec![(dir, mode, number)];
            while let Some((dir, mode, number)) = todo.pop() {
                if group.insert((dir.clone(), number), mode).is_some() {
                    continue;
                }
                let mut linked: Vec<(PathBuf, RecursiveMode, u64)> = Vec::new();
                let mut take = |p: &Path, ws: &Vec<Watch>, recursive_only: bool| {
                    for w in ws.iter().filter(|w| is_idle(w) && (!recursive_only || w.mode == RecursiveMode::Recursive)) {
                        linked.push((p.to_path_buf(), w.mode, w.number));
                    }
                };
                if let Some(ws) = self.active.get(&dir) {
                    take(&dir, ws, false);
                }
                for a in dir.ancestors().skip(1) {
                    if let Some(ws) = self.active.get(a) {
                        take(a, ws, true);
                    }
                }
                if mode == RecursiveMode::Recursive {
                    let below = self.active.range::<Path, _>((std::ops::Bound::Excluded(dir.as_path()), std::ops::Bound::Unbounded));
                    for (p, ws) in below.take_while(|(p, _)| p.starts_with(&dir)) {
                        take(p, ws, false);
                    }
                }
                todo.extend(linked.into_iter().filter(|(p, _, n)| !group.contains_key(&(p.clone(), *n))));
            }
            // Kept whole while any of them shares a record with a watch still needed.
            if group.iter().all(|((p, _), m)| !self.overlaps_other(p, *m, true)) {
                gone.extend(group.into_keys());
            }
        }
        for (dir, number) in gone {
            if let Some(ws) = self.active.get_mut(&dir) {
                ws.retain(|w| w.number != number);
                if ws.is_empty() {
                    self.active.remove(&dir);
                }
            }
            // Already gone when another idle one of the same folder was removed first.
            let _ = self.watcher.unwatch(&dir);
        }
    }

    /// The mount points below a recursive watch whose drive came, went or was mounted again
    /// since the last look, each watched afresh: notify walked the folder that was there when
    /// the tree was watched, and the kernel tells nothing of a mount (an unmount ends the
    /// watches on the drive with `IN_UNMOUNT`, which notify drops). Only when the mount table
    /// changed, so this costs one `poll` a second otherwise.
    fn remount_below(&mut self) -> Vec<PathBuf> {
        let roots: Vec<PathBuf> =
            self.active.iter().filter(|(_, ws)| ws.iter().any(|w| w.mode == RecursiveMode::Recursive)).map(|(p, _)| p.clone()).collect();
        let moved = self.mounts.moved(&roots);
        for m in &moved {
            // Re-walks the folder at the mount point as it is now; notify's records below it
            // are replaced, and go with the tree's own watch when that is removed. A folder gone
            // with its drive is not watched (nothing is there to watch), nor one whose drive does
            // not answer (notify's thread would block on it).
            if crate::drive::answers(m) {
                let _ = self.watcher.watch(m, RecursiveMode::Recursive);
            }
        }
        moved
    }

    /// Watches the folders waited for that exist now; answers those.
    fn retry_pending(&mut self) -> Vec<PathBuf> {
        let mut now = Vec::new();
        for (dir, mode) in std::mem::take(&mut self.pending) {
            if self.add(&dir, mode) {
                now.push(dir);
            }
        }
        now
    }
}

impl Events {
    /// Starts watching Claude Code's config home. Must run inside a tokio runtime.
    pub fn start(env: &Environment, stop: watch::Receiver<bool>) -> Result<Events, notify::Error> {
        let (raw_tx, raw_rx) = mpsc::unbounded_channel::<notify::Result<notify::Event>>();
        let watcher = notify::recommended_watcher(move |res| {
            // The receiver only goes away when the server stops.
            let _ = raw_tx.send(res);
        })?;
        let watched = Arc::new(Mutex::new(Watched::new(watcher)));
        {
            let mut w = lock(&watched);
            w.ask_all(&env.projects_dir(), RecursiveMode::Recursive);
            // A running Claude Code writes its credentials, backups, session and telemetry
            // files there: only the entries Mneme reads reach pages.
            let config = env.config_home();
            w.ask(&config, RecursiveMode::NonRecursive, DependsOn::config_folder(&config));
        }
        let (tx, _) = broadcast::channel(256);
        let cache = Arc::new(ContextCache::new(Arc::new(Watches(watched.clone()))));
        tokio::spawn(debounce(raw_rx, tx.clone(), watched.clone(), cache.clone(), stop.clone()));
        Ok(Events { tx, stop, watched, cache })
    }

    /// The context cache this watcher keeps current (the shells hand it to the api's
    /// operations through `Host::context_cache`).
    pub fn context_cache(&self) -> &ContextCache {
        &self.cache
    }

    /// Each batch of changed paths from now on (empty: reload everything).
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<Vec<PathBuf>>> {
        self.tx.subscribe()
    }

    /// Fires once the watcher has been told to stop (the stop signal given to [`Events::start`]),
    /// so long-lived listeners such as an event stream can end.
    pub fn stop_signal(&self) -> watch::Receiver<bool> {
        self.stop.clone()
    }

    /// Adds one project's folders; returns every folder now watched or waiting to exist.
    pub fn watch_project(&self, cwd: &Path, memory_dir: &Path) -> Vec<PathBuf> {
        let mut w = lock(&self.watched);
        w.ask_all(memory_dir, RecursiveMode::Recursive);
        // The project folder holds builds' and tools' files too: only its instruction entries,
        // `.claude`, `.git` and sub-folders matter (its includes, through the views).
        w.ask(cwd, RecursiveMode::NonRecursive, DependsOn::project_folder(cwd));
        let dot_claude = cwd.join(".claude");
        if is_dir(&dot_claude) {
            w.ask_all(&dot_claude, RecursiveMode::Recursive);
        }
        w.shown.iter().map(|(p, _)| p.clone()).collect()
    }
}

/// One folder the live watcher covers (the api's type: `watching` answers with it).
pub use mneme_api::ops::WatchedFolder;

impl Events {
    /// Every folder the shell asked to watch, in the order it asked, each watched now or
    /// waiting to exist (the context cache's own watches are not listed).
    pub fn watched(&self) -> Vec<WatchedFolder> {
        let w = lock(&self.watched);
        w.shown
            .iter()
            .map(|(p, m)| WatchedFolder {
                path: p.clone(),
                recursive: *m == RecursiveMode::Recursive,
                active: w.covering(p, *m).is_some(),
            })
            .collect()
    }
}

/// The watcher as the context cache sees it.
struct Watches(Arc<Mutex<Watched>>);

impl FolderWatch for Watches {
    fn generation(&self) -> u64 {
        lock(&self.0).added
    }

    fn cover(&self, folders: &[DependsOn]) -> Option<(u64, u64)> {
        let mut w = lock(&self.0);
        // Recorded even when a folder cannot be watched: the page still shows that view.
        w.interests.extend(folders.iter().cloned());
        let mut newest = 0;
        let mut held: Vec<(PathBuf, u64)> = Vec::new();
        // Watches are per folder; many dependencies name entries of the same one.
        let unique: BTreeSet<(&Path, bool)> = folders.iter().map(|f| (f.dir.as_path(), f.recursive)).collect();
        for (dir, recursive) in unique {
            let mode = if recursive { RecursiveMode::Recursive } else { RecursiveMode::NonRecursive };
            let mut found = w.covering(dir, mode);
            // A folder removed and made again (or another moved in) is another inode: the
            // watch on the old one sees nothing of it, in case its events were missed.
            if let Some((p, n)) = &found {
                let id = w.watch_mut(p, *n).and_then(|w| w.id);
                if id.is_none() || id != identity(p) {
                    let p = p.clone();
                    w.forget_below(&p);
                    found = None;
                }
            }
            let (p, n) = match found {
                Some(found) => found,
                // Could not be watched (gone since, or out of inotify watches): the view that
                // needs it is not kept.
                None if !w.watch_now(dir, mode, false) => {
                    w.let_go(held);
                    return None;
                }
                None => (dir.to_path_buf(), w.added),
            };
            if let Some(watch) = w.watch_mut(&p, n) {
                watch.refs += 1;
            }
            held.push((p, n));
            newest = newest.max(n);
        }
        w.issued += 1;
        let ticket = w.issued;
        w.tickets.insert(ticket, held);
        Some((newest, ticket))
    }

    fn release(&self, ticket: u64) {
        let mut w = lock(&self.0);
        if let Some(held) = w.tickets.remove(&ticket) {
            w.let_go(held);
        }
    }
}

impl Watched {
    /// Lets go of watches a ticket held (those gone since are skipped), and drops the idle.
    fn let_go(&mut self, held: Vec<(PathBuf, u64)>) {
        for (p, n) in held {
            if let Some(w) = self.watch_mut(&p, n) {
                w.refs = w.refs.saturating_sub(1);
            }
        }
        self.sweep();
    }
}

/// The mount table as last seen, for the mounts below recursive watches (see the module's
/// header). Mount points are the kernel's spelling (no links); a watched folder reached through
/// a link is matched by its real path and answered in its own spelling.
#[derive(Default)]
struct Mounts {
    /// `/proc/self/mountinfo`, kept open: `poll` on it says whether any mount came or went
    /// since the last `poll` (the kernel keeps a count per open file).
    #[cfg(target_os = "linux")]
    table: Option<std::fs::File>,
    /// Every mount point in the table when last read.
    points: Vec<PathBuf>,
    /// The mount points below the recursive watches (as the watches spell them), with their
    /// identity when last looked at.
    seen: BTreeMap<PathBuf, Option<FolderId>>,
}

impl Mounts {
    #[cfg(target_os = "linux")]
    fn open() -> Mounts {
        let table = std::fs::File::open(MOUNTINFO).ok();
        let points = if table.is_some() { crate::drive::read_mount_points().unwrap_or_default() } else { Vec::new() };
        Mounts { table, points, seen: BTreeMap::new() }
    }

    #[cfg(not(target_os = "linux"))]
    fn open() -> Mounts {
        Mounts::default()
    }

    /// Whether the mount table changed since the last call (`false` where it cannot tell).
    #[cfg(target_os = "linux")]
    fn table_changed(&self) -> bool {
        use rustix::event::{poll, PollFd, PollFlags, Timespec};
        let Some(table) = &self.table else { return false };
        let mut fds = [PollFd::new(table, PollFlags::PRI)];
        // The kernel always reports it readable; a change adds POLLPRI and POLLERR.
        poll(&mut fds, Some(&Timespec { tv_sec: 0, tv_nsec: 0 })).is_ok() && fds[0].revents().intersects(PollFlags::PRI | PollFlags::ERR)
    }

    #[cfg(not(target_os = "linux"))]
    fn table_changed(&self) -> bool {
        false
    }

    /// The mount points strictly below `root`, each as `root` spells it; none while `root`'s
    /// drive does not answer (finding its real path looks at every folder on the way, which
    /// would hold the watcher's batches until the drive answers).
    fn below<'a>(points: &'a [PathBuf], root: &'a Path) -> impl Iterator<Item = PathBuf> + 'a {
        let real = crate::drive::look(root, |r| std::fs::canonicalize(r).ok()).flatten();
        points.iter().filter_map(move |m| {
            let rest = m.strip_prefix(real.as_deref()?).ok()?;
            (!rest.as_os_str().is_empty()).then(|| root.join(rest))
        })
    }

    /// `dir` was just watched recursively: the mounts below it are as the watch found them.
    fn note_below(&mut self, dir: &Path) {
        let found: Vec<PathBuf> = Mounts::below(&self.points, dir).collect();
        for m in found {
            let id = identity(&m);
            self.seen.insert(m, id);
        }
    }

    /// The mount points below `roots` that came, went or changed drive since the last look, when
    /// the table changed at all.
    fn moved(&mut self, roots: &[PathBuf]) -> Vec<PathBuf> {
        if !self.table_changed() {
            return Vec::new();
        }
        #[cfg(target_os = "linux")]
        {
            // Unreadable once open (it should not be): this change is missed, the next is seen.
            let Some(points) = crate::drive::read_mount_points() else { return Vec::new() };
            self.points = points;
        }
        let now: BTreeMap<PathBuf, Option<FolderId>> =
            roots.iter().flat_map(|r| Mounts::below(&self.points, r).collect::<Vec<_>>()).map(|m| (m.clone(), identity(&m))).collect();
        let under_a_root = |m: &Path| roots.iter().any(|r| m.starts_with(r) && m != r);
        let mut moved: BTreeSet<PathBuf> = now.iter().filter(|(m, id)| self.seen.get(*m) != Some(id)).map(|(m, _)| m.clone()).collect();
        // Gone from the table: unmounted (a tree no longer watched has no say).
        moved.extend(self.seen.keys().filter(|m| !now.contains_key(*m) && under_a_root(m)).cloned());
        self.seen = now;
        moved.into_iter().collect()
    }
}

#[cfg(target_os = "linux")]
const MOUNTINFO: &str = "/proc/self/mountinfo";

/// A poisoned lock only means a watch call panicked; the watcher itself is still usable.
fn lock(m: &Mutex<Watched>) -> std::sync::MutexGuard<'_, Watched> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Whether a changed path is worth telling the UI about.
fn interesting(path: &Path) -> bool {
    let name = path.file_name().map(|n| n.to_string_lossy()).unwrap_or_default();
    // Session transcripts under projects/ change on every turn of every running session
    // and are not shown; Mneme's own temporary files vanish within the same save.
    !(name.ends_with(".jsonl") || (name.starts_with(".mneme-") && name.ends_with(".tmp")))
}

/// A path as pages get it: a name that is not UTF-8 cannot be sent as JSON (the event stream,
/// the desktop window's event), so it goes with its bytes replaced (U+FFFD); a page only
/// compares it with the folders it shows.
fn for_pages(path: &Path) -> PathBuf {
    match path.to_str() {
        Some(_) => path.to_path_buf(),
        None => PathBuf::from(path.to_string_lossy().into_owned()),
    }
}

/// What one gathering of events holds.
#[derive(Default)]
struct Batch {
    /// Each changed path, and whether it may be a folder (see `ContextCache::changed`).
    paths: BTreeMap<PathBuf, bool>,
    /// Paths removed or renamed (away or over): watches at or below them are stale.
    gone: BTreeSet<PathBuf>,
    /// The watcher lost track: reload everything.
    overflow: bool,
}

async fn debounce(
    mut raw: mpsc::UnboundedReceiver<notify::Result<notify::Event>>,
    tx: broadcast::Sender<Arc<Vec<PathBuf>>>,
    watched: Arc<Mutex<Watched>>,
    cache: Arc<ContextCache>,
    mut stop: watch::Receiver<bool>,
) {
    // Once this task ends nobody tells the cache about changes: it must keep nothing.
    struct CloseOnExit(Arc<ContextCache>);
    impl Drop for CloseOnExit {
        fn drop(&mut self) {
            self.0.close();
        }
    }
    let _close = CloseOnExit(cache.clone());
    loop {
        let mut batch = Batch::default();
        tokio::select! {
            first = raw.recv() => match first {
                Some(e) => collect(e, &mut batch),
                None => return,
            },
            _ = stop.changed() => return,
            // Nothing watched sees a folder waited for appear, or a drive go away: look now
            // and then (a stat per folder in use, so this costs next to nothing).
            _ = tokio::time::sleep(PENDING_RETRY) => {}
        }
        let deadline = tokio::time::Instant::now() + DEBOUNCE;
        while let Ok(Some(e)) = tokio::time::timeout_at(deadline, raw.recv()).await {
            collect(e, &mut batch);
        }
        // The looks at folders block while a drive does not answer (up to `drive::PATIENCE`
        // each): off the async workers, which serve every other request meanwhile.
        let looked = {
            let watched = watched.clone();
            tokio::task::spawn_blocking(move || {
                let appeared = look_after(&watched, &mut batch);
                (appeared, batch)
            })
            .await
        };
        // Panicked: ends as a panic here did before (the cache closes).
        let Ok((appeared, mut batch)) = looked else { return };
        // A folder watched only now may hold what pages have not heard of: they reload it.
        for dir in appeared {
            batch.paths.entry(dir).or_insert(true);
        }
        if batch.paths.is_empty() && !batch.overflow {
            continue;
        }
        let changes: Vec<(PathBuf, bool)> = if batch.overflow { Vec::new() } else { batch.paths.into_iter().collect() };
        // The cache first, so a page reloading on this batch gets fresh views.
        cache.changed(&changes);
        // Pages hear only of changes they may show (an empty batch: everything).
        let shown: Vec<PathBuf> = {
            let w = lock(&watched);
            changes.iter().filter(|(p, folder)| w.shows(p, *folder)).map(|(p, _)| for_pages(p)).collect()
        };
        if batch.overflow || !shown.is_empty() {
            // No subscribers is fine: nobody has the page open.
            let _ = tx.send(Arc::new(shown));
        }
    }
}

/// What a batch asks of the watches: removed folders forgotten, drives mounted or unmounted
/// below a tree watched afresh, folders no longer the ones watched forgotten (each added to the
/// batch), and folders waited for watched once they exist (answered). The folders' identities
/// are looked at without the lock, so a drive that does not answer holds up no other project's
/// views or requests.
fn look_after(watched: &Mutex<Watched>, batch: &mut Batch) -> Vec<PathBuf> {
    let in_use: Vec<(PathBuf, Vec<Option<FolderId>>)> = {
        let mut w = lock(watched);
        for path in &batch.gone {
            w.forget_below(path);
        }
        // A drive mounted or unmounted below a watched tree: as a folder that changed.
        for m in w.remount_below() {
            batch.paths.insert(m, true);
        }
        // Removals may be among what an overflow lost: check every watch's folder. Else those
        // in use: an unmounted drive's folders vanish with no event at all.
        w.active
            .iter()
            .filter(|(_, ws)| batch.overflow || ws.iter().any(|x| x.pinned || x.refs > 0))
            .map(|(p, ws)| (p.clone(), ws.iter().map(|x| x.id).collect()))
            .collect()
    };
    // A folder whose drive does not answer counts as gone: its pages look again (and are told
    // the drive does not answer) and it is watched again once the drive answers.
    let stale: Vec<PathBuf> =
        in_use.into_iter().filter(|(p, ids)| ids.iter().any(|id| id.is_none() || *id != identity(p))).map(|(p, _)| p).collect();
    let mut w = lock(watched);
    for p in stale {
        // Watched again meanwhile (a newer watch, its own identity): not this batch's to forget.
        if w.active.get(&p).is_some_and(|ws| ws.iter().all(|x| x.id.is_some() && x.id == identity(&p))) {
            continue;
        }
        w.forget_below(&p);
        // Views built on it are stale and pages showing it should look again.
        batch.paths.insert(p, true);
    }
    // A folder waited for (say `projects`) may have just been created.
    w.retry_pending()
}

fn collect(e: notify::Result<notify::Event>, batch: &mut Batch) {
    match e {
        Ok(e) if e.need_rescan() => batch.overflow = true,
        // Reads (open, close without writing) change nothing.
        Ok(e) if matches!(e.kind, EventKind::Access(_)) => {}
        Ok(e) => {
            let said_folder = matches!(e.kind, EventKind::Create(CreateKind::Folder) | EventKind::Remove(RemoveKind::Folder));
            if matches!(e.kind, EventKind::Remove(_) | EventKind::Modify(ModifyKind::Name(_))) {
                batch.gone.extend(e.paths.iter().cloned());
            }
            for p in e.paths.into_iter().filter(|p| interesting(p)) {
                let folder = said_folder || std::fs::symlink_metadata(&p).is_ok_and(|m| m.is_dir());
                *batch.paths.entry(p).or_insert(false) |= folder;
            }
        }
        // The watcher lost track (queue overflow, a watched folder vanished): say so.
        Err(_) => batch.overflow = true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_api::{ContextRequest, FixedClock, Mneme};
    use mneme_testsupport::TestHome;

    /// The mounts below a watched tree on a drive that stopped answering (an exFAT FUSE drive
    /// whose daemon is stopped; root only) are found without waiting on the drive: none, within
    /// the drive's patience. Before, finding the tree's real path blocked the watcher's batch
    /// until the drive answered.
    #[cfg(target_os = "linux")]
    #[test]
    fn mounts_below_a_tree_on_a_hung_drive_are_found_without_waiting_on_it() {
        let home = TestHome::new();
        let Some(drive) = mneme_testsupport::exfat::Exfat::mount(&home.root.join("drives/stick")) else { return };
        let tree = drive.path().join("memory/deep");
        std::fs::create_dir_all(&tree).unwrap();
        let points = vec![tree.join("mounted")];
        assert_eq!(Mounts::below(&points, &tree).collect::<Vec<_>>(), points, "found while the drive answers");
        let hung = drive.hang(Duration::from_secs(60));
        // Asked until the drive is seen not answering (a look at it takes the drive's
        // patience), by which time the kernel's cached names of the tree have expired too.
        while crate::drive::answers(&tree) {
            std::thread::sleep(Duration::from_millis(100));
        }
        let (tx, rx) = std::sync::mpsc::channel();
        let (p, t) = (points.clone(), tree.clone());
        std::thread::spawn(move || {
            let _ = tx.send(Mounts::below(&p, &t).collect::<Vec<_>>());
        });
        let found = rx.recv_timeout(Duration::from_secs(30)).expect("finding the mounts hung with the drive");
        assert!(found.is_empty(), "{found:?}");
        assert!(!hung.rescued(), "finding the mounts hung with the drive");
        drop(hung);
        drop(drive);
    }

    /// The debounce task over a raw channel the test feeds, with the cache it keeps; real
    /// watches back the cache (their own events go nowhere).
    struct Rig {
        raw: mpsc::UnboundedSender<notify::Result<notify::Event>>,
        batches: broadcast::Receiver<Arc<Vec<PathBuf>>>,
        cache: Arc<ContextCache>,
        stop: watch::Sender<bool>,
        home: TestHome,
        repo: PathBuf,
        mneme: Mneme,
    }

    fn rig() -> Rig {
        let home = TestHome::new();
        let repo = home.git_repo("repo");
        home.write(repo.join("CLAUDE.md"), "Use tabs.\n");
        let watcher = notify::recommended_watcher(|_| {}).unwrap();
        let watched = Arc::new(Mutex::new(Watched::new(watcher)));
        let cache = Arc::new(ContextCache::new(Arc::new(Watches(watched.clone()))));
        let (raw, raw_rx) = mpsc::unbounded_channel();
        let (tx, batches) = broadcast::channel(16);
        let (stop, stop_rx) = watch::channel(false);
        tokio::spawn(debounce(raw_rx, tx, watched, cache.clone(), stop_rx));
        let mneme = Mneme::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_764_400_000)));
        Rig { raw, batches, cache, stop, home, repo, mneme }
    }

    impl Rig {
        /// Builds the view until the cache keeps it (the first build adds the watches).
        fn keep(&self) {
            let req = ContextRequest { cwd: self.repo.clone(), ..Default::default() };
            for _ in 0..3 {
                self.mneme.context_cached(&req, &self.cache).unwrap();
            }
            assert_eq!(self.cache.stats().entries, 1, "the view was not kept");
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_overflow_drops_every_view_before_the_reload_everything_batch_goes_out() {
        let mut r = rig();
        r.keep();
        r.raw.send(Ok(notify::Event::new(EventKind::Other).set_flag(notify::event::Flag::Rescan))).unwrap();
        let batch = r.batches.recv().await.unwrap();
        assert!(batch.is_empty(), "an overflow is an empty batch: {batch:?}");
        assert_eq!(r.cache.stats().entries, 0);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_watcher_error_drops_every_view() {
        let mut r = rig();
        r.keep();
        r.raw.send(Err(notify::Error::generic("lost track"))).unwrap();
        assert!(r.batches.recv().await.unwrap().is_empty());
        assert_eq!(r.cache.stats().entries, 0);
    }

    impl Rig {
        /// Reports a change at `path` and waits until the cache has heard of it.
        async fn change(&self, path: PathBuf) {
            let before = self.cache.stats().batches;
            self.raw.send(Ok(notify::Event::new(EventKind::Any).add_path(path))).unwrap();
            let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
            while self.cache.stats().batches == before {
                assert!(tokio::time::Instant::now() < deadline, "the batch never reached the cache");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_change_elsewhere_keeps_the_view_and_one_it_depends_on_drops_it() {
        let mut r = rig();
        r.keep();
        // A file in the project no view reads, and a shell's history in the folder above it
        // and in the home folder (both watched for the view's sake: CLAUDE.md, ~/.claude.json):
        // the view stays, and no page hears of any.
        r.change(r.repo.join("src/lib.rs")).await;
        r.change(r.home.root.join(".zsh_history")).await;
        r.change(r.home.home().join(".zsh_history")).await;
        assert_eq!(r.cache.stats().entries, 1, "a file no view depends on dropped it");
        let claude_md = r.repo.join("CLAUDE.md");
        r.change(claude_md.clone()).await;
        assert_eq!(r.cache.stats().entries, 0);
        // Batches go out in order: had either unrelated one been sent, it would come first.
        assert_eq!(*r.batches.recv().await.unwrap(), vec![claude_md]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_page_still_hears_of_a_file_a_dropped_view_depended_on() {
        let mut r = rig();
        r.keep();
        let claude_md = r.repo.join("CLAUDE.md");
        r.change(claude_md.clone()).await;
        assert_eq!(*r.batches.recv().await.unwrap(), vec![claude_md.clone()]);
        // No view is kept now, but a page may still show the one it got: it hears again.
        assert_eq!(r.cache.stats().entries, 0);
        r.change(claude_md.clone()).await;
        assert_eq!(*r.batches.recv().await.unwrap(), vec![claude_md]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_stopped_watcher_leaves_nothing_kept() {
        let r = rig();
        r.keep();
        r.stop.send(true).unwrap();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
        while r.cache.stats().entries > 0 {
            assert!(tokio::time::Instant::now() < deadline, "the cache outlived its watcher");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let req = ContextRequest { cwd: r.repo.clone(), ..Default::default() };
        let a = r.mneme.context_cached(&req, &r.cache).unwrap();
        let b = r.mneme.context_cached(&req, &r.cache).unwrap();
        assert!(!Arc::ptr_eq(&a, &b), "a view was served with no watcher behind it");
    }
}
