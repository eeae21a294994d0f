//! Claude Code's settings files: where the five sources live, how Claude Code 2.1.197 reads
//! and merges them, and a careful writer for the one file Mneme edits (the user settings).
//!
//! Claude Code parses every settings file with `JSON.parse` after stripping a byte-order
//! mark, so comments and trailing commas make it ignore the *whole* file. Its zod schema does
//! the same for a value of the wrong type. Loading here reproduces both (the type check
//! covers the memory keys Mneme reads) and records the reason beside the file, so the UI can
//! say why a setting has no effect. Nothing here panics on bad input and one bad file never
//! stops the others from loading.
//!
//! Merge order is user < project < local < flag < policy (later wins), with lodash-style deep
//! merge: objects merge key by key, two arrays concatenate with duplicate primitives removed.

use crate::env::Environment;
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use jsonc_parser::ParseOptions;
use mneme_core::text::js_trim;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fs::{self, File};
use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Claude Code refuses settings files above 2 MiB (`h2u = 2097152` in the 2.1.197 bundle).
pub const MAX_SETTINGS_FILE_BYTES: u64 = 2 * 1024 * 1024;

/// One of Claude Code's five settings sources.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize)]
pub enum SettingSource {
    /// `managed-settings.json` (and `managed-settings.d/*.json`) in the managed folder.
    #[serde(rename = "policySettings")]
    Policy,
    /// The file given with `claude --settings FILE`.
    #[serde(rename = "flagSettings")]
    Flag,
    /// `<config home>/settings.json`.
    #[serde(rename = "userSettings")]
    User,
    /// `<cwd>/.claude/settings.json`, checked into the repository.
    #[serde(rename = "projectSettings")]
    Project,
    /// `<cwd>/.claude/settings.local.json`, git-ignored.
    #[serde(rename = "localSettings")]
    Local,
}

impl SettingSource {
    /// Claude Code's merge order, lowest priority first (`SETTING_SOURCES`).
    pub const MERGE_ORDER: [SettingSource; 5] =
        [SettingSource::User, SettingSource::Project, SettingSource::Local, SettingSource::Flag, SettingSource::Policy];

    /// The identifier Claude Code uses, e.g. `"userSettings"`.
    pub fn as_str(self) -> &'static str {
        match self {
            SettingSource::Policy => "policySettings",
            SettingSource::Flag => "flagSettings",
            SettingSource::User => "userSettings",
            SettingSource::Project => "projectSettings",
            SettingSource::Local => "localSettings",
        }
    }

    /// Claude Code's short description (`getSettingSourceName`), e.g. `"project, gitignored"`.
    pub fn label(self) -> &'static str {
        match self {
            SettingSource::Policy => "managed",
            SettingSource::Flag => "cli flag",
            SettingSource::User => "user",
            SettingSource::Project => "project",
            SettingSource::Local => "project, gitignored",
        }
    }
}

/// Which of the optional sources `--setting-sources` allows. Policy and flag settings are
/// always enabled, as in Claude Code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct EnabledSources {
    /// `user` was listed.
    pub user: bool,
    /// `project` was listed.
    pub project: bool,
    /// `local` was listed.
    pub local: bool,
}

impl Default for EnabledSources {
    fn default() -> Self {
        EnabledSources::all()
    }
}

impl EnabledSources {
    /// Every source: Claude Code's behaviour without `--setting-sources`.
    pub fn all() -> Self {
        EnabledSources { user: true, project: true, local: true }
    }

    /// Parses the value of `--setting-sources` exactly like `parseSettingSourcesFlag`: an empty
    /// string enables none of the optional sources; names are comma-separated and trimmed.
    pub fn parse(list: &str) -> Result<Self, SettingsError> {
        let mut out = EnabledSources { user: false, project: false, local: false };
        if list.is_empty() {
            return Ok(out);
        }
        for name in list.split(',').map(str::trim) {
            match name {
                "user" => out.user = true,
                "project" => out.project = true,
                "local" => out.local = true,
                other => return Err(SettingsError::UnknownSource { name: other.to_string() }),
            }
        }
        Ok(out)
    }

    /// Whether `source` takes part in the merge.
    pub fn contains(self, source: SettingSource) -> bool {
        match source {
            SettingSource::Policy | SettingSource::Flag => true,
            SettingSource::User => self.user,
            SettingSource::Project => self.project,
            SettingSource::Local => self.local,
        }
    }
}

/// Why a settings file could not be read, applied or written. Each message says what
/// happened and what the user can do about it.
#[derive(Debug, thiserror::Error)]
pub enum SettingsError {
    /// The file is not strict JSON (comments and trailing commas included).
    #[error("{shown} is not valid JSON at line {line}, column {column}: {reason}. Claude Code cannot use the file until it is fixed. Fix or remove the file; Mneme will not overwrite it.")]
    Malformed {
        /// The file.
        path: PathBuf,
        /// The file as shown to the user (`~/…`).
        shown: String,
        /// 1-based line of the error.
        line: usize,
        /// 1-based column (in characters) of the error.
        column: usize,
        /// What the parser found, e.g. `trailing comma`.
        reason: String,
    },
    /// Valid JSON, but not an object.
    #[error("{shown} holds a JSON {found}, not an object, so Claude Code ignores it. Replace its content with an object such as {{}}; Mneme will not overwrite it.")]
    NotAnObject {
        /// The file.
        path: PathBuf,
        /// The file as shown to the user.
        shown: String,
        /// The JSON type found instead, e.g. `array`.
        found: &'static str,
    },
    /// A known key has the wrong type, which makes Claude Code's schema reject the file.
    #[error("{shown}: \"{key}\" must be {expected}, but it is {found}. Claude Code rejects the whole file while a value has the wrong type, so none of its settings apply. Fix the value.")]
    InvalidValue {
        /// The file.
        path: PathBuf,
        /// The file as shown to the user.
        shown: String,
        /// The offending top-level key.
        key: String,
        /// The type Claude Code's schema wants.
        expected: &'static str,
        /// The JSON type found.
        found: &'static str,
    },
    /// Larger than Claude Code will read.
    #[error("{shown} is {size} bytes, over Claude Code's 2 MiB limit for settings files, so Claude Code ignores it. Make the file smaller.")]
    TooLarge {
        /// The file.
        path: PathBuf,
        /// The file as shown to the user.
        shown: String,
        /// Its size in bytes.
        size: u64,
    },
    /// Not UTF-8, so an edit could corrupt it.
    #[error("{shown} is not UTF-8 text. Re-save it as UTF-8; Mneme will not overwrite it.")]
    NotUtf8 {
        /// The file.
        path: PathBuf,
        /// The file as shown to the user.
        shown: String,
    },
    /// The file exists but could not be read.
    #[error("could not read {shown}: {source}. Check that the file and its folder are readable.")]
    Read {
        /// The file.
        path: PathBuf,
        /// The file as shown to the user.
        shown: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// Writing failed; the previous file is still in place.
    #[error("could not write {shown}: {source}. Check that its folder is writable and the disk is not full; the previous file was left as it was.")]
    Write {
        /// The file.
        path: PathBuf,
        /// The file as shown to the user.
        shown: String,
        /// The underlying error.
        #[source]
        source: io::Error,
    },
    /// The edited text did not read back as intended, so nothing was written.
    #[error("refusing to save \"{key}\" to {shown}: the edited file would not read back as expected ({detail}). The file was left as it was; please report this to the Mneme developers.")]
    EditMismatch {
        /// The file.
        path: PathBuf,
        /// The file as shown to the user.
        shown: String,
        /// The key being written.
        key: String,
        /// What differed.
        detail: String,
    },
    /// `--setting-sources` named something unknown.
    #[error("unknown setting source \"{name}\". Valid options are: user, project, local.")]
    UnknownSource {
        /// The name as given.
        name: String,
    },
}

impl SettingsError {
    /// The file the error is about, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            SettingsError::Malformed { path, .. }
            | SettingsError::NotAnObject { path, .. }
            | SettingsError::InvalidValue { path, .. }
            | SettingsError::TooLarge { path, .. }
            | SettingsError::NotUtf8 { path, .. }
            | SettingsError::Read { path, .. }
            | SettingsError::Write { path, .. }
            | SettingsError::EditMismatch { path, .. } => Some(path),
            SettingsError::UnknownSource { .. } => None,
        }
    }
}

