//! The selector side query as Claude Code sends it (its messages, model, schema and limits;
//! the system prompt in the user's own Claude Code's words when installed, else Mneme's), and
//! the parsing of its answer (`src/memdir/findRelevantMemories.ts`).

use crate::Dialect;
use mneme_core::text::{is_js_whitespace, js_trim};
use mneme_core::versions::{self, Profile};
use mneme_model::{Block, Message, Role};
use mneme_store::claude_install;
use mneme_store::claude_text::{claude_text, ClaudeText};
use mneme_store::Environment;
use serde::Serialize;
use std::path::PathBuf;
use serde_json::{json, Value};
use std::collections::{HashMap, HashSet};

/// Mneme's own selector prompt for the dialogue form (2.1.197's protocol: the first message
/// is the manifest, every later user message one query). Claude Code's own wording is its
/// authors' and is not copied; [`selector_system_prompt`] sends it, read from the user's
/// installed Claude Code, whenever there is one.
pub const SELECT_MEMORIES_SYSTEM_PROMPT: &str = include_str!("../data/selector.txt");

/// Mneme's own selector prompt for the single-message form (2.1.88's protocol: query and
/// manifest in one message, with the recently-used-tools rule).
pub const SELECT_MEMORIES_SYSTEM_PROMPT_2_1_88: &str = include_str!("../data/selector_single.txt");

/// Whose words the selector's system prompt was in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum SelectorPrompt {
    /// Claude Code's own, cut from the installed binary (cached per version in Mneme's data dir).
    ClaudeCode { version: String, path: PathBuf },
    /// Mneme's own wording, and why Claude Code's could not be used.
    Mneme { why: String },
}

impl SelectorPrompt {
    /// One sentence for people.
    pub fn describe(&self) -> String {
        match self {
            SelectorPrompt::ClaudeCode { version, path } => {
                format!("Claude Code {version}'s own selector prompt, read from {}", path.display())
            }
            SelectorPrompt::Mneme { why } => format!("Mneme's own selector prompt ({why})"),
        }
    }
}

/// The selector's system prompt for `dialect`: the text of the user's own Claude Code, so that
/// recall is asked exactly as Claude Code asks it, when that release asks in the same form
/// (releases before 2.1.100 send one message per query, later ones a dialogue); otherwise, or
/// without an installed Claude Code, or when its text cannot be found, Mneme's own, and the
/// answer says why.
pub fn selector_system_prompt(dialect: Dialect, env: &Environment) -> (String, SelectorPrompt) {
    let own = |why: String| {
        let text = match dialect {
            Dialect::ClaudeCode2_1_197 => SELECT_MEMORIES_SYSTEM_PROMPT,
            Dialect::ClaudeCode2_1_88 => SELECT_MEMORIES_SYSTEM_PROMPT_2_1_88,
        };
        (text.to_string(), SelectorPrompt::Mneme { why })
    };
    let Some(install) = claude_install::detect(env) else {
        return own("no Claude Code is installed to read its own from".into());
    };
    let Some(version) = install.version else {
        return own(install.version_error.unwrap_or_else(|| "the installed Claude Code's version is unknown".into()));
    };
    // The installed release's prompt is written for its own form of the query: a dialogue
    // (2.1.100 on) or one message per query.
    let installed_dialect = if versions::behaviours(version).recall_dialogue {
        Dialect::ClaudeCode2_1_197
    } else {
        Dialect::ClaudeCode2_1_88
    };
    if installed_dialect != dialect {
        return own(format!("the installed Claude Code {version} asks in the other form of the query"));
    }
    let version = version.to_string();
    let cache = env.data_dir().join("claude-code");
    match claude_text(&install.resolved, &version, &cache, ClaudeText::SelectorPrompt) {
        // The copy cached in the data dir is read as it is: one emptied by hand or by a full
        // disk would otherwise be sent as the whole system prompt, for as long as that release
        // stays installed.
        Ok(text) if js_trim(&text).is_empty() => own(format!(
            "the copy of Claude Code {version}'s selector prompt cached in {} is empty; delete that folder and Mneme cuts the prompt from the binary again",
            cache.join(&version).display()
        )),
        Ok(text) => (text, SelectorPrompt::ClaudeCode { version, path: install.resolved }),
        Err(e) => own(e.to_string()),
    }
}

