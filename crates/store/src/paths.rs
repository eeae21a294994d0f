//! Where Claude Code 2.1.197 puts things for a project: whether auto memory is on and why,
//! the auto-memory folder, the project folders under `<config>/projects`, agent memory,
//! transcripts, session memory, and the per-project flags in the global config.
//!
//! Path strings are built with Node's POSIX `path.join`/`path.normalize` rules (not
//! [`std::path`]), because Claude Code compares and sanitizes the resulting strings, and `..`
//! or doubled slashes must fold exactly as they do in Node. Windows path rules are not
//! modelled.

use crate::env::Environment;
use crate::git;
use crate::settings::{json_type, syntax_problem, ParseProblem, SettingSource, Settings, SettingsError};
use mneme_core::sanitize::{long_name_prefix, sanitize_path};
use serde::Serialize;
use serde_json::Value;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;
use unicode_normalization::UnicodeNormalization;

/// The auto-memory folder's name inside a project folder.
pub const AUTO_MEM_DIRNAME: &str = "memory";
/// The index file in a memory folder.
pub const ENTRYPOINT_NAME: &str = "MEMORY.md";

/// `s` in Unicode's composed form (NFC), as Claude Code spells the paths it builds.
pub fn nfc(s: &str) -> String {
    s.nfc().collect()
}

fn lossy(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// Node's `normalizeString` for POSIX: folds `.`, `..` and empty segments. `..` at the start
/// survives only for relative paths.
fn normalize_segments(path: &str, allow_above_root: bool) -> String {
    let mut out: Vec<&str> = Vec::new();
    for seg in path.split('/') {
        match seg {
            "" | "." => {}
            ".." => {
                if out.last().is_some_and(|last| *last != "..") {
                    out.pop();
                } else if allow_above_root {
                    out.push("..");
                }
            }
            s => out.push(s),
        }
    }
    out.join("/")
}

/// Node's `path.posix.normalize`. Backslashes are ordinary characters.
pub fn node_normalize(path: &str) -> String {
    if path.is_empty() {
        return ".".to_string();
    }
    // Most paths the loader builds are already normal; copying one is a tenth of the cost of
    // splitting and joining it (the 2,000-rule context normalizes several paths per file).
    if is_node_normal(path) {
        return path.to_string();
    }
    normalize_by_segments(path)
}

fn normalize_by_segments(path: &str) -> String {
    let absolute = path.starts_with('/');
    let trailing = path.ends_with('/');
    let mut out = normalize_segments(path, !absolute);
    if out.is_empty() {
        if absolute {
            return "/".to_string();
        }
        return if trailing { "./".to_string() } else { ".".to_string() };
    }
    if trailing {
        out.push('/');
    }
    if absolute {
        format!("/{out}")
    } else {
        out
    }
}

/// Whether [`node_normalize`] would return `path` unchanged: no empty segment (`//`) except a
/// leading `/` or a trailing one, and no `.` or `..` segment.
fn is_node_normal(path: &str) -> bool {
    let inner = path.strip_prefix('/').unwrap_or(path);
    let inner = inner.strip_suffix('/').unwrap_or(inner);
    // One pass over the bytes: `split('/')` searches for each separator afresh, which showed in
    // profiles of a 30-level folder chain whose every path is checked here.
    let normal_segment = |seg: &[u8]| !matches!(seg, b"" | b"." | b"..");
    !inner.is_empty() && inner.as_bytes().split(|&b| b == b'/').all(normal_segment)
}

/// Node's `path.posix.join`: non-empty parts joined with `/`, then normalized.
pub fn node_join(parts: &[&str]) -> String {
    let joined = parts.iter().filter(|p| !p.is_empty()).copied().collect::<Vec<_>>().join("/");
    if joined.is_empty() {
        ".".to_string()
    } else {
        node_normalize(&joined)
    }
}

/// `projectRoot` / `originalCwd`: the real path of the launch folder (symlinks resolved),
/// or the folder as given when that fails. Spelled as on disk: the real binaries (2.1.197 and
/// 2.1.332, Linux) read an NFD-named folder's own files and derive its memory folder from the
/// decomposed letters; only `CLAUDE_CONFIG_DIR` is NFC-normalized.
pub fn project_root(cwd: &Path) -> PathBuf {
    realpath(cwd).unwrap_or_else(|_| cwd.to_path_buf())
}

/// `realpath(3)` in three system calls whatever the depth: open the path without reading it
/// (`O_PATH`) and ask the kernel which file that descriptor names (`/proc/self/fd/N`).
/// `fs::canonicalize` calls `readlink` on every component — 31 calls for a folder 30 levels
/// down. Falls back to `fs::canonicalize` where `/proc` is not mounted or the answer is not
/// a plain absolute path (a deleted folder reads back with a ` (deleted)` suffix).
pub fn realpath(p: &Path) -> std::io::Result<PathBuf> {
    use std::os::fd::AsRawFd;
    use std::os::unix::ffi::OsStringExt;
    use std::os::unix::fs::OpenOptionsExt;
    let opened = fs::OpenOptions::new().read(true).custom_flags(rustix::fs::OFlags::PATH.bits() as i32).open(p)?;
    // A buffer of PATH_MAX: `fs::read_link` starts at 256 bytes and asks again, larger, for a
    // longer answer (a second call for a folder 30 levels down).
    let link = rustix::fs::readlink(format!("/proc/self/fd/{}", opened.as_raw_fd()), Vec::with_capacity(4096))
        .map(|c| PathBuf::from(std::ffi::OsString::from_vec(c.into_bytes())));
    match link {
        Ok(real) if real.is_absolute() && !real.to_string_lossy().ends_with(" (deleted)") => Ok(real),
        _ => fs::canonicalize(p),
    }
}

/// Why auto memory is on or off, in the order Claude Code 2.1.197 checks (`isAutoMemoryEnabled`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "reason", rename_all = "camelCase")]
pub enum AutoMemoryReason {
    /// `CLAUDE_CODE_SAFE_MODE` is truthy (or `--safe-mode`): off.
    SafeMode,
    /// `CLAUDE_CODE_DISABLE_AUTO_MEMORY` is truthy: off.
    DisabledByEnv,
    /// `CLAUDE_CODE_DISABLE_AUTO_MEMORY` is set to a false value, which forces it on and skips
    /// every later check.
    EnabledByEnv,
    /// `CLAUDE_CODE_SIMPLE` (`--bare`) is truthy: off.
    SimpleMode,
    /// `CLAUDE_CODE_REMOTE` is truthy with neither `CLAUDE_CODE_REMOTE_MEMORY_DIR` nor
    /// `CLAUDE_COWORK_MEMORY_PATH_OVERRIDE`: nowhere to keep memory, so off.
    RemoteWithoutStorage,
    /// `autoMemoryEnabled` in the merged settings decides.
    Setting {
        /// The value.
        enabled: bool,
        /// The highest-priority source that sets it.
        source: Option<SettingSource>,
    },
    /// Nothing says otherwise: on.
    Default,
}

impl AutoMemoryReason {
    /// Whether auto memory is on.
    pub fn enabled(self) -> bool {
        match self {
            AutoMemoryReason::SafeMode
            | AutoMemoryReason::DisabledByEnv
            | AutoMemoryReason::SimpleMode
            | AutoMemoryReason::RemoteWithoutStorage => false,
            AutoMemoryReason::EnabledByEnv | AutoMemoryReason::Default => true,
            AutoMemoryReason::Setting { enabled, .. } => enabled,
        }
    }

    /// A sentence the UI can show to explain the state.
    pub fn explanation(self) -> &'static str {
        match self {
            AutoMemoryReason::SafeMode => "Off: Claude Code runs in safe mode (CLAUDE_CODE_SAFE_MODE or --safe-mode).",
            AutoMemoryReason::DisabledByEnv => "Off: the environment variable CLAUDE_CODE_DISABLE_AUTO_MEMORY is set.",
            AutoMemoryReason::EnabledByEnv => {
                "On: CLAUDE_CODE_DISABLE_AUTO_MEMORY is set to a false value, which overrides every setting."
            }
            AutoMemoryReason::SimpleMode => "Off: Claude Code runs in bare mode (CLAUDE_CODE_SIMPLE or --bare).",
            AutoMemoryReason::RemoteWithoutStorage => {
                "Off: this is a remote session (CLAUDE_CODE_REMOTE) with no memory storage configured."
            }
            AutoMemoryReason::Setting { enabled: true, .. } => "On: autoMemoryEnabled is true in the settings.",
            AutoMemoryReason::Setting { enabled: false, source: Some(SettingSource::Project) } => {
                "Off: this project's checked-in .claude/settings.json sets autoMemoryEnabled to false."
            }
            AutoMemoryReason::Setting { enabled: false, .. } => "Off: autoMemoryEnabled is false in the settings.",
            AutoMemoryReason::Default => "On: auto memory is on by default.",
        }
    }
}

