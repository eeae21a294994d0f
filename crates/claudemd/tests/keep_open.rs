//! `keep_files_open_until_exit`: a one-shot process leaves up to its budget of read files open
//! for its exit to close, and closes the rest as usual. Its own test binary, because the
//! budget and the count of open descriptors are process-wide.

use mneme_claudemd::{keep_files_open_until_exit, load, LoadOptions};
use mneme_core::versions::{behaviours, ClaudeVersion};
use std::fs;

fn open_descriptors() -> usize {
    fs::read_dir("/proc/self/fd").expect("/proc is mounted").count()
}

#[test]
fn the_budget_of_files_left_open_is_kept_and_not_exceeded() {
    let tmp = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(tmp.path()).unwrap();
    let rules = root.join("repo/.claude/rules");
    fs::create_dir_all(&rules).unwrap();
    fs::create_dir_all(root.join("home/.claude")).unwrap();
    for i in 0..40 {
        fs::write(rules.join(format!("r{i:02}.md")), format!("rule {i}\n")).unwrap();
    }
    let opts = LoadOptions::new(
        root.join("repo"),
        root.join("home"),
        root.join("home/.claude"),
        root.join("managed"),
        behaviours(ClaudeVersion::new(2, 1, 197)),
    );

    // Without a budget every file is closed once read.
    let before = open_descriptors();
    assert_eq!(load(&opts).files.len(), 40);
    assert_eq!(open_descriptors(), before);

    // With a budget of 25, 25 of the 40 stay open and the other 15 are closed.
    keep_files_open_until_exit(25);
    let ctx = load(&opts);
    assert_eq!(ctx.files.len(), 40);
    assert_eq!(open_descriptors(), before + 25);
    // The output does not depend on it.
    keep_files_open_until_exit(0);
    assert_eq!(load(&opts).files.iter().map(|f| &f.content).collect::<Vec<_>>(), ctx.files.iter().map(|f| &f.content).collect::<Vec<_>>());
    assert_eq!(open_descriptors(), before + 25);
}
