//! A MEMORY.md whose lines end in a lone CR (a classic Mac editor's line end) is one line per
//! entry from Claude Code 2.1.284 (`Profile::memory_index_crlf_to_lf`). The offline dream reads
//! such an index line by line, writes back only the lines it changes (each other line keeps its
//! bytes and its lone CR), and measures the cap on the file's own text: a lone CR ends a line
//! for the model but counts no line towards the 200.

use mneme_core::{Clock, FixedClock};
use mneme_dream::offline::{consolidate, OfflineOptions, Plan, OVERFLOW_FILE};
use mneme_store::memdir::{loaded_index_lines_as, Memdir};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

const NOW: u64 = 1_778_000_000;

fn topic(name: &str, desc: &str, kind: &str) -> String {
    format!("---\nname: {name}\ndescription: {desc}\nmetadata:\n  type: {kind}\n---\n\n{name} body.\n")
}

struct T {
    dir: tempfile::TempDir,
}

impl T {
    fn new() -> T {
        let t = T { dir: tempfile::tempdir().unwrap() };
        std::fs::create_dir_all(t.mem()).unwrap();
        t
    }
    fn mem(&self) -> PathBuf {
        self.dir.path().join("memory")
    }
    fn write(&self, rel: &str, text: &str) {
        std::fs::write(self.mem().join(rel), text).unwrap();
    }
    fn plan(&self) -> Plan {
        let clock: Arc<dyn Clock> = Arc::new(FixedClock::at_unix_secs(NOW));
        let memdir = Memdir::new(self.mem(), self.dir.path().join("trash"), clock);
        consolidate(&memdir, OfflineOptions { zone: mneme_store::local_time::LocalZone::Fixed(0), since: None, now: UNIX_EPOCH + Duration::from_secs(NOW) }).unwrap()
    }
}

fn after<'p>(p: &'p Plan, at: &Path) -> Option<&'p str> {
    p.changeset.changes.iter().find(|c| c.path == at).and_then(|c| c.after.as_deref())
}

const A: &str = "- [Alpha](a.md) — first";
const B: &str = "- [Bravo](b.md) — second";
const C: &str = "- [Charlie](c.md) — third";

/// Every memory listed on its own lone-CR line is indexed: before, the dream saw one line with
/// only the first memory in it and added a second line for each of the others.
#[test]
fn a_tidy_lone_cr_index_is_left_as_it_is() {
    let t = T::new();
    for (n, kind) in [("a", "user"), ("b", "feedback"), ("c", "project")] {
        t.write(&format!("{n}.md"), &topic(n, &format!("{n} desc"), kind));
    }
    for index in [format!("# Memory\r{A}\r{B}\r{C}\r"), format!("# Memory\r{A}\r{B}\r{C}"), format!("\u{FEFF}# Memory\r\n{A}\r{B}\n{C}\r")] {
        t.write("MEMORY.md", &index);
        let p = t.plan();
        assert!(p.changeset.changes.is_empty(), "{index:?}: {:#?}", p.changeset.changes);
    }
}

/// A line whose file is missing is written back as a memory, a repeated line goes, and an
/// unindexed memory gets a line ending in a lone CR like the others; every other line keeps
/// its bytes and its end.
#[test]
fn the_dream_edits_a_lone_cr_index_line_by_line() {
    let t = T::new();
    t.write("a.md", &topic("a", "a desc", "user"));
    t.write("c.md", &topic("c", "c desc", "project"));
    t.write("d.md", &topic("d", "d desc", "reference"));
    t.write("MEMORY.md", &format!("# Memory\r{A}\r{B}\r- [Alpha again](a.md) — first\r{C}\r"));
    let p = t.plan();
    let mem = t.mem();
    assert_eq!(after(&p, &mem.join("MEMORY.md")), Some(format!("# Memory\r{A}\r{B}\r{C}\r- [d](d.md) — d desc\r").as_str()), "{:#?}", p.changeset.changes);
    let b = after(&p, &mem.join("b.md")).expect("b.md written back from its line");
    assert!(b.contains("second"), "{b}");
    assert_eq!((p.stats.index_recreated, p.stats.index_removed, p.stats.index_added), (1, 1, 1), "{:?}", p.stats);
}

/// 250 short entries on lone-CR lines are one line to the cap and far under 25,000 units, so
/// Claude Code loads them all and none moves out; measured with each lone CR made LF they
/// were 250 lines and 50 of them were moved.
#[test]
fn a_lone_cr_index_of_many_short_lines_is_within_the_cap() {
    let t = T::new();
    let mut index = String::new();
    for i in 0..250 {
        t.write(&format!("m{i:03}.md"), &topic(&format!("m{i:03}"), &format!("d{i}"), "project"));
        index.push_str(&format!("- [m{i:03}](m{i:03}.md) — d{i}\r"));
    }
    t.write("MEMORY.md", &index);
    let p = t.plan();
    assert!(p.changeset.changes.is_empty(), "{:#?}", p.changeset.changes.iter().map(|c| &c.reason).collect::<Vec<_>>());
}

/// Past 25,000 units, entries move out until the file as written fits, no more: the lines that
/// stay keep their lone CRs (over 200 of them, which the line cap does not count) and the link
/// to the overflow file ends in one too.
#[test]
fn a_lone_cr_index_past_the_unit_cap_keeps_as_many_lines_as_fit() {
    let t = T::new();
    let mut index = String::new();
    for i in 0..250 {
        let hook = format!("d{i} {}", "x".repeat(85));
        t.write(&format!("m{i:03}.md"), &topic(&format!("m{i:03}"), &hook, "project"));
        index.push_str(&format!("- [m{i:03}](m{i:03}.md) — {hook}\r"));
    }
    t.write("MEMORY.md", &index);
    let p = t.plan();
    let text = after(&p, &t.mem().join("MEMORY.md")).expect("the index changes").to_string();
    assert!(loaded_index_lines_as(&text, &mneme_core::versions::newest()).iter().all(|f| *f), "within the cap");
    assert!(!text.contains('\n'), "every line keeps its lone CR");
    let lines: Vec<&str> = text.strip_suffix('\r').unwrap().split('\r').collect();
    assert!(lines.len() > 201, "{} lines kept", lines.len());
    assert!(lines.last().unwrap().contains(OVERFLOW_FILE), "{:?}", lines.last());
    // No more moved than needed: one more entry line (under 130 units) would not fit.
    assert_eq!(lines.len() - 1 + p.stats.index_demoted, 250);
    assert!(mneme_core::text::utf16_len(&text) + 130 > 25_000, "{} units", mneme_core::text::utf16_len(&text));
    // Each entry that stayed is its own line, as it was written.
    for l in &lines[..lines.len() - 1] {
        assert!(index.contains(&format!("{l}\r")), "{l}");
    }
}
