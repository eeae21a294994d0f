//! The memory listing, the health report and Fix index read MEMORY.md as the Claude Code the
//! user runs reads it (the release asked for with `--claude-version`, else the installed one;
//! row 9 of docs/claude-code-versions.md): a CRLF index is measured with its CRs up to 2.1.283
//! and without them from 2.1.284, and a lone CR ends an entry in every release. What each
//! release reads is the store's reading for that release (`Memdir::for_release`), which its own
//! tests pin. The set-up is lone_cr_index.rs's three memories, with the release left open.


mod common;
use mneme_api::{ContextRequest, FixedClock, MemoryListFilter, MemoryPageRequest, Mneme};
use mneme_core::versions::{behaviours, ClaudeVersion};
use mneme_store::memdir::Memdir;
use mneme_testsupport::{write_file, TestHome};
use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

const LONE_CR: &str = "# Memories\r- [Alpha](alpha.md) — first\r- [Beta](beta.md) — second\r- [Gamma](gamma.md) — third\r";
const CRLF: &str = "# Memories\r\n- [Alpha](alpha.md) — first\r\n- [Beta](beta.md) — second\r\n- [Gamma](gamma.md) — third\r\n";

struct Folder {
    t: TestHome,
    project: PathBuf,
    mem: PathBuf,
}

fn folder(index: &str) -> Folder {
    let t = TestHome::new();
    let (project, mem) = common::three_memories(&t, index);
    Folder { t, project, mem }
}

/// The facade with a Claude Code of `version` installed on PATH (a script answering
/// `--version` as the release does), or with none.
fn api(f: &Folder, installed: Option<&str>) -> Mneme {
    use std::os::unix::fs::PermissionsExt;
    let mut env = f.t.env.clone();
    if let Some(version) = installed {
        let bin = f.t.root.join("bin");
        write_file(&bin.join("claude"), &format!("#!/bin/sh\necho '{version} (Claude Code)'\n"));
        fs::set_permissions(bin.join("claude"), fs::Permissions::from_mode(0o755)).unwrap();
        env = env.set_var("PATH", bin.to_string_lossy().to_string());
    }
    Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_700_000_000)))
}

/// The memories the store, reading the index for `patch`, finds indexed, and its health.
fn store_reading(f: &Folder, patch: u32) -> (Vec<String>, usize, usize) {
    let m = Memdir::new(&f.mem, f.t.root.join("store-trash"), Arc::new(FixedClock::at_unix_secs(1_700_000_000))).for_release(&behaviours(ClaudeVersion::new(2, 1, patch)));
    let targets = m.indexed_targets();
    let indexed = ["alpha.md", "beta.md", "gamma.md"].into_iter().filter(|r| targets.contains(r)).map(String::from).collect();
    let h = m.health();
    (indexed, h.index.entry_count, h.unindexed_count)
}

/// The same reading through the api: the list, a page, one memory, and the health report.
fn api_reading(api: &Mneme, req: &ContextRequest) -> (Vec<String>, usize, usize) {
    let mut listed: Vec<String> = api.memories(req, &MemoryListFilter::default()).unwrap().into_iter().filter(|m| m.indexed).map(|m| m.rel_path).collect();
    listed.sort();
    let mut paged: Vec<String> = api.memory_page(req, &MemoryPageRequest { limit: 10, ..Default::default() }).unwrap().items.into_iter().filter(|m| m.indexed).map(|m| m.rel_path).collect();
    paged.sort();
    assert_eq!(listed, paged, "the list and a page agree");
    assert_eq!(api.memory(req, "beta").unwrap().summary.indexed, listed.contains(&"beta.md".to_string()));
    let h = api.health(req).unwrap();
    (listed, h.index.entry_count, h.unindexed_count)
}

#[test]
fn listing_and_health_read_the_index_as_the_release_asked_for() {
    for index in [LONE_CR, CRLF] {
        let f = folder(index);
        let api = api(&f, None);
        for patch in [283, 284] {
            let req = ContextRequest { cwd: f.project.clone(), claude_version: Some(ClaudeVersion::new(2, 1, patch)), ..Default::default() };
            assert_eq!(api_reading(&api, &req), store_reading(&f, patch), "2.1.{patch}, {index:?}");
        }
    }
    // A lone CR ends an entry in every release (2.1.283 once read the index as one line linking
    // the first memory, and called the others unindexed); the CRLF index is read alike too.
    let f = folder(LONE_CR);
    assert_eq!(store_reading(&f, 283), store_reading(&f, 284));
    assert_eq!(store_reading(&f, 283).0.len(), 3);
    let f = folder(CRLF);
    assert_eq!(store_reading(&f, 283), store_reading(&f, 284));
}

#[test]
fn listing_and_health_read_the_index_as_the_installed_release_does() {
    for index in [LONE_CR, CRLF] {
        for patch in [283, 284] {
            let f = folder(index);
            let api = api(&f, Some(&format!("2.1.{patch}")));
            let req = ContextRequest { cwd: f.project.clone(), ..Default::default() };
            assert_eq!(api_reading(&api, &req), store_reading(&f, patch), "installed 2.1.{patch}, {index:?}");
            // Fix index adds lines for what that reading leaves out, and nothing to an index the
            // release reads whole.
            api.fix_index(&req).unwrap();
            assert_eq!(store_reading(&f, patch).2, 0, "installed 2.1.{patch}, {index:?}: {}", fs::read_to_string(f.mem.join("MEMORY.md")).unwrap());
            if patch == 284 {
                assert_eq!(fs::read_to_string(f.mem.join("MEMORY.md")).unwrap(), index);
            }
        }
    }
}

/// A CRLF index that fits the 25,000 units only without its CRs: health says a line is past
/// the cap exactly when the session's MEMORY.md (Mneme's loader, which the version matrix
/// checks against each release, `truncation` family) is cut, for the release asked for and for
/// the one installed. From 2.1.284 CRLF is read as LF before the file is measured.
#[test]
fn health_measures_a_crlf_index_as_the_session_loads_it() {
    let index: String = (1..=199).map(|i| format!("- [m{i:03}](m{i:03}.md) — {}\r\n", "x".repeat(104))).collect();
    for patch in [283, 284] {
        for installed in [false, true] {
            let f = folder(&index);
            let version = format!("2.1.{patch}");
            let api = api(&f, installed.then_some(version.as_str()));
            let req = ContextRequest { cwd: f.project.clone(), claude_version: (!installed).then(|| ClaudeVersion::new(2, 1, patch)), ..Default::default() };
            let loaded = api.context(&req).unwrap().files.into_iter().find(|c| c.path.ends_with("MEMORY.md")).expect("MEMORY.md loads");
            let h = api.health(&req).unwrap();
            let case = format!("{version}, installed: {installed}");
            assert_eq!(h.index.truncated, loaded.truncated, "{case}");
            assert_eq!(!h.index.past_cap.is_empty(), loaded.truncated, "{case}");
            assert_eq!(loaded.truncated, patch == 283, "{case}: the premise");
        }
    }
}
