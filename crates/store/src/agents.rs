//! Sub-agent definitions, found where Claude Code finds them, for their `memory:` scope.
//!
//! Claude Code reads markdown agents from the managed folder's `.claude/agents`, the config
//! home's `agents/`, and every `.claude/agents` from the working folder up to the repository
//! root (or the home folder), plus the `agents/` folder (and any `agents` the manifest names)
//! of each installed plugin that `enabledPlugins` switches on and whose marketplace Claude Code
//! knows (`plugins/known_marketplaces.json`). A later source replaces an
//! earlier one with the same agent type, in Claude Code's order: plugin, user, project,
//! managed. A markdown agent's type is its frontmatter `name`; a plugin agent's is
//! `<plugin>:<sub-folders…>:<name or file stem>`, which is why its memory folder is
//! `plugin-agent` (colons become dashes, `paths::agent_memory_dir`).
//!
//! Only what memory needs is read: the type, the scope, where the file is, and the agent's
//! own prompt (the text the memory section follows in its system prompt).

use crate::paths::AgentScope;
use crate::settings::Settings;
use crate::Environment;
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Where an agent definition came from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum AgentSource {
    /// `<managed dir>/.claude/agents`.
    Managed,
    /// `<config home>/agents`.
    User,
    /// A `.claude/agents` folder in the project (the working folder or one above it).
    Project,
    /// An installed, enabled plugin: its id in `enabledPlugins` (`name@marketplace`).
    Plugin { id: String },
}

/// One agent definition as Claude Code would load it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct AgentDefinition {
    /// What the Agent tool's `subagent_type` names (`reviewer`, `my-plugin:auditor`).
    pub agent_type: String,
    pub source: AgentSource,
    pub file: PathBuf,
    /// `memory:` when it is one of `user`, `project`, `local`.
    pub memory: Option<AgentScope>,
    /// A `memory:` value Claude Code ignores, as written.
    pub invalid_memory: Option<String>,
    /// The body after the frontmatter, trimmed: the agent's own system prompt.
    #[serde(skip)]
    pub prompt: String,
}

/// A file in an agents folder that Claude Code would not load as an agent, and why.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct AgentProblem {
    pub file: PathBuf,
    pub reason: String,
}

/// Every agent Claude Code would offer from `cwd`, after later sources replace earlier ones
/// of the same type, sorted by type; plus the files it would skip.
pub fn discover(env: &Environment, settings: &Settings, cwd: &Path) -> (Vec<AgentDefinition>, Vec<AgentProblem>) {
    let mut found: Vec<AgentDefinition> = Vec::new();
    let mut problems = Vec::new();
    for plugin in enabled_plugins(env, settings, cwd, &mut problems) {
        for (dir_or_file, is_default) in &plugin.agent_paths {
            let mut files = Vec::new();
            if dir_or_file.is_file() {
                files.push((dir_or_file.clone(), Vec::new()));
            } else {
                markdown_files(dir_or_file, &mut Vec::new(), &mut files);
            }
            if files.is_empty() && !is_default {
                problems.push(AgentProblem {
                    file: dir_or_file.clone(),
                    reason: format!("The plugin {} names this agents path in its manifest, but it holds no .md files.", plugin.id),
                });
            }
            for (file, namespace) in files {
                if let Some(def) = plugin_agent(&file, &plugin, &namespace) {
                    found.push(def);
                }
            }
        }
    }
    let project_dirs = project_agent_dirs(env, cwd);
    let sources = std::iter::once((env.config_home().join("agents"), AgentSource::User))
        .chain(project_dirs.into_iter().map(|d| (d, AgentSource::Project)))
        .chain(std::iter::once((env.managed_dir.join(".claude").join("agents"), AgentSource::Managed)));
    for (dir, source) in sources {
        let mut files = Vec::new();
        markdown_files(&dir, &mut Vec::new(), &mut files);
        for (file, _) in files {
            match markdown_agent(&file, source.clone()) {
                Ok(Some(def)) => found.push(def),
                Ok(None) => {}
                Err(reason) => problems.push(AgentProblem { file, reason }),
            }
        }
    }
    // Later sources win for the same type, as Claude Code's active-agent map is filled.
    let mut by_type: Vec<AgentDefinition> = Vec::new();
    for def in found {
        match by_type.iter_mut().find(|d| d.agent_type == def.agent_type) {
            Some(slot) => *slot = def,
            None => by_type.push(def),
        }
    }
    by_type.sort_by(|a, b| a.agent_type.cmp(&b.agent_type));
    (by_type, problems)
}

