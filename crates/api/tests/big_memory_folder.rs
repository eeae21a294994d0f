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
    many_memories(&f, 400);
    let done = f.api.fix_index(&f.req).unwrap();
    let added: Vec<&String> = done.iter().filter(|l| l.starts_with("added to MEMORY.md: ")).collect();
    // The room goes to the memories written last, newest first.
    assert_eq!(added, (396..=400).rev().map(|i| format!("added to MEMORY.md: - [m{i}](m{i:04}.md) — hook {i}")).collect::<Vec<_>>().iter().collect::<Vec<_>>(), "{done:#?}");
    let left: Vec<&String> = done.iter().filter(|l| l.starts_with("left ")).collect();
    assert_eq!(left.len(), 1, "{done:#?}");
    assert!(left[0].starts_with("left 200 memories out of MEMORY.md (m0395.md, m0394.md, m0393.md, m0392.md, m0391.md and 195 more): "), "{}", left[0]);
    assert!(left[0].contains("Merge or delete memories, or write a shorter index"), "{}", left[0]);

    // Every line of the index is one Claude Code loads.
    let text = fs::read_to_string(f.mem.join("MEMORY.md")).unwrap();
    assert_eq!(text.lines().count(), MAX_ENTRYPOINT_LINES);
    assert!(!truncate_entrypoint(text.trim()).was_truncated());
    let h = f.api.health(&f.req).unwrap();
    assert!(!h.index.truncated && h.index.past_cap.is_empty());
    // The report counts every memory left without a line and names the newest fifty.
    assert_eq!(h.unindexed_count, 200);
    assert_eq!(h.unindexed, (346..=395).rev().map(|i| format!("m{i:04}.md")).collect::<Vec<_>>());
}

/// `m0001.md` … `m{n}.md`, each a second newer than the one before.
fn many_memories(f: &Folder, n: usize) {
    for i in 1..=n {
        let p = f.mem.join(format!("m{i:04}.md"));
        write_file(&p, &memory(i));
        mneme_testsupport::set_mtime(&p, 1_600_000_000 + i as i64);
    }
}

/// A `<!--` left open hides nothing from Claude Code until a later line closes it; a line
/// the fix would add that holds `-->` would, hiding the lines between, so the fix refuses.
#[test]
fn fix_index_refuses_to_close_a_comment_left_open() {
    let f = folder();
    let index = "- [m1](m0001.md) — hook 1\n<!-- notes for later\n- [m2](m0002.md) — hook 2\n";
    write_file(&f.mem.join("MEMORY.md"), index);
    many_memories(&f, 2);
    write_file(&f.mem.join("m0003.md"), "---\nname: m3\ndescription: build --> deploy\ntype: project\n---\nbody\n");
    let e = f.api.fix_index(&f.req).unwrap_err();
    assert_eq!(e.code, mneme_api::ErrorCode::InvalidInput, "{e:?}");
    assert!(e.message.starts_with("MEMORY.md line 2 opens an HTML comment (<!--) that is never closed, and the line Fix index would add for m0003.md holds -->"), "{}", e.message);
    assert!(e.message.contains("Close the comment with -->"), "{}", e.message);
    assert_eq!(fs::read_to_string(f.mem.join("MEMORY.md")).unwrap(), index, "nothing is written");
    // Closed, the fix adds the line where Claude Code reads it.
    write_file(&f.mem.join("MEMORY.md"), &index.replace("later\n", "later -->\n"));
    f.api.fix_index(&f.req).unwrap();
    let text = fs::read_to_string(f.mem.join("MEMORY.md")).unwrap();
    assert!(text.ends_with("- [m2](m0002.md) — hook 2\n- [m3](m0003.md) — build --> deploy\n"), "{text}");
}