/// `path` with the home folder shown as `~`, for messages.
pub fn shown_path(env: &Environment, path: &Path) -> String {
    match path.strip_prefix(&env.home) {
        Ok(rest) if !env.home.as_os_str().is_empty() => format!("~/{}", rest.display()),
        _ => path.display().to_string(),
    }
}

/// One settings file as found on disk.
#[derive(Debug)]
pub struct SettingsFile {
    /// Which source it belongs to.
    pub source: SettingSource,
    /// Where it is (or would be).
    pub path: PathBuf,
    /// Whether the source takes part in the merge (see [`EnabledSources`]).
    pub enabled: bool,
    /// Whether the file exists. A missing file is not an error.
    pub exists: bool,
    /// The parsed object, when the file is valid JSON holding an object. Also kept when a
    /// value has the wrong type, so the UI can still show the file; see [`Self::applies`].
    pub value: Option<Value>,
    /// Why Claude Code ignores this file, if it does.
    pub error: Option<SettingsError>,
}

impl SettingsFile {
    /// Reads one settings file the way Claude Code does. Never fails: problems are recorded.
    pub fn load(env: &Environment, source: SettingSource, path: &Path, enabled: bool) -> SettingsFile {
        let mut file =
            SettingsFile { source, path: path.to_path_buf(), enabled, exists: false, value: None, error: None };
        let shown = shown_path(env, path);
        let meta = match fs::metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return file,
            Err(source) => {
                file.exists = true;
                file.error = Some(SettingsError::Read { path: path.to_path_buf(), shown, source });
                return file;
            }
        };
        file.exists = true;
        if meta.len() > MAX_SETTINGS_FILE_BYTES {
            file.error = Some(SettingsError::TooLarge { path: path.to_path_buf(), shown, size: meta.len() });
            return file;
        }
        let bytes = match fs::read(path) {
            Ok(b) => b,
            Err(source) => {
                file.error = Some(SettingsError::Read { path: path.to_path_buf(), shown, source });
                return file;
            }
        };
        // Node decodes with replacement characters, so invalid bytes inside a string still
        // parse; lossy decoding reproduces that.
        let text = String::from_utf8_lossy(&bytes);
        match parse_settings_text(&text) {
            Ok(map) => {
                file.error = check_known_types(&map).map(|(key, expected, found)| SettingsError::InvalidValue {
                    path: path.to_path_buf(),
                    shown: shown.clone(),
                    key,
                    expected,
                    found,
                });
                file.value = Some(Value::Object(map));
            }
            Err(problem) => file.error = Some(problem.into_error(path, shown)),
        }
        file
    }

    /// A settings file built from a value already in memory (tests, `--settings` JSON).
    /// The same type checks as for a file on disk apply.
    pub fn from_value(source: SettingSource, path: impl Into<PathBuf>, value: Value) -> SettingsFile {
        let path = path.into();
        let shown = path.display().to_string();
        let mut file = SettingsFile { source, path, enabled: true, exists: true, value: None, error: None };
        match value {
            Value::Object(map) => {
                file.error = check_known_types(&map).map(|(key, expected, found)| SettingsError::InvalidValue {
                    path: file.path.clone(),
                    shown,
                    key,
                    expected,
                    found,
                });
                file.value = Some(Value::Object(map));
            }
            other => {
                file.error =
                    Some(SettingsError::NotAnObject { path: file.path.clone(), shown, found: json_type(&other) })
            }
        }
        file
    }

    /// Whether Claude Code uses this file's content at all (it exists, parsed, and passed the
    /// type checks). Independent of [`Self::enabled`].
    pub fn applies(&self) -> bool {
        self.error.is_none() && self.value.as_ref().is_some_and(Value::is_object)
    }

    /// The object, when the file applies.
    pub fn applied_object(&self) -> Option<&Map<String, Value>> {
        if self.applies() {
            self.value.as_ref().and_then(Value::as_object)
        } else {
            None
        }
    }
}

/// What went wrong parsing a settings text, before the path is known.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ParseProblem {
    Syntax { line: usize, column: usize, reason: String },
    NotAnObject(&'static str),
}

impl ParseProblem {
    pub(crate) fn into_error(self, path: &Path, shown: String) -> SettingsError {
        match self {
            ParseProblem::Syntax { line, column, reason } => {
                SettingsError::Malformed { path: path.to_path_buf(), shown, line, column, reason }
            }
            ParseProblem::NotAnObject(found) => SettingsError::NotAnObject { path: path.to_path_buf(), shown, found },
        }
    }
}

/// `parseSettingsFile`: whitespace-only text is an empty object; otherwise strict JSON after
/// a leading byte-order mark is dropped, and it must be an object.
fn parse_settings_text(text: &str) -> Result<Map<String, Value>, ParseProblem> {
    if js_trim(text).is_empty() {
        return Ok(Map::new());
    }
    let body = text.strip_prefix('\u{FEFF}').unwrap_or(text);
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(ParseProblem::NotAnObject(json_type(&other))),
        Err(e) => Err(syntax_problem(body, &e)),
    }
}

/// Turns a serde_json error into a line, a character column and a short reason. serde_json
/// counts columns in bytes; users count characters.
pub(crate) fn syntax_problem(text: &str, e: &serde_json::Error) -> ParseProblem {
    let line = e.line().max(1);
    let line_start = text.split_inclusive('\n').take(line - 1).map(str::len).sum::<usize>();
    let line_text = text[line_start.min(text.len())..].split('\n').next().unwrap_or("");
    // serde_json's column is the number of bytes consumed on the line, so it can end inside
    // the offending multi-byte character; that character still counts.
    let mut byte_col = e.column().min(line_text.len());
    let mut inside_char = false;
    while !line_text.is_char_boundary(byte_col) {
        byte_col -= 1;
        inside_char = true;
    }
    let column = (line_text[..byte_col].chars().count() + usize::from(inside_char)).max(1);
    let message = e.to_string();
    let mut reason = match message.rsplit_once(" at line ") {
        Some((head, _)) => head.to_string(),
        None => message,
    };
    // serde_json reports a comment as "expected value"; say what it really is.
    let at = line_start + byte_col.saturating_sub(1);
    let rest = text.get(at..).unwrap_or("");
    if rest.starts_with("//") || rest.starts_with("/*") {
        reason = "comments are not allowed (Claude Code reads settings as strict JSON)".to_string();
    }
    ParseProblem::Syntax { line, column, reason }
}

pub(crate) fn json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// The memory-related keys of Claude Code's settings schema and their types. A wrong type
/// makes zod reject the whole file; other keys are not checked here.
const KNOWN_TYPES: &[(&str, Expect)] = &[
    ("autoMemoryEnabled", Expect::Bool),
    ("autoDreamEnabled", Expect::Bool),
    ("autoMemoryDirectory", Expect::String),
    ("claudeMdExcludes", Expect::StringArray),
];

#[derive(Debug, Clone, Copy)]
enum Expect {
    Bool,
    String,
    StringArray,
}

fn check_known_types(map: &Map<String, Value>) -> Option<(String, &'static str, &'static str)> {
    for (key, expect) in KNOWN_TYPES {
        let Some(v) = map.get(*key) else { continue };
        let (ok, expected) = match expect {
            Expect::Bool => (v.is_boolean(), "true or false"),
            Expect::String => (v.is_string(), "a string"),
            Expect::StringArray => {
                (v.as_array().is_some_and(|a| a.iter().all(Value::is_string)), "an array of strings")
            }
        };
        if !ok {
            let found = match (expect, v) {
                (Expect::StringArray, Value::Array(_)) => "an array with a non-string item",
                _ => json_type(v),
            };
            return Some(((*key).to_string(), expected, found));
        }
    }
    None
}

