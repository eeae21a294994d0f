//! The port against Claude Code's own code: `data/claude_code_oracle.json` holds the rule table
//! and the `scanForSecrets` / `redactSecrets` results of Claude Code 2.1.197's JavaScript on
//! gitleaks' examples plus `data/cases.json` (regenerate with `data/claude_code_oracle.mjs`), and
//! each `data/claude_code_scan_<version>.json` what that release's scanner finds in the same
//! texts (regenerate with `data/claude_code_scan_oracle.mjs`).

use mneme_core::versions::{behaviours, ClaudeVersion};
use mneme_secrets::claude_code::{private_key_check, token_rules, PrivateKeyCheck};
use mneme_secrets::rules::{Confidence, CLAUDE_CODE_RULES};
use mneme_secrets::{redact, rule_label, scan_claude_code, SecretScanner};
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

/// FNV-1a (32 bits) of a text's UTF-8, as the oracle script keeps redacted texts.
fn fnv(text: &str) -> String {
    let h = text.bytes().fold(0x811c_9dc5_u32, |h, b| (h ^ u32::from(b)).wrapping_mul(0x0100_0193));
    format!("{h:08x}")
}

#[test]
fn scan_and_redact_agree_with_claude_code_on_every_case() {
    let o = oracle();
    let texts = texts();
    assert_eq!(o["texts"].as_u64().unwrap() as usize, texts.len(), "the cases changed; regenerate claude_code_oracle.json");
    let (found, redacted) = (o["found"].as_object().unwrap(), o["redacted"].as_object().unwrap());
    let mut failures = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let want: Vec<&str> = found.get(&i.to_string()).map_or(Vec::new(), |v| v.as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect());
        let got: Vec<&str> = scan_claude_code(text, SecretScanner::V2_1_196).iter().map(|f| f.rule_id).collect();
        if got != want {
            failures.push(format!("scan {text:?}: Claude Code {want:?}, Mneme {got:?}"));
        }
        let got = redact(text);
        let want = redacted.get(&i.to_string()).map(|h| h.as_str().unwrap());
        if want.map_or(got != *text, |h| fnv(&got) != h) {
            failures.push(format!("redact {text:?}: Mneme {got:?} is not what Claude Code made"));
        }
    }
    assert!(failures.is_empty(), "{} disagreements:\n{}", failures.len(), failures.join("\n"));
}

/// The texts every release's scanner was run on, in the oracle scripts' order.
fn texts() -> Vec<String> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let gitleaks = std::fs::read_to_string(format!("{dir}/../../../../testdata/secrets/gitleaks-examples.jsonl")).unwrap();
    let mut texts: Vec<String> = gitleaks
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["text"].as_str().unwrap().to_string())
        .collect();
    let cases: Vec<String> = serde_json::from_str(&std::fs::read_to_string(format!("{dir}/cases.json")).unwrap()).unwrap();
    texts.extend(cases);
    texts
}

