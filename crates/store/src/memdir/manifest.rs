//! The memory manifest exactly as Claude Code's recall selector and extraction agent see it
//! (`scanMemoryFiles` + `formatMemoryManifest` in `src/memdir/memoryScan.ts`).
//!
//! One note on types: Claude Code 2.1.88 read only a top-level `type:` here, while 2.1.197
//! writes `metadata: { type: }`. Mneme shows the type from either generation, on the
//! assumption that the reader moved with the writer.

use super::{Memdir, TopicHeader};
use mneme_core::frontmatter::Generation;
use mneme_core::text::iso8601_millis;

/// `MAX_MEMORY_FILES` in `src/memdir/memoryScan.ts`: the manifest lists at most this many.
pub const MAX_MEMORY_FILES: usize = 200;

/// Claude Code's selection: newest first by modification time, ties kept in walk order (a
/// stable sort, as JavaScript's), cut to [`MAX_MEMORY_FILES`].
pub fn select_for_manifest(mut headers: Vec<TopicHeader>) -> Vec<TopicHeader> {
    headers.sort_by_key(|h| std::cmp::Reverse(h.mtime_ns));
    headers.truncate(MAX_MEMORY_FILES);
    headers
}

/// `formatMemoryManifest`: one line per header, joined with `\n`:
/// `- [<type>] <relative path> (<ISO-8601 mtime>): <description>`, the `[<type>] ` part
/// omitted when there is no type and `: <description>` when there is no description.
pub fn format_manifest(headers: &[TopicHeader]) -> String {
    format_manifest_as(headers, true)
}

/// The manifest as a release that reads a memory's type from `metadata.type`
/// (`metadata_type`, 2.1.139 on) or only from a top-level `type` (older releases) writes it.
pub fn format_manifest_as(headers: &[TopicHeader], metadata_type: bool) -> String {
    let mut out = String::with_capacity(headers.len() * 96);
    for (i, h) in headers.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str("- ");
        if let Some(t) = if metadata_type { h.memory_type } else { h.top_level_type } {
            out.push('[');
            out.push_str(t.as_str());
            out.push_str("] ");
        }
        out.push_str(&h.rel_path);
        out.push_str(" (");
        out.push_str(&iso8601_millis(i128::from(h.mtime_ms)));
        out.push(')');
        if let Some(d) = &h.description {
            out.push_str(": ");
            out.push_str(d);
        }
    }
    out
}

impl Memdir {
    /// The manifest Claude Code would build for this folder right now. Like Claude Code,
    /// any error yields the empty string.
    pub fn manifest(&self) -> String {
        match self.scan_headers() {
            // The release that reads types under `metadata:` is the one that writes them there.
            Ok(scan) => format_manifest_as(&select_for_manifest(scan.headers), self.type_form() == Generation::Metadata),
            Err(_) => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    #[test]
    fn lines_match_claude_code() {
        let t = TestDir::new();
        t.write("user_role.md", "---\nname: role\ndescription: Senior Rust dev\nmetadata:\n  type: user\n---\n\nx");
        t.write("legacy.md", "---\ndescription: old style\ntype: feedback\n---\nx");
        t.write("untyped.md", "---\ndescription: no type here\ntype: opinion\n---\n");
        t.write("bare.md", "just text");
        t.write("team/shared.md", "---\ndescription: from the team\ntype: project\n---\n");
        t.set_mtime("user_role.md", 1_764_422_207, 123);
        t.set_mtime("legacy.md", 1_764_422_206, 0);
        t.set_mtime("untyped.md", 1_764_422_205, 999);
        t.set_mtime("bare.md", 1_764_422_204, 1);
        t.set_mtime("team/shared.md", 1_764_422_208, 0);
        assert_eq!(
            t.memdir().manifest(),
            "- [project] team/shared.md (2025-11-29T13:16:48.000Z): from the team\n\
             - [user] user_role.md (2025-11-29T13:16:47.123Z): Senior Rust dev\n\
             - [feedback] legacy.md (2025-11-29T13:16:46.000Z): old style\n\
             - untyped.md (2025-11-29T13:16:45.999Z): no type here\n\
             - bare.md (2025-11-29T13:16:44.001Z)"
        );
    }

    #[test]
    fn keeps_the_newest_200() {
        let t = TestDir::new();
        for i in 0..250 {
            let rel = format!("m{i:03}.md");
            t.write(&rel, &format!("---\ndescription: d{i}\n---\n"));
            t.set_mtime(&rel, 1_700_000_000 + i, 0);
        }
        let m = t.memdir().manifest();
        let lines: Vec<_> = m.lines().collect();
        assert_eq!(lines.len(), 200);
        assert!(lines[0].starts_with("- m249.md "), "{}", lines[0]);
        assert!(lines[199].starts_with("- m050.md "), "{}", lines[199]);
        assert!(!m.contains("m049.md"));
    }

    #[test]
    fn sub_millisecond_order_is_kept() {
        let t = TestDir::new();
        t.write("a.md", "a");
        t.write("b.md", "b");
        let set = |rel: &str, nanos: u32| {
            filetime::set_file_mtime(t.mem().join(rel), filetime::FileTime::from_unix_time(1_700_000_000, nanos)).unwrap()
        };
        set("a.md", 100_000);
        set("b.md", 900_000);
        assert_eq!(
            t.memdir().manifest(),
            "- b.md (2023-11-14T22:13:20.000Z)\n- a.md (2023-11-14T22:13:20.000Z)"
        );
    }

    #[test]
    fn only_the_first_30_lines_count() {
        let t = TestDir::new();
        let pad = |n: usize| -> String { (0..n).map(|i| format!("k{i}: v\n")).collect() };
        // Closing fence on line 30: still seen.
        t.write("fits.md", &format!("---\ndescription: fits\ntype: user\n{}---\nbody", pad(26)));
        // Closing fence on line 31: no frontmatter for Claude Code.
        t.write("late.md", &format!("---\ndescription: late\ntype: user\n{}---\nbody", pad(27)));
        t.set_mtime("fits.md", 1_700_000_001, 0);
        t.set_mtime("late.md", 1_700_000_000, 0);
        assert_eq!(
            t.memdir().manifest(),
            "- [user] fits.md (2023-11-14T22:13:21.000Z): fits\n- late.md (2023-11-14T22:13:20.000Z)"
        );
    }

    #[test]
    fn crlf_and_bom_headers() {
        let t = TestDir::new();
        t.write("w.md", "\u{FEFF}---\r\ndescription: windows\r\ntype: reference\r\n---\r\nbody\r\n");
        t.set_mtime("w.md", 0, 0);
        assert_eq!(t.memdir().manifest(), "- [reference] w.md (1970-01-01T00:00:00.000Z): windows");
    }
}
