//! A MEMORY.md whose lines end in a lone CR (a classic Mac line end, or an editor that kept
//! one). Such a CR ends an entry of the index the session loads in every release (sent as LF
//! from 2.1.284, as it is before; never counted as a line towards the cap: row 9 of
//! docs/claude-code-versions.md), so Mneme reads the index's lines the same way: every memory
//! listed there is in the index, and an edit changes its own line only, writing the file back
//! with its own line ends.


mod common;
use mneme_api::{ContextRequest, FixedClock, MemoryEdit, MemoryListFilter, MemoryPageRequest, Mneme, NewMemoryRequest};
use mneme_core::versions::ClaudeVersion;
use mneme_testsupport::TestHome;
use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

const INDEX: &str = "# Memories\r- [Alpha](alpha.md) — first\r- [Beta](beta.md) — second\r- [Gamma](gamma.md) — third\r";

struct Folder {
    _t: TestHome,
    mem: PathBuf,
    api: Mneme,
    req: ContextRequest,
}

/// Three memories and an index of lone-CR lines, as the release that reads them as lines
/// (2.1.284) writes and lists them.
fn folder(index: &str) -> Folder {
    let t = TestHome::new();
    let (project, mem) = common::three_memories(&t, index);
    let api = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
    let req = ContextRequest { cwd: project, claude_version: Some(ClaudeVersion::new(2, 1, 284)), ..Default::default() };
    Folder { _t: t, mem, api, req }
}

fn index_of(f: &Folder) -> String {
    fs::read_to_string(f.mem.join("MEMORY.md")).unwrap()
}

#[test]
fn every_memory_on_a_lone_cr_line_is_in_the_index() {
    let f = folder(INDEX);
    let listed = f.api.memories(&f.req, &MemoryListFilter::default()).unwrap();
    assert_eq!(listed.len(), 3);
    assert!(listed.iter().all(|m| m.indexed), "{listed:#?}");
    let page = f.api.memory_page(&f.req, &MemoryPageRequest { limit: 10, ..Default::default() }).unwrap();
    assert_eq!(page.items.len(), 3);
    assert!(page.items.iter().all(|m| m.indexed), "{:#?}", page.items);
    assert!(f.api.memory(&f.req, "beta").unwrap().summary.indexed);

    let h = f.api.health(&f.req).unwrap();
    assert_eq!((h.unindexed_count, h.index.entry_count), (0, 3), "{h:#?}");
    assert!(h.index.missing_targets.is_empty() && h.index.duplicates.is_empty() && h.index.past_cap.is_empty(), "{h:#?}");
    // Fixing the index finds nothing to add or drop, and leaves the file alone.
    f.api.fix_index(&f.req).unwrap();
    assert_eq!(index_of(&f), INDEX);
}

#[test]
fn a_line_pointing_nowhere_is_found_on_its_own_lone_cr_line() {
    let f = folder(&format!("{INDEX}- [Gone](gone.md) — lost\r"));
    let h = f.api.health(&f.req).unwrap();
    let missing: Vec<(usize, &str)> = h.index.missing_targets.iter().map(|r| (r.line, r.text.as_str())).collect();
    assert_eq!(missing, [(5, "- [Gone](gone.md) — lost")]);
    // The fix drops that line only; the others keep their lone CRs.
    f.api.fix_index(&f.req).unwrap();
    assert_eq!(index_of(&f), INDEX);
}

#[test]
fn adding_deleting_restoring_and_renaming_change_only_the_memory_s_own_line() {
    let f = folder(INDEX);
    let new = NewMemoryRequest {
        name: "Delta".into(),
        description: "fourth".into(),
        kind: "project".into(),
        body: "b".into(),
        file_name: Some("delta.md".into()),
    };
    let created = f.api.create_memory(&f.req, &new).unwrap();
    assert!(created.indexed);
    assert_eq!(index_of(&f), format!("{INDEX}- [Delta](delta.md) — fourth\r"));

    let trashed = f.api.delete_memory(&f.req, "beta").unwrap();
    assert_eq!(index_of(&f), "# Memories\r- [Alpha](alpha.md) — first\r- [Gamma](gamma.md) — third\r- [Delta](delta.md) — fourth\r");
    f.api.restore_memory(&f.req, &trashed.id).unwrap();
    assert_eq!(index_of(&f), format!("{INDEX}- [Delta](delta.md) — fourth\r"));

    let edit = MemoryEdit { memory: "gamma".into(), rename: Some("gamma-ray".into()), ..Default::default() };
    let renamed = f.api.edit_memory(&f.req, &edit).unwrap();
    assert!(renamed.indexed);
    assert_eq!(
        index_of(&f),
        "# Memories\r- [Alpha](alpha.md) — first\r- [Beta](beta.md) — second\r- [Gamma](gamma-ray.md) — third\r- [Delta](delta.md) — fourth\r"
    );
    // A new description follows into the line's hook, and nothing else moves.
    let edit = MemoryEdit { memory: "alpha".into(), description: Some("the first one".into()), ..Default::default() };
    f.api.edit_memory(&f.req, &edit).unwrap();
    assert_eq!(
        index_of(&f),
        "# Memories\r- [Alpha](alpha.md) — the first one\r- [Beta](beta.md) — second\r- [Gamma](gamma-ray.md) — third\r- [Delta](delta.md) — fourth\r"
    );
}

#[test]
fn mixed_line_ends_keep_each_line_s_own_end() {
    // CRLF, a lone CR and LF in one file, and no line end after the last line.
    let index = "# Memories\r\n- [Alpha](alpha.md) — first\r- [Beta](beta.md) — second\n- [Gamma](gamma.md) — third";
    let f = folder(index);
    assert!(f.api.memories(&f.req, &MemoryListFilter::default()).unwrap().iter().all(|m| m.indexed));
    f.api.delete_memory(&f.req, "alpha").unwrap();
    assert_eq!(index_of(&f), "# Memories\r\n- [Beta](beta.md) — second\n- [Gamma](gamma.md) — third");
}
