//! A local process flooding the server with connections: any local process may connect (the
//! UI's files need no token), and each connection costs the server a file descriptor and some
//! memory. At most `MAX_CONNECTIONS` are open at once; past it the oldest connection that has
//! not sent a whole request is closed to make room, or the new one is closed when every one is
//! serving. Real sockets on 127.0.0.1, the server on port 0.

mod common;

use common::{fixture, Server};
use mneme_serve::MAX_CONNECTIONS;
use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
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

/// Whether `c` is still open now (nothing to read, and not ended). Asked once the closes it
/// is compared with have been seen.
fn open_now(c: &mut TcpStream) -> bool {
    c.set_nonblocking(true).unwrap();
    let mut buf = [0u8; 16];
    let open = matches!(c.read(&mut buf), Err(e) if e.kind() == std::io::ErrorKind::WouldBlock);
    c.set_nonblocking(false).unwrap();
    open
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

/// Connections that are all serving (each has sent a request and waits, kept alive) are not
/// closed for a newcomer: the newcomer is closed at once instead, and once one of them ends its
/// place is free again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn when_every_connection_is_serving_a_new_one_is_closed_at_once() {
    let s = server_with_ui().await;
    let (addr, port) = (s.addr, s.addr.port());
    let held = tokio::task::spawn_blocking(move || {
        let mut held = Vec::new();
        for _ in 0..MAX_CONNECTIONS {
            let mut c = TcpStream::connect(addr).unwrap();
            c.write_all(format!("GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes()).unwrap();
            // Read the answer's head so the request is known to be served; the connection
            // then stays open (keep-alive).
            let mut head = Vec::new();
            let mut byte = [0u8; 1];
            while !head.ends_with(b"\r\n\r\n") {
                assert_eq!(c.read(&mut byte).unwrap(), 1, "the server answered");
                head.push(byte[0]);
            }
            assert!(head.starts_with(b"HTTP/1.1 200"), "{}", String::from_utf8_lossy(&head));
            held.push(c);
        }
        held
    })
    .await
    .unwrap();

    let mut held = tokio::task::spawn_blocking(move || {
        let mut newcomer = TcpStream::connect(addr).unwrap();
        assert!(closed_by_server(&mut newcomer), "past the cap, with every connection serving, a new one is closed");
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
