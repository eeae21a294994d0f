//! The read-only Bash tables Mneme's agents judge commands by (`data/readonly.json`) are
//! exactly those of the Claude Code release they were taken from, as
//! `data/extract-readonly.mjs` reads them out of its binary; and the extractor still finds
//! every table in the newest release of the matrix, so the tables can be taken again.
//!
//! Needs the release (`MNEME_CLAUDE_BIN` or one of `MNEME_CLAUDE_BINS`, see
//! `scripts/claude-code.sh`) and Node; skipped without them unless `MNEME_REQUIRE_CLAUDE=1`.

use mneme_core::versions::ClaudeVersion;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The release `data/readonly.json` was taken from (`src/bash/tables.rs` says so too).
const TABLES_FROM: &str = "2.1.197";

/// Every Claude Code binary the environment names, with its release.
fn binaries() -> Vec<(ClaudeVersion, PathBuf)> {
    let mut out = Vec::new();
    if let Some(path) = std::env::var_os("MNEME_CLAUDE_BIN").map(PathBuf::from) {
        if let Some(v) = version_of(&path) {
            out.push((v, path));
        }
    }
    for pair in std::env::var("MNEME_CLAUDE_BINS").unwrap_or_default().split(',') {
        if let Some((v, p)) = pair.split_once('=') {
            if let Ok(v) = v.parse() {
                out.push((v, PathBuf::from(p)));
            }
        }
    }
    out.retain(|(_, p)| p.is_file());
    out
}

fn version_of(binary: &Path) -> Option<ClaudeVersion> {
    let out = Command::new(binary).arg("--version").output().ok()?;
    String::from_utf8_lossy(&out.stdout).split_whitespace().next()?.parse().ok()
}

fn extract(binary: &Path) -> Value {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/extract-readonly.mjs");
    let out = Command::new("node").arg(&script).arg(binary).output().expect("node runs");
    assert!(out.status.success(), "extract-readonly.mjs failed on {}:\n{}", binary.display(), String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("the extractor prints JSON")
}

fn required() -> bool {
    std::env::var("MNEME_REQUIRE_CLAUDE").is_ok_and(|v| v == "1")
}

#[test]
fn the_tables_are_the_releases_own() {
    let bins = binaries();
    let from: ClaudeVersion = TABLES_FROM.parse().unwrap();
    let Some((_, binary)) = bins.iter().find(|(v, _)| *v == from) else {
        assert!(!required(), "MNEME_REQUIRE_CLAUDE=1 but no Claude Code {TABLES_FROM} is named by MNEME_CLAUDE_BIN(S)");
        eprintln!("skipped: set MNEME_CLAUDE_BIN=\"$(scripts/claude-code.sh {TABLES_FROM})\"");
        return;
    };
    let checked_in: Value = serde_json::from_str(include_str!("../data/readonly.json")).unwrap();
    assert!(checked_in == extract(binary), "data/readonly.json differs from what Claude Code {TABLES_FROM} holds; regenerate it with data/extract-readonly.mjs");

    // The newest release: every table found, the main one still led by xargs.
    let (newest, path) = bins.iter().max_by_key(|(v, _)| *v).unwrap();
    let tables = extract(path);
    assert_eq!(tables["commands"][0], "xargs", "{newest}");
    for key in ["xargsTargets", "readonlyCommands", "exactCommands", "exactArgv", "findDangerous", "findWithArg", "globSafe", "regexes"] {
        assert!(tables[key].as_array().is_some_and(|a| !a.is_empty()), "{newest}: no {key}");
    }
}
