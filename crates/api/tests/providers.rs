//! Provider settings, the write-only API key and the connection test, against the stub model
//! server on 127.0.0.1. Keys go to the OS keyring under a service of the test's own
//! (`MNEME_KEYRING_SERVICE`), so a developer's real entries are never touched; on a machine
//! without a keyring the same tests check the keyring's advice instead.

use mneme_api::{ErrorCode, FixedClock, KeyState, Mneme, ProviderChoice, ProviderFailure, ProviderSettingsInput};
use mneme_stub_model::{Reply, StubModel};
use mneme_testsupport::TestHome;
use std::fs;
use std::sync::Arc;

fn service() -> String {
    format!("mneme-api-test-{}", std::process::id())
}

fn mneme(t: &TestHome, vars: &[(&str, &str)]) -> Mneme {
    let mut env = t.env.clone().set_var("MNEME_KEYRING_SERVICE", service());
    for (k, v) in vars {
        env = env.set_var(k, *v);
    }
    Mneme::new(env, Arc::new(FixedClock::at_unix_secs(1_700_000_000)))
}

fn input(kind: ProviderChoice) -> ProviderSettingsInput {
    ProviderSettingsInput { kind, model: None, base_url: None, timeout_secs: None, claude_binary: None }
}

fn providers_json(t: &TestHome) -> std::path::PathBuf {
    t.root.join("mneme-data").join("providers.json")
}

#[test]
fn offline_by_default_then_saved_without_any_key_in_the_file() {
    let t = TestHome::new();
    let m = mneme(&t, &[]);
    let v = m.provider_settings().unwrap();
    assert_eq!(v.kind, ProviderChoice::Offline);
    assert_eq!(v.key.state, KeyState::NotNeeded);
    assert_eq!(v.timeout_secs, 600);
    assert_eq!(v.usable, [ProviderChoice::Offline]);
    assert_eq!(v.keyring_service, service());
    assert!(!providers_json(&t).exists(), "showing the settings wrote a file");

    let v = m
        .set_provider_settings(&ProviderSettingsInput {
            model: Some("  claude-haiku-4-5 ".into()),
            base_url: Some("https://gateway.example.com/".into()),
            timeout_secs: Some(90),
            ..input(ProviderChoice::Anthropic)
        })
        .unwrap();
    assert_eq!(v.kind, ProviderChoice::Anthropic);
    assert_eq!(v.model.as_deref(), Some("claude-haiku-4-5"));
    assert_eq!(v.default_model.as_deref(), Some(mneme_model::DEFAULT_ANTHROPIC_MODEL));
    assert_eq!(v.anthropic_default_model, mneme_model::DEFAULT_ANTHROPIC_MODEL);
    assert_eq!(v.effective_base_url.as_deref(), Some("https://gateway.example.com"));
    // Keys are bound to their endpoint: a custom base URL gets an entry of its own.
    assert_eq!(v.key.account.as_deref(), Some("anthropic-api-key:https://gateway.example.com"));
    // No key was ever stored under this test's service: the keyring says so, or (only where
    // no keyring is provided) there is none and the keyring's own advice is passed on.
    match v.key.state {
        KeyState::NotSet => assert!(v.key.message.is_none()),
        KeyState::Unavailable if !mneme_testsupport::keyring_required() => {
            assert!(v.key.message.as_deref().unwrap().contains("keyring"), "{:?}", v.key)
        }
        other => panic!("a key nobody stored shows as {other:?}: {:?}", v.key.message),
    }
    let saved: serde_json::Value = serde_json::from_str(&fs::read_to_string(providers_json(&t)).unwrap()).unwrap();
    assert_eq!(
        saved,
        serde_json::json!({"kind": "anthropic", "model": "claude-haiku-4-5", "base_url": "https://gateway.example.com/", "timeout_secs": 90, "claude_binary": null})
    );
    // Read back from disk, not from memory.
    let again = mneme(&t, &[]).provider_settings().unwrap();
    assert_eq!(again.model.as_deref(), Some("claude-haiku-4-5"));
    assert_eq!(again.timeout_secs, 90);
}

#[test]
fn the_environment_key_counts_for_anthropic_and_makes_it_usable() {
    let t = TestHome::new();
    let m = mneme(&t, &[("ANTHROPIC_API_KEY", "sk-ant-from-env")]);
    let v = m.set_provider_settings(&input(ProviderChoice::Anthropic)).unwrap();
    match v.key.state {
        KeyState::FromEnvironment => {}
        KeyState::Unavailable => assert!(v.key.message.as_deref().unwrap().contains("ANTHROPIC_API_KEY from the environment is used")),
        other => panic!("{other:?}"),
    }
    assert!(v.usable.contains(&ProviderChoice::Anthropic), "{:?}", v.usable);
    let shown = serde_json::to_string(&v).unwrap();
    assert!(!shown.contains("sk-ant-from-env"), "the key reached the answer: {shown}");
}