/// The names of the files in `dir` that `f` opens, in order, as the kernel saw the opens.
#[cfg(target_os = "linux")]
fn opened_in(dir: &std::path::Path, f: impl FnOnce()) -> Vec<String> {
    use rustix::fs::inotify;
    use std::mem::MaybeUninit;
    let fd = inotify::init(inotify::CreateFlags::CLOEXEC).unwrap();
    inotify::add_watch(&fd, dir, inotify::WatchFlags::OPEN).unwrap();
    f();
    // Opened last: once its event is read, every open `f` made has been read before it, so
    // no waiting is involved.
    let sentinel = "zz-sentinel.txt";
    fs::File::open(dir.join(sentinel)).unwrap();
    let mut buf = [MaybeUninit::<u8>::uninit(); 8192];
    let mut reader = inotify::Reader::new(&fd, &mut buf);
    let mut names = Vec::new();
    loop {
        let e = reader.next().unwrap();
        let Some(name) = e.file_name() else { continue };
        let name = name.to_string_lossy().into_owned();
        if name == sentinel {
            return names;
        }
        names.push(name);
    }
}

#[cfg(target_os = "linux")]
#[test]
fn opening_a_memory_by_its_file_reads_that_file_alone() {
    let f = folder();
    for i in 1..=3 {
        write_file(&f.mem.join(format!("m{i:04}.md")), &memory(i));
    }
    write_file(&f.mem.join("zz-sentinel.txt"), "");
    let edit = |key: &str| mneme_api::MemoryEdit { memory: key.into(), ..Default::default() };
    for key in ["m0002", "m0002.md"] {
        let mut got = None;
        let opened = opened_in(&f.mem, || got = Some(f.api.edit_memory(&f.req, &edit(key)).unwrap()));
        assert_eq!(got.unwrap().rel_path, "m0002.md");
        assert!(opened.contains(&"m0002.md".to_string()), "{opened:?}");
        assert!(!opened.iter().any(|n| n == "m0001.md" || n == "m0003.md"), "{key}: opened {opened:?}");
    }
    // A `name:` is no path: the folder is read to find it, as before.
    let opened = opened_in(&f.mem, || assert_eq!(f.api.edit_memory(&f.req, &edit("m3")).unwrap().rel_path, "m0003.md"));
    assert!(opened.contains(&"m0001.md".to_string()), "{opened:?}");
}

#[test]
fn paths_the_scan_would_not_list_are_still_not_memories() {
    let f = folder();
    write_file(&f.mem.join("MEMORY.md"), "- [m1](m0001.md)\n");
    write_file(&f.mem.join("m0001.md"), &memory(1));
    write_file(&f.mem.join("sub/deep.md"), &memory(2));
    // The index is not a memory, and the scan does not walk into a linked folder.
    let code = |key: &str| f.api.memory(&f.req, key).map(|d| d.summary.rel_path).map_err(|e| e.code);
    assert_eq!(code("MEMORY"), Err(mneme_api::ErrorCode::NotFound));
    #[cfg(unix)]
    {
        std::os::unix::fs::symlink(f.mem.join("sub"), f.mem.join("alias")).unwrap();
        assert_eq!(code("alias/deep"), Err(mneme_api::ErrorCode::NotFound));
    }
    assert_eq!(code("sub/deep"), Ok("sub/deep.md".to_string()));
    assert_eq!(code("m0001"), Ok("m0001.md".to_string()));
    // `x.md` and `x.md.md` both there: two files by path, so the scan decides, as it always
    // has (by file stem, the second).
    write_file(&f.mem.join("m0001.md.md"), &memory(3));
    assert_eq!(code("m0001.md"), Ok("m0001.md.md".to_string()));
}

/// The `*.md` files among `names`, each once.
#[cfg(target_os = "linux")]
fn memories_among(names: &[String]) -> std::collections::BTreeSet<String> {
    names.iter().filter(|n| n.ends_with(".md") && *n != "MEMORY.md").cloned().collect()
}

