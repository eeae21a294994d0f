//! What the watcher's integration tests share: a running watcher over a temporary home (hermetic)
//! with one project, and its context view through the watcher's cache ([`World`]); a shell that
//! opened one project and waits for pages to hear of changes ([`Shell`]); ways to wait for
//! something the watcher does ([`until`], [`Shell::after_a_look`]); a tmpfs "drive" mounted as root and always unmounted
//! ([`Drive`], `mneme_testsupport::tmpfs`).

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use mneme_api::{Clock, ContextRequest, ContextView, FixedClock, Mneme};
use mneme_live::events::Events;
use mneme_testsupport::{write_file, TestHome};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::{broadcast, watch};

/// 2025-11-29 07:06:40 UTC.
pub const START: u64 = 1_764_400_000;

pub struct World {
    pub home: TestHome,
    pub repo: PathBuf,
    pub mneme: Mneme,
    pub events: Events,
    pub changes: broadcast::Receiver<Arc<Vec<PathBuf>>>,
    _stop: watch::Sender<bool>,
}

impl World {
    /// The watcher started over `home`, whose project is `repo`, at [`START`].
    pub fn start(home: TestHome, repo: PathBuf) -> World {
        World::start_with(home, repo, Arc::new(FixedClock::at_unix_secs(START)))
    }

    /// As [`World::start`], with a clock the test may move.
    pub fn start_with(home: TestHome, repo: PathBuf, clock: Arc<dyn Clock>) -> World {
        let mneme = Mneme::new(home.env.clone(), clock);
        let (stop, rx) = watch::channel(false);
        let events = Events::start(&home.env, rx).expect("the watcher starts");
        let changes = events.subscribe();
        World { home, repo, mneme, events, changes, _stop: stop }
    }

    pub fn request(&self) -> ContextRequest {
        ContextRequest { cwd: self.repo.clone(), ..Default::default() }
    }

    pub fn view(&self) -> Arc<ContextView> {
        self.mneme.context_cached(&self.request(), self.events.context_cache()).expect("context")
    }

    /// A view the cache keeps: two calls in a row answering with the same `Arc`. Retried,
    /// because a change by another process in a folder above the test's (the shared temporary
    /// folder) rightly drops the view too.
    pub fn cached(&self) -> Arc<ContextView> {
        for _ in 0..20 {
            let a = self.view();
            let b = self.view();
            if Arc::ptr_eq(&a, &b) {
                return b;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("no view was kept in 20 tries");
    }

    /// Does `act` (a change at or under `at`) and returns once pages have heard of it, as
    /// [`World::heard_of`] waits; batches from before are dropped first, so none of them can
    /// answer for it.
    pub async fn after_change<T>(&mut self, at: &Path, act: impl FnOnce() -> T) -> T {
        while self.changes.try_recv().is_ok() {}
        let done = act();
        self.heard_of(at).await;
        done
    }

    /// Waits (at most 10 s) for a batch naming `at` or a path under it, or saying that
    /// everything changed (an empty batch): the watcher has seen a change made there.
    pub async fn heard_of(&mut self, at: &Path) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let batch = tokio::time::timeout_at(deadline, self.changes.recv()).await;
            match batch.unwrap_or_else(|_| panic!("pages never heard of a change at {}", at.display())) {
                Ok(batch) if batch.is_empty() || batch.iter().any(|p| p.starts_with(at)) => return,
                Ok(_) | Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(e) => panic!("the watcher stopped: {e}"),
            }
        }
    }

    /// How many batches the watcher has handed the cache so far.
    pub fn batches(&self) -> u64 {
        self.events.context_cache().stats().batches
    }

    /// Waits until the watcher has handed the cache `n` more batches than `before` (the cache
    /// hears of every batch, pages only of those they may show).
    pub async fn batches_after(&self, before: u64, n: u64) {
        until(|| self.events.context_cache().stats().batches >= before + n, || "the watcher reported nothing".to_string()).await;
    }

    /// The next batch pages hear of (at most 10 s away).
    pub async fn next_batch(&mut self) -> Arc<Vec<PathBuf>> {
        tokio::time::timeout(Duration::from_secs(10), self.changes.recv()).await.expect("a batch within 10 s").expect("the watcher runs")
    }
}

/// A shell that opened one project: the watcher over `home`, asked for the project's folders
/// as `watch_project` asks (no view is cached, so only the shell's own watches report).
pub struct Shell {
    pub home: TestHome,
    pub repo: PathBuf,
    pub memdir: PathBuf,
    pub events: Events,
    pub changes: broadcast::Receiver<Arc<Vec<PathBuf>>>,
    _stop: watch::Sender<bool>,
}

