//! An https server on 127.0.0.1 whose certificate a test authority of its own signed
//! (`data/tls`: `ca.pem`, and `server.pem` for 127.0.0.1 and localhost, valid until 2126), for
//! tests of clients that must trust a company's authority (`NODE_EXTRA_CA_CERTS`).

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

/// The test authority's certificate (PEM).
pub fn test_ca() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/tls/ca.pem")
}

/// Starts a server answering each request with `reply(request bytes)` (a whole HTTP/1.1
/// response); returns its `https://127.0.0.1:PORT` address. It lives until the process ends.
pub fn https_server(reply: impl Fn(&[u8]) -> Vec<u8> + Send + Sync + 'static) -> String {
    use rustls::pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer};
    let data = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("data/tls");
    let certs = vec![CertificateDer::from_pem_file(data.join("server.pem")).expect("the test server certificate")];
    let key = PrivateKeyDer::from_pem_file(data.join("server.key")).expect("the test server key");
    let config = rustls::ServerConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .expect("TLS versions")
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .expect("the test certificate");
    let config = Arc::new(config);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
    let url = format!("https://{}", listener.local_addr().expect("the bound address"));
    let reply = Arc::new(reply);
    std::thread::spawn(move || {
        for tcp in listener.incoming().flatten() {
            let (config, reply) = (config.clone(), reply.clone());
            std::thread::spawn(move || {
                let Ok(conn) = rustls::ServerConnection::new(config) else { return };
                let mut tls = rustls::StreamOwned::new(conn, tcp);
                let Some(request) = read_request(&mut tls) else { return };
                let _ = tls.write_all(&reply(&request));
                tls.conn.send_close_notify();
                let _ = tls.flush();
            });
        }
    });
    url
}

/// One request: its headers, then as many body bytes as `content-length` says. `None` when
/// the client gave up (a failed handshake: it did not trust the certificate).
fn read_request(stream: &mut impl Read) -> Option<Vec<u8>> {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).ok()?;
        if n == 0 {
            return None;
        }
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got);
        if let Some(end) = text.find("\r\n\r\n") {
            let length = text[..end]
                .lines()
                .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length:").map(|v| v.trim().parse::<usize>().unwrap_or(0)))
                .unwrap_or(0);
            if got.len() >= end + 4 + length {
                return Some(got);
            }
        }
    }
}

/// A whole `200 OK` response carrying `body` as JSON.
pub fn json_response(body: &str) -> Vec<u8> {
    format!("HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}", body.len()).into_bytes()
}
