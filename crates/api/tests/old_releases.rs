//! What older releases do differently, through the operations every shell calls
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
    assert!(m.context(&at(alone.clone(), 160)).unwrap().block.contains("ALONE"));
    // Before 2.1.84 they started all the same, in the composed path, where nothing is.
    let started = m.context(&at(alone.clone(), 83)).unwrap();
    assert!(!started.block.contains("ALONE"), "{}", started.block);
    assert_eq!(started.cwd.to_str().unwrap(), mneme_store::paths::nfc(alone.to_str().unwrap()));
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

#[test]
fn up_to_2_1_112_npm_runs_on_node_which_lists_rules_sorted() {
    let t = TestHome::new();
    let repo = t.git_repo("code/app");
    // Created in an order that is neither sorted nor its reverse, so no file system's own
    // order can pass for the sorted one.
    for name in ["b.md", "c.md", "a.md", "B.md"] {
        write_file(&repo.join(".claude/rules").join(name), &format!("RULE {name}\n"));
    }
    let m = mneme(&t);
    let old = m.context(&at(repo.clone(), 112)).unwrap();
    let order: Vec<String> = old.files.iter().filter_map(|f| f.path.file_name()).map(|n| n.to_string_lossy().into_owned()).filter(|n| n != "CLAUDE.md").collect();
    assert_eq!(order, ["B.md", "a.md", "b.md", "c.md"], "Node's readdir sorts byte by byte");
    let new = m.context(&at(repo.clone(), 113)).unwrap();
    let listed: Vec<String> = fs::read_dir(repo.join(".claude/rules")).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
    let order: Vec<String> = new.files.iter().filter_map(|f| f.path.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
    assert_eq!(order, listed, "a binary keeps the folder's own order");

    // Node's smaller stack: 2,000 quote levels load in a binary, not on Node.
    write_file(&repo.join("CLAUDE.md"), &format!("DEEP\n\n{}x\n", ">".repeat(2_000)));
    assert!(!m.context(&at(repo.clone(), 112)).unwrap().block.contains("DEEP"));
    assert!(m.context(&at(repo.clone(), 113)).unwrap().block.contains("DEEP"));
}

#[test]
fn before_2_1_83_memory_md_has_only_its_line_cap() {
    let t = TestHome::new();
    let repo = t.git_repo("code/app");
    let long: String = (1..=150).map(|i| format!("- [Topic {i}](t{i}.md) — {}\n", "x".repeat(200))).collect();
    write_file(&t.memdir_for(&repo).join("MEMORY.md"), &long);
    let m = mneme(&t);
    let old = m.context(&at(repo.clone(), 81)).unwrap();
    assert!(old.block.contains("Topic 150") && !old.block.contains("WARNING"), "no size cap before 2.1.83");
    let new = m.context(&at(repo.clone(), 83)).unwrap();
    assert!(!new.block.contains("Topic 150") && new.block.contains("> WARNING: MEMORY.md is "), "the 25,000-unit cap from 2.1.83");

    let lines: String = (1..=230).map(|i| format!("- line {i}\n")).collect();
    write_file(&t.memdir_for(&repo).join("MEMORY.md"), &lines);
    let old = m.context(&at(repo.clone(), 81)).unwrap();
    assert!(old.block.contains("- line 200\n\n> WARNING: MEMORY.md is 230 lines (limit: 200). Only the first 200 lines were loaded."), "{}", old.block);
}

#[test]
fn bare_mode_with_added_folders_loads_from_2_1_81_to_2_1_285() {
    let t = TestHome::new();
    let repo = t.git_repo("code/app");
    let extra = t.git_repo("code/extra");
    write_file(&repo.join("CLAUDE.md"), "BARE-REPO\n");
    write_file(&extra.join("CLAUDE.md"), "BARE-EXTRA\n");
    let mut env = t.env.clone();
    env.vars.insert("CLAUDE_CODE_SIMPLE".into(), "1".into());
    let m = Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_700_000_000)));
    let with_dir = |patch| ContextRequest { add_dirs: vec![extra.clone()], ..at(repo.clone(), patch) };
    assert!(!m.context(&with_dir(80)).unwrap().block.contains("BARE-"));
    assert!(m.context(&with_dir(81)).unwrap().block.contains("BARE-REPO"));
    assert!(m.context(&with_dir(285)).unwrap().block.contains("BARE-REPO"));
    assert!(!m.context(&with_dir(286)).unwrap().block.contains("BARE-"));
}

