//! The team-sync loop: for each project folder whose repository has a github.com `origin`, with
//! a team server configured and a sign-in, run `mneme-team`'s watcher exactly as Claude Code runs
//! its own at session start (a pull that ignores the ETag, then a 2-second debounced push on every
//! change, suppression after permanent failures), plus a pull every `pull_every` so teammates'
//! edits arrive while no session is running. On shutdown the watcher flushes a last push.
//! Folders not synced yet are looked at again every `pull_every` (a sign-in made later, a
//! keyring unlocked later), and one memory folder gets one watcher however many project
//! folders lead to it.
//!
//! A drive that stops answering (a network share whose server went away, a USB stick or FUSE
//! mount whose daemon hangs) blocks every look at a folder on it, and the loop is one thread:
//! so each project folder's drive is asked before the folder is looked at, and each memory
//! folder's before its watcher starts, before each scheduled pull and before the last push
//! at shutdown (`mneme_store::drive`, at most 3 s). One that does not answer is skipped for
//! that round, said once while it lasts (a skipped run naming the drive), and tried again at
//! the next look; the other projects go on syncing.

use crate::{JobKind, Outcome, Reporter};
use mneme_core::Clock;
use mneme_model::Cancel;
use mneme_store::Environment;
use mneme_team::auth::{CredentialStore, Session};
use mneme_team::client::{given_up_message, Http};
use mneme_team::watch::{TeamWatcher, WatchEvent, DEBOUNCE};
use mneme_team::client::drive_answers;
use mneme_team::{answering_target, keyring_client, DriveNotAnswering, PullReport, PushReport, SyncClient, SyncError, SyncTarget};
use std::collections::{BTreeMap, HashMap, HashSet};
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
    /// Folders whose drive was said not to answer, until it answers again.
    drives: HashSet<PathBuf>,
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
                    // The pull writes into the memory folder: on a drive that does not answer it
                    // would hold every other folder's pulls until it answers.
                    if !self.drive_answers(&w.client.target().memory_dir, &mut reported) {
                        continue;
                    }
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
        for (memory_dir, mut w) in watched {
            // The last push reads the team folder: on a drive that does not answer it would
            // hold the shutdown. Changes not pushed yet go out at the next start's first push.
            if !self.drive_answers(&memory_dir, &mut reported) {
                drop(w.watcher);
                continue;
            }
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
        // Discovery reads Claude Code's own folders: while their drive does not answer it gives
        // up after its patience, said once, and the folders already watched go on.
        let folders = match self.folders.resolve(&self.env) {
            Ok(folders) => {
                for own in [self.env.projects_dir(), self.env.memory_base().join("projects"), self.env.global_config_path()] {
                    reported.drives.remove(&own);
                }
                folders
            }
            Err(e) => {
                self.say_not_answering(DriveNotAnswering { path: e.path }, reported);
                return;
            }
        };
        for target in sync_targets(&self.env, &folders) {
            let target = match target {
                Ok((folder, target)) => {
                    reported.drives.remove(&folder);
                    reported.drives.remove(&target.memory_dir);
                    target
                }
                Err(not_answering) => {
                    self.say_not_answering(not_answering, reported);
                    continue;
                }
            };
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

    /// Whether `dir`'s drive answers; one that does not is said once while it lasts.
    fn drive_answers(&self, dir: &std::path::Path, reported: &mut Reported) -> bool {
        match drive_answers(dir) {
            Ok(()) => {
                reported.drives.remove(dir);
                true
            }
            Err(not_answering) => {
                self.say_not_answering(not_answering, reported);
                false
            }
        }
    }

    /// Records a skipped sync for a folder whose drive does not answer, once while it lasts
    /// (the loop looks every `pull_every`: the same word at every look is not news).
    fn say_not_answering(&self, not_answering: DriveNotAnswering, reported: &mut Reported) {
        if reported.drives.insert(not_answering.path.clone()) {
            let reason = format!(
                "the drive holding {} is not answering (a network share or USB drive that hangs?); Mneme looks again every {} and syncs once it answers",
                not_answering.path.display(),
                every(self.pull_every)
            );
            self.reporter.begin(JobKind::TeamSync, not_answering.path.display().to_string()).finish(Outcome::Skipped { reason });
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

/// What the folders sync, one target per memory folder (with the first folder that leads to
/// it): two folders of one repository (its root and a sub-folder, or two worktrees) share the
/// memory folder and its state file, and two watchers on them would push and pull over each
/// other. A folder whose drive, or whose memory folder's, does not answer is not looked at
/// ([`answering_target`]): it is listed as such, and the folders after it are still looked at.
pub fn sync_targets(env: &Environment, folders: &[PathBuf]) -> Vec<Result<(PathBuf, SyncTarget), DriveNotAnswering>> {
    let mut seen = HashSet::new();
    folders
        .iter()
        .map(|f| answering_target(env, f).map(|t| (f.clone(), t)))
        .filter(|t| t.as_ref().map_or(true, |(_, t)| seen.insert(t.memory_dir.clone())))
        .collect()
}

/// How often the loop looks again, in words: whole minutes, or seconds below a minute (a
/// loop started with a short interval would otherwise say "every 0 min").
fn every(d: Duration) -> String {
    if d >= Duration::from_secs(60) {
        format!("{} min", d.as_secs().div_ceil(60))
    } else {
        format!("{} s", d.as_millis().div_ceil(1000).max(1))
    }
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
                summary.push_str(&format!("; {} the server kept losing not sent (push them by hand: Push on the Team screen, or `mneme team push`)", p.held_back_lost.len()));
            }
            Outcome::Done { summary }
        }
        Err(e) => Outcome::Failed { error: e.to_string() },
    }
}
