//! Noticing that a session transcript grew: a `notify` watcher over `<config>/projects` that
//! reports main-session transcripts (`<projects>/<project>/<session-uuid>.jsonl`) as they change.
//! Sub-agent transcripts (`<session>/subagents/agent-*.jsonl`) are not sessions and are left out,
//! as Claude Code's session listing leaves them out. What changed is then read with a
//! [`crate::run::Session`], whose byte cursor takes only complete lines.

use notify::{RecommendedWatcher, RecursiveMode, Watcher};
use std::path::{Path, PathBuf};
use std::collections::VecDeque;
use std::sync::{mpsc, Mutex};
use std::time::{Duration, Instant};

/// Whether `path` is a main-session transcript directly inside a project folder of
/// `projects_dir`.
pub fn is_session_transcript(projects_dir: &Path, path: &Path) -> bool {
    let Ok(rest) = path.strip_prefix(projects_dir) else { return false };
    let parts: Vec<_> = rest.components().collect();
    parts.len() == 2
        && path.extension().is_some_and(|e| e == "jsonl")
        && path.file_stem().and_then(|s| s.to_str()).is_some_and(mneme_store::paths::is_session_id)
}

/// What the `notify` thread passes on.
enum Msg {
    Changed(PathBuf),
    NewProject(PathBuf),
}

/// Reports changed session transcripts under a projects folder.
///
/// The projects folder and each project folder are watched one level deep. A new project
/// folder is watched first and listed second, so a transcript written into it before the watch
/// was in place is found by the listing and one written after raises an event: none is missed
/// (a recursive watch adds its watch only after reporting the folder, which leaves a gap).
pub struct TranscriptWatcher {
    projects_dir: PathBuf,
    watcher: Mutex<RecommendedWatcher>,
    rx: mpsc::Receiver<Msg>,
    ready: Mutex<VecDeque<PathBuf>>,
}

impl std::fmt::Debug for TranscriptWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TranscriptWatcher").field("projects_dir", &self.projects_dir).finish_non_exhaustive()
    }
}

impl TranscriptWatcher {
    /// Watches `projects_dir` (`Environment::projects_dir()`) and every project folder in it.
    /// The folder must exist.
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
                    let _ = tx.send(Msg::Changed(p));
                } else if matches!(event.kind, notify::EventKind::Create(_)) && p.parent() == Some(filter_root.as_path()) {
                    let _ = tx.send(Msg::NewProject(p));
                }
            }
        })?;
        watcher.watch(&root, RecursiveMode::NonRecursive)?;
        for entry in std::fs::read_dir(&root).map_err(notify::Error::io)?.flatten() {
            if entry.file_type().is_ok_and(|t| t.is_dir()) {
                // A project folder that cannot be watched (unreadable, or the system's watch
                // limit reached) loses only its own sessions, as in `handle`; the rest are
                // still watched.
                let _ = watcher.watch(&entry.path(), RecursiveMode::NonRecursive);
            }
        }
        Ok(TranscriptWatcher { projects_dir: root, watcher: Mutex::new(watcher), rx, ready: Mutex::new(VecDeque::new()) })
    }

    fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
        m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Turns one message into transcripts: a new project folder is watched, then listed.
    fn handle(&self, msg: Msg) {
        let mut ready = Self::lock(&self.ready);
        match msg {
            Msg::Changed(p) => ready.push_back(p),
            Msg::NewProject(dir) => {
                if !dir.is_dir() || Self::lock(&self.watcher).watch(&dir, RecursiveMode::NonRecursive).is_err() {
                    return;
                }
                for entry in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
                    if is_session_transcript(&self.projects_dir, &entry.path()) {
                        ready.push_back(entry.path());
                    }
                }
            }
        }
    }

    /// The next changed transcript, waiting at most `timeout`.
    pub fn recv_timeout(&self, timeout: Duration) -> Option<PathBuf> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(p) = Self::lock(&self.ready).pop_front() {
                return Some(p);
            }
            let left = deadline.checked_duration_since(Instant::now())?;
            let msg = self.rx.recv_timeout(left).ok()?;
            self.handle(msg);
        }
    }

    /// Every changed transcript reported so far, each once.
    pub fn drain(&self) -> Vec<PathBuf> {
        while let Ok(msg) = self.rx.try_recv() {
            self.handle(msg);
        }
        let mut out: Vec<PathBuf> = Vec::new();
        for p in Self::lock(&self.ready).drain(..) {
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
    fn appends_in_existing_and_new_project_folders_are_reported() {
        let dir = tempfile::tempdir().unwrap();
        let projects = std::fs::canonicalize(dir.path()).unwrap();
        let existing = projects.join("-tmp-old");
        std::fs::create_dir_all(&existing).unwrap();
        let w = TranscriptWatcher::new(&projects).unwrap();
        let old = existing.join("9cecd26a-042b-4c49-82a7-83e39a310d80.jsonl");
        std::fs::write(&old, "{}\n").unwrap();
        assert_eq!(w.recv_timeout(Duration::from_secs(30)).as_deref(), Some(old.as_path()));
        assert!(w.drain().iter().all(|p| p == &old));
        let project = projects.join("-tmp-p");
        std::fs::create_dir_all(project.join("0a23833b-7439-4af7-b274-46564fd6c262/subagents")).unwrap();
        std::fs::write(project.join("0a23833b-7439-4af7-b274-46564fd6c262/subagents/agent-x.jsonl"), "{}\n").unwrap();
        let t = project.join("0a23833b-7439-4af7-b274-46564fd6c262.jsonl");
        std::fs::write(&t, "{}\n").unwrap();
        // Waits for the event (late duplicates for the first file aside); the bound only keeps
        // a broken watcher from hanging the suite.
        let got = std::iter::from_fn(|| w.recv_timeout(Duration::from_secs(30))).find(|p| p != &old);
        assert_eq!(got.as_deref(), Some(t.as_path()));
        assert!(w.drain().iter().all(|p| p == &t || p == &old));
    }
}
