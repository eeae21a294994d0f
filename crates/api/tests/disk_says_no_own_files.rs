//! The disk says no to the rest of Mneme's own files: the extraction inbox (an item kept,
//! promoted to CLAUDE.md or discarded), a project's review mode (`extract/modes.json`), an extraction run (its session
//! cursor, its run log and the item it stages) and the trash (a memory deleted while the trash
//! is on a disk that says no). Mneme's data folder is on a small tmpfs, filled to the brim and
//! then remounted read-only; Claude Code's memory folder and the project are on the ordinary disk, so what is
//! refused is Mneme's own file and nothing else. Each is refused with its own code (`disk_full`,
//! `read_only`) and the disk's words with what to do, the data folder and the memory folder are
//! left byte for byte as they were, with no temporary file, and a memory being deleted stays
//! where it was. A folder this account may not write (`permission_denied`) is checked as
//! `nobody` in `crates/cli/tests/disk_says_no_own_files.rs`.
//!
//! Mounting needs root; as any other user these tests say so and pass without checking (CI runs
//! them as root).

#![cfg(target_os = "linux")]

use mneme_api::{ApiError, ContextRequest, ErrorCode, FixedClock, Mneme, PromoteTo, ReviewModeName};
use mneme_testsupport::accounts::root_or_skip;
use mneme_testsupport::tmpfs::Tmpfs;
use mneme_testsupport::{topic, tree_snapshot, write_file, TestHome};
use serde_json::json;
use std::path::PathBuf;
use std::sync::Arc;

const SESSION: &str = "5b0c2a61-93f4-4c1e-8d0b-2f4f0c1a7e55";

struct World {
    // Unmounted before the temporary folder goes: fields drop in order.
    drive: Tmpfs,
    t: TestHome,
    repo: PathBuf,
    memdir: PathBuf,
    transcript: PathBuf,
    /// Two items staged for review while the drive had room.
    items: Vec<String>,
}

impl World {
    fn new() -> Option<World> {
        if !root_or_skip("mounting a tmpfs") {
            return None;
        }
        let t = TestHome::new();
        let drive = Tmpfs::mount(&t.root.join("drive"), "256k").expect("mounting a tmpfs as root");
        let repo = t.git_repo("repo");
        let memdir = t.memdir_for(&repo);
        write_file(&memdir.join("MEMORY.md"), "- [Tabs](tabs.md) — the team uses tabs\n");
        write_file(&memdir.join("tabs.md"), &topic("Tabs", "the team uses tabs", "feedback", "Tabs, not spaces."));
        let transcript =
            t.config_home().join("projects").join(mneme_core::sanitize::sanitize_path(&repo.to_string_lossy())).join(format!("{SESSION}.jsonl"));
        let mut w = World { drive, t, repo, memdir, transcript, items: Vec::new() };
        let m = w.mneme();
        m.set_review_mode(&w.at(), ReviewModeName::Review).unwrap();
        w.say(1, "Remember that I review code in the morning.");
        w.items.push(m.run_extraction(&w.at(), None).unwrap().runs[0].inbox_id.clone().expect("staged"));
        w.say(2, "Remember that deploys go out on Tuesdays.");
        w.items.push(m.run_extraction(&w.at(), None).unwrap().runs[0].inbox_id.clone().expect("staged"));
        // Something new for the next run to read.
        w.say(3, "Remember that the staging server is called bramble.");
        Some(w)
    }

    fn data(&self) -> PathBuf {
        self.drive.path().join("mneme-data")
    }

    fn mneme(&self) -> Mneme {
        let env = self.t.env.clone().set_var("MNEME_DATA_DIR", self.data().to_string_lossy().to_string());
        Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_764_400_000)))
    }

    fn at(&self) -> ContextRequest {
        ContextRequest { cwd: self.repo.clone(), ..Default::default() }
    }

    /// Turn `n` of the session: the user's `prompt` and a short answer, as Claude Code writes them.
    fn say(&self, n: usize, prompt: &str) {
        let parent = if n == 1 { serde_json::Value::Null } else { json!(format!("a{}", n - 1)) };
        let common = |uuid: String, parent: serde_json::Value| {
            json!({"uuid": uuid, "parentUuid": parent, "isSidechain": false, "cwd": self.repo, "sessionId": SESSION, "timestamp": "2026-03-02T10:00:00.000Z"})
        };
        let mut u = common(format!("u{n}"), parent);
        u["type"] = json!("user");
        u["message"] = json!({"role": "user", "content": prompt});
        let mut a = common(format!("a{n}"), json!(format!("u{n}")));
        a["type"] = json!("assistant");
        a["message"] = json!({"id": format!("m{n}"), "role": "assistant", "content": [{"type": "text", "text": "OK."}], "stop_reason": "end_turn"});
        std::fs::create_dir_all(self.transcript.parent().unwrap()).unwrap();
        let mut f = std::fs::OpenOptions::new().create(true).append(true).open(&self.transcript).unwrap();
        std::io::Write::write_all(&mut f, format!("{u}\n{a}\n").as_bytes()).unwrap();
    }

    /// Every write of one of these files, each refused; `check` is called with what it was and
    /// its error, and the drive and the memory folder must be exactly as they were after each.
    fn every_write_is_refused(&self, check: impl Fn(&str, &ApiError)) {
        let m = self.mneme();
        let req = self.at();
        let watched = [self.drive.path(), self.memdir.as_path(), self.repo.as_path()];
        let snapshot = || watched.iter().map(|p| tree_snapshot(p)).collect::<Vec<_>>();
        let before = snapshot();
        let refused = |what: &str, r: Result<(), ApiError>| {
            let e = r.expect_err(what);
            check(what, &e);
            for (root, (b, a)) in watched.iter().zip(before.iter().zip(snapshot().iter())) {
                let temps: Vec<_> = a.keys().filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".tmp"))).collect();
                assert!(temps.is_empty(), "{what} left a temporary file: {temps:?}");
                let differ: Vec<_> = a.keys().filter(|k| b.get(*k) != a.get(*k)).chain(b.keys().filter(|k| !a.contains_key(*k))).collect();
                assert!(differ.is_empty(), "{what} changed {}: {differ:?}", root.display());
            }
            e
        };
        refused("setting the review mode", m.set_review_mode(&req, ReviewModeName::Automatic).map(|_| ()));
        refused("keeping an inbox item", m.inbox_keep(&self.items[0]).map(|_| ()));
        refused("promoting an inbox item to CLAUDE.md", m.inbox_promote(&self.items[0], PromoteTo::ClaudeMd).map(|_| ()));
        refused("discarding an inbox item", m.inbox_discard(&self.items[1]).map(|_| ()));
        refused("running extraction", m.run_extraction(&req, None).map(|_| ()));
        let e = refused("deleting a memory (its trash)", m.delete_memory(&req, "tabs.md").map(|_| ()));
        assert!(self.memdir.join("tabs.md").is_file(), "the memory stays where it was: {e}");
    }
}

