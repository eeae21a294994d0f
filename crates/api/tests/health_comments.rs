//! The index health meter measures MEMORY.md as Claude Code loads it: frontmatter off, then
//! block-level HTML comments off, then the 200-line / 25,000-unit cap. Checked against the
//! loader's own pipeline (mneme-claudemd's `strip_html_comments`, core's
//! `truncate_entrypoint`): an entry is past the cap exactly when its line is missing from
//! what Claude Code loads.

use mneme_api::{ContextRequest, FixedClock, Mneme};
use mneme_core::text::truncate_entrypoint;
use mneme_testsupport::{write_file, TestHome};
use std::fs;
use std::sync::Arc;

fn loaded_by_claude_code(content: &str) -> (String, bool) {
    let body = mneme_core::frontmatter::parse(content).body.to_string();
    let stripped = mneme_claudemd::strip_html_comments(&body).expect("lexes");
    let t = truncate_entrypoint(&stripped);
    let was = t.was_truncated();
    (t.content, was)
}

fn check(content: &str) -> mneme_store::memdir::Health {
    let t = TestHome::new();
    let project = t.root.join("code/app");
    fs::create_dir_all(&project).unwrap();
    let mem = t.memdir_for(&project);
    write_file(&mem.join("MEMORY.md"), content);
    let m = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
    let h = m.health(&ContextRequest { cwd: project, ..Default::default() }).unwrap();
    let (loaded, truncated) = loaded_by_claude_code(content);
    assert_eq!(h.index.truncated, truncated);
    let loaded_lines: Vec<&str> = loaded.lines().collect();
    let lines: Vec<&str> = content.lines().collect();
    for (i, line) in lines.iter().enumerate() {
        if !line.starts_with("- [") || line.contains("<!--") {
            continue;
        }
        let past = h.index.past_cap.iter().any(|r| r.line == i + 1);
        assert_eq!(past, !loaded_lines.contains(line), "line {}: {line}", i + 1);
    }
    h
}

fn entries(from: usize, to: usize) -> String {
    (from..=to).map(|i| format!("- [m{i}](m{i}.md) — hook {i}\n")).collect()
}

#[test]
fn comments_do_not_count_towards_the_line_cap() {
    let comment = format!("<!--\n{}-->\n", "a note to self\n".repeat(60));
    let h = check(&format!("---\nname: index\n---\n{comment}{}", entries(1, 200)));
    assert!(!h.index.truncated, "raw file has 264 lines, Claude Code sees 200");
    assert_eq!(h.index.line_count, 200);
    assert!(h.index.past_cap.is_empty());

    let h = check(&format!("{}{comment}<!-- x --> residue stays\n{}", entries(1, 100), entries(101, 205)));
    assert_eq!(h.index.line_count, 206);
    let past: Vec<&str> = h.index.past_cap.iter().map(|r| r.rel_path.as_str()).collect();
    assert_eq!(past, ["m200.md", "m201.md", "m202.md", "m203.md", "m204.md", "m205.md"]);
}

#[test]
fn comments_do_not_count_towards_the_unit_cap() {
    let comment = format!("<!-- {} -->\n\n", "z".repeat(30_000));
    let h = check(&format!("{comment}{}", entries(1, 20)));
    assert!(!h.index.unit_truncated && !h.index.truncated);
    assert!(h.index.unit_count < 1_000, "{}", h.index.unit_count);

    // CRLF: a file holding a comment is rebuilt with LF, so its `\r`s stop counting.
    let crlf = format!("<!-- c -->\r\n{}", entries(1, 150).replace('\n', "\r\n"));
    let h = check(&crlf);
    assert_eq!(h.index.unit_count, entries(1, 150).trim().encode_utf16().count());
}

#[test]
fn a_fix_can_be_taken_back_until_the_index_changes_again() {
    let t = TestHome::new();
    let project = t.root.join("code/app");
    fs::create_dir_all(&project).unwrap();
    let mem = t.memdir_for(&project);
    // The line of a missing file is the only copy of what it says; a topic file has no line.
    let index = "- [Snapshot lock](snapshot-lock.md) — holds acquireProfileLock until the browser is quiet\n";
    write_file(&mem.join("MEMORY.md"), index);
    write_file(&mem.join("deploy.md"), "---\nname: deploy\ndescription: how we deploy\ntype: project\n---\nFridays.\n");
    let m = Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
    let req = ContextRequest { cwd: project, ..Default::default() };
    let (changes, undo) = m.fix_index_undoable(&req).unwrap();
    assert!(changes.len() >= 2, "{changes:?}");
    assert_eq!(undo.len(), 1);
    assert_ne!(fs::read_to_string(mem.join("MEMORY.md")).unwrap(), index);
    m.undo_fix_index(&req, &undo).unwrap();
    assert_eq!(fs::read_to_string(mem.join("MEMORY.md")).unwrap(), index, "byte for byte");
    // Once the index changed again (Claude Code saved a memory), the undo puts nothing back.
    let (_, undo) = m.fix_index_undoable(&req).unwrap();
    let edited = format!("{}- [New](new.md) — by Claude Code\n", fs::read_to_string(mem.join("MEMORY.md")).unwrap());
    write_file(&mem.join("MEMORY.md"), &edited);
    let err = m.undo_fix_index(&req, &undo).unwrap_err();
    assert!(err.message.contains("changed since the fix"), "{}", err.message);
    assert_eq!(fs::read_to_string(mem.join("MEMORY.md")).unwrap(), edited);
    // Only the indexes can be written this way.
    let mut other = undo.clone();
    other[0].rel_path = "deploy.md".into();
    assert!(m.undo_fix_index(&req, &other).is_err());
}