/// The model the side query goes to: `ANTHROPIC_DEFAULT_SONNET_MODEL` when set (non-empty),
/// else the model the release's catalog maps the `sonnet` alias to on the first-party API
/// (`RecallSelector::sonnet_model`, captured per release in `testdata/recall-capture`).
pub fn selector_model(env: &Environment, release: &Profile) -> String {
    env.var("ANTHROPIC_DEFAULT_SONNET_MODEL")
        .filter(|m| !m.is_empty())
        .map_or_else(|| release.recall_selector.sonnet_model.to_string(), str::to_string)
}

/// The structured-output schema of the side query. Releases 2.1.146 to 2.1.206 also offer
/// `selected_knowledge_ids` (for knowledge-index results they never have in these builds).
pub fn selection_schema(knowledge_ids: bool) -> Value {
    let mut properties = json!({"selected_memories": {"type": "array", "items": {"type": "string"}}});
    if knowledge_ids {
        properties["selected_knowledge_ids"] = json!({"type": "array", "items": {"type": "string"}});
    }
    json!({
        "type": "object",
        "properties": properties,
        "required": ["selected_memories"],
        "additionalProperties": false,
    })
}

/// 2.1.197: the dialogue's first message.
pub fn manifest_message(manifest: &str) -> String {
    format!("Available memories:\n{manifest}")
}

/// 2.1.197: one query in the dialogue.
pub fn query_message(query: &str) -> String {
    format!("Select memories relevant to:\n{query}")
}

/// 2.1.88: the single user message, with the tools hint when there are recent tools.
pub fn single_message(query: &str, manifest: &str, recent_tools: &[String]) -> String {
    let tools = if recent_tools.is_empty() { String::new() } else { format!("\n\nRecently used tools: {}", recent_tools.join(", ")) };
    format!("Query: {query}\n\nAvailable memories:\n{manifest}{tools}")
}

/// Why the selector's answer yielded nothing.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AnswerError {
    #[error("the model's answer had no text block")]
    NoText,
    #[error("the model's answer is not JSON ({0})")]
    NotJson(String),
    #[error("the model's answer has no selected_memories list")]
    NoList,
}

/// 2.1.197 strips a Markdown code fence around the JSON before parsing it.
pub fn strip_code_fence(text: &str) -> &str {
    let t = js_trim(text);
    let t = match t.strip_prefix("```") {
        Some(rest) => {
            let rest = rest.trim_start_matches(|c: char| c.is_ascii_alphabetic());
            rest.trim_start_matches(is_js_whitespace)
        }
        None => t,
    };
    let t = match t.strip_suffix("```") {
        Some(rest) => rest.trim_end_matches(is_js_whitespace),
        None => t,
    };
    js_trim(t)
}

/// Parses the first text block of the answer as JSON (2.1.197 strips a code fence first).
pub fn parse_answer(text: &str, dialect: Dialect) -> Result<Value, AnswerError> {
    let text = match dialect {
        Dialect::ClaudeCode2_1_197 => strip_code_fence(text),
        Dialect::ClaudeCode2_1_88 => text,
    };
    serde_json::from_str(text).map_err(|e| AnswerError::NotJson(e.to_string()))
}

/// `selected_memories` filtered to names in the manifest, in the model's order (repeats kept,
/// as Claude Code keeps them). Anything but a list is an error, as `.filter` on it throws.
pub fn selected_names(answer: &Value, in_manifest: impl Fn(&str) -> bool) -> Result<Vec<String>, AnswerError> {
    let list = answer.get("selected_memories").and_then(Value::as_array).ok_or(AnswerError::NoList)?;
    Ok(list.iter().filter_map(Value::as_str).filter(|n| in_manifest(n)).map(str::to_string).collect())
}

/// A transcript message is a human turn when a user sent it and it carries no tool result.
fn is_human_turn(m: &Message) -> bool {
    m.role == Role::User && !m.content.iter().any(|b| matches!(b, Block::ToolResult { .. }))
}

