//! What both app shells run beside the api while they are open — `mneme serve` (browser mode)
//! and the desktop app (`src-tauri`) — kept here so neither shell depends on the other:
//!
//! - [`events`]: the debounced file watcher over Claude Code's folders, whose batches of changed
//!   paths the shells forward to the UI (a Server-Sent Event, a typed window event), and the
//!   api's context cache it keeps current (`Events::context_cache`, handed to the operations
//!   through `Host::context_cache`).
//! - [`background`]: the background scheduler (extraction, auto dream, team sync) with its
//!   events converted once into the api's `SchedulerEvent`.
//!
//! No HTTP and no GUI here: each shell decides how its UI hears about these.

pub mod background;
/// Kept here under its old name for the shells (`mneme_live::drive`); it lives in the store so
/// the scheduler, which this crate depends on, can ask it too.
pub use mneme_store::drive;
pub mod events;

/// Why the file watcher could not start (the operating system's watch facility refused).
pub type WatchError = notify::Error;
