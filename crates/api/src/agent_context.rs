//! What a sub-agent sees of its memory: the section Claude Code appends to the agent's own
//! system prompt (`<agent prompt>\n\n<section>`) when auto memory is on and the agent declares
//! `memory:`. The section is Claude Code's instructions (naming the folder, with a note for the
//! scope) followed by the agent's MEMORY.md, cut as Claude Code cuts it, or a line saying it is
//! empty.
//!
//! The instructions are Claude Code's prose, which Mneme does not ship. They are assembled by
//! the binary from many pieces, so instead of cutting them out of it, Mneme asks the installed
//! Claude Code itself, once per release: it runs it offline against the loopback stub
//! (`mneme_verify`) in a throwaway home with four probe agents (one per scope with a known
//! MEMORY.md, and one whose MEMORY.md is empty), makes its main loop start them through the
//! Agent tool, and reads each probe's section out of the sub-agent's request. What varies (the
//! folder, the MEMORY.md part) is then filled in by Mneme; the rest is the release's text,
//! cached in Mneme's data dir (`claude-code/<version>/agent_memory.json`).

use crate::{ApiError, ContextRequest, Mneme, RenderedFor};
use mneme_core::text;
use mneme_store::claude_install;
use mneme_store::paths::AgentScope;
use mneme_verify::{CaptureError, Run, Stub};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

/// Stands for the agent's memory folder (with its trailing separator) in a cached section.
const DIR_MARK: &str = "\u{1}MNEME_AGENT_MEMORY_DIR\u{1}";
/// A probe's MEMORY.md: where the instructions end and Mneme's part begins.
const INDEX_MARK: &str = "MNEME-PROBE-INDEX-5e1f";
/// The task every probe sub-agent is given.
const TASK: &str = "MNEME-PROBE-TASK-5e1f: reply with one word.";
const PROBE_TIMEOUT: Duration = Duration::from_secs(90);

/// An agent's memory section as Claude Code would put it in the agent's system prompt.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct AgentContextView {
    pub agent_type: String,
    pub scope: AgentScope,
    pub memory_dir: PathBuf,
    /// The agent's MEMORY.md, and whether it exists.
    pub index_path: PathBuf,
    pub index_exists: bool,
    /// MEMORY.md was cut to fit (200 lines / 25,000 characters).
    pub truncated: bool,
    /// Claude Code adds the section only while auto memory is on.
    pub auto_memory_enabled: bool,
    pub auto_memory_reason: String,
    /// The section exactly as sent; `None` when auto memory is off or Claude Code's text could
    /// not be read (`unavailable` says why).
    pub section: Option<String>,
    /// The MEMORY.md part alone (what Mneme computes itself), always present.
    pub index_part: Option<String>,
    pub chars: usize,
    pub tokens: usize,
    /// Where the instructions came from (`Claude Code 2.1.197 at /path`).
    pub text_from: Option<String>,
    pub unavailable: Option<String>,
    pub claude_code: RenderedFor,
}

/// One release's section, with the folder and MEMORY.md left out.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Template {
    /// Per scope (`user`, `project`, `local`): the section up to MEMORY.md's content.
    prefix: BTreeMap<String, String>,
    /// What stands in for an empty or missing MEMORY.md.
    empty: String,
}

impl Template {
    fn render(&self, scope: AgentScope, dir: &str, index: Option<&str>) -> Option<String> {
        let prefix = self.prefix.get(scope.as_str())?;
        Some(format!("{}{}", prefix.replace(DIR_MARK, dir), index.unwrap_or(&self.empty)))
    }
}

