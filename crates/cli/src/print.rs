//! Text output for people. Machine output is `--json` and lives in main.rs.
//!
//! Most of what is printed was written by someone else: memory names, descriptions and file
//! names (Claude Code, a model, a teammate through team sync, a cloned repository's rules),
//! agent definitions, model answers. Every such field goes through [`safe`] / [`safe_path`] /
//! [`safe_lines`], so none of it can retitle the window, clear the screen or reorder a line.
//! Only the commands whose purpose is the exact bytes (`context`, `touched`, `memories show`,
//! `log show`) print them as they are.

use anyhow::Result;
use mneme_api::{ContextRequest, MachineSettings, MemorySummary, Mneme, ProjectInfo};
use mneme_core::text::format_file_size;
use mneme_api::{Health, TrashListing};
use std::borrow::Cow;
use std::path::Path;

/// One field of someone else's text, with anything a terminal would act on shown as an escape.
pub fn safe(s: &str) -> Cow<'_, str> {
    mneme_core::text::terminal_safe(s)
}

/// A path whose names someone else chose (a memory's file, a cloned repository's rules).
pub fn safe_path(p: &Path) -> String {
    safe(&p.display().to_string()).into_owned()
}

/// Text of several lines (a dream's summary, an error): each line made safe, the line breaks
/// kept, as [`failure`] does.
pub fn safe_lines(s: &str) -> String {
    s.split('\n').map(safe).collect::<Vec<_>>().join("\n")
}

/// `mneme` with no command: what Claude Code would load here, and the state of its memory.
pub fn overview(mneme: &Mneme, req: &ContextRequest) -> Result<()> {
    let view = mneme.context(req)?;
    println!("{}", view.claude_code.note);
    println!("Claude Code started in {} would load:", safe_path(&view.cwd));
    if view.files.is_empty() {
        println!("  nothing: no CLAUDE.md, rules or MEMORY.md apply here.");
    }
    for f in &view.files {
        let indent = if f.parent.is_some() { "    ↳ " } else { "  " };
        let mut notes = Vec::new();
        if f.truncated {
            notes.push("truncated".to_string());
        }
        if f.large {
            notes.push("over 40,000 chars".to_string());
        }
        if f.unverified.is_some() {
            notes.push("unverified".to_string());
        }
        let notes = if notes.is_empty() { String::new() } else { format!("  [{}]", notes.join(", ")) };
        println!("{indent}{:<8} {}  ({} chars, ~{} tokens){notes}", f.layer.as_str(), safe_path(&f.path), f.chars, f.tokens);
        // The layer's name says "Managed", which reads as the organization's policy: say why
        // Claude Code does not send this one as such.
        if let Some(u) = &f.unverified {
            println!(
                "{}unverified: Claude Code does not send this file as your organization's policy. {}",
                " ".repeat(indent.chars().count() + 9),
                safe(&u.reason)
            );
        }
    }
    // Claude Code judges its managed files once, when a session starts, and keeps that verdict
    // until the session ends (docs/claude-code-versions.md, row 88): the overview is what a new
    // session sends, which a running one may not.
    if view.files.iter().any(|f| f.unverified.is_some()) {
        println!("  (A Claude Code session judges its managed files when it starts: one already running keeps what it saw then. This is what a new session sends.)");
    }
    println!("  total: {} chars, ~{} tokens", view.total_chars, view.total_tokens);
    if !view.skipped.is_empty() {
        println!("Skipped:");
        for s in &view.skipped {
            println!("  {}  — {}", safe_path(&s.path), safe(&s.reason));
        }
    }
    if !view.conditional.is_empty() || !view.nested_candidates.is_empty() {
        println!(
            "Attached later, when files are read: {} conditional rules, {} sub-folder files (see `mneme touched FILE`).",
            view.conditional.len(),
            view.nested_candidates.len()
        );
    }
    let a = &view.auto_memory;
    // The reason reads "On: …" / "Off: …"; it is the whole verdict.
    println!("Auto memory — {}", a.reason);
    let from = match a.source.as_str() {
        "default" => "the default location".to_string(),
        "env:CLAUDE_COWORK_MEMORY_PATH_OVERRIDE" => "CLAUDE_COWORK_MEMORY_PATH_OVERRIDE".to_string(),
        other => format!("autoMemoryDirectory in {}", other.trim_start_matches("setting:")),
    };
    println!("  folder: {} ({})", safe_path(&a.dir), safe(&from));
    if let Some(why) = &a.index_note {
        println!("  {}", safe(why));
    }
    if a.source == "setting:projectSettings" {
        println!("  note: this repository's .claude/settings.json chose that folder; Claude Code honours it in a trusted folder.");
    }
    for e in &view.env_from_settings {
        let over = match &e.process_value {
            Some(v) => format!(" (over {v:?} from your shell)"),
            None => String::new(),
        };
        println!("  {}={:?} is set for Claude Code by the env block of {}{over}", safe(&e.name), e.value, safe(&e.file));
    }
    for p in &view.settings_problems {
        println!("Settings problem: {}", safe(p));
    }
    if a.enabled {
        health(&mneme.health(req)?);
    }
    Ok(())
}

