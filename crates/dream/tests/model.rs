//! The model-driven dream against the stub model server on 127.0.0.1, with the real Anthropic
//! provider and Mneme's agent loop: Claude Code's prompt goes out, scripted tool calls come
//! back, the memory policy refuses a write outside the folder with Claude Code's exact words,
//! and the result waits for review as a changeset.

mod common;

use common::*;
use mneme_dream::{CachedFlags, DreamStatus, Engine, Enablement, RunOptions, Trigger};
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
    let opts = RunOptions { trigger: Trigger::Manual, engine: Engine::Model(&provider), apply_now: false, enabled: Enablement::On, flags: CachedFlags::default(), cancel: Cancel::new() };
    let rec = w.dreams.run(&w.target(), &opts).await.unwrap();

    // The dream prompt, with the memory folder as Claude Code writes it (trailing slash).
    let requests = stub.model_requests();
    assert_eq!(requests.len(), 4);
    let sessions = vec!["11111111-1111-4111-8111-111111111111".to_string(), "22222222-2222-4222-8222-222222222222".to_string()];
    let expected_prompt = mneme_dream::prompt::consolidation_prompt(
        &format!("{mem}/"),
        &transcripts.display().to_string(),
        &mneme_dream::prompt::dream_extra(time::macros::date!(2026 - 05 - 06), &sessions),
        false,
    );
    let first = &requests[0].body;
    let user_text = match &first["messages"][0]["content"] {
        Value::String(s) => s.clone(),
        Value::Array(parts) => parts.iter().filter_map(|p| p["text"].as_str()).collect::<Vec<_>>().join(""),
        _ => String::new(),
    };
    assert_eq!(user_text, expected_prompt);
    assert!(user_text.ends_with("Sessions since the last dream (2):\n- 11111111-1111-4111-8111-111111111111\n- 22222222-2222-4222-8222-222222222222"));
    let system = first["system"].to_string();
    assert!(system.contains(&format!("Your memory folder is `{mem}/`.")), "{system}");

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

/// A model that "tidies" the index by dropping a line whose file is missing: the line is the
/// only copy of that memory, so the safety net holds the dream for review even in automatic
/// mode with `--yes`, and says which text would be lost. A dream that loses nothing still
/// applies at once.
#[tokio::test]
async fn a_lossy_model_dream_is_held_for_review_whatever_the_mode() {
    let w = World::new();
    assert_eq!(w.dreams.mode(&w.mem).unwrap(), mneme_dream::DreamMode::Automatic);
    let jane = "- [Jane](jane.md) — CLOSED — DO NOT CONTACT\n";
    w.write("MEMORY.md", &format!("- [Tabs](tabs.md) — tabs\n{jane}"));
    w.write("tabs.md", &topic("Tabs", "tabs", "feedback", "Use tabs."));
    let before = w.snapshot();
    let mem = w.mem.display().to_string();

    let stub = StubModel::start().await;
    stub.push(Turn::tool_use("Read", json!({"file_path": format!("{mem}/MEMORY.md")})));
    stub.push(Turn::tool_use("Edit", json!({"file_path": format!("{mem}/MEMORY.md"), "old_string": jane, "new_string": ""})));
    stub.push(Turn::text("Pruned a line pointing at a missing file."));
    let provider = AnthropicProvider::new("claude-test-model", "sk-ant-test", Some(&stub.base_url())).unwrap();
    let opts = RunOptions { trigger: Trigger::Manual, engine: Engine::Model(&provider), apply_now: true, enabled: Enablement::On, flags: CachedFlags::default(), cancel: Cancel::new() };
    let rec = w.dreams.run(&w.target(), &opts).await.unwrap();

    assert_eq!(rec.status, DreamStatus::Pending, "held although the mode is automatic and apply_now is set");
    assert_eq!(w.snapshot(), before, "nothing written");
    let lost: Vec<_> = rec.moved.iter().filter(|m| m.lost()).collect();
    assert_eq!(lost.len(), 1, "{:#?}", rec.moved);
    assert_eq!((lost[0].from.as_str(), lost[0].text.as_str()), ("MEMORY.md", jane.trim_end()));
    assert_eq!(lost[0].missing, ["Jane", "CLOSED — DO NOT CONTACT"]);
    assert!(rec.notes[0].starts_with("Held for review: 1 line(s) this dream removes"), "{:?}", rec.notes);
    assert_eq!(rec.summary_view().lost, 1);
    // The record on disk keeps the report.
    assert_eq!(w.dreams.show(&w.mem, &rec.id).unwrap().moved, rec.moved);
    w.dreams.reject(&w.mem, &rec.id).unwrap();

    // Moving the text into a topic file loses nothing: applied at once.
    w.clock.advance(3601);
    stub.push(Turn::tool_use("Read", json!({"file_path": format!("{mem}/MEMORY.md")})));
    stub.push(Turn::tool_use(
        "Write",
        json!({"file_path": format!("{mem}/jane.md"), "content": topic("Jane", "CLOSED — DO NOT CONTACT", "project", "Closed; do not contact.")}),
    ));
    stub.push(Turn::tool_use("Edit", json!({"file_path": format!("{mem}/MEMORY.md"), "old_string": jane, "new_string": "- [Jane](jane.md) — closed\n"})));
    stub.push(Turn::text("Wrote the Jane memory."));
    let opts = RunOptions { apply_now: false, ..opts };
    let rec = w.dreams.run(&w.target(), &opts).await.unwrap();
    assert_eq!(rec.status, DreamStatus::Applied, "{:#?}", rec.moved);
    let moved = rec.moved.iter().find(|m| m.text == jane.trim_end()).unwrap();
    assert!(!moved.lost());
    assert_eq!(moved.found_in, ["jane.md"]);
    assert!(w.read("MEMORY.md").contains("- [Jane](jane.md) — closed"));
}

/// A model that never stops calling tools (small local models loop) ends after the turn
/// budget, with a note saying so, instead of running and billing for ever.
#[tokio::test]
async fn a_model_that_never_stops_is_stopped_after_the_turn_budget() {
    let w = World::new();
    w.dreams.set_mode(&w.mem, mneme_dream::DreamMode::Review).unwrap();
    w.write("MEMORY.md", "- [Tabs](tabs.md) — tabs\n");
    w.write("tabs.md", &topic("Tabs", "tabs", "feedback", "Use tabs."));
    let stub = StubModel::start().await;
    stub.set_default(Turn::tool_use("Glob", json!({"pattern": "**/*.md"})));
    let provider = AnthropicProvider::new("claude-test-model", "sk-ant-test", Some(&stub.base_url())).unwrap();
    let opts = RunOptions { trigger: Trigger::Manual, engine: Engine::Model(&provider), apply_now: false, enabled: Enablement::On, flags: CachedFlags::default(), cancel: Cancel::new() };
    let rec = w.dreams.run(&w.target(), &opts).await.unwrap();
    assert_eq!(stub.model_requests().len(), mneme_dream::DREAM_MAX_TURNS as usize);
    assert!(rec.notes.iter().any(|n| n.contains(&format!("after {} turns", mneme_dream::DREAM_MAX_TURNS))), "{:?}", rec.notes);
}
