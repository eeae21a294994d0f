//! Agent memory against the real binaries, for every release in the version matrix: a project
//! with three agents (a user agent with `memory: user`, a project agent with `memory: project`
//! and no MEMORY.md yet, and a plugin agent with `memory: local` whose MEMORY.md is over 200
//! lines) is run through Claude Code with the test stub model scripted so that its main loop
//! starts all three through the Agent tool; each sub-agent's request must carry, right after
//! the agent's own prompt, exactly what `mneme context --agent NAME` prints.
//!
//! `mneme context --agent` takes Claude Code's instruction text from the installed binary (by
//! running it against its own loopback stub), so what this checks is Mneme's part: which agents
//! exist and where (the plugin's namespaced type and its dashed folder name), each scope's
//! folder, MEMORY.md's embedding with Claude Code's cut and warning, the empty-index text, and
//! where the section ends. Binaries come from `MNEME_CLAUDE_BINS` as in `tests/versions.rs`.

use mneme_stub_model::{StubModel, Turn};
use mneme_testsupport::claude_code;
use serde_json::{json, Value};
use std::path::{Path, PathBuf};
use std::process::Command;

const TASK: &str = "Agent memory matrix: reply with one word.";

fn write(p: &Path, text: &str) {
    std::fs::create_dir_all(p.parent().unwrap()).unwrap();
    std::fs::write(p, text).unwrap();
}

