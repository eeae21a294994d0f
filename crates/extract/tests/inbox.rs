//! The review inbox on its own: items staged by hand, kept, edited, discarded and promoted.

mod common;

use common::{new_item, World};
use mneme_agent::FileChange;
use mneme_extract::inbox::{NewItem, PromoteTarget};
use mneme_extract::ItemStatus;
use std::path::Path;
use std::sync::Arc;

/// A token Claude Code's scanner (and so the team check) finds.
fn token() -> String {
    format!("ghp_{}", "aB3dE5fG7hJ9kL1mN3pQ5rS7tU9vW1xY3zA5")
}

fn mem(name: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {name} desc\nmetadata:\n  type: feedback\n---\n\n{body}\n")
}

impl World {
    /// Stages new files (relative to the memory folder) with one index line each.
    fn stage(&self, files: &[(&str, String)]) -> String {
        let root = &self.memory;
        let mut changes: Vec<FileChange> =
            files.iter().map(|(r, c)| FileChange { path: root.join(r), before: None, after: Some(c.clone()), reason: "t".into(), extra: Default::default() }).collect();
        let index: String = files.iter().filter(|(r, _)| !r.starts_with("team/")).map(|(r, _)| format!("- [{r}]({r}) — hook\n")).collect();
        if !index.is_empty() {
            changes.push(FileChange { path: root.join("MEMORY.md"), before: None, after: Some(index), reason: "t".into(), extra: Default::default() });
        }
        self.inbox.stage(new_item(&self.project, root, changes)).unwrap().id
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
    let err = w.inbox.edit_and_keep(&id, "team/deploy.md", with_secret.clone()).unwrap_err();
    assert_eq!(err.code(), "secrets-in-team-memory", "{err}");
    assert_eq!(read(&w.memory.join("team/deploy.md")), None, "nothing was written");
    let item = w.inbox.get(&id).unwrap();
    assert_eq!(item.status, ItemStatus::Pending);
    assert_eq!(item.changeset.changes[0].after, Some(with_secret), "the user's edit is kept in the item, not lost with the refusal");
    // The team index is checked too.
    let root = &w.memory;
    let changes = vec![FileChange {
        path: root.join("team/MEMORY.md"),
        before: None,
        after: Some(format!("- [Deploy](deploy.md) — token {}\n", token())),
        reason: "t".into(),
        extra: Default::default(),
    }];
    let new = NewItem { source: "x".into(), ..new_item(&w.project, root, changes) };
    let id = w.inbox.stage(new).unwrap().id;
    assert_eq!(w.inbox.keep(&id).unwrap_err().code(), "secrets-in-team-memory");
    assert_eq!(read(&w.memory.join("team/MEMORY.md")), None);
    // Without the secret it is kept.
    let id = w.stage(&[("team/deploy.md", mem("deploy", "Deploys go through the bot."))]);
    w.inbox.keep(&id).unwrap();
    assert!(read(&w.memory.join("team/deploy.md")).is_some());
}

#[test]
fn keep_discard_and_promote_racing_on_one_item_act_once() {
    for round in 0..40 {
        let w = World::new();
        let id = w.stage(&[("x.md", mem("x", "Always use tabs."))]);
        let (a, b, c) = (w.inbox.clone(), w.inbox.clone(), w.inbox.clone());
        let (i1, i2, i3) = (id.clone(), id.clone(), id.clone());
        let t1 = std::thread::spawn(move || a.keep(&i1).is_ok());
        let t2 = std::thread::spawn(move || b.discard(&i2).is_ok());
        let t3 = std::thread::spawn(move || c.promote(&i3, PromoteTarget::ClaudeLocal).is_ok());
        let ok = [t1.join().unwrap(), t2.join().unwrap(), t3.join().unwrap()];
        assert_eq!(ok.iter().filter(|o| **o).count(), 1, "round {round}: {ok:?}");
        let status = w.inbox.get(&id).unwrap().status;
        let kept = w.memory.join("x.md").exists();
        let promoted = w.project.join("CLAUDE.local.md").exists();
        match status {
            ItemStatus::Kept { .. } => assert!(kept && !promoted),
            ItemStatus::Discarded { .. } => assert!(!kept && !promoted),
            ItemStatus::Promoted { .. } => assert!(!kept && promoted),
            ItemStatus::Pending => panic!("still pending"),
        }
    }
}

#[test]
fn a_keep_or_promote_retried_after_its_write_does_not_fail_or_add_twice() {
    // The item's new state could not be saved after its files were written (a full disk):
    // it is still pending, and the retry finds the files as the item proposes them.
    let w = World::new();
    let id = w.stage(&[("x.md", mem("x", "Always use tabs."))]);
    let staged = std::fs::read(w.item_path(&id)).unwrap();
    w.inbox.keep(&id).unwrap();
    std::fs::write(w.item_path(&id), &staged).unwrap();
    let again = w.inbox.keep(&id).unwrap();
    assert!(matches!(again.status, ItemStatus::Kept { .. }));
    assert_eq!(read(&w.memory.join("MEMORY.md")).unwrap(), "- [x.md](x.md) — hook\n");

    let id = w.stage(&[("y.md", mem("y", "Never use sudo."))]);
    let staged = std::fs::read(w.item_path(&id)).unwrap();
    for _ in 0..2 {
        std::fs::write(w.item_path(&id), &staged).unwrap();
        w.inbox.promote(&id, PromoteTarget::ClaudeLocal).unwrap();
    }
    assert_eq!(read(&w.project.join("CLAUDE.local.md")).unwrap(), "- Never use sudo.\n");

    let id = w.stage(&[("z.md", mem("z", "Deploys need the VPN."))]);
    let staged = std::fs::read(w.item_path(&id)).unwrap();
    for _ in 0..2 {
        std::fs::write(w.item_path(&id), &staged).unwrap();
        let item = w.inbox.promote(&id, PromoteTarget::Team).unwrap();
        assert!(matches!(item.status, ItemStatus::Promoted { ref paths, .. } if paths.len() == 2), "{:?}", item.status);
    }
    let index = read(&w.memory.join("team/MEMORY.md")).unwrap();
    assert_eq!(index.matches("(z.md)").count(), 1, "{index}");
}

#[test]
fn two_memories_that_would_share_a_team_name_are_named_not_blamed_on_claude_code() {
    let w = World::new();
    let id = w.stage(&[("x.md", mem("x", "Use tabs.")), ("notes/x.md", mem("x2", "Use rustfmt."))]);
    let err = w.inbox.promote(&id, PromoteTarget::Team).unwrap_err();
    assert_eq!(err.code(), "name-clash", "{err}");
    let text = err.to_string();
    assert!(text.contains("x.md and notes/x.md") && text.contains("team/x.md"), "{text}");
    assert!(!w.memory.join("team").exists());
    assert_eq!(w.inbox.get(&id).unwrap().status, ItemStatus::Pending);
}

#[test]
fn a_damaged_item_is_named_with_what_to_do_not_blamed_on_permissions() {
    let w = World::new();
    let id = w.stage(&[("x.md", mem("x", "Always use tabs."))]);
    let good = w.stage(&[("y.md", mem("y", "Never use sudo."))]);
    let bytes = std::fs::read(w.item_path(&id)).unwrap();
    std::fs::write(w.item_path(&id), &bytes[..bytes.len() / 2]).unwrap();
    let err = w.inbox.keep(&id).unwrap_err();
    assert_eq!(err.code(), "damaged", "{err}");
    let text = err.to_string();
    assert!(text.contains("is damaged") && text.contains("Delete it") && text.contains(&w.item_path(&id).display().to_string()), "{text}");
    assert!(!text.contains("writable"), "{text}");
    let listed: Vec<String> = w.inbox.list(None, true).unwrap().into_iter().map(|i| i.id).collect();
    assert_eq!(listed, [good]);
    let damaged = w.inbox.damaged().unwrap();
    assert_eq!(damaged.len(), 1);
    assert_eq!(damaged[0].to_string(), text);
}

/// The files of the inbox folder that are not items.
fn not_items(w: &World) -> Vec<String> {
    w.names().into_iter().filter(|n| !n.ends_with(".json")).collect()
}

/// Deciding an item leaves nothing beside it: no lock file per item (the inbox folder itself is
/// what is locked), and the `<id>.lock` an older Mneme left for an item goes with its decision.
#[test]
fn no_lock_file_is_left_after_keep_discard_edit_or_promote() {
    let w = World::new();
    let kept = w.stage(&[("a.md", mem("a", "Always use tabs."))]);
    let discarded = w.stage(&[("b.md", mem("b", "Never use sudo."))]);
    let edited = w.stage(&[("c.md", mem("c", "Run the linter."))]);
    let edited_and_kept = w.stage(&[("d.md", mem("d", "Prefer rebase."))]);
    let promoted = w.stage(&[("e.md", mem("e", "Use the staging bucket."))]);
    // What an older Mneme left behind for an item it decided on, and for one it did not.
    std::fs::write(w.folder().join(format!("{kept}.lock")), "").unwrap();
    std::fs::write(w.folder().join(format!("{discarded}.lock")), "").unwrap();

    w.inbox.keep(&kept).unwrap();
    w.inbox.discard(&discarded).unwrap();
    w.inbox.edit(&edited, "c.md", mem("c", "Run the linter first.")).unwrap();
    w.inbox.edit_and_keep(&edited_and_kept, "d.md", mem("d", "Prefer rebase to merge.")).unwrap();
    w.inbox.promote(&promoted, PromoteTarget::ClaudeLocal).unwrap();
    // Refusals too: an unknown file, an item already decided, an id that names nothing.
    assert_eq!(w.inbox.edit(&edited, "zz.md", String::new()).unwrap_err().code(), "invalid-input");
    assert_eq!(w.inbox.keep(&kept).unwrap_err().code(), "not-pending");
    assert_eq!(w.inbox.keep("123-abc").unwrap_err().code(), "not-found");

    assert_eq!(not_items(&w), Vec::<String>::new());
    assert_eq!(read(&w.memory.join("a.md")), Some(mem("a", "Always use tabs.")));
    assert_eq!(read(&w.memory.join("d.md")), Some(mem("d", "Prefer rebase to merge.")));
    assert_eq!(w.inbox.get(&edited).unwrap().status, ItemStatus::Pending, "an edit alone keeps nothing");
}

/// Two keeps of one item at once (a double-click, the app and the CLI): exactly one applies it
/// and the other is told it was already kept; keeps of two other items meanwhile both go
/// through (one lock for the inbox serialises them, it does not refuse them).
#[test]
fn two_concurrent_keeps_of_one_item_exactly_one_wins() {
    for round in 0..40 {
        let w = World::new();
        let id = w.stage(&[("x.md", mem("x", "Always use tabs."))]);
        let others = [w.stage(&[("y.md", mem("y", "Never use sudo."))]), w.stage(&[("z.md", mem("z", "Prefer rebase."))])];
        let start = Arc::new(std::sync::Barrier::new(4));
        let spawn = |id: String| {
            let (inbox, start) = (w.inbox.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                inbox.keep(&id).map(|_| ()).map_err(|e| e.code())
            })
        };
        let same = [spawn(id.clone()), spawn(id.clone())];
        let apart = [spawn(others[0].clone()), spawn(others[1].clone())];
        let mut outcomes: Vec<Result<(), &str>> = same.into_iter().map(|t| t.join().unwrap()).collect();
        outcomes.sort();
        assert_eq!(outcomes, [Ok(()), Err("not-pending")], "round {round}");
        for t in apart {
            assert_eq!(t.join().unwrap(), Ok(()), "round {round}");
        }
        assert!(matches!(w.inbox.get(&id).unwrap().status, ItemStatus::Kept { .. }));
        assert_eq!(read(&w.memory.join("x.md")), Some(mem("x", "Always use tabs.")));
        let index = read(&w.memory.join("MEMORY.md")).unwrap();
        assert_eq!(index.matches("(x.md)").count(), 1, "round {round}: kept once: {index}");
        assert_eq!(not_items(&w), Vec::<String>::new());
    }
}

