//! "What Claude sees": the four-layer context for a folder, exactly as Claude Code would send
//! it, with per-file provenance; and what it would attach after files are read.

use crate::{ApiError, Mneme, RenderedFor};
use mneme_claudemd::{AgentsMd, LoadOptions, LoadedFile, Sources};
use mneme_core::versions::ClaudeVersion;
use mneme_core::{text, Layer};
use mneme_store::paths::{self, AutoMemSource, AutoMemoryReason};
use mneme_store::session::SessionMemory;
use mneme_store::settings::{self, EnabledSources, Settings};
use mneme_store::git;
use crate::context_cache::DependsOn;
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Which folder to look from, and the Claude Code flags that change what loads.
#[derive(Debug, Clone, Default)]
pub struct ContextRequest {
    /// The folder Claude Code would be started in.
    pub cwd: PathBuf,
    /// `--setting-sources` (comma list of user, project, local); `None` = all.
    pub setting_sources: Option<String>,
    /// `--add-dir` folders.
    pub add_dirs: Vec<PathBuf>,
    /// `--settings FILE` (flag settings).
    pub settings_file: Option<PathBuf>,
    /// The date to print (`YYYY-MM-DD`); `None` = today.
    pub date: Option<String>,
    /// Render as this Claude Code release does; `None` = the one installed, else the newest
    /// the matrix checks.
    pub claude_version: Option<ClaudeVersion>,
    /// Work on this sub-agent's memory folder instead of auto memory.
    pub agent: Option<crate::AgentTarget>,
}

/// Where auto memory lives for this folder and whether Claude Code would use it.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct AutoMemoryInfo {
    pub enabled: bool,
    /// Why it is on or off, in a sentence.
    pub reason: String,
    pub dir: PathBuf,
    /// `default`, `env:CLAUDE_COWORK_MEMORY_PATH_OVERRIDE` or `setting:<source>`.
    pub source: String,
    pub entrypoint_exists: bool,
    /// The settings file whose `env` block decided, when one did (a plugin's installer may
    /// have written it): `NAME="value" in the env block of PATH`.
    pub switched_by: Option<String>,
    /// Why the index Claude Code loads at start is not MEMORY.md's text although auto memory is
    /// on, when that is so, in a sentence: from 2.1.198 `CLAUDE_MEMORY_STORES` hands memory to
    /// per-turn recall and no index loads; from 2.1.122 `CLAUDE_COWORK_MEMORY_INDEX_CONTENT` is
    /// the index instead of the file.
    pub index_note: Option<String>,
}

/// A memory switch a settings file sets for Claude Code through its `env` block.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct EnvFromSettings {
    pub name: String,
    pub value: String,
    /// The settings file (`~/` for the home folder).
    pub file: String,
    /// The value the process environment had, which the file's wins over.
    pub process_value: Option<String>,
}

/// The variables that change what Claude Code loads or where it keeps memory.
const MEMORY_VARIABLES: &[&str] = &[
    "CLAUDE_CODE_DISABLE_AUTO_MEMORY",
    "CLAUDE_CODE_DISABLE_CLAUDE_MDS",
    "CLAUDE_CODE_SIMPLE",
    "CLAUDE_CODE_SAFE_MODE",
    "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE",
    "CLAUDE_CODE_REMOTE_MEMORY_DIR",
    "CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD",
    "CLAUDE_CODE_DISABLE_ATTACHMENTS",
    "CLAUDE_CONFIG_DIR",
    "CLAUDE_MEMORY_STORES",
    "CLAUDE_COWORK_MEMORY_INDEX_CONTENT",
];

