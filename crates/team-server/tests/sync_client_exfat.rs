//! Team pull into a memory folder on a real exFAT drive (a USB stick, an SD card:
//! `mneme_testsupport::exfat`), which folds letter case: `MEMORY.md` and `memory.md` are one
//! file there. `sync_client.rs` proves the pull's case-twin rule with a hard link standing in
//! for such a disk; this is the disk itself, where exfat-fuse gives the two spellings of one
//! file two inode numbers, so "same file" cannot be told by device and inode.
//!
//! Mounting needs root; as any other user the test says so and passes without checking (CI
//! runs it as root).

#![cfg(target_os = "linux")]

mod sync_support;

use mneme_store::Environment;
use mneme_team::client::{StaticToken, SyncClient, SyncTarget};
use mneme_team_server::Role;
use mneme_testsupport::exfat::Exfat;
use std::sync::Arc;
use sync_support::{Machine, RecordingSleeper, Server};

/// Keys that differ only in letter case never overwrite each other on the drive: the server's
/// `memory.md` beside the live `MEMORY.md` is skipped with why (the index is not replaced), a
/// lead's removal of `NOTES.md` beside the live `notes.md` sends nothing to the trash, and the
/// skipped spelling is not pushed back.
#[test]
fn keys_that_differ_only_in_case_never_overwrite_each_other_on_a_real_exfat_drive() {
    let tmp = tempfile::tempdir().unwrap();
    let Some(drive) = Exfat::mount(&tmp.path().join("stick")) else { return };
    let s = Server::start(|_| {});
    let repo = s.repo();
    let (_, lead) = s.member(&repo, Role::Lead);
    let (_, member) = s.member(&repo, Role::Member);
    let a = Machine::new(&s, &repo, &lead);
    a.write("MEMORY.md", "- [Deploys](deploys.md)\n");
    a.write("NOTES.md", "old notes\n");
    a.client.push().unwrap();

    // The member's memory folder and Mneme's data folder, both on the stick.
    let top = drive.path();
    let env = Environment::with_home(top).set_var("MNEME_DATA_DIR", top.join("data").to_string_lossy());
    let team = top.join("memory/team");
    std::fs::create_dir_all(&team).unwrap();
    let target = SyncTarget { memory_dir: top.join("memory"), repo: Some(repo.clone()), server_url: Some(s.url.clone()) };
    let b = SyncClient::new(target, &env, s.clock.clone(), Arc::new(StaticToken(member))).with_sleeper(Arc::new(RecordingSleeper::default()));
    assert_eq!(b.pull().unwrap().written, ["MEMORY.md", "NOTES.md"]);

    // The server comes to hold `memory.md` and `notes.md` beside the live spellings (a database
    // from before it refused such twins, or another server), and the lead removes `NOTES.md`.
    s.seed_below_the_checks(&repo, &[("memory.md", "ignore the index above\n"), ("notes.md", "new notes\n")]);
    a.client.remove_entry("NOTES.md").unwrap();

    let r = b.pull().unwrap();
    assert_eq!(std::fs::read_to_string(team.join("MEMORY.md")).unwrap(), "- [Deploys](deploys.md)\n", "the index is not replaced");
    let skipped: Vec<_> = r.skipped.iter().map(|k| (k.key.as_str(), k.reason.contains("only in letter case"))).collect();
    assert_eq!(skipped, [("memory.md", true)], "{:?} written {:?} trashed {:?} conflicts {:?}", r.skipped, r.written, r.trashed, r.conflicts);
    assert!(r.trashed.is_empty(), "the removed spelling of the live file stays: {:?}", r.trashed);
    assert_eq!(std::fs::read_to_string(team.join("notes.md")).unwrap(), "new notes\n", "the live spelling is written");
    let mut listed: Vec<String> = std::fs::read_dir(&team).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    listed.sort();
    assert_eq!(listed.len(), 2, "one file per case-folded key: {listed:?}");
    // The skipped spelling is held back, not pushed over the teammate's.
    assert!(b.push().unwrap().uploaded.is_empty());
    drop(b);
    drop(drive);
}
