//! A MEMORY.md or team/MEMORY.md that is not UTF-8 (saved as Windows-1252 by an editor): a
//! dream, offline or model-driven, refuses to run, naming the file and how to convert it,
//! and leaves the folder byte for byte as it was. Read as text, the bytes it cannot decode
//! would be replaced for good by whatever it wrote back, and the safety net would weigh
//! replacement characters instead of the user's words.

mod common;

use common::*;
use mneme_dream::{CachedFlags, DreamError, DreamStatus, Engine, Enablement, RunOptions, Trigger};
use mneme_model::{AnthropicProvider, Cancel};
use mneme_stub_model::{StubModel, Turn};
use serde_json::json;

/// `Café` and an em dash as Windows-1252 writes them.
const INDEX_1252: &[u8] = b"# Memory\n\n- [Caf\xe9](cafe.md) \x97 espresso only\n- [Tabs](tabs.md) \x97 tabs\n- [Tabs again](tabs_copy.md) \x97 tabs\n";

/// A folder with a duplicate the offline dream would merge, and `index` at `rel`.
fn folder(rel: &str, index: &[u8]) -> World {
    let w = World::new();
    w.write("tabs.md", &topic("Tabs", "tabs", "feedback", "Use tabs."));
    w.write("tabs_copy.md", &topic("Tabs", "tabs", "feedback", "Use tabs."));
    w.write("cafe.md", &topic("Café", "espresso only", "user", "Espresso only."));
    if rel != "MEMORY.md" {
        w.write("MEMORY.md", "- [Tabs](tabs.md) — tabs\n");
    }
    let p = w.write(rel, "");
    std::fs::write(p, index).unwrap();
    w
}

fn refused(w: &World, rel: &str, r: Result<mneme_dream::DreamRecord, DreamError>, before: &std::collections::BTreeMap<String, Vec<u8>>) {
    let e = r.expect_err("the dream is refused");
    let said = e.to_string();
    assert_eq!(e.code(), "not-utf8", "{said}");
    assert!(said.contains(&w.mem.join(rel).display().to_string()), "names the file: {said}");
    assert!(said.contains("byte 0xE9 on line 3") && said.contains("iconv -f WINDOWS-1252 -t UTF-8"), "says what to do: {said}");
    assert!(said.ends_with("and run the dream again"), "{said}");
    assert_eq!(&w.snapshot(), before, "nothing written");
    let (records, _) = w.dreams.list(&w.mem).unwrap();
    assert_eq!(records.len(), 1);
    assert_eq!((records[0].status, records[0].error.as_deref()), (DreamStatus::Failed, Some(said.as_str())), "recorded as failed, saying why");
    assert!(records[0].changeset.is_empty());
}

#[test]
fn an_offline_dream_refuses_an_index_that_is_not_utf8() {
    for rel in ["MEMORY.md", "team/MEMORY.md"] {
        let w = folder(rel, INDEX_1252);
        let before = w.snapshot();
        refused(&w, rel, w.offline(true), &before);
    }
}

#[tokio::test]
async fn a_model_dream_refuses_an_index_that_is_not_utf8() {
    for rel in ["MEMORY.md", "team/MEMORY.md"] {
        let w = folder(rel, INDEX_1252);
        let before = w.snapshot();
        let index = w.mem.join(rel).display().to_string();
        let stub = StubModel::start().await;
        // What a model would do: read the index and edit one of its lines.
        stub.push(Turn::tool_use("Read", json!({"file_path": index})));
        stub.push(Turn::tool_use("Edit", json!({"file_path": index, "old_string": "espresso only", "new_string": "espresso, no milk"})));
        stub.push(Turn::text("Tidied the index."));
        let provider = AnthropicProvider::new("claude-test-model", "sk-ant-test", Some(&stub.base_url())).unwrap();
        let opts = RunOptions { trigger: Trigger::Manual, engine: Engine::Model(&provider), apply_now: true, enabled: Enablement::On, flags: CachedFlags::default(), cancel: Cancel::new() };
        refused(&w, rel, w.dreams.run(&w.target(), &opts).await, &before);
        assert!(stub.requests().is_empty(), "the model was never asked");
    }
}

