//! Live updates: `GET /api/events` streams Server-Sent Events whenever Claude Code (or anyone)
//! changes files Mneme shows, so the UI can reload instead of showing stale memory. The
//! watching itself is `mneme_live::events` (the desktop shell runs the same watcher); this
//! module sends each batch as one `event: changed` / `data: {"paths":[...]}` (an empty list
//! means "reload everything"). A comment line is sent on connect and every 15 s so proxies
//! and the browser keep the connection open.
//!
//! When the background scheduler runs in this server (`mneme serve --scheduler`), each of its
//! events goes out as `event: scheduler` with the api's `SchedulerEvent` as its data, so the
//! page shows "Dreaming…" and "Saved 2 memories" as they happen.

use crate::AppState;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::stream::{self, Stream, StreamExt};
use mneme_api::SchedulerEvent;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::broadcast;

pub use mneme_live::events::Events;

const KEEP_ALIVE: Duration = Duration::from_secs(15);

type Activity = broadcast::Receiver<Arc<SchedulerEvent>>;

/// The next scheduler event; never, when the scheduler does not run here or has stopped.
async fn next_activity(rx: &mut Option<Activity>) -> Arc<SchedulerEvent> {
    loop {
        let Some(r) = rx.as_mut() else { return std::future::pending().await };
        match r.recv().await {
            Ok(e) => return e,
            // Progress is only for show; the run log keeps every finished run.
            Err(broadcast::error::RecvError::Lagged(_)) => continue,
            Err(broadcast::error::RecvError::Closed) => *rx = None,
        }
    }
}

/// The `changed` event's data. The watcher sends names that are not UTF-8 with their bytes
/// replaced; one that still cannot be encoded asks for a full reload instead of ending the
/// stream (`json!` would panic).
fn changed_data(paths: &[std::path::PathBuf]) -> String {
    let names: Option<Vec<&str>> = paths.iter().map(|p| p.to_str()).collect();
    serde_json::json!({ "paths": names.unwrap_or_default() }).to_string()
}

pub(crate) async fn stream(State(state): State<Arc<AppState>>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let rx = state.events.subscribe();
    let activity = state.scheduler.as_ref().map(broadcast::Sender::subscribe);
    let stop = state.events.stop_signal();
    // The first comment tells the client the subscription is live before any change.
    let hello = stream::once(async { Ok(Event::default().comment("connected")) });
    let changes = stream::unfold((rx, activity, stop), |(mut rx, mut activity, mut stop)| async move {
        if *stop.borrow() {
            return None;
        }
        let event = tokio::select! {
            r = rx.recv() => {
                let paths = match r {
                    Ok(paths) => paths,
                    // This client fell behind: it cannot know what it missed, so reload all.
                    Err(broadcast::error::RecvError::Lagged(_)) => Arc::new(Vec::new()),
                    Err(broadcast::error::RecvError::Closed) => return None,
                };
                Event::default().event("changed").data(changed_data(&paths))
            }
            e = next_activity(&mut activity) => {
                // A DTO of plain fields always encodes; an empty object would only be ignored.
                Event::default().event("scheduler").data(serde_json::to_string(&*e).unwrap_or_else(|_| "{}".into()))
            }
            // Stopping (or the server is gone): end the stream so shutdown can finish.
            _ = stop.changed() => return None,
        };
        Some((Ok(event), (rx, activity, stop)))
    });
    Sse::new(hello.chain(changes)).keep_alive(KeepAlive::new().interval(KEEP_ALIVE))
}

#[cfg(test)]
mod tests {
    use super::changed_data;
    use std::os::unix::ffi::OsStrExt;
    use std::path::PathBuf;

    #[test]
    fn a_name_that_cannot_be_encoded_asks_for_a_full_reload_instead_of_panicking() {
        let odd = PathBuf::from(std::ffi::OsStr::from_bytes(b"/m/caf\xe9.md"));
        assert_eq!(changed_data(&[PathBuf::from("/m/a.md"), odd]), r#"{"paths":[]}"#);
        assert_eq!(changed_data(&[PathBuf::from("/m/a.md")]), r#"{"paths":["/m/a.md"]}"#);
    }
}
