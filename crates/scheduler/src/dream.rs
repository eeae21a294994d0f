//! The dream loop: Claude Code checks its auto-dream gates at every turn end of a session; Mneme
//! does the same from outside (turn ends come from the extraction loop), and also every
//! `tick`, so a folder whose sessions ended before Mneme started still dreams. The gates run
//! cheapest first inside `mneme-dream` (enabled, 24 h since the lock's mtime, the 10-minute
//! scan throttle, 5 sessions since), then the `.consolidate-lock` Claude Code also honours.
//! A folder in review mode gets a pending dream for the Dreams screen; automatic applies it.
//! A pass stands in for a turn end of the session that last ended one in the folder, so from
//! 2.1.337 none dreams while that session is one that read a saved claude.ai chat (row 75):
//! the extraction loop looks for the read at each turn end, before any model run, and tells
//! this loop with the turn end.

use crate::extraction::{sleep_or_cancel, TurnEnded};
use crate::{drive_answers, provider_engine, provider_unusable, Backoff, JobKind, Outcome, Reporter};
use mneme_dream::{DreamMode, DreamRecord, DreamStatus, Dreams, Engine};
use mneme_model::Cancel;
use mneme_store::local_time::LocalZone;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// The machine's offset from UTC, for the dates a dream writes (daily logs, "written back on",
/// "moved from MEMORY.md on") and reads (the day a memory was written, the time of the last
/// dream): the day as the user's clock shows it, as Claude Code writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LocalOffset {
    /// This offset in seconds, always.
    Fixed(i32),
    /// The time zone `TZ` names (else the system's), asked for each instant, so a daemon that
    /// runs across a daylight-saving change (or a move to another time zone), and one dream over
    /// files written on both sides of it, date each instant as the clock showed it.
    /// `fallback` is the offset the caller read at start; it is no longer consulted: the zone is
    /// read from the tz database on any thread (jiff), and where a system has none both are UTC.
    System { fallback: i32 },
}

impl LocalOffset {
    /// The zone a dream dates in, under the time zone `env` names (`TZ`, else the system's).
    pub fn zone(self, env: &mneme_store::Environment) -> LocalZone {
        match self {
            LocalOffset::Fixed(secs) => LocalZone::Fixed(secs),
            LocalOffset::System { .. } => LocalZone::from_tz(env.var("TZ")),
        }
    }
}

pub struct DreamLoop {
    pub dreams: Dreams,
    /// The offset the dates a dream writes are local to.
    pub utc_offset: LocalOffset,
    pub reporter: Reporter,
    /// How often every known folder's gates are checked besides turn ends.
    pub tick: Duration,
    pub env: mneme_store::Environment,
    /// Project folders to check from the start.
    pub folders: crate::Folders,
    pub turn_ends: mpsc::UnboundedReceiver<TurnEnded>,
    /// Counts finished passes (every folder due at a tick, or the one a turn ended in, checked
    /// and dreamed over as its gates allow), so a caller can tell a check happened without
    /// timing it: see [`crate::SchedulerHandle::dream_passes`].
    pub passes: tokio::sync::watch::Sender<u64>,
}

