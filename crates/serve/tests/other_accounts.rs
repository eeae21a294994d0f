//! Another account on the same machine can connect to 127.0.0.1 too. Its connections are
//! refused at once with a short answer saying whose server this is, so it cannot hold the
//! connection places (the UI's files need no token) and keep this account's page out.
//!
//! The clients run as `nobody` (uid 65534), which needs root; as any other user these tests
//! say so and pass without checking (CI runs them as root).

#![cfg(target_os = "linux")]

mod common;

use common::{fixture, Server};
use mneme_testsupport::accounts::{bash_as_nobody, root_or_skip, NOBODY};
use std::io::{BufRead, BufReader};
use std::time::Duration;

fn as_root() -> bool {
    root_or_skip("running a client as another account")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_account_is_told_whose_server_it_is_and_closed() {
    if !as_root() {
        return;
    }
    let s = Server::start().await;
    let port = s.addr.port();
    let child = bash_as_nobody(&format!("exec 3<>/dev/tcp/127.0.0.1/{port} && timeout 10 cat <&3"));
    let out = tokio::task::spawn_blocking(move || child.wait_with_output().unwrap()).await.unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "the server closed the connection (cat ended before its timeout): {text} {}", String::from_utf8_lossy(&out.stderr));
    assert!(text.starts_with("HTTP/1.1 403 Forbidden\r\n"), "{text}");
    assert!(text.contains(&format!("answers only programs run by the account that started it (uid 0); this request came from account uid {NOBODY}. Start your own with `mneme serve`.")), "{text}");
    // This account is still served.
    let home = s.client.get(s.url("/")).send().await.unwrap();
    assert!(home.status().is_success() || home.status().as_u16() == 404, "{}", home.status());
    s.stop().await;
}

/// Before, 128 connections from anyone, each asking for a large UI file and never reading
/// the answer, filled every place for up to 15 s each, and the page's new connections were
/// closed at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_accounts_unread_requests_do_not_keep_the_page_out() {
    if !as_root() {
        return;
    }
    let (home, repo) = fixture();
    let ui = home.root.join("dist");
    std::fs::create_dir_all(ui.join("assets")).unwrap();
    std::fs::write(ui.join("index.html"), "<!doctype html><title>Mneme UI</title>").unwrap();
    std::fs::write(ui.join("assets/big.js"), vec![b'x'; 8 << 20]).unwrap();
    let s = Server::start_with(home, repo, Some(ui)).await;
    let port = s.addr.port();
    let places = mneme_serve::MAX_CONNECTIONS + 20;
    let mut flood = bash_as_nobody(&format!(
        // Writing to a connection the server has already refused must not end the flood.
        "trap '' PIPE; for i in $(seq {places}); do exec {{fd}}<>/dev/tcp/127.0.0.1/{port} || exit 1; printf 'GET /assets/big.js HTTP/1.1\\r\\nHost: 127.0.0.1:{port}\\r\\n\\r\\n' >&$fd 2>/dev/null; done; echo ready; sleep 60"
    ));
    let stdout = flood.stdout.take().unwrap();
    let ready = tokio::task::spawn_blocking(move || BufReader::new(stdout).lines().next().map(|l| l.unwrap())).await.unwrap();
    assert_eq!(ready.as_deref(), Some("ready"), "the flood opened its connections");
    let page = tokio::time::timeout(Duration::from_secs(10), s.client.get(s.url("/")).send()).await.expect("answered while the flood holds its connections").expect("the page's connection is not closed");
    assert!(page.status().is_success(), "{}", page.status());
    assert!(page.text().await.unwrap().contains("Mneme UI"));
    flood.kill().unwrap();
    flood.wait().unwrap();
    s.stop().await;
}
