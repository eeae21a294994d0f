//! How many inotify watches the context cache holds: none for a project's virtual environment,
//! and a bounded number once its views are gone. One test in this file, so no other watcher of the same
//! process is counted with it.

use mneme_api::{ContextRequest, FixedClock, Mneme};
use mneme_live::events::Events;
use mneme_testsupport::{inotify_watches, wait, write_file, TestHome};
use std::sync::Arc;
use tokio::sync::watch;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cache_watches_no_virtual_environment_and_lets_go_of_dropped_views() {
    let home = TestHome::new();
    let repo = home.git_repo("repo");
    home.write(repo.join("CLAUDE.md"), "Use tabs.\n");
    home.write(repo.join("src/app/main.py"), "print()\n");
    for i in 0..300 {
        std::fs::create_dir_all(repo.join(format!(".venv/lib/python3.12/site-packages/pkg{i}/sub"))).unwrap();
        std::fs::create_dir_all(repo.join(format!("env2/lib/pkg{i}"))).unwrap();
    }
    // A virtual environment by another name.
    write_file(&repo.join("env2/pyvenv.cfg"), "home = /usr/bin\n");
    let mneme = Mneme::new(home.env.clone(), Arc::new(FixedClock::at_unix_secs(1_764_400_000)));
    let (_stop, rx) = watch::channel(false);
    let events = Events::start(&home.env, rx).unwrap();
    let cache = events.context_cache();
    let baseline = inotify_watches();
    let req = ContextRequest { cwd: repo.clone(), ..Default::default() };
    let kept = || {
        for _ in 0..20 {
            let a = mneme.context_cached(&req, cache).unwrap();
            if Arc::ptr_eq(&a, &mneme.context_cached(&req, cache).unwrap()) {
                return a;
            }
        }
        panic!("no view was kept");
    };
    kept();
    let with_view = inotify_watches();
    // The project, its sub-folders, the folders above it, the config home…: a few dozen, not
    // one per folder of 600 packages.
    assert!(with_view - baseline < 100, "{} watches for one view", with_view - baseline);
    // A change drops the view and the page builds it again: no more watches than before.
    let before = cache.stats().batches;
    write_file(&repo.join("CLAUDE.md"), "Use spaces.\n");
    wait::until_async("the edit reported", || async { cache.stats().batches > before }).await;
    assert!(kept().block.contains("Use spaces."));
    assert!(inotify_watches() <= with_view, "{} watches after a rebuild, {with_view} before", inotify_watches());
    // A project of 1,500 ordinary folders: each is watched while its view is kept; once no view
    // is, at most the 1,024 most recent watches stay (for the view built again on a reload).
    let big = home.git_repo("big");
    for i in 0..1_500 {
        std::fs::create_dir_all(big.join(format!("src/m{i}"))).unwrap();
    }
    let big_req = ContextRequest { cwd: big.clone(), ..Default::default() };
    let mut kept_big = false;
    for _ in 0..20 {
        let a = mneme.context_cached(&big_req, cache).unwrap();
        if Arc::ptr_eq(&a, &mneme.context_cached(&big_req, cache).unwrap()) {
            kept_big = true;
            break;
        }
    }
    assert!(kept_big, "the big project's view was not kept");
    let with_big = inotify_watches();
    assert!(with_big - baseline > 1_500, "{} watches for the big project", with_big - baseline);
    cache.clear();
    let after = inotify_watches();
    assert!(after <= baseline + 1_024, "{} watches kept with no view", after - baseline);
}
