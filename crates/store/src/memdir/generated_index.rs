//! The index Claude Code writes for itself when a memory folder has topic files but no
//! MEMORY.md (from 2.1.285; `mneme_core::versions` says which releases). At start-up it
//! creates MEMORY.md with one line per topic file and loads that, so what the session sees
//! is this text, not "no index". Every fact here was measured with the real binary
//! (docs/claude-code-versions.md, "MEMORY.md written from the topic files"):
//!
//! - the topic files are those of a walk of the folder depth first in the file system's order
//!   (first 30 lines read), newest first, ties in walk order; symbolic links (and what they
//!   lead to), a file with a second hard link, anything under a dot-named folder or named with
//!   a leading dot, anything under a folder named `team`, `logs`, `sessions` or `proposals` at
//!   any depth and in any case (trailing dots and spaces ignored), and paths holding `(`, `)`,
//!   `[` or `]` (they would break the link) are left out;
//! - a line is `- [<stem>](<relative path>)`, then ` — <description>` when the frontmatter's
//!   `description:` is YAML text with something besides white space (runs of white space
//!   become one space);
//! - a line over 150 UTF-16 units is cut to 149 (never inside a surrogate pair) plus `…`;
//! - lines are taken while there are at most 140 of them and their lengths, each counted
//!   with its line break, stay within 17,500: 70% of MEMORY.md's own caps, so the new index
//!   is never truncated when it is loaded. The first line that does not fit ends the list.

use super::manifest::{folder_key, RESERVED_FOLDERS};
use super::scan::TopicHeader;
use super::Memdir;
use mneme_core::text::{is_js_whitespace, utf16_len};
use mneme_core::versions::Profile;
use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

/// A line longer than this (UTF-16 units) is cut.
pub const GENERATED_LINE_MAX: usize = 150;
/// At most this many lines.
pub const GENERATED_MAX_LINES: usize = 140;
/// The lines, each with its line break, stay within this many UTF-16 units.
pub const GENERATED_MAX_UNITS: usize = 17_500;

/// The MEMORY.md Claude Code would write for the memory folder at `root`, or `None` when
/// it would write nothing (no folder, or no topic file it lists).
pub fn generated_index(root: &Path, release: &Profile) -> Option<String> {
    // Only the walk is used: no trash, no clock.
    let dir = Memdir::new(root, root, Arc::new(mneme_core::clock::SystemClock));
    let mut headers = dir.scan_headers().ok()?.headers;
    // Claude Code's own walk decides which files (no links, no file with a second hard
    // link) and the order of ties (depth first).
    let order: HashMap<String, usize> =
        super::listing::single_named_files(root).into_iter().enumerate().map(|(i, rel)| (rel, i)).collect();
    headers.retain(|h| order.contains_key(&h.rel_path));
    headers.sort_by_key(|h| order[&h.rel_path]);
    index_from_headers(headers.into_iter().map(|h| h.as_read_by(release)).collect())
}

/// The index text for headers in walk order (see the module comment for the rules).
pub fn index_from_headers(mut headers: Vec<TopicHeader>) -> Option<String> {
    headers.retain(listed);
    // A stable sort: files with the same modification time stay in walk order.
    headers.sort_by_key(|h| std::cmp::Reverse(h.mtime_ns));
    let mut out = String::new();
    let (mut lines, mut units) = (0, 0);
    for h in &headers {
        let line = line_for(h);
        let len = utf16_len(&line) + 1;
        if lines == GENERATED_MAX_LINES || units + len > GENERATED_MAX_UNITS {
            break;
        }
        out.push_str(&line);
        out.push('\n');
        lines += 1;
        units += len;
    }
    (lines > 0).then_some(out)
}

fn listed(h: &TopicHeader) -> bool {
    let rel = h.rel_path.as_str();
    !h.symlink
        && !rel.split('/').any(|part| {
            part.starts_with('.') || RESERVED_FOLDERS.contains(&folder_key(part).as_str())
        })
        && !rel.contains(['(', ')', '[', ']'])
}

