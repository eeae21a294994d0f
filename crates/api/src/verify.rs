//! "Check with my Claude Code": run the user's own Claude Code once, offline, and compare the
//! instructions block it really sends with Mneme's view of the same folder.
//!
//! Both sides must see identical inputs, and the user's state must stay as it was. So the
//! config home's instruction files (CLAUDE.md and other top-level `.md` files, `rules/`,
//! `agents/`, `settings*.json`), the project's memory folder (not its transcripts) and the
//! global config are copied into a temporary sandbox; Claude Code runs with `CLAUDE_CONFIG_DIR`
//! (and the XDG folders and `TMPDIR`) pointing there, and Mneme renders with an environment
//! whose `CLAUDE_CONFIG_DIR` is that same sandbox. Project files are read in place (read only).
//! Paths are mapped back to the real ones before anything is shown.
//!
//! Nothing but loopback: the stub (`mneme-verify`) listens on 127.0.0.1, proxy, provider and
//! telemetry variables are withheld, and flag settings (`--settings`), which outrank the global
//! config's, the user's and the project's settings, set the offline variables and blank every
//! withheld one, so no settings file's `env` block can point Claude Code elsewhere. The managed
//! policy outranks flag settings: when its `env` block would, the check refuses to start Claude
//! Code ([`offline_flag_env`]). Flag settings also carry `disableAllHooks` and an empty
//! `apiKeyHelper`, and
//! `--strict-mcp-config` without `--mcp-config` starts no MCP server. Mneme renders with the
//! same flag-settings file, so the extra source changes nothing between the two sides (it sets
//! no memory switch).

use crate::{ApiError, ContextRequest, ErrorCode, Mneme};
use mneme_core::versions::{self, ClaudeVersion};
use mneme_store::claude_install;
use mneme_store::settings::{EnabledSources, SettingSource};
use mneme_store::settings_env::EnvSource;
use mneme_store::Environment;
use mneme_verify::{is_withheld, CaptureError, Run, Stub};
use serde::Serialize;
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// How long one check may take before Claude Code is stopped.
pub const VERIFY_TIMEOUT: Duration = Duration::from_secs(60);

/// A deliberately different release's behaviours to compare against (tests prove the check
/// catches a wrong profile with it); not a user setting.
const PROFILE_OVERRIDE_VAR: &str = "MNEME_VERIFY_PROFILE";

/// The prompt Claude Code is started with; the stub answers it with one word.
const PROMPT: &str = "Reply with one word.";

/// Options beyond the folder.
#[derive(Debug, Clone, Default)]
pub struct VerifyOptions {
    /// The `claude` to run; `None` = the one the user runs (`claude_install::detect`).
    pub claude_bin: Option<PathBuf>,
    /// `None` = [`VERIFY_TIMEOUT`].
    pub timeout: Option<Duration>,
}

/// What the check found.
#[derive(Debug, Clone, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// `match`, `differ` or `failed`.
    pub status: String,
    /// One sentence for people.
    pub summary: String,
    /// The `claude` that was run.
    pub claude_bin: Option<PathBuf>,
    /// The release it reported.
    pub claude_version: Option<String>,
    /// The release whose behaviours Mneme rendered with (the same, unless overridden).
    pub compared_as: Option<String>,
    /// Set when the release is outside the ones Mneme has checked.
    pub unverified: Option<String>,
    pub cwd: PathBuf,
    pub differences: Vec<Difference>,
    /// The block Claude Code sent (real paths); absent when it sent nothing.
    pub claude_block: Option<String>,
    /// Mneme's block for the same folder (real paths).
    pub mneme_block: Option<String>,
    /// The end of Claude Code's stderr, when it failed.
    pub stderr_tail: Option<String>,
    pub elapsed_ms: u64,
}

/// One way the two blocks differ.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[cfg_attr(feature = "specta", derive(specta::Type))]
#[serde(rename_all = "camelCase")]
pub struct Difference {
    /// `onlyInClaudeCode`, `onlyInMneme`, `order`, `label`, `text` or `wrapper`.
    pub kind: String,
    /// The file concerned (real path), when one is.
    pub file: Option<PathBuf>,
    /// What differs, in a sentence.
    pub detail: String,
    /// 1-based line (within the file's text, or the block) where they first differ.
    pub line: Option<u32>,
    /// Claude Code's side (a few lines around the difference).
    pub claude: Option<String>,
    /// Mneme's side.
    pub mneme: Option<String>,
}

