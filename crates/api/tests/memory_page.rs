//! The Memories screen's list is paged, filtered and sorted by the engine: a page is a slice of
//! the same list `memories` answers (newest first, then by path), filters narrow it before it
//! is sliced, and `find` says where a memory sits so the screen can scroll to it.

use mneme_api::{ContextRequest, ErrorCode, FixedClock, MemoryListFilter, MemoryPageRequest, Mneme};
use mneme_testsupport::{write_file, TestHome};
use std::fs;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

const NOW: u64 = 1_700_000_000;

fn fixture() -> (TestHome, Mneme, ContextRequest) {
    let t = TestHome::new();
    let project = t.root.join("code/app");
    fs::create_dir_all(&project).unwrap();
    let mem = t.memdir_for(&project);
    let types = ["user", "feedback", "project", "reference", ""];
    for i in 0..25 {
        let ty = types[i % 5];
        let meta = if ty.is_empty() { String::new() } else { format!("metadata:\n  type: {ty}\n") };
        let rel = if i % 6 == 5 { format!("team/m{i:02}.md") } else { format!("m{i:02}.md") };
        let file = mem.join(&rel);
        write_file(&file, &format!("---\nname: m{i:02}\ndescription: note {i}\n{meta}---\n\nbody {}\n", if i == 7 { "needle" } else { "hay" }));
        // m00 is the newest, one day older per number.
        let when = SystemTime::UNIX_EPOCH + Duration::from_secs(NOW - i as u64 * 86_400);
        fs::File::options().write(true).open(&file).unwrap().set_modified(when).unwrap();
    }
    let m = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(NOW)));
    (t, m, ContextRequest { cwd: project, ..Default::default() })
}

fn names(p: &mneme_api::MemoryPage) -> Vec<String> {
    p.items.iter().map(|m| m.name.clone()).collect()
}

#[test]
fn pages_are_slices_of_the_whole_list_newest_first() {
    let (_t, m, req) = fixture();
    let whole = m.memories(&req, &MemoryListFilter::default()).unwrap();
    let mut paged = Vec::new();
    let mut offset = 0;
    loop {
        let p = m.memory_page(&req, &MemoryPageRequest { offset, limit: 10, ..Default::default() }).unwrap();
        assert_eq!((p.total, p.all), (25, 25));
        if p.items.is_empty() {
            break;
        }
        offset += p.items.len();
        paged.extend(p.items);
    }
    let a: Vec<&str> = whole.iter().map(|m| m.rel_path.as_str()).collect();
    let b: Vec<&str> = paged.iter().map(|m| m.rel_path.as_str()).collect();
    assert_eq!(a, b);
    assert_eq!(paged[0].name, "m00", "newest first");
}

#[test]
fn filters_narrow_the_list_before_it_is_paged() {
    let (_t, m, req) = fixture();
    let page = |q: MemoryPageRequest| m.memory_page(&req, &MemoryPageRequest { limit: 100, ..q }).unwrap();
    let p = page(MemoryPageRequest { kind: Some("feedback".into()), ..Default::default() });
    assert_eq!(names(&p), ["m01", "m06", "m11", "m16", "m21"]);
    assert_eq!((p.total, p.all), (5, 25));
    let p = page(MemoryPageRequest { kind: Some("none".into()), ..Default::default() });
    assert_eq!(names(&p), ["m04", "m09", "m14", "m19", "m24"]);
    let p = page(MemoryPageRequest { scope: Some("team".into()), ..Default::default() });
    assert_eq!(names(&p), ["m05", "m11", "m17", "m23"]);
    let p = page(MemoryPageRequest { age: Some("7".into()), ..Default::default() });
    assert_eq!(p.total, 8, "days 0 to 7");
    let p = page(MemoryPageRequest { age: Some("old".into()), ..Default::default() });
    assert_eq!(p.total, 0, "the oldest is 24 days old");
    let p = page(MemoryPageRequest { search: Some("NEEDLE".into()), ..Default::default() });
    assert_eq!((names(&p), p.total, p.all), (vec!["m07".to_string()], 1, 25));
}

#[test]
fn find_reports_where_a_memory_sits_and_bad_filters_say_what_to_use() {
    let (_t, m, req) = fixture();
    let p = m
        .memory_page(&req, &MemoryPageRequest { kind: Some("project".into()), offset: 0, limit: 1, find: Some("m12.md".into()), ..Default::default() })
        .unwrap();
    assert_eq!(p.found, Some(2), "m02, m07, m12: third");
    assert_eq!(p.items.len(), 1);
    let p = m.memory_page(&req, &MemoryPageRequest { limit: 1, find: Some("nope.md".into()), ..Default::default() }).unwrap();
    assert_eq!(p.found, None);
    let e = m.memory_page(&req, &MemoryPageRequest { scope: Some("public".into()), limit: 1, ..Default::default() }).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput);
    assert!(e.message.contains("private or team"), "{}", e.message);
    let e = m.memory_page(&req, &MemoryPageRequest { limit: 100_000, ..Default::default() }).unwrap_err();
    assert!(e.message.contains("at most 500"), "{}", e.message);
}