impl std::fmt::Display for AutoMemoryReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.explanation())
    }
}

/// The rule of Claude Code 2.1.197's `isAutoMemoryEnabled` that decides here. The
/// session-only `/toggle-memory` switch and the server-side per-model deny list cannot be seen
/// from disk.
pub fn auto_memory_reason(env: &Environment, settings: &Settings) -> AutoMemoryReason {
    if env.is_truthy("CLAUDE_CODE_SAFE_MODE") {
        return AutoMemoryReason::SafeMode;
    }
    if env.is_truthy("CLAUDE_CODE_DISABLE_AUTO_MEMORY") {
        return AutoMemoryReason::DisabledByEnv;
    }
    if env.is_defined_falsy("CLAUDE_CODE_DISABLE_AUTO_MEMORY") {
        return AutoMemoryReason::EnabledByEnv;
    }
    if env.is_truthy("CLAUDE_CODE_SIMPLE") {
        return AutoMemoryReason::SimpleMode;
    }
    let remote_dir = env.var("CLAUDE_CODE_REMOTE_MEMORY_DIR").is_some_and(|v| !v.is_empty());
    // The cowork override is read through Claude Code's env schema, which trims it.
    let cowork = env.var("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE").is_some_and(|v| !v.trim().is_empty());
    if env.is_truthy("CLAUDE_CODE_REMOTE") && !remote_dir && !cowork {
        return AutoMemoryReason::RemoteWithoutStorage;
    }
    match settings.auto_memory_enabled() {
        Some(enabled) => AutoMemoryReason::Setting { enabled, source: settings.effective_source("autoMemoryEnabled") },
        None => AutoMemoryReason::Default,
    }
}

/// Claude Code 2.1.197's `isAutoMemoryEnabled` and the rule that decided, for the UI.
pub fn auto_memory_status(env: &Environment, settings: &Settings) -> (bool, AutoMemoryReason) {
    let reason = auto_memory_reason(env, settings);
    (reason.enabled(), reason)
}

/// Whether auto memory is on (see [`auto_memory_status`] for why).
pub fn auto_memory_enabled(env: &Environment, settings: &Settings) -> bool {
    auto_memory_reason(env, settings).enabled()
}

/// Claude Code's `validateMemoryPath` (2.1.197). Returns the normalized folder without a
/// trailing separator, or `None` when the value must be ignored:
/// empty; with `expand_tilde`, a `~/` or `~\` whose remainder normalizes to `.`, `..` or
/// starts with `../` (home or above); after `normalize` and stripping trailing `/` and `\`:
/// not absolute, shorter than 3 UTF-16 units, a drive root like `C:`, a UNC-looking `\\` or
/// `//` start, or a NUL. A bare `~` is never expanded and so is not absolute.
pub fn validate_memory_path(raw: &str, expand_tilde: bool, env: &Environment) -> Option<PathBuf> {
    if raw.is_empty() {
        return None;
    }
    let mut candidate = raw.to_string();
    if expand_tilde && (raw.starts_with("~/") || raw.starts_with("~\\")) {
        let rest = &raw[2..];
        let rest_norm = node_normalize(if rest.is_empty() { "." } else { rest });
        if rest_norm == "." || rest_norm == ".." || rest_norm.starts_with("../") || rest_norm.starts_with("..\\") {
            return None;
        }
        candidate = node_join(&[&lossy(&env.home), rest]);
    }
    let normalized = node_normalize(&candidate);
    let normalized = normalized.trim_end_matches(['/', '\\']);
    let drive_root = {
        let b = normalized.as_bytes();
        b.len() == 2 && b[0].is_ascii_alphabetic() && b[1] == b':'
    };
    if !normalized.starts_with('/')
        || normalized.encode_utf16().count() < 3
        || drive_root
        || normalized.starts_with("\\\\")
        || normalized.starts_with("//")
        || normalized.contains('\0')
    {
        return None;
    }
    Some(PathBuf::from(nfc(normalized)))
}

/// Where the auto-memory folder location came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "source", rename_all = "camelCase")]
pub enum AutoMemSource {
    /// `CLAUDE_COWORK_MEMORY_PATH_OVERRIDE`.
    EnvOverride,
    /// The `autoMemoryDirectory` setting, from this source.
    Setting(SettingSource),
    /// `<memory base>/projects/<sanitized root>/memory`.
    Default,
}

/// A project's auto-memory folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AutoMemDir {
    /// The folder, without a trailing separator.
    pub dir: PathBuf,
    /// Which rule chose it.
    pub source: AutoMemSource,
}

