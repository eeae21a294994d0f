//! `providers.json` as written by a newer or an older Mneme (the app and a CLI of another
//! build share one data folder): a newer build's settings survive a save here, a provider kind
//! this build lacks says to update Mneme, and an older file's missing fields take defaults.

use mneme_model::{ProviderKind, ProviderSettings, DEFAULT_TIMEOUT_SECS};
use mneme_testsupport::TestHome;

#[test]
fn a_newer_mneme_s_settings_survive_a_save_here() {
    let home = TestHome::new();
    let path = ProviderSettings::path(&home.env);
    home.write(&path, r#"{"kind": "anthropic", "model": "m", "base_url": null, "timeout_secs": 60, "claude_binary": null, "region": "eu", "retry": {"max": 2}}"#);
    let mut settings = ProviderSettings::load(&home.env).unwrap();
    settings.kind = ProviderKind::Openai;
    settings.model = None;
    settings.save(&home.env).unwrap();
    let written: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    assert_eq!(written["region"], "eu", "{written}");
    assert_eq!(written["retry"], serde_json::json!({"max": 2}), "{written}");
    assert_eq!(written["kind"], "openai");
    assert_eq!(written["model"], serde_json::Value::Null, "a field this build knows is written as it now stands");
    assert_eq!(ProviderSettings::load(&home.env).unwrap(), settings);
}

#[test]
fn a_provider_kind_this_build_lacks_says_to_update_mneme() {
    let home = TestHome::new();
    let path = ProviderSettings::path(&home.env);
    home.write(&path, r#"{"kind": "bedrock", "region": "eu"}"#);
    let e = ProviderSettings::load(&home.env).unwrap_err().to_string();
    assert!(e.contains("newer Mneme") && e.contains("update Mneme"), "{e}");
    assert_eq!(std::fs::read_to_string(&path).unwrap(), r#"{"kind": "bedrock", "region": "eu"}"#, "left as it is");
}

#[test]
fn an_older_file_s_missing_fields_take_the_defaults() {
    let home = TestHome::new();
    home.write(ProviderSettings::path(&home.env), r#"{"kind": "claude-cli"}"#);
    let s = ProviderSettings::load(&home.env).unwrap();
    assert_eq!((s.kind, s.timeout_secs, s.model, s.base_url), (ProviderKind::ClaudeCli, DEFAULT_TIMEOUT_SECS, None, None));
}
