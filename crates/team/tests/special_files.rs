//! The sync state file (`team-sync/<memory folder>.json` in Mneme's data folder) replaced by a
//! FIFO or a folder: a pull, the state the Team screen shows, and the status peek come back at
//! once with what is there and what to do, where a plain read waited on the FIFO for ever. A
//! missing state is still a fresh one and an unparsable one still an error. Each call runs on a
//! thread and must come back within 25 s, so a hang is a failure.

use mneme_core::SystemClock;
use mneme_team::client::{state, StaticToken, SyncClient, SyncTarget};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::TestHome;
use std::sync::Arc;
use mneme_testsupport::special_files::{mkfifo, within};

#[test]
fn a_sync_state_that_is_a_fifo_fails_the_pull_at_once_and_says_what_to_do() {
    let (url, _) = serve(|_| {
        json("200 OK", r#"{"repo":"owner/name","lastModified":"x","checksum":"sha256:3","content":{"entries":{},"entryChecksums":{}}}"#)
    });
    let home = TestHome::new();
    let memory = home.root.join("memory");
    std::fs::create_dir_all(memory.join("team")).unwrap();
    let target = SyncTarget { memory_dir: memory, repo: Some("owner/name".into()), server_url: Some(url) };
    let client = Arc::new(SyncClient::new(target, &home.env, Arc::new(SystemClock), Arc::new(StaticToken("t0k3n".into()))));
    let path = client.state_path().to_path_buf();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    mkfifo(&path);

    let c = client.clone();
    let err = within("a pull reading a FIFO as its state", move || c.pull().map(|_| ()).map_err(|e| (e.class(), e.to_string()))).unwrap_err();
    assert_eq!(err.0, "local", "{}", err.1);
    assert!(err.1.contains(".json could not be used: it is a named pipe (FIFO), not a plain file; delete it to start afresh"), "{}", err.1);
    let c = client.clone();
    assert!(within("the state read from a FIFO", move || c.state().is_err()));
    let p = path.clone();
    assert!(within("a status peek at a FIFO", move || state::peek(&p).is_none()));

    // A folder is named as one.
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    let err = client.state().unwrap_err().to_string();
    assert!(err.contains("it is a folder, not a plain file; delete it to start afresh"), "{err}");

    // As before: unparsable is an error, missing is a fresh start, and the pull then works.
    std::fs::remove_dir(&path).unwrap();
    std::fs::write(&path, "{").unwrap();
    assert!(client.pull().unwrap_err().to_string().contains("does not parse"));
    std::fs::remove_file(&path).unwrap();
    let fresh = client.state().unwrap();
    assert!(fresh.repo == "owner/name" && fresh.last_pull.is_none() && fresh.server_checksums.is_empty(), "{fresh:?}");
    client.pull().unwrap();
    assert!(state::peek(&path).is_some_and(|s| s.last_pull.is_some_and(|o| o.ok)));
}

/// What a status shows of the state (`SyncClient::status_state`): a state file too large to be
/// one Mneme wrote is named as the problem with what to do, not read and not taken for a fresh
/// state; without a server nothing was synced, which is no problem.
#[test]
fn a_status_names_an_oversized_state_file_and_takes_no_server_for_nothing_synced() {
    let home = TestHome::new();
    let memory = home.root.join("memory");
    std::fs::create_dir_all(memory.join("team")).unwrap();
    let target = SyncTarget { memory_dir: memory.clone(), repo: Some("owner/name".into()), server_url: Some("http://127.0.0.1:9".into()) };
    let client = SyncClient::new(target, &home.env, Arc::new(SystemClock), Arc::new(StaticToken("t0k3n".into())));
    let path = client.state_path().to_path_buf();
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    // Sparse: one byte past the limit costs no disk.
    std::fs::File::create(&path).unwrap().set_len(state::MAX_STATE_BYTES + 1).unwrap();
    let (st, problem) = client.status_state();
    let problem = problem.unwrap_or_else(|| panic!("{st:?}"));
    assert!(st.is_none());
    assert!(problem.contains(".json could not be used: it is larger than ") && problem.ends_with("more than a sync state holds; delete it to start afresh"), "{problem}");

    std::fs::remove_file(&path).unwrap();
    let (st, problem) = client.status_state();
    assert!(problem.is_none() && st.is_some_and(|s| s.last_pull.is_none()), "missing: a fresh state");
    let unconfigured = SyncClient::new(
        SyncTarget { memory_dir: memory, repo: Some("owner/name".into()), server_url: None },
        &home.env,
        Arc::new(SystemClock),
        Arc::new(StaticToken("t0k3n".into())),
    );
    let (st, problem) = unconfigured.status_state();
    assert!(st.is_none() && problem.is_none());
}