#[test]
fn settings_a_provider_could_not_use_are_refused_and_nothing_is_written() {
    let t = TestHome::new();
    let m = mneme(&t, &[]);
    let cases: Vec<(ProviderSettingsInput, &str)> = vec![
        (input(ProviderChoice::Openai), "needs a model name"),
        (ProviderSettingsInput { model: Some("m".into()), base_url: Some("localhost:11434".into()), ..input(ProviderChoice::Openai) }, "http"),
        (ProviderSettingsInput { base_url: Some("not a url".into()), ..input(ProviderChoice::Anthropic) }, "not a URL"),
        (ProviderSettingsInput { base_url: Some("ftp://example.com".into()), ..input(ProviderChoice::Anthropic) }, "http:// or https://"),
        (ProviderSettingsInput { base_url: Some("http://user:pa55word@127.0.0.1:9/v1".into()), ..input(ProviderChoice::Anthropic) }, "user name or password"),
        (ProviderSettingsInput { base_url: Some("https://example.com/v1?x=1".into()), ..input(ProviderChoice::Anthropic) }, "?query or #fragment"),
        (ProviderSettingsInput { timeout_secs: Some(0), ..input(ProviderChoice::Anthropic) }, "1 to 3600"),
        (ProviderSettingsInput { timeout_secs: Some(7200), ..input(ProviderChoice::Anthropic) }, "1 to 3600"),
        (ProviderSettingsInput { claude_binary: Some("bin/claude".into()), ..input(ProviderChoice::ClaudeCli) }, "relative path"),
        (ProviderSettingsInput { claude_binary: Some("~/nowhere/claude".into()), ..input(ProviderChoice::ClaudeCli) }, "There is no file at"),
    ];
    for (bad, why) in cases {
        let e = m.set_provider_settings(&bad).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{bad:?}");
        assert!(e.message.contains(why), "{bad:?}: {}", e.message);
    }
    assert!(!providers_json(&t).exists());

    // A `~/` path to a real file is expanded and kept.
    let claude = t.home().join("bin/claude");
    mneme_testsupport::write_file(&claude, "#!/bin/sh\n");
    let v = m.set_provider_settings(&ProviderSettingsInput { claude_binary: Some("~/bin/claude".into()), ..input(ProviderChoice::ClaudeCli) }).unwrap();
    assert_eq!(v.claude_binary.as_deref(), Some(claude.as_path()));
    assert_eq!(v.key.state, KeyState::NotNeeded);
    assert!(v.usable.contains(&ProviderChoice::ClaudeCli));
}

#[test]
fn a_malformed_settings_file_is_reported_and_left_alone() {
    let t = TestHome::new();
    let m = mneme(&t, &[]);
    mneme_testsupport::write_file(&providers_json(&t), "{ \"kind\": \"anthropic\", }");
    let e = m.provider_settings().unwrap_err();
    assert_eq!(e.code, ErrorCode::Malformed);
    assert!(e.message.contains("providers.json") && e.message.contains("delete it"), "{}", e.message);
    let e = m.set_provider_settings(&input(ProviderChoice::Offline)).unwrap_err();
    assert_eq!(e.code, ErrorCode::Malformed);
    assert_eq!(fs::read_to_string(providers_json(&t)).unwrap(), "{ \"kind\": \"anthropic\", }");
}

#[test]
fn keys_are_refused_for_providers_that_take_none_and_must_be_one_word() {
    let t = TestHome::new();
    let m = mneme(&t, &[]);
    let e = m.set_provider_key(Some("sk-x")).unwrap_err();
    assert_eq!(e.code, ErrorCode::InvalidInput);
    assert!(e.message.contains("Offline mode"), "{}", e.message);
    m.set_provider_settings(&input(ProviderChoice::ClaudeCli)).unwrap();
    let e = m.set_provider_key(Some("sk-x")).unwrap_err();
    // Claude Code's sign-in is a terminal command: in the sentence, and on its own line for a
    // screen to show with Copy.
    assert!(e.message.contains("run `claude auth login` in a terminal"), "{}", e.message);
    let fix = e.command.expect("the refusal carries Claude Code's sign-in command");
    assert_eq!(fix.line, "claude auth login");
    assert!(fix.before.ends_with("To sign in, run this in a terminal:") && fix.after == "Then test the provider again.", "{fix:?}");
    m.set_provider_settings(&input(ProviderChoice::Anthropic)).unwrap();
    for bad in ["   ", "sk-ant one", "sk-ant\nsecond", "sk-ant-\u{1b}[A", "\u{201c}sk-ant-x\u{201d}"] {
        let e = m.set_provider_key(Some(bad)).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidInput, "{bad:?}");
    }
}

