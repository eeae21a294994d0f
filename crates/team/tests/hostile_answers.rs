//! A hostile team server's answers beyond the pull itself: the hashes view a push asks for
//! first, and the lead API the Team screen reads (history, the newest change to every key).
//! Each answer is bounded while it is parsed, as a pull is
//! (`hostile_server.rs` `a_pull_naming_millions_of_files_is_refused_and_writes_nothing`), so
//! no answer can take the app's memory or its time, and a refused answer changes nothing.

mod common;

use mneme_core::SystemClock;
use mneme_team::client::{SyncClient, SyncError};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::TestHome;
use std::path::PathBuf;
use std::sync::Arc;

fn client(home: &TestHome, url: &str) -> (SyncClient, PathBuf) {
    common::client_with_token(home, url, Arc::new(SystemClock))
}

/// `{"k0":V,"k1":V,…}` with `n` keys.
fn object_of(n: u32, value: &str) -> String {
    let mut out = String::with_capacity(n as usize * 16);
    out.push('{');
    for i in 0..n {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&format!(r#""k{i}.md":{value}"#));
    }
    out.push('}');
    out
}

/// The hashes view a first push asks for (and every push after a 412) names more keys than
/// any team memory holds: refused while it is parsed, as a pull naming as many is, and the
/// push sends nothing. Before, a million removals went into the sync state (saved to disk and
/// read on every pull) and the push went on, and an answer of a gigabyte of tiny keys took
/// many gigabytes of memory.
#[test]
fn a_hashes_view_naming_millions_of_keys_is_refused_and_nothing_is_pushed() {
    let over = 1_000_001;
    for (field, value) in [("deletedEntries", "1"), ("entryChecksums", r#""sha256:0""#)] {
        let other = if field == "deletedEntries" { r#""entryChecksums":{}"# } else { r#""deletedEntries":{}"# };
        let body = Arc::new(format!(r#"{{"version":1,"checksum":"sha256:1",{other},"{field}":{}}}"#, object_of(over, value)));
        let (url, seen) = serve(move |req| {
            if req.starts_with("GET ") && req.contains("view=hashes") {
                json("200 OK", &body)
            } else {
                json("200 OK", r#"{"checksum":"sha256:2","lastModified":"x"}"#)
            }
        });
        let home = TestHome::new();
        let (c, team) = client(&home, &url);
        std::fs::write(team.join("mine.md"), "deploy from main\n").unwrap();
        match c.push() {
            Err(SyncError::Parse { detail }) => assert!(detail.contains("more than 1000000"), "{field}: {detail}"),
            other => panic!("{field}: expected the answer to be refused, got {:?}", other.map(|r| r.summary())),
        }
        assert!(seen.lock().unwrap().iter().all(|r| !r.starts_with("PUT ")), "{field}: the push went on");
        let st = c.state().unwrap();
        assert!(st.tombstoned_keys.is_empty() && st.server_checksums.is_empty(), "{field}: the answer went into the state");
    }
}

/// A history answer as Mneme's server sends one: `n` versions of `key`, each holding `content`.
fn history(key: &str, n: u64, content: &str) -> String {
    let versions: Vec<serde_json::Value> = (0..n)
        .map(|i| serde_json::json!({"version": n - i, "checksum": "sha256:0", "author": "mallory", "time": "2026-12-07T00:00:00.000Z", "deleted": false, "content": format!("{content}{i}\n")}))
        .collect();
    serde_json::json!({"repo": "owner/name", "key": key, "versions": versions}).to_string()
}

/// A key's history is one page of at most 100 versions (the client asks for no other), each
/// no larger than an entry may be, and the Team screen diffs every version against the one
/// before it and against the local copy. A hostile server's answer of thousands of versions,
/// or of versions of megabytes, made one click cost minutes of diffing and gigabytes of
/// memory; such an answer is refused, saying why, and so is one about another key.
#[test]
fn a_history_answer_beyond_the_page_or_the_entry_limit_is_refused() {
    let cases = [
        ("versions", history("a.md", 101, "line\n")),
        ("bytes", history("a.md", 2, &"x".repeat(250_001))),
        ("other key", history("MEMORY.md", 1, "the index\n")),
    ];
    for (what, body) in cases {
        let (url, _) = serve(move |_| json("200 OK", &body));
        let home = TestHome::new();
        let (c, _) = client(&home, &url);
        match c.history("a.md") {
            Err(SyncError::Parse { detail }) => {
                let expected = match what {
                    "versions" => "101 versions where at most 100",
                    "bytes" => "over the 250000-byte limit",
                    _ => "\"MEMORY.md\"",
                };
                assert!(detail.contains(expected), "{what}: {detail}");
            }
            other => panic!("{what}: expected the answer to be refused, got {:?}", other.map(|h| h.versions.len())),
        }
    }
    // What Mneme's server sends still reads: a full page, each version at the limit.
    let body = history("a.md", 100, &"x".repeat(250_000 - 3));
    let (url, _) = serve(move |_| json("200 OK", &body));
    let home = TestHome::new();
    let (c, _) = client(&home, &url);
    assert_eq!(c.history("a.md").unwrap().versions.len(), 100);
}

/// The Team screen's list of every key on the server (`latest`) is counted while it is parsed,
/// as a pull's answer is: one naming more keys than any team memory holds is refused, and one
/// at the count still reads.
#[test]
fn a_listing_naming_millions_of_keys_is_refused() {
    let listing = |n: u32| {
        let mut body = String::with_capacity(n as usize * 96);
        body.push_str(r#"{"repo":"owner/name","entries":["#);
        for i in 0..n {
            if i > 0 {
                body.push(',');
            }
            body.push_str(&format!(r#"{{"key":"k{i}.md","version":1,"checksum":"","author":null,"time":"","deleted":true,"versions":1}}"#));
        }
        body.push_str("]}");
        Arc::new(body)
    };
    let body = listing(1_000_001);
    let (url, _) = serve(move |_| json("200 OK", &body));
    let home = TestHome::new();
    let (c, _) = client(&home, &url);
    match c.latest() {
        Err(SyncError::Parse { detail }) => assert!(detail.contains("more than 1000000 files"), "{detail}"),
        other => panic!("expected the answer to be refused, got {:?}", other.map(|l| l.entries.len())),
    }
    let body = listing(3);
    let (url, _) = serve(move |_| json("200 OK", &body));
    let (c, _) = client(&home, &url);
    assert_eq!(c.latest().unwrap().entries.len(), 3);
}
