//! Mneme against what real Claude Code releases sent for the same memory folder, prompt and
//! selection (`testdata/recall-capture/<release>/`, made by its `capture.sh`): the side query's
//! body and how the recalled memories reached the main loop. Each release is followed as
//! `mneme_core::versions` says it behaves (the form of the query, the model, limits and schema,
//! the manifest's type tags, where the memories go), so a capture of a new release that differs
//! fails here until the table learns it.
//!
//! The fixture is rebuilt by the same `make_memory.sh` the capture used, under a folder of this
//! run's own standing in for the captured `/tmp/ccrecall` (absolute paths are part of the
//! headers, so that folder is mapped back before comparing; two test runs at once never share
//! it); the clock is frozen at the capture's instant, because the staleness warning depends on it.
//!
//! The selector prompt is Claude Code's own prose, so each committed capture holds a marker in
//! its place: with that release's binary in `MNEME_CLAUDE_BINS` (`V=PATH,…`, the matrix's
//! releases; `MNEME_REQUIRE_CLAUDE=1` requires it for those) on `PATH`, Mneme reads the prompt
//! from it, and the marker is replaced by the text cut from the same binary; without one, by
//! Mneme's own prompt, which Mneme then sends (the rest of the body is compared either way).
//!
//! Left out of the comparison, on purpose: the billing-attribution block Claude Code puts
//! first in every system prompt (`x-anthropic-billing-header: cc_version=…`; it identifies
//! Claude Code's own build, and Mneme is not Claude Code), the prompt-cache `cache_control`
//! markers, the `metadata.user_id` device identifier, and whether a message's content is a string
//! or one text block holding it (the system message became a block in 2.1.212; 2.1.88's query
//! was a string).

use mneme_core::versions::{self, ClaudeVersion};
use mneme_core::FixedClock;
use mneme_model::{AnthropicProvider, Cancel, HttpOptions, RetryPolicy};
use mneme_recall::{
    recall, selector_model, Dialect, RecallContext, RecallSession, SelectorPrompt, SELECT_MEMORIES_SYSTEM_PROMPT,
    SELECT_MEMORIES_SYSTEM_PROMPT_2_1_88,
};
use mneme_store::claude_text::{claude_text, ClaudeText};
use mneme_store::Environment;
use mneme_stub_model::{StubModel, Turn};
use mneme_testsupport::claude_code;
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
    // A message's content as a string is the same as one text block holding it (2.1.88 sent
    // its single message as a string).
    if let Some(messages) = body.get_mut("messages").and_then(Value::as_array_mut) {
        for m in messages {
            if let Some(text) = m["content"].as_str().map(str::to_string) {
                m["content"] = serde_json::json!([{"type": "text", "text": text}]);
            }
        }
    }
    body
}

/// The releases captured, oldest first.
fn captured_releases() -> Vec<ClaudeVersion> {
    let mut releases: Vec<ClaudeVersion> = std::fs::read_dir(capture())
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    releases.sort();
    releases
}

#[tokio::test]
async fn every_captured_release_is_asked_and_surfaced_as_it_was() {
    let releases = captured_releases();
    assert!(releases.len() >= 8, "captures went missing: {releases:?}");
    // Mneme follows the newest checked release when no Claude Code is installed, so a release
    // that joins the matrix is not called checked for recall until its own capture is here.
    let newest = versions::newest_checked();
    assert!(
        releases.contains(&newest),
        "no recall capture of Claude Code {newest}, the newest release the matrix checks: run testdata/recall-capture/capture.sh {newest} as root and commit its folder"
    );
    let bins = claude_code::listed();
    let required = claude_code::required();
    let matrix = versions::matrix();
    let mut with_own_prompt = Vec::new();
    for release in releases {
        let bin = bins.get(&release);
        if bin.is_none() && required && matrix.contains(&release) {
            panic!("MNEME_REQUIRE_CLAUDE=1 but MNEME_CLAUDE_BINS has no Claude Code {release}; run scripts/claude-code.sh --matrix");
        }
        if bin.is_none() {
            with_own_prompt.push(release.to_string());
        }
        check_release(release, bin).await;
    }
    if !with_own_prompt.is_empty() {
        eprintln!("note: without their binaries, {} were checked with Mneme's own selector prompt", with_own_prompt.join(", "));
    }
}

