//! The dream prompt: Mneme's own words (in `data/`), written from what a dream does in Claude
//! Code 2.1.197 — orient in the memory folder, gather recent signal (daily logs, drifted
//! memories, narrow transcript searches), consolidate into topic files, prune the `MEMORY.md`
//! index under its limits, reconcile memories with CLAUDE.md, and, when team memory is on,
//! treat `team/` conservatively. Claude Code's own prompt is its authors' prose and is not
//! copied; a dream run through the `claude` CLI provider uses Claude Code's own agent anyway.

use mneme_core::text::{MAX_ENTRYPOINT_LINES, MAX_ENTRYPOINT_UNITS};

/// The prompt with `{MEMORY_DIR}`, `{TRANSCRIPT_DIR}`, `{TEAM}`, `{RECONCILE}`, `{EXTRA}`,
/// `{MAX_LINES}` and `{MAX_KB}` to fill in.
const TEMPLATE: &str = include_str!("../data/consolidation.txt");

/// The guidance for the shared `team/` folder, included when team memory is on.
pub const TEAM_SECTION: &str = include_str!("../data/team.txt");

/// How to weigh memories against CLAUDE.md.
pub const RECONCILE_SECTION: &str = include_str!("../data/reconcile.txt");

/// What the shell allows a dream run (the auto-memory permission policy, in words).
const SHELL_NOTE: &str = include_str!("../data/dream_extra.txt");

/// The extra context a dream run appends: what the shell allows, today's date on the user's
/// clock, and the sessions since the last dream. Claude Code's dream runs inside a session, whose
/// context gives the model the local date (`# currentDate`, and in 2.1.337 a note when the
/// clock's date changes); a dream Mneme runs has no session, so the date "yesterday" is counted
/// from is given here, in Mneme's words.
pub fn dream_extra(today: time::Date, sessions: &[String]) -> String {
    let mut s = format!("{}\n", SHELL_NOTE.trim_end());
    s.push_str(&format!("Today's date on the user's clock: {}.\n", crate::dates::iso(today)));
    s.push_str(&format!("Sessions since the last dream ({}):\n", sessions.len()));
    s.push_str(&sessions.iter().map(|id| format!("- {id}")).collect::<Vec<_>>().join("\n"));
    s
}

/// The whole dream prompt. `memory_root` is the folder with its trailing separator, as Claude
/// Code writes it; `extra` is appended under `## Additional context` when not empty.
pub fn consolidation_prompt(memory_root: &str, transcript_dir: &str, extra: &str, team: bool) -> String {
    let team_block = if team { format!("\n{}\n", TEAM_SECTION.trim_end()) } else { String::new() };
    let max_lines = MAX_ENTRYPOINT_LINES.to_string();
    let max_kb = (MAX_ENTRYPOINT_UNITS / 1000).to_string();
    let extra_block = if extra.is_empty() { String::new() } else { format!("\n\n## Additional context\n\n{extra}") };
    // Substituted in one pass so that text inside a path or the extra can never be taken
    // for a placeholder.
    let mut out = String::with_capacity(TEMPLATE.len() + extra.len() + 512);
    let mut rest = TEMPLATE;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open..];
        let (value, len): (&str, usize) = if after.starts_with("{MEMORY_DIR}") {
            (memory_root, "{MEMORY_DIR}".len())
        } else if after.starts_with("{TRANSCRIPT_DIR}") {
            (transcript_dir, "{TRANSCRIPT_DIR}".len())
        } else if after.starts_with("{TEAM}") {
            (&team_block, "{TEAM}".len())
        } else if after.starts_with("{RECONCILE}") {
            (RECONCILE_SECTION.trim_end(), "{RECONCILE}".len())
        } else if after.starts_with("{EXTRA}") {
            (&extra_block, "{EXTRA}".len())
        } else if after.starts_with("{MAX_LINES}") {
            (&max_lines, "{MAX_LINES}".len())
        } else if after.starts_with("{MAX_KB}") {
            (&max_kb, "{MAX_KB}".len())
        } else {
            ("{", 1)
        };
        out.push_str(value);
        rest = &after[len..];
    }
    out.push_str(rest.trim_end());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a dream run must be told, whatever the wording: where the folder and the
    /// transcripts are, the index limits Claude Code loads, the four steps, the CLAUDE.md
    /// reconciliation, what the shell allows and which sessions are new.
    #[test]
    fn the_prompt_carries_the_folders_limits_and_sessions() {
        let p = consolidation_prompt("/m/memory/", "/c/projects/-repo", &dream_extra(time::macros::date!(2026 - 03 - 30), &["s1".into(), "s2".into()]), false);
        assert!(p.starts_with("# Dream: "), "{p}");
        assert!(p.contains("Memory folder: `/m/memory/`"));
        assert!(p.contains("transcripts in `/c/projects/-repo`"));
        assert!(p.contains("`grep -rn \"<a specific term>\" /c/projects/-repo/ --include=\"*.jsonl\" | tail -50`"));
        assert!(p.contains("below 200 lines and about 25 KB"), "the limits come from mneme-core");
        for step in ["## 1. ", "## 2. ", "## 3. ", "## 4. ", "### Memories and CLAUDE.md"] {
            assert!(p.contains(step), "{step}");
        }
        assert!(p.contains("- [Title](file.md) — "));
        assert!(p.ends_with("\n\n## Additional context\n\n**What the shell allows in this run:** read-only commands (`ls`, `find`, `grep`, `cat`, `stat`, `wc`, `head`, `tail` and the like), and removing `.md` files inside the memory folder. Any command that writes, redirects into a file or changes state is refused, so there is no need to try.\nToday's date on the user's clock: 2026-03-30.\nSessions since the last dream (2):\n- s1\n- s2"), "{p}");
        assert!(!p.contains("## Shared team memory"));
        assert!(!p.contains("{MAX_"), "every placeholder is filled");
    }

    #[test]
    fn team_section_and_no_extra() {
        let p = consolidation_prompt("/m/{EXTRA}/", "/t", "", true);
        assert!(p.contains("Memory folder: `/m/{EXTRA}/`"), "placeholders in paths stay literal");
        assert!(p.contains("never read one whole.\n\n## Shared team memory (`team/`)\n"), "{p}");
        assert!(p.contains("Sharing a memory is the user's decision.\n\n---\n\n## 1. Take stock"));
        assert!(p.ends_with("or say that the folder needed nothing."));
    }
}