#[cfg(target_os = "linux")]
#[test]
fn opening_a_memory_reads_only_the_heads_recall_could_offer() {
    let f = folder();
    many_memories(&f, 400);
    write_file(&f.mem.join("zz-sentinel.txt"), "");
    // An old memory: recall's manifest holds only the newest 200.
    let mut got = None;
    let opened = opened_in(&f.mem, || got = Some(f.api.memory(&f.req, "m0001").unwrap()));
    let note = got.unwrap().recall_note.expect("an old memory is never offered");
    assert!(note.contains("only the newest 200 memories are offered"), "{note}");
    let read = memories_among(&opened);
    let expected: std::collections::BTreeSet<String> =
        (201..=400).chain([1]).map(|i| format!("m{i:04}.md")).collect();
    assert_eq!(read, expected, "the memory and the heads of the newest 200, nothing else");
    // One of the newest is offered.
    let mut got = None;
    let opened = opened_in(&f.mem, || got = Some(f.api.memory(&f.req, "m0400").unwrap()));
    assert_eq!(got.unwrap().recall_note, None);
    assert_eq!(memories_among(&opened).len(), 200);
}

fn page(f: &Folder, offset: usize, search: Option<&str>) -> mneme_api::MemoryPage {
    let q = mneme_api::MemoryPageRequest { offset, limit: 100, search: search.map(str::to_string), ..Default::default() };
    f.api.memory_page(&f.req, &q).unwrap()
}

fn rows(p: &mneme_api::MemoryPage) -> Vec<(String, Option<String>)> {
    p.items.iter().map(|m| (m.rel_path.clone(), m.description.clone())).collect()
}

#[cfg(target_os = "linux")]
#[test]
fn pages_reuse_rows_of_files_that_did_not_change_and_never_show_stale_ones() {
    let t = TestHome::new();
    let project = t.root.join("code/app");
    fs::create_dir_all(&project).unwrap();
    let mem = t.memdir_for(&project);
    // A clock long after the files were written: their rows may be kept.
    let api = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(4_000_000_000)));
    let f = Folder { _t: t, mem, api, req: ContextRequest { cwd: project, ..Default::default() } };
    many_memories(&f, 300);
    write_file(&f.mem.join("zz-sentinel.txt"), "");

    let first = page(&f, 0, None);
    assert_eq!((first.total, first.all), (300, 300));
    assert_eq!(first.items[0].rel_path, "m0300.md");
    // The next page reads its own rows, once.
    let opened = opened_in(&f.mem, || assert_eq!(page(&f, 100, None).total, 300));
    assert_eq!(memories_among(&opened), (101..=200).map(|i| format!("m{i:04}.md")).collect());
    let mut second = None;
    let opened = opened_in(&f.mem, || second = Some(page(&f, 100, None)));
    let second = second.unwrap();
    assert!(memories_among(&opened).is_empty(), "a page shown before reads no memory again: {:?}", memories_among(&opened));
    assert_eq!(rows(&second), (101..=200).rev().map(|i| (format!("m{i:04}.md"), Some(format!("hook {i}")))).collect::<Vec<_>>());

    // An edit that keeps the size and puts the time back is still seen (its change time moved),
    // and only it is read again.
    let p = f.mem.join("m0150.md");
    write_file(&p, &memory(150).replace("hook 150", "HOOK 150"));
    mneme_testsupport::set_mtime(&p, 1_600_000_150);
    let mut again = None;
    let opened = opened_in(&f.mem, || again = Some(page(&f, 100, None)));
    let again = again.unwrap();
    assert_eq!(memories_among(&opened), ["m0150.md".to_string()].into_iter().collect());
    assert_eq!(rows(&again)[50], ("m0150.md".to_string(), Some("HOOK 150".to_string())));

    // Added, removed and renamed files show at once.
    fs::remove_file(f.mem.join("m0300.md")).unwrap();
    fs::rename(f.mem.join("m0299.md"), f.mem.join("renamed.md")).unwrap();
    write_file(&f.mem.join("m0301.md"), &memory(301));
    mneme_testsupport::set_mtime(&f.mem.join("m0301.md"), 1_600_000_301);
    let now = page(&f, 0, None);
    assert_eq!((now.total, now.all), (300, 300));
    assert_eq!(rows(&now)[..2], [("m0301.md".into(), Some("hook 301".into())), ("renamed.md".into(), Some("hook 299".into()))]);
    assert!(now.items.iter().all(|m| m.rel_path != "m0300.md" && m.rel_path != "m0299.md"));
    // A search still reads what it must, and counts the folder without a second walk.
    let found = page(&f, 0, Some("HOOK 150"));
    assert_eq!((found.total, found.all), (1, 300));
    assert_eq!(found.items[0].rel_path, "m0150.md");
}

