//! The disk says no: every write a person makes through the api (a CLAUDE.md, CLAUDE.local.md
//! or rule saved, a memory created, saved, edited or moved to the trash, Fix index, a setting
//! toggled) on a disk that is full or mounted read-only leaves every file as it was, leaves no
//! temporary file, and is refused with its own error code and a sentence saying what happened
//! and what to do. Real conditions: a 64 KiB tmpfs filled to the brim, then the same tmpfs
//! remounted read-only. A folder this account may not write is `crates/cli/tests/disk_says_no.rs`
//! (root passes every permission check, so it runs the binary as another account).
//!
//! Mounting needs root; as any other user these tests say so and pass without checking (CI runs
//! them as root).

#![cfg(target_os = "linux")]

mod common;

use common::{Before, Refusal};
use mneme_api::{ApiError, ContextRequest, ErrorCode, FixedClock, MemoryEdit, Mneme, NewMemoryRequest};
use mneme_testsupport::tmpfs::Tmpfs;
use mneme_testsupport::{topic, tree_snapshot, write_file, TestHome};
use std::path::PathBuf;
use std::sync::Arc;

/// A project and its Claude Code configuration (memory folder and settings.json), all on one
/// drive; Mneme's data folder (the trash) is elsewhere, as in a home on a network mount.
struct World {
    // Holds the temporary folder (dropped after the drive is unmounted: fields drop in order).
    drive: Tmpfs,
    _t: TestHome,
    repo: PathBuf,
    memdir: PathBuf,
    mneme: Mneme,
}

impl World {
    fn new() -> Option<World> {
        World::with_trash_on_the_drive(false)
    }

    /// [`World::new`], with Mneme's data folder (the trash) on the drive too when `trash_too`:
    /// a home on one disk.
    fn with_trash_on_the_drive(trash_too: bool) -> Option<World> {
        let (t, drive) = common::home_with_drive("64k")?;
        let top = drive.path().to_path_buf();
        let config = top.join("claude");
        let mut env = t.env.clone().set_var("CLAUDE_CONFIG_DIR", config.to_string_lossy().to_string());
        if trash_too {
            env = env.set_var("MNEME_DATA_DIR", top.join("mneme-data").to_string_lossy().to_string());
        }
        let repo = top.join("repo");
        write_file(&repo.join("CLAUDE.md"), "Use tabs.\n");
        write_file(&repo.join("CLAUDE.local.md"), "My sandbox is at /srv/me.\n");
        write_file(&repo.join(".claude/rules/style.md"), "Wrap at 100 columns.\n");
        write_file(&config.join("settings.json"), "{\n  \"autoMemoryEnabled\": true\n}\n");
        let memdir = config.join("projects").join(mneme_core::sanitize::sanitize_path(&repo.to_string_lossy())).join("memory");
        write_file(&memdir.join("MEMORY.md"), "- [Tabs](tabs.md) — the team uses tabs\n");
        write_file(&memdir.join("tabs.md"), &topic("Tabs", "the team uses tabs", "feedback", "Tabs, not spaces."));
        // Not in MEMORY.md: Fix index has a line to add.
        write_file(&memdir.join("deploys.md"), &topic("Deploys", "deploys go out on Tuesdays", "project", "Tuesdays."));
        let mneme = Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
        Some(World { drive, _t: t, repo, memdir, mneme })
    }

    fn req(&self) -> ContextRequest {
        ContextRequest { cwd: self.repo.clone(), ..Default::default() }
    }

