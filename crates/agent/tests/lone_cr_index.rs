//! A MEMORY.md whose lines end in a lone CR (a classic Mac editor's line end) is one line per
//! entry from Claude Code 2.1.284 (`Profile::memory_index_crlf_to_lf`), and the store reads and
//! edits it so. The index edits a changeset's removals take with them
//! (`with_index_edits`) are the store's delete written out, so they take only the removed
//! memory's line out of such an index, never the line that held the whole index. Both follow
//! the release they are given (the user's), as the store's delete for that release does: up to
//! 2.1.283 the CR stays inside its line.

use mneme_agent::{apply_changeset, with_index_edits, Changeset, FileChange};
use mneme_core::versions::{behaviours, ClaudeVersion, Profile};
use mneme_core::{Clock, FixedClock};
use mneme_store::memdir::Memdir;
use std::path::Path;
use std::sync::Arc;

fn clock() -> Arc<dyn Clock> {
    Arc::new(FixedClock::at_unix_secs(1_764_422_207))
}

/// The first release that ends an index line at a lone CR, and the last that does not.
fn new() -> Profile {
    behaviours(ClaudeVersion::new(2, 1, 284))
}

fn old() -> Profile {
    behaviours(ClaudeVersion::new(2, 1, 283))
}

const LONE_CR: &str = "# Memory\r- [Alpha](a.md) — first\r- [Bravo](b.md) — second\r- [Charlie](c.md) — third\r";

/// A folder with `a.md`, `b.md`, `c.md` and `index` as its MEMORY.md, and a changeset that
/// removes `removed` and writes nothing else.
fn folder(mem: &Path, index: &str, removed: &str) -> Changeset {
    std::fs::create_dir_all(mem).unwrap();
    for n in ["a", "b", "c"] {
        std::fs::write(mem.join(format!("{n}.md")), format!("{n} body\n")).unwrap();
    }
    std::fs::write(mem.join("MEMORY.md"), index).unwrap();
    let change = FileChange {
        path: mem.join(removed),
        before: Some(format!("{} body\n", removed.trim_end_matches(".md"))),
        after: None,
        reason: "test".into(),
        extra: Default::default(),
    };
    Changeset { root: mem.to_path_buf(), changes: vec![change], extra: Default::default() }
}

fn index_after(cs: &Changeset, mem: &Path) -> Option<String> {
    cs.changes.iter().find(|c| c.path == mem.join("MEMORY.md")).and_then(|c| c.after.clone())
}

/// Removing the first memory took the one "line" of a lone-CR index, every other entry with
/// it; removing another found no line for it and left it listed.
#[test]
fn a_removal_takes_only_its_own_line_out_of_a_lone_cr_index() {
    for (removed, want) in [
        ("a.md", "# Memory\r- [Bravo](b.md) — second\r- [Charlie](c.md) — third\r"),
        ("b.md", "# Memory\r- [Alpha](a.md) — first\r- [Charlie](c.md) — third\r"),
        ("c.md", "# Memory\r- [Alpha](a.md) — first\r- [Bravo](b.md) — second\r"),
    ] {
        let t = tempfile::tempdir().unwrap();
        let mem = t.path().join("mem");
        let cs = folder(&mem, LONE_CR, removed);
        let out = with_index_edits(&cs, &t.path().join("trash"), clock(), &new()).unwrap();
        assert_eq!(index_after(&out, &mem).as_deref(), Some(want), "removing {removed}");
        let index = out.changes.iter().find(|c| c.path == mem.join("MEMORY.md")).unwrap();
        assert_eq!(index.before.as_deref(), Some(LONE_CR));
        assert!(index.reason.contains(removed), "{}", index.reason);
        // Applied, the folder is as the planned changeset leaves it: the memory gone, its line
        // gone, every other line as it was.
        apply_changeset(&out, &t.path().join("trash"), clock(), &new()).unwrap();
        assert!(!mem.join(removed).exists());
        assert_eq!(std::fs::read_to_string(mem.join("MEMORY.md")).unwrap(), want);
    }
}

/// Both indexes at once: a private and a team memory removed, each takes its own line out of
/// its own lone-CR index.
#[test]
fn removals_take_their_lines_out_of_both_lone_cr_indexes() {
    let t = tempfile::tempdir().unwrap();
    let mem = t.path().join("mem");
    let mut cs = folder(&mem, LONE_CR, "b.md");
    std::fs::create_dir_all(mem.join("team")).unwrap();
    std::fs::write(mem.join("team/x.md"), "x body\n").unwrap();
    std::fs::write(mem.join("team/MEMORY.md"), "- [X](x.md) — team\r- [Y](y.md) — team too\r").unwrap();
    cs.changes.push(FileChange { path: mem.join("team/x.md"), before: Some("x body\n".into()), after: None, reason: "test".into(), extra: Default::default() });
    let out = with_index_edits(&cs, &t.path().join("trash"), clock(), &new()).unwrap();
    assert_eq!(index_after(&out, &mem).as_deref(), Some("# Memory\r- [Alpha](a.md) — first\r- [Charlie](c.md) — third\r"));
    let team_after = out.changes.iter().find(|c| c.path == mem.join("team/MEMORY.md")).and_then(|c| c.after.clone());
    assert_eq!(team_after.as_deref(), Some("- [Y](y.md) — team too\r"));
}

