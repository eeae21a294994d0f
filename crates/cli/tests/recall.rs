//! `mneme recall` end to end: the real binary in a hermetic home, offline and through the
//! Anthropic provider against the stub model server on 127.0.0.1.

use mneme_stub_model::{Reply, StubModel, Turn};
use mneme_testsupport::{set_mtime, topic, TestHome};
use serde_json::{json, Value};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Output;

fn run(h: &TestHome, cwd: &Path, args: &[&str], extra_env: &[(&str, &str)]) -> Output {
    let mut cmd = mneme_testsupport::command_in(env!("CARGO_BIN_EXE_mneme"), h);
    cmd.env("MNEME_KEYRING_SERVICE", "mneme-test-recall").current_dir(cwd).args(args);
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    cmd.output().expect("mneme runs")
}

fn stdout(out: &Output) -> String {
    assert!(out.status.success(), "mneme failed: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout.clone()).expect("utf-8")
}

/// A repository whose auto-memory folder holds three memories.
fn project() -> (TestHome, PathBuf, PathBuf) {
    let h = TestHome::new();
    let repo = h.git_repo("repo");
    let mem = h.memdir_for(&repo);
    fs::create_dir_all(&mem).unwrap();
    let write = |rel: &str, name: &str, description: &str, kind: &str, body: &str| {
        let p = mem.join(rel);
        fs::write(&p, topic(name, description, kind, body)).unwrap();
        set_mtime(&p, 1_700_000_000);
    };
    write("feedback_deploys.md", "Deploys", "Never deploy on Fridays", "feedback", "Deploys wait for Monday.");
    write("project_billing.md", "Billing", "Billing service rewrite status", "project", "Stripe webhooks move to v2.");
    write("user_role.md", "Role", "Senior Rust developer", "user", "Explain frontend in backend terms.");
    fs::write(mem.join("MEMORY.md"), "- [Deploys](feedback_deploys.md)\n").unwrap();
    (h, repo, mem)
}

#[test]
fn offline_recall_lists_the_memories_in_order_with_why() {
    let (h, repo, mem) = project();
    let out = stdout(&run(&h, &repo, &["recall", "can we deploy the billing service on friday"], &[]));
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], format!("2 memories recalled from {} (chosen by the offline ranker):", mem.display()));
    assert_eq!(lines[1], "1. feedback_deploys.md \u{2014} Deploys");
    // The index line names it too (`- [Deploys](feedback_deploys.md)`).
    assert_eq!(lines[2], "   matched name: deploy · description: deploy, friday · body: deploy · index line: deploy (score 1.54)");
    assert_eq!(lines[3], "2. project_billing.md \u{2014} Billing");
    assert_eq!(lines[4], "   matched name: billing · description: billing, service (score 1.44)");
    // How sure the ranker is of the first (mneme_recall::offline::Confidence).
    assert!(lines[5].starts_with("The offline ranker puts the chance that feedback_deploys.md is relevant at about "), "{}", lines[5]);
    assert_eq!(lines.len(), 6);
}

#[test]
fn offline_recall_says_why_it_recalls_nothing() {
    let (h, repo, mem) = project();
    let out = stdout(&run(&h, &repo, &["recall", "translate the homepage into spanish"], &[]));
    assert_eq!(
        out,
        format!(
            "Nothing recalled from {} (chosen by the offline ranker).\nWhy: no memory mentions any of “translate”, “homepage”, “spanish”.\n",
            mem.display()
        )
    );
    let out = stdout(&run(&h, &repo, &["recall", "what should we deploy next"], &[]));
    assert!(out.contains("\nWhy: no memory is a clear match: the closest, feedback_deploys.md, shares “deploy” but not “next” (it holds 1"), "{out}");
}

#[test]
fn json_carries_headers_and_content() {
    let (h, repo, mem) = project();
    let out = stdout(&run(&h, &repo, &["recall", "who is the user and what is their role", "--json"], &[]));
    let v: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["memoryDir"], json!(mem));
    assert_eq!(v["provider"], "offline");
    assert_eq!(v["dialect"], "2.1.197");
    let first = &v["selected"][0];
    assert_eq!(first["relPath"], "user_role.md");
    // 1_700_000_000 is long before now, so the staleness warning leads the header.
    let header = first["header"].as_str().unwrap();
    assert!(header.starts_with("This memory is "), "{header}");
    assert!(header.ends_with(&format!("\n\nMemory: {}:", mem.join("user_role.md").display())));
    assert_eq!(first["content"], topic("Role", "Senior Rust developer", "user", "Explain frontend in backend terms."));
    assert!(first["score"].as_f64().unwrap() > 0.0);
}

#[test]
fn short_prompts_and_bad_providers() {
    let (h, repo, _) = project();
    let out = stdout(&run(&h, &repo, &["recall", "deploy"], &[]));
    assert_eq!(out, "Nothing recalled: the prompt is empty or a single word; Claude Code recalls only for longer prompts.\n");
    let out = run(&h, &repo, &["recall", "deploy it now", "--provider", "gpt"], &[]);
    assert_eq!(out.status.code(), Some(1));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "mneme: 'gpt' is not a provider. Use one of: offline, claude-cli, anthropic, openai.\n"
    );
}

fn use_anthropic(h: &TestHome, stub: &StubModel) {
    let settings = json!({"kind": "anthropic", "base_url": stub.base_url()});
    fs::create_dir_all(h.root.join("mneme-data")).unwrap();
    fs::write(h.root.join("mneme-data/providers.json"), settings.to_string()).unwrap();
}

