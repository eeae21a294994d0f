//! What each key of a settings file must hold for Claude Code to use the file at all.
//!
//! Claude Code checks every settings file against its schema and ignores the whole file when
//! one value breaks it: `"cleanupPeriodDays": 0` or `"model": 5` beside `"autoMemoryEnabled":
//! false` leaves auto memory on. The rules change from release to release (keys are added,
//! bounds move), so they are not written here but taken out of the releases themselves by
//! `scripts/settings-schema.sh` into `data/settings-schema.json`, each with the releases it was
//! read from. A key is checked for a release only where that holds: between two releases read
//! with the same rule, or past the newest one read (never before the oldest). Keys releases
//! mend or drop before their check ([`REPAIRED_BEFORE_THE_CHECK`]) and top-level nulls are never
//! held against a file. Inside an object the fields it declares are checked the same way
//! (`"sandbox": {"enabled": "yes"}`, a `spinnerVerbs` without its `verbs`), as are the values of
//! a record keyed by any string (`env`, `skillOverrides`) and the items of an array; a `null`
//! there counts, since releases drop only top-level nulls. Keys a release spreads into its schema
//! (`...{voiceEnabled: …}`, the feature modules' `shape()`s) are read through the spread where
//! its keys are certain, and left unchecked where they hang on a run-time condition. Keys whose
//! schema the script could not read (unions, code that builds the schema) and the parts of a
//! rule marked `more` (patterns, fields it could not read) are not checked, so Mneme may miss a
//! file Claude Code rejects, but never rejects one Claude Code uses.

use super::shapes::Breach;
use mneme_core::versions::ClaudeVersion;
use serde::Deserialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::sync::LazyLock;

/// The rules read out of Claude Code releases, with the releases they hold for.
const DATA: &str = include_str!("../../data/settings-schema.json");