/// `mneme claude-code`: the Claude Code this user runs and what Mneme renders for it.
pub fn claude_code(info: &mneme_api::ClaudeCodeInfo) {
    match (&info.path, &info.version, &info.version_error) {
        (None, ..) => println!(
            "No Claude Code found on PATH or in the usual install places (~/.local/bin, npm's global folder).\n\
             Install it with: npm install -g @anthropic-ai/claude-code"
        ),
        (Some(path), Some(v), _) => println!("Claude Code {v} at {}", safe_path(path)),
        (Some(path), None, why) => {
            println!("Claude Code at {}, release unknown: {}", safe_path(path), safe(why.as_deref().unwrap_or("no answer")))
        }
    }
    println!("{}", info.rendered_for.note);
    println!("Checked byte for byte against: {}.", info.checked_releases.join(", "));
}

pub fn projects(list: &[ProjectInfo]) {
    if list.is_empty() {
        println!("No Claude Code projects yet: start Claude Code in a folder and it will appear here.");
        return;
    }
    for p in list {
        let folder = p.project_path.as_deref().map(safe_path).unwrap_or_else(|| "(folder unknown)".into());
        let state = if p.orphaned {
            "  ORPHANED: the folder no longer exists"
        } else if p.drive_not_answering {
            "  DRIVE NOT ANSWERING: the drive holding the folder did not answer within 3 s (a network share or USB drive that hangs?); run this again once it answers"
        } else {
            ""
        };
        println!(
            "{folder}\n  {} memories{}, {} sessions  — {}{state}",
            p.topic_count,
            if p.has_memory_index { " + MEMORY.md" } else { "" },
            p.transcript_count,
            safe_path(&p.folder)
        );
    }
}

pub fn memory_list(list: &[MemorySummary]) {
    if list.is_empty() {
        println!("No memories here yet. Create one with: mneme memories new --name … --description … --type …");
        return;
    }
    for m in list {
        let kind = m.memory_type.map(|t| t.as_str()).unwrap_or("-");
        let idx = if m.indexed { "" } else { "  (not in MEMORY.md)" };
        println!(
            "{:<10} {:<40} {:>4}d  {}{idx}",
            kind,
            safe(&m.rel_path),
            m.age_days,
            safe(m.description.as_deref().unwrap_or(""))
        );
    }
}

