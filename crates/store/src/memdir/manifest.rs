//! The memory manifest exactly as Claude Code's recall selector and extraction agent see it
//! (`scanMemoryFiles` + `formatMemoryManifest` in `src/memdir/memoryScan.ts`).
//!
//! One note on types: Claude Code 2.1.88 read only a top-level `type:` here, while 2.1.197
//! writes `metadata: { type: }`. Mneme shows the type from either generation, on the
//! assumption that the reader moved with the writer.

use super::{FileState, Memdir, MemdirError, ProblemKind, TopicHeader, INDEX_FILE};
use std::path::PathBuf;
use mneme_core::versions::{Profile, Runtime};
use mneme_core::text::iso8601_millis;

/// `MAX_MEMORY_FILES` in `src/memdir/memoryScan.ts`: the manifest lists at most this many.
pub const MAX_MEMORY_FILES: usize = 200;

/// Claude Code's selection: newest first by modification time, ties kept in the order its
/// runtime lists the folder (a stable sort, as JavaScript's), cut to [`MAX_MEMORY_FILES`].
/// `headers` come in Mneme's walk order, which is Bun's (the order the file system keeps); Node
/// lists differently ([`node_listing_order`]). Files written in one go (a checkout, a copy)
/// often share their modification time to the nanosecond, so the tie order is what a folder
/// shows.
///
/// From 2.1.213 what lies in a folder inside `team/` is not listed (other team stores' mounts);
/// from 2.1.217 neither is a file or folder whose name starts with `.`, nor the top-level
/// `logs/`, `sessions/` and `proposals/`; from 2.1.326 a memory that is a symbolic link is
/// listed after the plain files.
pub fn select_for_manifest(headers: Vec<TopicHeader>, release: &Profile) -> Vec<TopicHeader> {
    let headers: Vec<TopicHeader> = headers.into_iter().map(|h| h.as_read_by(release)).collect();
    let mut headers = manifest_order(headers, release, |h| (&h.rel_path, h.symlink, h.mtime_ns));
    headers.truncate(MAX_MEMORY_FILES);
    headers
}

/// [`select_for_manifest`]'s order without the cut: what the release's scan lists of `items`
/// (by path), newest first, ties as its runtime lists them. `key` gives an item's relative
/// path, whether it was listed as a link, and its modification time in nanoseconds — all the
/// order depends on, so a folder can be ordered from `stat` alone and only its newest files read.
fn manifest_order<T>(mut items: Vec<T>, release: &Profile, key: impl Fn(&T) -> (&String, bool, i64)) -> Vec<T> {
    items.retain(|h| left_out_by_scan(key(h).0, release).is_none());
    if release.runtime == Runtime::Node {
        items.sort_by(|a, b| node_listing_order(key(a).0, key(b).0));
    }
    if release.memory_scan_links_last {
        // Stable: the files keep their order, then the links keep theirs.
        items.sort_by_key(|h| key(h).1);
    }
    items.sort_by_key(|h| std::cmp::Reverse(key(h).2));
    items
}

/// A file the release's scan lists, known by its `stat` before its head is read.
struct Listed {
    rel: String,
    abs: PathBuf,
    /// Listed as, or reached through, a symbolic link.
    symlink: bool,
    mtime_ns: i64,
}

/// Why the release's memory scan leaves a file out whatever it holds (see [`select_for_manifest`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LeftOut {
    /// Its name, or a folder's it lies in, starts with `.` (2.1.217 on).
    DotName,
    /// It lies in the top-level `logs/`, `sessions/` or `proposals/` (2.1.217 on); the folder
    /// as named.
    ReservedFolder(String),
    /// It lies in a folder inside `team/` (2.1.213 on).
    TeamSubfolder,
}

/// The folder names Claude Code reserves in the memory folder, as [`folder_key`] gives them.
pub const RESERVED_FOLDERS: [&str; 4] = ["team", "logs", "sessions", "proposals"];

