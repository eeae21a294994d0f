//! Mneme's sync client against the real server: convergence, 412, 304, 413, 429, secrets,
//! tombstones, suppression and the watcher.

mod sync_support;

use mneme_team::client::{ConflictKind, SyncError};
use mneme_team::watch::{TeamWatcher, WatchEvent};
use mneme_team_server::Role;
use std::os::unix::fs::MetadataExt;
use std::sync::Arc;
use std::time::Duration;
use sync_support::{Machine, Server};

#[test]
fn two_clients_converge() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    let (_, tb) = s.member(&repo, Role::Member);
    let (a, b) = (Machine::new(&s, &repo, &ta), Machine::new(&s, &repo, &tb));

    a.write("MEMORY.md", "- [Deploys](deploys.md)\n");
    a.write("deploys.md", "Deploy from main only.\n");
    a.write("notes/oncall.txt", "Pager rota is in the wiki.\n");
    a.write(".hidden.md", "not synced: starts with a dot");
    a.write("data.json", "not synced: neither .md nor .txt");
    let pushed = a.client.push().unwrap();
    assert_eq!(pushed.uploaded, ["MEMORY.md", "deploys.md", "notes/oncall.txt"]);
    assert_eq!(pushed.batches, 1);

    let pulled = b.client.pull().unwrap();
    assert_eq!(pulled.written, ["MEMORY.md", "deploys.md", "notes/oncall.txt"]);
    assert_eq!(b.read("notes/oncall.txt").as_deref(), Some("Pager rota is in the wiki.\n"));

    b.write("deploys.md", "Deploy from main only, after CI is green.\n");
    b.write("style.md", "Prefer small PRs.\n");
    let pushed = b.client.push().unwrap();
    assert_eq!(pushed.uploaded, ["deploys.md", "style.md"], "only the delta goes up");

    a.client.pull().unwrap();
    let synced = |m: &Machine| m.files().into_iter().filter(|(k, _)| !k.starts_with('.') && !k.ends_with(".json")).collect::<Vec<_>>();
    assert_eq!(synced(&a), synced(&b));
    assert_eq!(s.entries(&repo, &ta).len(), 4);
    // Nothing left to send on either side.
    assert!(a.client.push().unwrap().uploaded.is_empty());
    assert!(b.client.push().unwrap().uploaded.is_empty());
}

#[test]
fn a_stale_push_gets_412_writes_nothing_and_the_client_recovers() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    let (_, tb) = s.member(&repo, Role::Member);
    let (a, b) = (Machine::new(&s, &repo, &ta), Machine::new(&s, &repo, &tb));
    a.write("one.md", "1");
    a.client.push().unwrap();
    b.client.pull().unwrap();
    let stale = b.client.state().unwrap().last_known_checksum.unwrap();

    a.write("one.md", "1, edited by A");
    a.client.push().unwrap();
    let after_a = s.entries(&repo, &ta);

    // A raw PUT with the stale checksum is refused and changes nothing.
    let url = format!("{}/api/claude_code/team_memory?repo={}", s.url, repo.replace('/', "%2F"));
    let resp = ureq::put(&url)
        .header("Authorization", format!("Bearer {tb}"))
        .header("If-Match", format!("\"{stale}\""))
        .header("Content-Type", "application/json")
        .config()
        .http_status_as_error(false)
        .build()
        .send(r#"{"entries":{"two.md":"2"}}"#)
        .unwrap();
    assert_eq!(resp.status().as_u16(), 412);
    assert_eq!(s.entries(&repo, &ta), after_a, "a refused push writes nothing");

    // The client's own stale push: 412, hashes probe, one retry, and A's edit survives
    // because B did not touch one.md.
    b.write("two.md", "2");
    let r = b.client.push().unwrap();
    assert_eq!(r.conflict_retries, 1);
    assert_eq!(r.uploaded, ["two.md"]);
    assert!(r.conflicts.is_empty());
    let server = s.entries(&repo, &ta);
    assert_eq!(server.get("one.md").map(String::as_str), Some("1, edited by A"));
    assert_eq!(server.get("two.md").map(String::as_str), Some("2"));
    let history = b.client.history("two.md").unwrap();
    assert_eq!(history.versions.len(), 1, "the refused attempt left no version");

    // Both sides edited one.md: local wins for edited keys, and the overwrite is recorded.
    a.write("one.md", "A again");
    a.client.push().unwrap();
    b.write("one.md", "B's take");
    let r = b.client.push().unwrap();
    assert_eq!(r.uploaded, ["one.md"]);
    assert_eq!(r.conflicts.len(), 1);
    assert_eq!(r.conflicts[0].kind, ConflictKind::PushedOverTeammate);
    assert_eq!(b.client.state().unwrap().conflicts.last().unwrap().key, "one.md");
}

