//! Mneme's frontmatter reading against the YAML reading of real Claude Code releases, on 2,700
//! frontmatter blocks (`tests/data/js_yaml/cases.json`: every block under testdata/, awkward
//! ones picked by hand, and seeded random ones). Claude Code hands a block to the Bun it is
//! built on (`Bun.YAML.parse`), retries once with awkward values quoted, and otherwise reads no
//! frontmatter; both Bun's parser and the retry changed across releases. The expected values
//! (`oracle_*.json`) were made by `oracle.js` under each Bun a release embeds; regenerate with
//! the commands in that file's header.

use mneme_core::frontmatter;
use mneme_core::text::js_number;
use mneme_core::versions::behaviours;
use serde_json::{Map, Value as Json, json};
use std::path::Path;
use yaml_serde::Value;

fn data(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/js_yaml").join(name);
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// A YAML value as JavaScript holds it, in the oracle's encoding: numbers as the text
/// `String(n)` prints, keys as JavaScript turns them into property names.
fn as_js(v: &Value) -> Json {
    match v {
        Value::Null => Json::Null,
        Value::Bool(b) => Json::Bool(*b),
        Value::Number(n) => json!({ "$num": js_number(n.as_f64().unwrap_or(f64::NAN)) }),
        Value::String(s) => Json::String(s.clone()),
        Value::Sequence(items) => Json::Array(items.iter().map(as_js).collect()),
        Value::Mapping(m) => {
            let mut out = Map::new();
            for (k, v) in m {
                out.insert(js_key(k), as_js(v));
            }
            Json::Object(out)
        }
        Value::Tagged(t) => as_js(&t.value),
    }
}

fn js_key(k: &Value) -> String {
    match k {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => js_number(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => s.clone(),
        Value::Sequence(items) => items.iter().map(js_key).collect::<Vec<_>>().join(","),
        Value::Mapping(_) => "[object Object]".into(),
        Value::Tagged(t) => js_key(&t.value),
    }
}

/// Objects compared without their key order (JavaScript puts integer-like keys first).
fn sorted(v: Json) -> Json {
    match v {
        Json::Object(m) => {
            let mut pairs: Vec<(String, Json)> = m.into_iter().map(|(k, v)| (k, sorted(v))).collect();
            pairs.sort_by(|a, b| a.0.cmp(&b.0));
            Json::Object(pairs.into_iter().collect())
        }
        Json::Array(items) => Json::Array(items.into_iter().map(sorted).collect()),
        other => other,
    }
}

/// The blocks of `cases.json` that Mneme still reads differently from a release, as indices
/// per oracle file (`known_differences.json`): Bun 1.3's parser has quirks on odd inputs that
/// are not modelled (a lone `!` as text, a `>` with no block after it, `{x: a: b}` as a nested
/// mapping, …). The list must match exactly: a block that starts to differ fails, and so does
/// one that stops differing until the list is updated (`MNEME_UPDATE_YAML_KNOWN=1`).
/// Real repositories' blocks and the hand-picked ones may not be on it.
fn known(oracle_file: &str) -> Vec<usize> {
    let all: Json = serde_json::from_str(&data("known_differences.json")).unwrap();
    all.get(oracle_file).and_then(Json::as_array).map_or(Vec::new(), |v| v.iter().filter_map(Json::as_u64).map(|i| i as usize).collect())
}

fn check(oracle_file: &str, release: &str) {
    let all: Json = serde_json::from_str(&data("cases.json")).unwrap();
    let cases: Vec<String> = serde_json::from_value(all["cases"].clone()).unwrap();
    let chosen = all["picked"].as_u64().unwrap() as usize;
    let oracle: Json = serde_json::from_str(&data(oracle_file)).unwrap();
    let results = oracle["results"].as_array().unwrap();
    assert_eq!(results.len(), cases.len(), "{oracle_file} is for another cases.json; regenerate it");
    let reader = behaviours(release.parse().unwrap()).frontmatter_reader;
    let mut differ = Vec::new();
    let mut differing = Vec::new();
    for (i, (block, expected)) in cases.iter().zip(results).enumerate() {
        let expected = sorted(expected.get("ok").cloned().unwrap_or_else(|| json!({})));
        let got = sorted(as_js(&Value::Mapping(frontmatter::read_block(block, reader))));
        if got != expected {
            differing.push(i);
            differ.push(format!("#{i} {block:?}\n  Claude Code {release}: {expected}\n  Mneme: {got}"));
        }
    }
    if std::env::var_os("MNEME_UPDATE_YAML_KNOWN").is_some() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/js_yaml/known_differences.json");
        let mut all: Map<String, Json> = serde_json::from_str(&std::fs::read_to_string(&path).unwrap_or_else(|_| "{}".into())).unwrap();
        all.insert(oracle_file.to_string(), json!(differing));
        std::fs::write(&path, serde_json::to_string(&all).unwrap() + "\n").unwrap();
        return;
    }
    let known = known(oracle_file);
    let unexpected: Vec<&String> = differ.iter().zip(&differing).filter(|(_, i)| !known.contains(i) || **i < chosen).map(|(d, _)| d).collect();
    let fixed: Vec<&usize> = known.iter().filter(|i| !differing.contains(i)).collect();
    assert!(known.iter().all(|i| *i >= chosen), "known_differences.json lists a real or hand-picked block for {oracle_file}");
    assert!(
        unexpected.is_empty() && fixed.is_empty(),
        "{} of {} blocks read differently from Claude Code {release} ({reader:?}) and are not listed in known_differences.json; {} listed ones no longer differ ({fixed:?}):\n{}",
        unexpected.len(),
        cases.len(),
        fixed.len(),
        unexpected.iter().take(if std::env::var_os("MNEME_YAML_ALL").is_some() { usize::MAX } else { 30 }).map(|s| s.as_str()).collect::<Vec<_>>().join("\n")
    );
}

#[test]
fn node_releases_read_it_with_their_bundled_yaml() {
    check("oracle_node-2.1.100_quote.json", "2.1.100");
}

#[test]
fn bun_1_3_as_2_1_113_reads_it() {
    check("oracle_bun-1.3.13_quote.json", "2.1.113");
}

#[test]
fn bun_1_3_with_lists_kept_as_2_1_146_reads_it() {
    check("oracle_bun-1.3.14_quote-array.json", "2.1.146");
}

#[test]
fn bun_1_3_with_tabs_untabbed_as_2_1_163_reads_it() {
    check("oracle_bun-1.3.14_quote-array-untab.json", "2.1.163");
}

#[test]
fn bun_1_4_as_2_1_181_and_later_read_it() {
    check("oracle_bun-1.4.0_quote-array-untab.json", "2.1.181");
    check("oracle_bun-1.4.0_quote-array-untab.json", "2.1.332");
}