/// lodash `mergeWith(target, src, settingsMergeCustomizer)`: objects merge recursively, two
/// arrays concatenate with duplicates removed, anything else from `src` replaces.
pub fn merge_settings(target: &mut Map<String, Value>, src: &Map<String, Value>) {
    for (key, value) in src {
        match (target.get_mut(key), value) {
            (Some(Value::Array(existing)), Value::Array(incoming)) => {
                let mut joined = std::mem::take(existing);
                joined.extend(incoming.iter().cloned());
                *existing = uniq(joined);
            }
            (Some(Value::Object(existing)), Value::Object(incoming)) => merge_settings(existing, incoming),
            (_, Value::Object(incoming)) => {
                let mut fresh = Map::new();
                merge_settings(&mut fresh, incoming);
                target.insert(key.clone(), Value::Object(fresh));
            }
            (_, other) => {
                target.insert(key.clone(), other.clone());
            }
        }
    }
}

/// lodash `uniq` uses SameValueZero: primitives compare by value, while objects and arrays are
/// distinct references after JSON parsing, so they are never removed.
fn uniq(items: Vec<Value>) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::with_capacity(items.len());
    for item in items {
        let dup = match &item {
            Value::Array(_) | Value::Object(_) => false,
            _ => out.iter().any(|seen| same_primitive(seen, &item)),
        };
        if !dup {
            out.push(item);
        }
    }
    out
}

fn same_primitive(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Null, Value::Null) => true,
        (Value::Bool(x), Value::Bool(y)) => x == y,
        (Value::String(x), Value::String(y)) => x == y,
        _ => false,
    }
}

/// Every settings file Claude Code would consult for one working folder, and their merge.
#[derive(Debug)]
pub struct Settings {
    files: Vec<SettingsFile>,
    merged: Map<String, Value>,
}

impl Default for Settings {
    fn default() -> Self {
        Settings::from_files(Vec::new())
    }
}

impl Settings {
    /// Builds the merge from files already loaded.
    pub fn from_files(files: Vec<SettingsFile>) -> Settings {
        let mut settings = Settings { files, merged: Map::new() };
        settings.merged = settings.compute_merged();
        settings
    }

    fn compute_merged(&self) -> Map<String, Value> {
        let mut merged = Map::new();
        // Claude Code loads a file once even when two sources resolve to it (cwd = home makes
        // the project file the user file); the first, lower-priority source keeps it.
        let mut seen: Vec<PathBuf> = Vec::new();
        for source in SettingSource::MERGE_ORDER {
            if source == SettingSource::Policy {
                if self.files.iter().any(|f| f.source == source && f.enabled) {
                    if let Some(policy) = self.source_object(source) {
                        merge_settings(&mut merged, &policy);
                    }
                }
                continue;
            }
            for file in self.files.iter().filter(|f| f.source == source && f.enabled) {
                let key = crate::git::normalize(&file.path);
                if seen.contains(&key) {
                    continue;
                }
                seen.push(key);
                if let Some(obj) = file.applied_object() {
                    merge_settings(&mut merged, obj);
                }
            }
        }
        merged
    }

    /// All files, in the order they were loaded.
    pub fn files(&self) -> &[SettingsFile] {
        &self.files
    }

    /// The first file of `source` (policy may have several: the base file, then drop-ins).
    pub fn file(&self, source: SettingSource) -> Option<&SettingsFile> {
        self.files.iter().find(|f| f.source == source)
    }

    /// The merged settings of the enabled sources (`getInitialSettings`).
    pub fn merged(&self) -> &Map<String, Value> {
        &self.merged
    }

    /// `getSettingsForSource(source)`: that source's own content, whether or not the source is
    /// enabled. Policy merges the base file and its drop-ins; an empty policy counts as none.
    pub fn source_object(&self, source: SettingSource) -> Option<Map<String, Value>> {
        if source == SettingSource::Policy {
            let mut merged = Map::new();
            let mut found = false;
            for obj in self.files.iter().filter(|f| f.source == source).filter_map(SettingsFile::applied_object) {
                if !obj.is_empty() {
                    merge_settings(&mut merged, obj);
                    found = true;
                }
            }
            return (found && !merged.is_empty()).then_some(merged);
        }
        self.files.iter().find(|f| f.source == source).and_then(SettingsFile::applied_object).cloned()
    }

    /// `autoMemoryEnabled` from the merge. Project settings count: a repository may opt out.
    pub fn auto_memory_enabled(&self) -> Option<bool> {
        self.merged.get("autoMemoryEnabled").and_then(Value::as_bool)
    }

    /// `autoDreamEnabled` from the merge.
    pub fn auto_dream_enabled(&self) -> Option<bool> {
        self.merged.get("autoDreamEnabled").and_then(Value::as_bool)
    }

    /// `claudeMdExcludes` from the merge (arrays from all sources are concatenated); only
    /// string entries.
    pub fn claude_md_excludes(&self) -> Vec<String> {
        match self.merged.get("claudeMdExcludes") {
            Some(Value::Array(items)) => items.iter().filter_map(Value::as_str).map(str::to_string).collect(),
            _ => Vec::new(),
        }
    }

    /// The raw `autoMemoryDirectory` a Claude Code 2.1.197 session uses, and its source: the
    /// first source that defines it among policy → flag → local → project → user, read whether
    /// or not `--setting-sources` enables the source.
    ///
    /// Claude Code consults local and project settings only in a trusted workspace, and a
    /// session only runs once the folder is trusted (the trust dialog lists a checked-in
    /// `autoMemoryDirectory` as a warning) or under `claude -p`, which always counts as trusted.
    /// So unlike the 2.1.88 source, which never read project settings here, a repository's
    /// `.claude/settings.json` can move the memory folder; the source tells the UI to say so.
    /// The value is not validated here, and a rejected value does **not** fall back to a later
    /// source (see `paths::resolve_auto_mem_dir`).
    pub fn auto_memory_directory(&self) -> Option<(SettingSource, String)> {
        self.first_memory_directory(&[
            SettingSource::Policy,
            SettingSource::Flag,
            SettingSource::Local,
            SettingSource::Project,
            SettingSource::User,
        ])
    }

    /// What Claude Code computes before the folder is trusted: policy → flag → user only. Use
    /// it to show where memory would go if the user declined to trust a repository.
    pub fn auto_memory_directory_untrusted(&self) -> Option<(SettingSource, String)> {
        self.first_memory_directory(&[SettingSource::Policy, SettingSource::Flag, SettingSource::User])
    }

    /// [`Settings::auto_memory_directory`] as newer releases read it
    /// (`Profile::memory_dir_from_enabled_sources`): only from the sources `--setting-sources`
    /// enables (policy and a flag file always are), so `--setting-sources project` takes the
    /// project's value over the local one, and `--setting-sources user` neither.
    pub fn auto_memory_directory_from_enabled(&self) -> Option<(SettingSource, String)> {
        let order = [SettingSource::Policy, SettingSource::Flag, SettingSource::Local, SettingSource::Project, SettingSource::User];
        let enabled: Vec<SettingSource> =
            order.into_iter().filter(|&s| self.files.iter().any(|f| f.source == s && f.enabled)).collect();
        self.first_memory_directory(&enabled)
    }

    fn first_memory_directory(&self, order: &[SettingSource]) -> Option<(SettingSource, String)> {
        order.iter().find_map(|&source| {
            let obj = self.source_object(source)?;
            obj.get("autoMemoryDirectory").and_then(Value::as_str).map(|s| (source, s.to_string()))
        })
    }

    /// `getEffectiveSettingSource`: the highest-priority enabled source that defines `key`.
    pub fn effective_source(&self, key: &str) -> Option<SettingSource> {
        SettingSource::MERGE_ORDER.iter().rev().copied().find(|&source| {
            self.files.iter().any(|f| f.source == source && f.enabled)
                && self.source_object(source).is_some_and(|o| o.contains_key(key))
        })
    }

    /// Every problem found while loading, in load order.
    pub fn errors(&self) -> impl Iterator<Item = &SettingsError> {
        self.files.iter().filter_map(|f| f.error.as_ref())
    }
}

