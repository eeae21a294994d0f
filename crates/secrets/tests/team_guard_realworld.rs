//! The team guard's Markdown reading (`scan_team`) on real memory: every Markdown file of the
//! six public repositories' Claude Code memory under `testdata/realworld` reads the same to it
//! as to `scan` (none holds a secret), so the stricter pass refuses nothing ordinary Markdown
//! holds.

use mneme_secrets::{scan, scan_team};
use std::path::{Path, PathBuf};

fn markdown_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).expect("the fixture folder reads") {
        let path = entry.expect("a fixture entry reads").path();
        if path.is_dir() {
            markdown_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "md") {
            out.push(path);
        }
    }
}

#[test]
fn real_memory_reads_the_same_to_the_team_guard() {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/realworld"));
    let mut files = Vec::new();
    markdown_files(root, &mut files);
    assert!(files.len() >= 50, "{} Markdown files", files.len());
    let mut differ = Vec::new();
    for path in &files {
        let Ok(text) = std::fs::read_to_string(path) else { continue };
        let (plain, team) = (scan(&text), scan_team(&text));
        if plain != team {
            differ.push(format!("{}: {:?} -> {:?}", path.display(), plain, team));
        }
    }
    assert!(differ.is_empty(), "{differ:#?}");
}