/// The fixture: `<root>/home` (config home `.claude`) and `<root>/project` (a repository).
fn fixture(root: &Path) -> (PathBuf, PathBuf) {
    let home = root.join("home");
    let config = home.join(".claude");
    let project = root.join("project");
    std::fs::create_dir_all(project.join(".git")).unwrap();
    write(&config.join("agents/reviewer.md"), "---\nname: reviewer\ndescription: Reviews changes\nmemory: user\n---\n\nPROMPT-reviewer: you review.\n");
    let reviewer = config.join("agent-memory/reviewer");
    write(&reviewer.join("MEMORY.md"), "\n- [Style](style.md) — short names, no abbreviations\n- [Tests](tests.md) — hermetic only\n\n");
    write(&reviewer.join("style.md"), "---\nname: Style\ndescription: short names\ntype: feedback\n---\nShort names.\n");
    write(&project.join(".claude/agents/planner.md"), "---\nname: planner\ndescription: Plans work\nmemory: project\n---\nPROMPT-planner: you plan.");
    // A marketplace in a folder, known to Claude Code, listing the plugin (it skips plugins
    // whose marketplace it does not know).
    let market = root.join("market");
    write(
        &market.join(".claude-plugin/marketplace.json"),
        r#"{"name":"mkt","owner":{"name":"Mneme tests"},"plugins":[{"name":"toolkit","source":"./toolkit","description":"test"}]}"#,
    );
    let known = json!({"mkt": {"source": {"source": "directory", "path": market}, "installLocation": market, "lastUpdated": "2026-01-01T00:00:00.000Z"}});
    write(&config.join("plugins/known_marketplaces.json"), &known.to_string());
    let install = market.join("toolkit");
    write(&install.join(".claude-plugin/plugin.json"), r#"{"name":"toolkit","version":"1.0.0","description":"test"}"#);
    write(&install.join("agents/auditor.md"), "---\ndescription: Audits things\nmemory: local\n---\n\nPROMPT-toolkit:auditor: you audit.\n");
    let long: String = (1..=230).map(|i| format!("- [Note {i}](note_{i}.md) — line {i}\n")).collect();
    write(&project.join(".claude/agent-memory-local/toolkit-auditor/MEMORY.md"), &long);
    let installed = json!({"version": 2, "plugins": {"toolkit@mkt": [{
        "scope": "user", "installPath": install, "version": "1.0.0",
        "installedAt": "2026-01-01T00:00:00.000Z", "lastUpdated": "2026-01-01T00:00:00.000Z"}]}});
    write(&config.join("plugins/installed_plugins.json"), &installed.to_string());
    write(&config.join("settings.json"), r#"{"enabledPlugins":{"toolkit@mkt":true}}"#);
    (home, project)
}

/// Runs the real binary; answers its first main-loop turn with the three Agent calls.
fn capture(bin: &Path, home: &Path, project: &Path) -> Vec<Value> {
    let stub = StubModel::start_blocking();
    let agents = ["reviewer", "planner", "toolkit:auditor"];
    for tool in ["Agent", "Task"] {
        let mut turn: Option<Turn> = None;
        for (i, a) in agents.iter().enumerate() {
            let input = json!({"description": format!("probe {i}"), "prompt": TASK, "subagent_type": a});
            turn = Some(match turn {
                None => Turn::tool_use(tool, input),
                Some(t) => t.and_tool_use(tool, input),
            });
        }
        let t = tool.to_string();
        stub.push_when(
            move |r| r.has_tool(&t) && r.tool_result_count() == 0 && !r.body["messages"][0].to_string().contains(TASK),
            turn.unwrap(),
        );
    }
    let mut cmd = Command::new(bin);
    cmd.env_clear()
        .envs(stub.claude_code_vars())
        .env("HOME", home)
        .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
        .args(["-p", "Start the agents.", "--output-format", "json", "--strict-mcp-config", "--no-session-persistence"])
        .current_dir(project)
        .stdin(std::process::Stdio::null());
    let out = cmd.output().expect("run claude");
    let requests: Vec<Value> = stub
        .requests()
        .into_iter()
        .filter(|r| r.is_anthropic_message() && r.body["messages"][0].to_string().contains(TASK))
        .map(|r| r.body)
        .collect();
    assert!(requests.len() >= 3, "expected three sub-agent requests, got {}; stderr: {}", requests.len(), String::from_utf8_lossy(&out.stderr));
    requests
}

/// The system text after `<agent prompt>\n\n` in whichever sub-agent request carries it.
fn after_prompt(requests: &[Value], prompt: &str) -> String {
    let opening = format!("{prompt}\n\n");
    for r in requests {
        let texts: Vec<String> = match &r["system"] {
            Value::String(s) => vec![s.clone()],
            Value::Array(blocks) => blocks.iter().filter_map(|b| b["text"].as_str().map(str::to_string)).collect(),
            _ => vec![],
        };
        for t in texts {
            if let Some(at) = t.find(&opening) {
                return t[at + opening.len()..].to_string();
            }
        }
    }
    panic!("no sub-agent request carries {prompt:?}");
}

fn mneme_section(version: &str, bin: &Path, home: &Path, project: &Path, data: &Path, agent: &str) -> String {
    // `claude` on PATH is this release, as the user would have it.
    let bin_dir = data.join(format!("bin-{version}"));
    std::fs::create_dir_all(&bin_dir).unwrap();
    let link = bin_dir.join("claude");
    if !link.exists() {
        std::os::unix::fs::symlink(bin, &link).unwrap();
    }
    let out = Command::new(env!("CARGO_BIN_EXE_mneme"))
        .env_clear()
        .env("PATH", format!("{}:/usr/bin:/bin", bin_dir.display()))
        .env("HOME", home)
        .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
        .env("MNEME_DATA_DIR", data)
        .args(["context", "--agent", agent, "--claude-version", version, "--cwd"])
        .arg(project)
        .output()
        .unwrap();
    assert!(out.status.success(), "mneme context --agent {agent}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn agent_memory_sections_match_every_release() {
    let Some(bins) = claude_code::or_skip(claude_code::matrix()) else { return };
    // One release per worker at a time, each in a fixture of its own: a release's run is mostly
    // Claude Code starting (about two thirds of a core), so one after another left a two-core
    // machine half idle. The matrix is oldest first, so 2.1.100 (the slow one, under Node) starts
    // first. A failed release panics its thread, and the scope then fails the test.
    let releases = mneme_core::versions::matrix();
    let next = std::sync::atomic::AtomicUsize::new(0);
    let workers = std::thread::available_parallelism().map_or(2, |n| n.get()).saturating_add(1).min(releases.len());
    std::thread::scope(|s| {
        for _ in 0..workers {
            s.spawn(|| {
                while let Some(v) = releases.get(next.fetch_add(1, std::sync::atomic::Ordering::SeqCst)) {
                    check_release(&v.to_string(), &bins[v]);
                }
            });
        }
    });
}

/// Everything the test checks for one release.
fn check_release(version: &str, bin: &Path) {
    let t = tempfile::tempdir().unwrap();
    let root = t.path().canonicalize().unwrap();
    let (home, project) = fixture(&root);
    let data = root.join("mneme-data");
    // The list first: all three agents, each folder where Claude Code keeps it.
    let listed = Command::new(env!("CARGO_BIN_EXE_mneme"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("HOME", &home)
        .env("CLAUDE_CONFIG_DIR", home.join(".claude"))
        .env("MNEME_DATA_DIR", &data)
        .args(["agents", "--json", "--cwd"])
        .arg(&project)
        .output()
        .unwrap();
    let listed: Value = serde_json::from_slice(&listed.stdout).expect("agents --json");
    let types: Vec<&str> = listed["agents"].as_array().unwrap().iter().map(|a| a["agentType"].as_str().unwrap()).collect();
    assert_eq!(types, ["planner", "reviewer", "toolkit:auditor"]);

    let requests = capture(bin, &home, &project);
    let mut tails = Vec::new();
    for agent in ["reviewer", "planner", "toolkit:auditor"] {
        let expected = mneme_section(&version, bin, &home, &project, &data, agent);
        let sent = after_prompt(&requests, &format!("PROMPT-{agent}: you {}.", match agent {
            "reviewer" => "review",
            "planner" => "plan",
            _ => "audit",
        }));
        assert!(
            sent.starts_with(&expected),
            "Claude Code {version}, agent {agent}: the section differs.\n--- mneme\n{expected}\n--- claude (as much)\n{}",
            &sent[..sent.len().min(expected.len() + 200)]
        );
        tails.push(sent[expected.len()..].to_string());
    }
    // What follows each section is the same for every agent, so none of it is the section's.
    assert!(tails.windows(2).all(|w| w[0] == w[1]), "Claude Code {version}: the sections end in different places: {tails:?}");
    let truncated = mneme_section(&version, bin, &home, &project, &data, "toolkit:auditor");
    assert!(truncated.contains("230 lines"), "the 230-line index is cut with its warning");
}