fn line_for(h: &TopicHeader) -> String {
    let name = h.rel_path.rsplit('/').next().unwrap_or(&h.rel_path);
    let stem = name.strip_suffix(".md").unwrap_or(name);
    let mut line = format!("- [{stem}]({})", h.rel_path);
    if let Some(d) = h.text_description.as_deref().map(collapse_whitespace).filter(|d| !d.is_empty()) {
        line.push_str(" — ");
        line.push_str(&d);
    }
    if utf16_len(&line) > GENERATED_LINE_MAX {
        cut_with_ellipsis(&mut line, GENERATED_LINE_MAX - 1);
    }
    line
}

/// Runs of JavaScript white space become one space; none at either end.
fn collapse_whitespace(s: &str) -> String {
    s.split(is_js_whitespace).filter(|w| !w.is_empty()).collect::<Vec<_>>().join(" ")
}

/// Keeps at most `units` UTF-16 units (a character that would straddle the cut goes) and
/// appends `…`.
fn cut_with_ellipsis(line: &mut String, units: usize) {
    let mut used = 0;
    let mut end = line.len();
    for (i, c) in line.char_indices() {
        if used + c.len_utf16() > units {
            end = i;
            break;
        }
        used += c.len_utf16();
    }
    line.truncate(end);
    line.push('…');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::memdir::testutil::*;

    fn index(t: &TestDir) -> String {
        generated_index(&t.mem(), &mneme_core::versions::newest()).unwrap_or_default()
    }

    #[test]
    fn newest_first_with_descriptions_and_exclusions() {
        let t = TestDir::new();
        t.write("old.md", "---\ndescription: \"  spaced\n  out\\tdesc \"\n---\nbody\n");
        t.write("sub/new.md", "---\nname: ignored\ndescription: newest\n---\n");
        t.write("plain.md", "no frontmatter\n");
        t.write("number.md", "---\ndescription: 12345\n---\n");
        t.write(".hidden.md", "---\ndescription: x\n---\n");
        t.write(".dot/inside.md", "x\n");
        t.write("team/shared.md", "x\n");
        t.write("paren(s).md", "x\n");
        t.write("br]acket.md", "x\n");
        t.set_mtime("old.md", 1_700_000_000, 0);
        t.set_mtime("sub/new.md", 1_700_000_300, 0);
        t.set_mtime("plain.md", 1_700_000_200, 0);
        t.set_mtime("number.md", 1_700_000_100, 0);
        assert_eq!(
            index(&t),
            "- [new](sub/new.md) — newest\n- [plain](plain.md)\n- [number](number.md)\n- [old](old.md) — spaced out desc\n"
        );
    }

    /// Checked on 2.1.285, 2.1.325, 2.1.326 and 2.1.332: a file with a second hard link (both
    /// names), a link and what a linked folder holds are left out, and ties follow a depth-first
    /// walk (a sub-folder's files where the folder is met).
    #[cfg(unix)]
    #[test]
    fn only_single_named_files_in_a_depth_first_walk() {
        let t = TestDir::new();
        for rel in ["a.md", "b.md", "sub/c.md", "zsub/d.md", "e.md"] {
            t.write(rel, "x\n");
            t.set_mtime(rel, 1_700_000_000, 0);
        }
        std::fs::hard_link(t.mem().join("e.md"), t.mem().join("hard.md")).unwrap();
        std::fs::create_dir_all(t.path().join("outside")).unwrap();
        t.write_outside("outside/o.md", "x\n");
        std::os::unix::fs::symlink(t.path().join("outside"), t.mem().join("outlink")).unwrap();
        std::os::unix::fs::symlink("a.md", t.mem().join("alias.md")).unwrap();
        let listed: Vec<String> =
            index(&t).lines().map(|l| l.split('(').nth(1).unwrap().trim_end_matches(')').to_string()).collect();
        // The same files in the order of the walk, whatever order the file system keeps.
        assert_eq!(listed, super::super::listing::single_named_files(&t.mem()));
        let mut sorted = listed.clone();
        sorted.sort();
        assert_eq!(sorted, ["a.md", "b.md", "sub/c.md", "zsub/d.md"]);
    }

    /// Checked on 2.1.285 and 2.1.332: a folder named `team`, `logs`, `sessions` or
    /// `proposals` keeps its files out at any depth, in any case and with trailing dots.
    #[test]
    fn reserved_folders_at_any_depth_are_left_out() {
        let t = TestDir::new();
        let all = [
            "a.md", "team/t.md", "team/sub/ts.md", "Team/sub/up.md", "team./x/y.md", "logs/l.md", "logs/2026/01/d.md",
            "sessions/s.md", "proposals/p.md", "Proposals/q.md", "sub/logs/n.md", "sub/team/x/deep.md", "other/deep/c.md",
        ];
        for (i, rel) in all.iter().enumerate() {
            t.write(rel, &format!("---\ndescription: d {rel}\n---\n"));
            t.set_mtime(rel, 1_700_000_000 + i as i64, 0);
        }
        assert_eq!(index(&t), "- [c](other/deep/c.md) — d other/deep/c.md\n- [a](a.md) — d a.md\n");
    }

    #[test]
    fn no_topic_files_writes_nothing() {
        let t = TestDir::new();
        t.write(".hidden.md", "x\n");
        let newest = mneme_core::versions::newest();
        assert_eq!(generated_index(&t.mem(), &newest), None);
        assert_eq!(generated_index(&t.mem().join("missing"), &newest), None);
    }

    #[test]
    fn long_lines_are_cut_at_150_units_and_never_inside_a_pair() {
        let t = TestDir::new();
        t.write("a.md", &format!("---\ndescription: {}\n---\n", "x".repeat(300)));
        t.write("emoji.md", &format!("---\ndescription: {}\n---\n", "😀".repeat(100)));
        t.set_mtime("a.md", 1_700_000_001, 0);
        t.set_mtime("emoji.md", 1_700_000_000, 0);
        let text = index(&t);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(utf16_len(lines[0]), 150);
        assert!(lines[0].ends_with("x…"));
        // `- [emoji](emoji.md) — ` is 22 units; 63 emoji fit in 149, the 64th would straddle.
        assert_eq!(lines[1], format!("- [emoji](emoji.md) — {}…", "😀".repeat(63)));
    }

    #[test]
    fn stops_at_140_lines_or_17500_units_at_the_first_line_that_does_not_fit() {
        let t = TestDir::new();
        for i in 0..150 {
            t.write(&format!("m{i:03}.md"), "---\ndescription: d\n---\n");
            t.set_mtime(&format!("m{i:03}.md"), 1_700_000_000 + i, 0);
        }
        assert_eq!(index(&t).lines().count(), 140);

        let t = TestDir::new();
        for i in 0..115 {
            t.write(&format!("m{i:03}.md"), &format!("---\ndescription: {}\n---\n", "x".repeat(200)));
            t.set_mtime(&format!("m{i:03}.md"), 1_700_001_000 + i, 0);
        }
        // 115 lines of 150 + 1 = 17,365 units: a 134-unit line fits exactly, 135 does not,
        // and a short line after one that did not fit is not taken either.
        t.write("z.md", &format!("---\ndescription: {}\n---\n", "z".repeat(135 - 14)));
        t.set_mtime("z.md", 1_700_000_500, 0);
        t.write("y.md", "---\ndescription: short\n---\n");
        t.set_mtime("y.md", 1_700_000_400, 0);
        assert_eq!(index(&t).lines().count(), 115);
        t.write("z.md", &format!("---\ndescription: {}\n---\n", "z".repeat(134 - 14)));
        t.set_mtime("z.md", 1_700_000_500, 0);
        let text = index(&t);
        assert_eq!(text.lines().count(), 116);
        assert_eq!(utf16_len(&text), GENERATED_MAX_UNITS);
    }
}
