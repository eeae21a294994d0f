//! Pushing team memory as it changes, as Claude Code's `watcher.ts` does: a recursive watch
//! on `team/`, a push 2 seconds after the last change (re-armed while a push is still in
//! flight), suppression after a permanent failure, and a last push on shutdown. Unlike Claude
//! Code, a change waits at most [`MAX_WAIT_DEBOUNCES`] debounces for its push, however often
//! the files keep changing, and a push asked for without a change (a pull that found files the
//! server lost) never moves the deadline of one already waiting.
//!
//! - **Suppression.** After a permanent failure (no sign-in, no repository, any 4xx except
//!   409 and 429) automatic pushes stop for the life of the watcher, and changes are ignored.
//!   An unlink clears it when the reason is the too-many-entries family (2.1.197 allows
//!   exactly that recovery: deleting files is how a user gets back under the server's cap).
//!   409 and 429 are transient: the next change retries.
//! - **Pending changes.** A push clears the pending flag only if no change arrived while it
//!   ran. (Claude Code clears it on any success, so an edit made during a push waits for the
//!   next edit; Mneme pushes it after the next debounce.)
//! - **Files the server keeps losing.** The watcher pushes with
//!   [`SyncClient::push_automatic`]: a file whose same content the server acknowledged and then
//!   lost three times in a row is left out (and a pull reporting it lost does not schedule a
//!   push) until it is edited here or pushed by hand. The file itself is never touched.
//! - **Shutdown.** The timer stops, the watch closes, an in-flight push is awaited, and one
//!   more push runs when changes are pending and pushes are not suppressed.
//!
//! The debounce logic is [`Debouncer`], a pure state machine tested on synthetic instants; the
//! thread that drives it only feeds it events and the clock.

use crate::client::{recoverable_by_unlink, PullReport, PushReport, SyncClient, SyncError};
use crate::wire::DEBOUNCE_MS;
use notify::{EventKind, RecursiveMode, Watcher};
use std::path::PathBuf;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Claude Code's debounce.
pub const DEBOUNCE: Duration = Duration::from_millis(DEBOUNCE_MS);

/// The longest a pending change waits for its push, in debounces (30 s at Claude Code's 2 s).
/// Claude Code's timer moves with every change, so a file written more often than every 2 s
/// (an editor's autosave, a script appending a log line, a scheduled pull announcing its
/// writes) would hold its push back for as long as the writes go on; Mneme pushes anyway once
/// the first unpushed change is this old.
pub const MAX_WAIT_DEBOUNCES: u32 = 15;

/// What the timer decided when it fired.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fire {
    /// Start a push now.
    Push,
    /// A push is still running: wait another debounce.
    Rearm,
    /// Nothing to do (no pending change, or suppressed).
    Idle,
}

/// The watcher's state: pending changes, the timer, the push in flight, suppression.
#[derive(Debug, Clone)]
pub struct Debouncer {
    debounce: Duration,
    deadline: Option<Instant>,
    /// When the oldest change not yet taken by a push was seen: the deadline never moves past
    /// it by more than [`MAX_WAIT_DEBOUNCES`] debounces.
    waiting_since: Option<Instant>,
    pending: bool,
    change_seq: u64,
    /// The change sequence when the running push started.
    in_flight: Option<u64>,
    suppressed: Option<String>,
}

impl Debouncer {
    pub fn new(debounce: Duration) -> Self {
        Debouncer { debounce, deadline: None, waiting_since: None, pending: false, change_seq: 0, in_flight: None, suppressed: None }
    }

    /// A file changed (or a write was announced): schedule a push unless suppressed.
    pub fn change(&mut self, now: Instant) {
        if self.suppressed.is_some() {
            return;
        }
        self.pending = true;
        self.change_seq += 1;
        let since = *self.waiting_since.get_or_insert(now);
        self.deadline = Some((now + self.debounce).min(since + self.debounce * MAX_WAIT_DEBOUNCES));
    }

    /// A push was asked for without a change of its own to wait out (a pull found files the
    /// server lost; see [`TeamWatcher::notify_write`]): when no push is waiting, one is
    /// scheduled a debounce from now, as for a change; when one is, it keeps its deadline and
    /// takes the request along. Moving the deadline would let pulls that come more often than
    /// the debounce hold a waiting change back until the longest wait.
    pub fn request(&mut self, now: Instant) {
        if self.deadline.is_none() || self.suppressed.is_some() {
            return self.change(now);
        }
        self.pending = true;
        self.change_seq += 1;
        self.waiting_since.get_or_insert(now);
    }

