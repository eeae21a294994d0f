//! A project on an exFAT drive (a USB stick, an SD card, a drive shared with a Mac or a Windows
//! machine), for real: a 64 MiB exFAT image mounted through exfat-fuse
//! (`mneme_testsupport::exfat`). The repository, Claude Code's config folder (with the
//! project's memory folder) and Mneme's data folder (the trash) are all on the drive. exFAT
//! folds letter case (`tabs.md` and `Tabs.md` are one file), has no links of either kind, keeps
//! no permissions, and exfat-fuse numbers a file's inode per name looked up.
//!
//! Mounting needs root; as any other user these tests say so and pass without checking (CI runs
//! them as root).

#![cfg(target_os = "linux")]

mod common;

use mneme_api::{ContextRequest, ErrorCode, FixedClock, MemoryEdit, Mneme, NewMemoryRequest};
use mneme_testsupport::exfat::Exfat;
use mneme_testsupport::{write_file, TestHome};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// A project and every folder of Claude Code's and Mneme's on one exFAT drive.
struct World {
    // Dropped first (fields drop in order): unmounted before the temporary folder goes.
    _drive: Exfat,
    _t: TestHome,
    repo: PathBuf,
    memdir: PathBuf,
    mneme: Mneme,
}

impl World {
    fn new() -> Option<World> {
        let t = TestHome::new();
        let drive = Exfat::mount(&t.root.join("stick"))?;
        let top = drive.path().to_path_buf();
        let (env, repo, memdir) = common::tabs_project_under(&t, &top, "- [Tabs](tabs.md) — the team uses tabs\n");
        let mneme = Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
        Some(World { _drive: drive, _t: t, repo, memdir, mneme })
    }

    fn req(&self) -> ContextRequest {
        ContextRequest { cwd: self.repo.clone(), ..Default::default() }
    }

    /// The names the drive lists in `dir`, as it spells them, sorted.
    fn listed(dir: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        names
    }

    fn index(&self) -> String {
        std::fs::read_to_string(self.memdir.join("MEMORY.md")).unwrap()
    }
}

fn new_memory(name: &str, file_name: Option<&str>) -> NewMemoryRequest {
    NewMemoryRequest { name: name.into(), description: format!("about {name}"), kind: "project".into(), body: format!("{name}.\n"), file_name: file_name.map(String::from) }
}

/// Create, save, rename, move to the trash and restore, each as on any disk: the drive lists
/// the names Mneme wrote, spelled as it wrote them, and no temporary file is left.
#[test]
fn a_memory_is_created_saved_renamed_trashed_and_restored_on_the_drive() {
    let Some(w) = World::new() else { return };
    let req = w.req();
    let created = w.mneme.create_memory(&req, &new_memory("Deploys", Some("Deploys.md"))).unwrap();
    assert_eq!(created.rel_path, "Deploys.md");
    assert_eq!(World::listed(&w.memdir), ["Deploys.md", "MEMORY.md", "tabs.md"]);
    let m = w.mneme.memory(&req, "Deploys.md").unwrap();
    // Saving renames a new file over the old one: the drive keeps the one name.
    w.mneme.save_memory(&req, "Deploys.md", &m.content.replace("Deploys.\n", "Deploys go out on Tuesdays.\n"), &m.revision).unwrap();
    assert!(std::fs::read_to_string(w.memdir.join("Deploys.md")).unwrap().contains("Tuesdays"));
    assert_eq!(World::listed(&w.memdir), ["Deploys.md", "MEMORY.md", "tabs.md"]);
    w.mneme.edit_memory(&req, &MemoryEdit { memory: "Deploys.md".into(), rename: Some("releases".into()), ..Default::default() }).unwrap();
    assert_eq!(World::listed(&w.memdir), ["MEMORY.md", "releases.md", "tabs.md"]);
    assert!(w.index().contains("(releases.md)"), "the index line follows: {}", w.index());
    let trashed = w.mneme.delete_memory(&req, "releases.md").unwrap();
    assert_eq!(World::listed(&w.memdir), ["MEMORY.md", "tabs.md"]);
    assert_eq!(w.mneme.trash(&req).unwrap().entries.len(), 1);
    let back = w.mneme.restore_memory(&req, &trashed.id).unwrap();
    assert_eq!(back, w.memdir.join("releases.md"));
    assert_eq!(World::listed(&w.memdir), ["MEMORY.md", "releases.md", "tabs.md"]);
    assert!(w.index().contains("(releases.md)"), "{}", w.index());
}