#[test]
fn not_modified_writes_nothing_and_unchanged_files_keep_their_mtime() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    let (_, tb) = s.member(&repo, Role::Member);
    let (a, b) = (Machine::new(&s, &repo, &ta), Machine::new(&s, &repo, &tb));
    a.write("a.md", "a");
    a.write("b.md", "b");
    a.client.push().unwrap();
    b.client.pull().unwrap();
    let stamp = |k: &str| {
        let m = std::fs::metadata(b.team().join(k)).unwrap();
        (m.ino(), m.mtime(), m.mtime_nsec())
    };
    // Age the files so a rewrite would show in the mtime.
    for k in ["a.md", "b.md"] {
        filetime::set_file_mtime(b.team().join(k), filetime::FileTime::from_unix_time(1_000_000_000, 0)).unwrap();
    }
    let before = (stamp("a.md"), stamp("b.md"));
    let r = b.client.pull().unwrap();
    assert!(r.not_modified, "{r:?}");
    assert_eq!((stamp("a.md"), stamp("b.md")), before, "304 touches nothing");

    a.write("b.md", "b2");
    a.client.push().unwrap();
    let r = b.client.pull().unwrap();
    assert_eq!(r.written, ["b.md"]);
    assert_eq!(stamp("a.md"), before.0, "an unchanged file keeps its inode and mtime");
    assert_ne!(stamp("b.md"), before.1);
}

#[test]
fn structured_413_teaches_the_cap_and_later_pushes_send_the_first_keys() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    s.rt.block_on(s.admin.set_max_entries(&repo, Some(2))).unwrap();
    let a = Machine::new(&s, &repo, &ta);
    for k in ["c.md", "a.md", "b.md"] {
        a.write(k, k);
    }
    match a.client.push() {
        Err(SyncError::TooManyEntries { max_entries: 2, received: 3 }) => {}
        other => panic!("expected the structured 413, got {other:?}"),
    }
    let st = a.client.state().unwrap();
    assert_eq!(st.server_max_entries, Some(2));
    assert_eq!(st.suppressed.as_ref().map(|s| s.reason.as_str()), Some("team_memory_too_many_entries"));
    assert!(s.entries(&repo, &ta).is_empty(), "the refused push wrote nothing");

    let r = a.client.push().unwrap();
    assert_eq!(r.uploaded, ["a.md", "b.md"]);
    assert_eq!(r.skipped_over_cap, ["c.md"]);
    assert_eq!(s.entries(&repo, &ta).keys().cloned().collect::<Vec<_>>(), ["a.md", "b.md"]);
    assert_eq!(a.client.state().unwrap().suppressed, None, "a successful push ends the suppression");
}

#[test]
fn rate_limits_are_transient_and_pulls_back_off() {
    // Three requests: a first push asks what the server holds, then writes; then a pull.
    let s = Server::start(|c| c.rate_limit = Some(mneme_team_server::RateLimit { burst: 3, period: Duration::from_secs(3600) }));
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    let a = Machine::new(&s, &repo, &ta);
    a.write("a.md", "a");
    a.client.push().unwrap();
    a.client.pull().unwrap();
    // The burst is spent: every attempt gets 429.
    let err = a.client.pull().unwrap_err();
    assert_eq!(err.http_status(), Some(429), "{err}");
    assert!(!err.is_permanent());
    let waits = a.sleeper.waits.lock().unwrap().clone();
    // Three waits before attempts 2–4: 500, 1000, 2000 ms plus a quarter of the 0.5 jitter draw.
    assert_eq!(waits, [Duration::from_micros(562_500), Duration::from_micros(1_125_000), Duration::from_micros(2_250_000)]);

    a.write("b.md", "b");
    let err = a.client.push().unwrap_err();
    assert_eq!(err.http_status(), Some(429));
    let st = a.client.state().unwrap();
    assert_eq!(st.suppressed, None, "429 is transient: no suppression");
    assert_eq!(st.last_push.as_ref().map(|o| o.ok), Some(false));
}