/// The user settings file: `<config home>/settings.json`, or `cowork_settings.json` when
/// `CLAUDE_CODE_USE_COWORK_PLUGINS` is truthy.
pub fn user_settings_path(env: &Environment) -> PathBuf {
    let name = if env.is_truthy("CLAUDE_CODE_USE_COWORK_PLUGINS") { "cowork_settings.json" } else { "settings.json" };
    env.config_home().join(name)
}

/// `<cwd>/.claude/settings.json`.
pub fn project_settings_path(cwd: &Path) -> PathBuf {
    cwd.join(".claude").join("settings.json")
}

/// `<cwd>/.claude/settings.local.json`.
pub fn local_settings_path(cwd: &Path) -> PathBuf {
    cwd.join(".claude").join("settings.local.json")
}

/// `<managed dir>/managed-settings.json` (Linux: `/etc/claude-code`).
pub fn managed_settings_path(env: &Environment) -> PathBuf {
    env.managed_dir.join("managed-settings.json")
}

/// The policy drop-ins Claude Code merges over `managed-settings.json`: `*.json` files or
/// symlinks in `managed-settings.d/`, not hidden, sorted by name.
pub fn managed_drop_in_paths(env: &Environment) -> Vec<PathBuf> {
    let dir = env.managed_dir.join("managed-settings.d");
    let Ok(entries) = fs::read_dir(&dir) else { return Vec::new() };
    let mut names: Vec<String> = entries
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file() || t.is_symlink()))
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
        .collect();
    names.sort();
    names.into_iter().map(|n| dir.join(n)).collect()
}

/// Loads every settings source for a session started in `cwd` (the original working folder).
/// `flag_file` is the `--settings FILE` argument; a relative path is taken from `cwd`.
/// Disabled sources are still read, because Claude Code consults them for
/// `autoMemoryDirectory` regardless of `--setting-sources`.
pub fn load_settings(env: &Environment, cwd: &Path, enabled: EnabledSources, flag_file: Option<&Path>) -> Settings {
    load_settings_with_local(env, cwd, cwd, enabled, flag_file)
}

/// [`load_settings`] with the local settings read from `local_dir` (newer releases take the
/// repository root's `.claude/settings.local.json` when started in a sub-folder).
pub fn load_settings_with_local(
    env: &Environment,
    cwd: &Path,
    local_dir: &Path,
    enabled: EnabledSources,
    flag_file: Option<&Path>,
) -> Settings {
    let mut files = vec![
        SettingsFile::load(env, SettingSource::User, &user_settings_path(env), enabled.user),
        SettingsFile::load(env, SettingSource::Project, &project_settings_path(cwd), enabled.project),
        SettingsFile::load(env, SettingSource::Local, &local_settings_path(local_dir), enabled.local),
    ];
    if let Some(flag) = flag_file {
        let path = if flag.is_absolute() { flag.to_path_buf() } else { cwd.join(flag) };
        files.push(SettingsFile::load(env, SettingSource::Flag, &path, true));
    }
    files.push(SettingsFile::load(env, SettingSource::Policy, &managed_settings_path(env), true));
    for drop_in in managed_drop_in_paths(env) {
        files.push(SettingsFile::load(env, SettingSource::Policy, &drop_in, true));
    }
    Settings::from_files(files)
}

/// Sets one top-level key in the user settings file and returns the file's path.
///
/// Every other byte of the file stays as it was: other keys, their order, indentation and
/// line endings. (Appending a new key to an object written on one line spreads that object
/// over several lines.) A missing file (and config home) is created as `{\n  "key": value\n}\n`. A
/// file Claude Code cannot read (not strict JSON, not an object, not UTF-8, too large) is left
/// untouched and reported. The write is atomic: a temporary file in the same folder is
/// flushed to disk, keeps the old file's permissions, and is renamed over the original. When
/// the settings file is a symlink (dotfile managers), the link's target is replaced instead.
pub fn write_user_setting(env: &Environment, key: &str, value: Value) -> Result<PathBuf, SettingsError> {
    let path = user_settings_path(env);
    let target = symlink_target(&path);
    let shown = shown_path(env, &path);
    let existing = match fs::metadata(&target) {
        Ok(meta) if meta.len() > MAX_SETTINGS_FILE_BYTES => {
            return Err(SettingsError::TooLarge { path, shown, size: meta.len() })
        }
        Ok(_) => match fs::read(&target) {
            Ok(bytes) => Some(bytes),
            Err(source) => return Err(SettingsError::Read { path, shown, source }),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => None,
        Err(source) => return Err(SettingsError::Read { path, shown, source }),
    };
    let text = match existing {
        None => fresh_settings_text(key, &value),
        Some(bytes) => {
            let text = String::from_utf8(bytes)
                .map_err(|_| SettingsError::NotUtf8 { path: path.clone(), shown: shown.clone() })?;
            if js_trim(&text).is_empty() {
                fresh_settings_text(key, &value)
            } else {
                let (bom, body) = match text.strip_prefix('\u{FEFF}') {
                    Some(body) => ("\u{FEFF}", body),
                    None => ("", text.as_str()),
                };
                match set_top_level_key(body, key, &value) {
                    Ok(edited) => format!("{bom}{edited}"),
                    Err(EditFailure::Parse(problem)) => return Err(problem.into_error(&path, shown)),
                    Err(EditFailure::Mismatch(detail)) => {
                        return Err(SettingsError::EditMismatch { path, shown, key: key.to_string(), detail })
                    }
                }
            }
        }
    };
    if let Some(dir) = target.parent() {
        fs::create_dir_all(dir).map_err(|source| SettingsError::Write {
            path: path.clone(),
            shown: shown.clone(),
            source,
        })?;
    }
    atomic_write(&target, text.as_bytes()).map_err(|source| SettingsError::Write {
        path: path.clone(),
        shown,
        source,
    })?;
    Ok(path)
}

/// The content of a new settings file holding one key, formatted like Claude Code's own
/// `JSON.stringify(settings, null, 2) + "\n"`.
fn fresh_settings_text(key: &str, value: &Value) -> String {
    let mut map = Map::new();
    map.insert(key.to_string(), value.clone());
    let mut out = serde_json::to_string_pretty(&Value::Object(map)).unwrap_or_else(|_| "{}".to_string());
    out.push('\n');
    out
}

#[derive(Debug)]
enum EditFailure {
    Parse(ParseProblem),
    Mismatch(String),
}

/// `body` as the object Claude Code's `JSON.parse` would see, or why it is not one.
fn parse_object(body: &str) -> Result<Map<String, Value>, EditFailure> {
    match serde_json::from_str::<Value>(body) {
        Ok(Value::Object(map)) => Ok(map),
        Ok(other) => Err(EditFailure::Parse(ParseProblem::NotAnObject(json_type(&other)))),
        Err(e) => Err(EditFailure::Parse(syntax_problem(body, &e))),
    }
}

/// The format-preserving syntax tree of strict JSON `body`, and its root object.
fn parse_cst(body: &str) -> Result<(CstRootNode, jsonc_parser::cst::CstObject), EditFailure> {
    let strict =
        ParseOptions { allow_comments: false, allow_loose_object_property_names: false, allow_trailing_commas: false };
    let root = CstRootNode::parse(body, &strict).map_err(|e| {
        EditFailure::Parse(ParseProblem::Syntax {
            line: e.line_display(),
            column: e.column_display(),
            reason: e.kind().to_string(),
        })
    })?;
    let object = root
        .object_value()
        .ok_or_else(|| EditFailure::Mismatch("the CST has no root object".to_string()))?;
    Ok((root, object))
}

/// Edits `body` (strict JSON holding an object) so that `key` holds `value`, touching only the
/// value's bytes (or appending the property). Every occurrence of a duplicated key is set,
/// because `JSON.parse` keeps the last one. The result is re-parsed and compared before it
/// is returned, so a CST bug can never corrupt a user's file.
fn set_top_level_key(body: &str, key: &str, value: &Value) -> Result<String, EditFailure> {
    let before = parse_object(body)?;
    let (root, object) = parse_cst(body)?;
    let matching: Vec<_> = object
        .properties()
        .into_iter()
        .filter(|p| p.name().and_then(|n| n.decoded_value().ok()).is_some_and(|n| n == key))
        .collect();
    if matching.is_empty() {
        object.append(&cst_escape(key), to_cst_input(value));
    } else {
        for prop in matching {
            prop.set_value(to_cst_input(value));
        }
    }
    let edited = root.to_string();
    verify_edit(&before, &edited, key, value).map_err(|e| EditFailure::Mismatch(e.to_string()))?;
    Ok(edited)
}

/// Why a format-preserving edit was refused: re-reading it did not give exactly the old
/// settings with one key changed.
#[derive(Debug)]
enum EditCheck {
    NotAnObject,
    InvalidJson(serde_json::Error),
    KeyNotSet(String),
    KeysMoved,
    ValueChanged(String),
}

impl std::fmt::Display for EditCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            EditCheck::NotAnObject => write!(f, "the result is not an object"),
            EditCheck::InvalidJson(e) => write!(f, "the result is not valid JSON: {e}"),
            EditCheck::KeyNotSet(k) => write!(f, "\"{k}\" did not take the new value"),
            EditCheck::KeysMoved => write!(f, "other keys changed or moved"),
            EditCheck::ValueChanged(k) => write!(f, "the value of \"{k}\" changed"),
        }
    }
}