impl VerifyReport {
    fn failed(cwd: &Path, summary: String, started: Instant) -> Self {
        VerifyReport {
            status: "failed".into(),
            summary,
            claude_bin: None,
            claude_version: None,
            compared_as: None,
            unverified: None,
            cwd: cwd.to_path_buf(),
            differences: vec![],
            claude_block: None,
            mneme_block: None,
            stderr_tail: None,
            elapsed_ms: started.elapsed().as_millis() as u64,
        }
    }
}

impl Mneme {
    /// Runs the user's Claude Code once, offline, for `req.cwd` and compares what it sends with
    /// Mneme's view. Run failures (no Claude Code, a timeout) are a `failed` report; only a bad
    /// request is an error.
    pub fn verify(&self, req: &ContextRequest) -> Result<VerifyReport, ApiError> {
        self.verify_with(req, &VerifyOptions::default())
    }

    pub fn verify_with(&self, req: &ContextRequest, opts: &VerifyOptions) -> Result<VerifyReport, ApiError> {
        let started = Instant::now();
        if !req.cwd.is_dir() {
            return Err(ApiError::no_project_folder(&req.cwd));
        }
        if req.settings_file.is_some() {
            return Err(ApiError::new(
                ErrorCode::InvalidInput,
                "The check runs Claude Code with flag settings of its own (no hooks, no network); leave out --settings.",
            ));
        }
        let compare_as = match self.env.var(PROFILE_OVERRIDE_VAR) {
            Some(v) => Some(v.parse::<ClaudeVersion>().map_err(|_| {
                ApiError::new(ErrorCode::InvalidInput, format!("{PROFILE_OVERRIDE_VAR}={v:?} is not a release (X.Y.Z)."))
            })?),
            None => None,
        };

        // Which Claude Code, and which release.
        let (bin, version) = match &opts.claude_bin {
            Some(bin) => {
                if !bin.is_file() {
                    return Ok(VerifyReport::failed(&req.cwd, format!("There is no Claude Code at {}.", bin.display()), started));
                }
                (bin.clone(), claude_install::version_of(bin, &self.env).map_err(|e| e.to_string()))
            }
            None => match claude_install::detect(&self.env) {
                Some(found) => {
                    let v = match (found.version, found.version_error) {
                        (Some(v), _) => Ok(v),
                        (None, e) => Err(e.unwrap_or_else(|| "it printed no version".into())),
                    };
                    (found.path, v)
                }
                None => {
                    return Ok(VerifyReport::failed(
                        &req.cwd,
                        "Claude Code is not installed (looked on PATH, in ~/.local/bin and in npm's global folders). \
                         Install it with npm install -g @anthropic-ai/claude-code or the native installer, then check again."
                            .into(),
                        started,
                    ))
                }
            },
        };
        let version = match version {
            Ok(v) => v,
            Err(e) => {
                let mut r = VerifyReport::failed(&req.cwd, format!("Could not read the release of Claude Code at {}: {e}", bin.display()), started);
                r.claude_bin = Some(bin);
                return Ok(r);
            }
        };
        let compare_as = compare_as.unwrap_or(version);
        let checked = versions::matrix();
        let unverified = match (checked.first(), checked.last()) {
            (Some(&oldest), _) if version < oldest => Some(format!(
                "Claude Code {version} is older than the oldest release Mneme checks ({oldest}); this result is unverified. Update Claude Code for a checked comparison."
            )),
            (_, Some(&newest)) if version > newest => Some(format!(
                "Claude Code {version} is newer than the newest release Mneme checks ({newest}); Mneme renders it with {newest}'s behaviours."
            )),
            _ => None,
        };

        // Only this user may look in: it holds copies of their settings, global config and
        // memory while the check runs (tempfile's default would let every local user read them).
        let sandbox = tempfile::Builder::new()
            .prefix("mneme-verify-")
            .permissions(std::os::unix::fs::PermissionsExt::from_mode(0o700))
            .tempdir()
            .map_err(|e| ApiError::new(ErrorCode::Io, format!("Could not make a temporary folder for the check: {e}")))?;
        let real_config = self.env.config_home();
        let sandbox_config = sandbox.path().join("config");
        let memory_dir = self.context(&ContextRequest { claude_version: Some(compare_as), ..req.clone() }).ok().map(|v| v.auto_memory.dir);
        copy_config(&real_config, &sandbox_config, memory_dir.as_deref(), &self.env.global_config_path(), COPY_BUDGET)
            .map_err(|e| ApiError::new(ErrorCode::Io, format!("Could not copy your Claude Code settings into the check's sandbox: {e}")))?;

        let stub = match Stub::start() {
            Ok(s) => s,
            Err(e) => return Ok(VerifyReport::failed(&req.cwd, e.to_string(), started)),
        };
        let mut vars = self.env.vars.clone();
        vars.retain(|name, _| !is_withheld(name));
        vars.insert("CLAUDE_CONFIG_DIR".into(), path_str(&sandbox_config));
        // Caches, logs and temporary files Claude Code writes go to the sandbox too: npm's
        // among them (2.1.122 runs npm, which logs to `~/.npm/_logs` unless told otherwise).
        for (name, sub) in [
            ("XDG_CACHE_HOME", "cache"),
            ("XDG_CONFIG_HOME", "xdg-config"),
            ("XDG_DATA_HOME", "data"),
            ("XDG_STATE_HOME", "state"),
            ("TMPDIR", "tmp"),
            ("npm_config_cache", "npm-cache"),
        ] {
            let dir = sandbox.path().join(sub);
            std::fs::create_dir_all(&dir).map_err(|e| ApiError::new(ErrorCode::Io, format!("{}: {e}", dir.display())))?;
            vars.insert(name.into(), path_str(&dir));
        }
        for (k, v) in stub.offline_vars() {
            vars.insert(k.into(), v);
        }
        let mut sandbox_env = self.env.clone();
        sandbox_env.vars = vars.clone();
        let profile = versions::profile_for(compare_as).profile;
        let offline = match offline_flag_env(&sandbox_env, &mneme_store::paths::project_root(&req.cwd), &profile, &stub) {
            Ok(env) => env,
            Err(refusal) => {
                let mut r = VerifyReport::failed(&req.cwd, refusal, started);
                r.claude_bin = Some(bin);
                r.claude_version = Some(version.to_string());
                return Ok(r);
            }
        };
        let flag_settings = sandbox.path().join("flag-settings.json");
        let settings = flag_settings_with(offline);
        std::fs::write(&flag_settings, serde_json::to_vec_pretty(&settings).expect("json"))
            .map_err(|e| ApiError::new(ErrorCode::Io, format!("{}: {e}", flag_settings.display())))?;

        let mut args = vec!["--strict-mcp-config".to_string(), "--no-session-persistence".into(), "--settings".into(), path_str(&flag_settings)];
        if let Some(s) = &req.setting_sources {
            args.extend(["--setting-sources".into(), s.clone()]);
        }
        for d in &req.add_dirs {
            args.extend(["--add-dir".into(), path_str(d)]);
        }
        let run = Run { bin: bin.clone(), cwd: req.cwd.clone(), vars: vars.clone(), args, prompt: PROMPT.into(), timeout: opts.timeout.unwrap_or(VERIFY_TIMEOUT) };
        let mut report = VerifyReport::failed(&req.cwd, String::new(), started);
        report.claude_bin = Some(bin.clone());
        report.claude_version = Some(version.to_string());
        report.compared_as = Some(compare_as.to_string());
        report.unverified = unverified.clone();
        let captured = match stub.capture(&run) {
            Ok(c) => c,
            Err(e) => {
                report.summary = format!("Claude Code {version} ({}): {e}", bin.display());
                if let CaptureError::TimedOut { stderr_tail, .. } | CaptureError::NoRequest { stderr_tail, .. } = &e {
                    report.stderr_tail = Some(stderr_tail.clone());
                }
                report.elapsed_ms = started.elapsed().as_millis() as u64;
                return Ok(report);
            }
        };
        let claude_block = instructions_block(&captured.request);

        // Mneme's view, from the same inputs.
        let twin = Mneme::new(sandbox_env, self.clock.clone()).with_local_zone(self.zone.clone());
        let date = claude_block.as_deref().and_then(date_in).or_else(|| date_in(&captured.request.to_string()));
        let view = twin.context(&ContextRequest {
            cwd: req.cwd.clone(),
            setting_sources: req.setting_sources.clone(),
            add_dirs: req.add_dirs.clone(),
            settings_file: Some(flag_settings),
            date,
            claude_version: Some(compare_as),
            agent: None,
        })?;
        let real = |s: &str| s.replace(&path_str(&sandbox_config), &path_str(&real_config));
        let claude_text = real(claude_block.as_deref().unwrap_or(""));
        let mneme_text = real(&view.block);
        report.differences = compare(&claude_text, &mneme_text);
        report.status = if report.differences.is_empty() { "match".into() } else { "differ".into() };
        let against = if compare_as == version { String::new() } else { format!(" (compared with Claude Code {compare_as}'s behaviours)") };
        report.summary = if report.differences.is_empty() {
            format!("Mneme matches your Claude Code {version}{against}.")
        } else {
            let n = report.differences.len();
            format!("Mneme differs from your Claude Code {version}{against}: {n} difference{}.", if n == 1 { "" } else { "s" })
        };
        if let Some(note) = unverified {
            report.summary.push(' ');
            report.summary.push_str(&note);
        }
        report.claude_block = claude_block.map(|_| claude_text);
        report.mneme_block = Some(mneme_text);
        report.elapsed_ms = started.elapsed().as_millis() as u64;
        Ok(report)
    }
}

