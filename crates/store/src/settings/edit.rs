//! The format-preserving writer for the one settings file Mneme edits (the user settings):
//! one top-level key set or removed by a minimal textual edit of the JSON, checked by parsing
//! the result again, written atomically; a file Claude Code cannot read is never rewritten.

use super::{json_type, shown_path, syntax_problem, user_settings_path, ParseProblem, SettingsError, MAX_SETTINGS_FILE_BYTES};
use crate::env::Environment;
use jsonc_parser::cst::{CstInputValue, CstRootNode};
use jsonc_parser::ParseOptions;
use mneme_core::text::js_trim;
use serde_json::{Map, Value};
use std::fs;
use std::io;
use std::path::{Path, PathBuf};

/// How many times an edit is made again on a file that changed while it was being written.
const ATTEMPTS: usize = 5;

/// Writes `bytes` over `target` the one way Mneme writes files ([`crate::atomic`]), unless the
/// file no longer holds `read` (`None`: did not exist) by the time the new bytes are on disk:
/// Claude Code writes this file too (`/config`, `/model`, a permission rule), and its change
/// must not be lost. Answers whether the file was written.
fn write_unless_changed(target: &Path, bytes: &[u8], read: Option<&[u8]>) -> io::Result<bool> {
    // Read as the edit read it: a FIFO put there meanwhile must not hold the write for ever.
    let unchanged = || match crate::open::read_own_file(target, MAX_SETTINGS_FILE_BYTES + 1)? {
        Some(now) => Ok(read == Some(now.as_slice())),
        None => Ok(read.is_none()),
    };
    Ok(crate::atomic::write_atomic_if(target, bytes, unchanged)?.is_some())
}

/// Runs a read-edit-write `once` until it lands on a file nobody changed meanwhile.
fn until_unchanged(
    path: &Path,
    shown: &str,
    mut once: impl FnMut() -> Result<Option<PathBuf>, SettingsError>,
) -> Result<PathBuf, SettingsError> {
    for _ in 0..ATTEMPTS {
        if let Some(done) = once()? {
            return Ok(done);
        }
    }
    Err(SettingsError::Write {
        path: path.to_path_buf(),
        shown: shown.to_string(),
        source: io::Error::other(format!("it changed {ATTEMPTS} times while Mneme was writing it (another program keeps rewriting it); close that program or try again")),
    })
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
    until_unchanged(&path, &shown_path(env, &path), || write_user_setting_once(env, key, &value))
}

