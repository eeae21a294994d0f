//! The static UI (with the single-page fallback and the "not built" page) and the live
//! event stream.

mod common;

use common::{fixture, Server};
use serde_json::json;
use std::fs;
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_the_built_ui_with_a_single_page_fallback() {
    let (home, repo) = fixture();
    let ui = home.root.join("dist");
    fs::create_dir_all(ui.join("assets")).unwrap();
    fs::write(ui.join("index.html"), "<!doctype html><title>Mneme UI</title>").unwrap();
    fs::write(ui.join("assets/app.js"), "console.log(1)").unwrap();
    fs::write(ui.join(".env"), "do not serve").unwrap();
    home.write("secret.txt", "do not serve");
    let s = Server::start_with(home, repo, Some(ui)).await;

    // The page load carries the token in its URL, but static files need none.
    let page = s.client.get(s.url(&format!("/?token={}", s.token))).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    assert!(page.headers()["content-type"].to_str().unwrap().starts_with("text/html"));
    assert_eq!(page.headers()["referrer-policy"], "no-referrer", "the token never leaks as a Referer");
    assert_eq!(page.headers()["x-dns-prefetch-control"], "off", "a preview's link hosts are not looked up unasked");
    assert!(page.text().await.unwrap().contains("Mneme UI"));

    let js = s.client.get(s.url("/assets/app.js")).send().await.unwrap();
    assert_eq!(js.headers()["content-type"], "text/javascript; charset=utf-8");
    assert_eq!(js.headers()["cache-control"], "no-cache", "assets are revalidated, never served stale");
    assert_eq!(js.headers()["x-content-type-options"], "nosniff");
    assert_eq!(js.text().await.unwrap(), "console.log(1)");

    for spa in ["/memories/testing", "/context", "/assets", "/../secret.txt", "/%2e%2e/secret.txt", "/.env", "/%2eenv"] {
        let resp = s.client.get(s.url(spa)).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{spa}");
        assert!(resp.text().await.unwrap().contains("Mneme UI"), "{spa} falls back to index.html");
    }
    let api = s.client.get(s.url("/api/nothing/here")).bearer_auth(&s.token).send().await.unwrap();
    assert_eq!(api.status().as_u16(), 404, "unknown /api paths never fall back to the page");
    assert_eq!(api.json::<serde_json::Value>().await.unwrap()["code"], "not_found");
    let get = s.client.get(s.url("/api/context")).bearer_auth(&s.token).send().await.unwrap();
    assert_eq!(get.status().as_u16(), 405);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_built_ui_the_page_says_how_to_build_it_and_the_api_works() {
    let s = Server::start().await;
    let page = s.client.get(s.url("/")).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    let text = page.text().await.unwrap();
    assert!(text.contains("npm run build:ui"), "{text}");
    let spa = s.client.get(s.url("/memories")).send().await.unwrap().text().await.unwrap();
    assert!(spa.contains("npm run build:ui"));
    s.ok("home", json!({})).await;
    s.stop().await;
}

/// Reads the event stream until `want` appears in it or `deadline` passes.
async fn read_until(resp: &mut reqwest::Response, want: &str, deadline: tokio::time::Instant) -> String {
    let mut seen = String::new();
    while !seen.contains(want) {
        match tokio::time::timeout_at(deadline, resp.chunk()).await {
            Ok(Ok(Some(bytes))) => seen.push_str(&String::from_utf8_lossy(&bytes)),
            Ok(other) => panic!("the stream ended: {other:?}; got so far: {seen:?}"),
            Err(_) => panic!("nothing naming {want:?} in time; got: {seen:?}"),
        }
    }
    seen
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_written_into_the_memory_folder_is_announced() {
    let s = Server::start().await;
    let mut events = s.client.get(s.url("/api/events")).bearer_auth(&s.token).send().await.unwrap();
    assert_eq!(events.status().as_u16(), 200);
    assert!(events.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    let start = tokio::time::Instant::now();
    read_until(&mut events, ": connected", start + Duration::from_secs(5)).await;

    let file = s.home.memdir_for(&s.repo).join("from-claude.md");
    fs::write(&file, mneme_testsupport::topic("From Claude", "written behind Mneme's back", "user", "Hi.")).unwrap();
    let seen = read_until(&mut events, "from-claude.md", start + Duration::from_secs(5)).await;
    let line = seen.lines().skip_while(|l| *l != "event: changed").nth(1).expect("a data line follows the event line");
    let data: serde_json::Value = serde_json::from_str(line.strip_prefix("data: ").unwrap()).unwrap();
    let paths: Vec<&str> = data["paths"].as_array().unwrap().iter().filter_map(|p| p.as_str()).collect();
    assert!(paths.contains(&file.to_str().unwrap()), "{paths:?}");

    // Transcripts change constantly and are not shown, so they are not announced: written just
    // before a memory, the transcript lands in the same debounced batch or an earlier one, and
    // everything streamed up to the memory's event must leave it out.
    fs::write(s.home.memdir_for(&s.repo).parent().unwrap().join("session.jsonl"), "{}\n").unwrap();
    let marker = s.home.memdir_for(&s.repo).join("marker.md");
    fs::write(&marker, "m").unwrap();
    let later = read_until(&mut events, "marker.md", tokio::time::Instant::now() + Duration::from_secs(5)).await;
    assert!(!later.contains("session.jsonl"), "{later}");
    // Stopping the server ends the open stream instead of waiting for it.
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_adds_a_memory_folder_set_outside_the_config_home() {
    let (home, repo) = fixture();
    let elsewhere = home.root.join("elsewhere-memory");
    fs::create_dir_all(&elsewhere).unwrap();
    home.write(repo.join(".claude/settings.local.json"), &format!("{{\"autoMemoryDirectory\": {:?}}}", elsewhere));
    let s = Server::start_with(home, repo, None).await;
    let watching = s.ok("watch", json!({ "cwd": s.repo })).await;
    let dirs = watching["watching"].to_string();
    assert!(dirs.contains("elsewhere-memory"), "{dirs}");

    let mut events = s.client.get(s.url("/api/events")).bearer_auth(&s.token).send().await.unwrap();
    let start = tokio::time::Instant::now();
    read_until(&mut events, ": connected", start + Duration::from_secs(5)).await;
    fs::write(elsewhere.join("note.md"), "x").unwrap();
    read_until(&mut events, "note.md", start + Duration::from_secs(5)).await;
    fs::write(s.repo.join("CLAUDE.md"), "Changed.\n").unwrap();
    read_until(&mut events, "CLAUDE.md", start + Duration::from_secs(5)).await;
    s.stop().await;
}