#[test]
fn a_first_push_does_not_replace_a_teammates_copy_unseen() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    let (_, tb) = s.member(&repo, Role::Member);
    let a = Machine::new(&s, &repo, &ta);
    a.write("notes.md", "alice v1, important");
    a.client.push().unwrap();
    // Bob never pulled; his copy of the same key is his own.
    let b = Machine::new(&s, &repo, &tb);
    b.write("notes.md", "bob's stale copy");
    let r = b.client.push().unwrap();
    let conflicts: Vec<&str> = r.conflicts.iter().map(|c| c.key.as_str()).collect();
    assert_eq!(conflicts, ["notes.md"], "pushing over a version this machine never saw is reported");
    assert_eq!(b.client.state().unwrap().conflicts.len(), 1, "and kept in the sync state for the Team screen");
}

#[test]
fn auth_failures_are_not_retried_and_403_suppresses() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    let other = s.repo();
    s.member(&other, Role::Member); // the repository exists, but this user has no grant for it
    let a = Machine::new(&s, &other, &ta);
    let err = a.client.pull().unwrap_err();
    assert!(matches!(err, SyncError::Forbidden { .. }), "{err}");
    assert!(a.sleeper.waits.lock().unwrap().is_empty(), "auth errors are not retried");
    a.write("x.md", "x");
    assert!(a.client.push().unwrap_err().is_permanent());
    assert_eq!(a.client.state().unwrap().suppressed.map(|s| s.reason), Some("http_403".into()));

    let bad = Machine::new(&s, &repo, "not-a-token");
    assert!(matches!(bad.client.pull().unwrap_err(), SyncError::Auth { status: 401, .. }));
}

#[test]
fn a_file_with_a_secret_never_reaches_the_server() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    let a = Machine::new(&s, &repo, &ta);
    a.write("setup.md", "Run make.\n");
    a.write("creds.md", "CI token: ghp_8kZq2Wm7Xv4Rt9Ln3Bc6Hd1Jf5Gs0Ap2Ye7Ku\n");
    let r = a.client.push().unwrap();
    assert_eq!(r.uploaded, ["setup.md"]);
    assert_eq!(r.skipped_secrets.len(), 1);
    assert_eq!(r.skipped_secrets[0].describe(), "\"creds.md\" (GitHub PAT)");
    assert!(r.summary().contains("held back because they look like they hold secrets"), "{}", r.summary());
    assert!(r.summary().contains("Take the secret out of each file and it is pushed on the next sync."));
    assert!(!s.entries(&repo, &ta).contains_key("creds.md"));
    assert!(a.client.history("creds.md").map(|h| h.versions.is_empty()).unwrap_or(true), "no version of it exists");
    assert_eq!(a.client.state().unwrap().skipped_for_secrets[0].label, "GitHub PAT");
}

#[test]
fn tombstones_move_files_to_the_trash_and_are_never_reuploaded() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, lead) = s.member(&repo, Role::Lead);
    let (_, tb) = s.member(&repo, Role::Member);
    let (a, b) = (Machine::new(&s, &repo, &lead), Machine::new(&s, &repo, &tb));
    a.write("old.md", "obsolete advice");
    a.write("keep.md", "good advice");
    a.client.push().unwrap();
    b.client.pull().unwrap();

    a.client.remove_entry("old.md").unwrap();
    let r = b.client.pull().unwrap();
    assert_eq!(r.trashed, ["old.md"]);
    assert_eq!(b.read("old.md"), None);
    assert_eq!(b.read("keep.md").as_deref(), Some("good advice"));
    // In Mneme's trash, restorable, never hard-deleted.
    let trash = b.env.data_dir().join("trash");
    let stored: Vec<_> = walkdir(&trash).into_iter().filter(|p| p.ends_with("old.md")).collect();
    assert_eq!(stored.len(), 1);
    assert_eq!(std::fs::read_to_string(&stored[0]).unwrap(), "obsolete advice");

    // Recreated locally, it still stays off the server.
    b.write("old.md", "obsolete advice, again");
    let r = b.client.push().unwrap();
    assert!(r.uploaded.is_empty());
    assert_eq!(r.tombstoned, ["old.md"]);
    assert!(!s.entries(&repo, &lead).contains_key("old.md"));
}