    /// A file was removed: clears a recoverable suppression, then counts as a change.
    pub fn unlink(&mut self, now: Instant) -> bool {
        let cleared = self.suppressed.as_deref().is_some_and(recoverable_by_unlink);
        if cleared {
            self.suppressed = None;
        }
        self.change(now);
        cleared
    }

    /// Automatic pushes may go on: a push outside the watcher (the user's, from the app or the
    /// CLI) succeeded after whatever stopped them was fixed.
    pub fn resume(&mut self) {
        self.suppressed = None;
    }

    /// When the timer fires next.
    pub fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The timer fired at `now`.
    pub fn fire(&mut self, now: Instant) -> Fire {
        if self.deadline.is_none_or(|d| now < d) {
            return Fire::Idle;
        }
        self.deadline = None;
        if self.in_flight.is_some() {
            self.deadline = Some(now + self.debounce);
            return Fire::Rearm;
        }
        if self.suppressed.is_some() || !self.pending {
            return Fire::Idle;
        }
        self.in_flight = Some(self.change_seq);
        // This push takes every change so far; the next one starts a new wait.
        self.waiting_since = None;
        Fire::Push
    }

    /// A push ended; `permanent` is the suppression reason when it failed for good.
    pub fn push_done(&mut self, ok: bool, permanent: Option<String>) {
        let started = self.in_flight.take();
        if ok && started == Some(self.change_seq) {
            self.pending = false;
        }
        if let Some(reason) = permanent {
            self.suppressed = Some(reason);
            self.deadline = None;
            self.waiting_since = None;
        }
    }

    /// Starts a push outside the timer (the shutdown flush); false when none is due.
    pub fn flush(&mut self) -> bool {
        if self.pending && self.suppressed.is_none() && self.in_flight.is_none() {
            self.deadline = None;
            self.waiting_since = None;
            self.in_flight = Some(self.change_seq);
            true
        } else {
            false
        }
    }

    pub fn pending(&self) -> bool {
        self.pending
    }

    pub fn suppressed(&self) -> Option<&str> {
        self.suppressed.as_deref()
    }

    pub fn in_flight(&self) -> bool {
        self.in_flight.is_some()
    }
}

/// What the watcher reports as it works (the app refreshes its Team screen on these).
#[derive(Debug)]
pub enum WatchEvent {
    Pulled(Result<PullReport, SyncError>),
    Pushed(Result<PushReport, SyncError>),
    /// Automatic pushes stopped; the reason.
    Suppressed(String),
    /// An unlink cleared a recoverable suppression.
    Resumed,
}

enum Msg {
    Fs(notify::Event),
    Notify,
    PushDone(Result<PushReport, SyncError>),
    Shutdown,
}

/// A running watcher. Dropping it without [`shutdown`](TeamWatcher::shutdown) stops it without
/// the final push.
pub struct TeamWatcher {
    tx: mpsc::Sender<Msg>,
    watcher: Option<notify::RecommendedWatcher>,
    control: Option<JoinHandle<Option<Result<PushReport, SyncError>>>>,
    team_dir: PathBuf,
}

impl std::fmt::Debug for TeamWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TeamWatcher").field("team_dir", &self.team_dir).finish_non_exhaustive()
    }
}

