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
