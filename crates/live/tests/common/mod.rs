//! What the watcher's integration tests share: a running watcher over a temporary home (hermetic)
//! with one project, and its context view through the watcher's cache.

// Each test file is its own crate and uses only some of these.
#![allow(dead_code)]

use mneme_api::{Clock, ContextRequest, ContextView, FixedClock, Mneme};
use mneme_live::events::Events;
use mneme_testsupport::TestHome;
use std::path::PathBuf;
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

    /// Waits until the watcher has handed the cache `n` more batches than `before` (the cache
    /// hears of every batch, pages only of those they may show).
    pub async fn batches_after(&self, before: u64, n: u64) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while self.events.context_cache().stats().batches < before + n {
            assert!(Instant::now() < deadline, "the watcher reported nothing");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }

    /// The next batch pages hear of (at most 10 s away).
    pub async fn next_batch(&mut self) -> Arc<Vec<PathBuf>> {
        tokio::time::timeout(Duration::from_secs(10), self.changes.recv()).await.expect("a batch within 10 s").expect("the watcher runs")
    }
}
