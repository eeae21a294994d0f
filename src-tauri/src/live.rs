//! Live updates: the debounced watcher `mneme serve` also runs (`mneme_live::events`: Claude
//! Code's config home, then each project passed to `watch`), forwarded to the window as the typed [`FilesChanged`] event.
//! The same watcher keeps the api's context cache (`Session`'s `Host::context_cache`), and
//! hears of each batch before the window does, so a reload never gets a stale view.

use mneme_api::Environment;
use mneme_live::events::Events;
use serde::{Deserialize, Serialize};
use specta::Type;
use std::path::PathBuf;
use tauri::{AppHandle, Wry};
use tauri_specta::Event;
use tokio::sync::broadcast::error::RecvError;

/// Files changed on disk under a watched folder (gathered for 300 ms). An empty list means
/// too much changed to name: reload everything.
#[derive(Debug, Clone, Serialize, Deserialize, Type, Event)]
pub struct FilesChanged {
    pub paths: Vec<PathBuf>,
}

/// The running watcher; dropping it stops the watch.
pub struct Live {
    pub(crate) events: Events,
    /// The watcher's debounce task ends when this is dropped or set.
    _stop: tokio::sync::watch::Sender<bool>,
}

/// Starts watching and forwarding. Call once the app's async runtime exists (in `setup`).
pub fn start(app: &AppHandle<Wry>, env: &Environment) -> Result<Live, crate::ShellError> {
    let (stop, stop_rx) = tokio::sync::watch::channel(false);
    // `Events::start` spawns its debounce task, so it must run inside the runtime.
    let events = tauri::async_runtime::block_on(async { Events::start(env, stop_rx) })?;
    let mut changes = events.subscribe();
    let app = app.clone();
    tauri::async_runtime::spawn(async move {
        loop {
            let paths = match changes.recv().await {
                Ok(paths) => paths.to_vec(),
                // Fell behind: cannot name what was missed, so ask for a full reload.
                Err(RecvError::Lagged(_)) => Vec::new(),
                Err(RecvError::Closed) => return,
            };
            if let Err(e) = (FilesChanged { paths }).emit(&app) {
                eprintln!("mneme-app: could not send a change event to the window: {e}");
            }
        }
    });
    Ok(Live { events, _stop: stop })
}
