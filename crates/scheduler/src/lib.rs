//! The background scheduler. Claude Code runs extraction and dream from its own turn loop; Mneme
//! runs them for every watched project from outside, plus team sync. There is one loop per job
//! type, each in its own module and readable top to bottom:
//!
//! - [`extraction`]: tails transcripts, and on each turn end applies Claude Code's extraction
//!   rules (cursor, skip, trailing run, every-N) through `mneme-extract`;
//! - [`dream`]: checks the auto-dream gates (cheapest first) every few minutes and on turn ends,
//!   and dreams through `mneme-dream` when they open;
//! - [`team`]: keeps team memory in sync through `mneme-team`'s client.
//!
//! Every run is announced as [`Event`]s (for the app's progress display) and recorded in the
//! [`runs::RunLog`]; failures back off; [`SchedulerHandle::shutdown`] cancels and waits.
//! It runs inside the desktop app and headless as `mneme daemon`.

pub mod backoff;
pub mod runs;

pub use backoff::Backoff;
pub use runs::{JobKind, Outcome, RunLog, RunRecord};

use mneme_core::Clock;
use serde::Serialize;
use std::sync::Arc;
use std::time::UNIX_EPOCH;
use tokio::sync::broadcast;

/// What the scheduler tells anyone listening (the app's status bar, `mneme daemon`'s log).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Event {
    Started { id: String, job: JobKind, target: String },
    Progress { id: String, job: JobKind, message: String },
    Finished { record: RunRecord },
}

/// Shared by every loop: the clock, the run log and the event channel.
#[derive(Clone)]
pub struct Reporter {
    clock: Arc<dyn Clock>,
    log: RunLog,
    events: broadcast::Sender<Event>,
}

impl Reporter {
    pub fn new(clock: Arc<dyn Clock>, log: RunLog) -> Reporter {
        let (events, _) = broadcast::channel(256);
        Reporter { clock, log, events }
    }

    pub fn subscribe(&self) -> broadcast::Receiver<Event> {
        self.events.subscribe()
    }

    pub fn log(&self) -> &RunLog {
        &self.log
    }

    pub fn now_ms(&self) -> u64 {
        self.clock.now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or(0)
    }

    /// Announces a run; finish it with [`Run::finish`].
    pub fn begin(&self, job: JobKind, target: impl Into<String>) -> Run {
        let started_ms = self.now_ms();
        let id = runs::new_run_id(started_ms);
        let target = target.into();
        // Nobody listening is normal (the daemon with no client attached).
        let _ = self.events.send(Event::Started { id: id.clone(), job, target: target.clone() });
        Run { reporter: self.clone(), id, job, target, started_ms }
    }
}

/// One run in flight.
pub struct Run {
    reporter: Reporter,
    id: String,
    job: JobKind,
    target: String,
    started_ms: u64,
}

impl Run {
    pub fn id(&self) -> &str {
        &self.id
    }

    pub fn progress(&self, message: impl Into<String>) {
        let _ = self.reporter.events.send(Event::Progress { id: self.id.clone(), job: self.job, message: message.into() });
    }

    /// Records the outcome and announces it. A run log that cannot be written is reported on the
    /// event channel as part of the record's outcome rather than lost.
    pub fn finish(self, outcome: Outcome) -> RunRecord {
        let record = RunRecord {
            id: self.id,
            job: self.job,
            target: self.target,
            started_ms: self.started_ms,
            finished_ms: self.reporter.now_ms(),
            outcome,
        };
        let record = match self.reporter.log.append(&record) {
            Ok(()) => record,
            Err(e) => RunRecord { outcome: Outcome::Failed { error: format!("{e}") }, ..record },
        };
        let _ = self.reporter.events.send(Event::Finished { record: record.clone() });
        record
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_core::FixedClock;

    #[test]
    fn a_run_is_announced_and_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let clock: Arc<dyn Clock> = Arc::new(FixedClock::at_unix_secs(1_700_000_000));
        let reporter = Reporter::new(clock, RunLog::in_data_dir(dir.path()));
        let mut rx = reporter.subscribe();
        let run = reporter.begin(JobKind::Dream, "/mem");
        run.progress("orienting");
        let rec = run.finish(Outcome::Done { summary: "Improved 2 memories".into() });
        assert!(matches!(rx.try_recv().unwrap(), Event::Started { job: JobKind::Dream, .. }));
        assert!(matches!(rx.try_recv().unwrap(), Event::Progress { ref message, .. } if message == "orienting"));
        assert_eq!(rx.try_recv().unwrap(), Event::Finished { record: rec.clone() });
        assert_eq!(reporter.log().recent(5, None).unwrap(), vec![rec]);
    }
}
