//! The extraction loop: follow every Claude Code session transcript under
//! `<config>/projects/`, and at each turn end apply Claude Code's extraction rules (cursor,
//! direct-write and no-prose skips, every-N, one trailing run) through `mneme-extract`, with
//! the provider chosen in Settings (offline by default). Each turn end is also passed on to the
//! dream loop, which checks its gates then, as Claude Code does from its stop hooks.

use crate::{drive_answers, provider_engine, provider_unusable, JobKind, Outcome, Reporter};
use mneme_extract::watch::TranscriptWatcher;
use mneme_extract::rules::SkipReason;
use mneme_extract::session_memory::Updated;
use mneme_extract::{Engine, ExtractError, Extractor, RunOutcome, RunRecord, Session};
use mneme_model::Cancel;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How long a session's transcript may stay unchanged before its entries are let go; a change
/// after that opens it again from its saved state, as after a restart.
const IDLE: Duration = Duration::from_secs(30 * 60);
/// How often a transcript with no `cwd` in it yet is tried again before it is left alone until
/// the next start: each try reads the whole file.
const MAX_OPEN_ATTEMPTS: u32 = 10;
/// How long a transcript that could not be opened for another reason (a damaged state file, a
/// read error: something the user fixes) waits before its next change tries it again. Each try
/// reads the whole file, and a live session changes it many times a minute.
const RETRY_FAILED_OPEN: Duration = Duration::from_secs(60);

/// The sessions the loop follows: each with when its transcript last changed, so that a
/// machine that runs for weeks does not keep every transcript it ever saw in memory.
#[derive(Default)]
struct Sessions {
    open: HashMap<PathBuf, (Session, Instant)>,
    failed_opens: HashMap<PathBuf, FailedOpen>,
    model: ModelBackoff,
}

/// After a model run fails, the model is not asked again for a while (doubling, up to half an
/// hour): with a provider that is down, every turn end of every session would otherwise spend
/// its retries, minutes each, one after another. Nothing is lost: a turn end left out is part
/// of the next run, which starts from the session's saved cursor.
struct ModelBackoff {
    backoff: crate::Backoff,
    not_before: Option<Instant>,
}

impl Default for ModelBackoff {
    fn default() -> Self {
        ModelBackoff { backoff: crate::Backoff::new(Duration::from_secs(30), Duration::from_secs(30 * 60)), not_before: None }
    }
}

impl ModelBackoff {
    /// How long the model is still rested, if it is.
    fn resting(&self, now: Instant) -> Option<Duration> {
        self.not_before.filter(|t| now < *t).map(|t| t - now)
    }

    /// Learns from a turn end's records: a failed run rests the model longer, a run that got
    /// an answer ends the rest.
    fn learn(&mut self, records: &[RunRecord], now: Instant) {
        if records.iter().any(|r| matches!(r.outcome, RunOutcome::Failed { .. })) {
            self.not_before = Some(now + self.backoff.failed());
        } else if records.iter().any(|r| matches!(r.outcome, RunOutcome::Saved | RunOutcome::Staged { .. } | RunOutcome::NothingToSave)) {
            self.backoff.succeeded();
            self.not_before = None;
        }
    }
}

/// A transcript that could not be opened, and what was done about it.
#[derive(Default)]
struct FailedOpen {
    /// Tries that found no `cwd` in it yet.
    no_cwd: u32,
    /// The last error recorded as a run: a lasting one is said once, not at every change.
    reported: Option<String>,
    /// No new try before this.
    not_before: Option<Instant>,
    /// Not tried again until the next start.
    given_up: bool,
}

impl Sessions {
    fn forget_idle(&mut self, now: Instant) {
        self.open.retain(|_, (_, seen)| now.duration_since(*seen) < IDLE);
    }
}

/// A session's turn ended: which folder it ran in and which session it was.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnEnded {
    pub cwd: PathBuf,
    pub session_id: Option<String>,
    /// Extraction found that the session read a saved claude.ai chat (row 75), as of this turn
    /// end: from 2.1.337 Claude Code does not dream from such a session.
    pub read_saved_chat: bool,
}

impl TurnEnded {
    /// The turn end of `session`, with what extraction knows of it so far.
    fn of(session: &Session) -> TurnEnded {
        TurnEnded { cwd: session.project().root.clone(), session_id: session.session_id().map(str::to_string), read_saved_chat: session.read_saved_chat() }
    }
}

pub struct ExtractionLoop {
    pub extractor: Extractor,
    pub reporter: Reporter,
    /// Also keep each session's notes file (session memory) when a model provider is chosen.
    pub session_memory: bool,
    /// How often the watcher's queue is drained.
    pub poll: Duration,
    pub turn_ends: mpsc::UnboundedSender<TurnEnded>,
    /// Set once transcripts are watched (or the loop waits for Claude Code's projects folder to
    /// appear), so callers know that a session writing from now on will be seen.
    pub ready: tokio::sync::watch::Sender<bool>,
}

