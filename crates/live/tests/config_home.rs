//! The watcher over Claude Code's config folder (`~/.claude`, `$CLAUDE_CONFIG_DIR`): what a
//! session writes there at every prompt reaches no page and keeps the cached view; what Mneme
//! reads there (the user's CLAUDE.md, settings, rules) still reaches pages and drops the view.
//! The real inotify watcher over a temporary home (hermetic).

mod common;

use common::World;
use mneme_testsupport::{write_file, TestHome};
use std::path::PathBuf;
use std::sync::Arc;

/// A repository with a CLAUDE.md, a user CLAUDE.md and user settings; the watcher running.
fn world() -> World {
    let home = TestHome::new();
    let repo = home.git_repo("repo");
    home.write(repo.join("CLAUDE.md"), "Use tabs.\n");
    home.write(home.config_home().join("CLAUDE.md"), "USER-ONE\n");
    home.write(home.config_home().join("settings.json"), "{\n  \"theme\": \"dark\"\n}\n");
    World::start(home, repo)
}

impl World {
    fn config(&self, rel: &str) -> PathBuf {
        self.home.config_home().join(rel)
    }

    /// Empties the channel pages hear on (batches from setting the world up).
    fn forget_heard(&mut self) {
        while self.changes.try_recv().is_ok() {}
    }
}

/// Appends a line to `path`, as Claude Code appends each prompt to `history.jsonl`.
fn append(path: &PathBuf, line: &str) {
    use std::io::Write;
    let mut f = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    writeln!(f, "{line}").unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_writing_history_and_state_in_the_config_home_keeps_the_view_and_no_page_hears_of_it() {
    let mut w = world();
    let kept = w.cached();
    w.forget_heard();
    // Three prompts of a running session, as Claude Code 2.1.x writes them: the prompt appended
    // to `history.jsonl`, the sign-in refreshed, the global config's backup, and the folders
    // it keeps its own state in (2.1.332 makes `backups`, `sessions` and `telemetry` in a
    // `-p` run; earlier releases `shell-snapshots`, `todos`, `session-env`). `history.jsonl`
    // alone proves nothing here: the watcher drops every `.jsonl` name (transcripts) before the
    // cache hears of it; the others are what used to drop the view and reload the pages.
    let dirs = ["backups", "sessions", "telemetry", "shell-snapshots", "todos", "session-env"];
    let noise: Vec<PathBuf> = ["history.jsonl", ".credentials.json", ".claude.json.backup"].iter().chain(&dirs).map(|n| w.config(n)).collect();
    for i in 0..3 {
        let before = w.events.context_cache().stats().batches;
        append(&w.config("history.jsonl"), &format!("{{\"display\":\"prompt {i}\"}}"));
        write_file(&w.config(".credentials.json"), &format!("{{\"token\":\"t{i}\"}}\n"));
        write_file(&w.config(".claude.json.backup"), &format!("{{\"numStartups\":{i}}}\n"));
        for dir in dirs {
            write_file(&w.config(&format!("{dir}/{i}.json")), "[]\n");
        }
        // The cache hears of every batch the watcher sees, pages only of those they may show.
        w.batches_after(before, 1).await;
    }
    assert!(Arc::ptr_eq(&kept, &w.view()), "a session's own writes in the config home dropped the view");
    // Batches go out in order: had any of the session's writes been sent, it would come first.
    let user_md = w.config("CLAUDE.md");
    write_file(&user_md, "USER-TWO\n");
    let batch = w.next_batch().await;
    assert!(batch.contains(&user_md), "{batch:?}");
    assert!(!batch.iter().any(|p| noise.iter().any(|n| p.starts_with(n))), "a page heard of a session's writes: {batch:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_user_claude_md_and_settings_reach_pages_and_drop_the_view() {
    let mut w = world();
    // No view yet: a page showing the settings (not a context view) hears of them through the
    // shell's own watch on the config home.
    for (rel, text) in [("settings.json", "{\n  \"theme\": \"light\"\n}\n"), ("CLAUDE.md", "USER-TWO\n")] {
        w.forget_heard();
        let path = w.config(rel);
        write_file(&path, text);
        let batch = w.next_batch().await;
        assert!(batch.contains(&path), "{rel}: {batch:?}");
    }
    // With a view kept, each drops it and the next call shows the change.
    let kept = w.cached();
    assert!(kept.block.contains("USER-TWO") && kept.auto_memory.enabled, "{}", kept.block);
    w.forget_heard();
    let user_md = w.config("CLAUDE.md");
    write_file(&user_md, "USER-THREE\n");
    assert!(w.next_batch().await.contains(&user_md));
    let next = w.view();
    assert!(!Arc::ptr_eq(&kept, &next) && next.block.contains("USER-THREE"), "{}", next.block);

    let kept = w.cached();
    w.forget_heard();
    let settings = w.config("settings.json");
    write_file(&settings, "{\n  \"autoMemoryEnabled\": false\n}\n");
    assert!(w.next_batch().await.contains(&settings));
    let next = w.view();
    assert!(!Arc::ptr_eq(&kept, &next) && !next.auto_memory.enabled, "the settings change did not drop the view");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_rule_created_under_rules_reaches_pages_and_drops_the_view() {
    let mut w = world();
    // `rules` exists with one rule: the view watches it as a tree.
    write_file(&w.config("rules/first.md"), "RULE-ONE\n");
    let kept = w.cached();
    assert!(kept.block.contains("RULE-ONE"), "{}", kept.block);
    w.forget_heard();
    let rule = w.config("rules/style.md");
    write_file(&rule, "RULE-TWO\n");
    let batch = w.next_batch().await;
    assert!(batch.contains(&rule), "{batch:?}");
    let next = w.view();
    assert!(!Arc::ptr_eq(&kept, &next) && next.block.contains("RULE-TWO"), "{}", next.block);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rules_folder_made_in_the_config_home_reaches_pages_and_drops_the_view() {
    let mut w = world();
    // No `rules` yet: the view watches the config home for that name.
    let kept = w.cached();
    w.forget_heard();
    let rules = w.config("rules");
    write_file(&rules.join("style.md"), "RULE-NEW\n");
    let batch = w.next_batch().await;
    assert!(batch.iter().any(|p| p.starts_with(&rules)), "{batch:?}");
    assert!(!Arc::ptr_eq(&kept, &w.view()), "a rules folder made in the config home left the view in place");
    assert!(w.cached().block.contains("RULE-NEW"));
}