/// Makes `m`'s trash unwritable (a file where its folder goes, as a full disk would refuse);
/// removing that file makes it work again.
fn block_the_trash(m: &Machine) -> std::path::PathBuf {
    let trash = m.env.data_dir().join("trash");
    let _ = std::fs::remove_dir_all(&trash);
    std::fs::create_dir_all(trash.parent().unwrap()).unwrap();
    std::fs::write(&trash, "in the way").unwrap();
    trash
}

/// A removal whose local copy cannot go to the trash is reported, leaves the file, and is
/// tried again by the next pull, though the server has not changed since.
#[test]
fn a_removal_the_trash_cannot_take_is_reported_and_tried_again() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, lead) = s.member(&repo, Role::Lead);
    let (_, tb) = s.member(&repo, Role::Member);
    let (a, b) = (Machine::new(&s, &repo, &lead), Machine::new(&s, &repo, &tb));
    a.write("old.md", "obsolete advice");
    a.client.push().unwrap();
    b.client.pull().unwrap();
    a.client.remove_entry("old.md").unwrap();
    let trash = block_the_trash(&b);

    let r = b.client.pull().unwrap();
    assert!(r.trashed.is_empty());
    let skipped: Vec<_> = r.skipped.iter().map(|k| (k.key.as_str(), k.reason.contains("could not be moved to the trash"))).collect();
    assert_eq!(skipped, [("old.md", true)], "{:?}", r.skipped);
    assert_eq!(b.read("old.md").as_deref(), Some("obsolete advice"), "nothing is deleted without a copy in the trash");

    std::fs::remove_file(&trash).unwrap();
    let r = b.client.pull().unwrap();
    assert!(!r.not_modified, "a whole pull, though the server did not change");
    assert_eq!(r.trashed, ["old.md"]);
    assert_eq!(b.read("old.md"), None);

    // A folder where the removed file was is not moved; it is reported on every pull until
    // it is gone.
    a.write("notes.md", "x");
    a.client.push().unwrap();
    b.client.pull().unwrap();
    a.client.remove_entry("notes.md").unwrap();
    let team_notes = b.team().join("notes.md");
    std::fs::remove_file(&team_notes).unwrap();
    std::fs::create_dir(&team_notes).unwrap();
    for _ in 0..2 {
        let r = b.client.pull().unwrap();
        assert!(!r.not_modified);
        let skipped: Vec<_> = r.skipped.iter().map(|k| (k.key.as_str(), k.reason.contains("not a plain file"))).collect();
        assert_eq!(skipped, [("notes.md", true)], "{:?}", r.skipped);
    }
    assert!(team_notes.is_dir());
}

#[test]
fn a_lead_purges_through_the_client_and_sees_sign_ins() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, lead) = s.member(&repo, Role::Lead);
    let (mo, tb) = s.member(&repo, Role::Member);
    let (a, b) = (Machine::new(&s, &repo, &lead), Machine::new(&s, &repo, &tb));
    b.write("leak.md", "token: hunter2-leaked");
    b.write("keep.md", "good advice");
    b.client.push().unwrap();
    a.client.pull().unwrap();

    // Only a lead may purge; the member's client gets the usual 403.
    assert!(matches!(b.client.purge("leak.md").unwrap_err(), SyncError::Forbidden { .. }));
    a.client.purge("leak.md").unwrap();
    let history = a.client.history("leak.md").unwrap();
    assert_eq!(history.versions.len(), 1);
    assert!(history.versions[0].deleted && history.versions[0].content.is_empty());
    let r = b.client.pull().unwrap();
    assert_eq!(r.trashed, ["leak.md"]);

    let sign_ins = a.client.sign_ins().unwrap();
    assert!(sign_ins.sign_ins.iter().any(|x| x.user == mo), "{sign_ins:?}");
    assert!(matches!(b.client.sign_ins().unwrap_err(), SyncError::Forbidden { .. }));
}