#[test]
fn before_2_1_242_a_file_without_an_at_sign_is_lexed_and_can_be_too_deep() {
    let t = TestHome::new();
    let repo = t.git_repo("code/app");
    write_file(&repo.join("CLAUDE.md"), &format!("DEEP-PLAIN\n\n{} bottom\n", ">".repeat(12_000)));
    write_file(&repo.join(".claude/rules/shallow.md"), "SHALLOW RULE\n");
    let m = mneme(&t);
    let old = m.context(&at(repo.clone(), 241)).unwrap();
    assert!(!old.block.contains("DEEP-PLAIN") && old.block.contains("SHALLOW RULE"), "{}", &old.block[..300.min(old.block.len())]);
    assert!(old.skipped.iter().any(|s| s.path.ends_with("CLAUDE.md")), "the dropped file is reported: {:?}", old.skipped);
    assert!(m.context(&at(repo.clone(), 242)).unwrap().block.contains("DEEP-PLAIN"));
}

#[test]
fn from_2_1_311_to_2_1_330_the_lexer_runs_out_of_stack_sooner() {
    let t = TestHome::new();
    let repo = t.git_repo("code/app");
    let m = mneme(&t);
    let loads = |levels: usize, patch: u32| {
        // The comment sends the file through the lexer in every release.
        write_file(&repo.join("CLAUDE.md"), &format!("<!-- c -->\nDEEP\n\n{} bottom\n", ">".repeat(levels)));
        let view = m.context(&at(repo.clone(), patch)).unwrap();
        let skipped = view.skipped.iter().any(|s| s.path.ends_with("CLAUDE.md"));
        assert_eq!(view.block.contains("DEEP"), !skipped, "a file left out is reported ({levels} levels, 2.1.{patch})");
        !skipped
    };
    // 2.1.310 loads 11,585 quote levels; 2.1.311-2.1.327 stop near 7,700-7,900; 2.1.328-2.1.330
    // near 8,460; 2.1.331 loads more than 14,500.
    assert!(loads(7_800, 310));
    assert!(!loads(7_800, 311));
    assert!(!loads(7_800, 327));
    assert!(loads(7_800, 328));
    assert!(!loads(8_500, 330));
    assert!(loads(8_500, 331));
    assert!(loads(7_400, 316), "under every release's limit");
}

#[test]
fn up_to_2_1_280_a_read_attaches_again_what_was_loaded_at_start() {
    let t = TestHome::new();
    let repo = t.git_repo("code/app");
    write_file(&repo.join("CLAUDE.md"), "ROOT\n\nSee @shared.md\n");
    write_file(&repo.join("shared.md"), "SHARED\n");
    write_file(&repo.join(".claude/CLAUDE.md"), "DOT-CLAUDE\n");
    write_file(&repo.join(".claude/sub/x.txt"), "x\n");
    write_file(&repo.join("pkg/CLAUDE.md"), "PKG\n\nSee @../shared.md\n");
    write_file(&repo.join("pkg/x.txt"), "y\n");
    let m = mneme(&t);
    let attached = |patch: u32, target: &str| -> Vec<String> {
        let view = m.touched(&at(repo.clone(), patch), &[repo.join(target)]).unwrap();
        view.files.iter().map(|f| f.path.strip_prefix(&repo).unwrap().to_string_lossy().into_owned()).collect()
    };
    // The `.claude` folder on the way to a file inside it is a sub-folder like any other, and its
    // CLAUDE.md is the start-up `.claude/CLAUDE.md`; a sub-folder's include can be a start-up one.
    assert_eq!(attached(280, ".claude/sub/x.txt"), [".claude/CLAUDE.md"]);
    assert_eq!(attached(280, "pkg/x.txt"), ["pkg/CLAUDE.md", "shared.md"]);
    assert!(attached(281, ".claude/sub/x.txt").is_empty());
    assert_eq!(attached(281, "pkg/x.txt"), ["pkg/CLAUDE.md"]);
}