impl DreamLoop {
    pub async fn run(&mut self, cancel: Cancel) {
        // Folders seen so far → the session that last ended a turn there.
        let mut known: BTreeMap<PathBuf, LastTurn> = BTreeMap::new();
        // The folders to start with, until they are found: discovery reads Claude Code's own
        // folders, and while their drive does not answer it gives up (after its patience) and
        // is asked again at each tick, so the loop still dreams where turns end meanwhile.
        let mut starting = true;
        let mut backoff: HashMap<PathBuf, (Backoff, Instant)> = HashMap::new();
        let mut next_tick = Instant::now();
        loop {
            let due: Vec<(PathBuf, LastTurn)> = if Instant::now() >= next_tick {
                next_tick = Instant::now() + self.tick;
                if starting {
                    starting = !self.start_folders(&mut known).await;
                }
                known.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
            } else {
                let wait = next_tick.saturating_duration_since(Instant::now());
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(wait) => continue,
                    ended = self.turn_ends.recv() => match ended {
                        Some(t) => {
                            let last = LastTurn { session: t.session_id, read_saved_chat: t.read_saved_chat };
                            known.insert(t.cwd.clone(), last.clone());
                            vec![(t.cwd, last)]
                        }
                        // The extraction loop is gone: keep ticking on the timer alone.
                        None => {
                            if sleep_or_cancel(wait, &cancel).await { return; }
                            continue;
                        }
                    },
                }
            };
            for (cwd, last) in due {
                if cancel.is_cancelled() {
                    return;
                }
                if let Some((_, until)) = backoff.get(&cwd) {
                    if Instant::now() < *until {
                        continue;
                    }
                }
                match self.check(&cwd, last, &cancel).await {
                    Ok(()) => {
                        backoff.remove(&cwd);
                    }
                    Err(()) => {
                        let entry = backoff
                            .entry(cwd.clone())
                            .or_insert_with(|| (Backoff::new(Duration::from_secs(600), Duration::from_secs(6 * 3600)), Instant::now()));
                        let wait = entry.0.failed();
                        entry.1 = Instant::now() + wait;
                    }
                }
            }
            self.passes.send_modify(|n| *n += 1);
        }
    }

    /// Adds the folders the loop starts with to `known`, found off the async workers; false
    /// (said once while it lasts) when the drive holding Claude Code's own folders does not
    /// answer.
    async fn start_folders(&self, known: &mut BTreeMap<PathBuf, LastTurn>) -> bool {
        let (env, folders) = (self.env.clone(), self.folders.clone());
        let found = tokio::task::spawn_blocking(move || folders.resolve(&env)).await;
        let projects = self.env.projects_dir();
        match found {
            Ok(Ok(start)) => {
                self.say_once(&projects, Away::Here, String::new);
                for f in start {
                    known.entry(f).or_default();
                }
                true
            }
            Ok(Err(e)) => {
                self.say_once(&projects, Away::NotAnswering, || {
                    format!("{e} The dream loop looks for them again at each check (every few minutes), and meanwhile dreams where sessions end turns")
                });
                false
            }
            // Discovery panicked (a bug, said by the supervisor's log elsewhere) or the runtime is
            // stopping: nothing to start with.
            Err(_) => true,
        }
    }

    /// One gate check (and dream, when the gates open) for the folder a session ran in.
    /// Only runs that get past the gates are recorded: a closed gate every few minutes is not news.
    async fn check(&self, cwd: &std::path::Path, last: LastTurn, cancel: &Cancel) -> Result<(), ()> {
        // A project folder that is gone (deleted, renamed, on a drive that is not mounted) holds
        // what a session there would dream by: its settings (the memory folder, auto dream on or
        // off) and its git root. Without it the defaults would name the folder, and a dream could
        // work on a new, empty memory folder or one the project moved away from. One on a drive
        // that stopped answering would hold this loop, and every other project's dreams, until
        // it answers again: its drive is asked first, on a thread of its own with a time limit
        // (`mneme_store::drive`), and it waits for the next pass. Either is said once while it
        // lasts (per run log: not at every tick), again if it comes back after it ended.
        if !drive_answers(cwd).await {
            self.say_once(cwd, Away::NotAnswering, || not_answering(cwd));
            return Ok(());
        }
        if !cwd.is_dir() {
            self.say_once(cwd, Away::Gone, || format!("{} is gone; not dreaming until it is back", cwd.display()));
            return Ok(());
        }
        let mut site = self.dreams.site_for_cwd(cwd);
        site.target.current_session = last.session.clone();
        let mneme_dream::DreamSite { target, enabled, flags, .. } = site.clone();
        // The memory folder may be on another drive (`autoMemoryDirectory`).
        if !drive_answers(&target.memory_dir).await {
            self.say_once(cwd, Away::NotAnswering, || not_answering(&target.memory_dir));
            return Ok(());
        }
        self.say_once(cwd, Away::Here, String::new);
        if !enabled.is_on() || self.dreams.mode(&target.memory_dir).is_ok_and(|m| m == DreamMode::Off) {
            return Ok(());
        }
        // From 2.1.337 a session that read a claude.ai chat's saved text does not dream (row 75):
        // Claude Code's auto-dream gate refuses in that session's process before it looks at the
        // time, the sessions or the lock. A pass here stands in for a turn end of the session
        // that last ended one in the folder, so none dreams while that is such a session; a
        // turn end of another session there (a new one after /clear included) dreams again.
        // Sessions that read a chat are still counted and reviewed by a dream from another:
        // Claude Code's listing of the sessions since the last dream does not leave them out.
        if self.chat_read_stops(&last).await {
            self.say_chat_read_once(cwd, &target, Some(last.session.as_deref().unwrap_or_default()));
            return Ok(());
        }
        self.say_chat_read_once(cwd, &target, None);
        // The gates as they stand (this loop's own throttle included): only a folder whose
        // gates are all open gets a run announced, so the app can show "Dreaming…" while it runs.
        if self.dreams.status(&target, &enabled, &flags).blocked_by.is_some() {
            return Ok(());
        }
        // The release's last look before it dreams: sessions that ran under another
        // organization, or for a limited-retention owner who is not the sign-in's, are not
        // dreamed over (`mneme_dream::organization`). Said once while it lasts.
        let skip = self.organization_skip(&site).await;
        if self.say_organization_once(cwd, &target, skip) {
            return Ok(());
        }
        let provider = match provider_engine(self.dreams.environment()) {
            Ok(p) => p,
            Err(e) => {
                let run = self.reporter.begin(JobKind::Dream, target.memory_dir.display().to_string());
                run.finish(provider_unusable(&e));
                return Err(());
            }
        };
        let engine = match &provider {
            Some(p) => Engine::Model(p.as_ref()),
            None => Engine::Offline,
        };
        let run = self.reporter.begin(JobKind::Dream, target.memory_dir.display().to_string());
        run.progress(format!("Dreaming over {}", target.memory_dir.display()));
        // The zone, asked for each instant the dream dates (a clone shares the scan throttle):
        // daylight saving changes while the daemon runs, and between the files a dream reads.
        let dreams = self.dreams.clone().with_local_zone(self.utc_offset.zone(&self.env));
        match dreams.tick(&target, &enabled, &flags, engine, cancel).await {
            // Lost the lock to another dreamer (Claude Code or another Mneme) between the look
            // and the tick.
            Ok(None) => {
                run.finish(Outcome::Skipped { reason: "another dreamer took the lock first".into() });
                Ok(())
            }
            Ok(Some(record)) => {
                let failed = record.status == DreamStatus::Failed;
                run.finish(if cancel.is_cancelled() && failed { Outcome::Cancelled } else { dream_outcome(&record) });
                if failed { Err(()) } else { Ok(()) }
            }
            Err(e) => {
                run.finish(Outcome::Failed { error: e.to_string() });
                Err(())
            }
        }
    }
}

