//! `Mneme::merge_memory`: an orphaned memory folder merged into a living project.

use mneme_api::{ContextRequest, ErrorCode, FixedClock, Mneme};
use mneme_testsupport::{set_mtime, topic, write_file, TestHome};
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;

struct World {
    t: TestHome,
    project: PathBuf,
    target: PathBuf,
    orphan: PathBuf,
    orphan_mem: PathBuf,
}

/// A living project with `a.md` indexed, and an orphan (its folder never existed) with
/// `b.md`, `notes/c.md` and a clashing `a.md`, all indexed.
fn world() -> World {
    let t = TestHome::new();
    let project = t.root.join("code/app");
    fs::create_dir_all(&project).unwrap();
    let target = t.memdir_for(&project);
    write_file(&target.join("a.md"), &topic("a", "the project's own a", "project", "Mine."));
    write_file(&target.join("MEMORY.md"), "# Index\n\n- [a](a.md) — the project's own a\n");
    let orphan = t.config_home().join("projects").join("-gone-worktree");
    let orphan_mem = orphan.join("memory");
    write_file(&orphan_mem.join("a.md"), &topic("a", "the orphan's a", "project", "Theirs."));
    write_file(&orphan_mem.join("b.md"), &topic("b", "b fact", "user", "B."));
    write_file(&orphan_mem.join("notes/c.md"), &topic("c", "c fact", "reference", "C."));
    write_file(
        &orphan_mem.join("MEMORY.md"),
        "- [a](a.md) — the orphan's a\n- [b](b.md) — b fact\n- [c](notes/c.md) — c fact\n- [gone](gone.md) — dangling\n",
    );
    write_file(&orphan.join("0b1c2d3e-0000-4000-8000-000000000000.jsonl"), "{\"cwd\":\"/gone/worktree\"}\n");
    World { t, project, target, orphan, orphan_mem }
}

fn mneme(t: &TestHome) -> Mneme {
    Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_700_000_000)))
}

fn req(cwd: &Path) -> ContextRequest {
    ContextRequest { cwd: cwd.to_path_buf(), ..Default::default() }
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap()
}

#[test]
fn moves_files_keeps_both_on_a_clash_and_appends_index_lines() {
    let w = world();
    set_mtime(&w.orphan_mem.join("b.md"), 1_600_000_000);
    let b_before = read(&w.orphan_mem.join("b.md"));
    let m = mneme(&w.t);
    let r = m.merge_memory(&w.orphan, &req(&w.project)).unwrap();

    let moved: Vec<(&str, &str)> = r.moved.iter().map(|f| (f.from_rel_path.as_str(), f.to_rel_path.as_str())).collect();
    assert_eq!(moved, [("b.md", "b.md"), ("notes/c.md", "notes/c.md")]);
    let renamed: Vec<(&str, &str)> = r.renamed.iter().map(|f| (f.from_rel_path.as_str(), f.to_rel_path.as_str())).collect();
    assert_eq!(renamed, [("a.md", "a-merged.md")]);
    assert!(r.skipped.is_empty(), "{:?}", r.skipped);

    // Nothing overwritten; the incoming clash sits beside the project's own file.
    assert!(read(&w.target.join("a.md")).contains("Mine."));
    assert!(read(&w.target.join("a-merged.md")).contains("Theirs."));
    assert_eq!(read(&w.target.join("b.md")), b_before);
    assert!(read(&w.target.join("notes/c.md")).contains("C."));
    // The modification time (Claude Code's memory age) came along.
    let mtime = fs::metadata(w.target.join("b.md")).unwrap().modified().unwrap();
    assert_eq!(mtime.duration_since(std::time::UNIX_EPOCH).unwrap().as_secs(), 1_600_000_000);

    // Index: appended in the orphan's order, the renamed target rewritten, the dangling line left out.
    assert_eq!(
        read(&w.target.join("MEMORY.md")),
        "# Index\n\n- [a](a.md) — the project's own a\n- [a](a-merged.md) — the orphan's a\n- [b](b.md) — b fact\n- [c](notes/c.md) — c fact\n"
    );
    let lines: Vec<&str> = r.index_lines_added.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(lines, ["- [a](a-merged.md) — the orphan's a", "- [b](b.md) — b fact", "- [c](notes/c.md) — c fact"]);

    // The orphan's memory folder went to Mneme's trash with what was left (its index), not deleted.
    assert!(!w.orphan_mem.exists());
    assert!(w.orphan.join("0b1c2d3e-0000-4000-8000-000000000000.jsonl").exists(), "transcripts stay");
    let trashed = r.trashed_to.clone().expect("trashed");
    assert!(trashed.starts_with(w.t.root.join("mneme-data/trash/merged")), "{}", trashed.display());
    assert!(read(&trashed.join("MEMORY.md")).contains("[gone](gone.md)"));
    assert!(trashed.parent().unwrap().join("merge.json").is_file());
    assert!(r.trash_problem.is_none());

    // Health: every merged file is indexed.
    let h = m.health(&req(&w.project)).unwrap();
    assert!(h.unindexed.is_empty(), "{:?}", h.unindexed);
}

