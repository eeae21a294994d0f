//! The offline dream on copies of real memory folders (testdata/realworld/*/tree/.claude/memory):
//! MEMORY.md ends within Claude Code's caps, every line that leaves it and every feedback
//! memory's text is still somewhere in the folder, the safety net finds nothing lost (and does
//! find the loss when the index lines of missing files are simply deleted, as dreams used to),
//! and undo gives back a byte-identical folder.

mod common;

use common::*;
use mneme_core::frontmatter;
use mneme_core::MemoryType;
use mneme_dream::{Changeset, DreamStatus, FileChange};
use mneme_store::memdir::{parse_index, Scope};
use std::fs;
use std::path::{Path, PathBuf};

/// Every real-world memory folder in the corpus.
fn corpus() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/realworld");
    let mut out: Vec<PathBuf> = fs::read_dir(&root)
        .unwrap()
        .flatten()
        .map(|e| e.path().join("tree/.claude/memory"))
        .filter(|p| p.join("MEMORY.md").is_file())
        .collect();
    out.sort();
    out
}

fn copy_tree(from: &Path, to: &Path, mtime: i64) {
    for e in fs::read_dir(from).unwrap().flatten() {
        let (src, dst) = (e.path(), to.join(e.file_name()));
        if src.is_dir() {
            fs::create_dir_all(&dst).unwrap();
            copy_tree(&src, &dst, mtime);
        } else {
            fs::copy(&src, &dst).unwrap();
            filetime::set_file_mtime(&dst, filetime::FileTime::from_unix_time(mtime, 0)).unwrap();
        }
    }
}

fn normalized(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ").to_lowercase()
}

#[test]
fn offline_dreams_on_real_folders_fit_the_caps_keep_feedback_and_undo_exactly() {
    let folders = corpus();
    assert!(folders.len() >= 5, "{folders:?}");
    // Ten days before the test clock, so relative dates resolve against a known day.
    let written = NOW as i64 - 10 * 86_400;
    let written_day = mneme_dream::dates::local_date(i128::from(written) * 1_000_000_000, 0);
    for src in folders {
        let w = World::new();
        copy_tree(&src, &w.mem, written);
        let before = w.snapshot();
        let feedback: Vec<(String, String)> = before
            .iter()
            .filter_map(|(rel, bytes)| {
                let text = String::from_utf8(bytes.clone()).ok()?;
                let p = frontmatter::parse(&text);
                let fm = p.frontmatter.as_ref()?;
                (fm.memory_type() == Some(MemoryType::Feedback)).then(|| {
                    let day = fm
                        .get("created")
                        .and_then(|v| v.as_str())
                        .and_then(mneme_dream::dates::parse_iso_date)
                        .unwrap_or(written_day);
                    (rel.clone(), mneme_dream::dates::absolutize(p.body, day).0)
                })
            })
            .collect();

        // What dreams used to do: delete every index line whose file is missing. The net
        // catches it on every folder that has such lines.
        let index_before = String::from_utf8(before["MEMORY.md"].clone()).unwrap();
        let dangling: Vec<&str> = parse_index(&index_before, Scope::Private, &w.mem)
            .iter()
            .filter(|l| l.entry.as_ref().is_some_and(|e| !w.mem.join(&e.rel_path).exists()))
            .map(|l| index_before.lines().nth(l.number - 1).unwrap())
            .collect();
        let pruned: String = index_before.split_inclusive('\n').filter(|l| !dangling.contains(&l.trim_end_matches(['\n', '\r']))).collect();
        let lossy = Changeset {
            root: w.mem.clone(),
            changes: vec![FileChange { path: w.mem.join("MEMORY.md"), before: Some(index_before.clone()), after: Some(pruned), reason: String::new(), extra: Default::default() }],
            extra: Default::default(),
        };
        let caught = mneme_dream::safety::check(&lossy, &[], &mneme_core::versions::newest()).iter().filter(|m| m.lost()).count();
        eprintln!("{}: {} index lines point at missing files; deleting them loses {caught}", src.display(), dangling.len());
        assert_eq!(dangling.is_empty(), caught == 0, "{}", src.display());

        let rec = w.offline(true).unwrap();
        assert_eq!(rec.status, DreamStatus::Applied, "{}", src.display());
        assert!(rec.moved.iter().all(|m| !m.lost()), "{}: {:#?}", src.display(), rec.moved.iter().filter(|m| m.lost()).collect::<Vec<_>>());
        eprintln!("{}: {}", src.display(), rec.summary);
        for c in &rec.changeset.changes {
            eprintln!("  {}", c.reason);
        }
        let health = w.dreams.memdir(&w.mem).health();
        assert!(!health.index.truncated, "{}: MEMORY.md is {} lines, {} units", src.display(), health.index.line_count, health.index.unit_count);

        let live: String = w
            .snapshot()
            .values()
            .map(|b| normalized(&String::from_utf8_lossy(b)))
            .collect::<Vec<_>>()
            .join("\n");
        // Every line that left MEMORY.md is still in the folder, checked here without the
        // safety net: word for word (case and spacing aside), or, for a shortened entry, its
        // title and its hook each.
        let index_after = String::from_utf8(w.snapshot()["MEMORY.md"].clone()).unwrap();
        let mut left = 0;
        for line in index_before.lines().filter(|l| !l.trim().is_empty() && !index_after.lines().any(|a| a == *l)) {
            left += 1;
            let found = live.contains(&normalized(line))
                || parse_index(line, Scope::Private, &w.mem).into_iter().next().and_then(|l| l.entry).is_some_and(|e| {
                    live.contains(&normalized(&e.title)) && e.hook.is_none_or(|h| live.contains(&normalized(&h)))
                });
            assert!(found, "{}: the index line was lost: {line}", src.display());
        }
        eprintln!("{}: {left} lines left MEMORY.md, all found in the folder", src.display());
        for (rel, body) in &feedback {
            for line in body.lines().map(normalized).filter(|l| !l.is_empty()) {
                assert!(live.contains(&line), "{}: a line of feedback memory {rel} was lost: {line}", src.display());
            }
        }

        let undone = w.dreams.undo(&w.mem, None, false);
        if rec.changeset.is_empty() {
            assert_eq!(undone.unwrap_err().code(), "not-found");
        } else {
            assert_eq!(undone.unwrap().status, DreamStatus::Undone);
        }
        assert_eq!(w.snapshot(), before, "{}: undo must give back every byte", src.display());
    }
}
