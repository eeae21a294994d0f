//! What Claude Code checks inside `hooks`, `permissions` and the command settings
//! (`statusLine`, `subagentStatusLine`, `fileSuggestion`), the keys whose
//! insides hand-edited settings files break most often: a hook in the old one-level format, a hook
//! without its command, a permission list written as one string. One such break makes Claude
//! Code ignore the whole file, so that a `"autoMemoryEnabled": false` beside it does nothing.
//!
//! The generated table ([`super::schema`]) holds each key's own type only; these rules were
//! read from the schemas of 2.1.100, 2.1.197 and 2.1.332 and confirmed by running 2.1.100,
//! 2.1.113, 2.1.122, 2.1.160, 2.1.197, 2.1.316 and 2.1.332 on files that break each one
//! (`crates/cli/tests/verify.rs` runs the release matrix on them). Only what every one of those
//! releases refuses is checked, and where releases differ, the boundary was bisected over the
//! npm releases and lives in the profile:
//!
//! - From 2.1.257 a broken entry under an event whose hooks guard nothing (`Stop`,
//!   `Notification`, …) no longer costs the file (2.1.252 refuses it; 2.1.253-2.1.256 were
//!   never published); `PreToolUse` and `PermissionRequest` stay strict
//!   (`Profile::hooks_strict_only_where_they_guard`).
//! - An event whose value is not an array (`"Stop": "x"`, `null`) is refused before 2.1.122,
//!   passed from it, and refused again from 2.1.257 under the guarding events unless it is null
//!   (`Profile::hooks_mend_non_array_events`).
//!
//! Left alone: events a release does not know (2.1.100 refuses them, 2.1.113 on drop them),
//! `hooks` that is not an object, the items of `allow`, `deny` and `ask` (entries that are
//! not strings are dropped before the check), and which names `defaultMode` takes (its type is
//! checked). A `null` inside these keys is no empty value:
//! every release read refuses `"allow": null`, `"matcher": null` and `"timeout": null`.

use super::a_json_type;
use super::schema::shown_string;
use mneme_core::Profile;
use serde_json::{Map, Value};

/// The hook events every release read knows (2.1.100's list; later releases add more, which
/// releases that do not know them drop before the check).
const EVENTS: &[&str] = &[
    "PreToolUse",
    "PostToolUse",
    "PostToolUseFailure",
    "Notification",
    "UserPromptSubmit",
    "SessionStart",
    "SessionEnd",
    "Stop",
    "StopFailure",
    "SubagentStart",
    "SubagentStop",
    "PreCompact",
    "PostCompact",
    "PermissionRequest",
    "PermissionDenied",
    "Setup",
    "TeammateIdle",
    "TaskCreated",
    "TaskCompleted",
    "Elicitation",
    "ElicitationResult",
    "ConfigChange",
    "WorktreeCreate",
    "WorktreeRemove",
    "InstructionsLoaded",
    "CwdChanged",
    "FileChanged",
];

/// The events whose hooks guard an action: from 2.1.257 the only ones where a broken entry
/// costs the file (`Profile::hooks_strict_only_where_they_guard`).
const GUARDING_EVENTS: &[&str] = &["PreToolUse", "PermissionRequest"];

/// Every hook `type` some release read accepts (2.1.100: the first four; `mcp_tool` later).
/// Any other refuses the file in all of them.
const HOOK_TYPES: &[&str] = &["command", "prompt", "agent", "http", "mcp_tool"];

/// Where inside a key a value breaks the rules, and how.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Breach {
    /// `hooks.PreToolUse[0].hooks`: the path to the value.
    pub path: String,
    pub expected: String,
    pub found: String,
}

/// The first breach inside `value`, the value of top-level `key`, for the release `profile`
/// describes. `types_known` says whether [`HOOK_TYPES`] is that release's whole list (a release
/// newer than the newest read may have added one).
pub fn breach(key: &str, value: &Value, profile: &Profile, types_known: bool) -> Option<Breach> {
    match (key, value) {
        ("hooks", Value::Object(events)) => hooks(events, profile, types_known),
        ("permissions", Value::Object(p)) => permissions(p),
        // Known to the release: `subagentStatusLine` came in 2.1.105, and a key a release
        // does not know passes whatever it holds.
        (key, Value::Object(line)) if COMMAND_KEYS.contains(&key) && super::schema::rule(key, profile.release).is_some() => command_setting(key, line),
        _ => None,
    }
}

fn wrong(path: String, expected: &str, value: &Value) -> Option<Breach> {
    Some(Breach { path, expected: expected.to_string(), found: a_json_type(value).to_string() })
}

