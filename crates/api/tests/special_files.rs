//! The Team screen's reads of files that a person or another program replaced with a FIFO:
//! the local copy shown beside a key's history, and the sync state behind the status. Each
//! call runs on a thread and must come back within 25 s, so a hang is a failure rather than a
//! test that never ends.

use mneme_api::{ContextRequest, Mneme, SystemClock};
use mneme_team::auth::{CredentialStore, Credentials, MemoryStore};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::{git, write_file, TestHome};
use std::sync::Arc;
use mneme_testsupport::special_files::{mkfifo, within};

#[test]
fn team_history_and_status_do_not_wait_on_a_fifo() {
    let (url, _) = serve(|req| {
        if req.contains("/history") {
            json(
                "200 OK",
                r#"{"repo":"acme/shop","key":"deploy.md","versions":[{"version":1,"checksum":"sha256:1","author":"ana","time":"2026-12-06T00:00:00.000Z","deleted":false,"content":"deploy from main"}]}"#,
            )
        } else {
            json("404 Not Found", r#"{"error":{"message":"no team memory yet"}}"#)
        }
    });
    let t = TestHome::new();
    let repo = t.git_repo("code/shop");
    git(&repo, &["remote", "add", "origin", "git@github.com:acme/shop.git"]);
    let env = t.env.clone().set_var("TEAM_MEMORY_SYNC_URL", &url);
    let store = Arc::new(MemoryStore::default());
    let c = Credentials { access_token: "t0k3n".into(), refresh_token: None, expires_at_ms: u64::MAX / 2, user: Some("ana".into()), extra: Default::default() };
    store.save(&url, &c).unwrap();
    let mneme = Arc::new(Mneme::new(env.clone(), Arc::new(SystemClock)).with_team_credentials(store));
    let req = ContextRequest { cwd: repo.clone(), ..Default::default() };
    let memory = t.memdir_for(&repo);
    let team = memory.join("team");

    // A plain local copy is shown as it is.
    write_file(&team.join("deploy.md"), "deploy from main");
    let h = mneme.team_history(&req, "deploy.md").unwrap();
    assert_eq!(h.local.as_deref(), Some("deploy from main"));

    // A FIFO under the key: the history comes back, with no local copy.
    std::fs::remove_file(team.join("deploy.md")).unwrap();
    mkfifo(&team.join("deploy.md"));
    let (m, r) = (mneme.clone(), req.clone());
    let h = within("the history of a key whose local copy is a FIFO", move || m.team_history(&r, "deploy.md")).unwrap();
    assert_eq!(h.versions.len(), 1);
    assert_eq!(h.local, None);

    // The sync state a FIFO: the status comes back, as for a state it cannot read.
    let state = mneme_team::client::state::state_path(&env.data_dir(), &memory);
    std::fs::create_dir_all(state.parent().unwrap()).unwrap();
    mkfifo(&state);
    let (m, r) = (mneme.clone(), req.clone());
    let status = within("the team status over a FIFO sync state", move || m.team_status(&r).map(|s| s.sync.last_pull.is_none()));
    assert!(status.unwrap(), "a state that cannot be read shows as none");
}