/// One file in the context, with where it came from.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct ContextFile {
    pub path: PathBuf,
    pub layer: Layer,
    /// The file that `@include`d this one.
    pub parent: Option<PathBuf>,
    /// `paths:` globs of a conditional rule (lazy files only).
    pub globs: Option<Vec<String>>,
    pub is_rule: bool,
    pub bytes: usize,
    /// UTF-16 units of the loaded content, as Claude Code counts.
    pub chars: usize,
    pub tokens: usize,
    /// MEMORY.md was cut to fit.
    pub truncated: bool,
    /// Over Claude Code's advisory 40,000 characters.
    pub large: bool,
    /// The loaded text differs from the bytes on disk (frontmatter, comments, truncation).
    pub transformed: bool,
    /// A managed file that a Cowork session of a release from 2.1.304 does not send as the
    /// organization's policy, because the session's own account could have written it
    /// (docs/claude-code-versions.md, rows 87 and 88); `None` for every other file.
    pub unverified: Option<UnverifiedFile>,
}

/// Why Claude Code sends a managed file as unverified rather than as the organization's policy.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct UnverifiedFile {
    /// Who could have changed the file, in a sentence for the person reading the list.
    pub reason: String,
    /// The step of Claude Code's judgement that answered, for programs.
    pub because: mneme_claudemd::managed::CouldWrite,
}

/// A file Claude Code looked at but did not load, and why.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct SkippedEntry {
    pub path: PathBuf,
    pub layer: Layer,
    pub parent: Option<PathBuf>,
    pub reason: String,
    pub detail: mneme_claudemd::SkipReason,
}

/// The whole eager context for a folder.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct ContextView {
    pub cwd: PathBuf,
    /// Exactly the user-context block Claude Code sends as its first message.
    pub block: String,
    pub files: Vec<ContextFile>,
    pub skipped: Vec<SkippedEntry>,
    /// Rules with `paths:` that attach only when a matching file is touched.
    pub conditional: Vec<mneme_claudemd::ConditionalRule>,
    /// CLAUDE.md files in sub-folders that attach when something inside is read.
    pub nested_candidates: Vec<PathBuf>,
    pub auto_memory: AutoMemoryInfo,
    pub total_chars: usize,
    pub total_tokens: usize,
    /// Settings files that could not be read (reported, never overwritten).
    pub settings_problems: Vec<String>,
    /// Whose behaviours this follows.
    pub claude_code: RenderedFor,
    /// Memory switches that settings files set through their `env` blocks.
    pub env_from_settings: Vec<EnvFromSettings>,
}

/// What Claude Code would attach after reading some files.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct TouchedView {
    pub block: String,
    pub files: Vec<ContextFile>,
    /// Whose behaviours this follows.
    pub claude_code: RenderedFor,
}

/// The folder as releases that took the composed (NFC) spelling of their working folder saw
/// it. Where only the decomposed spelling exists, 2.1.84–2.1.159 did not start
/// (`refuse_missing`); older releases started all the same in the composed path, which holds
/// nothing, so only what lies outside it loads (the user's files, the memory folder named
/// after the composed path).
fn composed_cwd(cwd: PathBuf, claude_code: &RenderedFor, refuse_missing: bool) -> Result<PathBuf, ApiError> {
    let Some(text) = cwd.to_str() else { return Ok(cwd) };
    let composed = paths::nfc(text);
    if composed == text {
        return Ok(cwd);
    }
    let composed = PathBuf::from(composed);
    if composed.is_dir() || !refuse_missing {
        Ok(composed)
    } else {
        Err(ApiError::invalid(format!(
            "Claude Code {} does not start in {}: it looks for the folder under the composed (NFC) spelling of its name, and there is none. Rename the folder to its composed spelling, or update Claude Code (2.1.160 and later start in the folder as it is spelled).",
            claude_code.version,
            cwd.display()
        )))
    }
}

