//! `Mneme::recall`, the recall bench: offline on a fixture memory folder, through the Anthropic
//! provider against the stub model server on 127.0.0.1, and when a provider fails.

use mneme_api::{ContextRequest, FixedClock, Mneme, ProviderChoice, RecallQuery};
use mneme_stub_model::{Reply, StubModel, Turn};
use mneme_testsupport::{set_mtime, topic, write_file, TestHome};
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Two days after the memories' modification time.
const NOW: u64 = 1_700_000_000 + 2 * 86_400;

fn mneme(t: &TestHome, vars: &[(&str, &str)]) -> Mneme {
    let mut env = t.env.clone().set_var("MNEME_KEYRING_SERVICE", format!("mneme-api-test-{}", std::process::id()));
    for (k, v) in vars {
        env = env.set_var(k, *v);
    }
    Mneme::new(env, Arc::new(FixedClock::at_unix_secs(NOW)))
}

/// A repository whose memory folder holds three memories, one of them over 200 lines.
fn project() -> (TestHome, PathBuf, PathBuf) {
    let t = TestHome::new();
    let repo = t.git_repo("repo");
    let mem = t.memdir_for(&repo);
    let write = |rel: &str, name: &str, description: &str, kind: &str, body: &str| {
        let p = mem.join(rel);
        write_file(&p, &topic(name, description, kind, body));
        set_mtime(&p, 1_700_000_000);
    };
    write("feedback_deploys.md", "Deploys", "Never deploy on Fridays", "feedback", "Deploys wait for Monday.");
    let long: String = (1..=250).map(|i| format!("line {i}\n")).collect();
    write("project_billing.md", "Billing", "Billing service rewrite status", "project", &long);
    write("user_role.md", "Role", "Senior Rust developer", "user", "Explain frontend in backend terms.");
    write_file(&mem.join("MEMORY.md"), "- [Deploys](feedback_deploys.md)\n");
    (t, repo, mem)
}

fn at(repo: &Path) -> ContextRequest {
    ContextRequest { cwd: repo.to_path_buf(), ..Default::default() }
}

fn ask(prompt: &str, provider: Option<ProviderChoice>) -> RecallQuery {
    RecallQuery { prompt: prompt.to_string(), provider }
}

#[test]
fn offline_recall_in_order_with_reasons_headers_and_the_injected_text() {
    let (t, repo, mem) = project();
    let v = mneme(&t, &[]).recall(&at(&repo), &ask("can we deploy the billing service on friday", None)).unwrap();
    assert_eq!(v.memory_dir, mem);
    assert!(v.auto_memory_enabled);
    assert_eq!(v.provider, ProviderChoice::Offline);
    assert!(v.model.is_none() && v.error.is_none() && v.skipped.is_none());
    let got: Vec<(&str, &str)> = v.selected.iter().map(|m| (m.rel_path.as_str(), m.reason.as_str())).collect();
    assert_eq!(
        got,
        [
            ("feedback_deploys.md", "matched name: deploy · description: deploy, friday · body: deploy · index line: deploy"),
            ("project_billing.md", "matched name: billing · description: billing, service"),
        ]
    );
    assert!(v.selected[0].score.unwrap() > v.selected[1].score.unwrap());

    let first = &v.selected[0];
    let path = mem.join("feedback_deploys.md");
    assert_eq!(first.path, path);
    assert_eq!(first.name, "Deploys");
    assert_eq!(
        first.header,
        format!(
            "This memory is 2 days old. Memories are point-in-time observations, not live state — claims about code behavior or file:line citations may be outdated. Verify against current code before asserting as fact.\n\nMemory: {}:",
            path.display()
        )
    );
    assert_eq!(first.content, topic("Deploys", "Never deploy on Fridays", "feedback", "Deploys wait for Monday."));
    assert!(first.truncated.is_none());
    // The first reminder carries the relevance preamble; the second does not.
    assert_eq!(
        first.injected,
        format!("<system-reminder>\n{}{}\n\n{}\n</system-reminder>", mneme_recall::RELEVANCE_PREAMBLE, first.header, first.content)
    );
    let second = &v.selected[1];
    assert_eq!(second.injected, format!("<system-reminder>\n{}\n\n{}\n</system-reminder>", second.header, second.content));
    // On the wire after a tool result: one system message, the reminders unwrapped.
    assert_eq!(v.api_delivery, "systemMessage");
    assert_eq!(
        v.api_text.as_deref().unwrap(),
        format!("{}{}\n\n{}\n{}\n\n{}", mneme_recall::RELEVANCE_PREAMBLE, first.header, first.content, second.header, second.content)
    );
    // Cut at Claude Code's 200 lines, with its note.
    assert_eq!(second.truncated.as_deref(), Some("lines"));
    assert!(second.content.contains("\nline 150\n") && !second.content.contains("line 250"));
}