impl AutoMemDir {
    /// `getAutoMemEntrypoint`: `<dir>/MEMORY.md`.
    pub fn entrypoint(&self) -> PathBuf {
        self.dir.join(ENTRYPOINT_NAME)
    }

    /// The team-memory folder, `<dir>/team`.
    pub fn team_dir(&self) -> PathBuf {
        self.dir.join("team")
    }

    /// The folder as Claude Code stores it: with exactly one trailing `/`.
    pub fn prefix(&self) -> String {
        format!("{}/", lossy(&self.dir))
    }

    /// `isAutoMemPath`: after normalizing, `path` starts with [`Self::prefix`] (a plain string
    /// prefix test, so a sibling like `memory-old` does not match).
    pub fn contains(&self, path: &Path) -> bool {
        node_normalize(&lossy(path)).starts_with(&self.prefix())
    }
}

/// `getAutoMemPath`: `CLAUDE_COWORK_MEMORY_PATH_OVERRIDE` (no `~` expansion), else the
/// `autoMemoryDirectory` setting (see [`Settings::auto_memory_directory`], `~/` expanded),
/// else `<memory base>/projects/<sanitize(canonical git root or project_root)>/memory`.
/// An invalid override or setting falls through to the next rule; a setting is taken from
/// the first source that defines it, even if that value is then rejected.
pub fn resolve_auto_mem_dir(env: &Environment, settings: &Settings, project_root: &Path) -> AutoMemDir {
    resolve_with_setting(env, settings.auto_memory_directory(), project_root, true)
}

/// [`resolve_auto_mem_dir`] for a release's profile: the oldest releases take the setting from
/// every source but the project's, the next only from the policy, a flag file and the user's
/// settings (as [`resolve_auto_mem_dir_untrusted`]), the newest only from the sources
/// `--setting-sources` enables ([`Settings::auto_memory_directory_from_enabled`]).
pub fn resolve_auto_mem_dir_for(env: &Environment, settings: &Settings, project_root: &Path, profile: &mneme_core::Profile) -> AutoMemDir {
    use mneme_core::versions::MemoryDirSources;
    let setting = if profile.memory_dir_sources == MemoryDirSources::AllButProject {
        settings.auto_memory_directory_without_project()
    } else if profile.memory_dir_sources == MemoryDirSources::UserLevel {
        settings.auto_memory_directory_untrusted()
    } else if profile.memory_dir_from_enabled_sources {
        settings.auto_memory_directory_from_enabled()
    } else {
        settings.auto_memory_directory()
    };
    resolve_with_setting(env, setting, project_root, profile.cowork_override_trimmed)
}

/// [`resolve_auto_mem_dir`] as Claude Code computes it before the folder is trusted, when local
/// and project settings are not consulted.
pub fn resolve_auto_mem_dir_untrusted(env: &Environment, settings: &Settings, project_root: &Path) -> AutoMemDir {
    resolve_with_setting(env, settings.auto_memory_directory_untrusted(), project_root, true)
}

/// `trim_override`: from 2.1.228 the override is read through Claude Code's env schema, which
/// trims it (and a blank one is unset); before, as it is, so a leading space made it relative
/// and ignored, and a trailing one stayed in the folder's name.
fn resolve_with_setting(
    env: &Environment,
    setting: Option<(SettingSource, String)>,
    project_root: &Path,
    trim_override: bool,
) -> AutoMemDir {
    let override_value = env.var("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE").map(|raw| if trim_override { raw.trim() } else { raw });
    if let Some(dir) = override_value.filter(|v| !v.is_empty()).and_then(|raw| validate_memory_path(raw, false, env)) {
        return AutoMemDir { dir, source: AutoMemSource::EnvOverride };
    }
    if let Some((source, raw)) = setting {
        if let Some(dir) = validate_memory_path(&raw, true, env) {
            return AutoMemDir { dir, source: AutoMemSource::Setting(source) };
        }
    }
    AutoMemDir { dir: default_auto_mem_dir(env, project_root), source: AutoMemSource::Default }
}

/// The default memory folder, ignoring overrides.
pub fn default_auto_mem_dir(env: &Environment, project_root: &Path) -> PathBuf {
    let projects = node_join(&[&lossy(&env.memory_base()), "projects"]);
    let dir = node_join(&[&projects, &sanitize_path(&memory_anchor(project_root)), AUTO_MEM_DIRNAME]);
    PathBuf::from(nfc(&dir))
}

/// `getAutoMemBase`: the canonical git root of `project_root`, else `project_root` itself.
/// All worktrees of one repository share it.
pub fn memory_anchor(project_root: &Path) -> String {
    // As spelled on disk: an NFD-named folder's memory key is made from its decomposed letters
    // (`cafe--repo`), as the real binaries do on Linux.
    let base = git::find_canonical_git_root(project_root).unwrap_or_else(|| project_root.to_path_buf());
    lossy(&base)
}

/// `findProjectDir`: the existing folder under `<config>/projects` for `path`. Tries the exact
/// sanitized name, then (for names over 200 characters, whose hash suffix depends on the
/// runtime that wrote them) any folder starting with the 200-character prefix and `-`.
pub fn find_project_dir(env: &Environment, path: &Path) -> Option<PathBuf> {
    find_project_dirs(env, path).into_iter().next()
}

/// `findProjectDirs`: every existing folder for `path`, the exact name first, then prefix
/// matches in directory order.
pub fn find_project_dirs(env: &Environment, path: &Path) -> Vec<PathBuf> {
    let projects = env.projects_dir();
    let raw = lossy(path);
    let exact = projects.join(sanitize_path(&raw));
    let mut out = Vec::new();
    if fs::read_dir(&exact).is_ok() {
        out.push(exact.clone());
    }
    let Some(prefix) = long_name_prefix(&raw) else { return out };
    let Ok(entries) = fs::read_dir(&projects) else { return out };
    for entry in entries.filter_map(Result::ok) {
        let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
        let name = entry.file_name();
        if is_dir && name.to_string_lossy().starts_with(&prefix) {
            let candidate = projects.join(&name);
            if candidate != exact {
                out.push(candidate);
            }
        }
    }
    out
}

/// Where a sub-agent keeps memory (`memory:` in its definition).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, serde::Deserialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "lowercase")]
pub enum AgentScope {
    /// `<memory base>/agent-memory/<agent>`: shared by all projects.
    User,
    /// `<cwd>/.claude/agent-memory/<agent>`: checked in.
    Project,
    /// `<cwd>/.claude/agent-memory-local/<agent>`: this machine only.
    Local,
}