/// A rename that changes only letter case (`tabs.md` to `Tabs.md`) is a rename on this drive
/// too: the drive lists the new spelling and the index line points at it. The new name "exists"
/// on a case-insensitive drive only because it is the memory itself.
#[test]
fn a_rename_that_changes_only_letter_case_renames() {
    let Some(w) = World::new() else { return };
    let req = w.req();
    let renamed = w.mneme.edit_memory(&req, &MemoryEdit { memory: "tabs.md".into(), rename: Some("Tabs.md".into()), ..Default::default() });
    let renamed = renamed.unwrap_or_else(|e| panic!("a rename that changes only case: {e}"));
    assert_eq!(renamed.rel_path, "Tabs.md");
    assert_eq!(World::listed(&w.memdir), ["MEMORY.md", "Tabs.md"]);
    assert_eq!(w.index(), "- [Tabs](Tabs.md) — the team uses tabs\n");
    assert!(std::fs::read_to_string(w.memdir.join("Tabs.md")).unwrap().contains("Tabs, not spaces."));
}

/// A memory whose file name differs from an existing one only in letter case would be the same
/// file on this drive: creating it is refused, naming the file that is there, and the existing
/// memory is left exactly as it was.
#[test]
fn a_new_memory_whose_name_differs_only_in_case_does_not_replace_the_existing_one() {
    let Some(w) = World::new() else { return };
    let req = w.req();
    let before = std::fs::read(w.memdir.join("tabs.md")).unwrap();
    let e = w.mneme.create_memory(&req, &new_memory("Spaces", Some("TABS.md"))).unwrap_err();
    assert_eq!(e.code, ErrorCode::AlreadyExists, "{e}");
    assert!(e.message.contains("TABS.md would be the same file as tabs.md") && e.message.contains("letter case"), "names the file that is there, and why: {e}");
    assert_eq!(std::fs::read(w.memdir.join("tabs.md")).unwrap(), before);
    assert_eq!(World::listed(&w.memdir), ["MEMORY.md", "tabs.md"]);
    // Made from the name, the file name takes a number instead.
    let made = w.mneme.create_memory(&req, &new_memory("TABS", None));
    assert_eq!(made.unwrap_err().code, ErrorCode::AlreadyExists, "the name itself is taken ([[links]] find memories by name)");
    let made = w.mneme.create_memory(&req, &new_memory("Tabs policy", None)).unwrap();
    assert_eq!(made.rel_path, "tabs-policy.md");
    assert_eq!(std::fs::read(w.memdir.join("tabs.md")).unwrap(), before);
    // Renaming another memory onto a case-spelling of it is refused the same way.
    let e = w.mneme.edit_memory(&req, &MemoryEdit { memory: "tabs-policy.md".into(), rename: Some("Tabs.md".into()), ..Default::default() }).unwrap_err();
    assert_eq!(e.code, ErrorCode::AlreadyExists, "{e}");
    assert!(e.message.contains("Tabs.md would be the same file as tabs.md") && e.message.contains("letter case"), "{e}");
    assert_eq!(std::fs::read(w.memdir.join("tabs.md")).unwrap(), before);
    assert_eq!(World::listed(&w.memdir), ["MEMORY.md", "tabs-policy.md", "tabs.md"]);
}

