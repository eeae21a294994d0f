//! A team server that accepts pushes and then loses them, as the Team screen sees it: the pull
//! result names the files the server no longer holds (`forgotten`) and those it has lost three
//! times in a row (`givenUp`), the status lists the files automatic pushes now hold back
//! (`sync.heldBackLost`), and the app's Push sends them anyway and clears the list.
//!
//! The server is a raw HTTP server on 127.0.0.1:0 that acknowledges every PUT and answers every
//! pull with an empty tree (what a server that crashed before its commit, or was restored from
//! backup, answers). The automatic pushes in between are the watcher's
//! (`SyncClient::push_automatic`) on the same sync state the app reads.

use mneme_api::{ContextRequest, Mneme, SystemClock};
use mneme_team::auth::{CredentialStore, Credentials, MemoryStore};
use mneme_team::client::{StaticToken, SyncClient, SyncTarget};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::{git, write_file, TestHome};
use std::path::PathBuf;
use std::sync::Arc;

#[test]
fn a_server_that_keeps_losing_a_pushed_file_shows_in_the_pull_and_the_status() {
    let (url, seen) = serve(|req| {
        if req.starts_with("PUT ") {
            json("200 OK", r#"{"checksum":"sha256:2"}"#)
        } else if req.contains("view=hashes") {
            json("404 Not Found", r#"{"error":{"message":"no team memory yet"}}"#)
        } else {
            json(
                "200 OK",
                r#"{"repo":"acme/shop","lastModified":"x","checksum":"sha256:3","content":{"entries":{},"entryChecksums":{}}}"#,
            )
        }
    });
    let puts = || seen.lock().unwrap().iter().filter(|r| r.starts_with("PUT ") && r.contains("deploy from main")).count();

    let t = TestHome::new();
    let repo = t.git_repo("code/shop");
    git(&repo, &["remote", "add", "origin", "git@github.com:acme/shop.git"]);
    let env = t.env.clone().set_var("TEAM_MEMORY_SYNC_URL", &url);
    let store = Arc::new(MemoryStore::default());
    let c = Credentials { access_token: "t0k3n".into(), refresh_token: None, expires_at_ms: u64::MAX / 2, user: Some("ana".into()), extra: Default::default() };
    store.save(&url, &c).unwrap();
    let mneme = Mneme::new(env.clone(), Arc::new(SystemClock)).with_team_credentials(store);
    let req = ContextRequest { cwd: repo.clone(), ..Default::default() };
    let memory = t.memdir_for(&repo);
    let team: PathBuf = memory.join("team");
    write_file(&team.join("deploy.md"), "deploy from main");
    // The watcher's client: same memory folder and state file as the app's.
    let target = SyncTarget { memory_dir: memory.clone(), repo: Some("acme/shop".into()), server_url: Some(url.clone()) };
    let watcher = SyncClient::new(target, &env, Arc::new(SystemClock), Arc::new(StaticToken("t0k3n".into())));

    let pushed = mneme.team_push(&req).unwrap();
    assert_eq!(pushed.uploaded, ["deploy.md"]);
    assert!(pushed.held_back_lost.is_empty());
    let pulled = mneme.team_pull(&req).unwrap();
    assert_eq!(pulled.forgotten, ["deploy.md"], "{pulled:?}");
    assert!(pulled.given_up.is_empty() && pulled.written.is_empty(), "{pulled:?}");
    let json = serde_json::to_value(&pulled).unwrap();
    assert_eq!(json["forgotten"], serde_json::json!(["deploy.md"]));
    assert_eq!(json["givenUp"], serde_json::json!([]));
    let status = mneme.team_status(&req).unwrap();
    assert!(status.sync.held_back_lost.is_empty(), "lost once: still pushed automatically");
    assert_eq!(status.sync.max_lost_pushes, 3);

    // Lost a second and a third time, after the watcher's pushes.
    assert_eq!(watcher.push_automatic().unwrap().uploaded, ["deploy.md"]);
    assert!(mneme.team_pull(&req).unwrap().given_up.is_empty());
    assert_eq!(watcher.push_automatic().unwrap().uploaded, ["deploy.md"]);
    let pulled = mneme.team_pull(&req).unwrap();
    assert_eq!((pulled.forgotten.as_slice(), pulled.given_up.as_slice()), (["deploy.md".to_string()].as_slice(), ["deploy.md".to_string()].as_slice()));
    assert_eq!(puts(), 3);

    // Held back from now on, and the status says which file, without asking the server.
    let status = mneme.team_status(&req).unwrap();
    assert_eq!(status.sync.held_back_lost, ["deploy.md"]);
    assert_eq!(serde_json::to_value(&status).unwrap()["sync"]["heldBackLost"], serde_json::json!(["deploy.md"]));
    let automatic = watcher.push_automatic().unwrap();
    assert!(automatic.uploaded.is_empty(), "{automatic:?}");
    assert_eq!(automatic.held_back_lost, ["deploy.md"]);
    assert_eq!(puts(), 3);
    assert_eq!(std::fs::read_to_string(team.join("deploy.md")).unwrap(), "deploy from main", "the file is never touched");

    // The app's Push is a push by hand: it sends the file and the hold ends.
    let pushed = mneme.team_push(&req).unwrap();
    assert_eq!(pushed.uploaded, ["deploy.md"]);
    assert!(pushed.held_back_lost.is_empty());
    assert_eq!(puts(), 4);
    assert!(mneme.team_status(&req).unwrap().sync.held_back_lost.is_empty());

    // Sync (pull, then push) carries both halves: the loss in the pull, the file sent again.
    let synced = mneme.team_sync(&req).unwrap();
    assert_eq!(synced.pull.forgotten, ["deploy.md"], "{synced:?}");
    assert_eq!(synced.push.uploaded, ["deploy.md"]);
    assert!(synced.push.held_back_lost.is_empty());

    // Given up on again (the loss after Sync's push counts once, two more make three), then
    // edited here: other content, so no longer held back.
    for _ in 0..3 {
        watcher.push_automatic().unwrap();
        mneme.team_pull(&req).unwrap();
    }
    assert_eq!(mneme.team_status(&req).unwrap().sync.held_back_lost, ["deploy.md"]);
    write_file(&team.join("deploy.md"), "deploy from the release branch");
    assert!(mneme.team_status(&req).unwrap().sync.held_back_lost.is_empty(), "an edit is new content");
}