/// The `env` block of a sandboxed run's flag settings ([`Stub::flag_env`]: every withheld variable
/// blanked, the offline ones set), or, when the managed policy's `env` block (the one source
/// that outranks flag settings) would still send Claude Code somewhere other than the stub,
/// why the run must not start. `env` is the sandbox's environment (its config home, the managed
/// folder Claude Code reads), `root` the project the run starts in.
pub(crate) fn offline_flag_env(
    env: &Environment,
    root: &Path,
    profile: &mneme_core::Profile,
    stub: &Stub,
) -> Result<serde_json::Map<String, Value>, String> {
    // Every settings source, whether or not `--setting-sources` enables it: blanking a name
    // the run never sees costs nothing.
    let session = mneme_store::session::SessionMemory::resolve(env, root, profile, EnabledSources::all(), None);
    let offline = stub.flag_env(session.overrides.iter().map(|o| o.name.clone()));
    let policy = session.overrides.iter().filter(|o| o.source == EnvSource::Setting(SettingSource::Policy));
    for o in policy {
        let Some(ours) = offline.get(&o.name).and_then(Value::as_str) else { continue };
        // Which hosts skip a proxy matters only when there is one, and every proxy is withheld.
        if o.name.eq_ignore_ascii_case("NO_PROXY") || same_effect(ours, &o.value) {
            continue;
        }
        return Err(format!(
            "Claude Code was not started: the managed Claude Code policy {} sets {}={:?} in its env block, which outranks every other setting, \
             so Claude Code would send its request (with your instructions and memory) somewhere other than Mneme's stub on 127.0.0.1, \
             or report to a telemetry service. Ask whoever manages Claude Code on this machine to leave {} out of the policy's env block.",
            o.path.display(),
            o.name,
            o.value,
            o.name
        ));
    }
    Ok(offline)
}