/// Releases before 2.1.139 read a memory's type only from a top-level `type:` (row 44), and
/// their memory instructions write it there: a memory Mneme creates or types for such a user
/// must carry it there too, or their Claude Code lists it untyped.
#[test]
fn before_2_1_139_a_new_memory_carries_a_top_level_type() {
    use mneme_api::{MemoryEdit, NewMemoryRequest};
    use mneme_core::frontmatter::{self, Generation};
    use std::os::unix::fs::PermissionsExt;
    let t = TestHome::new();
    let repo = t.git_repo("code/app");
    let bin = t.root.join("bin");
    let installed = |version: &str| {
        write_file(&bin.join("claude"), &format!("#!/bin/sh\necho '{version} (Claude Code)'\n"));
        fs::set_permissions(bin.join("claude"), fs::Permissions::from_mode(0o755)).unwrap();
        Mneme::new(t.env.clone().set_var("PATH", bin.to_string_lossy().to_string()), Arc::new(FixedClock::at_unix_secs(1_700_000_000)))
    };
    let req = ContextRequest { cwd: repo.clone(), ..Default::default() };
    let create = |m: &Mneme, name: &str| {
        let new = NewMemoryRequest { name: name.into(), description: "d".into(), kind: "feedback".into(), body: "b".into(), file_name: None };
        m.create_memory(&req, &new).unwrap();
        fs::read_to_string(t.memdir_for(&repo).join(format!("{name}.md"))).unwrap()
    };
    let generation = |text: &str| {
        let fm = frontmatter::parse(text).frontmatter.unwrap();
        (fm.memory_type().map(|k| k.as_str()), fm.generation())
    };

    let old = installed("2.1.138");
    let text = create(&old, "tabs");
    // The editor is told where a type goes, for the file it edits itself.
    assert_eq!(old.memory(&req, "tabs").unwrap().new_type_at, "top");
    assert_eq!(old.memory(&ContextRequest { claude_version: Some(ClaudeVersion::new(2, 1, 139)), ..req.clone() }, "tabs").unwrap().new_type_at, "metadata");
    assert_eq!(text, "---\nname: tabs\ndescription: d\ntype: feedback\n---\n\nb\n");
    // A memory without a type gains one where the release reads it.
    write_file(&t.memdir_for(&repo).join("plain.md"), "---\nname: plain\ndescription: d\n---\nbody\n");
    old.edit_memory(&req, &MemoryEdit { memory: "plain.md".into(), kind: Some("user".into()), ..Default::default() }).unwrap();
    let plain = fs::read_to_string(t.memdir_for(&repo).join("plain.md")).unwrap();
    assert_eq!(generation(&plain), (Some("user"), Generation::TopLevelType), "{plain}");

    // The manifest recall shows the model tags only the types the release reads: `tabs.md`'s
    // top-level one always, `spaces.md`'s (under `metadata:`) from 2.1.139.
    let spaces = "---\nname: spaces\ndescription: d\nmetadata:\n  type: feedback\n---\n\nb\n";
    write_file(&t.memdir_for(&repo).join("spaces.md"), spaces);
    let tags = |m: &Mneme| m.manifest(&req).unwrap().text.lines().map(|l| l.split(" (").next().unwrap().to_string()).collect::<Vec<_>>();
    let mut old_tags = tags(&old);
    old_tags.sort();
    assert_eq!(old_tags, ["- [feedback] tabs.md", "- [user] plain.md", "- spaces.md"]);
    fs::remove_file(t.memdir_for(&repo).join("spaces.md")).unwrap();

    let new = installed("2.1.139");
    assert_eq!(generation(&create(&new, "spaces")), (Some("feedback"), Generation::Metadata));
    // A memory that has its type keeps its form whatever the release.
    new.edit_memory(&req, &MemoryEdit { memory: "tabs.md".into(), kind: Some("project".into()), ..Default::default() }).unwrap();
    let tabs = fs::read_to_string(t.memdir_for(&repo).join("tabs.md")).unwrap();
    assert_eq!(generation(&tabs), (Some("project"), Generation::TopLevelType), "{tabs}");
}

