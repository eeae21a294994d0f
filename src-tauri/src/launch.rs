//! What a launch asks for: `mneme-app [FOLDER]`, the first launch's and a second one's.
//!
//! A first launch takes FOLDER as the folder relative paths start from ([`start_dir`]). A second
//! launch while the app runs hands its arguments to the running app (the single-instance
//! plugin) and exits; the running window comes to the front and, when that launch named a
//! folder, asks whether to open it ([`OpenFolderAsked`]) instead of switching projects under the
//! person, who may be in the middle of an edit.

use serde::{Deserialize, Serialize};
use specta::Type;
use std::path::{Path, PathBuf};
use tauri::{AppHandle, Wry};
use tauri_specta::Event;

/// A folder named on the command line that cannot be opened. Each message says what to do.
#[derive(Debug, thiserror::Error)]
pub enum FolderError {
    #[error("{} does not exist; check the spelling, or leave the folder out and choose one in the app", .0.display())]
    Missing(PathBuf),
    #[error("{} is a file, not a folder; name the folder Claude Code would start in", .0.display())]
    NotAFolder(PathBuf),
    #[error("{} cannot be opened ({message}); check that you can read it", path.display())]
    Unreadable { path: PathBuf, message: String },
}

/// The folder a launch was started in, its FOLDER argument taken from there: the argument,
/// else the launch's own folder, else home (a desktop launcher starts apps in `/`). `cwd` is the
/// launch's working folder, `None` when it could not be read.
pub fn start_dir(arg: Option<&Path>, cwd: Option<&Path>, home: &Path) -> PathBuf {
    let cwd = cwd.unwrap_or(home);
    match arg {
        Some(p) => cwd.join(p),
        None if cwd == Path::new("/") => home.to_path_buf(),
        None => cwd.to_path_buf(),
    }
}

/// `folder` when it is a folder; a FOLDER argument that is not one is refused with a sentence
/// that names it, the same for a first launch (printed, and the app does not start) as for a
/// second (shown in the running window).
pub fn check_folder(folder: PathBuf) -> Result<PathBuf, FolderError> {
    match std::fs::metadata(&folder) {
        Ok(m) if m.is_dir() => Ok(folder),
        Ok(_) => Err(FolderError::NotAFolder(folder)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(FolderError::Missing(folder)),
        Err(e) => Err(FolderError::Unreadable { path: folder, message: e.to_string() }),
    }
}

/// A second launch named a folder: the window offers to open it. `problem` is why it cannot be
/// (it does not exist, it is a file), said as the first launch would say it.
#[derive(Debug, Clone, Serialize, Deserialize, Type, Event)]
#[serde(rename_all = "camelCase")]
pub struct OpenFolderAsked {
    /// Absolute: taken from the folder the second launch was started in.
    pub folder: PathBuf,
    pub problem: Option<String>,
}

/// What the running app does when `mneme-app` is launched again (`argv` and `cwd` are that
/// launch's): its window comes to the front and, when the launch named a folder, the page is
/// asked whether to open it. Errors are dropped on purpose: the second launch has handed over
/// and exits either way.
pub fn second_launch(app: &AppHandle<Wry>, argv: &[String], cwd: &str) {
    crate::bring_to_front(app);
    let Some(arg) = argv.get(1) else { return };
    // The plugin sends an empty cwd when the second launch could not read its own: home then,
    // as for a first launch.
    let cwd = Some(Path::new(cwd)).filter(|c| c.is_absolute());
    let home = tauri::Manager::state::<mneme_api::Mneme>(app).environment().home.clone();
    let folder = start_dir(Some(Path::new(arg)), cwd, &home);
    let asked = match check_folder(folder.clone()) {
        Ok(folder) => OpenFolderAsked { folder, problem: None },
        Err(e) => OpenFolderAsked { folder, problem: Some(e.to_string()) },
    };
    if let Err(e) = asked.emit(app) {
        eprintln!("mneme-app: could not ask the window to open {}: {e}", asked.folder.display());
    }
}

/// The D-Bus name (before the plugin's `.SingleInstance`) that makes a launch a second one. A
/// development build (`cargo run`, `npm run dev`) takes its own, so it opens its own window
/// while the installed app runs instead of raising that one. Only the name changes: the bundle
/// identifier, which names the data and config folders, stays the same.
pub const fn single_instance_id() -> &'static str {
    if cfg!(debug_assertions) {
        "dev.mneme.app.debug"
    } else {
        "dev.mneme.app"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_argument_is_taken_from_the_launchs_own_folder() {
        let home = Path::new("/home/me");
        assert_eq!(start_dir(Some(Path::new("code/app")), Some(Path::new("/work")), home), Path::new("/work/code/app"));
        assert_eq!(start_dir(Some(Path::new("/abs")), Some(Path::new("/work")), home), Path::new("/abs"));
        assert_eq!(start_dir(None, Some(Path::new("/work")), home), Path::new("/work"));
        // A desktop launcher's `/`, or a folder that could not be read: home.
        assert_eq!(start_dir(None, Some(Path::new("/")), home), home);
        assert_eq!(start_dir(None, None, home), home);
    }

    #[test]
    fn a_folder_argument_that_is_not_a_folder_is_refused_with_what_to_do() {
        let t = tempfile::tempdir().unwrap();
        assert_eq!(check_folder(t.path().to_path_buf()).unwrap(), t.path());
        let missing = check_folder(t.path().join("typo")).unwrap_err().to_string();
        assert!(missing.contains("typo does not exist") && missing.contains("check the spelling"), "{missing}");
        std::fs::write(t.path().join("notes.md"), "x").unwrap();
        let file = check_folder(t.path().join("notes.md")).unwrap_err().to_string();
        assert!(file.contains("notes.md is a file, not a folder"), "{file}");
    }

    /// A development build never answers to, or hands over to, the installed app's name.
    #[test]
    fn a_debug_build_has_its_own_single_instance_name() {
        let config: serde_json::Value = serde_json::from_str(include_str!("../tauri.conf.json")).unwrap();
        let identifier = config["identifier"].as_str().unwrap();
        assert_eq!(single_instance_id() == identifier, !cfg!(debug_assertions), "{}", single_instance_id());
    }
}
