//! Dream records written by a newer or an older Mneme (the app and a CLI of another build share
//! one data folder): a newer build's fields survive a review here, a newer format or a status
//! this build lacks is reported as a newer Mneme's and left as it is, without hiding the other
//! records, and an older record's missing fields take defaults.

mod common;

use common::*;
use mneme_dream::{DreamError, DreamRecord, DreamStatus};
use serde_json::{json, Value};
use std::fs;

/// A record of `w`'s folder saved under `id` in `status`, from a real dream's record, as JSON
/// to be changed the way another build would have written it.
fn saved(w: &World, template: &DreamRecord, id: &str, status: DreamStatus) -> (std::path::PathBuf, Value) {
    let mut r = template.clone();
    r.id = id.into();
    r.status = status;
    let history = w.dreams.history(&w.mem);
    history.save(&r).unwrap();
    let path = history.dir().join(format!("{id}.json"));
    let value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    (path, value)
}

fn rewrite(path: &std::path::Path, value: &Value) -> String {
    let text = serde_json::to_string_pretty(value).unwrap();
    fs::write(path, &text).unwrap();
    text
}

#[test]
fn a_newer_mneme_s_fields_survive_a_review_here() {
    let w = World::new();
    let t = w.offline(true).unwrap();
    let (path, mut v) = saved(&w, &t, "100", DreamStatus::Pending);
    v["reviewer"] = json!({"name": "lead", "note": "keep"});
    rewrite(&path, &v);
    w.dreams.reject(&w.mem, "100").unwrap();
    let after: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(after["status"], "rejected");
    assert_eq!(after["reviewer"], json!({"name": "lead", "note": "keep"}), "{after}");
}

/// The record's nested parts (the gates and the lock file as they stood, the counts, the lock
/// taken, the files trashed, the lines moved) dropped a newer Mneme's fields when a review here
/// wrote the record back.
#[test]
fn a_newer_mneme_s_fields_in_a_record_s_nested_parts_survive_a_review_here() {
    let w = World::new();
    let t = w.offline(true).unwrap();
    let (path, mut v) = saved(&w, &t, "100", DreamStatus::Pending);
    let future = json!({"by": "a newer Mneme", "n": [1, 2]});
    v["gate"]["future"] = future.clone();
    v["gate"]["lock"]["future"] = future.clone();
    if v["stats"].is_null() {
        v["stats"] = serde_json::to_value(mneme_dream::offline::PlanStats::default()).unwrap();
    }
    v["stats"]["future"] = future.clone();
    v["lock"] = json!({"priorMtimeNs": 0, "acquiredAtNs": 1_700_000_000_000_000_000i64, "future": future});
    v["trashed"] = json!([{"path": "/gone.md", "trashId": "t1", "future": future}]);
    v["moved"] = json!([{"from": "a.md", "text": "a line", "fileRemoved": false, "foundIn": ["b.md"], "missing": [], "duplicate": null, "future": future}]);
    rewrite(&path, &v);
    w.dreams.reject(&w.mem, "100").unwrap();
    let after: Value = serde_json::from_slice(&fs::read(&path).unwrap()).unwrap();
    assert_eq!(after["status"], "rejected");
    for (part, value) in [
        ("gate", &after["gate"]),
        ("gate.lock", &after["gate"]["lock"]),
        ("stats", &after["stats"]),
        ("lock", &after["lock"]),
        ("trashed", &after["trashed"][0]),
        ("moved", &after["moved"][0]),
    ] {
        assert_eq!(value["future"], future, "{part}: {value}");
    }
}

#[test]
fn a_newer_format_or_status_is_reported_as_a_newer_mneme_s_and_left_alone() {
    let w = World::new();
    let t = w.offline(true).unwrap();
    saved(&w, &t, "100", DreamStatus::Pending);
    let (newer_path, mut newer) = saved(&w, &t, "200", DreamStatus::Pending);
    newer["version"] = json!(mneme_dream::history::RECORD_VERSION + 1);
    let newer_text = rewrite(&newer_path, &newer);
    let (status_path, mut status) = saved(&w, &t, "300", DreamStatus::Pending);
    status["status"] = json!("archived");
    let status_text = rewrite(&status_path, &status);

    let (records, damaged) = w.dreams.list(&w.mem).unwrap();
    let ids: std::collections::BTreeSet<&str> = records.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids, [t.id.as_str(), "100"].into(), "the records this build reads are all listed");
    assert_eq!(damaged.len(), 2);
    for e in &damaged {
        let text = e.to_string();
        assert!(matches!(e, DreamError::DamagedRecord { newer: true, .. }), "{e:?}");
        assert!(text.contains("newer Mneme") && text.contains("update Mneme") && !text.contains("move it aside"), "{text}");
    }
    assert_eq!(w.dreams.pending_count(&w.mem).unwrap(), 1, "only the pending dream this build can review");
    for id in ["200", "300"] {
        let e = w.dreams.reject(&w.mem, id).unwrap_err();
        assert!(e.to_string().contains("update Mneme"), "{e}");
    }
    assert_eq!(fs::read_to_string(&newer_path).unwrap(), newer_text);
    assert_eq!(fs::read_to_string(&status_path).unwrap(), status_text);
}

#[test]
fn an_older_record_s_missing_fields_take_defaults() {
    let w = World::new();
    let t = w.offline(true).unwrap();
    let (path, mut v) = saved(&w, &t, "100", DreamStatus::Applied);
    for field in ["denials", "turns", "trashed", "moved"] {
        v.as_object_mut().unwrap().remove(field);
    }
    rewrite(&path, &v);
    let r = w.dreams.history(&w.mem).load("100").unwrap();
    assert!(r.denials.is_empty() && r.turns == 0 && r.trashed.is_empty() && r.moved.is_empty());
}

#[test]
fn a_mode_a_newer_mneme_set_names_it_and_the_file_s_other_fields_are_kept() {
    let w = World::new();
    let history = w.dreams.history(&w.mem);
    fs::create_dir_all(history.dir()).unwrap();
    let file = history.dir().join("settings.json");
    let key = w.mem.to_string_lossy().into_owned();
    fs::write(&file, json!({"modes": {key.clone(): "weekly", "/elsewhere/memory": "batch"}, "digest": {"hour": 9}}).to_string()).unwrap();
    let e = w.dreams.mode(&w.mem).unwrap_err().to_string();
    assert!(e.contains("\"weekly\"") && e.contains("newer Mneme") && e.contains("update Mneme"), "{e}");
    w.dreams.set_mode(&w.mem, mneme_dream::DreamMode::Review).unwrap();
    let after: Value = serde_json::from_slice(&fs::read(&file).unwrap()).unwrap();
    assert_eq!(after, json!({"modes": {key: "review", "/elsewhere/memory": "batch"}, "digest": {"hour": 9}}));
}