impl Mneme {
    /// The memory section `req.agent`'s system prompt carries from `req.cwd`.
    pub fn agent_context(&self, req: &ContextRequest) -> Result<AgentContextView, ApiError> {
        let target = req
            .agent
            .as_ref()
            .ok_or_else(|| ApiError::invalid("Name the agent whose memory to show (--agent NAME; `mneme agents` lists them)."))?;
        let r = self.resolve(req)?;
        let agent = self.agent_memory(&r.cwd, &r.settings, target)?;
        let index_path = agent.dir.join("MEMORY.md");
        // Opened without waiting: a FIFO planted as MEMORY.md would hold the call for good.
        let raw = mneme_store::open::read_plain_to_string(&index_path).ok();
        // Claude Code embeds the index only when it holds more than whitespace, trimmed (the
        // CLAUDE.md loader of releases before 2.1.83 did not trim; this section always did).
        let cut = raw.as_deref().map(text::js_trim).filter(|t| !t.is_empty()).map(|t| {
            text::truncate_entrypoint_with(t, r.options.profile.truncation_note)
        });
        let mut view = AgentContextView {
            agent_type: agent.agent_type.clone(),
            scope: agent.scope,
            memory_dir: agent.dir.clone(),
            index_exists: index_path.is_file(),
            index_path,
            truncated: cut.as_ref().is_some_and(|c| c.was_truncated()),
            auto_memory_enabled: r.auto_memory.enabled,
            auto_memory_reason: r.auto_memory.reason.clone(),
            section: None,
            index_part: cut.as_ref().map(|c| c.content.clone()),
            chars: 0,
            tokens: 0,
            text_from: None,
            unavailable: None,
            claude_code: r.claude_code.clone(),
        };
        if !r.auto_memory.enabled {
            view.unavailable = Some(format!("Auto memory is off here, so Claude Code gives {} no memory section: {}", agent.agent_type, r.auto_memory.reason));
            return Ok(view);
        }
        match self.agent_template(&r.claude_code) {
            Ok((template, from)) => {
                let dir = format!("{}/", agent.dir.to_string_lossy());
                view.section = template.render(agent.scope, &dir, cut.as_ref().map(|c| c.content.as_str()));
                if view.index_part.is_none() {
                    view.index_part = Some(template.empty.clone());
                }
                view.text_from = Some(from);
            }
            Err(why) => view.unavailable = Some(why.to_string()),
        }
        if let Some(s) = &view.section {
            view.chars = s.encode_utf16().count();
            view.tokens = text::estimate_tokens(s);
        }
        Ok(view)
    }

    /// The section's fixed text for the release `rendered` names, from that release's binary
    /// (cached), or why it cannot be had.
    fn agent_template(&self, rendered: &RenderedFor) -> Result<(Template, String), AgentTextError> {
        let install = claude_install::detect(&self.env).ok_or(AgentTextError::NotInstalled)?;
        let release = install.version.ok_or_else(|| AgentTextError::UnknownRelease {
            path: install.path.clone(),
            why: install.version_error.clone().map(|e| e.to_string()).unwrap_or_default(),
        })?;
        let version = release.to_string();
        if version != rendered.version {
            return Err(AgentTextError::OtherRelease { installed: version, wanted: rendered.version.clone() });
        }
        let from = format!("Claude Code {version} at {}", install.path.display());
        let cache = self.env.data_dir().join("claude-code").join(safe(&version)).join("agent_memory.json");
        let cached = || std::fs::read(&cache).ok().and_then(|b| serde_json::from_slice::<Template>(&b).ok());
        let failed_key = (cache.clone(), install.path.clone());
        let failed_lately = || {
            let mut failed = FAILED.lock().expect("probe failures");
            failed.retain(|_, (at, _)| at.elapsed() < RETRY_AFTER);
            failed.get(&failed_key).map(|(_, why)| AgentTextError::FailedLately(why.clone()))
        };
        if let Some(t) = cached() {
            return Ok((t, from));
        }
        if let Some(e) = failed_lately() {
            return Err(e);
        }
        // One probe per release at a time, across Mneme's threads and processes: the UI asks for
        // every agent at once, and again on every change on disk. Whoever waited finds the
        // text, or the failure, the probe that held the lock left.
        let _one_at_a_time = mneme_store::file_lock::FileLock::take(&cache.with_extension("lock")).ok();
        if let Some(t) = cached() {
            return Ok((t, from));
        }
        if let Some(e) = failed_lately() {
            return Err(e);
        }
        let profile = mneme_core::versions::profile_for(release).profile;
        let template = probe(&install.path, &self.env, &profile).map_err(|source| {
            let e = AgentTextError::Probe { version: version.clone(), source };
            FAILED.lock().expect("probe failures").insert(failed_key.clone(), (Instant::now(), e.to_string()));
            e
        })?;
        // The cache only saves the next call a run; failing to write it is not an error.
        if let Some(parent) = cache.parent() {
            if std::fs::create_dir_all(parent).is_ok() {
                let _ = mneme_store::atomic::write_atomic(&cache, &serde_json::to_vec_pretty(&template).expect("json"));
            }
        }
        Ok((template, from))
    }
}