#[cfg(target_os = "linux")]
#[test]
fn rows_of_files_changed_just_now_are_read_again() {
    // The clock says the files were written this very moment (a second write within the same
    // tick of the file system's clock could leave every time as it was): nothing is kept.
    let f = folder();
    many_memories(&f, 20);
    let newest = f.mem.join("m0020.md");
    let secs = std::os::unix::fs::MetadataExt::ctime(&fs::metadata(&newest).unwrap()) as u64;
    let t = &f._t;
    let api = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(secs)));
    write_file(&f.mem.join("zz-sentinel.txt"), "");
    let q = mneme_api::MemoryPageRequest { limit: 100, ..Default::default() };
    api.memory_page(&f.req, &q).unwrap();
    let opened = opened_in(&f.mem, || {
        api.memory_page(&f.req, &q).unwrap();
    });
    assert_eq!(memories_among(&opened).len(), 20, "{opened:?}");
}

/// A facade whose clock is long after the files were written, so their rows may be kept.
fn late_api(t: &TestHome) -> Mneme {
    Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(4_000_000_000)))
}

/// A project of its own under the test home, with `n` memories.
fn other_project(t: &TestHome, name: &str, n: usize) -> ContextRequest {
    let project = t.root.join("code").join(name);
    fs::create_dir_all(&project).unwrap();
    let mem = t.memdir_for(&project);
    for i in 1..=n {
        write_file(&mem.join(format!("m{i:04}.md")), &memory(i));
    }
    ContextRequest { cwd: project, ..Default::default() }
}

/// Kept rows belong to the facade that read them: another one (a second window, another test
/// in the same process) paging other folders evicts none of them, and does not see them.
#[cfg(target_os = "linux")]
#[test]
fn kept_rows_belong_to_their_facade() {
    let mut f = folder();
    f.api = late_api(&f._t);
    many_memories(&f, 300);
    write_file(&f.mem.join("zz-sentinel.txt"), "");
    page(&f, 0, None);

    let other = late_api(&f._t);
    for i in 0..5 {
        let req = other_project(&f._t, &format!("other{i}"), 2);
        other.memory_page(&req, &mneme_api::MemoryPageRequest { limit: 10, ..Default::default() }).unwrap();
    }
    let opened = opened_in(&f.mem, || assert_eq!(page(&f, 0, None).total, 300));
    assert!(memories_among(&opened).is_empty(), "another facade's folders evicted these rows: {:?}", memories_among(&opened).len());

    // The other facade has kept nothing of this folder: its first page reads that page.
    let q = mneme_api::MemoryPageRequest { limit: 100, ..Default::default() };
    let opened = opened_in(&f.mem, || assert_eq!(other.memory_page(&f.req, &q).unwrap().total, 300));
    assert_eq!(memories_among(&opened), (201..=300).map(|i| format!("m{i:04}.md")).collect());
    // A clone is the same facade, with the same rows.
    let clone = f.api.clone();
    let opened = opened_in(&f.mem, || assert_eq!(clone.memory_page(&f.req, &q).unwrap().total, 300));
    assert!(memories_among(&opened).is_empty(), "{:?}", memories_among(&opened));
}

/// `m0001.md` … `m{n}.md` as [`many_memories`], each linking to the one before (`[[m0]]`,
/// from the first, names no memory).
fn linked_memories(f: &Folder, n: usize) {
    for i in 1..=n {
        let p = f.mem.join(format!("m{i:04}.md"));
        write_file(&p, &format!("---\nname: m{i}\ndescription: hook {i}\ntype: project\n---\nsee [[m{}]]\n", i - 1));
        mneme_testsupport::set_mtime(&p, 1_600_000_000 + i as i64);
    }
}

