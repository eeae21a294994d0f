//! Hostile input for the disk layer: MEMORY.md indexes (a teammate's, synced through the team
//! server), memory folders holding damaged, binary and deeply nested files, settings JSON, and
//! the frontmatter Mneme writes for names and descriptions a model or a user typed. Nothing may
//! panic; an index renders back to the exact bytes it was parsed from; a new memory's
//! frontmatter reads back as the name and description it was written with.

// mneme-testsupport links mneme-store, so the generators are included rather than linked.
#[allow(dead_code)]
#[path = "../../testsupport/src/hostile.rs"]
mod hostile;

use hostile::{bytes, config, corpus, deep, mutated, mutated_text, testdata, text};
use mneme_core::clock::SystemClock;
use mneme_core::frontmatter;
use mneme_core::MemoryType;
use mneme_store::memdir::{new_memory_content, parse_index, IndexDoc, Memdir, Scope};
use mneme_store::settings::{SettingSource, SettingsFile};
use mneme_store::Environment;
use proptest::prelude::*;
use std::path::Path;
use std::sync::Arc;

fn md_seeds() -> Vec<Vec<u8>> {
    let mut s = corpus(&testdata().join("realworld"), &["MEMORY.md"], 20);
    s.extend(corpus(&testdata().join("realworld"), &[".md"], 40));
    s
}

fn json_seeds() -> Vec<Vec<u8>> {
    let mut s = corpus(&testdata().join("conformance"), &[".json"], 30);
    s.push(br#"{"autoMemoryEnabled": true, "env": {"A": "b"}, "permissions": {"allow": ["Read"]}}"#.to_vec());
    s
}

proptest! {
    #![proptest_config(config(128))]

    /// The index editor's promise: parse → render gives back the exact bytes.
    #[test]
    fn index_round_trips(content in mutated_text(md_seeds())) {
        let doc = IndexDoc::parse(&content);
        prop_assert_eq!(doc.render(), content.clone());
        prop_assert_eq!(IndexDoc::parse(&doc.render()), doc);
        let root = Path::new("/tmp/mem");
        let lines = parse_index(&content, Scope::Private, root);
        for l in &lines {
            if let Some(e) = &l.entry {
                // What an entry holds is text of its own line.
                prop_assert!(l.text.contains(&e.title) && l.text.contains(&e.target));
                prop_assert!(e.rel_path.ends_with(".md"));
            }
        }
        let _ = parse_index(&content, Scope::Team, root);
    }

    #[test]
    fn index_of_deep_nesting(content in deep()) {
        let doc = IndexDoc::parse(&content);
        prop_assert_eq!(doc.render(), content.clone());
        let _ = parse_index(&content, Scope::Private, Path::new("/tmp/mem"));
    }

    /// A new memory's frontmatter reads back as what was written, whatever the text.
    #[test]
    fn new_memory_frontmatter_round_trips(name in text(), description in text(), body in text(), typed in any::<bool>()) {
        let t = typed.then_some(MemoryType::Feedback);
        let content = new_memory_content(&name, &description, t, &body, mneme_core::frontmatter::Generation::Metadata);
        let parsed = frontmatter::parse(&content);
        let fm = parsed.frontmatter.expect("a frontmatter block");
        prop_assert!(fm.error.is_none(), "{:?} in {:?}", fm.error, content);
        prop_assert_eq!(fm.get("name").and_then(|v| v.as_str()), Some(name.as_str()));
        prop_assert_eq!(fm.get("description").and_then(|v| v.as_str()), Some(description.as_str()));
        prop_assert_eq!(fm.memory_type(), t);
    }

    /// Settings files as Claude Code's users write them, damaged: never a panic, and a file
    /// that is not used always says why.
    #[test]
    fn settings_files(content in prop_oneof![mutated(json_seeds()), bytes(), deep().prop_map(String::into_bytes)]) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("settings.json");
        std::fs::write(&path, &content).unwrap();
        let env = Environment::with_home(dir.path());
        let file = SettingsFile::load(&env, SettingSource::User, &path, true);
        if !file.applies() {
            let e = file.error.as_ref().expect("an unused file says why");
            prop_assert!(!e.to_string().is_empty());
        }
    }
}

/// A line of 40,000 `](` rescanned the rest of the line at each one (minutes of work per
/// line); now only the first `MAX_LINK_TRIES` are tried.
#[test]
fn index_line_of_many_link_openers() {
    let root = Path::new("/tmp/mem");
    for junk in ["](", "[a](", "](a (", "](<"] {
        let line = format!("{}- [t](t.md)", junk.repeat(40_000));
        let lines = parse_index(&line, Scope::Private, root);
        assert_eq!(lines.len(), 1);
        assert!(lines[0].entry.is_none(), "{junk}");
    }
    // A few stray `](` before the link still leave it found.
    let line = format!("{}- [t](t.md) — hook", "](x) ".repeat(mneme_store::memdir::MAX_LINK_TRIES - 1));
    let entry = parse_index(&line, Scope::Private, root)[0].entry.clone().expect("an entry");
    assert_eq!(entry.rel_path, "t.md");
}

/// A generated memory folder: file names (some hostile) and contents (damaged real files).
fn tree() -> impl Strategy<Value = Vec<(String, Vec<u8>)>> {
    let name = prop_oneof![
        4 => "[a-z]{1,8}(/[a-z]{1,6}){0,2}\\.md",
        1 => Just("MEMORY.md".to_string()),
        1 => Just("team/MEMORY.md".to_string()),
        1 => "team/[a-z]{1,6}\\.md",
        1 => "[a-z]{1,6}\\.(txt|json|md\\.bak)",
        1 => "\\.[a-z]{1,6}\\.md",
        1 => "[ -~&&[^/\\\\.]]{1,20}\\.md",
    ];
    proptest::collection::vec((name, mutated(md_seeds())), 0..8)
}