/// The turn end a pass stands in for: the session that last ended a turn in the folder (none
/// for a folder the loop started with) and whether extraction found it read a saved claude.ai
/// chat.
#[derive(Debug, Clone, Default)]
struct LastTurn {
    session: Option<String>,
    read_saved_chat: bool,
}

impl DreamLoop {
    /// Whether the Claude Code installed does not dream from the session of `last` (row 75).
    async fn chat_read_stops(&self, last: &LastTurn) -> bool {
        if !last.read_saved_chat {
            return false;
        }
        // `claude --version` may be asked (once per binary): off the async workers.
        let env = self.dreams.environment().clone();
        tokio::task::spawn_blocking(move || mneme_store::claude_install::installed_profile(&env).memory_off_after_chat_read)
            .await
            .unwrap_or(false)
    }

    /// Records a skipped dream of `target` saying that `session` (its id, empty when its
    /// transcript names none) read a saved claude.ai chat, when it is not the session last said
    /// so for `cwd` in this run log; `None` forgets it.
    fn say_chat_read_once(&self, cwd: &std::path::Path, target: &mneme_dream::DreamTarget, session: Option<&str>) {
        static SAID: std::sync::Mutex<BTreeMap<(PathBuf, PathBuf), String>> = std::sync::Mutex::new(BTreeMap::new());
        let key = (self.reporter.log().path().to_path_buf(), cwd.to_path_buf());
        let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
        let Some(session) = session else {
            said.remove(&key);
            return;
        };
        if said.insert(key, session.to_string()).as_deref() != Some(session) {
            let who = if session.is_empty() { "the session".to_string() } else { format!("session {session}") };
            let run = self.reporter.begin(JobKind::Dream, target.memory_dir.display().to_string());
            run.finish(Outcome::Skipped {
                reason: format!(
                    "{who}, the last to end a turn in {}, read a claude.ai chat's saved text, and the Claude Code installed (2.1.337 or later) does not dream from such a session; the dream waits for a turn end of another session there (/clear starts one)",
                    cwd.display()
                ),
            });
        }
    }
}

