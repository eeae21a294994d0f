//! Undo gives the memory folder back exactly as it was before the dream: every file's bytes,
//! the same names, nothing more, whatever the dream created, edited or deleted.

mod common;

use common::*;
use mneme_dream::DreamStatus;
use proptest::prelude::*;

/// A dream that writes back a memory whose index line was already there leaves the index as it
/// was; undoing it removed the file and, with it, the index line the user had before the dream.
#[test]
fn undoing_a_memory_written_back_from_its_index_line_keeps_the_line() {
    let w = World::new();
    w.write("a.md", &topic("A", "a", "user", "A."));
    w.write("MEMORY.md", "- [A](a.md) — a\n- [Lost](lost.md) — y\n");
    let before = w.snapshot();
    let rec = w.offline(true).unwrap();
    assert_eq!(rec.status, DreamStatus::Applied);
    assert!(w.mem.join("lost.md").exists(), "the premise: the dream wrote the missing memory back");
    assert!(rec.changeset.changes.iter().all(|c| !c.path.ends_with("MEMORY.md")), "the premise: the index was not rewritten: {:#?}", rec.changeset.changes);
    w.dreams.undo(&w.mem, Some(&rec.id), false).unwrap();
    assert_eq!(w.snapshot(), before, "the folder as it was before the dream");
}

/// One dream that creates (a memory written back from its index line), edits (a relative date
/// made absolute, the surviving half of a merge, the index) and deletes (the merged-away half),
/// with a memory written back whose line the index already had: undone, the folder is the one
/// from before, file for file and byte for byte.
#[test]
fn undo_after_a_dream_that_creates_edits_and_deletes_gives_the_folder_back_byte_for_byte() {
    let w = World::new();
    w.write("tabs_old.md", &topic("Prefers tabs", "Use tabs for indentation", "feedback", "Always indent with tabs.\n**Why:** team style."));
    w.write("tabs_new.md", &topic("Tabs preference", "Use tabs for indentation in code", "feedback", "Always indent with tabs, never spaces.\n**Why:** team style."));
    filetime::set_file_mtime(w.mem.join("tabs_old.md"), filetime::FileTime::from_unix_time(NOW as i64 - 90_000, 0)).unwrap();
    w.write("deploy.md", &topic("Deploy", "deploy freeze", "project", "Froze deploys yesterday."));
    w.write("notes.txt", "not a memory\n");
    w.write("MEMORY.md", "- [Old](tabs_old.md) — tabs\n- [New](tabs_new.md) — tabs\n- [Lost](lost.md) — y\n\nA trailing note.\n");
    let before = w.snapshot();
    let rec = w.offline(true).unwrap();
    assert_eq!(rec.status, DreamStatus::Applied);
    let (added, changed, removed) = rec.counts();
    assert!(added >= 1 && changed >= 2 && removed >= 1, "the premise: it creates, edits and deletes: {:#?}", rec.changeset.changes);
    assert!(rec.changeset.changes.iter().any(|c| c.path.ends_with("MEMORY.md") && c.before.is_some() && c.after.is_some()), "the premise: the index is edited");
    assert_ne!(w.snapshot(), before);
    w.dreams.undo(&w.mem, Some(&rec.id), false).unwrap();
    assert_eq!(w.snapshot(), before, "the folder as it was before the dream");
}

/// A small folder of a few memories, some duplicated, some with relative dates, index lines with
/// and without files, maybe a daily log and maybe no index at all.
#[derive(Debug, Clone)]
struct Folder {
    memories: Vec<(u8, bool, bool, bool)>,
    dangling: Vec<u8>,
    index: bool,
    log: bool,
}

