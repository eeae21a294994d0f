//! The team-sync loop: for each project folder whose repository has a github.com `origin`, with
//! a team server configured and a sign-in, run `mneme-team`'s watcher exactly as Claude Code runs
//! its own at session start (a pull that ignores the ETag, then a 2-second debounced push on every
//! change, suppression after permanent failures), plus a pull every `pull_every` so teammates'
//! edits arrive while no session is running. On shutdown the watcher flushes a last push.
//! Folders not synced yet are looked at again every `pull_every` (a sign-in made later, a
//! keyring unlocked later), and one memory folder gets one watcher however many project
//! folders lead to it.

use crate::{JobKind, Outcome, Reporter};
use mneme_core::Clock;
use mneme_model::Cancel;
use mneme_store::Environment;
use mneme_team::auth::{CredentialStore, Session};
use mneme_team::client::{given_up_message, Http};
use mneme_team::watch::{TeamWatcher, WatchEvent, DEBOUNCE};
use mneme_team::{keyring_client, resolve_target, PullReport, PushReport, SyncClient, SyncError, SyncTarget};
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

pub struct TeamLoop {
    pub env: Environment,
    pub clock: Arc<dyn Clock>,
    pub reporter: Reporter,
    /// Project folders to keep in sync.
    pub folders: crate::Folders,
    /// How often each watched folder pulls, and how often folders not watched yet (no sign-in,
    /// no server, a keyring still locked) are looked at again.
    pub pull_every: Duration,
    /// Where sign-ins are kept: `None` is the OS keyring, as for every client Mneme runs.
    pub credentials: Option<Arc<dyn CredentialStore>>,
}

/// What was last recorded about a server whose sign-in could not be read, or a memory folder
/// whose watcher could not start: a lasting problem is said once, not at every look.
#[derive(Default)]
struct Reported {
    servers: HashMap<String, String>,
    folders: HashMap<PathBuf, String>,
}

/// One memory folder being kept in sync.
struct Watched {
    repo: String,
    client: Arc<SyncClient>,
    watcher: TeamWatcher,
    events: mpsc::Receiver<WatchEvent>,
    last_pull: Instant,
    /// The files last reported as lost by the server too often to push automatically: the
    /// warning is recorded when this set changes, not at every pull that sees it again.
    given_up_said: Vec<String>,
}

