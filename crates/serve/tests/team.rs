//! The team methods over real HTTP: `teamStatus` is the engine's answer, the server address is
//! saved, and the team server's absence and refusals come back with their own codes and
//! statuses (never 401/403, which the page reads as its own token being refused). Sync against
//! a real team server is covered in `crates/api/tests/team.rs` and the browser end-to-end run.

mod common;

use common::Server;
use mneme_testsupport::git;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn team_status_server_setting_and_errors() {
    let s = Server::start().await;
    git(&s.repo, &["remote", "add", "origin", "https://github.com/acme/shop.git"]);

    let status = s.ok("teamStatus", json!({ "cwd": s.repo })).await;
    assert_eq!(status, serde_json::to_value(s.mneme.team_status(&s.request()).unwrap()).unwrap());
    assert_eq!(status["repo"], "acme/shop");
    assert_eq!(status["server"]["serverUrl"], serde_json::Value::Null);
    assert_eq!(status["teamDir"], json!(s.home.memdir_for(&s.repo).join("team")));

    let (code, body) = s.call("teamPull", json!({ "cwd": s.repo })).await;
    assert_eq!((code, body["code"].as_str()), (400, Some("invalid_input")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("Team → Server"), "{body}");

    // A server address nobody answers at: saved, then sign-in says it cannot reach it.
    let refused = mneme_testsupport::refused_port();
    let url = format!("http://{}", refused.addr);
    let saved = s.ok("setTeamServer", json!({ "url": format!("{url}/") })).await;
    assert_eq!((saved["serverUrl"].as_str(), saved["source"].as_str()), (Some(url.as_str()), Some("setting")), "{saved}");
    let (code, body) = s.call("teamSignIn", json!({})).await;
    assert_eq!((code, body["code"].as_str()), (503, Some("unavailable")), "{body}");
    assert!(body["message"].as_str().unwrap().contains(&url), "{body}");

    let (code, body) = s.call("teamSignInPoll", json!({ "id": "0123456789abcdef" })).await;
    assert_eq!((code, body["code"].as_str()), (404, Some("not_found")), "{body}");
    let (code, body) = s.call("setTeamServer", json!({ "url": "team.example.com" })).await;
    assert_eq!((code, body["code"].as_str()), (400, Some("invalid_input")), "{body}");
    let cleared = s.ok("setTeamServer", json!({ "url": null })).await;
    assert_eq!(cleared["serverUrl"], serde_json::Value::Null);
    s.stop().await;
}
