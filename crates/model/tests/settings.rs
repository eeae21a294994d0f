//! Provider settings on disk and `build_provider`.

use mneme_keychain::Keychain;
use mneme_model::{
    anthropic_key_account, build_provider, openai_key_account, Cancel, Message, ModelError, ProviderKind, ProviderSettings, ProviderSettingsError, Request,
    OFFLINE_MESSAGE,
};
use mneme_stub_model::{StubModel, Turn};
use mneme_testsupport::TestHome;
use std::path::PathBuf;

/// A keyring service no real entry lives under, so tests never see or touch a user's keys.
fn test_keychain() -> Keychain {
    Keychain::new(format!("mneme-model-test-{}-{}", std::process::id(), getrandom::u64().unwrap()))
}

fn ask() -> Request {
    Request { system: String::new(), messages: vec![Message::user_text("hi")], tools: vec![], max_tokens: 16, json_schema: None, thinking_disabled: false }
}

#[test]
fn defaults_to_offline_and_saves_atomically_next_to_nothing_else() {
    let home = TestHome::new();
    assert_eq!(ProviderSettings::load(&home.env).unwrap(), ProviderSettings::default());
    assert_eq!(ProviderSettings::default().kind, ProviderKind::Offline);

    let settings = ProviderSettings {
        kind: ProviderKind::Openai,
        model: Some("qwen3".into()),
        base_url: Some("http://127.0.0.1:11434/v1/".into()),
        timeout_secs: 90,
        claude_binary: Some(PathBuf::from("/opt/claude")),
    };
    settings.save(&home.env).unwrap();
    let path = ProviderSettings::path(&home.env);
    assert_eq!(path, home.root.join("mneme-data/providers.json"));
    assert_eq!(ProviderSettings::load(&home.env).unwrap(), settings);
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.contains("\"kind\": \"openai\"") && !text.to_lowercase().contains("key"), "{text}");
    let leftovers: Vec<_> = std::fs::read_dir(path.parent().unwrap()).unwrap().map(|e| e.unwrap().file_name()).collect();
    assert_eq!(leftovers, ["providers.json"]);
    assert_eq!(settings.effective_base_url().as_deref(), Some("http://127.0.0.1:11434/v1"));
    assert_eq!(settings.key_account(), Some(openai_key_account("http://127.0.0.1:11434/v1")));
    assert_eq!(openai_key_account("http://127.0.0.1:11434/v1"), "openai-api-key:http://127.0.0.1:11434/v1");
}

#[test]
fn a_malformed_file_is_reported_and_left_alone() {
    let home = TestHome::new();
    let path = ProviderSettings::path(&home.env);
    home.write(&path, "{\"kind\": \"telepathy\"}");
    let e = ProviderSettings::load(&home.env).unwrap_err();
    assert!(matches!(&e, ProviderSettingsError::Malformed { path: p, .. } if *p == path), "{e:?}");
    assert!(e.to_string().contains("delete it to start again"));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"kind\": \"telepathy\"}");
}

#[tokio::test]
async fn offline_says_there_is_no_model() {
    let home = TestHome::new();
    let p = build_provider(&ProviderSettings::default(), &home.env, &test_keychain()).unwrap();
    assert_eq!(p.kind(), ProviderKind::Offline);
    assert!(p.headless().is_none());
    assert_eq!(p.complete(&ask(), &Cancel::new()).await.unwrap_err(), ModelError::NotConfigured(OFFLINE_MESSAGE.into()));
}

#[tokio::test]
async fn anthropic_falls_back_to_the_environment_key() {
    let stub = StubModel::start().await;
    stub.push(Turn::text("hello"));
    let home = TestHome::new();
    let settings = ProviderSettings { kind: ProviderKind::Anthropic, base_url: Some(stub.base_url()), ..ProviderSettings::default() };
    let keychain = test_keychain();

    let e = build_provider(&settings, &home.env, &keychain).err().expect("no key anywhere");
    assert!(matches!(&e, ModelError::NotConfigured(m) if m.contains("ANTHROPIC_API_KEY")), "{e:?}");

    let env = home.env.clone().set_var("ANTHROPIC_API_KEY", "sk-from-env");
    let p = build_provider(&settings, &env, &keychain).unwrap();
    assert_eq!((p.kind(), p.model()), (ProviderKind::Anthropic, "claude-sonnet-5-5"));
    // The newest release's Sonnet, as its selector asks.
    assert_eq!(mneme_model::DEFAULT_ANTHROPIC_MODEL, mneme_core::versions::newest().recall_selector.sonnet_model);
    assert_eq!(p.complete(&ask(), &Cancel::new()).await.unwrap().first_text(), Some("hello"));
    assert_eq!(stub.model_requests()[0].header("x-api-key"), Some("sk-from-env"));
}

