//! What a decision's retention prune could not delete reaches the app: the item view a decision
//! answers with names each stuck file and the system's error (`notPruned`), and the field is left
//! out of every other item, so the Inbox screen shows a notice only when there is something to
//! say.

use mneme_agent::{Changeset, FileChange};
use mneme_api::{FixedClock, InboxState, Mneme};
use mneme_extract::inbox::{Inbox, NewItem};
use mneme_testsupport::TestHome;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// When the old items were decided (Unix seconds); the new decision comes a month later, past
/// the 30 days retention keeps every decided item.
const T0: u64 = 1_800_000_000;
const DAY: u64 = 24 * 60 * 60;

fn stage(inbox: &Inbox, project: &Path, memory: &Path, name: &str) -> String {
    let text = format!("---\nname: {name}\ndescription: {name} desc\n---\n\n{name} body\n");
    let change = FileChange { path: memory.join(format!("{name}.md")), before: None, after: Some(text), reason: "t".into(), extra: Default::default() };
    let item = NewItem {
        project_root: project.to_path_buf(),
        memory_dir: memory.to_path_buf(),
        session_id: None,
        transcript: None,
        source: "extract_memories".into(),
        changeset: Changeset { root: memory.to_path_buf(), changes: vec![change], extra: Default::default() },
    };
    inbox.stage(item).unwrap().id
}

#[cfg(target_os = "linux")]
#[test]
fn a_decided_item_the_prune_could_not_delete_reaches_the_item_view() {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    let mem = t.memdir_for(&repo);
    std::fs::create_dir_all(&mem).unwrap();
    let data = t.env.data_dir();
    let at = |secs: u64| Inbox::new(&data, Arc::new(FixedClock::at_unix_secs(secs)));
    let item_path = |id: &str| -> PathBuf { data.join("extract/inbox").join(format!("{id}.json")) };

    // 21 old decided items: once one more is decided, the oldest is past the newest 20.
    let old: Vec<String> = (0..21u64)
        .map(|i| {
            let id = stage(&at(T0 + i), &repo, &mem, &format!("d{i}"));
            at(T0 + i).discard(&id).unwrap();
            id
        })
        .collect();
    let Some(stuck) = Undeletable::new(&item_path(&old[0])) else {
        eprintln!("skipped: the immutable flag cannot be set here (it takes `chattr`, CAP_LINUX_IMMUTABLE as root has, and a file system that has the flag)");
        return;
    };

    let now = T0 + 31 * DAY;
    let mneme = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(now)));
    let id = stage(&at(now), &repo, &mem, "new");
    let kept = mneme.inbox_keep(&id).unwrap();
    assert_eq!(kept.state, InboxState::Kept, "the decision went through");
    assert!(mem.join("new.md").exists());
    assert_eq!(kept.not_pruned.len(), 1, "{:?}", kept.not_pruned);
    assert_eq!(kept.not_pruned[0].path, item_path(&old[0]));
    assert!(kept.not_pruned[0].error.contains("not permitted"), "{:?}", kept.not_pruned);
    let json = serde_json::to_value(&kept).unwrap();
    assert_eq!(json["notPruned"][0]["path"], serde_json::json!(item_path(&old[0])));
    assert!(json["notPruned"][0]["error"].as_str().is_some_and(|e| !e.is_empty()), "{json}");

    // The listing never carries it: it belongs to the decision's answer only.
    let listed = mneme.inbox(&mneme_api::ContextRequest { cwd: repo.clone(), ..Default::default() }).unwrap();
    let again = listed.decided.iter().find(|i| i.id == id).expect("the kept item is listed");
    assert!(again.not_pruned.is_empty());
    assert!(serde_json::to_value(again).unwrap().get("notPruned").is_none(), "left out when empty");

    // Once the file can go, the next decision deletes it and has nothing to report.
    drop(stuck);
    let next = stage(&at(now), &repo, &mem, "next");
    let discarded = mneme.inbox_discard(&next).unwrap();
    assert!(discarded.not_pruned.is_empty(), "{:?}", discarded.not_pruned);
    assert!(serde_json::to_value(&discarded).unwrap().get("notPruned").is_none());
    assert!(!item_path(&old[0]).exists());
}

/// Keeps a file from being deleted, even by root, while it lives: Linux's immutable flag, set
/// with `chattr +i` (mneme-api has no ioctl crate to set it directly). `None` where it cannot
/// be set: no `chattr`, no CAP_LINUX_IMMUTABLE, or a file system without the flag.
#[cfg(target_os = "linux")]
struct Undeletable(PathBuf);

#[cfg(target_os = "linux")]
impl Undeletable {
    fn new(path: &Path) -> Option<Undeletable> {
        let ok = std::process::Command::new("chattr").arg("+i").arg(path).output().ok()?.status.success();
        // Deleting is what matters: some file systems accept the call and ignore the flag.
        let held = ok && std::fs::OpenOptions::new().append(true).open(path).is_err();
        let u = Undeletable(path.to_path_buf());
        held.then_some(u)
    }
}

#[cfg(target_os = "linux")]
impl Drop for Undeletable {
    /// Cleared again, also when the test fails: else the temporary folder could not be deleted.
    fn drop(&mut self) {
        let _ = std::process::Command::new("chattr").arg("-i").arg(&self.0).output();
    }
}