/// An edit-and-keep racing a discard: either the discard wins and nothing is edited or written,
/// or the edit and the keep happen together; never an edited item that is then discarded, which
/// two holds of the lock (edit, release, keep) allowed.
#[test]
fn edit_and_keep_is_one_decision_against_a_racing_discard() {
    for round in 0..40 {
        let w = World::new();
        let id = w.stage(&[("x.md", mem("x", "Always use tabs."))]);
        let start = Arc::new(std::sync::Barrier::new(2));
        let (a, b, s1, s2, i1, i2) = (w.inbox.clone(), w.inbox.clone(), start.clone(), start, id.clone(), id.clone());
        let edit = std::thread::spawn(move || {
            s1.wait();
            a.edit_and_keep(&i1, "x.md", mem("x", "Always use spaces.")).is_ok()
        });
        let discard = std::thread::spawn(move || {
            s2.wait();
            b.discard(&i2).is_ok()
        });
        let (edited, discarded) = (edit.join().unwrap(), discard.join().unwrap());
        assert!(edited != discarded, "round {round}: exactly one decides");
        let item = w.inbox.get(&id).unwrap();
        let proposed = item.changeset.changes.iter().find(|c| c.path.ends_with("x.md")).unwrap().after.clone().unwrap();
        if edited {
            assert!(matches!(item.status, ItemStatus::Kept { .. }));
            assert_eq!(read(&w.memory.join("x.md")), Some(mem("x", "Always use spaces.")));
        } else {
            assert!(matches!(item.status, ItemStatus::Discarded { .. }));
            assert_eq!(proposed, mem("x", "Always use tabs."), "round {round}: the discarded item was not edited");
            assert_eq!(read(&w.memory.join("x.md")), None);
        }
    }
}
