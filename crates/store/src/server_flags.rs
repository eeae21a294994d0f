//! Claude Code's server-side feature flags as a session started now would see them.
//!
//! Claude Code keeps the flags its server last sent in the global config
//! (`cachedGrowthBookFeatures`; older configs `cachedFeatureFlags`) and a new session decides
//! by those values before it hears from the server again. Whether it looks at them at all
//! depends on the session's environment. What follows was seen by running 2.1.337 offline (a
//! loopback-only network namespace, the stub API) with a flag that changes the first request
//! (`tengu_woolly_harp`; docs/claude-code-versions.md, "Server flags"):
//!
//! - `cachedGrowthBookFeatures` is read when it is anything but `null` or missing (even `{}`
//!   or `[]`, which then hold no flag); otherwise `cachedFeatureFlags`. A flag is on only when
//!   its value is the JSON `true` (not `"true"`, not `1`).
//! - `DISABLE_GROWTHBOOK` or `CLAUDE_CODE_DISABLE_FEATURE_FLAGS` (truthy: `1`, `true`, `yes`,
//!   `on`) turn every flag to its default, from the shell or a settings file's `env` block.
//! - So do the telemetry switches — `CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC` or
//!   `DISABLE_TELEMETRY` set to anything (`0` and `false` too), `DO_NOT_TRACK` truthy — unless
//!   `CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF` is truthy in the shell Claude Code starts
//!   from (the same variable in a settings file's `env` block is not honoured).
//! - A session on Amazon Bedrock, Google Vertex AI or Microsoft Foundry
//!   (`CLAUDE_CODE_USE_BEDROCK`, `_VERTEX`, `_FOUNDRY`) uses no flags.
//!
//! Which release reads which flag is `mneme_core::versions`' business; this only says whether a
//! flag is on.

use crate::env::Environment;
use serde_json::Value;

/// The flags a session would decide by.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ServerFlags {
    /// The cached flags object; `None` when the session uses none.
    cached: Option<Value>,
}

impl ServerFlags {
    /// The flags for a session: `process` is the environment Claude Code starts from (it names
    /// the global config), `session` the same with the settings files' `env` blocks applied.
    /// A missing or unreadable global config holds no flags.
    pub fn for_session(process: &Environment, session: &Environment) -> ServerFlags {
        if !flags_used(process, session) {
            return ServerFlags::default();
        }
        let Ok(Some(config)) = crate::paths::read_global_config(process) else { return ServerFlags::default() };
        let cached = ["cachedGrowthBookFeatures", "cachedFeatureFlags"].iter().find_map(|key| config.get(*key).filter(|v| !v.is_null())).cloned();
        ServerFlags { cached }
    }

    /// The flags for a resolved session, whose settings files' `env` blocks are applied: the
    /// shell's own value of the one switch only the shell may set is taken from before them.
    pub fn for_memory_session(session: &crate::session::SessionMemory) -> ServerFlags {
        let mut process = session.env.clone();
        if let Some(o) = session.overrides.iter().find(|o| o.name == DISK_CACHE_SWITCH) {
            match &o.process_value {
                Some(v) => process.vars.insert(DISK_CACHE_SWITCH.to_string(), v.clone()),
                None => process.vars.remove(DISK_CACHE_SWITCH),
            };
        }
        ServerFlags::for_session(&process, &session.env)
    }

    /// Flags given as they are, for tests and callers that already hold the cached object.
    pub fn from_cached(cached: Value) -> ServerFlags {
        ServerFlags { cached: Some(cached) }
    }

    /// The cached value of the flag `name`, when the session uses flags and one is cached.
    pub fn get(&self, name: &str) -> Option<&Value> {
        self.cached.as_ref().and_then(|c| c.get(name))
    }

    /// Whether the flag `name` is on: its cached value is exactly `true`.
    pub fn is_on(&self, name: &str) -> bool {
        self.cached.as_ref().and_then(|c| c.get(name)) == Some(&Value::Bool(true))
    }
}

/// Keeps cached flags in use with telemetry off, when the shell sets it.
const DISK_CACHE_SWITCH: &str = "CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF";

