//! The command line on a project on a real exFAT drive (a USB stick, an SD card:
//! `mneme_testsupport::exfat`), with Claude Code's config folder, the project's memory folder and
//! Mneme's data folder on the drive too: `mneme context` loads a `claude.md` as Claude Code does
//! (it opens `CLAUDE.md`, which the drive folds onto it), a rename that changes only letter case
//! renames, and `memory.md`, which opens the index there, is no memory to remove.
//! `crates/api/tests/exfat.rs` checks the same block against the real Claude Code on the drive.
//!
//! Mounting needs root; as any other user this test says so and passes without checking (CI
//! runs it as root).

#![cfg(target_os = "linux")]

mod common;

use common::{one_line_error, succeeded};
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::{command_in, topic, write_file, TestHome};

#[test]
fn context_and_memories_on_a_real_exfat_drive() {
    let t = TestHome::new();
    let Some(drive) = Exfat::mount(&t.root.join("stick")) else { return };
    let config = drive.path().join("claude");
    let repo = t.git_repo("stick/repo");
    write_file(&repo.join("claude.md"), "Use tabs.\n");
    write_file(&config.join("settings.json"), "{\n  \"autoMemoryEnabled\": true\n}\n");
    let memdir = config.join("projects").join(mneme_core::sanitize::sanitize_path(&repo.to_string_lossy())).join("memory");
    write_file(&memdir.join("MEMORY.md"), "- [Tabs](tabs.md) — the team uses tabs\n");
    write_file(&memdir.join("tabs.md"), &topic("Tabs", "the team uses tabs", "feedback", "Tabs, not spaces."));
    let mneme = |args: &[&str]| {
        let mut cmd = command_in(env!("CARGO_BIN_EXE_mneme"), &t);
        cmd.env("CLAUDE_CONFIG_DIR", &config).env("MNEME_DATA_DIR", drive.path().join("mneme-data")).args(args).arg("--cwd").arg(&repo);
        cmd.output().expect("mneme runs")
    };
    let args = ["context", "--claude-version", "2.1.197"];
    let block = succeeded(mneme(&args), &args);
    assert!(block.contains(&format!("Contents of {} (project instructions", repo.join("CLAUDE.md").display())) && block.contains("Use tabs."), "{block}");
    assert!(block.contains("Tabs, not spaces.") || block.contains("the team uses tabs"), "the memory index is loaded: {block}");

    let args = ["memories", "edit", "tabs.md", "--rename", "Tabs.md"];
    succeeded(mneme(&args), &args);
    let listed: Vec<String> = std::fs::read_dir(&memdir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    assert!(listed.contains(&"Tabs.md".to_string()) && !listed.contains(&"tabs.md".to_string()), "{listed:?}");
    assert_eq!(std::fs::read_to_string(memdir.join("MEMORY.md")).unwrap(), "- [Tabs](Tabs.md) — the team uses tabs\n");

    let args = ["memories", "rm", "memory.md"];
    let err = one_line_error(mneme(&args), &args);
    assert!(err.contains("memory.md"), "{err}");
    assert_eq!(std::fs::read_to_string(memdir.join("MEMORY.md")).unwrap(), "- [Tabs](Tabs.md) — the team uses tabs\n", "the index stays");
    drop(drive);
}
