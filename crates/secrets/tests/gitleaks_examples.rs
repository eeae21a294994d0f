//! Mneme's verdict on gitleaks' own rule examples (`testdata/secrets/gitleaks-examples.jsonl`,
//! gitleaks v8.30.1): every `secret` example of a rule Mneme covers must be refused, at most 2%
//! of the `clean` examples may be, and every rule Mneme does not cover must be listed in
//! `OMITTED_RULES` with a reason. `cargo test -p mneme-secrets -- --nocapture` prints the table
//! that `docs/team-memory.md` quotes.

use mneme_secrets::{rule_ids, scan, scan_claude_code, OMITTED_RULES};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

struct Example {
    rule: String,
    text: String,
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
    caught: usize,
    clean: usize,
    flagged: usize,
}

fn tally(examples: &[Example], covered: &BTreeSet<&str>, refuses: impl Fn(&str) -> bool) -> BTreeMap<String, Tally> {
    let mut by_rule: BTreeMap<String, Tally> = BTreeMap::new();
    for e in examples {
        let key = if covered.contains(e.rule.as_str()) { e.rule.clone() } else { "(omitted rules)".to_string() };
        let t = by_rule.entry(key).or_default();
        let refused = refuses(&e.text);
        if e.secret {
            t.secrets += 1;
            t.caught += usize::from(refused);
        } else {
            t.clean += 1;
            t.flagged += usize::from(refused);
        }
    }
    by_rule
}

fn pct(n: usize, d: usize) -> String {
    if d == 0 {
        "–".into()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / d as f64)
    }
}

#[test]
fn omitted_rules_are_exactly_the_uncovered_ones() {
    let covered: BTreeSet<&str> = rule_ids().collect();
    let in_file: BTreeSet<String> = examples().into_iter().map(|e| e.rule).collect();
    let uncovered: BTreeSet<&str> = in_file.iter().map(String::as_str).filter(|r| !covered.contains(r)).collect();
    let omitted: BTreeSet<&str> = OMITTED_RULES.iter().map(|(id, _)| *id).collect();
    assert_eq!(omitted.len(), OMITTED_RULES.len(), "OMITTED_RULES lists a rule twice");
    assert_eq!(omitted, uncovered);
    assert!(OMITTED_RULES.iter().all(|(_, why)| !why.trim().is_empty()));
}

#[test]
fn covered_rules_catch_every_secret_and_almost_no_clean_text() {
    let all = examples();
    let covered: BTreeSet<&str> = rule_ids().collect();
    let mneme = tally(&all, &covered, |t| !scan(t).is_empty());
    let claude = tally(&all, &covered, |t| !scan_claude_code(t).is_empty());

    println!("| rule | secret examples | caught | clean examples | flagged (Mneme) | flagged (Claude Code) |");
    println!("|---|---:|---:|---:|---:|---:|");
    let (mut s, mut c, mut k, mut f, mut cf) = (0, 0, 0, 0, 0);
    for (rule, t) in &mneme {
        let cc = &claude[rule];
        println!("| {rule} | {} | {} | {} | {} | {} |", t.secrets, t.caught, t.clean, t.flagged, cc.flagged);
        if rule != "(omitted rules)" {
            s += t.secrets;
            c += t.caught;
            k += t.clean;
            f += t.flagged;
            cf += cc.flagged;
        }
    }
    println!(
        "| **covered rules** | {s} | {c} ({}) | {k} | {f} ({}) | {cf} ({}) |",
        pct(c, s),
        pct(f, k),
        pct(cf, k)
    );
    let omitted = &mneme["(omitted rules)"];
    println!(
        "omitted rules: {} of {} secret examples refused anyway, {} of {} clean examples refused",
        omitted.caught, omitted.secrets, omitted.flagged, omitted.clean
    );

    assert!(s > 0 && k > 0);
    assert_eq!(c, s, "a secret example of a covered rule was not refused");
    assert!(f * 50 <= k, "more than 2% of clean examples of covered rules refused: {f} of {k}");
    // The whole file: omitted rules' clean examples must not be refused either.
    assert!((f + omitted.flagged) * 50 <= k + omitted.clean);
}
