//! One Tauri command per api operation, generated from [`mneme_api::operations!`] — the same
//! list `mneme serve`'s routes come from. Each takes the operation's request as one argument
//! named `req` (so `invoke(name, { req: body })` is the whole transport, with the body
//! `mneme serve` takes), runs the operation on a thread of its own (they read and write files)
//! and answers with its answer type or the api's `{code, message}` [`ApiError`].
//!
//! Only [`DESKTOP_ONLY`] commands are written by hand here: they act on the desktop itself.

use crate::Session;
use mneme_api::drive_check::{guarded, NamesFolder};
use mneme_api::ops::Host;
use mneme_api::{ApiError, Mneme};
use tauri::State;

pub type Answer<T> = Result<T, ApiError>;

/// The commands that are not api operations: opening an editor and showing a folder act on the
/// desktop the app runs on, which `mneme serve` (possibly reached over a tunnel) must not do;
/// `about` names the app's own build.
pub const DESKTOP_ONLY: &[&str] = &["open_in_editor", "reveal", "about"];

/// Runs operation `name` for `req` the way `mneme serve` runs its methods
/// (`mneme_api::drive_check::guarded`): the drive of the folder the request names asked first,
/// then the operation on a thread of its own, waited for at most the session's patience, so a
/// project on a drive that stops answering is answered `unavailable` instead of leaving the
/// screen waiting for ever.
pub async fn engine<R: NamesFolder + Send + 'static, T: Send + 'static>(
    name: &str,
    m: &Mneme,
    host: Session,
    req: R,
    op: impl FnOnce(&Mneme, &dyn Host, R) -> Answer<T> + Send + 'static,
) -> Answer<T> {
    let folder = req.folder().map(|cwd| host.start_dir.join(cwd));
    let owned = m.clone();
    guarded(name, m, folder, host.operation_patience, move || op(&owned, &host, req)).await
}

/// One command per operation, and [`crate::bindings`] listing them all.
macro_rules! tauri_commands {
    ($( $(#[$doc:meta])* $name:ident ($req:ty) -> $resp:ty = |$m:ident, $h:ident, $q:ident| $body:expr; )*) => {
        $(
            $(#[$doc])*
            #[tauri::command]
            #[specta::specta]
            pub async fn $name(m: State<'_, Mneme>, s: State<'_, Session>, req: $req) -> Answer<$resp> {
                engine(stringify!($name), &m, s.inner().clone(), req, mneme_api::ops::$name).await
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