/// Whether a session with this environment decides by the cached flags at all.
fn flags_used(process: &Environment, session: &Environment) -> bool {
    if session.is_truthy("DISABLE_GROWTHBOOK") || session.is_truthy("CLAUDE_CODE_DISABLE_FEATURE_FLAGS") {
        return false;
    }
    if ["CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "CLAUDE_CODE_USE_FOUNDRY"].iter().any(|v| session.is_truthy(v)) {
        return false;
    }
    let set = |name: &str| session.var(name).is_some_and(|v| !v.is_empty());
    let telemetry_off = set("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC") || set("DISABLE_TELEMETRY") || session.is_truthy("DO_NOT_TRACK");
    !telemetry_off || process.is_truthy(DISK_CACHE_SWITCH)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(config: &str, vars: &[(&str, &str)], settings_vars: &[(&str, &str)]) -> (tempfile::TempDir, ServerFlags) {
        let t = tempfile::tempdir().unwrap();
        std::fs::write(t.path().join(".claude.json"), config).unwrap();
        let mut process = Environment::with_home(t.path());
        for (k, v) in vars {
            process = process.set_var(k, *v);
        }
        let mut with_settings = process.clone();
        for (k, v) in settings_vars {
            with_settings = with_settings.set_var(k, *v);
        }
        let flags = ServerFlags::for_session(&process, &with_settings);
        (t, flags)
    }

    const ON: &str = r#"{"cachedGrowthBookFeatures": {"tengu_woolly_harp": true}}"#;

    #[test]
    fn a_flag_is_on_only_as_json_true_in_the_config_read() {
        assert!(session(ON, &[], &[]).1.is_on("tengu_woolly_harp"));
        assert!(!session(ON, &[], &[]).1.is_on("tengu_other"));
        for value in ["\"true\"", "1", "{\"value\": true}", "false", "null"] {
            let config = format!(r#"{{"cachedGrowthBookFeatures": {{"tengu_woolly_harp": {value}}}}}"#);
            assert!(!session(&config, &[], &[]).1.is_on("tengu_woolly_harp"), "{value}");
        }
        // The older key only when the newer is null or missing: `{}` and `[]` hide it.
        let older = r#"{"cachedFeatureFlags": {"tengu_woolly_harp": true}}"#;
        assert!(session(older, &[], &[]).1.is_on("tengu_woolly_harp"));
        for newer in ["null", "{}", "[]", r#"{"tengu_woolly_harp": false}"#] {
            let config = format!(r#"{{"cachedGrowthBookFeatures": {newer}, "cachedFeatureFlags": {{"tengu_woolly_harp": true}}}}"#);
            assert_eq!(session(&config, &[], &[]).1.is_on("tengu_woolly_harp"), newer == "null", "{newer}");
        }
        // No config, or one that does not parse: no flags.
        assert!(!session("{", &[], &[]).1.is_on("tengu_woolly_harp"));
    }

    #[test]
    fn switches_in_the_environment_decide_whether_flags_are_used() {
        let on = |vars: &[(&str, &str)], settings: &[(&str, &str)]| session(ON, vars, settings).1.is_on("tengu_woolly_harp");
        for off in [
            ("DISABLE_GROWTHBOOK", "1"),
            ("DISABLE_GROWTHBOOK", "yes"),
            ("CLAUDE_CODE_DISABLE_FEATURE_FLAGS", "1"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"),
            ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "0"),
            ("DISABLE_TELEMETRY", "1"),
            ("DISABLE_TELEMETRY", "false"),
            ("DO_NOT_TRACK", "1"),
            ("CLAUDE_CODE_USE_BEDROCK", "1"),
            ("CLAUDE_CODE_USE_VERTEX", "1"),
            ("CLAUDE_CODE_USE_FOUNDRY", "1"),
        ] {
            assert!(!on(&[off], &[]), "{off:?} in the shell");
            assert!(!on(&[], &[off]), "{off:?} in a settings file");
        }
        for kept in [("DISABLE_GROWTHBOOK", "0"), ("DO_NOT_TRACK", "0"), ("DISABLE_ERROR_REPORTING", "1")] {
            assert!(on(&[kept], &[]), "{kept:?}");
        }
        // The disk cache keeps flags with telemetry off, but only from the shell.
        let cache = ("CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF", "1");
        for telemetry in [("DISABLE_TELEMETRY", "1"), ("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1"), ("DO_NOT_TRACK", "1")] {
            assert!(on(&[telemetry, cache], &[]), "{telemetry:?}");
            assert!(!on(&[telemetry], &[cache]), "{telemetry:?} with the cache switch in a settings file");
            assert!(!on(&[telemetry, ("CLAUDE_CODE_GB_DISK_CACHE_WHEN_TELEMETRY_OFF", "0")], &[]), "{telemetry:?}");
        }
        assert!(!on(&[("DISABLE_GROWTHBOOK", "1"), cache], &[]));
    }
}