/// Whether, and why, `release`'s memory scan leaves out the file at `rel` by its path alone.
pub fn left_out_by_scan(rel: &str, release: &Profile) -> Option<LeftOut> {
    if release.memory_scan_skips_dot_entries {
        if rel.split('/').any(|part| part.starts_with('.')) {
            return Some(LeftOut::DotName);
        }
        let first = rel.split('/').next().unwrap_or_default();
        if matches!(folder_key(first).as_str(), "logs" | "sessions" | "proposals") {
            return Some(LeftOut::ReservedFolder(first.to_string()));
        }
    }
    if release.memory_scan_skips_team_subfolders {
        // Split on either slash, as Claude Code does; `team` in any case from 2.1.217.
        let parts: Vec<&str> = rel.split(['/', '\\']).collect();
        let team = if release.memory_scan_skips_dot_entries { folder_key(parts[0]) == "team" } else { parts[0] == "team" };
        if team && parts.len() >= 3 {
            return Some(LeftOut::TeamSubfolder);
        }
    }
    None
}

/// A folder name as Claude Code compares it with the names it reserves in the memory folder
/// (`team`, `logs`, `sessions`, `proposals`): composed (NFC), trailing dots and spaces dropped,
/// lower case.
pub fn folder_key(name: &str) -> String {
    use unicode_normalization::UnicodeNormalization;
    let composed: String = name.nfc().collect();
    composed.trim_end_matches(['.', ' ']).to_lowercase()
}

/// The order Node's `fs.promises.readdir(dir, {recursive: true})` lists two files in (paths
/// relative to `dir`, `/`-separated): a folder's own entries first, sorted byte by byte (libuv
/// sorts `scandir`), then each of its sub-folders whole, the last by name first (the folders
/// still to list are a stack).
pub fn node_listing_order(a: &str, b: &str) -> std::cmp::Ordering {
    let (mut pa, mut pb) = (a.split('/'), b.split('/'));
    loop {
        match (pa.next(), pb.next()) {
            (Some(x), Some(y)) if x == y => continue,
            (Some(x), Some(y)) => {
                // The first place they part: a file here comes before anything in a sub-folder.
                let (x_is_file, y_is_file) = (pa.clone().next().is_none(), pb.clone().next().is_none());
                return match (x_is_file, y_is_file) {
                    (true, true) => x.as_bytes().cmp(y.as_bytes()),
                    (true, false) => std::cmp::Ordering::Less,
                    (false, true) => std::cmp::Ordering::Greater,
                    (false, false) => y.as_bytes().cmp(x.as_bytes()),
                };
            }
            (None, None) => return std::cmp::Ordering::Equal,
            // One path is a prefix of the other: only a folder and a file inside it.
            (None, Some(_)) => return std::cmp::Ordering::Less,
            (Some(_), None) => return std::cmp::Ordering::Greater,
        }
    }
}

/// `formatMemoryManifest`: one line per header, joined with `\n`:
/// `- [<type>] <relative path> (<ISO-8601 mtime>): <description>`, the `[<type>] ` part
/// omitted when there is no type and `: <description>` when there is no description.
pub fn format_manifest(headers: &[TopicHeader]) -> String {
    format_manifest_as(headers, &mneme_core::versions::newest())
}

/// The manifest as `release` writes it: from 2.1.139 a type under `metadata:` is read and a
/// description only when the YAML made it text; older releases read a top-level `type` only,
/// and show a number or other value as JavaScript prints it.
pub fn format_manifest_as(headers: &[TopicHeader], release: &Profile) -> String {
    let metadata_type = release.memory_type_in_metadata;
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
        let description = if release.manifest_text_descriptions { &h.text_description } else { &h.description };
        if let Some(d) = description.as_ref().filter(|d| !d.is_empty()) {
            out.push_str(": ");
            out.push_str(d);
        }
    }
    out
}

