//! What the CLI's test files share: checking a finished `mneme` run, and the dream tests'
//! fixture. Each test file compiles this module on its own, so a file that uses only part of it
//! would warn about the rest.
#![allow(dead_code)]

use mneme_testsupport::{topic, TestHome};
use std::fs;
use std::path::PathBuf;
use std::process::Output;

/// The standard output of a run that must succeed; on failure the assertion shows its error.
pub fn succeeded(out: Output, args: &[&str]) -> String {
    assert!(out.status.success(), "mneme {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("utf-8")
}

/// The error of a run that must fail, checked to be one clear line.
pub fn one_line_error(out: Output, args: &[&str]) -> String {
    assert!(!out.status.success(), "mneme {args:?} should fail: {}", String::from_utf8_lossy(&out.stdout));
    let err = String::from_utf8(out.stderr).expect("utf-8");
    assert_eq!(err.trim_end().lines().count(), 1, "one clear line, got: {err}");
    err
}

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
