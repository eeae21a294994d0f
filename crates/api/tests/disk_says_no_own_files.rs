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

mod common;

use common::{Before, Refusal};
use mneme_api::{ApiError, ContextRequest, FixedClock, Mneme, PromoteTo, ReviewModeName};
use mneme_testsupport::tmpfs::Tmpfs;
use mneme_testsupport::{topic, write_file, TestHome};
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
        let (t, drive) = common::home_with_drive("256k")?;
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

    /// The drive made to say `no`, then every write of one of these files, each refused with
    /// its code and words naming the data folder, never the system's bare words; the drive, the
    /// memory folder and the project must be exactly as they were after each.
    fn every_write_is_refused(&self, no: Refusal) {
        no.make(&self.drive);
        let m = self.mneme();
        let req = self.at();
        let before = Before::take(&[self.drive.path(), self.memdir.as_path(), self.repo.as_path()]);
        let refused = |what: &str, r: Result<(), ApiError>| {
            let e = r.expect_err(what);
            no.assert_answers(what, &e, &self.data());
            assert!(!e.message.contains("os error"), "{what} passes on the system's bare words: {e}");
            before.assert_unchanged(what);
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
    w.every_write_is_refused(Refusal::Full);
}

#[test]
fn a_read_only_disk_refuses_the_inbox_extraction_and_trash_as_read_only_and_leaves_them_as_they_were() {
    let Some(w) = World::new() else { return };
    w.every_write_is_refused(Refusal::ReadOnly);
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
    for no in [Refusal::Full, Refusal::ReadOnly] {
        no.make(&w.drive);
        let before = Before::take(&[w.drive.path(), &w.memdir]);
        let what = format!("an automatic extraction on a drive that is {no:?}");
        let e = m.run_extraction(&w.at(), None).expect_err(&what);
        no.assert_answers(&what, &e, &w.data());
        assert!(!e.message.contains("os error"), "{what} passes on the system's bare words: {e}");
        before.assert_unchanged(&what);
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
    Refusal::ReadOnly.make(&w.drive);
    let before = Before::take(&[w.drive.path(), &w.memdir]);
    let refused = |what: &str, r: Result<(), ApiError>| {
        let e = r.expect_err(what);
        Refusal::ReadOnly.assert_answers(what, &e, w.drive.path());
        assert!(!e.message.contains("os error"), "{what} passes on the system's bare words: {e}");
        before.assert_unchanged(what);
    };
    refused("restoring", m.restore_memory(&w.at(), &entry.id).map(|_| ()));
    refused("purging", m.purge_trash(&w.at(), &entry.id).map(|_| ()));
    refused("emptying the trash", m.empty_trash(&w.at()).map(|_| ()));
    assert!(!w.memdir.join("tabs.md").exists());
}
