//! Issue 13's findings against `mneme serve`: the page carries the desktop app's
//! Content-Security-Policy, and a connection that trickles its headers is dropped.

mod common;

use common::{fixture, Server};
use std::fs;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_sends_the_desktop_apps_content_security_policy() {
    let (home, repo) = fixture();
    let ui = home.root.join("dist");
    fs::create_dir_all(&ui).unwrap();
    fs::write(ui.join("index.html"), "<!doctype html><title>Mneme UI</title>").unwrap();
    let s = Server::start_with(home, repo, Some(ui)).await;
    let page = s.client.get(s.url(&format!("/?token={}", s.token))).send().await.unwrap();
    let csp = page.headers()["content-security-policy"].to_str().unwrap().to_string();
    let directives: Vec<&str> = csp.split("; ").collect();
    // The desktop app's directives (tauri.conf.json), as a browser needs them.
    for d in [
        "default-src 'self'",
        "script-src 'self'",
        "style-src 'self'",
        "style-src-attr 'unsafe-inline'",
        "img-src 'self' data:",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'none'",
        "frame-src 'none'",
        "connect-src 'self'",
        "worker-src 'self'",
        "frame-ancestors 'none'",
    ] {
        assert!(directives.contains(&d), "{d:?} missing from {csp:?}");
    }
    assert!(!csp.contains("ipc:"), "{csp}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_connection_that_sends_its_headers_slowly_is_dropped() {
    let s = Server::start().await;
    let mut conn = tokio::net::TcpStream::connect(s.addr).await.unwrap();
    conn.write_all(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n").await.unwrap();
    let start = Instant::now();
    let mut buf = [0u8; 1024];
    // One header byte every 200 ms, never finishing: before the fix this stayed open for as
    // long as the client liked.
    let closed = tokio::time::timeout(Duration::from_secs(30), async {
        for b in b"X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa".iter().cycle() {
            if conn.write_all(&[*b]).await.is_err() {
                return;
            }
            tokio::select! {
                n = conn.read(&mut buf) => if matches!(n, Ok(0) | Err(_)) { return },
                () = tokio::time::sleep(Duration::from_millis(200)) => {}
            }
        }
    })
    .await;
    assert!(closed.is_ok(), "the slow-header connection was still open after 30 s");
    assert!(start.elapsed() < Duration::from_secs(15), "dropped after {:?}", start.elapsed());
    s.stop().await;
}