/// Where a project folder stands, as last said in the run log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Away {
    Here,
    Gone,
    NotAnswering,
}

impl DreamLoop {
    /// Records `reason` as a skipped dream of `cwd` when the folder's standing changed to
    /// `now` (gone, or on a drive not answering) since it was last said; `Here` forgets it, so
    /// the next time it goes away is said again.
    fn say_once(&self, cwd: &std::path::Path, now: Away, reason: impl FnOnce() -> String) {
        static SAID: std::sync::Mutex<BTreeMap<(PathBuf, PathBuf), Away>> = std::sync::Mutex::new(BTreeMap::new());
        let key = (self.reporter.log().path().to_path_buf(), cwd.to_path_buf());
        let changed = {
            let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
            if now == Away::Here {
                said.remove(&key);
                false
            } else {
                said.insert(key, now) != Some(now)
            }
        };
        if changed {
            let run = self.reporter.begin(JobKind::Dream, cwd.display().to_string());
            run.finish(Outcome::Skipped { reason: reason() });
        }
    }
}

impl DreamLoop {
    /// Why the Claude Code installed would not dream over `site`'s sessions for the
    /// organizations they ran under, if so. The search reads every transcript of the folder, so
    /// its answer is kept for the scan throttle's 10 minutes: Claude Code searches at most as
    /// often, after its throttle. It runs with Claude Code's own time limit
    /// ([`SEARCH_LIMIT`](mneme_dream::organization::SEARCH_LIMIT)) and is waited for at most
    /// [`SEARCH_WAIT`] (see [`bounded_search`]); either way a search that does not finish is a
    /// failed search, kept as the others are.
    async fn organization_skip(&self, site: &mneme_dream::DreamSite) -> Option<String> {
        type Kept = BTreeMap<PathBuf, (Instant, Option<String>)>;
        static KEPT: std::sync::Mutex<Kept> = std::sync::Mutex::new(BTreeMap::new());
        let key = site.target.transcript_dir.clone();
        if let Some((at, why)) = KEPT.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            if at.elapsed() < mneme_dream::gate::SESSION_SCAN_INTERVAL {
                return why.clone();
            }
        }
        // `claude --version` may be asked (once per binary): off the async workers, and not
        // within the search's time.
        let env = self.dreams.environment().clone();
        let profile = tokio::task::spawn_blocking(move || mneme_store::claude_install::installed_profile(&env)).await;
        let why = match profile {
            // The same search the Dreams screen's status shows (`DreamSite::organization_skip`),
            // keeping each unchanged transcript's marks between checks.
            Ok(profile) => {
                let site = site.clone();
                bounded_search(key.clone(), SEARCH_WAIT, move || {
                    static CACHE: std::sync::LazyLock<mneme_dream::organization::SearchCache> = std::sync::LazyLock::new(Default::default);
                    let search = mneme_dream::organization::Search { cache: Some(&CACHE), limit: Some(mneme_dream::organization::SEARCH_LIMIT) };
                    site.organization_skip_searching(&profile, search).map(|s| s.explanation())
                })
                .await
            }
            Err(e) => Some(stopped_unexpectedly(&e.to_string())),
        };
        let mut kept = KEPT.lock().unwrap_or_else(|e| e.into_inner());
        kept.retain(|_, (at, _)| at.elapsed() < mneme_dream::gate::SESSION_SCAN_INTERVAL);
        kept.insert(key, (Instant::now(), why.clone()));
        why
    }

    /// Records `skip` as a skipped dream of `target` when it differs from what was last said
    /// for `cwd` in this run log; `None` forgets it. Whether the dream is skipped.
    fn say_organization_once(&self, cwd: &std::path::Path, target: &mneme_dream::DreamTarget, skip: Option<String>) -> bool {
        static SAID: std::sync::Mutex<BTreeMap<(PathBuf, PathBuf), String>> = std::sync::Mutex::new(BTreeMap::new());
        let key = (self.reporter.log().path().to_path_buf(), cwd.to_path_buf());
        let mut said = SAID.lock().unwrap_or_else(|e| e.into_inner());
        let Some(why) = skip else {
            said.remove(&key);
            return false;
        };
        if said.insert(key, why.clone()).as_ref() != Some(&why) {
            let run = self.reporter.begin(JobKind::Dream, target.memory_dir.display().to_string());
            run.finish(Outcome::Skipped { reason: why });
        }
        true
    }
}

