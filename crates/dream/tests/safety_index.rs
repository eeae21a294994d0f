//! The safety net weighs the folder as the apply leaves it, index and all. A model dream that
//! deletes a memory and leaves MEMORY.md alone loses that memory's index line too (the apply
//! takes it out with the file); while the net counted the line as still there, the memory's
//! name and description were "found" in it, and a memory whose text was nowhere else was
//! deleted at once, in automatic mode, with nothing said.

mod common;

use common::*;
use mneme_dream::DreamStatus;
use mneme_stub_model::Turn;
use serde_json::json;

const JANE: &str = "- [Jane](jane.md) — CLOSED — DO NOT CONTACT";

/// A folder whose Jane memory says nothing its index line does not also say, so the line was
/// enough to vouch for it.
fn folder() -> World {
    let w = World::new();
    w.write("MEMORY.md", &format!("# Memory\n\n- [Tabs](tabs.md) — tabs\n{JANE}\n"));
    w.write("tabs.md", &topic("Tabs", "tabs", "feedback", "Use tabs."));
    w.write("jane.md", &topic("Jane", "CLOSED — DO NOT CONTACT", "project", "Closed; do not contact."));
    w
}

fn rm(w: &World, rels: &[&str]) -> Turn {
    let paths: Vec<String> = rels.iter().map(|r| w.mem.join(r).display().to_string()).collect();
    Turn::tool_use("Bash", json!({"command": format!("rm {}", paths.join(" "))}))
}

/// Deleting the Jane memory and leaving MEMORY.md alone: the apply would take the Jane line
/// too, so the text is nowhere afterwards. Held for review although the mode is automatic
/// and `--yes` was given; the index line is listed as lost along with the memory's own lines.
#[tokio::test]
async fn a_dream_that_deletes_a_memory_and_leaves_the_index_alone_is_held_when_its_text_goes_with_the_line() {
    let w = folder();
    let before = w.snapshot();
    let rec = model_dream(&w, vec![rm(&w, &["jane.md"])]).await;
    assert_eq!(rec.changeset.changes.len(), 1, "the premise: the removal only, no index written: {:#?}", rec.changeset.changes);
    assert_eq!(rec.status, DreamStatus::Pending, "held: {:#?}", rec.moved);
    assert_eq!(w.snapshot(), before, "nothing written");
    let lost = lost(&rec);
    assert!(lost.contains(&("MEMORY.md", JANE)), "the index line the apply takes is weighed: {lost:?}");
    assert!(lost.contains(&("jane.md", "Closed; do not contact.")), "{lost:?}");
    assert!(rec.notes[0].starts_with("Held for review:"), "{:?}", rec.notes);

    // Approved, it is what the report said: both gone, and undo gives both back.
    let rec = w.dreams.approve(&w.mem, &rec.id).unwrap();
    assert!(!w.mem.join("jane.md").exists());
    assert!(!w.read("MEMORY.md").contains("Jane"));
    w.dreams.undo(&w.mem, Some(&rec.id), false).unwrap();
    assert_eq!(w.snapshot(), before);
}

/// The same deletion after the dream wrote Jane's text into another memory loses nothing: it
/// is applied at once, and the report says where the index line's text went.
#[tokio::test]
async fn a_memory_deleted_after_its_text_moved_elsewhere_is_applied_at_once() {
    let w = folder();
    let contacts = topic("Contacts", "who not to contact", "project", "Jane: CLOSED — DO NOT CONTACT. Closed; do not contact.");
    let write = Turn::tool_use("Write", json!({"file_path": w.mem.join("contacts.md").display().to_string(), "content": contacts}));
    let rec = model_dream(&w, vec![write, rm(&w, &["jane.md"])]).await;
    assert_eq!(rec.status, DreamStatus::Applied, "{:#?}", rec.moved);
    let line = rec.moved.iter().find(|m| m.from == "MEMORY.md" && m.text == JANE).expect("the index line is in the report");
    assert_eq!(line.found_in, ["contacts.md"]);
    assert!(!w.read("MEMORY.md").contains("jane.md"));
}

/// A dream that rewrites MEMORY.md but keeps the line of a memory it deletes would leave the
/// line pointing at nothing (the apply takes no line out of an index the dream writes). No
/// text is lost (the line keeps it), but Claude Code would be sent to a missing file: held,
/// with a note naming the line.
#[tokio::test]
async fn a_dream_that_deletes_a_memory_its_rewritten_index_still_lists_is_held_and_says_which_line() {
    let w = folder();
    let before = w.snapshot();
    let index = w.mem.join("MEMORY.md").display().to_string();
    let edit = Turn::tool_use("Edit", json!({"file_path": index, "old_string": "# Memory\n", "new_string": "# Memory index\n"}));
    let read = Turn::tool_use("Read", json!({"file_path": index}));
    let rec = model_dream(&w, vec![read, edit, rm(&w, &["jane.md"])]).await;
    assert_eq!(rec.status, DreamStatus::Pending, "{:#?} {:?}", rec.moved, rec.notes);
    assert_eq!(w.snapshot(), before, "nothing written");
    assert!(lost(&rec).is_empty(), "nothing is lost: {:#?}", rec.moved);
    let note = rec.notes.iter().find(|n| n.contains("would still list")).unwrap_or_else(|| panic!("{:?}", rec.notes));
    assert!(note.starts_with("Held for review:") && note.contains(&format!("MEMORY.md `{JANE}`")), "{note}");

    // A line the dream adds for a memory it never writes is held the same way; a line that
    // pointed nowhere before the dream is not the dream's doing.
    let w = folder();
    w.write("MEMORY.md", &format!("# Memory\n\n- [Tabs](tabs.md) — tabs\n{JANE}\n- [Gone](gone.md) — deleted by hand long ago\n"));
    let index = w.mem.join("MEMORY.md").display().to_string();
    let added = "- [Deploys](deploys.md) — freeze on Fridays\n";
    let edit = Turn::tool_use("Edit", json!({"file_path": index, "old_string": "# Memory\n", "new_string": format!("# Memory\n{added}")}));
    let rec = model_dream(&w, vec![Turn::tool_use("Read", json!({"file_path": index})), edit]).await;
    assert_eq!(rec.status, DreamStatus::Pending, "{:?}", rec.notes);
    let note = rec.notes.iter().find(|n| n.contains("would still list")).unwrap_or_else(|| panic!("{:?}", rec.notes));
    assert!(note.contains("deploys.md") && !note.contains("gone.md") && !note.contains("jane.md"), "{note}");
}

