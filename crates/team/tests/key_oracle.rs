//! Key validation against Claude Code's own code: `data/key_oracle.json` is what Claude Code
//! 2.1.197's `validateTeamMemKey` said for each key of `data/key_cases.json` on the fixture
//! below (regenerate with `data/key_oracle.mjs`); `$ROOT` stands for the fixture's folder.
#![cfg(unix)]

use mneme_team::keys::{team_dir_prefix, validate_team_mem_key};
use serde_json::Value;
use std::os::unix::fs::symlink;

#[test]
fn validation_agrees_with_claude_code_on_every_key() {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/key_oracle.json"))
        .expect("the oracle file is vendored");
    let oracle: Value = serde_json::from_str(&text).unwrap();

    // The fixture key_oracle.mjs builds.
    let tmp = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(tmp.path()).unwrap();
    let memory = root.join("memory");
    let team = memory.join("team");
    std::fs::create_dir_all(team.join("real")).unwrap();
    std::fs::create_dir_all(memory.join("outside")).unwrap();
    std::fs::create_dir_all(memory.join("team-evil")).unwrap();
    std::fs::write(memory.join("outside/secret.md"), "s").unwrap();
    std::fs::write(team.join("file"), "f").unwrap();
    symlink(memory.join("outside"), team.join("linked")).unwrap();
    symlink(memory.join("outside/secret.md"), team.join("file.md")).unwrap();
    symlink(memory.join("team-evil"), team.join("evil")).unwrap();
    symlink(team.join("real"), team.join("alias")).unwrap();
    symlink(memory.join("nowhere"), team.join("dangling")).unwrap();
    symlink(team.join("loop-b"), team.join("loop-a")).unwrap();
    symlink(team.join("loop-a"), team.join("loop-b")).unwrap();

    let root = root.to_str().unwrap();
    let hide = |s: &str| s.replace(root, "$ROOT");
    assert_eq!(hide(&team_dir_prefix(&team)), oracle["teamPath"]);
    let cases = oracle["cases"].as_array().unwrap();
    assert!(cases.len() > 60);
    let mut failures = Vec::new();
    for c in cases {
        let key = c["key"].as_str().unwrap();
        let got = match validate_team_mem_key(&team, key) {
            Ok(p) => ("ok", hide(&p.to_string_lossy())),
            Err(e) => ("error", hide(&e.to_string())),
        };
        let want = match (c.get("ok"), c.get("error")) {
            (Some(p), _) => ("ok", p.as_str().unwrap().to_string()),
            (_, Some(e)) => ("error", e.as_str().unwrap().to_string()),
            _ => panic!("malformed oracle case {c}"),
        };
        if got != want {
            failures.push(format!("{key:?}: Claude Code {want:?}, Mneme {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