/// What a value must be, in the notation of `data/extract-settings-schema.mjs`.
/// One key's rule; read from the data file, and from the extractor's output in tests.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Rule {
    #[serde(rename = "type")]
    kind: Kind,
    #[serde(default)]
    nullable: bool,
    #[serde(default)]
    values: Option<Vec<String>>,
    #[serde(default)]
    int: bool,
    #[serde(default)]
    gt: Option<f64>,
    #[serde(default)]
    gte: Option<f64>,
    #[serde(default)]
    lt: Option<f64>,
    #[serde(default)]
    lte: Option<f64>,
    #[serde(default)]
    min_length: Option<usize>,
    #[serde(default)]
    max_length: Option<usize>,
    #[serde(default)]
    items: Option<Box<Rule>>,
    /// An object's declared fields; fields not named here pass whatever they hold.
    #[serde(default)]
    fields: BTreeMap<String, Rule>,
    /// Fields an object must have.
    #[serde(default)]
    required: Vec<String>,
    /// A record's rule for every value.
    #[serde(default)]
    each: Option<Box<Rule>>,
    /// The schema checks more than this rule says; not reproduced.
    #[serde(default)]
    #[allow(dead_code)]
    more: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Kind {
    Boolean,
    String,
    Number,
    Array,
    Object,
    Enum,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Run {
    from: String,
    to: String,
    rule: Rule,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Data {
    releases: Vec<String>,
    keys: BTreeMap<String, Vec<Run>>,
}

/// Each key's rules as `(from, to, rule)`, and the oldest and newest releases read.
struct Table {
    keys: BTreeMap<String, Vec<(ClaudeVersion, ClaudeVersion, Rule)>>,
    oldest: ClaudeVersion,
    newest: ClaudeVersion,
}

static TABLE: LazyLock<Table> = LazyLock::new(|| {
    let data: Data = serde_json::from_str(DATA)
        .expect("data/settings-schema.json is what scripts/settings-schema.sh writes");
    let version = |s: &str| {
        s.parse::<ClaudeVersion>()
            .expect("data/settings-schema.json holds X.Y.Z releases")
    };
    let read: Vec<ClaudeVersion> = data.releases.iter().map(|r| version(r)).collect();
    let keys = data
        .keys
        .into_iter()
        .map(|(key, runs)| {
            (
                key,
                runs.into_iter()
                    .map(|r| (version(&r.from), version(&r.to), r.rule))
                    .collect(),
            )
        })
        .collect();
    Table {
        keys,
        oldest: read
            .iter()
            .copied()
            .min()
            .expect("data/settings-schema.json names the releases it read"),
        newest: read
            .iter()
            .copied()
            .max()
            .expect("data/settings-schema.json names the releases it read"),
    }
});

/// The rule `release` holds `key` to, when the releases read say it for certain.
pub fn rule(key: &str, release: ClaudeVersion) -> Option<&'static Rule> {
    let table = &*TABLE;
    if REPAIRED_BEFORE_THE_CHECK.contains(&key) {
        return None;
    }
    // Before the oldest release read nothing is known: 2.1.80 takes `cleanupPeriodDays: 0`,
    // which 2.1.100 refuses, and passes keys it does not know yet whatever they hold.
    if release < table.oldest {
        return None;
    }
    table.keys.get(key)?.iter().find_map(|(from, to, rule)| {
        let within = *from <= release && release <= *to;
        // Past the newest release read, the newest rules.
        let newer = *to == table.newest && release > table.newest;
        (within || newer).then_some(rule)
    })
}

/// Keys some releases mend or drop before the schema sees the file, so that a value the schema
/// would refuse does not make them ignore it: the keys honoured only from managed settings
/// (`managedMcpServers`, `isolation`, `attributionProjectPolicy`, `deniedModels`,
/// `availableModelsMatch`, `remoteControl`, `modelPicker`, `modelPricing`, dropped with a warning
/// elsewhere), the MCP server lists (a list that is not an array is dropped; a bare name in
/// `enabledMcpjsonServers`/`disabledMcpjsonServers` becomes a list of one), the marketplace keys
/// (`allowedMarketplaces` dropped beside `strictKnownMarketplaces`, a non-object
/// `extraKnownMarketplaces` dropped) and `crossSessionInbound`. Which release mends which varies
/// and the mending is code, not schema, so these keys are never held against a file. Found by
/// running 2.1.122, 2.1.160, 2.1.197, 2.1.259, 2.1.283, 2.1.316 and 2.1.332 on such files.
pub const REPAIRED_BEFORE_THE_CHECK: &[&str] = &[
    "managedMcpServers",
    "isolation",
    "attributionProjectPolicy",
    "deniedModels",
    "availableModelsMatch",
    "remoteControl",
    "modelPicker",
    "modelPricing",
    "allowedMcpServers",
    "deniedMcpServers",
    "enabledMcpjsonServers",
    "disabledMcpjsonServers",
    "allowedMarketplaces",
    "strictKnownMarketplaces",
    "extraKnownMarketplaces",
    "crossSessionInbound",
];

/// A value that makes a release ignore its settings file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The top-level key that holds the value.
    pub key: String,
    /// Where the value is: the key, or a path inside it (`hooks.Stop[0].hooks`).
    pub path: String,
    /// What the rule wants, in words ("a whole number above 0").
    pub expected: String,
    /// What the file holds instead ("0", "a string").
    pub found: String,
}

/// Every value of a settings object that breaks the schema of the release `profile`
/// describes, in the file's order.
pub fn violations(map: &Map<String, Value>, profile: &mneme_core::Profile) -> Vec<Violation> {
    let release = profile.release;
    map.iter()
        // A top-level null is dropped before the check by newer releases for many keys (2.1.332
        // for every switch that restricts, 2.1.283 for `enableAllProjectMcpServers`), and which
        // ones moves from release to release: it is never held against a file.
        .filter(|(_, value)| !value.is_null())
        .filter_map(|(key, value)| {
            if let Some(rule) = rule(key, release) {
                if let Some(b) = rule.breach(value, key) {
                    return Some(Violation { key: key.clone(), path: b.path, expected: b.expected, found: b.found });
                }
            }
            // What is checked inside `hooks` and `permissions` holds from the oldest release read.
            if release < TABLE.oldest {
                return None;
            }
            let b = super::shapes::breach(key, value, profile, release <= TABLE.newest)?;
            Some(Violation { key: key.clone(), path: b.path, expected: b.expected, found: b.found })
        })
        .collect()
}

