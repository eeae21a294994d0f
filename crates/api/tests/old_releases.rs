//! What releases before 2.1.160 do differently, through the operations every shell calls
//! (`Mneme::context`, `Mneme::touched`): rows 28, 29 and 30 of docs/claude-code-versions.md, each
//! checked on the last release with the old behaviour and the first with the new one. (Rows 26
//! and 27, the managed label and the files appended to a Read's result, are rendering; the
//! loader's tests check them, and the version matrix checks all of them against 2.1.122's real
//! binary.)

use mneme_api::{ContextRequest, FixedClock, Mneme};
use mneme_core::versions::ClaudeVersion;
use mneme_testsupport::{write_file, TestHome};
use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

fn mneme(t: &TestHome) -> Mneme {
    Mneme::new(t.env.clone(), Arc::new(FixedClock::at_unix_secs(1_700_000_000)))
}

fn at(cwd: PathBuf, patch: u32) -> ContextRequest {
    ContextRequest { cwd, claude_version: Some(ClaudeVersion::new(2, 1, patch)), ..Default::default() }
}

#[test]
fn from_2_1_121_to_2_1_156_a_repository_cannot_move_the_memory_folder() {
    let t = TestHome::new();
    let repo = t.git_repo("code/app");
    let user_dir = t.root.join("user-mem");
    let project_dir = t.root.join("project-mem");
    write_file(&t.config_home().join("settings.json"), &format!("{{\"autoMemoryDirectory\": {:?}}}", user_dir.display().to_string()));
    write_file(&repo.join(".claude/settings.json"), &format!("{{\"autoMemoryDirectory\": {:?}}}", project_dir.display().to_string()));
    write_file(&user_dir.join("MEMORY.md"), "- USER-SETTINGS MEMORY\n");
    write_file(&project_dir.join("MEMORY.md"), "- PROJECT-SETTINGS MEMORY\n");
    let m = mneme(&t);

    let old = m.context(&at(repo.clone(), 156)).unwrap();
    assert_eq!(old.auto_memory.dir, user_dir);
    assert_eq!(old.auto_memory.source, "setting:userSettings");
    assert!(old.block.contains("USER-SETTINGS MEMORY") && !old.block.contains("PROJECT-SETTINGS"), "{}", old.block);

    let new = m.context(&at(repo.clone(), 157)).unwrap();
    assert_eq!(new.auto_memory.dir, project_dir);
    assert_eq!(new.auto_memory.source, "setting:projectSettings");
    assert!(new.block.contains("PROJECT-SETTINGS MEMORY"), "{}", new.block);

    // Before 2.1.121 the repository's local settings (not its checked-in ones) came before the
    // user's.
    let local_dir = t.root.join("local-mem");
    write_file(&repo.join(".claude/settings.local.json"), &format!("{{\"autoMemoryDirectory\": {:?}}}", local_dir.display().to_string()));
    assert_eq!(m.context(&at(repo.clone(), 120)).unwrap().auto_memory.dir, local_dir);
    assert_eq!(m.context(&at(repo.clone(), 120)).unwrap().auto_memory.source, "setting:localSettings");
    assert_eq!(m.context(&at(repo.clone(), 121)).unwrap().auto_memory.dir, user_dir);
    assert_eq!(m.context(&at(repo.clone(), 157)).unwrap().auto_memory.dir, local_dir);
    fs::remove_file(repo.join(".claude/settings.local.json")).unwrap();

    // With no user value the old releases use the default folder, whatever the repository says.
    fs::remove_file(t.config_home().join("settings.json")).unwrap();
    let old = m.context(&at(repo.clone(), 156)).unwrap();
    assert_eq!(old.auto_memory.source, "default");
    assert_eq!(old.auto_memory.dir, t.memdir_for(&repo));
}

#[test]
fn before_2_1_160_the_working_folder_is_taken_in_its_composed_spelling() {
    let t = TestHome::new();
    let composed = t.git_repo("caf\u{e9}-repo");
    let decomposed = t.git_repo("cafe\u{301}-repo");
    write_file(&composed.join("CLAUDE.md"), "COMPOSED-TWIN\n");
    write_file(&decomposed.join("CLAUDE.md"), "AS-SPELLED\n");
    let m = mneme(&t);

    let old = m.context(&at(decomposed.clone(), 159)).unwrap();
    assert!(old.block.contains("COMPOSED-TWIN") && !old.block.contains("AS-SPELLED"), "{}", old.block);
    assert_eq!(old.cwd, composed);
    let new = m.context(&at(decomposed.clone(), 160)).unwrap();
    assert!(new.block.contains("AS-SPELLED") && !new.block.contains("COMPOSED-TWIN"), "{}", new.block);
    assert_eq!(new.cwd, decomposed);

    // Without a composed twin those releases do not start at all; Mneme says so instead of
    // showing a view they never load.
    let alone = t.git_repo("only\u{e9}".replace('\u{e9}', "e\u{301}").as_str());
    write_file(&alone.join("CLAUDE.md"), "ALONE\n");
    let err = m.context(&at(alone.clone(), 159)).unwrap_err().to_string();
    assert!(err.contains("Claude Code 2.1.159 does not start in") && err.contains("composed (NFC) spelling"), "{err}");
    assert!(err.contains("Rename the folder") && err.contains("2.1.160"), "{err}");
    assert!(m.context(&at(alone, 160)).unwrap().block.contains("ALONE"));
}

#[test]
fn before_2_1_149_the_claude_md_switch_still_lets_reads_attach_files() {
    let t = TestHome::new();
    let repo = t.git_repo("code/app");
    write_file(&repo.join("CLAUDE.md"), "ROOT\n");
    write_file(&repo.join("sub/CLAUDE.md"), "SUB\n");
    write_file(&repo.join(".claude/rules/c.md"), "---\npaths: \"sub/**\"\n---\nCOND\n");
    write_file(&t.config_home().join("settings.json"), r#"{"env": {"CLAUDE_CODE_DISABLE_CLAUDE_MDS": "1"}}"#);
    let m = mneme(&t);
    let read = [repo.join("sub/x.txt")];
    for patch in [148, 149] {
        // Nothing loads at start either way.
        assert!(!m.context(&at(repo.clone(), patch)).unwrap().block.contains("ROOT"), "2.1.{patch}");
    }
    let old = m.touched(&at(repo.clone(), 148), &read).unwrap();
    assert!(old.block.contains("COND") && old.block.contains("SUB"), "{}", old.block);
    assert!(old.block.starts_with("<system-reminder>\nContents of "), "appended to the Read's result: {}", old.block);
    let new = m.touched(&at(repo.clone(), 149), &read).unwrap();
    assert_eq!(new.block, "");
    assert!(new.files.is_empty());
}
