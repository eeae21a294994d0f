//! The background scheduler inside the desktop app: [`Background`], as `mneme serve
//! --scheduler` runs it (extraction at turn ends, auto-dream gate checks, team sync, for every
//! project folder that exists), started with the window and stopped when the app exits. Each of its events reaches the
//! window as the typed [`SchedulerActivity`] event, so the UI shows "Dreaming…" and "Saved 2
//! memories" as they happen.

use mneme_api::{Clock, Environment, SchedulerEvent};
use mneme_live::background::Background;
use serde::Serialize;
use specta::Type;
use std::sync::{Arc, Mutex};
use tauri::{AppHandle, Wry};
use tauri_specta::Event;
use tokio::sync::broadcast::error::RecvError;

/// One event of the background scheduler (a run started, its progress, its result).
#[derive(Debug, Clone, Serialize, Type, Event)]
pub struct SchedulerActivity {
    pub event: SchedulerEvent,
}

/// The running scheduler, kept until the app exits.
#[derive(Default)]
pub struct Running(Mutex<Option<Background>>);

impl Running {
    pub fn is_running(&self) -> bool {
        self.0.lock().map(|b| b.is_some()).unwrap_or(false)
    }
}

/// Starts the scheduler and forwards its events to the window. Call once the app's async
/// runtime exists (in `setup`).
pub fn start(app: &AppHandle<Wry>, env: &Environment, clock: Arc<dyn Clock>, utc_offset: i32) -> Running {
    // `Background::start` spawns its loops, so it must run inside the runtime.
    let background = match tauri::async_runtime::block_on(async { Background::start(env, clock, utc_offset) }) {
        Ok(b) => b,
        // Another scheduler (a `mneme daemon`) already does the work; the app shows the
        // background runs from the shared run log either way.
        Err(e) => {
            eprintln!("mneme-app: the background scheduler stays off here: {e}");
            return Running::default();
        }
    };
    let mut events = background.subscribe();
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            let event = match events.recv().await {
                Ok(e) => (*e).clone(),
                // Only progress for show was missed; finished runs are in the run log.
                Err(RecvError::Lagged(_)) => continue,
                Err(RecvError::Closed) => return,
            };
            if let Err(e) = (SchedulerActivity { event }).emit(&app) {
                eprintln!("mneme-app: could not send a scheduler event to the window: {e}");
            }
        }
    });
    Running(Mutex::new(Some(background)))
}

/// Stops the scheduler: runs in flight are cancelled (a dream rolls its lock back) and waited
/// for, briefly.
pub fn stop(running: &Running) {
    let background = running.0.lock().ok().and_then(|mut b| b.take());
    if let Some(b) = background {
        tauri::async_runtime::block_on(b.shutdown());
    }
}
