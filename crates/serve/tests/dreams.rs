//! Auto dream over real HTTP (the Dreams screen's methods with their error statuses), and the
//! background scheduler inside the server (`--scheduler`) streaming its runs as `scheduler`
//! events beside the file events.

mod common;

use common::{fixture, Server};
use mneme_testsupport::{set_mtime, topic};
use serde_json::{json, Value};
use std::fs;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_a_dream_approve_and_undo_over_http() {
    let s = Server::start().await;
    let mem = s.home.memdir_for(&s.repo);
    fs::write(mem.join("tabs_old.md"), topic("Prefers tabs", "Use tabs for indentation", "feedback", "Always indent with tabs.\n**Why:** team style.")).unwrap();
    fs::write(mem.join("tabs_new.md"), topic("Tabs preference", "Use tabs for indentation in code", "feedback", "Always indent with tabs, never spaces.\n**Why:** team style.")).unwrap();
    set_mtime(&mem.join("tabs_old.md"), 1_764_300_000);
    fs::write(mem.join("MEMORY.md"), "- [Old](tabs_old.md) — tabs\n- [Gone](gone.md) — x\n").unwrap();
    let index = fs::read_to_string(mem.join("MEMORY.md")).unwrap();
    let cwd = json!(s.repo);

    let status = s.ok("dreamStatus", json!({ "cwd": cwd })).await;
    assert_eq!(status, serde_json::to_value(s.mneme.dream_status(&s.request()).unwrap()).unwrap());
    assert_eq!((status["mode"].as_str(), status["blockedBy"].as_str(), status["offReason"].as_str()), (Some("automatic"), Some("enabled"), Some("autoDreamOff")));
    let (code, body) = s.call("setDreamMode", json!({ "cwd": cwd, "mode": "sometimes" })).await;
    assert_eq!((code, body["code"].as_str()), (400, Some("invalid_input")), "{body}");
    assert_eq!(s.ok("setDreamMode", json!({ "cwd": cwd, "mode": "review" })).await["mode"], "review");

    let dream = s.ok("runDream", json!({ "cwd": cwd })).await;
    assert_eq!((dream["state"].as_str(), dream["provider"].as_str(), dream["trigger"].as_str()), (Some("pending"), Some("offline"), Some("manual")));
    assert_eq!(fs::read_to_string(mem.join("MEMORY.md")).unwrap(), index, "held for review: nothing written");
    let id = dream["id"].as_str().unwrap().to_string();
    let files = dream["files"].as_array().unwrap();
    assert!(files.iter().any(|f| f["action"] == "merged" && f["mergedInto"] == "tabs_new.md"), "{dream}");
    assert_eq!(files.last().unwrap()["relPath"], "MEMORY.md");

    let history = s.ok("dreamHistory", json!({ "cwd": cwd })).await;
    assert_eq!(history["dreams"][0]["id"], id.as_str());
    assert_eq!(s.ok("dream", json!({ "cwd": cwd, "id": id })).await, dream);
    let (code, body) = s.call("dream", json!({ "cwd": cwd, "id": "nope" })).await;
    assert_eq!((code, body["code"].as_str()), (404, Some("not_found")), "{body}");

    assert_eq!(s.ok("approveDream", json!({ "cwd": cwd, "id": id })).await["state"], "applied");
    assert!(!mem.join("tabs_old.md").exists());
    let (code, body) = s.call("rejectDream", json!({ "cwd": cwd, "id": id })).await;
    assert_eq!((code, body["code"].as_str()), (409, Some("conflict")), "{body}");
    fs::write(mem.join("tabs_new.md"), "edited by hand\n").unwrap();
    let (code, body) = s.call("undoDream", json!({ "cwd": cwd, "id": id })).await;
    assert_eq!((code, body["code"].as_str()), (409, Some("conflict")), "{body}");
    assert!(body["message"].as_str().unwrap().starts_with("tabs_new.md changed since dream"), "{body}");
    let undone = s.ok("undoDream", json!({ "cwd": cwd, "force": true })).await;
    assert_eq!(undone["state"], "undone");
    assert_eq!(undone["undoReplaced"][0]["before"], "edited by hand\n");
    assert_eq!(fs::read_to_string(mem.join("MEMORY.md")).unwrap(), index);

    let log = s.ok("appendDailyLog", json!({ "cwd": cwd, "text": "I prefer squash merges" })).await;
    assert!(log["text"].as_str().unwrap().ends_with(" I prefer squash merges\n"), "{log}");
    assert_eq!(s.ok("dailyLog", json!({ "cwd": cwd, "date": log["date"] })).await, log);
    let (code, _) = s.call("dailyLog", json!({ "cwd": cwd, "date": "yesterday" })).await;
    assert_eq!(code, 400);
    assert_eq!(s.ok("backgroundRuns", json!({})).await, json!({ "runs": [] }));
    let (code, _) = s.call("backgroundRuns", json!({ "job": "laundry" })).await;
    assert_eq!(code, 400);
    assert_eq!(s.ok("home", json!({})).await["scheduler"], false, "serve runs no scheduler unless asked");
    s.stop().await;
}