fn write_tree(root: &Path, files: &[(String, Vec<u8>)]) {
    for (rel, content) in files {
        let path = root.join(rel);
        if let Some(parent) = path.parent() {
            // A name that is already a file in this tree cannot also be a folder: skip it.
            if std::fs::create_dir_all(parent).is_err() {
                continue;
            }
        }
        let _ = std::fs::write(&path, content);
    }
}

proptest! {
    #![proptest_config(config(48))]

    /// A memory folder of damaged files lists, reads its indexes, reports health and builds
    /// the manifest without panicking; every problem it reports says what is wrong.
    #[test]
    fn memory_folder_of_hostile_files(files in tree()) {
        let dir = tempfile::tempdir().unwrap();
        let mem = dir.path().join("memory");
        std::fs::create_dir_all(&mem).unwrap();
        write_tree(&mem, &files);
        let memdir = Memdir::new(&mem, dir.path().join("trash"), Arc::new(SystemClock));
        let scan = memdir.scan().expect("a readable folder scans");
        for p in &scan.problems {
            prop_assert!(!p.message.is_empty());
        }
        let headers = memdir.scan_headers().expect("a readable folder scans");
        prop_assert!(headers.headers.len() <= scan.files.len() + headers.problems.len());
        for scope in [Scope::Private, Scope::Team] {
            match memdir.read_index(scope) {
                Ok(index) => prop_assert_eq!(IndexDoc::parse(&index.content).render(), index.content),
                Err(e) => prop_assert!(!e.to_string().is_empty()),
            }
        }
        let _ = memdir.health();
        let _ = memdir.manifest();
    }
}

/// Extreme but readable folders: a MEMORY.md of 200,000 lines, a memory whose frontmatter has
/// 100,000 keys before its name, names that differ only in case, and names Windows reserves
/// (`CON`, `nul`, `aux`, `com1`). Each is listed and measured as it is, and the index still
/// renders back to its bytes.
#[test]
fn extreme_folders_are_read_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let mem = dir.path().join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    let index: String = (0..200_000).map(|i| format!("- [Memory {i}](m{i}.md) \u{2014} hook {i}\n")).collect();
    std::fs::write(mem.join("MEMORY.md"), &index).unwrap();
    let keys: String = (0..100_000).map(|i| format!("k{i}: v{i}\n")).collect();
    std::fs::write(mem.join("keys.md"), format!("---\n{keys}name: many keys\ndescription: a hundred thousand keys\n---\nbody\n")).unwrap();
    let names = ["Twin.md", "twin.md", "TWIN.md", "CON.md", "nul.md", "aux.md", "com1.md"];
    for n in names {
        std::fs::write(mem.join(n), format!("---\nname: {n}\ndescription: d\n---\n")).unwrap();
    }
    let memdir = Memdir::new(&mem, dir.path().join("trash"), Arc::new(SystemClock));
    let scan = memdir.scan().expect("a readable folder scans");
    let listed: Vec<&str> = scan.files.iter().map(|f| f.rel_path.as_str()).collect();
    for n in names.iter().chain(&["keys.md"]) {
        assert!(listed.contains(n), "{n} in {listed:?}");
    }
    let many = scan.files.iter().find(|f| f.rel_path == "keys.md").unwrap();
    assert_eq!((many.name.as_deref(), many.description.as_deref()), (Some("many keys"), Some("a hundred thousand keys")));
    let read = memdir.read_index(Scope::Private).unwrap();
    assert_eq!(read.lines.len(), 200_000);
    assert_eq!(IndexDoc::parse(&read.content).render(), index);
    let health = memdir.health();
    assert_eq!(health.index.line_count, 200_000);
    assert!(health.index.truncated && health.index.line_truncated);
    let manifest = memdir.manifest();
    assert!(names.iter().all(|n| manifest.contains(n)), "{manifest}");
}

/// A memory another program rewrites while Mneme reads the folder (growing it, cutting it
/// short): every scan answers, and the file is listed or named with a problem that says what.
#[test]
fn a_file_changing_size_while_read() {
    let dir = tempfile::tempdir().unwrap();
    let mem = dir.path().join("memory");
    std::fs::create_dir_all(&mem).unwrap();
    let path = mem.join("moving.md");
    std::fs::write(&path, "---\nname: moving\ndescription: d\n---\n").unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (path, stop) = (path.clone(), stop.clone());
        std::thread::spawn(move || {
            use std::io::Write;
            let mut n = 0u32;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                n += 1;
                if n.is_multiple_of(64) {
                    let _ = std::fs::write(&path, "---\nname: moving\n");
                } else if let Ok(mut f) = std::fs::OpenOptions::new().append(true).open(&path) {
                    let _ = f.write_all("grown line \u{00e9}\n".repeat(64).as_bytes());
                }
            }
        })
    };
    let memdir = Memdir::new(&mem, dir.path().join("trash"), Arc::new(SystemClock));
    for _ in 0..40 {
        let scan = memdir.scan().expect("a readable folder scans");
        let listed = scan.files.iter().any(|f| f.rel_path == "moving.md");
        let problem = scan.problems.iter().find(|p| p.message.is_empty());
        assert!(problem.is_none(), "{problem:?}");
        assert!(listed || !scan.problems.is_empty());
        let headers = memdir.scan_headers().expect("a readable folder scans");
        assert!(headers.headers.len() + headers.problems.len() >= 1);
        let _ = memdir.manifest();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
}
