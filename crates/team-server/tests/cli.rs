//! The `mneme-server` binary: admin commands and their errors, and a graceful stop on SIGTERM
//! that still answers the request in flight.

mod common;

use common::process::{provision, run, ServerProcess};
use common::{encode_uri_component, REPO};
use mneme_team::wire::{PutResponse, TeamMemoryData};
use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::Command;

/// The commands that take access away, list sign-ins and purge, through the real binary.
#[test]
fn admin_commands_take_access_away_and_purge() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:{}", dir.path().join("team.db").display());
    provision(&db);
    let (code, out, _) = run(&db, &["admin", "sign-ins", "alice"], "");
    assert_eq!(code, 0);
    assert!(out.starts_with("alice\tadmin-token\tsigned in "), "{out}");
    let (code, _, err) = run(&db, &["admin", "token", "alice", "--expires-in", "2678400"], "");
    assert_eq!(code, 1);
    assert!(err.contains("at most 30 days"), "{err}");
    let (code, out, _) = run(&db, &["admin", "revoke-tokens", "alice"], "");
    assert_eq!((code, out.trim()), (0, "Ended 1 live sign-in(s) of alice."));
    assert_eq!(run(&db, &["admin", "disable-user", "alice"], "").0, 0);
    let (code, _, err) = run(&db, &["admin", "token", "alice"], "");
    assert_eq!(code, 1);
    assert!(err.contains("enable-user"), "{err}");
    assert_eq!(run(&db, &["admin", "enable-user", "alice"], "").0, 0);
    let (code, out, _) = run(&db, &["admin", "revoke-grant", "alice", "acme/app"], "");
    assert_eq!((code, out.trim()), (0, "alice no longer has access to acme/app."));
    let (code, _, err) = run(&db, &["admin", "revoke-grant", "alice", "acme/app"], "");
    assert_eq!(code, 1);
    assert!(err.contains("nothing to revoke"), "{err}");
    let (code, _, err) = run(&db, &["admin", "purge", "acme/app", "nope.md"], "");
    assert_eq!(code, 1);
    assert!(err.contains("There is no entry \"nope.md\" to purge."), "{err}");
}

#[test]
fn admin_commands_say_what_to_do_when_they_cannot() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:{}", dir.path().join("team.db").display());

    let (code, _, err) = run(&db, &["admin", "grant", "alice", "acme/app"], "");
    assert_eq!(code, 1);
    assert_eq!(err.trim(), "mneme-server: There is no user \"alice\". Create it first with `mneme-server admin create-user`.");
    let (code, _, err) = run(&db, &["admin", "create-user", "alice", "--password-stdin"], "short\n");
    assert_eq!(code, 1);
    assert!(err.contains("at least 8 characters"), "{err}");
    let (code, _, _) = run(&db, &["admin", "create-user", "alice", "--password-stdin"], "long enough\n");
    assert_eq!(code, 0);
    let (code, _, err) = run(&db, &["admin", "grant", "alice", "acme/app"], "");
    assert_eq!(code, 1);
    assert!(err.contains("There are no teams yet"), "{err}");
    assert_eq!(run(&db, &["admin", "create-team", "acme"], "").0, 0);
    assert_eq!(run(&db, &["admin", "create-team", "beta"], "").0, 0);
    let (code, _, err) = run(&db, &["admin", "create-team", "acme"], "");
    assert_eq!(code, 1);
    assert!(err.contains("The team \"acme\" already exists."), "{err}");
    // With two teams a new repository needs --team.
    let (code, _, err) = run(&db, &["admin", "grant", "alice", "acme/app"], "");
    assert_eq!(code, 1);
    assert!(err.contains("--team"), "{err}");
    let (code, out, _) = run(&db, &["admin", "grant", "alice", "acme/app", "--team", "acme", "--lead"], "");
    assert_eq!(code, 0);
    assert_eq!(out.trim(), "alice is now a lead of acme/app.");
    let (code, _, err) = run(&db, &["admin", "grant", "alice", "github.com/acme/app", "--team", "acme"], "");
    assert_eq!(code, 1);
    assert!(err.contains("is not a repository name"), "{err}");
    let (code, _, err) = run(&db, &["admin", "set-max-entries", "acme/nope", "5"], "");
    assert_eq!(code, 1);
    assert!(err.contains("There is no repository \"acme/nope\""), "{err}");
    assert_eq!(run(&db, &["admin", "set-max-entries", "acme/app", "5"], "").0, 0);
    let (code, out, _) = run(&db, &["admin", "set-max-bytes", "acme/app", "1048576"], "");
    assert_eq!((code, out.trim()), (0, "acme/app may now hold 1048576 bytes of history."));
    let (code, _, err) = run(&db, &["admin", "set-max-bytes", "acme/app", "0"], "");
    assert_eq!(code, 1);
    assert!(err.contains("at least 1 byte"), "{err}");
    let (code, out, _) = run(&db, &["admin", "prune-history", "acme/app", "--keep", "5", "--older-than-days", "30", "--dry-run"], "");
    assert_eq!(
        (code, out.trim()),
        (0, "Would drop 0 old versions from acme/app's history (beyond each key's 5 newest and older than 30 days), freeing 0 bytes.")
    );
    let (code, _, err) = run(&db, &["admin", "prune-history", "acme/app", "--keep", "0"], "");
    assert_eq!(code, 1);
    assert!(err.contains("Keep at least 1 version"), "{err}");
    let (code, out, _) = run(&db, &["admin", "token", "alice"], "");
    assert_eq!(code, 0);
    assert!(out.trim().starts_with("mneme_at_") && out.trim().len() == 9 + 64, "{out}");

    let out = Command::new(common::process::bin()).args(["admin", "token", "alice"]).env_remove("MNEME_SERVER_DB").output().unwrap();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("--db"));
}

