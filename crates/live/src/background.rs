//! The background scheduler beside the api (`mneme serve --scheduler`, and the desktop app while
//! its window is open): extraction at turn ends, auto-dream gate checks and team sync for every
//! project folder that still exists, as `mneme daemon` runs them. Its events are converted
//! once into the api's [`SchedulerEvent`] and offered to any number of listeners (the event
//! stream's `scheduler` events, the desktop shell's typed event).
//!
//! `mneme serve` does not start it unless asked: a `mneme daemon` may already run for the same
//! folders, and two schedulers would extract the same turns twice.

use mneme_api::{Clock, Environment, SchedulerEvent};
use mneme_scheduler::{SchedulerConfig, SchedulerHandle};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;
use tokio::sync::broadcast::error::RecvError;

/// How long stopping waits for runs in flight (a dream rolls its lock back, team sync pushes
/// once more) before the process exits anyway.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// The running scheduler and its event channel.
pub struct Background {
    handle: SchedulerHandle,
    tx: broadcast::Sender<Arc<SchedulerEvent>>,
}

impl Background {
    /// Starts every loop for the project folders that exist (found by the loops themselves, so
    /// start-up does not wait for the scan; more are learned as sessions end turns). Must run
    /// inside a tokio runtime. `utc_offset` is the local offset the process read at start
    /// (while it had one thread), used where the system cannot be asked.
    pub fn start(env: &Environment, clock: Arc<dyn Clock>, utc_offset: i32) -> Result<Background, mneme_scheduler::SchedulerError> {
        let mut config = SchedulerConfig::new(env.clone(), clock.clone());
        // Dreams write the local day, asked of the system before each dream (daylight saving
        // changes while the app stays open). This process's threads run already, so no offset
        // can be read soundly here: the one read at start is the fallback where `date` cannot run.
        config.utc_offset = mneme_scheduler::LocalOffset::System { fallback: utc_offset };
        // A Claude Code that updated itself is checked once against Mneme's view.
        config.claude_code_check = Some(Arc::new(mneme_api::ScheduledClaudeCheck(mneme_api::Mneme::new(env.clone(), clock))));
        let handle = mneme_scheduler::start(config)?;
        let (tx, _) = broadcast::channel(256);
        let mut events = handle.subscribe();
        let forward = tx.clone();
        tokio::spawn(async move {
            loop {
                match events.recv().await {
                    // Nobody listening is normal: no page open.
                    Ok(e) => {
                        let _ = forward.send(Arc::new(e.into()));
                    }
                    // The run log keeps what a slow listener missed.
                    Err(RecvError::Lagged(_)) => continue,
                    Err(RecvError::Closed) => return,
                }
            }
        });
        Ok(Background { handle, tx })
    }

    /// Every event from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<Arc<SchedulerEvent>> {
        self.tx.subscribe()
    }

    /// The channel itself, for handlers that subscribe later (one per open event stream).
    pub fn channel(&self) -> broadcast::Sender<Arc<SchedulerEvent>> {
        self.tx.clone()
    }

    /// Cancels every loop and waits (at most [`SHUTDOWN_GRACE`]) for runs in flight.
    pub async fn shutdown(self) {
        let _ = tokio::time::timeout(SHUTDOWN_GRACE, self.handle.shutdown()).await;
    }
}