impl Memdir {
    /// The headers the release's manifest lists ([`Memdir::for_release`]), in its order.
    ///
    /// The files come from Mneme's scan; where the folder holds symbolic links, or the release
    /// walks sub-folders depth first (2.1.326 on), the release's own listing
    /// ([`super::listing`]) decides which entries there are and in what order, and what only
    /// it reaches (a link to a folder, a link out of the memory folder) is read where it leads.
    /// A listing the release cannot finish (a link back into the folder, before 2.1.326) is
    /// [`MemdirError::ListingFails`]: Claude Code's scan then lists nothing.
    pub fn manifest_headers(&self) -> Result<Vec<TopicHeader>, MemdirError> {
        let release = self.release();
        // Which files there are and their times come from `stat`; only the heads of the newest
        // are read, so the manifest of a folder of 10,000 memories reads about 200 files.
        let (stated, problems) = self.scan_states(false)?;
        let saw_links = stated.iter().any(|s| s.symlink)
            || problems.iter().any(|p| {
                matches!(p.kind, ProblemKind::SymlinkNotFollowed | ProblemKind::SymlinkOutside | ProblemKind::Unreadable)
            });
        let subfolders = stated.iter().any(|s| s.rel.contains('/'));
        // Mneme's walk is the recursive readdir's order (Bun's) when no link is involved.
        let listed: Vec<Listed> = if !(saw_links || release.memory_scan_links_last && subfolders) {
            stated
                .into_iter()
                .filter_map(|s| Some(Listed { mtime_ns: s.state?.mtime_ns, rel: s.rel, abs: s.abs, symlink: false }))
                .collect()
        } else {
            let root = self.real_root()?;
            let listing = super::listing::list(&root, release.memory_scan_links_last).map_err(|f| MemdirError::ListingFails {
                release: if release.memory_scan_links_last { "2.1.326 and later" } else { "before 2.1.326" }.to_string(),
                link: f.link,
                reason: f.reason,
            })?;
            listing
                .into_iter()
                .filter(|l| {
                    let name = l.rel.rsplit('/').next().unwrap_or(&l.rel);
                    name.ends_with(".md") && name != INDEX_FILE
                })
                // Where the entry leads, as its head will be read: a file reached through a
                // link is listed at the time of the file it leads to.
                .filter_map(|l| {
                    let meta = std::fs::metadata(&l.path).ok().filter(|m| m.is_file())?;
                    Some(Listed { mtime_ns: super::revision::mtime_ns(&meta), rel: l.rel, abs: l.path, symlink: l.via_link })
                })
                .collect()
        };
        let mut buf = Vec::new();
        let mut headers = Vec::with_capacity(MAX_MEMORY_FILES.min(listed.len()));
        // A file whose head cannot be read is left out, as Claude Code leaves out a read that
        // fails, and the next newest takes its place.
        for l in manifest_order(listed, release, |l| (&l.rel, l.symlink, l.mtime_ns)) {
            if headers.len() == MAX_MEMORY_FILES {
                break;
            }
            let header = if l.symlink {
                super::scan::header_at(l.rel, l.abs, true, &mut buf)
            } else {
                super::scan::header_of_plain(l.rel, l.abs, &mut buf)
            };
            headers.extend(header.map(|h| h.as_read_by(release)));
        }
        // A file written between its `stat` and its read carries its new time: keep the list
        // newest first (stable, so it changes nothing otherwise).
        headers.sort_by_key(|h| std::cmp::Reverse(h.mtime_ns));
        Ok(headers)
    }

    /// Every topic file's relative path and `stat` (a plain file's; `None` when `stat`
    /// failed, it is not a plain file, or its mode refuses this process a read: the scan lists
    /// none of those as a memory), and whether the walk found it as a symbolic link, in walk
    /// order, none opened: what ordering the memory list newest first needs, so a page of a
    /// folder of thousands reads only its own rows, and counts the memories the scan lists.
    /// A missing memory folder lists nothing.
    pub fn listing_with_stats(&self) -> Result<Vec<(String, Option<FileState>, bool)>, MemdirError> {
        Ok(self.scan_states(true)?.0.into_iter().map(|s| (s.rel, s.state, s.symlink)).collect())
    }