impl Shell {
    /// A git repository `repo` with a CLAUDE.md, a rule and a memory folder, opened.
    pub fn new() -> Shell {
        let home = TestHome::new();
        let repo = home.git_repo("repo");
        home.write(repo.join("CLAUDE.md"), "Use tabs.\n");
        home.write(repo.join(".claude/rules/style.md"), "RULE\n");
        Shell::open(home, repo)
    }

    /// The shell opens `repo` (made by the caller) with its memory folder under `home`, which
    /// gets an index if it has none.
    pub fn open(home: TestHome, repo: PathBuf) -> Shell {
        let memdir = home.memdir_for(&repo);
        if !memdir.join("MEMORY.md").exists() {
            write_file(&memdir.join("MEMORY.md"), "- a\n");
        }
        let (stop, rx) = watch::channel(false);
        let events = Events::start(&home.env, rx).expect("the watcher starts");
        events.watch_project(&repo, &memdir);
        let changes = events.subscribe();
        Shell { home, repo, memdir, events, changes, _stop: stop }
    }

    /// Writes `path` (again and again, each second, as a folder waited for is looked for each
    /// second) until pages hear of it; fails after 10 s.
    pub async fn heard(&mut self, path: &Path, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.changes.try_recv().is_ok() {}
        loop {
            write_file(path, text);
            let until = (Instant::now() + Duration::from_millis(1500)).min(deadline);
            while let Ok(Ok(batch)) = tokio::time::timeout(until.saturating_duration_since(Instant::now()), self.changes.recv()).await {
                if batch.contains(&path.to_path_buf()) {
                    return;
                }
            }
            assert!(Instant::now() < deadline, "pages never heard of {}; watched: {:?}", path.display(), self.events.watched());
        }
    }

    /// Waits until `ok` holds of the folders the shell asked for (each with whether it is
    /// watched now); fails after 10 s, saying `what`.
    pub async fn until(&self, what: &str, ok: impl Fn(&[mneme_live::events::WatchedFolder]) -> bool) {
        until(|| ok(&self.events.watched()), || format!("{what}: {:?}", self.events.watched())).await;
    }

    /// Every folder the shell asked for is watched (again).
    pub async fn all_active(&self) {
        self.until("not watched again", |f| f.iter().all(|f| f.active)).await;
    }

    /// `dir`, which the shell asked for, is no longer watched: the watcher saw it go.
    pub async fn gone(&self, dir: &Path) {
        self.until(&format!("{} still watched", dir.display()), |f| f.iter().any(|f| f.path == dir && !f.active)).await;
    }

    /// `dir`, which the shell asked for, is watched (again).
    pub async fn back(&self, dir: &Path) {
        self.until(&format!("{} not watched again", dir.display()), |f| f.iter().any(|f| f.path == dir && f.active)).await;
    }

    /// Waits until pages hear of `path` (its removal, say) without writing it; fails after 10 s.
    pub async fn told_of(&mut self, path: &Path) {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        loop {
            let batch = tokio::time::timeout_at(deadline, self.changes.recv()).await;
            let batch = batch.unwrap_or_else(|_| panic!("pages never heard of {}", path.display())).expect("the watcher runs");
            if batch.iter().any(|p| p == path) {
                return;
            }
        }
    }

    /// Returns once the watcher has looked at its folders again since this was called
    /// (forgotten what was removed, looked for what it waits for): pages hear of a file written
    /// now in the memory folder only in a batch gathered after the write, and the watcher
    /// gathers a batch before it looks. The memory folder must be there; `what` is written
    /// to its index.
    pub async fn after_a_look(&mut self, what: &str) {
        let index = self.memdir.join("MEMORY.md");
        self.heard(&index, &format!("- {what}\n")).await;
    }
}

/// Waits until `ok` holds, looking every 10 ms; fails after 10 s with what `why` says then.
/// The watcher works in the background (a batch every 300 ms, a look every second), so a test
/// can only wait for its effect.
pub async fn until(mut ok: impl FnMut() -> bool, why: impl Fn() -> String) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !ok() {
        assert!(Instant::now() < deadline, "{}", why());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A tmpfs standing for a drive, unmounted when dropped.
pub type Drive = mneme_testsupport::tmpfs::Tmpfs;

/// Mounts a 1 MiB tmpfs on `dir` (made if missing); `None` when that is not possible (not root).
pub fn mount_drive(dir: &Path) -> Option<Drive> {
    Drive::mount(dir, "1m")
}
