//! `providerSettings`, `setProviderSettings`, `setProviderKey`, `testProvider` and `recall` over
//! real HTTP, checked against the engine called directly; the model is the stub model server on
//! 127.0.0.1.

mod common;

use common::{fixture, Server};
use mneme_api::{ContextRequest, ProviderChoice, RecallQuery};
use mneme_stub_model::StubModel;
use mneme_testsupport::{topic, write_file};
use serde_json::json;

async fn server() -> Server {
    let (mut home, repo) = fixture();
    // Keys go under a service of this test's own, never a person's real `mneme` entries.
    home.env = home.env.clone().set_var("MNEME_KEYRING_SERVICE", format!("mneme-serve-test-{}", std::process::id()));
    let ui = home.root.join("no-ui-here");
    Server::start_with(home, repo, Some(ui)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn provider_settings_round_trip_and_connection_test() {
    let s = server().await;
    let stub = StubModel::start().await;
    let view = s.ok("providerSettings", json!({})).await;
    assert_eq!(view["kind"], "offline");
    assert_eq!(view["key"]["state"], "notNeeded");
    assert_eq!(view, serde_json::to_value(s.mneme.provider_settings().unwrap()).unwrap());

    let openai = json!({ "kind": "openai", "model": "local-model", "baseUrl": stub.openai_base_url(), "timeoutSecs": 30 });
    let test = s.ok("testProvider", openai.clone()).await;
    assert_eq!((test["ok"].as_bool(), test["model"].as_str(), test["reply"].as_str()), (Some(true), Some("local-model"), Some("ok")), "{test}");
    assert!(!s.home.root.join("mneme-data/providers.json").exists(), "testing saved the settings");

    let saved = s.ok("setProviderSettings", openai).await;
    assert_eq!(saved["kind"], "openai");
    assert_eq!(saved["effectiveBaseUrl"], stub.openai_base_url());
    assert_eq!(saved["timeoutSecs"], 30);
    assert_eq!(saved["key"]["account"], format!("openai-api-key:{}", stub.openai_base_url()));
    assert!(saved["usable"].as_array().unwrap().contains(&json!("openai")));

    stub.push(mneme_stub_model::Reply::status(401));
    let test = s.ok("testProvider", json!({ "kind": "openai", "model": "local-model", "baseUrl": stub.openai_base_url() })).await;
    assert_eq!((test["ok"].as_bool(), test["failure"].as_str()), (Some(false), Some("badKey")), "{test}");

    let (status, body) = s.call("setProviderSettings", json!({ "kind": "openai" })).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_input")), "{body}");
    let (status, body) = s.call("setProviderSettings", json!({ "kind": "gpt" })).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_input")), "{body}");

    // A key is stored (read back through Secret Service itself, reported only as "set") or,
    // only where no keyring is provided (not under scripts/with-keyring.sh, which `npm test`
    // uses), refused with the keyring's advice.
    let (status, body) = s.call("setProviderKey", json!({ "key": "sk-serve-test" })).await;
    let required = mneme_testsupport::keyring_required();
    match status {
        200 => {
            let (service, account) = (s.mneme.provider_settings().unwrap().keyring_service, body["key"]["account"].as_str().unwrap().to_string());
            assert_eq!(body["key"]["state"], "set");
            assert!(!body.to_string().contains("sk-serve-test"));
            if required {
                assert_eq!(mneme_testsupport::secret_tool_lookup(&service, &account).as_deref(), Some("sk-serve-test"));
            }
            let cleared = s.ok("setProviderKey", json!({ "key": null })).await;
            assert_eq!(cleared["key"]["state"], "notSet");
            if required {
                assert_eq!(mneme_testsupport::secret_tool_lookup(&service, &account), None);
            }
        }
        503 if !required => assert_eq!(body["code"], "unavailable", "{body}"),
        other => panic!("setProviderKey answered {other}: {body}"),
    }
    s.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recall_matches_the_engine() {
    let s = server().await;
    let mem = s.home.memdir_for(&s.repo);
    write_file(&mem.join("deploys.md"), &topic("Deploys", "Never deploy on Fridays", "feedback", "Deploys wait for Monday."));
    write_file(&mem.join("role.md"), &topic("Role", "Senior Rust developer", "user", "Explain frontend in backend terms."));
    let body = json!({ "cwd": s.repo, "prompt": "can we deploy on friday", "provider": "offline" });
    let view = s.ok("recall", body).await;
    assert_eq!(view["provider"], "offline");
    assert_eq!(view["selected"][0]["relPath"], "deploys.md");
    assert!(view["selected"][0]["injected"].as_str().unwrap().starts_with("<system-reminder>\nRetrieved for possible relevance"));
    let req = ContextRequest { cwd: s.repo.clone(), ..Default::default() };
    let direct = s
        .mneme
        .recall(&req, &RecallQuery { prompt: "can we deploy on friday".into(), provider: Some(ProviderChoice::Offline) })
        .unwrap();
    assert_eq!(view, serde_json::to_value(&direct).unwrap());

    let (status, body) = s.call("recall", json!({ "cwd": s.repo, "prompt": "x y", "provider": "nope" })).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("invalid_input")), "{body}");
    s.stop().await;
}
