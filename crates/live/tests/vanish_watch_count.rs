//! A project folder removed and made again many times (a `git checkout` back and forth, a build
//! tool re-making `.claude`) leaves no inotify watch behind per round, and a folder missing for
//! long costs no watch at all. One test in this file, so no other watcher of the same process is
//! counted with it.

mod common;

use common::Shell;
use mneme_testsupport::{inotify_watches, write_file};
use std::time::Duration;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_removed_and_made_again_leave_no_watches_behind() {
    let s = Shell::new();
    let repo = s.repo.clone();
    let baseline = inotify_watches();
    for round in 0..5 {
        std::fs::remove_dir_all(&repo).unwrap();
        s.until("the removal is seen", |f| !f.iter().all(|f| f.active)).await;
        tokio::time::sleep(Duration::from_millis(1500)).await;
        // Gone: its folders are waited for, not watched.
        assert!(inotify_watches() <= baseline, "round {round}: {} watches while the project is gone (was {baseline})", inotify_watches());
        write_file(&repo.join(".claude/rules/style.md"), "RULE\n");
        write_file(&repo.join(".git/HEAD"), "ref: refs/heads/main\n");
        s.all_active().await;
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    let after = inotify_watches();
    assert!(after <= baseline + 2, "{after} watches after five rounds (was {baseline})");
}
