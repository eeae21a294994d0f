//! Agent memory: every sub-agent that declares `memory:` gets a folder of its own, managed like
//! auto memory. [`Mneme::agents`] lists the agents Claude Code would offer from a folder with
//! their memory folders, and every agent-memory folder on disk (machine-wide user scope and this
//! project's), so a folder whose agent was removed still shows. A [`ContextRequest`] with an
//! [`AgentTarget`] points every memory-folder operation (list, show, create, edit, delete,
//! restore, health, fix, graph) at that agent's folder instead of auto memory.

use crate::{ApiError, ContextRequest, Mneme};
use mneme_store::agents::{self, AgentProblem, AgentSource};
use mneme_store::memdir::Memdir;
use mneme_store::paths::{self, AgentScope};
use serde::Serialize;
use std::path::{Path, PathBuf};

/// Which agent's memory folder an operation works on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentTarget {
    /// The agent type (`reviewer`, `toolkit:auditor`) or its folder name (`toolkit-auditor`).
    pub name: String,
    /// The scope to use; `None` = the one the agent's definition declares.
    pub scope: Option<AgentScope>,
}

/// One agent Claude Code would offer, and its memory.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct AgentInfo {
    pub agent_type: String,
    pub source: AgentSource,
    /// The definition file.
    pub file: PathBuf,
    /// `memory:` when valid; `None` = the agent has no memory.
    pub scope: Option<AgentScope>,
    /// A `memory:` value Claude Code ignores (the agent then has no memory), as written.
    pub invalid_memory: Option<String>,
    /// The agent's memory folder (when it has memory).
    pub memory_dir: Option<PathBuf>,
    pub exists: bool,
    /// Memory files in the folder (MEMORY.md not counted).
    pub memories: usize,
    /// Project scope: the folder is inside the repository and shared through git.
    pub checked_in: bool,
}

/// An agent-memory folder on disk.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct AgentFolder {
    /// The folder's name (an agent type with `:` turned into `-`).
    pub name: String,
    pub scope: AgentScope,
    pub dir: PathBuf,
    pub memories: usize,
    /// The agent (listed in `agents`) that uses this folder from here, if any.
    pub agent: Option<String>,
}

/// Every agent from a folder and every agent-memory folder Mneme can see.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct AgentsView {
    pub cwd: PathBuf,
    /// Claude Code gives agents their memory only while auto memory is on.
    pub auto_memory_enabled: bool,
    pub auto_memory_reason: String,
    pub agents: Vec<AgentInfo>,
    /// User-scope folders (all projects) and this project's project and local folders.
    pub folders: Vec<AgentFolder>,
    /// Agent files Claude Code would skip, and why.
    pub problems: Vec<AgentProblem>,
}

/// An agent's memory folder, resolved.
pub(crate) struct AgentMemory {
    pub agent_type: String,
    pub scope: AgentScope,
    pub dir: PathBuf,
}

fn count_memories(dir: &Path) -> usize {
    // A scan without a trash or a clock: only the headers are counted.
    let m = Memdir::new(dir, dir.join(".unused-trash"), std::sync::Arc::new(mneme_core::SystemClock));
    m.scan_headers().map(|s| s.headers.len()).unwrap_or(0)
}

fn subfolders(dir: &Path) -> Vec<(String, PathBuf)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<(String, PathBuf)> = entries
        .flatten()
        .filter(|e| e.path().is_dir())
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
        .collect();
    out.sort();
    out
}

impl Mneme {
    fn agent_dir(&self, cwd: &Path, scope: AgentScope, agent_type: &str) -> PathBuf {
        let root = mneme_store::git::find_canonical_git_root(cwd).unwrap_or_else(|| cwd.to_path_buf());
        paths::agent_memory_dir(&self.env, scope, agent_type, cwd, &root)
    }