#[test]
fn skips_are_explained_and_a_bad_folder_is_an_error() {
    let (t, repo, _) = project();
    let m = mneme(&t, &[]);
    let v = m.recall(&at(&repo), &ask("deploy", None)).unwrap();
    assert!(v.selected.is_empty());
    assert_eq!(v.skipped.as_deref(), Some("the prompt is empty or a single word; Claude Code recalls only for longer prompts"));

    let empty = t.git_repo("empty");
    let v = m.recall(&at(&empty), &ask("where is the billing rewrite", None)).unwrap();
    assert_eq!(v.skipped.as_deref(), Some("the memory folder has no topic files"));

    let e = m.recall(&at(&t.root.join("missing")), &ask("where is the billing rewrite", None)).unwrap_err();
    assert_eq!(e.code, mneme_api::ErrorCode::NotFound);
}

#[test]
fn auto_memory_off_is_reported() {
    let (t, repo, _) = project();
    write_file(&t.config_home().join("settings.json"), "{\"autoMemoryEnabled\": false}\n");
    let v = mneme(&t, &[]).recall(&at(&repo), &ask("can we deploy on friday", None)).unwrap();
    assert!(!v.auto_memory_enabled);
    assert!(!v.auto_memory_reason.is_empty());
}

fn use_anthropic(t: &TestHome, stub: &StubModel) {
    write_file(&t.root.join("mneme-data/providers.json"), &json!({"kind": "anthropic", "base_url": stub.base_url()}).to_string());
}