/// The health report checks every memory's `[[links]]`, yet a second report on an unchanged
/// folder reads no memory, and one changed file costs one read; each report is the one a
/// facade that never read the folder makes.
#[cfg(target_os = "linux")]
#[test]
fn health_reads_only_the_files_that_changed_and_matches_a_fresh_read() {
    let mut f = folder();
    f.api = late_api(&f._t);
    write_file(&f.mem.join("MEMORY.md"), "- [m1](m0001.md) — hook 1\n- [gone](gone.md) — removed\n");
    linked_memories(&f, 300);
    // A file whose read reports a problem is read each time: its problem is in every report.
    write_file(&f.mem.join("bad.md"), "---\ndescription: [unclosed\n  - : :\n---\nsee [[m7]] and [[nowhere]]\n");
    mneme_testsupport::set_mtime(&f.mem.join("bad.md"), 1_500_000_000);
    write_file(&f.mem.join("zz-sentinel.txt"), "");
    let fresh = || late_api(&f._t).health(&f.req).unwrap();

    let first = f.api.health(&f.req).unwrap();
    assert_eq!(first, fresh());
    assert_eq!(first.topic_count, 301);
    assert_eq!(first.dangling_links.iter().map(|d| (d.from.as_str(), d.link.as_str())).collect::<Vec<_>>(), [("bad.md", "nowhere"), ("m0001.md", "m0")]);
    assert_eq!(first.problems.len(), 1, "{:?}", first.problems);
    let mut second = None;
    let opened = opened_in(&f.mem, || second = Some(f.api.health(&f.req).unwrap()));
    assert_eq!(memories_among(&opened), ["bad.md".to_string()].into_iter().collect(), "only the file with a problem is read again");
    assert_eq!(second.unwrap(), first);

    // One link changed to a name no memory has, with the size and time put back.
    let p = f.mem.join("m0150.md");
    let text = fs::read_to_string(&p).unwrap().replace("[[m149]]", "[[m999]]");
    write_file(&p, &text);
    mneme_testsupport::set_mtime(&p, 1_600_000_150);
    let mut third = None;
    let opened = opened_in(&f.mem, || third = Some(f.api.health(&f.req).unwrap()));
    assert_eq!(memories_among(&opened), ["bad.md".to_string(), "m0150.md".to_string()].into_iter().collect());
    let third = third.unwrap();
    assert!(third.dangling_links.iter().any(|d| d.from == "m0150.md" && d.link == "m999"), "{:?}", third.dangling_links);
    assert_eq!(third, fresh());
    // A memory gone: its links and its name go with it.
    fs::remove_file(f.mem.join("m0007.md")).unwrap();
    let fourth = f.api.health(&f.req).unwrap();
    assert_eq!(fourth, fresh());
    assert!(fourth.dangling_links.iter().any(|d| d.from == "m0008.md" && d.link == "m7"), "{:?}", fourth.dangling_links);

    // The memory list's pages use the same rows: nothing is read for them either.
    let opened = opened_in(&f.mem, || assert_eq!(page(&f, 0, None).total, 300));
    assert!(memories_among(&opened).is_empty(), "{:?}", memories_among(&opened));
}

