//! Claude Code's recall driven through the real Anthropic and OpenAI providers against the stub
//! model server on 127.0.0.1: the exact side query, the selection rules, the filters, the caps,
//! the headers and the rendered reminders.

use mneme_core::{Clock, FixedClock};
use mneme_model::{
    AnthropicProvider, Block, Cancel, HttpOptions, Message, OpenAiProvider, Provider, ProviderKind, RetryPolicy, Role,
};
use mneme_recall::{
    freshness_text, recall, selector_model, RecallContext, RecallResult, RecallSession, Skipped, Dialect, Truncation,
    SELECT_MEMORIES_SYSTEM_PROMPT, SELECT_MEMORIES_SYSTEM_PROMPT_2_1_88,
};
use mneme_store::Environment;
use mneme_stub_model::{Reply, StubModel, Turn};
use serde_json::{json, Value};
use std::path::PathBuf;
use std::sync::Arc;

/// 2027-01-15T08:00:00Z.
const NOW: i64 = 1_800_000_000;
const DAY: i64 = 86_400;

struct Fixture {
    _home: tempfile::TempDir,
    env: Environment,
    mem: PathBuf,
    clock: Arc<dyn Clock>,
}

impl Fixture {
    fn new() -> Fixture {
        Fixture::with_env(|env| env)
    }

    fn with_env(adjust: impl FnOnce(Environment) -> Environment) -> Fixture {
        let home = tempfile::tempdir().unwrap();
        let env = adjust(Environment::with_home(home.path()));
        let mem = home.path().join("memory");
        std::fs::create_dir_all(&mem).unwrap();
        Fixture { env, mem, clock: Arc::new(FixedClock::at_unix_secs(NOW as u64)), _home: home }
    }

    /// A topic file in the current frontmatter generation, modified `age_secs` before now.
    fn memory(&self, rel: &str, kind: &str, description: &str, body: &str, age_secs: i64) -> PathBuf {
        let name = rel.trim_end_matches(".md");
        self.raw(rel, &mneme_testsupport::topic(name, description, kind, body), age_secs)
    }

    fn raw(&self, rel: &str, text: &str, age_secs: i64) -> PathBuf {
        let p = self.mem.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, text).unwrap();
        mneme_testsupport::set_mtime(&p, NOW - age_secs);
        p
    }

    async fn recall(&self, query: &str, provider: &dyn Provider, session: &mut RecallSession) -> RecallResult {
        self.recall_with(query, provider, session, &[]).await
    }

    async fn recall_with(
        &self,
        query: &str,
        provider: &dyn Provider,
        session: &mut RecallSession,
        transcript: &[Message],
    ) -> RecallResult {
        let cancel = Cancel::new();
        let mut ctx = RecallContext { env: &self.env, clock: self.clock.clone(), cancel: &cancel, transcript, session };
        recall(query, &self.mem, Some(provider), &mut ctx).await
    }
}

/// These tests follow 2.1.197's side query (its model, limits and schema); other releases'
/// are checked against their captures in `real_capture.rs`.
fn release() -> mneme_core::versions::Profile {
    mneme_core::versions::behaviours(mneme_core::versions::ClaudeVersion::new(2, 1, 197))
}

fn v197() -> RecallSession {
    RecallSession::for_release(release())
}

fn no_retries() -> HttpOptions {
    HttpOptions { retry: RetryPolicy { max_retries: 0, ..RetryPolicy::default() }, ..HttpOptions::default() }
}

fn anthropic(stub: &StubModel, env: &Environment) -> AnthropicProvider {
    AnthropicProvider::new(selector_model(env, &release()), "sk-ant-test", Some(&stub.base_url())).unwrap().with_options(no_retries())
}

fn picks(names: &[&str]) -> Turn {
    Turn::json(&json!({ "selected_memories": names }))
}

fn iso(age_secs: i64) -> String {
    mneme_core::text::iso8601_millis(i128::from((NOW - age_secs) * 1000))
}

fn rel_paths(r: &RecallResult) -> Vec<&str> {
    r.selected.iter().map(|m| m.rel_path.as_str()).collect()
}

fn user(text: &str) -> Value {
    json!({"role": "user", "content": [{"type": "text", "text": text}]})
}

