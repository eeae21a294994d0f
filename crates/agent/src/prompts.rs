//! Mneme's own texts for the model: the memory policy every memory-writing run gets as its
//! system prompt, and the tool descriptions (`data/tools.txt`). They are written from the facts
//! of Claude Code's memory (the four types, the frontmatter, the `MEMORY.md` index and its
//! limits, the tools and their parameters, the permission rules), not copied from Claude Code,
//! which is proprietary. Each lives in `data/` as plain text so a reader can review it whole.

use mneme_core::frontmatter::Generation;
use mneme_core::text::{MAX_ENTRYPOINT_LINES, MAX_ENTRYPOINT_UNITS};
use std::path::Path;

/// The memory policy with `{MEMORY_DIR}` standing for the folder.
const MEMORY_POLICY: &str = include_str!("../data/memory_policy.txt");

/// The memory policy for `memory_dir`, shown with one trailing `/` (as Claude Code shows the
/// folder), asking for the type where `form` says (the user's release: see
/// `Generation::written_by`). Extraction and dream use it as their system prompt.
pub fn memory_policy(memory_dir: &Path, form: Generation) -> String {
    let dir = format!("{}/", memory_dir.to_string_lossy().trim_end_matches('/'));
    let type_field = match form {
        Generation::TopLevelType => "type: <user, feedback, project or reference>",
        _ => "metadata:\n  type: <user, feedback, project or reference>",
    };
    MEMORY_POLICY
        .replace("{MEMORY_DIR}", &dir)
        .replace("{TYPE_FIELD}", type_field)
        .replace("{MAX_LINES}", &MAX_ENTRYPOINT_LINES.to_string())
        .replace("{MAX_CHARS}", &mneme_core::text::group_thousands(MAX_ENTRYPOINT_UNITS))
}

#[cfg(test)]
mod tests {
    use super::*;
    use mneme_core::MemoryType;

    /// What the policy must tell a model for its memories to be ones Claude Code reads back:
    /// the folder, the frontmatter fields, every type, the index and its limits.
    #[test]
    fn the_memory_policy_states_the_format_claude_code_reads() {
        let p = memory_policy(Path::new("/home/u/.claude/projects/-repo/memory"), Generation::Metadata);
        assert!(p.starts_with("# Memory\n\n"));
        assert!(p.contains("`/home/u/.claude/projects/-repo/memory/`"));
        for field in ["\nname:", "\ndescription:", "\nmetadata:\n  type:"] {
            assert!(p.contains(field), "{field}");
        }
        // A release before 2.1.139 reads only a top-level type, so its policy asks for that.
        let old = memory_policy(Path::new("/m"), Generation::TopLevelType);
        assert!(old.contains("\ndescription: <") && old.contains("\ntype: <user, feedback, project or reference>\n---"));
        assert!(!old.contains("metadata:") && !old.contains('{'), "{old}");
        for t in MemoryType::ALL {
            assert!(p.contains(&format!("- `{}`:", t.as_str())), "{t:?}");
        }
        assert!(p.contains("`MEMORY.md`") && p.contains("first 200 lines and 25,000 characters"));
        assert!(p.contains("- [Title](file.md) — "));
        assert!(p.contains("[[its-name]]"));
        assert!(!p.contains('{'), "a placeholder was left: {p}");
    }
}
