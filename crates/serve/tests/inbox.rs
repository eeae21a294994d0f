//! The review inbox over real HTTP: the mode, a run over the project's transcript, keep,
//! discard and promote, with their error statuses.

mod common;

use common::Server;
use serde_json::json;
use std::fs;

/// A session transcript in the project with one explicit "remember" statement per prompt.
fn transcript(s: &Server, prompts: &[&str]) {
    let dir = s.home.config_home().join("projects").join(mneme_core::sanitize::sanitize_path(&s.repo.to_string_lossy()));
    fs::create_dir_all(&dir).unwrap();
    let mut text = String::new();
    let mut parent = serde_json::Value::Null;
    for (i, p) in prompts.iter().enumerate() {
        let common = |uuid: String, parent: serde_json::Value| {
            json!({"uuid": uuid, "parentUuid": parent, "isSidechain": false, "cwd": s.repo,
                "sessionId": "0a23833b-7439-4af7-b274-46564fd6c262", "timestamp": "2026-03-02T10:00:00.000Z"})
        };
        let mut u = common(format!("u{i}"), parent.clone());
        u["type"] = json!("user");
        u["message"] = json!({"role": "user", "content": p});
        let mut a = common(format!("a{i}"), json!(format!("u{i}")));
        a["type"] = json!("assistant");
        a["message"] = json!({"id": format!("m{i}"), "role": "assistant", "content": [{"type": "text", "text": "OK."}], "stop_reason": "end_turn"});
        text.push_str(&format!("{u}\n{a}\n"));
        parent = json!(format!("a{i}"));
    }
    fs::write(dir.join("0a23833b-7439-4af7-b274-46564fd6c262.jsonl"), text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn review_extract_keep_and_errors() {
    let s = Server::start().await;
    let cwd = json!(s.repo);
    let (status, body) = s.call("runExtraction", json!({ "cwd": cwd })).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("not_found")), "{body}");

    transcript(&s, &["Remember that I review code in the morning."]);
    let view = s.ok("setReviewMode", json!({ "cwd": cwd, "mode": "review" })).await;
    assert_eq!(view["mode"], "review");
    let report = s.ok("runExtraction", json!({ "cwd": cwd })).await;
    assert_eq!(report["runs"][0]["result"], "staged", "{report}");
    let id = report["runs"][0]["inboxId"].as_str().unwrap().to_string();

    let view = s.ok("inbox", json!({ "cwd": cwd })).await;
    assert_eq!(view["pending"][0]["id"], id.as_str());
    assert_eq!(view, serde_json::to_value(s.mneme.inbox(&mneme_api::ContextRequest { cwd: s.repo.clone(), ..Default::default() }).unwrap()).unwrap());
    let memory = view["pending"][0]["files"][0]["path"].as_str().unwrap().to_string();
    assert!(!std::path::Path::new(&memory).exists());

    let kept = s.ok("inboxKeep", json!({ "id": id })).await;
    assert_eq!(kept["state"], "kept");
    assert!(std::path::Path::new(&memory).is_file());
    let (status, body) = s.call("inboxDiscard", json!({ "id": id })).await;
    assert_eq!((status, body["code"].as_str()), (409, Some("conflict")), "{body}");
    let (status, body) = s.call("inboxKeep", json!({ "id": "no-such-item" })).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("not_found")), "{body}");
    let (status, body) = s.call("inboxPromote", json!({ "id": id, "to": "wiki" })).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_input")), "{body}");
    let (status, body) = s.call("setReviewMode", json!({ "cwd": cwd, "mode": "sometimes" })).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_input")), "{body}");
    s.stop().await;
}