    /// The agents Claude Code would offer from `req.cwd`, with their memory folders.
    pub fn agents(&self, req: &ContextRequest) -> Result<AgentsView, ApiError> {
        let r = self.resolve(req)?;
        let (defs, mut problems) = agents::discover(&self.env, &r.settings, &r.cwd);
        let agents: Vec<AgentInfo> = defs
            .into_iter()
            .map(|d| {
                let unsafe_name = d.memory.and(paths::agent_type_problem(&d.agent_type));
                if let Some(reason) = &unsafe_name {
                    problems.push(AgentProblem { file: d.file.clone(), reason: format!("Mneme does not open this agent's memory: {reason}.") });
                }
                let memory_dir = d.memory.filter(|_| unsafe_name.is_none()).map(|s| self.agent_dir(&r.cwd, s, &d.agent_type));
                let exists = memory_dir.as_deref().is_some_and(Path::is_dir);
                AgentInfo {
                    memories: memory_dir.as_deref().filter(|_| exists).map(count_memories).unwrap_or(0),
                    checked_in: d.memory == Some(AgentScope::Project) && memory_dir.is_some(),
                    agent_type: d.agent_type,
                    source: d.source,
                    file: d.file,
                    scope: d.memory,
                    invalid_memory: d.invalid_memory,
                    memory_dir,
                    exists,
                }
            })
            .collect();
        let parents = [
            (AgentScope::User, self.env.memory_base().join("agent-memory")),
            (AgentScope::Project, r.cwd.join(".claude").join("agent-memory")),
            (AgentScope::Local, self.agent_dir(&r.cwd, AgentScope::Local, "x").parent().map(Path::to_path_buf).unwrap_or_default()),
        ];
        let mut folders = Vec::new();
        for (scope, parent) in parents {
            for (name, dir) in subfolders(&parent) {
                let agent = agents
                    .iter()
                    .find(|a| a.scope == Some(scope) && a.memory_dir.as_deref() == Some(dir.as_path()))
                    .map(|a| a.agent_type.clone());
                folders.push(AgentFolder { memories: count_memories(&dir), name, scope, dir, agent });
            }
        }
        Ok(AgentsView {
            cwd: r.cwd,
            auto_memory_enabled: r.auto_memory.enabled,
            auto_memory_reason: r.auto_memory.reason,
            agents,
            folders,
            problems,
        })
    }

    /// The memory folder `target` names from `cwd`: a defined agent's (its own scope unless
    /// one is given), or, with a scope, a folder whose agent is not defined here (left behind).
    pub(crate) fn agent_memory(&self, cwd: &Path, settings: &mneme_store::settings::Settings, target: &AgentTarget) -> Result<AgentMemory, ApiError> {
        let (defs, _) = agents::discover(&self.env, settings, cwd);
        let folder_name = |t: &str| t.replace(':', "-");
        let def = defs
            .iter()
            .find(|d| d.agent_type == target.name)
            .or_else(|| defs.iter().find(|d| folder_name(&d.agent_type) == target.name))
            .cloned();
        let scope = match (target.scope, def.as_ref().and_then(|d| d.memory)) {
            (Some(s), _) => s,
            (None, Some(s)) => s,
            (None, None) => {
                let known: Vec<&str> = defs.iter().filter(|d| d.memory.is_some()).map(|d| d.agent_type.as_str()).collect();
                // Every front end shows these (the app, `mneme serve`, the command line), so they
                // name no command and no flag: the folders are listed with the agents (the
                // Memories screen's folder picker, `mneme agents`), each with its scope.
                return Err(match &def {
                    Some(d) => ApiError::invalid(format!(
                        "The agent {} has no memory: its definition ({}) does not set `memory: user`, `project` or `local`. Add it there; a folder it already has is listed with the agents' memory folders, with its scope.",
                        d.agent_type,
                        d.file.display()
                    )),
                    None => ApiError::not_found(format!(
                        "No agent named {} is defined here now (its definition may have been removed or renamed). Agents with memory: {}. A folder it left behind is listed with the agents' memory folders, with its scope.",
                        target.name,
                        if known.is_empty() { "none".to_string() } else { known.join(", ") }
                    )),
                });
            }
        };
        let agent_type = def.as_ref().map(|d| d.agent_type.clone()).unwrap_or_else(|| target.name.clone());
        if let Some(reason) = paths::agent_type_problem(&agent_type) {
            let file = def.as_ref().map(|d| format!(" ({})", d.file.display())).unwrap_or_default();
            return Err(ApiError::invalid(format!("Cannot open that agent memory folder{file}: {reason}.")));
        }
        Ok(AgentMemory { dir: self.agent_dir(cwd, scope, &agent_type), agent_type, scope })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn write(p: &Path, text: &str) {
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }

    #[test]
    fn lists_agents_and_folders_and_points_memory_operations_at_an_agent() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let repo = t.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        let env = mneme_store::Environment::with_home(&home);
        let cfg = env.config_home();
        write(&cfg.join("agents/reviewer.md"), "---\nname: reviewer\ndescription: r\nmemory: user\n---\nReview.");
        write(&repo.join(".claude/agents/planner.md"), "---\nname: planner\ndescription: p\nmemory: project\n---\nPlan.");
        let planner_dir = repo.join(".claude/agent-memory/planner");
        write(&planner_dir.join("MEMORY.md"), "- [Layout](layout.md) — where things are\n");
        write(&planner_dir.join("layout.md"), "---\nname: Layout\ndescription: where things are\ntype: project\n---\nsrc/ holds it.\n");
        write(&repo.join(".claude/agent-memory-local/gone/old.md"), "---\nname: Old\ndescription: o\ntype: user\n---\nx\n");
        let m = Mneme::new(env.clone(), Arc::new(mneme_core::SystemClock));
        let req = ContextRequest { cwd: repo.clone(), ..ContextRequest::default() };
        let view = m.agents(&req).unwrap();
        let planner = view.agents.iter().find(|a| a.agent_type == "planner").unwrap();
        assert!(planner.exists && planner.checked_in);
        assert_eq!(planner.memories, 1);
        let reviewer = view.agents.iter().find(|a| a.agent_type == "reviewer").unwrap();
        assert_eq!(reviewer.memory_dir.as_deref(), Some(home.join(".claude/agent-memory/reviewer").as_path()));
        assert!(!reviewer.exists);
        let gone = view.folders.iter().find(|f| f.name == "gone").unwrap();
        assert_eq!((gone.scope, gone.memories, gone.agent.as_deref()), (AgentScope::Local, 1, None));

        let at_agent = |name: &str, scope| ContextRequest {
            agent: Some(AgentTarget { name: name.into(), scope }),
            ..req.clone()
        };
        let listed = m.memories(&at_agent("planner", None), &Default::default()).unwrap();
        assert_eq!(listed.len(), 1);
        let created = m
            .create_memory(
                &at_agent("reviewer", None),
                &crate::NewMemoryRequest {
                    name: "Style".into(),
                    description: "house style".into(),
                    kind: "feedback".into(),
                    body: "Short names.".into(),
                    file_name: None,
                },
            )
            .unwrap();
        assert!(home.join(".claude/agent-memory/reviewer").join(&created.rel_path).is_file());
        assert_eq!(m.memories(&at_agent("gone", Some(AgentScope::Local)), &Default::default()).unwrap().len(), 1);
        // Dreams work on the agent's folder: its gates, and an offline dream there.
        assert_eq!(m.dream_status(&at_agent("planner", None)).unwrap().memory_dir, planner_dir);
        m.run_dream(&at_agent("planner", None), None).unwrap();
        assert!(planner_dir.join(".consolidate-lock").is_file(), "the dream's lock is in the agent's folder");
        let e = m.memories(&at_agent("nobody", None), &Default::default()).unwrap_err();
        assert!(e.message.contains("planner, reviewer"), "{}", e.message);
        // The app shows these too: they name the agents' folder list, not a command or a flag.
        assert!(e.message.starts_with("No agent named nobody is defined here now") && e.message.ends_with("A folder it left behind is listed with the agents' memory folders, with its scope."), "{}", e.message);
        write(&cfg.join("agents/plain.md"), "---\nname: plain\ndescription: p\n---\nNo memory.");
        let plain = m.memories(&at_agent("plain", None), &Default::default()).unwrap_err();
        assert_eq!(plain.code, crate::ErrorCode::InvalidInput);
        assert!(plain.message.starts_with("The agent plain has no memory: its definition (") && plain.message.ends_with("Add it there; a folder it already has is listed with the agents' memory folders, with its scope."), "{}", plain.message);
        for e in [&e, &plain] {
            assert!(!e.message.contains("`mneme") && !e.message.contains(" --"), "{}", e.message);
        }
    }