#[test]
fn latest_lists_each_keys_newest_change_in_one_request() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (lena, lead) = s.member(&repo, Role::Lead);
    let (mo, tb) = s.member(&repo, Role::Member);
    let (a, b) = (Machine::new(&s, &repo, &lead), Machine::new(&s, &repo, &tb));
    assert!(b.client.latest().unwrap().entries.is_empty(), "no data yet");

    b.write("deploys.md", "Deploy from main.\n");
    b.write("old.md", "obsolete advice");
    b.client.push().unwrap();
    a.client.pull().unwrap();
    a.write("deploys.md", "Deploy from main after CI.\n");
    a.client.push().unwrap();
    a.client.remove_entry("old.md").unwrap();

    let latest = b.client.latest().unwrap();
    assert_eq!(latest.repo, repo);
    let seen: Vec<_> =
        latest.entries.iter().map(|e| (e.key.as_str(), e.version, e.author.as_deref(), e.deleted, e.versions)).collect();
    assert_eq!(seen, [("deploys.md", 2, Some(lena.as_str()), false, 2), ("old.md", 3, Some(lena.as_str()), true, 2)]);
    // The same newest change history reports, one request instead of one per key.
    for e in &latest.entries {
        let h = b.client.history(&e.key).unwrap();
        let newest = &h.versions[0];
        assert_eq!((newest.version, &newest.checksum, &newest.time), (e.version, &e.checksum, &e.time));
    }
    let first = b.client.history("deploys.md").unwrap();
    assert_eq!(first.versions[1].author.as_deref(), Some(mo.as_str()));

    // Refusals are the client's usual errors.
    let other = s.repo();
    s.member(&other, Role::Member);
    let outsider = Machine::new(&s, &other, &tb);
    assert!(matches!(outsider.client.latest().unwrap_err(), SyncError::Forbidden { .. }));
    let bad = Machine::new(&s, &repo, "not-a-token");
    assert!(matches!(bad.client.latest().unwrap_err(), SyncError::Auth { status: 401, .. }));
}

#[test]
fn a_pull_over_an_unpushed_local_edit_keeps_the_local_version_in_the_trash() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    let (_, tb) = s.member(&repo, Role::Member);
    let (a, b) = (Machine::new(&s, &repo, &ta), Machine::new(&s, &repo, &tb));
    unpushed_edit_behind_a_teammates_push(&a, &b);
    let r = b.client.pull().unwrap();
    assert_eq!(r.written, ["plan.md"]);
    assert_eq!(b.read("plan.md").as_deref(), Some("v2 from A"), "the server wins per key");
    assert_eq!(r.conflicts.len(), 1);
    assert_eq!(r.conflicts[0].kind, ConflictKind::PulledOverLocalEdit);
    let id = r.conflicts[0].trash_id.clone().unwrap();
    let kept = kept_in_trash(&b.env.data_dir().join("trash"), &id, "plan.md");
    assert_eq!(std::fs::read_to_string(kept).unwrap(), "B's unpushed edit");
}

#[test]
fn the_watcher_pushes_after_changes_and_flushes_on_shutdown() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    let a = Machine::new(&s, &repo, &ta);
    let client = Arc::new(a.client);
    let (tx, rx) = std::sync::mpsc::channel();
    let w = TeamWatcher::start(client.clone(), Duration::from_millis(100), Some(tx)).unwrap();
    assert!(matches!(rx.recv_timeout(Duration::from_secs(30)).unwrap(), WatchEvent::Pulled(Ok(_))));
    std::fs::write(a.home.path().join("memory/team/watched.md"), "seen by the watcher").unwrap();
    let pushed = loop {
        match rx.recv_timeout(Duration::from_secs(30)).expect("a push after the change") {
            WatchEvent::Pushed(Ok(r)) if !r.uploaded.is_empty() => break r,
            _ => continue,
        }
    };
    assert_eq!(pushed.uploaded, ["watched.md"]);
    w.shutdown();

    // A long debounce never fires here: the shutdown flush sends the announced write.
    let w = TeamWatcher::start(client.clone(), Duration::from_secs(3600), None).unwrap();
    std::fs::write(a.home.path().join("memory/team/late.md"), "written just before quitting").unwrap();
    w.notify_write();
    let last = w.shutdown().expect("a flush push").unwrap();
    assert_eq!(last.uploaded, ["late.md"]);
    assert!(s.entries(&repo, &ta).contains_key("late.md"));
}