/// A memory the release's memory scan leaves out says so in its detail, with the reason.
#[test]
fn a_memory_recall_never_offers_says_why() {
    use mneme_core::versions::ClaudeVersion;
    let (t, m, req) = fixture();
    let mem = t.memdir_for(&req.cwd);
    write_file(&mem.join("logs/2026-01-02.md"), "---\ndescription: a day's log\n---\n");
    write_file(&mem.join("team/mobile/shared.md"), "---\ndescription: another team's store\n---\n");
    let at = |v: ClaudeVersion| ContextRequest { claude_version: Some(v), ..req.clone() };
    let newest = at(ClaudeVersion::new(2, 1, 332));
    assert_eq!(m.memory(&newest, "m01").unwrap().recall_note, None);
    assert_eq!(
        m.memory(&newest, "logs/2026-01-02.md").unwrap().recall_note.as_deref(),
        Some("Claude Code 2.1.332 never offers this memory in recall: it lies in logs/, a folder its memory scan leaves out.")
    );
    let team = m.memory(&newest, "team/mobile/shared.md").unwrap().recall_note.unwrap();
    assert!(team.contains("a folder inside team/"), "{team}");
    // 2.1.212 lists both.
    let old = at(ClaudeVersion::new(2, 1, 212));
    assert_eq!(m.memory(&old, "logs/2026-01-02.md").unwrap().recall_note, None);
    assert_eq!(m.memory(&old, "team/mobile/shared.md").unwrap().recall_note, None);
    // Past the newest 200, a memory is never offered either.
    for i in 0..200 {
        let file = mem.join(format!("n{i:03}.md"));
        write_file(&file, "---\ndescription: newer\n---\n");
        let when = SystemTime::UNIX_EPOCH + Duration::from_secs(NOW + 1000 + i);
        fs::File::options().write(true).open(&file).unwrap().set_modified(when).unwrap();
    }
    let note = m.memory(&newest, "m01").unwrap().recall_note.unwrap();
    assert!(note.contains("only the newest 200 memories are offered"), "{note}");
}

#[test]
fn an_edit_whose_rename_cannot_happen_saves_nothing() {
    let (t, m, req) = fixture();
    let mem = t.memdir_for(&req.cwd);
    let before = fs::read_to_string(mem.join("m01.md")).unwrap();
    for (rename, code) in [("m02", ErrorCode::AlreadyExists), ("../escape", ErrorCode::InvalidInput), ("m01", ErrorCode::InvalidInput)] {
        let edit = mneme_api::MemoryEdit {
            memory: "m01.md".into(),
            description: Some("changed".into()),
            rename: Some(rename.into()),
            ..Default::default()
        };
        let e = m.edit_memory(&req, &edit).unwrap_err();
        assert_eq!(e.code, code, "{rename}: {}", e.message);
        assert_eq!(fs::read_to_string(mem.join("m01.md")).unwrap(), before, "{rename}: the description was not saved");
    }
    // The same edit with a free name does both.
    let edit = mneme_api::MemoryEdit { memory: "m01.md".into(), description: Some("changed".into()), rename: Some("renamed".into()), ..Default::default() };
    let done = m.edit_memory(&req, &edit).unwrap();
    assert_eq!((done.description.as_deref(), done.rel_path.as_str()), (Some("changed"), "renamed.md"));
    assert!(fs::read_to_string(mem.join("renamed.md")).unwrap().contains("description: changed"));
    assert!(!mem.join("m01.md").exists());
}

/// A memory whose frontmatter YAML does not parse says so in the list, with the parser's
/// reason and line, so the list can flag it without the health report; readable ones say nothing.
#[test]
fn a_summary_says_when_its_frontmatter_cannot_be_read() {
    let (t, m, req) = fixture();
    let mem = t.memdir_for(&req.cwd);
    write_file(&mem.join("broken.md"), "---\nname: broken\ndescription: \"unclosed\ntype: project\n---\n\nbody\n");
    let all = m.memories(&req, &MemoryListFilter::default()).unwrap();
    let broken = all.iter().find(|s| s.rel_path == "broken.md").expect("listed");
    let why = broken.frontmatter_problem.as_deref().expect("the problem is flagged");
    assert!(why.starts_with("line "), "{why}");
    assert!(broken.description.is_none(), "Claude Code reads it as having no description");
    assert!(all.iter().filter(|s| s.rel_path != "broken.md").all(|s| s.frontmatter_problem.is_none()));
    let page = m.memory_page(&req, &MemoryPageRequest { limit: 50, ..Default::default() }).unwrap();
    let listed = page.items.iter().find(|s| s.rel_path == "broken.md").unwrap();
    assert_eq!(listed.frontmatter_problem.as_deref(), Some(why));
    let json = serde_json::to_value(listed).unwrap();
    assert_eq!(json["frontmatterProblem"], why);
}