/// Everything resolved for one folder, shared by `context` and `touched`.
pub(crate) struct Resolved {
    pub cwd: PathBuf,
    pub settings: Settings,
    pub options: LoadOptions,
    pub auto_memory: AutoMemoryInfo,
    pub memdir: PathBuf,
    pub claude_code: RenderedFor,
    /// Memory switches set by settings files' `env` blocks.
    pub env_from_settings: Vec<EnvFromSettings>,
    /// Nothing is attached after reads: bare mode (`CLAUDE_CODE_SIMPLE`) or
    /// `CLAUDE_CODE_DISABLE_ATTACHMENTS`, after the settings' `env` blocks.
    pub no_attachments: bool,
    /// The environment the session sees: the process's, after the settings' `env` blocks.
    pub session_env: mneme_store::Environment,
}

impl Mneme {
    pub(crate) fn resolve(&self, req: &ContextRequest) -> Result<Resolved, ApiError> {
        if !req.cwd.is_dir() {
            return Err(ApiError::no_project_folder(&req.cwd));
        }
        let (claude_code, profile) = self.rendered_for(req.claude_version);
        let cwd = paths::project_root(&req.cwd);
        // Releases before 2.1.160 work in the composed (NFC) spelling of the folder they start in.
        let cwd = if profile.cwd_as_spelled { cwd } else { composed_cwd(cwd, &claude_code, profile.refuses_missing_composed_cwd)? };
        let enabled = match &req.setting_sources {
            Some(list) => EnabledSources::parse(list)?,
            None => EnabledSources::all(),
        };
        // Every release checked (2.1.100 to 2.1.332) stops at once when the file is missing,
        // so there is no session to show.
        if let Some(flag) = &req.settings_file {
            match settings::inline_settings_json(flag) {
                // Claude Code parses the JSON before it starts; a value it cannot parse stops it.
                Some(json) if mneme_core::js_json::parse_str(json).is_err() => {
                    return Err(ApiError::invalid(format!(
                        "Claude Code does not start with --settings {json}: it stops with \"Error: Invalid JSON provided to --settings\". Fix the JSON, or pass a settings file."
                    )));
                }
                Some(_) => {}
                None => {
                    let path = if flag.is_absolute() { flag.clone() } else { cwd.join(flag) };
                    if !path.exists() {
                        return Err(ApiError::not_found(format!(
                            "Claude Code does not start with --settings {}: it stops with \"Error: Settings file not found: {}\". Check the path.",
                            flag.display(),
                            path.display()
                        )));
                    }
                }
            }
        }
        // Settings are found through the process environment; then their `env` blocks apply,
        // as Claude Code applies them to itself, before anything about memory is decided
        // (`SessionMemory`, which extraction, dreams and team sync use too).
        let session = SessionMemory::resolve(&self.env, &cwd, &profile, enabled, req.settings_file.as_deref());
        if let Some((path, why)) = session.settings.policy_stopping_start(&profile) {
            return Err(ApiError::invalid(format!(
                "Claude Code {} does not start on this machine: its managed settings {} cannot be used. {why} Ask whoever manages this machine to fix or remove it.",
                claude_code.version,
                path.display()
            )));
        }
        let SessionMemory { settings, overrides, env: effective, enabled: enabled_auto, reason: why, dir: amd, .. } = session;
        let env = &effective;
        let set_by = |name: &str| {
            overrides.iter().find(|o| o.name == name).map(|o| {
                format!("{}={:?} in the env block of {}", o.name, o.value, settings::shown_path(&self.env, &o.path))
            })
        };
        let switched_by = match why {
            AutoMemoryReason::DisabledByEnv | AutoMemoryReason::EnabledByEnv => set_by("CLAUDE_CODE_DISABLE_AUTO_MEMORY"),
            AutoMemoryReason::SimpleMode => set_by("CLAUDE_CODE_SIMPLE"),
            AutoMemoryReason::SafeMode => set_by("CLAUDE_CODE_SAFE_MODE"),
            // Only releases before 2.1.195 take it from a settings file.
            AutoMemoryReason::RemoteWithoutStorage => set_by("CLAUDE_CODE_REMOTE"),
            _ => None,
        };
        // From 2.1.198 memory stores (any non-blank `CLAUDE_MEMORY_STORES`) replace the index
        // with per-turn recall, as the `tengu_moth_copse` flag does.
        let skips_index = enabled_auto
            && profile.memory_stores_skip_index
            && env.var("CLAUDE_MEMORY_STORES").is_some_and(|v| !v.trim().is_empty());
        // Where a variable comes from, without its value (these two may hold a whole index).
        let set_in = |name: &str| match overrides.iter().find(|o| o.name == name) {
            Some(o) => format!("in the env block of {}", settings::shown_path(&self.env, &o.path)),
            None => "in the environment".to_string(),
        };
        let index_skipped = skips_index.then(|| {
            format!(
                "MEMORY.md is not loaded at start: CLAUDE_MEMORY_STORES is set ({}), so Claude Code {} recalls memories turn by turn instead.",
                set_in("CLAUDE_MEMORY_STORES"),
                claude_code.version
            )
        });
        // From 2.1.122 a host (Claude's desktop app's cowork mode) may hand the index over as
        // text; an empty value means none.
        let given_index = env.var("CLAUDE_COWORK_MEMORY_INDEX_CONTENT").filter(|_| enabled_auto && profile.memory_index_from_env);
        let index_note = index_skipped.or_else(|| {
            given_index.map(|text| {
                let at = set_in("CLAUDE_COWORK_MEMORY_INDEX_CONTENT");
                if text.is_empty() {
                    format!("No index is loaded at start: CLAUDE_COWORK_MEMORY_INDEX_CONTENT is set and empty ({at}).")
                } else {
                    format!("Claude Code loads the text of CLAUDE_COWORK_MEMORY_INDEX_CONTENT ({at}) as the index, not MEMORY.md on disk.")
                }
            })
        });
        let canonical = git::find_canonical_git_root(&cwd).unwrap_or_else(|| cwd.clone());
        let entrypoint = amd.dir.join("MEMORY.md");
        let auto_memory = AutoMemoryInfo {
            enabled: enabled_auto,
            reason: match &switched_by {
                Some(file) => format!("{} It is set by {file}, not by your shell.", why),
                None => why.to_string(),
            },
            switched_by,
            index_note: index_note.clone(),
            dir: amd.dir.clone(),
            source: match &amd.source {
                AutoMemSource::Default => "default".to_string(),
                AutoMemSource::EnvOverride => "env:CLAUDE_COWORK_MEMORY_PATH_OVERRIDE".to_string(),
                AutoMemSource::Setting(s) => format!("setting:{}", s.as_str()),
            },
            entrypoint_exists: entrypoint.is_file(),
        };
        let options = LoadOptions {
            original_cwd: cwd.clone(),
            home: env.home.clone(),
            config_home: env.config_home(),
            managed_dir: env.managed_dir.clone(),
            sources: Sources { user: enabled.user, project: enabled.project, local: enabled.local },
            include_external: paths::external_includes_approved(env, &canonical),
            excludes: settings.claude_md_excludes(),
            additional_dirs: req.add_dirs.iter().map(|d| absolute(&cwd, d)).collect(),
            additional_dirs_claude_md: env.is_truthy("CLAUDE_CODE_ADDITIONAL_DIRECTORIES_CLAUDE_MD"),
            auto_mem_entrypoint: (enabled_auto && !skips_index).then(|| entrypoint.clone()),
            auto_mem_content: given_index.map(str::to_string),
            team_mem_entrypoint: None,
            // `--bare` (CLAUDE_CODE_SIMPLE) skips CLAUDE.md files unless --add-dir was given.
            disabled: env.is_truthy("CLAUDE_CODE_DISABLE_CLAUDE_MDS")
                || (env.is_truthy("CLAUDE_CODE_SIMPLE") && (req.add_dirs.is_empty() || profile.bare_loads_nothing)),
            profile,
            // Read only for releases that know the flag: the global config can be large.
            auto_memory_label_flag: profile.auto_memory_label_by_flag
                && mneme_store::server_flags::ServerFlags::for_session(&self.env, env).is_on(mneme_core::versions::AUTO_MEMORY_LABEL_FLAG),
            // The entrypoint is taken from the shell when Claude Code starts, before any settings
            // file's `env` block applies.
            cowork_session: matches!(self.env.var("CLAUDE_CODE_ENTRYPOINT"), Some("remote_cowork" | "remote_cowork_trigger")),
            // 2.1.281-2.1.284 ran the plugin in its default mode whatever the settings said.
            agents_md: if profile.agents_md_settings_honoured { agents_md_setting(&settings) } else { AgentsMd::WithoutClaudeMd },
        };
        let env_from_settings = overrides
            .iter()
            .filter(|o| MEMORY_VARIABLES.contains(&o.name.as_str()))
            .map(|o| EnvFromSettings {
                name: o.name.clone(),
                value: o.value.clone(),
                file: settings::shown_path(&self.env, &o.path),
                process_value: o.process_value.clone(),
            })
            .collect();
        // Both releases in the matrix attach nothing after a Read under either variable; the
        // instructions loaded at start are unaffected by CLAUDE_CODE_DISABLE_ATTACHMENTS.
        let no_attachments = env.is_truthy("CLAUDE_CODE_SIMPLE") || env.is_truthy("CLAUDE_CODE_DISABLE_ATTACHMENTS");
        Ok(Resolved { cwd, settings, options, auto_memory, memdir: amd.dir, claude_code, env_from_settings, no_attachments, session_env: effective })
    }