/// What tells a folder from another made at the same path later: its device and inode.
type FolderId = (u64, u64);

fn folder_id(dir: &Path) -> Option<FolderId> {
    let meta = std::fs::metadata(dir).ok().filter(std::fs::Metadata::is_dir)?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        Some((meta.dev(), meta.ino()))
    }
    #[cfg(not(unix))]
    {
        let _ = meta;
        Some((0, 0))
    }
}

impl ExtractionLoop {
    pub async fn run(&self, cancel: Cancel) {
        let env = self.extractor.env().clone();
        let projects_dir = env.projects_dir();
        let mut sessions = Sessions::default();
        // The watcher and the folder it watches. A projects folder removed and made again (a
        // cleanup, a restore from backup) is a new folder the old watch never sees, so its
        // identity is checked on every poll and the watch made again when it changed.
        let mut watching: Option<(TranscriptWatcher, Option<FolderId>)> = None;
        let mut failed_once = false;
        loop {
            let id = folder_id(&projects_dir);
            let stale = match &watching {
                Some((_, was)) => id.is_none() || *was != id,
                None => true,
            };
            if stale {
                watching = None;
                // Claude Code creates the projects folder with its first session; wait for it.
                if projects_dir.is_dir() {
                    match TranscriptWatcher::new(&projects_dir) {
                        Ok(w) => {
                            watching = Some((w, id));
                            failed_once = false;
                        }
                        Err(e) if !failed_once => {
                            failed_once = true;
                            let run = self.reporter.begin(JobKind::Extraction, projects_dir.display().to_string());
                            run.finish(Outcome::Failed { error: format!("cannot watch {}: {e}", projects_dir.display()) });
                        }
                        Err(_) => {}
                    }
                }
                self.ready.send_replace(true);
            }
            let wait = if watching.is_some() { self.poll } else { Duration::from_secs(30).min(self.poll * 10) };
            if sleep_or_cancel(wait, &cancel).await {
                return;
            }
            let Some((watcher, _)) = &watching else { continue };
            for transcript in watcher.drain() {
                if cancel.is_cancelled() {
                    return;
                }
                self.on_change(&mut sessions, transcript, &cancel).await;
            }
            sessions.forget_idle(Instant::now());
        }
    }

