//! The model-driven dream against the stub model server on 127.0.0.1, with the real Anthropic
//! provider and Mneme's agent loop: Claude Code's prompt goes out, scripted tool calls come
//! back, the memory policy refuses a write outside the folder with Claude Code's exact words,
//! and the result waits for review as a changeset.

mod common;

use common::*;
use mneme_dream::{DreamStatus, Engine, Enablement, RunOptions, Trigger};
use mneme_model::{AnthropicProvider, Cancel};
use mneme_stub_model::{RecordedRequest, StubModel, Turn};
use serde_json::{json, Value};
use std::fs;

fn tool_results(r: &RecordedRequest) -> Vec<(String, bool)> {
    let messages = r.body["messages"].as_array().cloned().unwrap_or_default();
    let last = messages.last().cloned().unwrap_or(Value::Null);
    last["content"]
        .as_array()
        .map(|c| {
            c.iter()
                .filter(|b| b["type"] == "tool_result")
                .map(|b| {
                    let text = match &b["content"] {
                        Value::String(s) => s.clone(),
                        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
                        _ => String::new(),
                    };
                    (text, b["is_error"].as_bool().unwrap_or(false))
                })
                .collect()
        })
        .unwrap_or_default()
}

#[tokio::test]
async fn a_model_dream_runs_claude_codes_prompt_and_waits_for_review() {
    let w = World::new();
    w.dreams.set_mode(&w.mem, mneme_dream::DreamMode::Review).unwrap();
    w.write("MEMORY.md", "- [Tabs](tabs.md) — tabs\n");
    w.write("tabs.md", &topic("Tabs", "tabs", "feedback", "Use tabs."));
    let transcripts = w.target().transcript_dir;
    for id in ["11111111-1111-4111-8111-111111111111", "22222222-2222-4222-8222-222222222222"] {
        fs::write(transcripts.join(format!("{id}.jsonl")), "{}\n").unwrap();
    }
    let before = w.snapshot();
    let mem = w.mem.display().to_string();
    let outside = w.home.root.join("repo/notes.md");

    let stub = StubModel::start().await;
    stub.push(Turn::tool_use("Read", json!({"file_path": format!("{mem}/MEMORY.md")})));
    stub.push(
        Turn::tool_use("Write", json!({"file_path": format!("{mem}/feedback_commits.md"), "content": topic("Small commits", "keep commits small", "feedback", "Keep commits small.")}))
            .and_tool_use("Write", json!({"file_path": outside, "content": "not here"})),
    );
    stub.push(Turn::tool_use(
        "Edit",
        json!({"file_path": format!("{mem}/MEMORY.md"), "old_string": "- [Tabs](tabs.md) — tabs\n", "new_string": "- [Tabs](tabs.md) — tabs\n- [Small commits](feedback_commits.md) — keep commits small\n"}),
    ));
    stub.push(Turn::text("Consolidated: added the small-commits feedback."));

    let provider = AnthropicProvider::new("claude-test-model", "sk-ant-test", Some(&stub.base_url())).unwrap();
    let opts = RunOptions { trigger: Trigger::Manual, engine: Engine::Model(&provider), apply_now: false, enabled: Enablement::On, cancel: Cancel::new() };
    let rec = w.dreams.run(&w.target(), &opts).await.unwrap();

    // Claude Code's prompt, with the memory folder as Claude Code writes it (trailing slash).
    let requests = stub.model_requests();
    assert_eq!(requests.len(), 4);
    let sessions = vec!["11111111-1111-4111-8111-111111111111".to_string(), "22222222-2222-4222-8222-222222222222".to_string()];
    let expected_prompt = mneme_dream::prompt::consolidation_prompt(
        &format!("{mem}/"),
        &transcripts.display().to_string(),
        &mneme_dream::prompt::dream_extra(&sessions),
        false,
    );
    let first = &requests[0].body;
    let user_text = match &first["messages"][0]["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    };
    assert_eq!(user_text, expected_prompt);
    assert!(user_text.ends_with("Sessions since last consolidation (2):\n- 11111111-1111-4111-8111-111111111111\n- 22222222-2222-4222-8222-222222222222"));
    let system = first["system"].to_string();
    assert!(system.contains(&format!("You have a persistent file-based memory at `{mem}/`.")), "{system}");

    // The write outside the memory folder was refused with Claude Code's exact message.
    let refusal = format!("only Read, Grep, Glob, read-only Bash, and Edit/Write within {mem}/ are allowed");
    let results = tool_results(&requests[2]);
    assert_eq!(results.len(), 2);
    assert_eq!(results[1], (refusal.clone(), true));
    assert!(!outside.exists());
    assert_eq!(rec.denials.len(), 1);
    assert_eq!((rec.denials[0].tool.as_str(), rec.denials[0].message.as_str()), ("Write", refusal.as_str()));

    // Staged: nothing written yet; the changeset holds both files.
    assert_eq!(rec.status, DreamStatus::Pending);
    assert_eq!(w.snapshot(), before);
    assert_eq!(rec.provider, "anthropic");
    assert_eq!(rec.model.as_deref(), Some("claude-test-model"));
    assert_eq!(rec.summary, "Consolidated: added the small-commits feedback.");
    assert_eq!(rec.sessions, sessions);
    let mut paths: Vec<String> = rec.changeset.changes.iter().map(|c| c.path.strip_prefix(&w.mem).unwrap().display().to_string()).collect();
    paths.sort();
    assert_eq!(paths, ["MEMORY.md", "feedback_commits.md"]);

    let applied = w.dreams.approve(&w.mem, &rec.id).unwrap();
    assert_eq!(applied.status, DreamStatus::Applied);
    assert!(w.read("MEMORY.md").contains("(feedback_commits.md) — keep commits small"));
    w.dreams.undo(&w.mem, Some(&rec.id), false).unwrap();
    assert_eq!(w.snapshot(), before, "byte-identical after undo");
}
