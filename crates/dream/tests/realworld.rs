//! The offline dream on copies of real memory folders (testdata/realworld/*/tree/.claude/memory):
//! MEMORY.md ends within Claude Code's caps, every feedback memory's text is still somewhere in
//! the folder, and undo gives back a byte-identical folder.

mod common;

use common::*;
use mneme_core::frontmatter;
use mneme_core::MemoryType;
use mneme_dream::DreamStatus;
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

        let rec = w.offline(true).unwrap();
        assert_eq!(rec.status, DreamStatus::Applied, "{}", src.display());
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