impl TeamLoop {
    /// Blocking: the sync client is synchronous, so this runs on its own thread. Folders are
    /// looked at again every `pull_every`, so a sign-in made after the start (in the app, or
    /// once a keyring locked at login is unlocked) starts sync without a restart.
    pub fn run(&self, cancel: Cancel) {
        let mut watched: BTreeMap<PathBuf, Watched> = BTreeMap::new();
        let mut reported = Reported::default();
        let mut next_look = Instant::now();
        while !cancel.is_cancelled() {
            if Instant::now() >= next_look {
                self.start_new(&mut watched, &mut reported);
                next_look = Instant::now() + self.pull_every;
            }
            for w in watched.values_mut() {
                while let Ok(event) = w.events.try_recv() {
                    self.record(&w.repo, &mut w.given_up_said, event);
                }
                if w.last_pull.elapsed() >= self.pull_every {
                    w.last_pull = Instant::now();
                    let pulled = w.client.pull();
                    // Files the server acknowledged and then lost: the watcher pushes them again,
                    // except those it has lost too often (the watcher's pushes leave them out).
                    if matches!(&pulled, Ok(p) if !p.pushed_again().is_empty()) {
                        w.watcher.notify_write();
                    }
                    self.record(&w.repo, &mut w.given_up_said, WatchEvent::Pulled(pulled));
                }
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        for (_, mut w) in watched {
            if let Some(last) = w.watcher.shutdown() {
                self.record(&w.repo, &mut w.given_up_said, WatchEvent::Pushed(last));
            }
            while let Ok(event) = w.events.try_recv() {
                self.record(&w.repo, &mut w.given_up_said, event);
            }
        }
    }

    /// Starts a watcher for every folder that syncs and is not watched yet.
    fn start_new(&self, watched: &mut BTreeMap<PathBuf, Watched>, reported: &mut Reported) {
        // Read once per look and server: each read is a keyring call.
        // The error is shared, not cloned: `SyncError` holds I/O errors that cannot be cloned.
        let mut sign_ins: HashMap<String, Result<bool, Arc<SyncError>>> = HashMap::new();
        for target in sync_targets(&self.env, &self.folders.resolve(&self.env)) {
            if watched.contains_key(&target.memory_dir) {
                continue;
            }
            let (Some(repo), Some(server)) = (target.repo.clone(), target.server_url.clone()) else { continue };
            let memory_dir = target.memory_dir.clone();
            let client = Arc::new(self.client(target));
            let signed_in = sign_ins.entry(server.clone()).or_insert_with(|| client.signed_in().map_err(Arc::new)).clone();
            match signed_in {
                Ok(true) => {
                    reported.servers.remove(&server);
                }
                // Signed out: nothing to say (most people never sign in); looked at again later.
                Ok(false) => continue,
                // A keyring locked or unreachable is not "signed out": the person is told, once.
                Err(e) => {
                    let error = format!(
                        "could not read the team sign-in for {server}: {e}. Team sync starts once it can be read (Mneme looks again every {} min)",
                        self.pull_every.as_secs().div_ceil(60)
                    );
                    if reported.servers.get(&server) != Some(&error) {
                        self.reporter.begin(JobKind::TeamSync, repo).finish(Outcome::Failed { error: error.clone() });
                        reported.servers.insert(server, error);
                    }
                    continue;
                }
            }
            let (tx, rx) = mpsc::channel();
            match TeamWatcher::start(client.clone(), DEBOUNCE, Some(tx)) {
                Ok(watcher) => {
                    reported.folders.remove(&memory_dir);
                    watched.insert(memory_dir, Watched { repo, client, watcher, events: rx, last_pull: Instant::now(), given_up_said: Vec::new() });
                }
                Err(e) => {
                    let error = e.to_string();
                    if reported.folders.get(&memory_dir) != Some(&error) {
                        self.reporter.begin(JobKind::TeamSync, repo).finish(Outcome::Failed { error: error.clone() });
                        reported.folders.insert(memory_dir, error);
                    }
                }
            }
        }
    }

    fn client(&self, target: SyncTarget) -> SyncClient {
        match &self.credentials {
            None => keyring_client(target, &self.env, self.clock.clone()),
            Some(store) => {
                let server = target.server_url.clone().unwrap_or_default();
                let session = Session::new(&server, store.clone(), Http::default(), self.clock.clone()).with_refresh_lock(&self.env.data_dir());
                SyncClient::new(target, &self.env, self.clock.clone(), Arc::new(session))
            }
        }
    }

    /// Records what the watcher or a scheduled pull did. `given_up_said` is the folder's files
    /// last reported as lost too often to push automatically: a pull naming another set says
    /// so (a failure, since work is at risk until someone acts), one naming the same set again
    /// adds nothing, and a whole answer naming none clears it.
    fn record(&self, repo: &str, given_up_said: &mut Vec<String>, event: WatchEvent) {
        if let WatchEvent::Pulled(Ok(p)) = &event {
            if p.given_up != *given_up_said && (!p.given_up.is_empty() || !p.not_modified) {
                if !p.given_up.is_empty() {
                    self.reporter.begin(JobKind::TeamSync, repo).finish(Outcome::Failed { error: given_up_message(&p.given_up) });
                }
                *given_up_said = p.given_up.clone();
            }
        }
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

/// What the folders sync, one target per memory folder: two folders of one repository (its
/// root and a sub-folder, or two worktrees) share the memory folder and its state file, and
/// two watchers on them would push and pull over each other.
pub fn sync_targets(env: &Environment, folders: &[PathBuf]) -> Vec<SyncTarget> {
    let mut seen = std::collections::HashSet::new();
    folders.iter().map(|f| resolve_target(env, f)).filter(|t| seen.insert(t.memory_dir.clone())).collect()
}

fn pulled(r: Result<PullReport, SyncError>) -> Outcome {
    match r {
        // Files lost too often to push again are said apart, once (see `TeamLoop::record`).
        Ok(p) if p.written.is_empty() && p.trashed.is_empty() && p.pushed_again().is_empty() => Outcome::Skipped { reason: "nothing new on the server".into() },
        Ok(p) => {
            let again = p.pushed_again();
            Outcome::Done {
                summary: format!(
                    "Pulled {} file(s){}{}",
                    p.written.len(),
                    if p.trashed.is_empty() { String::new() } else { format!(", {} removed by a lead (moved to the trash)", p.trashed.len()) },
                    if again.is_empty() {
                        String::new()
                    } else {
                        format!("; the server no longer holds {} file(s) it had accepted from here ({}): kept here and pushed again", again.len(), again.join(", "))
                    }
                ),
            }
        }
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
            if !p.held_back_lost.is_empty() {
                summary.push_str(&format!("; {} the server kept losing not sent (push them by hand with `mneme team push`)", p.held_back_lost.len()));
            }
            Outcome::Done { summary }
        }
        Err(e) => Outcome::Failed { error: e.to_string() },
    }
}
