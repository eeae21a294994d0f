//! The safety net every dream passes before it is applied, offline or model-driven: each line
//! the changeset takes out of a file (an index line, a topic file's line, every line of a file
//! it removes) must still be found somewhere in the memory folder after the change, or be
//! vouched for by the dream as a duplicate of something it keeps ([`Accounted`]). The result,
//! one [`Moved`] per removed line, is both the check and the "what moved where" report; a
//! dream with a line found nowhere is held for review whatever the folder's mode. The caller
//! gives the changeset as the apply writes it, with the index lines a removal takes with it
//! (`Dreams::as_applied`), so a line that goes with its memory is weighed, not counted as a
//! place the memory's text is found. [`dangling`] lists the index lines a dream would leave
//! pointing at nothing, which hold it too.
//!
//! Claude Code loads `MEMORY.md` into every session, so an index line can be the only copy of
//! what the model knows; that is why lines, not files, are the unit here. An index's lines are
//! its entries as Mneme's index reading splits them: a lone CR ends one in every release (no
//! release counts it as a line towards the cap), and split on LF alone a classic Mac index was
//! one line, weighed whole whatever the dream changed in it. A topic file's lines end at LF alone (CRLF
//! folded) in every release, as Claude Code's Read numbers them, so a lone CR there stays
//! inside its line (checked against 2.1.100, 2.1.197, 2.1.316 and 2.1.332 by
//! `crates/agent/tests/differential.rs`).
//!
//! "Found" is deliberately simple and explainable: the line's words (lower-cased letter and
//! digit runs, so punctuation, markdown and line wrapping do not matter) appear in one file in
//! the same order, or each of its clauses (split at `.,;:!?—–()|`) does, in one file (clauses
//! reordered or split over bullets). A reworded line is not found, so a model that rewrites
//! memories in its own words is held for review; the offline dream only moves text or says
//! what it rewrote.
//!
//! For an index entry, the link's title and the hook after it are checked separately (the
//! target path is a pointer, not knowledge); for a frontmatter block, only the `name:` and
//! `description:` values are knowledge (`type:` and the other fields are bookkeeping).

use mneme_agent::Changeset;
use mneme_core::frontmatter;
use mneme_core::versions::Profile;
use mneme_store::memdir::{parse_index, IndexDoc, Scope, INDEX_FILE};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::Path;

/// A line a dream removes and vouches for: `text`, taken out of `file`, is a duplicate or a
/// rewrite of what `kept_in` holds after the dream (the check still requires `kept_in` to be
/// there afterwards).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Accounted {
    /// Relative to the memory folder.
    pub file: String,
    /// The line as it was (compared trimmed).
    pub text: String,
    pub kept_in: String,
    /// In a phrase: "duplicate of …", "relative dates made absolute: …".
    pub why: String,
}

/// One line a dream takes out of a file, and where its text is afterwards.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Moved {
    /// The file it left, relative to the memory folder.
    pub from: String,
    /// The line as it was (trimmed).
    pub text: String,
    /// The whole file went to the trash.
    pub file_removed: bool,
    /// Where its text is after the dream: files the dream writes first, then files it does not
    /// touch, the file the line left last.
    pub found_in: Vec<String>,
    /// The parts of the line found nowhere after the dream; empty unless it is lost.
    pub missing: Vec<String>,
    /// Why the dream says the line is a duplicate or rewrite of something in `found_in`.
    pub duplicate: Option<String>,
    /// Fields a newer Mneme wrote here that this one does not know, written back with the
    /// record (see [`crate::history::DreamRecord::extra`]).
    #[serde(flatten, default, skip_serializing_if = "serde_json::Map::is_empty")]
    pub extra: mneme_core::own_files::Unknown,
}

impl Moved {
    /// Found nowhere after the dream: applying it would lose this text.
    pub fn lost(&self) -> bool {
        !self.missing.is_empty()
    }
}

