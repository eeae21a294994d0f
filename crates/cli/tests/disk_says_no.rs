//! The disk says no, from the command line: every `mneme` command that writes (memories new,
//! save, edit, rm, health --fix, settings auto-memory) on a disk that is full, on a disk mounted
//! read-only, and in a memory folder and config home that belong to another account, leaves
//! every file as it was and no temporary file, and fails with one line that says which of the
//! three it was and what to do. Real conditions: a 64 KiB tmpfs filled to the brim, the same
//! tmpfs remounted read-only, and the binary run as `nobody` (uid 65534) on root's files (root
//! itself passes every permission check).
//!
//! Mounting and switching accounts need root; as any other user these tests say so and pass
//! without checking (CI runs them as root).

#![cfg(target_os = "linux")]

mod common;

use mneme_testsupport::accounts::{binary_for_nobody, give_to_nobody, root_or_skip};
use mneme_testsupport::tmpfs::Tmpfs;
use mneme_testsupport::{output_with_stdin, topic, tree_snapshot, write_file, TestHome};
use std::path::PathBuf;
use std::process::{Command, Output};

fn as_root() -> bool {
    root_or_skip("mounting a tmpfs and running mneme as another account")
}

/// A project whose memory folder and config home (settings.json) are under `top`, with
/// Mneme's data folder (the trash) elsewhere and writable by `nobody` too.
struct World {
    // Dropped first: the drive is unmounted before the temporary folder goes.
    drive: Option<Tmpfs>,
    h: TestHome,
    top: PathBuf,
    repo: PathBuf,
    memdir: PathBuf,
    bin: PathBuf,
}

impl World {
    fn new(on_a_drive: bool) -> World {
        let h = TestHome::new();
        let top = h.root.join("drive");
        let drive = on_a_drive.then(|| Tmpfs::mount(&top, "64k").expect("mounting a tmpfs as root"));
        std::fs::create_dir_all(&top).unwrap();
        let repo = top.join("repo");
        write_file(&repo.join("CLAUDE.md"), "Use tabs.\n");
        write_file(&top.join("claude/settings.json"), "{\n  \"autoMemoryEnabled\": true\n}\n");
        let memdir = top.join("claude/projects").join(mneme_core::sanitize::sanitize_path(&repo.to_string_lossy())).join("memory");
        write_file(&memdir.join("MEMORY.md"), "- [Tabs](tabs.md) — the team uses tabs\n");
        write_file(&memdir.join("tabs.md"), &topic("Tabs", "the team uses tabs", "feedback", "Tabs, not spaces."));
        // Not in MEMORY.md: health --fix has a line to add.
        write_file(&memdir.join("deploys.md"), &topic("Deploys", "deploys go out on Tuesdays", "project", "Tuesdays."));
        // `nobody` must reach the files (to be refused writing them) and run the binary, which
        // lives under root's home; Mneme's data folder is its own.
        let bin = binary_for_nobody(&h, env!("CARGO_BIN_EXE_mneme"));
        give_to_nobody(&h.root.join("mneme-data"));
        World { drive, h, top, repo, memdir, bin }
    }

    fn mneme(&self, args: &[&str]) -> Command {
        let mut c = mneme_testsupport::command_in(self.bin.to_str().unwrap(), &self.h);
        c.env("CLAUDE_CONFIG_DIR", self.top.join("claude")).env("MNEME_KEYRING_SERVICE", "mneme-disk-says-no-test").current_dir(&self.repo).args(args).arg("--managed-dir").arg(self.h.root.join("managed"));
        c
    }

    fn run(&self, args: &[&str], stdin: Option<&[u8]>, as_nobody: bool) -> Output {
        let mut c = self.mneme(args);
        if as_nobody {
            mneme_testsupport::accounts::as_nobody(&mut c);
        }
        output_with_stdin(c, stdin)
    }

    /// Every writing command, each refused with one line that `says` what to do; the tree under
    /// `top` exactly as it was after each. `rm` comes last: where it frees space
    /// (`rm_frees_space`, the trash being on another disk) it must succeed.
    fn every_command_is_refused(&self, as_nobody: bool, rm_frees_space: bool, says: &str, status: i32) {
        let shown: serde_json::Value = serde_json::from_str(&common::succeeded(self.run(&["memories", "show", "tabs.md", "--json"], None, false), &["show"])).unwrap();
        let revision = shown["revision"].as_str().unwrap().to_string();
        let typed = shown["content"].as_str().unwrap().replace("Tabs, not spaces.", "Tabs, never spaces.");
        let before = tree_snapshot(&self.top);
        let commands: Vec<(Vec<&str>, Option<&[u8]>)> = vec![
            (vec!["memories", "new", "--name", "Reviews", "--description", "reviews need two approvals", "--type", "project", "--body", "Two approvals."], None),
            (vec!["memories", "save", "tabs.md", "--revision", &revision], Some(typed.as_bytes())),
            (vec!["memories", "edit", "tabs.md", "--description", "tabs everywhere"], None),
            (vec!["memories", "health", "--fix"], None),
            (vec!["settings", "auto-memory", "off"], None),
            (vec!["memories", "rm", "tabs.md"], None),
        ];
        for (args, stdin) in commands {
            let out = self.run(&args, stdin, as_nobody);
            if rm_frees_space && args[1] == "rm" {
                common::succeeded(out, &args);
                assert!(!self.memdir.join("tabs.md").exists());
                continue;
            }
            assert_eq!(out.status.code(), Some(status), "mneme {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            let err = common::one_line_error(out, &args);
            assert!(err.starts_with("mneme: ") && err.contains(says), "mneme {args:?}: {err}");
            assert!(err.contains(&self.top.display().to_string()), "mneme {args:?} names where: {err}");
            let after = tree_snapshot(&self.top);
            let temps: Vec<_> = after.keys().filter(|p| p.file_name().is_some_and(|n| n.to_string_lossy().ends_with(".tmp"))).collect();
            assert!(temps.is_empty(), "mneme {args:?} left a temporary file: {temps:?}");
            assert!(after == before, "mneme {args:?} changed {:?}", after.keys().filter(|k| before.get(*k) != after.get(*k)).chain(before.keys().filter(|k| !after.contains_key(*k))).collect::<Vec<_>>());
        }
    }
}

#[test]
fn a_full_disk_fails_every_command_with_its_own_words() {
    if !as_root() {
        return;
    }
    let w = World::new(true);
    w.drive.as_ref().unwrap().fill();
    w.every_command_is_refused(false, true, "is full. Free some space on it, then try again.", 74);
}

#[test]
fn a_read_only_disk_fails_every_command_with_its_own_words() {
    if !as_root() {
        return;
    }
    let w = World::new(true);
    w.drive.as_ref().unwrap().read_only();
    w.every_command_is_refused(false, false, "is mounted read-only. Remount it read-write (or ask whoever manages it to), then try again.", 73);
}

#[test]
fn another_account_s_folders_fail_every_command_with_its_own_words() {
    if !as_root() {
        return;
    }
    let w = World::new(false);
    w.every_command_is_refused(true, false, "this account may not change", 77);
}
