//! Mneme against what real Claude Code 2.1.197 sent for the same memory folder, prompt and
//! selection (`testdata/recall-capture`, made by its `capture.sh`): the side query's body and
//! the system message that carried the recalled memories into the main loop.
//!
//! The fixture is rebuilt by the same `make_memory.sh` the capture used, under a folder of this
//! run's own standing in for the captured `/tmp/ccrecall` (absolute paths are part of the
//! headers, so that folder is mapped back before comparing; two test runs at once never share
//! it); the clock is frozen at the capture's instant, because the staleness warning depends on it.
//!
//! The selector prompt is Claude Code's own prose, so the committed capture holds a marker in
//! its place: with the installed Claude Code (`MNEME_CLAUDE_BIN`) on `PATH`, Mneme reads the
//! prompt from it, and the marker is replaced by the text cut from the same binary; without
//! one, by Mneme's own prompt, which Mneme then sends (the rest of the body is compared either
//! way).
//!
//! Left out of the comparison, on purpose: the billing-attribution block Claude Code puts
//! first in every system prompt (`x-anthropic-billing-header: cc_version=…`; it identifies
//! Claude Code's own build, and Mneme is not Claude Code), the prompt-cache `cache_control`
//! markers and the `metadata.user_id` device identifier.

use mneme_core::FixedClock;
use mneme_model::{AnthropicProvider, Cancel, HttpOptions, RetryPolicy};
use mneme_recall::{recall, selector_model, RecallContext, RecallSession, SelectorPrompt, SELECT_MEMORIES_SYSTEM_PROMPT};
use mneme_store::claude_text::{claude_text, ClaudeText};
use mneme_store::Environment;
use mneme_stub_model::{StubModel, Turn};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

const PROMPT: &str = "can we deploy the billing service on friday";
const SELECTION: &str = r#"{"selected_memories": ["project_billing.md", "ghost.md", "feedback_deploys.md"]}"#;
const CAPTURED_ROOT: &str = "/tmp/ccrecall";
const MEMORY_DIR: &str = "/tmp/ccrecall/home/.claude/projects/-tmp-ccrecall-repo/memory";
const PROMPT_MARKER: &str = "<the selector prompt: Claude Code's own text, not kept here; real_capture.rs cuts it from the installed binary>";

fn capture() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/recall-capture"))
}

/// Drops what the comparison leaves out (see the module comment).
fn comparable(mut body: Value) -> Value {
    fn strip_cache_control(v: &mut Value) {
        match v {
            Value::Object(map) => {
                map.remove("cache_control");
                map.values_mut().for_each(strip_cache_control);
            }
            Value::Array(items) => items.iter_mut().for_each(strip_cache_control),
            _ => {}
        }
    }
    if let Some(obj) = body.as_object_mut() {
        obj.remove("metadata");
        if let Some(system) = obj.get_mut("system").and_then(Value::as_array_mut) {
            system.retain(|b| !b["text"].as_str().unwrap_or("").starts_with("x-anthropic-billing-header:"));
        }
    }
    strip_cache_control(&mut body);
    body
}

#[tokio::test]
async fn mneme_sends_and_surfaces_what_claude_code_did() {
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("ccrecall");
    let mem = root.join(MEMORY_DIR.strip_prefix(CAPTURED_ROOT).unwrap().trim_start_matches('/'));
    let mem = mem.as_path();
    let as_captured = |text: &str| text.replace(root.to_str().unwrap(), CAPTURED_ROOT);
    let status = std::process::Command::new("bash").arg(capture().join("make_memory.sh")).arg(mem).status().unwrap();
    assert!(status.success(), "make_memory.sh failed");

    let captured_at: u64 = std::fs::read_to_string(capture().join("captured_at_ms")).unwrap().trim().parse().unwrap();
    let clock = Arc::new(FixedClock(UNIX_EPOCH + Duration::from_millis(captured_at)));
    let home = tempfile::tempdir().unwrap();
    let mut env = Environment::with_home(home.path());
    let claude = std::env::var_os("MNEME_CLAUDE_BIN").map(PathBuf::from).filter(|p| p.is_file());
    match &claude {
        Some(bin) => env = env.set_var("PATH", bin.parent().unwrap().to_string_lossy().to_string()),
        None if std::env::var("MNEME_REQUIRE_CLAUDE").as_deref() == Ok("1") => {
            panic!("MNEME_REQUIRE_CLAUDE=1 but MNEME_CLAUDE_BIN does not name the Claude Code binary; run scripts/claude-code.sh")
        }
        None => eprintln!("note: without MNEME_CLAUDE_BIN the selector prompt is Mneme's own"),
    }
    let stub = StubModel::start().await;
    stub.push(Turn::text(SELECTION));
    let options = HttpOptions { retry: RetryPolicy { max_retries: 0, ..RetryPolicy::default() }, ..HttpOptions::default() };
    let provider = AnthropicProvider::new(selector_model(&env), "sk-test", Some(&stub.base_url())).unwrap().with_options(options);

    let cancel = Cancel::new();
    let mut session = RecallSession::new();
    let mut ctx = RecallContext { env: &env, clock, cancel: &cancel, transcript: &[], session: &mut session };
    let result = recall(PROMPT, mem, Some(&provider), &mut ctx).await;
    assert_eq!(result.error, None);

    let selector_prompt = match (&claude, &result.selector_prompt) {
        (Some(bin), Some(SelectorPrompt::ClaudeCode { version, .. })) => {
            assert_eq!(version, "2.1.197", "the capture was made with 2.1.197");
            let cache = tempfile::tempdir().unwrap();
            claude_text(bin, version, cache.path(), ClaudeText::SelectorPrompt).unwrap()
        }
        (Some(_), other) => panic!("Claude Code is installed, yet its selector prompt was not used: {other:?}"),
        (None, _) => SELECT_MEMORIES_SYSTEM_PROMPT.to_string(),
    };
    let captured = std::fs::read_to_string(capture().join("selector_request.json")).unwrap();
    assert!(captured.contains(PROMPT_MARKER));
    let theirs: Value = serde_json::from_str(&captured).unwrap();
    let mut theirs = theirs;
    for block in theirs["system"].as_array_mut().unwrap() {
        if block["text"] == PROMPT_MARKER {
            block["text"] = Value::String(selector_prompt.clone());
        }
    }
    let ours: Value = serde_json::from_str(&as_captured(&stub.model_requests()[0].body.to_string())).unwrap();
    assert_eq!(comparable(ours), comparable(theirs));

    let theirs = std::fs::read_to_string(capture().join("main_loop_system.txt")).unwrap();
    assert_eq!(result.api_system_text().map(|t| as_captured(&t)).as_deref(), Some(theirs.as_str()));
}