/// Lower-case letter-and-digit runs.
pub fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()).map(str::to_lowercase).collect()
}

/// A piece of knowledge to look for: its words, and its clauses' words.
struct Piece {
    text: String,
    /// ` w1 w2 … `, as [`Searchable::joined`] holds text.
    whole: String,
    clauses: Vec<String>,
}

fn joined(words: &[String]) -> String {
    format!(" {} ", words.join(" "))
}

impl Piece {
    fn new(text: &str) -> Option<Piece> {
        let w = words(text);
        if w.is_empty() {
            return None;
        }
        let clauses = text
            .split(['.', ',', ';', ':', '!', '?', '—', '–', '(', ')', '|'])
            .map(words)
            .filter(|c| !c.is_empty())
            .map(|c| joined(&c))
            .collect();
        Some(Piece { text: text.trim().to_string(), whole: joined(&w), clauses })
    }

    fn shown(&self) -> String {
        self.text.clone()
    }
}

/// A file after the dream, prepared for lookups.
struct Searchable {
    rel: String,
    /// ` w1 w2 … ` — a piece is there, in order, when its own ` p1 p2 … ` is a substring.
    joined: String,
}

impl Searchable {
    fn new(rel: String, text: &str) -> Searchable {
        Searchable { rel, joined: joined(&words(text)) }
    }

    fn holds(&self, piece: &Piece) -> bool {
        self.joined.contains(&piece.whole) || piece.clauses.iter().all(|c| self.joined.contains(c.as_str()))
    }
}

/// Whether the file at `rel` is an index (`MEMORY.md`, `team/MEMORY.md`).
fn is_index(rel: &str) -> bool {
    rel == INDEX_FILE || rel.rsplit('/').next() == Some(INDEX_FILE)
}

/// The knowledge on one line: for an index entry its title and hook, for a frontmatter line
/// the value of `name:` / `description:` (nothing for other fields), otherwise the line.
fn pieces(rel: &str, line: &str, in_frontmatter: bool, root: &Path) -> Vec<String> {
    let line = line.trim();
    if in_frontmatter {
        return match line.split_once(':') {
            Some((key, value)) if matches!(key.trim(), "name" | "description") => {
                vec![value.trim().trim_matches(['"', '\'']).to_string()]
            }
            _ => Vec::new(),
        };
    }
    if is_index(rel) {
        if let Some(e) = parse_index(line, Scope::of(rel), root).into_iter().next().and_then(|l| l.entry) {
            return std::iter::once(e.title).chain(e.hook).collect();
        }
    }
    vec![line.to_string()]
}

/// Whether the lines of the file at `rel` end at a lone CR too: an index, whose entries Mneme
/// splits there in every release (`mneme_store`'s index reading; a lone CR never counts as a
/// line towards the cap, so the same entries load in every release).
fn lone_cr_ends_lines(rel: &str, _release: &Profile) -> bool {
    is_index(rel)
}

/// The lines of `content` with whether each sits in the frontmatter block: split on LF (a CR
/// before it off), and with `lone_cr` at each CR with no LF after it as well, as
/// [`IndexDoc::parse_as`] splits an index.
fn lines_of(content: &str, lone_cr: bool) -> Vec<(&str, bool)> {
    let body_start = frontmatter::block_bounds(content).map_or(0, |(_, b)| b);
    let b = content.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    for (i, &c) in b.iter().enumerate() {
        let end = match c {
            b'\n' if i > start && b[i - 1] == b'\r' => i - 1,
            b'\n' => i,
            b'\r' if lone_cr && b.get(i + 1) != Some(&b'\n') => i,
            _ => continue,
        };
        out.push((&content[start..end], start < body_start));
        start = i + 1;
    }
    out.push((&content[start..], start < body_start));
    out
}

/// The most of one file of the memory folder the check reads: what Mneme reads of a memory
/// whole (the memory folder's own cap).
const MAX_FILE_BYTES: u64 = 64 << 20;