/// How long a failed probe is remembered (in memory, per release and binary) before Claude Code
/// is asked again: a probe costs up to a minute and a half, and one that failed mostly fails
/// again, so it is not rerun for every agent and every change on disk.
const RETRY_AFTER: Duration = Duration::from_secs(10 * 60);

/// A probe's release and binary: its cache file and the `claude` it ran.
type ProbeKey = (PathBuf, PathBuf);

/// Probes that failed lately: when, and why.
static FAILED: LazyLock<Mutex<HashMap<ProbeKey, (Instant, String)>>> = LazyLock::new(Default::default);

fn safe(version: &str) -> String {
    version.chars().filter(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '+')).collect()
}

/// Why the section's fixed text could not be had; shown to the user in its place.
#[derive(Debug, thiserror::Error)]
enum AgentTextError {
    #[error(
        "Claude Code is not installed, and the instructions in this section are its own text, which Mneme reads from it. \
         Install Claude Code (npm install -g @anthropic-ai/claude-code) to see them; the MEMORY.md part below is exact."
    )]
    NotInstalled,
    #[error("Could not read the release of Claude Code at {}: {why}", path.display())]
    UnknownRelease { path: PathBuf, why: String },
    #[error("The instructions are Claude Code {wanted}'s own text, but the Claude Code installed is {installed}; install {wanted} or leave out --claude-version.")]
    OtherRelease { installed: String, wanted: String },
    #[error("Could not read the agent memory text from Claude Code {version}: {source}")]
    Probe { version: String, source: ProbeError },
    #[error("{0} (Mneme asks Claude Code again {minutes} minutes after that attempt.)", minutes = RETRY_AFTER.as_secs() / 60)]
    FailedLately(String),
}