/// The environment's key goes to the API the environment names, or to this machine; an
/// address typed in the form (tested before its own key is stored) does not receive it.
#[test]
fn the_environment_key_is_not_sent_to_an_address_it_does_not_belong_to() {
    let home = TestHome::new();
    let keychain = test_keychain();
    let env = home.env.clone().set_var("ANTHROPIC_API_KEY", "sk-from-env");
    let proxy = ProviderSettings { kind: ProviderKind::Anthropic, base_url: Some("https://llm-proxy.example.com/".into()), ..ProviderSettings::default() };
    let e = build_provider(&proxy, &env, &keychain).err().expect("the environment key does not go to a typed address");
    assert!(matches!(&e, ModelError::NotConfigured(m) if m.contains("no API key for https://llm-proxy.example.com") && m.contains("only sent to")), "{e:?}");
    assert_eq!(mneme_model::anthropic_environment_key("https://llm-proxy.example.com", &env), None);
    // Named beside the key in the environment (as Claude Code uses the pair), or the default API.
    let paired = env.clone().set_var("ANTHROPIC_BASE_URL", "https://llm-proxy.example.com");
    assert!(build_provider(&proxy, &paired, &keychain).is_ok());
    let default = ProviderSettings { kind: ProviderKind::Anthropic, ..ProviderSettings::default() };
    assert!(build_provider(&default, &env, &keychain).is_ok());
    assert_eq!(mneme_model::anthropic_environment_key("http://localhost:8080", &env).as_deref(), Some("sk-from-env"));
}

/// A key is never sent in clear across another network; a local network or a keyless
/// endpoint may use plain http.
#[test]
fn a_key_is_not_sent_over_plain_http_to_another_network() {
    let home = TestHome::new();
    let keychain = test_keychain();
    let env = home.env.clone().set_var("ANTHROPIC_API_KEY", "sk-from-env");
    for url in ["http://llm.example.com", "http://203.0.113.9:8080/v1", "http://[2001:db8::1]/"] {
        let paired = env.clone().set_var("ANTHROPIC_BASE_URL", url);
        let settings = ProviderSettings { kind: ProviderKind::Anthropic, base_url: Some(url.into()), ..ProviderSettings::default() };
        let e = build_provider(&settings, &paired, &keychain).err().unwrap_or_else(|| panic!("{url} refused"));
        assert!(matches!(&e, ModelError::NotConfigured(m) if m.contains("unencrypted") && m.contains("https://")), "{url}: {e:?}");
        assert!(mneme_model::AnthropicProvider::new("m", "sk", Some(url)).is_err(), "{url}");
        assert!(mneme_model::OpenAiProvider::new("m", Some("sk".into()), Some(url)).is_err(), "{url}");
        assert!(mneme_model::OpenAiProvider::new("m", None, Some(url)).is_ok(), "{url}: no key, nothing to leak");
    }
    for url in ["https://llm.example.com", "http://127.0.0.1:9/v1", "http://localhost:11434", "http://192.168.1.20:8000/v1", "http://10.0.0.7", "http://gpu-box:8000/v1", "http://gpu.lan", "http://[fd00::5]:80", "http://[::1]:1"] {
        assert!(mneme_model::AnthropicProvider::new("m", "sk", Some(url)).is_ok(), "{url}");
        assert!(mneme_model::OpenAiProvider::new("m", Some("sk".into()), Some(url)).is_ok(), "{url}");
    }
}

#[tokio::test]
#[ignore = "needs an OS keyring: scripts/with-keyring.sh cargo test -p mneme-model --test settings -- --ignored keyring"]
async fn keyring_keys_come_before_the_environment() {
    let keychain = test_keychain();
    let stub = StubModel::start().await;
    let home = TestHome::new();
    let env = home.env.clone().set_var("ANTHROPIC_API_KEY", "sk-from-env");

    let anthropic = ProviderSettings { kind: ProviderKind::Anthropic, base_url: Some(stub.base_url()), ..ProviderSettings::default() };
    anthropic.set_api_key(&keychain, Some("sk-from-keyring")).unwrap();
    build_provider(&anthropic, &env, &keychain).unwrap().complete(&ask(), &Cancel::new()).await.unwrap();
    assert_eq!(stub.model_requests()[0].header("x-api-key"), Some("sk-from-keyring"));
    anthropic.set_api_key(&keychain, None).unwrap();

    let openai = ProviderSettings {
        kind: ProviderKind::Openai,
        model: Some("m".into()),
        base_url: Some(stub.openai_base_url()),
        ..ProviderSettings::default()
    };
    openai.set_api_key(&keychain, Some("sk-openai")).unwrap();
    build_provider(&openai, &env, &keychain).unwrap().complete(&ask(), &Cancel::new()).await.unwrap();
    assert_eq!(stub.model_requests()[1].header("authorization"), Some("Bearer sk-openai"));
    openai.set_api_key(&keychain, None).unwrap();
    assert_eq!(keychain.get(&openai.key_account().unwrap()).unwrap(), None);
}