fn hooks(events: &Map<String, Value>, profile: &Profile, types_known: bool) -> Option<Breach> {
    let checked = if profile.hooks_strict_only_where_they_guard { GUARDING_EVENTS } else { EVENTS };
    for (event, matchers) in events {
        if !checked.contains(&event.as_str()) {
            continue;
        }
        let matchers = match matchers {
            Value::Array(matchers) => matchers,
            // Mended from 2.1.122; from 2.1.257 a guarding event's value is refused again
            // unless it is null.
            Value::Null if profile.hooks_mend_non_array_events => continue,
            _ if profile.hooks_mend_non_array_events && !profile.hooks_strict_only_where_they_guard => continue,
            other => return wrong(format!("hooks.{event}"), "an array of matcher entries", other),
        };
        for (i, m) in matchers.iter().enumerate() {
            let at = format!("hooks.{event}[{i}]");
            let Value::Object(m) = m else {
                return wrong(at, "an object with a \"hooks\" list (and an optional \"matcher\")", m);
            };
            if let Some(matcher) = m.get("matcher").filter(|v| !v.is_string()) {
                return wrong(format!("{at}.matcher"), "a string", matcher);
            }
            let list = match m.get("hooks") {
                Some(Value::Array(list)) => list,
                Some(other) => return wrong(format!("{at}.hooks"), "an array of hooks", other),
                None => {
                    return Some(Breach {
                        path: at,
                        expected: "an object with a \"hooks\" list, such as {\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"…\"}]}".into(),
                        found: "an object without \"hooks\" (the old format, with the command beside the matcher)".into(),
                    })
                }
            };
            for (j, hook) in list.iter().enumerate() {
                if let Some(b) = one_hook(format!("{at}.hooks[{j}]"), hook, types_known) {
                    return Some(b);
                }
            }
        }
    }
    None
}

fn one_hook(at: String, hook: &Value, types_known: bool) -> Option<Breach> {
    let Value::Object(hook) = hook else { return wrong(at, "an object with a \"type\"", hook) };
    let kinds = || HOOK_TYPES.iter().map(|t| format!("\"{t}\"")).collect::<Vec<_>>().join(", ");
    let kind = match hook.get("type") {
        Some(Value::String(kind)) => kind,
        Some(other) => return wrong(format!("{at}.type"), &format!("one of {}", kinds()), other),
        None => return Some(Breach { path: at, expected: format!("an object with a \"type\" ({})", kinds()), found: "an object without one".into() }),
    };
    if !HOOK_TYPES.contains(&kind.as_str()) {
        if !types_known {
            return None;
        }
        return Some(Breach { path: format!("{at}.type"), expected: format!("one of {}", kinds()), found: shown_string(kind) });
    }
    if kind != "command" {
        return None;
    }
    match hook.get("command") {
        Some(Value::String(_)) => {}
        Some(other) => return wrong(format!("{at}.command"), "a string", other),
        None => return Some(Breach { path: at, expected: "a command hook with a \"command\" string".into(), found: "one without".into() }),
    }
    match hook.get("timeout") {
        None => None,
        Some(Value::Number(n)) if n.as_f64().is_some_and(|x| x > 0.0) => None,
        Some(Value::Number(n)) => Some(Breach { path: format!("{at}.timeout"), expected: "a number of seconds above 0".into(), found: n.to_string() }),
        Some(other) => wrong(format!("{at}.timeout"), "a number of seconds above 0", other),
    }
}

/// The settings that name a command to run, `{"type": "command", "command": "…"}`: every
/// release that knows them refuses one without the type or the command. (The generated table
/// has their `command`; their `type` is a zod literal the extractor does not read.)
const COMMAND_KEYS: &[&str] = &["statusLine", "subagentStatusLine", "fileSuggestion"];

fn command_setting(key: &str, line: &Map<String, Value>) -> Option<Breach> {
    let whole = |what: &str| Some(Breach { path: key.into(), expected: "{\"type\": \"command\", \"command\": \"…\"}".into(), found: format!("an object without \"{what}\"") });
    match line.get("type") {
        Some(Value::String(t)) if t == "command" => {}
        Some(other) => return wrong_value(format!("{key}.type"), "\"command\"", other),
        None => return whole("type"),
    }
    match line.get("command") {
        Some(Value::String(_)) => None,
        Some(other) => wrong(format!("{key}.command"), "a string", other),
        None => whole("command"),
    }
}

/// Like [`wrong`], naming a string by its value.
fn wrong_value(path: String, expected: &str, value: &Value) -> Option<Breach> {
    match value {
        Value::String(s) => Some(Breach { path, expected: expected.to_string(), found: shown_string(s) }),
        other => wrong(path, expected, other),
    }
}

