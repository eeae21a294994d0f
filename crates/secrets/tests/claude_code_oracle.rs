//! The port against Claude Code's own code: `data/claude_code_oracle.json` holds the rule table
//! and the `scanForSecrets` / `redactSecrets` results of Claude Code 2.1.197's JavaScript on
//! gitleaks' examples plus `data/cases.json` (regenerate with `data/claude_code_oracle.mjs`).

use mneme_secrets::rules::{Confidence, CLAUDE_CODE_RULES};
use mneme_secrets::{redact, rule_label, scan_claude_code};
use serde_json::Value;

fn oracle() -> Value {
    let text = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/claude_code_oracle.json"))
        .expect("the oracle file is vendored");
    serde_json::from_str(&text).expect("the oracle is JSON")
}

#[test]
fn the_rule_table_is_claude_codes_verbatim() {
    let o = oracle();
    let rules = o["rules"].as_array().unwrap();
    assert_eq!(rules.len(), CLAUDE_CODE_RULES.len());
    for (want, got) in rules.iter().zip(CLAUDE_CODE_RULES) {
        assert_eq!(want["id"], got.id);
        assert_eq!(want["source"], got.source, "{}", got.id);
        assert_eq!(want["flags"], got.flags, "{}", got.id);
        let confidence = if got.confidence == Confidence::High { "high" } else { "low" };
        assert_eq!(want["confidence"], confidence, "{}", got.id);
        assert_eq!(want["label"], rule_label(got.id).as_str(), "{}", got.id);
    }
}

#[test]
fn scan_and_redact_agree_with_claude_code_on_every_case() {
    let o = oracle();
    let cases = o["cases"].as_array().unwrap();
    assert!(cases.len() > 450);
    let mut failures = Vec::new();
    for c in cases {
        let text = c["text"].as_str().unwrap();
        let want: Vec<&str> = c["scan"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
        let got: Vec<&str> = scan_claude_code(text).iter().map(|f| f.rule_id).collect();
        if got != want {
            failures.push(format!("scan {text:?}: Claude Code {want:?}, Mneme {got:?}"));
        }
        let want = c["redact"].as_str().unwrap();
        let got = redact(text);
        if got != want {
            failures.push(format!("redact {text:?}:\n  Claude Code {want:?}\n  Mneme       {got:?}"));
        }
    }
    assert!(failures.is_empty(), "{} disagreements:\n{}", failures.len(), failures.join("\n"));
}