#[test]
fn from_2_1_198_memory_stores_turn_the_index_off() {
    let t = TestHome::new();
    let repo = t.git_repo("code/stores");
    write_file(&t.memdir_for(&repo).join("MEMORY.md"), "- STORES-INDEX-LINE\n");
    write_file(&t.config_home().join("settings.json"), r#"{"env": {"CLAUDE_MEMORY_STORES": "[]"}}"#);
    let m = mneme(&t);

    let old = m.context(&at(repo.clone(), 197)).unwrap();
    assert!(old.block.contains("STORES-INDEX-LINE"), "{}", old.block);
    assert_eq!(old.auto_memory.index_note, None);

    let new = m.context(&at(repo.clone(), 198)).unwrap();
    assert!(!new.block.contains("STORES-INDEX-LINE"), "{}", new.block);
    assert!(new.auto_memory.enabled, "auto memory itself stays on");
    let why = new.auto_memory.index_note.expect("says why the index is missing");
    assert!(why.contains("CLAUDE_MEMORY_STORES") && why.contains("settings.json") && why.contains("2.1.198"), "{why}");
    assert!(new.env_from_settings.iter().any(|e| e.name == "CLAUDE_MEMORY_STORES"));

    // Blanks are no stores.
    write_file(&t.config_home().join("settings.json"), r#"{"env": {"CLAUDE_MEMORY_STORES": "  "}}"#);
    let blank = m.context(&at(repo.clone(), 332)).unwrap();
    assert!(blank.block.contains("STORES-INDEX-LINE"), "{}", blank.block);
    assert_eq!(blank.auto_memory.index_note, None);
}

#[test]
fn from_2_1_122_a_host_can_hand_the_index_over_as_text() {
    let t = TestHome::new();
    let repo = t.git_repo("code/cowork");
    write_file(&t.memdir_for(&repo).join("MEMORY.md"), "- FILE-INDEX-LINE\n");
    let settings = t.config_home().join("settings.json");
    write_file(&settings, r#"{"env": {"CLAUDE_COWORK_MEMORY_INDEX_CONTENT": "---\nname: kept\n---\nGIVEN-INDEX\n<!-- kept -->\n"}}"#);
    let m = mneme(&t);

    let old = m.context(&at(repo.clone(), 121)).unwrap();
    assert!(old.block.contains("FILE-INDEX-LINE") && !old.block.contains("GIVEN-INDEX"), "{}", old.block);
    assert_eq!(old.auto_memory.index_note, None);

    let new = m.context(&at(repo.clone(), 122)).unwrap();
    assert!(!new.block.contains("FILE-INDEX-LINE"), "{}", new.block);
    // Taken as it is: the frontmatter and the comment stay.
    assert!(new.block.contains("---\nname: kept\n---\nGIVEN-INDEX\n<!-- kept -->"), "{}", new.block);
    let note = new.auto_memory.index_note.expect("says where the index comes from");
    assert!(note.contains("CLAUDE_COWORK_MEMORY_INDEX_CONTENT") && note.contains("settings.json"), "{note}");
    assert!(!note.contains("GIVEN-INDEX"), "the note does not repeat the text: {note}");

    // An empty value loads no index at all.
    write_file(&settings, r#"{"env": {"CLAUDE_COWORK_MEMORY_INDEX_CONTENT": ""}}"#);
    let empty = m.context(&at(repo.clone(), 332)).unwrap();
    assert!(!empty.block.contains("FILE-INDEX-LINE") && !empty.block.contains("MEMORY.md"), "{}", empty.block);
    assert!(empty.auto_memory.index_note.is_some_and(|n| n.contains("empty")));

    // Memory stores win: no index, whatever the host gave.
    write_file(&settings, r#"{"env": {"CLAUDE_COWORK_MEMORY_INDEX_CONTENT": "GIVEN-INDEX", "CLAUDE_MEMORY_STORES": "[]"}}"#);
    let stores = m.context(&at(repo.clone(), 332)).unwrap();
    assert!(!stores.block.contains("GIVEN-INDEX"), "{}", stores.block);
    assert!(stores.auto_memory.index_note.is_some_and(|n| n.contains("CLAUDE_MEMORY_STORES")));
}