#[test]
fn a_full_disk_refuses_the_inbox_extraction_and_trash_as_disk_full_and_leaves_them_as_they_were() {
    let Some(w) = World::new() else { return };
    w.drive.fill();
    w.every_write_is_refused(|what, e| {
        eprintln!("{what}: {:?}: {}", e.code, e.message);
        assert_eq!(e.code, ErrorCode::DiskFull, "{what}: {e}");
        assert!(e.message.contains("is full. Free some space on it, then try again"), "{what}: {e}");
        assert!(e.message.contains(&w.data().display().to_string()), "{what} names where: {e}");
        assert!(!e.message.contains("os error"), "{what} passes on the system's bare words: {e}");
    });
}

#[test]
fn a_read_only_disk_refuses_the_inbox_extraction_and_trash_as_read_only_and_leaves_them_as_they_were() {
    let Some(w) = World::new() else { return };
    w.drive.read_only();
    w.every_write_is_refused(|what, e| {
        eprintln!("{what}: {:?}: {}", e.code, e.message);
        assert_eq!(e.code, ErrorCode::ReadOnly, "{what}: {e}");
        assert!(e.message.contains("is mounted read-only. Remount it read-write"), "{what}: {e}");
        assert!(e.message.contains(&w.data().display().to_string()), "{what} names where: {e}");
        assert!(!e.message.contains("os error"), "{what} passes on the system's bare words: {e}");
    });
}

/// Extraction in automatic mode writes memories to the memory folder (on a disk with room) and
/// its run record and session cursor to Mneme's data folder (full, then read-only): refused
/// before any memory is written, so the next run does not find its own memories written by a
/// run it has no record of.
#[test]
fn an_automatic_extraction_whose_record_the_disk_refuses_writes_no_memory() {
    let Some(w) = World::new() else { return };
    let m = w.mneme();
    m.set_review_mode(&w.at(), ReviewModeName::Automatic).unwrap();
    for (i, expect) in [ErrorCode::DiskFull, ErrorCode::ReadOnly].into_iter().enumerate() {
        if i == 0 {
            w.drive.fill();
        } else {
            w.drive.read_only();
        }
        let before = (tree_snapshot(w.drive.path()), tree_snapshot(&w.memdir));
        let e = m.run_extraction(&w.at(), None).expect_err("an extraction on a disk that says no");
        eprintln!("{expect:?}: {e}");
        assert_eq!(e.code, expect, "{e}");
        assert!(e.message.contains(&w.data().display().to_string()) && !e.message.contains("os error"), "{e}");
        assert!((tree_snapshot(w.drive.path()), tree_snapshot(&w.memdir)) == before, "the run changed the drive or the memory folder: {e}");
    }
}

/// The trash on a read-only disk: a restore (which first marks its entry in the record),
/// purging an entry and emptying the trash are refused with the disk's code and words, and
/// the trash and the memory folder stay as they were (the memory stays in the trash).
#[test]
fn the_trash_on_a_read_only_disk_is_not_restored_purged_or_emptied() {
    let Some(w) = World::new() else { return };
    let m = w.mneme();
    let entry = m.delete_memory(&w.at(), "tabs.md").unwrap();
    w.drive.read_only();
    let before = (tree_snapshot(w.drive.path()), tree_snapshot(&w.memdir));
    let refused = |what: &str, r: Result<(), ApiError>| {
        let e = r.expect_err(what);
        eprintln!("{what}: {:?}: {e}", e.code);
        assert_eq!(e.code, ErrorCode::ReadOnly, "{what}: {e}");
        assert!(e.message.contains("is mounted read-only. Remount it read-write") && !e.message.contains("os error"), "{what}: {e}");
        assert!((tree_snapshot(w.drive.path()), tree_snapshot(&w.memdir)) == before, "{what} changed the trash or the memory folder: {e}");
    };
    refused("restoring", m.restore_memory(&w.at(), &entry.id).map(|_| ()));
    refused("purging", m.purge_trash(&w.at(), &entry.id).map(|_| ()));
    refused("emptying the trash", m.empty_trash(&w.at()).map(|_| ()));
    assert!(!w.memdir.join("tabs.md").exists());
}
