//! Claude Code's `Read`, `Grep`, `Glob`, `Bash`, `Edit` and `Write`, run against the overlay.
//!
//! A call goes through Claude Code's stages in its order, each with its own result shape:
//! unknown tool, input schema (`InputValidationError`), the tool's own input validation
//! (both wrapped in `<tool_use_error>`), the permission decision (the bare denial message),
//! then the call itself (its result, or the bare error message).

mod files;
mod search;
mod shell;

use crate::overlay::Overlay;
use crate::policy::{Decision, Gate};
use crate::schema::{self, InputError, Param};
use mneme_core::versions::Profile;
use mneme_core::Clock;
use mneme_model::{Cancel, ToolDef};
use mneme_store::paths::node_normalize;
use serde_json::{Map, Value};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What the model gets back for one `tool_use`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ToolResult {
    pub content: String,
    pub is_error: bool,
    /// Set when the permission policy refused the call.
    pub denied: Option<String>,
    /// A note that follows the turn's results instead of sitting in this one (a Read's
    /// first-page note, from 2.1.205).
    pub note: Option<String>,
}

impl ToolResult {
    pub fn ok(content: impl Into<String>) -> ToolResult {
        ToolResult { content: content.into(), is_error: false, denied: None, note: None }
    }
    pub fn error(content: impl Into<String>) -> ToolResult {
        ToolResult { content: content.into(), is_error: true, denied: None, note: None }
    }
    fn tool_use_error(message: &str) -> ToolResult {
        ToolResult::error(format!("<tool_use_error>{message}</tool_use_error>"))
    }
}

/// The most characters one Grep result hands the model. Claude Code saves a larger result to
/// a file; a run here has no such file, and a Grep of `.` over a whole disk with no
/// head_limit would otherwise send megabytes, which every provider refuses (the run is lost).
pub(crate) const MAX_RESULT_CHARS: usize = 100_000;

/// Cuts a result to [`MAX_RESULT_CHARS`], saying so.
fn clip(mut r: ToolResult) -> ToolResult {
    if let Some((at, _)) = r.content.char_indices().nth(MAX_RESULT_CHARS) {
        let rest = r.content[at..].chars().count();
        r.content.truncate(at);
        r.content.push_str(&format!(
            "\n\n[{rest} more characters cut. Narrow the search: a path, a glob, head_limit, or a more specific pattern.]"
        ));
    }
    r
}

/// A tool's `validateInput` refusal or its call's failure, as text for the model.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Refused before the permission check (`<tool_use_error>…`).
    Invalid(String),
    /// The call itself failed (the bare message).
    Failed(String),
}

/// What Claude Code's Read recorded about a file (`readFileState`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ReadState {
    /// The text seen, line endings normalized to `\n`.
    pub content: String,
    /// Modification time when read; `None` for the run's own writes.
    pub mtime_ms: Option<u128>,
    /// The Read's offset/limit; `None` after an Edit/Write.
    pub offset: Option<u64>,
    pub limit: Option<u64>,
    /// The Read returned only part of the file because of the token cap.
    pub partial: bool,
    /// The run's writes of the file so far (`Overlay::writes`), for its own files' freshness.
    pub writes: u64,
}

/// The tools of one run, with the run's state: the overlay and what has been read.
pub(crate) struct Tools {
    pub cwd: PathBuf,
    pub gate: Gate,
    pub overlay: Overlay,
    pub read_state: HashMap<PathBuf, ReadState>,
    pub clock: Arc<dyn Clock>,
    pub work_dir: PathBuf,
    /// Scratch views made for `Bash`, removed when the run ends.
    pub views: Vec<PathBuf>,
    /// The release whose tools' answers these follow (the newest unless a run says otherwise).
    pub release: Profile,
}

impl Drop for Tools {
    fn drop(&mut self) {
        for v in &self.views {
            let _ = std::fs::remove_dir_all(v);
        }
    }
}

/// The tool names, in the order the model is shown them.
pub(crate) const TOOL_NAMES: [&str; 6] = ["Bash", "Glob", "Grep", "Read", "Edit", "Write"];

/// The parameters tool `name` takes in the release the run answers as.
fn params_of(name: &str, release: &Profile) -> Option<Vec<Param>> {
    let all = match name {
        "Read" => files::READ_PARAMS,
        "Edit" => files::EDIT_PARAMS,
        "Write" => files::WRITE_PARAMS,
        "Grep" => search::GREP_PARAMS,
        "Glob" => search::GLOB_PARAMS,
        "Bash" => shell::BASH_PARAMS,
        _ => return None,
    };
    // Grep's `-o` came in 2.1.141 and Read's `allow_large` in 2.1.296; before, the schema
    // refused each as unexpected.
    let offered = |p: &&Param| match (name, p.name) {
        ("Grep", "-o") => release.grep_only_matching,
        ("Read", "allow_large") => release.read_allow_large,
        _ => true,
    };
    Some(all.iter().filter(offered).copied().collect())
}

