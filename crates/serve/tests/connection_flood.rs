//! A local process flooding the server with connections: any local process may connect (the
//! UI's files need no token), and each connection costs the server a file descriptor and some
//! memory. At most `MAX_CONNECTIONS` are open at once; past it one is closed to make room: the
//! oldest that has not sent a whole request, else the oldest kept-alive one idle between
//! requests. One whose answer is still being sent (the event stream for as long as it lives)
//! is never closed for a newcomer; when every one has a request in flight the new one is closed
//! instead. Real sockets on 127.0.0.1, the server on port 0.

mod common;

use common::{fixture, Server};
use mneme_serve::MAX_CONNECTIONS;
use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

/// How long a read waits to see whether the server closed a connection. The server closes an
/// evicted one at once; it would close a silent one on its own only after its 10 s header
/// limit, so a close seen within this time is the cap's doing.
const CLOSE_SEEN_WITHIN: Duration = Duration::from_secs(5);

async fn server_with_ui() -> Server {
    let (home, repo) = fixture();
    let ui = home.root.join("dist");
    fs::create_dir_all(&ui).unwrap();
    fs::write(ui.join("index.html"), "<!doctype html><title>Mneme UI</title>").unwrap();
    Server::start_with(home, repo, Some(ui)).await
}

/// Whether the server has closed `c` (end of stream or reset) rather than left it open.
fn closed_by_server(c: &mut TcpStream) -> bool {
    c.set_read_timeout(Some(CLOSE_SEEN_WITHIN)).unwrap();
    let mut buf = [0u8; 1024];
    loop {
        match c.read(&mut buf) {
            Ok(0) => return true,
            // An answer (a request was sent on it): keep reading to its end or a timeout.
            Ok(_) => continue,
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return true,
            Err(e) if matches!(e.kind(), std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut) => return false,
            Err(e) => panic!("reading a flooded connection: {e}"),
        }
    }
}

/// Whether `c` is still open now (not ended; whatever it has been sent is read past, as an
/// event stream may have sent a keep-alive comment). Asked once the closes it is compared
/// with have been seen.
fn open_now(c: &mut TcpStream) -> bool {
    c.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 1024];
    let open = loop {
        match c.read(&mut buf) {
            Ok(0) => break false,
            Ok(_) => continue,
            Err(e) => break e.kind() == std::io::ErrorKind::WouldBlock,
        }
    };
    c.set_nonblocking(false).unwrap();
    open
}

/// Reads an answer's head from `c` (one byte at a time, so nothing after it is taken).
fn read_head(c: &mut TcpStream) -> String {
    let mut head = Vec::new();
    let mut byte = [0u8; 1];
    while !head.ends_with(b"\r\n\r\n") {
        assert_eq!(c.read(&mut byte).unwrap(), 1, "the server answered");
        head.push(byte[0]);
    }
    String::from_utf8(head).unwrap()
}

/// A connection that asked for the page, kept alive, and read the whole answer: it now sits
/// idle between requests, as a browser's pooled connections do, or a local process holding
/// places.
fn idle_kept_alive(addr: SocketAddr) -> TcpStream {
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nConnection: keep-alive\r\n\r\n", addr.port()).as_bytes()).unwrap();
    let head = read_head(&mut c);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    let length = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|n| n.trim().parse::<usize>().unwrap()))
        .expect("the page is sent with its length");
    let mut body = vec![0u8; length];
    c.read_exact(&mut body).unwrap();
    assert!(String::from_utf8_lossy(&body).contains("Mneme UI"));
    c
}

/// A connection streaming `/api/events`, as the page keeps one, with the stream's first
/// comment read.
fn event_stream(addr: SocketAddr, token: &str) -> TcpStream {
    let mut c = TcpStream::connect(addr).unwrap();
    c.write_all(format!("GET /api/events HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nAuthorization: Bearer {token}\r\n\r\n", addr.port()).as_bytes()).unwrap();
    let head = read_head(&mut c);
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    read_until(&mut c, ": connected");
    c
}

/// Reads `c` until `want` has come (allowing up to 20 s: the watcher batches changes); panics
/// when the connection ends first.
fn read_until(c: &mut TcpStream, want: &str) -> String {
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let mut seen = String::new();
    let mut buf = [0u8; 4096];
    while !seen.contains(want) {
        match c.read(&mut buf) {
            Ok(0) => panic!("the connection was closed before {want:?} came; got: {seen:?}"),
            Ok(n) => seen.push_str(&String::from_utf8_lossy(&buf[..n])),
            Err(e) => panic!("waiting for {want:?}: {e}; got: {seen:?}"),
        }
    }
    seen
}

