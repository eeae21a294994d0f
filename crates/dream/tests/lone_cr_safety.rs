//! The safety net reads a MEMORY.md whose lines end in a lone CR (a classic Mac editor's line
//! end) line by line, as the dream's release reads it: from Claude Code 2.1.284 each lone CR
//! ends an index line for the model (`Profile::memory_index_crlf_to_lf`). Split on LF alone, the
//! whole index was one line: a dream that only added a line reported the whole index as moved,
//! a dropped line was reported as the whole index, and an index line left pointing at a memory
//! the dream removes was not seen past the first entry.

mod common;

use common::*;
use mneme_dream::DreamStatus;
use mneme_stub_model::Turn;
use serde_json::json;

const TABS: &str = "- [Tabs](tabs.md) — tabs";
const JANE: &str = "- [Jane](jane.md) — CLOSED — DO NOT CONTACT";
const SHIP: &str = "- [Ship](ship.md) — ship on Tuesdays";

/// A lone-CR index of three memories; the Jane memory's file holds only what its line says.
fn folder() -> World {
    let w = World::new();
    w.write("MEMORY.md", &format!("# Memory\r\r{TABS}\r{JANE}\r{SHIP}\r"));
    w.write("tabs.md", &topic("Tabs", "tabs", "feedback", "Use tabs."));
    w.write("jane.md", &topic("Jane", "CLOSED — DO NOT CONTACT", "project", "Closed; do not contact."));
    w.write("ship.md", &topic("Ship", "ship on Tuesdays", "project", "Releases go out on Tuesdays."));
    w
}

fn index(w: &World) -> String {
    w.mem.join("MEMORY.md").display().to_string()
}

fn edit_index(w: &World, old: &str, new: &str) -> Vec<Turn> {
    vec![
        Turn::tool_use("Read", json!({"file_path": index(w)})),
        Turn::tool_use("Edit", json!({"file_path": index(w), "old_string": old, "new_string": new})),
    ]
}

/// The offline dream adds a line for a memory nobody indexed: no line left the index, so the
/// report lists none and the dream is applied at once.
#[test]
fn an_offline_dream_that_only_adds_a_line_to_a_lone_cr_index_is_applied_and_moves_nothing() {
    let w = folder();
    w.write("deploys.md", &topic("Deploys", "freeze on Fridays", "project", "No deploys on Fridays."));
    let rec = w.offline(true).unwrap();
    assert_eq!(rec.status, DreamStatus::Applied, "{:?} {:#?}", rec.notes, rec.moved);
    assert!(rec.moved.is_empty(), "no line was removed: {:#?}", rec.moved);
    assert_eq!(w.read("MEMORY.md"), format!("# Memory\r\r{TABS}\r{JANE}\r{SHIP}\r- [Deploys](deploys.md) — freeze on Fridays\r"));
}

/// A repeated line the offline dream takes out is reported as that line, found in the line it
/// repeats, not as the whole index.
#[test]
fn an_offline_dream_that_drops_a_repeated_lone_cr_line_reports_that_line() {
    let w = folder();
    let again = "- [Tabs again](tabs.md) — tabs";
    w.write("MEMORY.md", &format!("# Memory\r\r{TABS}\r{JANE}\r{again}\r{SHIP}\r"));
    let rec = w.offline(true).unwrap();
    assert_eq!(rec.status, DreamStatus::Applied, "{:?} {:#?}", rec.notes, rec.moved);
    assert_eq!(rec.moved.iter().map(|m| (m.from.as_str(), m.text.as_str())).collect::<Vec<_>>(), [("MEMORY.md", again)], "{:#?}", rec.moved);
    assert!(lost(&rec).is_empty());
    assert_eq!(w.read("MEMORY.md"), format!("# Memory\r\r{TABS}\r{JANE}\r{SHIP}\r"));
}

/// A model dream that writes a new memory and adds its line: applied at once, nothing moved.
#[tokio::test]
async fn a_model_dream_that_adds_a_memory_to_a_lone_cr_index_is_applied() {
    let w = folder();
    let write = Turn::tool_use("Write", json!({"file_path": w.mem.join("deploys.md").display().to_string(), "content": topic("Deploys", "freeze on Fridays", "project", "No deploys on Fridays.")}));
    let added = "- [Deploys](deploys.md) — freeze on Fridays\r";
    let mut turns = vec![write];
    turns.extend(edit_index(&w, &format!("{SHIP}\r"), &format!("{SHIP}\r{added}")));
    let rec = model_dream(&w, turns).await;
    assert_eq!(rec.status, DreamStatus::Applied, "{:?} {:#?}", rec.notes, rec.moved);
    assert!(rec.moved.is_empty(), "{:#?}", rec.moved);
    assert!(w.read("MEMORY.md").ends_with(&format!("{SHIP}\r{added}")));
}

