//! The file watcher both shells run: it tells the UI when Claude Code (or anyone) changes files
//! Mneme shows, so the UI reloads instead of showing stale memory (`mneme serve` sends each
//! batch as a Server-Sent Event, the desktop shell as a typed window event).
//!
//! Watched: `<config home>/projects` (recursively: every project's memory folder), the config
//! home itself (non-recursively: `settings.json`), and for each `watch_project` call the
//! project's memory folder (recursively, for a memory folder set elsewhere by
//! `autoMemoryDirectory`), the project folder (non-recursively: its CLAUDE.md files) and its
//! `.claude` folder (rules, local settings). Changes are gathered for 300 ms and sent as one
//! list of paths; an empty list means "too much changed to name; reload everything".
//!
//! The watcher also keeps the api's [`ContextCache`]: building a view adds flat watches on the
//! folders its dependencies lie in (every folder above the project, their `.claude`, the
//! settings files' folders, …; `mneme_api::ContextCache` has the rules), and each batch is handed to
//! the cache before anyone hears of it, so a page reloading on the event never gets a view the
//! batch made stale. Pages then hear only of the paths they may show: those in the folders the
//! shell asked for and those a view depended on, not the rest of what the cache's flat watches
//! see (every command a shell runs rewrites its history file in the home folder).

use mneme_api::{ContextCache, DependsOn, DependsOnIndex, Environment, FolderWatch};
use notify::{EventKind, RecommendedWatcher, RecursiveMode, Watcher};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::sync::{broadcast, mpsc, watch};

/// How long changes are gathered before one event goes out: an editor's save or Claude
/// Code's write is several file-system events, and the UI should reload once.
const DEBOUNCE: Duration = Duration::from_millis(300);

/// The watcher and its subscribers' channel.
pub struct Events {
    tx: broadcast::Sender<Arc<Vec<PathBuf>>>,
    stop: watch::Receiver<bool>,
    watched: Arc<Mutex<Watched>>,
    cache: Arc<ContextCache>,
}

struct Watched {
    watcher: RecommendedWatcher,
    /// Folders being watched, with whether recursively and the watch's number (1, 2, …).
    active: Vec<(PathBuf, RecursiveMode, u64)>,
    /// How many watches were ever added: the newest one's number.
    added: u64,
    /// Folders to watch once they exist (a fresh machine has no `projects` folder yet).
    pending: Vec<(PathBuf, RecursiveMode)>,
    /// The folders the shell asked for, in order: what `watched` lists. The context cache's
    /// many flat watches (every folder above a project, …) are bookkeeping, not shown.
    shown: Vec<(PathBuf, RecursiveMode)>,
    /// Everything the context cache's views ever depended on (kept after a view is dropped:
    /// a page may still show it). With `shown`, what a change must touch to be sent on: the
    /// cache's watches on folders above a project see every file there (a shell's history in
    /// the home folder), and pages should not reload for those.
    interests: DependsOnIndex,
}

impl Watched {
    fn new(watcher: RecommendedWatcher) -> Watched {
        Watched { watcher, active: Vec::new(), added: 0, pending: Vec::new(), shown: Vec::new(), interests: DependsOnIndex::default() }
    }

    /// Whether a change at `path` is one the pages may show: in a folder the shell asked for,
    /// or something a context view depended on.
    fn shows(&self, path: &Path) -> bool {
        let asked = self.shown.iter().any(|(dir, mode)| {
            let dep = DependsOn { dir: dir.clone(), recursive: *mode == RecursiveMode::Recursive, entry: None };
            dep.concerns(path)
        });
        asked || self.interests.concerns(path)
    }

    /// Watches `dir` now if it exists, else as soon as a change batch sees it appear.
    fn add(&mut self, dir: &Path, mode: RecursiveMode) {
        let listed = self.shown.iter().any(|(p, m)| {
            (p == dir && (*m == mode || *m == RecursiveMode::Recursive))
                || (*m == RecursiveMode::Recursive && dir.starts_with(p))
        });
        if !listed {
            self.shown.push((dir.to_path_buf(), mode));
        }
        if self.covering(dir, mode).is_some() || self.pending.iter().any(|(p, m)| p == dir && *m == mode) {
            return;
        }
        if !(dir.is_dir() && self.watch_now(dir, mode)) {
            self.pending.push((dir.to_path_buf(), mode));
        }
    }