/// Every file under `root` (symbolic links not followed), relative path → text.
fn read_folder(root: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(entries) = fs::read_dir(dir) else { return };
        for e in entries.flatten() {
            let p = e.path();
            let Ok(kind) = e.file_type() else { continue };
            if kind.is_dir() {
                walk(root, &p, out);
            } else if kind.is_file() {
                let Some(rel) = rel_of(root, &p) else { continue };
                // Listed as a plain file, but opened without waiting and read only as one, up to
                // what Mneme reads of any memory: a FIFO swapped in since the listing would
                // otherwise hold the dream (and the scheduler running it) for ever. A file not
                // read is not a place a line is found, so the dream is held for review.
                if let Ok((bytes, _)) = mneme_store::open::read_plain_capped(&p, MAX_FILE_BYTES) {
                    out.insert(rel, String::from_utf8_lossy(&bytes).into_owned());
                }
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(root, root, &mut out);
    out
}

fn rel_of(root: &Path, path: &Path) -> Option<String> {
    let rest = path.strip_prefix(root).ok()?;
    let parts: Option<Vec<&str>> = rest.components().map(|c| c.as_os_str().to_str()).collect();
    parts.map(|p| p.join("/")).filter(|p| !p.is_empty())
}

/// Checks `changeset` against the memory folder as it is on disk now (the folder it was made
/// from): every line it removes, and where that line's text is once it is applied. An index's
/// lines are those `release` (the dream's) reads in it.
pub fn check(changeset: &Changeset, accounted: &[Accounted], release: &Profile) -> Vec<Moved> {
    let root = &changeset.root;
    let mut after = read_folder(root);
    let mut written = HashSet::new();
    for c in &changeset.changes {
        let Some(rel) = rel_of(root, &c.path) else { continue };
        match &c.after {
            Some(text) => {
                after.insert(rel.clone(), text.clone());
                written.insert(rel);
            }
            None => {
                after.remove(&rel);
            }
        }
    }
    let files: Vec<Searchable> = after.iter().map(|(rel, text)| Searchable::new(rel.clone(), text)).collect();
    // What the dream vouches for, by the file the line left (in the dream's order): a dream
    // that merges thousands of copies vouches for five lines of each.
    let mut vouched: HashMap<&str, Vec<&Accounted>> = HashMap::new();
    for a in accounted {
        vouched.entry(a.file.as_str()).or_default().push(a);
    }
    let mut out = Vec::new();
    for c in &changeset.changes {
        let (Some(rel), Some(before)) = (rel_of(root, &c.path), c.before.as_deref()) else { continue };
        let lone_cr = lone_cr_ends_lines(&rel, release);
        let kept: HashSet<&str> = c.after.as_deref().map(|a| lines_of(a, lone_cr).into_iter().map(|(l, _)| l.trim()).collect()).unwrap_or_default();
        // Files the dream writes are where moved text most likely went; the file the line
        // left only counts when nothing else holds it.
        let mut order: Vec<&Searchable> = Vec::with_capacity(files.len());
        order.extend(files.iter().filter(|f| f.rel != rel && written.contains(&f.rel)));
        order.extend(files.iter().filter(|f| f.rel != rel && !written.contains(&f.rel)));
        order.extend(files.iter().filter(|f| f.rel == rel));
        let mut seen = HashSet::new();
        for (line, in_fm) in lines_of(before, lone_cr) {
            let trimmed = line.trim();
            if kept.contains(trimmed) || !seen.insert(trimmed) {
                continue;
            }
            let parts: Vec<Piece> = pieces(&rel, line, in_fm, root).iter().filter_map(|p| Piece::new(p)).collect();
            if parts.is_empty() {
                continue;
            }
            let mut moved = Moved {
                from: rel.clone(),
                text: trimmed.to_string(),
                file_removed: c.after.is_none(),
                found_in: Vec::new(),
                missing: Vec::new(),
                duplicate: None,
                extra: Default::default(),
            };
            let vouched_here = vouched.get(rel.as_str()).map(Vec::as_slice).unwrap_or_default();
            if let Some(a) = vouched_here.iter().find(|a| a.text.trim() == trimmed && after.contains_key(&a.kept_in)) {
                moved.found_in.push(a.kept_in.clone());
                moved.duplicate = Some(a.why.clone());
                out.push(moved);
                continue;
            }
            for part in &parts {
                match order.iter().find(|f| f.holds(part)) {
                    Some(f) => {
                        if !moved.found_in.contains(&f.rel) {
                            moved.found_in.push(f.rel.clone());
                        }
                    }
                    None => moved.missing.push(part.shown()),
                }
            }
            out.push(moved);
        }
    }
    out
}

/// An index line that, once a dream is applied, points at a memory that is not there: one the
/// dream removes while writing an index that still lists it, or a line the dream adds for a
/// file it never writes. Claude Code shows the line in every session and sends the model to a
/// file that does not exist, and Mneme's next offline dream would write the memory back from
/// the line, so such a dream is held for review. Lines that pointed nowhere before the dream
/// (a memory deleted by hand) are the dream's to mend, not its doing, and are not listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dangling {
    /// The index, relative to the memory folder.
    pub index: String,
    /// The line as it would be (trimmed).
    pub line: String,
    /// The memory it points at, relative to the memory folder.
    pub target: String,
}

/// The index lines `changeset`, applied as it stands, leaves pointing at nothing (see
/// [`Dangling`]), each index read as `release` (the dream's) reads it. Give it the changeset
/// as the apply writes it (`mneme_agent::with_index_edits`): a removal whose index the dream
/// does not write takes its index lines with it, and those leave nothing behind.
pub fn dangling(changeset: &Changeset, release: &Profile) -> Vec<Dangling> {
    let root = &changeset.root;
    let change_of = |rel: &str| changeset.changes.iter().find(|c| rel_of(root, &c.path).as_deref() == Some(rel));
    let there_before = |rel: &str| fs::symlink_metadata(root.join(rel)).is_ok();
    let there_after = |rel: &str| match change_of(rel) {
        Some(c) => c.after.is_some(),
        None => there_before(rel),
    };
    let mut out = Vec::new();
    for c in &changeset.changes {
        let (Some(rel), Some(after)) = (rel_of(root, &c.path), c.after.as_deref()) else { continue };
        if !is_index(&rel) {
            continue;
        }
        let lone_cr = lone_cr_ends_lines(&rel, release);
        let before: HashSet<&str> = c.before.as_deref().map(|b| lines_of(b, lone_cr).into_iter().map(|(l, _)| l.trim()).collect()).unwrap_or_default();
        let doc = IndexDoc::parse_as(after, release);
        for (at, entry) in doc.entries(Scope::of(&rel), root) {
            let text = doc.lines[at].text.trim();
            // The dream's doing: the memory was there before it, or the line is new.
            let made_here = there_before(&entry.rel_path) || !before.contains(text);
            if there_after(&entry.rel_path) || !made_here {
                continue;
            }
            out.push(Dangling { index: rel.clone(), line: text.to_string(), target: entry.rel_path });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_agent::FileChange;
    use mneme_core::versions::newest;

    struct F {
        d: tempfile::TempDir,
    }

    impl F {
        fn new(files: &[(&str, &str)]) -> F {
            let f = F { d: tempfile::tempdir().unwrap() };
            for (rel, text) in files {
                let p = f.d.path().join(rel);
                fs::create_dir_all(p.parent().unwrap()).unwrap();
                fs::write(p, text).unwrap();
            }
            f
        }
        /// A changeset from (file, after) pairs, `before` read from disk.
        fn changes(&self, changes: &[(&str, Option<&str>)]) -> Changeset {
            Changeset {
                root: self.d.path().to_path_buf(),
                changes: changes
                    .iter()
                    .map(|(rel, after)| FileChange {
                        path: self.d.path().join(rel),
                        before: fs::read_to_string(self.d.path().join(rel)).ok(),
                        after: after.map(str::to_string),
                        reason: String::new(),
                        extra: Default::default(),
                    })
                    .collect(),
                extra: Default::default(),
            }
        }
    }

    fn lost(m: &[Moved]) -> Vec<&str> {
        m.iter().filter(|m| m.lost()).map(|m| m.text.as_str()).collect()
    }

    #[test]
    fn a_dropped_index_line_whose_text_is_nowhere_else_is_lost() {
        let f = F::new(&[("MEMORY.md", "- [A](a.md) — alpha\n- [Jane](jane.md) — CLOSED — DO NOT CONTACT\n"), ("a.md", "Alpha.\n")]);
        let m = check(&f.changes(&[("MEMORY.md", Some("- [A](a.md) — alpha\n"))]), &[], &newest());
        assert_eq!(lost(&m), ["- [Jane](jane.md) — CLOSED — DO NOT CONTACT"]);
        assert_eq!(m[0].missing, ["Jane", "CLOSED — DO NOT CONTACT"], "{m:#?}");
    }

    #[test]
    fn text_moved_into_another_file_is_found_there_whatever_its_punctuation_or_wrapping() {
        let f = F::new(&[("MEMORY.md", "- [Jane](jane.md) — CLOSED — DO NOT CONTACT\n- prose fact about the deploy window\n")]);
        let cs = f.changes(&[
            ("MEMORY.md", Some("")),
            ("jane.md", Some("---\nname: Jane\ndescription: closed, do not\n  contact\n---\n")),
            ("notes.md", Some("The prose fact about\nthe deploy window.\n")),
        ]);
        let m = check(&cs, &[], &newest());
        assert!(lost(&m).is_empty(), "{m:#?}");
        assert_eq!(m.len(), 2);
        assert_eq!(m[0].found_in, ["jane.md"]);
        assert_eq!(m[1].found_in, ["notes.md"]);
    }

    #[test]
    fn a_removed_file_must_survive_line_by_line_and_frontmatter_bookkeeping_does_not_count() {
        let old = "---\nname: Old tabs\ndescription: prefers tabs\ntype: feedback\n---\n\nAlways indent with tabs.\nNever mix spaces in.\n";
        let f = F::new(&[("old.md", old), ("new.md", "---\nname: Tabs\ndescription: prefers tabs\n---\nAlways indent with tabs.\n")]);
        let m = check(&f.changes(&[("old.md", None)]), &[], &newest());
        assert_eq!(lost(&m), ["name: Old tabs", "Never mix spaces in."], "{m:#?}");
        assert!(m.iter().all(|x| x.file_removed));
        assert!(!m.iter().any(|x| x.text.starts_with("type:")));
        // Vouched for as a duplicate of what is kept: not lost, and said so.
        let vouch = Accounted { file: "old.md".into(), text: "name: Old tabs".into(), kept_in: "new.md".into(), why: "duplicate of new.md".into() };
        let m = check(&f.changes(&[("old.md", None)]), std::slice::from_ref(&vouch), &newest());
        assert_eq!(lost(&m), ["Never mix spaces in."]);
        let named = m.iter().find(|x| x.text == "name: Old tabs").unwrap();
        assert_eq!((named.found_in.as_slice(), named.duplicate.as_deref()), (&["new.md".to_string()][..], Some("duplicate of new.md")));
        // A voucher pointing at a file that is gone does not count.
        let m = check(&f.changes(&[("old.md", None), ("new.md", None)]), &[vouch], &newest());
        assert!(lost(&m).contains(&"name: Old tabs"), "{m:#?}");
    }

    #[test]
    fn a_reworded_line_is_lost_but_reordered_clauses_are_not() {
        let f = F::new(&[("a.md", "Use tabs, never spaces.\nDeploys freeze on Fridays; ask Sam first.\n")]);
        let m = check(&f.changes(&[("a.md", Some("Prefer tabs over spaces.\nAsk Sam first. Deploys freeze on Fridays.\n"))]), &[], &newest());
        assert_eq!(lost(&m), ["Use tabs, never spaces."], "{m:#?}");
    }

    /// A lone CR ends an index line in every release: a dropped line is weighed on its own, and
    /// an index line left pointing at a memory the dream removes is found past the first entry
    /// (up to 2.1.283 the index was once weighed as one line, and the dangling line was missed).
    #[test]
    fn a_lone_cr_index_is_weighed_line_by_line_in_every_release() {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        let (old, new) = (behaviours(ClaudeVersion::new(2, 1, 283)), behaviours(ClaudeVersion::new(2, 1, 284)));
        let f = F::new(&[("MEMORY.md", "# Index\r- [A](a.md) — alpha\r- [Jane](jane.md) — CLOSED — DO NOT CONTACT\r"), ("a.md", "Alpha.\n"), ("jane.md", "x\n")]);
        let dropped = f.changes(&[("MEMORY.md", Some("# Index\r- [A](a.md) — alpha\r"))]);
        for release in [&old, &new] {
            let m = check(&dropped, &[], release);
            assert_eq!(lost(&m), ["- [Jane](jane.md) — CLOSED — DO NOT CONTACT"], "{m:#?}");
            assert_eq!(m.len(), 1, "{m:#?}");
        }

        let kept = f.changes(&[("MEMORY.md", Some("# Index.\r- [A](a.md) — alpha\r- [Jane](jane.md) — CLOSED — DO NOT CONTACT\r")), ("jane.md", None)]);
        for release in [&old, &new] {
            let d = dangling(&kept, release);
            assert_eq!(d, [Dangling { index: "MEMORY.md".into(), line: "- [Jane](jane.md) — CLOSED — DO NOT CONTACT".into(), target: "jane.md".into() }]);
        }
    }

    /// A topic file's lines end at LF alone in every release, CRLF folded, as Claude Code's Read
    /// numbers them (2.1.100, 2.1.197, 2.1.316 and 2.1.332: `crates/agent/tests/differential.rs`,
    /// the `mac.md` and `mixed.md` reads): a lone CR stays inside its line. Only MEMORY.md's
    /// lone CRs end lines.
    #[test]
    fn a_topic_file_s_lines_end_at_lf_in_every_release() {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        for release in [behaviours(ClaudeVersion::new(2, 1, 283)), behaviours(ClaudeVersion::new(2, 1, 284))] {
            let f = F::new(&[("mac.md", "Tabs over spaces.\rDeploys freeze on Fridays.\r"), ("win.md", "Tabs over spaces.\r\nAsk Sam first.\r\n")]);
            // One line with its CRs inside: dropping a sentence takes the whole line, which then
            // is found nowhere as a whole.
            let m = check(&f.changes(&[("mac.md", Some("Tabs over spaces.\r"))]), &[], &release);
            assert_eq!(m.iter().map(|m| m.text.as_str()).collect::<Vec<_>>(), ["Tabs over spaces.\rDeploys freeze on Fridays."], "{m:#?}");
            // CRLF lines are LF lines: the dropped one alone is weighed.
            let m = check(&f.changes(&[("win.md", Some("Tabs over spaces.\r\n"))]), &[], &release);
            assert_eq!(lost(&m), ["Ask Sam first."], "{m:#?}");
            assert_eq!(m.len(), 1, "{m:#?}");
        }
    }

    #[test]
    fn unchanged_lines_and_wordless_lines_are_not_reported() {
        let f = F::new(&[("MEMORY.md", "# Index\n\n---\n- [A](a.md) — a\n")]);
        let m = check(&f.changes(&[("MEMORY.md", Some("# Index\n- [A](a.md) — a\n"))]), &[], &newest());
        assert!(m.is_empty(), "{m:#?}");
    }
}