#[tokio::test]
async fn the_side_query_is_claude_codes_and_the_dialogue_is_kept() {
    let f = Fixture::new();
    f.memory("feedback_testing.md", "feedback", "Integration tests hit a real database", "Never mock the DB.", 3 * DAY);
    f.memory("project_deploy.md", "project", "Deploys run from main only", "Deploy body.", 2 * DAY);
    f.raw("notes/plain.md", "no frontmatter here\n", 5 * DAY);
    f.raw("MEMORY.md", "- [testing](feedback_testing.md)\n", 0);
    let stub = StubModel::start().await;
    stub.push(picks(&["feedback_testing.md"]));
    let provider = anthropic(&stub, &f.env);
    let mut session = v197();

    let r = f.recall("fix the flaky integration tests", &provider, &mut session).await;
    assert_eq!(r.error, None);
    assert_eq!(r.provider, ProviderKind::Anthropic);
    assert_eq!(r.model.as_deref(), Some("claude-sonnet-5"));
    assert_eq!(rel_paths(&r), vec!["feedback_testing.md"]);
    assert_eq!(r.selected[0].reason, "selected by claude-sonnet-5 (1 of 1)");
    assert_eq!(r.selected[0].score, None);

    let manifest = format!(
        "- [project] project_deploy.md ({}): Deploys run from main only\n\
         - [feedback] feedback_testing.md ({}): Integration tests hit a real database\n\
         - notes/plain.md ({})",
        iso(2 * DAY),
        iso(3 * DAY),
        iso(5 * DAY)
    );
    let schema = json!({
        "type": "object",
        "properties": {
            "selected_memories": {"type": "array", "items": {"type": "string"}},
            "selected_knowledge_ids": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["selected_memories"],
        "additionalProperties": false,
    });
    let sent = &stub.model_requests()[0];
    assert_eq!(sent.path, "/v1/messages?beta=true");
    assert_eq!(
        sent.body,
        json!({
            "model": "claude-sonnet-5",
            "max_tokens": 256,
            "system": [{"type": "text", "text": SELECT_MEMORIES_SYSTEM_PROMPT}],
            "messages": [
                user(&format!("Available memories:\n{manifest}")),
                user("Select memories relevant to:\nfix the flaky integration tests"),
            ],
            "output_config": {"format": {"type": "json_schema", "schema": schema}},
        })
    );

    // The second query of the conversation: the manifest is frozen (a file written since is not
    // offered), the first exchange stays in the dialogue with the answer verbatim.
    f.memory("reference_new.md", "reference", "Written after the first query", "x", 0);
    stub.push(Turn::text("```json\n{\"selected_memories\": [\"project_deploy.md\", \"feedback_testing.md\"]}\n```"));
    let r2 = f.recall("how do we deploy this branch", &provider, &mut session).await;
    assert_eq!(r2.error, None);
    // feedback_testing.md was surfaced last turn, so only the deploy memory comes back.
    assert_eq!(rel_paths(&r2), vec!["project_deploy.md"]);
    assert_eq!(r2.selected[0].reason, "selected by claude-sonnet-5 (1 of 2)");
    let messages = stub.model_requests()[1].body["messages"].clone();
    assert_eq!(
        messages,
        json!([
            user(&format!("Available memories:\n{manifest}")),
            user("Select memories relevant to:\nfix the flaky integration tests"),
            {"role": "assistant", "content": [{"type": "text", "text": "{\"selected_memories\":[\"feedback_testing.md\"]}"}]},
            user("Select memories relevant to:\nhow do we deploy this branch"),
        ])
    );
}

#[tokio::test]
async fn the_model_comes_from_the_environment() {
    let f = Fixture::with_env(|env| env.set_var("ANTHROPIC_DEFAULT_SONNET_MODEL", "sonnet-from-env"));
    f.memory("a.md", "user", "alpha", "a", 0);
    let stub = StubModel::start().await;
    stub.push(picks(&["a.md"]));
    let r = f.recall("tell me about alpha", &anthropic(&stub, &f.env), &mut v197()).await;
    assert_eq!(r.selected[0].reason, "selected by sonnet-from-env (1 of 1)");
    assert_eq!(stub.model_requests()[0].body["model"], "sonnet-from-env");
}

#[tokio::test]
async fn names_outside_the_manifest_are_dropped_and_five_is_the_most() {
    let f = Fixture::new();
    for i in 1..=7 {
        f.memory(&format!("m{i}.md"), "project", &format!("memory {i}"), "body", i * 60);
    }
    let stub = StubModel::start().await;
    stub.push(picks(&["ghost.md", "m7.md", "MEMORY.md", "m1.md", "/abs/m2.md", "m2.md", "m3.md", "m4.md", "m5.md", "m6.md"]));
    let r = f.recall("which memories matter here", &anthropic(&stub, &f.env), &mut v197()).await;
    assert_eq!(r.error, None);
    assert_eq!(rel_paths(&r), vec!["m7.md", "m1.md", "m2.md", "m3.md", "m4.md"]);
    assert_eq!(r.selected[4].reason, "selected by claude-sonnet-5 (5 of 7)");
}

#[tokio::test]
async fn failures_empty_the_selection_and_say_why() {
    let f = Fixture::new();
    f.memory("a.md", "user", "alpha", "a", 0);
    let stub = StubModel::start().await;
    let provider = anthropic(&stub, &f.env);

    stub.push(Reply::status(500));
    let r = f.recall("tell me about alpha", &provider, &mut v197()).await;
    assert!(r.selected.is_empty());
    assert!(r.error.as_deref().unwrap_or("").contains("500"), "{:?}", r.error);

    stub.push(Turn::text("I think a.md is relevant"));
    let r = f.recall("tell me about alpha", &provider, &mut v197()).await;
    assert!(r.selected.is_empty());
    assert!(r.error.as_deref().unwrap_or("").starts_with("the model's answer is not JSON"), "{:?}", r.error);

    stub.push(Turn::json(&json!({"memories": ["a.md"]})));
    let r = f.recall("tell me about alpha", &provider, &mut v197()).await;
    assert!(r.selected.is_empty());
    assert_eq!(r.error.as_deref(), Some("the model's answer has no selected_memories list"));

    stub.push(Turn::json(&json!({"selected_memories": []})));
    let r = f.recall("tell me about alpha", &provider, &mut v197()).await;
    assert!(r.selected.is_empty());
    assert_eq!(r.error, None);
}

#[tokio::test]
async fn a_cancelled_turn_asks_nothing_and_reports_no_error() {
    let f = Fixture::new();
    f.memory("a.md", "user", "alpha", "a", 0);
    let stub = StubModel::start().await;
    stub.push(Reply::Hang);
    let provider = anthropic(&stub, &f.env);
    let cancel = Cancel::new();
    let mut session = v197();
    let mut ctx = RecallContext { env: &f.env, clock: f.clock.clone(), cancel: &cancel, transcript: &[], session: &mut session };
    let canceller = cancel.clone();
    let (r, ()) = tokio::join!(recall("tell me about alpha", &f.mem, Some(&provider), &mut ctx), async move {
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(60);
        while stub.model_requests().is_empty() {
            assert!(tokio::time::Instant::now() < deadline, "the selector request never reached the stub within 60 s");
            tokio::task::yield_now().await;
        }
        canceller.cancel();
    });
    assert!(r.selected.is_empty());
    assert_eq!(r.error, None);
}

#[tokio::test]
async fn surfaced_and_read_files_are_filtered_and_a_fully_surfaced_folder_is_not_asked() {
    let f = Fixture::new();
    let a = f.memory("a.md", "feedback", "alpha", "a", 0);
    let b = f.memory("b.md", "feedback", "beta", "b", 0);
    f.memory("c.md", "feedback", "gamma", "c", 0);
    let stub = StubModel::start().await;
    let provider = anthropic(&stub, &f.env);
    let mut session = v197();
    session.add_surfaced(&a, "a");
    session.mark_read(&b);

    stub.push(picks(&["a.md", "b.md", "c.md"]));
    let r = f.recall("alpha beta gamma please", &provider, &mut session).await;
    assert_eq!(rel_paths(&r), vec!["c.md"]);
    // The manifest still lists what was surfaced: 2.1.197 filters after the model answers.
    let first = stub.model_requests()[0].body["messages"][0]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(first.contains("a.md") && first.contains("b.md"));

    // b.md was only read, never surfaced, so the folder is not exhausted yet.
    stub.push(picks(&["b.md"]));
    let r = f.recall("beta again please", &provider, &mut session).await;
    assert!(r.selected.is_empty());
    assert_eq!(stub.model_requests().len(), 2);

    session.add_surfaced(&b, "b");
    let r = f.recall("anything else here", &provider, &mut session).await;
    assert_eq!(r.skipped, Some(Skipped::AllSurfaced));
    assert_eq!(stub.model_requests().len(), 2, "no side query once everything was surfaced");
}

#[tokio::test]
async fn the_session_budget_and_short_prompts_stop_recall_before_any_query() {
    let f = Fixture::new();
    f.memory("a.md", "user", "alpha", "a", 0);
    let stub = StubModel::start().await;
    let provider = anthropic(&stub, &f.env);

    let r = f.recall("  alpha\n", &provider, &mut v197()).await;
    assert_eq!(r.skipped, Some(Skipped::TooShort));

    // The budget counts UTF-16 units: 30,720 two-unit emoji are 60 KiB.
    let mut session = v197();
    session.add_surfaced(f.mem.join("earlier.md"), &"\u{1F600}".repeat(30_720));
    let r = f.recall("tell me about alpha", &provider, &mut session).await;
    assert_eq!(r.skipped, Some(Skipped::SessionBudget));
    assert!(stub.model_requests().is_empty());

    let mut session = v197();
    session.add_surfaced(f.mem.join("earlier.md"), &"x".repeat(61_439));
    stub.push(picks(&["a.md"]));
    let r = f.recall("tell me about alpha", &provider, &mut session).await;
    assert_eq!(rel_paths(&r), vec!["a.md"]);
    assert_eq!(session.surfaced_bytes(), 61_439 + r.selected[0].content.encode_utf16().count());
}

#[tokio::test]
async fn cut_files_carry_the_note_and_old_ones_the_staleness_warning() {
    let f = Fixture::new();
    let body: String = (1..=250).map(|i| format!("line {i}\n")).collect();
    let long = f.memory("long.md", "reference", "a long one", &body, 10 * DAY);
    let fresh = f.memory("fresh.md", "reference", "a fresh one", "short", DAY - 1);
    let stub = StubModel::start().await;
    stub.push(picks(&["long.md", "fresh.md"]));
    let r = f.recall("show me the long and fresh ones", &anthropic(&stub, &f.env), &mut v197()).await;
    assert_eq!(rel_paths(&r), vec!["long.md", "fresh.md"]);

    let cut = &r.selected[0];
    assert_eq!(cut.truncated, Some(Truncation::LineLimit));
    assert_eq!(cut.limit, Some(200));
    let expected_start = "---\nname: long\ndescription: a long one\nmetadata:\n  type: reference\n---\n\nline 1\n";
    assert!(cut.content.starts_with(expected_start));
    // The frontmatter's 7 lines leave 193 of the body.
    assert!(cut.content.contains("\nline 193\n\n> This memory file was truncated (first 200 lines). Use the Read tool to view the complete file at: "));
    assert!(cut.content.ends_with(&format!("complete file at: {}", long.display())));
    assert_eq!(cut.header, format!("{}\n\nMemory: {}:", freshness_text(10), long.display()));
    assert!(cut.header.starts_with("This memory is 10 days old. Memories are point-in-time observations"));

    let ok = &r.selected[1];
    assert_eq!(ok.truncated, None);
    assert_eq!(ok.header, format!("Memory: {}:", fresh.display()));

    assert_eq!(
        r.reminders(),
        vec![
            format!(
                "<system-reminder>\nRetrieved for possible relevance \u{2014} use only if it actually applies to what the user asked.\n\n{}\n\n{}\n</system-reminder>",
                cut.header, cut.content
            ),
            format!("<system-reminder>\nMemory: {}:\n\n{}\n</system-reminder>", fresh.display(), ok.content),
        ]
    );
}

#[tokio::test]
async fn the_byte_cap() {
    let f = Fixture::new();
    let body = format!("{}\n{}\ntail\n", "a".repeat(3000), "b".repeat(3000));
    f.memory("wide.md", "reference", "wide", &body, 0);
    let stub = StubModel::start().await;
    stub.push(picks(&["wide.md"]));
    let r = f.recall("the wide one please", &anthropic(&stub, &f.env), &mut v197()).await;
    let m = &r.selected[0];
    assert_eq!(m.truncated, Some(Truncation::ByteLimit));
    let kept = "---\nname: wide\ndescription: wide\nmetadata:\n  type: reference\n---\n\n".to_string() + &"a".repeat(3000);
    assert_eq!(
        m.content,
        format!(
            "{kept}\n\n> This memory file was truncated (4096 byte limit). Use the Read tool to view the complete file at: {}",
            m.path.display()
        )
    );
    assert_eq!(m.limit, Some(8));
}

#[tokio::test]
async fn the_2_1_88_dialect_sends_one_message_with_the_recent_tools() {
    let f = Fixture::new();
    let seen = f.memory("seen.md", "reference", "already shown", "s", 0);
    f.memory("bash_gotchas.md", "feedback", "Bash tool gotchas", "quote paths", 0);
    let stub = StubModel::start().await;
    stub.push(picks(&["bash_gotchas.md"]));
    let mut session = RecallSession::with_dialect(Dialect::ClaudeCode2_1_88);
    session.add_surfaced(&seen, "s");
    let transcript = vec![
        Message::user_text("earlier prompt"),
        Message {
            role: Role::Assistant,
            content: vec![
                Block::ToolUse { id: "t1".into(), name: "Bash".into(), input: json!({}) },
                Block::ToolUse { id: "t2".into(), name: "Read".into(), input: json!({}) },
            ],
        },
        Message {
            role: Role::User,
            content: vec![
                Block::ToolResult { tool_use_id: "t1".into(), content: "ok".into(), is_error: false },
                Block::ToolResult { tool_use_id: "t2".into(), content: "ok".into(), is_error: false },
            ],
        },
        Message::user_text("now run the script again"),
    ];
    let r = f.recall_with("now run the script again", &anthropic(&stub, &f.env), &mut session, &transcript).await;
    assert_eq!(r.dialect, Dialect::ClaudeCode2_1_88);
    assert_eq!(rel_paths(&r), vec!["bash_gotchas.md"]);
    assert_eq!(r.selected[0].header, format!("Memory (saved today): {}:", f.mem.join("bash_gotchas.md").display()));

    let sent = &stub.model_requests()[0].body;
    assert_eq!(sent["system"], json!([{"type": "text", "text": SELECT_MEMORIES_SYSTEM_PROMPT_2_1_88}]));
    // Already surfaced memories are left out of the manifest itself; 2.1.88 reads only a
    // top-level `type`, so a memory typed under `metadata:` has no tag.
    assert_eq!(
        sent["messages"],
        json!([user(&format!(
            "Query: now run the script again\n\nAvailable memories:\n- bash_gotchas.md ({}): Bash tool gotchas\n\nRecently used tools: Bash, Read",
            iso(0)
        ))])
    );
    assert_eq!(sent["max_tokens"], 256);
    assert_eq!(
        sent["output_config"]["format"]["schema"],
        json!({"type": "object", "properties": {"selected_memories": {"type": "array", "items": {"type": "string"}}},
               "required": ["selected_memories"], "additionalProperties": false})
    );
    // A fresh conversation without a transcript: no tools line, and seen.md is offered again.
    // 2.1.88 parses the answer as it comes, so a fenced one fails.
    stub.push(Turn::text("```json\n{\"selected_memories\": [\"bash_gotchas.md\"]}\n```"));
    let r = f.recall("try once more", &anthropic(&stub, &f.env), &mut RecallSession::with_dialect(Dialect::ClaudeCode2_1_88)).await;
    assert!(r.error.as_deref().unwrap_or("").starts_with("the model's answer is not JSON"), "{:?}", r.error);
    let text = stub.model_requests()[1].body["messages"][0]["content"][0]["text"].as_str().unwrap().to_string();
    assert!(text.starts_with("Query: try once more\n\nAvailable memories:\n"));
    assert!(text.contains("seen.md"));
    assert!(!text.contains("Recently used tools"));
}

#[tokio::test]
async fn the_openai_provider_carries_the_same_selection() {
    let f = Fixture::new();
    f.memory("a.md", "user", "alpha", "a body", 0);
    f.memory("b.md", "user", "beta", "b body", 0);
    let stub = StubModel::start().await;
    stub.push(picks(&["b.md"]));
    let provider = OpenAiProvider::new("local-model", None, Some(&format!("{}/v1", stub.base_url()))).unwrap().with_options(no_retries());
    let r = f.recall("tell me about beta", &provider, &mut v197()).await;
    assert_eq!(r.error, None);
    assert_eq!(r.provider, ProviderKind::Openai);
    assert_eq!(rel_paths(&r), vec!["b.md"]);
    assert_eq!(r.selected[0].reason, "selected by local-model (1 of 1)");
    let sent = &stub.model_requests()[0];
    assert!(sent.is_openai_chat());
    let messages = sent.body["messages"].as_array().unwrap();
    assert_eq!(messages[0]["role"], "system");
    assert_eq!(messages.last().unwrap()["role"], "user");
    let text = |m: &Value| -> String {
        match &m["content"] {
            Value::String(s) => s.clone(),
            other => other[0]["text"].as_str().unwrap_or_default().to_string(),
        }
    };
    assert_eq!(text(&messages[0]), SELECT_MEMORIES_SYSTEM_PROMPT);
    assert_eq!(text(messages.last().unwrap()), "Select memories relevant to:\ntell me about beta");
    assert_eq!(sent.body["max_tokens"], 256);
    assert_eq!(sent.body["response_format"]["type"], "json_schema");
}
