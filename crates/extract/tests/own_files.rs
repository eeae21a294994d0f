//! Extraction's own files as a newer Mneme leaves them: `modes.json`, inbox items and session
//! state keep what this build does not know, and say "update Mneme" where it matters
//! (ARCHITECTURE.md, "Mneme's own files across versions").

mod common;

use common::{new_item, World};
use mneme_agent::FileChange;
use mneme_extract::record::{mode, set_mode};
use mneme_extract::{ItemStatus, ReviewMode};
use serde_json::{json, Value};
use std::path::Path;

/// `modes.json` holds every project's mode in one map: one mode a newer Mneme added for one
/// project made every project's mode unreadable here, and setting any mode failed.
#[test]
fn one_project_s_newer_mode_does_not_hide_the_others() {
    let data = tempfile::tempdir().unwrap();
    let dir = data.path().join("extract");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("modes.json"), r#"{"/a/memory": "review", "/b/memory": "batch"}"#).unwrap();
    assert_eq!(mode(data.path(), Path::new("/a/memory")).unwrap(), ReviewMode::Review);
    assert_eq!(mode(data.path(), Path::new("/c/memory")).unwrap(), ReviewMode::Automatic);
    let text = mode(data.path(), Path::new("/b/memory")).unwrap_err().to_string();
    assert!(text.contains("/b/memory") && text.contains("modes.json") && text.contains("update Mneme"), "{text}");
    assert!(!text.contains("not valid JSON"), "not a damaged file: {text}");

    set_mode(data.path(), Path::new("/c/memory"), ReviewMode::Off).unwrap();
    set_mode(data.path(), Path::new("/a/memory"), ReviewMode::Automatic).unwrap();
    let kept: serde_json::Value = serde_json::from_slice(&std::fs::read(dir.join("modes.json")).unwrap()).unwrap();
    assert_eq!(kept, serde_json::json!({"/b/memory": "batch", "/c/memory": "off"}));

    // Choosing that project's mode here replaces the newer one.
    set_mode(data.path(), Path::new("/b/memory"), ReviewMode::Review).unwrap();
    assert_eq!(mode(data.path(), Path::new("/b/memory")).unwrap(), ReviewMode::Review);
}

fn read_json(path: &Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap()
}

fn write_json(path: &Path, value: &Value) {
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

fn stage(w: &World) -> String {
    let change = FileChange { path: w.memory.join("x.md"), before: None, after: Some("---\nname: x\n---\n\nTabs.\n".into()), reason: "t".into(), extra: Default::default() };
    w.inbox.stage(new_item(&w.project, &w.memory, vec![change])).unwrap().id
}

/// A field a newer Mneme put in an inbox item was dropped when a decision here rewrote it.
#[test]
fn a_decision_keeps_a_newer_mneme_s_fields_in_the_item() {
    let w = World::new();
    let id = stage(&w);
    let mut item = read_json(&w.item_path(&id));
    item["reviewNote"] = json!({"by": "a newer build"});
    write_json(&w.item_path(&id), &item);
    w.inbox.discard(&id).unwrap();
    let after = read_json(&w.item_path(&id));
    assert_eq!(after["status"]["state"], "discarded");
    assert_eq!(after["reviewNote"], json!({"by": "a newer build"}));
}

/// An item in a status a newer Mneme added was listed as damaged, to be deleted, with no word
/// of updating Mneme.
#[test]
fn an_item_in_a_newer_status_says_to_update_mneme_and_is_left_alone() {
    let w = World::new();
    let id = stage(&w);
    let good = stage(&w);
    let mut item = read_json(&w.item_path(&id));
    item["status"] = json!({"state": "snoozed", "untilMs": 1});
    write_json(&w.item_path(&id), &item);
    let before = std::fs::read(w.item_path(&id)).unwrap();

    let err = w.inbox.keep(&id).unwrap_err();
    assert_eq!(err.code(), "damaged", "{err}");
    let text = err.to_string();
    assert!(text.contains("update Mneme") && text.contains("snoozed") && text.contains(&w.item_path(&id).display().to_string()), "{text}");
    assert!(!text.contains("Delete it"), "a sound file a newer Mneme can still decide: {text}");
    let damaged: Vec<String> = w.inbox.damaged().unwrap().iter().map(ToString::to_string).collect();
    assert_eq!(damaged, [text]);
    let listed: Vec<String> = w.inbox.list(None, true).unwrap().into_iter().map(|i| i.id).collect();
    assert_eq!(listed, std::slice::from_ref(&good));
    assert_eq!(std::fs::read(w.item_path(&id)).unwrap(), before, "left as it was");
    assert_eq!(w.inbox.get(&good).unwrap().status, ItemStatus::Pending);
}