/// A sandboxed run's flag settings around its `env` block: no hooks, and no `apiKeyHelper`
/// (the user's command that prints a key, which Claude Code runs even with the stub's key at
/// hand; an empty one is none), so nothing of the user's runs but Claude Code itself.
pub(crate) fn flag_settings_with(env: serde_json::Map<String, Value>) -> Value {
    serde_json::json!({"disableAllHooks": true, "apiKeyHelper": "", "env": env})
}

/// Whether Claude Code reads two values of a variable alike: the same text, both switched off
/// (unset, empty, `0`, `false`, `no`, `off`) or both switched on (`1`, `true`, `yes`, `on`).
fn same_effect(a: &str, b: &str) -> bool {
    let kind = |v: &str| match v.trim().to_ascii_lowercase().as_str() {
        "" | "0" | "false" | "no" | "off" => Some(false),
        "1" | "true" | "yes" | "on" => Some(true),
        _ => None,
    };
    a == b || kind(a).is_some_and(|k| kind(b) == Some(k))
}

fn path_str(p: &Path) -> String {
    p.to_string_lossy().into_owned()
}

/// The most [`copy_config`] copies into a sandbox, in all: far more than instructions and a
/// memory folder hold, and a bound on what a check costs in time and disk.
const COPY_BUDGET: u64 = 100 << 20;

