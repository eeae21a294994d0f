//! The real `mneme-server` binary, started and stopped as an operator would.

use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_mneme-server")
}

/// Runs `mneme-server --db <db> <args>` with `stdin`, returning (exit code, stdout, stderr).
pub fn run(db: &str, args: &[&str], stdin: &str) -> (i32, String, String) {
    let mut child = Command::new(bin())
        .arg("--db")
        .arg(db)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// A database with the team `acme`, the member `alice` of `acme/app`, and her token, all made
/// through the admin command line.
pub fn provision(db: &str) -> String {
    assert_eq!(run(db, &["admin", "create-team", "acme"], "").0, 0);
    let (code, _, err) = run(db, &["admin", "create-user", "alice", "--password-stdin"], "correct horse battery\n");
    assert_eq!(code, 0, "{err}");
    assert_eq!(run(db, &["admin", "grant", "alice", "acme/app"], "").0, 0);
    let (code, out, err) = run(db, &["admin", "token", "alice", "--expires-in", "86400"], "");
    assert_eq!(code, 0, "{err}");
    out.trim().to_string()
}

/// A `mneme-server serve` process on a free loopback port; its log lines arrive on `logs`.
pub struct ServerProcess {
    pub child: Child,
    pub addr: SocketAddr,
    pub logs: mpsc::Receiver<serde_json::Value>,
}

impl ServerProcess {
    pub fn start(db: &str) -> ServerProcess {
        let mut child = Command::new(bin())
            .args(["--db", db, "--log-format", "json", "serve", "--listen", "127.0.0.1:0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, logs) = mpsc::channel();
        // Drain the pipe on a thread so the server never blocks on a full one.
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let value = serde_json::from_str(&line).unwrap_or(serde_json::Value::String(line));
                if tx.send(value).is_err() {
                    break;
                }
            }
        });
        let mut server = ServerProcess { child, addr: "127.0.0.1:0".parse().unwrap(), logs };
        let listening = server.wait_for_log("listening");
        server.addr = listening["addr"].as_str().unwrap().parse().unwrap();
        server
    }

    /// The next log line whose message is `message` (earlier lines are skipped).
    pub fn wait_for_log(&mut self, message: &str) -> serde_json::Value {
        loop {
            // A generous bound only so that a broken server fails the test instead of hanging it.
            match self.logs.recv_timeout(Duration::from_secs(120)) {
                Ok(v) if v["message"] == message => return v,
                Ok(_) => {}
                Err(e) => panic!("the server never logged {message:?} ({e}); status: {:?}", self.child.try_wait()),
            }
        }
    }

    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}