/// A MEMORY.md saved as Windows-1252 after a dream rewrote it: the undo refuses it as changed
/// since, and a forced undo writes the dream's earlier text while keeping every byte it
/// replaced, in the record and in Mneme's trash, from where a restore puts them back as they
/// were. The undo's text for it showed the bytes it could not decode as U+FFFD and the apply,
/// comparing bytes, refused it as "changed since", for ever.
#[test]
fn a_forced_undo_over_an_index_that_is_no_longer_utf8_keeps_its_exact_bytes() {
    let w = folder("MEMORY.md", b"# Memory\n\n- [Tabs](tabs.md) \xe2\x80\x94 tabs\n- [Tabs again](tabs_copy.md) \xe2\x80\x94 tabs\n");
    let before = w.snapshot();
    let rec = w.offline(true).unwrap();
    assert_eq!(rec.status, DreamStatus::Applied);
    assert!(rec.changeset.changes.iter().any(|c| c.path.ends_with("MEMORY.md") && c.after.is_some()), "the premise: the dream rewrote the index: {:#?}", rec.changeset.changes);
    std::fs::write(w.mem.join("MEMORY.md"), INDEX_1252).unwrap();
    let edited = w.snapshot();

    let e = w.dreams.undo(&w.mem, Some(&rec.id), false).unwrap_err();
    assert_eq!(e.code(), "conflict", "{e}");
    assert!(e.to_string().contains("MEMORY.md") && e.to_string().contains("--force"), "{e}");
    assert_eq!(w.snapshot(), edited, "nothing undone");

    let undone = w.dreams.undo(&w.mem, Some(&rec.id), true).unwrap();
    assert_eq!(undone.status, DreamStatus::Undone);
    assert_eq!(w.snapshot(), before, "the folder as it was before the dream");
    // The record, as read back from disk, holds the bytes the undo replaced, exactly.
    let saved = w.dreams.history(&w.mem).load(&rec.id).unwrap();
    assert_eq!(saved.undo_kept.len(), 1, "{:#?}", saved.undo_kept);
    let kept = &saved.undo_kept[0];
    assert_eq!((kept.path.as_path(), kept.bytes.as_slice()), (w.mem.join("MEMORY.md").as_path(), INDEX_1252));
    let shown = saved.undo.as_ref().unwrap().changes.iter().find(|c| c.path.ends_with("MEMORY.md")).unwrap();
    assert_eq!(shown.before.as_deref(), Some(String::from_utf8_lossy(INDEX_1252).as_ref()), "shown as text, U+FFFD for what does not decode");
    let note = saved.notes.iter().find(|n| n.starts_with("MEMORY.md was not UTF-8 text")).unwrap_or_else(|| panic!("{:#?}", saved.notes));
    assert!(note.contains(&format!("mneme memories restore {}", kept.trash_id)), "{note}");
    // What the note says to do puts the bytes back as they were.
    std::fs::remove_file(w.mem.join("MEMORY.md")).unwrap();
    w.dreams.memdir(&w.mem).restore(&kept.trash_id).unwrap();
    assert_eq!(std::fs::read(w.mem.join("MEMORY.md")).unwrap(), INDEX_1252);
}

/// The same for a topic file the dream edited, and for one it created, each saved since in
/// another encoding: the forced undo puts the edited one's earlier text back and moves the
/// created one away, keeping both as they were found.
#[test]
fn a_forced_undo_keeps_topic_files_that_are_no_longer_utf8() {
    let w = World::new();
    w.write("deploy.md", &topic("Deploy", "deploy freeze", "project", "Froze deploys yesterday."));
    w.write("MEMORY.md", "- [Deploy](deploy.md) \u{2014} deploy freeze\n- [Lost](lost.md) \u{2014} a memory whose file is gone\n");
    let before = w.snapshot();
    let rec = w.offline(true).unwrap();
    assert!(w.mem.join("lost.md").exists() && w.read("deploy.md").contains("on 2026-05-05"), "the premise: {:#?}", rec.changeset.changes);
    let deploy_1252: &[u8] = b"---\nname: Deploy\n---\n\nFroze deploys on 2026-05-05 \x97 caf\xe9.\n";
    let lost_1252: &[u8] = b"caf\xe9\n";
    std::fs::write(w.mem.join("deploy.md"), deploy_1252).unwrap();
    std::fs::write(w.mem.join("lost.md"), lost_1252).unwrap();
    w.dreams.undo(&w.mem, Some(&rec.id), true).unwrap();
    assert_eq!(w.snapshot(), before, "the folder as it was before the dream");
    let saved = w.dreams.history(&w.mem).load(&rec.id).unwrap();
    let mut kept: Vec<(String, Vec<u8>)> =
        saved.undo_kept.iter().map(|k| (k.path.file_name().unwrap().to_string_lossy().into_owned(), k.bytes.clone())).collect();
    kept.sort();
    assert_eq!(kept, vec![("deploy.md".to_string(), deploy_1252.to_vec()), ("lost.md".to_string(), lost_1252.to_vec())]);
    let memdir = w.dreams.memdir(&w.mem);
    for k in &saved.undo_kept {
        let (_, bytes) = memdir.trashed_content(&k.trash_id).unwrap().unwrap();
        assert_eq!(bytes, k.bytes, "the trash holds the same bytes");
    }
}