/// Copies what decides the instructions from the config home into the sandbox: top-level
/// `.md` files (CLAUDE.md and what it may `@include`), `settings*.json`, `rules/` and `agents/`
/// (symlinks stay symlinks; relative ones that would point outside the copy are made absolute
/// to their real target), the project's memory folder when it lives in the config home, and
/// the global config. Never credentials, transcripts or other projects. Only plain files are
/// copied (a FIFO would block the copy for good, and Claude Code reads no file from one), each
/// readable by the user alone, and no more than `budget` bytes in all.
fn copy_config(real: &Path, sandbox: &Path, memory_dir: Option<&Path>, global: &Path, budget: u64) -> std::io::Result<()> {
    std::fs::create_dir_all(sandbox)?;
    let mut copy = Copy { root: real, left: budget, budget };
    if let Ok(entries) = std::fs::read_dir(real) {
        for entry in entries.flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            let keep_file = name.ends_with(".md") || (name.starts_with("settings") && name.ends_with(".json"));
            let keep_dir = name == "rules" || name == "agents";
            if keep_file || keep_dir {
                copy.tree(&entry.path(), &sandbox.join(&*name))?;
            }
        }
    }
    if let Some(mem) = memory_dir {
        if let Ok(rel) = mem.strip_prefix(real) {
            if mem.is_dir() {
                copy.tree(mem, &sandbox.join(rel))?;
            }
        }
    }
    if global.is_file() {
        copy.file(global, &sandbox.join(".claude.json"))?;
    }
    Ok(())
}

/// One [`copy_config`]: the config home links are resolved against, and the bytes still allowed.
struct Copy<'a> {
    root: &'a Path,
    left: u64,
    budget: u64,
}

impl Copy<'_> {
    fn tree(&mut self, src: &Path, dst: &Path) -> std::io::Result<()> {
        let root = self.root;
        let meta = std::fs::symlink_metadata(src)?;
        if meta.file_type().is_symlink() {
            let target = std::fs::read_link(src)?;
            let resolved = src.parent().unwrap_or(root).join(&target);
            // A relative link keeps working in the copy only if what it points at was copied too.
            let inside = target.is_relative() && lexical(&resolved).starts_with(lexical(root)) && stays_copied(&lexical(&resolved), root);
            let target = if target.is_absolute() || inside { target } else { lexical(&resolved) };
            if let Some(parent) = dst.parent() {
                std::fs::create_dir_all(parent)?;
            }
            return std::os::unix::fs::symlink(target, dst);
        }
        if meta.is_dir() {
            std::fs::create_dir_all(dst)?;
            for entry in std::fs::read_dir(src)? {
                let entry = entry?;
                self.tree(&entry.path(), &dst.join(entry.file_name()))?;
            }
            return Ok(());
        }
        if let Some(parent) = dst.parent() {
            std::fs::create_dir_all(parent)?;
        }
        self.file(src, dst)
    }

    /// Copies `src` when it is a plain file (opened without waiting, so a FIFO put in its place
    /// meanwhile is seen for what it is and skipped), within the budget.
    fn file(&mut self, src: &Path, dst: &Path) -> std::io::Result<()> {
        use std::io::Read;
        use std::os::unix::fs::OpenOptionsExt;
        let file = mneme_store::open::open_no_wait(src)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Ok(());
        }
        let too_much = || {
            std::io::Error::other(format!(
                "there is more than {} MiB to copy (rules/, agents/, the top-level .md and settings files, the project's memory folder and .claude.json; {} went over). \
                 Move large files out of those folders, then check again.",
                self.budget >> 20,
                src.display()
            ))
        };
        if meta.len() > self.left {
            return Err(too_much());
        }
        let mut out = std::fs::OpenOptions::new().write(true).create(true).truncate(true).mode(0o600).open(dst)?;
        // A file that grows while it is copied is held to the budget too.
        let copied = std::io::copy(&mut file.take(self.left.saturating_add(1)), &mut out)?;
        if copied > self.left {
            return Err(too_much());
        }
        self.left -= copied;
        Ok(())
    }
}

/// Whether a path in the config home is one [`copy_config`] copies (so a relative link to it
/// can stay relative).
fn stays_copied(p: &Path, root: &Path) -> bool {
    let Ok(rel) = p.strip_prefix(root) else { return false };
    let mut parts = rel.components();
    let Some(first) = parts.next() else { return false };
    let first = first.as_os_str().to_string_lossy();
    let top_file = parts.next().is_none() && (first.ends_with(".md") || (first.starts_with("settings") && first.ends_with(".json")));
    first == "rules" || first == "agents" || top_file
}

