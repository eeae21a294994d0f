//! An index line spelled in another letter case than its file (`- [Tabs](TABS.md)` for the
//! file `tabs.md`). On a drive that folds case (exFAT here, for real: `mneme_testsupport::exfat`;
//! macOS and Windows disks alike) the drive opens either spelling, so Claude Code follows the
//! line to the memory: the memory is in the index, the health report does not call it
//! unindexed, and Fix index adds no second line for it. On a disk that tells case apart the
//! line points at a file that is not there, and the memory is not in the index.
//!
//! The exFAT test needs root to mount the drive; as any other user it says so and passes
//! without checking (CI runs it as root).

mod common;

use mneme_api::{ContextRequest, FixedClock, MemoryListFilter, MemoryPageRequest, Mneme};
use mneme_store::memdir::Duplicate;
use mneme_testsupport::{topic, write_file, TestHome};
use std::path::{Path, PathBuf};
use std::sync::Arc;

const LINE: &str = "- [Tabs](TABS.md) — the team uses tabs";

/// A project whose Claude Code config folder (with the memory folder) and Mneme's data folder
/// are under `top`, its index listing `tabs.md` as `TABS.md`.
struct World {
    _t: TestHome,
    repo: PathBuf,
    memdir: PathBuf,
    mneme: Mneme,
}

impl World {
    fn at(t: TestHome, top: &Path) -> World {
        let (env, repo, memdir) = common::tabs_project_under(&t, top, &format!("{LINE}\n"));
        let mneme = Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
        World { _t: t, repo, memdir, mneme }
    }

    fn req(&self) -> ContextRequest {
        ContextRequest { cwd: self.repo.clone(), ..Default::default() }
    }

    fn index(&self) -> String {
        std::fs::read_to_string(self.memdir.join("MEMORY.md")).unwrap()
    }

    /// Whether each way of listing memories calls `rel` indexed: the list, the page, the
    /// memory itself.
    fn indexed(&self, rel: &str) -> [bool; 3] {
        let req = self.req();
        let list = self.mneme.memories(&req, &MemoryListFilter::default()).unwrap();
        let page = self.mneme.memory_page(&req, &MemoryPageRequest { limit: 100, ..Default::default() }).unwrap();
        [
            list.iter().find(|s| s.rel_path == rel).unwrap().indexed,
            page.items.iter().find(|s| s.rel_path == rel).unwrap().indexed,
            self.mneme.memory(&req, rel).unwrap().summary.indexed,
        ]
    }
}

#[cfg(target_os = "linux")]
#[test]
fn on_a_drive_that_folds_case_a_line_in_another_case_lists_its_memory() {
    let t = TestHome::new();
    let Some(drive) = mneme_testsupport::exfat::Exfat::mount(&t.root.join("stick")) else { return };
    let top = drive.path().to_path_buf();
    let w = World::at(t, &top);
    let req = w.req();
    // The premise: the drive opens the line's spelling and lists the file's.
    assert!(w.memdir.join("TABS.md").exists());
    let h = w.mneme.health(&req).unwrap();
    assert_eq!((h.unindexed.len(), h.unindexed_count), (0, 0), "{:?}", h.unindexed);
    assert!(h.index.missing_targets.is_empty(), "{:?}", h.index.missing_targets);
    assert_eq!(w.indexed("tabs.md"), [true; 3]);
    let done = w.mneme.fix_index(&req).unwrap();
    assert_eq!(done, ["the index needed no changes"]);
    assert_eq!(w.index(), format!("{LINE}\n"), "no second line for the memory");

    // A second line spelled as the file is listed is a second line for the same memory.
    write_file(&w.memdir.join("MEMORY.md"), &format!("{LINE}\n- [Tabs again](tabs.md)\n- [Tabs, third](Tabs.md)\n"));
    let h = w.mneme.health(&req).unwrap();
    assert_eq!(h.index.duplicates, [Duplicate { rel_path: "tabs.md".into(), lines: vec![1, 2, 3] }]);
    // Fix index keeps the first and removes the others, as for any repeated line.
    let done = w.mneme.fix_index(&req).unwrap();
    assert_eq!(done, ["removed duplicate from MEMORY.md: - [Tabs again](tabs.md)", "removed duplicate from MEMORY.md: - [Tabs, third](Tabs.md)"]);
    assert_eq!(w.index(), format!("{LINE}\n"));
    assert!(w.mneme.health(&req).unwrap().index.duplicates.is_empty());

    // Another memory nobody indexed is still unindexed, and gets its line.
    write_file(&w.memdir.join("MEMORY.md"), &format!("{LINE}\n"));
    write_file(&w.memdir.join("deploys.md"), &topic("Deploys", "freeze on Fridays", "project", "No deploys on Fridays."));
    let h = w.mneme.health(&req).unwrap();
    assert_eq!(h.unindexed, ["deploys.md"]);
    assert_eq!(w.indexed("deploys.md"), [false; 3]);
    w.mneme.fix_index(&req).unwrap();
    assert_eq!(w.index(), format!("{LINE}\n- [Deploys](deploys.md) — freeze on Fridays\n"));
    drop(w);
    drop(drive);
}

/// On a disk that tells case apart, the line points at a file that is not there: the memory is
/// not in the index, the line is reported as pointing nowhere, and Fix index adds the memory's
/// line and drops the one that points nowhere. A file of each spelling is two memories, each
/// listed only by its own spelling.
#[test]
fn on_a_disk_that_tells_case_apart_a_line_in_another_case_points_at_nothing() {
    let t = TestHome::new();
    let top = t.root.join("disk");
    let w = World::at(t, &top);
    let req = w.req();
    assert!(!w.memdir.join("TABS.md").exists(), "the premise: this disk tells case apart");
    let h = w.mneme.health(&req).unwrap();
    assert_eq!(h.unindexed, ["tabs.md"]);
    assert_eq!(h.index.missing_targets.iter().map(|r| r.text.as_str()).collect::<Vec<_>>(), [LINE]);
    assert_eq!(w.indexed("tabs.md"), [false; 3]);
    w.mneme.fix_index(&req).unwrap();
    assert_eq!(w.index(), "- [Tabs](tabs.md) — the team uses tabs\n");

    write_file(&w.memdir.join("MEMORY.md"), &format!("{LINE}\n"));
    write_file(&w.memdir.join("TABS.md"), &topic("TABS", "shouting about tabs", "project", "TABS."));
    let h = w.mneme.health(&req).unwrap();
    assert_eq!(h.unindexed, ["tabs.md"]);
    assert!(h.index.missing_targets.is_empty());
    assert_eq!((w.indexed("tabs.md"), w.indexed("TABS.md")), ([false; 3], [true; 3]));
    write_file(&w.memdir.join("MEMORY.md"), &format!("{LINE}\n- [Tabs](tabs.md)\n"));
    assert!(w.mneme.health(&req).unwrap().index.duplicates.is_empty(), "two files, one line each");
}
