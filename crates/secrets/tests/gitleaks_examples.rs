//! The secret guard measured on gitleaks' own rule examples
//! (`testdata/secrets/gitleaks-examples.jsonl`, made by `testdata/secrets/gitleaks_examples.py`
//! from gitleaks' rule generator: the true- and false-positive examples every rule is validated
//! with).
//!
//! For every rule of gitleaks' config: the rule alone (gitleaks' single-rule detector, the way
//! gitleaks validates its rules) must catch all of its secret examples and flag at most 2% of its
//! clean ones; and Mneme's whole verdict, [`scan`], must refuse every secret example of every
//! rule it applies to team memory and name the rule for at most 2% of its clean examples.
//! gitleaks' negative examples are negatives for one rule only — many are another rule's
//! secret (Cloudflare's three key kinds are each other's negatives) or what its generic rule
//! rightly flags — so the table also shows, without a bound, how many Mneme refuses for any
//! reason.
//! `cargo test -p mneme-secrets --test gitleaks_examples -- --nocapture` prints the per-rule
//! table that `docs/team-memory.md` quotes.

use mneme_secrets::gitleaks::gitleaks;
use mneme_secrets::{rule_ids, scan, scan_claude_code, OMITTED_RULES};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

struct Example {
    rule: String,
    text: String,
    path: Option<String>,
    secret: bool,
}

fn examples() -> Vec<Example> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../testdata/secrets/gitleaks-examples.jsonl");
    let text = std::fs::read_to_string(path).expect("gitleaks' examples are vendored under testdata/secrets");
    text.lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("one JSON object per line");
            Example {
                rule: v["rule"].as_str().unwrap().to_string(),
                text: v["text"].as_str().unwrap().to_string(),
                path: v["path"].as_str().map(String::from),
                secret: match v["expect"].as_str().unwrap() {
                    "secret" => true,
                    "clean" => false,
                    other => panic!("unknown expectation {other}"),
                },
            }
        })
        .collect()
}

#[derive(Default)]
struct Tally {
    secrets: usize,
    caught_by_rule: usize,
    caught_by_mneme: usize,
    clean: usize,
    flagged_by_rule: usize,
    /// Clean examples for which Mneme's verdict includes this very rule.
    flagged_as_this_rule: usize,
    /// The same, less those the newest Claude Code also refuses as this rule.
    flagged_as_this_rule_alone: usize,
    /// Clean examples Mneme refuses for any reason (often rightly: a Cloudflare global key is a
    /// negative example for the Cloudflare API-key rule and a secret for its own rule).
    flagged_by_mneme: usize,
    flagged_by_claude_code: usize,
}

fn pct(n: usize, d: usize) -> String {
    if d == 0 {
        "–".into()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / d as f64)
    }
}

#[test]
fn every_rule_has_examples_and_omissions_are_path_bound() {
    let all = examples();
    let with_secrets: BTreeSet<&str> = all.iter().filter(|e| e.secret).map(|e| e.rule.as_str()).collect();
    for r in gitleaks().rules() {
        if r.id != "pkcs12-file" {
            assert!(with_secrets.contains(r.id.as_str()), "no secret example for gitleaks rule {}", r.id);
        }
    }
    let covered: BTreeSet<&str> = rule_ids().collect();
    for r in gitleaks().rules() {
        let omitted = OMITTED_RULES.iter().any(|(id, _)| *id == r.id);
        assert_eq!(covered.contains(r.id.as_str()), !omitted, "{}", r.id);
    }
    assert!(OMITTED_RULES.iter().all(|(_, why)| !why.trim().is_empty()));
}

