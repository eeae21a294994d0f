//! Opening a project: the folder the app opened last (kept in Mneme's data dir, so the app
//! starts there next time instead of on whatever folder its process was started in) and folder
//! completion for the typed path, which is how a browser page picks a folder (it has no native
//! folder dialog that could name a path on the server's disk).

use crate::{ApiError, ContextRequest, ErrorCode, Mneme};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where the last opened project is kept, in Mneme's data dir.
const LAST_PROJECT_FILE: &str = "last-project.json";
/// At most this many completions: enough to pick from, small enough to list at once.
const COMPLETIONS_SHOWN: usize = 50;

/// A project folder the app opened.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct OpenedProject {
    /// The folder, absolute, as the app will show it.
    pub cwd: PathBuf,
    /// Whether Claude Code has run there (it keeps a project folder for it).
    pub known_to_claude_code: bool,
}

/// Folders that complete a typed path.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct FolderCompletion {
    /// The typed path itself, absolute, when it is an existing folder.
    pub folder: Option<PathBuf>,
    /// Sub-folders of the typed path's parent whose names start with its last part, sorted;
    /// hidden ones only when the last part starts with a dot.
    pub suggestions: Vec<PathBuf>,
    /// Whether there were more than those listed.
    pub more: bool,
}

#[derive(Serialize, Deserialize)]
struct LastProject {
    cwd: PathBuf,
}

impl Mneme {
    /// The project opened last, if its folder still exists.
    pub fn last_project(&self) -> Option<PathBuf> {
        let bytes = std::fs::read(self.env.data_dir().join(LAST_PROJECT_FILE)).ok()?;
        let last: LastProject = serde_json::from_slice(&bytes).ok()?;
        Some(last.cwd).filter(|c| c.is_absolute() && c.is_dir())
    }

    /// Checks that `req.cwd` is a folder and remembers it as the project opened last.
    pub fn open_project(&self, req: &ContextRequest) -> Result<OpenedProject, ApiError> {
        let cwd = &req.cwd;
        if !cwd.is_absolute() {
            return Err(ApiError::invalid(format!("{} is not an absolute path. Type the whole path, starting with / or ~.", cwd.display())));
        }
        match std::fs::metadata(cwd) {
            Ok(m) if m.is_dir() => {}
            Ok(_) => return Err(ApiError::invalid(format!("{} is a file, not a folder. Choose the folder Claude Code would start in.", cwd.display()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(ApiError::not_found(format!("{} does not exist. Check the spelling, or pick the folder from the list.", cwd.display())))
            }
            Err(e) => return Err(ApiError::new(ErrorCode::Io, format!("{} cannot be opened: {e}.", cwd.display()))),
        }
        let known = self.projects().iter().any(|p| p.project_path.as_deref() == Some(cwd.as_path()));
        let path = self.env.data_dir().join(LAST_PROJECT_FILE);
        let text = serde_json::to_vec_pretty(&LastProject { cwd: cwd.clone() }).map_err(|e| ApiError::new(ErrorCode::Io, e.to_string()))?;
        std::fs::create_dir_all(self.env.data_dir())
            .and_then(|()| mneme_store::atomic::write_atomic(&path, &text))
            .map_err(|e| ApiError::new(ErrorCode::Io, format!("Could not remember the project in {}: {e}.", path.display())))?;
        Ok(OpenedProject { cwd: cwd.clone(), known_to_claude_code: known })
    }

    /// Folders completing `typed` (absolute, or starting with `~`).
    pub fn complete_folder(&self, typed: &str) -> FolderCompletion {
        let expanded = match typed.strip_prefix('~') {
            Some(rest) if rest.is_empty() || rest.starts_with('/') => format!("{}{rest}", self.env.home.display()),
            _ => typed.to_string(),
        };
        let empty = FolderCompletion { folder: None, suggestions: Vec::new(), more: false };
        if !expanded.starts_with('/') {
            return empty;
        }
        let path = Path::new(&expanded);
        let folder = Some(path.to_path_buf()).filter(|p| p.is_dir());
        // "/a/b/" lists b's folders; "/a/b" lists a's folders starting with "b".
        let (parent, prefix) = if expanded.ends_with('/') {
            (path.to_path_buf(), String::new())
        } else {
            match (path.parent(), path.file_name()) {
                (Some(p), Some(n)) => (p.to_path_buf(), n.to_string_lossy().into_owned()),
                _ => (path.to_path_buf(), String::new()),
            }
        };
        let Ok(entries) = std::fs::read_dir(&parent) else {
            return FolderCompletion { folder, ..empty };
        };
        let mut suggestions: Vec<PathBuf> = entries
            .flatten()
            .filter(|e| {
                let name = e.file_name().to_string_lossy().into_owned();
                name.starts_with(&prefix) && (prefix.starts_with('.') || !name.starts_with('.'))
            })
            // Symlinked folders count: many people keep projects behind one.
            .filter(|e| e.path().is_dir())
            .map(|e| e.path())
            .collect();
        suggestions.sort();
        let more = suggestions.len() > COMPLETIONS_SHOWN;
        suggestions.truncate(COMPLETIONS_SHOWN);
        FolderCompletion { folder, suggestions, more }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_core::FixedClock;
    use std::sync::Arc;

    fn mneme(root: &Path) -> Mneme {
        let mut env = crate::Environment::with_home(root.join("home"));
        env.vars.insert("MNEME_DATA_DIR".into(), root.join("data").to_string_lossy().into_owned());
        std::fs::create_dir_all(root.join("home")).unwrap();
        Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_764_400_000)))
    }