/// How long the scheduler waits for an organization search: Claude Code's limit, after which
/// the search stops by itself between two reads, and a few seconds for it to say so. Only a
/// search blocked in one read (on a drive that stopped answering) is given up on here.
pub const SEARCH_WAIT: Duration = Duration::from_secs(mneme_dream::organization::SEARCH_LIMIT.as_secs() + 5);

/// Runs the organization search `search` of the transcripts' folder `key` on a thread of its
/// own and waits for it at most `wait`; a search that did not answer by then is a failed search
/// (Claude Code skips the dream then, `hybrid_organization_check_failed`: going ahead would
/// dream over sessions that may be another organization's). A search blocked on a hung drive
/// cannot be stopped: its thread stays until the drive answers, and while it does no other
/// search of that folder starts (each check of it is a failed search), so a drive that hangs
/// for hours costs one thread per folder, not one per check. A thread of its own rather than
/// the runtime's blocking pool: dropping a runtime waits for its blocking tasks.
async fn bounded_search(key: PathBuf, wait: Duration, search: impl FnOnce() -> Option<String> + Send + 'static) -> Option<String> {
    static RUNNING: std::sync::Mutex<BTreeSet<PathBuf>> = std::sync::Mutex::new(BTreeSet::new());
    /// Held by the search's thread: the folder is searchable again once it ends (or panics).
    struct Running(PathBuf);
    impl Drop for Running {
        fn drop(&mut self) {
            RUNNING.lock().unwrap_or_else(|e| e.into_inner()).remove(&self.0);
        }
    }
    if !RUNNING.lock().unwrap_or_else(|e| e.into_inner()).insert(key.clone()) {
        return Some(format!(
            "an earlier search of this project's sessions ({}) for the organizations they ran under has not finished (the drive holding them may have stopped answering), and Claude Code does not dream while its search fails (hybrid_organization_check_failed); Mneme tries again at a later check",
            key.display()
        ));
    }
    let running = Running(key.clone());
    let (tx, answer) = tokio::sync::oneshot::channel();
    let started = std::thread::Builder::new().name("mneme-organization-search".into()).spawn(move || {
        let _running = running;
        let _ = tx.send(search());
    });
    if let Err(e) = started {
        return Some(stopped_unexpectedly(&format!("no thread for it: {e}")));
    }
    match tokio::time::timeout(wait, answer).await {
        Ok(Ok(why)) => why,
        // The search panicked (a bug, said by the panic's own output).
        Ok(Err(_)) => Some(stopped_unexpectedly("it panicked")),
        Err(_) => Some(format!(
            "the search of this project's sessions ({}) for the organizations they ran under did not finish within {} (the drive holding them may have stopped answering), and Claude Code does not dream when its search fails (hybrid_organization_check_failed); Mneme tries again at a later check",
            key.display(),
            if wait.as_secs() > 0 { format!("{} seconds", wait.as_secs()) } else { format!("{} ms", wait.as_millis()) }
        )),
    }
}