/// Each vendored release: the table its version maps to has its rules and its private-key check,
/// and finds exactly what the release's own scanner found, with the same labels.
#[test]
fn every_release_table_agrees_with_that_release() {
    let texts = texts();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("claude_code_scan_") && n.ends_with(".json"))
        .collect();
    files.sort();
    assert!(files.len() >= 7, "{files:?}");
    let mut scanners = std::collections::BTreeSet::new();
    for file in files {
        let o: Value = serde_json::from_str(&std::fs::read_to_string(format!("{dir}/{file}")).unwrap()).unwrap();
        let version: ClaudeVersion = file["claude_code_scan_".len()..file.len() - ".json".len()].parse().unwrap();
        let scanner = behaviours(version).secret_scanner;
        scanners.insert(scanner);
        assert_eq!(o["texts"].as_u64().unwrap() as usize, texts.len(), "{file}: the cases changed; regenerate it with claude_code_scan_oracle.mjs");

        let want: Vec<(&str, &str, &str)> = o["rules"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| (r["id"].as_str().unwrap(), r["source"].as_str().unwrap(), r["flags"].as_str().unwrap()))
            .collect();
        let got: Vec<_> = token_rules(scanner).collect();
        assert_eq!(want.len(), got.len(), "{file}");
        for ((id, source, flags), rule) in want.iter().zip(&got) {
            assert_eq!(*id, rule.id, "{file}");
            assert_eq!(flags.replace('g', ""), rule.flags, "{file} {id}");
            // A compiled RegExp's `source` escapes `/`; the guarded Anthropic OAuth regex of
            // later releases matches what the bare one does (see `TOKEN_RULES`).
            let source = source.replace("\\/", "/").replace("sk[-]ant[-]api03", "sk-ant-api03");
            if !(rule.id == "anthropic-oauth-token" && source.ends_with(rule.source)) {
                assert_eq!(source, rule.source, "{file} {id}");
            }
        }
        let check = match private_key_check(scanner) {
            PrivateKeyCheck::Rule => "rule",
            PrivateKeyCheck::Span => "span",
            PrivateKeyCheck::SpanAfterRedaction => "span-redacted",
        };
        assert_eq!(o["privateKey"], check, "{file}");
        for (id, label) in o["labels"].as_object().unwrap() {
            assert_eq!(rule_label(id), label.as_str().unwrap(), "{file}");
        }

        let found = o["found"].as_object().unwrap();
        let mut failures = Vec::new();
        for (i, text) in texts.iter().enumerate() {
            let want: Vec<&str> = found.get(&i.to_string()).map_or(Vec::new(), |v| v.as_array().unwrap().iter().map(|x| x.as_str().unwrap()).collect());
            let got: Vec<&str> = scan_claude_code(text, scanner).iter().map(|f| f.rule_id).collect();
            if got != want {
                failures.push(format!("{text:?}: Claude Code {want:?}, Mneme {got:?}"));
            }
        }
        assert!(failures.is_empty(), "{file}: {} disagreements:\n{}", failures.len(), failures.join("\n"));
    }
    // Every table is checked against at least one release that runs it.
    assert_eq!(scanners.len(), 5, "{scanners:?}");
}

/// Mneme's own verdict refuses every text each vendored release running the newest table refuses
/// (2.1.323, 2.1.332 and 2.1.337 so far: a release that changes the table fails
/// `every_release_table_agrees_with_that_release` until the table is Mneme's), except
/// placeholders: a run of one repeated character (`ghp_xxxx…`), AWS's `…EXAMPLE` keys, and the
/// Firebase SDK's published API keys that gitleaks allowlists.
#[test]
fn mneme_refuses_whatever_the_newest_release_refuses_but_placeholders() {
    let texts = texts();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data");
    let newest = mneme_core::versions::newest().secret_scanner;
    let mut releases: Vec<ClaudeVersion> = std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.strip_prefix("claude_code_scan_")?.strip_suffix(".json")?.parse().ok()
        })
        .filter(|v| behaviours(*v).secret_scanner == newest)
        .collect();
    releases.sort();
    let at_least: Vec<ClaudeVersion> = ["2.1.332", "2.1.337"].iter().map(|v| v.parse().unwrap()).collect();
    assert!(at_least.iter().all(|v| releases.contains(v)), "{releases:?}");
    let published = mneme_secrets::rules::confirm_for("gcp-api-key").allow;
    let placeholder = |t: &str| {
        let b = t.as_bytes();
        b.windows(8).any(|w| w.iter().all(|&c| c == w[0] && c.is_ascii_alphanumeric()))
            || t.contains("EXAMPLE")
            || published.iter().any(|k| t.contains(k))
    };
    let mut passed = Vec::new();
    for release in &releases {
        let o: Value = serde_json::from_str(&std::fs::read_to_string(format!("{dir}/claude_code_scan_{release}.json")).unwrap()).unwrap();
        for i in o["found"].as_object().unwrap().keys() {
            let text = &texts[i.parse::<usize>().unwrap()];
            if mneme_secrets::scan(text).is_empty() && !placeholder(text) {
                passed.push(format!("{release}: {text}"));
            }
        }
    }
    assert!(passed.is_empty(), "Claude Code refuses these and Mneme does not:\n{}", passed.join("\n"));
}
