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

use mneme_testsupport::{output_with_stdin, topic, tree_snapshot, write_file, TestHome};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

const NOBODY: u32 = 65534;

fn as_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    let root = std::fs::metadata("/proc/self").map(|m| m.uid() == 0).unwrap_or(false);
    if !root {
        eprintln!("skipped: mounting a tmpfs and running mneme as another account need root (this audit did not run)");
    }
    root
}

/// A tmpfs mounted at a folder, unmounted when dropped, whatever the test did meanwhile.
struct Drive(PathBuf);

impl Drive {
    fn mount(at: &Path) -> Drive {
        std::fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount").args(["-t", "tmpfs", "-o", "size=64k,mode=0755", "tmpfs"]).arg(at).status().is_ok_and(|s| s.success());
        assert!(ok, "mounting a tmpfs at {}", at.display());
        Drive(at.to_path_buf())
    }
}

impl Drop for Drive {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.0).status();
    }
}

/// A project whose memory folder and config home (settings.json) are under `top`, with
/// Mneme's data folder (the trash) elsewhere and writable by `nobody` too.
struct World {
    // Dropped first: the drive is unmounted before the temporary folder goes.
    drive: Option<Drive>,
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
        let drive = on_a_drive.then(|| Drive::mount(&top));
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
        std::fs::set_permissions(&h.root, std::fs::Permissions::from_mode(0o755)).unwrap();
        let bin = h.root.join("mneme");
        std::fs::copy(env!("CARGO_BIN_EXE_mneme"), &bin).unwrap();
        let data = h.root.join("mneme-data");
        std::fs::create_dir_all(&data).unwrap();
        std::os::unix::fs::chown(&data, Some(NOBODY), Some(NOBODY)).unwrap();
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
            c.uid(NOBODY).gid(NOBODY);
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
        let _ = &self.drive;
    }
}

#[test]
fn a_full_disk_fails_every_command_with_its_own_words() {
    if !as_root() {
        return;
    }
    let w = World::new(true);
    let mut f = std::fs::File::create(w.top.join("filler")).unwrap();
    while f.write_all(&[b'x'; 512]).is_ok() {}
    while f.write_all(b"x").is_ok() {}
    w.every_command_is_refused(false, true, "is full. Free some space on it, then try again.", 74);
}

#[test]
fn a_read_only_disk_fails_every_command_with_its_own_words() {
    if !as_root() {
        return;
    }
    let w = World::new(true);
    let top = w.top.to_str().unwrap();
    assert!(Command::new("mount").args(["-o", "remount,ro", top]).status().unwrap().success());
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