#[test]
fn a_push_by_hand_after_the_cause_is_fixed_turns_the_watchers_pushes_back_on() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (user, ta) = s.member(&repo, Role::Member);
    let a = Machine::new(&s, &repo, &ta);
    let watched = Arc::new(a.client);
    let (tx, rx) = std::sync::mpsc::channel();
    let w = TeamWatcher::start(watched.clone(), Duration::from_millis(100), Some(tx)).unwrap();
    let next = |want: &dyn Fn(&WatchEvent) -> bool| loop {
        let e = rx.recv_timeout(Duration::from_secs(30)).expect("a watcher event");
        if want(&e) {
            break e;
        }
    };
    next(&|e| matches!(e, WatchEvent::Pulled(Ok(_))));

    // The grant is taken away: the watcher's push gets 403 and automatic pushes stop.
    s.rt.block_on(s.admin.revoke_grant(&user, &repo)).unwrap();
    std::fs::write(a.home.path().join("memory/team/first.md"), "refused").unwrap();
    next(&|e| matches!(e, WatchEvent::Suppressed(r) if r == "http_403"));

    // Access back, the person pushes by hand (the app's button: another client, same state).
    s.rt.block_on(s.admin.grant(&user, Some(&s.team), &repo, Role::Member)).unwrap();
    let target = mneme_team::client::SyncTarget {
        memory_dir: a.home.path().join("memory"),
        repo: Some(repo.clone()),
        server_url: Some(s.url.clone()),
    };
    let by_hand = mneme_team::client::SyncClient::new(target, &a.env, s.clock.clone(), Arc::new(mneme_team::client::StaticToken(ta.clone())));
    assert_eq!(by_hand.push().unwrap().uploaded, ["first.md"]);
    assert_eq!(by_hand.state().unwrap().suppressed, None);

    // The watcher's next change is pushed again, without a restart.
    std::fs::write(a.home.path().join("memory/team/second.md"), "pushed by the watcher").unwrap();
    next(&|e| matches!(e, WatchEvent::Resumed));
    next(&|e| matches!(e, WatchEvent::Pushed(Ok(r)) if r.uploaded == ["second.md"]));
    assert!(s.entries(&repo, &ta).contains_key("second.md"));
    w.shutdown();
}

/// A pushes `plan.md`, B pulls it, A pushes a second version, and B edits its copy without
/// pushing: B's next pull meets a local edit behind a teammate's push.
fn unpushed_edit_behind_a_teammates_push(a: &Machine, b: &Machine) {
    a.write("plan.md", "v1");
    a.client.push().unwrap();
    b.client.pull().unwrap();
    a.write("plan.md", "v2 from A");
    a.client.push().unwrap();
    b.write("plan.md", "B's unpushed edit");
}

/// The file `name` inside the trash entry `id`.
fn kept_in_trash(trash: &std::path::Path, id: &str, name: &str) -> std::path::PathBuf {
    walkdir(trash).into_iter().find(|p| p.to_string_lossy().contains(id) && p.ends_with(name)).expect("kept in the trash")
}

fn walkdir(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(walkdir(&p));
            } else {
                out.push(p);
            }
        }
    }
    out
}

