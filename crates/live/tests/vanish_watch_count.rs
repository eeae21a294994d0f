//! A project folder removed and made again many times (a `git checkout` back and forth, a build
//! tool re-making `.claude`) leaves no inotify watch behind per round, and a folder missing for
//! long costs no watch at all. One test in this file, so no other watcher of the same process is
//! counted with it.

mod common;

use common::Shell;
use mneme_testsupport::{inotify_watches, write_file};

/// Returns once the watcher has looked at its folders again (forgotten what was removed, looked
/// for what it waits for) since this was called, so that a watch that look added would be
/// counted: pages hear of a file written now in the memory folder (which stays) only in a batch
/// gathered after the write, and the watcher gathers a batch before it looks.
async fn after_a_look(s: &mut Shell, what: &str) {
    let index = s.memdir.join("MEMORY.md");
    s.heard(&index, &format!("- {what}\n")).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_removed_and_made_again_leave_no_watches_behind() {
    let mut s = Shell::new();
    let repo = s.repo.clone();
    let baseline = inotify_watches();
    for round in 0..5 {
        std::fs::remove_dir_all(&repo).unwrap();
        s.until("the removal is seen", |f| !f.iter().all(|f| f.active)).await;
        after_a_look(&mut s, &format!("gone {round}")).await;
        // Gone: its folders are waited for, not watched.
        assert!(inotify_watches() <= baseline, "round {round}: {} watches while the project is gone (was {baseline})", inotify_watches());
        write_file(&repo.join(".claude/rules/style.md"), "RULE\n");
        write_file(&repo.join(".git/HEAD"), "ref: refs/heads/main\n");
        // Looked for after every batch (and every second): this one is at once.
        after_a_look(&mut s, &format!("back {round}")).await;
        s.all_active().await;
    }
    // The folders made again watched: one more look, and the count.
    after_a_look(&mut s, "done").await;
    let after = inotify_watches();
    assert!(after <= baseline + 2, "{after} watches after five rounds (was {baseline})");
}
