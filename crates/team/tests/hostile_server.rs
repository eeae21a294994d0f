//! A hostile team server, as a raw HTTP server on 127.0.0.1:0 that answers whatever the test
//! says: what the client's pull and sign-in must refuse before it lands on disk or in the
//! keyring.

mod common;

use mneme_core::SystemClock;
use mneme_team::auth::{self, CredentialStore, Credentials, MemoryStore};
use mneme_team::client::{Http, SyncClient, SyncError};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::TestHome;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use common::login_at;

/// [`common::client_with_token`] on the system's clock, as the app runs.
fn client(home: &TestHome, url: &str) -> (SyncClient, PathBuf) {
    common::client_with_token(home, url, Arc::new(SystemClock))
}

/// A pull naming more files than any team memory holds is refused while it is parsed: a map
/// of tiny entries costs many times its bytes in memory, and each valid key would become a
/// file. Nothing is written, not even the valid key that came first.
#[test]
fn a_pull_naming_millions_of_files_is_refused_and_writes_nothing() {
    let mut body = String::with_capacity(16 << 20);
    body.push_str(r#"{"repo":"owner/name","version":1,"lastModified":"2026-12-06T00:00:00.000Z","checksum":"sha256:1","content":{"entries":{"a.md":"first""#);
    // Keys the strict policy refuses (no .md), so a client that accepts the answer skips them
    // quickly instead of creating a million files.
    for i in 0..1_000_001u32 {
        body.push_str(&format!(r#","k{i}":"""#));
    }
    body.push_str("}}}");
    let body = Arc::new(body);
    let (url, _) = serve(move |_| json("200 OK", &body));
    let home = TestHome::new();
    let (c, team) = client(&home, &url);
    match c.pull() {
        Err(SyncError::Parse { detail }) => assert!(detail.contains("more than 1000000 files"), "{detail}"),
        other => panic!("expected the answer to be refused, got {:?}", other.map(|r| r.summary())),
    }
    assert!(!team.join("a.md").exists());
    // The same for the checksums and removals that come beside the entries.
    let mut body = String::from(r#"{"repo":"owner/name","lastModified":"x","checksum":"sha256:1","content":{"entries":{},"deletedEntries":{"#);
    for i in 0..1_000_001u32 {
        body.push_str(&format!(r#"{}"k{i}":1"#, if i == 0 { "" } else { "," }));
    }
    body.push_str("}}}");
    let body = Arc::new(body);
    let (url, _) = serve(move |_| json("200 OK", &body));
    let (c, _) = client(&home, &url);
    assert!(matches!(c.pull(), Err(SyncError::Parse { .. })));
}

/// Tokens go into the keyring and into a header on every request: a sign-in or refresh whose
/// token is huge or holds a line break, NUL or other control character is refused and nothing
/// is saved (it was stored, and every later request failed on the header).
#[test]
fn tokens_no_header_can_carry_are_not_saved() {
    let huge = "a".repeat(auth::MAX_TOKEN_BYTES + 1);
    for (access, refresh) in [
        ("abc\r\nX-Injected: 1", "r1"),
        ("abc\u{0}def", "r1"),
        ("abc def", "r1"),
        ("", "r1"),
        (huge.as_str(), "r1"),
        ("good", "r\n1"),
        ("good", huge.as_str()),
    ] {
        let body = serde_json::json!({"access_token": access, "token_type": "Bearer", "expires_in": 3600, "refresh_token": refresh}).to_string();
        let (url, seen) = serve(move |req| if req.contains("/oauth/token") { json("200 OK", &body) } else { json("200 OK", r#"{"user":"mallory","repos":[]}"#) });
        let store = MemoryStore::default();
        let mut login = login_at(&url);
        let e = auth::poll_login(&Http::default(), &mut login, &store, &SystemClock).unwrap_err().to_string();
        assert!(e.contains("nothing was saved"), "{access:?}/{refresh:?}: {e}");
        assert!(!e.contains('\r') && !e.contains('\0'), "{e:?}");
        assert!(store.is_empty(), "{access:?}/{refresh:?} was saved");
        // Not even sent on to ask who signed in.
        assert_eq!(seen.lock().unwrap().len(), 1, "{access:?}/{refresh:?}");

        // A refresh that answers the same is refused too, and the old credentials stay.
        let old = Credentials { access_token: "old".into(), refresh_token: Some("r0".into()), expires_at_ms: 0, user: None, extra: Default::default() };
        let store = Arc::new(MemoryStore::default());
        store.save(&url, &old).unwrap();
        let session = auth::Session::new(&url, store.clone(), Http::default(), Arc::new(SystemClock));
        let e = session.refresh().unwrap_err();
        assert!(matches!(e, SyncError::Parse { .. }), "{access:?}/{refresh:?}: {e}");
        assert_eq!(store.load(&url).unwrap(), Some(old));
    }
}

/// A redirect is not followed: the bearer token would go wherever it points (checked fine;
/// kept so it stays so).
#[test]
fn a_redirect_never_carries_the_token_to_its_target() {
    let (elsewhere, seen_there) = serve(|_| json("200 OK", "{}"));
    let location = format!("{elsewhere}/api/claude_code/team_memory?repo=owner%2Fname");
    let (url, seen) = serve(move |_| format!("HTTP/1.1 307 Temporary Redirect\r\nlocation: {location}\r\ncontent-length: 0\r\nconnection: close\r\n\r\n").into_bytes());
    let home = TestHome::new();
    let (c, _) = client(&home, &url);
    let e = c.pull().unwrap_err();
    assert!(matches!(e, SyncError::Http { status: 307, .. }), "{e}");
    assert!(!seen.lock().unwrap().is_empty());
    assert!(seen_there.lock().unwrap().is_empty(), "the redirect was followed");
}

/// A server that answers with an empty tree, or with every key removed, never deletes a
/// local file outright: what it removes goes to Mneme's trash and is recorded, and files it
/// does not name stay (checked fine; kept so it stays so).
#[test]
fn a_server_that_empties_the_tree_loses_no_local_file() {
    let home = TestHome::new();
    let empty = r#"{"repo":"owner/name","lastModified":"x","checksum":"sha256:e","content":{"entries":{},"entryChecksums":{}}}"#;
    let (url, _) = serve(move |_| json("200 OK", empty));
    let (c, team) = client(&home, &url);
    std::fs::write(team.join("mine.md"), "never pushed").unwrap();
    let r = c.pull().unwrap();
    assert!(r.written.is_empty() && r.trashed.is_empty(), "{r:?}");
    assert_eq!(std::fs::read_to_string(team.join("mine.md")).unwrap(), "never pushed");
    let removed = r#"{"repo":"owner/name","lastModified":"x","checksum":"sha256:d","content":{"entries":{},"deletedEntries":{"mine.md":1,"../escape.md":1,"/etc/passwd.md":1}}}"#;
    let (url, _) = serve(move |_| json("200 OK", removed));
    let (c, team) = client(&home, &url);
    let r = c.pull().unwrap();
    assert_eq!(r.trashed, ["mine.md"]);
    assert_eq!(r.conflicts.len(), 0, "conflicts are in the state, not the report, for removals");
    assert!(!team.join("mine.md").exists());
    let st = c.state().unwrap();
    let kept = st.conflicts.iter().find(|k| k.key == "mine.md").and_then(|k| k.trash_id.clone()).expect("the removal is recorded with its trash entry");
    let trash = home.env.data_dir().join("trash");
    let found: Vec<_> = mneme_testsupport::files_under(&trash).into_iter().filter(|p| p.to_string_lossy().contains(&kept) && p.ends_with("mine.md")).collect();
    assert_eq!(found.len(), 1, "{:?}", mneme_testsupport::files_under(&trash));
    assert_eq!(std::fs::read_to_string(&found[0]).unwrap(), "never pushed");
}


/// Drops `CAP_DAC_OVERRIDE` and `CAP_DAC_READ_SEARCH` from this thread's effective set until
/// dropped, so a root test run meets file modes as a person does (capabilities are per thread
/// on Linux; the pull runs on this one).
#[cfg(target_os = "linux")]
struct FileModesApply(rustix::thread::CapabilitySets);

#[cfg(target_os = "linux")]
impl FileModesApply {
    fn new() -> Self {
        use rustix::thread::{capabilities, set_capabilities, CapabilitySet};
        let before = capabilities(None).unwrap();
        let mut lowered = before;
        lowered.effective.remove(CapabilitySet::DAC_OVERRIDE | CapabilitySet::DAC_READ_SEARCH);
        set_capabilities(None, lowered).unwrap();
        FileModesApply(before)
    }
}

#[cfg(target_os = "linux")]
impl Drop for FileModesApply {
    fn drop(&mut self) {
        rustix::thread::set_capabilities(None, self.0).unwrap();
    }
}

/// A local file the pull cannot read may hold an edit the server never saw, and no copy of it
/// can go to the trash: it is left as it is and named, not replaced by a rename (which needs
/// only the folder's permission).
#[cfg(target_os = "linux")]
#[test]
fn a_local_file_that_cannot_be_read_is_not_written_over() {
    use std::os::unix::fs::PermissionsExt;
    let body = r#"{"repo":"owner/name","lastModified":"x","checksum":"sha256:s","content":{"entries":{"mine.md":"the server's version","other.md":"theirs"}}}"#;
    let (url, _) = serve(move |req| unchanged_or(req, body));
    let home = TestHome::new();
    let (c, team) = client(&home, &url);
    let mine = team.join("mine.md");
    std::fs::write(&mine, "an edit made only here").unwrap();
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o000)).unwrap();
    let r = {
        let _modes = FileModesApply::new();
        c.pull().unwrap()
    };
    std::fs::set_permissions(&mine, std::fs::Permissions::from_mode(0o644)).unwrap();
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "an edit made only here");
    assert_eq!(r.written, ["other.md"]);
    assert_eq!(r.skipped.len(), 1, "{r:?}");
    assert_eq!(r.skipped[0].key, "mine.md");
    assert!(r.skipped[0].reason.contains("cannot be read") && r.skipped[0].reason.contains("make the file readable"), "{}", r.skipped[0].reason);
    // Readable again, the next pull (the periodic kind, with the ETag) asks for everything and
    // writes it, keeping the local edit in the trash first.
    let r = c.pull().unwrap();
    assert_eq!(r.written, ["mine.md"], "{r:?}");
    assert_eq!(r.conflicts.len(), 1);
    assert_eq!(std::fs::read_to_string(&mine).unwrap(), "the server's version");
}

/// The server's answer as if nothing changed (304) when the client sends the ETag it was
/// given, the whole `body` otherwise.
fn unchanged_or(req: &str, body: &str) -> Vec<u8> {
    if req.to_ascii_lowercase().contains("if-none-match: \"sha256:s\"") {
        b"HTTP/1.1 304 Not Modified\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_vec()
    } else {
        json("200 OK", body)
    }
}

/// A write that failed for a reason that passes (a folder without write permission, a full
/// disk) is tried again by the next pull even when the server has not changed: with no local
/// copy to hold back, that pull sent the ETag, got 304, and the file stayed missing until a
/// teammate changed something.
#[cfg(target_os = "linux")]
#[test]
fn an_entry_whose_write_failed_is_written_by_the_next_pull() {
    use std::os::unix::fs::PermissionsExt;
    let body = r#"{"repo":"owner/name","lastModified":"x","checksum":"sha256:s","content":{"entries":{"notes/deploy.md":"Deploy from main."}}}"#;
    let (url, _) = serve(move |req| unchanged_or(req, body));
    let home = TestHome::new();
    let (c, team) = client(&home, &url);
    std::fs::create_dir(team.join("notes")).unwrap();
    std::fs::set_permissions(team.join("notes"), std::fs::Permissions::from_mode(0o555)).unwrap();
    let r = {
        let _modes = FileModesApply::new();
        c.pull().unwrap()
    };
    assert!(r.written.is_empty() && r.skipped.len() == 1, "{r:?}");
    std::fs::set_permissions(team.join("notes"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let r = c.pull().unwrap();
    assert!(!r.not_modified, "the pull sent the ETag and got 304");
    assert_eq!(r.written, ["notes/deploy.md"]);
    assert_eq!(std::fs::read_to_string(team.join("notes/deploy.md")).unwrap(), "Deploy from main.");
    // Written, the next pull is the cheap kind again.
    assert!(c.pull().unwrap().not_modified);
}

/// A sign-in answer is a few hundred bytes: one of megabytes (a hostile server's, which could
/// be 1 GiB) is refused while it is read, and nothing is saved.
#[test]
fn a_sign_in_answer_of_megabytes_is_refused_while_it_is_read() {
    let padded = format!(r#"{{"access_token":"good","token_type":"Bearer","expires_in":3600{}}}"#, " ".repeat(2 << 20));
    let (url, _) = serve(move |req| if req.contains("/oauth/token") { json("200 OK", &padded) } else { json("200 OK", r#"{"user":"mallory","repos":[]}"#) });
    let store = MemoryStore::default();
    let mut login = login_at(&url);
    let e = auth::poll_login(&Http::default(), &mut login, &store, &SystemClock).unwrap_err().to_string();
    assert!(e.contains("longer than the 1048576 bytes") && e.contains("check the server address"), "{e}");
    assert!(store.is_empty());
}

/// The answer a pull of `entries` gets, with the checksums the server claims (`claims`, else
/// each entry's own) and the repository checksum `checksum`.
fn tree(checksum: &str, entries: &[(&str, &str)], claims: Option<&[(&str, &str)]>) -> String {
    let map = |pairs: &[(&str, &str)]| pairs.iter().map(|(k, v)| (k.to_string(), serde_json::Value::String(v.to_string()))).collect::<serde_json::Map<_, _>>();
    let own: Vec<(&str, String)> = entries.iter().map(|(k, v)| (*k, mneme_team::client::hash_content(v))).collect();
    let own: Vec<(&str, &str)> = own.iter().map(|(k, h)| (*k, h.as_str())).collect();
    serde_json::json!({
        "repo": "owner/name", "lastModified": "x", "checksum": checksum,
        "content": { "entries": map(entries), "entryChecksums": map(claims.unwrap_or(&own)) }
    })
    .to_string()
}

/// A server that acknowledges a push and then drops it ("ack-then-drop": a crash before its
/// commit, a restore from backup, a hostile server), serving its older copy again. The pull
/// after the push must not write that older copy over the only copy of the edit unseen: the
/// edit goes to the trash first and the pull reports it, as any local edit the server never
/// showed it holds.
#[test]
fn a_push_the_server_acknowledged_then_lost_is_kept_before_its_older_copy_is_pulled() {
    let home = TestHome::new();
    let older = tree("sha256:1", &[("notes.md", "Deploy from main.")], None);
    let (url, seen) = serve(move |req| if req.starts_with("PUT ") { json("200 OK", r#"{"checksum":"sha256:2"}"#) } else { json("200 OK", &older) });
    let (c, team) = client(&home, &url);
    assert_eq!(c.pull().unwrap().written, ["notes.md"]);
    std::fs::write(team.join("notes.md"), "Deploy from the release branch.").unwrap();
    assert_eq!(c.push().unwrap().uploaded, ["notes.md"]);
    assert!(seen.lock().unwrap().iter().any(|r| r.starts_with("PUT ") && r.contains("release branch")), "the edit was sent");

    let r = c.pull().unwrap();
    assert_eq!(r.written, ["notes.md"], "the server's copy wins, as for any key: {r:?}");
    assert_eq!(r.conflicts.len(), 1, "the lost push is kept and reported: {r:?}");
    assert!(r.summary().contains("1 local edits kept in the trash"), "{}", r.summary());
    let kept = r.conflicts[0].trash_id.clone().expect("a trash entry");
    let trash = home.env.data_dir().join("trash");
    let found: Vec<_> = mneme_testsupport::files_under(&trash).into_iter().filter(|p| p.to_string_lossy().contains(&kept) && p.ends_with("notes.md")).collect();
    assert_eq!(found.len(), 1, "{:?}", mneme_testsupport::files_under(&trash));
    assert_eq!(std::fs::read_to_string(&found[0]).unwrap(), "Deploy from the release branch.");
    assert!(c.state().unwrap().unconfirmed_pushes.is_empty(), "settled once kept");
    // The server's copy is what the folder holds now; the next pull has nothing to keep.
    assert_eq!(std::fs::read_to_string(team.join("notes.md")).unwrap(), "Deploy from main.");
    assert!(c.pull().unwrap().conflicts.is_empty());
}

/// The same server, losing a push of a new file and still claiming its checksum: the pull
/// leaves the file where it is and reports it, and the next push sends it again instead of
/// trusting the claim. Once a pull shows the server holding it, it is an ordinary file.
#[test]
fn a_new_file_the_server_acknowledged_then_lost_stays_and_is_pushed_again() {
    let home = TestHome::new();
    let held = Arc::new(Mutex::new(false));
    let keeps = held.clone();
    let (url, seen) = serve(move |req| {
        let mine = mneme_team::client::hash_content("never lost");
        if req.starts_with("PUT ") {
            json("200 OK", r#"{"checksum":"sha256:2"}"#)
        } else if req.contains("view=hashes") {
            json("404 Not Found", r#"{"error":{"message":"no team memory yet"}}"#)
        } else if *keeps.lock().unwrap() {
            json("200 OK", &tree("sha256:4", &[("mine.md", "never lost")], None))
        } else {
            json("200 OK", &tree("sha256:3", &[], Some(&[("mine.md", mine.as_str())])))
        }
    });
    let (c, team) = client(&home, &url);
    std::fs::write(team.join("mine.md"), "never lost").unwrap();
    assert_eq!(c.push().unwrap().uploaded, ["mine.md"]);

    let r = c.pull().unwrap();
    assert_eq!(r.forgotten, ["mine.md"], "{r:?}");
    assert!(r.written.is_empty() && r.trashed.is_empty(), "{r:?}");
    assert!(r.summary().contains("no longer holds 1 file(s)") && r.summary().contains("mine.md"), "{}", r.summary());
    assert_eq!(std::fs::read_to_string(team.join("mine.md")).unwrap(), "never lost");

    let puts = || seen.lock().unwrap().iter().filter(|r| r.starts_with("PUT ") && r.contains("never lost")).count();
    assert_eq!(puts(), 1);
    assert_eq!(c.push().unwrap().uploaded, ["mine.md"], "sent again, whatever checksum the server claimed");
    assert_eq!(puts(), 2);

    *held.lock().unwrap() = true;
    let r = c.pull().unwrap();
    assert!(r.forgotten.is_empty() && r.conflicts.is_empty(), "{r:?}");
    assert!(c.state().unwrap().unconfirmed_pushes.is_empty(), "confirmed by the pull that holds it");
    assert!(c.push().unwrap().uploaded.is_empty());
}

/// A server that acknowledged a push and then answers that it holds nothing for the
/// repository (404): the file stays, the pull reports it, and the next push sends it again.
#[test]
fn a_push_acknowledged_then_answered_with_nothing_held_is_reported_and_pushed_again() {
    let home = TestHome::new();
    let (url, seen) = serve(move |req| {
        if req.starts_with("PUT ") {
            json("200 OK", r#"{"checksum":"sha256:2"}"#)
        } else {
            json("404 Not Found", r#"{"error":{"message":"no team memory yet"}}"#)
        }
    });
    let (c, team) = client(&home, &url);
    std::fs::write(team.join("mine.md"), "never lost").unwrap();
    assert_eq!(c.push().unwrap().uploaded, ["mine.md"]);
    let r = c.pull().unwrap();
    assert!(r.server_empty, "{r:?}");
    assert_eq!(r.forgotten, ["mine.md"]);
    assert!(r.summary().starts_with("the server holds no team memory") && r.summary().contains("(mine.md)"), "{}", r.summary());
    assert_eq!(std::fs::read_to_string(team.join("mine.md")).unwrap(), "never lost");
    assert_eq!(c.push().unwrap().uploaded, ["mine.md"]);
    assert_eq!(seen.lock().unwrap().iter().filter(|r| r.starts_with("PUT ")).count(), 2);
}

/// A server that acknowledges every push of a file and loses every one: automatic pushes send
/// it again until the server has lost the same content three times in a row, then leave it
/// out, and the pull says so with what to do. The count lives in the sync state (a new client,
/// as after a restart, still holds it back); a push by hand sends it and starts the count
/// again, and an edit here is new content, sent at once. The file is never touched.
#[test]
fn a_file_the_server_keeps_losing_is_no_longer_pushed_automatically() {
    let home = TestHome::new();
    let (url, seen) = serve(move |req| {
        if req.starts_with("PUT ") {
            json("200 OK", r#"{"checksum":"sha256:2"}"#)
        } else if req.contains("view=hashes") {
            json("404 Not Found", r#"{"error":{"message":"no team memory yet"}}"#)
        } else {
            json("200 OK", &tree("sha256:3", &[], None))
        }
    });
    let (c, team) = client(&home, &url);
    let puts = || seen.lock().unwrap().iter().filter(|r| r.starts_with("PUT ") && r.contains("never lost")).count();
    std::fs::write(team.join("mine.md"), "never lost").unwrap();
    for lost in 1..=2 {
        assert_eq!(c.push_automatic().unwrap().uploaded, ["mine.md"], "push {lost}");
        let r = c.pull().unwrap();
        assert_eq!((r.forgotten.as_slice(), r.given_up.len()), (["mine.md".to_string()].as_slice(), 0), "{r:?}");
        // A second pull before the next push sees the same loss: it is not counted twice.
        assert!(c.pull().unwrap().given_up.is_empty());
    }
    assert_eq!(c.push_automatic().unwrap().uploaded, ["mine.md"]);
    let r = c.pull().unwrap();
    assert_eq!(r.given_up, ["mine.md"], "{r:?}");
    assert!(r.pushed_again().is_empty());
    let said = r.summary();
    assert!(said.contains("lost 1 file(s)") && said.contains("3 times in a row") && said.contains("(mine.md)") && said.contains("`mneme team push`"), "{said}");
    assert!(!said.contains("sent again by the next push"), "{said}");
    assert_eq!(puts(), 3);

    let pushed = c.push_automatic().unwrap();
    assert!(pushed.uploaded.is_empty(), "{pushed:?}");
    assert_eq!(pushed.held_back_lost, ["mine.md"]);
    assert!(pushed.summary().contains("`mneme team push`"), "{}", pushed.summary());
    // A new client on the same state, as after a restart, holds it back too.
    let (again, _) = client(&home, &url);
    assert!(again.push_automatic().unwrap().uploaded.is_empty());
    assert_eq!(puts(), 3);
    assert_eq!(std::fs::read_to_string(team.join("mine.md")).unwrap(), "never lost");

    // By hand: sent, and the count starts again (two more automatic tries before the next stop).
    assert_eq!(c.push().unwrap().uploaded, ["mine.md"]);
    assert_eq!(puts(), 4);
    let r = c.pull().unwrap();
    assert_eq!(r.forgotten, ["mine.md"]);
    assert!(r.given_up.is_empty(), "{r:?}");
    assert_eq!(c.push_automatic().unwrap().uploaded, ["mine.md"]);
    c.pull().unwrap();
    assert_eq!(c.push_automatic().unwrap().uploaded, ["mine.md"]);
    assert_eq!(c.pull().unwrap().given_up, ["mine.md"]);
    assert_eq!(puts(), 6);

    // An edit here is other content: an automatic push sends it, and its count starts afresh.
    std::fs::write(team.join("mine.md"), "never lost, edited").unwrap();
    assert_eq!(c.push_automatic().unwrap().uploaded, ["mine.md"]);
    let r = c.pull().unwrap();
    assert_eq!(r.forgotten, ["mine.md"]);
    assert!(r.given_up.is_empty(), "{r:?}");
    assert_eq!(c.state().unwrap().lost_pushes["mine.md"].times, 1);
    assert_eq!(std::fs::read_to_string(team.join("mine.md")).unwrap(), "never lost, edited");
}