#[test]
fn every_rule_catches_its_secrets_and_almost_no_clean_text() {
    let all = examples();
    let g = gitleaks();
    let omitted: BTreeSet<&str> = OMITTED_RULES.iter().map(|(id, _)| *id).collect();
    let mut by_rule: BTreeMap<&str, Tally> = BTreeMap::new();
    // The last column: the newest release's own scanner.
    let newest = mneme_core::versions::newest().secret_scanner;
    for e in &all {
        let t = by_rule.entry(e.rule.as_str()).or_default();
        let by_rule_alone = g.rule_fires(&e.rule, &e.text, e.path.as_deref());
        let findings = scan(&e.text);
        let by_mneme = !findings.is_empty();
        if e.secret {
            t.secrets += 1;
            t.caught_by_rule += usize::from(by_rule_alone);
            t.caught_by_mneme += usize::from(by_mneme);
        } else {
            t.clean += 1;
            t.flagged_by_rule += usize::from(by_rule_alone);
            let as_this_rule = findings.iter().any(|f| f.rule_id == e.rule);
            t.flagged_as_this_rule += usize::from(as_this_rule);
            t.flagged_by_mneme += usize::from(by_mneme);
            let claude_code = scan_claude_code(&e.text, newest);
            t.flagged_by_claude_code += usize::from(!claude_code.is_empty());
            // Mneme refuses what the newest Claude Code refuses (real tokens gitleaks spells
            // more narrowly); that is not noise of Mneme's own.
            t.flagged_as_this_rule_alone += usize::from(as_this_rule && !claude_code.iter().any(|f| f.rule_id == e.rule));
        }
    }

    println!("| rule | secret examples | caught by the rule | caught by Mneme | clean examples | flagged by the rule | flagged by Mneme as this rule | flagged by Mneme, any rule | flagged by Claude Code |");
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut total = Tally::default();
    let mut failures = Vec::new();
    for (rule, t) in &by_rule {
        let note = if omitted.contains(rule) { " (file-bound)" } else { "" };
        println!(
            "| {rule}{note} | {} | {} | {} | {} | {} | {} | {} | {} |",
            t.secrets,
            t.caught_by_rule,
            t.caught_by_mneme,
            t.clean,
            t.flagged_by_rule,
            t.flagged_as_this_rule,
            t.flagged_by_mneme,
            t.flagged_by_claude_code
        );
        if t.caught_by_rule != t.secrets {
            failures.push(format!("{rule}: the rule caught {} of {} secret examples", t.caught_by_rule, t.secrets));
        }
        if t.flagged_by_rule * 50 > t.clean {
            failures.push(format!("{rule}: the rule flagged {} of {} clean examples", t.flagged_by_rule, t.clean));
        }
        if t.flagged_as_this_rule_alone * 50 > t.clean {
            failures.push(format!(
                "{rule}: Mneme refused {} of {} clean examples as this rule where Claude Code does not",
                t.flagged_as_this_rule_alone, t.clean
            ));
        }
        if !omitted.contains(rule) && t.caught_by_mneme != t.secrets {
            failures.push(format!("{rule}: Mneme refused {} of {} secret examples", t.caught_by_mneme, t.secrets));
        }
        total.secrets += t.secrets;
        total.caught_by_rule += t.caught_by_rule;
        total.caught_by_mneme += t.caught_by_mneme;
        total.clean += t.clean;
        total.flagged_by_rule += t.flagged_by_rule;
        total.flagged_as_this_rule += t.flagged_as_this_rule;
        total.flagged_by_mneme += t.flagged_by_mneme;
        total.flagged_by_claude_code += t.flagged_by_claude_code;
    }
    println!(
        "| **all {} rules** | {} | {} ({}) | {} ({}) | {} | {} ({}) | {} ({}) | {} ({}) | {} ({}) |",
        by_rule.len(),
        total.secrets,
        total.caught_by_rule,
        pct(total.caught_by_rule, total.secrets),
        total.caught_by_mneme,
        pct(total.caught_by_mneme, total.secrets),
        total.clean,
        total.flagged_by_rule,
        pct(total.flagged_by_rule, total.clean),
        total.flagged_as_this_rule,
        pct(total.flagged_as_this_rule, total.clean),
        total.flagged_by_mneme,
        pct(total.flagged_by_mneme, total.clean),
        total.flagged_by_claude_code,
        pct(total.flagged_by_claude_code, total.clean),
    );
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    assert!(total.flagged_as_this_rule * 50 <= total.clean, "{} of {} clean examples refused as their own rule", total.flagged_as_this_rule, total.clean);
}

#[test]
#[ignore = "diagnostics: prints every clean example Mneme refuses, with the rules that fired"]
fn print_refused_clean_examples() {
    for e in examples().iter().filter(|e| !e.secret) {
        let hits = scan(&e.text);
        if !hits.is_empty() {
            let ids: Vec<&str> = hits.iter().map(|f| f.rule_id).collect();
            println!("{} <- {:?}: {:?}", e.rule, ids, e.text.chars().take(160).collect::<String>());
        }
    }
}