    /// The number of the oldest active watch that covers `dir` as `mode` asks.
    fn covering(&self, dir: &Path, mode: RecursiveMode) -> Option<u64> {
        self.active
            .iter()
            .filter(|(p, m, _)| {
                (p == dir && (*m == mode || *m == RecursiveMode::Recursive))
                    || (*m == RecursiveMode::Recursive && dir.starts_with(p))
            })
            .map(|(_, _, n)| *n)
            .min()
    }

    fn watch_now(&mut self, dir: &Path, mode: RecursiveMode) -> bool {
        if self.watcher.watch(dir, mode).is_err() {
            return false;
        }
        self.added += 1;
        self.active.push((dir.to_path_buf(), mode, self.added));
        true
    }

    fn retry_pending(&mut self) {
        for (dir, mode) in std::mem::take(&mut self.pending) {
            self.add(&dir, mode);
        }
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
            w.add(&env.projects_dir(), RecursiveMode::Recursive);
            w.add(&env.config_home(), RecursiveMode::NonRecursive);
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
        w.add(memory_dir, RecursiveMode::Recursive);
        w.add(cwd, RecursiveMode::NonRecursive);
        let dot_claude = cwd.join(".claude");
        if dot_claude.is_dir() {
            w.add(&dot_claude, RecursiveMode::Recursive);
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

    fn cover(&self, folders: &[DependsOn]) -> Option<u64> {
        let mut w = lock(&self.0);
        // Recorded even when a folder cannot be watched: the page still shows that view.
        w.interests.extend(folders.iter().cloned());
        let mut newest = 0;
        // Watches are per folder; many dependencies name entries of the same one.
        let unique: BTreeSet<(&Path, bool)> = folders.iter().map(|f| (f.dir.as_path(), f.recursive)).collect();
        for (dir, recursive) in unique {
            let mode = if recursive { RecursiveMode::Recursive } else { RecursiveMode::NonRecursive };
            let n = match w.covering(dir, mode) {
                Some(n) => n,
                // Could not be watched (gone since, or out of inotify watches): the view that
                // needs it is not kept.
                None if !w.watch_now(dir, mode) => return None,
                None => w.added,
            };
            newest = newest.max(n);
        }
        Some(newest)
    }
}

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
        let mut batch = BTreeSet::new();
        let mut overflow = false;
        tokio::select! {
            first = raw.recv() => match first {
                Some(e) => collect(e, &mut batch, &mut overflow),
                None => return,
            },
            _ = stop.changed() => return,
        }
        let deadline = tokio::time::Instant::now() + DEBOUNCE;
        while let Ok(Some(e)) = tokio::time::timeout_at(deadline, raw.recv()).await {
            collect(e, &mut batch, &mut overflow);
        }
        // A folder waited for (say `projects`) may have just been created.
        lock(&watched).retry_pending();
        if batch.is_empty() && !overflow {
            continue;
        }
        let paths: Vec<PathBuf> = if overflow { Vec::new() } else { batch.into_iter().collect() };
        // The cache first, so a page reloading on this batch gets fresh views.
        cache.changed(&paths);
        // Pages hear only of changes they may show (an empty batch: everything).
        let shown: Vec<PathBuf> = {
            let w = lock(&watched);
            paths.iter().filter(|p| w.shows(p)).cloned().collect()
        };
        if overflow || !shown.is_empty() {
            // No subscribers is fine: nobody has the page open.
            let _ = tx.send(Arc::new(shown));
        }
    }
}

fn collect(e: notify::Result<notify::Event>, batch: &mut BTreeSet<PathBuf>, overflow: &mut bool) {
    match e {
        Ok(e) if e.need_rescan() => *overflow = true,
        // Reads (open, close without writing) change nothing.
        Ok(e) if matches!(e.kind, EventKind::Access(_)) => {}
        Ok(e) => batch.extend(e.paths.into_iter().filter(|p| interesting(p))),
        // The watcher lost track (queue overflow, a watched folder vanished): say so.
        Err(_) => *overflow = true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_api::{ContextRequest, FixedClock, Mneme};
    use mneme_testsupport::TestHome;

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
