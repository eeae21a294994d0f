//! The team-sync loop: for each project folder whose repository has a github.com `origin`, with
//! a team server configured and a sign-in, run `mneme-team`'s watcher exactly as Claude Code runs
//! its own at session start (a pull that ignores the ETag, then a 2-second debounced push on every
//! change, suppression after permanent failures), plus a pull every `pull_every` so teammates'
//! edits arrive while no session is running. On shutdown the watcher flushes a last push.

use crate::{JobKind, Outcome, Reporter};
use mneme_core::Clock;
use mneme_model::Cancel;
use mneme_store::Environment;
use mneme_team::watch::{TeamWatcher, WatchEvent, DEBOUNCE};
use mneme_team::{keyring_client, resolve_target, PullReport, PushReport, SyncError};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

pub struct TeamLoop {
    pub env: Environment,
    pub clock: Arc<dyn Clock>,
    pub reporter: Reporter,
    /// Project folders to keep in sync.
    pub folders: crate::Folders,
    pub pull_every: Duration,
}

impl TeamLoop {
    /// Blocking: the sync client is synchronous, so this runs on its own thread.
    pub fn run(&self, cancel: Cancel) {
        let mut watched = Vec::new();
        for folder in &self.folders.resolve(&self.env) {
            let target = resolve_target(&self.env, folder);
            let (Some(repo), Some(_server)) = (target.repo.clone(), target.server_url.clone()) else { continue };
            let client = Arc::new(keyring_client(target, &self.env, self.clock.clone()));
            if !client.signed_in().unwrap_or(false) {
                continue;
            }
            let (tx, rx) = mpsc::channel();
            match TeamWatcher::start(client.clone(), DEBOUNCE, Some(tx)) {
                Ok(w) => watched.push((repo, client, w, rx, Instant::now())),
                Err(e) => {
                    let run = self.reporter.begin(JobKind::TeamSync, repo);
                    run.finish(Outcome::Failed { error: e.to_string() });
                }
            }
        }
        while !cancel.is_cancelled() && !watched.is_empty() {
            for (repo, client, _w, rx, last_pull) in watched.iter_mut() {
                while let Ok(event) = rx.try_recv() {
                    self.record(repo, event);
                }
                if last_pull.elapsed() >= self.pull_every {
                    *last_pull = Instant::now();
                    self.record(repo, WatchEvent::Pulled(client.pull()));
                }
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        for (repo, _client, w, rx, _) in watched {
            if let Some(last) = w.shutdown() {
                self.record(&repo, WatchEvent::Pushed(last));
            }
            while let Ok(event) = rx.try_recv() {
                self.record(&repo, event);
            }
        }
    }

    fn record(&self, repo: &str, event: WatchEvent) {
        let outcome = match event {
            WatchEvent::Pulled(r) => pulled(r),
            WatchEvent::Pushed(r) => pushed(r),
            WatchEvent::Suppressed(why) => Outcome::Failed { error: format!("automatic pushes stopped: {why}") },
            WatchEvent::Resumed => Outcome::Done { summary: "automatic pushes resumed".into() },
        };
        // Pulls that changed nothing happen every few minutes: not worth a line in the history.
        if matches!(&outcome, Outcome::Skipped { .. }) {
            return;
        }
        self.reporter.begin(JobKind::TeamSync, repo).finish(outcome);
    }
}

fn pulled(r: Result<PullReport, SyncError>) -> Outcome {
    match r {
        Ok(p) if p.written.is_empty() && p.trashed.is_empty() => Outcome::Skipped { reason: "nothing new on the server".into() },
        Ok(p) => Outcome::Done {
            summary: format!("Pulled {} file(s){}", p.written.len(), if p.trashed.is_empty() { String::new() } else { format!(", {} removed by a lead (moved to the trash)", p.trashed.len()) }),
        },
        Err(e) => Outcome::Failed { error: e.to_string() },
    }
}

fn pushed(r: Result<PushReport, SyncError>) -> Outcome {
    match r {
        Ok(p) => {
            let mut summary = format!("Pushed {} file(s)", p.uploaded.len());
            if !p.skipped_secrets.is_empty() {
                summary.push_str(&format!("; {} held back because they hold a secret", p.skipped_secrets.len()));
            }
            Outcome::Done { summary }
        }
        Err(e) => Outcome::Failed { error: e.to_string() },
    }
}
