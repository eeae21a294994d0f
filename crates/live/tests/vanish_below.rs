//! Drives mounted and unmounted *below* a folder watched recursively (a project's rules folder
//! shared from a USB stick, another project's folder under `~/.claude/projects` on a tmpfs): the
//! kernel tells no watch of a mount, and an unmount ends the watches on the drive without an
//! event notify passes on, so only the watcher's own look at the mount table sees them. Pages
//! hear of what changes there afterwards, and a view built on the drive's files is dropped.
//! Mounting needs root; as any other user these tests say so and pass without checking.

mod common;

use common::{mount_drive, until, Drive, Shell, World};
use mneme_testsupport::{write_file, TestHome};
use std::path::{Path, PathBuf};

/// A drive mounted on `dir`; `None` when this is not root, said so that the test passes without
/// checking.
fn drive_on(dir: &Path) -> Option<Drive> {
    let drive = mount_drive(dir);
    if drive.is_none() {
        eprintln!("skipped: mounting a tmpfs needs root (this audit of drives below a watched folder did not run)");
    }
    drive
}

/// Makes `dir` in a folder the shell watches recursively and returns once the watcher watches
/// it too: pages have heard of a file written in it (removed again). A drive mounted there
/// afterwards hides a folder that is watched, which is what these tests are about.
async fn made_and_watched(s: &mut Shell, dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let probe = dir.join("probe.md");
    s.heard(&probe, "PROBE\n").await;
    std::fs::remove_file(probe).unwrap();
}

/// A repository with a CLAUDE.md whose shared rules folder (`.claude/rules/shared`) is a drive
/// holding `team.md` with `rule`, before anything watches it: the home, the repository, the
/// shared folder and the drive. `None` as [`drive_on`].
fn repo_with_rules_on_a_drive(rule: &str) -> Option<(TestHome, PathBuf, PathBuf, Drive)> {
    let home = TestHome::new();
    let repo = home.git_repo("repo");
    home.write(repo.join("CLAUDE.md"), "Use tabs.\n");
    let shared = repo.join(".claude/rules/shared");
    let drive = drive_on(&shared)?;
    write_file(&shared.join("team.md"), rule);
    Some((home, repo, shared, drive))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drive_mounted_below_a_watched_claude_folder_is_heard() {
    let mut s = Shell::new();
    let shared = s.repo.join(".claude/rules/shared");
    made_and_watched(&mut s, &shared).await;
    let Some(_drive) = drive_on(&shared) else { return };
    // The watch on `shared` is on the folder under the drive now: only a fresh one hears this.
    s.heard(&shared.join("team.md"), "TEAM\n").await;
    s.heard(&s.repo.join(".claude/rules/style.md"), "RULE2\n").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drive_unmounted_below_a_watched_claude_folder_is_heard() {
    let Some((home, repo, shared, drive)) = repo_with_rules_on_a_drive("TEAM\n") else { return };
    let mut s = Shell::open(home, repo);
    s.heard(&shared.join("team.md"), "TEAM2\n").await;
    drive.unmount();
    // The folder under the drive was never watched (the walk went into the drive).
    s.heard(&shared.join("local.md"), "LOCAL\n").await;
}

/// Unmounted and mounted again between two of the watcher's looks: the mount point's device and
/// inode may be the same as before (tmpfs numbers afresh the same way), only the mount differs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drive_below_a_watched_claude_folder_mounted_again_at_once_is_heard() {
    let Some((home, repo, shared, drive)) = repo_with_rules_on_a_drive("TEAM\n") else { return };
    let mut s = Shell::open(home, repo);
    s.heard(&shared.join("team.md"), "TEAM2\n").await;
    // No await in between: the watcher's look each second does not run between the two.
    drive.unmount();
    drive.mount_again();
    s.heard(&shared.join("team.md"), "TEAM3\n").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_drive_mounted_below_the_projects_folder_is_heard() {
    let mut s = Shell::new();
    let other = s.home.config_home().join("projects/-elsewhere");
    made_and_watched(&mut s, &other).await;
    let Some(drive) = drive_on(&other) else { return };
    s.heard(&other.join("memory/MEMORY.md"), "- on the drive\n").await;
    drive.unmount();
    s.heard(&other.join("memory/MEMORY.md"), "- under the drive\n").await;
}

/// A rule on the drive is in the kept view; once the drive is unmounted the view is built again
/// without it (the batch names the mount point as a folder that changed).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_with_a_rule_on_a_drive_below_is_dropped_when_the_drive_goes() {
    let Some((home, repo, _shared, drive)) = repo_with_rules_on_a_drive("TEAM-RULE\n") else { return };
    let w = World::start(home, repo);
    w.events.watch_project(&w.repo, &w.home.memdir_for(&w.repo));
    assert!(w.cached().block.contains("TEAM-RULE"));
    drive.unmount();
    until(|| !w.view().block.contains("TEAM-RULE"), || format!("the view still has the rule of the unmounted drive:\n{}", w.view().block)).await;
}
