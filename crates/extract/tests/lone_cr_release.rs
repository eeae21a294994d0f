//! The inbox decides an item for the Claude Code the user runs: the index lines a keep takes
//! out with a removed memory, and those an edit rewrites, are split as that release reads
//! MEMORY.md (from 2.1.284 a lone CR ends a line; up to 2.1.283 it stays inside its line, row 9
//! of docs/claude-code-versions.md), as the store's own delete for that release splits them.
//! The inbox used to split every index as the newest release does, whatever the user ran.

mod common;

use common::{new_item, World};
use mneme_agent::FileChange;
use mneme_core::versions::{behaviours, ClaudeVersion, Profile};
use mneme_core::FixedClock;
use mneme_extract::Extractor;
use mneme_store::memdir::Memdir;
use mneme_testsupport::TestHome;
use std::path::Path;
use std::sync::Arc;

fn release(patch: u32) -> Profile {
    behaviours(ClaudeVersion::new(2, 1, patch))
}

const LONE_CR: &str = "- [Alpha](a.md) — first\r- [Bravo](b.md) — second\r- [Charlie](c.md) — third\r";
const CRLF: &str = "- [Alpha](a.md) — first\r\n- [Bravo](b.md) — second\r\n- [Charlie](c.md) — third\r\n";

fn folder(mem: &Path, index: &str) {
    std::fs::create_dir_all(mem).unwrap();
    for n in ["a", "b", "c"] {
        std::fs::write(mem.join(format!("{n}.md")), format!("{n} body\n")).unwrap();
    }
    std::fs::write(mem.join("MEMORY.md"), index).unwrap();
}

/// MEMORY.md once the store's own delete of `removed`, for `release`, is done on a copy.
fn deleted_by_the_store(index: &str, removed: &str, release: &Profile) -> String {
    let t = tempfile::tempdir().unwrap();
    let mem = t.path().join("mem");
    folder(&mem, index);
    Memdir::new(&mem, t.path().join("trash"), Arc::new(FixedClock::at_unix_secs(1))).for_release(release).delete(removed).unwrap();
    std::fs::read_to_string(mem.join("MEMORY.md")).unwrap()
}

/// Keeping an item that removes a memory (and leaves the index to the removal) takes that
/// memory's index lines out as the user's release reads the index.
#[test]
fn keeping_a_removal_edits_the_index_as_the_user_s_release_reads_it() {
    for patch in [283, 284] {
        for index in [LONE_CR, CRLF] {
            for removed in ["a.md", "b.md"] {
                let w = World::new();
                folder(&w.memory, index);
                let inbox = w.inbox.clone().for_release(move || release(patch));
                let change = FileChange { path: w.memory.join(removed), before: Some(format!("{} body\n", &removed[..1])), after: None, reason: "t".into(), extra: Default::default() };
                let id = inbox.stage(new_item(&w.project, &w.memory, vec![change])).unwrap().id;
                inbox.keep(&id).unwrap();
                let want = deleted_by_the_store(index, removed, &release(patch));
                assert_eq!(std::fs::read_to_string(w.memory.join("MEMORY.md")).unwrap(), want, "2.1.{patch}, {index:?} without {removed}");
            }
        }
    }
    // A lone CR ends an entry in every release: removing the second memory drops its line alone
    // under 2.1.283 too (the index was once one line there, and the removed memory's link stayed).
    for patch in [283, 284] {
        let after = deleted_by_the_store(LONE_CR, "b.md", &release(patch));
        assert!(!after.contains("b.md") && after.contains("a.md"), "2.1.{patch}: {after:?}");
    }
}

/// The extractor's inbox decides items for the Claude Code installed (here a 2.1.283 on PATH):
/// keeping a removal of the second memory edits a lone-CR index as the store does for 2.1.283.
#[test]
fn the_extractor_s_inbox_follows_the_installed_release() {
    use std::os::unix::fs::PermissionsExt;
    let t = TestHome::new();
    let bin = t.root.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    std::fs::write(bin.join("claude"), "#!/bin/sh\necho '2.1.283 (Claude Code)'\n").unwrap();
    std::fs::set_permissions(bin.join("claude"), std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = t.env.clone().set_var("PATH", bin.to_string_lossy().to_string());
    let inbox = Extractor::new(env, Arc::new(FixedClock::at_unix_secs(common::T0))).inbox();
    let (project, mem) = (t.root.join("proj"), t.root.join("memory"));
    std::fs::create_dir_all(&project).unwrap();
    folder(&mem, LONE_CR);
    let change = FileChange { path: mem.join("b.md"), before: Some("b body\n".into()), after: None, reason: "t".into(), extra: Default::default() };
    let id = inbox.stage(new_item(&project, &mem, vec![change])).unwrap().id;
    inbox.keep(&id).unwrap();
    assert!(!mem.join("b.md").exists());
    assert_eq!(std::fs::read_to_string(mem.join("MEMORY.md")).unwrap(), deleted_by_the_store(LONE_CR, "b.md", &release(283)));
}