    /// The user-context block Claude Code would send from `req.cwd`, with provenance.
    pub fn context(&self, req: &ContextRequest) -> Result<ContextView, ApiError> {
        Ok(self.context_traced(req, false)?.0)
    }

    /// [`Mneme::context`], and with `trace` the folders whose change could alter the view
    /// (for [`crate::ContextCache`]; finding them costs a few extra file-system calls).
    pub(crate) fn context_traced(
        &self,
        req: &ContextRequest,
        trace: bool,
    ) -> Result<(ContextView, BTreeSet<DependsOn>), ApiError> {
        // Resolving and loading share what they learn about the folders (git roots, missing
        // `.claude` folders, realpaths): each would otherwise look again.
        let (r, ctx) = git::with_memo(|| {
            mneme_claudemd::with_folder_cache(|| -> Result<_, ApiError> {
                let r = self.resolve(req)?;
                let ctx = mneme_claudemd::load(&r.options);
                Ok((r, ctx))
            })
        })?;
        let depends_on = if trace { crate::context_cache::dependencies(self, req, &r, &ctx) } else { BTreeSet::new() };
        let claude_md = mneme_claudemd::render_claude_md(&r.options, &ctx.files);
        let date = match req.date.as_deref() {
            None => self.today(),
            Some(d) if d.len() == 10 && mneme_dream::dates::parse_iso_date(d).is_some() => d.to_string(),
            Some(d) => return Err(ApiError::invalid(format!("'{d}' is not a date; write it as YYYY-MM-DD."))),
        };
        let block = mneme_claudemd::render_instructions(&r.options.profile, &claude_md, &date);
        let files: Vec<ContextFile> = ctx.files.iter().map(context_file).collect();
        let view = ContextView {
            cwd: r.cwd,
            block,
            total_chars: files.iter().map(|f| f.chars).sum(),
            total_tokens: files.iter().map(|f| f.tokens).sum(),
            files,
            skipped: ctx
                .skipped
                .iter()
                .map(|s| SkippedEntry {
                    path: s.path.clone(),
                    layer: s.layer,
                    parent: s.parent.clone(),
                    reason: s.reason.describe(),
                    detail: s.reason.clone(),
                })
                .collect(),
            conditional: ctx.conditional.clone(),
            // A path that is not UTF-8 cannot be encoded for the page (nor named by Claude Code,
            // which sees such a name with its bytes replaced): left out of the listing.
            nested_candidates: ctx.nested_candidates.iter().filter(|p| p.to_str().is_some()).cloned().collect(),
            auto_memory: r.auto_memory,
            settings_problems: r.settings.errors().map(|e| e.to_string()).collect(),
            claude_code: r.claude_code,
            env_from_settings: r.env_from_settings,
        };
        Ok((view, depends_on))
    }

