//! A memory folder with more memories than its index can list: the index fix adds only the
//! lines Claude Code will read and says what it left out; opening one memory reads that file.

use mneme_api::{ContextRequest, FixedClock, Mneme};
use mneme_core::text::{truncate_entrypoint, MAX_ENTRYPOINT_LINES};
use mneme_testsupport::{write_file, TestHome};
use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

struct Folder {
    _t: TestHome,
    mem: PathBuf,
    api: Mneme,
    req: ContextRequest,
}

fn folder() -> Folder {
    let t = TestHome::new();
    let project = t.root.join("code/app");
    fs::create_dir_all(&project).unwrap();
    let mem = t.memdir_for(&project);
    let api = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
    Folder { _t: t, mem, api, req: ContextRequest { cwd: project, ..Default::default() } }
}

fn memory(i: usize) -> String {
    format!("---\nname: m{i}\ndescription: hook {i}\ntype: project\n---\nbody {i}\n")
}

#[test]
fn fix_index_adds_only_what_claude_code_reads_and_says_what_it_left_out() {
    let f = folder();
    let index: String = (1..=195).map(|i| format!("- [m{i}](m{i:04}.md) — hook {i}\n")).collect();
    write_file(&f.mem.join("MEMORY.md"), &index);
    for i in 1..=400 {
        write_file(&f.mem.join(format!("m{i:04}.md")), &memory(i));
    }
    let done = f.api.fix_index(&f.req).unwrap();
    let added: Vec<&String> = done.iter().filter(|l| l.starts_with("added to MEMORY.md: ")).collect();
    assert_eq!(added.len(), 5, "{done:#?}");
    let left: Vec<&String> = done.iter().filter(|l| l.starts_with("left ")).collect();
    assert_eq!(left.len(), 1, "{done:#?}");
    assert!(left[0].starts_with("left 200 memories out of MEMORY.md (m0201.md, m0202.md, m0203.md, m0204.md, m0205.md and 195 more): "), "{}", left[0]);
    assert!(left[0].contains("Merge or delete memories, or write a shorter index"), "{}", left[0]);

    // Every line of the index is one Claude Code loads.
    let text = fs::read_to_string(f.mem.join("MEMORY.md")).unwrap();
    assert_eq!(text.lines().count(), MAX_ENTRYPOINT_LINES);
    assert!(!truncate_entrypoint(text.trim()).was_truncated());
    let h = f.api.health(&f.req).unwrap();
    assert!(!h.index.truncated && h.index.past_cap.is_empty());
    assert_eq!(h.unindexed.len(), 200);
}