    async fn on_change(&self, sessions: &mut Sessions, transcript: PathBuf, cancel: &Cancel) {
        if !sessions.open.contains_key(&transcript) {
            let failed = sessions.failed_opens.entry(transcript.clone()).or_default();
            if failed.given_up || failed.not_before.is_some_and(|t| Instant::now() < t) {
                return;
            }
            // The open asks the project's drive: off the async worker, which every session's
            // turns share (the first look at a drive that stopped answering takes 3 s).
            match self.extractor.open_session_asking(&transcript, |dir| async move { drive_answers(&dir).await }).await {
                Ok(s) => {
                    sessions.failed_opens.remove(&transcript);
                    sessions.open.insert(transcript.clone(), (s, Instant::now()));
                }
                // A transcript with no `cwd` yet (its first lines are still being written) is
                // tried again on its next change, a few times, quietly: each try reads the
                // whole file, and a file that never names one is not a session to report.
                Err(ExtractError::NoCwd { .. }) => {
                    failed.no_cwd += 1;
                    failed.given_up = failed.no_cwd >= MAX_OPEN_ATTEMPTS;
                    return;
                }
                // Gone between its change and the open (a session deleted): nothing to follow.
                Err(ExtractError::Read { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                    sessions.failed_opens.remove(&transcript);
                    return;
                }
                // A transcript naming a folder it is not stored under is not going to change its
                // mind: said once, then left alone.
                Err(e @ ExtractError::ForeignCwd { .. }) => {
                    failed.given_up = true;
                    let run = self.reporter.begin(JobKind::Extraction, transcript.display().to_string());
                    run.finish(Outcome::Failed { error: e.to_string() });
                    return;
                }
                // The project's drive does not answer (a network share or USB drive that hangs):
                // nothing for the user to fix in Mneme, and nothing lost, so a skip said once
                // while it lasts, as for a turn. Tried again at the transcript's next change,
                // not after a wait: while the drive still hangs that try fails at once (its
                // look is remembered, `mneme_store::drive`), and once it answers the session
                // opens with the next turn.
                Err(e @ ExtractError::DriveNotAnswering { .. }) => {
                    let reason = e.to_string();
                    if failed.reported.as_ref() != Some(&reason) {
                        failed.reported = Some(reason.clone());
                        let run = self.reporter.begin(JobKind::Extraction, transcript.display().to_string());
                        run.finish(Outcome::Skipped { reason });
                    }
                    return;
                }
                // Anything else (a damaged state file, a transcript Mneme may not read) needs the
                // user: said once, with the path and what to do, and tried again on a later
                // change once they may have fixed it.
                Err(e) => {
                    let remedy = match &e {
                        ExtractError::Read { .. } => "; check that Mneme may read it",
                        _ => "",
                    };
                    let error = format!("{e}{remedy}");
                    failed.not_before = Some(Instant::now() + RETRY_FAILED_OPEN);
                    if failed.reported.as_ref() != Some(&error) {
                        failed.reported = Some(error.clone());
                        let run = self.reporter.begin(JobKind::Extraction, transcript.display().to_string());
                        let error = format!("{error} (this session's turns are extracted once it opens: Mneme tries again when the transcript changes)");
                        run.finish(Outcome::Failed { error });
                    }
                    return;
                }
            }
        }
        let Some((session, seen)) = sessions.open.get_mut(&transcript) else { return };
        *seen = Instant::now();
        let messages = match session.poll() {
            Ok(Some(m)) => m,
            Ok(None) => return,
            Err(e) => {
                let run = self.reporter.begin(JobKind::Extraction, transcript.display().to_string());
                run.finish(Outcome::Failed { error: format!("could not read {}: {e}", transcript.display()) });
                return;
            }
        };
        // The dream loop hears of the turn end now, before extraction's model run: a model that
        // takes minutes (or never answers) must not hold a dream back. From 2.1.337 no dream starts from a session that read a
        // saved claude.ai chat, the turn that read it included (row 75), so that read is looked
        // for here too, whether or not extraction runs for this turn (auto memory or Mneme's
        // extraction off for the project, a model provider resting, a drive not answering):
        // the release's mark comes from the read itself, not from its extraction.
        let read_saved_chat = session.read_saved_chat()
            || (mneme_store::claude_install::installed_profile(self.extractor.env()).memory_off_after_chat_read
                && session.saved_chat_read_in(&messages).is_some());
        let _ = self.turn_ends.send(TurnEnded { read_saved_chat, ..TurnEnded::of(session) });
        let run = self.reporter.begin(JobKind::Extraction, transcript.display().to_string());
        // The run reads the project's settings and writes its memory folder: on a drive that
        // does not answer it would hold every other session's turns until the drive answers.
        // Nothing is lost by waiting: the next run starts from the session's saved cursor.
        for dir in [&session.project().root, &session.project().memory_dir.dir] {
            if !drive_answers(dir).await {
                run.finish(Outcome::Skipped {
                    reason: format!(
                        "the drive holding {} is not answering (a network share or USB drive that hangs?); this turn is extracted with the session's next turn end once it answers",
                        dir.display()
                    ),
                });
                return;
            }
        }
        let provider = match provider_engine(self.extractor.env()) {
            Ok(p) => p,
            Err(e) => {
                run.finish(provider_unusable(&e));
                return;
            }
        };
        let engine = match &provider {
            Some(p) => Engine::Model(p.as_ref()),
            None => Engine::Offline,
        };
        if let (Engine::Model(_), Some(left)) = (&engine, sessions.model.resting(Instant::now())) {
            run.finish(Outcome::Skipped {
                reason: format!(
                    "the model provider failed on an earlier run; it is asked again in {} s, and that run includes this turn",
                    left.as_secs().max(1)
                ),
            });
            return;
        }
        run.progress(format!("turn ended in {}", session.project().root.display()));
        let outcome = match self.extractor.on_turn_end(session, messages, engine, cancel).await {
            Ok(records) => {
                if matches!(engine, Engine::Model(_)) {
                    sessions.model.learn(&records, Instant::now());
                }
                summarize(&records)
            }
            Err(e) => Outcome::Failed { error: e.to_string() },
        };
        run.finish(outcome);

        if let (true, Some(p)) = (self.session_memory, &provider) {
            if let Some(outcome) = notes_outcome(self.extractor.update_session_memory(session, p.as_ref(), cancel).await) {
                let run = self.reporter.begin(JobKind::Extraction, transcript.display().to_string());
                run.finish(outcome);
            }
        }
    }
}

/// The run log's line for a session-notes update, `None` when none was due: the update's own
/// summary, which says whether the notes changed and, when older messages were not read, how
/// many and why, so notes written from part of a conversation never read as from all of it.
fn notes_outcome(update: Result<Option<Updated>, ExtractError>) -> Option<Outcome> {
    match update {
        Ok(None) => None,
        Ok(Some(updated)) => Some(Outcome::Done { summary: updated.summary() }),
        Err(e) => Some(Outcome::Failed { error: format!("session notes: {e}") }),
    }
}

/// One line for the run log from the extraction records of a turn end (a run and, possibly,
/// its trailing run).
pub fn summarize(records: &[RunRecord]) -> Outcome {
    let mut lines = Vec::new();
    let mut failed = Vec::new();
    for r in records {
        match &r.outcome {
            RunOutcome::Saved => lines.push(r.message.clone().unwrap_or_else(|| "Saved".into())),
            RunOutcome::Staged { inbox_id } => lines.push(format!("Staged for review in the inbox ({inbox_id})")),
            RunOutcome::NothingToSave => lines.push("Nothing worth saving".into()),
            RunOutcome::Skipped { reason } => lines.push(format!("Skipped: {}", skip_text(*reason))),
            RunOutcome::Disabled { why } => lines.push(format!("Off: {why}")),
            RunOutcome::Failed { error } => failed.push(error.clone()),
        }
        // A transcript larger than one run holds: say how many messages went unread and why,
        // or the job log reads as if the whole session was looked at.
        if let Some(left_out) = &r.left_out {
            let note = format!("Left out: {left_out}");
            match r.outcome {
                RunOutcome::Failed { .. } => failed.push(note),
                _ => lines.push(note),
            }
        }
    }
    if !failed.is_empty() {
        return Outcome::Failed { error: failed.join("; ") };
    }
    if lines.is_empty() {
        return Outcome::Skipped { reason: "no run".into() };
    }
    Outcome::Done { summary: lines.join("\n") }
}

fn skip_text(reason: SkipReason) -> &'static str {
    match reason {
        SkipReason::DirectWrite => "Claude Code already wrote memory this turn",
        SkipReason::NoProse => "no message of three or more words from the user since the last run",
        SkipReason::Throttled => "waiting for more turns (every-N setting)",
        SkipReason::Stashed => "a run is in progress; this turn is covered by its trailing run",
    }
}