#[test]
fn the_saved_provider_chooses_through_claude_codes_side_query() {
    let (t, repo, mem) = project();
    let stub = StubModel::start_blocking();
    use_anthropic(&t, &stub);
    stub.push(Turn::json(&json!({"selected_memories": ["user_role.md", "not_there.md"]})));
    let m = mneme(&t, &[("ANTHROPIC_API_KEY", "sk-ant-test")]);
    let v = m.recall(&at(&repo), &ask("how should I explain the frontend to the user", None)).unwrap();
    assert_eq!(v.provider, ProviderChoice::Anthropic);
    // No Claude Code is installed here: the newest release Mneme checks is followed.
    let newest = mneme_core::versions::newest_checked().to_string();
    assert_eq!((v.claude_code.version.as_str(), v.claude_code.basis.as_str()), (newest.as_str(), "assumed"));
    assert_eq!(v.model.as_deref(), Some("claude-sonnet-5-5"));
    assert!(v.error.is_none(), "{:?}", v.error);
    assert_eq!(v.selected.len(), 1, "names outside the manifest are dropped");
    assert_eq!(v.selected[0].path, mem.join("user_role.md"));
    assert_eq!(v.selected[0].reason, "selected by claude-sonnet-5-5 (1 of 1)");
    assert!(v.selected[0].score.is_none());
    let sent = &stub.model_requests()[0];
    assert_eq!(sent.body["max_tokens"], 2560);
    assert!(sent.body.get("thinking").is_none());
    assert_eq!(sent.body["messages"][1]["content"][0]["text"], "Select memories relevant to:\nhow should I explain the frontend to the user");

    // As an older release asks and surfaces it: its model, limits and schema, and, before
    // 2.1.154, the memories appended to the tool result.
    let older = |v: &str| ContextRequest { claude_version: Some(v.parse().unwrap()), ..at(&repo) };
    stub.push(Turn::json(&json!({"selected_memories": ["user_role.md"]})));
    let v = m.recall(&older("2.1.250"), &ask("how should I explain the frontend to the user", None)).unwrap();
    assert_eq!((v.claude_code.version.as_str(), v.claude_code.basis.as_str()), ("2.1.250", "chosen"));
    assert_eq!(v.model.as_deref(), Some("claude-sonnet-5"));
    let sent = stub.model_requests().last().unwrap().body.clone();
    assert_eq!((sent["max_tokens"].clone(), sent["thinking"].clone()), (json!(512), json!({"type": "disabled"})));
    assert_eq!(v.api_delivery, "systemMessage");
    stub.push(Turn::json(&json!({"selected_memories": ["user_role.md"]})));
    let v = m.recall(&older("2.1.147"), &ask("how should I explain the frontend to the user", None)).unwrap();
    assert_eq!(v.model.as_deref(), Some("claude-sonnet-4-6"));
    let sent = stub.model_requests().last().unwrap().body.clone();
    assert_eq!(sent["max_tokens"], 256);
    assert!(sent["output_config"]["format"]["schema"]["properties"].get("selected_knowledge_ids").is_some());
    assert_eq!(v.api_delivery, "toolResult");
    assert_eq!(v.api_text.as_deref(), Some(v.selected[0].injected.as_str()), "the reminder kept whole");

    // The offline ranker can still be picked per query; the model is not asked.
    let before = stub.model_requests().len();
    let v = m.recall(&at(&repo), &ask("can we deploy the billing service on friday", Some(ProviderChoice::Offline))).unwrap();
    assert_eq!(v.provider, ProviderChoice::Offline);
    assert_eq!(v.selected[0].rel_path, "feedback_deploys.md");
    assert_eq!(stub.model_requests().len(), before);
}

/// Someone is waiting for a recall: a server error is retried twice, not the background
/// runs' ten times with backoff up to 32 s.
#[test]
fn a_recall_someone_waits_for_gives_up_after_two_retries() {
    let (t, repo, _) = project();
    let stub = StubModel::start_blocking();
    use_anthropic(&t, &stub);
    for _ in 0..4 {
        stub.push(Reply::status(500));
    }
    let m = mneme(&t, &[("ANTHROPIC_API_KEY", "sk-ant-test")]);
    let v = m.recall(&at(&repo), &ask("where is the billing rewrite at", None)).unwrap();
    assert!(v.error.as_deref().unwrap().contains("the provider returned an error"), "{:?}", v.error);
    assert_eq!(stub.model_requests().len(), 3, "one attempt and two retries");
}

#[test]
fn a_failing_provider_yields_nothing_and_says_why() {
    let (t, repo, _) = project();
    let stub = StubModel::start_blocking();
    use_anthropic(&t, &stub);
    stub.push(Reply::status(400));
    let m = mneme(&t, &[("ANTHROPIC_API_KEY", "sk-ant-test")]);
    let v = m.recall(&at(&repo), &ask("where is the billing rewrite at", None)).unwrap();
    assert!(v.selected.is_empty());
    assert!(v.error.as_deref().unwrap().contains("the provider returned an error"), "{:?}", v.error);

    // A provider that cannot even be built (no key anywhere) is reported the same way.
    let m = mneme(&t, &[]);
    let v = m.recall(&at(&repo), &ask("where is the billing rewrite at", Some(ProviderChoice::Anthropic))).unwrap();
    assert!(v.selected.is_empty());
    assert!(v.error.as_deref().unwrap().contains("ANTHROPIC_API_KEY"), "{:?}", v.error);
    // An OpenAI-compatible endpoint needs its saved model; another kind does not borrow it.
    let v = m.recall(&at(&repo), &ask("where is the billing rewrite at", Some(ProviderChoice::Openai))).unwrap();
    assert!(v.error.as_deref().unwrap().contains("no model chosen"), "{:?}", v.error);
}