fn verify_edit(before: &Map<String, Value>, edited: &str, key: &str, value: &Value) -> Result<(), EditCheck> {
    let after = match serde_json::from_str::<Value>(edited) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(EditCheck::NotAnObject),
        Err(e) => return Err(EditCheck::InvalidJson(e)),
    };
    if after.get(key) != Some(value) {
        return Err(EditCheck::KeyNotSet(key.to_string()));
    }
    let old_keys: Vec<&String> = before.keys().filter(|k| k.as_str() != key).collect();
    let new_keys: Vec<&String> = after.keys().filter(|k| k.as_str() != key).collect();
    if old_keys != new_keys {
        return Err(EditCheck::KeysMoved);
    }
    if let Some(k) = old_keys.iter().find(|k| before.get(k.as_str()) != after.get(k.as_str())) {
        return Err(EditCheck::ValueChanged(k.to_string()));
    }
    Ok(())
}

fn to_cst_input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(cst_escape(s)),
        Value::Array(items) => CstInputValue::Array(items.iter().map(to_cst_input).collect()),
        Value::Object(map) => {
            CstInputValue::Object(map.iter().map(|(k, v)| (cst_escape(k), to_cst_input(v))).collect())
        }
    }
}

/// jsonc-parser 0.26 writes a new string literal as `"` + text + `"` with only `"` escaped,
/// so backslashes, newlines and control characters would come out as invalid JSON. Hand it
/// serde_json's escaping minus the quote escapes it adds itself. In serde_json's output the
/// backslash right before a `"` is always that quote's own escape, so the replace is exact.
/// Should the library start escaping properly, `verify_edit` refuses the result instead of
/// writing a double-escaped value.
fn cst_escape(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""));
    quoted[1..quoted.len() - 1].replace("\\\"", "\"")
}

/// Follows symlinks (up to 40, like the kernel) without requiring the final target to exist,
/// so a dangling dotfile link gets its target created rather than being replaced.
fn symlink_target(path: &Path) -> PathBuf {
    let mut current = path.to_path_buf();
    for _ in 0..40 {
        match fs::read_link(&current) {
            Ok(next) => {
                current =
                    if next.is_absolute() { next } else { current.parent().map(|p| p.join(&next)).unwrap_or(next) };
            }
            Err(_) => break,
        }
    }
    current
}

/// Settings files are written the one way Mneme writes files ([`crate::atomic`]).
use crate::atomic::write_atomic as atomic_write;

/// Reads at most `limit` bytes from the start of a file.
pub(crate) fn read_head(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    File::open(path)?.take(limit).read_to_end(&mut buf)?;
    Ok(buf)
}

/// Removes one top-level key from the user settings file and returns the file's path.
///
/// Written like [`write_user_setting`]: every other byte stays as it was, a file Claude Code
/// cannot read is left untouched and reported, the write is atomic and follows a symlinked
/// settings file to its target. A missing file, or one without the key, is not written at all.
/// Every occurrence of a duplicated key goes, since `JSON.parse` would otherwise keep one.
pub fn remove_user_setting(env: &Environment, key: &str) -> Result<PathBuf, SettingsError> {
    let path = user_settings_path(env);
    let target = symlink_target(&path);
    let shown = shown_path(env, &path);
    let bytes = match fs::metadata(&target) {
        Ok(meta) if meta.len() > MAX_SETTINGS_FILE_BYTES => {
            return Err(SettingsError::TooLarge { path, shown, size: meta.len() })
        }
        Ok(_) => match fs::read(&target) {
            Ok(bytes) => bytes,
            Err(source) => return Err(SettingsError::Read { path, shown, source }),
        },
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(path),
        Err(source) => return Err(SettingsError::Read { path, shown, source }),
    };
    let text = String::from_utf8(bytes).map_err(|_| SettingsError::NotUtf8 { path: path.clone(), shown: shown.clone() })?;
    if js_trim(&text).is_empty() {
        return Ok(path);
    }
    let (bom, body) = match text.strip_prefix('\u{FEFF}') {
        Some(body) => ("\u{FEFF}", body),
        None => ("", text.as_str()),
    };
    let edited = match remove_top_level_key(body, key) {
        Ok(Some(edited)) => format!("{bom}{edited}"),
        Ok(None) => return Ok(path),
        Err(EditFailure::Parse(problem)) => return Err(problem.into_error(&path, shown)),
        Err(EditFailure::Mismatch(detail)) => {
            return Err(SettingsError::EditMismatch { path, shown, key: key.to_string(), detail })
        }
    };
    atomic_write(&target, edited.as_bytes()).map_err(|source| SettingsError::Write { path: path.clone(), shown, source })?;
    Ok(path)
}

/// `body` without the top-level property `key` (with its comma), or `None` when it has none.
/// The result is re-parsed and must equal the old settings minus that key, in the same order.
fn remove_top_level_key(body: &str, key: &str) -> Result<Option<String>, EditFailure> {
    let before = parse_object(body)?;
    if !before.contains_key(key) {
        return Ok(None);
    }
    let (root, object) = parse_cst(body)?;
    for prop in object.properties() {
        if prop.name().and_then(|n| n.decoded_value().ok()).is_some_and(|n| n == key) {
            prop.remove();
        }
    }
    let edited = root.to_string();
    let after = match serde_json::from_str::<Value>(&edited) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(EditFailure::Mismatch(EditCheck::NotAnObject.to_string())),
        Err(e) => return Err(EditFailure::Mismatch(EditCheck::InvalidJson(e).to_string())),
    };
    let mut expected = before.clone();
    expected.remove(key);
    if after.contains_key(key) {
        return Err(EditFailure::Mismatch(format!("\"{key}\" is still there")));
    }
    if !after.keys().eq(expected.keys()) {
        return Err(EditFailure::Mismatch(EditCheck::KeysMoved.to_string()));
    }
    if let Some(k) = expected.keys().find(|k| expected.get(k.as_str()) != after.get(k.as_str())) {
        return Err(EditFailure::Mismatch(EditCheck::ValueChanged(k.to_string()).to_string()));
    }
    Ok(Some(edited))
}

#[cfg(test)]
mod remove_tests {
    use super::*;

    fn env_with(text: Option<&str>) -> (tempfile::TempDir, Environment, PathBuf) {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let config = root.join("home/.claude");
        fs::create_dir_all(&config).unwrap();
        let env = Environment::with_home(root.join("home")).set_var("CLAUDE_CONFIG_DIR", config.to_str().unwrap());
        let path = config.join("settings.json");
        if let Some(text) = text {
            fs::write(&path, text).unwrap();
        }
        (t, env, path)
    }