/// The skip reason for an organization search that ended without an answer.
fn stopped_unexpectedly(why: &str) -> String {
    format!("the search of this project's sessions for the organizations they ran under stopped unexpectedly ({why}), so no dream runs here until it succeeds")
}

/// The skip reason for a project whose drive does not answer.
fn not_answering(dir: &std::path::Path) -> String {
    format!(
        "the drive holding {} is not answering (a network share or USB drive that hangs?); Mneme tries again at the next check (every few minutes) and dreams once it answers",
        dir.display()
    )
}

pub fn dream_outcome(record: &DreamRecord) -> Outcome {
    match record.status {
        DreamStatus::Failed => Outcome::Failed { error: record.error.clone().unwrap_or_else(|| "the dream failed".into()) },
        DreamStatus::Pending => Outcome::Done { summary: format!("{} — waiting for review in Dreams ({})", record.summary, record.id) },
        _ => Outcome::Done { summary: format!("{} ({})", record.summary, record.id) },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A search that does not answer within the wait is a failed search; while its thread is
    /// still blocked, checks of the same folder fail at once without starting another (other
    /// folders search as usual); once it ends, the folder is searched again.
    #[test]
    fn a_search_past_the_wait_fails_and_no_second_one_starts_while_it_runs() {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let key = PathBuf::from("/projects/-a-slow-folder");
        let (release, blocked) = std::sync::mpsc::channel::<()>();
        let (ended_tx, ended) = std::sync::mpsc::channel::<()>();
        let slow = rt.block_on(bounded_search(key.clone(), Duration::from_millis(50), move || {
            let _ = blocked.recv();
            let _ = ended_tx.send(());
            None
        }));
        let said = slow.expect("a search past the wait is a failed search");
        assert!(said.contains("did not finish within 50 ms") && said.contains("hybrid_organization_check_failed"), "{said}");

        let ran = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let r = ran.clone();
        let again = rt.block_on(bounded_search(key.clone(), SEARCH_WAIT, move || {
            r.store(true, std::sync::atomic::Ordering::SeqCst);
            None
        }));
        assert!(again.expect("still failed").contains("has not finished"));
        assert!(!ran.load(std::sync::atomic::Ordering::SeqCst), "a second search started beside the blocked one");
        assert_eq!(rt.block_on(bounded_search(PathBuf::from("/projects/-other"), SEARCH_WAIT, || Some("theirs".into()))).as_deref(), Some("theirs"));

        release.send(()).unwrap();
        ended.recv_timeout(Duration::from_secs(60)).expect("the blocked search ends");
        // Its thread lets go of the folder as it ends, a moment after the search returned.
        let answer = loop {
            match rt.block_on(bounded_search(key.clone(), SEARCH_WAIT, || None)) {
                Some(s) if s.contains("has not finished") => std::thread::yield_now(),
                other => break other,
            }
        };
        assert_eq!(answer, None);
    }

    #[test]
    fn the_zone_is_the_one_the_environment_names() {
        // POSIX zone strings need no tz database: east of UTC is a negative offset there.
        let env = mneme_store::Environment::with_home("/h");
        let at = |secs: u64| std::time::UNIX_EPOCH + Duration::from_secs(secs);
        assert_eq!(LocalOffset::System { fallback: 7 }.zone(&env.clone().set_var("TZ", "IST-5:30")).offset_at(at(1_794_312_000)), 19_800);
        assert_eq!(LocalOffset::System { fallback: 7 }.zone(&env.clone().set_var("TZ", "NST3:30")).offset_at(at(1_794_312_000)), -12_600);
        // New York's rules: summer time on 31 October 2026, winter time on 10 November.
        let new_york = LocalOffset::System { fallback: 7 }.zone(&env.clone().set_var("TZ", "EST5EDT,M3.2.0,M11.1.0"));
        assert_eq!((new_york.offset_at(at(1_793_421_000)), new_york.offset_at(at(1_794_312_000))), (-4 * 3600, -5 * 3600));
        assert_eq!(LocalOffset::Fixed(-3600).zone(&env.set_var("TZ", "IST-5:30")).offset_at(at(1_794_312_000)), -3600);
    }
}
