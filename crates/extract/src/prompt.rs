//! The extraction agent's prompts, exactly as Claude Code 2.1.197 builds them.
//!
//! Claude Code forks the main conversation: the fork keeps the session's system prompt (whose
//! auto-memory section holds the type taxonomy, what not to save and the file format) and its
//! messages, and gets one more user message, [`extraction_prompt`] (recovered from the binary's
//! `buildExtractPrompt`: opener, tools, turn-budget strategy, `## Existing memory files` with the
//! manifest, and a pointer back to the memory section). Mneme's agent has no parent session to
//! fork, so [`system_prompt`] is that memory section for the folder, and the conversation is
//! rendered as text above the extraction prompt by [`render_conversation`].

use crate::transcript::{Block, Content, Conversation, EntryType};
use serde_json::Value;
use std::path::Path;

/// Claude Code's auto-memory section of the system prompt, with `{MEMORY_DIR}` for the folder
/// (identical for every folder apart from the path; checked against the captures in tests).
const MEMORY_SECTION: &str = include_str!("../data/memory_section.txt");

/// The system prompt for an extraction run: the memory section for `memory_dir` (shown with one
/// trailing `/`, as Claude Code shows it).
pub fn system_prompt(memory_dir: &Path) -> String {
    let dir = format!("{}/", memory_dir.to_string_lossy().trim_end_matches('/'));
    MEMORY_SECTION.replace("{MEMORY_DIR}", &dir)
}

/// The user message that starts an extraction run (`buildExtractPrompt` on a POSIX shell):
/// `new_message_count` is the `~N` of "the most recent ~N messages", `manifest` the
/// existing-memory manifest (see `Memdir::manifest`), `team` whether team memory is on (which
/// adds "scope guidance").
pub fn extraction_prompt(new_message_count: usize, manifest: &str, team: bool) -> String {
    let existing = if manifest.is_empty() {
        String::new()
    } else {
        format!(
            "\n\n## Existing memory files\n\n{manifest}\n\nCheck this list before writing \u{2014} update an existing file rather than creating a duplicate."
        )
    };
    let scope = if team { "scope guidance, " } else { "" };
    let n = new_message_count;
    [
        format!("You are now acting as the memory extraction subagent. Analyze the most recent ~{n} messages above and use them to update your persistent memory systems."),
        String::new(),
        "Available tools: Read, Grep, Glob, read-only Bash (ls/find/cat/stat/wc/head/tail and similar), and Edit/Write for paths inside the memory directory only, and Bash rm with paths inside the memory directory only. All other tools \u{2014} MCP, Agent, write-capable Bash, etc \u{2014} will be denied.".to_string(),
        String::new(),
        "You have a limited turn budget. Edit requires a prior Read of the same file, so the efficient strategy is: turn 1 \u{2014} issue all Read calls in parallel for every file you might update; turn 2 \u{2014} issue all Write/Edit calls in parallel. Do not interleave reads and writes across multiple turns.".to_string(),
        String::new(),
        format!("You MUST only use content from the last ~{n} messages to update your persistent memories. Do not waste any turns attempting to investigate or verify that content further \u{2014} no grepping source files, no reading code to confirm a pattern exists, no git commands.{existing}"),
        String::new(),
        "If nothing is worth saving, output only 'Nothing to save.' Do not explain why.".to_string(),
        String::new(),
        "If the user explicitly asks you to remember something, save it immediately as whichever type fits best. If they ask you to forget something, find and remove the relevant entry.".to_string(),
        String::new(),
        format!("Apply the memory types, {scope}what-not-to-save criteria, and frontmatter format from the Memory section of your system prompt \u{2014} it is already in your context above."),
    ]
    .join("\n")
}

/// How much of one tool result is shown to the extraction model. Claude Code's fork sees the
/// results in full; Mneme's single prompt keeps long file dumps from crowding out the
/// conversation, which is what extraction is about.
const MAX_TOOL_RESULT_CHARS: usize = 2_000;

fn clip(s: &str, max: usize) -> String {
    match s.char_indices().nth(max) {
        Some((i, _)) => format!("{}… [{} more characters]", &s[..i], s[i..].chars().count()),
        None => s.to_string(),
    }
}