/// A model dream that drops the only line saying who not to contact (the memory's file was
/// deleted by hand long ago): held, and the report names that line alone.
#[tokio::test]
async fn a_model_dream_that_drops_a_memorys_only_text_from_a_lone_cr_index_is_held() {
    let w = folder();
    std::fs::remove_file(w.mem.join("jane.md")).unwrap();
    let before = w.snapshot();
    let rec = model_dream(&w, edit_index(&w, &format!("{JANE}\r"), "")).await;
    assert_eq!(rec.status, DreamStatus::Pending, "{:?} {:#?}", rec.notes, rec.moved);
    assert_eq!(w.snapshot(), before, "nothing written");
    assert_eq!(lost(&rec), [("MEMORY.md", JANE)], "{:#?}", rec.moved);
    assert_eq!(rec.moved.len(), 1, "{:#?}", rec.moved);
    assert!(rec.notes[0].starts_with("Held for review:"), "{:?}", rec.notes);
}

/// A dream that moves Jane's text into another memory and deletes hers, but keeps her line in
/// the index it rewrites, would leave that line pointing at nothing: held, and the note names
/// the line (a lone-CR line past the first entry was not seen).
#[tokio::test]
async fn a_lone_cr_index_line_left_pointing_at_a_removed_memory_holds_the_dream() {
    let w = folder();
    let contacts = topic("Contacts", "who not to contact", "project", "Jane: CLOSED — DO NOT CONTACT. Closed; do not contact.");
    let mut turns = vec![Turn::tool_use("Write", json!({"file_path": w.mem.join("contacts.md").display().to_string(), "content": contacts}))];
    turns.extend(edit_index(&w, "# Memory\r", "# Memory index\r"));
    turns.push(Turn::tool_use("Bash", json!({"command": format!("rm {}", w.mem.join("jane.md").display())})));
    let rec = model_dream(&w, turns).await;
    assert_eq!(rec.status, DreamStatus::Pending, "{:?} {:#?}", rec.notes, rec.moved);
    assert!(lost(&rec).is_empty(), "{:#?}", rec.moved);
    let note = rec.notes.iter().find(|n| n.contains("would still list")).unwrap_or_else(|| panic!("{:?}", rec.notes));
    assert!(note.contains(&format!("MEMORY.md `{JANE}`")) && !note.contains("tabs.md") && !note.contains("ship.md"), "{note}");
    // The heading line it reworded is reported on its own.
    assert_eq!(rec.moved.iter().filter(|m| m.from == "MEMORY.md").map(|m| m.text.as_str()).collect::<Vec<_>>(), ["# Memory"], "{:#?}", rec.moved);
}

/// A dream that moves the shipping memory's text into another memory and removes its file,
/// leaving MEMORY.md to the removal: the index edit the dream records, the one it applies and
/// the one its safety net weighs are all the user's release's reading of the index (from a
/// `claude` on PATH), as the store's own delete for that release makes it. Up to 2.1.283 the
/// lone-CR index is one line linking the first memory only, so nothing is taken out of it; a
/// CRLF index is read alike by both. The removal used to be written out and applied as the
/// newest release reads the index, whatever the user ran.
#[tokio::test]
async fn a_removal_edits_the_index_as_the_installed_release_reads_it() {
    for version in ["2.1.283", "2.1.284"] {
        for crlf in [false, true] {
            let w = folder().installed(version);
            if crlf {
                w.write("MEMORY.md", &format!("# Memory\r\n\r\n{TABS}\r\n{JANE}\r\n{SHIP}\r\n"));
            }
            let index = w.read("MEMORY.md");
            // What the store's delete does with the index, for this release.
            let release = mneme_core::versions::behaviours(version.parse().unwrap());
            let twin = w.home.root.join("twin");
            std::fs::create_dir_all(&twin).unwrap();
            std::fs::write(twin.join("MEMORY.md"), &index).unwrap();
            std::fs::write(twin.join("ship.md"), "x").unwrap();
            mneme_store::memdir::Memdir::new(&twin, w.home.root.join("twin-trash"), w.clock.clone()).for_release(&release).delete("ship.md").unwrap();
            let want = std::fs::read_to_string(twin.join("MEMORY.md")).unwrap();

            let releases = topic("Releases", "ship on Tuesdays", "project", "ship on Tuesdays. Releases go out on Tuesdays.");
            let turns = vec![
                Turn::tool_use("Write", json!({"file_path": w.mem.join("releases.md").display().to_string(), "content": releases})),
                Turn::tool_use("Bash", json!({"command": format!("rm {}", w.mem.join("ship.md").display())})),
            ];
            let rec = model_dream(&w, turns).await;
            let case = format!("{version}, crlf: {crlf}");
            assert_eq!(rec.status, DreamStatus::Applied, "{case}: {:?} {:#?}", rec.notes, rec.moved);
            assert!(!w.mem.join("ship.md").exists(), "{case}");
            assert_eq!(w.read("MEMORY.md"), want, "{case}");
            let recorded = rec.changeset.changes.iter().find(|c| c.path == w.mem.join("MEMORY.md")).and_then(|c| c.after.clone());
            assert_eq!(recorded.unwrap_or(index), want, "{case}: the record holds the edit the apply made");
        }
    }
}