/// What went wrong running the probe agents.
#[derive(Debug, thiserror::Error)]
enum ProbeError {
    #[error("{0}")]
    Io(#[from] std::io::Error),
    #[error("{0}")]
    Capture(#[from] CaptureError),
    /// The managed policy would send the run elsewhere; it was not started.
    #[error("{0}")]
    Refused(String),
    #[error("its sub-agent {name} sent no request with its memory section ({requests} requests; the end of its stderr: {stderr})")]
    NoSection { name: String, requests: usize, stderr: String },
    #[error("the {0} section does not hold its MEMORY.md")]
    NoIndex(String),
    #[error("the empty-index section does not follow the same instructions")]
    EmptyDiffers,
    #[error("the empty-index text came out empty")]
    EmptyText,
}

/// Runs Claude Code at `bin` in a throwaway home with the four probe agents and reads their
/// sections (see the module comment).
fn probe(bin: &Path, user_env: &mneme_store::Environment, profile: &mneme_core::Profile) -> Result<Template, ProbeError> {
    let user_vars = &user_env.vars;
    // Private, as the check's sandbox is: nothing Claude Code writes there during the run is
    // another local user's to read.
    let sandbox = tempfile::Builder::new().prefix("mneme-agent-probe-").permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700)).tempdir()?;
    // Canonical, since Claude Code prints the folder it resolves.
    let root = sandbox.path().canonicalize()?;
    let home = root.join("home");
    let config = home.join(".claude");
    let project = root.join("project");
    let probes: [(&str, AgentScope, bool); 4] = [
        ("mneme-probe-user", AgentScope::User, true),
        ("mneme-probe-project", AgentScope::Project, true),
        ("mneme-probe-local", AgentScope::Local, true),
        ("mneme-probe-empty", AgentScope::User, false),
    ];
    // The folder Claude Code reads its managed policy from is the user's: the one source the
    // throwaway home does not replace.
    let env = mneme_store::Environment { managed_dir: user_env.managed_dir.clone(), ..mneme_store::Environment::with_home(&home) }
        .set_var("CLAUDE_CONFIG_DIR", config.to_string_lossy());
    let mut dirs = BTreeMap::new();
    for (name, scope, with_index) in probes {
        let file = project.join(".claude/agents").join(format!("{name}.md"));
        std::fs::create_dir_all(file.parent().expect("parent"))?;
        let def = format!("---\nname: {name}\ndescription: Mneme probe\nmemory: {}\n---\n\nPROMPT-{name}\n", scope.as_str());
        std::fs::write(&file, def)?;
        let dir = mneme_store::paths::agent_memory_dir(&env, scope, name, &project, &project);
        std::fs::create_dir_all(&dir)?;
        std::fs::write(dir.join("MEMORY.md"), if with_index { INDEX_MARK } else { "" })?;
        dirs.insert(name, format!("{}/", dir.to_string_lossy()));
    }
    let stub = Stub::start_launching(probes.iter().map(|p| p.0.to_string()).collect(), TASK.into())?;
    let mut vars: BTreeMap<String, String> = BTreeMap::new();
    // Only what running needs: nothing of the user's setup may change the release's text.
    for name in ["PATH", "LANG"] {
        if let Some(v) = user_vars.get(name) {
            vars.insert(name.into(), v.clone());
        }
    }
    vars.insert("HOME".into(), home.to_string_lossy().into_owned());
    vars.insert("CLAUDE_CONFIG_DIR".into(), config.to_string_lossy().into_owned());
    for (name, sub) in [("XDG_CACHE_HOME", "cache"), ("XDG_CONFIG_HOME", "xdg-config"), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"), ("TMPDIR", "tmp")] {
        let dir = root.join(sub);
        std::fs::create_dir_all(&dir)?;
        vars.insert(name.into(), dir.to_string_lossy().into_owned());
    }
    let flag = root.join("flag-settings.json");
    let offline = crate::verify::offline_flag_env(&env, &project, profile, &stub).map_err(ProbeError::Refused)?;
    std::fs::write(&flag, crate::verify::flag_settings_with(offline).to_string())?;
    let run = Run {
        bin: bin.to_path_buf(),
        cwd: project.clone(),
        vars,
        args: vec!["--strict-mcp-config".into(), "--no-session-persistence".into(), "--settings".into(), flag.to_string_lossy().into_owned()],
        prompt: "Start the probe agents.".into(),
        timeout: PROBE_TIMEOUT,
    };
    let captured = stub.capture(&run)?;
    let requests = stub.sub_agent_requests();
    let section_of = |name: &str| -> Result<String, ProbeError> {
        let opening = format!("PROMPT-{name}\n\n");
        requests
            .iter()
            .filter_map(|r| r.get("system"))
            .flat_map(system_texts)
            .find_map(|t| t.find(&opening).map(|at| t[at + opening.len()..].to_string()))
            .map(|s| s.replace(&dirs[name], DIR_MARK))
            .ok_or_else(|| ProbeError::NoSection {
                name: name.to_string(),
                requests: requests.len(),
                stderr: captured.stderr_tail.trim().to_string(),
            })
    };
    let mut prefix = BTreeMap::new();
    let mut suffix = None;
    for (name, scope, with_index) in probes {
        if !with_index {
            continue;
        }
        let section = section_of(name)?;
        let at = section.find(INDEX_MARK).ok_or_else(|| ProbeError::NoIndex(name.to_string()))?;
        suffix = Some(section[at + INDEX_MARK.len()..].to_string());
        prefix.insert(scope.as_str().to_string(), section[..at].to_string());
    }
    // What follows the section in the system prompt (the same for every sub-agent) is not
    // part of it.
    let suffix = suffix.unwrap_or_default();
    let empty_section = section_of("mneme-probe-empty")?;
    let user_prefix = &prefix["user"];
    let empty = empty_section
        .strip_prefix(user_prefix.as_str())
        .and_then(|rest| rest.strip_suffix(suffix.as_str()))
        .ok_or(ProbeError::EmptyDiffers)?
        .to_string();
    if empty.is_empty() {
        return Err(ProbeError::EmptyText);
    }
    Ok(Template { prefix, empty })
}

/// The text blocks of a request's `system` (a string or a list of blocks).
fn system_texts(system: &serde_json::Value) -> Vec<String> {
    match system {
        serde_json::Value::String(s) => vec![s.clone()],
        serde_json::Value::Array(blocks) => blocks.iter().filter_map(|b| b.get("text")?.as_str().map(str::to_string)).collect(),
        _ => Vec::new(),
    }
}
