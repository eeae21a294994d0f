//! A raw HTTP/1.1 server on 127.0.0.1:0 that answers whatever the test says, for the clients
//! that must cope with a broken or hostile server (the team client's pull and sign-in, a server
//! that acknowledges pushes and loses them). One connection at a time, each answered once and
//! closed: no HTTP library stands between the test's bytes and the client.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};

/// Reads one request from `conn`: the head, then as much body as its Content-Length says (or
/// until the client closes).
pub fn read_request(conn: &mut TcpStream) -> String {
    let mut request = Vec::new();
    let mut buf = [0u8; 64 * 1024];
    while let Ok(n) = conn.read(&mut buf) {
        if n == 0 {
            break;
        }
        request.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&request);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0)))
                .unwrap_or(0);
            if request.len() >= end + 4 + length {
                break;
            }
        }
    }
    String::from_utf8_lossy(&request).into_owned()
}

/// Serves every connection with `answer(request head and body)`, a whole HTTP response, on a
/// thread of its own. Returns the base URL (`http://127.0.0.1:PORT`) and the requests seen, in
/// order.
pub fn serve(answer: impl Fn(&str) -> Vec<u8> + Send + Sync + 'static) -> (String, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    std::thread::spawn(move || {
        for conn in listener.incoming() {
            let Ok(mut conn) = conn else { continue };
            let text = read_request(&mut conn);
            log.lock().unwrap().push(text.clone());
            let _ = conn.write_all(&answer(&text));
        }
    });
    (url, seen)
}

/// A JSON response with `status` (`"200 OK"`) that closes the connection.
pub fn json(status: &str, body: &str) -> Vec<u8> {
    format!("HTTP/1.1 {status}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).into_bytes()
}