    fn at(cwd: PathBuf) -> ContextRequest {
        ContextRequest { cwd, ..ContextRequest::default() }
    }

    #[test]
    fn the_project_opened_last_is_remembered_while_it_exists() {
        let t = tempfile::tempdir().unwrap();
        let m = mneme(t.path());
        assert_eq!(m.last_project(), None);
        let proj = t.path().join("home/code/shop");
        std::fs::create_dir_all(&proj).unwrap();
        let opened = m.open_project(&at(proj.clone())).unwrap();
        assert_eq!(opened.cwd, proj);
        assert!(!opened.known_to_claude_code);
        assert_eq!(m.last_project(), Some(proj.clone()));
        std::fs::remove_dir(&proj).unwrap();
        assert_eq!(m.last_project(), None, "a folder that is gone is not opened");
    }

    #[test]
    fn opening_something_that_is_not_a_folder_says_what_to_do() {
        let t = tempfile::tempdir().unwrap();
        let m = mneme(t.path());
        let e = m.open_project(&at(t.path().join("nope"))).unwrap_err();
        assert_eq!(e.code, ErrorCode::NotFound);
        assert!(e.message.contains("does not exist"), "{}", e.message);
        std::fs::write(t.path().join("file"), "x").unwrap();
        let e = m.open_project(&at(t.path().join("file"))).unwrap_err();
        assert!(e.message.contains("is a file, not a folder"), "{}", e.message);
        let e = m.open_project(&at(PathBuf::from("relative"))).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput);
        assert_eq!(m.last_project(), None, "nothing was remembered");
    }

    #[test]
    fn completion_lists_matching_folders_and_hides_dot_folders_unless_asked() {
        let t = tempfile::tempdir().unwrap();
        let m = mneme(t.path());
        let home = t.path().join("home");
        for d in ["code/shop", "code/shopify", "code/atlas", "code/.git", ".config"] {
            std::fs::create_dir_all(home.join(d)).unwrap();
        }
        std::fs::write(home.join("code/shop-notes.txt"), "").unwrap();
        let c = m.complete_folder("~/code/sh");
        assert_eq!(c.folder, None);
        assert_eq!(c.suggestions, vec![home.join("code/shop"), home.join("code/shopify")]);
        let c = m.complete_folder("~/code/");
        assert_eq!(c.folder, Some(home.join("code/")));
        assert_eq!(c.suggestions, vec![home.join("code/atlas"), home.join("code/shop"), home.join("code/shopify")]);
        assert_eq!(m.complete_folder("~/.c").suggestions, vec![home.join(".config")]);
        assert_eq!(m.complete_folder(&format!("{}/code/shop", home.display())).folder, Some(home.join("code/shop")));
        assert!(m.complete_folder("code").suggestions.is_empty(), "relative paths complete to nothing");
    }
}
