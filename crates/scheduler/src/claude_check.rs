//! Claude Code updates itself, almost daily, and a release Mneme has not checked may load
//! memory differently. This loop asks at start and then every [`ClaudeCheckLoop::every`]
//! whether the installed release changed since it was last checked; when it did, it runs the
//! check once (the user's own Claude Code, offline, on the project used last: the api supplies
//! it, since the context it compares lives there) and records the answer as a run, so the
//! app's banner and the run history say whether Mneme still shows exactly what it sends.

use crate::extraction::sleep_or_cancel;
use crate::{JobKind, Outcome, Reporter};
use mneme_model::Cancel;
use std::sync::Arc;
use std::time::Duration;

/// The check, supplied by whoever starts the scheduler.
pub trait ClaudeCodeCheck: Send + Sync {
    /// The installed release when it has not been checked yet; `None` when there is nothing
    /// to do (no Claude Code found, or this release was checked before).
    fn due(&self) -> Option<String>;
    /// Checks `release` and keeps the answer for the app: `Done` when Mneme matches it (or
    /// there was no project to check it on), `Failed` with the differences otherwise.
    fn run(&self, release: &str) -> Outcome;
}

pub(crate) struct ClaudeCheckLoop {
    pub check: Arc<dyn ClaudeCodeCheck>,
    pub reporter: Reporter,
    pub every: Duration,
}

impl ClaudeCheckLoop {
    pub(crate) async fn run(&self, cancel: Cancel) {
        loop {
            let check = self.check.clone();
            // Finding the installed release reads the disk; a check runs a process.
            if let Ok(Some(release)) = tokio::task::spawn_blocking(move || check.due()).await {
                let run = self.reporter.begin(JobKind::ClaudeCodeCheck, format!("Claude Code {release}"));
                let check = self.check.clone();
                let outcome = tokio::task::spawn_blocking(move || check.run(&release))
                    .await
                    .unwrap_or_else(|e| Outcome::Failed { error: format!("the check stopped unexpectedly: {e}") });
                run.finish(outcome);
            }
            if sleep_or_cancel(self.every, &cancel).await {
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RunLog;
    use std::sync::Mutex;

    /// Claude Code "updates" between two polls; each release is checked exactly once.
    struct Releases {
        installed: Mutex<Vec<&'static str>>,
        checked: Mutex<Vec<String>>,
    }

    impl ClaudeCodeCheck for Releases {
        fn due(&self) -> Option<String> {
            let mut installed = self.installed.lock().unwrap();
            let now = if installed.len() > 1 { installed.remove(0) } else { installed[0] };
            let checked = self.checked.lock().unwrap();
            (checked.last().map(String::as_str) != Some(now)).then(|| now.to_string())
        }
        fn run(&self, release: &str) -> Outcome {
            self.checked.lock().unwrap().push(release.to_string());
            if release == "2.1.400" {
                Outcome::Failed { error: "differs: 1 file".into() }
            } else {
                Outcome::Done { summary: format!("matches your Claude Code {release}") }
            }
        }
    }

    #[tokio::test]
    async fn each_new_release_is_checked_once_and_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let reporter = Reporter::new(Arc::new(mneme_core::FixedClock::at_unix_secs(1_764_000_000)), RunLog::in_data_dir(dir.path()));
        let check = Arc::new(Releases {
            installed: Mutex::new(vec!["2.1.332", "2.1.332", "2.1.332", "2.1.400", "2.1.400"]),
            checked: Mutex::new(Vec::new()),
        });
        let mut events = reporter.subscribe();
        let cancel = Cancel::new();
        let l = ClaudeCheckLoop { check: check.clone(), reporter: reporter.clone(), every: Duration::from_millis(5) };
        let c = cancel.clone();
        let task = tokio::spawn(async move { l.run(c).await });
        let mut finished = Vec::new();
        while finished.len() < 2 {
            let ev = tokio::time::timeout(Duration::from_secs(10), events.recv()).await.expect("a run within 10 s").unwrap();
            if let crate::Event::Finished { record } = ev {
                finished.push(record);
            }
        }
        cancel.cancel();
        task.await.unwrap();
        assert_eq!(*check.checked.lock().unwrap(), ["2.1.332", "2.1.400"]);
        assert_eq!(finished[0].job, JobKind::ClaudeCodeCheck);
        assert_eq!(finished[0].target, "Claude Code 2.1.332");
        assert_eq!(finished[1].outcome, Outcome::Failed { error: "differs: 1 file".into() });
        assert_eq!(reporter.log().recent(10, Some(JobKind::ClaudeCodeCheck)).unwrap().len(), 2);
    }
}
