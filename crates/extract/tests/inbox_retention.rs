//! The inbox's retention rule (`mneme_extract::inbox::retention`): deciding an item prunes
//! decided items older than 30 days beyond the newest 20, and nothing else.

mod common;

use common::{new_item, World, T0};
use mneme_agent::FileChange;
use mneme_extract::inbox::retention;
use mneme_extract::ItemStatus;
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
        let change = FileChange { path: memory.join(format!("{name}.md")), before: None, after: Some(text), reason: "t".into() };
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

