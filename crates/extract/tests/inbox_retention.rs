//! The inbox's retention rule (`mneme_extract::inbox::retention`): deciding an item prunes
//! decided items older than 30 days beyond each project's newest 20, and nothing else; what it
//! cannot delete, the decision's item names.

mod common;

use common::{new_item, World, T0};
use mneme_agent::FileChange;
use mneme_extract::inbox::retention;
use mneme_extract::{ItemStatus, NotPruned};
use std::path::Path;

const DAY: u64 = 24 * 60 * 60;

impl World {
    /// Stages one new memory `name.md` at `secs`.
    fn stage(&self, secs: u64, name: &str) -> String {
        self.stage_in(&self.project, &self.memory, secs, name)
    }

    /// Stages one new memory `name.md` for `project` (its memory folder `memory`) at `secs`.
    fn stage_in(&self, project: &Path, memory: &Path, secs: u64, name: &str) -> String {
        let text = format!("---\nname: {name}\ndescription: {name} desc\n---\n\n{name} body\n");
        let change = FileChange { path: memory.join(format!("{name}.md")), before: None, after: Some(text), reason: "t".into(), extra: Default::default() };
        self.at(secs).stage(new_item(project, memory, vec![change])).unwrap().id
    }
}

fn exists(p: &Path) -> bool {
    std::fs::symlink_metadata(p).is_ok()
}

#[test]
fn deciding_an_item_prunes_old_decided_items_past_the_newest_twenty_and_nothing_else() {
    assert_eq!((retention::KEEP_DAYS, retention::KEEP_NEWEST), (30, 20));
    let w = World::new();

    // 25 items decided a second apart at T0 (discarded, and two kept), oldest first.
    let decided: Vec<String> = (0..25u64)
        .map(|i| {
            let id = w.stage(T0 + i, &format!("d{i}"));
            let inbox = w.at(T0 + i);
            if i % 12 == 0 {
                inbox.keep(&id).unwrap();
            } else {
                inbox.discard(&id).unwrap();
            }
            id
        })
        .collect();
    // Pending items older than all of them: never pruned, however old and however many.
    let pending: Vec<String> = (0..3).map(|i| w.stage(T0 - 100 + i, &format!("p{i}"))).collect();
    // A decided item older still, then cut short on disk: unreadable, so never deleted blindly.
    let damaged = w.stage(T0 - 200, "broken");
    w.at(T0 - 200).discard(&damaged).unwrap();
    let bytes = std::fs::read(w.item_path(&damaged)).unwrap();
    std::fs::write(w.item_path(&damaged), &bytes[..bytes.len() / 2]).unwrap();
    // Files that are not items: a note, a JSON file that is no item, a copy of an old decided
    // item under another name, and the lock file an older Mneme left for an old decided item.
    std::fs::write(w.folder().join("notes.txt"), "mine").unwrap();
    std::fs::write(w.folder().join("other.json"), "{}").unwrap();
    std::fs::copy(w.item_path(&decided[0]), w.folder().join("copy.json")).unwrap();
    std::fs::write(w.folder().join(format!("{}.lock", decided[1])), "").unwrap();
    let before = w.names();

    // 29 days on, every decided item is younger than 30 days: a decision prunes nothing.
    let young = w.stage(T0 + 29 * DAY, "young");
    w.at(T0 + 29 * DAY).discard(&young).unwrap();
    let mut expected = before.clone();
    expected.push(format!("{young}.json"));
    expected.sort();
    assert_eq!(w.names(), expected);

    // 31 days on, a new decision prunes the decided items past the newest 20 (counting the two
    // just decided) that are more than 30 days old: the 7 oldest of the 25. An edit alone is no
    // decision and prunes nothing.
    let last = w.stage(T0 + 31 * DAY, "last");
    let now = w.at(T0 + 31 * DAY);
    now.edit(&last, "last.md", "---\nname: last\ndescription: last desc\n---\n\nedited\n".into()).unwrap();
    assert_eq!(w.names().len(), expected.len() + 1, "an edit prunes nothing");
    let kept = now.keep(&last).unwrap();
    assert!(matches!(kept.status, ItemStatus::Kept { .. }));

    let (gone, stay) = decided.split_at(7);
    for id in gone {
        assert!(!exists(&w.item_path(id)), "{id} should have been pruned");
    }
    for id in stay.iter().chain(&pending).chain([&young, &last, &damaged]) {
        assert!(exists(&w.item_path(id)), "{id} should have been kept");
    }
    let mut expected: Vec<String> = expected.into_iter().filter(|n| !gone.iter().any(|id| *n == format!("{id}.json"))).collect();
    expected.push(format!("{last}.json"));
    expected.sort();
    assert_eq!(w.names(), expected, "only the pruned items' own files went");
    assert_eq!(std::fs::read_to_string(w.folder().join("notes.txt")).unwrap(), "mine");

    // The history lists what is left; the damaged item is still named as damaged.
    let history = now.list(None, true).unwrap();
    let decided_left = history.iter().filter(|i| i.status != ItemStatus::Pending).count();
    // 18 of the 25, `young`, `last`, and the copy (an item file under another name, read by the list).
    assert_eq!(decided_left, 18 + 2 + 1);
    assert_eq!(history.iter().filter(|i| i.status == ItemStatus::Pending).count(), 3);
    let damaged_named: Vec<String> = now.damaged().unwrap().iter().map(ToString::to_string).collect();
    assert!(damaged_named.iter().any(|d| d.contains(&damaged)), "{damaged_named:?}");
    assert!(damaged_named.iter().any(|d| d.contains("other")), "{damaged_named:?}");
    // The pending items can still be decided.
    for id in &pending {
        assert_eq!(now.get(id).unwrap().status, ItemStatus::Pending);
    }
}

