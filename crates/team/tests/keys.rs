//! Team memory key validation against hostile keys and real symbolic links, with Claude
//! Code's exact messages.
#![cfg(unix)]

use mneme_team::keys::{
    is_real_path_within_team_dir, realpath_deepest_existing, sanitize_path_key, validate_team_mem_key,
    validate_team_mem_write_path, write_team_file, PathTraversalError, TeamFileError,
};
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

struct Fixture {
    _tmp: tempfile::TempDir,
    /// `<tmp>/memory` (real path, so messages can be predicted).
    memory: PathBuf,
    team: PathBuf,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let memory = std::fs::canonicalize(tmp.path()).unwrap().join("memory");
    let team = memory.join("team");
    std::fs::create_dir_all(&team).unwrap();
    Fixture { _tmp: tmp, memory, team }
}

fn message(team: &Path, key: &str) -> String {
    match validate_team_mem_key(team, key) {
        Ok(p) => format!("ok {}", p.strip_prefix(team).unwrap().display()),
        Err(e) => e.to_string(),
    }
}

#[test]
fn hostile_keys_get_claude_codes_messages() {
    let f = fixture();
    let cases: &[(&str, &str)] = &[
        ("a\0b.md", "Null byte in path key: \"a\0b.md\""),
        // `%00` decodes to a NUL, but the key itself has none; the decoded `..` is what counts.
        ("%00../x", "URL-encoded traversal in path key: \"%00../x\""),
        ("%2e%2e%2fx.md", "URL-encoded traversal in path key: \"%2e%2e%2fx.md\""),
        ("..%2Fx.md", "URL-encoded traversal in path key: \"..%2Fx.md\""),
        ("%2E%2E/x.md", "URL-encoded traversal in path key: \"%2E%2E/x.md\""),
        ("notes%2Fdeploy.md", "URL-encoded traversal in path key: \"notes%2Fdeploy.md\""),
        ("\u{ff0e}\u{ff0e}\u{ff0f}x.md", "Unicode-normalized traversal in path key: \"\u{ff0e}\u{ff0e}\u{ff0f}x.md\""),
        ("\u{2024}\u{2024}/x.md", "Unicode-normalized traversal in path key: \"\u{2024}\u{2024}/x.md\""),
        ("a\u{ff3c}b.md", "Unicode-normalized traversal in path key: \"a\u{ff3c}b.md\""),
        ("\u{ff0f}etc\u{ff0f}passwd", "Unicode-normalized traversal in path key: \"\u{ff0f}etc\u{ff0f}passwd\""),
        ("..\\x.md", "Backslash in path key: \"..\\x.md\""),
        ("notes\\deploy.md", "Backslash in path key: \"notes\\deploy.md\""),
        ("/etc/passwd", "Absolute path key: \"/etc/passwd\""),
        ("//server/x.md", "Absolute path key: \"//server/x.md\""),
        ("a/../../x.md", "Key escapes team memory directory: \"a/../../x.md\""),
        ("../x.md", "Key escapes team memory directory: \"../x.md\""),
        ("../team-evil/x.md", "Key escapes team memory directory: \"../team-evil/x.md\""),
        ("..", "Key escapes team memory directory: \"..\""),
        ("", "Key escapes team memory directory: \"\""),
        (".", "Key escapes team memory directory: \".\""),
        ("a/..", "Key escapes team memory directory: \"a/..\""),
        // Accepted: subfolders, lexical `..` that stays inside, malformed escapes kept as-is,
        // escapes that decode to harmless text, NFKC changes without traversal.
        ("notes/deploy.md", "ok notes/deploy.md"),
        ("a/../b.md", "ok b.md"),
        ("./c.md", "ok c.md"),
        ("100%.md", "ok 100%.md"),
        ("%zz%2F.md", "ok %zz%2F.md"),
        ("caf%C3%A9.md", "ok caf%C3%A9.md"),
        ("%5C.md", "ok %5C.md"),
        ("\u{fb01}le.md", "ok \u{fb01}le.md"),
        ("..md", "ok ..md"),
    ];
    for (key, want) in cases {
        assert_eq!(message(&f.team, key), *want, "key {key:?}");
    }
}

#[test]
fn sanitize_alone_checks_in_claude_codes_order() {
    // Backslash and absolute together: the backslash is reported first.
    assert_eq!(sanitize_path_key("/a\\b").unwrap_err(), PathTraversalError::Backslash("/a\\b".into()));
    // NUL wins over everything.
    assert_eq!(sanitize_path_key("/%2e\0").unwrap_err(), PathTraversalError::NullByteInKey("/%2e\0".into()));
    assert_eq!(sanitize_path_key("a/b.md"), Ok("a/b.md"));
}

#[test]
fn a_link_out_of_the_team_folder_is_refused() {
    let f = fixture();
    let outside = f.memory.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::write(outside.join("secret.md"), "s").unwrap();
    symlink(&outside, f.team.join("linked")).unwrap();
    symlink(outside.join("secret.md"), f.team.join("file.md")).unwrap();
    for key in ["linked/x.md", "linked/secret.md", "linked", "file.md", "linked/deep/er/x.md"] {
        assert_eq!(message(&f.team, key), format!("Key escapes team memory directory via symlink: \"{key}\""));
    }
}