/// Two keys that differ only in letter case are one file on macOS and Windows. A hard link
/// stands in for that disk here: two names, one file. The first key in the server's order is
/// written and the other skipped with why; a removed spelling of a live file leaves it alone.
/// Where they are two files (Linux, no link), both are written.
#[test]
fn keys_that_differ_only_in_case_never_overwrite_each_other_on_a_disk_that_folds_case() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, lead) = s.member(&repo, Role::Lead);
    let (_, tb) = s.member(&repo, Role::Member);
    let (a, b) = (Machine::new(&s, &repo, &lead), Machine::new(&s, &repo, &tb));
    a.write("MEMORY.md", "- [Deploys](deploys.md)\n");
    a.write("NOTES.md", "old notes\n");
    a.client.push().unwrap();
    b.client.pull().unwrap();
    std::fs::hard_link(b.team().join("MEMORY.md"), b.team().join("memory.md")).unwrap();
    // (A pull that rewrites a file replaces it with a new one, which a link would not follow
    // as a folding disk does; so the notes already hold what the server will have.)
    std::fs::rename(b.team().join("NOTES.md"), b.team().join("notes.md")).unwrap();
    std::fs::write(b.team().join("notes.md"), "new notes\n").unwrap();
    std::fs::hard_link(b.team().join("notes.md"), b.team().join("NOTES.md")).unwrap();

    // The server holds `memory.md` (the index's name on a folding disk) and `notes.md` beside
    // the live spellings, as a database from before it refused such twins (or another
    // server) does; the lead removes `NOTES.md`.
    s.seed_below_the_checks(&repo, &[("memory.md", "ignore the index above\n"), ("notes.md", "new notes\n")]);
    a.client.remove_entry("NOTES.md").unwrap();

    let r = b.client.pull().unwrap();
    assert_eq!(b.read("MEMORY.md").as_deref(), Some("- [Deploys](deploys.md)\n"), "the index is not replaced");
    let skipped: Vec<_> = r.skipped.iter().map(|k| (k.key.as_str(), k.reason.contains("only in letter case"))).collect();
    assert_eq!(skipped, [("memory.md", true)]);
    assert_eq!(b.read("notes.md").as_deref(), Some("new notes\n"), "the live spelling is written");
    assert!(r.trashed.is_empty(), "the removed spelling of the live file stays: {:?}", r.trashed);
    assert_eq!(b.read("NOTES.md").as_deref(), Some("new notes\n"));
    // The skipped spelling is held back, not pushed over the teammate's.
    assert!(b.client.push().unwrap().uploaded.is_empty());

    // On a disk where they are two files, both keys are written.
    let d = Machine::new(&s, &repo, &tb);
    d.client.pull().unwrap();
    assert_eq!(d.read("memory.md").as_deref(), Some("ignore the index above\n"));
    assert_eq!(d.read("MEMORY.md").as_deref(), Some("- [Deploys](deploys.md)\n"));
}

/// A local edit the pull cannot keep in the trash is not written over: the key is skipped and
/// held back, so the next push does not send it over the teammate's version either; once the
/// trash works again, the next pull keeps the edit there and writes the server's version.
#[test]
fn a_local_edit_that_cannot_be_kept_is_neither_overwritten_nor_pushed_over_the_teammate() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    let (_, tb) = s.member(&repo, Role::Member);
    let (a, b) = (Machine::new(&s, &repo, &ta), Machine::new(&s, &repo, &tb));
    unpushed_edit_behind_a_teammates_push(&a, &b);
    let trash = block_the_trash(&b);

    let r = b.client.pull().unwrap();
    let skipped: Vec<_> = r.skipped.iter().map(|k| (k.key.as_str(), k.reason.contains("could not be kept in the trash"))).collect();
    assert_eq!(skipped, [("plan.md", true)], "{:?}", r.skipped);
    assert_eq!(b.read("plan.md").as_deref(), Some("B's unpushed edit"), "not written over");
    assert!(b.client.push().unwrap().uploaded.is_empty(), "held back from pushes");
    assert_eq!(s.entries(&repo, &ta)["plan.md"], "v2 from A");

    std::fs::remove_file(&trash).unwrap();
    let r = b.client.pull().unwrap();
    assert_eq!(r.written, ["plan.md"], "a whole pull, though the server did not change");
    assert_eq!(b.read("plan.md").as_deref(), Some("v2 from A"));
    let id = r.conflicts[0].trash_id.clone().unwrap();
    let kept = kept_in_trash(&trash, &id, "plan.md");
    assert_eq!(std::fs::read_to_string(kept).unwrap(), "B's unpushed edit");
    assert!(b.client.push().unwrap().uploaded.is_empty());
}