/// `a/b/../c` → `a/c`, without touching the disk (the link's own text is what matters).
fn lexical(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// The instructions block in a captured request: the first user message's text block that
/// carries the CLAUDE.md preamble (2.1.268+), or the older one with `# currentDate`. Located by
/// what it is, as the version-matrix harness does; `None` when there is none.
pub fn instructions_block(request: &Value) -> Option<String> {
    let first = request.get("messages")?.as_array()?.first()?;
    if first.get("role")?.as_str()? != "user" {
        return None;
    }
    let texts: Vec<&str> = match first.get("content")? {
        Value::String(s) => vec![s.as_str()],
        Value::Array(blocks) => blocks
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            .filter_map(|b| b.get("text").and_then(Value::as_str))
            .collect(),
        _ => vec![],
    };
    texts
        .into_iter()
        .find(|t| {
            t.starts_with("<system-reminder>\nCodebase and user instructions are shown below.")
                || (t.starts_with("<system-reminder>\nAs you answer") && t.contains("\n# currentDate\n"))
        })
        .map(str::to_string)
}

/// The `YYYY-MM-DD` after "Today's date is ", so Mneme renders the date Claude Code used.
fn date_in(text: &str) -> Option<String> {
    const MARK: &str = "Today's date is ";
    let mut rest = text;
    while let Some(i) = rest.find(MARK) {
        let after = &rest[i + MARK.len()..];
        let cand = after.get(..10)?;
        let b = cand.as_bytes();
        let digits = |r: std::ops::Range<usize>| b[r].iter().all(u8::is_ascii_digit);
        if digits(0..4) && b[4] == b'-' && digits(5..7) && b[7] == b'-' && digits(8..10) {
            return Some(cand.to_string());
        }
        rest = after;
    }
    None
}

/// A block cut into its parts: what comes before the first file, each file (path, label,
/// text), and what follows the last file.
struct Parsed<'a> {
    head: &'a str,
    files: Vec<(&'a str, &'a str, &'a str)>,
    tail: &'a str,
}

fn parse(block: &str) -> Parsed<'_> {
    // Where the wrapper's end starts: the old date section, else the closing tag.
    let tail_at = block
        .rfind("# currentDate\n")
        .or_else(|| block.rfind("</system-reminder>"))
        .unwrap_or(block.len());
    let mut headers = Vec::new(); // (start of line, end of line incl. newline, path, label)
    let mut pos = 0;
    for line in block[..tail_at].split_inclusive('\n') {
        let text = line.trim_end_matches('\n');
        if let Some(rest) = text.strip_prefix("Contents of ").and_then(|r| r.strip_suffix("):")) {
            if let Some(i) = rest.rfind(" (") {
                headers.push((pos, pos + line.len(), &rest[..i], &rest[i + 2..]));
            }
        }
        pos += line.len();
    }
    let head = &block[..headers.first().map_or(tail_at, |h| h.0)];
    let files = headers
        .iter()
        .enumerate()
        .map(|(i, h)| {
            let end = headers.get(i + 1).map_or(tail_at, |n| n.0);
            (h.2, h.3, &block[h.1..end])
        })
        .collect();
    Parsed { head, files, tail: &block[tail_at..] }
}

/// Where two texts first differ: the 1-based line and a few lines of each side around it.
fn first_difference(a: &str, b: &str) -> (u32, String, String) {
    let (la, lb): (Vec<&str>, Vec<&str>) = (a.split('\n').collect(), b.split('\n').collect());
    let i = (0..la.len().max(lb.len())).find(|&i| la.get(i) != lb.get(i)).unwrap_or(0);
    let excerpt = |lines: &[&str]| {
        let from = i.saturating_sub(2);
        let to = (i + 3).min(lines.len());
        if from >= to {
            "(ends here)".to_string()
        } else {
            lines[from..to].join("\n")
        }
    };
    ((i + 1) as u32, excerpt(&la), excerpt(&lb))
}