    /// What Claude Code would attach after the model read `targets` in one turn, in order.
    pub fn touched(&self, req: &ContextRequest, targets: &[PathBuf]) -> Result<TouchedView, ApiError> {
        let r = self.resolve(req)?;
        // In `--bare` mode Claude Code never attaches nested memory, --add-dir or not
        // (captured: testdata/conformance-extra/expected/bare__*).
        if r.no_attachments {
            return Ok(TouchedView { block: String::new(), files: Vec::new(), claude_code: r.claude_code });
        }
        let ctx = mneme_claudemd::load(&r.options);
        let targets: Vec<PathBuf> = targets.iter().map(|t| absolute(&r.cwd, t)).collect();
        // Bare mode returned above, so `disabled` here is CLAUDE_CODE_DISABLE_CLAUDE_MDS. Before
        // 2.1.149 it kept out only the files loaded at start; what a Read brings still came.
        let attached = if r.options.disabled && !r.options.profile.claude_mds_switch_covers_reads {
            mneme_claudemd::touched(&LoadOptions { disabled: false, ..r.options.clone() }, &ctx, &targets)
        } else {
            mneme_claudemd::touched(&r.options, &ctx, &targets)
        };
        let hooks = mneme_claudemd::agents_md_hook(&r.options, &ctx, &targets);
        Ok(TouchedView {
            block: mneme_claudemd::render_touched(&r.options.profile, &attached, &hooks),
            files: attached.iter().chain(hooks.iter().flat_map(|h| &h.files)).map(context_file).collect(),
            claude_code: r.claude_code,
        })
    }
}

