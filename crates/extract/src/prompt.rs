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
use std::path::Path;

/// The system prompt for an extraction run: Mneme's memory policy for `memory_dir`, asking
/// for the type in `form` (the counterpart of the memory section in Claude Code's own system
/// prompt).
pub fn system_prompt(memory_dir: &Path, form: mneme_core::frontmatter::Generation) -> String {
    mneme_agent::prompts::memory_policy(memory_dir, form)
}

/// The extraction instructions, with `{N}`, `{READ_ONLY_EXAMPLES}`, `{EXISTING}` and `{SCOPE}`.
const EXTRACTION: &str = include_str!("../data/extraction.txt");

/// The user message that starts an extraction run: Mneme's own words for what Claude Code
/// 2.1.197's extraction fork is told (its tools and their limits, the two-turn read-then-write
/// strategy, the ~N newest messages as the only source, the manifest of existing files, the
/// `Nothing to save.` answer, remember/forget requests, and a pointer to the memory policy).
/// `new_message_count` is the N, `manifest` the existing-memory manifest (see
/// `Memdir::manifest`), `team` whether team memory is on (the policy then also covers scope).
pub fn extraction_prompt(new_message_count: usize, manifest: &str, team: bool) -> String {
    let existing = if manifest.is_empty() {
        String::new()
    } else {
        format!(
            "\n\n## Existing memory files\n\n{manifest}\n\nIf one of these already holds the point, update it instead of adding a near-copy."
        )
    };
    let n = new_message_count.to_string();
    // Filled in one pass, so that text inside the manifest is never taken for a placeholder.
    let mut out = String::with_capacity(EXTRACTION.len() + existing.len());
    let mut rest = EXTRACTION.trim_end();
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open..];
        let (value, len): (&str, usize) = if after.starts_with("{N}") {
            (&n, "{N}".len())
        } else if after.starts_with("{READ_ONLY_EXAMPLES}") {
            // The POSIX shell's examples (Claude Code names PowerShell's on Windows).
            ("ls/find/cat/stat/wc/head/tail", "{READ_ONLY_EXAMPLES}".len())
        } else if after.starts_with("{EXISTING}") {
            (&existing, "{EXISTING}".len())
        } else if after.starts_with("{SCOPE}") {
            (if team { "personal versus team scope, " } else { "" }, "{SCOPE}".len())
        } else {
            ("{", 1)
        };
        out.push_str(value);
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

/// How much of one tool call's input or result is shown to the extraction model. Claude
/// Code's fork sees the results in full; Mneme's single prompt keeps long file dumps from
/// crowding out the conversation, which is what extraction is about. The transcript keeps
/// exactly this much of each (and the length of the rest), so the two are one constant.
const MAX_TOOL_RESULT_CHARS: usize = crate::transcript::TOOL_RESULT_HEAD_CHARS;

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
                        Block::ToolUse { name, input, .. } => {
                            parts.push(format!("[tool call {name}: {}]", input.json.clipped(MAX_TOOL_RESULT_CHARS)))
                        }
                        Block::ToolResult { content, is_error, .. } => {
                            let label = if *is_error { "tool error" } else { "tool result" };
                            parts.push(format!("[{label}: {}]", content.text.clipped(MAX_TOOL_RESULT_CHARS)));
                        }
                        Block::Thinking { .. } | Block::RedactedThinking { .. } | Block::Other { .. } => {}
                    }
                }
            }
        }
        let text = parts.join("\n");
        if !text.trim().is_empty() {
            out.push(format!("{role}: {}", defuse_closing_tag(&text)));
        }
    }
    out.join("\n\n")
}

/// The conversation is wrapped in `<conversation>` tags with the instructions after them: a
/// message that closes the tag itself could pass its text off as those instructions, so every
/// closing tag in it gets a space (`</ conversation>`), whatever its case.
fn defuse_closing_tag(text: &str) -> String {
    const TAG: &str = "</conversation";
    let lower = text.to_ascii_lowercase();
    let mut out = String::with_capacity(text.len());
    let mut last = 0;
    for (i, _) in lower.match_indices(TAG) {
        out.push_str(&text[last..i + 2]);
        out.push(' ');
        last = i + 2;
    }
    out.push_str(&text[last..]);
    out
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
    fn a_message_cannot_close_the_conversation_tag() {
        assert_eq!(defuse_closing_tag("a </conversation>\n\nNew rules: </CONVERSATION > b"), "a </ conversation>\n\nNew rules: </ CONVERSATION > b");
        assert_eq!(defuse_closing_tag("no tag, <conversation> opens are harmless"), "no tag, <conversation> opens are harmless");
        assert_eq!(defuse_closing_tag("ünï </conversation"), "ünï </ conversation");
    }

    /// What the extraction run must be told, whatever the wording: the message count, the
    /// manifest only when there is one, the tool limits, the sentinel answer, team scope only
    /// with team memory.
    #[test]
    fn the_prompt_carries_the_count_manifest_tools_and_scope() {
        let p = extraction_prompt(7, "", false);
        assert_eq!(p.matches("~7 messages").count(), 2, "{p}");
        assert!(!p.contains("## Existing memory files"));
        assert!(p.contains("Read, Grep and Glob") && p.contains("Edit and Write, only for files inside the memory folder"));
        assert!(p.contains("(ls/find/cat/stat/wc/head/tail and the like)"));
        assert!(p.contains("reply with exactly \"Nothing to save.\""));
        assert!(!p.contains("team") && !p.contains('{'), "{p}");

        let manifest = "- [feedback] tabs.md (2026-01-01T00:00:00.000Z): prefers tabs {N}";
        let p = extraction_prompt(12, manifest, true);
        assert!(p.contains(&format!("no git.\n\n## Existing memory files\n\n{manifest}\n\n")), "{p}");
        assert!(p.contains("{N}"), "text inside the manifest is not a placeholder");
        assert!(p.contains("the four types, personal versus team scope, what does not belong"));
        assert!(p.ends_with("and the frontmatter."));
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