/// However old, a pending item and a damaged one outlive a decision's prune, and the decision
/// goes through (there are fewer than 20 decided items, so nothing is old enough to go anyway;
/// this is the damaged file that is not valid JSON at all, not one cut short).
#[test]
fn a_decision_succeeds_when_only_pending_and_damaged_items_are_old() {
    let w = World::new();
    let old_pending = w.stage(T0, "p");
    let old_damaged = w.stage(T0, "x");
    w.at(T0).discard(&old_damaged).unwrap();
    std::fs::write(w.item_path(&old_damaged), "{ not json").unwrap();
    let id = w.stage(T0 + 400 * DAY, "new");
    assert!(matches!(w.at(T0 + 400 * DAY).discard(&id).unwrap().status, ItemStatus::Discarded { .. }));
    assert!(exists(&w.item_path(&old_pending)) && exists(&w.item_path(&old_damaged)) && exists(&w.item_path(&id)));
}

/// The newest 20 are counted per project (per memory folder, the items the Inbox lists as one
/// project's history), not over the whole inbox: a busy project's decisions do not push out a
/// quiet project's history, whichever project's decision prunes.
#[test]
fn each_project_keeps_its_own_newest_twenty() {
    let w = World::new();
    let (quiet_project, quiet_memory) = (w.project.with_file_name("quiet"), w.memory.with_file_name("quiet-memory"));
    // The quiet project's 3 decisions, older than all of the busy project's.
    let quiet: Vec<String> = (0..3u64)
        .map(|i| {
            let id = w.stage_in(&quiet_project, &quiet_memory, T0 - DAY + i, &format!("q{i}"));
            w.at(T0 - DAY + i).discard(&id).unwrap();
            id
        })
        .collect();
    // The busy project's 25, a second apart.
    let busy: Vec<String> = (0..25u64)
        .map(|i| {
            let id = w.stage(T0 + i, &format!("b{i}"));
            w.at(T0 + i).discard(&id).unwrap();
            id
        })
        .collect();

    // 31 days on, all of them are past 30 days. A decision in the quiet project prunes the busy
    // project's 5 oldest (beyond its own newest 20) and none of the quiet project's 4, though
    // over the whole inbox those are 4 of the oldest.
    let now = T0 + 31 * DAY;
    let last = w.stage_in(&quiet_project, &quiet_memory, now, "q-last");
    let decided = w.at(now).discard(&last).unwrap();
    assert_eq!(decided.not_pruned, Vec::<NotPruned>::new());
    let (gone, stay) = busy.split_at(5);
    for id in gone {
        assert!(!exists(&w.item_path(id)), "{id} should have been pruned");
    }
    for id in stay.iter().chain(&quiet).chain([&last]) {
        assert!(exists(&w.item_path(id)), "{id} should have been kept");
    }
    assert_eq!(w.inbox.list(Some(&quiet_memory), true).unwrap().len(), 4);
    assert_eq!(w.inbox.list(Some(&w.memory), true).unwrap().len(), 20);
}