fn folder() -> impl Strategy<Value = Folder> {
    (proptest::collection::vec((0u8..6, any::<bool>(), any::<bool>(), any::<bool>()), 0..6), proptest::collection::vec(0u8..4, 0..3), any::<bool>(), any::<bool>())
        .prop_map(|(memories, dangling, index, log)| Folder { memories, dangling, index, log })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Whatever the offline dream makes of a generated folder, undoing it gives the folder back.
    #[test]
    fn undo_gives_any_generated_folder_back(f in folder()) {
        let w = World::new();
        let mut index = String::new();
        for (i, (subject, indexed, dated, old)) in f.memories.iter().enumerate() {
            // The same subject twice makes a duplicate the dream merges.
            let body = format!("Subject {subject} fact, always the same words for it.{}", if *dated { " Decided yesterday." } else { "" });
            let rel = format!("m{i}.md");
            w.write(&rel, &topic(&format!("Subject {subject}"), &format!("about subject {subject}"), "project", &body));
            if *old {
                filetime::set_file_mtime(w.mem.join(&rel), filetime::FileTime::from_unix_time(NOW as i64 - 200_000, 0)).unwrap();
            }
            if *indexed {
                index.push_str(&format!("- [Subject {subject}]({rel}) — about subject {subject}\n"));
            }
        }
        for d in &f.dangling {
            // Some point into a folder that does not exist: the dream makes it to write them back.
            let rel = if d % 2 == 0 { format!("gone{d}.md") } else { format!("lost/gone{d}.md") };
            index.push_str(&format!("- [Gone {d}]({rel}) — remembered only here\n"));
        }
        if f.index {
            w.write("MEMORY.md", &index);
        }
        if f.log {
            w.write("logs/2026/05/2026-05-05.md", "# 2026-05-05\n\n- 09:15 Moved the build to the new runner\n");
        }
        let (before, names) = (w.snapshot(), entries(&w.mem));
        let rec = w.offline(true).unwrap();
        prop_assert!(matches!(rec.status, DreamStatus::Applied | DreamStatus::Pending), "{:?}", rec.status);
        if rec.status == DreamStatus::Applied && !rec.changeset.is_empty() {
            w.dreams.undo(&w.mem, Some(&rec.id), false).unwrap();
        }
        prop_assert_eq!(w.snapshot(), before);
        prop_assert_eq!(entries(&w.mem), names);
    }
}

/// Every entry under `dir`, folders too (`tree` lists files only): a folder the dream made for
/// a memory it wrote back must not outlive the undo.
fn entries(dir: &std::path::Path) -> Vec<String> {
    fn walk(root: &std::path::Path, dir: &std::path::Path, out: &mut Vec<String>) {
        for e in std::fs::read_dir(dir).unwrap().flatten() {
            let p = e.path();
            out.push(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            if p.is_dir() {
                walk(root, &p, out);
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.retain(|e| e != mneme_dream::LOCK_FILE);
    out.sort();
    out
}

/// A folder whose index has a line for `notes/deeper/deep.md`, which does not exist: the
/// offline dream writes the memory back there.
fn deep_line() -> World {
    let w = World::new();
    w.write("a.md", &topic("A", "a", "user", "A."));
    w.write("MEMORY.md", "- [A](a.md) — a\n- [Deep](notes/deeper/deep.md) — kept only here\n");
    w
}

/// An offline dream over `w` (which writes deep.md back) undone: the files are as they were.
/// Answers the folder's entries, folders too, before the dream and after the undo.
fn dreamt_and_undone(w: &World) -> (Vec<String>, Vec<String>) {
    let (before, names) = (w.snapshot(), entries(&w.mem));
    let rec = w.offline(true).unwrap();
    assert!(w.mem.join("notes/deeper/deep.md").exists(), "the premise: written back in a new folder: {:#?}", rec.changeset.changes);
    w.dreams.undo(&w.mem, Some(&rec.id), false).unwrap();
    assert_eq!(w.snapshot(), before);
    (names, entries(&w.mem))
}

/// A memory written back from an index line that points into a folder that does not exist
/// makes that folder; undone, the folder goes too.
#[test]
fn undo_removes_the_folders_the_dream_made() {
    let (before, after) = dreamt_and_undone(&deep_line());
    assert_eq!(after, before, "no folder left behind");
}

/// Undo removes only the folders the dream made: `notes/`, there and empty before the dream,
/// stays (the dream made only `notes/deeper/`), and a folder the user made since inside one
/// the dream made keeps that one too.
#[test]
fn undo_leaves_folders_that_were_there_before_the_dream_or_made_since() {
    let w = deep_line();
    std::fs::create_dir(w.mem.join("notes")).unwrap();
    let (before, after) = dreamt_and_undone(&w);
    assert_eq!(after, before, "notes/ was there before the dream, empty: it stays");

    let w = deep_line();
    let rec = w.offline(true).unwrap();
    std::fs::create_dir(w.mem.join("notes/deeper/drafts")).unwrap();
    w.dreams.undo(&w.mem, Some(&rec.id), false).unwrap();
    assert!(w.mem.join("notes/deeper/drafts").is_dir(), "the user's folder, and the dream's folders holding it, stay");
    assert!(!w.mem.join("notes/deeper/deep.md").exists());
}
