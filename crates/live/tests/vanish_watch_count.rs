//! A project folder removed and made again many times (a `git checkout` back and forth, a build
//! tool re-making `.claude`) leaves no inotify watch behind per round, and a folder missing for
//! long costs no watch at all. One test in this file, so no other watcher of the same process is
//! counted with it.

mod common;

use common::Shell;
use mneme_testsupport::{inotify_watches, write_file};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_removed_and_made_again_leave_no_watches_behind() {
    let mut s = Shell::new();
    let repo = s.repo.clone();
    let baseline = inotify_watches();
    for round in 0..5 {
        std::fs::remove_dir_all(&repo).unwrap();
        s.until("the removal is seen", |f| !f.iter().all(|f| f.active)).await;
        s.after_a_look(&format!("gone {round}")).await;
        // Gone: its folders are waited for, not watched.
        assert!(inotify_watches() <= baseline, "round {round}: {} watches while the project is gone (was {baseline})", inotify_watches());
        write_file(&repo.join(".claude/rules/style.md"), "RULE\n");
        write_file(&repo.join(".git/HEAD"), "ref: refs/heads/main\n");
        // Looked for after every batch (and every second): this one is at once.
        s.after_a_look(&format!("back {round}")).await;
        s.all_active().await;
    }
    // The folders made again watched: one more look, and the count.
    s.after_a_look("done").await;
    let after = inotify_watches();
    assert!(after <= baseline + 2, "{after} watches after five rounds (was {baseline})");
}
