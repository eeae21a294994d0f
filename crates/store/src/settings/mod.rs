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
//!
//! Loading and merging live here; `edit` is the format-preserving writer (split out because
//! it is a different job: it keeps every byte of the file it does not mean to change).

mod edit;
pub mod schema;
pub mod shapes;

pub use edit::{remove_user_setting, write_user_setting};

use crate::env::Environment;
use mneme_core::text::js_trim;
use serde::Serialize;
use serde_json::{Map, Value};
use std::fs;
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
    /// A value breaks Claude Code's schema (a wrong type, a number out of bounds), which
    /// makes it ignore the whole file. Boxed: the largest variant by far, and every
    /// `Result<_, SettingsError>` would carry its size.
    #[error(transparent)]
    InvalidValue(Box<BrokenValue>),
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
    #[error("{}", read_error_text(shown, source))]
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
    #[error("{}", write_error_text(shown, source))]
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

/// What [`SettingsError::InvalidValue`] says: which value of which file breaks Claude Code's
/// schema, and how many more do.
#[derive(Debug, thiserror::Error)]
#[error("{shown}: \"{key}\" must be {expected}, but it is {found}{}. Claude Code ignores the whole file while one value breaks its rules, so none of its settings apply. Fix {}.", others_note(self.others), if self.others == 0 { "the value" } else { "them all" })]
pub struct BrokenValue {
    /// The file.
    pub path: PathBuf,
    /// The file as shown to the user.
    pub shown: String,
    /// Where the offending value is: a top-level key, or a path inside one
    /// (`hooks.Stop[0].hooks`).
    pub key: String,
    /// What Claude Code's schema wants, in words.
    pub expected: String,
    /// What the file holds: the JSON type, or the value when only its bounds are wrong.
    pub found: String,
    /// How many other top-level keys of the file hold a value that breaks the rules too
    /// (each counted once, however many of its values break them).
    pub others: usize,
}

/// [`SettingsError::Read`] for people. Permissions are named only when they are the cause: a
/// FIFO or folder under the settings file's name is said to be what it is, with what to do,
/// and readable permissions would not mend it.
fn read_error_text(shown: &str, source: &io::Error) -> String {
    if source.kind() == io::ErrorKind::PermissionDenied {
        format!("could not read {shown}: {source}. Check that the file and its folder are readable.")
    } else {
        format!("could not read {shown}: {source}.")
    }
}

/// [`SettingsError::Write`] for people: a refusal of the disk (full, read-only, another
/// account's folder) says which and what to do; anything else names the system's error.
fn write_error_text(shown: &str, source: &io::Error) -> String {
    match crate::atomic::Refusal::of(source) {
        Some(r) => format!("could not write {shown}: {}. The previous file was left as it was.", r.says(Path::new(shown))),
        None => format!("could not write {shown}: {source}. Check that its folder is writable and the disk is not full; the previous file was left as it was."),
    }
}

impl SettingsError {
    /// The disk's refusal behind a failed read or write, if any ([`crate::atomic::Refusal`]).
    pub fn refused(&self) -> Option<crate::atomic::Refusal> {
        match self {
            SettingsError::Read { source, .. } | SettingsError::Write { source, .. } => crate::atomic::Refusal::of(source),
            _ => None,
        }
    }

    /// The file the error is about, if any.
    pub fn path(&self) -> Option<&Path> {
        match self {
            SettingsError::Malformed { path, .. }
            | SettingsError::NotAnObject { path, .. }
            | SettingsError::TooLarge { path, .. }
            | SettingsError::NotUtf8 { path, .. }
            | SettingsError::Read { path, .. }
            | SettingsError::Write { path, .. }
            | SettingsError::EditMismatch { path, .. } => Some(path),
            SettingsError::InvalidValue(v) => Some(&v.path),
            SettingsError::UnknownSource { .. } => None,
        }
    }
}