/// The list's order and its age and scope filters come from each file's `stat`, so the first
/// page of a big folder reads the files on it and no other; its rows, counts and positions
/// are those of a read of the whole folder.
#[cfg(target_os = "linux")]
#[test]
fn the_first_page_reads_only_its_own_rows() {
    let mut f = folder();
    f.api = late_api(&f._t);
    write_file(&f.mem.join("MEMORY.md"), "- [m300](m0300.md) — hook 300\n");
    many_memories(&f, 300);
    // Two memories within one millisecond, the one first by path the older: by path, as the
    // scan's millisecond times tie.
    for (rel, nanos) in [("tie-a.md", 500_400_000), ("tie-b.md", 500_900_000)] {
        let p = f.mem.join(rel);
        write_file(&p, &memory(0));
        let at = rustix::fs::Timespec { tv_sec: 1_600_000_250, tv_nsec: nanos };
        let times = rustix::fs::Timestamps { last_access: at, last_modification: at };
        rustix::fs::utimensat(rustix::fs::CWD, &p, &times, rustix::fs::AtFlags::empty()).unwrap();
    }
    write_file(&f.mem.join("team/t0001.md"), &memory(1));
    mneme_testsupport::set_mtime(&f.mem.join("team/t0001.md"), 1_600_000_120);
    write_file(&f.mem.join("zz-sentinel.txt"), "");
    let as_json = |items: &[mneme_api::MemorySummary]| serde_json::to_value(items).unwrap();
    let whole = late_api(&f._t).memories(&f.req, &Default::default()).unwrap();

    let q = |offset: usize, find: Option<&str>| mneme_api::MemoryPageRequest { offset, limit: 100, find: find.map(str::to_string), ..Default::default() };
    let mut got = None;
    let opened = opened_in(&f.mem, || got = Some(f.api.memory_page(&f.req, &q(0, Some("tie-a.md"))).unwrap()));
    let first = got.unwrap();
    assert_eq!(memories_among(&opened), whole[..100].iter().map(|m| m.rel_path.rsplit('/').next().unwrap().to_string()).collect());
    assert_eq!(memories_among(&opened).len(), 100, "the page's rows and no other: {opened:?}");
    assert_eq!((first.total, first.all, first.found), (303, 303, Some(50)));
    assert_eq!(as_json(&first.items), as_json(&whole[..100]));
    assert_eq!(first.items[50..52].iter().map(|m| m.rel_path.as_str()).collect::<Vec<_>>(), ["tie-a.md", "tie-b.md"]);
    assert!(first.items[0].indexed && !first.items[1].indexed);

    let mut got = None;
    let opened = opened_in(&f.mem, || got = Some(f.api.memory_page(&f.req, &q(200, None)).unwrap()));
    assert_eq!(memories_among(&opened).len(), 100);
    assert_eq!(as_json(&got.unwrap().items), as_json(&whole[200..300]));
    // The scope and age filters, from the listing too.
    let team = mneme_api::MemoryPageRequest { scope: Some("team".into()), limit: 10, ..Default::default() };
    let opened = opened_in(&f.mem, || {
        let p = f.api.memory_page(&f.req, &team).unwrap();
        assert_eq!((p.total, p.all, p.items[0].rel_path.as_str()), (1, 303, "team/t0001.md"));
    });
    assert!(memories_among(&opened).is_empty(), "{opened:?}");
    let recent = mneme_api::MemoryPageRequest { age: Some("7".into()), limit: 10, ..Default::default() };
    assert_eq!(f.api.memory_page(&f.req, &recent).unwrap().total, 0);

    // A symbolic link is read every time (its target may change, or lie outside): the page is
    // then made by reading the folder, with the same answers.
    #[cfg(unix)]
    std::os::unix::fs::symlink(f.mem.join("m0001.md"), f.mem.join("link.md")).unwrap();
    let whole = late_api(&f._t).memories(&f.req, &Default::default()).unwrap();
    let p = f.api.memory_page(&f.req, &q(0, None)).unwrap();
    assert_eq!((p.total, p.all), (304, 304));
    assert_eq!(as_json(&p.items), as_json(&whole[..100]));
}

/// A memory past the size the scan reads whole (10 MiB: its head only, no links) is shown as
/// the scan shows it, though the rest of its page is read alone.
#[test]
fn a_page_shows_a_huge_memory_as_the_scan_does() {
    let mut f = folder();
    f.api = late_api(&f._t);
    many_memories(&f, 3);
    let huge = f.mem.join("huge.md");
    write_file(&huge, &format!("---\nname: huge\ndescription: big\n---\n{}\n[[m1]]\n", "x".repeat(11 << 20)));
    mneme_testsupport::set_mtime(&huge, 1_600_000_100);
    let whole = late_api(&f._t).memories(&f.req, &Default::default()).unwrap();
    let p = f.api.memory_page(&f.req, &mneme_api::MemoryPageRequest { limit: 10, ..Default::default() }).unwrap();
    assert_eq!(p.items[0].rel_path, "huge.md");
    assert!(p.items[0].links.is_empty(), "{:?}", p.items[0].links);
    assert_eq!(serde_json::to_value(&p.items).unwrap(), serde_json::to_value(&whole).unwrap());
}

