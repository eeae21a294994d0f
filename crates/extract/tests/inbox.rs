//! The review inbox on its own: items staged by hand, kept, edited, discarded and promoted.

use mneme_agent::{Changeset, FileChange};
use mneme_core::{Clock, FixedClock};
use mneme_extract::inbox::{Inbox, NewItem, PromoteTarget};
use mneme_extract::ItemStatus;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A token Claude Code's scanner (and so the team check) finds.
fn token() -> String {
    format!("ghp_{}", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5")
}

fn clock() -> Arc<dyn Clock> {
    Arc::new(FixedClock::at_unix_secs(1_800_000_000))
}

fn mem(name: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {name} desc\nmetadata:\n  type: feedback\n---\n\n{body}\n")
}

struct World {
    _dir: tempfile::TempDir,
    data: PathBuf,
    project: PathBuf,
    memory: PathBuf,
    inbox: Inbox,
}

impl World {
    fn new() -> World {
        let dir = tempfile::tempdir().unwrap();
        let data = dir.path().join("data");
        let project = dir.path().join("proj");
        let memory = dir.path().join("memory");
        std::fs::create_dir_all(&project).unwrap();
        std::fs::create_dir_all(&memory).unwrap();
        let inbox = Inbox::new(&data, clock());
        World { _dir: dir, data, project, memory, inbox }
    }

    /// Stages new files (relative to the memory folder) with one index line each.
    fn stage(&self, files: &[(&str, String)]) -> String {
        let root = &self.memory;
        let mut changes: Vec<FileChange> =
            files.iter().map(|(r, c)| FileChange { path: root.join(r), before: None, after: Some(c.clone()), reason: "t".into() }).collect();
        let index: String = files.iter().filter(|(r, _)| !r.starts_with("team/")).map(|(r, _)| format!("- [{r}]({r}) — hook\n")).collect();
        if !index.is_empty() {
            changes.push(FileChange { path: root.join("MEMORY.md"), before: None, after: Some(index), reason: "t".into() });
        }
        let new = NewItem {
            project_root: self.project.clone(),
            memory_dir: root.clone(),
            session_id: None,
            transcript: None,
            source: "extract_memories".into(),
            changeset: Changeset { root: root.clone(), changes },
        };
        self.inbox.stage(new).unwrap().id
    }

    fn item_path(&self, id: &str) -> PathBuf {
        self.data.join("extract/inbox").join(format!("{id}.json"))
    }
}

fn read(p: &Path) -> Option<String> {
    std::fs::read_to_string(p).ok()
}

#[test]
fn keeping_an_edit_that_puts_a_secret_into_team_memory_is_refused() {
    let w = World::new();
    let id = w.stage(&[("team/deploy.md", mem("deploy", "Deploys use the bot token."))]);
    let with_secret = mem("deploy", &format!("Deploys use the bot token {}.", token()));
    let err = w.inbox.edit_and_keep(&id, "team/deploy.md", with_secret).unwrap_err();
    assert_eq!(err.code(), "secrets-in-team-memory", "{err}");
    assert_eq!(read(&w.memory.join("team/deploy.md")), None, "nothing was written");
    assert_eq!(w.inbox.get(&id).unwrap().status, ItemStatus::Pending);
    // The team index is checked too.
    let root = &w.memory;
    let changes = vec![FileChange {
        path: root.join("team/MEMORY.md"),
        before: None,
        after: Some(format!("- [Deploy](deploy.md) — token {}\n", token())),
        reason: "t".into(),
    }];
    let new = NewItem {
        project_root: w.project.clone(),
        memory_dir: root.clone(),
        session_id: None,
        transcript: None,
        source: "x".into(),
        changeset: Changeset { root: root.clone(), changes },
    };
    let id = w.inbox.stage(new).unwrap().id;
    assert_eq!(w.inbox.keep(&id).unwrap_err().code(), "secrets-in-team-memory");
    assert_eq!(read(&w.memory.join("team/MEMORY.md")), None);
    // Without the secret it is kept.
    let id = w.stage(&[("team/deploy.md", mem("deploy", "Deploys go through the bot."))]);
    w.inbox.keep(&id).unwrap();
    assert!(read(&w.memory.join("team/deploy.md")).is_some());
    let _ = PromoteTarget::Team;
    let _ = w.item_path(&id);
}