impl TeamWatcher {
    /// Creates `team/`, pulls (ignoring the ETag, as a session start does), then watches.
    /// Refuses to start without a repository, a server or a sign-in, as Claude Code's
    /// watcher does not start then either.
    pub fn start(
        client: Arc<SyncClient>,
        debounce: Duration,
        events: Option<mpsc::Sender<WatchEvent>>,
    ) -> Result<TeamWatcher, SyncError> {
        client.state()?;
        if !client.signed_in()? {
            return Err(SyncError::NoAuth { server: client.target().server_url.clone().unwrap_or_default() });
        }
        let team_dir = client.target().team_dir();
        std::fs::create_dir_all(&team_dir).map_err(|e| SyncError::Io { action: "create", path: team_dir.clone(), source: e })?;
        // Suppression lasts for one watcher's life, as it lasts for one Claude Code session.
        client.record_suppression(None)?;
        let pulled = client.pull_fresh();
        // Files the server acknowledged and then lost go out again with the first push, unless
        // it has lost them too often to be worth sending on its own.
        let resend = matches!(&pulled, Ok(p) if !p.pushed_again().is_empty());
        if let Some(tx) = &events {
            let _ = tx.send(WatchEvent::Pulled(pulled));
        }

        let (tx, rx) = mpsc::channel();
        let fs_tx = tx.clone();
        let mut watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            if let Ok(ev) = res {
                let _ = fs_tx.send(Msg::Fs(ev));
            }
        })
        .map_err(|e| SyncError::Io { action: "watch", path: team_dir.clone(), source: std::io::Error::other(e.to_string()) })?;
        watcher
            .watch(&team_dir, RecursiveMode::Recursive)
            .map_err(|e| SyncError::Io { action: "watch", path: team_dir.clone(), source: std::io::Error::other(e.to_string()) })?;
        let done_tx = tx.clone();
        let control = std::thread::Builder::new()
            .name("mneme-team-watch".into())
            .spawn(move || control_loop(client, debounce, rx, done_tx, events))
            .map_err(|e| SyncError::Io { action: "start a thread for", path: PathBuf::new(), source: e })?;
        let started = TeamWatcher { tx, watcher: Some(watcher), control: Some(control), team_dir };
        if resend {
            started.notify_write();
        }
        Ok(started)
    }

    /// Asks for a push without waiting for a file-system event, as Claude Code's
    /// `notifyTeamMemoryWrite` does: after a write into `team/`, or a pull that found files the
    /// server lost. A push is scheduled a debounce from now when none is waiting; one that is
    /// waiting keeps its deadline ([`Debouncer::request`]). A write's own file-system event
    /// still moves the timer as every change does; a pull's request must not, or a scheduler
    /// pulling more often than the debounce would hold a waiting change back for 30 s.
    pub fn notify_write(&self) {
        let _ = self.tx.send(Msg::Notify);
    }

    /// Stops watching, waits for a push in flight, and pushes once more if changes are
    /// pending and pushes are not suppressed. Returns that last push's result, if one ran.
    pub fn shutdown(mut self) -> Option<Result<PushReport, SyncError>> {
        self.watcher.take();
        let _ = self.tx.send(Msg::Shutdown);
        self.control.take().and_then(|h| h.join().ok()).flatten()
    }
}

impl Drop for TeamWatcher {
    fn drop(&mut self) {
        self.watcher.take();
        let _ = self.tx.send(Msg::Shutdown);
    }
}

fn is_unlink(ev: &notify::Event) -> bool {
    matches!(ev.kind, EventKind::Remove(_)) || (!ev.paths.is_empty() && ev.paths.iter().all(|p| std::fs::symlink_metadata(p).is_err()))
}

/// Hands a file-system event or a push request to the debouncer; true when an unlink cleared a
/// recoverable suppression (the caller records that and says so).
fn schedule(d: &mut Debouncer, msg: &Msg, now: Instant) -> bool {
    match msg {
        Msg::Fs(ev) if matches!(ev.kind, EventKind::Access(_)) => false,
        Msg::Fs(ev) if is_unlink(ev) => d.unlink(now),
        Msg::Fs(_) => {
            d.change(now);
            false
        }
        // Not a change of its own: it must not postpone a push already waiting.
        Msg::Notify => {
            d.request(now);
            false
        }
        Msg::PushDone(_) | Msg::Shutdown => false,
    }
}

