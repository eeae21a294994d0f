//! What a Claude Code session started in a folder decides about its auto memory: the settings
//! it reads, the `env` blocks it applies to itself, whether auto memory is on and which folder
//! holds it.
//!
//! Every part of Mneme that reads or writes a project's memory (the screens, extraction,
//! dreams, team sync) asks here, so none of them picks a folder, or writes while memory is
//! off, where Claude Code would not: a `CLAUDE_CODE_DISABLE_AUTO_MEMORY` or
//! `CLAUDE_COWORK_MEMORY_PATH_OVERRIDE` in a settings file's `env` block counts exactly as it
//! does in the shell.

use crate::paths::{self, AutoMemDir, AutoMemoryReason};
use crate::settings::{self, EnabledSources, Settings};
use crate::settings_env::{self, EnvOverride};
use crate::{claude_install, git, Environment};
use mneme_core::Profile;
use std::path::{Path, PathBuf};

/// One session's view of its auto memory.
#[derive(Debug)]
pub struct SessionMemory {
    /// The folder the session works in (the launch folder's project root).
    pub root: PathBuf,
    pub settings: Settings,
    /// The variables the settings files' `env` blocks set.
    pub overrides: Vec<EnvOverride>,
    /// The environment after those blocks: what the session itself sees.
    pub env: Environment,
    pub enabled: bool,
    pub reason: AutoMemoryReason,
    pub dir: AutoMemDir,
}

impl SessionMemory {
    /// For a session started in `root` (already the project root) by the release `profile`
    /// describes, with the setting sources `--setting-sources` enables and a `--settings` file.
    pub fn resolve(
        env: &Environment,
        root: &Path,
        profile: &Profile,
        sources: EnabledSources,
        flag_file: Option<&Path>,
    ) -> SessionMemory {
        let settings = settings::load_settings_with_local(env, root, &local_settings_dirs(env, root, profile), sources, flag_file)
            .for_release(profile);
        let overrides = settings_env::overrides(env, &settings, profile.settings_env_ignored, profile.repo_env_ignored);
        let effective = settings_env::apply(env, &overrides);
        let (enabled, reason) = paths::auto_memory_status(&effective, &settings);
        let dir = paths::resolve_auto_mem_dir_for(&effective, &settings, root, profile);
        SessionMemory { root: root.to_path_buf(), settings, overrides, env: effective, enabled, reason, dir }
    }

    /// For a session the installed Claude Code starts in `cwd` with no flags: what extraction,
    /// dreams and team sync act on.
    pub fn for_cwd(env: &Environment, cwd: &Path) -> SessionMemory {
        let root = paths::project_root(cwd);
        SessionMemory::resolve(env, &root, &claude_install::installed_profile(env), EnabledSources::all(), None)
    }
}

/// The folders whose `.claude/settings.local.json` a session started in `cwd` reads, lowest
/// priority first. From 2.1.211: the working folder's own, then the "store root"'s, which wins:
/// the canonical git root (a linked worktree's main checkout), unless there is none, it is the
/// working folder or the home folder, or it (or its `.git` or `.claude`) is not owned by the
/// user running Claude Code; never a folder in between. Before, only the working folder's.
pub fn local_settings_dirs(env: &Environment, cwd: &Path, profile: &Profile) -> Vec<PathBuf> {
    let own = vec![cwd.to_path_buf()];
    if !profile.local_settings_from_repo_root {
        return own;
    }
    let Some(root) = git::find_canonical_git_root(cwd) else { return own };
    let home = std::fs::canonicalize(&env.home).unwrap_or_else(|_| env.home.clone());
    if root == cwd || root == home || !owned_by_user(&root) {
        return own;
    }
    vec![cwd.to_path_buf(), root]
}

/// The ownership check Claude Code makes before it keeps consent in a repository root: the
/// folder, its `.git` and (when present) its `.claude` belong to the user running it.
fn owned_by_user(root: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let me = rustix::process::geteuid().as_raw();
        let owned = |p: &Path, required: bool| match std::fs::metadata(p) {
            Ok(m) => m.uid() == me,
            Err(_) => !required,
        };
        owned(root, true) && owned(&root.join(".git"), true) && owned(&root.join(".claude"), false)
    }
    #[cfg(not(unix))]
    {
        let _ = root;
        true
    }
}

