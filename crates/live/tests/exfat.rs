//! The watcher over a project on a real exFAT drive (a USB stick, an SD card:
//! `mneme_testsupport::exfat`, mounted through exfat-fuse): an edit made outside Mneme to the
//! project's instructions or to a memory on the drive reaches the pages and the cached context
//! view, as on any disk. FUSE passes the kernel's own change events for writes made on this
//! machine, which is what a live view needs.
//!
//! Not tested here, because it is the drive's and not Mneme's: after a file is replaced under
//! one spelling (`claude.md`), opening it under another (`CLAUDE.md`, as Claude Code does) can go
//! on reading the replaced file for as long as the kernel keeps that spelling cached (seen past
//! 40 s with exfat-fuse 1.3). Claude Code reads the same stale text then, so Mneme's view still
//! shows what it loads; docs/claude-code-versions.md ("A project on an exFAT drive") says to
//! spell the file `CLAUDE.md` on such drives.
//!
//! Mounting needs root; as any other user these tests say so and pass without checking (CI runs
//! them as root).

#![cfg(target_os = "linux")]

mod common;

use common::{until, Shell, World};
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::TestHome;

/// A home whose project (a git repository) and Claude Code config folder, with the project's
/// memory folder, are on an exFAT drive mounted in it; the drive, to be dropped last.
fn home_on_a_stick() -> Option<(Exfat, TestHome, std::path::PathBuf)> {
    let mut home = TestHome::new();
    let drive = Exfat::mount(&home.root.join("stick"))?;
    home.env = home.env.clone().set_var("CLAUDE_CONFIG_DIR", drive.path().join("claude").to_string_lossy().to_string());
    let repo = home.git_repo("stick/repo");
    // Spelled as a Windows or Mac user may have saved it; Claude Code opens it as CLAUDE.md.
    home.write(repo.join("claude.md"), "Use tabs.\n");
    Some((drive, home, repo))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn outside_edits_on_the_drive_reach_the_pages() {
    let Some((_drive, home, repo)) = home_on_a_stick() else { return };
    let mut shell = Shell::open(home, repo);
    assert!(shell.memdir.starts_with(_drive.path()), "the memory folder is on the drive: {}", shell.memdir.display());
    let (claude_md, memory) = (shell.repo.join("claude.md"), shell.memdir.join("deploys.md"));
    shell.heard(&claude_md, "Use spaces.\n").await;
    shell.heard(&memory, "Deploys go out on Tuesdays.\n").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cached_context_view_follows_an_outside_save_on_the_drive() {
    let Some((_drive, home, repo)) = home_on_a_stick() else { return };
    let w = World::start(home, repo);
    w.events.watch_project(&w.repo, &w.home.memdir_for(&w.repo));
    assert!(w.cached().block.contains("Use tabs."));
    // Saved as editors save: a new file renamed over the old, here under the other spelling.
    std::fs::write(w.repo.join("CLAUDE.md.tmp"), "Use spaces.\n").unwrap();
    std::fs::rename(w.repo.join("CLAUDE.md.tmp"), w.repo.join("CLAUDE.md")).unwrap();
    until(|| w.view().block.contains("Use spaces."), || format!("the cache still answers a stale view:\n{}", w.view().block)).await;
    assert_eq!(w.view().block, w.mneme.context(&w.request()).unwrap().block);
}
