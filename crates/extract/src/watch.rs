//! Noticing that a session transcript grew: a `notify` watcher over `<config>/projects` that
//! reports main-session transcripts (`<projects>/<project>/<session-uuid>.jsonl`) as they change.
//! Sub-agent transcripts (`<session>/subagents/agent-*.jsonl`) are not sessions and are left out,
//! as Claude Code's session listing leaves them out. What changed is then read with a
//! [`crate::run::Session`], whose byte cursor takes only complete lines.

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::Duration;

/// Whether `path` is a main-session transcript directly inside a project folder of
/// `projects_dir`.
pub fn is_session_transcript(projects_dir: &Path, path: &Path) -> bool {
    let Ok(rest) = path.strip_prefix(projects_dir) else { return false };
    let parts: Vec<_> = rest.components().collect();
    parts.len() == 2
        && path.extension().is_some_and(|e| e == "jsonl")
        && path.file_stem().and_then(|s| s.to_str()).is_some_and(mneme_store::paths::is_session_id)
}

/// Reports changed session transcripts under a projects folder.
pub struct TranscriptWatcher {
    projects_dir: PathBuf,
    _watcher: RecommendedWatcher,
    rx: mpsc::Receiver<PathBuf>,
}

impl std::fmt::Debug for TranscriptWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TranscriptWatcher").field("projects_dir", &self.projects_dir).finish_non_exhaustive()
    }
}

impl TranscriptWatcher {
    /// Watches `projects_dir` (`Environment::projects_dir()`), recursively so that new
    /// projects are seen too. The folder must exist.
    pub fn new(projects_dir: &Path) -> notify::Result<TranscriptWatcher> {
        let (tx, rx) = mpsc::channel();
        let root = projects_dir.to_path_buf();
        let filter_root = root.clone();
        let mut watcher = notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
            let Ok(event) = event else { return };
            if matches!(event.kind, notify::EventKind::Access(_)) {
                return;
            }
            for p in event.paths {
                if is_session_transcript(&filter_root, &p) {
                    let _ = tx.send(p);
                } else if matches!(event.kind, notify::EventKind::Create(_)) && p.parent() == Some(filter_root.as_path()) {
                    // A new project folder: a transcript written into it before the watch on
                    // the folder was in place raised no event of its own.
                    for entry in std::fs::read_dir(&p).into_iter().flatten().flatten() {
                        if is_session_transcript(&filter_root, &entry.path()) {
                            let _ = tx.send(entry.path());
                        }
                    }
                }
            }
        })?;
        watcher.watch(&root, RecursiveMode::Recursive)?;
        Ok(TranscriptWatcher { projects_dir: root, _watcher: watcher, rx })
    }

    /// The next changed transcript, waiting at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<PathBuf> {
        self.rx.recv_timeout(timeout).ok()
    }

    /// Every changed transcript reported so far, each once.
    pub fn drain(&self) -> Vec<PathBuf> {
        let mut out: Vec<PathBuf> = Vec::new();
        while let Ok(p) = self.rx.try_recv() {
            if !out.contains(&p) {
                out.push(p);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_main_session_transcripts_count() {
        let root = Path::new("/c/projects");
        let sid = "0a23833b-7439-4af7-b274-46564fd6c262";
        assert!(is_session_transcript(root, &root.join(format!("-p/{sid}.jsonl"))));
        assert!(!is_session_transcript(root, &root.join(format!("-p/{sid}/subagents/agent-a1.jsonl"))));
        assert!(!is_session_transcript(root, &root.join("-p/agent-a1.jsonl")));
        assert!(!is_session_transcript(root, &root.join(format!("-p/memory/{sid}.jsonl"))));
        assert!(!is_session_transcript(root, &root.join(format!("-p/{sid}.json"))));
        assert!(!is_session_transcript(Path::new("/other"), &root.join(format!("-p/{sid}.jsonl"))));
    }

    #[test]
    fn appends_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let projects = std::fs::canonicalize(dir.path()).unwrap();
        let w = TranscriptWatcher::new(&projects).unwrap();
        let project = projects.join("-tmp-p");
        std::fs::create_dir_all(project.join("0a23833b-7439-4af7-b274-46564fd6c262/subagents")).unwrap();
        std::fs::write(project.join("0a23833b-7439-4af7-b274-46564fd6c262/subagents/agent-x.jsonl"), "{}\n").unwrap();
        let t = project.join("0a23833b-7439-4af7-b274-46564fd6c262.jsonl");
        std::fs::write(&t, "{}\n").unwrap();
        // Waits for the event; the bound only keeps a broken watcher from hanging the suite.
        let got = w.recv_timeout(Duration::from_secs(30));
        assert_eq!(got.as_deref(), Some(t.as_path()));
        assert!(w.drain().iter().all(|p| p == &t));
    }
}
