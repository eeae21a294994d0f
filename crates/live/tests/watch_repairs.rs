//! The watcher behind the context cache after folders come and go, busy folders, odd names and
//! a fresh machine: the real inotify watcher over a temporary home (hermetic).

mod common;

use common::World;
use mneme_api::ContextView;
use mneme_live::events::Events;
use mneme_testsupport::{write_file, TestHome};
use std::os::unix::ffi::OsStrExt;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::watch;

fn world() -> World {
    let home = TestHome::new();
    let repo = home.git_repo("repo");
    home.write(repo.join("CLAUDE.md"), "Use tabs.\n");
    home.write(repo.join(".claude/rules/style.md"), "RULE-ONE\n");
    World::start(home, repo)
}

impl World {
    /// Waits (at most 5 s) until the view the cache answers satisfies `ok`; answers it.
    async fn until(&self, what: &str, ok: impl Fn(&ContextView) -> bool) -> Arc<ContextView> {
        let deadline = Instant::now() + Duration::from_secs(5);
        loop {
            let v = self.view();
            if ok(&v) {
                return v;
            }
            assert!(Instant::now() < deadline, "the cache still answers a stale view: {what}\n{}", v.block);
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_folder_removed_and_made_again_is_watched_again() {
    let mut w = world();
    // The shell watches the project's `.claude` (recursively) and the cache relies on that.
    w.events.watch_project(&w.repo, &w.home.memdir_for(&w.repo));
    assert!(w.cached().block.contains("RULE-ONE"));
    let claude = w.repo.join(".claude");
    let rules = claude.join("rules");
    w.after_change(&claude, || std::fs::remove_dir_all(&claude).unwrap()).await;
    while w.changes.try_recv().is_ok() {}
    write_file(&rules.join("style.md"), "RULE-TWO\n");
    w.until("the rule written again", |v| v.block.contains("RULE-TWO")).await;
    // Once the watcher has reported the new folder, a view is kept again.
    w.heard_of(&claude).await;
    w.cached();
    // The folder's old watch went with the old folder: the new one must be watched.
    write_file(&rules.join("style.md"), "RULE-THREE\n");
    let v = w.until("the rule edited in the new folder", |v| v.block.contains("RULE-THREE")).await;
    assert_eq!(v.block, w.mneme.context(&w.request()).unwrap().block);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_moved_away_and_made_again_is_watched_again() {
    let mut w = world();
    let memdir = w.home.memdir_for(&w.repo);
    w.events.watch_project(&w.repo, &memdir);
    assert!(w.cached().block.contains("Use tabs."));
    let (repo, old) = (w.repo.clone(), w.home.root.join("repo-old"));
    w.after_change(&repo, || std::fs::rename(&repo, &old).unwrap()).await;
    while w.changes.try_recv().is_ok() {}
    let _ = w.home.git_repo("repo");
    write_file(&w.repo.join("CLAUDE.md"), "SECOND\n");
    w.until("the new project's CLAUDE.md", |v| v.block.contains("SECOND")).await;
    // Once the watcher has reported the new folder, a view is kept again.
    w.heard_of(&repo).await;
    w.cached();
    while w.changes.try_recv().is_ok() {}
    // Neither the cache's watch nor the shell's may follow the old folder to its new name.
    let claude_md = w.repo.join("CLAUDE.md");
    write_file(&claude_md, "THIRD\n");
    let v = w.until("an edit in the new project", |v| v.block.contains("THIRD")).await;
    assert!(!v.block.contains("SECOND"), "{}", v.block);
    let listed = w.events.watched();
    assert!(listed.iter().any(|f| f.path == w.repo && f.active), "{listed:?}");
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let batch = tokio::time::timeout(left, w.changes.recv()).await.expect("pages hear of the edit").unwrap();
        if batch.contains(&claude_md) {
            break;
        }
    }
    // Edits in the old folder, now under another name, are not reported as the project's. No
    // batch may come of them, so nothing can be waited for: the sleep gives one the time to.
    let before = w.events.context_cache().stats().batches;
    write_file(&w.home.root.join("repo-old/CLAUDE.md"), "OLD\n");
    tokio::time::sleep(Duration::from_millis(700)).await;
    let after = w.events.context_cache().stats().batches;
    let v = w.view();
    assert!(v.block.contains("THIRD"), "{}", v.block);
    assert!(after == before || w.changes.try_recv().map_or(true, |b| !b.contains(&claude_md)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_written_in_a_sub_folder_keeps_the_view_and_no_page_hears_of_it() {
    let mut w = world();
    // Made before the view (and its watches): no batch comes of it.
    let logs = w.repo.join("logs");
    std::fs::create_dir_all(&logs).unwrap();
    let kept = w.cached();
    while w.changes.try_recv().is_ok() {}
    // A dev server's log, written again and again.
    for i in 0..3 {
        let before = w.events.context_cache().stats().batches;
        write_file(&logs.join("app.log"), &format!("line {i}\n"));
        w.batches_after(before, 1).await;
    }
    assert!(Arc::ptr_eq(&kept, &w.view()), "a log written in a sub-folder dropped the view");
    // The first batch a page hears of is the CLAUDE.md edit.
    let claude_md = w.repo.join("CLAUDE.md");
    write_file(&claude_md, "Use spaces.\n");
    let batch = tokio::time::timeout(Duration::from_secs(10), w.changes.recv()).await.expect("a batch").unwrap();
    assert!(batch.contains(&claude_md) && !batch.iter().any(|p| p.ends_with("app.log")), "{batch:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_log_written_in_the_project_folder_keeps_the_view_and_no_page_hears_of_it() {
    let mut w = world();
    // The shell watches the project folder itself (its CLAUDE.md files), flat.
    w.events.watch_project(&w.repo, &w.home.memdir_for(&w.repo));
    let kept = w.cached();
    while w.changes.try_recv().is_ok() {}
    // A build's log in the repository root, written at every build.
    for i in 0..3 {
        let before = w.events.context_cache().stats().batches;
        write_file(&w.repo.join("build.log"), &format!("build {i}\n"));
        w.batches_after(before, 1).await;
    }
    assert!(Arc::ptr_eq(&kept, &w.view()), "a log written in the project folder dropped the view");
    // Batches go out in order: the first a page hears of is the CLAUDE.md edit, which still
    // drops the view.
    let claude_md = w.repo.join("CLAUDE.md");
    write_file(&claude_md, "Use spaces.\n");
    let batch = w.next_batch().await;
    assert!(batch.contains(&claude_md) && !batch.iter().any(|p| p.ends_with("build.log")), "{batch:?}");
    assert!(w.view().block.contains("Use spaces."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_file_included_from_the_project_folder_still_reaches_pages_and_drops_the_view() {
    let home = TestHome::new();
    let repo = home.git_repo("repo");
    home.write(repo.join("CLAUDE.md"), "Use tabs.\n@notes.md\n");
    home.write(repo.join("notes.md"), "NOTE-ONE\n");
    let mut w = World::start(home, repo);
    w.events.watch_project(&w.repo, &w.home.memdir_for(&w.repo));
    let kept = w.cached();
    assert!(kept.block.contains("NOTE-ONE"), "{}", kept.block);
    while w.changes.try_recv().is_ok() {}
    // Not an instruction file by name: it matters because the view includes it.
    let notes = w.repo.join("notes.md");
    write_file(&notes, "NOTE-TWO\n");
    let batch = w.next_batch().await;
    assert!(batch.contains(&notes), "{batch:?}");
    let next = w.view();
    assert!(!Arc::ptr_eq(&kept, &next) && next.block.contains("NOTE-TWO"), "{}", next.block);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_git_folder_made_in_the_project_folder_reaches_pages_and_drops_the_view() {
    let home = TestHome::new();
    // Not a repository yet: `git init` makes this folder the project root.
    let repo = home.root.join("plain");
    home.write(repo.join("CLAUDE.md"), "Use tabs.\n");
    let mut w = World::start(home, repo);
    w.events.watch_project(&w.repo, &w.home.memdir_for(&w.repo));
    let kept = w.cached();
    while w.changes.try_recv().is_ok() {}
    let git = w.repo.join(".git");
    std::fs::create_dir(&git).unwrap();
    let batch = w.next_batch().await;
    assert!(batch.contains(&git), "{batch:?}");
    assert!(!Arc::ptr_eq(&kept, &w.view()), "a .git made in the project folder left the view in place");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_sub_folder_and_a_claude_md_in_it_show_on_the_next_call() {
    let mut w = world();
    w.cached();
    let logs = w.repo.join("logs");
    let docs = logs.join("docs");
    w.after_change(&logs, || std::fs::create_dir_all(&docs).unwrap()).await;
    w.cached();
    write_file(&docs.join("CLAUDE.md"), "Docs.\n");
    w.until("a CLAUDE.md in the new sub-folder", |v| v.nested_candidates.contains(&docs.join("CLAUDE.md"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_md_made_in_the_deepest_folder_the_walk_looks_into_shows_on_the_next_call() {
    let w = world();
    // The nested walk looks for instructions eight folders down (and no deeper).
    let deep = w.repo.join("a/b/c/d/e/f/g/h");
    // Made before the view (and its watches): no batch comes of it.
    std::fs::create_dir_all(&deep).unwrap();
    assert!(w.cached().nested_candidates.is_empty());
    write_file(&deep.join("CLAUDE.md"), "DEEP\n");
    w.until("a CLAUDE.md eight folders down", |v| v.nested_candidates.contains(&deep.join("CLAUDE.md"))).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_md_inside_a_virtual_environment_is_watched_by_name_and_a_new_one_shows_after_the_next_change() {
    // Claude Code skips no folder by name: reading a file under `.venv/…/pkg` loads the
    // CLAUDE.md there. The watcher does not list such folders (thousands of watches), so the
    // ones the walk found are watched by name and a new one waits for the next change.
    let home = TestHome::new();
    let repo = home.git_repo("repo");
    home.write(repo.join("CLAUDE.md"), "Use tabs.\n");
    let site = repo.join(".venv/lib/python3.12/site-packages");
    let shipped = home.write(site.join("pkg/CLAUDE.md"), "SHIPPED-ONE\n");
    std::fs::create_dir_all(site.join("other")).unwrap();
    let mut w = World::start(home, repo);
    w.events.watch_project(&w.repo, &w.home.memdir_for(&w.repo));
    let kept = w.cached();
    assert!(kept.nested_candidates.contains(&shipped), "{:?}", kept.nested_candidates);
    while w.changes.try_recv().is_ok() {}
    write_file(&shipped, "SHIPPED-TWO\n");
    let batch = w.next_batch().await;
    assert!(batch.contains(&shipped), "{batch:?}");
    assert!(!Arc::ptr_eq(&kept, &w.view()), "an edit of a CLAUDE.md found in .venv left the view in place");
    // One made in a package folder the walk listed but nothing watches: the next change that
    // drops the view (here the project's CLAUDE.md) lists it.
    let added = site.join("other/CLAUDE.md");
    write_file(&added, "ADDED\n");
    let claude_md = w.repo.join("CLAUDE.md");
    write_file(&claude_md, "Use spaces.\n");
    while !w.next_batch().await.contains(&claude_md) {}
    assert!(w.view().nested_candidates.contains(&added));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_that_is_not_utf8_reaches_pages_as_json() {
    let mut w = world();
    let memdir = w.home.memdir_for(&w.repo);
    std::fs::create_dir_all(&memdir).unwrap();
    w.events.watch_project(&w.repo, &memdir);
    while w.changes.try_recv().is_ok() {}
    let odd = memdir.join(std::ffi::OsStr::from_bytes(b"caf\xe9.md"));
    std::fs::write(&odd, "x").unwrap();
    // A batch from setting up the watch may still come first on a loaded machine: the one
    // naming the file must come, and encode.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let batch = tokio::time::timeout_at(deadline, w.changes.recv()).await.expect("a batch naming the file").unwrap();
        // Both shells send a batch as JSON (the event stream's data, the window's typed event).
        let json = serde_json::to_string(&*batch).expect("the batch encodes");
        assert!(serde_json::to_string(&serde_json::json!({ "paths": *batch })).is_ok());
        if json.contains("caf\u{FFFD}.md") {
            break;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn live_updates_start_on_a_fresh_machine_once_claude_code_makes_its_folders() {
    let home = TestHome::new();
    std::fs::remove_dir_all(home.config_home()).unwrap();
    let (_stop, rx) = watch::channel(false);
    let events = Events::start(&home.env, rx).unwrap();
    let mut changes = events.subscribe();
    // The start found none of them: they are made only after it.
    assert!(events.watched().iter().all(|f| !f.active));
    // Claude Code's first run makes its config home and a project's memory.
    let memory = home.config_home().join("projects/-x/memory/MEMORY.md");
    write_file(&home.config_home().join("settings.json"), "{}\n");
    write_file(&memory, "- a\n");
    let deadline = Instant::now() + Duration::from_secs(10);
    while !events.watched().iter().all(|f| f.active) {
        assert!(Instant::now() < deadline, "never watched: {:?}", events.watched());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    // Pages hear the folders appear, and every change from then on.
    let first = tokio::time::timeout(Duration::from_secs(5), changes.recv()).await.expect("a batch once watched").unwrap();
    assert!(!first.is_empty());
    write_file(&memory, "- b\n");
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let batch = tokio::time::timeout(left, changes.recv()).await.expect("the memory edit is heard").unwrap();
        if batch.contains(&memory) {
            break;
        }
    }
}
