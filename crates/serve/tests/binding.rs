//! Where the server listens: the loopback only, and both loopbacks on its port, so another
//! local user cannot sit on [::1]:<port> and receive what a browser sends to `localhost`.

mod common;

use common::Server;
use std::io::{Read, Write};
use std::net::{Ipv6Addr, TcpStream};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_ipv6_loopback_on_the_same_port_is_held_too() {
    if std::net::TcpListener::bind((Ipv6Addr::LOCALHOST, 0)).is_err() {
        eprintln!("no IPv6 loopback on this machine: nobody can listen there; skipped");
        return;
    }
    let s = Server::start().await;
    let port = s.addr.port();
    assert!(s.addr.ip().is_loopback());
    // Before the fix this bind succeeded: any local user could take [::1]:<port> and get the
    // first request (token in its URL) of a browser that tries ::1 for `localhost` first.
    let squat = std::net::TcpListener::bind((Ipv6Addr::LOCALHOST, port));
    assert!(squat.is_err(), "[::1]:{port} was free for another process to listen on");
    // And it is this server there, with the same checks.
    let mut c = TcpStream::connect((Ipv6Addr::LOCALHOST, port)).unwrap();
    c.write_all(format!("GET / HTTP/1.1\r\nHost: localhost:{port}\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 200"), "{out}");
    let mut c = TcpStream::connect((Ipv6Addr::LOCALHOST, port)).unwrap();
    c.write_all(format!("GET / HTTP/1.1\r\nHost: evil.example:{port}\r\nConnection: close\r\n\r\n").as_bytes()).unwrap();
    let mut out = String::new();
    c.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 403"), "{out}");
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_port_whose_ipv6_twin_is_taken_is_refused_with_advice() {
    let Ok(squat) = std::net::TcpListener::bind((Ipv6Addr::LOCALHOST, 0)) else {
        eprintln!("no IPv6 loopback on this machine; skipped");
        return;
    };
    let port = squat.local_addr().unwrap().port();
    let (home, repo) = common::fixture();
    let opts = mneme_serve::ServeOptions { port, ui_dir: None, token: None, start_dir: Some(repo), scheduler: false, operation_patience: None };
    let err = mneme_serve::serve_until(common::engine(&home), opts, |_, _| panic!("must not start"), async {}).await.unwrap_err();
    let text = err.to_string();
    assert!(text.contains(&format!("[::1]:{port}")) && text.contains("--port"), "{text}");
}