fn description_of(name: &str) -> &'static str {
    match name {
        "Read" => files::READ_DESCRIPTION,
        "Edit" => files::EDIT_DESCRIPTION,
        "Write" => files::WRITE_DESCRIPTION,
        "Grep" => search::GREP_DESCRIPTION,
        "Glob" => search::GLOB_DESCRIPTION,
        _ => shell::BASH_DESCRIPTION,
    }
}

/// The tool definitions sent with every request, as `release` offers them.
pub(crate) fn definitions(release: &Profile) -> Vec<ToolDef> {
    TOOL_NAMES
        .iter()
        .map(|name| ToolDef {
            name: name.to_string(),
            description: description_of(name).to_string(),
            input_schema: schema::json_schema(&params_of(name, release).unwrap_or_default()),
        })
        .collect()
}

pub(crate) fn str_arg<'a>(input: &'a Map<String, Value>, key: &str) -> Option<&'a str> {
    input.get(key).and_then(Value::as_str)
}

pub(crate) fn num_arg(input: &Map<String, Value>, key: &str) -> Option<f64> {
    input.get(key).and_then(Value::as_f64)
}

pub(crate) fn bool_arg(input: &Map<String, Value>, key: &str) -> Option<bool> {
    input.get(key).and_then(Value::as_bool)
}

impl Tools {
    pub fn new(cwd: PathBuf, gate: Gate, clock: Arc<dyn Clock>, work_dir: PathBuf) -> Tools {
        // The gate resolves relative paths, and judges the read block, against the same folder.
        let gate = gate.with_cwd(&cwd);
        Tools {
            cwd,
            gate,
            overlay: Overlay::default(),
            read_state: HashMap::new(),
            clock,
            work_dir,
            views: Vec::new(),
            release: mneme_core::versions::newest(),
        }
    }

    /// Claude Code's `expandPath`: absolute paths normalized, relative ones resolved against
    /// the working directory.
    pub fn abs(&self, p: &str) -> PathBuf {
        if p.starts_with('/') {
            PathBuf::from(node_normalize(p))
        } else {
            PathBuf::from(node_normalize(&format!("{}/{p}", self.cwd.to_string_lossy())))
        }
    }

    /// Claude Code's `toRelativePath` for search output: relative to the working directory
    /// when inside it, else as given.
    pub fn display_path(&self, p: &Path) -> String {
        match p.strip_prefix(&self.cwd) {
            Ok(rel) if !rel.as_os_str().is_empty() => rel.to_string_lossy().into_owned(),
            _ => p.to_string_lossy().into_owned(),
        }
    }

    /// Runs one tool call through every stage.
    pub async fn call(&mut self, name: &str, input: &Value, cancel: &Cancel) -> ToolResult {
        // A tool a deny rule takes away whole is not offered (`run`), and is answered as one
        // that does not exist, as Claude Code answers it.
        let Some(params) = params_of(name, &self.release).filter(|_| !self.gate.rules().removes_tool(name)) else {
            return ToolResult::tool_use_error(&format!("Error: No such tool available: {name}"));
        };
        let args = match schema::validate(name, &params, input) {
            Ok(a) => a,
            Err(InputError(msg)) => return ToolResult::tool_use_error(&format!("InputValidationError: {msg}")),
        };
        if let Err(Failure::Invalid(msg)) = self.validate(name, &args) {
            return ToolResult::tool_use_error(&msg);
        }
        if let Decision::Deny(message) = self.gate.decide(name, &Value::Object(args.clone())) {
            return ToolResult { content: message.clone(), is_error: true, denied: Some(message), note: None };
        }
        let result = match name {
            "Read" => self.read(&args),
            "Edit" => self.edit(&args),
            "Write" => self.write(&args),
            // Read and Bash cut their own output as Claude Code does; Grep has no such cap.
            "Grep" => self.grep(&args).map(clip),
            "Glob" => self.glob(&args),
            _ => self.bash(&args, cancel).await,
        };
        match result {
            Ok(r) if !r.is_error && r.content.trim().is_empty() => {
                ToolResult::ok(format!("({name} completed with no output)"))
            }
            Ok(r) => r,
            Err(Failure::Invalid(msg)) => ToolResult::tool_use_error(&msg),
            Err(Failure::Failed(msg)) => ToolResult::error(msg),
        }
    }

    fn validate(&mut self, name: &str, args: &Map<String, Value>) -> Result<(), Failure> {
        match name {
            "Read" => self.validate_read(args),
            "Edit" => self.validate_edit(args),
            "Write" => self.validate_write(args),
            "Grep" => self.validate_grep(args),
            "Glob" => self.validate_glob(args),
            _ => self.validate_bash(args),
        }
    }
}