pub fn health(h: &Health) {
    let i = &h.index;
    if !i.exists && h.topic_count == 0 {
        println!("MEMORY.md: none yet — Claude Code has saved no memories for this project.");
    } else if !i.exists {
        println!("MEMORY.md: missing, so Claude Code loads none of the {} topic files. `mneme memories health --fix` writes one.", h.topic_count);
    } else {
        println!(
            "MEMORY.md: {}/{} lines, {}/{} chars ({}){}",
            i.line_count,
            i.max_lines,
            i.unit_count,
            i.max_units,
            format_file_size(i.unit_count),
            if i.truncated { " — TRUNCATED: Claude Code loads only part of it" } else { "" }
        );
    }
    for e in &i.past_cap {
        println!("  past the cap (Claude Code never sees it): line {} → {}", e.line, safe(&e.rel_path));
    }
    for e in &i.missing_targets {
        println!("  points at a missing file: line {} → {}", e.line, safe(&e.rel_path));
    }
    for d in &i.duplicates {
        println!("  listed more than once: {}", safe(&d.rel_path));
    }
    for s in &h.stale_index_lines {
        if s.field == "path" {
            // The engine reports a stopped rename once, here: not again as a line to a missing
            // file or a memory with no line.
            println!(
                "  a rename did not finish: {} line {} still points at {}, but the memory is now called {} (`mneme memories health --fix` points the line at {}, keeping the rest of the line)",
                safe(&s.index_rel_path), s.line, safe(&s.index_shows), safe(&s.file_has), safe(&s.file_has)
            );
            continue;
        }
        println!(
            "  {} line {} shows {} {:?} for {}, but the file says {:?} (an edit did not finish; `mneme memories health --fix` updates the line)",
            safe(&s.index_rel_path), s.line, safe(&s.field), s.index_shows, safe(&s.rel_path), s.file_has
        );
    }
    for u in &h.unindexed {
        println!("  no index line: {}", safe(u));
    }
    if h.unindexed_count > h.unindexed.len() {
        println!(
            "  no index line: and {} more (the newest {} are named; `mneme memories list --json` flags each memory's `indexed`)",
            h.unindexed_count - h.unindexed.len(),
            h.unindexed.len()
        );
    }
    for d in &h.dangling_links {
        println!("  dangling link [[{}]] in {}", safe(&d.link), safe(&d.from));
    }
    for p in &h.problems {
        println!("  problem: {}: {}", safe(&p.rel_path), safe(&p.message));
    }
}

pub fn trash(t: &TrashListing) {
    if t.entries.is_empty() {
        println!("The trash is empty.");
    }
    for e in &t.entries {
        println!("{}  {}", e.id, safe(&e.original_rel_path));
    }
    for p in &t.damaged {
        println!("damaged: {}: {}", safe(&p.rel_path), safe(&p.message));
    }
    if !t.entries.is_empty() || !t.damaged.is_empty() {
        println!("Restore one with `mneme memories restore ID`; delete one for good with `mneme memories purge ID` (or --all).");
    }
}

pub fn settings(s: &MachineSettings) {
    // While Claude Code ignores the file, what it says decides nothing.
    let ignored = if s.ignored_for.is_some() { " in the file, which Claude Code ignores (see the problem below)" } else { "" };
    let show = |v: Option<bool>, default: &str| match v {
        Some(true) => format!("on{ignored}"),
        Some(false) => format!("off{ignored}"),
        None => format!("not set ({default})"),
    };
    println!("User settings: {}", safe_path(&s.user_settings_path));
    println!("  auto memory: {}", show(s.auto_memory_enabled, "Claude Code's default: on"));
    if let Some(why) = &s.auto_memory_overridden {
        println!("    but: {}", safe(why));
    }
    println!("  auto dream:  {}", show(s.auto_dream_enabled, "Claude Code's default: off"));
    if let Some(why) = &s.auto_dream_overridden {
        println!("    but: {}", safe(why));
    }
    if let Some(d) = &s.auto_memory_directory {
        println!("  memory directory: {}{ignored}", safe(d));
    }
    if let Some(why) = &s.auto_memory_directory_overridden {
        println!("    but: {}", safe(why));
    }
    for p in &s.problems {
        println!("  problem: {}", safe(p));
    }
}

