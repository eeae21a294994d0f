//! The Claude Code CLI provider against the real Claude Code 2.1.197 binary, pointed at the
//! stub server the way the conformance harness runs it (`ANTHROPIC_BASE_URL`, a stub key, an
//! isolated HOME and CLAUDE_CONFIG_DIR, no nonessential traffic).
//!
//! The binary comes from `scripts/claude-code.sh` through `MNEME_CLAUDE_BIN`. Without it these
//! tests print why they are skipped, unless `MNEME_REQUIRE_CLAUDE=1` makes that a failure.

use mneme_model::{Cancel, ClaudeCliProvider, HeadlessTask, Message, ModelError, Provider, ProviderKind, Request};
use mneme_store::Environment;
use mneme_stub_model::{RecordedRequest, Reply, StubModel, Turn};
use mneme_testsupport::{claude_code, TestHome};
use serde_json::{json, Value};
use std::time::Duration;

/// The environment `capture.sh` gives Claude Code, around a temporary home.
fn environment(home: &TestHome, stub: &StubModel) -> Environment {
    stub.claude_code_vars().into_iter().fold(home.env.clone(), |env, (k, v)| env.set_var(k, v))
}

fn main_loop(r: &RecordedRequest) -> bool {
    r.has_tool("Write")
}

fn text_of_messages(r: &RecordedRequest) -> String {
    r.body["messages"].to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shot_question_with_structured_output() {
    let Some(binary) = claude_code::pinned() else { return };
    let stub = StubModel::start().await;
    let home = TestHome::new();
    stub.push_when(
        |r| r.has_tool("StructuredOutput"),
        Turn::tool_use("StructuredOutput", json!({"selected_memories": ["user_role.md", "feedback_tests.md"]})),
    );
    let provider = ClaudeCliProvider::new(binary, &environment(&home, &stub)).with_timeout(Duration::from_secs(120));
    assert_eq!(provider.kind(), ProviderKind::ClaudeCli);
    let schema = json!({"type": "object", "properties": {"selected_memories": {"type": "array", "items": {"type": "string"}}},
                        "required": ["selected_memories"], "additionalProperties": false});
    let request = Request {
        system: "You pick memory files for a query.".into(),
        messages: vec![Message::user_text("Query: how do I run the tests?\n\nAvailable memories:\n- user_role.md\n- feedback_tests.md")],
        tools: vec![],
        max_tokens: 256,
        json_schema: Some(schema),
        thinking_disabled: false,
    };
    let response = provider.complete(&request, &Cancel::new()).await.unwrap();
    let answer: Value = serde_json::from_str(response.first_text().unwrap()).unwrap();
    assert_eq!(answer, json!({"selected_memories": ["user_role.md", "feedback_tests.md"]}));

    let asked = stub.model_requests().into_iter().find(|r| r.has_tool("StructuredOutput")).expect("Claude Code asked the stub");
    let tools: Vec<&str> = asked.body["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(tools, ["StructuredOutput"], "--tools \"\" leaves only the structured output tool");
    assert!(asked.body["system"].to_string().contains("You pick memory files for a query."));
    assert!(text_of_messages(&asked).contains("how do I run the tests?"));
    // CLAUDE.md loading is off for Mneme's questions, and no transcript is kept.
    home.write("home/.claude/CLAUDE.md", "SECRET USER INSTRUCTIONS");
    let again = provider.complete(&Request { json_schema: None, ..request }, &Cancel::new()).await.unwrap();
    assert_eq!(again.first_text(), Some("ok"));
    assert!(!text_of_messages(stub.model_requests().last().unwrap()).contains("SECRET USER INSTRUCTIONS"));
    assert!(!home.config_home().join("projects").exists(), "no session transcript may be written");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cli_errors_map_to_error_classes() {
    let Some(binary) = claude_code::pinned() else { return };
    let stub = StubModel::start().await;
    let home = TestHome::new();
    let provider = ClaudeCliProvider::new(binary, &environment(&home, &stub))
        .with_model(Some("claude-nope-9".into()))
        .with_timeout(Duration::from_secs(120));
    let ask = Request { system: "s".into(), messages: vec![Message::user_text("hello there")], tools: vec![], max_tokens: 64, json_schema: None, thinking_disabled: false };
    // Every call gets the error: after a failed stream Claude Code retries once without
    // streaming, and that attempt must fail the same way.
    stub.set_default(Reply::status(401));
    let e = provider.complete(&ask, &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::BadKey(m) if m.contains("Invalid API key")), "401: {e:?}");
    stub.set_default(Reply::status(404));
    let e = provider.complete(&ask, &Cancel::new()).await.unwrap_err();
    assert_eq!(e, ModelError::ModelNotFound("claude-nope-9".into()), "404");
    stub.set_default(Reply::status(429));
    let e = provider.complete(&ask, &Cancel::new()).await.unwrap_err();
    assert!(matches!(e, ModelError::RateLimited(_)), "429: {e:?}");
    stub.set_default(Reply::status(500));
    let e = provider.complete(&ask, &Cancel::new()).await.unwrap_err();
    assert!(matches!(e, ModelError::Api(_)), "500: {e:?}");
    assert!(stub.model_requests().iter().all(|r| r.body["model"] == "claude-nope-9"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headless_writes_land_only_where_the_rules_allow() {
    let Some(binary) = claude_code::pinned() else { return };
    let stub = StubModel::start().await;
    let home = TestHome::new();
    let work = home.root.join("work");
    let allowed = work.join("memory");
    std::fs::create_dir_all(&allowed).unwrap();
    let inside = allowed.join("user_role.md");
    let beside = work.join("notes.md");
    let elsewhere = home.root.join("elsewhere.md");
    stub.push_when(
        |r| main_loop(r) && r.tool_result_count() == 0,
        Turn::tool_use("Write", json!({"file_path": inside, "content": "---\nname: role\n---\nData scientist.\n"}))
            .and_tool_use("Write", json!({"file_path": beside, "content": "not allowed here"}))
            .and_tool_use("Write", json!({"file_path": elsewhere, "content": "nor here"})),
    );
    stub.push_when(main_loop, Turn::text("Saved one memory."));

    let provider = ClaudeCliProvider::new(binary, &environment(&home, &stub)).with_timeout(Duration::from_secs(120));
    let agent = provider.headless().expect("the CLI runs its own agent");
    let task = HeadlessTask {
        prompt: "Save what you learned about the user.".into(),
        system: Some("You maintain memory files.".into()),
        cwd: work.clone(),
        // `//` makes the path absolute in Claude Code's rule syntax.
        allowed_tools: vec![format!("Write(/{}/**)", allowed.display()), format!("Edit(/{}/**)", allowed.display())],
        disallowed_tools: vec!["Bash".into()],
        max_turns: Some(4),
    };
    let outcome = agent.run(&task, &Cancel::new()).await.unwrap();

    assert_eq!(std::fs::read_to_string(&inside).unwrap(), "---\nname: role\n---\nData scientist.\n");
    assert!(!beside.exists(), "a write outside the allowed folder must be denied");
    assert!(!elsewhere.exists(), "a write outside the project must be denied");
    assert_eq!(outcome.written_paths, vec![inside]);
    assert_eq!(outcome.result, "Saved one memory.");
    assert_eq!(outcome.turns, 2);

    let main: Vec<RecordedRequest> = stub.model_requests().into_iter().filter(main_loop).collect();
    assert_eq!(main.len(), 2);
    assert!(main[0].body["system"].to_string().contains("You maintain memory files."));
    assert!(text_of_messages(&main[0]).contains("Save what you learned about the user."));
    assert_eq!(main[1].tool_result_count(), 3);
    let results = text_of_messages(&main[1]);
    assert!(results.contains("is_error"), "the denied writes come back as errors: {results}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancelling_a_headless_run_kills_claude_code() {
    let Some(binary) = claude_code::pinned() else { return };
    let stub = StubModel::start().await;
    let home = TestHome::new();
    stub.push_when(main_loop, Reply::Hang);
    let provider = ClaudeCliProvider::new(binary, &environment(&home, &stub)).with_timeout(Duration::from_secs(120));
    let task = HeadlessTask {
        prompt: "wait".into(),
        system: None,
        cwd: home.root.clone(),
        allowed_tools: vec![],
        disallowed_tools: vec![],
        max_turns: Some(1),
    };
    let cancel = Cancel::new();
    let run = provider.headless().unwrap().run(&task, &cancel);
    let canceller = async {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        while !stub.model_requests().iter().any(main_loop) {
            assert!(tokio::time::Instant::now() < deadline, "claude never sent its main-loop request to the stub within 60 s");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        cancel.cancel();
    };
    let (result, ()) = tokio::join!(run, canceller);
    assert_eq!(result.unwrap_err(), ModelError::Cancelled);
}

/// A stand-in `claude` (a shell script) for what a real one cannot be made to do.
#[cfg(unix)]
fn fake_claude(home: &TestHome, body: &str) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = home.write("bin/claude", &format!("#!/bin/sh\ncat > /dev/null\n{body}\n"));
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_that_answers_and_then_hangs_still_ends_the_call() {
    let home = TestHome::new();
    let binary = fake_claude(&home, r#"echo '{"type":"result","subtype":"success","is_error":false,"result":"ok"}'; exec 1>&- 2>&-; exec sleep 1000"#);
    let provider = ClaudeCliProvider::new(binary, &home.env).with_timeout(Duration::from_secs(120));
    let ask = Request { system: "s".into(), messages: vec![Message::user_text("hi")], tools: vec![], max_tokens: 64, json_schema: None, thinking_disabled: false };
    let started = std::time::Instant::now();
    let answer = provider.complete(&ask, &Cancel::new()).await.unwrap();
    assert_eq!(answer.first_text(), Some("ok"));
    assert!(started.elapsed() < Duration::from_secs(60), "took {:?}", started.elapsed());
}

/// A `claude` that answers and exits, leaving a background process (a hook's job, say) that
/// still holds its output: the call ends with the answer instead of waiting for that process,
/// and the process is stopped with it.
#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_claude_leaves_behind_holding_its_output_does_not_hold_up_the_call() {
    let home = TestHome::new();
    let pidfile = home.root.join("left-behind.pid");
    let body = format!(
        r#"sleep 1000 & echo $! > '{}'; echo '{{"type":"result","subtype":"success","is_error":false,"result":"ok"}}'; exit 0"#,
        pidfile.display()
    );
    let binary = fake_claude(&home, &body);
    // Far shorter than the background process lives: waiting for it would end in a timeout.
    let provider = ClaudeCliProvider::new(binary, &home.env).with_timeout(Duration::from_secs(30));
    let ask = Request { system: "s".into(), messages: vec![Message::user_text("hi")], tools: vec![], max_tokens: 64, json_schema: None, thinking_disabled: false };
    let answer = provider.complete(&ask, &Cancel::new()).await.unwrap();
    assert_eq!(answer.first_text(), Some("ok"));
    let pid: i32 = std::fs::read_to_string(&pidfile).unwrap().trim().parse().unwrap();
    // Stopped with Claude Code's group (a zombie until its parent, gone, is replaced by init).
    let alive = || std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.contains(") Z "));
    for _ in 0..100 {
        if !alive() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(!alive(), "the process claude left behind is still running");
}

#[cfg(unix)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claude_that_prints_without_end_is_stopped_at_the_cap() {
    let home = TestHome::new();
    let binary = fake_claude(&home, "exec yes aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa | tr -d '\\n'");
    let provider = ClaudeCliProvider::new(binary, &home.env).with_timeout(Duration::from_secs(120));
    let ask = Request { system: "s".into(), messages: vec![Message::user_text("hi")], tools: vec![], max_tokens: 64, json_schema: None, thinking_disabled: false };
    let e = provider.complete(&ask, &Cancel::new()).await.unwrap_err();
    assert!(matches!(&e, ModelError::BadResponse(m) if m.contains("more than 32 MiB")), "{e:?}");
}
