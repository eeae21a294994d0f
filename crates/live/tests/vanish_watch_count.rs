//! A project folder removed and made again many times (a `git checkout` back and forth, a build
//! tool re-making `.claude`) leaves no inotify watch behind per round, and a folder missing for
//! long costs no watch at all. One test in this file, so no other watcher of the same process is
//! counted with it.

use mneme_live::events::Events;
use mneme_testsupport::{inotify_watches, write_file, TestHome};
use std::time::{Duration, Instant};
use tokio::sync::watch;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn folders_removed_and_made_again_leave_no_watches_behind() {
    let home = TestHome::new();
    let repo = home.git_repo("repo");
    write_file(&repo.join(".claude/rules/style.md"), "RULE\n");
    let memdir = home.memdir_for(&repo);
    write_file(&memdir.join("MEMORY.md"), "- a\n");
    let (_stop, rx) = watch::channel(false);
    let events = Events::start(&home.env, rx).unwrap();
    events.watch_project(&repo, &memdir);
    let all_active = || events.watched().iter().all(|f| f.active);
    let wait_until = |what: &str, ok: &dyn Fn() -> bool| {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !ok() {
            assert!(Instant::now() < deadline, "{what}: {:?}", events.watched());
            std::thread::sleep(Duration::from_millis(50));
        }
    };
    let baseline = inotify_watches();
    for round in 0..5 {
        std::fs::remove_dir_all(&repo).unwrap();
        wait_until("the removal is seen", &|| !all_active());
        tokio::time::sleep(Duration::from_millis(1500)).await;
        // Gone: its folders are waited for, not watched.
        assert!(inotify_watches() <= baseline, "round {round}: {} watches while the project is gone (was {baseline})", inotify_watches());
        write_file(&repo.join(".claude/rules/style.md"), "RULE\n");
        write_file(&repo.join(".git/HEAD"), "ref: refs/heads/main\n");
        wait_until("the project is watched again", &all_active);
    }
    tokio::time::sleep(Duration::from_millis(700)).await;
    let after = inotify_watches();
    assert!(after <= baseline + 2, "{after} watches after five rounds (was {baseline})");
}
