//! Mneme's own files in a data folder this account may not write (another account's): the
//! project's review mode (`extract/modes.json`) and the scheduler's lock (`scheduler.lock`),
//! each refused with one line that says so and what to do, exit status 77, and the data folder
//! left as it was. Root passes every permission check, so the binary runs as `nobody`
//! (uid 65534) on a data folder that is root's. The full and read-only disks are
//! `crates/api/tests/disk_says_no_own_files.rs` and `crates/scheduler/tests/disk_says_no.rs`.
//!
//! Switching accounts needs root; as any other user these tests say so and pass without
//! checking (CI runs them as root).

#![cfg(target_os = "linux")]

mod common;

use mneme_testsupport::accounts::{as_nobody, binary_for_nobody, root_or_skip};
use mneme_testsupport::{output_with_stdin, tree_snapshot, TestHome};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

struct World {
    h: TestHome,
    repo: PathBuf,
    bin: PathBuf,
}

impl World {
    fn new() -> World {
        let h = TestHome::new();
        let repo = h.root.join("repo");
        std::fs::create_dir_all(&repo).unwrap();
        let bin = binary_for_nobody(&h, env!("CARGO_BIN_EXE_mneme"));
        World { h, repo, bin }
    }

    fn data(&self) -> PathBuf {
        self.h.root.join("mneme-data")
    }

    fn run(&self, args: &[&str], nobody: bool) -> Output {
        let mut c: Command = mneme_testsupport::command_in(self.bin.to_str().unwrap(), &self.h);
        c.env("MNEME_KEYRING_SERVICE", "mneme-disk-says-no-own-files-test").current_dir(&self.repo).args(args);
        if nobody {
            as_nobody(&mut c);
        }
        output_with_stdin(c, None)
    }

    /// `args` run as `nobody`: refused with one line naming `file` and saying what to do, exit
    /// status 77, the data folder as it was.
    fn refused(&self, args: &[&str], file: &Path) {
        let before = tree_snapshot(&self.data());
        let out = self.run(args, true);
        assert_eq!(out.status.code(), Some(77), "mneme {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        let err = common::one_line_error(out, args);
        assert!(err.starts_with("mneme: ") && err.contains("this account may not change") && err.contains("Ask its owner for write access"), "mneme {args:?}: {err}");
        assert!(err.contains(&file.display().to_string()) && !err.contains("os error"), "mneme {args:?} names the file: {err}");
        assert!(tree_snapshot(&self.data()) == before, "mneme {args:?} changed the data folder");
    }
}

/// One test, one copy of the binary: a copy being written while another test's thread starts a
/// child is held open in that child until it execs, and running the copy then fails with "Text
/// file busy".
#[test]
fn another_account_s_data_folder_refuses_the_review_mode_and_the_scheduler_lock_with_their_own_words() {
    if !root_or_skip("running mneme as another account") {
        return;
    }
    let w = World::new();
    // Root's data folder, with the modes file in it.
    common::succeeded(w.run(&["inbox", "mode", "review"], false), &["inbox", "mode", "review"]);
    let modes = w.data().join("extract").join("modes.json");
    assert!(modes.is_file());
    w.refused(&["inbox", "mode", "off"], &modes);
    w.refused(&["daemon"], &w.data().join("scheduler.lock"));
}