    /// The manifest Claude Code would build for this folder right now. Like Claude Code,
    /// any error yields the empty string.
    pub fn manifest(&self) -> String {
        match self.manifest_headers() {
            Ok(headers) => format_manifest_as(&headers, self.release()),
            Err(_) => String::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;

    /// The manifest's files, in its order, as Claude Code 2.1.`patch` lists the folder.
    fn listed_by(t: &TestDir, patch: u32) -> Vec<String> {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        let release = behaviours(ClaudeVersion::new(2, 1, patch));
        t.memdir().for_release(&release).manifest_headers().unwrap().into_iter().map(|h| h.rel_path).collect()
    }

    fn sorted(mut v: Vec<String>) -> Vec<String> {
        v.sort();
        v
    }

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

    /// Node 20 listed this tree as `B.md a a.md b c z.md c/4.md b/3.md a/1.md a/Z.md a/x
    /// a/x/2.md` (`fs.promises.readdir(dir, {recursive: true})`).
    #[test]
    fn node_lists_a_folder_sorted_and_its_sub_folders_last_first() {
        let mut paths = vec!["a/x/2.md", "z.md", "b/3.md", "a/Z.md", "a.md", "c/4.md", "B.md", "a/1.md"];
        paths.sort_by(|a, b| super::node_listing_order(a, b));
        assert_eq!(paths, ["B.md", "a.md", "z.md", "c/4.md", "b/3.md", "a/1.md", "a/Z.md", "a/x/2.md"]);
    }

    /// Files written in one go share their modification time; the manifest then lists them
    /// in the order the release's runtime listed the folder (checked against 2.1.100 on Node
    /// and 2.1.138 to 2.1.332 on Bun with real memory folders, docs/claude-code-versions.md).
    #[test]
    fn ties_keep_the_runtimes_listing_order() {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        let t = TestDir::new();
        for rel in ["b.md", "A.md", "team/c.md", "a.md"] {
            t.write(rel, "---\ndescription: d\n---\n");
            t.set_mtime(rel, 1_700_000_000, 0);
        }
        let names = |m: &str| m.lines().map(|l| l[2..].split(' ').next().unwrap().to_string()).collect::<Vec<_>>();
        let node = t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, 100)));
        assert_eq!(names(&node.manifest()), ["A.md", "a.md", "b.md", "team/c.md"]);
        // Bun lists in the file system's order, which is Mneme's walk order.
        let bun = t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, 138)));
        let walked: Vec<String> = t.memdir().scan_headers().unwrap().headers.into_iter().map(|h| h.rel_path).collect();
        assert_eq!(names(&bun.manifest()), walked);
    }

    /// From 2.1.139 (checked on the real binaries, docs/claude-code-versions.md) a description
    /// the YAML does not make text is not shown; before, it was printed as JavaScript prints it.
    #[test]
    fn only_text_descriptions_from_2_1_139() {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        let t = TestDir::new();
        t.write("number.md", "---\ndescription: 12345\ntype: user\n---\n");
        t.write("quoted.md", "---\ndescription: \"12345\"\ntype: user\n---\n");
        t.set_mtime("number.md", 1_700_000_001, 0);
        t.set_mtime("quoted.md", 1_700_000_000, 0);
        let at = |patch| t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, patch))).manifest();
        assert_eq!(
            at(138),
            "- [user] number.md (2023-11-14T22:13:21.000Z): 12345\n- [user] quoted.md (2023-11-14T22:13:20.000Z): 12345"
        );
        assert_eq!(
            at(139),
            "- [user] number.md (2023-11-14T22:13:21.000Z)\n- [user] quoted.md (2023-11-14T22:13:20.000Z): 12345"
        );
    }

    /// Checked on the real binaries: 2.1.216 lists `.dot.md` and `.hidden/h.md`, 2.1.217 neither.
    #[test]
    fn dot_entries_are_left_out_from_2_1_217() {
        let t = TestDir::new();
        for rel in ["a.md", ".dot.md", ".hidden/h.md", "team/.x.md", "team/b.md"] {
            t.write(rel, "---\ndescription: d\n---\n");
        }
        let listed = |patch| sorted(listed_by(&t, patch));
        assert_eq!(listed(216), [".dot.md", ".hidden/h.md", "a.md", "team/.x.md", "team/b.md"]);
        assert_eq!(listed(217), ["a.md", "team/b.md"]);
    }

    /// Checked on the real binaries: among files of one time, 2.1.325 lists a link where the
    /// folder has it, 2.1.326 after the plain files.
    #[test]
    fn links_come_after_plain_files_from_2_1_326() {
        let t = TestDir::new();
        t.write("a.md", "---\ndescription: a\n---\n");
        t.write("z.md", "---\ndescription: z\n---\n");
        std::os::unix::fs::symlink("a.md", t.mem().join("link.md")).unwrap();
        for rel in ["a.md", "z.md"] {
            t.set_mtime(rel, 1_700_000_000, 0);
        }
        let order = |patch| listed_by(&t, patch);
        let walked: Vec<String> = t.memdir().scan_headers().unwrap().headers.into_iter().map(|h| h.rel_path).collect();
        assert_eq!(order(325), walked);
        let last = order(326);
        assert_eq!(last.last().map(String::as_str), Some("link.md"), "{last:?}");
        assert_eq!(last.iter().filter(|r| *r != "link.md").collect::<Vec<_>>(), walked.iter().filter(|r| *r != "link.md").collect::<Vec<_>>());
    }

    /// The same tree through 2.1.210, 2.1.213, 2.1.216, 2.1.217, 2.1.250 and 2.1.332
    /// (`scripts/manifest-sweep.sh`): 2.1.213 stops listing folders inside `team/`, 2.1.217
    /// the top-level `logs/`, `sessions/` and `proposals/` and `team` in any spelling.
    #[test]
    fn reserved_folders_are_left_out_as_each_release_leaves_them() {
        let t = TestDir::new();
        let all = [
            "a.md", "team/t.md", "team/sub/ts.md", "Team/sub/up.md", "team./x/y.md", "logs/l.md", "logs/2026/01/d.md",
            "sessions/s.md", "proposals/p.md", "Proposals/q.md", "sub/logs/n.md", "sub/team/x/deep.md", "other/deep/c.md",
        ];
        for rel in all {
            t.write(rel, "---\ndescription: d\n---\n");
        }
        let listed = |patch| sorted(listed_by(&t, patch));
        let mut every: Vec<String> = all.iter().map(|s| s.to_string()).collect();
        every.sort();
        assert_eq!(listed(210), every);
        let without_team_sub: Vec<String> = every.iter().filter(|r| *r != "team/sub/ts.md").cloned().collect();
        assert_eq!(listed(213), without_team_sub);
        assert_eq!(listed(216), without_team_sub);
        let newer = ["a.md", "other/deep/c.md", "sub/logs/n.md", "sub/team/x/deep.md", "team/t.md"];
        assert_eq!(listed(217), newer);
        assert_eq!(listed(332), newer);
    }

    /// Checked on 2.1.207/2.1.208 and 2.1.296/2.1.299 (`scripts/manifest-sweep.sh`): from
    /// 2.1.208 a head keeps whole lines within 64 KiB, so a frontmatter closing later is not
    /// seen; from 2.1.299 a file with the UTF-16LE byte-order mark is decoded.
    #[test]
    fn heads_are_read_as_each_release_reads_them() {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        let t = TestDir::new();
        t.write("huge.md", &format!("---\ndescription: {}\n---\nbody\n", "x".repeat(70_000)));
        t.write("big.md", &format!("---\ndescription: {}END\n---\nbody\n", "y".repeat(30_000)));
        let utf16: Vec<u8> = "\u{feff}---\r\ndescription: sixteen\r\ntype: user\r\n---\r\nbody\r\n"
            .encode_utf16()
            .flat_map(u16::to_le_bytes)
            .collect();
        t.write_bytes("utf16.md", &utf16);
        t.set_mtime("huge.md", 1_700_000_003, 0);
        t.set_mtime("big.md", 1_700_000_002, 0);
        t.set_mtime("utf16.md", 1_700_000_001, 0);
        let described = |patch| -> Vec<(String, bool)> {
            t.memdir()
                .for_release(&behaviours(ClaudeVersion::new(2, 1, patch)))
                .manifest_headers()
                .unwrap()
                .into_iter()
                .map(|h| (h.rel_path, h.description.is_some()))
                .collect()
        };
        let s = |r: &str, d: bool| (r.to_string(), d);
        assert_eq!(described(207), [s("huge.md", true), s("big.md", true), s("utf16.md", false)]);
        assert_eq!(described(208), [s("huge.md", false), s("big.md", true), s("utf16.md", false)]);
        assert_eq!(described(296), [s("huge.md", false), s("big.md", true), s("utf16.md", false)]);
        assert_eq!(described(299), [s("huge.md", false), s("big.md", true), s("utf16.md", true)]);
        let m = t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, 332))).manifest();
        assert!(m.ends_with("- [user] utf16.md (2023-11-14T22:13:21.000Z): sixteen"), "{m}");
    }

    /// Checked on 2.1.100 (Node), 2.1.138 and 2.1.197: Node's strict YAML gives a block with tab
    /// indentation or a repeated key no frontmatter, Bun 1.3 refuses a tab-first line inside a
    /// mapping's second entry until 2.1.163 untabs it on the retry, and a number prints as
    /// JavaScript prints it (`.inf` is `Infinity`) before 2.1.139.
    #[test]
    fn node_releases_read_heads_strictly() {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        let t = TestDir::new();
        t.write("tabmeta.md", "---\ndescription: tm\nmetadata:\n\ttype: user\n---\n");
        t.write("dupkey.md", "---\ndescription: first\ndescription: second\n---\n");
        t.write("infinity.md", "---\ndescription: .inf\n---\n");
        t.write("big.md", "---\ndescription: 1e21\n---\n");
        for (i, rel) in ["tabmeta.md", "dupkey.md", "infinity.md", "big.md"].iter().enumerate() {
            t.set_mtime(rel, 1_700_000_010 - i as i64, 0);
        }
        let at = |patch| t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, patch))).manifest();
        let descriptions = |m: String| m.lines().map(|l| l.split_once("): ").map(|(_, d)| d.to_string())).collect::<Vec<_>>();
        let s = |d: &str| Some(d.to_string());
        assert_eq!(descriptions(at(100)), [None, None, s("Infinity"), s("1e+21")]);
        assert_eq!(descriptions(at(138)), [None, s("second"), s("Infinity"), s("1e+21")]);
        assert_eq!(descriptions(at(163)), [s("tm"), s("second"), None, None]);
        assert_eq!(descriptions(at(197)), [s("tm"), s("second"), None, None]);
    }

    /// Links to folders and out of the memory folder, as real releases list them
    /// (`scripts/manifest-sweep.sh` on the same tree: 2.1.100, 2.1.197, 2.1.325, 2.1.326,
    /// 2.1.332). Times differ where the file system's own order would otherwise decide.
    #[test]
    fn links_are_followed_as_each_release_follows_them() {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        use std::os::unix::fs::symlink;
        let t = TestDir::new();
        let outside = t.path().join("outside");
        std::fs::create_dir_all(&outside).unwrap();
        for (rel, secs) in [("a.md", 5), ("b.md", 4), ("sub/c.md", 1)] {
            t.write(rel, &format!("---\ndescription: {rel}\n---\n"));
            t.set_mtime(rel, 1_700_000_000 + secs, 0);
        }
        for (name, secs) in [("o.md", 2), ("o2.md", 1)] {
            std::fs::write(outside.join(name), format!("---\ndescription: {name} outside\n---\n")).unwrap();
            filetime::set_file_mtime(outside.join(name), filetime::FileTime::from_unix_time(1_700_000_000 + secs, 0)).unwrap();
        }
        for (link, target) in [
            ("filelink.md", "a.md"),
            ("zlink.md", "sub/c.md"),
            ("outfile.md", "../outside/o2.md"),
            ("outlink", "../outside"),
            ("dirlink", "sub"),
            ("nowhere.md", "../no-such-file.md"),
        ] {
            symlink(target, t.mem().join(link)).unwrap();
        }
        let listed = |patch| listed_by(&t, patch);
        // Node: each folder sorted, sub-folders (links to folders among them) last-first.
        assert_eq!(
            listed(100),
            ["a.md", "filelink.md", "b.md", "outlink/o.md", "outfile.md", "zlink.md", "sub/c.md", "outlink/o2.md", "dirlink/c.md"]
        );
        // Bun's recursive listing: the same entries (its order among sub-folders varies).
        let mut bun = listed(197);
        assert_eq!(bun[2..4], ["b.md", "outlink/o.md"]);
        bun.sort();
        assert_eq!(bun, ["a.md", "b.md", "dirlink/c.md", "filelink.md", "outfile.md", "outlink/o.md", "outlink/o2.md", "sub/c.md", "zlink.md"]);
        // 2.1.326's own walk: plain files first, then the links in sorted order; `dirlink`
        // leads to a folder already walked.
        let own = ["a.md", "filelink.md", "b.md", "outlink/o.md", "sub/c.md", "outfile.md", "outlink/o2.md", "zlink.md"];
        assert_eq!(listed(326), own);
        assert_eq!(listed(332), own);
        // What a link leads to is read there: the description and time are the target's.
        let m = t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, 332))).manifest();
        assert!(m.contains("- outfile.md (2023-11-14T22:13:21.000Z): o2.md outside"), "{m}");

        // A link back into the folder: the recursive listing never ends, so those releases
        // list nothing; 2.1.326 on walks no folder twice.
        symlink(".", t.mem().join("sub/loop")).unwrap();
        let err = t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, 197))).manifest_headers().unwrap_err();
        assert_eq!(err.code(), "listing-fails");
        assert!(err.to_string().contains("/loop leads back"), "{err}");
        assert_eq!(t.memdir().for_release(&behaviours(ClaudeVersion::new(2, 1, 100))).manifest(), "");
        assert_eq!(listed(332), own);
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