/// The built-in AGENTS.md plugin's switch: `enabledPlugins` in the merged settings, and its
/// `instructionFiles` option (older name `projectInstructions`), which Claude Code takes from the
/// user's settings only.
fn agents_md_setting(settings: &Settings) -> AgentsMd {
    const PLUGIN: &str = "cc-plugin-agents-md@builtin";
    if settings.merged().get("enabledPlugins").and_then(|p| p.get(PLUGIN)) == Some(&serde_json::Value::Bool(false)) {
        return AgentsMd::Off;
    }
    let user = settings.source_object(settings::SettingSource::User);
    let options = user.as_ref().and_then(|u| u.get("pluginConfigs")).and_then(|c| c.get(PLUGIN)).and_then(|c| c.get("options"));
    let mode = options.and_then(|o| o.get("instructionFiles").or_else(|| o.get("projectInstructions"))).and_then(|m| m.as_str());
    match mode {
        Some("claude-md-and-agents-md" | "both") => AgentsMd::Always,
        Some("claude-md" | "claude" | "none" | "managed-only") => AgentsMd::Off,
        _ => AgentsMd::WithoutClaudeMd,
    }
}

fn context_file(f: &LoadedFile) -> ContextFile {
    ContextFile {
        path: f.path.clone(),
        layer: f.layer,
        parent: f.parent.clone(),
        globs: f.globs.clone(),
        is_rule: f.is_rule,
        bytes: f.raw_bytes,
        chars: f.chars,
        tokens: f.tokens,
        truncated: f.truncated,
        large: f.chars > text::MAX_MEMORY_CHARACTER_COUNT,
        transformed: f.content_differs_from_disk,
        unverified: f.unverified.as_ref().map(|why| UnverifiedFile { reason: why.describe(), because: why.clone() }),
    }
}

/// Resolves `p` against `base` when relative, then folds `.` and `..` like Node's `resolve`.
pub(crate) fn absolute(base: &Path, p: &Path) -> PathBuf {
    git::normalize(&base.join(p))
}
