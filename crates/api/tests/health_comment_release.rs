//! Health measures a MEMORY.md holding `<!--` as the user's release strips its comments before
//! the cap: up to 2.1.329 any such file is rebuilt from marked's tokens (link reference
//! definitions dropped, lone CRs made line ends); from 2.1.330 only a file a comment block is
//! removed from, its definitions kept, and any other is measured as it is. The release is the
//! one asked for, else the installed one, as for an index holding a CR. What each release loads
//! is Mneme's loader's reading, which the version matrix checks against the releases (and
//! 2.1.197, 2.1.316 and 2.1.332 were run on these two indexes, 2026-12-07).

use mneme_api::{ContextRequest, FixedClock, Mneme};
use mneme_core::versions::ClaudeVersion;
use mneme_testsupport::{write_file, TestHome};
use std::fs;
use std::sync::Arc;

/// For each release and way of naming it, whether health calls the index cut and whether the
/// session's MEMORY.md is cut; they must agree.
fn health_and_session(index: &str) -> Vec<(u32, bool, bool, bool)> {
    use std::os::unix::fs::PermissionsExt;
    let mut out = Vec::new();
    for patch in [316, 332] {
        for installed in [false, true] {
            let t = TestHome::new();
            let project = t.root.join("code/app");
            fs::create_dir_all(&project).unwrap();
            write_file(&t.memdir_for(&project).join("MEMORY.md"), index);
            let mut env = t.env.clone();
            if installed {
                let bin = t.root.join("bin");
                write_file(&bin.join("claude"), &format!("#!/bin/sh\necho '2.1.{patch} (Claude Code)'\n"));
                fs::set_permissions(bin.join("claude"), fs::Permissions::from_mode(0o755)).unwrap();
                env = env.set_var("PATH", bin.to_string_lossy().to_string());
            }
            let api = Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
            let req = ContextRequest { cwd: project.clone(), claude_version: (!installed).then(|| ClaudeVersion::new(2, 1, patch)), ..Default::default() };
            let loaded = api.context(&req).unwrap().files.into_iter().find(|c| c.path.ends_with("MEMORY.md")).expect("MEMORY.md loads");
            let h = api.health(&req).unwrap();
            assert_eq!(h.index.truncated, !h.index.past_cap.is_empty(), "2.1.{patch}, installed: {installed}");
            out.push((patch, installed, h.index.truncated, loaded.truncated));
        }
    }
    out
}

/// A removed comment and a link definition that only 2.1.330 and later keep: 24,874 units of
/// entries fit the 25,000 without it, not with it.
#[test]
fn a_link_definition_counts_towards_the_cap_from_2_1_330() {
    let entries: String = (1..=199).map(|i| format!("- [m{i:03}](m{i:03}.md) — {}\n", "x".repeat(104))).collect();
    let index = format!("<!-- c -->\n[ref]: /{}\n{entries}", "t".repeat(124));
    for (patch, installed, health, session) in health_and_session(&index) {
        assert_eq!(health, session, "2.1.{patch}, installed: {installed}");
        assert_eq!(session, patch >= 330, "2.1.{patch}: the premise");
    }
}

/// Lone CRs and `<!--` only in a code span: rebuilt by 2.1.316 (251 lines, cut at 200), as it is
/// by 2.1.332 (lone CRs count as no line: all of it loads).
#[test]
fn an_index_no_comment_is_removed_from_is_measured_as_it_is_from_2_1_330() {
    let entries: String = (1..=250).map(|i| format!("- [e{i}](e{i}.md) — x\r")).collect();
    let index = format!("`<!--` inline\r{entries}");
    for (patch, installed, health, session) in health_and_session(&index) {
        assert_eq!(health, session, "2.1.{patch}, installed: {installed}");
        assert_eq!(session, patch < 330, "2.1.{patch}: the premise");
    }
}