/// A thousand connections that send nothing (half-open, as a flood would hold them): the
/// server keeps at most `MAX_CONNECTIONS`, closing the oldest silent ones as new ones come, and
/// the page still gets its answers after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn silent_connections_past_the_cap_are_closed_oldest_first_and_the_page_still_loads() {
    let s = server_with_ui().await;
    let addr = s.addr;
    let flood = 1_000;
    let mut conns = tokio::task::spawn_blocking(move || (0..flood).map(|_| TcpStream::connect(addr).unwrap()).collect::<Vec<_>>()).await.unwrap();

    // The page, after the flood: its connection takes the place of a silent one.
    let page = s.client.get(s.url("/")).send().await.expect("the page loads during a flood");
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("Mneme UI"));
    let (status, _) = s.call("home", serde_json::json!({})).await;
    assert_eq!(status, 200, "an API call goes through too");

    // At most the cap are open: the oldest silent ones were closed to make room (the newest,
    // which nothing newer displaced, are still open). Without the cap, every one opened in the
    // last 10 s would be, until its header limit ran out. Closes take a moment to arrive.
    tokio::task::spawn_blocking(move || {
        let mut open = flood;
        for _ in 0..30 {
            open = conns.iter_mut().map(open_now).filter(|o| *o).count();
            if open <= MAX_CONNECTIONS {
                break;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        assert!(open <= MAX_CONNECTIONS, "{open} of {flood} silent connections are open, over the cap of {MAX_CONNECTIONS}");
        for (i, c) in conns[flood - 10..].iter_mut().enumerate() {
            assert!(open_now(c), "silent connection {} of {flood} was closed: only the oldest are", flood - 10 + i);
        }
        assert!(closed_by_server(&mut conns[0]), "the oldest is closed");
    })
    .await
    .unwrap();
    s.stop().await;
}

/// `MAX_CONNECTIONS` kept-alive connections that each asked for the page once and now sit
/// idle (any local process can hold them): they are not serving anything, so the page still
/// gets in, taking the place of the oldest. Before, having sent a request counted as serving
/// forever, and every new connection was refused until the server's own timeouts closed them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_kept_alive_connections_past_the_cap_make_room_for_the_page() {
    let s = server_with_ui().await;
    let addr = s.addr;
    let mut held = tokio::task::spawn_blocking(move || (0..MAX_CONNECTIONS).map(|_| idle_kept_alive(addr)).collect::<Vec<_>>()).await.unwrap();

    let page = s.client.get(s.url("/")).send().await.expect("the page loads while every place holds an idle kept-alive connection");
    assert_eq!(page.status(), 200);
    assert!(page.text().await.unwrap().contains("Mneme UI"));
    let (status, _) = s.call("home", serde_json::json!({})).await;
    assert_eq!(status, 200, "an API call goes through too");

    tokio::task::spawn_blocking(move || {
        assert!(closed_by_server(&mut held[0]), "the oldest idle connection is closed to make room");
        let open = held.iter_mut().map(open_now).filter(|o| *o).count();
        assert!(open < MAX_CONNECTIONS, "all {open} idle connections are still open beside the page's");
    })
    .await
    .unwrap();
    s.stop().await;
}

/// The page's event stream is a request in flight for as long as it lives, however old: a
/// flood of idle kept-alive and silent connections takes other places, never its, and it
/// still announces changes after. The page's next request gets in too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_event_stream_is_not_closed_for_a_flood_of_idle_and_silent_connections() {
    let s = server_with_ui().await;
    let (addr, token) = (s.addr, s.token.clone());
    let (mut events, mut idle, silent) = tokio::task::spawn_blocking(move || {
        // The stream is the oldest connection: the first a rule preferring old ones would take.
        let events = event_stream(addr, &token);
        let idle = (1..MAX_CONNECTIONS).map(|_| idle_kept_alive(addr)).collect::<Vec<_>>();
        let silent = (0..300).map(|_| TcpStream::connect(addr).unwrap()).collect::<Vec<_>>();
        (events, idle, silent)
    })
    .await
    .unwrap();

    let page = s.client.get(s.url("/")).send().await.expect("the page loads during the flood");
    assert_eq!(page.status(), 200);

    let file = s.home.memdir_for(&s.repo).join("after-the-flood.md");
    fs::write(&file, "x").unwrap();
    tokio::task::spawn_blocking(move || {
        read_until(&mut events, "after-the-flood.md");
        assert!(closed_by_server(&mut idle[0]), "the oldest idle kept-alive connection made room instead");
        drop(silent);
    })
    .await
    .unwrap();
    s.stop().await;
}

/// Connections that all have a request in flight (each streams events, as the page's does)
/// are not closed for a newcomer: the newcomer is closed at once instead, and once one of them
/// ends its place is free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_connection_has_a_request_in_flight_a_new_one_is_closed_at_once() {
    let s = server_with_ui().await;
    let (addr, token) = (s.addr, s.token.clone());
    let mut held = tokio::task::spawn_blocking(move || (0..MAX_CONNECTIONS).map(|_| event_stream(addr, &token)).collect::<Vec<_>>()).await.unwrap();

    let mut held = tokio::task::spawn_blocking(move || {
        let mut newcomer = TcpStream::connect(addr).unwrap();
        assert!(closed_by_server(&mut newcomer), "past the cap, with every connection streaming, a new one is closed");
        for c in held.iter_mut() {
            assert!(open_now(c), "a streaming connection was closed for a newcomer");
        }
        held
    })
    .await
    .unwrap();

    // One of them ends: its place is free, and the page gets in.
    held.truncate(MAX_CONNECTIONS - 1);
    let mut answered = false;
    for _ in 0..50 {
        if let Ok(r) = s.client.get(s.url("/")).send().await {
            answered = r.status() == 200;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(answered, "a freed place takes a new connection");
    drop(held);
    s.stop().await;
}