/// `.claude/agents` in `cwd` and each folder above it, up to the repository root (inclusive)
/// or the home folder (exclusive, since `~/.claude/agents` is not the user's agents folder
/// unless the config home says so), nearest first.
fn project_agent_dirs(env: &Environment, cwd: &Path) -> Vec<PathBuf> {
    let root = crate::git::find_git_root(cwd);
    let mut out = Vec::new();
    for dir in cwd.ancestors() {
        if dir == env.home {
            break;
        }
        out.push(dir.join(".claude").join("agents"));
        if root.as_deref() == Some(dir) {
            break;
        }
    }
    // Claude Code lists the farthest first and lets later (nearer) ones replace it.
    out.reverse();
    out
}

/// `.md` files under `dir`, recursively, in name order, each with the sub-folders it sits in.
fn markdown_files(dir: &Path, namespace: &mut Vec<String>, out: &mut Vec<(PathBuf, Vec<String>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    let mut entries: Vec<_> = entries.flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for e in entries {
        let path = e.path();
        let name = e.file_name().to_string_lossy().into_owned();
        if path.is_dir() {
            namespace.push(name);
            markdown_files(&path, namespace, out);
            namespace.pop();
        } else if name.ends_with(".md") && path.is_file() {
            out.push((path, namespace.clone()));
        }
    }
}

fn scope_of(fm: Option<&mneme_core::frontmatter::Frontmatter>) -> (Option<AgentScope>, Option<String>) {
    let Some(value) = fm.and_then(|f| f.get("memory")) else { return (None, None) };
    match value.as_str().and_then(AgentScope::from_name) {
        Some(scope) => (Some(scope), None),
        None => (None, Some(yaml_serde::to_string(value).unwrap_or_default().trim().to_string())),
    }
}

/// A markdown agent: `Ok(None)` for a file without a `name` (Claude Code skips it silently),
/// `Err` for one it reports.
fn markdown_agent(file: &Path, source: AgentSource) -> Result<Option<AgentDefinition>, String> {
    let text = crate::open::read_plain_to_string(file).map_err(|e| format!("Cannot read it: {e}."))?;
    let parsed = mneme_core::frontmatter::parse(&text);
    let fm = parsed.frontmatter.as_ref();
    let Some(name) = fm.and_then(|f| f.get("name")).and_then(|v| v.as_str()).filter(|n| !n.is_empty()) else {
        return Ok(None);
    };
    if name.starts_with('-') {
        return Err(format!("Its name '{name}' starts with '-', which Claude Code refuses; rename the agent."));
    }
    if fm.and_then(|f| f.get("description")).and_then(|v| v.as_str()).filter(|d| !d.is_empty()).is_none() {
        return Err("It has no description in its frontmatter, so Claude Code does not load it; add `description:`.".into());
    }
    let (memory, invalid_memory) = scope_of(fm);
    Ok(Some(AgentDefinition {
        agent_type: name.to_string(),
        source,
        file: file.to_path_buf(),
        memory,
        invalid_memory,
        prompt: parsed.body.trim().to_string(),
    }))
}

fn plugin_agent(file: &Path, plugin: &Plugin, namespace: &[String]) -> Option<AgentDefinition> {
    let text = crate::open::read_plain_to_string(file).ok()?;
    let parsed = mneme_core::frontmatter::parse(&text);
    let fm = parsed.frontmatter.as_ref();
    let stem = file.file_name()?.to_string_lossy().trim_end_matches(".md").to_string();
    let name = match fm.and_then(|f| f.get("name")) {
        Some(yaml_serde::Value::String(s)) if !s.is_empty() => s.clone(),
        Some(yaml_serde::Value::Number(n)) => n.to_string(),
        Some(yaml_serde::Value::Bool(b)) => b.to_string(),
        _ => stem,
    };
    let mut parts = vec![plugin.name.clone()];
    parts.extend(namespace.iter().cloned());
    parts.push(name);
    let (memory, invalid_memory) = scope_of(fm);
    Some(AgentDefinition {
        agent_type: parts.join(":"),
        source: AgentSource::Plugin { id: plugin.id.clone() },
        file: file.to_path_buf(),
        memory,
        invalid_memory,
        prompt: parsed.body.trim().to_string(),
    })
}

struct Plugin {
    id: String,
    name: String,
    /// Folders or files to load agents from; `true` for the default `agents/` folder.
    agent_paths: Vec<(PathBuf, bool)>,
}

/// `<config home>/plugins/installed_plugins.json`: where each installed plugin is.
pub fn installed_plugins_path(env: &Environment) -> PathBuf {
    env.config_home().join("plugins").join("installed_plugins.json")
}

/// `<config home>/plugins/known_marketplaces.json`: the marketplaces Claude Code knows.
pub fn known_marketplaces_path(env: &Environment) -> PathBuf {
    env.config_home().join("plugins").join("known_marketplaces.json")
}

/// Installed plugins that the merged settings' `enabledPlugins` turns on (`"id": true`) and
/// whose installation applies here (user or managed scope, or a project/local install for this
/// project).
fn enabled_plugins(env: &Environment, settings: &Settings, cwd: &Path, problems: &mut Vec<AgentProblem>) -> Vec<Plugin> {
    let Some(enabled) = settings.merged().get("enabledPlugins").and_then(|e| e.as_object()) else { return Vec::new() };
    let path = installed_plugins_path(env);
    let installed: serde_json::Value = match crate::open::read_plain_to_string(&path) {
        Ok(text) => match mneme_core::js_json::parse_str(&text) {
            Ok(v) => v,
            Err(e) => {
                problems.push(AgentProblem {
                    file: path,
                    reason: format!("It is not valid JSON ({e}), so no plugin agents are listed; reinstall the plugins with /plugin."),
                });
                return Vec::new();
            }
        },
        Err(_) => return Vec::new(),
    };
    let Some(plugins) = installed.get("plugins").and_then(|p| p.as_object()) else { return Vec::new() };
    // Claude Code skips a plugin whose marketplace it does not know (`known_marketplaces.json`).
    let known: serde_json::Map<String, serde_json::Value> = crate::open::read_plain_to_string(&known_marketplaces_path(env))
        .ok()
        .and_then(|t| mneme_core::js_json::parse_str(&t).ok())
        .and_then(|v| v.as_object().cloned())
        .unwrap_or_default();
    let root = crate::git::find_git_root(cwd);
    let mut out = Vec::new();
    for (id, entries) in plugins {
        if enabled.get(id) != Some(&serde_json::Value::Bool(true)) {
            continue;
        }
        let marketplace = id.rsplit_once('@').map(|(_, m)| m).unwrap_or("");
        if !known.contains_key(marketplace) {
            problems.push(AgentProblem {
                file: path.clone(),
                reason: format!(
                    "The plugin {id} is installed and enabled, but its marketplace {marketplace} is not in known_marketplaces.json, so Claude Code skips it; add the marketplace again with /plugin."
                ),
            });
            continue;
        }
        // Version 2 keeps a list of installations per plugin; version 1 kept one object.
        let entries: Vec<&serde_json::Value> = match entries {
            serde_json::Value::Array(list) => list.iter().collect(),
            other => vec![other],
        };
        let here = |p: &str| Path::new(p) == cwd || root.as_deref() == Some(Path::new(p));
        let entry = entries.into_iter().find(|e| match e.get("scope").and_then(|s| s.as_str()) {
            Some("project" | "local") => e.get("projectPath").and_then(|p| p.as_str()).is_some_and(here),
            _ => true,
        });
        let Some(install) = entry.and_then(|e| e.get("installPath")).and_then(|p| p.as_str()).map(PathBuf::from) else {
            continue;
        };
        let manifest: Option<serde_json::Value> = crate::open::read_plain_to_string(&install.join(".claude-plugin").join("plugin.json"))
            .ok()
            .and_then(|t| serde_json::from_str(&t).ok());
        let name = manifest
            .as_ref()
            .and_then(|m| m.get("name"))
            .and_then(|n| n.as_str())
            .map(str::to_string)
            .unwrap_or_else(|| id.split('@').next().unwrap_or(id).to_string());
        let mut agent_paths = vec![(install.join("agents"), true)];
        let listed = match manifest.as_ref().and_then(|m| m.get("agents")) {
            Some(serde_json::Value::String(s)) => vec![s.clone()],
            Some(serde_json::Value::Array(a)) => a.iter().filter_map(|v| v.as_str().map(str::to_string)).collect(),
            _ => Vec::new(),
        };
        for rel in listed {
            let p = install.join(&rel);
            // A manifest path may not leave the plugin (Claude Code refuses traversal too).
            if rel.split(['/', '\\']).any(|c| c == "..") || Path::new(&rel).is_absolute() {
                problems.push(AgentProblem {
                    file: p,
                    reason: format!("The plugin {id} names an agents path outside itself, which Claude Code refuses."),
                });
                continue;
            }
            if !agent_paths.iter().any(|(q, _)| *q == p) {
                agent_paths.push((p, false));
            }
        }
        out.push(Plugin { id: id.clone(), name, agent_paths });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::settings::{EnabledSources, load_settings};

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn finds_user_project_and_plugin_agents_with_their_scopes() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let repo = t.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let env = Environment::with_home(&home);
        let cfg = env.config_home();
        write(&cfg.join("agents/reviewer.md"), "---\nname: reviewer\ndescription: Reviews\nmemory: user\n---\n\nYou review.\n");
        write(&cfg.join("agents/nomem.md"), "---\nname: nomem\ndescription: x\n---\nbody");
        write(&cfg.join("agents/bad.md"), "---\nname: bad\ndescription: x\nmemory: team\n---\nbody");
        write(&cfg.join("agents/nameless.md"), "---\ndescription: x\n---\nbody");
        write(&cfg.join("agents/nodesc.md"), "---\nname: nodesc\n---\nbody");
        write(&repo.join(".claude/agents/planner.md"), "---\nname: planner\ndescription: Plans\nmemory: project\n---\nPlan.");
        // The project's definition replaces the user's one of the same type.
        write(&repo.join(".claude/agents/override.md"), "---\nname: nomem\ndescription: x\nmemory: local\n---\nbody");
        let install = cfg.join("plugins/cache/mkt/toolkit/1.0.0");
        write(&install.join(".claude-plugin/plugin.json"), r#"{"name":"toolkit"}"#);
        write(&install.join("agents/auditor.md"), "---\ndescription: Audits\nmemory: local\n---\nAudit.");
        write(&install.join("agents/deep/scan.md"), "---\nname: scanner\ndescription: s\n---\nScan.");
        write(
            &installed_plugins_path(&env),
            &format!(
                r#"{{"version":2,"plugins":{{"toolkit@mkt":[{{"scope":"user","installPath":{:?}}}],"off@mkt":[{{"scope":"user","installPath":{:?}}}],"lost@gone":[{{"scope":"user","installPath":{:?}}}]}}}}"#,
                install.to_string_lossy(),
                install.to_string_lossy(),
                install.to_string_lossy()
            ),
        );
        write(&cfg.join("settings.json"), r#"{"enabledPlugins":{"toolkit@mkt":true,"off@mkt":false,"lost@gone":true}}"#);
        write(&known_marketplaces_path(&env), r#"{"mkt":{"source":{"source":"directory","path":"/x"},"installLocation":"/x"}}"#);
        let settings = load_settings(&env, &repo, EnabledSources::all(), None);
        let (agents, problems) = discover(&env, &settings, &repo);
        let got: Vec<(&str, Option<AgentScope>, &AgentSource)> =
            agents.iter().map(|a| (a.agent_type.as_str(), a.memory, &a.source)).collect();
        let plugin = AgentSource::Plugin { id: "toolkit@mkt".into() };
        assert_eq!(
            got,
            vec![
                ("bad", None, &AgentSource::User),
                ("nomem", Some(AgentScope::Local), &AgentSource::Project),
                ("planner", Some(AgentScope::Project), &AgentSource::Project),
                ("reviewer", Some(AgentScope::User), &AgentSource::User),
                ("toolkit:auditor", Some(AgentScope::Local), &plugin),
                ("toolkit:deep:scanner", None, &plugin),
            ]
        );
        assert_eq!(agents[0].invalid_memory.as_deref(), Some("team"));
        assert_eq!(agents[3].prompt, "You review.");
        assert_eq!(problems.len(), 2, "{problems:?}");
        assert!(problems[0].reason.contains("lost@gone") && problems[0].reason.contains("known_marketplaces.json"));
        assert!(problems[1].file.ends_with("nodesc.md") && problems[1].reason.contains("description"));
    }
}
