//! Fixtures shared by the CLI's dream tests.

use mneme_testsupport::{topic, TestHome};
use std::fs;
use std::path::PathBuf;

/// A repository whose memory holds two near-duplicate feedback memories (a dream merges them)
/// and the index `extra_index` lines after their two entries.
pub fn tabs_project(extra_index: &str) -> (TestHome, PathBuf, PathBuf) {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let mem = h.memdir_for(&repo);
    fs::create_dir_all(&mem).unwrap();
    fs::write(mem.join("tabs_old.md"), topic("Prefers tabs", "Use tabs for indentation", "feedback", "Always indent with tabs.\n**Why:** team style.")).unwrap();
    mneme_testsupport::set_mtime(&mem.join("tabs_old.md"), 1_700_000_000);
    fs::write(mem.join("tabs_new.md"), topic("Tabs preference", "Use tabs for indentation in code", "feedback", "Always indent with tabs, never spaces.\n**Why:** team style.")).unwrap();
    fs::write(mem.join("MEMORY.md"), format!("- [Old](tabs_old.md) — tabs\n- [New](tabs_new.md) — tabs\n{extra_index}")).unwrap();
    (h, repo, mem)
}