/// Sleeps, or returns `true` at once when cancelled.
pub(crate) async fn sleep_or_cancel(d: Duration, cancel: &Cancel) -> bool {
    tokio::select! {
        _ = tokio::time::sleep(d) => cancel.is_cancelled(),
        _ = cancel.cancelled() => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_extract::record::{LeftOut, RunAbout, Trigger};

    fn record(outcome: RunOutcome, left_out: Option<LeftOut>) -> RunRecord {
        let about = RunAbout {
            memory_dir: "/m".into(),
            project_root: "/p".into(),
            session_id: None,
            transcript: "/t.jsonl".into(),
            trigger: Trigger::TurnEnd,
            engine: "offline".into(),
            model: None,
            new_message_count: 4,
        };
        RunRecord { left_out, ..RunRecord::nothing_done(0, about, outcome) }
    }

    /// A run over a transcript larger than its hold window says in the job log how many
    /// messages it did not read and why; a run that read everything says nothing of it.
    #[test]
    fn the_summary_says_how_many_messages_were_left_out_and_why() {
        let left_out = LeftOut::of(3, 32 << 20);
        let Outcome::Done { summary } = summarize(&[record(RunOutcome::NothingToSave, left_out)]) else { panic!("done") };
        let expected = format!("Nothing worth saving\nLeft out: {}", left_out.unwrap());
        assert_eq!(summary, expected);
        assert!(summary.contains("3 older messages were not read: a run holds only the newest 32 MiB"), "{summary}");
        let Outcome::Failed { error } = summarize(&[record(RunOutcome::Failed { error: "the model failed".into() }, LeftOut::of(1, 32 << 20))]) else {
            panic!("failed")
        };
        assert!(error.starts_with("the model failed; Left out: 1 older message was not read"), "{error}");
        let Outcome::Done { summary } = summarize(&[record(RunOutcome::NothingToSave, None)]) else { panic!("done") };
        assert_eq!(summary, "Nothing worth saving");
    }

    /// A session-notes update was logged as "Session notes updated" whatever it did: notes
    /// left as they were, or written from the newer part of a conversation with older messages
    /// not read, read in the run log, `mneme daemon` and the Background list as all of it.
    #[test]
    fn a_notes_update_is_logged_with_its_own_summary() {
        let updated = |changed, left_out| Updated { path: "/n/summary.md".into(), changed, turns: 2, denials: Vec::new(), left_out };
        let left_out = LeftOut::of(5, 32 << 20);
        let Some(Outcome::Done { summary }) = notes_outcome(Ok(Some(updated(true, left_out)))) else { panic!("done") };
        assert_eq!(summary, updated(true, left_out).summary());
        assert!(summary.starts_with("Session notes updated\nLeft out: 5 older messages were not read"), "{summary}");
        let Some(Outcome::Done { summary }) = notes_outcome(Ok(Some(updated(false, None)))) else { panic!("done") };
        assert_eq!(summary, "Session notes checked: nothing to change");
        assert_eq!(notes_outcome(Ok(None)), None);
    }
}
