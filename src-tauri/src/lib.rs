//! Mneme's desktop shell: a thin Tauri 2 app over the [`mneme_api::Mneme`] facade.
//!
//! - [`commands`]: one Tauri command per api operation, generated from the api's list
//!   (`mneme_api::operations!`); each takes the operation's request and answers with its answer
//!   type or the api's `{code, message}` error, exactly as `mneme serve` does.
//! - [`editor`]: `open_in_editor` (the editor Claude Code would pick) and `reveal`.
//! - [`launch`]: `mneme-app [FOLDER]`, and a second launch's FOLDER offered to the running
//!   window as the typed `OpenFolderAsked` event.
//! - [`live`]: the typed `FilesChanged` event, fed by `mneme serve`'s debounced watcher.
//! - [`scheduler`]: the background scheduler (extraction, auto dream, team sync) running while
//!   the app is open, its events forwarded as the typed `SchedulerActivity` event.
//! - `webkit` (Linux): the WebKitGTK settings that keep the app's memory small.
//! - Tauri's plugins, registered in [`run`]: one running app (`single-instance`), the window's
//!   place between launches (`window-state`, kept on a screen by [`placement_ok`]), links to
//!   the browser (`opener`, http(s) only) and the folder picker (`dialog`).
//! - [`bindings`] (in `commands`): the tauri-specta builder; `tests/bindings.rs` keeps
//!   `ui/src/lib/bindings.ts` equal to what it generates.
//!
//! The window loads the built UI (`ui/dist`, named by `src-tauri/tauri.conf.json`).

pub mod about;
pub mod commands;
pub mod editor;
pub mod launch;
pub mod live;
pub mod scheduler;
#[cfg(target_os = "linux")]
pub mod webkit;

use mneme_api::{Environment, Mneme, SystemClock};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use launch::OpenFolderAsked;
pub use live::FilesChanged;
pub use scheduler::SchedulerActivity;

/// Where the generated TypeScript goes, relative to the repository root.
pub const BINDINGS_PATH: &str = "ui/src/lib/bindings.ts";

const BINDINGS_HEADER: &str = "// Generated from src-tauri by tauri-specta; do not edit. Regenerate with:\n\
//   MNEME_UPDATE_BINDINGS=1 cargo test -p mneme-app --test bindings\n";

/// What the app holds besides the engine: the folder it opened on, the live watcher and the
/// background scheduler. Cheap to clone, because each command hands one to its blocking thread.
#[derive(Clone)]
pub struct Session {
    /// Relative `cwd`s are taken from here; reported by `home`.
    pub start_dir: PathBuf,
    /// FOLDER when the launch named one (and it is a folder): the page opens on it.
    pub launch_folder: Option<PathBuf>,
    /// `None` when the file watcher could not start (the app works, without live updates).
    pub live: Option<Arc<live::Live>>,
    pub scheduler: Arc<scheduler::Running>,
    /// How long a command waits for its operation before answering `unavailable` (a drive that
    /// stopped answering mid-request): `mneme_api::drive_check::OPERATION_PATIENCE`; tests
    /// shorten it.
    pub operation_patience: std::time::Duration,
}

impl mneme_api::ops::Host for Session {
    fn start_dir(&self) -> &Path {
        &self.start_dir
    }

    fn launch_folder(&self) -> Option<&Path> {
        self.launch_folder.as_deref()
    }

    fn scheduler_running(&self) -> bool {
        self.scheduler.is_running()
    }

    fn watch_project(&self, cwd: &Path, memory_dir: &Path) -> Result<Vec<PathBuf>, mneme_api::ApiError> {
        let live = self.live.as_ref().ok_or_else(mneme_api::ops::live_off)?;
        Ok(live.events.watch_project(cwd, memory_dir))
    }

    fn watched(&self) -> Result<Vec<mneme_api::ops::WatchedFolder>, mneme_api::ApiError> {
        let live = self.live.as_ref().ok_or_else(mneme_api::ops::live_off)?;
        Ok(live.events.watched())
    }

    fn context_cache(&self) -> Option<&mneme_api::ContextCache> {
        self.live.as_ref().map(|live| live.events.context_cache())
    }
}

pub use commands::bindings;