/// The project's instructions file spelled `claude.md` or `Claude.md` on the drive: opening
/// `CLAUDE.md` there opens it, so Claude Code loads it, under the name it asked for. Mneme's
/// context view shows the same, and the real Claude Code (the pinned release, run in the
/// project on the drive against the stub by `verify`) sends exactly Mneme's block. The
/// repository is a git repository on the drive, with a rule spelled `.Claude/Rules/Style.md`.
#[test]
fn the_context_view_matches_claude_code_whatever_the_case_of_claude_md() {
    for spelling in ["claude.md", "Claude.md", "CLAUDE.md"] {
        let Some(w) = World::new() else { return };
        mneme_testsupport::git(&w.repo, &["init", "-q"]);
        write_file(&w.repo.join(spelling), "Use tabs.\n");
        write_file(&w.repo.join(".Claude/Rules/Style.md"), "Wrap at 100 columns.\n");
        let view = w.mneme.context(&w.req()).unwrap();
        let paths: Vec<PathBuf> = view.files.iter().map(|f| f.path.clone()).collect();
        assert!(paths.contains(&w.repo.join("CLAUDE.md")), "{spelling}: the project's file is loaded as CLAUDE.md: {paths:?}");
        assert!(paths.contains(&w.repo.join(".claude/rules/Style.md")), "{spelling}: the rule, under the folder names asked for and the file name listed: {paths:?}");
        assert!(view.block.contains("Use tabs.") && view.block.contains("Wrap at 100 columns."), "{spelling}: {}", view.block);
        let Some(bin) = mneme_testsupport::claude_code::pinned() else { continue };
        let report = w.mneme.verify_with(&w.req(), &mneme_api::VerifyOptions { claude_bin: Some(bin), timeout: None }).unwrap();
        assert_eq!(report.status, "match", "{spelling}: {report:#?}");
    }
}

/// Restoring a memory whose file name now differs only in letter case from another memory's
/// would put it over that one on this drive: refused, naming the file as the drive lists it,
/// and that memory is left as it was.
#[test]
fn a_restore_onto_another_spelling_of_a_memory_names_it_and_replaces_nothing() {
    let Some(w) = World::new() else { return };
    let req = w.req();
    let trashed = w.mneme.delete_memory(&req, "tabs.md").unwrap();
    w.mneme.create_memory(&req, &new_memory("Spaces", Some("TABS.md"))).unwrap();
    let before = std::fs::read(w.memdir.join("TABS.md")).unwrap();
    let e = w.mneme.restore_memory(&req, &trashed.id).unwrap_err();
    assert_eq!(e.code, ErrorCode::AlreadyExists, "{e}");
    assert!(e.message.starts_with("TABS.md is in the memory folder") && e.message.contains("letter case") && e.message.contains("restoring tabs.md"), "{e}");
    assert_eq!(std::fs::read(w.memdir.join("TABS.md")).unwrap(), before);
    assert_eq!(World::listed(&w.memdir), ["MEMORY.md", "TABS.md"]);
    assert_eq!(w.mneme.trash(&req).unwrap().entries.len(), 1, "still in the trash");
}

/// A memory named by another spelling of its file (`TABS.md` for `tabs.md`, which opens on this
/// drive) is the memory under its own name: a rename takes its index line along. And
/// `memory.md`, which opens the index here, is no memory: it is not moved to the trash.
#[test]
fn a_memory_named_by_another_spelling_is_the_memory_under_its_own_name() {
    let Some(w) = World::new() else { return };
    let req = w.req();
    assert_eq!(w.mneme.memory(&req, "TABS.md").unwrap().summary.rel_path, "tabs.md");
    let renamed = w.mneme.edit_memory(&req, &MemoryEdit { memory: "TABS.md".into(), rename: Some("spacing".into()), ..Default::default() }).unwrap();
    assert_eq!(renamed.rel_path, "spacing.md");
    assert_eq!(w.index(), "- [Tabs](spacing.md) — the team uses tabs\n", "the index line follows the file");
    assert_eq!(World::listed(&w.memdir), ["MEMORY.md", "spacing.md"]);
    let index = w.index();
    assert!(w.mneme.delete_memory(&req, "memory.md").is_err(), "the index is not a memory");
    assert_eq!(w.index(), index);
    assert_eq!(World::listed(&w.memdir), ["MEMORY.md", "spacing.md"]);
    assert!(w.mneme.trash(&req).unwrap().entries.is_empty());
}