/// Every difference between Claude Code's block and Mneme's: files on one side only, their
/// order, labels, text, and the wrapper around them. Empty exactly when the blocks are equal.
pub fn compare(claude: &str, mneme: &str) -> Vec<Difference> {
    if claude == mneme {
        return vec![];
    }
    let (c, m) = (parse(claude), parse(mneme));
    let mut out = Vec::new();
    let diff = |kind: &str, file: Option<&str>, detail: String, line: Option<u32>, claude: Option<String>, mneme: Option<String>| Difference {
        kind: kind.into(),
        file: file.map(PathBuf::from),
        detail,
        line,
        claude,
        mneme,
    };
    let in_m = |p: &str| m.files.iter().any(|f| f.0 == p);
    let in_c = |p: &str| c.files.iter().any(|f| f.0 == p);
    for f in c.files.iter().filter(|f| !in_m(f.0)) {
        out.push(diff("onlyInClaudeCode", Some(f.0), format!("Claude Code loads {} ({}); Mneme does not.", f.0, f.1), None, Some(f.2.to_string()), None));
    }
    for f in m.files.iter().filter(|f| !in_c(f.0)) {
        out.push(diff("onlyInMneme", Some(f.0), format!("Mneme shows {} ({}); Claude Code does not load it.", f.0, f.1), None, None, Some(f.2.to_string())));
    }
    let order_c: Vec<&str> = c.files.iter().map(|f| f.0).filter(|p| in_m(p)).collect();
    let order_m: Vec<&str> = m.files.iter().map(|f| f.0).filter(|p| in_c(p)).collect();
    if order_c != order_m {
        out.push(diff("order", None, "The files both load come in a different order.".into(), None, Some(order_c.join("\n")), Some(order_m.join("\n"))));
    }
    for cf in &c.files {
        let Some(mf) = m.files.iter().find(|f| f.0 == cf.0) else { continue };
        if cf.1 != mf.1 {
            out.push(diff("label", Some(cf.0), format!("{} is labelled differently.", cf.0), None, Some(cf.1.into()), Some(mf.1.into())));
        }
        if cf.2 != mf.2 {
            let (line, a, b) = first_difference(cf.2, mf.2);
            out.push(diff("text", Some(cf.0), format!("The text of {} differs from line {line}.", cf.0), Some(line), Some(a), Some(b)));
        }
    }
    for (part, a, b) in [("before the first file", c.head, m.head), ("after the last file", c.tail, m.tail)] {
        if a != b {
            let (line, x, y) = first_difference(a, b);
            out.push(diff("wrapper", None, format!("The wrapper {part} differs (line {line} of that part)."), Some(line), Some(x), Some(y)));
        }
    }
    if out.is_empty() {
        // Same parts, yet different blocks (a file loaded twice on one side, say).
        let (line, x, y) = first_difference(claude, mneme);
        out.push(diff("wrapper", None, format!("The blocks differ from line {line}."), Some(line), Some(x), Some(y)));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    const NEW: &str = "<system-reminder>\nCodebase and user instructions are shown below. X\n\nContents of /h/.claude/CLAUDE.md (user's private global instructions for all projects):\n\nU1\nU2\n\nContents of /p/CLAUDE.md (project instructions, checked into the codebase):\n\nP1\n</system-reminder>";

    #[test]
    fn equal_blocks_have_no_difference() {
        assert!(compare(NEW, NEW).is_empty());
    }

    #[test]
    fn a_file_on_one_side_and_changed_text_are_named() {
        let mneme = NEW.replace("U2", "U-two");
        let d = compare(NEW, &mneme);
        assert_eq!(d.len(), 1, "{d:?}");
        assert_eq!((d[0].kind.as_str(), d[0].line), ("text", Some(3)));
        assert_eq!(d[0].file.as_deref(), Some(Path::new("/h/.claude/CLAUDE.md")));
        let only_claude = NEW.replace("Contents of /p/CLAUDE.md (project instructions, checked into the codebase):\n\nP1\n", "");
        let d = compare(NEW, &only_claude);
        assert_eq!(d.iter().map(|d| d.kind.as_str()).collect::<Vec<_>>(), ["onlyInClaudeCode"], "{d:?}");
    }

    #[test]
    fn order_and_wrapper_differences() {
        let a = "W\n\nContents of /a (x):\n\nA\n\nContents of /b (x):\n\nB\n\n</system-reminder>";
        let b = "W\n\nContents of /b (x):\n\nB\n\nContents of /a (x):\n\nA\n\n</system-reminder>";
        let kinds: Vec<String> = compare(a, b).into_iter().map(|d| d.kind).collect();
        assert!(kinds.contains(&"order".to_string()), "{kinds:?}");
        let old = "<system-reminder>\nAs you answer\n\nContents of /a (x):\n\nA\n# currentDate\nToday's date is 2026-01-01.\n</system-reminder>\n";
        let d = compare(old, &old.replace("As you answer", "As you reply"));
        assert_eq!(d.iter().map(|d| d.kind.as_str()).collect::<Vec<_>>(), ["wrapper"]);
        assert_eq!(date_in(old).as_deref(), Some("2026-01-01"));
    }

    #[test]
    fn the_sandbox_copy_keeps_links_working_and_leaves_out_state() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        let shared = tmp.path().join("shared.md");
        std::fs::create_dir_all(real.join("rules/sub")).unwrap();
        std::fs::create_dir_all(real.join("projects/-p/memory")).unwrap();
        std::fs::write(&shared, "S").unwrap();
        std::fs::write(real.join("CLAUDE.md"), "U").unwrap();
        std::fs::write(real.join("rules/a.md"), "A").unwrap();
        std::fs::write(real.join(".credentials.json"), "{}").unwrap();
        std::fs::write(real.join("projects/-p/memory/MEMORY.md"), "M").unwrap();
        std::fs::write(real.join("projects/-p/session.jsonl"), "{}").unwrap();
        std::os::unix::fs::symlink("../a.md", real.join("rules/sub/inside.md")).unwrap();
        std::os::unix::fs::symlink("../../shared.md", real.join("rules/outside.md")).unwrap();
        let sandbox = tmp.path().join("sandbox");
        copy_config(&real, &sandbox, Some(&real.join("projects/-p/memory")), &tmp.path().join("none.json"), COPY_BUDGET).unwrap();
        // A link into the copy stays relative; one leaving it points at its real target.
        assert_eq!(std::fs::read_link(sandbox.join("rules/sub/inside.md")).unwrap(), Path::new("../a.md"));
        assert_eq!(std::fs::read_link(sandbox.join("rules/outside.md")).unwrap(), shared);
        assert_eq!(std::fs::read_to_string(sandbox.join("rules/outside.md")).unwrap(), "S");
        assert_eq!(std::fs::read_to_string(sandbox.join("projects/-p/memory/MEMORY.md")).unwrap(), "M");
        assert!(!sandbox.join(".credentials.json").exists() && !sandbox.join("projects/-p/session.jsonl").exists());
    }

    fn mkfifo(p: &Path) {
        assert!(std::process::Command::new("mkfifo").arg(p).status().unwrap().success());
    }

    /// A FIFO in rules/, agents/ or the memory folder, or as the global config, would block a
    /// plain copy for good: it is skipped and the rest copied. Past the budget, the copy stops
    /// with what to do.
    #[test]
    fn the_sandbox_copy_skips_what_is_not_a_file_and_stops_at_its_budget() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        let mem = real.join("projects/-p/memory");
        for dir in [real.join("rules"), real.join("agents"), mem.clone()] {
            std::fs::create_dir_all(&dir).unwrap();
            std::fs::write(dir.join("a.md"), "A").unwrap();
            mkfifo(&dir.join("fifo.md"));
        }
        let global = tmp.path().join("global.json");
        mkfifo(&global);
        let sandbox = tmp.path().join("sandbox");
        let (done, result) = std::sync::mpsc::channel();
        let (r, s, m, g) = (real.clone(), sandbox.clone(), mem.clone(), global.clone());
        std::thread::spawn(move || done.send(copy_config(&r, &s, Some(&m), &g, COPY_BUDGET).map_err(|e| e.to_string())));
        let copied = result.recv_timeout(std::time::Duration::from_secs(10)).expect("the copy finishes");
        copied.unwrap();
        for dir in ["rules", "agents", "projects/-p/memory"] {
            assert_eq!(std::fs::read_to_string(sandbox.join(dir).join("a.md")).unwrap(), "A");
            assert!(!sandbox.join(dir).join("fifo.md").exists(), "{dir}/fifo.md");
        }
        assert!(!sandbox.join(".claude.json").exists());

        std::fs::write(mem.join("big.md"), "x".repeat(1_500_000)).unwrap();
        let err = copy_config(&real, &tmp.path().join("sandbox2"), Some(&mem), &global, 1 << 20).unwrap_err().to_string();
        assert!(err.contains("more than 1 MiB to copy") && err.contains("big.md") && err.contains("Move large files out"), "{err}");
    }

    #[test]
    fn the_block_is_found_in_a_request() {
        let req = serde_json::json!({"messages": [{"role": "user", "content": [
            {"type": "text", "text": NEW}, {"type": "text", "text": "hello"}]}]});
        assert_eq!(instructions_block(&req).as_deref(), Some(NEW));
        let none = serde_json::json!({"messages": [{"role": "user", "content": "hello"}]});
        assert_eq!(instructions_block(&none), None);
    }
}
