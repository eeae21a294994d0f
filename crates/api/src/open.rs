//! Opening a project: the folder the app opened last (kept in Mneme's data dir, so the app
//! starts there next time instead of on whatever folder its process was started in) and folder
//! completion for the typed path, which is how a browser page picks a folder (it has no native
//! folder dialog that could name a path on the server's disk).

use crate::{ApiError, ContextRequest, ErrorCode, Mneme};
use mneme_core::own_files::Unknown;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Where the last opened project is kept, in Mneme's data dir.
const LAST_PROJECT_FILE: &str = "last-project.json";
/// At most this many completions: enough to pick from, small enough to list at once.
const COMPLETIONS_SHOWN: usize = 50;
/// At most this many entries of a folder are looked at per completion (it runs on every
/// keystroke); in a larger folder the rest are left out and `more` says so.
const ENTRIES_SCANNED: usize = 10_000;

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
    /// hidden ones only when the last part starts with a dot, and none whose name is not UTF-8.
    pub suggestions: Vec<PathBuf>,
    /// Whether there were more than those listed (or the folder was too large to look at whole).
    pub more: bool,
}

#[derive(Serialize, Deserialize)]
struct LastProject {
    cwd: PathBuf,
    /// Fields a newer Mneme keeps here, written back when this one remembers another folder.
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    extra: Unknown,
}

/// The largest `last-project.json` read: a path and a few fields.
const LAST_PROJECT_CAP: u64 = 1 << 20;

impl Mneme {
    /// The project opened last, if its folder still exists.
    pub fn last_project(&self) -> Option<PathBuf> {
        let last = self.stored_last_project()?;
        Some(last.cwd).filter(|c| c.is_absolute() && c.is_dir())
    }

    /// `last-project.json` as it is, `None` when it is absent or unreadable (it is only a
    /// convenience, so the app then starts where it would without it).
    fn stored_last_project(&self) -> Option<LastProject> {
        let bytes = mneme_store::open::read_own_file(&self.env.data_dir().join(LAST_PROJECT_FILE), LAST_PROJECT_CAP).ok()??;
        serde_json::from_slice(&bytes).ok()
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
        let known = self.projects()?.iter().any(|p| p.project_path.as_deref() == Some(cwd.as_path()));
        let path = self.env.data_dir().join(LAST_PROJECT_FILE);
        let extra = self.stored_last_project().map(|l| l.extra).unwrap_or_default();
        let text = serde_json::to_vec_pretty(&LastProject { cwd: cwd.clone(), extra }).map_err(|e| ApiError::new(ErrorCode::Io, e.to_string()))?;
        std::fs::create_dir_all(self.env.data_dir())
            .and_then(|()| mneme_store::atomic::write_atomic(&path, &text))
            .map_err(|e| {
                ApiError::refused(&e, "remember the project in", &path)
                    .unwrap_or_else(|| ApiError::new(ErrorCode::for_io(&e), format!("Could not remember the project in {}: {e}.", path.display())))
            })?;
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
        let mut suggestions: Vec<PathBuf> = Vec::new();
        let mut cut_short = false;
        for (seen, entry) in entries.enumerate() {
            if seen == ENTRIES_SCANNED {
                cut_short = true;
                break;
            }
            let Ok(entry) = entry else { continue };
            let name = entry.file_name();
            // A name that is not UTF-8 can be neither shown nor typed back (and a path holding
            // one would make the whole answer fail to serialise).
            let Some(name) = name.to_str() else { continue };
            if !name.starts_with(&prefix) || (name.starts_with('.') && !prefix.starts_with('.')) {
                continue;
            }
            // The kind the listing gives costs no stat; only a link is followed. Symlinked
            // folders count: many people keep projects behind one.
            let folder = match entry.file_type() {
                Ok(t) if t.is_symlink() => entry.path().is_dir(),
                Ok(t) => t.is_dir(),
                Err(_) => false,
            };
            if folder {
                suggestions.push(entry.path());
            }
        }
        let more = cut_short || suggestions.len() > COMPLETIONS_SHOWN;
        if suggestions.len() > COMPLETIONS_SHOWN {
            // The first ones by name, without sorting them all.
            suggestions.select_nth_unstable(COMPLETIONS_SHOWN);
            suggestions.truncate(COMPLETIONS_SHOWN);
        }
        suggestions.sort();
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

    /// A newer Mneme's fields in `last-project.json` were dropped when this one remembered
    /// another folder (ARCHITECTURE.md, "Mneme's own files across versions").
    #[test]
    fn a_newer_mneme_s_fields_survive_opening_another_project() {
        let t = tempfile::tempdir().unwrap();
        let m = mneme(t.path());
        let (one, two) = (t.path().join("home/one"), t.path().join("home/two"));
        std::fs::create_dir_all(&one).unwrap();
        std::fs::create_dir_all(&two).unwrap();
        let file = t.path().join("data").join(LAST_PROJECT_FILE);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, serde_json::json!({"cwd": one, "recent": ["/a", "/b"], "pinned": true}).to_string()).unwrap();
        assert_eq!(m.last_project(), Some(one));
        m.open_project(&at(two.clone())).unwrap();
        let after: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
        assert_eq!(after, serde_json::json!({"cwd": two, "recent": ["/a", "/b"], "pinned": true}));
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

    /// A folder name that is not UTF-8 is left out instead of making the answer unserialisable;
    /// links to folders count, links to files do not; more than 50 matches are the first 50
    /// by name.
    #[test]
    fn completion_skips_names_it_cannot_show_and_keeps_the_first_by_name() {
        use std::os::unix::ffi::OsStrExt;
        let t = tempfile::tempdir().unwrap();
        let m = mneme(t.path());
        let code = t.path().join("home/code");
        std::fs::create_dir_all(code.join("cafe")).unwrap();
        std::fs::create_dir_all(code.join(std::ffi::OsStr::from_bytes(b"caf\xe9"))).unwrap();
        std::fs::write(code.join("cab.txt"), "").unwrap();
        std::os::unix::fs::symlink(code.join("cafe"), code.join("cab-link")).unwrap();
        std::os::unix::fs::symlink(code.join("cab.txt"), code.join("cab-file-link")).unwrap();
        let c = m.complete_folder("~/code/ca");
        assert_eq!(c.suggestions, vec![code.join("cab-link"), code.join("cafe")]);
        serde_json::to_string(&c).expect("the answer serialises");

        let many = t.path().join("home/many");
        for i in (0..120).rev() {
            std::fs::create_dir_all(many.join(format!("d{i:03}"))).unwrap();
        }
        let c = m.complete_folder("~/many/d");
        assert!(c.more);
        assert_eq!(c.suggestions, (0..50).map(|i| many.join(format!("d{i:03}"))).collect::<Vec<_>>());
    }

    /// A huge folder is looked at up to a bound, per keystroke: `more` says the list was cut.
    #[test]
    fn completion_in_a_huge_folder_stops_at_its_bound() {
        let t = tempfile::tempdir().unwrap();
        let m = mneme(t.path());
        let huge = t.path().join("home/huge");
        std::fs::create_dir_all(huge.join("project")).unwrap();
        for i in 0..ENTRIES_SCANNED + 10 {
            std::fs::write(huge.join(format!("f{i}")), "").unwrap();
        }
        let c = m.complete_folder("~/huge/");
        assert!(c.more, "{:?}", c.suggestions);
        assert!(c.suggestions.len() <= 1);
    }
}
