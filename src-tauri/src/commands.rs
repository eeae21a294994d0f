//! One Tauri command per api operation, generated from [`mneme_api::operations!`] — the same
//! list `mneme serve`'s routes come from. Each takes the operation's request as one argument
//! named `req` (so `invoke(name, { req: body })` is the whole transport, with the body
//! `mneme serve` takes), runs the operation on a blocking thread (they read and write files)
//! and answers with its answer type or the api's `{code, message}` [`ApiError`].
//!
//! Only [`DESKTOP_ONLY`] commands are written by hand here: they act on the desktop itself.

use crate::Session;
use mneme_api::{ApiError, ErrorCode, Mneme};
use tauri::State;

pub type Answer<T> = Result<T, ApiError>;

/// The commands that are not api operations: opening an editor and showing a folder act on the
/// desktop the app runs on, which `mneme serve` (possibly reached over a tunnel) must not do;
/// `about` names the app's own build.
pub const DESKTOP_ONLY: &[&str] = &["open_in_editor", "reveal", "about"];

/// Runs one api call off the async runtime's workers.
pub(crate) async fn engine<T: Send + 'static>(
    m: &Mneme,
    call: impl FnOnce(&Mneme) -> Answer<T> + Send + 'static,
) -> Answer<T> {
    let m = m.clone();
    tauri::async_runtime::spawn_blocking(move || call(&m))
        .await
        .map_err(|e| ApiError::new(ErrorCode::Io, format!("The request failed inside Mneme: {e}.")))?
}

/// One command per operation, and [`crate::bindings`] listing them all.
macro_rules! tauri_commands {
    ($( $(#[$doc:meta])* $name:ident ($req:ty) -> $resp:ty = |$m:ident, $h:ident, $q:ident| $body:expr; )*) => {
        $(
            $(#[$doc])*
            #[tauri::command]
            #[specta::specta]
            pub async fn $name(m: State<'_, Mneme>, s: State<'_, Session>, req: $req) -> Answer<$resp> {
                let host = s.inner().clone();
                engine(&m, move |m| mneme_api::ops::$name(m, &host, req)).await
            }
        )*

        /// Every command and event, for the invoke handler and the TypeScript export.
        pub fn bindings() -> tauri_specta::Builder<tauri::Wry> {
            tauri_specta::Builder::<tauri::Wry>::new()
                .commands(tauri_specta::collect_commands![$($name,)* crate::editor::open_in_editor, crate::editor::reveal, crate::about::about])
                .events(tauri_specta::collect_events![crate::FilesChanged, crate::SchedulerActivity, crate::OpenFolderAsked])
                // Sizes, counts and millisecond times: all far below 2^53, where a JS number is exact.
                .dangerously_cast_bigints_to_number()
                // One type per DTO: the input and output shapes here never differ by serde phase.
                .disable_serde_phases()
        }
    };
}

mneme_api::operations!(tauri_commands);