impl AgentScope {
    /// The frontmatter value: `user`, `project` or `local`.
    pub fn as_str(self) -> &'static str {
        match self {
            AgentScope::User => "user",
            AgentScope::Project => "project",
            AgentScope::Local => "local",
        }
    }

    /// Parses the frontmatter value `user`, `project` or `local`.
    pub fn from_name(name: &str) -> Option<AgentScope> {
        match name {
            "user" => Some(AgentScope::User),
            "project" => Some(AgentScope::Project),
            "local" => Some(AgentScope::Local),
            _ => None,
        }
    }
}

/// Why an agent type cannot name a memory folder of its own, if it cannot: a definition's
/// `name:` is the repository's to choose, and one with a path separator or a `..` would put the
/// folder anywhere (`../../.ssh`). Mneme neither lists nor opens such a folder.
pub fn agent_type_problem(agent_type: &str) -> Option<String> {
    let name = agent_type.replace(':', "-");
    let bad = name.is_empty()
        || name == "."
        || name == ".."
        || name.contains(['/', '\\', '\0'])
        || name.chars().any(char::is_control);
    bad.then(|| {
        format!(
            "the agent name {agent_type:?} is not a folder name (it is empty, `.` or `..`, or holds a slash, a backslash or a control character), so its memory folder would lie outside agent-memory; rename the agent in its definition"
        )
    })
}

/// `getAgentMemoryDir`: an agent's memory folder (no trailing separator). Only colons in the
/// agent type are replaced (`plugin:agent` → `plugin-agent`). Local scope moves to
/// `<remote dir>/projects/<sanitized root>/agent-memory-local/<agent>` when
/// `CLAUDE_CODE_REMOTE_MEMORY_DIR` is set.
pub fn agent_memory_dir(
    env: &Environment,
    scope: AgentScope,
    agent_type: &str,
    cwd: &Path,
    project_root: &Path,
) -> PathBuf {
    let name = agent_type.replace(':', "-");
    let cwd = lossy(cwd);
    let dir = match scope {
        AgentScope::User => node_join(&[&lossy(&env.memory_base()), "agent-memory", &name]),
        AgentScope::Project => node_join(&[&cwd, ".claude", "agent-memory", &name]),
        AgentScope::Local => match env.var("CLAUDE_CODE_REMOTE_MEMORY_DIR").filter(|d| !d.is_empty()) {
            Some(remote) => node_join(&[
                remote,
                "projects",
                &sanitize_path(&memory_anchor(project_root)),
                "agent-memory-local",
                &name,
            ]),
            None => node_join(&[&cwd, ".claude", "agent-memory-local", &name]),
        },
    };
    PathBuf::from(dir)
}

/// `getProjectDir(cwd)`: `<config home>/projects/<sanitize(cwd)>`, where a session started in
/// `cwd` keeps its transcripts. Pass the realpath'd launch folder ([`project_root`]); unlike
/// memory, this is not moved to the git root.
pub fn transcript_dir(env: &Environment, cwd: &Path) -> PathBuf {
    PathBuf::from(node_join(&[&lossy(&env.projects_dir()), &sanitize_path(&lossy(cwd))]))
}