/// Why the desktop shell could not start or do its build-time work. Each message says what to
/// do; `main` prints it as one line.
#[derive(Debug, thiserror::Error)]
pub enum ShellError {
    #[error(transparent)]
    NoHome(#[from] mneme_api::NoHome),
    #[error("could not export the TypeScript bindings to {path}: {message}")]
    Bindings { path: PathBuf, message: String },
    #[error("could not watch for file changes ({0}); live updates are off")]
    Watch(#[from] mneme_live::WatchError),
    #[error("the window could not run: {0}")]
    Window(#[from] tauri::Error),
    #[error(transparent)]
    Folder(#[from] launch::FolderError),
    #[error("the window's data folder {} cannot be used ({message}); make it a folder you can write to, then start Mneme again", path.display())]
    WebviewData { path: PathBuf, message: String },
}

/// Writes the TypeScript bindings to `path`.
pub fn export_bindings(path: &Path) -> Result<(), ShellError> {
    bindings()
        .export(specta_typescript::Typescript::default().header(BINDINGS_HEADER), path)
        .map_err(|e| ShellError::Bindings { path: path.to_path_buf(), message: e.to_string() })
}

/// The real world, read once, exactly as the CLI reads it: the home folder (`HOME`, or
/// `USERPROFILE` on Windows), every environment variable, this system's managed-policy folder.
pub fn environment() -> Result<Environment, ShellError> {
    Ok(Environment::from_process()?)
}

/// The folder the webview keeps its own data in (Tauri's app-local data folder on Linux:
/// `$XDG_DATA_HOME`, else `~/.local/share`, then the app's identifier), made ready before the
/// window is built. Tauri creates it itself while it builds the window, and a failure there is
/// a panic with a backtrace; here it is one sentence that says what to do.
#[cfg(target_os = "linux")]
fn prepare_webview_data(env: &Environment) -> Result<(), ShellError> {
    let base = env.var("XDG_DATA_HOME").filter(|d| Path::new(d).is_absolute()).map(PathBuf::from).unwrap_or_else(|| env.home.join(".local/share"));
    let path = base.join(APP_IDENTIFIER);
    match std::fs::create_dir_all(&path) {
        Ok(()) if path.is_dir() => Ok(()),
        Ok(()) => Err(ShellError::WebviewData { path, message: "it is not a folder".into() }),
        Err(e) => Err(ShellError::WebviewData { path, message: e.to_string() }),
    }
}

/// `identifier` in tauri.conf.json.
#[cfg(target_os = "linux")]
const APP_IDENTIFIER: &str = "dev.mneme.app";

/// Keeps the window on the app. A link in a preview opens in the browser (`target=_blank`,
/// which the opener plugin's script in the page hands on), but an element that navigates the
/// window itself (an image map's `<area>`, a form, a script) must not replace Mneme with a page
/// posing as it: any navigation away from the app's own origin is cancelled, and an http(s)
/// address goes to the browser instead.
fn navigation_guard() -> tauri::plugin::TauriPlugin<tauri::Wry> {
    tauri::plugin::Builder::new("navigation-guard")
        .on_navigation(|webview, url| {
            if is_app_origin(url) {
                return true;
            }
            if matches!(url.scheme(), "http" | "https") {
                use tauri_plugin_opener::OpenerExt;
                // The page asked for nothing, so there is nobody to tell when no browser opens.
                let _ = webview.opener().open_url(url.as_str(), None::<&str>);
            }
            false
        })
        .build()
}

/// What a second `mneme-app` does instead of opening a second window (whose scheduler would
/// stay off, `scheduler::start`): the running one comes to the front, on the project it shows
/// (a FOLDER the second launch names is offered, `launch::second_launch`, not taken over).
/// Errors are dropped on purpose: the second launch has handed over and exits either way.
pub(crate) fn bring_to_front(app: &tauri::AppHandle) {
    if let Some(window) = tauri::Manager::get_webview_window(app, "main") {
        let _ = window.unminimize();
        let _ = window.show();
        let _ = window.set_focus();
    }
}

/// A screen rectangle in physical pixels: `x`, `y`, width, height.
pub type Rect = (i32, i32, u32, u32);

/// How much of a window's top edge (where the title bar is) must be on one monitor for a person
/// to grab it and move it: a strip this wide (or the whole width of a narrower window) and this tall.
const REACHABLE: (u32, u32) = (120, 32);

/// Whether a window at `window` can be seen and moved on `monitors`: a piece of its top edge is
/// on one screen and the whole window fits on one. The window-state plugin applies a remembered
/// position when any corner of the window lies on a monitor, which can leave the title bar
/// off-screen, and applies a remembered size whatever the screens are now (a window saved on a
/// large monitor reopening on a laptop's).
pub fn placement_ok(window: Rect, monitors: &[Rect]) -> bool {
    let (x, y, w, h) = (i64::from(window.0), i64::from(window.1), i64::from(window.2), i64::from(window.3));
    let need = i64::from(REACHABLE.0).min(w);
    let fits = monitors.iter().any(|&(_, _, mw, mh)| w <= i64::from(mw) && h <= i64::from(mh));
    let top_on_screen = monitors.iter().any(|&(mx, my, mw, mh)| {
        let (mx, my, mw, mh) = (i64::from(mx), i64::from(my), i64::from(mw), i64::from(mh));
        let across = (x + w).min(mx + mw) - x.max(mx);
        y >= my && y + i64::from(REACHABLE.1) <= my + mh && across >= need
    });
    fits && top_on_screen
}

/// Where a window that is out of reach goes instead: its size cut to `monitor`'s, centered on it.
pub fn placed_on(size: (u32, u32), monitor: Rect) -> Rect {
    let (mx, my, mw, mh) = monitor;
    let (w, h) = (size.0.min(mw), size.1.min(mh));
    let offset = |free: u32| i32::try_from(free / 2).unwrap_or(0);
    (mx.saturating_add(offset(mw - w)), my.saturating_add(offset(mh - h)), w, h)
}

/// The part of the window-state plugin's file (its format) this app reads: where the window was.
#[derive(serde::Deserialize)]
struct Remembered {
    width: u32,
    height: u32,
    x: i32,
    y: i32,
    #[serde(default)]
    maximized: bool,
}

/// The main window's remembered geometry, as the plugin read it at start; `None` on a first
/// launch or when the file is unreadable (the plugin then applies nothing either).
fn remembered(app: &tauri::AppHandle) -> Option<Remembered> {
    use tauri::Manager;
    use tauri_plugin_window_state::AppHandleExt;
    let path = app.path().app_config_dir().ok()?.join(app.filename());
    let mut all: std::collections::HashMap<String, Remembered> = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
    all.remove("main")
}

/// After the plugin applied the remembered geometry: a window that would be out of reach is cut
/// to a monitor's size and centered there instead. Decided from the remembered geometry, not
/// the window's: GTK applies the plugin's moves later, on its own loop, so the window still
/// reports where it was built.
fn keep_on_screen(window: &tauri::WebviewWindow) -> tauri::Result<()> {
    use tauri::Manager;
    // None: tauri.conf.json's centered window. Maximized: the window manager places it.
    let Some(was) = remembered(window.app_handle()).filter(|r| !r.maximized) else { return Ok(()) };
    let monitors = window.available_monitors()?;
    let screens: Vec<Rect> = monitors.iter().map(|m| (m.position().x, m.position().y, m.size().width, m.size().height)).collect();
    // A display server that lists no monitor gives nothing to measure against.
    if screens.is_empty() || placement_ok((was.x, was.y, was.width, was.height), &screens) {
        return Ok(());
    }
    let Some(screen) = window.primary_monitor()?.map(|m| (m.position().x, m.position().y, m.size().width, m.size().height)).or(screens.first().copied()) else {
        return Ok(());
    };
    let (x, y, w, h) = placed_on((was.width, was.height), screen);
    window.set_size(tauri::PhysicalSize::new(w, h))?;
    window.set_position(tauri::PhysicalPosition::new(x, y))
}

/// Ends the app as its window's close button does when the session asks it to stop (SIGTERM at
/// logout, Ctrl-C in the terminal that started it): the window state is saved and the scheduler
/// stops between jobs (`RunEvent::Exit`). A second signal ends it at once, in case the first
/// exit is stuck.
#[cfg(unix)]
fn exit_on_signals(app: tauri::AppHandle) {
    use tokio::signal::unix::{signal, SignalKind};
    tauri::async_runtime::spawn(async move {
        let (Ok(mut term), Ok(mut int)) = (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) else {
            // No signal driver to listen with: the default action ends the app, as before.
            return;
        };
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        app.exit(0);
        tokio::select! { _ = term.recv() => {}, _ = int.recv() => {} }
        std::process::exit(1);
    });
}

/// The addresses the app's own page is served from: the custom protocol (`tauri://localhost`
/// on Linux and macOS, `http(s)://tauri.localhost` with no port on Windows only) and, in a dev
/// build, Vite. Elsewhere `tauri.localhost` is an ordinary name a local process could serve.
fn is_app_origin(url: &tauri::Url) -> bool {
    match url.scheme() {
        "tauri" => url.host_str() == Some("localhost"),
        "http" | "https" => {
            (cfg!(windows) && url.host_str() == Some("tauri.localhost") && url.port().is_none())
                || (cfg!(debug_assertions) && url.host_str() == Some("localhost") && url.port() == Some(5173))
        }
        "about" => url.as_str() == "about:blank",
        _ => false,
    }
}

/// Opens the window and runs until it closes.
pub fn run(start: Option<PathBuf>) -> Result<(), ShellError> {
    // Read before the GL and JIT variables below are set, so what the engine passes on to
    // Claude Code never holds them.
    let env = environment()?;
    #[cfg(target_os = "linux")]
    prepare_webview_data(&env)?;
    let cwd = std::env::current_dir().ok();
    let start_dir = launch::start_dir(start.as_deref(), cwd.as_deref(), &env.home);
    // A FOLDER that is not one stops a first launch with the reason. Checked here but reported
    // from `setup`, which only the first launch reaches: a second one hands the folder over
    // instead, and the running window says what is wrong with it.
    let refused = start.as_ref().and_then(|_| launch::check_folder(start_dir.clone()).err());
    // Named and a folder: what the window opens on (a refused one stops the launch in `setup`).
    let launch_folder = start.as_ref().filter(|_| refused.is_none()).map(|_| start_dir.clone());
    // Dates in the system's zone, asked for each instant: a window left open across a
    // daylight-saving change or a trip dates today and daily logs as the system does.
    let mneme = Mneme::new(env.clone(), Arc::new(SystemClock)).with_local_zone(mneme_api::LocalZone::system());
    let builder = bindings();
    // Before GTK and WebKit start (in `build`), while the process has one thread.
    #[cfg(target_os = "linux")]
    let for_launch = webkit::set_for_launch();
    tauri::Builder::default()
        // First, so a second launch hands over before anything else of it starts. Without a
        // session bus (D-Bus) the plugin finds no other instance and the app starts as before.
        .plugin(
            tauri_plugin_single_instance::Builder::new()
                .dbus_id(launch::single_instance_id())
                .callback(|app, argv, cwd| launch::second_launch(app, &argv, &cwd))
                .build(),
        )
        // Size, position and maximized, in Tauri's config folder for the app
        // (`~/.config/dev.mneme.app/.window-state.json` on Linux), written when the app exits.
        // Not visibility, decorations or full screen: a window saved hidden would never show.
        .plugin(
            tauri_plugin_window_state::Builder::new()
                .with_state_flags(
                    tauri_plugin_window_state::StateFlags::SIZE
                        | tauri_plugin_window_state::StateFlags::POSITION
                        | tauri_plugin_window_state::StateFlags::MAXIMIZED,
                )
                .build(),
        )
        // http(s) links go to the browser; the capability limits the page to those.
        .plugin(tauri_plugin_opener::init())
        .plugin(navigation_guard())
        // The native folder picker behind "Open a project…"; the page gets only `open`.
        .plugin(tauri_plugin_dialog::init())
        .invoke_handler(builder.invoke_handler())
        .manage(mneme)
        .setup(move |app| {
            if let Some(e) = refused {
                // Said here and ended at once: Tauri runs `setup` inside its event loop, where
                // an error it returns becomes a panic and a backtrace, not one line.
                eprintln!("mneme-app: {}", ShellError::Folder(e));
                std::process::exit(1);
            }
            builder.mount_events(app);
            if let Some(window) = tauri::Manager::get_webview_window(app, "main") {
                // A window the display server cannot measure still opens, where it is.
                if let Err(e) = keep_on_screen(&window) {
                    eprintln!("mneme-app: could not check that the window is on a screen ({e}); if it is out of reach, delete the window state file in ~/.config/dev.mneme.app");
                }
            }
            #[cfg(unix)]
            exit_on_signals(app.handle().clone());
            #[cfg(target_os = "linux")]
            if let Some(window) = tauri::Manager::get_webview_window(app, "main") {
                window.with_webview(|webview| webkit::keep_small(&webview.inner()))?;
            }
            // The window and its web process exist: GTK and WebKit have read the variables.
            #[cfg(target_os = "linux")]
            webkit::forget_after_launch(&for_launch);
            let live = match live::start(app.handle(), &env) {
                Ok(l) => Some(l),
                Err(e) => {
                    eprintln!("mneme-app: {e}");
                    None
                }
            };
            // The scheduler asks the system for the offset before each dream; this one is
            // its fallback when the system cannot say.
            let scheduler = Arc::new(scheduler::start(app.handle(), &env, Arc::new(SystemClock), tauri::Manager::state::<Mneme>(app).utc_offset()));
            let operation_patience = mneme_api::drive_check::OPERATION_PATIENCE;
            tauri::Manager::manage(app, Session { start_dir, launch_folder, live: live.map(Arc::new), scheduler, operation_patience });
            Ok(())
        })
        .build(tauri::generate_context!())?
        .run(|app, event| {
            if let tauri::RunEvent::Exit = event {
                scheduler::stop(&tauri::Manager::state::<Session>(app).scheduler);
            }
        });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::is_app_origin;

    /// A data folder that cannot be made is one sentence naming it, not Tauri's panic.
    #[cfg(target_os = "linux")]
    #[test]
    fn an_unusable_webview_data_folder_is_a_clear_error() {
        let t = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(t.path().join(".local")).unwrap();
        std::fs::write(t.path().join(".local/share"), "a file, not a folder").unwrap();
        let env = mneme_api::Environment::with_home(t.path());
        let err = super::prepare_webview_data(&env).unwrap_err().to_string();
        assert!(err.contains(".local/share/dev.mneme.app") && err.contains("make it a folder you can write to"), "{err}");
        let ok = tempfile::tempdir().unwrap();
        super::prepare_webview_data(&mneme_api::Environment::with_home(ok.path())).unwrap();
        assert!(ok.path().join(".local/share/dev.mneme.app").is_dir());
    }

    /// A remembered geometry is used only when the title bar is on a screen and the window
    /// fits one; otherwise it is cut to the screen and centered.
    #[test]
    fn a_remembered_window_out_of_reach_is_brought_back() {
        use super::{placed_on, placement_ok};
        let laptop = (0, 0, 1280, 800);
        let right = (1280, 0, 1920, 1080);
        assert!(placement_ok((40, 30, 900, 600), &[laptop]));
        assert!(placement_ok((1500, 100, 1600, 900), &[laptop, right]), "on the second monitor");
        // The monitor it was on is gone.
        assert!(!placement_ok((1500, 100, 1600, 900), &[laptop]));
        assert!(!placement_ok((5000, 5000, 900, 600), &[laptop]));
        // A corner on screen (the plugin's test) but only a sliver of the title bar.
        assert!(!placement_ok((-850, 700, 900, 600), &[laptop]));
        assert!(placement_ok((-700, 100, 900, 600), &[laptop]), "200 px of the title bar is enough");
        // The title bar above the screen, the rest below it.
        assert!(!placement_ok((100, -20, 900, 600), &[laptop]));
        // Bigger than every screen (saved on a large monitor).
        assert!(!placement_ok((0, 0, 1920, 1080), &[laptop]));
        assert!(!placement_ok((40, 30, 900, 600), &[]));
        assert_eq!(placed_on((900, 600), laptop), (190, 100, 900, 600));
        assert_eq!(placed_on((1920, 1080), laptop), (0, 0, 1280, 800));
        assert_eq!(placed_on((900, 600), right), (1790, 240, 900, 600));
    }

    #[test]
    fn only_the_apps_own_page_may_fill_the_window() {
        let url = |s: &str| tauri::Url::parse(s).unwrap();
        for ok in ["tauri://localhost/", "tauri://localhost/index.html#/memories"] {
            assert!(is_app_origin(&url(ok)), "{ok}");
        }
        // Windows serves the app from `http(s)://tauri.localhost`; elsewhere it is anyone's.
        for windows_only in ["http://tauri.localhost/", "https://tauri.localhost/x"] {
            assert_eq!(is_app_origin(&url(windows_only)), cfg!(windows), "{windows_only}");
        }
        for no in [
            "http://tauri.localhost:8080/",
            "http://127.0.0.1:18999/hit",
            "https://evil.example/",
            "tauri://evil/",
            "http://tauri.localhost.evil.example/",
            "file:///etc/passwd",
            "javascript:alert(1)",
            "data:text/html,x",
            "about:srcdoc",
        ] {
            assert!(!is_app_origin(&url(no)), "{no}");
        }
    }
}