/// One attempt of [`write_user_setting`]: `None` when the file changed before it was replaced.
fn write_user_setting_once(env: &Environment, key: &str, value: &Value) -> Result<Option<PathBuf>, SettingsError> {
    let path = user_settings_path(env);
    let target = symlink_target(&path);
    let shown = shown_path(env, &path);
    let existing = read_settings_for_edit(&target, &path, &shown)?;
    let text = match &existing {
        None => fresh_settings_text(key, value),
        Some(bytes) => {
            let text = String::from_utf8(bytes.clone())
                .map_err(|_| SettingsError::NotUtf8 { path: path.clone(), shown: shown.clone() })?;
            if js_trim(&text).is_empty() {
                fresh_settings_text(key, value)
            } else {
                let (bom, body) = match text.strip_prefix('\u{FEFF}') {
                    Some(body) => ("\u{FEFF}", body),
                    None => ("", text.as_str()),
                };
                match set_top_level_key(body, key, value) {
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
    let written = write_unless_changed(&target, text.as_bytes(), existing.as_deref())
        .map_err(|source| SettingsError::Write { path: path.clone(), shown, source })?;
    Ok(written.then_some(path))
}

/// The user settings file's bytes before an edit (`None`: there is none), read from `target`
/// (where `path`'s links lead). Only a plain file is read, opened without waiting: a FIFO in
/// its place blocked the edit for ever, and a folder failed with a bare "Is a directory". A
/// file over Claude Code's limit is [`SettingsError::TooLarge`], checked before it is read.
fn read_settings_for_edit(target: &Path, path: &Path, shown: &str) -> Result<Option<Vec<u8>>, SettingsError> {
    use io::Read;
    let read_error = |source| SettingsError::Read { path: path.to_path_buf(), shown: shown.to_string(), source };
    let file = match crate::open::open_no_wait(target) {
        Ok(f) => f,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(read_error(source)),
    };
    let meta = file.metadata().map_err(read_error)?;
    if !meta.is_file() {
        let what = crate::open::kind_of(&meta);
        return Err(read_error(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!(
                "it is {what}, not a plain file, so Mneme cannot change it and Claude Code cannot read it; move it aside or delete it (a settings file is plain JSON such as {{}}), and nothing was changed"
            ),
        )));
    }
    let too_large = |size| SettingsError::TooLarge { path: path.to_path_buf(), shown: shown.to_string(), size };
    if meta.len() > MAX_SETTINGS_FILE_BYTES {
        return Err(too_large(meta.len()));
    }
    let mut bytes = Vec::with_capacity(crate::open::capacity_for(meta.len()));
    file.take(MAX_SETTINGS_FILE_BYTES + 1).read_to_end(&mut bytes).map_err(read_error)?;
    if bytes.len() as u64 > MAX_SETTINGS_FILE_BYTES {
        return Err(too_large(bytes.len() as u64));
    }
    Ok(Some(bytes))
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
    match mneme_core::js_json::parse_str(body) {
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
        let mut reason = e.kind().to_string();
        // JSON.parse keeps half of a surrogate pair (`"\ud83d"`), so Claude Code reads the file;
        // the format-preserving editor cannot hold one, and rewriting it would change the text.
        if reason.contains("unicode escape") {
            reason = "it holds a \\u escape of half a character (a \\uD800–\\uDFFF without its pair), which Claude Code \
                      reads but Mneme cannot keep byte for byte while editing; remove or complete that escape"
                .to_string();
        }
        EditFailure::Parse(ParseProblem::Syntax { line: e.line_display(), column: e.column_display(), reason })
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
    let after = match mneme_core::js_json::parse_str(edited) {
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

/// Removes one top-level key from the user settings file and returns the file's path.
///
/// Written like [`write_user_setting`]: every other byte stays as it was, a file Claude Code
/// cannot read is left untouched and reported, the write is atomic and follows a symlinked
/// settings file to its target. A missing file, or one without the key, is not written at all.
/// Every occurrence of a duplicated key goes, since `JSON.parse` would otherwise keep one.
pub fn remove_user_setting(env: &Environment, key: &str) -> Result<PathBuf, SettingsError> {
    let path = user_settings_path(env);
    until_unchanged(&path, &shown_path(env, &path), || remove_user_setting_once(env, key))
}

/// One attempt of [`remove_user_setting`]: `None` when the file changed before it was replaced.
fn remove_user_setting_once(env: &Environment, key: &str) -> Result<Option<PathBuf>, SettingsError> {
    let path = user_settings_path(env);
    let target = symlink_target(&path);
    let shown = shown_path(env, &path);
    let Some(bytes) = read_settings_for_edit(&target, &path, &shown)? else { return Ok(Some(path)) };
    let text = String::from_utf8(bytes.clone()).map_err(|_| SettingsError::NotUtf8 { path: path.clone(), shown: shown.clone() })?;
    if js_trim(&text).is_empty() {
        return Ok(Some(path));
    }
    let (bom, body) = match text.strip_prefix('\u{FEFF}') {
        Some(body) => ("\u{FEFF}", body),
        None => ("", text.as_str()),
    };
    let edited = match remove_top_level_key(body, key) {
        Ok(Some(edited)) => format!("{bom}{edited}"),
        Ok(None) => return Ok(Some(path)),
        Err(EditFailure::Parse(problem)) => return Err(problem.into_error(&path, shown)),
        Err(EditFailure::Mismatch(detail)) => {
            return Err(SettingsError::EditMismatch { path, shown, key: key.to_string(), detail })
        }
    };
    let written = write_unless_changed(&target, edited.as_bytes(), Some(&bytes))
        .map_err(|source| SettingsError::Write { path: path.clone(), shown, source })?;
    Ok(written.then_some(path))
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
    let after = match mneme_core::js_json::parse_str(&edited) {
        Ok(Value::Object(map)) => map,
        Ok(_) => return Err(EditFailure::Mismatch(EditCheck::NotAnObject.to_string())),
        Err(e) => return Err(EditFailure::Mismatch(EditCheck::InvalidJson(e).to_string())),
    };
    let mut expected = before.clone();
    // `remove` on an order-keeping map swaps the last key into the hole; the file keeps order.
    expected.shift_remove(key);
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
            (
                "{\n  \"a\": 1,\n  \"autoMemoryDirectory\": \"~/m\",\n  \"b\": 2,\n  \"c\": 3\n}\n",
                "{\n  \"a\": 1,\n  \"b\": 2,\n  \"c\": 3\n}\n",
            ),
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
    fn a_file_changed_since_it_was_read_is_not_replaced() {
        let (_t, _env, path) = env_with(Some("{\"model\": \"opus\"}"));
        // Claude Code wrote the file after Mneme read `{}`: its write stays.
        assert!(!write_unless_changed(&path, b"{\"a\": 1}", Some(b"{}")).unwrap());
        assert!(!write_unless_changed(&path, b"{\"a\": 1}", None).unwrap(), "created meanwhile");
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"model\": \"opus\"}");
        assert!(write_unless_changed(&path, b"{\"a\": 1}", Some(b"{\"model\": \"opus\"}")).unwrap());
        assert_eq!(fs::read_to_string(&path).unwrap(), "{\"a\": 1}");
        let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap()).unwrap().flatten().map(|e| e.file_name()).collect();
        assert_eq!(leftovers.len(), 1, "no temporary file left behind: {leftovers:?}");

        // An edit is made again on the new text, and gives up (saying why) on a file that
        // never holds still.
        let mut tries = 0;
        let done = until_unchanged(&path, "~/.claude/settings.json", || {
            tries += 1;
            Ok((tries == 3).then(|| path.clone()))
        });
        assert_eq!((done.unwrap(), tries), (path.clone(), 3));
        let e = until_unchanged(&path, "~/.claude/settings.json", || Ok(None)).unwrap_err();
        assert!(e.to_string().contains("changed 5 times while Mneme was writing it"), "{e}");
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
    use crate::settings::tests::{home, write};
    use crate::settings::*;
    use serde_json::json;

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
    fn write_keeps_what_only_node_accepts() {
        // JSON.parse reads 1e400 as Infinity; serde_json refuses it. The file is still Claude
        // Code's settings, so it is edited, and those bytes stay as they were.
        let original = "{\n  \"cleanupPeriodDays\": 1e400,\n  \"autoMemoryEnabled\": true\n}\n";
        check_write(original, "autoMemoryEnabled", json!(false), &original.replace("true", "false"));
        // A lone surrogate escape: read as Claude Code reads it, and an edit is refused with
        // why, the file untouched.
        let h = home();
        let p = h.root.join("home/.claude/settings.json");
        let cut = "{\n  \"note\": \"cut \\ud83d\",\n  \"autoMemoryEnabled\": true\n}\n";
        fs::write(&p, cut).unwrap();
        let file = SettingsFile::load(&h.env, SettingSource::User, &p, true);
        assert!(file.applies(), "{:?}", file.error);
        assert_eq!(file.value.as_ref().unwrap()["note"], json!("cut \u{fffd}"));
        let err = write_user_setting(&h.env, "autoMemoryEnabled", json!(false)).unwrap_err().to_string();
        assert!(err.contains("half a character") && err.contains("line 2"), "{err}");
        assert_eq!(fs::read_to_string(&p).unwrap(), cut);
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