fn permissions(p: &Map<String, Value>) -> Option<Breach> {
    for list in ["allow", "deny", "ask"] {
        match p.get(list) {
            None | Some(Value::Array(_)) => {}
            Some(other) => return wrong(format!("permissions.{list}"), "an array of permission rules, such as [\"Bash(npm test)\"]", other),
        }
    }
    // Which mode names a release takes moves (aliases, new modes, a list built at run time),
    // so only the type is checked: every release refuses a mode that is not a string.
    if let Some(mode) = p.get("defaultMode").filter(|m| !m.is_string()) {
        return wrong("permissions.defaultMode".into(), "a permission mode, such as \"default\" or \"plan\"", mode);
    }
    match p.get("additionalDirectories") {
        None => None,
        Some(Value::Array(dirs)) => dirs.iter().enumerate().find(|(_, d)| !d.is_string()).and_then(|(i, d)| wrong(format!("permissions.additionalDirectories[{i}]"), "a folder path (a string)", d)),
        Some(other) => wrong("permissions.additionalDirectories".into(), "an array of folder paths", other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn at(release: &str) -> Profile {
        mneme_core::versions::profile_for(release.parse().unwrap()).profile
    }

    fn path_of(key: &str, value: Value) -> Option<String> {
        breach(key, &value, &at("2.1.252"), true).map(|b| b.path)
    }

    #[test]
    fn hooks_in_the_current_format_pass() {
        let ok = json!({
            "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "x", "timeout": 5}]}],
            "Stop": [{"hooks": [{"type": "prompt", "prompt": "y"}, {"type": "command", "command": ""}]}],
            // Releases that do not know an event drop it.
            "NotAnEvent": [{"matcher": "Bash", "command": "x"}],
        });
        assert_eq!(breach("hooks", &ok, &at("2.1.252"), true), None);
        // A release newer than the newest read may know another hook type.
        let newer_type = json!({"PreToolUse": [{"hooks": [{"type": "sdk"}]}]});
        assert!(breach("hooks", &newer_type, &at("2.1.332"), true).is_some());
        assert_eq!(breach("hooks", &newer_type, &at("2.1.332"), false), None);
        assert_eq!(path_of("hooks", json!("not an object")), None);
    }

    #[test]
    fn each_break_every_release_refuses_is_found_where_it_is() {
        let cases = [
            (json!({"PreToolUse": [{"matcher": "Bash", "command": "x"}]}), "hooks.PreToolUse[0]"),
            (json!({"PreToolUse": ["x"]}), "hooks.PreToolUse[0]"),
            (json!({"PreToolUse": [null]}), "hooks.PreToolUse[0]"),
            (json!({"PreToolUse": [{"matcher": 5, "hooks": []}]}), "hooks.PreToolUse[0].matcher"),
            (json!({"PreToolUse": [{"matcher": null, "hooks": []}]}), "hooks.PreToolUse[0].matcher"),
            (json!({"PreToolUse": [{"hooks": "x"}]}), "hooks.PreToolUse[0].hooks"),
            (json!({"Stop": [{"hooks": [{"type": "command"}]}]}), "hooks.Stop[0].hooks[0]"),
            (json!({"Stop": [{"hooks": [{"command": "x"}]}]}), "hooks.Stop[0].hooks[0]"),
            (json!({"Stop": [{"hooks": [null]}]}), "hooks.Stop[0].hooks[0]"),
            (json!({"Stop": [{"hooks": [{"type": 5, "command": "x"}]}]}), "hooks.Stop[0].hooks[0].type"),
            (json!({"Stop": [{"hooks": [{"type": "bogus", "command": "x"}]}]}), "hooks.Stop[0].hooks[0].type"),
            (json!({"Stop": [{"hooks": [{"type": "command", "command": 5}]}]}), "hooks.Stop[0].hooks[0].command"),
            (json!({"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": "5"}]}]}), "hooks.Stop[0].hooks[0].timeout"),
            (json!({"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": -1}]}]}), "hooks.Stop[0].hooks[0].timeout"),
            (json!({"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": 0}]}]}), "hooks.Stop[0].hooks[0].timeout"),
            (json!({"Stop": [{"hooks": [{"type": "command", "command": "x", "timeout": null}]}]}), "hooks.Stop[0].hooks[0].timeout"),
        ];
        for (value, path) in cases {
            assert_eq!(path_of("hooks", value.clone()).as_deref(), Some(path), "{value}");
        }
        let b = breach("hooks", &json!({"PreToolUse": [{"matcher": "Bash", "command": "x"}]}), &at("2.1.252"), true).unwrap();
        assert!(b.found.contains("old format"), "{b:?}");
    }

    #[test]
    fn an_event_that_is_not_a_list_costs_the_file_where_the_release_does_not_mend_it() {
        let word = json!({"PreToolUse": "x"});
        let null = json!({"PreToolUse": null});
        let unguarded = json!({"Stop": "x"});
        for (release, word_breaks, null_breaks, unguarded_breaks) in
            [("2.1.121", true, true, true), ("2.1.122", false, false, false), ("2.1.252", false, false, false), ("2.1.257", true, false, false), ("2.1.332", true, false, false)]
        {
            let p = at(release);
            assert_eq!(breach("hooks", &word, &p, true).is_some(), word_breaks, "{release}");
            assert_eq!(breach("hooks", &null, &p, true).is_some(), null_breaks, "{release}");
            assert_eq!(breach("hooks", &unguarded, &p, true).is_some(), unguarded_breaks, "{release}");
        }
    }

    #[test]
    fn from_2_1_257_only_the_guarding_events_are_strict() {
        let old_format = |event: &str| json!({ event: [{"matcher": "Bash", "command": "x"}] });
        for event in ["Stop", "Notification", "SessionStart"] {
            assert!(breach("hooks", &old_format(event), &at("2.1.252"), true).is_some(), "{event}");
            assert_eq!(breach("hooks", &old_format(event), &at("2.1.257"), true), None, "{event}");
        }
        for event in GUARDING_EVENTS {
            assert!(breach("hooks", &old_format(event), &at("2.1.257"), true).is_some(), "{event}");
            assert!(breach("hooks", &old_format(event), &at("2.1.332"), true).is_some(), "{event}");
        }
    }

    #[test]
    fn a_status_line_is_a_command() {
        assert_eq!(path_of("statusLine", json!({"type": "command", "command": "x", "padding": 1})), None);
        assert_eq!(path_of("statusLine", json!({"type": "command"})).as_deref(), Some("statusLine"));
        assert_eq!(path_of("statusLine", json!({"command": "x"})).as_deref(), Some("statusLine"));
        assert_eq!(path_of("statusLine", json!({"type": "cmd", "command": "x"})).as_deref(), Some("statusLine.type"));
        assert_eq!(path_of("statusLine", json!({"type": "command", "command": 5})).as_deref(), Some("statusLine.command"));
        // A hostile project file's text is shown escaped and clipped.
        let b = breach("statusLine", &json!({"type": "\u{1b}[2J".repeat(20), "command": "x"}), &at("2.1.332"), true).unwrap();
        assert!(!b.found.contains('\u{1b}') && b.found.chars().count() < 100, "{}", b.found);
        // The other command settings alike, where the release knows them (probed on the matrix).
        assert_eq!(path_of("fileSuggestion", json!({"command": "x"})).as_deref(), Some("fileSuggestion"));
        assert_eq!(path_of("subagentStatusLine", json!({"type": "x", "command": "x"})).as_deref(), Some("subagentStatusLine.type"));
        let no_type = json!({"command": "x"});
        assert!(breach("subagentStatusLine", &no_type, &at("2.1.113"), true).is_some());
        assert_eq!(breach("subagentStatusLine", &no_type, &at("2.1.100"), true), None, "2.1.100 does not know the key");
    }

    #[test]
    fn permission_lists_must_be_lists() {
        assert_eq!(path_of("permissions", json!({"allow": "Bash"})).as_deref(), Some("permissions.allow"));
        assert_eq!(path_of("permissions", json!({"deny": "Bash"})).as_deref(), Some("permissions.deny"));
        assert_eq!(path_of("permissions", json!({"ask": {}})).as_deref(), Some("permissions.ask"));
        // Null is not an empty list: every release read refuses it.
        assert_eq!(path_of("permissions", json!({"allow": null})).as_deref(), Some("permissions.allow"));
        assert_eq!(path_of("permissions", json!({"defaultMode": 5})).as_deref(), Some("permissions.defaultMode"));
        assert_eq!(path_of("permissions", json!({"defaultMode": null})).as_deref(), Some("permissions.defaultMode"));
        assert_eq!(path_of("permissions", json!({"defaultMode": "a mode of a later release"})), None);
        assert_eq!(path_of("permissions", json!({"additionalDirectories": null})).as_deref(), Some("permissions.additionalDirectories"));
        assert_eq!(path_of("permissions", json!({"additionalDirectories": "x"})).as_deref(), Some("permissions.additionalDirectories"));
        assert_eq!(path_of("permissions", json!({"additionalDirectories": ["a", 1]})).as_deref(), Some("permissions.additionalDirectories[1]"));
        // Entries that are not strings are dropped before the check; a malformed rule is
        // reported by Claude Code but does not cost the file.
        assert_eq!(path_of("permissions", json!({"allow": [1], "deny": ["Bash("], "additionalDirectories": []})), None);
    }
}