impl Rule {
    /// Where inside `value`, found at `path`, the rule is broken, what is wanted there and
    /// what is there instead.
    fn breach(&self, value: &Value, path: &str) -> Option<Breach> {
        let here = |found: String| Some(Breach { path: path.to_string(), expected: self.describe(), found });
        if value.is_null() && self.nullable {
            return None;
        }
        match (self.kind, value) {
            (Kind::Object, Value::Object(map)) => self.breach_inside(map, path),
            (Kind::Array, Value::Array(items)) => {
                if self.min_length.is_some_and(|m| items.len() < m)
                    || self.max_length.is_some_and(|m| items.len() > m)
                {
                    return here(format!("an array of {} items", items.len()));
                }
                let rule = self.items.as_deref()?;
                items.iter().enumerate().find_map(|(i, item)| rule.breach(item, &format!("{path}[{i}]")))
            }
            _ => self.breach_of_value(value).and_then(here),
        }
    }

    /// The first field of an object that breaks its rule (in the file's order), then the first
    /// required field that is missing.
    fn breach_inside(&self, map: &Map<String, Value>, path: &str) -> Option<Breach> {
        let broken = map.iter().find_map(|(name, value)| {
            let rule = self.fields.get(name).or(self.each.as_deref())?;
            rule.breach(value, &field_path(path, name))
        });
        broken.or_else(|| {
            self.required.iter().filter(|name| !map.contains_key(name.as_str())).find_map(|missing| {
                let rule = self.fields.get(missing)?;
                Some(Breach { path: field_path(path, missing), expected: rule.describe(), found: "missing".into() })
            })
        })
    }

    /// What a single value holds instead ("0", "a string"), when it breaks the rule.
    fn breach_of_value(&self, value: &Value) -> Option<String> {
        let wrong_type = || Some(super::a_json_type(value).to_string());
        match (self.kind, value) {
            (Kind::Boolean, Value::Bool(_)) => None,
            (Kind::String, Value::String(s)) => {
                let len = s.encode_utf16().count();
                if self.min_length.is_some_and(|m| len < m)
                    || self.max_length.is_some_and(|m| len > m)
                {
                    return Some(format!(
                        "{len} character{} long",
                        if len == 1 { "" } else { "s" }
                    ));
                }
                None
            }
            (Kind::Enum, Value::String(s)) => match &self.values {
                Some(values) if !values.contains(s) => Some(shown_string(s)),
                _ => None,
            },
            (Kind::Number, Value::Number(n)) => {
                let x = n.as_f64()?;
                // zod 4's `.int()`: a safe integer (every release read uses zod 4).
                let broken = (self.int && (x.fract() != 0.0 || x.abs() > 9_007_199_254_740_991.0))
                    || self.gt.is_some_and(|b| x <= b)
                    || self.gte.is_some_and(|b| x < b)
                    || self.lt.is_some_and(|b| x >= b)
                    || self.lte.is_some_and(|b| x > b);
                if broken {
                    Some(n.to_string())
                } else {
                    None
                }
            }
            _ => wrong_type(),
        }
    }

    /// What the rule wants, in words.
    fn describe(&self) -> String {
        let mut text = match self.kind {
            Kind::Boolean => "true or false".to_string(),
            Kind::Object => "an object".to_string(),
            Kind::String => match (self.min_length, self.max_length) {
                (Some(lo), Some(hi)) if lo == hi => format!("a string of {lo} characters"),
                (Some(lo), Some(hi)) => format!("a string of {lo} to {hi} characters"),
                (Some(lo), None) => format!("a string of at least {lo} characters"),
                (None, Some(hi)) => format!("a string of at most {hi} characters"),
                (None, None) => "a string".to_string(),
            },
            Kind::Enum => {
                let values = self.values.as_deref().unwrap_or_default();
                let mut listed: Vec<String> =
                    values.iter().take(8).map(|v| shown_string(v)).collect();
                if values.len() > 8 {
                    listed.push("…".into());
                }
                format!("one of {}", listed.join(", "))
            }
            Kind::Number => {
                let mut bounds = Vec::new();
                if let Some(b) = self.gt {
                    bounds.push(format!("above {}", number(b)));
                }
                if let Some(b) = self.gte {
                    bounds.push(format!("at least {}", number(b)));
                }
                if let Some(b) = self.lt {
                    bounds.push(format!("below {}", number(b)));
                }
                if let Some(b) = self.lte {
                    bounds.push(format!("at most {}", number(b)));
                }
                let noun = if self.int {
                    "a whole number"
                } else {
                    "a number"
                };
                if bounds.is_empty() {
                    noun.to_string()
                } else {
                    format!("{noun} {}", bounds.join(" and "))
                }
            }
            Kind::Array => {
                let of = match self.items.as_deref().map(|r| r.kind) {
                    Some(Kind::String) => " of strings",
                    Some(Kind::Boolean) => " of true/false values",
                    Some(Kind::Number) => " of numbers",
                    Some(Kind::Object) => " of objects",
                    Some(Kind::Enum) | Some(Kind::Array) => " of allowed values",
                    None => "",
                };
                match (self.min_length, self.max_length) {
                    (Some(lo), None) => format!("an array{of} with at least {lo} items"),
                    (None, Some(hi)) => format!("an array{of} with at most {hi} items"),
                    (Some(lo), Some(hi)) => format!("an array{of} with {lo} to {hi} items"),
                    (None, None) => format!("an array{of}"),
                }
            }
        };
        if self.nullable {
            text.push_str(" (or null)");
        }
        text
    }
}