    #[test]
    fn removes_the_key_and_keeps_every_other_byte() {
        let cases = [
            ("{\n  \"a\": 1,\n  \"autoMemoryDirectory\": \"~/m\",\n  \"b\": [1, 2]\n}\n", "{\n  \"a\": 1,\n  \"b\": [1, 2]\n}\n"),
            ("{\n    \"autoMemoryDirectory\": \"~/m\",\n    \"b\": true\n}", "{\n    \"b\": true\n}"),
            ("{\r\n  \"b\": true,\r\n  \"autoMemoryDirectory\": \"~/m\"\r\n}\r\n", "{\r\n  \"b\": true\r\n}\r\n"),
            ("\u{FEFF}{\"autoMemoryDirectory\": \"/x/y\"}", "\u{FEFF}{}"),
        ];
        for (before, after) in cases {
            let (_t, env, path) = env_with(Some(before));
            remove_user_setting(&env, "autoMemoryDirectory").unwrap();
            let got = fs::read_to_string(&path).unwrap();
            let parsed: Value = serde_json::from_str(got.trim_start_matches('\u{FEFF}')).unwrap();
            assert!(parsed.get("autoMemoryDirectory").is_none(), "{got:?}");
            assert_eq!(got, after, "from {before:?}");
        }
    }

    #[test]
    fn missing_file_or_key_writes_nothing() {
        let (_t, env, path) = env_with(None);
        remove_user_setting(&env, "autoMemoryDirectory").unwrap();
        assert!(!path.exists());
        let text = "{ \"a\":1 }";
        let (_t, env, path) = env_with(Some(text));
        remove_user_setting(&env, "autoMemoryDirectory").unwrap();
        assert_eq!(fs::read_to_string(&path).unwrap(), text);
    }