    #[test]
    fn an_agent_named_like_a_path_gets_no_memory_folder() {
        let t = tempfile::tempdir().unwrap();
        let home = t.path().join("home");
        let repo = t.path().join("repo");
        std::fs::create_dir_all(repo.join(".git")).unwrap();
        std::fs::create_dir_all(home.join(".ssh")).unwrap();
        let env = mneme_store::Environment::with_home(&home);
        // A cloned repository chooses the name; `memory: user` would resolve to ~/.ssh.
        write(&repo.join(".claude/agents/evil.md"), "---\nname: ../../.ssh\ndescription: e\nmemory: user\n---\nHi.");
        let m = Mneme::new(env, Arc::new(mneme_core::SystemClock));
        let req = ContextRequest { cwd: repo.clone(), ..ContextRequest::default() };
        let view = m.agents(&req).unwrap();
        let evil = view.agents.iter().find(|a| a.agent_type == "../../.ssh").unwrap();
        assert_eq!(evil.memory_dir, None);
        assert!(view.problems.iter().any(|p| p.reason.contains("outside agent-memory")), "{:?}", view.problems);
        for scope in [None, Some(AgentScope::User), Some(AgentScope::Project)] {
            let at = ContextRequest { agent: Some(AgentTarget { name: "../../.ssh".into(), scope }), ..req.clone() };
            let new = crate::NewMemoryRequest { name: "n".into(), description: "d".into(), kind: "user".into(), body: "x".into(), file_name: None };
            let e = m.create_memory(&at, &new).unwrap_err();
            assert!(e.message.contains("rename the agent"), "{}", e.message);
        }
        assert_eq!(std::fs::read_dir(home.join(".ssh")).unwrap().count(), 0, "nothing written into ~/.ssh");
    }
}