/// The path to field `name` inside the value at `path`: `sandbox.enabled`, or
/// `skillOverrides["my skill"]` for a name that is not a plain word.
fn field_path(path: &str, name: &str) -> String {
    // Anything else (a hostile file's control characters, a name of thousands of characters)
    // is shown escaped and clipped.
    let plain = (1..=40).contains(&name.len()) && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-');
    if plain {
        format!("{path}.{name}")
    } else {
        format!("{path}[{}]", shown_string(name))
    }
}

/// A number as JavaScript prints it: `1`, not `1.0`.
fn number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        x.to_string()
    }
}

/// A string value quoted, its first 40 characters.
/// A string from a settings file as a message shows it: quoted, escaped (a hostile project
/// file's control characters never reach a terminal) and clipped to 40 characters.
pub(super) fn shown_string(s: &str) -> String {
    let clipped: String = s.chars().take(40).collect();
    let more = if clipped.len() < s.len() { "…" } else { "" };
    format!("{:?}", format!("{clipped}{more}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(s: &str) -> ClaudeVersion {
        s.parse().unwrap()
    }

    fn at(release: ClaudeVersion) -> mneme_core::Profile {
        mneme_core::versions::profile_for(release).profile
    }

    fn map(value: Value) -> Map<String, Value> {
        value.as_object().unwrap().clone()
    }

    #[test]
    fn a_break_inside_hooks_names_its_place_and_holds_from_the_oldest_release_read() {
        let file = map(json!({"autoMemoryEnabled": false, "hooks": {"PreToolUse": [{"matcher": "Bash", "command": "x"}]}}));
        let found = violations(&file, &at(TABLE.newest));
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!((found[0].key.as_str(), found[0].path.as_str()), ("hooks", "hooks.PreToolUse[0]"));
        assert!(violations(&file, &at(TABLE.oldest)).len() == 1);
        assert!(violations(&file, &at(v("2.1.80"))).is_empty(), "nothing is known before the oldest release read");
    }

    #[test]
    fn the_data_file_reads_and_every_rule_describes_itself() {
        for runs in TABLE.keys.values() {
            for (from, to, rule) in runs {
                assert!(from <= to);
                assert!(!rule.describe().is_empty());
            }
        }
        assert!(TABLE.oldest < TABLE.newest);
    }

    #[test]
    fn a_number_out_of_bounds_or_of_the_wrong_type_breaks_the_schema() {
        let newest = TABLE.newest;
        let found = violations(
            &map(json!({"autoMemoryEnabled": false, "cleanupPeriodDays": 0})),
            &at(newest),
        );
        assert_eq!(
            found,
            vec![Violation {
                key: "cleanupPeriodDays".into(),
                path: "cleanupPeriodDays".into(),
                expected: "a whole number above 0".into(),
                found: "0".into()
            }]
        );
        let found = violations(
            &map(json!({"cleanupPeriodDays": 1.5, "model": 5, "claudeMdExcludes": ["a", 1]})),
            &at(newest),
        );
        let by_key: Vec<(&str, &str)> = found
            .iter()
            .map(|f| (f.key.as_str(), f.found.as_str()))
            .collect();
        assert_eq!(
            by_key,
            // In the file's order.
            vec![
                ("cleanupPeriodDays", "1.5"),
                ("model", "a number"),
                ("claudeMdExcludes", "a number")
            ]
        );
        assert!(violations(
            &map(json!({"cleanupPeriodDays": 30, "model": "opus", "claudeMdExcludes": ["a"]})),
            &at(newest)
        )
        .is_empty());
    }

    #[test]
    fn keys_the_schema_does_not_know_are_left_alone() {
        let newest = TABLE.newest;
        assert!(violations(
            &map(json!({"notASettingOfClaudeCode": 5, "x-team": {"a": 1}})),
            &at(newest)
        )
        .is_empty());
        // A key read for newer releases only is not checked for an older one.
        let (key, first) = TABLE
            .keys
            .iter()
            .find_map(|(k, runs)| {
                runs.first()
                    .filter(|(from, _, _)| *from > TABLE.oldest && !REPAIRED_BEFORE_THE_CHECK.contains(&k.as_str()))
                    .map(|(from, _, _)| (k.clone(), *from))
            })
            .expect("some key appears after the oldest release read");
        let value = match rule(&key, first).unwrap().kind {
            Kind::Boolean => json!("not a boolean"),
            _ => json!(true),
        };
        assert_eq!(
            violations(&map(json!({ key.clone(): value })), &at(first)).len(),
            1,
            "{key} at {first}"
        );
        assert!(violations(&map(json!({ key: value })), &at(TABLE.oldest)).is_empty());
    }

    #[test]
    fn a_release_past_the_newest_read_keeps_the_newest_rules_and_gaps_stay_unchecked() {
        let far = v("9.9.9");
        assert_eq!(
            rule("cleanupPeriodDays", far),
            rule("cleanupPeriodDays", TABLE.newest)
        );
        assert!(rule("cleanupPeriodDays", far).is_some());
        // Between two releases read with different rules for a key, the key is not checked.
        for (key, runs) in &TABLE.keys {
            for pair in runs.windows(2) {
                let (_, to, _) = &pair[0];
                let (from, _, _) = &pair[1];
                if let Some(between) = next_patch(*to).filter(|b| b < from) {
                    assert_eq!(rule(key, between), None, "{key} between {to} and {from}");
                }
            }
        }
    }

    fn next_patch(v: ClaudeVersion) -> Option<ClaudeVersion> {
        format!("{}", v).rsplit_once('.').and_then(|(head, p)| {
            format!("{head}.{}", p.parse::<u32>().ok()? + 1)
                .parse()
                .ok()
        })
    }

    /// What Claude Code mends or drops before its check is not held against a file: a
    /// top-level null, the keys of [`REPAIRED_BEFORE_THE_CHECK`]; and nothing is known of the
    /// releases older than the oldest read.
    #[test]
    fn inside_an_object_the_declared_fields_a_record_s_values_and_an_array_s_items_are_checked() {
        // Each of these confirmed on 2.1.100, 2.1.197 and 2.1.332: the file is ignored.
        let newest = at(TABLE.newest);
        let one = |value: Value| {
            let found = violations(&map(value), &newest);
            assert_eq!(found.len(), 1, "{found:?}");
            let f = &found[0];
            (f.path.clone(), f.expected.clone(), f.found.clone())
        };
        assert_eq!(one(json!({"sandbox": {"enabled": "yes"}})), ("sandbox.enabled".into(), "true or false".into(), "a string".into()));
        // A null inside an object is a value like any other (only top-level nulls are dropped).
        assert_eq!(one(json!({"voice": {"mode": null}})).0, "voice.mode");
        assert_eq!(
            one(json!({"spinnerVerbs": {"mode": "append"}})),
            ("spinnerVerbs.verbs".into(), "an array of strings".into(), "missing".into())
        );
        assert_eq!(one(json!({"spinnerVerbs": {"mode": "append", "verbs": ["a", 1]}})).0, "spinnerVerbs.verbs[1]");
        assert_eq!(one(json!({"sshConfigs": [{"id": "a", "name": "b", "sshHost": "h", "sshPort": 22.5}]})).0, "sshConfigs[0].sshPort");
        let (path, expected, found) = one(json!({"skillOverrides": {"my skill": "sometimes"}}));
        assert_eq!((path.as_str(), found.as_str()), ("skillOverrides[\"my skill\"]", "\"sometimes\""));
        assert!(expected.starts_with("one of \"on\""), "{expected}");
        let hostile = format!("x\u{1b}[2J{}", "y".repeat(100));
        let path = one(json!({"skillOverrides": {hostile: "sometimes"}})).0;
        assert!(path.starts_with("skillOverrides[\"x\\u{1b}[2J") && path.len() < 70, "{path}");
        // Fields an object does not declare, and values the release turns into strings first
        // (`env`), pass.
        let fine = json!({"sandbox": {"enabled": true, "notAField": 5}, "env": {"A": 5, "B": null}, "spinnerVerbs": {"mode": "replace", "verbs": []}});
        assert!(violations(&map(fine), &newest).is_empty());
    }

    #[test]
    fn what_2_1_337_adds_is_checked_from_2_1_337_only() {
        // 2.1.337 (the first release after 2.1.332) adds the top-level switch
        // `disableLocalMcpServers` and `sandbox.allowManagedExcludedCommandsOnly`; both make it
        // ignore a file where they are not true or false (run with `mneme verify`), and 2.1.332
        // passes them whatever they hold.
        let (before, added) = (at(v("2.1.332")), at(v("2.1.337")));
        for file in [json!({"disableLocalMcpServers": "yes"}), json!({"sandbox": {"allowManagedExcludedCommandsOnly": "yes"}})] {
            let found = violations(&map(file.clone()), &added);
            assert_eq!(found.len(), 1, "{file}: {found:?}");
            assert_eq!((found[0].expected.as_str(), found[0].found.as_str()), ("true or false", "a string"), "{file}");
            assert!(violations(&map(file.clone()), &before).is_empty(), "{file}");
        }
        let found = violations(&map(json!({"sandbox": {"allowManagedExcludedCommandsOnly": 1}})), &added);
        assert_eq!(found.first().map(|f| f.path.as_str()), Some("sandbox.allowManagedExcludedCommandsOnly"));
        assert!(violations(&map(json!({"disableLocalMcpServers": true, "sandbox": {"allowManagedExcludedCommandsOnly": false}})), &added).is_empty());
        // Its hook types are 2.1.332's (read from its schema), so a type outside them costs the
        // file there too, as it does when run; past the newest release read it would not be held.
        let unknown_type = map(json!({"hooks": {"PreToolUse": [{"hooks": [{"type": "cmd", "command": "x"}]}]}}));
        assert_eq!(violations(&unknown_type, &added).len(), 1);
    }

    #[test]
    fn keys_a_release_spreads_in_from_its_feature_modules_are_checked_where_it_has_them() {
        // The schema gets these by a spread: inline (`...{voiceEnabled: …}`, 2.1.100) or from the
        // feature modules' `shape()`s (2.1.113 on). A wrong value there makes each matrix release
        // that has the key ignore the file (scripts/settings-sweep.py --scalars, run on the
        // matrix); a right one does not.
        let breaks = |file: Value, release: &str| {
            let found = violations(&map(file.clone()), &at(v(release)));
            assert!(found.len() <= 1, "{file} at {release}: {found:?}");
            found.into_iter().next().map(|f| (f.path, f.expected, f.found))
        };
        for release in ["2.1.100", "2.1.113", "2.1.160", "2.1.197", "2.1.316", "2.1.332", "2.1.337"] {
            assert_eq!(
                breaks(json!({"voiceEnabled": "yes"}), release),
                Some(("voiceEnabled".into(), "true or false".into(), "a string".into())),
                "{release}"
            );
            let (_, expected, found) = breaks(json!({"defaultView": "table"}), release).expect(release);
            assert_eq!((expected.as_str(), found.as_str()), ("one of \"chat\", \"transcript\"", "\"table\""), "{release}");
            assert_eq!(breaks(json!({"disableDeepLinkRegistration": true}), release).map(|b| b.0), Some("disableDeepLinkRegistration".into()));
            assert_eq!(breaks(json!({"skipAutoPermissionPrompt": 1}), release).map(|b| b.0), Some("skipAutoPermissionPrompt".into()));
            // Inside the spread-in object, its fields are held to their rules too.
            assert_eq!(breaks(json!({"autoMode": {"allow": "git push"}}), release).map(|b| b.0), Some("autoMode.allow".into()));
            assert_eq!(breaks(json!({"autoMode": {"soft_deny": ["a", 1]}}), release).map(|b| b.0), Some("autoMode.soft_deny[1]".into()));
            let right = json!({"voiceEnabled": true, "defaultView": "transcript", "disableDeepLinkRegistration": "disable",
                               "skipAutoPermissionPrompt": false, "useAutoModeDuringPlan": true, "autoMode": {"allow": ["a"], "environment": []}});
            assert!(violations(&map(right), &at(v(release))).is_empty(), "{release}");
        }
        // Keys a module added later are checked from the releases that have them: before, the
        // release does not know them and passes whatever they hold.
        assert_eq!(breaks(json!({"axScreenReader": "yes"}), "2.1.160"), None);
        assert_eq!(breaks(json!({"axScreenReader": "yes"}), "2.1.197").map(|b| b.0), Some("axScreenReader".into()));
        assert_eq!(breaks(json!({"disableDirectMcpSkills": 5}), "2.1.316"), None);
        assert_eq!(breaks(json!({"disableDirectMcpSkills": 5}), "2.1.332").map(|b| b.0), Some("disableDirectMcpSkills".into()));
        assert_eq!(breaks(json!({"autoMode": {"hard_deny": 5}}), "2.1.122"), None);
        assert_eq!(breaks(json!({"autoMode": {"hard_deny": 5}}), "2.1.160").map(|b| b.0), Some("autoMode.hard_deny".into()));
        // A key spread in only when an environment variable is set (`xaaIdp`, with
        // CLAUDE_CODE_ENABLE_XAA) may or may not be in the schema, so it is never checked.
        for release in ["2.1.100", "2.1.197", "2.1.337"] {
            assert_eq!(rule("xaaIdp", v(release)), None, "{release}");
        }
    }

    #[test]
    fn a_key_behind_a_name_the_bundle_defines_elsewhere_too_is_left_unchecked() {
        // 2.1.330 writes these two as calls of functions whose minified names other code
        // reuses nearby for other schemas (a transcript entry, a model catalogue).
        let release = at(v("2.1.330"));
        for key in ["autoCompactWindow", "sshHostCommands"] {
            assert_eq!(rule(key, release.release), None, "{key}");
        }
        assert!(violations(&map(json!({"autoCompactWindow": 200000, "sshHostCommands": []})), &release).is_empty());
    }

    #[test]
    fn what_claude_code_mends_first_and_releases_not_read_are_left_alone() {
        let newest = TABLE.newest;
        assert!(violations(&map(json!({"model": null, "cleanupPeriodDays": null})), &at(newest)).is_empty());
        assert!(violations(&map(json!({"allowedMcpServers": 5, "enabledMcpjsonServers": "one", "modelPicker": 5})), &at(newest)).is_empty());
        let before = v("2.1.80");
        assert!(before < TABLE.oldest);
        assert!(violations(&map(json!({"cleanupPeriodDays": 0, "defaultShell": "zsh"})), &at(before)).is_empty());
        // zod 4's `.int()` wants a safe integer.
        let found = violations(&map(json!({"cleanupPeriodDays": 1e17})), &at(newest));
        assert_eq!(found.len(), 1, "{found:?}");
        assert!(violations(&map(json!({"cleanupPeriodDays": 9_007_199_254_740_991_u64})), &at(newest)).is_empty());
    }

    #[test]
    fn descriptions_and_findings_read_as_sentences() {
        let rule = Rule {
            kind: Kind::Number,
            nullable: false,
            values: None,
            int: false,
            gt: None,
            gte: Some(0.0),
            lt: None,
            lte: Some(1.0),
            min_length: None,
            max_length: None,
            items: None,
            fields: BTreeMap::new(),
            required: Vec::new(),
            each: None,
            more: false,
        };
        let found = |rule: &Rule, value: Value| rule.breach(&value, "k").map(|b| b.found);
        assert_eq!(rule.describe(), "a number at least 0 and at most 1");
        assert_eq!(found(&rule, json!(2)), Some("2".into()));
        assert_eq!(found(&rule, json!("2")), Some("a string".into()));
        let choice = Rule {
            kind: Kind::Enum,
            values: Some(vec!["a".into(), "b".into()]),
            nullable: true,
            ..rule.clone()
        };
        assert_eq!(choice.describe(), "one of \"a\", \"b\" (or null)");
        assert_eq!(found(&choice, json!("c")), Some("\"c\"".into()));
        assert_eq!(found(&choice, Value::Null), None);
        let text = Rule {
            kind: Kind::String,
            min_length: Some(2),
            gte: None,
            lte: None,
            ..rule
        };
        // Lengths count UTF-16 units, as JavaScript's do.
        assert_eq!(found(&text, json!("😀")), None);
        assert_eq!(found(&text, json!("é")), Some("1 character long".into()));
    }
}
