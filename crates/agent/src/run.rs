//! The turn loop for providers that answer one model turn at a time.
//!
//! Like Claude Code's query loop: each model response is one turn; its `tool_use` blocks run
//! in order and their results go back in one user message; the run ends when a response calls
//! no tool. With a turn budget, once a response's tools have run and the next turn would
//! exceed the budget, the run stops without another model call (`max_turns_reached`).

use crate::policy::Gate;
use crate::tools::{definitions, Tools};
use crate::{AgentError, AgentOutcome, AgentTask, Denial, Policy, Stop};
use mneme_model::{Block, Cancel, Message, ModelError, Provider, Request, Role};
use serde_json::Value;
use std::path::PathBuf;

/// Output tokens per model turn: enough for several whole memory files in one response, and
/// within every current model's limit.
const MAX_TOKENS: u32 = 8192;

/// The most tool calls of one response that are run. A response is at most [`MAX_TOKENS`]
/// tokens and a call takes some twenty, so no provider that keeps to the cap sends more; a
/// hostile endpoint's thousands of Greps or commands would otherwise hold the run for hours.
/// The rest are answered unrun, saying why.
pub(crate) const MAX_CALLS_PER_TURN: usize = 500;

/// The most characters of tool results one turn gathers before its remaining calls are
/// answered unrun: more than a model's whole context, so nothing a real run needs, and it
/// keeps a turn of thousands of large Reads from holding gigabytes (every request carries
/// the whole conversation).
pub(crate) const MAX_TURN_RESULT_CHARS: usize = 1_000_000;

/// The folder a run's changes are confined to.
pub(crate) fn changeset_root(policy: &Policy) -> PathBuf {
    match policy {
        Policy::AutoMem { memory_dir } => memory_dir.clone(),
        Policy::SessionMemory { path } => path.parent().map(PathBuf::from).unwrap_or_default(),
    }
}

pub(crate) async fn run(provider: &dyn Provider, task: &AgentTask, cancel: &Cancel) -> Result<AgentOutcome, AgentError> {
    let gate = Gate::new(&task.policy, &task.release).with_rules(&task.permission_rules);
    let mut tools = Tools::new(task.cwd.clone(), gate.clone(), task.clock.clone(), task.work_dir.clone());
    tools.release = task.release;
    if let Policy::SessionMemory { path } = &task.policy {
        // Claude Code reads the summary file before starting the update, so its Edit passes
        // the read-first check.
        tools.preload(path);
    }
    let mut messages = vec![Message::user_text(task.prompt.clone())];
    // A tool a deny rule of the user's settings takes away whole is not offered, as Claude Code
    // leaves it out of every session's tools (its agents' included).
    let mut defs = definitions(&task.release);
    defs.retain(|d| !task.permission_rules.removes_tool(&d.name));
    let mut turns = 0u32;
    let mut denials = Vec::new();
    let mut written_paths: Vec<PathBuf> = Vec::new();
    let mut final_text = String::new();
    let stop = loop {
        if cancel.is_cancelled() {
            break Stop::Cancelled;
        }
        let request = Request {
            system: task.system.clone(),
            messages: messages.clone(),
            tools: defs.clone(),
            max_tokens: MAX_TOKENS,
            json_schema: None,
            thinking_disabled: false,
        };
        let response = match provider.complete(&request, cancel).await {
            Ok(r) => r,
            Err(ModelError::Cancelled) => break Stop::Cancelled,
            Err(e) => return Err(e.into()),
        };
        turns += 1;
        final_text = response
            .content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text } => Some(text.as_str()),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n");
        let calls: Vec<(String, String, Value)> = response
            .content
            .iter()
            .filter_map(|b| match b {
                Block::ToolUse { id, name, input } => Some((id.clone(), name.clone(), input.clone())),
                _ => None,
            })
            .collect();
        messages.push(Message { role: Role::Assistant, content: response.content });
        if calls.is_empty() {
            break Stop::Completed;
        }
        let mut results = Vec::with_capacity(calls.len());
        let mut notes = Vec::new();
        let mut gathered = 0usize;
        let total_calls = calls.len();
        for (n, (id, name, input)) in calls.into_iter().enumerate() {
            if cancel.is_cancelled() {
                break;
            }
            if n >= MAX_CALLS_PER_TURN || gathered > MAX_TURN_RESULT_CHARS {
                let content = crate::messages::not_run(total_calls, MAX_CALLS_PER_TURN, MAX_TURN_RESULT_CHARS);
                results.push(Block::ToolResult { tool_use_id: id, content, is_error: true });
                continue;
            }
            if name == "Edit" || name == "Write" {
                if let Some(p) = input.get("file_path").and_then(Value::as_str) {
                    let p = PathBuf::from(p);
                    if gate.allows_write_path(&name, &p.to_string_lossy()) && !written_paths.contains(&p) {
                        written_paths.push(p);
                    }
                }
            }
            let result = tools.call(&name, &input, cancel).await;
            if let Some(message) = result.denied {
                denials.push(Denial { tool: name.clone(), message, extra: Default::default() });
            }
            gathered += result.content.len();
            notes.extend(result.note);
            results.push(Block::ToolResult { tool_use_id: id, content: result.content, is_error: result.is_error });
        }
        // Notes Claude Code sends after the results (a Read's first-page note, from 2.1.205, in
        // a system message of its own) follow them as text: a provider's conversation has no
        // system message between turns, and text after the results is the nearest place.
        results.extend(notes.into_iter().map(|text| Block::Text { text }));
        messages.push(Message { role: Role::User, content: results });
        if cancel.is_cancelled() {
            break Stop::Cancelled;
        }
        if let Some(max) = task.max_turns {
            if turns + 1 > max {
                final_text = Stop::max_turns_message(max);
                break Stop::MaxTurns { max_turns: max };
            }
        }
    };
    if stop == Stop::Cancelled {
        final_text.clear();
    }
    let mut changeset = tools.overlay.changeset(&changeset_root(&task.policy), &task.label);
    // Each Edit is checked for secrets in what it adds (as Claude Code checks it), so two edits
    // can join halves that pass alone into one token: the team file as it would be written is
    // checked again, as the headless run checks it.
    changeset.changes.retain(|c| {
        let Some(refusal) = c.after.as_deref().and_then(|text| gate.team_secret_refusal(&c.path, text)) else { return true };
        denials.push(Denial { tool: "Edit".into(), message: format!("{}: {refusal}", c.path.display()), extra: Default::default() });
        written_paths.retain(|p| *p != c.path);
        false
    });
    Ok(AgentOutcome {
        changeset,
        applied: None,
        written_paths,
        turns,
        denials,
        final_text,
        stop,
    })
}