/// `collectRecentSuccessfulTools` (2.1.88): tools used since the human turn before the latest
/// one that have a result and never an error, scanning from the end (so the newest message's
/// tools come first, in block order within a message).
pub fn collect_recent_successful_tools(messages: &[Message]) -> Vec<String> {
    let last_human = messages.iter().rposition(is_human_turn);
    let mut use_order: Vec<(&str, &str)> = Vec::new();
    let mut seen_ids: HashSet<&str> = HashSet::new();
    let mut result_errored: HashMap<&str, bool> = HashMap::new();
    for (i, m) in messages.iter().enumerate().rev() {
        if is_human_turn(m) && Some(i) != last_human {
            break;
        }
        for block in &m.content {
            match (m.role, block) {
                (Role::Assistant, Block::ToolUse { id, name, .. }) => {
                    if seen_ids.insert(id) {
                        use_order.push((id, name));
                    } else if let Some(slot) = use_order.iter_mut().find(|(k, _)| *k == id) {
                        slot.1 = name;
                    }
                }
                (Role::User, Block::ToolResult { tool_use_id, is_error, .. }) => {
                    result_errored.insert(tool_use_id, *is_error);
                }
                _ => {}
            }
        }
    }
    let mut failed: HashSet<&str> = HashSet::new();
    let mut succeeded: Vec<&str> = Vec::new();
    for (id, name) in use_order {
        match result_errored.get(id) {
            None => {}
            Some(true) => {
                failed.insert(name);
            }
            Some(false) if !succeeded.contains(&name) => succeeded.push(name),
            Some(false) => {}
        }
    }
    succeeded.into_iter().filter(|n| !failed.contains(n)).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What Mneme's own selector prompts must say, whatever the wording: the answer's limit of
    /// five, the dialogue form's "one query per message" and "no re-selection", the single
    /// form's tools rule.
    #[test]
    fn mnemes_prompts_state_the_protocol() {
        let dialogue = SELECT_MEMORIES_SYSTEM_PROMPT;
        assert!(dialogue.contains("at most 5") && dialogue.contains("[user], [project]"));
        assert!(dialogue.contains("Every message after that holds one request"));
        assert!(dialogue.contains("Do not pick again a memory you already returned"));
        assert!(dialogue.ends_with(".\n"));
        let single = SELECT_MEMORIES_SYSTEM_PROMPT_2_1_88;
        assert!(single.contains("at most 5") && single.contains("tools the assistant used recently"));
    }

    #[test]
    fn without_claude_code_the_selector_prompt_is_mnemes_and_says_why() {
        let home = tempfile::tempdir().unwrap();
        let env = Environment::with_home(home.path()).set_var("PATH", "/nonexistent");
        if claude_install::detect(&env).is_some() {
            return; // a system-wide npm install (/usr/local, /usr) is found whatever PATH says
        }
        let (text, source) = selector_system_prompt(Dialect::ClaudeCode2_1_197, &env);
        assert_eq!(text, SELECT_MEMORIES_SYSTEM_PROMPT);
        assert_eq!(source, SelectorPrompt::Mneme { why: "no Claude Code is installed to read its own from".into() });
        assert_eq!(source.describe(), "Mneme's own selector prompt (no Claude Code is installed to read its own from)");
        let (text, _) = selector_system_prompt(Dialect::ClaudeCode2_1_88, &env);
        assert_eq!(text, SELECT_MEMORIES_SYSTEM_PROMPT_2_1_88);
    }

    /// An installed Claude Code whose binary has no selector prompt, then the same release
    /// with an empty copy in the cache: Mneme's own words both times, saying why.
    #[test]
    fn a_binary_without_the_prompt_or_an_empty_cached_copy_falls_back_to_mnemes() {
        use std::os::unix::fs::PermissionsExt;
        let home = tempfile::tempdir().unwrap();
        let bin_dir = home.path().join(".local/bin");
        std::fs::create_dir_all(&bin_dir).unwrap();
        let bin = bin_dir.join("claude");
        std::fs::write(&bin, "#!/bin/sh\necho '2.1.197 (Claude Code)'\n").unwrap();
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755)).unwrap();
        // npm's layout names the release without running the binary.
        std::fs::write(bin_dir.join("package.json"), r#"{"name": "@anthropic-ai/claude-code", "version": "2.1.197"}"#).unwrap();
        let data = home.path().join("mneme-data");
        let env = Environment::with_home(home.path())
            .set_var("PATH", "/nonexistent")
            .set_var("MNEME_DATA_DIR", data.to_string_lossy().to_string());
        let install = claude_install::detect(&env).unwrap();
        assert_eq!(install.resolved, std::fs::canonicalize(&bin).unwrap());

        let (text, source) = selector_system_prompt(Dialect::ClaudeCode2_1_197, &env);
        assert_eq!(text, SELECT_MEMORIES_SYSTEM_PROMPT);
        let SelectorPrompt::Mneme { why } = source else { panic!("{source:?}") };
        assert!(why.contains("was not found in"), "{why}");

        let cached = data.join("claude-code").join("2.1.197").join("selector_prompt.txt");
        std::fs::create_dir_all(cached.parent().unwrap()).unwrap();
        std::fs::write(&cached, " \n").unwrap();
        let (text, source) = selector_system_prompt(Dialect::ClaudeCode2_1_197, &env);
        assert_eq!(text, SELECT_MEMORIES_SYSTEM_PROMPT);
        let SelectorPrompt::Mneme { why } = source else { panic!("{source:?}") };
        // A cache emptied by hand or a full disk lacks the store's seal, so the binary is read
        // again (and here holds no prompt) rather than the blank text being sent.
        assert!(why.contains("was not found in"), "{why}");
    }

    #[test]
    fn model_comes_from_the_environment_else_the_release() {
        use mneme_core::versions::{behaviours, ClaudeVersion};
        let env = Environment::with_home("/h");
        let v197 = behaviours(ClaudeVersion::new(2, 1, 197));
        let v332 = behaviours(ClaudeVersion::new(2, 1, 332));
        assert_eq!(selector_model(&env, &v197), "claude-sonnet-5");
        assert_eq!(selector_model(&env, &v332), "claude-sonnet-5-5");
        assert_eq!(selector_model(&env, &behaviours(ClaudeVersion::new(2, 1, 160))), "claude-sonnet-4-6");
        assert_eq!(selector_model(&env.clone().set_var("ANTHROPIC_DEFAULT_SONNET_MODEL", ""), &v197), "claude-sonnet-5");
        assert_eq!(selector_model(&env.set_var("ANTHROPIC_DEFAULT_SONNET_MODEL", "my-sonnet"), &v332), "my-sonnet");
    }

    #[test]
    fn fences_are_stripped_like_claude_code() {
        assert_eq!(strip_code_fence("  ```json\n{\"a\":1}\n```  "), "{\"a\":1}");
        assert_eq!(strip_code_fence("```\n[]```"), "[]");
        assert_eq!(strip_code_fence("{\"a\":1}"), "{\"a\":1}");
        assert!(parse_answer("```json\n{\"selected_memories\":[]}\n```", Dialect::ClaudeCode2_1_88).is_err());
        assert!(parse_answer("```json\n{\"selected_memories\":[]}\n```", Dialect::ClaudeCode2_1_197).is_ok());
    }

    #[test]
    fn names_are_filtered_to_the_manifest() {
        let v = json!({"selected_memories": ["a.md", 3, "ghost.md", "b.md", "a.md"]});
        let got = selected_names(&v, |n| n == "a.md" || n == "b.md").unwrap();
        assert_eq!(got, vec!["a.md", "b.md", "a.md"]);
        assert_eq!(selected_names(&json!({"selected_memories": "a.md"}), |_| true), Err(AnswerError::NoList));
        assert_eq!(selected_names(&json!(null), |_| true), Err(AnswerError::NoList));
    }

    fn tool_use(id: &str, name: &str) -> Block {
        Block::ToolUse { id: id.into(), name: name.into(), input: json!({}) }
    }
    fn result(id: &str, is_error: bool) -> Block {
        Block::ToolResult { tool_use_id: id.into(), content: String::new(), is_error }
    }
    fn msg(role: Role, content: Vec<Block>) -> Message {
        Message { role, content }
    }

    #[test]
    fn recent_tools_succeeded_and_never_failed_since_the_previous_human_turn() {
        let transcript = vec![
            Message::user_text("old prompt"),
            msg(Role::Assistant, vec![tool_use("0", "Glob")]),
            msg(Role::User, vec![result("0", false)]),
            Message::user_text("previous prompt"),
            msg(Role::Assistant, vec![tool_use("1", "Read"), tool_use("2", "Bash")]),
            msg(Role::User, vec![result("1", false), result("2", true)]),
            msg(Role::Assistant, vec![tool_use("3", "Bash"), tool_use("4", "Grep"), tool_use("5", "Edit")]),
            msg(Role::User, vec![result("3", false), result("4", false)]),
            msg(Role::Assistant, vec![tool_use("6", "Read")]),
            msg(Role::User, vec![result("6", false)]),
            Message::user_text("the new prompt"),
        ];
        // Glob is before the previous human turn; Bash errored once; Edit has no result.
        assert_eq!(collect_recent_successful_tools(&transcript), vec!["Read", "Grep"]);
        assert!(collect_recent_successful_tools(&[Message::user_text("hi there")]).is_empty());
    }
}
