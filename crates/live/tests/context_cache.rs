//! The context cache with the real file watcher: a view for an unchanged folder comes from
//! memory (the very same `Arc`), and every kind of change a view depends on drops it, so the
//! next call shows the change. Hermetic: a temporary home, config home and managed folder.

mod common;

use common::{World, START};
use mneme_api::{Clock, ContextRequest, ContextView};
use mneme_testsupport::{write_file, TestHome};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A clock the test moves (to cross midnight).
struct Moving(AtomicU64);

impl Clock for Moving {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(self.0.load(Ordering::SeqCst))
    }
}

/// A repository with a CLAUDE.md and a rule, a user CLAUDE.md including a file outside the
/// project, user settings, and a MEMORY.md; the watcher running.
fn world() -> World {
    world_and_clock().0
}

/// [`world`] and its clock, which the test may move.
fn world_and_clock() -> (World, Arc<Moving>) {
    let home = TestHome::new();
    let repo = home.git_repo("repo");
    home.write(repo.join("CLAUDE.md"), "Use tabs for indentation.\n");
    home.write(repo.join(".claude/rules/style.md"), "Prefer small functions.\n");
    home.write(repo.join("src/main.rs"), "fn main() {}\n");
    home.write(home.root.join("shared/notes.md"), "Shared note one.\n");
    let user_md = format!(
        "User rules.\n@{}\n@{}\n",
        home.root.join("shared/notes.md").display(),
        home.root.join("elsewhere/extra.md").display()
    );
    // The folder of the missing include target exists but holds nothing the view loads.
    home.write(home.root.join("elsewhere/README"), "Not an instruction file.\n");
    home.write(home.config_home().join("CLAUDE.md"), &user_md);
    home.write(home.config_home().join("settings.json"), "{\n  \"theme\": \"dark\"\n}\n");
    home.write(home.memdir_for(&repo).join("MEMORY.md"), "- [First](first.md) — the first memory\n");
    let clock = Arc::new(Moving(AtomicU64::new(START)));
    (World::start_with(home, repo, clock.clone()), clock)
}

impl World {
    /// Waits for the watcher's batch naming `path` (or a folder on the way to it). The cache
    /// hears of a batch before any subscriber does.
    async fn seen(&mut self, path: &Path) {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let batch = tokio::time::timeout(left, self.changes.recv())
                .await
                .unwrap_or_else(|_| panic!("no change batch named {} within 10 s", path.display()))
                .expect("the watcher runs");
            if batch.is_empty() || batch.iter().any(|p| path.starts_with(p)) {
                return;
            }
        }
    }

    /// Keeps a view, makes `change`, waits for the watcher, and answers the next view, checking
    /// it is not the kept one.
    async fn after(&mut self, path: &Path, change: impl FnOnce(&Path)) -> Arc<ContextView> {
        let kept = self.cached();
        change(path);
        self.seen(path).await;
        let next = self.view();
        assert!(!Arc::ptr_eq(&kept, &next), "a change to {} left the kept view in place", path.display());
        next
    }
}

