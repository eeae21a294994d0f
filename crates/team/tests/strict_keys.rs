//! Mneme's strict canonical key policy (`check_strict_key`): every class of key it refuses,
//! each of which Claude Code's own check accepts, and the keys it must keep accepting.

use mneme_team::keys::{check_strict_key, validate_team_mem_key, StrictKeyError, MAX_COMPONENT_BYTES, MAX_KEY_BYTES, MAX_KEY_DEPTH};

fn team() -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let team = std::fs::canonicalize(tmp.path()).unwrap().join("memory/team");
    std::fs::create_dir_all(&team).unwrap();
    (tmp, team)
}

/// Claude Code accepts the key (so the strict policy is what stops it) and the strict policy
/// refuses it as `expected` says.
fn refused(key: &str, expected: fn(&StrictKeyError) -> bool) {
    let (_tmp, team) = team();
    assert!(validate_team_mem_key(&team, key).is_ok(), "Claude Code's check accepts {key:?}");
    let err = check_strict_key(key).expect_err(key);
    assert!(expected(&err), "{key:?}: {err:?}");
    // Every message says what to do and never carries a raw control character.
    let msg = err.to_string();
    assert!(!msg.chars().any(|c| c.is_control()), "{msg:?}");
}

#[test]
fn accepts_ordinary_keys() {
    for key in [
        "MEMORY.md",
        "notes/deploy.md",
        "a/b/c/d.txt",
        "émigré/café.md",
        "日本語/メモ.md",
        "with space/inner space.md",
        "dots.in.name.md",
        "con-tact.md",
        "console.md",
        "com10.md",
        "lpt.md",
        ".hidden/in-a-dot-folder.md",
        "a\u{2010}b.md",
    ] {
        assert_eq!(check_strict_key(key), Ok(()), "{key:?}");
    }
    assert_eq!(check_strict_key(&format!("{}.md", "a".repeat(MAX_COMPONENT_BYTES - 3))), Ok(()));
    let long = format!("{}/x.md", vec!["b".repeat(30); 15].join("/"));
    assert!(long.len() <= MAX_KEY_BYTES && long.split('/').count() == MAX_KEY_DEPTH);
    assert_eq!(check_strict_key(&long), Ok(()));
}

#[test]
fn refuses_non_canonical_spellings() {
    for key in ["./a.md", "a//b.md", "a/./b.md", "a/../b.md", "notes/", "a/b/", "./notes/x.md"] {
        refused(key, |e| matches!(e, StrictKeyError::NotCanonical { .. }));
    }
    let err = check_strict_key("a//b.md").unwrap_err().to_string();
    assert!(err.contains("\"a/b.md\""), "{err}");
    assert!(matches!(check_strict_key(""), Err(StrictKeyError::Empty)));
    // Climbing out keeps Claude Code's message.
    assert_eq!(check_strict_key("a/../../x.md").unwrap_err().to_string(), "Key escapes team memory directory: \"a/../../x.md\"");
}

#[test]
fn refuses_control_characters() {
    for (key, code) in [("a\nb.md", 0x0a), ("\u{1b}[31mred.md", 0x1b), ("tab\t.md", 0x09), ("del\u{7f}.md", 0x7f), ("c1\u{85}.md", 0x85), ("cr\r.md", 0x0d)] {
        refused(key, |e| matches!(e, StrictKeyError::ControlCharacter { .. }));
        assert!(matches!(check_strict_key(key), Err(StrictKeyError::ControlCharacter { code: c, .. }) if c == code), "{key:?}");
    }
    // NUL keeps Claude Code's own refusal.
    assert_eq!(check_strict_key("a\0b.md").unwrap_err().to_string(), "Null byte in path key: \"a\0b.md\"");
}

#[test]
fn refuses_bidi_and_invisible_characters() {
    for key in [
        "invoice\u{202e}dm.txt",
        "a\u{202a}b.md",
        "a\u{2066}b.md",
        "a\u{200b}b.md",
        "a\u{200d}b.md",
        "\u{feff}bom.md",
        "a\u{2028}b.md",
        "a\u{061c}b.md",
        "a\u{00ad}b.md",
        "tag\u{e0041}.md",
    ] {
        refused(key, |e| matches!(e, StrictKeyError::InvisibleCharacter { .. }));
    }
}