/// Setting a key lands in the keyring (read back through Secret Service itself, then only ever
/// reported as "set") or, where no keyring is provided (not under scripts/with-keyring.sh, which
/// `npm test` uses), fails with the keyring's advice; either way it is written nowhere else.
#[test]
fn a_key_goes_to_the_keyring_or_nowhere() {
    let t = TestHome::new();
    let m = mneme(&t, &[]);
    m.set_provider_settings(&ProviderSettingsInput { model: Some("local".into()), base_url: Some("http://127.0.0.1:9/v1".into()), ..input(ProviderChoice::Openai) })
        .unwrap();
    let key = "sk-test-key-that-must-stay-secret";
    match m.set_provider_key(Some(key)) {
        Ok(v) => {
            let account = "openai-api-key:http://127.0.0.1:9/v1";
            assert_eq!(v.key.state, KeyState::Set);
            assert_eq!(v.key.account.as_deref(), Some(account));
            assert!(!serde_json::to_string(&v).unwrap().contains(key));
            if mneme_testsupport::keyring_required() {
                assert_eq!(mneme_testsupport::secret_tool_lookup(&service(), account).as_deref(), Some(key));
            }
            let v = m.set_provider_key(None).unwrap();
            assert_eq!(v.key.state, KeyState::NotSet);
            if mneme_testsupport::keyring_required() {
                assert_eq!(mneme_testsupport::secret_tool_lookup(&service(), account), None);
            }
        }
        Err(e) if mneme_testsupport::keyring_required() => panic!("the keyring scripts/with-keyring.sh provides refused the key: {e:?}"),
        Err(e) => {
            assert_eq!(e.code, ErrorCode::Unavailable, "{e:?}");
            assert!(e.message.contains("gnome-keyring") || e.message.contains("unlock"), "{}", e.message);
        }
    }
    for entry in mneme_testsupport::files_under(&t.root) {
        let text = fs::read(&entry).unwrap_or_default();
        assert!(!String::from_utf8_lossy(&text).contains(key), "the key was written to {}", entry.display());
    }
}


#[test]
fn offline_needs_no_connection_test() {
    let t = TestHome::new();
    let r = mneme(&t, &[]).test_provider(&input(ProviderChoice::Offline)).unwrap();
    assert!(r.ok && r.failure.is_none() && r.model.is_none());
    assert!(r.message.contains("nothing to connect to"), "{}", r.message);
}

#[test]
fn connection_test_answers_and_classifies_each_failure_without_retrying() {
    let t = TestHome::new();
    let stub = StubModel::start_blocking();
    let m = mneme(&t, &[("ANTHROPIC_API_KEY", "sk-ant-test")]);
    let anthropic = ProviderSettingsInput { base_url: Some(stub.base_url()), ..input(ProviderChoice::Anthropic) };

    let r = m.test_provider(&anthropic).unwrap();
    assert!(r.ok, "{r:?}");
    assert_eq!(r.model.as_deref(), Some(mneme_model::DEFAULT_ANTHROPIC_MODEL));
    assert_eq!(r.reply.as_deref(), Some("ok"));
    let sent = &stub.model_requests()[0];
    assert_eq!(sent.header("x-api-key"), Some("sk-ant-test"));
    assert_eq!(sent.body["max_tokens"], 16);

    for (status, failure, says) in [
        (401, ProviderFailure::BadKey, "API key was refused"),
        (429, ProviderFailure::RateLimited, "rate limiting"),
        (404, ProviderFailure::ModelNotFound, "was not found"),
        (500, ProviderFailure::Api, "returned an error"),
    ] {
        let before = stub.model_requests().len();
        stub.push(Reply::status(status));
        let r = m.test_provider(&anthropic).unwrap();
        assert!(!r.ok, "{status}");
        assert_eq!(r.failure, Some(failure), "{status}: {r:?}");
        assert!(r.message.contains(says), "{status}: {}", r.message);
        assert_eq!(stub.model_requests().len(), before + 1, "{status} was retried");
    }
    // Nothing was saved by testing.
    assert!(!providers_json(&t).exists());

    // OpenAI-compatible, with a named model and no key (a local server needs none).
    let openai = ProviderSettingsInput { model: Some("local-model".into()), base_url: Some(stub.openai_base_url()), ..input(ProviderChoice::Openai) };
    let r = m.test_provider(&openai).unwrap();
    assert!(r.ok, "{r:?}");
    assert_eq!(r.model.as_deref(), Some("local-model"));
    assert!(stub.model_requests().last().unwrap().is_openai_chat());
}

#[test]
fn connection_test_reports_an_unreachable_endpoint_and_a_missing_key() {
    let t = TestHome::new();
    // A port held by this test where nothing listens.
    let refused = mneme_testsupport::refused_port();
    let port = refused.addr.port();
    let m = mneme(&t, &[]);
    let openai = ProviderSettingsInput {
        model: Some("local-model".into()),
        base_url: Some(format!("http://127.0.0.1:{port}/v1")),
        ..input(ProviderChoice::Openai)
    };
    let r = m.test_provider(&openai).unwrap();
    assert_eq!(r.failure, Some(ProviderFailure::Network), "{r:?}");
    assert!(r.message.contains("could not reach"), "{}", r.message);

    // Anthropic with no key in the keyring (this test's own service) and none in the environment.
    let r = m.test_provider(&input(ProviderChoice::Anthropic)).unwrap();
    assert!(!r.ok);
    assert_eq!(r.failure, Some(ProviderFailure::NotConfigured), "{r:?}");
    assert!(r.message.contains("ANTHROPIC_API_KEY"), "{}", r.message);
}