/// " (and 2 more values break the rules)" after the first broken value a message names
/// (counting the other keys that hold one).
fn others_note(others: usize) -> String {
    match others {
        0 => String::new(),
        1 => " (and 1 more value breaks the rules)".into(),
        n => format!(" (and {n} more values break the rules)"),
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
    /// The file as messages show it (`~/.claude/settings.json`, `--settings JSON`).
    pub shown: String,
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
        let shown = shown_path(env, path);
        let mut file = SettingsFile {
            source,
            path: path.to_path_buf(),
            shown: shown.clone(),
            enabled,
            exists: false,
            value: None,
            error: None,
        };
        // One open, then the type and size of what was opened: a link to `/dev/zero` or a FIFO
        // in a cloned repository's `.claude/` is refused instead of read forever.
        let read = crate::open::open_no_wait(path).and_then(|f| {
            let meta = f.metadata()?;
            Ok((f, meta))
        });
        let (f, meta) = match read {
            Ok(r) => r,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return file,
            Err(source) => {
                file.exists = true;
                file.error = Some(SettingsError::Read { path: path.to_path_buf(), shown, source });
                return file;
            }
        };
        file.exists = true;
        if !meta.is_file() {
            let what = crate::open::kind_of(&meta);
            let source = io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("it is {what}, not a plain file, so Mneme does not read it; move it aside or delete it (a settings file is plain JSON such as {{}})"),
            );
            file.error = Some(SettingsError::Read { path: path.to_path_buf(), shown, source });
            return file;
        }
        if meta.len() > MAX_SETTINGS_FILE_BYTES {
            file.error = Some(SettingsError::TooLarge { path: path.to_path_buf(), shown, size: meta.len() });
            return file;
        }
        let mut bytes = Vec::with_capacity(crate::open::capacity_for(meta.len().min(MAX_SETTINGS_FILE_BYTES + 1)));
        if let Err(source) = io::Read::read_to_end(&mut io::Read::take(f, MAX_SETTINGS_FILE_BYTES + 1), &mut bytes) {
            file.error = Some(SettingsError::Read { path: path.to_path_buf(), shown, source });
            return file;
        }
        // Node decodes with replacement characters, so invalid bytes inside a string still
        // parse; lossy decoding reproduces that.
        let text = String::from_utf8_lossy(&bytes);
        match parse_settings_text(&text) {
            Ok(map) => {
                file.error = known_type_error(&map, path, &shown);
                file.value = Some(Value::Object(map));
            }
            Err(problem) => file.error = Some(problem.into_error(path, shown)),
        }
        file
    }

    /// `--settings '{...}'`: the flag's settings given as JSON rather than a file. Shown as
    /// `--settings JSON` where a file would show its path.
    pub fn inline(json: &str) -> SettingsFile {
        let path = PathBuf::from(INLINE_SETTINGS_NAME);
        match parse_settings_text(json) {
            Ok(map) => SettingsFile::from_value(SettingSource::Flag, path, Value::Object(map)),
            Err(problem) => {
                let error = problem.into_error(&path, INLINE_SETTINGS_NAME.to_string());
                SettingsFile {
                    source: SettingSource::Flag,
                    path,
                    shown: INLINE_SETTINGS_NAME.to_string(),
                    enabled: true,
                    exists: true,
                    value: None,
                    error: Some(error),
                }
            }
        }
    }

    /// A settings file built from a value already in memory (tests, `--settings` JSON).
    /// The same type checks as for a file on disk apply.
    pub fn from_value(source: SettingSource, path: impl Into<PathBuf>, value: Value) -> SettingsFile {
        let path = path.into();
        let shown = path.display().to_string();
        let mut file =
            SettingsFile { source, path, shown: shown.clone(), enabled: true, exists: true, value: None, error: None };
        match value {
            Value::Object(map) => {
                file.error = known_type_error(&map, &file.path, &shown);
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

/// How a `--settings` value given as JSON is named where a file would show its path.
pub const INLINE_SETTINGS_NAME: &str = "--settings JSON";

/// `--settings` takes a file or the settings themselves: Claude Code reads the value as JSON
/// when, trimmed, it starts with `{` and ends with `}` (2.1.122 to 2.1.332 read it so).
pub fn inline_settings_json(flag: &Path) -> Option<&str> {
    let value = flag.to_str()?.trim();
    (value.starts_with('{') && value.ends_with('}')).then_some(value)
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
    match mneme_core::js_json::parse_str(body) {
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

/// A value's JSON type as a message names what a file holds instead: "a string", "null"
/// (the noun of [`json_type`] with its article).
pub fn a_json_type(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The JSON name of a value's type, as error messages say it.
pub fn json_type(v: &Value) -> &'static str {
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

/// The load's check, before any release is known: the first memory key of the wrong type.
/// [`Settings::for_release`] replaces it with the release's own rules.
fn known_type_error(map: &Map<String, Value>, path: &Path, shown: &str) -> Option<SettingsError> {
    let (key, expected, found) = all_known_type_errors(map).into_iter().next()?;
    Some(SettingsError::InvalidValue(Box::new(BrokenValue { path: path.to_path_buf(), shown: shown.to_string(), key, expected: expected.into(), found: found.into(), others: 0 })))
}

/// Every memory key of the wrong type, in [`KNOWN_TYPES`]' order.
fn all_known_type_errors(map: &Map<String, Value>) -> Vec<(String, &'static str, &'static str)> {
    let mut out = Vec::new();
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
                _ => a_json_type(v),
            };
            out.push(((*key).to_string(), expected, found));
        }
    }
    out
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

    /// These settings as `profile`'s release reads them. Each file that parsed is held to the
    /// release's schema ([`schema`]): a value that breaks it makes the release ignore the
    /// whole file, except that from 2.1.166 a managed-settings file keeps its other keys (the
    /// key alone is dropped, with a warning). Where the releases read say nothing for a
    /// memory key, the load's type check of it stands.
    pub fn for_release(mut self, profile: &mneme_core::Profile) -> Settings {
        let mut changed = false;
        for file in self.files.iter_mut() {
            if !matches!(file.error, None | Some(SettingsError::InvalidValue(_))) {
                continue;
            }
            let Some(Value::Object(map)) = file.value.as_mut() else { continue };
            let mut found = schema::violations(map, profile);
            for (key, expected, found_type) in all_known_type_errors(map) {
                if schema::rule(&key, profile.release).is_none() {
                    found.push(schema::Violation { path: key.clone(), key, expected: expected.into(), found: found_type.into() });
                }
            }
            let error = if file.source == SettingSource::Policy && profile.policy_keeps_valid_keys {
                for v in &found {
                    map.shift_remove(&v.key);
                }
                changed |= !found.is_empty();
                None
            } else {
                // The first in the file, as Claude Code's message names, and how many more.
                let others = found.len().saturating_sub(1);
                let first = found.into_iter().min_by_key(|v| map.keys().position(|k| *k == v.key));
                first.map(|v| {
                    SettingsError::InvalidValue(Box::new(BrokenValue {
                        path: file.path.clone(),
                        shown: file.shown.clone(),
                        key: v.path,
                        expected: v.expected,
                        found: v.found,
                        others,
                    }))
                })
            };
            changed |= error.is_some() != file.error.is_some();
            file.error = error;
        }
        if changed {
            self.merged = self.compute_merged();
        }
        self
    }

    /// Managed-settings files that keep Claude Code from starting at all, with what it says:
    /// from 2.1.259 one that is not a JSON object, from 2.1.285 one it cannot read (not for
    /// lack of permission, which it only warns about). A missing or empty file is fine.
    pub fn policy_stopping_start(&self, profile: &mneme_core::Profile) -> Option<(&Path, String)> {
        self.files.iter().filter(|f| f.source == SettingSource::Policy).find_map(|f| match &f.error {
            Some(e @ (SettingsError::Malformed { .. } | SettingsError::NotAnObject { .. })) if profile.policy_unparsable_stops_start => Some((
                f.path.as_path(),
                format!("{e} Claude Code says: \"Managed settings document could not be parsed as a JSON object; none of its settings are in effect. Fix or remove it.\""),
            )),
            Some(e @ SettingsError::Read { source, .. })
                if profile.policy_unreadable_stops_start && source.kind() != io::ErrorKind::PermissionDenied =>
            {
                Some((f.path.as_path(), format!("{e} Claude Code says: \"Unable to read managed policy settings.\"")))
            }
            _ => None,
        })
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
        // Local settings may come from two files (the working folder's, then the repository
        // root's, which wins); every other source has one.
        let mut objects = self.files.iter().filter(|f| f.source == source).filter_map(SettingsFile::applied_object);
        let mut merged = objects.next()?.clone();
        for obj in objects {
            merge_settings(&mut merged, obj);
        }
        Some(merged)
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

    /// What releases before 2.1.121 read: policy → flag → local → user, never the checked-in
    /// project settings.
    pub fn auto_memory_directory_without_project(&self) -> Option<(SettingSource, String)> {
        self.first_memory_directory(&[SettingSource::Policy, SettingSource::Flag, SettingSource::Local, SettingSource::User])
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
    load_settings_with_local(env, cwd, &[cwd.to_path_buf()], enabled, flag_file)
}

/// [`load_settings`] with the local settings read from `local_dirs`' `.claude/settings.local.json`,
/// lowest priority first (newer releases add the repository root's when started in a sub-folder;
/// `crate::session::local_settings_dirs`).
pub fn load_settings_with_local(
    env: &Environment,
    cwd: &Path,
    local_dirs: &[PathBuf],
    enabled: EnabledSources,
    flag_file: Option<&Path>,
) -> Settings {
    let mut files = vec![
        SettingsFile::load(env, SettingSource::User, &user_settings_path(env), enabled.user),
        SettingsFile::load(env, SettingSource::Project, &project_settings_path(cwd), enabled.project),
    ];
    for dir in local_dirs {
        files.push(SettingsFile::load(env, SettingSource::Local, &local_settings_path(dir), enabled.local));
    }
    if let Some(flag) = flag_file {
        files.push(match inline_settings_json(flag) {
            Some(json) => SettingsFile::inline(json),
            None => {
                let path = if flag.is_absolute() { flag.to_path_buf() } else { cwd.join(flag) };
                SettingsFile::load(env, SettingSource::Flag, &path, true)
            }
        });
    }
    files.push(SettingsFile::load(env, SettingSource::Policy, &managed_settings_path(env), true));
    for drop_in in managed_drop_in_paths(env) {
        files.push(SettingsFile::load(env, SettingSource::Policy, &drop_in, true));
    }
    Settings::from_files(files)
}

/// Reads at most `limit` bytes from the start of a file.
pub(crate) fn read_head(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let mut buf = Vec::new();
    crate::open::open_no_wait(path)?.take(limit).read_to_end(&mut buf)?;
    Ok(buf)
}


#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// A settings write the disk refused says which refusal and what to do, and that the file
    /// was left as it was; any other failure keeps the general advice.
    #[test]
    fn a_refused_settings_write_says_which_refusal_and_what_to_do() {
        let write = |errno| SettingsError::Write { path: PathBuf::from("/h/.claude/settings.json"), shown: "~/.claude/settings.json".into(), source: io::Error::from_raw_os_error(errno) };
        let full = write(28);
        assert_eq!(full.refused(), Some(crate::atomic::Refusal::DiskFull));
        assert_eq!(full.to_string(), "could not write ~/.claude/settings.json: the disk holding ~/.claude/settings.json is full. Free some space on it, then try again. The previous file was left as it was.");
        assert!(write(30).to_string().contains("is mounted read-only. Remount it read-write"), "{}", write(30));
        assert!(write(13).to_string().contains("this account may not change ~/.claude/settings.json"), "{}", write(13));
        assert_eq!(write(5).refused(), None);
        assert!(write(5).to_string().contains("Check that its folder is writable"), "{}", write(5));
    }

    pub(super) struct Home {
        pub(super) _t: tempfile::TempDir,
        pub(super) root: PathBuf,
        pub(super) env: Environment,
    }

    /// A temporary home with `CLAUDE_CONFIG_DIR` inside it and a private managed dir, so no
    /// test ever reads `~/.claude` or `/etc/claude-code`.
    pub(super) fn home() -> Home {
        let t = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(t.path()).unwrap();
        let env = Environment { managed_dir: root.join("managed"), ..Environment::with_home(root.join("home")) }
            .set_var("CLAUDE_CONFIG_DIR", root.join("home/.claude").to_str().unwrap());
        fs::create_dir_all(root.join("home/.claude")).unwrap();
        fs::create_dir_all(root.join("repo/.claude")).unwrap();
        Home { _t: t, root, env }
    }

    pub(super) fn write(p: &Path, text: &str) {
        fs::create_dir_all(p.parent().unwrap()).unwrap();
        fs::write(p, text).unwrap();
    }

    /// A cloned repository's `.claude/settings.json` that is a link to `/dev/zero`, or a FIFO:
    /// reported as unreadable at once, never read forever.
    #[test]
    fn a_settings_file_that_is_a_device_or_a_fifo_is_refused_without_waiting() {
        let h = home();
        let project = h.root.join("repo/.claude/settings.json");
        std::os::unix::fs::symlink("/dev/zero", &project).unwrap();
        let local = h.root.join("repo/.claude/settings.local.json");
        rustix::fs::mkfifoat(rustix::fs::CWD, &local, rustix::fs::Mode::from_raw_mode(0o600)).unwrap();
        for path in [&project, &local] {
            let f = SettingsFile::load(&h.env, SettingSource::Project, path, true);
            let err = f.error.expect("refused").to_string();
            assert!(f.exists && f.value.is_none() && err.contains("not a plain file"), "{err}");
        }
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
                Some(SettingsError::InvalidValue(v)) => assert_eq!(v.key, key),
                other => panic!("{text}: {other:?}"),
            }
            let s = Settings::from_files(vec![f]);
            assert_eq!(s.auto_dream_enabled(), None, "{text}");
        }
    }

    /// Every `Result<_, SettingsError>` is as large as the error: clippy's `result_large_err`
    /// draws the line at 128 bytes, which `InvalidValue` reached before it was boxed.
    #[test]
    fn the_error_stays_small() {
        assert!(std::mem::size_of::<SettingsError>() < 128, "{} bytes", std::mem::size_of::<SettingsError>());
    }

    #[test]
    fn the_message_names_the_first_broken_value_and_counts_the_others() {
        let release = mneme_core::versions::profile_for("2.1.332".parse().unwrap()).profile;
        let load = |text: &str| {
            let f = SettingsFile::from_value(SettingSource::User, "/u/settings.json", serde_json::from_str(text).unwrap());
            let s = Settings::from_files(vec![f]).for_release(&release);
            s.file(SettingSource::User).unwrap().error.as_ref().map(ToString::to_string).unwrap_or_default()
        };
        let one = load(r#"{"autoMemoryEnabled": false, "sandbox": {"enabled": "yes"}}"#);
        assert!(one.contains("\"sandbox.enabled\" must be true or false, but it is a string. Claude Code"), "{one}");
        assert!(one.ends_with("Fix the value."), "{one}");
        let three = load(r#"{"cleanupPeriodDays": 0, "model": 5, "voice": {"mode": null}}"#);
        assert!(three.contains("\"cleanupPeriodDays\" must be a whole number above 0, but it is 0 (and 2 more values break the rules)."), "{three}");
        assert!(three.ends_with("Fix them all."), "{three}");
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
}
