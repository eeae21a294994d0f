//! Team operations on a project whose drive stops answering (a network share whose server went
//! away, a FUSE daemon that hangs), made real as root: an exFAT image mounted through FUSE
//! (`mneme_testsupport::exfat`) whose daemon is stopped, and always continued before the drive
//! is unmounted (`mneme_testsupport::hung_drive`). Each operation reads the project's settings and git config before anything
//! else, and on such a drive would hold the app (or the command) until the drive answered; it
//! now fails as `unavailable` naming the drive. As any other user the test says so and passes
//! without checking (CI runs it as root).
//!
//! The team server is a loopback one (127.0.0.1:0) that holds nothing yet: pulls get 404 and
//! pushes are taken.

#![cfg(target_os = "linux")]

use mneme_api::{ApiError, ContextRequest, ErrorCode, Mneme, SystemClock};
use mneme_team::auth::{CredentialStore, Credentials, MemoryStore};
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::hung_drive::{self, NEVER};
use mneme_testsupport::raw_http::{json, serve};
use mneme_testsupport::{git, wait, write_file, TestHome};
use std::sync::Arc;

fn req(cwd: &std::path::Path) -> ContextRequest {
    ContextRequest { cwd: cwd.to_path_buf(), ..Default::default() }
}

/// Every team operation that takes the project's folder, the app's and the command line's,
/// fails as `unavailable` naming the drive while it does not answer (the project's, or its
/// memory folder's), and syncs once it answers again. Before, each waited for the drive (the
/// first one until the watchdog continued it).
#[test]
fn team_operations_on_a_hung_drive_fail_at_once_and_sync_once_it_answers() {
    let (url, seen) = serve(|req| {
        if req.starts_with("PUT ") {
            json("200 OK", r#"{"checksum":"sha256:1"}"#)
        } else {
            json("404 Not Found", r#"{"error":{"message":"no team memory yet"}}"#)
        }
    });
    let t = TestHome::new();
    let Some(drive) = Exfat::mount(&t.root.join("drives/stick")) else { return };
    let project = drive.path().join("shop");
    std::fs::create_dir_all(&project).unwrap();
    git(&project, &["init", "-q"]);
    git(&project, &["remote", "add", "origin", "git@github.com:acme/shop.git"]);
    // A project on the home's disk whose memory folder is on the drive.
    let alpha = t.git_repo("code/alpha");
    git(&alpha, &["remote", "add", "origin", "git@github.com:acme/alpha.git"]);
    let memory = drive.path().join("alpha-memory");
    t.write(alpha.join(".claude/settings.local.json"), &format!(r#"{{"autoMemoryDirectory": "{}"}}"#, memory.display()));
    let store = Arc::new(MemoryStore::default());
    let c = Credentials { access_token: "t0k3n".into(), refresh_token: None, expires_at_ms: u64::MAX / 2, user: Some("ana".into()), extra: Default::default() };
    store.save(&url, &c).unwrap();
    let env = t.env.clone().set_var("TEAM_MEMORY_SYNC_URL", &url);
    let mneme = Arc::new(Mneme::new(env, Arc::new(SystemClock)).with_team_credentials(store));

    let hung = hung_drive::stop(&drive, &project, NEVER);

    type Op = fn(&Mneme, &std::path::Path) -> Result<(), ApiError>;
    let ops: Vec<(&str, Op)> = vec![
        ("team_status", |m, p| m.team_status(&req(p)).map(drop)),
        ("team_remote", |m, p| m.team_remote(&req(p)).map(drop)),
        ("team_pull", |m, p| m.team_pull(&req(p)).map(drop)),
        ("team_push", |m, p| m.team_push(&req(p)).map(drop)),
        ("team_sync", |m, p| m.team_sync(&req(p)).map(drop)),
        ("team_history", |m, p| m.team_history(&req(p), "deploy.md").map(drop)),
        ("team_remove", |m, p| m.team_remove(&req(p), "deploy.md").map(drop)),
        ("team_restore_conflict", |m, p| m.team_restore_conflict(&req(p), "1796601600000-abcdef").map(drop)),
        // `mneme team status / pull / push`.
        ("team_sync_status", |m, p| m.team_sync_status(p).map(drop)),
        ("team_pull_report", |m, p| m.team_pull_report(p, false).map(drop)),
        ("team_push_report", |m, p| m.team_push_report(p).map(drop)),
    ];
    // The app's words are the shells' own for a drive that does not answer; the command line's
    // the sync client's, which name no screen.
    let words = |name: &str, dir: &std::path::Path| {
        if ["team_sync_status", "team_pull_report", "team_push_report"].contains(&name) {
            format!(
                "The drive holding {} is not answering (a network share or USB drive that hangs?). Check that it is still connected or mounted, then try again.",
                dir.display()
            )
        } else {
            mneme_api::drive_check::not_answering(dir).message
        }
    };
    for (name, op) in ops {
        for (folder, drive_of) in [(&project, &project), (&alpha, &memory)] {
            let (m, p) = (mneme.clone(), folder.clone());
            let answer = hung_drive::within(&format!("{name} in {}", folder.display()), move || op(&m, &p));
            let e = answer.expect_err(name);
            assert_eq!((e.code, e.message), (ErrorCode::Unavailable, words(name, drive_of)), "{name} in {}", folder.display());
        }
    }
    assert!(!hung.rescued(), "a team operation hung with the drive");
    assert!(seen.lock().unwrap().is_empty(), "the server was asked: {:?}", seen.lock().unwrap());

    // The drive answers again: the same operations sync. (The looks blocked on it return as
    // its daemon continues; until then it still counts as not answering.)
    drop(hung);
    wait::until_within(hung_drive::GIVE_UP, "the drive answering once its daemon continued", || {
        mneme_store::drive::answers(&project) && mneme_store::drive::answers(&memory)
    });
    let req = req(&project);
    assert!(mneme.team_pull(&req).unwrap().written.is_empty());
    write_file(&t.memdir_for(&project).join("team/deploy.md"), "Deploy from the release branch.");
    assert_eq!(mneme.team_push(&req).unwrap().uploaded, ["deploy.md"]);
    assert_eq!(mneme.team_status(&req).unwrap().repo.as_deref(), Some("acme/shop"));
    assert_eq!(mneme.team_push_report(&project).unwrap().uploaded.len(), 0, "nothing new to push");
    assert_eq!(mneme.team_status(&self::req(&alpha)).unwrap().memory_dir, memory);
    assert!(mneme.team_pull_report(&alpha, false).unwrap().written.is_empty());
    drop(drive);
}
