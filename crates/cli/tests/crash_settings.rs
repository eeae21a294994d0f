//! `mneme settings auto-memory|auto-dream|memory-dir` killed at random points (SIGKILL), in
//! turn: `settings.json` is a file Claude Code reads (and writes) too, and one it cannot parse
//! makes it ignore every setting in it. After every kill the file is valid JSON holding every
//! key it held, each either its old value or the one asked for, with its formatting kept;
//! `~/.claude.json`, Claude Code's own, is never written; and the next settings write removes
//! the temporary file a killed one left. `crash_fsize.rs` stops the same write at a chosen byte.
#![cfg(target_os = "linux")]

mod killing;

use killing::{cmd, ok, kill_at_random, span_of, temps_under, Ended};
use mneme_testsupport::TestHome;
use serde_json::{json, Map, Value};
use std::fs;

const RUNS: usize = 60;

/// The writes taken in turn, and the key and value each sets (`None`: removes it).
fn step(i: usize, dir: &str) -> (Vec<String>, &'static str, Option<Value>) {
    let s = |a: &[&str]| a.iter().map(|x| x.to_string()).collect();
    match i % 6 {
        0 => (s(&["settings", "auto-memory", "off"]), "autoMemoryEnabled", Some(json!(false))),
        1 => (s(&["settings", "auto-dream", "on"]), "autoDreamEnabled", Some(json!(true))),
        2 => (s(&["settings", "memory-dir", dir]), "autoMemoryDirectory", Some(json!(dir))),
        3 => (s(&["settings", "auto-memory", "on"]), "autoMemoryEnabled", Some(json!(true))),
        4 => (s(&["settings", "auto-dream", "off"]), "autoDreamEnabled", Some(json!(false))),
        _ => (s(&["settings", "memory-dir", "--clear"]), "autoMemoryDirectory", None),
    }
}

#[test]
fn killed_settings_writes_leave_valid_json_with_every_key() {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let settings = h.config_home().join("settings.json");
    // 40 KB of settings (an `env` block of padding, hooks, permissions), so the write is large.
    let pad: Map<String, Value> = (0..400).map(|i| (format!("PAD_{i}"), Value::from("p".repeat(80)))).collect();
    let start = json!({
        "model": "opus",
        "env": pad,
        "permissions": {"allow": ["Bash(git status)"], "deny": ["Read(./.env)"]},
        "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "true"}]}]},
        "autoMemoryEnabled": true,
        "autoDreamEnabled": false,
    });
    fs::write(&settings, serde_json::to_string_pretty(&start).unwrap() + "\n").unwrap();
    let claude_json = h.home().join(".claude.json");
    let global = "{\n  \"numStartups\": 7,\n  \"projects\": {}\n}\n";
    fs::write(&claude_json, global).unwrap();
    let dir = h.root.join("shared-memory").to_string_lossy().into_owned();

    let span_us = span_of(|| drop(ok(&h, &repo, &step(0, &dir).0.iter().map(String::as_str).collect::<Vec<_>>())));
    let mut expected = start.as_object().unwrap().clone();
    expected.insert("autoMemoryEnabled".into(), json!(false));
    let (mut killed, mut temps_seen) = (0, 0);
    for i in 1..RUNS {
        let (args, key, value) = step(i, &dir);
        let ended = kill_at_random(cmd(&h, &repo, &args.iter().map(String::as_str).collect::<Vec<_>>()), i as u64, span_us, None);
        killed += usize::from(ended == Ended::Killed);
        let text = fs::read_to_string(&settings).unwrap();
        let now: Map<String, Value> = serde_json::from_str::<Value>(&text)
            .unwrap_or_else(|e| panic!("run {i}: settings.json is not JSON ({e}): Claude Code would ignore all of it"))
            .as_object()
            .unwrap()
            .clone();
        // Every other key as it was; this one its old value or the new one.
        let mut old = expected.clone();
        let mut new = expected.clone();
        match &value {
            Some(v) => drop(new.insert(key.into(), v.clone())),
            None => drop(new.remove(key)),
        }
        assert!(now == old || now == new, "run {i} ({args:?}): settings.json holds {now:?}");
        assert!(text.starts_with("{\n  \"model\": \"opus\",\n  \"env\": {\n    \"PAD_0\""), "run {i}: the formatting is kept: {}", &text[..80]);
        if now == new {
            old = new;
        }
        expected = old;
        assert_eq!(fs::read_to_string(&claude_json).unwrap(), global, "run {i}: ~/.claude.json is Claude Code's and is never written");
        temps_seen += temps_under(&h.config_home()).len();
    }
    // The next write removes what killed ones left.
    ok(&h, &repo, &["settings", "auto-memory", "on"]);
    assert_eq!(temps_under(&h.config_home()), Vec::<String>::new());
    let now: Value = serde_json::from_str(&fs::read_to_string(&settings).unwrap()).unwrap();
    assert_eq!((&now["autoMemoryEnabled"], &now["env"]["PAD_399"], &now["hooks"]), (&json!(true), &json!("p".repeat(80)), &start["hooks"]));
    eprintln!("{RUNS} settings writes, {killed} killed, {temps_seen} temporary files seen after kills");
    assert!(killed > 0, "no kill landed: the test proved nothing (a write took {span_us} µs)");
}