/// Reads one HTTP/1.1 response head (and the body, by Content-Length) from `stream`.
fn read_response(stream: &mut TcpStream) -> (u16, String) {
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    while !buf.ends_with(b"\r\n\r\n") {
        assert_eq!(stream.read(&mut byte).unwrap(), 1, "connection closed mid-response: {}", String::from_utf8_lossy(&buf));
        buf.push(byte[0]);
    }
    let head = String::from_utf8(buf).unwrap();
    let status: u16 = head.split(' ').nth(1).unwrap().parse().unwrap();
    let length: usize = head
        .lines()
        .find_map(|l| l.to_ascii_lowercase().strip_prefix("content-length: ").map(|v| v.trim().parse().unwrap()))
        .unwrap_or(0);
    let mut body = vec![0u8; length];
    stream.read_exact(&mut body).unwrap();
    (status, String::from_utf8(body).unwrap())
}

#[test]
fn sigterm_finishes_the_request_in_flight_then_exits() {
    let dir = tempfile::tempdir().unwrap();
    let db = format!("sqlite:{}", dir.path().join("team.db").display());
    let token = provision(&db);
    let mut server = ServerProcess::start(&db);

    // Start a push and stop halfway through its body. `Expect: 100-continue` makes the server
    // say when the handler starts reading the body, so the request is provably in flight.
    let body = serde_json::json!({"entries": {"MEMORY.md": "# Team memory\n"}}).to_string();
    let (first, rest) = body.split_at(body.len() / 2);
    let mut stream = TcpStream::connect(server.addr).unwrap();
    // A server that stops answering fails the test instead of hanging it.
    stream.set_read_timeout(Some(std::time::Duration::from_secs(30))).unwrap();
    write!(
        stream,
        "PUT /api/claude_code/team_memory?repo={} HTTP/1.1\r\nHost: {}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n",
        encode_uri_component(REPO),
        server.addr,
        body.len()
    )
    .unwrap();
    let (status, _) = read_response(&mut stream);
    assert_eq!(status, 100);
    stream.write_all(first.as_bytes()).unwrap();

    let term = Command::new("kill").args(["-TERM", &server.child.id().to_string()]).status().unwrap();
    assert!(term.success());
    server.wait_for_log("shutting down: finishing in-flight requests");
    // The request in flight still completes.
    stream.write_all(rest.as_bytes()).unwrap();
    let (status, body) = read_response(&mut stream);
    assert_eq!(status, 200, "{body}");
    let put: PutResponse = serde_json::from_str(&body).unwrap();
    assert_eq!(put.version, Some(1));
    drop(stream);
    server.wait_for_log("stopped");
    assert_eq!(server.child.wait().unwrap().code(), Some(0));

    // And it is on disk.
    let server = ServerProcess::start(&db);
    let rt = tokio::runtime::Runtime::new().unwrap();
    let data: TeamMemoryData = rt.block_on(async {
        reqwest::Client::new()
            .get(format!("{}/api/claude_code/team_memory?repo=acme%2Fapp", server.url()))
            .bearer_auth(&token)
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap()
    });
    assert_eq!(data.content.entries["MEMORY.md"], "# Team memory\n");
}