pub fn merge_report(r: &mneme_api::MergeReport) {
    let verb = if r.dry_run { "would move" } else { "moved" };
    println!("{} {} → {}", if r.dry_run { "Plan (nothing changed):" } else { "Merged" }, safe_path(&r.from), safe_path(&r.into));
    for f in &r.moved {
        println!("  {verb} {}", safe(&f.to_rel_path));
    }
    for f in &r.renamed {
        println!("  {verb} {} as {} (a different {} was already there)", safe(&f.from_rel_path), safe(&f.to_rel_path), safe(&f.from_rel_path));
    }
    for f in &r.skipped {
        println!("  skipped {}: {}", safe(&f.rel_path), safe(&f.reason));
    }
    for l in &r.index_lines_added {
        println!("  {} {}: {}", if r.dry_run { "would add to" } else { "added to" }, safe(&l.index_rel_path), safe(&l.text));
    }
    if r.moved.is_empty() && r.renamed.is_empty() {
        println!("  no topic files to move");
    }
    if let Some(t) = &r.trashed_to {
        println!("The emptied folder is in Mneme's trash: {}", safe_path(t));
    }
    if let Some(p) = &r.trash_problem {
        println!("{}", safe_lines(p));
    }
    if let Some(p) = &r.index_problem {
        println!("{}", safe_lines(p));
    }
}

pub fn memory_dir_change(c: &mneme_api::AutoMemDirChange) {
    match (&c.value, &c.resolved) {
        (Some(v), Some(dir)) => println!(
            "autoMemoryDirectory is now {} in {}: Claude Code keeps every project's memory in {}",
            safe(v),
            safe_path(&c.settings_path),
            safe_path(dir)
        ),
        _ => println!(
            "autoMemoryDirectory is not set in {}: one memory folder per project under {}",
            safe_path(&c.settings_path),
            safe_path(&c.default_base)
        ),
    }
    if let Some(n) = &c.note {
        println!("{}", safe_lines(n));
    }
}

pub fn agents(v: &mneme_api::AgentsView) {
    use mneme_api::AgentSource;
    if v.agents.is_empty() {
        println!("No sub-agents defined here. Claude Code reads them from ~/.claude/agents, .claude/agents and enabled plugins.");
    }
    for a in &v.agents {
        let source = match &a.source {
            AgentSource::Managed => "managed".to_string(),
            AgentSource::User => "user".to_string(),
            AgentSource::Project => "project".to_string(),
            AgentSource::Plugin { id } => format!("plugin {}", safe(id)),
        };
        println!("{}  ({source}, {})", safe(&a.agent_type), safe_path(&a.file));
        match (&a.scope, &a.memory_dir) {
            (Some(scope), Some(dir)) => {
                let state = if a.exists { format!("{} memories", a.memories) } else { "not created yet".to_string() };
                let git = if a.checked_in { ", checked in to git" } else { "" };
                println!("  memory: {}{git} — {state} — {}", scope.as_str(), safe_path(dir));
            }
            (Some(scope), None) => println!("  memory: {} — not opened: the agent's name is not a folder name (below)", scope.as_str()),
            _ => match &a.invalid_memory {
                Some(bad) => println!("  memory: none (`memory: {}` is not user, project or local, so Claude Code ignores it)", safe(bad)),
                None => println!("  memory: none"),
            },
        }
    }
    let orphans: Vec<_> = v.folders.iter().filter(|f| f.agent.is_none()).collect();
    if !orphans.is_empty() {
        println!("\nAgent-memory folders no agent here uses:");
        for f in orphans {
            println!("  {} ({}, {} memories) — {}", safe(&f.name), f.scope.as_str(), f.memories, safe_path(&f.dir));
        }
    }
    for p in &v.problems {
        // Claude Code's skipped files, and agents whose memory Mneme will not open.
        let what = if p.reason.starts_with("Mneme does not open") { "Problem with" } else { "Skipped" };
        println!("\n{what} {}: {}", safe_path(&p.file), safe_lines(&p.reason));
    }
    if !v.auto_memory_enabled && v.agents.iter().any(|a| a.scope.is_some()) {
        println!("\nAuto memory is off here, so Claude Code gives no agent its memory: {}", safe(&v.auto_memory_reason));
    }
}

/// Prints a failure as `mneme: …` on stderr. Errors carry text from outside (a team server's
/// message, a teammate's file name, a path): each line is made terminal-safe, so none of it
/// can move the cursor or recolour the screen, while the lines themselves stay lines.
pub fn failure(e: &dyn std::fmt::Display) {
    eprintln!("mneme: {}", safe_lines(&e.to_string()));
}