/// Taking a memory's line out of the index and keeping the memory loses nothing: its title
/// and hook are its `name:` and `description:`, and Claude Code's recall still finds the file
/// by them. Applied at once; the report says where the line's text is.
#[tokio::test]
async fn a_dream_that_drops_an_index_line_but_keeps_the_memory_is_applied() {
    let w = folder();
    let index = w.mem.join("MEMORY.md").display().to_string();
    let edit = Turn::tool_use("Edit", json!({"file_path": index, "old_string": format!("{JANE}\n"), "new_string": ""}));
    let rec = model_dream(&w, vec![Turn::tool_use("Read", json!({"file_path": index})), edit]).await;
    assert_eq!(rec.status, DreamStatus::Applied, "{:#?} {:?}", rec.moved, rec.notes);
    let line = rec.moved.iter().find(|m| m.text == JANE).unwrap();
    assert_eq!(line.found_in, ["jane.md"]);
    assert!(w.mem.join("jane.md").exists() && !w.read("MEMORY.md").contains("Jane"));
}

/// A dream that deletes many memories at once and leaves the index alone: every one of their
/// index lines is weighed, each lost one listed, and nothing is written until a person says.
/// The same deletions after their text was gathered into one memory are applied at once.
#[tokio::test]
async fn a_dream_that_deletes_many_memories_is_weighed_line_by_line() {
    const N: usize = 40;
    let setup = || {
        let w = World::new();
        let mut index = String::from("# Memory\n\n");
        for i in 0..N {
            index.push_str(&format!("- [Fact {i}](fact_{i}.md) — the build needs flag f{i}\n"));
            w.write(&format!("fact_{i}.md"), &topic(&format!("Fact {i}"), &format!("the build needs flag f{i}"), "project", &format!("Flag f{i}.")));
        }
        w.write("MEMORY.md", &index);
        w
    };
    let files: Vec<String> = (0..N).map(|i| format!("fact_{i}.md")).collect();
    let rels: Vec<&str> = files.iter().map(String::as_str).collect();

    let w = setup();
    let before = w.snapshot();
    let rec = model_dream(&w, vec![rm(&w, &rels)]).await;
    assert_eq!(rec.status, DreamStatus::Pending);
    assert_eq!(w.snapshot(), before, "nothing written");
    let from_index = lost(&rec).iter().filter(|(from, _)| *from == "MEMORY.md").count();
    assert_eq!(from_index, N, "every index line the apply would take: {:#?}", rec.moved);
    assert_eq!(rec.summary_view().removed, N);

    let w = setup();
    let all: String = (0..N).map(|i| format!("- Fact {i}: the build needs flag f{i}. Flag f{i}.\n")).collect();
    let write = Turn::tool_use("Write", json!({"file_path": w.mem.join("build_flags.md").display().to_string(), "content": topic("Build flags", "flags the build needs", "project", &all)}));
    let rec = model_dream(&w, vec![write, rm(&w, &rels)]).await;
    assert_eq!(rec.status, DreamStatus::Applied, "{:?}", lost(&rec));
    assert_eq!(w.read("MEMORY.md"), "# Memory\n\n", "the lines went with their memories");
}

/// When the index a removal would take lines out of cannot be read (here a folder stands
/// where MEMORY.md should be), what the apply would drop cannot be weighed: the dream is held,
/// and its note says why.
#[tokio::test]
async fn a_removal_whose_index_cannot_be_read_is_held_and_says_why() {
    let w = World::new();
    w.write("tabs.md", &topic("Tabs", "tabs", "feedback", "Use tabs."));
    w.write("tabs_copy.md", &topic("Tabs", "tabs", "feedback", "Use tabs."));
    std::fs::create_dir(w.mem.join("MEMORY.md")).unwrap();
    let rec = model_dream(&w, vec![rm(&w, &["tabs_copy.md"])]).await;
    assert_eq!(rec.status, DreamStatus::Pending, "{:?}", rec.notes);
    assert!(rec.notes.iter().any(|n| n.starts_with("Held for review: the index lines its removals take with them could not be read (")), "{:?}", rec.notes);
    assert!(w.mem.join("tabs_copy.md").exists(), "nothing written");
}
