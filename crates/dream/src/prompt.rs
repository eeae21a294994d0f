//! The consolidation prompt, verbatim from Claude Code 2.1.197 (`buildConsolidationPrompt`
//! and the auto-dream caller that builds its extra context). The feature-gated sections that
//! build leaves empty stay empty; the team section appears only when team memory is on.
//! Recovered from the binary: `grep -a '# Dream: Memory Consolidation' claude`.

/// `DIR_EXISTS_GUIDANCE`.
pub const DIR_EXISTS_GUIDANCE: &str =
    "This directory already exists \u{2014} write to it directly with the Write tool (do not run mkdir or check for its existence).";

/// The prompt with `{MEMORY_DIR}`, `{DIR_EXISTS}`, `{TRANSCRIPT_DIR}`, `{TEAM}`, `{RECONCILE}`
/// and `{EXTRA}` to fill in.
const TEMPLATE: &str = r#"# Dream: Memory Consolidation

You are performing a dream — a reflective pass over your memory files. Synthesize what you've learned recently into durable, well-organized memories so that future sessions can orient quickly.

Memory directory: `{MEMORY_DIR}`
{DIR_EXISTS}

Session transcripts: `{TRANSCRIPT_DIR}` (large JSONL files — grep narrowly, don't read whole files)
{TEAM}
---

## Phase 1 — Orient

- `ls` the memory directory to see what already exists
- Read `MEMORY.md` to understand the current index
- Skim existing topic files so you improve them rather than creating duplicates
- `ls -R logs/` — recent activity logs (one file per session under `YYYY/MM/DD/`). If a `sessions/` subdirectory also exists, review recent entries there too

## Phase 2 — Gather recent signal

Look for new information worth persisting. Sources in rough priority order:

1. **Session logs** (`logs/YYYY/MM/DD/<id>-<title>.md`) — the append-only activity stream, one file per session. Read the most recent 1–3 days of sessions (the filename title tells you what each was about); each line is prefix-coded (`>` user, `<` assistant, `.` tool call)
2. **Existing memories that drifted** — facts that contradict something you see in the codebase now
3. **Transcript search** — if you need specific context (e.g., "what was the error message from yesterday's build failure?"), grep the JSONL transcripts for narrow terms:
   `grep -rn "<narrow term>" {TRANSCRIPT_DIR}/ --include="*.jsonl" | tail -50`

Don't exhaustively read transcripts. Look only for things you already suspect matter.

## Phase 3 — Consolidate

For each thing worth remembering, write or update a memory file at the top level of the memory directory. Use the memory file format and type conventions from your system prompt's auto-memory section — it's the source of truth for what to save, how to structure it, and what NOT to save.

Focus on:
- Merging new signal into existing topic files rather than creating near-duplicates
- Converting relative dates ("yesterday", "last week") to absolute dates so they remain interpretable after time passes
- Deleting contradicted facts — if today's investigation disproves an old memory, fix it at the source

## Phase 4 — Prune and index

Update `MEMORY.md` so it stays under 200 lines AND under ~25KB. It's an **index**, not a dump — each entry should be one line under ~150 characters: `- [Title](file.md) — one-line hook`. Never write memory content directly into it.

- Remove pointers to memories that are now stale, wrong, or superseded
- Demote verbose entries: if an index line is over ~200 chars, it's carrying content that belongs in the topic file — shorten the line, move the detail
- Add pointers to newly important memories
- Resolve contradictions — if two files disagree, fix the wrong one

{RECONCILE}

---

Return a brief summary of what you consolidated, updated, or pruned. If nothing changed (memories are already tight), say so.{EXTRA}"#;

/// The team-memory guidance, included when team memory is on.
pub const TEAM_SECTION: &str = r#"## Team memory (`team/` subdirectory)

The `team/` subdirectory holds memories shared across everyone working in this repo. Other teammates' Claude sessions write here too — treat it differently from your personal files:

- **Phase 1:** `ls team/` and skim it alongside your personal files. A teammate may have already captured something you'd otherwise duplicate.
- **Phase 3:** Merge near-duplicates *within* `team/` the same way you would personal memories. If a personal memory restates a team memory, delete the personal one.
- **Phase 4 — be conservative pruning `team/`:**
  - DO delete or fix a team memory that is clearly contradicted by the current code, or that a newer team memory marks as superseded.
  - DO NOT delete a team memory just because you don't recognize it or it isn't relevant to *your* recent sessions — a teammate may rely on it.
  - When unsure, leave it. A stale team memory costs little; deleting a teammate's load-bearing note costs a lot.

Do not promote personal memories into `team/` during a dream — that's a deliberate choice the user makes via `/remember`, not something to do reflexively."#;

/// The "Reconcile memories against CLAUDE.md" section.
pub const RECONCILE_SECTION: &str = r#"### Reconcile memories against CLAUDE.md

Project CLAUDE.md instructions are loaded in your system prompt. For each `feedback` or `project` memory, check whether it contradicts a CLAUDE.md instruction on the same topic:

- **Memory is stale** — CLAUDE.md and the memory describe different procedures for the same task: CLAUDE.md is the maintained, checked-in source. Delete the memory, or rewrite it to agree if it carries context worth keeping (the *why* is still useful but the *how* is wrong).
- **CLAUDE.md may be stale** — the memory is clearly dated after CLAUDE.md and explicitly corrects it: do NOT edit CLAUDE.md during a dream. Annotate the memory with "contradicts CLAUDE.md — verify which is current" and list it in your summary so the user can update CLAUDE.md.
- **Not a conflict** — the memory adds detail CLAUDE.md doesn't cover, or narrows a CLAUDE.md rule with a stated reason. Leave it.

A `feedback` memory's "Why: the user corrected me" framing is not evidence it's newer than CLAUDE.md — CLAUDE.md may have been updated since."#;

/// The extra context the auto-dream run appends: the Bash constraints note and the sessions
/// since the last consolidation.
pub fn dream_extra(sessions: &[String]) -> String {
    let mut s = String::from(
        "\n\n**Tool constraints for this run:** Shell access is restricted to read-only commands (`ls`, `find`, `grep`, `cat`, `stat`, `wc`, `head`, `tail`, and similar) plus deleting `.md` paths inside the memory directory. Anything else that writes, redirects to a file, or modifies state will be denied. Plan your exploration with this in mind \u{2014} no need to probe.\n\n",
    );
    s.push_str(&format!("Sessions since last consolidation ({}):\n", sessions.len()));
    s.push_str(&sessions.iter().map(|id| format!("- {id}")).collect::<Vec<_>>().join("\n"));
    s
}

/// `buildConsolidationPrompt(memoryRoot, transcriptDir, extra)`. `memory_root` is the folder
/// as Claude Code writes it, with its trailing separator; `extra` is appended under
/// `## Additional context` when not empty.
pub fn consolidation_prompt(memory_root: &str, transcript_dir: &str, extra: &str, team: bool) -> String {
    let team_block = if team { format!("\n{TEAM_SECTION}\n") } else { String::new() };
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
        } else if after.starts_with("{DIR_EXISTS}") {
            (DIR_EXISTS_GUIDANCE, "{DIR_EXISTS}".len())
        } else if after.starts_with("{TRANSCRIPT_DIR}") {
            (transcript_dir, "{TRANSCRIPT_DIR}".len())
        } else if after.starts_with("{TEAM}") {
            (&team_block, "{TEAM}".len())
        } else if after.starts_with("{RECONCILE}") {
            (RECONCILE_SECTION, "{RECONCILE}".len())
        } else if after.starts_with("{EXTRA}") {
            (&extra_block, "{EXTRA}".len())
        } else {
            ("{", 1)
        };
        out.push_str(value);
        rest = &after[len..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_prompt_is_claude_codes() {
        let p = consolidation_prompt("/m/memory/", "/c/projects/-repo", &dream_extra(&["s1".into(), "s2".into()]), false);
        assert!(p.starts_with(
            "# Dream: Memory Consolidation\n\nYou are performing a dream \u{2014} a reflective pass over your memory files. Synthesize what you've learned recently into durable, well-organized memories so that future sessions can orient quickly.\n\nMemory directory: `/m/memory/`\nThis directory already exists \u{2014} write to it directly with the Write tool (do not run mkdir or check for its existence).\n\nSession transcripts: `/c/projects/-repo` (large JSONL files \u{2014} grep narrowly, don't read whole files)\n\n---\n\n## Phase 1 \u{2014} Orient\n"
        ), "{p}");
        assert!(p.contains("   `grep -rn \"<narrow term>\" /c/projects/-repo/ --include=\"*.jsonl\" | tail -50`\n"));
        assert!(p.contains("Look only for things you already suspect matter.\n\n## Phase 3 \u{2014} Consolidate\n"));
        assert!(p.contains("Update `MEMORY.md` so it stays under 200 lines AND under ~25KB."));
        assert!(p.contains("- Resolve contradictions \u{2014} if two files disagree, fix the wrong one\n\n### Reconcile memories against CLAUDE.md\n"));
        assert!(p.contains("CLAUDE.md may have been updated since.\n\n---\n\nReturn a brief summary"));
        assert!(p.ends_with(
            "say so.\n\n## Additional context\n\n\n\n**Tool constraints for this run:** Shell access is restricted to read-only commands (`ls`, `find`, `grep`, `cat`, `stat`, `wc`, `head`, `tail`, and similar) plus deleting `.md` paths inside the memory directory. Anything else that writes, redirects to a file, or modifies state will be denied. Plan your exploration with this in mind \u{2014} no need to probe.\n\nSessions since last consolidation (2):\n- s1\n- s2"
        ), "{p}");
        assert!(!p.contains("## Team memory"));
    }

    #[test]
    fn team_section_and_no_extra() {
        let p = consolidation_prompt("/m/{EXTRA}/", "/t", "", true);
        assert!(p.contains("Memory directory: `/m/{EXTRA}/`"), "placeholders in paths stay literal");
        assert!(p.contains("don't read whole files)\n\n## Team memory (`team/` subdirectory)\n"));
        assert!(p.contains("not something to do reflexively.\n\n---\n\n## Phase 1"));
        assert!(p.ends_with("If nothing changed (memories are already tight), say so."));
    }
}