async fn check_release(release: ClaudeVersion, claude: Option<&PathBuf>) {
    let here = capture().join(release.to_string());
    let dir = tempfile::tempdir().unwrap();
    let root = std::fs::canonicalize(dir.path()).unwrap().join("ccrecall");
    let mem = root.join(MEMORY_DIR.strip_prefix(CAPTURED_ROOT).unwrap().trim_start_matches('/'));
    let mem = mem.as_path();
    let as_captured = |text: &str| text.replace(root.to_str().unwrap(), CAPTURED_ROOT);
    let status = std::process::Command::new("bash").arg(capture().join("make_memory.sh")).arg(mem).status().unwrap();
    assert!(status.success(), "make_memory.sh failed");

    let captured_at: u64 = std::fs::read_to_string(here.join("captured_at_ms")).unwrap().trim().parse().unwrap();
    let clock = Arc::new(FixedClock(UNIX_EPOCH + Duration::from_millis(captured_at)));
    let home = tempfile::tempdir().unwrap();
    let mut env = Environment::with_home(home.path());
    // The release's own binary first on PATH (Node stays reachable for the releases that are
    // `cli.js`); without it, nowhere Claude Code could be found.
    env = match claude {
        Some(bin) => {
            let path = std::env::var("PATH").unwrap_or_default();
            env.set_var("PATH", format!("{}:{path}", bin.parent().unwrap().display()))
        }
        None => env.set_var("PATH", "/nonexistent"),
    };
    let stub = StubModel::start().await;
    stub.push(Turn::text(SELECTION));
    let profile = versions::behaviours(release);
    let options = HttpOptions { retry: RetryPolicy { max_retries: 0, ..RetryPolicy::default() }, ..HttpOptions::default() };
    let provider =
        AnthropicProvider::new(selector_model(&env, &profile), "sk-test", Some(&stub.base_url())).unwrap().with_options(options);

    let cancel = Cancel::new();
    let mut session = RecallSession::for_release(profile);
    let mut ctx = RecallContext { env: &env, clock, cancel: &cancel, transcript: &[], session: &mut session };
    let result = recall(PROMPT, mem, Some(&provider), &mut ctx).await;
    assert_eq!(result.error, None, "{release}");

    let selector_prompt = match (claude, &result.selector_prompt) {
        (Some(bin), Some(SelectorPrompt::ClaudeCode { version, .. })) => {
            assert_eq!(version, &release.to_string(), "the binary on PATH is another release");
            let cache = tempfile::tempdir().unwrap();
            claude_text(bin, version, cache.path(), ClaudeText::SelectorPrompt).unwrap()
        }
        (Some(_), other) => panic!("Claude Code {release} is installed, yet its selector prompt was not used: {other:?}"),
        (None, _) if result.dialect == Dialect::ClaudeCode2_1_88 => SELECT_MEMORIES_SYSTEM_PROMPT_2_1_88.to_string(),
        (None, _) => SELECT_MEMORIES_SYSTEM_PROMPT.to_string(),
    };
    let captured = std::fs::read_to_string(here.join("selector_request.json")).unwrap();
    assert!(captured.contains(PROMPT_MARKER), "{release}: the capture keeps Claude Code's prompt");
    let mut theirs: Value = serde_json::from_str(&captured).unwrap();
    for block in theirs["system"].as_array_mut().unwrap() {
        if block["text"] == PROMPT_MARKER {
            block["text"] = Value::String(selector_prompt.clone());
        }
    }
    let ours: Value = serde_json::from_str(&as_captured(&stub.model_requests()[0].body.to_string())).unwrap();
    assert_eq!(comparable(ours), comparable(theirs), "Claude Code {release}'s side query");

    let theirs: Value = serde_json::from_str(&std::fs::read_to_string(here.join("main_loop.json")).unwrap()).unwrap();
    assert_eq!(result.delivery.as_str(), theirs["delivery"], "where Claude Code {release} puts the memories");
    assert_eq!(
        result.api_text().map(|t| as_captured(&t)).as_deref(),
        theirs["text"].as_str(),
        "what Claude Code {release} surfaced"
    );
}
