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