/// Reads the event stream until a `scheduler` event whose data satisfies `want` arrives.
async fn scheduler_event(resp: &mut reqwest::Response, seen: &mut String, want: impl Fn(&Value) -> bool) -> Value {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(20);
    loop {
        let mut lines = seen.lines().peekable();
        while let Some(line) = lines.next() {
            if line == "event: scheduler" {
                if let Some(data) = lines.peek().and_then(|l| l.strip_prefix("data: ")) {
                    let v: Value = serde_json::from_str(data).unwrap();
                    if want(&v) {
                        return v;
                    }
                }
            }
        }
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(bytes))) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            Ok(other) => panic!("the stream ended: {other:?}; got so far: {seen:?}"),
            Err(_) => panic!("no such scheduler event in time; got: {seen:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_scheduler_a_turn_end_is_extracted_and_streamed_as_scheduler_events() {
    let (home, repo) = fixture();
    let s = Server::start_opts(home, repo, None, true).await;
    assert_eq!(s.ok("home", json!({})).await["scheduler"], true);
    let mut events = s.client.get(s.url("/api/events")).bearer_auth(&s.token).send().await.unwrap();
    let mut seen = String::new();
    wait_connected(&mut events, &mut seen).await;

    // A Claude Code session ends a turn in the project: the scheduler's extraction loop runs.
    let session = "0a23833b-7439-4af7-b274-46564fd6c262";
    let dir = s.home.config_home().join("projects").join(mneme_core::sanitize::sanitize_path(&s.repo.to_string_lossy()));
    let common = |uuid: &str, parent: Value| {
        json!({"uuid": uuid, "parentUuid": parent, "isSidechain": false, "cwd": s.repo, "sessionId": session, "timestamp": "2026-03-02T10:00:00.000Z"})
    };
    let mut u = common("u1", Value::Null);
    u["type"] = json!("user");
    u["message"] = json!({"role": "user", "content": "Remember that the staging database is shared with QA."});
    let mut a = common("a1", json!("u1"));
    a["type"] = json!("assistant");
    a["message"] = json!({"id": "m1", "role": "assistant", "content": [{"type": "text", "text": "Noted."}], "stop_reason": "end_turn"});
    fs::write(dir.join(format!("{session}.jsonl")), format!("{u}\n{a}\n")).unwrap();

    let started = scheduler_event(&mut events, &mut seen, |e| e["kind"] == "started" && e["job"] == "extraction").await;
    let id = started["id"].clone();
    let finished = scheduler_event(&mut events, &mut seen, |e| e["kind"] == "finished" && e["run"]["id"] == id).await;
    assert_eq!(finished["run"]["job"], "extraction");
    assert!(finished["run"]["summary"].as_str().is_some_and(|t| !t.is_empty()), "{finished}");
    // The run log has it too, for the Dreams screen's "recent background runs".
    let runs = s.ok("backgroundRuns", json!({ "job": "extraction" })).await;
    assert!(runs["runs"].as_array().unwrap().iter().any(|r| r["id"] == id), "{runs}");
    s.stop().await;
}

async fn wait_connected(resp: &mut reqwest::Response, seen: &mut String) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(5);
    while !seen.contains(": connected") {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(bytes))) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            other => panic!("the event stream did not connect: {other:?}"),
        }
    }
}