#[test]
fn identical_files_and_existing_index_lines_are_skipped() {
    let w = world();
    // The project already has b.md with the same bytes, and an index line for it.
    fs::copy(w.orphan_mem.join("b.md"), w.target.join("b.md")).unwrap();
    fs::write(w.target.join("MEMORY.md"), "- [a](a.md) — mine\n- [B](b.md) — already here\n").unwrap();
    // And an a-merged.md from an earlier merge that differs: the next name is -merged-2.
    write_file(&w.target.join("a-merged.md"), "something else\n");
    let r = mneme(&w.t).merge_memory(&w.orphan, &req(&w.project)).unwrap();
    assert_eq!(r.skipped.len(), 1);
    assert_eq!(r.skipped[0].rel_path, "b.md");
    assert!(r.skipped[0].reason.contains("same content"));
    assert_eq!(r.renamed[0].to_rel_path, "a-merged-2.md");
    let index = read(&w.target.join("MEMORY.md"));
    assert_eq!(index.matches("b.md").count(), 1, "{index}");
    assert!(index.contains("- [a](a-merged-2.md) — the orphan's a\n"), "{index}");
    assert_eq!(read(&w.target.join("a-merged.md")), "something else\n");
}

#[test]
fn absolute_and_angle_bracket_targets_are_rewritten() {
    let w = world();
    let abs = w.orphan_mem.join("b.md");
    fs::write(
        w.orphan_mem.join("MEMORY.md"),
        format!("- [a](<a.md>) — angle\n- [b]({}) — absolute\n- [b again](b.md) — duplicate\n", abs.display()),
    )
    .unwrap();
    let r = mneme(&w.t).merge_memory(&w.orphan, &req(&w.project)).unwrap();
    let lines: Vec<&str> = r.index_lines_added.iter().map(|l| l.text.as_str()).collect();
    assert_eq!(lines, ["- [a](<a-merged.md>) — angle", "- [b](b.md) — absolute"]);
}

#[test]
fn dry_run_writes_nothing() {
    let w = world();
    let m = mneme(&w.t);
    let before = read(&w.target.join("MEMORY.md"));
    let plan = m.plan_merge_memory(&w.orphan, &req(&w.project)).unwrap();
    assert!(plan.dry_run);
    assert_eq!(plan.moved.len(), 2);
    assert_eq!(plan.renamed[0].to_rel_path, "a-merged.md");
    assert_eq!(plan.index_lines_added.len(), 3);
    assert!(plan.trashed_to.is_none());
    assert_eq!(read(&w.target.join("MEMORY.md")), before);
    assert!(w.orphan_mem.join("b.md").exists());
    assert!(!w.target.join("b.md").exists());
}

#[test]
fn refuses_folders_outside_projects_without_memory_or_the_target_itself() {
    let w = world();
    let m = mneme(&w.t);
    // Not under <config>/projects.
    let elsewhere = w.t.root.join("elsewhere");
    fs::create_dir_all(elsewhere.join("memory")).unwrap();
    let e = m.merge_memory(&elsewhere, &req(&w.project)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{}", e.message);
    // The memory folder itself is not a project folder either.
    let e = m.merge_memory(&w.orphan_mem, &req(&w.project)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{}", e.message);
    // `..` does not escape the check.
    let e = m.merge_memory(&w.t.config_home().join("projects/.."), &req(&w.project)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{}", e.message);
    // No memory folder.
    let bare = w.t.config_home().join("projects/-only-transcripts");
    fs::create_dir_all(&bare).unwrap();
    let e = m.merge_memory(&bare, &req(&w.project)).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "{}", e.message);
    // Missing folder.
    let e = m.merge_memory(&w.t.config_home().join("projects/-nope"), &req(&w.project)).unwrap_err();
    assert_eq!(e.code, ErrorCode::NotFound, "{}", e.message);
    // The app shows it too (a folder gone since the Projects list was drawn): no command.
    assert!(e.message.ends_with("-nope does not exist now: it may have been merged, moved or deleted. The list of project folders shows the ones there are.") && !e.message.contains("`"), "{}", e.message);
    // The target itself.
    let own = w.target.parent().unwrap().to_path_buf();
    let e = m.merge_memory(&own, &req(&w.project)).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput, "{}", e.message);
    assert!(e.message.contains("itself"), "{}", e.message);
    // Nothing moved in any of these.
    assert!(w.orphan_mem.join("b.md").exists());
    assert!(!w.target.join("b.md").exists());
}

#[test]
fn merges_into_a_project_without_memory_yet() {
    let w = world();
    let fresh = w.t.root.join("code/fresh");
    fs::create_dir_all(&fresh).unwrap();
    let r = mneme(&w.t).merge_memory(&w.orphan, &req(&fresh)).unwrap();
    let dir = w.t.memdir_for(&fresh);
    assert_eq!(r.into, dir);
    assert_eq!(r.moved.len(), 3);
    assert!(r.renamed.is_empty());
    assert_eq!(read(&dir.join("MEMORY.md")).lines().count(), 3);
}

#[cfg(unix)]
#[test]
fn symbolic_links_are_not_moved() {
    let w = world();
    std::os::unix::fs::symlink(w.t.root.join("secret.md"), w.orphan_mem.join("link.md")).unwrap();
    fs::write(w.t.root.join("secret.md"), "outside\n").unwrap();
    let r = mneme(&w.t).merge_memory(&w.orphan, &req(&w.project)).unwrap();
    assert!(r.skipped.iter().any(|s| s.rel_path == "link.md" && s.reason.contains("symbolic link")), "{:?}", r.skipped);
    assert!(!w.target.join("link.md").exists());
    assert!(r.trashed_to.unwrap().join("link.md").symlink_metadata().is_ok());
}