#[tokio::test]
async fn anthropic_selection_through_the_stub() {
    let (h, repo, mem) = project();
    let stub = StubModel::start().await;
    use_anthropic(&h, &stub);
    stub.push(Turn::json(&json!({"selected_memories": ["project_billing.md", "not_there.md"]})));
    let key = [("ANTHROPIC_API_KEY", "sk-ant-test")];
    let out = stdout(&run(&h, &repo, &["recall", "where is the billing rewrite at", "--claude-version", "2.1.197"], &key));
    assert_eq!(
        out,
        format!(
            "1 memory recalled from {} (chosen by claude-sonnet-5 via anthropic):\n\
             Asked with Mneme's own selector prompt (no Claude Code is installed to read its own from). As Claude Code 2.1.197 sends it.\n\
             1. project_billing.md \u{2014} Billing\n   selected by claude-sonnet-5 (1 of 1)\n",
            mem.display()
        )
    );
    let sent = &stub.model_requests()[0];
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.body["model"], "claude-sonnet-5");
    assert_eq!(sent.body["max_tokens"], 256);
    // Without --claude-version and with no Claude Code installed: the newest release checked.
    stub.push(Turn::json(&json!({"selected_memories": ["project_billing.md"]})));
    let out = stdout(&run(&h, &repo, &["recall", "where is the billing rewrite at", "--json"], &key));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    let newest = mneme_core::versions::newest_checked().to_string();
    assert_eq!((v["claudeCode"]["version"].as_str(), v["claudeCode"]["basis"].as_str()), (Some(newest.as_str()), Some("assumed")));
    assert_eq!((v["model"].as_str(), v["delivery"].as_str()), (Some("claude-sonnet-5-5"), Some("systemMessage")));
    assert_eq!(stub.model_requests()[1].body["max_tokens"], 2560);
    assert_eq!(sent.body["system"][0]["text"], mneme_recall::SELECT_MEMORIES_SYSTEM_PROMPT);
    assert_eq!(sent.body["messages"][1]["content"][0]["text"], "Select memories relevant to:\nwhere is the billing rewrite at");
}

#[tokio::test]
async fn a_failed_model_call_is_one_line_and_exit_1() {
    let (h, repo, _) = project();
    let stub = StubModel::start().await;
    use_anthropic(&h, &stub);
    stub.push(Reply::status(400));
    let out = run(&h, &repo, &["recall", "where is the billing rewrite at"], &[("ANTHROPIC_API_KEY", "sk-ant-test")]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.starts_with("mneme: nothing recalled: "), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// With no keyring to ask, a hosted endpoint's key cannot be known: the request is not sent
/// keyless (to be refused as a bad key), the keyring is named as what to fix.
#[test]
fn a_hosted_endpoint_with_no_keyring_to_ask_names_the_keyring() {
    let (h, repo, _) = project();
    fs::create_dir_all(h.root.join("mneme-data")).unwrap();
    let settings = json!({"kind": "openai", "model": "gpt-test", "base_url": "https://llm.invalid/v1"});
    fs::write(h.root.join("mneme-data/providers.json"), settings.to_string()).unwrap();
    let no_bus = [("DBUS_SESSION_BUS_ADDRESS", "unix:path=/nonexistent/mneme-test-bus")];
    let out = run(&h, &repo, &["recall", "where is the billing rewrite at"], &no_bus);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{err}");
    assert!(err.contains("the API key for https://llm.invalid/v1 could not be read") && err.contains("keyring"), "{err}");
}

/// The selector prompt's source names the installed Claude Code's path and what was wrong with
/// its bundle, bytes of that file: shown with escape sequences as text, like every other field
/// someone else wrote.
#[tokio::test]
async fn the_selector_prompts_source_is_shown_with_escapes_as_text() {
    use std::os::unix::fs::PermissionsExt;
    let (h, repo, _) = project();
    let stub = StubModel::start().await;
    use_anthropic(&h, &stub);
    stub.push(Turn::json(&json!({"selected_memories": ["project_billing.md"]})));
    // First on PATH: a stand-in Claude Code 2.1.197 whose selector prompt cannot be cut.
    let bin_dir = h.root.join("bin");
    fs::create_dir_all(&bin_dir).unwrap();
    let bin = bin_dir.join("claude");
    fs::write(&bin, "#!/bin/sh\nexit 1\n# `You are selecting memories that will be useful to Claude Code ${\u{1b}]0;owned\u{7}}`\n").unwrap();
    fs::set_permissions(&bin, fs::Permissions::from_mode(0o755)).unwrap();
    fs::write(bin_dir.join("package.json"), r#"{"name": "@anthropic-ai/claude-code", "version": "2.1.197"}"#).unwrap();
    let path = format!("{}:{}", bin_dir.display(), std::env::var("PATH").unwrap_or_default());
    let env = [("ANTHROPIC_API_KEY", "sk-ant-test"), ("PATH", path.as_str())];
    let out = stdout(&run(&h, &repo, &["recall", "where is the billing rewrite at"], &env));
    assert!(!out.contains('\u{1b}') && !out.contains('\u{7}'), "{out:?}");
    assert!(out.contains("${\\u{001b}]0;owned\\u{0007}} is not a plain string in the bundle"), "{out}");
}