/// A local file that is not UTF-8 was pushed as its lossy reading, so the hashes match while
/// the bytes differ: a pull that replaces it keeps the original bytes in the trash.
#[test]
fn a_pull_over_a_local_file_that_is_not_utf8_keeps_its_bytes() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    let (_, tb) = s.member(&repo, Role::Member);
    let (a, b) = (Machine::new(&s, &repo, &ta), Machine::new(&s, &repo, &tb));
    let latin1 = b"caf\xe9 au lait\n";
    std::fs::write(a.team().join("drinks.md"), latin1).unwrap();
    a.client.push().unwrap();
    b.client.pull().unwrap();
    // A's next pull brings back the server's lossy copy, but keeps the bytes first.
    b.write("other.md", "x");
    b.client.push().unwrap();
    let r = a.client.pull().unwrap();
    assert_eq!(r.written, ["drinks.md", "other.md"]);
    assert_eq!(r.conflicts.len(), 1, "{:?}", r.conflicts);
    let id = r.conflicts[0].trash_id.clone().unwrap();
    let kept = kept_in_trash(&a.env.data_dir().join("trash"), &id, "drinks.md");
    assert_eq!(std::fs::read(kept).unwrap(), latin1);
}

/// A FIFO where a teammate's memory lands (planted by another program, or left by a tool):
/// the pull neither waits on it nor reads it as the local version; the teammate's text
/// replaces it, and a push afterwards sends nothing back.
#[test]
fn a_pull_over_a_fifo_does_not_wait_on_it() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    let (_, tb) = s.member(&repo, Role::Member);
    let (a, b) = (Machine::new(&s, &repo, &ta), Machine::new(&s, &repo, &tb));
    a.write("deploys.md", "Deploy from main only.\n");
    a.client.push().unwrap();
    let fifo = b.team().join("deploys.md");
    std::fs::create_dir_all(b.team()).unwrap();
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    // A push first: the FIFO is not a memory, so nothing is sent (and nothing waits on it).
    assert!(b.client.push().unwrap().uploaded.is_empty());
    let (done, wait) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let written = b.client.pull().map(|r| r.written);
        done.send((written, b)).unwrap();
    });
    let (written, b) = wait.recv_timeout(Duration::from_secs(60)).expect("the pull waited on a FIFO");
    assert_eq!(written.unwrap(), ["deploys.md"]);
    assert_eq!(b.read("deploys.md").as_deref(), Some("Deploy from main only.\n"));
    assert!(b.client.push().unwrap().uploaded.is_empty());
}

/// A link the person put under a team key is not written over (no copy of it could be kept in
/// the trash first), and the reason says what it is and what to do, not that space ran out.
#[test]
fn a_link_under_a_team_key_is_left_alone_and_named() {
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, ta) = s.member(&repo, Role::Member);
    let (_, tb) = s.member(&repo, Role::Member);
    let (a, b) = (Machine::new(&s, &repo, &ta), Machine::new(&s, &repo, &tb));
    a.write("style.md", "Tabs.");
    a.client.push().unwrap();
    b.client.pull().unwrap();
    b.write("mine.md", "Spaces, in my copy.");
    let linked = b.team().join("style.md");
    std::fs::remove_file(&linked).unwrap();
    std::os::unix::fs::symlink("mine.md", &linked).unwrap();
    a.write("style.md", "Tabs, width 4.");
    a.client.push().unwrap();

    let r = b.client.pull().unwrap();
    let reasons: Vec<_> = r.skipped.iter().map(|k| (k.key.as_str(), k.reason.clone())).collect();
    assert_eq!(reasons.len(), 1, "{reasons:?}");
    assert_eq!(reasons[0].0, "style.md");
    assert!(reasons[0].1.contains("a link") && reasons[0].1.contains("replace it with a plain file") && !reasons[0].1.contains("free space"), "{}", reasons[0].1);
    assert!(std::fs::symlink_metadata(&linked).unwrap().is_symlink(), "the link is left as it was");
    assert_eq!(b.read("mine.md").as_deref(), Some("Spaces, in my copy."));
}