    #[test]
    fn malformed_file_is_reported_and_untouched() {
        for text in ["{ \"autoMemoryDirectory\": \"/x\", // note\n}", "[1]", "{\"autoMemoryDirectory\": \"/x\",}"] {
            let (_t, env, path) = env_with(Some(text));
            let err = remove_user_setting(&env, "autoMemoryDirectory").unwrap_err();
            assert!(matches!(err, SettingsError::Malformed { .. } | SettingsError::NotAnObject { .. }), "{text}: {err:?}");
            assert_eq!(fs::read_to_string(&path).unwrap(), text);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Home {
        _t: tempfile::TempDir,
        root: PathBuf,
        env: Environment,
    }

    /// A temporary home with `CLAUDE_CONFIG_DIR` inside it and a private managed dir, so no
    /// test ever reads `~/.claude` or `/etc/claude-code`.
    fn home() -> Home {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let env = Environment { managed_dir: root.join("managed"), ..Environment::with_home(root.join("home")) }
            .set_var("CLAUDE_CONFIG_DIR", root.join("home/.claude").to_str().unwrap());
        fs::create_dir_all(root.join("home/.claude")).unwrap();
        fs::create_dir_all(root.join("repo/.claude")).unwrap();
        Home { _t: t, root, env }
    }

    fn write(p: &Path, text: &str) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    #[test]
    fn setting_sources_flag() {
        /// (flag value, Ok((user, project, local)) or Err(rejected name))
        type Case = (&'static str, Result<(bool, bool, bool), &'static str>);
        let cases: &[Case] = &[
            ("", Ok((false, false, false))),
            ("user", Ok((true, false, false))),
            ("user,project,local", Ok((true, true, true))),
            (" local , project ", Ok((false, true, true))),
            ("user,user", Ok((true, false, false))),
            ("users", Err("users")),
            ("user,", Err("")),
            ("policy", Err("policy")),
        ];
        for (input, expect) in cases {
            match (EnabledSources::parse(input), expect) {
                (Ok(got), Ok((u, p, l))) => assert_eq!((got.user, got.project, got.local), (*u, *p, *l), "{input:?}"),
                (Err(SettingsError::UnknownSource { name }), Err(bad)) => {
                    assert_eq!(name, *bad);
                    let msg = EnabledSources::parse(input).unwrap_err().to_string();
                    assert!(msg.contains("Valid options are: user, project, local"), "{msg}");
                }
                (got, _) => panic!("{input:?}: {got:?}"),
            }
        }
        let none = EnabledSources::parse("").unwrap();
        assert!(none.contains(SettingSource::Policy) && none.contains(SettingSource::Flag));
        assert!(!none.contains(SettingSource::User));
        assert_eq!(SettingSource::Local.as_str(), "localSettings");
        assert_eq!(serde_json::to_string(&SettingSource::Policy).unwrap(), "\"policySettings\"");
    }

    #[test]
    fn parse_text_cases() {
        let ok: &[(&str, Value)] = &[
            ("", json!({})),
            ("  \n\t ", json!({})),
            ("\u{FEFF}", json!({})),
            ("\u{FEFF}{\"a\":1}", json!({"a": 1})),
            ("{\"a\":1,\"a\":2}", json!({"a": 2})),
            ("{\r\n  \"π\": \"😀\"\r\n}\r\n", json!({"π": "😀"})),
        ];
        for (text, expect) in ok {
            assert_eq!(Value::Object(parse_settings_text(text).unwrap()), *expect, "{text:?}");
        }
        let bad: &[(&str, ParseProblem)] = &[
            ("[1]", ParseProblem::NotAnObject("array")),
            ("null", ParseProblem::NotAnObject("null")),
            ("\"x\"", ParseProblem::NotAnObject("string")),
            ("{\n  \"a\": 1,\n  \"b\": 2,\n}", syntax(4, 1, "trailing comma")),
            (
                "{\n  // note\n  \"a\": 1\n}",
                syntax(2, 3, "comments are not allowed (Claude Code reads settings as strict JSON)"),
            ),
            (
                "{\n  \"a\": 1 /* x */\n}",
                syntax(2, 10, "comments are not allowed (Claude Code reads settings as strict JSON)"),
            ),
            ("{\"é😀\": tru}", syntax(1, 11, "expected ident")),
            ("{\"a\": é}", syntax(1, 7, "expected value")),
            ("{\"a\": 1}\r\n😀", syntax(2, 1, "trailing characters")),
            ("{\"a\": 1", syntax(1, 7, "EOF while parsing an object")),
            ("{a: 1}", syntax(1, 2, "key must be a string")),
            ("{} {}", syntax(1, 4, "trailing characters")),
        ];
        for (text, expect) in bad {
            assert_eq!(parse_settings_text(text).unwrap_err(), *expect, "{text:?}");
        }
    }

    fn syntax(line: usize, column: usize, reason: &str) -> ParseProblem {
        ParseProblem::Syntax { line, column, reason: reason.to_string() }
    }

    #[test]
    fn malformed_file_is_reported_with_position_and_others_still_load() {
        let h = home();
        write(&h.root.join("home/.claude/settings.json"), "{\n  \"autoMemoryEnabled\": false,\n  \"x\": [1,],\n}\n");
        write(&h.root.join("repo/.claude/settings.json"), "{\"autoDreamEnabled\": true}");
        let s = load_settings(&h.env, &h.root.join("repo"), EnabledSources::all(), None);
        let errors: Vec<_> = s.errors().collect();
        assert_eq!(errors.len(), 1);
        let msg = errors[0].to_string();
        assert_eq!(
            msg,
            "~/.claude/settings.json is not valid JSON at line 3, column 11: trailing comma. Claude Code cannot use the file until it is fixed. Fix or remove the file; Mneme will not overwrite it."
        );
        assert_eq!(s.auto_memory_enabled(), None);
        assert_eq!(s.auto_dream_enabled(), Some(true));
        assert!(s.file(SettingSource::User).unwrap().exists);
        assert!(!s.file(SettingSource::Local).unwrap().exists);
        assert!(s.file(SettingSource::Local).unwrap().error.is_none());
    }

    #[test]
    fn wrong_type_rejects_the_whole_file_like_zod() {
        for (text, key) in [
            (r#"{"autoMemoryEnabled": "false", "autoDreamEnabled": true}"#, "autoMemoryEnabled"),
            (r#"{"autoMemoryEnabled": null, "autoDreamEnabled": true}"#, "autoMemoryEnabled"),
            (r#"{"autoMemoryDirectory": 5, "autoDreamEnabled": true}"#, "autoMemoryDirectory"),
            (r#"{"claudeMdExcludes": ["a", 1], "autoDreamEnabled": true}"#, "claudeMdExcludes"),
            (r#"{"claudeMdExcludes": "a", "autoDreamEnabled": true}"#, "claudeMdExcludes"),
        ] {
            let f =
                SettingsFile::from_value(SettingSource::User, "/u/settings.json", serde_json::from_str(text).unwrap());
            assert!(!f.applies(), "{text}");
            assert!(f.value.is_some());
            match &f.error {
                Some(SettingsError::InvalidValue { key: k, .. }) => assert_eq!(k, key),
                other => panic!("{text}: {other:?}"),
            }
            let s = Settings::from_files(vec![f]);
            assert_eq!(s.auto_dream_enabled(), None, "{text}");
        }
    }

    #[test]
    fn merge_is_lodash_like() {
        let mut target = json!({"a": 1, "arr": ["x", "y", {"o": 1}], "obj": {"k": 1, "deep": {"z": 1}}, "s": "keep"})
            .as_object()
            .unwrap()
            .clone();
        let src = json!({"a": 2, "arr": ["y", "z", {"o": 1}, 1, 1.0], "obj": {"deep": {"w": 2}, "k2": [1]}, "n": null, "s": {"now": "obj"}});
        merge_settings(&mut target, src.as_object().unwrap());
        assert_eq!(
            Value::Object(target),
            json!({"a": 2, "arr": ["x", "y", {"o": 1}, "z", {"o": 1}, 1], "obj": {"k": 1, "deep": {"z": 1, "w": 2}, "k2": [1]}, "s": {"now": "obj"}, "n": null})
        );
    }

    #[test]
    fn priority_and_enabled_sources() {
        let h = home();
        let repo = h.root.join("repo");
        write(
            &h.root.join("home/.claude/settings.json"),
            r#"{"autoMemoryEnabled": true, "claudeMdExcludes": ["u", "both"], "who": "user"}"#,
        );
        write(
            &repo.join(".claude/settings.json"),
            r#"{"autoMemoryEnabled": false, "claudeMdExcludes": ["p", "both"], "who": "project"}"#,
        );
        write(&repo.join(".claude/settings.local.json"), r#"{"who": "local"}"#);
        let flag = h.root.join("flag.json");
        write(&flag, r#"{"who": "flag"}"#);
        write(&h.root.join("managed/managed-settings.json"), r#"{"autoDreamEnabled": false, "who": "policy-base"}"#);
        write(&h.root.join("managed/managed-settings.d/20-b.json"), r#"{"who": "policy-20"}"#);
        write(
            &h.root.join("managed/managed-settings.d/10-a.json"),
            r#"{"who": "policy-10", "claudeMdExcludes": ["m"]}"#,
        );
        write(&h.root.join("managed/managed-settings.d/.hidden.json"), r#"{"who": "hidden"}"#);
        write(&h.root.join("managed/managed-settings.d/notes.txt"), r#"{"who": "txt"}"#);

        let s = load_settings(&h.env, &repo, EnabledSources::all(), Some(&flag));
        assert_eq!(s.merged()["who"], "policy-20");
        assert_eq!(s.auto_memory_enabled(), Some(false), "project settings may opt out");
        assert_eq!(s.auto_dream_enabled(), Some(false));
        assert_eq!(s.claude_md_excludes(), ["u", "both", "p", "m"]);
        assert_eq!(s.effective_source("who"), Some(SettingSource::Policy));
        assert_eq!(s.effective_source("autoMemoryEnabled"), Some(SettingSource::Project));
        assert_eq!(s.files().iter().filter(|f| f.source == SettingSource::Policy).count(), 3);

        let s = load_settings(&h.env, &repo, EnabledSources::parse("user").unwrap(), None);
        assert_eq!(s.auto_memory_enabled(), Some(true));
        assert_eq!(s.merged()["who"], "policy-20");
        assert_eq!(s.effective_source("autoMemoryEnabled"), Some(SettingSource::User));

        fs::remove_dir_all(h.root.join("managed")).unwrap();
        let s = load_settings(&h.env, &repo, EnabledSources::all(), Some(&flag));
        assert_eq!(s.merged()["who"], "flag");
        let s = load_settings(&h.env, &repo, EnabledSources::all(), None);
        assert_eq!(s.merged()["who"], "local");
    }

    #[test]
    fn home_as_cwd_loads_the_shared_file_once() {
        let h = home();
        let env =
            Environment { home: h.root.join("home"), vars: Default::default(), managed_dir: h.root.join("managed") };
        write(&h.root.join("home/.claude/settings.json"), r#"{"claudeMdExcludes": ["a"]}"#);
        let s = load_settings(&env, &h.root.join("home"), EnabledSources::all(), None);
        assert_eq!(s.claude_md_excludes(), ["a"]);
        assert_eq!(s.effective_source("claudeMdExcludes"), Some(SettingSource::Project));
    }

    #[test]
    fn auto_memory_directory_source_order() {
        let file = |source, v: Value| SettingsFile::from_value(source, format!("/{}", source.as_str()), v);
        let dir = |d: &str| json!({ "autoMemoryDirectory": d });
        let all = || {
            vec![
                file(SettingSource::User, dir("/user")),
                file(SettingSource::Project, dir("/project")),
                file(SettingSource::Local, dir("/local")),
                file(SettingSource::Flag, dir("/flag")),
                file(SettingSource::Policy, dir("/policy")),
            ]
        };
        let pick = |files: Vec<SettingsFile>, trusted: bool| {
            let s = Settings::from_files(files);
            if trusted {
                s.auto_memory_directory()
            } else {
                s.auto_memory_directory_untrusted()
            }
        };
        assert_eq!(pick(all(), true), Some((SettingSource::Policy, "/policy".into())));
        let without =
            |drop: &[SettingSource]| all().into_iter().filter(|f| !drop.contains(&f.source)).collect::<Vec<_>>();
        use SettingSource::*;
        assert_eq!(pick(without(&[Policy]), true), Some((Flag, "/flag".into())));
        assert_eq!(pick(without(&[Policy, Flag]), true), Some((Local, "/local".into())));
        assert_eq!(pick(without(&[Policy, Flag, Local]), true), Some((Project, "/project".into())));
        assert_eq!(pick(without(&[Policy, Flag]), false), Some((User, "/user".into())), "untrusted: no local/project");
        assert_eq!(pick(without(&[Policy, Flag, User]), false), None);
        assert_eq!(pick(without(&[Policy, Flag, Local, Project]), true), Some((User, "/user".into())));
        // An empty string is still "defined" and stops the search.
        let files = vec![file(Local, dir("")), file(User, dir("/user"))];
        assert_eq!(pick(files, true), Some((Local, String::new())));
        // A source whose file is rejected contributes nothing.
        let files =
            vec![file(Local, json!({"autoMemoryDirectory": "/l", "autoMemoryEnabled": 1})), file(User, dir("/user"))];
        assert_eq!(pick(files, true), Some((User, "/user".into())));
        // Disabled sources still count, as in Claude Code's getSettingsForSource.
        let mut files = all();
        files.iter_mut().for_each(|f| f.enabled = f.source == Policy || f.source == Flag);
        let files: Vec<_> = files.into_iter().filter(|f| matches!(f.source, User | Project)).collect();
        let s = Settings::from_files(files);
        assert_eq!(s.auto_memory_directory(), Some((Project, "/project".into())));
        assert!(s.merged().is_empty(), "disabled sources stay out of the merge");
    }

    #[test]
    fn write_creates_missing_file_and_config_home() {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let env = Environment::with_home(root.join("h"))
            .set_var("CLAUDE_CONFIG_DIR", root.join("h/new dir/.claude").to_str().unwrap());
        let p = write_user_setting(&env, "autoMemoryEnabled", json!(false)).unwrap();
        assert_eq!(p, root.join("h/new dir/.claude/settings.json"));
        assert_eq!(fs::read_to_string(&p).unwrap(), "{\n  \"autoMemoryEnabled\": false\n}\n");
        let cowork = env.clone().set_var("CLAUDE_CODE_USE_COWORK_PLUGINS", "1");
        let p = write_user_setting(&cowork, "autoDreamEnabled", json!(true)).unwrap();
        assert!(p.ends_with("cowork_settings.json"));
        // A whitespace-only file counts as empty.
        fs::write(&p, "  \n").unwrap();
        write_user_setting(&cowork, "k", json!({"a": [1, 2]})).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), "{\n  \"k\": {\n    \"a\": [\n      1,\n      2\n    ]\n  }\n}\n");
    }

    /// Writes `key` into `original` and checks the result equals `expect` byte for byte.
    fn check_write(original: &str, key: &str, value: Value, expect: &str) {
        let h = home();
        let p = h.root.join("home/.claude/settings.json");
        fs::write(&p, original).unwrap();
        write_user_setting(&h.env, key, value).unwrap();
        assert_eq!(fs::read_to_string(&p).unwrap(), expect, "original: {original:?}");
        // No temporary files are left behind.
        let leftovers: Vec<_> = fs::read_dir(p.parent().unwrap())
            .unwrap()
            .filter_map(Result::ok)
            .filter(|e| e.file_name().to_string_lossy().contains(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }

    #[test]
    fn write_changes_only_the_value() {
        // Replacing a value keeps every other byte: odd spacing, key order, unicode, CRLF.
        let original = "{\r\n    \"model\" :   \"opus\",\r\n\t\"autoMemoryEnabled\":true ,\r\n    \"路径\": \"/tmp/café/😀 x\",\r\n    \"z\": [1,2]\r\n}\r\n";
        check_write(
            original,
            "autoMemoryEnabled",
            json!(false),
            &original.replace("\"autoMemoryEnabled\":true", "\"autoMemoryEnabled\":false"),
        );
        check_write(original, "model", json!("sonnet"), &original.replace("\"opus\"", "\"sonnet\""));
        // A compact one-line file stays one line when a scalar changes.
        check_write(
            r#"{"a":1,"autoMemoryEnabled":false,"b":{"c":[]}}"#,
            "autoMemoryEnabled",
            json!(true),
            r#"{"a":1,"autoMemoryEnabled":true,"b":{"c":[]}}"#,
        );
        // Duplicate keys: JSON.parse keeps the last, so every copy is set.
        check_write("{\"k\": 1, \"k\": 2}", "k", json!(3), "{\"k\": 3, \"k\": 3}");
        // A byte-order mark survives.
        check_write("\u{FEFF}{\n  \"k\": 1\n}\n", "k", json!(2), "\u{FEFF}{\n  \"k\": 2\n}\n");
    }

    #[test]
    fn write_appends_a_new_key_in_the_file_style() {
        check_write(
            "{\n  \"model\": \"opus\",\n  \"env\": {\"A\": \"1\"}\n}\n",
            "autoDreamEnabled",
            json!(true),
            "{\n  \"model\": \"opus\",\n  \"env\": {\"A\": \"1\"},\n  \"autoDreamEnabled\": true\n}\n",
        );
        check_write(
            "{\r\n    \"model\": \"opus\"\r\n}",
            "autoMemoryDirectory",
            json!("~/mem dir/😀"),
            "{\r\n    \"model\": \"opus\",\r\n    \"autoMemoryDirectory\": \"~/mem dir/😀\"\r\n}",
        );
        check_write("{}", "autoMemoryEnabled", json!(false), "{\n  \"autoMemoryEnabled\": false\n}");
        check_write("{}\n", "autoMemoryEnabled", json!(false), "{\n  \"autoMemoryEnabled\": false\n}\n");
    }

    #[test]
    fn write_refuses_files_claude_code_cannot_read_and_leaves_them_alone() {
        let cases: &[(&[u8], &str)] = &[
            (b"{\n  \"a\": 1,\n}\n", "line 3, column 1: trailing comma"),
            (b"{\n  // mine\n  \"a\": 1\n}\n", "line 2, column 3: comments are not allowed"),
            (b"{\"a\": }", "line 1, column 7: expected value"),
            (b"[]", "holds a JSON array, not an object"),
            (b"{\"a\": \"\xff\"}", "is not UTF-8 text"),
        ];
        for (bytes, expect) in cases {
            let h = home();
            let p = h.root.join("home/.claude/settings.json");
            fs::write(&p, bytes).unwrap();
            let before = fs::metadata(&p).unwrap().modified().unwrap();
            let err = write_user_setting(&h.env, "autoMemoryEnabled", json!(false)).unwrap_err();
            let msg = err.to_string();
            assert!(msg.contains(expect), "{msg}");
            assert!(msg.starts_with("~/.claude/settings.json"), "{msg}");
            assert_eq!(err.path(), Some(p.as_path()));
            assert_eq!(fs::read(&p).unwrap(), *bytes, "file untouched");
            assert_eq!(fs::metadata(&p).unwrap().modified().unwrap(), before);
            assert_eq!(fs::read_dir(p.parent().unwrap()).unwrap().count(), 1, "no temp file left");
        }
    }

    #[test]
    fn write_refuses_oversized_files() {
        let h = home();
        let p = h.root.join("home/.claude/settings.json");
        let big = format!("{{\"a\": \"{}\"}}", "x".repeat(MAX_SETTINGS_FILE_BYTES as usize));
        fs::write(&p, &big).unwrap();
        assert!(matches!(write_user_setting(&h.env, "a", json!(1)), Err(SettingsError::TooLarge { .. })));
        let s = load_settings(&h.env, &h.root.join("repo"), EnabledSources::all(), None);
        assert!(matches!(s.file(SettingSource::User).unwrap().error, Some(SettingsError::TooLarge { .. })));
    }

    #[cfg(unix)]
    #[test]
    fn write_keeps_permissions_and_symlinks() {
        use std::os::unix::fs::{symlink, PermissionsExt};
        let h = home();
        let dotfiles = h.root.join("dotfiles/claude-settings.json");
        write(&dotfiles, "{\"a\": 1}\n");
        fs::set_permissions(&dotfiles, fs::Permissions::from_mode(0o640)).unwrap();
        let link = h.root.join("home/.claude/settings.json");
        symlink("../../dotfiles/claude-settings.json", &link).unwrap();
        write_user_setting(&h.env, "autoMemoryEnabled", json!(true)).unwrap();
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink(), "link kept");
        // Appending to a one-line object spreads it over lines, as the CST library does.
        assert_eq!(fs::read_to_string(&dotfiles).unwrap(), "{\n  \"a\": 1,\n  \"autoMemoryEnabled\": true\n}\n");
        assert_eq!(fs::metadata(&dotfiles).unwrap().permissions().mode() & 0o777, 0o640);
    }

    #[test]
    fn write_escapes_strings_and_nested_values() {
        let h = home();
        let p = h.root.join("home/.claude/settings.json");
        fs::write(&p, "{\n  \"a\": 1\n}\n").unwrap();
        let tricky = json!("quote \" backslash \\ newline \n tab \t ctrl \u{1} emoji 😀 é");
        write_user_setting(&h.env, "autoMemoryDirectory", tricky.clone()).unwrap();
        let nested = json!({"list": [1, "x\\y", null, {"k\"\\\n": false}], "n": -1.5e3});
        write_user_setting(&h.env, "a", nested.clone()).unwrap();
        write_user_setting(&h.env, "new \"key\" \\ 😀", tricky.clone()).unwrap();
        let back: Value = serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(back["autoMemoryDirectory"], tricky);
        assert_eq!(back["a"], nested);
        assert_eq!(back["new \"key\" \\ 😀"], tricky);
        // Replacing the tricky string again finds it by its decoded name.
        write_user_setting(&h.env, "new \"key\" \\ 😀", json!(1)).unwrap();
        let back: Value = serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
        assert_eq!(back.as_object().unwrap().len(), 3);
    }

    #[test]
    fn written_file_reads_back() {
        let h = home();
        for (k, v) in
            [("autoMemoryEnabled", json!(false)), ("autoDreamEnabled", json!(true)), ("autoMemoryEnabled", json!(true))]
        {
            write_user_setting(&h.env, k, v).unwrap();
        }
        let s = load_settings(&h.env, &h.root.join("repo"), EnabledSources::all(), None);
        assert_eq!((s.auto_memory_enabled(), s.auto_dream_enabled()), (Some(true), Some(true)));
        assert_eq!(s.errors().count(), 0);
    }
}
