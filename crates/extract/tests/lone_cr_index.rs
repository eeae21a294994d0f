//! A MEMORY.md whose lines end in a lone CR (a classic Mac editor's line end) is one line per
//! entry from Claude Code 2.1.284 (`Profile::memory_index_crlf_to_lf`), and the store reads and
//! edits it so. Extraction and the inbox edit the index too: they find each memory's own line
//! there, add theirs ending as the others do, and leave every other line as it was.

mod common;

use common::{new_item, World};
use mneme_agent::FileChange;
use mneme_core::FixedClock;
use mneme_extract::offline::{extract, Decision};
use mneme_extract::transcript::{parse_entry, Conversation, Entry};
use mneme_extract::PromoteTarget;
use mneme_store::memdir::Memdir;
use std::path::Path;
use std::sync::Arc;

fn user(text: &str) -> Conversation {
    let raw = serde_json::json!({"type": "user", "uuid": "u1", "timestamp": "2026-03-02T10:00:00.000Z", "message": {"role": "user", "content": text}});
    match parse_entry(raw) {
        Entry::Conversation(c) => *c,
        other => panic!("{other:?}"),
    }
}

const TESTS: &str = "- [Integration tests](feedback_integration_tests.md) — Integration tests must hit a real database, not mocks";
const GO: &str = "- [Go](user_go.md) — Writes Go";
const RUST: &str = "- [Rust](user_rust.md) — Rust";
const DEPLOYS: &str = "- [Deploys happen on Fridays](project_deploys_happen_on_fridays.md) — Deploys happen on Fridays";

/// A memory folder of three memories, listed in that order by `index`.
fn folder(mem: &Path, index: &str) -> Memdir {
    std::fs::create_dir_all(mem).unwrap();
    let tests = "---\nname: integration-tests\ndescription: Integration tests must hit a real database, not mocks\nmetadata:\n  type: feedback\n---\n\nIntegration tests must hit a real database, not mocks.\n";
    std::fs::write(mem.join("feedback_integration_tests.md"), tests).unwrap();
    std::fs::write(mem.join("user_go.md"), "---\nname: go\ndescription: Writes Go\nmetadata:\n  type: user\n---\n\nWrites Go.\n").unwrap();
    std::fs::write(mem.join("user_rust.md"), "---\nname: rust\ndescription: Rust\nmetadata:\n  type: user\n---\n\nRust.\n").unwrap();
    std::fs::write(mem.join("MEMORY.md"), index).unwrap();
    Memdir::new(mem, mem.parent().unwrap().join("trash"), Arc::new(FixedClock::at_unix_secs(1_772_445_600)))
}

/// The index text one offline extraction of `said` proposes for `index`, and the folder's
/// MEMORY.md once that changeset is applied.
fn extracted(index: &str, said: &str) -> (String, String) {
    let dir = tempfile::tempdir().unwrap();
    let mem = dir.path().join("memory");
    let memdir = folder(&mem, index);
    let out = extract(&[user(said)], &memdir, &[]).unwrap();
    assert!(out.decisions.iter().all(|d| matches!(d, Decision::Saved { .. } | Decision::Forgot { .. })), "{:?}", out.decisions);
    let proposed = out.changeset.changes.iter().find(|c| c.path == mem.join("MEMORY.md")).and_then(|c| c.after.clone()).expect("an index change");
    mneme_agent::apply_changeset(&out.changeset, &dir.path().join("trash"), Arc::new(FixedClock::at_unix_secs(1)), memdir.release()).unwrap();
    (proposed, std::fs::read_to_string(mem.join("MEMORY.md")).unwrap())
}

/// Forgetting the first memory of a lone-CR index took the one "line" that held every entry;
/// forgetting another found no line for it; a new memory's line was added after an LF.
#[test]
fn extraction_edits_a_lone_cr_index_line_by_line() {
    let index = format!("{TESTS}\r{GO}\r{RUST}\r");
    for (said, want) in [
        ("Forget that integration tests hit a real database.", format!("{GO}\r{RUST}\r")),
        ("Forget that I write Go.", format!("{TESTS}\r{RUST}\r")),
        ("Remember that deploys happen on Fridays!", format!("{TESTS}\r{GO}\r{RUST}\r{DEPLOYS}\r")),
        ("Remember that deploys happen on Fridays! Forget that I write Go.", format!("{TESTS}\r{RUST}\r{DEPLOYS}\r")),
    ] {
        let (proposed, applied) = extracted(&index, said);
        assert_eq!(proposed, want, "{said}");
        assert_eq!(applied, want, "{said}");
    }
    // Without a final line end the new line still follows a line end of its own kind.
    let (proposed, _) = extracted(&format!("{TESTS}\r{GO}\r{RUST}"), "Remember that deploys happen on Fridays!");
    assert_eq!(proposed, format!("{TESTS}\r{GO}\r{RUST}\r{DEPLOYS}"));
}

/// LF and CRLF indexes come out as they always did.
#[test]
fn extraction_edits_lf_and_crlf_indexes_as_before() {
    let said = "Remember that deploys happen on Fridays! Forget that I write Go.";
    assert_eq!(extracted(&format!("{TESTS}\n{GO}\n{RUST}\n"), said).0, format!("{TESTS}\n{RUST}\n{DEPLOYS}\n"));
    assert_eq!(extracted(&format!("{TESTS}\r\n{GO}\r\n{RUST}\r\n"), said).0, format!("{TESTS}\r\n{RUST}\r\n{DEPLOYS}\r\n"));
}

