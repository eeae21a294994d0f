//! Each API method's happy path over real HTTP, checked against the engine called directly.

mod common;

use common::{Server, DATE};
use mneme_api::MemoryListFilter;
use serde_json::{json, Value};
use std::fs;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn context_and_touched_match_the_engine() {
    let s = Server::start().await;
    let view = s.ok("context", json!({ "cwd": s.repo, "date": DATE })).await;
    let direct = s.mneme.context(&s.request()).unwrap();
    assert_eq!(view["block"].as_str().unwrap(), direct.block);
    assert!(direct.block.contains("Use tabs for indentation."));
    assert_eq!(view, serde_json::to_value(&direct).unwrap(), "the whole view, camelCase");
    assert!(view["autoMemory"]["dir"].is_string());

    let limited = s.ok("context", json!({ "cwd": s.repo, "date": DATE, "settingSources": "user" })).await;
    assert!(!limited["block"].as_str().unwrap().contains("Use tabs"), "project files off with settingSources=user");

    let touched = s.ok("touched", json!({ "cwd": s.repo, "files": ["src/main.rs"] })).await;
    let direct = s.mneme.touched(&s.request(), &["src/main.rs".into()]).unwrap();
    assert_eq!(touched["block"].as_str().unwrap(), direct.block);

    let (status, body) = s.call("context", json!({ "cwd": s.home.root.join("missing") })).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("not_found")));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn memory_lifecycle_create_list_save_conflict_delete_restore() {
    let s = Server::start().await;
    let cwd = json!(s.repo);
    let created = s
        .ok(
            "createMemory",
            json!({ "cwd": cwd, "name": "Testing", "description": "how we test", "kind": "feedback", "body": "Run the suite." }),
        )
        .await;
    let rel = created["relPath"].as_str().unwrap().to_string();
    assert_eq!(created["indexed"], true);

    let (status, body) = s
        .call("createMemory", json!({ "cwd": cwd, "name": "Testing", "description": "again", "kind": "user", "body": "x" }))
        .await;
    assert_eq!((status, body["code"].as_str()), (409, Some("already_exists")), "{body}");
    let (status, body) = s
        .call("createMemory", json!({ "cwd": cwd, "name": "Bad", "description": "d", "kind": "nonsense", "body": "x" }))
        .await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_input")), "{body}");

    let list = s.ok("memories", json!({ "cwd": cwd })).await;
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(list[0]["relPath"], rel.as_str());
    let direct = s.mneme.memories(&s.request(), &MemoryListFilter::default()).unwrap();
    assert_eq!(list, serde_json::to_value(&direct).unwrap());
    let none = s.ok("memories", json!({ "cwd": cwd, "kind": "user" })).await;
    assert!(none.as_array().unwrap().is_empty());
    let found = s.ok("memories", json!({ "cwd": cwd, "search": "SUITE" })).await;
    assert_eq!(found.as_array().unwrap().len(), 1);

    let detail = s.ok("memory", json!({ "cwd": cwd, "memory": rel })).await;
    let first_revision = detail["revision"].as_str().unwrap().to_string();
    let content = detail["content"].as_str().unwrap().replace("Run the suite.", "Run the whole suite.");
    let saved = s
        .ok("saveMemory", json!({ "cwd": cwd, "relPath": rel, "content": content, "revision": first_revision }))
        .await;
    assert_eq!(fs::read_to_string(saved["path"].as_str().unwrap()).unwrap(), content);

    let (status, body) = s
        .call("saveMemory", json!({ "cwd": cwd, "relPath": rel, "content": "lost", "revision": first_revision }))
        .await;
    assert_eq!((status, body["code"].as_str()), (409, Some("conflict")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("overwrite"));

    let edited = s.ok("editMemory", json!({ "cwd": cwd, "memory": rel, "description": "how we really test" })).await;
    assert_eq!(edited["description"], "how we really test");

    let manifest = s.ok("manifest", json!({ "cwd": cwd })).await;
    assert_eq!(manifest["text"].as_str().unwrap(), s.mneme.manifest(&s.request()).unwrap().text);
    assert!(manifest["text"].as_str().unwrap().contains("how we really test"));

    let health = s.ok("health", json!({ "cwd": cwd })).await;
    assert_eq!(health, serde_json::to_value(s.mneme.health(&s.request()).unwrap()).unwrap());
    let graph = s.ok("graph", json!({ "cwd": cwd })).await;
    assert!(graph.is_object());

    let trashed = s.ok("deleteMemory", json!({ "cwd": cwd, "memory": rel })).await;
    let id = trashed["id"].as_str().unwrap().to_string();
    assert!(s.ok("memories", json!({ "cwd": cwd })).await.as_array().unwrap().is_empty());
    let trash = s.ok("trash", json!({ "cwd": cwd })).await;
    assert!(trash.to_string().contains(&id), "{trash}");

    let restored = s.ok("restoreMemory", json!({ "cwd": cwd, "id": id })).await;
    assert!(restored["path"].as_str().unwrap().ends_with(&rel));
    assert_eq!(s.ok("memories", json!({ "cwd": cwd })).await.as_array().unwrap().len(), 1);
    let (status, _) = s.call("restoreMemory", json!({ "cwd": cwd, "id": id })).await;
    assert_eq!(status, 404, "an entry restores once");

    let (status, body) = s.call("memory", json!({ "cwd": cwd, "memory": "no-such-memory" })).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("not_found")));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fix_index_adds_a_missing_line() {
    let s = Server::start().await;
    let memdir = s.home.memdir_for(&s.repo);
    fs::write(memdir.join("loose.md"), mneme_testsupport::topic("Loose", "not indexed", "user", "Body.")).unwrap();
    let fixed = s.ok("fixIndex", json!({ "cwd": s.repo })).await;
    let changes: Vec<&str> = fixed["changes"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(changes.iter().any(|c| c.contains("added")), "{changes:?}");
    assert!(fs::read_to_string(memdir.join("MEMORY.md")).unwrap().contains("loose.md"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn read_and_save_files_the_context_lists() {
    let s = Server::start().await;
    let claude_md = s.repo.join("CLAUDE.md");
    let file = s.ok("readFile", json!({ "cwd": s.repo, "path": claude_md })).await;
    assert_eq!(file["content"], "Use tabs for indentation.\n");
    assert_eq!(file["notUtf8"], false);
    let revision = file["revision"].as_str().unwrap().to_string();
    let saved = s
        .ok("saveFile", json!({ "cwd": s.repo, "path": "CLAUDE.md", "content": "Use spaces.\n", "revision": revision }))
        .await;
    assert_eq!(fs::read_to_string(&claude_md).unwrap(), "Use spaces.\n");
    assert_ne!(saved["revision"], revision.as_str());
    let (status, _) = s
        .call("saveFile", json!({ "cwd": s.repo, "path": "CLAUDE.md", "content": "stale", "revision": revision }))
        .await;
    assert_eq!(status, 409);

    let rule = s.ok("readFile", json!({ "cwd": s.repo, "path": ".claude/rules/style.md" })).await;
    assert_eq!(rule["content"], "Prefer small functions.\n");
    // A Latin-1 file is shown with replacement characters, and the editor is told so.
    fs::write(s.repo.join(".claude/rules/style.md"), b"Caf\xe9 au lait.\n").unwrap();
    let latin = s.ok("readFile", json!({ "cwd": s.repo, "path": ".claude/rules/style.md" })).await;
    assert_eq!((latin["content"].as_str(), latin["notUtf8"].as_bool()), (Some("Caf\u{fffd} au lait.\n"), Some(true)));
    let index = s.home.memdir_for(&s.repo).join("MEMORY.md");
    let empty = s.ok("readFile", json!({ "cwd": s.repo, "path": index })).await;
    assert_eq!(empty["revision"], "absent");

    let settings = s.home.config_home().join("settings.json");
    for path in [settings.to_string_lossy().to_string(), "../home/.claude/settings.json".to_string()] {
        let (status, body) = s.call("readFile", json!({ "cwd": s.repo, "path": path })).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("invalid_input")), "{path}: {body}");
        let (status, _) =
            s.call("saveFile", json!({ "cwd": s.repo, "path": path, "content": "{}", "revision": "absent" })).await;
        assert_eq!(status, 400);
    }
    assert!(fs::read_to_string(&settings).unwrap().contains("theme"));
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_toggles_keep_other_keys() {
    let s = Server::start().await;
    let before = s.ok("machineSettings", json!({})).await;
    assert_eq!(before["autoMemoryEnabled"], Value::Null);

    let written = s.ok("setAutoMemory", json!({ "on": false })).await;
    let path = s.home.config_home().join("settings.json");
    assert_eq!(written["path"].as_str().unwrap(), path.to_string_lossy());
    let text = fs::read_to_string(&path).unwrap();
    let value: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(value["autoMemoryEnabled"], false);
    assert_eq!(value["theme"], "dark");
    assert_eq!(value["model"], "opus");

    s.ok("setAutoDream", json!({ "on": true })).await;
    let after = s.ok("machineSettings", json!({})).await;
    assert_eq!(after["autoMemoryEnabled"], false);
    assert_eq!(after["autoDreamEnabled"], true);

    let (status, _) = s.call("setAutoMemory", json!({ "on": "yes" })).await;
    assert_eq!(status, 400);

    // With auto memory off, the context says so.
    let view = s.ok("context", json!({ "cwd": s.repo })).await;
    assert_eq!(view["autoMemory"]["enabled"], false);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn home_and_projects() {
    let s = Server::start().await;
    let home = s.ok("home", json!({})).await;
    assert_eq!(home["home"].as_str().unwrap(), s.home.home().to_string_lossy());
    assert_eq!(home["configHome"].as_str().unwrap(), s.home.config_home().to_string_lossy());
    assert_eq!(home["cwd"].as_str().unwrap(), s.repo.to_string_lossy());
    // An empty body is fine for methods without arguments.
    let resp = s
        .client
        .post(s.url("/api/projects"))
        .bearer_auth(&s.token)
        .header("Content-Type", "application/json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 200);
    let projects: Value = resp.json().await.unwrap();
    assert_eq!(projects, serde_json::to_value(s.mneme.projects().unwrap()).unwrap());
    assert_eq!(projects.as_array().unwrap().len(), 1, "{projects}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relative_cwd_is_taken_from_the_start_folder() {
    let s = Server::start().await;
    let view = s.ok("context", json!({ "cwd": ".", "date": DATE })).await;
    assert_eq!(view["block"].as_str().unwrap(), s.mneme.context(&s.request()).unwrap().block);
    s.stop().await;
}

/// Every route is an api operation and every api operation is a route: each name in the api's
/// list, in camelCase, reaches that operation's request parsing (a body that is no request is
/// refused as `invalid_input`, so nothing runs), and a name outside the list is `not_found`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_are_exactly_the_api_operations() {
    let s = Server::start().await;
    for name in mneme_api::ops::NAMES {
        let camel: String = name
            .split('_')
            .enumerate()
            .map(|(i, w)| if i == 0 { w.to_string() } else { w[..1].to_uppercase() + &w[1..] })
            .collect();
        let (status, body) = s.call(&camel, json!("not a request")).await;
        assert_eq!((status, body["code"].as_str()), (400, Some("invalid_input")), "{camel}: {body}");
    }
    for not_an_operation in ["fix_index", "planMergeMemory", "openInEditor", "reveal", "events2", "Home"] {
        let (status, body) = s.call(not_an_operation, json!({})).await;
        assert_eq!((status, body["code"].as_str()), (404, Some("not_found")), "{not_an_operation}: {body}");
    }
    s.stop().await;
}