fn control_loop(
    client: Arc<SyncClient>,
    debounce: Duration,
    rx: mpsc::Receiver<Msg>,
    tx: mpsc::Sender<Msg>,
    events: Option<mpsc::Sender<WatchEvent>>,
) -> Option<Result<PushReport, SyncError>> {
    let report = |e: WatchEvent| {
        if let Some(tx) = &events {
            let _ = tx.send(e);
        }
    };
    let mut d = Debouncer::new(debounce);
    let mut running: Option<JoinHandle<()>> = None;
    let start_push = |running: &mut Option<JoinHandle<()>>| {
        let (client, tx) = (client.clone(), tx.clone());
        *running = std::thread::Builder::new()
            .name("mneme-team-push".into())
            .spawn(move || {
                let _ = tx.send(Msg::PushDone(client.push_automatic()));
            })
            .ok();
    };
    let on_done = |d: &mut Debouncer, result: Result<PushReport, SyncError>| {
        let permanent = result.as_ref().err().filter(|e| e.is_permanent()).map(SyncError::suppression_reason);
        d.push_done(result.is_ok(), permanent.clone());
        report(WatchEvent::Pushed(result));
        if let Some(reason) = permanent {
            report(WatchEvent::Suppressed(reason));
        }
    };
    loop {
        let msg = match d.deadline() {
            Some(at) => match rx.recv_timeout(at.saturating_duration_since(Instant::now())) {
                Ok(m) => Some(m),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => Some(Msg::Shutdown),
            },
            None => Some(rx.recv().unwrap_or(Msg::Shutdown)),
        };
        // A push made by hand records its success in the shared state: suppression ends there
        // (the status already says "Automatic pushes: on"), so it ends here too.
        if d.suppressed().is_some() && matches!(msg, Some(Msg::Fs(_) | Msg::Notify)) && client.state().is_ok_and(|st| st.suppressed.is_none()) {
            d.resume();
            report(WatchEvent::Resumed);
        }
        match msg {
            None => {
                if d.fire(Instant::now()) == Fire::Push {
                    start_push(&mut running);
                    if running.is_none() {
                        d.push_done(false, None);
                    }
                }
            }
            Some(m @ (Msg::Fs(_) | Msg::Notify)) => {
                if schedule(&mut d, &m, Instant::now()) {
                    let _ = client.record_suppression(None);
                    report(WatchEvent::Resumed);
                }
            }
            Some(Msg::PushDone(result)) => {
                running.take();
                on_done(&mut d, result);
            }
            Some(Msg::Shutdown) => break,
        }
    }
    // Await the push in flight: its result is (or will be) in the channel.
    if d.in_flight() {
        if let Some(h) = running.take() {
            let _ = h.join();
        }
        while let Ok(m) = rx.try_recv() {
            if let Msg::PushDone(result) = m {
                on_done(&mut d, result);
            }
        }
    }
    if d.flush() {
        let result = client.push_automatic();
        d.push_done(result.is_ok(), None);
        return Some(result);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(base: Instant, ms: u64) -> Instant {
        base + Duration::from_millis(ms)
    }

    #[test]
    fn pushes_two_seconds_after_the_last_change() {
        let t = Instant::now();
        let mut d = Debouncer::new(DEBOUNCE);
        assert_eq!(d.fire(at(t, 5_000)), Fire::Idle, "nothing pending");
        d.change(at(t, 0));
        d.change(at(t, 1_500));
        assert_eq!(d.fire(at(t, 2_000)), Fire::Idle, "the second change moved the deadline");
        assert_eq!(d.deadline(), Some(at(t, 3_500)));
        assert_eq!(d.fire(at(t, 3_500)), Fire::Push);
        d.push_done(true, None);
        assert!(!d.pending());
        assert_eq!(d.deadline(), None);
    }

    #[test]
    fn changes_more_often_than_the_debounce_are_pushed_within_the_longest_wait() {
        let t = Instant::now();
        let mut d = Debouncer::new(DEBOUNCE);
        let longest = DEBOUNCE.as_millis() as u64 * u64::from(MAX_WAIT_DEBOUNCES);
        // An autosave every second: each change alone would move the deadline past the next.
        let mut ms = 0;
        while ms < longest {
            d.change(at(t, ms));
            assert_eq!(d.fire(at(t, ms)), Fire::Idle, "not before the longest wait ({ms} ms)");
            ms += 1_000;
        }
        d.change(at(t, ms));
        assert_eq!(d.deadline(), Some(at(t, longest)), "the deadline stops at the first change plus the longest wait");
        assert_eq!(d.fire(at(t, ms)), Fire::Push);
        // Changes during and after that push wait afresh, from their own first change.
        d.change(at(t, ms + 500));
        d.push_done(true, None);
        assert_eq!(d.deadline(), Some(at(t, ms + 500 + DEBOUNCE.as_millis() as u64)));
        d.change(at(t, ms + 1_000));
        assert_eq!(d.deadline(), Some(at(t, ms + 1_000 + DEBOUNCE.as_millis() as u64)));
    }

    /// A scheduled pull that finds files the server lost asks for a push (`notify_write`); a
    /// change already waiting is still pushed at its own deadline, however often pulls come.
    #[test]
    fn push_requests_never_postpone_a_waiting_change() {
        let t = Instant::now();
        let mut d = Debouncer::new(DEBOUNCE);
        let edit = || Msg::Fs(notify::Event::new(EventKind::Modify(notify::event::ModifyKind::Any)));
        assert!(!schedule(&mut d, &edit(), at(t, 0)));
        for ms in [500, 1_000, 1_500, 1_999] {
            assert!(!schedule(&mut d, &Msg::Notify, at(t, ms)));
            assert_eq!(d.deadline(), Some(at(t, 2_000)), "the request at {ms} ms moved the deadline");
        }
        assert_eq!(d.fire(at(t, 2_000)), Fire::Push);
        // A request while that push runs gets a push of its own after it, timed from the first
        // request; later ones ride along.
        schedule(&mut d, &Msg::Notify, at(t, 2_100));
        assert_eq!(d.deadline(), Some(at(t, 4_100)));
        schedule(&mut d, &Msg::Notify, at(t, 3_000));
        assert_eq!(d.deadline(), Some(at(t, 4_100)));
        d.push_done(true, None);
        assert!(d.pending(), "the requests came after the push had read the files");
        assert_eq!(d.fire(at(t, 4_100)), Fire::Push);
        d.push_done(true, None);
        assert!(!d.pending());
        // With nothing waiting a request schedules a push as a change does, and a file's own
        // event still moves the timer.
        schedule(&mut d, &Msg::Notify, at(t, 10_000));
        assert_eq!(d.deadline(), Some(at(t, 12_000)));
        schedule(&mut d, &edit(), at(t, 11_000));
        assert_eq!(d.deadline(), Some(at(t, 13_000)));
        assert_eq!(d.fire(at(t, 13_000)), Fire::Push);
        // Suppressed: a request schedules nothing.
        d.push_done(false, Some("http_403".into()));
        schedule(&mut d, &Msg::Notify, at(t, 14_000));
        assert_eq!((d.deadline(), d.fire(at(t, 20_000))), (None, Fire::Idle));
    }

    #[test]
    fn rearms_while_a_push_is_in_flight_and_keeps_changes_made_meanwhile() {
        let t = Instant::now();
        let mut d = Debouncer::new(DEBOUNCE);
        d.change(at(t, 0));
        assert_eq!(d.fire(at(t, 2_000)), Fire::Push);
        d.change(at(t, 2_100)); // an edit while the push runs
        assert_eq!(d.fire(at(t, 4_100)), Fire::Rearm);
        assert_eq!(d.deadline(), Some(at(t, 6_100)));
        d.push_done(true, None);
        assert!(d.pending(), "the edit made during the push still needs pushing");
        assert_eq!(d.fire(at(t, 6_100)), Fire::Push);
        d.push_done(true, None);
        assert!(!d.pending());
    }

    #[test]
    fn failures_keep_changes_pending_for_the_shutdown_flush() {
        let t = Instant::now();
        let mut d = Debouncer::new(DEBOUNCE);
        d.change(at(t, 0));
        assert_eq!(d.fire(at(t, 2_000)), Fire::Push);
        d.push_done(false, None); // transient (429, 409, 5xx, network)
        assert!(d.pending() && d.suppressed().is_none());
        assert!(d.flush());
        d.push_done(true, None);
        assert!(!d.flush());
    }

    #[test]
    fn suppression_ignores_changes_until_a_recoverable_unlink() {
        let t = Instant::now();
        let mut d = Debouncer::new(DEBOUNCE);
        d.change(at(t, 0));
        assert_eq!(d.fire(at(t, 2_000)), Fire::Push);
        d.push_done(false, Some("http_403".into()));
        d.change(at(t, 3_000));
        assert_eq!(d.deadline(), None);
        assert!(!d.unlink(at(t, 3_100)), "a 403 is not cleared by deleting files");
        assert_eq!(d.fire(at(t, 9_000)), Fire::Idle);
        assert!(!d.flush(), "no shutdown flush while suppressed");

        let mut d = Debouncer::new(DEBOUNCE);
        d.change(at(t, 0));
        assert_eq!(d.fire(at(t, 2_000)), Fire::Push);
        d.push_done(false, Some(crate::wire::TOO_MANY_ENTRIES.into()));
        d.change(at(t, 2_500));
        assert_eq!(d.suppressed(), Some(crate::wire::TOO_MANY_ENTRIES));
        assert!(d.unlink(at(t, 3_000)), "deleting a file is the way back under the cap");
        assert_eq!(d.suppressed(), None);
        assert_eq!(d.fire(at(t, 5_000)), Fire::Push);
    }
}