/// LF, CRLF and mixed indexes (no lone CR) come out byte for byte as they always did.
#[test]
fn lf_and_crlf_indexes_are_edited_as_before() {
    for (index, want) in [
        ("# Memory\n- [Alpha](a.md) — first\n- [Bravo](b.md) — second\n- [Charlie](c.md) — third\n", "# Memory\n- [Alpha](a.md) — first\n- [Charlie](c.md) — third\n"),
        ("# Memory\r\n- [Alpha](a.md) — first\r\n- [Bravo](b.md) — second\r\n- [Charlie](c.md) — third", "# Memory\r\n- [Alpha](a.md) — first\r\n- [Charlie](c.md) — third"),
        ("\u{FEFF}# Memory\r\n- [Alpha](a.md) — first\n- [Bravo](b.md) — second\r\n- [Charlie](c.md) — third\n", "\u{FEFF}# Memory\r\n- [Alpha](a.md) — first\n- [Charlie](c.md) — third\n"),
    ] {
        let t = tempfile::tempdir().unwrap();
        let mem = t.path().join("mem");
        let cs = folder(&mem, index, "b.md");
        let out = with_index_edits(&cs, &t.path().join("trash"), clock(), &new()).unwrap();
        assert_eq!(index_after(&out, &mem).as_deref(), Some(want), "{index:?}");
    }
}

/// Lone CRs mixed with LF and CRLF: each kept line keeps its own end.
#[test]
fn each_kept_line_keeps_its_own_end_in_a_mixed_index() {
    let t = tempfile::tempdir().unwrap();
    let mem = t.path().join("mem");
    let index = "\u{FEFF}# Memory\r\n- [Alpha](a.md) — first\r- [Bravo](b.md) — second\n- [Charlie](c.md) — third\r";
    let cs = folder(&mem, index, "b.md");
    let out = with_index_edits(&cs, &t.path().join("trash"), clock(), &new()).unwrap();
    assert_eq!(index_after(&out, &mem).as_deref(), Some("\u{FEFF}# Memory\r\n- [Alpha](a.md) — first\r- [Charlie](c.md) — third\r"));
}

/// The user's release decides, for the removal written out and for the apply alike: each
/// leaves MEMORY.md as the store's own delete for that release leaves it (the apply and the
/// dream's safety net, which weighs what `with_index_edits` wrote out, agree). A lone CR ends an
/// entry in every release (it counts no line towards the cap in any), so both releases drop
/// the removed memory's line alone.
#[test]
fn removals_split_the_index_as_the_user_s_release_reads_it() {
    let crlf = "# Memory\r\n- [Alpha](a.md) — first\r\n- [Bravo](b.md) — second\r\n- [Charlie](c.md) — third\r\n";
    for (name, release) in [("2.1.283", old()), ("2.1.284", new())] {
        for index in [LONE_CR, "- [Alpha](a.md) — first\r- [Bravo](b.md) — second\r- [Charlie](c.md) — third\r", crlf] {
            for removed in ["a.md", "b.md"] {
                let t = tempfile::tempdir().unwrap();
                let mem = t.path().join("mem");
                let cs = folder(&mem, index, removed);
                // What the store's delete does to a copy of the folder, for this release.
                let twin = t.path().join("twin");
                folder(&twin, index, removed);
                Memdir::new(&twin, t.path().join("trash-twin"), clock()).for_release(&release).delete(removed).unwrap();
                let want = std::fs::read_to_string(twin.join("MEMORY.md")).unwrap();

                let out = with_index_edits(&cs, &t.path().join("trash"), clock(), &release).unwrap();
                assert_eq!(index_after(&out, &mem).unwrap_or_else(|| index.to_string()), want, "{name}, {index:?} without {removed}");
                apply_changeset(&out, &t.path().join("trash"), clock(), &release).unwrap();
                assert_eq!(std::fs::read_to_string(mem.join("MEMORY.md")).unwrap(), want, "{name}, {index:?} without {removed}");
                // The planned changeset applied on its own: the apply's delete edits the index the same way.
                let t2 = tempfile::tempdir().unwrap();
                let mem2 = t2.path().join("mem");
                let cs2 = folder(&mem2, index, removed);
                apply_changeset(&cs2, &t2.path().join("trash"), clock(), &release).unwrap();
                assert_eq!(std::fs::read_to_string(mem2.join("MEMORY.md")).unwrap(), want, "{name}, {index:?} without {removed}, applied as planned");
            }
        }
    }
    // Removing the second memory drops its line under 2.1.283 too (a lone-CR index was once read
    // as one line there, linking the first memory only, and kept the removed memory's link).
    let t = tempfile::tempdir().unwrap();
    let mem = t.path().join("mem");
    let cs = folder(&mem, LONE_CR, "b.md");
    for release in [old(), new()] {
        let after = index_after(&with_index_edits(&cs, &t.path().join("trash"), clock(), &release).unwrap(), &mem).expect("the index is edited");
        assert!(!after.contains("b.md") && after.contains("a.md") && after.contains("c.md"), "{after:?}");
    }
}
