//! A client that asks for an answer and never reads it: the UI's files need no token, so any
//! local process can do this. Its connection must not live forever, nor keep the server
//! running after Ctrl-C.
//!
//! The server runs in the test's runtime with its clock paused (`start_paused`): the runtime
//! moves the clock on to the next timer only when every task waits, so the server's write
//! stall limit, shutdown grace and the test's own waits pass in no time, but only once the
//! server's write to the client that does not read is truly stuck (a blocking task, such as
//! the test's own reads, holds the clock too).

mod common;

use common::{fixture, Server};
use std::fs;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

/// A UI folder holding a file far larger than the loopback socket buffers, so that a client
/// that does not read leaves the server's write pending.
const BIG: usize = 64 << 20;

async fn server_with_a_big_file() -> Server {
    let (home, repo) = fixture();
    let ui = home.root.join("dist");
    fs::create_dir_all(ui.join("assets")).unwrap();
    fs::write(ui.join("index.html"), "<!doctype html><title>Mneme UI</title>").unwrap();
    fs::write(ui.join("assets/big.js"), vec![b'x'; BIG]).unwrap();
    Server::start_with(home, repo, Some(ui)).await
}

fn ask_and_never_read(s: &Server) -> TcpStream {
    let mut c = TcpStream::connect(s.addr).unwrap();
    let port = s.addr.port();
    c.write_all(format!("GET /assets/big.js HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n").as_bytes()).unwrap();
    c
}

#[tokio::test(start_paused = true)]
async fn a_client_that_stops_reading_does_not_hold_off_shutdown() {
    let s = server_with_a_big_file().await;
    let _stalled = ask_and_never_read(&s);
    // On the paused clock: the runtime runs the server until it is stuck writing, then moves
    // time on, so this costs no real time and waits for the server to be idle.
    tokio::time::sleep(Duration::from_millis(500)).await;
    let start = tokio::time::Instant::now();
    // Before the fix, graceful shutdown waited for this answer forever (`stop` gives up at 5 s,
    // on the paused clock too).
    s.stop().await;
    assert!(start.elapsed() < Duration::from_secs(5), "stopped after {:?}", start.elapsed());
}

#[tokio::test(start_paused = true)]
async fn a_client_that_stops_reading_is_dropped() {
    let s = server_with_a_big_file().await;
    let mut stalled = ask_and_never_read(&s);
    // Past the server's 15 s write-stall limit (on the paused clock, so no real time: the
    // limit is the thing under test); before the fix the answer waited as long as the client
    // liked, and reading now would bring the whole file.
    tokio::time::sleep(Duration::from_secs(18)).await;
    // Read on a blocking thread: the runtime's one thread stays free for the server, which
    // (before the fix) would go on writing the whole file.
    let got = tokio::task::spawn_blocking(move || {
        stalled.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut got = 0usize;
        let mut buf = vec![0u8; 1 << 20];
        loop {
            match stalled.read(&mut buf) {
                Ok(0) => return got,
                Ok(n) => got += n,
                Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => return got,
                Err(e) => panic!("the connection neither ended nor finished: {e} after {got} bytes"),
            }
        }
    })
    .await
    .unwrap();
    assert!(got < BIG, "the whole file came through ({got} bytes): the stalled answer was kept");
    // The server still answers everyone else.
    let page = s.client.get(s.url("/")).send().await.unwrap();
    assert_eq!(page.status().as_u16(), 200);
    s.stop().await;
}