/// Whether `s` is a session id (`validateUuid`: a UUID, any case).
pub fn is_session_id(s: &str) -> bool {
    let groups: Vec<&str> = s.split('-').collect();
    groups.len() == 5
        && groups
            .iter()
            .zip([8, 4, 4, 4, 12])
            .all(|(g, len)| g.len() == len && g.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// The session-memory notes of one session: `<transcript dir of cwd>/<session>/session-memory/summary.md`.
/// `None` when `session_id` is not a UUID, so a crafted id cannot escape the folder.
pub fn session_memory_path(env: &Environment, cwd: &Path, session_id: &str) -> Option<PathBuf> {
    is_session_id(session_id)
        .then(|| transcript_dir(env, cwd).join(session_id).join("session-memory").join("summary.md"))
}

/// The key Claude Code uses for a project in the global config (`~/.claude.json`
/// `projects`): the canonical git root of the launch folder, else the folder, normalized.
pub fn project_config_key(original_cwd: &Path) -> String {
    let base = git::find_canonical_git_root(original_cwd).unwrap_or_else(|| original_cwd.to_path_buf());
    node_normalize(&lossy(&base))
}

/// Reads the global config (`~/.claude.json`, or `$CLAUDE_CONFIG_DIR/.claude.json`).
/// `Ok(None)` when it does not exist.
///
/// The file grows with every project Claude Code has opened (a megabyte is common), and one
/// context asks it several questions (settings' `env`, trust, external includes): parsing it
/// each time was most of a context's time at that size. So the last parse is kept, keyed by
/// what `fstat` says of the file read (inode, size, modification and change times): any write
/// moves the change time, which nothing can set back. File times tick coarsely (a few
/// milliseconds), so two writes of the same size within one tick look alike; as git does for
/// its index, a parse is kept only when the file was already a second old when it was read.
pub fn read_global_config(env: &Environment) -> Result<Option<Arc<Value>>, SettingsError> {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    type Key = (PathBuf, u64, u64, u64, i64, i64, i64, i64);
    static LAST: Mutex<Option<(Key, Arc<Value>)>> = Mutex::new(None);
    let path = env.global_config_path();
    let shown = crate::settings::shown_path(env, &path);
    let read_error = |source| SettingsError::Read { path: path.clone(), shown: shown.clone(), source };
    let key_of = |meta: &fs::Metadata| -> Key {
        (path.clone(), meta.dev(), meta.ino(), meta.size(), meta.mtime(), meta.mtime_nsec(), meta.ctime(), meta.ctime_nsec())
    };
    // With a parse kept, one `stat` of the path answers an unchanged file (an open, `fstat`
    // and close otherwise). A changed or missing file falls through to the open below, whose
    // own `fstat` keys what is read.
    if let Some((known, value)) = LAST.lock().unwrap_or_else(PoisonError::into_inner).as_ref() {
        if fs::metadata(&path).is_ok_and(|meta| key_of(&meta) == *known) {
            return Ok(Some(Arc::clone(value)));
        }
    }
    let mut file = match crate::open::open_no_wait(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(read_error(source)),
    };
    let meta = file.metadata().map_err(read_error)?;
    let key = key_of(&meta);
    let mut bytes = Vec::with_capacity(crate::open::capacity_for(meta.len()));
    // Through `take`: `File::read_to_end` would `fstat` and `lseek` again to size its buffer,
    // which the `fstat` above has already done.
    (&mut file).take(u64::MAX).read_to_end(&mut bytes).map_err(read_error)?;
    let text = String::from_utf8_lossy(&bytes);
    let body = text.strip_prefix('\u{FEFF}').unwrap_or(&text);
    match mneme_core::js_json::parse_str(body) {
        Ok(v @ Value::Object(_)) => {
            let v = Arc::new(v);
            let settled = meta.modified().ok().and_then(|m| m.elapsed().ok()).is_some_and(|age| age >= Duration::from_secs(1));
            if settled {
                *LAST.lock().unwrap_or_else(PoisonError::into_inner) = Some((key, Arc::clone(&v)));
            }
            Ok(Some(v))
        }
        Ok(other) => Err(ParseProblem::NotAnObject(json_type(&other)).into_error(&path, shown)),
        Err(e) => Err(syntax_problem(body, &e).into_error(&path, shown)),
    }
}

/// The problem with the global config, if it cannot be read; `None` when it is fine or absent.
pub fn global_config_error(env: &Environment) -> Option<SettingsError> {
    read_global_config(env).err()
}

/// JavaScript truthiness of a JSON value.
fn js_truthy(v: Option<&Value>) -> bool {
    match v {
        None | Some(Value::Null) => false,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64().is_some_and(|f| f != 0.0 && !f.is_nan()),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Array(_) | Value::Object(_)) => true,
    }
}

fn project_flag(config: &Value, key: &str, flag: &str) -> bool {
    js_truthy(config.get("projects").and_then(|p| p.get(key)).and_then(|p| p.get(flag)))
}

/// Whether `@include`s that leave the working folder are allowed from project and local
/// CLAUDE.md files: `projects[<key>].hasClaudeMdExternalIncludesApproved` in the global config,
/// where the key is the canonical git root (else the launch folder) as
/// [`project_config_key`] computes it. A missing or unreadable config means no.
pub fn external_includes_approved(env: &Environment, canonical_root_or_cwd: &Path) -> bool {
    let key = node_normalize(&lossy(canonical_root_or_cwd));
    matches!(read_global_config(env), Ok(Some(cfg)) if project_flag(&cfg, &key, "hasClaudeMdExternalIncludesApproved"))
}

/// Whether Claude Code 2.1.197 treats an interactive session in `cwd` as trusted (the trust
/// dialog was accepted): `CLAUDE_CODE_SANDBOXED` is truthy, or the global config has
/// `hasTrustDialogAccepted` for the project key or for `cwd` or any folder above it.
/// A trust accepted for the home folder lasts only for that session and cannot be seen here.
/// `claude -p` always counts as trusted. A running session is always trusted, so this tells
/// the UI whether the trust dialog is still ahead (see
/// [`Settings::auto_memory_directory_untrusted`]).
pub fn workspace_trusted(env: &Environment, cwd: &Path) -> bool {
    if env.is_truthy("CLAUDE_CODE_SANDBOXED") {
        return true;
    }
    let Ok(Some(cfg)) = read_global_config(env) else { return false };
    if project_flag(&cfg, &project_config_key(cwd), "hasTrustDialogAccepted") {
        return true;
    }
    let mut dir = node_normalize(&lossy(cwd));
    loop {
        if project_flag(&cfg, &dir, "hasTrustDialogAccepted") {
            return true;
        }
        let parent = node_normalize(&format!("{dir}/.."));
        if parent == dir {
            return false;
        }
        dir = parent;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_already_normal_shortcut_answers_what_the_segment_walk_answers() {
        let cases = [
            "/", "//", "///a", "a", "a/", "/a", "/a/", "a//b", "/a/b/", "./a", "a/.", "a/./b", "../a", "a/..",
            "/a/../b", "..", ".", "./", "/.", "/..", "a/b/c.md", "/a/.b/c..d/...", "/a/b\\c", "a//", "/a//",
            "~/x.md", "/tmp/Repo/x.md",
        ];
        for p in cases {
            assert_eq!(node_normalize(p), normalize_by_segments(p), "{p:?}");
        }
        assert_eq!(node_normalize("/a/.b/c..d/..."), "/a/.b/c..d/...");
        assert_eq!(node_normalize("/a//b/./c/../d/"), "/a/b/d/");
    }

    #[test]
    fn realpath_agrees_with_canonicalize_through_links_and_refuses_what_is_missing() {
        let t = tempfile::tempdir().unwrap();
        let real = fs::canonicalize(t.path()).unwrap().join("real/deep/er");
        fs::create_dir_all(&real).unwrap();
        std::os::unix::fs::symlink(real.parent().unwrap(), t.path().join("link")).unwrap();
        let via_link = t.path().join("link/er");
        assert_eq!(realpath(&via_link).unwrap(), fs::canonicalize(&via_link).unwrap());
        assert_eq!(realpath(&via_link).unwrap(), real);
        let file = real.join("f.md");
        fs::write(&file, "x").unwrap();
        assert_eq!(realpath(&t.path().join("link/er/f.md")).unwrap(), file);
        assert!(realpath(&t.path().join("missing/x")).is_err());
        assert_eq!(project_root(&t.path().join("missing")), t.path().join("missing"));
    }
    use crate::settings::SettingsFile;
    use serde_json::json;

    fn env() -> Environment {
        Environment::with_home("/home/u")
    }

    #[test]
    fn node_normalize_matches_node() {
        // Expected values were produced with `node -e 'path.posix.normalize(x)'`.
        for (input, expect) in [
            ("", "."),
            ("/", "/"),
            ("//", "/"),
            ("//a/b", "/a/b"),
            ("/a/b/..", "/a"),
            ("/a/b/../", "/a/"),
            ("/a//b/./c/", "/a/b/c/"),
            ("/..", "/"),
            ("/../a", "/a"),
            ("a/..", "."),
            ("a/../", "./"),
            ("..", ".."),
            ("../..", "../.."),
            ("a/../../b", "../b"),
            ("./", "./"),
            ("foo/..", "."),
            ("foo/../..", ".."),
            ("\\\\srv\\x", "\\\\srv\\x"),
            ("/a/.../b", "/a/.../b"),
            ("/a/..b/c", "/a/..b/c"),
            ("/x/y/../../..", "/"),
        ] {
            assert_eq!(node_normalize(input), expect, "{input:?}");
        }
        assert_eq!(node_join(&["/h", "../x"]), "/x");
        assert_eq!(node_join(&["", ""]), ".");
        assert_eq!(node_join(&["/h/", "/a/"]), "/h/a/");
    }

    #[test]
    fn validate_memory_path_rules() {
        let e = env();
        // (raw, expand_tilde, expected)
        let cases: &[(&str, bool, Option<&str>)] = &[
            ("", true, None),
            ("~", true, None),
            ("~/", true, None),
            ("~\\", true, None),
            ("~/.", true, None),
            ("~/..", true, None),
            // Claude Code's own quirk: a remainder that normalizes to "./" slips through and
            // names the home folder itself (verified against Node's path module).
            ("~/./", true, Some("/home/u")),
            ("~/foo/../", true, Some("/home/u")),
            ("~//", true, Some("/home/u")),
            ("~/\\", true, Some("/home/u")),
            ("~/foo/..", true, None),
            ("~/foo/../..", true, None),
            ("~/../other", true, None),
            ("~/..\\x", true, None),
            ("~/mem", true, Some("/home/u/mem")),
            ("~/mem/", true, Some("/home/u/mem")),
            ("~/a/../mem", true, Some("/home/u/mem")),
            ("~\\mem", true, Some("/home/u/mem")),
            ("~\\a\\b", true, Some("/home/u/a\\b")),
            ("~/mem", false, None),
            ("~user/mem", true, None),
            ("relative/dir", true, None),
            ("./x", true, None),
            ("../x", true, None),
            ("/", true, None),
            ("/a", true, None),
            ("/a/", true, None),
            ("/ab", true, Some("/ab")),
            ("/é", true, None),
            ("/😀", true, Some("/😀")),
            ("/a/b/..", true, None),
            ("/a/b/../c", true, Some("/a/c")),
            ("/tmp/mem///", true, Some("/tmp/mem")),
            ("/tmp/mem\\\\", true, Some("/tmp/mem")),
            ("/tmp/./x/../mem", true, Some("/tmp/mem")),
            ("//server/share", true, Some("/server/share")),
            ("///ab", true, Some("/ab")),
            ("/..", true, None),
            ("~/a\\..", true, Some("/home/u/a\\..")),
            ("\\\\server\\share", true, None),
            ("C:\\", true, None),
            ("C:", true, None),
            ("/tmp/a\0b", true, None),
            ("/tmp/My Memory/😀 notes", false, Some("/tmp/My Memory/😀 notes")),
            ("/tmp/cafe\u{301}", false, Some("/tmp/café")),
        ];
        for (raw, tilde, expect) in cases {
            assert_eq!(validate_memory_path(raw, *tilde, &e), expect.map(PathBuf::from), "{raw:?} tilde={tilde}");
        }
    }

    fn settings(files: Vec<(SettingSource, Value)>) -> Settings {
        let files =
            files.into_iter().map(|(s, v)| SettingsFile::from_value(s, format!("/{}", s.as_str()), v)).collect();
        Settings::from_files(files)
    }

    #[test]
    fn auto_memory_status_rules() {
        let off = settings(vec![(SettingSource::Project, json!({"autoMemoryEnabled": false}))]);
        let on = settings(vec![(SettingSource::User, json!({"autoMemoryEnabled": true}))]);
        let none = Settings::default();
        use AutoMemoryReason::*;
        type Case<'a> = (Vec<(&'a str, &'a str)>, &'a Settings, AutoMemoryReason);
        let cases: Vec<Case> = vec![
            (vec![], &none, Default),
            (vec![], &off, Setting { enabled: false, source: Some(SettingSource::Project) }),
            (vec![], &on, Setting { enabled: true, source: Some(SettingSource::User) }),
            (vec![("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "1")], &on, DisabledByEnv),
            (vec![("CLAUDE_CODE_DISABLE_AUTO_MEMORY", " TRUE ")], &on, DisabledByEnv),
            (vec![("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "yes")], &on, DisabledByEnv),
            (vec![("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "0")], &off, EnabledByEnv),
            (vec![("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "off"), ("CLAUDE_CODE_SIMPLE", "1")], &off, EnabledByEnv),
            (
                vec![("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "maybe")],
                &off,
                Setting { enabled: false, source: Some(SettingSource::Project) },
            ),
            (vec![("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "")], &none, Default),
            (vec![("CLAUDE_CODE_SIMPLE", "true")], &on, SimpleMode),
            (vec![("CLAUDE_CODE_SIMPLE", "0")], &none, Default),
            (vec![("CLAUDE_CODE_REMOTE", "1")], &on, RemoteWithoutStorage),
            (vec![("CLAUDE_CODE_REMOTE", "1"), ("CLAUDE_CODE_REMOTE_MEMORY_DIR", "")], &on, RemoteWithoutStorage),
            (vec![("CLAUDE_CODE_REMOTE", "1"), ("CLAUDE_CODE_REMOTE_MEMORY_DIR", "/r")], &none, Default),
            (
                vec![("CLAUDE_CODE_REMOTE", "1"), ("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE", "  ")],
                &none,
                RemoteWithoutStorage,
            ),
            (vec![("CLAUDE_CODE_REMOTE", "1"), ("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE", "/m")], &none, Default),
            (vec![("CLAUDE_CODE_SAFE_MODE", "1"), ("CLAUDE_CODE_DISABLE_AUTO_MEMORY", "0")], &on, SafeMode),
        ];
        for (vars, s, expect) in cases {
            let e = vars.iter().fold(env(), |e, (k, v)| e.set_var(k, *v));
            let (enabled, why) = auto_memory_status(&e, s);
            assert_eq!(why, expect, "{vars:?}");
            assert_eq!((enabled, auto_memory_enabled(&e, s)), (expect.enabled(), expect.enabled()));
            assert_eq!(why.to_string(), expect.explanation());
        }
    }

    #[test]
    fn auto_mem_dir_precedence() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let project = root.join("My Repo.v2");
        fs::create_dir_all(&project).unwrap();
        let e =
            Environment::with_home(root.join("home")).set_var("CLAUDE_CONFIG_DIR", root.join("cfg").to_str().unwrap());
        let default = root.join("cfg/projects").join(sanitize_path(project.to_str().unwrap())).join("memory");
        let user = (SettingSource::User, json!({"autoMemoryDirectory": "~/user-mem"}));
        let project_s = (SettingSource::Project, json!({"autoMemoryDirectory": "/proj-mem"}));
        let local_bad = (SettingSource::Local, json!({"autoMemoryDirectory": "~/.."}));
        let policy = (SettingSource::Policy, json!({"autoMemoryDirectory": "/policy-mem"}));

        /// (env vars, settings files, trusted, expected folder, expected source)
        type Case = (Vec<(&'static str, &'static str)>, Vec<(SettingSource, Value)>, bool, PathBuf, AutoMemSource);
        let cases: Vec<Case> = vec![
            (vec![], vec![], false, default.clone(), AutoMemSource::Default),
            (
                vec![],
                vec![user.clone()],
                false,
                root.join("home/user-mem"),
                AutoMemSource::Setting(SettingSource::User),
            ),
            (
                vec![],
                vec![user.clone(), project_s.clone()],
                false,
                root.join("home/user-mem"),
                AutoMemSource::Setting(SettingSource::User),
            ),
            (
                vec![],
                vec![user.clone(), project_s.clone()],
                true,
                PathBuf::from("/proj-mem"),
                AutoMemSource::Setting(SettingSource::Project),
            ),
            (vec![], vec![user.clone(), local_bad.clone()], true, default.clone(), AutoMemSource::Default),
            (
                vec![],
                vec![user.clone(), local_bad.clone()],
                false,
                root.join("home/user-mem"),
                AutoMemSource::Setting(SettingSource::User),
            ),
            (
                vec![],
                vec![user.clone(), policy.clone()],
                false,
                PathBuf::from("/policy-mem"),
                AutoMemSource::Setting(SettingSource::Policy),
            ),
            (
                vec![("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE", "/cowork/mem/")],
                vec![policy.clone()],
                false,
                PathBuf::from("/cowork/mem"),
                AutoMemSource::EnvOverride,
            ),
            (
                vec![("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE", "~/mem")],
                vec![policy.clone()],
                false,
                PathBuf::from("/policy-mem"),
                AutoMemSource::Setting(SettingSource::Policy),
            ),
            (vec![("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE", "/")], vec![], false, default.clone(), AutoMemSource::Default),
            (
                vec![("CLAUDE_CODE_REMOTE_MEMORY_DIR", "/remote/")],
                vec![],
                false,
                PathBuf::from("/remote/projects").join(sanitize_path(project.to_str().unwrap())).join("memory"),
                AutoMemSource::Default,
            ),
        ];
        for (vars, files, trusted, dir, source) in cases {
            let e = vars.iter().fold(e.clone(), |e, (k, v)| e.set_var(k, *v));
            let s = settings(files);
            let got = if trusted {
                resolve_auto_mem_dir(&e, &s, &project)
            } else {
                resolve_auto_mem_dir_untrusted(&e, &s, &project)
            };
            assert_eq!(got, AutoMemDir { dir, source }, "{vars:?} trusted={trusted}");
        }
        let d = resolve_auto_mem_dir(&e, &Settings::default(), &project);
        assert_eq!(d.entrypoint(), default.join("MEMORY.md"));
        assert_eq!(d.team_dir(), default.join("team"));
        assert_eq!(d.prefix(), format!("{}/", default.display()));
        assert!(d.contains(&default.join("a/b.md")));
        assert!(d.contains(&default.join("x/../MEMORY.md")));
        assert!(!d.contains(&default));
        assert!(!d.contains(&PathBuf::from(format!("{}-old/x.md", default.display()))));

        // The override read trimmed (2.1.228 on) or as it is (before): a leading space made it
        // relative, so ignored; a trailing one stayed in the folder's name.
        let old = mneme_core::versions::behaviours(mneme_core::ClaudeVersion::new(2, 1, 227));
        let new = mneme_core::versions::behaviours(mneme_core::ClaudeVersion::new(2, 1, 228));
        for (value, before, after) in [
            (" /cowork/mem ", default.clone(), PathBuf::from("/cowork/mem")),
            ("/cowork/mem \n", PathBuf::from("/cowork/mem \n"), PathBuf::from("/cowork/mem")),
            ("   ", default.clone(), default.clone()),
        ] {
            let e = e.clone().set_var("CLAUDE_COWORK_MEMORY_PATH_OVERRIDE", value);
            assert_eq!(resolve_auto_mem_dir_for(&e, &Settings::default(), &project, &old).dir, before, "{value:?} before");
            assert_eq!(resolve_auto_mem_dir_for(&e, &Settings::default(), &project, &new).dir, after, "{value:?} after");
        }
    }

    #[test]
    fn default_dir_uses_canonical_git_root_and_long_names() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let repo = root.join("repo");
        let sub = repo.join("sub dir");
        fs::create_dir_all(&sub).unwrap();
        fs::create_dir_all(repo.join(".git")).unwrap();
        let e = Environment::with_home(root.join("home"));
        assert_eq!(
            default_auto_mem_dir(&e, &sub),
            root.join("home/.claude/projects").join(sanitize_path(repo.to_str().unwrap())).join("memory")
        );
        assert_eq!(
            transcript_dir(&e, &sub),
            root.join("home/.claude/projects").join(sanitize_path(sub.to_str().unwrap()))
        );

        let long = root.join("x".repeat(120)).join("y".repeat(120));
        fs::create_dir_all(&long).unwrap();
        let name = sanitize_path(long.to_str().unwrap());
        assert!(name.len() > 200);
        let dir = default_auto_mem_dir(&e, &long);
        assert_eq!(dir.parent().unwrap().file_name().unwrap().to_str().unwrap(), name);
    }

    #[test]
    fn project_root_resolves_symlinks_and_normalizes() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let real = root.join("cafe\u{301} 😀");
        fs::create_dir_all(&real).unwrap();
        #[cfg(unix)]
        {
            std::os::unix::fs::symlink(&real, root.join("link")).unwrap();
            assert_eq!(project_root(&root.join("link")), root.join("cafe\u{301} 😀"));
        }
        assert_eq!(project_root(&root.join("missing/cafe\u{301}")), root.join("missing/cafe\u{301}"));
    }

    #[test]
    fn find_project_dirs_exact_and_prefix() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let e = Environment::with_home(root.join("home"));
        let projects = e.projects_dir();
        let short = Path::new("/work/short");
        assert_eq!(find_project_dir(&e, short), None, "no projects dir at all");
        fs::create_dir_all(projects.join("-work-short")).unwrap();
        assert_eq!(find_project_dir(&e, short), Some(projects.join("-work-short")));

        // A 250-character path: another runtime wrote it with a different hash suffix.
        let long = format!("/work/{}", "segment-".repeat(31));
        assert!(long.len() >= 250);
        let prefix = long_name_prefix(&long).unwrap();
        assert_eq!(find_project_dirs(&e, Path::new(&long)), Vec::<PathBuf>::new());
        fs::create_dir_all(projects.join(format!("{prefix}bunhash1"))).unwrap();
        fs::write(projects.join(format!("{prefix}file")), "").unwrap();
        assert_eq!(find_project_dir(&e, Path::new(&long)), Some(projects.join(format!("{prefix}bunhash1"))));
        let exact = projects.join(sanitize_path(&long));
        fs::create_dir_all(&exact).unwrap();
        let all = find_project_dirs(&e, Path::new(&long));
        assert_eq!(all.len(), 2);
        assert_eq!(all[0], exact, "exact name first");
        // A short path never prefix-matches.
        fs::create_dir_all(projects.join("-work-short-other")).unwrap();
        assert_eq!(find_project_dirs(&e, short).len(), 1);
    }

    #[test]
    fn agent_types_that_would_leave_the_agent_memory_folder() {
        for bad in ["", ".", "..", "../../.ssh", "a/b", "a\\b", "x\0y", "line\nbreak", "/abs"] {
            assert!(agent_type_problem(bad).is_some(), "{bad:?} must be refused");
        }
        for good in ["reviewer", "plugin:agent", "my plugin:x", "a..b", ".hidden", "…", "ревьюер"] {
            assert_eq!(agent_type_problem(good), None, "{good:?} is a plain folder name");
        }
    }

    #[test]
    fn agent_memory_dirs() {
        let e = Environment::with_home("/home/u");
        let cwd = Path::new("/w/repo/sub");
        let root = Path::new("/nonexistent-root/repo");
        let cases = [
            (AgentScope::User, "reviewer", "/home/u/.claude/agent-memory/reviewer"),
            (AgentScope::User, "plugin:a:b", "/home/u/.claude/agent-memory/plugin-a-b"),
            (AgentScope::Project, "reviewer", "/w/repo/sub/.claude/agent-memory/reviewer"),
            (AgentScope::Local, "my plugin:x", "/w/repo/sub/.claude/agent-memory-local/my plugin-x"),
        ];
        for (scope, agent, expect) in cases {
            assert_eq!(agent_memory_dir(&e, scope, agent, cwd, root), PathBuf::from(expect));
        }
        let remote = e.clone().set_var("CLAUDE_CODE_REMOTE_MEMORY_DIR", "/remote");
        assert_eq!(
            agent_memory_dir(&remote, AgentScope::Local, "a:b", cwd, root),
            PathBuf::from("/remote/projects/-nonexistent-root-repo/agent-memory-local/a-b")
        );
        assert_eq!(
            agent_memory_dir(&remote, AgentScope::User, "a", cwd, root),
            PathBuf::from("/remote/agent-memory/a")
        );
        assert_eq!(AgentScope::from_name("local"), Some(AgentScope::Local));
        assert_eq!(AgentScope::from_name("team"), None);
    }

    #[test]
    fn session_memory_paths() {
        let e = Environment::with_home("/h").set_var("CLAUDE_CONFIG_DIR", "/cfg");
        let id = "0f8fad5b-d9cb-469f-a165-70867728950E";
        assert_eq!(
            session_memory_path(&e, Path::new("/w/my repo"), id),
            Some(PathBuf::from(format!("/cfg/projects/-w-my-repo/{id}/session-memory/summary.md")))
        );
        for bad in ["../../etc", "0f8fad5b-d9cb-469f-a165-70867728950", "0f8fad5b-d9cb-469f-a165-70867728950g", ""] {
            assert_eq!(session_memory_path(&e, Path::new("/w"), bad), None, "{bad}");
        }
    }

    #[test]
    fn the_global_config_is_parsed_again_only_when_the_file_changed() {
        let t = tempfile::tempdir().unwrap();
        let e = Environment::with_home(t.path());
        let cfg = t.path().join(".claude.json");
        let old = std::time::SystemTime::now() - Duration::from_secs(60);
        let write = |body: &str| {
            fs::write(&cfg, body).unwrap();
            fs::File::options().write(true).open(&cfg).unwrap().set_modified(old).unwrap();
        };
        write(r#"{"n": 1}"#);
        let first = read_global_config(&e).unwrap().unwrap();
        let again = read_global_config(&e).unwrap().unwrap();
        assert!(Arc::ptr_eq(&first, &again), "an unchanged, settled file is not parsed again");
        // Same size, same (old) modification time, same inode: the change time still moved
        // (past the file system's clock tick, which the sleep makes sure of).
        std::thread::sleep(Duration::from_millis(50));
        write(r#"{"n": 2}"#);
        assert_eq!(read_global_config(&e).unwrap().unwrap()["n"], 2);
        // A file written just now is parsed on every read, since a second write within the
        // same clock tick could keep every time and the size.
        fs::write(&cfg, r#"{"n": 3}"#).unwrap();
        let fresh = read_global_config(&e).unwrap().unwrap();
        assert_eq!(fresh["n"], 3);
        assert!(!Arc::ptr_eq(&fresh, &read_global_config(&e).unwrap().unwrap()));
        fs::write(&cfg, "[1]").unwrap();
        assert!(read_global_config(&e).is_err());
        fs::remove_file(&cfg).unwrap();
        assert!(read_global_config(&e).unwrap().is_none());
    }

    #[test]
    fn global_config_flags() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let e = Environment::with_home(root.join("home"));
        let repo = root.join("repo");
        fs::create_dir_all(repo.join("sub")).unwrap();
        fs::create_dir_all(repo.join(".git")).unwrap();
        let repo_s = repo.to_str().unwrap();
        assert!(!external_includes_approved(&e, &repo));
        assert!(!workspace_trusted(&e, &repo.join("sub")));
        assert!(global_config_error(&e).is_none());

        fs::create_dir_all(root.join("home")).unwrap();
        let cfg = root.join("home/.claude.json");
        fs::write(&cfg, json!({"projects": {repo_s: {"hasClaudeMdExternalIncludesApproved": true, "hasTrustDialogAccepted": true}}}).to_string()).unwrap();
        assert_eq!(project_config_key(&repo.join("sub")), repo_s);
        assert!(external_includes_approved(&e, &repo));
        assert!(!external_includes_approved(&e, &repo.join("sub")), "keyed by the root");
        assert!(workspace_trusted(&e, &repo.join("sub")), "an ancestor is trusted");
        assert!(workspace_trusted(&e, &repo));
        assert!(!workspace_trusted(&e, &root));

        fs::write(&cfg, json!({"projects": {repo_s: {"hasClaudeMdExternalIncludesApproved": "yes", "hasTrustDialogAccepted": false}}}).to_string()).unwrap();
        assert!(external_includes_approved(&e, &repo), "JS truthiness");
        assert!(!workspace_trusted(&e, &repo));
        assert!(workspace_trusted(&e.clone().set_var("CLAUDE_CODE_SANDBOXED", "1"), &repo));

        fs::write(&cfg, "{\"projects\": {").unwrap();
        assert!(!external_includes_approved(&e, &repo));
        let err = global_config_error(&e).unwrap().to_string();
        assert!(err.starts_with("~/.claude.json is not valid JSON at line 1"), "{err}");

        // CLAUDE_CONFIG_DIR moves the global config inside it.
        let e2 = e.clone().set_var("CLAUDE_CONFIG_DIR", root.join("cfg").to_str().unwrap());
        fs::create_dir_all(root.join("cfg")).unwrap();
        fs::write(
            root.join("cfg/.claude.json"),
            json!({"projects": {repo_s: {"hasClaudeMdExternalIncludesApproved": true}}}).to_string(),
        )
        .unwrap();
        assert!(external_includes_approved(&e2, &repo));
    }
}