    /// The drive made to say `no`, then every write a person can make on it, each refused with
    /// its code and words naming the drive; the drive must be exactly as it was after each. A
    /// delete comes last: where it frees space (a full drive, the trash elsewhere) it must
    /// succeed.
    fn every_write_is_refused(&self, no: Refusal) {
        no.make(&self.drive);
        let req = self.req();
        // Read while the disk still answers reads, as the editor did when it opened them.
        let files: Vec<(PathBuf, String)> = ["CLAUDE.md", "CLAUDE.local.md", ".claude/rules/style.md"]
            .iter()
            .map(|rel| {
                let p = self.repo.join(rel);
                let rev = self.mneme.read_file(&req, &p).unwrap_or_else(|e| panic!("{rel}: {e}")).revision;
                (p, rev)
            })
            .collect();
        let memory = self.mneme.memory(&req, "tabs.md").unwrap();
        let before = Before::take(&[self.drive.path()]);
        let refused = |what: &str, r: Result<(), ApiError>| {
            let e = r.expect_err(what);
            no.assert_answers(what, &e, self.drive.path());
            before.assert_unchanged(what);
        };
        for (p, rev) in &files {
            let what = format!("saving {}", p.file_name().unwrap().to_string_lossy());
            refused(&what, self.mneme.save_file(&req, p, "New text, typed in the editor.\n", rev).map(|_| ()));
        }
        refused(
            "creating a memory",
            self.mneme
                .create_memory(&req, &NewMemoryRequest { name: "Reviews".into(), description: "reviews need two approvals".into(), kind: "project".into(), body: "Two approvals.".into(), file_name: None })
                .map(|_| ()),
        );
        let typed = memory.content.replace("Tabs, not spaces.", "Tabs, never spaces.");
        refused("saving a memory", self.mneme.save_memory(&req, "tabs.md", &typed, &memory.revision).map(|_| ()));
        refused(
            "editing a memory's description",
            self.mneme.edit_memory(&req, &MemoryEdit { memory: "tabs.md".into(), description: Some("tabs everywhere".into()), ..Default::default() }).map(|_| ()),
        );
        refused("Fix index", self.mneme.fix_index(&req).map(|_| ()));
        refused("turning auto memory off", self.mneme.set_auto_memory(false).map(|_| ()));
        if no == Refusal::Full {
            // The trash is on another disk: the memory's blocks are freed before its index line
            // goes, so on a full disk a delete is how a person makes room, and it works.
            let t = self.mneme.delete_memory(&req, "tabs.md").unwrap();
            assert!(!self.memdir.join("tabs.md").exists());
            assert_eq!(std::fs::read_to_string(self.memdir.join("MEMORY.md")).unwrap(), "");
            assert_eq!(self.mneme.trash(&req).unwrap().entries.iter().map(|e| e.id.clone()).collect::<Vec<_>>(), [t.id]);
        } else {
            refused("moving a memory to the trash", self.mneme.delete_memory(&req, "tabs.md").map(|_| ()));
            assert!(self.memdir.join("tabs.md").exists());
        }
    }
}

#[test]
fn a_full_disk_refuses_every_write_as_disk_full_and_leaves_every_file_as_it_was() {
    let Some(w) = World::new() else { return };
    w.every_write_is_refused(Refusal::Full);
}

#[test]
fn a_read_only_disk_refuses_every_write_as_read_only_and_leaves_every_file_as_it_was() {
    let Some(w) = World::new() else { return };
    w.every_write_is_refused(Refusal::ReadOnly);
}

/// A home on one disk: the trash is as full as the memory folder, so a delete cannot make room
/// there either. It is refused before the memory moves, and the memory and its index line stay.
#[test]
fn a_delete_on_a_full_disk_that_also_holds_the_trash_is_refused_and_keeps_the_memory() {
    let Some(w) = World::with_trash_on_the_drive(true) else { return };
    Refusal::Full.make(&w.drive);
    let before = tree_snapshot(w.drive.path());
    let e = w.mneme.delete_memory(&w.req(), "tabs.md").unwrap_err();
    assert_eq!(e.code, ErrorCode::DiskFull, "{e}");
    assert!(e.message.contains(Refusal::Full.words()), "{e}");
    let after = tree_snapshot(w.drive.path());
    assert_eq!(after.get(&w.memdir.join("tabs.md")), before.get(&w.memdir.join("tabs.md")), "the memory stays");
    assert_eq!(after.get(&w.memdir.join("MEMORY.md")), before.get(&w.memdir.join("MEMORY.md")), "its index line stays");
    let temps = common::temporary_files(&after);
    assert!(temps.is_empty(), "a temporary file is left: {temps:?}");
    let trash = w.mneme.trash(&w.req()).unwrap();
    assert!(trash.entries.is_empty() && trash.damaged.is_empty(), "{trash:?}");
    // The trash's own folders may be made (they take no space); no file and no entry is left.
    let new: Vec<_> = after.iter().filter(|(k, v)| !before.contains_key(*k) && v.as_slice() != b"<dir>").map(|(k, _)| k).collect();
    assert!(new.is_empty(), "the refused delete left {new:?}");
    let entries: Vec<_> = after.keys().filter(|k| k.file_name().is_some_and(|n| n.to_string_lossy().ends_with("-tabs"))).collect();
    assert!(entries.is_empty(), "an entry folder is left: {entries:?}");
}