#[test]
fn a_link_to_a_sibling_named_like_the_team_folder_is_refused() {
    let f = fixture();
    let evil = f.memory.join("team-evil");
    std::fs::create_dir_all(&evil).unwrap();
    symlink(&evil, f.team.join("evil")).unwrap();
    assert_eq!(message(&f.team, "evil/x.md"), "Key escapes team memory directory via symlink: \"evil/x.md\"");
    assert!(!is_real_path_within_team_dir(&f.team, &evil.join("x.md")));
    assert!(is_real_path_within_team_dir(&f.team, &f.team));
    assert!(is_real_path_within_team_dir(&f.team, &f.team.join("x.md")));
}

#[test]
fn links_that_stay_inside_are_fine() {
    let f = fixture();
    std::fs::create_dir_all(f.team.join("real")).unwrap();
    symlink(f.team.join("real"), f.team.join("alias")).unwrap();
    assert_eq!(message(&f.team, "alias/x.md"), "ok alias/x.md");
    // A team folder that is itself a link is resolved, as Claude Code resolves it.
    let elsewhere = f.memory.join("shared-team");
    std::fs::create_dir_all(&elsewhere).unwrap();
    let linked_team = f.memory.join("team2");
    symlink(&elsewhere, &linked_team).unwrap();
    assert_eq!(message(&linked_team, "x.md"), "ok x.md");
    // A team folder that does not exist yet passes; nothing can escape through it.
    assert_eq!(message(&f.memory.join("absent/team"), "x.md"), "ok x.md");
}

#[test]
fn dangling_links_and_loops_are_refused_with_the_component() {
    let f = fixture();
    symlink(f.memory.join("nowhere"), f.team.join("dangling")).unwrap();
    symlink(f.team.join("loop-b"), f.team.join("loop-a")).unwrap();
    symlink(f.team.join("loop-a"), f.team.join("loop-b")).unwrap();
    let dangling = f.team.join("dangling").display().to_string();
    assert_eq!(message(&f.team, "dangling"), format!("Dangling symlink detected (target does not exist): \"{dangling}\""));
    assert_eq!(
        message(&f.team, "dangling/x.md"),
        format!("Dangling symlink detected (target does not exist): \"{dangling}\"")
    );
    let looped = f.team.join("loop-a/x.md").display().to_string();
    assert_eq!(message(&f.team, "loop-a/x.md"), format!("Symlink loop detected in path: \"{looped}\""));
}

#[test]
fn realpath_deepest_existing_rejoins_the_missing_tail() {
    let f = fixture();
    std::fs::create_dir_all(f.team.join("a")).unwrap();
    symlink(f.team.join("a"), f.team.join("b")).unwrap();
    assert_eq!(realpath_deepest_existing(&f.team.join("b/c/d.md")).unwrap(), f.team.join("a/c/d.md"));
    // A regular file in the middle (ENOTDIR) keeps walking up.
    std::fs::write(f.team.join("file"), "x").unwrap();
    assert_eq!(realpath_deepest_existing(&f.team.join("file/x")).unwrap(), f.team.join("file/x"));
}

#[test]
fn write_paths_are_checked_like_claude_code_2_1_88() {
    let f = fixture();
    let team = &f.team;
    let cwd = f.memory.clone();
    let check = |p: &str| match validate_team_mem_write_path(team, p, &cwd) {
        Ok(p) => format!("ok {}", p.display()),
        Err(e) => e.to_string(),
    };
    assert_eq!(check("team/x\0.md"), "Null byte in path: \"team/x\0.md\"");
    assert_eq!(check("team/x.md"), format!("ok {}", team.join("x.md").display()));
    assert_eq!(check("team-evil/x.md"), "Path escapes team memory directory: \"team-evil/x.md\"");
    assert_eq!(check("/etc/passwd"), "Path escapes team memory directory: \"/etc/passwd\"");
    std::fs::create_dir_all(f.memory.join("outside")).unwrap();
    symlink(f.memory.join("outside"), team.join("out")).unwrap();
    let p = team.join("out/x.md").display().to_string();
    assert_eq!(check(&p), format!("Path escapes team memory directory via symlink: \"{p}\""));
}

#[test]
fn write_team_file_writes_atomically_inside() {
    let f = fixture();
    let p = write_team_file(&f.team, "notes/ci/green.md", b"CI must stay green\n").unwrap();
    assert_eq!(p, f.team.join("notes/ci/green.md"));
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "CI must stay green\n");
    write_team_file(&f.team, "notes/ci/green.md", b"replaced").unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "replaced");
    // No temporary files left behind.
    let names: Vec<_> = std::fs::read_dir(f.team.join("notes/ci")).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(names, vec![std::ffi::OsString::from("green.md")]);
    // The team folder is created when missing.
    let fresh = f.memory.join("fresh/team");
    write_team_file(&fresh, "x.md", b"x").unwrap();
    assert_eq!(std::fs::read_to_string(fresh.join("x.md")).unwrap(), "x");
}

#[test]
fn write_team_file_refuses_what_validation_refuses_and_writes_nothing() {
    let f = fixture();
    let outside = f.memory.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    symlink(&outside, f.team.join("linked")).unwrap();
    for key in ["../x.md", "linked/x.md", "%2e%2e%2fx.md", "/abs.md"] {
        let err = write_team_file(&f.team, key, b"x").unwrap_err();
        assert!(matches!(err, TeamFileError::Key(_)), "{key}: {err}");
    }
    assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 0);
    assert!(!f.memory.join("x.md").exists());
    // A folder where the file should go is an error, not a silent success.
    std::fs::create_dir_all(f.team.join("dir.md")).unwrap();
    assert!(matches!(write_team_file(&f.team, "dir.md", b"x"), Err(TeamFileError::Io { .. })));
}