fn mem(name: &str, body: &str) -> String {
    format!("---\nname: {name}\ndescription: {name} desc\nmetadata:\n  type: feedback\n---\n\n{body}\n")
}

const A: &str = "- [Alpha](a.md) — first";
const B: &str = "- [Bravo](b.md) — second";
const C: &str = "- [Charlie](c.md) — third";

/// An inbox item that updates `a.md`, adds `c.md` and puts `c.md`'s line after the others in
/// the lone-CR index on disk (`A`, `B`).
fn stage(w: &World) -> String {
    let root = &w.memory;
    std::fs::write(root.join("a.md"), mem("a", "Alpha.")).unwrap();
    std::fs::write(root.join("b.md"), mem("b", "Bravo.")).unwrap();
    let before = format!("{A}\r{B}\r");
    std::fs::write(root.join("MEMORY.md"), &before).unwrap();
    let change = |rel: &str, before: Option<String>, after: String| FileChange { path: root.join(rel), before, after: Some(after), reason: "t".into(), extra: Default::default() };
    let changes = vec![
        change("a.md", Some(mem("a", "Alpha.")), mem("a", "Alpha, always.")),
        change("c.md", None, mem("c", "Charlie.")),
        change("MEMORY.md", Some(before.clone()), format!("{before}{C}\r")),
    ];
    w.inbox.stage(new_item(&w.project, root, changes)).unwrap().id
}

/// Editing a memory's description rewrites its own line of the proposed index: the first
/// memory's edit replaced the whole lone-CR index with its one line, another's found no line.
#[test]
fn an_inbox_edit_rewrites_only_the_edited_memorys_line() {
    let w = World::new();
    let id = stage(&w);
    let edited = |name: &str, desc: &str| mem(name, "Edited.").replace(&format!("description: {name} desc"), &format!("description: {desc}"));
    w.inbox.edit(&id, "a.md", edited("a", "first, edited")).unwrap();
    let item = w.inbox.edit(&id, "c.md", edited("c", "third, edited")).unwrap();
    let want = format!("- [Alpha](a.md) — first, edited\r{B}\r- [Charlie](c.md) — third, edited\r");
    let index = item.changeset.changes.iter().find(|c| c.path == w.memory.join("MEMORY.md")).unwrap();
    assert_eq!(index.after.as_deref(), Some(want.as_str()));
    w.inbox.keep(&id).unwrap();
    assert_eq!(std::fs::read_to_string(w.memory.join("MEMORY.md")).unwrap(), want);
}

/// A kept item whose index changed on disk since it was staged adds its line after the lines
/// there now, and removes the lines it removed, each line as it is: before, the lone-CR index
/// was one line, so the item's whole index was added again after it.
#[test]
fn keeping_an_item_redoes_its_index_edit_on_a_lone_cr_index_that_changed() {
    let w = World::new();
    let id = stage(&w);
    let x = "- [X-ray](x.md) — added meanwhile";
    std::fs::write(w.memory.join("x.md"), mem("x", "X-ray.")).unwrap();
    std::fs::write(w.memory.join("MEMORY.md"), format!("{A}\r{B}\r{x}\r")).unwrap();
    w.inbox.keep(&id).unwrap();
    assert_eq!(std::fs::read_to_string(w.memory.join("MEMORY.md")).unwrap(), format!("{A}\r{B}\r{x}\r{C}\r"));

    // An item that removes a memory's line removes it where it is now.
    let root = &w.memory;
    let before = format!("{A}\r{B}\r{x}\r{C}\r");
    let changes = vec![
        FileChange { path: root.join("b.md"), before: Some(mem("b", "Bravo.")), after: None, reason: "t".into(), extra: Default::default() },
        FileChange { path: root.join("MEMORY.md"), before: Some(before.clone()), after: Some(format!("{A}\r{x}\r{C}\r")), reason: "t".into(), extra: Default::default() },
    ];
    let id = w.inbox.stage(new_item(&w.project, root, changes)).unwrap().id;
    std::fs::write(root.join("MEMORY.md"), format!("# Memory\r\n{before}")).unwrap();
    w.inbox.keep(&id).unwrap();
    assert_eq!(std::fs::read_to_string(root.join("MEMORY.md")).unwrap(), format!("# Memory\r\n{A}\r{x}\r{C}\r"));
}

/// Promoted to team memory, a memory keeps the title its line in the item's lone-CR index
/// gives it, and its team index line ends as the team index's lines do; a retry finds it there.
#[test]
fn promoting_to_a_lone_cr_team_index_adds_one_line_like_the_others() {
    let w = World::new();
    let id = stage(&w);
    let staged = std::fs::read(w.item_path(&id)).unwrap();
    std::fs::create_dir_all(w.memory.join("team")).unwrap();
    std::fs::write(w.memory.join("team/t.md"), mem("t", "Team.")).unwrap();
    let team = "- [Team](t.md) — team\r- [Other](o.md) — other\r";
    std::fs::write(w.memory.join("team/MEMORY.md"), team).unwrap();
    for _ in 0..2 {
        std::fs::write(w.item_path(&id), &staged).unwrap();
        w.inbox.promote(&id, PromoteTarget::Team).unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(w.memory.join("team/MEMORY.md")).unwrap(),
        format!("{team}- [Alpha](a.md) — a desc\r- [Charlie](c.md) — c desc\r")
    );
}