/// Set in the child that [`a_memory_that_cannot_be_opened_is_counted_alike_on_every_page`]
/// starts as `nobody`.
const UNREADABLE_CHILD: &str = "MNEME_TEST_UNREADABLE_CHILD";

/// A memory file `stat` reaches but that cannot be opened (mode 000) is no row of the list, as
/// the whole scan has it: every page counts the folder alike, whether or not that file falls
/// on it, the health report counts the same memories and names the file it could not read,
/// and the page holding it is still built from its own rows. Root reads any file whatever its
/// mode, so as root the test runs itself again as `nobody`.
#[cfg(target_os = "linux")]
#[test]
fn a_memory_that_cannot_be_opened_is_counted_alike_on_every_page() {
    use mneme_testsupport::accounts;
    use std::os::unix::fs::PermissionsExt;
    if std::env::var_os(UNREADABLE_CHILD).is_none() && accounts::is_root() {
        let h = TestHome::new();
        let me = accounts::binary_for_nobody(&h, std::env::current_exe().unwrap().to_str().unwrap());
        let mut cmd = std::process::Command::new(me);
        cmd.args(["--exact", "a_memory_that_cannot_be_opened_is_counted_alike_on_every_page", "--test-threads=1"]).env(UNREADABLE_CHILD, "1").current_dir("/");
        let out = accounts::as_nobody(&mut cmd).output().unwrap();
        let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert!(out.status.success() && said.contains("1 passed"), "as nobody: {said}");
        return;
    }
    let mut f = folder();
    f.api = late_api(&f._t);
    many_memories(&f, 30);
    write_file(&f.mem.join("zz-sentinel.txt"), "");
    // Newest first, m0005.md is the 26th memory: on the third page of ten.
    let locked = f.mem.join("m0005.md");
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    assert!(fs::read(&locked).is_err(), "file modes do not bind this user");
    let q = |offset: usize| mneme_api::MemoryPageRequest { offset, limit: 10, ..Default::default() };
    let pages = |api: &Mneme| (0..3).map(|p| api.memory_page(&f.req, &q(p * 10)).unwrap()).collect::<Vec<_>>();
    for api in [&f.api, &late_api(&f._t)] {
        let shown = pages(api);
        for p in &shown {
            assert_eq!((p.total, p.all), (29, 29), "page at {}: {:?}", p.offset, rows(p));
        }
        let third: Vec<String> = shown[2].items.iter().map(|m| m.rel_path.clone()).collect();
        assert_eq!(third, [10, 9, 8, 7, 6, 4, 3, 2, 1].map(|i| format!("m{i:04}.md")));
        // The third page reads its own rows, not the folder.
        let opened = opened_in(&f.mem, || assert_eq!(late_api(&f._t).memory_page(&f.req, &q(20)).unwrap().total, 29));
        assert_eq!(memories_among(&opened), [10, 9, 8, 7, 6, 4, 3, 2, 1].map(|i| format!("m{i:04}.md")).into_iter().collect(), "{opened:?}");
    }
    let age = mneme_api::MemoryPageRequest { age: Some("old".into()), limit: 10, ..Default::default() };
    let old = f.api.memory_page(&f.req, &age).unwrap();
    assert_eq!((old.total, old.all), (29, 29));
    assert_eq!(f.api.memories(&f.req, &Default::default()).unwrap().len(), 29);
    let h = f.api.health(&f.req).unwrap();
    assert_eq!(h.topic_count, 29);
    assert_eq!(h.problems.iter().map(|p| p.rel_path.as_str()).collect::<Vec<_>>(), ["m0005.md"], "{:?}", h.problems);

    // Readable again, it is counted and shown at once.
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o644)).unwrap();
    let shown = pages(&f.api);
    assert_eq!((shown[0].total, shown[0].all), (30, 30));
    assert!(shown[2].items.iter().any(|m| m.rel_path == "m0005.md"));
    assert_eq!(f.api.health(&f.req).unwrap().topic_count, 30);
}
