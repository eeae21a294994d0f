//! The `env` blocks of the settings files, applied the way Claude Code applies them to itself.
//!
//! Claude Code copies each settings source's `env` object into its own environment before it
//! looks at memory, so a line such as `"env": {"CLAUDE_CODE_DISABLE_AUTO_MEMORY": "1"}` that a
//! plugin's installer put into `~/.claude/settings.json` turns auto memory off exactly as the
//! shell variable would. Observed on the real binaries (docs/claude-code-versions.md):
//!
//! - sources, lowest priority first: the global config (`.claude.json`), user, project, local,
//!   `--settings FILE`, managed policy; a later source wins, and every source wins over the
//!   process environment — even an empty string replaces a variable that was set;
//! - a source `--setting-sources` leaves out contributes nothing (the flag file always does);
//! - newer releases ignore some variables when they come from a repository's own files
//!   (project or local settings): which ones is the release's profile
//!   (`Profile::repo_env_ignored`);
//! - from 2.1.195 `CLAUDE_CODE_REMOTE` is read before the blocks are applied, so a settings
//!   file cannot make a session remote (`Profile::settings_env_ignored`).

use crate::env::Environment;
use crate::paths::read_global_config;
use crate::settings::{SettingSource, Settings};
use serde::Serialize;
use serde_json::{Map, Value};
use std::path::PathBuf;

/// Where a variable came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum EnvSource {
    /// The global config file (`~/.claude.json`).
    GlobalConfig,
    Setting(SettingSource),
}

/// One variable a settings file sets for Claude Code, after every source is applied.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EnvOverride {
    pub name: String,
    pub value: String,
    pub source: EnvSource,
    /// The file whose `env` block set it.
    pub path: PathBuf,
    /// What the process environment said before (`None`: unset).
    pub process_value: Option<String>,
}

/// JavaScript's `String(value)`, which is what assigning to `process.env` does.
fn js_string(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::Array(items) => items
            .iter()
            .map(|i| if i.is_null() { String::new() } else { js_string(i) })
            .collect::<Vec<_>>()
            .join(","),
        Value::Object(_) => "[object Object]".into(),
    }
}

/// The variables the settings files set, winners only, in name order. `ignored` are the names
/// this release takes from no settings file (it reads them before applying the blocks),
/// `repo_ignored` those it does not take from project or local settings.
pub fn overrides(env: &Environment, settings: &Settings, ignored: &[&str], repo_ignored: &[&str]) -> Vec<EnvOverride> {
    let mut layers: Vec<(EnvSource, PathBuf, Map<String, Value>)> = Vec::new();
    if let Ok(Some(cfg)) = read_global_config(env) {
        if let Some(Value::Object(block)) = cfg.get("env") {
            layers.push((EnvSource::GlobalConfig, env.global_config_path(), block.clone()));
        }
    }
    for source in SettingSource::MERGE_ORDER {
        for file in settings.files().iter().filter(|f| f.source == source && f.enabled) {
            if let Some(Value::Object(block)) = file.applied_object().and_then(|o| o.get("env")) {
                layers.push((EnvSource::Setting(source), file.path.clone(), block.clone()));
            }
        }
    }
    let mut winners: std::collections::BTreeMap<String, EnvOverride> = Default::default();
    for (source, path, block) in layers {
        let from_repo = matches!(source, EnvSource::Setting(SettingSource::Project | SettingSource::Local));
        for (name, value) in block {
            if ignored.contains(&name.as_str()) || (from_repo && repo_ignored.contains(&name.as_str())) {
                continue;
            }
            let process_value = env.var(&name).map(str::to_string);
            winners.insert(
                name.clone(),
                EnvOverride { name, value: js_string(&value), source, path: path.clone(), process_value },
            );
        }
    }
    winners.into_values().collect()
}

/// `env` with the overrides applied.
pub fn apply(env: &Environment, overrides: &[EnvOverride]) -> Environment {
    let mut out = env.clone();
    for o in overrides {
        out.vars.insert(o.name.clone(), o.value.clone());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{load_settings, EnabledSources};
    use std::fs;

    struct Fx {
        _t: tempfile::TempDir,
        env: Environment,
        repo: PathBuf,
    }

    fn fx(user: &str, project: &str, global: &str) -> Fx {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let repo = t.path().join("repo");
        fs::create_dir_all(home.join(".claude")).unwrap();
        fs::create_dir_all(repo.join(".claude")).unwrap();
        fs::write(home.join(".claude/settings.json"), user).unwrap();
        fs::write(repo.join(".claude/settings.json"), project).unwrap();
        fs::write(home.join(".claude.json"), global).unwrap();
        let env = Environment { managed_dir: t.path().join("managed"), ..Environment::with_home(&home) };
        Fx { _t: t, env, repo }
    }

    #[test]
    fn later_sources_win_and_settings_beat_the_process() {
        let f = fx(
            r#"{"env": {"A": "user", "B": "user", "CLAUDE_CODE_DISABLE_AUTO_MEMORY": "", "N": 1, "T": true}}"#,
            r#"{"env": {"B": "project"}}"#,
            r#"{"env": {"A": "global", "G": "global"}}"#,
        );
        let env = f.env.clone().set_var("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1");
        let s = load_settings(&env, &f.repo, EnabledSources::all(), None);
        let got = overrides(&env, &s, &[], &[]);
        let v = |n: &str| got.iter().find(|o| o.name == n).map(|o| (o.value.as_str(), o.source));
        assert_eq!(v("A"), Some(("user", EnvSource::Setting(SettingSource::User))));
        assert_eq!(v("B"), Some(("project", EnvSource::Setting(SettingSource::Project))));
        assert_eq!(v("G"), Some(("global", EnvSource::GlobalConfig)));
        assert_eq!(v("N").unwrap().0, "1");
        assert_eq!(v("T").unwrap().0, "true");
        // An empty string replaces the process value.
        let applied = apply(&env, &got);
        assert_eq!(applied.var("CLAUDE_CODE_DISABLE_AUTO_MEMORY"), Some(""));
        assert_eq!(got.iter().find(|o| o.name == "CLAUDE_CODE_DISABLE_AUTO_MEMORY").unwrap().process_value.as_deref(), Some("1"));
    }

    #[test]
    fn left_out_sources_and_ignored_names_contribute_nothing() {
        let f = fx(
            r#"{"env": {"X": "user"}}"#,
            r#"{"env": {"X": "project", "CLAUDE_CODE_SIMPLE": "1", "CLAUDE_CODE_REMOTE": "1"}}"#,
            "{}",
        );
        let user_only = load_settings(&f.env, &f.repo, EnabledSources::parse("user").unwrap(), None);
        let got = overrides(&f.env, &user_only, &[], &[]);
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].value, "user");
        let all = load_settings(&f.env, &f.repo, EnabledSources::all(), None);
        let names = |ignored: &[&str], repo_ignored: &[&str]| -> Vec<String> {
            overrides(&f.env, &all, ignored, repo_ignored).into_iter().map(|o| o.name).collect()
        };
        assert_eq!(names(&["CLAUDE_CODE_REMOTE"], &["CLAUDE_CODE_SIMPLE"]), ["X"], "SIMPLE ignored from the repository, REMOTE from every file");
        assert_eq!(names(&["CLAUDE_CODE_REMOTE"], &[]), ["CLAUDE_CODE_SIMPLE", "X"]);
        // Releases before 2.1.195 took REMOTE from a settings file like any other variable.
        assert_eq!(names(&[], &[]), ["CLAUDE_CODE_REMOTE", "CLAUDE_CODE_SIMPLE", "X"]);
    }
}
