//! `mergeMemory`, `setAutoMemoryDirectory` and `watching` over real HTTP.

mod common;

use common::Server;
use mneme_testsupport::{topic, write_file};
use serde_json::json;
use std::fs;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn merge_an_orphan_plan_then_apply() {
    let s = Server::start().await;
    let orphan = s.home.config_home().join("projects/-gone-worktree");
    write_file(&orphan.join("memory/b.md"), &topic("b", "b fact", "user", "B."));
    write_file(&orphan.join("memory/MEMORY.md"), "- [b](b.md) — b fact\n");

    let plan = s.ok("mergeMemory", json!({ "from": orphan, "cwd": s.repo, "dryRun": true })).await;
    assert_eq!(plan["dryRun"], true);
    assert_eq!(plan["moved"][0]["toRelPath"], "b.md");
    assert!(orphan.join("memory/b.md").exists(), "a dry run moves nothing");

    let done = s.ok("mergeMemory", json!({ "from": orphan, "cwd": s.repo })).await;
    assert_eq!(done["indexLinesAdded"][0]["text"], "- [b](b.md) — b fact");
    assert!(done["trashedTo"].is_string());
    let memdir = s.home.memdir_for(&s.repo);
    assert!(memdir.join("b.md").is_file());
    assert!(fs::read_to_string(memdir.join("MEMORY.md")).unwrap().contains("(b.md)"));

    let (status, body) = s.call("mergeMemory", json!({ "from": s.home.root, "cwd": s.repo })).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_input")), "{body}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_directory_set_refuse_clear_and_watching() {
    let s = Server::start().await;
    let settings = s.home.config_home().join("settings.json");
    let (status, body) = s.call("setAutoMemoryDirectory", json!({ "value": "~/.." })).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_input")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("home folder"));

    let set = s.ok("setAutoMemoryDirectory", json!({ "value": "~/claude-memory" })).await;
    assert_eq!(set["resolved"], json!(s.home.home().join("claude-memory")));
    let v: serde_json::Value = serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!((v["autoMemoryDirectory"].as_str(), v["theme"].as_str()), (Some("~/claude-memory"), Some("dark")));

    let cleared = s.ok("setAutoMemoryDirectory", json!({ "value": null })).await;
    assert!(cleared["resolved"].is_null());
    assert_eq!(fs::read_to_string(&settings).unwrap(), "{\n  \"theme\": \"dark\",\n  \"model\": \"opus\"\n}\n");

    let w = s.ok("watching", json!({})).await;
    let folders = w["folders"].as_array().unwrap();
    assert!(folders.iter().any(|f| f["path"] == json!(s.home.config_home()) && f["recursive"] == false), "{w}");
    assert!(folders.iter().any(|f| f["path"] == json!(s.home.config_home().join("projects")) && f["recursive"] == true), "{w}");
    s.stop().await;
}