#[test]
fn refuses_blanks_and_lookalike_slashes() {
    // Each renders as a space, or nothing, or a slash: `notes∕deploy.md` reads as a folder.
    for key in ["a\u{2800}.md", "a.md\u{3000}", "a\u{00a0}b.md", "a\u{2009}b.md", "x\u{205f}.md"] {
        refused(key, |e| matches!(e, StrictKeyError::InvisibleCharacter { .. }));
    }
    for key in ["notes\u{2215}deploy.md", "notes\u{2044}deploy.md", "notes\u{29f8}deploy.md", "a\u{2216}b.md"] {
        refused(key, |e| matches!(e, StrictKeyError::LookalikeSlash { .. }));
    }
}

#[test]
fn refuses_files_team_sync_never_pushes() {
    // Claude Code's push sends only `.md`/`.txt` names not starting with a dot; a key it would
    // never send back would sit in everyone's folder as the server's alone.
    for key in [".bashrc", ".git/config", "notes/.hidden.md", "script.sh", "notes", "x.md.bak"] {
        refused(key, |e| matches!(e, StrictKeyError::NotSynced { .. }));
    }
}

#[test]
fn refuses_over_long_components_and_paths() {
    refused(&format!("{}.md", "a".repeat(MAX_COMPONENT_BYTES - 2)), |e| matches!(e, StrictKeyError::ComponentTooLong { .. }));
    // 128 two-byte characters and ".md": 259 bytes in one component.
    refused(&format!("{}.md", "é".repeat(128)), |e| matches!(e, StrictKeyError::ComponentTooLong { .. }));
    let long = format!("{}/x.md", vec!["d".repeat(100); 6].join("/"));
    assert!(long.len() > MAX_KEY_BYTES);
    assert!(matches!(check_strict_key(&long), Err(StrictKeyError::TooLong(n)) if n == long.len()));
    // Deep but short: 500 levels of one letter fit in 1,004 bytes, past macOS's path limit
    // under any team folder.
    let deep = format!("{}x.md", "a/".repeat(MAX_KEY_DEPTH));
    assert!(deep.len() <= MAX_KEY_BYTES);
    assert!(matches!(check_strict_key(&deep), Err(StrictKeyError::TooDeep(n)) if n == MAX_KEY_DEPTH + 1));
}

#[test]
fn refuses_names_windows_cannot_create() {
    for key in [
        "C:",
        "C:/x.md",
        "a:b.md",
        "con.md",
        "CON",
        "notes/nul.txt",
        "Aux.tar.md",
        "prn .md",
        "com1.md",
        "LPT9.md",
        "com\u{b9}.md",
        "conin$.md",
        "trailing.",
        "dir./x.md",
        "trailing.md ",
        "q?.md",
        "star*.md",
        "pipe|.md",
        "lt<.md",
        "gt>.md",
        "quote\".md",
    ] {
        refused(key, |e| matches!(e, StrictKeyError::Windows { .. }));
    }
}

#[test]
fn refuses_keys_that_are_not_nfc() {
    // "é" as e + combining acute: the same file as the NFC key on macOS.
    refused("cafe\u{301}.md", |e| matches!(e, StrictKeyError::NotNfc { .. }));
}

#[test]
fn keeps_claude_codes_refusals() {
    for (key, message) in [
        ("../x.md", "Key escapes team memory directory: \"../x.md\""),
        ("..%2Fx.md", "URL-encoded traversal in path key: \"..%2Fx.md\""),
        ("a\\b.md", "Backslash in path key: \"a\\b.md\""),
        ("/etc/passwd", "Absolute path key: \"/etc/passwd\""),
    ] {
        assert_eq!(check_strict_key(key).unwrap_err().to_string(), message);
    }
}