fn rewrite(text: &'static str) -> impl FnOnce(&Path) {
    move |p: &Path| write_file(p, text)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_second_identical_call_is_the_kept_view_not_a_new_build() {
    let w = world();
    let first = w.cached();
    let before = w.events.context_cache().stats();
    let again = w.view();
    assert!(Arc::ptr_eq(&first, &again), "the same request built the view again");
    let after = w.events.context_cache().stats();
    assert_eq!(after.hits, before.hits + 1);
    assert_eq!(after.misses, before.misses);
    assert!(again.block.contains("Use tabs for indentation."));
    // What the cache answers is what a fresh build answers.
    let fresh = w.mneme.context(&w.request()).unwrap();
    assert_eq!(serde_json::to_value(&*again).unwrap(), serde_json::to_value(&fresh).unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editing_the_projects_claude_md_shows_on_the_next_call() {
    let mut w = world();
    let path = w.repo.join("CLAUDE.md");
    let v = w.after(&path, rewrite("Use spaces, four of them.\n")).await;
    assert!(v.block.contains("Use spaces, four of them.") && !v.block.contains("Use tabs"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editing_a_rule_shows_on_the_next_call() {
    let mut w = world();
    let path = w.repo.join(".claude/rules/style.md");
    let v = w.after(&path, rewrite("Prefer long, descriptive names.\n")).await;
    assert!(v.block.contains("Prefer long, descriptive names."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_rule_in_a_new_sub_folder_of_the_rules_shows_on_the_next_call() {
    let mut w = world();
    let path = w.repo.join(".claude/rules/deep/er/naming.md");
    let v = w.after(&path, rewrite("Name things plainly.\n")).await;
    assert!(v.block.contains("Name things plainly."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editing_an_included_file_outside_the_project_shows_on_the_next_call() {
    let mut w = world();
    let path = w.home.root.join("shared/notes.md");
    assert!(w.cached().block.contains("Shared note one."));
    let v = w.after(&path, rewrite("Shared note two.\n")).await;
    assert!(v.block.contains("Shared note two."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_include_target_appearing_shows_on_the_next_call() {
    let mut w = world();
    // Claude Code skips a missing include without a word; the loader reports the path in
    // `missing`, which nothing else would have the watcher cover.
    let path = w.home.root.join("elsewhere/extra.md");
    assert!(!w.cached().block.contains("Extra from elsewhere."));
    let v = w.after(&path, rewrite("Extra from elsewhere.\n")).await;
    assert!(v.block.contains("Extra from elsewhere."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_include_folder_appearing_shows_on_the_next_call() {
    let mut w = world();
    // The include names a file in a folder that does not exist yet: the folder above is
    // watched for that folder's name.
    let user_md = w.home.config_home().join("CLAUDE.md");
    let target = w.home.root.join("later/sub/extra.md");
    write_file(&user_md, &format!("User rules.\n@{}\n", target.display()));
    assert!(!w.cached().block.contains("Extra from later."));
    let v = w.after(&target, rewrite("Extra from later.\n")).await;
    assert!(v.block.contains("Extra from later."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pointing_a_linked_folder_of_an_include_elsewhere_shows_on_the_next_call() {
    let mut w = world();
    let (link, other) = (w.home.root.join("linked"), w.home.root.join("other"));
    write_file(&other.join("notes.md"), "Other note.\n");
    std::os::unix::fs::symlink(w.home.root.join("shared"), &link).unwrap();
    write_file(&w.home.config_home().join("CLAUDE.md"), &format!("User rules.\n@{}\n", link.join("notes.md").display()));
    assert!(w.cached().block.contains("Shared note one."));
    let v = w
        .after(&link, |l| {
            std::fs::remove_file(l).unwrap();
            std::os::unix::fs::symlink(&other, l).unwrap();
        })
        .await;
    assert!(v.block.contains("Other note."), "{}", v.block);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_busy_file_in_a_folder_above_the_project_keeps_the_view_and_no_page_hears_of_it() {
    let mut w = world();
    let kept = w.cached();
    // A shell's history next to the project's folder and in the home folder: both folders are
    // watched for the view's sake (a CLAUDE.md there, the config), not for these.
    for history in [w.home.root.join(".zsh_history"), w.home.home().join(".bash_history")] {
        let before = w.batches();
        write_file(&history, "ls\n");
        w.batches_after(before, 1).await;
    }
    assert!(Arc::ptr_eq(&kept, &w.view()), "a shell's history dropped the view");
    // Batches go out in order: the first a page hears of is the CLAUDE.md edit.
    let claude_md = w.repo.join("CLAUDE.md");
    write_file(&claude_md, "Use spaces.\n");
    let batch = tokio::time::timeout(Duration::from_secs(10), w.changes.recv()).await.expect("a batch").unwrap();
    assert!(batch.contains(&claude_md) && !batch.iter().any(|p| p.ends_with(".zsh_history") || p.ends_with(".bash_history")), "{batch:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_settings_change_shows_on_the_next_call() {
    let mut w = world();
    assert!(w.cached().auto_memory.enabled);
    let path = w.home.config_home().join("settings.json");
    let v = w.after(&path, rewrite("{\n  \"autoMemoryEnabled\": false\n}\n")).await;
    assert!(!v.auto_memory.enabled);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_project_settings_file_appearing_shows_on_the_next_call() {
    let mut w = world();
    // `.claude/settings.json` in the repository excludes the rule.
    let path = w.repo.join(".claude/settings.json");
    let excludes = "{\n  \"claudeMdExcludes\": [\"**/rules/style.md\"]\n}\n";
    let v = w.after(&path, rewrite(excludes)).await;
    assert!(!v.block.contains("Prefer small functions."), "{}", v.block);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn editing_memory_md_shows_on_the_next_call() {
    let mut w = world();
    let path = w.home.memdir_for(&w.repo).join("MEMORY.md");
    assert!(w.cached().block.contains("the first memory"));
    let v = w.after(&path, rewrite("- [Second](second.md) — the second memory\n")).await;
    assert!(v.block.contains("the second memory"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_claude_md_in_a_folder_above_the_project_shows_on_the_next_call() {
    let mut w = world();
    let path = w.home.root.join("CLAUDE.md");
    let v = w.after(&path, rewrite("From the folder above.\n")).await;
    assert!(v.block.contains("From the folder above."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_claude_md_in_a_sub_folder_joins_the_nested_candidates() {
    let mut w = world();
    let path = w.repo.join("src/CLAUDE.md");
    let v = w.after(&path, rewrite("Sub-folder notes.\n")).await;
    assert!(v.nested_candidates.contains(&path), "{:?}", v.nested_candidates);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_view_is_never_served_for_another_day() {
    let (w, clock) = world_and_clock();
    // 2.1.197 prints the date in the block (later releases moved it out).
    let req = ContextRequest { claude_version: Some("2.1.197".parse().unwrap()), ..w.request() };
    let view = || w.mneme.context_cached(&req, w.events.context_cache()).unwrap();
    let today = view();
    assert!(Arc::ptr_eq(&today, &view()) || Arc::ptr_eq(&view(), &view()), "no view was kept");
    assert!(today.block.contains("2025-11-29"));
    clock.0.fetch_add(86_400, Ordering::SeqCst);
    let tomorrow = view();
    assert!(!Arc::ptr_eq(&today, &tomorrow));
    assert!(tomorrow.block.contains("2025-11-30") && !tomorrow.block.contains("2025-11-29"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_request_for_the_same_folder_is_another_view() {
    let w = world();
    let all = w.cached();
    let req = ContextRequest { setting_sources: Some("user".into()), ..w.request() };
    let user_only = w.mneme.context_cached(&req, w.events.context_cache()).unwrap();
    assert!(!Arc::ptr_eq(&all, &user_only));
    assert!(!user_only.block.contains("Use tabs for indentation."));
    assert!(all.block.contains("Use tabs for indentation."));
}

/// A shell as the operations see it: the start folder and this watcher's cache.
struct Shell<'a>(&'a World);

impl mneme_api::ops::Host for Shell<'_> {
    fn start_dir(&self) -> &Path {
        &self.0.repo
    }

    fn scheduler_running(&self) -> bool {
        false
    }

    fn watch_project(&self, cwd: &Path, memory_dir: &Path) -> Result<Vec<PathBuf>, mneme_api::ApiError> {
        Ok(self.0.events.watch_project(cwd, memory_dir))
    }

    fn watched(&self) -> Result<Vec<mneme_api::ops::WatchedFolder>, mneme_api::ApiError> {
        Ok(self.0.events.watched())
    }

    fn context_cache(&self) -> Option<&mneme_api::ContextCache> {
        Some(self.0.events.context_cache())
    }
}

/// An operation's request from the JSON a page sends.
macro_rules! arg {
    ($($json:tt)+) => {
        serde_json::from_value(serde_json::json!($($json)+)).unwrap()
    };
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_context_operation_uses_the_shells_cache_and_a_save_empties_it_at_once() {
    use mneme_api::ops;
    let w = world();
    let shell = Shell(&w);
    let cache = w.events.context_cache();
    let query = || -> ops::ContextQuery { arg!({ "cwd": "." }) };
    ops::context(&w.mneme, &shell, query()).unwrap();
    let mut hit = false;
    for _ in 0..20 {
        let before = cache.stats().hits;
        ops::context(&w.mneme, &shell, query()).unwrap();
        if cache.stats().hits == before + 1 {
            hit = true;
            break;
        }
    }
    assert!(hit, "the context operation never answered from the shell's cache");
    assert!(cache.stats().entries >= 1);
    // Reading keeps the view; saving through an operation drops it before the watcher could
    // report the write, so the page's immediate reload shows the saved text.
    let file: mneme_api::FileText = ops::read_file(&w.mneme, &shell, arg!({ "cwd": ".", "path": "CLAUDE.md" })).unwrap();
    assert!(cache.stats().entries >= 1, "reading a file dropped the view");
    let save = arg!({ "cwd": ".", "path": "CLAUDE.md", "content": "Saved through Mneme.\n", "revision": file.revision });
    ops::save_file(&w.mneme, &shell, save).unwrap();
    assert_eq!(cache.stats().entries, 0);
    assert!(ops::context(&w.mneme, &shell, query()).unwrap().block.contains("Saved through Mneme."));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_caches_watches_stay_out_of_the_list_the_settings_screen_shows() {
    let w = world();
    w.cached();
    let listed = w.events.watched();
    assert!(listed.iter().any(|f| f.path == w.home.config_home() && f.active), "{listed:?}");
    // The folder above the project is watched for the cache, and not listed.
    assert!(!listed.iter().any(|f| f.path == w.home.root), "{listed:?}");
    assert_eq!(listed.len(), 2, "{listed:?}");
}