#[test]
fn anthropic_keys_are_bound_to_their_endpoint() {
    let default = ProviderSettings { kind: ProviderKind::Anthropic, ..ProviderSettings::default() };
    assert_eq!(default.key_account().as_deref(), Some("anthropic-api-key"), "keys stored before stay where they were");
    let proxy = ProviderSettings { base_url: Some("https://proxy.example.com/".into()), ..default.clone() };
    assert_eq!(proxy.key_account().as_deref(), Some("anthropic-api-key:https://proxy.example.com"));
    assert_eq!(anthropic_key_account("https://api.anthropic.com/"), "anthropic-api-key");
}

#[tokio::test]
#[ignore = "needs an OS keyring: scripts/with-keyring.sh cargo test -p mneme-model --test settings -- --ignored keyring"]
async fn keyring_keys_for_one_endpoint_are_not_sent_to_another() {
    let keychain = test_keychain();
    let stub = StubModel::start().await;
    let home = TestHome::new();
    // A key saved for the public API…
    let public = ProviderSettings { kind: ProviderKind::Anthropic, ..ProviderSettings::default() };
    public.set_api_key(&keychain, Some("sk-ant-for-anthropic")).unwrap();
    // …is not what a changed base URL gets: that endpoint has no key of its own.
    let elsewhere = ProviderSettings { base_url: Some(stub.base_url()), ..public.clone() };
    let e = build_provider(&elsewhere, &home.env, &keychain).err().expect("no key for this endpoint");
    assert!(matches!(&e, ModelError::NotConfigured(m) if m.contains("no Anthropic API key")), "{e:?}");
    assert!(stub.model_requests().is_empty());
    public.set_api_key(&keychain, None).unwrap();
}

#[tokio::test]
async fn openai_needs_a_model_but_no_key() {
    let stub = StubModel::start().await;
    let home = TestHome::new();
    let mut settings = ProviderSettings { kind: ProviderKind::Openai, base_url: Some(stub.openai_base_url()), ..ProviderSettings::default() };
    let e = build_provider(&settings, &home.env, &test_keychain()).err().expect("no model");
    assert!(matches!(&e, ModelError::NotConfigured(m) if m.contains("no model chosen")), "{e:?}");
    settings.model = Some("llama3".into());
    let p = build_provider(&settings, &home.env, &test_keychain()).unwrap();
    assert_eq!(p.complete(&ask(), &Cancel::new()).await.unwrap().first_text(), Some("ok"));
    assert_eq!(stub.model_requests()[0].body["model"], "llama3");
}

#[test]
fn claude_cli_is_found_on_the_environments_path() {
    let home = TestHome::new();
    let settings = ProviderSettings { kind: ProviderKind::ClaudeCli, ..ProviderSettings::default() };
    let bin = home.root.join("bin");
    let e = build_provider(&settings, &home.env.clone().set_var("PATH", bin.to_string_lossy()), &test_keychain()).err().expect("no claude");
    assert!(matches!(&e, ModelError::NotConfigured(m) if m.contains("not on the PATH")), "{e:?}");

    let claude = home.write("bin/claude", "#!/bin/sh\n");
    let not_executable = build_provider(&settings, &home.env.clone().set_var("PATH", bin.to_string_lossy()), &test_keychain());
    assert!(not_executable.is_err(), "a file without the execute bit is not a program");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&claude, std::fs::Permissions::from_mode(0o755)).unwrap();
    let env = home.env.clone().set_var("PATH", format!("/nonexistent:{}", bin.display()));
    assert_eq!(mneme_model::find_claude(&env), Some(claude));
    let p = build_provider(&ProviderSettings { model: Some("sonnet".into()), ..settings }, &env, &test_keychain()).unwrap();
    assert_eq!((p.kind(), p.model()), (ProviderKind::ClaudeCli, "sonnet"));
    assert!(p.headless().is_some());
}