fn tool_result_text(content: &Value) -> String {
    match content {
        Value::String(s) => s.clone(),
        Value::Array(items) => items
            .iter()
            .map(|b| match b.get("type").and_then(Value::as_str) {
                Some("text") => b.get("text").and_then(Value::as_str).unwrap_or_default().to_string(),
                Some(other) => format!("[{other}]"),
                None => b.to_string(),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Value::Null => String::new(),
        other => other.to_string(),
    }
}

/// The conversation as text for the extraction model: one block per user or assistant
/// message (attachments and system entries are context Claude Code's fork also sees, but they
/// carry no statements by the user, so they are left out), with tool calls and their results
/// marked.
pub fn render_conversation(messages: &[Conversation]) -> String {
    let mut out = Vec::new();
    for m in messages {
        let role = match m.entry_type {
            EntryType::User if m.is_meta => continue,
            EntryType::User => "User",
            EntryType::Assistant => "Assistant",
            _ => continue,
        };
        let Some(msg) = &m.message else { continue };
        let mut parts = Vec::new();
        match &msg.content {
            Content::Text(s) => parts.push(s.clone()),
            Content::Blocks(blocks) => {
                for b in blocks {
                    match b {
                        Block::Text { text } => parts.push(text.clone()),
                        Block::ToolUse { name, input, .. } => parts.push(format!("[tool call {name}: {input}]")),
                        Block::ToolResult { content, is_error, .. } => {
                            let label = if *is_error { "tool error" } else { "tool result" };
                            parts.push(format!("[{label}: {}]", clip(&tool_result_text(content), MAX_TOOL_RESULT_CHARS)));
                        }
                        Block::Thinking { .. } | Block::RedactedThinking { .. } | Block::Other { .. } => {}
                    }
                }
            }
        }
        let text = parts.join("\n");
        if !text.trim().is_empty() {
            out.push(format!("{role}: {text}"));
        }
    }
    out.join("\n\n")
}

/// The whole first user message of an extraction run: the conversation, then the prompt.
pub fn task_prompt(messages: &[Conversation], new_message_count: usize, manifest: &str, team: bool) -> String {
    format!(
        "<conversation>\n{}\n</conversation>\n\n{}",
        render_conversation(messages),
        extraction_prompt(new_message_count, manifest, team)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_system_prompt_is_claude_codes_memory_section() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata/conformance/expected");
        let mut seen = 0;
        for entry in std::fs::read_dir(&root).unwrap().flatten() {
            let Ok(expected) = std::fs::read_to_string(entry.path().join("memory_section.txt")) else { continue };
            // Folders where auto memory is off have no section.
            let Some(at) = expected.find("memory at `") else { continue };
            let start = at + "memory at `".len();
            let dir = &expected[start..start + expected[start..].find('`').unwrap()];
            assert_eq!(system_prompt(Path::new(dir.trim_end_matches('/'))), expected, "{}", entry.path().display());
            seen += 1;
        }
        assert!(seen >= 5, "{seen}");
    }

    #[test]
    fn the_prompt_is_claude_codes_own() {
        // Expected texts from Claude Code's own function, cut out of the 2.1.197 binary and run
        // by tests/data/extract_prompt_oracle.mjs.
        let data: Value = serde_json::from_str(include_str!("../tests/data/extract_prompt.json")).unwrap();
        let cases = data["cases"].as_array().unwrap();
        assert_eq!(cases.len(), 8);
        for c in cases {
            let n = c["n"].as_u64().unwrap() as usize;
            let got = extraction_prompt(n, c["manifest"].as_str().unwrap(), c["team"].as_bool().unwrap());
            assert_eq!(got, c["prompt"].as_str().unwrap(), "{c}");
        }
    }

    #[test]
    fn the_conversation_is_rendered_with_tool_calls_and_without_meta() {
        let entries: Vec<Conversation> = [
            serde_json::json!({"type": "user", "uuid": "m", "isMeta": true, "message": {"content": "<command>"}}),
            serde_json::json!({"type": "user", "uuid": "u", "message": {"content": "Remember tabs"}}),
            serde_json::json!({"type": "assistant", "uuid": "a", "message": {"content": [
                {"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "Checking."},
                {"type": "tool_use", "id": "t", "name": "Read", "input": {"file_path": "/x"}}]}}),
            serde_json::json!({"type": "user", "uuid": "r", "message": {"content": [
                {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "text", "text": "x".repeat(2_005)}]}]}}),
        ]
        .into_iter()
        .filter_map(|v| match crate::transcript::parse_entry(v) {
            crate::transcript::Entry::Conversation(c) => Some(*c),
            _ => None,
        })
        .collect();
        let text = render_conversation(&entries);
        assert!(text.starts_with("User: Remember tabs\n\nAssistant: Checking.\n[tool call Read: {\"file_path\":\"/x\"}]\n\nUser: [tool result: xxx"));
        assert!(text.ends_with("… [5 more characters]]"));
    }
}
