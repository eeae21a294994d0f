//! Every request is checked before it reaches the engine: token, Host, Origin, content type.

mod common;

use common::Server;
use serde_json::json;
use std::io::{Read, Write};
use std::net::TcpStream;

/// Sends `request` verbatim over a fresh connection and returns the status code and the
/// whole response, so headers a client library would fix up (Host) reach the server as is.
fn raw(server: &Server, request: &str) -> (u16, String) {
    let mut s = TcpStream::connect(server.addr).unwrap();
    s.write_all(request.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out.split(' ').nth(1).and_then(|c| c.parse().ok()).unwrap_or(0);
    (status, out)
}

fn post_home(host: &str, token: &str, extra: &str) -> String {
    format!(
        "POST /api/home HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\nContent-Type: application/json\r\n\
         {extra}Content-Length: 2\r\nConnection: close\r\n\r\n{{}}"
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_token_is_required_on_every_api_call() {
    let s = Server::start().await;
    let no_token = s.client.post(s.url("/api/home")).json(&json!({})).send().await.unwrap();
    assert_eq!(no_token.status().as_u16(), 401);
    let body: serde_json::Value = no_token.json().await.unwrap();
    assert_eq!(body["code"], "unauthorized");

    let wrong = s.client.post(s.url("/api/home")).bearer_auth("0".repeat(64)).json(&json!({})).send().await.unwrap();
    assert_eq!(wrong.status().as_u16(), 401);
    let prefix = s.client.post(s.url("/api/home")).bearer_auth(&s.token[..10]).json(&json!({})).send().await.unwrap();
    assert_eq!(prefix.status().as_u16(), 401);

    // Never in the URL (DevTools' sanitized HAR exports, net logs and proxies keep URLs), not
    // even for the event stream, which took `?token=` before the page read it with `fetch`.
    let in_url = s.client.post(s.url(&format!("/api/home?token={}", s.token))).json(&json!({})).send().await.unwrap();
    assert_eq!(in_url.status().as_u16(), 401);
    let events_in_url = s.client.get(s.url(&format!("/api/events?token={}", s.token))).send().await.unwrap();
    assert_eq!(events_in_url.status().as_u16(), 401, "the event stream's token belongs in the header too");
    // Nor from a cookie: cookies ignore ports, so another server on localhost could set one.
    for path in ["/api/events", "/api/home"] {
        let cookie = s
            .client
            .post(s.url(path))
            .header("Cookie", format!("token={0}; mneme.token={0}", s.token))
            .json(&json!({}))
            .send()
            .await
            .unwrap();
        assert_eq!(cookie.status().as_u16(), 401, "{path}");
    }

    let events = s.client.get(s.url("/api/events")).send().await.unwrap();
    assert_eq!(events.status().as_u16(), 401);
    let events = s.client.get(s.url("/api/events")).bearer_auth(&s.token).send().await.unwrap();
    assert_eq!(events.status().as_u16(), 200);
    drop(events);

    let right = s.post("home", json!({})).send().await.unwrap();
    assert_eq!(right.status().as_u16(), 200);
    assert_eq!(s.token.len(), 64, "32 random bytes in hex");
    assert!(s.token.bytes().all(|b| b.is_ascii_hexdigit()));

    // The token is per run: a second server has another.
    let other = Server::start().await;
    assert_ne!(other.token, s.token);
    other.stop().await;
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_host_headers_are_refused() {
    let s = Server::start().await;
    let port = s.addr.port();
    let (status, body) = raw(&s, &post_home(&format!("evil.com:{port}"), &s.token, ""));
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("\"code\":\"forbidden\""), "{body}");
    // The static UI is refused too: a rebound page must not even load it.
    let (status, _) = raw(&s, &format!("GET / HTTP/1.1\r\nHost: evil.com:{port}\r\nConnection: close\r\n\r\n"));
    assert_eq!(status, 403);
    let (status, _) = raw(&s, &post_home("127.0.0.1", &s.token, ""));
    assert_eq!(status, 403, "the port is part of the check");
    let (status, _) = raw(&s, "GET / HTTP/1.0\r\n\r\n");
    assert_eq!(status, 403, "no Host at all");

    for host in [format!("127.0.0.1:{port}"), format!("localhost:{port}")] {
        let (status, body) = raw(&s, &post_home(&host, &s.token, ""));
        assert_eq!(status, 200, "{host}: {body}");
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn foreign_origins_are_refused() {
    let s = Server::start().await;
    let port = s.addr.port();
    for origin in ["http://evil.com", "null", &format!("http://127.0.0.1:{}", port + 1), "https://localhost"] {
        let resp = s.post("home", json!({})).header("Origin", origin).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 403, "{origin}");
    }
    for origin in [format!("http://127.0.0.1:{port}"), format!("http://localhost:{port}")] {
        let resp = s.post("home", json!({})).header("Origin", &origin).send().await.unwrap();
        assert_eq!(resp.status().as_u16(), 200, "{origin}");
        assert!(
            resp.headers().keys().all(|k| !k.as_str().starts_with("access-control-")),
            "no CORS headers: {:?}",
            resp.headers()
        );
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn posts_must_be_json() {
    let s = Server::start().await;
    for ct in ["text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"] {
        let resp = s
            .client
            .post(s.url("/api/setAutoMemory"))
            .bearer_auth(&s.token)
            .header("Content-Type", ct)
            .body(r#"{"on":false}"#)
            .send()
            .await
            .unwrap();
        assert_eq!(resp.status().as_u16(), 415, "{ct}");
    }
    let resp =
        s.client.post(s.url("/api/setAutoMemory")).bearer_auth(&s.token).body(r#"{"on":false}"#).send().await.unwrap();
    assert_eq!(resp.status().as_u16(), 415, "no content type");
    let settings = std::fs::read_to_string(s.home.config_home().join("settings.json")).unwrap();
    assert!(!settings.contains("autoMemoryEnabled"), "nothing was written: {settings}");

    let ok = s
        .client
        .post(s.url("/api/home"))
        .bearer_auth(&s.token)
        .header("Content-Type", "application/json; charset=utf-8")
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(ok.status().as_u16(), 200);
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_methods_and_bad_bodies_answer_with_json_errors() {
    let s = Server::start().await;
    let (status, body) = s.call("dropTables", json!({})).await;
    assert_eq!((status, body["code"].as_str()), (404, Some("not_found")), "{body}");
    assert!(body["message"].as_str().unwrap().contains("dropTables"));

    let (status, body) = s.call("memory", json!({ "cwd": s.repo })).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_input")), "missing field: {body}");

    let resp = s
        .client
        .post(s.url("/api/context"))
        .bearer_auth(&s.token)
        .header("Content-Type", "application/json")
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(resp.status().as_u16(), 400);

    let get = s.client.get(s.url("/api/context")).bearer_auth(&s.token).send().await.unwrap();
    assert_eq!(get.status().as_u16(), 405, "API methods are POST only");
    s.stop().await;
}