/// A decided item the prune cannot delete does not fail the decision, and is not passed over
/// in silence: the item the decision returns names it with the system's error (`mneme inbox
/// --json` prints that item), never in the item's file; it stays, and a later decision deletes
/// it once it can.
#[cfg(target_os = "linux")]
#[test]
fn a_decided_item_that_cannot_be_deleted_is_named_by_the_decision() {
    let w = World::new();
    let old: Vec<String> = (0..21u64)
        .map(|i| {
            let id = w.stage(T0 + i, &format!("d{i}"));
            w.at(T0 + i).discard(&id).unwrap();
            id
        })
        .collect();
    // The oldest two are past the newest 20 once one more is decided; the oldest cannot go.
    let Some(stuck) = Undeletable::new(&w.item_path(&old[0])) else {
        eprintln!("skipped: the immutable flag cannot be set here (it takes CAP_LINUX_IMMUTABLE, as root has, and a file system that has the flag)");
        return;
    };
    let now = T0 + 31 * DAY;
    let id = w.stage(now, "new");
    let kept = w.at(now).keep(&id).unwrap();
    assert!(matches!(kept.status, ItemStatus::Kept { .. }));
    assert!(exists(&w.memory.join("new.md")), "the decision was carried out");
    assert_eq!(kept.not_pruned.len(), 1, "{:?}", kept.not_pruned);
    assert_eq!(kept.not_pruned[0].path, w.item_path(&old[0]));
    assert!(kept.not_pruned[0].error.contains("not permitted"), "{:?}", kept.not_pruned);
    assert!(exists(&w.item_path(&old[0])) && !exists(&w.item_path(&old[1])));
    let json = serde_json::to_value(&kept).unwrap();
    assert_eq!(json["notPruned"][0]["path"], serde_json::json!(w.item_path(&old[0])));
    assert!(!std::fs::read_to_string(w.item_path(&id)).unwrap().contains("notPruned"));
    assert_eq!(w.inbox.get(&id).unwrap().not_pruned, Vec::<NotPruned>::new());

    drop(stuck);
    let next = w.stage(now, "next");
    let discarded = w.at(now).discard(&next).unwrap();
    assert_eq!(discarded.not_pruned, Vec::<NotPruned>::new());
    assert!(!exists(&w.item_path(&old[0])));
}

/// Keeps a file from being deleted, even by root, while it lives: Linux's immutable flag (what
/// `chattr +i` sets). `None` where it cannot be set: without CAP_LINUX_IMMUTABLE, or on a file
/// system without the flag.
#[cfg(target_os = "linux")]
struct Undeletable(std::fs::File);

#[cfg(target_os = "linux")]
impl Undeletable {
    fn new(path: &Path) -> Option<Undeletable> {
        use rustix::fs::{ioctl_getflags, ioctl_setflags, IFlags};
        let file = std::fs::File::open(path).ok()?;
        let flags = ioctl_getflags(&file).ok()?;
        ioctl_setflags(&file, flags | IFlags::IMMUTABLE).ok()?;
        Some(Undeletable(file))
    }
}

#[cfg(target_os = "linux")]
impl Drop for Undeletable {
    /// Cleared again, also when the test fails: else the temporary folder could not be deleted.
    fn drop(&mut self) {
        use rustix::fs::{ioctl_getflags, ioctl_setflags, IFlags};
        if let Ok(flags) = ioctl_getflags(&self.0) {
            let _ = ioctl_setflags(&self.0, flags - IFlags::IMMUTABLE);
        }
    }
}
